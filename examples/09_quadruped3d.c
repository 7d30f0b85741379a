/* 09_quadruped3d.c - a small 3D soft quadruped learns to walk in +x: a box body on four legs,
   each leg split front/back into two halves with vertical (y) pressure actuators, driven by a
   closed-loop tanh MLP (inputs: sin/cos gait phase + heights, sideways positions and velocities
   of the body and leg-half centroids), trained with reverse-mode gradients through the whole 3D
   MLS-MPM rollout and Adam.  The 3D sibling of 03_walker.c.

   Build and run, from the repository root:
       cc -O2 examples/09_quadruped3d.c -o build/quad -lm && ./build/quad [out-dir] [iterations] [quick] [large]
   Arguments in any order: a directory (default "out", created if missing), the number of Adam
   iterations (default 36), "quick" (a tiny run for tests: 0.3 s horizon, 4 iterations; exits
   nonzero unless its loss decreased) and "large" (or "--size paper" / "--size=paper"): a robot
   8x the particles on a grid 2x finer per axis, closer to the size of the paper's 3D quadruped.
   That size is meant for a GPU: on one CPU core each iteration takes ~16x as long as the default.
   Prints loss and distance walked per iteration, then the distance walked by the initial and by
   the optimised controller, and writes OUT/quadruped.gif (the optimised gait, orthographic side
   view x-y, particles shaded by depth z: nearer = brighter, drawn last) and OUT/quadruped_loss.png
   (loss per iteration).  Default (f32, 928 particles, 48x24x24 grid, 400 substeps of 2 ms per
   rollout): ~110 s CPU on one core at -O2, walking ~0.29 (vs ~0.002 initially); quick: ~5 s.

   Loss = -(mean particle x at T - mean particle x at 0) + 1e-5 sum_n |a_n|^2.  As in the walker,
   an iteration landing more than 10% worse than the best so far sends the optimiser back to the
   best parameters with half the step; the "optimised" controller is the best iterate. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, loss plot, GIF, keep-the-best bookkeeping */

/* ---- world: a RESX x RESY x RESZ grid, domain [0, 1) x [0, 0.5) x [0, 0.5) in both sizes (dx =
   1/48, or 1/96 for "large"), y up; the outer 3 node layers are walls with Coulomb friction. */
#define WALL 3
#define GRAVITY 9.8
#define FRICTION 0.5
#define YOUNGS 50.0           /* soft, unit density (as the walker) */
#define POISSON 0.3
#define MAX_STRESS 20.0       /* actuation stress at |a| = 1: 40% of E */
#define NLEG 4
#define NACT 8                /* actuator groups: leg l (back-left, back-right, front-left, front-right) x half h (rear, front) */

/* ---- robot, in lattice units of s = dx/2 (times the size factor k): body 16 x 4 x 10 on four
   legs 4 x 6 x 3 at the corners (x: length, y: height, z: depth) */
#define BODY_L 16
#define BODY_H 4
#define BODY_D 10
#define LEG_W 4
#define LEG_H 6
#define LEG_D 3
#define X0 0.10               /* rear edge of the robot */

/* ---- controller and optimisation */
#define STEPS 80              /* control steps per rollout: 0.8 s of simulated time */
#define ITERS 36
#define LEARNING_RATE 0.01
#define CLIP_NORM 1.0
#define BACKTRACK 0.1
#define ACTION_PENALTY 1e-5
#define OMEGA 0.2             /* phase rate per control step of 10 ms: a 0.31 s gait period */
#define HIDDEN 32
#define INIT_GAIN 0.5
#define SEED 1
#define QUICK_STEPS 30
#define QUICK_ITERS 4
#define X_CAP 0.62            /* no reward for centroid x beyond this (front edge stays ~0.1 further, walls at 0.94) */

/* ---- pictures: 640 px per metre, the domain's x-y face */
#define PX_PER_M 640.0
#define IMG_W 640
#define IMG_H 320

typedef struct config {
    int k;                    /* size factor: 1 default, 2 large */
    int res[3];
    double dx, dt;
    int substeps;
} config;

typedef struct robot {
    int n;
    double *x;                /* initial positions [3n] */
    int *act;                 /* actuator group per particle (-1 = body) */
    int *obs_group;           /* observer group: 0 = body, 1 + actuator group for leg halves */
    double zmin, zmax;        /* depth range, for shading */
} robot;

/* Fills a box of nx x ny x nz lattice points of spacing s starting at (x0, y0, z0). */
static void add_box(robot *r, double s, double x0, double y0, double z0, int nx, int ny, int nz, int act)
{
    for (int i = 0; i < nx; ++i)
        for (int j = 0; j < ny; ++j)
            for (int l = 0; l < nz; ++l) {
                r->x[3 * r->n] = x0 + (i + 0.5) * s;
                r->x[3 * r->n + 1] = y0 + (j + 0.5) * s;
                r->x[3 * r->n + 2] = z0 + (l + 0.5) * s;
                r->act[r->n] = act;
                r->obs_group[r->n] = act + 1;
                r->n++;
            }
}

static int build_robot(robot *r, const config *c)
{
    const int k = c->k;
    const double s = 0.5 * c->dx;
    const double y0 = WALL * c->dx + 0.2 * s;                       /* feet just above the floor */
    const double z0 = 0.5 * c->res[2] * c->dx - 0.5 * BODY_D * k * s;   /* centred in z */
    const int cap = k * k * k * (BODY_L * BODY_H * BODY_D + NLEG * LEG_W * LEG_H * LEG_D);
    r->n = 0;
    r->x = (double *)malloc(sizeof(double) * 3 * (size_t)cap);
    r->act = (int *)malloc(sizeof(int) * (size_t)cap);
    r->obs_group = (int *)malloc(sizeof(int) * (size_t)cap);
    if (!r->x || !r->act || !r->obs_group) return -1;
    add_box(r, s, X0, y0 + LEG_H * k * s, z0, BODY_L * k, BODY_H * k, BODY_D * k, -1);      /* body */
    for (int leg = 0; leg < NLEG; ++leg) {
        const double lx = X0 + (leg < 2 ? 0 : (BODY_L - LEG_W) * k * s);
        const double lz = z0 + (leg % 2 == 0 ? 0 : (BODY_D - LEG_D) * k * s);
        for (int h = 0; h < 2; ++h)
            add_box(r, s, lx + h * (LEG_W / 2) * k * s, y0, lz, (LEG_W / 2) * k, LEG_H * k, LEG_D * k, 2 * leg + h);
    }
    r->zmin = z0; r->zmax = z0 + BODY_D * k * s;
    return 0;
}

static double centroid_x(const double *x, int n)
{
    double s = 0;
    for (int p = 0; p < n; ++p) s += x[3 * p];
    return s / n;
}

/* ---- loss: -(mean x at T - mean x at 0), capped at X_CAP (keeps the robot off the far wall) */
typedef struct loss_ctx { double x0; } loss_ctx;
static double final_loss(const cq_robot_state *s, double *dL_dx, double *dL_dv, void *user)
{
    const loss_ctx *c = (const loss_ctx *)user;
    const double cx = centroid_x(s->x, s->particles);
    (void)dL_dv;
    if (cx >= X_CAP) return -(X_CAP - c->x0);
    for (int p = 0; p < s->particles; ++p) dL_dx[3 * p] = -1.0 / s->particles;
    return -(cx - c->x0);
}

/* ---- drawing: orthographic side view (looking along -z), depth-sorted */
static int px_x(double x) { return (int)floor(x * PX_PER_M + 0.5); }
static int px_y(double y) { return IMG_H - (int)floor(y * PX_PER_M + 0.5); }

static void draw_world(cq_img *im, const config *c, double start_x)
{
    const int floor_top = px_y(WALL * c->dx), wall_r = px_x((c->res[0] - WALL) * c->dx);
    cq_img_clear(im, 245, 243, 235);
    cq_img_rect(im, 0, floor_top, IMG_W - 1, IMG_H - 1, 90, 90, 100);                     /* floor */
    for (int k = 1; k < 10 * c->res[0] * c->dx; ++k)                                      /* marks every 0.1 */
        cq_img_rect(im, px_x(0.1 * k), floor_top, px_x(0.1 * k), floor_top + (k % 5 ? 3 : 8), 230, 230, 230);
    cq_img_rect(im, 0, 0, px_x(WALL * c->dx) - 1, floor_top - 1, 200, 200, 205);         /* side walls */
    cq_img_rect(im, wall_r, 0, IMG_W - 1, floor_top - 1, 200, 200, 205);
    cq_img_line(im, px_x(start_x), 0, px_x(start_x), floor_top - 1, 170, 170, 170);     /* start line */
}

static const double *g_sort_x;   /* qsort context: positions of the frame being drawn */
static int by_z(const void *a, const void *b)
{
    const double za = g_sort_x[3 * *(const int *)a + 2], zb = g_sort_x[3 * *(const int *)b + 2];
    return za < zb ? -1 : (za > zb ? 1 : 0);
}

/* Body green; each leg half by its signal: grey at a = 0, red towards a = 1, blue towards -1.
   Depth shading: far (small z) dark, near (large z) bright; drawn far to near. */
static void draw_robot(cq_img *im, const robot *r, const config *c, int *order, const double *x, const double *a)
{
    const double radius = 0.36 * c->dx * PX_PER_M + 0.3;
    const double span = r->zmax - r->zmin;
    for (int p = 0; p < r->n; ++p) order[p] = p;
    g_sort_x = x;
    qsort(order, (size_t)r->n, sizeof *order, by_z);
    for (int q = 0; q < r->n; ++q) {
        const int p = order[q];
        double col[3] = {60, 150, 95}, t = (x[3 * p + 2] - r->zmin) / span, shade;
        if (r->act[p] >= 0) {
            double s = a[r->act[p]];
            s = s > 1 ? 1 : (s < -1 ? -1 : s);
            col[0] = 170 + 80 * s; col[1] = 170 - 90 * fabs(s); col[2] = 170 - 80 * s;
        }
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
        shade = 0.45 + 0.55 * t;
        cq_img_disc(im, x[3 * p] * PX_PER_M, IMG_H - x[3 * p + 1] * PX_PER_M, radius,
                    (unsigned char)(col[0] * shade), (unsigned char)(col[1] * shade), (unsigned char)(col[2] * shade));
    }
    {   /* centroid marker, in the floor */
        const int cx = px_x(centroid_x(x, r->n)), top = px_y(WALL * c->dx);
        cq_img_rect(im, cx - 1, top + 2, cx + 1, top + 9, 250, 200, 40);
    }
}

/* one GIF frame: the recorded state of step f */
typedef struct movie { const robot *rob; const config *cfg; const cqx_recorder *rec; int *order; double start_x; } movie;
static void draw_frame(cq_img *im, int f, void *user)
{
    const movie *m = (const movie *)user;
    draw_world(im, m->cfg, m->start_x);
    draw_robot(im, m->rob, m->cfg, m->order, m->rec->x + (size_t)f * 3 * m->rob->n, m->rec->a + (size_t)f * NACT);
}

/* the size arguments: "large", "--size paper" or "--size=paper" */
static int size_arg(int argc, char **argv, int *i, void *user)
{
    int *large = (int *)user;
    if (strcmp(argv[*i], "large") == 0 || strcmp(argv[*i], "--size=paper") == 0) *large = 1;
    else if (strcmp(argv[*i], "--size") == 0 && *i + 1 < argc) { ++*i; *large = strcmp(argv[*i], "paper") == 0; }
    else return 0;
    return 1;
}

int main(int argc, char **argv)
{
    cqx_args args;
    int large = 0, iters, steps, rc = 1, n_obs, n_act = 0;
    config cfg;
    robot rob = {0, NULL, NULL, NULL, 0, 0};
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
    cqx_recorder rec = {0, 3, NACT, 0, NULL, NULL};
    cqx_best best = {0, HUGE_VAL, -1, NULL, NULL};
    movie mov;
    double *theta = NULL, *theta0 = NULL, *grad = NULL;
    double *xs = NULL, *losses = NULL, *offset = NULL, *scale = NULL, *o0 = NULL, *v0 = NULL;
    double dist_init = 0, dist_opt = 0, ystep = 1;
    int hidden[1] = {HIDDEN}, P, done_iters = 0, xstep = 1, frames = 0;
    int *order = NULL;
    char path[1024];
    clock_t t_start = clock();

    if (cqx_parse_args(argc, argv, 1, size_arg, &large, &args)) return 1;
    steps = args.quick ? QUICK_STEPS : STEPS;
    iters = args.iters >= 0 ? args.iters : args.quick ? QUICK_ITERS : ITERS;
    if (iters < 1) iters = 1;
    /* The default robot is small enough for one CPU core.  "large" / --size paper: 8x the
       particles (7424) on a 96x48x48 grid with dx/2 and dt/2: closer to the paper's 3D
       quadruped, a size meant for a GPU (on the CPU, ~16x the time per iteration). */
    cfg.k = large ? 2 : 1;
    cfg.res[0] = 48 * cfg.k; cfg.res[1] = 24 * cfg.k; cfg.res[2] = 24 * cfg.k;
    cfg.dx = 1.0 / (48 * cfg.k);
    cfg.dt = 2e-3 / cfg.k;            /* stability: dt < dx sqrt(rho/E) = 2.9e-3 / k */
    cfg.substeps = 5 * cfg.k;         /* one control step = 10 ms */
    if (build_robot(&rob, &cfg) != 0) { fprintf(stderr, "out of memory\n"); goto done; }
    lc.x0 = centroid_x(rob.x, rob.n);
    for (int p = 0; p < rob.n; ++p) n_act += rob.act[p] >= 0;

    /* ---- the simulator: 3D, f32, friction walls, a tape with checkpoints every ~sqrt(T) steps */
    memset(&d, 0, sizeof d);
    d.dim = 3; d.res[0] = cfg.res[0]; d.res[1] = cfg.res[1]; d.res[2] = cfg.res[2];
    d.dx = cfg.dx; d.dt = cfg.dt; d.substeps = cfg.substeps;
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
    if (cq_robot_actuators_create(3, NACT, ad, &act) != CQ_SUCCESS) goto robot_error;

    /* ---- observer: centroid (x, y, z, vx, vy, vz) of the body and of each leg half */
    if (cq_robot_observer_create_centroid(3, rob.n, rob.obs_group, NACT + 1, &obs) != CQ_SUCCESS) goto robot_error;
    n_obs = cq_robot_observer_size(obs);

    /* ---- controller: tanh MLP, inputs = observations (absolute x ignored; y, z relative to the
       start, 10 cm -> 1; velocities, 1 m/s -> 1) + sin/cos phase (2 harmonics) */
    offset = (double *)calloc((size_t)n_obs, sizeof *offset);
    scale = (double *)calloc((size_t)n_obs, sizeof *scale);
    o0 = (double *)calloc((size_t)n_obs, sizeof *o0);
    v0 = (double *)calloc((size_t)rob.n * 3, sizeof *v0);
    if (!offset || !scale || !o0 || !v0) goto oom;
    {
        const cq_result r = cq_robot_observer_observe(obs, rob.x, v0, o0);
        if (r != CQ_SUCCESS) { fprintf(stderr, "observer: %s\n", cq_result_string(r)); goto done; }
        for (int g = 0; g <= NACT; ++g) {
            offset[6 * g + 1] = o0[6 * g + 1];
            offset[6 * g + 2] = o0[6 * g + 2];
            scale[6 * g + 0] = 0;
            scale[6 * g + 1] = scale[6 * g + 2] = 10;
            scale[6 * g + 3] = scale[6 * g + 4] = scale[6 * g + 5] = 1;
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

    printf("quadruped3d: %d particles (%d actuated), grid %dx%dx%d, %d steps x %d substeps (%.2f s), "
           "MLP %d-%d-%d (%d params)%s%s\n",
           rob.n, n_act, cfg.res[0], cfg.res[1], cfg.res[2], steps, cfg.substeps, steps * cfg.substeps * cfg.dt,
           n_obs + 2 * md.phase_harmonics, HIDDEN, md.outputs, P, large ? ", large (paper-like) size" : "",
           args.quick ? ", quick" : "");

    /* ---- optimise: rollout (forward + reverse) -> dL/dtheta -> Adam */
    memset(&rd, 0, sizeof rd);
    rd.steps = steps; rd.controller = mlp; rd.params = theta; rd.observer = obs; rd.actuators = act;
    rd.final_loss = final_loss; rd.final_user = &lc;
    rd.action_penalty = ACTION_PENALTY; rd.reset = 1;
    memset(&ro, 0, sizeof ro);
    ro.grad_params = grad;
    xs = (double *)malloc(sizeof(double) * 3 * rob.n);
    if (!xs) goto oom;
    for (int it = 0; it < iters; ++it) {
        double gn = 0, walked;
        const char *note = "";
        if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) {
            /* e.g. a gait that throws a particle out of the grid: go back to the best params
               with half the step (the failed iteration is not plotted) */
            fprintf(stderr, "iteration %d: %s\n", it, ro.error);
            if (best.it < 0 || it + 1 >= iters) break;
            printf("iteration %3d  failed%s\n", it, CQX_WENT_BACK);
            if (cqx_go_back(&best, theta, NULL, &opt, &od)) goto robot_error;
            if (cq_robot_optimizer_step(opt, theta, best.grad) != CQ_SUCCESS) break;
            continue;
        }
        cq_sim_get(sim, CQ_FIELD_X, xs);
        walked = centroid_x(xs, rob.n) - lc.x0;
        for (int i = 0; i < P; ++i) gn += grad[i] * grad[i];
        losses[done_iters++] = ro.loss;
        switch (cqx_best_update(&best, it, iters, ro.loss, BACKTRACK, 0.01, theta, grad, &opt, &od)) {
        case -1: goto robot_error;
        case 1: note = CQX_WENT_BACK; break;
        default: break;
        }
        printf("iteration %3d  loss %+.5f  walked %+.4f  |grad| %.2e  (%.1f s)%s\n", it, ro.loss, walked, sqrt(gn),
               (double)(clock() - t_start) / CLOCKS_PER_SEC, note);
        fflush(stdout);
        if (it + 1 < iters && cq_robot_optimizer_step(opt, theta, grad) != CQ_SUCCESS) {
            fprintf(stderr, "optimizer: %s\n", cq_robot_last_error(opt));
            break;
        }
    }

    if (best.it < 0) { fprintf(stderr, "no successful rollout\n"); goto done; }

    /* ---- evaluate initial and optimised controllers (forward only), recording every state */
    rec.n = rob.n; rec.steps = steps;   /* dim 3, NACT signals */
    rec.x = (double *)malloc(sizeof(double) * (size_t)(steps + 1) * 3 * rob.n);
    rec.a = (double *)malloc(sizeof(double) * (size_t)(steps + 1) * NACT);
    order = (int *)malloc(sizeof(int) * (size_t)rob.n);
    if (!rec.x || !rec.a || !order) goto oom;
    rd.forward_only = 1; rd.action_penalty = 0;
    rd.running_loss = cqx_record_state; rd.running_user = &rec;
    rd.final_loss = cqx_record_final; rd.final_user = &rec;
    rd.params = theta0;
    if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) { fprintf(stderr, "%s\n", ro.error); goto done; }
    dist_init = centroid_x(rec.x + (size_t)steps * 3 * rob.n, rob.n) - lc.x0;
    rd.params = best.params;
    if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) { fprintf(stderr, "%s\n", ro.error); goto done; }
    dist_opt = centroid_x(rec.x + (size_t)steps * 3 * rob.n, rob.n) - lc.x0;

    /* ---- pictures: the optimised gait (at most ~80 frames, half speed), the loss curve */
    snprintf(path, sizeof path, "%s/quadruped.gif", args.dir);
    mov.rob = &rob; mov.cfg = &cfg; mov.rec = &rec; mov.order = order; mov.start_x = lc.x0;
    if (cqx_write_rollout_gif(path, IMG_W, IMG_H, steps, draw_frame, &mov, &frames) != 0) goto write_error;
    snprintf(path, sizeof path, "%s/quadruped_loss.png", args.dir);
    if (cqx_plot_loss_labeled(path, "3D QUADRUPED: LOSS = -DISTANCE WALKED", "LOSS", losses, done_iters, &ystep, &xstep) != 0) goto write_error;

    printf("initial walked %.4f, optimised walked %.4f (best of %d iterations: iteration %d; %.1f s CPU)\n",
           dist_init, dist_opt, done_iters, best.it, (double)(clock() - t_start) / CLOCKS_PER_SEC);
    printf("wrote %s/quadruped.gif (%d frames), %s/quadruped_loss.png (x ticks every %d iterations, "
           "y ticks every %g in loss)\n", args.dir, frames, args.dir, xstep, ystep);
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
    cq_robot_optimizer_destroy(opt);
    cq_robot_controller_destroy(mlp);
    cq_robot_observer_destroy(obs);
    cq_robot_actuators_destroy(act);
    cq_sim_destroy(sim);
    free(rob.x); free(rob.act); free(rob.obs_group);
    free(theta); free(theta0); free(best.params); free(grad); free(best.grad);
    free(xs); free(losses); free(offset); free(scale); free(o0); free(v0);
    free(rec.x); free(rec.a); free(order);
    return rc;
}
