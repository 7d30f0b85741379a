/* End-to-end gradients (DESIGN.md sec 6): for every variant (2D/3D x corotated/NeoHookean x
   f32/f64) the reverse pass against float64 central differences of whole rollouts, through a
   collision of two blocks on a friction floor, w.r.t. x0, v0, F0, C0, E, nu, mass, volume and
   per-step actuation; a running loss through the hook; checkpointed vs fully stored tapes;
   misuse of the reverse API. */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>

#define MAXN 128
#define STEPS 16
#define GROUPS 2

typedef struct run_cfg { int dim, mat, prec, ckpt, steps, bc; double friction; } run_cfg;

static int g_n;                       /* particle count of the scene */
static double g_x0[MAXN * 3], g_v0[MAXN * 3], g_wx[MAXN * 3], g_wv[MAXN * 3];
static int g_act[MAXN];
static double g_u[STEPS * 4][GROUPS * 9];   /* actuation schedule */

static double urand(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (*s >> 8) / 16777216.0; }

/* Two small blocks: A moves right and down into B and the floor (friction walls). */
static void build_scene(int dim)
{
    unsigned st = 12345;
    int per = dim == 2 ? 4 : 3, c = 0;
    for (int b = 0; b < 2; ++b)
        for (int i = 0; i < per; ++i)
            for (int j = 0; j < per; ++j)
                for (int k = 0; k < (dim == 3 ? per : 1); ++k) {
                    double *x = g_x0 + c * dim, *v = g_v0 + c * dim;
                    x[0] = (b ? 0.52 : 0.34) + i / 40.0;
                    x[1] = (b ? 0.17 : 0.24) + j / 40.0;
                    if (dim == 3) x[2] = 0.42 + k / 40.0;
                    for (int a = 0; a < dim; ++a) v[a] = 0.3 * (urand(&st) - 0.5);
                    v[0] += b ? 0 : 1.5; v[1] -= b ? 0.5 : 1.0;
                    g_act[c] = b ? 1 : 0;
                    ++c;
                }
    g_n = c;
    for (int i = 0; i < g_n * dim; ++i) { g_wx[i] = urand(&st) - 0.5; g_wv[i] = 0.1 * (urand(&st) - 0.5); }
    for (int n = 0; n < STEPS * 4; ++n)
        for (int a = 0; a < GROUPS * dim * dim; ++a) g_u[n][a] = 40 * (urand(&st) - 0.5);
}

typedef struct perturb { cq_field field; int idx; int step, act_idx; double h; } perturb;  /* field < 0: actuation */

typedef struct hook_data { int dim; double *act_grad; int running; } hook_data;

static void hook(cq_sim *s, int step, void *user)
{
    hook_data *hd = (hook_data *)user;
    if (hd->act_grad) CHECK_OK(cq_sim_actuation_grad(s, hd->act_grad + (long)step * GROUPS * hd->dim * hd->dim));
    if (hd->running) CHECK_OK(cq_sim_add_state_grad(s, CQ_FIELD_V, g_wv));   /* h(s_n) = <wv, v_n> */
}

/* Runs the scene; returns L = <wx, x_T> (+ sum_{n<T} <wv, v_n> when running).  With grads, also
   runs the reverse pass and fills grads[field] and act_grad[step][group*d*d]. */
static double rollout(const run_cfg *rc, const perturb *pt, int running, double **grads, double *act_grad, cq_sim **keep)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double L = 0, *buf = (double *)malloc(sizeof(double) * MAXN * 9);
    memset(&d, 0, sizeof d);
    d.dim = rc->dim; d.res[0] = d.res[1] = d.res[2] = 20; d.dx = 1.0 / 20; d.dt = 2.5e-4; d.substeps = 2;
    d.gravity[1] = -9.8; d.material = (cq_material)rc->mat; d.precision = (cq_precision)rc->prec;
    d.boundary = (cq_boundary)rc->bc; d.friction = rc->friction; d.checkpoint_every = rc->ckpt;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("    %s\n", cq_sim_last_error(NULL)); free(buf); return NAN; }
    memset(&p, 0, sizeof p);
    p.count = g_n; p.x = g_x0; p.v = g_v0; p.actuator = g_act; p.default_youngs = 3e3; p.default_poisson = 0.3;
    CHECK_OK(cq_sim_add_particles(s, &p));
    if (pt && (int)pt->field >= 0) {
        int k = cq_sim_field_size(s, pt->field);
        cq_sim_get(s, pt->field, buf);
        buf[pt->idx] += pt->h;
        (void)k;
        CHECK_OK(cq_sim_set(s, pt->field, buf));
    }
    for (int n = 0; n < rc->steps; ++n) {
        double u[GROUPS * 9];
        memcpy(u, g_u[n], sizeof u);
        if (pt && (int)pt->field < 0 && pt->step == n) u[pt->act_idx] += pt->h;
        CHECK_OK(cq_sim_set_actuation(s, GROUPS, u));
        if (running) {
            cq_sim_get(s, CQ_FIELD_V, buf);
            for (int i = 0; i < g_n * rc->dim; ++i) L += g_wv[i] * buf[i];
        }
        cq_result r = cq_sim_step(s, 1);
        if (r) { printf("    step: %s\n", cq_sim_last_error(s)); break; }
    }
    cq_sim_get(s, CQ_FIELD_X, buf);
    for (int i = 0; i < g_n * rc->dim; ++i) L += g_wx[i] * buf[i];
    if (grads) {
        hook_data hd;
        hd.dim = rc->dim; hd.act_grad = act_grad; hd.running = running;
        CHECK_OK(cq_sim_backward(s, g_wx, NULL, NULL, NULL, hook, &hd));
        for (int f = 0; f < 8; ++f) if (grads[f]) CHECK_OK(cq_sim_grad(s, (cq_field)f, grads[f]));
    }
    free(buf);
    if (keep) *keep = s; else cq_sim_destroy(s);
    return L;
}

static const char *FIELD[] = {"x", "v", "C", "F", "mass", "volume", "youngs", "poisson"};

/* Compares the reverse-mode gradient of variant rc with f64 central differences of the same
   scene, on a sample of entries per field and per-step actuation; returns the worst relative
   error (|adj - fd| / |fd| over the sampled vector of each field). */
static double check_variant(const run_cfg *rc, int running, double tol)
{
    static double gbuf[8][MAXN * 9], ag[STEPS * 4 * GROUPS * 9];
    double *grads[8], worst = 0;
    /* steps per field: C is O(1) and its gradient tiny, so a small h drowns in roundoff */
    const double hs[8] = {1e-6, 1e-6, 1e-3, 1e-6, 1e-9, 1e-9, 1e-2, 1e-5};
    const int dd = rc->dim * rc->dim;
    run_cfg fd = *rc;
    fd.prec = CQ_PRECISION_F64;
    for (int f = 0; f < 8; ++f) grads[f] = gbuf[f];
    rollout(rc, NULL, running, grads, ag, NULL);
    for (int f = -1; f < 8; ++f) {
        double num = 0, den = 0;
        for (int t = 0; t < 5; ++t) {
            perturb pt;
            double adj;
            memset(&pt, 0, sizeof pt);
            if (f < 0) {
                pt.field = (cq_field)-1; pt.step = (t * 5 + 1) % rc->steps; pt.act_idx = (t * 3) % (GROUPS * dd); pt.h = 1e-3;
                adj = ag[(long)pt.step * GROUPS * dd + pt.act_idx];
            } else {
                int k = f < 2 ? rc->dim : (f < 4 ? dd : 1);
                pt.field = (cq_field)f; pt.idx = (t * 37 + 11 * f + 3) % (g_n * k); pt.h = hs[f];
                adj = grads[f][pt.idx];
            }
            double Lp = rollout(&fd, &pt, running, NULL, NULL, NULL);
            pt.h = -pt.h;
            double Lm = rollout(&fd, &pt, running, NULL, NULL, NULL);
            double g = (Lp - Lm) / (-2 * pt.h);
            num += (adj - g) * (adj - g); den += g * g;
        }
        double rel = sqrt(num / (den > 0 ? den : 1));
        CHECK(rel < tol, "%dD %s f%d: d/d%s relative error %.3e (tol %.0e)", rc->dim, rc->mat == 1 ? "corotated" : "neohookean",
              rc->prec == 1 ? 32 : 64, f < 0 ? "actuation" : FIELD[f], rel, tol);
        if (rel > worst) worst = rel;
    }
    return worst;
}

TEST(end_to_end_gradients_all_variants)
{
    for (int dim = 2; dim <= 3; ++dim) {
        build_scene(dim);
        for (int mat = 1; mat <= 2; ++mat)
            for (int prec = 2; prec >= 1; --prec) {
                run_cfg rc = {dim, mat, prec, 5, STEPS, CQ_BOUNDARY_FRICTION, 0.4};
                double w = check_variant(&rc, 0, prec == 2 ? 1e-5 : 2e-3);
                printf("    %dD %-10s f%d: worst relative error %.2e over x0 v0 C0 F0 mass volume E nu actuation\n",
                       dim, mat == 1 ? "corotated" : "neohookean", prec == 1 ? 32 : 64, w);
            }
    }
}

TEST(gradients_under_each_wall_condition)
{
    build_scene(2);
    const int bcs[4] = {CQ_BOUNDARY_STICKY, CQ_BOUNDARY_SLIP, CQ_BOUNDARY_SEPARATE, CQ_BOUNDARY_FRICTION};
    for (int b = 0; b < 4; ++b) {
        run_cfg rc = {2, 2, 2, 4, STEPS, bcs[b], 1.5};
        double w = check_variant(&rc, 0, 1e-5);
        printf("    2D boundary %d: worst relative error %.2e\n", bcs[b], w);
    }
}

TEST(running_loss_through_the_hook)
{
    build_scene(2);
    run_cfg rc = {2, 1, 2, 3, STEPS, CQ_BOUNDARY_FRICTION, 0.4};
    double w = check_variant(&rc, 1, 1e-5);
    printf("    running loss: worst relative error %.2e\n", w);
}

TEST(long_horizon_with_walls)
{
    build_scene(2);
    run_cfg rc = {2, 2, 2, 16, STEPS * 4, CQ_BOUNDARY_FRICTION, 0.4};
    double w = check_variant(&rc, 0, 1e-4);
    printf("    %d steps: worst relative error %.2e\n", rc.steps, w);
}

TEST(checkpointed_and_fully_stored_tapes_agree_exactly)
{
    static double a[8][MAXN * 9], b[8][MAXN * 9], aa[STEPS * 4 * GROUPS * 9], ab[STEPS * 4 * GROUPS * 9];
    double *ga[8], *gb[8];
    for (int dim = 2; dim <= 3; ++dim) {
        build_scene(dim);
        for (int ck = 2; ck <= STEPS + 3; ck += 5) {
            run_cfg full = {dim, 1, 1, 1, STEPS, CQ_BOUNDARY_FRICTION, 0.4}, part = full;
            part.ckpt = ck;
            for (int f = 0; f < 8; ++f) { ga[f] = a[f]; gb[f] = b[f]; }
            memset(aa, 0, sizeof aa); memset(ab, 0, sizeof ab);
            rollout(&full, NULL, 1, ga, aa, NULL);
            rollout(&part, NULL, 1, gb, ab, NULL);
            for (int f = 0; f < 8; ++f)
                CHECK(memcmp(a[f], b[f], sizeof(double) * g_n * 9) == 0, "%dD checkpoint_every %d: d/d%s differs from the full tape", dim, ck, FIELD[f]);
            CHECK(memcmp(aa, ab, sizeof aa) == 0, "%dD checkpoint_every %d: actuation gradients differ", dim, ck);
        }
    }
}

TEST(tape_memory_grows_with_the_checkpoints)
{
    cq_sim *s1 = NULL, *s8 = NULL;
    build_scene(2);
    run_cfg r1 = {2, 1, 2, 1, STEPS * 4, CQ_BOUNDARY_FRICTION, 0.4}, r8 = r1;
    r8.ckpt = 8;
    rollout(&r1, NULL, 0, NULL, NULL, &s1);
    rollout(&r8, NULL, 0, NULL, NULL, &s8);
    size_t b1 = cq_sim_tape_bytes(s1), b8 = cq_sim_tape_bytes(s8);
    size_t state = (size_t)g_n * (2 * 2 + 2 * 4) * sizeof(double);
    CHECK(b1 >= (size_t)(STEPS * 4) * state, "every-step tape holds every state: %lu bytes", (unsigned long)b1);
    CHECK(b8 < b1 / 4, "checkpoint_every 8 keeps far less: %lu vs %lu bytes", (unsigned long)b8, (unsigned long)b1);
    cq_sim_destroy(s1); cq_sim_destroy(s8);
}

static void bad_hook(cq_sim *s, int step, void *user)
{
    double u[GROUPS * 4] = {0}, nan_g[MAXN * 3];
    (void)user;
    for (int i = 0; i < MAXN * 3; ++i) nan_g[i] = i == 5 ? NAN : 0;
    if (step != 0) return;
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_INVALID_STATE, "step inside a hook refused");
    CHECK(cq_sim_set_actuation(s, GROUPS, u) == CQ_ERROR_INVALID_STATE, "set_actuation inside a hook refused");
    CHECK(cq_sim_reset(s) == CQ_ERROR_INVALID_STATE, "reset inside a hook refused");
    CHECK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_INVALID_STATE, "nested backward refused");
    CHECK(cq_sim_add_state_grad(s, CQ_FIELD_X, nan_g) == CQ_ERROR_NON_FINITE, "NaN state gradient refused");
    CHECK(strstr(cq_sim_last_error(s), "particle 2") != NULL, "names the particle: %s", cq_sim_last_error(s));
}

TEST(reverse_api_misuse)
{
    cq_sim *s = NULL;
    double out[MAXN * 9], seed[MAXN * 3];
    build_scene(2);
    run_cfg none = {2, 1, 2, 0, 4, CQ_BOUNDARY_STICKY, 0};
    rollout(&none, NULL, 0, NULL, NULL, &s);
    CHECK(cq_sim_backward(s, g_wx, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_INVALID_STATE, "backward without a tape");
    CHECK(strstr(cq_sim_last_error(s), "checkpoint_every") != NULL, "says how to get a tape: %s", cq_sim_last_error(s));
    CHECK(cq_sim_grad(s, CQ_FIELD_V, out) == CQ_ERROR_INVALID_STATE, "grad before backward");
    CHECK(cq_sim_actuation_grad(s, out) == CQ_ERROR_INVALID_STATE, "actuation_grad outside a hook");
    CHECK(cq_sim_add_state_grad(s, CQ_FIELD_V, g_wv) == CQ_ERROR_INVALID_STATE, "add_state_grad outside a hook");
    cq_sim_destroy(s);
    run_cfg taped = {2, 1, 2, 2, 4, CQ_BOUNDARY_STICKY, 0};
    rollout(&taped, NULL, 0, NULL, NULL, &s);
    for (int i = 0; i < g_n * 2; ++i) seed[i] = i == 7 ? INFINITY : 1;
    CHECK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_NON_FINITE, "Inf seed refused");
    CHECK(strstr(cq_sim_last_error(s), "particle 3") != NULL, "names the particle: %s", cq_sim_last_error(s));
    CHECK_OK(cq_sim_backward(s, g_wx, NULL, NULL, NULL, bad_hook, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_V, out));
    CHECK(cq_sim_grad(s, (cq_field)42, out) == CQ_ERROR_INVALID_ARGUMENT, "unknown field");
    CHECK(cq_sim_step_count(s) == 4, "after backward the sim is still at step T");
    CHECK_OK(cq_sim_step(s, 1));
    CHECK(cq_sim_grad(s, CQ_FIELD_V, out) == CQ_ERROR_INVALID_STATE, "stepping clears the gradients");
    cq_sim_destroy(s);
}

/* ---------------------------------------------------------------- cables (Spielberg et al. 2021 eqs 16-17) */
typedef struct cable_run { double *ugrad; } cable_run;
static void cable_hook(cq_sim *s, int step, void *user)
{
    cable_run *cr = (cable_run *)user;
    CHECK_OK(cq_sim_cable_actuation_grad(s, cr->ugrad + 2 * step));
}

/* A 2D block with two cables along its top and bottom rows; loss <w, x_T>. */
static double cable_rollout(int pstep, int pc, double h, int field, int idx, double fh, double **grads, double *ugrad)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[2 * 48], w[2 * 48], buf[2 * 48], L = 0;
    int top[6], bot[6];
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 20; d.dx = 1.0 / 20; d.dt = 2.5e-4; d.substeps = 2; d.gravity[1] = -5;
    d.material = CQ_MATERIAL_NEOHOOKEAN; d.precision = CQ_PRECISION_F64; d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 0.5;
    d.checkpoint_every = 3;
    CHECK_OK(cq_sim_create(&d, &s));
    for (int i = 0; i < 48; ++i) { x[2 * i] = 0.35 + (i % 8) / 40.0; x[2 * i + 1] = 0.18 + (i / 8) / 40.0; w[2 * i] = 0.1 * ((i * 5) % 7 - 3); w[2 * i + 1] = 0.1 * ((i * 3) % 5 - 2); }
    memset(&p, 0, sizeof p);
    p.count = 48; p.x = x; p.default_youngs = 2e3; p.default_poisson = 0.3;
    CHECK_OK(cq_sim_add_particles(s, &p));
    for (int i = 0; i < 6; ++i) { top[i] = 40 + i + 1; bot[i] = i + 1; }
    CHECK_OK(cq_sim_add_cable(s, 6, top, 400.0, 0.125));
    CHECK_OK(cq_sim_add_cable(s, 6, bot, 300.0, 0.125));
    if (field >= 0) { cq_sim_get(s, (cq_field)field, buf); buf[idx] += fh; CHECK_OK(cq_sim_set(s, (cq_field)field, buf)); }
    for (int n = 0; n < 12; ++n) {
        double u[2] = {0.6 + 0.02 * n, 0.9 - 0.03 * n};
        if (n == pstep) u[pc] += h;
        CHECK_OK(cq_sim_set_cable_actuation(s, 2, u));
        CHECK_OK(cq_sim_step(s, 1));
    }
    cq_sim_get(s, CQ_FIELD_X, buf);
    for (int i = 0; i < 96; ++i) L += w[i] * buf[i];
    if (grads) {
        cable_run cr;
        cr.ugrad = ugrad;
        CHECK_OK(cq_sim_backward(s, w, NULL, NULL, NULL, cable_hook, &cr));
        for (int f = 0; f < 8; ++f) if (grads[f]) CHECK_OK(cq_sim_grad(s, (cq_field)f, grads[f]));
    }
    cq_sim_destroy(s);
    return L;
}

TEST(cable_actuation_gradients)
{
    static double g[8][2 * 48 * 2];
    double *grads[8], ug[2 * 12], num = 0, den = 0, numx = 0, denx = 0;
    for (int f = 0; f < 8; ++f) grads[f] = (f == 0 || f == 1 || f == 4) ? g[f] : NULL;
    cable_rollout(-1, 0, 0, -1, 0, 0, grads, ug);
    for (int t = 0; t < 6; ++t) {
        int n = (t * 5) % 12, c = t % 2;
        double fd = (cable_rollout(n, c, 1e-5, -1, 0, 0, NULL, NULL) - cable_rollout(n, c, -1e-5, -1, 0, 0, NULL, NULL)) / 2e-5;
        num += (fd - ug[2 * n + c]) * (fd - ug[2 * n + c]); den += fd * fd;
    }
    CHECK(den > 0 && sqrt(num / den) < 1e-5, "dL/du (cables) relative error %.3e (|fd| %.3e)", sqrt(num / (den > 0 ? den : 1)), sqrt(den));
    /* x0 and v0 of routed particles (the Hessian term), mass of a routed particle */
    const int fields[6] = {0, 0, 1, 1, 4, 4}, idxs[6] = {2 * 42, 2 * 3 + 1, 2 * 43 + 1, 2 * 2, 44, 3};
    const double hs[6] = {1e-6, 1e-6, 1e-6, 1e-6, 1e-7, 1e-7};   /* mass ~6e-4: 1e-9 would drown in roundoff */
    for (int t = 0; t < 6; ++t) {
        double fd = (cable_rollout(-1, 0, 0, fields[t], idxs[t], hs[t], NULL, NULL) - cable_rollout(-1, 0, 0, fields[t], idxs[t], -hs[t], NULL, NULL)) / (2 * hs[t]);
        double adj = g[fields[t]][idxs[t]], e = fabs(fd - adj) / fmax(fabs(fd), 1e-12);
        CHECK(e < 1e-5, "cable scene d/d%s[%d]: adjoint %.8e fd %.8e", FIELD[fields[t]], idxs[t], adj, fd);
        numx += e * e; denx += 1;
    }
    printf("    cables: dL/du relative error %.2e; x0/v0/mass %.2e\n", sqrt(num / den), sqrt(numx / denx));
}

TEST(cable_contracts_its_route_without_net_force)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[2 * 48], v[2 * 48], route[2];
    int top[8];
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 20; d.dx = 1.0 / 20; d.dt = 2.5e-4; d.substeps = 4;
    d.material = CQ_MATERIAL_NEOHOOKEAN; d.precision = CQ_PRECISION_F64;
    for (int run = 0; run < 2; ++run) {
        CHECK_OK(cq_sim_create(&d, &s));
        for (int i = 0; i < 48; ++i) { x[2 * i] = 0.35 + (i % 8) / 40.0; x[2 * i + 1] = 0.4 + (i / 8) / 40.0; }
        memset(&p, 0, sizeof p);
        p.count = 48; p.x = x; p.default_youngs = 2e3; p.default_poisson = 0.3;
        CHECK_OK(cq_sim_add_particles(s, &p));
        for (int i = 0; i < 8; ++i) top[i] = 40 + i;
        CHECK_OK(cq_sim_add_cable(s, 8, top, 500.0, 7 / 40.0));
        CHECK(cq_sim_cable_count(s) == 1, "one cable");
        { double u = run ? 0.5 : 1.0; CHECK_OK(cq_sim_set_cable_actuation(s, 1, &u)); }
        CHECK_OK(cq_sim_step(s, 30));
        cq_sim_get(s, CQ_FIELD_X, x);
        cq_sim_get(s, CQ_FIELD_V, v);
        route[run] = x[2 * 47] - x[2 * 40];
        double P[2] = {0, 0};
        for (int i = 0; i < 48; ++i) { P[0] += v[2 * i]; P[1] += v[2 * i + 1]; }
        CHECK(fabs(P[0]) < 1e-9 && fabs(P[1]) < 1e-9, "run %d: cable forces are internal: momentum (%g, %g)", run, P[0], P[1]);
        cq_sim_destroy(s);
    }
    CHECK(fabs(route[0] - 7 / 40.0) < 1e-9, "u = 1: the cable is slack at its rest length (route %g)", route[0]);
    CHECK(route[1] < route[0] - 0.005, "u = 0.5 reels the route in: %g vs %g", route[1], route[0]);
}

TEST(cable_bad_input)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[4] = {0.4, 0.4, 0.45, 0.4}, u[2] = {0.5, NAN};
    int ok[2] = {0, 1}, bad[2] = {0, 7};
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 20; d.dx = 1.0 / 20; d.dt = 1e-4; d.checkpoint_every = 1;
    CHECK_OK(cq_sim_create(&d, &s));
    memset(&p, 0, sizeof p);
    p.count = 2; p.x = x;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_add_cable(s, 2, bad, 1, 0.1) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_sim_last_error(s), "particles[1] = 7"),
          "cable through a missing particle: %s", cq_sim_last_error(s));
    CHECK(cq_sim_add_cable(s, 1, ok, 1, 0.1) == CQ_ERROR_INVALID_ARGUMENT, "a one-particle cable");
    CHECK(cq_sim_add_cable(s, 2, ok, -1, 0.1) == CQ_ERROR_INVALID_ARGUMENT, "negative stiffness");
    CHECK(cq_sim_add_cable(s, 2, ok, 1, NAN) == CQ_ERROR_INVALID_ARGUMENT, "NaN rest length");
    CHECK(cq_sim_cable_count(s) == 0, "nothing added");
    CHECK_OK(cq_sim_add_cable(s, 2, ok, 1, 0.1));
    CHECK(cq_sim_set_cable_actuation(s, 2, u) == CQ_ERROR_INVALID_ARGUMENT, "wrong cable count");
    CHECK(cq_sim_set_cable_actuation(s, 1, u + 1) == CQ_ERROR_NON_FINITE, "NaN actuation");
    CHECK(cq_sim_cable_actuation_grad(s, u) == CQ_ERROR_INVALID_STATE, "grad outside a hook");
    CHECK_OK(cq_sim_step(s, 1));
    CHECK(cq_sim_add_cable(s, 2, ok, 1, 0.1) == CQ_ERROR_INVALID_STATE, "cable after step 0");
    cq_sim_destroy(s);
}

RUN_TESTS(CASE(end_to_end_gradients_all_variants), CASE(gradients_under_each_wall_condition),
          CASE(running_loss_through_the_hook), CASE(long_horizon_with_walls),
          CASE(checkpointed_and_fully_stored_tapes_agree_exactly), CASE(tape_memory_grows_with_the_checkpoints),
          CASE(reverse_api_misuse), CASE(cable_actuation_gradients), CASE(cable_contracts_its_route_without_net_force),
          CASE(cable_bad_input))
