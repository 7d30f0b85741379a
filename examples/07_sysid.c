/* 07_sysid.c - system identification (Spielberg et al. (Robotica 2021) section 5.1): recover the Young's modulus E,
   Poisson's ratio nu and density rho of a 2D cable-driven soft finger from noisy motion capture.

   Build and run from the repository root:
       cc -O2 examples/07_sysid.c -o build/sysid -lm && ./build/sysid [out-dir] [quick]
   1. "Measurement": the finger of 04_finger.c (two cables, base planted in the sticky floor) is
      recorded in TWO episodes with the TRUE material (E, nu, rho uniform over the particles):
        bend     the original schedule: bend left, bend right, then pull both cables a little;
        squeeze  both cables reeled in together by 25% and let go: the finger is compressed
                 along its length (bulging sideways) and rings axially after the release.
      Every REC steps the centroids of 18 small particle groups are recorded (6 bands along the
      finger x {left edge, centre, right edge}, each group 2 columns x 3 rows) and Gaussian
      noise (std NOISE per coordinate, fixed seed) is added: these are the only data used.
   2. Identification: from the same wrong guesses as before (as in the paper: E 25% low, rho
      29% high, nu 0.30 for 0.25), minimise the least-squares marker misfit
          L(theta) = sum over episodes, keyframes, markers |marker(sim) - marker(measured)|^2
      over theta = (ln E, nu, ln rho) (box bounds: E, rho in [0.2, 5] x truth, nu in [0.05, 0.45])
      with Levenberg-Marquardt:
        g = dL/dtheta  exactly, from the adjoint: one cq_sim_backward per episode (the keyframes
                       before the last enter as a running loss through the hook with
                       cq_sim_add_state_grad; dL/dE, dL/dnu, dL/dm per particle from cq_sim_grad,
                       summed, with dL/drho = sum_p dL/dm_p V_p);
        H = 2 J^T J    the Gauss-Newton curvature, J = d(markers)/d(theta) at every keyframe: three
                       forward-difference sensitivities (forward rollouts only, step 1e-4);
        step v         (H + lambda diag H) v = -g, plus half the geodesic acceleration (Transtrum &
                       Sethna 2011: the second derivative of the residuals along v from one more
                       forward rollout; the step is refused when it is not small against v, which
                       keeps the first steps out of the unstable nu ~ 0.45 corner), projected onto
                       the bounds; accepted when L drops (lambda / 3), else retried (lambda x 4).
                       An accepted smooth step is also tried doubled (up to 3 times, forward
                       rollouts only): near the optimum L has a long flat curved valley where
                       J^T J overestimates the curvature and plain Gauss-Newton crawls.
      It stops when an accepted step gains less than 1e-7 of L (at most 30 iterations).  The
      fixed point is where the EXACT adjoint gradient vanishes; J only preconditions the step, so
      forward differences suffice (each iteration prints the adjoint gradient beside 2 J^T r: they
      agree to 3-4 digits).  At the end the Cramer-Rao bound NOISE^2 (J^T J)^-1 gives the
      noise-limited standard deviation of each parameter, printed beside the errors.
   Why this (measured with the Fisher information at the truth, same noise): the old single
   episode with 8 markers did NOT lack information (Cramer-Rao std: ln E 0.009, nu 0.0067,
   ln rho 0.003) but made E and nu 96% correlated -- a long curved valley in which Adam (one
   learning rate, halved every 10 iterations) stalled at nu 0.319 after 50 iterations.  So:
   (a) the squeeze episode loads the finger axially instead of in bending (bending stiffness
   ~ E / (1 - nu^2) alone) and 18 markers (edges and centre line; they help about as much as their
   number, sqrt(18/8)) give more samples; with both the bound drops to ln E 0.0023, nu 0.0015,
   ln rho 0.0015 at the truth; (b) Gauss-Newton steps follow the valley
   instead of zig-zagging across it.  The path is still not straight: the first accepted steps
   raise nu to 0.41 (stiffness fixed the cheapest way), then E and rho come right and nu comes
   back down (iterations 8-18).  Not measured: Levenberg-Marquardt on the old single-episode data
   alone (the bound allows nu within ~3% there, but with the E-nu correlation of 0.96).
   RESULT (full run, measured: 20 iterations, 54 s at -O2 on one idle core, 83 s on a busy
   machine): E 2999.29 (-0.02%), nu 0.2525 (+1.02%), rho 1.0019 (+0.19%); final loss 3.18e-3
   for the noise floor 3.24e-3; Cramer-Rao std at the optimum E 0.24%, nu 0.59%, rho 0.15%,
   so the errors are 0.1, 1.7 and 1.3 std: what the noise allows, for this one noise draw.  quick: 6 trials (4 refused by the
   acceleration test, then the first accepted step: loss 3.48 -> 1.10), about 9 s.
   Writes OUT/sysid_loss.png (log10 loss per iteration on top, E, nu and rho relative to the truth
   below) and OUT/sysid.gif (both episodes side by side: truth in grey, the initial guess in
   orange, the identified material in blue, measured markers as red crosses); OUT defaults to
   "out".  "quick" stops at the first accepted step (at most 8 trials) and exits nonzero unless
   the loss dropped. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* arguments, log callback */

#define RES 64                /* grid cells per axis; the domain is [0, 1)^2, y up */
#define WALL 3                /* sticky floor below y = 3/64 */
#define NX 12                 /* particles across the finger (spacing dx/2) */
#define NY 62                 /* particles along it (the bottom 4 rows inside the floor) */
#define NP (NX * NY)
#define SUBSTEPS 25           /* substeps per cq_sim_step = per cable signal */
#define DT 2e-4
#define STEPS 60              /* 0.3 s of simulated time per episode */
#define CKPT 8
#define REC 3                 /* a keyframe every 3 steps ... */
#define FRAMES (STEPS / REC)  /* ... 20 of them, the last at step STEPS */
#define NEP 2                 /* measured episodes: bend, squeeze */
#define NB 6                  /* marker bands along the finger ... */
#define NM (3 * NB)           /* ... x 3 across it: 18 tracked markers */
#define NR (NEP * FRAMES * NM * 2)   /* residuals */
#define CABLE_K 400.0
#define NOISE 1.5e-3          /* marker noise (std dev per coordinate; particle spacing 7.8e-3) */
#define FD_H 1e-4             /* forward-difference step in theta for J */
#define LAMBDA0 1e-2          /* initial Levenberg-Marquardt damping (relative to diag J^T J) */
#define GEO_H 0.1             /* finite-difference step (along v) for the geodesic acceleration */
#define ALPHA 0.75            /* largest accepted 2 |acceleration| / |velocity| */
#define MAXDOUBLE 3           /* step doublings tried after an accepted smooth step */
#define MAXIT 30              /* at most; stops when an accepted step gains < 1e-7 relative */
#define IMG 320

/* ground truth, the initial guess (the paper's ratios: 15/20, 0.3/0.25, 3.0/2.33) and bounds */
static const double TRUE_P[3] = {3000.0, 0.25, 1.0};      /* E, nu, rho */
static const double GUESS_P[3] = {2250.0, 0.30, 1.29};
static const double LO_P[3] = {600.0, 0.05, 0.2};           /* E and rho in [0.2, 5] x truth */
static const double HI_P[3] = {15000.0, 0.45, 5.0};
static const char *EP_NAME[NEP] = {"bend", "squeeze"};

typedef struct sysid {
    cq_sim *sim;
    int ep;                   /* the episode being simulated / reversed */
    int marker[NP];           /* marker of each particle, -1 = untracked */
    int msize[NM];
    int route[2][NY], nroute;
    double u[NEP][2 * STEPS]; /* the cable schedules */
    double meas[NEP][FRAMES][NM][2];
    double x[2 * NP], seed[2 * NP], buf[NP], vol[NP];
} sysid;

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

/* dL/dx of keyframe f's term |marker(x) - meas_f|^2 (episode s->ep), written to g */
static void marker_grad(const sysid *s, const double *x, int f, double *g)
{
    double m[NM][2];
    markers(s, x, m);
    memset(g, 0, sizeof(double) * 2 * NP);
    for (int p = 0; p < NP; ++p) {
        int k = s->marker[p];
        if (k < 0) continue;
        g[2 * p] = 2 * (m[k][0] - s->meas[s->ep][f][k][0]) / s->msize[k];
        g[2 * p + 1] = 2 * (m[k][1] - s->meas[s->ep][f][k][1]) / s->msize[k];
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

/* Simulates episode ep with material prm = (E, nu, rho).  rec (if not NULL) gets the marker
   keyframes, traj (if not NULL) the positions at steps 0..STEPS, loss (if not NULL) the
   episode's misfit against the measurement.  The sim is left at step STEPS (see adjoint). */
static int rollout(sysid *s, int ep, const double *prm, double (*rec)[NM][2], double *traj, double *loss)
{
    double m[NM][2];
    s->ep = ep;
    if (cq_sim_reset(s->sim) || set_material(s, prm)) return 1;
    if (traj && cq_sim_get(s->sim, CQ_FIELD_X, traj)) return 1;
    if (loss) *loss = 0;
    for (int n = 1; n <= STEPS; ++n) {
        if (cq_sim_set_cable_actuation(s->sim, 2, s->u[ep] + 2 * (n - 1)) || cq_sim_step(s->sim, 1)) return 1;
        if (!traj && n % REC) continue;
        if (cq_sim_get(s->sim, CQ_FIELD_X, s->x)) return 1;
        if (traj) memcpy(traj + (size_t)2 * NP * n, s->x, sizeof s->x);
        if (n % REC) continue;
        markers(s, s->x, m);
        if (rec) memcpy(rec[n / REC - 1], m, sizeof m);
        if (loss)
            for (int k = 0; k < NM; ++k) {
                double ex = m[k][0] - s->meas[ep][n / REC - 1][k][0], ey = m[k][1] - s->meas[ep][n / REC - 1][k][1];
                *loss += ex * ex + ey * ey;
            }
    }
    return 0;
}

/* After rollout(s, ep, prm, ...): the reverse pass, dL_ep/d(theta) (theta = ln E, nu, ln rho)
   added to gth. */
static int adjoint(sysid *s, const double *prm, double *gth)
{
    double g[NP], sum;
    marker_grad(s, s->x, FRAMES - 1, s->seed);      /* s->x is s_T */
    if (cq_sim_backward(s->sim, s->seed, NULL, NULL, NULL, hook, s) != CQ_SUCCESS) return 1;
    if (cq_sim_grad(s->sim, CQ_FIELD_YOUNGS, g)) return 1;
    sum = 0;
    for (int p = 0; p < NP; ++p) sum += g[p];
    gth[0] += sum * prm[0];
    if (cq_sim_grad(s->sim, CQ_FIELD_POISSON, g)) return 1;
    sum = 0;
    for (int p = 0; p < NP; ++p) sum += g[p];
    gth[1] += sum;
    if (cq_sim_grad(s->sim, CQ_FIELD_MASS, g)) return 1;
    sum = 0;
    for (int p = 0; p < NP; ++p) sum += g[p] * s->vol[p];
    gth[2] += sum * prm[2];
    return 0;
}

static void theta_to_prm(const double *th, double *prm) { prm[0] = exp(th[0]); prm[1] = th[1]; prm[2] = exp(th[2]); }

/* All episodes at theta: residuals r = marker - measured ([NR]), the loss |r|^2 (if not NULL)
   and the trajectories (traj[e] if traj is not NULL).  Nonzero when a rollout fails. */
static int predict(sysid *s, const double *th, double *r, double *loss, double *const *traj)
{
    static double rec[FRAMES][NM][2];
    double prm[3];
    theta_to_prm(th, prm);
    if (loss) *loss = 0;
    for (int e = 0; e < NEP; ++e) {
        if (rollout(s, e, prm, rec, traj ? traj[e] : NULL, NULL)) return 1;
        for (int f = 0; f < FRAMES; ++f)
            for (int k = 0; k < NM; ++k)
                for (int c = 0; c < 2; ++c) {
                    double d = rec[f][k][c] - s->meas[e][f][k][c];
                    r[((e * FRAMES + f) * NM + k) * 2 + c] = d;
                    if (loss) *loss += d * d;
                }
    }
    return 0;
}

/* solves the 3x3 system A d = b (Cramer's rule); returns nonzero when singular */
static int solve3(double A[3][3], const double *b, double *d)
{
    double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                 A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
    if (!(fabs(det) > 0)) return 1;
    for (int c = 0; c < 3; ++c) {
        double M[3][3];
        memcpy(M, A, sizeof M);
        for (int r = 0; r < 3; ++r) M[r][c] = b[r];
        d[c] = (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
                M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0])) / det;
    }
    return 0;
}

/* J^T J (3x3) and J^T r from the residuals r = marker - measured (res) and the
   forward-difference Jacobian J (jac[c] = d res / d theta_c) */
static void normal_eq(const double *res, double (*jac)[NR], double JJ[3][3], double *Jr)
{
    for (int a = 0; a < 3; ++a) {
        Jr[a] = 0;
        for (int b = 0; b < 3; ++b) JJ[a][b] = 0;
    }
    for (int i = 0; i < NR; ++i)
        for (int a = 0; a < 3; ++a) {
            Jr[a] += jac[a][i] * res[i];
            for (int b = 0; b < 3; ++b) JJ[a][b] += jac[a][i] * jac[b][i];
        }
}

/* ---- pictures ---------------------------------------------------------------------------- */
static void draw_body(cq_img *im, int ox, const double *x, double r, unsigned char cr, unsigned char cg, unsigned char cb)
{
    for (int p = 0; p < NP; ++p) cq_img_disc(im, ox + x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, r, cr, cg, cb);
}

static void cross(cq_img *im, double x, double y, unsigned char r, unsigned char g, unsigned char b)
{
    int px = (int)(x * IMG + 0.5), py = (int)((1 - y) * IMG + 0.5);
    cq_img_line(im, px - 3, py - 3, px + 3, py + 3, r, g, b);
    cq_img_line(im, px - 3, py + 3, px + 3, py - 3, r, g, b);
}

/* per episode panel: truth (grey), initial guess (orange dots), identified (blue), measured
   markers (red).  The view is zoomed VIEW x on the finger: x in 0.5 -+ 0.5 / VIEW, y in [0, 1 / VIEW]. */
#define VIEW 1.8
#define VIEW_X0 (0.5 - 0.5 / VIEW)
typedef struct movie { const sysid *s; double *const *tr_true, *const *tr_guess, *const *tr_fit; } movie;
static void draw_frame(cq_img *im, int n, void *user)
{
    const int wall_px = (int)(VIEW * WALL * (double)IMG / RES + 0.5);
    static double zx[2 * NP];
    const movie *m = (const movie *)user;
    const sysid *s = m->s;
    int f = n / REC - 1;
    cq_img_clear(im, 245, 243, 235);
    for (int e = 0; e < NEP; ++e) {
        const int ox = e * IMG;
        const double *tr[3];
        static const unsigned char col[3][3] = {{175, 175, 175}, {235, 130, 30}, {40, 90, 200}};
        static const double rad[3] = {2.6 * VIEW, 1.0 * VIEW, 1.3 * VIEW};
        tr[0] = m->tr_true[e] + (size_t)2 * NP * n; tr[1] = m->tr_guess[e] + (size_t)2 * NP * n;
        tr[2] = m->tr_fit[e] + (size_t)2 * NP * n;
        cq_img_rect(im, ox, IMG - wall_px, ox + IMG - 1, IMG - 1, 90, 90, 100);
        for (int k = 0; k < 3; ++k) {
            for (int p = 0; p < NP; ++p) {
                zx[2 * p] = (tr[k][2 * p] - VIEW_X0) * VIEW;
                zx[2 * p + 1] = tr[k][2 * p + 1] * VIEW;
            }
            draw_body(im, ox, zx, rad[k] * 0.5, col[k][0], col[k][1], col[k][2]);
        }
        if (f >= 0)
            for (int k = 0; k < NM; ++k)
                cross(im, (double)ox / IMG + (s->meas[e][f][k][0] - VIEW_X0) * VIEW, s->meas[e][f][k][1] * VIEW, 200,
                      30, 30);
        if (e > 0) cq_img_line(im, ox, 0, ox, IMG - 1, 150, 150, 150);
    }
    cq_img_rect(im, 8, 8, 20, 14, 175, 175, 175);      /* legend swatches */
    cq_img_rect(im, 8, 20, 20, 26, 235, 130, 30);
    cq_img_rect(im, 8, 32, 20, 38, 40, 90, 200);
    cross(im, 14.0 / IMG, 1 - 47.0 / IMG, 200, 30, 30);
}

static int write_gif(const char *path, sysid *s, double *const *tr_true, double *const *tr_guess,
                     double *const *tr_fit)
{
    movie m;
    m.s = s; m.tr_true = tr_true; m.tr_guess = tr_guess; m.tr_fit = tr_fit;
    return cqx_write_gif(path, NEP * IMG, IMG, 5, STEPS, 1, draw_frame, &m, NULL);
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
    {   /* text: titles, decade values, the ratio axis and the legend */
        static const char *const names[3] = {"E", "NU", "RHO"};
        char buf[32];
        cq_img_text(&im, L, 6, "SYSTEM ID: LOSS (LOG10) PER ITERATION", 1, 20, 20, 20);
        for (double d = lo; d <= hi + 1e-9; d += 0.25) {
            snprintf(buf, sizeof buf, "%.2f", d);
            cq_img_text(&im, 2, B1 - (int)((d - lo) / (hi - lo) * (B1 - T1)) - 3, buf, 1, 40, 40, 40);
        }
        cq_img_text(&im, L, B1 + 6, "ITERATION 0 .. ", 1, 60, 60, 60);
        snprintf(buf, sizeof buf, "%d", n - 1);
        cq_img_text(&im, L + cq_img_text_width("ITERATION 0 .. ", 1), B1 + 6, buf, 1, 60, 60, 60);
        cq_img_text(&im, L, T2 - 16, "ESTIMATE / TRUTH (DASHED: 1)", 1, 20, 20, 20);
        snprintf(buf, sizeof buf, "%.2f", rhi); cq_img_text(&im, 2, T2 - 3, buf, 1, 40, 40, 40);
        snprintf(buf, sizeof buf, "%.2f", rlo); cq_img_text(&im, 2, B2 - 3, buf, 1, 40, 40, 40);
        for (int c = 0; c < 3; ++c) {
            cq_img_rect(&im, R - 110 + 36 * c, T2 + 4, R - 100 + 36 * c, T2 + 10, col[c][0], col[c][1], col[c][2]);
            cq_img_text(&im, R - 97 + 36 * c, T2 + 4, names[c], 1, 30, 30, 30);
        }
    }
    rc = cq_img_write_png(path, &im);
    cq_img_free(&im);
    return rc;
}

static double seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

int main(int argc, char **argv)
{
    static sysid s;
    static double losses[MAXIT], hist[MAXIT][3], res[NR], rtry[NR], rtmp[NR], jac[3][NR];
    static const char *pname[3] = {"E", "nu", "rho"};
    static cq_log_level errors_only = CQ_LOG_ERROR;
    cqx_args args;
    int quick, iters, rc = 1;
    double th[3], prm[3], lo[3], hi[3], cur_th[3], cur_loss = 0, cur_g[3] = {0, 0, 0}, JJ[3][3], Jr[3];
    double lambda = LAMBDA0, t0 = seconds(), cov[3][3], prev_loss = HUGE_VAL;
    double *tr_true[NEP] = {NULL}, *tr_guess[NEP] = {NULL}, *tr_fit[NEP] = {NULL};
    char path[1024];
    cq_sim_desc d;
    cq_particles_desc pd;

    if (cqx_parse_args(argc, argv, 0, NULL, NULL, &args)) return 1;
    quick = args.quick;
    iters = quick ? 8 : MAXIT;       /* quick: until the first accepted step, at most 8 trials */

    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = RES; d.dx = 1.0 / RES; d.dt = DT; d.substeps = SUBSTEPS;
    d.gravity[1] = -9.8;
    d.boundary = CQ_BOUNDARY_STICKY;
    d.precision = CQ_PRECISION_F64;
    d.checkpoint_every = CKPT;
    d.logger.func = cqx_log_terse; d.logger.user = &errors_only;
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
    /* markers: 3-row bands starting at rows 6, 16, ..., 46 and the top 3 rows; in each the two
       leftmost columns, the two centre columns and the two rightmost columns */
    for (int p = 0; p < NP; ++p) s.marker[p] = -1;
    for (int b = 0; b < NB; ++b) {
        int j0 = b < NB - 1 ? 6 + 10 * b : NY - 3;
        for (int j = j0; j < j0 + 3; ++j)
            for (int i = 0; i < NX; ++i) {
                int c = i < 2 ? 0 : i >= NX - 2 ? 2 : (i == NX / 2 - 1 || i == NX / 2) ? 1 : -1;
                if (c < 0) continue;
                s.marker[pid(i, j)] = 3 * b + c;
                s.msize[3 * b + c]++;
            }
    }
    /* the schedules: bend left, then right, then pull both; squeeze both by 25% and let go */
    for (int n = 0; n < STEPS; ++n) {
        double t = (n + 0.5) / STEPS, both = 0.10 * bump(t, 0.55, 1.0), sq = 0.25 * bump(t, 0.0, 0.6);
        s.u[0][2 * n] = 1 - 0.20 * bump(t, 0.0, 0.5) - both;
        s.u[0][2 * n + 1] = 1 - 0.20 * bump(t, 0.3, 0.8) - both;
        s.u[1][2 * n] = s.u[1][2 * n + 1] = 1 - sq;
    }

    for (int e = 0; e < NEP; ++e) {
        tr_true[e] = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
        tr_guess[e] = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
        tr_fit[e] = (double *)malloc(sizeof(double) * 2 * NP * (STEPS + 1));
        if (!tr_true[e] || !tr_guess[e] || !tr_fit[e]) goto done;
    }

    /* 1. the measurement */
    for (int e = 0; e < NEP; ++e) {
        if (rollout(&s, e, TRUE_P, s.meas[e], tr_true[e], NULL)) goto done;
        for (int f = 0; f < FRAMES; ++f)
            for (int k = 0; k < NM; ++k) { s.meas[e][f][k][0] += NOISE * gauss(); s.meas[e][f][k][1] += NOISE * gauss(); }
    }
    printf("finger: %d particles, 2 cables; episodes:", NP);
    for (int e = 0; e < NEP; ++e) printf(" %s", EP_NAME[e]);
    printf("; each %d steps of %d x %g s; %d markers x %d keyframes, noise %.1e\n", STEPS, SUBSTEPS, DT, NM, FRAMES,
           NOISE);
    printf("truth:   E %.1f  nu %.3f  rho %.3f\nguess:   E %.1f  nu %.3f  rho %.3f\n", TRUE_P[0], TRUE_P[1], TRUE_P[2],
           GUESS_P[0], GUESS_P[1], GUESS_P[2]);
    printf("noise floor: expected loss at the truth ~ %.2e\n", (double)NR * NOISE * NOISE);

    /* 2. Levenberg-Marquardt in theta = (ln E, nu, ln rho), with geodesic acceleration */
    th[0] = log(GUESS_P[0]); th[1] = GUESS_P[1]; th[2] = log(GUESS_P[2]);
    lo[0] = log(LO_P[0]); lo[1] = LO_P[1]; lo[2] = log(LO_P[2]);
    hi[0] = log(HI_P[0]); hi[1] = HI_P[1]; hi[2] = log(HI_P[2]);
    for (int it = 0; it < iters; ++it) {
        double loss = HUGE_VAL, v[3] = {0, 0, 0}, acc[3] = {0, 0, 0}, A[3][3], b[3], ratio = 0;
        int accept = 0, doubled = 0, sim_at_th = 1;   /* sim_at_th: the sim holds s_T of th's last episode */
        if (it > 0) {
            /* v: (2 J^T J + lambda diag 2 J^T J) v = -g, g the adjoint gradient */
            for (int i = 0; i < 3; ++i) {
                for (int c = 0; c < 3; ++c) A[i][c] = 2 * JJ[i][c];
                A[i][i] *= 1 + lambda;
                b[i] = -cur_g[i];
            }
            if (solve3(A, b, v)) { fprintf(stderr, "singular Gauss-Newton matrix\n"); goto done; }
            /* geodesic acceleration: r'' along v from one more forward rollout, then
               (2 J^T J + lambda diag) acc = -2 J^T r''; accepted when 2 |acc| <= ALPHA |v| */
            for (int c = 0; c < 3; ++c) th[c] = cur_th[c] + GEO_H * v[c];
            if (predict(&s, th, rtry, NULL, NULL) == 0) {
                double Jv, nv = 0, na = 0;
                for (int i = 0; i < NR; ++i) {
                    Jv = jac[0][i] * v[0] + jac[1][i] * v[1] + jac[2][i] * v[2];
                    rtry[i] = 2 / GEO_H * ((rtry[i] - res[i]) / GEO_H - Jv);
                }
                for (int c = 0; c < 3; ++c) {
                    b[c] = 0;
                    for (int i = 0; i < NR; ++i) b[c] -= 2 * jac[c][i] * rtry[i];
                }
                if (solve3(A, b, acc)) { fprintf(stderr, "singular Gauss-Newton matrix\n"); goto done; }
                for (int c = 0; c < 3; ++c) { nv += JJ[c][c] * v[c] * v[c]; na += JJ[c][c] * acc[c] * acc[c]; }
                ratio = 2 * sqrt(na / nv);
            } else {
                ratio = HUGE_VAL;
            }
            if (ratio <= ALPHA) {
                for (int c = 0; c < 3; ++c) {
                    th[c] = cur_th[c] + v[c] + 0.5 * acc[c];
                    th[c] = th[c] < lo[c] ? lo[c] : th[c] > hi[c] ? hi[c] : th[c];
                }
                if (predict(&s, th, rtry, &loss, NULL)) loss = HUGE_VAL;   /* blew up: reject */
                accept = loss < cur_loss;
                /* Gauss-Newton crawls where the valley of L is flat and curved (J^T J overestimates
                   the curvature along it): while the step is smooth (small acceleration), also try
                   doubling it, forward rollouts only, and keep the best */
                for (int k = 0; accept && ratio < ALPHA / 3 && k < MAXDOUBLE; ++k) {
                    double t2[3], l2;
                    for (int c = 0; c < 3; ++c) {
                        t2[c] = cur_th[c] + 2 * (th[c] - cur_th[c]);
                        t2[c] = t2[c] < lo[c] ? lo[c] : t2[c] > hi[c] ? hi[c] : t2[c];
                    }
                    if (predict(&s, t2, rtmp, &l2, NULL) || !(l2 < loss)) { sim_at_th = 0; break; }
                    memcpy(th, t2, sizeof th);
                    memcpy(rtry, rtmp, sizeof rtry);
                    loss = l2;
                    ++doubled;
                }
            }
        } else {                             /* the initial guess */
            if (predict(&s, th, rtry, &loss, tr_guess)) goto done;
            accept = 1;
        }
        if (accept) {
            memcpy(res, rtry, sizeof res);
            memset(cur_g, 0, sizeof cur_g);  /* gradient (adjoint); the sim is at s_T of the last episode */
            theta_to_prm(th, prm);
            for (int e = NEP - 1; e >= 0; --e) {   /* (re-simulated unless the sim holds it) */
                if ((e < NEP - 1 || !sim_at_th) && rollout(&s, e, prm, NULL, NULL, NULL)) goto done;
                if (adjoint(&s, prm, cur_g)) goto done;
            }
            if (!quick || it == 0)          /* J: forward differences */
                for (int c = 0; c < 3; ++c) {
                    double tp[3];
                    memcpy(tp, th, sizeof tp);
                    tp[c] += FD_H;
                    if (predict(&s, tp, jac[c], NULL, NULL) == 0) {
                        for (int i = 0; i < NR; ++i) jac[c][i] = (jac[c][i] - res[i]) / FD_H;
                    } else {                 /* unstable just above th: backward difference */
                        tp[c] -= 2 * FD_H;
                        if (predict(&s, tp, jac[c], NULL, NULL)) goto done;
                        for (int i = 0; i < NR; ++i) jac[c][i] = (res[i] - jac[c][i]) / FD_H;
                    }
                }
            memcpy(cur_th, th, sizeof th);
            cur_loss = loss;
            if (it > 0) lambda /= 3;
        } else {
            lambda *= 4;
        }
        theta_to_prm(cur_th, prm);
        memcpy(hist[it], prm, sizeof prm);
        losses[it] = cur_loss;
        normal_eq(res, jac, JJ, Jr);
        if (accept)
            printf("iteration %2d: loss %.4e  E %8.2f  nu %.4f  rho %.4f  (lambda %.0e, accel %.2f, doubled %d)  "
                   "dL/dtheta adjoint (%+.3e %+.3e %+.3e)  2J^Tr (%+.3e %+.3e %+.3e)\n",
                   it, loss, prm[0], prm[1], prm[2], lambda, ratio, doubled, cur_g[0], cur_g[1], cur_g[2], 2 * Jr[0],
                   2 * Jr[1], 2 * Jr[2]);
        else if (ratio > ALPHA)
            printf("iteration %2d: loss %.4e  step rejected: acceleration ratio %.2f > %.2f, lambda -> %.0e\n", it,
                   cur_loss, ratio, ALPHA, lambda);
        else
            printf("iteration %2d: loss %.4e  rejected trial E %.2f nu %.4f rho %.4f (loss %.4e), lambda -> %.0e\n", it,
                   cur_loss, exp(th[0]), th[1], exp(th[2]), loss, lambda);
        fflush(stdout);
        if (accept && it > 0 && (quick || prev_loss - cur_loss < 1e-7 * cur_loss)) {
            iters = it + 1;
            break;
        }
        prev_loss = cur_loss;
    }
    theta_to_prm(cur_th, prm);
    printf("identified: E %.2f (true %.1f, rel. error %+.2f%%)  nu %.4f (true %.3f, rel. error %+.2f%%)  "
           "rho %.4f (true %.3f, rel. error %+.2f%%)\n",
           prm[0], TRUE_P[0], 100 * (prm[0] / TRUE_P[0] - 1), prm[1], TRUE_P[1], 100 * (prm[1] / TRUE_P[1] - 1), prm[2],
           TRUE_P[2], 100 * (prm[2] / TRUE_P[2] - 1));
    printf("initial guess rel. errors: E %+.2f%%  nu %+.2f%%  rho %+.2f%%\n", 100 * (GUESS_P[0] / TRUE_P[0] - 1),
           100 * (GUESS_P[1] / TRUE_P[1] - 1), 100 * (GUESS_P[2] / TRUE_P[2] - 1));
    if (!quick) {   /* Cramer-Rao bound: cov(theta) = NOISE^2 (J^T J)^-1, J from the last accepted point */
        for (int c = 0; c < 3; ++c) {
            double e3[3] = {0, 0, 0}, col[3];
            e3[c] = 1;
            if (solve3(JJ, e3, col)) { fprintf(stderr, "singular J^T J\n"); goto done; }
            for (int r = 0; r < 3; ++r) cov[r][c] = NOISE * NOISE * col[r];
        }
        printf("noise-limited std (Cramer-Rao, %d residuals): E %.2f%%  nu %.2f%%  rho %.2f%%;  correlation E-nu %+.2f  "
               "E-rho %+.2f  nu-rho %+.2f\n",
               NR, 100 * sqrt(cov[0][0]), 100 * sqrt(cov[1][1]) / prm[1], 100 * sqrt(cov[2][2]),
               cov[0][1] / sqrt(cov[0][0] * cov[1][1]), cov[0][2] / sqrt(cov[0][0] * cov[2][2]),
               cov[1][2] / sqrt(cov[1][1] * cov[2][2]));
        for (int c = 0; c < 3; ++c) {
            double err = c == 1 ? prm[1] - TRUE_P[1] : log(prm[c] / TRUE_P[c]);
            printf("  %-3s error / std = %+.2f\n", pname[c], err / sqrt(cov[c][c]));
        }
    }

    snprintf(path, sizeof path, "%s/sysid_loss.png", args.dir);
    if (plot(path, losses, hist, iters)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    for (int e = 0; e < NEP; ++e)
        if (rollout(&s, e, prm, NULL, tr_fit[e], NULL)) goto done;
    snprintf(path, sizeof path, "%s/sysid.gif", args.dir);
    if (write_gif(path, &s, tr_true, tr_guess, tr_fit)) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    printf("wrote %s/sysid_loss.png and %s/sysid.gif (%.1f s CPU)\n", args.dir, args.dir, seconds() - t0);

    if (losses[iters - 1] < losses[0]) {
        printf("loss decreased: yes (%.4e -> %.4e)\n", losses[0], losses[iters - 1]);
        rc = 0;
    } else {
        printf("loss decreased: no (%.4e -> %.4e)\n", losses[0], losses[iters - 1]);
    }
done:
    if (rc && s.sim && cq_sim_last_error(s.sim)[0]) fprintf(stderr, "chainqueen: %s\n", cq_sim_last_error(s.sim));
    for (int e = 0; e < NEP; ++e) { free(tr_true[e]); free(tr_guess[e]); free(tr_fit[e]); }
    cq_sim_destroy(s.sim);
    return rc;
}
