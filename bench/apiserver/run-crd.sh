#!/bin/sh
# run-crd.sh - custom resources beside pods: bench/apiserver/run-crd.sh [crd.py options]
#              or bench/apiserver/run-crd.sh reads [crd_reads.py options]
#
# Builds ckube optimised (Release, -O2, no sanitizers) in build-bench-api,
# installs wrk with apt when it is missing, and runs bench/apiserver/crd.py:
# creates/s of a custom resource and of a pod on one SQLite server, and the
# memory of 1,000 CustomResourceDefinitions. Takes about two minutes.
# With `reads` first it runs bench/apiserver/crd_reads.py instead: GET and
# LIST of custom resources with and without schema defaults (defaulting on
# read), and of pods. Takes about three minutes.
set -eu
cd "$(dirname "$0")/../.."
if ! command -v wrk >/dev/null 2>&1; then
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends wrk \
        </dev/null >/dev/null
fi
cmake -S . -B build-bench-api -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG -Wno-error=format-truncation" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-api --target ckube -j "$(nproc)" >/dev/null
if [ "${1:-}" = reads ]; then
    shift
    exec python3 bench/apiserver/crd_reads.py --ckube build-bench-api/cmd/ckube/ckube "$@"
fi
exec python3 bench/apiserver/crd.py --ckube build-bench-api/cmd/ckube/ckube "$@"
