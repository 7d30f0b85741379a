/* amdahl.c - how far the CPU backend can scale, measured on one core: the serial part of a step
   and the parallel loops' split, for a machine with more cores than this one.

   Issue 12 asks for 16 threads >= 10x one thread on the 512k cube.  A 2-core machine cannot
   time 16 threads, but it can measure what decides it.  This program hands a sim the host's
   threads hook (cq_sim_desc.threads, DESIGN.md section 8) with W workers and runs every
   enqueued loop on the calling thread, range by range as OpenMP's dynamic schedule would cut it
   (chunks of min_range items), timing each range.  From one run it reports, per phase (an
   untaped forward step, a taped forward step of a second episode, a backward step after the
   first backward):
     - wall: the phase's time on one thread, per substep;
     - serial: the time outside every parallel loop (Amdahl's serial part), and its fraction;
     - loops: parallel loops per substep (each is a fork and join on a real machine);
     - W-thread estimate: serial + per loop the makespan of its ranges handed in order to the
       first free of W workers (a dynamic schedule), + sync_us per loop for the fork and join;
       and the speedup that gives.  Memory bandwidth and cache sharing are not modelled (the
       estimate is an upper bound on the speedup); neither is a range's own variation from core
       to core;
     - the loops that scale worst: fewer ranges than workers, or one range much longer than
       the rest (items, min_range, ranges, their time, the W-thread makespan).
   Results are bitwise those without the hook (DESIGN.md section 8), so nothing changes but the
   schedule.

   Build and run from the repository root (no OpenMP needed: the hook runs everything):
       cc -std=c99 -O3 -march=native bench/amdahl.c -o build/amdahl -lm && ./build/amdahl
   Arguments: workers=16 sync_us=2 scene=512k|64k|8k|2d f64 neo steps=N (taped steps, default 10)
   forward (only the untaped forward) */
#define _POSIX_C_SOURCE 199309L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define MAX_KINDS 64
#define MAX_RANGES 65536
typedef struct kind {          /* the loops of one shape (items, min_range): e.g. "every particle, 512 a range" */
    int items, min_range, count;
    double time, span;         /* one thread; the estimated makespan on W workers (both summed over its loops) */
} kind;

typedef struct probe {
    int workers;
    double sync_s;
    double task_time, span_time;   /* summed over the loops of the phase */
    double probe_time;             /* this probe's own time outside the ranges (its clock reads, the schedule): not the sim's */
    int loops, ranges_total;
    kind kinds[MAX_KINDS];
    int n_kinds;
    double range_t[MAX_RANGES];
    double free_at[256];           /* the schedule's workers */
} probe;

static void *probe_enqueue(cq_task_fn task, int items, int min_range, void *ctx, void *user)
{
    probe *p = (probe *)user;
    const int range = min_range > 0 ? min_range : 1, nr = (items + range - 1) / range;
    double sum = 0, span = 0;
    const double enter = now_s();
    kind *k = NULL;
    for (int r = 0; r < nr; ++r) {
        const int b = r * range, e = b + range < items ? b + range : items;
        const double t0 = now_s();
        task(b, e, 0, ctx);   /* worker 0: results do not depend on the worker index */
        {
            const double dt = now_s() - t0;
            if (r < MAX_RANGES) p->range_t[r] = dt;
            sum += dt;
        }
    }
    /* the dynamic schedule on W workers: ranges in order, each to the worker free first */
    for (int w = 0; w < p->workers; ++w) p->free_at[w] = 0;
    for (int r = 0; r < nr && r < MAX_RANGES; ++r) {
        int best = 0;
        for (int w = 1; w < p->workers; ++w) if (p->free_at[w] < p->free_at[best]) best = w;
        p->free_at[best] += p->range_t[r];
    }
    for (int w = 0; w < p->workers; ++w) if (p->free_at[w] > span) span = p->free_at[w];
    if (nr > MAX_RANGES) span = sum / p->workers;   /* more ranges than kept: evenly shared */
    p->task_time += sum;
    p->span_time += span + p->sync_s;
    p->loops++;
    p->ranges_total += nr;
    for (int i = 0; i < p->n_kinds; ++i)
        if (p->kinds[i].items == items && p->kinds[i].min_range == min_range) { k = &p->kinds[i]; break; }
    if (!k && p->n_kinds < MAX_KINDS) {
        k = &p->kinds[p->n_kinds++];
        memset(k, 0, sizeof *k);
        k->items = items; k->min_range = min_range;
    }
    if (k) { k->count++; k->time += sum; k->span += span + p->sync_s; }
    p->probe_time += now_s() - enter - sum;
    return NULL;   /* run already: finish is skipped */
}

static void probe_finish(void *handle, void *user) { (void)handle; (void)user; }

static void probe_reset(probe *p)
{
    p->task_time = p->span_time = p->probe_time = 0;
    p->loops = p->ranges_total = 0;
    p->n_kinds = 0;
}

/* prints one phase: `wall` seconds for `subs` substeps */
static void report(const char *phase, const probe *p, double wall_in, int subs)
{
    const double wall = wall_in - p->probe_time, serial = wall - p->task_time, est = serial + p->span_time;
    const int W = p->workers;
    int order[MAX_KINDS];
    printf("%-22s wall %9.3f ms/substep | serial %8.4f ms (%5.2f%%) | loops %5.1f/substep | %d-thread estimate %8.3f ms: %5.2fx\n",
           phase, 1e3 * wall / subs, 1e3 * serial / subs, 100 * serial / wall, (double)p->loops / subs, W, 1e3 * est / subs, wall / est);
    /* the loops losing most to the schedule (their makespan over a perfect split of their time) */
    for (int i = 0; i < p->n_kinds; ++i) order[i] = i;
    for (int i = 0; i < p->n_kinds; ++i)
        for (int j = i + 1; j < p->n_kinds; ++j) {
            const kind *a = &p->kinds[order[i]], *b = &p->kinds[order[j]];
            if (b->span - b->time / W > a->span - a->time / W) { const int t = order[i]; order[i] = order[j]; order[j] = t; }
        }
    for (int i = 0; i < p->n_kinds && i < 4; ++i) {
        const kind *k = &p->kinds[order[i]];
        const int nr = (k->items + k->min_range - 1) / k->min_range;
        printf("    loop items %8d, range %5d (%5d ranges) x %4.1f/substep: %8.4f ms on one thread, %8.4f on %d (ideal %8.4f)\n",
               k->items, k->min_range, nr, (double)k->count / subs, 1e3 * k->time / subs, 1e3 * k->span / subs, W,
               1e3 * k->time / subs / W);
    }
}

static double loss_seed_sum(const double *g, int n) { double s = 0; for (int i = 0; i < n; ++i) s += g[i]; return s; }

int main(int argc, char **argv)
{
    static probe P;
    int workers = 16, side = 80, res = 128, dim = 3, steps = 10, forward_only = 0;
    double sync_us = 2;
    cq_precision prec = CQ_PRECISION_F32;
    cq_material mat = CQ_MATERIAL_FIXED_COROTATED;
    const char *scene = "512k";
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "workers=", 8) == 0) workers = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "sync_us=", 8) == 0) sync_us = atof(argv[i] + 8);
        else if (strncmp(argv[i], "steps=", 6) == 0) steps = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "scene=", 6) == 0) scene = argv[i] + 6;
        else if (strcmp(argv[i], "f64") == 0) prec = CQ_PRECISION_F64;
        else if (strcmp(argv[i], "neo") == 0) mat = CQ_MATERIAL_NEOHOOKEAN;
        else if (strcmp(argv[i], "forward") == 0) forward_only = 1;
        else { fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
    }
    if (workers < 1 || workers > 256 || steps < 1) { fprintf(stderr, "workers in 1..256, steps >= 1\n"); return 2; }
    if (strcmp(scene, "512k") == 0) { side = 80; res = 128; }
    else if (strcmp(scene, "64k") == 0) { side = 40; res = 64; }
    else if (strcmp(scene, "8k") == 0) { side = 20; res = 64; }
    else if (strcmp(scene, "2d") == 0) { side = 80; res = 128; dim = 2; }
    else { fprintf(stderr, "scene=512k|64k|8k|2d\n"); return 2; }
    P.workers = workers; P.sync_s = 1e-6 * sync_us;

    {
        const int n = dim == 2 ? side * side : side * side * side;
        const double dx = 1.0 / res, h = 0.5 * dx;
        double *x = (double *)calloc((size_t)n * 3, sizeof(double)), *g = (double *)calloc((size_t)n * 3, sizeof(double));
        double *gx = (double *)calloc((size_t)n * 3, sizeof(double));
        cq_sim *sims[2] = {NULL, NULL};
        cq_sim_desc d;
        cq_particles_desc pd;
        int p = 0;
        if (!x || !g || !gx) { fprintf(stderr, "out of memory\n"); return 1; }
        for (int i = 0; i < side; ++i)   /* bench.c's cube: 2 particles per cell per axis, 8 cells above the floor */
            for (int j = 0; j < side; ++j)
                for (int k = 0; k < (dim == 3 ? side : 1); ++k, ++p) {
                    x[p * dim + 0] = 0.5 - side * h / 2 + (i + 0.5) * h;
                    x[p * dim + 1] = 8 * h + (j + 0.5) * h;
                    if (dim == 3) x[p * dim + 2] = 0.5 - side * h / 2 + (k + 0.5) * h;
                }
        for (int i = 0; i < n * dim; ++i) g[i] = 1.0 / n;
        memset(&d, 0, sizeof d);
        d.dim = dim; d.res[0] = d.res[1] = d.res[2] = res; d.dx = dx; d.dt = 0.5 * dx * 0.01; d.substeps = 1;
        d.gravity[1] = -9.8; d.material = mat; d.precision = prec; d.boundary = CQ_BOUNDARY_STICKY;
        d.backend = CQ_BACKEND_CPU;
        d.threads.workers = workers; d.threads.enqueue = probe_enqueue; d.threads.finish = probe_finish; d.threads.user = &P;
        memset(&pd, 0, sizeof pd);
        pd.count = n; pd.x = x; pd.default_youngs = 1e4; pd.default_poisson = 0.3;
        for (int s = 0; s < 2; ++s) {
            d.checkpoint_every = s == 0 ? 0 : 10;
            if (cq_sim_create(&d, &sims[s]) != CQ_SUCCESS || cq_sim_add_particles(sims[s], &pd) != CQ_SUCCESS) {
                fprintf(stderr, "create: %s\n", cq_sim_last_error(sims[s]));
                return 1;
            }
        }
        printf("amdahl: %s %s %s, %d particles, %d^%d grid; %d workers modelled, %.1f us per loop's fork and join; "
               "ranges run one after another on this thread\n",
               scene, mat == CQ_MATERIAL_NEOHOOKEAN ? "NeoHookean" : "corotated", prec == CQ_PRECISION_F64 ? "f64" : "f32",
               n, res, dim, workers, sync_us);
        {
            double t0;
            cq_sim_step(sims[0], 2);
            probe_reset(&P);
            t0 = now_s();
            if (cq_sim_step(sims[0], steps) != CQ_SUCCESS) { fprintf(stderr, "step: %s\n", cq_sim_last_error(sims[0])); return 1; }
            report("forward, no tape", &P, now_s() - t0, steps);
            if (forward_only) steps = 0;

            if (steps == 0) goto done;
            /* a first episode, then the one timed: an optimization loop's episodes after the first
               (the reset keeps the checkpoints' memory: the first episode's allocations and first
               touches of its pages are not what the loop pays) */
            if (cq_sim_step(sims[1], steps) != CQ_SUCCESS || cq_sim_reset(sims[1]) != CQ_SUCCESS) {
                fprintf(stderr, "step: %s\n", cq_sim_last_error(sims[1]));
                return 1;
            }
            probe_reset(&P);
            t0 = now_s();
            if (cq_sim_step(sims[1], steps) != CQ_SUCCESS) { fprintf(stderr, "step: %s\n", cq_sim_last_error(sims[1])); return 1; }
            report("forward, taped", &P, now_s() - t0, steps);

            if (cq_sim_backward(sims[1], g, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) { fprintf(stderr, "backward: %s\n", cq_sim_last_error(sims[1])); return 1; }
            probe_reset(&P);
            t0 = now_s();
            if (cq_sim_backward(sims[1], g, NULL, NULL, NULL, NULL, NULL) != CQ_SUCCESS) { fprintf(stderr, "backward: %s\n", cq_sim_last_error(sims[1])); return 1; }
            report("backward (again)", &P, now_s() - t0, steps);
            if (cq_sim_grad(sims[1], CQ_FIELD_X, gx) != CQ_SUCCESS) { fprintf(stderr, "grad: %s\n", cq_sim_last_error(sims[1])); return 1; }
            printf("(sum of dL/dx0: %.9g)\n", loss_seed_sum(gx, n * dim));
        }
    done:
        cq_sim_destroy(sims[0]); cq_sim_destroy(sims[1]);
        free(x); free(g); free(gx);
    }
    return 0;
}
