/* 11_threads.c - the CPU backend on the host's own job system (cq_sim_desc.threads).

   A game engine already has worker threads; chainqueen.h can run its parallel loops there
   instead of starting OpenMP's.  This example has a small pthread pool (a queue of ranges, a
   mutex, two condition variables), hands it to a sim through cq_threads, runs a falling block
   with gradients, and checks that the result is bitwise the same as the same sim without the
   hook (OpenMP or serial).

   Build:  cc -std=c99 -O2 examples/11_threads.c -o threads -lm -pthread
   Run:    ./threads [out-dir] [quick]      (out-dir is unused: nothing is written) */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pool: `workers` threads take ranges [begin, end) of the current task from a queue */
#define POOL_MAX_WORKERS 16
typedef struct pool {
    pthread_t threads[POOL_MAX_WORKERS];
    int workers, stop;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    cq_task_fn task;           /* the task being run (one at a time: enqueue is called by one thread) */
    void *context;
    int next, items, range;    /* the next range starts at `next` */
    int pending;               /* ranges not finished yet */
} pool;

static void *pool_worker(void *arg)
{
    pool *p = (pool *)arg;
    int me;
    pthread_mutex_lock(&p->lock);
    for (me = 0; me < p->workers && !pthread_equal(p->threads[me], pthread_self()); ++me) { }
    for (;;) {
        while (!p->stop && p->next >= p->items) pthread_cond_wait(&p->work, &p->lock);
        if (p->stop) break;
        {
            const int begin = p->next, end = begin + p->range < p->items ? begin + p->range : p->items;
            cq_task_fn task = p->task;
            void *ctx = p->context;
            p->next = end;
            pthread_mutex_unlock(&p->lock);
            task(begin, end, me, ctx);
            pthread_mutex_lock(&p->lock);
            if (--p->pending == 0) pthread_cond_signal(&p->done);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static int pool_start(pool *p, int workers)
{
    memset(p, 0, sizeof *p);
    p->workers = workers < 1 ? 1 : (workers > POOL_MAX_WORKERS ? POOL_MAX_WORKERS : workers);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    pthread_mutex_lock(&p->lock);   /* workers find their index once all threads exist */
    for (int i = 0; i < p->workers; ++i)
        if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0) { p->workers = i; break; }
    pthread_mutex_unlock(&p->lock);
    return p->workers;
}

static void pool_stop(pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->workers; ++i) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
}

/* cq_threads.enqueue: split [0, items) into about 4 ranges per worker, at least min_range long */
static void *pool_enqueue(cq_task_fn task, int items, int min_range, void *task_context, void *user)
{
    pool *p = (pool *)user;
    int range = (items + 4 * p->workers - 1) / (4 * p->workers);
    if (range < min_range) range = min_range;
    if (items <= range) { task(0, items, 0, task_context); return NULL; }   /* too small to share */
    pthread_mutex_lock(&p->lock);
    p->task = task; p->context = task_context;
    p->next = 0; p->items = items; p->range = range;
    p->pending = (items + range - 1) / range;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    return p;
}

/* cq_threads.finish: wait until every range of the task ran */
static void pool_finish(void *handle, void *user)
{
    pool *p = (pool *)handle;
    (void)user;
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->lock);
    p->items = 0;
    pthread_mutex_unlock(&p->lock);
}

/* ---- a falling block with a gradient, with or without the pool */
static int run(pool *p, int steps, double *x_out, double *g_out, int n)
{
    cq_sim_desc d;
    cq_sim *s;
    cq_particles_desc pd;
    double *x = (double *)malloc(sizeof(double) * 2 * (size_t)n), *seed = (double *)malloc(sizeof(double) * 2 * (size_t)n);
    int ok;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 64; d.dx = 1.0 / 64; d.dt = 1e-4; d.gravity[1] = -9.8;
    d.substeps = 4; d.checkpoint_every = 5; d.backend = CQ_BACKEND_CPU;
    if (p) {
        d.threads.workers = p->workers;
        d.threads.enqueue = pool_enqueue;
        d.threads.finish = pool_finish;
        d.threads.user = p;
    }
    if (cq_sim_create(&d, &s) != CQ_SUCCESS) { printf("create: %s\n", cq_sim_last_error(NULL)); free(x); free(seed); return 0; }
    for (int i = 0; i < n; ++i) {
        x[2 * i] = 0.3 + (i % 40) / 128.0;
        x[2 * i + 1] = 0.4 + (i / 40) / 128.0;
        seed[2 * i] = 0; seed[2 * i + 1] = 1.0 / n;   /* L = mean height */
    }
    memset(&pd, 0, sizeof pd);
    pd.count = n; pd.x = x;
    ok = cq_sim_add_particles(s, &pd) == CQ_SUCCESS && cq_sim_step(s, steps) == CQ_SUCCESS &&
         cq_sim_get(s, CQ_FIELD_X, x_out) == CQ_SUCCESS &&
         cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL) == CQ_SUCCESS &&
         cq_sim_grad(s, CQ_FIELD_V, g_out) == CQ_SUCCESS;
    if (!ok) printf("error: %s\n", cq_sim_last_error(s));
    cq_sim_destroy(s);
    free(x); free(seed);
    return ok;
}

int main(int argc, char **argv)
{
    const int quick = argc > 2 && strcmp(argv[2], "quick") == 0;
    const int n = 40 * 30, steps = quick ? 20 : 100;
    double *xa = (double *)malloc(sizeof(double) * 2 * n), *ga = (double *)malloc(sizeof(double) * 2 * n);
    double *xb = (double *)malloc(sizeof(double) * 2 * n), *gb = (double *)malloc(sizeof(double) * 2 * n);
    int same = 1;
    pool p;
    if (!run(NULL, steps, xa, ga, n)) return 1;
    for (int workers = 1; workers <= 4; workers += 3) {
        pool_start(&p, workers);
        if (!run(&p, steps, xb, gb, n)) { pool_stop(&p); return 1; }
        pool_stop(&p);
        {
            const int eq = memcmp(xa, xb, sizeof(double) * 2 * n) == 0 && memcmp(ga, gb, sizeof(double) * 2 * n) == 0;
            double h = 0;
            for (int i = 0; i < n; ++i) h += xb[2 * i + 1] / n;
            printf("%d worker%s: %d particles, %d steps, mean height %.6f, dL/dv0_y of particle 0 = %.6e: %s\n", workers,
                   workers == 1 ? "" : "s", n, steps, h, gb[1], eq ? "bitwise equal to the sim without the hook" : "DIFFERENT");
            same &= eq;
        }
    }
    free(xa); free(ga); free(xb); free(gb);
    return same ? 0 : 1;
}
