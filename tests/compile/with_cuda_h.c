/* The implementation compiles in a program that also includes the CUDA SDK's cuda.h: the
   header's own driver declarations use cq__ names only. */
#include <cuda.h>
#define CHAINQUEEN_IMPLEMENTATION
#include "../../chainqueen.h"
int main(void)
{
    CUdevice dev = 0;   /* the SDK's type, beside ours */
    (void)dev;
    return cq_result_string(CQ_ERROR_DEVICE) ? 0 : 1;
}
