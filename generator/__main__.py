"""python3 -m generator [--material FILE ...] [-o HEADER] [--cuda-dir DIR]

Without options: regenerates the repository's chainqueen.h and cuda/chainqueen_kernels.cu.
With --material: emits a complete header with the extra material(s) added (forward
kernels, both dimensions, both precisions) to the path given by -o.
"""

import argparse
import os
import sys

from . import ROOT, context, render, write_if_changed


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m generator", description=__doc__.splitlines()[0])
    ap.add_argument("--material", action="append", default=[], metavar="FILE",
                    help="extra material file (SymPy energy/stress); may repeat")
    ap.add_argument("-o", "--output", help="header to write (default: chainqueen.h in the repo)")
    ap.add_argument("--cuda-dir", help="where to write the CUDA sources (default: cuda/ in the repo "
                    "when no --material is given, else none)")
    args = ap.parse_args(argv)

    ctx = context(args.material)
    header = args.output or os.path.join(ROOT, "chainqueen.h")
    if args.material and not args.output:
        ap.error("--material needs -o OUT.h (the repository's chainqueen.h holds only built-in materials)")
    cuda_dir = args.cuda_dir or (None if args.material else os.path.join(ROOT, "cuda"))

    outs = [(header, render("chainqueen.h.j2", ctx))]
    if cuda_dir:
        outs.append((os.path.join(cuda_dir, "chainqueen_kernels.cu"), render("kernels.cu.j2", ctx)))
    for path, text in outs:
        changed = write_if_changed(path, text)
        print("%s %s (%d lines)" % ("wrote" if changed else "unchanged", os.path.relpath(path), text.count("\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
