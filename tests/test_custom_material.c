/* A header generated with an extra material file (examples/materials/stvk.py) works like the
   built-in ones: its stress is the derivative of its energy, and it simulates. */
#define CHAINQUEEN_IMPLEMENTATION
#include "cq_stvk.h"              /* generated into build/ by tests/run.sh */
#include "../tests/harness.h"
#include <stdlib.h>

static double urand(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (*s >> 8) / 16777216.0; }

TEST(stvk_stress_is_the_derivative_of_its_energy)
{
    unsigned st = 1;
    for (int dim = 2; dim <= 3; ++dim)
        for (int t = 0; t < 20; ++t) {
            double F[9], P[9], Fp[9], R[9] = {0}, mu, lam, worst = 0, scale = 0;
            for (int a = 0; a < dim * dim; ++a) F[a] = (a % (dim + 1) == 0) + 0.4 * (2 * urand(&st) - 1);
            cq__lame_f64(1e3, 0.3, &mu, &lam);
            if (dim == 2) cq__stress_2d_stvk_f64(F, R, mu, lam, P); else cq__stress_3d_stvk_f64(F, R, mu, lam, P);
            for (int a = 0; a < dim * dim; ++a) {
                double h = 1e-6, ep, em;
                memcpy(Fp, F, sizeof F); Fp[a] += h; ep = dim == 2 ? cq__energy_2d_stvk_f64(Fp, R, mu, lam) : cq__energy_3d_stvk_f64(Fp, R, mu, lam);
                memcpy(Fp, F, sizeof F); Fp[a] -= h; em = dim == 2 ? cq__energy_2d_stvk_f64(Fp, R, mu, lam) : cq__energy_3d_stvk_f64(Fp, R, mu, lam);
                worst = fmax(worst, fabs((ep - em) / (2 * h) - P[a]));
                scale = fmax(scale, fabs(P[a]));
            }
            CHECK(worst < 1e-6 * fmax(scale, mu), "%dD: |P - dpsi/dF| = %g", dim, worst);
        }
}

TEST(stvk_sim_runs_and_matches_corotated_at_small_strain)
{
    /* a block sagging on a sticky floor under gravity: StVK and fixed corotated agree closely at small strain */
    double out[2][2 * 256];
    for (int run = 0; run < 2; ++run) {
        cq_sim_desc d;
        cq_sim *s = NULL;
        double x[2 * 256];
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.gravity[1] = -50; d.substeps = 4;
        d.material = run ? CQ_MATERIAL_STVK : CQ_MATERIAL_FIXED_COROTATED; d.precision = CQ_PRECISION_F64;
        CHECK_OK(cq_sim_create(&d, &s));
        for (int i = 0; i < 256; ++i) { x[2 * i] = 0.4 + (i % 16) / 64.0; x[2 * i + 1] = 0.12 + (i / 16) / 64.0; }
        cq_particles_desc p;
        memset(&p, 0, sizeof p);
        p.count = 256; p.x = x; p.default_youngs = 3e3; p.default_poisson = 0.3;
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK_OK(cq_sim_step(s, 100));
        cq_sim_get(s, CQ_FIELD_X, out[run]);
        cq_sim_destroy(s);
    }
    double e = 0, moved = 0;
    for (int i = 0; i < 512; ++i) e = fmax(e, fabs(out[0][i] - out[1][i]));
    for (int i = 1; i < 512; i += 2) moved = fmax(moved, fabs(out[0][i] - (0.12 + (i / 2 / 16) / 64.0)));
    CHECK(moved > 1e-3, "the block moved (%g)", moved);
    CHECK(e < 0.05 * moved, "StVK vs corotated at small strain: max |dx| = %g (motion %g)", e, moved);
}

TEST(stvk_stress_vjp_matches_finite_differences)
{
    unsigned st = 2;
    for (int dim = 2; dim <= 3; ++dim)
        for (int t = 0; t < 10; ++t) {
            double F[9], dP[9], dF[9] = {0}, dR[9] = {0}, R[9] = {0}, Fp[9], Pp[9], Pm[9], mu, lam, gmu = 0, glam = 0, worst = 0, scale = 0;
            for (int a = 0; a < dim * dim; ++a) { F[a] = (a % (dim + 1) == 0) + 0.3 * (2 * urand(&st) - 1); dP[a] = urand(&st) - 0.5; }
            cq__lame_f64(1e3, 0.3, &mu, &lam);
            if (dim == 2) cq__stress_vjp_2d_stvk_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
            else cq__stress_vjp_3d_stvk_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
            for (int a = 0; a < dim * dim; ++a) {
                double h = 1e-6, fd = 0;
                memcpy(Fp, F, sizeof F); Fp[a] += h;
                if (dim == 2) cq__stress_2d_stvk_f64(Fp, R, mu, lam, Pp); else cq__stress_3d_stvk_f64(Fp, R, mu, lam, Pp);
                memcpy(Fp, F, sizeof F); Fp[a] -= h;
                if (dim == 2) cq__stress_2d_stvk_f64(Fp, R, mu, lam, Pm); else cq__stress_3d_stvk_f64(Fp, R, mu, lam, Pm);
                for (int b = 0; b < dim * dim; ++b) fd += dP[b] * (Pp[b] - Pm[b]) / (2 * h);
                worst = fmax(worst, fabs(fd - dF[a])); scale = fmax(scale, fabs(fd));
            }
            CHECK(worst < 1e-6 * fmax(scale, 1), "%dD: stress VJP error %g (scale %g)", dim, worst, scale);
        }
}

/* the whole reverse pass with the user material: dL/dE and dL/dF0 of a sagging block */
static double stvk_rollout(int idx_E, int idx_F, double h, double *gE, double *gF)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[2 * 64], E[64], F[4 * 64], w[2 * 64], L = 0;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 20; d.dx = 1.0 / 20; d.dt = 2e-4; d.gravity[1] = -30; d.substeps = 2;
    d.material = CQ_MATERIAL_STVK; d.precision = CQ_PRECISION_F64; d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 0.3;
    d.checkpoint_every = 4;
    if (cq_sim_create(&d, &s)) return NAN;
    for (int i = 0; i < 64; ++i) {
        x[2 * i] = 0.4 + (i % 8) / 40.0; x[2 * i + 1] = 0.17 + (i / 8) / 40.0;
        E[i] = 2e3 + 10 * i; w[2 * i] = 0.3 * ((i * 7) % 5 - 2); w[2 * i + 1] = 0.2 * ((i * 3) % 7 - 3);
        F[4 * i] = 1; F[4 * i + 1] = 0; F[4 * i + 2] = 0; F[4 * i + 3] = 1;
    }
    if (idx_E >= 0) E[idx_E] += h;
    if (idx_F >= 0) F[idx_F] += h;
    memset(&p, 0, sizeof p);
    p.count = 64; p.x = x; p.youngs = E; p.F = F; p.default_poisson = 0.3;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK_OK(cq_sim_step(s, 24));
    cq_sim_get(s, CQ_FIELD_X, x);
    for (int i = 0; i < 128; ++i) L += w[i] * x[i];
    if (gE) {
        CHECK_OK(cq_sim_backward(s, w, NULL, NULL, NULL, NULL, NULL));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_YOUNGS, gE));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_F, gF));
    }
    cq_sim_destroy(s);
    return L;
}

TEST(stvk_end_to_end_gradients)
{
    double gE[64], gF[256], nE = 0, dE = 0, nF = 0, dF = 0;
    stvk_rollout(-1, -1, 0, gE, gF);
    for (int t = 0; t < 4; ++t) {
        int i = t * 17 % 64, j = (t * 29 + 3) % 256;
        /* dL/dE is tiny here (~1e-10): a step of 5 (0.25% of E) keeps roundoff out of the difference */
        double fe = (stvk_rollout(i, -1, 5, NULL, NULL) - stvk_rollout(i, -1, -5, NULL, NULL)) / 10;
        double ff = (stvk_rollout(-1, j, 1e-6, NULL, NULL) - stvk_rollout(-1, j, -1e-6, NULL, NULL)) / 2e-6;
        nE += (fe - gE[i]) * (fe - gE[i]); dE += fe * fe;
        nF += (ff - gF[j]) * (ff - gF[j]); dF += ff * ff;
    }
    CHECK(sqrt(nE / dE) < 1e-5 && sqrt(nF / dF) < 1e-5, "StVK end-to-end relative error: E %.3e F0 %.3e", sqrt(nE / dE), sqrt(nF / dF));
    printf("    StVK end-to-end relative error: E %.2e, F0 %.2e\n", sqrt(nE / dE), sqrt(nF / dF));
}

RUN_TESTS(CASE(stvk_stress_is_the_derivative_of_its_energy), CASE(stvk_stress_vjp_matches_finite_differences),
          CASE(stvk_end_to_end_gradients), CASE(stvk_sim_runs_and_matches_corotated_at_small_strain))
