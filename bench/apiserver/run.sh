#!/bin/sh
# run.sh - the API server benchmark: bench/apiserver/run.sh [bench.py options]
#
# Builds ckube, bench_watch and bench_etcd_put optimised (Release, -O2, no sanitizers) in
# build-bench-api, installs wrk and nginx-light with apt when they are
# missing (they are needed here only, so `make test` never pays for them),
# raises the open-file limit for 1,000 watchers, and runs bench.py against a
# throwaway etcd (tests/store/etcd-test-env.sh). Takes about three minutes.
set -eu
cd "$(dirname "$0")/../.."
. bench/lib.sh

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
bench_install run.sh $missing

cmake -S . -B build-bench-api -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG -Wno-error=format-truncation" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-api --target ckube bench_watch bench_etcd_put -j "$(nproc)" >/dev/null

# (the hard limit when it is lower; --watchers 10000 needs more than 10,000)
ulimit -n 20000 2>/dev/null || ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PATH="$PATH:/usr/sbin"
export PATH
exec tests/store/etcd-test-env.sh 1 python3 bench/apiserver/bench.py \
    --ckube build-bench-api/cmd/ckube/ckube --watch-tool build-bench-api/bench/bench_watch \
    --etcd-put-tool build-bench-api/bench/store/bench_etcd_put \
    --etcd @ETCD@ "$@"
