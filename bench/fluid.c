/* bench/fluid.c - fluid particle-steps per second of the fluid-rigid world (cq_world_*) on a dam
   break, the scene of bench/peer_splishsplash.py (SPlisHSPlasH) so the two compare:
     box [0, 4a] x [0, 3a] (x [0, a]), a = 1 m; a water column a wide, 2a high (and a deep) in
     the lower left corner, on the lattice of spacing 2r; DFSPH with 0.1% / 0.1% average errors,
     at least 2 density iterations, no viscosity; fixed dt = 0.4 (2r) / sqrt(2 g 2a) rounded down
     to 2 significant digits (SPlisHSPlasH's scene uses the same).
   The first step (allocation, boundary volumes) is not timed.  Prints one line per scene:
     chainqueen dam3d particles=N steps=S seconds=T particle_steps_per_s=X
         avg_pressure_iters=Y avg_divergence_iters=Z precision=f32 threads=K
   Usage: bench/fluid [--dim 2|3] [--particles N] [--steps S] [--f64] [--gpu] [--ball] [quick]
   --gpu: the world on the CUDA backend (the fluid's passes and sorts on the device; the bodies on
   the host); the line then says backend=cuda.  bench/gpu.sh runs it at ~100k and ~1M.  On the
   mock driver (CQ_CUDA_LIBRARY=build/mock/libcuda.so.1) the line ends in what a timed step moved
   across the bus: read backs, bytes and launches a step.  --ball: a dynamic ball (radius 0.2a,
   500 kg/m^3) dropped into the column, so a step also moves a body's boundary particles.
   Build: make bench-fluid (with -fopenmp: OMP_NUM_THREADS picks the threads; -ldl for --gpu on
   glibc before 2.34). */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if !defined(_WIN32)
#include <dlfcn.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int g_gpu, g_ball;

/* the mock driver's counter NAME (tests/gpu/mock_libcuda.c), or -1 (a real driver, or none) */
static double mock_count(const char *name)
{
#if !defined(_WIN32)
    const char *path = getenv("CQ_CUDA_LIBRARY");
    void *h = path && g_gpu ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL, *f = h ? dlsym(h, name) : NULL;
    if (f) {
        if (!strcmp(name, "cq_mock_copied_bytes")) { size_t (*fn)(void); memcpy(&fn, &f, sizeof fn); return (double)fn(); }
        { long (*fn)(void); memcpy(&fn, &f, sizeof fn); return (double)fn(); }
    }
#else
    (void)name;
#endif
    return -1;
}

static int run(int dim, long target, int steps, int f64)
{
    const double a = 1.0;
    const int n = dim == 3 ? (int)(cbrt((double)target / 2) + 0.5) : (int)(sqrt((double)target / 2) + 0.5);
    const double sp = a / n, r = sp / 2;
    double dt = 0.4 * sp / sqrt(2 * 9.81 * 2 * a), p10 = pow(10, floor(log10(dt)) - 1), t0, secs, it_p = 0, it_v = 0, bus[3], bus1[3];
    static const char *const counters[3] = {"cq_mock_readbacks", "cq_mock_copied_bytes", "cq_mock_launches"};
    cq_world_desc d;
    cq_world *w = NULL;
    cq_world_stats st = {0, 0, 0, 0, 0, 0};
    double *x;
    long count = (long)n * 2 * n * (dim == 3 ? n : 1), k = 0;
    int threads = 1;
    dt = floor(dt / p10) * p10;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.particle_radius = r; d.dt = dt; d.gravity[1] = -9.81; d.viscosity = -1;
    d.precision = f64 ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
    d.backend = g_gpu ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
    d.domain_hi[0] = 4 * a; d.domain_hi[1] = 3 * a; d.domain_hi[2] = a;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(NULL)); return 1; }
    x = (double *)malloc(sizeof(double) * (size_t)(count * dim));
    if (!x) return 1;
    for (int kz = 0; kz < (dim == 3 ? n : 1); ++kz)
        for (int j = 0; j < 2 * n; ++j)
            for (int i = 0; i < n; ++i) {
                x[k * dim] = r + i * sp; x[k * dim + 1] = r + j * sp;
                if (dim == 3) x[k * dim + 2] = r + kz * sp;
                ++k;
            }
    if (cq_world_add_fluid(w, (int)count, x, NULL) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(w)); return 1; }
    if (g_ball) {
        cq_body_desc b;
        memset(&b, 0, sizeof b);
        b.shape = CQ_SHAPE_SPHERE; b.radius = 0.2 * a; b.density = 500; b.q[0] = 1;
        b.x[0] = 0.5 * a; b.x[1] = 2.4 * a; b.x[2] = 0.5 * a;
        if (cq_world_add_body(w, &b, NULL) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(w)); return 1; }
    }
    if (cq_world_step(w, 1) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(w)); return 1; }
    for (int c = 0; c < 3; ++c) bus[c] = mock_count(counters[c]);
    t0 = now();
    for (int s = 0; s < steps; ++s) {
        if (cq_world_step(w, 1) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(w)); return 1; }
        cq_world_stats_get(w, &st);
        it_p += st.density_iterations; it_v += st.divergence_iterations;
    }
    secs = now() - t0;
    for (int c = 0; c < 3; ++c) bus1[c] = mock_count(counters[c]);
#if defined(_OPENMP)
    threads = omp_get_max_threads();
#endif
    cq_world_stats_get(w, &st);
    printf("chainqueen dam%dd particles=%ld steps=%d seconds=%.3f particle_steps_per_s=%.4g avg_pressure_iters=%.2f "
           "avg_divergence_iters=%.2f precision=%s threads=%d dt=%g radius=%g boundary=%d backend=%s%s",
           dim, count, steps, secs, (double)count * steps / secs, it_p / steps, it_v / steps, f64 ? "f64" : "f32", threads, dt, r,
           st.boundary_particles, g_gpu ? "cuda" : "cpu", g_ball ? " ball=1" : "");
    if (bus[0] >= 0 && bus1[0] >= 0)
        printf(" mock_read_backs_per_step=%.2f mock_bytes_per_step=%.0f mock_launches_per_step=%.1f", (bus1[0] - bus[0]) / steps,
               (bus1[1] - bus[1]) / steps, (bus1[2] - bus[2]) / steps);
    printf("\n");
    free(x);
    cq_world_destroy(w);
    return 0;
}

int main(int argc, char **argv)
{
    int dim = 0, steps = 20, f64 = 0, quick = 0;
    long particles = 100000;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--dim") && i + 1 < argc) dim = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--particles") && i + 1 < argc) particles = atol(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--f64")) f64 = 1;
        else if (!strcmp(argv[i], "--gpu")) g_gpu = 1;
        else if (!strcmp(argv[i], "--ball")) g_ball = 1;
        else if (!strcmp(argv[i], "quick")) quick = 1;
        else { fprintf(stderr, "usage: %s [--dim 2|3] [--particles N] [--steps S] [--f64] [--gpu] [--ball] [quick]\n", argv[0]); return 2; }
    }
    if (quick) { particles = 2000; steps = 3; }
    if (dim == 0) return run(2, particles, steps, f64) || run(3, particles, steps, f64);
    return run(dim, particles, steps, f64);
}
