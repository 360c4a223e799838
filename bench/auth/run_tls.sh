#!/bin/sh
# run_tls.sh - the API server over TLS beside nginx over TLS:
# bench/auth/run_tls.sh [tls_bench.py options]
#
# Builds ckube optimised (Release, -O2, no sanitizers) in build-bench-tls,
# installs wrk and nginx-light with apt when they are missing, and runs
# tls_bench.py (keep-alive GETs of one pod and new TLS connections per
# second, each beside nginx serving the same bytes with the same
# certificate). Takes about a minute.
set -eu
cd "$(dirname "$0")/../.."
. bench/lib.sh

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
bench_install run_tls.sh $missing

cmake -S . -B build-bench-tls -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-tls --target ckube -j "$(nproc)" >/dev/null

PATH="$PATH:/usr/sbin"
export PATH
exec python3 bench/auth/tls_bench.py --ckube build-bench-tls/cmd/ckube/ckube "$@"
