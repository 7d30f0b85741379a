#!/bin/sh
# GPU benchmark: `sh bench/gpu.sh` on a machine with an NVIDIA GPU (from the repository root).
# Prints the device, date and commit, then bench.c's table for the CUDA backend: 2D 6.4k,
# 3D 8k, 64k, 512k and 4.1M particles, f32 and f64, forward and backward, the 64k and 512k cubes
# with their particles in a random order ("3D cube, shuffled": 7% and 32% slower than the lattice
# order on an H100, 2026-11-26; bench.c built against an older chainqueen.h gives the "before"), and the batch row (the
# 2D 6.4k block in 256 scenes of one sim: aggregate particle-steps/s, and a line giving its
# aggregate throughput over the single block's; issue 12's target is >= 20x); then the fluid
# dam breaks (bench/fluid.c --gpu, 2D and 3D, ~100k and ~1M particles).  Between the two: the
# scenes of up to 131072 particles again with the sort of before (CQ_CUDA_SORT_COOP=0), the 2D
# block again with 10 substeps per step, and with the sort of small scenes in one block and as launches.  PROFILE=1 also runs
# Nsight Compute (ncu): each kernel's time in a 512k and an 8k cube (bench/gpu_kernels.c), the
# gathers again in blocks of 256 and 320 threads (CQ_CUDA_GATHER_THREADS), f32 3D G2P unrolled
# (CQ_CUDA_G2P_UNROLLED), and the
# main kernels' throughput, occupancy and warp stalls at 512k, and the one-block sort's warp stalls by source line
# (with BEFORE, each kernel's time with that header too).  BEFORE=path/to/an/older/
# chainqueen.h also runs the shuffled cubes and the lattice 3D cubes with that header (the same
# bench.c), for a before/after in one run, e.g. `git show 1aadf2e:chainqueen.h > build/before.h`
# (the last tree whose per-particle kernels ran over sorted slots), then BEFORE=build/before.h;
# the header of 56f7527 is the last without the backward's grid cache, with the same kernels
# (its before/after is the cache alone: the backward columns, "bwd again" most of all); the header of aec586e
# is the last with one thread per node in the gather and scan chunks of 256.
CC=${CC:-cc}
mkdir -p build
# the three builds side by side (each compiles the whole header: ~20 s; device time is scarce)
W="-std=c99 -O3 -Wall -Wextra -Werror -pedantic"
$CC $W bench/bench.c -o build/bench_gpu -lm -ldl & b1=$!
$CC $W -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 bench/bench.c -o build/bench_gpu_launches -lm -ldl & b2=$!
$CC $W bench/fluid.c -o build/bench_fluid_gpu -lm -ldl & b3=$!
$CC $W -DCQ_CUDA_SORT_COOP=0 bench/bench.c -o build/bench_gpu_nocoop -lm -ldl & b4=$!
wait $b1 && wait $b2 && wait $b3 && wait $b4 || { echo "bench/gpu.sh: a build failed"; exit 1; }
echo "date: $(date -u +%Y-%m-%d), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
./build/bench_gpu gpu || exit 1
# the rows whose sort is one cooperative launch (up to CQ_CUDA_SORT_COOP = 131072 particles,
# kernels.cu.j2 >>cuda_sort_coop) again with the sort of before (CQ_CUDA_SORT_COOP=0: the 2D
# block's in one block, the cubes' as launches): its before/after in one run
echo "without the cooperative sort (CQ_CUDA_SORT_COOP=0):"
./build/bench_gpu_nocoop gpu max=131072 || exit 1
if [ -n "${BEFORE:-}" ]; then
    [ -f "$BEFORE" ] || { echo "BEFORE=$BEFORE: no such file"; exit 1; }
    mkdir -p build/before/bench && cp "$BEFORE" build/before/chainqueen.h && cp bench/bench.c build/before/bench/ || exit 1
    $CC -std=c99 -O3 -Wall -Wextra -Werror -pedantic build/before/bench/bench.c -o build/bench_gpu_before -lm -ldl || exit 1
    echo "before: $BEFORE"
    ./build/bench_gpu_before gpu only="3D cube, shuffled" || exit 1
    ./build/bench_gpu_before gpu only="3D cube" || exit 1
fi
# small scenes: the 2D block with 10 substeps per step (one status readback per step, not per
# substep), with a small scene's sort in one cooperative launch (the default), in one block
# (CQ_CUDA_SORT_COOP=0) and as launches over the GPU (and CQ_CUDA_SORT_ONE_BLOCK=0), and the
# default row above again with the launches
./build/bench_gpu gpu only="2D block" substeps=10 || exit 1
./build/bench_gpu_nocoop gpu only="2D block" substeps=10 || exit 1
./build/bench_gpu_launches gpu only="2D block" substeps=10 || exit 1
./build/bench_gpu_launches gpu only="2D block" || exit 1
# the fluid-rigid world's dam breaks with the fluid on the GPU (bench/fluid.c --gpu), ~100k and ~1M
# (FLUID=0 skips them: with PROFILE=1 and BEFORE the whole script may not fit a 10-minute call)
if [ "${FLUID:-1}" = 1 ]; then
    for p in 100000 1000000; do ./build/bench_fluid_gpu --gpu --particles $p --steps 20 || exit 1; done
fi
if [ "${PROFILE:-0}" = 1 ] && command -v ncu >/dev/null 2>&1; then
    # each kernel's time at one size (bench/gpu_kernels.c: a cube, 12 taped steps, a backward):
    # the 512k cube, then the 3D 8k one (small scenes: latency, launches)
    $CC -std=c99 -O2 -Wall -Wextra -Werror -pedantic bench/gpu_kernels.c -o build/gpu_kernels -lm -ldl || exit 1
    for a in "3 80 128" "3 20 64"; do
        ncu --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels $a | grep -E '^  [a-z_0-9]+|gpu__time_duration'
    done
    if [ -n "${BEFORE:-}" ]; then   # the same with the BEFORE header: a kernel-by-kernel before/after in one run
        cp bench/gpu_kernels.c build/before/bench/ && \
            $CC -std=c99 -O2 -Wall -Wextra -Werror -pedantic build/before/bench/gpu_kernels.c -o build/gpu_kernels_before -lm -ldl || exit 1
        for a in "3 80 128" "3 20 64"; do
            echo "before ($BEFORE), cube $a:"
            ncu --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels_before $a | grep -E '^  [a-z_0-9]+|gpu__time_duration'
        done
    fi
    # the gather's blocks of 256 and 320 threads (CQ_CUDA_GATHER_THREADS; 128 above): the gathers alone
    for t in 256 320; do
        $CC -std=c99 -O2 -Wall -Wextra -Werror -pedantic -DCQ_CUDA_GATHER_THREADS=$t bench/gpu_kernels.c -o build/gpu_kernels_g$t -lm -ldl || exit 1
        for a in "3 80 128" "3 20 64"; do
            echo "gather blocks of $t threads, cube $a:"
            ncu --kernel-name regex:'gather' --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels_g$t $a | grep -E '^  [a-z_0-9]+|gpu__time_duration'
        done
    done
    # (and their warps' stalls: G2P, 91 us at 512k on an H200, is 4x its DRAM time and its bound is
    # not known: L1 load instructions (81 grid loads and a 72-byte stack frame of weights a
    # particle), latency (one load round trip a node) or L2; the long-scoreboard / LG-throttle /
    # MIO-throttle split of WarpStateStats tells which)
    ncu --kernel-name regex:'gather_fwd_3d|p2g_fwd_3d|g2p_fwd_3d|g2p_adj_3d|p2g_adj_' --launch-skip 30 --launch-count 6 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats ./build/gpu_kernels 3 80 128
    # f32 3D G2P's two forms (CQ_CUDA_G2P_UNROLLED: its node loop unrolled; rolled above, the
    # default): with a node one 16-byte load (>>grid_layout) the unrolled one has no local memory
    $CC -std=c99 -O2 -Wall -Wextra -Werror -pedantic -DCQ_CUDA_G2P_UNROLLED=1 bench/gpu_kernels.c -o build/gpu_kernels_g2pu -lm -ldl || exit 1
    for a in "3 80 128" "3 20 64"; do
        echo "G2P unrolled, cube $a:"
        ncu --kernel-name regex:'g2p_fwd' --metrics gpu__time_duration.sum --print-summary per-kernel ./build/gpu_kernels_g2pu $a | grep -E '^  [a-z_0-9]+|gpu__time_duration'
    done
    ncu --kernel-name regex:'g2p_fwd_3d' --launch-skip 10 --launch-count 1 --section SpeedOfLight --section WarpStateStats ./build/gpu_kernels_g2pu 3 80 128
    # the small scenes' sort (the 2D block): in one cooperative launch (the default; ~5-8 us
    # predicted) and in one block (17 us on an H200 at adad329): their times, where the warps stall
    for b in bench_gpu bench_gpu_nocoop; do
        echo "the 2D block's sort, $b:"
        ncu --kernel-name regex:'sort_coop_2d_f32|cell_sort_2d_f32' --launch-skip 20 --launch-count 3 --section SpeedOfLight \
            --section WarpStateStats --section SourceCounters ./build/$b gpu only="2D block" quick
    done
fi
