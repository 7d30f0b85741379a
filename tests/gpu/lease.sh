# Sourced by tests/gpu/run.sh and bench/gpu.sh (from the repository root): where their programs
# are, and what a lease's DEADLINE leaves each item or step.
# B: PREBUILT (programs tests/gpu/build.sh built earlier, here or carried) or build/gpu, as a path
# the scripts run $B/NAME from; T0: the script's start, which DEADLINE=N (seconds) counts from.
B=${PREBUILT:-build/gpu}
case $B in /*) ;; *) B=./$B ;; esac
T0=$(date +%s)
# timeout_for SECONDS MIN: prints SECONDS, cut to what DEADLINE leaves; fails (prints nothing)
# when less than MIN seconds are left, so the caller skips the item and says why
timeout_for() {
    to=$1
    if [ -n "${DEADLINE:-}" ]; then
        left=$(( DEADLINE - ($(date +%s) - T0) ))
        [ $left -lt $2 ] && return 1
        [ $to -gt $left ] && to=$left
    fi
    echo $to
}
# kernel_times [NCU OPTIONS] PROGRAM ARGS...: each kernel's time under Nsight Compute, a name line
# and its gpu__time_duration line a kernel (bench/gpu.sh PROFILE, tests/gpu/session.sh)
kernel_times() {
    ncu --metrics gpu__time_duration.sum --print-summary per-kernel "$@" | grep -E '^  [a-z_0-9]+|gpu__time_duration'
}
