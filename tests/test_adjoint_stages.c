/* The per-particle adjoint stages (templates/adjoint.j2) against float64 central differences:
   cq__stress_vjp_* (R held fixed), cq__polar_vjp_* alone (random F, F = I, repeated singular
   values, near inversion; finite at the non-differentiable points), and cq__pk1_vjp_* (the
   whole chain material -> polar -> Lame -> incompressibility -> actuation) for every dim and
   built-in material; then each transfer-kernel adjoint alone (cq__p2g_adj_*, cq__grid_adj_* with
   every wall condition, cq__g2p_adj_*) against central differences of its forward kernel, 2D and
   3D.  The float32 variants are checked to be finite and close to float64. */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>

#define H 1e-6          /* central-difference step */
#define TOL 1e-6        /* relative to the largest entry of the gradient being checked */

static unsigned rng_state = 12345u;
static double urand(void) { rng_state = rng_state * 1664525u + 1013904223u; return (rng_state >> 8) / 16777216.0; }
static double srand1(void) { return 2 * urand() - 1; }

/* ---------------------------------------------------------------- variant tables */
typedef void (*stress64_fn)(const double *, const double *, double, double, double *);
typedef void (*svjp64_fn)(const double *, const double *, double, double, const double *, double *, double *, double *, double *);
typedef void (*pk164_fn)(const double *, double, double, int, const cq__params_f64 *, const double *, double *);
typedef void (*pvjp64_fn)(const double *, double, double, int, const cq__params_f64 *, const double *, const double *,
                          double *, double *, double *, double *);
typedef void (*stress32_fn)(const float *, const float *, float, float, float *);
typedef void (*svjp32_fn)(const float *, const float *, float, float, const float *, float *, float *, float *, float *);
typedef void (*pk132_fn)(const float *, float, float, int, const cq__params_f32 *, const float *, float *);
typedef void (*pvjp32_fn)(const float *, float, float, int, const cq__params_f32 *, const float *, const float *,
                          float *, float *, float *, float *);

typedef struct variant {
    const char *name; int dim, rot;
    stress64_fn stress; svjp64_fn svjp; pk164_fn pk1; pvjp64_fn pvjp;
    stress32_fn stress32; svjp32_fn svjp32; pk132_fn pk1_32; pvjp32_fn pvjp32;
} variant;

#define VARIANT(D, M, ROT) { #D "d_" #M, D, ROT, cq__stress_##D##d_##M##_f64, cq__stress_vjp_##D##d_##M##_f64, \
    cq__pk1_##D##d_##M##_f64, cq__pk1_vjp_##D##d_##M##_f64, cq__stress_##D##d_##M##_f32, \
    cq__stress_vjp_##D##d_##M##_f32, cq__pk1_##D##d_##M##_f32, cq__pk1_vjp_##D##d_##M##_f32 }
static const variant VARIANTS[] = {
    VARIANT(2, fixed_corotated, 1), VARIANT(2, neohookean, 0),
    VARIANT(3, fixed_corotated, 1), VARIANT(3, neohookean, 0),
};
#define NV ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static void polar64(int d, const double *F, double *R) { if (d == 2) cq__polar_2d_f64(F, R); else cq__polar_3d_f64(F, R); }
static void polar_vjp64(int d, const double *F, const double *R, const double *dR, double *dF)
{ if (d == 2) cq__polar_vjp_2d_f64(F, R, dR, dF); else cq__polar_vjp_3d_f64(F, R, dR, dF); }
static void polar32(int d, const float *F, float *R) { if (d == 2) cq__polar_2d_f32(F, R); else cq__polar_3d_f32(F, R); }
static void polar_vjp32(int d, const float *F, const float *R, const float *dR, float *dF)
{ if (d == 2) cq__polar_vjp_2d_f32(F, R, dR, dF); else cq__polar_vjp_3d_f32(F, R, dR, dF); }

/* ---------------------------------------------------------------- helpers */
static double dot(const double *a, const double *b, int n) { double s = 0; for (int i = 0; i < n; ++i) s += a[i] * b[i]; return s; }
static double det(int d, const double *F) { return d == 2 ? cq__det_2d_f64(F) : cq__det_3d_f64(F); }

static void random_F(int d, double *F)   /* I + 0.35 U(-1,1) entries, det > 0.2 */
{
    do {
        for (int i = 0; i < d * d; ++i) F[i] = (i % (d + 1) == 0) + 0.35 * srand1();
    } while (det(d, F) <= 0.2);
}

static void random_rotation(int d, double *Q)
{
    if (d == 2) {
        double a = 6.283185307179586 * urand();
        Q[0] = cos(a); Q[1] = -sin(a); Q[2] = sin(a); Q[3] = cos(a);
        return;
    }
    double q[4], n = 0;
    for (int i = 0; i < 4; ++i) { q[i] = srand1(); n += q[i] * q[i]; }
    n = sqrt(n);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    Q[0] = 1 - 2 * (y * y + z * z); Q[1] = 2 * (x * y - z * w); Q[2] = 2 * (x * z + y * w);
    Q[3] = 2 * (x * y + z * w); Q[4] = 1 - 2 * (x * x + z * z); Q[5] = 2 * (y * z - x * w);
    Q[6] = 2 * (x * z - y * w); Q[7] = 2 * (y * z + x * w); Q[8] = 1 - 2 * (x * x + y * y);
}

/* F = Q1 diag(s) Q2^T with random rotations (identity ones when plain) */
static void make_F(int d, const double *s, int plain, double *F)
{
    double Q1[9], Q2[9];
    if (plain) { for (int i = 0; i < 9; ++i) Q1[i] = Q2[i] = (i % (d + 1) == 0); }
    else { random_rotation(d, Q1); random_rotation(d, Q2); }
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
            double v = 0;
            for (int k = 0; k < d; ++k) v += Q1[i * d + k] * s[k] * Q2[j * d + k];
            F[i * d + j] = v;
        }
}

/* relative error of an analytic gradient against a finite-difference one: the largest entry
   difference over the largest entry (plus a floor for all-zero gradients) */
static double relerr(const double *an, const double *fd, int n)
{
    double m = 0, e = 0;
    for (int i = 0; i < n; ++i) { if (fabs(fd[i]) > m) m = fabs(fd[i]); if (fabs(an[i]) > m) m = fabs(an[i]); }
    for (int i = 0; i < n; ++i) if (fabs(an[i] - fd[i]) > e) e = fabs(an[i] - fd[i]);
    return e / (m + 1e-300 + (m == 0));
}

static int all_finite(const double *a, int n) { for (int i = 0; i < n; ++i) if (!cq__isfinite_f64(a[i])) return 0; return 1; }
static int all_finite32(const float *a, int n) { for (int i = 0; i < n; ++i) if (!cq__isfinite_f32(a[i])) return 0; return 1; }

static double worst_stress[NV], worst_pk1[NV], worst_polar[2], worst_f32[NV];
static void track(double *w, double e) { if (e > *w) *w = e; }

/* ---------------------------------------------------------------- stress VJP, R held fixed */
TEST(stress_vjp_matches_central_differences)
{
    for (int v = 0; v < NV; ++v) {
        const variant *V = &VARIANTS[v];
        int d = V->dim, n = d * d;
        for (int trial = 0; trial < 20; ++trial) {
            double F[9], R[9], dP[9], P1[9], P2[9], X[9];
            double E = 500 + 1000 * urand(), nu = 0.05 + 0.4 * urand(), mu, lam;
            cq__lame_f64(E, nu, &mu, &lam);
            random_F(d, F);
            polar64(d, F, R);
            for (int i = 0; i < n; ++i) dP[i] = srand1();
            double dF[9] = {0}, dR[9] = {0}, dmu = 0, dlam = 0;
            V->svjp(F, R, mu, lam, dP, dF, dR, &dmu, &dlam);
            double fF[9], fR[9], fm[2], am[2] = {dmu, dlam};
            for (int i = 0; i < n; ++i) {
                memcpy(X, F, sizeof X); X[i] += H; V->stress(X, R, mu, lam, P1);
                X[i] -= 2 * H; V->stress(X, R, mu, lam, P2);
                fF[i] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H);
                memcpy(X, R, sizeof X); X[i] += H; V->stress(F, X, mu, lam, P1);
                X[i] -= 2 * H; V->stress(F, X, mu, lam, P2);
                fR[i] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H);
            }
            /* mu, lam are ~1e2-1e4: step relative to them */
            double hm = H * mu, hl = H * lam;
            V->stress(F, R, mu + hm, lam, P1); V->stress(F, R, mu - hm, lam, P2);
            fm[0] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * hm);
            V->stress(F, R, mu, lam + hl, P1); V->stress(F, R, mu, lam - hl, P2);
            fm[1] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * hl);
            double e1 = relerr(dF, fF, n), e2 = relerr(dR, fR, n), e3 = relerr(am, fm, 2);
            CHECK(e1 < TOL, "%s trial %d: dF rel err %.3g", V->name, trial, e1);
            CHECK(e2 < TOL, "%s trial %d: dR rel err %.3g", V->name, trial, e2);
            CHECK(e3 < TOL, "%s trial %d: dmu/dlam rel err %.3g (%g %g vs %g %g)", V->name, trial, e3, am[0], am[1], fm[0], fm[1]);
            if (!V->rot) for (int i = 0; i < n; ++i) CHECK(dR[i] == 0, "%s: dR[%d] = %g for a material without R", V->name, i, dR[i]);
            track(&worst_stress[v], e1); track(&worst_stress[v], e2); track(&worst_stress[v], e3);
        }
    }
}

/* ---------------------------------------------------------------- polar VJP alone */
typedef struct polar_case { int dim; double s[3]; int plain, check_fd; const char *what; } polar_case;
static const polar_case POLAR_CASES[] = {
    {2, {1, 1, 0}, 1, 1, "F = I"},
    {2, {2, 2, 0}, 0, 1, "rotation * 2I"},
    {2, {3, 1, 0}, 0, 1, "Q1 diag(3,1) Q2^T"},
    {2, {1, -0.05, 0}, 0, 1, "near inverted diag(1,-0.05)"},
    {2, {0.3, 0.29, 0}, 0, 1, "compressed"},
    {2, {1, -1, 0}, 1, 0, "diag(1,-1): sig_0 + sig_1 = 0"},
    {2, {1, -1, 0}, 0, 0, "Q1 diag(1,-1) Q2^T"},
    {2, {0, 0, 0}, 1, 0, "F = 0"},
    {3, {1, 1, 1}, 1, 1, "F = I"},
    {3, {2, 2, 2}, 0, 1, "rotation * 2I"},
    {3, {3, 1, 1}, 0, 1, "Q1 diag(3,1,1) Q2^T"},
    {3, {3, 3, 1}, 0, 1, "Q1 diag(3,3,1) Q2^T"},
    {3, {1, 1, -0.05}, 0, 1, "near inverted (1,1,-0.05)"},
    {3, {1, 1, -0.05}, 1, 1, "diag(1,1,-0.05)"},
    {3, {1.3, 0.7, 0.4}, 0, 1, "distinct"},
    {3, {1, -1, -1}, 1, 1, "diag(1,-1,-1): a rotation by pi"},
    {3, {1, 0.05, -0.05}, 0, 0, "sig_1 + sig_2 = 0"},
    {3, {1, 1, -1}, 1, 0, "diag(1,1,-1): sig_1 + sig_2 = 0"},
    {3, {1, 1, 0}, 0, 1, "rank 2"},
    {3, {0, 0, 0}, 1, 0, "F = 0"},
};

static void polar_check(int d, const double *F, int check_fd, const char *what)
{
    int n = d * d;
    double R[9], G[9], dF[9] = {0}, fd[9], X[9], R1[9], R2[9];
    for (int i = 0; i < n; ++i) G[i] = srand1();
    polar64(d, F, R);
    polar_vjp64(d, F, R, G, dF);
    CHECK(all_finite(dF, n), "%dD %s: non-finite polar VJP", d, what);
    /* float32 at the same point: finite */
    float Ff[9], Rf[9], Gf[9], dFf[9] = {0};
    for (int i = 0; i < n; ++i) { Ff[i] = (float)F[i]; Gf[i] = (float)G[i]; }
    polar32(d, Ff, Rf);
    polar_vjp32(d, Ff, Rf, Gf, dFf);
    CHECK(all_finite32(dFf, n), "%dD %s: non-finite f32 polar VJP", d, what);
    if (!check_fd) return;
    for (int i = 0; i < n; ++i) {
        memcpy(X, F, sizeof X); X[i] += H; polar64(d, X, R1);
        X[i] -= 2 * H; polar64(d, X, R2);
        fd[i] = (dot(G, R1, n) - dot(G, R2, n)) / (2 * H);
    }
    double e = relerr(dF, fd, n);
    CHECK(e < TOL, "%dD %s: polar VJP rel err %.3g", d, what, e);
    track(&worst_polar[d - 2], e);
    /* f32 vs f64: loose (the SVD itself is only float-accurate) */
    double g32[9];
    for (int i = 0; i < n; ++i) g32[i] = dFf[i];
    double e32 = relerr(g32, dF, n);
    CHECK(e32 < 2e-3, "%dD %s: f32 polar VJP differs from f64 by %.3g", d, what, e32);
}

TEST(polar_vjp_special_points)
{
    for (int c = 0; c < (int)(sizeof POLAR_CASES / sizeof POLAR_CASES[0]); ++c) {
        const polar_case *pc = &POLAR_CASES[c];
        for (int rep = 0; rep < (pc->plain ? 1 : 5); ++rep) {
            double F[9];
            make_F(pc->dim, pc->s, pc->plain, F);
            polar_check(pc->dim, F, pc->check_fd, pc->what);
        }
    }
}

TEST(polar_vjp_random)
{
    for (int d = 2; d <= 3; ++d)
        for (int trial = 0; trial < 50; ++trial) {
            double F[9];
            random_F(d, F);
            polar_check(d, F, 1, "random F");
            for (int i = 0; i < d * d; ++i) F[i] = 1.5 * srand1();   /* arbitrary F, either sign of det */
            double Fc[9], U[9], V[9], s[3];
            memcpy(Fc, F, sizeof Fc);
            if (d == 3) {   /* FD only where R is smooth on the step's scale */
                cq__svd_3d_f64(Fc, U, s, V);
                polar_check(d, F, s[1] + s[2] > 1e-2, "arbitrary F");
            } else {
                double a = F[0] + F[3], b = F[2] - F[1];
                polar_check(d, F, sqrt(a * a + b * b) > 1e-2, "arbitrary F");
            }
        }
}

/* ---------------------------------------------------------------- the whole pk1 */
TEST(pk1_vjp_matches_central_differences)
{
    for (int v = 0; v < NV; ++v) {
        const variant *V = &VARIANTS[v];
        int d = V->dim, n = d * d;
        static const int incs[] = {0, 1, 2, 3};
        for (int ii = 0; ii < 4; ++ii)
            for (int group = -1; group <= 1; group += 2)
                for (int trial = 0; trial < 6; ++trial) {
                    cq__params_f64 prm;
                    double act[2 * 9], F[9], dP[9], P1[9], P2[9], X[9];
                    memset(&prm, 0, sizeof prm);
                    prm.incompressibility = incs[ii]; prm.act_groups = 2;
                    for (int i = 0; i < 2 * n; ++i) act[i] = 300 * srand1();
                    double E = 500 + 1000 * urand(), nu = 0.05 + 0.4 * urand();
                    random_F(d, F);
                    for (int i = 0; i < n; ++i) dP[i] = srand1();
                    double dF[9] = {0}, dE = 0, dnu = 0, dact[9] = {0};
                    V->pvjp(F, E, nu, group, &prm, act, dP, dF, &dE, &dnu, dact);
                    double fF[9], fp[2], fa[9], ap[2] = {dE, dnu};
                    for (int i = 0; i < n; ++i) {
                        memcpy(X, F, sizeof X); X[i] += H; V->pk1(X, E, nu, group, &prm, act, P1);
                        X[i] -= 2 * H; V->pk1(X, E, nu, group, &prm, act, P2);
                        fF[i] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H);
                    }
                    V->pk1(F, E + H * E, nu, group, &prm, act, P1); V->pk1(F, E - H * E, nu, group, &prm, act, P2);
                    fp[0] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H * E);
                    V->pk1(F, E, nu + H, group, &prm, act, P1); V->pk1(F, E, nu - H, group, &prm, act, P2);
                    fp[1] = (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H);
                    for (int i = 0; i < n; ++i) {
                        double *sa = act + n;   /* group 1's block */
                        double keep = sa[i];
                        sa[i] = keep + H * 300; V->pk1(F, E, nu, 1, &prm, act, P1);
                        sa[i] = keep - H * 300; V->pk1(F, E, nu, 1, &prm, act, P2);
                        sa[i] = keep;
                        fa[i] = group == 1 ? (dot(dP, P1, n) - dot(dP, P2, n)) / (2 * H * 300) : 0;
                    }
                    double e1 = relerr(dF, fF, n), e2 = relerr(ap, fp, 1), e3 = relerr(ap + 1, fp + 1, 1), e4 = relerr(dact, fa, n);
                    CHECK(e1 < TOL, "%s p=%d group %d: dF rel err %.3g", V->name, incs[ii], group, e1);
                    CHECK(e2 < TOL, "%s p=%d group %d: dE rel err %.3g (%.10g vs %.10g)", V->name, incs[ii], group, e2, ap[0], fp[0]);
                    CHECK(e3 < TOL, "%s p=%d group %d: dnu rel err %.3g (%.10g vs %.10g)", V->name, incs[ii], group, e3, ap[1], fp[1]);
                    CHECK(e4 < TOL, "%s p=%d group %d: dact rel err %.3g", V->name, incs[ii], group, e4);
                    track(&worst_pk1[v], e1); track(&worst_pk1[v], e2); track(&worst_pk1[v], e3); track(&worst_pk1[v], e4);
                    /* dact = NULL is allowed */
                    double dF2[9] = {0}, dE2 = 0, dnu2 = 0;
                    V->pvjp(F, E, nu, group, &prm, act, dP, dF2, &dE2, &dnu2, NULL);
                    CHECK(memcmp(dF, dF2, sizeof dF) == 0 && dE == dE2 && dnu == dnu2, "%s: dact = NULL changed the result", V->name);
                }
    }
}

/* the outputs are ADDED to */
TEST(vjp_outputs_accumulate)
{
    for (int v = 0; v < NV; ++v) {
        const variant *V = &VARIANTS[v];
        int d = V->dim, n = d * d;
        cq__params_f64 prm;
        memset(&prm, 0, sizeof prm);
        prm.incompressibility = 3; prm.act_groups = 1;
        double F[9], dP[9], act[9];
        random_F(d, F);
        for (int i = 0; i < n; ++i) { dP[i] = srand1(); act[i] = 100 * srand1(); }
        double a[9] = {0}, aE = 0, an = 0, aa[9] = {0}, b[9], bE = 1, bn = 2, ba[9];
        for (int i = 0; i < n; ++i) { b[i] = i; ba[i] = -i; }
        V->pvjp(F, 1000, 0.3, 0, &prm, act, dP, a, &aE, &an, aa);
        V->pvjp(F, 1000, 0.3, 0, &prm, act, dP, b, &bE, &bn, ba);
        for (int i = 0; i < n; ++i) {
            CHECK(fabs(b[i] - i - a[i]) <= 1e-9 * (1 + fabs(a[i])), "%s: dF[%d] not accumulated", V->name, i);
            CHECK(fabs(ba[i] + i - aa[i]) <= 1e-9 * (1 + fabs(aa[i])), "%s: dact[%d] not accumulated", V->name, i);
        }
        CHECK(fabs(bE - 1 - aE) <= 1e-9 * (1 + fabs(aE)) && fabs(bn - 2 - an) <= 1e-9 * (1 + fabs(an)), "%s: dE/dnu not accumulated", V->name);
    }
}

/* ---------------------------------------------------------------- float32 */
TEST(f32_variants_finite_and_close_to_f64)
{
    for (int v = 0; v < NV; ++v) {
        const variant *V = &VARIANTS[v];
        int d = V->dim, n = d * d;
        for (int trial = 0; trial < 20; ++trial) {
            cq__params_f64 prm;
            cq__params_f32 prmf;
            memset(&prm, 0, sizeof prm); memset(&prmf, 0, sizeof prmf);
            prm.incompressibility = prmf.incompressibility = trial % 4;
            prm.act_groups = prmf.act_groups = 1;
            double F[9], dP[9], act[9], E = 500 + 1000 * urand(), nu = 0.05 + 0.4 * urand();
            float Ff[9], dPf[9], actf[9];
            random_F(d, F);
            for (int i = 0; i < n; ++i) { dP[i] = srand1(); act[i] = 100 * srand1(); Ff[i] = (float)F[i]; dPf[i] = (float)dP[i]; actf[i] = (float)act[i]; }
            double dF[9] = {0}, dE = 0, dnu = 0, dact[9] = {0};
            float dFf[9] = {0}, dEf = 0, dnuf = 0, dactf[9] = {0};
            V->pvjp(F, E, nu, 0, &prm, act, dP, dF, &dE, &dnu, dact);
            V->pvjp32(Ff, (float)E, (float)nu, 0, &prmf, actf, dPf, dFf, &dEf, &dnuf, dactf);
            CHECK(all_finite32(dFf, n) && all_finite32(dactf, n) && cq__isfinite_f32(dEf) && cq__isfinite_f32(dnuf),
                  "%s f32: non-finite pk1 VJP", V->name);
            double g[9], a[2] = {dEf, dnuf}, ref[2] = {dE, dnu};
            for (int i = 0; i < n; ++i) g[i] = dFf[i];
            double e = relerr(g, dF, n), e2 = relerr(a, ref, 1), e3 = relerr(a + 1, ref + 1, 1);
            CHECK(e < 1e-3 && e2 < 1e-3 && e3 < 1e-3, "%s f32 vs f64: %.3g %.3g %.3g", V->name, e, e2, e3);
            track(&worst_f32[v], e); track(&worst_f32[v], e2); track(&worst_f32[v], e3);
            /* the stress VJP alone too */
            float Rf[9], dRf[9] = {0}, dF2[9] = {0}, dmu = 0, dlam = 0;
            if (V->rot) polar32(d, Ff, Rf); else for (int i = 0; i < n; ++i) Rf[i] = 0;
            V->svjp32(Ff, Rf, 400.0f, 700.0f, dPf, dF2, dRf, &dmu, &dlam);
            CHECK(all_finite32(dF2, n) && all_finite32(dRf, n) && cq__isfinite_f32(dmu) && cq__isfinite_f32(dlam),
                  "%s f32: non-finite stress VJP", V->name);
            (void)V->stress32; (void)V->pk1_32;
        }
    }
}

/* ================================================================ transfer-stage adjoints
   Each of P2G, the grid update (every wall condition) and G2P alone, float64, against central
   differences of the forward kernel.  Particles sit at cell offsets in [0.6, 1.4) so no step
   moves `base`; grid inputs keep |v.n|, |v_t| and the friction clamp l_t + c l_n away from
   their kinks (margin KINK), with cases on both sides of each kink. */
#define RES 12
#define NPT 4                  /* particles */
#define MAXNODES (RES * RES * RES)
#define KINK 1e-2
/* Step for inputs L is exactly linear in (P2G: vol, E, act_stress; G2P: the grid velocities):
   their central differences have no truncation error at any step, and a larger one keeps the
   rounding noise (their share of L is small next to the other terms) well below TOL. */
#define HLIN 1e-4

typedef void (*p2g64_fn)(int, const cq__params_f64 *, cq__pview_f64, cq__gview_f64);
typedef void (*p2gadj64_fn)(int, const cq__params_f64 *, cq__pview_f64, const double *, const double *,
                            cq__pview_f64, cq__pview_f64, double *);
typedef void (*gridfwd64_fn)(int, const cq__params_f64 *, cq__gview_f64);
typedef void (*gridadj64_fn)(int, const cq__params_f64 *, const double *, const double *, const double *, double *, double *);
typedef int (*g2p64_fn)(int, const cq__params_f64 *, cq__pview_f64, cq__pview_f64, cq__gview_f64);
typedef void (*g2padj64_fn)(int, const cq__params_f64 *, cq__pview_f64, cq__gview_f64, cq__pview_f64, cq__pview_f64, double *);
typedef int (*bcaxis64_fn)(int, double, const cq__params_f64 *, double *);
typedef int (*wnormal64_fn)(const int *, int, const cq__params_f64 *);

typedef void (*p2gadj32_fn)(int, const cq__params_f32 *, cq__pview_f32, const float *, const float *,
                            cq__pview_f32, cq__pview_f32, float *);
typedef void (*gridadj32_fn)(int, const cq__params_f32 *, const float *, const float *, const float *, float *, float *);
typedef void (*g2padj32_fn)(int, const cq__params_f32 *, cq__pview_f32, cq__gview_f32, cq__pview_f32, cq__pview_f32, float *);

/* P2G and the G2P adjoint as one particle's scatter, from the kernels' two halves: the particle
   half packs (kernels.j2 >>p2g_, >>g2p_adj_), then the packed record is added to each row of 3
   nodes of its stencil by cq__gather_row, the very arithmetic the node half (>>grid_gather_)
   runs per particle; the gather's walk over the sorted cells is checked end to end
   (test_physics, test_gradients, test_batch). */
#define SCATTER(D, P, T, PK, M_OUT, V_OUT)                                                             \
    do {                                                                                               \
        int base_[3], o_[3] = {0, 0, 0};                                                               \
        T fx_[3];                                                                                      \
        cq__base_##D##d_##P(s.x + (long)p * D, prm, base_, fx_);                                       \
        for (o_[0] = 0; o_[0] < 3; ++o_[0])   /* the rows; the last axis' 3 nodes in one call */     \
            for (o_[1] = 0; o_[1] < (D == 3 ? 3 : 1); ++o_[1]) {                                      \
                long idx_ = 0;                                                                         \
                for (int a_ = 0; a_ < D; ++a_) idx_ = idx_ * prm->res[a_] + base_[a_] + o_[a_];        \
                cq__gather_row_##D##d_##P(PK, o_, prm, M_OUT ? M_OUT + idx_ : NULL, V_OUT + idx_ * D); \
            }                                                                                          \
    } while (0)
#define P2G_SCATTER(D, M)                                                                              \
    static void p2g_##D##d_##M(int p, const cq__params_f64 *prm, cq__pview_f64 s, cq__gview_f64 g)    \
    {                                                                                                  \
        double pk[CQ__PK(3)];                                                                          \
        cq__p2g_fwd_##D##d_##M##_f64(p, prm, s, pk);                                                   \
        SCATTER(D, f64, double, pk, g.m, g.v);                                                         \
    }
P2G_SCATTER(2, fixed_corotated) P2G_SCATTER(2, neohookean) P2G_SCATTER(3, fixed_corotated) P2G_SCATTER(3, neohookean)
#define G2P_ADJ_SCATTER(D, P, T)                                                                        \
    static void g2p_adj_##D##d_##P(int p, const cq__params_##P *prm, cq__pview_##P s, cq__gview_##P g,  \
                                   cq__pview_##P ao, cq__pview_##P ai, T *gvb)                          \
    {                                                                                                  \
        T pk[CQ__PK(3)], *none = NULL;                                                                 \
        cq__g2p_adj_##D##d_##P(p, prm, s, g, ao, ai, pk);   /* packs fx, a, B (not the mass) */       \
        SCATTER(D, P, T, pk, none, gvb);                                                               \
    }
G2P_ADJ_SCATTER(2, f64, double) G2P_ADJ_SCATTER(3, f64, double) G2P_ADJ_SCATTER(2, f32, float) G2P_ADJ_SCATTER(3, f32, float)

typedef struct tvariant { const char *name; int dim; p2g64_fn p2g; p2gadj64_fn p2g_adj; p2gadj32_fn p2g_adj32; } tvariant;
#define TVARIANT(D, M) { #D "d_" #M, D, p2g_##D##d_##M, cq__p2g_adj_##D##d_##M##_f64, cq__p2g_adj_##D##d_##M##_f32 }
static const tvariant TVARIANTS[] = {
    TVARIANT(2, fixed_corotated), TVARIANT(2, neohookean), TVARIANT(3, fixed_corotated), TVARIANT(3, neohookean),
};
#define NTV ((int)(sizeof TVARIANTS / sizeof TVARIANTS[0]))

typedef struct dimops {
    gridfwd64_fn grid; gridadj64_fn grid_adj; g2p64_fn g2p; g2padj64_fn g2p_adj; bcaxis64_fn bc_axis; wnormal64_fn wall_normal;
    gridadj32_fn grid_adj32; g2padj32_fn g2p_adj32;
} dimops;
static const dimops DIMOPS[2] = {
    { cq__grid_fwd_2d_f64, cq__grid_adj_2d_f64, cq__g2p_fwd_2d_f64, g2p_adj_2d_f64, cq__bc_axis_2d_f64, cq__wall_normal_2d_f64,
      cq__grid_adj_2d_f32, g2p_adj_2d_f32 },
    { cq__grid_fwd_3d_f64, cq__grid_adj_3d_f64, cq__g2p_fwd_3d_f64, g2p_adj_3d_f64, cq__bc_axis_3d_f64, cq__wall_normal_3d_f64,
      cq__grid_adj_3d_f32, g2p_adj_3d_f32 },
};

static double worst_p2g[NTV], worst_grid[2][5], worst_g2p[2], worst_t32[3][2];

static long node_count(int d) { return d == 2 ? RES * RES : (long)RES * RES * RES; }

static void transfer_params(int d, cq__params_f64 *prm)
{
    memset(prm, 0, sizeof *prm);
    prm->dx = 1.0 / RES; prm->inv_dx = RES; prm->dt = 1e-3;
    prm->gravity[0] = 0.7; prm->gravity[1] = -9.8; prm->gravity[2] = d == 3 ? 1.3 : 0;
    for (int a = 0; a < 3; ++a) prm->res[a] = a < d ? RES : 1;
    prm->bound = 3; prm->boundary = CQ__BC_SLIP; prm->nodes = (int)node_count(d);
}

/* particle arrays (plus their view) */
typedef struct pbuf {
    double x[NPT * 3], v[NPT * 3], C[NPT * 9], F[NPT * 9], mass[NPT], vol[NPT], E[NPT], nu[NPT], act_stress[2 * 9];
    int act[NPT];
} pbuf;
static cq__pview_f64 view_of(pbuf *b)
{
    cq__pview_f64 v;
    v.x = b->x; v.v = b->v; v.C = b->C; v.F = b->F; v.mass = b->mass; v.vol = b->vol; v.E = b->E; v.nu = b->nu;
    v.act = b->act; v.act_stress = b->act_stress; v.scene = NULL;
    return v;
}

/* x at cells 4..6 (stencils overlap) with offsets in [0.6, 1.4): fx never leaves that range */
static void random_x(int d, double *x)
{
    for (int a = 0; a < d; ++a) x[a] = (4 + (int)(3 * urand()) + 0.6 + 0.8 * urand()) / RES;
}

/* NPT particles for P2G: x as random_x, v ~ 1, C ~ 5, F near I, vol ~ (dx/2)^d, density ~ 1000;
   groups 0, 1, none, 0 (shared with particle 0), with one past act_groups = 2 on odd trials */
static void random_particles(int d, int trial, pbuf *b)
{
    int n = d * d;
    memset(b, 0, sizeof *b);
    for (int p = 0; p < NPT; ++p) {
        random_x(d, b->x + p * d);
        for (int a = 0; a < d; ++a) b->v[p * d + a] = srand1();
        for (int a = 0; a < n; ++a) b->C[p * n + a] = 5 * srand1();
        do { for (int a = 0; a < n; ++a) b->F[p * n + a] = (a % (d + 1) == 0) + 0.2 * srand1(); } while (det(d, b->F + p * n) < 0.5);
        b->vol[p] = (0.5 + urand()) * pow(0.5 / RES, d);
        b->mass[p] = (0.5 + urand()) * 1000 * b->vol[p];
        b->E[p] = 500 + 1000 * urand(); b->nu[p] = 0.05 + 0.4 * urand();
    }
    b->act[0] = 0; b->act[1] = 1; b->act[2] = trial % 2 ? 2 : -1; b->act[3] = 0;
    for (int i = 0; i < 2 * n; ++i) b->act_stress[i] = 300 * srand1();
}

/* ---------------------------------------------------------------- P2G */
typedef struct p2g_ctx {
    const tvariant *V; const cq__params_f64 *prm; cq__pview_f64 s; int only;
    const double *wa, *wb; double *gm, *gv;
} p2g_ctx;

/* L = sum_i a_i m_i + b_i . p_i over the grid P2G scatters (particle `only`, or all when < 0) */
static double p2g_L(const p2g_ctx *c)
{
    int d = c->V->dim;
    long nodes = node_count(d);
    cq__gview_f64 g;
    memset(c->gm, 0, (size_t)nodes * sizeof(double));
    memset(c->gv, 0, (size_t)nodes * d * sizeof(double));
    g.m = c->gm; g.v = c->gv;
    for (int p = 0; p < NPT; ++p) if (c->only < 0 || p == c->only) c->V->p2g(p, c->prm, c->s, g);
    double L = 0;
    for (long i = 0; i < nodes; ++i) L += c->wa[i] * c->gm[i] + dot(c->wb + i * d, c->gv + i * d, d);
    return L;
}
static double p2g_fd(const p2g_ctx *c, double *t, double h)
{
    double keep = *t, L1, L2;
    *t = keep + h; L1 = p2g_L(c);
    *t = keep - h; L2 = p2g_L(c);
    *t = keep;
    return (L1 - L2) / (2 * h);
}

TEST(p2g_adj_matches_central_differences)
{
    rng_state = 101u;   /* the same inputs whichever tests run before */
    static double wa[MAXNODES], wb[MAXNODES * 3], gm[MAXNODES], gv[MAXNODES * 3];
    for (int v = 0; v < NTV; ++v) {
        const tvariant *V = &TVARIANTS[v];
        const int d = V->dim, n = d * d;
        const long nodes = node_count(d);
        for (int inc = 0; inc <= 3; inc += 3)
            for (int trial = 0; trial < 6; ++trial) {
                cq__params_f64 prm;
                pbuf b, ai, pg;
                double dact[NPT * 9];
                transfer_params(d, &prm);
                prm.incompressibility = inc; prm.act_groups = 2;
                random_particles(d, trial, &b);
                /* weights: all, masses only, momenta only */
                int mode = trial % 3;
                for (long i = 0; i < nodes; ++i) {
                    wa[i] = mode == 2 ? 0 : srand1();
                    for (int a = 0; a < d; ++a) wb[i * d + a] = mode == 1 ? 0 : srand1();
                }
                /* analytic: ai.x, ai.F and pg are ADDED to (start from known values), ai.v, ai.C and
                   dact are SET (start from garbage) */
                for (int i = 0; i < NPT * 3; ++i) { ai.x[i] = 0.25 * i; ai.v[i] = 1e30; }
                for (int i = 0; i < NPT * 9; ++i) { ai.F[i] = -0.5 * i; ai.C[i] = -1e30; dact[i] = 7e30; }
                for (int p = 0; p < NPT; ++p) { pg.mass[p] = 1 + p; pg.vol[p] = 2 + p; pg.E[p] = 3 + p; pg.nu[p] = 4 + p; }
                cq__pview_f64 s = view_of(&b), vai = view_of(&ai), vpg = view_of(&pg);
                for (int p = 0; p < NPT; ++p) V->p2g_adj(p, &prm, s, wb, wa, vai, vpg, dact + p * n);
                double an_x[NPT * 3], an_F[NPT * 9], an_par[4][NPT];
                for (int i = 0; i < NPT * d; ++i) an_x[i] = ai.x[i] - 0.25 * i;
                for (int i = 0; i < NPT * n; ++i) an_F[i] = ai.F[i] + 0.5 * i;
                for (int p = 0; p < NPT; ++p) {
                    an_par[0][p] = pg.mass[p] - (1 + p); an_par[1][p] = pg.vol[p] - (2 + p);
                    an_par[2][p] = pg.E[p] - (3 + p); an_par[3][p] = pg.nu[p] - (4 + p);
                }
                /* central differences of the forward, of the perturbed particle's part of L alone (the
                   parts add; fewer terms, less rounding) */
                p2g_ctx c;
                double fx[NPT * 3], fv[NPT * 3], fC[NPT * 9], fF[NPT * 9], fpar[4][NPT];
                c.V = V; c.prm = &prm; c.s = s; c.only = -1; c.wa = wa; c.wb = wb; c.gm = gm; c.gv = gv;
                for (int i = 0; i < NPT * d; ++i) { c.only = i / d; fx[i] = p2g_fd(&c, &b.x[i], H); fv[i] = p2g_fd(&c, &b.v[i], H); }
                for (int i = 0; i < NPT * n; ++i) { c.only = i / n; fC[i] = p2g_fd(&c, &b.C[i], H); fF[i] = p2g_fd(&c, &b.F[i], H); }
                for (int p = 0; p < NPT; ++p) {
                    c.only = p;
                    fpar[0][p] = p2g_fd(&c, &b.mass[p], H * b.mass[p]);
                    fpar[1][p] = p2g_fd(&c, &b.vol[p], HLIN * b.vol[p]);
                    fpar[2][p] = p2g_fd(&c, &b.E[p], HLIN * b.E[p]);
                    fpar[3][p] = p2g_fd(&c, &b.nu[p], H);
                }
                double e[8];
                e[0] = relerr(an_x, fx, NPT * d); e[1] = relerr(ai.v, fv, NPT * d);
                e[2] = relerr(ai.C, fC, NPT * n); e[3] = relerr(an_F, fF, NPT * n);
                for (int k = 0; k < 4; ++k) e[4 + k] = relerr(an_par[k], fpar[k], NPT);
                static const char *what[8] = {"x", "v", "C", "F", "mass", "vol", "E", "nu"};
                /* (with the mass weights alone, dL/dv, C, F, vol, E, nu are 0 on both sides) */
                CHECK(all_finite(an_x, NPT * d) && all_finite(ai.v, NPT * d) && all_finite(ai.C, NPT * n) &&
                      all_finite(an_F, NPT * n) && all_finite(an_par[0], 4 * NPT) && all_finite(dact, NPT * n),
                      "%s inc=%d trial %d: non-finite P2G adjoint", V->name, inc, trial);
                for (int k = 0; k < 8; ++k) {
                    CHECK(e[k] < TOL, "%s inc=%d trial %d: dL/d%s rel err %.3g", V->name, inc, trial, what[k], e[k]);
                    track(&worst_p2g[v], e[k]);
                }
                /* actuation, per particle: L of that particle alone against its group's block */
                double fa_sum[2 * 9] = {0}, an_sum[2 * 9] = {0};
                for (int p = 0; p < NPT; ++p) {
                    int grp = b.act[p];
                    double fa[9];
                    c.only = p;
                    for (int i = 0; i < n; ++i)
                        fa[i] = grp >= 0 && grp < prm.act_groups ? p2g_fd(&c, &b.act_stress[grp * n + i], HLIN * 300) : 0;
                    if (grp < 0 || grp >= prm.act_groups) {
                        /* no valid group: act_stress must not matter, and dact is SET to 0 */
                        for (int i = 0; i < 2 * n; ++i) {
                            double f = p2g_fd(&c, &b.act_stress[i], H * 300);
                            CHECK(f == 0, "%s: particle %d (group %d) depends on act_stress[%d]: %g", V->name, p, grp, i, f);
                        }
                        for (int i = 0; i < n; ++i) CHECK(dact[p * n + i] == 0, "%s: dact of particle %d (group %d) = %g, not 0", V->name, p, grp, dact[p * n + i]);
                        continue;
                    }
                    double ea = relerr(dact + p * n, fa, n);
                    CHECK(ea < TOL, "%s inc=%d trial %d particle %d: dact rel err %.3g", V->name, inc, trial, p, ea);
                    track(&worst_p2g[v], ea);
                    for (int i = 0; i < n; ++i) an_sum[grp * n + i] += dact[p * n + i];
                }
                /* summed over the particles of each group: the FD of the whole L */
                c.only = -1;
                for (int i = 0; i < 2 * n; ++i) fa_sum[i] = p2g_fd(&c, &b.act_stress[i], HLIN * 300);
                double es = relerr(an_sum, fa_sum, 2 * n);
                CHECK(es < TOL, "%s inc=%d trial %d: summed dact rel err %.3g", V->name, inc, trial, es);
                track(&worst_p2g[v], es);
            }
    }
}

/* ---------------------------------------------------------------- grid update */
static const struct { int bc; double friction; const char *name; } GRID_BCS[5] = {
    {CQ__BC_STICKY, 0, "sticky"}, {CQ__BC_SLIP, 0, "slip"}, {CQ__BC_SEPARATE, 0, "separate"},
    {CQ__BC_FRICTION, 0.3, "friction c=0.3"}, {CQ__BC_FRICTION, 2, "friction c=2"},
};

static void node_coords(int d, long node, int *c)
{
    if (d == 2) { c[0] = (int)(node / RES); c[1] = (int)(node % RES); }
    else { c[0] = (int)(node / (RES * RES)); c[1] = (int)((node / RES) % RES); c[2] = (int)(node % RES); }
}

/* 1 when v0 (pre-projection velocity) is at least KINK away from every kink the projection of
   node c passes through; counts into cnt[4] {into the wall, away from it, clamped, sliding}. */
static int away_from_kinks(const dimops *O, int d, const int *c, const cq__params_f64 *prm, const double *v0, int *cnt)
{
    double v[3];
    int k[4] = {0, 0, 0, 0};
    memcpy(v, v0, sizeof v);
    for (int a = 0; a < d; ++a) {
        int n = O->wall_normal(c, a, prm);
        if (!n) continue;
        double ln = v[a] * n, r = 0;
        if (prm->boundary == CQ__BC_STICKY) break;
        /* an exact 0 is structural (an earlier axis zeroed it) and stays 0 under the steps */
        if (ln != 0 && fabs(ln) < KINK) return 0;
        if (ln != 0) ++k[ln < 0 ? 0 : 1];
        if (prm->boundary == CQ__BC_FRICTION && ln < 0) {
            for (int b = 0; b < d; ++b) if (b != a) r += v[b] * v[b];
            r = sqrt(r);
            if (r != 0 && r < KINK) return 0;
            if (fabs(r + prm->friction * ln) < KINK) return 0;
            ++k[r + prm->friction * ln < 0 ? 2 : 3];
        }
        O->bc_axis(a, (double)n, prm, v);
    }
    for (int i = 0; i < 4; ++i) cnt[i] += k[i];
    return 1;
}

/* every node of the grid: mass 0.2..1.2 (every 17th empty), pre-projection velocity v0 away
   from the kinks (on a third of the wall nodes mostly normal to the first wall, so the friction
   clamp is reached, on a third mostly tangential, so friction slides),
   momentum p = m (v0 - dt g); random weights cw for L = sum c_i . v_i */
static void random_grid(const dimops *O, int d, const cq__params_f64 *prm, double *gm, double *gp, double *cw,
                        int *cnt, int *walls, int *corners)
{
    const long nodes = node_count(d);
    *walls = *corners = 0;
    for (long i = 0; i < nodes; ++i) {
        int c[3], nw = 0;
        double v0[3] = {0, 0, 0};
        node_coords(d, i, c);
        for (int a = 0; a < d; ++a) nw += O->wall_normal(c, a, prm) != 0;
        *walls += nw > 0; *corners += nw > 1;
        gm[i] = i % 17 == 5 ? 0 : 0.2 + urand();
        do {
            for (int a = 0; a < d; ++a) v0[a] = srand1();
            for (int a = 0; a < d; ++a)
                if (O->wall_normal(c, a, prm)) {
                    for (int b = 0; b < d; ++b) if (i % 3 == (b == a)) v0[b] *= 0.2;
                    break;
                }
        } while (gm[i] > 0 && !away_from_kinks(O, d, c, prm, v0, cnt));
        for (int a = 0; a < d; ++a) {
            gp[i * d + a] = gm[i] * (v0[a] - prm->dt * prm->gravity[a]);
            cw[i * d + a] = srand1();
        }
    }
}

TEST(grid_adj_matches_central_differences)
{
    rng_state = 202u;   /* the same inputs whichever tests run before */
    static double gm[MAXNODES], gp[MAXNODES * 3], cw[MAXNODES * 3], gpb[MAXNODES * 3], gmb[MAXNODES];
    static double wm[MAXNODES], wv[MAXNODES * 3];
    for (int d = 2; d <= 3; ++d) {
        const dimops *O = &DIMOPS[d - 2];
        const long nodes = node_count(d);
        int cnts[5][4], walls = 0, corners = 0;
        memset(cnts, 0, sizeof cnts);
        for (int rep = 0; rep < (d == 2 ? 20 : 5); ++rep) {   /* 2D: 4 grids per condition */
            const int ib = rep % 5;
            cq__params_f64 prm;
            transfer_params(d, &prm);
            prm.boundary = GRID_BCS[ib].bc; prm.friction = GRID_BCS[ib].friction;
            random_grid(O, d, &prm, gm, gp, cw, cnts[ib], &walls, &corners);
            for (long i = 0; i < nodes; ++i) {   /* SET by the adjoint: garbage first */
                for (int a = 0; a < d; ++a) gpb[i * d + a] = 1e30;
                gmb[i] = -1e30;
            }
            for (long i = 0; i < nodes; ++i) O->grid_adj((int)i, &prm, gm, gp, cw, gpb, gmb);
            /* central differences node by node (nodes are independent): L_i = c_i . v_i */
            memcpy(wm, gm, (size_t)nodes * sizeof(double));
            memcpy(wv, gp, (size_t)nodes * d * sizeof(double));
            cq__gview_f64 g;
            g.m = wm; g.v = wv;
            double worst = 0;
            for (long i = 0; i < nodes; ++i) {
                double an[4], fd[4];
                for (int k = 0; k <= d; ++k) {
                    double *t = k < d ? &wv[i * d + k] : &wm[i];
                    double h = k < d ? H : H * (gm[i] > 0 ? gm[i] : 1), keep = *t, L[2];
                    for (int sgn = 0; sgn < 2; ++sgn) {
                        memcpy(wv + i * d, gp + i * d, (size_t)d * sizeof(double));
                        wm[i] = gm[i];
                        *t = keep + (sgn ? -h : h);
                        O->grid((int)i, &prm, g);
                        L[sgn] = dot(cw + i * d, wv + i * d, d);
                    }
                    memcpy(wv + i * d, gp + i * d, (size_t)d * sizeof(double));
                    wm[i] = gm[i];
                    fd[k] = (L[0] - L[1]) / (2 * h);
                    an[k] = k < d ? gpb[i * d + k] : gmb[i];
                }
                /* a zero-mass node: the forward gives v = 0 at m = 0 but m + h > 0; only the
                   adjoint's zeros are checked there */
                if (!(gm[i] > 0)) {
                    for (int k = 0; k <= d; ++k) CHECK(an[k] == 0, "%dD %s: empty node %ld gradient %g", d, GRID_BCS[ib].name, i, an[k]);
                    continue;
                }
                double e = all_finite(an, d + 1) ? relerr(an, fd, d + 1) : 1;
                if (e > worst) worst = e;
                if (!(e < TOL)) {
                    int c[3] = {0, 0, 0};
                    node_coords(d, i, c);
                    CHECK(e < TOL, "%dD %s node (%d,%d,%d): rel err %.3g; dp (%g %g %g) vs (%g %g %g), dm %g vs %g", d,
                          GRID_BCS[ib].name, c[0], c[1], c[2], e, an[0], an[1], d == 3 ? an[2] : 0, fd[0], fd[1],
                          d == 3 ? fd[2] : 0, an[d], fd[d]);
                }
            }
            track(&worst_grid[d - 2][ib], worst);
        }
        /* both sides of every kink were visited */
        CHECK(walls > 0 && corners > 0, "%dD: no wall / corner nodes", d);
        for (int ib = 0; ib < 5; ++ib) {
            const int *cnt = cnts[ib];
            if (GRID_BCS[ib].bc != CQ__BC_STICKY)
                CHECK(cnt[0] > 50 && cnt[1] > 50, "%dD %s: too few cases into (%d) / away from (%d) the wall", d, GRID_BCS[ib].name, cnt[0], cnt[1]);
            if (GRID_BCS[ib].bc == CQ__BC_FRICTION)
                CHECK(cnt[2] > 30 && cnt[3] > 30, "%dD %s: too few clamped (%d) / sliding (%d) friction cases", d, GRID_BCS[ib].name, cnt[2], cnt[3]);
        }
    }
}

/* ---------------------------------------------------------------- G2P */
typedef struct g2p_ctx { const dimops *O; int d; const cq__params_f64 *prm; cq__pview_f64 s, out, w; cq__gview_f64 g; } g2p_ctx;

#define NG2P 3
/* L = sum_p <ax, x'> + <av, v'> + <aC, C'> + <aF, F'> */
static double g2p_L(const g2p_ctx *c)
{
    int d = c->d, n = d * d;
    double L = 0;
    for (int p = 0; p < NG2P; ++p) {
        int st = c->O->g2p(p, c->prm, c->s, c->out, c->g);
        CHECK(st == CQ__OK, "%dD: g2p status %d", d, st);
        L += dot(c->w.x + p * d, c->out.x + p * d, d) + dot(c->w.v + p * d, c->out.v + p * d, d)
           + dot(c->w.C + p * n, c->out.C + p * n, n) + dot(c->w.F + p * n, c->out.F + p * n, n);
    }
    return L;
}
static double g2p_fd(const g2p_ctx *c, double *t, double h)
{
    double keep = *t, L1, L2;
    *t = keep + h; L1 = g2p_L(c);
    *t = keep - h; L2 = g2p_L(c);
    *t = keep;
    return (L1 - L2) / (2 * h);
}

TEST(g2p_adj_matches_central_differences)
{
    rng_state = 303u;   /* the same inputs whichever tests run before */
    static double gm[MAXNODES], gv[MAXNODES * 3], gvb[MAXNODES * 3], fgv[MAXNODES * 3], base_gvb[MAXNODES * 3];
    for (int d = 2; d <= 3; ++d) {
        const dimops *O = &DIMOPS[d - 2];
        const int n = d * d;
        const long nodes = node_count(d);
        for (int trial = 0; trial < 8; ++trial) {
            cq__params_f64 prm;
            pbuf s, out, w, ai;
            transfer_params(d, &prm);
            memset(&s, 0, sizeof s); memset(&w, 0, sizeof w);
            for (int p = 0; p < NG2P; ++p) {
                random_x(d, s.x + p * d);
                do { for (int a = 0; a < n; ++a) s.F[p * n + a] = (a % (d + 1) == 0) + 0.3 * srand1(); } while (det(d, s.F + p * n) < 0.3);
            }
            for (long i = 0; i < nodes; ++i) {
                gm[i] = 1;
                for (int a = 0; a < d; ++a) { gv[i * d + a] = srand1(); base_gvb[i * d + a] = 0.125 * ((i * d + a) % 7); }
            }
            /* weights: all; then each output alone, so the small dt terms are not hidden */
            int mode = trial % 5;
            for (int p = 0; p < NG2P; ++p) {
                for (int a = 0; a < d; ++a) {
                    w.x[p * d + a] = mode == 0 || mode == 1 ? srand1() : 0;
                    w.v[p * d + a] = mode == 0 || mode == 2 ? srand1() : 0;
                }
                for (int a = 0; a < n; ++a) {
                    w.C[p * n + a] = mode == 0 || mode == 3 ? srand1() : 0;
                    w.F[p * n + a] = mode == 0 || mode == 4 ? srand1() : 0;
                }
            }
            g2p_ctx c;
            c.O = O; c.d = d; c.prm = &prm; c.s = view_of(&s); c.out = view_of(&out); c.w = view_of(&w);
            c.g.m = gm; c.g.v = gv;
            /* analytic: ai.x, ai.F SET (garbage first); gv_adj accumulated onto base_gvb */
            for (int i = 0; i < NPT * 3; ++i) ai.x[i] = 1e30;
            for (int i = 0; i < NPT * 9; ++i) ai.F[i] = -1e30;
            memcpy(gvb, base_gvb, (size_t)nodes * d * sizeof(double));
            cq__pview_f64 vai = view_of(&ai);
            for (int p = 0; p < NG2P; ++p) O->g2p_adj(p, &prm, c.s, c.g, c.w, vai, gvb);
            for (long i = 0; i < nodes * d; ++i) gvb[i] -= base_gvb[i];
            double fx[NPT * 3], fF[NPT * 9];
            for (int i = 0; i < NG2P * d; ++i) fx[i] = g2p_fd(&c, &s.x[i], H);
            for (int i = 0; i < NG2P * n; ++i) fF[i] = g2p_fd(&c, &s.F[i], H);
            /* L is linear in the grid velocities (HLIN: with only <ax, x'> weighted, their dt-sized
               share of L would drown in the rounding of x at the step H) */
            for (long i = 0; i < nodes * d; ++i) fgv[i] = g2p_fd(&c, &gv[i], HLIN);
            double e1 = relerr(ai.x, fx, NG2P * d), e2 = relerr(ai.F, fF, NG2P * n), e3 = relerr(gvb, fgv, (int)(nodes * d));
            CHECK(all_finite(ai.x, NG2P * d) && all_finite(ai.F, NG2P * n) && all_finite(gvb, (int)(nodes * d)),
                  "%dD trial %d: non-finite G2P adjoint", d, trial);
            CHECK(e1 < TOL, "%dD trial %d (weights %d): dL/dx rel err %.3g", d, trial, mode, e1);
            CHECK(e2 < TOL, "%dD trial %d (weights %d): dL/dF rel err %.3g", d, trial, mode, e2);
            CHECK(e3 < TOL, "%dD trial %d (weights %d): dL/dv_i rel err %.3g", d, trial, mode, e3);
            track(&worst_g2p[d - 2], e1); track(&worst_g2p[d - 2], e2); track(&worst_g2p[d - 2], e3);
        }
    }
}

/* ---------------------------------------------------------------- float32 transfer adjoints
   The f32 kernels on the same (rounded) inputs: finite and close to the f64 ones. */
typedef struct pbuf32 {
    float x[NPT * 3], v[NPT * 3], C[NPT * 9], F[NPT * 9], mass[NPT], vol[NPT], E[NPT], nu[NPT], act_stress[2 * 9];
    int act[NPT];
} pbuf32;
static cq__pview_f32 view32_of(pbuf32 *b)
{
    cq__pview_f32 v;
    v.x = b->x; v.v = b->v; v.C = b->C; v.F = b->F; v.mass = b->mass; v.vol = b->vol; v.E = b->E; v.nu = b->nu;
    v.act = b->act; v.act_stress = b->act_stress; v.scene = NULL;
    return v;
}
static void to32(const double *a, float *b, long n) { for (long i = 0; i < n; ++i) b[i] = (float)a[i]; }
static void pbuf_to32(const pbuf *a, pbuf32 *b)
{
    to32(a->x, b->x, NPT * 3); to32(a->v, b->v, NPT * 3); to32(a->C, b->C, NPT * 9); to32(a->F, b->F, NPT * 9);
    to32(a->mass, b->mass, NPT); to32(a->vol, b->vol, NPT); to32(a->E, b->E, NPT); to32(a->nu, b->nu, NPT);
    to32(a->act_stress, b->act_stress, 2 * 9);
    memcpy(b->act, a->act, sizeof b->act);
}
static void params_to32(const cq__params_f64 *a, cq__params_f32 *b)
{
    memset(b, 0, sizeof *b);
    b->dx = (float)a->dx; b->inv_dx = (float)a->inv_dx; b->dt = (float)a->dt; b->friction = (float)a->friction;
    for (int i = 0; i < 3; ++i) { b->gravity[i] = (float)a->gravity[i]; b->res[i] = a->res[i]; }
    b->nodes = a->nodes; b->bound = a->bound; b->boundary = a->boundary; b->incompressibility = a->incompressibility; b->act_groups = a->act_groups;
}
/* relerr of a float32 result against a float64 one (1 when an entry is not finite) */
static double relerr32(const float *a, const double *ref, long n)
{
    static double tmp[MAXNODES * 3];
    for (long i = 0; i < n; ++i) { if (!cq__isfinite_f32(a[i])) return 1; tmp[i] = a[i]; }
    return relerr(tmp, ref, (int)n);
}

TEST(transfer_adj_f32_close_to_f64)
{
    rng_state = 404u;   /* the same inputs whichever tests run before */
    static double gm[MAXNODES], gp[MAXNODES * 3], cw[MAXNODES * 3], gpb[MAXNODES * 3], gmb[MAXNODES], gv[MAXNODES * 3];
    static float gm32[MAXNODES], gp32[MAXNODES * 3], cw32[MAXNODES * 3], gpb32[MAXNODES * 3], gmb32[MAXNODES], gv32[MAXNODES * 3];
    /* P2G: both materials, incompressibility off / on */
    for (int v = 0; v < NTV; ++v) {
        const tvariant *V = &TVARIANTS[v];
        const int d = V->dim, n = d * d;
        const long nodes = node_count(d);
        for (int inc = 0; inc <= 3; inc += 3)
            for (int trial = 0; trial < 2; ++trial) {
                cq__params_f64 prm;
                cq__params_f32 prm32;
                pbuf b, ai, pg;
                pbuf32 b32, ai32, pg32;
                double dact[NPT * 9];
                float dact32[NPT * 9];
                transfer_params(d, &prm);
                prm.incompressibility = inc; prm.act_groups = 2;
                params_to32(&prm, &prm32);
                random_particles(d, trial, &b);
                pbuf_to32(&b, &b32);
                for (long i = 0; i < nodes; ++i) {
                    gm[i] = srand1(); gm32[i] = (float)gm[i];
                    for (int a = 0; a < d; ++a) { gp[i * d + a] = srand1(); gp32[i * d + a] = (float)gp[i * d + a]; }
                }
                memset(&ai, 0, sizeof ai); memset(&pg, 0, sizeof pg); memset(&ai32, 0, sizeof ai32); memset(&pg32, 0, sizeof pg32);
                cq__pview_f64 s = view_of(&b), vai = view_of(&ai), vpg = view_of(&pg);
                cq__pview_f32 s32 = view32_of(&b32), vai32 = view32_of(&ai32), vpg32 = view32_of(&pg32);
                for (int p = 0; p < NPT; ++p) {
                    V->p2g_adj(p, &prm, s, gp, gm, vai, vpg, dact + p * n);
                    V->p2g_adj32(p, &prm32, s32, gp32, gm32, vai32, vpg32, dact32 + p * n);
                }
                double e[9];
                e[0] = relerr32(ai32.x, ai.x, NPT * d); e[1] = relerr32(ai32.v, ai.v, NPT * d);
                e[2] = relerr32(ai32.C, ai.C, NPT * n); e[3] = relerr32(ai32.F, ai.F, NPT * n);
                e[4] = relerr32(pg32.mass, pg.mass, NPT); e[5] = relerr32(pg32.vol, pg.vol, NPT);
                e[6] = relerr32(pg32.E, pg.E, NPT); e[7] = relerr32(pg32.nu, pg.nu, NPT);
                e[8] = relerr32(dact32, dact, NPT * n);
                static const char *what[9] = {"x", "v", "C", "F", "mass", "vol", "E", "nu", "act"};
                for (int k = 0; k < 9; ++k) {
                    CHECK(e[k] < 5e-4, "%s f32 inc=%d: P2G adjoint d%s differs from f64 by %.3g", V->name, inc, what[k], e[k]);
                    track(&worst_t32[0][d - 2], e[k]);
                }
            }
    }
    for (int d = 2; d <= 3; ++d) {
        const dimops *O = &DIMOPS[d - 2];
        const int n = d * d;
        const long nodes = node_count(d);
        cq__params_f64 prm;
        cq__params_f32 prm32;
        /* grid: every wall condition */
        for (int ib = 0; ib < 5; ++ib) {
            int cnt[4] = {0, 0, 0, 0}, walls, corners;
            transfer_params(d, &prm);
            prm.boundary = GRID_BCS[ib].bc; prm.friction = GRID_BCS[ib].friction;
            params_to32(&prm, &prm32);
            random_grid(O, d, &prm, gm, gp, cw, cnt, &walls, &corners);
            to32(gm, gm32, nodes); to32(gp, gp32, nodes * d); to32(cw, cw32, nodes * d);
            for (long i = 0; i < nodes; ++i) {
                O->grid_adj((int)i, &prm, gm, gp, cw, gpb, gmb);
                O->grid_adj32((int)i, &prm32, gm32, gp32, cw32, gpb32, gmb32);
            }
            double e1 = relerr32(gpb32, gpb, nodes * d), e2 = relerr32(gmb32, gmb, nodes);
            CHECK(e1 < 1e-4 && e2 < 1e-4, "%dD %s f32: grid adjoint differs from f64 by %.3g / %.3g", d, GRID_BCS[ib].name, e1, e2);
            track(&worst_t32[1][d - 2], e1); track(&worst_t32[1][d - 2], e2);
        }
        /* G2P */
        for (int trial = 0; trial < 2; ++trial) {
            pbuf s, w, ai;
            pbuf32 s32, w32, ai32;
            transfer_params(d, &prm);
            params_to32(&prm, &prm32);
            memset(&s, 0, sizeof s); memset(&w, 0, sizeof w);
            for (int p = 0; p < NG2P; ++p) {
                random_x(d, s.x + p * d);
                do { for (int a = 0; a < n; ++a) s.F[p * n + a] = (a % (d + 1) == 0) + 0.3 * srand1(); } while (det(d, s.F + p * n) < 0.3);
                for (int a = 0; a < d; ++a) { w.x[p * d + a] = srand1(); w.v[p * d + a] = srand1(); }
                for (int a = 0; a < n; ++a) { w.C[p * n + a] = srand1(); w.F[p * n + a] = srand1(); }
            }
            pbuf_to32(&s, &s32); pbuf_to32(&w, &w32);
            for (long i = 0; i < nodes; ++i) { gm[i] = 1; gm32[i] = 1; }
            for (long i = 0; i < nodes * d; ++i) { gv[i] = srand1(); gv32[i] = (float)gv[i]; gpb[i] = 0; gpb32[i] = 0; }
            cq__gview_f64 g;
            cq__gview_f32 g32;
            g.m = gm; g.v = gv; g32.m = gm32; g32.v = gv32;
            for (int p = 0; p < NG2P; ++p) {
                O->g2p_adj(p, &prm, view_of(&s), g, view_of(&w), view_of(&ai), gpb);
                O->g2p_adj32(p, &prm32, view32_of(&s32), g32, view32_of(&w32), view32_of(&ai32), gpb32);
            }
            double e1 = relerr32(ai32.x, ai.x, NG2P * d), e2 = relerr32(ai32.F, ai.F, NG2P * n), e3 = relerr32(gpb32, gpb, nodes * d);
            CHECK(e1 < 1e-4 && e2 < 1e-4 && e3 < 1e-4, "%dD f32: G2P adjoint differs from f64 by %.3g %.3g %.3g", d, e1, e2, e3);
            track(&worst_t32[2][d - 2], e1); track(&worst_t32[2][d - 2], e2); track(&worst_t32[2][d - 2], e3);
        }
    }
}

TEST(report_worst_errors)
{
    for (int v = 0; v < NV; ++v)
        printf("  # %-18s f64 stress_vjp worst rel err %.2e, pk1_vjp %.2e; f32 vs f64 %.2e\n",
               VARIANTS[v].name, worst_stress[v], worst_pk1[v], worst_f32[v]);
    printf("  # polar_vjp f64 worst rel err: 2D %.2e, 3D %.2e\n", worst_polar[0], worst_polar[1]);
    for (int v = 0; v < NTV; ++v) printf("  # %-18s p2g_adj worst rel err %.2e\n", TVARIANTS[v].name, worst_p2g[v]);
    for (int d = 0; d < 2; ++d)
        for (int b = 0; b < 5; ++b) printf("  # %dD grid_adj %-15s worst rel err %.2e\n", d + 2, GRID_BCS[b].name, worst_grid[d][b]);
    printf("  # g2p_adj worst rel err: 2D %.2e, 3D %.2e\n", worst_g2p[0], worst_g2p[1]);
    printf("  # f32 vs f64 transfer adjoints: p2g 2D %.2e 3D %.2e; grid 2D %.2e 3D %.2e; g2p 2D %.2e 3D %.2e\n",
           worst_t32[0][0], worst_t32[0][1], worst_t32[1][0], worst_t32[1][1], worst_t32[2][0], worst_t32[2][1]);
}

RUN_TESTS(CASE(stress_vjp_matches_central_differences), CASE(polar_vjp_special_points), CASE(polar_vjp_random),
          CASE(pk1_vjp_matches_central_differences), CASE(vjp_outputs_accumulate),
          CASE(f32_variants_finite_and_close_to_f64), CASE(p2g_adj_matches_central_differences),
          CASE(grid_adj_matches_central_differences), CASE(g2p_adj_matches_central_differences),
          CASE(transfer_adj_f32_close_to_f64),
          CASE(report_worst_errors))
