#!/bin/sh
# Runs every test of the project (called by `make test`).  Each item either prints its own
# "N passed, N failed" line (C test programs), whose counts are added, or counts as one test
# by its exit status.  Logs: build/logs/<item>.log.  Closing line: N passed, N failed, N skipped.
CC=${CC:-cc}; CXX=${CXX:-c++}; PYTHON=${PYTHON:-python3}; NVCC=${NVCC:-nvcc}
NVCCFLAGS=${NVCCFLAGS:--arch=compute_75 -Werror all-warnings -diag-suppress 177}
B=build; L=$B/logs
mkdir -p $L
R=$L/results; : > $R       # one line per item: passed failed skipped (both lanes append)
WARN="-Wall -Wextra -Werror -pedantic"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Programs that use only the MPM build without the fluid-rigid world (CQ_NO_WORLD, ~30% less
# compile time each); the world's own programs and the compile matrix build everything.
NW="-DCQ_NO_WORLD"
nw() { case $1 in *world*) ;; *) printf '%s' "$NW" ;; esac; }

# item NAME CMD...: run CMD, log it, count it
item() {
    name=$1; shift
    start=$(date +%s)
    if "$@" >$L/$name.log 2>&1; then rc=0; else rc=1; fi
    line=$(grep -E '^[a-z_]*:? ?[0-9]+ passed, [0-9]+ failed' $L/$name.log | tail -n 1 | sed 's/^[a-z_]*: //')
    secs=$(( $(date +%s) - start ))
    if [ -n "$line" ]; then
        np=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/'); nf=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
        if [ $rc -ne 0 ] && [ "$nf" -eq 0 ]; then nf=1; fi
        echo "$np $nf 0" >> $R
        if [ "$nf" -eq 0 ]; then echo "ok   $name ($np tests, ${secs}s)"; else echo "FAIL $name ($np passed, $nf failed, ${secs}s; see $L/$name.log)"; grep -E '^(FAIL|    )' $L/$name.log | head -n 30; fi
    elif [ $rc -eq 0 ]; then
        echo "1 0 0" >> $R; echo "ok   $name (${secs}s)"
    else
        echo "0 1 0" >> $R; echo "FAIL $name (see $L/$name.log)"; tail -n 30 $L/$name.log
    fi
}
skip() { echo "0 0 1" >> $R; echo "SKIP $1: $2"; }

# The slow items (sanitizers, valgrind, the long-horizon Table III) run in a second lane, in
# parallel with the rest: the suite keeps well inside CI's time on 2 cores.
lane_slow() {
    # the fluid-rigid world's physics (tank, Archimedes, dam break) and coupled derivatives' report
    # the world's C++ and fast-math builds, the README's programs and the fluid bench's quick run
    # (here to balance the lanes)
    item test_world_openmp sh -c "$CC -std=c99 -O2 -g1 $WARN -fopenmp tests/test_world.c -o $B/test_world_omp -lm && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$B/test_world_omp"
    item test_io_memory sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/test_io_memory.c -o $B/test_io_memory_san -lm && ./$B/test_io_memory_san && \
        $CXX -std=c++11 -O2 $WARN $NW -x c++ tests/test_io_memory.c -o $B/test_io_memory_cxx -lm && ./$B/test_io_memory_cxx"
    item test_world_fast_math sh -c "$CC -std=c99 -O3 -ffast-math $WARN tests/test_world.c -o $B/test_world_fm -lm && ./$B/test_world_fm"
    item readme_snippets env CC="$CC" sh tests/readme_snippets.sh
    [ -f bench/fluid.c ] && item bench_fluid_quick sh -c "$CC -std=c99 -O2 $WARN bench/fluid.c -o $B/bench_fluid_quick -lm && ./$B/bench_fluid_quick quick"
    item test_world_physics sh -c "$CC -std=c99 -O2 $WARN tests/test_world.c -o $B/test_world_phys -lm && ./$B/test_world_phys physics"
    for t in test_physics test_errors test_adjoint_stages test_lanes test_gradients test_robot test_reverse test_world; do
        item ${t}_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $(nw $t) tests/$t.c -o $B/${t}_san -lm && ./$B/${t}_san"
    done
    if command -v valgrind >/dev/null 2>&1; then
        item test_errors_valgrind sh -c "$CC -std=c99 -O1 -g1 $WARN $NW tests/test_errors.c -o $B/test_errors_vg -lm && \
            valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all ./$B/test_errors_vg"
        # the backward's kept grids leave the rows no particle reaches unwritten and unread (>>grid_cache):
        # memcheck reports any read of them
        item test_reverse_valgrind sh -c "$CC -std=c99 -O1 -g1 $WARN $NW tests/test_reverse.c -o $B/test_reverse_vg -lm && \
            valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all ./$B/test_reverse_vg"
    else
        skip test_errors_valgrind "valgrind not installed"
        skip test_reverse_valgrind "valgrind not installed"
    fi
    # concurrent creates (per-thread create error) and the CUDA driver's one-time load, under TSan
    item test_threads_tsan sh -c "$CC -std=c99 -O1 -g1 $WARN -fsanitize=thread $NW tests/test_threads.c -o $B/test_threads_tsan -lm -pthread && \
        ./$B/test_threads_tsan && CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 CQ_MOCK_NO_PROTECT=1 ./$B/test_threads_tsan"
    # the loaders' fuzz target (tests/fuzz/fuzz_io.c): libFuzzer where clang has it, else a fixed-seed loop
    item fuzz_io sh tests/fuzz/run_io.sh 20
    # the API state-machine fuzzer: a fixed seed set (tests/fuzz_api.c; longer runs: see README)
    item fuzz_api_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/fuzz_api.c -o $B/fuzz_api_san -lm && ./$B/fuzz_api_san 150 400 1"
    # the world's call-sequence fuzzer (tests/fuzz_world.c: random calls, hostile values, failing allocator)
    item fuzz_world_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN tests/fuzz_world.c -o $B/fuzz_world_san -lm && ./$B/fuzz_world_san 25 150 1 2>/dev/null"
    item fuzz_world_on_mock_cuda sh -c "CQ_FUZZ_WORLD_CUDA=1 CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 ./$B/fuzz_world_san 12 150 3 2>/dev/null"
    item fuzz_api_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 ./$B/fuzz_api_san 20 300 1001"
    # batched scenes (tests/test_scenes.c): under the sanitizers, and on the mock driver (bitwise vs the CPU there)
    item test_scenes_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/test_scenes.c -o $B/test_scenes_san -lm -ldl && \
        ./$B/test_scenes_san && CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 CQ_MOCK_BITWISE=1 ./$B/test_scenes_san"
    item test_batch_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/test_batch.c -o $B/test_batch_san -lm -ldl && \
        ./$B/test_batch_san && CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 ./$B/test_batch_san cuda"
    item test_table3 sh -c "$CC -std=c99 -O2 $WARN $NW tests/test_table3.c -o $B/test_table3 -lm && ./$B/test_table3"
    # the CUDA host code under the sanitizers, on the mock driver
    item test_cuda_asan_ubsan_on_mock sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/test_cuda.c -o $B/test_cuda_san -lm && \
        CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 ./$B/test_cuda_san"
    item test_world_cuda_asan_ubsan_on_mock sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN tests/test_world_cuda.c -o $B/test_world_cuda_san -lm -ldl && \
        CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 ./$B/test_world_cuda_san"
    item test_table3_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$PWD/$B/mock/libcuda.so.1 CQ_MOCK_NO_PROTECT=1 ./$B/test_table3 | \
        tee /dev/stderr | grep 'backend: CUDA' >/dev/null"
}
# the mock CUDA driver (tests/gpu/mock_libcuda.c) both lanes use
item cuda_mock_build sh tests/gpu/build_mock.sh "$CC"
lane_slow > $L/lane_slow.out 2>&1 &
SLOW=$!

# ---- generated files are current (regenerate elsewhere, compare)
item regen_current sh -c "rm -rf $B/regen && mkdir -p $B/regen && $PYTHON -m generator -o $B/regen/chainqueen.h --cuda-dir $B/regen && \
    cmp $B/regen/chainqueen.h chainqueen.h && for t in 2d_f32 2d_f64 3d_f32 3d_f64; do \
    cmp $B/regen/chainqueen_kernels_\$t.cu cuda/chainqueen_kernels_\$t.cu || exit 1; done"

# ---- compile matrix
item compile_c99 $CC -std=c99 $WARN -c tests/compile/impl.c -o $B/impl_c99.o
item compile_cxx11 $CXX -std=c++11 $WARN -x c++ -c tests/compile/impl.c -o $B/impl_cxx.o
item compile_c99_openmp $CC -std=c99 $WARN -fopenmp -c tests/compile/impl.c -o $B/impl_omp.o
item compile_cxx11_openmp $CXX -std=c++11 $WARN -fopenmp -x c++ -c tests/compile/impl.c -o $B/impl_cxx_omp.o
# warning-clean under what game engines build with (gcc and clang, C and C++, -O0 and -O2)
STRICT="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror"
item compile_strict_gcc sh -c "$CC -std=c99 $STRICT -c tests/compile/impl.c -o $B/strict1.o && \
    $CC -std=c99 -O2 -fopenmp $STRICT -c tests/compile/impl.c -o $B/strict2.o && \
    $CXX -std=c++11 -O2 $STRICT -x c++ -c tests/compile/impl.c -o $B/strict3.o && \
    $CC -std=c99 -O1 $STRICT -DCQ_NO_CUDA -c tests/compile/impl.c -o $B/strict4.o"
item compile_strict_gcc_robot_io sh -c "for f in robot_impl io_impl; do $CC -std=c99 -O2 $STRICT -c tests/compile/\$f.c -o $B/strict_\$f.o && \
    $CXX -std=c++11 $STRICT -x c++ -c tests/compile/\$f.c -o $B/strict_\${f}_cxx.o || exit 1; done"
if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
    item compile_strict_clang sh -c "clang -std=c99 -O2 $STRICT -c tests/compile/impl.c -o $B/strict5.o && \
        clang++ -std=c++11 $STRICT -x c++ -c tests/compile/impl.c -o $B/strict6.o && \
        for f in robot_impl io_impl; do clang -std=c99 $STRICT -c tests/compile/\$f.c -o $B/strict_c_\$f.o && \
        clang++ -std=c++11 -O2 $STRICT -x c++ -c tests/compile/\$f.c -o $B/strict_cxx_\$f.o || exit 1; done"
else
    skip compile_strict_clang "clang/clang++ not installed"
fi
# the implementation as a shared library (CQ_API), only the public names exported; CQ_API static
item shared_library_cq_api sh tests/compile/shared_lib.sh "$CC" $B
item compile_no_cuda sh -c "$CC -std=c99 $WARN tests/compile/no_cuda.c -o $B/no_cuda -lm && ./$B/no_cuda && ! nm $B/no_cuda | grep -q dlopen"
CUDA_INC=$(dirname "$(ls /usr/local/cuda/include/cuda.h 2>/dev/null | head -n 1)" 2>/dev/null)
if [ -f "$CUDA_INC/cuda.h" ]; then   # cuda.h itself needs C11 or C++ (anonymous unions)
    item compile_with_cuda_h sh -c "$CC -std=c11 -Wall -Wextra -Werror -I$CUDA_INC tests/compile/with_cuda_h.c -o $B/with_cuda_h -lm && \
        $CXX -std=c++11 $WARN -I$CUDA_INC -x c++ tests/compile/with_cuda_h.c -o $B/with_cuda_h_cxx -lm && ./$B/with_cuda_h"
else
    skip compile_with_cuda_h "no CUDA SDK (cuda.h) under /usr/local/cuda"
fi
item decl_only_c89_link sh -c "$CC -std=c89 -Wall -Wextra -Werror -pedantic -Wno-long-long -c tests/compile/decl_only.c -o $B/decl.o && \
    $CC $B/decl.o $B/impl_c99.o -o $B/decl_only -lm && ./$B/decl_only"
item decl_only_cxx_link sh -c "$CXX -std=c++98 $WARN -x c++ -c tests/compile/decl_only.c -o $B/decl_cxx.o && \
    $CXX $B/decl_cxx.o $B/impl_cxx.o -o $B/decl_only_cxx -lm && ./$B/decl_only_cxx"

# game-engine flags: the finite checks test bits, so NaN/Inf input and blow-ups stay errors
for t in test_errors test_reverse; do
    item ${t}_fast_math sh -c "$CC -std=c99 -O3 -ffast-math $WARN $(nw $t) tests/$t.c -o $B/${t}_fm -lm && ./$B/${t}_fm"
done
item test_errors_finite_math_only_cxx sh -c "$CXX -std=c++11 -O2 -ffinite-math-only $WARN $NW -x c++ tests/test_errors.c -o $B/test_errors_fmo -lm && ./$B/test_errors_fmo"

# ---- CUDA sources compile (no GPU needed)
for t in 2d_f32 2d_f64 3d_f32 3d_f64; do
    if command -v $NVCC >/dev/null 2>&1; then
        item cuda_ptx_$t $NVCC -ptx $NVCCFLAGS cuda/chainqueen_kernels_$t.cu -o $B/chainqueen_kernels_$t.ptx
    else
        skip cuda_ptx_$t "no nvcc on PATH"
    fi
done

# ---- the C test programs: plain, OpenMP, C++, sanitizers, valgrind
for t in test_physics test_errors test_adjoint_stages test_lanes test_gradients test_robot test_reverse test_world; do
    [ -f tests/$t.c ] || continue
    item ${t} sh -c "$CC -std=c99 -O2 -g1 $WARN $(nw $t) tests/$t.c -o $B/$t -lm && ./$B/$t"
    case $t in test_world|test_errors|test_reverse) ;; *) item ${t}_openmp sh -c "$CC -std=c99 -O2 -g1 $WARN $(nw $t) -fopenmp tests/$t.c -o $B/${t}_omp -lm && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$B/${t}_omp" ;; esac
    [ $t = test_world ] || item ${t}_cxx sh -c "$CXX -std=c++11 -O1 $WARN $(nw $t) -x c++ tests/$t.c -o $B/${t}_cxx -lm && ./$B/${t}_cxx"
done

# the CPU's lane kernels as a game engine or the bench builds them: vectorized for this machine (AVX2 /
# AVX-512 gathers), where -O2 above gets SSE2; with clang too where it is installed
item test_lanes_native sh -c "$CC -std=c99 -O3 -march=native $WARN $NW tests/test_lanes.c -o $B/test_lanes_native -lm && ./$B/test_lanes_native"
if command -v clang >/dev/null 2>&1; then
    item test_lanes_native_clang sh -c "clang -std=c99 -O3 -march=native $WARN $NW tests/test_lanes.c -o $B/test_lanes_native_clang -lm && ./$B/test_lanes_native_clang"
else
    skip test_lanes_native_clang "clang not installed"
fi

item test_world_cxx sh -c "$CXX -std=c++11 -O1 $WARN -x c++ tests/test_world.c -o $B/test_world_cxx -lm && ./$B/test_world_cxx"

# ---- the CUDA backend's host side against a mock driver (tests/gpu/mock_libcuda.c: the
#      kernels run on the CPU, device memory is inaccessible to the host, faults on demand)
MOCK=$PWD/$B/mock/libcuda.so.1
item cuda_mock_selftest sh -c "$CC -std=c99 -O1 -g1 $WARN tests/gpu/mock_selftest.c -o $B/mock_selftest -ldl && ./$B/mock_selftest $MOCK"
item test_cuda_build $CC -std=c99 -O2 -g1 $WARN $NW tests/test_cuda.c -o $B/test_cuda -lm -ldl
item test_cuda_on_mock env CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda
# again with the barrier kernels' blocks (the sort in one block, the scans' tiles, the gathers) run
# as fibers that meet at their barriers, so their parallel path runs, not the emulation's
# thread-0 loop: every one-block launch, and one block in 3 of the others (CQ_MOCK_FIBERS=3; =1
# takes every block, ~2.5x the time)
item test_cuda_on_mock_fibers env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda
# the gather's 3-row shape (large scenes' choice, CQ_CUDA_GATHER_ROWS) on every scene: bitwise the
# CPU's again, then its parallel path as fibers (the failing-step and large-grid cases)
item test_cuda_gather_rows_on_mock sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CUDA_GATHER_ROWS=0 tests/test_cuda.c -o $B/test_cuda_rows -lm -ldl && \
    CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda_rows && CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_rows a_large && \
    CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_rows a_failing_step"
# batched scenes again, from the contract (tests/test_batch.c): K = 3 or 4 scenes bitwise alone on the CPU
# (state, all gradients, actuation gradients; host threads), bad scenes, a failing step; then on the
# mock driver (filter "cuda"): CUDA batched bitwise the CPU's, twice from reset
item test_batch sh -c "$CC -std=c99 -O2 -g1 $WARN $NW tests/test_batch.c -o $B/test_batch -lm -ldl && ./$B/test_batch"
item test_batch_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch cuda
# float32 kernels with subnormals kept (CQ_CPU_KEEP_SUBNORMALS): the flush test expects them kept
item cpu_keep_subnormals sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_KEEP_SUBNORMALS tests/test_batch.c -o $B/test_batch_keep -lm -ldl && \
    ./$B/test_batch_keep f32_kernels_flush"
# the drivers with the lanes forced on (-O2: the loops' logic, remainders, failures): the batched
# scenes bitwise alone, on host threads, and on the mock driver (one-particle kernels) bitwise the
# CPU's; failing steps' errors.  Then as the bench builds them (-O3 -march=native, lanes on by
# default on an AVX-512 machine): the CPU part only, since there gcc 12 fuses some multiply-adds
# of the stress despite -ffp-contract=off (vfmsubadd), so CPU and mock differ by roundings (they
# did before the lanes too); every particle still runs the same code, which this checks
item cpu_lanes_forced sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_LANES=1 tests/test_batch.c -o $B/test_batch_lanes -lm -ldl && \
    ./$B/test_batch_lanes && CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_lanes cuda && \
    $CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_LANES=1 tests/test_errors.c -o $B/test_errors_lanes -lm && ./$B/test_errors_lanes && \
    $CC -std=c99 -O3 -march=native $WARN $NW tests/test_batch.c -o $B/test_batch_native -lm -ldl && ./$B/test_batch_native"
# AVX2 without AVX-512 (-march=x86-64-v3): the default lanes are f64's only; batched and threaded
# runs bitwise as before, the CPU against the mock's one-particle kernels at -O2
if grep -q ' avx2' /proc/cpuinfo 2>/dev/null; then
    item cpu_lanes_avx2 sh -c "$CC -std=c99 -O2 -g1 -march=x86-64-v3 $WARN $NW tests/test_batch.c -o $B/test_batch_avx2 -lm -ldl && \
        ./$B/test_batch_avx2 && CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_avx2 cuda"
else
    skip cpu_lanes_avx2 "this CPU has no AVX2 (/proc/cpuinfo)"
fi
item test_scenes sh -c "$CC -std=c99 -O2 -g1 $WARN $NW tests/test_scenes.c -o $B/test_scenes -lm -ldl && ./$B/test_scenes && \
    CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_BITWISE=1 ./$B/test_scenes"
for f in init nodevice oldriver ptx oom oom_after=20 launch_after=40; do
    item test_cuda_fault_$(echo $f | tr = _) env CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda fault:$f
done
# the fluid-rigid world's CUDA backend against its CPU backend (tests/test_world_cuda.c), and faults
item test_world_cuda_build $CC -std=c99 -O2 -g1 $WARN tests/test_world_cuda.c -o $B/test_world_cuda -lm -ldl
item test_world_cuda_on_mock env CQ_CUDA_LIBRARY=$MOCK ./$B/test_world_cuda
for f in init ptx oom_after=10 oom_after=22 oom_after=24 launch_after=5 launch_after=300; do
    item test_world_cuda_fault_$(echo $f | tr = _) env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_QUIET=1 ./$B/test_world_cuda fault:$f
done
# the CPU test programs again, with the default backend on the mock GPU (device memory left
# host-readable here for speed: test_cuda above checks that with protection on)
for t in test_physics test_errors test_gradients test_robot test_reverse; do
    item ${t}_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/$t
done
# a real GPU, where there is one (tests/gpu/run.sh is the full GPU suite)
if ./$B/test_cuda > $L/gpu_probe.log 2>&1 && ! grep -q '^SKIP' $L/gpu_probe.log; then
    item test_cuda_gpu ./$B/test_cuda
else
    skip test_cuda_gpu "$(grep '^SKIP' $L/gpu_probe.log | head -n 1 | cut -c7-)"
fi

# ---- a header generated with a user material file (examples/materials/stvk.py)
item custom_material sh -c "$PYTHON -m generator --material examples/materials/stvk.py -o $B/cq_stvk.h && \
    $CC -std=c99 -O2 $WARN -I$B tests/test_custom_material.c -o $B/test_custom_material -lm && ./$B/test_custom_material"

# ---- the generator run from another directory, as a user would (python3 path/to/generator): the
#      same header as custom_material's (tested above) but for the material file's name (and the
#      CUDA sources' hashes, which include it; the PTX itself is the same)
item generator_from_anywhere sh -c "rm -rf $B/gen_elsewhere && mkdir -p $B/gen_elsewhere && cp examples/materials/stvk.py $B/gen_elsewhere/my.py && \
    cd $B/gen_elsewhere && timeout 600 $PYTHON $PWD/generator --material my.py -o cq_stvk.h && grep -q 'from my.py' cq_stvk.h && \
    ! grep -q '$PWD' cq_stvk.h && cd $PWD && sed 's|sha256 [0-9a-f]*|sha256 -|' $B/cq_stvk.h > $B/gen_elsewhere/ref.h && \
    sed 's|from my\\.py|from examples/materials/stvk.py|g; s|sha256 [0-9a-f]*|sha256 -|' $B/gen_elsewhere/cq_stvk.h | cmp - $B/gen_elsewhere/ref.h"

# ---- chainqueen_io.h: PNG/STL robots (fixtures made by a stdlib-only Python script)
item test_io sh -c "mkdir -p $B/io && $PYTHON tests/make_io_fixtures.py $B/io && $CC -std=c99 -O2 -g1 $WARN $NW tests/test_io.c -o $B/test_io -lm && ./$B/test_io $B/io"
item test_io_cxx sh -c "$CXX -std=c++11 -O2 $WARN $NW -x c++ tests/test_io.c -o $B/test_io_cxx -lm && ./$B/test_io_cxx $B/io"
item test_io_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW tests/test_io.c -o $B/test_io_san -lm && ./$B/test_io_san $B/io"
if command -v valgrind >/dev/null 2>&1; then
    item test_io_valgrind sh -c "$CC -std=c99 -O1 -g1 $WARN $NW tests/test_io.c -o $B/test_io_vg -lm && valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all ./$B/test_io_vg $B/io"
fi

# ---- image writer used by the demo (PNG/GIF validated by an independent decoder)
item test_image sh -c "$CC -std=c99 -O2 $WARN tests/test_image.c -o $B/test_image && ./$B/test_image $B && $PYTHON tests/check_image.py $B"

# ---- the README's C blocks compile and run as written

# ---- examples and bench build and run
# (-O1: as fast as -O2 for these quick runs, 40% less compile time; -O2/-O3 builds are above)
for ex in examples/[0-9]*.c; do
    n=$(basename $ex .c)
    case $n in 01_*) item example_$n sh -c "$CC -std=c99 -O1 $WARN $NW $ex -o $B/$n -lm && ./$B/$n" ;;
               02_*) item example_$n sh -c "$CC -std=c99 -O1 $WARN $NW $ex -o $B/$n -lm && ./$B/$n $B/demo_out" ;;
               11_*) item example_$n sh -c "$CC -std=c99 -O1 $WARN $NW $ex -o $B/$n -lm -pthread && ./$B/$n $B/ex_out quick" ;;
               *) # optimisation examples: the quick mode must reduce the loss (exit status says)
                  # (the fluid-rigid examples build with the world, the others without: CQ_NO_WORLD)
                  item example_$n sh -c "$CC -std=c99 -O1 $WARN $(grep -q cq_world_create $ex || printf '%s' "$NW") $ex -o $B/$n -lm && ./$B/$n $B/ex_out quick" ;; esac
done
[ -f bench/bench.c ] && item bench_quick sh -c "$CC -std=c99 -O2 $WARN $NW bench/bench.c -o $B/bench_quick -lm && ./$B/bench_quick quick"
# the same binaries on the mock GPU: example 10 (CPU vs CUDA), example 12 with the world on
# CUDA (a tank, a floating box, a thrown ball's gradient), the bench's quick mode
item example_10_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/10_cpu_vs_gpu > $L/cpu_vs_gpu.out; rc=\$?; \
    cat $L/cpu_vs_gpu.out; grep -q 'largest difference' $L/cpu_vs_gpu.out && [ \$rc -eq 0 ]"
item example_12_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/12_fluid_rigid $B/ex_out quick gpu
[ -f bench/bench.c ] && item bench_quick_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/bench_quick quick gpu
# bench/gpu_kernels.c (ncu's fixed workload, bench/gpu.sh PROFILE=1) builds and runs: a small cube
item gpu_kernels_on_mock_cuda sh -c "$CC -std=c99 -O2 $WARN bench/gpu_kernels.c -o $B/gpu_kernels -lm -ldl && \
    CQ_CUDA_LIBRARY=$MOCK ./$B/gpu_kernels 3 8 32 | grep -q '^512 particles, 12 taped steps'"

wait $SLOW
echo "---- slow lane (sanitizers, valgrind, Table III):"
cat $L/lane_slow.out
set -- $(awk '{p += $1; f += $2; s += $3} END {print p + 0, f + 0, s + 0}' $R)
echo "$1 passed, $2 failed, $3 skipped"
[ "$2" -eq 0 ]
