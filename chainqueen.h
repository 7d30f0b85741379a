/* chainqueen.h - differentiable soft-body simulation (MLS-MPM, the ChainQueen method) in one header.
   v0.1.0.  Generated from templates/ by generator/ (`make regen`); edit those, not this.

   WHAT IT IS
     Elastic bodies in 2D or 3D as material points on a background grid: moving-least-squares
     MPM with APIC transfers and quadratic B-splines (Hu et al., ChainQueen, ICRA 2019),
     fixed-corotated and NeoHookean materials, per-particle mass, volume,
     Young's modulus and Poisson ratio, actuation stress per actuator group, optional
     incompressibility, cable actuators (seed 003 eqs 16-17), and four wall boundary conditions
     (sticky, slip, separate, Coulomb friction).  Float32 or float64.

   DO THIS
     In exactly one C or C++ file:
         #define CHAINQUEEN_IMPLEMENTATION
         #include "chainqueen.h"
     Everywhere else just #include "chainqueen.h".  (A typo in the switch shows up as undefined
     cq_* symbols at link time.)  Build with -lm; add -fopenmp for parallel CPU kernels.

   STEP BY STEP
     cq_sim_desc d = {0};                       zero = defaults everywhere
     d.dim = 2; d.res[0] = d.res[1] = 64; d.dx = 1.0 / 64; d.dt = 1e-4; d.gravity[1] = -9.8;
     cq_sim *sim; if (cq_sim_create(&d, &sim) != CQ_SUCCESS) puts(cq_sim_last_error(NULL));
     cq_particles_desc p = {0}; p.count = n; p.x = positions; p.default_youngs = 1e4;
     cq_sim_add_particles(sim, &p);             every call returns a cq_result
     cq_sim_step(sim, 100);                     100 steps of d.substeps substeps
     cq_sim_get(sim, CQ_FIELD_X, positions);    read back (double, particle-major)
     cq_sim_destroy(sim);

   UNITS AND CONVENTIONS
     Grid: res[a] cells (= nodes, node i at i*dx) per axis; the domain is [0, res*dx).  The
     outer `wall_cells` (default 3) node layers of every face are walls.  A particle must stay
     where its 3-node stencil exists: x/dx in [0.5, res - 1.5) per axis, else the step fails
     with CQ_ERROR_OUT_OF_DOMAIN.  Matrices (C, F, actuation stress) are row-major d x d.
     Stability: explicit; dt must stay under about dx*sqrt(rho/E), a logged warning otherwise.

   ERRORS
     Every fallible call returns a cq_result; cq_sim_last_error(sim) says which field, particle
     and step.  Bad input leaves the sim as it was.  A step that goes non-finite or leaves the
     domain stops: the sim stays at the last completed step.  Nothing calls abort() or exit().

   OPTIONS (define before the implementation include)
     CQ_NO_CUDA      compile no GPU code paths (this version has no run-time CUDA loader yet)

   GRADIENTS (reverse mode)
     Create the sim with checkpoint_every = k >= 1: the state is kept every k steps (and the
     actuation of every step); cq_sim_backward(sim, dL/dx_T, dL/dv_T, dL/dF_T, dL/dC_T, hook,
     user) runs the adjoint from step T back to 0, recomputing one segment of k steps at a time
     (k ~ sqrt(T) gives O(sqrt T) memory; any k gives the same gradients, bit for bit, on the
     CPU).  The hook is called for n = T-1 ... 0: there cq_sim_get returns s_n,
     cq_sim_actuation_grad gives dL/du_n (cq_sim_cable_actuation_grad for cables) and
     cq_sim_add_state_grad adds a running loss
     dh/ds_n (or a controller's dependence of u_n on s_n).  Afterwards cq_sim_grad returns
     dL/d(x0, v0, C0, F0, mass, volume, youngs, poisson).  Gradients are computed in the sim's
     precision; f64 is the one to check against finite differences.

   WHAT IT DOES NOT DO (YET)
     The CUDA backend at run time (the kernels are generated in cuda/ and compiled to PTX by
     `make ptx`), plasticity, rigid bodies, fluids.

   REQUIREMENTS
     C99 or C++11 compiler, libm.  OpenMP optional.
*/
/* ---- BEGIN GENERATED: public API from templates/api.h.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
#ifndef CHAINQUEEN_H
#define CHAINQUEEN_H
#define CQ_VERSION_MAJOR 0
#define CQ_VERSION_MINOR 1
#define CQ_VERSION_PATCH 0

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cq_sim cq_sim;

typedef enum cq_result {            /* 0 = success, negative = error */
    CQ_SUCCESS = 0,
    CQ_ERROR_INVALID_ARGUMENT = -1,
    CQ_ERROR_OUT_OF_MEMORY = -2,
    CQ_ERROR_NON_FINITE = -3,       /* NaN/Inf in input or produced by a step        */
    CQ_ERROR_OUT_OF_DOMAIN = -4,    /* a particle left the grid's usable region       */
    CQ_ERROR_BACKEND_UNAVAILABLE = -5,
    CQ_ERROR_INVALID_STATE = -6     /* call-order misuse, e.g. backward with no tape  */
} cq_result;

typedef enum cq_material {
    CQ_MATERIAL_DEFAULT = 0         /* = fixed corotated */
    , CQ_MATERIAL_FIXED_COROTATED = 1
    , CQ_MATERIAL_NEOHOOKEAN = 2
} cq_material;
#define CQ_MATERIAL_COUNT 3

typedef enum cq_precision { CQ_PRECISION_DEFAULT, CQ_PRECISION_F32, CQ_PRECISION_F64 } cq_precision; /* DEFAULT = F32 */
typedef enum cq_backend   { CQ_BACKEND_DEFAULT, CQ_BACKEND_CPU, CQ_BACKEND_CUDA } cq_backend;
typedef enum cq_boundary  { CQ_BOUNDARY_DEFAULT, CQ_BOUNDARY_STICKY, CQ_BOUNDARY_SLIP,
                            CQ_BOUNDARY_SEPARATE, CQ_BOUNDARY_FRICTION } cq_boundary;   /* DEFAULT = STICKY */
typedef enum cq_field { CQ_FIELD_X, CQ_FIELD_V, CQ_FIELD_C, CQ_FIELD_F, CQ_FIELD_MASS,
                        CQ_FIELD_VOLUME, CQ_FIELD_YOUNGS, CQ_FIELD_POISSON } cq_field;
typedef enum cq_log_level { CQ_LOG_ERROR = 1, CQ_LOG_WARNING = 2, CQ_LOG_INFO = 3 } cq_log_level;

/* Optional callbacks.  alloc(size, user) returns NULL on failure; free(ptr, user) accepts NULL. */
typedef struct cq_allocator {
    void *(*alloc)(size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} cq_allocator;
/* Receives errors (the same text as cq_sim_last_error), warnings (dt over the stability
   estimate) and information (which backend was chosen and why).  No logger = silent. */
typedef struct cq_logger {
    void (*func)(cq_log_level level, const char *message, void *user);
    void *user;
} cq_logger;

typedef struct cq_sim_desc {
    int dim;                 /* 2 or 3 */
    int res[3];              /* grid cells per axis (= nodes, at i*dx; res[2] ignored in 2D); the
                                domain is [0, res*dx); each res >= 2*wall_cells + 4 */
    double dx, dt;           /* cell size; substep length */
    int substeps;            /* substeps per cq_sim_step; 0 = 1 */
    double gravity[3];
    cq_material material; cq_precision precision; cq_backend backend;
    cq_boundary boundary;    /* on the domain walls; DEFAULT = STICKY */
    double friction;         /* Coulomb coefficient for CQ_BOUNDARY_FRICTION (>= 0) */
    int checkpoint_every;    /* tape: 0 = no tape (forward only), k >= 1 = keep state every k steps */
    int incompressibility;   /* exponent p >= 2 of seed 003 eq 14; 0 = off */
    int wall_cells;          /* wall thickness in nodes on every face; 0 = 3 */
    cq_allocator allocator;  /* zero = malloc/free */
    cq_logger logger;        /* zero = silent */
} cq_sim_desc;

typedef struct cq_particles_desc {   /* host arrays, double, particle-major */
    int count;
    const double *x;                 /* count*dim, required        */
    const double *v, *F, *C;         /* NULL = 0, I, 0             */
    const double *mass, *volume, *youngs, *poisson;   /* NULL = the defaults below */
    const int *actuator;             /* group per particle, -1 none; NULL = none */
    double default_mass;             /* 0 = default_volume * 1 (unit density)        */
    double default_volume;           /* 0 = (dx/2)^dim (2 particles per cell per axis) */
    double default_youngs;           /* 0 = 1e4                                       */
    double default_poisson;          /* used as given: 0 is a valid Poisson ratio     */
} cq_particles_desc;

cq_result   cq_sim_create(const cq_sim_desc *desc, cq_sim **out);
void        cq_sim_destroy(cq_sim *sim);
const char *cq_result_string(cq_result r);
const char *cq_sim_last_error(const cq_sim *sim);   /* detail: which particle, field, step.
                                                       NULL sim: the last cq_sim_create failure */
cq_backend  cq_sim_backend(const cq_sim *sim);
cq_result   cq_sim_add_particles(cq_sim *sim, const cq_particles_desc *p);  /* at step 0 only */
int         cq_sim_particle_count(const cq_sim *sim);
int         cq_sim_field_size(const cq_sim *sim, cq_field f);  /* doubles per particle: d, d*d or 1 */
cq_result   cq_sim_get(const cq_sim *sim, cq_field f, double *out);   /* current state */
cq_result   cq_sim_set(cq_sim *sim, cq_field f, const double *in);
cq_result   cq_sim_set_actuation(cq_sim *sim, int groups, const double *stress); /* groups*dim*dim */
cq_result   cq_sim_step(cq_sim *sim, int steps);
int         cq_sim_step_count(const cq_sim *sim);
cq_result   cq_sim_reset(cq_sim *sim);           /* back to step 0, tape cleared */
size_t      cq_sim_tape_bytes(const cq_sim *sim); /* memory held by the tape (checkpoints, actuation log,
                                                     the backward pass's segment buffer) */

/* Cable actuators (seed 003 eqs 16-17): a cable routed through `count` particles (in order),
   stiffness k, rest length R, stores E = k/2 max(0, L - max(0, R u))^2 where L is the length of
   its route and u its actuation (normally in [-1, 1]; u = 1 (the default): the cable is R long,
   smaller u reels it in).  Its force -dE/dx acts on the routed particles every substep.  Cables
   are added at step 0 and numbered 0, 1, ... in the order added. */
cq_result cq_sim_add_cable(cq_sim *sim, int count, const int *particles, double stiffness, double rest_length);
int       cq_sim_cable_count(const cq_sim *sim);
cq_result cq_sim_set_cable_actuation(cq_sim *sim, int cables, const double *u);   /* held until changed */

/* reverse mode: L = g(s_T) + sum_n h(s_n, u_n).  Needs checkpoint_every >= 1: the state is kept
   every checkpoint_every steps and the backward pass recomputes one segment at a time
   (checkpoint_every ~ sqrt(T): O(sqrt T) memory; 1: every step kept).  Gradients are computed
   in the sim's precision.  After it the sim is still at step T. */
typedef void (*cq_backward_hook)(cq_sim *sim, int step, void *user);
cq_result cq_sim_backward(cq_sim *sim,
                          const double *dL_dx, const double *dL_dv,   /* seeds at s_T, NULL = 0 */
                          const double *dL_dF, const double *dL_dC,
                          cq_backward_hook hook, void *user);
/* inside the hook for step n (called for n = T-1 ... 0, after step n's adjoint;
   cq_sim_get then returns the state s_n; stepping, setting or resetting is refused): */
cq_result cq_sim_actuation_grad(const cq_sim *sim, double *out);       /* dL/du_n, groups*dim*dim */
cq_result cq_sim_cable_actuation_grad(const cq_sim *sim, double *out); /* dL/du_n per cable */
cq_result cq_sim_add_state_grad(cq_sim *sim, cq_field f, const double *g); /* += dh/ds_n etc. */
/* after cq_sim_backward: gradients w.r.t. the initial state and the parameters */
cq_result cq_sim_grad(const cq_sim *sim, cq_field f, double *out);

#ifdef __cplusplus
}
#endif
#endif /* CHAINQUEEN_H */
/* ---- END GENERATED: public API ---- */

#if defined(CHAINQUEEN_IMPLEMENTATION) && !defined(CHAINQUEEN_IMPLEMENTATION_DONE)
#define CHAINQUEEN_IMPLEMENTATION_DONE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <math.h>
#include <limits.h>

/* ---- BEGIN GENERATED: kernel machinery from templates/kernels_common.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
#if defined(__CUDACC__)
#  define CQ_HD __host__ __device__ static inline
#  define CQ__ATOMIC_ADD(addr, val) atomicAdd((addr), (val))
#else
#  define CQ_HD static inline
#  define CQ__ATOMIC_ADD(addr, val) (*(addr) += (val))   /* CPU: the caller makes scatters race-free */
#endif

/* kernel status codes returned by G2P */
#define CQ__OK 0
#define CQ__NONFINITE 1
#define CQ__OUT_OF_DOMAIN 2

/* boundary codes as stored in the params (cq_boundary with DEFAULT resolved) */
#define CQ__BC_STICKY 1
#define CQ__BC_SLIP 2
#define CQ__BC_SEPARATE 3
#define CQ__BC_FRICTION 4

/* Everything a kernel needs besides the arrays, in float. */
typedef struct cq__params_f32 {
    float dx, inv_dx, dt, friction;
    float gravity[3];
    int res[3];            /* nodes per axis */
    int bound;             /* wall thickness in nodes */
    int boundary;          /* CQ__BC_* */
    int incompressibility; /* exponent p of seed 003 eq 14; 0 = off */
    int act_groups;        /* rows in act_stress */
} cq__params_f32;

/* Particle arrays, particle-major: x, v [n*d]; C, F [n*d*d] row-major; per-particle
   parameters [n]; actuator group [n] (-1 = none); act_stress [groups*d*d]. */
typedef struct cq__pview_f32 {
    float *x, *v, *C, *F;
    float *mass, *vol, *E, *nu;
    int *act;
    float *act_stress;
} cq__pview_f32;

/* Grid arrays: m [nodes]; v [nodes*d] holds MOMENTUM after P2G and VELOCITY after the
   grid update. */
typedef struct cq__gview_f32 {
    float *m, *v;
} cq__gview_f32;

CQ_HD int cq__isfinite_f32(float a) { return a == a && a - a == a - a; }

/* Lame parameters from Young's modulus and Poisson ratio. */
CQ_HD void cq__lame_f32(float E, float nu, float *mu, float *lam)
{
    *mu = E / (2 * (1 + nu));
    *lam = E * nu / ((1 + nu) * (1 - 2 * nu));
}

/* Everything a kernel needs besides the arrays, in double. */
typedef struct cq__params_f64 {
    double dx, inv_dx, dt, friction;
    double gravity[3];
    int res[3];            /* nodes per axis */
    int bound;             /* wall thickness in nodes */
    int boundary;          /* CQ__BC_* */
    int incompressibility; /* exponent p of seed 003 eq 14; 0 = off */
    int act_groups;        /* rows in act_stress */
} cq__params_f64;

/* Particle arrays, particle-major: x, v [n*d]; C, F [n*d*d] row-major; per-particle
   parameters [n]; actuator group [n] (-1 = none); act_stress [groups*d*d]. */
typedef struct cq__pview_f64 {
    double *x, *v, *C, *F;
    double *mass, *vol, *E, *nu;
    int *act;
    double *act_stress;
} cq__pview_f64;

/* Grid arrays: m [nodes]; v [nodes*d] holds MOMENTUM after P2G and VELOCITY after the
   grid update. */
typedef struct cq__gview_f64 {
    double *m, *v;
} cq__gview_f64;

CQ_HD int cq__isfinite_f64(double a) { return a == a && a - a == a - a; }

/* Lame parameters from Young's modulus and Poisson ratio. */
CQ_HD void cq__lame_f64(double E, double nu, double *mu, double *lam)
{
    *mu = E / (2 * (1 + nu));
    *lam = E * nu / ((1 + nu) * (1 - 2 * nu));
}

/* ---- END GENERATED: kernel machinery ---- */

/* ---- BEGIN GENERATED: kernels from templates/kernels.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
/* ======================================================================== 2D f32 */
/* >>weights_2d_f32: quadratic B-spline weights (seed 000 eq 3). base: lower node
   per axis; fx: position in cells relative to base, in [0.5, 1.5). */
CQ_HD void cq__weights_2d_f32(const float *xp, float inv_dx, int *base, float *fx, float (*w)[3])
{
    for (int a = 0; a < 2; ++a) {
        float q = xp[a] * inv_dx;
        base[a] = (int)floorf(q - (float)0.5);
        fx[a] = q - (float)base[a];
        float d0 = (float)1.5 - fx[a], d1 = fx[a] - 1, d2 = fx[a] - (float)0.5;
        w[a][0] = (float)0.5 * d0 * d0;
        w[a][1] = (float)0.75 - d1 * d1;
        w[a][2] = (float)0.5 * d2 * d2;
    }
}

/* 1 when every node the particle's stencil touches exists: the usable region of the grid. */
CQ_HD int cq__in_domain_2d_f32(const float *xp, const cq__params_f32 *prm)
{
    for (int a = 0; a < 2; ++a) {
        float q = xp[a] * prm->inv_dx - (float)0.5;
        if (!(q >= 0 && q < (float)(prm->res[a] - 2))) return 0;   /* also false for NaN */
    }
    return 1;
}

/* cofactor(F) = J F^-T (finite for any F, unlike the inverse) */
CQ_HD float cq__det_2d_f32(const float *F)
{
    return F[0] * F[3] - F[1] * F[2];
}

CQ_HD void cq__cofactor_2d_f32(const float *F, float *K)
{
    K[0] = F[3]; K[1] = -F[2]; K[2] = -F[1]; K[3] = F[0];
}

/* >>polar_2d_f32: F = R S with R the rotation maximising tr(R^T F), closed form:
   angle atan2(F10 - F01, F00 + F11).  R = I when that direction is undefined.
   sig: the signed singular values (trace and "off-trace" of S in the rotated frame) are not
   needed here; the adjoint uses S = R^T F. */
CQ_HD void cq__polar_2d_f32(const float *F, float *R)
{
    float c = F[0] + F[3], s = F[2] - F[1];
    float r = sqrtf(c * c + s * s);
    if (!(r > 0)) { R[0] = 1; R[1] = 0; R[2] = 0; R[3] = 1; return; }
    c /= r; s /= r;
    R[0] = c; R[1] = 0 - s; R[2] = s; R[3] = c;   /* 0 - s: +0, not -0, at F = I */
}

/* >>incompressible_2d_f32: seed 003 eq 14, P += E/(3(2-2nu)) p (J-1)^(p-1) J F^-T. */
CQ_HD void cq__incompressible_2d_f32(const float *F, float E, float nu, int p, float *P)
{
    float K[4], J = cq__det_2d_f32(F), pw = 1;
    for (int i = 1; i < p; ++i) pw *= J - 1;
    float s = E / (3 * (2 - 2 * nu)) * (float)p * pw;
    cq__cofactor_2d_f32(F, K);
    for (int i = 0; i < 4; ++i) P[i] += s * K[i];
}

/* >>grid_2d_f32: wall boundary conditions (seed 003 sec 3.2, friction as appendix B
   eqs B1-B6).  Nodes within `bound` of a face are wall nodes; the normal points into the
   domain; corners apply each axis in turn. */
/* One wall axis a with inward normal n (+1 or -1) applied to v.  Returns 1 when the node is
   sticky (v zeroed: the other axes do not matter). */
CQ_HD int cq__bc_axis_2d_f32(int a, float n, const cq__params_f32 *prm, float *v)
{
    float ln = v[a] * n;                           /* l_n, eq B1 */
    switch (prm->boundary) {
    case CQ__BC_STICKY:
        for (int b = 0; b < 2; ++b) v[b] = 0;
        return 1;
    case CQ__BC_SLIP:
        v[a] = 0;
        break;
    case CQ__BC_SEPARATE:
        if (ln < 0) v[a] = 0;
        break;
    default: /* CQ__BC_FRICTION */
        if (ln < 0) {
            float s2 = 0;
            for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
            float lt = sqrtf(s2) + 1e-30f;        /* l_t = |v_t| + eps, eq B3 */
            float lts = lt + prm->friction * ln;          /* eq B5 (ln < 0 here) */
            if (lts < 0) lts = 0;
            float scale = lts / lt;
            for (int b = 0; b < 2; ++b) v[b] = b == a ? (float)0 : v[b] * scale;   /* eq B6 */
        }
        break;
    }
    return 0;
}

/* Inward normal of node coordinate c on axis a: +1 near the low face, -1 near the high face,
   0 inside. */
CQ_HD int cq__wall_normal_2d_f32(const int *c, int a, const cq__params_f32 *prm)
{
    return c[a] < prm->bound ? 1 : (c[a] >= prm->res[a] - prm->bound ? -1 : 0);
}

CQ_HD void cq__boundary_2d_f32(const int *c, const cq__params_f32 *prm, float *v)
{
    for (int a = 0; a < 2; ++a) {
        int n = cq__wall_normal_2d_f32(c, a, prm);
        if (n && cq__bc_axis_2d_f32(a, (float)n, prm, v)) return;
    }
}

/* Grid update for one node (seed 003 eq 7 + gravity + walls): v = p / m + dt g. */
CQ_HD void cq__grid_fwd_2d_f32(int node, const cq__params_f32 *prm, cq__gview_f32 g)
{
    float *v = g.v + (long)node * 2;
    float m = g.m[node];
    if (!(m > 0)) {
        for (int a = 0; a < 2; ++a) v[a] = 0;
        return;
    }
    int c[2];
    c[0] = node / prm->res[1]; c[1] = node % prm->res[1];
    float inv_m = 1 / m;
    for (int a = 0; a < 2; ++a) v[a] = v[a] * inv_m + prm->dt * prm->gravity[a];
    cq__boundary_2d_f32(c, prm, v);
}

/* >>g2p_2d_f32: seed 000 eqs 8-11 / seed 003 eqs 8-11.  Reads particle p of `in`,
   writes particle p of `out` (which may alias `in`).  Returns CQ__OK, CQ__NONFINITE or
   CQ__OUT_OF_DOMAIN. */
CQ_HD int cq__g2p_fwd_2d_f32(int p, const cq__params_f32 *prm, cq__pview_f32 in,
                                  cq__pview_f32 out, cq__gview_f32 g)
{
    int base[2];
    float fx[2], w[2][3], xp[2], Fp[4], nv[2] = {0}, nC[4] = {0};
    for (int a = 0; a < 2; ++a) xp[a] = in.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = in.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    const float k4 = 4 * prm->inv_dx;          /* 4/dx^2 times dpos = (node - fx) dx */
    float dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = (float)i - fx[a];
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const float d[2] = {dp[0][o[0]], dp[1][o[1]]};
        const float *vi = g.v + idx * 2;
        { const float wv = wt * vi[0]; nv[0] += wv; nC[0] += wv * d[0]; nC[1] += wv * d[1]; }
        { const float wv = wt * vi[1]; nv[1] += wv; nC[2] += wv * d[0]; nC[3] += wv * d[1]; }
    }
    for (int a = 0; a < 4; ++a) nC[a] *= k4;
    int status = CQ__OK;
    for (int a = 0; a < 2; ++a) {
        float xn = xp[a] + prm->dt * nv[a];
        out.x[(long)p * 2 + a] = xn;
        out.v[(long)p * 2 + a] = nv[a];
        if (!cq__isfinite_f32(xn) || !cq__isfinite_f32(nv[a])) status = CQ__NONFINITE;
    }
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            float f = Fp[a * 2 + b];   /* F <- (I + dt C) F, eq 10 */
            for (int c = 0; c < 2; ++c) f += prm->dt * nC[a * 2 + c] * Fp[c * 2 + b];
            out.F[(long)p * 4 + a * 2 + b] = f;
            out.C[(long)p * 4 + a * 2 + b] = nC[a * 2 + b];
            if (!cq__isfinite_f32(f) || !cq__isfinite_f32(nC[a * 2 + b])) status = CQ__NONFINITE;
        }
    if (status == CQ__OK && !cq__in_domain_2d_f32(out.x + (long)p * 2, prm)) status = CQ__OUT_OF_DOMAIN;
    return status;
}

/* >>material_fixed_corotated_2d_f32: Fixed corotated elasticity (Stomakhin et al. 2012; seed 003 eq 12).
   Generated by SymPy from generator/materials/fixed_corotated.py (stress, then energy). */
CQ_HD void cq__stress_2d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam, float *P)
{
    (void)R; (void)mu; (void)lam;
    const float t0 = lam*(-F[0]*F[3] + F[1]*F[2] + 1);
    const float t1 = 2*mu;
    P[0] = -F[3]*t0 + 2*mu*(F[0] - R[0]);
    P[1] = F[2]*t0 + t1*(F[1] - R[1]);
    P[2] = F[1]*t0 + t1*(F[2] - R[2]);
    P[3] = -F[0]*t0 + 2*mu*(F[3] - R[3]);
}

CQ_HD float cq__energy_2d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam)
{
    float psi;
    (void)R; (void)mu; (void)lam;
    psi = (1.0F/2.0F)*lam*((-F[0]*F[3] + F[1]*F[2] + 1)*(-F[0]*F[3] + F[1]*F[2] + 1)) + mu*(((F[0] - R[0])*(F[0] - R[0])) + ((F[1] - R[1])*(F[1] - R[1])) + ((F[2] - R[2])*(F[2] - R[2])) + ((F[3] - R[3])*(F[3] - R[3])));
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_2d_fixed_corotated_f32(const float *F, float E, float nu, int group,
                                           const cq__params_f32 *prm, const float *act_stress, float *P)
{
    float mu, lam, R[4];
    cq__lame_f32(E, nu, &mu, &lam);
    cq__polar_2d_f32(F, R);
    cq__stress_2d_fixed_corotated_f32(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f32(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const float *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}

/* >>p2g_2d_fixed_corotated_f32: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_2d_fixed_corotated_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                           cq__gview_f32 g)
{
    int base[2];
    float fx[2], w[2][3], xp[2], Fp[4], Pp[4], G[4], mv[2];
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    cq__pk1_2d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const float mass = s.mass[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 2; ++a) {
        mv[a] = mass * s.v[(long)p * 2 + a];
        for (int b = 0; b < 2; ++b) {
            float pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    }
    float dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((float)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const float d[2] = {dp[0][o[0]], dp[1][o[1]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 1], wt * (mv[1] + G[2] * d[0] + G[3] * d[1]));   /* m v + G (x_i - x_p) */
    }
}

/* >>material_neohookean_2d_f32: Compressible NeoHookean elasticity (seed 003 eq 13).
   Generated by SymPy from generator/materials/neohookean.py (stress, then energy). */
CQ_HD void cq__stress_2d_neohookean_f32(const float *F, const float *R, float mu, float lam, float *P)
{
    (void)R; (void)mu; (void)lam;
    const float t0 = F[0]*mu;
    const float t1 = F[0]*F[3] - F[1]*F[2];
    const float t2 = (1.0F/((t1)));
    const float t3 = F[3]*mu;
    const float t4 = lam*t2*logf(t1);
    const float t5 = F[1]*mu;
    const float t6 = F[2]*mu;
    P[0] = F[3]*t4 + t0 - t2*t3;
    P[1] = -F[2]*t4 + t2*t6 + t5;
    P[2] = -F[1]*t4 + t2*t5 + t6;
    P[3] = F[0]*t4 - t0*t2 + t3;
}

CQ_HD float cq__energy_2d_neohookean_f32(const float *F, const float *R, float mu, float lam)
{
    float psi;
    (void)R; (void)mu; (void)lam;
    const float t0 = logf(F[0]*F[3] - F[1]*F[2]);
    psi = (1.0F/2.0F)*lam*((t0)*(t0)) - mu*t0 + (1.0F/2.0F)*mu*(((F[0])*(F[0])) + ((F[1])*(F[1])) + ((F[2])*(F[2])) + ((F[3])*(F[3])) - 2);
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_2d_neohookean_f32(const float *F, float E, float nu, int group,
                                           const cq__params_f32 *prm, const float *act_stress, float *P)
{
    float mu, lam, R[4];
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) R[a] = 0;
    cq__stress_2d_neohookean_f32(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f32(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const float *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}

/* >>p2g_2d_neohookean_f32: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_2d_neohookean_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                           cq__gview_f32 g)
{
    int base[2];
    float fx[2], w[2][3], xp[2], Fp[4], Pp[4], G[4], mv[2];
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    cq__pk1_2d_neohookean_f32(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const float mass = s.mass[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 2; ++a) {
        mv[a] = mass * s.v[(long)p * 2 + a];
        for (int b = 0; b < 2; ++b) {
            float pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    }
    float dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((float)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const float d[2] = {dp[0][o[0]], dp[1][o[1]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 1], wt * (mv[1] + G[2] * d[0] + G[3] * d[1]));   /* m v + G (x_i - x_p) */
    }
}

/* ======================================================================== 2D f64 */
/* >>weights_2d_f64: quadratic B-spline weights (seed 000 eq 3). base: lower node
   per axis; fx: position in cells relative to base, in [0.5, 1.5). */
CQ_HD void cq__weights_2d_f64(const double *xp, double inv_dx, int *base, double *fx, double (*w)[3])
{
    for (int a = 0; a < 2; ++a) {
        double q = xp[a] * inv_dx;
        base[a] = (int)floor(q - (double)0.5);
        fx[a] = q - (double)base[a];
        double d0 = (double)1.5 - fx[a], d1 = fx[a] - 1, d2 = fx[a] - (double)0.5;
        w[a][0] = (double)0.5 * d0 * d0;
        w[a][1] = (double)0.75 - d1 * d1;
        w[a][2] = (double)0.5 * d2 * d2;
    }
}

/* 1 when every node the particle's stencil touches exists: the usable region of the grid. */
CQ_HD int cq__in_domain_2d_f64(const double *xp, const cq__params_f64 *prm)
{
    for (int a = 0; a < 2; ++a) {
        double q = xp[a] * prm->inv_dx - (double)0.5;
        if (!(q >= 0 && q < (double)(prm->res[a] - 2))) return 0;   /* also false for NaN */
    }
    return 1;
}

/* cofactor(F) = J F^-T (finite for any F, unlike the inverse) */
CQ_HD double cq__det_2d_f64(const double *F)
{
    return F[0] * F[3] - F[1] * F[2];
}

CQ_HD void cq__cofactor_2d_f64(const double *F, double *K)
{
    K[0] = F[3]; K[1] = -F[2]; K[2] = -F[1]; K[3] = F[0];
}

/* >>polar_2d_f64: F = R S with R the rotation maximising tr(R^T F), closed form:
   angle atan2(F10 - F01, F00 + F11).  R = I when that direction is undefined.
   sig: the signed singular values (trace and "off-trace" of S in the rotated frame) are not
   needed here; the adjoint uses S = R^T F. */
CQ_HD void cq__polar_2d_f64(const double *F, double *R)
{
    double c = F[0] + F[3], s = F[2] - F[1];
    double r = sqrt(c * c + s * s);
    if (!(r > 0)) { R[0] = 1; R[1] = 0; R[2] = 0; R[3] = 1; return; }
    c /= r; s /= r;
    R[0] = c; R[1] = 0 - s; R[2] = s; R[3] = c;   /* 0 - s: +0, not -0, at F = I */
}

/* >>incompressible_2d_f64: seed 003 eq 14, P += E/(3(2-2nu)) p (J-1)^(p-1) J F^-T. */
CQ_HD void cq__incompressible_2d_f64(const double *F, double E, double nu, int p, double *P)
{
    double K[4], J = cq__det_2d_f64(F), pw = 1;
    for (int i = 1; i < p; ++i) pw *= J - 1;
    double s = E / (3 * (2 - 2 * nu)) * (double)p * pw;
    cq__cofactor_2d_f64(F, K);
    for (int i = 0; i < 4; ++i) P[i] += s * K[i];
}

/* >>grid_2d_f64: wall boundary conditions (seed 003 sec 3.2, friction as appendix B
   eqs B1-B6).  Nodes within `bound` of a face are wall nodes; the normal points into the
   domain; corners apply each axis in turn. */
/* One wall axis a with inward normal n (+1 or -1) applied to v.  Returns 1 when the node is
   sticky (v zeroed: the other axes do not matter). */
CQ_HD int cq__bc_axis_2d_f64(int a, double n, const cq__params_f64 *prm, double *v)
{
    double ln = v[a] * n;                           /* l_n, eq B1 */
    switch (prm->boundary) {
    case CQ__BC_STICKY:
        for (int b = 0; b < 2; ++b) v[b] = 0;
        return 1;
    case CQ__BC_SLIP:
        v[a] = 0;
        break;
    case CQ__BC_SEPARATE:
        if (ln < 0) v[a] = 0;
        break;
    default: /* CQ__BC_FRICTION */
        if (ln < 0) {
            double s2 = 0;
            for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
            double lt = sqrt(s2) + 1e-300;        /* l_t = |v_t| + eps, eq B3 */
            double lts = lt + prm->friction * ln;          /* eq B5 (ln < 0 here) */
            if (lts < 0) lts = 0;
            double scale = lts / lt;
            for (int b = 0; b < 2; ++b) v[b] = b == a ? (double)0 : v[b] * scale;   /* eq B6 */
        }
        break;
    }
    return 0;
}

/* Inward normal of node coordinate c on axis a: +1 near the low face, -1 near the high face,
   0 inside. */
CQ_HD int cq__wall_normal_2d_f64(const int *c, int a, const cq__params_f64 *prm)
{
    return c[a] < prm->bound ? 1 : (c[a] >= prm->res[a] - prm->bound ? -1 : 0);
}

CQ_HD void cq__boundary_2d_f64(const int *c, const cq__params_f64 *prm, double *v)
{
    for (int a = 0; a < 2; ++a) {
        int n = cq__wall_normal_2d_f64(c, a, prm);
        if (n && cq__bc_axis_2d_f64(a, (double)n, prm, v)) return;
    }
}

/* Grid update for one node (seed 003 eq 7 + gravity + walls): v = p / m + dt g. */
CQ_HD void cq__grid_fwd_2d_f64(int node, const cq__params_f64 *prm, cq__gview_f64 g)
{
    double *v = g.v + (long)node * 2;
    double m = g.m[node];
    if (!(m > 0)) {
        for (int a = 0; a < 2; ++a) v[a] = 0;
        return;
    }
    int c[2];
    c[0] = node / prm->res[1]; c[1] = node % prm->res[1];
    double inv_m = 1 / m;
    for (int a = 0; a < 2; ++a) v[a] = v[a] * inv_m + prm->dt * prm->gravity[a];
    cq__boundary_2d_f64(c, prm, v);
}

/* >>g2p_2d_f64: seed 000 eqs 8-11 / seed 003 eqs 8-11.  Reads particle p of `in`,
   writes particle p of `out` (which may alias `in`).  Returns CQ__OK, CQ__NONFINITE or
   CQ__OUT_OF_DOMAIN. */
CQ_HD int cq__g2p_fwd_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 in,
                                  cq__pview_f64 out, cq__gview_f64 g)
{
    int base[2];
    double fx[2], w[2][3], xp[2], Fp[4], nv[2] = {0}, nC[4] = {0};
    for (int a = 0; a < 2; ++a) xp[a] = in.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = in.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    const double k4 = 4 * prm->inv_dx;          /* 4/dx^2 times dpos = (node - fx) dx */
    double dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = (double)i - fx[a];
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const double d[2] = {dp[0][o[0]], dp[1][o[1]]};
        const double *vi = g.v + idx * 2;
        { const double wv = wt * vi[0]; nv[0] += wv; nC[0] += wv * d[0]; nC[1] += wv * d[1]; }
        { const double wv = wt * vi[1]; nv[1] += wv; nC[2] += wv * d[0]; nC[3] += wv * d[1]; }
    }
    for (int a = 0; a < 4; ++a) nC[a] *= k4;
    int status = CQ__OK;
    for (int a = 0; a < 2; ++a) {
        double xn = xp[a] + prm->dt * nv[a];
        out.x[(long)p * 2 + a] = xn;
        out.v[(long)p * 2 + a] = nv[a];
        if (!cq__isfinite_f64(xn) || !cq__isfinite_f64(nv[a])) status = CQ__NONFINITE;
    }
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            double f = Fp[a * 2 + b];   /* F <- (I + dt C) F, eq 10 */
            for (int c = 0; c < 2; ++c) f += prm->dt * nC[a * 2 + c] * Fp[c * 2 + b];
            out.F[(long)p * 4 + a * 2 + b] = f;
            out.C[(long)p * 4 + a * 2 + b] = nC[a * 2 + b];
            if (!cq__isfinite_f64(f) || !cq__isfinite_f64(nC[a * 2 + b])) status = CQ__NONFINITE;
        }
    if (status == CQ__OK && !cq__in_domain_2d_f64(out.x + (long)p * 2, prm)) status = CQ__OUT_OF_DOMAIN;
    return status;
}

/* >>material_fixed_corotated_2d_f64: Fixed corotated elasticity (Stomakhin et al. 2012; seed 003 eq 12).
   Generated by SymPy from generator/materials/fixed_corotated.py (stress, then energy). */
CQ_HD void cq__stress_2d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam, double *P)
{
    (void)R; (void)mu; (void)lam;
    const double t0 = lam*(-F[0]*F[3] + F[1]*F[2] + 1);
    const double t1 = 2*mu;
    P[0] = -F[3]*t0 + 2*mu*(F[0] - R[0]);
    P[1] = F[2]*t0 + t1*(F[1] - R[1]);
    P[2] = F[1]*t0 + t1*(F[2] - R[2]);
    P[3] = -F[0]*t0 + 2*mu*(F[3] - R[3]);
}

CQ_HD double cq__energy_2d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam)
{
    double psi;
    (void)R; (void)mu; (void)lam;
    psi = (1.0/2.0)*lam*((-F[0]*F[3] + F[1]*F[2] + 1)*(-F[0]*F[3] + F[1]*F[2] + 1)) + mu*(((F[0] - R[0])*(F[0] - R[0])) + ((F[1] - R[1])*(F[1] - R[1])) + ((F[2] - R[2])*(F[2] - R[2])) + ((F[3] - R[3])*(F[3] - R[3])));
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_2d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam, R[4];
    cq__lame_f64(E, nu, &mu, &lam);
    cq__polar_2d_f64(F, R);
    cq__stress_2d_fixed_corotated_f64(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}

/* >>p2g_2d_fixed_corotated_f64: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                           cq__gview_f64 g)
{
    int base[2];
    double fx[2], w[2][3], xp[2], Fp[4], Pp[4], G[4], mv[2];
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__pk1_2d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const double mass = s.mass[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 2; ++a) {
        mv[a] = mass * s.v[(long)p * 2 + a];
        for (int b = 0; b < 2; ++b) {
            double pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    }
    double dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((double)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const double d[2] = {dp[0][o[0]], dp[1][o[1]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 1], wt * (mv[1] + G[2] * d[0] + G[3] * d[1]));   /* m v + G (x_i - x_p) */
    }
}

/* >>material_neohookean_2d_f64: Compressible NeoHookean elasticity (seed 003 eq 13).
   Generated by SymPy from generator/materials/neohookean.py (stress, then energy). */
CQ_HD void cq__stress_2d_neohookean_f64(const double *F, const double *R, double mu, double lam, double *P)
{
    (void)R; (void)mu; (void)lam;
    const double t0 = F[0]*mu;
    const double t1 = F[0]*F[3] - F[1]*F[2];
    const double t2 = (1.0/((t1)));
    const double t3 = F[3]*mu;
    const double t4 = lam*t2*log(t1);
    const double t5 = F[1]*mu;
    const double t6 = F[2]*mu;
    P[0] = F[3]*t4 + t0 - t2*t3;
    P[1] = -F[2]*t4 + t2*t6 + t5;
    P[2] = -F[1]*t4 + t2*t5 + t6;
    P[3] = F[0]*t4 - t0*t2 + t3;
}

CQ_HD double cq__energy_2d_neohookean_f64(const double *F, const double *R, double mu, double lam)
{
    double psi;
    (void)R; (void)mu; (void)lam;
    const double t0 = log(F[0]*F[3] - F[1]*F[2]);
    psi = (1.0/2.0)*lam*((t0)*(t0)) - mu*t0 + (1.0/2.0)*mu*(((F[0])*(F[0])) + ((F[1])*(F[1])) + ((F[2])*(F[2])) + ((F[3])*(F[3])) - 2);
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_2d_neohookean_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam, R[4];
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) R[a] = 0;
    cq__stress_2d_neohookean_f64(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
                for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}

/* >>p2g_2d_neohookean_f64: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_2d_neohookean_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                           cq__gview_f64 g)
{
    int base[2];
    double fx[2], w[2][3], xp[2], Fp[4], Pp[4], G[4], mv[2];
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__pk1_2d_neohookean_f64(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const double mass = s.mass[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 2; ++a) {
        mv[a] = mass * s.v[(long)p * 2 + a];
        for (int b = 0; b < 2; ++b) {
            double pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    }
    double dp[2][3];
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((double)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        const double d[2] = {dp[0][o[0]], dp[1][o[1]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 2 + 1], wt * (mv[1] + G[2] * d[0] + G[3] * d[1]));   /* m v + G (x_i - x_p) */
    }
}

/* ======================================================================== 3D f32 */
/* >>weights_3d_f32: quadratic B-spline weights (seed 000 eq 3). base: lower node
   per axis; fx: position in cells relative to base, in [0.5, 1.5). */
CQ_HD void cq__weights_3d_f32(const float *xp, float inv_dx, int *base, float *fx, float (*w)[3])
{
    for (int a = 0; a < 3; ++a) {
        float q = xp[a] * inv_dx;
        base[a] = (int)floorf(q - (float)0.5);
        fx[a] = q - (float)base[a];
        float d0 = (float)1.5 - fx[a], d1 = fx[a] - 1, d2 = fx[a] - (float)0.5;
        w[a][0] = (float)0.5 * d0 * d0;
        w[a][1] = (float)0.75 - d1 * d1;
        w[a][2] = (float)0.5 * d2 * d2;
    }
}

/* 1 when every node the particle's stencil touches exists: the usable region of the grid. */
CQ_HD int cq__in_domain_3d_f32(const float *xp, const cq__params_f32 *prm)
{
    for (int a = 0; a < 3; ++a) {
        float q = xp[a] * prm->inv_dx - (float)0.5;
        if (!(q >= 0 && q < (float)(prm->res[a] - 2))) return 0;   /* also false for NaN */
    }
    return 1;
}

/* cofactor(F) = J F^-T (finite for any F, unlike the inverse) */
CQ_HD float cq__det_3d_f32(const float *F)
{
    return F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) + F[2] * (F[3] * F[7] - F[4] * F[6]);
}

CQ_HD void cq__cofactor_3d_f32(const float *F, float *K)
{
    K[0] = F[4] * F[8] - F[5] * F[7]; K[1] = F[5] * F[6] - F[3] * F[8]; K[2] = F[3] * F[7] - F[4] * F[6];
    K[3] = F[2] * F[7] - F[1] * F[8]; K[4] = F[0] * F[8] - F[2] * F[6]; K[5] = F[1] * F[6] - F[0] * F[7];
    K[6] = F[1] * F[5] - F[2] * F[4]; K[7] = F[2] * F[3] - F[0] * F[5]; K[8] = F[0] * F[4] - F[1] * F[3];
}

/* >>svd_3d_f32: F = U diag(sig) V^T with U, V rotations (det +1), sig[0] >= sig[1] >= |sig[2]|,
   sig[2] < 0 when F is inverted.  One-sided (Hestenes) Jacobi rotates the columns of B = F V
   until they are orthogonal to working precision (judged on F itself, never on F^T F, so small
   strains keep their skew part); a Givens QR of B then gives U and the signed sig.  Finite for
   every finite F, including F = I, repeated and zero singular values. */
CQ_HD void cq__svd_3d_f32(const float *F, float *U, float *sig, float *V)
{
    float B[9];
    for (int i = 0; i < 9; ++i) { B[i] = F[i]; V[i] = (i % 4 == 0); }
    for (int sweep = 0; sweep < 8; ++sweep) {
        int rotated = 0;
        for (int pq = 0; pq < 3; ++pq) {
            int p = pq == 2 ? 1 : 0, q = pq == 0 ? 1 : 2;
            float al = 0, be = 0, ga = 0;
            for (int k = 0; k < 3; ++k) {
                al += B[k * 3 + p] * B[k * 3 + p]; be += B[k * 3 + q] * B[k * 3 + q]; ga += B[k * 3 + p] * B[k * 3 + q];
            }
            if (!(ga * ga > 1e-14f * al * be)) continue;
            rotated = 1;
            float zeta = (be - al) / (2 * ga);
            float t = (zeta >= 0 ? 1 : -1) / (fabsf(zeta) + sqrtf(1 + zeta * zeta));
            float c = 1 / sqrtf(1 + t * t), s = t * c;
            for (int k = 0; k < 3; ++k) {   /* B <- B J, V <- V J (J a rotation in the p-q plane) */
                float bp = B[k * 3 + p], bq = B[k * 3 + q];
                B[k * 3 + p] = c * bp - s * bq; B[k * 3 + q] = s * bp + c * bq;
                float vp = V[k * 3 + p], vq = V[k * 3 + q];
                V[k * 3 + p] = c * vp - s * vq; V[k * 3 + q] = s * vp + c * vq;
            }
        }
        if (!rotated) break;
    }
    /* order columns by decreasing norm (a swap negates one column: det V stays +1) */
    for (int pass = 0; pass < 3; ++pass) {
        int i = pass == 1 ? 1 : 0, j = i + 1;
        float ni = B[i] * B[i] + B[3 + i] * B[3 + i] + B[6 + i] * B[6 + i];
        float nj = B[j] * B[j] + B[3 + j] * B[3 + j] + B[6 + j] * B[6 + j];
        if (nj > ni)
            for (int k = 0; k < 3; ++k) {
                float tb = B[k * 3 + i]; B[k * 3 + i] = B[k * 3 + j]; B[k * 3 + j] = -tb;
                float tv = V[k * 3 + i]; V[k * 3 + i] = V[k * 3 + j]; V[k * 3 + j] = -tv;
            }
    }
    /* Givens QR: B = U Rup; U accumulates the transposed rotations */
    for (int i = 0; i < 9; ++i) U[i] = (i % 4 == 0);
    for (int g = 0; g < 3; ++g) {
        int col = g == 2 ? 1 : 0, p = col, q = g == 1 ? 2 : (g == 0 ? 1 : 2);
        float a = B[p * 3 + col], b = B[q * 3 + col];
        float r = sqrtf(a * a + b * b);
        if (!(r > 0)) continue;
        float c = a / r, s = b / r;
        for (int k = 0; k < 3; ++k) {
            float bp = B[p * 3 + k], bq = B[q * 3 + k];
            B[p * 3 + k] = c * bp + s * bq; B[q * 3 + k] = -s * bp + c * bq;
            float up = U[k * 3 + p], uq = U[k * 3 + q];
            U[k * 3 + p] = c * up + s * uq; U[k * 3 + q] = -s * up + c * uq;
        }
    }
    sig[0] = B[0]; sig[1] = B[4]; sig[2] = B[8];
}

/* >>polar_3d_f32: R = U V^T, always a rotation. */
CQ_HD void cq__polar_3d_f32(const float *F, float *R)
{
    float U[9], sig[3], V[9];
    cq__svd_3d_f32(F, U, sig, V);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            R[i * 3 + j] = U[i * 3] * V[j * 3] + U[i * 3 + 1] * V[j * 3 + 1] + U[i * 3 + 2] * V[j * 3 + 2];
}

/* >>incompressible_3d_f32: seed 003 eq 14, P += E/(3(2-2nu)) p (J-1)^(p-1) J F^-T. */
CQ_HD void cq__incompressible_3d_f32(const float *F, float E, float nu, int p, float *P)
{
    float K[9], J = cq__det_3d_f32(F), pw = 1;
    for (int i = 1; i < p; ++i) pw *= J - 1;
    float s = E / (3 * (2 - 2 * nu)) * (float)p * pw;
    cq__cofactor_3d_f32(F, K);
    for (int i = 0; i < 9; ++i) P[i] += s * K[i];
}

/* >>grid_3d_f32: wall boundary conditions (seed 003 sec 3.2, friction as appendix B
   eqs B1-B6).  Nodes within `bound` of a face are wall nodes; the normal points into the
   domain; corners apply each axis in turn. */
/* One wall axis a with inward normal n (+1 or -1) applied to v.  Returns 1 when the node is
   sticky (v zeroed: the other axes do not matter). */
CQ_HD int cq__bc_axis_3d_f32(int a, float n, const cq__params_f32 *prm, float *v)
{
    float ln = v[a] * n;                           /* l_n, eq B1 */
    switch (prm->boundary) {
    case CQ__BC_STICKY:
        for (int b = 0; b < 3; ++b) v[b] = 0;
        return 1;
    case CQ__BC_SLIP:
        v[a] = 0;
        break;
    case CQ__BC_SEPARATE:
        if (ln < 0) v[a] = 0;
        break;
    default: /* CQ__BC_FRICTION */
        if (ln < 0) {
            float s2 = 0;
            for (int b = 0; b < 3; ++b) if (b != a) s2 += v[b] * v[b];
            float lt = sqrtf(s2) + 1e-30f;        /* l_t = |v_t| + eps, eq B3 */
            float lts = lt + prm->friction * ln;          /* eq B5 (ln < 0 here) */
            if (lts < 0) lts = 0;
            float scale = lts / lt;
            for (int b = 0; b < 3; ++b) v[b] = b == a ? (float)0 : v[b] * scale;   /* eq B6 */
        }
        break;
    }
    return 0;
}

/* Inward normal of node coordinate c on axis a: +1 near the low face, -1 near the high face,
   0 inside. */
CQ_HD int cq__wall_normal_3d_f32(const int *c, int a, const cq__params_f32 *prm)
{
    return c[a] < prm->bound ? 1 : (c[a] >= prm->res[a] - prm->bound ? -1 : 0);
}

CQ_HD void cq__boundary_3d_f32(const int *c, const cq__params_f32 *prm, float *v)
{
    for (int a = 0; a < 3; ++a) {
        int n = cq__wall_normal_3d_f32(c, a, prm);
        if (n && cq__bc_axis_3d_f32(a, (float)n, prm, v)) return;
    }
}

/* Grid update for one node (seed 003 eq 7 + gravity + walls): v = p / m + dt g. */
CQ_HD void cq__grid_fwd_3d_f32(int node, const cq__params_f32 *prm, cq__gview_f32 g)
{
    float *v = g.v + (long)node * 3;
    float m = g.m[node];
    if (!(m > 0)) {
        for (int a = 0; a < 3; ++a) v[a] = 0;
        return;
    }
    int c[3];
    c[0] = node / (prm->res[1] * prm->res[2]); c[1] = (node / prm->res[2]) % prm->res[1]; c[2] = node % prm->res[2];
    float inv_m = 1 / m;
    for (int a = 0; a < 3; ++a) v[a] = v[a] * inv_m + prm->dt * prm->gravity[a];
    cq__boundary_3d_f32(c, prm, v);
}

/* >>g2p_3d_f32: seed 000 eqs 8-11 / seed 003 eqs 8-11.  Reads particle p of `in`,
   writes particle p of `out` (which may alias `in`).  Returns CQ__OK, CQ__NONFINITE or
   CQ__OUT_OF_DOMAIN. */
CQ_HD int cq__g2p_fwd_3d_f32(int p, const cq__params_f32 *prm, cq__pview_f32 in,
                                  cq__pview_f32 out, cq__gview_f32 g)
{
    int base[3];
    float fx[3], w[3][3], xp[3], Fp[9], nv[3] = {0}, nC[9] = {0};
    for (int a = 0; a < 3; ++a) xp[a] = in.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = in.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    const float k4 = 4 * prm->inv_dx;          /* 4/dx^2 times dpos = (node - fx) dx */
    float dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = (float)i - fx[a];
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const float d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        const float *vi = g.v + idx * 3;
        { const float wv = wt * vi[0]; nv[0] += wv; nC[0] += wv * d[0]; nC[1] += wv * d[1]; nC[2] += wv * d[2]; }
        { const float wv = wt * vi[1]; nv[1] += wv; nC[3] += wv * d[0]; nC[4] += wv * d[1]; nC[5] += wv * d[2]; }
        { const float wv = wt * vi[2]; nv[2] += wv; nC[6] += wv * d[0]; nC[7] += wv * d[1]; nC[8] += wv * d[2]; }
    }
    for (int a = 0; a < 9; ++a) nC[a] *= k4;
    int status = CQ__OK;
    for (int a = 0; a < 3; ++a) {
        float xn = xp[a] + prm->dt * nv[a];
        out.x[(long)p * 3 + a] = xn;
        out.v[(long)p * 3 + a] = nv[a];
        if (!cq__isfinite_f32(xn) || !cq__isfinite_f32(nv[a])) status = CQ__NONFINITE;
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            float f = Fp[a * 3 + b];   /* F <- (I + dt C) F, eq 10 */
            for (int c = 0; c < 3; ++c) f += prm->dt * nC[a * 3 + c] * Fp[c * 3 + b];
            out.F[(long)p * 9 + a * 3 + b] = f;
            out.C[(long)p * 9 + a * 3 + b] = nC[a * 3 + b];
            if (!cq__isfinite_f32(f) || !cq__isfinite_f32(nC[a * 3 + b])) status = CQ__NONFINITE;
        }
    if (status == CQ__OK && !cq__in_domain_3d_f32(out.x + (long)p * 3, prm)) status = CQ__OUT_OF_DOMAIN;
    return status;
}

/* >>material_fixed_corotated_3d_f32: Fixed corotated elasticity (Stomakhin et al. 2012; seed 003 eq 12).
   Generated by SymPy from generator/materials/fixed_corotated.py (stress, then energy). */
CQ_HD void cq__stress_3d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam, float *P)
{
    (void)R; (void)mu; (void)lam;
    const float t0 = F[4]*F[8];
    const float t1 = F[5]*F[7];
    const float t2 = F[3]*F[8];
    const float t3 = F[4]*F[6];
    const float t4 = F[5]*F[6];
    const float t5 = F[3]*F[7];
    const float t6 = lam*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
    const float t7 = 2*mu;
    P[0] = 2*mu*(F[0] - R[0]) - t6*(t0 - t1);
    P[1] = t6*(t2 - t4) + t7*(F[1] - R[1]);
    P[2] = 2*mu*(F[2] - R[2]) - t6*(-t3 + t5);
    P[3] = t6*(F[1]*F[8] - F[2]*F[7]) + t7*(F[3] - R[3]);
    P[4] = 2*mu*(F[4] - R[4]) - t6*(F[0]*F[8] - F[2]*F[6]);
    P[5] = t6*(F[0]*F[7] - F[1]*F[6]) + t7*(F[5] - R[5]);
    P[6] = 2*mu*(F[6] - R[6]) - t6*(F[1]*F[5] - F[2]*F[4]);
    P[7] = t6*(F[0]*F[5] - F[2]*F[3]) + t7*(F[7] - R[7]);
    P[8] = 2*mu*(F[8] - R[8]) - t6*(F[0]*F[4] - F[1]*F[3]);
}

CQ_HD float cq__energy_3d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam)
{
    float psi;
    (void)R; (void)mu; (void)lam;
    psi = (1.0F/2.0F)*lam*((-F[0]*F[4]*F[8] + F[0]*F[5]*F[7] + F[1]*F[3]*F[8] - F[1]*F[5]*F[6] - F[2]*F[3]*F[7] + F[2]*F[4]*F[6] + 1)*(-F[0]*F[4]*F[8] + F[0]*F[5]*F[7] + F[1]*F[3]*F[8] - F[1]*F[5]*F[6] - F[2]*F[3]*F[7] + F[2]*F[4]*F[6] + 1)) + mu*(((F[0] - R[0])*(F[0] - R[0])) + ((F[1] - R[1])*(F[1] - R[1])) + ((F[2] - R[2])*(F[2] - R[2])) + ((F[3] - R[3])*(F[3] - R[3])) + ((F[4] - R[4])*(F[4] - R[4])) + ((F[5] - R[5])*(F[5] - R[5])) + ((F[6] - R[6])*(F[6] - R[6])) + ((F[7] - R[7])*(F[7] - R[7])) + ((F[8] - R[8])*(F[8] - R[8])));
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_3d_fixed_corotated_f32(const float *F, float E, float nu, int group,
                                           const cq__params_f32 *prm, const float *act_stress, float *P)
{
    float mu, lam, R[9];
    cq__lame_f32(E, nu, &mu, &lam);
    cq__polar_3d_f32(F, R);
    cq__stress_3d_fixed_corotated_f32(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_3d_f32(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const float *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                for (int c = 0; c < 3; ++c) P[a * 3 + b] += F[a * 3 + c] * sa[c * 3 + b];
    }
}

/* >>p2g_3d_fixed_corotated_f32: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_3d_fixed_corotated_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                           cq__gview_f32 g)
{
    int base[3];
    float fx[3], w[3][3], xp[3], Fp[9], Pp[9], G[9], mv[3];
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    cq__pk1_3d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const float mass = s.mass[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 3; ++a) {
        mv[a] = mass * s.v[(long)p * 3 + a];
        for (int b = 0; b < 3; ++b) {
            float pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    }
    float dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((float)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const float d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1] + G[2] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 1], wt * (mv[1] + G[3] * d[0] + G[4] * d[1] + G[5] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 2], wt * (mv[2] + G[6] * d[0] + G[7] * d[1] + G[8] * d[2]));   /* m v + G (x_i - x_p) */
    }
}

/* >>material_neohookean_3d_f32: Compressible NeoHookean elasticity (seed 003 eq 13).
   Generated by SymPy from generator/materials/neohookean.py (stress, then energy). */
CQ_HD void cq__stress_3d_neohookean_f32(const float *F, const float *R, float mu, float lam, float *P)
{
    (void)R; (void)mu; (void)lam;
    const float t0 = F[4]*F[8];
    const float t1 = F[5]*F[7];
    const float t2 = t0 - t1;
    const float t3 = F[5]*F[6];
    const float t4 = F[3]*F[7];
    const float t5 = F[3]*F[8];
    const float t6 = F[4]*F[6];
    const float t7 = F[0]*t0 - F[0]*t1 + F[1]*t3 - F[1]*t5 + F[2]*t4 - F[2]*t6;
    const float t8 = (1.0F/((t7)));
    const float t9 = mu*t8;
    const float t10 = lam*t8*logf(t7);
    const float t11 = -t3 + t5;
    const float t12 = t4 - t6;
    const float t13 = F[1]*F[8] - F[2]*F[7];
    const float t14 = F[0]*F[8] - F[2]*F[6];
    const float t15 = F[0]*F[7] - F[1]*F[6];
    const float t16 = F[1]*F[5] - F[2]*F[4];
    const float t17 = F[0]*F[5] - F[2]*F[3];
    const float t18 = F[0]*F[4] - F[1]*F[3];
    P[0] = F[0]*mu + t10*t2 - t2*t9;
    P[1] = F[1]*mu - t10*t11 + t11*t9;
    P[2] = F[2]*mu + t10*t12 - t12*t9;
    P[3] = F[3]*mu - t10*t13 + t13*t9;
    P[4] = F[4]*mu + t10*t14 - t14*t9;
    P[5] = F[5]*mu - t10*t15 + t15*t9;
    P[6] = F[6]*mu + t10*t16 - t16*t9;
    P[7] = F[7]*mu - t10*t17 + t17*t9;
    P[8] = F[8]*mu + t10*t18 - t18*t9;
}

CQ_HD float cq__energy_3d_neohookean_f32(const float *F, const float *R, float mu, float lam)
{
    float psi;
    (void)R; (void)mu; (void)lam;
    const float t0 = logf(F[0]*F[4]*F[8] - F[0]*F[5]*F[7] - F[1]*F[3]*F[8] + F[1]*F[5]*F[6] + F[2]*F[3]*F[7] - F[2]*F[4]*F[6]);
    psi = (1.0F/2.0F)*lam*((t0)*(t0)) - mu*t0 + (1.0F/2.0F)*mu*(((F[0])*(F[0])) + ((F[1])*(F[1])) + ((F[2])*(F[2])) + ((F[3])*(F[3])) + ((F[4])*(F[4])) + ((F[5])*(F[5])) + ((F[6])*(F[6])) + ((F[7])*(F[7])) + ((F[8])*(F[8])) - 3);
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_3d_neohookean_f32(const float *F, float E, float nu, int group,
                                           const cq__params_f32 *prm, const float *act_stress, float *P)
{
    float mu, lam, R[9];
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) R[a] = 0;
    cq__stress_3d_neohookean_f32(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_3d_f32(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const float *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                for (int c = 0; c < 3; ++c) P[a * 3 + b] += F[a * 3 + c] * sa[c * 3 + b];
    }
}

/* >>p2g_3d_neohookean_f32: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_3d_neohookean_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                           cq__gview_f32 g)
{
    int base[3];
    float fx[3], w[3][3], xp[3], Fp[9], Pp[9], G[9], mv[3];
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    cq__pk1_3d_neohookean_f32(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const float mass = s.mass[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 3; ++a) {
        mv[a] = mass * s.v[(long)p * 3 + a];
        for (int b = 0; b < 3; ++b) {
            float pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    }
    float dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((float)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const float d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1] + G[2] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 1], wt * (mv[1] + G[3] * d[0] + G[4] * d[1] + G[5] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 2], wt * (mv[2] + G[6] * d[0] + G[7] * d[1] + G[8] * d[2]));   /* m v + G (x_i - x_p) */
    }
}

/* ======================================================================== 3D f64 */
/* >>weights_3d_f64: quadratic B-spline weights (seed 000 eq 3). base: lower node
   per axis; fx: position in cells relative to base, in [0.5, 1.5). */
CQ_HD void cq__weights_3d_f64(const double *xp, double inv_dx, int *base, double *fx, double (*w)[3])
{
    for (int a = 0; a < 3; ++a) {
        double q = xp[a] * inv_dx;
        base[a] = (int)floor(q - (double)0.5);
        fx[a] = q - (double)base[a];
        double d0 = (double)1.5 - fx[a], d1 = fx[a] - 1, d2 = fx[a] - (double)0.5;
        w[a][0] = (double)0.5 * d0 * d0;
        w[a][1] = (double)0.75 - d1 * d1;
        w[a][2] = (double)0.5 * d2 * d2;
    }
}

/* 1 when every node the particle's stencil touches exists: the usable region of the grid. */
CQ_HD int cq__in_domain_3d_f64(const double *xp, const cq__params_f64 *prm)
{
    for (int a = 0; a < 3; ++a) {
        double q = xp[a] * prm->inv_dx - (double)0.5;
        if (!(q >= 0 && q < (double)(prm->res[a] - 2))) return 0;   /* also false for NaN */
    }
    return 1;
}

/* cofactor(F) = J F^-T (finite for any F, unlike the inverse) */
CQ_HD double cq__det_3d_f64(const double *F)
{
    return F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) + F[2] * (F[3] * F[7] - F[4] * F[6]);
}

CQ_HD void cq__cofactor_3d_f64(const double *F, double *K)
{
    K[0] = F[4] * F[8] - F[5] * F[7]; K[1] = F[5] * F[6] - F[3] * F[8]; K[2] = F[3] * F[7] - F[4] * F[6];
    K[3] = F[2] * F[7] - F[1] * F[8]; K[4] = F[0] * F[8] - F[2] * F[6]; K[5] = F[1] * F[6] - F[0] * F[7];
    K[6] = F[1] * F[5] - F[2] * F[4]; K[7] = F[2] * F[3] - F[0] * F[5]; K[8] = F[0] * F[4] - F[1] * F[3];
}

/* >>svd_3d_f64: F = U diag(sig) V^T with U, V rotations (det +1), sig[0] >= sig[1] >= |sig[2]|,
   sig[2] < 0 when F is inverted.  One-sided (Hestenes) Jacobi rotates the columns of B = F V
   until they are orthogonal to working precision (judged on F itself, never on F^T F, so small
   strains keep their skew part); a Givens QR of B then gives U and the signed sig.  Finite for
   every finite F, including F = I, repeated and zero singular values. */
CQ_HD void cq__svd_3d_f64(const double *F, double *U, double *sig, double *V)
{
    double B[9];
    for (int i = 0; i < 9; ++i) { B[i] = F[i]; V[i] = (i % 4 == 0); }
    for (int sweep = 0; sweep < 12; ++sweep) {
        int rotated = 0;
        for (int pq = 0; pq < 3; ++pq) {
            int p = pq == 2 ? 1 : 0, q = pq == 0 ? 1 : 2;
            double al = 0, be = 0, ga = 0;
            for (int k = 0; k < 3; ++k) {
                al += B[k * 3 + p] * B[k * 3 + p]; be += B[k * 3 + q] * B[k * 3 + q]; ga += B[k * 3 + p] * B[k * 3 + q];
            }
            if (!(ga * ga > 1e-30 * al * be)) continue;
            rotated = 1;
            double zeta = (be - al) / (2 * ga);
            double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
            double c = 1 / sqrt(1 + t * t), s = t * c;
            for (int k = 0; k < 3; ++k) {   /* B <- B J, V <- V J (J a rotation in the p-q plane) */
                double bp = B[k * 3 + p], bq = B[k * 3 + q];
                B[k * 3 + p] = c * bp - s * bq; B[k * 3 + q] = s * bp + c * bq;
                double vp = V[k * 3 + p], vq = V[k * 3 + q];
                V[k * 3 + p] = c * vp - s * vq; V[k * 3 + q] = s * vp + c * vq;
            }
        }
        if (!rotated) break;
    }
    /* order columns by decreasing norm (a swap negates one column: det V stays +1) */
    for (int pass = 0; pass < 3; ++pass) {
        int i = pass == 1 ? 1 : 0, j = i + 1;
        double ni = B[i] * B[i] + B[3 + i] * B[3 + i] + B[6 + i] * B[6 + i];
        double nj = B[j] * B[j] + B[3 + j] * B[3 + j] + B[6 + j] * B[6 + j];
        if (nj > ni)
            for (int k = 0; k < 3; ++k) {
                double tb = B[k * 3 + i]; B[k * 3 + i] = B[k * 3 + j]; B[k * 3 + j] = -tb;
                double tv = V[k * 3 + i]; V[k * 3 + i] = V[k * 3 + j]; V[k * 3 + j] = -tv;
            }
    }
    /* Givens QR: B = U Rup; U accumulates the transposed rotations */
    for (int i = 0; i < 9; ++i) U[i] = (i % 4 == 0);
    for (int g = 0; g < 3; ++g) {
        int col = g == 2 ? 1 : 0, p = col, q = g == 1 ? 2 : (g == 0 ? 1 : 2);
        double a = B[p * 3 + col], b = B[q * 3 + col];
        double r = sqrt(a * a + b * b);
        if (!(r > 0)) continue;
        double c = a / r, s = b / r;
        for (int k = 0; k < 3; ++k) {
            double bp = B[p * 3 + k], bq = B[q * 3 + k];
            B[p * 3 + k] = c * bp + s * bq; B[q * 3 + k] = -s * bp + c * bq;
            double up = U[k * 3 + p], uq = U[k * 3 + q];
            U[k * 3 + p] = c * up + s * uq; U[k * 3 + q] = -s * up + c * uq;
        }
    }
    sig[0] = B[0]; sig[1] = B[4]; sig[2] = B[8];
}

/* >>polar_3d_f64: R = U V^T, always a rotation. */
CQ_HD void cq__polar_3d_f64(const double *F, double *R)
{
    double U[9], sig[3], V[9];
    cq__svd_3d_f64(F, U, sig, V);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            R[i * 3 + j] = U[i * 3] * V[j * 3] + U[i * 3 + 1] * V[j * 3 + 1] + U[i * 3 + 2] * V[j * 3 + 2];
}

/* >>incompressible_3d_f64: seed 003 eq 14, P += E/(3(2-2nu)) p (J-1)^(p-1) J F^-T. */
CQ_HD void cq__incompressible_3d_f64(const double *F, double E, double nu, int p, double *P)
{
    double K[9], J = cq__det_3d_f64(F), pw = 1;
    for (int i = 1; i < p; ++i) pw *= J - 1;
    double s = E / (3 * (2 - 2 * nu)) * (double)p * pw;
    cq__cofactor_3d_f64(F, K);
    for (int i = 0; i < 9; ++i) P[i] += s * K[i];
}

/* >>grid_3d_f64: wall boundary conditions (seed 003 sec 3.2, friction as appendix B
   eqs B1-B6).  Nodes within `bound` of a face are wall nodes; the normal points into the
   domain; corners apply each axis in turn. */
/* One wall axis a with inward normal n (+1 or -1) applied to v.  Returns 1 when the node is
   sticky (v zeroed: the other axes do not matter). */
CQ_HD int cq__bc_axis_3d_f64(int a, double n, const cq__params_f64 *prm, double *v)
{
    double ln = v[a] * n;                           /* l_n, eq B1 */
    switch (prm->boundary) {
    case CQ__BC_STICKY:
        for (int b = 0; b < 3; ++b) v[b] = 0;
        return 1;
    case CQ__BC_SLIP:
        v[a] = 0;
        break;
    case CQ__BC_SEPARATE:
        if (ln < 0) v[a] = 0;
        break;
    default: /* CQ__BC_FRICTION */
        if (ln < 0) {
            double s2 = 0;
            for (int b = 0; b < 3; ++b) if (b != a) s2 += v[b] * v[b];
            double lt = sqrt(s2) + 1e-300;        /* l_t = |v_t| + eps, eq B3 */
            double lts = lt + prm->friction * ln;          /* eq B5 (ln < 0 here) */
            if (lts < 0) lts = 0;
            double scale = lts / lt;
            for (int b = 0; b < 3; ++b) v[b] = b == a ? (double)0 : v[b] * scale;   /* eq B6 */
        }
        break;
    }
    return 0;
}

/* Inward normal of node coordinate c on axis a: +1 near the low face, -1 near the high face,
   0 inside. */
CQ_HD int cq__wall_normal_3d_f64(const int *c, int a, const cq__params_f64 *prm)
{
    return c[a] < prm->bound ? 1 : (c[a] >= prm->res[a] - prm->bound ? -1 : 0);
}

CQ_HD void cq__boundary_3d_f64(const int *c, const cq__params_f64 *prm, double *v)
{
    for (int a = 0; a < 3; ++a) {
        int n = cq__wall_normal_3d_f64(c, a, prm);
        if (n && cq__bc_axis_3d_f64(a, (double)n, prm, v)) return;
    }
}

/* Grid update for one node (seed 003 eq 7 + gravity + walls): v = p / m + dt g. */
CQ_HD void cq__grid_fwd_3d_f64(int node, const cq__params_f64 *prm, cq__gview_f64 g)
{
    double *v = g.v + (long)node * 3;
    double m = g.m[node];
    if (!(m > 0)) {
        for (int a = 0; a < 3; ++a) v[a] = 0;
        return;
    }
    int c[3];
    c[0] = node / (prm->res[1] * prm->res[2]); c[1] = (node / prm->res[2]) % prm->res[1]; c[2] = node % prm->res[2];
    double inv_m = 1 / m;
    for (int a = 0; a < 3; ++a) v[a] = v[a] * inv_m + prm->dt * prm->gravity[a];
    cq__boundary_3d_f64(c, prm, v);
}

/* >>g2p_3d_f64: seed 000 eqs 8-11 / seed 003 eqs 8-11.  Reads particle p of `in`,
   writes particle p of `out` (which may alias `in`).  Returns CQ__OK, CQ__NONFINITE or
   CQ__OUT_OF_DOMAIN. */
CQ_HD int cq__g2p_fwd_3d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 in,
                                  cq__pview_f64 out, cq__gview_f64 g)
{
    int base[3];
    double fx[3], w[3][3], xp[3], Fp[9], nv[3] = {0}, nC[9] = {0};
    for (int a = 0; a < 3; ++a) xp[a] = in.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = in.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    const double k4 = 4 * prm->inv_dx;          /* 4/dx^2 times dpos = (node - fx) dx */
    double dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = (double)i - fx[a];
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const double d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        const double *vi = g.v + idx * 3;
        { const double wv = wt * vi[0]; nv[0] += wv; nC[0] += wv * d[0]; nC[1] += wv * d[1]; nC[2] += wv * d[2]; }
        { const double wv = wt * vi[1]; nv[1] += wv; nC[3] += wv * d[0]; nC[4] += wv * d[1]; nC[5] += wv * d[2]; }
        { const double wv = wt * vi[2]; nv[2] += wv; nC[6] += wv * d[0]; nC[7] += wv * d[1]; nC[8] += wv * d[2]; }
    }
    for (int a = 0; a < 9; ++a) nC[a] *= k4;
    int status = CQ__OK;
    for (int a = 0; a < 3; ++a) {
        double xn = xp[a] + prm->dt * nv[a];
        out.x[(long)p * 3 + a] = xn;
        out.v[(long)p * 3 + a] = nv[a];
        if (!cq__isfinite_f64(xn) || !cq__isfinite_f64(nv[a])) status = CQ__NONFINITE;
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double f = Fp[a * 3 + b];   /* F <- (I + dt C) F, eq 10 */
            for (int c = 0; c < 3; ++c) f += prm->dt * nC[a * 3 + c] * Fp[c * 3 + b];
            out.F[(long)p * 9 + a * 3 + b] = f;
            out.C[(long)p * 9 + a * 3 + b] = nC[a * 3 + b];
            if (!cq__isfinite_f64(f) || !cq__isfinite_f64(nC[a * 3 + b])) status = CQ__NONFINITE;
        }
    if (status == CQ__OK && !cq__in_domain_3d_f64(out.x + (long)p * 3, prm)) status = CQ__OUT_OF_DOMAIN;
    return status;
}

/* >>material_fixed_corotated_3d_f64: Fixed corotated elasticity (Stomakhin et al. 2012; seed 003 eq 12).
   Generated by SymPy from generator/materials/fixed_corotated.py (stress, then energy). */
CQ_HD void cq__stress_3d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam, double *P)
{
    (void)R; (void)mu; (void)lam;
    const double t0 = F[4]*F[8];
    const double t1 = F[5]*F[7];
    const double t2 = F[3]*F[8];
    const double t3 = F[4]*F[6];
    const double t4 = F[5]*F[6];
    const double t5 = F[3]*F[7];
    const double t6 = lam*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
    const double t7 = 2*mu;
    P[0] = 2*mu*(F[0] - R[0]) - t6*(t0 - t1);
    P[1] = t6*(t2 - t4) + t7*(F[1] - R[1]);
    P[2] = 2*mu*(F[2] - R[2]) - t6*(-t3 + t5);
    P[3] = t6*(F[1]*F[8] - F[2]*F[7]) + t7*(F[3] - R[3]);
    P[4] = 2*mu*(F[4] - R[4]) - t6*(F[0]*F[8] - F[2]*F[6]);
    P[5] = t6*(F[0]*F[7] - F[1]*F[6]) + t7*(F[5] - R[5]);
    P[6] = 2*mu*(F[6] - R[6]) - t6*(F[1]*F[5] - F[2]*F[4]);
    P[7] = t6*(F[0]*F[5] - F[2]*F[3]) + t7*(F[7] - R[7]);
    P[8] = 2*mu*(F[8] - R[8]) - t6*(F[0]*F[4] - F[1]*F[3]);
}

CQ_HD double cq__energy_3d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam)
{
    double psi;
    (void)R; (void)mu; (void)lam;
    psi = (1.0/2.0)*lam*((-F[0]*F[4]*F[8] + F[0]*F[5]*F[7] + F[1]*F[3]*F[8] - F[1]*F[5]*F[6] - F[2]*F[3]*F[7] + F[2]*F[4]*F[6] + 1)*(-F[0]*F[4]*F[8] + F[0]*F[5]*F[7] + F[1]*F[3]*F[8] - F[1]*F[5]*F[6] - F[2]*F[3]*F[7] + F[2]*F[4]*F[6] + 1)) + mu*(((F[0] - R[0])*(F[0] - R[0])) + ((F[1] - R[1])*(F[1] - R[1])) + ((F[2] - R[2])*(F[2] - R[2])) + ((F[3] - R[3])*(F[3] - R[3])) + ((F[4] - R[4])*(F[4] - R[4])) + ((F[5] - R[5])*(F[5] - R[5])) + ((F[6] - R[6])*(F[6] - R[6])) + ((F[7] - R[7])*(F[7] - R[7])) + ((F[8] - R[8])*(F[8] - R[8])));
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_3d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam, R[9];
    cq__lame_f64(E, nu, &mu, &lam);
    cq__polar_3d_f64(F, R);
    cq__stress_3d_fixed_corotated_f64(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_3d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                for (int c = 0; c < 3; ++c) P[a * 3 + b] += F[a * 3 + c] * sa[c * 3 + b];
    }
}

/* >>p2g_3d_fixed_corotated_f64: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_3d_fixed_corotated_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                           cq__gview_f64 g)
{
    int base[3];
    double fx[3], w[3][3], xp[3], Fp[9], Pp[9], G[9], mv[3];
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    cq__pk1_3d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const double mass = s.mass[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 3; ++a) {
        mv[a] = mass * s.v[(long)p * 3 + a];
        for (int b = 0; b < 3; ++b) {
            double pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    }
    double dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((double)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const double d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1] + G[2] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 1], wt * (mv[1] + G[3] * d[0] + G[4] * d[1] + G[5] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 2], wt * (mv[2] + G[6] * d[0] + G[7] * d[1] + G[8] * d[2]));   /* m v + G (x_i - x_p) */
    }
}

/* >>material_neohookean_3d_f64: Compressible NeoHookean elasticity (seed 003 eq 13).
   Generated by SymPy from generator/materials/neohookean.py (stress, then energy). */
CQ_HD void cq__stress_3d_neohookean_f64(const double *F, const double *R, double mu, double lam, double *P)
{
    (void)R; (void)mu; (void)lam;
    const double t0 = F[4]*F[8];
    const double t1 = F[5]*F[7];
    const double t2 = t0 - t1;
    const double t3 = F[5]*F[6];
    const double t4 = F[3]*F[7];
    const double t5 = F[3]*F[8];
    const double t6 = F[4]*F[6];
    const double t7 = F[0]*t0 - F[0]*t1 + F[1]*t3 - F[1]*t5 + F[2]*t4 - F[2]*t6;
    const double t8 = (1.0/((t7)));
    const double t9 = mu*t8;
    const double t10 = lam*t8*log(t7);
    const double t11 = -t3 + t5;
    const double t12 = t4 - t6;
    const double t13 = F[1]*F[8] - F[2]*F[7];
    const double t14 = F[0]*F[8] - F[2]*F[6];
    const double t15 = F[0]*F[7] - F[1]*F[6];
    const double t16 = F[1]*F[5] - F[2]*F[4];
    const double t17 = F[0]*F[5] - F[2]*F[3];
    const double t18 = F[0]*F[4] - F[1]*F[3];
    P[0] = F[0]*mu + t10*t2 - t2*t9;
    P[1] = F[1]*mu - t10*t11 + t11*t9;
    P[2] = F[2]*mu + t10*t12 - t12*t9;
    P[3] = F[3]*mu - t10*t13 + t13*t9;
    P[4] = F[4]*mu + t10*t14 - t14*t9;
    P[5] = F[5]*mu - t10*t15 + t15*t9;
    P[6] = F[6]*mu + t10*t16 - t16*t9;
    P[7] = F[7]*mu - t10*t17 + t17*t9;
    P[8] = F[8]*mu + t10*t18 - t18*t9;
}

CQ_HD double cq__energy_3d_neohookean_f64(const double *F, const double *R, double mu, double lam)
{
    double psi;
    (void)R; (void)mu; (void)lam;
    const double t0 = log(F[0]*F[4]*F[8] - F[0]*F[5]*F[7] - F[1]*F[3]*F[8] + F[1]*F[5]*F[6] + F[2]*F[3]*F[7] - F[2]*F[4]*F[6]);
    psi = (1.0/2.0)*lam*((t0)*(t0)) - mu*t0 + (1.0/2.0)*mu*(((F[0])*(F[0])) + ((F[1])*(F[1])) + ((F[2])*(F[2])) + ((F[3])*(F[3])) + ((F[4])*(F[4])) + ((F[5])*(F[5])) + ((F[6])*(F[6])) + ((F[7])*(F[7])) + ((F[8])*(F[8])) - 3);
    return psi;
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a). */
CQ_HD void cq__pk1_3d_neohookean_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam, R[9];
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) R[a] = 0;
    cq__stress_3d_neohookean_f64(F, R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_3d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                for (int c = 0; c < 3; ++c) P[a * 3 + b] += F[a * 3 + c] * sa[c * 3 + b];
    }
}

/* >>p2g_3d_neohookean_f64: seed 000 eqs 3-6 (APIC + MLS force): scatter particle p's
   mass and momentum  m v + G (x_i - x_p),  G = -(4/dx^2) dt V0 P F^T + m C. */
CQ_HD void cq__p2g_fwd_3d_neohookean_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                           cq__gview_f64 g)
{
    int base[3];
    double fx[3], w[3][3], xp[3], Fp[9], Pp[9], G[9], mv[3];
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    cq__pk1_3d_neohookean_f64(Fp, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    const double mass = s.mass[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    for (int a = 0; a < 3; ++a) {
        mv[a] = mass * s.v[(long)p * 3 + a];
        for (int b = 0; b < 3; ++b) {
            double pf = 0;   /* (P F^T)_ab */
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    }
    double dp[3][3];
    for (int a = 0; a < 3; ++a)
        for (int i = 0; i < 3; ++i) dp[a][i] = ((double)i - fx[a]) * prm->dx;
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        const double d[3] = {dp[0][o[0]], dp[1][o[1]], dp[2][o[2]]};
        CQ__ATOMIC_ADD(&g.m[idx], wt * mass);
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 0], wt * (mv[0] + G[0] * d[0] + G[1] * d[1] + G[2] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 1], wt * (mv[1] + G[3] * d[0] + G[4] * d[1] + G[5] * d[2]));   /* m v + G (x_i - x_p) */
        CQ__ATOMIC_ADD(&g.v[idx * 3 + 2], wt * (mv[2] + G[6] * d[0] + G[7] * d[1] + G[8] * d[2]));   /* m v + G (x_i - x_p) */
    }
}

/* ---- END GENERATED: kernels ---- */

/* ---- BEGIN GENERATED: adjoint kernels from templates/adjoint.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
/* ======================================================================== 2D f32 adjoint */
/* >>polar_vjp_2d_f32: dF += dL/dF given dR = dL/dR, for R the polar rotation of F
   (cq__polar_2d_f32).  With F = U diag(sig) V^T (signed sig, R = U V^T) and
   H = U^T dR V, the result is  U A V^T,  A_ij = (H_ij - H_ji) / (sig_i + sig_j)  (i != j),
   A_ii = 0: only sums of singular values appear, never differences, so F = I and repeated
   singular values are regular points.  sig_i + sig_j >= 0 by the sign convention and is 0
   only where R itself is not differentiable (an inverted pair cancelling, e.g. sig =
   (1, s, -s)); there the denominator is clamped to 1e-4 * sig_max (2D: * |F|), which keeps the
   gradient finite (bounded by |dR| / (1e-4 sig_max)) but no longer exact.  F = 0
   (where the forward pass returns the constant R = I) adds nothing. */
CQ_HD void cq__polar_vjp_2d_f32(const float *F, const float *R, const float *dR, float *dF)
{
    /* 2D: R is the rotation by theta = atan2(F10 - F01, F00 + F11); r = |(F00 + F11, F10 - F01)|
       = sig_0 + sig_1.  dL/dtheta = <dR, dR/dtheta>, dtheta/d(F00 + F11) = -sin/r,
       dtheta/d(F10 - F01) = cos/r. */
    float a = F[0] + F[3], b = F[2] - F[1];
    float r = sqrtf(a * a + b * b);
    if (!(r > 0)) return;
    float fl = 0.0001f * sqrtf(F[0] * F[0] + F[1] * F[1] + F[2] * F[2] + F[3] * F[3]);
    float c = R[0], s = R[2];
    float gth = c * (dR[2] - dR[1]) - s * (dR[0] + dR[3]);
    float q = gth / (r > fl ? r : fl);
    dF[0] -= s * q; dF[3] -= s * q;
    dF[2] += c * q; dF[1] -= c * q;
}

/* dF += s * d<dK, cofactor(F)>/dF (cofactor as cq__cofactor_2d_f32). */
CQ_HD void cq__cofactor_vjp_2d_f32(const float *F, const float *dK, float s, float *dF)
{
    (void)F;
    dF[0] += s * dK[3]; dF[1] -= s * dK[2]; dF[2] -= s * dK[1]; dF[3] += s * dK[0];
}

/* >>incompressible_vjp_2d_f32: adjoint of cq__incompressible_2d_f32
   (P += s K, s = E p (J-1)^(p-1) / (3(2-2nu)), K = cofactor(F), dJ/dF = K). */
CQ_HD void cq__incompressible_vjp_2d_f32(const float *F, float E, float nu, int p, const float *dP,
                                                 float *dF, float *dE, float *dnu)
{
    float K[4], J = cq__det_2d_f32(F), pw = 1, dpw = 0, g = 0;
    for (int i = 1; i < p; ++i) pw *= J - 1;                 /* (J-1)^(p-1) */
    if (p >= 2) { dpw = (float)(p - 1); for (int i = 2; i < p; ++i) dpw *= J - 1; }   /* its dJ */
    float c = (float)p / (3 * (2 - 2 * nu));
    float s = E * c * pw;
    cq__cofactor_2d_f32(F, K);
    for (int i = 0; i < 4; ++i) g += dP[i] * K[i];
    *dE += g * c * pw;
    *dnu += g * s / (1 - nu);                               /* d/dnu 1/(6(1-nu)) = 1/(6(1-nu)^2) */
    float sj = g * E * c * dpw;
    for (int i = 0; i < 4; ++i) dF[i] += sj * K[i];
    cq__cofactor_vjp_2d_f32(F, dP, s, dF);
}

/* >>stress_vjp_2d_fixed_corotated_f32: adjoint of cq__stress_2d_fixed_corotated_f32: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/fixed_corotated.py. */
CQ_HD void cq__stress_vjp_2d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam, const float *dP,
                                                float *dF, float *dR, float *dmu, float *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const float t0 = lam*(-F[0]*F[3] + F[1]*F[2] + 1);
    const float t1 = 2*mu;
    const float b0 = dP[1]*(F[1] - R[1]) + dP[2]*(F[2] - R[2]);
    const float b1 = -F[0]*dP[3] + F[1]*dP[2] + F[2]*dP[1] - F[3]*dP[0];
    dF[0] += -F[3]*b1*lam + 2*dP[0]*mu - dP[3]*t0;
    dF[1] += F[2]*b1*lam + dP[1]*t1 + dP[2]*t0;
    dF[2] += F[1]*b1*lam + dP[1]*t0 + dP[2]*t1;
    dF[3] += -F[0]*b1*lam - dP[0]*t0 + 2*dP[3]*mu;
    dR[0] += -2*dP[0]*mu;
    dR[1] += -dP[1]*t1;
    dR[2] += -dP[2]*t1;
    dR[3] += -2*dP[3]*mu;
    *dmu += 2*b0 + dP[0]*(2*F[0] - 2*R[0]) + dP[3]*(2*F[3] - 2*R[3]);
    *dlam += b1*(-F[0]*F[3] + F[1]*F[2] + 1);
}

/* >>pk1_vjp_2d_fixed_corotated_f32: adjoint of cq__pk1_2d_fixed_corotated_f32 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_2d_fixed_corotated_f32(const float *F, float E, float nu, int group,
                                               const cq__params_f32 *prm, const float *act_stress,
                                               const float *dP, float *dF, float *dE, float *dnu, float *dact)
{
    float mu, lam, R[4], dR[4], gmu = 0, glam = 0;
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) dR[a] = 0;
    cq__polar_2d_f32(F, R);
    cq__stress_vjp_2d_fixed_corotated_f32(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    cq__polar_vjp_2d_f32(F, R, dR, dF);
    {
        const float op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f32(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const float *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c) {
                float g = 0;
                for (int b = 0; b < 2; ++b) g += dP[a * 2 + b] * sa[c * 2 + b];
                dF[a * 2 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 2; ++c)
                for (int b = 0; b < 2; ++b) {
                    float g = 0;
                    for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * dP[a * 2 + b];
                    dact[c * 2 + b] += g;
                }
    }
}

/* >>stress_vjp_2d_neohookean_f32: adjoint of cq__stress_2d_neohookean_f32: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F; this material has no R, so dR is untouched and may be NULL),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/neohookean.py. */
CQ_HD void cq__stress_vjp_2d_neohookean_f32(const float *F, const float *R, float mu, float lam, const float *dP,
                                                float *dF, float *dR, float *dmu, float *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const float t0 = F[0]*mu;
    const float t1 = F[0]*F[3] - F[1]*F[2];
    const float t2 = (1.0F/((t1)));
    const float t3 = F[3]*mu;
    const float f0 = logf(t1);
    const float t4 = f0*lam*t2;
    const float t5 = F[1]*mu;
    const float t6 = F[2]*mu;
    const float b0 = dP[1]*t2 + dP[2];
    const float b1 = dP[1] + dP[2]*t2;
    const float b2 = F[0]*dP[3] - F[1]*dP[2] - F[2]*dP[1] + F[3]*dP[0];
    const float b3 = b2*lam*t2;
    const float b4 = -dP[0]*t2 + dP[3];
    const float b5 = b2*f0*lam - dP[0]*t3 + dP[1]*t6 + dP[2]*t5 - dP[3]*t0;
    const float b6 = b3/t1 - b5/((t1)*(t1));
    const float b7 = dP[0] - dP[3]*t2;
    dF[0] += F[3]*b6 + b7*mu + dP[3]*t4;
    dF[1] += -F[2]*b6 + b1*mu - dP[2]*t4;
    dF[2] += -F[1]*b6 + b0*mu - dP[1]*t4;
    dF[3] += F[0]*b6 + b4*mu + dP[0]*t4;
    *dmu += F[0]*b7 + F[1]*b1 + F[2]*b0 + F[3]*b4;
    *dlam += b2*f0*t2;
}

/* >>pk1_vjp_2d_neohookean_f32: adjoint of cq__pk1_2d_neohookean_f32 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_2d_neohookean_f32(const float *F, float E, float nu, int group,
                                               const cq__params_f32 *prm, const float *act_stress,
                                               const float *dP, float *dF, float *dE, float *dnu, float *dact)
{
    float mu, lam, R[4], dR[4], gmu = 0, glam = 0;
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) dR[a] = 0;
    for (int a = 0; a < 4; ++a) R[a] = 0;
    cq__stress_vjp_2d_neohookean_f32(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    {
        const float op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f32(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const float *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c) {
                float g = 0;
                for (int b = 0; b < 2; ++b) g += dP[a * 2 + b] * sa[c * 2 + b];
                dF[a * 2 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 2; ++c)
                for (int b = 0; b < 2; ++b) {
                    float g = 0;
                    for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * dP[a * 2 + b];
                    dact[c * 2 + b] += g;
                }
    }
}

/* ------------------------------------------------------------------ transfer adjoints 2D f32
   Reverse order of the forward substep (seed 002; seed 003 appendix A.2): G2P adjoint scatters
   into the grid velocity adjoints, the grid adjoint backs through the wall projection and
   v = p/m + dt g, the P2G adjoint gathers into the particle adjoints.  The grid is recomputed
   from the substep's input state by the caller, never stored across substeps. */

/* dw/dx_p for the quadratic B-spline: grad[a][i] = d w_a(i) / d x_a (times inv_dx). */
CQ_HD void cq__weight_grads_2d_f32(const float *fx, float inv_dx, float (*dw)[3])
{
    for (int a = 0; a < 2; ++a) {
        dw[a][0] = -((float)1.5 - fx[a]) * inv_dx;
        dw[a][1] = -2 * (fx[a] - 1) * inv_dx;
        dw[a][2] = (fx[a] - (float)0.5) * inv_dx;
    }
}

/* >>grid_adj_2d_f32: adjoint of the wall projection (cq__boundary_2d_f32).
   v0: the velocity BEFORE the projection; vb: dL/d(projected v) on entry, dL/dv0 on return.
   Friction follows seed 003 appendix B (B9-B15, whose dl_t* / dl_n bookkeeping is done here by
   direct differentiation of B3-B6). */
CQ_HD void cq__boundary_adj_2d_f32(const int *c, const cq__params_f32 *prm, const float *v0, float *vb)
{
    float vs[3][2];   /* velocity before each axis' projection */
    int axis_n[2], last = 2;
    for (int b = 0; b < 2; ++b) vs[0][b] = v0[b];
    for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) vs[a + 1][b] = vs[a][b];
        axis_n[a] = cq__wall_normal_2d_f32(c, a, prm);
        if (axis_n[a] && cq__bc_axis_2d_f32(a, (float)axis_n[a], prm, vs[a + 1])) { last = a; break; }
    }
    if (last < 2) { for (int b = 0; b < 2; ++b) vb[b] = 0; return; }   /* sticky wall node */
    for (int a = 2 - 1; a >= 0; --a) {
        if (!axis_n[a]) continue;
        const float *v = vs[a];
        float n = (float)axis_n[a], ln = v[a] * n;
        switch (prm->boundary) {
        case CQ__BC_SLIP:
            vb[a] = 0;
            break;
        case CQ__BC_SEPARATE:
            if (ln < 0) vb[a] = 0;
            break;
        default: /* CQ__BC_FRICTION */
            if (ln < 0) {
                float s2 = 0, sc_b = 0;
                for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
                float r = sqrtf(s2), lt = r + 1e-30f;
                float lts = lt + prm->friction * ln;
                int open = lts > 0;
                if (!open) lts = 0;
                float scale = lts / lt;
                for (int b = 0; b < 2; ++b) if (b != a) sc_b += vb[b] * v[b];
                float lts_b = sc_b / lt, lt_b = -sc_b * lts / (lt * lt);
                if (open) lt_b += lts_b;
                float ln_b = open ? prm->friction * lts_b : 0;
                for (int b = 0; b < 2; ++b)
                    if (b != a) vb[b] = vb[b] * scale + (r > 0 ? lt_b * v[b] / r : 0);
                vb[a] = ln_b * n;
            }
            break;
        }
    }
}

/* Grid-update adjoint for one node: v = bc(p/m + dt g).  gp: momentum (pre-projection) of the
   forward pass; gv_adj: dL/dv; writes dL/dp and dL/dm of the node. */
CQ_HD void cq__grid_adj_2d_f32(int node, const cq__params_f32 *prm, const float *gm,
                                                   const float *gp, const float *gv_adj, float *gp_adj, float *gm_adj)
{
    float m = gm[node], v0[2], vb[2];
    int c[2];
    if (!(m > 0)) {
        for (int a = 0; a < 2; ++a) gp_adj[(long)node * 2 + a] = 0;
        gm_adj[node] = 0;
        return;
    }
    c[0] = node / prm->res[1]; c[1] = node % prm->res[1];
    float inv_m = 1 / m, mb = 0;
    for (int a = 0; a < 2; ++a) {
        v0[a] = gp[(long)node * 2 + a] * inv_m + prm->dt * prm->gravity[a];
        vb[a] = gv_adj[(long)node * 2 + a];
    }
    cq__boundary_adj_2d_f32(c, prm, v0, vb);
    for (int a = 0; a < 2; ++a) {
        gp_adj[(long)node * 2 + a] = vb[a] * inv_m;
        mb -= vb[a] * gp[(long)node * 2 + a] * inv_m * inv_m;
    }
    gm_adj[node] = mb;
}

/* >>g2p_adj_2d_f32: adjoint of G2P (eqs 8-11) for particle p.  `s` is the substep's
   input state, g the recomputed grid (v = projected velocity), `ao` the adjoint of the output
   state.  Scatters dL/dv_i into gv_adj; SETS ai.x and ai.F to the G2P part of the input
   state's adjoint (the P2G adjoint adds its part after). */
CQ_HD void cq__g2p_adj_2d_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                                  cq__gview_f32 g, cq__pview_f32 ao, cq__pview_f32 ai,
                                                  float *gv_adj)
{
    int base[2];
    float fx[2], w[2][3], dw[2][3], xp[2], Fp[4], nC[4] = {0};
    float vbt[2], Cbt[4], xb[2];
    const float c4 = 4 * prm->inv_dx * prm->inv_dx, dt = prm->dt;
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f32(fx, prm->inv_dx, dw);
    /* x' = x + dt v'  ->  vbar' += dt xbar';   F' = (I + dt C') F  ->  Cbar' += dt Fbar' F^T */
    for (int a = 0; a < 2; ++a) {
        xb[a] = ao.x[(long)p * 2 + a];
        vbt[a] = ao.v[(long)p * 2 + a] + dt * xb[a];
        for (int b = 0; b < 2; ++b) {
            float acc = ao.C[(long)p * 4 + a * 2 + b];
            for (int k = 0; k < 2; ++k) acc += dt * ao.F[(long)p * 4 + a * 2 + k] * Fp[b * 2 + k];
            Cbt[a * 2 + b] = acc;
        }
    }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const float gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        float dpos[2], sdot = 0;
        const float *vi = g.v + idx * 2;
        for (int a = 0; a < 2; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            float cd = 0, vc = 0;   /* (Cbar' dpos)_a, (Cbar'^T v_i)_a */
            for (int b = 0; b < 2; ++b) {
                cd += Cbt[a * 2 + b] * dpos[b];
                vc += Cbt[b * 2 + a] * vi[b];
                nC[a * 2 + b] += c4 * wt * vi[a] * dpos[b];
            }
            CQ__ATOMIC_ADD(&gv_adj[idx * 2 + a], wt * (vbt[a] + c4 * cd));
            sdot += vi[a] * (vbt[a] + c4 * cd);
            xb[a] -= c4 * wt * vc;            /* dpos = x_i - x_p */
        }
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];   /* through the weights */
    }
    for (int a = 0; a < 2; ++a) ai.x[(long)p * 2 + a] = xb[a];
    for (int a = 0; a < 2; ++a)       /* Fbar = (I + dt C')^T Fbar' */
        for (int b = 0; b < 2; ++b) {
            float acc = ao.F[(long)p * 4 + a * 2 + b];
            for (int k = 0; k < 2; ++k) acc += dt * nC[k * 2 + a] * ao.F[(long)p * 4 + k * 2 + b];
            ai.F[(long)p * 4 + a * 2 + b] = acc;
        }
}

/* >>p2g_adj_2d_fixed_corotated_f32: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_2d_fixed_corotated_f32(int p, const cq__params_f32 *prm,
        cq__pview_f32 s, const float *gp_adj, const float *gm_adj, cq__pview_f32 ai,
        cq__pview_f32 pg, float *dact)
{
    int base[2];
    float fx[2], w[2][3], dw[2][3], xp[2], vp[2], Fp[4], Pp[4], G[4], Gb[4] = {0};
    float xb[2] = {0}, vb[2] = {0}, Pb[4], Fb[4] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 2; ++a) { xp[a] = s.x[(long)p * 2 + a]; vp[a] = s.v[(long)p * 2 + a]; }
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f32(fx, prm->inv_dx, dw);
    cq__pk1_2d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const float mass = s.mass[p], vol = s.vol[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            float pf = 0;
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * vol * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const float gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        float dpos[2];
        const float *pb = gp_adj + idx * 2;
        const float mbi = gm_adj[idx];
        float sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 2; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            float mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 2; ++b) {
                mom += G[a * 2 + b] * dpos[b];
                Gb[a * 2 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 2 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    float volb = 0;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            float pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 2; ++c) {
                pbab += Gb[a * 2 + c] * Fp[c * 2 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 2 + a] * Pp[c * 2 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            Pb[a * 2 + b] = ks * vol * pbab;
            Fb[a * 2 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 2 + b];
            mb += s.C[(long)p * 4 + a * 2 + b] * Gb[a * 2 + b];
        }
    for (int a = 0; a < 4; ++a) dact[a] = 0;
    cq__pk1_vjp_2d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] += xb[a];
        ai.v[(long)p * 2 + a] = vb[a];
    }
    for (int a = 0; a < 4; ++a) {
        ai.F[(long)p * 4 + a] += Fb[a];
        ai.C[(long)p * 4 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* >>p2g_adj_2d_neohookean_f32: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_2d_neohookean_f32(int p, const cq__params_f32 *prm,
        cq__pview_f32 s, const float *gp_adj, const float *gm_adj, cq__pview_f32 ai,
        cq__pview_f32 pg, float *dact)
{
    int base[2];
    float fx[2], w[2][3], dw[2][3], xp[2], vp[2], Fp[4], Pp[4], G[4], Gb[4] = {0};
    float xb[2] = {0}, vb[2] = {0}, Pb[4], Fb[4] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 2; ++a) { xp[a] = s.x[(long)p * 2 + a]; vp[a] = s.v[(long)p * 2 + a]; }
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f32(fx, prm->inv_dx, dw);
    cq__pk1_2d_neohookean_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const float mass = s.mass[p], vol = s.vol[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            float pf = 0;
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * vol * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const float wt = w[0][i] * w[1][j];
        const float gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        float dpos[2];
        const float *pb = gp_adj + idx * 2;
        const float mbi = gm_adj[idx];
        float sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 2; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            float mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 2; ++b) {
                mom += G[a * 2 + b] * dpos[b];
                Gb[a * 2 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 2 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    float volb = 0;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            float pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 2; ++c) {
                pbab += Gb[a * 2 + c] * Fp[c * 2 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 2 + a] * Pp[c * 2 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            Pb[a * 2 + b] = ks * vol * pbab;
            Fb[a * 2 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 2 + b];
            mb += s.C[(long)p * 4 + a * 2 + b] * Gb[a * 2 + b];
        }
    for (int a = 0; a < 4; ++a) dact[a] = 0;
    cq__pk1_vjp_2d_neohookean_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] += xb[a];
        ai.v[(long)p * 2 + a] = vb[a];
    }
    for (int a = 0; a < 4; ++a) {
        ai.F[(long)p * 4 + a] += Fb[a];
        ai.C[(long)p * 4 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* ======================================================================== 2D f64 adjoint */
/* >>polar_vjp_2d_f64: dF += dL/dF given dR = dL/dR, for R the polar rotation of F
   (cq__polar_2d_f64).  With F = U diag(sig) V^T (signed sig, R = U V^T) and
   H = U^T dR V, the result is  U A V^T,  A_ij = (H_ij - H_ji) / (sig_i + sig_j)  (i != j),
   A_ii = 0: only sums of singular values appear, never differences, so F = I and repeated
   singular values are regular points.  sig_i + sig_j >= 0 by the sign convention and is 0
   only where R itself is not differentiable (an inverted pair cancelling, e.g. sig =
   (1, s, -s)); there the denominator is clamped to 1e-6 * sig_max (2D: * |F|), which keeps the
   gradient finite (bounded by |dR| / (1e-6 sig_max)) but no longer exact.  F = 0
   (where the forward pass returns the constant R = I) adds nothing. */
CQ_HD void cq__polar_vjp_2d_f64(const double *F, const double *R, const double *dR, double *dF)
{
    /* 2D: R is the rotation by theta = atan2(F10 - F01, F00 + F11); r = |(F00 + F11, F10 - F01)|
       = sig_0 + sig_1.  dL/dtheta = <dR, dR/dtheta>, dtheta/d(F00 + F11) = -sin/r,
       dtheta/d(F10 - F01) = cos/r. */
    double a = F[0] + F[3], b = F[2] - F[1];
    double r = sqrt(a * a + b * b);
    if (!(r > 0)) return;
    double fl = 1e-06 * sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2] + F[3] * F[3]);
    double c = R[0], s = R[2];
    double gth = c * (dR[2] - dR[1]) - s * (dR[0] + dR[3]);
    double q = gth / (r > fl ? r : fl);
    dF[0] -= s * q; dF[3] -= s * q;
    dF[2] += c * q; dF[1] -= c * q;
}

/* dF += s * d<dK, cofactor(F)>/dF (cofactor as cq__cofactor_2d_f64). */
CQ_HD void cq__cofactor_vjp_2d_f64(const double *F, const double *dK, double s, double *dF)
{
    (void)F;
    dF[0] += s * dK[3]; dF[1] -= s * dK[2]; dF[2] -= s * dK[1]; dF[3] += s * dK[0];
}

/* >>incompressible_vjp_2d_f64: adjoint of cq__incompressible_2d_f64
   (P += s K, s = E p (J-1)^(p-1) / (3(2-2nu)), K = cofactor(F), dJ/dF = K). */
CQ_HD void cq__incompressible_vjp_2d_f64(const double *F, double E, double nu, int p, const double *dP,
                                                 double *dF, double *dE, double *dnu)
{
    double K[4], J = cq__det_2d_f64(F), pw = 1, dpw = 0, g = 0;
    for (int i = 1; i < p; ++i) pw *= J - 1;                 /* (J-1)^(p-1) */
    if (p >= 2) { dpw = (double)(p - 1); for (int i = 2; i < p; ++i) dpw *= J - 1; }   /* its dJ */
    double c = (double)p / (3 * (2 - 2 * nu));
    double s = E * c * pw;
    cq__cofactor_2d_f64(F, K);
    for (int i = 0; i < 4; ++i) g += dP[i] * K[i];
    *dE += g * c * pw;
    *dnu += g * s / (1 - nu);                               /* d/dnu 1/(6(1-nu)) = 1/(6(1-nu)^2) */
    double sj = g * E * c * dpw;
    for (int i = 0; i < 4; ++i) dF[i] += sj * K[i];
    cq__cofactor_vjp_2d_f64(F, dP, s, dF);
}

/* >>stress_vjp_2d_fixed_corotated_f64: adjoint of cq__stress_2d_fixed_corotated_f64: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/fixed_corotated.py. */
CQ_HD void cq__stress_vjp_2d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam, const double *dP,
                                                double *dF, double *dR, double *dmu, double *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const double t0 = lam*(-F[0]*F[3] + F[1]*F[2] + 1);
    const double t1 = 2*mu;
    const double b0 = dP[1]*(F[1] - R[1]) + dP[2]*(F[2] - R[2]);
    const double b1 = -F[0]*dP[3] + F[1]*dP[2] + F[2]*dP[1] - F[3]*dP[0];
    dF[0] += -F[3]*b1*lam + 2*dP[0]*mu - dP[3]*t0;
    dF[1] += F[2]*b1*lam + dP[1]*t1 + dP[2]*t0;
    dF[2] += F[1]*b1*lam + dP[1]*t0 + dP[2]*t1;
    dF[3] += -F[0]*b1*lam - dP[0]*t0 + 2*dP[3]*mu;
    dR[0] += -2*dP[0]*mu;
    dR[1] += -dP[1]*t1;
    dR[2] += -dP[2]*t1;
    dR[3] += -2*dP[3]*mu;
    *dmu += 2*b0 + dP[0]*(2*F[0] - 2*R[0]) + dP[3]*(2*F[3] - 2*R[3]);
    *dlam += b1*(-F[0]*F[3] + F[1]*F[2] + 1);
}

/* >>pk1_vjp_2d_fixed_corotated_f64: adjoint of cq__pk1_2d_fixed_corotated_f64 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_2d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *dP, double *dF, double *dE, double *dnu, double *dact)
{
    double mu, lam, R[4], dR[4], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) dR[a] = 0;
    cq__polar_2d_f64(F, R);
    cq__stress_vjp_2d_fixed_corotated_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    cq__polar_vjp_2d_f64(F, R, dR, dF);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f64(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const double *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c) {
                double g = 0;
                for (int b = 0; b < 2; ++b) g += dP[a * 2 + b] * sa[c * 2 + b];
                dF[a * 2 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 2; ++c)
                for (int b = 0; b < 2; ++b) {
                    double g = 0;
                    for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * dP[a * 2 + b];
                    dact[c * 2 + b] += g;
                }
    }
}

/* >>stress_vjp_2d_neohookean_f64: adjoint of cq__stress_2d_neohookean_f64: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F; this material has no R, so dR is untouched and may be NULL),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/neohookean.py. */
CQ_HD void cq__stress_vjp_2d_neohookean_f64(const double *F, const double *R, double mu, double lam, const double *dP,
                                                double *dF, double *dR, double *dmu, double *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const double t0 = F[0]*mu;
    const double t1 = F[0]*F[3] - F[1]*F[2];
    const double t2 = (1.0/((t1)));
    const double t3 = F[3]*mu;
    const double f0 = log(t1);
    const double t4 = f0*lam*t2;
    const double t5 = F[1]*mu;
    const double t6 = F[2]*mu;
    const double b0 = dP[1]*t2 + dP[2];
    const double b1 = dP[1] + dP[2]*t2;
    const double b2 = F[0]*dP[3] - F[1]*dP[2] - F[2]*dP[1] + F[3]*dP[0];
    const double b3 = b2*lam*t2;
    const double b4 = -dP[0]*t2 + dP[3];
    const double b5 = b2*f0*lam - dP[0]*t3 + dP[1]*t6 + dP[2]*t5 - dP[3]*t0;
    const double b6 = b3/t1 - b5/((t1)*(t1));
    const double b7 = dP[0] - dP[3]*t2;
    dF[0] += F[3]*b6 + b7*mu + dP[3]*t4;
    dF[1] += -F[2]*b6 + b1*mu - dP[2]*t4;
    dF[2] += -F[1]*b6 + b0*mu - dP[1]*t4;
    dF[3] += F[0]*b6 + b4*mu + dP[0]*t4;
    *dmu += F[0]*b7 + F[1]*b1 + F[2]*b0 + F[3]*b4;
    *dlam += b2*f0*t2;
}

/* >>pk1_vjp_2d_neohookean_f64: adjoint of cq__pk1_2d_neohookean_f64 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_2d_neohookean_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *dP, double *dF, double *dE, double *dnu, double *dact)
{
    double mu, lam, R[4], dR[4], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 4; ++a) dR[a] = 0;
    for (int a = 0; a < 4; ++a) R[a] = 0;
    cq__stress_vjp_2d_neohookean_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f64(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const double *sa = act_stress + (long)group * 4;
        for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c) {
                double g = 0;
                for (int b = 0; b < 2; ++b) g += dP[a * 2 + b] * sa[c * 2 + b];
                dF[a * 2 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 2; ++c)
                for (int b = 0; b < 2; ++b) {
                    double g = 0;
                    for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * dP[a * 2 + b];
                    dact[c * 2 + b] += g;
                }
    }
}

/* ------------------------------------------------------------------ transfer adjoints 2D f64
   Reverse order of the forward substep (seed 002; seed 003 appendix A.2): G2P adjoint scatters
   into the grid velocity adjoints, the grid adjoint backs through the wall projection and
   v = p/m + dt g, the P2G adjoint gathers into the particle adjoints.  The grid is recomputed
   from the substep's input state by the caller, never stored across substeps. */

/* dw/dx_p for the quadratic B-spline: grad[a][i] = d w_a(i) / d x_a (times inv_dx). */
CQ_HD void cq__weight_grads_2d_f64(const double *fx, double inv_dx, double (*dw)[3])
{
    for (int a = 0; a < 2; ++a) {
        dw[a][0] = -((double)1.5 - fx[a]) * inv_dx;
        dw[a][1] = -2 * (fx[a] - 1) * inv_dx;
        dw[a][2] = (fx[a] - (double)0.5) * inv_dx;
    }
}

/* >>grid_adj_2d_f64: adjoint of the wall projection (cq__boundary_2d_f64).
   v0: the velocity BEFORE the projection; vb: dL/d(projected v) on entry, dL/dv0 on return.
   Friction follows seed 003 appendix B (B9-B15, whose dl_t* / dl_n bookkeeping is done here by
   direct differentiation of B3-B6). */
CQ_HD void cq__boundary_adj_2d_f64(const int *c, const cq__params_f64 *prm, const double *v0, double *vb)
{
    double vs[3][2];   /* velocity before each axis' projection */
    int axis_n[2], last = 2;
    for (int b = 0; b < 2; ++b) vs[0][b] = v0[b];
    for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) vs[a + 1][b] = vs[a][b];
        axis_n[a] = cq__wall_normal_2d_f64(c, a, prm);
        if (axis_n[a] && cq__bc_axis_2d_f64(a, (double)axis_n[a], prm, vs[a + 1])) { last = a; break; }
    }
    if (last < 2) { for (int b = 0; b < 2; ++b) vb[b] = 0; return; }   /* sticky wall node */
    for (int a = 2 - 1; a >= 0; --a) {
        if (!axis_n[a]) continue;
        const double *v = vs[a];
        double n = (double)axis_n[a], ln = v[a] * n;
        switch (prm->boundary) {
        case CQ__BC_SLIP:
            vb[a] = 0;
            break;
        case CQ__BC_SEPARATE:
            if (ln < 0) vb[a] = 0;
            break;
        default: /* CQ__BC_FRICTION */
            if (ln < 0) {
                double s2 = 0, sc_b = 0;
                for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
                double r = sqrt(s2), lt = r + 1e-300;
                double lts = lt + prm->friction * ln;
                int open = lts > 0;
                if (!open) lts = 0;
                double scale = lts / lt;
                for (int b = 0; b < 2; ++b) if (b != a) sc_b += vb[b] * v[b];
                double lts_b = sc_b / lt, lt_b = -sc_b * lts / (lt * lt);
                if (open) lt_b += lts_b;
                double ln_b = open ? prm->friction * lts_b : 0;
                for (int b = 0; b < 2; ++b)
                    if (b != a) vb[b] = vb[b] * scale + (r > 0 ? lt_b * v[b] / r : 0);
                vb[a] = ln_b * n;
            }
            break;
        }
    }
}

/* Grid-update adjoint for one node: v = bc(p/m + dt g).  gp: momentum (pre-projection) of the
   forward pass; gv_adj: dL/dv; writes dL/dp and dL/dm of the node. */
CQ_HD void cq__grid_adj_2d_f64(int node, const cq__params_f64 *prm, const double *gm,
                                                   const double *gp, const double *gv_adj, double *gp_adj, double *gm_adj)
{
    double m = gm[node], v0[2], vb[2];
    int c[2];
    if (!(m > 0)) {
        for (int a = 0; a < 2; ++a) gp_adj[(long)node * 2 + a] = 0;
        gm_adj[node] = 0;
        return;
    }
    c[0] = node / prm->res[1]; c[1] = node % prm->res[1];
    double inv_m = 1 / m, mb = 0;
    for (int a = 0; a < 2; ++a) {
        v0[a] = gp[(long)node * 2 + a] * inv_m + prm->dt * prm->gravity[a];
        vb[a] = gv_adj[(long)node * 2 + a];
    }
    cq__boundary_adj_2d_f64(c, prm, v0, vb);
    for (int a = 0; a < 2; ++a) {
        gp_adj[(long)node * 2 + a] = vb[a] * inv_m;
        mb -= vb[a] * gp[(long)node * 2 + a] * inv_m * inv_m;
    }
    gm_adj[node] = mb;
}

/* >>g2p_adj_2d_f64: adjoint of G2P (eqs 8-11) for particle p.  `s` is the substep's
   input state, g the recomputed grid (v = projected velocity), `ao` the adjoint of the output
   state.  Scatters dL/dv_i into gv_adj; SETS ai.x and ai.F to the G2P part of the input
   state's adjoint (the P2G adjoint adds its part after). */
CQ_HD void cq__g2p_adj_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                                  cq__gview_f64 g, cq__pview_f64 ao, cq__pview_f64 ai,
                                                  double *gv_adj)
{
    int base[2];
    double fx[2], w[2][3], dw[2][3], xp[2], Fp[4], nC[4] = {0};
    double vbt[2], Cbt[4], xb[2];
    const double c4 = 4 * prm->inv_dx * prm->inv_dx, dt = prm->dt;
    for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f64(fx, prm->inv_dx, dw);
    /* x' = x + dt v'  ->  vbar' += dt xbar';   F' = (I + dt C') F  ->  Cbar' += dt Fbar' F^T */
    for (int a = 0; a < 2; ++a) {
        xb[a] = ao.x[(long)p * 2 + a];
        vbt[a] = ao.v[(long)p * 2 + a] + dt * xb[a];
        for (int b = 0; b < 2; ++b) {
            double acc = ao.C[(long)p * 4 + a * 2 + b];
            for (int k = 0; k < 2; ++k) acc += dt * ao.F[(long)p * 4 + a * 2 + k] * Fp[b * 2 + k];
            Cbt[a * 2 + b] = acc;
        }
    }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const double gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        double dpos[2], sdot = 0;
        const double *vi = g.v + idx * 2;
        for (int a = 0; a < 2; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            double cd = 0, vc = 0;   /* (Cbar' dpos)_a, (Cbar'^T v_i)_a */
            for (int b = 0; b < 2; ++b) {
                cd += Cbt[a * 2 + b] * dpos[b];
                vc += Cbt[b * 2 + a] * vi[b];
                nC[a * 2 + b] += c4 * wt * vi[a] * dpos[b];
            }
            CQ__ATOMIC_ADD(&gv_adj[idx * 2 + a], wt * (vbt[a] + c4 * cd));
            sdot += vi[a] * (vbt[a] + c4 * cd);
            xb[a] -= c4 * wt * vc;            /* dpos = x_i - x_p */
        }
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];   /* through the weights */
    }
    for (int a = 0; a < 2; ++a) ai.x[(long)p * 2 + a] = xb[a];
    for (int a = 0; a < 2; ++a)       /* Fbar = (I + dt C')^T Fbar' */
        for (int b = 0; b < 2; ++b) {
            double acc = ao.F[(long)p * 4 + a * 2 + b];
            for (int k = 0; k < 2; ++k) acc += dt * nC[k * 2 + a] * ao.F[(long)p * 4 + k * 2 + b];
            ai.F[(long)p * 4 + a * 2 + b] = acc;
        }
}

/* >>p2g_adj_2d_fixed_corotated_f64: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *gp_adj, const double *gm_adj, cq__pview_f64 ai,
        cq__pview_f64 pg, double *dact)
{
    int base[2];
    double fx[2], w[2][3], dw[2][3], xp[2], vp[2], Fp[4], Pp[4], G[4], Gb[4] = {0};
    double xb[2] = {0}, vb[2] = {0}, Pb[4], Fb[4] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 2; ++a) { xp[a] = s.x[(long)p * 2 + a]; vp[a] = s.v[(long)p * 2 + a]; }
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f64(fx, prm->inv_dx, dw);
    cq__pk1_2d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const double mass = s.mass[p], vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            double pf = 0;
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * vol * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const double gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        double dpos[2];
        const double *pb = gp_adj + idx * 2;
        const double mbi = gm_adj[idx];
        double sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 2; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            double mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 2; ++b) {
                mom += G[a * 2 + b] * dpos[b];
                Gb[a * 2 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 2 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    double volb = 0;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            double pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 2; ++c) {
                pbab += Gb[a * 2 + c] * Fp[c * 2 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 2 + a] * Pp[c * 2 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            Pb[a * 2 + b] = ks * vol * pbab;
            Fb[a * 2 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 2 + b];
            mb += s.C[(long)p * 4 + a * 2 + b] * Gb[a * 2 + b];
        }
    for (int a = 0; a < 4; ++a) dact[a] = 0;
    cq__pk1_vjp_2d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] += xb[a];
        ai.v[(long)p * 2 + a] = vb[a];
    }
    for (int a = 0; a < 4; ++a) {
        ai.F[(long)p * 4 + a] += Fb[a];
        ai.C[(long)p * 4 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* >>p2g_adj_2d_neohookean_f64: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_2d_neohookean_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *gp_adj, const double *gm_adj, cq__pview_f64 ai,
        cq__pview_f64 pg, double *dact)
{
    int base[2];
    double fx[2], w[2][3], dw[2][3], xp[2], vp[2], Fp[4], Pp[4], G[4], Gb[4] = {0};
    double xb[2] = {0}, vb[2] = {0}, Pb[4], Fb[4] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 2; ++a) { xp[a] = s.x[(long)p * 2 + a]; vp[a] = s.v[(long)p * 2 + a]; }
    for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f64(fx, prm->inv_dx, dw);
    cq__pk1_2d_neohookean_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const double mass = s.mass[p], vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            double pf = 0;
            for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * vol * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const double gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = (long)(base[0] + i) * prm->res[1] + (base[1] + j);

        double dpos[2];
        const double *pb = gp_adj + idx * 2;
        const double mbi = gm_adj[idx];
        double sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 2; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 2; ++a) {
            double mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 2; ++b) {
                mom += G[a * 2 + b] * dpos[b];
                Gb[a * 2 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 2 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 2; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    double volb = 0;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            double pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 2; ++c) {
                pbab += Gb[a * 2 + c] * Fp[c * 2 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 2 + a] * Pp[c * 2 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            Pb[a * 2 + b] = ks * vol * pbab;
            Fb[a * 2 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 2 + b];
            mb += s.C[(long)p * 4 + a * 2 + b] * Gb[a * 2 + b];
        }
    for (int a = 0; a < 4; ++a) dact[a] = 0;
    cq__pk1_vjp_2d_neohookean_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] += xb[a];
        ai.v[(long)p * 2 + a] = vb[a];
    }
    for (int a = 0; a < 4; ++a) {
        ai.F[(long)p * 4 + a] += Fb[a];
        ai.C[(long)p * 4 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* ======================================================================== 3D f32 adjoint */
/* >>polar_vjp_3d_f32: dF += dL/dF given dR = dL/dR, for R the polar rotation of F
   (cq__polar_3d_f32).  With F = U diag(sig) V^T (signed sig, R = U V^T) and
   H = U^T dR V, the result is  U A V^T,  A_ij = (H_ij - H_ji) / (sig_i + sig_j)  (i != j),
   A_ii = 0: only sums of singular values appear, never differences, so F = I and repeated
   singular values are regular points.  sig_i + sig_j >= 0 by the sign convention and is 0
   only where R itself is not differentiable (an inverted pair cancelling, e.g. sig =
   (1, s, -s)); there the denominator is clamped to 1e-4 * sig_max (2D: * |F|), which keeps the
   gradient finite (bounded by |dR| / (1e-4 sig_max)) but no longer exact.  F = 0
   (where the forward pass returns the constant R = I) adds nothing. */
CQ_HD void cq__polar_vjp_3d_f32(const float *F, const float *R, const float *dR, float *dF)
{
    float U[9], sig[3], V[9], H[9], A[9];
    (void)R;
    cq__svd_3d_f32(F, U, sig, V);
    if (!(sig[0] > 0)) return;
    float fl = 0.0001f * sig[0];
    for (int i = 0; i < 3; ++i)       /* H = U^T dR V */
        for (int j = 0; j < 3; ++j) {
            float h = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l) h += U[k * 3 + i] * dR[k * 3 + l] * V[l * 3 + j];
            H[i * 3 + j] = h;
        }
    for (int i = 0; i < 3; ++i) {
        A[i * 3 + i] = 0;
        for (int j = i + 1; j < 3; ++j) {
            float d = sig[i] + sig[j];
            if (!(d > fl)) d = fl;    /* also catches rounding below 0 */
            float x = (H[i * 3 + j] - H[j * 3 + i]) / d;
            A[i * 3 + j] = x; A[j * 3 + i] = -x;
        }
    }
    for (int i = 0; i < 3; ++i)       /* dF += U A V^T */
        for (int j = 0; j < 3; ++j) {
            float g = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l) g += U[i * 3 + k] * A[k * 3 + l] * V[j * 3 + l];
            dF[i * 3 + j] += g;
        }
}

/* dF += s * d<dK, cofactor(F)>/dF (cofactor as cq__cofactor_3d_f32). */
CQ_HD void cq__cofactor_vjp_3d_f32(const float *F, const float *dK, float s, float *dF)
{
    /* K_ij = F[i1][j1] F[i2][j2] - F[i1][j2] F[i2][j1], i1 = i+1, i2 = i+2 (mod 3) */
    for (int i = 0; i < 3; ++i) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            float a = s * dK[i * 3 + j];
            dF[i1 * 3 + j1] += a * F[i2 * 3 + j2]; dF[i2 * 3 + j2] += a * F[i1 * 3 + j1];
            dF[i1 * 3 + j2] -= a * F[i2 * 3 + j1]; dF[i2 * 3 + j1] -= a * F[i1 * 3 + j2];
        }
    }
}

/* >>incompressible_vjp_3d_f32: adjoint of cq__incompressible_3d_f32
   (P += s K, s = E p (J-1)^(p-1) / (3(2-2nu)), K = cofactor(F), dJ/dF = K). */
CQ_HD void cq__incompressible_vjp_3d_f32(const float *F, float E, float nu, int p, const float *dP,
                                                 float *dF, float *dE, float *dnu)
{
    float K[9], J = cq__det_3d_f32(F), pw = 1, dpw = 0, g = 0;
    for (int i = 1; i < p; ++i) pw *= J - 1;                 /* (J-1)^(p-1) */
    if (p >= 2) { dpw = (float)(p - 1); for (int i = 2; i < p; ++i) dpw *= J - 1; }   /* its dJ */
    float c = (float)p / (3 * (2 - 2 * nu));
    float s = E * c * pw;
    cq__cofactor_3d_f32(F, K);
    for (int i = 0; i < 9; ++i) g += dP[i] * K[i];
    *dE += g * c * pw;
    *dnu += g * s / (1 - nu);                               /* d/dnu 1/(6(1-nu)) = 1/(6(1-nu)^2) */
    float sj = g * E * c * dpw;
    for (int i = 0; i < 9; ++i) dF[i] += sj * K[i];
    cq__cofactor_vjp_3d_f32(F, dP, s, dF);
}

/* >>stress_vjp_3d_fixed_corotated_f32: adjoint of cq__stress_3d_fixed_corotated_f32: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/fixed_corotated.py. */
CQ_HD void cq__stress_vjp_3d_fixed_corotated_f32(const float *F, const float *R, float mu, float lam, const float *dP,
                                                float *dF, float *dR, float *dmu, float *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const float t0 = F[4]*F[8];
    const float t1 = F[5]*F[7];
    const float t2 = F[3]*F[8];
    const float t3 = F[4]*F[6];
    const float t4 = F[5]*F[6];
    const float t5 = F[3]*F[7];
    const float t6 = lam*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
    const float t7 = 2*mu;
    const float b0 = dP[1]*(F[1] - R[1]) + dP[3]*(F[3] - R[3]) + dP[5]*(F[5] - R[5]) + dP[7]*(F[7] - R[7]);
    const float b1 = dP[0]*(-t0 + t1) + dP[1]*(t2 - t4) + dP[2]*(t3 - t5) + dP[3]*(F[1]*F[8] - F[2]*F[7]) + dP[4]*(-F[0]*F[8] + F[2]*F[6]) + dP[5]*(F[0]*F[7] - F[1]*F[6]) + dP[6]*(-F[1]*F[5] + F[2]*F[4]) + dP[7]*(F[0]*F[5] - F[2]*F[3]) + dP[8]*(-F[0]*F[4] + F[1]*F[3]);
    const float b2 = -F[2]*b1*lam - dP[2]*t6;
    const float b3 = -F[1]*b1*lam - dP[1]*t6;
    const float b4 = F[2]*b1*lam + dP[2]*t6;
    const float b5 = F[1]*b1*lam + dP[1]*t6;
    const float b6 = F[0]*b1*lam + dP[0]*t6;
    const float b7 = -F[0]*b1*lam - dP[0]*t6;
    dF[0] += -F[4]*dP[8]*t6 + F[5]*dP[7]*t6 + F[7]*dP[5]*t6 - F[8]*dP[4]*t6 + b1*lam*(-t0 + t1) + 2*dP[0]*mu;
    dF[1] += F[3]*dP[8]*t6 - F[5]*dP[6]*t6 - F[6]*dP[5]*t6 + F[8]*dP[3]*t6 + b1*lam*(t2 - t4) + dP[1]*t7;
    dF[2] += -F[3]*dP[7]*t6 + F[4]*dP[6]*t6 + F[6]*dP[4]*t6 - F[7]*dP[3]*t6 + b1*lam*(t3 - t5) + 2*dP[2]*mu;
    dF[3] += F[1]*dP[8]*t6 - F[2]*dP[7]*t6 + F[7]*b2 + F[8]*b5 + dP[3]*t7;
    dF[4] += -F[0]*dP[8]*t6 + F[2]*dP[6]*t6 + F[6]*b4 + F[8]*b7 + 2*dP[4]*mu;
    dF[5] += F[0]*dP[7]*t6 - F[1]*dP[6]*t6 + F[6]*b3 + F[7]*b6 + dP[5]*t7;
    dF[6] += -F[1]*dP[5]*t6 + F[2]*dP[4]*t6 + F[4]*b4 + F[5]*b3 + 2*dP[6]*mu;
    dF[7] += F[0]*dP[5]*t6 - F[2]*dP[3]*t6 + F[3]*b2 + F[5]*b6 + dP[7]*t7;
    dF[8] += -F[0]*dP[4]*t6 + F[1]*dP[3]*t6 + F[3]*b5 + F[4]*b7 + 2*dP[8]*mu;
    dR[0] += -2*dP[0]*mu;
    dR[1] += -dP[1]*t7;
    dR[2] += -2*dP[2]*mu;
    dR[3] += -dP[3]*t7;
    dR[4] += -2*dP[4]*mu;
    dR[5] += -dP[5]*t7;
    dR[6] += -2*dP[6]*mu;
    dR[7] += -dP[7]*t7;
    dR[8] += -2*dP[8]*mu;
    *dmu += 2*b0 + dP[0]*(2*F[0] - 2*R[0]) + dP[2]*(2*F[2] - 2*R[2]) + dP[4]*(2*F[4] - 2*R[4]) + dP[6]*(2*F[6] - 2*R[6]) + dP[8]*(2*F[8] - 2*R[8]);
    *dlam += b1*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
}

/* >>pk1_vjp_3d_fixed_corotated_f32: adjoint of cq__pk1_3d_fixed_corotated_f32 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_3d_fixed_corotated_f32(const float *F, float E, float nu, int group,
                                               const cq__params_f32 *prm, const float *act_stress,
                                               const float *dP, float *dF, float *dE, float *dnu, float *dact)
{
    float mu, lam, R[9], dR[9], gmu = 0, glam = 0;
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) dR[a] = 0;
    cq__polar_3d_f32(F, R);
    cq__stress_vjp_3d_fixed_corotated_f32(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    cq__polar_vjp_3d_f32(F, R, dR, dF);
    {
        const float op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_3d_f32(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const float *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) {
                float g = 0;
                for (int b = 0; b < 3; ++b) g += dP[a * 3 + b] * sa[c * 3 + b];
                dF[a * 3 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 3; ++c)
                for (int b = 0; b < 3; ++b) {
                    float g = 0;
                    for (int a = 0; a < 3; ++a) g += F[a * 3 + c] * dP[a * 3 + b];
                    dact[c * 3 + b] += g;
                }
    }
}

/* >>stress_vjp_3d_neohookean_f32: adjoint of cq__stress_3d_neohookean_f32: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F; this material has no R, so dR is untouched and may be NULL),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/neohookean.py. */
CQ_HD void cq__stress_vjp_3d_neohookean_f32(const float *F, const float *R, float mu, float lam, const float *dP,
                                                float *dF, float *dR, float *dmu, float *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const float t0 = F[4]*F[8];
    const float t1 = F[5]*F[7];
    const float t2 = t0 - t1;
    const float t3 = F[5]*F[6];
    const float t4 = F[3]*F[7];
    const float t5 = F[3]*F[8];
    const float t6 = F[4]*F[6];
    const float t7 = F[0]*t0 - F[0]*t1 + F[1]*t3 - F[1]*t5 + F[2]*t4 - F[2]*t6;
    const float t8 = (1.0F/((t7)));
    const float t9 = mu*t8;
    const float f0 = logf(t7);
    const float t10 = f0*lam*t8;
    const float t11 = -t3 + t5;
    const float t12 = t4 - t6;
    const float t13 = F[1]*F[8] - F[2]*F[7];
    const float t14 = F[0]*F[8] - F[2]*F[6];
    const float t15 = F[0]*F[7] - F[1]*F[6];
    const float t16 = F[1]*F[5] - F[2]*F[4];
    const float t17 = F[0]*F[5] - F[2]*F[3];
    const float t18 = F[0]*F[4] - F[1]*F[3];
    const float b0 = dP[8]*(t10 - t9);
    const float b1 = dP[7]*(-t10 + t9);
    const float b2 = dP[6]*(t10 - t9);
    const float b3 = dP[5]*(-t10 + t9);
    const float b4 = dP[4]*(t10 - t9);
    const float b5 = dP[3]*(-t10 + t9);
    const float b6 = dP[2]*(t10 - t9);
    const float b7 = dP[1]*(-t10 + t9);
    const float b8 = dP[0]*t2 - dP[1]*t11 + dP[2]*t12 - dP[3]*t13 + dP[4]*t14 - dP[5]*t15 + dP[6]*t16 - dP[7]*t17 + dP[8]*t18;
    const float b9 = b8*lam*t8;
    const float b10 = -dP[0]*t2 + dP[1]*t11 - dP[2]*t12 + dP[3]*t13 - dP[4]*t14 + dP[5]*t15 - dP[6]*t16 + dP[7]*t17 - dP[8]*t18;
    const float b11 = b10*mu + b8*f0*lam;
    const float b12 = -b11/((t7)*(t7)) + b9/t7;
    const float b13 = -F[2]*b12 - b6;
    const float b14 = -F[1]*b12 + b7;
    const float b15 = F[2]*b12 + b6;
    const float b16 = F[1]*b12 - b7;
    const float b17 = dP[0]*(t10 - t9);
    const float b18 = -F[0]*b12 - b17;
    const float b19 = F[0]*b12 + b17;
    dF[0] += F[4]*b0 + F[5]*b1 + F[7]*b3 + F[8]*b4 + b12*(t0 - t1) + dP[0]*mu;
    dF[1] += -F[3]*b0 + F[5]*b2 - F[6]*b3 + F[8]*b5 + b12*(t3 - t5) + dP[1]*mu;
    dF[2] += -F[3]*b1 - F[4]*b2 - F[6]*b4 - F[7]*b5 + b12*(t4 - t6) + dP[2]*mu;
    dF[3] += -F[1]*b0 - F[2]*b1 + F[7]*b15 + F[8]*b14 + dP[3]*mu;
    dF[4] += F[0]*b0 - F[2]*b2 + F[6]*b13 + F[8]*b19 + dP[4]*mu;
    dF[5] += F[0]*b1 + F[1]*b2 + F[6]*b16 + F[7]*b18 + dP[5]*mu;
    dF[6] += -F[1]*b3 - F[2]*b4 + F[4]*b13 + F[5]*b16 + dP[6]*mu;
    dF[7] += F[0]*b3 - F[2]*b5 + F[3]*b15 + F[5]*b18 + dP[7]*mu;
    dF[8] += F[0]*b4 + F[1]*b5 + F[3]*b14 + F[4]*b19 + dP[8]*mu;
    *dmu += F[0]*dP[0] + F[1]*dP[1] + F[2]*dP[2] + F[3]*dP[3] + F[4]*dP[4] + F[5]*dP[5] + F[6]*dP[6] + F[7]*dP[7] + F[8]*dP[8] + b10*t8;
    *dlam += b8*f0*t8;
}

/* >>pk1_vjp_3d_neohookean_f32: adjoint of cq__pk1_3d_neohookean_f32 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_3d_neohookean_f32(const float *F, float E, float nu, int group,
                                               const cq__params_f32 *prm, const float *act_stress,
                                               const float *dP, float *dF, float *dE, float *dnu, float *dact)
{
    float mu, lam, R[9], dR[9], gmu = 0, glam = 0;
    cq__lame_f32(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) dR[a] = 0;
    for (int a = 0; a < 9; ++a) R[a] = 0;
    cq__stress_vjp_3d_neohookean_f32(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    {
        const float op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_3d_f32(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const float *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) {
                float g = 0;
                for (int b = 0; b < 3; ++b) g += dP[a * 3 + b] * sa[c * 3 + b];
                dF[a * 3 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 3; ++c)
                for (int b = 0; b < 3; ++b) {
                    float g = 0;
                    for (int a = 0; a < 3; ++a) g += F[a * 3 + c] * dP[a * 3 + b];
                    dact[c * 3 + b] += g;
                }
    }
}

/* ------------------------------------------------------------------ transfer adjoints 3D f32
   Reverse order of the forward substep (seed 002; seed 003 appendix A.2): G2P adjoint scatters
   into the grid velocity adjoints, the grid adjoint backs through the wall projection and
   v = p/m + dt g, the P2G adjoint gathers into the particle adjoints.  The grid is recomputed
   from the substep's input state by the caller, never stored across substeps. */

/* dw/dx_p for the quadratic B-spline: grad[a][i] = d w_a(i) / d x_a (times inv_dx). */
CQ_HD void cq__weight_grads_3d_f32(const float *fx, float inv_dx, float (*dw)[3])
{
    for (int a = 0; a < 3; ++a) {
        dw[a][0] = -((float)1.5 - fx[a]) * inv_dx;
        dw[a][1] = -2 * (fx[a] - 1) * inv_dx;
        dw[a][2] = (fx[a] - (float)0.5) * inv_dx;
    }
}

/* >>grid_adj_3d_f32: adjoint of the wall projection (cq__boundary_3d_f32).
   v0: the velocity BEFORE the projection; vb: dL/d(projected v) on entry, dL/dv0 on return.
   Friction follows seed 003 appendix B (B9-B15, whose dl_t* / dl_n bookkeeping is done here by
   direct differentiation of B3-B6). */
CQ_HD void cq__boundary_adj_3d_f32(const int *c, const cq__params_f32 *prm, const float *v0, float *vb)
{
    float vs[4][3];   /* velocity before each axis' projection */
    int axis_n[3], last = 3;
    for (int b = 0; b < 3; ++b) vs[0][b] = v0[b];
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) vs[a + 1][b] = vs[a][b];
        axis_n[a] = cq__wall_normal_3d_f32(c, a, prm);
        if (axis_n[a] && cq__bc_axis_3d_f32(a, (float)axis_n[a], prm, vs[a + 1])) { last = a; break; }
    }
    if (last < 3) { for (int b = 0; b < 3; ++b) vb[b] = 0; return; }   /* sticky wall node */
    for (int a = 3 - 1; a >= 0; --a) {
        if (!axis_n[a]) continue;
        const float *v = vs[a];
        float n = (float)axis_n[a], ln = v[a] * n;
        switch (prm->boundary) {
        case CQ__BC_SLIP:
            vb[a] = 0;
            break;
        case CQ__BC_SEPARATE:
            if (ln < 0) vb[a] = 0;
            break;
        default: /* CQ__BC_FRICTION */
            if (ln < 0) {
                float s2 = 0, sc_b = 0;
                for (int b = 0; b < 3; ++b) if (b != a) s2 += v[b] * v[b];
                float r = sqrtf(s2), lt = r + 1e-30f;
                float lts = lt + prm->friction * ln;
                int open = lts > 0;
                if (!open) lts = 0;
                float scale = lts / lt;
                for (int b = 0; b < 3; ++b) if (b != a) sc_b += vb[b] * v[b];
                float lts_b = sc_b / lt, lt_b = -sc_b * lts / (lt * lt);
                if (open) lt_b += lts_b;
                float ln_b = open ? prm->friction * lts_b : 0;
                for (int b = 0; b < 3; ++b)
                    if (b != a) vb[b] = vb[b] * scale + (r > 0 ? lt_b * v[b] / r : 0);
                vb[a] = ln_b * n;
            }
            break;
        }
    }
}

/* Grid-update adjoint for one node: v = bc(p/m + dt g).  gp: momentum (pre-projection) of the
   forward pass; gv_adj: dL/dv; writes dL/dp and dL/dm of the node. */
CQ_HD void cq__grid_adj_3d_f32(int node, const cq__params_f32 *prm, const float *gm,
                                                   const float *gp, const float *gv_adj, float *gp_adj, float *gm_adj)
{
    float m = gm[node], v0[3], vb[3];
    int c[3];
    if (!(m > 0)) {
        for (int a = 0; a < 3; ++a) gp_adj[(long)node * 3 + a] = 0;
        gm_adj[node] = 0;
        return;
    }
    c[0] = node / (prm->res[1] * prm->res[2]); c[1] = (node / prm->res[2]) % prm->res[1]; c[2] = node % prm->res[2];
    float inv_m = 1 / m, mb = 0;
    for (int a = 0; a < 3; ++a) {
        v0[a] = gp[(long)node * 3 + a] * inv_m + prm->dt * prm->gravity[a];
        vb[a] = gv_adj[(long)node * 3 + a];
    }
    cq__boundary_adj_3d_f32(c, prm, v0, vb);
    for (int a = 0; a < 3; ++a) {
        gp_adj[(long)node * 3 + a] = vb[a] * inv_m;
        mb -= vb[a] * gp[(long)node * 3 + a] * inv_m * inv_m;
    }
    gm_adj[node] = mb;
}

/* >>g2p_adj_3d_f32: adjoint of G2P (eqs 8-11) for particle p.  `s` is the substep's
   input state, g the recomputed grid (v = projected velocity), `ao` the adjoint of the output
   state.  Scatters dL/dv_i into gv_adj; SETS ai.x and ai.F to the G2P part of the input
   state's adjoint (the P2G adjoint adds its part after). */
CQ_HD void cq__g2p_adj_3d_f32(int p, const cq__params_f32 *prm, cq__pview_f32 s,
                                                  cq__gview_f32 g, cq__pview_f32 ao, cq__pview_f32 ai,
                                                  float *gv_adj)
{
    int base[3];
    float fx[3], w[3][3], dw[3][3], xp[3], Fp[9], nC[9] = {0};
    float vbt[3], Cbt[9], xb[3];
    const float c4 = 4 * prm->inv_dx * prm->inv_dx, dt = prm->dt;
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f32(fx, prm->inv_dx, dw);
    /* x' = x + dt v'  ->  vbar' += dt xbar';   F' = (I + dt C') F  ->  Cbar' += dt Fbar' F^T */
    for (int a = 0; a < 3; ++a) {
        xb[a] = ao.x[(long)p * 3 + a];
        vbt[a] = ao.v[(long)p * 3 + a] + dt * xb[a];
        for (int b = 0; b < 3; ++b) {
            float acc = ao.C[(long)p * 9 + a * 3 + b];
            for (int k = 0; k < 3; ++k) acc += dt * ao.F[(long)p * 9 + a * 3 + k] * Fp[b * 3 + k];
            Cbt[a * 3 + b] = acc;
        }
    }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const float gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        float dpos[3], sdot = 0;
        const float *vi = g.v + idx * 3;
        for (int a = 0; a < 3; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            float cd = 0, vc = 0;   /* (Cbar' dpos)_a, (Cbar'^T v_i)_a */
            for (int b = 0; b < 3; ++b) {
                cd += Cbt[a * 3 + b] * dpos[b];
                vc += Cbt[b * 3 + a] * vi[b];
                nC[a * 3 + b] += c4 * wt * vi[a] * dpos[b];
            }
            CQ__ATOMIC_ADD(&gv_adj[idx * 3 + a], wt * (vbt[a] + c4 * cd));
            sdot += vi[a] * (vbt[a] + c4 * cd);
            xb[a] -= c4 * wt * vc;            /* dpos = x_i - x_p */
        }
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];   /* through the weights */
    }
    for (int a = 0; a < 3; ++a) ai.x[(long)p * 3 + a] = xb[a];
    for (int a = 0; a < 3; ++a)       /* Fbar = (I + dt C')^T Fbar' */
        for (int b = 0; b < 3; ++b) {
            float acc = ao.F[(long)p * 9 + a * 3 + b];
            for (int k = 0; k < 3; ++k) acc += dt * nC[k * 3 + a] * ao.F[(long)p * 9 + k * 3 + b];
            ai.F[(long)p * 9 + a * 3 + b] = acc;
        }
}

/* >>p2g_adj_3d_fixed_corotated_f32: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_3d_fixed_corotated_f32(int p, const cq__params_f32 *prm,
        cq__pview_f32 s, const float *gp_adj, const float *gm_adj, cq__pview_f32 ai,
        cq__pview_f32 pg, float *dact)
{
    int base[3];
    float fx[3], w[3][3], dw[3][3], xp[3], vp[3], Fp[9], Pp[9], G[9], Gb[9] = {0};
    float xb[3] = {0}, vb[3] = {0}, Pb[9], Fb[9] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 3; ++a) { xp[a] = s.x[(long)p * 3 + a]; vp[a] = s.v[(long)p * 3 + a]; }
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f32(fx, prm->inv_dx, dw);
    cq__pk1_3d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const float mass = s.mass[p], vol = s.vol[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            float pf = 0;
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * vol * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const float gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        float dpos[3];
        const float *pb = gp_adj + idx * 3;
        const float mbi = gm_adj[idx];
        float sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 3; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            float mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 3; ++b) {
                mom += G[a * 3 + b] * dpos[b];
                Gb[a * 3 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 3 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    float volb = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            float pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 3; ++c) {
                pbab += Gb[a * 3 + c] * Fp[c * 3 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 3 + a] * Pp[c * 3 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 3 + c] * Fp[b * 3 + c];     /* (P F^T)_ab */
            }
            Pb[a * 3 + b] = ks * vol * pbab;
            Fb[a * 3 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 3 + b];
            mb += s.C[(long)p * 9 + a * 3 + b] * Gb[a * 3 + b];
        }
    for (int a = 0; a < 9; ++a) dact[a] = 0;
    cq__pk1_vjp_3d_fixed_corotated_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 3; ++a) {
        ai.x[(long)p * 3 + a] += xb[a];
        ai.v[(long)p * 3 + a] = vb[a];
    }
    for (int a = 0; a < 9; ++a) {
        ai.F[(long)p * 9 + a] += Fb[a];
        ai.C[(long)p * 9 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* >>p2g_adj_3d_neohookean_f32: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_3d_neohookean_f32(int p, const cq__params_f32 *prm,
        cq__pview_f32 s, const float *gp_adj, const float *gm_adj, cq__pview_f32 ai,
        cq__pview_f32 pg, float *dact)
{
    int base[3];
    float fx[3], w[3][3], dw[3][3], xp[3], vp[3], Fp[9], Pp[9], G[9], Gb[9] = {0};
    float xb[3] = {0}, vb[3] = {0}, Pb[9], Fb[9] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 3; ++a) { xp[a] = s.x[(long)p * 3 + a]; vp[a] = s.v[(long)p * 3 + a]; }
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f32(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f32(fx, prm->inv_dx, dw);
    cq__pk1_3d_neohookean_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const float mass = s.mass[p], vol = s.vol[p];
    const float ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            float pf = 0;
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * vol * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const float wt = w[0][i] * w[1][j] * w[2][k];
        const float gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        float dpos[3];
        const float *pb = gp_adj + idx * 3;
        const float mbi = gm_adj[idx];
        float sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 3; ++a) dpos[a] = ((float)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            float mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 3; ++b) {
                mom += G[a * 3 + b] * dpos[b];
                Gb[a * 3 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 3 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    float volb = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            float pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 3; ++c) {
                pbab += Gb[a * 3 + c] * Fp[c * 3 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 3 + a] * Pp[c * 3 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 3 + c] * Fp[b * 3 + c];     /* (P F^T)_ab */
            }
            Pb[a * 3 + b] = ks * vol * pbab;
            Fb[a * 3 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 3 + b];
            mb += s.C[(long)p * 9 + a * 3 + b] * Gb[a * 3 + b];
        }
    for (int a = 0; a < 9; ++a) dact[a] = 0;
    cq__pk1_vjp_3d_neohookean_f32(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 3; ++a) {
        ai.x[(long)p * 3 + a] += xb[a];
        ai.v[(long)p * 3 + a] = vb[a];
    }
    for (int a = 0; a < 9; ++a) {
        ai.F[(long)p * 9 + a] += Fb[a];
        ai.C[(long)p * 9 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* ======================================================================== 3D f64 adjoint */
/* >>polar_vjp_3d_f64: dF += dL/dF given dR = dL/dR, for R the polar rotation of F
   (cq__polar_3d_f64).  With F = U diag(sig) V^T (signed sig, R = U V^T) and
   H = U^T dR V, the result is  U A V^T,  A_ij = (H_ij - H_ji) / (sig_i + sig_j)  (i != j),
   A_ii = 0: only sums of singular values appear, never differences, so F = I and repeated
   singular values are regular points.  sig_i + sig_j >= 0 by the sign convention and is 0
   only where R itself is not differentiable (an inverted pair cancelling, e.g. sig =
   (1, s, -s)); there the denominator is clamped to 1e-6 * sig_max (2D: * |F|), which keeps the
   gradient finite (bounded by |dR| / (1e-6 sig_max)) but no longer exact.  F = 0
   (where the forward pass returns the constant R = I) adds nothing. */
CQ_HD void cq__polar_vjp_3d_f64(const double *F, const double *R, const double *dR, double *dF)
{
    double U[9], sig[3], V[9], H[9], A[9];
    (void)R;
    cq__svd_3d_f64(F, U, sig, V);
    if (!(sig[0] > 0)) return;
    double fl = 1e-06 * sig[0];
    for (int i = 0; i < 3; ++i)       /* H = U^T dR V */
        for (int j = 0; j < 3; ++j) {
            double h = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l) h += U[k * 3 + i] * dR[k * 3 + l] * V[l * 3 + j];
            H[i * 3 + j] = h;
        }
    for (int i = 0; i < 3; ++i) {
        A[i * 3 + i] = 0;
        for (int j = i + 1; j < 3; ++j) {
            double d = sig[i] + sig[j];
            if (!(d > fl)) d = fl;    /* also catches rounding below 0 */
            double x = (H[i * 3 + j] - H[j * 3 + i]) / d;
            A[i * 3 + j] = x; A[j * 3 + i] = -x;
        }
    }
    for (int i = 0; i < 3; ++i)       /* dF += U A V^T */
        for (int j = 0; j < 3; ++j) {
            double g = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 3; ++l) g += U[i * 3 + k] * A[k * 3 + l] * V[j * 3 + l];
            dF[i * 3 + j] += g;
        }
}

/* dF += s * d<dK, cofactor(F)>/dF (cofactor as cq__cofactor_3d_f64). */
CQ_HD void cq__cofactor_vjp_3d_f64(const double *F, const double *dK, double s, double *dF)
{
    /* K_ij = F[i1][j1] F[i2][j2] - F[i1][j2] F[i2][j1], i1 = i+1, i2 = i+2 (mod 3) */
    for (int i = 0; i < 3; ++i) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            double a = s * dK[i * 3 + j];
            dF[i1 * 3 + j1] += a * F[i2 * 3 + j2]; dF[i2 * 3 + j2] += a * F[i1 * 3 + j1];
            dF[i1 * 3 + j2] -= a * F[i2 * 3 + j1]; dF[i2 * 3 + j1] -= a * F[i1 * 3 + j2];
        }
    }
}

/* >>incompressible_vjp_3d_f64: adjoint of cq__incompressible_3d_f64
   (P += s K, s = E p (J-1)^(p-1) / (3(2-2nu)), K = cofactor(F), dJ/dF = K). */
CQ_HD void cq__incompressible_vjp_3d_f64(const double *F, double E, double nu, int p, const double *dP,
                                                 double *dF, double *dE, double *dnu)
{
    double K[9], J = cq__det_3d_f64(F), pw = 1, dpw = 0, g = 0;
    for (int i = 1; i < p; ++i) pw *= J - 1;                 /* (J-1)^(p-1) */
    if (p >= 2) { dpw = (double)(p - 1); for (int i = 2; i < p; ++i) dpw *= J - 1; }   /* its dJ */
    double c = (double)p / (3 * (2 - 2 * nu));
    double s = E * c * pw;
    cq__cofactor_3d_f64(F, K);
    for (int i = 0; i < 9; ++i) g += dP[i] * K[i];
    *dE += g * c * pw;
    *dnu += g * s / (1 - nu);                               /* d/dnu 1/(6(1-nu)) = 1/(6(1-nu)^2) */
    double sj = g * E * c * dpw;
    for (int i = 0; i < 9; ++i) dF[i] += sj * K[i];
    cq__cofactor_vjp_3d_f64(F, dP, s, dF);
}

/* >>stress_vjp_3d_fixed_corotated_f64: adjoint of cq__stress_3d_fixed_corotated_f64: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/fixed_corotated.py. */
CQ_HD void cq__stress_vjp_3d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam, const double *dP,
                                                double *dF, double *dR, double *dmu, double *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const double t0 = F[4]*F[8];
    const double t1 = F[5]*F[7];
    const double t2 = F[3]*F[8];
    const double t3 = F[4]*F[6];
    const double t4 = F[5]*F[6];
    const double t5 = F[3]*F[7];
    const double t6 = lam*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
    const double t7 = 2*mu;
    const double b0 = dP[1]*(F[1] - R[1]) + dP[3]*(F[3] - R[3]) + dP[5]*(F[5] - R[5]) + dP[7]*(F[7] - R[7]);
    const double b1 = dP[0]*(-t0 + t1) + dP[1]*(t2 - t4) + dP[2]*(t3 - t5) + dP[3]*(F[1]*F[8] - F[2]*F[7]) + dP[4]*(-F[0]*F[8] + F[2]*F[6]) + dP[5]*(F[0]*F[7] - F[1]*F[6]) + dP[6]*(-F[1]*F[5] + F[2]*F[4]) + dP[7]*(F[0]*F[5] - F[2]*F[3]) + dP[8]*(-F[0]*F[4] + F[1]*F[3]);
    const double b2 = -F[2]*b1*lam - dP[2]*t6;
    const double b3 = -F[1]*b1*lam - dP[1]*t6;
    const double b4 = F[2]*b1*lam + dP[2]*t6;
    const double b5 = F[1]*b1*lam + dP[1]*t6;
    const double b6 = F[0]*b1*lam + dP[0]*t6;
    const double b7 = -F[0]*b1*lam - dP[0]*t6;
    dF[0] += -F[4]*dP[8]*t6 + F[5]*dP[7]*t6 + F[7]*dP[5]*t6 - F[8]*dP[4]*t6 + b1*lam*(-t0 + t1) + 2*dP[0]*mu;
    dF[1] += F[3]*dP[8]*t6 - F[5]*dP[6]*t6 - F[6]*dP[5]*t6 + F[8]*dP[3]*t6 + b1*lam*(t2 - t4) + dP[1]*t7;
    dF[2] += -F[3]*dP[7]*t6 + F[4]*dP[6]*t6 + F[6]*dP[4]*t6 - F[7]*dP[3]*t6 + b1*lam*(t3 - t5) + 2*dP[2]*mu;
    dF[3] += F[1]*dP[8]*t6 - F[2]*dP[7]*t6 + F[7]*b2 + F[8]*b5 + dP[3]*t7;
    dF[4] += -F[0]*dP[8]*t6 + F[2]*dP[6]*t6 + F[6]*b4 + F[8]*b7 + 2*dP[4]*mu;
    dF[5] += F[0]*dP[7]*t6 - F[1]*dP[6]*t6 + F[6]*b3 + F[7]*b6 + dP[5]*t7;
    dF[6] += -F[1]*dP[5]*t6 + F[2]*dP[4]*t6 + F[4]*b4 + F[5]*b3 + 2*dP[6]*mu;
    dF[7] += F[0]*dP[5]*t6 - F[2]*dP[3]*t6 + F[3]*b2 + F[5]*b6 + dP[7]*t7;
    dF[8] += -F[0]*dP[4]*t6 + F[1]*dP[3]*t6 + F[3]*b5 + F[4]*b7 + 2*dP[8]*mu;
    dR[0] += -2*dP[0]*mu;
    dR[1] += -dP[1]*t7;
    dR[2] += -2*dP[2]*mu;
    dR[3] += -dP[3]*t7;
    dR[4] += -2*dP[4]*mu;
    dR[5] += -dP[5]*t7;
    dR[6] += -2*dP[6]*mu;
    dR[7] += -dP[7]*t7;
    dR[8] += -2*dP[8]*mu;
    *dmu += 2*b0 + dP[0]*(2*F[0] - 2*R[0]) + dP[2]*(2*F[2] - 2*R[2]) + dP[4]*(2*F[4] - 2*R[4]) + dP[6]*(2*F[6] - 2*R[6]) + dP[8]*(2*F[8] - 2*R[8]);
    *dlam += b1*(-F[0]*t0 + F[0]*t1 + F[1]*t2 - F[1]*t4 + F[2]*t3 - F[2]*t5 + 1);
}

/* >>pk1_vjp_3d_fixed_corotated_f64: adjoint of cq__pk1_3d_fixed_corotated_f64 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_3d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *dP, double *dF, double *dE, double *dnu, double *dact)
{
    double mu, lam, R[9], dR[9], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) dR[a] = 0;
    cq__polar_3d_f64(F, R);
    cq__stress_vjp_3d_fixed_corotated_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    cq__polar_vjp_3d_f64(F, R, dR, dF);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_3d_f64(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const double *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) {
                double g = 0;
                for (int b = 0; b < 3; ++b) g += dP[a * 3 + b] * sa[c * 3 + b];
                dF[a * 3 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 3; ++c)
                for (int b = 0; b < 3; ++b) {
                    double g = 0;
                    for (int a = 0; a < 3; ++a) g += F[a * 3 + c] * dP[a * 3 + b];
                    dact[c * 3 + b] += g;
                }
    }
}

/* >>stress_vjp_3d_neohookean_f64: adjoint of cq__stress_3d_neohookean_f64: given dP =
   dL/dP, ADDS d<dP, P>/dF to dF, /dR to dR (R held independent of F; this material has no R, so dR is untouched and may be NULL),
   /dmu to *dmu and /dlam to *dlam.  Generated by SymPy from generator/materials/neohookean.py. */
CQ_HD void cq__stress_vjp_3d_neohookean_f64(const double *F, const double *R, double mu, double lam, const double *dP,
                                                double *dF, double *dR, double *dmu, double *dlam)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)dP; (void)dF; (void)dR; (void)dmu; (void)dlam;
    const double t0 = F[4]*F[8];
    const double t1 = F[5]*F[7];
    const double t2 = t0 - t1;
    const double t3 = F[5]*F[6];
    const double t4 = F[3]*F[7];
    const double t5 = F[3]*F[8];
    const double t6 = F[4]*F[6];
    const double t7 = F[0]*t0 - F[0]*t1 + F[1]*t3 - F[1]*t5 + F[2]*t4 - F[2]*t6;
    const double t8 = (1.0/((t7)));
    const double t9 = mu*t8;
    const double f0 = log(t7);
    const double t10 = f0*lam*t8;
    const double t11 = -t3 + t5;
    const double t12 = t4 - t6;
    const double t13 = F[1]*F[8] - F[2]*F[7];
    const double t14 = F[0]*F[8] - F[2]*F[6];
    const double t15 = F[0]*F[7] - F[1]*F[6];
    const double t16 = F[1]*F[5] - F[2]*F[4];
    const double t17 = F[0]*F[5] - F[2]*F[3];
    const double t18 = F[0]*F[4] - F[1]*F[3];
    const double b0 = dP[8]*(t10 - t9);
    const double b1 = dP[7]*(-t10 + t9);
    const double b2 = dP[6]*(t10 - t9);
    const double b3 = dP[5]*(-t10 + t9);
    const double b4 = dP[4]*(t10 - t9);
    const double b5 = dP[3]*(-t10 + t9);
    const double b6 = dP[2]*(t10 - t9);
    const double b7 = dP[1]*(-t10 + t9);
    const double b8 = dP[0]*t2 - dP[1]*t11 + dP[2]*t12 - dP[3]*t13 + dP[4]*t14 - dP[5]*t15 + dP[6]*t16 - dP[7]*t17 + dP[8]*t18;
    const double b9 = b8*lam*t8;
    const double b10 = -dP[0]*t2 + dP[1]*t11 - dP[2]*t12 + dP[3]*t13 - dP[4]*t14 + dP[5]*t15 - dP[6]*t16 + dP[7]*t17 - dP[8]*t18;
    const double b11 = b10*mu + b8*f0*lam;
    const double b12 = -b11/((t7)*(t7)) + b9/t7;
    const double b13 = -F[2]*b12 - b6;
    const double b14 = -F[1]*b12 + b7;
    const double b15 = F[2]*b12 + b6;
    const double b16 = F[1]*b12 - b7;
    const double b17 = dP[0]*(t10 - t9);
    const double b18 = -F[0]*b12 - b17;
    const double b19 = F[0]*b12 + b17;
    dF[0] += F[4]*b0 + F[5]*b1 + F[7]*b3 + F[8]*b4 + b12*(t0 - t1) + dP[0]*mu;
    dF[1] += -F[3]*b0 + F[5]*b2 - F[6]*b3 + F[8]*b5 + b12*(t3 - t5) + dP[1]*mu;
    dF[2] += -F[3]*b1 - F[4]*b2 - F[6]*b4 - F[7]*b5 + b12*(t4 - t6) + dP[2]*mu;
    dF[3] += -F[1]*b0 - F[2]*b1 + F[7]*b15 + F[8]*b14 + dP[3]*mu;
    dF[4] += F[0]*b0 - F[2]*b2 + F[6]*b13 + F[8]*b19 + dP[4]*mu;
    dF[5] += F[0]*b1 + F[1]*b2 + F[6]*b16 + F[7]*b18 + dP[5]*mu;
    dF[6] += -F[1]*b3 - F[2]*b4 + F[4]*b13 + F[5]*b16 + dP[6]*mu;
    dF[7] += F[0]*b3 - F[2]*b5 + F[3]*b15 + F[5]*b18 + dP[7]*mu;
    dF[8] += F[0]*b4 + F[1]*b5 + F[3]*b14 + F[4]*b19 + dP[8]*mu;
    *dmu += F[0]*dP[0] + F[1]*dP[1] + F[2]*dP[2] + F[3]*dP[3] + F[4]*dP[4] + F[5]*dP[5] + F[6]*dP[6] + F[7]*dP[7] + F[8]*dP[8] + b10*t8;
    *dlam += b8*f0*t8;
}

/* >>pk1_vjp_3d_neohookean_f64: adjoint of cq__pk1_3d_neohookean_f64 (same arguments,
   then dP = dL/dP).  ADDS dL/dF to dF (through the polar rotation too when the material uses
   it), dL/dE to *dE, dL/dnu to *dnu (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T dP to dact, which is the d x d block of THIS particle's
   group (not the whole act_stress array); dact may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_3d_neohookean_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *dP, double *dF, double *dE, double *dnu, double *dact)
{
    double mu, lam, R[9], dR[9], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    for (int a = 0; a < 9; ++a) dR[a] = 0;
    for (int a = 0; a < 9; ++a) R[a] = 0;
    cq__stress_vjp_3d_neohookean_f64(F, R, mu, lam, dP, dF, dR, &gmu, &glam);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *dE += gmu / (2 * op) + glam * nu / (op * om);
        *dnu += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_3d_f64(F, E, nu, prm->incompressibility, dP, dF, dE, dnu);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: dF += dP sa^T, dsa += F^T dP */
        const double *sa = act_stress + (long)group * 9;
        for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) {
                double g = 0;
                for (int b = 0; b < 3; ++b) g += dP[a * 3 + b] * sa[c * 3 + b];
                dF[a * 3 + c] += g;
            }
        if (dact)
            for (int c = 0; c < 3; ++c)
                for (int b = 0; b < 3; ++b) {
                    double g = 0;
                    for (int a = 0; a < 3; ++a) g += F[a * 3 + c] * dP[a * 3 + b];
                    dact[c * 3 + b] += g;
                }
    }
}

/* ------------------------------------------------------------------ transfer adjoints 3D f64
   Reverse order of the forward substep (seed 002; seed 003 appendix A.2): G2P adjoint scatters
   into the grid velocity adjoints, the grid adjoint backs through the wall projection and
   v = p/m + dt g, the P2G adjoint gathers into the particle adjoints.  The grid is recomputed
   from the substep's input state by the caller, never stored across substeps. */

/* dw/dx_p for the quadratic B-spline: grad[a][i] = d w_a(i) / d x_a (times inv_dx). */
CQ_HD void cq__weight_grads_3d_f64(const double *fx, double inv_dx, double (*dw)[3])
{
    for (int a = 0; a < 3; ++a) {
        dw[a][0] = -((double)1.5 - fx[a]) * inv_dx;
        dw[a][1] = -2 * (fx[a] - 1) * inv_dx;
        dw[a][2] = (fx[a] - (double)0.5) * inv_dx;
    }
}

/* >>grid_adj_3d_f64: adjoint of the wall projection (cq__boundary_3d_f64).
   v0: the velocity BEFORE the projection; vb: dL/d(projected v) on entry, dL/dv0 on return.
   Friction follows seed 003 appendix B (B9-B15, whose dl_t* / dl_n bookkeeping is done here by
   direct differentiation of B3-B6). */
CQ_HD void cq__boundary_adj_3d_f64(const int *c, const cq__params_f64 *prm, const double *v0, double *vb)
{
    double vs[4][3];   /* velocity before each axis' projection */
    int axis_n[3], last = 3;
    for (int b = 0; b < 3; ++b) vs[0][b] = v0[b];
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) vs[a + 1][b] = vs[a][b];
        axis_n[a] = cq__wall_normal_3d_f64(c, a, prm);
        if (axis_n[a] && cq__bc_axis_3d_f64(a, (double)axis_n[a], prm, vs[a + 1])) { last = a; break; }
    }
    if (last < 3) { for (int b = 0; b < 3; ++b) vb[b] = 0; return; }   /* sticky wall node */
    for (int a = 3 - 1; a >= 0; --a) {
        if (!axis_n[a]) continue;
        const double *v = vs[a];
        double n = (double)axis_n[a], ln = v[a] * n;
        switch (prm->boundary) {
        case CQ__BC_SLIP:
            vb[a] = 0;
            break;
        case CQ__BC_SEPARATE:
            if (ln < 0) vb[a] = 0;
            break;
        default: /* CQ__BC_FRICTION */
            if (ln < 0) {
                double s2 = 0, sc_b = 0;
                for (int b = 0; b < 3; ++b) if (b != a) s2 += v[b] * v[b];
                double r = sqrt(s2), lt = r + 1e-300;
                double lts = lt + prm->friction * ln;
                int open = lts > 0;
                if (!open) lts = 0;
                double scale = lts / lt;
                for (int b = 0; b < 3; ++b) if (b != a) sc_b += vb[b] * v[b];
                double lts_b = sc_b / lt, lt_b = -sc_b * lts / (lt * lt);
                if (open) lt_b += lts_b;
                double ln_b = open ? prm->friction * lts_b : 0;
                for (int b = 0; b < 3; ++b)
                    if (b != a) vb[b] = vb[b] * scale + (r > 0 ? lt_b * v[b] / r : 0);
                vb[a] = ln_b * n;
            }
            break;
        }
    }
}

/* Grid-update adjoint for one node: v = bc(p/m + dt g).  gp: momentum (pre-projection) of the
   forward pass; gv_adj: dL/dv; writes dL/dp and dL/dm of the node. */
CQ_HD void cq__grid_adj_3d_f64(int node, const cq__params_f64 *prm, const double *gm,
                                                   const double *gp, const double *gv_adj, double *gp_adj, double *gm_adj)
{
    double m = gm[node], v0[3], vb[3];
    int c[3];
    if (!(m > 0)) {
        for (int a = 0; a < 3; ++a) gp_adj[(long)node * 3 + a] = 0;
        gm_adj[node] = 0;
        return;
    }
    c[0] = node / (prm->res[1] * prm->res[2]); c[1] = (node / prm->res[2]) % prm->res[1]; c[2] = node % prm->res[2];
    double inv_m = 1 / m, mb = 0;
    for (int a = 0; a < 3; ++a) {
        v0[a] = gp[(long)node * 3 + a] * inv_m + prm->dt * prm->gravity[a];
        vb[a] = gv_adj[(long)node * 3 + a];
    }
    cq__boundary_adj_3d_f64(c, prm, v0, vb);
    for (int a = 0; a < 3; ++a) {
        gp_adj[(long)node * 3 + a] = vb[a] * inv_m;
        mb -= vb[a] * gp[(long)node * 3 + a] * inv_m * inv_m;
    }
    gm_adj[node] = mb;
}

/* >>g2p_adj_3d_f64: adjoint of G2P (eqs 8-11) for particle p.  `s` is the substep's
   input state, g the recomputed grid (v = projected velocity), `ao` the adjoint of the output
   state.  Scatters dL/dv_i into gv_adj; SETS ai.x and ai.F to the G2P part of the input
   state's adjoint (the P2G adjoint adds its part after). */
CQ_HD void cq__g2p_adj_3d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                                  cq__gview_f64 g, cq__pview_f64 ao, cq__pview_f64 ai,
                                                  double *gv_adj)
{
    int base[3];
    double fx[3], w[3][3], dw[3][3], xp[3], Fp[9], nC[9] = {0};
    double vbt[3], Cbt[9], xb[3];
    const double c4 = 4 * prm->inv_dx * prm->inv_dx, dt = prm->dt;
    for (int a = 0; a < 3; ++a) xp[a] = s.x[(long)p * 3 + a];
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f64(fx, prm->inv_dx, dw);
    /* x' = x + dt v'  ->  vbar' += dt xbar';   F' = (I + dt C') F  ->  Cbar' += dt Fbar' F^T */
    for (int a = 0; a < 3; ++a) {
        xb[a] = ao.x[(long)p * 3 + a];
        vbt[a] = ao.v[(long)p * 3 + a] + dt * xb[a];
        for (int b = 0; b < 3; ++b) {
            double acc = ao.C[(long)p * 9 + a * 3 + b];
            for (int k = 0; k < 3; ++k) acc += dt * ao.F[(long)p * 9 + a * 3 + k] * Fp[b * 3 + k];
            Cbt[a * 3 + b] = acc;
        }
    }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const double gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        double dpos[3], sdot = 0;
        const double *vi = g.v + idx * 3;
        for (int a = 0; a < 3; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            double cd = 0, vc = 0;   /* (Cbar' dpos)_a, (Cbar'^T v_i)_a */
            for (int b = 0; b < 3; ++b) {
                cd += Cbt[a * 3 + b] * dpos[b];
                vc += Cbt[b * 3 + a] * vi[b];
                nC[a * 3 + b] += c4 * wt * vi[a] * dpos[b];
            }
            CQ__ATOMIC_ADD(&gv_adj[idx * 3 + a], wt * (vbt[a] + c4 * cd));
            sdot += vi[a] * (vbt[a] + c4 * cd);
            xb[a] -= c4 * wt * vc;            /* dpos = x_i - x_p */
        }
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];   /* through the weights */
    }
    for (int a = 0; a < 3; ++a) ai.x[(long)p * 3 + a] = xb[a];
    for (int a = 0; a < 3; ++a)       /* Fbar = (I + dt C')^T Fbar' */
        for (int b = 0; b < 3; ++b) {
            double acc = ao.F[(long)p * 9 + a * 3 + b];
            for (int k = 0; k < 3; ++k) acc += dt * nC[k * 3 + a] * ao.F[(long)p * 9 + k * 3 + b];
            ai.F[(long)p * 9 + a * 3 + b] = acc;
        }
}

/* >>p2g_adj_3d_fixed_corotated_f64: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_3d_fixed_corotated_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *gp_adj, const double *gm_adj, cq__pview_f64 ai,
        cq__pview_f64 pg, double *dact)
{
    int base[3];
    double fx[3], w[3][3], dw[3][3], xp[3], vp[3], Fp[9], Pp[9], G[9], Gb[9] = {0};
    double xb[3] = {0}, vb[3] = {0}, Pb[9], Fb[9] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 3; ++a) { xp[a] = s.x[(long)p * 3 + a]; vp[a] = s.v[(long)p * 3 + a]; }
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f64(fx, prm->inv_dx, dw);
    cq__pk1_3d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const double mass = s.mass[p], vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double pf = 0;
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * vol * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const double gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        double dpos[3];
        const double *pb = gp_adj + idx * 3;
        const double mbi = gm_adj[idx];
        double sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 3; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            double mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 3; ++b) {
                mom += G[a * 3 + b] * dpos[b];
                Gb[a * 3 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 3 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    double volb = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 3; ++c) {
                pbab += Gb[a * 3 + c] * Fp[c * 3 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 3 + a] * Pp[c * 3 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 3 + c] * Fp[b * 3 + c];     /* (P F^T)_ab */
            }
            Pb[a * 3 + b] = ks * vol * pbab;
            Fb[a * 3 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 3 + b];
            mb += s.C[(long)p * 9 + a * 3 + b] * Gb[a * 3 + b];
        }
    for (int a = 0; a < 9; ++a) dact[a] = 0;
    cq__pk1_vjp_3d_fixed_corotated_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 3; ++a) {
        ai.x[(long)p * 3 + a] += xb[a];
        ai.v[(long)p * 3 + a] = vb[a];
    }
    for (int a = 0; a < 9; ++a) {
        ai.F[(long)p * 9 + a] += Fb[a];
        ai.C[(long)p * 9 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* >>p2g_adj_3d_neohookean_f64: adjoint of P2G (eqs 3-6) for particle p, a gather:
   reads dL/dp_i (gp_adj) and dL/dm_i (gm_adj) of its stencil; ADDS to ai.x and ai.F, SETS ai.v
   and ai.C (v and C enter the substep only here), ADDS the parameter gradients to pg (mass,
   vol, E, nu arrays) and SETS dact[0..d*d) to this particle's actuation gradient F^T dP. */
CQ_HD void cq__p2g_adj_3d_neohookean_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *gp_adj, const double *gm_adj, cq__pview_f64 ai,
        cq__pview_f64 pg, double *dact)
{
    int base[3];
    double fx[3], w[3][3], dw[3][3], xp[3], vp[3], Fp[9], Pp[9], G[9], Gb[9] = {0};
    double xb[3] = {0}, vb[3] = {0}, Pb[9], Fb[9] = {0}, mb = 0, Eb = 0, nub = 0;
    const int group = s.act ? s.act[p] : -1;
    for (int a = 0; a < 3; ++a) { xp[a] = s.x[(long)p * 3 + a]; vp[a] = s.v[(long)p * 3 + a]; }
    for (int a = 0; a < 9; ++a) Fp[a] = s.F[(long)p * 9 + a];
    cq__weights_3d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_3d_f64(fx, prm->inv_dx, dw);
    cq__pk1_3d_neohookean_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pp);
    const double mass = s.mass[p], vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double pf = 0;
            for (int c = 0; c < 3; ++c) pf += Pp[a * 3 + c] * Fp[b * 3 + c];
            G[a * 3 + b] = ks * vol * pf + mass * s.C[(long)p * 9 + a * 3 + b];
        }
    for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 3; ++k)
    {
        const int o[3] = {i, j, k};
        const double wt = w[0][i] * w[1][j] * w[2][k];
        const double gw[3] = {dw[0][i] * w[1][j] * w[2][k], w[0][i] * dw[1][j] * w[2][k], w[0][i] * w[1][j] * dw[2][k]};
        const long idx = ((long)(base[0] + i) * prm->res[1] + (base[1] + j)) * prm->res[2] + (base[2] + k);

        double dpos[3];
        const double *pb = gp_adj + idx * 3;
        const double mbi = gm_adj[idx];
        double sdot = mbi * mass;   /* d(contribution)/dw */
        for (int a = 0; a < 3; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        for (int a = 0; a < 3; ++a) {
            double mom = mass * vp[a], gtp = 0;
            for (int b = 0; b < 3; ++b) {
                mom += G[a * 3 + b] * dpos[b];
                Gb[a * 3 + b] += wt * pb[a] * dpos[b];
                gtp += G[b * 3 + a] * pb[b];
            }
            sdot += pb[a] * mom;
            vb[a] += wt * mass * pb[a];
            mb += wt * pb[a] * vp[a];
            xb[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        mb += wt * mbi;
        for (int a = 0; a < 3; ++a) xb[a] += sdot * gw[a];
    }
    /* G = k V0 P F^T + m C */
    double volb = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            double pbab = 0, fbab = 0, pf = 0;
            for (int c = 0; c < 3; ++c) {
                pbab += Gb[a * 3 + c] * Fp[c * 3 + b];   /* (Gbar F)_ab */
                fbab += Gb[c * 3 + a] * Pp[c * 3 + b];   /* (Gbar^T P)_ab */
                pf += Pp[a * 3 + c] * Fp[b * 3 + c];     /* (P F^T)_ab */
            }
            Pb[a * 3 + b] = ks * vol * pbab;
            Fb[a * 3 + b] += ks * vol * fbab;
            volb += ks * pf * Gb[a * 3 + b];
            mb += s.C[(long)p * 9 + a * 3 + b] * Gb[a * 3 + b];
        }
    for (int a = 0; a < 9; ++a) dact[a] = 0;
    cq__pk1_vjp_3d_neohookean_f64(Fp, s.E[p], s.nu[p], group, prm, s.act_stress, Pb, Fb, &Eb, &nub, dact);
    for (int a = 0; a < 3; ++a) {
        ai.x[(long)p * 3 + a] += xb[a];
        ai.v[(long)p * 3 + a] = vb[a];
    }
    for (int a = 0; a < 9; ++a) {
        ai.F[(long)p * 9 + a] += Fb[a];
        ai.C[(long)p * 9 + a] = mass * Gb[a];
    }
    pg.mass[p] += mb; pg.vol[p] += volb; pg.E[p] += Eb; pg.nu[p] += nub;
}

/* ---- END GENERATED: adjoint kernels ---- */

/* ---- BEGIN GENERATED: host implementation from templates/host.c.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
#if defined(_OPENMP)
#  define CQ__PRAGMA(x) _Pragma(#x)
#  define CQ__OMP(directive) CQ__PRAGMA(omp directive)
#else
#  define CQ__OMP(directive)
#endif

/* P2G scatters race-free on the CPU: particles are bucketed into slabs of CQ__SLAB node
   layers along x; slabs of one colour (even / odd) touch disjoint nodes (a particle's
   stencil spans 3 nodes; 4 leaves a node of margin) and run in parallel, the colours one
   after the other.  Each node's sum is taken in the same order whatever the thread count,
   so CPU results are bit-identical run to run and across thread counts. */
#define CQ__SLAB 4

typedef struct cq__state { void *x, *v, *C, *F; } cq__state;
typedef struct cq__tape_act { int groups; void *stress; double *cable_u; } cq__tape_act;   /* one step's actuation */
typedef struct cq__cable { int first, count; double k, rest; } cq__cable;   /* particles cable_p[first..first+count) */

typedef struct cq__vtable {
    /* one substep from `in` to `out`; returns CQ__OK or the status of the lowest failing
       particle (*bad) */
    int (*substep)(cq_sim *s, const cq__state *in, cq__state *out, int *bad);
    /* adjoint of that substep: `ao` holds dL/d(out), `ai` receives dL/d(in); parameter and
       per-particle actuation gradients accumulate in the sim */
    void (*substep_adj)(cq_sim *s, const cq__state *in, const cq__state *ao, cq__state *ai);
    /* first particle in [first, first+count) whose stress is not finite, else -1 */
    int (*check_stress)(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count);
} cq__vtable;

struct cq_sim {
    cq_sim_desc desc;            /* defaults resolved */
    int dim, dd, n;
    size_t tsize;                /* sizeof(float) or sizeof(double) */
    const cq__vtable *vt;
    cq_backend backend;
    cq__params_f32 prm_f32;
    cq__params_f64 prm_f64;
    cq__state cur, nxt, init, snap;   /* particle state: current, G2P output, step 0, step start */
    void *mass, *vol, *E, *nu;        /* per-particle parameters */
    int *act;                         /* actuator group, -1 = none */
    int max_group;
    void *act_stress;                 /* act_groups * dd */
    int act_groups;
    void *grid_m, *grid_v;
    long nodes;
    int *order, *slab_start, *slab_fill, nslabs;
    int step;
    char error[512];
    /* >>tape: state at every checkpoint_every-th step, actuation of every step */
    cq__state *ckpt;
    int n_ckpt, cap_ckpt;
    cq__tape_act *acts;
    int cap_acts;
    /* >>adjoint buffers (allocated by the first cq_sim_backward) */
    cq__state *seg;                   /* recomputed substep inputs of one segment */
    int n_seg;
    cq__state adj[2];                 /* particle adjoints: dL/d(state) */
    const cq__state *grad_state;      /* dL/ds_0 after backward */
    void *g_mass, *g_vol, *g_E, *g_nu; /* parameter gradients */
    void *dact;                       /* n * dd per-particle actuation gradients of one substep */
    double *act_grad;                 /* dL/du_n of the step being reversed: groups * dd */
    int act_grad_groups;
    void *grid_p, *grid_vb, *grid_pb, *grid_mb;
    int adj_n;                        /* particle count the adjoint buffers were sized for */
    int in_backward, has_grad;
    const cq__state *hook_state;      /* s_n while the hook of step n runs */
    cq__state *hook_adj;              /* dL/ds_n while the hook of step n runs */
    int hook_step;                    /* n while the hook of step n runs */
    /* >>cables (seed 003 eqs 16-17) */
    cq__cable *cables;
    int n_cables, cap_cables;
    int *cable_p;                     /* routed particles of all cables, concatenated */
    int n_cable_p;
    double *cable_u;                  /* current actuation per cable */
    double *cable_grad;               /* dL/du_n per cable of the step being reversed */
    void *veff;                       /* v + dt f_cable / m, what P2G reads when cables exist */
    double *cable_f;                  /* scratch: cable force per particle (n * dim) */
    int veff_n;
};

static char cq__create_error[512];
static void cq__tape_clear(cq_sim *s);
static void cq__adjoint_free(cq_sim *s);

/* ------------------------------------------------------------------ >>errors */
const char *cq_result_string(cq_result r)
{
    switch (r) {
    case CQ_SUCCESS: return "success";
    case CQ_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case CQ_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CQ_ERROR_NON_FINITE: return "non-finite value";
    case CQ_ERROR_OUT_OF_DOMAIN: return "particle outside the grid's usable region";
    case CQ_ERROR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case CQ_ERROR_INVALID_STATE: return "invalid state (call order)";
    }
    return "unknown cq_result";
}

static void cq__vlog(const cq_logger *lg, cq_log_level level, const char *fmt, va_list ap, char *buf, size_t cap)
{
    vsnprintf(buf, cap, fmt, ap);
    if (lg && lg->func) lg->func(level, buf, lg->user);
}

static void cq__log(const cq_sim *s, cq_log_level level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    if (!s->desc.logger.func) return;
    va_start(ap, fmt);
    cq__vlog(&s->desc.logger, level, fmt, ap, buf, sizeof buf);
    va_end(ap);
}

/* Records the detail message of a failure and returns its code. */
static cq_result cq__fail(cq_sim *s, cq_result code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cq__vlog(&s->desc.logger, CQ_LOG_ERROR, fmt, ap, s->error, sizeof s->error);
    va_end(ap);
    return code;
}

static cq_result cq__create_fail(const cq_sim_desc *d, cq_result code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cq__vlog(d ? &d->logger : NULL, CQ_LOG_ERROR, fmt, ap, cq__create_error, sizeof cq__create_error);
    va_end(ap);
    return code;
}

const char *cq_sim_last_error(const cq_sim *sim)
{
    return sim ? sim->error : cq__create_error;
}

/* ------------------------------------------------------------------ >>memory */
static void *cq__default_alloc(size_t size, void *user) { (void)user; return malloc(size); }
static void cq__default_free(void *ptr, void *user) { (void)user; free(ptr); }

static void *cq__alloc(const cq_sim *s, size_t size)
{
    return s->desc.allocator.alloc(size ? size : 1, s->desc.allocator.user);
}
static void cq__free(const cq_sim *s, void *p)
{
    if (p) s->desc.allocator.free(p, s->desc.allocator.user);
}

static void cq__state_free(const cq_sim *s, cq__state *st)
{
    cq__free(s, st->x); cq__free(s, st->v); cq__free(s, st->C); cq__free(s, st->F);
    st->x = st->v = st->C = st->F = NULL;
}

static int cq__state_alloc(const cq_sim *s, cq__state *st, int n)
{
    size_t vec = (size_t)n * s->dim * s->tsize, mat = (size_t)n * s->dd * s->tsize;
    st->x = cq__alloc(s, vec); st->v = cq__alloc(s, vec);
    st->C = cq__alloc(s, mat); st->F = cq__alloc(s, mat);
    if (!st->x || !st->v || !st->C || !st->F) { cq__state_free(s, st); return 0; }
    return 1;
}

static void cq__state_copy(const cq_sim *s, cq__state *dst, const cq__state *src, int n)
{
    size_t vec = (size_t)n * s->dim * s->tsize, mat = (size_t)n * s->dd * s->tsize;
    memcpy(dst->x, src->x, vec); memcpy(dst->v, src->v, vec);
    memcpy(dst->C, src->C, mat); memcpy(dst->F, src->F, mat);
}

/* ------------------------------------------------------------------ >>conversion */
/* dst[i] = (T)src[i] for the sim's precision; returns the first index that is not finite
   after conversion (e.g. 1e300 in float), or -1. */
static long cq__from_double(const cq_sim *s, void *dst, const double *src, long count)
{
    long bad = -1;
    if (s->tsize == sizeof(float)) {
        float *d = (float *)dst;
        for (long i = 0; i < count; ++i) { d[i] = (float)src[i]; if (bad < 0 && !cq__isfinite_f32(d[i])) bad = i; }
    } else {
        double *d = (double *)dst;
        for (long i = 0; i < count; ++i) { d[i] = src[i]; if (bad < 0 && !cq__isfinite_f64(d[i])) bad = i; }
    }
    return bad;
}

static void cq__to_double(const cq_sim *s, double *dst, const void *src, long count)
{
    if (s->tsize == sizeof(float)) { const float *f = (const float *)src; for (long i = 0; i < count; ++i) dst[i] = f[i]; }
    else memcpy(dst, src, (size_t)count * sizeof(double));
}

static double cq__at(const cq_sim *s, const void *a, long i)
{
    return s->tsize == sizeof(float) ? (double)((const float *)a)[i] : ((const double *)a)[i];
}

static int cq__in_domain(const cq_sim *s, const void *x, int p)
{
    if (s->dim == 2 && s->tsize == sizeof(float))
        return cq__in_domain_2d_f32((const float *)x + (long)p * 2, &s->prm_f32);
    if (s->dim == 2 && s->tsize == sizeof(double))
        return cq__in_domain_2d_f64((const double *)x + (long)p * 2, &s->prm_f64);
    if (s->dim == 3 && s->tsize == sizeof(float))
        return cq__in_domain_3d_f32((const float *)x + (long)p * 3, &s->prm_f32);
    if (s->dim == 3 && s->tsize == sizeof(double))
        return cq__in_domain_3d_f64((const double *)x + (long)p * 3, &s->prm_f64);
    return 0;
}

/* ------------------------------------------------------------------ >>cables */
/* Cable actuators (seed 003 eqs 16-17): a cable routed through particles p_0..p_{r-1} with
   stiffness k and rest length R stores E = k/2 max(0, L - max(0, R u))^2, L = sum_i |x_{i+1} - x_i|.
   Its force f = -dE/dx enters as a velocity impulse v += dt f / m before P2G.  Computed on the
   host in double: cables are few particles. */
static void cq__add_at(const cq_sim *s, void *a, long i, double v)
{
    if (s->tsize == sizeof(float)) ((float *)a)[i] += (float)v; else ((double *)a)[i] += v;
}

/* one segment of cable c: unit direction n (from p_i to p_{i+1}) and length; 0 if degenerate */
static double cq__cable_seg(const cq_sim *s, const cq__cable *c, int i, const void *x, int *pa, int *pb, double *n)
{
    double l = 0;
    *pa = s->cable_p[c->first + i]; *pb = s->cable_p[c->first + i + 1];
    for (int k = 0; k < s->dim; ++k) {
        n[k] = cq__at(s, x, (long)*pb * s->dim + k) - cq__at(s, x, (long)*pa * s->dim + k);
        l += n[k] * n[k];
    }
    l = sqrt(l);
    for (int k = 0; k < s->dim; ++k) n[k] = l > 0 ? n[k] / l : 0;
    return l;
}

/* stretch L - max(0, R u) of cable c at positions x */
static double cq__cable_stretch(const cq_sim *s, int c, const void *x)
{
    const cq__cable *cb = &s->cables[c];
    double L = 0, n[3], target = cb->rest * s->cable_u[c];
    int a, b;
    for (int i = 0; i + 1 < cb->count; ++i) L += cq__cable_seg(s, cb, i, x, &a, &b, n);
    return L - (target > 0 ? target : 0);
}

static int cq__cable_buffers(cq_sim *s)
{
    if (s->veff_n == s->n && s->veff) return 1;
    cq__free(s, s->veff); cq__free(s, s->cable_f);
    s->veff = cq__alloc(s, (size_t)s->n * s->dim * s->tsize);
    s->cable_f = (double *)cq__alloc(s, sizeof(double) * (size_t)s->n * s->dim);
    s->veff_n = s->veff && s->cable_f ? s->n : 0;
    return s->veff_n == s->n;
}

/* Fills s->cable_f with the cable forces at state `in` and s->veff = v + dt f / m. */
static void cq__cable_veff(cq_sim *s, const cq__state *in)
{
    const int d = s->dim;
    memcpy(s->veff, in->v, (size_t)s->n * d * s->tsize);
    memset(s->cable_f, 0, sizeof(double) * (size_t)s->n * d);
    for (int c = 0; c < s->n_cables; ++c) {
        const cq__cable *cb = &s->cables[c];
        double st = cq__cable_stretch(s, c, in->x), n[3];
        int a, b;
        if (!(st > 0)) continue;
        for (int i = 0; i + 1 < cb->count; ++i) {   /* f = -k st dL/dx: pulls the route together */
            cq__cable_seg(s, cb, i, in->x, &a, &b, n);
            for (int k = 0; k < d; ++k) { s->cable_f[(long)a * d + k] += cb->k * st * n[k]; s->cable_f[(long)b * d + k] -= cb->k * st * n[k]; }
        }
    }
    for (int i = 0; i < s->n_cable_p; ++i) {
        int p = s->cable_p[i];
        int first = 1;
        for (int j = 0; j < i; ++j) if (s->cable_p[j] == p) { first = 0; break; }   /* each particle once */
        if (first)
            for (int k = 0; k < d; ++k)
                cq__add_at(s, s->veff, (long)p * d + k, s->desc.dt * s->cable_f[(long)p * d + k] / cq__at(s, s->mass, p));
    }
}

/* Adjoint of the impulse: ai->v holds dL/dveff (= dL/dv); adds dL/dx to ai->x, dL/dm to the
   mass gradient and dL/du to s->cable_grad.  s->cable_f must hold the forces at `in`. */
static void cq__cable_adj(cq_sim *s, const cq__state *in, cq__state *ai)
{
    const int d = s->dim;
    const double dt = s->desc.dt;
    for (int i = 0; i < s->n_cable_p; ++i) {   /* m: veff = v + dt f / m */
        int p = s->cable_p[i], first = 1;
        double fv = 0, m = cq__at(s, s->mass, p);
        for (int j = 0; j < i; ++j) if (s->cable_p[j] == p) { first = 0; break; }
        if (!first) continue;
        for (int k = 0; k < d; ++k) fv += s->cable_f[(long)p * d + k] * cq__at(s, ai->v, (long)p * d + k);
        cq__add_at(s, s->g_mass, p, -dt * fv / (m * m));
    }
    for (int c = 0; c < s->n_cables; ++c) {
        const cq__cable *cb = &s->cables[c];
        double st = cq__cable_stretch(s, c, in->x), dotLf = 0, n[3], w[3];
        int a, b;
        if (!(st > 0)) continue;
        /* fbar_p = dt / m_p * vbar_p;  dotLf = dL/dx . fbar */
        for (int i = 0; i + 1 < cb->count; ++i) {
            cq__cable_seg(s, cb, i, in->x, &a, &b, n);
            for (int k = 0; k < d; ++k)
                dotLf += n[k] * (dt / cq__at(s, s->mass, b) * cq__at(s, ai->v, (long)b * d + k)
                                 - dt / cq__at(s, s->mass, a) * cq__at(s, ai->v, (long)a * d + k));
        }
        if (cb->rest * s->cable_u[c] > 0) s->cable_grad[c] += cb->k * cb->rest * dotLf;
        /* f = -k st dL/dx  ->  xbar += -k (dL/dx . fbar) dL/dx - k st (d2L/dx2) fbar */
        for (int i = 0; i + 1 < cb->count; ++i) {
            double l = cq__cable_seg(s, cb, i, in->x, &a, &b, n), nw = 0;
            if (!(l > 0)) continue;
            for (int k = 0; k < d; ++k) {
                w[k] = dt / cq__at(s, s->mass, b) * cq__at(s, ai->v, (long)b * d + k)
                     - dt / cq__at(s, s->mass, a) * cq__at(s, ai->v, (long)a * d + k);
                nw += n[k] * w[k];
            }
            for (int k = 0; k < d; ++k) {
                double g = -cb->k * dotLf * n[k] - cb->k * st * (w[k] - n[k] * nw) / l;
                cq__add_at(s, ai->x, (long)b * d + k, g);
                cq__add_at(s, ai->x, (long)a * d + k, -g);
            }
        }
    }
}

/* ------------------------------------------------------------------ >>cpu_drivers */
static cq__pview_f32 cq__pview_f32_of(const cq_sim *s, const cq__state *st)
{
    cq__pview_f32 v;
    v.x = (float *)st->x; v.v = (float *)st->v; v.C = (float *)st->C; v.F = (float *)st->F;
    v.mass = (float *)s->mass; v.vol = (float *)s->vol; v.E = (float *)s->E; v.nu = (float *)s->nu;
    v.act = s->act; v.act_stress = (float *)s->act_stress;
    return v;
}

/* Counting sort of particles into x-slabs (see CQ__SLAB): order[] lists particles slab by
   slab, each slab in increasing particle index. */
static void cq__bucket_f32(cq_sim *s, const float *x)
{
    const float inv_dx = s->prm_f32.inv_dx;
    int *start = s->slab_start, *fill = s->slab_fill;
    for (int k = 0; k <= s->nslabs; ++k) start[k] = 0;
    for (int p = 0; p < s->n; ++p) {
        int sl = (int)floorf(x[(long)p * s->dim] * inv_dx - (float)0.5) / CQ__SLAB;
        sl = sl < 0 ? 0 : (sl >= s->nslabs ? s->nslabs - 1 : sl);
        start[sl + 1]++;
    }
    for (int k = 0; k < s->nslabs; ++k) { start[k + 1] += start[k]; fill[k] = start[k]; }
    for (int p = 0; p < s->n; ++p) {
        int sl = (int)floorf(x[(long)p * s->dim] * inv_dx - (float)0.5) / CQ__SLAB;
        sl = sl < 0 ? 0 : (sl >= s->nslabs ? s->nslabs - 1 : sl);
        s->order[fill[sl]++] = p;
    }
}
static cq__pview_f64 cq__pview_f64_of(const cq_sim *s, const cq__state *st)
{
    cq__pview_f64 v;
    v.x = (double *)st->x; v.v = (double *)st->v; v.C = (double *)st->C; v.F = (double *)st->F;
    v.mass = (double *)s->mass; v.vol = (double *)s->vol; v.E = (double *)s->E; v.nu = (double *)s->nu;
    v.act = s->act; v.act_stress = (double *)s->act_stress;
    return v;
}

/* Counting sort of particles into x-slabs (see CQ__SLAB): order[] lists particles slab by
   slab, each slab in increasing particle index. */
static void cq__bucket_f64(cq_sim *s, const double *x)
{
    const double inv_dx = s->prm_f64.inv_dx;
    int *start = s->slab_start, *fill = s->slab_fill;
    for (int k = 0; k <= s->nslabs; ++k) start[k] = 0;
    for (int p = 0; p < s->n; ++p) {
        int sl = (int)floor(x[(long)p * s->dim] * inv_dx - (double)0.5) / CQ__SLAB;
        sl = sl < 0 ? 0 : (sl >= s->nslabs ? s->nslabs - 1 : sl);
        start[sl + 1]++;
    }
    for (int k = 0; k < s->nslabs; ++k) { start[k + 1] += start[k]; fill[k] = start[k]; }
    for (int p = 0; p < s->n; ++p) {
        int sl = (int)floor(x[(long)p * s->dim] * inv_dx - (double)0.5) / CQ__SLAB;
        sl = sl < 0 ? 0 : (sl >= s->nslabs ? s->nslabs - 1 : sl);
        s->order[fill[sl]++] = p;
    }
}

/* >>cpu_grid_2d_fixed_corotated_f32: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_2d_fixed_corotated_f32(cq_sim *s, cq__pview_f32 in, int keep_momentum)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__gview_f32 g;
    const long nodes = s->nodes;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(float));
    memset(g.v, 0, (size_t)nodes * 2 * sizeof(float));
    cq__bucket_f32(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_2d_fixed_corotated_f32(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 2 * sizeof(float));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_2d_f32((int)i, prm, g);
}

/* >>cpu_substep_2d_fixed_corotated_f32: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_2d_fixed_corotated_f32(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), out = cq__pview_f32_of(s, out_st);
    cq__gview_f32 g;
    const int n = s->n;
    int first = n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_2d_fixed_corotated_f32(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_2d_f32(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_2d_f32(first, prm, in, out, g);
}

/* >>cpu_substep_adj_2d_fixed_corotated_f32: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_2d_fixed_corotated_f32(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), ao = cq__pview_f32_of(s, ao_st);
    cq__pview_f32 ai = cq__pview_f32_of(s, ai_st), pg = in;
    cq__gview_f32 g;
    float *gvb = (float *)s->grid_vb, *gpb = (float *)s->grid_pb, *gmb = (float *)s->grid_mb;
    const float *gp = (const float *)s->grid_p;
    float *dact = (float *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    pg.mass = (float *)s->g_mass; pg.vol = (float *)s->g_vol; pg.E = (float *)s->g_E; pg.nu = (float *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_2d_fixed_corotated_f32(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 2 * sizeof(float));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_2d_f32(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_2d_f32((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_2d_fixed_corotated_f32(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 4);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_2d_fixed_corotated_f32(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const float *f = (const float *)F, *e = (const float *)E, *q = (const float *)nu;
    for (int p = first; p < first + count; ++p) {
        float Pp[4];
        cq__pk1_2d_fixed_corotated_f32(f + (long)p * 4, e[p], q[p], -1, &s->prm_f32, NULL, Pp);
        for (int a = 0; a < 4; ++a)
            if (!cq__isfinite_f32(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_2d_fixed_corotated_f64: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_2d_fixed_corotated_f64(cq_sim *s, cq__pview_f64 in, int keep_momentum)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__gview_f64 g;
    const long nodes = s->nodes;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(double));
    memset(g.v, 0, (size_t)nodes * 2 * sizeof(double));
    cq__bucket_f64(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_2d_fixed_corotated_f64(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 2 * sizeof(double));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_2d_f64((int)i, prm, g);
}

/* >>cpu_substep_2d_fixed_corotated_f64: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_2d_fixed_corotated_f64(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), out = cq__pview_f64_of(s, out_st);
    cq__gview_f64 g;
    const int n = s->n;
    int first = n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_2d_fixed_corotated_f64(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_2d_f64(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_2d_f64(first, prm, in, out, g);
}

/* >>cpu_substep_adj_2d_fixed_corotated_f64: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_2d_fixed_corotated_f64(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), ao = cq__pview_f64_of(s, ao_st);
    cq__pview_f64 ai = cq__pview_f64_of(s, ai_st), pg = in;
    cq__gview_f64 g;
    double *gvb = (double *)s->grid_vb, *gpb = (double *)s->grid_pb, *gmb = (double *)s->grid_mb;
    const double *gp = (const double *)s->grid_p;
    double *dact = (double *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    pg.mass = (double *)s->g_mass; pg.vol = (double *)s->g_vol; pg.E = (double *)s->g_E; pg.nu = (double *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_2d_fixed_corotated_f64(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 2 * sizeof(double));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_2d_f64(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_2d_f64((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_2d_fixed_corotated_f64(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 4);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_2d_fixed_corotated_f64(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const double *f = (const double *)F, *e = (const double *)E, *q = (const double *)nu;
    for (int p = first; p < first + count; ++p) {
        double Pp[4];
        cq__pk1_2d_fixed_corotated_f64(f + (long)p * 4, e[p], q[p], -1, &s->prm_f64, NULL, Pp);
        for (int a = 0; a < 4; ++a)
            if (!cq__isfinite_f64(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_2d_neohookean_f32: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_2d_neohookean_f32(cq_sim *s, cq__pview_f32 in, int keep_momentum)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__gview_f32 g;
    const long nodes = s->nodes;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(float));
    memset(g.v, 0, (size_t)nodes * 2 * sizeof(float));
    cq__bucket_f32(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_2d_neohookean_f32(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 2 * sizeof(float));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_2d_f32((int)i, prm, g);
}

/* >>cpu_substep_2d_neohookean_f32: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_2d_neohookean_f32(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), out = cq__pview_f32_of(s, out_st);
    cq__gview_f32 g;
    const int n = s->n;
    int first = n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_2d_neohookean_f32(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_2d_f32(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_2d_f32(first, prm, in, out, g);
}

/* >>cpu_substep_adj_2d_neohookean_f32: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_2d_neohookean_f32(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), ao = cq__pview_f32_of(s, ao_st);
    cq__pview_f32 ai = cq__pview_f32_of(s, ai_st), pg = in;
    cq__gview_f32 g;
    float *gvb = (float *)s->grid_vb, *gpb = (float *)s->grid_pb, *gmb = (float *)s->grid_mb;
    const float *gp = (const float *)s->grid_p;
    float *dact = (float *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    pg.mass = (float *)s->g_mass; pg.vol = (float *)s->g_vol; pg.E = (float *)s->g_E; pg.nu = (float *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_2d_neohookean_f32(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 2 * sizeof(float));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_2d_f32(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_2d_f32((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_2d_neohookean_f32(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 4);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_2d_neohookean_f32(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const float *f = (const float *)F, *e = (const float *)E, *q = (const float *)nu;
    for (int p = first; p < first + count; ++p) {
        float Pp[4];
        cq__pk1_2d_neohookean_f32(f + (long)p * 4, e[p], q[p], -1, &s->prm_f32, NULL, Pp);
        for (int a = 0; a < 4; ++a)
            if (!cq__isfinite_f32(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_2d_neohookean_f64: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_2d_neohookean_f64(cq_sim *s, cq__pview_f64 in, int keep_momentum)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__gview_f64 g;
    const long nodes = s->nodes;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(double));
    memset(g.v, 0, (size_t)nodes * 2 * sizeof(double));
    cq__bucket_f64(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_2d_neohookean_f64(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 2 * sizeof(double));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_2d_f64((int)i, prm, g);
}

/* >>cpu_substep_2d_neohookean_f64: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_2d_neohookean_f64(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), out = cq__pview_f64_of(s, out_st);
    cq__gview_f64 g;
    const int n = s->n;
    int first = n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_2d_neohookean_f64(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_2d_f64(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_2d_f64(first, prm, in, out, g);
}

/* >>cpu_substep_adj_2d_neohookean_f64: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_2d_neohookean_f64(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), ao = cq__pview_f64_of(s, ao_st);
    cq__pview_f64 ai = cq__pview_f64_of(s, ai_st), pg = in;
    cq__gview_f64 g;
    double *gvb = (double *)s->grid_vb, *gpb = (double *)s->grid_pb, *gmb = (double *)s->grid_mb;
    const double *gp = (const double *)s->grid_p;
    double *dact = (double *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    pg.mass = (double *)s->g_mass; pg.vol = (double *)s->g_vol; pg.E = (double *)s->g_E; pg.nu = (double *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_2d_neohookean_f64(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 2 * sizeof(double));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_2d_f64(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_2d_f64((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_2d_neohookean_f64(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 4);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_2d_neohookean_f64(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const double *f = (const double *)F, *e = (const double *)E, *q = (const double *)nu;
    for (int p = first; p < first + count; ++p) {
        double Pp[4];
        cq__pk1_2d_neohookean_f64(f + (long)p * 4, e[p], q[p], -1, &s->prm_f64, NULL, Pp);
        for (int a = 0; a < 4; ++a)
            if (!cq__isfinite_f64(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_3d_fixed_corotated_f32: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_3d_fixed_corotated_f32(cq_sim *s, cq__pview_f32 in, int keep_momentum)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__gview_f32 g;
    const long nodes = s->nodes;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(float));
    memset(g.v, 0, (size_t)nodes * 3 * sizeof(float));
    cq__bucket_f32(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_3d_fixed_corotated_f32(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 3 * sizeof(float));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_3d_f32((int)i, prm, g);
}

/* >>cpu_substep_3d_fixed_corotated_f32: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_3d_fixed_corotated_f32(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), out = cq__pview_f32_of(s, out_st);
    cq__gview_f32 g;
    const int n = s->n;
    int first = n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_3d_fixed_corotated_f32(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_3d_f32(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_3d_f32(first, prm, in, out, g);
}

/* >>cpu_substep_adj_3d_fixed_corotated_f32: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_3d_fixed_corotated_f32(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), ao = cq__pview_f32_of(s, ao_st);
    cq__pview_f32 ai = cq__pview_f32_of(s, ai_st), pg = in;
    cq__gview_f32 g;
    float *gvb = (float *)s->grid_vb, *gpb = (float *)s->grid_pb, *gmb = (float *)s->grid_mb;
    const float *gp = (const float *)s->grid_p;
    float *dact = (float *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    pg.mass = (float *)s->g_mass; pg.vol = (float *)s->g_vol; pg.E = (float *)s->g_E; pg.nu = (float *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_3d_fixed_corotated_f32(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 3 * sizeof(float));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_3d_f32(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_3d_f32((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_3d_fixed_corotated_f32(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 9);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_3d_fixed_corotated_f32(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const float *f = (const float *)F, *e = (const float *)E, *q = (const float *)nu;
    for (int p = first; p < first + count; ++p) {
        float Pp[9];
        cq__pk1_3d_fixed_corotated_f32(f + (long)p * 9, e[p], q[p], -1, &s->prm_f32, NULL, Pp);
        for (int a = 0; a < 9; ++a)
            if (!cq__isfinite_f32(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_3d_fixed_corotated_f64: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_3d_fixed_corotated_f64(cq_sim *s, cq__pview_f64 in, int keep_momentum)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__gview_f64 g;
    const long nodes = s->nodes;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(double));
    memset(g.v, 0, (size_t)nodes * 3 * sizeof(double));
    cq__bucket_f64(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_3d_fixed_corotated_f64(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 3 * sizeof(double));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_3d_f64((int)i, prm, g);
}

/* >>cpu_substep_3d_fixed_corotated_f64: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_3d_fixed_corotated_f64(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), out = cq__pview_f64_of(s, out_st);
    cq__gview_f64 g;
    const int n = s->n;
    int first = n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_3d_fixed_corotated_f64(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_3d_f64(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_3d_f64(first, prm, in, out, g);
}

/* >>cpu_substep_adj_3d_fixed_corotated_f64: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_3d_fixed_corotated_f64(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), ao = cq__pview_f64_of(s, ao_st);
    cq__pview_f64 ai = cq__pview_f64_of(s, ai_st), pg = in;
    cq__gview_f64 g;
    double *gvb = (double *)s->grid_vb, *gpb = (double *)s->grid_pb, *gmb = (double *)s->grid_mb;
    const double *gp = (const double *)s->grid_p;
    double *dact = (double *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    pg.mass = (double *)s->g_mass; pg.vol = (double *)s->g_vol; pg.E = (double *)s->g_E; pg.nu = (double *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_3d_fixed_corotated_f64(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 3 * sizeof(double));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_3d_f64(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_3d_f64((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_3d_fixed_corotated_f64(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 9);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_3d_fixed_corotated_f64(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const double *f = (const double *)F, *e = (const double *)E, *q = (const double *)nu;
    for (int p = first; p < first + count; ++p) {
        double Pp[9];
        cq__pk1_3d_fixed_corotated_f64(f + (long)p * 9, e[p], q[p], -1, &s->prm_f64, NULL, Pp);
        for (int a = 0; a < 9; ++a)
            if (!cq__isfinite_f64(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_3d_neohookean_f32: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_3d_neohookean_f32(cq_sim *s, cq__pview_f32 in, int keep_momentum)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__gview_f32 g;
    const long nodes = s->nodes;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(float));
    memset(g.v, 0, (size_t)nodes * 3 * sizeof(float));
    cq__bucket_f32(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_3d_neohookean_f32(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 3 * sizeof(float));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_3d_f32((int)i, prm, g);
}

/* >>cpu_substep_3d_neohookean_f32: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_3d_neohookean_f32(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), out = cq__pview_f32_of(s, out_st);
    cq__gview_f32 g;
    const int n = s->n;
    int first = n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_3d_neohookean_f32(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_3d_f32(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_3d_f32(first, prm, in, out, g);
}

/* >>cpu_substep_adj_3d_neohookean_f32: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_3d_neohookean_f32(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f32 *prm = &s->prm_f32;
    cq__pview_f32 in = cq__pview_f32_of(s, in_st), ao = cq__pview_f32_of(s, ao_st);
    cq__pview_f32 ai = cq__pview_f32_of(s, ai_st), pg = in;
    cq__gview_f32 g;
    float *gvb = (float *)s->grid_vb, *gpb = (float *)s->grid_pb, *gmb = (float *)s->grid_mb;
    const float *gp = (const float *)s->grid_p;
    float *dact = (float *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (float *)s->grid_m; g.v = (float *)s->grid_v;
    pg.mass = (float *)s->g_mass; pg.vol = (float *)s->g_vol; pg.E = (float *)s->g_E; pg.nu = (float *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (float *)s->veff; }
    cq__cpu_grid_3d_neohookean_f32(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 3 * sizeof(float));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_3d_f32(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_3d_f32((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_3d_neohookean_f32(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 9);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_3d_neohookean_f32(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const float *f = (const float *)F, *e = (const float *)E, *q = (const float *)nu;
    for (int p = first; p < first + count; ++p) {
        float Pp[9];
        cq__pk1_3d_neohookean_f32(f + (long)p * 9, e[p], q[p], -1, &s->prm_f32, NULL, Pp);
        for (int a = 0; a < 9; ++a)
            if (!cq__isfinite_f32(Pp[a])) return p;
    }
    return -1;
}

/* >>cpu_grid_3d_neohookean_f64: P2G (slab-coloured) and the grid update from particle state `in`.
   keep_momentum: also copy the pre-update momentum to s->grid_p (the adjoint needs it). */
static void cq__cpu_grid_3d_neohookean_f64(cq_sim *s, cq__pview_f64 in, int keep_momentum)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__gview_f64 g;
    const long nodes = s->nodes;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    memset(g.m, 0, (size_t)nodes * sizeof(double));
    memset(g.v, 0, (size_t)nodes * 3 * sizeof(double));
    cq__bucket_f64(s, in.x);
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__p2g_fwd_3d_neohookean_f64(order[k], prm, in, g);
    }
    if (keep_momentum) memcpy(s->grid_p, g.v, (size_t)nodes * 3 * sizeof(double));
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_fwd_3d_f64((int)i, prm, g);
}

/* >>cpu_substep_3d_neohookean_f64: grid phase, then G2P from `in` into `out`. */
static int cq__cpu_substep_3d_neohookean_f64(cq_sim *s, const cq__state *in_st, cq__state *out_st, int *bad)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), out = cq__pview_f64_of(s, out_st);
    cq__gview_f64 g;
    const int n = s->n;
    int first = n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_3d_neohookean_f64(s, in, 0);
    CQ__OMP(parallel for schedule(static) reduction(min:first))
    for (int p = 0; p < n; ++p)
        if (cq__g2p_fwd_3d_f64(p, prm, in, out, g) != CQ__OK && p < first) first = p;
    if (first == n) { *bad = -1; return CQ__OK; }
    *bad = first;
    return cq__g2p_fwd_3d_f64(first, prm, in, out, g);
}

/* >>cpu_substep_adj_3d_neohookean_f64: the substep's adjoint, phases reversed: recompute the grid
   from `in`, G2P adjoint (slab-coloured scatter into dL/dv_i), grid adjoint per node, P2G
   adjoint (gather) per particle. */
static void cq__cpu_substep_adj_3d_neohookean_f64(cq_sim *s, const cq__state *in_st, const cq__state *ao_st, cq__state *ai_st)
{
    const cq__params_f64 *prm = &s->prm_f64;
    cq__pview_f64 in = cq__pview_f64_of(s, in_st), ao = cq__pview_f64_of(s, ao_st);
    cq__pview_f64 ai = cq__pview_f64_of(s, ai_st), pg = in;
    cq__gview_f64 g;
    double *gvb = (double *)s->grid_vb, *gpb = (double *)s->grid_pb, *gmb = (double *)s->grid_mb;
    const double *gp = (const double *)s->grid_p;
    double *dact = (double *)s->dact;
    const long nodes = s->nodes;
    const int n = s->n;
    g.m = (double *)s->grid_m; g.v = (double *)s->grid_v;
    pg.mass = (double *)s->g_mass; pg.vol = (double *)s->g_vol; pg.E = (double *)s->g_E; pg.nu = (double *)s->g_nu;
    if (s->n_cables) { cq__cable_veff(s, in_st); in.v = (double *)s->veff; }
    cq__cpu_grid_3d_neohookean_f64(s, in, 1);
    memset(gvb, 0, (size_t)nodes * 3 * sizeof(double));
    for (int colour = 0; colour < 2; ++colour) {
        const int *order = s->order, *start = s->slab_start;
        CQ__OMP(parallel for schedule(dynamic))
        for (int sl = colour; sl < s->nslabs; sl += 2)
            for (int k = start[sl]; k < start[sl + 1]; ++k)
                cq__g2p_adj_3d_f64(order[k], prm, in, g, ao, ai, gvb);
    }
    CQ__OMP(parallel for schedule(static))
    for (long i = 0; i < nodes; ++i)
        cq__grid_adj_3d_f64((int)i, prm, g.m, gp, gvb, gpb, gmb);
    CQ__OMP(parallel for schedule(static))
    for (int p = 0; p < n; ++p)
        cq__p2g_adj_3d_neohookean_f64(p, prm, in, gpb, gmb, ai, pg, dact + (long)p * 9);
    if (s->n_cables) cq__cable_adj(s, in_st, ai_st);
}

static int cq__check_stress_3d_neohookean_f64(const cq_sim *s, const void *F, const void *E, const void *nu, int first, int count)
{
    const double *f = (const double *)F, *e = (const double *)E, *q = (const double *)nu;
    for (int p = first; p < first + count; ++p) {
        double Pp[9];
        cq__pk1_3d_neohookean_f64(f + (long)p * 9, e[p], q[p], -1, &s->prm_f64, NULL, Pp);
        for (int a = 0; a < 9; ++a)
            if (!cq__isfinite_f64(Pp[a])) return p;
    }
    return -1;
}

/* [dim - 2][material - 1][precision - 1] */
static const cq__vtable cq__cpu_table[2][2][2] = {
    {
        {
            { cq__cpu_substep_2d_fixed_corotated_f32, cq__cpu_substep_adj_2d_fixed_corotated_f32,
              cq__check_stress_2d_fixed_corotated_f32 },
            { cq__cpu_substep_2d_fixed_corotated_f64, cq__cpu_substep_adj_2d_fixed_corotated_f64,
              cq__check_stress_2d_fixed_corotated_f64 },
        },
        {
            { cq__cpu_substep_2d_neohookean_f32, cq__cpu_substep_adj_2d_neohookean_f32,
              cq__check_stress_2d_neohookean_f32 },
            { cq__cpu_substep_2d_neohookean_f64, cq__cpu_substep_adj_2d_neohookean_f64,
              cq__check_stress_2d_neohookean_f64 },
        },
    },
    {
        {
            { cq__cpu_substep_3d_fixed_corotated_f32, cq__cpu_substep_adj_3d_fixed_corotated_f32,
              cq__check_stress_3d_fixed_corotated_f32 },
            { cq__cpu_substep_3d_fixed_corotated_f64, cq__cpu_substep_adj_3d_fixed_corotated_f64,
              cq__check_stress_3d_fixed_corotated_f64 },
        },
        {
            { cq__cpu_substep_3d_neohookean_f32, cq__cpu_substep_adj_3d_neohookean_f32,
              cq__check_stress_3d_neohookean_f32 },
            { cq__cpu_substep_3d_neohookean_f64, cq__cpu_substep_adj_3d_neohookean_f64,
              cq__check_stress_3d_neohookean_f64 },
        },
    },
};

/* ------------------------------------------------------------------ >>create */
static int cq__finite(double a) { return a == a && a - a == 0; }

cq_result cq_sim_create(const cq_sim_desc *desc, cq_sim **out)
{
    cq_sim_desc d;
    cq_sim *s;
    if (!out) return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_create: out is NULL");
    *out = NULL;
    if (!desc) return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_create: desc is NULL");
    d = *desc;
    if (d.dim != 2 && d.dim != 3)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.dim = %d: must be 2 or 3", d.dim);
    if (d.wall_cells == 0) d.wall_cells = 3;
    if (d.wall_cells < 1 || d.wall_cells > 64)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.wall_cells = %d: must be 0 (= 3) or 1..64", d.wall_cells);
    if (d.dim == 2) d.res[2] = 1;
    for (int a = 0; a < d.dim; ++a)
        if (d.res[a] < 2 * d.wall_cells + 4 || d.res[a] > 65536)
            return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT,
                                   "cq_sim_desc.res[%d] = %d: must be in [2*wall_cells+4 = %d, 65536]", a, d.res[a], 2 * d.wall_cells + 4);
    if ((double)d.res[0] * d.res[1] * d.res[2] * (d.dim + 1) > (double)INT_MAX)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.res: %d x %d x %d grid is too large",
                               d.res[0], d.res[1], d.res[2]);
    if (!cq__finite(d.dx) || !(d.dx > 0))
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.dx = %g: must be finite and > 0", d.dx);
    if (!cq__finite(d.dt) || !(d.dt > 0))
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.dt = %g: must be finite and > 0", d.dt);
    if (d.substeps == 0) d.substeps = 1;
    if (d.substeps < 0)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.substeps = %d: must be >= 0", d.substeps);
    for (int a = 0; a < 3; ++a)
        if (!cq__finite(d.gravity[a]))
            return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.gravity[%d] is not finite", a);
    if (d.dim == 2) d.gravity[2] = 0;
    if (d.material == CQ_MATERIAL_DEFAULT) d.material = (cq_material)1;
    if ((int)d.material < 1 || (int)d.material >= CQ_MATERIAL_COUNT)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.material = %d: unknown material", (int)d.material);
    if (d.precision == CQ_PRECISION_DEFAULT) d.precision = CQ_PRECISION_F32;
    if (d.precision != CQ_PRECISION_F32 && d.precision != CQ_PRECISION_F64)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.precision = %d: unknown precision", (int)d.precision);
    if (d.boundary == CQ_BOUNDARY_DEFAULT) d.boundary = CQ_BOUNDARY_STICKY;
    if ((int)d.boundary < CQ_BOUNDARY_STICKY || (int)d.boundary > CQ_BOUNDARY_FRICTION)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.boundary = %d: unknown boundary", (int)d.boundary);
    if (!cq__finite(d.friction) || d.friction < 0)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.friction = %g: must be finite and >= 0", d.friction);
    if (d.checkpoint_every < 0)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.checkpoint_every = %d: must be >= 0", d.checkpoint_every);
    if (d.incompressibility != 0 && (d.incompressibility < 2 || d.incompressibility > 16))
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.incompressibility = %d: must be 0 (off) or 2..16", d.incompressibility);
    if ((d.allocator.alloc == NULL) != (d.allocator.free == NULL))
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.allocator: set both alloc and free, or neither");
    if (!d.allocator.alloc) { d.allocator.alloc = cq__default_alloc; d.allocator.free = cq__default_free; }
    if ((int)d.backend < CQ_BACKEND_DEFAULT || (int)d.backend > CQ_BACKEND_CUDA)
        return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.backend = %d: unknown backend", (int)d.backend);
    if (d.precision == CQ_PRECISION_F32) {   /* the values must survive the conversion to float */
        const char *nm[6] = {"dx", "dt", "gravity[0]", "gravity[1]", "gravity[2]", "friction"};
        double dv[6];
        dv[0] = d.dx; dv[1] = d.dt; dv[2] = d.gravity[0]; dv[3] = d.gravity[1]; dv[4] = d.gravity[2]; dv[5] = d.friction;
        for (int i = 0; i < 6; ++i) {
            float f = (float)dv[i], inv = i == 0 ? 1.0f / f : 1.0f;
            if (!cq__isfinite_f32(f) || !cq__isfinite_f32(inv) || (i < 2 && !(f > 0)))
                return cq__create_fail(desc, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_desc.%s = %g: out of float range (precision F32)", nm[i], dv[i]);
        }
    }
    if (d.backend == CQ_BACKEND_CUDA)
        return cq__create_fail(desc, CQ_ERROR_BACKEND_UNAVAILABLE,
                               "cq_sim_desc.backend = CUDA: this version of chainqueen.h runs on the CPU only "
                               "(the CUDA kernels are generated and compiled but not yet loaded at run time)");

    s = (cq_sim *)d.allocator.alloc(sizeof(cq_sim), d.allocator.user);
    if (!s) return cq__create_fail(desc, CQ_ERROR_OUT_OF_MEMORY, "cq_sim_create: cannot allocate the sim");
    memset(s, 0, sizeof *s);
    s->desc = d;
    s->dim = d.dim; s->dd = d.dim * d.dim;
    s->tsize = d.precision == CQ_PRECISION_F32 ? sizeof(float) : sizeof(double);
    s->vt = &cq__cpu_table[d.dim - 2][d.material - 1][d.precision - 1];
    s->backend = CQ_BACKEND_CPU;
    s->max_group = -1;
    s->nodes = (long)d.res[0] * d.res[1] * d.res[2];
    s->nslabs = (d.res[0] + CQ__SLAB - 1) / CQ__SLAB;
    s->prm_f32.dx = (float)d.dx; s->prm_f32.inv_dx = (float)(1.0 / d.dx); s->prm_f32.dt = (float)d.dt;
    s->prm_f32.friction = (float)d.friction;
    for (int a = 0; a < 3; ++a) { s->prm_f32.gravity[a] = (float)d.gravity[a]; s->prm_f32.res[a] = d.res[a]; }
    s->prm_f32.bound = d.wall_cells; s->prm_f32.boundary = (int)d.boundary;
    s->prm_f32.incompressibility = d.incompressibility; s->prm_f32.act_groups = 0;
    s->prm_f64.dx = (double)d.dx; s->prm_f64.inv_dx = (double)(1.0 / d.dx); s->prm_f64.dt = (double)d.dt;
    s->prm_f64.friction = (double)d.friction;
    for (int a = 0; a < 3; ++a) { s->prm_f64.gravity[a] = (double)d.gravity[a]; s->prm_f64.res[a] = d.res[a]; }
    s->prm_f64.bound = d.wall_cells; s->prm_f64.boundary = (int)d.boundary;
    s->prm_f64.incompressibility = d.incompressibility; s->prm_f64.act_groups = 0;
    s->grid_m = cq__alloc(s, (size_t)s->nodes * s->tsize);
    s->grid_v = cq__alloc(s, (size_t)s->nodes * s->dim * s->tsize);
    s->slab_start = (int *)cq__alloc(s, sizeof(int) * (size_t)(s->nslabs + 1));
    s->slab_fill = (int *)cq__alloc(s, sizeof(int) * (size_t)s->nslabs);
    if (!s->grid_m || !s->grid_v || !s->slab_start || !s->slab_fill) {
        cq_sim_destroy(s);
        return cq__create_fail(desc, CQ_ERROR_OUT_OF_MEMORY, "cq_sim_create: cannot allocate a %d x %d x %d grid",
                               d.res[0], d.res[1], d.res[2]);
    }
    if (desc->backend == CQ_BACKEND_DEFAULT)
        cq__log(s, CQ_LOG_INFO, "backend: CPU (%s); CUDA is not loaded by this version of chainqueen.h",
#if defined(_OPENMP)
                "OpenMP"
#else
                "serial"
#endif
        );
    *out = s;
    return CQ_SUCCESS;
}

void cq_sim_destroy(cq_sim *s)
{
    if (!s) return;
    cq__state_free(s, &s->cur); cq__state_free(s, &s->nxt); cq__state_free(s, &s->init); cq__state_free(s, &s->snap);
    cq__free(s, s->mass); cq__free(s, s->vol); cq__free(s, s->E); cq__free(s, s->nu); cq__free(s, s->act);
    cq__free(s, s->act_stress); cq__free(s, s->grid_m); cq__free(s, s->grid_v);
    cq__free(s, s->order); cq__free(s, s->slab_start); cq__free(s, s->slab_fill);
    cq__tape_clear(s);
    cq__adjoint_free(s);
    cq__free(s, s->cables); cq__free(s, s->cable_p); cq__free(s, s->cable_u); cq__free(s, s->veff); cq__free(s, s->cable_f);
    s->desc.allocator.free(s, s->desc.allocator.user);
}

cq_backend cq_sim_backend(const cq_sim *s) { return s ? s->backend : CQ_BACKEND_DEFAULT; }
int cq_sim_particle_count(const cq_sim *s) { return s ? s->n : 0; }
int cq_sim_step_count(const cq_sim *s) { return s ? s->step : 0; }

int cq_sim_field_size(const cq_sim *s, cq_field f)
{
    if (!s) return 0;
    switch (f) {
    case CQ_FIELD_X: case CQ_FIELD_V: return s->dim;
    case CQ_FIELD_C: case CQ_FIELD_F: return s->dd;
    case CQ_FIELD_MASS: case CQ_FIELD_VOLUME: case CQ_FIELD_YOUNGS: case CQ_FIELD_POISSON: return 1;
    }
    return 0;
}

static const char *cq__field_name(cq_field f)
{
    static const char *names[] = {"x", "v", "C", "F", "mass", "volume", "youngs", "poisson"};
    return (int)f >= 0 && (int)f < 8 ? names[f] : "?";
}

/* ------------------------------------------------------------------ >>validation */
/* Checks `count` values of field f (double input, particle-major), converted into dst
   (the sim's precision).  `what` names the source in messages; `p0` is the index of the
   first particle in the sim. */
static cq_result cq__convert_field(cq_sim *s, cq_field f, void *dst, const double *src, int count, int p0, const char *what)
{
    int k = cq_sim_field_size(s, f);
    long bad = -1;
    for (long i = 0; i < (long)count * k; ++i)
        if (!cq__finite(src[i])) { bad = i; break; }
    if (bad >= 0)
        return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: %s of particle %ld is not finite (component %ld = %g)",
                        what, cq__field_name(f), p0 + bad / k, bad % k, src[bad]);
    bad = cq__from_double(s, dst, src, (long)count * k);
    if (bad >= 0)
        return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: %s of particle %ld overflows float (component %ld = %g)",
                        what, cq__field_name(f), p0 + bad / k, bad % k, src[bad]);
    for (int p = 0; p < count; ++p) {
        double a = src[p * k];
        switch (f) {
        case CQ_FIELD_X:
            if (!cq__in_domain(s, dst, p))
                return cq__fail(s, CQ_ERROR_OUT_OF_DOMAIN, "%s: x of particle %d is outside the usable grid region "
                                "[0.5 dx, (res - 1.5) dx) on some axis", what, p0 + p);
            break;
        case CQ_FIELD_MASS: case CQ_FIELD_VOLUME: case CQ_FIELD_YOUNGS:
            if (!(a > 0) || !(cq__at(s, dst, p) > 0))
                return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: %s of particle %d = %g: must be > 0", what,
                                cq__field_name(f), p0 + p, a);
            break;
        case CQ_FIELD_POISSON:
            if (!(a >= 0 && a < 0.5) || !(cq__at(s, dst, p) < 0.5))
                return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: poisson of particle %d = %g: must be in [0, 0.5)", what, p0 + p, a);
            break;
        default: break;
        }
    }
    return CQ_SUCCESS;
}

static cq_result cq__check_stress(cq_sim *s, const void *F, const void *E, const void *nu, int first, int count, const char *what)
{
    int bad = s->vt->check_stress(s, F, E, nu, first, count);
    if (bad >= 0) {
        double det;
        if (s->dim == 2) det = cq__at(s, F, 4L * bad) * cq__at(s, F, 4L * bad + 3) - cq__at(s, F, 4L * bad + 1) * cq__at(s, F, 4L * bad + 2);
        else {
            double m[9];
            for (int i = 0; i < 9; ++i) m[i] = cq__at(s, F, 9L * bad + i);
            det = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
        }
        return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: the stress of particle %d is not finite at its F (det F = %g, E = %g, "
                        "nu = %g); this material may need det F > 0", what, bad, det, cq__at(s, E, bad), cq__at(s, nu, bad));
    }
    return CQ_SUCCESS;
}

static void cq__check_dt(cq_sim *s, int first, int count)
{
    double worst = -1;
    int wp = -1;
    for (int p = first; p < first + count; ++p) {
        double rho = cq__at(s, s->mass, p) / cq__at(s, s->vol, p);
        double lim = s->desc.dx * sqrt(rho / cq__at(s, s->E, p));
        if (wp < 0 || lim < worst) { worst = lim; wp = p; }
    }
    if (wp >= 0 && s->desc.dt > worst)
        cq__log(s, CQ_LOG_WARNING, "dt = %g exceeds the explicit stability estimate dx*sqrt(rho/E) = %g "
                "(particle %d); the simulation may blow up", s->desc.dt, worst, wp);
}

/* ------------------------------------------------------------------ >>particles */
cq_result cq_sim_add_particles(cq_sim *s, const cq_particles_desc *pd)
{
    const char *what = "cq_sim_add_particles";
    cq__state cur = {0, 0, 0, 0}, nxt = {0, 0, 0, 0}, init = {0, 0, 0, 0};
    void *mass = NULL, *vol = NULL, *E = NULL, *nu = NULL;
    int *act = NULL, *order = NULL;
    cq_result r = CQ_SUCCESS;
    double *tmp = NULL;
    int n0, n1, max_group;
    size_t ts;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (!pd) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", what);
    if (s->step != 0)
        return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: the sim is at step %d; particles are added at step 0 "
                        "(call cq_sim_reset first)", what, s->step);
    if (pd->count < 0) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: count = %d: must be >= 0", what, pd->count);
    if (pd->count == 0) return CQ_SUCCESS;
    if (!pd->x) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: x is NULL (positions are required)", what);
    if (pd->count > (INT_MAX - s->n) / 9)
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: count = %d: too many particles", what, pd->count);
    {
        const char *nm[4] = {"default_mass", "default_volume", "default_youngs", "default_poisson"};
        double dv[4] = {pd->default_mass, pd->default_volume, pd->default_youngs, pd->default_poisson};
        for (int i = 0; i < 4; ++i)
            if (!cq__finite(dv[i]) || dv[i] < 0 || (i == 3 && dv[i] >= 0.5))
                return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: %s = %g: must be finite and %s", what, nm[i], dv[i],
                                i == 3 ? "in [0, 0.5)" : ">= 0 (0 = library default)");
    }
    n0 = s->n; n1 = n0 + pd->count; ts = s->tsize;
    if (!cq__state_alloc(s, &cur, n1) || !cq__state_alloc(s, &nxt, n1) || !cq__state_alloc(s, &init, n1)) goto oom;
    mass = cq__alloc(s, (size_t)n1 * ts); vol = cq__alloc(s, (size_t)n1 * ts);
    E = cq__alloc(s, (size_t)n1 * ts); nu = cq__alloc(s, (size_t)n1 * ts);
    act = (int *)cq__alloc(s, (size_t)n1 * sizeof(int)); order = (int *)cq__alloc(s, (size_t)n1 * sizeof(int));
    tmp = (double *)cq__alloc(s, (size_t)pd->count * s->dd * sizeof(double));
    if (!mass || !vol || !E || !nu || !act || !order || !tmp) goto oom;
    if (n0) {
        cq__state_copy(s, &cur, &s->cur, n0);
        memcpy(mass, s->mass, n0 * ts); memcpy(vol, s->vol, n0 * ts);
        memcpy(E, s->E, n0 * ts); memcpy(nu, s->nu, n0 * ts); memcpy(act, s->act, n0 * sizeof(int));
    }
    {
        /* state: given arrays, else 0 / I / 0 */
        const double *srcs[4] = {pd->x, pd->v, pd->C, pd->F};
        const cq_field fs[4] = {CQ_FIELD_X, CQ_FIELD_V, CQ_FIELD_C, CQ_FIELD_F};
        void *dsts[4] = {cur.x, cur.v, cur.C, cur.F};
        for (int i = 0; i < 4 && r == CQ_SUCCESS; ++i) {
            int k = cq_sim_field_size(s, fs[i]);
            const double *src = srcs[i];
            if (!src) {
                for (long j = 0; j < (long)pd->count * k; ++j)
                    tmp[j] = fs[i] == CQ_FIELD_F && (j % k) % (s->dim + 1) == 0 ? 1.0 : 0.0;
                src = tmp;
            }
            r = cq__convert_field(s, fs[i], (char *)dsts[i] + (size_t)n0 * k * ts, src, pd->count, n0, what);
        }
    }
    {
        double defs[4];
        const double *srcs[4] = {pd->mass, pd->volume, pd->youngs, pd->poisson};
        const cq_field fs[4] = {CQ_FIELD_MASS, CQ_FIELD_VOLUME, CQ_FIELD_YOUNGS, CQ_FIELD_POISSON};
        void *dsts[4] = {mass, vol, E, nu};
        defs[1] = pd->default_volume > 0 ? pd->default_volume : pow(0.5 * s->desc.dx, s->dim);
        defs[0] = pd->default_mass > 0 ? pd->default_mass : defs[1];
        defs[2] = pd->default_youngs > 0 ? pd->default_youngs : 1e4;
        defs[3] = pd->default_poisson;
        for (int i = 0; i < 4 && r == CQ_SUCCESS; ++i) {
            const double *src = srcs[i];
            if (!src) { for (int j = 0; j < pd->count; ++j) tmp[j] = defs[i]; src = tmp; }
            r = cq__convert_field(s, fs[i], (char *)dsts[i] + (size_t)n0 * ts, src, pd->count, n0, what);
        }
    }
    max_group = s->max_group;
    for (int j = 0; j < pd->count && r == CQ_SUCCESS; ++j) {
        int g = pd->actuator ? pd->actuator[j] : -1;
        if (g < -1) r = cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: actuator of particle %d = %d: must be >= -1", what, n0 + j, g);
        else if (s->act_groups > 0 && g >= s->act_groups)
            r = cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: actuator of particle %d = %d, but the actuation set has %d groups "
                         "(add particles first, or set the actuation with 0 groups)", what, n0 + j, g, s->act_groups);
        act[n0 + j] = g;
        if (g > max_group) max_group = g;
    }
    if (r == CQ_SUCCESS) r = cq__check_stress(s, cur.F, E, nu, n0, pd->count, what);
    if (r != CQ_SUCCESS) goto fail;
    cq__state_copy(s, &init, &cur, n1);
    cq__state_free(s, &s->cur); cq__state_free(s, &s->nxt); cq__state_free(s, &s->init); cq__state_free(s, &s->snap);
    cq__free(s, s->mass); cq__free(s, s->vol); cq__free(s, s->E); cq__free(s, s->nu); cq__free(s, s->act); cq__free(s, s->order);
    s->cur = cur; s->nxt = nxt; s->init = init;
    s->mass = mass; s->vol = vol; s->E = E; s->nu = nu; s->act = act; s->order = order;
    s->n = n1; s->max_group = max_group;
    cq__free(s, tmp);
    cq__check_dt(s, n0, pd->count);
    return CQ_SUCCESS;
oom:
    r = cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate storage for %d particles", what, n1);
fail:
    cq__state_free(s, &cur); cq__state_free(s, &nxt); cq__state_free(s, &init);
    cq__free(s, mass); cq__free(s, vol); cq__free(s, E); cq__free(s, nu); cq__free(s, act); cq__free(s, order); cq__free(s, tmp);
    return r;
}

static void *cq__field_ptr(const cq_sim *s, const cq__state *st, cq_field f)
{
    switch (f) {
    case CQ_FIELD_X: return st->x;
    case CQ_FIELD_V: return st->v;
    case CQ_FIELD_C: return st->C;
    case CQ_FIELD_F: return st->F;
    case CQ_FIELD_MASS: return s->mass;
    case CQ_FIELD_VOLUME: return s->vol;
    case CQ_FIELD_YOUNGS: return s->E;
    case CQ_FIELD_POISSON: return s->nu;
    }
    return NULL;
}

cq_result cq_sim_get(const cq_sim *s, cq_field f, double *out)
{
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (cq_sim_field_size(s, f) == 0)
        return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_get: field = %d: unknown field", (int)f);
    if (!out && s->n) return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_get: out is NULL");
    if (s->n) cq__to_double(s, out, cq__field_ptr(s, s->hook_state ? s->hook_state : &s->cur, f),
                            (long)s->n * cq_sim_field_size(s, f));
    return CQ_SUCCESS;
}

cq_result cq_sim_set(cq_sim *s, cq_field f, const double *in)
{
    const char *what = "cq_sim_set";
    int k;
    void *tmp;
    cq_result r;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    k = cq_sim_field_size(s, f);
    if (k == 0) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: field = %d: unknown field", what, (int)f);
    if (!in && s->n) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: %s: input is NULL", what, cq__field_name(f));
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: called inside a backward hook", what);
    if (s->step > 0 && s->desc.checkpoint_every > 0)
        return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: %s at step %d would invalidate the tape; call cq_sim_reset first "
                        "(or create the sim with checkpoint_every = 0)", what, cq__field_name(f), s->step);
    if (s->n == 0) return CQ_SUCCESS;
    tmp = cq__alloc(s, (size_t)s->n * k * s->tsize);
    if (!tmp) return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate a temporary", what);
    r = cq__convert_field(s, f, tmp, in, s->n, 0, what);
    if (r == CQ_SUCCESS && (f == CQ_FIELD_F || f == CQ_FIELD_YOUNGS || f == CQ_FIELD_POISSON))
        r = cq__check_stress(s, f == CQ_FIELD_F ? tmp : s->cur.F, f == CQ_FIELD_YOUNGS ? tmp : s->E,
                             f == CQ_FIELD_POISSON ? tmp : s->nu, 0, s->n, what);
    if (r == CQ_SUCCESS) {
        size_t bytes = (size_t)s->n * k * s->tsize;
        s->has_grad = 0;
        memcpy(cq__field_ptr(s, &s->cur, f), tmp, bytes);
        if (s->step == 0 && f <= CQ_FIELD_F) memcpy(cq__field_ptr(s, &s->init, f), tmp, bytes);
        if (f == CQ_FIELD_MASS || f == CQ_FIELD_VOLUME || f == CQ_FIELD_YOUNGS) cq__check_dt(s, 0, s->n);
    }
    cq__free(s, tmp);
    return r;
}

cq_result cq_sim_set_actuation(cq_sim *s, int groups, const double *stress)
{
    const char *what = "cq_sim_set_actuation";
    void *buf = NULL;
    long bad;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: called inside a backward hook", what);
    if (groups < 0 || groups > 1 << 20) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: groups = %d: must be in [0, 2^20]", what, groups);
    if (groups > 0 && groups <= s->max_group)
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: groups = %d but particles use actuator group %d "
                        "(give all groups, or 0 to switch actuation off)", what, groups, s->max_group);
    if (groups > 0 && !stress) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: stress is NULL", what);
    for (long i = 0; i < (long)groups * s->dd; ++i)
        if (!cq__finite(stress[i]))
            return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: stress of group %ld (component %ld) is not finite at step %d",
                            what, i / s->dd, i % s->dd, s->step);
    if (groups > 0) {
        buf = cq__alloc(s, (size_t)groups * s->dd * s->tsize);
        if (!buf) return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %d groups", what, groups);
        bad = cq__from_double(s, buf, stress, (long)groups * s->dd);
        if (bad >= 0) {
            cq__free(s, buf);
            return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: stress of group %ld overflows float", what, bad / s->dd);
        }
    }
    cq__free(s, s->act_stress);
    s->act_stress = buf;
    s->act_groups = groups;
    s->prm_f32.act_groups = s->prm_f64.act_groups = groups;
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------ >>tape */
static void cq__tape_clear(cq_sim *s)
{
    for (int i = 0; i < s->cap_ckpt; ++i) cq__state_free(s, &s->ckpt[i]);
    cq__free(s, s->ckpt);
    for (int i = 0; i < s->cap_acts; ++i) { cq__free(s, s->acts[i].stress); cq__free(s, s->acts[i].cable_u); }
    cq__free(s, s->acts);
    s->ckpt = NULL; s->acts = NULL;
    s->n_ckpt = s->cap_ckpt = s->cap_acts = 0;
}

static void cq__adjoint_free(cq_sim *s)
{
    for (int i = 0; i < s->n_seg; ++i) cq__state_free(s, &s->seg[i]);
    cq__free(s, s->seg); s->seg = NULL; s->n_seg = 0;
    cq__state_free(s, &s->adj[0]); cq__state_free(s, &s->adj[1]);
    cq__free(s, s->g_mass); cq__free(s, s->g_vol); cq__free(s, s->g_E); cq__free(s, s->g_nu); cq__free(s, s->dact);
    cq__free(s, s->act_grad); cq__free(s, s->grid_p); cq__free(s, s->grid_vb); cq__free(s, s->grid_pb); cq__free(s, s->grid_mb);
    s->g_mass = s->g_vol = s->g_E = s->g_nu = s->dact = s->grid_p = s->grid_vb = s->grid_pb = s->grid_mb = NULL;
    s->act_grad = NULL; s->act_grad_groups = 0; s->adj_n = 0; s->has_grad = 0; s->grad_state = NULL;
    cq__free(s, s->cable_grad); s->cable_grad = NULL;
}

/* Records what the backward pass needs before step s->step runs: the state when the step is a
   multiple of checkpoint_every, and the step's actuation. */
static cq_result cq__tape_record(cq_sim *s)
{
    const int k = s->desc.checkpoint_every, n = s->step;
    if (n >= s->cap_acts) {
        int cap = s->cap_acts ? 2 * s->cap_acts : 64;
        cq__tape_act *na;
        while (cap <= n) cap *= 2;
        na = (cq__tape_act *)cq__alloc(s, sizeof *na * (size_t)cap);
        if (!na) return CQ_ERROR_OUT_OF_MEMORY;
        memset(na, 0, sizeof *na * (size_t)cap);
        if (s->acts) memcpy(na, s->acts, sizeof *na * (size_t)s->cap_acts);
        cq__free(s, s->acts);
        s->acts = na; s->cap_acts = cap;
    }
    cq__free(s, s->acts[n].stress);
    cq__free(s, s->acts[n].cable_u);
    s->acts[n].stress = NULL; s->acts[n].cable_u = NULL; s->acts[n].groups = s->act_groups;
    if (s->n_cables) {
        s->acts[n].cable_u = (double *)cq__alloc(s, sizeof(double) * (size_t)s->n_cables);
        if (!s->acts[n].cable_u) return CQ_ERROR_OUT_OF_MEMORY;
        memcpy(s->acts[n].cable_u, s->cable_u, sizeof(double) * (size_t)s->n_cables);
    }
    if (s->act_groups) {
        size_t bytes = (size_t)s->act_groups * s->dd * s->tsize;
        s->acts[n].stress = cq__alloc(s, bytes);
        if (!s->acts[n].stress) return CQ_ERROR_OUT_OF_MEMORY;
        memcpy(s->acts[n].stress, s->act_stress, bytes);
    }
    if (n % k == 0) {
        int c = n / k;
        if (c >= s->cap_ckpt) {
            int cap = s->cap_ckpt ? 2 * s->cap_ckpt : 16;
            cq__state *nc;
            while (cap <= c) cap *= 2;
            nc = (cq__state *)cq__alloc(s, sizeof *nc * (size_t)cap);
            if (!nc) return CQ_ERROR_OUT_OF_MEMORY;
            memset(nc, 0, sizeof *nc * (size_t)cap);
            if (s->ckpt) memcpy(nc, s->ckpt, sizeof *nc * (size_t)s->cap_ckpt);
            cq__free(s, s->ckpt);
            s->ckpt = nc; s->cap_ckpt = cap;
        }
        if (!s->ckpt[c].x && !cq__state_alloc(s, &s->ckpt[c], s->n)) return CQ_ERROR_OUT_OF_MEMORY;
        cq__state_copy(s, &s->ckpt[c], &s->cur, s->n);
        s->n_ckpt = c + 1;
    }
    return CQ_SUCCESS;
}

size_t cq_sim_tape_bytes(const cq_sim *s)
{
    size_t state, total = 0;
    if (!s) return 0;
    state = (size_t)s->n * (2 * s->dim + 2 * s->dd) * s->tsize;
    for (int i = 0; i < s->cap_ckpt; ++i) if (s->ckpt[i].x) total += state;
    for (int i = 0; i < s->step && i < s->cap_acts; ++i) total += (size_t)s->acts[i].groups * s->dd * s->tsize;
    total += sizeof(*s->acts) * (size_t)s->cap_acts + sizeof(cq__state) * (size_t)s->cap_ckpt;
    total += (size_t)s->n_seg * state;   /* the segment buffer of the last backward pass */
    return total;
}

/* ------------------------------------------------------------------ >>step */
cq_result cq_sim_step(cq_sim *s, int steps)
{
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "cq_sim_step: called inside a backward hook");
    if (steps < 0 || steps > INT_MAX - s->step)
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_step: steps = %d: must be >= 0 and keep the step count "
                        "(now %d) within INT_MAX", steps, s->step);
    s->has_grad = 0;
    if (s->n == 0) { s->step += steps; return CQ_SUCCESS; }   /* nothing moves */
    if (s->desc.substeps > 1 && !s->snap.x && !cq__state_alloc(s, &s->snap, s->n))
        return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "cq_sim_step: cannot allocate the step snapshot");
    if (s->n_cables && !cq__cable_buffers(s))
        return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "cq_sim_step: cannot allocate the cable buffers");
    for (int k = 0; k < steps; ++k) {
        if (s->desc.checkpoint_every > 0 && cq__tape_record(s) != CQ_SUCCESS)
            return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "cq_sim_step: step %d: cannot grow the tape (%lu bytes so far)",
                            s->step, (unsigned long)cq_sim_tape_bytes(s));
        if (s->desc.substeps > 1) cq__state_copy(s, &s->snap, &s->cur, s->n);
        for (int sub = 0; sub < s->desc.substeps; ++sub) {
            int bad = -1, st = s->vt->substep(s, &s->cur, &s->nxt, &bad);
            if (st != CQ__OK) {
                cq_result code = st == CQ__NONFINITE ? CQ_ERROR_NON_FINITE : CQ_ERROR_OUT_OF_DOMAIN;
                double xb[3] = {0, 0, 0};
                for (int a = 0; a < s->dim; ++a) xb[a] = cq__at(s, s->nxt.x, (long)bad * s->dim + a);
                if (sub > 0) cq__state_copy(s, &s->cur, &s->snap, s->n);
                return cq__fail(s, code, "cq_sim_step: step %d (substep %d): particle %d %s (x = %g %g %g); the sim "
                                "stays at step %d", s->step, sub, bad,
                                st == CQ__NONFINITE ? "became non-finite (x, v, C or F)" : "left the usable grid region",
                                xb[0], xb[1], xb[2], s->step);
            }
            { cq__state t = s->cur; s->cur = s->nxt; s->nxt = t; }
        }
        s->step++;
    }
    return CQ_SUCCESS;
}

cq_result cq_sim_reset(cq_sim *s)
{
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "cq_sim_reset: called inside a backward hook");
    if (s->n) cq__state_copy(s, &s->cur, &s->init, s->n);
    s->step = 0;
    s->has_grad = 0;
    cq__tape_clear(s);
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------ >>reverse */
static cq_result cq__adjoint_alloc(cq_sim *s)
{
    const int S = s->desc.substeps, k = s->desc.checkpoint_every;
    const size_t ts = s->tsize, n = (size_t)s->n;
    if (s->adj_n != s->n) cq__adjoint_free(s);
    if (!s->adj[0].x) {
        if (!cq__state_alloc(s, &s->adj[0], s->n) || !cq__state_alloc(s, &s->adj[1], s->n)) return CQ_ERROR_OUT_OF_MEMORY;
        s->g_mass = cq__alloc(s, n * ts); s->g_vol = cq__alloc(s, n * ts); s->g_E = cq__alloc(s, n * ts); s->g_nu = cq__alloc(s, n * ts);
        s->dact = cq__alloc(s, n * s->dd * ts);
        s->grid_p = cq__alloc(s, (size_t)s->nodes * s->dim * ts); s->grid_vb = cq__alloc(s, (size_t)s->nodes * s->dim * ts);
        s->grid_pb = cq__alloc(s, (size_t)s->nodes * s->dim * ts); s->grid_mb = cq__alloc(s, (size_t)s->nodes * ts);
        s->adj_n = s->n;
        if (!s->g_mass || !s->g_vol || !s->g_E || !s->g_nu || !s->dact || !s->grid_p || !s->grid_vb || !s->grid_pb || !s->grid_mb)
            return CQ_ERROR_OUT_OF_MEMORY;
    }
    if (s->n_seg < k * S + 1) {
        cq__state *ns = (cq__state *)cq__alloc(s, sizeof *ns * (size_t)(k * S + 1));
        if (!ns) return CQ_ERROR_OUT_OF_MEMORY;
        memset(ns, 0, sizeof *ns * (size_t)(k * S + 1));
        if (s->seg) memcpy(ns, s->seg, sizeof *ns * (size_t)s->n_seg);
        cq__free(s, s->seg);
        s->seg = ns;
        for (int i = s->n_seg; i < k * S + 1; ++i) {
            if (!cq__state_alloc(s, &s->seg[i], s->n)) { s->n_seg = i; return CQ_ERROR_OUT_OF_MEMORY; }
        }
        s->n_seg = k * S + 1;
    }
    return CQ_SUCCESS;
}

static void cq__use_actuation(cq_sim *s, int groups, void *stress, double *cable_u)
{
    s->act_stress = stress; s->act_groups = groups;
    if (s->n_cables) s->cable_u = cable_u;
    s->prm_f32.act_groups = s->prm_f64.act_groups = groups;
}

/* Converts a seed (NULL = 0) into adjoint array dst; names the first non-finite entry. */
static cq_result cq__seed(cq_sim *s, void *dst, const double *src, cq_field f, const char *what)
{
    const long cnt = (long)s->n * cq_sim_field_size(s, f);
    if (!src) { memset(dst, 0, (size_t)cnt * s->tsize); return CQ_SUCCESS; }
    for (long i = 0; i < cnt; ++i)
        if (!cq__finite(src[i]))
            return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: %s of particle %ld is not finite", what,
                            cq__field_name(f), i / cq_sim_field_size(s, f));
    if (cq__from_double(s, dst, src, cnt) >= 0)
        return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: %s overflows float", what, cq__field_name(f));
    return CQ_SUCCESS;
}

cq_result cq_sim_backward(cq_sim *s, const double *dL_dx, const double *dL_dv, const double *dL_dF,
                          const double *dL_dC, cq_backward_hook hook, void *user)
{
    const char *what = "cq_sim_backward";
    const int T = s ? s->step : 0, S = s ? s->desc.substeps : 1, k = s ? s->desc.checkpoint_every : 0;
    cq__state *A, *B;
    cq_result r;
    void *saved_stress;
    double *saved_cable_u;
    int saved_groups;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: called inside a backward hook", what);
    if (k <= 0)
        return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: no tape: create the sim with checkpoint_every >= 1 "
                        "(1 = keep every step, ~sqrt(steps) = O(sqrt T) memory)", what);
    if (s->n == 0) {
        s->in_backward = 1;
        for (int n = T - 1; n >= 0; --n) if (hook) hook(s, n, user);
        s->in_backward = 0; s->has_grad = 1;
        return CQ_SUCCESS;
    }
    if (cq__adjoint_alloc(s) != CQ_SUCCESS) {
        cq__adjoint_free(s);
        return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate the adjoint buffers", what);
    }
    if (s->n_cables) {
        cq__free(s, s->cable_grad);
        s->cable_grad = (double *)cq__alloc(s, sizeof(double) * (size_t)s->n_cables);
        if (!s->cable_grad || !cq__cable_buffers(s))
            return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate the cable buffers", what);
    }
    A = &s->adj[0]; B = &s->adj[1];
    if ((r = cq__seed(s, A->x, dL_dx, CQ_FIELD_X, what)) || (r = cq__seed(s, A->v, dL_dv, CQ_FIELD_V, what)) ||
        (r = cq__seed(s, A->F, dL_dF, CQ_FIELD_F, what)) || (r = cq__seed(s, A->C, dL_dC, CQ_FIELD_C, what)))
        return r;
    memset(s->g_mass, 0, (size_t)s->n * s->tsize); memset(s->g_vol, 0, (size_t)s->n * s->tsize);
    memset(s->g_E, 0, (size_t)s->n * s->tsize); memset(s->g_nu, 0, (size_t)s->n * s->tsize);
    saved_stress = s->act_stress; saved_groups = s->act_groups; saved_cable_u = s->cable_u;
    s->in_backward = 1;
    for (int c = T > 0 ? ((T - 1) / k) * k : -1; c >= 0; c -= k) {
        const int e = c + k < T ? c + k : T;
        /* recompute the segment's substep inputs from its checkpoint */
        cq__state_copy(s, &s->seg[0], &s->ckpt[c / k], s->n);
        for (int m = 0; m < e - c; ++m) {
            cq__use_actuation(s, s->acts[c + m].groups, s->acts[c + m].stress, s->acts[c + m].cable_u);
            for (int sub = 0; sub < S; ++sub) {
                int idx = m * S + sub, bad = -1;
                if (m == e - c - 1 && sub == S - 1) break;   /* the segment's end state is not needed */
                if (s->vt->substep(s, &s->seg[idx], &s->seg[idx + 1], &bad) != CQ__OK) {
                    s->in_backward = 0;
                    cq__use_actuation(s, saved_groups, saved_stress, saved_cable_u);
                    return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: recomputing step %d from the tape failed at particle %d",
                                    what, c + m, bad);
                }
            }
        }
        for (int m = e - c - 1; m >= 0; --m) {
            const int n = c + m, groups = s->acts[n].groups;
            cq__use_actuation(s, groups, s->acts[n].stress, s->acts[n].cable_u);
            if (s->n_cables) memset(s->cable_grad, 0, sizeof(double) * (size_t)s->n_cables);
            if (groups > s->act_grad_groups) {
                cq__free(s, s->act_grad);
                s->act_grad = (double *)cq__alloc(s, sizeof(double) * (size_t)groups * s->dd);
                s->act_grad_groups = s->act_grad ? groups : 0;
                if (!s->act_grad) {
                    s->in_backward = 0;
                    cq__use_actuation(s, saved_groups, saved_stress, saved_cable_u);
                    return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate the actuation gradient", what);
                }
            }
            if (groups) memset(s->act_grad, 0, sizeof(double) * (size_t)groups * s->dd);
            for (int sub = S - 1; sub >= 0; --sub) {
                cq__state *t;
                s->vt->substep_adj(s, &s->seg[m * S + sub], A, B);
                t = A; A = B; B = t;
                for (int p = 0; p < s->n && groups; ++p)   /* particle order: deterministic */
                    if (s->act[p] >= 0 && s->act[p] < groups)
                        for (int a = 0; a < s->dd; ++a) s->act_grad[s->act[p] * s->dd + a] += cq__at(s, s->dact, (long)p * s->dd + a);
            }
            s->hook_state = &s->seg[m * S];
            s->hook_adj = A;
            s->hook_step = n;
            if (hook) hook(s, n, user);
        }
    }
    s->hook_state = NULL; s->hook_adj = NULL;
    s->in_backward = 0;
    cq__use_actuation(s, saved_groups, saved_stress, saved_cable_u);
    s->grad_state = A;
    s->has_grad = 1;
    return CQ_SUCCESS;
}

cq_result cq_sim_actuation_grad(const cq_sim *s, double *out)
{
    int groups;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (!s->hook_adj)
        return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_STATE, "cq_sim_actuation_grad: only inside a cq_sim_backward hook");
    groups = s->act_groups;
    if (groups && !out) return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_actuation_grad: out is NULL");
    if (groups) memcpy(out, s->act_grad, sizeof(double) * (size_t)groups * s->dd);
    return CQ_SUCCESS;
}

cq_result cq_sim_add_state_grad(cq_sim *s, cq_field f, const double *g)
{
    const char *what = "cq_sim_add_state_grad";
    int k;
    void *dst;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (!s->hook_adj) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: only inside a cq_sim_backward hook", what);
    k = cq_sim_field_size(s, f);
    if (!k) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: field = %d: unknown field", what, (int)f);
    if (!g) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: %s: g is NULL", what, cq__field_name(f));
    for (long i = 0; i < (long)s->n * k; ++i)
        if (!cq__finite(g[i]))
            return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: %s of particle %ld is not finite (hook of step %d)", what,
                            cq__field_name(f), i / k, s->hook_step);
    switch (f) {
    case CQ_FIELD_X: dst = s->hook_adj->x; break;
    case CQ_FIELD_V: dst = s->hook_adj->v; break;
    case CQ_FIELD_C: dst = s->hook_adj->C; break;
    case CQ_FIELD_F: dst = s->hook_adj->F; break;
    case CQ_FIELD_MASS: dst = s->g_mass; break;
    case CQ_FIELD_VOLUME: dst = s->g_vol; break;
    case CQ_FIELD_YOUNGS: dst = s->g_E; break;
    default: dst = s->g_nu; break;
    }
    if (s->tsize == sizeof(float)) { float *d = (float *)dst; for (long i = 0; i < (long)s->n * k; ++i) d[i] += (float)g[i]; }
    else { double *d = (double *)dst; for (long i = 0; i < (long)s->n * k; ++i) d[i] += g[i]; }
    return CQ_SUCCESS;
}

cq_result cq_sim_grad(const cq_sim *s, cq_field f, double *out)
{
    const void *src;
    int k;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (!s->has_grad)
        return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_STATE, "cq_sim_grad: no gradients: call cq_sim_backward first "
                        "(stepping, setting or resetting clears them)");
    k = cq_sim_field_size(s, f);
    if (!k) return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_grad: field = %d: unknown field", (int)f);
    if (!out && s->n) return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_grad: out is NULL");
    if (!s->n) return CQ_SUCCESS;
    switch (f) {
    case CQ_FIELD_X: src = s->grad_state->x; break;
    case CQ_FIELD_V: src = s->grad_state->v; break;
    case CQ_FIELD_C: src = s->grad_state->C; break;
    case CQ_FIELD_F: src = s->grad_state->F; break;
    case CQ_FIELD_MASS: src = s->g_mass; break;
    case CQ_FIELD_VOLUME: src = s->g_vol; break;
    case CQ_FIELD_YOUNGS: src = s->g_E; break;
    default: src = s->g_nu; break;
    }
    cq__to_double(s, out, src, (long)s->n * k);
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------ >>cable_api */
int cq_sim_cable_count(const cq_sim *s) { return s ? s->n_cables : 0; }

cq_result cq_sim_add_cable(cq_sim *s, int count, const int *particles, double stiffness, double rest_length)
{
    const char *what = "cq_sim_add_cable";
    cq__cable *nc;
    int *np;
    double *nu;
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: called inside a backward hook", what);
    if (s->step != 0)
        return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: the sim is at step %d; cables are added at step 0 (call cq_sim_reset first)", what, s->step);
    if (count < 2 || count > s->n) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: count = %d: a cable runs through 2..%d particles", what, count, s->n);
    if (!particles) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: particles is NULL", what);
    for (int i = 0; i < count; ++i)
        if (particles[i] < 0 || particles[i] >= s->n)
            return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: particles[%d] = %d: no such particle (the sim has %d)", what, i, particles[i], s->n);
    if (!cq__finite(stiffness) || !(stiffness > 0))
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: stiffness = %g: must be finite and > 0", what, stiffness);
    if (!cq__finite(rest_length) || rest_length < 0)
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: rest_length = %g: must be finite and >= 0", what, rest_length);
    nc = (cq__cable *)cq__alloc(s, sizeof *nc * (size_t)(s->n_cables + 1));
    np = (int *)cq__alloc(s, sizeof(int) * (size_t)(s->n_cable_p + count));
    nu = (double *)cq__alloc(s, sizeof(double) * (size_t)(s->n_cables + 1));
    if (!nc || !np || !nu) {
        cq__free(s, nc); cq__free(s, np); cq__free(s, nu);
        return cq__fail(s, CQ_ERROR_OUT_OF_MEMORY, "%s: cannot allocate the cable", what);
    }
    if (s->n_cables) { memcpy(nc, s->cables, sizeof *nc * (size_t)s->n_cables); memcpy(nu, s->cable_u, sizeof(double) * (size_t)s->n_cables); }
    if (s->n_cable_p) memcpy(np, s->cable_p, sizeof(int) * (size_t)s->n_cable_p);
    memcpy(np + s->n_cable_p, particles, sizeof(int) * (size_t)count);
    nc[s->n_cables].first = s->n_cable_p; nc[s->n_cables].count = count;
    nc[s->n_cables].k = stiffness; nc[s->n_cables].rest = rest_length;
    nu[s->n_cables] = 1.0;   /* u = 1: the cable is its rest length */
    cq__free(s, s->cables); cq__free(s, s->cable_p); cq__free(s, s->cable_u);
    s->cables = nc; s->cable_p = np; s->cable_u = nu;
    s->n_cables++; s->n_cable_p += count;
    s->has_grad = 0;
    return CQ_SUCCESS;
}

cq_result cq_sim_set_cable_actuation(cq_sim *s, int cables, const double *u)
{
    const char *what = "cq_sim_set_cable_actuation";
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (s->in_backward) return cq__fail(s, CQ_ERROR_INVALID_STATE, "%s: called inside a backward hook", what);
    if (cables != s->n_cables)
        return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: cables = %d but the sim has %d cables", what, cables, s->n_cables);
    if (cables && !u) return cq__fail(s, CQ_ERROR_INVALID_ARGUMENT, "%s: u is NULL", what);
    for (int c = 0; c < cables; ++c)
        if (!cq__finite(u[c])) return cq__fail(s, CQ_ERROR_NON_FINITE, "%s: u of cable %d is not finite at step %d", what, c, s->step);
    if (cables) memcpy(s->cable_u, u, sizeof(double) * (size_t)cables);
    return CQ_SUCCESS;
}

cq_result cq_sim_cable_actuation_grad(const cq_sim *s, double *out)
{
    if (!s) return CQ_ERROR_INVALID_ARGUMENT;
    if (!s->hook_adj)
        return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_STATE, "cq_sim_cable_actuation_grad: only inside a cq_sim_backward hook");
    if (s->n_cables && !out) return cq__fail((cq_sim *)s, CQ_ERROR_INVALID_ARGUMENT, "cq_sim_cable_actuation_grad: out is NULL");
    if (s->n_cables) memcpy(out, s->cable_grad, sizeof(double) * (size_t)s->n_cables);
    return CQ_SUCCESS;
}
/* ---- END GENERATED: host implementation ---- */
#endif /* CHAINQUEEN_IMPLEMENTATION */

/*
   LICENCE: MIT.  Copyright (c) 2026 the chainqueen.h authors.
   Permission is hereby granted, free of charge, to any person obtaining a copy of this software
   and associated documentation files (the "Software"), to deal in the Software without
   restriction, including without limitation the rights to use, copy, modify, merge, publish,
   distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
   Software is furnished to do so, subject to the following conditions: The above copyright
   notice and this permission notice shall be included in all copies or substantial portions of
   the Software.  THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED.
*/
