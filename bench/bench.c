/* bench.c - forward CPU throughput of chainqueen.h on the falling-cube scenes of the ChainQueen
   paper (seed 000, Table II): a 2D 80x80 block (6.4k particles), a 3D 20^3 cube (8k) and a 3D
   40^3 cube (64k), each in float32 and float64, dropped under gravity onto a sticky floor.

   `make bench` builds and runs it (the Makefile supplies the flags, e.g. -O3 -march=native
   -fopenmp); by hand, from the repository root:
       cc -O3 -march=native -fopenmp bench/bench.c -o build/bench -lm && ./build/bench
   `./build/bench quick` times each scene for ~0.2 s instead of ~1 s (a smoke test).

   substeps = 1, so one cq_sim_step is one MLS-MPM substep (P2G, grid update, G2P); a
   "particle-step" is one particle advanced by one substep.  Timing: 2 warm-up steps, then
   steps until at least the target wall time has passed (CLOCK_MONOTONIC, POSIX). */
#define _POSIX_C_SOURCE 199309L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct scene {
    const char *name;
    int dim, side;          /* cube of side^dim particles, 2 per cell per axis */
    int res;                /* grid cells per axis; dx = 1/res, domain [0, 1)^dim */
    cq_material material;
    cq_precision precision;
} scene;

static const scene scenes[] = {
    {"2D block", 2, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32},
    {"2D block", 2, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_NEOHOOKEAN, CQ_PRECISION_F32},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_NEOHOOKEAN, CQ_PRECISION_F64},
    {"3D cube", 3, 40, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32},
    {"3D cube", 3, 40, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64},
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Library warnings and errors go to stderr; the info line about the backend is dropped. */
static void on_log(cq_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level <= CQ_LOG_WARNING) fprintf(stderr, "chainqueen: %s\n", msg);
}

/* Runs one scene; returns 0 and fills ms per substep and the CPU time used per wall second
   (about the thread count on an idle machine), or nonzero after printing the error. */
static int run_scene(const scene *sc, double target_s, double *ms_per_step, double *cpu_per_wall)
{
    const double dx = 1.0 / sc->res, h = dx / 2;
    const int n = sc->dim == 2 ? sc->side * sc->side : sc->side * sc->side * sc->side;
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *sim = NULL;
    double *x, lo[3], t0, el;
    clock_t c0;
    int p = 0, steps = 0, rc = 1;

    memset(&d, 0, sizeof d);
    d.dim = sc->dim;
    d.res[0] = d.res[1] = d.res[2] = sc->res;
    d.dx = dx;
    d.dt = 0.5 * dx * 0.01;              /* half the stability limit dx*sqrt(rho/E), rho 1, E 1e4 */
    d.substeps = 1;
    d.gravity[1] = -9.8;                 /* y is up; the floor is the y = 0 wall */
    d.material = sc->material;
    d.precision = sc->precision;
    d.boundary = CQ_BOUNDARY_STICKY;
    d.logger.func = on_log;

    /* The cube is centred in x (and z), its bottom one cell above the 3-cell floor wall; it
       lands within the first few hundred substeps (the cost of a substep hardly depends on
       whether it has). */
    for (int a = 0; a < 3; ++a) lo[a] = 0.5 - sc->side * h / 2;
    lo[1] = 4 * dx;
    x = (double *)malloc(sizeof(double) * (size_t)n * sc->dim);
    if (!x) { fprintf(stderr, "out of memory\n"); return 1; }
    for (int i = 0; i < sc->side; ++i)
        for (int j = 0; j < sc->side; ++j)
            for (int k = 0; k < (sc->dim == 3 ? sc->side : 1); ++k) {
                x[p * sc->dim + 0] = lo[0] + (i + 0.5) * h;
                x[p * sc->dim + 1] = lo[1] + (j + 0.5) * h;
                if (sc->dim == 3) x[p * sc->dim + 2] = lo[2] + (k + 0.5) * h;
                p++;
            }

    memset(&pd, 0, sizeof pd);
    pd.count = n;
    pd.x = x;
    pd.default_youngs = 1e4;
    pd.default_poisson = 0.3;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) { fprintf(stderr, "cq_sim_create: %s\n", cq_sim_last_error(NULL)); goto done; }
    if (cq_sim_add_particles(sim, &pd) != CQ_SUCCESS) goto fail;
    if (cq_sim_step(sim, 2) != CQ_SUCCESS) goto fail;    /* warm-up: page in, caches */
    t0 = now_s();
    c0 = clock();
    do {
        if (cq_sim_step(sim, 1) != CQ_SUCCESS) goto fail;
        steps++;
        el = now_s() - t0;
    } while (el < target_s);
    *ms_per_step = 1e3 * el / steps;
    *cpu_per_wall = (double)(clock() - c0) / CLOCKS_PER_SEC / el;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "%s: %s\n", sc->name, cq_sim_last_error(sim));
done:
    cq_sim_destroy(sim);
    free(x);
    return rc;
}

int main(int argc, char **argv)
{
    double target = 1.0;
    int threads = 1, failures = 0, busy = 0;
    const char *mode = "serial";
    if (argc > 1 && strcmp(argv[1], "quick") == 0) target = 0.2;
    else if (argc > 1) { fprintf(stderr, "usage: %s [quick]\n", argv[0]); return 2; }
#ifdef _OPENMP
    threads = omp_get_max_threads();
    mode = "OpenMP";
#endif
    printf("chainqueen.h %d.%d.%d forward CPU benchmark: %s, %d thread%s, substeps = 1, "
           ">= %.1f s per scene\n", CQ_VERSION_MAJOR, CQ_VERSION_MINOR, CQ_VERSION_PATCH, mode, threads,
           threads == 1 ? "" : "s", target);
    printf("domain [0, 1)^dim, dx = 1/grid, 3-cell sticky walls; E = 1e4, nu = 0.3, density 1, "
           "dt = half the stability limit dx*sqrt(rho/E)\n\n");
    printf("| scene | material | particles | grid | precision | ms/substep | particle-steps/s |\n");
    printf("|---|---|---:|---|---|---:|---:|\n");
    for (size_t i = 0; i < sizeof scenes / sizeof scenes[0]; ++i) {
        const scene *sc = &scenes[i];
        int n = sc->dim == 2 ? sc->side * sc->side : sc->side * sc->side * sc->side;
        char grid[32];
        double ms = 0, cpu = 0;
        if (sc->dim == 2) sprintf(grid, "%d^2", sc->res);
        else sprintf(grid, "%d^3", sc->res);
        if (run_scene(sc, target, &ms, &cpu) != 0) { failures++; continue; }
        if (cpu < 0.8 * threads) busy = 1;
        printf("| %s | %s | %d | %s | %s | %.3f | %.3g |\n", sc->name,
               sc->material == CQ_MATERIAL_NEOHOOKEAN ? "NeoHookean" : "fixed corotated", n, grid,
               sc->precision == CQ_PRECISION_F64 ? "f64" : "f32", ms, n / (ms * 1e-3));
        fflush(stdout);
    }
    if (busy)
        printf("\nnote: some scenes got less than 80%% of the %d core%s asked for (the machine is busy); "
               "their timings are pessimistic\n", threads, threads == 1 ? "" : "s");
    return failures ? 1 : 0;
}
