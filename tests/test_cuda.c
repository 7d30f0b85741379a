/* test_cuda.c - the CUDA backend against the CPU backend.

   ./test_cuda [filter]        parity: every variant (2D/3D x corotated/NeoHookean x f32/f64)
                               steps the same scene (two bodies, actuation, friction walls) on
                               the CPU and on CUDA; states, all gradients and the per-step
                               actuation gradients must agree (f64 to 1e-9, f32 to 1e-4,
                               relative to the field's norm: GPU sums are in another order).
                               Also cables, a failing step, checkpoint segments, set/get/reset.
   ./test_cuda fault:MODE      one fault of the mock driver (tests/gpu/mock_libcuda.c, via
                               CQ_MOCK_FAIL=MODE): what the backend must report.

   Needs a CUDA driver: a real one (tests/gpu/run.sh on a GPU machine) or the mock
   (CQ_CUDA_LIBRARY=build/mock/libcuda.so.1, which runs the kernels on the CPU and makes any
   host access to device memory fault).  Without either, it prints SKIP and passes nothing. */
#define _POSIX_C_SOURCE 200112L
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>
#include <dlfcn.h>

#define MAXN 2200
#define STEPS 12
#define GROUPS 2

typedef struct { int dim, prec, mat; } variant;
static int g_n;
static double g_x0[MAXN * 3], g_v0[MAXN * 3], g_w[MAXN * 9];
static int g_act[MAXN];
static char g_log[1024];

static void logger(cq_log_level l, const char *m, void *u) { (void)u; if (l == CQ_LOG_INFO) snprintf(g_log, sizeof g_log, "%s", m); }
static double urand(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (*s >> 8) / 16777216.0; }

/* two boxes, the upper one falling onto the lower one resting near the floor */
static void build_scene(int dim)
{
    const double h = 1.0 / 32 / 2;
    unsigned seed = 7;
    int side = dim == 2 ? 12 : 6;
    g_n = 0;
    for (int b = 0; b < 2; ++b)
        for (int i = 0; i < side; ++i)
            for (int j = 0; j < side; ++j)
                for (int k = 0; k < (dim == 3 ? side : 1); ++k) {
                    double *x = g_x0 + g_n * dim, *v = g_v0 + g_n * dim;
                    x[0] = (dim == 3 ? 0.35 : 0.3) + 0.1 * b + (i + 0.5) * h;   /* 3D: across a CPU slab boundary */
                    x[1] = 0.1 + 0.25 * b + (j + 0.5) * h;
                    if (dim == 3) x[2] = 0.4 + (k + 0.5) * h;
                    for (int a = 0; a < dim; ++a) v[a] = (b ? -0.6 : 0.1) * (a == 1) + 0.05 * (urand(&seed) - 0.5);
                    g_act[g_n] = (i < side / 2) ? b : -1;
                    ++g_n;
                }
    for (int i = 0; i < g_n * 9; ++i) g_w[i] = urand(&seed) - 0.5;
}

/* particles in a shuffled order: the CPU then sums each node in another order than the GPU
   (slab by slab vs particle by particle), so parity is about rounding, not luck */
static void shuffle_scene(int dim)
{
    unsigned seed = 99;
    for (int i = g_n - 1; i > 0; --i) {
        int j = (int)(urand(&seed) * (i + 1)), t;
        double tmp;
        if (j > i) j = i;
        for (int a = 0; a < dim; ++a) {
            tmp = g_x0[i * dim + a]; g_x0[i * dim + a] = g_x0[j * dim + a]; g_x0[j * dim + a] = tmp;
            tmp = g_v0[i * dim + a]; g_v0[i * dim + a] = g_v0[j * dim + a]; g_v0[j * dim + a] = tmp;
        }
        t = g_act[i]; g_act[i] = g_act[j]; g_act[j] = t;
    }
}

static cq_sim *make(const variant *v, cq_backend be, int ckpt)
{
    cq_sim_desc d;
    cq_particles_desc p;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
    d.dim = v->dim; d.res[0] = d.res[1] = d.res[2] = 32; d.dx = 1.0 / 32; d.dt = 2e-4; d.substeps = 2;
    d.gravity[1] = -9.8; d.material = (cq_material)v->mat; d.precision = (cq_precision)v->prec; d.backend = be;
    d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 0.4; d.checkpoint_every = ckpt; d.logger.func = logger;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("    create (backend %d): %s\n", (int)be, cq_sim_last_error(NULL)); return NULL; }
    p.count = g_n; p.x = g_x0; p.v = g_v0; p.actuator = g_act; p.default_youngs = 3e3; p.default_poisson = 0.3;
    if (cq_sim_add_particles(s, &p) != CQ_SUCCESS) { printf("    add: %s\n", cq_sim_last_error(s)); cq_sim_destroy(s); return NULL; }
    return s;
}

static void actuation(int step, int dim, double *u)
{
    for (int g = 0; g < GROUPS; ++g)
        for (int a = 0; a < dim * dim; ++a) u[g * dim * dim + a] = (a % (dim + 1) == 0) * 300.0 * sin(0.7 * step + g) + 40.0 * (a == 1);
}

typedef struct { double ag[STEPS][GROUPS * 9]; int dim; } hook_data;
static void hook(cq_sim *s, int step, void *user)
{
    hook_data *hd = (hook_data *)user;
    double x[MAXN * 3];
    CHECK_OK(cq_sim_actuation_grad(s, hd->ag[step]));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x));       /* running loss: sum of w . x_n */
    for (int i = 0; i < g_n * hd->dim; ++i) x[i] = 0.01 * g_w[i];
    CHECK_OK(cq_sim_add_state_grad(s, CQ_FIELD_X, x));
}

/* runs the scene forward and backward; out: 4 state fields, 8 gradient fields, actuation grads */
static int run(const variant *v, cq_backend be, int ckpt, double *st[4], double *gr[8], hook_data *hd)
{
    cq_sim *s = make(v, be, ckpt);
    double u[GROUPS * 9];
    int ok = 1;
    if (!s) return 0;
    if (be == CQ_BACKEND_CUDA) CHECK(cq_sim_backend(s) == CQ_BACKEND_CUDA, "backend is %d", (int)cq_sim_backend(s));
    for (int n = 0; n < STEPS && ok; ++n) {
        actuation(n, v->dim, u);
        CHECK_OK(cq_sim_set_actuation(s, GROUPS, u));
        if (cq_sim_step(s, 1) != CQ_SUCCESS) { printf("    step %d: %s\n", n, cq_sim_last_error(s)); ok = 0; }
    }
    for (int f = 0; f < 4 && ok; ++f) CHECK_OK(cq_sim_get(s, (cq_field)f, st[f]));
    hd->dim = v->dim;
    if (ok && cq_sim_backward(s, g_w, g_w + 1, g_w + 2, g_w + 3, hook, hd) != CQ_SUCCESS) {
        printf("    backward: %s\n", cq_sim_last_error(s)); ok = 0;
    }
    for (int f = 0; f < 8 && ok; ++f) CHECK_OK(cq_sim_grad(s, (cq_field)f, gr[f]));
    cq_sim_destroy(s);
    return ok;
}

/* |a - b| / max(|b|) over count values */
static double rel_err(const double *a, const double *b, long count)
{
    double num = 0, den = 0;
    for (long i = 0; i < count; ++i) { double d = fabs(a[i] - b[i]); if (d > num) num = d; if (fabs(b[i]) > den) den = fabs(b[i]); }
    return den > 0 ? num / den : num;
}

static const char *FIELD[] = {"x", "v", "C", "F", "mass", "volume", "youngs", "poisson"};

static void parity(const variant *v)
{
    static double buf[2][12][MAXN * 9];
    static hook_data hd[2];
    double *st[2][4], *gr[2][8], worst_s = 0, worst_g = 0;
    const double tol = v->prec == 2 ? 1e-9 : 1e-4;
    const char *name[2] = {"corotated", "neohookean"};
    int k;
    build_scene(v->dim);
    shuffle_scene(v->dim);
    for (int b = 0; b < 2; ++b) { for (int f = 0; f < 4; ++f) st[b][f] = buf[b][f]; for (int f = 0; f < 8; ++f) gr[b][f] = buf[b][4 + f]; }
    memset(hd, 0, sizeof hd);
    if (!run(v, CQ_BACKEND_CPU, 3, st[0], gr[0], &hd[0]) || !run(v, CQ_BACKEND_CUDA, 3, st[1], gr[1], &hd[1])) {
        CHECK(0, "%dD %s %s: a run failed", v->dim, name[v->mat - 1], v->prec == 1 ? "f32" : "f64");
        return;
    }
    for (int f = 0; f < 4; ++f) {
        long cnt = (long)g_n * (f < 2 ? v->dim : v->dim * v->dim);
        double e = rel_err(st[1][f], st[0][f], cnt);
        if (e > worst_s) worst_s = e;
        CHECK(e <= tol, "%dD %s f%d: state %s differs: %.3g", v->dim, name[v->mat - 1], v->prec == 1 ? 32 : 64, FIELD[f], e);
    }
    for (int f = 0; f < 8; ++f) {
        long cnt = (long)g_n * (f < 2 ? v->dim : f < 4 ? v->dim * v->dim : 1);
        double e = rel_err(gr[1][f], gr[0][f], cnt);
        if (e > worst_g) worst_g = e;
        CHECK(e <= tol, "%dD %s f%d: dL/d%s differs: %.3g", v->dim, name[v->mat - 1], v->prec == 1 ? 32 : 64, FIELD[f], e);
    }
    k = GROUPS * v->dim * v->dim;
    for (int n = 0; n < STEPS; ++n) {
        double e = rel_err(hd[1].ag[n], hd[0].ag[n], k);
        if (e > worst_g) worst_g = e;
        CHECK(e <= tol, "%dD %s: dL/du of step %d differs: %.3g", v->dim, name[v->mat - 1], n, e);
    }
    printf("    %dD %-10s f%d: worst relative difference CUDA vs CPU: state %.2e, gradients %.2e\n", v->dim,
           name[v->mat - 1], v->prec == 1 ? 32 : 64, worst_s, worst_g);
}

static int cuda_available(void)
{
    static int known = -1;
    if (known < 0) {
        variant v = {2, 2, 1};
        cq_sim *s;
        build_scene(2);
        s = make(&v, CQ_BACKEND_CUDA, 0);
        known = s != NULL;
        cq_sim_destroy(s);
    }
    return known;
}

TEST(parity_all_variants)
{
    for (int dim = 2; dim <= 3; ++dim)
        for (int mat = 1; mat <= 2; ++mat)
            for (int prec = 1; prec <= 2; ++prec) { variant v; v.dim = dim; v.prec = prec; v.mat = mat; parity(&v); }
}

static void cable_hook(cq_sim *s, int step, void *user) { CHECK_OK(cq_sim_cable_actuation_grad(s, (double *)user + 2 * step)); }   /* 2 cables */

typedef int (*counter_fn)(void);
static counter_fn mock_sym(const char *name);

/* two cables crossing at shared particles (each such particle gets forces from segments of both,
   in segment order on either backend): the CPU's states and gradients, bitwise on the mock */
static void cable_free_hook(cq_sim *s, int step, void *user) { (void)s; (void)step; (void)user; }

TEST(cables_match_the_cpu)
{
    variant v = {2, 2, 1};
    double x[2][MAXN * 3], g[2][MAXN * 3], ug[2][STEPS][2];
    const int mock = mock_sym("cq_mock_readbacks") != NULL;
    for (int b = 0; b < 2; ++b) {
        cq_sim *s;
        int route[12], across[12];
        build_scene(2);
        s = make(&v, b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU, 1);
        if (!s) { CHECK(0, "create"); return; }
        for (int i = 0; i < 12; ++i) route[i] = 144 + i * 12;        /* a column of the upper box */
        for (int i = 0; i < 12; ++i) across[i] = 144 + 6 * 12 + i;   /* a row of it, through route[6] */
        CHECK_OK(cq_sim_add_cable(s, 12, route, 2e3, 0.15));
        CHECK_OK(cq_sim_add_cable(s, 12, across, 1.5e3, 0.15));
        for (int n = 0; n < 6; ++n) {
            double u[2] = {0.5 + 0.05 * n, 0.6 - 0.04 * n};
            CHECK_OK(cq_sim_set_cable_actuation(s, 2, u));
            CHECK_OK(cq_sim_step(s, 1));
        }
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x[b]));
        CHECK_OK(cq_sim_backward(s, g_w, NULL, NULL, NULL, cable_hook, ug[b]));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g[b]));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_MASS, g[b] + 2 * g_n));
        cq_sim_destroy(s);
    }
    CHECK(rel_err(x[1], x[0], 2L * g_n) < 1e-9, "x differs: %.3g", rel_err(x[1], x[0], 2L * g_n));
    CHECK(rel_err(g[1], g[0], 3L * g_n) < 1e-9, "gradients differ: %.3g", rel_err(g[1], g[0], 3L * g_n));
    CHECK(rel_err(ug[1][0], ug[0][0], 12) < 1e-9, "dL/du of the cables differs: %.3g", rel_err(ug[1][0], ug[0][0], 12));
    CHECK(fabs(ug[0][0][0]) > 0 && fabs(ug[0][0][1]) > 0, "a cable's actuation gradient is zero: the test would not see a difference");
    if (mock) {
        CHECK(memcmp(x[1], x[0], sizeof(double) * 2 * (size_t)g_n) == 0, "x on the mock is not the CPU's bitwise");
        CHECK(memcmp(g[1], g[0], sizeof(double) * 3 * (size_t)g_n) == 0, "gradients on the mock are not the CPU's bitwise");
        CHECK(memcmp(ug[1], ug[0], sizeof ug[0]) == 0, "dL/du on the mock is not the CPU's bitwise");
    }
}

TEST(a_failing_step_reports_like_the_cpu)
{
    variant v = {2, 2, 1};
    char msg[2][512];
    cq_result r[2];
    int steps[2];
    for (int b = 0; b < 2; ++b) {
        cq_sim *s;
        build_scene(2);
        g_v0[2 * 7] = 1e5;   /* particle 7 flies out of the grid in the first substeps */
        s = make(&v, b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU, 0);
        if (!s) { CHECK(0, "create"); return; }
        r[b] = cq_sim_step(s, 5);
        snprintf(msg[b], sizeof msg[b], "%s", cq_sim_last_error(s));
        steps[b] = cq_sim_step_count(s);
        cq_sim_destroy(s);
    }
    CHECK(r[0] == CQ_ERROR_OUT_OF_DOMAIN && r[1] == r[0], "codes %d / %d", (int)r[0], (int)r[1]);
    CHECK(steps[0] == steps[1], "steps %d / %d", steps[0], steps[1]);
    CHECK(strcmp(msg[0], msg[1]) == 0, "messages differ:\n      cpu:  %s\n      cuda: %s", msg[0], msg[1]);
}

/* The backward's check of the adjoint (the lowest particle and field that became non-finite, and
   the step): dt over the stability limit (dx sqrt(rho / E) = 3.1e-4) and a seed of 1e37, finite in
   float, so that the forward stays in the grid and the adjoint overflows (test_reverse.c, defect
   5).  Without cables the CUDA backend checks it in the step's last kernel (kernels.cu.j2
   >>nonfinite: p2g_adj_stress), with them in a launch of its own after the cables' adjoint; with
   2 substeps only the step's last checks.  On the mock (bitwise the CPU) the message is the CPU's;
   on a GPU (other roundings) the same error. */
TEST(a_nonfinite_adjoint_reports_like_the_cpu)
{
    const int mock = mock_sym("cq_mock_readbacks") != NULL;
    for (int k = 0; k < 4; ++k) {   /* 1 substep, hook; 2 substeps, no hook; 2 substeps, hook; cables, no hook */
        const int S = k == 0 ? 1 : 2, steps = 24 / S, hooked = k == 0 || k == 2;
        char msg[2][512];
        cq_result r[2];
        for (int b = 0; b < 2; ++b) {
            cq_sim_desc d;
            cq_particles_desc p;
            cq_sim *s = NULL;
            double x[2 * 64], seed[2 * 64];
            int route[8];
            memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
            d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 3.8e-4; d.substeps = S; d.gravity[1] = -9.8;
            d.checkpoint_every = 1; d.backend = b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
            for (int i = 0; i < 64; ++i) { x[2 * i] = 0.4 + (i % 8) / 64.0; x[2 * i + 1] = 0.4 + (i / 8) / 64.0; }
            for (int i = 0; i < 2 * 64; ++i) seed[i] = i >= 2 * 40 ? 1e37 : 0;   /* the upper rows: the first failing particle is not 0 */
            for (int i = 0; i < 8; ++i) route[i] = 8 * i;
            p.count = 64; p.x = x;
            if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return; }
            CHECK_OK(cq_sim_add_particles(s, &p));
            if (k == 3) CHECK_OK(cq_sim_add_cable(s, 8, route, 50.0, 0.1));
            CHECK_OK(cq_sim_step(s, steps));
            r[b] = cq_sim_backward(s, seed, NULL, NULL, NULL, hooked ? cable_free_hook : NULL, NULL);
            snprintf(msg[b], sizeof msg[b], "%s", cq_sim_last_error(s));
            cq_sim_destroy(s);
        }
        CHECK(r[0] == CQ_ERROR_NON_FINITE && r[1] == r[0], "case %d: codes %d / %d (%s)", k, (int)r[0], (int)r[1], msg[1]);
        CHECK(strstr(msg[1], "non-finite at step") && strstr(msg[1], "of particle"), "case %d: \"%s\"", k, msg[1]);
        if (mock) CHECK(strcmp(msg[0], msg[1]) == 0, "case %d: messages differ:\n      cpu:  %s\n      cuda: %s", k, msg[0], msg[1]);
    }
}

TEST(set_get_reset_and_logs)
{
    variant v = {3, 1, 2};
    cq_sim *s;
    double x[MAXN * 3], x2[MAXN * 3], e[MAXN];
    build_scene(3);
    g_log[0] = 0;
    s = make(&v, CQ_BACKEND_DEFAULT, 2);
    if (!s) { CHECK(0, "create"); return; }
    CHECK(cq_sim_backend(s) == CQ_BACKEND_CUDA, "DEFAULT picked %d with a usable GPU", (int)cq_sim_backend(s));
    CHECK(strstr(g_log, "backend: CUDA") != NULL, "log: %s", g_log);
    for (int i = 0; i < g_n; ++i) e[i] = 2e3 + i;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_YOUNGS, e));
    CHECK_OK(cq_sim_step(s, 3));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x));
    CHECK_OK(cq_sim_reset(s));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x2));
    CHECK(rel_err(x2, g_x0, 3L * g_n) < 1e-6, "reset did not restore x: %.3g", rel_err(x2, g_x0, 3L * g_n));
    CHECK_OK(cq_sim_step(s, 3));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x2));
    CHECK(memcmp(x, x2, sizeof(double) * 3 * g_n) == 0 || rel_err(x2, x, 3L * g_n) < 1e-5, "rerun after reset differs");
    CHECK_OK(cq_sim_get(s, CQ_FIELD_YOUNGS, x2));
    CHECK(x2[5] == 2e3 + 5, "youngs read back %g", x2[5]);
    cq_sim_destroy(s);
}

/* ---- faults of the mock driver (CQ_MOCK_FAIL); each in its own process */
static counter_fn mock_sym(const char *name)   /* a counter exported by the mock driver, or NULL */
{
    const char *path = getenv("CQ_CUDA_LIBRARY");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL, *f = h ? dlsym(h, name) : NULL;
    counter_fn fn = NULL;
    if (f) memcpy(&fn, &f, sizeof fn);
    return fn;
}

/* A cq_sim_step of several steps of several substeps reads its status once (on the mock: one
   cuMemcpyDtoH per call), taped or not; a particle that leaves the grid at a later substep of a
   later step of a call (the substeps after it then run on a particle outside the grid before the
   status is read) fails with the CPU's code, step, substep, particle and position, leaving the
   sim where the CPU's is, and with a tape, the tape's size and the backward over the steps
   before the failure as the CPU's. */
static cq_sim *late_sim(cq_backend backend, int ckpt)
{
    cq_sim_desc d;
    cq_particles_desc p;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
    d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 2e-4; d.substeps = 3; d.gravity[1] = -9.8;
    d.precision = CQ_PRECISION_F64; d.backend = backend; d.boundary = CQ_BOUNDARY_FRICTION;
    d.friction = 0.4; d.checkpoint_every = ckpt;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return NULL; }
    p.count = g_n; p.x = g_x0; p.v = g_v0; p.default_youngs = 3e3; p.default_poisson = 0.3;
    CHECK_OK(cq_sim_add_particles(s, &p));
    return s;
}

TEST(a_call_reads_its_status_once_and_a_late_failure_reports_like_the_cpu)
{
    char msg[2][512];
    double x[2][(MAXN + 1) * 2], g[2][(MAXN + 1) * 2];
    cq_result r[2];
    int steps[2];
    counter_fn reads = mock_sym("cq_mock_readbacks");
    build_scene(2);
    g_x0[2 * g_n] = 0.37; g_x0[2 * g_n + 1] = 0.8;   /* a lone particle, 0.13 to the right per substep */
    g_v0[2 * g_n] = 0.13 / 2e-4; g_v0[2 * g_n + 1] = 0;
    g_act[g_n] = -1;
    if (reads) {   /* the block alone: 4 steps of 3 substeps, untaped and taped */
        for (int ckpt = 0; ckpt < 4; ckpt += 2) {
            cq_sim *s = late_sim(CQ_BACKEND_CUDA, ckpt);
            long before = (long)reads();
            if (!s) return;
            CHECK_OK(cq_sim_step(s, 4));
            CHECK((long)reads() - before == 1, "4 steps of 3 substeps (checkpoint_every %d) read back %ld times (want 1)",
                  ckpt, (long)reads() - before);
            cq_sim_destroy(s);
        }
    } else {
        printf("    (a real driver: the readbacks are not counted)\n");
    }
    ++g_n;
    for (int ckpt = 0; ckpt < 4; ckpt += 2) {
        size_t tape[2] = {0, 0};
        for (int b = 0; b < 2; ++b) {
            cq_sim *s = late_sim(b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU, ckpt);
            if (!s) { --g_n; return; }
            r[b] = cq_sim_step(s, 5);   /* its second step fails */
            snprintf(msg[b], sizeof msg[b], "%s", cq_sim_last_error(s));
            steps[b] = cq_sim_step_count(s);
            CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x[b]));
            tape[b] = cq_sim_tape_bytes(s);
            if (ckpt) {   /* the backward over step 0, seeded with dL/dx = 1 (the failed step's inputs: x) */
                double seed[(MAXN + 1) * 2];
                for (int i = 0; i < 2 * g_n; ++i) seed[i] = 1;
                CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
                CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g[b]));
            }
            cq_sim_destroy(s);
        }
        CHECK(tape[0] == tape[1], "checkpoint_every %d: tape bytes after the failed call %lu (cpu) / %lu (cuda)", ckpt,
              (unsigned long)tape[0], (unsigned long)tape[1]);
        if (ckpt) CHECK(rel_err(g[1], g[0], 2L * g_n) < 1e-9, "the gradient over the steps before the failure differs: %.3g",
                        rel_err(g[1], g[0], 2L * g_n));
        CHECK(r[0] == CQ_ERROR_OUT_OF_DOMAIN && r[1] == r[0], "codes %d / %d", (int)r[0], (int)r[1]);
        CHECK(strstr(msg[0], "step 1 (substep 1): particle ") != NULL, "the scene no longer fails where meant: %s", msg[0]);
        CHECK(steps[0] == 1 && steps[1] == 1, "checkpoint_every %d: steps %d / %d", ckpt, steps[0], steps[1]);
        CHECK(strcmp(msg[0], msg[1]) == 0, "messages differ:\n      cpu:  %s\n      cuda: %s", msg[0], msg[1]);
        CHECK(rel_err(x[1], x[0], 2L * g_n) < 1e-9, "checkpoint_every %d: the state after the failed step differs: %.3g", ckpt,
              rel_err(x[1], x[0], 2L * g_n));
    }
    --g_n;
}

/* The per-group actuation gradient is summed in chunks of CQ__ACT_CHUNK particles of a group, in
   a fixed order, on both backends (no atomics): groups of 600 and 300 particles (3 and 2 chunks)
   give the CPU's dL/du on CUDA, bitwise on the mock (which has no fused multiply-adds). */
TEST(actuation_gradients_over_several_chunks_are_the_cpus)
{
    static hook_data hd[2];
    double u[GROUPS * 9];
    const int side = 30;
    const double h = 1.0 / 64;
    counter_fn reads = mock_sym("cq_mock_readbacks");
    g_n = 0;
    for (int i = 0; i < side; ++i)
        for (int j = 0; j < side; ++j) {
            g_x0[2 * g_n] = 0.27 + (i + 0.5) * h; g_x0[2 * g_n + 1] = 0.2 + (j + 0.5) * h;
            g_v0[2 * g_n] = 0.1 * (j % 3 - 1); g_v0[2 * g_n + 1] = -0.2;
            g_act[g_n] = i < 20 ? 0 : 1;
            ++g_n;
        }
    memset(hd, 0, sizeof hd);
    for (int b = 0; b < 2; ++b) {
        variant v = {2, 2, 1};
        cq_sim *s = make(&v, b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU, 2);
        if (!s) { CHECK(0, "create"); return; }
        for (int n = 0; n < 6; ++n) {
            actuation(n, 2, u);
            CHECK_OK(cq_sim_set_actuation(s, GROUPS, u));
            CHECK_OK(cq_sim_step(s, 1));
        }
        hd[b].dim = 2;
        CHECK_OK(cq_sim_backward(s, g_w, NULL, NULL, NULL, hook, &hd[b]));
        cq_sim_destroy(s);
    }
    CHECK(hd[0].ag[0][0] != 0 && hd[0].ag[5][4 + 3] != 0, "zero actuation gradients: the test would not see a difference");
    for (int n = 0; n < 6; ++n) {
        const double e = rel_err(hd[1].ag[n], hd[0].ag[n], GROUPS * 4);
        if (reads) CHECK(memcmp(hd[1].ag[n], hd[0].ag[n], sizeof(double) * GROUPS * 4) == 0,
                         "step %d: dL/du on the mock is not the CPU's bitwise (relative difference %.3g)", n, e);
        else CHECK(e < 1e-9, "step %d: dL/du differs: %.3g", n, e);
    }
}

static int fault(const char *mode)
{
    variant v = {2, 2, 1};
    cq_sim *s;
    cq_result r;
    int ok = 1;
    build_scene(2);
    setenv("CQ_MOCK_FAIL", mode, 1);
#define EXPECT(cond, ...) do { if (!(cond)) { ok = 0; printf("    FAIL: "); printf(__VA_ARGS__); printf("\n"); } } while (0)
    if (!strcmp(mode, "init") || !strcmp(mode, "nodevice") || !strcmp(mode, "oldriver") || !strcmp(mode, "ptx")) {
        const char *want = !strcmp(mode, "init") ? "cuInit" : !strcmp(mode, "nodevice") ? "no CUDA device"
                         : !strcmp(mode, "oldriver") ? "needs a driver" : "rejected the embedded PTX";
        cq_sim_desc d;
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.backend = CQ_BACKEND_CUDA; d.logger.func = logger;
        r = cq_sim_create(&d, &s);
        EXPECT(r == CQ_ERROR_BACKEND_UNAVAILABLE, "CUDA with fault %s: %s", mode, cq_result_string(r));
        EXPECT(strstr(cq_sim_last_error(NULL), want) != NULL, "reason '%s' lacks '%s'", cq_sim_last_error(NULL), want);
        printf("    CUDA: %s\n", cq_sim_last_error(NULL));
        d.backend = CQ_BACKEND_DEFAULT;
        g_log[0] = 0;
        r = cq_sim_create(&d, &s);
        EXPECT(r == CQ_SUCCESS && cq_sim_backend(s) == CQ_BACKEND_CPU, "DEFAULT did not fall back to the CPU");
        EXPECT(strstr(g_log, "backend: CPU") && strstr(g_log, want), "DEFAULT's log: %s", g_log);
        printf("    DEFAULT: %s\n", g_log);
        cq_sim_destroy(s);
    } else if (!strcmp(mode, "oom")) {
        cq_sim_desc d;
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.backend = CQ_BACKEND_CUDA;
        r = cq_sim_create(&d, &s);
        EXPECT(r == CQ_ERROR_BACKEND_UNAVAILABLE || r == CQ_ERROR_OUT_OF_MEMORY, "create: %s", cq_result_string(r));
        EXPECT(strstr(cq_sim_last_error(NULL), "memory") != NULL, "reason: %s", cq_sim_last_error(NULL));
        printf("    %s\n", cq_sim_last_error(NULL));
    } else if (!strncmp(mode, "oom_after=", 10) || !strncmp(mode, "launch_after=", 13)) {
        /* the sim is created with the fault armed after N operations: every public call must
           return an error (never crash), and a failed add_particles must leave the sim usable
           for reading */
        setenv("CQ_MOCK_FAIL", "", 1);
        s = make(&v, CQ_BACKEND_CUDA, 1);
        if (!s) { printf("    create failed without a fault\n"); return 1; }
        setenv("CQ_MOCK_FAIL", mode, 1);
        {
            double u[GROUPS * 4] = {0};
            int failures = 0;
            for (int n = 0; n < 30; ++n) {
                r = cq_sim_set_actuation(s, GROUPS, u);
                if (r == CQ_SUCCESS) r = cq_sim_step(s, 1);
                if (r != CQ_SUCCESS) {
                    ++failures;
                    EXPECT(r == CQ_ERROR_OUT_OF_MEMORY || r == CQ_ERROR_DEVICE, "step %d: %s", n, cq_result_string(r));
                    printf("    step %d: %s: %s\n", n, cq_result_string(r), cq_sim_last_error(s));
                    break;
                }
            }
            r = cq_sim_backward(s, g_w, NULL, NULL, NULL, NULL, NULL);
            if (!strncmp(mode, "launch_after=", 13)) {
                EXPECT(failures == 1, "the launch fault never surfaced");
                EXPECT(r == CQ_ERROR_DEVICE, "backward after a device fault: %s", cq_result_string(r));
                r = cq_sim_step(s, 1);
                EXPECT(r == CQ_ERROR_DEVICE, "step after a device fault: %s", cq_result_string(r));
            } else
                printf("    backward: %s %s\n", cq_result_string(r), r ? cq_sim_last_error(s) : "");
        }
        cq_sim_destroy(s);
    } else if (!strcmp(mode, "coop")) {
        /* cooperative launches refused (a device sharing its SMs): the sort takes one block or
           launches, the same results (bitwise the CPU's on the mock), the refusal in the log */
        double x[2][MAXN * 3], gx[2][MAXN * 3];
        for (int b = 0; b < 2; ++b) {
            g_log[0] = 0;
            s = make(&v, b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU, 2);
            if (!s) { printf("    create failed\n"); return 1; }
            for (int n = 0; n < 4 && ok; ++n) {
                r = cq_sim_step(s, 1);
                EXPECT(r == CQ_SUCCESS, "step %d: %s", n, cq_sim_last_error(s));
            }
            EXPECT(cq_sim_get(s, CQ_FIELD_X, x[b]) == CQ_SUCCESS, "get");
            r = cq_sim_backward(s, g_w, NULL, NULL, NULL, NULL, NULL);
            EXPECT(r == CQ_SUCCESS, "backward: %s", cq_sim_last_error(s));
            EXPECT(cq_sim_grad(s, CQ_FIELD_X, gx[b]) == CQ_SUCCESS, "grad");
            if (b) EXPECT(strstr(g_log, "refused a cooperative launch") != NULL, "the log lacks the refusal: %s", g_log);
            if (b) printf("    %s\n", g_log);
            cq_sim_destroy(s);
        }
        EXPECT(memcmp(x[0], x[1], sizeof(double) * 2 * (size_t)g_n) == 0, "x is not the CPU's bitwise");
        EXPECT(memcmp(gx[0], gx[1], sizeof(double) * 2 * (size_t)g_n) == 0, "dL/dx0 is not the CPU's bitwise");
    } else {
        printf("unknown fault mode %s\n", mode);
        return 1;
    }
    setenv("CQ_MOCK_FAIL", "", 1);
    {
        counter_fn live = mock_sym("cq_mock_live_allocations");
        counter_fn viol = mock_sym("cq_mock_violations");
        if (live) EXPECT(live() == 0, "%d device allocations leaked", live());
        if (viol) EXPECT(viol() == 0, "%d out-of-bounds device accesses", viol());
    }
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}

/* grids of more than 65536 nodes (48^3: whole tiles of the scan; 43^3: the last tile partial):
   the sort's scan over tiles (tile sums, then each tile from the earlier tiles' sums: added up
   by its own block, or, built with CQ_CUDA_SCAN_SELF_SUM=0, scanned first by one block); the
   sort's order a slot per particle (cq__sort_slot_); the one-block sort's two ways (kernels.cu.j2 cell_sort; a block of 11^3 particles):
   28^3 (21952 nodes: counts and order just past what shared memory holds) in global memory,
   24^3 (13824) in shared memory, its scan of packed pairs in one pass.  Each must still give the
   CPU's state */
TEST(a_large_grid_sorts_like_the_cpu)
{
    double x[2][MAXN * 3];
    const int mock = mock_sym("cq_mock_readbacks") != NULL, sizes[4] = {48, 43, 28, 24};
    unsigned seed = 11;
    g_n = 0;
    for (int i = 0; i < 11 * 11 * 11; ++i, ++g_n)
        for (int a = 0; a < 3; ++a) {
            g_x0[3 * i + a] = 0.3 + (((a == 0 ? i : a == 1 ? i / 11 : i / 121) % 11) + 0.5) / 64;
            g_v0[3 * i + a] = (a == 1 ? -0.5 : 0.0) + 0.1 * (urand(&seed) - 0.5);
        }
    for (int r = 0; r < 4; ++r) {
    const int res = sizes[r];
    for (int b = 0; b < 2; ++b) {
        cq_sim_desc d;
        cq_particles_desc p;
        cq_sim *s = NULL;
        memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
        d.dim = 3; d.res[0] = d.res[1] = d.res[2] = res; d.dx = 1.0 / res; d.dt = 2e-4; d.substeps = 2; d.gravity[1] = -9.8;
        d.precision = CQ_PRECISION_F64; d.backend = b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
        if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return; }
        p.count = g_n; p.x = g_x0; p.v = g_v0; p.default_youngs = 3e3; p.default_poisson = 0.3;
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK_OK(cq_sim_step(s, 4));
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x[b]));
        cq_sim_destroy(s);
    }
    if (mock) CHECK(memcmp(x[1], x[0], sizeof(double) * 3 * (size_t)g_n) == 0, "%d^3: x on the mock is not the CPU's bitwise", res);
    else CHECK(rel_err(x[1], x[0], 3L * g_n) < 1e-9, "%d^3: x differs: %.3g", res, rel_err(x[1], x[0], 3L * g_n));
    }
}

/* particles in the grid's first cell (the usable region starts at 0.5 dx: a particle below 1.5 dx
   on every axis has base node 0, global cell 0), with others: the sort must order and rank them
   like any cell (the one-block sort once skipped cell 0, leaving those particles' slots stale),
   in 2D and 3D, f64; 6 substeps, then x against the CPU */
TEST(particles_in_the_first_cell_sort_like_the_cpu)
{
    const int mock = mock_sym("cq_mock_readbacks") != NULL;
    for (int dim = 2; dim <= 3; ++dim) {
        double x0[40 * 3], x[2][40 * 3];
        const int n = 40;
        for (int p = 0; p < n; ++p)
            for (int a = 0; a < dim; ++a)   /* 8 in the corner cell, the rest a block further in */
                x0[p * dim + a] = p < 8 ? (0.6 + 0.1 * ((p >> a) & 1)) / 32 : 0.3 + 0.01 * ((p * (a + 3)) % 7);
        for (int b = 0; b < 2; ++b) {
            cq_sim_desc d;
            cq_particles_desc pd;
            cq_sim *s = NULL;
            memset(&d, 0, sizeof d); memset(&pd, 0, sizeof pd);
            d.dim = dim; d.res[0] = d.res[1] = d.res[2] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.substeps = 2;
            d.gravity[1] = 1.0; d.precision = CQ_PRECISION_F64; d.boundary = CQ_BOUNDARY_SLIP;
            d.backend = b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
            if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return; }
            pd.count = n; pd.x = x0; pd.default_youngs = 1e3; pd.default_poisson = 0.3;
            CHECK_OK(cq_sim_add_particles(s, &pd));
            CHECK_OK(cq_sim_step(s, 3));
            CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x[b]));
            cq_sim_destroy(s);
        }
        if (mock) CHECK(memcmp(x[1], x[0], sizeof(double) * (size_t)(n * dim)) == 0, "%dD: x on the mock is not the CPU's bitwise", dim);
        else CHECK(rel_err(x[1], x[0], (long)n * dim) < 1e-9, "%dD: x differs: %.3g", dim, rel_err(x[1], x[0], (long)n * dim));
    }
}

/* one taped run: a sim from d, p's particles, `steps` steps; its x, then a backward seeded with
   `seed` on x and dL/dx0 */
static void taped_run(const cq_sim_desc *d, const cq_particles_desc *p, int steps, const double *seed, double *x, double *g)
{
    cq_sim *s = NULL;
    if (cq_sim_create(d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return; }
    CHECK_OK(cq_sim_add_particles(s, p));
    CHECK_OK(cq_sim_step(s, steps));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x));
    CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
    cq_sim_destroy(s);
}

/* The CPU sort writes cell_end over the particles' box alone (cpu_backend.j2 >>cpu_cell_box: the
   lowest to the highest particle's cell with one bucket, the first to the last nonempty bucket
   with several) and the gather reads 0 below it and n above: two clusters in opposite corners of
   a large grid (several buckets, the box spanning almost all of them, the empty ones between),
   flying apart and towards the walls so that the box changes every step, and a 2D grid with few
   cells a particle (one bucket); f64, taped (the backward's grid cache keeps the box with its
   cell_end), x and dL/dx0 against the mock's sort, which is the GPU's own (bitwise) */
TEST(sparse_clusters_in_a_large_grid_sort_like_the_cpu)
{
    const int mock = mock_sym("cq_mock_readbacks") != NULL;
    static double x0[2 * 3 * 216], v0[2 * 3 * 216], x[2][2 * 3 * 216], g[2][2 * 3 * 216], seed[2 * 3 * 216];
    for (int k = 0; k < 3; ++k) {   /* 3D 64^3; 2D 256^2; 2D 24^2 (one bucket) */
        const int dim = k == 0 ? 3 : 2, res = k == 0 ? 64 : k == 1 ? 256 : 24, side = k == 0 ? 6 : k == 1 ? 14 : 16;
        const int per = dim == 3 ? side * side * side : side * side, n = k == 2 ? per : 2 * per;
        int q = 0;
        for (int c = 0; c < n / per; ++c)
            for (int i = 0; i < per; ++i, ++q)
                for (int a = 0; a < dim; ++a) {
                    const int ia = a == 0 ? i % side : a == 1 ? i / side % side : i / (side * side);
                    const double h = 0.5 / res, corner = c == 0 ? 2.0 / res : 1 - 2.0 / res - side * h;
                    x0[q * dim + a] = (k == 2 ? 0.3 : corner) + (ia + 0.5) * h;
                    v0[q * dim + a] = k == 2 ? 0.2 * (ia - side / 2) : (c == 0 ? -1.0 : 1.0) * (0.5 + 0.1 * a);
                }
        for (int i = 0; i < n * dim; ++i) seed[i] = 1.0 / n + 1e-3 * (i % 7);
        for (int b = 0; b < 2; ++b) {
            cq_sim_desc d;
            cq_particles_desc p;
            memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
            d.dim = dim; d.res[0] = d.res[1] = d.res[2] = res; d.dx = 1.0 / res; d.dt = 2e-5; d.substeps = 2; d.gravity[1] = -9.8;
            d.precision = CQ_PRECISION_F64; d.checkpoint_every = 2; d.boundary = CQ_BOUNDARY_SLIP;
            d.backend = b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
            p.count = n; p.x = x0; p.v = v0; p.default_youngs = 3e3; p.default_poisson = 0.3;
            taped_run(&d, &p, 6, seed, x[b], g[b]);
        }
        if (mock) {
            CHECK(memcmp(x[1], x[0], sizeof(double) * (size_t)(n * dim)) == 0, "case %d: x on the mock is not the CPU's bitwise", k);
            CHECK(memcmp(g[1], g[0], sizeof(double) * (size_t)(n * dim)) == 0, "case %d: dL/dx0 on the mock is not the CPU's bitwise", k);
        } else {
            CHECK(rel_err(x[1], x[0], (long)n * dim) < 1e-9, "case %d: x differs: %.3g", k, rel_err(x[1], x[0], (long)n * dim));
            CHECK(rel_err(g[1], g[0], (long)n * dim) < 1e-7, "case %d: dL/dx0 differs: %.3g", k, rel_err(g[1], g[0], (long)n * dim));
        }
    }
}

/* The CUDA gather and grid adjoint visit the particles' box alone, in tiles of 1 or 3 rows by 32
   nodes from its first node (kernels.cu.j2 >>cuda_box); the nodes outside keep stale values
   (the mock's fresh device memory holds NaNs).  Rods of particles whose box spans 33 and 65 nodes
   along the last axis (a tile's 32, plus one) and 4 and 7 rows (3-row tiles, plus one): a tile
   too few reads a stale node into G2P or the P2G adjoint.  2D and 3D, f64 (the mock: bitwise),
   6 taped substeps, then x and dL/dx0 (seed 1 on x) against the CPU; the rows binary
   (CQ_CUDA_GATHER_ROWS=0) runs the 3-row tiles. */
TEST(the_box_tiles_cover_every_extent)
{
    const int mock = mock_sym("cq_mock_readbacks") != NULL;
    static double x0[MAXN * 3], v0[MAXN * 3], seed[MAXN * 3], x[2][MAXN * 3], gx[2][MAXN * 3];
    unsigned rs = 5;
    for (int dim = 2; dim <= 3; ++dim)
        for (int c = 0; c < 3; ++c) {
            const int res = 80, cells = c == 1 ? 62 : 30, rows = c == 1 ? 4 : 1;   /* cells 0..cells: node extents 65 / 33 along the row, 7 / 4 rows */
            const int far = c == 2;   /* the rods at the grid's far end on every axis: its last nodes are reached, so a
                                         device array sized too small for its layout (kernels_common.j2 >>grid_layout)
                                         is read and written past its end, which the mock's guard pages catch */
            const double dx = 1.0 / res;
            int n = 0;
            for (int i = 0; i <= cells; ++i)   /* a particle at 0.75 of each cell (its base cell), rows above 10 */
                for (int j = 0; j <= rows; ++j) {
                    double *p = x0 + n * dim;
                    p[dim - 1] = ((far ? res - 6 - cells : 6) + i + 0.75) * dx;
                    p[dim - 2] = ((far ? 24 - 6 - rows : 10) + j + 0.75) * dx;
                    if (dim == 3) p[0] = ((far ? 24 - 6 : 10) + 0.75) * dx;
                    for (int a = 0; a < dim; ++a) v0[n * dim + a] = 0.05 * (urand(&rs) - 0.5);
                    ++n;
                }
            for (int i = 0; i < n * dim; ++i) seed[i] = 1;
            for (int b = 0; b < 2; ++b) {
                cq_sim_desc d;
                cq_particles_desc pd;
                memset(&d, 0, sizeof d); memset(&pd, 0, sizeof pd);
                d.dim = dim; d.res[0] = d.res[1] = 24; d.res[2] = 24; d.res[dim - 1] = res; d.dx = dx; d.dt = 1e-4; d.substeps = 2;   /* <= 65536 cells: the one-block sort */
                d.precision = CQ_PRECISION_F64; d.checkpoint_every = 2; d.backend = b ? CQ_BACKEND_CUDA : CQ_BACKEND_CPU;
                pd.count = n; pd.x = x0; pd.v = v0; pd.default_youngs = 2e3; pd.default_poisson = 0.3;
                taped_run(&d, &pd, 3, seed, x[b], gx[b]);
            }
            if (mock) {
                CHECK(memcmp(x[1], x[0], sizeof(double) * (size_t)(n * dim)) == 0, "%dD, %d cells: x on the mock is not the CPU's bitwise", dim, cells);
                CHECK(memcmp(gx[1], gx[0], sizeof(double) * (size_t)(n * dim)) == 0, "%dD, %d cells: dL/dx0 on the mock is not the CPU's bitwise", dim, cells);
            } else {
                CHECK(rel_err(x[1], x[0], (long)n * dim) < 1e-9, "%dD, %d cells: x differs: %.3g", dim, cells, rel_err(x[1], x[0], (long)n * dim));
                CHECK(rel_err(gx[1], gx[0], (long)n * dim) < 1e-9, "%dD, %d cells: dL/dx0 differs: %.3g", dim, cells, rel_err(gx[1], gx[0], (long)n * dim));
            }
        }
}

/* sims on the same device and of the same dimension and precision share one loaded module (the
   process-wide module cache): a second create loads nothing, and the module goes with the last */
TEST(sims_alive_together_share_their_module)
{
    counter_fn mods = mock_sym("cq_mock_live_modules");
    variant v32 = {2, 1, 1}, v64 = {2, 2, 1};
    cq_sim *a, *b, *c;
    int m0;
    if (!mods) { printf("    (not the mock driver: no module counter)\n"); return; }
    build_scene(2);
    m0 = mods();
    a = make(&v32, CQ_BACKEND_CUDA, 0);
    b = make(&v32, CQ_BACKEND_CUDA, 0);
    c = make(&v64, CQ_BACKEND_CUDA, 0);
    if (!a || !b || !c) { CHECK(0, "create"); cq_sim_destroy(a); cq_sim_destroy(b); cq_sim_destroy(c); return; }
    CHECK(mods() == m0 + 2, "2 f32 sims and 1 f64 sim hold %d modules (want 2: one per precision)", mods() - m0);
    CHECK_OK(cq_sim_step(a, 2)); CHECK_OK(cq_sim_step(b, 2));
    cq_sim_destroy(a);
    CHECK(mods() == m0 + 2, "destroying one of two f32 sims unloaded their module");
    CHECK_OK(cq_sim_step(b, 2));   /* still works */
    cq_sim_destroy(b);
    CHECK(mods() == m0 + 1, "the last f32 sim left its module loaded (%d modules)", mods() - m0);
    cq_sim_destroy(c);
    CHECK(mods() == m0, "modules left after every sim was destroyed: %d", mods() - m0);
}

/* An optimization loop's episodes (cq_sim_reset, T taped steps, cq_sim_backward) allocate no
   device memory after the first: the reset keeps the checkpoints' buffers for the next episode
   (on a GPU each was a cuMemAlloc, and the reset's cuMemFree of each waited for the device), and
   the backward's buffers stay.  Each episode's gradients are the first's, bit for bit, and the
   tape holds the same bytes. */
TEST(episodes_after_the_first_allocate_no_device_memory)
{
    counter_fn allocs = mock_sym("cq_mock_allocs");
    double g[3][(MAXN) * 2], seed[MAXN * 2];
    size_t tape[3] = {0, 0, 0};
    int count[3] = {0, 0, 0};
    cq_sim *s;
    build_scene(2);
    if (!(s = late_sim(CQ_BACKEND_CUDA, 2))) return;
    for (int i = 0; i < 2 * g_n; ++i) seed[i] = 1.0 / g_n;
    for (int e = 0; e < 3; ++e) {
        CHECK_OK(cq_sim_reset(s));
        CHECK_OK(cq_sim_step(s, 7));
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g[e]));
        tape[e] = cq_sim_tape_bytes(s);
        count[e] = allocs ? allocs() : 0;
    }
    CHECK(!memcmp(g[0], g[1], sizeof(double) * 2 * (size_t)g_n) && !memcmp(g[0], g[2], sizeof(double) * 2 * (size_t)g_n),
          "an episode's dL/dx0 differs from the first's");
    CHECK(tape[1] == tape[0] && tape[2] == tape[0], "tape bytes %lu, %lu, %lu", (unsigned long)tape[0], (unsigned long)tape[1],
          (unsigned long)tape[2]);
    if (allocs) CHECK(count[1] == count[0] && count[2] == count[0], "device allocations after episodes 1-3: %d, %d, %d",
                      count[0], count[1], count[2]);
    else printf("    (a real driver: the allocations are not counted)\n");
    cq_sim_destroy(s);
}

TEST(no_device_memory_leaks_or_violations)
{
    counter_fn live = mock_sym("cq_mock_live_allocations");
    counter_fn viol = mock_sym("cq_mock_violations");
    if (!live) { printf("    (not the mock driver: no allocation counters)\n"); return; }
    CHECK(live() == 0, "%d device allocations still live after every sim was destroyed", live());
    CHECK(viol() == 0, "%d out-of-bounds or unknown-pointer device accesses", viol());
}

int main(int argc, char **argv)
{
    static const cqt_case cases[] = { CASE(parity_all_variants), CASE(cables_match_the_cpu),
        CASE(a_failing_step_reports_like_the_cpu), CASE(a_call_reads_its_status_once_and_a_late_failure_reports_like_the_cpu),
        CASE(a_nonfinite_adjoint_reports_like_the_cpu),
        CASE(actuation_gradients_over_several_chunks_are_the_cpus),
        CASE(set_get_reset_and_logs), CASE(a_large_grid_sorts_like_the_cpu), CASE(particles_in_the_first_cell_sort_like_the_cpu), CASE(sparse_clusters_in_a_large_grid_sort_like_the_cpu), CASE(the_box_tiles_cover_every_extent),
        CASE(sims_alive_together_share_their_module), CASE(episodes_after_the_first_allocate_no_device_memory),
        CASE(no_device_memory_leaks_or_violations) };
    if (argc > 1 && !strncmp(argv[1], "fault:", 6)) return fault(argv[1] + 6);
    if (!cuda_available()) {
        printf("SKIP: no usable CUDA driver/device (%s)\n0 passed, 0 failed\n", cq_sim_last_error(NULL));
        return 0;
    }
    return cqt_run(cases, (int)(sizeof cases / sizeof cases[0]), argc, argv);
}
