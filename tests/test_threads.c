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

RUN_TESTS(CASE(concurrent_sims_on_their_own_threads), CASE(concurrent_failing_creates_keep_their_own_message))
