/* 13_bottle_flip.c - DiffFR's "water bottle flip" task (Li et al., DiffFR: Differentiable SPH-based
   Fluid-Rigid Coupling for Rigid Body Control, ACM TOG (SIGGRAPH Asia) 2023, supplement Table 2):
   a capped bottle with water in it is tossed so that after exactly one full turn it is upright at
   a target point at t*.  Gradient descent on its initial linear velocity (vx, vy) and angular
   velocity wz, with the forward-mode gradient of the world (cq_world_track /
   cq_world_body_jacobian: DiffFR's localized scheme, which leaves out the water's own response).

   Scene (2D, SI units, float64): a box [0, 1.75] x [0, 2.3] m (only for the walls; the bottle never
   touches them), no table: the loss is on the pose at t*, as the paper's.  The bottle: a
   CQ_SHAPE_POINTS shell, 26 cm tall, 10 cm wide with a 4 cm neck, closed by a cap, walls two
   particle spacings thick (204 points, density 1000: 7.3 kg per metre of depth); inside it a disc
   of water of radius 2.5 cm about the bottle's centre of mass (54 particles, r = 3 mm: 1.9 kg/m,
   a fifth of the total), moving with the bottle at release (v0 + w0 x r).  dt = 2 ms, t* = 1.0 s
   (500 steps).  Released upright at x0 = (0.20, 0.40); target x* = (1.46, 0.80), one turn
   counter-clockwise.  The spin flings the water outward against the walls during the flight, which
   raises the moment of inertia: the optimum spins at ~6.46 rad/s, 3% more than 2 pi / t*.
   Initial guess v0 = (1.0, 4.9) m/s, w0 = 4 rad/s (0.49 m short, 131 degrees short).
   Loss (Table 2): L = w_position |x(t*) - x*|^2 + w_rotation (theta(t*) - 2 pi)^2 with w_position =
   0.1, w_rotation = 1; theta is the rotation angle 2 atan2(q_z, q_w) unwrapped along the rollout
   (step by step), d theta = 2 (q_w dq_z - q_z dq_w) / (q_w^2 + q_z^2) with dq from the 13 x 6
   Jacobian.  Optimiser (Table 2): plain gradient descent, learning rate 1 on v0 and on w0, halved
   when the loss has not improved for more than 5 iterations.
   Mapping to Table 2 (x0 = (-2, 1.5, 0), x* = (4.3, 3.5, 0), theta* = Z 360 deg, t* = 1.0 s): the
   same t*, loss weights, rates and patience; the displacement (6.3, 2.0) scaled down 5x to (1.26,
   0.40); 3D -> 2D (the flip is about Z).  With gravity and t* unchanged, the toss still rises
   ~1.4 m above its start.

   Why the water is a disc at the centre and not a layer at the bottom: with the water lying on the
   bottle's floor (a 8 cm layer, 169 particles, as first tried), the centrifugal force keeps it
   pressed against the walls the whole flight, and DiffFR's localized gradient treats that water
   as a rigid obstacle that absorbs every change of the bottle's velocity: forward mode gave
   dx(t*)/dvx0 = -0.03 and d theta(t*)/dw0 = 0.10 where central differences give 1.00 and 0.98
   (dt = 1 ms; no better with dt = 4-5 ms, or with walls 2.5-10x denser and less water: dx/dvx0
   -0.03 .. -0.2, and a spurious d theta/dvx0 of -1 .. -4 rad per m/s).  Gradient descent cannot
   reach the target with that.  With the water starting at the centre it meets the walls only
   gradually: the forward gradient is within ~10% of the central differences at the first guess
   (printed at the first iteration) and 35-50% low, but still diagonal and of the right sign, at
   the optimum's spin (more water against the walls; measured at w0 = 6 during development), so
   the task works; the water still changes the answer (the 3% extra spin above).

   Build and run from the repository root:
       cc -std=c99 -O2 examples/13_bottle_flip.c -o build/13_bottle_flip -lm
       ./build/13_bottle_flip [out-dir] [quick] [--size paper]
   Writes OUT/bottle_flip.gif (the best toss: the bottle's points rotated, the water as dots, the
   trail, the target pose in grey with a red cross) and OUT/bottle_flip_loss.png (log10 loss per
   iteration).  OUT defaults to "out".  "quick": 2 gradient steps and the gradient check, exit 0
   only if the loss decreased.  Full run: up to 40 iterations, stops when the bottle is within 2 cm
   of x* and 3 degrees of one turn (exit nonzero if never).  "--size paper": r = 1.5 mm, dt = 1 ms
   (424 bottle points in walls half as thick: 3.8 kg/m; 220 water particles; 1000 steps; not run
   by the tests; its quick mode took 14.9 s, loss 5.24 -> 1.30, directional-derivative ratio 1.000).

   At the first iteration the forward-mode gradient is checked against a central difference of the
   loss along its own direction (2 extra rollouts); the full run also prints every partial
   derivative of (x, y, theta)(t*) against central differences (6 more rollouts).  Exit nonzero if
   the directional derivatives have opposite signs.

   MEASURED (2026-11-22, this machine, one core, cc -std=c99 -O2):
     full run: target reached at iteration 35 (36 rollouts): x(t*) = (1.4466, 0.7858), 1.95 cm from
       x*, turned 360.00 deg (error < 0.01 deg), with v0 = (1.247, 5.301) m/s, w0 = 6.463 rad/s; loss
       5.24 -> 3.8e-5; the learning rate was never halved.  The turn is found in ~10 iterations;
       the position then closes by ~12% per iteration (w_position = 0.1 and lr_v = 1 make the
       position steps small: 2 w_position lr_v t*^2 = 0.2 of the miss at best).  22.5 s wall
       (13.2 s CPU, the machine shared) including the 8 rollouts of the gradient checks.
     gradient check at the first guess: along the gradient 4.511 (forward) vs 4.552 (central
       difference), ratio 1.009; partials of (x, y, theta)(t*): d/dvx0 (0.910, 0.028, 0.039) vs
       (1, 0, 0); d/dvy0 (0.024, 0.959, 0.017) vs (0, 1, 0); d/dwz0 (-0.001, 0.004, 0.986) vs
       (0.001, 0.000, 0.997).
     quick: 3.2 s wall (2.0 s CPU), loss 5.240 -> 1.686 (exit 0).
   The DiffFR supplement reports no numeric outcome for this task (its Table 2 lists settings only).
*/
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"

#define PI 3.14159265358979323846
#define DOM_W 1.75            /* the box [0, DOM_W] x [0, DOM_H] (the bottle never touches it) */
#define DOM_H 2.3
#define BOTTLE_H 0.26         /* outer height; body half width 5 cm, neck half width 2 cm */
#define BODY_TOP 0.17         /* where the shoulder starts (above the base) */
#define NECK_Y 0.21           /* where the neck starts */
#define BODY_HW 0.05
#define NECK_HW 0.02
#define BLOB_R 0.025         /* the water: a disc of this radius about the centre of mass */
#define BOTTLE_DENSITY 1000.0 /* of its walls (kg/m^3); walls 2 particle spacings thick */
#define T_STAR 1.0            /* target time, s (Table 2's) */
#define THETA_STAR (2 * PI)   /* one full turn, counter-clockwise */
#define W_POS 0.1             /* Table 2: w_position, w_rotation, lr_v, lr_w, patience */
#define W_ROT 1.0
#define LR_V 1.0
#define LR_W 1.0
#define PATIENCE 5
#define TOL_X 0.02            /* the full run's success: within 2 cm and 3 degrees */
#define TOL_TH (3 * PI / 180)
#define MAX_ITERS 40
#define QUICK_ITERS 3         /* losses of 3 iterates: 2 gradient steps */
#define FD_STEP 0.02          /* central-difference step along the gradient (m/s, rad/s) */
#define FRAMES 50             /* GIF frames over [0, t*] */
#define PX_PER_M 220.0        /* GIF scale */

static const double X0[2] = {0.20, 0.40}, XSTAR[2] = {1.46, 0.80};   /* centre of mass (of the bottle alone) */
static const double P_INIT[3] = {1.0, 4.9, 4.0};                    /* vx, vy (m/s), wz (rad/s) */

typedef struct scene {
    double r, dt;             /* particle radius, step */
    int steps;                /* to t* */
    int nb, nf;               /* bottle points, water particles */
    double *bottle;           /* bottle points, body frame (centre of mass at 0) [2 nb] */
    double *water;            /* water at rest in the bottle frame [2 nf] */
} scene;

typedef struct record {       /* a rollout kept for the GIF */
    int frames, every, nf;
    double *fx;               /* [frames][2 nf] water positions */
    cq_body_state *body;      /* [frames] */
    double *theta;            /* [frames] the unwrapped angle */
    double (*trail)[2];       /* the centre at every step [steps + 1] */
} record;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the bottle's outer half width at height y above its base */
static double half_width(double y)
{
    if (y < BODY_TOP) return BODY_HW;
    if (y < NECK_Y) return BODY_HW + (NECK_HW - BODY_HW) * (y - BODY_TOP) / (NECK_Y - BODY_TOP);
    return NECK_HW;
}

/* The bottle: the lattice points (spacing 2r, cell centres) inside its outline but not in its
   cavity (the outline moved in by two spacings): a closed shell two particles thick.  The water:
   the lattice inside the cavity up to FILL.  Both shifted to the shell's centre of mass. */
static int build_scene(scene *sc)
{
    const double sp = 2 * sc->r, t = 2 * sp;
    const int nx = (int)(2 * BODY_HW / sp) + 2, ny = (int)(BOTTLE_H / sp) + 2;
    double c[2] = {0, 0};
    sc->bottle = (double *)malloc(sizeof(double) * 2 * (size_t)(nx * ny));
    sc->water = (double *)malloc(sizeof(double) * 2 * (size_t)(nx * ny));
    if (!sc->bottle || !sc->water) return 1;
    sc->nb = sc->nf = 0;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            const double x = -BODY_HW + (i + 0.5) * sp, y = (j + 0.5) * sp;
            const int in = y < BOTTLE_H && fabs(x) < half_width(y);
            const int cavity = y > t && y < BOTTLE_H - t && fabs(x) < half_width(y) - t;
            if (in && !cavity) { sc->bottle[2 * sc->nb] = x; sc->bottle[2 * sc->nb + 1] = y; ++sc->nb; }
        }
    for (int i = 0; i < sc->nb; ++i) { c[0] += sc->bottle[2 * i] / sc->nb; c[1] += sc->bottle[2 * i + 1] / sc->nb; }
    for (int i = 0; i < sc->nb; ++i) { sc->bottle[2 * i] -= c[0]; sc->bottle[2 * i + 1] -= c[1]; }
    /* water: a disc of the lattice about the centre of mass */
    for (double y = -BLOB_R + sc->r; y < BLOB_R; y += sp)
        for (double x = -BLOB_R + sc->r; x < BLOB_R; x += sp)
            if (x * x + y * y < BLOB_R * BLOB_R) { sc->water[2 * sc->nf] = x; sc->water[2 * sc->nf + 1] = y; ++sc->nf; }
    return 0;
}

/* the unwrapped rotation angle: theta = 2 atan2(q_z, q_w), moved by whole turns next to prev */
static double unwrap(double q_w, double q_z, double prev)
{
    const double raw = 2 * atan2(q_z, q_w);
    return prev + remainder(raw - prev, 2 * PI);
}

/* The toss with p = (vx, vy, wz): the water moves with the bottle (v0 + w0 x r).  Gives the
   centre x[2] and the unwrapped angle *theta at t*; J (may be NULL) the 13 x 6 forward-mode
   Jacobian; rec (may be NULL) records the motion.  Nonzero on a library failure. */
static int toss(const scene *sc, const double p[3], double x[2], double *theta, double *J, record *rec)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_body_state s;
    cq_world *w = NULL;
    double *wx = (double *)malloc(sizeof(double) * 4 * (size_t)sc->nf), *wv = wx + 2 * sc->nf, th = 0;
    int id = 0, rc = 1;
    if (!wx) return 1;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = sc->r; d.dt = sc->dt; d.gravity[1] = -9.81;
    d.domain_hi[0] = DOM_W; d.domain_hi[1] = DOM_H;
    d.precision = CQ_PRECISION_F64;
    d.logger.func = cqx_log_warnings;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(NULL)); free(wx); return 1; }
    for (int i = 0; i < sc->nf; ++i) {
        const double rx = sc->water[2 * i], ry = sc->water[2 * i + 1];
        wx[2 * i] = X0[0] + rx; wx[2 * i + 1] = X0[1] + ry;
        wv[2 * i] = p[0] - p[2] * ry; wv[2 * i + 1] = p[1] + p[2] * rx;
    }
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_POINTS; b.point_count = sc->nb; b.points = sc->bottle;
    b.density = BOTTLE_DENSITY; b.friction = 0.3;
    b.x[0] = X0[0]; b.x[1] = X0[1];
    b.v[0] = p[0]; b.v[1] = p[1]; b.w[2] = p[2];
    if (cq_world_add_fluid(w, sc->nf, wx, wv) != CQ_SUCCESS || cq_world_add_body(w, &b, &id) != CQ_SUCCESS ||
        cq_world_track(w, id) != CQ_SUCCESS)
        goto done;
    for (int n = 0; n <= sc->steps; ++n) {
        if (n > 0 && cq_world_step(w, 1) != CQ_SUCCESS) goto done;
        cq_world_get_body(w, id, &s);
        th = unwrap(s.q[0], s.q[3], th);
        if (!rec) continue;
        rec->trail[n][0] = s.x[0]; rec->trail[n][1] = s.x[1];
        if (n % rec->every == 0 && n / rec->every < rec->frames) {
            rec->body[n / rec->every] = s;
            rec->theta[n / rec->every] = th;
            cq_world_get_fluid(w, CQ_FIELD_X, rec->fx + (size_t)(n / rec->every) * 2 * (size_t)sc->nf);
        }
    }
    cq_world_get_body(w, id, &s);
    x[0] = s.x[0]; x[1] = s.x[1];
    *theta = th;
    if (J) {
        double dth[6];
        cq_world_body_jacobian(w, id, J);
        /* d theta / d q = 2 (q_w dq_z - q_z dq_w) / (q_w^2 + q_z^2): rows 3 (q_w) and 6 (q_z) */
        for (int k = 0; k < 6; ++k)
            dth[k] = 2 * (s.q[0] * J[6 * 6 + k] - s.q[3] * J[3 * 6 + k]) / (s.q[0] * s.q[0] + s.q[3] * s.q[3]);
        memcpy(J + 3 * 6, dth, sizeof dth);   /* row 3 now holds d theta / d(v0, w0) */
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "chainqueen: %s\n", cq_world_last_error(w));
    cq_world_destroy(w);
    free(wx);
    return rc;
}

/* L = w_position |x - x*|^2 + w_rotation (theta - theta*)^2 */
static double loss_of(const double x[2], double theta)
{
    return W_POS * ((x[0] - XSTAR[0]) * (x[0] - XSTAR[0]) + (x[1] - XSTAR[1]) * (x[1] - XSTAR[1])) +
           W_ROT * (theta - THETA_STAR) * (theta - THETA_STAR);
}

/* dL/dp from J (row 3 replaced by d theta): columns 0, 1 (v0 x, y) and 5 (w0 z) */
static void loss_grad(const double x[2], double theta, const double *J, double g[3])
{
    static const int col[3] = {0, 1, 5};
    for (int k = 0; k < 3; ++k)
        g[k] = 2 * W_POS * ((x[0] - XSTAR[0]) * J[0 * 6 + col[k]] + (x[1] - XSTAR[1]) * J[1 * 6 + col[k]]) +
               2 * W_ROT * (theta - THETA_STAR) * J[3 * 6 + col[k]];
}

/* ---- the GIF: side view, the water as dots, the bottle rotated, its trail and the target ---- */
typedef struct view { const record *rec; const scene *sc; } view;

static int px_x(double x) { return (int)lround(x * PX_PER_M); }
static int px_y(double y) { return (int)lround((DOM_H - y) * PX_PER_M); }

/* the bottle's points at centre (cx, cy) turned by th */
static void draw_bottle(cq_img *im, const scene *sc, double cx, double cy, double th, int r, int g, int b)
{
    const double c = cos(th), s = sin(th);
    for (int i = 0; i < sc->nb; ++i) {
        const double px = sc->bottle[2 * i], py = sc->bottle[2 * i + 1];
        cq_img_disc(im, (cx + c * px - s * py) * PX_PER_M, (DOM_H - (cy + s * px + c * py)) * PX_PER_M,
                    1.3, (unsigned char)r, (unsigned char)g, (unsigned char)b);
    }
}

static void draw_frame(cq_img *im, int f, void *user)
{
    const view *v = (const view *)user;
    const record *rec = v->rec;
    const double *fx = rec->fx + (size_t)f * 2 * (size_t)rec->nf;
    const cq_body_state *s = &rec->body[f];
    const int upto = f * rec->every < v->sc->steps ? f * rec->every : v->sc->steps;
    const int tx = px_x(XSTAR[0]), ty = px_y(XSTAR[1]);
    char buf[80];
    cq_img_clear(im, 240, 244, 248);
    draw_bottle(im, v->sc, XSTAR[0], XSTAR[1], 0, 200, 205, 215);                     /* the target pose */
    cq_img_line(im, tx - 6, ty, tx + 6, ty, 200, 30, 30);
    cq_img_line(im, tx, ty - 6, tx, ty + 6, 200, 30, 30);
    for (int n = 1; n <= upto; ++n)                                                 /* the trail */
        cq_img_line(im, px_x(rec->trail[n - 1][0]), px_y(rec->trail[n - 1][1]), px_x(rec->trail[n][0]),
                    px_y(rec->trail[n][1]), 160, 160, 160);
    draw_bottle(im, v->sc, s->x[0], s->x[1], rec->theta[f], 70, 120, 70);
    for (int i = 0; i < rec->nf; ++i)
        cq_img_disc(im, fx[2 * i] * PX_PER_M, (DOM_H - fx[2 * i + 1]) * PX_PER_M, 1.3, 30, 100, 220);
    snprintf(buf, sizeof buf, "T = %.2f S  TURNED %.0f DEG", upto * v->sc->dt, rec->theta[f] * 180 / PI);
    cq_img_text(im, 6, 6, buf, 1, 30, 30, 30);
    cq_img_text(im, 6, 16, "BOTTLE FLIP: ONE TURN, UPRIGHT AT THE CROSS AT T* = 1 S", 1, 30, 30, 30);
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
    static const double rate_scale[3] = {LR_V, LR_V, LR_W};
    cqx_args args;
    int paper = 0, iters, done_iters = 0, best_it = 0, rc = 1;
    double p[3], g[3], x[2], th = 0, J[13 * 6], losses[MAX_ITERS + 2], best_p[3] = {0, 0, 0}, best_x[2] = {0, 0}, best_th = 0;
    double best_L = HUGE_VAL, first_L = 0;
    double t_start = now_s();
    char path[1024];
    scene sc;
    record rec[2];            /* the current rollout and the best one */
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;

    memset(rec, 0, sizeof rec);
    memset(&sc, 0, sizeof sc);
    if (cqx_parse_args(argc, argv, 0, size_arg, &paper, &args)) return 1;
    iters = args.quick ? QUICK_ITERS : MAX_ITERS;
    sc.r = paper ? 0.0015 : 0.003;
    sc.dt = paper ? 0.001 : 0.002;
    sc.steps = (int)lround(T_STAR / sc.dt);
    if (build_scene(&sc)) goto done;
    for (int k = 0; k < 2; ++k) {
        rec[k].every = sc.steps / FRAMES; rec[k].frames = sc.steps / rec[k].every + 1; rec[k].nf = sc.nf;
        rec[k].fx = (double *)malloc(sizeof(double) * 2 * (size_t)sc.nf * (size_t)rec[k].frames);
        rec[k].body = (cq_body_state *)malloc(sizeof(cq_body_state) * (size_t)rec[k].frames);
        rec[k].theta = (double *)malloc(sizeof(double) * (size_t)rec[k].frames);
        rec[k].trail = (double (*)[2])malloc(sizeof(double[2]) * (size_t)(sc.steps + 1));
        if (!rec[k].fx || !rec[k].body || !rec[k].theta || !rec[k].trail) goto done;
    }
    {
        const double vox = 4 * sc.r * sc.r;
        printf("bottle flip: bottle of %d points (%.2f kg per m of depth), %d water particles (%.2f kg/m), r = %g m, "
               "%d steps of %g s to t* = %.1f s; target (%.2f, %.2f), one turn\n",
               sc.nb, sc.nb * vox * BOTTLE_DENSITY, sc.nf, sc.nf * vox * 1000, sc.r, sc.steps, sc.dt, T_STAR, XSTAR[0], XSTAR[1]);
    }

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = 3; od.learning_rate = 1;
    od.rate_scale = rate_scale; od.plateau_patience = PATIENCE;
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_robot_last_error(NULL)); goto done; }
    memcpy(p, P_INIT, sizeof p);

    for (int it = 0; it < iters; ++it) {
        double L, miss, lr = cq_robot_optimizer_learning_rate(opt);
        int reduced = 0;
        if (toss(&sc, p, x, &th, J, &rec[0])) goto done;
        L = loss_of(x, th);
        miss = sqrt((x[0] - XSTAR[0]) * (x[0] - XSTAR[0]) + (x[1] - XSTAR[1]) * (x[1] - XSTAR[1]));
        losses[it] = L;
        done_iters = it + 1;
        loss_grad(x, th, J, g);
        if (it == 0) first_L = L;
        if (L < best_L) {
            const record t = rec[0];
            rec[0] = rec[1]; rec[1] = t;
            best_L = L; best_it = it; best_th = th; memcpy(best_p, p, sizeof p); memcpy(best_x, x, sizeof x);
        }
        printf("iteration %2d: v0 = (%.4f, %.4f) m/s, w0 = %.4f rad/s  x(t*) = (%.4f, %.4f) miss %.4f m  "
               "turned %.2f deg  loss %.3e  lr %g\n", it, p[0], p[1], p[2], x[0], x[1], miss, th * 180 / PI, L, lr);
        if (it == 0) {   /* the gradient check: central difference along the gradient's direction */
            const double gn = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
            double pp[3], pm[3], xp[2], xm[2], tp, tm, cd;
            for (int k = 0; k < 3; ++k) { pp[k] = p[k] + FD_STEP * g[k] / gn; pm[k] = p[k] - FD_STEP * g[k] / gn; }
            if (toss(&sc, pp, xp, &tp, NULL, NULL) || toss(&sc, pm, xm, &tm, NULL, NULL)) goto done;
            cd = (loss_of(xp, tp) - loss_of(xm, tm)) / (2 * FD_STEP);
            printf("gradient check: dL/dp = (%.4f, %.4f, %.4f); along it: %.4f (forward mode) vs %.4f (central "
                   "difference, step %.2f): %s, ratio %.3f\n", g[0], g[1], g[2], gn, cd, FD_STEP,
                   gn * cd > 0 ? "same direction" : "OPPOSITE", cd / gn);
            if (!(gn * cd > 0)) goto done;
            if (!args.quick) {   /* each partial derivative of x(t*) and theta(t*), for the record */
                static const char *name[3] = {"vx0", "vy0", "wz0"};
                static const int col[3] = {0, 1, 5};
                for (int k = 0; k < 3; ++k) {
                    const double e = 0.05;
                    memcpy(pp, p, sizeof p); memcpy(pm, p, sizeof p);
                    pp[k] += e; pm[k] -= e;
                    if (toss(&sc, pp, xp, &tp, NULL, NULL) || toss(&sc, pm, xm, &tm, NULL, NULL)) goto done;
                    printf("  d(x, y, theta)(t*)/d %s: forward (%+.4f, %+.4f, %+.4f)  central difference (%+.4f, %+.4f, %+.4f)\n",
                           name[k], J[0 * 6 + col[k]], J[1 * 6 + col[k]], J[3 * 6 + col[k]],
                           (xp[0] - xm[0]) / (2 * e), (xp[1] - xm[1]) / (2 * e), (tp - tm) / (2 * e));
                }
            }
        }
        if (!args.quick && miss < TOL_X && fabs(th - THETA_STAR) < TOL_TH) break;
        if (cq_robot_optimizer_report(opt, L, &reduced) != CQ_SUCCESS) goto done;
        if (reduced) printf("  plateau: learning rate halved to %g\n", cq_robot_optimizer_learning_rate(opt));
        if (it + 1 < iters && cq_robot_optimizer_step(opt, p, g) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }

    {   /* the best toss, recorded for the GIF */
        view v;
        int frames = 0;
        v.rec = &rec[1]; v.sc = &sc;
        snprintf(path, sizeof path, "%s/bottle_flip.gif", args.dir);
        if (cqx_write_gif(path, (int)(DOM_W * PX_PER_M), (int)(DOM_H * PX_PER_M), 6, rec[1].frames - 1, 1, draw_frame, &v, &frames)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s (%d frames)\n", path, frames);
    }
    {
        const double *curve[1];
        curve[0] = losses;
        snprintf(path, sizeof path, "%s/bottle_flip_loss.png", args.dir);
        if (cqx_plot_log_loss_labeled(path, "BOTTLE FLIP: 0.1 |X - X*|^2 + (THETA - 2 PI)^2", "LOSS", 1, NULL, curve,
                                      done_iters, LINE, DOT)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s\n", path);
    }
    {
        const double miss = sqrt((best_x[0] - XSTAR[0]) * (best_x[0] - XSTAR[0]) + (best_x[1] - XSTAR[1]) * (best_x[1] - XSTAR[1]));
        printf("best: iteration %d, v0 = (%.4f, %.4f) m/s, w0 = %.4f rad/s: x(t*) = (%.4f, %.4f), miss %.4f m, turned "
               "%.2f deg (error %+.2f deg); %d iterations, %.1f s in all\n", best_it, best_p[0], best_p[1], best_p[2],
               best_x[0], best_x[1], miss, best_th * 180 / PI, (best_th - THETA_STAR) * 180 / PI, done_iters, now_s() - t_start);
        if (args.quick) rc = cqx_quick_verdict(done_iters, first_L, best_L);
        else {
            rc = miss < TOL_X && fabs(best_th - THETA_STAR) < TOL_TH ? 0 : 1;
            printf("target %s (tolerance %.2f m, %.0f deg)\n", rc ? "NOT reached" : "reached", TOL_X, TOL_TH * 180 / PI);
        }
    }
done:
    for (int k = 0; k < 2; ++k) { free(rec[k].fx); free(rec[k].body); free(rec[k].theta); free(rec[k].trail); }
    free(sc.bottle); free(sc.water);
    cq_robot_optimizer_destroy(opt);
    return rc;
}
