/* Physics invariants of the forward simulator (DESIGN.md sec 6): free fall against the
   discrete analytic solution, rest, momentum, collisions, boundary conditions, materials
   against their energies, the polar decomposition at degenerate F, determinism. */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

#define MAXP 8192
static const char *MAT[] = {"", "corotated", "neohookean"};

typedef struct scene { int dim, mat, prec, res, substeps, bc; double dt, g[3], friction; int inc; } scene;

static cq_sim *make(const scene *sc)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d);
    d.dim = sc->dim; d.res[0] = d.res[1] = d.res[2] = sc->res; d.dx = 1.0 / sc->res; d.dt = sc->dt;
    d.substeps = sc->substeps; d.material = (cq_material)sc->mat; d.precision = (cq_precision)sc->prec;
    d.boundary = (cq_boundary)sc->bc; d.friction = sc->friction; d.incompressibility = sc->inc;
    for (int a = 0; a < 3; ++a) d.gravity[a] = sc->g[a];
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) printf("    create: %s\n", cq_sim_last_error(NULL));
    return s;
}

/* a box of n[a] particles per axis starting at lo, spacing h; returns the count */
static int box(double *x, int dim, const double *lo, const int *n, double h)
{
    int c = 0;
    for (int i = 0; i < n[0]; ++i)
        for (int j = 0; j < n[1]; ++j)
            for (int k = 0; k < (dim == 3 ? n[2] : 1); ++k) {
                x[c * dim] = lo[0] + (i + 0.5) * h; x[c * dim + 1] = lo[1] + (j + 0.5) * h;
                if (dim == 3) x[c * dim + 2] = lo[2] + (k + 0.5) * h;
                ++c;
            }
    return c;
}

static cq_result add(cq_sim *s, int count, const double *x, const double *v, double E, double nu)
{
    cq_particles_desc p;
    memset(&p, 0, sizeof p);
    p.count = count; p.x = x; p.v = v; p.default_youngs = E; p.default_poisson = nu;
    cq_result r = cq_sim_add_particles(s, &p);
    if (r) printf("    add: %s\n", cq_sim_last_error(s));
    return r;
}

static double urand(unsigned *st) { *st = *st * 1664525u + 1013904223u; return (*st >> 8) / 16777216.0; }

static void centroid(cq_sim *s, cq_field f, double *c)
{
    static double buf[MAXP * 3];
    int n = cq_sim_particle_count(s), d = cq_sim_field_size(s, f);
    cq_sim_get(s, f, buf);
    for (int a = 0; a < d; ++a) { c[a] = 0; for (int p = 0; p < n; ++p) c[a] += buf[p * d + a] / n; }
}

/* ---------------------------------------------------------------- free fall */
/* With F = I (zero stress), C = 0 and no wall contact every particle follows
   v_{k+1} = v_k + dt g, x_{k+1} = x_k + dt v_{k+1} exactly (partition of unity and
   sum_i w (x_i - x_p) = 0 of the quadratic B-spline). */
TEST(free_fall_matches_discrete_solution)
{
    for (int dim = 2; dim <= 3; ++dim)
        for (int mat = 1; mat <= 2; ++mat)
            for (int prec = 1; prec <= 2; ++prec) {
                scene sc = {dim, mat, prec, 32, 4, 0, 2.5e-4, {0.3, -9.8, 0.7}, 0, 0};   /* dt under dx sqrt(rho/E) */
                static double x[MAXP * 3], v[MAXP * 3], out[MAXP * 3];
                double lo[3] = {0.4, 0.6, 0.4}, v0[3] = {0.5, 1.0, -0.25};
                int n[3] = {6, 6, 6}, N = 50 * 4;
                cq_sim *s = make(&sc);
                int cnt = box(x, dim, lo, n, 1.0 / 64);
                for (int p = 0; p < cnt; ++p) for (int a = 0; a < dim; ++a) v[p * dim + a] = v0[a];
                CHECK_OK(add(s, cnt, x, v, 1e3, 0.3));
                CHECK_OK(cq_sim_step(s, 50));
                CHECK(cq_sim_step_count(s) == 50, "step count %d", cq_sim_step_count(s));
                cq_sim_get(s, CQ_FIELD_X, out);
                double tol = prec == 2 ? 1e-12 : 2e-5, worst = 0;
                for (int p = 0; p < cnt; ++p)
                    for (int a = 0; a < dim; ++a) {
                        double g = a == 2 && dim == 2 ? 0 : sc.g[a];
                        double ex = x[p * dim + a] + N * sc.dt * v0[a] + sc.dt * sc.dt * g * N * (N + 1) / 2.0;
                        double e = fabs(out[p * dim + a] - ex);
                        if (e > worst) worst = e;
                    }
                CHECK(worst < tol, "%dD %s f%d: max |x - x_exact| = %g", dim, MAT[mat], prec == 1 ? 32 : 64, worst);
                cq_sim_destroy(s);
            }
}

/* ---------------------------------------------------------------- rest */
TEST(block_at_rest_stays_at_rest)
{
    for (int dim = 2; dim <= 3; ++dim)
        for (int mat = 1; mat <= 2; ++mat) {
            scene sc = {dim, mat, 2, 24, 1, 0, 2e-4, {0, 0, 0}, 0, 0};
            static double x[MAXP * 3], out[MAXP * 3], F[MAXP * 9];
            double lo[3] = {0.35, 0.35, 0.35};
            int n[3] = {8, 8, 8};
            cq_sim *s = make(&sc);
            int cnt = box(x, dim, lo, n, 1.0 / 48);
            CHECK_OK(add(s, cnt, x, NULL, 1e4, 0.3));
            CHECK_OK(cq_sim_step(s, 200));
            cq_sim_get(s, CQ_FIELD_X, out);
            cq_sim_get(s, CQ_FIELD_F, F);
            double dx = 0, dF = 0;
            for (int p = 0; p < cnt * dim; ++p) dx = fmax(dx, fabs(out[p] - x[p]));
            for (int p = 0; p < cnt; ++p)
                for (int a = 0; a < dim * dim; ++a) dF = fmax(dF, fabs(F[p * dim * dim + a] - (a % (dim + 1) == 0)));
            CHECK(dx < 1e-13 && dF < 1e-12, "%dD %s: drift |dx| = %g |dF| = %g", dim, MAT[mat], dx, dF);
            cq_sim_destroy(s);
        }
}

/* ---------------------------------------------------------------- momentum */
TEST(momentum_conserved_without_walls)
{
    for (int dim = 2; dim <= 3; ++dim)
        for (int mat = 1; mat <= 2; ++mat) {
            scene sc = {dim, mat, 2, 32, 2, 0, 2e-4, {0, 0, 0}, 0, 0};
            static double x[MAXP * 3], v[MAXP * 3], C[MAXP * 9], mass[MAXP];
            double lo[3] = {0.4, 0.4, 0.4}, p0[3], p1[3];
            int n[3] = {7, 6, 5};
            unsigned st = 7;
            cq_sim *s = make(&sc);
            int cnt = box(x, dim, lo, n, 1.0 / 64);
            for (int p = 0; p < cnt * dim; ++p) v[p] = urand(&st) - 0.5;
            for (int p = 0; p < cnt * dim * dim; ++p) C[p] = 4 * (urand(&st) - 0.5);
            for (int p = 0; p < cnt; ++p) mass[p] = 1e-4 * (0.5 + urand(&st));
            cq_particles_desc pd;
            memset(&pd, 0, sizeof pd);
            pd.count = cnt; pd.x = x; pd.v = v; pd.C = C; pd.mass = mass; pd.default_youngs = 5e3; pd.default_poisson = 0.3;
            CHECK_OK(cq_sim_add_particles(s, &pd));
            for (int it = 0; it < 2; ++it) {
                double *P = it ? p1 : p0;
                cq_sim_get(s, CQ_FIELD_V, v);
                for (int a = 0; a < dim; ++a) { P[a] = 0; for (int p = 0; p < cnt; ++p) P[a] += mass[p] * v[p * dim + a]; }
                if (!it) CHECK_OK(cq_sim_step(s, 100));
            }
            double e = 0, ref = 0;
            for (int a = 0; a < dim; ++a) { e = fmax(e, fabs(p1[a] - p0[a])); ref = fmax(ref, fabs(p0[a])); }
            CHECK(e < 1e-12 * fmax(ref, 1e-6) * 1e3, "%dD %s: momentum drift %g (|p| = %g)", dim, MAT[mat], e, ref);
            cq_sim_destroy(s);
        }
}

/* ---------------------------------------------------------------- collision */
TEST(two_blocks_collide_and_bounce)
{
    for (int dim = 2; dim <= 3; ++dim) {
        scene sc = {dim, 1, 2, 48, 4, 0, 1e-4, {0, 0, 0}, 0, 0};
        static double x[MAXP * 3], v[MAXP * 3], out[MAXP * 3], vout[MAXP * 3];
        double loA[3] = {0.25, 0.4, 0.4}, loB[3] = {0.55, 0.42, 0.42};
        int n[3] = {10, 10, 10};
        cq_sim *s = make(&sc);
        int nA = box(x, dim, loA, n, 1.0 / 96);
        int nB = box(x + nA * dim, dim, loB, n, 1.0 / 96);
        for (int p = 0; p < nA + nB; ++p)
            for (int a = 0; a < dim; ++a) v[p * dim + a] = a == 0 ? (p < nA ? 1.0 : -1.0) : 0;
        CHECK_OK(add(s, nA + nB, x, v, 2e3, 0.3));
        double minsep = 1;
        for (int k = 0; k < 60; ++k) {
            CHECK_OK(cq_sim_step(s, 5));
            cq_sim_get(s, CQ_FIELD_X, out);
            double maxA = 0, minB = 1;
            for (int p = 0; p < nA; ++p) maxA = fmax(maxA, out[p * dim]);
            for (int p = nA; p < nA + nB; ++p) minB = fmin(minB, out[p * dim]);
            minsep = fmin(minsep, minB - maxA);
        }
        cq_sim_get(s, CQ_FIELD_V, vout);
        double vA = 0, vB = 0;
        for (int p = 0; p < nA; ++p) vA += vout[p * dim] / nA;
        for (int p = nA; p < nA + nB; ++p) vB += vout[p * dim] / nB;
        CHECK(vA < -0.2 && vB > 0.2, "%dD: after the collision the blocks move apart: vA = %g vB = %g", dim, vA, vB);
        CHECK(fabs(vA + vB) < 1e-9, "%dD: momentum (equal masses) vA + vB = %g", dim, vA + vB);
        /* MPM bodies interact through shared nodes: contact at a gap of about 1-2 dx */
        CHECK(minsep > -0.5 / 48 && minsep < 2.5 / 48, "%dD: blocks met without passing through: min gap %g", dim, minsep);
        cq_sim_destroy(s);
    }
}

/* ---------------------------------------------------------------- walls */
/* A block slides down-right into the floor at 45 degrees; measure what each wall condition
   does to its tangential (x) and normal (y) velocity. */
static void wall_run(int dim, int bc, double fric, double *vx, double *vy, double *miny, cq_result *r)
{
    scene sc = {dim, 1, 2, 32, 4, bc, 1e-4, {0, 0, 0}, fric, 0};
    static double x[MAXP * 3], v[MAXP * 3], out[MAXP * 3];
    double lo[3] = {0.3, 0.16, 0.35}, c[3] = {0, 0, 0};
    int n[3] = {10, 8, 8};
    cq_sim *s = make(&sc);
    int cnt = box(x, dim, lo, n, 1.0 / 64);
    for (int p = 0; p < cnt; ++p) for (int a = 0; a < dim; ++a) v[p * dim + a] = a == 0 ? 1.0 : (a == 1 ? -1.0 : 0);
    add(s, cnt, x, v, 3e3, 0.3);
    *miny = 1;
    *r = CQ_SUCCESS;
    for (int k = 0; k < 40 && *r == CQ_SUCCESS; ++k) {
        *r = cq_sim_step(s, 5);
        cq_sim_get(s, CQ_FIELD_X, out);
        for (int p = 0; p < cnt; ++p) *miny = fmin(*miny, out[p * dim + 1]);
    }
    centroid(s, CQ_FIELD_V, c);
    *vx = c[0]; *vy = c[1];
    cq_sim_destroy(s);
}

TEST(boundary_conditions_on_a_block_hitting_the_floor)
{
    for (int dim = 2; dim <= 3; ++dim) {
        double vx[6], vy[6], my[6];
        cq_result r[6];
        wall_run(dim, CQ_BOUNDARY_STICKY, 0, &vx[0], &vy[0], &my[0], &r[0]);
        wall_run(dim, CQ_BOUNDARY_SLIP, 0, &vx[1], &vy[1], &my[1], &r[1]);
        wall_run(dim, CQ_BOUNDARY_SEPARATE, 0, &vx[2], &vy[2], &my[2], &r[2]);
        wall_run(dim, CQ_BOUNDARY_FRICTION, 0, &vx[3], &vy[3], &my[3], &r[3]);
        wall_run(dim, CQ_BOUNDARY_FRICTION, 0.2, &vx[4], &vy[4], &my[4], &r[4]);
        wall_run(dim, CQ_BOUNDARY_FRICTION, 1.0, &vx[5], &vy[5], &my[5], &r[5]);
        for (int i = 0; i < 6; ++i) {
            CHECK(r[i] == CQ_SUCCESS, "%dD run %d: %s", dim, i, cq_result_string(r[i]));
            CHECK(my[i] > 1.5 / 32, "%dD run %d: a particle went %g deep into the floor wall", dim, i, my[i]);
        }
        printf("    %dD vx: sticky %.3f slip %.3f separate %.3f fric0 %.3f fric0.2 %.3f fric1 %.3f\n", dim, vx[0], vx[1], vx[2], vx[3], vx[4], vx[5]);
        printf("    %dD vy: sticky %.3f slip %.3f separate %.3f fric0 %.3f fric0.2 %.3f fric1 %.3f\n", dim, vy[0], vy[1], vy[2], vy[3], vy[4], vy[5]);
        CHECK(vx[0] < vx[5], "%dD sticky slows the slide most: vx = %g vs friction 1: %g", dim, vx[0], vx[5]);
        CHECK(vx[1] > 0.9 && vx[2] > 0.9, "%dD slip/separate keep the tangential velocity: %g %g", dim, vx[1], vx[2]);
        CHECK(vx[3] == vx[2] && vy[3] == vy[2], "%dD friction 0 is separate, exactly", dim);
        CHECK(vx[2] > vx[4] && vx[4] > vx[5] && vx[5] >= 0, "%dD friction slows the slide more as c grows: %g %g %g", dim, vx[2], vx[4], vx[5]);
        CHECK(vy[2] > 0.2, "%dD separate lets the elastic block bounce off: vy = %g", dim, vy[2]);
    }
}

/* The projection itself, node by node, against hand-computed values (Spielberg et al. 2021 sec 3.2, B1-B6). */
TEST(boundary_projection_per_node)
{
    cq__params_f64 prm;
    memset(&prm, 0, sizeof prm);
    prm.res[0] = prm.res[1] = prm.res[2] = 16; prm.bound = 3;
    struct { int bc; double fric, vin[2], vout[2]; } cs[] = {
        {CQ__BC_STICKY, 0, {1, -2}, {0, 0}},      {CQ__BC_STICKY, 0, {1, 2}, {0, 0}},
        {CQ__BC_SLIP, 0, {1, -2}, {1, 0}},        {CQ__BC_SLIP, 0, {1, 2}, {1, 0}},
        {CQ__BC_SEPARATE, 0, {1, -2}, {1, 0}},    {CQ__BC_SEPARATE, 0, {1, 2}, {1, 2}},
        {CQ__BC_FRICTION, 0.25, {1, -2}, {0.5, 0}}, {CQ__BC_FRICTION, 1, {1, -2}, {0, 0}},
        {CQ__BC_FRICTION, 0.25, {-3, -4}, {-2, 0}}, {CQ__BC_FRICTION, 0.25, {1, 2}, {1, 2}},
    };
    for (int i = 0; i < (int)(sizeof cs / sizeof cs[0]); ++i) {
        int floor_node[2] = {8, 1}, ceil_node[2] = {8, 14}, inner[2] = {8, 8};
        double v[2] = {cs[i].vin[0], cs[i].vin[1]}, w[2] = {cs[i].vin[0], -cs[i].vin[1]}, u[2] = {cs[i].vin[0], cs[i].vin[1]};
        prm.boundary = cs[i].bc; prm.friction = cs[i].fric;
        cq__boundary_2d_f64(floor_node, &prm, v);          /* floor: normal +y */
        cq__boundary_2d_f64(ceil_node, &prm, w);           /* ceiling: normal -y, mirrored input */
        cq__boundary_2d_f64(inner, &prm, u);               /* interior: untouched */
        CHECK(fabs(v[0] - cs[i].vout[0]) < 1e-12 && fabs(v[1] - cs[i].vout[1]) < 1e-12,
              "case %d floor: (%g %g) -> (%g %g), want (%g %g)", i, cs[i].vin[0], cs[i].vin[1], v[0], v[1], cs[i].vout[0], cs[i].vout[1]);
        CHECK(fabs(w[0] - cs[i].vout[0]) < 1e-12 && fabs(w[1] + cs[i].vout[1]) < 1e-12, "case %d ceiling: (%g %g)", i, w[0], w[1]);
        CHECK(u[0] == cs[i].vin[0] && u[1] == cs[i].vin[1], "case %d: interior node changed", i);
    }
    { /* corner (both axes in a wall), slip: both components into the walls vanish */
        int corner[3] = {0, 1, 8};
        double v[3] = {-1, -1, 0.5};
        prm.boundary = CQ__BC_SLIP;
        cq__boundary_3d_f64(corner, &prm, v);
        CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0.5, "3D corner slip: (%g %g %g)", v[0], v[1], v[2]);
    }
}

/* ---------------------------------------------------------------- materials */
static void random_F(unsigned *st, int dim, double *F, double amp)
{
    for (;;) {
        for (int a = 0; a < dim * dim; ++a) F[a] = (a % (dim + 1) == 0) + amp * (2 * urand(st) - 1);
        if ((dim == 2 ? cq__det_2d_f64(F) : cq__det_3d_f64(F)) > 0.2) return;
    }
}

typedef void (*stress_fn)(const double *, const double *, double, double, double *);
typedef double (*energy_fn)(const double *, const double *, double, double);

static void polar(int dim, const double *F, double *R) { if (dim == 2) cq__polar_2d_f64(F, R); else cq__polar_3d_f64(F, R); }

TEST(stress_is_the_derivative_of_the_energy)
{
    stress_fn sf[2][2] = {{cq__stress_2d_fixed_corotated_f64, cq__stress_2d_neohookean_f64},
                          {cq__stress_3d_fixed_corotated_f64, cq__stress_3d_neohookean_f64}};
    energy_fn ef[2][2] = {{cq__energy_2d_fixed_corotated_f64, cq__energy_2d_neohookean_f64},
                          {cq__energy_3d_fixed_corotated_f64, cq__energy_3d_neohookean_f64}};
    unsigned st = 11;
    for (int dim = 2; dim <= 3; ++dim)
        for (int m = 0; m < 2; ++m)
            for (int trial = 0; trial < 20; ++trial) {
                double F[9], R[9], P[9], Fp[9], Rp[9], mu, lam, worst = 0, scale = 0;
                random_F(&st, dim, F, 0.4);
                cq__lame_f64(1e3 * (0.5 + urand(&st)), 0.45 * urand(&st), &mu, &lam);
                polar(dim, F, R);
                sf[dim - 2][m](F, R, mu, lam, P);
                for (int a = 0; a < dim * dim; ++a) {
                    const double h = 1e-6;
                    double ep, em;
                    memcpy(Fp, F, sizeof F); Fp[a] += h; polar(dim, Fp, Rp); ep = ef[dim - 2][m](Fp, Rp, mu, lam);
                    memcpy(Fp, F, sizeof F); Fp[a] -= h; polar(dim, Fp, Rp); em = ef[dim - 2][m](Fp, Rp, mu, lam);
                    worst = fmax(worst, fabs((ep - em) / (2 * h) - P[a]));
                    scale = fmax(scale, fabs(P[a]));
                }
                CHECK(worst < 1e-6 * fmax(scale, mu), "%dD %s trial %d: |P - dpsi/dF| = %g (|P| %g)", dim, m ? "neohookean" : "corotated", trial, worst, scale);
            }
}

TEST(incompressibility_stress_is_the_derivative_of_its_energy)
{
    unsigned st = 5;
    for (int dim = 2; dim <= 3; ++dim)
        for (int p = 2; p <= 5; ++p) {
            double F[9], P[9] = {0}, Fp[9], E = 1e3, nu = 0.3, k = E / (3 * (2 - 2 * nu)), worst = 0;
            random_F(&st, dim, F, 0.3);
            if (dim == 2) cq__incompressible_2d_f64(F, E, nu, p, P); else cq__incompressible_3d_f64(F, E, nu, p, P);
            for (int a = 0; a < dim * dim; ++a) {
                const double h = 1e-6;
                double Jp, Jm;
                memcpy(Fp, F, sizeof F); Fp[a] += h; Jp = dim == 2 ? cq__det_2d_f64(Fp) : cq__det_3d_f64(Fp);
                memcpy(Fp, F, sizeof F); Fp[a] -= h; Jm = dim == 2 ? cq__det_2d_f64(Fp) : cq__det_3d_f64(Fp);
                double fd = k * (pow(Jp - 1, p) - pow(Jm - 1, p)) / (2 * h);
                worst = fmax(worst, fabs(fd - P[a]));
            }
            CHECK(worst < 1e-5 * k, "%dD p = %d: |P_inc - d/dF k (J-1)^p| = %g", dim, p, worst);
        }
}

static void check_rotation(int dim, const double *F, const double *R, double tol, const char *what)
{
    double err = 0, sym = 0, S[9], nF = 0;
    for (int i = 0; i < dim; ++i)
        for (int j = 0; j < dim; ++j) {
            double rr = 0, s = 0;
            for (int k = 0; k < dim; ++k) { rr += R[k * dim + i] * R[k * dim + j]; s += R[k * dim + i] * F[k * dim + j]; }
            err = fmax(err, fabs(rr - (i == j)));
            S[i * dim + j] = s;
            nF = fmax(nF, fabs(F[i * dim + j]));
        }
    for (int i = 0; i < dim; ++i) for (int j = 0; j < dim; ++j) sym = fmax(sym, fabs(S[i * dim + j] - S[j * dim + i]));
    double det = dim == 2 ? cq__det_2d_f64(R) : cq__det_3d_f64(R);
    int finite = 1;
    for (int a = 0; a < dim * dim; ++a) finite &= cq__isfinite_f64(R[a]);
    CHECK(finite && err < tol && fabs(det - 1) < tol, "%s: R not a rotation: |R^T R - I| = %g det = %g", what, err, det);
    CHECK(sym <= tol * fmax(nF, 1), "%s: R^T F not symmetric: %g", what, sym);
}

static void rot3(double ax, double ay, double az, double *Q)
{
    double cx = cos(ax), sx = sin(ax), cy = cos(ay), sy = sin(ay), cz = cos(az), sz = sin(az);
    double X[9] = {1, 0, 0, 0, cx, -sx, 0, sx, cx}, Y[9] = {cy, 0, sy, 0, 1, 0, -sy, 0, cy}, Z[9] = {cz, -sz, 0, sz, cz, 0, 0, 0, 1};
    double T[9];
    for (int i = 0; i < 3; ++i) for (int j = 0; j < 3; ++j) { T[i * 3 + j] = 0; for (int k = 0; k < 3; ++k) T[i * 3 + j] += X[i * 3 + k] * Y[k * 3 + j]; }
    for (int i = 0; i < 3; ++i) for (int j = 0; j < 3; ++j) { Q[i * 3 + j] = 0; for (int k = 0; k < 3; ++k) Q[i * 3 + j] += T[i * 3 + k] * Z[k * 3 + j]; }
}

TEST(polar_decomposition_at_degenerate_F)
{
    double R[9], F[9], Q[9], W[9];
    double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    cq__polar_3d_f64(I3, R);
    CHECK(memcmp(R, I3, sizeof R) == 0, "R(I) = I exactly");
    { double I2[4] = {1, 0, 0, 1}; cq__polar_2d_f64(I2, R); CHECK(memcmp(R, I2, sizeof I2) == 0, "R(I) = I exactly in 2D"); }
    /* F = Q diag(s) W^T with repeated, tiny, zero and negative singular values */
    const double sv[][3] = {{1, 1, 1}, {2, 2, 2}, {3, 1, 1}, {1, 1, 3}, {1, 1e-8, 1e-8}, {1, 1, 0}, {1, 0, 0}, {0, 0, 0},
                            {1, 1, -1}, {2, 0.5, -0.01}, {1, 1, -1e-9}, {1e-3, 1e-3, 1e-3}, {5, 5, -5}};
    for (int c = 0; c < (int)(sizeof sv / sizeof sv[0]); ++c)
        for (int rr = 0; rr < 4; ++rr) {
            char what[96];
            rot3(0.3 * rr, 1.1 * rr, -0.7 * rr, Q); rot3(-0.5 * rr, 0.2 * rr, 0.9 * rr, W);
            for (int i = 0; i < 3; ++i) for (int j = 0; j < 3; ++j) {
                F[i * 3 + j] = 0;
                for (int k = 0; k < 3; ++k) F[i * 3 + j] += Q[i * 3 + k] * sv[c][k] * W[j * 3 + k];
            }
            snprintf(what, sizeof what, "3D sig = (%g %g %g) rot %d", sv[c][0], sv[c][1], sv[c][2], rr);
            cq__polar_3d_f64(F, R);
            check_rotation(3, F, R, 1e-10, what);
            if (sv[c][1] > 1e-6 && fabs(sv[c][2]) > 1e-6 && (sv[c][2] > 0 || -sv[c][2] < sv[c][1] - 1e-6)) {
                /* R is unique here and equals Q W^T (an inversion stays in the signed sig[2]) */
                double e = 0;
                for (int i = 0; i < 3; ++i) for (int j = 0; j < 3; ++j) {
                    double r = 0;
                    for (int k = 0; k < 3; ++k) r += Q[i * 3 + k] * W[j * 3 + k];
                    e = fmax(e, fabs(r - R[i * 3 + j]));
                }
                CHECK(e < 1e-8, "%s: R differs from the true rotation by %g", what, e);
            }
            /* float: same robustness */
            float Ff[9], Rf[9];
            double Rd[9];
            for (int a = 0; a < 9; ++a) Ff[a] = (float)F[a];
            cq__polar_3d_f32(Ff, Rf);
            for (int a = 0; a < 9; ++a) { Rd[a] = Rf[a]; F[a] = Ff[a]; }
            snprintf(what, sizeof what, "3D f32 sig = (%g %g %g) rot %d", sv[c][0], sv[c][1], sv[c][2], rr);
            check_rotation(3, F, Rd, 2e-5, what);
        }
    const double F2[][4] = {{1, 0, 0, 1}, {0, 0, 0, 0}, {1, 0, 0, -1}, {-1, 0, 0, -1}, {2, 0, 0, 1e-9}, {0.5, 3, -0.1, 0.2}};
    for (int c = 0; c < 6; ++c) {
        char what[64];
        snprintf(what, sizeof what, "2D case %d", c);
        cq__polar_2d_f64(F2[c], R);
        check_rotation(2, F2[c], R, 1e-12, what);
    }
    unsigned st = 3;
    for (int t = 0; t < 200; ++t) {
        for (int a = 0; a < 9; ++a) F[a] = 2 * urand(&st) - 1;
        cq__polar_3d_f64(F, R);
        check_rotation(3, F, R, 1e-10, "3D random");
    }
}

/* ---------------------------------------------------------------- actuation, incompressibility */
TEST(actuation_contracts_the_block_without_net_force)
{
    for (int dim = 2; dim <= 3; ++dim) {
        static double x[MAXP * 3], out[MAXP * 3], v[MAXP * 3];
        double lo[3] = {0.4, 0.4, 0.4}, sig[9] = {0}, width[2];
        int n[3] = {8, 8, 8}, act[MAXP];
        for (int run = 0; run < 2; ++run) {
            scene sc = {dim, 2, 2, 32, 4, 0, 1e-4, {0, 0, 0}, 0, 0};
            cq_sim *s = make(&sc);
            int cnt = box(x, dim, lo, n, 1.0 / 64);
            cq_particles_desc pd;
            memset(&pd, 0, sizeof pd);
            for (int p = 0; p < cnt; ++p) act[p] = 0;
            pd.count = cnt; pd.x = x; pd.actuator = act; pd.default_youngs = 1e3; pd.default_poisson = 0.3;
            CHECK_OK(cq_sim_add_particles(s, &pd));
            sig[0] = run ? 200.0 : 0.0;   /* sigma_xx in material space */
            CHECK_OK(cq_sim_set_actuation(s, 1, sig));
            CHECK_OK(cq_sim_step(s, 25));
            cq_sim_get(s, CQ_FIELD_X, out);
            cq_sim_get(s, CQ_FIELD_V, v);
            double lo_x = 1, hi_x = 0, P[3] = {0, 0, 0};
            for (int p = 0; p < cnt; ++p) {
                lo_x = fmin(lo_x, out[p * dim]); hi_x = fmax(hi_x, out[p * dim]);
                for (int a = 0; a < dim; ++a) P[a] += v[p * dim + a];
            }
            width[run] = hi_x - lo_x;
            for (int a = 0; a < dim; ++a) CHECK(fabs(P[a]) < 1e-9, "%dD run %d: net momentum %g on axis %d", dim, run, P[a], a);
            cq_sim_destroy(s);
        }
        CHECK(width[1] < width[0] - 0.002, "%dD: positive sigma_xx contracts along x: %g vs %g", dim, width[1], width[0]);
    }
}

TEST(incompressibility_resists_compression)
{
    double jmin[2];
    for (int run = 0; run < 2; ++run) {
        scene sc = {2, 1, 2, 32, 4, 0, 1e-4, {0, -30, 0}, 0, run ? 2 : 0};
        static double x[MAXP * 3], F[MAXP * 9];
        double lo[3] = {0.3, 3.2 / 32, 0};
        int n[3] = {12, 12, 1};
        cq_sim *s = make(&sc);
        int cnt = box(x, 2, lo, n, 1.0 / 64);
        CHECK_OK(add(s, cnt, x, NULL, 300, 0.2));
        CHECK_OK(cq_sim_step(s, 150));
        cq_sim_get(s, CQ_FIELD_F, F);
        jmin[run] = 1;
        for (int p = 0; p < cnt; ++p) jmin[run] = fmin(jmin[run], cq__det_2d_f64(F + 4 * p));
        cq_sim_destroy(s);
    }
    CHECK(jmin[1] > jmin[0] + 0.01, "incompressibility p = 2 keeps J nearer 1: min J %g vs %g without", jmin[1], jmin[0]);
}

/* ---------------------------------------------------------------- determinism, API semantics */
static void run_scene(int threads, double *out, int *cnt)
{
    scene sc = {3, 1, 1, 32, 2, CQ_BOUNDARY_FRICTION, 1e-4, {0, -9.8, 0}, 0.3, 0};
    static double x[MAXP * 3], v[MAXP * 3];
    double lo[3] = {0.2, 0.15, 0.3};
    int n[3] = {16, 10, 10};
    unsigned st = 9;
#if defined(_OPENMP)
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    cq_sim *s = make(&sc);
    *cnt = box(x, 3, lo, n, 1.0 / 64);
    for (int p = 0; p < *cnt * 3; ++p) v[p] = urand(&st) - 0.5;
    add(s, *cnt, x, v, 2e3, 0.3);
    cq_sim_step(s, 40);
    cq_sim_get(s, CQ_FIELD_X, out);
    cq_sim_destroy(s);
}

TEST(results_are_bitwise_reproducible_across_runs_and_threads)
{
    static double a[MAXP * 3], b[MAXP * 3], c[MAXP * 3];
    int n;
    run_scene(1, a, &n);
    run_scene(1, b, &n);
    run_scene(2, c, &n);
    CHECK(memcmp(a, b, sizeof(double) * n * 3) == 0, "two serial runs differ");
    CHECK(memcmp(a, c, sizeof(double) * n * 3) == 0, "1 thread and 2 threads differ");
}

TEST(substeps_reset_and_precisions_agree)
{
    static double x[MAXP * 3], v[MAXP * 3], a[MAXP * 3], b[MAXP * 3], c[MAXP * 3];
    double lo[3] = {0.3, 0.2, 0.3};
    int n[3] = {8, 8, 8};
    unsigned st = 4;
    scene s4 = {2, 2, 2, 32, 4, CQ_BOUNDARY_SLIP, 1e-4, {0, -9.8, 0}, 0, 0}, s1 = s4, s32 = s4;
    s1.substeps = 1; s32.prec = 1;
    cq_sim *A = make(&s4), *B = make(&s1), *C = make(&s32);
    int cnt = box(x, 2, lo, n, 1.0 / 64);
    for (int p = 0; p < cnt * 2; ++p) v[p] = urand(&st) - 0.5;
    add(A, cnt, x, v, 2e3, 0.3); add(B, cnt, x, v, 2e3, 0.3); add(C, cnt, x, v, 2e3, 0.3);
    CHECK_OK(cq_sim_step(A, 10));
    CHECK_OK(cq_sim_step(B, 40));
    CHECK_OK(cq_sim_step(C, 10));
    cq_sim_get(A, CQ_FIELD_X, a); cq_sim_get(B, CQ_FIELD_X, b); cq_sim_get(C, CQ_FIELD_X, c);
    CHECK(memcmp(a, b, sizeof(double) * cnt * 2) == 0, "1 step of 4 substeps != 4 steps of 1");
    double e = 0;
    for (int p = 0; p < cnt * 2; ++p) e = fmax(e, fabs(a[p] - c[p]));
    CHECK(e < 1e-5, "f32 and f64 differ by %g after 40 substeps", e);
    CHECK_OK(cq_sim_reset(A));
    CHECK(cq_sim_step_count(A) == 0, "reset -> step 0");
    cq_sim_get(A, CQ_FIELD_X, c);
    CHECK(memcmp(c, x, sizeof(double) * cnt * 2) == 0, "reset restores the initial positions");
    CHECK_OK(cq_sim_step(A, 10));
    cq_sim_get(A, CQ_FIELD_X, c);
    CHECK(memcmp(a, c, sizeof(double) * cnt * 2) == 0, "stepping after reset repeats the run");
    cq_sim_destroy(A); cq_sim_destroy(B); cq_sim_destroy(C);
}

RUN_TESTS(CASE(free_fall_matches_discrete_solution), CASE(block_at_rest_stays_at_rest),
          CASE(momentum_conserved_without_walls), CASE(two_blocks_collide_and_bounce),
          CASE(boundary_conditions_on_a_block_hitting_the_floor), CASE(boundary_projection_per_node), CASE(stress_is_the_derivative_of_the_energy),
          CASE(incompressibility_stress_is_the_derivative_of_its_energy), CASE(polar_decomposition_at_degenerate_F),
          CASE(actuation_contracts_the_block_without_net_force), CASE(incompressibility_resists_compression),
          CASE(results_are_bitwise_reproducible_across_runs_and_threads), CASE(substeps_reset_and_precisions_agree))
