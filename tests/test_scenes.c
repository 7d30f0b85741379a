/* Batched scenes (cq_sim_desc.scenes, cq_particles_desc.scene; DESIGN.md section 8): each scene of
   a batched sim gives bitwise what a sim holding that scene alone gives, forward and backward
   (every gradient field and the per-group actuation gradients), on the CPU, on any number of the
   host's threads, with the scenes' particles interleaved; bad scene numbers are refused and leave
   the sim as it was; a failing step names the particle and its scene and leaves every scene at
   the step's start.  Where a CUDA sim can be created (the mock driver in make test, or a GPU): the CUDA
   backend against the CPU, and the same results twice (determinism). */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>

#define K 3        /* scenes */
#define SIDE 6     /* particles per axis of a scene's block */
#define MAXP (SIDE * SIDE * SIDE)
#define STEPS 6

static cq_log_level quiet_level;
static void quiet(cq_log_level l, const char *m, void *u) { (void)l; (void)m; (void)u; }

/* scene k: a block of SIDE^dim particles at its own place, velocity and stiffness; group k */
typedef struct scene {
    int n, dim;
    double x[MAXP * 3], v[MAXP * 3], E[MAXP];
    int act[MAXP];
} scene;

static void make_scene(scene *sc, int dim, int k)
{
    int n = 1;
    for (int a = 0; a < dim; ++a) n *= SIDE;
    sc->n = n; sc->dim = dim;
    for (int p = 0; p < n; ++p) {
        int q = p;
        for (int a = 0; a < dim; ++a) {
            sc->x[p * dim + a] = 0.35 + 0.03 * k + 0.5 / 24 * (q % SIDE) + 0.001 * a;
            sc->v[p * dim + a] = (a == 0 ? 0.3 * (k - 1) : 0) + 0.05 * ((p * 7 + a * 3 + k) % 5 - 2);
            q /= SIDE;
        }
        sc->E[p] = 2000 + 500 * k + 10 * (p % 7);
        sc->act[p] = p % 3 == 0 ? -1 : k;
    }
}

static cq_sim_desc base_desc(int dim, cq_precision prec, cq_material mat, cq_backend be, int scenes)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = dim == 2 ? 24 : 16;
    d.dx = 1.0 / d.res[0]; d.dt = 2e-4; d.substeps = 2; d.gravity[1] = -9.8;
    d.precision = prec; d.material = mat; d.backend = be; d.checkpoint_every = 2; d.scenes = scenes;
    d.logger.func = quiet; (void)quiet_level;
    return d;
}

/* actuation of every group (the same table for the batched and the alone sims) */
static void actuation(int dim, int step, double *st)
{
    for (int g = 0; g < K; ++g)
        for (int i = 0; i < dim * dim; ++i) st[g * dim * dim + i] = (i % (dim + 1) == 0 ? 40.0 : 5.0) * sin(0.7 * step + g + i);
}

static void hook_acts(cq_sim *s, int step, void *user)
{
    double *out = (double *)user;
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    if (cq_sim_get_desc(s, &d) != CQ_SUCCESS) return;
    if (cq_sim_actuation_grad(s, out + (long)step * K * d.dim * d.dim) != CQ_SUCCESS) out[0] = NAN;
}

/* runs a sim (batched: all K scenes, order `order` of their particles; alone: scene `only`),
   returns its state after STEPS steps and its gradients (per particle, in the sim's order) */
typedef struct run_out {
    int n;
    double st[4][K * MAXP * 9];           /* x, v, C, F */
    double gr[8][K * MAXP * 9];           /* the 8 fields' gradients */
    double act[STEPS * K * 9];            /* dL/du per step and group */
    int ok;
} run_out;

static void *pool_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    /* odd ranges, run at once in reverse: the results must not care */
    int r = min_range + 3, worker = 0;
    (void)user;
    for (int e = items; e > 0; e -= r, worker = (worker + 1) % 3) task(e - r > 0 ? e - r : 0, e, worker, ctx);
    return NULL;
}
static void pool_finish(void *h, void *u) { (void)h; (void)u; }

static void run(const scene *scs, int dim, cq_precision prec, cq_material mat, cq_backend be, int only, const int *order,
                int threads, run_out *o)
{
    cq_sim_desc d = base_desc(dim, prec, mat, be, only < 0 ? K : 0);
    cq_sim *s = NULL;
    static double x[K * MAXP * 3], v[K * MAXP * 3], E[K * MAXP], st[K * 9];
    static int act[K * MAXP], sc[K * MAXP];
    int n = 0;
    memset(o, 0, sizeof *o);
    if (threads) { d.threads.workers = 3; d.threads.enqueue = pool_enqueue; d.threads.finish = pool_finish; }
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) return;
    for (int i = 0; i < K * scs[0].n; ++i) {
        int k = order ? order[i] / scs[0].n : i / scs[0].n, p = order ? order[i] % scs[0].n : i % scs[0].n;
        if (only >= 0 && k != only) continue;
        memcpy(x + n * dim, scs[k].x + p * dim, sizeof(double) * (size_t)dim);
        memcpy(v + n * dim, scs[k].v + p * dim, sizeof(double) * (size_t)dim);
        E[n] = scs[k].E[p]; act[n] = scs[k].act[p]; sc[n] = k;
        ++n;
    }
    {   /* added in two calls */
        cq_particles_desc p;
        int h = n / 2;
        memset(&p, 0, sizeof p);
        p.count = h; p.x = x; p.v = v; p.youngs = E; p.actuator = act; p.scene = only < 0 ? sc : NULL;
        if (cq_sim_add_particles(s, &p) != CQ_SUCCESS) { cq_sim_destroy(s); return; }
        p.count = n - h; p.x = x + h * dim; p.v = v + h * dim; p.youngs = E + h; p.actuator = act + h;
        p.scene = only < 0 ? sc + h : NULL;
        if (cq_sim_add_particles(s, &p) != CQ_SUCCESS) { cq_sim_destroy(s); return; }
    }
    for (int t = 0; t < STEPS; ++t) {
        actuation(dim, t, st);
        if (cq_sim_set_actuation(s, K, st) != CQ_SUCCESS || cq_sim_step(s, 1) != CQ_SUCCESS) { cq_sim_destroy(s); return; }
    }
    for (int f = 0; f < 4; ++f) cq_sim_get(s, (cq_field)f, o->st[f]);
    {   /* seeds follow the particles: seed of (scene k, particle p) is the same in both sims */
        static double sd[K * MAXP * 3];
        int m = 0;
        for (int i = 0; i < K * scs[0].n; ++i) {
            int k = order ? order[i] / scs[0].n : i / scs[0].n, p = order ? order[i] % scs[0].n : i % scs[0].n;
            if (only >= 0 && k != only) continue;
            for (int a = 0; a < dim; ++a) sd[m * dim + a] = 0.01 * (((k * MAXP + p) * 3 + a) % 13) - 0.05;
            ++m;
        }
        if (cq_sim_backward(s, sd, NULL, NULL, NULL, hook_acts, o->act) != CQ_SUCCESS) { cq_sim_destroy(s); return; }
    }
    for (int f = 0; f < 8; ++f) cq_sim_grad(s, (cq_field)f, o->gr[f]);
    o->n = n; o->ok = 1;
    cq_sim_destroy(s);
}

static int fsize(int dim, int f) { return f < 2 ? dim : (f < 4 ? dim * dim : 1); }

/* particle j of the batched run is (scene k, particle p); find it in the alone run of k */
static int compare(const run_out *b, const run_out *al, const int *order, int dim, int only, int np, const char *what)
{
    int bad = 0, m = 0;
    for (int i = 0; i < K * np && !bad; ++i) {
        int k = order ? order[i] / np : i / np;
        if (k != only) continue;
        for (int f = 0; f < 8 && !bad; ++f) {
            int w = fsize(dim, f);
            if (f < 4 && memcmp(b->st[f] + (long)i * w, al->st[f] + (long)m * w, sizeof(double) * (size_t)w)) {
                printf("    %s: scene %d particle %d: state field %d differs (%.17g vs %.17g)\n", what, k, m, f,
                       b->st[f][(long)i * w], al->st[f][(long)m * w]);
                bad = 1;
            }
            if (memcmp(b->gr[f] + (long)i * w, al->gr[f] + (long)m * w, sizeof(double) * (size_t)w)) {
                printf("    %s: scene %d particle %d: gradient field %d differs (%.17g vs %.17g)\n", what, k, m, f,
                       b->gr[f][(long)i * w], al->gr[f][(long)m * w]);
                bad = 1;
            }
        }
        ++m;
    }
    for (int t = 0; t < STEPS && !bad; ++t)   /* the scene's own group */
        if (memcmp(b->act + ((long)t * K + only) * dim * dim, al->act + ((long)t * K + only) * dim * dim, sizeof(double) * (size_t)(dim * dim))) {
            printf("    %s: scene %d: actuation gradient of step %d differs\n", what, only, t);
            bad = 1;
        }
    return !bad;
}

TEST(each_scene_is_bitwise_the_scene_alone_forward_and_backward)
{
    static scene scs[K];
    static run_out b, bt, al;
    static int order[K * MAXP];
    for (int dim = 2; dim <= 3; ++dim)
        for (int pr = 1; pr <= 2; ++pr)
            for (int mt = 1; mt <= 2; ++mt) {
                int np;
                char what[64];
                for (int k = 0; k < K; ++k) make_scene(&scs[k], dim, k);
                np = scs[0].n;
                for (int i = 0; i < K * np; ++i) order[i] = (i % K) * np + i / K;   /* interleaved: 0,1,2,0,1,2,... */
                snprintf(what, sizeof what, "%dD %s %s", dim, pr == 1 ? "f32" : "f64", mt == 1 ? "corotated" : "neohookean");
                run(scs, dim, (cq_precision)pr, (cq_material)mt, CQ_BACKEND_CPU, -1, order, 0, &b);
                CHECK(b.ok, "%s: the batched run failed", what);
                if (!b.ok) continue;
                run(scs, dim, (cq_precision)pr, (cq_material)mt, CQ_BACKEND_CPU, -1, order, 1, &bt);
                CHECK(bt.ok && !memcmp(&b, &bt, sizeof b), "%s: the host's threads change the batched results", what);
                for (int k = 0; k < K; ++k) {
                    run(scs, dim, (cq_precision)pr, (cq_material)mt, CQ_BACKEND_CPU, k, NULL, 0, &al);
                    CHECK(al.ok && compare(&b, &al, order, dim, k, np, what), "%s: scene %d differs from the scene alone", what, k);
                }
                {   /* the scenes moved apart from their start (the comparison is not of idle states) */
                    double dx = fabs(b.st[0][0] - scs[order[0] / np].x[(order[0] % np) * dim]);
                    CHECK(dx > 1e-6, "%s: particle 0 did not move (%g)", what, dx);
                }
            }
}

TEST(bad_scenes_are_refused_and_leave_the_sim_unchanged)
{
    cq_sim_desc d = base_desc(2, CQ_PRECISION_F64, CQ_MATERIAL_FIXED_COROTATED, CQ_BACKEND_CPU, -1);
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[4] = {0.4, 0.4, 0.5, 0.5};
    int sc[2] = {0, 3};
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && !s, "scenes = -1 accepted");
    CHECK(strstr(cq_sim_last_error(NULL), "scenes = -1") != NULL, "message: %s", cq_sim_last_error(NULL));
    d = base_desc(3, CQ_PRECISION_F32, CQ_MATERIAL_FIXED_COROTATED, CQ_BACKEND_CPU, 1000000);
    d.res[0] = d.res[1] = d.res[2] = 256;
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && !s, "a million 256^3 grids accepted");
    CHECK(strstr(cq_sim_last_error(NULL), "too large") != NULL, "message: %s", cq_sim_last_error(NULL));
    d = base_desc(2, CQ_PRECISION_F64, CQ_MATERIAL_FIXED_COROTATED, CQ_BACKEND_CPU, 0);
    CHECK_OK(cq_sim_create(&d, &s));
    if (!s) return;
    {
        cq_sim_desc got;
        CHECK(cq_sim_get_desc(s, &got) == CQ_SUCCESS && got.scenes == 1, "scenes 0 resolves to %d", got.scenes);
    }
    memset(&p, 0, sizeof p);
    p.count = 2; p.x = x; p.scene = sc;
    sc[1] = 1;
    CHECK(cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_ARGUMENT, "scene 1 of a 1-scene sim accepted");
    CHECK(strstr(cq_sim_last_error(s), "scene of particle 1 = 1") != NULL, "message: %s", cq_sim_last_error(s));
    CHECK(cq_sim_particle_count(s) == 0, "particles added by a refused call");
    sc[1] = 0;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 2, "count %d", cq_sim_particle_count(s));
    cq_sim_destroy(s);
    d.scenes = 4;
    CHECK_OK(cq_sim_create(&d, &s));
    if (!s) return;
    sc[0] = 3; sc[1] = -1;
    CHECK(cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_ARGUMENT && cq_sim_particle_count(s) == 0, "scene -1 accepted");
    CHECK(strstr(cq_sim_last_error(s), "scene of particle 1 = -1") != NULL, "message: %s", cq_sim_last_error(s));
    sc[1] = 2;
    CHECK_OK(cq_sim_add_particles(s, &p));
    {   /* a cable stays in one scene (scenes are independent): particles 0, 1 are in scenes 3, 2 */
        const int across[2] = {0, 1}, one[3] = {0, 2, 3};
        CHECK(cq_sim_add_cable(s, 2, across, 100, 0.1) == CQ_ERROR_INVALID_ARGUMENT && cq_sim_cable_count(s) == 0,
              "a cable across scenes 3 and 2 accepted");
        CHECK(strstr(cq_sim_last_error(s), "particles[1] = 1 is in scene 2, particles[0] = 0 in scene 3") != NULL,
              "message: %s", cq_sim_last_error(s));
        sc[0] = sc[1] = 3;
        CHECK_OK(cq_sim_add_particles(s, &p));   /* particles 2, 3 in scene 3 */
        CHECK_OK(cq_sim_add_cable(s, 3, one, 100, 0.1));
        CHECK(cq_sim_cable_count(s) == 1, "cables: %d", cq_sim_cable_count(s));
    }
    CHECK_OK(cq_sim_step(s, 2));
    cq_sim_destroy(s);
}

TEST(a_failing_scene_fails_the_step_and_every_scene_stays)
{
    cq_sim_desc d = base_desc(2, CQ_PRECISION_F64, CQ_MATERIAL_FIXED_COROTATED, CQ_BACKEND_CPU, 3);
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[6] = {0.4, 0.4, 0.4, 0.4, 0.4, 0.4}, v[6] = {0, 0, 0, 0, 1e6, 0}, before[6], after[6];
    int sc[3] = {0, 1, 2};
    CHECK_OK(cq_sim_create(&d, &s));
    if (!s) return;
    memset(&p, 0, sizeof p);
    p.count = 3; p.x = x; p.v = v; p.scene = sc;
    CHECK_OK(cq_sim_add_particles(s, &p));
    cq_sim_get(s, CQ_FIELD_X, before);
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_OUT_OF_DOMAIN, "the thrown particle did not fail the step");
    CHECK(strstr(cq_sim_last_error(s), "particle 2 of scene 2") != NULL, "message: %s", cq_sim_last_error(s));
    cq_sim_get(s, CQ_FIELD_X, after);
    CHECK(!memcmp(before, after, sizeof before) && cq_sim_step_count(s) == 0, "the scenes moved on a failed step");
    cq_sim_destroy(s);
}

TEST(cuda_batched_matches_cpu_and_repeats)
{
    static scene scs[K];
    static run_out c, g1, g2;
    static int order[K * MAXP];
    cq_sim_desc d = base_desc(2, CQ_PRECISION_F32, CQ_MATERIAL_FIXED_COROTATED, CQ_BACKEND_CUDA, K);
    cq_sim *s = NULL;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) {
        printf("    SKIP: no CUDA device (%s)\n", cq_sim_last_error(NULL));
        return;
    }
    cq_sim_destroy(s);
    for (int dim = 2; dim <= 3; ++dim) {
        int np;
        for (int k = 0; k < K; ++k) make_scene(&scs[k], dim, k);
        np = scs[0].n;
        for (int i = 0; i < K * np; ++i) order[i] = (i % K) * np + i / K;
        run(scs, dim, CQ_PRECISION_F64, CQ_MATERIAL_NEOHOOKEAN, CQ_BACKEND_CPU, -1, order, 0, &c);
        run(scs, dim, CQ_PRECISION_F64, CQ_MATERIAL_NEOHOOKEAN, CQ_BACKEND_CUDA, -1, order, 0, &g1);
        run(scs, dim, CQ_PRECISION_F64, CQ_MATERIAL_NEOHOOKEAN, CQ_BACKEND_CUDA, -1, order, 0, &g2);
        CHECK(c.ok && g1.ok && g2.ok, "%dD: a run failed", dim);
        CHECK(!memcmp(&g1, &g2, sizeof g1), "%dD: two CUDA runs differ (not deterministic)", dim);
        if (getenv("CQ_MOCK_BITWISE")) {   /* the mock runs the same C: bitwise; a GPU fuses multiply-adds */
            CHECK(!memcmp(&c, &g1, sizeof c), "%dD: CUDA (mock) and CPU differ", dim);
        } else {
            double worst = 0;
            for (int f = 0; f < 4; ++f)
                for (int i = 0; i < c.n * fsize(dim, f); ++i)
                    worst = fmax(worst, fabs(c.st[f][i] - g1.st[f][i]) / (1 + fabs(c.st[f][i])));
            CHECK(worst < 1e-9, "%dD: CUDA vs CPU state differs by %g", dim, worst);
        }
    }
}

RUN_TESTS(CASE(each_scene_is_bitwise_the_scene_alone_forward_and_backward), CASE(bad_scenes_are_refused_and_leave_the_sim_unchanged),
          CASE(a_failing_scene_fails_the_step_and_every_scene_stays), CASE(cuda_batched_matches_cpu_and_repeats))
