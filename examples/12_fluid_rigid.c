/* 12_fluid_rigid.c - a fluid-rigid world (cq_world_*, the DiffFR method): a tank of water, a box
   of half the water's density that floats, and a ball thrown over the water whose initial speed
   is tuned by forward-mode gradients (cq_world_track / cq_world_body_jacobian) so that it is at a
   target after 0.35 s, through its splash into the water.

   Build and run from the repository root:
       cc -O2 examples/12_fluid_rigid.c -o build/fluid_rigid -lm && ./build/fluid_rigid [out-dir] [quick] [gpu]
   "gpu": the fluid on the CUDA backend (cq_world_desc.backend = CUDA; exits nonzero if there is
   none; glibc before 2.34 wants -ldl).  Writes OUT/fluid_rigid_float.png (the box afloat) and OUT/fluid_rigid_throw.png (the last
   throw's final frame).  OUT defaults to "out".  "quick" runs 3 gradient steps and exits
   nonzero unless the loss dropped.  2D, float32, about 800 fluid particles: seconds on one core. */
#define _POSIX_C_SOURCE 200112L
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#define CQ_IMAGE_IMPLEMENTATION
#include "cq_image.h"
#include "cq_example.h"

#define W 1.2                 /* tank: [0, W] x [0, H] metres */
#define H 0.6
#define DEPTH 0.25            /* water depth */
#define R 0.01                /* particle radius: spacing 2 cm */
#define DT 0.001
#define THROW_STEPS 350
#define TARGET_X 0.75         /* where the ball should be after THROW_STEPS */
static cq_backend g_backend = CQ_BACKEND_CPU;

static int parse_gpu(int argc, char **argv, int *i, void *user)
{
    (void)argc; (void)user;
    if (strcmp(argv[*i], "gpu") != 0) return 0;
    g_backend = CQ_BACKEND_CUDA;
    return 1;
}

static cq_world *tank(void)
{
    cq_world_desc d;
    cq_world *w = NULL;
    double x[2 * 4096];
    int n = 0;
    memset(&d, 0, sizeof d);
    d.dim = 2; d.particle_radius = R; d.dt = DT; d.gravity[1] = -9.81;
    d.domain_hi[0] = W; d.domain_hi[1] = H;
    d.backend = g_backend;
    d.logger.func = cqx_log_warnings;
    if (cq_world_create(&d, &w) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(NULL)); return NULL; }
    for (double py = R; py < DEPTH; py += 2 * R)
        for (double px = R; px < W; px += 2 * R) { x[2 * n] = px; x[2 * n + 1] = py; ++n; }
    if (cq_world_add_fluid(w, n, x, NULL) != CQ_SUCCESS) { fprintf(stderr, "%s\n", cq_world_last_error(w)); cq_world_destroy(w); return NULL; }
    return w;
}

/* the fluid and body 0: a box of half extents hx, hy (drawn unrotated) or, hy = 0, a ball of radius hx */
static void picture(cq_world *w, const char *path, double hx, double hy)
{
    const int S = 400, n = cq_world_fluid_count(w);
    double *x = (double *)malloc(sizeof(double) * (size_t)(2 * n + 2));
    cq_img im;
    if (!x || cq_img_init(&im, (int)(S * W / H), S) != 0) { free(x); return; }
    cq_img_clear(&im, 250, 250, 250);
    cq_world_get_fluid(w, CQ_FIELD_X, x);
    for (int i = 0; i < n; ++i) cq_img_disc(&im, x[2 * i] / H * S, (1 - x[2 * i + 1] / H) * S, R / H * S, 40, 110, 220);
    {
        cq_body_state s;
        cq_world_get_body(w, 0, &s);
        if (hy > 0)
            cq_img_rect(&im, (int)((s.x[0] - hx) / H * S), (int)((1 - (s.x[1] + hy) / H) * S),
                        (int)((s.x[0] + hx) / H * S), (int)((1 - (s.x[1] - hy) / H) * S), 150, 100, 40);
        else
            cq_img_disc(&im, s.x[0] / H * S, (1 - s.x[1] / H) * S, hx / H * S, 210, 60, 40);
    }
    if (cq_img_write_png(path, &im) == 0) printf("wrote %s\n", path);
    cq_img_free(&im);
    free(x);
}

/* the ball thrown at (0.1, 0.45) with speed (vx, 0): its x after THROW_STEPS, and dx/dvx */
static double throw_ball(double vx, double *dx_dvx, const char *png)
{
    cq_world *w = tank();
    cq_body_desc b;
    cq_body_state s;
    double J[13 * 6];
    int id = 0;
    if (!w) return NAN;
    memset(&b, 0, sizeof b);
    b.shape = CQ_SHAPE_SPHERE; b.radius = 0.04; b.density = 600; b.friction = 0.3;
    b.x[0] = 0.1; b.x[1] = 0.45; b.v[0] = vx;
    if (cq_world_add_body(w, &b, &id) != CQ_SUCCESS || cq_world_track(w, id) != CQ_SUCCESS ||
        cq_world_step(w, THROW_STEPS) != CQ_SUCCESS) {
        fprintf(stderr, "%s\n", cq_world_last_error(w));
        cq_world_destroy(w);
        return NAN;
    }
    cq_world_get_body(w, id, &s);
    cq_world_body_jacobian(w, id, J);
    *dx_dvx = J[0 * 6 + 0];   /* row x[0], column v0[0] */
    if (png) picture(w, png, 0.04, 0);
    cq_world_destroy(w);
    return s.x[0];
}

int main(int argc, char **argv)
{
    cqx_args a;
    char path[512];
    int iters;
    double vx = 1.0, first = 0, last = 0;
    if (cqx_parse_args(argc, argv, 0, parse_gpu, NULL, &a) != 0) return 1;
    if (g_backend == CQ_BACKEND_CUDA) printf("the fluid on the CUDA backend\n");
    iters = a.quick ? 3 : 8;
    {   /* 1. a box of 500 kg/m^3, 0.12 x 0.06 m, dropped into the tank: it floats half submerged */
        cq_world *w = tank();
        cq_body_desc b;
        cq_body_state s;
        double m;
        memset(&b, 0, sizeof b);
        b.shape = CQ_SHAPE_BOX; b.half_extents[0] = 0.06; b.half_extents[1] = 0.03; b.density = 500; b.friction = 0.3;
        b.x[0] = 0.6; b.x[1] = 0.4;
        if (!w || cq_world_add_body(w, &b, NULL) != CQ_SUCCESS || cq_world_step(w, a.quick ? 800 : 1500) != CQ_SUCCESS) {
            fprintf(stderr, "float: %s\n", w ? cq_world_last_error(w) : "no world");
            return 1;
        }
        cq_world_get_body(w, 0, &s);
        cq_world_body_mass(w, 0, &m, NULL);
        printf("box afloat after %.1f s: centre at y = %.3f m; half submerged in water raised by its "
               "displacement: %.3f m\n", cq_world_step_count(w) * DT, s.x[1], DEPTH + m / (1000 * W) - m / (1000 * 0.12) + 0.03);
        snprintf(path, sizeof path, "%s/fluid_rigid_float.png", a.dir);
        picture(w, path, 0.06, 0.03);
        cq_world_destroy(w);
    }
    /* 2. the throw: gradient descent on vx for L = (x_T - target)^2, dL/dvx = 2 (x_T - target) dx/dvx */
    for (int it = 0; it < iters; ++it) {
        double g, x = throw_ball(vx, &g, NULL), L = (x - TARGET_X) * (x - TARGET_X);
        if (x != x) return 1;
        if (it == 0) {
            double gp, gm, e = 1e-3, cd = (throw_ball(vx + e, &gp, NULL) - throw_ball(vx - e, &gm, NULL)) / (2 * e);
            first = L;
            printf("dx_T/dvx = %.4f (forward mode), %.4f (central difference): %s\n", g, cd,
                   g * cd > 0 ? "same direction" : "OPPOSITE");
            if (!(g * cd > 0)) return 1;
        }
        last = L;
        printf("iteration %d: vx = %.4f m/s, x_T = %.4f m (target %.2f), loss %.6f\n", it, vx, x, TARGET_X, L);
        {   /* a damped Gauss-Newton step on x_T(vx) = target, at most 0.5 m/s */
            double step = -0.7 * (x - TARGET_X) * g / (g * g + 1e-6);
            vx += step > 0.5 ? 0.5 : step < -0.5 ? -0.5 : step;
        }
    }
    snprintf(path, sizeof path, "%s/fluid_rigid_throw.png", a.dir);
    {
        double g;
        last = throw_ball(vx, &g, path);
        last = (last - TARGET_X) * (last - TARGET_X);
        printf("final: vx = %.4f m/s, loss %.6f\n", vx, last);
    }
    return a.quick ? cqx_quick_verdict(iters + 1, first, last) : 0;
}
