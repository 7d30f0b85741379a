#!/bin/sh
# The GPU test suite, for a machine with an NVIDIA GPU and driver (`sh tests/gpu/run.sh` from the
# repository root; needs cc, and compute-sanitizer for the sanitizer items, which are skipped
# without it).  `make test` runs the same host code against a mock driver everywhere else.
#   1. parity with the CPU backend: forward states and every gradient, all 8 variants
#      (tests/test_cuda.c; f64 to 1e-9, f32 to 1e-4 relative), cables, failing steps
#   2. the Table III gradient checks of the paper, on the GPU (DEFAULT picks it)
#   3. the end-to-end finite-difference gradient tests on the GPU
#   4. the fluid-rigid world's parity with its CPU backend (tests/test_world_cuda.c)
#   5. parity again with every sort as launches over the whole GPU (CQ_CUDA_SORT_ONE_BLOCK=0 and
#      CQ_CUDA_SORT_COOP=0; by default a scene of up to 131072 particles sorts in one cooperative
#      launch), in one block (CQ_CUDA_SORT_COOP=0), in one cooperative launch of 3 blocks
#      (CQ_CUDA_COOP_BLOCKS=3: each block several batches of particles), and with the gather's 3-row shape on every
#      scene (CQ_CUDA_GATHER_ROWS=0; by default large scenes alone take it) and the sort's scan in
#      three launches on every grid over 65536 cells (CQ_CUDA_SCAN_SELF_SUM=0; by default grids
#      over 2M cells alone take it), with at most 5 blocks looping over the particles' box
#      (CQ_CUDA_RESIDENT_MAX: several tiles a block, which the GPU's own count gives large scenes alone)
#      in gather blocks of 192 threads (CQ_CUDA_GATHER_THREADS; 128 by default), f32 3D G2P
#      unrolled (CQ_CUDA_G2P_UNROLLED; rolled by default), every sort as launches too (as large
#      scenes, the 3-row shape's by default, sort: the scan over the cells the 3-row tiles read)
#   6. compute-sanitizer memcheck, racecheck and synccheck (the one-block kernels' barriers) over
#      the parity runs
# Each item stops after ITEM_TIMEOUT seconds (420; a grid barrier that never opens would otherwise
# hang the GPU's run until the machine is taken back).  To fit a lease: PREBUILT=DIR runs the
# programs that `sh tests/gpu/build.sh DIR` built earlier (here or on another machine, carried),
# and DEADLINE=N (seconds from the start) skips, as SKIP with the reason, each item that would
# start after it and cuts the others' timeouts to the time left: then the summary still comes
# back inside the call.  Items run in four lanes side by side (below): ~5-6 minutes on an H200
# (2026-11-27: 351 s for all but end_to_end, which ran 140 s alone).
# Last line: N passed, N failed, N skipped.
. tests/gpu/lease.sh   # B, T0, timeout_for
L=$B/logs
mkdir -p $L
R=$L/results   # one line per item (ok, FAIL, SKIP): the items run in lanes side by side (below)
item() {
    name=$1; shift
    to=$(timeout_for ${ITEM_TIMEOUT:-420} 10) || { echo "SKIP $name: DEADLINE=$DEADLINE reached"; echo "SKIP $name" >>$R; return; }
    start=$(date +%s)
    if timeout $to "$@" >$L/$name.log 2>&1; then echo "ok   $name ($(( $(date +%s) - start ))s)"; echo "ok $name" >>$R
    else echo "FAIL $name (see $L/$name.log)"; tail -n 25 $L/$name.log; echo "FAIL $name" >>$R; fi
}
skip() { echo "SKIP $1: $2"; echo "SKIP $1" >>$R; }
summary() { echo "$(grep -c '^ok' $R) passed, $(grep -c '^FAIL' $R) failed, $(grep -c '^SKIP' $R) skipped"; }

echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
rm -f $R
if [ -z "${PREBUILT:-}" ]; then   # every program built first, side by side (~25 s on a 16-core GPU machine)
    sh tests/gpu/build.sh $B >/dev/null
fi
for b in test_cuda test_cuda_launches test_cuda_rows test_cuda_one_block test_cuda_coop_few test_table3 test_gradients test_scenes test_world_cuda; do
    item build_$b sh -c "cat $L/cc_$b.log 2>/dev/null; [ -x $B/$b ] && [ \"\$(cat $L/cc_$b.rc 2>/dev/null || echo 0)\" = 0 ]"
done
$B/test_cuda > $L/probe.log 2>&1
if grep -q '^SKIP' $L/probe.log; then
    skip all "$(grep '^SKIP' $L/probe.log | head -n 1)"
    summary; exit 1
fi
# four lanes side by side (processes on one GPU time-slice it: on an H100 three at a time cost each
# item up to 2x its time alone, five at a time up to 2.7x).  H200, 2026-11-27, four lanes: the
# parity items 14-23 s each, Table III 142 s, the gradients but end_to_end 117 s, racecheck 64-93
# s; end_to_end 140 s alone.  The longest lane sets the time: keep them about even.
passes() { item "$1" sh -c "$B/$2 | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"; }   # ITEM PROGRAM
(
passes parity test_cuda
grep '^    [23]D' $L/parity.log
passes parity_sort_coop_few test_cuda_coop_few
passes parity_sort_one_block test_cuda_one_block
# batched scenes: CUDA vs CPU (1e-9 relative in f64: a GPU fuses multiply-adds) and two CUDA runs
# bitwise equal (the sums are gathers in a fixed order: deterministic)
passes scenes_on_gpu test_scenes
passes world_parity test_world_cuda
grep '^    [23]D' $L/world_parity.log
passes parity_sort_launches test_cuda_launches
passes parity_gather_rows test_cuda_rows
item gradients_end_to_end $B/test_gradients end_to_end
) &
# the finite-difference gradient tests, and the bitwise one (checkpointed vs fully stored tapes:
# every sum on the GPU is in a fixed order, actuation and cable gradients included)
(
item table3_on_gpu sh -c "$B/test_table3 > $L/table3.out 2>&1; rc=\$?; cat $L/table3.out; grep -q 'backend: CUDA' $L/table3.out && [ \$rc -eq 0 ]"
item gradients_on_gpu sh -c "for t in running_loss long_horizon checkpointed cable_actuation each_wall; do $B/test_gradients \$t || exit 1; done"
) &
# compute-sanitizer: $COMPUTE_SANITIZER where set (empty: none), else found on PATH or in the CUDA SDK
CS=${COMPUTE_SANITIZER-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)}
SAN="memcheck racecheck synccheck racecheck_gather_rows world_memcheck racecheck_sort_coop_few racecheck_sort_one_block racecheck_sort_launches"
if [ -n "$CS" ]; then
    (
    item memcheck $CS --tool memcheck --error-exitcode 99 $B/test_cuda parity_all
    item racecheck $CS --tool racecheck --error-exitcode 99 $B/test_cuda parity_all
    item synccheck $CS --tool synccheck --error-exitcode 99 $B/test_cuda parity_all
    item racecheck_gather_rows $CS --tool racecheck --error-exitcode 99 $B/test_cuda_rows parity_all
    item world_memcheck $CS --tool memcheck --error-exitcode 99 $B/test_world_cuda parity
    ) &
    # the sort in one cooperative launch (the default binary's small scenes, above, under every
    # tool) with 3 blocks, each taking several batches of particles and tiles of the scan; the
    # one-block sort; the sort as launches: cell_count's block maxima of the particles' box
    # (shared memory, barriers)
    (
    item racecheck_sort_coop_few $CS --tool racecheck --error-exitcode 99 $B/test_cuda_coop_few parity_all
    item racecheck_sort_one_block $CS --tool racecheck --error-exitcode 99 $B/test_cuda_one_block parity_all
    item racecheck_sort_launches $CS --tool racecheck --error-exitcode 99 $B/test_cuda_launches parity_all
    ) &
else
    for t in $SAN; do skip $t "compute-sanitizer not on PATH"; done
fi
wait
summary
! grep -q '^FAIL' $R
