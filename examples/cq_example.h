/* cq_example.h - the plumbing shared by the numbered examples (not part of the library):
   command-line arguments and the output directory, log callbacks, loss-curve plots, the GIF of
   a recorded rollout, and the keep-the-best / go-back-and-halve-the-step bookkeeping of the
   walking examples.  Header-only: every function is static (inline, so that an example need not
   use all of them), C99 and C++.  Include it after chainqueen.h; the parts that need
   chainqueen_robot.h or cq_image.h are compiled when those headers were included first:

       #define CHAINQUEEN_IMPLEMENTATION
       #include "../chainqueen.h"
       #define CHAINQUEEN_ROBOT_IMPLEMENTATION      (optional)
       #include "../chainqueen_robot.h"
       #define CQ_IMAGE_IMPLEMENTATION              (optional)
       #include "cq_image.h"
       #include "cq_example.h"

   The physics, the robot, the loss and the optimisation each example teaches stay in the
   example; only what several examples repeated word for word lives here. */
#ifndef CQ_EXAMPLE_H
#define CQ_EXAMPLE_H

#ifndef CHAINQUEEN_H
#error "include chainqueen.h before cq_example.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <direct.h>
#define CQX_MKDIR(path) _mkdir(path)
#else
#include <sys/stat.h>
#define CQX_MKDIR(path) mkdir((path), 0777)
#endif

/* ---- command line and output directory ------------------------------------------------- */

/* Creates dir unless it exists; prints why and returns nonzero when it cannot. */
static inline int cqx_make_dir(const char *dir)
{
    if (CQX_MKDIR(dir) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create directory %s: %s\n", dir, strerror(errno));
        return 1;
    }
    return 0;
}

static inline int cqx_is_number(const char *s)
{
    if (!*s) return 0;
    for (; *s; ++s)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

typedef struct cqx_args {
    const char *dir;          /* output directory: "out" unless given */
    int quick;                /* "quick": the short test run */
    int iters;                /* a number argument (when the example takes one), else -1 */
} cqx_args;

/* Reads the arguments, in any order: "quick", a number of iterations (only when take_iters;
   otherwise a number is a directory name) and the output directory.  extra (may be NULL) sees
   each other argument first and returns 1 when it took it (it may advance *i past a value).
   Then creates the directory.  Returns nonzero (having said why) when that fails. */
static inline int cqx_parse_args(int argc, char **argv, int take_iters,
                                 int (*extra)(int argc, char **argv, int *i, void *user), void *user, cqx_args *a)
{
    a->dir = "out";
    a->quick = 0;
    a->iters = -1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "quick") == 0) a->quick = 1;
        else if (extra && extra(argc, argv, &i, user)) continue;
        else if (take_iters && cqx_is_number(argv[i])) a->iters = atoi(argv[i]);
        else a->dir = argv[i];
    }
    return cqx_make_dir(a->dir);
}

/* ---- log callbacks for cq_sim_desc.logger (library messages go to stderr) -------------- */

static inline const char *cqx_level_name(cq_log_level level)
{
    return level == CQ_LOG_ERROR ? "error" : level == CQ_LOG_WARNING ? "warning" : "info";
}

/* every message, with its level */
static inline void cqx_log_all(cq_log_level level, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "chainqueen %s: %s\n", cqx_level_name(level), msg);
}

/* warnings and errors, with their level (which backend was chosen is not news here) */
static inline void cqx_log_warnings(cq_log_level level, const char *msg, void *user)
{
    if (level == CQ_LOG_INFO) return;
    cqx_log_all(level, msg, user);
}

/* "chainqueen: message" for every message at least as severe as the level user points to
   (NULL: warnings and errors) */
static inline void cqx_log_terse(cq_log_level level, const char *msg, void *user)
{
    const cq_log_level worst = user ? *(const cq_log_level *)user : CQ_LOG_WARNING;
    if (level <= worst) fprintf(stderr, "chainqueen: %s\n", msg);
}

/* ---- quick runs ----------------------------------------------------------------------------- */

/* The verdict of a quick run on its loss, first -> last: prints it, returns the exit code. */
static inline int cqx_quick_verdict(int iters_done, double first, double last)
{
    const int ok = iters_done > 1 && last < first;
    printf("loss decreased: %s (%.5f -> %.5f)\n", ok ? "yes" : "no", first, last);
    return ok ? 0 : 1;
}

#ifdef CQ_IMAGE_H
/* ---- pictures ------------------------------------------------------------------------------- */

/* A round tick spacing (1, 2 or 5 times a power of 10) giving 3 to 10 ticks over range. */
static inline double cqx_nice_step(double range)
{
    double step = pow(10, floor(log10(range)));
    while (range / step < 3) step *= range / step < 1.5 ? 0.2 : 0.5;   /* 1 -> 0.5 -> 0.2 -> 0.1 ... */
    return step;
}

/* A tick value as short text: 0.05, -1.2, 1500, 2E-05. */
static inline void cqx_tick_text(char *buf, size_t cap, double v, double step)
{
    if (fabs(v) < 1e-12 * (step > 0 ? step : 1)) v = 0;
    if (v != 0 && (fabs(v) >= 1e5 || fabs(v) < 1e-3)) snprintf(buf, cap, "%.0E", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, cap, "%.*f", dec > 6 ? 6 : dec, v);
    }
}

/* Title (top, scale 2 when it fits), the y axis's name above it, the x axis's name below. */
static inline void cqx_plot_frame_text(cq_img *im, const char *title, const char *xlabel, const char *ylabel, int L, int B)
{
    const int ts = cq_img_text_width(title, 2) <= im->w - 8 ? 2 : 1;
    cq_img_text(im, (im->w - cq_img_text_width(title, ts)) / 2, 4, title, ts, 20, 20, 20);
    cq_img_text(im, 4, ts == 2 ? 22 : 14, ylabel, 1, 60, 60, 60);
    cq_img_text(im, L + (im->w - L - cq_img_text_width(xlabel, 1)) / 2, B + 20, xlabel, 1, 60, 60, 60);
}

/* A legend entry k at the top right: a short line in its colour and its name. */
static inline void cqx_plot_legend(cq_img *im, int k, const char *name, const unsigned char rgb[3], int right, int top)
{
    const int w = cq_img_text_width(name, 1), x = right - w - 22, y = top + 4 + 12 * k;
    cq_img_rect(im, x - 4, y - 2, right - 2, y + 8, 255, 255, 255);
    cq_img_line(im, x, y + 3, x + 14, y + 3, rgb[0], rgb[1], rgb[2]);
    cq_img_line(im, x, y + 4, x + 14, y + 4, rgb[0], rgb[1], rgb[2]);
    cq_img_text(im, x + 18, y, name, 1, 30, 30, 30);
}

/* Loss curve: x = iteration, y = loss; red = the loss of each iteration, blue = the best so far,
   grey = loss 0; title, axis names, tick values and a legend.  *xstep and *ystep get the tick
   spacing (iterations, loss).  560 x 360 PNG; nonzero when it cannot be written. */
static inline int cqx_plot_loss_labeled(const char *path, const char *title, const char *ylabel, const double *loss,
                                        int iters, double *ystep, int *xstep)
{
    static const unsigned char RED[3] = {210, 40, 40}, BLUE[3] = {60, 90, 220};
    const int W = 560, H = 360, L = 70, R = 20, T = 40, B = 45;
    double lo = 0, hi = 0, best = 0;
    cq_img im = {0, 0, NULL};
    char buf[32];
    int rc;
    if (cq_img_init(&im, W, H) != 0) return -1;
    cq_img_clear(&im, 255, 255, 255);
    for (int i = 0; i < iters; ++i) {
        if (i == 0 || loss[i] < lo) lo = loss[i];
        if (i == 0 || loss[i] > hi) hi = loss[i];
    }
    if (hi - lo < 1e-6) { hi += 0.5e-3; lo -= 0.5e-3; }
    {   const double pad = 0.05 * (hi - lo); hi += pad; lo -= pad; }
    *ystep = cqx_nice_step(hi - lo);
    *xstep = iters > 50 ? 10 : (iters > 10 ? 5 : 1);
#define CQX_PLOT_X(i) (L + (int)((double)(i) / (iters > 1 ? iters - 1 : 1) * (W - L - R) + 0.5))
#define CQX_PLOT_Y(v) (T + (int)((hi - (v)) / (hi - lo) * (H - T - B) + 0.5))
    for (double v = ceil(lo / *ystep) * *ystep; v <= hi; v += *ystep) {      /* y ticks, grid, values */
        cq_img_line(&im, L + 1, CQX_PLOT_Y(v), W - R, CQX_PLOT_Y(v), 232, 232, 232);
        cq_img_line(&im, L - 5, CQX_PLOT_Y(v), L, CQX_PLOT_Y(v), 0, 0, 0);
        cqx_tick_text(buf, sizeof buf, v, *ystep);
        cq_img_text(&im, L - 8 - cq_img_text_width(buf, 1), CQX_PLOT_Y(v) - 3, buf, 1, 40, 40, 40);
    }
    for (int i = 0; i < iters; i += *xstep) {                               /* x ticks, values every 5th */
        const int major = i % (5 * *xstep) == 0 || *xstep >= 5;
        cq_img_line(&im, CQX_PLOT_X(i), H - B, CQX_PLOT_X(i), H - B + (major ? 8 : 4), 0, 0, 0);
        if (major || iters <= 12) {
            snprintf(buf, sizeof buf, "%d", i);
            cq_img_text(&im, CQX_PLOT_X(i) - cq_img_text_width(buf, 1) / 2, H - B + 10, buf, 1, 40, 40, 40);
        }
    }
    if (lo < 0 && hi > 0) cq_img_line(&im, L + 1, CQX_PLOT_Y(0.0), W - R, CQX_PLOT_Y(0.0), 150, 150, 150);
    cq_img_line(&im, L, T, L, H - B, 0, 0, 0);                              /* axes */
    cq_img_line(&im, L, H - B, W - R, H - B, 0, 0, 0);
    for (int i = 0; i < iters; ++i) {
        const double prev = best;
        best = i == 0 || loss[i] < best ? loss[i] : best;
        if (i > 0) {
            cq_img_line(&im, CQX_PLOT_X(i - 1), CQX_PLOT_Y(prev), CQX_PLOT_X(i), CQX_PLOT_Y(best), BLUE[0], BLUE[1], BLUE[2]);
            cq_img_line(&im, CQX_PLOT_X(i - 1), CQX_PLOT_Y(loss[i - 1]), CQX_PLOT_X(i), CQX_PLOT_Y(loss[i]), RED[0], RED[1], RED[2]);
        }
        cq_img_disc(&im, CQX_PLOT_X(i), CQX_PLOT_Y(loss[i]), iters > 60 ? 1.0 : 2.0, RED[0], RED[1], RED[2]);
    }
#undef CQX_PLOT_X
#undef CQX_PLOT_Y
    cqx_plot_frame_text(&im, title, "ITERATION", ylabel, L, H - B);
    cqx_plot_legend(&im, 0, "loss", RED, W - R, T);
    cqx_plot_legend(&im, 1, "best so far", BLUE, W - R, T);
    rc = cq_img_write_png(path, &im);
    cq_img_free(&im);
    return rc;
}

static inline int cqx_plot_loss(const char *path, const double *loss, int iters, double *ystep, int *xstep)
{
    return cqx_plot_loss_labeled(path, "LOSS PER ITERATION", "LOSS", loss, iters, ystep, xstep);
}

static inline double cqx_log10(double v) { return log10(v > 1e-30 ? v : 1e-30); }

/* log10(loss) per iteration of nseries curves of n points, one grid line and value per decade;
   curve k is drawn in line[k] with a dot of colour dot[k] at each iteration and named names[k]
   in the legend (names may be NULL).  560 x 360 PNG; nonzero when it cannot be written. */
static inline int cqx_plot_log_loss_labeled(const char *path, const char *title, const char *ylabel, int nseries,
                                            const char *const *names, const double *const *loss, int n,
                                            const unsigned char (*line)[3], const unsigned char (*dot)[3])
{
    const int W = 560, H = 360, L = 60, R = W - 20, T = 40, B = H - 45;
    double lo = 1e300, hi = -1e300;
    cq_img im;
    char buf[32];
    int rc, xstep = n > 50 ? 10 : (n > 10 ? 5 : 1);
    if (cq_img_init(&im, W, H)) return 1;
    cq_img_clear(&im, 250, 250, 250);
    for (int k = 0; k < nseries; ++k)
        for (int i = 0; i < n; ++i) {
            if (cqx_log10(loss[k][i]) < lo) lo = cqx_log10(loss[k][i]);
            if (cqx_log10(loss[k][i]) > hi) hi = cqx_log10(loss[k][i]);
        }
    lo = floor(lo); hi = ceil(hi);
    if (hi <= lo) hi = lo + 1;
    for (double d = lo; d <= hi + 1e-9; d += 1) {                         /* one line and value per decade */
        int y = B - (int)((d - lo) / (hi - lo) * (B - T));
        cq_img_line(&im, L, y, R, y, 215, 215, 215);
        snprintf(buf, sizeof buf, "1E%+d", (int)d);
        cq_img_text(&im, L - 6 - cq_img_text_width(buf, 1), y - 3, buf, 1, 40, 40, 40);
    }
    for (int i = 0; i < n; i += xstep) {                                  /* iteration ticks and values */
        int px = L + (n > 1 ? (int)((double)i / (n - 1) * (R - L)) : 0);
        cq_img_line(&im, px, B, px, B + 5, 0, 0, 0);
        snprintf(buf, sizeof buf, "%d", i);
        cq_img_text(&im, px - cq_img_text_width(buf, 1) / 2, B + 8, buf, 1, 40, 40, 40);
    }
    cq_img_line(&im, L, B, R, B, 0, 0, 0);
    cq_img_line(&im, L, T, L, B, 0, 0, 0);
    for (int k = 0; k < nseries; ++k)
        for (int i = 0; i < n; ++i) {
            int px = L + (n > 1 ? (int)((double)i / (n - 1) * (R - L)) : 0);
            int py = B - (int)((cqx_log10(loss[k][i]) - lo) / (hi - lo) * (B - T));
            if (i > 0) {
                int qx = L + (int)((double)(i - 1) / (n - 1) * (R - L));
                int qy = B - (int)((cqx_log10(loss[k][i - 1]) - lo) / (hi - lo) * (B - T));
                cq_img_line(&im, qx, qy, px, py, line[k][0], line[k][1], line[k][2]);
            }
            cq_img_disc(&im, px, py, 2.5, dot[k][0], dot[k][1], dot[k][2]);
        }
    cqx_plot_frame_text(&im, title, "ITERATION", ylabel, L, B);
    for (int k = 0; names && k < nseries; ++k) cqx_plot_legend(&im, k, names[k], line[k], R, T);
    rc = cq_img_write_png(path, &im);
    cq_img_free(&im);
    return rc;
}

static inline int cqx_plot_log_loss(const char *path, int nseries, const double *const *loss, int n,
                                    const unsigned char (*line)[3], const unsigned char (*dot)[3])
{
    return cqx_plot_log_loss_labeled(path, "LOSS PER ITERATION (LOG SCALE)", "LOSS", nseries, NULL, loss, n, line, dot);
}

/* A w x h GIF of the frames f = 0, every, 2 every, ... <= last, delay centiseconds each:
   draw(im, f, user) paints frame f.  *frames (may be NULL) gets the number written.  Nonzero
   when the file cannot be written. */
static inline int cqx_write_gif(const char *path, int w, int h, int delay, int last, int every,
                                void (*draw)(cq_img *im, int f, void *user), void *user, int *frames)
{
    cq_img im = {0, 0, NULL};
    cq_gif gif;
    int rc = 1, count = 0;
    memset(&gif, 0, sizeof gif);
    if (cq_img_init(&im, w, h) != 0) return 1;
    if (cq_gif_begin(&gif, path, w, h, delay) != 0) goto done;
    for (int f = 0; f <= last; f += every) {
        draw(&im, f, user);
        if (cq_gif_frame(&gif, &im) != 0) goto done;
        ++count;
    }
    rc = 0;
done:
    if (cq_gif_end(&gif) != 0) rc = 1;
    cq_img_free(&im);
    if (frames) *frames = count;
    return rc;
}

/* The GIF of a recorded rollout of steps control steps: at most ~80 frames (every step, or
   every 2nd, ...) at 2 centiseconds per step shown; draw(im, f, user) paints the state of step f. */
static inline int cqx_write_rollout_gif(const char *path, int w, int h, int steps,
                                        void (*draw)(cq_img *im, int f, void *user), void *user, int *frames)
{
    const int every = (steps + 1) / 80 + 1;
    return cqx_write_gif(path, w, h, 2 * every, steps, every, draw, user, frames);
}

/* The side view of a walking world filling im (width_m metres wide, y up): the floor, wall
   pixels thick, with marks every 0.1 (longer every 0.5), the side walls and a grey start line at
   x = start_x. */
static inline void cqx_draw_side_world(cq_img *im, double width_m, int wall, double start_x)
{
    const int W = im->w, H = im->h;
#define CQX_PX(x) ((int)floor((x) / width_m * W + 0.5))
    cq_img_clear(im, 245, 243, 235);
    cq_img_rect(im, 0, H - wall, W - 1, H - 1, 90, 90, 100);                           /* floor */
    for (int k = 1; k < 10 * width_m; ++k)                                             /* marks every 0.1 */
        cq_img_rect(im, CQX_PX(0.1 * k), H - wall, CQX_PX(0.1 * k), H - wall + (k % 5 ? 3 : 8), 230, 230, 230);
    cq_img_rect(im, 0, 0, wall - 1, H - wall - 1, 200, 200, 205);                      /* side walls */
    cq_img_rect(im, W - wall, 0, W - 1, H - wall - 1, 200, 200, 205);
    cq_img_line(im, CQX_PX(start_x), wall, CQX_PX(start_x), H - wall - 1, 170, 170, 170);   /* start line */
#undef CQX_PX
}
#endif /* CQ_IMAGE_H */

#ifdef CHAINQUEEN_ROBOT_H
/* ---- robot optimisation bookkeeping ------------------------------------------------------- */

/* Recording a forward cq_robot_rollout: a running "loss" (cqx_record_state) that is always 0 and
   keeps every state's positions and actions, and a final "loss" (cqx_record_final) that keeps
   the last state (its action repeats the last one). */
typedef struct cqx_recorder {
    int n, dim, nact, steps;  /* particles, dimension, action signals, control steps */
    double *x;                /* [(steps + 1) * dim * n] */
    double *a;                /* [(steps + 1) * nact] */
} cqx_recorder;

static inline double cqx_record_state(const cq_robot_state *s, const double *a, double *dL_da, double *dL_dx,
                                      double *dL_dv, void *user)
{
    cqx_recorder *rec = (cqx_recorder *)user;
    (void)dL_da; (void)dL_dx; (void)dL_dv;
    if (s->step <= rec->steps) {
        memcpy(rec->x + (size_t)s->step * (size_t)(rec->dim * rec->n), s->x, sizeof(double) * (size_t)(rec->dim * rec->n));
        memcpy(rec->a + (size_t)s->step * (size_t)rec->nact, a, sizeof(double) * (size_t)rec->nact);
    }
    return 0;
}

static inline double cqx_record_final(const cq_robot_state *s, double *dL_dx, double *dL_dv, void *user)
{
    cqx_recorder *rec = (cqx_recorder *)user;
    (void)dL_dx; (void)dL_dv;
    if (s->step <= rec->steps && s->step > 0) {
        memcpy(rec->x + (size_t)s->step * (size_t)(rec->dim * rec->n), s->x, sizeof(double) * (size_t)(rec->dim * rec->n));
        memcpy(rec->a + (size_t)s->step * (size_t)rec->nact, rec->a + (size_t)(s->step - 1) * (size_t)rec->nact,
               sizeof(double) * (size_t)rec->nact);
    }
    return 0;
}

/* Keep the best iterate; go back to it with half the step when an iteration lands far worse
   (gaits have cliffs: a stumble, a fall).  The caller owns params and grad [n] and the best
   copies; od->learning_rate is the current step size. */
typedef struct cqx_best {
    int n;                    /* parameters */
    double loss;              /* the best loss so far (HUGE_VAL before the first) */
    int it;                   /* its iteration (-1 before the first) */
    double *params, *grad;    /* the best parameters and their gradient [n] */
} cqx_best;

/* Restores the best parameters (and, when grad is not NULL, their gradient) and replaces *opt
   by a fresh optimiser with half the learning rate.  Nonzero when that cannot be created. */
static inline int cqx_go_back(cqx_best *b, double *params, double *grad, cq_robot_optimizer **opt,
                              cq_robot_optimizer_desc *od)
{
    od->learning_rate *= 0.5;
    memcpy(params, b->params, sizeof(double) * (size_t)b->n);
    if (grad) memcpy(grad, b->grad, sizeof(double) * (size_t)b->n);
    cq_robot_optimizer_destroy(*opt);
    *opt = NULL;
    return cq_robot_optimizer_create(od, opt) != CQ_SUCCESS;
}

/* After iteration it (of iters) with this loss at params (gradient grad): a new best is kept;
   a loss worse than the best by more than backtrack * |best| + margin goes back to the best
   (cqx_go_back; not on the last iteration).  Returns 1 when it went back, 0 when not, -1 when
   the fresh optimiser cannot be created. */
static inline int cqx_best_update(cqx_best *b, int it, int iters, double loss, double backtrack, double margin,
                                  double *params, double *grad, cq_robot_optimizer **opt, cq_robot_optimizer_desc *od)
{
    if (loss < b->loss) {
        b->loss = loss; b->it = it;
        memcpy(b->params, params, sizeof(double) * (size_t)b->n);
        memcpy(b->grad, grad, sizeof(double) * (size_t)b->n);
        return 0;
    }
    if (loss > b->loss + backtrack * fabs(b->loss) + margin && it + 1 < iters)
        return cqx_go_back(b, params, grad, opt, od) ? -1 : 1;
    return 0;
}

/* The note printed after an iteration that went back. */
#define CQX_WENT_BACK "  -> back to the best, step size halved"
#endif /* CHAINQUEEN_ROBOT_H */

#endif /* CQ_EXAMPLE_H */
