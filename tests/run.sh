#!/bin/sh
# Runs every test of the project (called by `make test`).  Each item either prints its own
# "N passed, N failed" line (C test programs), whose counts are added, or counts as one test
# by its exit status.  Logs: build/logs/<item>.log.  Closing line: N passed, N failed, N skipped.
#
# The items are grouped in chains (a chain's later items use what its first built: a binary, a
# header); after a short serial setup, TEST_JOBS workers (default 2, CI's cores) take the chains
# longest first from two queues (see "the run" below), so the suite's time is about its total
# over the cores.  A chain's output is printed whole when it ends.  Run a few chains only:
# sh tests/run.sh CHAIN...
CC=${CC:-cc}; CXX=${CXX:-c++}; PYTHON=${PYTHON:-python3}; NVCC=${NVCC:-nvcc}
NVCCFLAGS=${NVCCFLAGS:--arch=compute_75 -Werror all-warnings -diag-suppress 177}
JOBS=${TEST_JOBS:-2}
B=build; L=$B/logs
mkdir -p $L
R=$L/results; : > $R       # one line per item: passed failed skipped (every worker appends)
WARN="-Wall -Wextra -Werror -pedantic"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Programs that use only the MPM build without the fluid-rigid world (CQ_NO_WORLD, ~30% less
# compile time each); the world's own programs and the compile matrix build everything.
NW="-DCQ_NO_WORLD"
nw() { case $1 in *world*) ;; *) printf '%s' "$NW" ;; esac; }
MOCK=$PWD/$B/mock/libcuda.so.1

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

# ============================== the chains ==============================
# CHAINS: "estimated seconds on 2 cores, chain, kind" (the order of the queues; re-estimate from
# the "(Ns)" of each item when a chain grows a lot)
# A third field "s": a sanitizer's or another long run (the rest are mostly compiles).
CHAINS=""
chain() { CHAINS="$CHAINS
$1 $2 ${3:-c}"; }

# ---- generated files are current (regenerate elsewhere, compare)
chain 6 regen
c_regen() {
    item regen_current sh -c "rm -rf $B/regen && mkdir -p $B/regen && $PYTHON -m generator -o $B/regen/chainqueen.h --cuda-dir $B/regen && \
        cmp $B/regen/chainqueen.h chainqueen.h && for t in 2d_f32 2d_f64 3d_f32 3d_f64; do \
        cmp $B/regen/chainqueen_kernels_\$t.cu cuda/chainqueen_kernels_\$t.cu || exit 1; done"
    item manual_map_anchors $PYTHON tests/map_anchors.py chainqueen.h   # the header's map leads to code
}

# ---- compile matrix (the declarations-only programs link against the implementations built first)
chain 5 compile_c99
c_compile_c99() {
    # (near and far defined empty, as <windows.h> defines them: a member named near broke the header
    # there once, and tests/windows.sh is not in make test)
    item compile_c99 $CC -std=c99 $WARN -Dnear= -Dfar= -c tests/compile/impl.c -o $B/impl_c99.o
    item decl_only_c89_link sh -c "$CC -std=c89 -Wall -Wextra -Werror -pedantic -Wno-long-long -c tests/compile/decl_only.c -o $B/decl.o && \
        $CC $B/decl.o $B/impl_c99.o -o $B/decl_only -lm && ./$B/decl_only"
}
chain 5 compile_cxx11
c_compile_cxx11() {
    item compile_cxx11 $CXX -std=c++11 $WARN -x c++ -c tests/compile/impl.c -o $B/impl_cxx.o
    item decl_only_cxx_link sh -c "$CXX -std=c++98 $WARN -x c++ -c tests/compile/decl_only.c -o $B/decl_cxx.o && \
        $CXX $B/decl_cxx.o $B/impl_cxx.o -o $B/decl_only_cxx -lm && ./$B/decl_only_cxx"
}
chain 7 compile_openmp
c_compile_openmp() {
    item compile_c99_openmp $CC -std=c99 $WARN -fopenmp -c tests/compile/impl.c -o $B/impl_omp.o
    item compile_cxx11_openmp $CXX -std=c++11 $WARN -fopenmp -x c++ -c tests/compile/impl.c -o $B/impl_cxx_omp.o
}
# warning-clean under what game engines build with (gcc and clang, C and C++, -O0 to -O3; C++ with
# AVX-512 (x86-64-v4) at -O3: the lane square roots' intrinsics and the lane groups' loads,
# cpu_lanes.j2 >>vgroup; C++ with AVX2 (x86-64-v3): the groups' loads again)
STRICT="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror"
# gcc's report of the loops it vectorized: every lane kernel of the default lanes has some (a game
# engine's -O2 without -march: float32's; x86-64-v3 in cpu_lanes_avx2: both; tests/vec_lanes.py)
is_gcc() { $CC -v 2>&1 | grep -q '^gcc version'; }
vec_report() { if is_gcc; then rm -f $B/$1; printf '%s' "-fopt-info-vec-optimized=$B/$1"; fi; }
vec_check() {   # vec_check NAME REPORT PRECISIONS
    if is_gcc; then item $1 $PYTHON tests/vec_lanes.py chainqueen.h $B/$2 $3; else skip $1 "CC is not gcc (the check reads gcc's -fopt-info)"; fi
}
chain 37 compile_strict_gcc
c_compile_strict_gcc() {
    item compile_strict_gcc sh -c "$CC -std=c99 $STRICT -c tests/compile/impl.c -o $B/strict1.o && \
        $CC -std=c99 -O2 -fopenmp $STRICT $(vec_report vec_o2.txt) -c tests/compile/impl.c -o $B/strict2.o && \
        $CXX -std=c++11 -O3 -march=x86-64-v4 $STRICT -x c++ -c tests/compile/impl.c -o $B/strict3.o && \
        $CC -std=c99 -O1 $STRICT -DCQ_NO_CUDA -c tests/compile/impl.c -o $B/strict4.o && \
        $CXX -std=c++11 -O1 -march=x86-64-v3 $STRICT $NW -x c++ -c tests/compile/impl.c -o $B/strict7.o"
    vec_check vec_lanes_o2 vec_o2.txt f32
    item compile_strict_gcc_robot_io sh -c "for f in robot_impl io_impl; do $CC -std=c99 -O2 $STRICT -c tests/compile/\$f.c -o $B/strict_\$f.o && \
        $CXX -std=c++11 $STRICT -x c++ -c tests/compile/\$f.c -o $B/strict_\${f}_cxx.o || exit 1; done"
}
chain 14 compile_strict_clang
c_compile_strict_clang() {
    if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
        item compile_strict_clang sh -c "clang -std=c99 -O2 $STRICT -c tests/compile/impl.c -o $B/strict5.o && \
            clang++ -std=c++11 $STRICT -x c++ -c tests/compile/impl.c -o $B/strict6.o && \
            for f in robot_impl io_impl; do clang -std=c99 $STRICT -c tests/compile/\$f.c -o $B/strict_c_\$f.o && \
            clang++ -std=c++11 -O2 $STRICT -x c++ -c tests/compile/\$f.c -o $B/strict_cxx_\$f.o || exit 1; done"
    else
        skip compile_strict_clang "clang/clang++ not installed"
    fi
}
chain 21 compile_misc
c_compile_misc() {
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
}
# ---- the tests that use the public API alone link the implementation compiled once per set of
#      flags (tests/compile/impl.c), as a program of several files uses the header: their own file
#      is built with CQT_LINKED (the header's declarations only; ~1 s instead of ~15-25 s).  The
#      tests that reach into the internals (cq__*) include the implementation, as the examples and
#      the README's snippets do.  impl NAME "COMPILER FLAGS": builds $B/impl_NAME.o and sets what
#      lk uses; lk TEST OUT: the command that builds tests/TEST.c with those flags into $B/OUT
impl() {
    LK_FLAGS=$2; LK_OBJ=$B/impl_$1.o
    item impl_$1 sh -c "$2 -c tests/compile/impl.c -o $LK_OBJ"
}
lk() {   # (the compiler's language option, -x c++, must not reach the object: compile, then link)
    printf '%s' "rm -f $B/$2 && $LK_FLAGS -DCQT_LINKED -c tests/$1.c -o $B/$2.o && $(echo "$LK_FLAGS" | sed 's/ -x c++//') $B/$2.o $LK_OBJ -o $B/$2 -lm -ldl"
}
# game-engine flags: the finite checks test bits, so NaN/Inf input and blow-ups stay errors
chain 13 test_errors_fast_math
c_test_errors_fast_math() { item test_errors_fast_math sh -c "$CC -std=c99 -O3 -ffast-math $WARN $NW tests/test_errors.c -o $B/test_errors_fm -lm && ./$B/test_errors_fm"; }
chain 13 test_reverse_fast_math
c_test_reverse_fast_math() { item test_reverse_fast_math sh -c "$CC -std=c99 -O3 -ffast-math $WARN $NW tests/test_reverse.c -o $B/test_reverse_fm -lm && ./$B/test_reverse_fm"; }
chain 11 test_errors_finite_math_only_cxx
c_test_errors_finite_math_only_cxx() {
    item test_errors_finite_math_only_cxx sh -c "$CXX -std=c++11 -O2 -ffinite-math-only $WARN $NW -x c++ tests/test_errors.c -o $B/test_errors_fmo -lm && ./$B/test_errors_fmo"
}

# ---- CUDA sources compile (no GPU needed)
chain 26 cuda_ptx
c_cuda_ptx() {
    for t in 2d_f32 2d_f64 3d_f32 3d_f64; do
        if command -v $NVCC >/dev/null 2>&1; then
            rm -f $B/chainqueen_kernels_$t.ptx
            item cuda_ptx_$t $NVCC -ptx $NVCCFLAGS cuda/chainqueen_kernels_$t.cu -o $B/chainqueen_kernels_$t.ptx
        else
            skip cuda_ptx_$t "no nvcc on PATH"
        fi
    done
    # their registers, stack frames, spills and shared memory for sm_90 against tests/gpu/ptxas_budget.txt (a guard
    # for sessions without a GPU: see tests/ptxas_budget.py; skipped under another ptxas version)
    PTXAS=$(dirname "$(command -v $NVCC 2>/dev/null || echo ./nvcc)")/ptxas
    PTX=$(for t in 2d_f32 2d_f64 3d_f32 3d_f64; do printf '%s ' $B/chainqueen_kernels_$t.ptx; done)
    if [ ! -x "$PTXAS" ]; then
        skip ptxas_budget "no ptxas beside nvcc"
    elif ! ls $PTX >/dev/null 2>&1; then
        skip ptxas_budget "the PTX did not compile (see cuda_ptx_*)"
    else
        rc=0; $PYTHON tests/ptxas_budget.py --ptxas "$PTXAS" $PTX > $L/ptxas_budget.out 2>&1 || rc=$?
        if [ $rc -eq 3 ]; then skip ptxas_budget "$(grep '^SKIP' $L/ptxas_budget.out | cut -c7-)"
        else item ptxas_budget sh -c "cat $L/ptxas_budget.out; exit $rc"; fi
    fi
}

# ---- the C test programs: plain (then on the mock GPU, valgrind: the same binary), OpenMP, C++,
#      sanitizers.  The runs on the mock GPU use the default backend there (device memory left
#      host-readable for speed: test_cuda checks that with protection on).
plain() {   # plain TEST [extra items' commands follow in the chain]
    item $1 sh -c "$CC -std=c99 -O2 -g1 $WARN $(nw $1) tests/$1.c -o $B/$1 -lm && ./$B/$1"
}
on_mock() { item ${1}_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/$1; }
valgrind_of() {   # the -O2 -g1 binary under memcheck
    if command -v valgrind >/dev/null 2>&1; then
        item ${1}_valgrind valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all ./$B/$1 ${2:+"$2"}
    else
        skip ${1}_valgrind "valgrind not installed"
    fi
}
chain 33 test_physics;         c_test_physics() { plain test_physics; on_mock test_physics; }
# the backward's kept grids leave the rows no particle reaches unwritten and unread (>>grid_cache):
# memcheck reports any read of them (test_reverse looks into the sim: it includes the implementation)
chain 35 test_reverse;         c_test_reverse() { plain test_reverse; on_mock test_reverse; valgrind_of test_reverse; }
chain 11 test_adjoint_stages;  c_test_adjoint_stages() { plain test_adjoint_stages; }
chain 12 test_lanes;           c_test_lanes() { plain test_lanes; }
for t in test_physics test_adjoint_stages test_lanes; do
    chain 15 ${t}_openmp; eval "c_${t}_openmp() { item ${t}_openmp sh -c \"\$CC -std=c99 -O2 -g1 \$WARN \$NW -fopenmp tests/$t.c -o \$B/${t}_omp -lm && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./\$B/${t}_omp\"; }"
done
chain 22 test_world_openmp s
c_test_world_openmp() {
    item test_world_openmp sh -c "$CC -std=c99 -O2 -g1 $WARN -fopenmp tests/test_world.c -o $B/test_world_omp -lm && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$B/test_world_omp"
}
for t in test_physics test_adjoint_stages test_lanes test_reverse; do
    chain 9 ${t}_cxx; eval "c_${t}_cxx() { item ${t}_cxx sh -c \"\$CXX -std=c++11 -O1 \$WARN \$NW -x c++ tests/$t.c -o \$B/${t}_cxx -lm && ./\$B/${t}_cxx\"; }"
done
chain 20 test_world_cxx
c_test_world_cxx() { item test_world_cxx sh -c "$CXX -std=c++11 -O1 $WARN -x c++ tests/test_world.c -o $B/test_world_cxx -lm && ./$B/test_world_cxx"; }
chain 21 test_world_fast_math s
c_test_world_fast_math() { item test_world_fast_math sh -c "$CC -std=c99 -O3 -ffast-math $WARN tests/test_world.c -o $B/test_world_fm -lm && ./$B/test_world_fm"; }
# the fluid's neighbour search with AVX-512 (sph.j2 >>sph_x86), as the bench builds it, against its loop:
# every particle's lists the same (test_world's neighbour_lists_vector_path; elsewhere that test runs the
# loop against itself)
chain 45 test_world_native
c_test_world_native() {
    if grep -q ' avx512f' /proc/cpuinfo 2>/dev/null; then
        item test_world_native sh -c "$CC -std=c99 -O3 -march=native $WARN tests/test_world.c -o $B/test_world_native -lm && \
            CQT_EXPECT_SPH512=1 ./$B/test_world_native neighbour_lists_vector_path"
    else
        skip test_world_native "this CPU has no AVX-512 (/proc/cpuinfo): the fluid's vector search is not built here"
    fi
}
# (test_lanes: its test functions, each a macro's expansion, grew so large with the functions called
#  once inlined into them that the build spent a third of its 96 s in register allocation; without
#  that inlining 60 s, the same checks)
for t in test_physics test_adjoint_stages test_lanes test_reverse; do
    case $t in test_physics) e=63 ;; *) e=25 ;; esac
    case $t in test_lanes) xf=-fno-inline-functions-called-once ;; *) xf= ;; esac
    chain $e ${t}_asan_ubsan s; eval "c_${t}_asan_ubsan() { item ${t}_asan_ubsan sh -c \"\$CC -std=c99 -O1 -g1 $xf \$WARN \$SAN $(nw $t) -DCQ_CPU_LANES=0 tests/$t.c -o \$B/${t}_san -lm && ./\$B/${t}_san\"; }"
done

# the public-API tests, linked (see impl above), -O2: the CUDA host code on the mock (cuda_items, below),
# then each test plain and on the mock GPU (the same binary; batched scenes, tests/test_scenes.c: bitwise
# the CPU's there), test_errors and chainqueen_io.h's loaders (test_io: PNG/STL robots, fixtures from the
# setup) under valgrind's memcheck too
chain 150 linked_o2
c_linked_o2() {
    impl o2 "$CC -std=c99 -O2 -g1 $WARN $NW"
    cuda_items
    for t in test_errors test_gradients test_robot test_scenes test_io; do
        a=; [ $t = test_io ] && a=$B/io
        item $t sh -c "$(lk $t $t) && ./$B/$t $a"
        case $t in test_io) ;; test_scenes) item test_scenes_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_BITWISE=1 ./$B/$t ;; *) on_mock $t ;; esac
        case $t in test_errors|test_io) valgrind_of $t $a ;; esac
    done
}
chain 30 linked_openmp
c_linked_openmp() {
    impl omp "$CC -std=c99 -O2 -g1 $WARN $NW -fopenmp"
    for t in test_gradients test_robot; do
        item ${t}_openmp sh -c "$(lk $t ${t}_omp) && OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$B/${t}_omp"
    done
}
chain 35 linked_cxx
c_linked_cxx() {
    impl cxx "$CXX -std=c++11 -O1 $WARN $NW -x c++"
    for t in test_errors test_gradients test_robot; do item ${t}_cxx sh -c "$(lk $t ${t}_cxx) && ./$B/${t}_cxx"; done
}
# under ASan + UBSan: the same tests, chainqueen_io.h's allocation failures (test_io_memory, then as C++
# whole), the API state-machine fuzzer (a fixed seed set, tests/fuzz_api.c, with batched scenes and
# ranges split by a host's hook; longer runs: see README), then on the mock (12 runs: a run there takes
# ~2-5 s; 150 runs from seed 200001 passed on 2026-11-27).  With the CPU's lanes on (CQ_CPU_LANES=1, the
# default where AVX2 is, float32's on x86-64 with SSE2 alone: the drivers' lane groups and the scenes'
# lane order, cpu_backend.j2 >>cpu_lane_order, under the sanitizers; the lanes-off paths run under
# them in the standalone sanitizer builds, CQ_CPU_LANES=0: test_physics, test_reverse,
# test_adjoint_stages, test_lanes, test_batch)
chain 240 linked_san s
c_linked_san() {
    impl san "$CC -std=c99 -O1 -g1 $WARN $SAN $NW -DCQ_CPU_LANES=1"
    cuda_san_items
    for t in test_errors test_gradients test_robot test_scenes test_io; do
        a=; [ $t = test_io ] && a=$B/io
        item ${t}_asan_ubsan sh -c "$(lk $t ${t}_san) && ./$B/${t}_san $a"
    done
    item test_scenes_on_mock_cuda_asan_ubsan env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_BITWISE=1 ./$B/test_scenes_san
    item test_io_memory sh -c "$(lk test_io_memory test_io_memory_san) && ./$B/test_io_memory_san && \
        $CXX -std=c++11 -O2 $WARN $NW -x c++ tests/test_io_memory.c -o $B/test_io_memory_cxx -lm && ./$B/test_io_memory_cxx"
    item fuzz_api_asan_ubsan sh -c "$(lk fuzz_api fuzz_api_san) && ./$B/fuzz_api_san 150 400 1"
    item fuzz_api_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$MOCK ./$B/fuzz_api_san 12 300 1001"
}
# the fluid-rigid world, linked: -O2 (its physics report: tank, Archimedes, dam break, from the same
# binary; its CUDA backend against its CPU backend on the mock (tests/test_world_cuda.c), and faults),
# then under ASan + UBSan with the world's call-sequence fuzzer (tests/fuzz_world.c: random calls,
# hostile values, failing allocator)
chain 75 linked_world s
c_linked_world() {
    impl world "$CC -std=c99 -O2 -g1 $WARN"
    item test_world sh -c "$(lk test_world test_world) && ./$B/test_world"
    item test_world_physics ./$B/test_world physics
    item test_world_cuda_build sh -c "$(lk test_world_cuda test_world_cuda)"
    item test_world_cuda_on_mock env CQ_CUDA_LIBRARY=$MOCK ./$B/test_world_cuda
    # (the device allocations after the create: 10 and 28, the solver's arrays; 29-32, the first
    # step's neighbour lists and the kernel values beside them, fluid then boundary; squeezed_: a
    # squeezed block of water, whose first step runs again with more room for its lists: 33-36
    # their growth, launch 40 the sort of the step run again; launch 5: the first scan)
    for f in init ptx oom_after=10 oom_after=28 oom_after=29 oom_after=30 oom_after=31 oom_after=32 squeezed_oom_after=33 \
             squeezed_oom_after=35 launch_after=5 launch_after=300 squeezed_launch_after=40; do
        item test_world_cuda_fault_$(echo $f | tr = _) env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_QUIET=1 ./$B/test_world_cuda fault:$f
    done
}
chain 140 linked_world_san s
c_linked_world_san() {
    impl world_san "$CC -std=c99 -O1 -g1 $WARN $SAN"
    item test_world_asan_ubsan sh -c "$(lk test_world test_world_san) && ./$B/test_world_san"
    item test_world_cuda_asan_ubsan_on_mock sh -c "$(lk test_world_cuda test_world_cuda_san) && CQ_CUDA_LIBRARY=$MOCK ./$B/test_world_cuda_san"
    item fuzz_world_asan_ubsan sh -c "$(lk fuzz_world fuzz_world_san) && ./$B/fuzz_world_san 25 150 1 2>/dev/null"
    item fuzz_world_on_mock_cuda sh -c "CQ_FUZZ_WORLD_CUDA=1 CQ_CUDA_LIBRARY=$MOCK ./$B/fuzz_world_san 12 150 3 2>/dev/null"
}

# the CPU's lane kernels as a game engine or the bench builds them: vectorized for this machine (AVX2 /
# AVX-512 gathers), where -O2 above gets SSE2; with clang too where it is installed
chain 18 test_lanes_native
c_test_lanes_native() { item test_lanes_native sh -c "$CC -std=c99 -O3 -march=native $WARN $NW tests/test_lanes.c -o $B/test_lanes_native -lm && ./$B/test_lanes_native"; }
# and with -ffast-math: every contract but bit-for-bit against the one-particle kernels (test_lanes.c
# BITWISE); a NaN position must still be refused by its bits (-ffinite-math-only once let it through)
chain 14 test_lanes_fast_math
c_test_lanes_fast_math() { item test_lanes_fast_math sh -c "$CC -std=c99 -O3 -march=native -ffast-math -fno-inline-functions-called-once $WARN $NW tests/test_lanes.c -o $B/test_lanes_fm -lm && ./$B/test_lanes_fm"; }
chain 11 test_lanes_native_clang
c_test_lanes_native_clang() {
    if command -v clang >/dev/null 2>&1; then
        item test_lanes_native_clang sh -c "clang -std=c99 -O3 -march=native $WARN $NW tests/test_lanes.c -o $B/test_lanes_native_clang -lm && ./$B/test_lanes_native_clang"
    else
        skip test_lanes_native_clang "clang not installed"
    fi
}

# ---- the CUDA backend's host side against a mock driver (tests/gpu/mock_libcuda.c: the
#      kernels run on the CPU, device memory is inaccessible to the host, faults on demand)
# the GPU scripts' lanes, deadlines and program names (tests/gpu/run.sh, bench/gpu.sh) on stub programs
chain 1 gpu_scripts
c_gpu_scripts() { item gpu_scripts_on_stubs sh tests/gpu/scripts_on_stubs.sh $B/gpu_stubs; }
chain 1 cuda_mock_selftest
c_cuda_mock_selftest() { item cuda_mock_selftest sh -c "$CC -std=c99 -O1 -g1 $WARN tests/gpu/mock_selftest.c -o $B/mock_selftest -ldl -pthread && ./$B/mock_selftest $MOCK"; }
cuda_items() {   # (in linked_o2's chain: the test links its implementation)
    item test_cuda_build sh -c "$(lk test_cuda test_cuda)"
    item test_cuda_on_mock env CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda
    for f in init nodevice oldriver ptx oom oom_after=20 launch_after=40 coop; do
        item test_cuda_fault_$(echo $f | tr = _) env CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda fault:$f
    done
    # a real GPU, where there is one (tests/gpu/run.sh is the full GPU suite)
    if ./$B/test_cuda > $L/gpu_probe.log 2>&1 && ! grep -q '^SKIP' $L/gpu_probe.log; then
        item test_cuda_gpu ./$B/test_cuda
    else
        skip test_cuda_gpu "$(grep '^SKIP' $L/gpu_probe.log | head -n 1 | cut -c7-)"
    fi
    # again with the barrier kernels' blocks (the sort in one block, the scans' tiles, the gathers) run
    # as fibers that meet at their barriers, so their parallel path runs, not the emulation's
    # thread-0 loop: every one-block launch, and one block in 3 of the others (CQ_MOCK_FIBERS=3; =1
    # takes every block, ~2.5x the time)
    item test_cuda_on_mock_fibers env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda
}
# the gather's 3-row shape (large scenes' choice, CQ_CUDA_GATHER_ROWS) on every scene: bitwise the
# CPU's again, then its parallel path as fibers (the failing-step and large-grid cases); the CPU's
# gather here without its vectors (CQ_CPU_V4=0, cpu_lanes.j2 >>cpu_v4): the same bits; and the
# sort's scan over tiles in three launches (the sums scanned first: grids over 2M cells) on every
# grid over 65536 cells (CQ_CUDA_SCAN_SELF_SUM=0; the default binary takes the two-launch way);
# at most 5 blocks for the loops over the particles' box (CQ_CUDA_RESIDENT_MAX): several tiles each,
# of 192 threads in the gather (CQ_CUDA_GATHER_THREADS; 128 by default); f32 3D G2P in its
# unrolled form (CQ_CUDA_G2P_UNROLLED: the other kernel loads and runs); every sort as launches
# (CQ_CUDA_SORT_ONE_BLOCK=0 and CQ_CUDA_SORT_COOP=0), which scan the cells the gather reads alone: the mock fills the others
# with values that fault when read (kernels.cu.j2 >>cuda_sort_range), the 3-row shape reading farthest
chain 24 test_cuda_gather_rows
c_test_cuda_gather_rows() {
    item test_cuda_gather_rows_on_mock sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CUDA_GATHER_ROWS=0 -DCQ_CPU_V4=0 -DCQ_CUDA_SCAN_SELF_SUM=0 -DCQ_CUDA_RESIDENT_MAX=5 -DCQ_CUDA_GATHER_THREADS=192 -DCQ_CUDA_G2P_UNROLLED=1 -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c -o $B/test_cuda_rows -lm -ldl && \
        CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda_rows && CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_rows a_large && \
        CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_rows a_failing_step"
}
# the sorts of small scenes: by default one cooperative launch sorts a scene of up to
# CQ_CUDA_SORT_COOP particles (kernels.cu.j2 >>cuda_sort_coop; test_cuda above: its blocks in turn
# between its grid barriers, and as fibers one block in 3); here the one-block sort of before
# (CQ_CUDA_SORT_COOP=0), and the cooperative one in 2 blocks (CQ_CUDA_COOP_BLOCKS=2: each block
# several batches of particles), each bitwise the CPU, then its parallel path (block 0 as fibers:
# every variant for the cooperative sort; the one-block sort's, unchanged but for its box, on one
# test: its 8 variants as fibers took 40 s)
chain 40 test_cuda_sorts
c_test_cuda_sorts() {
    item test_cuda_one_block_on_mock sh -c "$CC -std=c99 -O1 -g1 $WARN $NW -DCQ_CUDA_SORT_COOP=0 tests/test_cuda.c -o $B/test_cuda_one_block -lm -ldl && \
        CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda_one_block && CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_one_block actuation_gradients"
    item test_cuda_coop_few_on_mock sh -c "$CC -std=c99 -O1 -g1 $WARN $NW -DCQ_CUDA_COOP_BLOCKS=2 tests/test_cuda.c -o $B/test_cuda_coop_few -lm -ldl && \
        CQ_CUDA_LIBRARY=$MOCK ./$B/test_cuda_coop_few && CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_FIBERS=3 ./$B/test_cuda_coop_few parity_all"
}
# the CUDA host code under the sanitizers, on a mock driver built with them too: the emulated
# kernels' shared-memory arrays (the gather's sums, the one-block sort's counts and order) and
# every other array they index are bounds-checked by ASan there
cuda_san_items() {   # (in linked_san's chain)
    item test_cuda_asan_ubsan_on_mock sh -c "MOCK_OUT=$B/mock_san MOCK_CFLAGS='$SAN' sh tests/gpu/build_mock.sh $CC && \
        $(lk test_cuda test_cuda_san) && CQ_CUDA_LIBRARY=$PWD/$B/mock_san/libcuda.so.1 ./$B/test_cuda_san"
}
# batched scenes again, from the contract (tests/test_batch.c): K = 3 or 4 scenes bitwise alone on the CPU
# (state, all gradients, actuation gradients; host threads), bad scenes, a failing step; then on the
# mock driver (filter "cuda"): CUDA batched bitwise the CPU's, twice from reset, and so again with
# the CPU's gather without its vectors (CQ_CPU_V4=0, cpu_lanes.j2 >>cpu_v4: every variant, 3D
# float32's wide records too, cpu_backend.j2 >>cpu_gather_record).  Under ASan + UBSan with the
# lanes off (with them on: linked_san's test_scenes and fuzz_api)
chain 26 test_batch
c_test_batch() {
    item test_batch sh -c "$CC -std=c99 -O2 -g1 $WARN $NW tests/test_batch.c -o $B/test_batch -lm -ldl && ./$B/test_batch"
    item test_batch_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch cuda
    item test_batch_no_v4_on_mock_cuda sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_V4=0 tests/test_batch.c -o $B/test_batch_nov4 -lm -ldl && \
        CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_nov4 cuda"
}
chain 44 test_batch_asan_ubsan s
c_test_batch_asan_ubsan() {
    item test_batch_asan_ubsan sh -c "$CC -std=c99 -O1 -g1 $WARN $SAN $NW -DCQ_CPU_LANES=0 tests/test_batch.c -o $B/test_batch_san -lm -ldl && \
        ./$B/test_batch_san && CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_san cuda"
}
# float32 kernels with subnormals kept (CQ_CPU_KEEP_SUBNORMALS): the flush test expects them kept
chain 10 cpu_keep_subnormals
c_cpu_keep_subnormals() {
    item cpu_keep_subnormals sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_KEEP_SUBNORMALS tests/test_batch.c -o $B/test_batch_keep -lm -ldl && \
        ./$B/test_batch_keep f32_kernels_flush"
}
# the drivers with the lanes forced on (-O2: the loops' logic, remainders, failures): the batched
# scenes bitwise alone, on host threads, and on the mock driver (one-particle kernels) bitwise the
# CPU's, there with every sort as launches (CQ_CUDA_SORT_ONE_BLOCK=0, CQ_CUDA_SORT_COOP=0: the scenes' range of cells,
# kernels.cu.j2 >>cuda_sort_range); failing steps' errors.  Then as the bench builds them (-O3 -march=native, lanes on by
# default with AVX2 or AVX-512): the CPU part only, since there gcc 12 fuses some multiply-adds
# of the stress despite -ffp-contract=off (vfmsubadd), so CPU and mock differ by roundings (they
# did before the lanes too); every particle still runs the same code, which this checks
chain 58 cpu_lanes_forced
c_cpu_lanes_forced() {
    item cpu_lanes_forced sh -c "$CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_LANES=1 -DCQ_CUDA_SORT_ONE_BLOCK=0 -DCQ_CUDA_SORT_COOP=0 tests/test_batch.c -o $B/test_batch_lanes -lm -ldl && \
        ./$B/test_batch_lanes && CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_lanes cuda && \
        $CC -std=c99 -O2 -g1 $WARN $NW -DCQ_CPU_LANES=1 tests/test_errors.c -o $B/test_errors_lanes -lm && ./$B/test_errors_lanes && \
        $CC -std=c99 -O3 -march=native $WARN $NW tests/test_batch.c -o $B/test_batch_native -lm -ldl && ./$B/test_batch_native"
}
# AVX2 without AVX-512 (-march=x86-64-v3): the default lanes (both precisions) with their vector
# groups (cpu_lanes.j2 >>vgroup, 256 bits wide with AVX2 and AVX-512 alike); batched and threaded
# runs bitwise as before, the CPU against the mock's one-particle kernels at -O2; on an AVX-512 host,
# whose native builds compile the rest of the lanes 512 bits wide, test_lanes too at AVX2 (the lane
# kernels against the one-particle ones, -O3; elsewhere test_lanes_native is that build)
chain 25 cpu_lanes_avx2
c_cpu_lanes_avx2() {
    if grep -q ' avx2' /proc/cpuinfo 2>/dev/null; then
        item cpu_lanes_avx2 sh -c "$CC -std=c99 -O2 -g1 -march=x86-64-v3 $WARN $NW $(vec_report vec_avx2.txt) tests/test_batch.c -o $B/test_batch_avx2 -lm -ldl && \
            ./$B/test_batch_avx2 && CQ_CUDA_LIBRARY=$MOCK ./$B/test_batch_avx2 cuda"
        vec_check vec_lanes_avx2 vec_avx2.txt f32,f64
        if grep -q ' avx512f' /proc/cpuinfo 2>/dev/null; then
            item test_lanes_avx2 sh -c "$CC -std=c99 -O3 -march=x86-64-v3 -fno-inline-functions-called-once $WARN $NW tests/test_lanes.c -o $B/test_lanes_avx2 -lm && \
                ./$B/test_lanes_avx2"
        else
            skip test_lanes_avx2 "no AVX-512 here: test_lanes_native is already the AVX2 build of the lanes"
        fi
    else
        skip cpu_lanes_avx2 "this CPU has no AVX2 (/proc/cpuinfo)"
        skip test_lanes_avx2 "this CPU has no AVX2 (/proc/cpuinfo)"
    fi
}
# the long-horizon Table III, on the CPU then the mock GPU
chain 86 test_table3 s
c_test_table3() {
    item test_table3 sh -c "$CC -std=c99 -O2 $WARN $NW tests/test_table3.c -o $B/test_table3 -lm && ./$B/test_table3"
    item test_table3_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/test_table3 | \
        tee /dev/stderr | grep 'backend: CUDA' >/dev/null"
}
# concurrent creates (per-thread create error) and the CUDA driver's one-time load, under TSan: every
# test, then on the mock the concurrent ones (the others make CPU sims: ~37 s of the same runs again)
chain 60 test_threads_tsan s
c_test_threads_tsan() {
    item test_threads_tsan sh -c "$CC -std=c99 -O1 -g1 $WARN -fsanitize=thread $NW tests/test_threads.c -o $B/test_threads_tsan -lm -pthread && \
        ./$B/test_threads_tsan && CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/test_threads_tsan concurrent"
}
# ranges split off the lanes (test_threads.c host_threads_split_off_the_lanes, cpu_backend.j2
# >>cpu_lane_groups) where the compiler fuses multiply-adds (GNU C: gcc's default) and with
# -ffast-math, the flags of a user's or a game engine's build: in ISO C, as the rest of make test
# builds, the lanes and the one-particle kernels give the same bits anyway.  And test_batch in GNU C
# (each scene bitwise as alone: before >>cpu_lane_groups a scene's last particles ran the one-particle
# kernels there, and 3 of its tests failed), and with -O3 -ffast-math, where gcc 12 compiles some lane
# loops with a lane peeled or vectorized apart, so a lane's bits may depend on its place: each scene's
# particles take the lanes they have alone (cpu_backend.j2 >>cpu_lane_order; before it, 3 of its
# tests failed there; at -O2 cpu_lanes.j2's polar VJP had gcc peel lane 0), on grids whose node counts
# are no multiple of a vector's width (TEST_BATCH_ODD_GRIDS: a scene's grid at other vector places).
# The FMA build with OpenMP also runs the cell sort on 1, 2 and 3 OpenMP threads (on 3 a small scene's
# sort takes another plan, host_memory.j2 >>sort_plan_small; its result must not change)
chain 160 test_threads_split_gnu
c_test_threads_split_gnu() {
    item test_threads_split_fma sh -c "$CC -std=gnu99 -O2 -march=native -ffp-contract=fast -fopenmp $WARN $NW tests/test_threads.c \
        -o $B/test_threads_fma -lm -pthread && ./$B/test_threads_fma host_threads_split && \
        OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$B/test_threads_fma cell_sort"
    item test_threads_split_fast_math sh -c "$CC -std=gnu99 -O3 -march=native -ffast-math $WARN $NW tests/test_threads.c \
        -o $B/test_threads_fm -lm -pthread && ./$B/test_threads_fm host_threads_split"
    item test_batch_gnu_fma sh -c "$CC -std=gnu99 -O2 -march=native -ffp-contract=fast $WARN $NW tests/test_batch.c \
        -o $B/test_batch_fma -lm -ldl && ./$B/test_batch_fma"
    item test_batch_fast_math sh -c "$CC -std=gnu99 -O3 -march=native -ffast-math $WARN $NW -DTEST_BATCH_ODD_GRIDS tests/test_batch.c \
        -o $B/test_batch_fm -lm -ldl && ./$B/test_batch_fm"
    if command -v clang >/dev/null 2>&1; then
        item test_batch_clang_fast_math sh -c "clang -std=gnu99 -O3 -march=native -ffast-math $WARN $NW tests/test_batch.c \
            -o $B/test_batch_clang_fm -lm -ldl && ./$B/test_batch_clang_fm"
    else
        skip test_batch_clang_fast_math "clang not installed"
    fi
}
# the loaders' fuzz target (tests/fuzz/fuzz_io.c): libFuzzer where clang has it, else a fixed-seed loop
chain 24 fuzz_io s;  c_fuzz_io() { item fuzz_io sh tests/fuzz/run_io.sh 20; }

# ---- a header generated with a user material file (examples/materials/stvk.py); then the
#      generator run from another directory, as a user would (python3 path/to/generator): the
#      same header as custom_material's but for the material file's name (and the CUDA sources'
#      hashes, which include it; the PTX itself is the same)
chain 52 custom_material
c_custom_material() {
    item custom_material sh -c "$PYTHON -m generator --material examples/materials/stvk.py -o $B/cq_stvk.h && \
        $CC -std=c99 -O2 $WARN -I$B tests/test_custom_material.c -o $B/test_custom_material -lm && ./$B/test_custom_material"
    item generator_from_anywhere sh -c "rm -rf $B/gen_elsewhere && mkdir -p $B/gen_elsewhere && cp examples/materials/stvk.py $B/gen_elsewhere/my.py && \
        cd $B/gen_elsewhere && timeout 600 $PYTHON $PWD/generator --material my.py -o cq_stvk.h && grep -q 'from my.py' cq_stvk.h && \
        ! grep -q '$PWD' cq_stvk.h && cd $PWD && sed 's|sha256 [0-9a-f]*|sha256 -|' $B/cq_stvk.h > $B/gen_elsewhere/ref.h && \
        sed 's|from my\\.py|from examples/materials/stvk.py|g; s|sha256 [0-9a-f]*|sha256 -|' $B/gen_elsewhere/cq_stvk.h | cmp - $B/gen_elsewhere/ref.h"
}

# ---- chainqueen_io.h as C++ (PNG/STL robots; fixtures made by a stdlib-only Python script in the setup;
#      the C builds are linked_o2's and linked_san's)
chain 16 test_io_cxx
c_test_io_cxx() { item test_io_cxx sh -c "$CXX -std=c++11 -O2 $WARN $NW -x c++ tests/test_io.c -o $B/test_io_cxx -lm && ./$B/test_io_cxx $B/io"; }

# ---- image writer used by the demo (PNG/GIF validated by an independent decoder)
chain 2 test_image
c_test_image() { item test_image sh -c "$CC -std=c99 -O2 $WARN tests/test_image.c -o $B/test_image && ./$B/test_image $B && $PYTHON tests/check_image.py $B"; }

# ---- the README's C blocks compile and run as written
chain 39 readme_snippets s;  c_readme_snippets() { item readme_snippets env CC="$CC" sh tests/readme_snippets.sh; }

# ---- examples and bench build and run
# The examples' own code (their robots, controllers, image and robot helpers: -O1 -Wall -Werror as
# before) links the implementation compiled once for them (CHAINQUEEN_IMPLEMENTATION_DONE skips
# the copy each file asks for, so a file builds in ~1 s, not ~10-14): the MPM examples against one
# built with CQ_NO_WORLD (they build with it too), the fluid-rigid ones against one with the world.
# `make demo` and the README's snippets still build a file with the implementation in it.
# (-O1: as fast as -O2 for these quick runs, 40% less compile time; -O2/-O3 builds are above)
example() {   # example NAME, after impl: build, run; optimisation examples' quick mode must reduce the loss (exit status says)
    n=$1
    build="$LK_FLAGS -DCHAINQUEEN_IMPLEMENTATION_DONE examples/$n.c $LK_OBJ -o $B/$n -lm -ldl -pthread"
    case $n in 01_*) item example_$n sh -c "$build && ./$B/$n" ;;
               02_*) item example_$n sh -c "$build && ./$B/$n $B/demo_out" ;;
               *) item example_$n sh -c "$build && ./$B/$n $B/ex_out quick" ;; esac
    # the same binaries on the mock GPU: example 10 (CPU vs CUDA), example 12 with the world on
    # CUDA (a tank, a floating box, a thrown ball's gradient)
    case $n in
        10_*) item example_10_on_mock_cuda sh -c "CQ_CUDA_LIBRARY=$MOCK ./$B/$n > $L/cpu_vs_gpu.out; rc=\$?; \
                  cat $L/cpu_vs_gpu.out; grep -q 'largest difference' $L/cpu_vs_gpu.out && [ \$rc -eq 0 ]" ;;
        12_*) item example_12_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK ./$B/$n $B/ex_out quick gpu ;;
    esac
}
chain 73 examples_mpm
c_examples_mpm() {
    impl ex "$CC -std=c99 -O1 $WARN $NW"
    for ex in examples/[0-9]*.c; do grep -q cq_world_create $ex || example $(basename $ex .c); done
}
chain 62 examples_world
c_examples_world() {
    impl ex_world "$CC -std=c99 -O1 $WARN"
    for ex in examples/[0-9]*.c; do grep -q cq_world_create $ex && example $(basename $ex .c); done; return 0
}
chain 16 bench
c_bench() {
    [ -f bench/bench.c ] || return 0
    item bench_quick sh -c "$CC -std=c99 -O2 $WARN $NW bench/bench.c -o $B/bench_quick -lm && ./$B/bench_quick quick"
    item bench_quick_on_mock_cuda env CQ_CUDA_LIBRARY=$MOCK CQ_MOCK_NO_PROTECT=1 ./$B/bench_quick quick gpu
    # the paired comparison (bench/pair.sh) builds, links both sides and prints its row: the header against itself
    item bench_pair_quick sh -c "CC=$CC PAIR_CFLAGS=-O1 sh bench/pair.sh chainqueen.h chainqueen.h only=2d-f32-fwd rounds=2 warm=0 > $L/bench_pair.txt && \
        cat $L/bench_pair.txt && grep -q '^| 2d-f32-fwd | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |' $L/bench_pair.txt"
}
chain 12 bench_fluid s
c_bench_fluid() { [ -f bench/fluid.c ] && item bench_fluid_quick sh -c "$CC -std=c99 -O2 $WARN bench/fluid.c -o $B/bench_fluid_quick -lm && ./$B/bench_fluid_quick quick"; return 0; }
# bench/gpu_kernels.c (ncu's fixed workload, bench/gpu.sh PROFILE=1) builds and runs: a small cube
chain 17 gpu_kernels
c_gpu_kernels() {
    item gpu_kernels_on_mock_cuda sh -c "$CC -std=c99 -O2 $WARN bench/gpu_kernels.c -o $B/gpu_kernels -lm -ldl && \
        CQ_CUDA_LIBRARY=$MOCK ./$B/gpu_kernels 3 8 32 | grep -q '^512 particles, 12 taped steps'"
}

# ============================== the run ==============================
# setup, serial: the mock CUDA driver many chains use, chainqueen_io.h's fixtures
item cuda_mock_build sh tests/gpu/build_mock.sh "$CC"
item io_fixtures sh -c "mkdir -p $B/io && $PYTHON tests/make_io_fixtures.py $B/io"

# Two queues, each longest first: the sanitizers' and long runs' (s), the compiles' (c).  Worker 1
# takes from s first, the others from c first, each from the other queue when its own is empty: a
# sanitizer's run beside a compile, as the two fixed lanes before had them.  On this project's
# 2-vCPU VM (2026-11-26): one queue put the sanitizers' runs side by side and their items took
# 829-849 s in all (two runs; 673-678 s beside compiles), the suite 1127-1186 s; two fixed lanes
# 1082 s (the compile lane 147 s longer than the other); two queues 1017 s.
Q=$L/queue
if [ $# -gt 0 ]; then printf '%s\n' "$@" > $Q.s; : > $Q.c
else
    echo "$CHAINS" | sed '/^$/d' | sort -k1,1nr -s | awk -v q=$Q '{ print $2 > (q "." $3) }'
    touch $Q.s $Q.c
fi
rm -rf $L/.qlock $L/.plock
lock() { while ! mkdir $L/.$1 2>/dev/null; do sleep 0.1; done; }
take() {   # take FIRST OTHER: prints the next chain of queue FIRST, else OTHER; fails when both are empty
    lock qlock; c=$(head -n 1 $Q.$1); q=$1
    [ -n "$c" ] || { c=$(head -n 1 $Q.$2); q=$2; }
    tail -n +2 $Q.$q > $Q.rest; mv $Q.rest $Q.$q; rmdir $L/.qlock
    [ -n "$c" ] && echo "$c"
}
worker() {   # worker FIRST OTHER
    while c=$(take $1 $2); do
        if command -v c_$c >/dev/null 2>&1; then c_$c > $L/chain_$c.out 2>&1
        else echo "FAIL no chain $c" > $L/chain_$c.out; echo "0 1 0" >> $R; fi
        lock plock; cat $L/chain_$c.out; rmdir $L/.plock
    done
}
start_all=$(date +%s)
i=1; pids=""
while [ $i -lt $JOBS ]; do worker c s & pids="$pids $!"; i=$((i + 1)); done
worker s c
for p in $pids; do wait $p; done
echo "---- $(wc -l < $R) items in $(( $(date +%s) - start_all ))s on $JOBS workers (TEST_JOBS)"
set -- $(awk '{p += $1; f += $2; s += $3} END {print p + 0, f + 0, s + 0}' $R)
echo "$1 passed, $2 failed, $3 skipped"
[ "$2" -eq 0 ]
