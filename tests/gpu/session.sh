#!/bin/sh
# A lent GPU's checks in one call, most important first, inside one time budget: a session's
# device time is 15 minutes in all, the machine's start (a minute or more), the transfers and the
# idle wait after the call included, so the two calls that tests/gpu/run.sh and bench/gpu.sh
# whole would take (~6 and ~7 minutes on an H200, 2026-11-27) do not fit.  From the repository
# root on the GPU machine, with the programs built ahead here and carried:
#     here:  sh tests/gpu/build.sh build/gpu             (~3 min on 2 cores, 38 MB)
#     there: PREBUILT=build/gpu BUDGET=480 sh tests/gpu/session.sh      (carry ["build/gpu"])
# The parts, each skipped (saying so) when the budget has run out, the later ones given what the
# earlier leave:
#   table    bench.c's table on the GPU (bench/gpu.sh's first step: issue 12's figures; ~80 s)
#   fluid    the dam breaks with the fluid on the GPU (bench/fluid.c --gpu: 3D and 2D ~100k, the 3D
#            with a ball dropped in (--ball), 3D ~1M),
#            by turns with the older header's where build.sh had FLUID_BEFORE (bench_fluid_gpu_before),
#            the 3D 100k on the host's 16 threads, and its kernels' times under ncu; ~60 s
#   suite    tests/gpu/run.sh, its DEADLINE what the budget leaves less RESERVE seconds (default
#            100) for the parts after it (~350 s whole: its later items are cut first)
#   kernels  each kernel's time under ncu (bench/gpu.sh PROFILE's lists: the 512k cube, the 3D
#            8k cube, the 2D block), and the gathers alone in blocks of 192, 256 and 320 threads
#            at 512k (CQ_CUDA_GATHER_THREADS; 128 by default); ~60 s
#   threads  the CPU's 512k cubes at 1 and 16 threads (bench/threads.sh BIG rows; issue 12's
#            16 threads >= 10x one); ~60 s with its build
#   pair     with PAIR_A=FILE (an older chainqueen.h, carried): bench/pair.sh of it against the
#            tree's at 16 threads on the 64k cube (e.g. the 3D float32 records before 601248c:
#            `git show 3b52636:chainqueen.h > build/gpu/narrow.h`)
# PARTS="table suite ..." picks parts (default all six; pair only with PAIR_A).  With OUT set (the
# device tool's folder) the whole output goes to $OUT/session.log and the suite's item logs to
# $OUT/suite_logs.tgz as well.  Last line: the parts run, skipped and failed.
. tests/gpu/lease.sh   # B, T0
BUDGET=${BUDGET:-480}; RESERVE=${RESERVE:-100}
PARTS=${PARTS:-table fluid suite kernels threads pair}
if [ -n "${OUT:-}" ] && [ -z "${SESSION_TEED:-}" ]; then   # everything into $OUT/session.log as well
    mkdir -p "$OUT" || exit 1
    { SESSION_TEED=1 sh "$0" "$@" 2>&1; echo $? >"$OUT/.session_rc"; } | tee "$OUT/session.log"
    rc=$(cat "$OUT/.session_rc"); rm -f "$OUT/.session_rc"; exit "$rc"
fi
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
ran=0; skipped=0; failed=0
part() {   # part NAME CAP COMMAND...: COMMAND under a timeout of CAP seconds or what the budget leaves
    name=$1 cap=$2; shift 2
    case " $PARTS " in *" $name "*) ;; *) return ;; esac
    l=$(left)
    if [ "$l" -lt 20 ]; then echo "== $name: skipped, BUDGET=$BUDGET s reached"; skipped=$((skipped + 1)); return; fi
    [ "$cap" -gt "$l" ] && cap=$l
    echo "== $name (at most $cap s; $(( $(date +%s) - T0 )) s into the session)"
    if timeout "$cap" "$@"; then ran=$((ran + 1)); else echo "== $name: failed or cut (status $?)"; failed=$((failed + 1)); fi
}
kernels() {   # each kernel's time under ncu (as bench/gpu.sh PROFILE=1)
    for a in "3 80 128" "3 20 64" "2 80 128"; do
        echo "cube $a:"
        kernel_times $B/gpu_kernels $a || return 1
    done
    for t in 192 256 320; do
        echo "gather blocks of $t threads, cube 3 80 128:"
        kernel_times --kernel-name regex:gather $B/gpu_kernels_g$t 3 80 128 || return 1
    done
}
fluid() {   # the fluid part (see above); each row's line ends in its backend and steps
    for r in 1 2; do
        for b in bench_fluid_gpu bench_fluid_gpu_before; do
            [ -x "$B/$b" ] || continue
            echo "$b (round $r):"
            $B/$b --gpu --dim 3 --particles 100000 --steps 100 || return 1
            $B/$b --gpu --dim 2 --particles 100000 --steps 100 || return 1
            $B/$b --gpu --dim 3 --particles 100000 --steps 100 --ball || return 1
            [ $r = 1 ] && { $B/$b --gpu --dim 3 --particles 1000000 --steps 10 || return 1; }
        done
    done
    echo "the host's CPU, 16 threads:"
    OMP_NUM_THREADS=16 $B/bench_fluid_omp --dim 3 --particles 100000 --steps 20 || return 1
    if command -v ncu >/dev/null 2>&1; then
        echo "kernels of 5 steps of the 3D 100k dam break (after its first):"
        kernel_times $B/bench_fluid_gpu --gpu --dim 3 --particles 100000 --steps 5
    fi
}
[ "${1:-}" = --kernels ] && { kernels; exit; }   # (the kernels part, run under its timeout as a program)
[ "${1:-}" = --fluid ] && { fluid; exit; }
echo "date: $(date -u +%Y-%m-%d), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), budget $BUDGET s"
echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
part table 150 $B/bench_gpu gpu
part fluid 90 sh "$0" --fluid
# the suite: its own DEADLINE (it skips the items that would start later and still sums up),
# counted from its start; the timeout a little longer, for its summary
d=$(( $(left) - RESERVE )); [ $d -gt 330 ] && d=330
if [ $d -ge 20 ]; then part suite $((d + 20)) env DEADLINE=$d PREBUILT=$B sh tests/gpu/run.sh
else case " $PARTS " in *" suite "*) echo "== suite: skipped, BUDGET=$BUDGET s less RESERVE=$RESERVE s reached"; skipped=$((skipped + 1)) ;; esac; fi
if command -v ncu >/dev/null 2>&1; then part kernels 90 sh "$0" --kernels
else case " $PARTS " in *" kernels "*) echo "== kernels: skipped, ncu not on PATH"; skipped=$((skipped + 1)) ;; esac; fi
part threads 150 env THREADS="1 16" SMALL=0 sh bench/threads.sh
if [ -n "${PAIR_A:-}" ]; then part pair 200 env THREADS=16 sh bench/pair.sh "$PAIR_A" rounds=7 only=64k; fi
[ -n "${OUT:-}" ] && [ -d "$B/logs" ] && tar czf "$OUT/suite_logs.tgz" -C "$B" logs 2>/dev/null
echo "session: $ran parts run, $skipped skipped, $failed failed or cut, $(( $(date +%s) - T0 )) s"
[ $failed = 0 ]
