/* fuzz_world.c - random call sequences against the fluid-rigid world API (cq_world_*), with
   random valid and invalid arguments and an allocator that fails on demand.  Run under
   ASan/UBSan (tests/run.sh).  Checks, besides "no crash, no leak":
     - a refused call (other than a step) leaves the fluid count, body count, step count, the
       fluid's positions and the bodies' states as they were, bit for bit;
     - a failed step leaves the world at its last completed step (same checks when none
       completed);
     - every successful step advances the step count by the steps asked;
     - a refusal comes with a message;
     - on the mock CUDA driver (CQ_FUZZ_WORLD_CUDA=1 CQ_CUDA_LIBRARY=...): no device access out of
       bounds or to an unknown pointer (the mock's count of them does not grow in a run).
   Usage: fuzz_world [runs] [calls] [seed]; prints "N passed, N failed" (one test per run). */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

static unsigned long long rng_state;
static unsigned rnd(void) { rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull; return (unsigned)(rng_state >> 33); }
static double unif(double a, double b) { return a + (b - a) * (rnd() / 2147483648.0); }
static int pick(int n) { return (int)(rnd() % (unsigned)n); }

/* allocator: counts live blocks, fails when told */
static long live;
static int fail_rate;   /* 1 in fail_rate allocations fails; 0 = never */
static void *fz_alloc(size_t n, void *u) { (void)u; if (fail_rate && pick(fail_rate) == 0) return NULL; ++live; return malloc(n); }
static void fz_free(void *p, void *u) { (void)u; if (p) { --live; free(p); } }

typedef struct snap { int nf, nb, nj, steps; double *x; cq_body_state *s; } snap;
static void take(const cq_world *w, snap *sn, int readx)   /* readx 0: not the fluid (on CUDA, reading it back is a
                                                               call of its own: sequences without it are fuzzed too) */
{
    const int dim = 3;
    sn->nf = cq_world_fluid_count(w); sn->nb = cq_world_body_count(w); sn->steps = cq_world_step_count(w); sn->nj = cq_world_joint_count(w);
    sn->x = (double *)calloc((size_t)(sn->nf * dim + 1), sizeof(double));
    sn->s = (cq_body_state *)calloc((size_t)(sn->nb + 1), sizeof(cq_body_state));
    if (readx) cq_world_get_fluid(w, CQ_FIELD_X, sn->x);
    for (int i = 0; i < sn->nb; ++i) cq_world_get_body(w, i, &sn->s[i]);
}
static int same(const snap *a, const snap *b, int dim)
{
    return a->nf == b->nf && a->nb == b->nb && a->nj == b->nj && a->steps == b->steps &&
           memcmp(a->x, b->x, sizeof(double) * (size_t)(a->nf * dim)) == 0 &&
           memcmp(a->s, b->s, sizeof(cq_body_state) * (size_t)a->nb) == 0;
}
static void drop(snap *s) { free(s->x); free(s->s); }

static double val(void)   /* mostly sensible, sometimes hostile */
{
    switch (pick(12)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -unif(0, 1);
    case 3: return 1e300;
    case 4: return 0;
    default: return unif(0.05, 0.35);
    }
}

static int one_run(int calls, int verbose)
{
    cq_world_desc d;
    cq_world *w = NULL;
    int bad = 0, dim = pick(2) ? 3 : 2;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.particle_radius = 0.02; d.dt = 0.002; d.gravity[1] = -9.81;
    d.domain_hi[0] = d.domain_hi[1] = 0.4; d.domain_hi[2] = 0.24;
    d.precision = pick(2) ? CQ_PRECISION_F32 : CQ_PRECISION_F64;
    d.allocator.alloc = fz_alloc; d.allocator.free = fz_free;
    d.logger.func = cq_log_silent;
    d.max_iterations = 20;
    if (getenv("CQ_FUZZ_WORLD_CUDA")) d.backend = CQ_BACKEND_CUDA;   /* the world on the (mock) GPU */
    fail_rate = 0;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { printf("    create failed: %s\n", cq_world_last_error(NULL)); return 1; }
    for (int c = 0; c < calls && !bad; ++c) {
        snap before, after;
        cq_result r = CQ_SUCCESS;
        int op = pick(13), is_step = 0, steps_asked = 0, readx = pick(2);
        fail_rate = pick(8) == 0 ? 3 + pick(20) : 0;
        take(w, &before, readx);
        switch (op) {
        case 0: case 1: {   /* fluid */
            double x[3 * 16], v[3 * 16];
            const int n = pick(5) == 0 ? -pick(3) : pick(16);
            for (int i = 0; i < 3 * 16; ++i) { x[i] = pick(20) ? unif(0.01, 0.23) : val(); v[i] = pick(20) ? unif(-1, 1) : val(); }
            r = cq_world_add_fluid(w, n, pick(30) ? x : NULL, pick(2) ? v : NULL);
            break;
        }
        case 2: case 3: {   /* body */
            cq_body_desc b;
            double pts[3 * 8];
            int id = -5;
            memset(&b, 0, sizeof b);
            b.shape = (cq_shape)(1 + pick(pick(10) ? 3 : 5));
            for (int a = 0; a < 3; ++a) { b.half_extents[a] = pick(10) ? unif(0.02, 0.06) : val(); b.x[a] = pick(15) ? unif(0.1, 0.2) : val();
                                          b.v[a] = pick(15) ? unif(-1, 1) : val(); b.w[a] = dim == 3 || a == 2 ? (pick(15) ? unif(-3, 3) : val()) : 0; }
            b.radius = pick(10) ? unif(0.02, 0.05) : val();
            b.density = pick(10) ? unif(200, 2000) : val();
            b.friction = pick(10) ? unif(0, 1) : val();
            b.is_static = pick(5) == 0;
            if (pick(3) == 0) { b.q[0] = 1; if (dim == 3 || pick(8) == 0) b.q[pick(3) + 1] = unif(-1, 1); }
            for (int i = 0; i < 3 * 8; ++i) pts[i] = pick(30) ? unif(-0.03, 0.03) : val();
            b.point_count = pick(10) ? 1 + pick(8) : -pick(2);
            b.points = pick(20) ? pts : NULL;
            r = cq_world_add_body(w, pick(40) ? &b : NULL, pick(10) ? &id : NULL);
            break;
        }
        case 4: case 5: case 6:
            is_step = 1;
            steps_asked = pick(10) ? pick(4) : -1;
            r = cq_world_step(w, steps_asked);
            break;
        case 7:
            r = pick(4) ? cq_world_reset(w) : cq_world_reset(NULL);
            break;
        case 8:
            r = cq_world_track(w, pick(4) - 1);
            break;
        case 9: {
            double J[78], f[3], t[3];
            for (int a = 0; a < 3; ++a) { f[a] = pick(8) ? unif(-1, 1) : val(); t[a] = pick(8) ? unif(-0.1, 0.1) : val(); }
            if (dim == 2) { f[2] = pick(10) ? 0 : 1; t[0] = t[1] = 0; }
            r = pick(2) ? cq_world_body_jacobian(w, pick(4) - 1, pick(10) ? J : NULL)
                        : cq_world_set_control(w, pick(4) - 1, pick(8) ? f : NULL, pick(8) ? t : NULL);
            break;
        }
        case 10: {
            const int nb = cq_world_body_count(w), steps = cq_world_step_count(w);
            double *seed = (double *)calloc((size_t)(13 * nb + 1), sizeof(double));
            double *g = (double *)calloc((size_t)(6 * nb * steps + 1), sizeof(double));
            for (int i = 0; i < 13 * nb; ++i) seed[i] = pick(20) ? unif(-1, 1) : val();
            r = cq_world_control_grad(w, seed, g);
            free(seed); free(g);
            break;
        }
        case 11: {   /* joints: between random (maybe missing, static or equal) bodies, odd anchors */
            cq_joint_desc j;
            double gap;
            int id_sink;
            memset(&j, 0, sizeof j);
            j.body_a = pick(4) - 1; j.body_b = pick(4) - 1;
            for (int a = 0; a < 3; ++a) j.anchor[a] = pick(10) ? unif(0.05, 0.25) : val();
            r = pick(3) ? cq_world_add_joint(w, pick(30) ? &j : NULL, pick(10) ? &id_sink : NULL)
                        : cq_world_joint_gap(w, pick(3) - 1, pick(10) ? &gap : NULL);
            break;
        }
        default: {
            cq_world_stats st;
            double m, I[9];
            cq_body_state s;
            r = pick(3) ? cq_world_stats_get(w, pick(10) ? &st : NULL)
                        : pick(2) ? cq_world_body_mass(w, pick(4) - 1, &m, I) : cq_world_get_body(w, pick(4) - 1, pick(10) ? &s : NULL);
            break;
        }
        }
        fail_rate = 0;
        take(w, &after, readx);
        if (r != CQ_SUCCESS && is_step && steps_asked > 1 && after.steps > before.steps) {
            /* the steps before the failing one completed: the world stays at the last of them */
            if (after.steps >= before.steps + steps_asked) { printf("    call %d: a failed step(%d) completed them all\n", c, steps_asked); bad = 1; }
        } else if (r != CQ_SUCCESS && op != 7) {
            if (!same(&before, &after, dim)) { printf("    call %d (op %d) failed with %s and changed the world: %s\n", c, op, cq_result_string(r), cq_world_last_error(w)); bad = 1; }
            if (!cq_world_last_error(w)[0] && !cq_world_last_error(NULL)[0]) { printf("    call %d: a refusal without a message\n", c); bad = 1; }
        } else if (is_step && r == CQ_SUCCESS && after.steps != before.steps + steps_asked) {
            printf("    call %d: step(%d) went from %d to %d\n", c, steps_asked, before.steps, after.steps);
            bad = 1;
        }
        if (verbose) printf("    call %d op %d -> %s\n", c, op, cq_result_string(r));
        drop(&before); drop(&after);
    }
    cq_world_destroy(w);
    if (live != 0) { printf("    %ld allocations leaked\n", live); bad = 1; live = 0; }
    return bad;
}

/* the mock driver's count of bad device accesses (0 where the library is not the mock) */
static int mock_violations(void)
{
    const char *path = getenv("CQ_CUDA_LIBRARY");
    void *h = path && getenv("CQ_FUZZ_WORLD_CUDA") ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL, *f = h ? dlsym(h, "cq_mock_violations") : NULL;
    int (*fn)(void) = NULL;
    if (f) memcpy(&fn, &f, sizeof fn);
    return fn ? fn() : 0;
}

int main(int argc, char **argv)
{
    const int runs = argc > 1 ? atoi(argv[1]) : 50, calls = argc > 2 ? atoi(argv[2]) : 200;
    const unsigned long long seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    int passed = 0, failed = 0;
    for (int k = 0; k < runs; ++k) {
        rng_state = seed * 1000003ull + (unsigned long long)k;
        const int v0 = mock_violations();
        int bad = one_run(calls, 0);
        if (mock_violations() != v0) { printf("    %d bad device accesses (the mock driver)\n", mock_violations() - v0); bad = 1; }
        if (bad) { ++failed; printf("FAIL run %d (seed %llu)\n", k, seed); } else ++passed;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
