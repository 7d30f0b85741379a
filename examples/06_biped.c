/* 06_biped.c - a 2D cable-driven soft biped learns to walk to the right: a soft body on two
   legs, each leg with two cables (Spielberg et al. (Robotica 2021) eqs 16-17) routed up its left and right sides into
   the body.  Reeling a side's cable in bends the leg towards that side.  The controller is open
   loop: one signal u in [0.75, 1] per cable and control step, tuned by Adam with reverse-mode
   gradients through the whole MLS-MPM rollout (cq_sim_cable_actuation_grad in the
   cq_sim_backward hook, as in 04_finger.c).

   Build and run, from the repository root:
       cc -O2 examples/06_biped.c -o build/biped -lm && ./build/biped [out-dir] [iterations] [quick]
   Arguments in any order: a directory (default "out", created if missing), the number of Adam
   iterations (default ITERS), and "quick" (a tiny run for tests: a short horizon and a few
   iterations; prints "loss decreased: yes/no" and exits nonzero unless its loss decreased).
   Prints loss and distance walked per iteration, then the distance walked by the initial and by
   the optimised signals, and writes OUT/biped.gif (the optimised gait), OUT/biped_final.png (its
   final pose over the faint initial pose) and OUT/biped_loss.png (loss per iteration).

   Loss = -(mean particle x at T - mean particle x at 0) + ACTION_PENALTY sum_n,c (1 - u_nc)^2
   (no reward, and no gradient, for the centroid beyond X_CAP, well short of the far wall).
   Default: 100 iterations, about a minute of CPU on one core at -O2 (448 particles, f32, 1000
   substeps per rollout; the optimised biped walks ~0.65 in 1 s, the initial one ~0); quick:
   about 1 s.
   The initial signals are a small two-phase sine (the legs in antiphase), which barely moves
   the robot.  As in 03_walker.c, an iteration that lands far worse than the best so far sends
   the optimiser back to the best signals with half the step; "optimised" = the best iterate. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, loss plot, GIF, keep-the-best bookkeeping */

/* ---- world: a 128 x 32 grid of dx = 1/64 ([0, 2) x [0, 0.5), y up), walls 3 nodes thick
   (floor top at y = 3/64) with Coulomb friction */
#define RESX 128
#define RESY 32
#define DX (1.0 / 64)
#define WALL 3
#define DT 1e-3               /* substep: stability needs dt < dx sqrt(rho/E) = 1.7e-3 here */
#define SUBSTEPS 10           /* one control step = 10 substeps = 10 ms */
#define GRAVITY 9.8
#define FRICTION 0.5
#define YOUNGS 80.0
#define POISSON 0.3

/* ---- robot: particles on a lattice of spacing dx/2; a body on two legs */
#define SP (0.5 * DX)
#define X0 0.10               /* left edge of the robot */
#define Y0 (WALL * DX + 0.004) /* feet just above the floor */
#define LEG_NX 8              /* leg: 8 x 12 particles (0.0625 x 0.094) */
#define LEG_NY 12
#define BODY_NX 32            /* body: 32 x 8 particles (0.25 x 0.0625) */
#define BODY_NY 8
#define NLEG 2
#define NCAB 4                /* back leg left/right, front leg left/right */
#define CAB_INTO_BODY 5       /* the cables run this many rows up into the body (anchor) */
#define CAB_LEN (LEG_NY + CAB_INTO_BODY)
#define CABLE_K 12.0          /* force per unit stretch */

/* ---- controller and optimisation */
#define STEPS 100             /* control steps per rollout: 1 s of simulated time */
#define ITERS 100             /* ~0.55 s each on one core at -O2 */
#define U_LO 0.75
#define U_HI 1.0
#define U_MID 0.90            /* initial signals: U_MID + U_AMP sin(OMEGA n + phase) */
#define U_AMP 0.04
#define OMEGA 0.25            /* rad per control step: a 0.25 s period */
#define LEARNING_RATE 0.01
#define BACKTRACK 0.1
#define ACTION_PENALTY 1e-4   /* per step and cable: w (1 - u)^2 */
#define X_CAP 1.5             /* no reward for the centroid beyond x = 1.5: keeps it off the far wall */
#define QUICK_STEPS 30
#define QUICK_ITERS 5

/* ---- pictures */
#define PX_PER_CELL 5
#define IMG_W (RESX * PX_PER_CELL)
#define IMG_H (RESY * PX_PER_CELL)

typedef struct robot {
    int n;
    double x[2 * (NLEG * LEG_NX * LEG_NY + BODY_NX * BODY_NY)];
    int is_leg[NLEG * LEG_NX * LEG_NY + BODY_NX * BODY_NY];
    int route[NCAB][CAB_LEN];
} robot;

/* particle indices: legs first (leg l, column i, row j), then the body */
static int leg_pid(int l, int i, int j) { return l * LEG_NX * LEG_NY + j * LEG_NX + i; }
static int body_pid(int i, int j) { return NLEG * LEG_NX * LEG_NY + j * BODY_NX + i; }
static int leg_col0(int l) { return l == 0 ? 0 : BODY_NX - LEG_NX; }   /* body column above leg column 0 */

static void build_robot(robot *r)
{
    r->n = 0;
    for (int l = 0; l < NLEG; ++l)
        for (int j = 0; j < LEG_NY; ++j)
            for (int i = 0; i < LEG_NX; ++i) {
                r->x[2 * r->n] = X0 + (leg_col0(l) + i + 0.5) * SP;
                r->x[2 * r->n + 1] = Y0 + (j + 0.5) * SP;
                r->is_leg[r->n++] = 1;
            }
    for (int j = 0; j < BODY_NY; ++j)
        for (int i = 0; i < BODY_NX; ++i) {
            r->x[2 * r->n] = X0 + (i + 0.5) * SP;
            r->x[2 * r->n + 1] = Y0 + (LEG_NY + j + 0.5) * SP;
            r->is_leg[r->n++] = 0;
        }
    /* cable 2l: one particle in from leg l's left edge, 2l + 1: from its right edge; from the
       foot row up the leg and on into the body */
    for (int l = 0; l < NLEG; ++l)
        for (int s = 0; s < 2; ++s) {
            const int col = s == 0 ? 1 : LEG_NX - 2;
            for (int k = 0; k < CAB_LEN; ++k)
                r->route[2 * l + s][k] = k < LEG_NY ? leg_pid(l, col, k) : body_pid(leg_col0(l) + col, k - LEG_NY);
        }
}

static double centroid_x(const double *x, int n)
{
    double s = 0;
    for (int p = 0; p < n; ++p) s += x[2 * p];
    return s / n;
}

typedef struct biped {
    cq_sim *sim;
    robot rob;
    double x0;                /* centroid x at step 0 */
    double *grad;             /* dL/du [steps * NCAB] */
    double *xs, *seed;        /* [2n] */
} biped;

static void hook(cq_sim *sim, int step, void *user)
{
    biped *b = (biped *)user;
    (void)cq_sim_cable_actuation_grad(sim, b->grad + NCAB * step);   /* cannot fail here */
}

/* Rolls out u[steps * NCAB]; returns 0 on success with the loss, the distance walked and (when
   want_grad) dL/du in b->grad.  rec (when not NULL) gets every state's positions. */
static int rollout(biped *b, const double *u, int steps, double *loss, double *walked, int want_grad, double *rec)
{
    const int n = b->rob.n;
    double pen = 0;
    if (cq_sim_reset(b->sim)) return 1;
    if (rec) memcpy(rec, b->rob.x, sizeof(double) * 2 * n);
    for (int s = 0; s < steps; ++s) {
        if (cq_sim_set_cable_actuation(b->sim, NCAB, u + NCAB * s) || cq_sim_step(b->sim, 1)) return 1;
        if (rec && cq_sim_get(b->sim, CQ_FIELD_X, rec + (size_t)(s + 1) * 2 * n)) return 1;
        for (int c = 0; c < NCAB; ++c) pen += (1 - u[NCAB * s + c]) * (1 - u[NCAB * s + c]);
    }
    if (cq_sim_get(b->sim, CQ_FIELD_X, b->xs)) return 1;
    *walked = centroid_x(b->xs, n) - b->x0;
    *loss = -(*walked < X_CAP - b->x0 ? *walked : X_CAP - b->x0) + ACTION_PENALTY * pen;
    if (!want_grad) return 0;
    memset(b->seed, 0, sizeof(double) * 2 * n);
    if (*walked < X_CAP - b->x0)
        for (int p = 0; p < n; ++p) b->seed[2 * p] = -1.0 / n;
    if (cq_sim_backward(b->sim, b->seed, NULL, NULL, NULL, hook, b) != CQ_SUCCESS) return 1;
    for (int k = 0; k < steps * NCAB; ++k) b->grad[k] += -2 * ACTION_PENALTY * (1 - u[k]);
    return 0;
}

/* ---- drawing */
static int px_x(double x) { return (int)floor(x / (RESX * DX) * IMG_W + 0.5); }
static int px_y(double y) { return (int)floor((1 - y / (RESY * DX)) * IMG_H + 0.5); }

static void draw_world(cq_img *im, double start_x) { cqx_draw_side_world(im, RESX * DX, WALL * PX_PER_CELL, start_x); }

/* body dark green, legs blue-grey; cables from dark (slack) to red (u = 0.75) */
static void draw_robot(cq_img *im, const robot *r, const double *x, const double *u, int faint)
{
    for (int p = 0; p < r->n; ++p) {
        unsigned char c[3] = {50, 120, 80};
        if (r->is_leg[p]) { c[0] = 90; c[1] = 130; c[2] = 170; }
        if (faint)
            for (int i = 0; i < 3; ++i) c[i] = (unsigned char)(c[i] + (235 - c[i]) * 0.7);
        cq_img_disc(im, x[2 * p] / (RESX * DX) * IMG_W, (1 - x[2 * p + 1] / (RESY * DX)) * IMG_H, 1.6, c[0], c[1], c[2]);
    }
    if (faint) return;
    for (int c = 0; c < NCAB; ++c) {
        double a = u ? (1 - u[c]) / (1 - U_LO) : 0;
        unsigned char red, green;
        a = a < 0 ? 0 : (a > 1 ? 1 : a);
        red = (unsigned char)(80 + 175 * a); green = (unsigned char)(60 * (1 - a));
        for (int k = 1; k < CAB_LEN; ++k) {
            const int p = r->route[c][k - 1], q = r->route[c][k];
            cq_img_line(im, px_x(x[2 * p]), px_y(x[2 * p + 1]), px_x(x[2 * q]), px_y(x[2 * q + 1]), red, green, 40);
        }
    }
    {   /* centroid marker, in the floor */
        const int cx = px_x(centroid_x(x, r->n)), top = IMG_H - WALL * PX_PER_CELL;
        cq_img_rect(im, cx - 1, top + 2, cx + 1, top + 9, 250, 200, 40);
    }
}

/* one GIF frame: the recorded state of step f with the signals that led to it */
typedef struct movie { const robot *rob; const double *rec, *u; double start_x; } movie;
static void draw_frame(cq_img *im, int f, void *user)
{
    const movie *m = (const movie *)user;
    draw_world(im, m->start_x);
    draw_robot(im, m->rob, m->rec + (size_t)f * 2 * m->rob->n, m->u + NCAB * (f > 0 ? f - 1 : 0), 0);
}

int main(int argc, char **argv)
{
    cqx_args args;
    int iters, steps, rc = 1, NP, done_iters = 0, xstep = 1, frames = 0;
    static biped b;
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_robot_optimizer *opt = NULL;
    cq_robot_optimizer_desc od;
    cqx_best best = {0, HUGE_VAL, -1, NULL, NULL};
    movie mov;
    double *u = NULL, *u0 = NULL, *lo = NULL, *hi = NULL, *losses = NULL;
    double *rec = NULL;
    double dist_init = 0, dist_opt = 0, ystep = 1, dummy;
    char path[1024];
    cq_img im = {0, 0, NULL};
    clock_t t_start = clock();

    if (cqx_parse_args(argc, argv, 1, NULL, NULL, &args)) return 1;
    steps = args.quick ? QUICK_STEPS : STEPS;
    iters = args.iters >= 0 ? args.iters : args.quick ? QUICK_ITERS : ITERS;
    if (iters < 1) iters = 1;
    build_robot(&b.rob);
    b.x0 = centroid_x(b.rob.x, b.rob.n);

    /* ---- the simulator: f32, friction walls, checkpoints every ~sqrt(T) steps */
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = RESX; d.res[1] = RESY; d.dx = DX; d.dt = DT; d.substeps = SUBSTEPS;
    d.gravity[1] = -GRAVITY;
    d.precision = CQ_PRECISION_F32;
    d.boundary = CQ_BOUNDARY_FRICTION; d.friction = FRICTION;
    d.checkpoint_every = (int)(sqrt((double)steps) + 0.5);
    d.logger.func = cqx_log_warnings;
    if (cq_sim_create(&d, &b.sim) != CQ_SUCCESS) goto done;
    memset(&pd, 0, sizeof pd);
    pd.count = b.rob.n; pd.x = b.rob.x;
    pd.default_youngs = YOUNGS; pd.default_poisson = POISSON;
    if (cq_sim_add_particles(b.sim, &pd) != CQ_SUCCESS) goto done;
    for (int c = 0; c < NCAB; ++c)   /* rest length = the route's length: u = 1 is just taut */
        if (cq_sim_add_cable(b.sim, CAB_LEN, b.rob.route[c], CABLE_K, (CAB_LEN - 1) * SP) != CQ_SUCCESS) goto done;

    NP = steps * NCAB;
    u = (double *)malloc(sizeof(double) * NP);
    u0 = (double *)malloc(sizeof(double) * NP);
    best.n = NP;
    best.params = (double *)malloc(sizeof(double) * NP);
    best.grad = (double *)malloc(sizeof(double) * NP);
    b.grad = (double *)malloc(sizeof(double) * NP);
    lo = (double *)malloc(sizeof(double) * NP);
    hi = (double *)malloc(sizeof(double) * NP);
    losses = (double *)calloc((size_t)iters, sizeof(double));
    b.xs = (double *)malloc(sizeof(double) * 2 * b.rob.n);
    b.seed = (double *)malloc(sizeof(double) * 2 * b.rob.n);
    rec = (double *)malloc(sizeof(double) * (size_t)(steps + 1) * 2 * b.rob.n);
    if (!u || !u0 || !best.params || !best.grad || !b.grad || !lo || !hi || !losses || !b.xs || !b.seed || !rec) goto oom;
    /* initial signals: the two sides of a leg in antiphase, the two legs half a period apart */
    for (int s = 0; s < steps; ++s)
        for (int c = 0; c < NCAB; ++c) {
            const double phase = 3.14159265358979 * ((c & 1) + 0.5 * (c >> 1));
            u[NCAB * s + c] = U_MID + U_AMP * sin(OMEGA * s + phase);
        }
    for (int k = 0; k < NP; ++k) { lo[k] = U_LO; hi[k] = U_HI; }
    memcpy(u0, u, sizeof(double) * NP);

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = NP; od.lo = lo; od.hi = hi; od.learning_rate = LEARNING_RATE;
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) goto robot_error;

    printf("biped: %d particles, %d cables of %d particles, grid %dx%d, %d steps x %d substeps (%.2f s), "
           "%d open-loop signals in [%.2f, %.2f]%s\n",
           b.rob.n, NCAB, CAB_LEN, RESX, RESY, steps, SUBSTEPS, steps * SUBSTEPS * DT, NP, U_LO, U_HI,
           args.quick ? ", quick" : "");

    for (int it = 0; it < iters; ++it) {
        double gn = 0, walked = 0, loss = 0;
        const char *note = "";
        if (rollout(&b, u, steps, &loss, &walked, 1, NULL)) {
            fprintf(stderr, "iteration %d: %s; stopping\n", it, cq_sim_last_error(b.sim));
            if (best.it < 0) goto done;
            break;
        }
        for (int k = 0; k < NP; ++k) gn += b.grad[k] * b.grad[k];
        losses[it] = loss;
        done_iters = it + 1;
        switch (cqx_best_update(&best, it, iters, loss, BACKTRACK, 0.002, u, b.grad, &opt, &od)) {
        case -1: goto robot_error;
        case 1: note = CQX_WENT_BACK; break;
        default: break;
        }
        printf("iteration %3d  loss %+.5f  walked %+.4f  |grad| %.2e%s\n", it, loss, walked, sqrt(gn), note);
        fflush(stdout);
        if (it + 1 < iters && cq_robot_optimizer_step(opt, u, b.grad) != CQ_SUCCESS) {
            fprintf(stderr, "optimizer: %s\n", cq_robot_last_error(opt));
            break;
        }
    }

    /* ---- the initial and the optimised (best) signals, forward only */
    if (rollout(&b, u0, steps, &dummy, &dist_init, 0, rec)) goto sim_error;
    if (cq_img_init(&im, IMG_W, IMG_H) != 0) goto oom;
    draw_world(&im, b.x0);
    draw_robot(&im, &b.rob, rec + (size_t)steps * 2 * b.rob.n, NULL, 1);   /* initial pose at T, faint */
    if (rollout(&b, best.params, steps, &dummy, &dist_opt, 0, rec)) goto sim_error;
    draw_robot(&im, &b.rob, rec + (size_t)steps * 2 * b.rob.n, best.params + NCAB * (steps - 1), 0);
    snprintf(path, sizeof path, "%s/biped_final.png", args.dir);
    if (cq_img_write_png(path, &im) != 0) goto write_error;

    snprintf(path, sizeof path, "%s/biped.gif", args.dir);
    mov.rob = &b.rob; mov.rec = rec; mov.u = best.params; mov.start_x = b.x0;
    if (cqx_write_rollout_gif(path, IMG_W, IMG_H, steps, draw_frame, &mov, &frames) != 0) goto write_error;
    snprintf(path, sizeof path, "%s/biped_loss.png", args.dir);
    if (cqx_plot_loss_labeled(path, "CABLE BIPED: LOSS = -DISTANCE WALKED", "LOSS", losses, done_iters, &ystep, &xstep) != 0) goto write_error;

    printf("initial walked %.4f, optimised walked %.4f (best of %d iterations: iteration %d; %.1f s CPU)\n",
           dist_init, dist_opt, done_iters, best.it, (double)(clock() - t_start) / CLOCKS_PER_SEC);
    printf("wrote %s/biped.gif (%d frames), %s/biped_final.png, %s/biped_loss.png (x ticks every %d iterations, "
           "y ticks every %g in loss)\n", args.dir, frames, args.dir, args.dir, xstep, ystep);
    rc = args.quick ? cqx_quick_verdict(done_iters, losses[0], best.loss) : 0;
    goto done;

oom:
    fprintf(stderr, "out of memory\n");
    goto done;
robot_error:
    fprintf(stderr, "%s\n", cq_robot_last_error(NULL));
    goto done;
sim_error:
    fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(b.sim));
    goto done;
write_error:
    fprintf(stderr, "cannot write %s\n", path);
done:
    if (rc && b.sim && best.it < 0 && cq_sim_last_error(b.sim)[0]) fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(b.sim));
    cq_img_free(&im);
    cq_robot_optimizer_destroy(opt);
    cq_sim_destroy(b.sim);
    free(u); free(u0); free(best.params); free(best.grad); free(b.grad); free(lo); free(hi); free(losses);
    free(b.xs); free(b.seed); free(rec);
    return rc;
}
