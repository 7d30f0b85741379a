#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
/* What may run concurrently (built with -fsanitize=thread in make test): cq_sim_create from many
   threads at once, failing ones included (the create error is per thread), the first ones
   racing to load the CUDA driver (run on the mock driver too), distinct sims stepped and
   differentiated on distinct threads, and one sim's loops on the host's threads (results
   bitwise independent of the split; the cell sort a serial counting sort's on 1, 2, 3 threads). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define THREADS 6

static void *creator(void *arg)
{
    long id = (long)arg, bad = 0;
    char want[32];
    for (int i = 0; i < 200; ++i) {
        cq_sim_desc d;
        cq_sim *s = NULL;
        memset(&d, 0, sizeof d);
        d.dim = 10 + (int)id;   /* invalid: the message names this thread's value */
        if (cq_sim_create(&d, &s) != CQ_ERROR_INVALID_ARGUMENT) ++bad;
        snprintf(want, sizeof want, "dim = %d", d.dim);
        if (!strstr(cq_sim_last_error(NULL), want)) ++bad;
    }
    return (void *)bad;
}

static void *stepper(void *arg)
{
    long bad = 0;
    cq_sim_desc d;
    cq_sim *s = NULL;
    double x[2 * 32], g[2 * 32];
    cq_particles_desc p;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 24; d.dx = 1.0 / 24; d.dt = 1e-4; d.gravity[1] = -9.8; d.checkpoint_every = 2;
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) return (void *)1;   /* DEFAULT backend: the first creates load CUDA */
    for (int i = 0; i < 32; ++i) { x[2 * i] = 0.4 + (i % 8) / 48.0; x[2 * i + 1] = 0.4 + (i / 8) / 48.0; }
    memset(&p, 0, sizeof p);
    p.count = 32; p.x = x;
    if (cq_sim_add_particles(s, &p) != CQ_SUCCESS || cq_sim_step(s, 5) != CQ_SUCCESS ||
        cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS || cq_sim_grad(s, CQ_FIELD_X, g) != CQ_SUCCESS) ++bad;
    cq_sim_destroy(s);
    return (void *)bad;
}

static long run_threads(void *(*fn)(void *))
{
    pthread_t t[THREADS];
    long bad = 0;
    for (long i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, fn, (void *)i);
    for (int i = 0; i < THREADS; ++i) { void *r; pthread_join(t[i], &r); bad += (long)r; }
    return bad;
}

TEST(concurrent_failing_creates_keep_their_own_message)
{
    long bad = run_threads(creator);
    CHECK(bad == 0, "%ld creates saw another thread's message or result", bad);
}

TEST(concurrent_sims_on_their_own_threads)
{
    long bad = run_threads(stepper);
    CHECK(bad == 0, "%ld threads failed", bad);
}

/* ---- the host's threads (cq_sim_desc.threads): results bitwise independent of the split */
typedef struct split_pool { int workers, range, reverse; } split_pool;
typedef struct range_job { cq_task_fn task; void *ctx; int begin, end, worker; } range_job;
static void *range_thread(void *arg) { range_job *j = (range_job *)arg; j->task(j->begin, j->end, j->worker, j->ctx); return NULL; }

/* runs the ranges either inline in reverse order (returns NULL) or on fresh threads, one per
   range, joined in finish */
typedef struct running { pthread_t t[512]; range_job j[512]; int count; } running;
static running g_running;
static void *split_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    split_pool *p = (split_pool *)user;
    int range = p->range < min_range ? min_range : p->range, count = (items + range - 1) / range;
    if (p->reverse || count > 512) {
        for (int r = count - 1; r >= 0; --r) task(r * range, r * range + range < items ? r * range + range : items, r % p->workers, ctx);
        return NULL;
    }
    g_running.count = count;
    for (int r = 0; r < count; ++r) {
        range_job *j = &g_running.j[r];
        j->task = task; j->ctx = ctx; j->begin = r * range; j->end = r * range + range < items ? r * range + range : items;
        j->worker = r % p->workers;
        pthread_create(&g_running.t[r], NULL, range_thread, j);
    }
    return &g_running;
}
static void split_finish(void *handle, void *user)
{
    running *r = (running *)handle;
    (void)user;
    for (int i = 0; i < r->count; ++i) pthread_join(r->t[i], NULL);
}

/* a 2D or 3D scene with actuation and a cable; final x and dL/d(x0, v0, F0, E) */
static int scene(int dim, split_pool *pool, double *out)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double x[3 * 216], seed[3 * 216], st[9] = {30, 5, 0, 5, -20, 0, 0, 0, 10};
    int act[216], route[3] = {0, 7, 20}, n = dim == 2 ? 144 : 216, k = 0;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = dim == 2 ? 48 : 24; d.dx = 1.0 / d.res[0];
    d.dt = dim == 2 ? 1e-4 : 2e-4; d.substeps = 2; d.gravity[1] = -9.8; d.checkpoint_every = 3; d.backend = CQ_BACKEND_CPU;
    d.logger.func = cq_log_silent;
    if (pool) { d.threads.workers = pool->workers; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish; d.threads.user = pool; }
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) return 0;
    for (int i = 0; i < n; ++i) {
        int a = dim == 2 ? i % 12 : i % 6, b = dim == 2 ? i / 12 : (i / 6) % 6, c = i / 36;
        x[dim * i] = 0.35 + a * d.dx / 2; x[dim * i + 1] = 0.4 + b * d.dx / 2;
        if (dim == 3) x[3 * i + 2] = 0.4 + c * d.dx / 2;
        act[i] = i % 3 == 0 ? 0 : -1;
        for (int q = 0; q < dim; ++q) seed[dim * i + q] = 0.01 * ((i + q) % 5);
    }
    memset(&p, 0, sizeof p);
    p.count = n; p.x = x; p.actuator = act;
    int ok = cq_sim_add_particles(s, &p) == CQ_SUCCESS && cq_sim_add_cable(s, 3, route, 20.0, 0.01) == CQ_SUCCESS &&
             cq_sim_set_actuation(s, 1, st) == CQ_SUCCESS && cq_sim_step(s, 7) == CQ_SUCCESS &&
             cq_sim_get(s, CQ_FIELD_X, out) == CQ_SUCCESS &&
             cq_sim_backward(s, seed, seed, NULL, NULL, NULL, NULL) == CQ_SUCCESS;
    k = n * dim;
    ok = ok && cq_sim_grad(s, CQ_FIELD_X, out + k) == CQ_SUCCESS && cq_sim_grad(s, CQ_FIELD_V, out + 2 * k) == CQ_SUCCESS &&
         cq_sim_grad(s, CQ_FIELD_F, out + 3 * k) == CQ_SUCCESS && cq_sim_grad(s, CQ_FIELD_YOUNGS, out + 3 * k + n * dim * dim) == CQ_SUCCESS;
    cq_sim_destroy(s);
    return ok;
}

TEST(host_threads_bitwise_independent_of_the_split)
{
    static double ref[2][3 * 216 * 16], got[3 * 216 * 16];
    split_pool pools[4] = {{1, 1, 1}, {3, 7, 0}, {4, 64, 0}, {2, 1000000, 1}};
    for (int dim = 2; dim <= 3; ++dim) {
        const size_t bytes = sizeof(double) * (size_t)(dim == 2 ? 144 : 216) * (size_t)(3 * dim + dim * dim + 1);
        CHECK(scene(dim, NULL, ref[dim - 2]), "%dD scene without the hook failed", dim);
        for (int i = 0; i < 4; ++i) {
            memset(got, 0, sizeof got);
            CHECK(scene(dim, &pools[i], got), "%dD scene with pool %d failed", dim, i);
            CHECK(memcmp(got, ref[dim - 2], bytes) == 0, "%dD: pool %d (workers %d, range %d, %s) differs from no hook",
                  dim, i, pools[i].workers, pools[i].range, pools[i].reverse ? "inline, reversed" : "threads");
        }
    }
}

/* ---- a host that splits the ranges off the lanes (cpu_backend.j2 >>cpu_lane_groups): ranges of
   min_range + 13, + 26, + 39 items, run inline, so that the ranges' ends fall anywhere in the lane
   groups; a scene of particles that no lane count divides, randomly moving, in both dimensions,
   materials and precisions: the final state and dL/dx0, dL/dF0 bitwise those without the hook.
   (make test builds this file in ISO C too, where nothing fuses multiply-adds; its item
   test_threads_split_gnu builds it with -ffp-contract=fast -march=native and again with
   -ffast-math, where the one-particle kernels that ran a range's last, partial group rounded
   otherwise than the lanes, and a group that began at a range's first particle moved it to
   another lane) */
static void *offlane_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    int k = 0;
    (void)user;
    for (int b = 0; b < items; ++k) {
        const int r = min_range + 13 * (k % 3 + 1), e = items - b < r ? items : b + r;
        task(b, e, k % 2, ctx);
        b = e;
    }
    return NULL;
}
static void offlane_finish(void *handle, void *user) { (void)handle; (void)user; }
static unsigned long long fnv(const void *p, size_t n, unsigned long long h)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}
static int offlane_scene(int dim, cq_precision prec, cq_material mat, int hook, unsigned long long *hash)
{
    const int n = dim == 2 ? 3001 : 2203;   /* no multiple of 8 or 16 */
    double *x = (double *)malloc(sizeof(double) * (size_t)n * 9), *v = (double *)malloc(sizeof(double) * (size_t)n * 3);
    cq_sim_desc d;
    cq_particles_desc p;
    cq_sim *s = NULL;
    unsigned r = 12345u;
    int ok = x && v;
    memset(&d, 0, sizeof d);
    d.dim = dim; d.res[0] = d.res[1] = d.res[2] = dim == 2 ? 96 : 40; d.dx = 1.0 / d.res[0];
    d.dt = 0.25 * d.dx * 0.01; d.substeps = 2; d.gravity[1] = -9.8; d.material = mat; d.precision = prec;
    d.backend = CQ_BACKEND_CPU; d.checkpoint_every = 4; d.logger.func = cq_log_silent;
    if (hook) { d.threads.workers = 2; d.threads.enqueue = offlane_enqueue; d.threads.finish = offlane_finish; }
    for (int i = 0; ok && i < n * dim; ++i) {
        r = r * 1664525u + 1013904223u; x[i] = 0.3 + 0.4 * (double)(r >> 8) / 16777216.0;
        r = r * 1664525u + 1013904223u; v[i] = 0.5 * (double)(r >> 8) / 16777216.0 - 0.25;
    }
    memset(&p, 0, sizeof p);
    p.count = n; p.x = x; p.v = v; p.default_youngs = 1e4; p.default_poisson = 0.3;
    ok = ok && cq_sim_create(&d, &s) == CQ_SUCCESS && cq_sim_add_particles(s, &p) == CQ_SUCCESS && cq_sim_step(s, 12) == CQ_SUCCESS &&
         cq_sim_get(s, CQ_FIELD_X, x) == CQ_SUCCESS;
    if (ok) *hash = fnv(x, sizeof(double) * (size_t)(n * dim), 1469598103934665603ull);
    for (int i = 0; ok && i < n * dim; ++i) x[i] = 1.0 / (i % 7 + 1);
    ok = ok && cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL) == CQ_SUCCESS && cq_sim_grad(s, CQ_FIELD_X, x) == CQ_SUCCESS;
    if (ok) *hash = fnv(x, sizeof(double) * (size_t)(n * dim), *hash);
    ok = ok && cq_sim_grad(s, CQ_FIELD_F, x) == CQ_SUCCESS;
    if (ok) *hash = fnv(x, sizeof(double) * (size_t)(n * dim * dim), *hash);
    cq_sim_destroy(s);
    free(x); free(v);
    return ok;
}
TEST(host_threads_split_off_the_lanes)
{
    const cq_precision precs[2] = {CQ_PRECISION_F32, CQ_PRECISION_F64};
    const cq_material mats[2] = {CQ_MATERIAL_FIXED_COROTATED, CQ_MATERIAL_NEOHOOKEAN};
#if defined(__SANITIZE_THREAD__)
    printf("    (host_threads_split_off_the_lanes: its ranges run inline, nothing for ThreadSanitizer to see: 17 s of it\n"
           "     here; make test's test_threads_split_fma and _fast_math run it)\n");
    return;
#endif
    for (int dim = 2; dim <= 3; ++dim)
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) {
                unsigned long long ref = 0, got = 1;
                CHECK(offlane_scene(dim, precs[i], mats[j], 0, &ref) && offlane_scene(dim, precs[i], mats[j], 1, &got),
                      "%dD scene %d %d failed", dim, i, j);
                CHECK(ref == got, "%dD %s %s: ranges split off the lanes change the results (%016llx vs %016llx)", dim,
                      i ? "float64" : "float32", j ? "NeoHookean" : "corotated", got, ref);
            }
}

/* ---- the CPU's cell sort (cpu_backend.j2 >>cpu_sort): on scenes with several blocks of
   particles (and with one), the sorted arrays of the last substep are a serial stable counting sort's,
   and they and the state are bitwise the same on 1, 2 and 3 threads (the host's threads, each
   running a fixed share of the ranges; OpenMP's too where built with it) */
typedef struct fixed_pool { int workers; } fixed_pool;
typedef struct fixed_job { cq_task_fn task; void *ctx; int items, range, count, worker, workers; } fixed_job;
static struct { pthread_t t[8]; fixed_job j[8]; int workers; } g_fixed;
static void *fixed_thread(void *arg)
{
    const fixed_job *j = (const fixed_job *)arg;
    for (int r = j->worker; r < j->count; r += j->workers)
        j->task(r * j->range, r * j->range + j->range < j->items ? r * j->range + j->range : j->items, j->worker, j->ctx);
    return NULL;
}
/* `workers` threads, worker w running ranges w, w + workers, ... of about items / (4 workers) */
static void *fixed_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    const fixed_pool *p = (const fixed_pool *)user;
    const int share = (items + 4 * p->workers - 1) / (4 * p->workers), range = share > min_range ? share : min_range;
    g_fixed.workers = p->workers;
    for (int w = 0; w < p->workers; ++w) {
        fixed_job *j = &g_fixed.j[w];
        j->task = task; j->ctx = ctx; j->items = items; j->range = range; j->count = (items + range - 1) / range;
        j->worker = w; j->workers = p->workers;
        pthread_create(&g_fixed.t[w], NULL, fixed_thread, j);
    }
    return &g_fixed;
}
static void fixed_finish(void *handle, void *user)
{
    (void)handle; (void)user;
    for (int w = 0; w < g_fixed.workers; ++w) pthread_join(g_fixed.t[w], NULL);
}

/* what a run of sort_scene leaves: the last substep's sort and the state */
typedef struct sort_result { int n, box_ok; long cells; int *order, *skey, *cell_end, *keys; double *state; } sort_result;
static void sort_result_free(sort_result *r) { free(r->order); free(r->skey); free(r->cell_end); free(r->keys); free(r->state); }

/* 3D, res^3 cells per scene, n particles at pseudo-random places in [0.15, 0.15 + span)^3 (equal
   keys far apart in index) in pseudo-random scenes; 2 substeps on `workers` host threads (0: no
   hook) */
static int sort_scene(int res, int scenes, int n, double span, int workers, sort_result *out)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    fixed_pool pool;
    double *x = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    int *scene = (int *)malloc(sizeof(int) * (size_t)n), ok;
    unsigned u = 12345u;
    memset(out, 0, sizeof *out);
    out->box_ok = 1;
    memset(&d, 0, sizeof d);
    d.dim = 3; d.res[0] = d.res[1] = d.res[2] = res; d.dx = 1.0 / res; d.dt = 1e-4; d.gravity[1] = -9.8;
    d.scenes = scenes; d.backend = CQ_BACKEND_CPU; d.logger.func = cq_log_silent;
    pool.workers = workers;
    if (workers) { d.threads.workers = workers; d.threads.enqueue = fixed_enqueue; d.threads.finish = fixed_finish; d.threads.user = &pool; }
    for (int i = 0; i < 3 * n; ++i) { u = u * 1664525u + 1013904223u; x[i] = 0.15 + span * (u >> 8) / 16777216.0; }
    for (int i = 0; i < n; ++i) { u = u * 1664525u + 1013904223u; scene[i] = (int)((u >> 8) % (unsigned)scenes); }
    memset(&p, 0, sizeof p);
    p.count = n; p.x = x; p.scene = scene;
    ok = cq_sim_create(&d, &s) == CQ_SUCCESS && cq_sim_add_particles(s, &p) == CQ_SUCCESS && cq_sim_step(s, 2) == CQ_SUCCESS;
    if (ok) {
        const size_t ni = sizeof(int) * (size_t)n;
        out->n = n; out->cells = s->nodes;
        out->order = (int *)malloc(ni); out->skey = (int *)malloc(ni); out->keys = (int *)malloc(ni);
        out->cell_end = (int *)malloc(sizeof(int) * (size_t)s->nodes);
        out->state = (double *)malloc(sizeof(double) * 24 * (size_t)n);
        memcpy(out->order, s->order, ni); memcpy(out->skey, s->skey, ni); memcpy(out->keys, s->keys, ni);
        /* cell_end as the gather reads it: written over the particles' box alone (cpu_backend.j2
           >>cpu_cell_box), whose range must hold every particle's cell */
        for (long c = 0; c < s->nodes; ++c) out->cell_end[c] = cq__cell_end_at(s->cell_end, s->nodes, s->n, c);
        for (int i = 0; i < n; ++i) out->box_ok &= s->keys[i] >= s->cell_end[s->nodes] && s->keys[i] <= s->cell_end[s->nodes + 1];
        ok = cq_sim_get(s, CQ_FIELD_X, out->state) == CQ_SUCCESS && cq_sim_get(s, CQ_FIELD_V, out->state + 3 * n) == CQ_SUCCESS &&
             cq_sim_get(s, CQ_FIELD_C, out->state + 6 * n) == CQ_SUCCESS && cq_sim_get(s, CQ_FIELD_F, out->state + 15 * n) == CQ_SUCCESS;
    }
    cq_sim_destroy(s);
    free(x); free(scene);
    return ok;
}

/* the serial stable counting sort of r->keys; 0 if r's arrays differ from it */
static int sort_is_serial(const sort_result *r)
{
    int *count = (int *)calloc((size_t)r->cells + 1, sizeof(int)), same = 1;
    for (int p = 0; p < r->n; ++p) count[r->keys[p] + 1]++;
    for (long c = 0; c < r->cells; ++c) count[c + 1] += count[c];   /* count[c]: first slot of cell c */
    for (long c = 0; c < r->cells; ++c) same &= r->cell_end[c] == count[c + 1];
    for (int p = 0; p < r->n; ++p) { const int k = count[r->keys[p]]++; same &= r->order[k] == p && r->skey[k] == r->keys[p]; }
    free(count);
    return same;
}

TEST(cell_sort_serial_result_on_any_threads)
{
    /* {res, scenes, particles, bucket bits, cell bits}: 32^3 cells, ~3 particles per cell: buckets
       of 16 cells; 16^3 cells x 520 scenes (over 2^21 cells): buckets of 2048 cells; 12^3 cells:
       buckets of one cell; 64^3 cells, the particles in 4^3 of them: a few full buckets; then one
       block of particles: 12^3 cells (at most 4 a particle) and 32^3 cells (at most
       CQ__SORT_ONE_BUCKET_CELLS), one bucket (a plain counting sort), and 48^3 cells, buckets (on
       more than 2 threads all three in 8 blocks) */
    const int cfg[7][5] = {{32, 1, 100000, 11, 4}, {16, 520, 40000, 11, 11}, {12, 1, 40000, 11, 0}, {64, 1, 50000, 11, 7},
                           {12, 1, 6000, 0, 11}, {32, 1, 6000, 0, 15}, {48, 1, 6000, 11, 6}};
    const double span[7] = {0.7, 0.7, 0.7, 0.06, 0.7, 0.7, 0.7};
    for (int c = 0; c < 7; ++c) {
        sort_result ref, got;
        const cq__sort_plan q = cq__sort_plan_of(cfg[c][2], (long)cfg[c][0] * cfg[c][0] * cfg[c][0] * cfg[c][1]);
        const cq__sort_plan w = cq__sort_plan_small(cfg[c][2], (long)cfg[c][0] * cfg[c][0] * cfg[c][0] * cfg[c][1]);
        CHECK((q.blocks > 1) == (c < 4) && q.bucket_bits == cfg[c][3] && q.cell_bits == cfg[c][4],
              "config %d: %d blocks, 2^%d buckets of 2^%d cells", c, q.blocks, q.bucket_bits, q.cell_bits);
        /* on more than 2 threads (the hook's 2 and 3 workers, 3 OpenMP threads) one block becomes 8
           (host_memory.j2 >>sort_plan_small), one bucket 2^8 of them (the 12^3 cells': of 2^3 cells) */
        CHECK(c < 4 ? !memcmp(&w, &q, sizeof q) : w.blocks == 8 && w.bucket_bits == (cfg[c][3] == 0 ? 8 : 11),
              "config %d: the plan on many threads has %d blocks, 2^%d buckets", c, w.blocks, w.bucket_bits);
        if (!sort_scene(cfg[c][0], cfg[c][1], cfg[c][2], span[c], 0, &ref)) { CHECK(0, "config %d: the scene failed", c); continue; }
        CHECK(sort_is_serial(&ref), "config %d: the sort differs from the serial counting sort", c);
        CHECK(ref.box_ok, "config %d: a particle's cell lies outside the range of cells the sort wrote", c);
        for (int workers = 1; workers <= 3; ++workers) {
            const size_t ni = sizeof(int) * (size_t)ref.n;
            CHECK(sort_scene(cfg[c][0], cfg[c][1], cfg[c][2], span[c], workers, &got), "config %d, %d threads: the scene failed", c, workers);
            CHECK(got.order && memcmp(got.order, ref.order, ni) == 0 && memcmp(got.skey, ref.skey, ni) == 0 &&
                  memcmp(got.cell_end, ref.cell_end, sizeof(int) * (size_t)ref.cells) == 0,
                  "config %d, %d threads: the sorted arrays differ from the run without the hook", c, workers);
            CHECK(got.state && memcmp(got.state, ref.state, sizeof(double) * 24 * (size_t)ref.n) == 0,
                  "config %d, %d threads: the state differs from the run without the hook", c, workers);
            sort_result_free(&got);
        }
#ifdef _OPENMP
        const int threads0 = omp_get_max_threads();
        for (int threads = 1; threads <= 3; ++threads) {
            omp_set_num_threads(threads);
            CHECK(sort_scene(cfg[c][0], cfg[c][1], cfg[c][2], span[c], 0, &got), "config %d, %d OpenMP threads: the scene failed", c, threads);
            CHECK(got.order && memcmp(got.order, ref.order, sizeof(int) * (size_t)ref.n) == 0 &&
                  memcmp(got.cell_end, ref.cell_end, sizeof(int) * (size_t)ref.cells) == 0 &&
                  memcmp(got.state, ref.state, sizeof(double) * 24 * (size_t)ref.n) == 0,
                  "config %d, %d OpenMP threads: differs from the first run", c, threads);
            sort_result_free(&got);
        }
        omp_set_num_threads(threads0);
#endif
        sort_result_free(&ref);
    }
}

TEST(host_threads_validated)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.logger.func = cq_log_silent;
    d.threads.workers = 2;   /* no enqueue/finish */
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && !s, "workers without callbacks accepted");
    CHECK(strstr(cq_sim_last_error(NULL), "threads") != NULL, "message: %s", cq_sim_last_error(NULL));
    d.threads.workers = -1;
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && !s, "negative workers accepted");
}

RUN_TESTS(CASE(concurrent_sims_on_their_own_threads), CASE(concurrent_failing_creates_keep_their_own_message),
          CASE(host_threads_bitwise_independent_of_the_split), CASE(host_threads_split_off_the_lanes),
          CASE(cell_sort_serial_result_on_any_threads),
          CASE(host_threads_validated))
