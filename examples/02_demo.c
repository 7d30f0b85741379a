/* 02_demo.c - a small 2D scene rendered to pictures: a stiff, heavier block drops onto a soft
   jelly block on a floor with Coulomb friction, while a third block is thrown in from the right.
   Particles are drawn as discs coloured per body and shaded by volume change (det F: darker =
   compressed, lighter = stretched).

   `make demo` builds and runs it; by hand, from the repository root:
       cc -O2 examples/02_demo.c -o build/demo -lm && ./build/demo [output-directory]
   writes OUT/demo.gif (all frames) and OUT/frame_000.png ... (every 6th frame); OUT defaults
   to "out" and is created if missing (POSIX mkdir; _mkdir on Windows).  Takes a few seconds. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"   /* cqx_make_dir, cqx_log_all */

#define RES 80                /* grid cells per axis; the domain is [0, 1)^2, y up */
#define WALL 3                /* wall thickness in cells (the library default) */
#define IMG 320               /* picture size in pixels (4 pixels per cell) */
#define FRAMES 90             /* GIF frames, one per cq_sim_step of SUBSTEPS substeps */
#define SUBSTEPS 128          /* substeps per frame: 16 ms of simulated time */
#define DT 1.25e-4            /* substep; stability needs dt < dx*sqrt(rho/E), here >= 1.77e-4 */
#define PNG_EVERY 6           /* every 6th frame also goes to a PNG */
#define GIF_DELAY 2           /* centiseconds per GIF frame (real time would be 1.6) */

typedef struct body {
    const char *name;
    double x0, y0, x1, y1;    /* initial rectangle */
    double vx, vy;            /* initial velocity */
    double youngs, density;   /* Young's modulus (Pa), density (mass per area) */
    unsigned char rgb[3];
} body;

static const body bodies[] = {
    {"jelly", 0.30, 0.06, 0.62, 0.26, 0.0, 0.0, 1.2e3, 1.0, {60, 170, 90}},
    {"stiff block", 0.40, 0.55, 0.56, 0.71, 0.0, 0.0, 1e4, 2.0, {210, 80, 50}},
    {"thrown block", 0.80, 0.50, 0.90, 0.60, -2.0, 2.0, 5e3, 1.0, {60, 100, 210}},
};
#define NBODIES (int)(sizeof bodies / sizeof bodies[0])

/* Particles on a lattice of spacing dx/2 (matching the default volume (dx/2)^2) filling the
   rectangle; writes positions and velocities, returns the count (at most cap). */
static int fill_body(const body *b, double *x, double *v, int cap)
{
    const double h = 0.5 / RES;
    int n = 0;
    for (double px = b->x0 + h / 2; px < b->x1; px += h)
        for (double py = b->y0 + h / 2; py < b->y1 && n < cap; py += h, ++n) {
            x[2 * n] = px; x[2 * n + 1] = py;
            v[2 * n] = b->vx; v[2 * n + 1] = b->vy;
        }
    return n;
}

static unsigned char shade(unsigned char c, double s)
{
    double v = c * s;
    return (unsigned char)(v > 255 ? 255 : v);
}

/* Draws walls and particles; physics y points up, image y points down. */
static void render(cq_img *im, const double *x, const double *F, const int *first, const int *count)
{
    const int wall_px = (int)(WALL * (double)IMG / RES + 0.5);
    cq_img_clear(im, 245, 243, 235);
    cq_img_rect(im, 0, IMG - wall_px, IMG - 1, IMG - 1, 90, 90, 100);          /* floor */
    cq_img_rect(im, 0, 0, wall_px - 1, IMG - wall_px - 1, 200, 200, 205);      /* side walls */
    cq_img_rect(im, IMG - wall_px, 0, IMG - 1, IMG - wall_px - 1, 200, 200, 205);
    for (int b = 0; b < NBODIES; ++b)
        for (int p = first[b]; p < first[b] + count[b]; ++p) {
            const double *f = F + 4 * p;
            double J = f[0] * f[3] - f[1] * f[2];   /* area ratio: < 1 compressed */
            double s = 1 + 4 * (J - 1);
            s = s < 0.55 ? 0.55 : (s > 1.35 ? 1.35 : s);
            cq_img_disc(im, x[2 * p] * IMG, (1 - x[2 * p + 1]) * IMG, 1.5,
                        shade(bodies[b].rgb[0], s), shade(bodies[b].rgb[1], s), shade(bodies[b].rgb[2], s));
        }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "out";
    const int cap = 8192;
    cq_sim_desc d;
    cq_sim *sim = NULL;
    cq_img im = {0, 0, NULL};
    cq_gif gif;
    char path[1024];
    double *x = (double *)malloc(sizeof(double) * 2 * cap), *v = (double *)malloc(sizeof(double) * 2 * cap);
    double *F = (double *)malloc(sizeof(double) * 4 * cap);
    int first[NBODIES], count[NBODIES], n = 0, pngs = 0, rc = 1;

    memset(&gif, 0, sizeof gif);
    if (!x || !v || !F || cq_img_init(&im, IMG, IMG) != 0) { fprintf(stderr, "out of memory\n"); goto done; }
    if (cqx_make_dir(dir)) goto done;

    memset(&d, 0, sizeof d);                 /* zero = defaults: f32, fixed corotated, CPU */
    d.dim = 2;
    d.res[0] = d.res[1] = RES;
    d.dx = 1.0 / RES;
    d.dt = DT;
    d.substeps = SUBSTEPS;                   /* one cq_sim_step = one frame */
    d.gravity[1] = -9.8;
    d.boundary = CQ_BOUNDARY_FRICTION;
    d.friction = 0.4;
    d.logger.func = cqx_log_all;             /* library messages (backend choice, dt warnings, errors) to stderr */
    if (cq_sim_create(&d, &sim) != CQ_SUCCESS) goto done;   /* the logger printed why */

    /* One cq_sim_add_particles call per body, each with its own stiffness and density. */
    for (int b = 0; b < NBODIES; ++b) {
        cq_particles_desc p;
        memset(&p, 0, sizeof p);
        first[b] = n;
        count[b] = fill_body(&bodies[b], x + 2 * n, v + 2 * n, cap - n);
        p.count = count[b];
        p.x = x + 2 * n;
        p.v = v + 2 * n;
        p.default_youngs = bodies[b].youngs;
        p.default_poisson = 0.3;
        p.default_mass = bodies[b].density * (0.5 / RES) * (0.5 / RES);
        if (cq_sim_add_particles(sim, &p) != CQ_SUCCESS) goto done;
        n += count[b];
    }
    printf("%d particles in %d bodies, grid %dx%d, dt %g s, %d substeps per frame\n", n, NBODIES, RES, RES,
           DT, SUBSTEPS);

    snprintf(path, sizeof path, "%s/demo.gif", dir);
    if (cq_gif_begin(&gif, path, IMG, IMG, GIF_DELAY) != 0) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    for (int frame = 0; frame < FRAMES; ++frame) {
        if (frame > 0 && cq_sim_step(sim, 1) != CQ_SUCCESS) goto done;
        cq_sim_get(sim, CQ_FIELD_X, x);
        cq_sim_get(sim, CQ_FIELD_F, F);
        render(&im, x, F, first, count);
        if (cq_gif_frame(&gif, &im) != 0) { fprintf(stderr, "cannot write %s\n", path); goto done; }
        if (frame % PNG_EVERY == 0) {
            char png[1024];
            snprintf(png, sizeof png, "%s/frame_%03d.png", dir, pngs++);
            if (cq_img_write_png(png, &im) != 0) { fprintf(stderr, "cannot write %s\n", png); goto done; }
        }
        if (frame % 30 == 29) {              /* progress: centroid height and most squeezed particle */
            printf("t = %.2f s:", frame * SUBSTEPS * DT);
            for (int b = 0; b < NBODIES; ++b) {
                double cy = 0, minJ = 1e9;
                for (int p = first[b]; p < first[b] + count[b]; ++p) {
                    double J = F[4 * p] * F[4 * p + 3] - F[4 * p + 1] * F[4 * p + 2];
                    cy += x[2 * p + 1];
                    if (J < minJ) minJ = J;
                }
                printf("  %s y=%.3f minJ=%.2f", bodies[b].name, cy / count[b], minJ);
            }
            printf("\n");
        }
    }
    if (cq_gif_end(&gif) != 0) { fprintf(stderr, "cannot write %s\n", path); goto done; }
    printf("wrote %s (%d frames) and %s/frame_*.png (%d frames)\n", path, FRAMES, dir, pngs);
    rc = 0;
done:
    /* a failing cq_* call has already reported itself through cqx_log_all (CQ_LOG_ERROR carries the
       same text as cq_sim_last_error) */
    cq_gif_end(&gif);                        /* harmless when already closed */
    cq_sim_destroy(sim);
    cq_img_free(&im);
    free(x); free(v); free(F);
    return rc;
}
