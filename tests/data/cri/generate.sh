#!/bin/sh
# generate.sh API_PROTO - writes the CRI message fixtures (*.bin) from their text form
# (*.txtpb) with `protoc --encode`, against cri-api's pkg/apis/runtime/v1/api.proto
# (tag v0.32.0; see ../README.md), map entries sorted by key (--deterministic_output,
# as the Go runtimes order them). The gogoproto import and options are dropped first:
# they change Go code generation, not one byte on the wire.
set -eu
proto=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e '/gogoproto/d' "$proto" >"$tmp/api.proto"
for txt in "$here"/*.txtpb; do
    name=$(basename "$txt" .txtpb)
    # the message type is the text file's first line: "# runtime.v1.VersionResponse"
    type=$(sed -n '1s/^# //p' "$txt")
    protoc -I "$tmp" --deterministic_output --encode="$type" "$tmp/api.proto" <"$txt" >"$here/$name.bin"
done
