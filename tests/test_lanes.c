/* The CPU's lane kernels (templates/cpu_lanes.j2: G2P, the G2P adjoint, the P2G adjoint's
   transfer half, P2G's 3D SVD and 2D's stress parts over CQ__LANES_f32 / CQ__LANES_f64 particles at once) against the one-particle
   kernels the GPU (and the mock CUDA) runs: the same outputs bit for bit, 2D and 3D, float32 and
   float64, particles in two scenes and in a shuffled order, the groups' remainder through the
   one-particle kernel (the CPU drivers pad it instead, cpu_backend.j2 >>cpu_lane_groups); a lane
   group with a particle outside the usable region or at NaN is left to the one-particle kernel
   (-2, nothing written), and a failing particle is reported as the lowest failing lane with the
   one-particle kernel's failure.
   Built with -ffast-math (__FAST_MATH__: make test's test_lanes_fast_math, -O3 -march=native) the
   compiler may round the lanes and the one-particle code otherwise (it reassociates, and fuses
   either product of a sum), so the bit-for-bit comparisons are not made there (BITWISE, said
   once; the SVD and stress tests, which compare and nothing else, are left out) and every other
   check is: NaN positions refused by their bits (-ffinite-math-only
   once let gcc take a NaN position as inside the region, and the lanes gathered far outside the
   grid), nothing written, the lowest failing lane. */
#define CHAINQUEEN_IMPLEMENTATION
#include "../chainqueen.h"
#include "harness.h"
#include <stdlib.h>

#define RES 12
#define NP 45   /* 2 lane groups of 16 (f32) or 5 of 8 (f64) and a remainder */

#ifdef __FAST_MATH__
static int bitwise_noted;
static int bitwise_note(void)
{
    if (!bitwise_noted) printf("    (-ffast-math: the lanes against the one-particle kernels bit for bit are not checked)\n");
    bitwise_noted = 1;
    return 1;
}
#  define BITWISE(cond) ((void)sizeof(cond), bitwise_note())
#else
#  define BITWISE(cond) (cond)
#endif

/* an int result against the expected one */
#define CHECK_EQ_INT(call, want) do { const int cqt_got = (call), cqt_want = (want); \
    CHECK(cqt_got == cqt_want, "%s gave %d, not %d", #call, cqt_got, cqt_want); } while (0)

static unsigned rng_state = 777u;
static double urand(void) { rng_state = rng_state * 1664525u + 1013904223u; return (rng_state >> 8) / 16777216.0; }
static double srand1(void) { return 2 * urand() - 1; }

/* LANE_TEST(D, P, T): the three kernels of one dimension and precision */
#define LANE_TEST(D, P, T)                                                                                       \
TEST(lanes_##D##d_##P)                                                                                           \
{                                                                                                                \
    enum { DD = D * D, LN = CQ__LANES_##P, PK = CQ__PK(D) };                                                     \
    static T x[NP * D], v[NP * D], C[NP * DD], F[NP * DD], mass[NP], vol[NP], E[NP], nu[NP];                    \
    static T ox1[NP * D], ov1[NP * D], oC1[NP * DD], oF1[NP * DD], ox2[NP * D], ov2[NP * D], oC2[NP * DD], oF2[NP * DD]; \
    static T aox[NP * D], aov[NP * D], aoC[NP * DD], aoF[NP * DD];                                               \
    static T ax1[NP * D], av1[NP * D], aC1[NP * DD], aF1[NP * DD], ax2[NP * D], av2[NP * D], aC2[NP * DD], aF2[NP * DD]; \
    static T gm1[NP], gm2[NP], pk1[NP * PK], pk2[NP * PK], G[NP][DD], Gb1[NP][DD], Gb2[NP][DD];                \
    static T gv[2 * RES * RES * RES * D], gpb[2 * RES * RES * RES * D], gmb[2 * RES * RES * RES];               \
    static int scene[NP], order[NP], slot[NP];                                                                   \
    cq__params_##P prm;                                                                                          \
    memset(&prm, 0, sizeof prm);                                                                                 \
    for (int a = 0; a < D; ++a) prm.res[a] = RES;                                                                \
    prm.dx = (T)(1.0 / RES); prm.inv_dx = (T)RES; prm.dt = (T)2e-3; prm.nodes = D == 2 ? RES * RES : RES * RES * RES; \
    const long nodes = 2L * prm.nodes;                                                                           \
    for (long i = 0; i < nodes * D; ++i) { gv[i] = (T)srand1(); gpb[i] = (T)srand1(); }                          \
    for (long i = 0; i < nodes; ++i) gmb[i] = (T)srand1();                                                       \
    for (int p = 0; p < NP; ++p) {                                                                               \
        for (int a = 0; a < D; ++a) {                                                                            \
            x[p * D + a] = (T)((1.0 + (RES - 3.0) * urand()) / RES);   /* inside the usable region */             \
            v[p * D + a] = (T)srand1(); aox[p * D + a] = (T)srand1(); aov[p * D + a] = (T)srand1();              \
        }                                                                                                        \
        for (int a = 0; a < DD; ++a) {                                                                           \
            F[p * DD + a] = (T)((a % (D + 1) == 0) + 0.2 * srand1()); C[p * DD + a] = (T)srand1();               \
            aoC[p * DD + a] = (T)srand1(); aoF[p * DD + a] = (T)srand1(); G[p][a] = (T)srand1();                  \
        }                                                                                                        \
        mass[p] = (T)(0.5 + urand()); vol[p] = (T)(0.5 + urand()); E[p] = 100; nu[p] = (T)0.3;                     \
        scene[p] = p % 3 == 1; order[p] = (p * 7) % NP;   /* 7 and 45 are coprime: a permutation */           \
    }                                                                                                            \
    cq__pview_##P in, o1, o2, ao, a1, a2, g1, g2;                                                                \
    memset(&in, 0, sizeof in);                                                                                   \
    in.x = x; in.v = v; in.C = C; in.F = F; in.mass = mass; in.vol = vol; in.E = E; in.nu = nu; in.scene = scene; \
    o1 = in; o1.x = ox1; o1.v = ov1; o1.C = oC1; o1.F = oF1;                                                     \
    o2 = in; o2.x = ox2; o2.v = ov2; o2.C = oC2; o2.F = oF2;                                                     \
    ao = in; ao.x = aox; ao.v = aov; ao.C = aoC; ao.F = aoF;                                                     \
    a1 = in; a1.x = ax1; a1.v = av1; a1.C = aC1; a1.F = aF1;                                                     \
    a2 = in; a2.x = ax2; a2.v = av2; a2.C = aC2; a2.F = aF2;                                                     \
    g1 = in; g1.mass = gm1; g2 = in; g2.mass = gm2;                                                              \
    cq__gview_##P g; g.m = NULL; g.v = gv;                                                                       \
    /* G2P: the lanes over p, p + 1, ...; the remainder one by one */                                           \
    for (int p = 0; p < NP; ++p) CHECK_EQ_INT(cq__g2p_fwd_##D##d_##P(p, &prm, in, o1, g), CQ__OK);               \
    int p0 = 0, ps[LN];                                                                                          \
    for (; p0 + LN <= NP; p0 += LN) {                                                                            \
        for (int l = 0; l < LN; ++l) ps[l] = p0 + l;                                                             \
        CHECK_EQ_INT(cq__g2p_lanes_##D##d_##P(ps, 0, LN, &prm, in, o2, g), -1);                                         \
    }                                                                                                            \
    for (; p0 < NP; ++p0) cq__g2p_fwd_##D##d_##P(p0, &prm, in, o2, g);                                           \
    CHECK(BITWISE(!memcmp(ox1, ox2, sizeof ox1) && !memcmp(ov1, ov2, sizeof ov1) && !memcmp(oC1, oC2, sizeof oC1) && \
          !memcmp(oF1, oF2, sizeof oF1)), "G2P: lanes and one-particle kernel differ");                         \
    /* a particle outside the usable region: -2 and nothing written */                                         \
    for (int l = 0; l < LN; ++l) ps[l] = l;                                                                      \
    {                                                                                                            \
        const T keep = x[3 * D];                                                                                 \
        x[3 * D] = (T)(0.25 / RES);   /* below the usable region (x/dx >= 0.5) */                                                                               \
        memset(ox2, 0, sizeof ox2);                                                                              \
        CHECK_EQ_INT(cq__g2p_lanes_##D##d_##P(ps, 0, LN, &prm, in, o2, g), -2);                                         \
        int zero = 1;                                                                                            \
        for (int i = 0; i < NP * D; ++i) zero &= ox2[i] == 0;                                                     \
        CHECK(zero, "a lane group with a particle outside wrote its outputs");                                  \
        x[3 * D] = (T)NAN;   /* not a position: also left to the one-particle kernel */                         \
        CHECK_EQ_INT(cq__g2p_lanes_##D##d_##P(ps, 0, LN, &prm, in, o2, g), -2);                                         \
        x[3 * D] = keep;                                                                                         \
    }                                                                                                            \
    /* failures: a non-finite grid velocity at a node of particle 5: the lowest failing lane */                 \
    {                                                                                                            \
        int bad1 = -1, b[D]; T fx[D], w[D][3];                                                                   \
        cq__weights_##D##d_##P(x + 5 * D, prm.inv_dx, b, fx, w);                                                 \
        long node = b[0] + 1;                                                                                    \
        for (int a = 1; a < D; ++a) node = node * RES + b[a] + 1;                                                \
        node += scene[5] ? prm.nodes : 0;                                                                        \
        const T keep = gv[node * D];                                                                             \
        gv[node * D] = (T)NAN;                                                                                   \
        for (int p = 0; p < LN && bad1 < 0; ++p)                                                                 \
            if (cq__g2p_fwd_##D##d_##P(p, &prm, in, o1, g) != CQ__OK) bad1 = p;                                  \
        CHECK(bad1 >= 0 && bad1 <= 5, "the non-finite node reached no particle");                                \
        CHECK_EQ_INT(cq__g2p_lanes_##D##d_##P(ps, 0, LN, &prm, in, o2, g), bad1);                                       \
        gv[node * D] = keep;                                                                                     \
    }                                                                                                            \
    /* the G2P adjoint over the shuffled order, each record into its slot (slot[k] = NP - 1 - k) */            \
    for (int i = 0; i < NP * PK; ++i) pk1[i] = pk2[i] = -1;                                                      \
    for (int k = 0; k < NP; ++k) slot[k] = NP - 1 - k;                                                           \
    for (int k = 0; k < NP; ++k) cq__g2p_adj_##D##d_##P(order[k], &prm, in, g, ao, a1, pk1 + (long)slot[k] * PK); \
    int k0 = 0;                                                                                                  \
    for (; k0 + LN <= NP; k0 += LN) cq__g2p_adj_lanes_##D##d_##P(order + k0, slot + k0, 0, LN, &prm, in, g, ao, a2, pk2); \
    for (; k0 < NP; ++k0) cq__g2p_adj_##D##d_##P(order[k0], &prm, in, g, ao, a2, pk2 + (long)slot[k0] * PK);     \
    CHECK(BITWISE(!memcmp(ax1, ax2, sizeof ax1) && !memcmp(aF1, aF2, sizeof aF1) && !memcmp(pk1, pk2, sizeof pk1)), \
          "G2P adjoint: lanes and one-particle kernel differ");                                                 \
    /* the transfer half of the P2G adjoint (adds to ai.x and pg.mass: the same start on both sides) */         \
    for (int p = 0; p < NP; ++p) gm1[p] = gm2[p] = (T)p;                                                          \
    for (int p = 0; p < NP; ++p) cq__p2g_adj_transfer_##D##d_##P(p, &prm, in, G[p], gpb, gmb, a1, g1, Gb1[p]);    \
    /* in groups as cq__p2g_adj_range_ runs them: the last padded, its repeated lanes adding nothing */        \
    for (p0 = 0; p0 < NP; p0 += LN) {                                                                            \
        const int cnt = NP - p0 < LN ? NP - p0 : LN;                                                             \
        T Gin[LN][DD], Gout[LN][DD];                                                                             \
        for (int l = 0; l < LN; ++l) {                                                                           \
            ps[l] = p0 + (l < cnt ? l : cnt - 1);                                                                \
            for (int a = 0; a < DD; ++a) Gin[l][a] = G[ps[l]][a];                                                \
        }                                                                                                        \
        cq__transfer_lanes_##D##d_##P(ps, 0, cnt, &prm, in, Gin, gpb, gmb, a2, g2, Gout);                           \
        for (int l = 0; l < cnt; ++l) memcpy(Gb2[p0 + l], Gout[l], sizeof Gout[l]);                              \
    }                                                                                                            \
    CHECK(BITWISE(!memcmp(ax1, ax2, sizeof ax1) && !memcmp(av1, av2, sizeof av1) && !memcmp(aC1, aC2, sizeof aC1) && \
          !memcmp(gm1, gm2, sizeof gm1) && !memcmp(Gb1, Gb2, sizeof Gb1)),                                       \
          "P2G adjoint transfer: lanes and one-particle kernel differ");                                        \
}

/* SVD_TEST(P, T): the lane SVD (cq__svd_lanes_3d_) against the one-matrix SVD the GPU runs, bit
   for bit: near-identity and general matrices, inverted ones (det < 0), the identity, repeated,
   zero and tiny singular values, rank-deficient and zero matrices, huge entries, a NaN and an
   infinity, in lane groups mixed so that lanes stop rotating at different sweeps */
#define SVD_TEST(P, T)                                                                                           \
TEST(svd_lanes_##P)                                                                                              \
{                                                                                                                \
    enum { LN = CQ__LANES_##P, GROUPS = 12, NM = LN * GROUPS };                                                  \
    static T M[NM][9];                                                                                           \
    int bad = 0;                                                                                                 \
    for (int m = 0; m < NM; ++m) {                                                                               \
        const int kind = (m * 5) % 11;                                                                           \
        for (int i = 0; i < 9; ++i) {                                                                            \
            const T id = (T)(i % 4 == 0);                                                                        \
            switch (kind) {                                                                                      \
            case 0: M[m][i] = id + (T)(1e-3 * srand1()); break;                                                  \
            case 1: M[m][i] = (T)(3 * srand1()); break;                                                          \
            case 2: M[m][i] = (i == 0 ? -1 : 1) * id + (T)(0.3 * srand1()); break;   /* inverted */            \
            case 3: M[m][i] = id; break;                                                                         \
            case 4: M[m][i] = (T)2 * id; break;                                                                  \
            case 5: M[m][i] = (i % 3 == 2) ? 0 : (T)srand1(); break;                  /* rank 2 */               \
            case 6: M[m][i] = 0; break;                                                                          \
            case 7: M[m][i] = (T)(1e18 * srand1()); break;                                                       \
            case 8: M[m][i] = (T)((i / 3 == 0 ? 1e-12 : 1) * srand1()); break;        /* tiny sigma */           \
            case 9: M[m][i] = id + (T)(0.5 * srand1()); break;                                                   \
            default: M[m][i] = (T)(i % 3 == 0 ? 1 : 0.5) * (T)srand1(); break;        /* rank 1-ish */           \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    M[5][4] = (T)NAN; M[LN + 3][2] = (T)INFINITY;                                                                \
    for (int g = 0; g < GROUPS; ++g) {                                                                           \
        T F[9][LN], U[9][LN], sg[3][LN], V[9][LN];                                                               \
        for (int l = 0; l < LN; ++l) for (int i = 0; i < 9; ++i) F[i][l] = M[g * LN + l][i];                     \
        cq__svd_lanes_3d_##P(F, U, sg, V);                                                                       \
        for (int l = 0; l < LN; ++l) {                                                                           \
            T u[9], s[3], v[9], u2[9], s2[3], v2[9];                                                             \
            cq__svd_3d_##P(M[g * LN + l], u, s, v);                                                              \
            for (int i = 0; i < 9; ++i) { u2[i] = U[i][l]; v2[i] = V[i][l]; }                                     \
            for (int i = 0; i < 3; ++i) s2[i] = sg[i][l];                                                        \
            if (memcmp(u, u2, sizeof u) || memcmp(v, v2, sizeof v) || memcmp(s, s2, sizeof s)) {                  \
                if (!bad) CHECK(0, "matrix %d (kind %d): sig %.9g %.9g %.9g (one) vs %.9g %.9g %.9g (lanes)",        \
                                g * LN + l, ((g * LN + l) * 5) % 11, (double)s[0], (double)s[1], (double)s[2],   \
                                (double)s2[0], (double)s2[1], (double)s2[2]);                                    \
                ++bad;                                                                                           \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    CHECK(bad == 0, "%d of %d SVDs differ", bad, (int)NM);                                                       \
}
#ifndef __FAST_MATH__   /* the SVD and stress tests compare with the one-particle functions, nothing else */
SVD_TEST(f32, float)
SVD_TEST(f64, double)
#endif

LANE_TEST(2, f32, float)
LANE_TEST(3, f32, float)
LANE_TEST(2, f64, double)
LANE_TEST(3, f64, double)

/* STRESS_TEST(D, P, T, M, ROT): the stress parts over lanes (cpu_lanes.j2 >>stress_lanes_: F's rotation (ROT),
   the stress, the affine matrix and the stress half of the P2G adjoint) against the one-particle
   functions, bit for bit: per-particle E and nu, incompressibility off and on, actuation groups
   valid, none (-1) and out of range, F near the identity, general, inverted, the identity, zero,
   with the 2D polar's undefined direction (F00 + F11 = F10 - F01 = 0), and a NaN; groups of
   lanes as the CPU drivers run them, the last one padded with its last particle, whose copies
   must write nothing */
/* the same bits, or both NaN (a NaN's payload follows operand order, which vector code may swap).
   Built for a CPU with FMA (make test's test_lanes_native, -O3 -march=native), gcc 12 contracts some
   of the one-particle functions' products into multiply-adds where it vectorizes them within a
   particle (SLP, despite -ffp-contract=off; cpu_lanes.j2 >>cpu_lanes), so there the lanes are held
   to the one-particle result within a few roundings instead (the CPU drivers run every particle
   through the lanes, so no particle's bits depend on which code it met: test_batch checks that);
   without FMA (make test's test_lanes, -O2) bit for bit. */
#if defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
#  define SAME(a, b) (memcmp(&(a), &(b), sizeof(a)) == 0 || ((a) != (a) && (b) != (b)) || \
                      fabs((double)(a) - (double)(b)) <= (sizeof(a) == 4 ? 1e-5 : 1e-13) * (1 + fabs((double)(a))))
#else
#  define SAME(a, b) (memcmp(&(a), &(b), sizeof(a)) == 0 || ((a) != (a) && (b) != (b)))
#endif
#define STRESS_TEST(D, P, T, M, ROT)                                                                             \
TEST(stress_lanes_##D##d_##M##_##P)                                                                              \
{                                                                                                                \
    enum { DD = D * D, LN = CQ__LANES_##P, N = 3 * LN + 5 };                                                     \
    static T F[N * DD], C[N * DD], mass[N], vol[N], E[N], nu[N], sa[2 * DD], Gb[N][DD];                          \
    static T P1[N][DD], G1[N][DD], aF1[N * DD], pv1[N], pE1[N], pn1[N], dact1[N * DD];                            \
    static T aF2[N * DD], pv2[N], pE2[N], pn2[N], dact2[N * DD];                                                  \
    static int act[N];                                                                                           \
    cq__params_##P prm;                                                                                          \
    memset(&prm, 0, sizeof prm);                                                                                 \
    prm.dx = (T)(1.0 / RES); prm.inv_dx = (T)RES; prm.dt = (T)2e-3; prm.act_groups = 2;                          \
    for (int a = 0; a < 2 * DD; ++a) sa[a] = (T)srand1();                                                        \
    for (int p = 0; p < N; ++p) {                                                                                \
        for (int a = 0; a < DD; ++a) {                                                                           \
            const T id = (T)(a % (D + 1) == 0);                                                                  \
            switch (p % 7) {                                                                                     \
            case 0: F[p * DD + a] = id + (T)(0.2 * srand1()); break;                                             \
            case 1: F[p * DD + a] = (T)(1.5 * srand1()); break;                                                  \
            case 2: F[p * DD + a] = (a == 0 ? -1 : 1) * id + (T)(0.3 * srand1()); break;   /* inverted */        \
            case 3: F[p * DD + a] = id; break;                                                                   \
            case 4: F[p * DD + a] = p % 2 ? 0 : (a == 0 ? 1 : (a == DD - 1 ? -1 : 0)); break;   /* zero; polar: R = I */ \
            default: F[p * DD + a] = id + (T)(0.5 * srand1()); break;                                           \
            }                                                                                                    \
            C[p * DD + a] = (T)srand1(); Gb[p][a] = (T)srand1();                                                 \
            aF1[p * DD + a] = aF2[p * DD + a] = (T)srand1();                                                     \
        }                                                                                                        \
        mass[p] = (T)(0.5 + urand()); vol[p] = (T)(0.5 + urand());                                                \
        E[p] = (T)(50 + 100 * urand()); nu[p] = (T)(0.1 + 0.35 * urand());                                        \
        act[p] = p % 4 - 1;   /* -1, 0, 1, and 2: out of range */                                               \
        pv1[p] = pv2[p] = (T)srand1(); pE1[p] = pE2[p] = (T)srand1(); pn1[p] = pn2[p] = (T)srand1();             \
    }                                                                                                            \
    F[(LN + 2) * DD + 1] = (T)NAN;                                                                               \
    cq__pview_##P s, ai1, pg1, ai2, pg2;                                                                         \
    memset(&s, 0, sizeof s);                                                                                     \
    s.C = C; s.F = F; s.mass = mass; s.vol = vol; s.E = E; s.nu = nu; s.act = act; s.act_stress = sa;            \
    ai1 = s; ai1.F = aF1; pg1 = s; pg1.vol = pv1; pg1.E = pE1; pg1.nu = pn1;                                     \
    ai2 = s; ai2.F = aF2; pg2 = s; pg2.vol = pv2; pg2.E = pE2; pg2.nu = pn2;                                     \
    for (int inc = 0; inc <= 3; inc += 3) {                                                                      \
        int bad = 0;                                                                                             \
        prm.incompressibility = inc;                                                                             \
        for (int p = 0; p < N; ++p) {   /* one particle at a time */                                            \
            cq__rot_##D##d_##P rot;                                                                              \
            cq__rot_of_##D##d_##M##_##P(F + p * DD, &rot);                                                       \
            cq__pk1_rot_##D##d_##M##_##P(F + p * DD, &rot, E[p], nu[p], act[p], &prm, sa, P1[p]);                \
            cq__affine_##D##d_##P(p, &prm, s, P1[p], F + p * DD, G1[p]);                                         \
            cq__p2g_adj_stress_rot_##D##d_##M##_##P(p, &prm, s, &rot, P1[p], Gb[p], ai1, pg1, dact1 + p * DD);   \
        }                                                                                                        \
        for (int p = 0; p < N; p += LN) {   /* lane groups, the last padded */                                  \
            const int cnt = N - p < LN ? N - p : LN;                                                             \
            int ps[LN];                                                                                          \
            T Fl[DD][LN], R[DD][LN], Pl[DD][LN], Gl[DD][LN], Gbl[DD][LN];                                        \
            cq__svd_lanes_##P sv;                                                                                \
            cq__rot_##D##d_##P own;                                                                              \
            for (int l = 0; l < LN; ++l) {                                                                       \
                ps[l] = p + (l < cnt ? l : cnt - 1);                                                             \
                for (int a = 0; a < DD; ++a) { Fl[a][l] = F[ps[l] * DD + a]; Gbl[a][l] = Gb[ps[l]][a]; }         \
                cq__rot_of_##D##d_##M##_##P(F + ps[l] * DD, &own);                                               \
                for (int a = 0; a < DD; ++a) R[a][l] = own.R[a];                                                 \
            }                                                                                                    \
            ROT(P, T, Fl, R, cnt, bad)                                                                            \
            cq__mat_lanes_##P m;                                                                                 \
            cq__mat_lanes_load_##P(ps, s, &m);                                                                   \
            cq__pk1_lanes_##D##d_##M##_##P(&prm, s, &m, Fl, R, Pl);                                              \
            cq__affine_lanes_##D##d_##P(ps, &prm, s, Pl, Fl, Gl);                                                \
            for (int l = 0; l < cnt; ++l)                                                                        \
                for (int a = 0; a < DD; ++a)                                                                     \
                    bad += !SAME(Pl[a][l], P1[ps[l]][a]) || !SAME(Gl[a][l], G1[ps[l]][a]);                          \
            cq__stress_adj_lanes_##D##d_##M##_##P(ps, 0, cnt, &prm, s, &m, Fl, R, &sv, Pl, Gbl, ai2, pg2, dact2); \
        }                                                                                                        \
        CHECK(bad == 0, "incompressibility %d: %d stresses, affine matrices or rotations differ", inc, bad);    \
        for (int i = 0; i < N * DD; ++i) bad += !SAME(aF1[i], aF2[i]) || !SAME(dact1[i], dact2[i]);              \
        for (int p = 0; p < N; ++p) bad += !SAME(pv1[p], pv2[p]) || !SAME(pE1[p], pE2[p]) || !SAME(pn1[p], pn2[p]); \
        CHECK(bad == 0, "incompressibility %d: %d values of the P2G adjoint's stress half differ over lanes", inc, bad); \
    }                                                                                                            \
    int nonzero = 0;                                                                                             \
    for (int i = 0; i < N * DD; ++i) nonzero += dact1[i] != 0;                                                   \
    CHECK(nonzero > N * DD / 4, "only %d actuation gradients are non-zero", nonzero);                            \
}
/* the 2D polar over lanes against cq__polar_2d_ (what the rotating material's rot_of gives) */
#define ROT_POLAR2(P, T, Fl, R, cnt, bad)                                                                         \
    {                                                                                                            \
        T R2[4][LN];                                                                                             \
        cq__polar_lanes_2d_##P(Fl, R2);                                                                          \
        for (int l = 0; l < cnt; ++l)                                                                            \
            for (int a = 0; a < 4; ++a) bad += !SAME(R2[a][l], R[a][l]);                                          \
    }
#define ROT_GIVEN(P, T, Fl, R, cnt, bad) (void)sv;
/* the 3D SVD over lanes and R = U V^T (cpu_backend.j2 >>cpu_rot_lanes_) against cq__rot_of_'s R; sv
   for the polar VJP over lanes */
#define ROT_SVD3(P, T, Fl, R, cnt, bad)                                                                          \
    {                                                                                                            \
        T R2[9][LN];                                                                                             \
        cq__svd_lanes_3d_##P(Fl, sv.U, sv.sig, sv.V);                                                            \
        cq__uvt_lanes_3d_##P(&sv, R2);                                                                           \
        for (int l = 0; l < cnt; ++l)                                                                            \
            for (int a = 0; a < 9; ++a) bad += !SAME(R2[a][l], R[a][l]);                                          \
    }
#ifndef __FAST_MATH__
STRESS_TEST(2, f32, float, fixed_corotated, ROT_POLAR2)
STRESS_TEST(2, f64, double, fixed_corotated, ROT_POLAR2)
STRESS_TEST(2, f32, float, neohookean, ROT_GIVEN)
STRESS_TEST(2, f64, double, neohookean, ROT_GIVEN)
STRESS_TEST(3, f32, float, fixed_corotated, ROT_SVD3)
STRESS_TEST(3, f64, double, fixed_corotated, ROT_SVD3)
STRESS_TEST(3, f32, float, neohookean, ROT_GIVEN)
STRESS_TEST(3, f64, double, neohookean, ROT_GIVEN)
#endif

/* which lane code this build runs (printed), and that AVX (AVX2 or AVX-512) builds run the stencils
   over vector groups (cpu_lanes.j2 >>vgroup), 512 bits wide with AVX-512 (>>vgroup_512): with
   AVX-512 they were once off, and the 8k cubes ran 1.2-1.4x slower on an Intel Xeon without them
   (bench/RESULTS.md) */
#if CQ__CPU_VGROUP
#  define GROUPS (CQ__VG_W_f64 == 8 ? "on, 512 bits" : "on, 256 bits")
#else
#  define GROUPS "off"
#endif
TEST(lane_groups)
{
    printf("    lanes: f32 %s, f64 %s; vector groups %s%s\n", CQ__LANES_ON_f32 ? "on" : "off", CQ__LANES_ON_f64 ? "on" : "off",
           GROUPS,
#if defined(__AVX512F__)
           " (AVX-512)"
#elif defined(__AVX2__)
           " (AVX2)"
#elif defined(__AVX__)
           " (AVX)"
#else
           ""
#endif
           );
#if defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
    CHECK(CQ__CPU_VGROUP == CQ__CPU_V4, "an AVX build with GNU vectors %d runs vector groups %d", CQ__CPU_V4, CQ__CPU_VGROUP);
#endif
#if defined(__AVX512F__) && CQ__CPU_VGROUP
    CHECK(CQ__VG_W_f64 == (CQ__VG_512 ? 8 : 4) && CQ__VG_W_f32 == 2 * CQ__VG_W_f64, "AVX-512 groups of %d doubles, %d floats",
          CQ__VG_W_f64, CQ__VG_W_f32);
#endif
}

#ifdef __FAST_MATH__
RUN_TESTS(CASE(lane_groups), CASE(lanes_2d_f32), CASE(lanes_3d_f32), CASE(lanes_2d_f64), CASE(lanes_3d_f64))
#else
RUN_TESTS(CASE(lane_groups), CASE(lanes_2d_f32), CASE(lanes_3d_f32), CASE(lanes_2d_f64), CASE(lanes_3d_f64), CASE(svd_lanes_f32), CASE(svd_lanes_f64),
          CASE(stress_lanes_2d_fixed_corotated_f32), CASE(stress_lanes_2d_fixed_corotated_f64),
          CASE(stress_lanes_2d_neohookean_f32), CASE(stress_lanes_2d_neohookean_f64),
          CASE(stress_lanes_3d_fixed_corotated_f32), CASE(stress_lanes_3d_fixed_corotated_f64),
          CASE(stress_lanes_3d_neohookean_f32), CASE(stress_lanes_3d_neohookean_f64))
#endif
