/* test_world_cuda.c - the fluid-rigid world's CUDA backend against its CPU backend.

   ./test_world_cuda [filter]     parity: 2D and 3D, f32 and f64: a tank with a floating box
                                  (tracked: its Jacobian) and a ball dropped into the water,
                                  stepped on the CPU and on CUDA; fluid positions, body states,
                                  the Jacobian, the solvers' iterations agree (f64 to 1e-9; f32:
                                  bodies and Jacobian to 1e-3, the fluid as close to a float64
                                  run as the CPU's f32 within 2x).  Also reset (run to run equal
                                  bitwise), a failing step, the log, leaks and violations.
   ./test_world_cuda fault:MODE   one fault of the mock driver (CQ_MOCK_FAIL=MODE: init,
                                  oom_after=N, launch_after=N): what the world must report.

   Needs a CUDA driver: a real one (tests/gpu/run.sh) or the mock (CQ_CUDA_LIBRARY=
   build/mock/libcuda.so.1: the kernels run on the CPU, and any host access to device memory
   faults).  Without either it prints SKIP and passes nothing. */
#define _POSIX_C_SOURCE 200112L
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>
#include <dlfcn.h>

#define STEPS 40
typedef int (*counter_fn)(void);
typedef long (*launches_fn)(void);
static counter_fn mock_sym(const char *name);
static char g_log[1024];
static void logger(cq_log_level l, const char *m, void *u) { (void)u; if (l == CQ_LOG_INFO) snprintf(g_log, sizeof g_log, "%s", m); }

/* a tank 0.4 (x 0.2) wide, 12 cm of water, a box of 500 kg/m^3 floating in it and a ball of
   1500 kg/m^3 falling into it at a slant; the box is tracked */
static cq_world *make(int dim, cq_precision prec, cq_backend be)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    const double r = dim == 2 ? 0.005 : 0.01, sp = 2 * r;
    double *x;
    int n = 0, id;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.particle_radius = r; d.dt = 1e-3; d.gravity[1] = -9.81; d.precision = prec; d.backend = be;
    d.domain_hi[0] = 0.4; d.domain_hi[1] = 0.3; d.domain_hi[2] = dim == 3 ? 0.2 : 0;
    d.logger.func = logger;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { printf("    create: %s\n", cq_world_last_error(NULL)); return NULL; }
    x = (double *)malloc(sizeof(double) * 3 * 20000);
    for (int k = 0; k < (dim == 3 ? 10 : 1); ++k)
        for (int j = 0; j < (int)(0.12 / sp); ++j)
            for (int i = 0; i < (int)(0.4 / sp); ++i) {
                x[n * dim] = r + i * sp; x[n * dim + 1] = r + j * sp;
                if (dim == 3) x[n * dim + 2] = r + k * sp;
                ++n;
            }
    if (cq_world_add_fluid(w, n, x, NULL) != CQ_SUCCESS) printf("    add_fluid: %s\n", cq_world_last_error(w));
    free(x);
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.06; b.half_extents[1] = 0.03; b.half_extents[2] = 0.05; b.density = 500;
    b.x[0] = 0.12; b.x[1] = 0.14; b.x[2] = 0.1; b.q[0] = 1;
    if (cq_world_add_body(w, &b, &id) != CQ_SUCCESS) printf("    add_body: %s\n", cq_world_last_error(w));
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.03; b.density = 1500;
    b.x[0] = 0.28; b.x[1] = 0.2; b.x[2] = 0.1; b.q[0] = 1; b.v[0] = -0.3; b.v[1] = -1;
    if (cq_world_add_body(w, &b, NULL) != CQ_SUCCESS) printf("    add_body: %s\n", cq_world_last_error(w));
    if (cq_world_track(w, id) != CQ_SUCCESS) printf("    track: %s\n", cq_world_last_error(w));
    return w;
}

/* largest difference of the fluid's x, relative to scale */
static double fluid_diff(const cq_world *a, const cq_world *b, int dim, double scale)
{
    const int n = cq_world_fluid_count(a);
    double *xa = (double *)malloc(sizeof(double) * (size_t)(n * dim + 1)), *xb = (double *)malloc(sizeof(double) * (size_t)(n * dim + 1)), m = 0;
    cq_world_get_fluid(a, CQ_FIELD_X, xa); cq_world_get_fluid(b, CQ_FIELD_X, xb);
    for (int i = 0; i < n * dim; ++i) if (fabs(xa[i] - xb[i]) > m) m = fabs(xa[i] - xb[i]);
    free(xa); free(xb);
    return m / scale;
}

static double body_diff(const cq_world *a, const cq_world *b)
{
    double m = 0;
    for (int k = 0; k < cq_world_body_count(a); ++k) {
        cq_body_state sa, sb;
        cq_world_get_body(a, k, &sa); cq_world_get_body(b, k, &sb);
        for (int i = 0; i < 3; ++i) {
            if (fabs(sa.x[i] - sb.x[i]) > m) m = fabs(sa.x[i] - sb.x[i]);
            if (fabs(sa.v[i] - sb.v[i]) > m) m = fabs(sa.v[i] - sb.v[i]);
            if (fabs(sa.w[i] - sb.w[i]) > m) m = fabs(sa.w[i] - sb.w[i]);
        }
    }
    return m;
}

static double jac_diff(const cq_world *a, const cq_world *b)
{
    double ja[13 * 6], jb[13 * 6], m = 0, s = 1e-30;
    if (cq_world_body_jacobian(a, 0, ja) != CQ_SUCCESS || cq_world_body_jacobian(b, 0, jb) != CQ_SUCCESS) return 1e30;
    for (int i = 0; i < 13 * 6; ++i) { if (fabs(ja[i] - jb[i]) > m) m = fabs(ja[i] - jb[i]); if (fabs(ja[i]) > s) s = fabs(ja[i]); }
    return m / s;
}

static void parity(int dim, cq_precision prec)
{
    const double tol = prec == CQ_PRECISION_F64 ? 1e-9 : 1e-4;
    /* f32: a float64 CPU run as the reference, made first (g_log keeps the last create's log) */
    cq_world *r = prec == CQ_PRECISION_F32 ? make(dim, CQ_PRECISION_F64, CQ_BACKEND_CPU) : NULL;
    cq_world *c = make(dim, prec, CQ_BACKEND_CPU), *g = make(dim, prec, CQ_BACKEND_CUDA);
    double df = 0, db = 0, dj = 0, ec = 0, eg = 0, sc_err = 0, sg_err = 0;
    int it_c = 0, it_g = 0;
    CHECK(c && g, "create");
    if (!c || !g) { cq_world_destroy(c); cq_world_destroy(g); return; }
    CHECK(strstr(g_log, "backend: CUDA") != NULL, "the CUDA world's log: %s", g_log);
    {   /* the mock counts launches: the CUDA world must launch kernels (not fall back silently) */
        counter_fn f = mock_sym("cq_mock_launches");
        if (f) {
            launches_fn lf;
            long before;
            memcpy(&lf, &f, sizeof lf);
            before = lf();
            CHECK_OK(cq_world_step(c, 1));
            CHECK_OK(cq_world_step(g, 1));
            CHECK(lf() > before + 10, "the CUDA world's step launched %ld kernels", lf() - before);
            CHECK_OK(cq_world_reset(c));
            CHECK_OK(cq_world_reset(g));
        }
    }
    for (int n = 0; n < STEPS; ++n) {
        cq_world_stats sc, sg;
        CHECK_OK(cq_world_step(c, 1));
        CHECK_OK(cq_world_step(g, 1));
        if (r) CHECK_OK(cq_world_step(r, 1));
        cq_world_stats_get(c, &sc); cq_world_stats_get(g, &sg);
        it_c += sc.density_iterations + sc.divergence_iterations; it_g += sg.density_iterations + sg.divergence_iterations;
        sc_err += sc.density_error + sc.divergence_error; sg_err += sg.density_error + sg.divergence_error;
    }
    df = fluid_diff(c, g, dim, 0.4); db = body_diff(c, g); dj = jac_diff(c, g);
    printf("    %dD %s, %d fluid particles, %d steps: fluid x %.2g, bodies %.2g, Jacobian %.2g (relative); solver iterations CPU %d, CUDA %d\n",
           dim, prec == CQ_PRECISION_F64 ? "f64" : "f32", cq_world_fluid_count(c), STEPS, df, db, dj, it_c, it_g);
    /* The fluid in f32: each backend against the float64 run.  A GPU contracts a * b + c into one
       rounding (fused multiply-adds) where the CPU rounds twice, and 40 steps of a pressure solve
       carry that difference to the f32 result's own accuracy: on an H100 the 3D tank's CUDA and
       CPU fluid differed by 1.08e-4 of the scale while the CPU's f32 differs from float64 by
       1.8e-4.  So f32 asks that CUDA be as accurate as the CPU (within 2x), not that it match
       the CPU's roundings; a wrong kernel is off by far more.  f64 and the bodies and Jacobian in
       both precisions keep the direct comparison. */
    if (r) {
        ec = fluid_diff(c, r, dim, 0.4); eg = fluid_diff(g, r, dim, 0.4);
        printf("    %dD f32 against the float64 CPU run: fluid x CPU %.2g, CUDA %.2g; bodies CPU %.2g, CUDA %.2g\n", dim,
               ec, eg, body_diff(c, r), body_diff(g, r));
        CHECK(eg <= 2 * ec + 1e-7, "the CUDA fluid is %g from the float64 run, the CPU's %g", eg, ec);
    } else CHECK(df < tol, "CPU and CUDA fluid differ: %g (tolerance %g)", df, tol);
    CHECK(db < tol * 10 && dj < tol * 10, "CPU and CUDA differ: bodies %g, Jacobian %g (tolerance %g)", db, dj, tol * 10);
    cq_world_destroy(r);
    CHECK(abs(it_c - it_g) <= STEPS / 10, "solver iterations differ: %d vs %d", it_c, it_g);
    if (mock_sym("cq_mock_launches"))   /* the mock: the CPU's arithmetic, so the solves' test on the device (kernels.cu.j2
                                           >>sph_solver_check) must stop each solve where the CPU's does, with its error */
        CHECK(it_c == it_g && sc_err == sg_err, "on the mock the solves differ: iterations %d vs %d, errors %.17g vs %.17g", it_c, it_g,
              sc_err, sg_err);
    cq_world_destroy(c); cq_world_destroy(g);
}

TEST(parity_2d_f32) { parity(2, CQ_PRECISION_F32); }
TEST(parity_2d_f64) { parity(2, CQ_PRECISION_F64); }
TEST(parity_3d_f32) { parity(3, CQ_PRECISION_F32); }
TEST(parity_3d_f64) { parity(3, CQ_PRECISION_F64); }

/* the same world stepped again after a reset gives bitwise the same states, and its steps allocate no
   device memory (the mock counts cuMemAlloc) */
TEST(reset_repeats_bitwise)
{
    cq_world *g = make(2, CQ_PRECISION_F32, CQ_BACKEND_CUDA);
    cq_body_state a[2], b[2];
    const int n = g ? cq_world_fluid_count(g) : 0;
    double *xa = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1)), *xb = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1));
    CHECK(g != NULL, "create");
    if (g) {
        CHECK_OK(cq_world_step(g, 25));
        cq_world_get_body(g, 0, &a[0]); cq_world_get_body(g, 1, &a[1]); cq_world_get_fluid(g, CQ_FIELD_X, xa);
        counter_fn allocs = mock_sym("cq_mock_allocs");
        int before;
        CHECK_OK(cq_world_reset(g));
        before = allocs ? allocs() : 0;
        CHECK_OK(cq_world_step(g, 25));
        if (allocs) CHECK(allocs() == before, "the steps after a reset made %d device allocations", allocs() - before);
        cq_world_get_body(g, 0, &b[0]); cq_world_get_body(g, 1, &b[1]); cq_world_get_fluid(g, CQ_FIELD_X, xb);
        CHECK(!memcmp(a, b, sizeof a), "the bodies differ after a reset and the same steps");
        CHECK(!memcmp(xa, xb, sizeof(double) * (size_t)(2 * n)), "the fluid differs after a reset and the same steps");
    }
    free(xa); free(xb);
    cq_world_destroy(g);
}

/* a fluid particle thrown at 3e38 m/s (finite in float): the step's velocities overflow on the
   device, the step fails naming the particle as the CPU's does, and the world is unchanged */
static cq_result overflow(cq_backend be, char *msg, size_t cap, int *steps, double *x_after, double *x_before, int *added)
{
    cq_world_desc d;
    cq_world *w = NULL;
    double x[2 * 200], v[2 * 200];
    cq_result r;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 1e-3; d.gravity[1] = -9.81; d.domain_hi[0] = d.domain_hi[1] = 0.4;
    d.precision = CQ_PRECISION_F32; d.backend = be; d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return CQ_ERROR_BACKEND_UNAVAILABLE;
    for (int i = 0; i < 200; ++i) { x[2 * i] = 0.01 + 0.02 * (i % 20); x[2 * i + 1] = 0.01 + 0.02 * (i / 20); v[2 * i] = v[2 * i + 1] = 0; }
    v[2 * 77] = 3e38;
    cq_world_add_fluid(w, 200, x, v);
    cq_world_get_fluid(w, CQ_FIELD_X, x_before);
    r = cq_world_step(w, 3);
    snprintf(msg, cap, "%s", cq_world_last_error(w));
    *steps = cq_world_step_count(w);
    {   /* more fluid right after the failed step (still at step 0; on CUDA the fluid the failed step
           restored is on the device, not read back yet): it is kept, the new particle after it */
        static double all[2 * 201];
        const double xn[2] = {0.2, 0.35};
        *added = cq_world_add_fluid(w, 1, xn, NULL) == CQ_SUCCESS && cq_world_get_fluid(w, CQ_FIELD_X, all) == CQ_SUCCESS &&
                 all[400] == (double)(float)0.2 && all[401] == (double)(float)0.35;
        memcpy(x_after, all, sizeof(double) * 400);
        *added = *added && cq_world_step(w, 1) == CQ_ERROR_NON_FINITE;
    }
    cq_world_destroy(w);
    return r;
}

TEST(failing_step_keeps_the_state)
{
    char mc[512], mg[512];
    int sc = -1, sg = -1, ac = 0, ag = 0;
    static double xc[400], xg[400], x0c[400], x0g[400];
    const cq_result rc = overflow(CQ_BACKEND_CPU, mc, sizeof mc, &sc, xc, x0c, &ac), rg = overflow(CQ_BACKEND_CUDA, mg, sizeof mg, &sg, xg, x0g, &ag);
    printf("    CPU: %s\n    CUDA: %s\n", mc, mg);
    CHECK(rc == CQ_ERROR_NON_FINITE && rg == CQ_ERROR_NON_FINITE, "results %s, %s", cq_result_string(rc), cq_result_string(rg));
    CHECK(!strcmp(mc, mg), "the messages differ");
    CHECK(sc == 0 && sg == 0, "step counts %d, %d after the failure", sc, sg);
    CHECK(!memcmp(xg, x0g, sizeof xg) && !memcmp(xc, x0c, sizeof xc), "the failed step changed the fluid");
    CHECK(ac && ag, "fluid added after the failed step: CPU %s, CUDA %s", ac ? "ok" : "wrong", ag ? "ok" : "wrong");
}

/* a world whose bodies are all static sorts its boundary once (world.j2 bsorted): its fluid is
   bitwise that of the same world with a dynamic ball far from the fluid (whose boundary is sorted
   again every step), on the CPU; on CUDA the same as the CPU (bitwise on the mock) */
static cq_world *tank(cq_backend be, int ball)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    static double x[2 * 600];
    int n = 0;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = 0.0025; d.dt = 1e-3; d.gravity[1] = -9.81; d.domain_hi[0] = 0.4; d.domain_hi[1] = 0.3;
    d.precision = CQ_PRECISION_F64; d.backend = be; d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    for (int j = 0; j < 30; ++j)
        for (int i = 0; i < 20; ++i) { x[2 * n] = 0.0025 + 0.005 * i; x[2 * n + 1] = 0.0025 + 0.005 * j; ++n; }
    cq_world_add_fluid(w, n, x, NULL);
    memset(&b, 0, sizeof b);   /* a static block in the fluid's way */
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.01; b.half_extents[1] = 0.02; b.density = 1000; b.is_static = 1;
    b.x[0] = 0.15; b.x[1] = 0.02; b.q[0] = 1;
    cq_world_add_body(w, &b, NULL);
    if (ball) {
        memset(&b, 0, sizeof b);
        b.shape = CQ_SHAPE_SPHERE; b.radius = 0.02; b.density = 800; b.x[0] = 0.36; b.x[1] = 0.26; b.q[0] = 1;
        cq_world_add_body(w, &b, NULL);
    }
    return w;
}
TEST(static_boundary_sorted_once)
{
    cq_world *a = tank(CQ_BACKEND_CPU, 0), *b = tank(CQ_BACKEND_CPU, 1), *g = tank(CQ_BACKEND_CUDA, 0);
    const int n = a ? cq_world_fluid_count(a) : 0;
    static double xa[2 * 600], xb[2 * 600], xg[2 * 600];
    CHECK(a && b && g, "create");
    if (a && b && g) {
        CHECK_OK(cq_world_step(a, 40)); CHECK_OK(cq_world_step(b, 40)); CHECK_OK(cq_world_step(g, 40));
        CHECK_OK(cq_world_get_fluid(a, CQ_FIELD_X, xa)); CHECK_OK(cq_world_get_fluid(b, CQ_FIELD_X, xb));
        CHECK_OK(cq_world_get_fluid(g, CQ_FIELD_X, xg));
        CHECK(!memcmp(xa, xb, sizeof(double) * (size_t)(2 * n)), "the fluid differs with a ball far away (its boundary sorted each step)");
        if (mock_sym("cq_mock_launches")) CHECK(!memcmp(xa, xg, sizeof(double) * (size_t)(2 * n)), "CPU and CUDA (the mock) differ");
        else CHECK(fluid_diff(a, g, 2, 0.4) < 1e-9, "CPU and CUDA differ: %g", fluid_diff(a, g, 2, 0.4));
        {   /* (and it moved: the test would pass on a fluid at rest) */
            double moved = 0;
            for (int i = 0; i < n; ++i) {
                const double dx = xa[2 * i] - (0.0025 + 0.005 * (i % 20)), dy = xa[2 * i + 1] - (0.0025 + 0.005 * (i / 20));
                if (fabs(dx) + fabs(dy) > moved) moved = fabs(dx) + fabs(dy);
            }
            CHECK(moved > 1e-3, "the fluid moved at most %g", moved);
        }
    }
    cq_world_destroy(a); cq_world_destroy(b); cq_world_destroy(g);
}

/* the fluid stays on the device between steps (world.j2 >>world_fluid_state): reading it between
   steps changes nothing (bitwise, against a world stepped without reads), a read after a step
   brings it back once, and a second read without a step moves nothing */
TEST(reads_between_steps_change_nothing)
{
    cq_world *a = make(2, CQ_PRECISION_F64, CQ_BACKEND_CUDA), *b = make(2, CQ_PRECISION_F64, CQ_BACKEND_CUDA);
    const int n = a ? cq_world_fluid_count(a) : 0;
    double *xa = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1)), *xb = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1));
    cq_body_state sa, sb;
    CHECK(a && b, "create");
    if (a && b) {
        for (int k = 0; k < 30; ++k) {
            CHECK_OK(cq_world_step(a, 1));
            CHECK_OK(cq_world_get_fluid(a, k % 2 ? CQ_FIELD_V : CQ_FIELD_X, xa));
            if (k == 12) { CHECK_OK(cq_world_reset(a)); CHECK_OK(cq_world_step(a, 13)); }   /* back to where it was */
        }
        CHECK_OK(cq_world_step(b, 30));
        CHECK_OK(cq_world_get_fluid(a, CQ_FIELD_X, xa)); CHECK_OK(cq_world_get_fluid(b, CQ_FIELD_X, xb));
        CHECK(!memcmp(xa, xb, sizeof(double) * (size_t)(2 * n)), "the fluid's x differs with reads between the steps");
        CHECK_OK(cq_world_get_fluid(a, CQ_FIELD_V, xa)); CHECK_OK(cq_world_get_fluid(b, CQ_FIELD_V, xb));
        CHECK(!memcmp(xa, xb, sizeof(double) * (size_t)(2 * n)), "the fluid's v differs with reads between the steps");
        cq_world_get_body(a, 0, &sa); cq_world_get_body(b, 0, &sb);
        CHECK(!memcmp(&sa, &sb, sizeof sa), "the box differs with reads between the steps");
    }
    free(xa); free(xb);
    cq_world_destroy(a); cq_world_destroy(b);
}

/* a step of a fluid without bodies moves no fluid array across the bus: the sorts, the lists'
   offsets and the fluid's state stay on the device (the mock counts the bytes each copy moves; a
   step used to move x, v, the sorts' and the lists' arrays, ~52 bytes a fluid particle in 2D f32,
   and the walls' particles, their forces and derivatives, as many a wall particle) */
TEST(steps_move_no_fluid_arrays)
{
    typedef size_t (*bytes_fn)(void);
    counter_fn f = mock_sym("cq_mock_copied_bytes"), rb = mock_sym("cq_mock_readbacks");
    cq_world_desc d;
    cq_world *w = NULL;
    static double x[2 * 4000];
    int n = 0;
    if (!f || !rb) { printf("    (not the mock driver: no byte counter)\n"); return; }
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = 0.0025; d.dt = 5e-4; d.gravity[1] = -9.81; d.domain_hi[0] = 0.4; d.domain_hi[1] = 0.3;
    d.backend = CQ_BACKEND_CUDA; d.logger.func = cq_log_silent;
    CHECK_OK(cq_world_create(&d, &w));
    if (!w) return;
    for (int j = 0; j < 40; ++j)
        for (int i = 0; i < 80; ++i) { x[2 * n] = 0.0025 + 0.005 * i; x[2 * n + 1] = 0.0025 + 0.005 * j; ++n; }
    CHECK_OK(cq_world_add_fluid(w, n, x, NULL));
    CHECK_OK(cq_world_step(w, 1));   /* (the first step puts the state and the walls up) */
    {
        bytes_fn bytes;
        launches_fn reads;
        size_t b0, b1, b2;
        long r0, r1;
        const size_t array = (size_t)n * 2 * sizeof(float);   /* one fluid array of the world's: x or v */
        memcpy(&bytes, &f, sizeof bytes); memcpy(&reads, &rb, sizeof reads);
        b0 = bytes(); r0 = reads();
        CHECK_OK(cq_world_step(w, 10));
        b1 = bytes(); r1 = reads();
        printf("    %d fluid particles: %.0f bytes and %.1f read backs a step (one fluid array: %zu bytes)\n", n,
               (double)(b1 - b0) / 10, (double)(r1 - r0) / 10, array);
        CHECK((b1 - b0) / 10 < array / 4, "a step moved %zu bytes", (b1 - b0) / 10);
        CHECK(r1 - r0 <= 11, "%ld read backs in 10 steps of a fluid at rest (one a step: world.j2 >>world_fluid_step)", r1 - r0);
        CHECK_OK(cq_world_get_fluid(w, CQ_FIELD_X, x));
        b2 = bytes();
        CHECK(b2 - b1 >= 2 * array, "the read after the steps moved %zu bytes", b2 - b1);
        CHECK_OK(cq_world_get_fluid(w, CQ_FIELD_V, x));
        CHECK(bytes() == b2, "a second read without a step moved %zu bytes", bytes() - b2);
    }
    cq_world_destroy(w);
}

/* a block of water squeezed to 1.5 r apart in x and y (2 r at rest): its particles have more
   neighbours than the lists' least room a particle (world.j2 cq__world_lists), which they fill on
   the device without reading anything back first, so the first step runs again with room
   (world.j2 >>world_fluid_step; it says so in the log); then STEPS steps: the fluid as on the CPU,
   bitwise on the mock (float64; on a GPU within parity's 1e-9 of the scale) */
static int g_outgrew;
static void outgrew_logger(cq_log_level l, const char *m, void *u) { (void)l; (void)u; if (strstr(m, "outgrew their room")) ++g_outgrew; }
static cq_world *squeezed(int dim, cq_backend be)
{
    cq_world_desc d;
    cq_world *w = NULL;
    double x[3 * 400], v[3 * 400];
    const double r = 0.005;
    int n = 0;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.particle_radius = r; d.dt = 1e-3; d.gravity[1] = -9.81; d.precision = CQ_PRECISION_F64; d.backend = be;
    d.domain_hi[0] = 0.4; d.domain_hi[1] = 0.3; d.domain_hi[2] = dim == 3 ? 0.1 : 0; d.logger.func = outgrew_logger;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    for (int k = 0; k < (dim == 3 ? 4 : 1); ++k)
        for (int j = 0; j < 8; ++j)
            for (int i = 0; i < 12; ++i) {
                x[dim * n] = 0.01 + i * 1.5 * r; x[dim * n + 1] = 0.01 + j * 1.5 * r; v[dim * n] = v[dim * n + 1] = 0;
                if (dim == 3) { x[dim * n + 2] = r + k * 2 * r; v[dim * n + 2] = 0; }
                ++n;
            }
    if (cq_world_add_fluid(w, n, x, v) != CQ_SUCCESS) { cq_world_destroy(w); return NULL; }
    return w;
}
TEST(lists_outgrow_their_room)
{
    for (int dim = 2; dim <= 3; ++dim) {
        cq_world *c = squeezed(dim, CQ_BACKEND_CPU), *g;
        static double xc[3 * 400], xg[3 * 400];
        double m = 0;
        int n, grew;
        g_outgrew = 0;
        g = squeezed(dim, CQ_BACKEND_CUDA);
        CHECK(c && g, "create");
        if (!c || !g) { cq_world_destroy(c); cq_world_destroy(g); return; }
        CHECK_OK(cq_world_step(c, STEPS));
        CHECK_OK(cq_world_step(g, STEPS));
        grew = g_outgrew;
        n = cq_world_fluid_count(g);
        CHECK_OK(cq_world_get_fluid(c, CQ_FIELD_X, xc));
        CHECK_OK(cq_world_get_fluid(g, CQ_FIELD_X, xg));
        for (int i = 0; i < n * dim; ++i) if (fabs(xc[i] - xg[i]) > m) m = fabs(xc[i] - xg[i]);
        printf("    %dD squeezed block, %d particles, %d steps: the lists outgrew their room %d times; fluid x differs by %.3g m\n", dim, n, STEPS,
               grew, m);
        CHECK(grew >= 1, "%dD: the lists never outgrew their room (the case is not tested)", dim);
        if (mock_sym("cq_mock_launches")) CHECK(!memcmp(xc, xg, sizeof(double) * (size_t)(n * dim)), "%dD: CPU and CUDA (the mock) differ", dim);
        else CHECK(m < 1e-9 * 0.4, "%dD: CPU and CUDA differ by %g", dim, m);
        cq_world_destroy(c); cq_world_destroy(g);
    }
}

/* a step of the tank with its two bodies reads back once where each solve takes no more iterations
   than the last step's: the whole step is queued (the solves' iterations as many as the last step's
   took, viscosity and advection gated on them on the device), then one copy brings back the failure
   word, what the lists needed where they outgrew their room, the solves' states and the bodies'
   boundary forces and their derivatives (it was six: the lists' sizes before the lists, a solve's
   state a batch, the failure word, Fb and Gb one by one) */
TEST(a_step_reads_back_once)
{
    counter_fn rb = mock_sym("cq_mock_readbacks");
    cq_world *g;
    launches_fn reads;
    long r0, r1;
    if (!rb) { printf("    (not the mock driver: no read back counter)\n"); return; }
    memcpy(&reads, &rb, sizeof reads);
    g = make(2, CQ_PRECISION_F32, CQ_BACKEND_CUDA);
    CHECK(g != NULL, "create");
    if (!g) return;
    CHECK_OK(cq_world_step(g, 5));   /* (the first step sizes the lists) */
    r0 = reads();
    CHECK_OK(cq_world_step(g, 20));
    r1 = reads();
    printf("    2D tank, a box and a ball: %.2f read backs a step\n", (double)(r1 - r0) / 20);
    CHECK(r1 - r0 <= 30, "%ld read backs in 20 steps", r1 - r0);
    cq_world_destroy(g);
}

/* the solves' iterations as they come: with a divergence tolerance of 1e-4 the divergence solve
   often takes more iterations than the step before (the step goes on from its one read back: the
   solve, then viscosity, the density solve and advection again, which had run nothing), and with
   1e-5 and at most 8 iterations each solve ends at its limit (its fin word raised by the host); a
   2D tank with a ball dropped in, 60 steps: the fluid and the ball as on the CPU, bitwise on the
   mock (float64; on a GPU within parity's 1e-9 of the scale) */
static cq_world *strict(cq_backend be, double div_error, int max_it)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    static double x[2 * 480];
    const double r = 0.005;
    int n = 0;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = r; d.dt = 1e-3; d.gravity[1] = -9.81; d.backend = be; d.precision = CQ_PRECISION_F64;
    d.domain_hi[0] = 0.4; d.domain_hi[1] = 0.3; d.max_divergence_error = div_error; d.max_iterations = max_it; d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    for (int j = 0; j < 12; ++j)
        for (int i = 0; i < 40; ++i) { x[2 * n] = r + i * 2 * r; x[2 * n + 1] = r + j * 2 * r; ++n; }
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.03; b.density = 1500; b.x[0] = 0.28; b.x[1] = 0.2; b.q[0] = 1; b.v[0] = -0.3; b.v[1] = -1;
    if (cq_world_add_fluid(w, n, x, NULL) != CQ_SUCCESS || cq_world_add_body(w, &b, NULL) != CQ_SUCCESS) { cq_world_destroy(w); return NULL; }
    return w;
}
TEST(solves_as_they_come)
{
    static const double tol[2] = {1e-4, 1e-5};
    static const int max_it[2] = {0, 8};
    for (int c = 0; c < 2; ++c) {
        cq_world *a = strict(CQ_BACKEND_CPU, tol[c], max_it[c]), *g = strict(CQ_BACKEND_CUDA, tol[c], max_it[c]);
        static double xa[2 * 480], xg[2 * 480];
        cq_body_state ba, bg;
        int rose = 0, last = 1, limit = 0, it_a = 0, it_g = 0;
        double m = 0;
        CHECK(a && g, "create");
        if (!a || !g) { cq_world_destroy(a); cq_world_destroy(g); return; }
        for (int k = 0; k < 60; ++k) {
            cq_world_stats sa, sg;
            CHECK_OK(cq_world_step(a, 1));
            CHECK_OK(cq_world_step(g, 1));
            cq_world_stats_get(a, &sa); cq_world_stats_get(g, &sg);
            it_a += sa.divergence_iterations + sa.density_iterations; it_g += sg.divergence_iterations + sg.density_iterations;
            rose += sg.divergence_iterations > last; last = sg.divergence_iterations > 1 ? sg.divergence_iterations : 1;
            limit += max_it[c] && (sg.divergence_iterations == max_it[c] || sg.density_iterations == max_it[c]);
        }
        CHECK_OK(cq_world_get_fluid(a, CQ_FIELD_X, xa)); CHECK_OK(cq_world_get_fluid(g, CQ_FIELD_X, xg));
        cq_world_get_body(a, 0, &ba); cq_world_get_body(g, 0, &bg);
        for (int i = 0; i < 2 * cq_world_fluid_count(a); ++i) if (fabs(xa[i] - xg[i]) > m) m = fabs(xa[i] - xg[i]);
        printf("    divergence error %g, at most %d iterations: %d steps' divergence solve took more than the last; %d ended at the "
               "limit; iterations CPU %d, CUDA %d; fluid x differs by %.3g m\n", tol[c], max_it[c] ? max_it[c] : 100, rose, limit, it_a, it_g, m);
        CHECK(max_it[c] ? limit >= 3 : rose >= 3, "the case is not tested: %d rises, %d at the limit", rose, limit);
        if (mock_sym("cq_mock_launches"))
            CHECK(it_a == it_g && !memcmp(xa, xg, sizeof(double) * 2 * (size_t)cq_world_fluid_count(a)) && !memcmp(&ba, &bg, sizeof ba),
                  "CPU and CUDA (the mock) differ: iterations %d and %d", it_a, it_g);
        else CHECK(m < 1e-9 * 0.4, "CPU and CUDA differ by %g", m);
        cq_world_destroy(a); cq_world_destroy(g);
    }
}

static counter_fn mock_sym(const char *name)
{
    const char *path = getenv("CQ_CUDA_LIBRARY");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL, *f = h ? dlsym(h, name) : NULL;
    counter_fn fn = NULL;
    if (f) memcpy(&fn, &f, sizeof fn);
    return fn;
}

TEST(no_device_memory_leaks_or_violations)
{
    counter_fn live = mock_sym("cq_mock_live_allocations"), viol = mock_sym("cq_mock_violations");
    counter_fn mods = mock_sym("cq_mock_live_modules"), refs = mock_sym("cq_mock_ctx_refs");
    if (!live) { printf("    (not the mock driver: no allocation counters)\n"); return; }
    CHECK(live() == 0, "%d device allocations still live after every world was destroyed", live());
    CHECK(viol() == 0, "%d out-of-bounds or unknown-pointer device accesses", viol());
    CHECK(!mods || mods() == 0, "%d modules still loaded", mods());
    CHECK(!refs || refs() == 0, "the primary context is still retained %d times", refs());
}

/* CQ_MOCK_FAIL=mode armed after the create: every step must fail cleanly or succeed */
static int fault(const char *mode)
{
    cq_world *w;
    int ok = 1;
#define EXPECT(cond, ...) do { if (!(cond)) { ok = 0; printf("    FAIL: "); printf(__VA_ARGS__); printf("\n"); } } while (0)
    if (!strcmp(mode, "init") || !strcmp(mode, "ptx")) {
        setenv("CQ_MOCK_FAIL", mode, 1);
        w = make(2, CQ_PRECISION_F32, CQ_BACKEND_CUDA);
        EXPECT(w == NULL, "a CUDA world was created with fault %s", mode);
        EXPECT(strstr(cq_world_last_error(NULL), "cq_world_desc.backend = CUDA") != NULL, "reason: %s", cq_world_last_error(NULL));
        printf("    %s\n", cq_world_last_error(NULL));
        w = make(2, CQ_PRECISION_F32, CQ_BACKEND_DEFAULT);
        EXPECT(w != NULL && cq_world_step(w, 2) == CQ_SUCCESS, "DEFAULT (the CPU) failed");
        cq_world_destroy(w);
    } else if (!strncmp(mode, "oom_after=", 10) || !strncmp(mode, "launch_after=", 13) || !strncmp(mode, "squeezed_", 9)) {
        /* squeezed_MODE: the squeezed block of lists_outgrow_their_room (3D, 100 steps), whose first
           step runs again with more room (its device allocations 33-36) */
        const int sh = !strncmp(mode, "squeezed_", 9);
        static double x0[3 * 400], x1[3 * 400];
        cq_body_state s0, s1;
        int steps0, failures = 0;
        memset(&s0, 0, sizeof s0); memset(&s1, 0, sizeof s1);
        if (sh) mode += 9;
        setenv("CQ_MOCK_FAIL", "", 1);
        w = sh ? squeezed(3, CQ_BACKEND_CUDA) : make(2, CQ_PRECISION_F32, CQ_BACKEND_CUDA);
        if (!w) { printf("    create failed without a fault\n"); return 1; }
        setenv("CQ_MOCK_FAIL", mode, 1);
        for (int n = 0; n < (sh ? 100 : 40); ++n) {
            cq_result r;
            if (!sh) cq_world_get_body(w, 0, &s0);
            else if (cq_world_get_fluid(w, CQ_FIELD_X, x0) != CQ_SUCCESS) { EXPECT(0, "step %d: the fluid's read failed", n); break; }
            steps0 = cq_world_step_count(w);
            r = cq_world_step(w, 1);
            if (r != CQ_SUCCESS) {
                ++failures;
                if (!sh) cq_world_get_body(w, 0, &s1);
                else EXPECT(r == CQ_ERROR_DEVICE || (cq_world_get_fluid(w, CQ_FIELD_X, x1) == CQ_SUCCESS &&
                            !memcmp(x0, x1, sizeof(double) * 3 * (size_t)cq_world_fluid_count(w))), "the failed step changed the fluid");
                EXPECT(r == CQ_ERROR_OUT_OF_MEMORY || r == CQ_ERROR_DEVICE, "step %d: %s", n, cq_result_string(r));
                EXPECT(cq_world_step_count(w) == steps0 && !memcmp(&s0, &s1, sizeof s0), "the failed step changed the world");
                printf("    step %d: %s: %s\n", n, cq_result_string(r), cq_world_last_error(w));
                break;
            }
        }
        EXPECT(failures == 1, "the fault never surfaced");
        if (!strncmp(mode, "launch_after=", 13)) {
            cq_result r = cq_world_step(w, 1);
            EXPECT(r == CQ_ERROR_DEVICE, "a step after a device fault: %s", cq_result_string(r));
        }
        cq_world_destroy(w);
    } else {
        printf("unknown fault mode %s\n", mode);
        return 1;
    }
    setenv("CQ_MOCK_FAIL", "", 1);
    {
        counter_fn live = mock_sym("cq_mock_live_allocations"), viol = mock_sym("cq_mock_violations");
        if (live) EXPECT(live() == 0, "%d device allocations leaked", live());
        if (viol) EXPECT(viol() == 0, "%d out-of-bounds device accesses", viol());
    }
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}

int main(int argc, char **argv)
{
    static const cqt_case cases[] = { CASE(parity_2d_f32), CASE(parity_2d_f64), CASE(parity_3d_f32), CASE(parity_3d_f64),
        CASE(reset_repeats_bitwise), CASE(failing_step_keeps_the_state), CASE(reads_between_steps_change_nothing),
        CASE(steps_move_no_fluid_arrays), CASE(lists_outgrow_their_room), CASE(a_step_reads_back_once), CASE(solves_as_they_come),
        CASE(static_boundary_sorted_once), CASE(no_device_memory_leaks_or_violations) };
    cq_world_desc d;
    cq_world *w = NULL;
    if (argc > 1 && !strncmp(argv[1], "fault:", 6)) return fault(argv[1] + 6);
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 1e-3; d.domain_hi[0] = d.domain_hi[1] = 0.2; d.backend = CQ_BACKEND_CUDA;
    d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) {
        printf("SKIP: no usable CUDA driver/device (%s)\n0 passed, 0 failed\n", cq_world_last_error(NULL));
        return 0;
    }
    cq_world_destroy(w);
    return cqt_run(cases, (int)(sizeof cases / sizeof cases[0]), argc, argv);
}
