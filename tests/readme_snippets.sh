#!/bin/sh
# Extracts every ```c block of README.md, compiles it against the repo's headers and runs it.
set -e
CC=${CC:-cc}
d=build/readme
rm -rf "$d" && mkdir -p "$d"
awk -v d="$d" '/^```c$/ { n++; f = d "/snippet" n ".c"; on = 1; next } /^```$/ { on = 0 } on { print > f }' README.md
count=0
for f in "$d"/snippet*.c; do
    $CC -std=c99 -O1 -Wall -Wextra -I. "$f" -o "$f.bin" -lm   # (-O1: the quick runs; -O2 builds are the compile matrix's)
    ./"$f.bin"
    count=$((count + 1))
done
[ "$count" -ge 2 ] || { echo "expected at least 2 C blocks in README.md, found $count"; exit 1; }
echo "$count README snippets compiled and ran"
