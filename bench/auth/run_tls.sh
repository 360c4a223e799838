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

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
if [ -n "$missing" ]; then
    echo "run_tls.sh: installing:$missing"
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends \
        $missing </dev/null >/dev/null
fi

cmake -S . -B build-bench-tls -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-tls --target ckube -j "$(nproc)" >/dev/null

PATH="$PATH:/usr/sbin"
export PATH
exec python3 bench/auth/tls_bench.py --ckube build-bench-tls/cmd/ckube/ckube "$@"
