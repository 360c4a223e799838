#!/bin/sh
# run-protobuf.sh - protobuf beside JSON on the API server:
#   bench/apiserver/run-protobuf.sh [protobuf.py options]
# Builds ckube and bench_protobuf optimised (Release, -O2, no sanitizers) in
# build-bench-api, runs the codec alone (bench_protobuf: a pod encoded and
# decoded, beside jansson dumping and parsing it), then protobuf.py (GET of a
# pod and LIST of 1,000 pods over HTTP, protobuf beside JSON). Needs wrk
# (bench/apiserver/run.sh installs it). Takes about two minutes.
set -eu
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null 2>&1 || { echo "run-protobuf.sh: needs wrk (bench/apiserver/run.sh installs it)"; exit 1; }
cmake -S . -B build-bench-api -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-api --target ckube bench_protobuf -j "$(nproc)" >/dev/null
build-bench-api/bench/bench_protobuf tests/api/data/pod-full.json
echo
exec python3 bench/apiserver/protobuf.py --ckube build-bench-api/cmd/ckube/ckube "$@"
