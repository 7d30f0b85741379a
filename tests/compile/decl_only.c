/* Declarations-only include: no CHAINQUEEN_IMPLEMENTATION here; linked with impl.c. */
#include "../../chainqueen.h"
#include <stdio.h>
#include <string.h>

int main(void)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d);   /* C++ users may write `cq_sim_desc d = {};` */
    d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("%s\n", cq_sim_last_error(NULL)); return 1; }
    cq_sim_destroy(s);
    return CQ_VERSION_MAJOR >= 0 ? 0 : 1;
}
