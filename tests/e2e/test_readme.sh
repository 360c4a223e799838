#!/bin/sh
# test_readme.sh - runs the kubectl session of README.md exactly as written
# (the lines between the readme-session markers) against a fresh
# `ckube server` whose data directory is ./ckube-data of a scratch directory,
# as `make run` makes it (but with --disable-agent: no node, no containerd,
# as in every test that does not test the node), with the repository's
# examples/ beside it, on a port of its own. Every line must succeed and print something, run as
# written: each runs in its own shell after the session's `export` lines
# so far, as in the terminal the README speaks of (the curl lines find the
# server through $APISERVER, read from the kubeconfig).
#
# Usage: test_readme.sh PATH/TO/ckube PATH/TO/README.md
set -u
if ! command -v kubectl >/dev/null 2>&1; then
    echo "test_readme: no kubectl on PATH (kubectl 1.32 is a prerequisite you install, see README.md); skipping" >&2
    exit 77
fi
ckube=$1
readme=$2
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

sed -n '/<!-- readme-session:begin -->/,/<!-- readme-session:end -->/p' "$readme" |
    grep -v -e '^<!--' -e '^```' >"$work/session"
lines=$(wc -l <"$work/session")
if [ "$lines" -lt 5 ]; then
    echo "FAIL: no readme-session block found in $readme"
    exit 1
fi

cp -r "$(dirname "$readme")/examples" "$work/" || exit 1
cd "$work" || exit 1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir ./ckube-data >server.out 2>server.err &
server_pid=$!
i=0
# ready, and the export line printed (after the kubeconfig is written)
until [ "$(curl -s -m 10 --cacert ckube-data/pki/ca.crt "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    grep -q "^export KUBECONFIG=" server.out 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$server_pid" 2>/dev/null; then
        echo "server did not become ready:"; cat server.err; exit 1
    fi
    sleep 0.1
done
export KUBECACHEDIR="$work/kube-cache"

failures=0
exports=""
unset KUBECONFIG APISERVER
while IFS= read -r line; do
    if ! sh -c "set -e
$exports
$line" >out 2>&1 </dev/null; then
        echo "FAIL: $line"; cat out; failures=$((failures + 1))
    elif [ ! -s out ] && [ "${line#export }" = "$line" ]; then
        echo "FAIL: no output from: $line"; failures=$((failures + 1))
    fi
    if [ "${line#export }" != "$line" ]; then
        exports="$exports
$line"
    fi
done <"$work/session"
echo "$lines lines, $failures failed"
[ "$failures" -eq 0 ]
