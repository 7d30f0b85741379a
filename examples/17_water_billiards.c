/* 17_water_billiards.c - DiffFR's "on-water billiards" task (Li et al., DiffFR: Differentiable
   SPH-based Fluid-Rigid Coupling for Rigid Body Control, ACM TOG (SIGGRAPH Asia) 2023, supplement
   Table 2), in 3D: two balls float on a shallow pool; ball A is pushed (its initial linear and
   angular velocity are the parameters), hits ball B through the world's penalty contact, and B
   should be at a target point at t*.  Gradient descent with the forward-mode gradient of the
   world: cq_world_track(A), then cq_world_body_jacobian(world, B, J) = d(state of B)/d(v0, w0 of A)
   (DiffFR's localized scheme).

   Scene (SI units, float64, y up): a pool [0, 0.36] x [0, 0.12] x [0, 0.36] m with water 6 cm deep,
   particle radius 1 cm (887 fluid particles), dt = 2.5 ms.  Two frictionless balls of radius 4 cm
   and density 600 kg/m^3, placed 9 cm apart (a 1 cm gap) along the direction (0.6, -0.5) of Table
   2's x0 -> x*, and left to settle with the water for 0.1 s (the shots start from that state: A at
   (0.089, 0.052, 0.257), B at (0.157, 0.050, 0.198)).  Target for B: x* = (0.243, 0.044, 0.107) at
   t* = 0.25 s (100 steps), 12 cm beyond B's start (B rides ~6 mm lower after the hit: the target's
   height is that).  Initial guess: v0 = (1.2, 0, -0.6) m/s (1.34 m/s, 13 degrees off the line of
   centres), w0 = 0: B stops 5 cm short.  v0's vertical component is held at 0 by the box bounds (a
   push along the water; pushed down, A dives under B), the others within +-3.5 m/s (v dt below the
   particle radius) and +-60 rad/s.  The quick mode runs this same scene.

   Mapping to Table 2 (x0 = (-0.1, 0.46, 0), x* = (0.5, 0.5, -0.5), t* = 0.25 s, lr_v = lr_w = 0.2,
   w_position = 1, no rotation term, patience 5): the same t*, loss |x_B(t*) - x*|^2 and optimiser
   (plain gradient descent on v0 and w0, one rate for both as lr_w / lr_v = 1, halved when the loss
   has not improved for more than 5 iterations); the horizontal offsets scaled by ~0.28 (the
   paper's x0 -> x* is 0.78 m at -40 degrees, ours A -> x* 0.215 m at -44 degrees), the heights
   those of our floating balls.  Not Table 2's: (1) the learning rate, 150 instead of 0.2: plain
   gradient descent's rate has units ((m/s)^2 per m^2) and does not carry over between scenes;
   here dL/dv0 is ~3e-3, so 0.2 would move v0 by ~1e-3 m/s per iteration.  (2) The gradient's norm
   is clipped to 0.002 (steps of at most 0.3 m/s), and an iteration whose loss is more than 1.5x the
   best goes back to the best with half the rate (cqx_best_update): at some shots the forward
   derivative through the stiff penalty contact is 10x to 1000x its usual size, which without the clip
   sent v0 to its bounds, where A misses B or dives under it, B's Jacobian is exactly zero (no
   contact: the localized scheme has no fluid-borne coupling between bodies) and the descent stalls.

   What the forward-mode gradient sees.  The localized scheme treats the water around a ball as an
   obstacle that absorbs a change of the ball's velocity within a few steps, so d x_B/d v0 comes
   out 1x to 6x smaller than central differences; how far B goes with A's speed survives that, but
   how B's direction depends on A's aim (the contact normal turning with A's sideways offset) is
   only partly right: in a first scene (4 cm gap, lighter balls of 300 kg/m^3) the v0z column had
   the wrong sign, and with the target off B's natural line the descent stalled 1.5-4 cm away.  Hence
   the short gap (the hit comes 10-20 ms after the push, before A's derivative decays), the heavier
   balls (their in-plane forward and central derivatives agree in sign at the initial guess, see
   below, except d x_B / d v0y, which is held) and a target near the line B is sent along.

   Build and run from the repository root:
       cc -std=c99 -O2 examples/17_water_billiards.c -o build/17_water_billiards -lm
       ./build/17_water_billiards [out-dir] [quick] [--size paper]
   Writes OUT/water_billiards.gif (top view of the best shot: the water as dots shaded by height,
   the balls with a mark that turns with them, their trails, the target ring) and
   OUT/water_billiards_loss.png (log10 loss per iteration).  OUT defaults to "out".
   "quick": 2 gradient steps (3 rollouts) and the gradient check (2 more), exit 0 only if the loss
   decreased.  Full run: up to 25 iterations, stops when B is within 1 cm of the target (exit
   nonzero if never).  "--size paper": particle radius 6.7 mm, dt = 1.25 ms, 2725 fluid particles,
   200 steps (not run by the tests).

   At the first iteration the forward-mode gradient is checked against a central difference of the
   loss along its own direction (2 extra rollouts, step 0.1 m/s or rad/s); the full run also prints
   each partial derivative of x_B(t*) against central differences (12 more rollouts).  Exit nonzero
   if the directional derivatives have opposite signs.

   MEASURED (2026-11-22, this machine, one core, cc -std=c99 -O2; the supplement reports no
   numeric outcome for this task, its Table 2 lists settings only):
     quick: 7.5 s (settling and 5 rollouts); loss 2.46e-3 -> 1.09e-4 (miss 5.0 -> 1.0 cm);
       gradient check: along the gradient 3.56e-3 (forward) vs 1.05e-2 (central difference), same
       direction, ratio 2.96.
     full: target reached at iteration 4 (one go-back at iteration 3): miss 5.4 mm,
       v0 = (1.529, 0, -0.941) m/s, w0 = (0.012, -0.007, 0.008) rad/s; 25.3 s including the 14
       gradient-check rollouts.  Partial derivatives of x_B(t*) at the initial guess, forward vs
       central difference (step 0.1):
         d/dv0x (+0.019, +0.006, -0.009) vs (+0.019, -0.005, -0.026)
         d/dv0z (-0.015, -0.001, +0.029) vs (-0.087, +0.006, +0.055)
         d/dv0y (+0.032, +0.012, +0.001) vs (+0.060, -0.002, -0.015)   (held at 0)
         d/dw0 (x, y, z): all below 0.003 m per rad/s either way; w0 moves by ~0.01 rad/s.
     -O3 -ffast-math build: the same quick and full results.
     --size paper (not run to completion): ~6 s per rollout; gradient check ratio 2.30 (same
       direction), every in-plane partial derivative of the same sign as the central difference;
       miss 5.2 -> 1.6 cm in 3 steps (~120 s).
*/
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"

#define POOL 0.36             /* pool [0, POOL] x [0, POOL_H] x [0, POOL] */
#define POOL_H 0.12
#define DEPTH 0.06            /* still water depth */
#define BALL_R 0.04
#define BALL_DENSITY 600.0
#define FLOAT_UP (-0.01)      /* the balls are placed with their centres 1 cm below the lattice's top, then settle */
#define SETTLE 0.1            /* s of settling before the shots */
#define T_STAR 0.25
#define TOL 0.01              /* the full run's success: |x_B(t*) - x*| below 1 cm */
#define MAX_ITERS 25
#define QUICK_ITERS 3         /* losses of 3 iterates: 2 gradient steps */
#define LR 150.0
#define CLIP 0.002            /* gradient norm clip: steps of at most LR x CLIP = 0.3 m/s */
#define FD_STEP 0.1
#define NP 6                  /* parameters: v0 (3), w0 (3) of ball A */
#define IMG 440               /* GIF side, pixels */

static const double DIR[2] = {0.76822127959737585, -0.64018439966447993};   /* (0.6, -0.5) normalised, (x, z) */
static const double A0[2] = {0.09, 0.255};  /* (x, z) */
#define AB_DIST 0.09
static const double XSTAR[3] = {0.243, 0.044, 0.107};
static const double V_INIT[2] = {1.2, -0.6};   /* (x, z), m/s: 1.34 m/s, aimed 12 degrees left of B's centre */

typedef struct scene {
    double r, dt;
    int steps, nf;
    double *fluid, *fluid_v;  /* the settled water: positions, velocities [3 nf] */
    cq_body_state ball[2];    /* the settled balls */
} scene;

typedef struct record {
    int frames, every, nf;
    double *fx;               /* [frames][3 nf] */
    cq_body_state *body;      /* [frames][2] */
    double (*trail)[4];       /* A (x, z), B (x, z) at every step [steps + 1] */
} record;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void ball_centre(int k, double c[3])
{
    c[0] = A0[0] + (k ? AB_DIST * DIR[0] : 0);
    c[1] = DEPTH + FLOAT_UP;
    c[2] = A0[1] + (k ? AB_DIST * DIR[1] : 0);
}

static cq_world *new_world(const scene *sc)
{
    cq_world_desc d;
    cq_world *w = NULL;
    memset(&d, 0, sizeof d);
    d.dim = 3; d.particle_radius = sc->r; d.dt = sc->dt; d.gravity[1] = -9.81;
    d.domain_hi[0] = POOL; d.domain_hi[1] = POOL_H; d.domain_hi[2] = POOL;
    d.precision = CQ_PRECISION_F64;
    d.logger.func = cqx_log_warnings;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) fprintf(stderr, "%s\n", cq_world_last_error(NULL));
    return w;
}

static void ball_desc(cq_body_desc *b)
{
    memset(b, 0, sizeof *b);
    b->shape = CQ_SHAPE_SPHERE; b->radius = BALL_R; b->density = BALL_DENSITY; b->friction = 0;
}

/* The pool at rest: the water lattice without the particles the two balls displace, and the
   balls, left to settle for SETTLE seconds; the shots start from that state. */
static int make_scene(scene *sc, int paper)
{
    double c[2][3];
    size_t cap;
    cq_world *w;
    cq_body_desc b;
    int rc = 1;
    sc->r = paper ? 0.02 / 3 : 0.01;
    sc->dt = paper ? 0.00125 : 0.0025;
    sc->steps = (int)lround(T_STAR / sc->dt);
    cap = (size_t)(POOL / (2 * sc->r) + 1) * (size_t)(POOL / (2 * sc->r) + 1) * (size_t)(DEPTH / (2 * sc->r) + 1);
    sc->fluid = (double *)malloc(sizeof(double) * 3 * cap);
    sc->fluid_v = (double *)malloc(sizeof(double) * 3 * cap);
    sc->nf = 0;
    if (!sc->fluid || !sc->fluid_v) return 1;
    ball_centre(0, c[0]);
    ball_centre(1, c[1]);
    for (double py = sc->r; py < DEPTH; py += 2 * sc->r)
        for (double pz = sc->r; pz < POOL; pz += 2 * sc->r)
            for (double px = sc->r; px < POOL; px += 2 * sc->r) {
                int inside = 0;
                for (int k = 0; k < 2; ++k) {
                    const double dx = px - c[k][0], dy = py - c[k][1], dz = pz - c[k][2];
                    if (dx * dx + dy * dy + dz * dz < (BALL_R + sc->r) * (BALL_R + sc->r)) inside = 1;
                }
                if (inside) continue;
                sc->fluid[3 * sc->nf] = px; sc->fluid[3 * sc->nf + 1] = py; sc->fluid[3 * sc->nf + 2] = pz;
                ++sc->nf;
            }
    if (!(w = new_world(sc))) return 1;
    if (cq_world_add_fluid(w, sc->nf, sc->fluid, NULL) != CQ_SUCCESS) goto done;
    for (int k = 0; k < 2; ++k) {
        ball_desc(&b);
        memcpy(b.x, c[k], sizeof c[k]);
        if (cq_world_add_body(w, &b, NULL) != CQ_SUCCESS) goto done;
    }
    if (cq_world_step(w, (int)lround(SETTLE / sc->dt)) != CQ_SUCCESS) goto done;
    cq_world_get_fluid(w, CQ_FIELD_X, sc->fluid);
    cq_world_get_fluid(w, CQ_FIELD_V, sc->fluid_v);
    cq_world_get_body(w, 0, &sc->ball[0]);
    cq_world_get_body(w, 1, &sc->ball[1]);
    rc = 0;
done:
    if (rc) fprintf(stderr, "chainqueen: %s\n", cq_world_last_error(w));
    cq_world_destroy(w);
    return rc;
}

/* Ball A pushed with p = (v0, w0): B's centre at t* in xb; J (may be NULL): B's 13 x 6 Jacobian
   with respect to A's (v0, w0); rec (may be NULL) records the motion.  Nonzero on a failure. */
static int shoot(const scene *sc, const double p[NP], double xb[3], double *J, record *rec)
{
    cq_body_desc b;
    cq_body_state s[2];
    cq_world *w = new_world(sc);
    int id[2] = {0, 0}, rc = 1;
    if (!w) return 1;
    if (cq_world_add_fluid(w, sc->nf, sc->fluid, sc->fluid_v) != CQ_SUCCESS) goto done;
    for (int k = 0; k < 2; ++k) {   /* from the settled state; A gets the push */
        ball_desc(&b);
        memcpy(b.x, sc->ball[k].x, sizeof b.x); memcpy(b.q, sc->ball[k].q, sizeof b.q);
        memcpy(b.v, sc->ball[k].v, sizeof b.v); memcpy(b.w, sc->ball[k].w, sizeof b.w);
        if (k == 0) for (int a = 0; a < 3; ++a) { b.v[a] = p[a]; b.w[a] = p[3 + a]; }
        if (cq_world_add_body(w, &b, &id[k]) != CQ_SUCCESS) goto done;
    }
    if (cq_world_track(w, id[0]) != CQ_SUCCESS) goto done;
    for (int n = 0; n <= sc->steps; ++n) {
        if (n > 0 && cq_world_step(w, 1) != CQ_SUCCESS) goto done;
        if (!rec) continue;
        cq_world_get_body(w, id[0], &s[0]);
        cq_world_get_body(w, id[1], &s[1]);
        rec->trail[n][0] = s[0].x[0]; rec->trail[n][1] = s[0].x[2];
        rec->trail[n][2] = s[1].x[0]; rec->trail[n][3] = s[1].x[2];
        if (n % rec->every == 0 && n / rec->every < rec->frames) {
            const size_t f = (size_t)(n / rec->every);
            rec->body[2 * f] = s[0]; rec->body[2 * f + 1] = s[1];
            cq_world_get_fluid(w, CQ_FIELD_X, rec->fx + f * 3 * (size_t)sc->nf);
        }
    }
    cq_world_get_body(w, id[1], &s[1]);
    for (int a = 0; a < 3; ++a) xb[a] = s[1].x[a];
    if (J) cq_world_body_jacobian(w, id[1], J);
    rc = 0;
done:
    if (rc) fprintf(stderr, "chainqueen: %s\n", cq_world_last_error(w));
    cq_world_destroy(w);
    return rc;
}

static double loss_of(const double xb[3])
{
    double L = 0;
    for (int a = 0; a < 3; ++a) L += (xb[a] - XSTAR[a]) * (xb[a] - XSTAR[a]);
    return L;
}

static void loss_grad(const double xb[3], const double *J, double g[NP])
{
    for (int k = 0; k < NP; ++k) {
        g[k] = 0;
        for (int a = 0; a < 3; ++a) g[k] += 2 * (xb[a] - XSTAR[a]) * J[a * 6 + k];
    }
}

/* ---- the GIF: top view (x right, z down), water shaded by height, balls with a turning mark ---- */
typedef struct view { const record *rec; const scene *sc; int *order; } view;

static const double *g_fx;   /* for the sort by height */
static int by_height(const void *a, const void *b)
{
    const double ya = g_fx[3 * *(const int *)a + 1], yb = g_fx[3 * *(const int *)b + 1];
    return (ya > yb) - (ya < yb);
}

static int tpx(double x) { return (int)lround(x / POOL * IMG); }

static void draw_ball(cq_img *im, const cq_body_state *s, unsigned char r, unsigned char g, unsigned char b)
{
    /* the body's x axis, R(q) e_x, projected on the x-z plane: a mark that turns with the ball */
    const double *q = s->q;
    const double ex[3] = {1 - 2 * (q[2] * q[2] + q[3] * q[3]), 2 * (q[1] * q[2] + q[0] * q[3]), 2 * (q[1] * q[3] - q[0] * q[2])};
    const double cx = s->x[0] / POOL * IMG, cz = s->x[2] / POOL * IMG, rp = BALL_R / POOL * IMG;
    cq_img_disc(im, cx, cz, rp + 1.5, 30, 30, 30);
    cq_img_disc(im, cx, cz, rp, r, g, b);
    cq_img_disc(im, cx + 0.6 * rp * ex[0], cz + 0.6 * rp * ex[2], 0.25 * rp, 30, 30, 30);
}

static void draw_frame(cq_img *im, int f, void *user)
{
    const view *v = (const view *)user;
    const record *rec = v->rec;
    const double *fx = rec->fx + (size_t)f * 3 * (size_t)rec->nf;
    const int upto = f * rec->every < v->sc->steps ? f * rec->every : v->sc->steps;
    const int tx = tpx(XSTAR[0]), tz = tpx(XSTAR[2]);
    char buf[64];
    cq_img_clear(im, 225, 232, 240);
    for (int i = 0; i < rec->nf; ++i) v->order[i] = i;
    g_fx = fx;
    qsort(v->order, (size_t)rec->nf, sizeof(int), by_height);
    for (int k = 0; k < rec->nf; ++k) {   /* deeper particles first, shaded darker */
        const int i = v->order[k];
        double t = (fx[3 * i + 1] - v->sc->r) / (DEPTH + 0.02 - v->sc->r);
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        cq_img_disc(im, fx[3 * i] / POOL * IMG, fx[3 * i + 2] / POOL * IMG, 0.55 * v->sc->r / POOL * IMG,
                    (unsigned char)(20 + 120 * t), (unsigned char)(60 + 130 * t), (unsigned char)(140 + 110 * t));
    }
    for (int n = 1; n <= upto; ++n)   /* trails, 2 pixels wide: A red, B orange */
        for (int o = 0; o < 2; ++o) {
            cq_img_line(im, tpx(rec->trail[n - 1][0]) + o, tpx(rec->trail[n - 1][1]), tpx(rec->trail[n][0]) + o,
                        tpx(rec->trail[n][1]), 200, 40, 40);
            cq_img_line(im, tpx(rec->trail[n - 1][2]) + o, tpx(rec->trail[n - 1][3]), tpx(rec->trail[n][2]) + o,
                        tpx(rec->trail[n][3]), 240, 150, 20);
        }
    draw_ball(im, &rec->body[2 * f], 210, 50, 40);
    draw_ball(im, &rec->body[2 * f + 1], 245, 235, 200);
    for (int k = 0; k < 24; ++k) {   /* target: ring + cross */
        const double a0 = k * 6.283185307179586 / 24, a1 = (k + 1) * 6.283185307179586 / 24;
        cq_img_line(im, tx + (int)lround(10 * cos(a0)), tz + (int)lround(10 * sin(a0)), tx + (int)lround(10 * cos(a1)),
                    tz + (int)lround(10 * sin(a1)), 20, 20, 20);
    }
    cq_img_line(im, tx - 6, tz, tx + 6, tz, 20, 20, 20);
    cq_img_line(im, tx, tz - 6, tx, tz + 6, 20, 20, 20);
    snprintf(buf, sizeof buf, "T = %.3f S", upto * v->sc->dt);
    cq_img_text(im, 6, 6, buf, 1, 20, 20, 20);
    cq_img_text(im, 6, 16, "TOP VIEW. RED: PUSHED BALL A, PALE: BALL B", 1, 20, 20, 20);
}

static int size_arg(int argc, char **argv, int *i, void *user)
{
    if (strcmp(argv[*i], "--size") == 0 && *i + 1 < argc) {
        *(int *)user = strcmp(argv[*i + 1], "paper") == 0;
        ++*i;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const unsigned char LINE[1][3] = {{30, 90, 200}}, DOT[1][3] = {{200, 50, 40}};
    static const char *pname[NP] = {"v0x", "v0y", "v0z", "w0x", "w0y", "w0z"};
    /* box bounds: |v0| components below 3.5 m/s (v dt < r); v0's vertical component held at 0 (a push
       along the water: pushed down, A dives under B and misses it) */
    const double lo[NP] = {-3.5, 0, -3.5, -60, -60, -60}, hi[NP] = {3.5, 0, 3.5, 60, 60, 60};
    cqx_args args;
    int paper = 0, iters, done_iters = 0, best_it = 0, rc = 1;
    double p[NP], g[NP], xb[3], J[13 * 6], losses[MAX_ITERS + 1], best_p[NP], best_x[3] = {0, 0, 0};
    double best_L = HUGE_VAL, first_L = 0, t_start = now_s();
    char path[1024];
    scene sc;
    record rec[2];
    int *order = NULL;
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;
    double keep_p[NP], keep_g[NP];
    cqx_best keep;            /* go back to the best with half the rate after a far worse iteration */

    keep.n = NP; keep.loss = HUGE_VAL; keep.it = -1; keep.params = keep_p; keep.grad = keep_g;
    memset(rec, 0, sizeof rec);
    memset(&sc, 0, sizeof sc);
    memset(best_p, 0, sizeof best_p);
    if (cqx_parse_args(argc, argv, 0, size_arg, &paper, &args)) return 1;
    iters = args.quick ? QUICK_ITERS : MAX_ITERS;
    if (make_scene(&sc, paper)) goto done;
    for (int k = 0; k < 2; ++k) {
        rec[k].every = 2; rec[k].frames = sc.steps / 2 + 1; rec[k].nf = sc.nf;
        rec[k].fx = (double *)malloc(sizeof(double) * 3 * (size_t)sc.nf * (size_t)rec[k].frames);
        rec[k].body = (cq_body_state *)malloc(sizeof(cq_body_state) * 2 * (size_t)rec[k].frames);
        rec[k].trail = (double (*)[4])malloc(sizeof(double[4]) * (size_t)(sc.steps + 1));
        if (!rec[k].fx || !rec[k].body || !rec[k].trail) goto done;
    }
    order = (int *)malloc(sizeof(int) * (size_t)sc.nf);
    if (!order) goto done;
    {
        const double *ca = sc.ball[0].x, *cb = sc.ball[1].x;
        printf("water billiards (3D): %d fluid particles (r = %g m), %d steps of %g s to t* = %.2f s; settled: A at (%.3f, "
               "%.3f, %.3f), B at (%.3f, %.3f, %.3f); target (%.3f, %.3f, %.3f)\n", sc.nf, sc.r, sc.steps, sc.dt, T_STAR, ca[0],
               ca[1], ca[2], cb[0], cb[1], cb[2], XSTAR[0], XSTAR[1], XSTAR[2]);
    }

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = NP; od.learning_rate = LR;   /* lr_v = lr_w (rate_scale 1) */
    od.plateau_patience = 5; od.lo = lo; od.hi = hi; od.clip_norm = CLIP;
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_robot_last_error(NULL)); goto done; }
    memset(p, 0, sizeof p);
    p[0] = V_INIT[0]; p[2] = V_INIT[1];

    for (int it = 0; it < iters; ++it) {
        const double lr = cq_robot_optimizer_learning_rate(opt);
        double L;
        int reduced = 0;
        if (shoot(&sc, p, xb, J, &rec[0])) goto done;
        L = loss_of(xb);
        losses[it] = L;
        done_iters = it + 1;
        loss_grad(xb, J, g);
        for (int k = 0; k < NP; ++k) if (lo[k] == hi[k]) g[k] = 0;   /* held parameters (v0's vertical) */
        if (it == 0) first_L = L;
        if (L < best_L) {
            const record t = rec[0];
            rec[0] = rec[1]; rec[1] = t;
            best_L = L; best_it = it; memcpy(best_p, p, sizeof p); memcpy(best_x, xb, sizeof xb);
        }
        printf("iteration %2d: v0 = (%.4f, %.4f, %.4f) m/s, w0 = (%.3f, %.3f, %.3f) rad/s  x_B(t*) = (%.4f, %.4f, %.4f)  "
               "miss %.4f m  loss %.3e  lr %g\n", it, p[0], p[1], p[2], p[3], p[4], p[5], xb[0], xb[1], xb[2], sqrt(L), L, lr);
        if (it == 0) {   /* the gradient check: central difference along the gradient's direction */
            double gn = 0, pp[NP], pm[NP], xp[3], xm[3], cd;
            for (int k = 0; k < NP; ++k) gn += g[k] * g[k];
            gn = sqrt(gn);
            for (int k = 0; k < NP; ++k) { pp[k] = p[k] + FD_STEP * g[k] / gn; pm[k] = p[k] - FD_STEP * g[k] / gn; }
            if (shoot(&sc, pp, xp, NULL, NULL) || shoot(&sc, pm, xm, NULL, NULL)) goto done;
            cd = (loss_of(xp) - loss_of(xm)) / (2 * FD_STEP);
            printf("gradient check: dL/d(v0, w0) = (%.2e, %.2e, %.2e, %.2e, %.2e, %.2e); along it: %.3e (forward mode) vs "
                   "%.3e (central difference, step %.2f): %s, ratio %.2f\n", g[0], g[1], g[2], g[3], g[4], g[5], gn, cd,
                   FD_STEP, gn * cd > 0 ? "same direction" : "OPPOSITE", cd / gn);
            if (!(gn * cd > 0)) goto done;
            if (!args.quick)   /* each partial derivative of x_B(t*), for the record */
                for (int k = 0; k < NP; ++k) {
                    memcpy(pp, p, sizeof p); memcpy(pm, p, sizeof p);
                    pp[k] += FD_STEP; pm[k] -= FD_STEP;
                    if (shoot(&sc, pp, xp, NULL, NULL) || shoot(&sc, pm, xm, NULL, NULL)) goto done;
                    printf("  d x_B(t*)/d %s: forward (%+.4f, %+.4f, %+.4f)  central difference (%+.4f, %+.4f, %+.4f)\n",
                           pname[k], J[0 * 6 + k], J[1 * 6 + k], J[2 * 6 + k], (xp[0] - xm[0]) / (2 * FD_STEP),
                           (xp[1] - xm[1]) / (2 * FD_STEP), (xp[2] - xm[2]) / (2 * FD_STEP));
                }
        }
        if (!args.quick && sqrt(L) < TOL) break;
        {   /* a cliff (B missed, or A dived under it: no contact, no gradient): back to the best */
            const int back = cqx_best_update(&keep, it, iters, L, 0.5, 0, p, g, &opt, &od);
            if (back < 0) goto done;
            if (back) printf("%s (to %g)\n", CQX_WENT_BACK, od.learning_rate);
            else if (cq_robot_optimizer_report(opt, L, &reduced) != CQ_SUCCESS) goto done;
        }
        if (reduced) printf("  plateau: learning rate halved to %g\n", cq_robot_optimizer_learning_rate(opt));
        if (it + 1 < iters && cq_robot_optimizer_step(opt, p, g) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }

    {
        view v;
        int frames = 0;
        v.rec = &rec[1]; v.sc = &sc; v.order = order;
        snprintf(path, sizeof path, "%s/water_billiards.gif", args.dir);
        if (cqx_write_gif(path, IMG, IMG, 4, rec[1].frames - 1, 1, draw_frame, &v, &frames)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s (%d frames)\n", path, frames);
    }
    {
        const double *curve[1];
        curve[0] = losses;
        snprintf(path, sizeof path, "%s/water_billiards_loss.png", args.dir);
        if (cqx_plot_log_loss_labeled(path, "WATER BILLIARDS: SQUARED MISS OF BALL B", "LOSS (M^2)", 1, NULL, curve, done_iters, LINE, DOT)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s\n", path);
    }
    printf("best: iteration %d, v0 = (%.4f, %.4f, %.4f) m/s, w0 = (%.3f, %.3f, %.3f) rad/s: x_B(t*) = (%.4f, %.4f, %.4f), "
           "miss %.4f m; %d iterations, %.1f s in all\n", best_it, best_p[0], best_p[1], best_p[2], best_p[3], best_p[4],
           best_p[5], best_x[0], best_x[1], best_x[2], sqrt(best_L), done_iters, now_s() - t_start);
    if (args.quick) rc = cqx_quick_verdict(done_iters, first_L, best_L);
    else {
        rc = sqrt(best_L) < TOL ? 0 : 1;
        printf("target %s: miss %.4f m (tolerance %.2f m)\n", rc ? "NOT reached" : "reached", sqrt(best_L), TOL);
    }
done:
    cq_robot_optimizer_destroy(opt);
    for (int k = 0; k < 2; ++k) { free(rec[k].fx); free(rec[k].body); free(rec[k].trail); }
    free(order);
    free(sc.fluid); free(sc.fluid_v);
    return rc;
}
