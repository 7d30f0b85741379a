/* ---- BEGIN GENERATED: CUDA kernels 2d_f64 from templates/kernels.cu.j2.
   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */
/* The same CQ_HD functions as chainqueen.h, behind extern "C" __global__ wrappers: one thread
   per particle in index order (P2G's particle half, G2P, their adjoints: coalesced reads of the
   particle arrays in any particle order, each packed record written to its particle's sorted
   slot), per cell (the counting sort), per grid node (the grid adjoint) or, for the gather with
   the grid update, per source cell of 32 nodes of a row (>>cuda_gather).  No float sum depends on thread order: the grid's sums are gathers in a fixed
   order over particles counting-sorted by cell (kernels.j2 >>cell_sort_, >>grid_gather_), so a
   forward and its recomputation are bitwise equal run to run. */

#if !defined(__CUDACC__)
/* Host emulation, for tests only: tests/gpu/mock_libcuda.c compiles this file as C and runs
   each launch serially, one thread at a time, so plain adds are race-free. */
#  include <math.h>
#  define __global__
typedef struct cq__emu_dim3 { unsigned x, y, z; } cq__emu_dim3;
extern cq__emu_dim3 cq__emu_blockIdx, cq__emu_blockDim, cq__emu_threadIdx, cq__emu_gridDim;
#  define blockIdx cq__emu_blockIdx
#  define blockDim cq__emu_blockDim
#  define gridDim cq__emu_gridDim
#  define threadIdx cq__emu_threadIdx
static int cq__emu_atomic_min(int *a, int v) { int o = *a; if (v < o) *a = v; return o; }
static int cq__emu_atomic_max(int *a, int v) { int o = *a; if (v > o) *a = v; return o; }
static int cq__emu_atomic_add(int *a, int v) { int o = *a; *a += v; return o; }
#  define atomicMin cq__emu_atomic_min
#  define atomicAdd cq__emu_atomic_add
#  define atomicMax cq__emu_atomic_max
/* Barriers (kernels with `barriers`, one block each): the mock runs the block in thread 0 alone
   (CQ__BLOCK_SERIAL: the same loops with stride 1), or, with CQ_MOCK_FIBERS=1, every thread as a
   fiber that yields at each barrier (cq__emu_fibers is then 1: the parallel path runs). */
extern int cq__emu_fibers;
void cq__emu_syncthreads(void);
int cq__emu_shfl_up(int x, int o);
void cq__emu_shfl_up_n(int *x, int n, int o);
void cq__emu_grid_sync(void);   /* a cooperative launch's grid barrier (>>cuda_sort_coop) */
#  define __syncthreads() cq__emu_syncthreads()
#  define __shfl_up_sync(mask, x, o) cq__emu_shfl_up(x, o)
#  define CQ__WARP_SCAN_STEP(x, n, o, lane) do { int u_[16]; for (int i_ = 0; i_ < (n); ++i_) u_[i_] = (x)[i_]; \
       cq__emu_shfl_up_n(u_, (n), (o)); if ((lane) >= (o)) for (int i_ = 0; i_ < (n); ++i_) (x)[i_] += u_[i_]; } while (0)
#  define __shared__ static
#  define CQ__DEV static
#  define CQ__NOINLINE
#  define CQ__BLOCK_SERIAL (!cq__emu_fibers)
/* a vector access's alignment (kernels_common.j2 cq__ld4_ etc.): the GPU faults where it lacks */
void cq__emu_misaligned(const void *p, int align);
#  define CQ__EMU_ALIGNED(p, align) do { if ((unsigned long)(p) % (align)) cq__emu_misaligned((p), (align)); } while (0)
/* the launches' sort leaves cell_end outside the cells it scans (>>cuda_sort_range) as it was: the
   mock fills those with -2^28 and 2^28 by turns, so that a kernel reading them finds rows with
   particles and cells that span far out of the packed records (and faults), where a GPU would
   read a stale value that is often the right one */
#  define CQ__EMU_POISON_RANGE(a, n, b0, len) \
       do { for (int i_ = 0; i_ < (n); ++i_) if (i_ < (b0) || i_ >= (b0) + (len)) (a)[i_] = (i_ & 1) ? 1 << 28 : -(1 << 28); } while (0)
/* ... and checks, once the scan is done (the mock runs the blocks in order: the last one's thread 0),
   that the counts are 0 again: a particle counted outside the range breaks that */
void cq__emu_counts_left(const int *cnt, int cells);
#  define CQ__EMU_COUNTS_ZERO(cnt, cells) cq__emu_counts_left((cnt), (cells))
#else
#  define CQ__DEV static __device__
#  define CQ__NOINLINE __noinline__   /* a function called in several places kept as one (the PTX's size) */
#  define CQ__BLOCK_SERIAL 0
#  define CQ__EMU_ALIGNED(p, align) ((void)0)
#  define CQ__EMU_POISON_RANGE(a, n, b0, len) ((void)0)
#  define CQ__EMU_COUNTS_ZERO(cnt, cells) ((void)0)
/* a step of n warp scans at once: x[i] += lane - o's x[i] where lane >= o, i < n (n <= 16; the
   mock exchanges the n values in one go: a pair of barriers, not n) */
#  define CQ__WARP_SCAN_STEP(x, n, o, lane) \
       CQ__UNROLL for (int i_ = 0; i_ < (n); ++i_) { const int u_ = __shfl_up_sync(0xffffffffu, (x)[i_], (o)); if ((lane) >= (o)) (x)[i_] += u_; }
#endif
/* CQ__BOUNDS(b): at least b blocks of CQ__CUDA_BLOCK (128) threads per SM, i.e. at most
   65536 / (128 b) registers per thread (5: 96, 8: 64).  The PTX carries it (.minnctapersm). */
#if defined(__CUDACC__)
#  define CQ__BOUNDS_WIDE(t, b) __launch_bounds__(t, b)   /* blocks of up to t threads, b of them an SM */
#  define CQ__BOUNDS(b) CQ__BOUNDS_WIDE(128, b)
#  define CQ__BOUNDS_ONE_BLOCK __launch_bounds__(1024, 1)   /* the one-block kernels: 1024 threads, <= 64 registers */
#else
#  define CQ__BOUNDS(b)
#  define CQ__BOUNDS_WIDE(t, b)
#  define CQ__BOUNDS_ONE_BLOCK
#endif

#if defined(__CUDACC__)
#  define CQ_HD __host__ __device__ static inline
#else
#  define CQ_HD static inline
#endif
/* CQ__UNROLL before a loop of constant trip count: unrolled by nvcc/NVRTC (registers, not
   local memory), and by gcc and clang also at -O2, where gcc 12 leaves such loops rolled unless
   told (-O3 unrolls them anyway).  CQ__CPU_UNROLL marks the small loops of the kernels for the C
   compilers only: with both, a 3D backward at -O2 takes ~0.45x the time it took without them, as
   at -O3 (bench/RESULTS.md).  Not on the stencil's 3^D node loop (unrolled, -O3 got slower) or in
   the SVD (likewise). */
#if defined(__CUDACC__)
#  define CQ__UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#  define CQ__UNROLL _Pragma("GCC unroll 16")
#else
#  define CQ__UNROLL
#endif
/* CQ__CPU_UNROLL: the same for the C compilers only (nvcc keeps its own choice there) */
#if defined(__GNUC__) && !defined(__CUDACC__)
#  define CQ__CPU_UNROLL _Pragma("GCC unroll 16")
#else
#  define CQ__CPU_UNROLL
#endif
/* CQ__GPU_UNROLL: the adjoints' 3^D node loop (stencil.j2 with grad), unrolled by nvcc/NVRTC
   alone: rolled, the loop indexes the particle's weights w[D][3] and dw by its counters, which
   puts them in a stack frame (local memory: 72 bytes in 3D f32, 144 in f64; ptxas -v, sm_90);
   unrolled, they are registers.  On an H200 (ncu, 512k cube, f32): the G2P adjoint 82 -> 74 us,
   the P2G adjoint's transfer half 125 -> 115 (at 96 registers; 80 with the frame).  G2P (no grad:
   stencil's `unroll`) is unrolled in f64 alone: there 155 -> 143 us at 512k; in f32 it took
   91-93 -> 95-97 us at 512k however bounded (64, 96 registers, or 56 unbounded), though 7.3-8.7
   from 9.4-9.9 at 8k.  The C compilers keep the loop rolled (above).  CQ__GPU_ROLLED: 3D f32 G2P's
   loop kept rolled on the GPU, as measured: with a node's velocity one vector load
   (>>grid_layout) nvcc unrolled it of its own accord (2D f32: unrolled before and after). */
#if defined(__CUDACC__)
#  define CQ__GPU_UNROLL _Pragma("unroll")
#  define CQ__GPU_ROLLED _Pragma("unroll 1")
#else
#  define CQ__GPU_UNROLL
#  define CQ__GPU_ROLLED
#endif

/* kernel status codes returned by G2P */
#define CQ__OK 0
#define CQ__NONFINITE 1
#define CQ__OUT_OF_DOMAIN 2

/* nodes a block of the CUDA gather (kernels.cu.j2 >>cuda_gather, 128 threads): 32 nodes of a row
   along the last axis (the host sizes its launch from it) */
#define CQ__GATHER_NZ 32

/* >>cell_box: the particles' box, which the CUDA sort leaves after cell_end's `nodes` entries
   (kernels.cu.j2 >>cuda_box): word CQ__BOX_STRIDE k (k < 2 D), a cache line each, for axis a
   k = a: the largest res[a] - 3 - base[a], k = D + a: the largest base[a] over the particles of
   every scene (base: a particle's cell, 0 .. res[a] - 3), 0 for none.  Every array with
   cell_end's role is allocated nodes + CQ__CELL_TAIL ints, whatever the backend. */
#define CQ__BOX_STRIDE 32
#define CQ__CELL_TAIL (6 * CQ__BOX_STRIDE)

/* values a thread of the CUDA scan holds (kernels.cu.j2 >>tile_scan; the host sizes the scan's
   launches from it) */
#define CQ__SCAN_R 8

/* threads a block of the sort in one cooperative launch (kernels.cu.j2 >>cuda_sort_coop); the
   host's block words for it: CQ__COOP_BAR ints (the grid barrier's counter first), then 2 D a
   block */
#define CQ__COOP_THREADS 256
#define CQ__COOP_BAR 32

/* values per particle in the packed array P2G's particle half writes for the gather (kernels.j2
   >>cell_sort_): mass, fx[D], a[D], B[D*D] */
#define CQ__PK(D) (1 + 2 * (D) + (D) * (D))

/* the actuation gradient of a substep, per group and component: the sum, in double, over the
   group's chunks in order of each chunk's sum, chunk k holding the group's particles
   k * CQ__ACT_CHUNK .. (k + 1) * CQ__ACT_CHUNK - 1 in index order (the CPU and the GPU alike:
   cpu_backend.j2 >>cpu_act_grad, kernels.cu.j2 act_part / act_sum) */
#define CQ__ACT_CHUNK 256

/* boundary codes as stored in the params (cq_boundary with DEFAULT resolved) */
#define CQ__BC_STICKY 1
#define CQ__BC_SLIP 2
#define CQ__BC_SEPARATE 3
#define CQ__BC_FRICTION 4

/* Everything a kernel needs besides the arrays, in double. */
typedef struct cq__params_f64 {
    double dx, inv_dx, dt, friction;
    double gravity[3];
    int res[3];            /* nodes per axis */
    int nodes;             /* nodes of one scene's grid (res[0] res[1] res[2]); scene k's nodes and
                              cells are k * nodes + (node index) in the grid arrays */
    int bound;             /* wall thickness in nodes */
    int boundary;          /* CQ__BC_* */
    int incompressibility; /* exponent p of [Spielberg21] eq 14; 0 = off */
    int act_groups;        /* rows in act_stress */
} cq__params_f64;

/* Particle arrays, particle-major: x, v [n*d]; C, F [n*d*d] row-major; per-particle
   parameters [n]; actuator group [n] (-1 = none); act_stress [groups*d*d]. */
typedef struct cq__pview_f64 {
    double *x, *v, *C, *F;
    double *mass, *vol, *E, *nu;
    int *act;
    double *act_stress;
    int *scene;            /* scene per particle (cq_sim_desc.scenes); NULL: all in scene 0 */
} cq__pview_f64;

/* Grid arrays: m [nodes]; v [nodes*d] holds MOMENTUM after P2G and VELOCITY after the
   grid update (on the GPU a 3D node's v takes 4 slots: >>grid_layout). */
typedef struct cq__gview_f64 {
    double *m, *v;
} cq__gview_f64;

/* >>grid_layout: the GPU's grid arrays read by every particle's stencil hold a node's values
   together in 2 or 4 slots, so that a node is one or two vector loads (f32 3D: a 16-byte load,
   not three or four 4-byte ones): the velocity (and the G2P adjoint gather's dL/dv) in 4 slots
   in 3D (the fourth 0), 2 in 2D; dL/dp and dL/dm of the grid adjoint in 4 slots (p_bar's d, then
   m_bar; no gm_bar array or argument).  The CPU keeps d and 1 (its lane kernels index them per lane).
   Every value is the same, computed by the same operations: only where it is stored differs.
   cq__ld{2,4}: k values at an index that is a multiple of k (aligned: cuMemAlloc aligns an array
   to 256 bytes); cq__st4: 4 values so.  Compiled as C for the mock driver (tests/gpu), each
   checks the alignment the GPU needs (CQ__EMU_ALIGNED: a violation where it lacks). */
CQ_HD void cq__ld2_f64(const double *s, double *d)
{
#if defined(__CUDA_ARCH__)
    const double2 t = *(const double2 *)s;
    d[0] = t.x; d[1] = t.y;
#else
    CQ__EMU_ALIGNED(s, 2 * (int)sizeof(*s));
    d[0] = s[0]; d[1] = s[1];
#endif
}
CQ_HD void cq__ld4_f64(const double *s, double *d)
{
#if defined(__CUDA_ARCH__)
    cq__ld2_f64(s, d); cq__ld2_f64(s + 2, d + 2);
#else
    CQ__EMU_ALIGNED(s, 4 * (int)sizeof(*s) > 16 ? 16 : 4 * (int)sizeof(*s));   /* (f64: two 16-byte loads) */
    CQ__UNROLL for (int i = 0; i < 4; ++i) d[i] = s[i];
#endif
}
CQ_HD void cq__st4_f64(double *d, double a, double b, double c, double e)
{
#if defined(__CUDA_ARCH__)
    *(double2 *)d = make_double2(a, b); *(double2 *)(d + 2) = make_double2(c, e);
#else
    CQ__EMU_ALIGNED(d, 4 * (int)sizeof(*d) > 16 ? 16 : 4 * (int)sizeof(*d));
    d[0] = a; d[1] = b; d[2] = c; d[3] = e;
#endif
}

/* Finite test on the bits (exponent field not all ones): arithmetic tests such as a == a fold
   away under -ffast-math / -ffinite-math-only, which game engines build with. */
CQ_HD int cq__isfinite_f64(double a)
{
    union { double f; unsigned long long u; } b;
    b.f = a;
    return (b.u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/* Lame parameters from Young's modulus and Poisson ratio. */
CQ_HD void cq__lame_f64(double E, double nu, double *mu, double *lam)
{
    *mu = E / (2 * (1 + nu));
    *lam = E * nu / ((1 + nu) * (1 - 2 * nu));
}
/* The quadratic B-spline weight of node k (0, 1, 2) of a particle fx = f cells from its stencil's
   first node ([ChainQueen] eq 3; cq__weights_ computes the three by the same operations): the
   gathers' weights from a packed record's fx (kernels.j2 cq__gather_row_, cq__gather_rows_;
   cpu_backend.j2 cq__pk_widen_) */
CQ_HD double cq__bspline_f64(double f, int k)
{
    const double e = k == 0 ? (double)1.5 - f : (k == 1 ? f - 1 : f - (double)0.5);
    return k == 1 ? (double)0.75 - e * e : (double)0.5 * e * e;
}


/* ======================================================================== 2D f64 */
/* >>weights_2d_f64: quadratic B-spline weights ([ChainQueen] eq 3). base: lower node
   per axis; fx: position in cells relative to base, in [0.5, 1.5). */
CQ_HD void cq__weights_2d_f64(const double *xp, double inv_dx, int *base, double *fx, double (*w)[3])
{
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
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
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
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

/* >>rot_2d_f64: what a particle's stress and its adjoint need of the polar decomposition
   of F: R.  Computed once per particle and
   shared by the stress (cq__pk1_rot_), its VJP and the polar VJP (cq__pk1_vjp_rot_), so the P2G
   adjoint decomposes F once.  A material without a rotation sets R = 0
   (cq__rot_none_). */
typedef struct cq__rot_2d_f64 {
    double R[4];
} cq__rot_2d_f64;
CQ_HD void cq__rot_fill_2d_f64(const double *F, cq__rot_2d_f64 *r)
{
    cq__polar_2d_f64(F, r->R);
}
CQ_HD void cq__rot_none_2d_f64(cq__rot_2d_f64 *r)
{
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) r->R[a] = 0;
}

/* >>incompressible_2d_f64: [Spielberg21] eq 14, P += E/(3(2-2nu)) p (J-1)^(p-1) J F^-T. */
CQ_HD void cq__incompressible_2d_f64(const double *F, double E, double nu, int p, double *P)
{
    double K[4], J = cq__det_2d_f64(F), pw = 1;
    for (int i = 1; i < p; ++i) pw *= J - 1;
    double s = E / (3 * (2 - 2 * nu)) * (double)p * pw;
    cq__cofactor_2d_f64(F, K);
    CQ__CPU_UNROLL for (int i = 0; i < 4; ++i) P[i] += s * K[i];
}

/* >>grid_2d_f64: wall boundary conditions ([Spielberg21] sec 3.2, friction as appendix B
   eqs B1-B6).  Nodes within `bound` of a face are wall nodes; the normal points into the
   domain; corners apply each axis in turn. */
/* One wall axis a with inward normal n (+1 or -1) applied to v.  Returns 1 when the node is
   sticky (v zeroed: the other axes do not matter). */
CQ_HD int cq__bc_axis_2d_f64(int a, double n, const cq__params_f64 *prm, double *v)
{
    double ln = v[a] * n;                           /* l_n, eq B1 */
    switch (prm->boundary) {
    case CQ__BC_STICKY:
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) v[b] = 0;
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
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
            double lt = sqrt(s2) + 1e-300;        /* l_t = |v_t| + eps, eq B3 */
            double lts = lt + prm->friction * ln;          /* eq B5 (ln < 0 here) */
            if (lts < 0) lts = 0;
            double scale = lts / lt;
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) v[b] = b == a ? (double)0 : v[b] * scale;   /* eq B6 */
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
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        int n = cq__wall_normal_2d_f64(c, a, prm);
        if (n && cq__bc_axis_2d_f64(a, (double)n, prm, v)) return;
    }
}

/* The coordinates c[D] of grid node `node` (of any scene: node = scene * nodes + local index). */
CQ_HD void cq__node_coords_2d_f64(int node, const cq__params_f64 *prm, int *c)
{
    const int l = node % prm->nodes;
    c[0] = l / prm->res[1]; c[1] = l % prm->res[1];
}

/* Grid update for one node ([Spielberg21] eq 7 + gravity + walls): v = p / m + dt g. */
CQ_HD void cq__grid_fwd_2d_f64(int node, const cq__params_f64 *prm, cq__gview_f64 g)
{
    double *v = g.v + (long)node * 2;
    double m = g.m[node];
    if (!(m > 0)) {
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) v[a] = 0;
        return;
    }
    int c[2];
    cq__node_coords_2d_f64(node, prm, c);
    double inv_m = 1 / m;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) v[a] = v[a] * inv_m + prm->dt * prm->gravity[a];
    cq__boundary_2d_f64(c, prm, v);
}

/* >>g2p_2d_f64: [ChainQueen] eqs 8-11 / [Spielberg21] eqs 8-11.  Reads particle p of `in`,
   writes particle p of `out` (which may alias `in`).  Returns CQ__OK, CQ__NONFINITE or
   CQ__OUT_OF_DOMAIN.  An input outside the usable region (possible only on the GPU, when an
   earlier substep of a step whose status is read once failed: cuda_backend.j2 >>cuda_drivers)
   reads no grid, writes nothing and returns CQ__OUT_OF_DOMAIN, so a failed step stays within its
   arrays until the host looks. */
CQ_HD int cq__g2p_fwd_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 in,
                                  cq__pview_f64 out, cq__gview_f64 g)
{
    int base[2];
    double fx[2], w[2][3], xp[2], Fp[4], nv[2] = {0}, nC[4] = {0};
    const long goff = in.scene ? (long)in.scene[p] * prm->nodes : 0;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) xp[a] = in.x[(long)p * 2 + a];
    if (!cq__in_domain_2d_f64(xp, prm)) return CQ__OUT_OF_DOMAIN;
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = in.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    const double k4 = 4 * prm->inv_dx;          /* 4/dx^2 times dpos = (node - fx) dx */
    double dp[2][3];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
        CQ__CPU_UNROLL for (int i = 0; i < 3; ++i) dp[a][i] = (double)i - fx[a];
    CQ__GPU_UNROLL for (int i = 0; i < 3; ++i)
    CQ__GPU_UNROLL for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const long idx = goff + (long)(base[0] + i) * prm->res[1] + (base[1] + j);
        double vi[2];
        cq__ld2_f64(g.v + idx * 2, vi);
        double d[2];                  /* x_i - x_p, in cells */
        CQ__UNROLL for (int a = 0; a < 2; ++a) d[a] = dp[a][o[a]];
        CQ__UNROLL for (int a = 0; a < 2; ++a) {
            const double wv = wt * vi[a];
            nv[a] += wv;
            CQ__UNROLL for (int b = 0; b < 2; ++b) nC[a * 2 + b] += wv * d[b];
        }
    }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) nC[a] *= k4;
    int status = CQ__OK;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        double xn = xp[a] + prm->dt * nv[a];
        out.x[(long)p * 2 + a] = xn;
        out.v[(long)p * 2 + a] = nv[a];
        if (!cq__isfinite_f64(xn) || !cq__isfinite_f64(nv[a])) status = CQ__NONFINITE;
    }
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double f = Fp[a * 2 + b];   /* F <- (I + dt C) F, eq 10 */
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) f += prm->dt * nC[a * 2 + c] * Fp[c * 2 + b];
            out.F[(long)p * 4 + a * 2 + b] = f;
            out.C[(long)p * 4 + a * 2 + b] = nC[a * 2 + b];
            if (!cq__isfinite_f64(f) || !cq__isfinite_f64(nC[a * 2 + b])) status = CQ__NONFINITE;
        }
    if (status == CQ__OK && !cq__in_domain_2d_f64(out.x + (long)p * 2, prm)) status = CQ__OUT_OF_DOMAIN;
    return status;
}

/* >>cell_sort_2d_f64: particles are counting-sorted by cell before P2G: a particle's cell is
   the lowest node of its stencil (base), so the particles that reach node i are those of the
   cells i-2..i on every axis.  base[D] and fx[D] (position in cells relative to base, as in
   cq__weights) of a particle; a particle outside the usable region (possible only in a failing
   substep) is clamped into the grid, so the sort and the gather stay in bounds.  Returns the
   cell's index in the grid arrays (scene * nodes + the base node's index). */
CQ_HD int cq__base_2d_f64(const double *xp, const cq__params_f64 *prm, int *base, double *fx)
{
    int cell = 0;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        const double q = xp[a] * prm->inv_dx, t = q - (double)0.5;
        const int top = prm->res[a] - 3;
        base[a] = t >= 0 ? (t < (double)top ? (int)floor(t) : top) : 0;   /* NaN: 0 */
        fx[a] = q - (double)base[a];
        cell = cell * prm->res[a] + base[a];
    }
    return cell;
}

/* particle p's cell in the grid arrays (its scene's and its base node's); box: NULL, or the
   particles' box words so far (kernels_common.j2 >>cell_box: 2 D of them), raised by p's */
CQ_HD int cq__cell_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, int *box)
{
    int base[2];
    double fx[2];
    const int cell = cq__base_2d_f64(s.x + (long)p * 2, prm, base, fx);
    if (box)
        CQ__UNROLL for (int a = 0; a < 2; ++a) {
            const int lo = prm->res[a] - 3 - base[a];
            if (lo > box[a]) box[a] = lo;
            if (base[a] > box[2 + a]) box[2 + a] = base[a];
        }
    return (s.scene ? s.scene[p] * prm->nodes : 0) + cell;
}

/* One packed particle's contributions to the 3 nodes o[D-1] = 0, 1, 2 of a row of its stencil
   (the other offsets o[0..D-2] given, 0..2 each): m[k] += w_k mass (when m), mom[k] += w_k (a + B
   (x_i - x_p)).  pk: mass, fx[D], a[D], B[D*D] (P2G: a = m v, B = G; the G2P adjoint: a = dL/dv',
   B = (4/dx^2) dL/dC').  The factors that do not depend on o[D-1] are computed once.  m: 3 nodes
   (or NULL), mom: 3 x D. */
CQ_HD void cq__gather_row_2d_f64(const double *pk, const int *o, const cq__params_f64 *prm, double *m, double *mom)
{
    double w[2][3], d[2][3], part[2];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        const double f = pk[1 + a];
        CQ__CPU_UNROLL for (int k = 0; k < 3; ++k) {
            const int ok = a < 1 ? o[a] : k;
            w[a][k] = cq__bspline_f64(f, ok);
            d[a][k] = ((double)ok - f) * prm->dx;
        }
    }
    const double wf = w[0][0];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        part[a] = pk[1 + 2 + a];
        CQ__CPU_UNROLL for (int b = 0; b < 1; ++b) part[a] += pk[1 + 2 * 2 + a * 2 + b] * d[b][0];
    }
    CQ__CPU_UNROLL for (int k = 0; k < 3; ++k) {
        const double wt = wf * w[1][k];
        if (m) m[k] += wt * pk[0];
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
            mom[k * 2 + a] += wt * (part[a] + pk[1 + 2 * 2 + a * 2 + 1] * d[1][k]);
    }
}

/* >>grid_gather_2d_f64: P2G's node half, a gather: node i sums the contributions of the
   particles of cells c = i - o, o in {2, 1, 0} per axis, in a fixed order: the 3 rows of cells
   along the last axis in increasing order (o[0] from 2 to 0), in each the cells i - 2, i - 1, i;
   each cell's sum over its particles (in sorted order, by particle index) from 0, added to the
   node's total from 0 (an empty cell adds 0 or nothing: the same bits).  So a node's sum is
   bitwise the same on any number of threads, run to run, and on the GPU up to fused
   multiply-adds.  The CUDA kernel (kernels.cu.j2 >>cuda_gather, 32 nodes of a row a block) takes
   each cell's sum for the 3 nodes of the row it reaches from this function (the CPU, cpu_backend.j2
   >>cpu_gather_ row by row, its operations from its widened records, >>cpu_gather_record):
   particles [b, e) of the sorted packed array pk, the other offsets o[0..D-2] given; m[3] (or
   NULL), mom[3 x D], set (not added to). */
CQ_HD void cq__gather_cell_2d_f64(const double *pk, int b, int e, const int *o, const cq__params_f64 *prm,
                                              double *m, double *mom)
{
    if (m) m[0] = m[1] = m[2] = 0;
    CQ__CPU_UNROLL for (int a = 0; a < 3 * 2; ++a) mom[a] = 0;
    for (int k = b; k < e; ++k) cq__gather_row_2d_f64(pk + (long)k * CQ__PK(2), o, prm, m, mom);
}

/* >>gather_rows_2d_f64: cq__gather_row_ for up to 3 rows of one particle's stencil at once: the
   rows with o[0] = oj[j] (j = 0, 1, 2; a row with oj[j] outside 0..2 is skipped).  The
   weights are computed once; each row's values are the very operations of cq__gather_row_, so
   its sums are that function's bits (the CUDA gather, >>cuda_gather, reads a record once for
   the 3 rows of a block that it reaches).  m: 3 x 3 (or NULL), mom: 3 x 3 x D, added to. */
CQ_HD void cq__gather_rows_2d_f64(const double *pk, const int *o, const int *oj, const cq__params_f64 *prm, double *m, double *mom)
{
    double w[2][3], d[2][3];
    (void)o;
    CQ__UNROLL for (int a = 0; a < 2; ++a) {
        const double f = pk[1 + a];
        CQ__UNROLL for (int k = 0; k < 3; ++k) {
            w[a][k] = cq__bspline_f64(f, k);
            d[a][k] = ((double)k - f) * prm->dx;
        }
    }
    CQ__UNROLL for (int j = 0; j < 3; ++j) {
        const int oo = oj[j];
        double part[2];
        if (oo < 0 || oo > 2) continue;
        /* the row's factors by selects, not indices (registers, not a stack frame) */
        const double wr = oo == 0 ? w[0][0] : (oo == 1 ? w[0][1] : w[0][2]);
        const double dr = oo == 0 ? d[0][0] : (oo == 1 ? d[0][1] : d[0][2]);
        const double wf = wr;
        CQ__UNROLL for (int a = 0; a < 2; ++a) {
            part[a] = pk[1 + 2 + a];
            part[a] += pk[1 + 2 * 2 + a * 2 + 0] * dr;
        }
        CQ__UNROLL for (int k = 0; k < 3; ++k) {
            const double wt = wf * w[1][k];
            if (m) m[3 * j + k] += wt * pk[0];
            CQ__UNROLL for (int a = 0; a < 2; ++a)
                mom[3 * 2 * j + k * 2 + a] += wt * (part[a] + pk[1 + 2 * 2 + a * 2 + 1] * d[1][k]);
        }
    }
}

/* cq__gather_cell_ for up to 3 rows at once (cq__gather_rows_): each row's cell sum over
   particles [b, e) from 0, in order; m[3 x 3] (or NULL), mom[3 x 3 x D], set */
CQ_HD void cq__gather_cell3_2d_f64(const double *pk, int b, int e, const int *o, const int *oj,
                                               const cq__params_f64 *prm, double *m, double *mom)
{
    if (m) CQ__UNROLL for (int a = 0; a < 9; ++a) m[a] = 0;
    CQ__UNROLL for (int a = 0; a < 9 * 2; ++a) mom[a] = 0;
    for (int k = b; k < e; ++k) cq__gather_rows_2d_f64(pk + (long)k * CQ__PK(2), o, oj, prm, m, mom);
}

/* particle p's affine matrix G = -(4/dx^2) dt V0 P F^T + m C, from its stress P and F (P2G's,
   and the CPU's P2G adjoint, which recomputes it) */
CQ_HD void cq__affine_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, const double *Pp,
        const double *Fp, double *G)
{
    const double mass = s.mass[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt * s.vol[p];   /* -(4/dx^2) dt V0 */
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double pf = 0;   /* (P F^T)_ab */
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) pf += Pp[a * 2 + c] * Fp[b * 2 + c];
            G[a * 2 + b] = ks * pf + mass * s.C[(long)p * 4 + a * 2 + b];
        }
}

/* >>material_fixed_corotated_2d_f64: Fixed corotated elasticity (Stomakhin et al. 2012; [Spielberg21] eq 12).

       psi(F) = mu |F - R|^2 + lam/2 (J - 1)^2
       P(F)   = 2 mu (F - R) + lam (J - 1) J F^-T

   R is the rotation of the polar decomposition F = R S, supplied by the generator's
   hand-written polar routine (m.R).  Because the energy depends on R, the stress is
   stated explicitly rather than left to symbolic differentiation.
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

/* F's rotation as this material needs it (none: R = 0, unused) */
CQ_HD void cq__rot_of_2d_fixed_corotated_f64(const double *F, cq__rot_2d_f64 *r)
{
    cq__rot_fill_2d_f64(F, r);
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a).  cq__pk1_rot_: with F's
   rotation r given (cq__rot_of_). */
CQ_HD void cq__pk1_rot_2d_fixed_corotated_f64(const double *F, const cq__rot_2d_f64 *r, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam;
    cq__lame_f64(E, nu, &mu, &lam);
    cq__stress_2d_fixed_corotated_f64(F, r->R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 4;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b)
                CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}
CQ_HD void cq__pk1_2d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    cq__rot_2d_f64 r;
    cq__rot_of_2d_fixed_corotated_f64(F, &r);
    cq__pk1_rot_2d_fixed_corotated_f64(F, &r, E, nu, group, prm, act_stress, P);
}

/* >>p2g_2d_fixed_corotated_f64: P2G's particle half ([ChainQueen] eqs 3-6, APIC + MLS force):
   particle p's mass, its position in its cell, its momentum m v and its affine matrix
   G = -(4/dx^2) dt V0 P F^T + m C, packed into pk[CQ__PK(D)] for the node half
   (>>grid_gather_2d_f64), which adds w (m v + G (x_i - x_p)) to each node's momentum. */
/* rot: F's rotation (cq__rot_of_): computed here and also stored there (fill: the CPU's backward
   keeps it for the P2G adjoint of the same substep), or given (!fill: the CPU computes 3D
   rotations over lanes of particles, cpu_lanes.j2 >>svd_lanes_3d_) */
CQ_HD void cq__p2g_rot_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, double *pk,
                                               cq__rot_2d_f64 *rot, int fill)
{
    int base[2];
    double xp[2], Fp[4], Pp[4];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__base_2d_f64(xp, prm, base, pk + 1);
    if (fill) cq__rot_of_2d_fixed_corotated_f64(Fp, rot);
    cq__pk1_rot_2d_fixed_corotated_f64(Fp, rot, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    pk[0] = s.mass[p];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) pk[1 + 2 + a] = s.mass[p] * s.v[(long)p * 2 + a];
    cq__affine_2d_f64(p, prm, s, Pp, Fp, pk + 1 + 2 * 2);
}
CQ_HD void cq__p2g_fwd_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, double *pk)
{
    cq__rot_2d_f64 rot;
    cq__p2g_rot_2d_fixed_corotated_f64(p, prm, s, pk, &rot, 1);
}

/* >>material_neohookean_2d_f64: Compressible NeoHookean elasticity ([Spielberg21] eq 13).

       psi(F) = mu/2 (tr(F^T F) - d) - mu log J + lam/2 (log J)^2
       P(F)   = mu (F - F^-T) + lam log(J) F^-T

   The stress is derived by the generator from the energy (no R involved).
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

/* F's rotation as this material needs it (none: R = 0, unused) */
CQ_HD void cq__rot_of_2d_neohookean_f64(const double *F, cq__rot_2d_f64 *r)
{
    (void)F;
    cq__rot_none_2d_f64(r);
}

/* Total first Piola-Kirchhoff stress of one particle: material + incompressibility + actuation
   (DESIGN.md sec 3: P = P_material(F; E, nu) [+ P_inc] + F sigma_a).  cq__pk1_rot_: with F's
   rotation r given (cq__rot_of_). */
CQ_HD void cq__pk1_rot_2d_neohookean_f64(const double *F, const cq__rot_2d_f64 *r, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress, double *P)
{
    double mu, lam;
    cq__lame_f64(E, nu, &mu, &lam);
    cq__stress_2d_neohookean_f64(F, r->R, mu, lam, P);
    if (prm->incompressibility) cq__incompressible_2d_f64(F, E, nu, prm->incompressibility, P);
    if (group >= 0 && group < prm->act_groups) {
        const double *sa = act_stress + (long)group * 4;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b)
                CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) P[a * 2 + b] += F[a * 2 + c] * sa[c * 2 + b];
    }
}
CQ_HD void cq__pk1_2d_neohookean_f64(const double *F, double E, double nu, int group,
                                           const cq__params_f64 *prm, const double *act_stress, double *P)
{
    cq__rot_2d_f64 r;
    cq__rot_of_2d_neohookean_f64(F, &r);
    cq__pk1_rot_2d_neohookean_f64(F, &r, E, nu, group, prm, act_stress, P);
}

/* >>p2g_2d_neohookean_f64: P2G's particle half ([ChainQueen] eqs 3-6, APIC + MLS force):
   particle p's mass, its position in its cell, its momentum m v and its affine matrix
   G = -(4/dx^2) dt V0 P F^T + m C, packed into pk[CQ__PK(D)] for the node half
   (>>grid_gather_2d_f64), which adds w (m v + G (x_i - x_p)) to each node's momentum. */
/* rot: F's rotation (cq__rot_of_): computed here and also stored there (fill: the CPU's backward
   keeps it for the P2G adjoint of the same substep), or given (!fill: the CPU computes 3D
   rotations over lanes of particles, cpu_lanes.j2 >>svd_lanes_3d_) */
CQ_HD void cq__p2g_rot_2d_neohookean_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, double *pk,
                                               cq__rot_2d_f64 *rot, int fill)
{
    int base[2];
    double xp[2], Fp[4], Pp[4];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__base_2d_f64(xp, prm, base, pk + 1);
    if (fill) cq__rot_of_2d_neohookean_f64(Fp, rot);
    cq__pk1_rot_2d_neohookean_f64(Fp, rot, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    pk[0] = s.mass[p];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) pk[1 + 2 + a] = s.mass[p] * s.v[(long)p * 2 + a];
    cq__affine_2d_f64(p, prm, s, Pp, Fp, pk + 1 + 2 * 2);
}
CQ_HD void cq__p2g_fwd_2d_neohookean_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, double *pk)
{
    cq__rot_2d_f64 rot;
    cq__p2g_rot_2d_neohookean_f64(p, prm, s, pk, &rot, 1);
}


/* Adjoint kernels.  Glossary: X_bar is dL/dX, the adjoint of forward quantity X (x_bar, v_bar,
   C_bar, F_bar of a particle; P_bar of its stress; m_bar, vol_bar, E_bar, nu_bar of its
   parameters; gv_bar, gp_bar, gm_bar of a grid node's velocity, momentum and mass; act_bar of
   its actuation stress).  A VJP function ADDS its X_bar outputs.  ao / ai: the adjoints of a
   substep's output / input particle state; pg: the parameter gradients.  Host buffers keep
   short names: grid_vb, grid_pb, grid_mb = gv_bar, gp_bar, gm_bar (on the GPU gp_bar holds
   gm_bar too: kernels_common.j2 >>grid_layout). */
/* ======================================================================== 2D f64 adjoint */
/* >>polar_vjp_2d_f64: F_bar += dL/F_bar given R_bar = dL/R_bar, for R the polar rotation of F
   (cq__polar_2d_f64).  With F = U diag(sig) V^T (signed sig, R = U V^T) and
   H = U^T R_bar V, the result is  U A V^T,  A_ij = (H_ij - H_ji) / (sig_i + sig_j)  (i != j),
   A_ii = 0: only sums of singular values appear, never differences, so F = I and repeated
   singular values are regular points.  sig_i + sig_j >= 0 by the sign convention and is 0
   only where R itself is not differentiable (an inverted pair cancelling, e.g. sig =
   (1, s, -s)); there the denominator is clamped to 1e-6 * sig_max (2D: * |F|), which keeps the
   gradient finite (bounded by |R_bar| / (1e-6 sig_max)) but no longer exact.  F = 0
   (where the forward pass returns the constant R = I) adds nothing. */
CQ_HD void cq__polar_vjp_rot_2d_f64(const double *F, const cq__rot_2d_f64 *rot, const double *R_bar, double *F_bar)
{
    const double *R = rot->R;
    /* 2D: R is the rotation by theta = atan2(F10 - F01, F00 + F11); r = |(F00 + F11, F10 - F01)|
       = sig_0 + sig_1.  dL/dtheta = <R_bar, R_bar/dtheta>, dtheta/d(F00 + F11) = -sin/r,
       dtheta/d(F10 - F01) = cos/r. */
    double a = F[0] + F[3], b = F[2] - F[1];
    double r = sqrt(a * a + b * b);
    if (!(r > 0)) return;
    double fl = 1e-06 * sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2] + F[3] * F[3]);
    double c = R[0], s = R[2];
    double gth = c * (R_bar[2] - R_bar[1]) - s * (R_bar[0] + R_bar[3]);
    double q = gth / (r > fl ? r : fl);
    F_bar[0] -= s * q; F_bar[3] -= s * q;
    F_bar[2] += c * q; F_bar[1] -= c * q;
}
/* the same with only F and R at hand (R = cq__polar_2d_f64(F)) */
CQ_HD void cq__polar_vjp_2d_f64(const double *F, const double *R, const double *R_bar, double *F_bar)
{
    cq__rot_2d_f64 rot;
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) rot.R[a] = R[a];
    cq__polar_vjp_rot_2d_f64(F, &rot, R_bar, F_bar);
}

/* F_bar += s * d<K_bar, cofactor(F)>/F_bar (cofactor as cq__cofactor_2d_f64). */
CQ_HD void cq__cofactor_vjp_2d_f64(const double *F, const double *K_bar, double s, double *F_bar)
{
    (void)F;
    F_bar[0] += s * K_bar[3]; F_bar[1] -= s * K_bar[2]; F_bar[2] -= s * K_bar[1]; F_bar[3] += s * K_bar[0];
}

/* >>incompressible_vjp_2d_f64: adjoint of cq__incompressible_2d_f64
   (P += s K, s = E p (J-1)^(p-1) / (3(2-2nu)), K = cofactor(F), dJ/F_bar = K). */
CQ_HD void cq__incompressible_vjp_2d_f64(const double *F, double E, double nu, int p, const double *P_bar,
                                                 double *F_bar, double *E_bar, double *nu_bar)
{
    double K[4], J = cq__det_2d_f64(F), pw = 1, dpw = 0, g = 0;
    for (int i = 1; i < p; ++i) pw *= J - 1;                 /* (J-1)^(p-1) */
    if (p >= 2) { dpw = (double)(p - 1); for (int i = 2; i < p; ++i) dpw *= J - 1; }   /* its dJ */
    double c = (double)p / (3 * (2 - 2 * nu));
    double s = E * c * pw;
    cq__cofactor_2d_f64(F, K);
    CQ__CPU_UNROLL for (int i = 0; i < 4; ++i) g += P_bar[i] * K[i];
    *E_bar += g * c * pw;
    *nu_bar += g * s / (1 - nu);                               /* d/nu_bar 1/(6(1-nu)) = 1/(6(1-nu)^2) */
    double sj = g * E * c * dpw;
    CQ__CPU_UNROLL for (int i = 0; i < 4; ++i) F_bar[i] += sj * K[i];
    cq__cofactor_vjp_2d_f64(F, P_bar, s, F_bar);
}

/* >>stress_vjp_2d_fixed_corotated_f64: adjoint of cq__stress_2d_fixed_corotated_f64: given P_bar =
   dL/P_bar, ADDS d<P_bar, P>/F_bar to F_bar, /R_bar to R_bar (R held independent of F),
   /mu_bar to *mu_bar and /lam_bar to *lam_bar.  Generated by SymPy from generator/materials/fixed_corotated.py. */
CQ_HD void cq__stress_vjp_2d_fixed_corotated_f64(const double *F, const double *R, double mu, double lam, const double *P_bar,
                                                double *F_bar, double *R_bar, double *mu_bar, double *lam_bar)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)P_bar; (void)F_bar; (void)R_bar; (void)mu_bar; (void)lam_bar;
    const double t0 = lam*(-F[0]*F[3] + F[1]*F[2] + 1);
    const double t1 = 2*mu;
    const double b0 = P_bar[1]*(F[1] - R[1]) + P_bar[2]*(F[2] - R[2]);
    const double b1 = -F[0]*P_bar[3] + F[1]*P_bar[2] + F[2]*P_bar[1] - F[3]*P_bar[0];
    F_bar[0] += -F[3]*b1*lam + 2*P_bar[0]*mu - P_bar[3]*t0;
    F_bar[1] += F[2]*b1*lam + P_bar[1]*t1 + P_bar[2]*t0;
    F_bar[2] += F[1]*b1*lam + P_bar[1]*t0 + P_bar[2]*t1;
    F_bar[3] += -F[0]*b1*lam - P_bar[0]*t0 + 2*P_bar[3]*mu;
    R_bar[0] += -2*P_bar[0]*mu;
    R_bar[1] += -P_bar[1]*t1;
    R_bar[2] += -P_bar[2]*t1;
    R_bar[3] += -2*P_bar[3]*mu;
    *mu_bar += P_bar[0]*(2*F[0] - 2*R[0]) + P_bar[3]*(2*F[3] - 2*R[3]) + 2*b0;
    *lam_bar += b1*(-F[0]*F[3] + F[1]*F[2] + 1);
}

/* >>pk1_vjp_2d_fixed_corotated_f64: adjoint of cq__pk1_2d_fixed_corotated_f64 (same arguments,
   then P_bar = dL/P_bar).  ADDS dL/F_bar to F_bar (through the polar rotation too when the material uses
   it), dL/E_bar to *E_bar, dL/nu_bar to *nu_bar (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T P_bar to act_bar, which is the d x d block of THIS particle's
   group (not the whole act_stress array); act_bar may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_rot_2d_fixed_corotated_f64(const double *F, const cq__rot_2d_f64 *rot, double E, double nu, int group,
                                                   const cq__params_f64 *prm, const double *act_stress,
                                                   const double *P_bar, double *F_bar, double *E_bar, double *nu_bar, double *act_bar)
{
    double mu, lam, R_bar[4], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) R_bar[a] = 0;
    cq__stress_vjp_2d_fixed_corotated_f64(F, rot->R, mu, lam, P_bar, F_bar, R_bar, &gmu, &glam);
    cq__polar_vjp_rot_2d_f64(F, rot, R_bar, F_bar);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *E_bar += gmu / (2 * op) + glam * nu / (op * om);
        *nu_bar += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f64(F, E, nu, prm->incompressibility, P_bar, F_bar, E_bar, nu_bar);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: F_bar += P_bar sa^T, dsa += F^T P_bar */
        const double *sa = act_stress + (long)group * 4;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) {
                double g = 0;
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) g += P_bar[a * 2 + b] * sa[c * 2 + b];
                F_bar[a * 2 + c] += g;
            }
        if (act_bar)
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c)
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
                    double g = 0;
                    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * P_bar[a * 2 + b];
                    act_bar[c * 2 + b] += g;
                }
    }
}
CQ_HD void cq__pk1_vjp_2d_fixed_corotated_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *P_bar, double *F_bar, double *E_bar, double *nu_bar, double *act_bar)
{
    cq__rot_2d_f64 rot;
    cq__rot_of_2d_fixed_corotated_f64(F, &rot);
    cq__pk1_vjp_rot_2d_fixed_corotated_f64(F, &rot, E, nu, group, prm, act_stress, P_bar, F_bar, E_bar, nu_bar, act_bar);
}

/* >>stress_vjp_2d_neohookean_f64: adjoint of cq__stress_2d_neohookean_f64: given P_bar =
   dL/P_bar, ADDS d<P_bar, P>/F_bar to F_bar, /R_bar to R_bar (R held independent of F; this material has no R, so R_bar is untouched and may be NULL),
   /mu_bar to *mu_bar and /lam_bar to *lam_bar.  Generated by SymPy from generator/materials/neohookean.py. */
CQ_HD void cq__stress_vjp_2d_neohookean_f64(const double *F, const double *R, double mu, double lam, const double *P_bar,
                                                double *F_bar, double *R_bar, double *mu_bar, double *lam_bar)
{
    (void)F; (void)R; (void)mu; (void)lam; (void)P_bar; (void)F_bar; (void)R_bar; (void)mu_bar; (void)lam_bar;
    const double t0 = F[0]*mu;
    const double t1 = F[0]*F[3] - F[1]*F[2];
    const double t2 = (1.0/((t1)));
    const double t3 = F[3]*mu;
    const double f0 = log(t1);
    const double t4 = f0*lam*t2;
    const double t5 = F[1]*mu;
    const double t6 = F[2]*mu;
    const double b0 = P_bar[1]*t2 + P_bar[2];
    const double b1 = P_bar[1] + P_bar[2]*t2;
    const double b2 = F[0]*P_bar[3] - F[1]*P_bar[2] - F[2]*P_bar[1] + F[3]*P_bar[0];
    const double b3 = b2*lam*t2;
    const double b4 = -P_bar[0]*t2 + P_bar[3];
    const double b5 = -P_bar[0]*t3 + P_bar[1]*t6 + P_bar[2]*t5 - P_bar[3]*t0 + b2*f0*lam;
    const double b6 = b3/t1 - b5/((t1)*(t1));
    const double b7 = P_bar[0] - P_bar[3]*t2;
    F_bar[0] += F[3]*b6 + P_bar[3]*t4 + b7*mu;
    F_bar[1] += -F[2]*b6 - P_bar[2]*t4 + b1*mu;
    F_bar[2] += -F[1]*b6 - P_bar[1]*t4 + b0*mu;
    F_bar[3] += F[0]*b6 + P_bar[0]*t4 + b4*mu;
    *mu_bar += F[0]*b7 + F[1]*b1 + F[2]*b0 + F[3]*b4;
    *lam_bar += b2*f0*t2;
}

/* >>pk1_vjp_2d_neohookean_f64: adjoint of cq__pk1_2d_neohookean_f64 (same arguments,
   then P_bar = dL/P_bar).  ADDS dL/F_bar to F_bar (through the polar rotation too when the material uses
   it), dL/E_bar to *E_bar, dL/nu_bar to *nu_bar (through mu = E/(2(1+nu)), lam = E nu/((1+nu)(1-2nu)) and
   the incompressibility term), and F^T P_bar to act_bar, which is the d x d block of THIS particle's
   group (not the whole act_stress array); act_bar may be NULL, and is untouched when the particle
   has no valid group.  Plain +=: a caller summing many particles into one group block must
   make that race-free itself. */
CQ_HD void cq__pk1_vjp_rot_2d_neohookean_f64(const double *F, const cq__rot_2d_f64 *rot, double E, double nu, int group,
                                                   const cq__params_f64 *prm, const double *act_stress,
                                                   const double *P_bar, double *F_bar, double *E_bar, double *nu_bar, double *act_bar)
{
    double mu, lam, R_bar[4], gmu = 0, glam = 0;
    cq__lame_f64(E, nu, &mu, &lam);
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) R_bar[a] = 0;
    cq__stress_vjp_2d_neohookean_f64(F, rot->R, mu, lam, P_bar, F_bar, R_bar, &gmu, &glam);
    {
        const double op = 1 + nu, om = 1 - 2 * nu;
        *E_bar += gmu / (2 * op) + glam * nu / (op * om);
        *nu_bar += -gmu * E / (2 * op * op) + glam * E * (1 + 2 * nu * nu) / (op * op * om * om);
    }
    if (prm->incompressibility) cq__incompressible_vjp_2d_f64(F, E, nu, prm->incompressibility, P_bar, F_bar, E_bar, nu_bar);
    if (group >= 0 && group < prm->act_groups) {   /* P += F sa: F_bar += P_bar sa^T, dsa += F^T P_bar */
        const double *sa = act_stress + (long)group * 4;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) {
                double g = 0;
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) g += P_bar[a * 2 + b] * sa[c * 2 + b];
                F_bar[a * 2 + c] += g;
            }
        if (act_bar)
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c)
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
                    double g = 0;
                    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) g += F[a * 2 + c] * P_bar[a * 2 + b];
                    act_bar[c * 2 + b] += g;
                }
    }
}
CQ_HD void cq__pk1_vjp_2d_neohookean_f64(const double *F, double E, double nu, int group,
                                               const cq__params_f64 *prm, const double *act_stress,
                                               const double *P_bar, double *F_bar, double *E_bar, double *nu_bar, double *act_bar)
{
    cq__rot_2d_f64 rot;
    cq__rot_of_2d_neohookean_f64(F, &rot);
    cq__pk1_vjp_rot_2d_neohookean_f64(F, &rot, E, nu, group, prm, act_stress, P_bar, F_bar, E_bar, nu_bar, act_bar);
}

/* ------------------------------------------------------------------ transfer adjoints 2D f64
   Reverse order of the forward substep ([ChainQueen-supp]; [Spielberg21] appendix A.2): G2P adjoint scatters
   into the grid velocity adjoints, the grid adjoint backs through the wall projection and
   v = p/m + dt g, the P2G adjoint gathers into the particle adjoints.  The grid is recomputed
   from the substep's input state by the caller, never stored across substeps. */

/* dw/dx_p for the quadratic B-spline: grad[a][i] = d w_a(i) / d x_a (times inv_dx). */
CQ_HD void cq__weight_grads_2d_f64(const double *fx, double inv_dx, double (*dw)[3])
{
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        dw[a][0] = -((double)1.5 - fx[a]) * inv_dx;
        dw[a][1] = -2 * (fx[a] - 1) * inv_dx;
        dw[a][2] = (fx[a] - (double)0.5) * inv_dx;
    }
}

/* >>boundary_adj_2d_f64: adjoint of the wall projection (cq__boundary_2d_f64).
   v0: the velocity BEFORE the projection; v_bar: dL/d(projected v) on entry, dL/dv0 on return.
   Friction follows [Spielberg21] appendix B (B9-B15, whose dl_t* / dl_n bookkeeping is done here by
   direct differentiation of B3-B6). */
CQ_HD void cq__boundary_adj_2d_f64(const int *c, const cq__params_f64 *prm, const double *v0, double *v_bar)
{
    double vs[3][2];   /* velocity before each axis' projection */
    int axis_n[2], last = 2;
    CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) vs[0][b] = v0[b];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) vs[a + 1][b] = vs[a][b];
        axis_n[a] = cq__wall_normal_2d_f64(c, a, prm);
        if (axis_n[a] && cq__bc_axis_2d_f64(a, (double)axis_n[a], prm, vs[a + 1])) { last = a; break; }
    }
    if (last < 2) { CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) v_bar[b] = 0; return; }   /* sticky wall node */
    for (int a = 2 - 1; a >= 0; --a) {
        if (!axis_n[a]) continue;
        const double *v = vs[a];
        double n = (double)axis_n[a], ln = v[a] * n;
        switch (prm->boundary) {
        case CQ__BC_SLIP:
            v_bar[a] = 0;
            break;
        case CQ__BC_SEPARATE:
            if (ln < 0) v_bar[a] = 0;
            break;
        default: /* CQ__BC_FRICTION */
            if (ln < 0) {
                double s2 = 0, sc_bar = 0;
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) if (b != a) s2 += v[b] * v[b];
                double r = sqrt(s2), lt = r + 1e-300;
                double lts = lt + prm->friction * ln;
                int open = lts > 0;
                if (!open) lts = 0;
                double scale = lts / lt;
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) if (b != a) sc_bar += v_bar[b] * v[b];
                double lts_bar = sc_bar / lt, lt_bar = -sc_bar * lts / (lt * lt);
                if (open) lt_bar += lts_bar;
                double ln_bar = open ? prm->friction * lts_bar : 0;
                CQ__CPU_UNROLL for (int b = 0; b < 2; ++b)
                    if (b != a) v_bar[b] = v_bar[b] * scale + (r > 0 ? lt_bar * v[b] / r : 0);
                v_bar[a] = ln_bar * n;
            }
            break;
        }
    }
}

/* >>grid_adj_2d_f64: grid-update adjoint for one node: v = bc(p/m + dt g).  gp: momentum (pre-projection) of the
   forward pass; gv_bar: dL/dv; writes dL/dp and dL/dm of the node (on the GPU both into gp_bar, dL/dm in
   slot 2: kernels_common.j2 >>grid_layout). */
CQ_HD void cq__grid_adj_2d_f64(int node, const cq__params_f64 *prm, const double *gm,
                                                   const double *gp, const double *gv_bar, double *gp_bar)
{
    double m = gm[node], v0[2], v_bar[2];
    int c[2];
    if (!(m > 0)) {
        cq__st4_f64(gp_bar + (long)node * 4, 0, 0, 0, 0);
        return;
    }
    cq__node_coords_2d_f64(node, prm, c);
    double inv_m = 1 / m, m_bar = 0, u[2];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        u[a] = gp[(long)node * 2 + a] * inv_m;   /* p/m */
        v0[a] = u[a] + prm->dt * prm->gravity[a];
        v_bar[a] = gv_bar[(long)node * 2 + a];
    }
    cq__boundary_adj_2d_f64(c, prm, v0, v_bar);
    /* dL/dm = -sum_a (dL/dp_a) (p/m)_a, both factors finite: written as v_bar p / m^2, a
       compiler allowed to reassociate (-ffast-math) formed 1/m^2 first, which overflows float at
       a stencil's fringe (m ~ 1e-20, where p/m is still fine) */
    double pb[2];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        pb[a] = v_bar[a] * inv_m;
        m_bar -= pb[a] * u[a];
    }
    cq__st4_f64(gp_bar + (long)node * 4, pb[0], pb[1], m_bar, 0);
}

/* >>g2p_adj_2d_f64: adjoint of G2P (eqs 8-11) for particle p.  `s` is the substep's
   input state, g the recomputed grid (v = projected velocity), `ao` the adjoint of the output
   state.  Its scatter, dL/dv_i += w (dL/dv' + (4/dx^2) dL/dC' (x_i - x_p)), is left to the gather
   (>>grid_gather_): this writes fx, a = dL/dv' and B = (4/dx^2) dL/dC' into the particle's packed
   record pk (not the mass: the gather does not read it).  SETS ai.x and ai.F to the G2P part of the
   input state's adjoint (the P2G adjoint adds its part after). */
CQ_HD void cq__g2p_adj_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s,
                                                  cq__gview_f64 g, cq__pview_f64 ao, cq__pview_f64 ai,
                                                  double *pk)
{
    const long goff = s.scene ? (long)s.scene[p] * prm->nodes : 0;
    int base[2];
    double fx[2], w[2][3], dw[2][3], xp[2], Fp[4], nC[4] = {0}, sv[2] = {0};
    double v_bar_t[2], C_bar_t[4], Bc[4], x_bar[2];
    const double k4 = 4 * prm->inv_dx, dt = prm->dt;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) xp[a] = s.x[(long)p * 2 + a];
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f64(fx, prm->inv_dx, dw);
    /* x' = x + dt v'  ->  v_bar' += dt x_bar';   F' = (I + dt C') F  ->  C_bar' += dt F_bar' F^T */
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        x_bar[a] = ao.x[(long)p * 2 + a];
        v_bar_t[a] = ao.v[(long)p * 2 + a] + dt * x_bar[a];
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double acc = ao.C[(long)p * 4 + a * 2 + b];
            CQ__CPU_UNROLL for (int k = 0; k < 2; ++k) acc += dt * ao.F[(long)p * 4 + a * 2 + k] * Fp[b * 2 + k];
            C_bar_t[a * 2 + b] = acc;
        }
    }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Bc[a] = k4 * C_bar_t[a];   /* (C_bar_t is not needed after this) */
    /* Per node i (d = x_i - x_p in cells, w its weight): C' = (4/dx) sum_i w v_i d^T exactly as G2P
       computes it; the weights' derivative gets (v_i . (v_bar' + (4/dx) C_bar' d)) dw/dx_p; and
       x_p's part through d, -(4/dx^2) sum_i w C_bar'^T v_i = -(4/dx^2) C_bar'^T sum_i w v_i, is
       taken once from sv = sum_i w v_i after the loop (Bc = (4/dx) C_bar'). */
    CQ__GPU_UNROLL for (int i = 0; i < 3; ++i)
    CQ__GPU_UNROLL for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const double gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = goff + (long)(base[0] + i) * prm->res[1] + (base[1] + j);
        double d[2], sdot = 0;
        double vi[2];
        cq__ld2_f64(g.v + idx * 2, vi);
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) d[a] = (double)o[a] - fx[a];
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
            const double wv = wt * vi[a];
            double u = v_bar_t[a];
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
                u += Bc[a * 2 + b] * d[b];
                nC[a * 2 + b] += wv * d[b];
            }
            sv[a] += wv;
            sdot += vi[a] * u;
        }
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) x_bar[a] += sdot * gw[a];   /* through the weights */
    }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) nC[a] *= k4;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        double cv = 0;   /* (C_bar'^T sv)_a */
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) cv += Bc[b * 2 + a] * sv[b];
        x_bar[a] -= prm->inv_dx * cv;        /* d = x_i - x_p */
    }
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] = x_bar[a];
        pk[1 + a] = fx[a];                   /* as P2G's particle half (in the usable region: same base) */
        pk[1 + 2 + a] = v_bar_t[a];
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) pk[1 + 2 * 2 + a * 2 + b] = prm->inv_dx * Bc[a * 2 + b];   /* (4/dx^2) C_bar' */
    }
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)       /* F_bar = (I + dt C')^T F_bar' */
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double acc = ao.F[(long)p * 4 + a * 2 + b];
            CQ__CPU_UNROLL for (int k = 0; k < 2; ++k) acc += dt * nC[k * 2 + a] * ao.F[(long)p * 4 + k * 2 + b];
            ai.F[(long)p * 4 + a * 2 + b] = acc;
        }
}

/* the transfer half of the P2G adjoint (>>p2g_adj_ below): the same for every material */
CQ_HD void cq__p2g_adj_transfer_2d_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *G_in, const double *gp_bar, cq__pview_f64 ai,
        cq__pview_f64 pg, double *G_bar_out)
{
    int base[2];
    double fx[2], w[2][3], dw[2][3], xp[2], vp[2], mv[2], G[4], G_bar[4] = {0};
    double x_bar[2] = {0}, sp[2] = {0}, m_bar = 0;
    const long goff = s.scene ? (long)s.scene[p] * prm->nodes : 0;
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) { xp[a] = s.x[(long)p * 2 + a]; vp[a] = s.v[(long)p * 2 + a]; }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) G[a] = G_in[a];   /* (G_in may be G_bar_out's memory) */
    cq__weights_2d_f64(xp, prm->inv_dx, base, fx, w);
    cq__weight_grads_2d_f64(fx, prm->inv_dx, dw);
    const double mass = s.mass[p];
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) mv[a] = mass * vp[a];
    /* Per node i (dpos = x_i - x_p, w its weight): the weights' derivative gets
       (dL/dm_i m + dL/dp_i . (m v + G dpos)) dw/dx_p, and x_p through dpos -w G^T dL/dp_i; what
       enters linearly in w is summed once, sp = sum_i w dL/dp_i: v_bar = m sp and m's part v . sp.
       (Summing G^T's part once too would save 9 multiply-adds per node, but then nvcc holds 253
       registers in the f64 kernel instead of 166.) */
    CQ__GPU_UNROLL for (int i = 0; i < 3; ++i)
    CQ__GPU_UNROLL for (int j = 0; j < 3; ++j)
    {
        const int o[2] = {i, j};
        const double wt = w[0][i] * w[1][j];
        const double gw[2] = {dw[0][i] * w[1][j], w[0][i] * dw[1][j]};
        const long idx = goff + (long)(base[0] + i) * prm->res[1] + (base[1] + j);
        double dpos[2];
        double p_bar[4];
        cq__ld4_f64(gp_bar + idx * 4, p_bar);
        const double m_bar_i = p_bar[2];
        double sdot = m_bar_i * mass;   /* d(contribution)/dw */
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) dpos[a] = ((double)o[a] - fx[a]) * prm->dx;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
            const double wp = wt * p_bar[a];
            double mom = mv[a];
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
                mom += G[a * 2 + b] * dpos[b];
                G_bar[a * 2 + b] += wp * dpos[b];
            }
            sdot += p_bar[a] * mom;
            sp[a] += wp;
            double gtp = 0;   /* (G^T dL/dp_i)_a */
            CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) gtp += G[b * 2 + a] * p_bar[b];
            x_bar[a] -= wt * gtp;                 /* dpos = x_i - x_p */
        }
        m_bar += wt * m_bar_i;
        CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) x_bar[a] += sdot * gw[a];
    }
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) m_bar += sp[a] * vp[a];
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) m_bar += s.C[(long)p * 4 + a] * G_bar[a];   /* G = ... + m C */
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a) {
        ai.x[(long)p * 2 + a] += x_bar[a];
        ai.v[(long)p * 2 + a] = mass * sp[a];
    }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) {
        ai.C[(long)p * 4 + a] = mass * G_bar[a];
        G_bar_out[a] = G_bar[a];
    }
    pg.mass[p] += m_bar;
}

/* >>p2g_adj_2d_fixed_corotated_f64: adjoint of P2G (eqs 3-6) for particle p, in two halves
   (cq__p2g_adj_2d_fixed_corotated_f64 runs both).  The transfer half is a gather: given the
   particle's affine matrix G = (-(4/dx^2) dt V0) P F^T + m C (what P2G packed), it reads dL/dp_i
   (gp_bar) and dL/dm_i (gm_bar) of its stencil, ADDS to ai.x, SETS ai.v and ai.C (v and C enter
   the substep only here), ADDS the mass gradient to pg.mass, and SETS G_bar = dL/dG.  The stress
   half backs G_bar through G to P and F and through the stress (pk1_vjp): ADDS to ai.F, to
   pg.vol, pg.E and pg.nu, and SETS act_bar[0..d*d) to this particle's actuation gradient
   F^T P_bar.  On the GPU they are two kernels, the first taking G from P2G's packed particles
   (no stress there), so neither holds the stencil's and the stress derivative's registers at
   once. */
/* The stress half given F's rotation rot and P (both of s.F[p]; the combined P2G adjoint below
   computes them once for both halves) */
CQ_HD void cq__p2g_adj_stress_rot_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const cq__rot_2d_f64 *rot, const double *Pp, const double *G_bar_in,
        cq__pview_f64 ai, cq__pview_f64 pg, double *act_bar)
{
    double Fp[4], G_bar[4], P_bar[4], F_bar[4], vol_bar = 0, E_bar = 0, nu_bar = 0;
    const int group = s.act ? s.act[p] : -1;
    const double vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) { Fp[a] = s.F[(long)p * 4 + a]; G_bar[a] = G_bar_in[a]; }
    /* G = k V0 P F^T + m C */
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double gf_ab = 0, gtp_ab = 0, pf = 0;
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) {
                gf_ab += G_bar[a * 2 + c] * Fp[c * 2 + b];   /* (G_bar F)_ab */
                gtp_ab += G_bar[c * 2 + a] * Pp[c * 2 + b];   /* (G_bar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            P_bar[a * 2 + b] = ks * vol * gf_ab;
            F_bar[a * 2 + b] = ks * vol * gtp_ab;
            vol_bar += ks * pf * G_bar[a * 2 + b];
        }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) act_bar[a] = 0;
    cq__pk1_vjp_rot_2d_fixed_corotated_f64(Fp, rot, s.E[p], s.nu[p], group, prm, s.act_stress, P_bar, F_bar, &E_bar, &nu_bar, act_bar);
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) ai.F[(long)p * 4 + a] += F_bar[a];
    pg.vol[p] += vol_bar; pg.E[p] += E_bar; pg.nu[p] += nu_bar;
}
/* the stress half alone (the GPU's second kernel): F's rotation and P computed here */
CQ_HD void cq__p2g_adj_stress_2d_fixed_corotated_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *G_bar_in, cq__pview_f64 ai, cq__pview_f64 pg, double *act_bar)
{
    double Fp[4], Pp[4];
    cq__rot_2d_f64 rot;
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__rot_of_2d_fixed_corotated_f64(Fp, &rot);
    cq__pk1_rot_2d_fixed_corotated_f64(Fp, &rot, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    cq__p2g_adj_stress_rot_2d_fixed_corotated_f64(p, prm, s, &rot, Pp, G_bar_in, ai, pg, act_bar);
}


/* >>p2g_adj_2d_neohookean_f64: adjoint of P2G (eqs 3-6) for particle p, in two halves
   (cq__p2g_adj_2d_neohookean_f64 runs both).  The transfer half is a gather: given the
   particle's affine matrix G = (-(4/dx^2) dt V0) P F^T + m C (what P2G packed), it reads dL/dp_i
   (gp_bar) and dL/dm_i (gm_bar) of its stencil, ADDS to ai.x, SETS ai.v and ai.C (v and C enter
   the substep only here), ADDS the mass gradient to pg.mass, and SETS G_bar = dL/dG.  The stress
   half backs G_bar through G to P and F and through the stress (pk1_vjp): ADDS to ai.F, to
   pg.vol, pg.E and pg.nu, and SETS act_bar[0..d*d) to this particle's actuation gradient
   F^T P_bar.  On the GPU they are two kernels, the first taking G from P2G's packed particles
   (no stress there), so neither holds the stencil's and the stress derivative's registers at
   once. */
/* The stress half given F's rotation rot and P (both of s.F[p]; the combined P2G adjoint below
   computes them once for both halves) */
CQ_HD void cq__p2g_adj_stress_rot_2d_neohookean_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const cq__rot_2d_f64 *rot, const double *Pp, const double *G_bar_in,
        cq__pview_f64 ai, cq__pview_f64 pg, double *act_bar)
{
    double Fp[4], G_bar[4], P_bar[4], F_bar[4], vol_bar = 0, E_bar = 0, nu_bar = 0;
    const int group = s.act ? s.act[p] : -1;
    const double vol = s.vol[p];
    const double ks = -4 * prm->inv_dx * prm->inv_dx * prm->dt;   /* -(4/dx^2) dt */
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) { Fp[a] = s.F[(long)p * 4 + a]; G_bar[a] = G_bar_in[a]; }
    /* G = k V0 P F^T + m C */
    CQ__CPU_UNROLL for (int a = 0; a < 2; ++a)
        CQ__CPU_UNROLL for (int b = 0; b < 2; ++b) {
            double gf_ab = 0, gtp_ab = 0, pf = 0;
            CQ__CPU_UNROLL for (int c = 0; c < 2; ++c) {
                gf_ab += G_bar[a * 2 + c] * Fp[c * 2 + b];   /* (G_bar F)_ab */
                gtp_ab += G_bar[c * 2 + a] * Pp[c * 2 + b];   /* (G_bar^T P)_ab */
                pf += Pp[a * 2 + c] * Fp[b * 2 + c];     /* (P F^T)_ab */
            }
            P_bar[a * 2 + b] = ks * vol * gf_ab;
            F_bar[a * 2 + b] = ks * vol * gtp_ab;
            vol_bar += ks * pf * G_bar[a * 2 + b];
        }
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) act_bar[a] = 0;
    cq__pk1_vjp_rot_2d_neohookean_f64(Fp, rot, s.E[p], s.nu[p], group, prm, s.act_stress, P_bar, F_bar, &E_bar, &nu_bar, act_bar);
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) ai.F[(long)p * 4 + a] += F_bar[a];
    pg.vol[p] += vol_bar; pg.E[p] += E_bar; pg.nu[p] += nu_bar;
}
/* the stress half alone (the GPU's second kernel): F's rotation and P computed here */
CQ_HD void cq__p2g_adj_stress_2d_neohookean_f64(int p, const cq__params_f64 *prm,
        cq__pview_f64 s, const double *G_bar_in, cq__pview_f64 ai, cq__pview_f64 pg, double *act_bar)
{
    double Fp[4], Pp[4];
    cq__rot_2d_f64 rot;
    CQ__CPU_UNROLL for (int a = 0; a < 4; ++a) Fp[a] = s.F[(long)p * 4 + a];
    cq__rot_of_2d_neohookean_f64(Fp, &rot);
    cq__pk1_rot_2d_neohookean_f64(Fp, &rot, s.E[p], s.nu[p], s.act ? s.act[p] : -1, prm, s.act_stress, Pp);
    cq__p2g_adj_stress_rot_2d_neohookean_f64(p, prm, s, &rot, Pp, G_bar_in, ai, pg, act_bar);
}



/* >>cables_2d_f64: cable actuators ([Spielberg21] eqs 16-17).  A cable routed through
   particles p_0..p_{r-1}, stiffness k, rest length R and actuation u stores
   E = k/2 max(0, L - max(0, R u))^2 with L = sum_i |x_{i+1} - x_i|; its force f = -dE/dx
   enters as a velocity impulse veff = v + dt f / m before P2G.  Segments seg[3 s .. 3 s + 2] =
   a, b, cable (from particle a to b), a cable's consecutive.  The CPU walks the segments in order
   (the per-segment functions, adding into per-cable and per-particle sums); the GPU computes
   the same sums in the same order without atomics: per cable over its segments (first[c] ..
   first[c + 1]), and per particle over the segments that touch it (row r: particle row[r],
   entries ent[rbeg[r] .. rbeg[r + 1]) = 2 s + (1 if it is the segment's b), by segment).  Cable
   and force sums are in double.  target[c] = max(0, R u). */
CQ_HD double cq__cable_dir_2d_f64(const int *seg, int s, const double *x, double *n)
{
    const long a = seg[3 * s], b = seg[3 * s + 1];
    double l = 0;
    for (int k = 0; k < 2; ++k) { n[k] = (double)x[b * 2 + k] - (double)x[a * 2 + k]; l += n[k] * n[k]; }
    l = sqrt(l);
    for (int k = 0; k < 2; ++k) n[k] = l > 0 ? n[k] / l : 0;
    return l;
}

/* forward 1: L[c] += |segment s| */
CQ_HD void cq__cable_len_2d_f64(int s, const int *seg, const double *x, double *L)
{
    double n[2], l = cq__cable_dir_2d_f64(seg, s, x, n);
    L[seg[3 * s + 2]] += l;
}

/* the force of segment s on its end a, k st n (on b: minus that; st = L - target); 0 if slack */
CQ_HD int cq__cable_seg_force_2d_f64(int s, const int *seg, const double *x, const double *L, const double *k,
                                               const double *target, double *fa)
{
    const int c = seg[3 * s + 2];
    double n[2], st = L[c] - target[c];
    if (!(st > 0)) return 0;
    cq__cable_dir_2d_f64(seg, s, x, n);
    for (int q = 0; q < 2; ++q) fa[q] = k[c] * st * n[q];
    return 1;
}

/* forward 2: the force of segment s on its ends */
CQ_HD void cq__cable_force_2d_f64(int s, const int *seg, const double *x, const double *L, const double *k,
                                            const double *target, double *f)
{
    const long a = seg[3 * s], b = seg[3 * s + 1];
    double fa[2];
    if (!cq__cable_seg_force_2d_f64(s, seg, x, L, k, target, fa)) return;
    for (int q = 0; q < 2; ++q) {
        f[a * 2 + q] += fa[q];
        f[b * 2 + q] += -fa[q];
    }
}

/* the GPU's: cable c's length; row r's force (what cq__cable_len / cq__cable_force add up) */
CQ_HD void cq__cable_len_cable_2d_f64(int c, const int *first, const int *seg, const double *x, double *L)
{
    double sum = 0, n[2];
    for (int s = first[c]; s < first[c + 1]; ++s) sum += cq__cable_dir_2d_f64(seg, s, x, n);
    L[c] = sum;
}

CQ_HD void cq__cable_force_row_2d_f64(int r, const int *row, const int *rbeg, const int *ent, const int *seg,
                                                const double *x, const double *L, const double *k, const double *target, double *f)
{
    double sum[2] = {0}, fa[2];
    for (int e = rbeg[r]; e < rbeg[r + 1]; ++e)
        if (cq__cable_seg_force_2d_f64(ent[e] >> 1, seg, x, L, k, target, fa))
            for (int q = 0; q < 2; ++q) sum[q] += (ent[e] & 1) ? -fa[q] : fa[q];
    for (int q = 0; q < 2; ++q) f[(long)row[r] * 2 + q] = sum[q];
}

/* forward 3, per particle: veff = v + dt f / m (f = 0 off the cables) */
CQ_HD void cq__cable_veff_2d_f64(int p, const double *v, const double *f, const double *m, double dt, double *veff)
{
    for (int q = 0; q < 2; ++q)
        veff[(long)p * 2 + q] = v[(long)p * 2 + q] + (double)(dt * f[(long)p * 2 + q] / (double)m[p]);
}

/* adjoint 1, per particle: dL/dm += -dt (f . vbar) / m^2 (av = dL/dveff) */
CQ_HD void cq__cable_mass_adj_2d_f64(int p, const double *f, const double *av, const double *m, double dt, double *gmass)
{
    double fv = 0, mp = m[p];
    for (int q = 0; q < 2; ++q) fv += f[(long)p * 2 + q] * (double)av[(long)p * 2 + q];
    gmass[p] += (double)(-dt * fv / (mp * mp));
}

/* adjoint 2, per segment: dot[c] += n . (fbar_b - fbar_a), fbar = dt vbar / m = dL/df (the
   segment's term; 0 and nothing to add when the cable is slack) */
CQ_HD int cq__cable_seg_dot_2d_f64(int s, const int *seg, const double *x, const double *av, const double *m,
                                             const double *L, const double *target, double dt, double *acc)
{
    const int c = seg[3 * s + 2];
    const long a = seg[3 * s], b = seg[3 * s + 1];
    double n[2];
    *acc = 0;
    if (!(L[c] - target[c] > 0)) return 0;
    cq__cable_dir_2d_f64(seg, s, x, n);
    for (int q = 0; q < 2; ++q)
        *acc += n[q] * (dt / (double)m[b] * (double)av[b * 2 + q] - dt / (double)m[a] * (double)av[a * 2 + q]);
    return 1;
}

CQ_HD void cq__cable_dot_2d_f64(int s, const int *seg, const double *x, const double *av, const double *m,
                                          const double *L, const double *target, double dt, double *dot)
{
    double acc;
    if (cq__cable_seg_dot_2d_f64(s, seg, x, av, m, L, target, dt, &acc)) dot[seg[3 * s + 2]] += acc;
}

/* the GPU's: cable c's dot (what cq__cable_dot adds up) */
CQ_HD void cq__cable_dot_cable_2d_f64(int c, const int *first, const int *seg, const double *x, const double *av,
                                                const double *m, const double *L, const double *target, double dt, double *dot)
{
    double sum = 0, acc;
    for (int s = first[c]; s < first[c + 1]; ++s)
        if (cq__cable_seg_dot_2d_f64(s, seg, x, av, m, L, target, dt, &acc)) sum += acc;
    dot[c] = sum;
}

/* adjoint 3, per cable: dL/du += k R dot (when R u > 0: the target is R u) */
CQ_HD void cq__cable_grad_2d_f64(int c, const double *k, const double *rest, const double *target,
                                           const double *dot, double *grad)
{
    if (target[c] > 0) grad[c] += k[c] * rest[c] * dot[c];
}

/* adjoint 4, per segment: f = -k st dL/dx  ->  xbar += -k dot dL/dx - k st (d2L/dx2) fbar:
   g[D] is the segment's term for its end b (a gets -g); 0 when there is none */
CQ_HD int cq__cable_seg_x_adj_2d_f64(int s, const int *seg, const double *x, const double *av, const double *m,
                                               const double *L, const double *target, const double *k, const double *dot,
                                               double dt, double *g)
{
    const int c = seg[3 * s + 2];
    const long a = seg[3 * s], b = seg[3 * s + 1];
    double n[2], w[2], nw = 0, l, st = L[c] - target[c];
    if (!(st > 0)) return 0;
    l = cq__cable_dir_2d_f64(seg, s, x, n);
    if (!(l > 0)) return 0;
    for (int q = 0; q < 2; ++q) {
        w[q] = dt / (double)m[b] * (double)av[b * 2 + q] - dt / (double)m[a] * (double)av[a * 2 + q];
        nw += n[q] * w[q];
    }
    for (int q = 0; q < 2; ++q) g[q] = -k[c] * dot[c] * n[q] - k[c] * st * (w[q] - n[q] * nw) / l;
    return 1;
}

CQ_HD void cq__cable_x_adj_2d_f64(int s, const int *seg, const double *x, const double *av, const double *m,
                                            const double *L, const double *target, const double *k, const double *dot,
                                            double dt, double *ax)
{
    const long a = seg[3 * s], b = seg[3 * s + 1];
    double g[2];
    if (!cq__cable_seg_x_adj_2d_f64(s, seg, x, av, m, L, target, k, dot, dt, g)) return;
    for (int q = 0; q < 2; ++q) {
        ax[b * 2 + q] += (double)g[q];
        ax[a * 2 + q] += (double)-g[q];
    }
}

/* the GPU's: row r's position adjoint, added in segment order (as cq__cable_x_adj adds it) */
CQ_HD void cq__cable_x_adj_row_2d_f64(int r, const int *row, const int *rbeg, const int *ent, const int *seg,
                                                const double *x, const double *av, const double *m, const double *L,
                                                const double *target, const double *k, const double *dot, double dt, double *ax)
{
    const long p = row[r];
    double g[2];
    for (int e = rbeg[r]; e < rbeg[r + 1]; ++e)
        if (cq__cable_seg_x_adj_2d_f64(ent[e] >> 1, seg, x, av, m, L, target, k, dot, dt, g))
            for (int q = 0; q < 2; ++q) ax[p * 2 + q] += (ent[e] & 1) ? (double)g[q] : (double)-g[q];
}


/* ------------------------------------------------------------------ >>sph
   Fluid particles i, j (mass m), boundary particles b (volume V_b, "mass" rho0 V_b).  Cubic
   spline kernel W of support h = 4r.  Every function reads the particles near one particle
   through the cell grid (cells of size h; fluid and boundary particles are counting-sorted by
   cell, see cq__counting_sort) and writes only that particle's own entries, so loops over
   particles run in any order and split with bitwise the same results. */
#define CQ__BODY_WALL (-1)          /* bobj of the domain's walls; static body k: -2 - k */
#define CQ__SPH_CHUNK 256           /* particles per partial sum of the solvers' error */
typedef struct cq__sph_f64 {
    double h, h2, sigma, gsigma, m, rho0, dt, visc;
    double gamma_wall, gamma_body;   /* boundary volume scales (cq__lattice_gamma) */
    double lo[3], hi[3];             /* the fluid's box (the domain) */
    double glo[3], inv_h;            /* cell grid origin; cell size h */
    int nc[3], nf, nb;
    double *x, *v, *vt;              /* fluid [nf*d]; vt: scratch velocity */
    double *rho, *khat, *g, *kappa, *err;   /* fluid [nf]; g [nf*d] = sum m grad W (+ boundary) */
    const int *fstart;              /* the fluid's cells' starts: the world keeps its fluid in cell
                                       order (slot k holds particle k), so cell c's particles are
                                       fstart[c] .. fstart[c + 1] - 1 */
    int scalar;                     /* 1: the search's plain loop where AVX-512 could run (>>sph_x86;
                                       the tests compare the two) */
    double *xb, *vb, *Vb;            /* boundary [nb*d], [nb*d], [nb] */
    const int *bobj;                /* body id (>= 0 dynamic), CQ__BODY_WALL, or -2 - id (static) */
    const int *bstart, *border;
    int *foff, *fnb, *boff, *bnb;   /* per fluid particle: its fluid neighbours fnb[foff[i] ..
                                       fend[i]) (itself included) and boundary neighbours (the
                                       CPU's; the GPU's: below) */
    int *fend, *bend;               /* the lists' ends (the CPU's chunks, world.j2 >>world_near, leave
                                       room after each chunk) */
    int fcap, bcap;                 /* the GPU's lists: particle i's k-th entry at i + k nf (a warp's
                                       threads read one row at a time), k < fend[i] (up to fcap,
                                       bcap: the room a particle; a step whose lists need more runs
                                       again with it, world.j2 >>world_fluid_step); foff, boff unused */
    double *fgw, *bgw;                 /* per entry of fnb: the pair's W'(r)/r (grad W = it times
                                       x_i - x_j); of bnb: V_b W'(r)/r; sph_density writes them and
                                       the solvers' passes read them (nothing moves during them); 0
                                       for i itself */
    double *Fb, *Gb;                 /* fluid force on each boundary particle [nb*d]; its localized
                                       derivative d F_b / d v_b [nb*d*d] ([DiffFR-supp] Alg. 1) */
} cq__sph_f64;

/* >>sph_cell: the cell of a point xi (cells of size h from glo, inv_h = 1 / h; clamped to the nc
   cells a side) as its coordinates c[0 .. 1] (c[2] = 0 in 2D); returns its index, x fastest.
   The one definition for the sorts (world.j2 cq__world_sort_, kernels.cu.j2 >>sph_sort) and the
   neighbour search, so they agree to the bit. */
CQ_HD int cq__sph_cell_2d_f64(const double *glo, double inv_h, const int *nc, const double *xi, int *c)
{
    c[2] = 0;
    for (int a = 0; a < 2; ++a) {
        const int k = (int)floor((xi[a] - glo[a]) * inv_h);
        c[a] = k < 0 ? 0 : (k >= nc[a] ? nc[a] - 1 : k);
    }
    return c[0] + nc[0] * (c[1]);
}
/* >>sph_neighbours: fluid particle i's neighbours within h, fluid and boundary, in cell order
   (so in the same order whatever the threads and however the lists are laid out): the fluid ones
   into fl and the boundary ones into bl where all of them fit in fcap and bcap entries (where they
   do not, what is there is not the list: the callers then size them anew); their numbers (all of
   them) into *nf and *nb.  The k-th entries at fl[k st], bl[k st].  The CPU's lists in one pass: world.j2 >>world_near; the
   GPU's: cq__sph_fill_ below. */
CQ_HD void cq__sph_near_lists_2d_f64(const cq__sph_f64 *s, int i, int *fl, int fcap, int *bl, int bcap, int *nf, int *nb, int st)
{
    const double *xi = s->x + (long)i * 2;
    int cf = 0, cb = 0;
    double d[2];
    {   /* the 3 (2D) or 9 (3D) runs of 3 cells along x: cells next along x are next in the sort,
           so a run is one range of the order (the same particles in the same order as cell by cell) */
        int c0_[3];
        (void)cq__sph_cell_2d_f64(s->glo, s->inv_h, s->nc, xi, c0_);
        for (int cz_ = 0; cz_ <= 0; ++cz_) {
            if (cz_ < 0 || cz_ >= s->nc[2]) continue;
            for (int cy_ = c0_[1] - 1; cy_ <= c0_[1] + 1; ++cy_) {
                int row_, k0_, k1_;
                if (cy_ < 0 || cy_ >= s->nc[1]) continue;
                row_ = s->nc[0] * (cy_ + s->nc[1] * cz_);
                k0_ = s->fstart[row_ + (c0_[0] > 0 ? c0_[0] - 1 : 0)];
                k1_ = s->fstart[row_ + (c0_[0] + 1 < s->nc[0] ? c0_[0] + 1 : c0_[0]) + 1];
                for (int k_ = k0_; k_ < k1_; ++k_) {
                    const int j = k_;
                        double r2 = 0;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->x[(long)j * 2 + a]; r2 += d[a] * d[a]; }
#if defined(__CUDA_ARCH__)
                        if (r2 >= s->h2) continue;   /* a GPU: a store a neighbour, not a candidate */
                        if (cf < fcap) fl[cf * st] = j;
                        ++cf;
#else
                        if (cf < fcap) fl[cf * st] = j;   /* kept or written over by the next (no branch on r2) */
                        cf += !(r2 >= s->h2);
#endif

                }
            }
        }
    }    {   /* the 3 (2D) or 9 (3D) runs of 3 cells along x: cells next along x are next in the sort,
           so a run is one range of the order (the same particles in the same order as cell by cell) */
        int c0_[3];
        (void)cq__sph_cell_2d_f64(s->glo, s->inv_h, s->nc, xi, c0_);
        for (int cz_ = 0; cz_ <= 0; ++cz_) {
            if (cz_ < 0 || cz_ >= s->nc[2]) continue;
            for (int cy_ = c0_[1] - 1; cy_ <= c0_[1] + 1; ++cy_) {
                int row_, k0_, k1_;
                if (cy_ < 0 || cy_ >= s->nc[1]) continue;
                row_ = s->nc[0] * (cy_ + s->nc[1] * cz_);
                k0_ = s->bstart[row_ + (c0_[0] > 0 ? c0_[0] - 1 : 0)];
                k1_ = s->bstart[row_ + (c0_[0] + 1 < s->nc[0] ? c0_[0] + 1 : c0_[0]) + 1];
                for (int k_ = k0_; k_ < k1_; ++k_) {
                    const int b = s->border[k_];
                        double r2 = 0;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->xb[(long)b * 2 + a]; r2 += d[a] * d[a]; }
#if defined(__CUDA_ARCH__)
                        if (r2 >= s->h2) continue;
                        if (cb < bcap) bl[cb * st] = b;
                        ++cb;
#else
                        if (cb < bcap) bl[cb * st] = b;
                        cb += !(r2 >= s->h2);
#endif

                }
            }
        }
    }    *nf = cf; *nb = cb;
}
/* >>sph_fill: the GPU's lists of particle i in one pass: its k-th entries at i + k nf for k < fcap
   (bcap), the lists' ends (as entries) into fend[i], bend[i]; the numbers it needed into c[0], c[1]
   (more than fcap, bcap: the step runs again with room, world.j2 >>world_fluid_step) */
CQ_HD void cq__sph_fill_2d_f64(const cq__sph_f64 *s, int i, int *c)
{
    int nf, nb;
    cq__sph_near_lists_2d_f64(s, i, s->fnb + i, s->fcap, s->bnb + i, s->bcap, &nf, &nb, s->nf);
    s->fend[i] = i + (nf < s->fcap ? nf : s->fcap) * s->nf; s->bend[i] = i + (nb < s->bcap ? nb : s->bcap) * s->nf;
    c[0] = nf; c[1] = nb;
}

/* W(r) and W'(r) / r of the cubic spline (support h; sigma = 8/(pi h^3) in 3D, 40/(7 pi h^2) in
   2D), both from one square root and no branch: W(r) returned, W'(r) / r into *f (0 for r ~ 0, i
   itself, without dividing 0 by 0: code that traps FP exceptions stays quiet) */
CQ_HD double cq__sph_Wf_2d_f64(const cq__sph_f64 *s, double r2, double *f)
{
    const double r = sqrt(r2), q = r / s->h, p = 1 - q;
    const int inner = q <= (double)0.5, in = q < 1, ok = in && r > s->h * (double)1e-6;
    const double g = (inner ? s->gsigma * q * (3 * q - 2) : -s->gsigma * p * p) / (ok ? r : 1);
    *f = ok ? g : 0;
    return inner ? s->sigma * (6 * q * q * q - 6 * q * q + 1) : (in ? s->sigma * 2 * p * p * p : 0);
}
CQ_HD double cq__sph_W_2d_f64(const cq__sph_f64 *s, double r2) { double f; return cq__sph_Wf_2d_f64(s, r2, &f); }
CQ_HD double cq__sph_gradf_2d_f64(const cq__sph_f64 *s, double r2) { double f; (void)cq__sph_Wf_2d_f64(s, r2, &f); return f; }
/* grad W(d) = W'(|d|) d / |d| */
CQ_HD void cq__sph_gradW_2d_f64(const cq__sph_f64 *s, const double *d, double r2, double *out)
{
    const double f = cq__sph_gradf_2d_f64(s, r2);
    CQ__UNROLL for (int a = 0; a < 2; ++a) out[a] = f * d[a];
}

/* >>sph_density: rho_i, g_i = sum_j m grad W_ij + sum_b rho0 V_b grad W_ib, and the DFSPH
   factor khat_i = 1 / (|g_i|^2 + sum_j |m grad W_ij|^2) ([DiffFR-supp] eq 24; 0 when isolated);
   and each pair's W'(r)/r (times V_b for the boundary's) into fgw and bgw for the passes after it
   (sph_source, sph_pressure: grad W without a square root and a division a pair at each
   iteration).  The
   sums: m and rho0 out of them, a pair's squared norm in one term (a pair adds to each sum once,
   so the loop runs at the rate of its work, not at a chain of dependent additions a coordinate;
   the same in sph_source and sph_pressure) */
CQ_HD void cq__sph_density_2d_f64(const cq__sph_f64 *s, int i)
{
    const double *xi = s->x + (long)i * 2;
    double wf = 0, wb = 0, s2 = 0, gf[2], gb[2], d[2], gw[2];
    CQ__UNROLL for (int a = 0; a < 2; ++a) { gf[a] = 0; gb[a] = 0; }
    for (int k_ = i; k_ < s->fend[i]; k_ += s->nf) {   /* (k_: the entry, for fgw; the GPU's rows) */
        const int j = s->fnb[k_];
                        double r2 = 0, f;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->x[(long)j * 2 + a]; r2 += d[a] * d[a]; }
                        s->fgw[k_] = 0;
                        if (r2 >= s->h2) continue;
                        wf += cq__sph_Wf_2d_f64(s, r2, &f);   /* f = 0 for i itself: it adds +0 below */
                        s->fgw[k_] = f;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { gw[a] = f * d[a]; gf[a] += gw[a]; }
                        s2 += gw[0] * gw[0] + gw[1] * gw[1];

    }    for (int k_ = i; k_ < s->bend[i]; k_ += s->nf) {   /* (k_: the entry, for bgw; the GPU's rows) */
        const int b = s->bnb[k_];
                        double r2 = 0, f;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->xb[(long)b * 2 + a]; r2 += d[a] * d[a]; }
                        s->bgw[k_] = 0;
                        if (r2 >= s->h2) continue;
                        wb += s->Vb[b] * cq__sph_Wf_2d_f64(s, r2, &f);
                        s->bgw[k_] = f = f * s->Vb[b];
                        CQ__UNROLL for (int a = 0; a < 2; ++a) gb[a] += f * d[a];

    }    {
        double den = s->m * s->m * s2;
        CQ__UNROLL for (int a = 0; a < 2; ++a) {
            const double ga = s->m * gf[a] + s->rho0 * gb[a];
            den += ga * ga; s->g[(long)i * 2 + a] = ga;
        }
        s->rho[i] = s->m * wf + s->rho0 * wb;
        s->khat[i] = den > 1e-300 * s->rho0 * s->rho0 ? 1 / den : 0;
    }
}

/* >>sph_source: the divergence solver's (mode 0: D rho/Dt clamped at 0, kappa = D rho/Dt khat / dt)
   or the density solver's (mode 1: rho* - rho0 clamped at 0 with rho* = rho + dt D rho/Dt, kappa
   = (rho* - rho0) khat / dt^2) source ([DiffFR-supp] eq 23); err_i = the clamped density error.
   bgw holds V_b W'(r)/r (sph_density), so the boundary's sum is rho0 times it. */
CQ_HD void cq__sph_source_2d_f64(const cq__sph_f64 *s, int i, int mode)
{
    double xi[2], vi[2];   /* copies: the loop's loads of them, after a branch, would not be hoisted */
    CQ__UNROLL for (int a = 0; a < 2; ++a) { xi[a] = s->x[(long)i * 2 + a]; vi[a] = s->v[(long)i * 2 + a]; }
    double df = 0, db = 0, div, e;   /* (a pair of W'(r)/r = 0 adds +-0 (positions and velocities are finite), which
                                       is never -0: nothing) */
    for (int k_ = i; k_ < s->fend[i]; k_ += s->nf) {   /* (k_: the entry, for fgw; the GPU's rows) */
        const int j = s->fnb[k_];
                        const double f = s->fgw[k_];   /* 0 for i itself: no branch, it adds +0 */
                        const double *xj = s->x + (long)j * 2, *vj = s->v + (long)j * 2;
                        df += f * ((vi[0] - vj[0]) * (xi[0] - xj[0]) + (vi[1] - vj[1]) * (xi[1] - xj[1]));

    }    for (int k_ = i; k_ < s->bend[i]; k_ += s->nf) {   /* (k_: the entry, for bgw; the GPU's rows) */
        const int b = s->bnb[k_];
                        const double f = s->bgw[k_];
                        const double *xj = s->xb + (long)b * 2, *vj = s->vb + (long)b * 2;
                        if (f == 0) continue;
                        db += f * ((vi[0] - vj[0]) * (xi[0] - xj[0]) + (vi[1] - vj[1]) * (xi[1] - xj[1]));

    }    div = s->m * df + s->rho0 * db;
    if (mode == 0) {
        e = div > 0 ? div : 0;
        s->kappa[i] = e * s->khat[i] / s->dt;
        s->err[i] = e * s->dt;
    } else {
        e = s->rho[i] + s->dt * div - s->rho0;
        e = e > 0 ? e : 0;
        s->kappa[i] = e * s->khat[i] / (s->dt * s->dt);
        s->err[i] = e;
    }
}

/* >>sph_pressure: v_i -= dt (sum_j m (kappa_i + kappa_j) grad W_ij + sum_b rho0 V_b kappa_i grad W_ib) */
CQ_HD void cq__sph_pressure_2d_f64(const cq__sph_f64 *s, int i)
{
    double xi[2];   /* a copy (as in sph_source) */
    CQ__UNROLL for (int a = 0; a < 2; ++a) xi[a] = s->x[(long)i * 2 + a];
    const double ki = s->kappa[i];
    double af[2], ab[2];   /* (as in sph_source, a pair with c or f = 0 adds +-0 (positions are finite): nothing) */
    CQ__UNROLL for (int a = 0; a < 2; ++a) { af[a] = 0; ab[a] = 0; }
    for (int k_ = i; k_ < s->fend[i]; k_ += s->nf) {   /* (k_: the entry, for fgw; the GPU's rows) */
        const int j = s->fnb[k_];
                        const double c = s->fgw[k_] * (ki + s->kappa[j]);   /* no branch on it: often 0, at random */
                        CQ__UNROLL for (int a = 0; a < 2; ++a) af[a] += c * (xi[a] - s->x[(long)j * 2 + a]);

    }    if (ki != 0) {
    for (int k_ = i; k_ < s->bend[i]; k_ += s->nf) {   /* (k_: the entry, for bgw; the GPU's rows) */
        const int b = s->bnb[k_];
                        const double f = s->bgw[k_];
                        if (f == 0) continue;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) ab[a] += f * (xi[a] - s->xb[(long)b * 2 + a]);

    }    }
    CQ__UNROLL for (int a = 0; a < 2; ++a) s->v[(long)i * 2 + a] -= s->dt * (s->m * af[a] + s->rho0 * ki * ab[a]);
}

/* >>sph_boundary_force: on a dynamic body's boundary particle b, this iteration's force from the
   fluid, F_b += sum_f m kappa_f rho0 V_b grad W_fb ([DiffFR-supp] eq 19, the reaction of the pressure
   step above), and the localized derivative ([DiffFR-supp] eqs 21, 29 and Alg. 1 line 8)
     d F_b/d v_b += sum_f (I + dt/m dF/dv_f)^-1 dF/dv_b
                  = sum_f -c_f / (1 + rho0 V_b khat_f g_f . grad W_fb) grad W_fb grad W_fb^T,
   c_f = m rho0^2 V_b^2 khat_f / dt, over the fluid particles with kappa_f > 0 (both solvers
   have the same form: d kappa_f / d v_b = -rho0 V_b khat_f grad W_fb / dt). */
CQ_HD void cq__sph_boundary_force_2d_f64(const cq__sph_f64 *s, int b)
{
    const double *xb = s->xb + (long)b * 2;
    const double mb = s->rho0 * s->Vb[b];
    double F[2], G[4], d[2], gw[2];
    if (s->bobj[b] < 0) return;
    CQ__UNROLL for (int a = 0; a < 2; ++a) F[a] = 0;
    CQ__UNROLL for (int a = 0; a < 4; ++a) G[a] = 0;
    {   /* the 3 (2D) or 9 (3D) runs of 3 cells along x: cells next along x are next in the sort,
           so a run is one range of the order (the same particles in the same order as cell by cell) */
        int c0_[3];
        (void)cq__sph_cell_2d_f64(s->glo, s->inv_h, s->nc, xb, c0_);
        for (int cz_ = 0; cz_ <= 0; ++cz_) {
            if (cz_ < 0 || cz_ >= s->nc[2]) continue;
            for (int cy_ = c0_[1] - 1; cy_ <= c0_[1] + 1; ++cy_) {
                int row_, k0_, k1_;
                if (cy_ < 0 || cy_ >= s->nc[1]) continue;
                row_ = s->nc[0] * (cy_ + s->nc[1] * cz_);
                k0_ = s->fstart[row_ + (c0_[0] > 0 ? c0_[0] - 1 : 0)];
                k1_ = s->fstart[row_ + (c0_[0] + 1 < s->nc[0] ? c0_[0] + 1 : c0_[0]) + 1];
                for (int k_ = k0_; k_ < k1_; ++k_) {
                    const int f = k_;
                        double r2 = 0, kf = s->kappa[f], gdot = 0, c;
                        if (kf == 0) continue;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = s->x[(long)f * 2 + a] - xb[a]; r2 += d[a] * d[a]; }
                        if (r2 >= s->h2) continue;
                        cq__sph_gradW_2d_f64(s, d, r2, gw);
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { F[a] += s->m * kf * mb * gw[a]; gdot += s->g[(long)f * 2 + a] * gw[a]; }
                        c = s->m * mb * mb * s->khat[f] / s->dt / (1 + mb * s->khat[f] * gdot);
                        CQ__UNROLL for (int a = 0; a < 2; ++a)
                            CQ__UNROLL for (int e = 0; e < 2; ++e) G[a * 2 + e] -= c * gw[a] * gw[e];

                }
            }
        }
    }    CQ__UNROLL for (int a = 0; a < 2; ++a) s->Fb[(long)b * 2 + a] += F[a];
    CQ__UNROLL for (int a = 0; a < 4; ++a) s->Gb[(long)b * 4 + a] += G[a];
}

/* >>sph_viscosity: vt_i = v_i + dt (gravity + 2 (d+2) nu sum_j m/rho_j (v_ij . x_ij) /
   (|x_ij|^2 + 0.01 h^2) grad W_ij) (Monaghan's artificial viscosity as SPlisHSPlasH's standard
   model), and the same against the walls' and static bodies' particles (rho0 V_b / rho_i in place
   of m / rho_j: they drag the fluid); moving bodies are free-slip */
CQ_HD void cq__sph_viscosity_2d_f64(const cq__sph_f64 *s, int i, const double *grav)
{
    const double *xi = s->x + (long)i * 2, *vi = s->v + (long)i * 2;
    double acc[2], d[2], gw[2];
    CQ__UNROLL for (int a = 0; a < 2; ++a) acc[a] = 0;
    if (s->visc > 0) {
    for (int k_ = i; k_ < s->fend[i]; k_ += s->nf) {   /* (k_: the entry, for fgw; the GPU's rows) */
        const int j = s->fnb[k_];
                        double r2 = 0, vd = 0;
                        if (j == i) continue;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->x[(long)j * 2 + a]; r2 += d[a] * d[a]; }
                        if (r2 >= s->h2) continue;
                        cq__sph_gradW_2d_f64(s, d, r2, gw);
                        CQ__UNROLL for (int a = 0; a < 2; ++a) vd += (vi[a] - s->v[(long)j * 2 + a]) * d[a];
                        vd *= s->m / s->rho[j] / (r2 + (double)0.01 * s->h2);
                        CQ__UNROLL for (int a = 0; a < 2; ++a) acc[a] += vd * gw[a];

    }    for (int k_ = i; k_ < s->bend[i]; k_ += s->nf) {   /* (k_: the entry, for bgw; the GPU's rows) */
        const int b = s->bnb[k_];
                        double r2 = 0, vd = 0;
                        if (s->bobj[b] >= 0) continue;   /* walls and static bodies only */
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xi[a] - s->xb[(long)b * 2 + a]; r2 += d[a] * d[a]; }
                        if (r2 >= s->h2) continue;
                        cq__sph_gradW_2d_f64(s, d, r2, gw);
                        CQ__UNROLL for (int a = 0; a < 2; ++a) vd += vi[a] * d[a];
                        vd *= s->rho0 * s->Vb[b] / s->rho[i] / (r2 + (double)0.01 * s->h2);
                        CQ__UNROLL for (int a = 0; a < 2; ++a) acc[a] += vd * gw[a];

    }    }
    CQ__UNROLL for (int a = 0; a < 2; ++a)
        s->vt[(long)i * 2 + a] = vi[a] + s->dt * (grav[a] + 2 * (2 + 2) * s->visc * acc[a]);
}

/* >>sph_advect: x_i += dt v_i, then kept inside the domain (a safety net: the walls' particles
   normally stop the fluid first; a clamped particle loses its outward velocity).  Returns
   CQ__NONFINITE if x_i or v_i is not finite. */
CQ_HD int cq__sph_advect_2d_f64(const cq__sph_f64 *s, int i)
{
    double *x = s->x + (long)i * 2, *v = s->v + (long)i * 2;
    int bad = 0;
    CQ__UNROLL for (int a = 0; a < 2; ++a) {
        x[a] += s->dt * v[a];
        if (!cq__isfinite_f64(x[a]) || !cq__isfinite_f64(v[a])) bad = 1;
        else if (x[a] < s->lo[a]) { x[a] = s->lo[a]; if (v[a] < 0) v[a] = 0; }
        else if (x[a] > s->hi[a]) { x[a] = s->hi[a]; if (v[a] > 0) v[a] = 0; }
    }
    return bad ? CQ__NONFINITE : CQ__OK;
}

/* >>sph_error_sum: the sum of err over chunk c (particles c CQ__SPH_CHUNK ..), in double and in
   particle order; the host adds the chunks in order, so every backend and thread count sums the
   solvers' error the same way */
CQ_HD double cq__sph_err_chunk_2d_f64(const cq__sph_f64 *s, int c)
{
    const int b = c * CQ__SPH_CHUNK, e = s->nf - b < CQ__SPH_CHUNK ? s->nf : b + CQ__SPH_CHUNK;
    double sum = 0;
    for (int i = b; i < e; ++i) sum += (double)s->err[i];
    return sum;
}

/* >>sph_volume: Akinci's boundary volume V_b = gamma / sum_{b' of the same object} W_bb', gamma
   scaled so that a flat sampled surface (bodies: one layer; the walls: two) weighs in the fluid's
   density as much as the fluid lattice it replaces (without it the fluid next to a flat
   boundary is 7% (one layer, 2D) too dense at rest, and a dam break's toe shoots out) */
CQ_HD void cq__sph_volume_2d_f64(const cq__sph_f64 *s, int b)
{
    const double *xb = s->xb + (long)b * 2;
    double sum = 0, d[2];
    {   /* the 3 (2D) or 9 (3D) runs of 3 cells along x: cells next along x are next in the sort,
           so a run is one range of the order (the same particles in the same order as cell by cell) */
        int c0_[3];
        (void)cq__sph_cell_2d_f64(s->glo, s->inv_h, s->nc, xb, c0_);
        for (int cz_ = 0; cz_ <= 0; ++cz_) {
            if (cz_ < 0 || cz_ >= s->nc[2]) continue;
            for (int cy_ = c0_[1] - 1; cy_ <= c0_[1] + 1; ++cy_) {
                int row_, k0_, k1_;
                if (cy_ < 0 || cy_ >= s->nc[1]) continue;
                row_ = s->nc[0] * (cy_ + s->nc[1] * cz_);
                k0_ = s->bstart[row_ + (c0_[0] > 0 ? c0_[0] - 1 : 0)];
                k1_ = s->bstart[row_ + (c0_[0] + 1 < s->nc[0] ? c0_[0] + 1 : c0_[0]) + 1];
                for (int k_ = k0_; k_ < k1_; ++k_) {
                    const int c = s->border[k_];
                        double r2 = 0;
                        if (s->bobj[c] != s->bobj[b]) continue;
                        CQ__UNROLL for (int a = 0; a < 2; ++a) { d[a] = xb[a] - s->xb[(long)c * 2 + a]; r2 += d[a] * d[a]; }
                        if (r2 >= s->h2) continue;
                        sum += cq__sph_W_2d_f64(s, r2);

                }
            }
        }
    }    s->Vb[b] = sum > 0 ? (s->bobj[b] == CQ__BODY_WALL ? s->gamma_wall : s->gamma_body) / sum : 0;
}

#ifdef __cplusplus
extern "C" {
#endif

/* >>nonfinite's test of particle p (below) */
CQ__DEV void cq__nonfinite_at_2d_f64(int p, cq__pview_f64 a, int *status)
{
    int f = 8;   /* the lowest failing field, 8 = none */
    for (int i = 0; i < 2; ++i) {
        if (!cq__isfinite_f64(a.x[(long)p * 2 + i]) && f > 0) f = 0;
        if (!cq__isfinite_f64(a.v[(long)p * 2 + i]) && f > 1) f = 1;
    }
    for (int i = 0; i < 4; ++i) {
        if (!cq__isfinite_f64(a.C[(long)p * 4 + i]) && f > 2) f = 2;
        if (!cq__isfinite_f64(a.F[(long)p * 4 + i]) && f > 3) f = 3;
    }
    if (!cq__isfinite_f64(a.mass[p]) && f > 4) f = 4;
    if (!cq__isfinite_f64(a.vol[p]) && f > 5) f = 5;
    if (!cq__isfinite_f64(a.E[p]) && f > 6) f = 6;
    if (!cq__isfinite_f64(a.nu[p]) && f > 7) f = 7;
    if (f < 8) atomicMax(status, 2147483647 - (p * 8 + f));
}

/* >>cuda_sort: the counting sort of the particles by cell (kernels.j2 >>cell_sort_).  count:
   each particle's cell into keys[p], and counts per cell (integer atomics: exact); the counts
   become starts by an exclusive scan (scan_top in one block, or scan_up and scan_down over tiles); fill places
   each particle at its cell's cursor (the cursor ends at the cell's end: cell_end); order gives
   each particle the slot of its cell's particles in index order, so the slots do not depend on
   which thread won a cursor, and writes it into rank (P2G does, as it writes the particle's
   record there, where the sort did not).  A scene of up to CQ_CUDA_SORT_COOP particles (host:
   cq__cuda_sort_) counts, scans and fills in one cooperative launch over the GPU, sort_coop
   (>>cuda_sort_coop); without it a small scene sorts in one launch of one block, cell_sort
   (the order too); a larger one in cell_count, the scan's launches and cell_fill, which run the
   same steps. */
CQ__DEV void cq__sort_count_2d_f64(int p, const cq__params_f64 *prm, cq__pview_f64 s, int *keys, int *cell_end, int *box)
{
    int key = cq__cell_2d_f64(p, prm, s, box);
    keys[p] = key;
    atomicAdd(&cell_end[key], 1);
}

/* >>cuda_box: the particles' box (kernels_common.j2 >>cell_box) as the sort counts: each thread
   raises its own 2 D words v over its particles (cq__cell_), the block takes their maxima in sb
   (2 D shared ints, zeroed by the caller before a barrier; the caller synchronises after), and
   the sort then raises the words in global memory once a block (cell_count: integer atomicMax,
   exact, where the block's maxima exceed them; the one-block sort: stores).  The gather and the grid adjoint visit the nodes of the box
   alone: on a large grid most nodes are far from every particle (the 512k cube's box is 43^3 of its
   128^3 nodes), and their blocks cost launches, loads of cell_end and stores of zeros.  The nodes
   outside the box keep whatever they held: nothing reads them (G2P, the P2G adjoint and the
   grid adjoint read the nodes of the particles' stencils, all inside). */
CQ__DEV void cq__box_reduce_2d_f64(int *v, int *sb)
{
#if defined(__CUDACC__)
    CQ__UNROLL for (int o = 16; o > 0; o >>= 1)
        CQ__UNROLL for (int k = 0; k < 2 * 2; ++k) { const int u = __shfl_xor_sync(0xffffffffu, v[k], o); if (u > v[k]) v[k] = u; }
    if ((threadIdx.x & 31) == 0)
#endif
        CQ__UNROLL for (int k = 0; k < 2 * 2; ++k) if (v[k] > 0) atomicMax(&sb[k], v[k]);
}

/* the box's nodes along each axis: lo[a] .. hi[a] (a particle of cell c reaches nodes c .. c + 2) */
CQ__DEV void cq__box_nodes_2d_f64(const int *box, const cq__params_f64 *prm, int *lo, int *hi)
{
    CQ__UNROLL for (int a = 0; a < 2; ++a) {
        lo[a] = prm->res[a] - 3 - box[a * CQ__BOX_STRIDE];
        hi[a] = box[(2 + a) * CQ__BOX_STRIDE] + 2;
    }
}

CQ__DEV void cq__sort_fill_2d_f64(int p, const int *keys, int *cell_end, int *order)
{
    order[atomicAdd(&cell_end[keys[p]], 1)] = p;
}

/* particle p's slot in cell c: the cell's start + its particles of lower index (order[b .. e) is
   the fill's, whichever thread won a cursor; this count does not depend on it).  P2G's (after the
   launches' sort and the cooperative one) and the one-block sort's global-memory way (its
   shared-memory way counts the same over 16-bit indices).  Before: a thread per cell putting its
   particles in index order (an insertion sort past 16): 13.5 us of a 512k cube's substep on an
   H200 (ncu), a thread for each of its 2M cells, most of them empty; 8.2 us as a launch of a
   thread per particle (cell_order, 2026-11-26); now inside P2G, which writes the record there. */
CQ__DEV int cq__sort_slot_2d_f64(int p, int c, const int *cell_end, const int *order)
{
    const int b = c > 0 ? cell_end[c - 1] : 0, e = cell_end[c];
    int r = b;
    for (int j = b; j < e; ++j) r += order[j] < p;
    return r;
}

/* >>tile_scan: data[b .. e) (at most CQ__SCAN_R nt values) exclusive-scanned from `carry` into
   dst[b .. e) (dst == data: in place; else data's values are left 0: the launches' counts,
   >>cuda_sort_range) by a block's nt threads (t: this one; nt 1, or a multiple of 32 up to 1024), and the
   tile's total returned to every thread.  Thread t holds values b + k nt + t (k < CQ__SCAN_R):
   every load and store of a warp is one contiguous run.  Each k is scanned within the warp
   (shuffles), the warps' totals (in index order: k, then warp) are scanned by the block, and
   each value gets its prefix.  write 0: the total alone; 2: each value is two 16-bit counts
   (cells 2i, 2i + 1: lo, hi) scanned as cells, and becomes their two starts (a, a + lo) packed
   the same way (the one-block sort's shared counts: every start <= n < 32768, so the high
   half stays below the sign bit).  Integer sums:
   exact, the serial scan's result.  The caller synchronises before the block reads data again.
   Not inlined on the GPU: inlined in its 9 callers (the cooperative sort calls it 3 times) it was
   18% of each module's PTX, and a call costs a few instructions a tile.  Before (one
   thread a contiguous run, strided loads): at 512k particles the scans of the 2M cells took
   218 us a substep on an H100 (scan_top 159: one block walking 65536 chunk sums).  CQ__SCAN_R 16 took 95-139
   registers (ptxas, sm_90): too many for a block of 1024. */
#define CQ__SCAN_BLOCK 1024
#define CQ__PAIR_SUM(u, write) ((write) == 2 ? ((u) & 0xffff) + ((u) >> 16) : (u))
CQ__DEV CQ__NOINLINE int cq__tile_scan_2d_f64(int *data, int *dst, int b, int e, int carry, int write, int t, int nt)
{
    __shared__ int wsum[CQ__SCAN_R * (CQ__SCAN_BLOCK / 32)], wtop[CQ__SCAN_BLOCK / 32];
    const int lane = t & 31, w = t >> 5, nw = nt >> 5, m = CQ__SCAN_R * nw;
    int v[CQ__SCAN_R], x[CQ__SCAN_R], total = 0, y, xs;
    if (nt == 1) {
        for (int i = b; i < e; ++i) {
            const int u = data[i], a = carry + total;
            if (write) { if (dst != data) data[i] = 0; dst[i] = write == 2 ? a | ((a + (u & 0xffff)) << 16) : a; }
            total += CQ__PAIR_SUM(u, write);
        }
        return total;
    }
    CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) {
        const int i = b + k * nt + t;
        v[k] = i < e ? data[i] : 0;
        x[k] = CQ__PAIR_SUM(v[k], write);
    }
    for (int o = 1; o < 32; o <<= 1) CQ__WARP_SCAN_STEP(x, CQ__SCAN_R, o, lane);
    if (lane == 31) CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) wsum[k * nw + w] = x[k];
    __syncthreads();
    /* the m warp totals, scanned: thread j holds total j (m <= nt) */
    xs = t < m ? wsum[t] : 0;
    y = xs;
    for (int o = 1; o < 32; o <<= 1) { const int z = __shfl_up_sync(0xffffffffu, y, o); if (lane >= o) y += z; }
    if (lane == 31) wtop[w] = y;
    __syncthreads();
    for (int k = 0; k < (m + 31) >> 5; ++k) total += wtop[k];
    if (t < m) for (int k = 0; k < w; ++k) y += wtop[k];
    __syncthreads();   /* everyone has read wsum[t] and wtop */
    if (t < m) wsum[t] = y - xs;   /* the exclusive prefix of warp total t */
    __syncthreads();
    if (write)
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) {
            const int i = b + k * nt + t;
            const int a = carry + wsum[k * nw + w] + x[k] - CQ__PAIR_SUM(v[k], write);
            if (i < e) { if (dst != data) data[i] = 0; dst[i] = write == 2 ? a | ((a + (v[k] & 0xffff)) << 16) : a; }
        }
    __syncthreads();   /* wsum free for the next call */
    return total;
}

/* data[0..n) exclusive-scanned into dst by one block (as cq__tile_scan_), CQ__SCAN_R nt values a pass */
CQ__DEV void cq__block_scan_2d_f64(int n, int *data, int *dst, int write, int t, int nt)
{
    int carry = 0;
    for (int b = 0; b < n; b += CQ__SCAN_R * nt) carry += cq__tile_scan_2d_f64(data, dst, b, b + CQ__SCAN_R * nt < n ? b + CQ__SCAN_R * nt : n, carry, write, t, nt);
}

/* key[k] = keys[p] of a batch's particles p = p0 + k nt + t (-1 past n) */
CQ__DEV void cq__batch_keys_2d_f64(const int *keys, int p0, int n, int t, int nt, int *key)
{
    CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) { const int p = p0 + k * nt + t; key[k] = p < n ? keys[p] : -1; }
}

/* The whole sort in one block of CQ__SCAN_BLOCK threads (cells <= 64 CQ__SCAN_BLOCK): zero the
   counts, count, scan, fill, order, with a barrier between the steps.  It replaces a memset and
   four launches or more.  Where the cells and the particles fit in shared memory (cells / 2 +
   n / 2 <= CQ__SORT_SHARED_WORDS, n < 32768) the counts, starts and cursors live there, two
   cells a word (16 bits each: no value reaches its neighbour's bits, nor the sign bit), beside
   the order as 16-bit indices, and each particle finds its own slot (its cell's start + the
   cell's particles of lower index: a few shared loads, no thread walking cells one after the
   other): only keys, cell_end and rank touch global memory.  Else they live in cell_end and
   order, each atomic and each slot's count a round trip to L2 (cq__sort_slot_, as the
   launches).  The same integers either way.  On an H100 (ncu), the 2D 6.4k block's (16384
   cells) sort took 30.9 us with everything in global memory, 28.0 with the counts in shared
   memory, 26.0 with the order there too but still ordered cell by cell (local-memory arrays, a
   thread's ~5 occupied cells in turn); the slot per particle 17.0 on an H200 (2026-11-26).
   The global-memory way's slots per particle (not cell by cell: one way for both) are
   unmeasured on a GPU. */
/* CQ__ROLLED: a loop nvcc keeps rolled (its unrolled copies, 8 of them in the batches, were most
   of the kernel's PTX) */
#if defined(__CUDACC__)
#  define CQ__ROLLED _Pragma("unroll 1")
#else
#  define CQ__ROLLED
#endif
#define CQ__SORT_SHARED_WORDS 11520   /* 46080 bytes: with the scan's 1152, under the 48 KB of static shared memory */
#define CQ__SORT_AT(c) (sm.w[(c) >> 1] >> (((c) & 1) << 4) & 0xffff)   /* cell c's value in shared memory */
__global__ void CQ__BOUNDS_ONE_BLOCK cq__cell_sort_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, int cells, int * keys, int * cell_end, int * order, int * rank)
{
    __shared__ union { int w[CQ__SORT_SHARED_WORDS]; unsigned short h[2 * CQ__SORT_SHARED_WORDS]; } sm;
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int pk = (cells + 1) / 2 + (n + 1) / 2 <= CQ__SORT_SHARED_WORDS && n < 32768, words = pk ? (cells + 1) >> 1 : cells;
    int *cnt = pk ? sm.w : cell_end;   /* cell c's count, then start, then cursor, then end (pk: CQ__SORT_AT) */
    unsigned short *o16 = sm.h + 2 * words;   /* pk: the order (after the counts) */
    int key[CQ__SCAN_R];   /* a batch's cells, kept for the fill when one batch holds every particle */
    int v[2 * 2] = {0};   /* this thread's box words (>>cuda_box) */
    __shared__ int sb[2 * 2];
    if (serial && threadIdx.x) return;
    for (int c = t; c < words; c += nt) cnt[c] = 0;
    for (int i = t; i < 2 * 2; i += nt) sb[i] = 0;
    __syncthreads();
    for (int p0 = 0; p0 < n; p0 += CQ__SCAN_R * nt) {   /* count: a batch's positions loaded together */
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) { const int p = p0 + k * nt + t; key[k] = p < n ? cq__cell_2d_f64(p, &prm, s, v) : -1; }
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k)
            if (key[k] >= 0) {
                keys[p0 + k * nt + t] = key[k];
                atomicAdd(&cnt[pk ? key[k] >> 1 : key[k]], pk ? 1 << ((key[k] & 1) << 4) : 1);
            }
    }
    cq__box_reduce_2d_f64(v, sb);
    __syncthreads();
    for (int i = t; i < 2 * 2; i += nt) cell_end[cells + i * CQ__BOX_STRIDE] = sb[i];   /* the box, after the cells */
    cq__block_scan_2d_f64(words, cnt, cnt, pk ? 2 : 1, t, nt);
    __syncthreads();
    for (int p0 = 0; p0 < n; p0 += CQ__SCAN_R * nt) {   /* fill: the atomics of a batch issued together */
        int at[CQ__SCAN_R];
        if (n > CQ__SCAN_R * nt) cq__batch_keys_2d_f64(keys, p0, n, t, nt, key);
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) {
            const int sh = pk ? (key[k] & 1) << 4 : 0;
            at[k] = key[k] >= 0 ? atomicAdd(&cnt[pk ? key[k] >> 1 : key[k]], 1 << sh) : 0;
            if (pk) at[k] = at[k] >> sh & 0xffff;
        }
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k)
            if (key[k] >= 0) { if (pk) o16[at[k]] = (unsigned short)(p0 + k * nt + t); else order[at[k]] = p0 + k * nt + t; }
    }
    __syncthreads();
    if (pk) for (int c = t; c < cells; c += nt) cell_end[c] = CQ__SORT_AT(c);
    for (int p0 = 0; p0 < n; p0 += CQ__SCAN_R * nt) {   /* order: each particle's slot (cq__sort_slot_) */
        if (n > CQ__SCAN_R * nt) cq__batch_keys_2d_f64(keys, p0, n, t, nt, key);
        CQ__UNROLL for (int k = 0; k < CQ__SCAN_R; ++k) {
            const int p = p0 + k * nt + t, c = key[k];
            int r;
            if (c < 0) continue;
            if (pk) {
                const int b = c > 0 ? CQ__SORT_AT(c - 1) : 0, e = CQ__SORT_AT(c);
                r = b;
                CQ__ROLLED for (int j = b; j < e; ++j) r += o16[j] < p;
            } else r = cq__sort_slot_2d_f64(p, c, cell_end, order);
            rank[p] = r;
        }
    }
}

/* count: a thread per particle; the box's words (zeroed with the counts) raised once a block */
__global__ void cq__cell_count_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, int * keys, int * cell_end, int * box)
{
    __shared__ int sb[2 * 2];
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    int v[2 * 2] = {0};
    if (serial && threadIdx.x) return;
    for (int i = t; i < 2 * 2; i += nt) sb[i] = 0;
    for (int i = t; i < (int)blockDim.x; i += nt) {
        const int p = (int)blockIdx.x * (int)blockDim.x + i;
        if (p < n) cq__sort_count_2d_f64(p, &prm, s, keys, cell_end, v);
    }
    __syncthreads();
    cq__box_reduce_2d_f64(v, sb);
    __syncthreads();
    /* an atomic only where the block raises the word as read (the words only grow: a stale read
       costs an atomic, never a missed one), so that not every block's atomics queue on the same
       6 addresses (the 4.1M cube: 32768 blocks; as particles come in index order, most raise
       nothing) */
    for (int i = t; i < 2 * 2; i += nt) if (sb[i] > box[i * CQ__BOX_STRIDE]) atomicMax(&box[i * CQ__BOX_STRIDE], sb[i]);
}

/* >>cuda_sort_range: the cells the launches' sort scans (host: cq__cuda_sort_): the lines along
   axis 0 that the gather reads around the particles' box (>>cuda_box; its tiles read lines
   base - 2 .. base + 4: source rows r1 - 2 .. r1 + NJ - 1 of its
   rows r1 .. r1 + NJ - 1, NJ <= 3), every scene's, and the cell before
   them (a reader takes a cell's start from its predecessor's end): [*b0, *b0 + *len) of the
   scenes' `cells`; box_lo0, box_hi0: the box's words 0 and 2 (axis 0's).  The counts (cell_count into the host's counts array) are scanned from
   there into cell_end and left 0, so no memset of every cell comes before the count (the
   512k cube's 2M cells, its box's lines ~35% of them; 4.1M: 16.8M cells).  cell_end's other
   entries keep what they held: nothing reads them (the mock driver fills them with values that
   make a read of one fault, each sort: CQ__EMU_POISON_RANGE). */
CQ__DEV void cq__sort_range_2d_f64(int cells, int box_lo0, int box_hi0, int res0, int pnodes, int *b0, int *len)
{
    const int per = pnodes / res0, scenes = cells / pnodes;   /* cells a line; scenes */
    int lo = res0 - 3 - box_lo0 - 2, hi = box_hi0 + 4, b, e;
    if (lo < 0) lo = 0;
    if (hi > res0 - 1) hi = res0 - 1;
    b = lo * per - 1;
    if (b < 0) b = 0;
    e = ((scenes - 1) * res0 + hi + 1) * per;
    *b0 = b;
    *len = e > b ? e - b : 0;
}

/* the scan over the GPU (host: cq__cuda_scan): tile b = data[b T .. (b + 1) T), T = CQ__SCAN_R
   blockDim values; up: sums[b] = the tile's total; top: data[0..n) scanned by one block; down:
   each tile scanned from its offset, sums[0] + ... + sums[b - 1]: with `scanned`, sums[b] (the
   host scanned the sums), else its block adds them up itself (integers: exact), which saves a
   launch where the tiles are few and costs every block b / 1024 passes where they are many.
   box NULL: data[0..n) in place; else the sort's counts data scanned into dst over
   >>cuda_sort_range of n cells alone (the tiles from its first cell: those past its end add
   nothing, their sums 0) */
CQ__DEV void cq__scan_span_2d_f64(int *n, int **data, int **dst, const int *box, int res0, int pnodes)
{
    int b0 = 0;
    if (!box) { *dst = *data; return; }
    cq__sort_range_2d_f64(*n, box[0], box[2 * CQ__BOX_STRIDE], res0, pnodes, &b0, n);
    *data += b0; *dst += b0;
}
__global__ void cq__scan_up_2d_f64_kernel(int n, int * data, int * sums, const int * box, int res0, int pnodes)
{
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int T = CQ__SCAN_R * (int)blockDim.x, b = (int)blockIdx.x * T;
    int total = 0, *dst = 0;
    if (serial && threadIdx.x) return;
    cq__scan_span_2d_f64(&n, &data, &dst, box, res0, pnodes);
    if (b < n) total = cq__tile_scan_2d_f64(data, data, b, n - b < T ? n : b + T, 0, 0, t, nt);
    if (t == 0) sums[blockIdx.x] = total;
}

__global__ void CQ__BOUNDS_ONE_BLOCK cq__scan_top_2d_f64_kernel(int n, int * data, int * dst, const int * box, int res0, int pnodes)
{
    const int serial = CQ__BLOCK_SERIAL, cells = n, t = serial ? 0 : (int)threadIdx.x;
    int *cell_end = dst, *cnt = data;
    if (serial && threadIdx.x) return;
    cq__scan_span_2d_f64(&n, &data, &dst, box, res0, pnodes);
    cq__block_scan_2d_f64(n, data, dst, 1, t, serial ? 1 : (int)blockDim.x);
    if (box && t == 0) { CQ__EMU_POISON_RANGE(cell_end, cells, (int)(dst - cell_end), n); CQ__EMU_COUNTS_ZERO(cnt, cells); }
}

__global__ void cq__scan_down_2d_f64_kernel(int n, int * data, int * dst, int * sums, int scanned, const int * box, int res0, int pnodes)
{
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int T = CQ__SCAN_R * (int)blockDim.x, b = (int)blockIdx.x * T, tiles = (int)blockIdx.x, cells = n;
    int offset = 0, *cell_end = dst, *cnt = data;
    if (serial && threadIdx.x) return;
    cq__scan_span_2d_f64(&n, &data, &dst, box, res0, pnodes);
    if (box && blockIdx.x == 0 && t == 0) CQ__EMU_POISON_RANGE(cell_end, cells, (int)(dst - cell_end), n);
    if (b < n) {   /* the same for the whole block (a block past the range adds nothing) */
        if (scanned) offset = sums[tiles];   /* the sums already scanned (exclusive): this tile's offset */
        else for (int i = 0; i < tiles; i += CQ__SCAN_R * nt)   /* the earlier tiles' totals (read only: write 0) */
            offset += cq__tile_scan_2d_f64(sums, sums, i, tiles - i < CQ__SCAN_R * nt ? tiles : i + CQ__SCAN_R * nt, 0, 0, t, nt);
        cq__tile_scan_2d_f64(data, dst, b, n - b < T ? n : b + T, offset, 1, t, nt);
    }
    if (box && blockIdx.x == gridDim.x - 1 && t == 0) CQ__EMU_COUNTS_ZERO(cnt, cells);
}

__global__ void cq__cell_fill_2d_f64_kernel(int n, const int * keys, int * cell_end, int * order)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) cq__sort_fill_2d_f64(p, keys, cell_end, order);
}

/* >>cuda_sort_coop: the launches' sort (cell_count, the scan over >>cuda_sort_range as scan_up and
   scan_down, cell_fill: the same steps, the same integers; P2G then counts each particle's slot) in one cooperative launch of
   G blocks of CQ__COOP_THREADS (host: cq__cuda_sort_, cuLaunchCooperativeKernel, which starts
   every block at once or refuses), the boundaries between the launches become grid barriers
   (cq__grid_sync_).  It replaces the one-block sort (cell_sort: 17 us of the 2D 6.4k block's ~35
   us of kernels on an H200, one SM issuing every instruction) and, up to CQ_CUDA_SORT_COOP
   particles, the memset and the five launches and more (their gaps: a small scene's cost).
   The box: each block leaves its maxima in its own words (bar + CQ__COOP_BAR: nothing to zero
   first) and after the first barrier every block takes the maxima of all of them itself (G x 2 D
   loads), so the range needs no barrier more; block 0 writes the box after cell_end's cells.
   Tile k of the range (T = CQ__SCAN_R blockDim values) is block k mod G's, up and down; the tile
   sums in `sums`.  Nothing in shared memory outlives a barrier (the mock runs the blocks in
   turn between barriers, its __shared__ arrays one for all).  The counter *bar only grows: the
   host passes its value at the launch (base) and adds 3 G after it (the comparisons wrap). */
CQ__DEV void cq__grid_sync_2d_f64(unsigned *bar, unsigned target)
{
#if defined(__CUDACC__)
    __syncthreads();   /* the block's writes before thread 0's fence (as cooperative groups' grid sync) */
    if (threadIdx.x == 0) {
        volatile unsigned *vb = bar;
        __threadfence();
        atomicAdd(bar, 1u);
        while ((int)(*vb - target) < 0) __nanosleep(32);
        __threadfence();
    }
    __syncthreads();
#else
    (void)bar; (void)target;
    cq__emu_grid_sync();
#endif
}

__global__ void CQ__BOUNDS_WIDE(CQ__COOP_THREADS, 1) cq__sort_coop_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, int cells, int * keys, int * cell_end, int * order, int * cnt, int * sums, unsigned * bar, unsigned base)
{
    __shared__ int sb[2 * 2];
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int B = (int)blockDim.x, G = (int)gridDim.x, g = (int)blockIdx.x, T = CQ__SCAN_R * B;
    int *slots = (int *)(bar + CQ__COOP_BAR);   /* block b's box words: slots[2 D b ..] */
    int v[2 * 2] = {0}, b0 = 0, len = 0, tiles;
    if (serial && threadIdx.x) return;
    for (int i = t; i < 2 * 2; i += nt) sb[i] = 0;
    __syncthreads();
    for (int p0 = g * B; p0 < n; p0 += G * B)   /* count (cell_count) */
        for (int i = t; i < B; i += nt)
            if (p0 + i < n) cq__sort_count_2d_f64(p0 + i, &prm, s, keys, cnt, v);
    cq__box_reduce_2d_f64(v, sb);
    __syncthreads();
    for (int i = t; i < 2 * 2; i += nt) slots[2 * 2 * g + i] = sb[i];
    cq__grid_sync_2d_f64(bar, base + (unsigned)G);
    CQ__UNROLL for (int k = 0; k < 2 * 2; ++k) v[k] = 0;   /* the box: every block's words */
    for (int b = t; b < G; b += nt)
        CQ__UNROLL for (int k = 0; k < 2 * 2; ++k) { const int u = slots[2 * 2 * b + k]; if (u > v[k]) v[k] = u; }
    for (int i = t; i < 2 * 2; i += nt) sb[i] = 0;
    __syncthreads();
    cq__box_reduce_2d_f64(v, sb);
    __syncthreads();
    if (g == 0) for (int i = t; i < 2 * 2; i += nt) cell_end[cells + i * CQ__BOX_STRIDE] = sb[i];
    cq__sort_range_2d_f64(cells, sb[0], sb[2], prm.res[0], prm.nodes, &b0, &len);
    tiles = (len + T - 1) / T;
    for (int k = g; k < tiles; k += G) {   /* scan up (scan_up): tile k's total */
        const int b = b0 + k * T, e = len - k * T < T ? b0 + len : b + T;
        const int total = cq__tile_scan_2d_f64(cnt, cnt, b, e, 0, 0, t, nt);
        if (t == 0) sums[k] = total;
    }
    cq__grid_sync_2d_f64(bar, base + 2u * (unsigned)G);
    for (int k = g, offset = 0, done = 0; k < tiles; done = k, k += G) {   /* scan down (scan_down): tile k from the
                                                                              earlier tiles' total, sums[0 .. done) kept */
        const int b = b0 + k * T, e = len - k * T < T ? b0 + len : b + T;
        for (int i = done; i < k; i += T) offset += cq__tile_scan_2d_f64(sums, sums, i, k - i < T ? k : i + T, 0, 0, t, nt);
        cq__tile_scan_2d_f64(cnt, cell_end, b, e, offset, 1, t, nt);
    }
    cq__grid_sync_2d_f64(bar, base + 3u * (unsigned)G);
    if (g == 0 && t == 0) { CQ__EMU_POISON_RANGE(cell_end, cells, b0, len); CQ__EMU_COUNTS_ZERO(cnt, cells); }   /* (the mock: after every scan;
                                                                                                               nothing here reads the cells it poisons) */
    for (int p0 = g * B; p0 < n; p0 += G * B)   /* fill (cell_fill) */
        for (int i = t; i < B; i += nt)
            if (p0 + i < n) cq__sort_fill_2d_f64(p0 + i, keys, cell_end, order);
}

/* >>cuda_gather: P2G's node half (kernels.j2 >>grid_gather_) in two shapes.  gather: a tile per
   row of nodes (along the last axis) by 32 nodes; gather_rows: a tile per 3 rows (neighbours
   along axis 0) by 32 nodes (host: cq__cuda_gather_launch and CQ_CUDA_GATHER_ROWS pick
   and size them).  Such tiles of the particles' box alone (>>cuda_box), every scene's, each
   block taking one after the other (as many blocks as the GPU holds at once); the nodes
   outside keep what they held.  The block's NJ rows receive from
   NJ + 2 rows of cells along axis 0, cells zb - 2 ..
   zb + 31 of each row.  Thread (phase, source row, cell) sums its cell's particles for the 3
   nodes of each of the block's rows it reaches (kernels.j2 cq__gather_cell_, 1 row; the rows
   shape: cq__gather_cell3_, a record read once for up to 9 nodes), and after a barrier one
   thread per node value adds the cell sums in the gather's order (planes o[0] = 2..0, rows
   o[0] = 2..0, cells o[1] = 2..0).  The row shape runs its phases together, the 3-row
   shape one after the other; a phase none of whose rows holds a particle near the block adds
   nothing (its sums are +0: the same bits).  Bitwise the CPU's sums up to fused
   multiply-adds, run to run (no atomics).  Then each node is written and, forward, updated (eq
   7 and the walls).  Forward (g.m set): mass and momentum, the momentum also into gp when gp
   is set (the adjoint keeps it); status, when set, is G2P's status word, which block 0 resets
   for the G2P that follows (no separate memset).  The G2P adjoint (g.m NULL, update 0): dL/dv_i
   into g.v.  On an H100 (f32, ncu): the row shape 201 us at 512k particles, bound by loads
   from L2 (each record read for the 9 rows it reaches); the 3-row shape fewer loads, more
   work a thread and fewer blocks: faster on large scenes (see CQ_CUDA_GATHER_ROWS), slower on
   small ones.  Before both: one thread per node walking its 9 cells alone: 1.76 ms. */
__global__ void cq__gather_fwd_2d_f64_kernel(int nodes, cq__params_f64 prm, const int * cell_end, const double * pk, cq__gview_f64 g, double * gp, int update, int * status)
{
    enum { NZ = CQ__GATHER_NZ, NC = NZ + 2, NJ = 1, NS = NJ + 2, NV = 3, NN = NJ * NZ * NV, NPH = 1, PAR = 1 };
    /* nodes along the row, cells a row, the block's rows, source rows a phase, values a node,
       values of the block's nodes, phases, phases at once */
    __shared__ int srow[NPH][NS], slive[NPH][NS];   /* every phase's source rows: where, and whether any particle is near */
    __shared__ double part[PAR][NJ][3][NC][3][NV], res[NJ][NZ][NV];   /* part[phase][j][o[0]][cell][o[1]][value] */
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int L = prm.res[1], R1 = prm.res[0];
    /* the tiles of the particles' box (>>cuda_box: after cell_end's nodes entries), every scene's,
       NJ rows by NZ nodes from the box's first node: its first node along the row and the tiles'
       number along it, its first row and theirs, the tiles (a node's
       sums do not depend on its tile).
       In shared memory, read again each tile (as registers, the 3-row shape took 114 in f32
       3D, 90 without the loop over tiles) */
    __shared__ int tl[7];
    double *sum = &res[0][0][0];   /* the nodes' sums, value it = (j NZ + z) NV + c */
    if (serial && threadIdx.x) return;
    if (status && blockIdx.x == 0 && t == 0) *status = 0x7fffffff;   /* INT_MAX: no particle failed */
    if (t == 0) {
        int blo[2], bhi[2];
        cq__box_nodes_2d_f64(cell_end + nodes, &prm, blo, bhi);
        tl[0] = blo[1]; tl[1] = bhi[1] >= blo[1] ? (bhi[1] - blo[1]) / NZ + 1 : 0;
        tl[2] = blo[0]; tl[3] = bhi[0] >= blo[0] ? (bhi[0] - blo[0]) / NJ + 1 : 0;
        tl[4] = 0; tl[5] = 1;
        tl[6] = nodes / prm.nodes * tl[5] * tl[3] * tl[1];
    }
    __syncthreads();
    for (int tile = (int)blockIdx.x; tile < tl[6]; tile += (int)gridDim.x) {   /* the same for every thread: barriers are the block's */
        const int zb = tl[0] + tile % tl[1] * NZ, r1 = tl[2] + tile / tl[1] % tl[3] * NJ;
        const int line = tile / tl[1] / tl[3];   /* the scene */
        /* the block's rows are line R1 + r1 + j; its cells along the row: */
        const int lo = zb >= 2 ? zb - 2 : 0, hi = zb + NZ - 1 < L ? zb + NZ - 1 : L - 1;
        int any = 0;
        for (int it = t; it < NN; it += nt) sum[it] = 0;   /* read after the first phases' barriers */
        /* every phase's source rows first, in one round of loads (most blocks of a large grid have
           no particle near: they pass one barrier, not two a phase) */
        for (int i = t; i < NPH * NS; i += nt) {   /* source row q of phase ph: r1 - 2 + q along axis 0 */
            const int ph = i / NS, q = i % NS, c1 = r1 - 2 + q;
            int ok = c1 >= 0 && c1 < R1;
            srow[ph][q] = 0;
            if (ok) {
                const int cr = ((line) * R1 + c1) * L;
                srow[ph][q] = cr;
                ok = cell_end[cr + hi] > (cr + lo > 0 ? cell_end[cr + lo - 1] : 0);
            }
            slive[ph][q] = ok;
        }
        __syncthreads();
        for (int ph0 = 0; ph0 < NPH; ph0 += PAR) {
            int live = 0;
            for (int i = 0; i < PAR * NS; ++i) live |= slive[ph0 + i / NS][i % NS];
            if (live) {   /* the same for every thread: its barriers are the block's */
                for (int it = t; it < PAR * NS * NC; it += nt) {
                    const int p = it / (NS * NC), q = it / NC % NS, cc = it % NC, cz = zb - 2 + cc;
                    int oj[NJ], b = 0, e = 0;
                    int o[1];
                    CQ__UNROLL for (int j = 0; j < NJ; ++j) oj[j] = r1 + j < R1 ? j - q + 2 : -1;   /* o[0] from source row q to row j */
                    if (slive[ph0 + p][q] && cz >= 0 && cz < L) {
                        const int cell = srow[ph0 + p][q] + cz;
                        b = cell > 0 ? cell_end[cell - 1] : 0;
                        e = cell_end[cell];
                    }
                    double cm[3], cv[3 * 2];
                    o[0] = oj[0];
                    cq__gather_cell_2d_f64(pk, b, e, o, &prm, g.m ? cm : 0, cv);
                    CQ__UNROLL for (int j = 0; j < NJ; ++j) {
                        if (oj[j] < 0 || oj[j] > 2) continue;
                        CQ__UNROLL for (int k = 0; k < 3; ++k) {
                            part[p][j][oj[j]][cc][k][0] = g.m ? cm[3 * j + k] : 0;
                            CQ__UNROLL for (int a = 0; a < 2; ++a) part[p][j][oj[j]][cc][k][1 + a] = cv[3 * 2 * j + k * 2 + a];
                        }
                    }
                }
                __syncthreads();
                for (int it = t; it < NN; it += nt) {   /* node zb + z of row j: planes, rows o = 2..0, cells z - 2, z - 1, z */
                    const int j = it / (NZ * NV), z = it / NV % NZ, c = it % NV;
                    double acc = sum[it];
                    if (r1 + j >= R1) continue;
                    for (int p = 0; p < PAR; ++p)
                        for (int o1 = 2; o1 >= 0; --o1)
                            for (int o2 = 2; o2 >= 0; --o2) acc += part[p][j][o1][z - o2 + 2][o2][c];
                    sum[it] = acc;
                }
                any = 1;
                __syncthreads();   /* part free for the next phases, sum complete for the writes */
            }
        }
        for (int it = t; it < NJ * NZ; it += nt) {
            const int j = it / NZ, z = it % NZ;
            if (zb + z >= L || r1 + j >= R1) continue;
            const long node = ((long)line * R1 + r1 + j) * L + zb + z;
            if (g.m) g.m[node] = any ? res[j][z][0] : 0;
            for (int a = 0; a < 2; ++a) g.v[node * 2 + a] = any ? res[j][z][1 + a] : 0;
            if (gp) for (int a = 0; a < 2; ++a) gp[node * 2 + a] = g.v[node * 2 + a];
            if (update && any) cq__grid_fwd_2d_f64((int)node, &prm, g);   /* (no mass: v = 0, as written) */
        }
        __syncthreads();   /* res, srow and slive free for the next tile */
    }
}

__global__ void cq__gather_rows_2d_f64_kernel(int nodes, cq__params_f64 prm, const int * cell_end, const double * pk, cq__gview_f64 g, double * gp, int update, int * status)
{
    enum { NZ = CQ__GATHER_NZ, NC = NZ + 2, NJ = 3, NS = NJ + 2, NV = 3, NN = NJ * NZ * NV, NPH = 1, PAR = 1 };
    /* nodes along the row, cells a row, the block's rows, source rows a phase, values a node,
       values of the block's nodes, phases, phases at once */
    __shared__ int srow[NPH][NS], slive[NPH][NS];   /* every phase's source rows: where, and whether any particle is near */
    __shared__ double part[PAR][NJ][3][NC][3][NV], res[NJ][NZ][NV];   /* part[phase][j][o[0]][cell][o[1]][value] */
    const int serial = CQ__BLOCK_SERIAL, t = serial ? 0 : (int)threadIdx.x, nt = serial ? 1 : (int)blockDim.x;
    const int L = prm.res[1], R1 = prm.res[0];
    /* the tiles of the particles' box (>>cuda_box: after cell_end's nodes entries), every scene's,
       NJ rows by NZ nodes from the box's first node: its first node along the row and the tiles'
       number along it, its first row and theirs, the tiles (a node's
       sums do not depend on its tile).
       In shared memory, read again each tile (as registers, the 3-row shape took 114 in f32
       3D, 90 without the loop over tiles) */
    __shared__ int tl[7];
    double *sum = &res[0][0][0];   /* the nodes' sums, value it = (j NZ + z) NV + c */
    if (serial && threadIdx.x) return;
    if (status && blockIdx.x == 0 && t == 0) *status = 0x7fffffff;   /* INT_MAX: no particle failed */
    if (t == 0) {
        int blo[2], bhi[2];
        cq__box_nodes_2d_f64(cell_end + nodes, &prm, blo, bhi);
        tl[0] = blo[1]; tl[1] = bhi[1] >= blo[1] ? (bhi[1] - blo[1]) / NZ + 1 : 0;
        tl[2] = blo[0]; tl[3] = bhi[0] >= blo[0] ? (bhi[0] - blo[0]) / NJ + 1 : 0;
        tl[4] = 0; tl[5] = 1;
        tl[6] = nodes / prm.nodes * tl[5] * tl[3] * tl[1];
    }
    __syncthreads();
    for (int tile = (int)blockIdx.x; tile < tl[6]; tile += (int)gridDim.x) {   /* the same for every thread: barriers are the block's */
        const int zb = tl[0] + tile % tl[1] * NZ, r1 = tl[2] + tile / tl[1] % tl[3] * NJ;
        const int line = tile / tl[1] / tl[3];   /* the scene */
        /* the block's rows are line R1 + r1 + j; its cells along the row: */
        const int lo = zb >= 2 ? zb - 2 : 0, hi = zb + NZ - 1 < L ? zb + NZ - 1 : L - 1;
        int any = 0;
        for (int it = t; it < NN; it += nt) sum[it] = 0;   /* read after the first phases' barriers */
        /* every phase's source rows first, in one round of loads (most blocks of a large grid have
           no particle near: they pass one barrier, not two a phase) */
        for (int i = t; i < NPH * NS; i += nt) {   /* source row q of phase ph: r1 - 2 + q along axis 0 */
            const int ph = i / NS, q = i % NS, c1 = r1 - 2 + q;
            int ok = c1 >= 0 && c1 < R1;
            srow[ph][q] = 0;
            if (ok) {
                const int cr = ((line) * R1 + c1) * L;
                srow[ph][q] = cr;
                ok = cell_end[cr + hi] > (cr + lo > 0 ? cell_end[cr + lo - 1] : 0);
            }
            slive[ph][q] = ok;
        }
        __syncthreads();
        for (int ph0 = 0; ph0 < NPH; ph0 += PAR) {
            int live = 0;
            for (int i = 0; i < PAR * NS; ++i) live |= slive[ph0 + i / NS][i % NS];
            if (live) {   /* the same for every thread: its barriers are the block's */
                for (int it = t; it < PAR * NS * NC; it += nt) {
                    const int p = it / (NS * NC), q = it / NC % NS, cc = it % NC, cz = zb - 2 + cc;
                    int oj[NJ], b = 0, e = 0;
                    int o[1];
                    CQ__UNROLL for (int j = 0; j < NJ; ++j) oj[j] = r1 + j < R1 ? j - q + 2 : -1;   /* o[0] from source row q to row j */
                    if (slive[ph0 + p][q] && cz >= 0 && cz < L) {
                        const int cell = srow[ph0 + p][q] + cz;
                        b = cell > 0 ? cell_end[cell - 1] : 0;
                        e = cell_end[cell];
                    }
                    double cm[3 * NJ], cv[3 * NJ * 2];
                    cq__gather_cell3_2d_f64(pk, b, e, o, oj, &prm, g.m ? cm : 0, cv);
                    CQ__UNROLL for (int j = 0; j < NJ; ++j) {
                        if (oj[j] < 0 || oj[j] > 2) continue;
                        CQ__UNROLL for (int k = 0; k < 3; ++k) {
                            part[p][j][oj[j]][cc][k][0] = g.m ? cm[3 * j + k] : 0;
                            CQ__UNROLL for (int a = 0; a < 2; ++a) part[p][j][oj[j]][cc][k][1 + a] = cv[3 * 2 * j + k * 2 + a];
                        }
                    }
                }
                __syncthreads();
                for (int it = t; it < NN; it += nt) {   /* node zb + z of row j: planes, rows o = 2..0, cells z - 2, z - 1, z */
                    const int j = it / (NZ * NV), z = it / NV % NZ, c = it % NV;
                    double acc = sum[it];
                    if (r1 + j >= R1) continue;
                    for (int p = 0; p < PAR; ++p)
                        for (int o1 = 2; o1 >= 0; --o1)
                            for (int o2 = 2; o2 >= 0; --o2) acc += part[p][j][o1][z - o2 + 2][o2][c];
                    sum[it] = acc;
                }
                any = 1;
                __syncthreads();   /* part free for the next phases, sum complete for the writes */
            }
        }
        for (int it = t; it < NJ * NZ; it += nt) {
            const int j = it / NZ, z = it % NZ;
            if (zb + z >= L || r1 + j >= R1) continue;
            const long node = ((long)line * R1 + r1 + j) * L + zb + z;
            if (g.m) g.m[node] = any ? res[j][z][0] : 0;
            for (int a = 0; a < 2; ++a) g.v[node * 2 + a] = any ? res[j][z][1 + a] : 0;
            if (gp) for (int a = 0; a < 2; ++a) gp[node * 2 + a] = g.v[node * 2 + a];
            if (update && any) cq__grid_fwd_2d_f64((int)node, &prm, g);   /* (no mass: v = 0, as written) */
        }
        __syncthreads();   /* res, srow and slive free for the next tile */
    }
}

/* G2P; the lowest failing particle p with status st lands in *bad as 4 p + st (host decodes).
   f32 3D: also its _unrolled form (kernels.j2 >>g2p_, CQ_CUDA_G2P_UNROLLED) */
__global__ void cq__g2p_fwd_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 in, cq__pview_f64 out, cq__gview_f64 g, int * bad)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        int st = cq__g2p_fwd_2d_f64(p, &prm, in, out, g);
        if (st != CQ__OK) atomicMin(bad, 4 * p + st);
    }
}

/* the P2G adjoint in its two halves (adjoint.j2 >>p2g_adj_), one thread per particle p (its
   packed record in sorted slot rank[p]): the transfer half (one for all materials) takes G from P2G's packed
   particle in pk (the backward's P2G ran in this substep; the G2P adjoint packs into pkb) and
   leaves G_bar in its place; the stress half (per material, below) reads it back */
__global__ void cq__p2g_adj_transfer_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, const double * gp_adj, cq__pview_f64 ai, cq__pview_f64 pg, const int * rank, double * pk)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        double *G = pk + (long)rank[p] * CQ__PK(2) + 1 + 2 * 2;
        cq__p2g_adj_transfer_2d_f64(p, &prm, s, G, gp_adj, ai, pg, G);   /* gp_adj: dL/dp and dL/dm (>>grid_layout) */
    }
}

/* P2G's particle half: particle p (coalesced reads) into its sorted slot, rank[p] as the one-block
   sort left it, or (slot: the other sorts, which stop after the fill) the slot counted here
   (cq__sort_slot_, the launches' cell_order before: its loads' latency now overlaps P2G's own
   work, and a launch, or a grid barrier of the cooperative sort, is gone) and left in rank[p] for
   the adjoints */
__global__ void cq__p2g_fwd_2d_fixed_corotated_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, int * rank, double * pk, const int * keys, const int * cell_end, const int * order, int slot)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        const int r = slot ? cq__sort_slot_2d_f64(p, keys[p], cell_end, order) : rank[p];
        if (slot) rank[p] = r;
        cq__p2g_fwd_2d_fixed_corotated_f64(p, &prm, s, pk + (long)r * CQ__PK(2));
    }
}

/* the P2G adjoint's stress half; status set: then the step's check of the adjoint (>>nonfinite) */
__global__ void cq__p2g_adj_stress_2d_fixed_corotated_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, cq__pview_f64 ai, cq__pview_f64 pg, const int * rank, const double * pk, double * dact, int * status)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        cq__p2g_adj_stress_2d_fixed_corotated_f64(p, &prm, s, pk + (long)rank[p] * CQ__PK(2) + 1 + 2 * 2, ai, pg,
                                                     dact + (long)p * 4);
        if (status) {
            cq__pview_f64 a = ai;
            a.mass = pg.mass; a.vol = pg.vol; a.E = pg.E; a.nu = pg.nu;
            cq__nonfinite_at_2d_f64(p, a, status);
        }
    }
}

/* P2G's particle half: particle p (coalesced reads) into its sorted slot, rank[p] as the one-block
   sort left it, or (slot: the other sorts, which stop after the fill) the slot counted here
   (cq__sort_slot_, the launches' cell_order before: its loads' latency now overlaps P2G's own
   work, and a launch, or a grid barrier of the cooperative sort, is gone) and left in rank[p] for
   the adjoints */
__global__ void cq__p2g_fwd_2d_neohookean_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, int * rank, double * pk, const int * keys, const int * cell_end, const int * order, int slot)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        const int r = slot ? cq__sort_slot_2d_f64(p, keys[p], cell_end, order) : rank[p];
        if (slot) rank[p] = r;
        cq__p2g_fwd_2d_neohookean_f64(p, &prm, s, pk + (long)r * CQ__PK(2));
    }
}

/* the P2G adjoint's stress half; status set: then the step's check of the adjoint (>>nonfinite) */
__global__ void cq__p2g_adj_stress_2d_neohookean_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, cq__pview_f64 ai, cq__pview_f64 pg, const int * rank, const double * pk, double * dact, int * status)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) {
        cq__p2g_adj_stress_2d_neohookean_f64(p, &prm, s, pk + (long)rank[p] * CQ__PK(2) + 1 + 2 * 2, ai, pg,
                                                     dact + (long)p * 4);
        if (status) {
            cq__pview_f64 a = ai;
            a.mass = pg.mass; a.vol = pg.vol; a.E = pg.E; a.nu = pg.nu;
            cq__nonfinite_at_2d_f64(p, a, status);
        }
    }
}

__global__ void cq__grid_adj_2d_f64_kernel(int nodes, cq__params_f64 prm, const int * box, const double * gm, const double * gp, const double * gv_adj, double * gp_adj)
{
    /* the nodes of the particles' box alone (>>cuda_box), every scene's, over the threads launched */
    int lo[2], hi[2], ext[2], per = 1;
    cq__box_nodes_2d_f64(box, &prm, lo, hi);
    CQ__UNROLL for (int a = 0; a < 2; ++a) { ext[a] = hi[a] >= lo[a] ? hi[a] - lo[a] + 1 : 0; per *= ext[a]; }
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < nodes / prm.nodes * per; i += (int)(gridDim.x * blockDim.x)) {
        int r = i, c[2], node;
        for (int a = 1; a >= 0; --a) { c[a] = lo[a] + r % ext[a]; r /= ext[a]; }
        node = r;   /* the scene */
        for (int a = 0; a < 2; ++a) node = node * prm.res[a] + c[a];
        cq__grid_adj_2d_f64(node, &prm, gm, gp, gv_adj, gp_adj);
    }
}

__global__ void cq__g2p_adj_2d_f64_kernel(int n, cq__params_f64 prm, cq__pview_f64 s, cq__gview_f64 g, cq__pview_f64 ao, cq__pview_f64 ai, const int * rank, double * pk)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;   /* particle, its packed record into sorted slot rank[p] */
    if (p < n) cq__g2p_adj_2d_f64(p, &prm, s, g, ao, ai, pk + (long)rank[p] * CQ__PK(2));
}

/* per-group actuation gradient of one substep, no atomics (the order of kernels_common.j2
   CQ__ACT_CHUNK, the CPU's too): act_part sums each chunk's particles (one thread per chunk and
   component), act_sum each group's chunks and adds that to out[g*dd + a] (one thread per group
   and component) */
__global__ void cq__act_reduce_2d_f64_kernel(int chunks, const int * perm, const int * beg, const double * dact, double * part)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < chunks * 4) {
        const int k = i / 4, a = i % 4;
        double sum = 0;
        for (int j = beg[k]; j < beg[k + 1]; ++j) sum += (double)dact[(long)perm[j] * 4 + a];
        part[i] = sum;
    }
}

__global__ void cq__act_sum_2d_f64_kernel(int groups, const int * first, const double * part, double * out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < groups * 4) {
        const int g = i / 4, a = i % 4;
        double sum = 0;
        for (int k = first[g]; k < first[g + 1]; ++k) sum += part[(long)k * 4 + a];
        out[i] += sum;
    }
}

/* >>nonfinite: the backward pass's check after a step, one thread per particle over its adjoint
   state (a.x, v, C, F) and parameter gradients (a.mass, vol, E, nu); the lowest failing
   particle p lands in *status as INT_MAX - (8 p + its cq_field), 0 = all finite (host decodes;
   the maximum, so that the status word starts at 0).  A step's last substep adjoint without
   cables does it in its last kernel instead (p2g_adj_stress, status set: the values of its
   particle are then its own writes or those of the kernels before, final for the step): a pass
   over the whole adjoint (28 numbers a particle, 16.7 us of the 512k cube's backward substep on
   an H200) and a launch fewer. */
__global__ void cq__nonfinite_2d_f64_kernel(int n, cq__pview_f64 a, int * status)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) cq__nonfinite_at_2d_f64(p, a, status);
}

/* cables (templates/cables.j2): per cable (len, dot, grad), per particle (veff, mass_adj) or per
   row of the particles the segments touch (force, x_adj); no atomics */
__global__ void cq__cable_len_2d_f64_kernel(int nc, const int * first, const int * seg, const double * x, double * L)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nc) cq__cable_len_cable_2d_f64(s, first, seg, x, L);
}

__global__ void cq__cable_force_2d_f64_kernel(int nr, const int * row, const int * rbeg, const int * ent, const int * seg, const double * x, const double * L, const double * k, const double * target, double * f)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nr) cq__cable_force_row_2d_f64(s, row, rbeg, ent, seg, x, L, k, target, f);
}

__global__ void cq__cable_veff_2d_f64_kernel(int np, const double * v, const double * f, const double * m, double dt, double * veff)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < np) cq__cable_veff_2d_f64(s, v, f, m, dt, veff);
}

__global__ void cq__cable_mass_adj_2d_f64_kernel(int np, const double * f, const double * av, const double * m, double dt, double * gmass)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < np) cq__cable_mass_adj_2d_f64(s, f, av, m, dt, gmass);
}

__global__ void cq__cable_dot_2d_f64_kernel(int nc, const int * first, const int * seg, const double * x, const double * av, const double * m, const double * L, const double * target, double dt, double * dot)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nc) cq__cable_dot_cable_2d_f64(s, first, seg, x, av, m, L, target, dt, dot);
}

__global__ void cq__cable_grad_2d_f64_kernel(int nc, const double * k, const double * rest, const double * target, const double * dot, double * grad)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nc) cq__cable_grad_2d_f64(s, k, rest, target, dot, grad);
}

__global__ void cq__cable_x_adj_2d_f64_kernel(int nr, const int * row, const int * rbeg, const int * ent, const int * seg, const double * x, const double * av, const double * m, const double * L, const double * target, const double * k, const double * dot, double dt, double * ax)
{
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nr) cq__cable_x_adj_row_2d_f64(s, row, rbeg, ent, seg, x, av, m, L, target, k, dot, dt, ax);
}

/* >>sph_kernels: the fluid's passes (sph.j2), one thread per fluid particle (per boundary particle
   for bforce, per CQ__SPH_CHUNK fluid particles for errsum); the world's CUDA driver in world.j2
   launches them in the CPU driver's order.  >>sph_sort: the sorts of the fluid and the boundary on
   the device, as world.j2's cq__counting_sort (the same integers): key (each particle's cell,
   sph.j2 >>sph_cell, counted), the scan, cell_fill (>>cuda_sort), then each particle's slot among
   its cell's in index order (cq__sort_slot_: stable, whichever thread won a cursor), where
   reorder moves the fluid's x, v and user index, and border writes the boundary's order.
   >>sph_solver_check: the solvers' convergence test on the device (world.j2 cq__world_queue_):
   check, one thread, adds errsum's chunk sums in order (the CPU's order: the same bits) and
   leaves in sol the error, whether the solve is done and its iterations, and raises its fin word
   when it is; source, errsum, bforce and pressure do nothing once it is, nor while their gate (the
   solve before's fin word) is down, and viscosity and advection wait on a gate too, so the host
   queues a whole step's iterations and passes without reading anything back (world.j2
   >>world_fluid_step) */
__global__ void cq__sph_fill_2d_f64_kernel(int n, cq__sph_f64 s, int * need)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { int c_[2]; cq__sph_fill_2d_f64(&s, i, c_); if (c_[0] > s.fcap) atomicMax(&need[0], c_[0]); if (c_[1] > s.bcap) atomicMax(&need[1], c_[1]); };
}

__global__ void cq__sph_density_2d_f64_kernel(int n, cq__sph_f64 s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cq__sph_density_2d_f64(&s, i);
}

__global__ void cq__sph_source_2d_f64_kernel(int n, cq__sph_f64 s, int mode, const double * sol, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { if (*gate && sol[1] == 0) cq__sph_source_2d_f64(&s, i, mode); };
}

__global__ void cq__sph_bforce_2d_f64_kernel(int n, cq__sph_f64 s, const double * sol, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { if (*gate && sol[1] == 0) cq__sph_boundary_force_2d_f64(&s, i); };
}

__global__ void cq__sph_pressure_2d_f64_kernel(int n, cq__sph_f64 s, const double * sol, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { if (*gate && sol[1] == 0) cq__sph_pressure_2d_f64(&s, i); };
}

__global__ void cq__sph_visc_2d_f64_kernel(int n, cq__sph_f64 s, double g0, double g1, double g2, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { const double grav[3] = {g0, g1, g2}; if (*gate) cq__sph_viscosity_2d_f64(&s, i, grav); };
}

__global__ void cq__sph_advect_2d_f64_kernel(int n, cq__sph_f64 s, int * bad, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { if (*gate && cq__sph_advect_2d_f64(&s, i) != CQ__OK) atomicMin(bad, i); };
}

__global__ void cq__sph_errsum_2d_f64_kernel(int n, cq__sph_f64 s, double * out, const double * sol, const int * gate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { if (*gate && sol[1] == 0) out[i] = cq__sph_err_chunk_2d_f64(&s, i); };
}

__global__ void cq__sph_check_2d_f64_kernel(int n, cq__sph_f64 s, const double * part, int nch, double rho0, int k, int min_it, double eta, double * sol, const int * gate, int * fin)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { double sum_ = 0, err_; if (!*gate || sol[1] != 0) return; for (int c_ = 0; c_ < nch; ++c_) sum_ += part[c_]; err_ = s.nf ? sum_ / s.nf / rho0 : 0; sol[0] = err_; if (k >= min_it && err_ <= eta) { sol[1] = 1; sol[2] = k; *fin = 1; } else sol[2] = k + 1; };
}

__global__ void cq__sph_key_2d_f64_kernel(int n, cq__sph_f64 s, const double * px, int * keys, int * cnt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { int c_[3]; const int k_ = cq__sph_cell_2d_f64(s.glo, s.inv_h, s.nc, px + (long)i * 2, c_); keys[i] = k_; atomicAdd(&cnt[k_], 1); };
}

__global__ void cq__sph_reorder_2d_f64_kernel(int n, cq__sph_f64 s, const int * keys, const int * cell_end, const int * order, const int * perm, double * nx, double * nv, int * nperm)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { const int r_ = cq__sort_slot_2d_f64(i, keys[i], cell_end, order); CQ__UNROLL for (int a = 0; a < 2; ++a) { nx[(long)r_ * 2 + a] = s.x[(long)i * 2 + a]; nv[(long)r_ * 2 + a] = s.v[(long)i * 2 + a]; } nperm[r_] = perm[i]; };
}

__global__ void cq__sph_border_2d_f64_kernel(int n, cq__sph_f64 s, const int * keys, const int * cell_end, const int * order, int * border)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) border[cq__sort_slot_2d_f64(i, keys[i], cell_end, order)] = i;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#if !defined(__CUDACC__)
/* The emulation's launch table: name -> a trampoline unpacking cuLaunchKernel's argument array. */
typedef struct cq__emu_kernel { const char *name; void (*call)(void **args); int barriers; } cq__emu_kernel;
static void cq__cell_sort_2d_f64_kernel_emu(void **a) { cq__cell_sort_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(int *)a[3], *(int * *)a[4], *(int * *)a[5], *(int * *)a[6], *(int * *)a[7]); }
static void cq__cell_count_2d_f64_kernel_emu(void **a) { cq__cell_count_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(int * *)a[3], *(int * *)a[4], *(int * *)a[5]); }
static void cq__scan_up_2d_f64_kernel_emu(void **a) { cq__scan_up_2d_f64_kernel(*(int *)a[0], *(int * *)a[1], *(int * *)a[2], *(const int * *)a[3], *(int *)a[4], *(int *)a[5]); }
static void cq__scan_top_2d_f64_kernel_emu(void **a) { cq__scan_top_2d_f64_kernel(*(int *)a[0], *(int * *)a[1], *(int * *)a[2], *(const int * *)a[3], *(int *)a[4], *(int *)a[5]); }
static void cq__scan_down_2d_f64_kernel_emu(void **a) { cq__scan_down_2d_f64_kernel(*(int *)a[0], *(int * *)a[1], *(int * *)a[2], *(int * *)a[3], *(int *)a[4], *(const int * *)a[5], *(int *)a[6], *(int *)a[7]); }
static void cq__cell_fill_2d_f64_kernel_emu(void **a) { cq__cell_fill_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(int * *)a[2], *(int * *)a[3]); }
static void cq__sort_coop_2d_f64_kernel_emu(void **a) { cq__sort_coop_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(int *)a[3], *(int * *)a[4], *(int * *)a[5], *(int * *)a[6], *(int * *)a[7], *(int * *)a[8], *(unsigned * *)a[9], *(unsigned *)a[10]); }
static void cq__gather_fwd_2d_f64_kernel_emu(void **a) { cq__gather_fwd_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(cq__gview_f64 *)a[4], *(double * *)a[5], *(int *)a[6], *(int * *)a[7]); }
static void cq__gather_rows_2d_f64_kernel_emu(void **a) { cq__gather_rows_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(cq__gview_f64 *)a[4], *(double * *)a[5], *(int *)a[6], *(int * *)a[7]); }
static void cq__g2p_fwd_2d_f64_kernel_emu(void **a) { cq__g2p_fwd_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(cq__pview_f64 *)a[3], *(cq__gview_f64 *)a[4], *(int * *)a[5]); }
static void cq__p2g_adj_transfer_2d_f64_kernel_emu(void **a) { cq__p2g_adj_transfer_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(const double * *)a[3], *(cq__pview_f64 *)a[4], *(cq__pview_f64 *)a[5], *(const int * *)a[6], *(double * *)a[7]); }
static void cq__p2g_fwd_2d_fixed_corotated_f64_kernel_emu(void **a) { cq__p2g_fwd_2d_fixed_corotated_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(int * *)a[3], *(double * *)a[4], *(const int * *)a[5], *(const int * *)a[6], *(const int * *)a[7], *(int *)a[8]); }
static void cq__p2g_adj_stress_2d_fixed_corotated_f64_kernel_emu(void **a) { cq__p2g_adj_stress_2d_fixed_corotated_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(cq__pview_f64 *)a[3], *(cq__pview_f64 *)a[4], *(const int * *)a[5], *(const double * *)a[6], *(double * *)a[7], *(int * *)a[8]); }
static void cq__p2g_fwd_2d_neohookean_f64_kernel_emu(void **a) { cq__p2g_fwd_2d_neohookean_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(int * *)a[3], *(double * *)a[4], *(const int * *)a[5], *(const int * *)a[6], *(const int * *)a[7], *(int *)a[8]); }
static void cq__p2g_adj_stress_2d_neohookean_f64_kernel_emu(void **a) { cq__p2g_adj_stress_2d_neohookean_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(cq__pview_f64 *)a[3], *(cq__pview_f64 *)a[4], *(const int * *)a[5], *(const double * *)a[6], *(double * *)a[7], *(int * *)a[8]); }
static void cq__grid_adj_2d_f64_kernel_emu(void **a) { cq__grid_adj_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(const double * *)a[4], *(const double * *)a[5], *(double * *)a[6]); }
static void cq__g2p_adj_2d_f64_kernel_emu(void **a) { cq__g2p_adj_2d_f64_kernel(*(int *)a[0], *(cq__params_f64 *)a[1], *(cq__pview_f64 *)a[2], *(cq__gview_f64 *)a[3], *(cq__pview_f64 *)a[4], *(cq__pview_f64 *)a[5], *(const int * *)a[6], *(double * *)a[7]); }
static void cq__act_reduce_2d_f64_kernel_emu(void **a) { cq__act_reduce_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(double * *)a[4]); }
static void cq__act_sum_2d_f64_kernel_emu(void **a) { cq__act_sum_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const double * *)a[2], *(double * *)a[3]); }
static void cq__nonfinite_2d_f64_kernel_emu(void **a) { cq__nonfinite_2d_f64_kernel(*(int *)a[0], *(cq__pview_f64 *)a[1], *(int * *)a[2]); }
static void cq__cable_len_2d_f64_kernel_emu(void **a) { cq__cable_len_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(double * *)a[4]); }
static void cq__cable_force_2d_f64_kernel_emu(void **a) { cq__cable_force_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const int * *)a[2], *(const int * *)a[3], *(const int * *)a[4], *(const double * *)a[5], *(const double * *)a[6], *(const double * *)a[7], *(const double * *)a[8], *(double * *)a[9]); }
static void cq__cable_veff_2d_f64_kernel_emu(void **a) { cq__cable_veff_2d_f64_kernel(*(int *)a[0], *(const double * *)a[1], *(const double * *)a[2], *(const double * *)a[3], *(double *)a[4], *(double * *)a[5]); }
static void cq__cable_mass_adj_2d_f64_kernel_emu(void **a) { cq__cable_mass_adj_2d_f64_kernel(*(int *)a[0], *(const double * *)a[1], *(const double * *)a[2], *(const double * *)a[3], *(double *)a[4], *(double * *)a[5]); }
static void cq__cable_dot_2d_f64_kernel_emu(void **a) { cq__cable_dot_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const int * *)a[2], *(const double * *)a[3], *(const double * *)a[4], *(const double * *)a[5], *(const double * *)a[6], *(const double * *)a[7], *(double *)a[8], *(double * *)a[9]); }
static void cq__cable_grad_2d_f64_kernel_emu(void **a) { cq__cable_grad_2d_f64_kernel(*(int *)a[0], *(const double * *)a[1], *(const double * *)a[2], *(const double * *)a[3], *(const double * *)a[4], *(double * *)a[5]); }
static void cq__cable_x_adj_2d_f64_kernel_emu(void **a) { cq__cable_x_adj_2d_f64_kernel(*(int *)a[0], *(const int * *)a[1], *(const int * *)a[2], *(const int * *)a[3], *(const int * *)a[4], *(const double * *)a[5], *(const double * *)a[6], *(const double * *)a[7], *(const double * *)a[8], *(const double * *)a[9], *(const double * *)a[10], *(const double * *)a[11], *(double *)a[12], *(double * *)a[13]); }
static void cq__sph_fill_2d_f64_kernel_emu(void **a) { cq__sph_fill_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(int * *)a[2]); }
static void cq__sph_density_2d_f64_kernel_emu(void **a) { cq__sph_density_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1]); }
static void cq__sph_source_2d_f64_kernel_emu(void **a) { cq__sph_source_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(int *)a[2], *(const double * *)a[3], *(const int * *)a[4]); }
static void cq__sph_bforce_2d_f64_kernel_emu(void **a) { cq__sph_bforce_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const double * *)a[2], *(const int * *)a[3]); }
static void cq__sph_pressure_2d_f64_kernel_emu(void **a) { cq__sph_pressure_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const double * *)a[2], *(const int * *)a[3]); }
static void cq__sph_visc_2d_f64_kernel_emu(void **a) { cq__sph_visc_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(double *)a[2], *(double *)a[3], *(double *)a[4], *(const int * *)a[5]); }
static void cq__sph_advect_2d_f64_kernel_emu(void **a) { cq__sph_advect_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(int * *)a[2], *(const int * *)a[3]); }
static void cq__sph_errsum_2d_f64_kernel_emu(void **a) { cq__sph_errsum_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(double * *)a[2], *(const double * *)a[3], *(const int * *)a[4]); }
static void cq__sph_check_2d_f64_kernel_emu(void **a) { cq__sph_check_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const double * *)a[2], *(int *)a[3], *(double *)a[4], *(int *)a[5], *(int *)a[6], *(double *)a[7], *(double * *)a[8], *(const int * *)a[9], *(int * *)a[10]); }
static void cq__sph_key_2d_f64_kernel_emu(void **a) { cq__sph_key_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const double * *)a[2], *(int * *)a[3], *(int * *)a[4]); }
static void cq__sph_reorder_2d_f64_kernel_emu(void **a) { cq__sph_reorder_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const int * *)a[2], *(const int * *)a[3], *(const int * *)a[4], *(const int * *)a[5], *(double * *)a[6], *(double * *)a[7], *(int * *)a[8]); }
static void cq__sph_border_2d_f64_kernel_emu(void **a) { cq__sph_border_2d_f64_kernel(*(int *)a[0], *(cq__sph_f64 *)a[1], *(const int * *)a[2], *(const int * *)a[3], *(const int * *)a[4], *(int * *)a[5]); }
const cq__emu_kernel cq__emu_kernels_2d_f64[] = {
    {"cq__cell_sort_2d_f64_kernel", cq__cell_sort_2d_f64_kernel_emu, 1},
    {"cq__cell_count_2d_f64_kernel", cq__cell_count_2d_f64_kernel_emu, 1},
    {"cq__scan_up_2d_f64_kernel", cq__scan_up_2d_f64_kernel_emu, 1},
    {"cq__scan_top_2d_f64_kernel", cq__scan_top_2d_f64_kernel_emu, 1},
    {"cq__scan_down_2d_f64_kernel", cq__scan_down_2d_f64_kernel_emu, 1},
    {"cq__cell_fill_2d_f64_kernel", cq__cell_fill_2d_f64_kernel_emu, 0},
    {"cq__sort_coop_2d_f64_kernel", cq__sort_coop_2d_f64_kernel_emu, 1},
    {"cq__gather_fwd_2d_f64_kernel", cq__gather_fwd_2d_f64_kernel_emu, 1},
    {"cq__gather_rows_2d_f64_kernel", cq__gather_rows_2d_f64_kernel_emu, 1},
    {"cq__g2p_fwd_2d_f64_kernel", cq__g2p_fwd_2d_f64_kernel_emu, 0},
    {"cq__p2g_adj_transfer_2d_f64_kernel", cq__p2g_adj_transfer_2d_f64_kernel_emu, 0},
    {"cq__p2g_fwd_2d_fixed_corotated_f64_kernel", cq__p2g_fwd_2d_fixed_corotated_f64_kernel_emu, 0},
    {"cq__p2g_adj_stress_2d_fixed_corotated_f64_kernel", cq__p2g_adj_stress_2d_fixed_corotated_f64_kernel_emu, 0},
    {"cq__p2g_fwd_2d_neohookean_f64_kernel", cq__p2g_fwd_2d_neohookean_f64_kernel_emu, 0},
    {"cq__p2g_adj_stress_2d_neohookean_f64_kernel", cq__p2g_adj_stress_2d_neohookean_f64_kernel_emu, 0},
    {"cq__grid_adj_2d_f64_kernel", cq__grid_adj_2d_f64_kernel_emu, 0},
    {"cq__g2p_adj_2d_f64_kernel", cq__g2p_adj_2d_f64_kernel_emu, 0},
    {"cq__act_reduce_2d_f64_kernel", cq__act_reduce_2d_f64_kernel_emu, 0},
    {"cq__act_sum_2d_f64_kernel", cq__act_sum_2d_f64_kernel_emu, 0},
    {"cq__nonfinite_2d_f64_kernel", cq__nonfinite_2d_f64_kernel_emu, 0},
    {"cq__cable_len_2d_f64_kernel", cq__cable_len_2d_f64_kernel_emu, 0},
    {"cq__cable_force_2d_f64_kernel", cq__cable_force_2d_f64_kernel_emu, 0},
    {"cq__cable_veff_2d_f64_kernel", cq__cable_veff_2d_f64_kernel_emu, 0},
    {"cq__cable_mass_adj_2d_f64_kernel", cq__cable_mass_adj_2d_f64_kernel_emu, 0},
    {"cq__cable_dot_2d_f64_kernel", cq__cable_dot_2d_f64_kernel_emu, 0},
    {"cq__cable_grad_2d_f64_kernel", cq__cable_grad_2d_f64_kernel_emu, 0},
    {"cq__cable_x_adj_2d_f64_kernel", cq__cable_x_adj_2d_f64_kernel_emu, 0},
    {"cq__sph_fill_2d_f64_kernel", cq__sph_fill_2d_f64_kernel_emu, 0},
    {"cq__sph_density_2d_f64_kernel", cq__sph_density_2d_f64_kernel_emu, 0},
    {"cq__sph_source_2d_f64_kernel", cq__sph_source_2d_f64_kernel_emu, 0},
    {"cq__sph_bforce_2d_f64_kernel", cq__sph_bforce_2d_f64_kernel_emu, 0},
    {"cq__sph_pressure_2d_f64_kernel", cq__sph_pressure_2d_f64_kernel_emu, 0},
    {"cq__sph_visc_2d_f64_kernel", cq__sph_visc_2d_f64_kernel_emu, 0},
    {"cq__sph_advect_2d_f64_kernel", cq__sph_advect_2d_f64_kernel_emu, 0},
    {"cq__sph_errsum_2d_f64_kernel", cq__sph_errsum_2d_f64_kernel_emu, 0},
    {"cq__sph_check_2d_f64_kernel", cq__sph_check_2d_f64_kernel_emu, 0},
    {"cq__sph_key_2d_f64_kernel", cq__sph_key_2d_f64_kernel_emu, 0},
    {"cq__sph_reorder_2d_f64_kernel", cq__sph_reorder_2d_f64_kernel_emu, 0},
    {"cq__sph_border_2d_f64_kernel", cq__sph_border_2d_f64_kernel_emu, 0},
    {0, 0, 0}
};
#endif
/* ---- END GENERATED: CUDA kernels 2d_f64 ---- */
