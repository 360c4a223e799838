#!/bin/sh
# bench/store/run.sh - the store benchmarks, side by side in one run:
# ckube on SQLite, ckube on etcd, and raw etcd (its v3 gateway driven by the
# same load generator). Builds a Release tree in build-bench/, starts a
# one-member etcd on free loopback ports (tests/store/etcd-test-env.sh, which
# also stops it), and prints one line per figure. Results: docs/benchmarks.md.
#
#   bench/store/run.sh            puts, range, watch latency
#   bench/store/run.sh crash [N]  the kill -9 crash test with N kills (50)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-bench}

if [ "${1:-}" = "crash" ]; then
    cmake -S . -B "$BUILD-crash" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD-crash" -j "$(nproc)" --target test_store_crash >/dev/null
    exec "$BUILD-crash/tests/test_store_crash" "${2:-50}"
fi

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target bench_store >/dev/null
bench=$BUILD/bench/store/bench_store
env=tests/store/etcd-test-env.sh

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r); etcd $(etcd --version | head -1)"
dir=$(mktemp -d "${TMPDIR:-/tmp}/ckube-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The load average before each backend: the figures mean little on a busy machine.
load() { echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
load
"$bench" "sqlite://$dir/state.db"
load
BENCH_SYNC=normal "$bench" "sqlite://$dir/normal.db"
load
sh "$env" 1 "$bench" @ETCD@
load
# raw etcd: the endpoint of a fresh member, without the etcd:// scheme
sh "$env" 1 sh -c 'exec "$0" --raw "${1#etcd://}"' "$bench" @ETCD@
