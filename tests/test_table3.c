/* Table III of the ChainQueen paper (seed 000, sec IV-B "Accuracy"): relative error of the
   gradients of cq_sim_backward, reproduced with this library and printed beside the paper's.

     A1 (analytic, 3D, float32)  final position w.r.t. initial velocity, two cubes colliding
     A2 (analytic, 3D, float32)  the same with one collision to a frictionless wall
     B  (numeric,  2D, float64)  colliding billiards, against central finite differences
     C  (numeric,  2D, float64)  finger controller (parameters reused every step), against
                                 central finite differences

   Relative error everywhere: |g - g_ref| / |g_ref| (Euclidean norms over every entry checked).
   Each of our errors must be at or below the paper's where the paper gives one ("-" in the
   paper = no collision yet in that many steps).

   What "analytic" means here (A1, A2).  Per-particle final positions depend on every other
   particle through the grid, so d x_p(T) / d v_q(0) has no closed form.  But MLS-MPM with APIC
   transfers conserves linear momentum exactly (quadratic B-spline weights sum to 1 and have a
   zero first moment, so P2G's affine/stress term and G2P both leave sum m v unchanged), and
   x <- x + dt v^{n+1}.  Hence the centre of mass moves as
       x_cm(T) = x_cm(0) + T dt P(0) / M   (+ gravity terms independent of the state)
   no matter how the bodies collide with each other, and for EVERY particle q
       d x_cm(T) / d v_q(0) = T dt (m_q / M) I        (3x3, exact for the discrete scheme).
   A1 checks this whole N x 3 x 3 Jacobian (one backward pass per component of x_cm).  With a
   frictionless wall (CQ_BOUNDARY_SEPARATE here: only the normal velocity of wall nodes is
   touched) the normal momentum is not conserved, but the tangential momentum still is, so
   A2 checks the tangential rows  d x_cm,t(T) / d v_q(0) = T dt (m_q / M) e_t  (zero in the
   normal column, also checked) through and after the wall collision.  Equal masses and
   N = 2^k particles make the reference and the seeds exact in float32.

   B and C use central differences of the whole float64 rollout.  The quadratic B-spline map
   is only C^1 (its second derivative jumps when a particle crosses a cell face), which limits
   how small the difference step may go; the step is chosen where the truncation and rounding
   errors are both well below the tolerance (B: 1e-6, C: 1e-6 relative).

   C follows the paper's controller (sec V-B): u_n = tanh(W o_n + b) with o_n built from the
   finger's centre-of-mass position and velocity at step n.  Backward: in the hook of step n,
   cq_sim_actuation_grad gives dL/du_n; we backpropagate through tanh into dW, db AND into o_n,
   and hand dL/do_n -> dL/d(x, v of s_n) back with cq_sim_add_state_grad (u_n depends on s_n,
   so this term is needed for the exact gradient). */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>
#include <time.h>

#define NSTEPS 4
static const int STEPS[NSTEPS] = {1, 10, 100, 1000};
/* the paper's Table III; < 0 = "-" */
static const double PAPER[4][NSTEPS] = {
    {9.80e-8, 4.74e-8, 1.15e-7, 1.43e-5},    /* A1 */
    {-1, -1, -1, 2.69e-5},                   /* A2 */
    {-1, -1, 2.39e-8, 2.83e-8},              /* B  */
    {5.63e-6, 2.24e-7, 6.97e-7, 1.76e-6},    /* C  */
};
static const char *CASES[4] = {"A1", "A2", "B", "C"};
static double OURS[4][NSTEPS];               /* < 0 = not measured / undefined */
static double SECS[4];
static double PART[2][NSTEPS];           /* A1, A2: per-particle Jacobian error */
static double FDC[2][NSTEPS];            /* B, C: |FD(h) - FD(2h)| / |FD(h)| */

static double now(void) { return (double)clock() / CLOCKS_PER_SEC; }

static cq_sim *create(const cq_sim_desc *d)
{
    cq_sim *s = NULL;
    if (cq_sim_create(d, &s) != CQ_SUCCESS) printf("    create: %s\n", cq_sim_last_error(NULL));
    return s;
}

static int add(cq_sim *s, int count, const double *x, const double *v, double E, double nu, const int *act)
{
    cq_particles_desc p;
    memset(&p, 0, sizeof p);
    p.count = count; p.x = x; p.v = v; p.default_youngs = E; p.default_poisson = nu; p.actuator = act;
    if (cq_sim_add_particles(s, &p) != CQ_SUCCESS) { printf("    add: %s\n", cq_sim_last_error(s)); return 0; }
    return 1;
}

/* a block of n[a] particles per axis, spacing h, centred at c; returns the count */
static int block(double *x, int dim, const double *c, const int *n, double h)
{
    int k = 0;
    for (int i = 0; i < n[0]; ++i)
        for (int j = 0; j < n[1]; ++j)
            for (int l = 0; l < (dim == 3 ? n[2] : 1); ++l) {
                const int id[3] = {i, j, l};
                for (int a = 0; a < dim; ++a) x[k * dim + a] = c[a] + (id[a] + 0.5 - 0.5 * n[a]) * h;
                ++k;
            }
    return k;
}

/* a disc of radius r (2D), spacing h, centred at c; returns the count */
static int disc(double *x, const double *c, double r, double h)
{
    int k = 0, m = (int)(r / h) + 1;
    for (int i = -m; i <= m; ++i)
        for (int j = -m; j <= m; ++j) {
            double px = (i + 0.5) * h, py = (j + 0.5) * h;
            if (px * px + py * py > r * r) continue;
            x[2 * k] = c[0] + px; x[2 * k + 1] = c[1] + py;
            ++k;
        }
    return k;
}

static int step_ok(cq_sim *s, int n)
{
    cq_result r = cq_sim_step(s, n);
    if (r != CQ_SUCCESS) printf("    step: %s\n", cq_sim_last_error(s));
    return r == CQ_SUCCESS;
}

static int backward_ok(cq_sim *s, const double *dx, const double *dv, cq_backward_hook hook, void *user)
{
    cq_result r = cq_sim_backward(s, dx, dv, NULL, NULL, hook, user);
    if (r != CQ_SUCCESS) printf("    backward: %s\n", cq_sim_last_error(s));
    return r == CQ_SUCCESS;
}

/* ====================================================================== A1, A2 (3D, f32) */
#define A_RES 32
#define A_NB 8                      /* 8^3 = 512 particles per cube */
#define A_DT (1.0 / 2048)           /* exact in float32, as are dx, 1/N and T dt / N */
#define A_E 1000.0                  /* dt < dx sqrt(rho / E) = 9.9e-4 */

typedef struct a_scene { int n, wall; double x[2 * A_NB * A_NB * A_NB * 3], v[2 * A_NB * A_NB * A_NB * 3]; } a_scene;

/* A1: two cubes approaching each other (off-centre, with some spin) meet after ~400 steps and
   bounce apart; no wall is ever touched.  A2: one cube thrown obliquely at the floor (y = 0
   face, frictionless walls), reaching it after ~600 steps. */
static void a_setup(a_scene *sc, int wall)
{
    const double h = 1.0 / (2 * A_RES);
    const int nb[3] = {A_NB, A_NB, A_NB};
    memset(sc, 0, sizeof *sc);
    sc->wall = wall;
    if (!wall) {
        const double c0[3] = {0.34, 0.49, 0.5}, c1[3] = {0.66, 0.53, 0.51};
        const double v0[3] = {0.30, 0.02, -0.03}, v1[3] = {-0.30, -0.01, 0.02};
        int n0 = block(sc->x, 3, c0, nb, h), n1 = block(sc->x + n0 * 3, 3, c1, nb, h);
        sc->n = n0 + n1;
        for (int p = 0; p < sc->n; ++p) {
            const double *c = p < n0 ? c0 : c1, *v = p < n0 ? v0 : v1;
            double r[3] = {sc->x[p * 3] - c[0], sc->x[p * 3 + 1] - c[1], sc->x[p * 3 + 2] - c[2]};
            /* v + omega x r, omega = (0, 0, +-1) */
            double w = p < n0 ? 1.0 : -1.0;
            sc->v[p * 3] = v[0] - w * r[1]; sc->v[p * 3 + 1] = v[1] + w * r[0]; sc->v[p * 3 + 2] = v[2];
        }
    } else {
        const double c0[3] = {0.45, 0.30, 0.5}, v0[3] = {0.2, -0.4, 0.1};
        sc->n = block(sc->x, 3, c0, nb, h);
        for (int p = 0; p < sc->n; ++p)
            for (int a = 0; a < 3; ++a) sc->v[p * 3 + a] = v0[a];
    }
}

static cq_sim *a_sim(const a_scene *sc)
{
    cq_sim_desc d;
    cq_sim *s;
    memset(&d, 0, sizeof d);
    d.dim = 3; d.res[0] = d.res[1] = d.res[2] = A_RES; d.dx = 1.0 / A_RES; d.dt = A_DT;
    d.precision = CQ_PRECISION_F32; d.checkpoint_every = 16;
    d.boundary = CQ_BOUNDARY_SEPARATE;   /* frictionless; A1 never reaches a wall */
    s = create(&d);
    if (s && !add(s, sc->n, sc->x, sc->v, A_E, 0.3, NULL)) { cq_sim_destroy(s); s = NULL; }
    return s;
}

/* lowest y of any particle's stencil node reached so far? -> we report whether any particle
   came within the wall's reach (its stencil touched a wall node) during the run */
static int a_touched_wall(cq_sim *s, double *buf)
{
    int n = cq_sim_particle_count(s);
    cq_sim_get(s, CQ_FIELD_X, buf);
    for (int p = 0; p < n; ++p)
        for (int a = 0; a < 3; ++a) {
            double g = buf[p * 3 + a] * A_RES - 0.5;    /* base node = floor(g) */
            if (floor(g) < 3 || floor(g) + 2 >= A_RES - 3) return 1;
        }
    return 0;
}

/* Runs T steps; returns the relative error of the body-level Jacobian  d x_cm(T) / d v_body(0)
   (each body's particles given a common velocity change: T dt (M_body / M) I, the quantity the
   paper reports) and stores in *per_particle the error of the full per-particle Jacobian
   d x_cm(T) / d v_q(0) = T dt (m_q / M) I (stricter: no averaging over particles). */
static double a_case(const a_scene *sc, int T, int *touched, double *per_particle)
{
    cq_sim *s = a_sim(sc);
    const int n = sc->n, nbody = sc->wall ? 1 : 2, per = n / nbody;
    double *seed = (double *)malloc(sizeof(double) * n * 3), *g = (double *)malloc(sizeof(double) * n * 3);
    double *buf = (double *)malloc(sizeof(double) * n * 3);
    double err2 = 0, ref2 = 0, berr2 = 0, bref2 = 0, res = -1;
    int ok = s && seed && g && buf;
    *touched = 0; *per_particle = -1;
    for (int k = 0; ok && k < T; ++k) {
        ok = step_ok(s, 1);
        if (ok && sc->wall && !*touched) *touched = a_touched_wall(s, buf);
    }
    for (int a = 0; ok && a < 3; ++a) {
        if (sc->wall && a == 1) continue;             /* the wall normal (y) is not analytic */
        for (int i = 0; i < n * 3; ++i) seed[i] = i % 3 == a ? 1.0 / n : 0.0;   /* L = x_cm,a(T) */
        ok = backward_ok(s, seed, NULL, NULL, NULL) && cq_sim_grad(s, CQ_FIELD_V, g) == CQ_SUCCESS;
        for (int i = 0; ok && i < n * 3; ++i) {
            double ref = i % 3 == a ? T * A_DT / n : 0.0;   /* m_q / M = 1 / n */
            err2 += (g[i] - ref) * (g[i] - ref); ref2 += ref * ref;
        }
        for (int body = 0; ok && body < nbody; ++body)
            for (int b = 0; b < 3; ++b) {
                double sum = 0, ref = a == b ? T * A_DT / nbody : 0.0;
                for (int q = body * per; q < (body + 1) * per; ++q) sum += g[q * 3 + b];
                berr2 += (sum - ref) * (sum - ref); bref2 += ref * ref;
            }
    }
    if (ok) { res = sqrt(berr2 / bref2); *per_particle = sqrt(err2 / ref2); }
    CHECK(ok, "A case (wall %d) T = %d did not run", sc->wall, T);
    free(seed); free(g); free(buf);
    cq_sim_destroy(s);
    return res;
}

TEST(table3_A1_two_cubes_f32_analytic)
{
    static a_scene sc;
    double t0 = now();
    a_setup(&sc, 0);
    for (int k = 0; k < NSTEPS; ++k) {
        int touched;
        OURS[0][k] = a_case(&sc, STEPS[k], &touched, &PART[0][k]);
        CHECK(OURS[0][k] >= 0 && OURS[0][k] <= PAPER[0][k], "A1 %d steps: relative error %.3g > paper's %.3g",
              STEPS[k], OURS[0][k], PAPER[0][k]);
    }
    SECS[0] = now() - t0;
}

TEST(table3_A2_wall_f32_analytic)
{
    static a_scene sc;
    double t0 = now();
    a_setup(&sc, 1);
    for (int k = 0; k < NSTEPS; ++k) {
        int touched;
        OURS[1][k] = a_case(&sc, STEPS[k], &touched, &PART[1][k]);
        /* the paper has a value only once the wall was hit (1000 steps); so do we */
        CHECK((PAPER[1][k] >= 0) == touched, "A2 %d steps: wall %s", STEPS[k], touched ? "touched too early" : "never reached");
        if (PAPER[1][k] >= 0)
            CHECK(OURS[1][k] >= 0 && OURS[1][k] <= PAPER[1][k], "A2 %d steps: relative error %.3g > paper's %.3g",
                  STEPS[k], OURS[1][k], PAPER[1][k]);
    }
    SECS[1] = now() - t0;
}

/* ====================================================================== B (2D, f64) */
#define B_RES 64
#define B_DT 2e-4
#define B_E 1000.0                  /* dt < dx sqrt(rho / E) = 4.9e-4 */
#define B_MAXP 512
#define B_H 2e-5                    /* central-difference step on ball A's velocity (see below) */

typedef struct b_scene { int n, na; double x[B_MAXP * 2], v[B_MAXP * 2]; } b_scene;

/* ball A (r = 0.05, 128 particles) rolls right at 1.5 and hits ball B (at rest, 0.02 higher:
   an oblique hit); their grid stencils first share a node between steps 10 and 100; no walls,
   no gravity (a billiard table seen from above).
   The difference step: the rollout's float64 rounding noise (~1e-14 in x_B after 1000 steps)
   over 2h favours a large h, the C^1 B-spline map (second-derivative jumps) a small one; on
   this scene and its neighbours (B moved by +-0.01) h in [1e-5, 5e-5] keeps |FD - adjoint| /
   |FD| below 1e-8, h = 1e-6 gives ~3e-8, h = 1e-3 ~2e-6.  We also report |FD(h) - FD(2h)| /
   |FD(h)|, the reference's own consistency. */
static void b_setup(b_scene *sc)
{
    const double ca[2] = {0.30, 0.50}, cb[2] = {0.43, 0.52}, h = 1.0 / (2 * B_RES);
    memset(sc, 0, sizeof *sc);
    sc->na = disc(sc->x, ca, 0.05, h);
    sc->n = sc->na + disc(sc->x + sc->na * 2, cb, 0.05, h);
    for (int p = 0; p < sc->na; ++p) { sc->v[p * 2] = 1.5; sc->v[p * 2 + 1] = 0.0; }
}

static cq_sim *b_sim(const b_scene *sc, const double *dva)
{
    cq_sim_desc d;
    cq_sim *s;
    static double v[B_MAXP * 2];
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = B_RES; d.dx = 1.0 / B_RES; d.dt = B_DT;
    d.precision = CQ_PRECISION_F64; d.checkpoint_every = 32;
    memcpy(v, sc->v, sizeof(double) * sc->n * 2);
    for (int p = 0; dva && p < sc->na; ++p) { v[p * 2] += dva[0]; v[p * 2 + 1] += dva[1]; }
    s = create(&d);
    if (s && !add(s, sc->n, sc->x, v, B_E, 0.3, NULL)) { cq_sim_destroy(s); s = NULL; }
    return s;
}

/* centre of ball B after T steps (rollout with ball A's velocity shifted by dva) */
static int b_rollout(const b_scene *sc, int T, const double *dva, double *cb)
{
    static double x[B_MAXP * 2];
    cq_sim *s = b_sim(sc, dva);
    int ok = s && step_ok(s, T);
    cb[0] = cb[1] = 0;
    if (ok) {
        cq_sim_get(s, CQ_FIELD_X, x);
        for (int p = sc->na; p < sc->n; ++p) { cb[0] += x[p * 2] / (sc->n - sc->na); cb[1] += x[p * 2 + 1] / (sc->n - sc->na); }
    }
    cq_sim_destroy(s);
    return ok;
}

TEST(table3_B_billiards_f64_fd)
{
    static b_scene sc;
    static double seed[B_MAXP * 2], g[B_MAXP * 2];
    double t0 = now();
    b_setup(&sc);
    CHECK(sc.n <= B_MAXP, "too many particles");
    for (int k = 0; k < NSTEPS; ++k) {
        const int T = STEPS[k], nb = sc.n - sc.na;
        double J[2][2] = {{0, 0}, {0, 0}}, Jfd[2][2], Jfd2[2][2], err2 = 0, ref2 = 0, c2 = 0;
        cq_sim *s = b_sim(&sc, NULL);
        int ok = s && step_ok(s, T);
        /* adjoint: L_a = x_B,a(T) (mean over ball B), J[a][b] = sum over A's particles of dL_a/dv_q,b */
        for (int a = 0; ok && a < 2; ++a) {
            memset(seed, 0, sizeof seed);
            for (int p = sc.na; p < sc.n; ++p) seed[p * 2 + a] = 1.0 / nb;
            ok = backward_ok(s, seed, NULL, NULL, NULL) && cq_sim_grad(s, CQ_FIELD_V, g) == CQ_SUCCESS;
            for (int p = 0; p < sc.na; ++p) { J[a][0] += g[p * 2]; J[a][1] += g[p * 2 + 1]; }
        }
        cq_sim_destroy(s);
        /* central differences, one column per component of A's velocity; also with step 2h */
        for (int b = 0; ok && b < 2; ++b)
            for (int r = 1; ok && r <= 2; ++r) {
                double dp[2] = {0, 0}, dm[2] = {0, 0}, cp[2], cm[2];
                dp[b] = r * B_H; dm[b] = -r * B_H;
                ok = b_rollout(&sc, T, dp, cp) && b_rollout(&sc, T, dm, cm);
                for (int a = 0; a < 2; ++a) (r == 1 ? Jfd : Jfd2)[a][b] = (cp[a] - cm[a]) / (2 * r * B_H);
            }
        CHECK(ok, "B %d steps did not run", T);
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
                err2 += (J[a][b] - Jfd[a][b]) * (J[a][b] - Jfd[a][b]); ref2 += Jfd[a][b] * Jfd[a][b];
                c2 += (Jfd2[a][b] - Jfd[a][b]) * (Jfd2[a][b] - Jfd[a][b]);
            }
        /* before the balls meet both are exactly 0: "-" as in the paper */
        OURS[2][k] = ref2 > 0 ? sqrt(err2 / ref2) : -1;
        FDC[0][k] = ref2 > 0 ? sqrt(c2 / ref2) : -1;
        if (ref2 == 0) CHECK(err2 == 0, "B %d steps: nonzero gradient %g before the collision", T, sqrt(err2));
        CHECK((PAPER[2][k] >= 0) == (ref2 > 0), "B %d steps: collision %s", T, ref2 > 0 ? "too early" : "not yet");
        if (PAPER[2][k] >= 0)
            CHECK(OURS[2][k] >= 0 && OURS[2][k] <= PAPER[2][k], "B %d steps: relative error %.3g > paper's %.3g",
                  T, OURS[2][k], PAPER[2][k]);
        if (T == 1000) printf("    B: J = [[%.6f %.6f] [%.6f %.6f]] (d x_B(T) / d v_A(0))\n", J[0][0], J[0][1], J[1][0], J[1][1]);
    }
    SECS[2] = now() - t0;
}

/* ====================================================================== C (2D, f64) */
#define C_RES 64
#define C_DT 2e-4
#define C_E 2000.0                  /* dt < dx sqrt(rho / E) = 3.5e-4 */
#define C_ACT 600.0                 /* actuation stress scale */
#define C_NO 4                      /* observation: centre of mass (offset, x10) and its velocity */
#define C_NG 2                      /* actuator groups: left and right half of the finger */
#define C_NP (C_NG * C_NO + C_NG)   /* W (2x4) then b (2) */
#define C_MAXP 1024
#define C_H 1e-6                    /* central-difference step on each parameter */

/* a 6-cell-wide, 20-cell-tall finger standing on the sticky floor; target up and to the left */
static const double C_TARGET[2] = {0.40, 0.42};
typedef struct c_scene { int n, ntip; int act[C_MAXP], tip[C_MAXP]; double x[C_MAXP * 2]; } c_scene;

static void c_setup(c_scene *sc)
{
    const double h = 1.0 / (2 * C_RES), c[2] = {0.5, 3.0 / C_RES + 20.0 / C_RES / 2 + 0.25 / C_RES};
    const int nb[2] = {12, 40};
    double top = 0;
    memset(sc, 0, sizeof *sc);
    sc->n = block(sc->x, 2, c, nb, h);
    for (int p = 0; p < sc->n; ++p) if (sc->x[p * 2 + 1] > top) top = sc->x[p * 2 + 1];
    for (int p = 0; p < sc->n; ++p) {
        sc->act[p] = sc->x[p * 2] < c[0] ? 0 : 1;
        if (sc->x[p * 2 + 1] > top - 1.5 * h) sc->tip[sc->ntip++] = p;   /* top two rows */
    }
}

static void c_observe(cq_sim *s, int n, double *o)
{
    static double x[C_MAXP * 2], v[C_MAXP * 2];
    cq_sim_get(s, CQ_FIELD_X, x); cq_sim_get(s, CQ_FIELD_V, v);
    for (int i = 0; i < C_NO; ++i) o[i] = 0;
    for (int p = 0; p < n; ++p) { o[0] += x[p * 2]; o[1] += x[p * 2 + 1]; o[2] += v[p * 2]; o[3] += v[p * 2 + 1]; }
    for (int i = 0; i < C_NO; ++i) o[i] /= n;
    o[0] = 10 * (o[0] - 0.5); o[1] = 10 * (o[1] - 0.2);
}

/* u = tanh(W o + b); stress of group g = diag(0, C_ACT u_g) (stretch/contract along the finger) */
static void c_control(const double *th, const double *o, double *u, double *stress)
{
    for (int g = 0; g < C_NG; ++g) {
        double z = th[C_NG * C_NO + g];
        for (int i = 0; i < C_NO; ++i) z += th[g * C_NO + i] * o[i];
        u[g] = tanh(z);
        stress[g * 4] = stress[g * 4 + 1] = stress[g * 4 + 2] = 0; stress[g * 4 + 3] = C_ACT * u[g];
    }
}

typedef struct c_ctx { const c_scene *sc; const double *th; double *grad; int ok; } c_ctx;

static void c_hook(cq_sim *s, int step, void *user)
{
    c_ctx *c = (c_ctx *)user;
    static double gx[C_MAXP * 2], gv[C_MAXP * 2];
    double o[C_NO], u[C_NG], stress[C_NG * 4], dU[C_NG * 4], dz[C_NG], dobs[C_NO] = {0, 0, 0, 0};
    const int n = c->sc->n;
    (void)step;
    c_observe(s, n, o);                                  /* s_n, as in the forward pass */
    c_control(c->th, o, u, stress);
    if (cq_sim_actuation_grad(s, dU) != CQ_SUCCESS) { c->ok = 0; return; }
    for (int g = 0; g < C_NG; ++g) {
        dz[g] = C_ACT * dU[g * 4 + 3] * (1 - u[g] * u[g]);
        for (int i = 0; i < C_NO; ++i) { c->grad[g * C_NO + i] += dz[g] * o[i]; dobs[i] += c->th[g * C_NO + i] * dz[g]; }
        c->grad[C_NG * C_NO + g] += dz[g];
    }
    /* o_n depends on s_n: dL/dx_p += (10 / n) dL/do_{0,1}, dL/dv_p += (1 / n) dL/do_{2,3} */
    for (int p = 0; p < n; ++p) {
        gx[p * 2] = 10 * dobs[0] / n; gx[p * 2 + 1] = 10 * dobs[1] / n;
        gv[p * 2] = dobs[2] / n; gv[p * 2 + 1] = dobs[3] / n;
    }
    if (cq_sim_add_state_grad(s, CQ_FIELD_X, gx) != CQ_SUCCESS || cq_sim_add_state_grad(s, CQ_FIELD_V, gv) != CQ_SUCCESS)
        c->ok = 0;
}

/* loss after T controlled steps: |fingertip - target|; with grad != NULL also dL/dtheta */
static int c_rollout(const c_scene *sc, const double *th, int T, double *loss, double *grad)
{
    static double x[C_MAXP * 2], seed[C_MAXP * 2];
    cq_sim_desc d;
    cq_sim *s;
    double tip[2] = {0, 0}, dist;
    int ok;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = C_RES; d.dx = 1.0 / C_RES; d.dt = C_DT; d.gravity[1] = -9.8;
    d.precision = CQ_PRECISION_F64; d.checkpoint_every = grad ? 32 : 0;   /* default walls: sticky */
    s = create(&d);
    ok = s && add(s, sc->n, sc->x, NULL, C_E, 0.3, sc->act);
    for (int k = 0; ok && k < T; ++k) {
        double o[C_NO], u[C_NG], stress[C_NG * 4];
        c_observe(s, sc->n, o);
        c_control(th, o, u, stress);
        ok = cq_sim_set_actuation(s, C_NG, stress) == CQ_SUCCESS && step_ok(s, 1);
    }
    if (ok) {
        cq_sim_get(s, CQ_FIELD_X, x);
        for (int i = 0; i < sc->ntip; ++i) { tip[0] += x[sc->tip[i] * 2] / sc->ntip; tip[1] += x[sc->tip[i] * 2 + 1] / sc->ntip; }
        dist = sqrt((tip[0] - C_TARGET[0]) * (tip[0] - C_TARGET[0]) + (tip[1] - C_TARGET[1]) * (tip[1] - C_TARGET[1]));
        *loss = dist;
        if (grad) {
            c_ctx ctx;
            ctx.sc = sc; ctx.th = th; ctx.grad = grad; ctx.ok = 1;
            for (int i = 0; i < C_NP; ++i) grad[i] = 0;
            memset(seed, 0, sizeof seed);
            for (int i = 0; i < sc->ntip; ++i)
                for (int a = 0; a < 2; ++a) seed[sc->tip[i] * 2 + a] = (tip[a] - C_TARGET[a]) / dist / sc->ntip;
            ok = backward_ok(s, seed, NULL, c_hook, &ctx) && ctx.ok;
        }
    }
    cq_sim_destroy(s);
    return ok;
}

TEST(table3_C_finger_controller_f64_fd)
{
    static c_scene sc;
    /* W rows: left and right actuator; columns: com x, com y, com vx, com vy; then b */
    const double th[C_NP] = {1.2, -0.4, 0.5, -0.3, -0.8, 0.3, -0.6, 0.2, 0.25, -0.35};
    double t0 = now();
    c_setup(&sc);
    for (int k = 0; k < NSTEPS; ++k) {
        const int T = STEPS[k];
        double loss = 0, g[C_NP], gfd[C_NP], err2 = 0, ref2 = 0;
        int ok = c_rollout(&sc, th, T, &loss, g);
        for (int i = 0; ok && i < C_NP; ++i) {
            double tp[C_NP], tm[C_NP], lp = 0, lm = 0;
            memcpy(tp, th, sizeof tp); memcpy(tm, th, sizeof tm);
            tp[i] += C_H; tm[i] -= C_H;
            ok = c_rollout(&sc, tp, T, &lp, NULL) && c_rollout(&sc, tm, T, &lm, NULL);
            gfd[i] = (lp - lm) / (2 * C_H);
            err2 += (g[i] - gfd[i]) * (g[i] - gfd[i]); ref2 += gfd[i] * gfd[i];
        }
        CHECK(ok, "C %d steps did not run", T);
        OURS[3][k] = ok && ref2 > 0 ? sqrt(err2 / ref2) : -1;
        CHECK(OURS[3][k] >= 0 && OURS[3][k] <= PAPER[3][k], "C %d steps: relative error %.3g > paper's %.3g",
              T, OURS[3][k], PAPER[3][k]);
        if (T == 1000) printf("    C: loss %.6f, |dL/dtheta| %.4g\n", loss, sqrt(ref2));
    }
    SECS[3] = now() - t0;
}

/* ====================================================================== the table */
static void fmt(char *buf, double v) { if (v < 0) strcpy(buf, "-"); else sprintf(buf, "%.2e", v); }

TEST(table3_print)
{
    printf("\n  Table III (ChainQueen, seed 000): relative error of gradients, ours vs the paper's\n");
    printf("  case | steps | ours     | paper\n");
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < NSTEPS; ++k) {
            char o[32], p[32];
            fmt(o, OURS[c][k]); fmt(p, PAPER[c][k]);
            printf("  %-4s | %-5d | %-8s | %s\n", CASES[c], STEPS[k], o, p);
        }
    printf("  (cpu seconds: A1 %.1f, A2 %.1f, B %.1f, C %.1f)\n\n", SECS[0], SECS[1], SECS[2], SECS[3]);
}

RUN_TESTS(CASE(table3_A1_two_cubes_f32_analytic), CASE(table3_A2_wall_f32_analytic),
          CASE(table3_B_billiards_f64_fd), CASE(table3_C_finger_controller_f64_fd), CASE(table3_print))
