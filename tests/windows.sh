#!/bin/sh
# tests/windows.sh -- the header built for Windows (x86-64, MinGW-w64 headers and clang, through
# `zig cc` from PyPI's ziglang package) and, where wine64 is installed, run there: the _WIN32
# code (the CUDA loader's LoadLibrary path, the module cache's Interlocked lock, thread-local
# errors) that Linux builds never compile.  Not part of `make test` (an 80 MB download and a few
# minutes of compiling); run it after touching platform code:
#
#   sh tests/windows.sh            # build everything, run what can run
#
# 1. a venv at build/venv-zig with ziglang==$ZIG_VERSION (default 0.13.0; pip needs PyPI);
# 2. the three headers' implementations, C99 and C++11, with -Wall -Wextra -Wpedantic -Wshadow
#    -Wconversion -Wsign-conversion -Werror (as compile_strict_gcc on Linux);
# 3. the examples that need no POSIX threads, and the tests that need neither dlopen (the mock
#    driver) nor pthreads, as .exe files in build/windows;
# 4. with wine64 (Debian: apt-get install wine64), each test run from the repository root (they
#    read build/io and write under build/) and the falling-blocks example compared with the
#    Linux build's output line for line.  Without a GPU driver in wine the CUDA backend reports
#    itself unavailable, as on any machine without one (test_errors checks that message).
# Last line: N passed, N failed (N skipped).  2026-11-29, this 2-vCPU VM, zig 0.13.0 (clang 18),
# wine 8.0: 25 passed (the three implementations, 11 programs built, 10 tests run, the example's
# output equal); ~6.5 minutes beside another job, plus ~2 the first time zig builds its MinGW libc.
set -u
cd "$(dirname "$0")/.." || exit 1
PYTHON=${PYTHON:-python3}
ZIG_VERSION=${ZIG_VERSION:-0.13.0}
VENV=build/venv-zig
OUT=build/windows
mkdir -p "$OUT"
passed=0; failed=0; skipped=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
skp() { skipped=$((skipped + 1)); echo "SKIP $1: $2"; }

if ! "$VENV/bin/python" -c "import ziglang" 2>/dev/null; then
    $PYTHON -m venv "$VENV" && "$VENV/bin/python" -m pip install -q "ziglang==$ZIG_VERSION" > "$OUT/pip.log" 2>&1 \
        || { echo "windows: ziglang could not be installed (see $OUT/pip.log)"; echo "0 passed, 1 failed"; exit 1; }
fi
ZCC="$VENV/bin/python -m ziglang cc -target x86_64-windows-gnu"
ZCXX="$VENV/bin/python -m ziglang c++ -target x86_64-windows-gnu"
STRICT="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror"

# 2. the implementations, warning-free
if $ZCC -std=c99 -O2 $STRICT -c tests/compile/impl.c -o "$OUT/impl.o" > "$OUT/impl.log" 2>&1 && \
   $ZCXX -std=c++11 -O2 $STRICT -x c++ -c tests/compile/impl.c -o "$OUT/impl_cxx.o" >> "$OUT/impl.log" 2>&1; then ok "impl (C99, C++11)"
else bad "impl (see $OUT/impl.log)"; fi
for f in robot_impl io_impl; do
    if $ZCC -std=c99 -O2 $STRICT -c tests/compile/$f.c -o "$OUT/$f.o" > "$OUT/$f.log" 2>&1 && \
       $ZCXX -std=c++11 $STRICT -x c++ -c tests/compile/$f.c -o "$OUT/${f}_cxx.o" >> "$OUT/$f.log" 2>&1; then ok "$f (C99, C++11)"
    else bad "$f (see $OUT/$f.log)"; fi
done

# 3. programs
EXAMPLES="01_falling_blocks"
TESTS="test_errors test_reverse test_physics test_gradients test_io test_robot fuzz_api test_world test_lanes test_table3"
for p in $EXAMPLES; do
    if $ZCC -std=c99 -O2 -Wall -Wextra -pedantic examples/$p.c -o "$OUT/$p.exe" > "$OUT/$p.build" 2>&1; then ok "build $p"
    else bad "build $p (see $OUT/$p.build)"; fi
done
for t in $TESTS; do
    if $ZCC -std=c99 -O2 -Wall -Wextra -pedantic -Itests tests/$t.c -o "$OUT/$t.exe" > "$OUT/$t.build" 2>&1; then ok "build $t"
    else bad "build $t (see $OUT/$t.build)"; fi
done

# 4. runs
WINE=$(command -v wine64 || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || true)
if [ -z "$WINE" ]; then
    skp "runs" "no wine64 (Debian: apt-get install wine64)"
else
    export WINEDEBUG=-all WINEPREFIX="$PWD/$OUT/wineprefix"
    [ -d build/io ] || { mkdir -p build/io && $PYTHON tests/make_io_fixtures.py build/io > /dev/null; }
    for t in $TESTS; do
        [ -f "$OUT/$t.exe" ] || { skp "run $t" "not built"; continue; }
        a=; [ $t = test_io ] && a=build/io
        timeout 600 "$WINE" "$OUT/$t.exe" $a 2>&1 | tr -d '\r' > "$OUT/$t.log"
        line=$(grep -E '^[0-9]+ passed, 0 failed' "$OUT/$t.log" | tail -n 1)
        if [ -n "$line" ]; then ok "run $t ($line)"; else bad "run $t (see $OUT/$t.log)"; fi
    done
    if [ -f "$OUT/01_falling_blocks.exe" ]; then
        ${CC:-cc} -std=c99 -O2 examples/01_falling_blocks.c -o "$OUT/falling_blocks_linux" -lm && "$OUT/falling_blocks_linux" > "$OUT/fb_linux.txt" 2>&1
        timeout 300 "$WINE" "$OUT/01_falling_blocks.exe" 2>&1 | tr -d '\r' > "$OUT/fb_windows.txt"
        if cmp -s "$OUT/fb_linux.txt" "$OUT/fb_windows.txt"; then ok "run 01_falling_blocks (the Linux build's output, line for line)"
        else bad "run 01_falling_blocks (diff $OUT/fb_linux.txt $OUT/fb_windows.txt)"; fi
    fi
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
