/* 16_high_diving.c - DiffFR's "high diving" task (Li et al., DiffFR: Differentiable SPH-based
   Fluid-Rigid Coupling for Rigid Body Control, ACM TOG (SIGGRAPH Asia) 2023, supplement Table 2):
   a diver jumps off a platform and must enter the pool head first, turned by half a turn, at t*.
   Gradient descent on the initial angular velocity only (the jump's linear velocity is fixed),
   with the forward-mode gradient of the world (cq_world_track / cq_world_body_jacobian: DiffFR's
   localized scheme).

   Scene (2D, SI units, float64): a box [0, 0.9] x [0, 1.1] m; the platform, a static box filling
   [0.504, 0.9] x [0, 0.6]; the pool left of it, water 0.25 m deep (particle radius 7 mm: 648
   fluid particles).  The diver: a 3 x 20 cm box of density 1000, standing upright on the
   platform's edge (centre (0.524, 0.71)), jumping with v0 = (-0.7, 1.2) m/s (fixed) and turning
   counter-clockwise (forwards: head first towards the pool).  dt = 2 ms, t* = 0.45 s (225 steps):
   the moment the diver is about half in the water (its head enters at ~0.42 s), so the entry
   happens before the rotation is measured.  Initial guess w0 = 4 rad/s (a flat entry, ~95 deg).
   Loss (Table 2): L = w_rotation (theta(t*) - pi)^2, w_rotation = 1, theta = 2 atan2(q_z, q_w)
   unwrapped along the rollout (step by step), d theta/d w0 = 2 (q_w dq_z - q_z dq_w) / (q_w^2 +
   q_z^2) with dq from column w0_z of the 13 x 6 Jacobian.  Optimiser (Table 2): plain gradient
   descent, learning rate 1, halved when the loss has not improved for more than 20 iterations.
   Mapping to Table 2 (lr_v = - (v0 not optimised), lr_w = 1, w_rotation = 1, patience 20,
   theta* = Y 180 deg, t* = 2.3 s; x0, x* not given): 3D -> 2D with the rotation about z standing
   for the paper's Y; the same loss, rate and patience; the dive scaled down from a 2.3 s fall to
   a 0.45 s one (platform 0.6 m above the floor, 0.35 m above the water), the diver to 20 cm.
   The water matters: the optimum spins at ~7.08 rad/s where a dive through air only would need
   pi / t* = 6.98, and at the flat first guess the water's slap cuts d theta/d w0 to ~40% of its
   in-air value.

   Build and run from the repository root:
       cc -std=c99 -O2 examples/16_high_diving.c -o build/16_high_diving -lm
       ./build/16_high_diving [out-dir] [quick] [--size paper]
   Writes OUT/high_diving.gif (the best dive: water as dots, the platform, the diver rotated with
   the head in red) and OUT/high_diving_loss.png (log10 loss per iteration).  OUT defaults to
   "out".  "quick": 2 gradient steps and the gradient check, exit 0 only if the loss decreased.
   Full run: up to 30 iterations, stops when theta(t*) is within 2 degrees of 180 (exit nonzero if
   never).  "--size paper": r = 3.5 mm, dt = 1 ms (2592 fluid particles, 450 steps: ~8x the time;
   not run by the tests; its quick mode took 82 s wall on the shared machine, loss 2.16 -> 0.18,
   gradient-check ratio 0.54).

   At the first iteration dL/dw0 is checked against a central difference of the loss (2 extra
   rollouts, step 0.02 rad/s); exit nonzero if they have opposite signs.

   MEASURED (2026-11-22, this machine, one core, cc -std=c99 -O2):
     full run: target reached at iteration 6 (7 rollouts): theta(t*) = 179.98 deg (error 0.02 deg)
       with w0 = 7.077 rad/s; loss 2.23 -> 1.7e-7; the learning rate was never halved.  21.6 s wall
       (10.8 s CPU, the machine shared) including the 2 rollouts of the gradient check.
     gradient check at the first guess (w0 = 4, a flat entry): dL/dw0 = -1.349 (forward) vs -0.528
       (central difference), same sign, ratio 0.39: d theta/d w0 = 0.452 s (forward) vs 0.177 s.
       The localized scheme keeps only dF/dv of the fluid force, so it misses how a change of the
       entry angle changes the water's slap (the central difference sees the water resist it);
       forward mode sees nearly the in-air value t* = 0.45 s.  The direction is right and the
       descent converges anyway, its steps ~2.5x too long at first.
     quick: 11.6 s wall but 5.7 s CPU (the machine shared), loss 2.226 -> 0.245 (exit 0).
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
#define DOM_W 0.9             /* the box [0, DOM_W] x [0, DOM_H] */
#define DOM_H 1.1
#define POOL_W 0.504          /* the pool: x in [0, POOL_W] (the platform stands right of it) */
#define DEPTH 0.25            /* still water depth */
#define PLAT_TOP 0.6          /* the platform: a static box [POOL_W, DOM_W] x [0, PLAT_TOP] */
#define DIVER_HX 0.015        /* the diver: a 3 x 20 cm box, head at +y in its frame */
#define DIVER_HY 0.10
#define DIVER_DENSITY 1000.0
#define T_STAR 0.45           /* target time, s: the diver is half in the water */
#define THETA_STAR PI         /* half a turn, counter-clockwise: head first, forwards */
#define LR_W 1.0              /* Table 2: lr_w, w_rotation, patience */
#define W_ROT 1.0
#define PATIENCE 20
#define TOL_TH (2 * PI / 180) /* the full run's success: within 2 degrees */
#define MAX_ITERS 30
#define QUICK_ITERS 3         /* losses of 3 iterates: 2 gradient steps */
#define FD_STEP 0.02          /* central-difference step, rad/s */
#define FRAMES 45             /* GIF frames over [0, t*] */
#define PX_PER_M 450.0        /* GIF scale */

static const double X0[2] = {POOL_W + 0.02, PLAT_TOP + DIVER_HY + 0.01};   /* standing at the platform's edge */
static const double V0[2] = {-0.7, 1.2};   /* the jump (not optimised), m/s */
#define W_INIT 4.0                          /* initial guess of w0, rad/s */

typedef struct scene {
    double r, dt;             /* particle radius, step */
    int steps;                /* to t* */
    int nf;                   /* fluid particles */
    double *fluid;            /* their initial positions [2 nf] */
} scene;

typedef struct record {       /* a rollout kept for the GIF */
    int frames, every, nf;
    double *fx;               /* [frames][2 nf] fluid positions */
    cq_body_state *body;      /* [frames] */
    double *theta;            /* [frames] the unwrapped angle */
} record;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the unwrapped rotation angle: theta = 2 atan2(q_z, q_w), moved by whole turns next to prev */
static double unwrap(double q_w, double q_z, double prev)
{
    const double raw = 2 * atan2(q_z, q_w);
    return prev + remainder(raw - prev, 2 * PI);
}

/* The dive with initial angular velocity w0: the angle at t* in *theta, d theta(t*)/d w0 in
   *dth (may be NULL: no gradient wanted), the centre at t* in x (may be NULL); rec (may be NULL)
   records the motion.  Nonzero on a library failure (message printed). */
static int dive(const scene *sc, double w0, double *theta, double *dth, double x[2], record *rec)
{
    cq_world_desc d;
    cq_body_desc b;
    cq_body_state s;
    cq_world *w = NULL;
    double th = 0;
    int id = 0, rc = 1;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = sc->r; d.dt = sc->dt; d.gravity[1] = -9.81;
    d.domain_hi[0] = DOM_W; d.domain_hi[1] = DOM_H;
    d.precision = CQ_PRECISION_F64;
    d.logger.func = cqx_log_warnings;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(NULL)); return 1; }
    if (cq_world_add_fluid(w, sc->nf, sc->fluid, NULL) != CQ_SUCCESS) goto done;
    memset(&b, 0, sizeof b);                                    /* the platform */
    b.shape = CQ_SHAPE_BOX; b.is_static = 1; b.friction = 0.3;
    b.half_extents[0] = (DOM_W - POOL_W) / 2; b.half_extents[1] = PLAT_TOP / 2;
    b.x[0] = (DOM_W + POOL_W) / 2; b.x[1] = PLAT_TOP / 2;
    if (cq_world_add_body(w, &b, NULL) != CQ_SUCCESS) goto done;
    memset(&b, 0, sizeof b);                                    /* the diver */
    b.shape = CQ_SHAPE_BOX; b.half_extents[0] = DIVER_HX; b.half_extents[1] = DIVER_HY;
    b.density = DIVER_DENSITY; b.friction = 0.3;
    b.x[0] = X0[0]; b.x[1] = X0[1];
    b.v[0] = V0[0]; b.v[1] = V0[1]; b.w[2] = w0;
    if (cq_world_add_body(w, &b, &id) != CQ_SUCCESS || cq_world_track(w, id) != CQ_SUCCESS) goto done;
    for (int n = 0; n <= sc->steps; ++n) {
        if (n > 0 && cq_world_step(w, 1) != CQ_SUCCESS) goto done;
        cq_world_get_body(w, id, &s);
        th = unwrap(s.q[0], s.q[3], th);
        if (rec && n % rec->every == 0 && n / rec->every < rec->frames) {
            rec->body[n / rec->every] = s;
            rec->theta[n / rec->every] = th;
            cq_world_get_fluid(w, CQ_FIELD_X, rec->fx + (size_t)(n / rec->every) * 2 * (size_t)sc->nf);
        }
    }
    *theta = th;
    if (x) { x[0] = s.x[0]; x[1] = s.x[1]; }
    if (dth) {
        /* d theta / d w0 = 2 (q_w dq_z - q_z dq_w) / (q_w^2 + q_z^2), dq from rows 3 (q_w) and 6
           (q_z), column 5 (w0 z) of the 13 x 6 Jacobian */
        double J[13 * 6];
        cq_world_body_jacobian(w, id, J);
        *dth = 2 * (s.q[0] * J[6 * 6 + 5] - s.q[3] * J[3 * 6 + 5]) / (s.q[0] * s.q[0] + s.q[3] * s.q[3]);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "chainqueen: %s\n", cq_world_last_error(w));
    cq_world_destroy(w);
    return rc;
}

/* ---- the GIF: side view, the water as dots, the platform, the diver rotated (head in red) ---- */
typedef struct view { const record *rec; const scene *sc; } view;

static int px_x(double x) { return (int)lround(x * PX_PER_M); }
static int px_y(double y) { return (int)lround((DOM_H - y) * PX_PER_M); }

static void draw_frame(cq_img *im, int f, void *user)
{
    const view *v = (const view *)user;
    const record *rec = v->rec;
    const double *fx = rec->fx + (size_t)f * 2 * (size_t)rec->nf;
    const cq_body_state *s = &rec->body[f];
    const double c = cos(rec->theta[f]), sn = sin(rec->theta[f]);
    const int step = f * rec->every < v->sc->steps ? f * rec->every : v->sc->steps;
    char buf[80];
    cq_img_clear(im, 236, 242, 248);
    cq_img_line(im, 0, px_y(DEPTH), px_x(POOL_W), px_y(DEPTH), 200, 210, 225);       /* still-water level */
    cq_img_rect(im, px_x(POOL_W), px_y(PLAT_TOP), px_x(DOM_W) - 1, px_y(0) - 1, 150, 140, 130);   /* platform */
    for (int i = 0; i < rec->nf; ++i)
        cq_img_disc(im, fx[2 * i] * PX_PER_M, (DOM_H - fx[2 * i + 1]) * PX_PER_M, v->sc->r * PX_PER_M, 40, 110, 210);
    for (double a = -DIVER_HY; a <= DIVER_HY; a += 0.5 / PX_PER_M) {                  /* the diver: strokes across */
        const int head = a > DIVER_HY - 0.035;
        const double px = s->x[0] - a * sn, py = s->x[1] + a * c;                     /* R (0, a) */
        cq_img_line(im, px_x(px + DIVER_HX * c), px_y(py + DIVER_HX * sn), px_x(px - DIVER_HX * c), px_y(py - DIVER_HX * sn),
                    head ? 210 : 240, head ? 60 : 170, head ? 50 : 120);
    }
    snprintf(buf, sizeof buf, "T = %.3f S  TURNED %.1f DEG", step * v->sc->dt, rec->theta[f] * 180 / PI);
    cq_img_text(im, 6, 6, buf, 1, 30, 30, 30);
    cq_img_text(im, 6, 16, "HIGH DIVING: HEAD FIRST (180 DEG) AT T* = 0.45 S", 1, 30, 30, 30);
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
    cqx_args args;
    int paper = 0, iters, done_iters = 0, best_it = 0, rc = 1;
    double w0 = W_INIT, th = 0, dth = 0, x[2], losses[MAX_ITERS + 2], best_w = W_INIT, best_th = 0, best_x[2] = {0, 0};
    double best_L = HUGE_VAL, first_L = 0;
    double t_start = now_s();
    char path[1024];
    scene sc;
    record rec[2];            /* the current rollout and the best one */
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;

    memset(rec, 0, sizeof rec);
    if (cqx_parse_args(argc, argv, 0, size_arg, &paper, &args)) return 1;
    iters = args.quick ? QUICK_ITERS : MAX_ITERS;
    sc.r = paper ? 0.0035 : 0.007;
    sc.dt = paper ? 0.001 : 0.002;
    sc.steps = (int)lround(T_STAR / sc.dt);
    sc.nf = 0;
    sc.fluid = (double *)malloc(sizeof(double) * 2 * (size_t)((POOL_W / (2 * sc.r) + 1) * (DEPTH / (2 * sc.r) + 1)));
    if (!sc.fluid) return 1;
    for (double py = sc.r; py < DEPTH; py += 2 * sc.r)
        for (double px = sc.r; px < POOL_W - sc.r / 2; px += 2 * sc.r) { sc.fluid[2 * sc.nf] = px; sc.fluid[2 * sc.nf + 1] = py; ++sc.nf; }
    for (int k = 0; k < 2; ++k) {
        rec[k].every = sc.steps / FRAMES; rec[k].frames = sc.steps / rec[k].every + 1; rec[k].nf = sc.nf;
        rec[k].fx = (double *)malloc(sizeof(double) * 2 * (size_t)sc.nf * (size_t)rec[k].frames);
        rec[k].body = (cq_body_state *)malloc(sizeof(cq_body_state) * (size_t)rec[k].frames);
        rec[k].theta = (double *)malloc(sizeof(double) * (size_t)rec[k].frames);
        if (!rec[k].fx || !rec[k].body || !rec[k].theta) goto done;
    }
    printf("high diving: %d fluid particles (r = %g m), %d steps of %g s to t* = %.2f s; jump v0 = (%.1f, %.1f) m/s "
           "from (%.2f, %.2f); target: turned %.0f deg\n", sc.nf, sc.r, sc.steps, sc.dt, T_STAR, V0[0], V0[1], X0[0], X0[1],
           THETA_STAR * 180 / PI);

    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = 1; od.learning_rate = LR_W;
    od.plateau_patience = PATIENCE;
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_robot_last_error(NULL)); goto done; }

    for (int it = 0; it < iters; ++it) {
        double L, g, lr = cq_robot_optimizer_learning_rate(opt);
        int reduced = 0;
        if (dive(&sc, w0, &th, &dth, x, &rec[0])) goto done;
        L = W_ROT * (th - THETA_STAR) * (th - THETA_STAR);
        g = 2 * W_ROT * (th - THETA_STAR) * dth;
        losses[it] = L;
        done_iters = it + 1;
        if (it == 0) first_L = L;
        if (L < best_L) {
            const record t = rec[0];
            rec[0] = rec[1]; rec[1] = t;
            best_L = L; best_it = it; best_w = w0; best_th = th; memcpy(best_x, x, sizeof x);
        }
        printf("iteration %2d: w0 = %.4f rad/s  turned %.2f deg at t* (centre (%.3f, %.3f))  d theta/d w0 = %.4f s  "
               "loss %.3e  lr %g\n", it, w0, th * 180 / PI, x[0], x[1], dth, L, lr);
        if (it == 0) {   /* the gradient check: central difference of the loss */
            double tp, tm, cd;
            if (dive(&sc, w0 + FD_STEP, &tp, NULL, NULL, NULL) || dive(&sc, w0 - FD_STEP, &tm, NULL, NULL, NULL)) goto done;
            cd = (W_ROT * (tp - THETA_STAR) * (tp - THETA_STAR) - W_ROT * (tm - THETA_STAR) * (tm - THETA_STAR)) / (2 * FD_STEP);
            printf("gradient check: dL/dw0 = %.4f (forward mode) vs %.4f (central difference, step %.2f): %s, ratio %.3f; "
                   "d theta/d w0 = %.4f vs %.4f s\n", g, cd, FD_STEP, g * cd > 0 ? "same direction" : "OPPOSITE", cd / g,
                   dth, (tp - tm) / (2 * FD_STEP));
            if (!(g * cd > 0)) goto done;
        }
        if (!args.quick && fabs(th - THETA_STAR) < TOL_TH) break;
        if (cq_robot_optimizer_report(opt, L, &reduced) != CQ_SUCCESS) goto done;
        if (reduced) printf("  plateau: learning rate halved to %g\n", cq_robot_optimizer_learning_rate(opt));
        if (it + 1 < iters && cq_robot_optimizer_step(opt, &w0, &g) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }

    {   /* the best dive, recorded for the GIF */
        view v;
        int frames = 0;
        v.rec = &rec[1]; v.sc = &sc;
        snprintf(path, sizeof path, "%s/high_diving.gif", args.dir);
        if (cqx_write_gif(path, (int)(DOM_W * PX_PER_M), (int)(DOM_H * PX_PER_M), 6, rec[1].frames - 1, 1, draw_frame, &v, &frames)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s (%d frames)\n", path, frames);
    }
    {
        const double *curve[1];
        curve[0] = losses;
        snprintf(path, sizeof path, "%s/high_diving_loss.png", args.dir);
        if (cqx_plot_log_loss_labeled(path, "HIGH DIVING: (THETA(T*) - PI)^2", "LOSS (RAD^2)", 1, NULL, curve, done_iters, LINE, DOT)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        printf("wrote %s\n", path);
    }
    printf("best: iteration %d, w0 = %.4f rad/s: turned %.2f deg at t* (error %+.2f deg), centre (%.3f, %.3f) (water at "
           "%.2f m); %d iterations, %.1f s in all\n", best_it, best_w, best_th * 180 / PI, (best_th - THETA_STAR) * 180 / PI,
           best_x[0], best_x[1], DEPTH, done_iters, now_s() - t_start);
    if (args.quick) rc = cqx_quick_verdict(done_iters, first_L, best_L);
    else {
        rc = fabs(best_th - THETA_STAR) < TOL_TH ? 0 : 1;
        printf("target %s (tolerance %.0f deg)\n", rc ? "NOT reached" : "reached", TOL_TH * 180 / PI);
    }
done:
    for (int k = 0; k < 2; ++k) { free(rec[k].fx); free(rec[k].body); free(rec[k].theta); }
    free(sc.fluid);
    cq_robot_optimizer_destroy(opt);
    return rc;
}
