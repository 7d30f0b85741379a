/* gpu_kernels.c - a fixed small workload for Nsight Compute: one falling cube (bench.c's scene:
   corotated, E 1e4, 2 particles per cell per axis) on the CUDA backend, 12 taped steps and one
   backward, so that `ncu --print-summary per-kernel` gives each kernel's time at one size
   (bench.c runs every size in one process, which ncu cannot tell apart).  bench/gpu.sh runs it
   with PROFILE=1.
     cc -std=c99 -O2 bench/gpu_kernels.c -o build/gpu_kernels -lm -ldl
     ncu --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels 3 80 128
   arguments: dim, particles per axis, grid resolution [, f64] [, regs] (3 80 128: the 512k cube).
   regs: also print what the driver's JIT gave each kernel of this sim's module (registers, local
   memory a thread: spills and stack, static shared memory), as tests/gpu/ptxas_budget.txt lists
   them from the toolkit's ptxas (which `make test` holds to that budget): where they differ, the
   budget's figures are not the GPU's. */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

/* the driver's view of each kernel of sim s (its own loaded module): cuFuncGetAttribute */
static void print_regs(const cq_sim *s)
{
    typedef int (*get_attr_fn)(int *, int, void *);
    typedef int (*get_name_fn)(const char **, void *);
    typedef int (*ctx_fn)(void *);
    const char *lib = getenv("CQ_CUDA_LIBRARY");
    void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    get_attr_fn attr = h ? (get_attr_fn)(size_t)dlsym(h, "cuFuncGetAttribute") : NULL;
    get_name_fn name = h ? (get_name_fn)(size_t)dlsym(h, "cuFuncGetName") : NULL;   /* CUDA 12.3+ */
    ctx_fn push = h ? (ctx_fn)(size_t)dlsym(h, "cuCtxPushCurrent_v2") : NULL, pop = h ? (ctx_fn)(size_t)dlsym(h, "cuCtxPopCurrent_v2") : NULL;
    void *popped = NULL;
    const struct { const char *field; void *f; } k[] = {
        {"gather", s->cu.gather}, {"gather_rows", s->cu.gather_rows}, {"g2p", s->cu.g2p}, {"p2g", s->cu.p2g},
        {"grid_adj", s->cu.grid_adj}, {"g2p_adj", s->cu.g2p_adj}, {"p2g_adj", s->cu.p2g_adj},
        {"p2g_adj_stress", s->cu.p2g_adj_stress}, {"act_reduce", s->cu.act_reduce}, {"act_sum", s->cu.act_sum},
        {"nonfinite", s->cu.nonfinite}, {"cell_count", s->cu.cell_count}, {"scan_up", s->cu.scan_up},
        {"scan_top", s->cu.scan_top}, {"scan_down", s->cu.scan_down}, {"cell_fill", s->cu.cell_fill},
        {"cell_sort", s->cu.cell_sort}, {"sort_coop", s->cu.sort_coop}};
    if (!attr || !push || !pop) { printf("regs: cuFuncGetAttribute not found in %s\n", lib && *lib ? lib : "libcuda.so.1"); return; }
    if (push(s->cu.d.ctx) != 0) { printf("regs: cuCtxPushCurrent failed\n"); return; }   /* the sim's context, current */
    printf("the driver's JIT (cuFuncGetAttribute): function, registers, local bytes a thread, static shared bytes\n");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i) {
        int regs = -1, local = -1, shared = -1;
        const char *nm = NULL;
        if (!k[i].f) continue;
        (void)attr(&regs, 4, k[i].f);     /* CU_FUNC_ATTRIBUTE_NUM_REGS */
        (void)attr(&local, 3, k[i].f);    /* CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES */
        (void)attr(&shared, 1, k[i].f);   /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
        if (!name || name(&nm, k[i].f) != 0) nm = k[i].field;
        printf("jit %-56s %4d %5d %6d\n", nm, regs, local, shared);
    }
    (void)pop(&popped);
}

int main(int argc, char **argv)
{
    const int dim = argc > 3 ? atoi(argv[1]) : 0, side = argc > 3 ? atoi(argv[2]) : 0, res = argc > 3 ? atoi(argv[3]) : 0;
    const int T = 12;
    int f64 = 0, regs = 0;
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *sim = NULL;
    double *x, *seed, lo[3];
    const double h = 0.5 / (res > 0 ? res : 1);
    long n = 1, p = 0;
    for (int i = 4; i < argc; ++i) { f64 |= strcmp(argv[i], "f64") == 0; regs |= strcmp(argv[i], "regs") == 0; }
    if ((dim != 2 && dim != 3) || side < 1 || res < 8 || side > res) {
        fprintf(stderr, "usage: %s dim side res [f64] [regs]   (e.g. 3 80 128: the 512k cube)\n", argv[0]);
        return 2;
    }
    for (int a = 0; a < dim; ++a) n *= side;
    x = (double *)malloc(sizeof(double) * (size_t)(n * dim));
    seed = (double *)malloc(sizeof(double) * (size_t)(n * dim));
    if (!x || !seed) { fprintf(stderr, "out of memory\n"); return 1; }
    for (int a = 0; a < 3; ++a) lo[a] = 0.5 - side * h / 2;
    lo[1] = 8 * h;
    for (int i = 0; i < side; ++i)
        for (int j = 0; j < side; ++j)
            for (int k = 0; k < (dim == 3 ? side : 1); ++k, ++p) {
                x[p * dim] = lo[0] + (i + 0.5) * h;
                x[p * dim + 1] = lo[1] + (j + 0.5) * h;
                if (dim == 3) x[p * dim + 2] = lo[2] + (k + 0.5) * h;
            }
    for (long i = 0; i < n * dim; ++i) seed[i] = 1.0 / (double)n;
    memset(&d, 0, sizeof d);
    d.dim = dim;
    d.res[0] = d.res[1] = d.res[2] = res;
    d.dx = 1.0 / res;
    d.dt = 0.5 * d.dx * 0.01;
    d.gravity[1] = -9.8;
    d.material = CQ_MATERIAL_FIXED_COROTATED;
    d.precision = f64 ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
    d.boundary = CQ_BOUNDARY_STICKY;
    d.checkpoint_every = 10;
    d.backend = CQ_BACKEND_CUDA;
    memset(&pd, 0, sizeof pd);
    pd.count = (int)n;
    pd.x = x;
    pd.default_youngs = 1e4;
    pd.default_poisson = 0.3;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS || cq_sim_add_particles(sim, &pd) != CQ_SUCCESS) {
        fprintf(stderr, "%s\n", cq_sim_last_error(sim));
        cq_sim_destroy(sim);
        return 1;
    }
    for (int s = 0; s < T; ++s)
        if (cq_sim_step(sim, 1) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(sim)); return 1; }
    if (cq_sim_backward(sim, seed, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(sim)); return 1; }
    printf("%ld particles, %d taped steps and their backward on %s\n", n, T, f64 ? "f64" : "f32");
    if (regs) print_regs(sim);
    cq_sim_destroy(sim);
    free(x);
    free(seed);
    return 0;
}
