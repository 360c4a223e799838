#!/bin/sh
# run.sh - builds the client benchmarks optimised (Release, no sanitizers) in build-bench
# and runs the work queue benchmark: bench/client/run.sh [N] [R]
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench --target bench_workqueue -j "$(nproc)" >/dev/null
echo "machine: $(nproc) CPUs, $(uname -sm), $(date -u +%Y-%m-%d)"
build-bench/bench/bench_workqueue "$@"
