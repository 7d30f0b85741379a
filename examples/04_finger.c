/* 04_finger.c - a 2D soft finger driven by two cables (Spielberg et al. (Robotica 2021) eqs 16-17) learns, open loop, to
   put its tip on a target point: one cable runs up the left edge, one up the right edge, the
   base is planted in the sticky floor, and Adam tunes the two cable signals of every step
   (learning rate halved every 10 iterations).

   Build and run from the repository root:
       cc -O2 examples/04_finger.c -o build/finger -lm && ./build/finger [out-dir] [quick]
   Loss: |tip(T) - target|^2, the tip being the centroid of the top two particle rows.  Its
   gradient w.r.t. the cable signals u_n comes from cq_sim_cable_actuation_grad inside the
   cq_sim_backward hook.  Writes OUT/finger.gif (the optimised motion), OUT/finger_first.png and
   OUT/finger_final.png (pose at T before and after optimising) and OUT/finger_loss.png (log10
   loss per iteration); OUT defaults to "out".  "quick" runs 3 iterations (a few seconds) and
   exits nonzero unless the loss dropped.  Default: 40 iterations, about a minute on one core. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, log callback, loss plot */

#define RES 64                /* grid cells per axis; the domain is [0, 1)^2, y up */
#define WALL 3                /* wall thickness in cells (library default): sticky floor below y = 3/64 */
#define NX 12                 /* particles across the finger (spacing dx/2: 0.094 wide) */
#define NY 62                 /* particles along it (0.48 tall, the bottom 4 rows inside the floor) */
#define SUBSTEPS 25           /* substeps per cq_sim_step = per control signal */
#define DT 2e-4               /* substep; stability limit dx sqrt(rho/E) = 2.9e-4 */
#define STEPS 60              /* control steps: 0.3 s of simulated time */
#define CKPT 8                /* checkpoint every 8 steps (~sqrt(STEPS)) */
#define YOUNGS 3e3
#define CABLE_K 400.0         /* cable stiffness k: force per unit of stretch */
#define U_INIT 0.97           /* both cables a little tight at first (u = 1: just taut, no force, zero gradient) */
#define U_LO 0.75             /* u in [0.75, 1]: a cable may shorten by up to 25% */
#define U_HI 1.0
#define LR 0.005              /* Adam learning rate (signal units) ... */
#define LR_EVERY 10           /* ... halved (a fresh Adam) every 10 iterations: settles instead of jittering */
#define IMG 320

static const double TARGET[2] = {0.30, 0.42};

typedef struct finger {
    cq_sim *sim;
    int n, route[2][NY];      /* particle indices of the left and right cable */
    int nroute;
    double *x, *F, *seed, *grad;   /* grad: dL/du, STEPS x 2 */
} finger;

static int pid(int i, int j) { return j * NX + i; }   /* particle of column i, row j */

/* tip = centroid of the top two rows */
static void tip(const double *x, double *t)
{
    t[0] = t[1] = 0;
    for (int j = NY - 2; j < NY; ++j)
        for (int i = 0; i < NX; ++i) { t[0] += x[2 * pid(i, j)]; t[1] += x[2 * pid(i, j) + 1]; }
    t[0] /= 2 * NX; t[1] /= 2 * NX;
}

/* backward hook: collect dL/du_n of both cables for step n */
static void hook(cq_sim *sim, int step, void *user)
{
    finger *f = (finger *)user;
    (void)cq_sim_cable_actuation_grad(sim, f->grad + 2 * step);   /* cannot fail here */
}

/* Rolls out the open-loop signals u[STEPS * 2]; returns the loss, fills grad when asked. */
static int rollout(finger *f, const double *u, double *loss, double *tip_out, int want_grad)
{
    double t[2];
    if (cq_sim_reset(f->sim)) return 1;
    for (int n = 0; n < STEPS; ++n)
        if (cq_sim_set_cable_actuation(f->sim, 2, u + 2 * n) || cq_sim_step(f->sim, 1)) return 1;
    if (cq_sim_get(f->sim, CQ_FIELD_X, f->x)) return 1;
    tip(f->x, t);
    *loss = (t[0] - TARGET[0]) * (t[0] - TARGET[0]) + (t[1] - TARGET[1]) * (t[1] - TARGET[1]);
    if (tip_out) { tip_out[0] = t[0]; tip_out[1] = t[1]; }
    if (!want_grad) return 0;
    memset(f->seed, 0, sizeof(double) * 2 * f->n);
    for (int j = NY - 2; j < NY; ++j)
        for (int i = 0; i < NX; ++i) {
            f->seed[2 * pid(i, j)] = 2 * (t[0] - TARGET[0]) / (2 * NX);
            f->seed[2 * pid(i, j) + 1] = 2 * (t[1] - TARGET[1]) / (2 * NX);
        }
    return cq_sim_backward(f->sim, f->seed, NULL, NULL, NULL, hook, f) != CQ_SUCCESS;
}

static unsigned char shade(unsigned char c, double s)
{
    double v = c * s;
    return (unsigned char)(v > 255 ? 255 : v);
}

static void render(cq_img *im, const finger *f, const double *u, const double *trail, int ntrail)
{
    const int wall_px = (int)(WALL * (double)IMG / RES + 0.5);
    const int tx = (int)(TARGET[0] * IMG), ty = (int)((1 - TARGET[1]) * IMG);
    const double *x = f->x;
    cq_img_clear(im, 245, 243, 235);
    cq_img_rect(im, 0, IMG - wall_px, IMG - 1, IMG - 1, 90, 90, 100);     /* sticky floor */
    for (int p = 0; p < f->n; ++p) {                                    /* shaded by det F */
        const double *F = f->F + 4 * p;
        double s = 1 + 4 * (F[0] * F[3] - F[1] * F[2] - 1);
        s = s < 0.55 ? 0.55 : (s > 1.35 ? 1.35 : s);
        cq_img_disc(im, x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, 2.0, shade(90, s), shade(150, s), shade(200, s));
    }
    for (int c = 0; c < 2; ++c) {                                       /* cables: redder = pulled harder */
        double a = u ? (1 - u[c]) / (1 - U_LO) : 0;
        unsigned char r = (unsigned char)(120 + 135 * (a > 1 ? 1 : a)), g = (unsigned char)(60 * (1 - (a > 1 ? 1 : a)));
        for (int k = 1; k < f->nroute; ++k) {
            int p = f->route[c][k - 1], q = f->route[c][k];
            cq_img_line(im, (int)(x[2 * p] * IMG), (int)((1 - x[2 * p + 1]) * IMG), (int)(x[2 * q] * IMG),
                        (int)((1 - x[2 * q + 1]) * IMG), r, g, 40);
        }
    }
    for (int i = 1; i < ntrail; ++i)                                    /* tip path */
        cq_img_line(im, (int)(trail[2 * i - 2] * IMG), (int)((1 - trail[2 * i - 1]) * IMG), (int)(trail[2 * i] * IMG),
                    (int)((1 - trail[2 * i + 1]) * IMG), 40, 40, 40);
    cq_img_line(im, tx - 7, ty - 7, tx + 7, ty + 7, 20, 150, 40);       /* target: green X */
    cq_img_line(im, tx - 7, ty + 7, tx + 7, ty - 7, 20, 150, 40);
    cq_img_line(im, tx - 6, ty - 7, tx + 8, ty + 7, 20, 150, 40);
    cq_img_line(im, tx - 6, ty + 7, tx + 8, ty - 7, 20, 150, 40);
}

/* Replays u frame by frame into gif (when not NULL) and writes the pose at T to png. */
static int animate(finger *f, const double *u, cq_gif *gif, const char *png)
{
    double trail[2 * (STEPS + 1)];
    cq_img im;
    int rc = 1;
    if (cq_img_init(&im, IMG, IMG)) return 1;
    if (cq_sim_reset(f->sim)) goto done;
    for (int n = 0; n <= STEPS; ++n) {
        if (n > 0 && (cq_sim_set_cable_actuation(f->sim, 2, u + 2 * (n - 1)) || cq_sim_step(f->sim, 1))) goto done;
        cq_sim_get(f->sim, CQ_FIELD_X, f->x);
        cq_sim_get(f->sim, CQ_FIELD_F, f->F);
        tip(f->x, trail + 2 * n);
        if (gif || n == STEPS) render(&im, f, n > 0 ? u + 2 * (n - 1) : NULL, trail, n + 1);
        if (gif && cq_gif_frame(gif, &im)) goto done;
    }
    rc = cq_img_write_png(png, &im);
done:
    cq_img_free(&im);
    return rc;
}

int main(int argc, char **argv)
{
    cqx_args args;
    static const unsigned char BLUE[1][3] = {{30, 90, 200}}, RED[1][3] = {{200, 50, 40}};   /* loss plot */
    int iters, rc = 1;
    static double x[2 * NX * NY], F[4 * NX * NY], seed[2 * NX * NY];
    double u[2 * STEPS], grad[2 * STEPS], lo[2 * STEPS], hi[2 * STEPS], losses[128], t[2];
    char path[1024];
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;
    cq_gif gif;
    const double *curve[1];
    finger f;

    curve[0] = losses;
    if (cqx_parse_args(argc, argv, 0, NULL, NULL, &args)) return 1;
    iters = args.quick ? 3 : 40;
    memset(&gif, 0, sizeof gif);
    memset(&f, 0, sizeof f);

    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = RES; d.dx = 1.0 / RES; d.dt = DT; d.substeps = SUBSTEPS;
    d.gravity[1] = -9.8;
    d.boundary = CQ_BOUNDARY_STICKY;       /* the base rows sit inside the sticky floor: clamped */
    d.precision = CQ_PRECISION_F64;
    d.checkpoint_every = CKPT;
    d.logger.func = cqx_log_terse;   /* warnings and errors */
    if (cq_sim_create(&d, &f.sim) != CQ_SUCCESS) return 1;

    /* the finger: NX x NY particles at spacing dx/2, centred on x = 0.5, from y = dx (in the floor) */
    for (int j = 0; j < NY; ++j)
        for (int i = 0; i < NX; ++i) {
            x[2 * pid(i, j)] = 0.5 + (i + 0.5 - NX / 2.0) * (0.5 / RES);
            x[2 * pid(i, j) + 1] = 1.0 / RES + (j + 0.5) * (0.5 / RES);
        }
    f.n = NX * NY; f.x = x; f.F = F; f.seed = seed; f.grad = grad;
    memset(&pd, 0, sizeof pd);
    pd.count = f.n; pd.x = x; pd.default_youngs = YOUNGS; pd.default_poisson = 0.3;
    if (cq_sim_add_particles(f.sim, &pd) != CQ_SUCCESS) goto done;

    /* two cables, one particle in from each edge, from inside the floor to the top row; rest
       length = the route's initial length, so u = 1 is just taut and u < 1 pulls */
    f.nroute = NY - 2;
    for (int c = 0; c < 2; ++c) {
        int col = c == 0 ? 1 : NX - 2;
        for (int k = 0; k < f.nroute; ++k) f.route[c][k] = pid(col, k + 2);
        if (cq_sim_add_cable(f.sim, f.nroute, f.route[c], CABLE_K, (f.nroute - 1) * (0.5 / RES)) != CQ_SUCCESS)
            goto done;
    }
    tip(x, t);
    printf("finger: %d particles, 2 cables of %d particles; tip at (%.3f, %.3f), target (%.3f, %.3f)\n", f.n,
           f.nroute, t[0], t[1], TARGET[0], TARGET[1]);
    printf("%d steps of %d x %g s; %d open-loop signals\n", STEPS, SUBSTEPS, DT, 2 * STEPS);

    for (int k = 0; k < 2 * STEPS; ++k) { u[k] = U_INIT; lo[k] = U_LO; hi[k] = U_HI; }
    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = 2 * STEPS; od.lo = lo; od.hi = hi;

    snprintf(path, sizeof path, "%s/finger_first.png", args.dir);
    if (animate(&f, u, NULL, path)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    for (int it = 0; it < iters; ++it) {
        double gn = 0;
        if (rollout(&f, u, &losses[it], t, 1)) goto done;
        for (int k = 0; k < 2 * STEPS; ++k) gn += grad[k] * grad[k];
        printf("iteration %2d: loss %.3e  tip (%.4f, %.4f)  tip distance %.4f  |grad| %.2e\n", it, losses[it], t[0],
               t[1], sqrt(losses[it]), sqrt(gn));
        fflush(stdout);
        if (it % LR_EVERY == 0) {
            cq_robot_optimizer_destroy(opt);
            od.learning_rate = LR * pow(0.5, it / LR_EVERY);
            if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) {
                fprintf(stderr, "%s\n", cq_robot_last_error(NULL));
                goto done;
            }
        }
        if (it + 1 < iters && cq_robot_optimizer_step(opt, u, grad) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }
    printf("initial loss %.3e (tip distance %.4f), final loss %.3e (tip distance %.4f)\n", losses[0], sqrt(losses[0]),
           losses[iters - 1], sqrt(losses[iters - 1]));

    snprintf(path, sizeof path, "%s/finger_loss.png", args.dir);
    if (cqx_plot_log_loss_labeled(path, "FINGER: SQUARED TIP DISTANCE TO TARGET", "LOSS", 1, NULL, curve, iters, BLUE, RED)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    snprintf(path, sizeof path, "%s/finger.gif", args.dir);
    if (cq_gif_begin(&gif, path, IMG, IMG, 5)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    snprintf(path, sizeof path, "%s/finger_final.png", args.dir);
    if (animate(&f, u, &gif, path) || cq_gif_end(&gif)) { fprintf(stderr, "cannot write the pictures\n"); goto done; }
    printf("wrote %s/finger.gif, finger_first.png, finger_final.png, finger_loss.png\n", args.dir);

    if (losses[iters - 1] < losses[0]) {
        printf("loss decreased: %.3e -> %.3e\n", losses[0], losses[iters - 1]);
        rc = 0;
    } else {
        printf("loss did NOT decrease: %.3e -> %.3e\n", losses[0], losses[iters - 1]);
    }
done:
    if (rc && f.sim && cq_sim_last_error(f.sim)[0]) fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(f.sim));
    cq_gif_end(&gif);
    cq_robot_optimizer_destroy(opt);
    cq_sim_destroy(f.sim);
    return rc;
}
