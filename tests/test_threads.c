#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
/* What may run concurrently (built with -fsanitize=thread in make test): cq_sim_create from many
   threads at once, failing ones included (the create error is per thread), the first ones
   racing to load the CUDA driver (run on the mock driver too), and distinct sims stepped and
   differentiated on distinct threads. */
#include <pthread.h>
#include <stdio.h>

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
          CASE(host_threads_bitwise_independent_of_the_split), CASE(host_threads_validated))
