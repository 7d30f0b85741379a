#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
/* A fuzzer over sequences of public calls (the reverse API's state machine).  Each run makes
   random sims and drives them with random calls: add_particles, set, set_actuation, add_cable,
   set_cable_actuation, step (failing steps included), backward (refused seeds, hooks that call
   everything, an allocator that starts failing part-way), grad, get, reset, tape_bytes.  Some
   sims hold several scenes (particles added to random scenes, sometimes a scene out of range),
   and some run their parallel loops on a host's threads hook that splits them into ranges of
   random lengths and runs them out of order (cq_sim_desc.threads).
   After every call it checks the documented invariants against a shadow model:
     - every result is a known cq_result; a failure has a message;
     - particle and step counts follow the model; a refused call changes nothing (cq_sim_get of
       every field is bitwise as before);
     - cq_sim_grad works exactly when the model says gradients exist, and what it returns is
       finite; a backward refused before it began keeps the previous gradients bitwise;
     - the hook-only calls work only inside a hook; calls that change the sim are refused there;
     - no call leaks (a counting allocator balances at destroy).
   Built with -fsanitize=address,undefined it is the memory-safety check of those sequences.

   Usage: fuzz_api [runs [calls-per-run [first-seed]]]     (default 60 runs x 300 calls, seed 1)
   Prints the executions (calls made) and "N passed, N failed" (a run is a test). */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* finite by the bits (the library's internals are not visible when the implementation is linked) */
static int fz_isfinite(double a)
{
    unsigned long long u;
    memcpy(&u, &a, sizeof u);
    return ((u >> 52) & 0x7ffu) != 0x7ffu;
}

static unsigned long long rng_state;
static unsigned rnd(void)
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (unsigned)(rng_state >> 16);
}
static int rint_(int n) { return n > 0 ? (int)(rnd() % (unsigned)n) : 0; }
static double runi(double a, double b) { return a + (b - a) * (rnd() % 1000001) / 1000000.0; }
static int chance(int percent) { return rint_(100) < percent; }

/* ---- counting allocator that fails on demand */
typedef struct alloc_ctl { long live, allocs, fail_after; } alloc_ctl;   /* fail_after < 0: never */
static void *fz_alloc(size_t size, void *user)
{
    alloc_ctl *c = (alloc_ctl *)user;
    void *p;
    if (c->fail_after == 0) return NULL;
    if (c->fail_after > 0) c->fail_after--;
    p = malloc(size);
    if (p) { c->live++; c->allocs++; }
    return p;
}
static void fz_free(void *p, void *user)
{
    alloc_ctl *c = (alloc_ctl *)user;
    if (!p) return;
    c->live--;
    free(p);
}

/* ---- the run's state and its shadow model */
typedef struct model {
    cq_sim *s;
    int dim, taped, f32, n, step, groups, cables, scenes;
    int grad;           /* 1: gradients available, 0: not, -1: unknown (after a failed backward) */
    double *gx;         /* dL/dx kept from the last successful backward (n * dim) */
    alloc_ctl ac;
    long failures, calls;
    const char *where;
} model;

static model M;
static long executions;
static long stat_bwd[8], stat_step_fail, stat_hooks, stat_grad_ok, stat_cuda, stat_batched, stat_split;   /* what the runs reached */
static int run_failed;

#define MAXP 160
static double buf[MAXP * 9 * 2], buf2[MAXP * 9 * 2];

static void fail(const char *fmt, const char *a, long b)
{
    if (run_failed++ < 5) {
        printf("    invariant broken after %s: ", M.where);
        printf(fmt, a, b);
        printf(" (last error: %s)\n", M.s ? cq_sim_last_error(M.s) : cq_sim_last_error(NULL));
    }
}
#define INV(cond, fmt, a, b) do { if (!(cond)) fail(fmt, a, (long)(b)); } while (0)

static int known(cq_result r) { return r <= 0 && r >= CQ_ERROR_DEVICE; }

static void check_result(cq_result r, const char *what)
{
    M.where = what;
    ++executions;
    INV(known(r), "%s: unknown result %ld", what, r);
    if (r != CQ_SUCCESS) {
        const char *msg = cq_sim_last_error(M.s);
        INV(msg && msg[0], "%s: a failure without a message (%ld)", what, r);
    }
}

/* every field, read back (must always work outside a failed device) */
typedef struct snap { double *f[8]; int n, step; } snap;
static snap take(void)
{
    snap o;
    o.n = cq_sim_particle_count(M.s); o.step = cq_sim_step_count(M.s);
    for (int f = 0; f < 8; ++f) {
        size_t cnt = (size_t)o.n * (size_t)cq_sim_field_size(M.s, (cq_field)f);
        o.f[f] = (double *)malloc((cnt ? cnt : 1) * sizeof(double));
        if (cq_sim_get(M.s, (cq_field)f, o.f[f]) != CQ_SUCCESS) fail("%s: cq_sim_get failed (%ld)", "snapshot", f);
    }
    return o;
}
static void same(const snap *a, const char *what)
{
    snap b = take();
    INV(a->n == b.n && a->step == b.step, "%s changed the counts (n %ld)", what, b.n);
    for (int f = 0; f < 8 && a->n == b.n; ++f) {
        size_t cnt = (size_t)a->n * (size_t)cq_sim_field_size(M.s, (cq_field)f);
        INV(memcmp(a->f[f], b.f[f], cnt * sizeof(double)) == 0, "%s changed field %ld", what, f);
    }
    for (int f = 0; f < 8; ++f) free(b.f[f]);
}
static void drop(snap *a) { for (int f = 0; f < 8; ++f) free(a->f[f]); }

static void counts(void)
{
    INV(cq_sim_particle_count(M.s) == M.n, "%s: particle count %ld differs from the model", M.where, cq_sim_particle_count(M.s));
    INV(cq_sim_step_count(M.s) == M.step, "%s: step count %ld differs from the model", M.where, cq_sim_step_count(M.s));
    INV(cq_sim_cable_count(M.s) == M.cables, "%s: cable count %ld differs", M.where, cq_sim_cable_count(M.s));
}

static void grads_match_model(void)
{
    double *g = buf2;
    cq_result r = cq_sim_grad(M.s, CQ_FIELD_X, g);
    ++executions;
    if (M.grad == 1) {
        INV(r == CQ_SUCCESS, "%s: gradients should be available (%ld)", M.where, r);
        stat_grad_ok++;
        if (r == CQ_SUCCESS) {
            for (long i = 0; i < (long)M.n * M.dim; ++i) INV(fz_isfinite(g[i]), "%s: non-finite gradient at %ld", M.where, i);
            if (M.gx) INV(memcmp(g, M.gx, sizeof(double) * (size_t)M.n * (size_t)M.dim) == 0, "%s: the gradients changed", M.where, 0);
        }
    } else if (M.grad == 0) INV(r == CQ_ERROR_INVALID_STATE, "%s: gradients available when they should not be (%ld)", M.where, r);
}

/* ---- hooks */
static int hook_mode;        /* what the hooks do this backward */
static long hook_fail_at;    /* hook call after which allocations fail (-1: never) */
static int hook_calls;
static void hook(cq_sim *s, int step, void *user)
{
    double g[MAXP * 9], out[64 * 9 + 16];
    (void)user;
    hook_calls++;
    stat_hooks++;
    M.where = "a hook";
    INV(step >= 0 && step < M.step, "hook: step %ld out of range", "hook", step);
    if (hook_fail_at >= 0 && hook_calls == hook_fail_at) M.ac.fail_after = rint_(3);
    if (hook_mode & 1) {   /* the hook-only calls work here */
        INV(cq_sim_actuation_grad(s, out) == CQ_SUCCESS || M.groups > 64, "%s: actuation_grad failed in a hook", "hook", 0);
        INV(cq_sim_cable_actuation_grad(s, out) == CQ_SUCCESS, "%s: cable_actuation_grad failed in a hook", "hook", 0);
        INV(cq_sim_get(s, CQ_FIELD_X, g) == CQ_SUCCESS, "%s: get failed in a hook", "hook", 0);
    }
    if (hook_mode & 2) {   /* add a gradient, sometimes a bad one */
        int f = rint_(8);
        for (long i = 0; i < (long)M.n * 9; ++i) g[i] = runi(-1, 1);
        if (M.n && chance(20)) g[rint_(M.n)] = chance(50) ? NAN : 3e38;
        (void)cq_sim_add_state_grad(s, (cq_field)f, g);
    }
    if (hook_mode & 4) {   /* everything that changes the sim is refused */
        cq_particles_desc p;
        memset(&p, 0, sizeof p);
        p.count = 1; p.x = g;
        INV(cq_sim_step(s, 1) == CQ_ERROR_INVALID_STATE, "%s: step in a hook", "hook", 0);
        INV(cq_sim_reset(s) == CQ_ERROR_INVALID_STATE, "%s: reset in a hook", "hook", 0);
        INV(cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_STATE, "%s: add_particles in a hook", "hook", 0);
        INV(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_INVALID_STATE, "%s: backward in a hook", "hook", 0);
        INV(cq_sim_set_actuation(s, 0, NULL) == CQ_ERROR_INVALID_STATE, "%s: set_actuation in a hook", "hook", 0);
        INV(cq_sim_grad(s, CQ_FIELD_X, g) == CQ_ERROR_INVALID_STATE, "%s: grad in a hook", "hook", 0);
    }
}

/* ---- the host's threads: [0, items) in ranges of min_range + a random extra (the last shorter),
   run inline in a random order with random worker indices */
static void *split_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    enum { MAXR = 4096 };
    static int begins[MAXR + 1], order[MAXR];   /* (the loops do not nest) */
    int m = 0, b = 0;
    (void)user;
    if (min_range < 1) min_range = 1;
    while (b < items) {
        int len = min_range + (chance(50) ? rint_(min_range + 17) : 0);
        if (m == MAXR - 1 || len > items - b) len = items - b;
        begins[m++] = b;
        b += len;
    }
    begins[m] = items;
    for (int k = 0; k < m; ++k) order[k] = k;
    for (int k = m - 1; k > 0; --k) { int j = rint_(k + 1), t = order[k]; order[k] = order[j]; order[j] = t; }
    for (int k = 0; k < m; ++k) task(begins[order[k]], begins[order[k] + 1], rint_(3), ctx);
    stat_split++;
    return NULL;
}
static void split_finish(void *handle, void *user) { (void)handle; (void)user; }

/* ---- one random call */
static void random_positions(double *x, int count)
{
    double lo = 4.0 / 24, hi = 1 - 4.0 / 24;   /* res 24: inside the walls */
    double cx = runi(lo + 0.1, hi - 0.1), cy = runi(lo + 0.1, hi - 0.1), cz = runi(lo + 0.1, hi - 0.1);
    for (int i = 0; i < count; ++i) {
        x[i * M.dim] = cx + runi(-0.08, 0.08);
        x[i * M.dim + 1] = cy + runi(-0.08, 0.08);
        if (M.dim == 3) x[i * 3 + 2] = cz + runi(-0.08, 0.08);
    }
}

static void do_add_particles(void)
{
    int count = rint_(24), act[64], scene[64];
    double *x = buf, *v = buf + MAXP * 3;
    cq_particles_desc p;
    snap before;
    cq_result r;
    if (M.n + count > MAXP) count = 0;
    memset(&p, 0, sizeof p);
    random_positions(x, count);
    for (int i = 0; i < count * M.dim; ++i) v[i] = runi(-0.5, 0.5);
    p.count = count; p.x = x; p.v = chance(50) ? v : NULL;
    for (int i = 0; i < count; ++i) act[i] = rint_(3) - 1;
    p.actuator = chance(50) ? act : NULL;
    for (int i = 0; i < count; ++i) scene[i] = rint_(M.scenes);
    p.scene = M.scenes > 1 || chance(10) ? scene : NULL;
    if (chance(10) && count) x[rint_(count * M.dim)] = chance(50) ? NAN : 5.0;   /* bad input */
    if (chance(5) && count) scene[rint_(count)] = chance(50) ? -1 : M.scenes;   /* a scene out of range */
    if (chance(5)) p.count = -1;
    before = take();
    r = cq_sim_add_particles(M.s, &p);
    check_result(r, "add_particles");
    if (r == CQ_SUCCESS) {
        INV(M.step == 0, "%s: particles added at step %ld", "add_particles", M.step);
        if (p.count > 0) { M.n += p.count; M.grad = 0; free(M.gx); M.gx = NULL; }
        if (p.actuator && p.count > 0) for (int i = 0; i < p.count; ++i) if (act[i] >= M.groups && M.groups > 0) fail("%s: group %ld accepted", "add_particles", act[i]);
    } else same(&before, "a failed add_particles");
    drop(&before);
}

static void do_set(void)
{
    int f = rint_(8), k = cq_sim_field_size(M.s, (cq_field)f);
    double *in = buf;
    snap before;
    cq_result r;
    if (cq_sim_get(M.s, (cq_field)f, in) != CQ_SUCCESS) return;
    for (long i = 0; i < (long)M.n * k; ++i) in[i] *= runi(0.99, 1.01);
    if (chance(15) && M.n) in[rint_(M.n * k)] = NAN;
    before = take();
    r = cq_sim_set(M.s, (cq_field)f, in);
    check_result(r, "set");
    if (r == CQ_SUCCESS) { if (M.n) { M.grad = 0; free(M.gx); M.gx = NULL; } }
    else same(&before, "a failed set");
    drop(&before);
}

static void do_set_actuation(void)
{
    int groups = rint_(4);
    double st[4 * 9];
    cq_result r;
    for (int i = 0; i < 4 * 9; ++i) st[i] = runi(-20, 20);
    if (chance(10)) st[rint_(groups * M.dim * M.dim + 1)] = INFINITY;
    r = cq_sim_set_actuation(M.s, groups, groups ? st : NULL);
    check_result(r, "set_actuation");
    if (r == CQ_SUCCESS) M.groups = groups;
}

static void do_add_cable(void)
{
    int route[6], count = 2 + rint_(4);
    cq_result r;
    for (int i = 0; i < count; ++i) route[i] = M.n ? rint_(M.n + (chance(10) ? 3 : 0)) : i;
    r = cq_sim_add_cable(M.s, count, route, runi(1, 50), runi(0, 0.05));
    check_result(r, "add_cable");
    if (r == CQ_SUCCESS) { M.cables++; M.grad = 0; free(M.gx); M.gx = NULL; INV(M.step == 0, "%s: cable added at step %ld", "add_cable", M.step); }
}

static void do_set_cable_actuation(void)
{
    double u[64];
    int c = M.cables + (chance(10) ? 1 : 0);
    cq_result r;
    for (int i = 0; i < 64; ++i) u[i] = runi(0.8, 1.1);
    r = cq_sim_set_cable_actuation(M.s, c, u);
    check_result(r, "set_cable_actuation");
    INV(r == CQ_SUCCESS || c != M.cables || M.cables > 64, "%s: refused (%ld)", "set_cable_actuation", r);
}

static void do_step(void)
{
    int steps = rint_(6);
    snap before;
    cq_result r;
    if (chance(8) && M.n) {   /* a kick that makes a later step fail */
        double *v = buf;
        if (cq_sim_get(M.s, CQ_FIELD_V, v) == CQ_SUCCESS) {
            v[rint_(M.n * M.dim)] = chance(50) ? 1e6 : -1e6;
            if (cq_sim_set(M.s, CQ_FIELD_V, v) == CQ_SUCCESS) { M.grad = 0; free(M.gx); M.gx = NULL; }
        }
    }
    before = take();
    if (chance(20)) M.ac.fail_after = rint_(4);
    r = cq_sim_step(M.s, steps);
    M.ac.fail_after = -1;
    check_result(r, "step");
    {
        int now = cq_sim_step_count(M.s);
        if (r == CQ_SUCCESS) INV(now == M.step + steps, "%s: step count %ld", "step", now);
        else {
            stat_step_fail++;
            INV(now >= M.step && now < M.step + (steps ? steps : 1), "%s: step count %ld after a failure", "step", now);
            if (now == M.step) same(&before, "a failed step without progress");
        }
        if (now != M.step) { M.grad = 0; free(M.gx); M.gx = NULL; }
        M.step = now;
    }
    drop(&before);
}

static void do_backward(void)
{
    double *seed = buf, *seedv = buf + MAXP * 3;
    snap before;
    cq_result r;
    int refusal = 0;
    for (long i = 0; i < (long)M.n * M.dim; ++i) { seed[i] = runi(-1, 1); seedv[i] = runi(-1, 1); }
    if (chance(15) && M.n) { seed[rint_(M.n * M.dim)] = chance(50) || !M.f32 ? NAN : 1e300; refusal = 1; }   /* 1e300: not a float */
    hook_mode = rint_(8); hook_calls = 0;
    hook_fail_at = chance(15) ? 1 + rint_(M.step + 1) : -1;
    if (chance(10)) M.ac.fail_after = rint_(6);
    before = take();
    r = cq_sim_backward(M.s, seed, chance(50) ? seedv : NULL, NULL, NULL, chance(70) ? hook : NULL, NULL);
    M.ac.fail_after = -1;
    check_result(r, "backward");
    if (known(r)) stat_bwd[-r]++;
    same(&before, "backward");   /* a backward never changes the state, failed or not */
    drop(&before);
    if (!M.taped) INV(r == CQ_ERROR_INVALID_STATE, "%s: untaped backward returned %ld", "backward", r);
    if (refusal && M.taped) INV(r == CQ_ERROR_NON_FINITE, "%s: bad seed gave %ld", "backward", r);
    if (r == CQ_SUCCESS) {
        M.grad = 1;
        free(M.gx);
        M.gx = (double *)malloc(sizeof(double) * (size_t)(M.n * M.dim + 1));
        if (cq_sim_grad(M.s, CQ_FIELD_X, M.gx) != CQ_SUCCESS) fail("%s: grad after success failed", "backward", 0);
    } else if (r == CQ_ERROR_NON_FINITE && refusal) {
        /* refused before it began: the previous gradients stay as they were */
    } else if (M.taped && r != CQ_ERROR_INVALID_STATE) {
        M.grad = -1; free(M.gx); M.gx = NULL;   /* kept or cleared: the next backward decides */
    }
    M.where = "backward";
    grads_match_model();
    /* outside a hook the hook-only calls are refused */
    INV(cq_sim_actuation_grad(M.s, buf) == CQ_ERROR_INVALID_STATE, "%s: actuation_grad outside a hook", "backward", 0);
    INV(cq_sim_add_state_grad(M.s, CQ_FIELD_X, buf) == CQ_ERROR_INVALID_STATE, "%s: add_state_grad outside a hook", "backward", 0);
}

static void do_reset(void)
{
    cq_result r = cq_sim_reset(M.s);
    check_result(r, "reset");
    INV(r == CQ_SUCCESS, "%s: reset failed (%ld)", "reset", r);
    M.step = 0; M.grad = 0; free(M.gx); M.gx = NULL;
}

static void do_get_and_bytes(void)
{
    int f = rint_(8);
    cq_result r = cq_sim_get(M.s, (cq_field)f, buf);
    check_result(r, "get");
    INV(r == CQ_SUCCESS, "%s: get failed (%ld)", "get", r);
    for (long i = 0; i < (long)M.n * cq_sim_field_size(M.s, (cq_field)f); ++i)
        INV(fz_isfinite(buf[i]), "%s: non-finite state at %ld", "get", i);
    (void)cq_sim_tape_bytes(M.s);
    M.where = "grad";
    grads_match_model();
}

static void one_run(unsigned long long seed, int calls)
{
    cq_sim_desc d;
    memset(&M, 0, sizeof M);
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    memset(&d, 0, sizeof d);
    M.dim = d.dim = chance(75) ? 2 : 3;
    d.res[0] = d.res[1] = d.res[2] = 24;
    d.dx = 1.0 / 24;
    d.dt = chance(85) ? 2e-4 : 8e-4;   /* sometimes over the stability limit */
    d.substeps = 1 + rint_(3);
    d.gravity[1] = -9.8;
    d.checkpoint_every = chance(80) ? 1 + rint_(4) : 0;
    d.precision = chance(50) ? CQ_PRECISION_F32 : CQ_PRECISION_F64;
    d.material = (cq_material)(1 + rint_(CQ_MATERIAL_COUNT - 1));
    d.boundary = (cq_boundary)(1 + rint_(4));
    d.incompressibility = chance(20) ? 4 : 0;
    d.backward_cache_mb = chance(25) ? -1 : 0;   /* the backward's grid cache: off, or the default */
    M.ac.fail_after = -1;
    d.allocator.alloc = fz_alloc; d.allocator.free = fz_free; d.allocator.user = &M.ac;
    d.logger.func = cq_log_silent;   /* every refused call would print otherwise */
    M.scenes = chance(35) ? 2 + rint_(4) : 1;
    d.scenes = M.scenes == 1 && chance(50) ? 0 : M.scenes;
    stat_batched += M.scenes > 1;
    if (chance(30)) { d.threads.workers = 3; d.threads.enqueue = split_enqueue; d.threads.finish = split_finish; }
    M.taped = d.checkpoint_every > 0;
    M.f32 = d.precision == CQ_PRECISION_F32;
    M.where = "create";
    if (cq_sim_create(&d, &M.s) != CQ_SUCCESS) { fail("%s: create failed", "create", 0); return; }
    ++executions;
    stat_cuda += cq_sim_backend(M.s) == CQ_BACKEND_CUDA;
    for (int c = 0; c < calls && run_failed == 0; ++c) {
        int op = rint_(100);
        if (op < 14) do_add_particles();
        else if (op < 22) do_set();
        else if (op < 28) do_set_actuation();
        else if (op < 32) do_add_cable();
        else if (op < 36) do_set_cable_actuation();
        else if (op < 60) do_step();
        else if (op < 78) do_backward();
        else if (op < 86) do_reset();
        else do_get_and_bytes();
        counts();
    }
    cq_sim_destroy(M.s);
    ++executions;
    INV(M.ac.live == 0, "%s: %ld allocations leaked", "destroy", M.ac.live);
    free(M.gx);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 60, calls = argc > 2 ? atoi(argv[2]) : 300;
    unsigned long long first = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    int passed = 0, failed = 0;
    for (int r = 0; r < runs; ++r) {
        run_failed = 0;
        one_run(first + (unsigned long long)r, calls);
        if (run_failed) { ++failed; printf("FAIL run seed %llu\n", first + (unsigned long long)r); }
        else ++passed;
        fflush(stdout);
    }
    printf("fuzz_api: %ld executions (public calls) in %d runs from seed %llu (%ld runs on CUDA, %ld with several scenes; "
           "%ld loops split by the host's hook)\n", executions, runs, first, stat_cuda, stat_batched, stat_split);
    printf("fuzz_api: backward: %ld ok, %ld non-finite, %ld out of memory, %ld invalid state; %ld hook calls; "
           "%ld failed steps; %ld gradient reads checked\n", stat_bwd[0], stat_bwd[3], stat_bwd[2], stat_bwd[6],
           stat_hooks, stat_step_fail, stat_grad_ok);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
