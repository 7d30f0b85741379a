#!/bin/sh
# bench/peers.sh -- `make bench-peers`: chainqueen.h's MPM bench (bench/bench.c) and Taichi
# (bench/peer_taichi.py, the same scenes written the way Taichi's mpm99 / diffmpm examples are)
# on this machine, in one run, side by side.
#
#   sh bench/peers.sh [quick]
#
# 1. a virtual environment at build/venv-peers with taichi==$TAICHI_VERSION (default 1.7.4, the
#    newest 1.7.x; pip needs PyPI), made once and reused;
# 2. build/bench from bench/bench.c with `make bench`'s flags;
# 3. the physics check: each quick scene's centre-of-mass height over $PEERS_COM_STEPS substeps
#    (default 1600: the cube falls, lands and bounces) in both, compared (`./build/bench com=N`);
# 4. for each thread count in $PEERS_THREADS (default "1 <all cores>"): chainqueen.h with
#    OMP_NUM_THREADS=t, Taichi with cpu_max_num_threads=t, $PEERS_ROUNDS rounds (default 3) of the
#    two by turns, and the side-by-side table (ms/substep of the forward, the taped forward and
#    the backward, each the median of the rounds; ratio = Taichi / chainqueen.h), the verdict on
#    the medians and each round's own (on a shared VM one round's ratios moved by up to 30%
#    from hour to hour: bench/RESULTS.md), and, for reference, on each side's best round;
# 5. where `nvidia-smi` works: the same on CUDA (`./build/bench gpu`, Taichi arch=cuda).
#
# PEERS_WHEELS=DIR: install taichi from the wheels in DIR, without PyPI (a GPU machine that reaches
#   nothing), into a venv that sees the machine's own packages (numpy, rich, colorama: taichi's
#   other needs; dill too if DIR lacks it).  Fetch them where pip works, for the target's Python:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_27_x86_64 -d DIR taichi==1.7.4 dill      (taichi's is 56 MB)
# PEERS_VENV: the venv's folder (default build/venv-peers).
# PEERS_CPU=0: no physics check and no CPU rows (a GPU lease's minutes: the CUDA rows alone).
#
# quick (or PEERS_QUICK=1): bench.c's quick scene set and times (~0.05 s per measurement).
# PEERS_ROUNDS: rounds of each side (default 3; 1: one run each, as before).
# PEERS_SCENES: Taichi scene filter (fnmatch patterns, e.g. '3d-40-*'; see peer_taichi.py).
# PEERS_CQ_ARGS: more arguments for chainqueen.h's bench, e.g. 'ckpt=1' (checkpoint_every = 1:
#   every step kept, like Taichi's tape, so neither backward recomputes the forward).
# Raw outputs go to build/peers/.  Taichi compiles its kernels on first use: ~8 s for a 2D scene,
# ~2 minutes for a 3D one (its reverse-mode kernels), per scene and per thread count; they are
# cached in build/taichi-cache, so only the first run pays that (a first full run on 2 cores:
# ~30 minutes of compiling; later ones ~3-4 minutes with PEERS_SCENES as in bench/RESULTS.md).
# Exit status: nonzero if taichi cannot be installed, a run fails or the physics check fails.
set -u -f   # -f: no globbing (PEERS_SCENES holds fnmatch patterns)
cd "$(dirname "$0")/.." || exit 1

CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
TAICHI_VERSION=${TAICHI_VERSION:-1.7.4}
VENV=${PEERS_VENV:-build/venv-peers}
WHEELS=${PEERS_WHEELS:-}
DO_CPU=${PEERS_CPU:-1}
OUTD=build/peers
CACHE=build/taichi-cache
QUICK=${PEERS_QUICK:-0}
for a in "$@"; do
    case "$a" in
        quick) QUICK=1 ;;
        *) echo "usage: sh bench/peers.sh [quick]" >&2; exit 2 ;;
    esac
done
NPROC=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$NPROC" -gt 1 ]; then DEFAULT_THREADS="1 $NPROC"; else DEFAULT_THREADS=1; fi
THREADS=${PEERS_THREADS:-$DEFAULT_THREADS}
COM_STEPS=${PEERS_COM_STEPS:-1600}
SCENES=${PEERS_SCENES:-}
CQ_ARGS=${PEERS_CQ_ARGS:-}
ROUNDS=${PEERS_ROUNDS:-3}
case "$ROUNDS" in ''|*[!0-9]*|0) echo "PEERS_ROUNDS=$ROUNDS: a positive number, please" >&2; exit 2 ;; esac
mkdir -p build "$OUTD" "$CACHE" || exit 1

# ---- 1. Taichi in a virtual environment
VPY=$VENV/bin/python
have_taichi() {
    [ -x "$VPY" ] && [ "$("$VPY" -c "import taichi; print('.'.join(map(str, taichi.__version__)))" 2>/dev/null | tail -n 1)" = "$TAICHI_VERSION" ]
}
if ! have_taichi; then
    echo "peers: installing taichi==$TAICHI_VERSION into $VENV ($($PYTHON --version 2>&1))"
    VFLAGS=""; PIPFLAGS=""
    if [ -n "$WHEELS" ]; then   # offline: the wheels in $WHEELS, the rest from the machine's Python
        [ -d "$WHEELS" ] || { echo "peers: PEERS_WHEELS=$WHEELS: no such folder" >&2; exit 1; }
        VFLAGS=--system-site-packages; PIPFLAGS="--no-index --find-links $WHEELS"
    fi
    if [ ! -x "$VPY" ] && ! $PYTHON -m venv $VFLAGS "$VENV" >"$OUTD/venv.log" 2>&1; then
        echo "peers: FAILED: '$PYTHON -m venv $VENV' did not work (on Debian/Ubuntu: apt-get install python3-venv):" >&2
        tail -n 5 "$OUTD/venv.log" >&2
        exit 1
    fi
    if ! "$VPY" -m pip install -q $PIPFLAGS "taichi==$TAICHI_VERSION" >"$OUTD/pip.log" 2>&1; then
        echo "peers: FAILED: pip could not install taichi==$TAICHI_VERSION for $("$VPY" --version 2>&1)" \
             "on $(uname -m) (Taichi 1.7.x has wheels for CPython 3.8-3.12, x86_64 and arm64; PyPI must be reachable):" >&2
        tail -n 8 "$OUTD/pip.log" >&2
        exit 1
    fi
    if ! have_taichi; then
        echo "peers: FAILED: taichi==$TAICHI_VERSION installed but does not import:" >&2
        "$VPY" -c "import taichi" 2>&1 | tail -n 8 >&2
        exit 1
    fi
fi
TI_VER=$("$VPY" -c "import taichi; print('.'.join(map(str, taichi.__version__)))" 2>/dev/null | tail -n 1)

# ---- 2. chainqueen.h's bench, as `make bench` builds it
echo "peers: building build/bench ($CC -std=c99 -O3 -march=native -fopenmp)"
$CC -std=c99 -O3 -march=native -fopenmp -Wall -Wextra -Werror -pedantic bench/bench.c -o build/bench -lm || exit 1

Q=""; QF=""
[ "$QUICK" = 1 ] && { Q=quick; QF=--quick; }
SF=""
[ -n "$SCENES" ] && SF="--scenes=$SCENES"
TI="$VPY bench/peer_taichi.py --cache-dir $CACHE"
rc=0
# run CMD... with its output shown and kept in FILE; a failure sets rc
run_to() {
    f=$1; shift
    { "$@"; echo $? >"$f.status"; } | tee "$f"
    [ "$(cat "$f.status")" = 0 ] || { echo "peers: FAILED: $*"; rc=1; }
}
echo "peers: chainqueen.h $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- chainqueen.h bench/bench.c 2>/dev/null || echo ' (modified)'), taichi $TI_VER, $NPROC core(s): $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "peers: the first run compiles Taichi's kernels (minutes for the 3D scenes' gradients); later runs reuse $CACHE"

summary=""
if [ "$DO_CPU" != 0 ]; then
# ---- 3. same physics?
echo
echo "== physics check: centre of mass over $COM_STEPS substeps (quick scenes, $NPROC threads)"
OMP_NUM_THREADS=$NPROC ./build/bench quick com="$COM_STEPS" >"$OUTD/cq_com.txt" || { echo "peers: chainqueen com run failed"; rc=1; }
$TI --quick --check "$COM_STEPS" --threads "$NPROC" >"$OUTD/ti_com.txt" || { echo "peers: taichi com run failed"; rc=1; }
"$VPY" bench/peer_taichi.py --side-by-side "$OUTD/cq_com.txt" "$OUTD/ti_com.txt" || rc=1

# ---- 4. CPU, per thread count
for t in $THREADS; do
    echo
    echo "== CPU, $t thread(s)${Q:+, quick}"
    cqf=""; tif=""
    for r in $(seq "$ROUNDS"); do
        echo "-- round $r of $ROUNDS, chainqueen.h: OMP_NUM_THREADS=$t ./build/bench $Q $CQ_ARGS"
        run_to "$OUTD/cq_cpu_t${t}_r$r.txt" env OMP_NUM_THREADS="$t" ./build/bench $Q $CQ_ARGS
        echo "-- round $r of $ROUNDS, Taichi: peer_taichi.py --arch cpu --threads $t $QF $SF"
        run_to "$OUTD/ti_cpu_t${t}_r$r.txt" $TI --arch cpu --threads "$t" $QF $SF
        cqf="$cqf${cqf:+,}$OUTD/cq_cpu_t${t}_r$r.txt"; tif="$tif${tif:+,}$OUTD/ti_cpu_t${t}_r$r.txt"
    done
    "$VPY" bench/peer_taichi.py --side-by-side "$cqf" "$tif" --label "CPU, $t thread(s)" >"$OUTD/side_cpu_t$t.txt"
    summary="$summary $OUTD/side_cpu_t$t.txt"
done
else
    echo; echo "== CPU: skipped (PEERS_CPU=0)"
fi

# ---- 5. CUDA, where there is a GPU
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo
    echo "== CUDA ($(nvidia-smi -L | head -n 1))"
    cqf=""; tif=""
    for r in $(seq "$ROUNDS"); do
        echo "-- round $r of $ROUNDS, chainqueen.h: ./build/bench $Q gpu $CQ_ARGS"
        run_to "$OUTD/cq_gpu_r$r.txt" ./build/bench $Q gpu $CQ_ARGS
        echo "-- round $r of $ROUNDS, Taichi: peer_taichi.py --arch cuda $QF $SF"
        run_to "$OUTD/ti_gpu_r$r.txt" $TI --arch cuda $QF $SF
        cqf="$cqf${cqf:+,}$OUTD/cq_gpu_r$r.txt"; tif="$tif${tif:+,}$OUTD/ti_gpu_r$r.txt"
    done
    "$VPY" bench/peer_taichi.py --side-by-side "$cqf" "$tif" --label CUDA >"$OUTD/side_gpu.txt"
    summary="$summary $OUTD/side_gpu.txt"
else
    echo
    echo "== CUDA: skipped (nvidia-smi does not work here)"
fi

echo
echo "==== chainqueen.h vs Taichi $TI_VER, side by side (raw outputs in $OUTD/)"
for f in $summary; do
    echo
    cat "$f"
done
[ "$rc" = 0 ] || echo "peers: some runs FAILED (see above)"
exit "$rc"
