#!/bin/sh
# etcd-test-env.sh MEMBERS COMMAND [ARGS...] - runs COMMAND against a fresh etcd.
#
# Starts an etcd cluster of MEMBERS members (1 or 3) on 127.0.0.1 with free
# ports and a temporary data directory, waits until every member is healthy,
# runs COMMAND with each argument "@ETCD@" replaced by the connection string
# etcd://127.0.0.1:P1[,...], and always stops the cluster and removes the
# directory afterwards. COMMAND also gets CKUBE_ETCD_PIDS (member pids, in
# endpoint order) for failover tests. Exits 77 (ctest: skipped) when no etcd
# binary is installed.
set -eu

members=$1
shift
ETCD=${ETCD:-$(command -v etcd || true)}
if [ -z "$ETCD" ]; then
    echo "etcd-test-env: no etcd binary (Debian package etcd-server); skipping" >&2
    exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/ckube-etcd-XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# 2 ports per member, picked by the kernel (bound to port 0, then released).
ports=$(python3 -c "
import socket
socks = [socket.socket() for _ in range(2 * $members)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()")

cluster=""
i=0
for p in $ports; do
    if [ $((i % 2)) -eq 1 ]; then
        cluster="$cluster${cluster:+,}m$((i / 2))=http://127.0.0.1:$p"
    fi
    i=$((i + 1))
done

url=""
i=0
set -- "$@" # keep COMMAND
client=""
for p in $ports; do
    if [ $((i % 2)) -eq 0 ]; then
        client=$p
    else
        n=$((i / 2))
        "$ETCD" --name "m$n" --data-dir "$dir/m$n" \
            --listen-client-urls "http://127.0.0.1:$client" \
            --advertise-client-urls "http://127.0.0.1:$client" \
            --listen-peer-urls "http://127.0.0.1:$p" \
            --initial-advertise-peer-urls "http://127.0.0.1:$p" \
            --initial-cluster "$cluster" --initial-cluster-state new \
            --initial-cluster-token "ckube-test-$$" \
            --max-request-bytes 10485760 \
            --experimental-watch-progress-notify-interval 2s \
            --logger zap --log-level error >"$dir/m$n.log" 2>&1 &
        pids="$pids $!"
        url="$url${url:+,}127.0.0.1:$client"
    fi
    i=$((i + 1))
done

# Wait (up to 30 s) for every member to report healthy.
for ep in $(echo "$url" | tr ',' ' '); do
    ok=0
    for _ in $(seq 300); do
        if curl -fs "http://$ep/health" 2>/dev/null | grep -q '"health":"true"'; then
            ok=1
            break
        fi
        sleep 0.1
    done
    if [ $ok -ne 1 ]; then
        echo "etcd-test-env: etcd at $ep did not become healthy" >&2
        cat "$dir"/*.log >&2
        exit 1
    fi
done

export CKUBE_ETCD_PIDS="$pids"
cmd=""
for a in "$@"; do
    [ "$a" = "@ETCD@" ] && a="etcd://$url"
    cmd="$cmd '$a'"
done
status=0
eval "$cmd" || status=$?
exit $status
