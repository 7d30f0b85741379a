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

RUN_TESTS(CASE(stvk_stress_is_the_derivative_of_its_energy), CASE(stvk_sim_runs_and_matches_corotated_at_small_strain))
