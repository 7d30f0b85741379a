/* 05_billiards.c - physical parameter inference (ChainQueen (Hu et al., ICRA 2019) sec V.A): ball A is shot at ball B
   on a frictionless table (top view, no gravity); gradient descent on A's density, through the
   collision, makes B end up at a target point C.

   Build and run from the repository root:
       cc -O2 examples/05_billiards.c -o build/billiards -lm && ./build/billiards [out-dir] [quick]
   The target is where B ends up when A's density is 2.26 (so it is reachable); the optimisation
   starts from density 1 and only sees |x_B(T) - C|^2 and its gradient.  dL/d(density) is
   cq_sim_grad(CQ_FIELD_MASS) summed over A's particles times d(mass)/d(density) = the particle
   volume.  Adam with box bounds [0.5, 5], learning rate halved every 8 iterations.  Writes
   OUT/billiards.gif (the optimised shot), OUT/billiards_first.png and OUT/billiards_final.png
   (last frame with the initial guess and with the optimised density) and OUT/billiards_loss.png
   (log10 loss per iteration).  OUT defaults to "out".  "quick" runs 4 iterations (a few
   seconds) and exits nonzero unless the loss dropped.
   Default: 30 iterations, well under a minute on one core at -O2. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, log callback, loss plot */

#define RES 64                /* grid cells per axis; the table is [0, 1)^2 */
#define WALL 3                /* wall thickness in cells (library default) */
#define SUBSTEPS 40           /* substeps per cq_sim_step (one GIF frame = 4 ms) */
#define DT 1e-4               /* substep; stable for densities >= 0.5 at E = 5e3 */
#define STEPS 75              /* steps: 0.3 s of simulated time */
#define CKPT 10               /* checkpoint every 10 steps (~sqrt(STEPS)) */
#define RADIUS 0.06
#define YOUNGS 5e3
#define TRUE_DENSITY 2.26     /* generates the target; the optimiser never sees it */
#define INIT_DENSITY 1.0
#define DENSITY_LO 0.5
#define DENSITY_HI 5.0
#define LR0 0.15              /* Adam learning rate (density units per step at first) ... */
#define LR_EVERY 8            /* ... halved every 8 iterations: the gradient shrinks 1000x near the answer */
#define IMG 320
#define MAXP 2048

static const double A0[2] = {0.18, 0.465}, B0[2] = {0.42, 0.50}, VA[2] = {2.0, 0.0};

/* disc of particles on the dx/2 lattice (matching the default volume (dx/2)^2) */
static int disc(double *x, double *v, double cx, double cy, double vx, double vy)
{
    const double h = 0.5 / RES;
    int n = 0;
    for (double px = cx - RADIUS + h / 2; px < cx + RADIUS; px += h)
        for (double py = cy - RADIUS + h / 2; py < cy + RADIUS; py += h)
            if ((px - cx) * (px - cx) + (py - cy) * (py - cy) < RADIUS * RADIUS && n < MAXP / 2) {
                x[2 * n] = px; x[2 * n + 1] = py; v[2 * n] = vx; v[2 * n + 1] = vy; ++n;
            }
    return n;
}

typedef struct scene {
    cq_sim *sim;
    int nA, nB, n;
    double *x, *mass, *gmass, vol;
} scene;

/* centroid of particles [first, first + count) */
static void centroid(const double *x, int first, int count, double *c)
{
    c[0] = c[1] = 0;
    for (int p = first; p < first + count; ++p) { c[0] += x[2 * p]; c[1] += x[2 * p + 1]; }
    c[0] /= count; c[1] /= count;
}

/* Runs the shot with A's density rho; returns B's final centroid in cB.  With grad != NULL
   also runs the reverse pass for L = |cB - target|^2 and writes dL/drho. */
static int shoot(scene *s, double rho, const double *target, double *cB, double *loss, double *grad)
{
    double *seed;
    for (int p = 0; p < s->n; ++p) s->mass[p] = (p < s->nA ? rho : 1.0) * s->vol;
    if (cq_sim_reset(s->sim) || cq_sim_set(s->sim, CQ_FIELD_MASS, s->mass) || cq_sim_step(s->sim, STEPS) ||
        cq_sim_get(s->sim, CQ_FIELD_X, s->x))
        return 1;
    centroid(s->x, s->nA, s->nB, cB);
    if (loss) *loss = (cB[0] - target[0]) * (cB[0] - target[0]) + (cB[1] - target[1]) * (cB[1] - target[1]);
    if (!grad) return 0;
    seed = (double *)calloc((size_t)s->n * 2, sizeof *seed);
    if (!seed) return 1;
    for (int p = s->nA; p < s->n; ++p) {            /* dL/dx_p = 2 (cB - target) / nB for p in B */
        seed[2 * p] = 2 * (cB[0] - target[0]) / s->nB;
        seed[2 * p + 1] = 2 * (cB[1] - target[1]) / s->nB;
    }
    if (cq_sim_backward(s->sim, seed, NULL, NULL, NULL, NULL, NULL) || cq_sim_grad(s->sim, CQ_FIELD_MASS, s->gmass)) {
        free(seed);
        return 1;
    }
    *grad = 0;
    for (int p = 0; p < s->nA; ++p) *grad += s->gmass[p] * s->vol;   /* d mass_p / d rho = volume */
    free(seed);
    return 0;
}

static void render(cq_img *im, const double *x, int nA, int n, const double *target, const double *trail, int ntrail)
{
    const int wall_px = (int)(WALL * (double)IMG / RES + 0.5);
    const int tx = (int)(target[0] * IMG), ty = (int)((1 - target[1]) * IMG);
    cq_img_clear(im, 40, 110, 70);                                       /* felt */
    cq_img_rect(im, 0, 0, IMG - 1, wall_px - 1, 110, 70, 40);            /* cushions */
    cq_img_rect(im, 0, IMG - wall_px, IMG - 1, IMG - 1, 110, 70, 40);
    cq_img_rect(im, 0, 0, wall_px - 1, IMG - 1, 110, 70, 40);
    cq_img_rect(im, IMG - wall_px, 0, IMG - 1, IMG - 1, 110, 70, 40);
    for (int i = 1; i < ntrail; ++i)                                      /* B's path so far */
        cq_img_line(im, (int)(trail[2 * i - 2] * IMG), (int)((1 - trail[2 * i - 1]) * IMG),
                    (int)(trail[2 * i] * IMG), (int)((1 - trail[2 * i + 1]) * IMG), 200, 200, 120);
    for (int p = 0; p < n; ++p) {
        if (p < nA) cq_img_disc(im, x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, 2.0, 220, 60, 50);
        else cq_img_disc(im, x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, 2.0, 245, 240, 220);
    }
    for (int k = 0; k < 24; ++k) {                                        /* target C: ring + cross, on top */
        double a0 = k * 6.283185307179586 / 24, a1 = (k + 1) * 6.283185307179586 / 24;
        cq_img_line(im, tx + (int)lround(8 * cos(a0)), ty + (int)lround(8 * sin(a0)), tx + (int)lround(8 * cos(a1)),
                    ty + (int)lround(8 * sin(a1)), 20, 20, 20);
    }
    cq_img_line(im, tx - 5, ty, tx + 5, ty, 20, 20, 20);
    cq_img_line(im, tx, ty - 5, tx, ty + 5, 20, 20, 20);
}

/* Re-runs the shot frame by frame into a GIF (when gif != NULL) and writes the last frame as a PNG. */
static int animate(scene *s, double rho, const double *target, cq_gif *gif, const char *png)
{
    double trail[2 * (STEPS + 1)], c[2];
    cq_img im;
    int rc = 1;
    if (cq_img_init(&im, IMG, IMG)) return 1;
    for (int p = 0; p < s->n; ++p) s->mass[p] = (p < s->nA ? rho : 1.0) * s->vol;
    if (cq_sim_reset(s->sim) || cq_sim_set(s->sim, CQ_FIELD_MASS, s->mass)) goto done;
    for (int f = 0; f <= STEPS; ++f) {
        if (f > 0 && cq_sim_step(s->sim, 1)) goto done;
        cq_sim_get(s->sim, CQ_FIELD_X, s->x);
        centroid(s->x, s->nA, s->nB, c);
        trail[2 * f] = c[0]; trail[2 * f + 1] = c[1];
        if (gif || f == STEPS) render(&im, s->x, s->nA, s->n, target, trail, f + 1);
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
    double x[2 * MAXP], v[2 * MAXP], target[2], cB[2], rho = INIT_DENSITY;
    double mass[MAXP], gmass[MAXP], losses[64], lo = DENSITY_LO, hi = DENSITY_HI;
    char path[1024];
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;
    cq_gif gif;
    const double *curve[1];
    scene s;

    curve[0] = losses;
    if (cqx_parse_args(argc, argv, 0, NULL, NULL, &args)) return 1;
    iters = args.quick ? 4 : 30;
    memset(&gif, 0, sizeof gif);
    memset(&s, 0, sizeof s);

    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = RES; d.dx = 1.0 / RES; d.dt = DT; d.substeps = SUBSTEPS;
    d.boundary = CQ_BOUNDARY_SLIP;          /* frictionless cushions; gravity 0: top view */
    d.precision = CQ_PRECISION_F64;         /* ChainQueen (Hu et al., ICRA 2019) case B is float64 */
    d.checkpoint_every = CKPT;
    d.logger.func = cqx_log_terse;   /* warnings and errors */
    if (cq_sim_create(&d, &s.sim) != CQ_SUCCESS) return 1;

    s.nA = disc(x, v, A0[0], A0[1], VA[0], VA[1]);
    s.nB = disc(x + 2 * s.nA, v + 2 * s.nA, B0[0], B0[1], 0, 0);
    s.n = s.nA + s.nB;
    s.x = x; s.mass = mass; s.gmass = gmass; s.vol = (0.5 / RES) * (0.5 / RES);
    memset(&pd, 0, sizeof pd);
    pd.count = s.n; pd.x = x; pd.v = v; pd.default_youngs = YOUNGS; pd.default_poisson = 0.3;
    if (cq_sim_add_particles(s.sim, &pd) != CQ_SUCCESS) goto done;
    printf("ball A: %d particles, shot at %.1f m/s; ball B: %d particles; %d steps of %d x %g s\n", s.nA, VA[0],
           s.nB, STEPS, SUBSTEPS, DT);

    /* the target C: where B stops when A has the (hidden) true density */
    if (shoot(&s, TRUE_DENSITY, B0, target, NULL, NULL)) goto done;
    printf("target C = (%.4f, %.4f)  (B starts at (%.2f, %.2f))\n", target[0], target[1], B0[0], B0[1]);

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = 1; od.lo = &lo; od.hi = &hi;
    for (int it = 0; it < iters; ++it) {
        double loss, g;
        if (shoot(&s, rho, target, cB, &loss, &g)) goto done;
        losses[it] = loss;
        printf("iteration %2d: density %.4f  loss %.3e  |x_B - C| %.4f  dL/drho %+.3e\n", it, rho, loss, sqrt(loss), g);
        if (it % LR_EVERY == 0) {   /* step decay: a fresh Adam (moments reset) with half the learning rate */
            cq_robot_optimizer_destroy(opt);
            od.learning_rate = LR0 * pow(0.5, it / LR_EVERY);
            if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) {
                fprintf(stderr, "%s\n", cq_robot_last_error(NULL));
                goto done;
            }
        }
        if (it + 1 < iters && cq_robot_optimizer_step(opt, &rho, &g) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }
    printf("initial loss %.3e (density %.2f), final loss %.3e (density %.4f; the target was made with %.2f)\n",
           losses[0], INIT_DENSITY, losses[iters - 1], rho, TRUE_DENSITY);

    snprintf(path, sizeof path, "%s/billiards_loss.png", args.dir);
    if (cqx_plot_log_loss_labeled(path, "BILLIARDS: SQUARED MISS OF BALL B", "LOSS", 1, NULL, curve, iters, BLUE, RED)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    snprintf(path, sizeof path, "%s/billiards_first.png", args.dir);
    if (animate(&s, INIT_DENSITY, target, NULL, path)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    snprintf(path, sizeof path, "%s/billiards.gif", args.dir);
    if (cq_gif_begin(&gif, path, IMG, IMG, 4)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    snprintf(path, sizeof path, "%s/billiards_final.png", args.dir);
    if (animate(&s, rho, target, &gif, path) || cq_gif_end(&gif)) {
        fprintf(stderr, "cannot write the pictures\n");
        goto done;
    }
    printf("wrote %s/billiards.gif, billiards_first.png, billiards_final.png, billiards_loss.png\n", args.dir);

    if (losses[iters - 1] < losses[0]) {
        printf("loss decreased: %.3e -> %.3e\n", losses[0], losses[iters - 1]);
        rc = 0;
    } else {
        printf("loss did NOT decrease: %.3e -> %.3e\n", losses[0], losses[iters - 1]);
    }
done:
    if (rc && s.sim && cq_sim_last_error(s.sim)[0]) fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(s.sim));
    cq_gif_end(&gif);
    cq_robot_optimizer_destroy(opt);
    cq_sim_destroy(s.sim);
    return rc;
}
