#define CHAINQUEEN_IO_IMPLEMENTATION
#include "../../chainqueen_io.h"
