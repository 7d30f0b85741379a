#!/bin/sh
# The implementation as a shared library through CQ_API: built with -fvisibility=hidden, only
# the public cq_* names are exported, a declarations-only program links against it and runs;
# CQ_API=static compiles too.  Usage: sh tests/compile/shared_lib.sh CC BUILD_DIR
set -eu
CC=$1; B=$2
WARN="-Wall -Wextra -Werror -pedantic"
$CC -std=c99 -O1 -fPIC -shared -fvisibility=hidden '-DCQ_API=__attribute__((visibility("default")))' $WARN \
    tests/compile/impl.c -o "$B/libchainqueen.so" -lm
$CC -std=c99 '-DCQ_API=__attribute__((visibility("default")))' $WARN tests/compile/decl_only.c -o "$B/decl_shared" \
    -L"$B" -lchainqueen -Wl,-rpath,"$PWD/$B"
"./$B/decl_shared"
nm -D --defined-only "$B/libchainqueen.so" > "$B/libchainqueen.syms"
grep -q ' cq_sim_backward_desc$' "$B/libchainqueen.syms" || { echo "cq_sim_backward_desc not exported"; exit 1; }
if grep ' cq__' "$B/libchainqueen.syms"; then echo "internal names exported"; exit 1; fi
echo "exported: $(grep -c ' T cq_' "$B/libchainqueen.syms") public functions"
$CC -std=c99 -DCQ_API=static $WARN -Wno-unused-function -c tests/compile/impl.c -o "$B/impl_static.o"
