"""Registers, stack and spills of every CUDA kernel, against a budget: a guard for sessions without a GPU.

A kernel change can make ptxas spill, or take registers that cost an unbounded kernel its
occupancy, and nothing on a machine without a GPU shows it (the mock driver runs the kernels
as C).  This assembles the PTX that the suite's cuda_ptx items compiled (the flags of the
embedded PTX) for sm_90, the H100 / H200 the bench targets, with `ptxas -v`, and compares each
function with tests/gpu/ptxas_budget.txt: registers, stack frame, spill bytes and static shared
memory may not exceed it; a function the budget lacks, or one it names that is gone, fails too.  Where a kernel
changes on purpose, `--update` rewrites the budget from this run (say why in the commit, and
what it costs on the GPU in bench/RESULTS.md).

The budget holds for the ptxas it was written with (its version line is the file's first
line); another version allocates differently, so then the table is printed and the check is
reported as skipped (exit status 3).  The driver JIT-compiles the embedded PTX with its own
assembler: these figures are the toolkit's, which the comments in kernels.cu.j2 quote.

Usage: python3 tests/ptxas_budget.py [--update] [--ptxas PTXAS] [--budget FILE] PTX...
Prints one line per function over budget and "N passed, N failed" (one test per function)."""
import re
import subprocess
import sys

ARCH = "sm_90"


def assemble(ptxas, ptx):
    """{function: [registers or None, stack, spill stores, spill loads, shared memory]} of one PTX file"""
    out = subprocess.run([ptxas, "-arch=" + ARCH, "-v", "-o", "/dev/null", ptx],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit("ptxas failed on %s" % ptx)
    funcs, cur = {}, None
    for line in (out.stdout + out.stderr).splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            # internal functions carry a per-file hash in their mangled name: keep the cq__ name
            name = m.group(1)
            inner = re.search(r"(cq__\w+?)(E[A-Za-z0-9_]*)?$", name) if name.startswith("_Z") else None
            cur = inner.group(1) if inner else name
            funcs.setdefault(cur, [None, 0, 0, 0, 0])
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            # a called function's properties repeat after each caller's compile: keep the largest
            funcs[cur][1:4] = [max(a, int(v)) for a, v in zip(funcs[cur][1:4], m.groups())]
            continue
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = m.group(1)
            funcs.setdefault(cur, [None, 0, 0, 0, 0])
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            funcs[cur][0] = int(m.group(1))
            m = re.search(r"(\d+) bytes smem", line)
            funcs[cur][4] = int(m.group(1)) if m else 0
    return funcs


def main(argv):
    update, ptxas, budget_path, ptx = False, "ptxas", "tests/gpu/ptxas_budget.txt", []
    it = iter(argv)
    for a in it:
        if a == "--update":
            update = True
        elif a == "--ptxas":
            ptxas = next(it)
        elif a == "--budget":
            budget_path = next(it)
        else:
            ptx.append(a)
    if not ptx:
        raise SystemExit(__doc__)
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    now = {}
    for p in ptx:
        now.update(assemble(ptxas, p))

    def row(name, v):
        return "%-56s %4s %5d %5d %5d %6d" % (name, "-" if v[0] is None else v[0], v[1], v[2], v[3], v[4])

    if update:
        with open(budget_path, "w") as f:
            f.write("# %s, -arch=%s (written by tests/ptxas_budget.py --update)\n" % (version, ARCH))
            f.write("# function                                              regs stack spill-stores spill-loads shared-bytes\n")
            for name in sorted(now):
                f.write(row(name, now[name]) + "\n")
        print("wrote %s: %d functions" % (budget_path, len(now)))
        return 0

    lines = open(budget_path).read().splitlines()
    recorded = lines[0][2:].split(", -arch=")[0]
    budget = {}
    for line in lines[1:]:
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        budget[f[0]] = [None if f[1] == "-" else int(f[1])] + [int(v) for v in f[2:6]]
    if recorded != version:
        for name in sorted(now):
            print(row(name, now[name]))
        print("SKIP: ptxas here is '%s'; the budget was written with '%s' (registers differ between versions)"
              % (version, recorded))
        return 3
    passed = failed = 0
    for name in sorted(set(now) | set(budget)):
        if name not in budget:
            print("FAIL %s: not in the budget (%s); add it with --update" % (row(name, now[name]).strip(), budget_path))
            failed += 1
            continue
        if name not in now:
            print("FAIL %s: in the budget, not in the PTX (renamed or gone?); --update" % name)
            failed += 1
            continue
        b, v = budget[name], now[name]
        over = [what for what, i in (("registers", 0), ("stack frame", 1), ("spill stores", 2), ("spill loads", 3),
                                                           ("shared memory", 4))
                if v[i] is not None and b[i] is not None and v[i] > b[i]]
        if over:
            print("FAIL %s: over the budget in %s (budget: %s)" % (row(name, v).strip(), ", ".join(over), row(name, b).strip()))
            failed += 1
        else:
            passed += 1
    spilled = [n for n in sorted(now) if now[n][2] or now[n][3]]
    print("ptxas %s, %d functions; spilling within their budget: %s" % (ARCH, len(now), ", ".join(spilled) or "none"))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
