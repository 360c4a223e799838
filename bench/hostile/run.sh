#!/bin/sh
# bench/hostile/run.sh - the three memory attacks of tests/hostile/ in their long
# forms, each against a fresh Release-built server (see hostile.py for what each
# does and measures). Exits non-zero when an attack took the server's peak RSS
# to 512 MiB or more, or /readyz failed while it ran.
#
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel --target ckube
#   bench/hostile/run.sh [build-rel/cmd/ckube/ckube]
set -e
cd "$(dirname "$0")/../.."
CKUBE=${1:-build-rel/cmd/ckube/ckube}
status=0
for attack in patch_bomb watchers big_object; do
    python3 bench/hostile/hostile.py "$attack" --ckube "$CKUBE" || status=1
done
exit $status
