/* test_batch.c - batched scenes (cq_sim_desc.scenes, cq_particles_desc.scene; DESIGN.md section 8).

   A batched sim of K = 3 or 4 different scenes (blocks at different, overlapping places, own
   velocities, per-particle Young's moduli and Poisson ratios, own actuator groups k and K + k,
   blocks against the walls) against K sims that each hold one scene alone (same desc with
   scenes = 0, the scene's particles in the same relative order, the same actuation table):

     forward        x, v, C, F after the steps, bitwise, for 2D/3D x f32/f64 x corotated/
                    NeoHookean, the particles added sorted by scene (descending), interleaved
                    (0,1,2,0,1,2,...) or randomly merged in several cq_sim_add_particles calls
     reverse        checkpoint_every = 2: the state, all 8 gradient fields and every step's
                    per-group actuation gradients (read in the backward hook, which also adds a
                    running loss), bitwise
     host threads   the same with cq_sim_desc.threads (workers = 3, odd and uneven ranges run
                    out of order, inline or deferred to finish)
     validation     scenes < 0, a grid too large in all, get_desc's scenes = 1 for 0, a bad scene
                    of a particle (refused, named, the sim unchanged), scene != NULL with 1 scene
     failing step   a particle thrown out of the domain: CQ_ERROR_OUT_OF_DOMAIN naming it, every
                    scene at the step's start, the step count unchanged; with the scenes in
                    descending order (the lanes' order differs from the index order) the lowest
                    failing particle named, and the adjoint check's lowest non-finite entry
     CUDA           with $CQ_CUDA_LIBRARY set (the mock driver: the same C code, run serially) and
                    a CUDA sim creatable: batched CUDA against batched CPU bitwise (state and
                    gradients), twice from reset bitwise, no device memory leaked.  Else SKIP.

   ./test_batch [filter]      (make test runs it plain, and with the mock driver and filter "cuda";
                               built with -DTEST_BATCH_ODD_GRIDS, grids of 25^2 and 17^3 nodes) */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>
#include <limits.h>
#include <dlfcn.h>

#define STEPS 6
#define MAXK 4

static const char *FIELD[8] = {"x", "v", "C", "F", "mass", "volume", "youngs", "poisson"};
static const char *MAT[3] = {"?", "corotated", "neohookean"};

typedef struct variant { int dim, prec, mat, K, layout, boundary; } variant;
enum { LAYOUT_SORTED, LAYOUT_INTERLEAVED, LAYOUT_CHUNKS };
static const char *LAYOUT[3] = {"sorted by scene", "interleaved", "merged in chunks"};

/* dim, precision (1 f32, 2 f64), material (1 corotated, 2 NeoHookean), scenes, layout, boundary */
static const variant VARIANTS[8] = {
    {2, 1, 1, 3, LAYOUT_SORTED, 1},      {2, 2, 1, 4, LAYOUT_INTERLEAVED, 2},
    {2, 1, 2, 4, LAYOUT_CHUNKS, 3},      {2, 2, 2, 3, LAYOUT_INTERLEAVED, 4},
    {3, 1, 1, 4, LAYOUT_INTERLEAVED, 1}, {3, 2, 1, 3, LAYOUT_CHUNKS, 2},
    {3, 1, 2, 3, LAYOUT_SORTED, 3},      {3, 2, 2, 4, LAYOUT_CHUNKS, 4}};

static void vname(const variant *v, char *buf, size_t n)
{
    snprintf(buf, n, "%dD f%d %s K=%d %s", v->dim, v->prec == 1 ? 32 : 64, MAT[v->mat], v->K, LAYOUT[v->layout]);
}

static double urand(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (*s >> 8) / 16777216.0; }

/* ------------------------------------------------------------------ the particles */
typedef struct batch {
    int dim, K, G, n;                  /* G = 2K actuator groups: scene k uses k and K + k */
    double *x, *v, *E, *nu, *seed_x, *seed_v, *w;   /* w: running-loss weights (hook), n*dim */
    int *act, *scene;
} batch;

static void batch_free(batch *b)
{
    free(b->x); free(b->v); free(b->E); free(b->nu); free(b->seed_x); free(b->seed_v); free(b->w);
    free(b->act); free(b->scene);
    memset(b, 0, sizeof *b);
}

static int batch_alloc(batch *b, int n)
{
    memset(b, 0, sizeof *b);
    b->x = (double *)malloc(sizeof(double) * 3 * (size_t)n); b->v = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    b->E = (double *)malloc(sizeof(double) * (size_t)n); b->nu = (double *)malloc(sizeof(double) * (size_t)n);
    b->seed_x = (double *)malloc(sizeof(double) * 3 * (size_t)n); b->seed_v = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    b->w = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    b->act = (int *)malloc(sizeof(int) * (size_t)n); b->scene = (int *)malloc(sizeof(int) * (size_t)n);
    b->n = n;
    if (b->x && b->v && b->E && b->nu && b->seed_x && b->seed_v && b->w && b->act && b->scene) return 1;
    batch_free(b);
    return 0;
}

static int side_of(int dim, int k) { return dim == 2 ? 12 + k : (k % 2 ? 5 : 6); }

/* the scenes' particles, in the batched sim's order (per layout; each scene's own particles keep
   their relative order) */
static int build(const variant *v, batch *b)
{
    const int dim = v->dim, K = v->K;
    const double dx = 1.0 / (dim == 2 ? 24 : 16), h = dx / 2;
    int cnt[MAXK], first[MAXK], taken[MAXK], total = 0, *order;
    unsigned seed = 12345u + 77u * (unsigned)(dim * 10 + v->prec * 3 + v->mat);
    batch t;   /* scene-sorted */
    for (int k = 0; k < K; ++k) {
        int s = side_of(dim, k);
        cnt[k] = dim == 2 ? s * s : s * s * s;
        first[k] = total; total += cnt[k]; taken[k] = 0;
    }
    order = (int *)malloc(sizeof(int) * (size_t)total);
    if (!order || !batch_alloc(&t, total)) { free(order); return 0; }
    if (!batch_alloc(b, total)) { batch_free(&t); free(order); return 0; }
    b->dim = t.dim = dim; b->K = t.K = K; b->G = t.G = 2 * K;
    for (int k = 0; k < K; ++k) {
        const int s = side_of(dim, k);
        double corner[3], vel[3];
        /* overlapping places (a shared grid would make them collide); scene 1 on the floor's
           wall, scene 2 against the +x wall, both moving into them */
        if (dim == 2) {
            corner[0] = k == 2 ? 0.555 : 0.27 + 0.035 * k; corner[1] = k == 1 ? 0.135 : 0.25 + 0.05 * k; corner[2] = 0;
        } else {
            corner[0] = k == 2 ? 0.63 : 0.33 + 0.03 * k; corner[1] = k == 1 ? 0.19 : 0.30 + 0.04 * k; corner[2] = 0.36 - 0.025 * k;
        }
        vel[0] = k == 2 ? 1.0 : 0.8 - 0.5 * k; vel[1] = k == 1 ? -2.0 : 0.3 - 0.2 * k; vel[2] = 0.1 * k;
        for (int j = 0; j < cnt[k]; ++j) {
            const int p = first[k] + j, a[3] = {j % s, (j / s) % s, j / (s * s)};
            for (int q = 0; q < dim; ++q) {
                t.x[p * dim + q] = corner[q] + (a[q] + 0.5) * h + 0.1 * h * (urand(&seed) - 0.5);
                t.v[p * dim + q] = vel[q] + 0.2 * (urand(&seed) - 0.5);
                t.seed_x[p * dim + q] = urand(&seed) - 0.5;
                t.seed_v[p * dim + q] = 0.1 * (urand(&seed) - 0.5);
                t.w[p * dim + q] = 0.01 * (urand(&seed) - 0.5);
            }
            t.E[p] = 1e3 * (1 + k) * (1 + 0.3 * urand(&seed));
            t.nu[p] = 0.2 + 0.05 * k + 0.02 * urand(&seed);
            t.act[p] = a[0] < s / 3 ? k : a[0] >= s - s / 3 ? K + k : -1;
            t.scene[p] = k;
        }
    }
    /* the batched order */
    if (v->layout == LAYOUT_SORTED) {
        int m = 0;
        for (int k = K - 1; k >= 0; --k) for (int j = 0; j < cnt[k]; ++j) order[m++] = first[k] + j;
    } else if (v->layout == LAYOUT_INTERLEAVED) {
        int m = 0;
        while (m < total)
            for (int k = 0; k < K; ++k) if (taken[k] < cnt[k]) order[m++] = first[k] + taken[k]++;
    } else {
        unsigned s2 = 999u;
        for (int m = 0; m < total; ++m) {
            int k = (int)(urand(&s2) * K);
            if (k >= K) k = K - 1;
            while (taken[k] >= cnt[k]) k = (k + 1) % K;
            order[m] = first[k] + taken[k]++;
        }
    }
    for (int m = 0; m < total; ++m) {
        const int p = order[m];
        for (int q = 0; q < dim; ++q) {
            b->x[m * dim + q] = t.x[p * dim + q]; b->v[m * dim + q] = t.v[p * dim + q];
            b->seed_x[m * dim + q] = t.seed_x[p * dim + q]; b->seed_v[m * dim + q] = t.seed_v[p * dim + q];
            b->w[m * dim + q] = t.w[p * dim + q];
        }
        b->E[m] = t.E[p]; b->nu[m] = t.nu[p]; b->act[m] = t.act[p]; b->scene[m] = t.scene[p];
    }
    batch_free(&t); free(order);
    return 1;
}

/* the batched indices of scene k's particles, in order; returns their count */
static int scene_indices(const batch *b, int k, int *idx)
{
    int m = 0;
    for (int p = 0; p < b->n; ++p) if (b->scene[p] == k) idx[m++] = p;
    return m;
}

/* ------------------------------------------------------------------ the host's threads */
/* ranges of uneven lengths (base, base + 3, base + 1, ... each >= min_range), run out of order
   (odd-numbered ones first, then the even ones backwards) with scattered worker indices, either
   inside enqueue (returns NULL) or deferred to finish */
typedef struct split_pool { int workers, range, deferred, calls; } split_pool;
typedef struct deferred_task { cq_task_fn task; void *ctx; int items, base, workers; } deferred_task;

static void run_ranges(cq_task_fn task, void *ctx, int items, int base, int workers)
{
    const int len[3] = {base, base + 3, base + 1};
    int count = 0, *start = (int *)malloc(sizeof(int) * ((size_t)items + 2));
    if (!start) { task(0, items, 0, ctx); return; }
    for (int b = 0; b < items; b += len[count % 3]) start[count++] = b;
    start[count] = items;
    for (int r = 1; r < count; r += 2) task(start[r], start[r + 1], (2 * r + 1) % workers, ctx);
    for (int r = (count - 1) / 2 * 2; r >= 0; r -= 2) task(start[r], start[r + 1], (2 * r + 1) % workers, ctx);
    free(start);
}

static void *split_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    split_pool *p = (split_pool *)user;
    const int base = p->range < min_range ? min_range : p->range;
    deferred_task *d;
    ++p->calls;
    if (p->deferred && (d = (deferred_task *)malloc(sizeof *d)) != NULL) {
        d->task = task; d->ctx = ctx; d->items = items; d->base = base; d->workers = p->workers;
        return d;
    }
    run_ranges(task, ctx, items, base, p->workers);
    return NULL;
}

static void split_finish(void *handle, void *user)
{
    deferred_task *d = (deferred_task *)handle;
    (void)user;
    if (!d) return;
    run_ranges(d->task, d->ctx, d->items, d->base, d->workers);
    free(d);
}

/* ------------------------------------------------------------------ one run */
typedef struct result {
    int n, dim, G, ok;
    double *st[4], *gr[8], *ag;        /* state x v C F; the 8 gradients; ag[step][G][dd] */
    cq_backend backend;
    size_t tape;                       /* cq_sim_tape_bytes after the backward */
    double *mem;
} result;

static int result_alloc(result *r, int n, int dim, int G)
{
    const int dd = dim * dim;
    const size_t ns = (size_t)n * (size_t)(2 * dim + 2 * dd), ng = (size_t)n * (size_t)(2 * dim + 2 * dd + 4);
    const size_t na = (size_t)STEPS * (size_t)G * (size_t)dd;
    double *m = (double *)calloc(ns + ng + na + 1, sizeof(double));
    memset(r, 0, sizeof *r);
    if (!m) return 0;
    r->mem = m; r->n = n; r->dim = dim; r->G = G;
    r->st[0] = m; r->st[1] = m + (size_t)n * dim; r->st[2] = m + (size_t)n * 2 * dim; r->st[3] = r->st[2] + (size_t)n * dd;
    m += ns;
    r->gr[0] = m; r->gr[1] = m + (size_t)n * dim; r->gr[2] = m + (size_t)n * 2 * dim; r->gr[3] = r->gr[2] + (size_t)n * dd;
    for (int f = 4; f < 8; ++f) r->gr[f] = r->gr[3] + (size_t)n * dd + (size_t)n * (f - 4);
    r->ag = m + ng;
    return 1;
}
static void result_free(result *r) { free(r->mem); memset(r, 0, sizeof *r); }
static int state_size(int dim, int f) { return f < 2 ? dim : dim * dim; }
static int grad_size(int dim, int f) { return f < 2 ? dim : f < 4 ? dim * dim : 1; }

static void actuation(int dim, int G, int step, double *u)
{
    const int dd = dim * dim;
    for (int g = 0; g < G; ++g)
        for (int a = 0; a < dd; ++a)
            u[g * dd + a] = a % (dim + 1) == 0 ? 150.0 * sin(0.9 * step + 1.3 * g) : a == 1 ? 20.0 * (g + 1) : -7.0 * g;
}

typedef struct hook_ctx { result *out; const double *w; int per_step; } hook_ctx;
static void hook(cq_sim *s, int step, void *user)
{
    hook_ctx *h = (hook_ctx *)user;
    CHECK(step >= 0 && step < STEPS, "hook called for step %d", step);
    if (step < 0 || step >= STEPS) return;
    CHECK_OK(cq_sim_actuation_grad(s, h->out->ag + (size_t)step * (size_t)h->per_step));
    CHECK_OK(cq_sim_add_state_grad(s, CQ_FIELD_X, h->w));   /* a running loss sum_n w . x_n */
}

typedef struct run_opts {
    cq_backend backend;
    int ckpt;              /* 0: forward only */
    int nscenes;           /* 0: a plain sim (no scene array); else the batch's K with its scenes */
    int chunks;            /* add the particles in several calls of uneven sizes */
    split_pool *pool;      /* the host's threads, or NULL */
    int cache_mb;          /* cq_sim_desc.backward_cache_mb (0: the default) */
} run_opts;

static cq_sim_desc make_desc(const variant *v, const run_opts *o)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    d.dim = v->dim; d.res[0] = d.res[1] = d.res[2] = v->dim == 2 ? 24 : 16; d.dx = 1.0 / d.res[0];
#if defined(TEST_BATCH_ODD_GRIDS)   /* grids of 25^2 and 17^3 nodes, no multiple of a vector's width: a
                                       scene's grid then starts at other places of the vectors than
                                       alone (the wall at +x moves out by one cell) */
    d.res[0] = d.res[1] = d.res[2] = v->dim == 2 ? 25 : 17;
#endif
    d.dt = 1e-4; d.substeps = 2; d.gravity[1] = -9.8;
    d.material = (cq_material)v->mat; d.precision = (cq_precision)v->prec; d.backend = o->backend;
    d.boundary = (cq_boundary)v->boundary; d.friction = 0.4; d.checkpoint_every = o->ckpt;
    d.scenes = o->nscenes; d.logger.func = cq_log_silent; d.backward_cache_mb = o->cache_mb;
    if (o->pool) {
        d.threads.workers = o->pool->workers; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish;
        d.threads.user = o->pool;
    }
    return d;
}

/* one pass: STEPS steps (the actuation table set before each), the state read, then with a tape
   the backward pass (seeds, hook) and the 8 gradients */
static int one_pass(cq_sim *s, const variant *v, const double *sx, const double *sv, const double *w, const run_opts *o,
                    result *out)
{
    const int dd = v->dim * v->dim, G = 2 * v->K;
    double u[2 * MAXK * 9];
    hook_ctx hc;
    for (int n = 0; n < STEPS; ++n) {
        actuation(v->dim, G, n, u);
        if (cq_sim_set_actuation(s, G, u) != CQ_SUCCESS || cq_sim_step(s, 1) != CQ_SUCCESS) {
            printf("    step %d: %s\n", n, cq_sim_last_error(s));
            return 0;
        }
    }
    for (int f = 0; f < 4; ++f)
        if (cq_sim_get(s, (cq_field)f, out->st[f]) != CQ_SUCCESS) { printf("    get: %s\n", cq_sim_last_error(s)); return 0; }
    if (!o->ckpt) return 1;
    hc.out = out; hc.w = w; hc.per_step = G * dd;
    if (cq_sim_backward(s, sx, sv, NULL, NULL, hook, &hc) != CQ_SUCCESS) { printf("    backward: %s\n", cq_sim_last_error(s)); return 0; }
    for (int f = 0; f < 8; ++f)
        if (cq_sim_grad(s, (cq_field)f, out->gr[f]) != CQ_SUCCESS) { printf("    grad: %s\n", cq_sim_last_error(s)); return 0; }
    out->tape = cq_sim_tape_bytes(s);
    return 1;
}

/* runs particles idx[0..m) of b (in that order) in one sim; with out2: reset, and again */
static int run(const variant *v, const batch *b, const int *idx, int m, const run_opts *o, result *out, result *out2)
{
    const int dim = v->dim;
    cq_sim_desc d = make_desc(v, o);
    cq_sim *s = NULL;
    cq_particles_desc p;
    double *x = (double *)malloc(sizeof(double) * (5 * (size_t)m * dim + 2 * (size_t)m + 1));
    int *act = (int *)malloc(sizeof(int) * (2 * (size_t)m + 1)), ok = 0;
    double *vv, *sx, *sv, *w, *E, *nu;
    int *sc;
    if (out2) memset(out2, 0, sizeof *out2);
    if (!result_alloc(out, m, dim, 2 * v->K) || (out2 && !result_alloc(out2, m, dim, 2 * v->K)) || !x || !act) goto done;
    vv = x + (size_t)m * dim; sx = vv + (size_t)m * dim; sv = sx + (size_t)m * dim; w = sv + (size_t)m * dim;
    E = w + (size_t)m * dim; nu = E + m; sc = act + m;
    for (int j = 0; j < m; ++j) {
        const int q = idx[j];
        memcpy(x + j * dim, b->x + q * dim, sizeof(double) * dim); memcpy(vv + j * dim, b->v + q * dim, sizeof(double) * dim);
        memcpy(sx + j * dim, b->seed_x + q * dim, sizeof(double) * dim); memcpy(sv + j * dim, b->seed_v + q * dim, sizeof(double) * dim);
        memcpy(w + j * dim, b->w + q * dim, sizeof(double) * dim);
        E[j] = b->E[q]; nu[j] = b->nu[q]; act[j] = b->act[q]; sc[j] = b->scene[q];
    }
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("    create: %s\n", cq_sim_last_error(NULL)); goto done; }
    out->backend = cq_sim_backend(s);
    {
        static const int chunk[5] = {17, 1, 64, 5, 33};
        int at = 0, c = 0;
        while (at < m) {
            int len = o->chunks ? chunk[c++ % 5] : m;
            if (len > m - at) len = m - at;
            memset(&p, 0, sizeof p);
            p.count = len; p.x = x + at * dim; p.v = vv + at * dim; p.youngs = E + at; p.poisson = nu + at;
            p.actuator = act + at; p.scene = o->nscenes ? sc + at : NULL;
            if (cq_sim_add_particles(s, &p) != CQ_SUCCESS) { printf("    add: %s\n", cq_sim_last_error(s)); goto done; }
            at += len;
        }
    }
    if (cq_sim_particle_count(s) != m) { printf("    %d particles in the sim, %d added\n", cq_sim_particle_count(s), m); goto done; }
    if (!one_pass(s, v, sx, sv, w, o, out)) goto done;
    out->ok = 1;
    if (out2) {
        if (cq_sim_reset(s) != CQ_SUCCESS) { printf("    reset: %s\n", cq_sim_last_error(s)); goto done; }
        if (!one_pass(s, v, sx, sv, w, o, out2)) goto done;
        out2->backend = out->backend; out2->ok = 1;
    }
    ok = 1;
done:
    cq_sim_destroy(s);
    free(x); free(act);
    return ok;
}

/* ------------------------------------------------------------------ bitwise comparisons */
/* compares A's particle map[j] (NULL: j) with B's particle j, per field; prints the first
   difference of each field (scene, particle, component, both values) */
static int compare(const char *what, const char *nameA, const char *nameB, const result *A, const result *B,
                   const int *map, int m, const int *scene_of, int grads)
{
    int total = 0;
    for (int f = 0; f < (grads ? 8 : 4); ++f) {
        const int k = grads ? grad_size(A->dim, f) : state_size(A->dim, f);
        const double *a = grads ? A->gr[f] : A->st[f], *bb = grads ? B->gr[f] : B->st[f];
        int diff = 0, fj = -1, fc = 0;
        for (int j = 0; j < m; ++j) {
            const int i = map ? map[j] : j;
            if (memcmp(a + (size_t)i * k, bb + (size_t)j * k, sizeof(double) * k) != 0) {
                if (fj < 0) {
                    fj = j;
                    for (fc = 0; fc < k && !memcmp(a + (size_t)i * k + fc, bb + (size_t)j * k + fc, sizeof(double)); ++fc) continue;
                }
                ++diff;
            }
        }
        if (diff) {
            const int i = map ? map[fj] : fj;
            CHECK(0, "%s: scene %d, %s%s of particle %d (%s) / %d (%s), component %d: %.17g vs %.17g (%d of %d particles differ)",
                  what, scene_of ? scene_of[i] : -1, grads ? "dL/d" : "", FIELD[f], i, nameA, fj, nameB, fc,
                  a[(size_t)i * k + fc], bb[(size_t)fj * k + fc], diff, m);
        }
        total += diff;
    }
    return total;
}

/* the per-group actuation gradients of every step: A's groups (NULL: 0..ng-1) against B's */
static int compare_ag(const char *what, const char *nameA, const char *nameB, const result *A, const result *B,
                      const int *groups, int ng, int scene)
{
    const int dd = A->dim * A->dim;
    int diff = 0;
    for (int n = 0; n < STEPS; ++n)
        for (int gi = 0; gi < ng; ++gi) {
            const int g = groups ? groups[gi] : gi;
            const double *a = A->ag + ((size_t)n * A->G + g) * dd, *bb = B->ag + ((size_t)n * B->G + g) * dd;
            if (memcmp(a, bb, sizeof(double) * dd) != 0) {
                int c = 0;
                while (c < dd && !memcmp(a + c, bb + c, sizeof(double))) ++c;
                if (!diff)
                    CHECK(0, "%s: scene %d, dL/du of group %d at step %d, component %d: %.17g (%s) vs %.17g (%s)",
                          what, scene, g, n, c, a[c], nameA, bb[c], nameB);
                ++diff;
            }
        }
    return diff;
}

static int any_nonzero(const double *a, size_t n) { for (size_t i = 0; i < n; ++i) if (a[i] != 0) return 1; return 0; }

/* a batched result against each scene alone (the alone runs computed here: serial, no hook) */
static void against_alone(const variant *v, const batch *b, const result *bat, const char *label, int ckpt)
{
    char what[200];
    int *idx = (int *)malloc(sizeof(int) * (size_t)b->n);
    if (!idx) { CHECK(0, "out of memory"); return; }
    for (int k = 0; k < v->K; ++k) {
        const int m = scene_indices(b, k, idx), dd = v->dim * v->dim;
        run_opts o;
        result al;
        memset(&o, 0, sizeof o);
        o.backend = CQ_BACKEND_CPU; o.ckpt = ckpt;
        snprintf(what, sizeof what, "%s", label);
        if (!run(v, b, idx, m, &o, &al, NULL)) { CHECK(0, "%s: scene %d alone: the run failed", what, k); result_free(&al); continue; }
        compare(what, "batched", "alone", bat, &al, idx, m, b->scene, 0);
        if (ckpt) {
            int groups[2];
            groups[0] = k; groups[1] = v->K + k;
            compare(what, "batched", "alone", bat, &al, idx, m, b->scene, 1);
            compare_ag(what, "batched", "alone", bat, &al, groups, 2, k);
            for (int n = 0; n < STEPS; ++n)     /* the alone sim's other groups have no particle */
                for (int g = 0; g < b->G; ++g)
                    if (g != k && g != v->K + k)
                        CHECK(!any_nonzero(al.ag + ((size_t)n * b->G + g) * dd, (size_t)dd),
                              "%s: scene %d alone: dL/du of group %d (no particle) is not 0 at step %d", what, k, g, n);
        }
        result_free(&al);
    }
    free(idx);
}

static int *identity(int n)
{
    int *id = (int *)malloc(sizeof(int) * ((size_t)n + 1));
    for (int j = 0; id && j < n; ++j) id[j] = j;
    return id;
}

/* ------------------------------------------------------------------ tests */
/* Variant i's batch (b), the identity map of its particles (*id) and its name; o zeroed, with
   the variant's scenes and layout.  NULL when memory ran out. */
static const variant *variant_start(int i, batch *b, int **id, char *name, size_t len, run_opts *o)
{
    const variant *v = &VARIANTS[i];
    vname(v, name, len);
    if (!build(v, b)) { *id = NULL; return NULL; }
    *id = identity(b->n);
    memset(o, 0, sizeof *o);
    o->nscenes = v->K; o->chunks = v->layout == LAYOUT_CHUNKS;
    return v;
}

TEST(forward_each_scene_is_bitwise_the_scene_alone)
{
    for (int i = 0; i < 8; ++i) {
        char name[96], what[160];
        batch b;
        result bat, one;
        run_opts o;
        int *id;
        const variant *v = variant_start(i, &b, &id, name, sizeof name, &o);
        if (!v) { CHECK(0, "out of memory"); return; }
        snprintf(what, sizeof what, "%s, forward (no tape)", name);
        o.backend = CQ_BACKEND_CPU;
        if (id && run(v, &b, id, b.n, &o, &bat, NULL)) {
            int moved = 0, same = 1;
            against_alone(v, &b, &bat, what, 0);
            /* the check can fail: everything moved, and the same particles in one shared scene
               (scenes = 0) collide, so a batched sim whose scenes shared a grid would differ */
            for (int j = 0; j < b.n * v->dim; ++j) moved += bat.st[0][j] != b.x[j];
            CHECK(moved > b.n * v->dim / 2, "%s: only %d of %d coordinates moved", name, moved, b.n * v->dim);
            o.nscenes = 0; o.chunks = 0;
            if (run(v, &b, id, b.n, &o, &one, NULL)) same = !memcmp(one.st[0], bat.st[0], sizeof(double) * (size_t)b.n * v->dim);
            CHECK(!same, "%s: the scenes in one shared grid give the batched result: the test would not see scenes mixing", name);
            result_free(&one);
        } else
            CHECK(0, "%s: the batched run failed", name);
        result_free(&bat); free(id); batch_free(&b);
    }
}

TEST(reverse_state_gradients_and_actuation_gradients_per_scene_bitwise)
{
    for (int i = 0; i < 8; ++i) {
        char name[96], what[160];
        batch b;
        result bat;
        run_opts o;
        int *id;
        const variant *v = variant_start(i, &b, &id, name, sizeof name, &o);
        if (!v) { CHECK(0, "out of memory"); return; }
        snprintf(what, sizeof what, "%s, reverse (checkpoint_every 2)", name);
        o.backend = CQ_BACKEND_CPU; o.ckpt = 2;
        if (id && run(v, &b, id, b.n, &o, &bat, NULL)) {
            const int dd = v->dim * v->dim;
            against_alone(v, &b, &bat, what, 2);
            /* the comparisons see something: every scene's groups and every field have gradients */
            for (int k = 0; k < v->K; ++k)
                CHECK(any_nonzero(bat.ag + (size_t)k * dd, (size_t)dd) && any_nonzero(bat.ag + (size_t)(v->K + k) * dd, (size_t)dd),
                      "%s: scene %d's groups have no actuation gradient at step 0", name, k);
            for (int f = 0; f < 8; ++f)
                CHECK(any_nonzero(bat.gr[f], (size_t)b.n * grad_size(v->dim, f)), "%s: dL/d%s is all 0", name, FIELD[f]);
        } else
            CHECK(0, "%s: the batched run failed", name);
        result_free(&bat); free(id); batch_free(&b);
    }
}

TEST(host_threads_batched_is_bitwise_serial_and_alone)
{
    split_pool pools[2] = {{3, 7, 0, 0}, {3, 2, 1, 0}};   /* inline out of order; deferred to finish */
    for (int i = 0; i < 8; ++i) {
        char name[96], what[200];
        batch b;
        result ser, thr;
        run_opts o;
        int *id;
        const variant *v = variant_start(i, &b, &id, name, sizeof name, &o);
        if (!v) { CHECK(0, "out of memory"); return; }
        o.backend = CQ_BACKEND_CPU; o.ckpt = 2;
        if (!id || !run(v, &b, id, b.n, &o, &ser, NULL)) {
            CHECK(0, "%s: the serial batched run failed", name);
            result_free(&ser); free(id); batch_free(&b);
            continue;
        }
        for (int q = 0; q < 2; ++q) {
            split_pool *pl = &pools[(i + q) % 2];   /* both pools, in either order */
            pl->calls = 0;
            o.pool = pl;
            snprintf(what, sizeof what, "%s, threads (workers %d, range %d, %s)", name, pl->workers, pl->range,
                     pl->deferred ? "deferred to finish" : "inline, out of order");
            if (!run(v, &b, id, b.n, &o, &thr, NULL)) { CHECK(0, "%s: the run failed", what); result_free(&thr); continue; }
            CHECK(pl->calls > 0, "%s: enqueue was never called", what);
            compare(what, "threads", "serial", &thr, &ser, NULL, b.n, b.scene, 0);
            compare(what, "threads", "serial", &thr, &ser, NULL, b.n, b.scene, 1);
            compare_ag(what, "threads", "serial", &thr, &ser, NULL, 2 * v->K, -1);
            if (q == 0) against_alone(v, &b, &thr, what, 2);
            result_free(&thr);
        }
        result_free(&ser); free(id); batch_free(&b);
    }
}

/* The backward's grid cache (>>grid_cache: each recomputed substep's grid phase kept for its
   adjoint) changes no bit: per variant, checkpoint_every 3 with 2 substeps (5 kept substeps per
   segment, 2 segments), the cache's default budget against none (-1), batched, with hooks and
   actuation; then reset and again (the kept sets reused), and on the host's threads.  The tape
   must have grown by the sets, or the test compared nothing new. */
static void grid_cache_case(cq_backend backend)
{
    split_pool pool = {3, 5, 1, 0};
    for (int i = 0; i < 8; ++i) {
        char name[96], what[200];
        batch b;
        result none, kept, again;
        run_opts o;
        int *id;
        const variant *v = variant_start(i, &b, &id, name, sizeof name, &o);
        if (!v) { CHECK(0, "out of memory"); return; }
        memset(&kept, 0, sizeof kept); memset(&again, 0, sizeof again);
        o.backend = backend; o.ckpt = 3; o.cache_mb = -1;
        if (!id || !run(v, &b, id, b.n, &o, &none, NULL)) {
            CHECK(0, "%s: the run without a grid cache failed", name);
            result_free(&none); free(id); batch_free(&b);
            continue;
        }
        for (int q = 0; q < 2; ++q) {
            o.cache_mb = 0; o.pool = q ? &pool : NULL;
            snprintf(what, sizeof what, "%s, grid cache%s", name, q ? ", host threads" : "");
            if (!run(v, &b, id, b.n, &o, &kept, &again)) { CHECK(0, "%s: the run failed", what); }
            else {
                CHECK(kept.tape > none.tape, "%s: tape %lu bytes, %lu without the cache: no set was kept", what,
                      (unsigned long)kept.tape, (unsigned long)none.tape);
                for (int g = 0; g < 2; ++g) {   /* the state, then the gradients */
                    compare(what, "cache", "none", &kept, &none, NULL, b.n, b.scene, g);
                    compare(what, "cache, after reset", "none", &again, &none, NULL, b.n, b.scene, g);
                }
                compare_ag(what, "cache", "none", &kept, &none, NULL, 2 * v->K, -1);
                compare_ag(what, "cache, after reset", "none", &again, &none, NULL, 2 * v->K, -1);
            }
            result_free(&kept); result_free(&again);
        }
        result_free(&none); free(id); batch_free(&b);
    }
}
TEST(grid_cache_changes_no_bit) { grid_cache_case(CQ_BACKEND_CPU); }
TEST(cuda_grid_cache_changes_no_bit) { grid_cache_case(CQ_BACKEND_CUDA); }

static cq_sim_desc small_desc(int dim, int scenes)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.gravity[1] = -9.8;
    d.backend = CQ_BACKEND_CPU; d.scenes = scenes; d.logger.func = cq_log_silent;
    return d;
}

TEST(scenes_validated_at_create)
{
    cq_sim_desc d, g;
    cq_sim *s = NULL;
    cq_result r;
    const int bad[3] = {-1, -7, INT_MIN};
    for (int i = 0; i < 3; ++i) {
        d = small_desc(2, bad[i]); s = NULL;
        r = cq_sim_create(&d, &s);
        CHECK(r == CQ_ERROR_INVALID_ARGUMENT && !s, "scenes = %d: %s", bad[i], cq_result_string(r));
        CHECK(strstr(cq_sim_last_error(NULL), "scenes") != NULL, "scenes = %d: message: %s", bad[i], cq_sim_last_error(NULL));
        cq_sim_destroy(s);
    }
    /* more grid than can be indexed in all: refused, nothing allocated, no crash */
    d = small_desc(3, 1000000); d.res[0] = d.res[1] = d.res[2] = 256; d.dx = 1.0 / 256; s = NULL;
    r = cq_sim_create(&d, &s);
    CHECK((r == CQ_ERROR_INVALID_ARGUMENT || r == CQ_ERROR_OUT_OF_MEMORY) && !s, "1000000 scenes of 256^3: %s", cq_result_string(r));
    CHECK(strstr(cq_sim_last_error(NULL), "scenes") != NULL, "1000000 scenes of 256^3: message: %s", cq_sim_last_error(NULL));
    cq_sim_destroy(s);
    d = small_desc(2, INT_MAX); s = NULL;
    r = cq_sim_create(&d, &s);
    CHECK((r == CQ_ERROR_INVALID_ARGUMENT || r == CQ_ERROR_OUT_OF_MEMORY) && !s, "INT_MAX scenes of 16^2: %s", cq_result_string(r));
    cq_sim_destroy(s);
    /* get_desc resolves 0 to 1 and keeps the others */
    for (int sc = 0; sc <= 3; sc += 3) {
        d = small_desc(3, sc); s = NULL;
        CHECK_OK(cq_sim_create(&d, &s));
        if (!s) continue;
        memset(&g, 0, sizeof g);
        CHECK_OK(cq_sim_get_desc(s, &g));
        CHECK(g.scenes == (sc ? sc : 1), "scenes = %d: get_desc gives %d", sc, g.scenes);
        cq_sim_destroy(s);
    }
}

/* a 2x5 block of particles in 2D at (x0, y0) */
static void block10(double *x, double x0, double y0)
{
    for (int i = 0; i < 10; ++i) { x[2 * i] = x0 + (i % 5) / 32.0; x[2 * i + 1] = y0 + (i / 5) / 32.0; }
}

TEST(a_bad_scene_of_a_particle_is_refused_and_changes_nothing)
{
    cq_sim_desc d = small_desc(2, 3);
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[20], before[20], after[20], e[20];
    int sc[10], act[10];
    const int bad[2] = {-1, 3}, where[2] = {6, 0};
    char want[32];
    cq_result r;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return; }
    block10(x, 0.4, 0.4);
    for (int i = 0; i < 10; ++i) { sc[i] = i % 3; act[i] = i % 3; }
    memset(&p, 0, sizeof p);
    p.count = 10; p.x = x; p.scene = sc; p.actuator = act;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, before));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_YOUNGS, e));
    for (int t = 0; t < 2; ++t) {
        int sc2[10], act2[10];
        double x2[20];
        block10(x2, 0.3, 0.5);
        for (int i = 0; i < 10; ++i) { sc2[i] = 2 - i % 3; act2[i] = 3 + i % 2; }   /* new groups 3 and 4 */
        sc2[where[t]] = bad[t];
        memset(&p, 0, sizeof p);
        p.count = 10; p.x = x2; p.scene = sc2; p.actuator = act2; p.default_youngs = 777;
        r = cq_sim_add_particles(s, &p);
        CHECK(r == CQ_ERROR_INVALID_ARGUMENT, "scene %d: %s", bad[t], cq_result_string(r));
        snprintf(want, sizeof want, "particle %d", 10 + where[t]);
        CHECK(strstr(cq_sim_last_error(s), "scene") && strstr(cq_sim_last_error(s), want),
              "scene %d of particle %d: the message lacks 'scene' or '%s': %s", bad[t], 10 + where[t], want, cq_sim_last_error(s));
        CHECK(cq_sim_particle_count(s) == 10, "scene %d: %d particles after the refused add", bad[t], cq_sim_particle_count(s));
        CHECK(cq_sim_actuator_groups(s) == 3, "scene %d: %d actuator groups after the refused add", bad[t], cq_sim_actuator_groups(s));
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, after));
        CHECK(!memcmp(before, after, sizeof before), "scene %d: x changed by the refused add", bad[t]);
        CHECK_OK(cq_sim_get(s, CQ_FIELD_YOUNGS, after));
        CHECK(!memcmp(e, after, sizeof(double) * 10), "scene %d: youngs changed by the refused add", bad[t]);
    }
    {   /* a valid add still works afterwards, and the sim steps */
        int sc2[10];
        double x2[20];
        block10(x2, 0.3, 0.5);
        for (int i = 0; i < 10; ++i) sc2[i] = 2 - i % 3;
        memset(&p, 0, sizeof p);
        p.count = 10; p.x = x2; p.scene = sc2;
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK(cq_sim_particle_count(s) == 20, "%d particles after the valid add", cq_sim_particle_count(s));
        CHECK_OK(cq_sim_step(s, 2));
        CHECK(cq_sim_step_count(s) == 2, "step count %d", cq_sim_step_count(s));
    }
    cq_sim_destroy(s);
}

/* scene != NULL with scenes = 1 (all 0), and scene = NULL with scenes = 2 (all in scene 0, scene
   1 empty): both bitwise the plain sim; scene 1 with scenes = 1 refused */
TEST(one_scene_with_a_scene_array_and_an_empty_scene)
{
    double x[20], v[20], out[3][20];
    int zero[10], one[10];
    const int scenes[3] = {0, 1, 2};
    block10(x, 0.4, 0.4);
    for (int i = 0; i < 10; ++i) { v[2 * i] = 0.5 - 0.1 * i; v[2 * i + 1] = -1.0 + 0.07 * i; zero[i] = 0; one[i] = 0; }
    one[9] = 1;
    for (int c = 0; c < 3; ++c) {
        cq_sim_desc d = small_desc(2, scenes[c]);
        cq_sim *s = NULL;
        cq_particles_desc p;
        memset(out[c], 0, sizeof out[c]);
        if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); continue; }
        memset(&p, 0, sizeof p);
        p.count = 10; p.x = x; p.v = v; p.scene = c == 1 ? zero : NULL;
        CHECK_OK(cq_sim_add_particles(s, &p));
        if (c == 1) {   /* scene 1 of 1 */
            p.scene = one;
            CHECK(cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_ARGUMENT, "scene 1 with scenes = 1 accepted");
            CHECK(strstr(cq_sim_last_error(s), "particle 19") != NULL, "message: %s", cq_sim_last_error(s));
            CHECK(cq_sim_particle_count(s) == 10, "%d particles after the refused add", cq_sim_particle_count(s));
        }
        CHECK_OK(cq_sim_step(s, 3));
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, out[c]));
        cq_sim_destroy(s);
    }
    CHECK(!memcmp(out[1], out[0], sizeof out[0]), "scenes = 1 with scene[] = 0 differs from the plain sim");
    CHECK(!memcmp(out[2], out[0], sizeof out[0]), "scenes = 2 with scene = NULL differs from the plain sim");
    CHECK(memcmp(out[0], x, sizeof x) != 0, "nothing moved");
}

/* one particle of one scene thrown out of the domain: the step fails and names it, every scene
   stays at the step's start, the step count is unchanged.  Case 0: a block particle with a huge
   velocity (leaves in the first substep, dragging its neighbours along); case 1: a particle alone
   in its own scene, inside the other scenes' blocks, fast enough to leave only in the second
   substep (the substep rollback). */
TEST(a_failing_step_leaves_every_scene_at_its_start)
{
    const variant v = {2, 2, 1, 3, LAYOUT_INTERLEAVED, 1};
    for (int c = 0; c < 2; ++c) {
        batch b;
        run_opts o;
        cq_sim_desc d;
        cq_sim *s = NULL;
        cq_particles_desc p;
        double *before[4], *after[4], *vel, u[2 * MAXK * 9];
        int n, bad;
        char want[32];
        cq_result r;
        if (!build(&v, &b)) { CHECK(0, "out of memory"); return; }
        memset(&o, 0, sizeof o);
        o.backend = CQ_BACKEND_CPU; o.nscenes = c ? 4 : 3;
        d = make_desc(&v, &o);
        if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); batch_free(&b); return; }
        memset(&p, 0, sizeof p);
        p.count = b.n; p.x = b.x; p.v = b.v; p.youngs = b.E; p.poisson = b.nu; p.actuator = b.act; p.scene = b.scene;
        CHECK_OK(cq_sim_add_particles(s, &p));
        if (c == 1) {   /* the lone particle, in scene 3, at the middle of the grid */
            double xl[2] = {0.5, 0.5}, vl[2] = {0, 0};
            int s3 = 3;
            memset(&p, 0, sizeof p);
            p.count = 1; p.x = xl; p.v = vl; p.scene = &s3;
            CHECK_OK(cq_sim_add_particles(s, &p));
        }
        n = cq_sim_particle_count(s);
        for (int f = 0; f < 4; ++f) {
            before[f] = (double *)calloc((size_t)n * 9, sizeof(double)); after[f] = (double *)calloc((size_t)n * 9, sizeof(double));
        }
        vel = (double *)calloc((size_t)n * 2, sizeof(double));
        for (int k = 0; k < 2; ++k) {   /* two good steps */
            actuation(2, b.G, k, u);
            CHECK_OK(cq_sim_set_actuation(s, b.G, u));
            CHECK_OK(cq_sim_step(s, 1));
        }
        CHECK_OK(cq_sim_get(s, CQ_FIELD_V, vel));
        if (c == 0) { bad = 2; vel[2 * bad] = -1e5; vel[2 * bad + 1] = 3e4; }   /* scene 2's first particle */
        else { bad = n - 1; vel[2 * bad] = 2500; vel[2 * bad + 1] = 0; }      /* 0.25 per substep: out in the second */
        CHECK_OK(cq_sim_set(s, CQ_FIELD_V, vel));
        for (int f = 0; f < 4; ++f) CHECK_OK(cq_sim_get(s, (cq_field)f, before[f]));
        r = cq_sim_step(s, 1);
        CHECK(r == CQ_ERROR_OUT_OF_DOMAIN, "case %d: step: %s", c, cq_result_string(r));
        {   /* the message names a particle that left: the thrown one (alone in its scene), or one of
               its scene's that it dragged along (case 0) */
            const char *msg = cq_sim_last_error(s), *at = strstr(msg, "particle ");
            long named = at ? strtol(at + 9, NULL, 10) : -1;
            int ok = c == 1 ? named == bad : named >= 0 && named < b.n && b.scene[named] == b.scene[bad];
            CHECK(at && ok, "case %d: the message does not name particle %d%s: %s", c, bad,
                  c == 1 ? "" : " (or another of its scene's)", msg);
            snprintf(want, sizeof want, "scene %d", c == 1 ? 3 : b.scene[bad]);
            CHECK(strstr(msg, want) != NULL, "case %d: the message does not name the %s: %s", c, want, msg);
            printf("    case %d: %s\n", c, msg);
        }
        CHECK(cq_sim_step_count(s) == 2, "case %d: step count %d after the failed step", c, cq_sim_step_count(s));
        for (int f = 0; f < 4; ++f) {
            const int k = state_size(2, f);
            int diff = 0, first = -1;
            CHECK_OK(cq_sim_get(s, (cq_field)f, after[f]));
            for (int j = 0; j < n; ++j)
                if (memcmp(before[f] + j * k, after[f] + j * k, sizeof(double) * k)) { if (first < 0) first = j; ++diff; }
            CHECK(diff == 0, "case %d: %s of %d particles changed by the failed step (first: particle %d of scene %d: %.17g -> %.17g)",
                  c, FIELD[f], diff, first, first >= 0 && first < b.n ? b.scene[first] : 3,
                  first >= 0 ? before[f][first * k] : 0.0, first >= 0 ? after[f][first * k] : 0.0);
        }
        /* the sim is still usable: the particle slowed down, the step goes through */
        vel[2 * bad] = 0; vel[2 * bad + 1] = 0;
        CHECK_OK(cq_sim_set(s, CQ_FIELD_V, vel));
        CHECK_OK(cq_sim_step(s, 1));
        CHECK(cq_sim_step_count(s) == 3, "case %d: step count %d after the good step", c, cq_sim_step_count(s));
        for (int f = 0; f < 4; ++f) { free(before[f]); free(after[f]); }
        free(vel);
        cq_sim_destroy(s);
        batch_free(&b);
    }
}

/* The lane order (cpu_backend.j2 >>cpu_lane_order): with several scenes the lane kernels run over
   each scene's particles from a multiple of the lanes, scene by scene, not in index order.  Scenes
   added in descending order (scene 2 holds the particles 0..195, scene 0 the last 144): a step in
   which particle 0 (scene 2) and particle 400 (scene 0, first in the lane order) both leave names
   particle 0, without the hook and with its uneven ranges run out of order (inline or deferred),
   and the sim stays at its step.  Then the backward's adjoint check over positions (what the P2G
   adjoint runs, cq__check_adjoint_at) names the lowest particle with a non-finite entry, over
   ranges of 2, 5 or 37 positions from the last back (with 37, one entry at the end of a run of at
   least 8 consecutive particles): a range's positions are not in index order either. */
TEST(the_lowest_failing_particle_is_named_whatever_the_lane_order)
{
    const variant v = {2, 1, 1, 3, LAYOUT_SORTED, 1};
    for (int mode = 0; mode < 3; ++mode) {
        split_pool pool = {3, mode == 1 ? 2 : 5, mode == 2, 0};
        batch b;
        run_opts o;
        cq_sim_desc d;
        cq_sim *s = NULL;
        cq_particles_desc p;
        double *vel;
        cq_result r;
        if (!build(&v, &b)) { CHECK(0, "out of memory"); return; }
        memset(&o, 0, sizeof o);
        o.backend = CQ_BACKEND_CPU; o.nscenes = 3; o.ckpt = 1; o.pool = mode ? &pool : NULL;
        d = make_desc(&v, &o);
        if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); batch_free(&b); return; }
        memset(&p, 0, sizeof p);
        b.v[0] = -1e5; b.v[1] = 3e4; b.v[800] = 1e5; b.v[801] = -3e4;   /* both leave in the first substep */
        p.count = b.n; p.x = b.x; p.v = b.v; p.youngs = b.E; p.poisson = b.nu; p.scene = b.scene;
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK(b.scene[0] == 2 && b.scene[400] == 0, "the layout changed: particle 0 in scene %d, 400 in %d", b.scene[0], b.scene[400]);
        r = cq_sim_step(s, 1);
        CHECK(r == CQ_ERROR_OUT_OF_DOMAIN, "mode %d: step: %s", mode, cq_result_string(r));
        CHECK(strstr(cq_sim_last_error(s), "particle 0 of scene 2") != NULL, "mode %d: the message does not name particle 0 "
              "of scene 2: %s", mode, cq_sim_last_error(s));
        CHECK(cq_sim_step_count(s) == 0, "mode %d: step count %d after the failed step", mode, cq_sim_step_count(s));
        CHECK(!CQ__LANES_ON_f32 || (s->lord && s->nlord > b.n), "mode %d: no lane order with the lanes on (%d positions)",
              mode, s->nlord);
        vel = (double *)calloc((size_t)b.n * 2, sizeof(double));
        if (!vel) { CHECK(0, "out of memory"); cq_sim_destroy(s); batch_free(&b); return; }
        CHECK_OK(cq_sim_get(s, CQ_FIELD_V, vel));
        vel[0] = vel[1] = vel[800] = vel[801] = 0;
        CHECK_OK(cq_sim_set(s, CQ_FIELD_V, vel));
        CHECK_OK(cq_sim_step(s, 1));
        {   /* the adjoint check over positions */
            double *seed = (double *)calloc((size_t)b.n * 2, sizeof(double));
            const int items = cq__lane_items(s), rl = mode == 0 ? 5 : mode == 1 ? 2 : 37;
            if (!seed) { CHECK(0, "out of memory"); free(vel); cq_sim_destroy(s); batch_free(&b); return; }
            for (int i = 0; i < b.n * 2; ++i) seed[i] = 1.0 / b.n;
            CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));   /* allocates the adjoint */
            for (int c = 0; c < 3; ++c) {
                float *ax = (float *)s->adj[0].x, *aF = (float *)s->adj[0].F;
                cq__check_task t;
                int want = -1;
                if (c == 0) { aF[4 * 450 + 1] = (float)NAN; ax[2 * 7] = (float)INFINITY; want = 7 * 8; }   /* scenes 0 and 2 */
                else if (c == 1) { ax[2 * 7] = 0; aF[4 * 300 + 3] = (float)NAN; want = 300 * 8 + 3; }     /* scenes 1 and 0 */
                else {   /* alone: the last particle of a range's run of at least 8 consecutive particles */
                    aF[4 * 450 + 1] = aF[4 * 300 + 3] = 0;
                    for (int e = items; e > 0 && want < 0; e -= rl) {
                        const int q = s->lord ? s->lord[e - 1] : e - 1, a = e > rl ? e - rl : 0;
                        int run = 1;
                        while (q >= 0 && e - 1 - run >= a && (s->lord ? s->lord[e - 1 - run] : e - 1 - run) == q - run) ++run;
                        if (q >= 0 && run >= 8) { ax[2 * q + 1] = (float)INFINITY; want = 8 * q; }
                    }
                    if (want < 0) continue;   /* ranges of 2 or 5: no such run */
                }
                cq__check_begin(s, &s->adj[0], &t);
                for (int e = items; e > 0; e -= rl)   /* ranges from the last one back */
                    cq__check_adjoint_at(s, &t, e > rl ? e - rl : 0, e);
                CHECK(cq__check_status(&t) == INT_MAX - want, "mode %d case %d: the check names particle %d field %d, not %d "
                      "field %d", mode, c, (INT_MAX - cq__check_status(&t)) / 8, (INT_MAX - cq__check_status(&t)) % 8,
                      want / 8, want % 8);
            }
            free(seed);
        }
        free(vel);
        cq_sim_destroy(s);
        batch_free(&b);
    }
}

/* The lane order's shape (cpu_backend.j2 >>cpu_lane_order), on the particles' scenes alone (no
   step): every particle at one position, in lane (its place in its scene) mod LN, a group's lanes in
   index order with its pads at its end, LN times the scenes' own groups in all; none where the
   scenes lie one after another in multiples of LN or in one scene.  Interleaved scenes (particle p in
   scene p mod K): each group is one scene's group as alone, and group g's particles lie in the
   window [LN K (g / K), LN K (g / K + 1)) of the arrays (scene after scene, a scene's groups had
   spanned them all: 256 interleaved 2D blocks stepped 2.2-3.2x slower than one after another). */
TEST(the_lane_order_keeps_each_scene_in_its_lanes_and_walks_the_arrays)
{
    enum { CASES = 6 };
    const int LN = CQ__LANES_f32;
    unsigned seed = 7;
    for (int c = 0; c < CASES; ++c) {
        /* interleaved 5 x 37; 256 x 20 interleaved; random scenes; chunks of 7; one after another
           in multiples of LN (none); one scene given as an array (none) */
        const int K = c == 0 ? 5 : c == 1 ? 256 : c == 2 ? 9 : c == 3 ? 4 : c == 4 ? 3 : 1;
        const int n = c == 0 ? 185 : c == 1 ? 5120 : c == 2 ? 777 : c == 3 ? 301 : c == 4 ? 3 * 2 * LN : 50;
        int *sc = (int *)malloc(sizeof(int) * (size_t)n), *cnt = (int *)calloc((size_t)K, sizeof(int));
        int *seen = (int *)calloc((size_t)n, sizeof(int)), *j = (int *)malloc(sizeof(int) * (size_t)n);
        double *x = (double *)malloc(sizeof(double) * 2 * (size_t)n);
        cq_sim_desc d;
        cq_particles_desc p;
        cq_sim *s = NULL;
        long want = 0;
        if (!sc || !cnt || !seen || !j || !x) { CHECK(0, "out of memory"); free(sc); free(cnt); free(seen); free(j); free(x); return; }
        for (int q = 0; q < n; ++q) {
            sc[q] = c == 0 || c == 1 ? q % K : c == 2 ? (int)(urand(&seed) * K) : c == 3 ? (q / 7) % K : c == 4 ? q / (2 * LN) : 0;
            j[q] = cnt[sc[q]]++;
            x[2 * q] = 0.3 + 0.4 * urand(&seed); x[2 * q + 1] = 0.3 + 0.4 * urand(&seed);
        }
        for (int k = 0; k < K; ++k) want += (cnt[k] + LN - 1) / LN * LN;
        memset(&d, 0, sizeof d); memset(&p, 0, sizeof p);
        d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.scenes = K; d.logger.func = cq_log_silent;
        p.count = n; p.x = x; p.scene = sc; p.default_youngs = 1e4; p.default_poisson = 0.3;
        if (cq_sim_create(&d, &s) != CQ_SUCCESS || cq_sim_add_particles(s, &p) != CQ_SUCCESS || !cq__sort_alloc(s)) {
            CHECK(0, "case %d: %s", c, cq_sim_last_error(s));
            cq_sim_destroy(s); free(sc); free(cnt); free(seen); free(j); free(x);
            return;
        }
        if (!CQ__LANES_ON_f32 || c >= 4) CHECK(s->lord == NULL, "case %d: a lane order (%d positions) where the particles' own "
                                               "order serves", c, s->nlord);
        else if (!s->lord) CHECK(0, "case %d: no lane order with the lanes on", c);
        else {
            int bad = 0;
            CHECK(s->nlord == want, "case %d: %d positions, not %ld", c, s->nlord, want);
            for (int i = 0; i < s->nlord && !bad; ++i) {
                const int q = s->lord[i], l = i % LN, g = i / LN;
                if (q < 0) { bad = l == 0 || (l + 1 < LN && s->lord[i + 1] >= 0); if (bad) CHECK(0, "case %d: a pad at %d "
                                                                                          "before a particle or in lane 0", c, i); continue; }
                if (q >= n || seen[q]++) { bad = 1; CHECK(0, "case %d: particle %d at position %d twice or out of range", c, q, i); }
                else if (j[q] % LN != l) { bad = 1; CHECK(0, "case %d: particle %d (place %d in scene %d) in lane %d", c, q, j[q], sc[q], l); }
                else if (l > 0 && s->lord[i - 1] >= q) { bad = 1; CHECK(0, "case %d: group %d's lanes not in index order", c, g); }
                else if (K > 1 && c <= 1 && (sc[q] != sc[s->lord[i - l]] || j[q] != j[s->lord[i - l]] + l ||
                                             q < LN * K * (g / K) || q >= LN * K * (g / K + 1))) {
                    bad = 1; CHECK(0, "case %d: group %d is no scene's group or leaves its window (particle %d)", c, g, q);
                }
            }
            for (int q = 0; q < n && !bad; ++q) if (!seen[q]) { bad = 1; CHECK(0, "case %d: particle %d has no position", c, q); }
        }
        cq_sim_destroy(s); free(sc); free(cnt); free(seen); free(j); free(x);
    }
}

/* A 2D block of LAT_N particles (112^2, spacing dx/2 on a 128^2 grid; actuator groups grp or
   NULL; or its first `count` particles) in a sim on the host's threads (mode 1: the split pool's ranges run in enqueue, 2:
   deferred to finish) or without them (mode 0); NULL after a failed CHECK. */
enum { LAT_SIDE = 112, LAT_N = LAT_SIDE * LAT_SIDE };
static cq_sim *lattice_sim(int mode, split_pool *pool, int substeps, int ckpt, const int *grp, int count)
{
    static double x[2 * LAT_N];
    cq_sim_desc d;
    cq_particles_desc pd;
    cq_sim *s = NULL;
    for (int i = 0; i < LAT_SIDE; ++i)
        for (int j = 0; j < LAT_SIDE; ++j) {
            x[2 * (i * LAT_SIDE + j)] = 0.25 + (i + 0.5) / 256; x[2 * (i * LAT_SIDE + j) + 1] = 0.25 + (j + 0.5) / 256;
        }
    memset(&d, 0, sizeof d); memset(&pd, 0, sizeof pd);
    d.dim = 2; d.res[0] = d.res[1] = 128; d.dx = 1.0 / 128; d.dt = 1e-4; d.substeps = substeps; d.gravity[1] = -9.8;
    d.checkpoint_every = ckpt; d.logger.func = cq_log_silent;
    if (mode) { d.threads.workers = pool->workers; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish; d.threads.user = pool; }
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); return NULL; }
    pd.count = count; pd.x = x; pd.actuator = grp; pd.default_youngs = 1e4; pd.default_poisson = 0.3;
    if (cq_sim_add_particles(s, &pd) != CQ_SUCCESS) { CHECK(0, "add: %s", cq_sim_last_error(s)); cq_sim_destroy(s); return NULL; }
    return s;
}

/* The backward's check of the adjoint after each step runs over ranges of particles in parallel
   (cq__cpu_check_adjoint): on any split of the ranges, in any order, it names the lowest
   particle with a non-finite entry, and within that particle the first field (x, v, C, F, mass,
   volume, youngs, poisson).  Several ranges need more particles than its minimum range. */
TEST(the_adjoint_check_names_the_lowest_particle_on_any_split)
{
    enum { N = LAT_N };   /* 12544 particles: 3 ranges of >= 4096 */
    static double seed[2 * N];
    for (int i = 0; i < 2 * N; ++i) seed[i] = 1.0 / N;
    for (int mode = 0; mode < 3; ++mode) {   /* no hook; ranges run out of order in enqueue; deferred to finish */
        split_pool pool = {3, 4096, mode == 2, 0};
        cq_sim *s = lattice_sim(mode, &pool, 1, 1, NULL, LAT_N);
        int st;
        if (!s) return;
        CHECK_OK(cq_sim_step(s, 1));
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));   /* allocates the adjoint */
        {
            float *ax = (float *)s->adj[0].x, *aF = (float *)s->adj[0].F, *gE = (float *)s->g_E;
            s->vt->check_adjoint(s, &s->adj[0], &st);
            CHECK(st == 0, "mode %d: a finite adjoint gives status %d", mode, st);
            ax[2 * 9000 + 1] = (float)NAN;   /* particle 9000, x: in the third range */
            gE[5000] = (float)INFINITY;      /* particle 5000, youngs: the second */
            aF[4 * 5000 + 2] = (float)NAN;   /* particle 5000, F: the lower field of the two */
            pool.calls = 0;
            s->vt->check_adjoint(s, &s->adj[0], &st);
            CHECK(st == INT_MAX - (5000 * 8 + 3), "mode %d: status names particle %d field %d, not 5000 F", mode,
                  (INT_MAX - st) / 8, (INT_MAX - st) % 8);
            CHECK(mode == 0 || pool.calls == 1, "mode %d: the check did not run on the host's threads", mode);
            aF[4 * 5000 + 2] = 0; gE[5000] = 0;
            s->vt->check_adjoint(s, &s->adj[0], &st);
            CHECK(st == INT_MAX - 9000 * 8, "mode %d: status names particle %d field %d, not 9000 x", mode,
                  (INT_MAX - st) / 8, (INT_MAX - st) % 8);
            ax[2 * 9000 + 1] = 0;   /* the very last entry (past the scan's blocks of 64), then a block's first */
            ((float *)s->g_nu)[N - 1] = (float)NAN;
            s->vt->check_adjoint(s, &s->adj[0], &st);
            CHECK(st == INT_MAX - ((N - 1) * 8 + 7), "mode %d: status names particle %d field %d, not the last poisson", mode,
                  (INT_MAX - st) / 8, (INT_MAX - st) % 8);
            ((float *)s->adj[0].v)[2 * 4096] = (float)-INFINITY;
            s->vt->check_adjoint(s, &s->adj[0], &st);
            CHECK(st == INT_MAX - (4096 * 8 + 1), "mode %d: status names particle %d field %d, not 4096 v", mode,
                  (INT_MAX - st) / 8, (INT_MAX - st) % 8);
        }
        cq_sim_destroy(s);
    }
}

/* A small scene's cell sort on more than 2 threads takes another plan (host_memory.j2
   >>sort_plan_small: 8 blocks where one ran): 2100 and 6400 particles of the lattice, 6 taped steps
   and the backward on the hook's 3 workers (4 threads; uneven ranges run out of order, inline or
   deferred) bitwise the run without it (one thread); in make test also under ASan (the sort's work
   memory is sized for both plans). */
TEST(a_small_scene_sorts_on_many_threads_as_on_one)
{
    static double ref[2][2 * LAT_N], got[2][2 * LAT_N], seed[2 * LAT_N];
    const int counts[2] = {2100, 6400};
    for (int i = 0; i < 2 * LAT_N; ++i) seed[i] = 1.0 / (i % 5 + 1);
    for (int c = 0; c < 2; ++c)
        for (int mode = 0; mode < 3; ++mode) {
            split_pool pool = {3, 7, mode == 2, 0};
            cq_sim *s = lattice_sim(mode, &pool, 2, 2, NULL, counts[c]);
            double (*out)[2 * LAT_N] = mode ? got : ref;
            if (!s) return;
            CHECK(cq__sort_plan_small(counts[c], s->nodes).blocks == 8 && cq__sort_plan_of(counts[c], s->nodes).blocks == 1,
                  "%d particles: not the plans this test is for", counts[c]);
            CHECK_OK(cq_sim_step(s, 6));
            CHECK_OK(cq_sim_get(s, CQ_FIELD_X, out[0]));
            CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
            CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, out[1]));
            CHECK(mode == 0 || pool.calls > 0, "%d particles, mode %d: the hook was not called", counts[c], mode);
            if (mode)
                for (int k = 0; k < 2; ++k)
                    CHECK(!memcmp(got[k], ref[k], sizeof(double) * 2 * (size_t)counts[c]), "%d particles, mode %d: %s differs "
                          "from one thread's", counts[c], mode, k ? "dL/dx0" : "x");
            cq_sim_destroy(s);
        }
}

/* The CPU's copies and zeroing of large work buffers (the tape's states) run in 1 MiB pieces
   on the host's threads (cq__cpu_copy): every byte lands once, also in the last short piece. */
TEST(large_copies_in_pieces_on_the_host_threads)
{
    const size_t bytes = 5 * ((size_t)1 << 20) + 123;
    unsigned char *a = (unsigned char *)malloc(bytes), *b = (unsigned char *)malloc(bytes);
    for (int mode = 0; mode < 3 && a && b; ++mode) {
        split_pool pool = {3, 1, mode == 2, 0};
        cq_sim_desc d;
        cq_sim *s = NULL;
        size_t bad = bytes;
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.substeps = 1; d.logger.func = cq_log_silent;
        if (mode) { d.threads.workers = pool.workers; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish; d.threads.user = &pool; }
        if (cq_sim_create(&d, &s) != CQ_SUCCESS) { CHECK(0, "create: %s", cq_sim_last_error(NULL)); break; }
        for (size_t i = 0; i < bytes; ++i) { a[i] = (unsigned char)(i * 131 + 7); b[i] = 0xEE; }
        cq__cpu_copy(s, b, a, bytes);
        for (size_t i = 0; i < bytes && bad == bytes; ++i) if (b[i] != a[i]) bad = i;
        CHECK(bad == bytes, "mode %d: copy differs at byte %lu", mode, (unsigned long)bad);
        CHECK(mode == 0 || pool.calls == 1, "mode %d: the copy did not run on the host's threads", mode);
        cq__cpu_copy(s, b, NULL, bytes);
        for (size_t i = 0; i < bytes && bad == bytes; ++i) if (b[i] != 0) bad = i;
        CHECK(bad == bytes, "mode %d: zeroing missed byte %lu", mode, (unsigned long)bad);
        cq_sim_destroy(s);
    }
    free(a); free(b);
}

/* The actuation gradient's chunk sums (cq__cpu_act_grad_add) run in parallel over the chunks of
   CQ__ACT_CHUNK particles, then each group's chunks are summed in order: on any split of the
   chunks, in any order, every step's dL/du is bitwise the serial one.  3 groups of ~4200
   particles (17 chunks each) and particles of no group. */
typedef struct act_hook_ctx { double *out; int per_step; } act_hook_ctx;
static void act_hook(cq_sim *s, int step, void *user)
{
    act_hook_ctx *c = (act_hook_ctx *)user;
    CHECK_OK(cq_sim_actuation_grad(s, c->out + (long)step * c->per_step));
}
TEST(actuation_gradient_chunks_on_any_split_are_bitwise_serial)
{
    enum { N = LAT_N, G = 3, STEPS_A = 3 };
    static double seed[2 * N], ag[3][STEPS_A * G * 4];
    static int grp[N];
    double u[G * 4];
    for (int p = 0; p < N; ++p) grp[p] = p % 7 == 6 ? -1 : p % 3;
    for (int i = 0; i < 2 * N; ++i) seed[i] = (double)(i % 5) / N;
    for (int mode = 0; mode < 3; ++mode) {   /* serial; ranges out of order in enqueue; deferred to finish */
        split_pool pool = {3, 1, mode == 2, 0};
        cq_sim *s = lattice_sim(mode, &pool, 2, 2, grp, LAT_N);
        act_hook_ctx hc;
        if (!s) return;
        for (int n = 0; n < STEPS_A; ++n) {
            for (int k = 0; k < G * 4; ++k) u[k] = 50.0 * (k + 1) * (n % 2 ? -1 : 1);
            CHECK_OK(cq_sim_set_actuation(s, G, u));
            CHECK_OK(cq_sim_step(s, 1));
        }
        hc.out = ag[mode]; hc.per_step = G * 4;
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, act_hook, &hc));
        cq_sim_destroy(s);
    }
    {
        int nonzero = 0;
        for (int i = 0; i < STEPS_A * G * 4; ++i) nonzero += ag[0][i] != 0;
        CHECK(nonzero > STEPS_A * G * 2, "only %d of %d actuation gradients are non-zero", nonzero, STEPS_A * G * 4);
    }
    CHECK(!memcmp(ag[1], ag[0], sizeof ag[0]), "split in enqueue: the actuation gradients are not bitwise the serial ones");
    CHECK(!memcmp(ag[2], ag[0], sizeof ag[0]), "deferred to finish: the actuation gradients are not bitwise the serial ones");
}

/* ------------------------------------------------------------------ CUDA (mock driver) */
static char g_cuda_why[1024];
static int cuda_available(void)
{
    const char *lib = getenv("CQ_CUDA_LIBRARY");
    cq_sim_desc d;
    cq_sim *s = NULL;
    if (!lib || !*lib) {
        snprintf(g_cuda_why, sizeof g_cuda_why, "CQ_CUDA_LIBRARY is not set (the mock driver: CQ_CUDA_LIBRARY=build/mock/libcuda.so.1)");
        return 0;
    }
    d = small_desc(2, 2); d.backend = CQ_BACKEND_CUDA;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) {
        snprintf(g_cuda_why, sizeof g_cuda_why, "no CUDA sim with CQ_CUDA_LIBRARY=%.300s: %.600s", lib, cq_sim_last_error(NULL));
        return 0;
    }
    cq_sim_destroy(s);
    return 1;
}

/* per variant: the CPU once, CUDA twice from reset (run's second result); CUDA against the CPU
   and the two CUDA runs against each other, bitwise */
TEST(cuda_batched_is_bitwise_the_cpu_batched_and_twice_from_reset_the_same)
{
    for (int i = 0; i < 8; ++i) {
        char name[96];
        batch b;
        result cpu, gpu, gpu2;
        run_opts o;
        int *id;
        const variant *v = variant_start(i, &b, &id, name, sizeof name, &o);
        if (!v) { CHECK(0, "out of memory"); return; }
        o.backend = CQ_BACKEND_CPU; o.ckpt = 2;
        memset(&gpu, 0, sizeof gpu); memset(&gpu2, 0, sizeof gpu2);
        if (id && run(v, &b, id, b.n, &o, &cpu, NULL)) {
            o.backend = CQ_BACKEND_CUDA;
            if (run(v, &b, id, b.n, &o, &gpu, &gpu2)) {
                CHECK(gpu.backend == CQ_BACKEND_CUDA, "%s: backend %d", name, (int)gpu.backend);
                compare(name, "CUDA", "CPU", &gpu, &cpu, NULL, b.n, b.scene, 0);
                compare(name, "CUDA", "CPU", &gpu, &cpu, NULL, b.n, b.scene, 1);
                compare_ag(name, "CUDA", "CPU", &gpu, &cpu, NULL, 2 * v->K, -1);
                compare(name, "first", "second", &gpu, &gpu2, NULL, b.n, b.scene, 0);
                compare(name, "first", "second", &gpu, &gpu2, NULL, b.n, b.scene, 1);
                compare_ag(name, "first", "second", &gpu, &gpu2, NULL, 2 * v->K, -1);
            } else
                CHECK(0, "%s: the CUDA runs failed", name);
        } else
            CHECK(0, "%s: the CPU run failed", name);
        result_free(&gpu2); result_free(&gpu); result_free(&cpu); free(id); batch_free(&b);
    }
}

typedef int (*counter_fn)(void);
static counter_fn mock_sym(const char *name)   /* a counter exported by the mock driver, or NULL */
{
    const char *path = getenv("CQ_CUDA_LIBRARY");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL, *f = h ? dlsym(h, name) : NULL;
    counter_fn fn = NULL;
    if (f) memcpy(&fn, &f, sizeof fn);
    return fn;
}

TEST(cuda_no_device_memory_leaked_or_violated)
{
    counter_fn live = mock_sym("cq_mock_live_allocations"), viol = mock_sym("cq_mock_violations");
    if (!live || !viol) { printf("    (not the mock driver: no allocation counters)\n"); return; }
    CHECK(live() == 0, "%d device allocations still live after every sim was destroyed", live());
    CHECK(viol() == 0, "%d out-of-bounds or unknown-pointer device accesses", viol());
}


/* >>cpu_flush: a float32 sim's CPU kernels run with subnormals flushed to zero (x86 FTZ/DAZ),
   float64 sims keep them, and the caller's floating-point mode is as it was after every call,
   on OpenMP's (or no) threads and on the host's threads hook.  A particle moving at 3e-39 (a
   float subnormal, a double normal) with no gravity: its momentum is subnormal in float, so one
   step keeps v ~ 3e-39 where subnormals are kept and gives exactly 0 where they are flushed.  Its
   volume is tiny (1e-30, the mass as the default's) so the stress's share of its momentum is below
   the normal range too: built with -ffast-math the float32 stress of F = I is not exactly 0 (gcc
   12, -march=native: v = 2.8e-14 after two steps with the default volume). */
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif
TEST(f32_kernels_flush_subnormals_and_restore_the_fp_mode)
{
#ifdef HAVE_MXCSR
    const unsigned int saved = _mm_getcsr();
    for (int prec = 0; prec < 2; ++prec)
        for (int hook = 0; hook < 3; ++hook)   /* no hook; the split pool's ranges in enqueue; deferred to finish */
            for (int caller = 0; caller < 2; ++caller) {   /* the caller's own FTZ/DAZ off, on */
                const unsigned int mode = (saved & ~0x8040u & ~0x3fu) | (caller ? 0x8040u : 0u);   /* control bits (the low 6: exception flags) */
                cq_sim_desc d;
                cq_particles_desc pd;
                cq_sim *s = NULL;
                double x[2] = {0.5, 0.5}, v[2] = {3e-39, -3e-39}, seed[2] = {1, 1}, got[2];
                split_pool pool = {3, 1, hook == 2, 0};
                int flushed;
                memset(&d, 0, sizeof d);
                d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.checkpoint_every = 1;
                d.precision = prec ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
                if (hook) { d.threads.workers = pool.workers; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish; d.threads.user = &pool; }
                memset(&pd, 0, sizeof pd);
                pd.count = 1; pd.x = x; pd.v = v; pd.default_volume = 1e-30; pd.default_mass = 1.0 / 4096;   /* (0.5 dx)^2 */
                _mm_setcsr(mode);
                CHECK_OK(cq_sim_create(&d, &s));
                CHECK_OK(cq_sim_add_particles(s, &pd));
                CHECK_OK(cq_sim_step(s, 2));
                CHECK((_mm_getcsr() & ~0x3fu) == mode, "%s, hook %d, caller FTZ %d: the mode after cq_sim_step is %#x, was %#x",
                      prec ? "f64" : "f32", hook, caller, _mm_getcsr() & ~0x3fu, mode);
                CHECK_OK(cq_sim_backward(s, NULL, seed, NULL, NULL, NULL, NULL));
                CHECK((_mm_getcsr() & ~0x3fu) == mode, "%s, hook %d, caller FTZ %d: the mode after cq_sim_backward is %#x, was %#x",
                      prec ? "f64" : "f32", hook, caller, _mm_getcsr() & ~0x3fu, mode);
                _mm_setcsr(saved);
                CHECK_OK(cq_sim_get(s, CQ_FIELD_V, got));
#ifdef CQ_CPU_KEEP_SUBNORMALS
                flushed = !prec && caller;
#else
                flushed = !prec;
#endif
                if (flushed) CHECK(got[0] == 0 && got[1] == 0, "%s, hook %d, caller FTZ %d: v = %g %g, not flushed to 0",
                                   prec ? "f64" : "f32", hook, caller, got[0], got[1]);
                else CHECK(got[0] > 2.9e-39 && got[0] < 3.1e-39 && got[1] < -2.9e-39 && got[1] > -3.1e-39,
                           "%s, hook %d, caller FTZ %d: v = %g %g, not ~3e-39", prec ? "f64" : "f32", hook, caller, got[0], got[1]);
                cq_sim_destroy(s);
            }
    _mm_setcsr(saved);
#else
    printf("SKIP f32_kernels_flush_subnormals: not an x86 build (nothing is flushed there)\n");
#endif
}

int main(int argc, char **argv)
{
    static const cqt_case cases[] = {
        CASE(forward_each_scene_is_bitwise_the_scene_alone),
        CASE(reverse_state_gradients_and_actuation_gradients_per_scene_bitwise),
        CASE(host_threads_batched_is_bitwise_serial_and_alone),
        CASE(scenes_validated_at_create),
        CASE(a_bad_scene_of_a_particle_is_refused_and_changes_nothing),
        CASE(one_scene_with_a_scene_array_and_an_empty_scene),
        CASE(a_failing_step_leaves_every_scene_at_its_start),
        CASE(the_lowest_failing_particle_is_named_whatever_the_lane_order),
        CASE(the_lane_order_keeps_each_scene_in_its_lanes_and_walks_the_arrays),
        CASE(the_adjoint_check_names_the_lowest_particle_on_any_split),
        CASE(a_small_scene_sorts_on_many_threads_as_on_one),
        CASE(large_copies_in_pieces_on_the_host_threads),
        CASE(actuation_gradient_chunks_on_any_split_are_bitwise_serial),
        CASE(grid_cache_changes_no_bit),
        CASE(f32_kernels_flush_subnormals_and_restore_the_fp_mode),
        /* CUDA: last, run only where a CUDA sim can be created */
        CASE(cuda_batched_is_bitwise_the_cpu_batched_and_twice_from_reset_the_same),
        CASE(cuda_grid_cache_changes_no_bit),
        CASE(cuda_no_device_memory_leaked_or_violated)};
    const int all = (int)(sizeof cases / sizeof cases[0]);
    int n = all, want_cuda = 0, cpu = 0;
    while (cpu < all && strncmp(cases[cpu].name, "cuda_", 5) != 0) ++cpu;   /* the CPU's tests, before the CUDA ones */
    for (int i = cpu; i < all; ++i) if (argc < 2 || strstr(cases[i].name, argv[1])) want_cuda = 1;
    if (!want_cuda) n = cpu;   /* the filter names no CUDA test: the driver is not loaded */
    else if (!cuda_available()) { printf("SKIP: the CUDA batched tests: %s\n", g_cuda_why); n = cpu; }
    return cqt_run(cases, n, argc, argv);
}
