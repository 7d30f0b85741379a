#!/bin/sh
# Fuzzes chainqueen_io.h's PNG, STL (+ voxeliser) and zlib loaders (tests/fuzz/fuzz_io.c) from the
# seed corpus tests/fuzz/corpus (files prefixed by the loader byte: 0 PNG, 1 STL, 2 zlib).
#   sh tests/fuzz/run_io.sh [SECONDS|RUNS]      default 20
# With clang's libFuzzer: runs for SECONDS under ASan/UBSan, keeping new inputs in build/fuzz_corpus.
# Otherwise (or with FUZZ_STANDALONE=1): RUNS x 1000 fixed-seed mutations under gcc's sanitizers.
# Exits nonzero on any crash, leak or sanitizer report.  Release runs: sh tests/fuzz/run_io.sh 3600
set -eu
cd "$(dirname "$0")/../.."
N=${1:-20}; B=build; mkdir -p $B/fuzz_corpus
if [ "${FUZZ_STANDALONE:-0}" != 1 ] && command -v clang >/dev/null 2>&1 && \
   clang -g1 -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all tests/fuzz/fuzz_io.c -o $B/fuzz_io -lm 2>/dev/null; then
    if ! $B/fuzz_io -max_total_time="$N" -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$B/ $B/fuzz_corpus tests/fuzz/corpus > $B/fuzz_io.log 2>&1; then
        tail -n 40 $B/fuzz_io.log; echo "fuzz_io: FINDING (see $B/fuzz_io.log and the crash-* file)"; exit 1
    fi
    echo "fuzz_io (libFuzzer, ASan/UBSan): $(grep -o 'number_of_executed_units: [0-9]*' $B/fuzz_io.log | grep -o '[0-9]*$') executions in $N s, no findings"
else
    ${CC:-cc} -std=c99 -g1 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -DCQ_FUZZ_STANDALONE \
        tests/fuzz/fuzz_io.c -o $B/fuzz_io_standalone -lm
    $B/fuzz_io_standalone $((N * 1000)) 1 tests/fuzz/corpus/*
fi
