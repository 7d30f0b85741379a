/* 01_falling_blocks.c - two soft 2D blocks fall under gravity; the upper one lands on the lower.
   Build and run from the repository root:
       cc -O2 examples/01_falling_blocks.c -o build/ex01 -lm && ./build/ex01            */
#define CHAINQUEEN_IMPLEMENTATION          /* this file holds the library's implementation */
#include "../chainqueen.h"
#include <stdio.h>
#include <string.h>

#define RES 64                             /* grid: 64 x 64 cells covering [0, 1)^2     */
#define MAXP 4096

static double xs[MAXP * 2];                /* particle positions, x0 y0 x1 y1 ...       */

/* Fills the rectangle [x0,x1) x [y0,y1) with particles 2 per cell per axis (the spacing
   that matches the default particle volume (dx/2)^2); returns how many were written. */
static int block(double *out, double x0, double y0, double x1, double y1)
{
    const double h = 0.5 / RES;
    int n = 0;
    for (double x = x0 + h / 2; x < x1; x += h)
        for (double y = y0 + h / 2; y < y1; y += h) { out[2 * n] = x; out[2 * n + 1] = y; n++; }
    return n;
}

/* Every cq_* call returns a cq_result; cq_sim_last_error says what went wrong and where. */
static int fail(cq_sim *sim)
{
    fprintf(stderr, "chainqueen error: %s\n", cq_sim_last_error(sim));
    cq_sim_destroy(sim);
    return 1;
}

/* Mean position of particles [first, first+count). */
static void centroid(const double *x, int first, int count, double c[2])
{
    c[0] = c[1] = 0;
    for (int p = first; p < first + count; ++p) { c[0] += x[2 * p]; c[1] += x[2 * p + 1]; }
    c[0] /= count; c[1] /= count;
}

int main(void)
{
    cq_sim_desc d;
    memset(&d, 0, sizeof d);               /* zero = library defaults (f32, CPU, ...)   */
    d.dim = 2;
    d.res[0] = d.res[1] = RES;
    d.dx = 1.0 / RES;                      /* domain [0, 1); walls are the outer 3 cells */
    d.dt = 2e-4;                           /* < dx*sqrt(rho/E) = 2.9e-4 for E = 3e3      */
    d.substeps = 25;                       /* one cq_sim_step = 25 substeps = 5 ms       */
    d.gravity[1] = -9.8;                   /* y is up */
    d.material = CQ_MATERIAL_NEOHOOKEAN;
    d.boundary = CQ_BOUNDARY_FRICTION;     /* Coulomb friction on floor and side walls   */
    d.friction = 0.5;

    cq_sim *sim;
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) {
        fprintf(stderr, "create failed: %s\n", cq_sim_last_error(NULL));
        return 1;
    }

    /* Lower block: stiffer, just above the floor.  Upper block: softer (E in Pa, density 1),
       higher up and shifted a little to the right. */
    int na = block(xs, 0.25, 0.06, 0.50, 0.26);
    int nb = block(xs + 2 * na, 0.32, 0.42, 0.52, 0.62);
    cq_particles_desc pa, pb;
    memset(&pa, 0, sizeof pa); memset(&pb, 0, sizeof pb);   /* zero = defaults again */
    pa.count = na; pa.x = xs;          pa.default_youngs = 3e3; pa.default_poisson = 0.3;
    pb.count = nb; pb.x = xs + 2 * na; pb.default_youngs = 2e3; pb.default_poisson = 0.3;
    if (cq_sim_add_particles(sim, &pa) != CQ_SUCCESS || cq_sim_add_particles(sim, &pb) != CQ_SUCCESS)
        return fail(sim);
    printf("%d + %d particles, grid %dx%d, dt %g, NeoHookean, f32\n", na, nb, RES, RES, d.dt);

    double ca[2], cb[2];
    for (int step = 0; step <= 100; step += 20) {   /* 0.5 s of simulated time */
        if (step > 0 && cq_sim_step(sim, 20) != CQ_SUCCESS) return fail(sim);
        cq_sim_get(sim, CQ_FIELD_X, xs);   /* read back positions (as double) */
        centroid(xs, 0, na, ca);
        centroid(xs, na, nb, cb);
        printf("step %3d  t=%.2fs  lower block (%.3f, %.3f)  upper block (%.3f, %.3f)\n",
               step, step * d.substeps * d.dt, ca[0], ca[1], cb[0], cb[1]);
    }
    /* Sanity check: the upper block came to rest on top of the lower block. */
    int ok = cb[1] > ca[1] && cb[1] < 0.45;
    printf("%s\n", ok ? "ok: the upper block landed on the lower one" : "unexpected final state");
    cq_sim_destroy(sim);
    return ok ? 0 : 2;
}
