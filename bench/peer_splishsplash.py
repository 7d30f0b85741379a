#!/usr/bin/env python3
"""Peer benchmark: SPlisHSPlasH (pip package `pysplishsplash`) DFSPH dam break, headless.

Builds a dam-break scene in SPlisHSPlasH's JSON scene format in a temporary directory, runs it
without GUI through the pysplishsplash API and prints one line per scene:

    splishsplash dam3d particles=N steps=S seconds=T particle_steps_per_s=X \
        avg_pressure_iters=Y avg_divergence_iters=Z [extra key=value fields]

Scene (lengths in units of a = --size, default 1 m):
  3D: closed box [0,4a] x [0,3a] x [0,a]; water column a wide, 2a high, full depth, lower left
  2D: closed box [0,4a] x [0,3a] ("sim2D"); water column a x 2a, lower left
  SPlisHSPlasH fills a block [lo,hi] with n = round((hi-lo)/d) - 1 particles per axis at
  lo + d, lo + 2d, ... (d = 2r). Like SPlisHSPlasH's own DamBreakModel.json, the water is kept
  two diameters (one empty lattice layer) away from the walls, where the boundary particles sit:
  block [d, a+d] x [d, 2a+d] x [d, a-d] -> particles at x in {2d..a}, y in {2d..2a},
  z in {2d..a-2d}: n x (2n+1) x (n-2) particles (2D: n x (2n+1)), d = a/(n+1).
  (With the water only one diameter from the wall boundary particles, the initial density near
  the walls/edges is up to 18 % too high and the first DFSPH step hits maxIterations=100 and
  shoots particles out at ~35 m/s in 3D.)  --particles picks n (and thus r); --radius overrides.
  DFSPH ("simulationMethod": 4), cubic spline kernel and gradient ("kernel": 0, "gradKernel": 0;
  SPlisHSPlasH's default would be the precomputed cubic spline, 4), support radius 4r,
  fixed time step ("cflMethod": 0, "timeStepSize": --dt, default 0.4*2r/sqrt(2g*2a) rounded
  down to 2 digits), maxError 0.1 % (density), maxErrorV 0.1 % (divergence; SPlisHSPlasH
  divides it by dt), minIterations 2,
  maxIterations(V) 100, divergence solver on, gravity (0,-9.81,0), rest density 1000,
  no viscosity / surface tension / vorticity (--viscosity > 0 adds "Standard" viscosity),
  boundary: Akinci et al. 2012 boundary particles sampled on the box surface
  ("boundaryHandlingMethod": 0; --boundary bender2019 uses volume maps instead), by default with
  SPlisHSPlasH's regular triangle sampling ("samplingMode": 1, spacing 1.5r, deterministic);
  --sampling poisson selects its default Poisson disk sampling (random: the boundary particle
  count changes from run to run).
  No exporters are active; the log file goes to the temporary directory.

Timing: SPlisHSPlasH initialises the boundary (surface sampling / volume maps) inside
SimulatorBase.runSimulation(), which then steps until "stopAt". The script therefore runs
steps+warmup steps with runSimulation() and a per-step callback (setTimeStepCB) that records
time.perf_counter() and the DFSPH iteration counts; the reported seconds cover only the last
`--steps` steps (callback after the warm-up steps to callback after the last step). The first
step (first neighbourhood search, z-sort, allocations) is warm-up by default.
avg_*_iters average the timed steps; the extra fields pressure_iters / divergence_iters /
step_ms list every step (iteration lists include the warm-up steps, step_ms only timed ones).
Iteration counts: TimeStepDFSPH.getNumIterations() (pressure) and
getValueUInt(TimeStepDFSPH.SOLVER_ITERATIONS_V) (divergence), read in the callback.

Each scene runs in a child process (SPlisHSPlasH keeps global singletons, and OMP_NUM_THREADS
has to be set before the library loads).

Usage:
    python3 bench/peer_splishsplash.py --dim 3 2 --particles 100000 --steps 20 --threads 1
    python3 bench/peer_splishsplash.py --dim 3 --particles 1000000 --steps 5

Install quirk (pysplishsplash 2.19.0 wheel, manylinux_2_28): `import pysplishsplash` segfaults in
__glDispatchInit when the system libGL.so.1 (not bundled by auditwheel) pulls in the system
libGLX/libGLdispatch next to the wheel's bundled copies. Loading the system libGLdispatch.so.0
with RTLD_GLOBAL before the import (done below) or LD_PRELOAD=libGLdispatch.so.0 avoids it.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

G = 9.81


def block_counts(dim, n):
    """Particle count of the a x 2a (x a) block with n particles along x."""
    return n * (2 * n + 1) * (n - 2 if dim == 3 else 1)


def choose_n(dim, particles):
    best = None
    for n in range(3, 2000):
        c = block_counts(dim, n)
        if best is None or abs(c - particles) < abs(block_counts(dim, best) - particles):
            best = n
        if c > particles:
            break
    return best


def build_scene(args, dim, radius):
    a = args.size
    d = 2.0 * radius
    unit_box = find_unit_box()
    if dim == 3:
        box_center, box_scale = [2 * a, 1.5 * a, 0.5 * a], [4 * a, 3 * a, a]
        block_start, block_end = [d, d, d], [a + d, 2 * a + d, a - d]
        map_res = [40, 30, 10]
    else:
        # 2D: SPlisHSPlasH samples the box's intersection with z = 0; the block needs a z extent
        # of a few diameters (it checks the z count before forcing z = 0).
        box_center, box_scale = [2 * a, 1.5 * a, 0.0], [4 * a, 3 * a, a]
        block_start, block_end = [d, d, -0.5 * a], [a + d, 2 * a + d, 0.5 * a]
        map_res = [40, 30, 10]
    boundary = {"akinci": 0, "koschier2017": 1, "bender2019": 2}[args.boundary]
    material = {"id": "Fluid", "density0": 1000.0, "viscosityMethod": 0,
                "surfaceTensionMethod": 0, "vorticityMethod": 0, "dragMethod": 0,
                "elasticityMethod": 0}
    if args.viscosity > 0:
        material["viscosityMethod"] = 1
        material["Standard viscosity"] = {"viscosity": args.viscosity}
    scene = {
        "Configuration": {
            "sim2D": dim == 2,
            "particleRadius": radius,
            "simulationMethod": 4,                 # DFSPH
            "kernel": 0, "gradKernel": 0,          # cubic spline (2D: cubic spline 2D)
            "gravitation": [0.0, -G, 0.0],
            "timeStepSize": args.dt,
            "cflMethod": 0,                        # no adaptive time stepping
            "cflMaxTimeStepSize": args.dt, "cflMinTimeStepSize": args.dt,
            "boundaryHandlingMethod": boundary,
            "enableZSort": not args.no_zsort,
            "stopAt": (args.steps + args.warmup - 0.5) * args.dt,  # runSimulation stops here
            "pause": False,
            "enablePartioExport": False, "enableVTKExport": False,
            "enableRigidBodyExport": False, "enableRigidBodyVTKExport": False,
            "enableStateExport": False,
            "DFSPH": {
                "minIterations": 2, "maxIterations": 100, "maxError": 0.1,
                "maxIterationsV": 100, "maxErrorV": 0.1,
                "enableDivergenceSolver": True,
            },
        },
        "Materials": [material],
        "RigidBodies": [{
            "geometryFile": unit_box,
            "translation": box_center, "rotationAxis": [1, 0, 0], "rotationAngle": 0,
            "scale": box_scale, "color": [0.1, 0.4, 0.6, 1.0],
            "isDynamic": False, "isWall": True,
            "mapInvert": True, "mapThickness": 0.0, "mapResolution": map_res,
            "samplingMode": 0 if args.sampling == "poisson" else 1,
        }],
        "FluidBlocks": [{
            "id": "Fluid", "denseMode": 0,
            "start": block_start, "end": block_end,
            "translation": [0.0, 0.0, 0.0], "scale": [1, 1, 1],
        }],
    }
    return scene


def find_unit_box():
    # the wheel installs data/models/UnitBox.obj next to the interpreter (<prefix>/bin/data)
    cands = [os.path.join(os.path.dirname(sys.executable), "data", "models", "UnitBox.obj"),
             os.path.join(sys.prefix, "bin", "data", "models", "UnitBox.obj")]
    for c in cands:
        if os.path.exists(c):
            return os.path.abspath(c)
    # fall back to writing our own unit box (outward normals)
    path = os.path.join(tempfile.gettempdir(), "peer_splishsplash_UnitBox.obj")
    v = [(x, y, z) for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)]
    idx = lambda x, y, z: 1 + (x > 0) * 4 + (y > 0) * 2 + (z > 0)
    faces = [(idx(-1, -1, -1), idx(-1, -1, 1), idx(-1, 1, 1), idx(-1, 1, -1)),
             (idx(1, -1, -1), idx(1, 1, -1), idx(1, 1, 1), idx(1, -1, 1)),
             (idx(-1, -1, -1), idx(1, -1, -1), idx(1, -1, 1), idx(-1, -1, 1)),
             (idx(-1, 1, -1), idx(-1, 1, 1), idx(1, 1, 1), idx(1, 1, -1)),
             (idx(-1, -1, -1), idx(-1, 1, -1), idx(1, 1, -1), idx(1, -1, -1)),
             (idx(-1, -1, 1), idx(1, -1, 1), idx(1, 1, 1), idx(-1, 1, 1))]
    with open(path, "w") as f:
        for p in v:
            f.write("v %g %g %g\n" % p)
        for q in faces:
            f.write("f %d %d %d\nf %d %d %d\n" % (q[0], q[1], q[2], q[0], q[2], q[3]))
    return path


def import_sph():
    import ctypes
    try:  # see module docstring: avoid the libGLdispatch double-load segfault
        ctypes.CDLL("libGLdispatch.so.0", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass
    import pysplishsplash as sph
    return sph


def run_child(args):
    dim = args.dim[0]
    if args.radius:
        radius = args.radius
        n = None
    else:
        n = choose_n(dim, args.particles)
        radius = 0.5 * args.size / (n + 1)
    if args.dt <= 0:
        dt = 0.4 * 2 * radius / math.sqrt(2 * G * 2 * args.size)
        e = math.floor(math.log10(dt)) - 1
        args.dt = math.floor(dt / 10 ** e) * 10 ** e
        args.dt = float("%.2g" % args.dt)
    tmp = tempfile.mkdtemp(prefix="peer_splishsplash_")
    scene_file = os.path.join(tmp, "dam%dd.json" % dim)
    with open(scene_file, "w") as f:
        json.dump(build_scene(args, dim, radius), f, indent=1)

    sph = import_sph()
    total_steps = args.steps + args.warmup
    base = sph.Exec.SimulatorBase()
    t_setup0 = time.perf_counter()
    # stopAt: runSimulation keeps stepping while time <= stopAt; half a step of margin
    base.init(sceneFile=scene_file, useCache=False, outputDir=os.path.join(tmp, "out"),
              initialPause=False, useGui=False, stopAt=(total_steps - 0.5) * args.dt)
    base.initSimulation()  # reads the scene's "stopAt" again
    base.setValueFloat(base.STOP_AT, (total_steps - 0.5) * args.dt)
    sim = sph.Simulation.getCurrent()
    ts = sim.getTimeStep()
    tm = sph.TimeManager.getCurrent()

    stamps, piters, viters = [], [], []

    def cb():
        stamps.append(time.perf_counter())
        piters.append(ts.getNumIterations())
        viters.append(ts.getValueUInt(sph.TimeStepDFSPH.SOLVER_ITERATIONS_V))

    base.setTimeStepCB(cb)
    t_run0 = time.perf_counter()
    base.runSimulation()
    t_run1 = time.perf_counter()

    nfluid = sum(sim.getFluidModel(i).numActiveParticles() for i in range(sim.numberOfFluidModels()))
    nbound = 0
    if args.boundary == "akinci":
        for i in range(sim.numberOfBoundaryModels()):
            nbound += sim.getBoundaryModel(i).numberOfParticles()
    done = len(stamps)
    if done < total_steps:
        print("WARNING: only %d of %d steps ran" % (done, total_steps), file=sys.stderr)
    w = min(args.warmup, done - 1)
    timed = done - w if w >= 1 else done
    seconds = stamps[-1] - (stamps[w - 1] if w >= 1 else t_run0)
    pi, vi = piters[-timed:], viters[-timed:]
    real_type = str(getattr(sim.getFluidModel(0).getPosition(0), "dtype", "?"))
    line = ("splishsplash dam%dd particles=%d steps=%d seconds=%.3f particle_steps_per_s=%.4g "
            "avg_pressure_iters=%.2f avg_divergence_iters=%.2f"
            % (dim, nfluid, timed, seconds, nfluid * timed / seconds,
               sum(pi) / len(pi), sum(vi) / len(vi)))
    line += (" ms_per_step=%.1f radius=%.6g dt=%g boundary=%s boundary_particles=%d warmup_steps=%d"
             " first_step_s=%.3f setup_s=%.2f sim_time=%.4g threads=%s real=%s pressure_iters=%s divergence_iters=%s"
             " step_ms=%s"
             % (1e3 * seconds / timed, radius, tm.getTimeStepSize(), args.boundary, nbound, w,
                stamps[0] - t_run0 if stamps else float("nan"),
                (t_run0 - t_setup0) + ((stamps[0] - t_run0) if stamps else 0.0),
                tm.getTime(), os.environ.get("OMP_NUM_THREADS", "default"), real_type,
                ",".join(map(str, piters)), ",".join(map(str, viters)),
                ",".join("%.1f" % (1e3 * (b - a)) for a, b in zip(stamps, stamps[1:]))))
    print("RESULT " + line, flush=True)
    if not args.keep:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("scene kept in %s" % tmp, file=sys.stderr)
    sys.stdout.flush()
    os._exit(0)  # skip SPlisHSPlasH's static destructors


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dim", type=int, nargs="+", default=[3], choices=[2, 3])
    p.add_argument("--particles", type=int, default=100000, help="approximate fluid particle count")
    p.add_argument("--radius", type=float, default=0.0, help="particle radius (overrides --particles)")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before the timed ones")
    p.add_argument("--dt", type=float, default=0.0,
                   help="fixed time step [s]; 0 (default): 0.4 * 2r / sqrt(2 g 2a) (CFL number 0.4"
                        " at the column's free-fall speed), rounded down to 2 significant digits")
    p.add_argument("--size", type=float, default=1.0, help="water column width a [m]")
    p.add_argument("--boundary", default="akinci", choices=["akinci", "koschier2017", "bender2019"])
    p.add_argument("--sampling", default="regular", choices=["regular", "poisson"],
                   help="Akinci boundary surface sampling (regular triangle: deterministic; "
                        "poisson: SPlisHSPlasH's default, random)")
    p.add_argument("--viscosity", type=float, default=0.0, help="standard viscosity (0: none)")
    p.add_argument("--no-zsort", action="store_true", help="disable SPlisHSPlasH's z-sort")
    p.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS (0: leave as is)")
    p.add_argument("--keep", action="store_true", help="keep the temporary scene directory")
    p.add_argument("--verbose", action="store_true", help="show SPlisHSPlasH's log output")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_child(args)
        return
    rc = 0
    for dim in args.dim:
        env = dict(os.environ)
        if args.threads:
            env["OMP_NUM_THREADS"] = str(args.threads)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--dim", str(dim)]
        for k in ("particles", "radius", "steps", "warmup", "dt", "size", "boundary", "sampling",
                  "viscosity"):
            cmd += ["--" + k, str(getattr(args, k))]
        if args.no_zsort:
            cmd.append("--no-zsort")
        if args.keep:
            cmd.append("--keep")
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = False
        for l in r.stdout.splitlines():
            if l.startswith("RESULT "):
                print(l[len("RESULT "):], flush=True)
                found = True
            elif args.verbose:
                print(l, file=sys.stderr)
        if r.returncode != 0 or not found:
            rc = 1
            print("splishsplash dam%dd FAILED rc=%d" % (dim, r.returncode), flush=True)
            print("\n".join(r.stdout.splitlines()[-30:]), file=sys.stderr)
    sys.exit(rc)


if __name__ == "__main__":
    main()
