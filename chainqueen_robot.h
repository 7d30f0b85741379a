/* chainqueen_robot.h - soft-robot control and co-design on top of chainqueen.h, in one header.
   v0.1.0.  Hand-written companion of the generated chainqueen.h (Spielberg et al. 2021 sec 4: observer,
   controller, actuators, objective, optimizer).

   WHAT IT IS
     The pieces that turn the differentiable simulator into a robot optimiser:
       actuators   controller output a (A numbers in [-1, 1]) -> actuation stress per actuator
                   group (what cq_sim_set_actuation takes), and its VJP dL/dstress -> dL/da;
       observer    state -> observation: centroid (mean x, mean v) of particle groups, or your
                   own through callbacks; VJP dL/dobs -> dL/dx, dL/dv per particle;
       controller  observation (+ step) -> a: open loop (one a per step), a tanh MLP (optional
                   sin/cos phase features, for gaits), or your own through callbacks; VJP
                   -> dL/dparams and dL/dobs;
       rollout     runs the closed loop for T steps, then the reverse pass, and returns L,
                   dL/dparams and the design gradients (dL/dE, dL/dnu, dL/dmass, ... per particle);
       optimizer   gradient descent (optional momentum) or Adam, with box bounds by projection,
                   per-parameter rate factors and a plateau scheduler that halves the rate when
                   the loss stops improving (Li et al., DiffFR, ACM TOG 2023, sec 6).
     Controller parameters live in a flat double array that you own; objects hold no parameters.

   DO THIS
     In exactly one C or C++ file, after chainqueen.h (with its implementation or not):
         #include "chainqueen.h"
         #define CHAINQUEEN_ROBOT_IMPLEMENTATION
         #include "chainqueen_robot.h"
     Everywhere else just #include "chainqueen_robot.h" (it includes chainqueen.h, declarations
     only, when that is not included yet).  C99 / C++11, -lm.

   ERRORS
     Every fallible call returns a cq_result (the core's codes) and never aborts.  Each object keeps
     the message of its last failure: cq_robot_last_error(obj) (any cq_robot_* object pointer;
     NULL = the last failed *_create, a process-wide buffer).  cq_robot_rollout writes its message
     into out->error (the sim's own message is copied there when the sim failed).  Objects keep
     scratch memory: use one object per thread.

   EXAMPLE: a 2D block with two pressure actuators learns, closed loop, to move right; Young's
   modulus is co-designed within bounds.  (Compiles as is; error checks trimmed.)

     static double fwd(const cq_robot_state *s, double *gx, double *gv, void *u)
     {   double L = 0; (void)gv; (void)u;                  // L = -mean x of the robot at T
         for (int p = 0; p < s->particles; ++p) { L -= s->x[2 * p] / s->particles;
                                                  gx[2 * p] = -1.0 / s->particles; }
         return L; }
     int optimise(void)
     {   enum { N = 64 };  double x[2 * N];  int grp[N];  double E[N], gE[N];
         for (int p = 0; p < N; ++p) { x[2 * p] = 0.3 + (p % 16) * 0.0125; x[2 * p + 1] = 0.13 + (p / 16) * 0.0125;
                                       grp[p] = p % 16 < 8 ? 0 : 1; }            // left / right half
         cq_sim_desc d; memset(&d, 0, sizeof d);
         d.dim = 2; d.res[0] = d.res[1] = 32; d.dx = 1.0 / 32; d.dt = 2e-4; d.substeps = 10;
         d.gravity[1] = -9.8; d.precision = CQ_PRECISION_F64; d.checkpoint_every = 5;
         d.boundary = CQ_BOUNDARY_FRICTION; d.friction = 1.0;
         cq_sim *sim;  cq_sim_create(&d, &sim);
         cq_particles_desc pd; memset(&pd, 0, sizeof pd);
         pd.count = N; pd.x = x; pd.actuator = grp; pd.default_youngs = 3e3; pd.default_poisson = 0.3;
         cq_sim_add_particles(sim, &pd);
         cq_robot_actuator_desc ad[2]; memset(ad, 0, sizeof ad);             // 2 signals per group
         ad[0].kind = ad[1].kind = CQ_ROBOT_ACTUATOR_PRESSURE; ad[0].max_stress = ad[1].max_stress = 300;
         cq_robot_actuators *act;  cq_robot_actuators_create(2, 2, ad, &act);
         cq_robot_observer *obs;   cq_robot_observer_create_centroid(2, N, grp, 2, &obs);  // 8 numbers
         int hidden[1] = {16};
         cq_robot_mlp_desc md; memset(&md, 0, sizeof md);
         md.inputs = cq_robot_observer_size(obs); md.outputs = cq_robot_actuators_signals(act);
         md.layers = 1; md.hidden = hidden; md.phase_harmonics = 1; md.omega = 0.5; md.seed = 7;
         cq_robot_controller *mlp; cq_robot_controller_create_mlp(&md, &mlp);
         int P = cq_robot_controller_params(mlp);                  // + 1 design parameter: E / 1e3
         double *th = (double *)calloc(P + 1, sizeof *th), *g = (double *)calloc(P + 1, sizeof *g);
         double *lo = (double *)malloc((P + 1) * sizeof *lo), *hi = (double *)malloc((P + 1) * sizeof *hi);
         cq_robot_controller_init_params(mlp, th);  th[P] = 3;
         for (int i = 0; i <= P; ++i) { lo[i] = -10; hi[i] = 10; }  lo[P] = 1; hi[P] = 5;
         cq_robot_optimizer_desc od; memset(&od, 0, sizeof od);
         od.kind = CQ_ROBOT_OPTIMIZER_ADAM; od.params = P + 1; od.learning_rate = 0.02; od.lo = lo; od.hi = hi;
         cq_robot_optimizer *opt;  cq_robot_optimizer_create(&od, &opt);
         cq_robot_rollout_desc rd; memset(&rd, 0, sizeof rd);
         rd.steps = 20; rd.controller = mlp; rd.params = th; rd.observer = obs; rd.actuators = act;
         rd.final_loss = fwd; rd.action_penalty = 1e-3; rd.reset = 1;
         cq_robot_rollout_out ro; memset(&ro, 0, sizeof ro);  ro.grad_params = g; ro.grad_youngs = gE;
         for (int it = 0; it < 20; ++it) {
             for (int p = 0; p < N; ++p) E[p] = th[P] * 1e3;
             cq_sim_reset(sim); cq_sim_set(sim, CQ_FIELD_YOUNGS, E);       // design at step 0
             if (cq_robot_rollout(sim, &rd, &ro) != CQ_SUCCESS) { printf("%s\n", ro.error); break; }
             g[P] = 0; for (int p = 0; p < N; ++p) g[P] += gE[p] * 1e3;    // chain rule to E / 1e3
             printf("iteration %2d: loss %.5f  E %.0f\n", it, ro.loss, th[P] * 1e3);
             cq_robot_optimizer_step(opt, th, g);                         // Adam, then projection
         }
         cq_robot_optimizer_destroy(opt); cq_robot_controller_destroy(mlp); cq_robot_observer_destroy(obs);
         cq_robot_actuators_destroy(act); cq_sim_destroy(sim); free(th); free(g); free(lo); free(hi);
         return 0; }

   CONVENTIONS
     Actuation signals are normalised to [-1, 1] (Spielberg et al. 2021 sec 3.4): the actuator map clamps them
     (gradient 0 outside).  Per group the core adds F sigma to the first Piola-Kirchhoff stress;
     sigma is row-major d x d.  A's layout: the groups in order, each group's signals together.
     The rollout's step n is one cq_sim_step (d.substeps substeps) with the action a_n computed
     from s_n; L = final(s_T) + sum_{n<T} [running(s_n, a_n) + action_penalty |a_n|^2].

   FRAGILE
     Gradients through contact and clamps are only piecewise smooth; long horizons can make
     gradients large (clip with optimizer clip_norm).  An action that drives a particle out of
     the grid or makes the state non-finite stops the rollout with the sim's error.  Actuation
     stress is absolute: with unit density, stresses near E throw a small robot across the grid
     within a few steps (tens to hundreds of Pa suit E ~ 3e3).  Design parameters (E, nu, mass,
     volume) must be set with cq_sim_set at step 0, i.e. after cq_sim_reset (the core refuses
     cq_sim_set once a taped sim has stepped); they survive reset.  The rollout needs the sim at
     step 0 (desc->reset = 1 does that).  Observers and controllers keep scratch memory: one object
     per thread.  f32 sims give f32-accurate gradients (~1e-5 relative here, vs ~1e-8 for f64).
*/
#ifndef CHAINQUEEN_ROBOT_H
#define CHAINQUEEN_ROBOT_H
#ifndef CHAINQUEEN_H
#include "chainqueen.h"        /* the core's declarations (same directory) */
#endif
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cq_robot_actuators cq_robot_actuators;
typedef struct cq_robot_observer cq_robot_observer;
typedef struct cq_robot_controller cq_robot_controller;
typedef struct cq_robot_optimizer cq_robot_optimizer;

/* Message of obj's last failure ("" if none); obj = any cq_robot_* object pointer, or NULL for
   the last failed cq_robot_*_create (process-wide). */
const char *cq_robot_last_error(const void *obj);

/* ---- actuators: a (A signals) -> stress (groups * dim * dim) ------------------------------ */
typedef enum cq_robot_actuator_kind {
    CQ_ROBOT_ACTUATOR_NONE = 0,      /* group not driven: sigma = 0, no signals                 */
    CQ_ROBOT_ACTUATOR_PRESSURE = 1,  /* axis-aligned: sigma = max_stress diag(a_x, a_y[, a_z]),
                                        one signal per axis in axis_mask (0 = all axes)          */
    CQ_ROBOT_ACTUATOR_ISOTROPIC = 2, /* sigma = max_stress a I, one signal                      */
    CQ_ROBOT_ACTUATOR_FULL = 3       /* sigma = max_stress clamp(a), dim*dim signals, row-major */
} cq_robot_actuator_kind;

typedef struct cq_robot_actuator_desc {
    cq_robot_actuator_kind kind;
    double max_stress;               /* finite, >= 0 */
    unsigned axis_mask;              /* PRESSURE: bit a drives axis a; 0 = every axis          */
} cq_robot_actuator_desc;

cq_result cq_robot_actuators_create(int dim, int groups, const cq_robot_actuator_desc *per_group,
                                    cq_robot_actuators **out);
void      cq_robot_actuators_destroy(cq_robot_actuators *act);
int       cq_robot_actuators_signals(const cq_robot_actuators *act);   /* A */
int       cq_robot_actuators_groups(const cq_robot_actuators *act);
/* stress[groups*dim*dim] from a[A] (each a clamped to [-1, 1]) */
cq_result cq_robot_actuators_stress(const cq_robot_actuators *act, const double *a, double *stress);
/* dL_da[A] (overwritten) = J^T dL_dstress at a; 0 where a is clamped (|a| > 1) */
cq_result cq_robot_actuators_vjp(const cq_robot_actuators *act, const double *a, const double *dL_dstress,
                                 double *dL_da);

/* ---- observers: state -> observation vector -------------------------------------------- */
/* Centroid: group[p] in [0, groups) or -1 (not observed); every group needs a particle.
   obs = [mean x (dim), mean v (dim)] per group: size groups * 2 * dim.  Unweighted means. */
cq_result cq_robot_observer_create_centroid(int dim, int particles, const int *group, int groups,
                                            cq_robot_observer **out);
/* Your own observer.  observe: obs[size] from the sim's current state (cq_sim_get).  vjp: called
   inside the rollout's backward hook with dL/dobs; add dL/ds_n with cq_sim_add_state_grad.
   A non-zero return stops the rollout with that code. */
typedef struct cq_robot_observer_callbacks {
    int size;
    cq_result (*observe)(const cq_sim *sim, double *obs, void *user);
    cq_result (*vjp)(cq_sim *sim, const double *dL_dobs, void *user);
    void *user;
} cq_robot_observer_callbacks;
cq_result cq_robot_observer_create_custom(const cq_robot_observer_callbacks *cb, cq_robot_observer **out);
void      cq_robot_observer_destroy(cq_robot_observer *ob);
int       cq_robot_observer_size(const cq_robot_observer *ob);
/* centroid only: from arrays x, v [particles*dim] */
cq_result cq_robot_observer_observe(const cq_robot_observer *ob, const double *x, const double *v, double *obs);
/* centroid only: dL_dx, dL_dv [particles*dim] (overwritten; either may be NULL) */
cq_result cq_robot_observer_vjp(const cq_robot_observer *ob, const double *dL_dobs, double *dL_dx, double *dL_dv);
/* any observer, from / into a sim (vjp_sim: inside a cq_sim_backward hook; adds the state grads) */
cq_result cq_robot_observer_observe_sim(const cq_robot_observer *ob, const cq_sim *sim, double *obs);
cq_result cq_robot_observer_vjp_sim(const cq_robot_observer *ob, cq_sim *sim, const double *dL_dobs);

/* ---- controllers: (step n, params, obs) -> a ------------------------------------------------ */
/* Open loop: a_n = params[n*outputs ... (n+1)*outputs), params = steps*outputs, no inputs. */
cq_result cq_robot_controller_create_open_loop(int steps, int outputs, cq_robot_controller **out);

/* MLP: input u = [(obs_i - input_offset_i) * input_scale_i (inputs),
                   sin(k omega n), cos(k omega n) for k = 1..phase_harmonics]  (size I0)
   h_{l+1} = tanh(W_l h_l + b_l) for l = 0..layers (the last is the output, size outputs).
   Params layout, layer by layer l = 0..layers: W_l (rows = out_l, cols = in_l, row-major), then
   b_l (out_l).  Init (cq_robot_controller_init_params): W uniform in +-init_gain sqrt(6/(in+out))
   from a splitmix64 stream seeded with seed (same seed = same params on every platform), b = 0. */
typedef struct cq_robot_mlp_desc {
    int inputs, outputs;             /* inputs >= 0 (0: phase features only), outputs >= 1       */
    int layers;                      /* hidden layers (0 = one tanh layer)                       */
    const int *hidden;               /* [layers], each >= 1                                       */
    int phase_harmonics;             /* K >= 0: 2K extra inputs                                   */
    double omega;                    /* phase rate per step                                       */
    const double *input_offset;      /* [inputs] or NULL = 0 (copied)                             */
    const double *input_scale;       /* [inputs] or NULL = 1 (copied)                             */
    unsigned long seed;
    double init_gain;                /* 0 = 1                                                     */
} cq_robot_mlp_desc;
cq_result cq_robot_controller_create_mlp(const cq_robot_mlp_desc *desc, cq_robot_controller **out);

/* Your own controller.  forward: a[outputs] from obs[inputs].  vjp: ADD dL/dparams into
   dL_dparams and WRITE dL/dobs into dL_dobs (NULL when inputs = 0).  init: optional (NULL =
   zeros).  A non-zero return is passed on. */
typedef struct cq_robot_controller_callbacks {
    int inputs, outputs, params;
    cq_result (*forward)(int step, const double *params, const double *obs, double *a, void *user);
    cq_result (*vjp)(int step, const double *params, const double *obs, const double *dL_da,
                     double *dL_dparams, double *dL_dobs, void *user);
    cq_result (*init)(double *params, void *user);
    void *user;
} cq_robot_controller_callbacks;
cq_result cq_robot_controller_create_custom(const cq_robot_controller_callbacks *cb, cq_robot_controller **out);
void      cq_robot_controller_destroy(cq_robot_controller *c);
int       cq_robot_controller_inputs(const cq_robot_controller *c);
int       cq_robot_controller_outputs(const cq_robot_controller *c);
int       cq_robot_controller_params(const cq_robot_controller *c);
cq_result cq_robot_controller_init_params(const cq_robot_controller *c, double *params);
cq_result cq_robot_controller_forward(const cq_robot_controller *c, int step, const double *params,
                                      const double *obs, double *a);
/* dL_dparams += ..., dL_dobs = ... (may be NULL) */
cq_result cq_robot_controller_vjp(const cq_robot_controller *c, int step, const double *params, const double *obs,
                                  const double *dL_da, double *dL_dparams, double *dL_dobs);

/* ---- rollout: forward closed loop + reverse pass -------------------------------------------- */
typedef struct cq_robot_state {      /* what the loss callbacks see */
    const cq_sim *sim;
    int step, particles, dim, signals;
    const double *x, *v;             /* s_step: particles*dim each */
} cq_robot_state;
/* Final loss g(s_T): return it and fill dL_dx, dL_dv (zeroed before the call). */
typedef double (*cq_robot_final_loss)(const cq_robot_state *s, double *dL_dx, double *dL_dv, void *user);
/* Running loss h(s_n, a_n): return it; when the grad pointers are not NULL (the reverse pass),
   also fill them (zeroed before the call).  a[s->signals]. */
typedef double (*cq_robot_running_loss)(const cq_robot_state *s, const double *a, double *dL_da,
                                        double *dL_dx, double *dL_dv, void *user);

typedef struct cq_robot_rollout_desc {
    int steps;                               /* T >= 1 */
    const cq_robot_controller *controller;   /* outputs = actuators' signals */
    const double *params;                    /* [controller params], finite */
    const cq_robot_observer *observer;       /* size = controller inputs; ignored (may be NULL) when 0 */
    const cq_robot_actuators *actuators;     /* dim = the sim's */
    cq_robot_final_loss final_loss; void *final_user;         /* NULL = 0 */
    cq_robot_running_loss running_loss; void *running_user;   /* NULL = 0 */
    double action_penalty;                   /* w >= 0: + w sum_n |a_n|^2 */
    int reset;                               /* 1: cq_sim_reset first; 0: the sim must be at step 0 */
    int forward_only;                        /* 1: no reverse pass (no tape needed), only the loss */
} cq_robot_rollout_desc;

typedef struct cq_robot_rollout_out {
    double loss;                             /* out */
    /* optional outputs (NULL = not wanted), overwritten: */
    double *grad_params;                     /* [controller params] */
    double *grad_youngs, *grad_poisson, *grad_mass, *grad_volume;   /* [particles] */
    double *grad_x0, *grad_v0;               /* [particles*dim] */
    double *actions;                         /* [steps * signals]: a_n as applied (before clamping) */
    char error[256];                         /* out: the message when the call fails */
} cq_robot_rollout_out;

/* Runs T steps: a_n = controller(n, params, observer(s_n)), stress = actuators(a_n), one
   cq_sim_step; then (unless forward_only) cq_sim_backward seeded with the final loss's grads,
   whose hook chains dL/du_n -> dL/da_n (+ running loss, penalty) -> controller VJP (dL/dparams,
   dL/dobs_n) -> observer VJP -> cq_sim_add_state_grad.  The sim needs checkpoint_every >= 1 for
   the reverse pass and stays at step T afterwards (at the failing step when a step fails).
   Arguments are checked before the sim is touched: bad input leaves it as it was. */
cq_result cq_robot_rollout(cq_sim *sim, const cq_robot_rollout_desc *desc, cq_robot_rollout_out *out);

/* ---- optimizers over a flat parameter vector --------------------------------------------- */
typedef enum cq_robot_optimizer_kind { CQ_ROBOT_OPTIMIZER_ADAM = 0, CQ_ROBOT_OPTIMIZER_GD = 1 } cq_robot_optimizer_kind;
typedef struct cq_robot_optimizer_desc {
    cq_robot_optimizer_kind kind;
    int params;                      /* >= 1 */
    double learning_rate;            /* > 0 */
    double beta1, beta2, epsilon;    /* Adam; 0 = 0.9, 0.999, 1e-8 */
    double momentum;                 /* GD: heavy-ball momentum in [0, 1); 0 = plain */
    double clip_norm;                /* > 0: scale the gradient down to this global norm; 0 = off */
    const double *lo, *hi;           /* [params] box bounds (copied; NULL = unbounded; +-INFINITY ok) */
    const double *rate_scale;        /* [params] factors on the learning rate per parameter (copied;
                                        NULL = 1; each finite and > 0): e.g. DiffFR's separate rates
                                        for a body's linear and angular velocity */
    /* The plateau scheduler (off unless plateau_patience > 0; fed by cq_robot_optimizer_report):
       when the loss has not improved on the best so far by more than plateau_threshold (relative)
       for more than plateau_patience reports, the learning rate is multiplied by plateau_factor,
       not below min_learning_rate, and the count restarts (the rule of PyTorch's
       ReduceLROnPlateau, which DiffFR's optimiser uses with factor 1/2). */
    int plateau_patience;            /* reports without improvement tolerated; 0 = scheduler off */
    double plateau_factor;           /* in (0, 1); 0 = 0.5 */
    double plateau_threshold;        /* relative improvement that counts, >= 0; 0 = 1e-4 */
    double min_learning_rate;        /* >= 0: the floor */
} cq_robot_optimizer_desc;
cq_result cq_robot_optimizer_create(const cq_robot_optimizer_desc *desc, cq_robot_optimizer **out);
void      cq_robot_optimizer_destroy(cq_robot_optimizer *opt);
/* one step: params -= update(grad), then projection onto [lo, hi].  Non-finite params or grad:
   error, params unchanged. */
cq_result cq_robot_optimizer_step(cq_robot_optimizer *opt, double *params, const double *grad);
cq_result cq_robot_optimizer_project(const cq_robot_optimizer *opt, double *params);
void      cq_robot_optimizer_reset(cq_robot_optimizer *opt);      /* moments, count and the
                                     scheduler to their start; the learning rate back to the desc's */
int       cq_robot_optimizer_iterations(const cq_robot_optimizer *opt);
/* The plateau scheduler: report each iteration's loss (before or after the step, but the same
   way every time).  *reduced (may be NULL) is set to 1 when this report lowered the rate, else
   0.  A non-finite loss is an error (CQ_ERROR_NON_FINITE) and changes nothing.  Without a
   scheduler (plateau_patience = 0) it only records the best loss. */
cq_result cq_robot_optimizer_report(cq_robot_optimizer *opt, double loss, int *reduced);
double    cq_robot_optimizer_learning_rate(const cq_robot_optimizer *opt);   /* the current rate (0: opt NULL) */
double    cq_robot_optimizer_best_loss(const cq_robot_optimizer *opt);       /* the least reported (+inf: none) */

/* ------------------------------------------------------------------ shapes
   A box (a rectangle in 2D) of particles on a regular lattice: `per_dx` particles per grid
   cell per axis (2 is the usual MPM density), filling [lo, lo + size) on each axis, particle
   centres at lo + (i + 1/2) dx / per_dx.  Writes positions (dim doubles each) into x when x
   is not NULL (cap particles at most) and the count into *count; with x == NULL it only
   counts.  Each particle's volume is (dx / per_dx)^dim: pass it as default_volume, and
   density * volume as default_mass.  Errors (with cq_robot_last_error(NULL)): dim not 2 or 3,
   non-finite or non-positive size/dx, per_dx < 1, cap too small, more than INT_MAX/9 particles. */
cq_result cq_robot_box(int dim, const double *lo, const double *size, double dx, int per_dx,
                       double *x, int cap, int *count);

#ifdef __cplusplus
}
#endif
#endif /* CHAINQUEEN_ROBOT_H */

/* ============================================================================ implementation */
#if defined(CHAINQUEEN_ROBOT_IMPLEMENTATION) && !defined(CHAINQUEEN_ROBOT_IMPLEMENTATION_DONE)
#define CHAINQUEEN_ROBOT_IMPLEMENTATION_DONE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <math.h>

#define CQ_RB__ERRLEN 256
typedef struct cq_rb__head { char error[CQ_RB__ERRLEN]; } cq_rb__head;   /* first member of every object */

#if defined(__cplusplus) && __cplusplus >= 201103L
#  define CQ_RB__THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#  define CQ_RB__THREAD_LOCAL _Thread_local
#elif defined(_MSC_VER)
#  define CQ_RB__THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__)
#  define CQ_RB__THREAD_LOCAL __thread
#else
#  define CQ_RB__THREAD_LOCAL
#endif
static CQ_RB__THREAD_LOCAL char cq_rb__create_error[CQ_RB__ERRLEN];   /* per thread, as chainqueen.h's */

static cq_result cq_rb__vfail(char *buf, cq_result r, const char *fmt, va_list ap)
{
    if (buf) vsnprintf(buf, CQ_RB__ERRLEN, fmt, ap);
    return r;
}
static cq_result cq_rb__fail(char *buf, cq_result r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cq_rb__vfail(buf, r, fmt, ap);
    va_end(ap);
    return r;
}
#define CQ_RB__ERR(obj) (((cq_rb__head *)(void *)(obj))->error)

static int cq_rb__finite(double a)   /* on the bits: -ffast-math cannot fold it away */
{
    unsigned long long b;
    memcpy(&b, &a, sizeof b);
    return (b & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
static double cq_rb__clamp1(double a) { return a < -1 ? -1 : (a > 1 ? 1 : a); }

const char *cq_robot_last_error(const void *obj)
{
    return obj ? ((const cq_rb__head *)obj)->error : cq_rb__create_error;
}

/* ------------------------------------------------------------------------------ actuators */
struct cq_robot_actuators {
    cq_rb__head head;
    int dim, groups, signals;
    cq_robot_actuator_desc *g;
    int *first;                      /* first signal of each group */
};

static int cq_rb__group_signals(const cq_robot_actuator_desc *g, int dim)
{
    switch (g->kind) {
    case CQ_ROBOT_ACTUATOR_PRESSURE: {
        int k = 0;
        for (int a = 0; a < dim; ++a) k += (int)(((unsigned)g->axis_mask >> a) & 1u);
        return k;
    }
    case CQ_ROBOT_ACTUATOR_ISOTROPIC: return 1;
    case CQ_ROBOT_ACTUATOR_FULL: return dim * dim;
    default: return 0;
    }
}

cq_result cq_robot_actuators_create(int dim, int groups, const cq_robot_actuator_desc *per_group,
                                    cq_robot_actuators **out)
{
    const char *what = "cq_robot_actuators_create";
    char *e = cq_rb__create_error;
    cq_robot_actuators *act;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (dim != 2 && dim != 3) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: dim = %d: must be 2 or 3", what, dim);
    if (groups < 1 || groups > 1 << 20)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: groups = %d: must be in [1, 2^20]", what, groups);
    if (!per_group) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: per_group is NULL", what);
    for (int i = 0; i < groups; ++i) {
        const cq_robot_actuator_desc *g = &per_group[i];
        if ((int)g->kind < 0 || (int)g->kind > 3)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group %d: unknown kind %d", what, i, (int)g->kind);
        if (!cq_rb__finite(g->max_stress) || g->max_stress < 0)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group %d: max_stress = %g: must be finite and >= 0",
                               what, i, g->max_stress);
        if (g->kind == CQ_ROBOT_ACTUATOR_PRESSURE && (g->axis_mask >> dim) != 0)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group %d: axis_mask 0x%x names an axis >= dim %d",
                               what, i, g->axis_mask, dim);
    }
    act = (cq_robot_actuators *)calloc(1, sizeof *act);
    if (act) {
        act->g = (cq_robot_actuator_desc *)malloc(sizeof *act->g * (size_t)groups);
        act->first = (int *)malloc(sizeof(int) * (size_t)groups);
    }
    if (!act || !act->g || !act->first) {
        cq_robot_actuators_destroy(act);
        return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory (%d groups)", what, groups);
    }
    act->dim = dim; act->groups = groups;
    for (int i = 0; i < groups; ++i) {
        act->g[i] = per_group[i];
        if (act->g[i].kind == CQ_ROBOT_ACTUATOR_PRESSURE && act->g[i].axis_mask == 0) act->g[i].axis_mask = (1u << dim) - 1;
        act->first[i] = act->signals;
        act->signals += cq_rb__group_signals(&act->g[i], dim);
    }
    *out = act;
    return CQ_SUCCESS;
}

void cq_robot_actuators_destroy(cq_robot_actuators *act)
{
    if (!act) return;
    free(act->g); free(act->first); free(act);
}
int cq_robot_actuators_signals(const cq_robot_actuators *act) { return act ? act->signals : 0; }
int cq_robot_actuators_groups(const cq_robot_actuators *act) { return act ? act->groups : 0; }

cq_result cq_robot_actuators_stress(const cq_robot_actuators *act, const double *a, double *stress)
{
    const char *what = "cq_robot_actuators_stress";
    int d, dd;
    if (!act) return CQ_ERROR_INVALID_ARGUMENT;
    if ((!a && act->signals) || !stress)
        return cq_rb__fail(CQ_RB__ERR(act), CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, stress ? "a" : "stress");
    for (int i = 0; i < act->signals; ++i)
        if (!cq_rb__finite(a[i])) return cq_rb__fail(CQ_RB__ERR(act), CQ_ERROR_NON_FINITE, "%s: a[%d] is not finite", what, i);
    d = act->dim; dd = d * d;
    memset(stress, 0, sizeof(double) * (size_t)act->groups * (size_t)dd);
    for (int i = 0; i < act->groups; ++i) {
        const cq_robot_actuator_desc *g = &act->g[i];
        const double *ai = a ? a + act->first[i] : NULL;
        double *s = stress + (long)i * dd;
        switch (g->kind) {
        case CQ_ROBOT_ACTUATOR_PRESSURE: {
            int k = 0;
            for (int ax = 0; ax < d; ++ax)
                if ((g->axis_mask >> ax) & 1u) s[ax * d + ax] = g->max_stress * cq_rb__clamp1(ai[k++]);
            break;
        }
        case CQ_ROBOT_ACTUATOR_ISOTROPIC:
            for (int ax = 0; ax < d; ++ax) s[ax * d + ax] = g->max_stress * cq_rb__clamp1(ai[0]);
            break;
        case CQ_ROBOT_ACTUATOR_FULL:
            for (int k = 0; k < dd; ++k) s[k] = g->max_stress * cq_rb__clamp1(ai[k]);
            break;
        default: break;
        }
    }
    return CQ_SUCCESS;
}

cq_result cq_robot_actuators_vjp(const cq_robot_actuators *act, const double *a, const double *dL_dstress,
                                 double *dL_da)
{
    const char *what = "cq_robot_actuators_vjp";
    int d, dd;
    if (!act) return CQ_ERROR_INVALID_ARGUMENT;
    if (!act->signals) return CQ_SUCCESS;
    if (!a || !dL_dstress || !dL_da)
        return cq_rb__fail(CQ_RB__ERR(act), CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                           !a ? "a" : (!dL_dstress ? "dL_dstress" : "dL_da"));
    d = act->dim; dd = d * d;
#define CQ_RB__PASS(x) ((x) >= -1 && (x) <= 1)   /* clamp passes the gradient */
    for (int i = 0; i < act->groups; ++i) {
        const cq_robot_actuator_desc *g = &act->g[i];
        const double *ai = a + act->first[i], *gs = dL_dstress + (long)i * dd;
        double *go = dL_da + act->first[i];
        switch (g->kind) {
        case CQ_ROBOT_ACTUATOR_PRESSURE: {
            int k = 0;
            for (int ax = 0; ax < d; ++ax)
                if ((g->axis_mask >> ax) & 1u) { go[k] = CQ_RB__PASS(ai[k]) ? g->max_stress * gs[ax * d + ax] : 0; ++k; }
            break;
        }
        case CQ_ROBOT_ACTUATOR_ISOTROPIC: {
            double t = 0;
            for (int ax = 0; ax < d; ++ax) t += gs[ax * d + ax];
            go[0] = CQ_RB__PASS(ai[0]) ? g->max_stress * t : 0;
            break;
        }
        case CQ_ROBOT_ACTUATOR_FULL:
            for (int k = 0; k < dd; ++k) go[k] = CQ_RB__PASS(ai[k]) ? g->max_stress * gs[k] : 0;
            break;
        default: break;
        }
    }
#undef CQ_RB__PASS
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------------------ observers */
struct cq_robot_observer {
    cq_rb__head head;
    int custom, dim, particles, groups, size;
    int *group;                      /* centroid: [particles] */
    double *inv_count;               /* centroid: [groups] */
    double *x, *v;                   /* scratch [particles*dim] */
    cq_robot_observer_callbacks cb;
};

cq_result cq_robot_observer_create_centroid(int dim, int particles, const int *group, int groups,
                                            cq_robot_observer **out)
{
    const char *what = "cq_robot_observer_create_centroid";
    char *e = cq_rb__create_error;
    cq_robot_observer *ob;
    int *cnt;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (dim != 2 && dim != 3) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: dim = %d: must be 2 or 3", what, dim);
    if (particles < 1) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: particles = %d: must be >= 1", what, particles);
    if (groups < 1 || groups > 1 << 20)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: groups = %d: must be in [1, 2^20]", what, groups);
    if (!group) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group is NULL", what);
    for (int p = 0; p < particles; ++p)
        if (group[p] < -1 || group[p] >= groups)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group[%d] = %d: must be -1 or in [0, %d)", what, p,
                               group[p], groups);
    cnt = (int *)calloc((size_t)groups, sizeof(int));
    if (!cnt) return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    for (int p = 0; p < particles; ++p) if (group[p] >= 0) cnt[group[p]]++;
    for (int g = 0; g < groups; ++g)
        if (!cnt[g]) { free(cnt); return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: group %d has no particles", what, g); }
    ob = (cq_robot_observer *)calloc(1, sizeof *ob);
    if (ob) {
        ob->group = (int *)malloc(sizeof(int) * (size_t)particles);
        ob->inv_count = (double *)malloc(sizeof(double) * (size_t)groups);
        ob->x = (double *)malloc(sizeof(double) * (size_t)particles * (size_t)dim);
        ob->v = (double *)malloc(sizeof(double) * (size_t)particles * (size_t)dim);
    }
    if (!ob || !ob->group || !ob->inv_count || !ob->x || !ob->v) {
        free(cnt); cq_robot_observer_destroy(ob);
        return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory (%d particles)", what, particles);
    }
    ob->dim = dim; ob->particles = particles; ob->groups = groups; ob->size = groups * 2 * dim;
    memcpy(ob->group, group, sizeof(int) * (size_t)particles);
    for (int g = 0; g < groups; ++g) ob->inv_count[g] = 1.0 / cnt[g];
    free(cnt);
    *out = ob;
    return CQ_SUCCESS;
}

cq_result cq_robot_observer_create_custom(const cq_robot_observer_callbacks *cb, cq_robot_observer **out)
{
    const char *what = "cq_robot_observer_create_custom";
    char *e = cq_rb__create_error;
    cq_robot_observer *ob;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!cb || !cb->observe || !cb->vjp)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, !cb ? "cb" : (!cb->observe ? "observe" : "vjp"));
    if (cb->size < 1) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: size = %d: must be >= 1", what, cb->size);
    ob = (cq_robot_observer *)calloc(1, sizeof *ob);
    if (!ob) return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    ob->custom = 1; ob->size = cb->size; ob->cb = *cb;
    *out = ob;
    return CQ_SUCCESS;
}

void cq_robot_observer_destroy(cq_robot_observer *ob)
{
    if (!ob) return;
    free(ob->group); free(ob->inv_count); free(ob->x); free(ob->v); free(ob);
}
int cq_robot_observer_size(const cq_robot_observer *ob) { return ob ? ob->size : 0; }

cq_result cq_robot_observer_observe(const cq_robot_observer *ob, const double *x, const double *v, double *obs)
{
    const char *what = "cq_robot_observer_observe";
    const int d = ob ? ob->dim : 0;
    if (!ob) return CQ_ERROR_INVALID_ARGUMENT;
    if (ob->custom) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: custom observer: use "
                                       "cq_robot_observer_observe_sim", what);
    if (!x || !v || !obs)
        return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, !x ? "x" : (!v ? "v" : "obs"));
    memset(obs, 0, sizeof(double) * (size_t)ob->size);
    for (int p = 0; p < ob->particles; ++p) {
        int g = ob->group[p];
        if (g < 0) continue;
        for (int a = 0; a < d; ++a) {
            obs[g * 2 * d + a] += x[(long)p * d + a];
            obs[g * 2 * d + d + a] += v[(long)p * d + a];
        }
    }
    for (int g = 0; g < ob->groups; ++g)
        for (int k = 0; k < 2 * d; ++k) obs[g * 2 * d + k] *= ob->inv_count[g];
    return CQ_SUCCESS;
}

cq_result cq_robot_observer_vjp(const cq_robot_observer *ob, const double *dL_dobs, double *dL_dx, double *dL_dv)
{
    const char *what = "cq_robot_observer_vjp";
    const int d = ob ? ob->dim : 0;
    if (!ob) return CQ_ERROR_INVALID_ARGUMENT;
    if (ob->custom) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: custom observer: use "
                                       "cq_robot_observer_vjp_sim", what);
    if (!dL_dobs) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: dL_dobs is NULL", what);
    for (int p = 0; p < ob->particles; ++p) {
        int g = ob->group[p];
        for (int a = 0; a < d; ++a) {
            if (dL_dx) dL_dx[(long)p * d + a] = g < 0 ? 0 : dL_dobs[g * 2 * d + a] * ob->inv_count[g];
            if (dL_dv) dL_dv[(long)p * d + a] = g < 0 ? 0 : dL_dobs[g * 2 * d + d + a] * ob->inv_count[g];
        }
    }
    return CQ_SUCCESS;
}

static cq_result cq_rb__check_sim(const cq_robot_observer *ob, const cq_sim *sim, const char *what)
{
    if (!sim) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: sim is NULL", what);
    if (cq_sim_field_size(sim, CQ_FIELD_X) != ob->dim || cq_sim_particle_count(sim) != ob->particles)
        return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: the sim has %d particles in %dD, the observer "
                           "was made for %d in %dD", what, cq_sim_particle_count(sim), cq_sim_field_size(sim, CQ_FIELD_X),
                           ob->particles, ob->dim);
    return CQ_SUCCESS;
}

cq_result cq_robot_observer_observe_sim(const cq_robot_observer *ob, const cq_sim *sim, double *obs)
{
    const char *what = "cq_robot_observer_observe_sim";
    cq_result r;
    if (!ob) return CQ_ERROR_INVALID_ARGUMENT;
    if (!obs) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: obs is NULL", what);
    if (ob->custom) {
        if (!sim) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: sim is NULL", what);
        r = ob->cb.observe(sim, obs, ob->cb.user);
        if (r != CQ_SUCCESS) return cq_rb__fail(CQ_RB__ERR(ob), r, "%s: the observe callback returned %s", what, cq_result_string(r));
        for (int i = 0; i < ob->size; ++i)
            if (!cq_rb__finite(obs[i]))
                return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_NON_FINITE, "%s: the observe callback gave obs[%d] = %g", what, i, obs[i]);
        return CQ_SUCCESS;
    }
    if ((r = cq_rb__check_sim(ob, sim, what)) != CQ_SUCCESS) return r;
    if ((r = cq_sim_get(sim, CQ_FIELD_X, ob->x)) != CQ_SUCCESS || (r = cq_sim_get(sim, CQ_FIELD_V, ob->v)) != CQ_SUCCESS)
        return cq_rb__fail(CQ_RB__ERR(ob), r, "%s: %s", what, cq_sim_last_error(sim));
    return cq_robot_observer_observe(ob, ob->x, ob->v, obs);
}

cq_result cq_robot_observer_vjp_sim(const cq_robot_observer *ob, cq_sim *sim, const double *dL_dobs)
{
    const char *what = "cq_robot_observer_vjp_sim";
    cq_result r;
    if (!ob) return CQ_ERROR_INVALID_ARGUMENT;
    if (!dL_dobs) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: dL_dobs is NULL", what);
    if (ob->custom) {
        if (!sim) return cq_rb__fail(CQ_RB__ERR(ob), CQ_ERROR_INVALID_ARGUMENT, "%s: sim is NULL", what);
        r = ob->cb.vjp(sim, dL_dobs, ob->cb.user);
        if (r != CQ_SUCCESS) return cq_rb__fail(CQ_RB__ERR(ob), r, "%s: the vjp callback returned %s", what, cq_result_string(r));
        return CQ_SUCCESS;
    }
    if ((r = cq_rb__check_sim(ob, sim, what)) != CQ_SUCCESS) return r;
    /* the scratch x, v hold dL/dx, dL/dv here */
    if ((r = cq_robot_observer_vjp(ob, dL_dobs, ob->x, ob->v)) != CQ_SUCCESS) return r;
    if ((r = cq_sim_add_state_grad(sim, CQ_FIELD_X, ob->x)) != CQ_SUCCESS ||
        (r = cq_sim_add_state_grad(sim, CQ_FIELD_V, ob->v)) != CQ_SUCCESS)
        return cq_rb__fail(CQ_RB__ERR(ob), r, "%s: %s", what, cq_sim_last_error(sim));
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------------------ controllers */
enum { CQ_RB__OPEN_LOOP = 1, CQ_RB__MLP = 2, CQ_RB__CUSTOM = 3 };

struct cq_robot_controller {
    cq_rb__head head;
    int kind, inputs, outputs, params;
    int steps;                       /* open loop */
    /* MLP */
    int layers, harmonics;           /* layers = hidden layers; layer count = layers + 1 */
    int *size;                       /* [layers + 2]: size[0] = I0, ..., size[layers+1] = outputs */
    double omega, gain;
    unsigned long seed;
    double *offset, *scale;          /* [inputs] */
    double *h;                       /* activations, sum(size) */
    double *gh;                      /* adjoint scratch, 2 * max(size) */
    cq_robot_controller_callbacks cb;
};

static cq_robot_controller *cq_rb__controller_new(void)
{
    return (cq_robot_controller *)calloc(1, sizeof(cq_robot_controller));
}

cq_result cq_robot_controller_create_open_loop(int steps, int outputs, cq_robot_controller **out)
{
    const char *what = "cq_robot_controller_create_open_loop";
    char *e = cq_rb__create_error;
    cq_robot_controller *c;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (steps < 1 || outputs < 1 || (double)steps * outputs > 1 << 30)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: steps = %d, outputs = %d: both must be >= 1 (product <= 2^30)",
                           what, steps, outputs);
    if (!(c = cq_rb__controller_new())) return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    c->kind = CQ_RB__OPEN_LOOP; c->steps = steps; c->outputs = outputs; c->params = steps * outputs;
    *out = c;
    return CQ_SUCCESS;
}

cq_result cq_robot_controller_create_mlp(const cq_robot_mlp_desc *md, cq_robot_controller **out)
{
    const char *what = "cq_robot_controller_create_mlp";
    char *e = cq_rb__create_error;
    cq_robot_controller *c;
    double np = 0, tot = 0;
    int mx = 0;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!md) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", what);
    if (md->inputs < 0 || md->outputs < 1 || md->layers < 0 || md->phase_harmonics < 0 || md->layers > 64 ||
        md->inputs > 1 << 24 || md->outputs > 1 << 24 || md->phase_harmonics > 1 << 16)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: inputs = %d, outputs = %d, layers = %d, phase_harmonics = %d: "
                           "need inputs >= 0, outputs >= 1, 0 <= layers <= 64, phase_harmonics >= 0", what, md->inputs,
                           md->outputs, md->layers, md->phase_harmonics);
    if (md->inputs + 2 * md->phase_harmonics < 1)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: no inputs and no phase features", what);
    if (md->layers > 0 && !md->hidden) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: hidden is NULL", what);
    for (int l = 0; l < md->layers; ++l)
        if (md->hidden[l] < 1 || md->hidden[l] > 1 << 24)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: hidden[%d] = %d: must be >= 1", what, l, md->hidden[l]);
    if (!cq_rb__finite(md->omega) || !cq_rb__finite(md->init_gain) || md->init_gain < 0)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: omega and init_gain must be finite (init_gain >= 0)", what);
    for (int i = 0; i < md->inputs; ++i)
        if ((md->input_offset && !cq_rb__finite(md->input_offset[i])) || (md->input_scale && !cq_rb__finite(md->input_scale[i])))
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: input_offset / input_scale [%d] is not finite", what, i);
    if (!(c = cq_rb__controller_new())) return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    c->kind = CQ_RB__MLP; c->inputs = md->inputs; c->outputs = md->outputs; c->layers = md->layers;
    c->harmonics = md->phase_harmonics; c->omega = md->omega; c->seed = md->seed;
    c->gain = md->init_gain > 0 ? md->init_gain : 1;
    c->size = (int *)malloc(sizeof(int) * (size_t)(md->layers + 2));
    c->offset = (double *)malloc(sizeof(double) * (size_t)(md->inputs + 1));
    c->scale = (double *)malloc(sizeof(double) * (size_t)(md->inputs + 1));
    if (!c->size || !c->offset || !c->scale) goto oom;
    c->size[0] = md->inputs + 2 * md->phase_harmonics;
    for (int l = 0; l < md->layers; ++l) c->size[l + 1] = md->hidden[l];
    c->size[md->layers + 1] = md->outputs;
    for (int l = 0; l <= md->layers + 1; ++l) {
        tot += c->size[l];
        if (c->size[l] > mx) mx = c->size[l];
        if (l <= md->layers) np += (double)c->size[l + 1] * (c->size[l] + 1);
    }
    if (np > 1 << 30 || tot > 1 << 30) {
        cq_robot_controller_destroy(c);
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: %.0f parameters: too many", what, np);
    }
    c->params = (int)np;
    c->h = (double *)malloc(sizeof(double) * (size_t)tot);
    c->gh = (double *)malloc(sizeof(double) * 2 * (size_t)mx);
    if (!c->h || !c->gh) goto oom;
    for (int i = 0; i < md->inputs; ++i) {
        c->offset[i] = md->input_offset ? md->input_offset[i] : 0;
        c->scale[i] = md->input_scale ? md->input_scale[i] : 1;
    }
    *out = c;
    return CQ_SUCCESS;
oom:
    cq_robot_controller_destroy(c);
    return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
}

cq_result cq_robot_controller_create_custom(const cq_robot_controller_callbacks *cb, cq_robot_controller **out)
{
    const char *what = "cq_robot_controller_create_custom";
    char *e = cq_rb__create_error;
    cq_robot_controller *c;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!cb || !cb->forward || !cb->vjp)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, !cb ? "cb" : (!cb->forward ? "forward" : "vjp"));
    if (cb->inputs < 0 || cb->outputs < 1 || cb->params < 0)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: inputs = %d, outputs = %d, params = %d: need inputs >= 0, "
                           "outputs >= 1, params >= 0", what, cb->inputs, cb->outputs, cb->params);
    if (!(c = cq_rb__controller_new())) return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    c->kind = CQ_RB__CUSTOM; c->inputs = cb->inputs; c->outputs = cb->outputs; c->params = cb->params; c->cb = *cb;
    *out = c;
    return CQ_SUCCESS;
}

void cq_robot_controller_destroy(cq_robot_controller *c)
{
    if (!c) return;
    free(c->size); free(c->offset); free(c->scale); free(c->h); free(c->gh); free(c);
}
int cq_robot_controller_inputs(const cq_robot_controller *c) { return c ? c->inputs : 0; }
int cq_robot_controller_outputs(const cq_robot_controller *c) { return c ? c->outputs : 0; }
int cq_robot_controller_params(const cq_robot_controller *c) { return c ? c->params : 0; }

static unsigned long long cq_rb__splitmix64(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

cq_result cq_robot_controller_init_params(const cq_robot_controller *c, double *params)
{
    const char *what = "cq_robot_controller_init_params";
    if (!c) return CQ_ERROR_INVALID_ARGUMENT;
    if (!params && c->params) return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: params is NULL", what);
    if (c->kind == CQ_RB__MLP) {
        unsigned long long st = (unsigned long long)c->seed;
        double *w = params;
        for (int l = 0; l <= c->layers; ++l) {
            const int in = c->size[l], o = c->size[l + 1];
            const double lim = c->gain * sqrt(6.0 / (in + o));
            for (long i = 0; i < (long)in * o; ++i) {
                double u = (double)(cq_rb__splitmix64(&st) >> 11) * (1.0 / 9007199254740992.0);   /* [0, 1) */
                *w++ = lim * (2 * u - 1);
            }
            for (int i = 0; i < o; ++i) *w++ = 0;
        }
        return CQ_SUCCESS;
    }
    if (c->kind == CQ_RB__CUSTOM && c->cb.init) {
        cq_result r = c->cb.init(params, c->cb.user);
        if (r != CQ_SUCCESS) return cq_rb__fail(CQ_RB__ERR(c), r, "%s: the init callback returned %s", what, cq_result_string(r));
        return CQ_SUCCESS;
    }
    if (c->params) memset(params, 0, sizeof(double) * (size_t)c->params);
    return CQ_SUCCESS;
}

/* MLP forward into c->h (layer l's activations at h + offset(l)); returns the output pointer. */
static double *cq_rb__mlp_forward(const cq_robot_controller *c, int step, const double *params, const double *obs)
{
    double *h = c->h, *hin;
    const double *w = params;
    for (int i = 0; i < c->inputs; ++i) h[i] = (obs[i] - c->offset[i]) * c->scale[i];
    for (int k = 1; k <= c->harmonics; ++k) {
        double ph = k * c->omega * step;
        h[c->inputs + 2 * (k - 1)] = sin(ph);
        h[c->inputs + 2 * (k - 1) + 1] = cos(ph);
    }
    for (int l = 0; l <= c->layers; ++l) {
        const int in = c->size[l], o = c->size[l + 1];
        const double *b = w + (long)in * o;
        hin = h; h += in;
        for (int r = 0; r < o; ++r) {
            double z = b[r];
            for (int q = 0; q < in; ++q) z += w[(long)r * in + q] * hin[q];
            h[r] = tanh(z);
        }
        w = b + o;
    }
    return h;
}

static cq_result cq_rb__check_finite(const cq_robot_controller *c, const double *v, int n, const char *what, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (!cq_rb__finite(v[i]))
            return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_NON_FINITE, "%s: %s[%d] = %g is not finite", what, name, i, v[i]);
    return CQ_SUCCESS;
}

static cq_result cq_rb__controller_args(const cq_robot_controller *c, int step, const double *params, const double *obs,
                                        const void *o1, const char *n1, const char *what)
{
    if (step < 0 || (c->kind == CQ_RB__OPEN_LOOP && step >= c->steps))
        return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: step = %d: must be in [0, %d)", what, step,
                           c->kind == CQ_RB__OPEN_LOOP ? c->steps : 0x7fffffff);
    if (!params && c->params) return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: params is NULL", what);
    if (!obs && c->inputs) return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: obs is NULL", what);
    if (!o1) return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, n1);
    return CQ_SUCCESS;
}

cq_result cq_robot_controller_forward(const cq_robot_controller *c, int step, const double *params,
                                      const double *obs, double *a)
{
    const char *what = "cq_robot_controller_forward";
    cq_result r;
    if (!c) return CQ_ERROR_INVALID_ARGUMENT;
    if ((r = cq_rb__controller_args(c, step, params, obs, a, "a", what)) != CQ_SUCCESS) return r;
    switch (c->kind) {
    case CQ_RB__OPEN_LOOP:
        memcpy(a, params + (long)step * c->outputs, sizeof(double) * (size_t)c->outputs);
        break;
    case CQ_RB__MLP:
        memcpy(a, cq_rb__mlp_forward(c, step, params, obs), sizeof(double) * (size_t)c->outputs);
        break;
    default:
        r = c->cb.forward(step, params, obs, a, c->cb.user);
        if (r != CQ_SUCCESS) return cq_rb__fail(CQ_RB__ERR(c), r, "%s: the forward callback returned %s at step %d", what,
                                                cq_result_string(r), step);
        break;
    }
    return cq_rb__check_finite(c, a, c->outputs, what, "a");
}

cq_result cq_robot_controller_vjp(const cq_robot_controller *c, int step, const double *params, const double *obs,
                                  const double *dL_da, double *dL_dparams, double *dL_dobs)
{
    const char *what = "cq_robot_controller_vjp";
    cq_result r;
    if (!c) return CQ_ERROR_INVALID_ARGUMENT;
    if ((r = cq_rb__controller_args(c, step, params, obs, dL_da, "dL_da", what)) != CQ_SUCCESS) return r;
    if (!dL_dparams && c->params) return cq_rb__fail(CQ_RB__ERR(c), CQ_ERROR_INVALID_ARGUMENT, "%s: dL_dparams is NULL", what);
    switch (c->kind) {
    case CQ_RB__OPEN_LOOP:
        for (int i = 0; i < c->outputs; ++i) dL_dparams[(long)step * c->outputs + i] += dL_da[i];
        break;
    case CQ_RB__MLP: {
        /* offsets of each layer's weights and activations */
        long woff = 0, hoff = 0;
        int mx = 0;
        double *g, *gn;
        cq_rb__mlp_forward(c, step, params, obs);
        for (int l = 0; l <= c->layers + 1; ++l) if (c->size[l] > mx) mx = c->size[l];
        g = c->gh; gn = c->gh + mx;              /* two adjoint vectors, swapped per layer */
        for (int l = 0; l <= c->layers; ++l) { woff += (long)c->size[l + 1] * (c->size[l] + 1); hoff += c->size[l]; }
        /* g = dL/dh_{L+1} */
        for (int i = 0; i < c->outputs; ++i) g[i] = dL_da[i];
        for (int l = c->layers; l >= 0; --l) {
            const int in = c->size[l], o = c->size[l + 1];
            const double *hout = c->h + hoff, *hin = c->h + hoff - in;
            const double *w;
            double *gw, *gb, *t;
            woff -= (long)o * (in + 1);
            w = params + woff; gw = dL_dparams + woff; gb = gw + (long)in * o;
            for (int r2 = 0; r2 < o; ++r2) g[r2] *= 1 - hout[r2] * hout[r2];       /* through tanh */
            for (int q = 0; q < in; ++q) gn[q] = 0;
            for (int r2 = 0; r2 < o; ++r2) {
                const double gz = g[r2];
                gb[r2] += gz;
                for (int q = 0; q < in; ++q) { gw[(long)r2 * in + q] += gz * hin[q]; gn[q] += w[(long)r2 * in + q] * gz; }
            }
            t = g; g = gn; gn = t;
            hoff -= in;
        }
        if (dL_dobs) for (int i = 0; i < c->inputs; ++i) dL_dobs[i] = g[i] * c->scale[i];
        break;
    }
    default:
        r = c->cb.vjp(step, params, obs, dL_da, dL_dparams, dL_dobs, c->cb.user);
        if (r != CQ_SUCCESS) return cq_rb__fail(CQ_RB__ERR(c), r, "%s: the vjp callback returned %s at step %d", what,
                                                cq_result_string(r), step);
        break;
    }
    return CQ_SUCCESS;
}

/* ------------------------------------------------------------------------------ rollout */
typedef struct cq_rb__ctx {
    const cq_robot_rollout_desc *d;
    cq_robot_rollout_out *out;
    int n, dim, A, O, G;
    double *obs_hist, *act_hist;     /* [T*O], [T*A] */
    double *gparams;                 /* [P]: out->grad_params or scratch */
    double *x, *v, *gx, *gv, *dstress, *da, *da_run, *dobs;
    cq_result err;
} cq_rb__ctx;

static void cq_rb__hook(cq_sim *sim, int n, void *user)
{
    cq_rb__ctx *k = (cq_rb__ctx *)user;
    const cq_robot_rollout_desc *d = k->d;
    const double *a = k->act_hist + (long)n * k->A;
    char *e = k->out->error;
    cq_result r;
    if (k->err != CQ_SUCCESS) return;
    if ((r = cq_sim_actuation_grad(sim, k->dstress)) != CQ_SUCCESS) {
        k->err = cq_rb__fail(e, r, "cq_robot_rollout: step %d: %s", n, cq_sim_last_error(sim)); return;
    }
    if ((r = cq_robot_actuators_vjp(d->actuators, a, k->dstress, k->da)) != CQ_SUCCESS) {
        k->err = cq_rb__fail(e, r, "cq_robot_rollout: step %d: %s", n, cq_robot_last_error(d->actuators)); return;
    }
    for (int i = 0; i < k->A; ++i) k->da[i] += 2 * d->action_penalty * a[i];
    if (d->running_loss) {
        cq_robot_state st;
        const size_t nd = (size_t)k->n * (size_t)k->dim;
        if ((r = cq_sim_get(sim, CQ_FIELD_X, k->x)) != CQ_SUCCESS || (r = cq_sim_get(sim, CQ_FIELD_V, k->v)) != CQ_SUCCESS) {
            k->err = cq_rb__fail(e, r, "cq_robot_rollout: step %d: %s", n, cq_sim_last_error(sim)); return;
        }
        memset(k->gx, 0, sizeof(double) * nd); memset(k->gv, 0, sizeof(double) * nd);
        memset(k->da_run, 0, sizeof(double) * (size_t)(k->A + 1));
        st.sim = sim; st.step = n; st.particles = k->n; st.dim = k->dim; st.signals = k->A; st.x = k->x; st.v = k->v;
        d->running_loss(&st, a, k->da_run, k->gx, k->gv, d->running_user);
        for (int i = 0; i < k->A; ++i) k->da[i] += k->da_run[i];
        if ((r = cq_sim_add_state_grad(sim, CQ_FIELD_X, k->gx)) != CQ_SUCCESS ||
            (r = cq_sim_add_state_grad(sim, CQ_FIELD_V, k->gv)) != CQ_SUCCESS) {
            k->err = cq_rb__fail(e, r, "cq_robot_rollout: running loss gradient at step %d: %s", n, cq_sim_last_error(sim));
            return;
        }
    }
    for (int i = 0; i < k->A; ++i)
        if (!cq_rb__finite(k->da[i])) {
            k->err = cq_rb__fail(e, CQ_ERROR_NON_FINITE, "cq_robot_rollout: dL/da[%d] at step %d is not finite", i, n); return;
        }
    r = cq_robot_controller_vjp(d->controller, n, d->params, k->O ? k->obs_hist + (long)n * k->O : NULL, k->da,
                                k->gparams, k->O ? k->dobs : NULL);
    if (r != CQ_SUCCESS) { k->err = cq_rb__fail(e, r, "cq_robot_rollout: %s", cq_robot_last_error(d->controller)); return; }
    if (k->O) {
        for (int i = 0; i < k->O; ++i)
            if (!cq_rb__finite(k->dobs[i])) {
                k->err = cq_rb__fail(e, CQ_ERROR_NON_FINITE, "cq_robot_rollout: dL/dobs[%d] at step %d is not finite", i, n);
                return;
            }
        if ((r = cq_robot_observer_vjp_sim(d->observer, sim, k->dobs)) != CQ_SUCCESS) {
            k->err = cq_rb__fail(e, r, "cq_robot_rollout: step %d: %s", n, cq_robot_last_error(d->observer)); return;
        }
    }
}

cq_result cq_robot_rollout(cq_sim *sim, const cq_robot_rollout_desc *d, cq_robot_rollout_out *out)
{
    const char *what = "cq_robot_rollout";
    cq_rb__ctx k;
    char *e;
    cq_result r = CQ_SUCCESS;
    int T, P, dd;
    double *gparams_scratch = NULL, L = 0;
    size_t nd;
    if (!out) return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    e = out->error;
    e[0] = 0;
    out->loss = 0;
    if (!sim || !d) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, !sim ? "sim" : "desc");
    if (!d->controller || !d->actuators)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: desc->%s is NULL", what, !d->controller ? "controller" : "actuators");
    T = d->steps;
    if (T < 1) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: steps = %d: must be >= 1", what, T);
    memset(&k, 0, sizeof k);
    k.d = d; k.out = out;
    k.n = cq_sim_particle_count(sim); k.dim = cq_sim_field_size(sim, CQ_FIELD_X);
    k.A = cq_robot_actuators_signals(d->actuators); k.G = cq_robot_actuators_groups(d->actuators);
    k.O = cq_robot_controller_inputs(d->controller);
    P = cq_robot_controller_params(d->controller);
    dd = k.dim * k.dim;
    if (k.n < 1) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the sim has no particles", what);
    if (d->actuators->dim != k.dim)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the actuators are %dD, the sim %dD", what, d->actuators->dim, k.dim);
    if (cq_robot_controller_outputs(d->controller) != k.A)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the controller has %d outputs, the actuators take %d signals", what,
                           cq_robot_controller_outputs(d->controller), k.A);
    if (k.O && !d->observer)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the controller takes %d inputs but desc->observer is NULL", what, k.O);
    if (k.O && cq_robot_observer_size(d->observer) != k.O)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the observer gives %d numbers, the controller takes %d", what,
                           cq_robot_observer_size(d->observer), k.O);
    if (k.O && !d->observer->custom && (r = cq_rb__check_sim(d->observer, sim, what)) != CQ_SUCCESS)
        return cq_rb__fail(e, r, "%s: %s", what, cq_robot_last_error(d->observer));
    if (d->controller->kind == CQ_RB__OPEN_LOOP && d->controller->steps < T)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: steps = %d but the open-loop controller has %d", what, T,
                           d->controller->steps);
    if (!cq_rb__finite(d->action_penalty) || d->action_penalty < 0)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: action_penalty = %g: must be finite and >= 0", what, d->action_penalty);
    if (P && !d->params) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: desc->params is NULL", what);
    for (int i = 0; i < P; ++i)
        if (!cq_rb__finite(d->params[i]))
            return cq_rb__fail(e, CQ_ERROR_NON_FINITE, "%s: params[%d] = %g is not finite", what, i, d->params[i]);
    {   /* everything the sim can be asked about is checked before it is touched (reset, steps) */
        cq_sim_desc sd;
        if ((r = cq_sim_get_desc(sim, &sd)) != CQ_SUCCESS) return cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim));
        if (!d->forward_only && sd.checkpoint_every < 1)
            return cq_rb__fail(e, CQ_ERROR_INVALID_STATE, "%s: the sim has no tape (checkpoint_every = 0): create it with "
                               "checkpoint_every >= 1, or set desc->forward_only = 1", what);
        if (cq_sim_actuator_groups(sim) > k.G)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: the sim's particles use actuator group %d but the actuators "
                               "have %d groups", what, cq_sim_actuator_groups(sim) - 1, k.G);
        if (!d->reset && cq_sim_step_count(sim) != 0)
            return cq_rb__fail(e, CQ_ERROR_INVALID_STATE, "%s: the sim is at step %d: reset it (or set desc->reset = 1)", what,
                               cq_sim_step_count(sim));
    }
    if (d->reset && (r = cq_sim_reset(sim)) != CQ_SUCCESS) return cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim));
    nd = (size_t)k.n * (size_t)k.dim;
    k.obs_hist = (double *)malloc(sizeof(double) * ((size_t)T * (size_t)k.O + 1));
    k.act_hist = (double *)malloc(sizeof(double) * ((size_t)T * (size_t)k.A + 1));
    k.x = (double *)malloc(sizeof(double) * nd); k.v = (double *)malloc(sizeof(double) * nd);
    k.gx = (double *)malloc(sizeof(double) * nd); k.gv = (double *)malloc(sizeof(double) * nd);
    k.dstress = (double *)malloc(sizeof(double) * ((size_t)k.G * (size_t)dd + 1));
    k.da = (double *)malloc(sizeof(double) * ((size_t)k.A + 1));
    k.da_run = (double *)malloc(sizeof(double) * ((size_t)k.A + 1));
    k.dobs = (double *)malloc(sizeof(double) * ((size_t)k.O + 1));
    if (!out->grad_params && P) gparams_scratch = (double *)malloc(sizeof(double) * (size_t)P);
    if (!k.obs_hist || !k.act_hist || !k.x || !k.v || !k.gx || !k.gv || !k.dstress || !k.da || !k.da_run || !k.dobs ||
        (!out->grad_params && P && !gparams_scratch)) {
        r = cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory (%d steps, %d particles)", what, T, k.n);
        goto done;
    }
    /* ---- forward */
    for (int n = 0; n < T; ++n) {
        double *obs = k.obs_hist + (long)n * k.O, *a = k.act_hist + (long)n * k.A;
        if (k.O && (r = cq_robot_observer_observe_sim(d->observer, sim, obs)) != CQ_SUCCESS) {
            cq_rb__fail(e, r, "%s: step %d: %s", what, n, cq_robot_last_error(d->observer)); goto done;
        }
        if ((r = cq_robot_controller_forward(d->controller, n, d->params, obs, a)) != CQ_SUCCESS) {
            cq_rb__fail(e, r, "%s: step %d: %s", what, n, cq_robot_last_error(d->controller)); goto done;
        }
        if ((r = cq_robot_actuators_stress(d->actuators, a, k.dstress)) != CQ_SUCCESS) {
            cq_rb__fail(e, r, "%s: step %d: %s", what, n, cq_robot_last_error(d->actuators)); goto done;
        }
        for (int i = 0; i < k.A; ++i) L += d->action_penalty * a[i] * a[i];
        if (d->running_loss) {
            cq_robot_state st;
            double h;
            if ((r = cq_sim_get(sim, CQ_FIELD_X, k.x)) != CQ_SUCCESS || (r = cq_sim_get(sim, CQ_FIELD_V, k.v)) != CQ_SUCCESS) {
                cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim)); goto done;
            }
            st.sim = sim; st.step = n; st.particles = k.n; st.dim = k.dim; st.signals = k.A; st.x = k.x; st.v = k.v;
            h = d->running_loss(&st, a, NULL, NULL, NULL, d->running_user);
            if (!cq_rb__finite(h)) { r = cq_rb__fail(e, CQ_ERROR_NON_FINITE, "%s: running loss at step %d = %g", what, n, h); goto done; }
            L += h;
        }
        if ((r = cq_sim_set_actuation(sim, k.G, k.dstress)) != CQ_SUCCESS || (r = cq_sim_step(sim, 1)) != CQ_SUCCESS) {
            cq_rb__fail(e, r, "%s: step %d: %s", what, n, cq_sim_last_error(sim)); goto done;
        }
    }
    if (out->actions) memcpy(out->actions, k.act_hist, sizeof(double) * (size_t)T * (size_t)k.A);
    /* ---- final loss */
    memset(k.gx, 0, sizeof(double) * nd); memset(k.gv, 0, sizeof(double) * nd);
    if (d->final_loss) {
        cq_robot_state st;
        double g;
        if ((r = cq_sim_get(sim, CQ_FIELD_X, k.x)) != CQ_SUCCESS || (r = cq_sim_get(sim, CQ_FIELD_V, k.v)) != CQ_SUCCESS) {
            cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim)); goto done;
        }
        st.sim = sim; st.step = T; st.particles = k.n; st.dim = k.dim; st.signals = k.A; st.x = k.x; st.v = k.v;
        g = d->final_loss(&st, k.gx, k.gv, d->final_user);
        if (!cq_rb__finite(g)) { r = cq_rb__fail(e, CQ_ERROR_NON_FINITE, "%s: final loss = %g", what, g); goto done; }
        L += g;
    }
    out->loss = L;
    if (d->forward_only) goto done;
    /* ---- reverse */
    k.gparams = out->grad_params ? out->grad_params : gparams_scratch;
    if (P) memset(k.gparams, 0, sizeof(double) * (size_t)P);
    k.err = CQ_SUCCESS;
    r = cq_sim_backward(sim, k.gx, k.gv, NULL, NULL, cq_rb__hook, &k);
    if (r != CQ_SUCCESS) { cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim)); goto done; }
    if ((r = k.err) != CQ_SUCCESS) goto done;
    {
        double *dst[6];
        const cq_field fl[6] = {CQ_FIELD_YOUNGS, CQ_FIELD_POISSON, CQ_FIELD_MASS, CQ_FIELD_VOLUME, CQ_FIELD_X, CQ_FIELD_V};
        dst[0] = out->grad_youngs; dst[1] = out->grad_poisson; dst[2] = out->grad_mass; dst[3] = out->grad_volume;
        dst[4] = out->grad_x0; dst[5] = out->grad_v0;
        for (int i = 0; i < 6; ++i)
            if (dst[i] && (r = cq_sim_grad(sim, fl[i], dst[i])) != CQ_SUCCESS) {
                cq_rb__fail(e, r, "%s: %s", what, cq_sim_last_error(sim)); goto done;
            }
    }
done:
    free(k.obs_hist); free(k.act_hist); free(k.x); free(k.v); free(k.gx); free(k.gv);
    free(k.dstress); free(k.da); free(k.da_run); free(k.dobs); free(gparams_scratch);
    return r;
}

/* ------------------------------------------------------------------------------ optimizers */
struct cq_robot_optimizer {
    cq_rb__head head;
    cq_robot_optimizer_kind kind;
    int n, t;
    double lr, b1, b2, eps, mom, clip;
    double *m, *v, *lo, *hi, *scale;
    double lr0, factor, threshold, min_lr, best;   /* the plateau scheduler */
    int patience, bad;
};

cq_result cq_robot_optimizer_create(const cq_robot_optimizer_desc *od, cq_robot_optimizer **out)
{
    const char *what = "cq_robot_optimizer_create";
    char *e = cq_rb__create_error;
    cq_robot_optimizer *o;
    size_t bytes;
    if (!out) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    if (!od) return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", what);
    if (od->kind != CQ_ROBOT_OPTIMIZER_ADAM && od->kind != CQ_ROBOT_OPTIMIZER_GD)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: unknown kind %d", what, (int)od->kind);
    if (od->params < 1 || od->params > 1 << 30)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: params = %d: must be >= 1", what, od->params);
    if (!cq_rb__finite(od->learning_rate) || od->learning_rate <= 0)
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: learning_rate = %g: must be finite and > 0", what, od->learning_rate);
    if (!(od->beta1 >= 0 && od->beta1 < 1) || !(od->beta2 >= 0 && od->beta2 < 1) || !(od->epsilon >= 0) ||
        !cq_rb__finite(od->epsilon) || !(od->momentum >= 0 && od->momentum < 1) || !(od->clip_norm >= 0) ||
        !cq_rb__finite(od->clip_norm))
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: need beta1, beta2, momentum in [0, 1), epsilon, clip_norm "
                           "finite and >= 0", what);
    for (int i = 0; i < od->params; ++i) {
        double lo = od->lo ? od->lo[i] : -HUGE_VAL, hi = od->hi ? od->hi[i] : HUGE_VAL;
        if (lo != lo || hi != hi || lo > hi || lo == HUGE_VAL || hi == -HUGE_VAL)
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: bounds of parameter %d: [%g, %g] is not a box", what, i, lo, hi);
        if (od->rate_scale && !(cq_rb__finite(od->rate_scale[i]) && od->rate_scale[i] > 0))
            return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: rate_scale[%d] = %g: must be finite and > 0", what, i, od->rate_scale[i]);
    }
    if (od->plateau_patience < 0 || !(od->plateau_factor >= 0 && od->plateau_factor < 1) ||
        !(od->plateau_threshold >= 0 && od->plateau_threshold < 1) || !(od->min_learning_rate >= 0) || !cq_rb__finite(od->min_learning_rate))
        return cq_rb__fail(e, CQ_ERROR_INVALID_ARGUMENT, "%s: plateau_patience = %d, plateau_factor = %g, plateau_threshold = %g, "
                           "min_learning_rate = %g: need patience >= 0, factor and threshold in [0, 1), the floor finite and >= 0",
                           what, od->plateau_patience, od->plateau_factor, od->plateau_threshold, od->min_learning_rate);
    o = (cq_robot_optimizer *)calloc(1, sizeof *o);
    bytes = sizeof(double) * (size_t)od->params;
    if (o) {
        o->m = (double *)calloc(1, bytes); o->v = (double *)calloc(1, bytes);
        o->lo = (double *)malloc(bytes); o->hi = (double *)malloc(bytes); o->scale = (double *)malloc(bytes);
    }
    if (!o || !o->m || !o->v || !o->lo || !o->hi || !o->scale) {
        cq_robot_optimizer_destroy(o);
        return cq_rb__fail(e, CQ_ERROR_OUT_OF_MEMORY, "%s: out of memory (%d params)", what, od->params);
    }
    o->kind = od->kind; o->n = od->params; o->lr = od->learning_rate;
    o->b1 = od->beta1 > 0 ? od->beta1 : 0.9; o->b2 = od->beta2 > 0 ? od->beta2 : 0.999;
    o->eps = od->epsilon > 0 ? od->epsilon : 1e-8; o->mom = od->momentum; o->clip = od->clip_norm;
    for (int i = 0; i < o->n; ++i) {
        o->lo[i] = od->lo ? od->lo[i] : -HUGE_VAL; o->hi[i] = od->hi ? od->hi[i] : HUGE_VAL;
        o->scale[i] = od->rate_scale ? od->rate_scale[i] : 1;
    }
    o->lr0 = o->lr; o->patience = od->plateau_patience; o->factor = od->plateau_factor > 0 ? od->plateau_factor : 0.5;
    o->threshold = od->plateau_threshold > 0 ? od->plateau_threshold : 1e-4; o->min_lr = od->min_learning_rate;
    o->best = HUGE_VAL; o->bad = 0;
    *out = o;
    return CQ_SUCCESS;
}

void cq_robot_optimizer_destroy(cq_robot_optimizer *o)
{
    if (!o) return;
    free(o->m); free(o->v); free(o->lo); free(o->hi); free(o->scale); free(o);
}
void cq_robot_optimizer_reset(cq_robot_optimizer *o)
{
    if (!o) return;
    memset(o->m, 0, sizeof(double) * (size_t)o->n); memset(o->v, 0, sizeof(double) * (size_t)o->n); o->t = 0;
    o->lr = o->lr0; o->best = HUGE_VAL; o->bad = 0;
}
int cq_robot_optimizer_iterations(const cq_robot_optimizer *o) { return o ? o->t : 0; }
double cq_robot_optimizer_learning_rate(const cq_robot_optimizer *o) { return o ? o->lr : 0; }
double cq_robot_optimizer_best_loss(const cq_robot_optimizer *o) { return o ? o->best : HUGE_VAL; }

cq_result cq_robot_optimizer_report(cq_robot_optimizer *o, double loss, int *reduced)
{
    if (reduced) *reduced = 0;
    if (!o) return CQ_ERROR_INVALID_ARGUMENT;
    if (!cq_rb__finite(loss)) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_NON_FINITE, "cq_robot_optimizer_report: loss = %g", loss);
    if (o->best == HUGE_VAL || loss < o->best - o->threshold * fabs(o->best)) { o->best = loss; o->bad = 0; return CQ_SUCCESS; }
    if (o->patience > 0 && ++o->bad > o->patience) {
        const double lr = o->lr * o->factor;
        o->bad = 0;
        if (lr >= o->min_lr && o->lr > o->min_lr) { o->lr = lr; if (reduced) *reduced = 1; }
        else if (o->lr > o->min_lr) { o->lr = o->min_lr; if (reduced) *reduced = 1; }
    }
    return CQ_SUCCESS;
}

cq_result cq_robot_optimizer_project(const cq_robot_optimizer *o, double *p)
{
    if (!o) return CQ_ERROR_INVALID_ARGUMENT;
    if (!p) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_INVALID_ARGUMENT, "cq_robot_optimizer_project: params is NULL");
    for (int i = 0; i < o->n; ++i) {
        if (p[i] < o->lo[i]) p[i] = o->lo[i];
        if (p[i] > o->hi[i]) p[i] = o->hi[i];
    }
    return CQ_SUCCESS;
}

cq_result cq_robot_optimizer_step(cq_robot_optimizer *o, double *p, const double *g)
{
    const char *what = "cq_robot_optimizer_step";
    double scale = 1, nrm = 0;
    if (!o) return CQ_ERROR_INVALID_ARGUMENT;
    if (!p || !g) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, !p ? "params" : "grad");
    for (int i = 0; i < o->n; ++i) {
        if (!cq_rb__finite(p[i])) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_NON_FINITE, "%s: params[%d] = %g", what, i, p[i]);
        if (!cq_rb__finite(g[i])) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_NON_FINITE, "%s: grad[%d] = %g", what, i, g[i]);
        nrm += g[i] * g[i];
    }
    nrm = sqrt(nrm);
    if (!cq_rb__finite(nrm)) return cq_rb__fail(CQ_RB__ERR(o), CQ_ERROR_NON_FINITE, "%s: the gradient's norm overflows", what);
    if (o->clip > 0 && nrm > o->clip) scale = o->clip / nrm;
    o->t++;
    if (o->kind == CQ_ROBOT_OPTIMIZER_ADAM) {
        const double c1 = 1 - pow(o->b1, o->t), c2 = 1 - pow(o->b2, o->t);
        for (int i = 0; i < o->n; ++i) {
            const double gi = g[i] * scale;
            o->m[i] = o->b1 * o->m[i] + (1 - o->b1) * gi;
            o->v[i] = o->b2 * o->v[i] + (1 - o->b2) * gi * gi;
            p[i] -= o->lr * o->scale[i] * (o->m[i] / c1) / (sqrt(o->v[i] / c2) + o->eps);
        }
    } else {
        for (int i = 0; i < o->n; ++i) {
            o->m[i] = o->mom * o->m[i] + g[i] * scale;
            p[i] -= o->lr * o->scale[i] * o->m[i];
        }
    }
    return cq_robot_optimizer_project(o, p);
}


/* ------------------------------------------------------------------------------ shapes */
cq_result cq_robot_box(int dim, const double *lo, const double *size, double dx, int per_dx,
                       double *x, int cap, int *count)
{
    long n[3] = {1, 1, 1}, total = 1;
    double h;
    if (count) *count = 0;
    if (dim != 2 && dim != 3) return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: dim = %d: must be 2 or 3", dim);
    if (!lo || !size || !count) return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: lo, size and count are required");
    if (!cq_rb__finite(dx) || !(dx > 0) || per_dx < 1 || per_dx > 64)
        return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: dx = %g, per_dx = %d: need dx > 0 and 1 <= per_dx <= 64", dx, per_dx);
    h = dx / per_dx;
    for (int a = 0; a < dim; ++a) {
        if (!cq_rb__finite(lo[a]) || !cq_rb__finite(size[a]) || !(size[a] > 0))
            return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: lo[%d] = %g, size[%d] = %g: need finite values and size > 0", a, lo[a], a, size[a]);
        if (size[a] / h > 1e7) return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: size[%d] = %g is too many particles", a, size[a]);
        n[a] = (long)floor(size[a] / h + 1e-9);
        if (n[a] < 1) n[a] = 1;
        if (!cq_rb__finite(lo[a] + ((double)n[a] - 0.5) * h))   /* the far particle must be finite too */
            return cq_rb__fail(cq_rb__create_error, CQ_ERROR_NON_FINITE, "cq_robot_box: lo[%d] = %g + size[%d] = %g: positions overflow",
                               a, lo[a], a, size[a]);
        total *= n[a];
        if (total > 2147483647L / 9) return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: more than %ld particles", 2147483647L / 9);
    }
    if (x && total > cap)
        return cq_rb__fail(cq_rb__create_error, CQ_ERROR_INVALID_ARGUMENT, "cq_robot_box: %ld particles but cap = %d", total, cap);
    if (x) {
        long c = 0;
        for (long i = 0; i < n[0]; ++i)
            for (long j = 0; j < n[1]; ++j)
                for (long k = 0; k < n[2]; ++k, ++c) {
                    long idx[3] = {i, j, k};
                    for (int a = 0; a < dim; ++a) x[c * dim + a] = lo[a] + ((double)idx[a] + 0.5) * h;
                }
    }
    *count = (int)total;
    return CQ_SUCCESS;
}
#endif /* CHAINQUEEN_ROBOT_IMPLEMENTATION */

/*
   LICENCE: MIT.  Copyright (c) 2026 the chainqueen.h authors (same terms as chainqueen.h).
*/
