/* CQ_NO_CUDA: the implementation compiles with every GPU path left out (no <dlfcn.h>, no PTX,
   no dlopen symbol in the binary); asking for CUDA says so, DEFAULT is the CPU and says why. */
#define CQ_NO_CUDA
#define CHAINQUEEN_IMPLEMENTATION
#include "../../chainqueen.h"
#include <stdio.h>
#include <string.h>

static char info[512];
static void on_log(cq_log_level l, const char *m, void *u) { (void)u; if (l == CQ_LOG_INFO) snprintf(info, sizeof info, "%s", m); }

int main(void)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_result r;
    int fails = 0;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.logger.func = on_log;
    d.backend = CQ_BACKEND_CUDA;
    r = cq_sim_create(&d, &s);
    if (r != CQ_ERROR_BACKEND_UNAVAILABLE || !strstr(cq_sim_last_error(NULL), "CQ_NO_CUDA")) {
        printf("CUDA under CQ_NO_CUDA: %s / %s\n", cq_result_string(r), cq_sim_last_error(NULL)); fails++;
    }
    d.backend = CQ_BACKEND_DEFAULT;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS || cq_sim_backend(s) != CQ_BACKEND_CPU || !strstr(info, "CQ_NO_CUDA")) {
        printf("DEFAULT under CQ_NO_CUDA: backend %d, log '%s'\n", s ? (int)cq_sim_backend(s) : -1, info); fails++;
    }
    cq_sim_destroy(s);
    printf("%d passed, %d failed\n", 2 - fails, fails);
    return fails != 0;
}
