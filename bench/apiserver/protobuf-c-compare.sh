#!/bin/sh
# protobuf-c-compare.sh - the measurement behind docs/dependencies.md's protobuf
# row: protobuf-c against lib/api/protobuf.c on the same Pod.
#
#   bench/apiserver/protobuf-c-compare.sh KUBERNETES_API_CHECKOUT APIMACHINERY_CHECKOUT [TAG]
#
# Needs protobuf-c-compiler and libprotobuf-c-dev (Debian), which ckube does
# not otherwise use. Writes Kubernetes' generated.proto files (core/v1 and
# what it imports, at TAG, default v0.32.9) into a temporary folder, has
# protoc-c generate C from them, reports the size of that code, builds
# protobuf-c-compare.c against it and runs it beside bench_protobuf on
# tests/api/data/pod-full.json.
set -eu
api=$1
machinery=$2
tag=${3:-v0.32.9}
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in pkg/api/resource pkg/apis/meta/v1 pkg/runtime pkg/runtime/schema pkg/util/intstr; do
    mkdir -p "$work/k8s.io/apimachinery/$p"
    git -C "$machinery" show "$tag:$p/generated.proto" >"$work/k8s.io/apimachinery/$p/generated.proto"
done
mkdir -p "$work/k8s.io/api/core/v1" "$work/out"
git -C "$api" show "$tag:core/v1/generated.proto" >"$work/k8s.io/api/core/v1/generated.proto"
(cd "$work" && protoc-c --c_out=out -I. $(find k8s.io -name generated.proto) 2>/dev/null)
echo "protoc-c output for core/v1 and apimachinery: $(cat "$work"/out/k8s.io/*/*/*/*.pb-c.c "$work"/out/k8s.io/*/*/*/*/*.pb-c.c "$work"/out/k8s.io/*/*/*/*/*/*.pb-c.c 2>/dev/null | wc -l) lines of C, $(cat $(find "$work/out" -name '*.pb-c.h') | wc -l) lines of headers"
# -std=c11: GNU C defines `linux`, a field name of core/v1 (ContainerUser.linux)
cc -std=c11 -D_POSIX_C_SOURCE=200809L -w -O2 -DNDEBUG -I"$work/out" -o "$work/compare" bench/apiserver/protobuf-c-compare.c \
    $(find "$work/out" -name '*.pb-c.c') -lprotobuf-c
size "$work/compare" | tail -1 | awk '{print "protobuf-c compare program text: " $1 " bytes"}'
cmake -S . -B build-bench-api -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build build-bench-api --target bench_protobuf -j "$(nproc)" >/dev/null
objs=build-bench-api/lib/api/CMakeFiles/ckube-api.dir
size "$objs/protobuf.c.o" | tail -1 | awk '{print "lib/api/protobuf.c text: " $1 " bytes"}'
size "$objs/proto_documents.c.o" | tail -1 | awk '{print "fields.json embedded: " $1 " bytes"}'
build-bench-api/bench/bench_protobuf tests/api/data/pod-full.json 20000 5 "$work/pod.pb"
"$work/compare" "$work/pod.pb" 20000 5
