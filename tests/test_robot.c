/* chainqueen_robot.h: every VJP (actuator map, centroid observer, MLP w.r.t. params and input,
   open loop, custom callbacks) against float64 central differences; the whole closed-loop
   rollout's dL/dparams (and design gradients dL/dE, dL/dmass) against central differences of
   whole rollouts on a 2D f64 sim, including a check that dropping the observer term is caught;
   the optimizers (Adam bias correction, box bounds, momentum GD); a tiny robot optimisation; and
   bad input. */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#include "harness.h"
#include <stdlib.h>

static double urand(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (*s >> 8) / 16777216.0; }

/* relative error |a - b| / |b| over vectors (b = finite differences) */
static double rel_err(const double *a, const double *b, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; ++i) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return sqrt(num / (den > 0 ? den : 1));
}

/* ------------------------------------------------------------------------ actuators */
TEST(actuator_map_and_vjp_match_finite_differences)
{
    for (int dim = 2; dim <= 3; ++dim) {
        cq_robot_actuator_desc ad[5];
        cq_robot_actuators *act = NULL;
        unsigned st = 7;
        double a[64], w[5 * 9], s[5 * 9], ga[64], fd[64];
        memset(ad, 0, sizeof ad);
        ad[0].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].max_stress = 2.0;                       /* all axes */
        ad[1].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[1].max_stress = 3.0; ad[1].axis_mask = 2;  /* y only   */
        ad[2].kind = CQ_ROBOT_ACTUATOR_NONE;
        ad[3].kind = CQ_ROBOT_ACTUATOR_ISOTROPIC; ad[3].max_stress = 1.5;
        ad[4].kind = CQ_ROBOT_ACTUATOR_FULL; ad[4].max_stress = 0.5;
        CHECK_OK(cq_robot_actuators_create(dim, 5, ad, &act));
        if (!act) continue;
        const int A = cq_robot_actuators_signals(act), dd = dim * dim;
        CHECK(A == dim + 1 + 0 + 1 + dd, "%dD: %d signals", dim, A);
        CHECK(cq_robot_actuators_groups(act) == 5, "groups");
        for (int i = 0; i < A; ++i) a[i] = 1.8 * (urand(&st) - 0.5);
        for (int i = 0; i < 5 * dd; ++i) w[i] = urand(&st) - 0.5;
        /* the documented layout: group 1 (y only) is one signal driving sigma_yy */
        CHECK_OK(cq_robot_actuators_stress(act, a, s));
        CHECK(s[dd + dim + 1] == 3.0 * a[dim] && s[dd] == 0, "pressure y-only layout");
        CHECK(s[2 * dd] == 0 && s[3 * dd] == 1.5 * a[dim + 1] && s[3 * dd + 1] == 0, "none / isotropic layout");
        CHECK_OK(cq_robot_actuators_vjp(act, a, w, ga));
        for (int i = 0; i < A; ++i) {
            double h = 1e-6, lp = 0, lm = 0, keep = a[i];
            a[i] = keep + h; cq_robot_actuators_stress(act, a, s); for (int j = 0; j < 5 * dd; ++j) lp += w[j] * s[j];
            a[i] = keep - h; cq_robot_actuators_stress(act, a, s); for (int j = 0; j < 5 * dd; ++j) lm += w[j] * s[j];
            a[i] = keep;
            fd[i] = (lp - lm) / (2 * h);
        }
        double e = rel_err(ga, fd, A);
        CHECK(e < 1e-8, "%dD actuator VJP relative error %.2e", dim, e);
        printf("    %dD actuator map: %d signals, VJP relative error %.2e\n", dim, A, e);
        /* clamping: |a| > 1 saturates with zero gradient */
        a[0] = 1.7; a[1] = -3;
        CHECK_OK(cq_robot_actuators_stress(act, a, s));
        CHECK(s[0] == 2.0 && s[dim + 1] == -2.0, "clamped stress %g %g", s[0], s[dim + 1]);
        CHECK_OK(cq_robot_actuators_vjp(act, a, w, ga));
        CHECK(ga[0] == 0 && ga[1] == 0, "clamped gradient %g %g", ga[0], ga[1]);
        cq_robot_actuators_destroy(act);
    }
}

/* ------------------------------------------------------------------------ observer */
TEST(centroid_observer_and_vjp_match_finite_differences)
{
    for (int dim = 2; dim <= 3; ++dim) {
        enum { N = 23, G = 3 };
        int grp[N];
        double x[N * 3], v[N * 3], w[G * 6], o[G * 6], gx[N * 3], gv[N * 3], fdx[N * 3], fdv[N * 3];
        unsigned st = 99;
        cq_robot_observer *ob = NULL;
        for (int p = 0; p < N; ++p) grp[p] = p % 5 == 4 ? -1 : p % G;
        for (int i = 0; i < N * dim; ++i) { x[i] = urand(&st); v[i] = urand(&st) - 0.5; }
        CHECK_OK(cq_robot_observer_create_centroid(dim, N, grp, G, &ob));
        if (!ob) continue;
        const int O = cq_robot_observer_size(ob);
        CHECK(O == G * 2 * dim, "size %d", O);
        for (int i = 0; i < O; ++i) w[i] = urand(&st) - 0.5;
        CHECK_OK(cq_robot_observer_observe(ob, x, v, o));
        { /* group 1's mean x by hand */
            double m = 0; int c = 0;
            for (int p = 0; p < N; ++p) if (grp[p] == 1) { m += x[p * dim]; ++c; }
            CHECK(fabs(o[2 * dim] - m / c) < 1e-15, "mean x of group 1: %g vs %g", o[2 * dim], m / c);
        }
        CHECK_OK(cq_robot_observer_vjp(ob, w, gx, gv));
        for (int f = 0; f < 2; ++f)
            for (int i = 0; i < N * dim; ++i) {
                double *arr = f ? v : x, keep = arr[i], h = 1e-6, lp = 0, lm = 0;
                arr[i] = keep + h; cq_robot_observer_observe(ob, x, v, o); for (int j = 0; j < O; ++j) lp += w[j] * o[j];
                arr[i] = keep - h; cq_robot_observer_observe(ob, x, v, o); for (int j = 0; j < O; ++j) lm += w[j] * o[j];
                arr[i] = keep;
                (f ? fdv : fdx)[i] = (lp - lm) / (2 * h);
            }
        double ex = rel_err(gx, fdx, N * dim), ev = rel_err(gv, fdv, N * dim);
        CHECK(ex < 1e-8 && ev < 1e-8, "%dD observer VJP relative error x %.2e v %.2e", dim, ex, ev);
        printf("    %dD centroid observer (%d groups): VJP relative error x %.2e, v %.2e\n", dim, G, ex, ev);
        cq_robot_observer_destroy(ob);
    }
}

/* ------------------------------------------------------------------------ controllers */
static double ctrl_loss(const cq_robot_controller *c, int step, const double *p, const double *obs, const double *w)
{
    double a[16], L = 0;
    cq_robot_controller_forward(c, step, p, obs, a);
    for (int i = 0; i < cq_robot_controller_outputs(c); ++i) L += w[i] * a[i];
    return L;
}

/* dL/dparams and dL/dobs of L = <w, a(step, p, obs)> against central differences */
static void check_controller_vjp(const cq_robot_controller *c, int step, double *p, double *obs, const char *name)
{
    const int P = cq_robot_controller_params(c), I = cq_robot_controller_inputs(c), A = cq_robot_controller_outputs(c);
    double *gp = (double *)calloc((size_t)P + 1, sizeof(double)), *fp = (double *)calloc((size_t)P + 1, sizeof(double));
    double go[32], fo[32], w[16];
    unsigned st = 5;
    for (int i = 0; i < A; ++i) w[i] = urand(&st) - 0.5;
    for (int i = 0; i < P; ++i) gp[i] = 0.25;          /* the VJP accumulates: start from 0.25 */
    CHECK_OK(cq_robot_controller_vjp(c, step, p, obs, w, gp, I ? go : NULL));
    for (int i = 0; i < P; ++i) gp[i] -= 0.25;
    for (int i = 0; i < P; ++i) {
        double keep = p[i], h = 1e-6, lp, lm;
        p[i] = keep + h; lp = ctrl_loss(c, step, p, obs, w);
        p[i] = keep - h; lm = ctrl_loss(c, step, p, obs, w);
        p[i] = keep; fp[i] = (lp - lm) / (2 * h);
    }
    for (int i = 0; i < I; ++i) {
        double keep = obs[i], h = 1e-6, lp, lm;
        obs[i] = keep + h; lp = ctrl_loss(c, step, p, obs, w);
        obs[i] = keep - h; lm = ctrl_loss(c, step, p, obs, w);
        obs[i] = keep; fo[i] = (lp - lm) / (2 * h);
    }
    double ep = rel_err(gp, fp, P), eo = I ? rel_err(go, fo, I) : 0;
    CHECK(ep < 1e-7 && eo < 1e-7, "%s: VJP relative error params %.2e obs %.2e", name, ep, eo);
    printf("    %-26s %4d params, %2d inputs: VJP relative error params %.2e, input %.2e\n", name, P, I, ep, eo);
    free(gp); free(fp);
}

/* a custom controller: a = tanh(M obs + params[step]), M fixed, to test the callback wiring */
typedef struct lin_ctrl { int I, A; double M[32]; } lin_ctrl;
static cq_result lin_fwd(int step, const double *p, const double *obs, double *a, void *user)
{
    lin_ctrl *lc = (lin_ctrl *)user;
    for (int r = 0; r < lc->A; ++r) {
        double z = p[(step % 3) * lc->A + r];
        for (int q = 0; q < lc->I; ++q) z += lc->M[r * lc->I + q] * obs[q];
        a[r] = tanh(z);
    }
    return CQ_SUCCESS;
}
static cq_result lin_vjp(int step, const double *p, const double *obs, const double *ga, double *gp, double *gobs, void *user)
{
    lin_ctrl *lc = (lin_ctrl *)user;
    double a[16];
    lin_fwd(step, p, obs, a, user);
    if (gobs) for (int q = 0; q < lc->I; ++q) gobs[q] = 0;
    for (int r = 0; r < lc->A; ++r) {
        double gz = ga[r] * (1 - a[r] * a[r]);
        gp[(step % 3) * lc->A + r] += gz;
        if (gobs) for (int q = 0; q < lc->I; ++q) gobs[q] += lc->M[r * lc->I + q] * gz;
    }
    return CQ_SUCCESS;
}
static cq_result lin_fail(int step, const double *p, const double *obs, double *a, void *user)
{
    (void)step; (void)p; (void)obs; (void)a; (void)user;
    return CQ_ERROR_INVALID_STATE;
}

TEST(controllers_vjp_match_finite_differences)
{
    unsigned st = 3;
    double p[512], obs[16];
    int hidden[2] = {7, 5};
    double off[6], sc[6];
    cq_robot_controller *c = NULL;
    for (int i = 0; i < 6; ++i) { off[i] = 0.1 * i; sc[i] = 1 + 0.5 * i; obs[i] = urand(&st) - 0.5; }
    /* MLP, 2 hidden layers, 2 phase harmonics, input normalisation */
    cq_robot_mlp_desc md;
    memset(&md, 0, sizeof md);
    md.inputs = 6; md.outputs = 4; md.layers = 2; md.hidden = hidden; md.phase_harmonics = 2; md.omega = 0.3;
    md.input_offset = off; md.input_scale = sc; md.seed = 11; md.init_gain = 1.3;
    CHECK_OK(cq_robot_controller_create_mlp(&md, &c));
    if (c) {
        const int P = cq_robot_controller_params(c);
        CHECK(P == (10 + 1) * 7 + (7 + 1) * 5 + (5 + 1) * 4, "MLP params %d", P);
        CHECK_OK(cq_robot_controller_init_params(c, p));
        for (int i = 0; i < P; ++i) p[i] += 0.1 * (urand(&st) - 0.5);   /* non-zero biases too */
        check_controller_vjp(c, 5, p, obs, "MLP 6+4 -> 7 -> 5 -> 4");
        { /* deterministic seeded init */
            double q1[512], q2[512];
            cq_robot_controller *c2 = NULL;
            md.seed = 12;
            CHECK_OK(cq_robot_controller_create_mlp(&md, &c2));
            CHECK_OK(cq_robot_controller_init_params(c, q1));
            CHECK_OK(cq_robot_controller_init_params(c, q2));
            CHECK(memcmp(q1, q2, sizeof(double) * P) == 0, "same seed, same params");
            if (c2) CHECK_OK(cq_robot_controller_init_params(c2, q2));
            CHECK(memcmp(q1, q2, sizeof(double) * P) != 0, "different seed, different params");
            CHECK(q1[0] != 0 && fabs(q1[0]) <= 1.3 * sqrt(6.0 / 17) && q1[70] == 0, "Xavier weights, zero biases");
            cq_robot_controller_destroy(c2);
        }
        cq_robot_controller_destroy(c);
    }
    /* the documented layout: no hidden layer, a = tanh(W u + b), u = [obs, sin, cos] */
    {
        double W[2 * 4 + 2], a[2], u[4];
        md.inputs = 2; md.outputs = 2; md.layers = 0; md.phase_harmonics = 1; md.omega = 0.7;
        md.input_offset = NULL; md.input_scale = NULL;
        c = NULL;
        CHECK_OK(cq_robot_controller_create_mlp(&md, &c));
        for (int i = 0; i < 10; ++i) W[i] = 0.1 * (i + 1) * (i % 2 ? -1 : 1);
        obs[0] = 0.3; obs[1] = -0.2;
        u[0] = 0.3; u[1] = -0.2; u[2] = sin(0.7 * 3); u[3] = cos(0.7 * 3);
        CHECK_OK(cq_robot_controller_forward(c, 3, W, obs, a));
        for (int r = 0; r < 2; ++r) {
            double z = W[8 + r];
            for (int q = 0; q < 4; ++q) z += W[r * 4 + q] * u[q];
            CHECK(fabs(a[r] - tanh(z)) < 1e-15, "layout output %d: %g vs %g", r, a[r], tanh(z));
        }
        check_controller_vjp(c, 3, W, obs, "MLP 2+2 -> 2 (no hidden)");
        cq_robot_controller_destroy(c);
    }
    /* open loop */
    c = NULL;
    CHECK_OK(cq_robot_controller_create_open_loop(10, 3, &c));
    if (c) {
        CHECK(cq_robot_controller_params(c) == 30 && cq_robot_controller_inputs(c) == 0, "open loop sizes");
        for (int i = 0; i < 30; ++i) p[i] = urand(&st) - 0.5;
        check_controller_vjp(c, 7, p, NULL, "open loop 10 x 3");
        CHECK(cq_robot_controller_forward(c, 10, p, NULL, obs) == CQ_ERROR_INVALID_ARGUMENT, "step past the horizon");
        cq_robot_controller_destroy(c);
    }
    /* callbacks */
    {
        lin_ctrl lc;
        cq_robot_controller_callbacks cb;
        lc.I = 4; lc.A = 3;
        for (int i = 0; i < 12; ++i) lc.M[i] = urand(&st) - 0.5;
        memset(&cb, 0, sizeof cb);
        cb.inputs = 4; cb.outputs = 3; cb.params = 9; cb.forward = lin_fwd; cb.vjp = lin_vjp; cb.user = &lc;
        c = NULL;
        CHECK_OK(cq_robot_controller_create_custom(&cb, &c));
        for (int i = 0; i < 9; ++i) p[i] = urand(&st) - 0.5;
        for (int i = 0; i < 4; ++i) obs[i] = urand(&st) - 0.5;
        if (c) check_controller_vjp(c, 4, p, obs, "custom callbacks");
        CHECK_OK(cq_robot_controller_init_params(c, p));
        CHECK(p[0] == 0 && p[8] == 0, "custom without init: zeros");
        cq_robot_controller_destroy(c);
        cb.forward = lin_fail; c = NULL;
        CHECK_OK(cq_robot_controller_create_custom(&cb, &c));
        CHECK(cq_robot_controller_forward(c, 0, p, obs, obs + 8) == CQ_ERROR_INVALID_STATE, "callback error passed on");
        CHECK(strstr(cq_robot_last_error(c), "forward callback") != NULL, "message: %s", cq_robot_last_error(c));
        cq_robot_controller_destroy(c);
    }
}

/* ------------------------------------------------------------------------ rollout */
#define RN 40                 /* particles of the 2D block (8 x 5); the 3D block has 36 (4 x 3 x 3) */
#define RSTEPS 14
static int r_n, r_dim;
static double r_x0[RN * 3], r_wx[RN * 3], r_wv[RN * 3];
static int r_grp[RN];

/* A soft block resting on a friction floor, left and right halves are actuator groups 0 and 1. */
static cq_sim *make_block(int dim, int ckpt, int prec)
{
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *s = NULL;
    unsigned st = 4242;
    const int nx = dim == 2 ? 8 : 4, ny = dim == 2 ? 5 : 3, nz = dim == 2 ? 1 : 3;
    const double h = dim == 2 ? 0.025 : 1.0 / 24;
    r_dim = dim; r_n = nx * ny * nz;
    for (int p = 0; p < r_n; ++p) {
        int i = p % nx, j = (p / nx) % ny, k = p / (nx * ny);
        double *x = r_x0 + p * dim;
        x[0] = (dim == 2 ? 0.35 : 0.4) + i * h + 0.002 * (urand(&st) - 0.5);
        x[1] = (dim == 2 ? 0.165 : 0.27) + j * h;
        if (dim == 3) x[2] = 0.42 + k * h;
        r_grp[p] = i < nx / 2 ? 0 : 1;
        for (int a = 0; a < dim; ++a) {
            r_wx[p * dim + a] = (a == 0 ? 1.0 / r_n : 0) + 0.3 * (urand(&st) - 0.5);
            r_wv[p * dim + a] = 0.05 * (urand(&st) - 0.5);
        }
    }
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = dim == 2 ? 20 : 12; d.dx = 1.0 / d.res[0]; d.dt = 2.5e-4; d.substeps = 4;
    d.gravity[1] = -9.8; d.precision = (cq_precision)prec; d.material = CQ_MATERIAL_NEOHOOKEAN;
    d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 0.4; d.checkpoint_every = ckpt;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("    %s\n", cq_sim_last_error(NULL)); return NULL; }
    memset(&pd, 0, sizeof pd);
    pd.count = r_n; pd.x = r_x0; pd.actuator = r_grp; pd.default_youngs = 3e3; pd.default_poisson = 0.3;
    CHECK_OK(cq_sim_add_particles(s, &pd));
    return s;
}
static cq_sim *make_block_sim(int ckpt) { return make_block(2, ckpt, CQ_PRECISION_F64); }

/* g(s_T) = <wx, x_T> + <wv, v_T> */
static double final_lin(const cq_robot_state *s, double *gx, double *gv, void *user)
{
    double L = 0;
    (void)user;
    for (int i = 0; i < s->particles * s->dim; ++i) {
        L += r_wx[i] * s->x[i] + r_wv[i] * s->v[i];
        gx[i] = r_wx[i]; gv[i] = r_wv[i];
    }
    return L;
}
/* h(s_n, a_n) = 0.3 sum |v|^2 + 0.01 sum a^3 + 0.2 a_0 mean_y */
static double running_test(const cq_robot_state *s, const double *a, double *ga, double *gx, double *gv, void *user)
{
    double L = 0, my = 0;
    (void)user;
    for (int p = 0; p < s->particles; ++p) my += s->x[p * s->dim + 1] / s->particles;
    for (int i = 0; i < s->particles * s->dim; ++i) { L += 0.3 * s->v[i] * s->v[i]; if (gv) gv[i] = 0.6 * s->v[i]; }
    for (int i = 0; i < s->signals; ++i) { L += 0.01 * a[i] * a[i] * a[i]; if (ga) ga[i] = 0.03 * a[i] * a[i]; }
    L += 0.2 * a[0] * my;
    if (ga) ga[0] += 0.2 * my;
    if (gx) for (int p = 0; p < s->particles; ++p) gx[p * s->dim + 1] = 0.2 * a[0] / s->particles;
    return L;
}

/* a custom observer that observes like the centroid one but drops its VJP: must be caught */
static cq_result obs_fwd_wrap(const cq_sim *sim, double *obs, void *user)
{
    return cq_robot_observer_observe_sim((const cq_robot_observer *)user, sim, obs);
}
static cq_result obs_vjp_drop(cq_sim *sim, const double *g, void *user) { (void)sim; (void)g; (void)user; return CQ_SUCCESS; }
static cq_result obs_vjp_full(cq_sim *sim, const double *g, void *user)
{
    return cq_robot_observer_vjp_sim((const cq_robot_observer *)user, sim, g);
}

static double roll_loss(cq_sim *s, cq_robot_rollout_desc rd, const double *E)
{
    cq_robot_rollout_out ro;
    memset(&ro, 0, sizeof ro);
    rd.forward_only = 1; rd.reset = 0;
    cq_sim_reset(s);
    CHECK_OK(cq_sim_set(s, CQ_FIELD_YOUNGS, E));
    if (cq_robot_rollout(s, &rd, &ro) != CQ_SUCCESS) { printf("    %s\n", ro.error); return NAN; }
    return ro.loss;
}

/* The closed loop (centroid observer -> MLP with phase features -> pressure actuators) on the
   block of make_block(dim, prec): dL/dparams of the whole rollout (final + running loss + action
   penalty) against f64 central differences over every parameter; with `extras` also the design
   gradients dL/dE and dL/dmass, the observer term's share and tape independence.  Returns the
   relative error of dL/dparams. */
static double closed_loop_case(int dim, int prec, int extras, double tol)
{
    cq_sim *s = make_block(dim, 4, prec), *sf = make_block(dim, 4, CQ_PRECISION_F64);   /* sf: finite differences */
    cq_robot_actuators *act = NULL;
    cq_robot_observer *ob = NULL, *ob_drop = NULL, *ob_full = NULL;
    cq_robot_controller *c = NULL;
    cq_robot_actuator_desc ad[2];
    int hidden[1] = {6};
    const int O = 2 * 2 * dim, N = r_n, steps = dim == 2 ? RSTEPS : 10;
    double off[12], sc[12], E[RN], gE[RN], gm[RN], gx0[RN * 3], ep = 1e9;
    if (!s || !sf) { cq_sim_destroy(s); cq_sim_destroy(sf); return ep; }
    memset(ad, 0, sizeof ad);
    ad[0].kind = ad[1].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].max_stress = ad[1].max_stress = 80;
    CHECK_OK(cq_robot_actuators_create(dim, 2, ad, &act));
    CHECK_OK(cq_robot_observer_create_centroid(dim, N, r_grp, 2, &ob));
    if (!act || !ob) return ep;
    CHECK_OK(cq_robot_observer_observe_sim(ob, sf, off));         /* normalise around s_0 */
    for (int i = 0; i < O; ++i) sc[i] = (i % (2 * dim)) < dim ? 60 : 3;
    cq_robot_mlp_desc md;
    memset(&md, 0, sizeof md);
    md.inputs = O; md.outputs = 2 * dim; md.layers = 1; md.hidden = hidden; md.phase_harmonics = 1; md.omega = 0.6;
    md.input_offset = off; md.input_scale = sc; md.seed = 3; md.init_gain = 1.5;
    CHECK_OK(cq_robot_controller_create_mlp(&md, &c));
    if (!c) return ep;
    const int P = cq_robot_controller_params(c);
    double *p = (double *)malloc(sizeof(double) * P), *g = (double *)malloc(sizeof(double) * P);
    double *fd = (double *)malloc(sizeof(double) * P), *g2 = (double *)malloc(sizeof(double) * P);
    double acts[RSTEPS * 6];
    CHECK_OK(cq_robot_controller_init_params(c, p));
    for (int i = 0; i < N; ++i) E[i] = 3e3;

    cq_robot_rollout_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.steps = steps; rd.controller = c; rd.params = p; rd.observer = ob; rd.actuators = act;
    rd.final_loss = final_lin; rd.running_loss = running_test; rd.action_penalty = 0.05; rd.reset = 1;
    cq_robot_rollout_out ro;
    memset(&ro, 0, sizeof ro);
    ro.grad_params = g; ro.grad_youngs = gE; ro.grad_mass = gm; ro.grad_x0 = gx0; ro.actions = acts;
    cq_result r = cq_robot_rollout(s, &rd, &ro);
    CHECK(r == CQ_SUCCESS, "rollout: %s", ro.error);
    CHECK(cq_sim_step_count(s) == steps, "sim left at step T");
    {
        double amax = 0;
        for (int i = 0; i < steps * 2 * dim; ++i) if (fabs(acts[i]) > amax) amax = fabs(acts[i]);
        CHECK(amax > 0.2 && amax < 1, "actions in use and unclamped (max |a| %.3f)", amax);
    }
    if (prec == CQ_PRECISION_F64)
        CHECK(fabs(roll_loss(s, rd, E) - ro.loss) < 1e-13 * (1 + fabs(ro.loss)), "forward_only loss matches");
    /* dL/dparams, every parameter */
    for (int i = 0; i < P; ++i) {
        double keep = p[i], h = 1e-6, lp, lm;
        p[i] = keep + h; lp = roll_loss(sf, rd, E);
        p[i] = keep - h; lm = roll_loss(sf, rd, E);
        p[i] = keep; fd[i] = (lp - lm) / (2 * h);
    }
    ep = rel_err(g, fd, P);
    CHECK(ep < tol, "%dD f%d closed-loop dL/dparams relative error %.3e (tol %.0e)", dim, prec == 1 ? 32 : 64, ep, tol);
    printf("    %dD f%d closed loop (%d params, %d steps): dL/dparams relative error %.2e\n", dim, prec == 1 ? 32 : 64, P,
           steps, ep);
    if (extras) {
        /* design gradients: dL/dE (5 particles), dL/dmass (3) */
        double ge[8], fe[8];
        for (int t = 0; t < 5; ++t) {
            int q = (t * 9 + 2) % N;
            double lp, lm, keep = E[q], h = 1e-2;
            E[q] = keep + h; lp = roll_loss(sf, rd, E);
            E[q] = keep - h; lm = roll_loss(sf, rd, E);
            E[q] = keep; fe[t] = (lp - lm) / (2 * h); ge[t] = gE[q];
        }
        double eE = rel_err(ge, fe, 5);
        CHECK(eE < 1e-5, "dL/dE relative error %.3e", eE);
        {
            double m[RN], mb[RN];
            cq_sim_reset(sf);
            cq_sim_get(sf, CQ_FIELD_MASS, mb);
            for (int t = 0; t < 3; ++t) {
                int q = (t * 13 + 5) % N;
                double lp, lm, h = 1e-9;
                memcpy(m, mb, sizeof m); m[q] += h; cq_sim_reset(sf); CHECK_OK(cq_sim_set(sf, CQ_FIELD_MASS, m)); lp = roll_loss(sf, rd, E);
                memcpy(m, mb, sizeof m); m[q] -= h; cq_sim_reset(sf); CHECK_OK(cq_sim_set(sf, CQ_FIELD_MASS, m)); lm = roll_loss(sf, rd, E);
                fe[t] = (lp - lm) / (2 * h); ge[t] = gm[q];
            }
            cq_sim_reset(sf);
            CHECK_OK(cq_sim_set(sf, CQ_FIELD_MASS, mb));
        }
        double eM = rel_err(ge, fe, 3);
        CHECK(eM < 1e-4, "dL/dmass relative error %.3e", eM);
        printf("    design gradients: dL/dE relative error %.2e, dL/dmass %.2e\n", eE, eM);

        /* the observer term matters: without its VJP the gradient is visibly wrong; via the
           custom-observer callbacks with the full VJP it is right again */
        cq_robot_observer_callbacks cb;
        memset(&cb, 0, sizeof cb);
        cb.size = O; cb.observe = obs_fwd_wrap; cb.vjp = obs_vjp_drop; cb.user = ob;
        CHECK_OK(cq_robot_observer_create_custom(&cb, &ob_drop));
        cb.vjp = obs_vjp_full;
        CHECK_OK(cq_robot_observer_create_custom(&cb, &ob_full));
        rd.observer = ob_drop;
        ro.grad_youngs = ro.grad_mass = ro.grad_x0 = NULL; ro.actions = NULL; ro.grad_params = g2;
        CHECK_OK(cq_robot_rollout(s, &rd, &ro));
        double edrop = rel_err(g2, fd, P);
        CHECK(edrop > 1e-2, "dropping the observer VJP changes dL/dparams by only %.3e", edrop);
        rd.observer = ob_full;
        CHECK_OK(cq_robot_rollout(s, &rd, &ro));
        double efull = rel_err(g2, fd, P);
        CHECK(efull < tol, "custom observer with full VJP: %.3e", efull);
        printf("    without the observer term the error would be %.2e (custom observer with VJP: %.2e)\n", edrop, efull);

        /* the tape layout does not matter: checkpoint_every 1 gives the same gradient */
        {
            cq_sim *s1 = make_block(dim, 1, prec);
            rd.observer = ob;
            if (s1) {
                CHECK_OK(cq_robot_rollout(s1, &rd, &ro));
                CHECK(rel_err(g2, g, P) < 1e-12, "checkpoint 1 vs 4: %.3e", rel_err(g2, g, P));
            }
            cq_sim_destroy(s1);
        }
    }
    free(p); free(g); free(fd); free(g2);
    cq_robot_observer_destroy(ob_drop); cq_robot_observer_destroy(ob_full);
    cq_robot_controller_destroy(c); cq_robot_observer_destroy(ob); cq_robot_actuators_destroy(act);
    cq_sim_destroy(s); cq_sim_destroy(sf);
    return ep;
}

TEST(rollout_gradient_matches_finite_differences_of_whole_rollouts)
{
    closed_loop_case(2, CQ_PRECISION_F64, 1, 1e-5);
    closed_loop_case(3, CQ_PRECISION_F64, 0, 1e-5);
    closed_loop_case(2, CQ_PRECISION_F32, 0, 2e-3);   /* f32 adjoint vs f64 differences */
}

TEST(open_loop_rollout_matches_finite_differences)
{
    cq_sim *s = make_block_sim(5);
    cq_robot_actuators *act = NULL;
    cq_robot_controller *c = NULL;
    cq_robot_actuator_desc ad[2];
    double p[RSTEPS * 5], g[RSTEPS * 5], fd[RSTEPS * 5], E[RN];
    unsigned st = 17;
    if (!s) return;
    memset(ad, 0, sizeof ad);
    ad[0].kind = CQ_ROBOT_ACTUATOR_FULL; ad[0].max_stress = 800;        /* 4 signals */
    ad[1].kind = CQ_ROBOT_ACTUATOR_ISOTROPIC; ad[1].max_stress = 800;   /* 1 signal  */
    CHECK_OK(cq_robot_actuators_create(2, 2, ad, &act));
    CHECK_OK(cq_robot_controller_create_open_loop(RSTEPS, 5, &c));
    if (!act || !c) return;
    for (int i = 0; i < RSTEPS * 5; ++i) p[i] = 1.6 * (urand(&st) - 0.5);
    for (int i = 0; i < RN; ++i) E[i] = 3e3;
    cq_robot_rollout_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.steps = RSTEPS; rd.controller = c; rd.params = p; rd.actuators = act; rd.final_loss = final_lin;
    rd.action_penalty = 0.1; rd.reset = 1;
    cq_robot_rollout_out ro;
    memset(&ro, 0, sizeof ro);
    ro.grad_params = g;
    CHECK_OK(cq_robot_rollout(s, &rd, &ro));
    for (int i = 0; i < RSTEPS * 5; ++i) {
        double keep = p[i], h = 1e-6, lp, lm;
        p[i] = keep + h; lp = roll_loss(s, rd, E);
        p[i] = keep - h; lm = roll_loss(s, rd, E);
        p[i] = keep; fd[i] = (lp - lm) / (2 * h);
    }
    double e = rel_err(g, fd, RSTEPS * 5);
    CHECK(e < 1e-5, "open-loop dL/dparams relative error %.3e", e);
    printf("    open loop (%d params, full + isotropic actuators): dL/dparams relative error %.2e\n", RSTEPS * 5, e);
    cq_robot_controller_destroy(c); cq_robot_actuators_destroy(act); cq_sim_destroy(s);
}

/* ------------------------------------------------------------------------ optimizers */
static double quad(const double *p, const double *c, const double *t, double *g, int n)
{
    double f = 0;
    for (int i = 0; i < n; ++i) { f += c[i] * (p[i] - t[i]) * (p[i] - t[i]); if (g) g[i] = 2 * c[i] * (p[i] - t[i]); }
    return f;
}

TEST(optimizers_respect_bounds_and_reduce_a_quadratic)
{
    enum { N = 6 };
    const double c[N] = {1, 10, 0.1, 3, 1, 0.5}, t[N] = {2, -3, 0.5, 0.2, -0.7, 5};
    const double lo[N] = {-1, -1, -1, -1, -1, -1}, hi[N] = {1, 1, 1, 1, 1, 4};
    for (int kind = 0; kind < 2; ++kind) {
        cq_robot_optimizer *o = NULL;
        cq_robot_optimizer_desc od;
        double p[N] = {0.5, 0.5, -0.5, 0.9, 0, 0}, g[N], f0, f, best[N];
        int inside = 1;
        memset(&od, 0, sizeof od);
        od.kind = kind ? CQ_ROBOT_OPTIMIZER_GD : CQ_ROBOT_OPTIMIZER_ADAM;
        od.params = N; od.learning_rate = kind ? 0.04 : 0.05; od.momentum = kind ? 0.5 : 0; od.lo = lo; od.hi = hi;
        CHECK_OK(cq_robot_optimizer_create(&od, &o));
        if (!o) continue;
        f0 = quad(p, c, t, g, N);
        if (kind == 0) {   /* Adam's first step: bias-corrected, |step| = lr (up to eps) per parameter */
            double q[N];
            memcpy(q, p, sizeof q);
            CHECK_OK(cq_robot_optimizer_step(o, q, g));
            for (int i = 0; i < N; ++i) {
                double expect = p[i] - 0.05 * g[i] / (fabs(g[i]) + 1e-8);
                if (expect < lo[i]) expect = lo[i];
                if (expect > hi[i]) expect = hi[i];
                CHECK(fabs(q[i] - expect) < 1e-14, "Adam step 1, param %d: %.12f vs %.12f", i, q[i], expect);
            }
            cq_robot_optimizer_reset(o);
            CHECK(cq_robot_optimizer_iterations(o) == 0, "reset");
        }
        for (int it = 0; it < 400; ++it) {
            quad(p, c, t, g, N);
            CHECK_OK(cq_robot_optimizer_step(o, p, g));
            for (int i = 0; i < N; ++i) if (p[i] < lo[i] || p[i] > hi[i]) inside = 0;
        }
        f = quad(p, c, t, NULL, N);
        for (int i = 0; i < N; ++i) best[i] = t[i] < lo[i] ? lo[i] : (t[i] > hi[i] ? hi[i] : t[i]);
        CHECK(inside, "%s left the box", kind ? "GD" : "Adam");
        CHECK(f < f0, "%s: %g -> %g", kind ? "GD" : "Adam", f0, f);
        double err = 0;
        for (int i = 0; i < N; ++i) if (fabs(p[i] - best[i]) > err) err = fabs(p[i] - best[i]);
        CHECK(err < 2e-2, "%s: distance to the constrained optimum %.3e", kind ? "GD" : "Adam", err);
        printf("    %-4s 400 steps: quadratic %.4f -> %.4f (constrained optimum %.4f), max |p - p*| %.1e, in bounds: %s\n",
               kind ? "GD" : "Adam", f0, f, quad(best, c, t, NULL, N), err, inside ? "yes" : "no");
        CHECK(cq_robot_optimizer_iterations(o) == 400, "iterations %d", cq_robot_optimizer_iterations(o));
        /* non-finite gradient: error, params unchanged */
        {
            double q[N];
            memcpy(q, p, sizeof q);
            g[2] = NAN;
            CHECK(cq_robot_optimizer_step(o, q, g) == CQ_ERROR_NON_FINITE, "NaN gradient");
            CHECK(memcmp(q, p, sizeof q) == 0, "params unchanged after a refused step");
            CHECK(strstr(cq_robot_last_error(o), "grad[2]") != NULL, "message: %s", cq_robot_last_error(o));
        }
        cq_robot_optimizer_destroy(o);
    }
    /* gradient clipping */
    {
        cq_robot_optimizer *o = NULL;
        cq_robot_optimizer_desc od;
        double p[2] = {0, 0}, g[2] = {30, 40};
        memset(&od, 0, sizeof od);
        od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = 2; od.learning_rate = 1; od.clip_norm = 1;
        CHECK_OK(cq_robot_optimizer_create(&od, &o));
        CHECK_OK(cq_robot_optimizer_step(o, p, g));
        CHECK(fabs(p[0] + 0.6) < 1e-15 && fabs(p[1] + 0.8) < 1e-15, "clipped step %g %g", p[0], p[1]);
        cq_robot_optimizer_destroy(o);
    }
}

/* per-parameter rates and the plateau scheduler (DiffFR's optimiser): the rate halves after
   `patience` + 1 reports without improvement, never below the floor; reset restores it */
TEST(optimizer_rate_scale_and_plateau_scheduler)
{
    cq_robot_optimizer *o = NULL;
    cq_robot_optimizer_desc od;
    const double scale[2] = {8, 1};
    double p[2] = {0, 0}, g[2] = {1, 1};
    int reduced = -1, reductions = 0;
    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = 2; od.learning_rate = 0.5; od.rate_scale = scale;
    od.plateau_patience = 3; od.min_learning_rate = 0.1;
    CHECK_OK(cq_robot_optimizer_create(&od, &o));
    CHECK_OK(cq_robot_optimizer_step(o, p, g));
    CHECK(p[0] == -4 && p[1] == -0.5, "scaled step %g %g", p[0], p[1]);
    /* improving losses never reduce the rate */
    for (int i = 0; i < 10; ++i) {
        CHECK_OK(cq_robot_optimizer_report(o, 10.0 - i, &reduced));
        CHECK(reduced == 0, "report %d reduced the rate while improving", i);
    }
    CHECK(cq_robot_optimizer_best_loss(o) == 1, "best %g", cq_robot_optimizer_best_loss(o));
    /* a plateau: a change below the relative threshold (1e-4) is no improvement */
    for (int i = 0; i < 3; ++i) {
        CHECK_OK(cq_robot_optimizer_report(o, 1 - 1e-6, &reduced));
        CHECK(reduced == 0 && cq_robot_optimizer_learning_rate(o) == 0.5, "report %d: early reduction", i);
    }
    CHECK_OK(cq_robot_optimizer_report(o, 2, &reduced));   /* the 4th bad report > patience 3 */
    CHECK(reduced == 1 && cq_robot_optimizer_learning_rate(o) == 0.25, "halved: %d %g", reduced, cq_robot_optimizer_learning_rate(o));
    p[0] = p[1] = 0;
    CHECK_OK(cq_robot_optimizer_step(o, p, g));
    CHECK(p[0] == -2 && p[1] == -0.25, "step at the halved rate %g %g", p[0], p[1]);
    for (int i = 0; i < 40; ++i) { CHECK_OK(cq_robot_optimizer_report(o, 5, &reduced)); reductions += reduced; }
    CHECK(cq_robot_optimizer_learning_rate(o) == 0.1 && reductions == 2, "floor: rate %g after %d reductions",
          cq_robot_optimizer_learning_rate(o), reductions);
    CHECK(cq_robot_optimizer_report(o, NAN, &reduced) == CQ_ERROR_NON_FINITE && reduced == 0, "NaN loss accepted");
    CHECK(strstr(cq_robot_last_error(o), "loss") != NULL, "message: %s", cq_robot_last_error(o));
    cq_robot_optimizer_reset(o);
    CHECK(cq_robot_optimizer_learning_rate(o) == 0.5 && cq_robot_optimizer_best_loss(o) == HUGE_VAL, "reset");
    cq_robot_optimizer_destroy(o);
    /* bad scheduler settings and rates are refused by name */
    od.rate_scale = NULL; od.plateau_factor = 1;
    CHECK(cq_robot_optimizer_create(&od, &o) == CQ_ERROR_INVALID_ARGUMENT && o == NULL, "factor 1 accepted");
    CHECK(strstr(cq_robot_last_error(NULL), "plateau_factor") != NULL, "message: %s", cq_robot_last_error(NULL));
    {
        const double bad[2] = {1, 0};
        od.plateau_factor = 0; od.rate_scale = bad;
        CHECK(cq_robot_optimizer_create(&od, &o) == CQ_ERROR_INVALID_ARGUMENT && o == NULL, "rate_scale 0 accepted");
        CHECK(strstr(cq_robot_last_error(NULL), "rate_scale[1]") != NULL, "message: %s", cq_robot_last_error(NULL));
    }
    CHECK(cq_robot_optimizer_report(NULL, 1, NULL) == CQ_ERROR_INVALID_ARGUMENT, "NULL optimizer");
}

/* ------------------------------------------------------------------------ a tiny optimisation */
static double final_forward(const cq_robot_state *s, double *gx, double *gv, void *user)
{
    double L = 0;
    (void)gv; (void)user;
    for (int p = 0; p < s->particles; ++p) { L -= s->x[p * s->dim] / s->particles; gx[p * s->dim] = -1.0 / s->particles; }
    return L;
}

TEST(tiny_closed_loop_optimisation_moves_the_block_right)
{
    cq_sim *s = make_block_sim(4);
    cq_robot_actuators *act = NULL;
    cq_robot_observer *ob = NULL;
    cq_robot_controller *c = NULL;
    cq_robot_optimizer *o = NULL;
    cq_robot_actuator_desc ad[2];
    int hidden[1] = {8};
    double off[8], sc[8], first = 0, last = 0, best = 1e9;
    if (!s) return;
    memset(ad, 0, sizeof ad);
    ad[0].kind = ad[1].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].max_stress = ad[1].max_stress = 600;
    CHECK_OK(cq_robot_actuators_create(2, 2, ad, &act));
    CHECK_OK(cq_robot_observer_create_centroid(2, RN, r_grp, 2, &ob));
    if (!act || !ob) return;
    CHECK_OK(cq_robot_observer_observe_sim(ob, s, off));
    for (int i = 0; i < 8; ++i) sc[i] = (i % 4) < 2 ? 20 : 2;
    cq_robot_mlp_desc md;
    memset(&md, 0, sizeof md);
    md.inputs = 8; md.outputs = 4; md.layers = 1; md.hidden = hidden; md.phase_harmonics = 1; md.omega = 0.4;
    md.input_offset = off; md.input_scale = sc; md.seed = 1;
    CHECK_OK(cq_robot_controller_create_mlp(&md, &c));
    if (!c) return;
    const int P = cq_robot_controller_params(c);
    double *p = (double *)malloc(sizeof(double) * P), *g = (double *)malloc(sizeof(double) * P);
    CHECK_OK(cq_robot_controller_init_params(c, p));
    cq_robot_optimizer_desc od;
    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = P; od.learning_rate = 0.05; od.clip_norm = 10;
    CHECK_OK(cq_robot_optimizer_create(&od, &o));
    cq_robot_rollout_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.steps = 30; rd.controller = c; rd.params = p; rd.observer = ob; rd.actuators = act;
    rd.final_loss = final_forward; rd.action_penalty = 1e-3; rd.reset = 1;
    cq_robot_rollout_out ro;
    memset(&ro, 0, sizeof ro);
    ro.grad_params = g;
    for (int it = 0; it < 15; ++it) {
        cq_result r = cq_robot_rollout(s, &rd, &ro);
        CHECK(r == CQ_SUCCESS, "iteration %d: %s", it, ro.error);
        if (r != CQ_SUCCESS) break;
        if (it == 0) first = ro.loss;
        last = ro.loss;
        if (ro.loss < best) best = ro.loss;
        CHECK_OK(cq_robot_optimizer_step(o, p, g));
    }
    CHECK(best < first - 2e-3 && last < first, "loss %.5f -> %.5f (best %.5f)", first, last, best);
    printf("    15 Adam iterations, %d MLP params, 30 steps: loss (-mean x_T + penalty) %.5f -> %.5f\n", P, first, last);
    free(p); free(g);
    cq_robot_optimizer_destroy(o); cq_robot_controller_destroy(c); cq_robot_observer_destroy(ob);
    cq_robot_actuators_destroy(act); cq_sim_destroy(s);
}

/* ------------------------------------------------------------------------ bad input */
#define CHECK_FAILS(call, code) do { cq_result cqt_r2 = (call); CHECK(cqt_r2 == (code), "%s returned %s, want %s", #call, \
    cq_result_string(cqt_r2), cq_result_string(code)); } while (0)

TEST(bad_input_returns_errors_with_messages)
{
    cq_robot_actuators *act = (cq_robot_actuators *)&act;
    cq_robot_observer *ob = (cq_robot_observer *)&ob;
    cq_robot_controller *c = (cq_robot_controller *)&c;
    cq_robot_optimizer *o = (cq_robot_optimizer *)&o;
    cq_robot_actuator_desc ad[2];
    int grp[4] = {0, 0, 2, -1}, grp3[3] = {0, 1, 0}, bad_grp[4] = {0, 5, 1, 1}, hidden[2] = {3, 0};
    double lo[2] = {0, 1}, hi[2] = {1, 0}, buf[64];
    memset(ad, 0, sizeof ad);
    ad[0].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].max_stress = 1;
    /* actuators */
    CHECK_FAILS(cq_robot_actuators_create(2, 1, ad, NULL), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_actuators_create(4, 1, ad, &act), CQ_ERROR_INVALID_ARGUMENT);
    CHECK(act == NULL, "out cleared on failure");
    CHECK_FAILS(cq_robot_actuators_create(2, 0, ad, &act), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_actuators_create(2, 1, NULL, &act), CQ_ERROR_INVALID_ARGUMENT);
    ad[0].axis_mask = 4;
    CHECK_FAILS(cq_robot_actuators_create(2, 1, ad, &act), CQ_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(cq_robot_last_error(NULL), "axis_mask") != NULL, "message: %s", cq_robot_last_error(NULL));
    ad[0].axis_mask = 0; ad[0].max_stress = NAN;
    CHECK_FAILS(cq_robot_actuators_create(2, 1, ad, &act), CQ_ERROR_INVALID_ARGUMENT);
    ad[0].max_stress = 1;
#ifndef __cplusplus   /* in C++ an enum value outside 0..3 is itself undefined behaviour */
    ad[1].kind = (cq_robot_actuator_kind)9;
    CHECK_FAILS(cq_robot_actuators_create(2, 2, ad, &act), CQ_ERROR_INVALID_ARGUMENT);
#endif
    ad[1].kind = CQ_ROBOT_ACTUATOR_NONE;
    CHECK_OK(cq_robot_actuators_create(2, 2, ad, &act));
    buf[0] = NAN; buf[1] = 0;
    CHECK_FAILS(cq_robot_actuators_stress(act, buf, buf + 8), CQ_ERROR_NON_FINITE);
    CHECK(strstr(cq_robot_last_error(act), "a[0]") != NULL, "message: %s", cq_robot_last_error(act));
    CHECK_FAILS(cq_robot_actuators_stress(act, NULL, buf + 8), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_actuators_vjp(act, buf, NULL, buf + 8), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_actuators_stress(NULL, buf, buf), CQ_ERROR_INVALID_ARGUMENT);
    /* observers: empty group, out-of-range group, NULL */
    CHECK_FAILS(cq_robot_observer_create_centroid(2, 4, grp, 3, &ob), CQ_ERROR_INVALID_ARGUMENT);
    CHECK(ob == NULL && strstr(cq_robot_last_error(NULL), "group 1 has no particles") != NULL, "message: %s",
          cq_robot_last_error(NULL));
    CHECK_FAILS(cq_robot_observer_create_centroid(2, 4, bad_grp, 2, &ob), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_observer_create_centroid(2, 4, NULL, 2, &ob), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_observer_create_centroid(2, 0, grp, 1, &ob), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_observer_create_custom(NULL, &ob), CQ_ERROR_INVALID_ARGUMENT);
    /* controllers */
    cq_robot_mlp_desc md;
    memset(&md, 0, sizeof md);
    md.inputs = 2; md.outputs = 2; md.layers = 2; md.hidden = hidden;
    CHECK_FAILS(cq_robot_controller_create_mlp(&md, &c), CQ_ERROR_INVALID_ARGUMENT);   /* hidden[1] = 0 */
    CHECK(c == NULL && strstr(cq_robot_last_error(NULL), "hidden[1]") != NULL, "message: %s", cq_robot_last_error(NULL));
    md.layers = 1; md.outputs = 0;
    CHECK_FAILS(cq_robot_controller_create_mlp(&md, &c), CQ_ERROR_INVALID_ARGUMENT);
    md.outputs = 2; md.hidden = NULL;
    CHECK_FAILS(cq_robot_controller_create_mlp(&md, &c), CQ_ERROR_INVALID_ARGUMENT);
    md.inputs = 0; md.layers = 0;
    CHECK_FAILS(cq_robot_controller_create_mlp(&md, &c), CQ_ERROR_INVALID_ARGUMENT);   /* no inputs at all */
    CHECK_FAILS(cq_robot_controller_create_mlp(NULL, &c), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_controller_create_open_loop(0, 2, &c), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_controller_create_custom(NULL, &c), CQ_ERROR_INVALID_ARGUMENT);
    /* optimizer */
    cq_robot_optimizer_desc od;
    memset(&od, 0, sizeof od);
    od.params = 2; od.learning_rate = 0.1; od.lo = lo; od.hi = hi;
    CHECK_FAILS(cq_robot_optimizer_create(&od, &o), CQ_ERROR_INVALID_ARGUMENT);        /* lo > hi */
    CHECK(o == NULL && strstr(cq_robot_last_error(NULL), "parameter 1") != NULL, "message: %s", cq_robot_last_error(NULL));
    od.lo = od.hi = NULL; od.learning_rate = -1;
    CHECK_FAILS(cq_robot_optimizer_create(&od, &o), CQ_ERROR_INVALID_ARGUMENT);
    od.learning_rate = 0.1; od.beta1 = 1;
    CHECK_FAILS(cq_robot_optimizer_create(&od, &o), CQ_ERROR_INVALID_ARGUMENT);
    od.beta1 = 0; od.params = 0;
    CHECK_FAILS(cq_robot_optimizer_create(&od, &o), CQ_ERROR_INVALID_ARGUMENT);

    /* rollout: a working setup, then one thing wrong at a time */
    cq_sim *s = make_block_sim(2);
    cq_robot_observer *ob2 = NULL, *ob3 = NULL;
    cq_robot_controller *mlp = NULL, *ol = NULL, *ol_short = NULL;
    if (!s || !act) { cq_sim_destroy(s); cq_robot_actuators_destroy(act); return; }
    CHECK_OK(cq_robot_observer_create_centroid(2, RN, r_grp, 2, &ob2));
    CHECK_OK(cq_robot_observer_create_centroid(2, 3, grp3, 2, &ob3));    /* made for 3 particles */
    md.inputs = 8; md.outputs = 2; md.layers = 0; md.hidden = NULL; md.phase_harmonics = 0;
    CHECK_OK(cq_robot_controller_create_mlp(&md, &mlp));
    CHECK_OK(cq_robot_controller_create_open_loop(5, 2, &ol));
    CHECK_OK(cq_robot_controller_create_open_loop(3, 2, &ol_short));
    double p[64], g[64];
    CHECK_OK(cq_robot_controller_init_params(mlp, p));
    cq_robot_rollout_desc rd, r2;
    cq_robot_rollout_out ro;
    memset(&rd, 0, sizeof rd);
    memset(&ro, 0, sizeof ro);
    rd.steps = 5; rd.controller = mlp; rd.params = p; rd.observer = ob2; rd.actuators = act; rd.final_loss = final_lin;
    rd.reset = 1;
    ro.grad_params = g;
    CHECK_OK(cq_robot_rollout(s, &rd, &ro));
    CHECK_FAILS(cq_robot_rollout(s, &rd, NULL), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_rollout(NULL, &rd, &ro), CQ_ERROR_INVALID_ARGUMENT);
    CHECK_FAILS(cq_robot_rollout(s, NULL, &ro), CQ_ERROR_INVALID_ARGUMENT);
    r2 = rd; r2.steps = 0;          CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
    r2 = rd; r2.observer = NULL;    CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ro.error, "observer is NULL") != NULL, "message: %s", ro.error);
    r2 = rd; r2.controller = ol;    CHECK_OK(cq_robot_rollout(s, &r2, &ro));     /* no inputs: the observer is ignored */
    r2 = rd; r2.observer = ob3;     CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ro.error, "observer was made for 3") != NULL, "message: %s", ro.error);
    CHECK(cq_sim_step_count(s) == 5, "bad input left the sim as it was (step %d)", cq_sim_step_count(s));
    r2 = rd; r2.controller = ol_short; r2.observer = NULL; r2.params = p;
    CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);            /* horizon 3 < 5 steps */
    r2 = rd; r2.params = NULL;      CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
    r2 = rd; r2.action_penalty = -1; CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
    p[3] = NAN;
    CHECK_FAILS(cq_robot_rollout(s, &rd, &ro), CQ_ERROR_NON_FINITE);
    CHECK(strstr(ro.error, "params[3]") != NULL, "message: %s", ro.error);
    CHECK_OK(cq_robot_controller_init_params(mlp, p));
    /* the sim is at step 5 after a rollout: without reset it is refused */
    CHECK_OK(cq_robot_rollout(s, &rd, &ro));
    r2 = rd; r2.reset = 0;          CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_STATE);
    /* actuators with fewer groups than the particles use: the sim's message comes through */
    {
        cq_robot_actuators *one = NULL;
        cq_robot_controller *m1 = NULL;
        ad[0].kind = CQ_ROBOT_ACTUATOR_ISOTROPIC;
        CHECK_OK(cq_robot_actuators_create(2, 1, ad, &one));
        md.outputs = 1;
        CHECK_OK(cq_robot_controller_create_mlp(&md, &m1));
        const int step0 = cq_sim_step_count(s);
        const size_t tape0 = cq_sim_tape_bytes(s);
        r2 = rd; r2.actuators = one; r2.controller = m1;   /* reset = 1: refused before the reset */
        CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(ro.error, "actuator group 1") != NULL, "message: %s", ro.error);
        CHECK(cq_sim_step_count(s) == step0 && step0 > 0, "the sim was reset or stepped: step %d (was %d)", cq_sim_step_count(s), step0);
        CHECK(cq_sim_tape_bytes(s) == tape0, "the tape changed: %lu -> %lu bytes", (unsigned long)tape0, (unsigned long)cq_sim_tape_bytes(s));
        r2.controller = mlp;        /* 2 outputs vs 1 signal */
        CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(ro.error, "2 outputs") != NULL, "message: %s", ro.error);
        cq_robot_controller_destroy(m1); cq_robot_actuators_destroy(one);
    }
    /* 3D actuators on a 2D sim */
    {
        cq_robot_actuators *a3 = NULL;
        ad[0].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].axis_mask = 1; ad[1].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[1].axis_mask = 4;
        CHECK_OK(cq_robot_actuators_create(3, 2, ad, &a3));
        r2 = rd; r2.actuators = a3;
        CHECK_FAILS(cq_robot_rollout(s, &r2, &ro), CQ_ERROR_INVALID_ARGUMENT);
        cq_robot_actuators_destroy(a3);
    }
    /* no tape: forward only works, the reverse pass is refused with the sim's message */
    {
        cq_sim *nt = make_block_sim(0);
        if (nt) {
            r2 = rd; r2.forward_only = 1;
            CHECK_OK(cq_robot_rollout(nt, &r2, &ro));
            CHECK_FAILS(cq_robot_rollout(nt, &rd, &ro), CQ_ERROR_INVALID_STATE);
            CHECK(strstr(ro.error, "checkpoint_every") != NULL, "message: %s", ro.error);
        }
        cq_sim_destroy(nt);
    }
    /* an action that blows the robot out of the grid stops the rollout with the sim's message */
    {
        cq_robot_actuators *big = NULL;
        cq_robot_controller *olb = NULL;
        double pb[40];
        ad[0].kind = ad[1].kind = CQ_ROBOT_ACTUATOR_FULL; ad[0].max_stress = ad[1].max_stress = 1e9;
        CHECK_OK(cq_robot_actuators_create(2, 2, ad, &big));
        CHECK_OK(cq_robot_controller_create_open_loop(5, 8, &olb));
        for (int i = 0; i < 40; ++i) pb[i] = i % 2 ? 1 : -1;
        r2 = rd; r2.actuators = big; r2.controller = olb; r2.params = pb; r2.observer = NULL;
        cq_result r = cq_robot_rollout(s, &r2, &ro);
        CHECK(r == CQ_ERROR_NON_FINITE || r == CQ_ERROR_OUT_OF_DOMAIN, "exploding rollout returned %s", cq_result_string(r));
        CHECK(strstr(ro.error, "cq_sim_step") != NULL, "message: %s", ro.error);
        cq_robot_controller_destroy(olb); cq_robot_actuators_destroy(big);
    }
    cq_robot_controller_destroy(mlp); cq_robot_controller_destroy(ol); cq_robot_controller_destroy(ol_short);
    cq_robot_observer_destroy(ob2); cq_robot_observer_destroy(ob3); cq_robot_actuators_destroy(act);
    cq_sim_destroy(s);
    /* destroy(NULL) is a no-op */
    cq_robot_actuators_destroy(NULL); cq_robot_observer_destroy(NULL); cq_robot_controller_destroy(NULL);
    cq_robot_optimizer_destroy(NULL);
}

TEST(box_shape_fills_a_lattice)
{
    double lo[3] = {0.25, 0.5, 0.125}, size[3] = {0.25, 0.125, 0.0625}, x[3 * 4096];
    int n = 0;
    CHECK_OK(cq_robot_box(3, lo, size, 1.0 / 64, 2, NULL, 0, &n));
    CHECK(n == 32 * 16 * 8, "count %d", n);
    CHECK_OK(cq_robot_box(3, lo, size, 1.0 / 64, 2, x, 4096, &n));
    CHECK(x[0] == 0.25 + 0.5 / 128 && x[3 * n - 1] == 0.125 + 0.0625 - 0.5 / 128, "lattice corners %g %g", x[0], x[3 * n - 1]);
    CHECK_OK(cq_robot_box(2, lo, size, 1.0 / 64, 3, NULL, 0, &n));
    CHECK(n == 48 * 24, "2D count %d", n);
    CHECK(cq_robot_box(3, lo, size, 1.0 / 64, 2, x, 10, &n) == CQ_ERROR_INVALID_ARGUMENT, "cap too small refused");
    size[1] = -1;
    CHECK(cq_robot_box(3, lo, size, 1.0 / 64, 2, NULL, 0, &n) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_robot_last_error(NULL), "size[1]"),
          "negative size refused: %s", cq_robot_last_error(NULL));
    CHECK(cq_robot_box(4, lo, size, 1.0 / 64, 2, NULL, 0, &n) == CQ_ERROR_INVALID_ARGUMENT, "dim 4 refused");
    /* a box whose far particles overflow double: refused, never infinite positions */
    {
        double blo[2] = {1.7e308, 0}, bsize[2] = {1.5e308, 1};
        n = -1;
        CHECK(cq_robot_box(2, blo, bsize, 1e307, 1, NULL, 0, &n) == CQ_ERROR_NON_FINITE && n == 0,
              "overflowing box accepted (count %d): %s", n, cq_robot_last_error(NULL));
        CHECK(strstr(cq_robot_last_error(NULL), "lo[0]") != NULL, "message: %s", cq_robot_last_error(NULL));
    }
}

/* A rollout that needs a tape on a sim without one is refused before any step runs. */
TEST(untaped_rollout_refused_before_stepping)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    cq_robot_actuator_desc ad;
    cq_robot_actuators *act = NULL;
    cq_robot_controller *ol = NULL;
    cq_robot_rollout_desc rd;
    cq_robot_rollout_out ro;
    double x[2 * 16], prm[8 * 1];
    int grp[16];
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.logger.func = cq_log_silent;   /* no tape */
    CHECK_OK(cq_sim_create(&d, &s));
    for (int i = 0; i < 16; ++i) { x[2 * i] = 0.45 + (i % 4) / 64.0; x[2 * i + 1] = 0.45 + (i / 4) / 64.0; grp[i] = 0; }
    memset(&p, 0, sizeof p);
    p.count = 16; p.x = x; p.actuator = grp;
    CHECK_OK(cq_sim_add_particles(s, &p));
    memset(&ad, 0, sizeof ad);
    ad.kind = CQ_ROBOT_ACTUATOR_ISOTROPIC; ad.max_stress = 1;
    CHECK_OK(cq_robot_actuators_create(2, 1, &ad, &act));
    CHECK_OK(cq_robot_controller_create_open_loop(8, 1, &ol));
    CHECK_OK(cq_robot_controller_init_params(ol, prm));
    memset(&rd, 0, sizeof rd);
    memset(&ro, 0, sizeof ro);
    rd.steps = 8; rd.controller = ol; rd.params = prm; rd.actuators = act;
    CHECK(cq_robot_rollout(s, &rd, &ro) == CQ_ERROR_INVALID_STATE, "untaped rollout with gradients accepted");
    CHECK(strstr(ro.error, "no tape") != NULL, "message: %s", ro.error);
    CHECK(cq_sim_step_count(s) == 0, "steps ran before the refusal: %d", cq_sim_step_count(s));
    rd.forward_only = 1;
    CHECK_OK(cq_robot_rollout(s, &rd, &ro));
    CHECK(cq_sim_step_count(s) == 8, "forward-only rollout: step %d", cq_sim_step_count(s));
    cq_robot_controller_destroy(ol); cq_robot_actuators_destroy(act);
    cq_sim_destroy(s);
}

RUN_TESTS(CASE(box_shape_fills_a_lattice), CASE(untaped_rollout_refused_before_stepping), CASE(actuator_map_and_vjp_match_finite_differences),
          CASE(centroid_observer_and_vjp_match_finite_differences),
          CASE(controllers_vjp_match_finite_differences),
          CASE(rollout_gradient_matches_finite_differences_of_whole_rollouts),
          CASE(open_loop_rollout_matches_finite_differences),
          CASE(optimizers_respect_bounds_and_reduce_a_quadratic),
          CASE(optimizer_rate_scale_and_plateau_scheduler),
          CASE(tiny_closed_loop_optimisation_moves_the_block_right),
          CASE(bad_input_returns_errors_with_messages))
