/* 10_cpu_vs_gpu.c - the same scene on the CPU and on the GPU, with plain `cc` and one header.

   Build and run from the repository root (no CUDA SDK; glibc < 2.34 also wants -ldl):
       cc -O2 examples/10_cpu_vs_gpu.c -o build/cpu_vs_gpu -lm && ./build/cpu_vs_gpu
   A 3D float64 jelly cube falls onto a friction floor for 300 steps on both backends; the
   program prints the backend the library chose and why, the final centroid on each, the
   largest position difference, and a gradient (d mean height / d initial velocity) from each.
   Without a usable GPU it runs the CPU part, prints the reason, and exits 0. */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <string.h>
#include <math.h>

#define SIDE 10
#define N (SIDE * SIDE * SIDE)
#define STEPS 300

static void say(cq_log_level level, const char *msg, void *user) { (void)level; (void)user; printf("  [chainqueen] %s\n", msg); }

/* runs the scene on `backend`; fills the final positions and dL/dv0 (L = mean height); 0 = ok */
static int run(cq_backend backend, double *x, double *grad)
{
    static double x0[N * 3], seed[N * 3];
    cq_sim_desc d;
    cq_particles_desc p;
    cq_sim *sim;
    int n = 0;
    memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
    d.dim = 3; d.res[0] = d.res[1] = d.res[2] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.substeps = 4;
    d.gravity[1] = -9.8; d.precision = CQ_PRECISION_F64; d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 0.5;
    d.checkpoint_every = 20; d.backend = backend; d.logger.func = say;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) { printf("  %s\n", cq_sim_last_error(NULL)); return 1; }
    for (int i = 0; i < SIDE; ++i)
        for (int j = 0; j < SIDE; ++j)
            for (int k = 0; k < SIDE; ++k, ++n) {
                x0[3 * n] = 0.35 + i / 64.0; x0[3 * n + 1] = 0.11 + j / 64.0; x0[3 * n + 2] = 0.35 + k / 64.0;
                seed[3 * n] = seed[3 * n + 2] = 0; seed[3 * n + 1] = 1.0 / N;
            }
    p.count = N; p.x = x0; p.default_youngs = 5e3; p.default_poisson = 0.3;
    if (cq_sim_add_particles(sim, &p) != CQ_SUCCESS || cq_sim_step(sim, STEPS) != CQ_SUCCESS ||
        cq_sim_get(sim, CQ_FIELD_X, x) != CQ_SUCCESS ||
        cq_sim_backward(sim, seed, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS ||
        cq_sim_grad(sim, CQ_FIELD_V, grad) != CQ_SUCCESS) {
        printf("  %s\n", cq_sim_last_error(sim));
        cq_sim_destroy(sim);
        return 1;
    }
    cq_sim_destroy(sim);
    return 0;
}

static void report(const char *name, const double *x, const double *g)
{
    double c[3] = {0, 0, 0}, gy = 0;
    for (int i = 0; i < N; ++i) { for (int a = 0; a < 3; ++a) c[a] += x[3 * i + a] / N; gy += g[3 * i + 1]; }
    printf("%s: centroid after %d steps (%.6f, %.6f, %.6f); dL/dv0_y summed %.9f\n", name, STEPS, c[0], c[1], c[2], gy);
}

int main(void)
{
    static double xc[N * 3], gc[N * 3], xg[N * 3], gg[N * 3];
    double dx = 0, dg = 0, gmax = 0;
    printf("CPU:\n");
    if (run(CQ_BACKEND_CPU, xc, gc)) return 1;
    report("CPU ", xc, gc);
    printf("GPU (CQ_BACKEND_CUDA):\n");
    if (run(CQ_BACKEND_CUDA, xg, gg)) {
        printf("no usable GPU (reason above): the CPU result is the answer.\n");
        return 0;
    }
    report("CUDA", xg, gg);
    for (int i = 0; i < 3 * N; ++i) {
        if (fabs(xg[i] - xc[i]) > dx) dx = fabs(xg[i] - xc[i]);
        if (fabs(gg[i] - gc[i]) > dg) dg = fabs(gg[i] - gc[i]);
        if (fabs(gc[i]) > gmax) gmax = fabs(gc[i]);
    }
    printf("largest difference: positions %.3g (dx = %.3g), gradients %.3g relative\n", dx, 1.0 / 32, dg / gmax);
    return dx < 1e-8 && dg < 1e-6 * gmax ? 0 : 1;
}
