#!/bin/sh
# run.sh - builds libfeaturegate's benchmark in Release mode and runs it.
# Usage (from the repository root): bench/featuregate/run.sh [BUILD_DIR]
# The real Kubernetes list is loaded when ../shared/data has it.
set -eu
build=${1:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" --target bench_featuregate -j "$(nproc)" >/dev/null
list=../shared/data/kubernetes-versioned-feature-list.yaml
if [ -r "$list" ]; then
    "$build/bench/featuregate/bench_featuregate" "$list"
else
    "$build/bench/featuregate/bench_featuregate"
fi
