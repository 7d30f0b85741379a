/* bench.c - forward and backward CPU (or, with `gpu`, CUDA) throughput of chainqueen.h on the falling-cube scenes of the
   ChainQueen paper ([ChainQueen], Table II): a 2D 80x80 block (6.4k particles), a 3D 20^3 cube (8k)
   and a 3D 40^3 cube (64k), each in float32 and float64, dropped under gravity onto a sticky floor.

   `make bench` builds and runs it (the Makefile supplies the flags, e.g. -O3 -march=native
   -fopenmp); by hand, from the repository root:
       cc -O3 -march=native -fopenmp bench/bench.c -o build/bench -lm && ./build/bench
   `./build/bench quick` is a smoke test: ~0.2 s per scene, checkpoint_every = 4, only the 2D
   scenes, the 3D 20^3 fixed-corotated f32 and NeoHookean f64 ones, and the batch row (4 scenes;
   2 with `gpu`).
   `./build/bench [quick] com=N` times nothing: it prints each scene's centre-of-mass height after
   0, N/4, ..., N substeps (bench/peers.sh compares it with Taichi's, bench/peer_taichi.py).

   substeps = 1, so one cq_sim_step is one MLS-MPM substep (P2G, grid update, G2P); a
   "particle-step" is one particle advanced by one substep.  `substeps=N` makes a step N
   substeps (the CUDA backend reads its status back once per step, not per substep); the
   figures stay per substep.  `only=NAME` runs the scenes of that name (e.g. only="2D block"),
   `max=N` those of at most N particles (a batch row counts all its scenes').
   `ckpt=N` sets the taped sim's checkpoint_every (default 10, quick 4; 1 keeps every step, as
   Taichi's tape in bench/peer_taichi.py does, and the backward recomputes nothing).  Per scene:
   - forward, no tape (`particle-steps/s`): a sim with checkpoint_every = 0; 2 warm-up steps,
     then steps until at least the target wall time has passed (CLOCK_MONOTONIC, POSIX);
   - forward with tape (`fwd p-steps/s`): a second sim with checkpoint_every = 10; 2 warm-up
     steps and cq_sim_reset, then from step 0 steps until at least 0.6 s has passed (and at
     least 15 steps, 1.5 segments; at most MAX_T): T steps;
   - backward (`bwd p-steps/s`): one cq_sim_backward over those T steps with the seed
     dL/dx = 1/count (L = mean of the coordinate sums), no other seeds, no hook; it includes the
     recomputation of every checkpoint segment (T forward substeps) and the first-call allocation
     of the adjoint buffers.  `bwd/fwd` is backward time / taped forward time, and `tape MB` is
     cq_sim_tape_bytes after the backward (checkpoints, actuation log, segment buffer, the
     backward's grid cache);
   - `bwd again`: a second cq_sim_backward over the same tape, timed alone: what every backward
     of an optimization loop after the first costs (its buffers allocated and touched).

   The batch row ("2D block x scenes") is the 2D f32 block in B scenes of one sim
   (cq_sim_desc.scenes = B, cq_particles_desc.scene = 0..B-1, the same particles in each): B = 256
   with `gpu`, 16 on the CPU, 4 in quick mode (2 with `quick gpu`: the mock driver of `make test`
   is ~100x slower).  It is timed like the other rows; its particles and particle-steps/s are the
   aggregate of all B scenes (B * 6400 * substeps / s), and a line after the table gives its
   aggregate throughput over the single 2D f32 block's of the same run.  Untimed checks (see
   check_batch): first 20 steps of the B scenes with even and odd ones moving apart must match the
   block alone (identical scenes could not show a leak between scenes); after the untaped forward
   every scene's positions must match the block stepped as often alone, and after the backward
   every scene's dL/dx0 must match scene 0's.  A batched sim that cq_sim_create (or
   cq_sim_add_particles) refuses skips the row, printing the reason (not a failure); a wrong
   result fails the run.  `com=N` skips the row.  `batch=N` sets B; `interleaved` gives the
   scenes' particles interleaved (particle p is scene p mod B's p / B-th), not scene after scene:
   e.g. `./build/bench only="2D block x scenes" batch=256` and the same with `interleaved` (the
   CPU's lane order, cpu_backend.j2 >>cpu_lane_order, is what differs between the two).

   `./build/bench big` runs only the 512k cubes (corotated f32 and f64, NeoHookean f32) on the
   CPU, which the plain run leaves to the GPU; bench/threads.sh runs it at 1, 2, 4, ... threads.

   The "3D cube, shuffled" rows are the 64k (CPU and GPU) and 512k (GPU) corotated f32 cubes with
   the particles given in a random order (fixed seed): they should run as fast as the lattice
   order above them (`com=N` skips them). */
#define _POSIX_C_SOURCE 199309L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <math.h>
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
    int quick;              /* also run in quick mode */
    int gpu_only;           /* only with the `gpu` argument (too big for a CPU run) */
    int batch;              /* 1: g_batch copies of the scene in one sim (cq_sim_desc.scenes) */
    int shuffled;           /* 1: the particles in a random order (a fixed seed), not lattice order */
} scene;
/* scenes of a batch row: 256 on a GPU, 16 on the CPU (quick: 4, quick on a GPU: 2; batch=N) */
static int g_batch = 16;
/* `interleaved`: a batch row's particle p is the block's particle p / scenes in scene p mod scenes,
   not the block's p mod n1 in scene p / n1 (scene after scene) */
static int g_interleaved = 0;
static int g_substeps = 1;   /* substeps=N: cq_sim_desc.substeps (one status readback per N substeps on a GPU) */
static int g_big = 0;        /* `big`: on the CPU, only the 512k rows (bench/threads.sh: thread scaling) */

#define CKPT_EVERY 10       /* checkpoint_every of the taped sim (quick mode: 4) */
#define MAX_T 100000        /* cap on the taped step count (tape memory) */
#define BATCH_X_TOL 1e-4    /* batch row: largest |x| difference of a scene vs the block alone (domain [0, 1)) */
#define BATCH_G_TOL 1e-4    /* batch row: largest dL/dx0 difference vs scene 0's, of scene 0's largest entry */

static const scene scenes[] = {
    {"2D block", 2, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 1, 0, 0, 0},
    {"2D block", 2, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64, 1, 0, 0, 0},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 1, 0, 0, 0},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64, 0, 0, 0, 0},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_NEOHOOKEAN, CQ_PRECISION_F32, 0, 0, 0, 0},
    {"3D cube", 3, 20, 64, CQ_MATERIAL_NEOHOOKEAN, CQ_PRECISION_F64, 1, 0, 0, 0},
    {"3D cube", 3, 40, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 0, 0, 0, 0},
    {"3D cube", 3, 40, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64, 0, 0, 0, 0},
    {"3D cube", 3, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 0, 1, 0, 0},    /* 512k: [ChainQueen]'s largest */
    {"3D cube", 3, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64, 0, 1, 0, 0},
    {"3D cube", 3, 80, 128, CQ_MATERIAL_NEOHOOKEAN, CQ_PRECISION_F32, 0, 1, 0, 0},
    {"3D cube", 3, 160, 256, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 0, 1, 0, 0},   /* 4.1M */
    {"3D cube", 3, 160, 256, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F64, 0, 1, 0, 0},
    /* the same cubes with the particles in a random order: the cost of a scene should not depend
       on the order its particles were given in (a mesh sampler's, a file's) */
    {"3D cube, shuffled", 3, 40, 64, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 0, 0, 0, 1},
    {"3D cube, shuffled", 3, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 0, 1, 0, 1},
    /* the 2D block in g_batch scenes of one sim: aggregate throughput (DESIGN.md section 8) */
    {"2D block x scenes", 2, 80, 128, CQ_MATERIAL_FIXED_COROTATED, CQ_PRECISION_F32, 1, 0, 1, 0},
};

/* a batch's particle p: its scene, and which of the block's particles it is (g_interleaved) */
static int scene_of(long p, int n1, int nsc) { return (int)(g_interleaved ? p % nsc : p / n1); }
static long block_particle(long p, int n1, int nsc) { return g_interleaved ? p / nsc : p % n1; }
/* coordinate i of a batch: the same coordinate of the block's particle, and of scene 0's copy of it */
static long block_coord(long i, int dim, int n1, int nsc) { return block_particle(i / dim, n1, nsc) * dim + i % dim; }
static long scene0_coord(long i, int dim, int n1, int nsc)
{
    return block_particle(i / dim, n1, nsc) * (g_interleaved ? nsc : 1) * dim + i % dim;
}

/* particles of a scene row: side^dim, times g_batch for a batch row */
static int count_of(const scene *sc)
{
    const int n = sc->dim == 2 ? sc->side * sc->side : sc->side * sc->side * sc->side;
    return sc->batch ? n * g_batch : n;
}
static cq_backend g_backend = CQ_BACKEND_CPU;

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

/* keeps the backend line of the log: "backend: CUDA (device 0: ...)" */
static void name_log(cq_log_level level, const char *msg, void *user)
{
    if (level == CQ_LOG_INFO && strncmp(msg, "backend: ", 9) == 0) snprintf((char *)user, 300, "%s", msg + 9);
    else on_log(level, msg, user);
}

/* What run_scene measures. */
typedef struct result {
    double ms_per_step;     /* forward without tape */
    double cpu_per_wall;    /* CPU time per wall second over all timed parts */
    int T;                  /* steps of the taped forward and the backward */
    double fwd_s, bwd_s;    /* taped forward, backward: seconds for T steps */
    double bwd2_s;          /* a second backward over the same tape (its buffers allocated and touched) */
    double tape_mb;         /* cq_sim_tape_bytes after the backward, MB (1e6 bytes) */
    double batch_indep;     /* batch row: check_batch's largest |x| difference (scenes moving apart) */
    double batch_dx;        /* batch row: largest |x| difference of a scene vs the block alone */
    double batch_dg;        /* batch row: largest dL/dx0 difference vs scene 0's (relative) */
} result;

/* why make_sim's last sim was refused (cq_sim_create's or cq_sim_add_particles' message) */
static char g_refused[600];

/* Creates the scene's sim (checkpoint_every = ckpt) with its n particles at x (velocities v, NULL =
   0); nscenes > 1: a batched sim, scn[p] the scene of particle p.  NULL after printing the error
   (and setting *refused when refused is not NULL: cq_sim_create or cq_sim_add_particles said no). */
static cq_sim *make_sim(const scene *sc, int ckpt, const double *x, const double *v, int n, int nscenes, const int *scn,
                        int *refused)
{
    const double dx = 1.0 / sc->res;
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *sim = NULL;

    memset(&d, 0, sizeof d);
    d.dim = sc->dim;
    d.res[0] = d.res[1] = d.res[2] = sc->res;
    d.dx = dx;
    d.dt = 0.5 * dx * 0.01;              /* half the stability limit dx*sqrt(rho/E), rho 1, E 1e4 */
    d.substeps = g_substeps;
    d.gravity[1] = -9.8;                 /* y is up; the floor is the y = 0 wall */
    d.material = sc->material;
    d.precision = sc->precision;
    d.boundary = CQ_BOUNDARY_STICKY;
    d.checkpoint_every = ckpt;
    d.backend = g_backend;
    d.logger.func = on_log;
    memset(&pd, 0, sizeof pd);
    pd.count = n;
    pd.x = x;
    pd.v = v;
    if (nscenes > 1) {
        d.scenes = nscenes;
        pd.scene = scn;
    }
    pd.default_youngs = 1e4;
    pd.default_poisson = 0.3;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) {
        snprintf(g_refused, sizeof g_refused, "cq_sim_create: %s", cq_sim_last_error(NULL));
        fprintf(stderr, "%s: %s\n", sc->name, g_refused);
        if (refused) *refused = 1;
        return NULL;
    }
    if (cq_sim_add_particles(sim, &pd) != CQ_SUCCESS) {
        snprintf(g_refused, sizeof g_refused, "%s", cq_sim_last_error(sim));   /* names the call */
        fprintf(stderr, "%s: %s\n", sc->name, g_refused);
        if (refused) *refused = 1;
        cq_sim_destroy(sim);
        return NULL;
    }
    return sim;
}

/* The scene's particles, 2 per cell per axis (spacing h = dx/2): the cube is centred in x (and
   z), its bottom one cell above the 3-cell floor wall; it lands within the first few hundred
   substeps (the cost of a substep hardly depends on whether it has). */
static void fill_cube(const scene *sc, double *x)
{
    const double h = 0.5 / sc->res;
    double lo[3];
    int p = 0;
    for (int a = 0; a < 3; ++a) lo[a] = 0.5 - sc->side * h / 2;
    lo[1] = 8 * h;
    for (int i = 0; i < sc->side; ++i)
        for (int j = 0; j < sc->side; ++j)
            for (int k = 0; k < (sc->dim == 3 ? sc->side : 1); ++k) {
                x[p * sc->dim + 0] = lo[0] + (i + 0.5) * h;
                x[p * sc->dim + 1] = lo[1] + (j + 0.5) * h;
                if (sc->dim == 3) x[p * sc->dim + 2] = lo[2] + (k + 0.5) * h;
                p++;
            }
}

/* `com=N` (a check for bench/peers.sh, not a timing): steps the untaped sim N substeps and prints
   the mean particle height (the centre of mass: equal masses) after 0, N/4, N/2, 3N/4 and N. */
static int com_scene(const scene *sc, const char *grid, int N)
{
    const int n = sc->dim == 2 ? sc->side * sc->side : sc->side * sc->side * sc->side;
    double *x = (double *)malloc(sizeof(double) * (size_t)n * sc->dim);
    cq_sim *sim = NULL;
    int rc = 1;
    if (!x) { fprintf(stderr, "out of memory\n"); return 1; }
    fill_cube(sc, x);
    if (!(sim = make_sim(sc, 0, x, NULL, n, 1, NULL, NULL))) goto done;
    printf("com | %s | %s | %d | %s | %s | %d |", sc->name,
           sc->material == CQ_MATERIAL_NEOHOOKEAN ? "NeoHookean" : "fixed corotated", n, grid,
           sc->precision == CQ_PRECISION_F64 ? "f64" : "f32", N);
    for (int q = 0; q <= 4; ++q) {
        double y = 0;
        if (q > 0 && cq_sim_step(sim, q * N / 4 - (q - 1) * N / 4) != CQ_SUCCESS) {
            fprintf(stderr, "%s: %s\n", sc->name, cq_sim_last_error(sim));
            printf("\n");
            goto done;
        }
        if (cq_sim_get(sim, CQ_FIELD_X, x) != CQ_SUCCESS) goto done;
        for (int p = 0; p < n; ++p) y += x[p * sc->dim + 1];
        printf(" %.7f |", y / n);
    }
    printf("\n");
    fflush(stdout);
    rc = 0;
done:
    cq_sim_destroy(sim);
    free(x);
    return rc;
}

/* Batch row, untimed: are the scenes independent?  (Identical scenes cannot tell: merged into one
   grid, identical copies move exactly as one.)  A batched sim of the nsc copies at x (scene by
   scene, scn) in which even scenes start moving at +BATCH_V along x and odd ones at -BATCH_V,
   against the block alone at either velocity, after BATCH_CHECK_STEPS steps: *err = the largest
   |x| difference (scenes that shared a grid would differ by ~BATCH_V * steps * dt, 1.6e-3).
   Returns 0; 2 when the batched sim is refused (g_refused says why); 1 after printing the error. */
#define BATCH_V 2.0
#define BATCH_CHECK_STEPS 20
static int check_batch(const scene *sc, const double *x, const double *blk, const int *scn, int n1, int nsc, double *err)
{
    const int n = n1 * nsc;
    const long m1 = (long)n1 * sc->dim, m = (long)n * sc->dim;
    double *v = (double *)calloc((size_t)m, sizeof(double)), *xb = (double *)malloc(sizeof(double) * (size_t)m);
    double *alone = (double *)malloc(sizeof(double) * (size_t)m1 * 2), *va = (double *)calloc((size_t)m1 * 2, sizeof(double));
    scene one = *sc;
    cq_sim *sim = NULL;
    int rc = 1, refused = 0;

    *err = 0;
    one.batch = 0;
    if (!v || !xb || !alone || !va) { fprintf(stderr, "out of memory\n"); goto done; }
    for (int p = 0; p < n; ++p) v[(long)p * sc->dim] = scn[p] % 2 ? -BATCH_V : BATCH_V;
    for (int p = 0; p < n1; ++p) { va[(long)p * sc->dim] = BATCH_V; va[m1 + (long)p * sc->dim] = -BATCH_V; }
    if (!(sim = make_sim(sc, 0, x, v, n, nsc, scn, &refused))) { rc = refused ? 2 : 1; goto done; }
    if (cq_sim_step(sim, BATCH_CHECK_STEPS) != CQ_SUCCESS || cq_sim_get(sim, CQ_FIELD_X, xb) != CQ_SUCCESS) goto fail;
    for (int k = 0; k < 2 && k < nsc; ++k) {   /* the block alone at +BATCH_V (scene 0's start), -BATCH_V (scene 1's) */
        cq_sim_destroy(sim);
        if (!(sim = make_sim(&one, 0, blk, va + k * m1, n1, 1, NULL, NULL))) goto done;
        if (cq_sim_step(sim, BATCH_CHECK_STEPS) != CQ_SUCCESS || cq_sim_get(sim, CQ_FIELD_X, alone + k * m1) != CQ_SUCCESS)
            goto fail;
    }
    for (long i = 0; i < m; ++i) {
        const double e = fabs(xb[i] - alone[scene_of(i / sc->dim, n1, nsc) % 2 * m1 + block_coord(i, sc->dim, n1, nsc)]);
        if (!(e <= *err)) *err = e;   /* NaN too */
    }
    if (!(*err <= BATCH_X_TOL)) {
        fprintf(stderr, "%s: scenes moving apart: a scene's positions after %d steps differ from the block's alone by "
                "%.3g (> %g): the batched scenes are not independent\n", sc->name, BATCH_CHECK_STEPS, *err, BATCH_X_TOL);
        goto done;
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "%s: %s\n", sc->name, cq_sim_last_error(sim));
done:
    cq_sim_destroy(sim);
    free(v);
    free(xb);
    free(alone);
    free(va);
    return rc;
}

/* Runs one scene: the untaped forward for at least target_s, then a taped forward of about
   bwd_fwd_s and the backward over it.  Returns 0 and fills *r; 2 when a batch row's sim is
   refused (g_refused says why: the row is skipped); 1 after printing the error. */
static int run_scene(const scene *sc, double target_s, double bwd_fwd_s, int ckpt, result *r)
{
    const int n1 = sc->dim == 2 ? sc->side * sc->side : sc->side * sc->side * sc->side;
    const int nsc = sc->batch ? g_batch : 1, n = n1 * nsc;
    const long m1 = (long)n1 * sc->dim, m = (long)n * sc->dim;   /* coordinates of one scene, of all */
    cq_sim *sim = NULL;
    double *x = NULL, *seed = NULL, *xb = NULL, *alone = NULL, *blk = NULL, t0, el, wall = 0, cpu = 0;
    int *scn = NULL;
    clock_t c0;
    int steps = 0, rc = 1, refused = 0;

    memset(r, 0, sizeof *r);
    x = (double *)malloc(sizeof(double) * (size_t)m);
    seed = (double *)malloc(sizeof(double) * (size_t)m);
    if (nsc > 1) {
        xb = (double *)malloc(sizeof(double) * (size_t)m);
        alone = (double *)malloc(sizeof(double) * (size_t)m1);
        blk = (double *)malloc(sizeof(double) * (size_t)m1);
        scn = (int *)malloc(sizeof(int) * (size_t)n);
    }
    if (!x || !seed || (nsc > 1 && (!xb || !alone || !blk || !scn))) { fprintf(stderr, "out of memory\n"); goto done; }
    fill_cube(sc, x);
    if (sc->shuffled) {   /* Fisher-Yates with a fixed LCG: the same order every run */
        unsigned u = 12345u;
        for (int i = n1 - 1; i > 0; --i) {
            int j;
            u = u * 1664525u + 1013904223u;
            j = (int)((u >> 8) % (unsigned)(i + 1));
            for (int a = 0; a < sc->dim; ++a) { const double t = x[(long)i * sc->dim + a]; x[(long)i * sc->dim + a] = x[(long)j * sc->dim + a]; x[(long)j * sc->dim + a] = t; }
        }
    }
    if (nsc > 1) {   /* batch: the same particles in each scene, scene after scene or interleaved */
        memcpy(blk, x, sizeof(double) * (size_t)m1);
        for (long i = 0; i < m; ++i) x[i] = blk[block_coord(i, sc->dim, n1, nsc)];
        for (int p = 0; p < n; ++p) scn[p] = scene_of(p, n1, nsc);
    }
    for (long i = 0; i < m; ++i) seed[i] = 1.0 / n;
    if (nsc > 1 && (rc = check_batch(sc, x, blk, scn, n1, nsc, &r->batch_indep)) != 0) goto done;
    rc = 1;

    /* forward, no tape */
    if (!(sim = make_sim(sc, 0, x, NULL, n, nsc, scn, &refused))) { if (refused && nsc > 1) rc = 2; goto done; }
    if (cq_sim_step(sim, 2) != CQ_SUCCESS) goto fail;    /* warm-up: page in, caches */
    t0 = now_s();
    c0 = clock();
    do {
        if (cq_sim_step(sim, 1) != CQ_SUCCESS) goto fail;
        steps++;
        el = now_s() - t0;
    } while (el < target_s);
    r->ms_per_step = 1e3 * el / ((double)steps * g_substeps);
    wall += el;
    cpu += (double)(clock() - c0) / CLOCKS_PER_SEC;
    if (nsc > 1) {   /* untimed: every scene against the block stepped as often in a sim of its own */
        scene one = *sc;
        one.batch = 0;
        if (cq_sim_get(sim, CQ_FIELD_X, xb) != CQ_SUCCESS) goto fail;
        cq_sim_destroy(sim);
        if (!(sim = make_sim(&one, 0, blk, NULL, n1, 1, NULL, NULL))) goto done;
        if (cq_sim_step(sim, 2 + steps) != CQ_SUCCESS || cq_sim_get(sim, CQ_FIELD_X, alone) != CQ_SUCCESS) goto fail;
        for (long i = 0; i < m; ++i) {
            const double e = fabs(xb[i] - alone[block_coord(i, sc->dim, n1, nsc)]);
            if (!(e <= r->batch_dx)) r->batch_dx = e;   /* NaN too */
        }
        if (!(r->batch_dx <= BATCH_X_TOL)) {
            fprintf(stderr, "%s: a scene's positions after %d steps differ from the block's alone by %.3g (> %g): "
                    "the batched scenes are wrong\n", sc->name, 2 + steps, r->batch_dx, BATCH_X_TOL);
            goto done;
        }
    }
    cq_sim_destroy(sim);

    /* forward with tape, then backward */
    if (!(sim = make_sim(sc, ckpt, x, NULL, n, nsc, scn, &refused))) { if (refused && nsc > 1) rc = 2; goto done; }
    if (cq_sim_step(sim, 2) != CQ_SUCCESS || cq_sim_reset(sim) != CQ_SUCCESS) goto fail;
    t0 = now_s();
    c0 = clock();
    do {   /* at least 1.5 segments, so the backward recomputes a full and a partial one */
        if (cq_sim_step(sim, 1) != CQ_SUCCESS) goto fail;
        r->T++;
        el = now_s() - t0;
    } while ((el < bwd_fwd_s || r->T < ckpt + ckpt / 2) && r->T < MAX_T);
    r->fwd_s = el;
    if (cq_sim_backward(sim, seed, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) goto fail;
    r->bwd_s = now_s() - t0 - r->fwd_s;
    wall += r->fwd_s + r->bwd_s;
    {   /* again: what each backward of an optimization loop after its first costs */
        const double t1 = now_s();
        if (cq_sim_backward(sim, seed, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) goto fail;
        r->bwd2_s = now_s() - t1;
        wall += r->bwd2_s;
    }
    cpu += (double)(clock() - c0) / CLOCKS_PER_SEC;
    r->cpu_per_wall = cpu / wall;
    r->tape_mb = 1e-6 * (double)cq_sim_tape_bytes(sim);
    /* the gradient should be finite (a NaN backward would make a meaningless timing) */
    if (cq_sim_grad(sim, CQ_FIELD_X, x) != CQ_SUCCESS) goto fail;
    for (long i = 0; i < m; ++i)
        if (!(x[i] - x[i] == 0)) {
            fprintf(stderr, "%s: dL/dx0 of particle %ld is not finite\n", sc->name, i / sc->dim);
            goto done;
        }
    if (nsc > 1) {   /* every scene's dL/dx0 against scene 0's, relative to its largest entry */
        double g = 0;
        for (long i = 0; i < m; ++i) if (scene_of(i / sc->dim, n1, nsc) == 0) g = fabs(x[i]) > g ? fabs(x[i]) : g;
        for (long i = 0; i < m; ++i) {
            const double e = fabs(x[i] - x[scene0_coord(i, sc->dim, n1, nsc)]) / (g > 0 ? g : 1);
            if (!(e <= r->batch_dg)) r->batch_dg = e;
        }
        if (!(r->batch_dg <= BATCH_G_TOL)) {
            fprintf(stderr, "%s: a scene's dL/dx0 differs from scene 0's by %.3g of its largest entry (> %g): "
                    "the batched scenes are wrong\n", sc->name, r->batch_dg, BATCH_G_TOL);
            goto done;
        }
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "%s: %s\n", sc->name, cq_sim_last_error(sim));
done:
    cq_sim_destroy(sim);
    free(x);
    free(seed);
    free(xb);
    free(alone);
    free(blk);
    free(scn);
    return rc;
}

int main(int argc, char **argv)
{
    double target = 1.0, bwd_fwd = 0.6;
    int threads = 1, failures = 0, busy = 0, quick = 0, ckpt = CKPT_EVERY, ckpt_arg = 0, com = 0, have_batch = 0, rc, batch_arg = 0;
    char skipped[800] = "";
    result single, batched;
    const char *mode = "serial", *only = NULL;   /* only: the scenes of that name (e.g. only="2D block") */
    long most = 0;                               /* max=N: the scenes of at most N particles (0: all) */
    char devname[300] = "";
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "quick") == 0) { target = 0.05; bwd_fwd = 0.02; quick = 1; ckpt = 4; }
        else if (strcmp(argv[a], "gpu") == 0) g_backend = CQ_BACKEND_CUDA;
        else if (strcmp(argv[a], "big") == 0) g_big = 1;
        else if (strncmp(argv[a], "com=", 4) == 0 && (com = atoi(argv[a] + 4)) >= 4) {}
        else if (strncmp(argv[a], "only=", 5) == 0) only = argv[a] + 5;
        else if (strncmp(argv[a], "max=", 4) == 0 && (most = atol(argv[a] + 4)) >= 1) {}
        else if (strncmp(argv[a], "substeps=", 9) == 0 && (g_substeps = atoi(argv[a] + 9)) >= 1) {}
        else if (strncmp(argv[a], "ckpt=", 5) == 0 && (ckpt_arg = atoi(argv[a] + 5)) >= 1) {}
        else if (strncmp(argv[a], "batch=", 6) == 0 && (batch_arg = atoi(argv[a] + 6)) >= 2) {}
        else if (strcmp(argv[a], "interleaved") == 0) g_interleaved = 1;
        else {
            fprintf(stderr, "usage: %s [quick] [gpu | big] [com=N (N >= 4)] [only=SCENE NAME] [max=N] [substeps=N] [ckpt=N (N >= 1)] [batch=N (N >= 2)] [interleaved]\n", argv[0]);
            return 2;
        }
    }
    if (ckpt_arg) ckpt = ckpt_arg;
    if (com && g_substeps != 1) { fprintf(stderr, "%s: com=N counts substeps: use it without substeps=N\n", argv[0]); return 2;
    }
#ifdef _OPENMP
    threads = omp_get_max_threads();
    mode = "OpenMP";
#endif
    if (g_backend == CQ_BACKEND_CUDA) {   /* the device, as the library's log names it */
        cq_sim_desc d;
        cq_sim *sim;
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.backend = CQ_BACKEND_CUDA;
        d.logger.func = name_log; d.logger.user = devname;
        if (cq_sim_create(&d, &sim) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(NULL)); return 1; }
        cq_sim_destroy(sim);
        mode = devname;
    }
    g_batch = batch_arg ? batch_arg : g_backend == CQ_BACKEND_CUDA ? (quick ? 2 : 256) : (quick ? 4 : 16);
    memset(&single, 0, sizeof single); memset(&batched, 0, sizeof batched);
    if (com) {   /* the centre-of-mass check of bench/peers.sh instead of the timings */
        for (size_t i = 0; i < sizeof scenes / sizeof scenes[0]; ++i) {
            const scene *sc = &scenes[i];
            char grid[32];
            if ((quick && !sc->quick) || (sc->gpu_only && g_backend != CQ_BACKEND_CUDA) || sc->batch || sc->shuffled) continue;
            sprintf(grid, "%d^%d", sc->res, sc->dim);
            failures += com_scene(sc, grid, com) != 0;
        }
        return failures ? 1 : 0;
    }
    printf("chainqueen.h %d.%d.%d %s benchmark: %s, %d host thread%s, substeps = %d; forward >= %.2f s per "
           "scene, then a taped forward of ~%.2f s (checkpoint_every = %d) and its backward\n",
           CQ_VERSION_MAJOR, CQ_VERSION_MINOR, CQ_VERSION_PATCH, g_backend == CQ_BACKEND_CUDA ? "CUDA" : "CPU", mode,
           threads, threads == 1 ? "" : "s", g_substeps, target, bwd_fwd, ckpt);
    printf("domain [0, 1)^dim, dx = 1/grid, 3-cell sticky walls; E = 1e4, nu = 0.3, density 1, "
           "dt = half the stability limit dx*sqrt(rho/E)\n");
    printf("particle-steps/s: forward without tape; fwd: forward with tape over T steps; bwd: "
           "cq_sim_backward over them, seed dL/dx = 1/count (includes recomputing the segments); "
           "tape MB after the backward\n\n");
    printf("| scene | material | particles | grid | precision | ms/substep | particle-steps/s "
           "| T | fwd p-steps/s | bwd p-steps/s | bwd/fwd | tape MB | bwd again p-steps/s |\n");
    printf("|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    fflush(stdout);
    for (size_t i = 0; i < sizeof scenes / sizeof scenes[0]; ++i) {
        const scene *sc = &scenes[i];
        int n = count_of(sc);
        char grid[48];
        result r;
        if ((quick && !sc->quick) || (only && strcmp(sc->name, only) != 0) || (most && (long)n > most)) continue;
        if (g_big && g_backend != CQ_BACKEND_CUDA) {   /* the 512k rows alone */
            if (!sc->gpu_only || sc->shuffled || count_of(sc) > 512000) continue;
        }
        else if (sc->gpu_only && g_backend != CQ_BACKEND_CUDA) continue;
        if (sc->batch) sprintf(grid, "%d x %d^2%s", g_batch, sc->res, g_interleaved ? " interleaved" : "");
        else if (sc->dim == 2) sprintf(grid, "%d^2", sc->res);
        else sprintf(grid, "%d^3", sc->res);
        if ((rc = run_scene(sc, target, bwd_fwd, ckpt, &r)) == 2) {   /* a refused batched sim: skip the row */
            snprintf(skipped, sizeof skipped, "%s (%d scenes of one sim): skipped, %s", sc->name, g_batch, g_refused);
            continue;
        }
        if (rc != 0) { failures++; continue; }
        if (!sc->batch && sc->dim == 2 && sc->precision == CQ_PRECISION_F32) single = r;
        if (sc->batch) batched = r, have_batch = 1;
        if (r.cpu_per_wall < 0.8 * threads && g_backend == CQ_BACKEND_CPU) busy = 1;
        printf("| %s | %s | %d | %s | %s | %.3f | %.3g | %d | %.3g | %.3g | %.2f | %.1f | %.3g |\n", sc->name,
               sc->material == CQ_MATERIAL_NEOHOOKEAN ? "NeoHookean" : "fixed corotated", n, grid,
               sc->precision == CQ_PRECISION_F64 ? "f64" : "f32", r.ms_per_step, n / (r.ms_per_step * 1e-3),
               r.T, (double)n * r.T * g_substeps / r.fwd_s, (double)n * r.T * g_substeps / r.bwd_s, r.bwd_s / r.fwd_s, r.tape_mb,
               (double)n * r.T * g_substeps / r.bwd2_s);
        fflush(stdout);
    }
    if (have_batch && single.ms_per_step > 0)   /* aggregate particle-steps/s of the batch row / the 2D f32 row's */
        printf("\n%d batched 2D blocks: aggregate throughput %.2fx one block's (forward), %.2fx (taped forward), "
               "%.2fx (backward); each scene matches the block alone (largest |x| difference %.2g with the scenes moving "
               "apart, %.2g after the timed forward; dL/dx0 vs scene 0's %.2g)\n",
               g_batch, (double)g_batch * single.ms_per_step / batched.ms_per_step,
               (double)g_batch * (batched.T / batched.fwd_s) / (single.T / single.fwd_s),
               (double)g_batch * (batched.T / batched.bwd_s) / (single.T / single.bwd_s), batched.batch_indep,
               batched.batch_dx, batched.batch_dg);
    if (skipped[0]) printf("\n%s\n", skipped);
    if (busy)
        printf("\nnote: some scenes got less than 80%% of the %d core%s asked for (the machine is busy); "
               "their timings are pessimistic\n", threads, threads == 1 ? "" : "s");
    return failures ? 1 : 0;
}
