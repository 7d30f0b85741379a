/* Minimal test harness shared by the C tests.  Each TEST is a function; CHECK records a
   failure with file:line and a message and lets the test continue.  main() comes from
   RUN_TESTS(...).  Output: "ok <name>" or "FAIL <name>: ..." per test, then the closing
   line "N passed, N failed" that tests/run.sh adds up. */
#ifndef CQ_TEST_HARNESS_H
#define CQ_TEST_HARNESS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static int cqt_failed_checks;
static const char *cqt_filter;

/* A counting allocator for cq_sim_desc.allocator and cq_world_desc.allocator (user: a
   cqt_counter): counts the allocations made and the blocks live, and fails every allocation once
   `limit` allocations were made (limit < 0: never). */
typedef struct cqt_counter { long allocs, live, limit; } cqt_counter;
static inline void *cqt_count_alloc(size_t size, void *user)
{
    cqt_counter *c = (cqt_counter *)user;
    void *p;
    if (c->limit >= 0 && c->allocs >= c->limit) return NULL;
    p = malloc(size);
    if (p) { c->allocs++; c->live++; }
    return p;
}
static inline void cqt_count_free(void *ptr, void *user)
{
    cqt_counter *c = (cqt_counter *)user;
    if (!ptr) return;
    c->live--;
    free(ptr);
}

#define CHECK(cond, ...) do { if (!(cond)) { ++cqt_failed_checks; \
    printf("    %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); printf("\n"); } } while (0)
#define CHECK_OK(call) do { cq_result cqt_r = (call); CHECK(cqt_r == CQ_SUCCESS, "%s returned %s", #call, \
    cq_result_string(cqt_r)); } while (0)

typedef struct cqt_case { const char *name; void (*fn)(void); } cqt_case;
#define TEST(name) static void name(void)
#define CASE(name) { #name, name }

static int cqt_run(const cqt_case *cases, int n, int argc, char **argv)
{
    int passed = 0, failed = 0;
    cqt_filter = argc > 1 ? argv[1] : NULL;
    for (int i = 0; i < n; ++i) {
        if (cqt_filter && !strstr(cases[i].name, cqt_filter)) continue;
        int before = cqt_failed_checks;
        cases[i].fn();
        if (cqt_failed_checks == before) { ++passed; printf("ok %s\n", cases[i].name); }
        else { ++failed; printf("FAIL %s\n", cases[i].name); }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
#define RUN_TESTS(...) int main(int argc, char **argv) { static const cqt_case cqt_cases[] = { __VA_ARGS__ }; \
    return cqt_run(cqt_cases, (int)(sizeof cqt_cases / sizeof cqt_cases[0]), argc, argv); }
#endif
