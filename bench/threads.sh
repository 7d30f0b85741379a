#!/bin/sh
# CPU thread scaling (issue 12's target: 16 threads >= 10x one thread on the 512k cube):
# `sh bench/threads.sh` builds bench.c as `make bench` does and runs its 512k rows (`big`: the
# corotated cube in f32 and f64, the NeoHookean one in f32) at 1, 2, 4, 8, ... threads up to the
# machine's cores (THREADS="1 8 16" to choose), then prints per row the forward and backward
# particle-steps/s and the speedup over one thread; "backward again" is a second backward over the
# same tape (the first also allocates and first touches its buffers: ~1 GB at 512k, whose page
# faults a second thread shares, which flatters its speedup).  ~40 s per thread count at one thread.
# Then (unless SMALL=0) the small scenes' rows (`max=64000`: the 2D block, the 3D 8k and 64k cubes,
# where a many-core host's serial parts and idle threads show first: cpu_backend.j2 >>cpu_grain,
# cq__row_range, host_memory.j2 >>sort_plan_small), ~1 min per thread count; BIG=0 leaves out the 512k rows.
CC=${CC:-cc}
cd "$(dirname "$0")/.." || exit 1
mkdir -p build
$CC -std=c99 -O3 -march=native -fopenmp -Wall -Wextra -Werror -pedantic bench/bench.c -o build/bench_threads -lm || exit 1
N=$(nproc 2>/dev/null || echo 1)
if [ -z "${THREADS:-}" ]; then
    THREADS=1; t=2
    while [ "$t" -le "$N" ]; do THREADS="$THREADS $t"; t=$((t * 2)); done
    case " $THREADS " in *" $N "*) ;; *) THREADS="$THREADS $N" ;; esac
fi
echo "date: $(date -u +%Y-%m-%d), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $N core(s): $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
out=build/threads.txt; : > "$out"
for t in $THREADS; do
    echo "threads $t ..."
    : > build/threads_$t.txt
    if [ "${BIG:-1}" != 0 ]; then
        OMP_NUM_THREADS=$t ./build/bench_threads big >> build/threads_$t.txt || { cat build/threads_$t.txt; exit 1; }
    fi
    if [ "${SMALL:-1}" != 0 ]; then
        OMP_NUM_THREADS=$t ./build/bench_threads max=64000 >> build/threads_$t.txt || { cat build/threads_$t.txt; exit 1; }
    fi
    # | scene | material | particles | grid | precision | ms/substep | p-steps/s | T | fwd | bwd | ... (a row: its
    # scene, particles, material and precision, e.g. 3D-cube-512000-fixed-corotated-f32)
    awk -F'|' -v t="$t" '$4 ~ /^ *[0-9]+ *$/ { for (i = 2; i <= 6; ++i) { gsub(/^ +| +$/, "", $i); gsub(/[ ,]+/, "-", $i) }
        print t, $2 "-" $4 "-" $3 "-" $6, $8, $11, $14 }' build/threads_$t.txt >> "$out"
done
echo
echo "| scene | threads | forward p-steps/s | speedup | backward p-steps/s | speedup | backward again p-steps/s | speedup |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
awk '{ if (!($2 in f1)) { f1[$2] = $3; b1[$2] = $4; a1[$2] = $5 } printf "| %s | %d | %.3g | %.2fx | %.3g | %.2fx | %.3g | %.2fx |\n", $2, $1, $3, $3 / f1[$2], $4, $4 / b1[$2], $5, $5 / a1[$2] }' "$out" | sort -t'|' -k2,2 -s
