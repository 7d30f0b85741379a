#!/bin/sh
# The GPU scripts' own logic, without a GPU (make test runs it): tests/gpu/run.sh and bench/gpu.sh
# with PREBUILT= a folder of stub programs, one for each name tests/gpu/build.sh builds (so a
# program the scripts run but the build script does not build, or one renamed on one side only,
# fails here), and compute-sanitizer and ncu absent.  Checks: every item runs and passes; a
# failing program fails its item and the script; DEADLINE skips, with the reason, the items that
# would start after it and the summary still comes; bench/gpu.sh runs its steps, notes a failing
# one without stopping, skips what DEADLINE leaves out.  Usage: sh tests/gpu/scripts_on_stubs.sh DIR
set -u
D=${1:-build/gpu_stubs}
cd "$(dirname "$0")/../.." || exit 1
rm -rf "$D" && mkdir -p "$D" || exit 1
fails=0
check() {   # check WHAT CONDITION...
    what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
# the names the build script builds (its list, with BEFORE's two)
names=$(sed -n '/^list()/,/^}/s/^ *echo "\([a-z0-9_]*\) .*/\1/p' tests/gpu/build.sh)
check "tests/gpu/build.sh lists the programs" [ "$(echo "$names" | wc -l)" -ge 17 ]
for n in $names; do
    case $n in
        test_table3) body='echo "backend: CUDA"; echo "5 passed, 0 failed"' ;;
        *) body='echo "    2D stub: $0 $*"; echo "1 passed, 0 failed"' ;;
    esac
    printf '#!/bin/sh\n[ -n "${STUB_FAIL:-}" ] && [ "${0##*/}" = "$STUB_FAIL" ] && { echo "0 passed, 1 failed"; exit 1; }\n%s\n' "$body" >"$D/$n"
    chmod +x "$D/$n"
done
export PATH=/usr/bin:/bin COMPUTE_SANITIZER=   # no compute-sanitizer (not even the CUDA SDK's), no ncu, no nvidia-smi
unset DEADLINE BEFORE PROFILE
out=$(PREBUILT=$D sh tests/gpu/run.sh 2>&1); rc=$?
last=$(echo "$out" | tail -n 1)
check "run.sh: every item passes on the stubs ($last)" [ $rc = 0 ]
check "run.sh: 19 items and the 8 sanitizers' skips" [ "$last" = "19 passed, 0 failed, 8 skipped" ]
check "run.sh: each sanitizer's skip says why" [ "$(echo "$out" | grep -c 'SKIP .*compute-sanitizer not on PATH')" = 8 ]
out=$(PREBUILT=$D STUB_FAIL=test_scenes sh tests/gpu/run.sh 2>&1); rc=$?
check "run.sh: a failing program fails its item and the run" [ $rc != 0 ]
check "run.sh: ... and only that item" [ "$(echo "$out" | tail -n 1)" = "18 passed, 1 failed, 8 skipped" ]
out=$(PREBUILT=$D DEADLINE=5 sh tests/gpu/run.sh 2>&1); rc=$?
check "run.sh: DEADLINE skips the items after it and still sums up" [ "$(echo "$out" | tail -n 1)" = "0 passed, 0 failed, 27 skipped" ]
check "run.sh: ... saying why" [ "$(echo "$out" | grep -c 'SKIP .*DEADLINE=5 reached')" = 19 ]
out=$(PREBUILT=$D sh bench/gpu.sh 2>&1); rc=$?
check "gpu.sh: runs its steps on the stubs" [ $rc = 0 ]
check "gpu.sh: the table, the sorts' rows, the fluid" [ "$(echo "$out" | grep -c 'stub:')" -ge 8 ]
out=$(PREBUILT=$D STUB_FAIL=bench_gpu_nocoop sh bench/gpu.sh 2>&1); rc=$?
check "gpu.sh: a failing step is noted, the others run, the status says it" [ $rc != 0 ] && \
    check "gpu.sh: ... the fluid after it still ran" [ "$(echo "$out" | grep -c 'stub: .*bench_fluid_gpu')" = 2 ]
out=$(PREBUILT=$D DEADLINE=5 sh bench/gpu.sh 2>&1); rc=$?
check "gpu.sh: DEADLINE skips its steps, saying so" [ "$(echo "$out" | grep -c 'skipped, DEADLINE=5 reached')" -ge 8 ]
# PROFILE's programs too, through a stub ncu that runs the program it was given (the first
# executable among its arguments) after a kernel's line, and prints nothing and fails without one
# (most profiles pipe ncu through grep, whose status the step sees), with BEFORE's programs
mkdir -p "$D/bin" && printf '%s\n' '#!/bin/sh' \
    'while [ $# -gt 0 ]; do if [ -f "$1" ] && [ -x "$1" ]; then echo "  cq__stub_kernel"; exec "$@"; fi; shift; done; exit 1' \
    >"$D/bin/ncu" && chmod +x "$D/bin/ncu"
out=$(PATH="$D/bin:$PATH" PREBUILT=$D BEFORE=before.h PROFILE=1 FLUID=0 sh bench/gpu.sh 2>&1); rc=$?
check "gpu.sh PROFILE=1 BEFORE: every program it profiles is one build.sh builds" [ $rc = 0 ]
check "gpu.sh PROFILE=1: its 18 profiles ran (kernel lists, stalls, sorts, gathers, G2P)" \
    [ "$(echo "$out" | grep -c 'cq__stub_kernel')" = 18 ]
# tests/gpu/session.sh (one call's plan): its parts in order with the stub ncu (not the CPU's
# threads and pair parts, which build and time bench.c for minutes), its log and the suite's
# logs into OUT; a budget spent skips every part, saying so
rm -rf "$D/out"
out=$(PATH="$D/bin:$PATH" PREBUILT=$D PARTS="table fluid suite kernels" OUT=$D/out sh tests/gpu/session.sh 2>&1); rc=$?
check "session.sh: its parts run on the stubs ($(echo "$out" | tail -n 1))" [ $rc = 0 ]
check "session.sh: ... the table" [ "$(echo "$out" | grep -c 'stub: .*bench_gpu gpu')" = 1 ]
check "session.sh: ... the fluid: 3 rows a round (3D, 2D, 3D with the ball) and 1M once, both headers, and the host's 16 threads" \
    [ "$(echo "$out" | grep -c 'stub: .*bench_fluid_gpu[_a-z]* --gpu')" = 14 ] && \
    check "session.sh: ... (the host's threads)" [ "$(echo "$out" | grep -c 'stub: .*bench_fluid_omp')" = 1 ]
check "session.sh: ... the suite, summed up" [ "$(echo "$out" | grep -c '^19 passed, 0 failed, 8 skipped')" = 1 ]
check "session.sh: ... 6 kernel lists and the fluid's" [ "$(echo "$out" | grep -c 'cq__stub_kernel')" = 7 ]
check "session.sh: ... its log in OUT" [ -s "$D/out/session.log" ]
check "session.sh: ... the suite's logs in OUT" [ -s "$D/out/suite_logs.tgz" ]
out=$(PATH="$D/bin:$PATH" PREBUILT=$D STUB_FAIL=bench_gpu PARTS="table kernels" sh tests/gpu/session.sh 2>&1); rc=$?
check "session.sh: a failing part fails the session, the next still runs" [ $rc != 0 ]
check "session.sh: ... (the kernels ran after the table failed)" [ "$(echo "$out" | grep -c 'cq__stub_kernel')" = 6 ]
out=$(PATH="$D/bin:$PATH" PREBUILT=$D BUDGET=5 sh tests/gpu/session.sh 2>&1); rc=$?
check "session.sh: a spent budget skips each part, saying so" [ "$(echo "$out" | grep -c '^== [a-z]*: skipped, BUDGET=5 s')" = 5 ]
check "session.sh: ... and sums up" [ "$(echo "$out" | tail -n 1 | cut -d, -f1-3)" = "session: 0 parts run, 5 skipped, 0 failed or cut" ]
[ $fails = 0 ]
