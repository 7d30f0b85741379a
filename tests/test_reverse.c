#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
/* The reverse API's state machine (step / tape / backward / gradients / add_particles): each
   test is the reproducer of a defect once seen under AddressSanitizer/UBSan, kept as a
   regression test.  Runs plain, under the sanitizers and on the mock CUDA driver. */
#include <stdlib.h>
#include <float.h>

static int has(const char *msg, const char *key) { return msg && strstr(msg, key) != NULL; }
#define CHECK_MSG(sim, key) CHECK(has(cq_sim_last_error(sim), key), "message \"%s\" lacks \"%s\"", cq_sim_last_error(sim), key)

static int all_finite(const double *a, long n)
{
    for (long i = 0; i < n; ++i) if (!cq__isfinite_f64(a[i])) return 0;   /* bits: holds under -ffast-math */
    return 1;
}

/* a failing-on-demand allocator (harness.h): fails every allocation once `limit` allocations were made */
typedef cqt_counter counter;
#define count_alloc cqt_count_alloc
#define count_free cqt_count_free

static cq_sim_desc desc2d(int taped)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    d.dim = 2;
    d.res[0] = d.res[1] = 32;
    d.dx = 1.0 / 32;
    d.dt = 1e-4;
    d.gravity[1] = -9.8;
    d.checkpoint_every = taped;
    return d;
}

/* count particles in a block at (x0, y0), spacing dx/2 */
static void block(double *x, int count, double x0, double y0)
{
    for (int i = 0; i < count; ++i) { x[2 * i] = x0 + (i % 8) / 64.0; x[2 * i + 1] = y0 + (i / 8) / 64.0; }
}

static cq_result add(cq_sim *s, int count, const double *x, const double *v)
{
    cq_particles_desc p;
    memset(&p, 0, sizeof p);
    p.count = count; p.x = x; p.v = v;
    return cq_sim_add_particles(s, &p);
}

static cq_sim *make(cq_sim_desc d, int count, double x0, double y0)
{
    cq_sim *s = NULL;
    double x[2 * 256];
    CHECK_OK(cq_sim_create(&d, &s));
    if (s && count) { block(x, count, x0, y0); CHECK_OK(add(s, count, x, NULL)); }
    return s;
}

static int hook_calls;
static void count_hook(cq_sim *s, int step, void *user) { (void)s; (void)step; (void)user; ++hook_calls; }

/* Defect 1: a taped sim whose first step fails at step 0 kept a step-0 checkpoint for the old
   particle count; particles added at step 0 then overflowed it on the next step. */
TEST(failed_first_step_then_add_particles)
{
    cq_sim *s = make(desc2d(1), 0, 0, 0), *ref = make(desc2d(1), 0, 0, 0);
    double x[2 * 65], v[2 * 65], seed[2 * 65], g[2 * 65], gr[2 * 65];
    memset(v, 0, sizeof v);
    x[0] = 0.5; x[1] = 0.5; v[0] = 1e6;   /* leaves the grid in the first substep */
    CHECK_OK(add(s, 1, x, v));
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_OUT_OF_DOMAIN, "the first step should leave the grid");
    CHECK(cq_sim_step_count(s) == 0, "step count %d", cq_sim_step_count(s));
    block(x + 2, 64, 0.3, 0.3);
    CHECK_OK(add(s, 64, x + 2, v + 2));
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_OUT_OF_DOMAIN, "particle 0 still leaves");
    v[0] = 0;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));
    CHECK_OK(cq_sim_step(s, 3));
    /* the same particles in a fresh sim give the same gradients, bit for bit */
    CHECK_OK(add(ref, 65, x, v));
    CHECK_OK(cq_sim_step(ref, 3));
    for (int i = 0; i < 2 * 65; ++i) seed[i] = 0.01 * (i % 7) - 0.02;
    CHECK_OK(cq_sim_backward(s, seed, seed, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_backward(ref, seed, seed, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
    CHECK_OK(cq_sim_grad(ref, CQ_FIELD_X, gr));
    if (cq_sim_backend(s) == CQ_BACKEND_CPU)   /* CPU sums in a fixed order: bit for bit */
        CHECK(memcmp(g, gr, sizeof g) == 0, "gradients differ from a fresh sim's");
    else   /* GPU atomics sum in a varying order (until deterministic GPU sums land) */
        for (int i = 0; i < 2 * 65; ++i)
            CHECK(fabs(g[i] - gr[i]) <= 1e-5 * (1 + fabs(gr[i])), "gradient %d: %g vs a fresh sim's %g", i, g[i], gr[i]);
    cq_sim_destroy(s); cq_sim_destroy(ref);
}

/* Defect 1 with cables: a failed step at step 0, then a cable added. */
TEST(failed_first_step_then_add_cable)
{
    cq_sim *s = make(desc2d(2), 16, 0.4, 0.4);
    double v[2 * 16], seed[2 * 16], g[2 * 16];
    int route[4] = {0, 5, 10, 15};
    memset(v, 0, sizeof v);
    v[0] = 1e5;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_OUT_OF_DOMAIN, "the first step should leave the grid");
    CHECK_OK(cq_sim_add_cable(s, 4, route, 10.0, 0.0));
    v[0] = 0;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));
    CHECK_OK(cq_sim_step(s, 5));
    for (int i = 0; i < 2 * 16; ++i) seed[i] = 1;
    CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
    CHECK(all_finite(g, 2 * 16), "gradient not finite");
    cq_sim_destroy(s);
}

/* Defect 2: gradients stayed available when the particle count grew. */
TEST(grad_after_add_particles)
{
    cq_sim *s = make(desc2d(1), 0, 0, 0);
    double x[2 * 64], out[4 * 64];
    block(x, 64, 0.4, 0.4);
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL));   /* empty sim */
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, out));
    CHECK_OK(add(s, 64, x, NULL));
    CHECK(cq_sim_grad(s, CQ_FIELD_X, out) == CQ_ERROR_INVALID_STATE, "grad after add_particles succeeded");
    CHECK_MSG(s, "no gradients");
    cq_sim_destroy(s);
    s = make(desc2d(1), 1, 0.5, 0.5);
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL));   /* step 0, one particle */
    CHECK_OK(add(s, 63, x, NULL));
    for (int f = 0; f < 8; ++f)
        CHECK(cq_sim_grad(s, (cq_field)f, out) == CQ_ERROR_INVALID_STATE, "grad of field %d after add_particles", f);
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_F, out));   /* sized for 64 now (ASan checks the reads) */
    cq_sim_destroy(s);
}

/* Defect 3: a backward that fails part-way left the hook's state pointers set. */
static counter *g_counter;
static int fail_hook_calls;
static void failing_hook(cq_sim *s, int step, void *user)
{
    (void)s; (void)step; (void)user;
    if (++fail_hook_calls == 2) g_counter->limit = g_counter->allocs;   /* every later allocation fails */
}

/* An optimization loop's episodes (cq_sim_reset, T taped steps with actuation and a cable,
   cq_sim_backward) allocate nothing after the first: the reset keeps the checkpoints' buffers (it
   freed them, and every episode allocated them again: 4 allocations a checkpoint, on a GPU 4
   cuMemAlloc, test_cuda.c) and each step's actuation record, cq_sim_set_actuation its buffer, the
   backward its own (on CUDA the seeds go up through a stack buffer).  Each episode's gradients are
   the first's, bit for bit, and the tape holds the same bytes. */
TEST(episodes_after_the_first_allocate_nothing)
{
    counter c = {0, 0, -1};
    cq_sim_desc d = desc2d(3);
    cq_sim *s;
    double x[2 * 64], seed[2 * 64], g[3][2 * 64];
    long allocs[3], live[3];
    size_t tape[3];
    int act[64], route[4] = {0, 9, 18, 27};
    cq_particles_desc p;
    d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
    d.substeps = 2;
    CHECK_OK(cq_sim_create(&d, &s));
    block(x, 64, 0.4, 0.4);
    for (int i = 0; i < 64; ++i) act[i] = i % 3 == 0 ? i % 2 : -1;   /* two actuator groups */
    memset(&p, 0, sizeof p);
    p.count = 64; p.x = x; p.actuator = act;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK_OK(cq_sim_add_cable(s, 4, route, 20.0, 0.02));
    for (int i = 0; i < 2 * 64; ++i) seed[i] = 1.0 / 64;
    for (int e = 0; e < 3; ++e) {
        CHECK_OK(cq_sim_reset(s));
        for (int t = 0; t < 10; ++t) {   /* a controller: each step's actuation and cable tension */
            const double st[12] = {0.1 * t, 0, 0, -0.1 * t, -0.05 * t, 0, 0, 0.05 * t, 0.01 * t, 0, 0, 0}, u = 0.1 * (t % 3);
            CHECK_OK(cq_sim_set_actuation(s, t % 4 == 3 ? 0 : (t < 5 ? 2 : 3), st));   /* off, 2 and 3 groups */
            CHECK_OK(cq_sim_set_cable_actuation(s, 1, &u));
            CHECK_OK(cq_sim_step(s, 1));
        }
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g[e]));
        allocs[e] = c.allocs; live[e] = c.live; tape[e] = cq_sim_tape_bytes(s);
    }
    CHECK(allocs[1] == allocs[0] && allocs[2] == allocs[0], "allocations after episodes 1-3: %ld, %ld, %ld", allocs[0],
          allocs[1], allocs[2]);
    CHECK(live[1] == live[0] && live[2] == live[0], "live allocations after episodes 1-3: %ld, %ld, %ld", live[0], live[1], live[2]);
    CHECK(!memcmp(g[0], g[1], sizeof g[0]) && !memcmp(g[0], g[2], sizeof g[0]), "an episode's dL/dx0 differs from the first's");
    CHECK(tape[1] == tape[0] && tape[2] == tape[0], "tape bytes %lu, %lu, %lu", (unsigned long)tape[0], (unsigned long)tape[1],
          (unsigned long)tape[2]);
    CHECK_OK(cq_sim_reset(s));   /* a shorter episode, no more groups a step than before: the buffers serve it too */
    {
        const double st[8] = {0.2, 0, 0, -0.2, 0, 0, 0, 0};
        CHECK_OK(cq_sim_set_actuation(s, 2, st));
        CHECK_OK(cq_sim_step(s, 3));
    }
    CHECK(c.allocs == allocs[2], "a shorter episode allocated %ld times", c.allocs - allocs[2]);
    CHECK(c.live == live[2], "a shorter episode: %ld live allocations, %ld before", c.live, live[2]);
    cq_sim_destroy(s);
    CHECK(c.live == 0, "%ld allocations leaked", c.live);
}

/* A controller's loop without a tape (checkpoint_every = 0): read x and v, set v, actuate, step:
   nothing allocated after the first step, host or device (cq_sim_set checks its input and
   converts it straight into the state).  A refused cq_sim_set (x of particle 300, in a later
   chunk of its check, outside the grid) names the particle and leaves the state as it was. */
TEST(control_loop_allocates_nothing)
{
    for (int prec = 0; prec < 2; ++prec) {
        counter c = {0, 0, -1};
        cq_sim_desc d = desc2d(0);
        cq_sim *s;
        double x[2 * 400], xs[2 * 400], v[2 * 400], v2[2 * 400], xb[2 * 400], xa[2 * 400];
        int act[400];
        long first = 0;
        cq_particles_desc p;
        d.precision = prec ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
        d.logger.func = cq_log_silent;
        d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
        CHECK_OK(cq_sim_create(&d, &s));
        block(x, 400, 0.3, 0.1);
        for (int i = 0; i < 400; ++i) act[i] = i % 2;
        memset(&p, 0, sizeof p);
        p.count = 400; p.x = x; p.actuator = act;
        CHECK_OK(cq_sim_add_particles(s, &p));
        for (int t = 0; t < 12; ++t) {
            const double st[8] = {0.1 * t, 0, 0, 0, 0, 0, 0, -0.1 * t};
            CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xs));
            CHECK_OK(cq_sim_get(s, CQ_FIELD_V, v));
            for (int i = 0; i < 2 * 400; ++i) v[i] = 0.5 * v[i] + (i % 2 ? 0.01 : -0.02) * (xs[i] - 0.4);   /* a damping law */
            CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));
            CHECK_OK(cq_sim_get(s, CQ_FIELD_V, v2));
            for (int i = 0; i < 2 * 400; ++i)
                if (v2[i] != (prec ? v[i] : (double)(float)v[i])) { CHECK(0, "v[%d] reads %.17g after setting %.17g", i, v2[i], v[i]); break; }
            CHECK_OK(cq_sim_set_actuation(s, 2, st));
            CHECK_OK(cq_sim_step(s, 1));
            if (t == 0) first = c.allocs;
        }
        CHECK(c.allocs == first, "%s: %ld allocations in 11 control steps", prec ? "f64" : "f32", c.allocs - first);
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xb));
        memcpy(xa, xb, sizeof xa);
        xa[2 * 300] = 2.0;   /* outside the grid (the fifth chunk of cq_sim_set's check) */
        CHECK(cq_sim_set(s, CQ_FIELD_X, xa) == CQ_ERROR_OUT_OF_DOMAIN, "x outside the grid accepted");
        CHECK(strstr(cq_sim_last_error(s), "particle 300") != NULL, "the error names another particle: %s", cq_sim_last_error(s));
        xa[2 * 300] = xb[2 * 300]; xa[2 * 399 + 1] = 1e39;   /* overflows float; finite in double */
        CHECK(prec || cq_sim_set(s, CQ_FIELD_X, xa) == CQ_ERROR_NON_FINITE, "x overflowing float accepted");
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xs));
        CHECK(!memcmp(xs, xb, sizeof xs), "a refused cq_sim_set changed x");
        cq_sim_destroy(s);
        CHECK(c.live == 0, "%ld allocations leaked", c.live);
    }
}

TEST(backward_failing_part_way)
{
    counter c = {0, 0, -1};
    cq_sim_desc d = desc2d(1);
    cq_sim *s;
    double x[2 * 64], st1[4] = {1, 0, 0, 1}, st3[12], xs[2 * 64], xa[2 * 64], out[12];
    int act[64];
    cq_particles_desc p;
    memset(st3, 0, sizeof st3);
    d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
    CHECK_OK(cq_sim_create(&d, &s));
    block(x, 64, 0.4, 0.4);
    for (int i = 0; i < 64; ++i) act[i] = i % 2 ? 0 : -1;
    memset(&p, 0, sizeof p);
    p.count = 64; p.x = x; p.actuator = act;
    CHECK_OK(cq_sim_add_particles(s, &p));
    /* step 0 with 3 actuator groups, later steps with 1: the reverse pass grows the actuation
       gradient at step 0, after the hooks of steps 4..1 ran */
    CHECK_OK(cq_sim_set_actuation(s, 3, st3));
    CHECK_OK(cq_sim_step(s, 1));
    CHECK_OK(cq_sim_set_actuation(s, 1, st1));
    CHECK_OK(cq_sim_step(s, 4));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xs));
    g_counter = &c; fail_hook_calls = 0;
    CHECK(cq_sim_backward(s, x, NULL, NULL, NULL, failing_hook, NULL) == CQ_ERROR_OUT_OF_MEMORY, "backward should run out of memory");
    CHECK(fail_hook_calls == 4, "hooks run before the failure: %d", fail_hook_calls);
    CHECK_MSG(s, "step 0");
    c.limit = -1;
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xa));
    CHECK(memcmp(xs, xa, sizeof xs) == 0, "cq_sim_get after a failed backward returns a tape state");
    CHECK(cq_sim_actuation_grad(s, out) == CQ_ERROR_INVALID_STATE, "actuation_grad outside a hook succeeded");
    CHECK(cq_sim_add_state_grad(s, CQ_FIELD_X, x) == CQ_ERROR_INVALID_STATE, "add_state_grad outside a hook succeeded");
    CHECK(cq_sim_cable_actuation_grad(s, out) == CQ_ERROR_INVALID_STATE, "cable_actuation_grad outside a hook succeeded");
    CHECK(cq_sim_grad(s, CQ_FIELD_X, out) == CQ_ERROR_INVALID_STATE, "gradients of a failed backward are available");
    CHECK_OK(cq_sim_reset(s));
    CHECK_OK(cq_sim_set_actuation(s, 0, NULL));
    CHECK_OK(add(s, 64, x, NULL));
    {
        double big[2 * 128];
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, big));   /* 128 particles: ASan checks the read */
    }
    /* the sim still works: forward and a full backward */
    CHECK_OK(cq_sim_step(s, 2));
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL));
    cq_sim_destroy(s);
    CHECK(c.live == 0, "%ld allocations leaked", c.live);
}

/* Every allocation the first backward of a sim with actuation makes may fail (the adjoint
   buffers, the actuation gradient, its chunk table): each failure is CQ_ERROR_OUT_OF_MEMORY with
   a message, keeps the state and leaks nothing, and the sim's next backward (memory back) gives
   the gradients of a sim that never ran out.  Attempt k: a fresh sim whose first backward may
   make k allocations. */
TEST(backward_with_actuation_survives_every_failing_allocation)
{
    const double st1[4] = {30, 0, 0, -30};
    double x[2 * 64], xs[2 * 64], xa[2 * 64], g[2 * 64], gref[2 * 64];
    int act[64], failures = 0, table = 0, ok = 0;
    cq_particles_desc p;
    cq_sim *ref = make(desc2d(1), 0, 0.4, 0.4);
    block(x, 64, 0.4, 0.4);
    for (int i = 0; i < 64; ++i) act[i] = i % 3 ? 0 : -1;
    memset(&p, 0, sizeof p);
    p.count = 64; p.x = x; p.actuator = act;
    CHECK_OK(cq_sim_add_particles(ref, &p));
    CHECK_OK(cq_sim_set_actuation(ref, 1, st1));
    CHECK_OK(cq_sim_step(ref, 5));
    CHECK_OK(cq_sim_backward(ref, x, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(ref, CQ_FIELD_X, gref));
    for (int k = 0; k < 200 && !ok; ++k) {
        counter c = {0, 0, -1};
        cq_sim_desc d = desc2d(1);
        cq_sim *s = NULL;
        cq_result r;
        d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
        CHECK_OK(cq_sim_create(&d, &s));
        if (!s) return;
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK_OK(cq_sim_set_actuation(s, 1, st1));
        CHECK_OK(cq_sim_step(s, 5));
        CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xs));
        c.limit = c.allocs + k;
        r = cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL);
        c.limit = -1;
        if (r == CQ_SUCCESS) ok = 1;
        else {
            CHECK(r == CQ_ERROR_OUT_OF_MEMORY, "attempt %d: %s", k, cq_result_string(r));
            CHECK(cq_sim_last_error(s)[0] != 0, "attempt %d: no message", k);
            table += has(cq_sim_last_error(s), "actuation gradient's work memory (host)");
            failures++;
            CHECK_OK(cq_sim_get(s, CQ_FIELD_X, xa));
            CHECK(memcmp(xs, xa, sizeof xs) == 0, "attempt %d: the state changed", k);
            CHECK(cq_sim_grad(s, CQ_FIELD_X, g) == CQ_ERROR_INVALID_STATE, "attempt %d: gradients after a failed backward", k);
            CHECK_OK(cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL));   /* memory back */
        }
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
        CHECK(memcmp(g, gref, sizeof g) == 0, "attempt %d: the gradients differ from a sim that never ran out", k);
        cq_sim_destroy(s);
        CHECK(c.live == 0, "attempt %d: %ld allocations leaked", k, c.live);
    }
    CHECK(ok && failures > 3, "no success after %d failures", failures);
    CHECK(cq_sim_backend(ref) != CQ_BACKEND_CPU || table > 0, "no failure named the actuation chunk table (%d failures)", failures);
    cq_sim_destroy(ref);
}

/* The backward's grid cache (>>grid_cache) is optional memory: where an allocation of it fails,
   the backward keeps the sets it got (or none) and succeeds with bitwise the gradients of a sim
   without the cache; its next backward grows the cache to the sets a segment uses
   (checkpoint_every 3 x 2 substeps - 1 = 5).  Attempt k: a fresh sim whose first backward's k-th
   allocation fails (that one only); every failure of the backward itself is an error with the
   state kept, as above.  Also: the budget is validated, its default resolved, -1 keeps none. */
typedef struct oneshot { long allocs, live, fail_at; } oneshot;
static void *oneshot_alloc(size_t size, void *user)
{
    oneshot *c = (oneshot *)user;
    void *p;
    if (c->allocs++ == c->fail_at) return NULL;
    p = malloc(size);
    if (p) c->live++;
    return p;
}
static void oneshot_free(void *ptr, void *user)
{
    oneshot *c = (oneshot *)user;
    if (ptr) { c->live--; free(ptr); }
}
TEST(grid_cache_partial_where_memory_runs_out)
{
    const double st1[4] = {30, 0, 0, -30};
    double x[2 * 64], g[2 * 64], gref[2 * 64];
    int act[64], partial = 0, none = 0, failed = 0, k;
    cq_particles_desc p;
    cq_sim_desc d = desc2d(3);
    cq_sim *ref = NULL, *s = NULL;
    d.substeps = 2; d.backward_cache_mb = -2;
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && !s, "backward_cache_mb = -2 accepted");
    CHECK(has(cq_sim_last_error(NULL), "backward_cache_mb"), "message: %s", cq_sim_last_error(NULL));
    block(x, 64, 0.4, 0.4);
    for (int i = 0; i < 64; ++i) act[i] = i % 3 ? 0 : -1;
    memset(&p, 0, sizeof p);
    p.count = 64; p.x = x; p.actuator = act;
    d.backward_cache_mb = -1;
    CHECK_OK(cq_sim_create(&d, &ref));
    if (!ref) return;
    CHECK_OK(cq_sim_add_particles(ref, &p));
    CHECK_OK(cq_sim_set_actuation(ref, 1, st1));
    CHECK_OK(cq_sim_step(ref, 7));
    CHECK_OK(cq_sim_backward(ref, x, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(ref, CQ_FIELD_X, gref));
    CHECK(ref->n_gc == 0, "backward_cache_mb = -1 kept %d sets", ref->n_gc);
    for (k = 0; k < 400; ++k) {
        oneshot c = {0, 0, -1};
        cq_sim_desc dd = desc2d(3);
        cq_result r;
        long before;
        s = NULL;
        dd.substeps = 2;
        dd.allocator.alloc = oneshot_alloc; dd.allocator.free = oneshot_free; dd.allocator.user = &c;
        CHECK_OK(cq_sim_create(&dd, &s));
        if (!s) break;
        if (k == 0) {
            cq_sim_desc got;
            CHECK_OK(cq_sim_get_desc(s, &got));
            CHECK(got.backward_cache_mb == 1024, "default budget resolved to %d MiB", got.backward_cache_mb);
        }
        CHECK_OK(cq_sim_add_particles(s, &p));
        CHECK_OK(cq_sim_set_actuation(s, 1, st1));
        CHECK_OK(cq_sim_step(s, 7));
        before = c.allocs;
        c.fail_at = before + k;
        r = cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL);
        if (c.allocs <= c.fail_at) { cq_sim_destroy(s); CHECK(c.live == 0, "last attempt: leaked"); break; }   /* none failed */
        if (r != CQ_SUCCESS) {
            CHECK(r == CQ_ERROR_OUT_OF_MEMORY, "attempt %d: %s", k, cq_result_string(r));
            failed++;
        } else {
            CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
            CHECK(memcmp(g, gref, sizeof g) == 0, "attempt %d (%d sets kept): the gradients differ from a sim without the cache",
                  k, s->n_gc);
            CHECK(s->n_gc >= 0 && s->n_gc < 5, "attempt %d: a failed allocation, yet %d sets", k, s->n_gc);
            partial += s->n_gc > 0; none += s->n_gc == 0;
        }
        CHECK_OK(cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL));   /* memory back: the cache grows */
        CHECK(s->n_gc == 5, "attempt %d: %d sets after a backward with memory", k, s->n_gc);
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
        CHECK(memcmp(g, gref, sizeof g) == 0, "attempt %d: the next backward's gradients differ", k);
        cq_sim_destroy(s);
        CHECK(c.live == 0, "attempt %d: %ld allocations leaked", k, c.live);
    }
    /* on the CPU the sets are host memory from the allocator; on CUDA device memory, and only the
       host's list of sets can fail here */
    CHECK(k < 400 && failed > 3 && none >= 1 && (partial >= 4 || cq_sim_backend(ref) != CQ_BACKEND_CPU),
          "%d attempts: %d failed, %d partial, %d none", k, failed, partial, none);
    cq_sim_destroy(ref);
}

/* Defect 4: a refused backward overwrote the previous gradients. */
TEST(refused_backward_keeps_gradients)
{
    cq_sim *s = make(desc2d(1), 64, 0.4, 0.4);
    double seed[2 * 64], bad[2 * 64], g1[2 * 64], g2[2 * 64], m1[64], m2[64];
    for (int i = 0; i < 2 * 64; ++i) { seed[i] = 0.1 * (i % 5); bad[i] = 1; }
    bad[17] = NAN;
    CHECK_OK(cq_sim_step(s, 3));
    CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g1));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_MASS, m1));
    CHECK(cq_sim_backward(s, bad, bad, NULL, NULL, NULL, NULL) == CQ_ERROR_NON_FINITE, "NaN dL/dx accepted");
    CHECK(cq_sim_backward(s, seed, bad, NULL, NULL, NULL, NULL) == CQ_ERROR_NON_FINITE, "NaN dL/dv accepted");
    CHECK_MSG(s, "particle 8");
    bad[17] = 1e300;   /* finite in double, not in float */
    CHECK(cq_sim_backward(s, seed, NULL, NULL, bad, NULL, NULL) == CQ_ERROR_NON_FINITE, "1e300 in float accepted");
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g2));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_MASS, m2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0 && memcmp(m1, m2, sizeof m1) == 0, "refused backward changed the gradients");
    cq_sim_destroy(s);
}

/* Defect 5: non-finite gradients returned as success.  dt = 3.8e-4 is over the stability limit
   dx sqrt(rho / E) = 3.1e-4 and the seed, 1e37, is finite in float: the forward stays in the grid
   for the 25 steps, the adjoint grows and overflows.  (It was 200 steps at dt = 4e-4 with a seed
   of 1: at -O3 -ffast-math, whose rcpps / rsqrtss approximations differ between Intel and AMD
   CPUs, the forward left the grid after 24 steps on an Intel Xeon; at dt = 3.8e-4 it leaves after
   37-42 there, and the adjoint overflows within the 25 steps in every build tried.) */
#define NONFINITE_T 25
TEST(nonfinite_adjoint_is_an_error)
{
    cq_sim_desc d = desc2d(1);
    cq_sim *s;
    double seed[2 * 64], g[2 * 64];
    char first[512];
    const char *at;
    int k = -1;
    d.dt = 3.8e-4;
    s = make(d, 64, 0.4, 0.4);
    for (int i = 0; i < 2 * 64; ++i) seed[i] = 1e37;
    CHECK_OK(cq_sim_step(s, NONFINITE_T));
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, g));
    CHECK(all_finite(g, 2 * 64), "the forward should stay finite");
    hook_calls = 0;
    {
        cq_result r = cq_sim_backward(s, seed, NULL, NULL, NULL, count_hook, NULL);
        CHECK(r == CQ_ERROR_NON_FINITE, "backward returned %s", cq_result_string(r));
        snprintf(first, sizeof first, "%s", cq_sim_last_error(s));
    }
    CHECK_MSG(s, "non-finite at step");
    CHECK_MSG(s, "particle");
    /* the hooks stop at the failing step: called for steps T-1 .. k+1, after each one's adjoint */
    at = strstr(first, "non-finite at step ");
    CHECK(at && sscanf(at, "non-finite at step %d", &k) == 1 && k >= 0 && k < NONFINITE_T, "no step in \"%s\"", first);
    CHECK(hook_calls == NONFINITE_T - 1 - k, "%d hook calls for a failure at step %d of %d", hook_calls, k, NONFINITE_T);
    CHECK(cq_sim_grad(s, CQ_FIELD_X, g) == CQ_ERROR_INVALID_STATE, "gradients of a non-finite backward are available");
    /* the sim is intact: the state after T steps is still there and a new backward is the same */
    CHECK(cq_sim_step_count(s) == NONFINITE_T, "step count %d", cq_sim_step_count(s));
    {   /* without a hook the check is read once per segment: the same step is named */
        CHECK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_NON_FINITE, "second backward differs");
        if (cq_sim_backend(s) == CQ_BACKEND_CPU)   /* GPU sums vary run to run: the step may differ by one */
            CHECK(strcmp(first, cq_sim_last_error(s)) == 0, "\"%s\" vs \"%s\"", first, cq_sim_last_error(s));
    }
    cq_sim_destroy(s);
    d.checkpoint_every = 7;   /* segments of 7 steps, deferred reads */
    s = make(d, 64, 0.4, 0.4);
    CHECK_OK(cq_sim_step(s, NONFINITE_T));
    CHECK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_NON_FINITE, "k = 7: backward succeeded");
    CHECK_MSG(s, "non-finite at step");
    cq_sim_destroy(s);
}

/* Defect 5, second reproducer: a particle at rest at the last in-range f32 position in 3D.  The
   backward either gives finite gradients or says where they became non-finite. */
TEST(particle_at_the_last_f32_position_3d)
{
    cq_sim_desc d;
    cq_sim *s;
    double x[3], seed[3] = {1, 1, 1}, g[9];
    memset(&d, 0, sizeof d);
    d.dim = 3; d.res[0] = d.res[1] = d.res[2] = 16; d.dx = 1.0 / 16; d.dt = 1e-4; d.checkpoint_every = 1;
    CHECK_OK(cq_sim_create(&d, &s));
    for (int a = 0; a < 3; ++a) x[a] = (double)nextafterf((float)((16 - 1.5) / 16.0), 0.0f);
    CHECK_OK(add(s, 1, x, NULL));
    CHECK_OK(cq_sim_step(s, 5));
    {
        cq_result r = cq_sim_backward(s, seed, seed, NULL, NULL, NULL, NULL);
        CHECK(r == CQ_SUCCESS || r == CQ_ERROR_NON_FINITE, "backward returned %s", cq_result_string(r));
        if (r == CQ_SUCCESS) {
            for (int f = 0; f < 4; ++f) {
                CHECK_OK(cq_sim_grad(s, (cq_field)f, g));
                CHECK(all_finite(g, cq_sim_field_size(s, (cq_field)f)), "field %d: success with a non-finite gradient", f);
            }
        } else {
            CHECK_MSG(s, "step");
            CHECK(cq_sim_grad(s, CQ_FIELD_X, g) == CQ_ERROR_INVALID_STATE, "gradients kept after a non-finite backward");
        }
    }
    cq_sim_destroy(s);
}

/* A hook that adds a gradient overflowing float is refused and adds nothing. */
static void overflow_hook(cq_sim *s, int step, void *user)
{
    double g[2 * 64];
    int *codes = (int *)user;
    (void)step;
    for (int i = 0; i < 2 * 64; ++i) g[i] = 3e38;
    codes[0] = cq_sim_add_state_grad(s, CQ_FIELD_X, g);
    codes[1] = cq_sim_add_state_grad(s, CQ_FIELD_X, g);   /* 6e38 > FLT_MAX */
}

TEST(hook_gradient_overflow_refused)
{
    cq_sim *s = make(desc2d(1), 64, 0.4, 0.4);
    int codes[2] = {1, 1};
    double g[2 * 64];
    CHECK_OK(cq_sim_step(s, 1));
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, overflow_hook, codes));
    CHECK(codes[0] == CQ_SUCCESS, "first add: %d", codes[0]);
    CHECK(codes[1] == CQ_ERROR_NON_FINITE, "overflowing add: %d", codes[1]);
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g));
    CHECK(all_finite(g, 2 * 64), "gradient not finite");
    CHECK(fabs(g[0] - 3e38) < 1e33, "the first add is kept exactly once: %g", g[0]);
    cq_sim_destroy(s);
}

/* Item 9: small ones. */
TEST(f64_dx_subnormal_refused)
{
    cq_sim_desc d = desc2d(0);
    cq_sim *s = NULL;
    d.precision = CQ_PRECISION_F64;
    d.dx = 1e-310;
    CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && s == NULL, "dx = 1e-310 accepted");
    CHECK(has(cq_sim_last_error(NULL), "dx"), "message: %s", cq_sim_last_error(NULL));
}

TEST(failed_step_without_progress_keeps_gradients)
{
    cq_sim *s = make(desc2d(1), 64, 0.4, 0.4);
    double v[2 * 64], g1[2 * 64], g2[2 * 64], seed[2 * 64];
    for (int i = 0; i < 2 * 64; ++i) seed[i] = 1;
    CHECK_OK(cq_sim_step(s, 2));
    CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g1));
    CHECK(cq_sim_step(s, -1) == CQ_ERROR_INVALID_ARGUMENT, "negative steps accepted");
    CHECK_OK(cq_sim_step(s, 0));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0, "gradients changed");
    /* a sim whose next step fails at once: no progress, gradients kept */
    cq_sim_destroy(s);
    s = make(desc2d(1), 64, 0.4, 0.4);
    CHECK_OK(cq_sim_step(s, 1));
    CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g1));
    cq_sim_destroy(s);
    {
        cq_sim_desc d = desc2d(1);
        double x[2 * 2] = {0.5, 0.5, 0.4, 0.5}, vv[4] = {0, 0, 1e6, 0};
        CHECK_OK(cq_sim_create(&d, &s));
        CHECK_OK(add(s, 2, x, vv));
        CHECK_OK(cq_sim_backward(s, x, NULL, NULL, NULL, NULL, NULL));   /* at step 0: dL/dx0 = seed */
        CHECK(cq_sim_step(s, 1) == CQ_ERROR_OUT_OF_DOMAIN, "the step should fail");
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, v));
        for (int i = 0; i < 4; ++i)
            CHECK(v[i] == (double)(float)x[i], "gradient %d changed by a step that made no progress: %g", i, v[i]);
        cq_sim_destroy(s);
    }
    (void)v;
}

static void empty_hook(cq_sim *s, int step, void *user)
{
    int *bad = (int *)user;
    double out[4] = {-1, -1, -1, -1};
    (void)step;
    if (cq_sim_add_state_grad(s, CQ_FIELD_X, NULL) != CQ_SUCCESS) ++*bad;
    if (cq_sim_actuation_grad(s, out) != CQ_SUCCESS) ++*bad;
    if (out[0] != 0 || out[3] != 0) ++*bad;   /* no particle: a zero gradient */
    if (cq_sim_cable_actuation_grad(s, out) != CQ_SUCCESS) ++*bad;
}

TEST(empty_taped_sim_hooks)
{
    cq_sim *s = make(desc2d(1), 0, 0, 0);
    double st[4] = {1, 2, 3, 4};
    int bad = 0;
    CHECK_OK(cq_sim_set_actuation(s, 1, st));
    CHECK_OK(cq_sim_step(s, 3));
    hook_calls = 0;
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, count_hook, NULL));
    CHECK(hook_calls == 3, "hooks: %d", hook_calls);
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, empty_hook, &bad));
    CHECK(bad == 0, "%d hook-only calls failed inside the hooks of an empty sim", bad);
    CHECK(cq_sim_add_state_grad(s, CQ_FIELD_X, NULL) == CQ_ERROR_INVALID_STATE, "add_state_grad outside a hook");
    cq_sim_destroy(s);
}

/* Calls that change the sim are refused inside a hook, and the sim is usable afterwards. */
static void meddling_hook(cq_sim *s, int step, void *user)
{
    int *refused = (int *)user;
    double x[2] = {0.5, 0.5}, u = 1;
    cq_particles_desc p;
    memset(&p, 0, sizeof p);
    p.count = 1; p.x = x;
    (void)step;
    *refused += cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_step(s, 1) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_reset(s) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_set(s, CQ_FIELD_X, x) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_set_actuation(s, 0, NULL) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_set_cable_actuation(s, 0, &u) == CQ_ERROR_INVALID_STATE;
    *refused += cq_sim_grad(s, CQ_FIELD_X, x) == CQ_ERROR_INVALID_STATE;
}

TEST(hooks_cannot_change_the_sim)
{
    cq_sim *s = make(desc2d(1), 64, 0.4, 0.4);
    int refused = 0;
    CHECK_OK(cq_sim_step(s, 2));
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, meddling_hook, &refused));
    CHECK(refused == 16, "refused %d of 16 calls", refused);
    CHECK(cq_sim_particle_count(s) == 64 && cq_sim_step_count(s) == 2, "the hooks changed the sim");
    cq_sim_destroy(s);
}

/* cq_sim_backward_desc: the same call with named arguments, the same gradients bit for bit. */
TEST(backward_desc_matches_positional)
{
    cq_sim *s = make(desc2d(2), 64, 0.4, 0.4);
    double sx[2 * 64], sv[2 * 64], sF[4 * 64], g1[4 * 64], g2[4 * 64];
    cq_backward_desc bd;
    for (int i = 0; i < 4 * 64; ++i) { sF[i] = 0.01 * (i % 9); if (i < 2 * 64) { sx[i] = 0.1 * (i % 3); sv[i] = -0.2 * (i % 5); } }
    CHECK_OK(cq_sim_step(s, 5));
    CHECK_OK(cq_sim_backward(s, sx, sv, sF, NULL, count_hook, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_F, g1));
    memset(&bd, 0, sizeof bd);
    bd.dL_dx = sx; bd.dL_dv = sv; bd.dL_dF = sF; bd.hook = count_hook;
    hook_calls = 0;
    CHECK_OK(cq_sim_backward_desc(s, &bd));
    CHECK(hook_calls == 5, "hooks: %d", hook_calls);
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_F, g2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0 || cq_sim_backend(s) != CQ_BACKEND_CPU, "gradients differ");
    CHECK(cq_sim_backward_desc(s, NULL) == CQ_ERROR_INVALID_ARGUMENT, "NULL desc accepted");
    CHECK(cq_sim_backward_desc(NULL, &bd) == CQ_ERROR_INVALID_ARGUMENT, "NULL sim accepted");
    cq_sim_destroy(s);
}

/* Without a logger, errors and warnings reach stderr (a dt over the stability limit used to
   pass silently); cq_log_silent drops everything. */
static long stderr_lines_of(int silent)
{
    const char *path = "build/test_reverse_stderr.txt";
    cq_sim_desc d = desc2d(0);
    cq_sim *s = NULL;
    double x[2] = {0.5, 0.5};
    char line[512];
    long lines = 0, warn = 0;
    FILE *f;
    fflush(stderr);
    if (!freopen(path, "w", stderr)) return -1;
    d.dt = 1e-2;   /* far over dx sqrt(rho/E) */
    if (silent) d.logger.func = cq_log_silent;
    if (cq_sim_create(&d, &s) == CQ_SUCCESS) {
        (void)add(s, 1, x, NULL);            /* warning: dt */
        (void)cq_sim_step(s, -1);            /* error */
        cq_sim_destroy(s);
    }
    fflush(stderr);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) { ++lines; warn += strstr(line, "chainqueen: warning: dt") != NULL; }
    if (f) fclose(f);
    return silent ? lines : (warn == 1 ? lines : -2);
}

TEST(default_logger_is_stderr)
{
    long loud = stderr_lines_of(0), quiet = stderr_lines_of(1);
    CHECK(loud == 2, "stderr lines without a logger: %ld (want the dt warning and the error)", loud);
    CHECK(quiet == 0, "stderr lines with cq_log_silent: %ld", quiet);
}

/* A falling, actuated f32 cube in 3D: the nodes at its stencils' fringe get masses near 1e-20, where
   1/m^2 overflows float.  The grid adjoint never forms it (make test also builds this file with
   -O3 -ffast-math, where a reassociated dL/dm = -v_bar p / m^2 did and the backward failed at
   step 3); the gradient matches the same run in f64. */
TEST(fringe_nodes_backward_3d_f32)
{
    enum { SIDE = 6, N = SIDE * SIDE * SIDE };
    double x[N * 3], seed[N * 3], g[2][N * 3], act[18], big = 0, err = 0;
    int grp[N];
    for (int pr = 0; pr < 2; ++pr) {
        cq_sim_desc d;
        cq_sim *s;
        int k = 0;
        memset(&d, 0, sizeof d);
        d.dim = 3; d.res[0] = d.res[1] = d.res[2] = 40; d.dx = 1.0 / 40; d.dt = 2e-4; d.substeps = 3;
        d.gravity[1] = -9.8; d.material = CQ_MATERIAL_FIXED_COROTATED; d.checkpoint_every = 4;
        d.precision = pr ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
        for (int i = 0; i < SIDE; ++i)
            for (int j = 0; j < SIDE; ++j)
                for (int l = 0; l < SIDE; ++l, ++k) {
                    x[3 * k] = 0.4 + i * 0.0125; x[3 * k + 1] = 0.2 + j * 0.0125; x[3 * k + 2] = 0.4 + l * 0.0125;
                    grp[k] = i < SIDE / 2 ? 0 : 1;
                    seed[3 * k] = sin(k) / N; seed[3 * k + 1] = cos(k) / N; seed[3 * k + 2] = 0.5 / N;
                }
        CHECK_OK(cq_sim_create(&d, &s));
        {
            cq_particles_desc p;
            memset(&p, 0, sizeof p);
            p.count = N; p.x = x; p.actuator = grp; p.default_youngs = 3e3; p.default_poisson = 0.3;
            CHECK_OK(cq_sim_add_particles(s, &p));
        }
        for (int st = 0; st < 12; ++st) {   /* the two halves pull against each other */
            for (int a = 0; a < 18; ++a) act[a] = a % 4 == 0 ? 40 * sin(0.5 * st + a) : 0;
            CHECK_OK(cq_sim_set_actuation(s, 2, act));
            CHECK_OK(cq_sim_step(s, 1));
        }
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
        CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, g[pr]));
        CHECK(all_finite(g[pr], N * 3), "precision %d: a non-finite gradient", pr);
        cq_sim_destroy(s);
    }
    for (int i = 0; i < N * 3; ++i) { big = fmax(big, fabs(g[1][i])); err = fmax(err, fabs(g[0][i] - g[1][i])); }
    CHECK(big > 0 && err <= 1e-3 * big, "f32 vs f64 dL/dx0: %.3g of %.3g", err, big);
}

/* White box: the CPU's gathers skip zeroing a grid row nobody reaches when s->row_dirty says it is
   zero already.  A cube moving several cells leaves rows behind: wherever a row has no mass, every
   grid buffer's row must be zero, after each forward step and after the backward. */
static int row_zero(const void *buf, long r, int L, int per_node, size_t ts)
{
    const unsigned char *b = (const unsigned char *)buf + (size_t)r * (size_t)L * (size_t)per_node * ts;
    for (size_t i = 0; i < (size_t)L * (size_t)per_node * ts; ++i) if (b[i]) return 0;
    return 1;
}
TEST(empty_grid_rows_are_zero)
{
    enum { SIDE = 5, N = SIDE * SIDE * SIDE, RES = 24 };
    double x[N * 3], v[N * 3], seed[N * 3];
    for (int pr = 0; pr < 2; ++pr) {
        cq_sim_desc d;
        cq_sim *s;
        int k = 0, moved = 0, bad = 0, kept_rows = 0;
        const size_t ts = pr ? sizeof(double) : sizeof(float);
        memset(&d, 0, sizeof d);
        d.dim = 3; d.res[0] = d.res[1] = d.res[2] = RES; d.dx = 1.0 / RES; d.dt = 2e-4; d.substeps = 3;
        d.checkpoint_every = 5; d.precision = pr ? CQ_PRECISION_F64 : CQ_PRECISION_F32;
        d.backend = CQ_BACKEND_CPU;   /* the CPU backend's buffers (on CUDA they are device memory) */
        for (int i = 0; i < SIDE; ++i)
            for (int j = 0; j < SIDE; ++j)
                for (int l = 0; l < SIDE; ++l, ++k) {
                    x[3 * k] = 0.25 + i * 0.02; x[3 * k + 1] = 0.4 + j * 0.02; x[3 * k + 2] = 0.4 + l * 0.02;
                    v[3 * k] = 6; v[3 * k + 1] = -1; v[3 * k + 2] = 0;
                    seed[3 * k] = 1.0 / N; seed[3 * k + 1] = 0; seed[3 * k + 2] = 0;
                }
        CHECK_OK(cq_sim_create(&d, &s));
        CHECK_OK(add(s, N, x, v));
        for (int st = 0; st < 40; ++st) {
            CHECK_OK(cq_sim_step(s, 1));
            for (long r = 0; r < RES * RES; ++r)
                if (row_zero(s->grid_m, r, RES, 1, ts)) {
                    moved += (st == 39 && (s->row_dirty[r] & CQ__ROW_V) == 0);
                    bad += !row_zero(s->grid_v, r, RES, 3, ts);
                }
        }
        CHECK(bad == 0, "precision %d: %d rows without mass hold a non-zero velocity", pr, bad);
        CHECK_OK(cq_sim_backward(s, seed, NULL, NULL, NULL, NULL, NULL));
        /* the adjoint buffers against the grid the last substep adjoint used: the kept set of
           substep 0 (>>grid_cache) or the sim's own; the sim's momentum against its own mass */
        CHECK(s->n_gc > 0, "precision %d: no grid cache kept", pr);
        for (long r = 0; r < RES * RES; ++r) {
            if (row_zero(s->grid_m, r, RES, 1, ts)) bad += !row_zero(s->grid_p, r, RES, 3, ts);
            if (s->n_gc > 0 ? !(s->gc[0].row_dirty[r] & CQ__ROW_M) || row_zero(s->gc[0].grid_m, r, RES, 1, ts)
                            : row_zero(s->grid_m, r, RES, 1, ts))
                bad += !row_zero(s->grid_vb, r, RES, 3, ts) + !row_zero(s->grid_pb, r, RES, 3, ts) + !row_zero(s->grid_mb, r, RES, 1, ts);
            for (int j = 0; j < s->n_gc; ++j) {   /* each kept set: its velocity and momentum against its mass, in
                                                     the rows its gathers wrote (the others were never written, and
                                                     are never read: >>grid_cache) */
                const int written = (s->gc[j].row_dirty[r] & CQ__ROW_M) != 0;
                kept_rows += written;
                if (written && row_zero(s->gc[j].grid_m, r, RES, 1, ts))
                    bad += !row_zero(s->gc[j].grid_v, r, RES, 3, ts) + !row_zero(s->gc[j].grid_p, r, RES, 3, ts);
            }
        }
        CHECK(bad == 0, "precision %d: after the backward, %d rows of grid buffers without mass are not zero", pr, bad);
        CHECK(kept_rows > 0 && kept_rows < s->n_gc * RES * RES / 2, "precision %d: %d rows written in %d kept sets of %d rows",
              pr, kept_rows, s->n_gc, RES * RES);
        CHECK(moved > 0, "precision %d: no row was left behind clean (the cube did not move?)", pr);
        cq_sim_destroy(s);
    }
}

RUN_TESTS(CASE(failed_first_step_then_add_particles), CASE(failed_first_step_then_add_cable), CASE(grad_after_add_particles),
          CASE(backward_failing_part_way), CASE(backward_with_actuation_survives_every_failing_allocation),
          CASE(grid_cache_partial_where_memory_runs_out), CASE(refused_backward_keeps_gradients), CASE(nonfinite_adjoint_is_an_error), CASE(episodes_after_the_first_allocate_nothing), CASE(control_loop_allocates_nothing),
          CASE(particle_at_the_last_f32_position_3d), CASE(hook_gradient_overflow_refused), CASE(f64_dx_subnormal_refused),
          CASE(failed_step_without_progress_keeps_gradients), CASE(empty_taped_sim_hooks), CASE(hooks_cannot_change_the_sim),
          CASE(backward_desc_matches_positional), CASE(default_logger_is_stderr), CASE(fringe_nodes_backward_3d_f32),
          CASE(empty_grid_rows_are_zero))
