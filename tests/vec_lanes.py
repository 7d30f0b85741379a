"""Every CPU lane kernel is vectorized by gcc: a guard for builds with the user's own flags.

The lane kernels (cpu_lanes.j2: functions named cq__*_lanes_*) exist to be compiled to SIMD
loops; where gcc cannot prove a loop safe or worth it, it compiles it scalar and says nothing,
and the lanes then run slower than one particle at a time.  That happened unseen: at -O2 gcc 12
refused the aliasing checks of five lane functions until their arrays were declared restrict
(2026-11-29, bench/RESULTS.md), because the benchmark builds with -O3.  This reads gcc's
`-fopt-info-vec-optimized` report of a build of the header, maps each vectorized loop to the
function whose source it lies in, and fails for each lane function of the named precisions
that has none.  The lane functions without loops of their own (dispatchers) are listed below.

Usage: python3 tests/vec_lanes.py HEADER REPORT PRECISIONS   (PRECISIONS: f32 or f32,f64: those
whose lanes the build has on; cpu_lanes.j2 CQ__LANES_ON_*).  Prints "N passed, N failed"."""
import re
import sys

NO_LOOPS = re.compile(r"^cq__cpu_rot_lanes_")   # call the SVD / polar lanes, no loop of their own


def main(header, report, precisions):
    lines = open(header, encoding="utf-8").read().split("\n")
    starts = []   # (line, name) of each function definition at column 0
    for i, l in enumerate(lines):
        m = re.match(r"^(?:static |CQ_HD |CQ_API |inline )*[A-Za-z_][\w ]*?[\s*](cq\w+)\(", l)
        if m and not l.rstrip().endswith(";"):
            starts.append((i + 1, m.group(1)))
    begins = [s for s, _ in starts]

    def function_at(line):
        lo, hi = 0, len(begins)
        while lo < hi:
            mid = (lo + hi) // 2
            if begins[mid] <= line:
                lo = mid + 1
            else:
                hi = mid
        return starts[lo - 1][1] if lo else None

    vectorized = {}
    base = header.split("/")[-1]
    for l in open(report, encoding="utf-8", errors="replace"):
        m = re.match(r"(.*?):(\d+):\d+: optimized: loop vectorized", l)
        if m and m.group(1).split("/")[-1] == base:
            f = function_at(int(m.group(2)))
            vectorized[f] = vectorized.get(f, 0) + 1
    precs = precisions.split(",")
    want = sorted(set(n for _, n in starts if "_lanes_" in n and not NO_LOOPS.match(n)
                      and any(n.endswith("_" + p) or ("_" + p + "_") in n for p in precs)))
    passed = failed = 0
    for n in want:
        if vectorized.get(n):
            passed += 1
        else:
            print("FAIL %s: no loop of it vectorized (see %s)" % (n, report))
            failed += 1
    print("%d lane functions (%s), %d vectorized loops in them, %d in the whole header"
          % (len(want), precisions, sum(vectorized.get(n, 0) for n in want), sum(vectorized.values())))
    if len(want) < 20:   # the parse found too few: the header's layout changed
        print("FAIL only %d lane functions found in %s" % (len(want), header))
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.exit(main(*sys.argv[1:]))
