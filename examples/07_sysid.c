/* 07_sysid.c - system identification (seed 003 section 5.1): recover the Young's modulus E,
   Poisson's ratio nu and density rho of a 2D cable-driven soft finger from noisy motion capture.

   Build and run from the repository root:
       cc -O2 examples/07_sysid.c -o build/sysid -lm && ./build/sysid [out-dir] [quick]
   1. "Measurement": the finger of 04_finger.c (two cables, base planted in the sticky floor) is
      driven by a fixed cable schedule (left bend, right bend, both pulled) with the TRUE material
      (E, nu, rho uniform over the particles).  Every REC steps the centroids of 8 particle groups
      (left / right half of 4 bands along the finger) are recorded and Gaussian noise (fixed seed)
      is added: these are the only data the identification sees.
   2. Identification: from wrong guesses (as in the paper: E 25% low, rho 29% high, nu 0.30 for
      0.25), Adam with box bounds minimises L = sum over keyframes and markers of
      |marker(sim) - marker(measured)|^2.  The keyframes before the last enter as a running loss,
      added in the cq_sim_backward hook with cq_sim_add_state_grad (a marker is a mean of particle
      positions, so its error gradient is spread evenly over its group); the last one is the seed.
      dL/dE, dL/dnu and dL/dmass per particle come from cq_sim_grad and are summed over the
      particles (mass = rho * volume, so dL/drho = sum_p dL/dm_p * V_p).  The optimiser works on
      theta = (ln E, nu / 0.1, ln rho) so one learning rate fits all three.
   Writes OUT/sysid_loss.png (log10 loss per iteration on top, E, nu and rho relative to the truth
   below) and OUT/sysid.gif (truth in grey, the initial guess in orange, the identified material
   in blue, measured markers as red crosses); OUT defaults to "out".  "quick" runs 3 iterations
   (a few seconds) and exits nonzero unless the loss dropped.  Default: 50 iterations.
   STATUS: density and E are recovered (0.3% and 7% off after 50 iterations), nu is NOT: with
   this single actuation schedule nu barely changes the marker paths and trades off against E
   (it ends at 0.319 for 0.25).  The paper used several schedules; adding them (or more markers
   across the width, or a Gauss-Newton step) is the next thing to try. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <direct.h>
#define make_dir(path) _mkdir(path)
#else
#include <sys/stat.h>
#define make_dir(path) mkdir((path), 0777)
#endif

#define RES 64                /* grid cells per axis; the domain is [0, 1)^2, y up */
#define WALL 3                /* sticky floor below y = 3/64 */
#define NX 12                 /* particles across the finger (spacing dx/2) */
#define NY 62                 /* particles along it (the bottom 4 rows inside the floor) */
#define NP (NX * NY)
#define SUBSTEPS 25           /* substeps per cq_sim_step = per cable signal */
#define DT 2e-4
#define STEPS 60              /* 0.3 s of simulated time */
#define CKPT 8
#define REC 3                 /* a keyframe every 3 steps ... */
#define FRAMES (STEPS / REC)  /* ... 20 of them, the last at step STEPS */
#define NM 8                  /* tracked markers */
#define CABLE_K 400.0
#define NOISE 1.5e-3          /* marker noise (std dev per coordinate; particle spacing 7.8e-3) */
#define NU_SCALE 0.1          /* theta[1] = nu / NU_SCALE */
#define LR 0.05               /* Adam learning rate in theta units (beta1 0.7: less ringing) ... */
#define LR_EVERY 10           /* ... halved (a fresh Adam) every 10 iterations */
#define MAXIT 50
#define IMG 320

/* ground truth, the initial guess (the paper's ratios: 15/20, 0.3/0.25, 3.0/2.33) and bounds */
static const double TRUE_P[3] = {3000.0, 0.25, 1.0};      /* E, nu, rho */
static const double GUESS_P[3] = {2250.0, 0.30, 1.29};
static const double LO_P[3] = {600.0, 0.05, 0.2};           /* E and rho in [0.2, 5] x truth */
static const double HI_P[3] = {15000.0, 0.45, 5.0};

typedef struct sysid {
    cq_sim *sim;
    int marker[NP];           /* marker of each particle, -1 = untracked */
    int msize[NM];
    int route[2][NY], nroute;
    double u[2 * STEPS];      /* the fixed cable schedule */
    double meas[FRAMES][NM][2];
    double x[2 * NP], F[4 * NP], seed[2 * NP], buf[NP], vol[NP];
} sysid;

static void on_log(cq_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level <= CQ_LOG_ERROR) fprintf(stderr, "chainqueen: %s\n", msg);
}

static int pid(int i, int j) { return j * NX + i; }

static double bump(double t, double a, double b)
{
    double s;
    if (t <= a || t >= b) return 0;
    s = sin(3.14159265358979323846 * (t - a) / (b - a));
    return s * s;
}

/* deterministic standard normal: xorshift64* + Box-Muller */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;
static double uniform01(void)
{
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return ((double)((rng_state * 0x2545F4914F6CDD1DULL) >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void)
{
    double a = uniform01(), b = uniform01();
    return sqrt(-2 * log(a)) * cos(2 * 3.14159265358979323846 * b);
}

static void markers(const sysid *s, const double *x, double m[NM][2])
{
    memset(m, 0, sizeof(double) * 2 * NM);
    for (int p = 0; p < NP; ++p)
        if (s->marker[p] >= 0) { m[s->marker[p]][0] += x[2 * p]; m[s->marker[p]][1] += x[2 * p + 1]; }
    for (int k = 0; k < NM; ++k) { m[k][0] /= s->msize[k]; m[k][1] /= s->msize[k]; }
}

/* dL/dx of keyframe f's term |marker(x) - meas_f|^2, written to g */
static void marker_grad(const sysid *s, const double *x, int f, double *g)
{
    double m[NM][2];
    markers(s, x, m);
    memset(g, 0, sizeof(double) * 2 * NP);
    for (int p = 0; p < NP; ++p) {
        int k = s->marker[p];
        if (k < 0) continue;
        g[2 * p] = 2 * (m[k][0] - s->meas[f][k][0]) / s->msize[k];
        g[2 * p + 1] = 2 * (m[k][1] - s->meas[f][k][1]) / s->msize[k];
    }
}

/* running loss: keyframes at steps REC, 2 REC, ... < STEPS (s_n is visible in the hook of step n) */
static void hook(cq_sim *sim, int step, void *user)
{
    sysid *s = (sysid *)user;
    if (step == 0 || step % REC != 0) return;
    if (cq_sim_get(sim, CQ_FIELD_X, s->x) != CQ_SUCCESS) return;
    marker_grad(s, s->x, step / REC - 1, s->seed);
    (void)cq_sim_add_state_grad(sim, CQ_FIELD_X, s->seed);
}

static int set_material(sysid *s, const double *prm)
{
    int r = 0;
    for (int p = 0; p < NP; ++p) s->buf[p] = prm[0];
    r |= cq_sim_set(s->sim, CQ_FIELD_YOUNGS, s->buf);
    for (int p = 0; p < NP; ++p) s->buf[p] = prm[1];
    r |= cq_sim_set(s->sim, CQ_FIELD_POISSON, s->buf);
    for (int p = 0; p < NP; ++p) s->buf[p] = prm[2] * s->vol[p];
    r |= cq_sim_set(s->sim, CQ_FIELD_MASS, s->buf);
    return r != 0;
}

/* Simulates material prm = (E, nu, rho) under the schedule.  rec (if not NULL) gets the marker
   keyframes, traj (if not NULL) the positions at steps 0..STEPS; with meas given it returns the
   loss, and with grad also dL/d(E, nu, rho). */
static int rollout(sysid *s, const double *prm, double (*rec)[NM][2], double *traj, double *loss, double *grad)
{
    double m[NM][2], g[NP];
    if (cq_sim_reset(s->sim) || set_material(s, prm)) return 1;
    if (traj && cq_sim_get(s->sim, CQ_FIELD_X, traj)) return 1;
    if (loss) *loss = 0;
    for (int n = 1; n <= STEPS; ++n) {
        if (cq_sim_set_cable_actuation(s->sim, 2, s->u + 2 * (n - 1)) || cq_sim_step(s->sim, 1)) return 1;
        if (!traj && n % REC) continue;
        if (cq_sim_get(s->sim, CQ_FIELD_X, s->x)) return 1;
        if (traj) memcpy(traj + (size_t)2 * NP * n, s->x, sizeof s->x);
        if (n % REC) continue;
        markers(s, s->x, m);
        if (rec) memcpy(rec[n / REC - 1], m, sizeof m);
        if (loss)
            for (int k = 0; k < NM; ++k) {
                double ex = m[k][0] - s->meas[n / REC - 1][k][0], ey = m[k][1] - s->meas[n / REC - 1][k][1];
                *loss += ex * ex + ey * ey;
            }
    }
    if (!grad) return 0;
    marker_grad(s, s->x, FRAMES - 1, s->seed);      /* s->x is s_T */
    if (cq_sim_backward(s->sim, s->seed, NULL, NULL, NULL, hook, s) != CQ_SUCCESS) return 1;
    grad[0] = grad[1] = grad[2] = 0;
    if (cq_sim_grad(s->sim, CQ_FIELD_YOUNGS, g)) return 1;
    for (int p = 0; p < NP; ++p) grad[0] += g[p];
    if (cq_sim_grad(s->sim, CQ_FIELD_POISSON, g)) return 1;
    for (int p = 0; p < NP; ++p) grad[1] += g[p];
    if (cq_sim_grad(s->sim, CQ_FIELD_MASS, g)) return 1;
    for (int p = 0; p < NP; ++p) grad[2] += g[p] * s->vol[p];
    return 0;
}

/* ---- pictures ---------------------------------------------------------------------------- */
static void draw_body(cq_img *im, const double *x, double r, unsigned char cr, unsigned char cg, unsigned char cb)
{
    for (int p = 0; p < NP; ++p) cq_img_disc(im, x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, r, cr, cg, cb);
}

static void cross(cq_img *im, double x, double y, unsigned char r, unsigned char g, unsigned char b)
{
    int px = (int)(x * IMG + 0.5), py = (int)((1 - y) * IMG + 0.5);
    cq_img_line(im, px - 4, py - 4, px + 4, py + 4, r, g, b);
    cq_img_line(im, px - 4, py + 4, px + 4, py - 4, r, g, b);
    cq_img_line(im, px - 3, py - 4, px + 5, py + 4, r, g, b);
    cq_img_line(im, px - 3, py + 4, px + 5, py - 4, r, g, b);
}

/* truth (grey), initial guess (orange outline dots), identified (blue), measured markers (red) */
static int write_gif(const char *path, sysid *s, const double *tr_true, const double *tr_guess, const double *tr_fit)
{
    const int wall_px = (int)(WALL * (double)IMG / RES + 0.5);
    cq_img im;
    cq_gif gif;
    int rc = 1;
    memset(&gif, 0, sizeof gif);
    if (cq_img_init(&im, IMG, IMG)) return 1;
    if (cq_gif_begin(&gif, path, IMG, IMG, 5)) goto done;
    for (int n = 0; n <= STEPS; ++n) {
        int f = n / REC - 1;
        cq_img_clear(&im, 245, 243, 235);
        cq_img_rect(&im, 0, IMG - wall_px, IMG - 1, IMG - 1, 90, 90, 100);
        draw_body(&im, tr_true + (size_t)2 * NP * n, 2.6, 175, 175, 175);
        draw_body(&im, tr_guess + (size_t)2 * NP * n, 1.0, 235, 130, 30);
        draw_body(&im, tr_fit + (size_t)2 * NP * n, 1.3, 40, 90, 200);
        if (f >= 0)
            for (int k = 0; k < NM; ++k) cross(&im, s->meas[f][k][0], s->meas[f][k][1], 200, 30, 30);
        cq_img_rect(&im, 8, 8, 20, 14, 175, 175, 175);      /* legend swatches */
        cq_img_rect(&im, 8, 20, 20, 26, 235, 130, 30);
        cq_img_rect(&im, 8, 32, 20, 38, 40, 90, 200);
        cross(&im, 14.0 / IMG, 1 - 47.0 / IMG, 200, 30, 30);
        if (cq_gif_frame(&gif, &im)) goto done;
    }
    rc = 0;
done:
    if (cq_gif_end(&gif)) rc = 1;
    cq_img_free(&im);
    return rc;
}

/* top: log10 loss; bottom: E, nu, rho divided by their true values (1 = the dashed line) */
static int plot(const char *path, const double *loss, double (*prm)[3], int n)
{
    const int W = 480, H = 480, L = 40, R = 460, T1 = 20, B1 = 220, T2 = 260, B2 = 460;
    static const unsigned char col[3][3] = {{200, 50, 40}, {30, 150, 60}, {40, 90, 200}};
    double lo = 1e300, hi = -1e300, rlo = 0.6, rhi = 1.4;
    cq_img im;
    int rc;
    if (cq_img_init(&im, W, H)) return 1;
    cq_img_clear(&im, 250, 250, 250);
    for (int i = 0; i < n; ++i) {
        double l = log10(loss[i] > 1e-30 ? loss[i] : 1e-30);
        if (l < lo) lo = l;
        if (l > hi) hi = l;
        for (int c = 0; c < 3; ++c) {
            double r = prm[i][c] / TRUE_P[c];
            if (r < rlo) rlo = r;
            if (r > rhi) rhi = r;
        }
    }
    lo = floor(lo * 4) / 4; hi = ceil(hi * 4) / 4;
    if (hi <= lo) hi = lo + 0.25;
    for (double d = lo; d <= hi + 1e-9; d += 0.25) {
        int y = B1 - (int)((d - lo) / (hi - lo) * (B1 - T1));
        cq_img_line(&im, L, y, R, y, 215, 215, 215);
    }
    for (int k = 0; k < 2; ++k) {
        cq_img_line(&im, L, k ? B2 : B1, R, k ? B2 : B1, 0, 0, 0);
        cq_img_line(&im, L, k ? T2 : T1, L, k ? B2 : B1, 0, 0, 0);
    }
    {
        int y1 = B2 - (int)((1 - rlo) / (rhi - rlo) * (B2 - T2));
        for (int xx = L; xx < R; xx += 8) cq_img_line(&im, xx, y1, xx + 3, y1, 60, 60, 60);
    }
    for (int i = 0; i < n; ++i) {
        int px = L + (n > 1 ? (int)((double)i / (n - 1) * (R - L)) : 0);
        int qx = L + (n > 1 && i > 0 ? (int)((double)(i - 1) / (n - 1) * (R - L)) : 0);
        double l = log10(loss[i] > 1e-30 ? loss[i] : 1e-30);
        int py = B1 - (int)((l - lo) / (hi - lo) * (B1 - T1));
        if (i > 0) {
            double l0 = log10(loss[i - 1] > 1e-30 ? loss[i - 1] : 1e-30);
            cq_img_line(&im, qx, B1 - (int)((l0 - lo) / (hi - lo) * (B1 - T1)), px, py, 30, 30, 30);
        }
        cq_img_disc(&im, px, py, 2.0, 30, 30, 30);
        for (int c = 0; c < 3; ++c) {
            int ry = B2 - (int)((prm[i][c] / TRUE_P[c] - rlo) / (rhi - rlo) * (B2 - T2));
            if (i > 0) {
                int ry0 = B2 - (int)((prm[i - 1][c] / TRUE_P[c] - rlo) / (rhi - rlo) * (B2 - T2));
                cq_img_line(&im, qx, ry0, px, ry, col[c][0], col[c][1], col[c][2]);
            }
            cq_img_disc(&im, px, ry, 2.0, col[c][0], col[c][1], col[c][2]);
        }
    }
    for (int c = 0; c < 3; ++c) cq_img_rect(&im, R - 60 + 18 * c, T2 + 4, R - 50 + 18 * c, T2 + 10, col[c][0], col[c][1], col[c][2]);
    rc = cq_img_write_png(path, &im);
    cq_img_free(&im);
    return rc;
}

static double seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

int main(int argc, char **argv)
{
    static sysid s;
    static double losses[MAXIT], hist[MAXIT][3];
    const char *dir = "out";
    int quick = 0, iters, rc = 1;
    double prm[3], th[3], lo[3], hi[3], g[3], gth[3], t0 = seconds();
    double *tr_true = NULL, *tr_guess = NULL, *tr_fit = NULL;
    char path[1024];
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;

    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "quick") == 0) quick = 1;
        else dir = argv[i];
    }
    iters = quick ? 3 : MAXIT;
    if (make_dir(dir) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create directory %s: %s\n", dir, strerror(errno));
        return 1;
    }

    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = RES; d.dx = 1.0 / RES; d.dt = DT; d.substeps = SUBSTEPS;
    d.gravity[1] = -9.8;
    d.boundary = CQ_BOUNDARY_STICKY;
    d.precision = CQ_PRECISION_F64;
    d.checkpoint_every = CKPT;
    d.logger.func = on_log;
    if (cq_sim_create(&d, &s.sim) != CQ_SUCCESS) return 1;

    for (int j = 0; j < NY; ++j)
        for (int i = 0; i < NX; ++i) {
            s.x[2 * pid(i, j)] = 0.5 + (i + 0.5 - NX / 2.0) * (0.5 / RES);
            s.x[2 * pid(i, j) + 1] = 1.0 / RES + (j + 0.5) * (0.5 / RES);
        }
    memset(&pd, 0, sizeof pd);
    pd.count = NP; pd.x = s.x; pd.default_youngs = TRUE_P[0]; pd.default_poisson = TRUE_P[1];
    if (cq_sim_add_particles(s.sim, &pd) != CQ_SUCCESS || cq_sim_get(s.sim, CQ_FIELD_VOLUME, s.vol)) goto done;
    s.nroute = NY - 2;
    for (int c = 0; c < 2; ++c) {
        int col = c == 0 ? 1 : NX - 2;
        for (int k = 0; k < s.nroute; ++k) s.route[c][k] = pid(col, k + 2);
        if (cq_sim_add_cable(s.sim, s.nroute, s.route[c], CABLE_K, (s.nroute - 1) * (0.5 / RES)) != CQ_SUCCESS)
            goto done;
    }
    /* markers: left and right halves of 3-row bands at rows 14, 28, 42 and the top */
    for (int p = 0; p < NP; ++p) s.marker[p] = -1;
    for (int b = 0; b < 4; ++b) {
        int j0 = b < 3 ? 13 + 14 * b : NY - 3;
        for (int j = j0; j < j0 + 3; ++j)
            for (int i = 0; i < NX; ++i) { s.marker[pid(i, j)] = 2 * b + (i >= NX / 2); s.msize[2 * b + (i >= NX / 2)]++; }
    }
    /* the schedule: bend left, then right, then pull both (compression: mostly nu) */
    for (int n = 0; n < STEPS; ++n) {
        double t = (n + 0.5) / STEPS, both = 0.10 * bump(t, 0.55, 1.0);
        s.u[2 * n] = 1 - 0.20 * bump(t, 0.0, 0.5) - both;
        s.u[2 * n + 1] = 1 - 0.20 * bump(t, 0.3, 0.8) - both;
    }

    tr_true = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
    tr_guess = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
    tr_fit = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
    if (!tr_true || !tr_guess || !tr_fit) goto done;

    /* 1. the measurement */
    if (rollout(&s, TRUE_P, s.meas, tr_true, NULL, NULL)) goto done;
    for (int f = 0; f < FRAMES; ++f)
        for (int k = 0; k < NM; ++k) { s.meas[f][k][0] += NOISE * gauss(); s.meas[f][k][1] += NOISE * gauss(); }
    printf("finger: %d particles, 2 cables; %d steps of %d x %g s; %d markers x %d keyframes, noise %.1e\n", NP,
           STEPS, SUBSTEPS, DT, NM, FRAMES, NOISE);
    printf("truth:   E %.1f  nu %.3f  rho %.3f\nguess:   E %.1f  nu %.3f  rho %.3f\n", TRUE_P[0], TRUE_P[1], TRUE_P[2],
           GUESS_P[0], GUESS_P[1], GUESS_P[2]);
    printf("noise floor: expected loss at the truth ~ %.2e\n", 2.0 * NM * FRAMES * NOISE * NOISE);

    /* 2. identification in theta = (ln E, nu / NU_SCALE, ln rho) */
    memcpy(prm, GUESS_P, sizeof prm);
    th[0] = log(prm[0]); th[1] = prm[1] / NU_SCALE; th[2] = log(prm[2]);
    lo[0] = log(LO_P[0]); lo[1] = LO_P[1] / NU_SCALE; lo[2] = log(LO_P[2]);
    hi[0] = log(HI_P[0]); hi[1] = HI_P[1] / NU_SCALE; hi[2] = log(HI_P[2]);
    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = 3; od.beta1 = 0.7; od.lo = lo; od.hi = hi;
    for (int it = 0; it < iters; ++it) {
        prm[0] = exp(th[0]); prm[1] = th[1] * NU_SCALE; prm[2] = exp(th[2]);
        if (rollout(&s, prm, NULL, it == 0 ? tr_guess : NULL, &losses[it], g)) goto done;
        memcpy(hist[it], prm, sizeof prm);
        gth[0] = g[0] * prm[0]; gth[1] = g[1] * NU_SCALE; gth[2] = g[2] * prm[2];
        printf("iteration %2d: loss %.4e  E %8.2f  nu %.4f  rho %.4f   dL/dtheta (%+.2e %+.2e %+.2e)\n", it, losses[it],
               prm[0], prm[1], prm[2], gth[0], gth[1], gth[2]);
        fflush(stdout);
        if (it % LR_EVERY == 0) {
            cq_robot_optimizer_destroy(opt);
            od.learning_rate = LR * pow(0.5, it / LR_EVERY);
            if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) {
                fprintf(stderr, "%s\n", cq_robot_last_error(NULL));
                goto done;
            }
        }
        if (it + 1 < iters && cq_robot_optimizer_step(opt, th, gth) != CQ_SUCCESS) {
            fprintf(stderr, "%s\n", cq_robot_last_error(opt));
            goto done;
        }
    }
    memcpy(prm, hist[iters - 1], sizeof prm);
    printf("identified: E %.2f (true %.1f, rel. error %+.2f%%)  nu %.4f (true %.3f, rel. error %+.2f%%)  "
           "rho %.4f (true %.3f, rel. error %+.2f%%)\n",
           prm[0], TRUE_P[0], 100 * (prm[0] / TRUE_P[0] - 1), prm[1], TRUE_P[1], 100 * (prm[1] / TRUE_P[1] - 1), prm[2],
           TRUE_P[2], 100 * (prm[2] / TRUE_P[2] - 1));
    printf("initial guess rel. errors: E %+.2f%%  nu %+.2f%%  rho %+.2f%%\n", 100 * (GUESS_P[0] / TRUE_P[0] - 1),
           100 * (GUESS_P[1] / TRUE_P[1] - 1), 100 * (GUESS_P[2] / TRUE_P[2] - 1));

    snprintf(path, sizeof path, "%s/sysid_loss.png", dir);
    if (plot(path, losses, hist, iters)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    if (rollout(&s, prm, NULL, tr_fit, NULL, NULL)) goto done;
    snprintf(path, sizeof path, "%s/sysid.gif", dir);
    if (write_gif(path, &s, tr_true, tr_guess, tr_fit)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    printf("wrote %s/sysid_loss.png and %s/sysid.gif (%.1f s CPU)\n", dir, dir, seconds() - t0);

    if (losses[iters - 1] < losses[0]) {
        printf("loss decreased: yes (%.4e -> %.4e)\n", losses[0], losses[iters - 1]);
        rc = 0;
    } else {
        printf("loss decreased: no (%.4e -> %.4e)\n", losses[0], losses[iters - 1]);
    }
done:
    if (rc && s.sim && cq_sim_last_error(s.sim)[0]) fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(s.sim));
    free(tr_true); free(tr_guess); free(tr_fit);
    cq_robot_optimizer_destroy(opt);
    cq_sim_destroy(s.sim);
    return rc;
}
