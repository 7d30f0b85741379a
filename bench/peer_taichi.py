#!/usr/bin/env python3
"""Peer benchmark: Taichi (pip package `taichi`, CPU or CUDA backend) MLS-MPM on bench/bench.c's scenes.

The falling cube/block scenes of [ChainQueen] Table II, exactly as bench/bench.c sets them up:
  domain [0, 1)^dim, grid of `res` nodes per axis at i*dx, dx = 1/res; a cube of side^dim
  particles, 2 per cell per axis (spacing h = dx/2), particle i at lo + (i + 0.5) h with
  lo = 0.5 - side*h/2 in x (and z) and lo = 8h in y; particle volume (dx/2)^dim, density 1
  (mass = volume); E = 1e4, nu = 0.3 (Lame mu = E/(2(1+nu)), lambda = E nu/((1+nu)(1-2nu)));
  dt = 0.5 * dx * 0.01 (half the stability limit dx sqrt(rho/E)); gravity -9.8 along y;
  walls: every node within 3 nodes of a face is sticky (its velocity is zeroed after the grid
  update v = p/m + dt g).  Scenes: 2D 80x80 on 128^2, 3D 20^3 and 40^3 on 64^3 (and, on CUDA,
  80^3 on 128^3 and 160^3 on 256^3), fixed corotated or NeoHookean, float32 or float64.

The Taichi code is written the way Taichi's own examples write it:
  - forward without tape (mpm99 / mpm3d style): one state per particle, updated in place;
    per substep four kernels: clear grid, P2G (F <- (I + dt C) F, Kirchhoff stress
    tau = P F^T, APIC/MLS affine momentum with quadratic B-spline weights, atomic scatter),
    grid update (v = p/m + dt g, sticky walls), G2P (v, C = 4/dx^2 sum w v (x_i - x_p)^T,
    x += dt v).  Fixed corotated: tau = 2 mu (F - R) F^T + lambda J (J - 1) I with
    R from ti.polar_decompose (closed form in 2D, Sifakis SVD in 3D); NeoHookean:
    tau = mu (F F^T - I) + lambda log(J) I.  Material constants are compile-time constants
    (chainqueen.h reads per-particle mass, volume, E and nu and differentiates them too).
  - forward with tape + backward (diffmpm style): x, v, C, F stored for every step in fields
    of shape (T+1, n) with gradients; one step is `advance(s)` (clear grid, F_{s+1} =
    (I + dt C_s) F_s, P2G(s), grid update, G2P(s)), a @ti.ad.grad_replaced function whose
    gradient (@ti.ad.grad_for) recomputes the grid of step s (clear, P2G, grid update) and then
    runs g2p.grad, grid_op.grad, p2g.grad and the F update's grad.
    The loss is L = mean over particles of the coordinate sums of x_T (so dL/dx_T = 1/n, the
    seed bench.c gives cq_sim_backward); the T steps and the loss kernel run inside
    `with ti.ad.Tape(loss)`, whose exit runs the reverse pass.  Backward time = Tape's
    gradient clearing on entry + the reverse pass on exit (the forward inside the tape is
    the "fwd" time).  Unlike chainqueen.h's checkpointing (which recomputes every segment),
    this keeps every step's particle state: memory grows with T (tape MB column).
    3D fixed corotated: Taichi cannot reverse-differentiate its 3D SVD (ti.svd / ti.polar_decompose:
    "auto_diff.cpp: Not supported"), so the taped path computes R = U V^T in a kernel of its own
    (ti.svd) and gives it a hand-written adjoint (PlasticineLab does the same for its SVD).
    `--gradcheck` compares the reverse pass with central finite differences (float64, 20 steps,
    a random weighted sum of x_T as the loss, random directions in x0, v0 and F0).

Timing, as bench.c: 2 warm-up substeps (and one warm-up tape over 2 steps, so every kernel and
its gradient is JIT-compiled before any timing), then substeps until at least --target seconds
(default 1.0; --quick 0.05; on CUDA the clock is read, and the device synchronised, after batches
of up to 64 substeps, where chainqueen.h's API reads a status word back every substep); the taped
forward runs T steps: T = ceil(budget / particles), budget 1.5e6 particle-steps (CUDA 3e7; the
same with --quick), at least 15 like bench.c's 1.5 checkpoint segments, at most what --tape-gb
allows; --tape-steps sets T.  T depends on the scene only, not on a measured time,
because the per-step fields' shape is part of what Taichi compiles: another T would recompile the
taped kernels and their gradients (minutes for a 3D scene) instead of loading them from the
offline cache (--cache-dir).  The cache is also per thread count (cpu_max_num_threads).
CPU time per wall second is measured as bench.c does (a note says when the cores were busy).

Output: the same markdown table as bench.c (same columns, so both parse alike).
`--check N` instead runs N substeps of the untaped forward per scene and prints
  com | scene | material | particles | grid | precision | N | y(0) | y(N/4) | y(N/2) | y(3N/4) | y(N) |
(mean particle height: the centre of mass, all masses equal), as `./build/bench com=N` does.
`--side-by-side CQ TI` joins a chainqueen output file and a Taichi one (tables, or com lines)
and prints the ratios (bench/peers.sh uses it).  CQ and TI may each name several files,
comma-separated: rounds of the same run, each time then the median over the rounds, and a line
with each round's own verdict.

Each scene runs in a child process (ti.init per scene: precision, threads, arch).

Usage:
    python3 bench/peer_taichi.py --arch cpu --threads 1 [--quick] [--scenes '3d-20-*,2d-*']
    python3 bench/peer_taichi.py --check 1600 --quick
Scene ids: 2d-80-fc-f32, 2d-80-fc-f64, 3d-20-fc-f32, 3d-20-fc-f64, 3d-20-nh-f32, 3d-20-nh-f64,
3d-40-fc-f32, 3d-40-fc-f64 (CPU and CUDA); 3d-80-fc-f32, 3d-80-fc-f64, 3d-80-nh-f32,
3d-160-fc-f32, 3d-160-fc-f64 (CUDA only).  --scenes takes comma-separated fnmatch patterns.
"""
import argparse
import fnmatch
import json
import math
import os
import re
import subprocess
import sys
import time

# (dim, side, res, material, precision, quick, gpu_only): bench/bench.c's `scenes` table
SCENES = [
    (2, 80, 128, "fc", "f32", 1, 0),
    (2, 80, 128, "fc", "f64", 1, 0),
    (3, 20, 64, "fc", "f32", 1, 0),
    (3, 20, 64, "fc", "f64", 0, 0),
    (3, 20, 64, "nh", "f32", 0, 0),
    (3, 20, 64, "nh", "f64", 1, 0),
    (3, 40, 64, "fc", "f32", 0, 0),
    (3, 40, 64, "fc", "f64", 0, 0),
    (3, 80, 128, "fc", "f32", 0, 1),
    (3, 80, 128, "fc", "f64", 0, 1),
    (3, 80, 128, "nh", "f32", 0, 1),
    (3, 160, 256, "fc", "f32", 0, 1),
    (3, 160, 256, "fc", "f64", 0, 1),
]
MATERIAL_NAME = {"fc": "fixed corotated", "nh": "NeoHookean"}
WALL = 3            # sticky wall thickness in nodes (chainqueen.h's default wall_cells)
GRAVITY = -9.8
YOUNGS, POISSON = 1e4, 0.3


def scene_id(s):
    return "%dd-%d-%s-%s" % (s[0], s[1], s[3], s[4])


def row_prefix(s):
    dim, side, res, mat, prec = s[:5]
    n = side ** dim
    return "| %s | %s | %d | %d^%d | %s |" % ("2D block" if dim == 2 else "3D cube", MATERIAL_NAME[mat], n,
                                             res, dim, prec)


# ---------------------------------------------------------------------------------------------
# child: one scene in its own process
# ---------------------------------------------------------------------------------------------
def build(sc, args, T=None):
    """Fields and kernels of scene sc.  T: allocate the taped (per-step) fields for T steps."""
    import taichi as ti
    dim, side, res, mat, prec = sc[:5]
    real = ti.f32 if prec == "f32" else ti.f64
    n = side ** dim
    dx = 1.0 / res
    inv_dx = float(res)
    dt = 0.5 * dx * 0.01
    p_vol = (0.5 * dx) ** dim
    p_mass = p_vol * 1.0
    mu = YOUNGS / (2 * (1 + POISSON))
    lam = YOUNGS * POISSON / ((1 + POISSON) * (1 - 2 * POISSON))
    neo = mat == "nh"
    inv_n = 1.0 / n
    stencil = tuple([3] * dim)

    @ti.func
    def kirchhoff(F):
        """tau = P(F) F^T"""
        I = ti.Matrix.identity(real, dim)
        J = F.determinant()
        tau = ti.Matrix.zero(real, dim, dim)
        if ti.static(neo):
            tau = mu * (F @ F.transpose() - I) + lam * ti.log(J) * I
        else:
            R, S = ti.polar_decompose(F, real)
            tau = 2 * mu * (F - R) @ F.transpose() + lam * J * (J - 1) * I
        return tau

    ns = type("Sim", (), {})()
    ns.n, ns.dim, ns.real, ns.ti = n, dim, real, ti

    # ---- forward without tape (mpm99 / mpm3d) ----
    x = ti.Vector.field(dim, real, shape=n)
    v = ti.Vector.field(dim, real, shape=n)
    C = ti.Matrix.field(dim, dim, real, shape=n)
    F = ti.Matrix.field(dim, dim, real, shape=n)
    grid_v = ti.Vector.field(dim, real, shape=(res,) * dim)
    grid_m = ti.field(real, shape=(res,) * dim)

    @ti.kernel
    def init(xs: ti.types.ndarray()):
        for p in range(n):
            for a in ti.static(range(dim)):
                x[p][a] = xs[p, a]
            v[p] = ti.Vector.zero(real, dim)
            C[p] = ti.Matrix.zero(real, dim, dim)
            F[p] = ti.Matrix.identity(real, dim)

    @ti.kernel
    def clear_grid():
        for I in ti.grouped(grid_m):
            grid_v[I] = ti.Vector.zero(real, dim)
            grid_m[I] = 0

    @ti.kernel
    def p2g():
        for p in x:
            Xp = x[p] * inv_dx
            base = (Xp - 0.5).cast(int)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_F = (ti.Matrix.identity(real, dim) + dt * C[p]) @ F[p]
            F[p] = new_F
            stress = (-dt * p_vol * 4 * inv_dx * inv_dx) * kirchhoff(new_F)
            affine = stress + p_mass * C[p]
            for offset in ti.static(ti.grouped(ti.ndrange(*stencil))):
                dpos = (offset - fx) * dx
                weight = ti.cast(1.0, real)
                for d in ti.static(range(dim)):
                    weight *= w[offset[d]][d]
                grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
                grid_m[base + offset] += weight * p_mass

    @ti.kernel
    def grid_op():
        for I in ti.grouped(grid_m):
            m = grid_m[I]
            if m > 0:
                gv = grid_v[I] / m
                gv[1] += dt * GRAVITY
                wall = 0
                for d in ti.static(range(dim)):
                    if I[d] < WALL or I[d] >= res - WALL:
                        wall = 1
                if wall:
                    gv = ti.Vector.zero(real, dim)
                grid_v[I] = gv

    @ti.kernel
    def g2p():
        for p in x:
            Xp = x[p] * inv_dx
            base = (Xp - 0.5).cast(int)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = ti.Vector.zero(real, dim)
            new_C = ti.Matrix.zero(real, dim, dim)
            for offset in ti.static(ti.grouped(ti.ndrange(*stencil))):
                dpos = offset - fx
                weight = ti.cast(1.0, real)
                for d in ti.static(range(dim)):
                    weight *= w[offset[d]][d]
                g_v = grid_v[base + offset]
                new_v += weight * g_v
                new_C += 4 * inv_dx * weight * g_v.outer_product(dpos)
            v[p] = new_v
            C[p] = new_C
            x[p] += dt * new_v

    def substep():
        clear_grid()
        p2g()
        grid_op()
        g2p()

    ns.x, ns.init, ns.substep = x, init, substep

    @ti.kernel
    def mean_y() -> ti.f64:
        s = ti.cast(0.0, ti.f64)
        for p in x:
            s += ti.cast(x[p][1], ti.f64)
        return s * inv_n
    ns.mean_y = mean_y

    if T is None:
        return ns

    # ---- taped forward + backward (diffmpm) ----
    xs = ti.Vector.field(dim, real, shape=(T + 1, n), needs_grad=True)
    vs = ti.Vector.field(dim, real, shape=(T + 1, n), needs_grad=True)
    Cs = ti.Matrix.field(dim, dim, real, shape=(T + 1, n), needs_grad=True)
    Fs = ti.Matrix.field(dim, dim, real, shape=(T + 1, n), needs_grad=True)
    gv_in = ti.Vector.field(dim, real, shape=(res,) * dim, needs_grad=True)
    gm_in = ti.field(real, shape=(res,) * dim, needs_grad=True)
    gv_out = ti.Vector.field(dim, real, shape=(res,) * dim, needs_grad=True)
    loss = ti.field(real, shape=(), needs_grad=True)

    @ti.kernel
    def init_t(xsrc: ti.types.ndarray()):
        for p in range(n):
            for a in ti.static(range(dim)):
                xs[0, p][a] = xsrc[p, a]
            vs[0, p] = ti.Vector.zero(real, dim)
            Cs[0, p] = ti.Matrix.zero(real, dim, dim)
            Fs[0, p] = ti.Matrix.identity(real, dim)

    @ti.kernel
    def clear_grid_t():
        for I in ti.grouped(gm_in):
            gv_in[I] = ti.Vector.zero(real, dim)
            gm_in[I] = 0
            gv_out[I] = ti.Vector.zero(real, dim)

    @ti.kernel
    def clear_grid_all():   # values and adjoints (diffmpm's clear_grid)
        for I in ti.grouped(gm_in):
            gv_in[I] = ti.Vector.zero(real, dim)
            gm_in[I] = 0
            gv_out[I] = ti.Vector.zero(real, dim)
            gv_in.grad[I] = ti.Vector.zero(real, dim)
            gm_in.grad[I] = 0
            gv_out.grad[I] = ti.Vector.zero(real, dim)

    # 3D fixed corotated: Taichi's 3D SVD (Sifakis, bit tricks) has no reverse-mode autodiff
    # ("auto_diff.cpp: Not supported"), so, as PlasticineLab does for its SVD, the rotation is
    # computed by its own kernel (R = U V^T from ti.svd into a per-particle field) whose gradient
    # is hand-written: dL/dF = U M V^T, M_ij = (A_ij - A_ji) / (s_i + s_j), A = U^T (dL/dR) V
    # (well conditioned at F = I, unlike the U and V adjoints).  2D and NeoHookean: inline.
    split_polar = dim == 3 and not neo
    if split_polar:
        Rf = ti.Matrix.field(dim, dim, real, shape=n, needs_grad=True)
        Uf = ti.Matrix.field(dim, dim, real, shape=n)
        Vf = ti.Matrix.field(dim, dim, real, shape=n)
        sigf = ti.Vector.field(dim, real, shape=n)
    else:
        Rf = Uf = Vf = sigf = None

    @ti.kernel
    def update_F(s: ti.i32):
        for p in range(n):
            Fs[s + 1, p] = (ti.Matrix.identity(real, dim) + dt * Cs[s, p]) @ Fs[s, p]

    @ti.kernel
    def polar_k(s: ti.i32):
        for p in range(n):
            U, sig, V = ti.svd(Fs[s + 1, p], real)
            Uf[p] = U
            Vf[p] = V
            for a in ti.static(range(dim)):
                sigf[p][a] = sig[a, a]
            Rf[p] = U @ V.transpose()
            Rf.grad[p] = ti.Matrix.zero(real, dim, dim)

    @ti.kernel
    def polar_grad_k(s: ti.i32):
        for p in range(n):
            U, V, sg = Uf[p], Vf[p], sigf[p]
            A = U.transpose() @ Rf.grad[p] @ V
            M = ti.Matrix.zero(real, dim, dim)
            for i, j in ti.static(ti.ndrange(dim, dim)):
                if ti.static(i != j):
                    M[i, j] = (A[i, j] - A[j, i]) / ti.max(sg[i] + sg[j], 1e-6)
            Fs.grad[s + 1, p] += U @ M @ V.transpose()

    @ti.func
    def kirchhoff_t(F, p):
        tau = ti.Matrix.zero(real, dim, dim)
        if ti.static(split_polar):
            J = F.determinant()
            tau = 2 * mu * (F - Rf[p]) @ F.transpose() + lam * J * (J - 1) * ti.Matrix.identity(real, dim)
        else:
            tau = kirchhoff(F)
        return tau

    @ti.kernel
    def p2g_t(s: ti.i32):
        for p in range(n):
            Xp = xs[s, p] * inv_dx
            base = (Xp - 0.5).cast(int)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            stress = (-dt * p_vol * 4 * inv_dx * inv_dx) * kirchhoff_t(Fs[s + 1, p], p)
            affine = stress + p_mass * Cs[s, p]
            for offset in ti.static(ti.grouped(ti.ndrange(*stencil))):
                dpos = (offset - fx) * dx
                weight = ti.cast(1.0, real)
                for d in ti.static(range(dim)):
                    weight *= w[offset[d]][d]
                gv_in[base + offset] += weight * (p_mass * vs[s, p] + affine @ dpos)
                gm_in[base + offset] += weight * p_mass

    @ti.kernel
    def grid_op_t():
        for I in ti.grouped(gm_in):
            m = gm_in[I]
            if m > 0:
                gv = gv_in[I] / m
                gv[1] += dt * GRAVITY
                wall = 0
                for d in ti.static(range(dim)):
                    if I[d] < WALL or I[d] >= res - WALL:
                        wall = 1
                if wall:
                    gv = ti.Vector.zero(real, dim)
                gv_out[I] = gv

    @ti.kernel
    def g2p_t(s: ti.i32):
        for p in range(n):
            Xp = xs[s, p] * inv_dx
            base = (Xp - 0.5).cast(int)
            fx = Xp - base
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = ti.Vector.zero(real, dim)
            new_C = ti.Matrix.zero(real, dim, dim)
            for offset in ti.static(ti.grouped(ti.ndrange(*stencil))):
                dpos = offset - fx
                weight = ti.cast(1.0, real)
                for d in ti.static(range(dim)):
                    weight *= w[offset[d]][d]
                g_v = gv_out[base + offset]
                new_v += weight * g_v
                new_C += 4 * inv_dx * weight * g_v.outer_product(dpos)
            vs[s + 1, p] = new_v
            Cs[s + 1, p] = new_C
            xs[s + 1, p] = xs[s, p] + dt * new_v

    @ti.kernel
    def compute_loss(s: ti.i32):
        for p in range(n):
            loss[None] += xs[s, p].sum() * inv_n

    @ti.ad.grad_replaced
    def advance(s):
        clear_grid_t()
        update_F(s)
        if split_polar:
            polar_k(s)
        p2g_t(s)
        grid_op_t()
        g2p_t(s)

    @ti.ad.grad_for(advance)
    def advance_grad(s):
        clear_grid_all()
        if split_polar:
            polar_k(s)          # recomputes R of step s (and zeroes its adjoint)
        p2g_t(s)
        grid_op_t()
        g2p_t.grad(s)
        grid_op_t.grad()
        p2g_t.grad(s)
        if split_polar:
            polar_grad_k(s)     # the hand-written adjoint (adds to dL/dF of step s + 1)
        update_F.grad(s)

    @ti.kernel
    def grad0_finite() -> ti.i32:
        bad = 0
        for p in range(n):
            for a in ti.static(range(dim)):
                g = xs.grad[0, p][a]
                if not (g - g == 0):
                    bad += 1
        return bad

    ns.init_t, ns.advance, ns.compute_loss, ns.loss = init_t, advance, compute_loss, loss
    ns.grad0_finite = grad0_finite
    ns.xs, ns.vs, ns.Cs, ns.Fs = xs, vs, Cs, Fs
    real_bytes = 4 if prec == "f32" else 8
    ns.tape_bytes = 2 * real_bytes * ((T + 1) * n * (2 * dim + 2 * dim * dim) + res ** dim * (2 * dim + 1) + 1)
    return ns


def cube_positions(sc):
    import numpy as np
    dim, side, res = sc[:3]
    h = 0.5 / res
    lo = [0.5 - side * h / 2] * 3
    lo[1] = 8 * h
    idx = np.indices((side,) * dim).reshape(dim, -1).T   # i (x) slowest, as bench.c
    return (np.array(lo[:dim]) + (idx + 0.5) * h).astype(np.float64)


def init_taichi(sc, args):
    import taichi as ti
    kw = dict(arch=ti.cuda if args.arch == "cuda" else ti.cpu,
              default_fp=ti.f32 if sc[4] == "f32" else ti.f64,
              log_level=ti.WARN, offline_cache=True)
    if args.arch == "cpu" and args.threads > 0:
        kw["cpu_max_num_threads"] = args.threads
    if args.cache_dir:
        kw["offline_cache_file_path"] = args.cache_dir
    ti.init(**kw)
    arch = ti.lang.impl.current_cfg().arch
    if (args.arch == "cuda") != (arch == ti.cuda):
        raise SystemExit("taichi: asked for arch=%s, got %s" % (args.arch, arch))
    return ti


def tape_steps(sc, args):
    if args.tape_steps > 0:
        return args.tape_steps
    dim, n = sc[0], sc[1] ** sc[0]
    min_t = 15
    budget = 3e7 if args.arch == "cuda" else 1.5e6   # the same with --quick: one compiled tape per scene
    per_step = 2 * (4 if sc[4] == "f32" else 8) * n * (2 * dim + 2 * dim * dim)
    return max(min_t, min(int(math.ceil(budget / n)), int(args.tape_gb * 1e9 / per_step) - 1, 100000))


def gradcheck(sc, sim0, X0, ti):
    """--gradcheck: reverse pass vs central differences, loss sum(W * x_T), T = 20 steps, from a
    sheared initial velocity and a perturbed F0 (so that the stress and its rotation matter)."""
    import numpy as np
    T, dim = 20, sc[0]
    sim = build(sc, None, T)
    n = len(X0)
    rng = np.random.default_rng(1)
    V0 = np.zeros_like(X0)
    V0[:, 0] = 3.0 * (X0[:, 1] - X0[:, 1].mean())
    V0[:, 1] = -0.5
    F0 = np.tile(np.eye(dim), (n, 1, 1)) + 0.05 * rng.standard_normal((n, dim, dim))
    W = rng.standard_normal(X0.shape)
    cast = (lambda a: a.astype(np.float32)) if sc[4] == "f32" else (lambda a: a)

    def run(x0, v0, f0, grad=False):
        sim.init_t(cast(x0))
        a = sim.vs.to_numpy(); a[0] = v0; sim.vs.from_numpy(cast(a))
        a = sim.Fs.to_numpy(); a[0] = f0; sim.Fs.from_numpy(cast(a))
        for s in range(T):
            sim.advance(s)
        L = float((W * sim.xs.to_numpy()[T]).sum())
        if grad:
            ti.ad.clear_all_gradients()
            g = sim.xs.grad.to_numpy(); g[T] = W; sim.xs.grad.from_numpy(cast(g))
            for s in reversed(range(T)):
                sim.advance.grad(s)
            return sim.xs.grad.to_numpy()[0], sim.vs.grad.to_numpy()[0], sim.Fs.grad.to_numpy()[0]
        return L

    grads = dict(zip("xvF", run(X0, V0, F0, True)))
    worst = 0.0
    out = []
    for name, d in (("x", 1e-3 * rng.standard_normal(X0.shape)), ("v", rng.standard_normal(X0.shape)),
                    ("F", rng.standard_normal(F0.shape))):
        eps = 1e-4 if sc[4] == "f64" else 1e-2
        pert = lambda sg: (X0 + sg * eps * d if name == "x" else X0, V0 + sg * eps * d if name == "v" else V0,
                           F0 + sg * eps * d if name == "F" else F0)
        fd = (run(*pert(1)) - run(*pert(-1))) / (2 * eps)
        ad = float((grads[name] * d).sum())
        rel = abs(fd - ad) / max(abs(fd), 1e-30)
        worst = max(worst, rel)
        out.append("d/d%s0: fd %.9e reverse %.9e rel %.1e" % (name, fd, ad, rel))
    print("RESULT gradcheck %s: %s" % (scene_id(sc), "; ".join(out)), flush=True)
    if worst > (1e-4 if sc[4] == "f64" else 5e-2):
        sys.exit(1)


def run_child(args):
    import numpy as np
    sc = [s for s in SCENES if scene_id(s) == args.child][0]
    ti = init_taichi(sc, args)
    X0 = cube_positions(sc)
    sim = build(sc, args)
    n = sim.n
    X0r = X0.astype(np.float32) if sc[4] == "f32" else X0
    sim.init(X0r)

    if args.check:
        N = args.check
        ys = [sim.mean_y()]
        for k in range(1, 5):
            for _ in range(k * N // 4 - (k - 1) * N // 4):
                sim.substep()
            ys.append(sim.mean_y())
        print("RESULT com %s %d | %s |" % (row_prefix(sc), N, " | ".join("%.7f" % y for y in ys)), flush=True)
        return

    if args.gradcheck:
        return gradcheck(sc, sim, X0, ti)

    sync = ti.sync
    # forward, no tape: 2 warm-up substeps (JIT), then at least args.target seconds
    sim.substep(); sim.substep(); sync()
    wall = cpu = 0.0
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    batch = 1   # substeps between clock reads (CUDA: growing to 64, so launches queue up asynchronously)
    while True:
        for _ in range(batch):
            sim.substep()
        steps += batch
        sync()
        el = time.perf_counter() - t0
        if el >= args.target:
            break
        if args.arch == "cuda":
            batch = min(2 * batch, 64)
    ms = 1e3 * el / steps
    wall += el
    cpu += time.process_time() - c0

    # taped forward + backward over T steps (T from the scene only: see the module docstring)
    T = tape_steps(sc, args)
    sim = build(sc, args, T)
    # warm-up tape over 2 steps: compiles the taped kernels and their gradients
    sim.init_t(X0r)
    with ti.ad.Tape(loss=sim.loss):
        sim.advance(0)
        sim.advance(1)
        sim.compute_loss(2)
    sync()
    sim.init_t(X0r)
    sync()
    c0 = time.process_time()
    tc = time.perf_counter()
    with ti.ad.Tape(loss=sim.loss):   # entry clears every gradient: counted in the backward
        sync()
        tf0 = time.perf_counter()
        for s in range(T):
            sim.advance(s)
        sim.compute_loss(T)
        sync()
        tf1 = time.perf_counter()
    sync()
    tb1 = time.perf_counter()
    fwd_s = tf1 - tf0
    bwd_s = (tb1 - tf1) + (tf0 - tc)
    wall += tb1 - tc
    cpu += time.process_time() - c0
    bad = sim.grad0_finite()
    if bad:
        print("taichi %s: dL/dx0 not finite for %d components" % (scene_id(sc), bad), file=sys.stderr)
        sys.exit(1)
    res = dict(id=scene_id(sc), ms=ms, T=T, fwd_s=fwd_s, bwd_s=bwd_s, n=n, cpu_per_wall=cpu / wall,
               tape_mb=1e-6 * sim.tape_bytes, loss=float(sim.loss[None]))
    print("RESULT " + json.dumps(res), flush=True)


# ---------------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------------
def selected(args):
    pats = [p.strip() for p in args.scenes.split(",") if p.strip()] if args.scenes else ["*"]
    out = []
    for s in SCENES:
        if args.quick and not s[5] and not args.scenes:   # --scenes overrides the quick set
            continue
        if s[6] and args.arch != "cuda":
            continue
        if any(fnmatch.fnmatch(scene_id(s), p) for p in pats):
            out.append(s)
    return out


def taichi_version():
    r = subprocess.run([sys.executable, "-c", "import taichi; print('.'.join(map(str, taichi.__version__)))"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else "?"


def run_parent(args):
    scenes = selected(args)
    if not scenes:
        print("peer_taichi: no scene matches %r" % args.scenes, file=sys.stderr)
        return 2
    threads = args.threads if args.threads > 0 else os.cpu_count()
    ver = taichi_version()
    if not args.check and not args.gradcheck:
        print("taichi %s %s benchmark: %d thread%s (cpu_max_num_threads), substeps = 1; forward >= %.2f s per "
              "scene, then a taped forward of T steps (every step's state stored) and its backward (ti.ad.Tape)"
              % (ver, args.arch.upper(), threads, "" if threads == 1 else "s", args.target))
        print("same scenes as bench.c: domain [0, 1)^dim, dx = 1/grid, 3-node sticky walls; E = 1e4, nu = 0.3, "
              "density 1, dt = half the stability limit; tape MB = per-step fields and grid, values + grads\n")
        print("| scene | material | particles | grid | precision | ms/substep | particle-steps/s "
              "| T | fwd p-steps/s | bwd p-steps/s | bwd/fwd | tape MB |")
        print("|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    failures = busy = 0
    for sc in scenes:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", scene_id(sc), "--arch", args.arch,
               "--threads", str(args.threads), "--target", str(args.target), "--tape-steps", str(args.tape_steps),
               "--tape-gb", str(args.tape_gb), "--check", str(args.check)]
        if args.quick:
            cmd.append("--quick")
        if args.gradcheck:
            cmd.append("--gradcheck")
        if args.cache_dir:
            cmd += ["--cache-dir", args.cache_dir]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        took = time.perf_counter() - t0
        res = None
        for line in r.stdout.splitlines():
            if line.startswith("RESULT "):
                res = line[len("RESULT "):]
            elif args.verbose:
                print(line, file=sys.stderr)
        if r.returncode != 0 or res is None:
            failures += 1
            print("taichi %s FAILED rc=%d" % (scene_id(sc), r.returncode), flush=True)
            print("\n".join(r.stdout.splitlines()[-30:]), file=sys.stderr)
            continue
        if args.check or args.gradcheck:
            print(res, flush=True)
            continue
        d = json.loads(res)
        if args.arch == "cpu" and d["cpu_per_wall"] < 0.8 * threads:
            busy = 1
        n, T = d["n"], d["T"]
        print("%s %.3f | %.3g | %d | %.3g | %.3g | %.2f | %.1f |" % (
            row_prefix(sc), d["ms"], n / (d["ms"] * 1e-3), T, n * T / d["fwd_s"], n * T / d["bwd_s"],
            d["bwd_s"] / d["fwd_s"], d["tape_mb"]), flush=True)
        if args.verbose:
            print("  (%s: %.1f s in the child incl. import and JIT; cpu/wall %.2f)" % (scene_id(sc), took,
                  d["cpu_per_wall"]), file=sys.stderr)
    if busy:
        print("\nnote: some scenes got less than 80%% of the %d core%s asked for (a busy machine, or Taichi's "
              "serial parts: kernel launches from Python, small kernels)" % (threads, "" if threads == 1 else "s"))
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# side by side (bench/peers.sh)
# ---------------------------------------------------------------------------------------------
def parse_rows(path):
    """Markdown rows of a bench.c / peer_taichi.py table, and `com` lines, keyed by scene."""
    rows, coms = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("com |"):
                c = [t.strip() for t in line[4:].strip().strip("|").split("|")]
                coms[(c[0], c[1], int(c[2]), c[4])] = (c[3], int(c[5]), [float(y) for y in c[6:11]])
                continue
            if not line.startswith("| 2D") and not line.startswith("| 3D"):
                continue
            c = [t.strip() for t in line.strip("|").split("|")]
            try:
                rows[(c[0], c[1], int(c[2]), c[4])] = dict(grid=c[3], ms=float(c[5]), T=int(c[7]),
                                                           fwd=float(c[8]), bwd=float(c[9]))
            except (ValueError, IndexError):
                continue
    return rows, coms


def checkpoint_every(path):
    """chainqueen.h's checkpoint_every, from its bench's header line (None if not found)."""
    with open(path) as f:
        for line in f:
            m = re.search(r"checkpoint_every = (\d+)", line)
            if m:
                return int(m.group(1))
    return None


def median(xs):
    xs = sorted(xs)
    h = len(xs) // 2
    return xs[h] if len(xs) % 2 else 0.5 * (xs[h - 1] + xs[h])


def merge_rounds(paths):
    """Rows of several runs of the same bench (rounds), each field the median over the rounds that
    have the scene; com lines from the first file that has them; the rounds' rows, for per-round
    ratios."""
    runs = [parse_rows(p) for p in paths]
    rows, coms = {}, {}
    for _, c in runs:
        for k, v in c.items():
            coms.setdefault(k, v)
    keys = []
    for r, _ in runs:
        keys += [k for k in r if k not in keys]
    for k in keys:
        have = [r[k] for r, _ in runs if k in r]
        rows[k] = dict(grid=have[0]["grid"], T=have[0]["T"],
                       **{f: median([h[f] for h in have]) for f in ("ms", "fwd", "bwd")})
    return rows, coms, [r for r, _ in runs]


def verdict_ratios(cq, tt):
    """forward and backward ratios (Taichi / chainqueen.h) of the scenes both ran"""
    fr, br = [], []
    for k in cq:
        if k in tt:
            fr.append(tt[k]["ms"] / cq[k]["ms"])
            br.append(cq[k]["bwd"] / tt[k]["bwd"])
    return fr, br


def side_by_side(args):
    # each of the two arguments: one output file, or several (rounds, comma-separated)
    cq_paths, ti_paths = (a.split(",") for a in args.side_by_side)
    cq_path = cq_paths[0]
    cq, cq_com, cq_rounds = merge_rounds(cq_paths)
    tt, ti_com, ti_rounds = merge_rounds(ti_paths)
    label = " (" + args.label + ")" if args.label else ""
    rc = 0
    if cq_com or ti_com:
        print("Same physics? centre-of-mass height (mean particle y) over N substeps, chainqueen.h vs Taichi%s"
              % label)
        print("| scene | material | particles | precision | N | y(0) | cq y(N/2) | taichi y(N/2) | cq y(N) "
              "| taichi y(N) | max drop | max diff / max drop |")
        print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        both = [k for k in cq_com if k in ti_com]
        for k in both:
            (_, N, a), (_, N2, b) = cq_com[k], ti_com[k]
            drop = a[0] - min(a)
            diff = max(abs(p - q) for p, q in zip(a, b)) / drop if drop > 0 else float("inf")
            ok = N == N2 and diff <= args.tolerance
            rc |= 0 if ok else 1
            print("| %s | %s | %d | %s | %d | %.6f | %.6f | %.6f | %.6f | %.6f | %.6f | %.3f%%%s |" % (
                k[0], k[1], k[2], k[3], N, a[0], a[2], b[2], a[4], b[4], drop, 100 * diff,
                "" if ok else " MISMATCH"))
        if not both:
            rc = 1
        print("check: %s (the two trajectories, sampled at 0, N/4, N/2, 3N/4, N, within %.0f%% of the largest "
              "drop of the centre of mass)" % ("PASS" if rc == 0 else "FAIL", 100 * args.tolerance))
        return rc
    nr = max(len(cq_rounds), len(ti_rounds))
    print("ms per substep (particle-steps/s = particles / that); ratio = Taichi / chainqueen.h (> 1: chainqueen.h "
          "faster)%s%s" % (label, "" if nr == 1 else "; each time the median of %d rounds, the two run by turns"
                           % nr))
    print("| scene | material | particles | precision | fwd cq | fwd taichi | fwd ratio | taped fwd cq "
          "| taped fwd taichi | taped ratio | bwd cq | bwd taichi | bwd ratio | T cq / taichi |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    fr, br = verdict_ratios(cq, tt)
    keys = list(cq) + [k for k in tt if k not in cq]
    for k in keys:
        a, b = cq.get(k), tt.get(k)
        cell = lambda r, f: ("%.3f" % (1e3 * k[2] / r[f] if f != "ms" else r[f])) if r else "-"
        rat = lambda f: (("%.2f" % ((1e3 * k[2] / b[f]) / (1e3 * k[2] / a[f]) if f != "ms" else b[f] / a[f]))
                         if a and b else "-")
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |" % (
            k[0], k[1], k[2], k[3], cell(a, "ms"), cell(b, "ms"), rat("ms"), cell(a, "fwd"), cell(b, "fwd"),
            rat("fwd"), cell(a, "bwd"), cell(b, "bwd"), rat("bwd"), a["T"] if a else "-", b["T"] if b else "-"))
    if fr:
        ck = checkpoint_every(cq_path)
        ours = ("chainqueen.h's keeps every step (checkpoint_every = 1), as Taichi's tape does" if ck == 1 else
                "chainqueen.h's recomputes its checkpoint segments (checkpoint_every = %s)" % ck)
        print("fwd: untaped forward; taped fwd: the forward that records the tape (T substeps); bwd: the backward "
              "over those T substeps, per substep (%s; Taichi's recomputes each step's grid from the stored "
              "states)" % ours)
        met = min(fr) >= 2 and min(br) >= 2
        print("target chainqueen.h >= 2x Taichi on every scene%s: %s (ratios: forward %.2f-%.2f, backward %.2f-%.2f)"
              % ("" if ck in (None, 4, 10) else " (judged with the bench's default checkpoint_every = 10; this run: %d)"
                 % ck, "met" if met else "NOT met", min(fr), max(fr), min(br), max(br)))
        if nr > 1:   # each round alone (round i of chainqueen.h against round i of Taichi)
            per = []
            for a, b in zip(cq_rounds, ti_rounds):
                f, g = verdict_ratios(a, b)
                if f:
                    per.append("%s (forward %.2f-%.2f, backward %.2f-%.2f)" % (
                        "met" if min(f) >= 2 and min(g) >= 2 else "NOT met", min(f), max(f), min(g), max(g)))
            print("each round alone: " + "; ".join(per))
            # each side's best round per scene (least time, most particle-steps/s): on a shared VM
            # noise only adds time, and its slow spells come and go (bench/RESULTS.md, 2026-11-29:
            # this VM's two-thread speed switched between ~1.8x and ~1x one thread from run to run)
            f, g = verdict_ratios(best_of(cq_rounds), best_of(ti_rounds))
            if f:
                print("each side's best round: %s (forward %.2f-%.2f, backward %.2f-%.2f); the target is judged on the "
                      "medians above" % ("met" if min(f) >= 2 and min(g) >= 2 else "NOT met", min(f), max(f), min(g), max(g)))
    return 0


def best_of(rounds):
    """per scene, the least ms and the most fwd / bwd particle-steps/s over the rounds that ran it"""
    best = {}
    for r in rounds:
        for k, v in r.items():
            b = best.setdefault(k, dict(v))
            b["ms"] = min(b["ms"], v["ms"])
            b["fwd"] = max(b["fwd"], v["fwd"])
            b["bwd"] = max(b["bwd"], v["bwd"])
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=0, help="cpu_max_num_threads (0: all cores)")
    p.add_argument("--quick", action="store_true",
                   help="bench.c's quick times, and its quick scene set unless --scenes is given")
    p.add_argument("--scenes", default="", help="comma-separated fnmatch patterns of scene ids")
    p.add_argument("--target", type=float, default=None, help="untaped forward seconds per scene")
    p.add_argument("--tape-steps", type=int, default=0, help="T of the taped run (0: from the scene)")
    p.add_argument("--tape-gb", type=float, default=None,
                   help="cap on the taped fields (values + grads), GB (default 2 on CPU, 16 on CUDA)")
    p.add_argument("--check", type=int, default=0, metavar="N",
                   help="no timing: centre-of-mass height after N substeps (0, N/4, ..., N)")
    p.add_argument("--gradcheck", action="store_true",
                   help="no timing: the reverse pass against central finite differences (use the f64 scenes)")
    p.add_argument("--cache-dir", default="", help="Taichi offline cache directory")
    p.add_argument("--verbose", action="store_true", help="show the children's output")
    p.add_argument("--side-by-side", nargs=2, metavar=("CQ", "TI"),
                   help="join two outputs (each: a file, or rounds as comma-separated files)")
    p.add_argument("--label", default="")
    p.add_argument("--tolerance", type=float, default=0.03, help="--side-by-side com check tolerance")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side_by_side:
        sys.exit(side_by_side(args))
    if args.target is None:
        args.target = 0.05 if args.quick else 1.0
    if args.tape_gb is None:
        args.tape_gb = 16.0 if args.arch == "cuda" else 2.0
    if args.child:
        run_child(args)
        return
    sys.exit(run_parent(args))


if __name__ == "__main__":
    main()
