#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../../chainqueen_robot.h"
