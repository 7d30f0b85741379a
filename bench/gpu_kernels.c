/* gpu_kernels.c - a fixed small workload for Nsight Compute: one falling cube (bench.c's scene:
   corotated, E 1e4, 2 particles per cell per axis) on the CUDA backend, 12 taped steps and one
   backward, so that `ncu --print-summary per-kernel` gives each kernel's time at one size
   (bench.c runs every size in one process, which ncu cannot tell apart).  bench/gpu.sh runs it
   with PROFILE=1.
     cc -std=c99 -O2 bench/gpu_kernels.c -o build/gpu_kernels -lm -ldl
     ncu --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels 3 80 128
   arguments: dim, particles per axis, grid resolution [, f64] (3 80 128: the 512k cube). */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const int dim = argc > 3 ? atoi(argv[1]) : 0, side = argc > 3 ? atoi(argv[2]) : 0, res = argc > 3 ? atoi(argv[3]) : 0;
    const int f64 = argc > 4 && strcmp(argv[4], "f64") == 0, T = 12;
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *sim = NULL;
    double *x, *seed, lo[3];
    const double h = 0.5 / (res > 0 ? res : 1);
    long n = 1, p = 0;
    if ((dim != 2 && dim != 3) || side < 1 || res < 8 || side > res) {
        fprintf(stderr, "usage: %s dim side res [f64]   (e.g. 3 80 128: the 512k cube)\n", argv[0]);
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
    cq_sim_destroy(sim);
    free(x);
    free(seed);
    return 0;
}
