/* 15_rafting.c - "Water rafting", a task of DiffFR (Z. Li, Q. Xu, X. Ye, B. Ren, L. Liu.  DiffFR:
   Differentiable SPH-based Fluid-Rigid Coupling for Rigid Body Control.  ACM Transactions on
   Graphics (SIGGRAPH Asia), 2023; its supplementary material, Table 2), in 3D: a raft (a flat box
   of density 500 kg/m^3, afloat half submerged) is launched over a pool with an initial linear
   velocity v0 and angular velocity w0, and drifts, slowed by the water, to a target pose: a
   target position and a half turn about the vertical axis at the time t*.  Gradient descent on
   (v0, w0) with forward-mode gradients through the water (cq_world_track before the first step,
   cq_world_body_jacobian at t*: DiffFR's localized scheme).

   Build and run from the repository root:
       cc -std=c99 -O2 examples/15_rafting.c -o build/15_rafting -lm && ./build/15_rafting [out-dir] [quick] [--size paper]
   Writes OUT/rafting.gif (the best launch: a top view of the pool, the water's upper layers
   lighter where they stand higher, the raft's outline and its bow mark, its path in yellow, the
   target pose dashed red with its bow mark; below, a side view of the raft's slice of water and
   the target height in red), OUT/rafting_final.png (its last frame) and OUT/rafting_loss.png
   (the loss per iteration, log scale).  OUT defaults to "out".

   The scene (--size small, the default): a pool of 0.64 x 0.48 m, water laid out 0.16 m deep on
   a lattice of spacing 2r, r = 0.02 m, settled for 0.4 s (it settles to a level of 0.154 m), the
   raft's hole cut out: 735 fluid particles, 3D, float32, dt = 0.008 s.  The raft is
   0.20 x 0.06 x 0.12 m (x, y up, z).  --size paper: r = 0.01 m, dt = 0.004 s, 6027 fluid
   particles, the same pool and raft (finer than the default; the supplement does not give the
   paper scene's particle count).

   Mapping to Table 2 (Water Rafting: lr_v = 0.1, lr_w = 0.1, w_position = 1, w_rotation = 1,
   patience 10, x0 = (-1.0, 0.6, -0.6), x* = (1.0, 0.5, 0.7), theta* = (X 0, Y 180 deg, Z 0),
   t* = 2.0 s).  Lengths are scaled by SCALE = 0.1: x0 = (-0.10, h + 0.01, -0.06) and
   x* = (0.10, h, 0.07) where h is the settled water level, at which the raft's centre floats
   (Archimedes: half submerged), so the paper's drop from y = 0.6 to 0.5 becomes a 1 cm drop onto
   the water.  t* = 2 s x sqrt(SCALE) (Froude scaling, the same gravity) = 0.632 s, rounded to
   78 steps = 0.624 s.  theta* is the quaternion q* = (w, x, y, z) = (0, 0, 1, 0), y up.  Loss
   L = w_position |(x(t*) - x*) / SCALE|^2 + w_rotation (1 - (q(t*) . q*)^2): positions in paper
   metres, so that w_position = w_rotation = 1 weigh a miss against a wrong turn as Table 2 does;
   E_rot is zero at the target and blind to the sign of q, dE_rot/dq = -2 (q . q*) q*.  The
   optimiser: cq_robot_optimizer GD with rate_scale (lr_v for v0, lr_w for w0) and the plateau
   scheduler (patience 10, factor 1/2; it did not trigger in the measured runs).  lr_v = 0.1 as
   in Table 2.  lr_w = 10, not Table 2's 0.1: in this small, coarse scene the water stops the
   raft's spin within ~0.3 s (a launch at 12.6 rad/s turns it only half a turn), so dL/dw0_y is
   about 0.07 s/rad at the start, and lr_w = 0.1 moved w0 by < 0.01 rad/s per iteration when
   ~7.6 rad/s were needed (measured).  The initial guess v0 = (0.5, 0, 0.3) m/s, w0 = (0, 5, 0)
   rad/s: some spin is needed, E_rot's gradient vanishes at the unturned pose.

   Gradient check (every run, at the first iteration): the forward-mode derivative of L along
   the first step's direction against a central difference of L (two more rollouts, +-0.05);
   exit nonzero if their signs differ.  The full run also differentiates each parameter alone.
   Measured (small scene, 2026-11-22): along the step 0.868 (forward mode) vs 1.611 (central
   difference): the same sign, the localized gradient 1.86x too small.  Per parameter (forward
   mode / central difference): dL/dv0 x -1.87 / -3.26, y -0.12 / -1.38, z -1.67 / -1.47;
   dL/dw0 x -0.029 / -0.023, y -0.068 / -0.107, z -0.010 / +0.088.  The localized scheme leaves
   out the water's response (the bow wave and the sloshing that push the raft back, the bobbing
   that v0_y starts): it gets the large components' signs and their size within ~2x, misses most
   of dL/dv0_y (the float height at t* depends on the waves) and the sign of the small dL/dw0_z.
   Descent works regardless: the steps are along the right direction, only too short.

   Results (measured on this machine, gcc -O2, one thread, 2026-11-22, the two cores shared with
   other jobs, so wall times vary ~30%; the supplement reports no numeric outcome for this task,
   so there is nothing to compare with):
     quick (3 iterations, the directional check only): 5.6 s CPU, 6-8 s wall; loss 2.258 -> 1.019.
     full (stops when the miss is < 0.1 paper metres = 1 cm and the turn error < 8 deg, at most 60
       iterations; exits nonzero if not reached): reached after 19 iterations, 30 s CPU, 39-45 s
       wall (about 40% of it the gradient check's 14 extra rollouts): miss 2.0 mm (0.02 paper
       metres), turn error 7.2 deg, loss 2.258 -> 0.0044, with v0 = (0.925, 0.110, 0.806) m/s and
       w0 = (0.10, 12.64, 0.18) rad/s.  Left to run 50 iterations it stays at 1-4 mm and 3-5 deg
       (the noise of the sloshing water on the final pose).
     --size paper: 20-30 s per rollout; quick --size paper took 114 s CPU (2 min 57 s wall), loss
       2.089 -> 1.416, the localized gradient along the step 2.64x below the central difference
       (0.338 vs 0.893, the same sign); a full run would take roughly 20-30 min (not run). */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CHAINQUEEN_ROBOT_IMPLEMENTATION
#include "../chainqueen_robot.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"

#define SCALE 0.1             /* our metres per paper metre (Table 2's positions times SCALE) */
#define LR_V 0.1              /* Table 2: initial learning rates, loss weights, patience */
#define LR_W 10.0
#define W_POSITION 1.0
#define W_ROTATION 1.0
#define PATIENCE 10
#define RAFT_DENSITY 500.0
#define PI 3.14159265358979323846
#define FD_STEP 0.05          /* central differences: +-0.05 m/s (w0: +-0.5 rad/s) */
#define T_STAR_PAPER 2.0      /* s */
#define TOL_POS_PAPER 0.1     /* the full run's tolerance: 0.1 paper metres (1 cm here) ... */
#define TOL_ROT_DEG 8.0       /* ... and 8 degrees */
#define MAX_ITERS 60

/* Table 2's start and target, scaled (x, z); y is set from the water level (see the header) */
static const double X0_PAPER[3] = {-1.0, 0.6, -0.6}, XT_PAPER[3] = {1.0, 0.5, 0.7};
static const double Q_TARGET[4] = {0, 0, 1, 0};   /* (w, x, y, z): a half turn about y (up) */

typedef struct scene {
    double r, dt;             /* particle radius, step */
    int steps, every;         /* steps to t*, steps per recorded frame */
    double lo[3], hi[3];      /* the pool (domain) */
    double depth;             /* the water's depth as laid out (a lattice of spacing 2r) */
    double level;             /* the water level once settled */
    double half[3];           /* raft half extents */
    double x0[3], xt[3];      /* raft start and target centre */
    int nf;                   /* fluid particles (after the raft's hole) */
    double *fx, *fv;          /* the settled water, raft hole cut out */
    int frames;               /* recorded frames of a rollout (steps / every + 1) */
} scene;

typedef struct record {       /* one rollout, frame by frame (top view pictures) */
    float *fx;                /* [frames][nf][3] fluid positions */
    cq_body_state *b;         /* [frames] the raft */
} record;

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int new_world(const scene *s, cq_world **w)
{
    cq_world_desc d;
    memset(&d, 0, sizeof d);
    d.dim = 3; d.particle_radius = s->r; d.dt = s->dt; d.gravity[1] = -9.81;
    for (int a = 0; a < 3; ++a) { d.domain_lo[a] = s->lo[a]; d.domain_hi[a] = s->hi[a]; }
    d.logger.func = cqx_log_warnings;
    if (cq_world_create(&d, w) != CQ_SUCCESS) {
        fprintf(stderr, "%s\n", cq_world_last_error(NULL));
        return 1;
    }
    return 0;
}

/* The water: a lattice of spacing 2r filling [lo, hi] x [0, depth) x [lo, hi], settled for
   settle steps; then the particles where the raft starts (its box grown by r) are cut out. */
static int make_water(scene *s, int settle)
{
    const double sp = 2 * s->r;
    const int nx = (int)((s->hi[0] - s->lo[0]) / sp + 1e-9), ny = (int)(s->depth / sp + 1e-9),
              nz = (int)((s->hi[2] - s->lo[2]) / sp + 1e-9);
    int n = 0, m = 0;
    cq_world *w = NULL;
    s->fx = (double *)malloc(sizeof(double) * 3 * (size_t)(nx * ny * nz));
    s->fv = (double *)malloc(sizeof(double) * 3 * (size_t)(nx * ny * nz));
    if (!s->fx || !s->fv) return 1;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i)
            for (int k = 0; k < nz; ++k) {
                s->fx[3 * n] = s->lo[0] + s->r + i * sp;
                s->fx[3 * n + 1] = s->r + j * sp;
                s->fx[3 * n + 2] = s->lo[2] + s->r + k * sp;
                ++n;
            }
    if (new_world(s, &w)) return 1;
    if (cq_world_add_fluid(w, n, s->fx, NULL) != CQ_SUCCESS || cq_world_step(w, settle) != CQ_SUCCESS ||
        cq_world_get_fluid(w, CQ_FIELD_X, s->fx) != CQ_SUCCESS || cq_world_get_fluid(w, CQ_FIELD_V, s->fv) != CQ_SUCCESS) {
        fprintf(stderr, "settling the water: %s\n", cq_world_last_error(w));
        cq_world_destroy(w);
        return 1;
    }
    cq_world_destroy(w);
    {   /* the water level: the top layer's mean height + r (each particle fills a cube of side 2r) */
        double top = 0;
        int c = 0;
        for (int i = 0; i < n; ++i)
            if (s->fx[3 * i + 1] > s->depth - 2 * s->r) { top += s->fx[3 * i + 1]; ++c; }
        s->level = top / (c > 0 ? c : 1) + s->r;
    }
    s->xt[1] = s->level;                                       /* afloat: half submerged (Archimedes) */
    s->x0[1] = s->level + SCALE * (X0_PAPER[1] - XT_PAPER[1]); /* and 0.1 paper metres higher at the start */
    for (int i = 0; i < n; ++i) {
        int inside = 1;
        for (int a = 0; a < 3; ++a) inside &= fabs(s->fx[3 * i + a] - s->x0[a]) < s->half[a] + s->r;
        if (inside) continue;
        memmove(s->fx + 3 * m, s->fx + 3 * i, 3 * sizeof(double));
        memmove(s->fv + 3 * m, s->fv + 3 * i, 3 * sizeof(double));
        ++m;
    }
    s->nf = m;
    return 0;
}

/* One launch: the raft at x0 with velocity p[0..2] and angular velocity p[3..5] (world frame),
   stepped to t*.  Writes its final state; with J != NULL the 13 x 6 Jacobian of that state with
   respect to p (forward mode); with rec != NULL the frames. */
static int launch(const scene *s, const double *p, cq_body_state *out, double *J, record *rec)
{
    cq_world *w = NULL;
    cq_body_desc b;
    int id = 0, rc = 1;
    double *x = rec ? (double *)malloc(sizeof(double) * 3 * (size_t)s->nf) : NULL;
    if ((rec && !x) || new_world(s, &w)) { free(x); return 1; }
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_BOX; b.density = RAFT_DENSITY; b.friction = 0.3;
    for (int a = 0; a < 3; ++a) {
        b.half_extents[a] = s->half[a]; b.x[a] = s->x0[a]; b.v[a] = p[a]; b.w[a] = p[3 + a];
    }
    if (cq_world_add_fluid(w, s->nf, s->fx, s->fv) != CQ_SUCCESS || cq_world_add_body(w, &b, &id) != CQ_SUCCESS ||
        (J && cq_world_track(w, id) != CQ_SUCCESS))
        goto done;
    for (int f = 0; f < s->frames; ++f) {
        if (f > 0 && cq_world_step(w, s->every) != CQ_SUCCESS) goto done;
        if (rec) {
            if (cq_world_get_fluid(w, CQ_FIELD_X, x) != CQ_SUCCESS || cq_world_get_body(w, id, &rec->b[f]) != CQ_SUCCESS) goto done;
            for (int i = 0; i < 3 * s->nf; ++i) rec->fx[(size_t)f * 3 * (size_t)s->nf + (size_t)i] = (float)x[i];
        }
    }
    if (cq_world_get_body(w, id, out) != CQ_SUCCESS || (J && cq_world_body_jacobian(w, id, J) != CQ_SUCCESS)) goto done;
    rc = 0;
done:
    if (rc) fprintf(stderr, "rollout: %s\n", cq_world_last_error(w));
    cq_world_destroy(w);
    free(x);
    return rc;
}

static double dot4(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]; }

/* The loss of a final state: W_POSITION |(x - x*) / SCALE|^2 (positions in the paper's metres)
   + W_ROTATION (1 - (q . q*)^2); with grad != NULL, dL/d(v0, w0) through J. */
static double loss_of(const scene *s, const cq_body_state *b, const double *J, double *grad)
{
    double L = 0, dLds[7];
    const double c = dot4(b->q, Q_TARGET);
    for (int a = 0; a < 3; ++a) {
        const double e = (b->x[a] - s->xt[a]) / SCALE;
        L += W_POSITION * e * e;
        dLds[a] = 2 * W_POSITION * e / SCALE;
    }
    L += W_ROTATION * (1 - c * c);
    for (int a = 0; a < 4; ++a) dLds[3 + a] = -2 * W_ROTATION * c * Q_TARGET[a];
    if (grad)
        for (int k = 0; k < 6; ++k) {
            grad[k] = 0;
            for (int r = 0; r < 7; ++r) grad[k] += dLds[r] * J[r * 6 + k];
        }
    return L;
}

static double position_error(const scene *s, const cq_body_state *b)
{
    double e = 0;
    for (int a = 0; a < 3; ++a) e += (b->x[a] - s->xt[a]) * (b->x[a] - s->xt[a]);
    return sqrt(e);
}

/* the angle of the rotation from q to the target, degrees (0..180) */
static double rotation_error(const cq_body_state *b)
{
    const double c = fabs(dot4(b->q, Q_TARGET)) / sqrt(dot4(b->q, b->q));
    return 2 * acos(c > 1 ? 1 : c) * 180 / PI;
}

/* *out = (L(p + h d) - L(p - h d)) / 2h: two rollouts; nonzero when one fails */
static int fd_along(const scene *s, const double *p, const double *d, double h, double *out)
{
    double pp[6], pm[6];
    cq_body_state sp, sm;
    for (int k = 0; k < 6; ++k) { pp[k] = p[k] + h * d[k]; pm[k] = p[k] - h * d[k]; }
    if (launch(s, pp, &sp, NULL, NULL) || launch(s, pm, &sm, NULL, NULL)) return 1;
    *out = (loss_of(s, &sp, NULL, NULL) - loss_of(s, &sm, NULL, NULL)) / (2 * h);
    return 0;
}

/* The forward-mode gradient against central differences of the loss: along the first update's
   direction (the gradient times the per-parameter rates; two rollouts) and, with all != 0, for
   each parameter alone (twelve more).  Nonzero when they disagree in sign along the step (or a
   rollout fails). */
static int check_gradient(const scene *s, const double *p, const double *g, const double *rate, int all)
{
    double dir[6], n = 0, fm = 0, cd = 0;
    for (int k = 0; k < 6; ++k) { dir[k] = rate[k] * g[k]; n += dir[k] * dir[k]; }
    n = sqrt(n);
    for (int k = 0; k < 6; ++k) { dir[k] /= n; fm += g[k] * dir[k]; }
    if (fd_along(s, p, dir, FD_STEP, &cd)) return 1;
    printf("dL/ds along the first step's direction: %.4f (forward mode), %.4f (central difference, s = +-%g): %s, "
           "ratio %.2f\n", fm, cd, FD_STEP, fm * cd > 0 ? "same sign" : "OPPOSITE SIGNS", cd / fm);
    if (!(fm * cd > 0)) return 1;
    for (int k = 0; all && k < 6; ++k) {
        double e[6] = {0, 0, 0, 0, 0, 0};
        const double h = k < 3 ? FD_STEP : 10 * FD_STEP;
        e[k] = 1;
        if (fd_along(s, p, e, h, &cd)) return 1;
        printf("    dL/d%s0[%c]: %9.4f (forward mode) %9.4f (central difference, +-%g)\n", k < 3 ? "v" : "w", "xyz"[k % 3],
               g[k], cd, h);
    }
    return 0;
}

/* ---- pictures: a top view (x right, z down) of the pool with the water coloured by height,
   the raft as its rotated top face with a bow mark, the target pose dashed; and a side strip */

typedef struct view { const scene *s; const record *rec; double px; int W, top_h; } view;

static void rotate(const double *q, const double *v, double *out)
{
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                         2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                         2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
    for (int a = 0; a < 3; ++a) out[a] = R[3 * a] * v[0] + R[3 * a + 1] * v[1] + R[3 * a + 2] * v[2];
}

/* fills the convex polygon of n points (pixels) with rows of 1-pixel rectangles */
static void fill_polygon(cq_img *im, const double *px, const double *py, int n, unsigned char r, unsigned char g, unsigned char b)
{
    double ylo = py[0], yhi = py[0];
    for (int i = 1; i < n; ++i) { if (py[i] < ylo) ylo = py[i]; if (py[i] > yhi) yhi = py[i]; }
    for (int y = (int)ceil(ylo); y <= (int)floor(yhi); ++y) {
        double xa = 1e9, xb = -1e9;
        for (int i = 0; i < n; ++i) {
            const int j = (i + 1) % n;
            const double y0 = py[i], y1 = py[j];
            if ((y >= y0 && y <= y1) || (y >= y1 && y <= y0)) {
                const double t = y1 != y0 ? (y - y0) / (y1 - y0) : 0, x = px[i] + t * (px[j] - px[i]);
                if (x < xa) xa = x;
                if (x > xb) xb = x;
                if (y1 == y0) { if (px[j] < xa) xa = px[j]; if (px[j] > xb) xb = px[j]; }
            }
        }
        if (xb >= xa) cq_img_rect(im, (int)lround(xa), y, (int)lround(xb), y, r, g, b);
    }
}

static void thick_line(cq_img *im, double x0, double y0, double x1, double y1, unsigned char r, unsigned char g, unsigned char b)
{
    for (int d = -1; d <= 1; ++d) {
        cq_img_line(im, (int)lround(x0 + d), (int)lround(y0), (int)lround(x1 + d), (int)lround(y1), r, g, b);
        cq_img_line(im, (int)lround(x0), (int)lround(y0 + d), (int)lround(x1), (int)lround(y1 + d), r, g, b);
    }
}

/* the outline of the raft's box seen from above (side = 0: x right, z down) or from the side
   (side = 1: x right, y up, below the top view): the convex hull of its 8 projected corners, in
   pixels; returns the number of hull points (<= 8) */
static int raft_outline(const view *v, const double *x, const double *q, int side, double *px, double *py)
{
    double cx[8], cy[8], hx[9], hy[9];
    int n = 0, idx[8];
    for (int c = 0; c < 8; ++c) {
        const double l[3] = {(c & 1 ? 1 : -1) * v->s->half[0], (c & 2 ? 1 : -1) * v->s->half[1], (c & 4 ? 1 : -1) * v->s->half[2]};
        double wv[3];
        rotate(q, l, wv);
        cx[c] = (x[0] + wv[0] - v->s->lo[0]) * v->px;
        cy[c] = side ? v->top_h + 6 + (v->s->hi[1] - x[1] - wv[1]) * v->px : (x[2] + wv[2] - v->s->lo[2]) * v->px;
        idx[c] = c;
    }
    for (int i = 1; i < 8; ++i)            /* sort by x, then y (insertion sort) */
        for (int j = i; j > 0 && (cx[idx[j]] < cx[idx[j - 1]] || (cx[idx[j]] == cx[idx[j - 1]] && cy[idx[j]] < cy[idx[j - 1]])); --j) {
            const int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
        }
    for (int pass = 0; pass < 2; ++pass) { /* Andrew's monotone chain: lower hull, then upper */
        const int start = n;
        for (int k = 0; k < 8; ++k) {
            const int i = idx[pass ? 7 - k : k];
            while (n >= start + 2 && (hx[n - 1] - hx[n - 2]) * (cy[i] - hy[n - 2]) - (hy[n - 1] - hy[n - 2]) * (cx[i] - hx[n - 2]) <= 0) --n;
            hx[n] = cx[i]; hy[n] = cy[i]; ++n;
        }
        --n;                               /* the last point starts the other chain */
    }
    for (int i = 0; i < n; ++i) { px[i] = hx[i]; py[i] = hy[i]; }
    return n;
}

/* the top face's corners seen from above (the target's dashed outline) */
static void top_corners(const view *v, const double *x, const double *q, double *px, double *py)
{
    static const int sgn[4][2] = {{1, 1}, {1, -1}, {-1, -1}, {-1, 1}};
    for (int c = 0; c < 4; ++c) {
        const double l[3] = {sgn[c][0] * v->s->half[0], v->s->half[1], sgn[c][1] * v->s->half[2]};
        double wv[3];
        rotate(q, l, wv);
        px[c] = (x[0] + wv[0] - v->s->lo[0]) * v->px;
        py[c] = (x[2] + wv[2] - v->s->lo[2]) * v->px;
    }
}

static void draw_target(cq_img *im, const view *v)
{   /* the target pose: the turned raft's outline, dashed, and its bow mark (pointing along -x) */
    const scene *s = v->s;
    double cx[4], cy[4], bow[3], l[3] = {0, 0, 0};
    top_corners(v, s->xt, Q_TARGET, cx, cy);
    for (int c = 0; c < 4; ++c) {
        const int d = (c + 1) % 4;
        for (int k = 0; k < 10; k += 2)
            thick_line(im, cx[c] + (cx[d] - cx[c]) * k / 10, cy[c] + (cy[d] - cy[c]) * k / 10,
                       cx[c] + (cx[d] - cx[c]) * (k + 1) / 10, cy[c] + (cy[d] - cy[c]) * (k + 1) / 10, 210, 30, 30);
    }
    l[0] = s->half[0];
    rotate(Q_TARGET, l, bow);
    thick_line(im, (s->xt[0] - s->lo[0]) * v->px, (s->xt[2] - s->lo[2]) * v->px,
               (s->xt[0] + 0.8 * bow[0] - s->lo[0]) * v->px, (s->xt[2] + 0.8 * bow[2] - s->lo[2]) * v->px, 210, 30, 30);
    cq_img_disc(im, (s->xt[0] + 0.8 * bow[0] - s->lo[0]) * v->px, (s->xt[2] + 0.8 * bow[2] - s->lo[2]) * v->px, 4, 210, 30, 30);
}

static void draw_frame(cq_img *im, int f, void *user)
{
    const view *v = (const view *)user;
    const scene *s = v->s;
    const float *fx = v->rec->fx + (size_t)f * 3 * (size_t)s->nf;
    const cq_body_state *b = &v->rec->b[f];
    const double dr = 0.8 * s->r * v->px, side_y0 = v->top_h + 6;
    double px[8], py[8], bow[3], l[3] = {0, 0, 0};
    char buf[96];
    cq_img_clear(im, 245, 245, 240);
    cq_img_rect(im, 0, 0, v->W - 1, v->top_h - 1, 20, 50, 110);
    for (int i = 0; i < s->nf; ++i) {      /* top view: the upper layers of water, lighter where higher (waves) */
        const double h = (fx[3 * i + 1] - (s->level - 2 * s->r)) / (2 * s->r), t = h < 0 ? 0 : h > 1 ? 1 : h;
        if (fx[3 * i + 1] < s->level - 3 * s->r) continue;
        cq_img_disc(im, (fx[3 * i] - s->lo[0]) * v->px, (fx[3 * i + 2] - s->lo[2]) * v->px, dr,
                    (unsigned char)(40 + 170 * t), (unsigned char)(100 + 130 * t), (unsigned char)(200 + 55 * t));
    }
    for (int g = 1; g <= f; ++g)           /* the raft's path */
        thick_line(im, (v->rec->b[g - 1].x[0] - s->lo[0]) * v->px, (v->rec->b[g - 1].x[2] - s->lo[2]) * v->px,
                   (v->rec->b[g].x[0] - s->lo[0]) * v->px, (v->rec->b[g].x[2] - s->lo[2]) * v->px, 250, 220, 90);
    fill_polygon(im, px, py, raft_outline(v, b->x, b->q, 0, px, py), 170, 120, 60);
    l[0] = s->half[0];
    rotate(b->q, l, bow);                  /* its bow mark: from the centre towards the local +x end */
    thick_line(im, (b->x[0] - s->lo[0]) * v->px, (b->x[2] - s->lo[2]) * v->px,
               (b->x[0] + 0.8 * bow[0] - s->lo[0]) * v->px, (b->x[2] + 0.8 * bow[2] - s->lo[2]) * v->px, 60, 30, 10);
    cq_img_disc(im, (b->x[0] + 0.8 * bow[0] - s->lo[0]) * v->px, (b->x[2] + 0.8 * bow[2] - s->lo[2]) * v->px, 4, 60, 30, 10);
    draw_target(im, v);
    /* the side strip (x right, y up): the water in the raft's slice, the raft, the target height */
    for (int i = 0; i < s->nf; ++i)
        if (fabs(fx[3 * i + 2] - b->x[2]) < 2 * s->r)
            cq_img_disc(im, (fx[3 * i] - s->lo[0]) * v->px, side_y0 + (s->hi[1] - fx[3 * i + 1]) * v->px, dr, 40, 110, 220);
    fill_polygon(im, px, py, raft_outline(v, b->x, b->q, 1, px, py), 170, 120, 60);
    cq_img_line(im, (int)lround((s->xt[0] - s->half[0] - s->lo[0]) * v->px), (int)lround(side_y0 + (s->hi[1] - s->xt[1]) * v->px),
                (int)lround((s->xt[0] + s->half[0] - s->lo[0]) * v->px), (int)lround(side_y0 + (s->hi[1] - s->xt[1]) * v->px), 210, 30, 30);
    snprintf(buf, sizeof buf, "T = %.2f S (T* = %.2f S)", f * s->every * s->dt, s->steps * s->dt);
    cq_img_text(im, 6, 6, buf, 1, 255, 255, 255);
    snprintf(buf, sizeof buf, "MISS %.3f M  TURN ERROR %.0f DEG", position_error(s, b), rotation_error(b));
    cq_img_text(im, 6, 16, buf, 1, 255, 255, 255);
    cq_img_text(im, 6, v->top_h + 8, "SIDE VIEW", 1, 60, 60, 60);
}

/* ---- arguments: --size paper */
static int size_arg(int argc, char **argv, int *i, void *user)
{
    int *paper = (int *)user;
    if (strcmp(argv[*i], "--size") != 0) return 0;
    if (*i + 1 >= argc || (strcmp(argv[*i + 1], "paper") != 0 && strcmp(argv[*i + 1], "small") != 0)) {
        fprintf(stderr, "--size takes small or paper\n");
        exit(1);
    }
    *paper = strcmp(argv[++*i], "paper") == 0;
    return 1;
}

int main(int argc, char **argv)
{
    static const unsigned char LINE[1][3] = {{30, 90, 200}}, DOT[1][3] = {{200, 50, 40}};
    static const double rate_scale[6] = {1, 1, 1, LR_W / LR_V, LR_W / LR_V, LR_W / LR_V};
    const double t_start = wall_seconds();
    cqx_args args;
    int paper = 0, iters, rc = 1, it, done_iters = 0, reached = 0, best_it = 0;
    scene s;
    record rec = {NULL, NULL}, best = {NULL, NULL};
    double p[6], g[6], J[78], best_p[6] = {0, 0, 0, 0, 0, 0}, losses[MAX_ITERS], tol_pos, best_loss = HUGE_VAL;
    cq_body_state bs, best_state;
    cq_robot_optimizer_desc od;
    cq_robot_optimizer *opt = NULL;
    char path[1024];
    const double *curve[1];
    size_t frame_floats;

    if (cqx_parse_args(argc, argv, 0, size_arg, &paper, &args)) return 1;
    memset(&s, 0, sizeof s);
    memset(&best_state, 0, sizeof best_state);
    s.r = paper ? 0.01 : 0.02;
    s.dt = paper ? 0.004 : 0.008;
    s.every = paper ? 4 : 2;
    s.frames = (int)lround(T_STAR_PAPER * sqrt(SCALE) / s.dt) / s.every + 1;   /* t*, Froude-scaled */
    s.steps = (s.frames - 1) * s.every;
    s.lo[0] = -0.32; s.hi[0] = 0.32; s.lo[2] = -0.24; s.hi[2] = 0.24;
    s.depth = 0.16; s.lo[1] = 0; s.hi[1] = s.depth + 0.08;
    s.half[0] = 0.10; s.half[1] = 0.03; s.half[2] = 0.06;
    for (int a = 0; a < 3; a += 2) { s.x0[a] = SCALE * X0_PAPER[a]; s.xt[a] = SCALE * XT_PAPER[a]; }
    tol_pos = TOL_POS_PAPER * SCALE;
    iters = args.quick ? 3 : MAX_ITERS;
    if (make_water(&s, (int)lround(0.4 / s.dt))) return 1;
    printf("rafting (3D): %d fluid particles (r = %g m), raft %.2f x %.2f x %.2f m of %g kg/m^3, %d steps of %g s to t* = %.3f s\n",
           s.nf, s.r, 2 * s.half[0], 2 * s.half[1], 2 * s.half[2], RAFT_DENSITY, s.steps, s.dt, s.steps * s.dt);
    printf("start (%.3f, %.3f, %.3f), target (%.3f, %.3f, %.3f) turned 180 deg about y (water level %.4f m); "
           "tolerance %.3f m and %.0f deg\n", s.x0[0], s.x0[1], s.x0[2], s.xt[0], s.xt[1], s.xt[2], s.level, tol_pos, TOL_ROT_DEG);

    frame_floats = 3 * (size_t)s.nf * (size_t)s.frames;
    rec.fx = (float *)malloc(sizeof(float) * frame_floats);
    rec.b = (cq_body_state *)malloc(sizeof(cq_body_state) * (size_t)s.frames);
    best.fx = (float *)malloc(sizeof(float) * frame_floats);
    best.b = (cq_body_state *)malloc(sizeof(cq_body_state) * (size_t)s.frames);
    if (!rec.fx || !rec.b || !best.fx || !best.b) { fprintf(stderr, "out of memory\n"); goto done; }

    /* the initial guess: a push towards the target and a spin about y (a spin is needed: E_rot's
       gradient vanishes at the unturned pose) */
    p[0] = 0.5; p[1] = 0; p[2] = 0.3; p[3] = 0; p[4] = 5; p[5] = 0;
    memset(&od, 0, sizeof od);
    od.kind = CQ_ROBOT_OPTIMIZER_GD; od.params = 6; od.learning_rate = LR_V; od.rate_scale = rate_scale;
    od.plateau_patience = PATIENCE;   /* halve both rates after PATIENCE iterations without a new best */
    if (cq_robot_optimizer_create(&od, &opt) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_robot_last_error(NULL)); goto done; }
    curve[0] = losses;
    for (it = 0; it < iters; ++it) {
        double L, pe, re;
        int reduced = 0;
        if (launch(&s, p, &bs, J, &rec)) goto done;
        L = loss_of(&s, &bs, J, g);
        losses[it] = L;
        done_iters = it + 1;
        pe = position_error(&s, &bs);
        re = rotation_error(&bs);
        if (L < best_loss) {
            best_loss = L; best_it = it; best_state = bs;
            memcpy(best_p, p, sizeof p);
            memcpy(best.fx, rec.fx, sizeof(float) * frame_floats);
            memcpy(best.b, rec.b, sizeof(cq_body_state) * (size_t)s.frames);
        }
        printf("iteration %2d: loss %.5f (miss %.4f m, turn error %5.1f deg)  v0 (%.3f %.3f %.3f) w0 (%.2f %.2f %.2f)  "
               "lr_v %.3g lr_w %.3g  %.1f s\n", it, L, pe, re, p[0], p[1], p[2], p[3], p[4], p[5],
               cq_robot_optimizer_learning_rate(opt), cq_robot_optimizer_learning_rate(opt) * LR_W / LR_V, wall_seconds() - t_start);
        fflush(stdout);
        if (it == 0 && check_gradient(&s, p, g, rate_scale, !args.quick)) goto done;
        if (!args.quick && pe < tol_pos && re < TOL_ROT_DEG) { reached = 1; break; }
        if (it + 1 < iters) {
            if (cq_robot_optimizer_report(opt, L, &reduced) != CQ_SUCCESS || cq_robot_optimizer_step(opt, p, g) != CQ_SUCCESS) {
                fprintf(stderr, "%s\n", cq_robot_last_error(opt));
                goto done;
            }
            if (reduced) printf("    plateau: learning rates halved\n");
        }
    }
    printf("best: iteration %d, loss %.5f, miss %.4f m, turn error %.1f deg; v0 (%.3f %.3f %.3f) w0 (%.2f %.2f %.2f); %.1f s\n",
           best_it, best_loss, position_error(&s, &best_state), rotation_error(&best_state), best_p[0], best_p[1], best_p[2],
           best_p[3], best_p[4], best_p[5], wall_seconds() - t_start);

    snprintf(path, sizeof path, "%s/rafting_loss.png", args.dir);
    if (cqx_plot_log_loss_labeled(path, "WATER RAFTING: POSE LOSS AT T*", "LOSS", 1, NULL, curve, done_iters, LINE, DOT)) {
        fprintf(stderr, "cannot write %s\n", path);
        goto done;
    }
    {   /* the best launch: a GIF and its last frame */
        view v;
        cq_img im;
        int frames = 0, h;
        v.s = &s; v.rec = &best; v.W = 560; v.px = v.W / (s.hi[0] - s.lo[0]);
        v.top_h = (int)lround((s.hi[2] - s.lo[2]) * v.px);
        h = v.top_h + 12 + (int)lround(s.hi[1] * v.px);
        snprintf(path, sizeof path, "%s/rafting.gif", args.dir);
        if (cqx_write_gif(path, v.W, h, 8, s.frames - 1, 1, draw_frame, &v, &frames)) {
            fprintf(stderr, "cannot write %s\n", path);
            goto done;
        }
        if (cq_img_init(&im, v.W, h)) goto done;
        draw_frame(&im, s.frames - 1, &v);
        snprintf(path, sizeof path, "%s/rafting_final.png", args.dir);
        h = cq_img_write_png(path, &im);
        cq_img_free(&im);
        if (h) { fprintf(stderr, "cannot write %s\n", path); goto done; }
        printf("wrote %s/rafting.gif (%d frames), rafting_final.png, rafting_loss.png\n", args.dir, frames);
    }
    if (args.quick) rc = cqx_quick_verdict(done_iters, losses[0], losses[done_iters - 1]);
    else {
        rc = reached ? 0 : 1;
        printf("target %s (%.3f m, %.0f deg) after %d iterations, %.1f s\n", reached ? "reached" : "NOT reached", tol_pos,
               TOL_ROT_DEG, done_iters, wall_seconds() - t_start);
    }
done:
    cq_robot_optimizer_destroy(opt);
    free(s.fx); free(s.fv); free(rec.fx); free(rec.b); free(best.fx); free(best.b);
    return rc;
}
