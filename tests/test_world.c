/* Fluid-rigid worlds (cq_world_*): physics (a tank at rest, Archimedes, a dam break against
   Martin & Moyce 1952, free flight, a pendulum's period), forward-mode derivatives against
   float64 central differences (free flight, contact and joints exactly; the coupled localized
   scheme over growing horizons, reported), per-step control gradients, contact, joints, and bad
   input. */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>

/* a 2D or 3D box [0, W] x [0, H] (x [0, Dz]) with a block of fluid [x0, x1] x [0, fh] on a lattice */
typedef struct scene { int dim; double W, H, Dz, r, dt; cq_precision prec; double x0, x1, fh; } scene;

static cq_world *make_world(const scene *sc)
{
    cq_world_desc d;
    cq_world *w = NULL;
    memset(&d, 0, sizeof d);
    d.dim = sc->dim; d.particle_radius = sc->r; d.dt = sc->dt; d.gravity[1] = -9.81; d.precision = sc->prec;
    d.domain_hi[0] = sc->W; d.domain_hi[1] = sc->H; d.domain_hi[2] = sc->Dz;
    d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { printf("    create: %s\n", cq_world_last_error(NULL)); return NULL; }
    if (sc->fh > 0) {
        const double sp = 2 * sc->r;
        const int nx = (int)((sc->x1 - sc->x0) / sp + 1e-9), ny = (int)(sc->fh / sp + 1e-9), nz = sc->dim == 3 ? (int)(sc->Dz / sp + 1e-9) : 1;
        double *x = (double *)malloc(sizeof(double) * 3 * (size_t)(nx * ny * nz));
        int n = 0;
        for (int k = 0; k < nz; ++k)
            for (int j = 0; j < ny; ++j)
                for (int i = 0; i < nx; ++i) {
                    x[n * sc->dim] = sc->x0 + sc->r + i * sp; x[n * sc->dim + 1] = sc->r + j * sp;
                    if (sc->dim == 3) x[n * sc->dim + 2] = sc->r + k * sp;
                    ++n;
                }
        if (cq_world_add_fluid(w, n, x, NULL) != CQ_SUCCESS) printf("    add_fluid: %s\n", cq_world_last_error(w));
        free(x);
    }
    return w;
}

static double vmax_of(const cq_world *w, int dim)
{
    const int n = cq_world_fluid_count(w);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n * dim + 1)), m = 0;
    cq_world_get_fluid(w, CQ_FIELD_V, v);
    for (int i = 0; i < n * dim; ++i) if (fabs(v[i]) > m) m = fabs(v[i]);
    free(v);
    return m;
}

static void fluid_stats(const cq_world *w, int dim, double *mean_y, double *max_y)
{
    const int n = cq_world_fluid_count(w);
    double *x = (double *)malloc(sizeof(double) * (size_t)(n * dim + 1)), s = 0, m = 0;
    cq_world_get_fluid(w, CQ_FIELD_X, x);
    for (int i = 0; i < n; ++i) { s += x[i * dim + 1]; if (x[i * dim + 1] > m) m = x[i * dim + 1]; }
    *mean_y = s / n; *max_y = m;
    free(x);
}

/* ---------------------------------------------------------------- physics */
TEST(tank_at_rest_2d)
{
    scene sc = {2, 0.6, 0.5, 0, 0.01, 0.002, CQ_PRECISION_F64, 0, 0.6, 0.3};
    cq_world *w = make_world(&sc);
    double my0, ty0, my, ty;
    cq_world_stats st;
    if (!w) { CHECK(0, "create"); return; }
    fluid_stats(w, 2, &my0, &ty0);
    CHECK_OK(cq_world_step(w, 750));            /* 1.5 s */
    fluid_stats(w, 2, &my, &ty);
    cq_world_stats_get(w, &st);
    printf("    tank 2D after 1.5 s: mean y %.4f -> %.4f, top %.4f -> %.4f, v_max %.3g m/s, density error %.3g%%, %d/%d iterations\n",
           my0, my, ty0, ty, vmax_of(w, 2), 100 * st.density_error, st.divergence_iterations, st.density_iterations);
    CHECK(fabs(my - my0) < 0.5 * sc.r, "the fluid's mean height moved by %g (volume lost or gained)", my - my0);
    CHECK(fabs(ty - ty0) < 2 * sc.r, "the surface moved by %g", ty - ty0);
    CHECK(vmax_of(w, 2) < 0.1, "still moving: v_max %g m/s", vmax_of(w, 2));
    CHECK(st.density_error <= 0.001 + 1e-12, "density error %g above the tolerance", st.density_error);
    cq_world_destroy(w);
}

TEST(tank_at_rest_3d_f32)
{
    scene sc = {3, 0.24, 0.3, 0.16, 0.01, 0.002, CQ_PRECISION_F32, 0, 0.24, 0.16};
    cq_world *w = make_world(&sc);
    double my0, ty0, my, ty;
    if (!w) { CHECK(0, "create"); return; }
    fluid_stats(w, 3, &my0, &ty0);
    CHECK_OK(cq_world_step(w, 300));
    fluid_stats(w, 3, &my, &ty);
    printf("    tank 3D f32 after 0.6 s: mean y %.4f -> %.4f, top %.4f -> %.4f, v_max %.3g m/s\n", my0, my, ty0, ty, vmax_of(w, 3));
    CHECK(fabs(my - my0) < 0.5 * sc.r, "the fluid's mean height moved by %g", my - my0);
    CHECK(fabs(ty - ty0) < 3 * sc.r, "the surface moved by %g", ty - ty0);
    cq_world_destroy(w);
}

/* A box of half the water's density floats half submerged; a heavier one sinks.  The water
   (a lattice filling [0, W] x [0, 0.3]) rises by the volume the box displaces: a floating box of
   footprint f and mass M settles with its centre at 0.3 + M / (rho0 A) - M / (rho0 f) + half
   height (A: the tank's floor area).  Averaged over the last 0.5 s (it still bobs). */
static double float_box(double density, int dim, double r, double *expect)
{
    scene sc = {dim, 0.8, 0.5, 0.4, r, dim == 3 ? 0.002 : 0.001, CQ_PRECISION_F32, 0, 0.8, 0.3};
    cq_world *w;
    cq_body_desc b;
    cq_body_state s;
    double avg = 0, M = 0, A, f;
    int id = -1;
    if (dim == 3) { sc.W = 0.4; sc.x1 = 0.4; }
    w = make_world(&sc);
    if (!w) return -1;
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.1; b.half_extents[1] = 0.05; b.half_extents[2] = 0.1; b.density = density;
    b.x[0] = sc.W / 2; b.x[1] = 0.36; b.x[2] = sc.Dz / 2;
    CHECK_OK(cq_world_add_body(w, &b, &id));
    CHECK_OK(cq_world_body_mass(w, id, &M, NULL));
    A = dim == 3 ? sc.W * sc.Dz : sc.W; f = dim == 3 ? 0.04 : 0.2;
    *expect = 0.3 + M / (1000 * A) - M / (1000 * f) + 0.05;
    CHECK_OK(cq_world_step(w, (int)(1.0 / sc.dt)));
    for (int k = 0; k < 25; ++k) { CHECK_OK(cq_world_step(w, (int)(0.02 / sc.dt))); cq_world_get_body(w, id, &s); avg += s.x[1] / 25; }
    cq_world_destroy(w);
    return avg;
}

TEST(archimedes_2d)
{
    double expect, y = float_box(500, 2, 0.01, &expect);
    printf("    2D box of 500 kg/m^3, 0.1 m tall: centre at %.4f m, floating half submerged puts it at %.4f\n", y, expect);
    CHECK(fabs(y - expect) < 0.01, "centre %g, expected %g", y, expect);
    y = float_box(2000, 2, 0.01, &expect);
    printf("    2D box of 2000 kg/m^3: centre at %.4f m (on the floor: 0.05)\n", y);
    CHECK(y < 0.07, "the heavy box did not sink: centre at %g", y);
}

TEST(archimedes_3d)
{
    double expect, y = float_box(500, 3, 0.0125, &expect);
    printf("    3D box of 500 kg/m^3, 0.1 m tall: centre at %.4f m, floating half submerged puts it at %.4f\n", y, expect);
    CHECK(fabs(y - expect) < 0.015, "centre %g, expected %g", y, expect);
}

/* Martin & Moyce (1952), n^2 = 2 (column a wide, 2a high): surge front Z = x/a at T = t sqrt(2g/a) */
TEST(dam_break_martin_moyce_2d)
{
    static const double T[] = {1.43, 1.83, 2.20, 2.51, 2.83}, Z[] = {1.67, 2.11, 2.56, 3.00, 3.44};
    const double a = 0.2;
    scene sc = {2, 1.2, 0.5, 0, 0.005, 0.0005, CQ_PRECISION_F32, 0, 0.2, 0.4};
    cq_world *w = make_world(&sc);
    const int n = w ? cq_world_fluid_count(w) : 0;
    double *x = (double *)malloc(sizeof(double) * (size_t)(2 * n + 2));
    int step = 0;
    if (!w) { CHECK(0, "create"); free(x); return; }
    for (int k = 0; k < 5; ++k) {
        const int target = (int)(T[k] / sqrt(2 * 9.81 / a) / sc.dt + 0.5);
        double front = 0, z;
        CHECK_OK(cq_world_step(w, target - step));
        step = target;
        cq_world_get_fluid(w, CQ_FIELD_X, x);
        for (int i = 0; i < n; ++i) if (x[2 * i + 1] < 0.05 && x[2 * i] > front) front = x[2 * i];
        z = (front + sc.r) / a;
        printf("    T = %.2f: Z = %.3f (Martin & Moyce %.2f, %+.1f%%)\n", T[k], z, Z[k], 100 * (z / Z[k] - 1));
        /* from T = 1.8 on; before, the front leads by 13-16% (converged in resolution): the
           experiment's gate needed time to lift, an SPH dam has none */
        if (T[k] > 1.8) CHECK(fabs(z / Z[k] - 1) < 0.10, "front Z = %g at T = %g, Martin & Moyce %g", z, T[k], Z[k]);
    }
    free(x);
    cq_world_destroy(w);
}

/* ---------------------------------------------------------------- free flight */
static cq_world *flight(int dim, const double v0[3], const double w0[3], int steps, int track, cq_body_state *out, double *J, double g)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    double n = 0;
    int id = 0;
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b);
    d.dim = dim; d.particle_radius = 0.02; d.dt = 0.002; d.gravity[1] = g; d.precision = CQ_PRECISION_F64;
    for (int a = 0; a < 3; ++a) d.domain_hi[a] = a == 1 ? 2.0 : 1.0;
    d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.1; b.half_extents[1] = 0.05; b.half_extents[2] = 0.03; b.density = 500;
    b.x[0] = 0.5; b.x[1] = 1.0; b.x[2] = 0.5;
    b.q[0] = 0.9; b.q[1] = dim == 3 ? 0.3 : 0; b.q[2] = dim == 3 ? 0.2 : 0; b.q[3] = 0.1;
    for (int a = 0; a < 4; ++a) n += b.q[a] * b.q[a];
    for (int a = 0; a < 4; ++a) b.q[a] /= sqrt(n);
    for (int a = 0; a < 3; ++a) { b.v[a] = v0[a]; b.w[a] = w0[a]; }
    cq_world_add_body(w, &b, &id);
    if (track) cq_world_track(w, id);
    cq_world_step(w, steps);
    cq_world_get_body(w, id, out);
    if (J) cq_world_body_jacobian(w, id, J);
    return w;
}

static double state_at(const cq_body_state *s, int r)
{
    return r < 3 ? s->x[r] : r < 7 ? s->q[r - 3] : r < 10 ? s->v[r - 7] : s->w[r - 10];
}

static void free_flight_check(int dim, int steps)
{
    const double v0[3] = {0.3, 1.0, dim == 3 ? -0.2 : 0}, w0[3] = {dim == 3 ? 3.0 : 0.0, dim == 3 ? -2.0 : 0.0, 5};
    cq_body_state s;
    double J[78], worst = 0;
    cq_world_destroy(flight(dim, v0, w0, steps, 1, &s, J, -2));
    for (int c = 0; c < 6; ++c) {
        double vp[3], wp[3], vm[3], wm[3];
        const double e = 1e-6;
        cq_body_state sp, sm;
        if (dim == 2 && (c == 2 || c == 3 || c == 4)) continue;
        for (int a = 0; a < 3; ++a) { vp[a] = vm[a] = v0[a]; wp[a] = wm[a] = w0[a]; }
        if (c < 3) { vp[c] += e; vm[c] -= e; } else { wp[c - 3] += e; wm[c - 3] -= e; }
        cq_world_destroy(flight(dim, vp, wp, steps, 0, &sp, NULL, -2));
        cq_world_destroy(flight(dim, vm, wm, steps, 0, &sm, NULL, -2));
        for (int r = 0; r < 13; ++r) {
            const double fd = (state_at(&sp, r) - state_at(&sm, r)) / (2 * e), err = fabs(fd - J[r * 6 + c]) / (1 + fabs(fd));
            if (err > worst) worst = err;
            CHECK(err < 1e-6, "%dD, %d steps: d state[%d] / d (v0,w0)[%d]: forward mode %.10g, central difference %.10g", dim, steps, r, c, J[r * 6 + c], fd);
        }
    }
    printf("    %dD free flight, %d steps: worst |J - central difference| / (1 + |cd|) = %.2g\n", dim, steps, worst);
}

TEST(free_flight_jacobian_2d) { free_flight_check(2, 50); free_flight_check(2, 500); }
TEST(free_flight_jacobian_3d) { free_flight_check(3, 50); free_flight_check(3, 500); }

TEST(free_flight_angular_momentum_3d)
{
    const double v0[3] = {0, 0, 0}, w0[3] = {3, -2, 5};
    cq_body_state s0, s1;
    double m = 0, I0[9] = {0}, L[2][3];
    cq_world *w = flight(3, v0, w0, 0, 0, &s0, NULL, 0);
    CHECK_OK(cq_world_body_mass(w, 0, &m, I0));
    CHECK(fabs(m - 500 * 0.2 * 0.1 * 0.06) < 1e-12, "box mass %g", m);
    CHECK(fabs(I0[0] - m / 3 * (0.05 * 0.05 + 0.03 * 0.03)) < 1e-15, "I_xx %g", I0[0]);
    CHECK_OK(cq_world_step(w, 1000));
    cq_world_get_body(w, 0, &s1);
    for (int k = 0; k < 2; ++k) {   /* L = R I0 R^T w */
        const cq_body_state *s = k ? &s1 : &s0;
        const double *q = s->q;
        double R[9], t[3], u[3];
        R[0] = 1 - 2 * (q[2] * q[2] + q[3] * q[3]); R[1] = 2 * (q[1] * q[2] - q[0] * q[3]); R[2] = 2 * (q[1] * q[3] + q[0] * q[2]);
        R[3] = 2 * (q[1] * q[2] + q[0] * q[3]); R[4] = 1 - 2 * (q[1] * q[1] + q[3] * q[3]); R[5] = 2 * (q[2] * q[3] - q[0] * q[1]);
        R[6] = 2 * (q[1] * q[3] - q[0] * q[2]); R[7] = 2 * (q[2] * q[3] + q[0] * q[1]); R[8] = 1 - 2 * (q[1] * q[1] + q[2] * q[2]);
        for (int a = 0; a < 3; ++a) t[a] = R[0 * 3 + a] * s->w[0] + R[1 * 3 + a] * s->w[1] + R[2 * 3 + a] * s->w[2];
        for (int a = 0; a < 3; ++a) u[a] = I0[a * 3] * t[0] + I0[a * 3 + 1] * t[1] + I0[a * 3 + 2] * t[2];
        for (int a = 0; a < 3; ++a) L[k][a] = R[a * 3] * u[0] + R[a * 3 + 1] * u[1] + R[a * 3 + 2] * u[2];
    }
    {
        const double n0 = sqrt(L[0][0] * L[0][0] + L[0][1] * L[0][1] + L[0][2] * L[0][2]);
        const double dl = sqrt((L[1][0] - L[0][0]) * (L[1][0] - L[0][0]) + (L[1][1] - L[0][1]) * (L[1][1] - L[0][1]) + (L[1][2] - L[0][2]) * (L[1][2] - L[0][2]));
        printf("    3D tumbling box, 1000 steps of 2 ms: |L1 - L0| / |L0| = %.3g; |q| = %.15f\n", dl / n0,
               sqrt(s1.q[0] * s1.q[0] + s1.q[1] * s1.q[1] + s1.q[2] * s1.q[2] + s1.q[3] * s1.q[3]));
        CHECK(dl / n0 < 0.02, "angular momentum drifted by %g", dl / n0);
    }
    cq_world_destroy(w);
}

/* ---------------------------------------------------------------- controls */
/* dL/du_n from cq_world_control_grad against central differences of per-step controls */
static double control_run(int dim, int steps, int kstep, int kcomp, double e, double *grad, int track)
{
    const double v0[3] = {0.3, 1.0, 0}, w0[3] = {0, 0, 5};
    cq_body_state s;
    cq_world *w = flight(dim, v0, w0, 0, track, &s, NULL, -9.81);
    double L = 0, seed[13];
    for (int n = 0; n < steps; ++n) {
        double f[3] = {0.5 * sin(n * 0.1), 0.2, 0}, t[3] = {0, 0, 0.01 * cos(n * 0.05)};
        if (n == kstep) { if (kcomp < 3) f[kcomp] += e; else t[kcomp - 3] += e; }
        cq_world_set_control(w, 0, f, t);
        cq_world_step(w, 1);
    }
    cq_world_get_body(w, 0, &s);
    /* L = x_x + 2 x_y + q_z + 0.5 w_z */
    L = s.x[0] + 2 * s.x[1] + s.q[3] + 0.5 * s.w[2];
    if (grad) {
        memset(seed, 0, sizeof seed);
        seed[0] = 1; seed[1] = 2; seed[6] = 1; seed[12] = 0.5;
        CHECK_OK(cq_world_control_grad(w, seed, grad));
    }
    cq_world_destroy(w);
    return L;
}

TEST(control_gradients_2d)
{
    const int steps = 100;
    double *g = (double *)malloc(sizeof(double) * steps * 6), worst = 0;
    const int ks[3] = {0, 37, 99}, comps[3] = {0, 1, 5};
    control_run(2, steps, -1, 0, 0, g, 1);
    for (int i = 0; i < 3; ++i)
        for (int c = 0; c < 3; ++c) {
            const double e = 1e-4;
            const double fd = (control_run(2, steps, ks[i], comps[c], e, NULL, 0) - control_run(2, steps, ks[i], comps[c], -e, NULL, 0)) / (2 * e);
            const double err = fabs(fd - g[ks[i] * 6 + comps[c]]) / (1e-6 + fabs(fd));
            if (err > worst) worst = err;
            CHECK(err < 1e-5, "dL/du[step %d][%d]: %.10g, central difference %.10g", ks[i], comps[c], g[ks[i] * 6 + comps[c]], fd);
        }
    printf("    2D controls, %d steps: worst relative error %.2g\n", steps, worst);
    free(g);
}

/* ---------------------------------------------------------------- contact */
TEST(contact_box_rests_and_slides)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    cq_body_state s;
    int id = 0;
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 0.001; d.gravity[1] = -9.81; d.precision = CQ_PRECISION_F64;
    d.domain_hi[0] = 2.0; d.domain_hi[1] = 1.0; d.logger.func = cq_log_silent;
    CHECK_OK(cq_world_create(&d, &w));
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.1; b.half_extents[1] = 0.05; b.density = 800; b.friction = 0.5;
    b.x[0] = 0.5; b.x[1] = 0.3; b.v[0] = 1.0;
    CHECK_OK(cq_world_add_body(w, &b, &id));
    CHECK_OK(cq_world_step(w, 1500));
    cq_world_get_body(w, id, &s);
    printf("    box dropped with v_x = 1 m/s, mu = 0.5, after 1.5 s: y %.4f (half height 0.05), x %.4f, v %.4f %.4f, w %.4f\n",
           s.x[1], s.x[0], s.v[0], s.v[1], s.w[2]);
    CHECK(s.x[1] > 0.035 && s.x[1] < 0.06, "resting height %g (the floor is at 0, half height 0.05)", s.x[1]);
    CHECK(fabs(s.v[1]) < 0.02 && fabs(s.v[0]) < 0.05, "still moving: v = (%g, %g)", s.v[0], s.v[1]);
    CHECK(s.x[0] > 0.5 && s.x[0] < 0.5 + 1.0 * 1.0 / (2 * 0.5 * 9.81) + 0.3, "slid to x = %g", s.x[0]);
    cq_world_destroy(w);
}

/* Derivatives through contact (the smooth penalty model with friction): a box sliding on the
   floor (2D), and a ball hitting a resting box (3D: the box's state w.r.t. the ball's v0, w0),
   against float64 central differences. */
static cq_world *contact_world(int dim, const double v0[3], const double w0[3], int steps, int track)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_world *w = NULL;
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b);
    d.dim = dim; d.particle_radius = 0.01; d.dt = 0.001; d.gravity[1] = -9.81; d.precision = CQ_PRECISION_F64;
    d.domain_hi[0] = 1.0; d.domain_hi[1] = 0.5; d.domain_hi[2] = 0.4; d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.04; b.density = 800; b.friction = 0.4;
    b.x[0] = 0.2; b.x[1] = dim == 3 ? 0.1 : 0.045; b.x[2] = 0.2;
    for (int a = 0; a < 3; ++a) { b.v[a] = v0[a]; b.w[a] = w0[a]; }
    cq_world_add_body(w, &b, NULL);
    if (dim == 3) {   /* a box resting ahead of the ball */
        memset(&b, 0, sizeof b);
        b.shape = CQ_SHAPE_BOX; b.half_extents[0] = b.half_extents[1] = b.half_extents[2] = 0.05; b.density = 300; b.friction = 0.4;
        b.x[0] = 0.4; b.x[1] = 0.052; b.x[2] = 0.2;
        cq_world_add_body(w, &b, NULL);
    }
    if (track) cq_world_track(w, 0);
    cq_world_step(w, steps);
    return w;
}

static void contact_derivative_check(int dim, int steps, int body, double tol)
{
    const double v0[3] = {1.5, dim == 3 ? -0.5 : 0.0, 0.1 * (dim == 3)}, w0[3] = {0, 0, dim == 3 ? -10.0 : -5.0};
    double J[78], worst = 0, big = 0;
    cq_world *w = contact_world(dim, v0, w0, steps, 1);
    cq_world_body_jacobian(w, body, J);
    cq_world_destroy(w);
    for (int c = 0; c < 6; ++c) {
        double vp[3], wp[3], vm[3], wm[3];
        const double e = 1e-6;
        cq_body_state sp, sm;
        if (dim == 2 && (c == 2 || c == 3 || c == 4)) continue;
        for (int a = 0; a < 3; ++a) { vp[a] = vm[a] = v0[a]; wp[a] = wm[a] = w0[a]; }
        if (c < 3) { vp[c] += e; vm[c] -= e; } else { wp[c - 3] += e; wm[c - 3] -= e; }
        w = contact_world(dim, vp, wp, steps, 0); cq_world_get_body(w, body, &sp); cq_world_destroy(w);
        w = contact_world(dim, vm, wm, steps, 0); cq_world_get_body(w, body, &sm); cq_world_destroy(w);
        for (int r = 0; r < 13; ++r) {
            const double fd = (state_at(&sp, r) - state_at(&sm, r)) / (2 * e), err = fabs(fd - J[r * 6 + c]) / (1 + fabs(fd));
            if (err > worst) worst = err;
            if (fabs(fd) > big) big = fabs(fd);
            CHECK(err < tol, "%dD contact, body %d, %d steps: d state[%d] / d (v0,w0)[%d]: forward mode %.8g, central difference %.8g",
                  dim, body, steps, r, c, J[r * 6 + c], fd);
        }
    }
    printf("    %dD contact, body %d, %d steps: worst |J - cd| / (1 + |cd|) = %.2g (largest entry %.3g)\n", dim, body, steps, worst, big);
}

TEST(contact_derivatives)
{
    contact_derivative_check(2, 200, 0, 1e-5);   /* a ball rolling and sliding on the floor */
    contact_derivative_check(3, 150, 1, 1e-5);   /* the box the 3D ball hits */
}

/* ---------------------------------------------------------------- joints */
/* `links` boxes (0.08 x 0.3 x 0.08) hanging in a chain from the fixed pivot (1, 1.8, 0.5), all
   turned by theta0 about z; link 0 starts with angular velocity w0 (and the matching v0 + dv) */
static cq_world *chain_world(int dim, int links, double theta0, const double w0[3], const double dv[3], int steps, int track)
{
    cq_world_desc d;
    cq_world *w = NULL;
    double p[3] = {1.0, 1.8, dim == 3 ? 0.5 : 0}, c = cos(theta0 / 2), sn = sin(theta0 / 2);
    memset(&d, 0, sizeof d);
    d.dim = dim; d.particle_radius = 0.02; d.dt = 0.001; d.gravity[1] = -9.81; d.precision = CQ_PRECISION_F64;
    d.domain_hi[0] = 2.0; d.domain_hi[1] = 2.0; d.domain_hi[2] = 1.0; d.logger.func = cq_log_silent;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    for (int k = 0; k < links; ++k) {
        cq_body_desc b;
        cq_joint_desc j;
        const double down[3] = {sin(theta0) * 0.15, -cos(theta0) * 0.15, 0};
        memset(&b, 0, sizeof b); memset(&j, 0, sizeof j);
        b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.04; b.half_extents[1] = 0.15; b.half_extents[2] = 0.04; b.density = 1000;
        b.q[0] = c; b.q[3] = sn;
        for (int a = 0; a < 3; ++a) b.x[a] = p[a] + down[a];
        if (k == 0) {   /* v = w x (x - pivot) + dv */
            b.v[0] = w0[1] * down[2] - w0[2] * down[1] + dv[0];
            b.v[1] = w0[2] * down[0] - w0[0] * down[2] + dv[1];
            b.v[2] = w0[0] * down[1] - w0[1] * down[0] + dv[2];
            for (int a = 0; a < 3; ++a) b.w[a] = w0[a];
        }
        CHECK_OK(cq_world_add_body(w, &b, NULL));
        j.body_a = k; j.body_b = k - 1;
        for (int a = 0; a < 3; ++a) j.anchor[a] = p[a];
        CHECK_OK(cq_world_add_joint(w, &j, NULL));
        for (int a = 0; a < 3; ++a) p[a] += 2 * down[a];
    }
    if (track) CHECK_OK(cq_world_track(w, 0));
    if (steps) CHECK_OK(cq_world_step(w, steps));
    return w;
}

/* the largest gap of the world's joints */
static double max_gap(const cq_world *w)
{
    double worst = 0, g;
    for (int j = 0; j < cq_world_joint_count(w); ++j)
        if (cq_world_joint_gap(w, j, &g) == CQ_SUCCESS && g > worst) worst = g;
    return worst;
}

/* kinetic + potential energy of the bodies */
static double body_energy(const cq_world *w, int dim)
{
    double E = 0;
    for (int k = 0; k < cq_world_body_count(w); ++k) {
        cq_body_state s;
        double m = 0, I0[9] = {0}, R[9], Iw[3];
        const double *q = s.q;
        if (cq_world_get_body(w, k, &s) != CQ_SUCCESS || cq_world_body_mass(w, k, &m, I0) != CQ_SUCCESS) return NAN;
        R[0] = 1 - 2 * (q[2] * q[2] + q[3] * q[3]); R[1] = 2 * (q[1] * q[2] - q[0] * q[3]); R[2] = 2 * (q[1] * q[3] + q[0] * q[2]);
        R[3] = 2 * (q[1] * q[2] + q[0] * q[3]); R[4] = 1 - 2 * (q[1] * q[1] + q[3] * q[3]); R[5] = 2 * (q[2] * q[3] - q[0] * q[1]);
        R[6] = 2 * (q[1] * q[3] - q[0] * q[2]); R[7] = 2 * (q[2] * q[3] + q[0] * q[1]); R[8] = 1 - 2 * (q[1] * q[1] + q[2] * q[2]);
        {   /* w . R I0 R^T w with u = R^T w */
            double u[3];
            for (int a = 0; a < 3; ++a) u[a] = R[a] * s.w[0] + R[3 + a] * s.w[1] + R[6 + a] * s.w[2];
            for (int a = 0; a < 3; ++a) Iw[a] = I0[a * 3] * u[0] + I0[a * 3 + 1] * u[1] + I0[a * 3 + 2] * u[2];
            if (dim == 2) E += 0.5 * I0[8] * s.w[2] * s.w[2];
            else E += 0.5 * (u[0] * Iw[0] + u[1] * Iw[1] + u[2] * Iw[2]);
        }
        E += 0.5 * m * (s.v[0] * s.v[0] + s.v[1] * s.v[1] + s.v[2] * s.v[2]) + m * 9.81 * s.x[1];
    }
    return E;
}

/* a rod on a pin: the joint holds (gap), and the small-amplitude period is the physical
   pendulum's 2 pi sqrt(I_pivot / (m g L)) */
TEST(joint_pendulum_2d_period)
{
    const double zero[3] = {0, 0, 0}, th0 = 0.05;
    cq_world *w = chain_world(2, 1, th0, zero, zero, 0, 0);
    double m = 0, I0[9] = {0}, prev = th0, t_cross[3] = {0, 0, 0}, worst = 0;
    int crossings = 0;
    CHECK_OK(cq_world_body_mass(w, 0, &m, I0));
    for (int n = 1; n <= 6000 && crossings < 3; ++n) {
        cq_body_state s;
        double th;
        CHECK_OK(cq_world_step(w, 1));
        cq_world_get_body(w, 0, &s);
        th = 2 * atan2(s.q[3], s.q[0]);
        if ((prev > 0) != (th > 0)) t_cross[crossings++] = 0.001 * (n - 1 + prev / (prev - th));
        prev = th;
        if (max_gap(w) > worst) worst = max_gap(w);
    }
    {
        const double T = t_cross[2] - t_cross[0], L = 0.15;   /* two half swings */
        const double expect = 2 * 3.14159265358979 * sqrt((I0[8] + m * L * L) / (m * 9.81 * L));
        printf("    2D pendulum: period %.4f s, physical pendulum %.4f s (%+.2f%%); largest joint gap %.2g m\n",
               T, expect, 100 * (T / expect - 1), worst);
        CHECK(crossings == 3 && fabs(T / expect - 1) < 0.01, "period %g, expected %g", T, expect);
        CHECK(worst < 1e-5, "the joint opened by %g m", worst);
    }
    cq_world_destroy(w);
}

/* a 3D chain of three links, spun: joints hold and the energy stays (semi-implicit Euler with
   impulses loses a little, never gains much) */
TEST(joint_chain_3d_holds)
{
    const double w0[3] = {1.0, 2.0, 3.0}, zero[3] = {0, 0, 0};
    cq_world *w = chain_world(3, 3, 0.6, w0, zero, 0, 0);
    const double E0 = body_energy(w, 3);
    double worst = 0, E;
    for (int n = 0; n < 12; ++n) {
        CHECK_OK(cq_world_step(w, 50));
        if (max_gap(w) > worst) worst = max_gap(w);
    }
    E = body_energy(w, 3);
    printf("    3D chain of 3, 600 steps: largest joint gap %.2g m, energy %.4f -> %.4f J (%+.2f%%)\n", worst, E0, E, 100 * (E / E0 - 1));
    CHECK(worst < 1e-4, "the joints opened by %g m", worst);
    CHECK(E < E0 * 1.01 && E > E0 * 0.9, "energy %g -> %g", E0, E);
    cq_world_destroy(w);
}

/* derivatives through the joints' impulses ([DiffFR-supp] eqs 44-47) against central differences */
static void joint_derivative_check(int dim, int links, int steps, int body)
{
    const double w0[3] = {dim == 3 ? 1.0 : 0.0, dim == 3 ? -0.5 : 0.0, 2.0}, dv[3] = {0.1, 0.05, dim == 3 ? 0.1 : 0};
    double J[78], worst = 0, big = 0;
    cq_world *w = chain_world(dim, links, 0.4, w0, dv, steps, 1);
    cq_world_body_jacobian(w, body, J);
    cq_world_destroy(w);
    for (int c = 0; c < 6; ++c) {
        double vp[3], wp[3], vm[3], wm[3];
        const double e = 1e-6;
        cq_body_state sp, sm;
        if (dim == 2 && (c == 2 || c == 3 || c == 4)) continue;
        for (int a = 0; a < 3; ++a) { vp[a] = vm[a] = dv[a]; wp[a] = wm[a] = w0[a]; }
        /* the world builds v0 = w0 x r + dv: perturbing dv[c] moves v0[c] alone; perturbing w0
           moves v0 too, so that column is checked against J's chain: dstate/dw0 + dstate/dv0 dv0/dw0 */
        if (c < 3) { vp[c] += e; vm[c] -= e; } else { wp[c - 3] += e; wm[c - 3] -= e; }
        w = chain_world(dim, links, 0.4, wp, vp, steps, 0); cq_world_get_body(w, body, &sp); cq_world_destroy(w);
        w = chain_world(dim, links, 0.4, wm, vm, steps, 0); cq_world_get_body(w, body, &sm); cq_world_destroy(w);
        for (int r = 0; r < 13; ++r) {
            double fd = (state_at(&sp, r) - state_at(&sm, r)) / (2 * e), jc = J[r * 6 + c], err;
            if (c >= 3) {   /* d v0 / d w0[c-3] = e_{c-3} x down */
                const double th = 0.4, down[3] = {sin(th) * 0.15, -cos(th) * 0.15, 0};
                double ec[3] = {0, 0, 0}, dv0[3];
                ec[c - 3] = 1;
                dv0[0] = ec[1] * down[2] - ec[2] * down[1]; dv0[1] = ec[2] * down[0] - ec[0] * down[2]; dv0[2] = ec[0] * down[1] - ec[1] * down[0];
                for (int a = 0; a < 3; ++a) jc += J[r * 6 + a] * dv0[a];
            }
            err = fabs(fd - jc) / (1 + fabs(fd));
            if (err > worst) worst = err;
            if (fabs(fd) > big) big = fabs(fd);
            CHECK(err < 1e-5, "%dD joints, body %d, %d steps: d state[%d] / d (v0,w0)[%d]: forward mode %.8g, central difference %.8g",
                  dim, body, steps, r, c, jc, fd);
        }
    }
    printf("    %dD chain of %d, body %d, %d steps: worst |J - cd| / (1 + |cd|) = %.2g (largest entry %.3g)\n", dim, links, body, steps, worst, big);
}

TEST(joint_derivatives)
{
    joint_derivative_check(2, 2, 300, 1);
    joint_derivative_check(3, 2, 150, 1);
}

/* a closed loop: a motor on link 0 of a 2D double pendulum, torque = -kp theta - kd w (a policy
   of the state, set before every step); d(final x of link 1)/d(kp, kd) by
   cq_world_control_grad_feedback against central differences of whole rollouts, and the open-loop
   sweep shown to miss the feedback */
static double motor_run(double kp, double kd, double *dkp, double *dkd, double *dkp_open)
{
    const double zero[3] = {0, 0, 0}, w0[3] = {0, 0, 1.5};
    const int steps = 300, ns = 26, nu = 12;
    cq_world *w = chain_world(2, 2, 0.4, w0, zero, 0, 1);
    double *K = NULL, *g = NULL, th[300], L, seed[26];
    cq_body_state s;
    if (dkp) {
        K = (double *)calloc((size_t)steps * nu * ns, sizeof(double));
        g = (double *)malloc(sizeof(double) * (size_t)steps * nu);
    }
    for (int n = 0; n < steps; ++n) {
        double t[3] = {0, 0, 0}, qq;
        const double f[3] = {0, 0, 0};
        cq_world_get_body(w, 0, &s);
        th[n] = 2 * atan2(s.q[3], s.q[0]);
        t[2] = -kp * th[n] - kd * s.w[2];
        qq = s.q[0] * s.q[0] + s.q[3] * s.q[3];
        if (K) {   /* row 5 (body 0's torque z): d/d q_w, q_z, w_z of body 0 */
            double *row = K + ((size_t)n * nu + 5) * ns;
            row[3] = -kp * (-2 * s.q[3] / qq); row[6] = -kp * (2 * s.q[0] / qq); row[12] = -kd;
        }
        cq_world_set_control(w, 0, f, t);
        CHECK_OK(cq_world_step(w, 1));
    }
    cq_world_get_body(w, 1, &s);
    L = s.x[0];
    if (dkp) {
        memset(seed, 0, sizeof seed);
        seed[13] = 1;
        CHECK_OK(cq_world_control_grad_feedback(w, seed, K, g));
        *dkp = *dkd = 0;
        for (int n = 0; n < steps; ++n) { *dkp += g[n * nu + 5] * -th[n]; }
        cq_world_destroy(w);
        w = chain_world(2, 2, 0.4, w0, zero, 0, 1);   /* the same run once more for the derivative in kd: -w_n */
        for (int n = 0; n < steps; ++n) {
            double t[3] = {0, 0, 0};
            const double f[3] = {0, 0, 0};
            cq_world_get_body(w, 0, &s);
            t[2] = -kp * th[n] - kd * s.w[2];
            *dkd += g[n * nu + 5] * -s.w[2];
            cq_world_set_control(w, 0, f, t);
            cq_world_step(w, 1);
        }
        CHECK_OK(cq_world_control_grad(w, seed, g));
        *dkp_open = 0;
        for (int n = 0; n < steps; ++n) *dkp_open += g[n * nu + 5] * -th[n];
    }
    cq_world_destroy(w);
    free(K); free(g);
    return L;
}

TEST(closed_loop_control_gradient)
{
    const double kp = 3, kd = 0.4, e = 1e-5;
    double gkp = 0, gkd = 0, open = 0, d1, d2;
    motor_run(kp, kd, &gkp, &gkd, &open);
    d1 = (motor_run(kp + e, kd, NULL, NULL, NULL) - motor_run(kp - e, kd, NULL, NULL, NULL)) / (2 * e);
    d2 = (motor_run(kp, kd + e, NULL, NULL, NULL) - motor_run(kp, kd - e, NULL, NULL, NULL)) / (2 * e);
    printf("    closed loop, 300 steps: dx/dkp %.8g (cd %.8g; open-loop sweep %.4g), dx/dkd %.8g (cd %.8g)\n", gkp, d1, open, gkd, d2);
    CHECK(fabs(gkp - d1) < 1e-5 * (1 + fabs(d1)) && fabs(gkd - d2) < 1e-5 * (1 + fabs(d2)), "closed-loop gradient off");
    CHECK(fabs(open - d1) > 1e-3 * fabs(d1), "the open-loop sweep should differ from the closed loop's");
    {   /* bad feedback input is refused by name */
        const double zero[3] = {0, 0, 0};
        cq_world *w = chain_world(2, 1, 0.4, zero, zero, 3, 1);
        double K[3 * 6 * 13], seed[13], g[3 * 6];
        memset(K, 0, sizeof K); memset(seed, 0, sizeof seed);
        K[(2 * 6 + 1) * 13 + 4] = NAN;
        CHECK(cq_world_control_grad_feedback(w, seed, K, g) == CQ_ERROR_NON_FINITE &&
              strstr(cq_world_last_error(w), "step 2 (control 1 of body 0, state 4 of body 0)"), "%s", cq_world_last_error(w));
        CHECK(cq_world_control_grad_feedback(w, seed, NULL, g) == CQ_ERROR_INVALID_ARGUMENT, "NULL feedback");
        cq_world_destroy(w);
    }
}

TEST(joint_bad_input)
{
    const double zero[3] = {0, 0, 0};
    cq_world *w = chain_world(2, 1, 0, zero, zero, 0, 0);
    cq_joint_desc j;
    cq_body_desc b;
    double gap = -1;
    int id = 7;
    memset(&j, 0, sizeof j); memset(&b, 0, sizeof b);
    CHECK(cq_world_add_joint(w, NULL, &id) == CQ_ERROR_INVALID_ARGUMENT && id == 7, "NULL desc");
    j.body_a = 0; j.body_b = 1;
    CHECK(cq_world_add_joint(w, &j, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "body_b = 1"), "%s", cq_world_last_error(w));
    j.body_b = 0;
    CHECK(cq_world_add_joint(w, &j, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "body_a = body_b"), "%s", cq_world_last_error(w));
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.1; b.density = 100; b.is_static = 1; b.x[0] = 0.5; b.x[1] = 0.5;
    CHECK_OK(cq_world_add_body(w, &b, NULL));
    j.body_a = 1; j.body_b = -1;
    CHECK(cq_world_add_joint(w, &j, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "dynamic"), "%s", cq_world_last_error(w));
    j.body_a = 0; j.body_b = 1; j.anchor[1] = NAN;
    CHECK(cq_world_add_joint(w, &j, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "anchor[1]"), "%s", cq_world_last_error(w));
    CHECK(cq_world_joint_count(w) == 1 && id == 7, "a refused joint was added");
    CHECK(cq_world_joint_gap(w, 1, &gap) == CQ_ERROR_INVALID_ARGUMENT && gap == -1, "gap of joint 1");
    CHECK(cq_world_joint_gap(w, 0, NULL) == CQ_ERROR_INVALID_ARGUMENT, "NULL gap");
    CHECK_OK(cq_world_joint_gap(w, 0, &gap));
    CHECK(gap < 1e-12, "gap at step 0: %g", gap);
    CHECK_OK(cq_world_step(w, 1));
    j.anchor[1] = 1;
    CHECK(cq_world_add_joint(w, &j, &id) == CQ_ERROR_INVALID_STATE && strstr(cq_world_last_error(w), "step 1"), "%s", cq_world_last_error(w));
    CHECK(cq_world_add_joint(NULL, &j, &id) == CQ_ERROR_INVALID_ARGUMENT, "NULL world");
    CHECK(cq_world_joint_count(NULL) == 0, "count of NULL");
    cq_world_destroy(w);
}

/* ---------------------------------------------------------------- coupled derivatives */
/* a ball thrown into water: the localized derivatives against central differences, growing horizons */
static cq_world *ball_world(double vx, int steps, int track)
{
    scene sc = {2, 0.8, 0.6, 0, 0.01, 0.001, CQ_PRECISION_F64, 0, 0.8, 0.2};
    cq_world *w = make_world(&sc);
    cq_body_desc b;
    int id = 0;
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.05; b.density = 700;
    b.x[0] = 0.3; b.x[1] = 0.28; b.v[0] = vx; b.v[1] = -1.0;
    cq_world_add_body(w, &b, &id);
    if (track) cq_world_track(w, id);
    cq_world_step(w, steps);
    return w;
}

TEST(coupled_derivatives_report)
{
    static const int H[] = {30, 45, 60, 100, 150};
    printf("    ball (r 5 cm, 700 kg/m^3) thrown into water at v = (1, -1) m/s; d x / d v0_x, localized scheme vs central difference:\n");
    for (int k = 0; k < 5; ++k) {
        double J[78], e = 1e-3;
        cq_body_state sp, sm;
        cq_world *w = ball_world(1.0, H[k], 1);
        cq_world_body_jacobian(w, 0, J);
        cq_world_destroy(w);
        w = ball_world(1.0 + e, H[k], 0); cq_world_get_body(w, 0, &sp); cq_world_destroy(w);
        w = ball_world(1.0 - e, H[k], 0); cq_world_get_body(w, 0, &sm); cq_world_destroy(w);
        {
            const double fdx = (sp.x[0] - sm.x[0]) / (2 * e), fdv = (sp.v[0] - sm.v[0]) / (2 * e);
            printf("      %4d steps: dx/dv0x %.5f (cd %.5f, %+.1f%%)   dvx/dv0x %.5f (cd %.5f)\n", H[k], J[0], fdx,
                   100 * (J[0] / fdx - 1), J[7 * 6], fdv);
            CHECK(J[0] > 0 && fdx > 0, "the derivative points the wrong way: %g vs %g", J[0], fdx);
            if (k <= 1) CHECK(fabs(J[0] / fdx - 1) < 0.05, "short horizon: %g vs central difference %g", J[0], fdx);
            for (int i = 0; i < 78; ++i) CHECK(J[i] == J[i] && fabs(J[i]) < 1e6, "J[%d] = %g", i, J[i]);
        }
    }
}

/* ---------------------------------------------------------------- API contract */
TEST(bad_input_named_and_harmless)
{
    cq_world_desc d;
    cq_world *w = NULL;
    cq_body_desc b;
    double x[4] = {0.1, 0.1, NAN, 0.2}, y[2] = {5.0, 0.1};
    int id = -7;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 0.001; d.domain_hi[0] = 1; d.domain_hi[1] = 1; d.logger.func = cq_log_silent;
    {
        cq_world_desc e = d;
        e.particle_radius = -1;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_INVALID_ARGUMENT && w == NULL, "negative radius accepted");
        CHECK(strstr(cq_world_last_error(NULL), "particle_radius") != NULL, "message: %s", cq_world_last_error(NULL));
        e = d; e.dt = NAN;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(NULL), "dt"), "NaN dt");
        e = d; e.domain_hi[1] = 0.01;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(NULL), "domain"), "thin domain");
        e = d; e.dim = 4;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(NULL), "dim"), "dim 4");
        e = d; e.backend = CQ_BACKEND_CUDA;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_BACKEND_UNAVAILABLE, "CUDA world");
        e = d; e.min_iterations = 5; e.max_iterations = 2;
        CHECK(cq_world_create(&e, &w) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(NULL), "iterations"), "min > max");
        CHECK(cq_world_create(NULL, &w) == CQ_ERROR_INVALID_ARGUMENT && cq_world_create(&d, NULL) == CQ_ERROR_INVALID_ARGUMENT, "NULLs");
    }
    CHECK_OK(cq_world_create(&d, &w));
    CHECK(cq_world_add_fluid(w, 2, x, NULL) == CQ_ERROR_NON_FINITE && strstr(cq_world_last_error(w), "particle 1"), "%s", cq_world_last_error(w));
    CHECK(cq_world_add_fluid(w, 1, y, NULL) == CQ_ERROR_OUT_OF_DOMAIN && strstr(cq_world_last_error(w), "particle 0"), "%s", cq_world_last_error(w));
    CHECK(cq_world_add_fluid(w, -1, y, NULL) == CQ_ERROR_INVALID_ARGUMENT, "negative count");
    CHECK(cq_world_add_fluid(w, 1, NULL, NULL) == CQ_ERROR_INVALID_ARGUMENT, "NULL x");
    CHECK(cq_world_fluid_count(w) == 0, "a failed add changed the count");
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.05; b.density = 500; b.x[0] = 0.5; b.x[1] = 0.5;
    {
        cq_body_desc e = b;
        e.shape = (cq_shape)9;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "shape"), "shape 9");
        e = b; e.radius = 0;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "radius"), "radius 0");
        e = b; e.density = -3;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "density"), "density");
        e = b; e.v[1] = INFINITY;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_NON_FINITE, "Inf v");
        e = b; e.q[0] = 0.7; e.q[1] = 0.7;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "2D"), "3D rotation in 2D");
        e = b; e.x[0] = 3;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_OUT_OF_DOMAIN, "outside");
        e = b; e.shape = CQ_SHAPE_POINTS; e.point_count = 3; e.points = NULL;
        CHECK(cq_world_add_body(w, &e, &id) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "points"), "NULL points");
        CHECK(id == -7 && cq_world_body_count(w) == 0, "a failed add changed the world");
    }
    CHECK_OK(cq_world_add_body(w, &b, &id));
    CHECK(id == 0, "id %d", id);
    {
        cq_body_state s;
        double J[78], f[3] = {0, NAN, 0};
        CHECK(cq_world_get_body(w, 1, &s) == CQ_ERROR_INVALID_ARGUMENT && strstr(cq_world_last_error(w), "id = 1"), "unknown id");
        CHECK(cq_world_body_jacobian(w, 0, J) == CQ_ERROR_INVALID_STATE, "jacobian without tracking");
        CHECK(cq_world_track(w, 3) == CQ_ERROR_INVALID_ARGUMENT, "track unknown");
        CHECK(cq_world_set_control(w, 0, f, NULL) == CQ_ERROR_NON_FINITE && strstr(cq_world_last_error(w), "force[1]"), "NaN control");
        CHECK(cq_world_get_fluid(w, CQ_FIELD_C, x) == CQ_ERROR_INVALID_ARGUMENT, "field C");
        CHECK(cq_world_step(w, -1) == CQ_ERROR_INVALID_ARGUMENT, "negative steps");
        CHECK_OK(cq_world_step(w, 2));
        CHECK(cq_world_add_fluid(w, 1, x, NULL) == CQ_ERROR_INVALID_STATE, "fluid added after stepping");
        CHECK(cq_world_track(w, 0) == CQ_ERROR_INVALID_STATE, "track after stepping");
        CHECK(cq_world_step(NULL, 1) == CQ_ERROR_INVALID_ARGUMENT && cq_world_fluid_count(NULL) == 0, "NULL world");
    }
    cq_world_destroy(w);
    cq_world_destroy(NULL);
}

/* a step that blows up reports the step and body and leaves the world at the last step */
TEST(non_finite_step_restores)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_body_state s, s2;
    double J[78], J2[78], f[3] = {1e308, 0, 0};
    cq_world *w = NULL;
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 0.002; d.domain_hi[0] = d.domain_hi[1] = 1; d.logger.func = cq_log_silent;
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.05; b.density = 1e-150; b.x[0] = b.x[1] = 0.5;   /* a feather */
    CHECK_OK(cq_world_create(&d, &w));
    CHECK_OK(cq_world_add_body(w, &b, NULL));
    CHECK_OK(cq_world_track(w, 0));
    CHECK_OK(cq_world_step(w, 3));
    cq_world_get_body(w, 0, &s);
    cq_world_body_jacobian(w, 0, J);
    CHECK_OK(cq_world_set_control(w, 0, f, NULL));
    CHECK(cq_world_step(w, 5) == CQ_ERROR_NON_FINITE, "an infinite velocity passed");
    CHECK(strstr(cq_world_last_error(w), "step 3") && strstr(cq_world_last_error(w), "body 0"), "message: %s", cq_world_last_error(w));
    cq_world_get_body(w, 0, &s2);
    cq_world_body_jacobian(w, 0, J2);
    CHECK(memcmp(&s, &s2, sizeof s) == 0 && memcmp(J, J2, sizeof J) == 0 && cq_world_step_count(w) == 3, "the world changed");
    CHECK_OK(cq_world_reset(w));
    CHECK(cq_world_step_count(w) == 0, "reset");
    cq_world_destroy(w);
}

TEST(reset_replays_bitwise)
{
    scene sc = {2, 0.4, 0.4, 0, 0.01, 0.002, CQ_PRECISION_F32, 0, 0.2, 0.2};
    cq_world *w = make_world(&sc);
    const int n = w ? cq_world_fluid_count(w) : 0;
    double *a = (double *)malloc(sizeof(double) * (size_t)(2 * n + 2)), *b = (double *)malloc(sizeof(double) * (size_t)(2 * n + 2));
    if (!w) { CHECK(0, "create"); free(a); free(b); return; }
    CHECK_OK(cq_world_step(w, 40));
    cq_world_get_fluid(w, CQ_FIELD_X, a);
    CHECK_OK(cq_world_reset(w));
    CHECK_OK(cq_world_step(w, 40));
    cq_world_get_fluid(w, CQ_FIELD_X, b);
    CHECK(memcmp(a, b, sizeof(double) * (size_t)(2 * n)) == 0, "replay differs");
    free(a); free(b);
    cq_world_destroy(w);
}

/* the host's job system (cq_world_desc.threads) splitting ranges oddly and running them in
   reverse: the same bits as without it (every loop writes its own particle's entries; sums are
   serial) */
static void *odd_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    int *calls = (int *)user, chunk = min_range + 7;
    ++*calls;
    for (int end = items; end > 0; end -= chunk) task(end - chunk > 0 ? end - chunk : 0, end, 1, ctx);
    return NULL;
}
static void odd_finish(void *handle, void *user) { (void)handle; (void)user; }

static void threads_run(int hook, double *x, cq_body_state *s, double *J, int *calls)
{
    scene sc = {2, 0.5, 0.4, 0, 0.01, 0.002, CQ_PRECISION_F32, 0, 0.5, 0.16};
    cq_world_desc d;
    cq_world *w = NULL;
    cq_body_desc b;
    const int n = 25 * 8;
    double *x0 = (double *)malloc(sizeof(double) * 2 * (size_t)n);
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b);
    d.dim = 2; d.particle_radius = sc.r; d.dt = sc.dt; d.gravity[1] = -9.81; d.domain_hi[0] = sc.W; d.domain_hi[1] = sc.H;
    d.logger.func = cq_log_silent;
    if (hook) { d.threads.workers = 3; d.threads.enqueue = odd_enqueue; d.threads.finish = odd_finish; d.threads.user = calls; }
    CHECK_OK(cq_world_create(&d, &w));
    for (int i = 0; i < n; ++i) { x0[2 * i] = 0.01 + (i % 25) * 0.02; x0[2 * i + 1] = 0.01 + (i / 25) * 0.02; }
    CHECK_OK(cq_world_add_fluid(w, n, x0, NULL));
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.05; b.half_extents[1] = 0.03; b.density = 600; b.x[0] = 0.2; b.x[1] = 0.25; b.v[0] = 0.5;
    CHECK_OK(cq_world_add_body(w, &b, NULL));
    CHECK_OK(cq_world_track(w, 0));
    CHECK_OK(cq_world_step(w, 120));
    cq_world_get_fluid(w, CQ_FIELD_X, x);
    cq_world_get_body(w, 0, s);
    cq_world_body_jacobian(w, 0, J);
    cq_world_destroy(w);
    free(x0);
}

TEST(threads_hook_bitwise)
{
    double xa[400], xb[400], Ja[78], Jb[78];
    cq_body_state sa, sb;
    int calls = 0;
    threads_run(0, xa, &sa, Ja, &calls);
    threads_run(1, xb, &sb, Jb, &calls);
    CHECK(calls > 100, "the hook ran %d loops", calls);
    CHECK(memcmp(xa, xb, sizeof xa) == 0, "fluid positions differ with the threads hook");
    CHECK(memcmp(&sa, &sb, sizeof sa) == 0 && memcmp(Ja, Jb, sizeof Ja) == 0, "body state or Jacobian differ");
}

/* A world's steps allocate nothing once its first step has sized its buffers (a game engine's
   frame; an optimization loop's episodes: reset, tracked steps under controls, gradients): the
   per-step scratch of the bodies and their derivatives is kept (world.j2 >>world_keep).  Where
   that scratch must grow (tracking turned on after untracked steps) and the allocator refuses,
   the step fails as out of memory and leaves the world as it was. */
static cq_world *counted_world(cqt_counter *c)
{
    cq_world_desc d;
    cq_world *w = NULL;
    cq_body_desc b;
    cq_joint_desc j;
    double x[2 * 200];
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b); memset(&j, 0, sizeof j);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 0.002; d.gravity[1] = -9.81; d.domain_hi[0] = 0.5; d.domain_hi[1] = 0.4;
    d.logger.func = cq_log_silent;
    d.allocator.alloc = cqt_count_alloc; d.allocator.free = cqt_count_free; d.allocator.user = c;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return NULL;
    for (int i = 0; i < 200; ++i) { x[2 * i] = 0.01 + (i % 25) * 0.02; x[2 * i + 1] = 0.01 + (i / 25) * 0.02; }
    CHECK_OK(cq_world_add_fluid(w, 200, x, NULL));
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.05; b.half_extents[1] = 0.03; b.density = 600; b.x[0] = 0.2; b.x[1] = 0.25; b.v[0] = 0.5;
    CHECK_OK(cq_world_add_body(w, &b, NULL));
    b.x[0] = 0.35; b.v[0] = 0;
    CHECK_OK(cq_world_add_body(w, &b, NULL));
    j.body_a = 0; j.body_b = 1; j.anchor[0] = 0.275; j.anchor[1] = 0.25;   /* the two boxes pinned together */
    CHECK_OK(cq_world_add_joint(w, &j, NULL));
    return w;
}
TEST(world_steps_allocate_nothing_after_the_first)
{
    cqt_counter c = {0, 0, -1};
    cq_world *w = counted_world(&c);
    double dl[2 * 13], g[3][60 * 12], J[3][13 * 6];   /* J: the tracked body's */
    long during[3];
    if (!w) { CHECK(0, "create: %s", cq_world_last_error(NULL)); return; }
    memset(dl, 0, sizeof dl);
    dl[0] = 1; dl[13 + 1] = -0.5;   /* L = x_0 - y_1 / 2 */
    CHECK_OK(cq_world_track(w, 0));
    for (int e = 0; e < 3; ++e) {
        long before;
        CHECK_OK(cq_world_reset(w));
        before = c.allocs;
        for (int t = 0; t < 60; ++t) {   /* a controller: each step's force and torque */
            const double f[3] = {0.01 * t, 0.2 * (t % 3), 0}, tq[3] = {0, 0, 0.001 * t};
            CHECK_OK(cq_world_set_control(w, 0, f, tq));
            CHECK_OK(cq_world_step(w, 1));
            if (t == 0 && e == 0) before = c.allocs;   /* the first step sizes the buffers */
        }
        CHECK_OK(cq_world_control_grad(w, dl, g[e]));   /* (two bodies: its scratch on the stack) */
        CHECK_OK(cq_world_body_jacobian(w, 0, J[e]));
        during[e] = c.allocs - before;
    }
    /* the first episode's neighbour lists may still grow as the fluid settles (by half again each time) */
    CHECK(during[1] == 0 && during[2] == 0, "allocations during episodes 2 and 3 (steps and gradients): %ld, %ld (the first's after its first step: %ld)",
          during[1], during[2], during[0]);
    CHECK(!memcmp(g[0], g[1], sizeof g[0]) && !memcmp(g[0], g[2], sizeof g[0]), "an episode's dL/du differs from the first's");
    CHECK(!memcmp(J[0], J[1], sizeof J[0]) && !memcmp(J[0], J[2], sizeof J[0]), "an episode's Jacobian differs from the first's");
    cq_world_destroy(w);
    CHECK(c.live == 0, "%ld allocations leaked", c.live);
}
/* every allocation of a world's first step refused in turn, the k-th for k = 0, 1, ... until a
   step needs no more (the solver's arrays, the neighbour lists and the kernel values beside them,
   which the CPU's one pass sizes in two rounds at the first step, sph.j2 >>world_near, the bodies'
   scratch): the step fails with OUT_OF_MEMORY naming step 0 and leaks nothing, the world stays at
   step 0, and with memory back it steps as a world that never ran out, bit for bit */
TEST(world_first_step_refused_each_allocation)
{
    cqt_counter cr = {0, 0, -1};
    cq_world *ref = counted_world(&cr);
    double xr[2 * 200], x[2 * 200];
    int refused = 0, lists = 0;
    if (!ref) { CHECK(0, "create: %s", cq_world_last_error(NULL)); return; }
    CHECK_OK(cq_world_step(ref, 4));
    CHECK_OK(cq_world_get_fluid(ref, CQ_FIELD_X, xr));
    cq_world_destroy(ref);
    for (long k = 0; k < 400; ++k) {
        cqt_counter c = {0, 0, -1};
        cq_world *w = counted_world(&c);
        cq_result r;
        if (!w) { CHECK(0, "create: %s", cq_world_last_error(NULL)); return; }
        c.limit = c.allocs + k;
        r = cq_world_step(w, 1);
        c.limit = -1;
        if (r == CQ_SUCCESS) { cq_world_destroy(w); break; }   /* k allocations were all the step made */
        ++refused;
        CHECK(r == CQ_ERROR_OUT_OF_MEMORY, "refusing allocation %ld: %s", k, cq_result_string(r));
        CHECK(strstr(cq_world_last_error(w), "step 0") != NULL, "refusing allocation %ld: the error names no step: %s", k, cq_world_last_error(w));
        CHECK(cq_world_step_count(w) == 0, "refusing allocation %ld: the world went to step %d", k, cq_world_step_count(w));
        if (strstr(cq_world_last_error(w), "neighbour lists")) ++lists;
        CHECK_OK(cq_world_step(w, 4));
        CHECK_OK(cq_world_get_fluid(w, CQ_FIELD_X, x));
        CHECK(!memcmp(x, xr, sizeof x), "refusing allocation %ld, then 4 steps: not the positions of a world that never ran out", k);
        cq_world_destroy(w);
        CHECK(c.live == 0, "refusing allocation %ld: %ld blocks leaked", k, c.live);
    }
    CHECK(refused > 10 && lists >= 4, "%d allocations refused, %d of them the neighbour lists' (fluid and boundary, indices and values, in each of the first step's two rounds)", refused, lists);
}
TEST(world_step_refused_memory_leaves_the_world)
{
    cqt_counter c = {0, 0, -1};
    cq_world *w = counted_world(&c), *ref = NULL;
    cq_body_state s0, s1, sr;
    double J[13 * 6], Jr[13 * 6];
    if (!w) { CHECK(0, "create: %s", cq_world_last_error(NULL)); return; }
    memset(&s0, 0, sizeof s0); memset(&s1, 0, sizeof s1); memset(&sr, 0, sizeof sr);   /* (2D leaves z alone) */
    CHECK_OK(cq_world_step(w, 5));   /* untracked: the scratch sized for values alone */
    CHECK_OK(cq_world_reset(w));
    CHECK_OK(cq_world_track(w, 0));
    CHECK_OK(cq_world_get_body(w, 0, &s0));
    c.limit = c.allocs;   /* no more memory: the tracked step's larger scratch cannot be had */
    CHECK(cq_world_step(w, 1) == CQ_ERROR_OUT_OF_MEMORY, "a step without memory for its scratch succeeded");
    CHECK(strstr(cq_world_last_error(w), "step 0") != NULL, "the error names no step: %s", cq_world_last_error(w));
    CHECK(cq_world_step_count(w) == 0, "the refused step advanced the world to step %d", cq_world_step_count(w));
    CHECK_OK(cq_world_get_body(w, 0, &s1));
    CHECK(!memcmp(&s0, &s1, sizeof s0), "the refused step changed body 0");
    c.limit = -1;
    CHECK_OK(cq_world_step(w, 20));   /* then as a world that never ran out */
    CHECK_OK(cq_world_get_body(w, 0, &s1));
    CHECK_OK(cq_world_body_jacobian(w, 0, J));
    {
        cqt_counter c2 = {0, 0, -1};
        ref = counted_world(&c2);   /* the same calls without the refusal */
        if (ref) {
            CHECK_OK(cq_world_step(ref, 5));
            CHECK_OK(cq_world_reset(ref));
            CHECK_OK(cq_world_track(ref, 0));
            CHECK_OK(cq_world_step(ref, 20));
            CHECK_OK(cq_world_get_body(ref, 0, &sr));
            CHECK_OK(cq_world_body_jacobian(ref, 0, Jr));
            CHECK(!memcmp(&s1, &sr, sizeof s1) && !memcmp(J, Jr, sizeof J), "after a refused step the world differs from one never refused");
            cq_world_destroy(ref);
        }
        CHECK(c2.live == 0, "%ld allocations leaked", c2.live);
    }
    cq_world_destroy(w);
    CHECK(c.live == 0, "%ld allocations leaked", c.live);
}

/* cq_world_control_grad of 17 bodies (more than its stack holds: an allocation, refused when memory
   is out) gives the first body's dL/du bitwise as a world of that body alone: the others fly apart
   from it and add exact zeros to its sums */
static cq_result many_bodies_grad(int bodies, cqt_counter *c, double *g)
{
    cq_world_desc d;
    cq_world *w = NULL;
    cq_body_desc b;
    double dl[17 * 13];
    cq_result r;
    memset(&d, 0, sizeof d); memset(&b, 0, sizeof b); memset(dl, 0, sizeof dl);
    d.dim = 2; d.particle_radius = 0.01; d.dt = 0.002; d.gravity[1] = -9.81; d.domain_hi[0] = 4; d.domain_hi[1] = 4;
    d.logger.func = cq_log_silent;
    d.allocator.alloc = cqt_count_alloc; d.allocator.free = cqt_count_free; d.allocator.user = c;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) return CQ_ERROR_INVALID_ARGUMENT;
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.04; b.density = 800;
    for (int i = 0; i < bodies; ++i) {
        b.x[0] = 0.2 + 0.2 * (i % 17); b.x[1] = 2 + 0.05 * i; b.v[0] = i ? 0.3 : -0.2; b.v[1] = 0.1 * i; b.w[2] = 0.5 * i;
        CHECK_OK(cq_world_add_body(w, &b, NULL));
    }
    CHECK_OK(cq_world_track(w, 0));
    for (int t = 0; t < 5; ++t) {
        const double f[3] = {0.02 * t, 0.01, 0}, tq[3] = {0, 0, 0.001};
        CHECK_OK(cq_world_set_control(w, 0, f, tq));
        CHECK_OK(cq_world_step(w, 1));
    }
    dl[0] = 1; dl[1] = -2; dl[9] = 0.5;   /* x, y and w_z of body 0 */
    for (int i = 13; i < 13 * bodies; ++i) dl[i] = 0;
    c->limit = c->limit == -2 ? c->allocs : -1;   /* -2: no memory left for the gradient */
    r = cq_world_control_grad(w, dl, g);
    c->limit = -1;
    cq_world_destroy(w);
    return r;
}
TEST(control_grad_of_many_bodies)
{
    double g1[5 * 6], g17[5 * 6 * 17];
    cqt_counter c = {0, 0, -1}, c2 = {0, 0, -1}, c3 = {0, 0, -2};
    CHECK_OK(many_bodies_grad(1, &c, g1));
    CHECK_OK(many_bodies_grad(17, &c2, g17));
    for (int n = 0; n < 5; ++n)
        CHECK(!memcmp(g1 + 6 * n, g17 + 6 * 17 * n, 6 * sizeof(double)), "step %d: body 0's dL/du differs beside 16 other bodies", n);
    CHECK(many_bodies_grad(17, &c3, g17) == CQ_ERROR_OUT_OF_MEMORY, "the gradient of 17 bodies without memory succeeded");
    CHECK(c.live == 0 && c2.live == 0 && c3.live == 0, "allocations leaked: %ld, %ld, %ld", c.live, c2.live, c3.live);
}

#if !defined(CQT_LINKED)   /* (the world's internals: the implementation must be in this file) */
/* every fluid particle's neighbour lists by the vector search (sph.j2 >>sph_x86: with AVX-512
   16 float32 or 8 float64 particles at a time) and without (the loop): the same counts, the same
   lists; with room for 7 entries the same counts (the lists are used only where they fit).  The
   world's grid and order are those of its last step (the particles moved since: more particles
   near the edge of h, none of which may differ). */
#define LISTS_BOTH_PATHS(tag, P) \
static long lists_both_paths_##tag(const cq_world *w, long *pairs) \
{ \
    cq__sph_##P a = cq__world_sph_##tag(w), b = a; \
    int fa[1024], fb[1024], ba[1024], bb[1024]; \
    long bad = 0; \
    a.scalar = 0; b.scalar = 1; \
    for (int i = 0; i < a.nf; ++i) { \
        int nfa, nba, nfb, nbb; \
        cq__sph_near_lists_##tag(&a, i, fa, 1024, ba, 1024, &nfa, &nba); \
        cq__sph_near_lists_##tag(&b, i, fb, 1024, bb, 1024, &nfb, &nbb); \
        if (nfa != nfb || nba != nbb || nfa > 1024 || nba > 1024 || memcmp(fa, fb, sizeof(int) * (size_t)nfa) || \
            memcmp(ba, bb, sizeof(int) * (size_t)nba)) ++bad; \
        cq__sph_near_lists_##tag(&a, i, fa, 7, ba, 7, &nfb, &nbb); \
        if (nfb != nfa || nbb != nba) ++bad; \
        *pairs += nfa + nba; \
    } \
    return bad; \
}
LISTS_BOTH_PATHS(2d_f32, f32) LISTS_BOTH_PATHS(2d_f64, f64) LISTS_BOTH_PATHS(3d_f32, f32) LISTS_BOTH_PATHS(3d_f64, f64)
TEST(neighbour_lists_vector_path)
{
    const char *expect = getenv("CQT_EXPECT_SPH512");
    printf("    the vector search: %s\n", CQ__SPH_512 ? "on (AVX-512)" : "off (no AVX-512 in this build: the loop against itself)");
    CHECK(!(expect && expect[0] == '1') || CQ__SPH_512, "CQT_EXPECT_SPH512=1, but this build has no vector search");
    for (int dim = 2; dim <= 3; ++dim)
        for (int f = 0; f < 2; ++f) {
            const scene sc = {dim, 1.0, 0.8, dim == 3 ? 0.2 : 0, dim == 3 ? 0.0125 : 0.005, 1e-3, f ? CQ_PRECISION_F64 : CQ_PRECISION_F32,
                              0.0, 0.4, 0.4};
            cq_world *w = make_world(&sc);
            long pairs = 0, bad;
            if (!w) { CHECK(0, "create"); return; }
            CHECK_OK(cq_world_step(w, 40));   /* the dam breaks: the lattice gone */
            bad = dim == 2 ? (f ? lists_both_paths_2d_f64(w, &pairs) : lists_both_paths_2d_f32(w, &pairs))
                           : (f ? lists_both_paths_3d_f64(w, &pairs) : lists_both_paths_3d_f32(w, &pairs));
            CHECK(bad == 0 && pairs > (dim == 3 ? 20L : 8L) * cq_world_fluid_count(w), "%dD %s: %ld of %d particles' lists differ between the paths (%ld entries)",
                  dim, f ? "f64" : "f32", bad, cq_world_fluid_count(w), pairs);
            cq_world_destroy(w);
        }
}
#endif

/* `test_world` runs the quick checks (in every build: C++, OpenMP, sanitizers); `test_world
   physics` the physics and the coupled derivatives' report (a minute or two at -O2, run once in
   the slow lane of tests/run.sh).  A further argument filters by name. */
int main(int argc, char **argv)
{
    static const cqt_case quick[] = {
        CASE(bad_input_named_and_harmless), CASE(non_finite_step_restores), CASE(reset_replays_bitwise),
        CASE(free_flight_jacobian_2d), CASE(free_flight_jacobian_3d), CASE(free_flight_angular_momentum_3d),
        CASE(control_gradients_2d), CASE(contact_box_rests_and_slides), CASE(tank_at_rest_2d), CASE(threads_hook_bitwise),
        CASE(contact_derivatives), CASE(joint_pendulum_2d_period), CASE(joint_chain_3d_holds), CASE(joint_derivatives),
        CASE(joint_bad_input), CASE(closed_loop_control_gradient), CASE(world_steps_allocate_nothing_after_the_first),
        CASE(world_first_step_refused_each_allocation), CASE(world_step_refused_memory_leaves_the_world), CASE(control_grad_of_many_bodies)
#if !defined(CQT_LINKED)
        , CASE(neighbour_lists_vector_path)
#endif
    };
    static const cqt_case physics[] = {
        CASE(tank_at_rest_3d_f32), CASE(archimedes_2d), CASE(archimedes_3d), CASE(dam_break_martin_moyce_2d),
        CASE(coupled_derivatives_report)};
    if (argc > 1 && strcmp(argv[1], "physics") == 0)
        return cqt_run(physics, (int)(sizeof physics / sizeof physics[0]), argc - 1, argv + 1);
    return cqt_run(quick, (int)(sizeof quick / sizeof quick[0]), argc, argv);
}
