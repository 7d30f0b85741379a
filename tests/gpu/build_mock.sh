#!/bin/sh
# Builds build/mock/libcuda.so.1: the CPU mock of the CUDA driver (tests/gpu/mock_libcuda.c)
# with the emulated kernels of cuda/chainqueen_kernels_{2d,3d}_{f32,f64}.cu compiled as C.
# Usage: sh tests/gpu/build_mock.sh [CC]     (extra flags: MOCK_CFLAGS, e.g. -fsanitize=address;
# another folder: MOCK_OUT, default build/mock)
# Runs nothing else.  Warning-free with -Wall -Wextra (the generated .cu files use math.h
# functions; clang warns about
# their unused static inline helpers, hence -Wno-unused-function for them only).
set -eu
CC=${1:-${CC:-cc}}
cd "$(dirname "$0")/../.."
OUT=${MOCK_OUT:-build/mock}
mkdir -p "$OUT"
TMP="$OUT/tmp.$$"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT INT TERM
FLAGS="-std=c99 -O1 -g1 -fPIC -Wall -Wextra ${MOCK_CFLAGS:-}"
# the five objects compiled side by side (make test builds the mock before its workers start)
$CC $FLAGS -c tests/gpu/mock_libcuda.c -o "$TMP/mock_libcuda.o" & pids=$!
OBJS="$TMP/mock_libcuda.o"
for v in 2d_f32 2d_f64 3d_f32 3d_f64; do
    $CC $FLAGS -Wno-unused-function -x c -c "cuda/chainqueen_kernels_$v.cu" -o "$TMP/kernels_$v.o" & pids="$pids $!"
    OBJS="$OBJS $TMP/kernels_$v.o"
done
failed=0
for p in $pids; do wait $p || failed=1; done
[ $failed -eq 0 ] || { echo "build_mock.sh: a compile failed" >&2; exit 1; }
$CC ${MOCK_CFLAGS:-} -shared -Wl,-soname,libcuda.so.1 -o "$TMP/libcuda.so.1" $OBJS -lm -pthread
mv -f "$TMP/libcuda.so.1" "$OUT/libcuda.so.1"   # atomic: a concurrent test never sees half a file
echo "built $OUT/libcuda.so.1"
