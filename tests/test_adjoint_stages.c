/* The per-particle adjoint stages (templates/adjoint.j2) against float64 central differences:
   cq__stress_vjp_* (R held fixed), cq__polar_vjp_* alone (random F, F = I, repeated singular
   values, near inversion; finite at the non-differentiable points), and cq__pk1_vjp_* (the
   whole chain material -> polar -> Lame -> incompressibility -> actuation) for every dim and
   built-in material.  The float32 variants are checked to be finite and close to float64. */
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

TEST(report_worst_errors)
{
    for (int v = 0; v < NV; ++v)
        printf("  # %-18s f64 stress_vjp worst rel err %.2e, pk1_vjp %.2e; f32 vs f64 %.2e\n",
               VARIANTS[v].name, worst_stress[v], worst_pk1[v], worst_f32[v]);
    printf("  # polar_vjp f64 worst rel err: 2D %.2e, 3D %.2e\n", worst_polar[0], worst_polar[1]);
}

RUN_TESTS(CASE(stress_vjp_matches_central_differences), CASE(polar_vjp_special_points), CASE(polar_vjp_random),
          CASE(pk1_vjp_matches_central_differences), CASE(vjp_outputs_accumulate),
          CASE(f32_variants_finite_and_close_to_f64), CASE(report_worst_errors))
