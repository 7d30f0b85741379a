#!/bin/sh
# Builds every program of the GPU suite (tests/gpu/run.sh) and of the GPU benchmark (bench/gpu.sh)
# side by side into one folder: `sh tests/gpu/build.sh [DIR]` (default build/gpu) from the
# repository root.  Both scripts call it unless PREBUILT=DIR names a folder it filled earlier, so
# the programs can be built ahead on any x86-64 Linux machine with cc (they load the driver at run
# time: nothing of CUDA is needed to build them) and carried to a GPU machine whose minutes are
# scarce: each program compiles the whole header, ~20-40 s, and a lent GPU's 15 minutes are better
# spent running (seen: built on Debian 12's gcc, run on the GPU machine's image, 2026-11-27).
# BEFORE=path/to/an/older/chainqueen.h also builds bench.c and gpu_kernels.c against that header
# (bench/gpu.sh's before/after); FLUID_BEFORE=another.h builds bench/fluid.c against it (the
# fluid's before/after: tests/gpu/session.sh's fluid part).  JOBS (default: the cores) compiles at a time.  Each program's
# log and status in DIR/logs/cc_NAME.log and .rc; the exit status is 0 when all of them built.
CC=${CC:-cc}
D=${1:-build/gpu}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$D/logs" || exit 1
W="-std=c99 -Wall -Wextra -Werror -pedantic"
# one line a program: NAME, then its flags and source (compute-sanitizer's reports name lines: -g)
list() {
    echo "test_cuda -O2 -g tests/test_cuda.c"
    echo "test_cuda_launches -O2 -g -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c"
    echo "test_cuda_rows -O2 -g -DCQ_CUDA_GATHER_ROWS=0 -DCQ_CUDA_SCAN_SELF_SUM=0 -DCQ_CUDA_RESIDENT_MAX=5 -DCQ_CUDA_GATHER_THREADS=192 -DCQ_CUDA_G2P_UNROLLED=1 -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c"
    echo "test_cuda_one_block -O2 -g -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c"
    echo "test_cuda_coop_few -O2 -g -DCQ_CUDA_COOP_BLOCKS=3 tests/test_cuda.c"
    echo "test_table3 -O2 tests/test_table3.c"
    echo "test_gradients -O2 tests/test_gradients.c"
    echo "test_scenes -O2 tests/test_scenes.c"
    echo "test_world_cuda -O2 -g tests/test_world_cuda.c"
    echo "bench_gpu -O3 bench/bench.c"
    echo "bench_gpu_launches -O3 -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 bench/bench.c"
    echo "bench_gpu_nocoop -O3 -DCQ_CUDA_SORT_COOP=0 bench/bench.c"
    echo "bench_gpu_coop32 -O3 -DCQ_CUDA_COOP_BLOCKS=32 bench/bench.c"
    echo "bench_fluid_gpu -O3 bench/fluid.c"
    echo "bench_fluid_omp -O3 -fopenmp bench/fluid.c"
    echo "gpu_kernels -O2 bench/gpu_kernels.c"
    echo "gpu_kernels_g192 -O2 -DCQ_CUDA_GATHER_THREADS=192 bench/gpu_kernels.c"
    echo "gpu_kernels_g256 -O2 -DCQ_CUDA_GATHER_THREADS=256 bench/gpu_kernels.c"
    echo "gpu_kernels_g320 -O2 -DCQ_CUDA_GATHER_THREADS=320 bench/gpu_kernels.c"
    echo "gpu_kernels_g2pu -O2 -DCQ_CUDA_G2P_UNROLLED=1 bench/gpu_kernels.c"
    if [ -n "${BEFORE:-}" ]; then   # a copy of bench.c and gpu_kernels.c beside the older header
        echo "bench_gpu_before -O3 $D/before/bench/bench.c"
        echo "gpu_kernels_before -O2 $D/before/bench/gpu_kernels.c"
    fi
    if [ -n "${FLUID_BEFORE:-}" ]; then   # bench/fluid.c beside another older header
        echo "bench_fluid_gpu_before -O3 $D/fluid_before/bench/fluid.c"
    fi
}
if [ -n "${BEFORE:-}" ]; then
    [ -f "$BEFORE" ] || { echo "BEFORE=$BEFORE: no such file"; exit 1; }
    mkdir -p "$D/before/bench" && cp "$BEFORE" "$D/before/chainqueen.h" && cp bench/bench.c bench/gpu_kernels.c "$D/before/bench/" || exit 1
fi
if [ -n "${FLUID_BEFORE:-}" ]; then
    [ -f "$FLUID_BEFORE" ] || { echo "FLUID_BEFORE=$FLUID_BEFORE: no such file"; exit 1; }
    mkdir -p "$D/fluid_before/bench" && cp "$FLUID_BEFORE" "$D/fluid_before/chainqueen.h" && cp bench/fluid.c "$D/fluid_before/bench/" || exit 1
fi
rm -f "$D"/logs/cc_*.rc
export CC D W
list | xargs -P "${JOBS:-$(nproc 2>/dev/null || echo 4)}" -L 1 sh -c \
    'n=$1; shift; $CC $W "$@" -o "$D/$n" -lm -ldl >"$D/logs/cc_$n.log" 2>&1; echo $? >"$D/logs/cc_$n.rc"' sh
bad=0
for n in $(list | cut -d' ' -f1); do
    if [ "$(cat "$D/logs/cc_$n.rc" 2>/dev/null)" != 0 ]; then echo "build failed: $n"; cat "$D/logs/cc_$n.log"; bad=1; fi
done
[ $bad = 0 ] && echo "built $(list | wc -l | tr -d ' ') programs in $D"
exit $bad
