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
# hang the GPU's run until the machine is taken back).
# The programs are built side by side first; then 1-4, 3 and 6 run as three lanes side by side
# (about 5 minutes on an H100; its logs in build/gpu/logs).  Last line: N passed, N failed, N skipped.
CC=${CC:-cc}; B=build/gpu; L=$B/logs
mkdir -p $L
WARN="-Wall -Wextra -Werror -pedantic"
R=$L/results   # one line per item (ok, FAIL, SKIP): the items run in lanes side by side (below)
item() {
    name=$1; shift
    start=$(date +%s)
    if timeout ${ITEM_TIMEOUT:-420} "$@" >$L/$name.log 2>&1; then echo "ok   $name ($(( $(date +%s) - start ))s)"; echo "ok $name" >>$R
    else echo "FAIL $name (see $L/$name.log)"; tail -n 25 $L/$name.log; echo "FAIL $name" >>$R; fi
}
skip() { echo "SKIP $1: $2"; echo "SKIP $1" >>$R; }
summary() { echo "$(grep -c '^ok' $R) passed, $(grep -c '^FAIL' $R) failed, $(grep -c '^SKIP' $R) skipped"; }

echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
# every program built first, side by side (each compiles the whole header, ~20 s: on a 16-core GPU
# machine ~25 s in all instead of ~3 minutes one after the other), each reported as an item
build() {   # build NAME FLAGS... SOURCE: $B/NAME, its log $L/cc_NAME.log, its status $L/cc_NAME.rc
    name=$1; shift
    ( $CC -std=c99 $WARN "$@" -o $B/$name -lm -ldl >$L/cc_$name.log 2>&1; echo $? >$L/cc_$name.rc ) &
}
rm -f $L/cc_*.rc $R
build test_cuda -O2 -g tests/test_cuda.c
build test_cuda_launches -O2 -g -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c
build test_cuda_rows -O2 -g -DCQ_CUDA_GATHER_ROWS=0 -DCQ_CUDA_SCAN_SELF_SUM=0 -DCQ_CUDA_RESIDENT_MAX=5 -DCQ_CUDA_GATHER_THREADS=192 -DCQ_CUDA_G2P_UNROLLED=1 -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c
build test_cuda_one_block -O2 -g -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c
build test_cuda_coop_few -O2 -g -DCQ_CUDA_COOP_BLOCKS=3 tests/test_cuda.c
build test_table3 -O2 tests/test_table3.c
build test_gradients -O2 tests/test_gradients.c
build test_scenes -O2 tests/test_scenes.c
build test_world_cuda -O2 -g tests/test_world_cuda.c
wait
for b in test_cuda test_cuda_launches test_cuda_rows test_cuda_one_block test_cuda_coop_few test_table3 test_gradients test_scenes test_world_cuda; do
    item build_$b sh -c "cat $L/cc_$b.log; [ \"\$(cat $L/cc_$b.rc 2>/dev/null)\" = 0 ]"
done
./$B/test_cuda > $L/probe.log 2>&1
if grep -q '^SKIP' $L/probe.log; then
    skip all "$(grep '^SKIP' $L/probe.log | head -n 1)"
    summary; exit 1
fi
# three lanes side by side (processes on one GPU time-slice it: on an H100 three at a time cost
# each item up to 2x its time alone, five at a time up to 2.7x): the gradient tests (~215 s
# alone), the parity items, the sanitizers (~230 s); ~5 minutes in all instead of ~10
(
item parity sh -c "./$B/test_cuda | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
grep '^    [23]D' $L/parity.log
item parity_sort_launches sh -c "./$B/test_cuda_launches | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
item parity_gather_rows sh -c "./$B/test_cuda_rows | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
item parity_sort_one_block sh -c "./$B/test_cuda_one_block | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
item parity_sort_coop_few sh -c "./$B/test_cuda_coop_few | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
item table3_on_gpu sh -c "./$B/test_table3 > $L/table3.out 2>&1; rc=\$?; cat $L/table3.out; grep -q 'backend: CUDA' $L/table3.out && [ \$rc -eq 0 ]"
# batched scenes: CUDA vs CPU (1e-9 relative in f64: a GPU fuses multiply-adds) and two CUDA runs
# bitwise equal (the sums are gathers in a fixed order: deterministic)
item scenes_on_gpu sh -c "./$B/test_scenes | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
item world_parity sh -c "./$B/test_world_cuda | tee /dev/stderr | grep -q '^[0-9]* passed, 0 failed'"
grep '^    [23]D' $L/world_parity.log
) &
# the finite-difference gradient tests, and the bitwise one (checkpointed vs fully stored tapes:
# every sum on the GPU is in a fixed order, actuation and cable gradients included)
( item gradients_on_gpu sh -c "for t in end_to_end each_wall running_loss long_horizon checkpointed cable_actuation; do ./$B/test_gradients \$t || exit 1; done" ) &
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$CS" ]; then
    item memcheck $CS --tool memcheck --error-exitcode 99 ./$B/test_cuda parity_all
    item racecheck $CS --tool racecheck --error-exitcode 99 ./$B/test_cuda parity_all
    item synccheck $CS --tool synccheck --error-exitcode 99 ./$B/test_cuda parity_all
    item racecheck_gather_rows $CS --tool racecheck --error-exitcode 99 ./$B/test_cuda_rows parity_all
    # the sort as launches: cell_count's block maxima of the particles' box (shared memory, barriers)
    item racecheck_sort_launches $CS --tool racecheck --error-exitcode 99 ./$B/test_cuda_launches parity_all
    # the sort in one cooperative launch (the default binary's small scenes, above, under every
    # tool) with 3 blocks, each taking several batches of particles and tiles of the scan; the
    # one-block sort (no longer the default; it took the box's block maxima on 2026-11-27, not yet
    # run on a GPU since)
    item racecheck_sort_coop_few $CS --tool racecheck --error-exitcode 99 ./$B/test_cuda_coop_few parity_all
    item racecheck_sort_one_block $CS --tool racecheck --error-exitcode 99 ./$B/test_cuda_one_block parity_all
    item world_memcheck $CS --tool memcheck --error-exitcode 99 ./$B/test_world_cuda parity
else
    skip memcheck "compute-sanitizer not on PATH"; skip racecheck "compute-sanitizer not on PATH"
    skip synccheck "compute-sanitizer not on PATH"; skip racecheck_gather_rows "compute-sanitizer not on PATH"
    skip racecheck_sort_launches "compute-sanitizer not on PATH"
    skip racecheck_sort_coop_few "compute-sanitizer not on PATH"; skip racecheck_sort_one_block "compute-sanitizer not on PATH"
    skip world_memcheck "compute-sanitizer not on PATH"
fi
wait
summary
! grep -q '^FAIL' $R
