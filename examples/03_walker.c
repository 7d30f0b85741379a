/* 03_walker.c - a 2D soft walker learns to walk to the right: a soft body on two legs, each leg
   split into two halves with vertical pressure actuators, driven by a closed-loop tanh MLP
   (inputs: sin/cos gait phase + heights and velocities of the body and leg-half centroids),
   trained with reverse-mode gradients through the whole MLS-MPM rollout and Adam.

   Build and run, from the repository root:
       cc -O2 examples/03_walker.c -o build/walker -lm && ./build/walker [out-dir] [iterations] [quick]
   Arguments in any order: a directory (default "out", created if missing), the number of Adam
   iterations (default 150), and "quick" (a tiny run for tests: 0.3 s horizon, 6 iterations;
   exits nonzero unless its loss decreased).  Prints loss and distance walked per iteration,
   then the distance walked by the initial and by the optimised controller, and writes
   OUT/walker.gif (the optimised gait, at half speed), OUT/walker_final.png (its final pose over
   the faint initial pose) and OUT/walker_loss.png (loss per iteration).  30-40 s on one CPU
   core at -O2 (f32 sim, 480 particles, 1000 substeps per rollout; 2-vCPU AMD EPYC Zen 3 VM,
   2026-11-29); quick: under 2 s.

   Loss = -(mean particle x at T - mean particle x at 0) + 1e-5 sum_n |a_n|^2 (subtracting the
   constant start position changes no gradient but makes the loss read as -distance).  Gaits have
   cliffs (a stumble costs half the distance), so when an iteration lands more than 10% worse
   than the best so far the optimiser goes back to the best parameters and halves its step; the
   "optimised" controller is the best iterate (lowest loss). */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, loss plot, GIF, keep-the-best bookkeeping */

/* ---- world: a 128 x 32 grid of dx = 1/64, so the domain is [0, 2) x [0, 0.5), y up; the
   outer 3 node layers are walls (floor top at y = 3/64), Coulomb friction on them. */
#define RESX 128
#define RESY 32
#define DX (1.0 / 64)
#define WALL 3
#define DT 1e-3               /* substep: stability needs dt < dx sqrt(rho/E) = 2.2e-3 here */
#define SUBSTEPS 10           /* one control step = 10 substeps = 10 ms */
#define GRAVITY 9.8
#define FRICTION 0.5
#define YOUNGS 50.0           /* soft (unit density): the legs sag ~3% under the robot's weight */
#define POISSON 0.3
#define MAX_STRESS 20.0       /* actuation stress at |a| = 1: 40% of E */

/* ---- robot (DiffTaichi-like): a body on two legs; each leg = two actuated halves */
#define X0 0.10               /* left edge of the robot */
#define Y0 (WALL * DX + 0.004) /* feet just above the floor */
#define LEG_W 0.0625
#define LEG_H 0.075
#define BODY_W 0.25
#define BODY_H 0.075
#define NACT 4                /* actuator groups: back leg left/right, front leg left/right */

/* ---- controller and optimisation */
#define STEPS 100             /* control steps per rollout: 1 s of simulated time */
#define ITERS 150             /* Adam iterations (~0.2 s each on one core at -O2) */
#define LEARNING_RATE 0.005
#define CLIP_NORM 1.0         /* gradient norm clip (long contact-rich horizons spike) */
#define BACKTRACK 0.1         /* a loss this much (relative) worse than the best: go back, halve the step */
#define ACTION_PENALTY 1e-5   /* per step and signal: w a^2 */
#define OMEGA 0.2             /* phase rate per control step: 20 rad/s, a 0.31 s gait period */
#define HIDDEN 32
#define INIT_GAIN 0.5         /* small initial weights: the initial controller only jiggles */
#define SEED 1
#define QUICK_STEPS 30
#define QUICK_ITERS 6

/* ---- pictures */
#define PX_PER_CELL 5
#define IMG_W (RESX * PX_PER_CELL)
#define IMG_H (RESY * PX_PER_CELL)

typedef struct robot {
    int n;
    double *x;                /* initial positions [2n] */
    int *act;                 /* sim actuator group per particle (-1 = body) */
    int *obs_group;           /* observer group: 0 = body, 1 + actuator group for leg halves */
} robot;

/* Fills a rectangle with particles on a lattice of spacing dx/2 (the default volume (dx/2)^2). */
static void add_rect(robot *r, double x0, double y0, double w, double h, int act)
{
    const double s = 0.5 * DX;
    const int nx = (int)(w / s + 0.5), ny = (int)(h / s + 0.5);
    for (int i = 0; i < nx; ++i)
        for (int j = 0; j < ny; ++j) {
            r->x[2 * r->n] = x0 + (i + 0.5) * s;
            r->x[2 * r->n + 1] = y0 + (j + 0.5) * s;
            r->act[r->n] = act;
            r->obs_group[r->n] = act + 1;
            r->n++;
        }
}

static int build_robot(robot *r)
{
    const int cap = 4096;
    r->n = 0;
    r->x = (double *)malloc(sizeof(double) * 2 * cap);
    r->act = (int *)malloc(sizeof(int) * cap);
    r->obs_group = (int *)malloc(sizeof(int) * cap);
    if (!r->x || !r->act || !r->obs_group) return -1;
    add_rect(r, X0, Y0 + LEG_H, BODY_W, BODY_H, -1);                          /* body */
    add_rect(r, X0, Y0, LEG_W / 2, LEG_H, 0);                                 /* back leg */
    add_rect(r, X0 + LEG_W / 2, Y0, LEG_W / 2, LEG_H, 1);
    add_rect(r, X0 + BODY_W - LEG_W, Y0, LEG_W / 2, LEG_H, 2);                /* front leg */
    add_rect(r, X0 + BODY_W - LEG_W / 2, Y0, LEG_W / 2, LEG_H, 3);
    return 0;
}

static double centroid_x(const double *x, int n)
{
    double s = 0;
    for (int p = 0; p < n; ++p) s += x[2 * p];
    return s / n;
}

/* ---- loss: -(mean x at T - mean x at 0).  Beyond X_CAP there is no more reward (and no
   gradient), so no optimiser step is pushed towards the far wall, which a particle must not
   reach (x/dx < RESX - 1.5, x < 1.98).  The gaits found here end near x = 0.85 (front edge
   ~0.13 further); the cap keeps a much better one 0.3 away from the wall. */
#define X_CAP 1.5
typedef struct loss_ctx { double x0; } loss_ctx;
static double final_loss(const cq_robot_state *s, double *dL_dx, double *dL_dv, void *user)
{
    const loss_ctx *c = (const loss_ctx *)user;
    const double cx = centroid_x(s->x, s->particles);
    (void)dL_dv;
    if (cx >= X_CAP) return -(X_CAP - c->x0);
    for (int p = 0; p < s->particles; ++p) dL_dx[2 * p] = -1.0 / s->particles;
    return -(cx - c->x0);
}

/* ---- drawing */
static int px_x(double x) { return (int)floor(x / (RESX * DX) * IMG_W + 0.5); }

static void draw_world(cq_img *im, double start_x) { cqx_draw_side_world(im, RESX * DX, WALL * PX_PER_CELL, start_x); }

/* Body dark green; each leg half by its signal: grey at a = 0, red towards a = 1, blue towards -1. */
static void draw_robot(cq_img *im, const robot *r, const double *x, const double *a, int faint)
{
    for (int p = 0; p < r->n; ++p) {
        unsigned char c[3] = {50, 120, 80};
        if (r->act[p] >= 0) {
            double s = a[r->act[p]];
            s = s > 1 ? 1 : (s < -1 ? -1 : s);
            c[0] = (unsigned char)(150 + 100 * s);
            c[1] = (unsigned char)(150 - 80 * fabs(s));
            c[2] = (unsigned char)(150 - 100 * s);
        }
        if (faint)
            for (int i = 0; i < 3; ++i) c[i] = (unsigned char)(c[i] + (235 - c[i]) * 0.7);
        cq_img_disc(im, x[2 * p] / (RESX * DX) * IMG_W, (1 - x[2 * p + 1] / (RESY * DX)) * IMG_H, 1.6,
                    c[0], c[1], c[2]);
    }
    if (!faint) {   /* centroid marker, in the floor */
        const int cx = px_x(centroid_x(x, r->n)), top = IMG_H - WALL * PX_PER_CELL;
        cq_img_rect(im, cx - 1, top + 2, cx + 1, top + 9, 250, 200, 40);
    }
}

/* one GIF frame: the recorded state of step f */
typedef struct movie { const robot *rob; const cqx_recorder *rec; double start_x; } movie;
static void draw_frame(cq_img *im, int f, void *user)
{
    const movie *m = (const movie *)user;
    draw_world(im, m->start_x);
    draw_robot(im, m->rob, m->rec->x + (size_t)f * 2 * m->rob->n, m->rec->a + (size_t)f * NACT, 0);
}

int main(int argc, char **argv)
{
    cqx_args args;
    int iters, steps, rc = 1, n_obs, n_act = 0;
    robot rob = {0, NULL, NULL, NULL};
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *sim = NULL;
    cq_robot_actuators *act = NULL;
    cq_robot_observer *obs = NULL;
    cq_robot_controller *mlp = NULL;
    cq_robot_optimizer *opt = NULL;
    cq_robot_actuator_desc ad[NACT];
    cq_robot_mlp_desc md;
    cq_robot_optimizer_desc od;
    cq_robot_rollout_desc rd;
    cq_robot_rollout_out ro;
    loss_ctx lc;
    cqx_recorder rec = {0, 2, NACT, 0, NULL, NULL};
    cqx_best best = {0, HUGE_VAL, -1, NULL, NULL};
    movie mov;
    double *theta = NULL, *theta0 = NULL, *grad = NULL;
    double *xs = NULL, *losses = NULL, *offset = NULL, *scale = NULL;
    double dist_init = 0, dist_opt = 0, ystep = 1;
    int hidden[1] = {HIDDEN}, P, done_iters = 0, xstep = 1, frames = 0;
    char path[1024];
    cq_img im = {0, 0, NULL};
    clock_t t_start = clock();

    if (cqx_parse_args(argc, argv, 1, NULL, NULL, &args)) return 1;
    steps = args.quick ? QUICK_STEPS : STEPS;
    iters = args.iters >= 0 ? args.iters : args.quick ? QUICK_ITERS : ITERS;
    if (iters < 1) iters = 1;
    if (build_robot(&rob) != 0) { fprintf(stderr, "out of memory\n"); goto done; }
    lc.x0 = centroid_x(rob.x, rob.n);
    for (int p = 0; p < rob.n; ++p) n_act += rob.act[p] >= 0;

    /* ---- the simulator: f32, friction walls, a tape with checkpoints every ~sqrt(T) steps */
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = RESX; d.res[1] = RESY; d.dx = DX; d.dt = DT; d.substeps = SUBSTEPS;
    d.gravity[1] = -GRAVITY;
    d.precision = CQ_PRECISION_F32;
    d.boundary = CQ_BOUNDARY_FRICTION; d.friction = FRICTION;
    d.checkpoint_every = (int)(sqrt((double)steps) + 0.5);
    d.logger.func = cqx_log_warnings;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) goto done;
    memset(&pd, 0, sizeof pd);
    pd.count = rob.n; pd.x = rob.x; pd.actuator = rob.act;
    pd.default_youngs = YOUNGS; pd.default_poisson = POISSON;
    if (cq_sim_add_particles(sim, &pd) != CQ_SUCCESS) goto done;

    /* ---- actuators: one vertical pressure signal per leg half (axis_mask bit 1 = y) */
    memset(ad, 0, sizeof ad);
    for (int g = 0; g < NACT; ++g) {
        ad[g].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[g].max_stress = MAX_STRESS; ad[g].axis_mask = 2;
    }
    if (cq_robot_actuators_create(2, NACT, ad, &act) != CQ_SUCCESS) goto robot_error;

    /* ---- observer: centroid (x, y, vx, vy) of the body and of each leg half */
    if (cq_robot_observer_create_centroid(2, rob.n, rob.obs_group, NACT + 1, &obs) != CQ_SUCCESS) goto robot_error;
    n_obs = cq_robot_observer_size(obs);

    /* ---- controller: tanh MLP, one hidden layer, inputs = observations + sin/cos phase (2
       harmonics).  Absolute x positions would change as the robot walks, so their scale is 0
       (the controller sees heights relative to the start and velocities, scaled to ~1). */
    offset = (double *)calloc((size_t)n_obs, sizeof *offset);
    scale = (double *)calloc((size_t)n_obs, sizeof *scale);
    if (!offset || !scale) goto oom;
    {
        double o0[4 * (NACT + 1)];
        double *v0 = (double *)calloc((size_t)rob.n * 2, sizeof *v0);   /* at rest */
        const cq_result r = v0 ? cq_robot_observer_observe(obs, rob.x, v0, o0) : CQ_ERROR_OUT_OF_MEMORY;
        free(v0);
        if (r != CQ_SUCCESS) { fprintf(stderr, "observer: %s\n", cq_result_string(r)); goto done; }
        for (int g = 0; g <= NACT; ++g) {
            offset[4 * g + 1] = o0[4 * g + 1];            /* y relative to the start */
            scale[4 * g + 0] = 0;                          /* absolute x: ignored */
            scale[4 * g + 1] = 10;                         /* 10 cm -> 1 */
            scale[4 * g + 2] = scale[4 * g + 3] = 1;       /* 1 m/s -> 1 */
        }
    }
    memset(&md, 0, sizeof md);
    md.inputs = n_obs; md.outputs = cq_robot_actuators_signals(act);
    md.layers = 1; md.hidden = hidden;
    md.phase_harmonics = 2; md.omega = OMEGA;
    md.input_offset = offset; md.input_scale = scale;
    md.seed = SEED; md.init_gain = INIT_GAIN;
    if (cq_robot_controller_create_mlp(&md, &mlp) != CQ_SUCCESS) goto robot_error;
    P = cq_robot_controller_params(mlp);
    theta = (double *)calloc((size_t)P, sizeof *theta);
    theta0 = (double *)calloc((size_t)P, sizeof *theta0);
    best.n = P;
    best.params = (double *)calloc((size_t)P, sizeof *best.params);
    best.grad = (double *)calloc((size_t)P, sizeof *best.grad);
    grad = (double *)calloc((size_t)P, sizeof *grad);
    losses = (double *)calloc((size_t)iters, sizeof *losses);
    if (!theta || !theta0 || !best.params || !grad || !best.grad || !losses) goto oom;
    cq_robot_controller_init_params(mlp, theta);
    memcpy(theta0, theta, sizeof(double) * (size_t)P);

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = P; od.learning_rate = LEARNING_RATE; od.clip_norm = CLIP_NORM;
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) goto robot_error;

    printf("walker: %d particles (%d actuated), grid %dx%d, %d steps x %d substeps (%.2f s), "
           "MLP %d-%d-%d (%d params)%s\n",
           rob.n, n_act, RESX, RESY, steps, SUBSTEPS, steps * SUBSTEPS * DT, n_obs + 2 * md.phase_harmonics, HIDDEN,
           md.outputs, P, args.quick ? ", quick" : "");

    /* ---- optimise: rollout (forward + reverse) -> dL/dtheta -> Adam */
    memset(&rd, 0, sizeof rd);
    rd.steps = steps; rd.controller = mlp; rd.params = theta; rd.observer = obs; rd.actuators = act;
    rd.final_loss = final_loss; rd.final_user = &lc;
    rd.action_penalty = ACTION_PENALTY; rd.reset = 1;
    memset(&ro, 0, sizeof ro);
    ro.grad_params = grad;
    xs = (double *)malloc(sizeof(double) * 2 * rob.n);
    if (!xs) goto oom;
    for (int it = 0; it < iters; ++it) {
        double gn = 0, walked;
        const char *note = "";
        if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) {
            /* e.g. a gait that throws a particle out of the grid: stop, keep the best params */
            fprintf(stderr, "iteration %d: %s; stopping\n", it, ro.error);
            if (best.it < 0) goto done;
            break;
        }
        cq_sim_get(sim, CQ_FIELD_X, xs);                   /* the sim stays at step T */
        walked = centroid_x(xs, rob.n) - lc.x0;
        for (int i = 0; i < P; ++i) gn += grad[i] * grad[i];
        losses[it] = ro.loss;
        done_iters = it + 1;
        /* Walking gaits have cliffs (a stumble, a fall): when a step lands far worse than the
           best so far, go back to the best params and continue with half the step size. */
        switch (cqx_best_update(&best, it, iters, ro.loss, BACKTRACK, 0.01, theta, grad, &opt, &od)) {
        case -1: goto robot_error;
        case 1: note = CQX_WENT_BACK; break;
        default: break;
        }
        printf("iteration %3d  loss %+.5f  walked %+.4f  |grad| %.2e%s\n", it, ro.loss, walked, sqrt(gn), note);
        fflush(stdout);
        if (it + 1 < iters && cq_robot_optimizer_step(opt, theta, grad) != CQ_SUCCESS) {
            fprintf(stderr, "optimizer: %s\n", cq_robot_last_error(opt));
            break;
        }
    }

    /* ---- evaluate initial and optimised controllers (forward only), recording every state */
    rec.n = rob.n; rec.steps = steps;   /* dim 2, NACT signals */
    rec.x = (double *)malloc(sizeof(double) * (size_t)(steps + 1) * 2 * rob.n);
    rec.a = (double *)malloc(sizeof(double) * (size_t)(steps + 1) * NACT);
    if (!rec.x || !rec.a) goto oom;
    rd.forward_only = 1; rd.action_penalty = 0;
    rd.running_loss = cqx_record_state; rd.running_user = &rec;
    rd.final_loss = cqx_record_final; rd.final_user = &rec;
    rd.params = theta0;
    if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) { fprintf(stderr, "%s\n", ro.error); goto done; }
    dist_init = centroid_x(rec.x + (size_t)steps * 2 * rob.n, rob.n) - lc.x0;
    rd.params = best.params;
    if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) { fprintf(stderr, "%s\n", ro.error); goto done; }
    dist_opt = centroid_x(rec.x + (size_t)steps * 2 * rob.n, rob.n) - lc.x0;

    /* ---- pictures: the optimised gait as a GIF (at most ~80 frames: every step or every 2nd, at half
       speed), its final pose over the initial one, the loss curve */
    snprintf(path, sizeof path, "%s/walker.gif", args.dir);
    mov.rob = &rob; mov.rec = &rec; mov.start_x = lc.x0;
    if (cqx_write_rollout_gif(path, IMG_W, IMG_H, steps, draw_frame, &mov, &frames) != 0) goto write_error;
    if (cq_img_init(&im, IMG_W, IMG_H) != 0) goto oom;
    draw_world(&im, lc.x0);
    draw_robot(&im, &rob, rec.x, rec.a, 1);
    draw_robot(&im, &rob, rec.x + (size_t)steps * 2 * rob.n, rec.a + (size_t)steps * NACT, 0);
    snprintf(path, sizeof path, "%s/walker_final.png", args.dir);
    if (cq_img_write_png(path, &im) != 0) goto write_error;
    snprintf(path, sizeof path, "%s/walker_loss.png", args.dir);
    if (cqx_plot_loss_labeled(path, "2D WALKER: LOSS = -DISTANCE WALKED", "LOSS", losses, done_iters, &ystep, &xstep) != 0) goto write_error;

    printf("initial controller walked %.4f, optimised walked %.4f (best of %d iterations: iteration %d; %.1f s CPU)\n",
           dist_init, dist_opt, done_iters, best.it, (double)(clock() - t_start) / CLOCKS_PER_SEC);
    printf("wrote %s/walker.gif (%d frames), %s/walker_final.png, %s/walker_loss.png (x ticks every %d iterations, "
           "y ticks every %g in loss)\n", args.dir, frames, args.dir, args.dir, xstep, ystep);
    rc = args.quick ? cqx_quick_verdict(done_iters, losses[0], losses[done_iters - 1]) : 0;
    goto done;

oom:
    fprintf(stderr, "out of memory\n");
    goto done;
robot_error:
    fprintf(stderr, "%s\n", cq_robot_last_error(NULL));
    goto done;
write_error:
    fprintf(stderr, "cannot write %s\n", path);
done:
    cq_img_free(&im);
    cq_robot_optimizer_destroy(opt);
    cq_robot_controller_destroy(mlp);
    cq_robot_observer_destroy(obs);
    cq_robot_actuators_destroy(act);
    cq_sim_destroy(sim);
    free(rob.x); free(rob.act); free(rob.obs_group);
    free(theta); free(theta0); free(best.params); free(grad); free(best.grad);
    free(xs); free(losses); free(offset); free(scale);
    free(rec.x); free(rec.a);
    return rc;
}
