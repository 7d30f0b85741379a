#!/bin/sh
# A speed change of a few percent, measured on a noisy machine: two versions of chainqueen.h timed in
# one process, run by run in turns (bench/pair.c: its rows, and how to read the ratios).
#   sh bench/pair.sh [A [B]] [rounds=N] [only=NAMES] [warm=N] [scale=N]
# A: a git revision (default HEAD) or a path to a chainqueen.h; B: a path (default ./chainqueen.h, the
# working tree).  So `sh bench/pair.sh` times the working tree's change against the last commit, and
# `sh bench/pair.sh HEAD~3 only=8k,64k rounds=15` the 3D rows against an older one.
# only: row names or their prefixes (2d, 8k, 8k-neo, 64k, x16 (16 2D scenes in one sim), 2d-f64-fwd, ...); scale: K times the steps a run.
# Built with $CC $PAIR_CFLAGS (default: cc, -O3 -march=native -fopenmp, as `make bench`), run on
# THREADS threads (OMP_NUM_THREADS, default 1: one thread is the steadiest on a shared VM).
CC=${CC:-cc}
CFLAGS=${PAIR_CFLAGS:--O3 -march=native -fopenmp}
A=; B=
while [ $# -gt 0 ]; do
    case "$1" in
        *=*) break ;;
        *) if [ -z "$A" ]; then A=$1; elif [ -z "$B" ]; then B=$1; else echo "pair.sh: more than two versions: $1" >&2; exit 2; fi; shift ;;
    esac
done
# files named relative to the caller's directory, before moving to the repository's root
[ -n "$A" ] && [ -f "$A" ] && A="$(cd "$(dirname "$A")" && pwd)/$(basename "$A")"
[ -n "$B" ] && [ -f "$B" ] && B="$(cd "$(dirname "$B")" && pwd)/$(basename "$B")"
cd "$(dirname "$0")/.." || exit 1
A=${A:-HEAD}; B=${B:-chainqueen.h}
D=build/pair
mkdir -p $D/a $D/b || exit 1
if [ -f "$A" ]; then cp "$A" $D/a/chainqueen.h || exit 1
else git show "$A:chainqueen.h" > $D/a/chainqueen.h || { echo "pair.sh: '$A' is neither a file nor a git revision" >&2; exit 2; }
fi
cp "$B" $D/b/chainqueen.h || exit 1
echo "A: $A ($(git rev-parse --short "$A" 2>/dev/null || echo file)), B: $B; $CC $CFLAGS; threads ${THREADS:-1}; $(date -u +%Y-%m-%d); $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
# (the three objects in parallel: each side compiles the whole implementation)
$CC -std=c99 $CFLAGS -I$D/a -DPAIR_SIDE=a -c bench/pair.c -o $D/a.o & pa=$!
$CC -std=c99 $CFLAGS -I$D/b -DPAIR_SIDE=b -c bench/pair.c -o $D/b.o & pb=$!
$CC -std=c99 $CFLAGS -c bench/pair.c -o $D/main.o || exit 1
wait $pa || exit 1
wait $pb || exit 1
$CC $CFLAGS $D/main.o $D/a.o $D/b.o -o $D/pair -lm || exit 1
OMP_NUM_THREADS=${THREADS:-1} ./$D/pair "$@"
