/* pair.c - two versions of chainqueen.h timed in one process, run by run in turns: a paired
   comparison for a speed change of a few percent on a machine too noisy for two separate runs
   (a shared VM's two bench.c runs, minutes apart, differ by 10-30%; here both sides see the same
   moments of the host).  bench/pair.sh builds it and runs it; see there for the usage.

   This file is compiled three times: with PAIR_SIDE=a and the first header's directory first on
   the include path, with PAIR_SIDE=b and the second's (each with CQ_API=static, so that the two
   implementations do not clash when linked), and once without PAIR_SIDE for main().

   Scenes as bench.c's (its 2D 80x80 block in a 128^2 grid, the 3D 20^3 cube and the 40^3 one in a
   64^3 grid; E = 1e4, nu = 0.3, dt = half the stability limit, substeps = 1), each in both
   precisions and, the 8k cube, both materials; and the 2D float32 block 16 times in one sim
   (cq_sim_desc.scenes = 16, scene after scene, the i-th one raised by 0.001 (i mod 3): bench.c's
   batch row).  Per scene and phase, both sides run a few warm-up
   runs, then `rounds` rounds, each one run of A and one of B, in turns (A first in even rounds):
     - fwd: K forward steps without a tape, continuing from where the sim is (reset after 2000 steps:
       both sides' sims stay at the same stage of the fall);
     - bwd: reset, K taped steps (checkpoint_every = 10), then the timed cq_sim_backward with the seed
       dL/dx = 1/count, which recomputes the segments (as bench.c's "bwd again").
   It prints per row each side's best and median run (ns per particle-substep) and two ratios:
   A's best over B's, and the median over the rounds of A's run over B's in the same round (> 1:
   B is faster).  The median of paired ratios is the figure to quote; an A/A run (the same header
   on both sides) shows how far from 1 it strays with no change (a few percent at most). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(PAIR_SIDE)
#define CQ_API static
#define CHAINQUEEN_IMPLEMENTATION
#include "chainqueen.h"
#include <time.h>

#define PAIR_JOIN2(s, x) pair_##s##_##x
#define PAIR_JOIN(s, x) PAIR_JOIN2(s, x)
#define PAIR_FN(x) PAIR_JOIN(PAIR_SIDE, x)

typedef struct pair_sim { cq_sim *sim; double *seed; int n; } pair_sim;

static double pair_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void *PAIR_FN(make)(int dim, int side, int res, int f64, int neo, int taped, int scenes);
double PAIR_FN(run)(void *h, int backward, int K);
void PAIR_FN(free)(void *h);

/* the scene's sim: a cube (square) of side^dim particles, 2 per cell per axis, above the floor;
   scenes > 1: that many copies in one sim, scene after scene */
void *PAIR_FN(make)(int dim, int side, int res, int f64, int neo, int taped, int scenes)
{
    const double dx = 1.0 / res, h = 0.5 / res;
    const int one = dim == 2 ? side * side : side * side * side, n = one * scenes;
    pair_sim *p = (pair_sim *)calloc(1, sizeof *p);
    double *x = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    int *sc = (int *)malloc(sizeof(int) * (size_t)n);
    cq_sim_desc d;
    cq_particles_desc pd;
    if (!p || !x || !sc || !(p->seed = (double *)malloc(sizeof(double) * 3 * (size_t)n))) { fprintf(stderr, "out of memory\n"); exit(1); }
    p->n = n;
    for (int i = 0; i < n; ++i) {
        const int j = i % one, k = i / one, a[3] = {j % side, (j / side) % side, j / (side * side)};
        for (int q = 0; q < dim; ++q) {
            x[dim * i + q] = q == 1 ? 4 * dx + (a[q] + 0.5) * h + 0.001 * (k % 3) : 0.5 - side * h / 2 + (a[q] + 0.5) * h;
            p->seed[dim * i + q] = 1.0 / n;
        }
        sc[i] = k;
    }
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = res; d.dx = dx; d.dt = 0.5 * dx * 0.01; d.substeps = 1;
    d.gravity[1] = -9.8; d.boundary = CQ_BOUNDARY_STICKY; d.checkpoint_every = taped ? 10 : 0;
    d.material = neo ? CQ_MATERIAL_NEOHOOKEAN : CQ_MATERIAL_FIXED_COROTATED;
    d.precision = f64 ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
    if (scenes > 1) d.scenes = scenes;
    memset(&pd, 0, sizeof pd);
    pd.count = n; pd.x = x; pd.default_youngs = 1e4; pd.default_poisson = 0.3;
    if (scenes > 1) pd.scene = sc;
    if (cq_sim_create(&d, &p->sim) != CQ_SUCCESS) { fprintf(stderr, "cq_sim_create: %s\n", cq_sim_last_error(NULL)); exit(1); }
    if (cq_sim_add_particles(p->sim, &pd) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(p->sim)); exit(1); }
    free(x);
    free(sc);
    return p;
}

/* one run: ns per particle-substep */
double PAIR_FN(run)(void *h, int backward, int K)
{
    pair_sim *p = (pair_sim *)h;
    double t0;
    if (backward) {
        if (cq_sim_reset(p->sim) != CQ_SUCCESS || cq_sim_step(p->sim, K) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(p->sim)); exit(1); }
        t0 = pair_now();
        if (cq_sim_backward(p->sim, p->seed, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(p->sim)); exit(1); }
    } else {
        if (cq_sim_step_count(p->sim) > 2000 && cq_sim_reset(p->sim) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(p->sim)); exit(1); }
        t0 = pair_now();
        if (cq_sim_step(p->sim, K) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_sim_last_error(p->sim)); exit(1); }
    }
    return (pair_now() - t0) * 1e9 / ((double)p->n * K);
}

void PAIR_FN(free)(void *h)
{
    pair_sim *p = (pair_sim *)h;
    cq_sim_destroy(p->sim);
    free(p->seed);
    free(p);
}

#else   /* main */
void *pair_a_make(int dim, int side, int res, int f64, int neo, int taped, int scenes);
double pair_a_run(void *h, int backward, int K);
void pair_a_free(void *h);
void *pair_b_make(int dim, int side, int res, int f64, int neo, int taped, int scenes);
double pair_b_run(void *h, int backward, int K);
void pair_b_free(void *h);

typedef struct row { const char *name; int dim, side, res, f64, neo, backward, K, scenes; } row;
static const row ROWS[] = {
    {"2d-f32-fwd", 2, 80, 128, 0, 0, 0, 100, 1},   {"2d-f32-bwd", 2, 80, 128, 0, 0, 1, 40, 1},
    {"2d-f64-fwd", 2, 80, 128, 1, 0, 0, 100, 1},   {"2d-f64-bwd", 2, 80, 128, 1, 0, 1, 40, 1},
    {"8k-f32-fwd", 3, 20, 64, 0, 0, 0, 30, 1},     {"8k-f32-bwd", 3, 20, 64, 0, 0, 1, 15, 1},
    {"8k-f64-fwd", 3, 20, 64, 1, 0, 0, 30, 1},     {"8k-f64-bwd", 3, 20, 64, 1, 0, 1, 15, 1},
    {"8k-neo-f32-fwd", 3, 20, 64, 0, 1, 0, 30, 1}, {"8k-neo-f32-bwd", 3, 20, 64, 0, 1, 1, 15, 1},
    {"8k-neo-f64-fwd", 3, 20, 64, 1, 1, 0, 30, 1}, {"8k-neo-f64-bwd", 3, 20, 64, 1, 1, 1, 15, 1},
    {"64k-f32-fwd", 3, 40, 64, 0, 0, 0, 6, 1},     {"64k-f32-bwd", 3, 40, 64, 0, 0, 1, 12, 1},
    {"64k-f64-fwd", 3, 40, 64, 1, 0, 0, 6, 1},     {"64k-f64-bwd", 3, 40, 64, 1, 0, 1, 12, 1},
    {"x16-2d-f32-fwd", 2, 80, 128, 0, 0, 0, 8, 16}, {"x16-2d-f32-bwd", 2, 80, 128, 0, 0, 1, 12, 16},
};
#define MAX_ROUNDS 999

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}
static double median(const double *v, int n)
{
    double t[MAX_ROUNDS];
    memcpy(t, v, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
static double least(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; ++i) m = v[i] < m ? v[i] : m;
    return m;
}
/* row r is chosen by `only` (names separated by commas or spaces; a name matches as a prefix: "8k" takes the 8k rows) */
static int chosen(const char *only, const char *name)
{
    const char *p = only;
    if (!only || !*only) return 1;
    while (*p) {
        size_t len = strcspn(p, ", ");
        if (len > 0 && strncmp(name, p, len) == 0) return 1;
        p += len;
        p += strspn(p, ", ");
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 9, warm = 2, scale = 1, any = 0;
    const char *only = NULL;
    static double ta[MAX_ROUNDS], tb[MAX_ROUNDS], ratio[MAX_ROUNDS];
    for (int i = 1; i < argc; ++i) {
        if (!strncmp(argv[i], "rounds=", 7)) rounds = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "only=", 5)) only = argv[i] + 5;
        else if (!strncmp(argv[i], "warm=", 5)) warm = atoi(argv[i] + 5);
        else if (!strncmp(argv[i], "scale=", 6)) scale = atoi(argv[i] + 6);
        else { fprintf(stderr, "pair: unknown argument '%s' (rounds=N only=NAMES warm=N scale=N)\n", argv[i]); return 2; }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || warm < 0 || scale < 1) { fprintf(stderr, "pair: rounds 1..%d, warm >= 0, scale >= 1\n", MAX_ROUNDS); return 2; }
    printf("| row | A best | A median | B best | B median | A/B best | A/B paired median |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t r = 0; r < sizeof ROWS / sizeof ROWS[0]; ++r) {
        const row *w = &ROWS[r];
        const int K = w->K * scale;
        void *A, *B;
        if (!chosen(only, w->name)) continue;
        any = 1;
        A = pair_a_make(w->dim, w->side, w->res, w->f64, w->neo, w->backward, w->scenes);
        B = pair_b_make(w->dim, w->side, w->res, w->f64, w->neo, w->backward, w->scenes);
        for (int i = 0; i < warm; ++i) { pair_a_run(A, w->backward, K); pair_b_run(B, w->backward, K); }
        for (int i = 0; i < rounds; ++i) {
            if (i % 2) { tb[i] = pair_b_run(B, w->backward, K); ta[i] = pair_a_run(A, w->backward, K); }
            else { ta[i] = pair_a_run(A, w->backward, K); tb[i] = pair_b_run(B, w->backward, K); }
            if (!(ta[i] > 0 && tb[i] > 0)) { fprintf(stderr, "pair: %s: a run took no time\n", w->name); return 1; }
            ratio[i] = ta[i] / tb[i];
        }
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f |\n", w->name, least(ta, rounds), median(ta, rounds),
               least(tb, rounds), median(tb, rounds), least(ta, rounds) / least(tb, rounds), median(ratio, rounds));
        fflush(stdout);
        pair_a_free(A);
        pair_b_free(B);
    }
    if (!any) { fprintf(stderr, "pair: no row matches only=%s\n", only); return 2; }
    printf("(ns per particle-substep; A/B > 1: B is faster)\n");
    return 0;
}
#endif
