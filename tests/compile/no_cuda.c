/* CQ_NO_CUDA: the implementation compiles with every GPU path left out. */
#define CQ_NO_CUDA
#define CHAINQUEEN_IMPLEMENTATION
#include "../../chainqueen.h"
int main(void) { return cq_result_string(CQ_SUCCESS) ? 0 : 1; }
