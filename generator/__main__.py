"""python3 -m generator [--material FILE ...] [-o HEADER] [--cuda-dir DIR] [--rebuild-ptx]

Without options: regenerates the repository's chainqueen.h and cuda/chainqueen_kernels_*.cu,
embedding each CUDA module's PTX (reused from the existing header when its source is unchanged,
else compiled with the pinned NVRTC or nvcc; see generator/ptx.py).  With --material: emits a complete header with
the extra material(s) added (forward and adjoint kernels, both dimensions, both precisions, and
their PTX when a CUDA compiler is available) to the path given by -o.
"""

import argparse
import os
import sys

if __package__ in (None, ""):   # run as `python3 path/to/generator`: import it as the package it is
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "generator"   # noqa: A001 (makes the relative imports below work)
    import generator            # noqa: F401,E402

from . import ROOT, context, render, write_if_changed, ptx  # noqa: E402


def cuda_sources(ctx):
    """[(tag, text)]: one CUDA module per (dimension, precision), all materials inside."""
    out = []
    for d in ctx["dims"]:
        for p in ctx["precisions"]:
            sub = dict(ctx, dims=[d], precisions=[p], gpu=True,
                       variants=[v for v in ctx["variants"] if v["dim"] == d and v["prec"].name == p.name])
            out.append(("%dd_%s" % (d, p.name), render("kernels.cu.j2", sub)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m generator", description=__doc__.splitlines()[0])
    ap.add_argument("--material", action="append", default=[], metavar="FILE",
                    help="extra material file (SymPy energy/stress); may repeat")
    ap.add_argument("-o", "--output", help="header to write (default: chainqueen.h in the repo)")
    ap.add_argument("--cuda-dir", help="where to write the CUDA sources (default: cuda/ in the repo "
                    "when no --material is given, else none)")
    ap.add_argument("--rebuild-ptx", action="store_true", help="compile every module, reusing none")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"), help="nvcc to use (default: $NVCC or nvcc)")
    args = ap.parse_args(argv)

    ctx = context(args.material)
    repo_header = os.path.join(ROOT, "chainqueen.h")
    header = args.output or repo_header
    if args.material and not args.output:
        ap.error("--material needs -o OUT.h (the repository's chainqueen.h holds only built-in materials)")
    cuda_dir = args.cuda_dir or (None if args.material else os.path.join(ROOT, "cuda"))

    sources = cuda_sources(ctx)
    mods = ptx.modules(sources, [header, repo_header], nvcc=args.nvcc, rebuild=args.rebuild_ptx)
    ctx["ptx_modules"] = [m for m in mods if m]
    ctx["ptx_missing"] = [tag for (tag, _), m in zip(sources, mods) if m is None]
    ctx["ptx_min_driver"], ctx["ptx_min_cuda"] = ptx.min_driver(mods)
    ctx["ptx_arch"] = ptx.ARCH
    ctx["ptx_row"] = ptx.ROW
    ctx["ptx_compilers"] = sorted({m["nvcc"] for m in mods if m}) or ["nothing"]

    outs = [(header, render("chainqueen.h.j2", ctx))]
    if cuda_dir:
        outs += [(os.path.join(cuda_dir, "chainqueen_kernels_%s.cu" % tag), text) for tag, text in sources]
    for path, text in outs:
        changed = write_if_changed(path, text)
        print("%s %s (%d lines, %d bytes)" % ("wrote" if changed else "unchanged", os.path.relpath(path),
                                              text.count("\n"), len(text.encode("utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
