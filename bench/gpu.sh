#!/bin/sh
# GPU benchmark: `sh bench/gpu.sh` on a machine with an NVIDIA GPU (from the repository root).
# Prints the device, date and commit, then bench.c's table for the CUDA backend: 2D 6.4k,
# 3D 8k, 64k, 512k and 4.1M particles, f32 and f64, forward and backward, the 64k and 512k cubes
# with their particles in a random order ("3D cube, shuffled": 7% and 32% slower than the lattice
# order on an H100, 2026-11-26; bench.c built against an older chainqueen.h gives the "before"), and the batch row (the
# 2D 6.4k block in 256 scenes of one sim: aggregate particle-steps/s, and a line giving its
# aggregate throughput over the single block's; issue 12's target is >= 20x; then again with the
# scenes interleaved), each kernel's registers, local and shared bytes as the driver's JIT gave
# them beside tests/gpu/ptxas_budget.txt's (bench/gpu_kernels.c regs); then the fluid
# dam breaks (bench/fluid.c --gpu, 2D and 3D, ~100k and ~1M particles).  Between the two: the
# scenes of up to 131072 particles again with the sort of before (CQ_CUDA_SORT_COOP=0), the 2D
# block again with 10 substeps per step, and with the sort of small scenes in one block and as launches.  PROFILE=1 also runs
# Nsight Compute (ncu): each kernel's time in a 512k and an 8k cube (bench/gpu_kernels.c), the
# gathers again in blocks of 192, 256 and 320 threads (CQ_CUDA_GATHER_THREADS), f32 3D G2P unrolled
# (CQ_CUDA_G2P_UNROLLED), and the
# main kernels' throughput, occupancy and warp stalls at 512k, and the one-block sort's warp stalls by source line
# (with BEFORE, each kernel's time with that header too).  BEFORE=path/to/an/older/
# chainqueen.h also runs the shuffled cubes and the lattice 3D cubes with that header (the same
# bench.c), for a before/after in one run, e.g. `git show 1aadf2e:chainqueen.h > build/before.h`
# (the last tree whose per-particle kernels ran over sorted slots), then BEFORE=build/before.h;
# the header of 56f7527 is the last without the backward's grid cache, with the same kernels
# (its before/after is the cache alone: the backward columns, "bwd again" most of all); the header of aec586e
# is the last with one thread per node in the gather and scan chunks of 256; 823d32c's is the last
# measured on a GPU before the box, the vector-load layout and the cooperative sort (2026-11-27).
# To fit a lease: PREBUILT=DIR runs the programs `sh tests/gpu/build.sh DIR` built earlier (with
# the same BEFORE, to have the before programs), here or carried from another machine; DEADLINE=N
# (seconds from the start) skips each step that would start after it and cuts the others to the
# time left, so the steps run in the order of what matters most: the table, the before/after, the
# small scenes' sorts, the fluid, then PROFILE's.  H200, 2026-11-27: the table 82 s, the before's
# cubes over 60 s (cut there before its 4.1M f64 row), each small-scene row ~8 s, an ncu kernel
# list ~5 s.
. tests/gpu/lease.sh   # B, T0, timeout_for
if [ -z "${PREBUILT:-}" ]; then   # every program side by side (each compiles the whole header: ~20 s)
    sh tests/gpu/build.sh $B || { echo "bench/gpu.sh: a build failed"; exit 1; }
fi
failed=0
step() {   # step COMMAND...: run it unless DEADLINE has passed (then say so); a failure is noted, not fatal
    to=$(timeout_for ${STEP_TIMEOUT:-600} 15) || { echo "(skipped, DEADLINE=$DEADLINE reached: $*)"; return; }
    timeout $to "$@" || { echo "(failed or cut, status $?: $*)"; failed=1; }
}
kernels() {   # kernels [NCU OPTIONS] PROGRAM ARGS...: each kernel's time under ncu (lease.sh kernel_times), a step
    step sh -c ". tests/gpu/lease.sh && kernel_times $*"
}
echo "date: $(date -u +%Y-%m-%d), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
$B/bench_gpu gpu only="2D block" quick >/dev/null 2>&1 || { $B/bench_gpu gpu only="2D block" quick; exit 1; }   # a GPU at all?
step $B/bench_gpu gpu
if [ -n "${BEFORE:-}" ]; then   # the same bench.c against the older header (tests/gpu/build.sh built it)
    echo "before: $BEFORE"
    step $B/bench_gpu_before gpu only="3D cube"
    step $B/bench_gpu_before gpu only="2D block"
    step $B/bench_gpu_before gpu only="3D cube, shuffled"
fi
# what the driver's JIT gave each kernel (registers, local bytes: spills and stack, static shared
# memory), beside tests/gpu/ptxas_budget.txt (the toolkit's ptxas for sm_90, which `make test` holds
# the kernels to): where they differ, the budget's guard stands for another allocation than the GPU's
echo "registers: the driver's JIT | the budget (toolkit ptxas: regs stack spill-stores spill-loads shared)"
for a in "2 20 64" "2 20 64 f64" "3 10 32" "3 10 32 f64"; do
    step sh -c "$B/gpu_kernels $a regs | grep '^jit ' | while read -r _ name r l sh; do \
        printf '%-56s %4s %5s %6s | %s\n' \"\$name\" \"\$r\" \"\$l\" \"\$sh\" \"\$(grep \"^\$name \" tests/gpu/ptxas_budget.txt | cut -c58-)\"; done"
done
# the batch row again with its 256 scenes interleaved (particle p in scene p mod 256; bench.c
# `interleaved`): on the GPU the per-particle kernels run in index order, so a warp's 32 particles
# are then 32 scenes' and read 32 grids (on the CPU, 2026-11-29: ~1.5x the time of the scenes one
# after another, bench/RESULTS.md); its gap to the row above is what a user's layout costs
echo "the batch row, its scenes interleaved:"
step $B/bench_gpu gpu only="2D block x scenes" interleaved
# the rows whose sort is one cooperative launch (up to CQ_CUDA_SORT_COOP = 131072 particles,
# kernels.cu.j2 >>cuda_sort_coop) again with the sort of before (CQ_CUDA_SORT_COOP=0: the 2D
# block's in one block, the cubes' as launches): its before/after in one run
echo "without the cooperative sort (CQ_CUDA_SORT_COOP=0):"
step $B/bench_gpu_nocoop gpu max=131072
# and in at most 32 blocks (CQ_CUDA_COOP_BLOCKS=32): the launch takes a block for each scan tile of
# the whole grid, or of its particles, whichever is more (the 3D 8k cube: 128 blocks for 32 blocks'
# particles, its scan range ~30 tiles; 15 us on an H200, 2026-11-27): fewer blocks meet at each of
# its three grid barriers, each block takes several tiles
echo "the cooperative sort in at most 32 blocks (CQ_CUDA_COOP_BLOCKS=32):"
step $B/bench_gpu_coop32 gpu max=131072
# small scenes: the 2D block with 10 substeps per step (one status readback per step, not per
# substep), with a small scene's sort in one cooperative launch (the default), in one block
# (CQ_CUDA_SORT_COOP=0) and as launches over the GPU (and CQ_CUDA_SORT_ONE_BLOCK=0), and the
# default row above again with the launches
step $B/bench_gpu gpu only="2D block" substeps=10
step $B/bench_gpu_nocoop gpu only="2D block" substeps=10
step $B/bench_gpu_launches gpu only="2D block" substeps=10
step $B/bench_gpu_launches gpu only="2D block"
# the fluid-rigid world's dam breaks with the fluid on the GPU (bench/fluid.c --gpu), ~100k and ~1M
# (FLUID=0 skips them)
if [ "${FLUID:-1}" = 1 ]; then
    for p in 100000 1000000; do step $B/bench_fluid_gpu --gpu --particles $p --steps 20; done
fi
if [ "${PROFILE:-0}" = 1 ] && command -v ncu >/dev/null 2>&1; then
    # each kernel's time at one size (bench/gpu_kernels.c: a cube, 12 taped steps, a backward):
    # the 512k cube, then the 3D 8k one (small scenes: latency, launches), and the 2D block
    for a in "3 80 128" "3 20 64" "2 80 128"; do echo "cube $a:"; kernels $B/gpu_kernels $a; done
    if [ -n "${BEFORE:-}" ]; then   # the same with the BEFORE header: a kernel-by-kernel before/after in one run
        for a in "3 80 128" "3 20 64"; do echo "before ($BEFORE), cube $a:"; kernels $B/gpu_kernels_before $a; done
    fi
    # (the warps' stalls of the main kernels at 512k: G2P, 78 us at 512k on an H200, is ~4x its
    # DRAM time and its bound is not known: L1 load instructions, latency (one load round trip a
    # node) or L2; the long-scoreboard / LG-throttle / MIO-throttle split of WarpStateStats tells
    # which; the gather is half of the forward, the P2G adjoint's transfer 43% of the backward's
    # own kernels).  Two runs: the forward's three, then the adjoint's three (each the 4th
    # substep's launches; the one run over all five names, --launch-skip 30 --launch-count 6, that
    # this replaced took whichever six came 31st-36th, not one of each)
    for k in 'p2g_fwd_3d|gather_rows_3d|g2p_fwd_3d' 'g2p_adj_3d|p2g_adj_'; do
        step ncu --kernel-name regex:"$k" --launch-skip 9 --launch-count 3 \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats $B/gpu_kernels 3 80 128
    done
    # the small scenes' sort (the 8k cube's cooperative sort: 15 us of its 52 us of kernels on an
    # H200, 2026-11-27; three grid barriers) and the 2D block's: where the warps stall
    for b in bench_gpu bench_gpu_nocoop; do
        echo "the 2D block's sort, $b:"
        step ncu --kernel-name regex:'sort_coop_2d_f32|cell_sort_2d_f32' --launch-skip 20 --launch-count 3 --section SpeedOfLight \
            --section WarpStateStats --section SourceCounters $B/$b gpu only="2D block" quick
    done
    # the gather's blocks of 192, 256 and 320 threads (CQ_CUDA_GATHER_THREADS; 128 above): the gathers
    # alone.  192: a phase of the 3-row shape has 5 source rows x 34 cells = 170 cell sums, which
    # 128 threads take in two rounds (the second 42 threads busy, the rest at the barrier) and 192
    # in one; its 384 node values then take 2 rounds, not 3 (3 blocks an SM at 96 registers: 576
    # threads, against 5 x 128 = 640)
    for t in 192 256 320; do
        for a in "3 80 128" "3 20 64"; do
            echo "gather blocks of $t threads, cube $a:"
            kernels --kernel-name regex:gather $B/gpu_kernels_g$t $a
        done
    done
    # f32 3D G2P's two forms (CQ_CUDA_G2P_UNROLLED: its node loop unrolled; rolled above, the
    # default): with a node one 16-byte load (>>grid_layout) the unrolled one has no local memory
    for a in "3 80 128" "3 20 64"; do
        echo "G2P unrolled, cube $a:"
        kernels --kernel-name regex:g2p_fwd $B/gpu_kernels_g2pu $a
    done
    step ncu --kernel-name regex:'g2p_fwd_3d' --launch-skip 10 --launch-count 1 --section SpeedOfLight --section WarpStateStats $B/gpu_kernels_g2pu 3 80 128
fi
echo "[bench/gpu.sh: $(( $(date +%s) - T0 )) s]"
exit $failed
