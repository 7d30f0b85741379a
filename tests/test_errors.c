#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#include "harness.h"
/* Error-path tests: bad input never crashes and never corrupts.  Every public call validates
   and returns a cq_result whose cq_sim_last_error message names the field, particle and step,
   and a failing call leaves the sim exactly as it was (particle count, step count and every
   field read back with cq_sim_get, bit for bit).  Compiles as C99 and as C++11. */
#include <stdlib.h>
#include <limits.h>

#define NFIELDS 8

/* In C an enum object may hold any int, so out-of-range cq_field / cq_material ... values are
   valid input that the library must reject.  In C++ a value outside the enum's range is
   undefined behaviour in the caller (UBSan -fsanitize=enum flags the load), so those inputs are
   only tested in C; in-range unknown values (e.g. material 3) are tested in both. */
#ifdef __cplusplus
#define CQT_ANY_ENUM_VALUE 0
#else
#define CQT_ANY_ENUM_VALUE 1
#endif

/* ------------------------------------------------------------------ helpers */
static double *dalloc(size_t n)
{
    return (double *)calloc(n ? n : 1, sizeof(double));
}

static int has(const char *msg, const char *key)
{
    return key == NULL || (msg != NULL && strstr(msg, key) != NULL);
}

/* Checks the code and that the message holds up to three key words. */
static void expect_(int line, const char *expr, cq_result got, cq_result want, const char *msg,
                    const char *k1, const char *k2, const char *k3)
{
    const char *keys[3];
    int i;
    keys[0] = k1; keys[1] = k2; keys[2] = k3;
    if (got != want) {
        ++cqt_failed_checks;
        printf("    %s:%d: %s returned %s (%d), expected %s (%d); message: \"%s\"\n", __FILE__, line, expr,
               cq_result_string(got), (int)got, cq_result_string(want), (int)want, msg ? msg : "(null)");
        return;
    }
    for (i = 0; i < 3; ++i)
        if (!has(msg, keys[i])) {
            ++cqt_failed_checks;
            printf("    %s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, line, expr, msg ? msg : "(null)", keys[i]);
        }
}
/* EXPECT(call, code, sim-whose-message (NULL = create), key1, key2, key3) */
#define EXPECT(call, want, sim, k1, k2, k3) do { cq_result e_r = (call); \
    expect_(__LINE__, #call, e_r, (want), cq_sim_last_error(sim), k1, k2, k3); } while (0)

/* Snapshot of everything cq_sim_get can see. */
typedef struct snap {
    int n, step, ok;
    int k[NFIELDS];
    double *f[NFIELDS];
} snap;

static snap snap_take(const cq_sim *s)
{
    snap o;
    int i;
    memset(&o, 0, sizeof o);
    o.n = cq_sim_particle_count(s);
    o.step = cq_sim_step_count(s);
    o.ok = 1;
    for (i = 0; i < NFIELDS; ++i) {
        o.k[i] = cq_sim_field_size(s, (cq_field)i);
        o.f[i] = dalloc((size_t)o.n * o.k[i]);
        if (cq_sim_get(s, (cq_field)i, o.f[i]) != CQ_SUCCESS) o.ok = 0;
    }
    return o;
}

static void snap_free(snap *o)
{
    int i;
    for (i = 0; i < NFIELDS; ++i) { free(o->f[i]); o->f[i] = NULL; }
}

static const char *snap_diff(const snap *a, const snap *b)
{
    static char buf[160];
    int i;
    if (!a->ok || !b->ok) return "cq_sim_get failed while taking a snapshot";
    if (a->n != b->n) { snprintf(buf, sizeof buf, "particle count %d vs %d", a->n, b->n); return buf; }
    if (a->step != b->step) { snprintf(buf, sizeof buf, "step count %d vs %d", a->step, b->step); return buf; }
    for (i = 0; i < NFIELDS; ++i) {
        if (a->k[i] != b->k[i]) { snprintf(buf, sizeof buf, "field %d size %d vs %d", i, a->k[i], b->k[i]); return buf; }
        if (a->n && memcmp(a->f[i], b->f[i], (size_t)a->n * a->k[i] * sizeof(double)) != 0) {
            snprintf(buf, sizeof buf, "field %d differs", i);
            return buf;
        }
    }
    return NULL;
}

/* CHECK_UNCHANGED(sim, before): the sim's visible state equals the snapshot `before`. */
#define CHECK_UNCHANGED(sim, before) do { snap cu_now = snap_take(sim); const char *cu_d = snap_diff(&(before), &cu_now); \
    CHECK(cu_d == NULL, "sim changed: %s", cu_d ? cu_d : ""); snap_free(&cu_now); } while (0)
#define CHECK_SAME_STATE(a, b) do { snap cs_a = snap_take(a), cs_b = snap_take(b); const char *cs_d = snap_diff(&cs_a, &cs_b); \
    CHECK(cs_d == NULL, "states differ: %s", cs_d ? cs_d : ""); snap_free(&cs_a); snap_free(&cs_b); } while (0)

static cq_sim_desc desc2d(void)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);
    d.dim = 2;
    d.res[0] = d.res[1] = 32;
    d.dx = 1.0 / 32;
    d.dt = 1e-4;
    d.gravity[1] = -9.8;
    return d;
}

static cq_particles_desc pdesc(int count, const double *x)
{
    cq_particles_desc p;
    memset(&p, 0, sizeof p);
    p.count = count;
    p.x = x;
    p.default_youngs = 1e3;
    p.default_poisson = 0.3;
    return p;
}

/* n particles on a lattice with spacing h, rows of `row`, starting at (x0, y0[, z0]). */
static void lattice(double *x, int n, int dim, int row, double x0, double y0, double h)
{
    int i;
    for (i = 0; i < n; ++i) {
        x[i * dim + 0] = x0 + h * (i % row);
        x[i * dim + 1] = y0 + h * ((i / row) % row);
        if (dim == 3) x[i * dim + 2] = 0.5 + h * (i / (row * row));
    }
}

static cq_sim *create_ok(const cq_sim_desc *d)
{
    cq_sim *s = NULL;
    cq_result r = cq_sim_create(d, &s);
    CHECK(r == CQ_SUCCESS && s != NULL, "cq_sim_create failed: %s: %s", cq_result_string(r), cq_sim_last_error(NULL));
    return s;
}

/* A 2D sim holding n particles (a block in the middle); NULL on failure. */
static cq_sim *sim_with_block(cq_sim_desc d, int n)
{
    cq_sim *s = create_ok(&d);
    double *x = dalloc((size_t)n * d.dim);
    cq_particles_desc p;
    if (!s) { free(x); return NULL; }
    lattice(x, n, d.dim, 4, 0.4, 0.4, d.dx / 2);
    p = pdesc(n, x);
    CHECK_OK(cq_sim_add_particles(s, &p));
    free(x);
    return s;
}

/* After a failed add: a valid add still works and appends. */
static void check_valid_add_works(cq_sim *s)
{
    int n0 = cq_sim_particle_count(s), dim = cq_sim_field_size(s, CQ_FIELD_X);
    double x[6] = {0.6, 0.6, 0.6, 0.62, 0.62, 0.6};
    double *all;
    cq_particles_desc p = pdesc(2, x);
    if (dim == 3) { x[2] = 0.6; x[3] = 0.62; x[4] = 0.6; x[5] = 0.6; }
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == n0 + 2, "count %d, expected %d", cq_sim_particle_count(s), n0 + 2);
    all = dalloc((size_t)(n0 + 2) * dim);
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, all));
    {
        int i, bad = 0;
        for (i = 0; i < 2 * dim; ++i) bad |= fabs(all[(size_t)n0 * dim + i] - x[i]) > 1e-6;
        CHECK(!bad, "appended positions read back wrong");
    }
    free(all);
}

/* Logger that counts messages per level and keeps the last of each. */
typedef struct logrec {
    int n[4];
    char last[4][512];
} logrec;

static void log_fn(cq_log_level level, const char *message, void *user)
{
    logrec *l = (logrec *)user;
    int i = (int)level >= 1 && (int)level <= 3 ? (int)level : 0;
    l->n[i]++;
    snprintf(l->last[i], sizeof l->last[i], "%s", message);
}

/* Allocator that counts, and fails once `limit` allocations have been made (limit < 0: never). */
typedef struct counter {
    long allocs, frees, live, limit, failed;
} counter;

static void *count_alloc(size_t size, void *user)
{
    counter *c = (counter *)user;
    void *p;
    if (c->limit >= 0 && c->allocs >= c->limit) { c->failed++; return NULL; }
    p = malloc(size);
    if (p) { c->allocs++; c->live++; }
    return p;
}

static void count_free(void *ptr, void *user)
{
    counter *c = (counter *)user;
    if (!ptr) return;
    c->frees++;
    c->live--;
    free(ptr);
}

/* Creation must fail with `want`, set *out to NULL, and name `k1` (and `k2`). */
static void create_fails_(int line, const cq_sim_desc *d, cq_result want, const char *k1, const char *k2)
{
    cq_sim *s = (cq_sim *)&s;   /* garbage that must be overwritten */
    cq_result r = cq_sim_create(d, &s);
    expect_(line, "cq_sim_create", r, want, cq_sim_last_error(NULL), k1, k2, NULL);
    if (s != NULL) {
        ++cqt_failed_checks;
        printf("    %s:%d: cq_sim_create failed but *out is not NULL\n", __FILE__, line);
        if (r == CQ_SUCCESS) cq_sim_destroy(s);
    }
}
#define CREATE_FAILS(d, want, k1, k2) create_fails_(__LINE__, &(d), want, k1, k2)

/* ------------------------------------------------------------------ cq_sim_create */
TEST(create_null_desc_or_out)
{
    cq_sim_desc d = desc2d();
    cq_sim *s = (cq_sim *)&d;
    EXPECT(cq_sim_create(NULL, &s), CQ_ERROR_INVALID_ARGUMENT, NULL, "desc", "NULL", NULL);
    CHECK(s == NULL, "out not cleared on NULL desc");
    EXPECT(cq_sim_create(&d, NULL), CQ_ERROR_INVALID_ARGUMENT, NULL, "out", "NULL", NULL);
    EXPECT(cq_sim_create(NULL, NULL), CQ_ERROR_INVALID_ARGUMENT, NULL, "NULL", NULL, NULL);
}

TEST(create_bad_dim)
{
    cq_sim_desc d = desc2d();
    int dims[4] = {0, 1, 4, -2};
    int i;
    for (i = 0; i < 4; ++i) {
        char key[32];
        d.dim = dims[i];
        snprintf(key, sizeof key, "dim = %d", dims[i]);
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "dim", key);
    }
}

TEST(create_res_too_small_names_axis)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    d.res[0] = 9;   /* < 2*3 + 4 */
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "res[0]", "9");
    d.res[0] = 32; d.res[1] = 5;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "res[1]", "5");
    d.res[1] = -32;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "res[1]", NULL);
    d.res[1] = 10;  /* the smallest allowed with 3 wall cells; res[2] is ignored in 2D */
    d.res[2] = -7;
    s = create_ok(&d);
    cq_sim_destroy(s);
    d.dim = 3; d.res[1] = 16; d.res[2] = 2;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "res[2]", "2");
    d.res[2] = 16; d.wall_cells = 5; /* needs >= 14 */
    d.res[1] = 13;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "res[1]", "13");
}

TEST(create_bad_dx)
{
    cq_sim_desc d = desc2d();
    double bad[5];
    int i;
    bad[0] = 0; bad[1] = -1.0 / 32; bad[2] = NAN; bad[3] = INFINITY; bad[4] = -INFINITY;
    for (i = 0; i < 5; ++i) {
        d.dx = bad[i];
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "dx", NULL);
    }
}

TEST(create_bad_dt)
{
    cq_sim_desc d = desc2d();
    double bad[4];
    int i;
    bad[0] = 0; bad[1] = -1e-4; bad[2] = NAN; bad[3] = INFINITY;
    for (i = 0; i < 4; ++i) {
        d.dt = bad[i];
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "dt", NULL);
    }
}

TEST(create_negative_substeps)
{
    cq_sim_desc d = desc2d();
    d.substeps = -1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "substeps", "-1");
    d.substeps = INT_MIN;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "substeps", NULL);
}

TEST(create_nonfinite_gravity)
{
    cq_sim_desc d = desc2d();
    d.gravity[1] = NAN;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "gravity[1]", NULL);
    d.gravity[1] = -9.8; d.gravity[0] = INFINITY;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "gravity[0]", NULL);
    d.gravity[0] = 0; d.dim = 3; d.res[2] = 32; d.gravity[2] = -INFINITY;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "gravity[2]", NULL);
}

TEST(create_unknown_enums)
{
    cq_sim_desc d = desc2d();
    d.material = (cq_material)CQ_MATERIAL_COUNT;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "material", NULL);
    if (CQT_ANY_ENUM_VALUE) {
        d.material = (cq_material)-1;
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "material", NULL);
    }
    d.material = CQ_MATERIAL_DEFAULT;
    d.precision = (cq_precision)3;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "precision", NULL);
    if (CQT_ANY_ENUM_VALUE) {
        d.precision = (cq_precision)-1;
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "precision", NULL);
    }
    d.precision = CQ_PRECISION_DEFAULT;
    d.boundary = (cq_boundary)5;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "boundary", NULL);
    if (CQT_ANY_ENUM_VALUE) {
        d.boundary = (cq_boundary)-1;
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "boundary", NULL);
    }
    d.boundary = CQ_BOUNDARY_DEFAULT;
    d.backend = (cq_backend)3;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "backend", NULL);
    if (CQT_ANY_ENUM_VALUE) {
        d.backend = (cq_backend)-1;
        CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "backend", NULL);
    }
}

TEST(create_bad_friction)
{
    cq_sim_desc d = desc2d();
    d.boundary = CQ_BOUNDARY_FRICTION;
    d.friction = -0.1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "friction", NULL);
    d.friction = NAN;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "friction", NULL);
    d.friction = 0.5;
    cq_sim_destroy(create_ok(&d));
}

TEST(create_negative_checkpoint_every)
{
    cq_sim_desc d = desc2d();
    d.checkpoint_every = -1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "checkpoint_every", "-1");
}

TEST(create_bad_incompressibility)
{
    cq_sim_desc d = desc2d();
    d.incompressibility = 1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "incompressibility", "1");
    d.incompressibility = -2;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "incompressibility", NULL);
    d.incompressibility = 2;
    cq_sim_destroy(create_ok(&d));
}

TEST(create_half_allocator)
{
    cq_sim_desc d = desc2d();
    counter c;
    memset(&c, 0, sizeof c);
    c.limit = -1;
    d.allocator.alloc = count_alloc; d.allocator.user = &c;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "allocator", NULL);
    d.allocator.alloc = NULL; d.allocator.free = count_free;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "allocator", NULL);
    CHECK(c.allocs == 0 && c.frees == 0, "a rejected allocator was used (%ld allocs, %ld frees)", c.allocs, c.frees);
}

/* Without a usable GPU (the usual test machine): CUDA fails with the reason and DEFAULT is the
   CPU.  With one (a GPU machine, or the mock driver of tests/gpu): CUDA is taken and logged. */
TEST(create_cuda_unavailable)
{
    cq_sim_desc d = desc2d();
    logrec l;
    cq_sim *s = NULL;
    cq_result r;
    memset(&l, 0, sizeof l);
    d.logger.func = log_fn; d.logger.user = &l;
    d.backend = CQ_BACKEND_CUDA;
    r = cq_sim_create(&d, &s);
    if (r == CQ_SUCCESS) {
        CHECK(cq_sim_backend(s) == CQ_BACKEND_CUDA, "backend %d", (int)cq_sim_backend(s));
        CHECK(has(l.last[CQ_LOG_INFO], "CUDA"), "info message \"%s\" lacks CUDA", l.last[CQ_LOG_INFO]);
        cq_sim_destroy(s);
    } else {
        CREATE_FAILS(d, CQ_ERROR_BACKEND_UNAVAILABLE, "CUDA", "backend");
        CHECK(l.n[CQ_LOG_ERROR] == 2, "error logged %d times for 2 failures", l.n[CQ_LOG_ERROR]);
        CHECK(strcmp(l.last[CQ_LOG_ERROR], cq_sim_last_error(NULL)) == 0, "logged \"%s\" != last error \"%s\"",
              l.last[CQ_LOG_ERROR], cq_sim_last_error(NULL));
    }
    d.device = -1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "device", NULL);
    d.device = 99;   /* no machine has that many GPUs */
    CREATE_FAILS(d, CQ_ERROR_BACKEND_UNAVAILABLE, "CUDA", NULL);
}

TEST(create_default_backend_is_cpu_and_logs)
{
    cq_sim_desc d = desc2d();
    logrec l;
    cq_sim *s;
    memset(&l, 0, sizeof l);
    d.logger.func = log_fn; d.logger.user = &l;
    s = create_ok(&d);
    CHECK(cq_sim_backend(s) == CQ_BACKEND_CPU || cq_sim_backend(s) == CQ_BACKEND_CUDA, "backend %d", (int)cq_sim_backend(s));
    CHECK(l.n[CQ_LOG_INFO] >= 1, "no info message about the backend choice");
    CHECK(has(l.last[CQ_LOG_INFO], cq_sim_backend(s) == CQ_BACKEND_CPU ? "backend: CPU" : "backend: CUDA"),
          "info message \"%s\" does not name the backend", l.last[CQ_LOG_INFO]);
    if (cq_sim_backend(s) == CQ_BACKEND_CPU) CHECK(has(l.last[CQ_LOG_INFO], "CUDA not used: "), "no reason: %s", l.last[CQ_LOG_INFO]);
    CHECK(l.n[CQ_LOG_ERROR] == 0, "error logged on success: %s", l.last[CQ_LOG_ERROR]);
    cq_sim_destroy(s);
    d.backend = CQ_BACKEND_CPU;
    s = create_ok(&d);
    CHECK(cq_sim_backend(s) == CQ_BACKEND_CPU, "backend %d", (int)cq_sim_backend(s));
    cq_sim_destroy(s);
}

TEST(create_error_message_per_failure)
{
    /* the create error is replaced by the next failure, and an error on one sim does not touch another */
    cq_sim_desc d = desc2d();
    cq_sim *s = sim_with_block(desc2d(), 4);
    cq_sim *t = NULL;
    d.dx = -1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "dx", NULL);
    d.dx = 1.0 / 32; d.dt = -1;
    CREATE_FAILS(d, CQ_ERROR_INVALID_ARGUMENT, "dt", NULL);
    CHECK(!has(cq_sim_last_error(NULL), "dx ="), "stale create message: %s", cq_sim_last_error(NULL));
    EXPECT(cq_sim_step(s, -3), CQ_ERROR_INVALID_ARGUMENT, s, "steps", "-3", NULL);
    CHECK(has(cq_sim_last_error(NULL), "dt"), "sim error overwrote the create error: %s", cq_sim_last_error(NULL));
    d.dt = 1e-4;
    CHECK_OK(cq_sim_create(&d, &t));
    CHECK(has(cq_sim_last_error(s), "-3"), "a new sim overwrote another sim's error: %s", cq_sim_last_error(s));
    cq_sim_destroy(t);
    cq_sim_destroy(s);
}

/* ------------------------------------------------------------------ cq_sim_add_particles */
TEST(add_null_desc_count_x)
{
    cq_sim *s = sim_with_block(desc2d(), 5);
    snap before = snap_take(s);
    double x[4] = {0.5, 0.5, 0.55, 0.5};
    cq_particles_desc p = pdesc(2, NULL);
    EXPECT(cq_sim_add_particles(s, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "desc", "NULL", NULL);
    CHECK_UNCHANGED(s, before);
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "x", "NULL", NULL);
    CHECK_UNCHANGED(s, before);
    p.x = x; p.count = -1;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "count", "-1", NULL);
    CHECK_UNCHANGED(s, before);
    p.count = 0;   /* zero particles: a no-op */
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK_UNCHANGED(s, before);
    check_valid_add_works(s);
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_nonfinite_state_names_particle_and_field)
{
    /* the sim already holds 5 particles, so local index 2 is particle 7 */
    cq_sim *s = sim_with_block(desc2d(), 5);
    snap before = snap_take(s);
    double x[8], v[8], F[16], C[16];
    cq_particles_desc p;
    int i;
    lattice(x, 4, 2, 2, 0.6, 0.6, 0.02);
    memset(v, 0, sizeof v); memset(C, 0, sizeof C);
    for (i = 0; i < 4; ++i) { F[i * 4] = F[i * 4 + 3] = 1; F[i * 4 + 1] = F[i * 4 + 2] = 0; }
    p = pdesc(4, x); p.v = v; p.F = F; p.C = C;

    x[2 * 2 + 1] = NAN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 7", "x of", NULL);
    CHECK_UNCHANGED(s, before);
    x[2 * 2 + 1] = 0.6;
    v[3 * 2] = INFINITY;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 8", "v of", NULL);
    CHECK_UNCHANGED(s, before);
    v[3 * 2] = 0;
    F[1 * 4 + 2] = NAN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 6", "F of", NULL);
    CHECK_UNCHANGED(s, before);
    F[1 * 4 + 2] = 0;
    C[0 * 4 + 3] = -INFINITY;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 5", "C of", NULL);
    CHECK_UNCHANGED(s, before);
    C[0 * 4 + 3] = 0;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 9, "count %d after a valid add", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_out_of_domain)
{
    cq_sim_desc d = desc2d();
    cq_sim *s = create_ok(&d);
    snap before = snap_take(s);
    double x[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    cq_particles_desc p = pdesc(3, x);
    x[1 * 2 + 0] = 0.49 * d.dx;                  /* just below 0.5 dx */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 1", "x", NULL);
    CHECK_UNCHANGED(s, before);
    x[1 * 2 + 0] = 0.5;
    x[2 * 2 + 1] = (d.res[1] - 1.5) * d.dx;      /* the upper bound is excluded */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 2", "x", NULL);
    CHECK_UNCHANGED(s, before);
    x[2 * 2 + 1] = -0.5;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 2", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    x[2 * 2 + 1] = 0.5;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 3, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_bad_per_particle_params)
{
    cq_sim *s = sim_with_block(desc2d(), 3);
    snap before = snap_take(s);
    double x[8], mass[4] = {1e-3, 1e-3, 1e-3, 1e-3}, vol[4] = {1e-3, 1e-3, 1e-3, 1e-3};
    double E[4] = {1e3, 1e3, 1e3, 1e3}, nu[4] = {0.2, 0.2, 0.2, 0.2};
    cq_particles_desc p;
    lattice(x, 4, 2, 2, 0.6, 0.6, 0.02);
    p = pdesc(4, x); p.mass = mass; p.volume = vol; p.youngs = E; p.poisson = nu;
    mass[2] = 0;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "mass", "particle 5", NULL);
    CHECK_UNCHANGED(s, before);
    mass[2] = 1e-3; vol[1] = -1e-3;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "volume", "particle 4", NULL);
    CHECK_UNCHANGED(s, before);
    vol[1] = 1e-3; E[3] = 0;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "youngs", "particle 6", NULL);
    CHECK_UNCHANGED(s, before);
    E[3] = -5;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "youngs", "particle 6", NULL);
    CHECK_UNCHANGED(s, before);
    E[3] = 1e3; nu[0] = -0.01;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "poisson", "particle 3", NULL);
    CHECK_UNCHANGED(s, before);
    nu[0] = 0.5;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "poisson", "particle 3", NULL);
    CHECK_UNCHANGED(s, before);
    nu[0] = 0.2; mass[1] = NAN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "mass", "particle 4", NULL);
    CHECK_UNCHANGED(s, before);
    mass[1] = 1e-3;
    check_valid_add_works(s);
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 3 + 2 + 4, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_bad_defaults)
{
    cq_sim *s = sim_with_block(desc2d(), 3);
    snap before = snap_take(s);
    double x[4] = {0.6, 0.6, 0.62, 0.6};
    cq_particles_desc p = pdesc(2, x);
    p.default_mass = -1;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_mass", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_mass = 0; p.default_volume = -1e-4;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_volume", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_volume = NAN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_volume", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_volume = 0; p.default_youngs = -1e3;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_youngs", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_youngs = 1e3; p.default_poisson = 0.5;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_poisson", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_poisson = -0.1;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "default_poisson", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    p.default_poisson = 0;   /* 0 is a valid Poisson ratio */
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 5, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_bad_actuator)
{
    cq_sim *s = sim_with_block(desc2d(), 3);
    snap before = snap_take(s);
    double x[8];
    int act[4] = {0, -1, -2, 1};
    cq_particles_desc p;
    lattice(x, 4, 2, 2, 0.6, 0.6, 0.02);
    p = pdesc(4, x); p.actuator = act;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "actuator", "particle 5", "-2");
    CHECK_UNCHANGED(s, before);
    act[2] = INT_MIN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "actuator", "particle 5", NULL);
    CHECK_UNCHANGED(s, before);
    act[2] = -1;
    CHECK_OK(cq_sim_add_particles(s, &p));
    /* the failed adds did not register their groups: group 1 is the largest in use */
    {
        double st[8] = {0};
        EXPECT(cq_sim_set_actuation(s, 1, st), CQ_ERROR_INVALID_ARGUMENT, s, "group", "1", NULL);
        CHECK_OK(cq_sim_set_actuation(s, 2, st));
    }
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_neohookean_det_f_nonpositive)
{
    cq_sim_desc d = desc2d();
    cq_sim *s, *fc;
    snap before;
    double x[6], F[12] = {1, 0, 0, 1,  1, 0, 0, 1,  1, 0, 0, 1};
    cq_particles_desc p;
    d.material = CQ_MATERIAL_NEOHOOKEAN;
    s = sim_with_block(d, 2);
    before = snap_take(s);
    lattice(x, 3, 2, 3, 0.6, 0.6, 0.02);
    p = pdesc(3, x); p.F = F;
    F[1 * 4 + 0] = -1;   /* particle 3: det F = -1 */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 3", "det F", NULL);
    CHECK_UNCHANGED(s, before);
    F[1 * 4 + 0] = 1;
    F[2 * 4 + 0] = 0;    /* particle 4: det F = 0 */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 4", "det F", NULL);
    CHECK_UNCHANGED(s, before);
    /* fixed corotated is finite for any F, so det F <= 0 is accepted there */
    d.material = CQ_MATERIAL_FIXED_COROTATED;
    fc = sim_with_block(d, 2);
    CHECK_OK(cq_sim_add_particles(fc, &p));
    F[2 * 4 + 0] = 1;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 5, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
    cq_sim_destroy(fc);
}

TEST(add_float_overflow_f32)
{
    cq_sim_desc d = desc2d();
    cq_sim *s, *s64;
    snap before;
    double x[6], v[6] = {0, 0, 0, 0, 0, 0}, E[3] = {1e3, 1e3, 1e3};
    cq_particles_desc p;
    d.precision = CQ_PRECISION_F32;
    s = sim_with_block(d, 2);
    before = snap_take(s);
    lattice(x, 3, 2, 3, 0.6, 0.6, 0.02);
    p = pdesc(3, x); p.v = v;
    v[1 * 2 + 1] = 1e300;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 3", "v of", "float");
    CHECK_UNCHANGED(s, before);
    v[1 * 2 + 1] = 0;
    p.youngs = E; E[2] = 1e39;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 4", "youngs", NULL);
    CHECK_UNCHANGED(s, before);
    E[2] = 1e-50;        /* underflows to 0 in float */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_ARGUMENT, s, "particle 4", "youngs", NULL);
    CHECK_UNCHANGED(s, before);
    /* the same values are fine in double */
    d.precision = CQ_PRECISION_F64;
    s64 = sim_with_block(d, 2);
    v[1 * 2 + 1] = 1e300; E[2] = 1e39;
    CHECK_OK(cq_sim_add_particles(s64, &p));
    E[2] = 1e3; v[1 * 2 + 1] = 0;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 5, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
    cq_sim_destroy(s64);
}

TEST(add_after_step_invalid_state)
{
    cq_sim *s = sim_with_block(desc2d(), 4);
    snap before;
    double x[2] = {0.6, 0.6};
    cq_particles_desc p = pdesc(1, x);
    CHECK_OK(cq_sim_step(s, 2));
    before = snap_take(s);
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_INVALID_STATE, s, "step 2", "reset", NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_reset(s));
    CHECK(cq_sim_step_count(s) == 0, "step count %d after reset", cq_sim_step_count(s));
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 5, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(add_and_set_errors_3d)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    snap before;
    double x[4 * 3], F[4 * 9], v[4 * 3];
    cq_particles_desc p;
    int i, j;
    d.dim = 3; d.res[2] = 24; d.gravity[2] = 1;
    d.material = CQ_MATERIAL_NEOHOOKEAN;
    s = create_ok(&d);
    if (!s) return;
    lattice(x, 4, 3, 2, 0.5, 0.5, 0.02);
    for (i = 0; i < 4; ++i) for (j = 0; j < 9; ++j) F[i * 9 + j] = j % 4 == 0 ? 1 : 0;
    p = pdesc(4, x); p.F = F;
    CHECK_OK(cq_sim_add_particles(s, &p));
    before = snap_take(s);
    x[2 * 3 + 2] = (d.res[2] - 1.5) * d.dx;      /* z is the axis with the smaller range */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 6", "x", NULL);
    CHECK_UNCHANGED(s, before);
    x[2 * 3 + 2] = 0.5;
    F[3 * 9 + 8] = NAN;
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 7", "component 8", "F of");
    CHECK_UNCHANGED(s, before);
    F[3 * 9 + 8] = -1;                           /* det F = -1 */
    EXPECT(cq_sim_add_particles(s, &p), CQ_ERROR_NON_FINITE, s, "particle 7", "det F = -1", NULL);
    CHECK_UNCHANGED(s, before);
    EXPECT(cq_sim_set(s, CQ_FIELD_F, F), CQ_ERROR_NON_FINITE, s, "particle 3", "det F = -1", NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_get(s, CQ_FIELD_V, v));
    v[1 * 3 + 2] = NAN;
    EXPECT(cq_sim_set(s, CQ_FIELD_V, v), CQ_ERROR_NON_FINITE, s, "particle 1", "component 2", NULL);
    CHECK_UNCHANGED(s, before);
    F[3 * 9 + 8] = 1;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(cq_sim_particle_count(s) == 8, "count %d", cq_sim_particle_count(s));
    snap_free(&before);
    cq_sim_destroy(s);
}

/* ------------------------------------------------------------------ cq_sim_get / cq_sim_set */
TEST(get_set_unknown_field)
{
    cq_sim *s = sim_with_block(desc2d(), 4);
    snap before = snap_take(s);
    double buf[64];
    int i;
    for (i = 0; i < 64; ++i) buf[i] = 0.5;
    if (CQT_ANY_ENUM_VALUE) {   /* (C only: see CQT_ANY_ENUM_VALUE) */
        int bad8 = 8, badm1 = -1, bad1000 = 1000;
        CHECK(cq_sim_field_size(s, (cq_field)bad8) == 0 && cq_sim_field_size(s, (cq_field)badm1) == 0, "unknown field has a size");
        EXPECT(cq_sim_get(s, (cq_field)bad8, buf), CQ_ERROR_INVALID_ARGUMENT, s, "field", "8", NULL);
        EXPECT(cq_sim_get(s, (cq_field)badm1, buf), CQ_ERROR_INVALID_ARGUMENT, s, "field", "-1", NULL);
        EXPECT(cq_sim_set(s, (cq_field)bad8, buf), CQ_ERROR_INVALID_ARGUMENT, s, "field", "8", NULL);
        CHECK_UNCHANGED(s, before);
        EXPECT(cq_sim_set(s, (cq_field)bad1000, buf), CQ_ERROR_INVALID_ARGUMENT, s, "field", "1000", NULL);
        CHECK_UNCHANGED(s, before);
        CHECK(buf[0] == 0.5 && buf[63] == 0.5, "a failed get wrote to out");
    }
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(get_set_null_pointer)
{
    cq_sim *s = sim_with_block(desc2d(), 4), *empty;
    snap before = snap_take(s);
    EXPECT(cq_sim_get(s, CQ_FIELD_X, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "out", "NULL", NULL);
    EXPECT(cq_sim_set(s, CQ_FIELD_V, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "v", "NULL", NULL);
    CHECK_UNCHANGED(s, before);
    EXPECT(cq_sim_set(s, CQ_FIELD_POISSON, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "poisson", "NULL", NULL);
    CHECK_UNCHANGED(s, before);
    /* with no particles there is nothing to read or write */
    {
        cq_sim_desc d = desc2d();
        empty = create_ok(&d);
        CHECK_OK(cq_sim_get(empty, CQ_FIELD_X, NULL));
        CHECK_OK(cq_sim_set(empty, CQ_FIELD_X, NULL));
        cq_sim_destroy(empty);
    }
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(set_nonfinite_and_bad_params)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    snap before;
    double *v, one[8];
    int i, prec;
    for (prec = 1; prec <= 2; ++prec) {
        d.precision = (cq_precision)prec;
        s = sim_with_block(d, 8);
        CHECK_OK(cq_sim_step(s, 1));   /* a state that is not the initial one */
        before = snap_take(s);
        v = dalloc(8 * 4);
        CHECK_OK(cq_sim_get(s, CQ_FIELD_V, v));
        v[2 * 2 + 1] = NAN;
        EXPECT(cq_sim_set(s, CQ_FIELD_V, v), CQ_ERROR_NON_FINITE, s, "particle 2", "v of", NULL);
        CHECK_UNCHANGED(s, before);
        CHECK_OK(cq_sim_get(s, CQ_FIELD_C, v));
        v[7 * 4 + 3] = INFINITY;
        EXPECT(cq_sim_set(s, CQ_FIELD_C, v), CQ_ERROR_NON_FINITE, s, "particle 7", "C of", NULL);
        CHECK_UNCHANGED(s, before);
        for (i = 0; i < 8; ++i) one[i] = 1e-4;
        one[6] = 0;
        EXPECT(cq_sim_set(s, CQ_FIELD_MASS, one), CQ_ERROR_INVALID_ARGUMENT, s, "mass", "particle 6", NULL);
        CHECK_UNCHANGED(s, before);
        one[6] = -1e-4;
        EXPECT(cq_sim_set(s, CQ_FIELD_VOLUME, one), CQ_ERROR_INVALID_ARGUMENT, s, "volume", "particle 6", NULL);
        CHECK_UNCHANGED(s, before);
        one[6] = NAN;
        EXPECT(cq_sim_set(s, CQ_FIELD_YOUNGS, one), CQ_ERROR_NON_FINITE, s, "youngs", "particle 6", NULL);
        CHECK_UNCHANGED(s, before);
        for (i = 0; i < 8; ++i) one[i] = 0.25;
        one[0] = 0.5;
        EXPECT(cq_sim_set(s, CQ_FIELD_POISSON, one), CQ_ERROR_INVALID_ARGUMENT, s, "poisson", "particle 0", NULL);
        CHECK_UNCHANGED(s, before);
        one[0] = 0.25; one[5] = -0.25;
        EXPECT(cq_sim_set(s, CQ_FIELD_POISSON, one), CQ_ERROR_INVALID_ARGUMENT, s, "poisson", "particle 5", NULL);
        CHECK_UNCHANGED(s, before);
        if (prec == 1) {
            CHECK_OK(cq_sim_get(s, CQ_FIELD_V, v));
            v[4 * 2] = -1e300;
            EXPECT(cq_sim_set(s, CQ_FIELD_V, v), CQ_ERROR_NON_FINITE, s, "particle 4", "float", NULL);
            CHECK_UNCHANGED(s, before);
        }
        /* a valid set goes through */
        one[5] = 0.1;
        CHECK_OK(cq_sim_set(s, CQ_FIELD_POISSON, one));
        CHECK_OK(cq_sim_get(s, CQ_FIELD_POISSON, v));
        CHECK(fabs(v[5] - 0.1) < 1e-7 && fabs(v[0] - 0.25) < 1e-7, "poisson read back %g %g", v[5], v[0]);
        free(v);
        snap_free(&before);
        cq_sim_destroy(s);
    }
}

TEST(set_x_out_of_domain)
{
    cq_sim_desc d = desc2d();
    cq_sim *s = sim_with_block(d, 6);
    snap before = snap_take(s);
    double x[12];
    CHECK_OK(cq_sim_get(s, CQ_FIELD_X, x));
    x[4 * 2 + 0] = (d.res[0] - 1.5) * d.dx + 1e-3;
    EXPECT(cq_sim_set(s, CQ_FIELD_X, x), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 4", "x", NULL);
    CHECK_UNCHANGED(s, before);
    x[4 * 2 + 0] = 0.5; x[1 * 2 + 1] = 0.25 * d.dx;
    EXPECT(cq_sim_set(s, CQ_FIELD_X, x), CQ_ERROR_OUT_OF_DOMAIN, s, "particle 1", "x", NULL);
    CHECK_UNCHANGED(s, before);
    x[1 * 2 + 1] = 0.5;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_X, x));
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(set_f_det_nonpositive_neohookean)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    snap before;
    double F[4 * 4], E[4];
    int i;
    d.material = CQ_MATERIAL_NEOHOOKEAN;
    d.precision = CQ_PRECISION_F64;
    s = sim_with_block(d, 4);
    before = snap_take(s);
    CHECK_OK(cq_sim_get(s, CQ_FIELD_F, F));
    F[2 * 4 + 0] = -F[2 * 4 + 0]; F[2 * 4 + 1] = -F[2 * 4 + 1];   /* particle 2: det F < 0 */
    EXPECT(cq_sim_set(s, CQ_FIELD_F, F), CQ_ERROR_NON_FINITE, s, "particle 2", "det F", NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_get(s, CQ_FIELD_F, F));
    F[3 * 4 + 0] = 0; F[3 * 4 + 1] = 0;                              /* particle 3: det F = 0 */
    EXPECT(cq_sim_set(s, CQ_FIELD_F, F), CQ_ERROR_NON_FINITE, s, "particle 3", "det F", NULL);
    CHECK_UNCHANGED(s, before);
    /* a stress that overflows through the parameters is caught as well */
    CHECK_OK(cq_sim_get(s, CQ_FIELD_F, F));
    F[1 * 4 + 0] = 10;
    CHECK_OK(cq_sim_set(s, CQ_FIELD_F, F));
    before.f[CQ_FIELD_F][1 * 4 + 0] = 10;
    for (i = 0; i < 4; ++i) E[i] = 1e3;
    E[1] = 1e308;
    EXPECT(cq_sim_set(s, CQ_FIELD_YOUNGS, E), CQ_ERROR_NON_FINITE, s, "particle 1", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(set_after_step_tape_rules)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    snap before;
    double v[8 * 2];
    int i;
    d.checkpoint_every = 1;
    s = sim_with_block(d, 8);
    CHECK_OK(cq_sim_step(s, 2));
    before = snap_take(s);
    for (i = 0; i < 16; ++i) v[i] = 0.125;
    EXPECT(cq_sim_set(s, CQ_FIELD_V, v), CQ_ERROR_INVALID_STATE, s, "step 2", "v", NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_reset(s));
    CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));     /* at step 0 it is allowed */
    snap_free(&before);
    cq_sim_destroy(s);

    d.checkpoint_every = 0;                      /* no tape: setting mid-run is allowed */
    d.precision = CQ_PRECISION_F64;
    s = sim_with_block(d, 8);
    CHECK_OK(cq_sim_step(s, 2));
    CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));
    {
        double back[16];
        CHECK_OK(cq_sim_get(s, CQ_FIELD_V, back));
        CHECK(memcmp(back, v, sizeof v) == 0, "v not set at step 2");
    }
    CHECK(cq_sim_step_count(s) == 2, "step count %d", cq_sim_step_count(s));
    cq_sim_destroy(s);
}

/* ------------------------------------------------------------------ cq_sim_set_actuation */
static cq_sim *sim_with_groups(cq_sim_desc d)
{
    cq_sim *s = create_ok(&d);
    double x[16];
    int act[8] = {0, 0, 1, 1, 2, 2, -1, -1};
    cq_particles_desc p;
    lattice(x, 8, 2, 4, 0.4, 0.4, d.dx / 2);
    p = pdesc(8, x); p.actuator = act;
    CHECK_OK(cq_sim_add_particles(s, &p));
    return s;
}

TEST(actuation_bad_groups)
{
    cq_sim *s = sim_with_groups(desc2d());
    snap before = snap_take(s);
    double st[4 * 4];
    memset(st, 0, sizeof st);
    EXPECT(cq_sim_set_actuation(s, -1, st), CQ_ERROR_INVALID_ARGUMENT, s, "groups", "-1", NULL);
    EXPECT(cq_sim_set_actuation(s, 2, st), CQ_ERROR_INVALID_ARGUMENT, s, "groups = 2", "group 2", NULL);
    EXPECT(cq_sim_set_actuation(s, 1, st), CQ_ERROR_INVALID_ARGUMENT, s, "groups = 1", "group 2", NULL);
    EXPECT(cq_sim_set_actuation(s, 3, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "stress", "NULL", NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_set_actuation(s, 3, st));
    CHECK_OK(cq_sim_set_actuation(s, 0, NULL));  /* 0 = actuation off */
    CHECK_UNCHANGED(s, before);
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(actuation_nonfinite_stress)
{
    cq_sim_desc d = desc2d();
    cq_sim *s = sim_with_groups(d);
    snap before;
    double st[3 * 4];
    memset(st, 0, sizeof st);
    CHECK_OK(cq_sim_step(s, 2));
    before = snap_take(s);
    st[1 * 4 + 2] = NAN;
    EXPECT(cq_sim_set_actuation(s, 3, st), CQ_ERROR_NON_FINITE, s, "group 1", "step 2", NULL);
    st[1 * 4 + 2] = 0; st[2 * 4 + 0] = -INFINITY;
    EXPECT(cq_sim_set_actuation(s, 3, st), CQ_ERROR_NON_FINITE, s, "group 2", NULL, NULL);
    st[2 * 4 + 0] = 1e300;   /* overflows float */
    EXPECT(cq_sim_set_actuation(s, 3, st), CQ_ERROR_NON_FINITE, s, "group 2", "float", NULL);
    CHECK_UNCHANGED(s, before);
    cq_sim_destroy(s);
    snap_free(&before);
}

TEST(actuation_failure_keeps_previous)
{
    /* a rejected actuation leaves the previous one in force: compare with a twin */
    cq_sim_desc d = desc2d();
    cq_sim *a = sim_with_groups(d), *b = sim_with_groups(d), *off = sim_with_groups(d);
    double st[3 * 4], bad[3 * 4];
    int i;
    for (i = 0; i < 12; ++i) st[i] = (i % 4 == 0 || i % 4 == 3) ? 200.0 * (1 + i / 4) : 0;
    memcpy(bad, st, sizeof st);
    bad[5] = NAN;
    CHECK_OK(cq_sim_set_actuation(a, 3, st));
    CHECK_OK(cq_sim_set_actuation(b, 3, st));
    EXPECT(cq_sim_set_actuation(a, 3, bad), CQ_ERROR_NON_FINITE, a, "group 1", NULL, NULL);
    EXPECT(cq_sim_set_actuation(a, 2, st), CQ_ERROR_INVALID_ARGUMENT, a, "group 2", NULL, NULL);
    EXPECT(cq_sim_set_actuation(a, 4, NULL), CQ_ERROR_INVALID_ARGUMENT, a, "NULL", NULL, NULL);
    CHECK_OK(cq_sim_step(a, 5));
    CHECK_OK(cq_sim_step(b, 5));
    CHECK_OK(cq_sim_step(off, 5));
    CHECK_SAME_STATE(a, b);
    {   /* and the actuation does something, so the comparison means something */
        snap sa = snap_take(a), so = snap_take(off);
        CHECK(snap_diff(&sa, &so) != NULL, "actuation had no effect");
        snap_free(&sa); snap_free(&so);
    }
    cq_sim_destroy(a); cq_sim_destroy(b); cq_sim_destroy(off);
}

/* ------------------------------------------------------------------ cq_sim_step */
TEST(step_negative)
{
    cq_sim *s = sim_with_block(desc2d(), 4);
    snap before;
    CHECK_OK(cq_sim_step(s, 1));
    before = snap_take(s);
    EXPECT(cq_sim_step(s, -1), CQ_ERROR_INVALID_ARGUMENT, s, "steps", "-1", NULL);
    EXPECT(cq_sim_step(s, INT_MIN), CQ_ERROR_INVALID_ARGUMENT, s, "steps", NULL, NULL);
    CHECK_UNCHANGED(s, before);
    CHECK_OK(cq_sim_step(s, 0));
    CHECK_UNCHANGED(s, before);
    snap_free(&before);
    cq_sim_destroy(s);
}

/* 16 particles in an elastic block plus particle 3 on its own; three good steps, then particle 3
   is given a velocity that carries it 0.2 (6.4 cells) per substep, so it leaves the grid within
   a few substeps.  The failed call must leave sim a at the last completed step, equal to twin b
   stepped only the good steps. */
static void leave_domain_case(int substeps)
{
    cq_sim_desc d = desc2d();
    cq_sim *a, *b;
    logrec l;
    double x[17 * 2], F[17 * 4], v[17 * 2], block[16 * 2];
    cq_particles_desc p;
    snap init;
    int i, k;
    char key[64];
    cq_result r;
    memset(&l, 0, sizeof l);
    d.substeps = substeps;
    d.logger.func = log_fn; d.logger.user = &l;
    lattice(block, 16, 2, 4, 0.25, 0.6, d.dx / 2);
    for (i = 0; i < 17; ++i) {
        const double *src = i < 3 ? block + i * 2 : block + (i - 1) * 2;
        if (i == 3) { x[6] = 0.45; x[7] = 0.3; }
        else { x[i * 2] = src[0]; x[i * 2 + 1] = src[1]; }
        F[i * 4 + 0] = i == 3 ? 1 : 1.05; F[i * 4 + 1] = F[i * 4 + 2] = 0; F[i * 4 + 3] = i == 3 ? 1 : 0.97;
    }
    p = pdesc(17, x); p.F = F;
    a = create_ok(&d); b = create_ok(&d);
    if (!a || !b) { cq_sim_destroy(a); cq_sim_destroy(b); return; }
    CHECK_OK(cq_sim_add_particles(a, &p));
    CHECK_OK(cq_sim_add_particles(b, &p));
    init = snap_take(a);
    CHECK_OK(cq_sim_step(a, 3));
    CHECK_OK(cq_sim_step(b, 3));
    CHECK_OK(cq_sim_get(a, CQ_FIELD_V, v));
    v[3 * 2 + 0] = 0.2 / d.dt;
    CHECK_OK(cq_sim_set(a, CQ_FIELD_V, v));
    CHECK_OK(cq_sim_set(b, CQ_FIELD_V, v));

    r = cq_sim_step(a, 10);
    k = cq_sim_step_count(a);
    CHECK(r == CQ_ERROR_OUT_OF_DOMAIN, "step returned %s: %s", cq_result_string(r), cq_sim_last_error(a));
    CHECK(k >= 3 && k < 13, "step count %d", k);
    if (substeps == 1) CHECK(k > 3, "expected some good steps inside the failing call, step count %d", k);
    else CHECK(!has(cq_sim_last_error(a), "substep 0)"), "expected a failure after substep 0: %s", cq_sim_last_error(a));
    snprintf(key, sizeof key, "step %d", k);
    CHECK(has(cq_sim_last_error(a), key), "message \"%s\" lacks \"%s\"", cq_sim_last_error(a), key);
    CHECK(has(cq_sim_last_error(a), "particle 3 "), "message \"%s\" lacks the particle", cq_sim_last_error(a));
    CHECK(l.n[CQ_LOG_ERROR] == 1 && strcmp(l.last[CQ_LOG_ERROR], cq_sim_last_error(a)) == 0,
          "logger got %d errors, last \"%s\"", l.n[CQ_LOG_ERROR], l.last[CQ_LOG_ERROR]);
    if (k >= 3 && k < 13) CHECK_OK(cq_sim_step(b, k - 3));
    CHECK_SAME_STATE(a, b);
    /* failing again is deterministic and still changes nothing */
    {
        snap before = snap_take(a);
        char first[512];
        snprintf(first, sizeof first, "%s", cq_sim_last_error(a));
        EXPECT(cq_sim_step(a, 1), CQ_ERROR_OUT_OF_DOMAIN, a, key, "particle 3 ", NULL);
        CHECK(strcmp(first, cq_sim_last_error(a)) == 0, "second failure differs: %s", cq_sim_last_error(a));
        CHECK_UNCHANGED(a, before);
        snap_free(&before);
    }
    /* reset returns to the state as added */
    CHECK_OK(cq_sim_reset(a));
    CHECK_UNCHANGED(a, init);
    snap_free(&init);
    cq_sim_destroy(a);
    cq_sim_destroy(b);
}

TEST(step_leaves_domain_substeps1) { leave_domain_case(1); }
TEST(step_leaves_domain_substeps4) { leave_domain_case(4); }

/* A stiff block (E = 1e30) with a large dt blows up; the step reports it and keeps the state. */
static void blowup_case(cq_precision prec, int substeps)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    logrec l;
    double x[16 * 2], F[16 * 4];
    cq_particles_desc p;
    snap before;
    cq_result r;
    int i, k;
    char key[64];
    memset(&l, 0, sizeof l);
    d.precision = prec; d.substeps = substeps; d.dt = 1e-3;
    d.logger.func = log_fn; d.logger.user = &l;
    s = create_ok(&d);
    if (!s) return;
    lattice(x, 16, 2, 4, 0.45, 0.45, d.dx / 2);
    for (i = 0; i < 16; ++i) { F[i * 4] = 1.0 + 0.01 * (i % 3); F[i * 4 + 1] = F[i * 4 + 2] = 0; F[i * 4 + 3] = 1; }
    p = pdesc(16, x); p.F = F; p.default_youngs = 1e30;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK(l.n[CQ_LOG_WARNING] >= 1 && has(l.last[CQ_LOG_WARNING], "dt"), "no stability warning (%d)", l.n[CQ_LOG_WARNING]);
    before = snap_take(s);
    r = cq_sim_step(s, 5);
    k = cq_sim_step_count(s);
    CHECK(r == CQ_ERROR_NON_FINITE || r == CQ_ERROR_OUT_OF_DOMAIN, "step returned %s", cq_result_string(r));
    CHECK(k == 0, "the first step cannot succeed, step count %d", k);
    snprintf(key, sizeof key, "step %d", k);
    CHECK(has(cq_sim_last_error(s), key) && has(cq_sim_last_error(s), "particle "),
          "message \"%s\" lacks the step or particle", cq_sim_last_error(s));
    CHECK_UNCHANGED(s, before);
    snap_free(&before);
    cq_sim_destroy(s);
}

TEST(step_blowup_huge_youngs)
{
    blowup_case(CQ_PRECISION_F32, 1);
    blowup_case(CQ_PRECISION_F32, 4);
    blowup_case(CQ_PRECISION_F64, 1);
    blowup_case(CQ_PRECISION_F64, 4);
}

/* NeoHookean block, two good steps, then an affine velocity field v = C (x - c) with
   C = diag(-3/dt, 0): one substep maps F to diag(-2, 1) F (still finite), and the next
   substep's stress (log det F) is NaN.  The step must report NON_FINITE, keep the state of
   the last completed step (twin b), and name the step. */
static void nonfinite_case(cq_precision prec, int substeps)
{
    cq_sim_desc d = desc2d();
    cq_sim *a, *b;
    double x[16 * 2], v[16 * 2], C[16 * 4];
    cq_particles_desc p;
    cq_result r;
    int i, k, expect_k;
    char key[64];
    d.precision = prec; d.substeps = substeps; d.material = CQ_MATERIAL_NEOHOOKEAN;
    a = create_ok(&d); b = create_ok(&d);
    if (!a || !b) { cq_sim_destroy(a); cq_sim_destroy(b); return; }
    lattice(x, 16, 2, 4, 0.45, 0.45, d.dx / 2);
    p = pdesc(16, x);
    CHECK_OK(cq_sim_add_particles(a, &p));
    CHECK_OK(cq_sim_add_particles(b, &p));
    CHECK_OK(cq_sim_step(a, 2));
    CHECK_OK(cq_sim_step(b, 2));
    CHECK_OK(cq_sim_get(a, CQ_FIELD_X, x));
    for (i = 0; i < 16; ++i) {
        C[i * 4 + 0] = -3 / d.dt; C[i * 4 + 1] = C[i * 4 + 2] = C[i * 4 + 3] = 0;
        v[i * 2 + 0] = C[i * 4] * (x[i * 2] - 0.47); v[i * 2 + 1] = 0;
    }
    CHECK_OK(cq_sim_set(a, CQ_FIELD_V, v)); CHECK_OK(cq_sim_set(a, CQ_FIELD_C, C));
    CHECK_OK(cq_sim_set(b, CQ_FIELD_V, v)); CHECK_OK(cq_sim_set(b, CQ_FIELD_C, C));
    r = cq_sim_step(a, 5);
    k = cq_sim_step_count(a);
    expect_k = substeps == 1 ? 3 : 2;   /* the substep after the one that inverts F fails */
    CHECK(r == CQ_ERROR_NON_FINITE, "step returned %s: %s", cq_result_string(r), cq_sim_last_error(a));
    CHECK(k == expect_k, "step count %d, expected %d", k, expect_k);
    snprintf(key, sizeof key, "step %d", k);
    CHECK(has(cq_sim_last_error(a), key) && has(cq_sim_last_error(a), "particle ") && has(cq_sim_last_error(a), "non-finite"),
          "message \"%s\" lacks the step, particle or cause", cq_sim_last_error(a));
    if (substeps > 1) CHECK(has(cq_sim_last_error(a), "substep 1"), "message \"%s\"", cq_sim_last_error(a));
    if (k >= 2) CHECK_OK(cq_sim_step(b, k - 2));
    CHECK_SAME_STATE(a, b);
    cq_sim_destroy(a);
    cq_sim_destroy(b);
}

TEST(step_nonfinite_keeps_last_step)
{
    nonfinite_case(CQ_PRECISION_F32, 1);
    nonfinite_case(CQ_PRECISION_F32, 4);
    nonfinite_case(CQ_PRECISION_F64, 1);
    nonfinite_case(CQ_PRECISION_F64, 4);
}

/* ------------------------------------------------------------------ reverse mode (not yet implemented) */
static void hook(cq_sim *sim, int step, void *user) { (void)sim; (void)step; (void)user; }

/* The reverse API on a taped sim: misuse fails with a message and leaves the forward state
   alone; a proper backward succeeds and also leaves the forward state alone. */
TEST(adjoint_calls_fail_cleanly)
{
    cq_sim_desc d = desc2d();
    cq_sim *s;
    snap before;
    double seed[8 * 4], out[8 * 4];
    d.checkpoint_every = 1;
    s = sim_with_block(d, 8);
    memset(seed, 0, sizeof seed);
    CHECK_OK(cq_sim_step(s, 2));
    before = snap_take(s);
    CHECK(cq_sim_grad(s, CQ_FIELD_X, out) == CQ_ERROR_INVALID_STATE, "grad before backward succeeded");
    CHECK(cq_sim_actuation_grad(s, out) == CQ_ERROR_INVALID_STATE, "actuation_grad outside a hook succeeded");
    CHECK(cq_sim_add_state_grad(s, CQ_FIELD_X, seed) == CQ_ERROR_INVALID_STATE, "add_state_grad outside a hook succeeded");
    seed[3] = NAN;
    CHECK(cq_sim_backward(s, seed, NULL, NULL, NULL, hook, NULL) == CQ_ERROR_NON_FINITE, "NaN seed accepted");
    CHECK(strstr(cq_sim_last_error(s), "particle 1") != NULL, "message names the particle: %s", cq_sim_last_error(s));
    seed[3] = 0;
    CHECK_OK(cq_sim_backward(s, seed, seed, seed, seed, hook, NULL));
    CHECK_OK(cq_sim_backward(s, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_OK(cq_sim_grad(s, CQ_FIELD_X, out));
    if (CQT_ANY_ENUM_VALUE) CHECK(cq_sim_grad(s, (cq_field)99, NULL) < 0, "grad of an unknown field succeeded");
    CHECK_UNCHANGED(s, before);
    snap_free(&before);
    cq_sim_destroy(s);
}

/* ------------------------------------------------------------------ allocators */
TEST(allocator_balanced)
{
    cq_sim_desc d = desc2d();
    counter c;
    cq_sim *s;
    double x[12 * 2], st[4] = {10, 0, 0, 10};
    int act[12];
    cq_particles_desc p;
    int i;
    memset(&c, 0, sizeof c);
    c.limit = -1;
    d.substeps = 3;
    d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
    s = create_ok(&d);
    if (!s) return;
    CHECK(c.allocs >= 1 && c.live >= 1, "the custom allocator was not used by create");
    lattice(x, 12, 2, 4, 0.4, 0.4, d.dx / 2);
    for (i = 0; i < 12; ++i) act[i] = i % 2 - 1;
    p = pdesc(12, x); p.actuator = act;
    CHECK_OK(cq_sim_add_particles(s, &p));
    CHECK_OK(cq_sim_set_actuation(s, 1, st));
    CHECK_OK(cq_sim_set_actuation(s, 1, st));
    CHECK_OK(cq_sim_step(s, 2));
    CHECK_OK(cq_sim_reset(s));
    x[0] = 0.7;
    CHECK_OK(cq_sim_add_particles(s, &p));   /* grows every array and drops the step snapshot */
    EXPECT(cq_sim_set(s, CQ_FIELD_X, NULL), CQ_ERROR_INVALID_ARGUMENT, s, "NULL", NULL, NULL);
    {
        double v[24 * 2];
        for (i = 0; i < 48; ++i) v[i] = 0.01 * (i % 5);
        CHECK_OK(cq_sim_set(s, CQ_FIELD_V, v));   /* allocates a temporary */
    }
    CHECK_OK(cq_sim_step(s, 2));
    CHECK(c.live > 0, "nothing live while the sim exists");
    cq_sim_destroy(s);
    CHECK(c.live == 0 && c.allocs == c.frees, "%ld allocations, %ld frees", c.allocs, c.frees);
}

/* One scenario under an allocator that fails after `limit` allocations; every call either
   succeeds or reports CQ_ERROR_OUT_OF_MEMORY and leaves the sim as it was.  Returns the
   number of allocations made. */
static long oom_scenario(long limit, int *completed)
{
    cq_sim_desc d = desc2d();
    counter c;
    cq_sim *s = NULL;
    double x[8 * 2], v[16 * 2], st[4] = {5, 0, 0, 5};
    int act[8] = {0, 0, 0, 0, -1, -1, -1, -1};
    cq_particles_desc p;
    cq_result r;
    int i, j, ok = 1;
    memset(&c, 0, sizeof c);
    c.limit = limit;
    d.substeps = 2;
    d.allocator.alloc = count_alloc; d.allocator.free = count_free; d.allocator.user = &c;
    r = cq_sim_create(&d, &s);
    if (r != CQ_SUCCESS) {
        CHECK(r == CQ_ERROR_OUT_OF_MEMORY, "limit %ld: create returned %s", limit, cq_result_string(r));
        CHECK(s == NULL, "limit %ld: failed create left a sim", limit);
        CHECK(has(cq_sim_last_error(NULL), "allocate"), "limit %ld: message \"%s\"", limit, cq_sim_last_error(NULL));
        CHECK(c.live == 0, "limit %ld: create leaked %ld blocks", limit, c.live);
        *completed = 0;
        return c.allocs;
    }
    lattice(x, 8, 2, 4, 0.4, 0.4, d.dx / 2);
    p = pdesc(8, x); p.actuator = act;
    for (i = 0; i < 6; ++i) {
        snap before = snap_take(s);
        const char *what = "";
        switch (i) {
        case 0: what = "add"; r = cq_sim_add_particles(s, &p); break;
        case 1: what = "add 2"; x[0] = 0.6; r = cq_sim_add_particles(s, &p); break;
        case 2: what = "set"; memset(v, 0, sizeof v); v[1] = 0.5;
                r = cq_sim_set(s, CQ_FIELD_V, v); break;
        case 3: what = "set_actuation"; r = cq_sim_set_actuation(s, 1, st); break;
        case 4: what = "step"; r = cq_sim_step(s, 2); break;
        default: what = "set mass"; for (j = 0; j < 16; ++j) v[j] = 2e-4;
                 r = cq_sim_set(s, CQ_FIELD_MASS, v); break;
        }
        if (r != CQ_SUCCESS) {
            ok = 0;
            CHECK(r == CQ_ERROR_OUT_OF_MEMORY, "limit %ld: %s returned %s", limit, what, cq_result_string(r));
            CHECK(has(cq_sim_last_error(s), "allocate"), "limit %ld: %s: message \"%s\"", limit, what, cq_sim_last_error(s));
            CHECK_UNCHANGED(s, before);
        }
        snap_free(&before);
    }
    cq_sim_destroy(s);
    CHECK(c.live == 0 && c.allocs == c.frees, "limit %ld: %ld allocations, %ld frees", limit, c.allocs, c.frees);
    *completed = ok;
    return c.allocs;
}

TEST(allocator_failure_sweep)
{
    int completed = 0;
    long total = oom_scenario(-1, &completed), k;
    CHECK(completed && total > 5, "unlimited run: completed %d after %ld allocations", completed, total);
    for (k = 0; k <= (total > 40 ? total : 40); ++k) {
        long n = oom_scenario(k, &completed);
        CHECK(n <= k, "limit %ld: %ld allocations", k, n);
        CHECK(completed == (k >= total), "limit %ld of %ld: completed %d", k, total, completed);
    }
}

/* ------------------------------------------------------------------ NULL sim */
TEST(null_sim_calls)
{
    double buf[16] = {0};
    cq_particles_desc p = pdesc(1, buf);
    cq_sim_destroy(NULL);
    CHECK(cq_sim_last_error(NULL) != NULL, "last_error(NULL) is NULL");
    CHECK(cq_sim_backend(NULL) == CQ_BACKEND_DEFAULT, "backend of NULL");
    CHECK(cq_sim_particle_count(NULL) == 0, "particle_count of NULL");
    CHECK(cq_sim_step_count(NULL) == 0, "step_count of NULL");
    CHECK(cq_sim_field_size(NULL, CQ_FIELD_X) == 0, "field_size of NULL");
    CHECK(cq_sim_add_particles(NULL, &p) == CQ_ERROR_INVALID_ARGUMENT, "add_particles");
    CHECK(cq_sim_add_particles(NULL, NULL) == CQ_ERROR_INVALID_ARGUMENT, "add_particles");
    CHECK(cq_sim_get(NULL, CQ_FIELD_X, buf) == CQ_ERROR_INVALID_ARGUMENT, "get");
    CHECK(cq_sim_set(NULL, CQ_FIELD_X, buf) == CQ_ERROR_INVALID_ARGUMENT, "set");
    CHECK(cq_sim_set_actuation(NULL, 1, buf) == CQ_ERROR_INVALID_ARGUMENT, "set_actuation");
    CHECK(cq_sim_step(NULL, 1) == CQ_ERROR_INVALID_ARGUMENT, "step");
    CHECK(cq_sim_reset(NULL) == CQ_ERROR_INVALID_ARGUMENT, "reset");
    CHECK(cq_sim_backward(NULL, NULL, NULL, NULL, NULL, NULL, NULL) == CQ_ERROR_INVALID_ARGUMENT, "backward");
    CHECK(cq_sim_actuation_grad(NULL, buf) == CQ_ERROR_INVALID_ARGUMENT, "actuation_grad");
    CHECK(cq_sim_add_state_grad(NULL, CQ_FIELD_X, buf) == CQ_ERROR_INVALID_ARGUMENT, "add_state_grad");
    CHECK(cq_sim_grad(NULL, CQ_FIELD_X, buf) == CQ_ERROR_INVALID_ARGUMENT, "grad");
    CHECK(cq_result_string((cq_result)-99) != NULL && strcmp(cq_result_string((cq_result)-99), "success") != 0,
          "result string of an unknown code");
}

/* Regressions for bugs found by review: step-count overflow, float range of the sim
   settings, actuator groups beyond the actuation already set. */
TEST(step_count_cannot_overflow)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4;
    CHECK_OK(cq_sim_create(&d, &s));
    CHECK_OK(cq_sim_step(s, INT_MAX));
    CHECK(cq_sim_step(s, 1) == CQ_ERROR_INVALID_ARGUMENT, "a step past INT_MAX is refused");
    CHECK(strstr(cq_sim_last_error(s), "INT_MAX") != NULL, "message: %s", cq_sim_last_error(s));
    CHECK(cq_sim_step_count(s) == INT_MAX, "step count unchanged: %d", cq_sim_step_count(s));
    cq_sim_destroy(s);
}

TEST(f32_settings_must_survive_conversion_to_float)
{
    const char *names[3] = {"dt", "dx", "gravity[1]"};
    for (int i = 0; i < 3; ++i) {
        cq_sim_desc d;
        cq_sim *s = NULL;
        memset(&d, 0, sizeof d);
        d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4; d.precision = CQ_PRECISION_F32;
        if (i == 0) d.dt = 1e-50;
        if (i == 1) d.dx = 1e-40;
        if (i == 2) d.gravity[1] = -1e39;
        CHECK(cq_sim_create(&d, &s) == CQ_ERROR_INVALID_ARGUMENT && s == NULL, "%s out of float range accepted", names[i]);
        CHECK(strstr(cq_sim_last_error(NULL), names[i]) != NULL, "message names %s: %s", names[i], cq_sim_last_error(NULL));
        d.precision = CQ_PRECISION_F64;   /* the same values are fine in double */
        CHECK(cq_sim_create(&d, &s) == CQ_SUCCESS, "f64 accepts %s", names[i]);
        cq_sim_destroy(s);
    }
}

TEST(actuator_group_beyond_the_set_actuation_is_refused)
{
    cq_sim_desc d;
    cq_sim *s = NULL;
    cq_particles_desc p;
    double st[4] = {0}, x[2] = {0.5, 0.5};
    int a[1] = {3};
    memset(&d, 0, sizeof d);
    d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 1e-4;
    CHECK_OK(cq_sim_create(&d, &s));
    CHECK_OK(cq_sim_set_actuation(s, 1, st));
    memset(&p, 0, sizeof p);
    p.count = 1; p.x = x; p.actuator = a;
    CHECK(cq_sim_add_particles(s, &p) == CQ_ERROR_INVALID_ARGUMENT, "group 3 with 1 actuation group accepted");
    CHECK(strstr(cq_sim_last_error(s), "particle 0") && strstr(cq_sim_last_error(s), "actuator"), "message: %s", cq_sim_last_error(s));
    CHECK(cq_sim_particle_count(s) == 0, "sim unchanged");
    CHECK_OK(cq_sim_set_actuation(s, 0, NULL));
    CHECK_OK(cq_sim_add_particles(s, &p));
    cq_sim_destroy(s);
}

#if !defined(CQT_LINKED) && defined(CQ__HAS_CUDA)
/* The embedded PTX (base64 rows of LZ4 blocks, checked by length and FNV-1a): every module decodes
   to PTX text; a damaged copy (a character outside base64, a changed character, a short or long
   length) and every failing allocation give NULL, and nothing leaks.  (Here where the test
   includes the implementation: its fast-math and C++ builds.) */
static int g_ptx_live, g_ptx_fail_at = -1, g_ptx_calls;
static void *ptx_alloc(size_t n, void *u)
{
    (void)u;
    if (g_ptx_calls++ == g_ptx_fail_at) return NULL;
    ++g_ptx_live;
    return malloc(n);
}
static void ptx_free(void *p, void *u) { (void)u; if (p) --g_ptx_live; free(p); }
static int ptx_refused(const cq_allocator *al, const cq__ptx_module *m)
{
    char *p = cq__lz_decode(al, m);
    if (p) al->free(p, al->user);
    return p == NULL;
}

TEST(embedded_ptx_decodes_and_damage_is_refused)
{
    cq_allocator al;
    int found = 0;
    al.alloc = ptx_alloc; al.free = ptx_free; al.user = NULL;
    for (int dim = 2; dim <= 3; ++dim)
        for (int prec = 0; prec <= 3; ++prec) {
            const cq__ptx_module *m = cq__cuda_ptx(dim, prec);
            const size_t rows = ((m ? m->lz_size : 0) * 4 + 2) / 3 / CQ__PTX_ROW + 1;
            char (*copy)[CQ__PTX_ROW + 1];
            cq__ptx_module bad;
            char *ptx, keep;
            if (!m) continue;
            ++found;
            ptx = cq__lz_decode(&al, m);
            CHECK(ptx && strlen(ptx) == m->size && strstr(ptx, ".version") && strstr(ptx, ".target"), "module %dD/%d does not decode", dim, prec);
            if (ptx) al.free(ptx, al.user);
            copy = (char (*)[CQ__PTX_ROW + 1])malloc(rows * sizeof *copy);
            if (!copy) continue;
            memcpy(copy, m->lz, rows * sizeof *copy);
            bad = *m;
            bad.lz = (const char (*)[CQ__PTX_ROW + 1])copy;
            CHECK(!ptx_refused(&al, &bad), "the copy of module %dD/%d does not decode", dim, prec);
            keep = copy[rows / 2][7];
            copy[rows / 2][7] = '?';
            CHECK(ptx_refused(&al, &bad), "module %dD/%d: a character outside base64 accepted", dim, prec);
            copy[rows / 2][7] = keep == 'A' ? 'B' : 'A';
            CHECK(ptx_refused(&al, &bad), "module %dD/%d: a changed character accepted", dim, prec);
            copy[rows / 2][7] = keep;
            bad.lz_size = m->lz_size - 1;
            CHECK(ptx_refused(&al, &bad), "module %dD/%d: a short length accepted", dim, prec);
            bad.lz_size = m->lz_size; bad.size = m->size + 1;
            CHECK(ptx_refused(&al, &bad), "module %dD/%d: a long PTX length accepted", dim, prec);
            bad.size = m->size;
            for (g_ptx_fail_at = 0; g_ptx_fail_at < 2; ++g_ptx_fail_at) {
                g_ptx_calls = 0;
                CHECK(ptx_refused(&al, &bad), "module %dD/%d: allocation %d failing, a result", dim, prec, g_ptx_fail_at);
            }
            g_ptx_fail_at = -1;
            free(copy);
        }
    CHECK(found == 4, "%d embedded modules, not 4", found);
    CHECK(g_ptx_live == 0, "%d buffers of the decoder leaked", g_ptx_live);
}
#define CQT_PTX_CASES CASE(embedded_ptx_decodes_and_damage_is_refused),
#else
#define CQT_PTX_CASES
#endif

RUN_TESTS(CQT_PTX_CASES CASE(step_count_cannot_overflow), CASE(f32_settings_must_survive_conversion_to_float),
          CASE(actuator_group_beyond_the_set_actuation_is_refused),
    CASE(create_null_desc_or_out),
    CASE(create_bad_dim),
    CASE(create_res_too_small_names_axis),
    CASE(create_bad_dx),
    CASE(create_bad_dt),
    CASE(create_negative_substeps),
    CASE(create_nonfinite_gravity),
    CASE(create_unknown_enums),
    CASE(create_bad_friction),
    CASE(create_negative_checkpoint_every),
    CASE(create_bad_incompressibility),
    CASE(create_half_allocator),
    CASE(create_cuda_unavailable),
    CASE(create_default_backend_is_cpu_and_logs),
    CASE(create_error_message_per_failure),
    CASE(add_null_desc_count_x),
    CASE(add_nonfinite_state_names_particle_and_field),
    CASE(add_out_of_domain),
    CASE(add_bad_per_particle_params),
    CASE(add_bad_defaults),
    CASE(add_bad_actuator),
    CASE(add_neohookean_det_f_nonpositive),
    CASE(add_float_overflow_f32),
    CASE(add_after_step_invalid_state),
    CASE(add_and_set_errors_3d),
    CASE(get_set_unknown_field),
    CASE(get_set_null_pointer),
    CASE(set_nonfinite_and_bad_params),
    CASE(set_x_out_of_domain),
    CASE(set_f_det_nonpositive_neohookean),
    CASE(set_after_step_tape_rules),
    CASE(actuation_bad_groups),
    CASE(actuation_nonfinite_stress),
    CASE(actuation_failure_keeps_previous),
    CASE(step_negative),
    CASE(step_leaves_domain_substeps1),
    CASE(step_leaves_domain_substeps4),
    CASE(step_blowup_huge_youngs),
    CASE(step_nonfinite_keeps_last_step),
    CASE(adjoint_calls_fail_cleanly),
    CASE(allocator_balanced),
    CASE(allocator_failure_sweep),
    CASE(null_sim_calls)
)
