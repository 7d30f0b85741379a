/* The one translation unit with the implementation (see decl_only.c). */
#define CHAINQUEEN_IMPLEMENTATION
#include "../../chainqueen.h"
