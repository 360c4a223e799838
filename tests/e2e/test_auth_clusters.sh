#!/bin/sh
# test_auth_clusters.sh - credentials belong to one cluster: two servers A and B of one
# cluster (B has A's CA and ServiceAccount key, one etcd store) and a server C of another
# cluster (its own CA and key, its own store). A client certificate and a ServiceAccount
# token of the first cluster work against A and B; C's certificate and a token signed
# with C's key, naming the very same ServiceAccount (namespace, name and uid), are
# refused by A and B with 401, and the first cluster's are refused by C with 401.
#
# Usage: test_auth_clusters.sh PATH/TO/ckube etcd://HOST:PORT[,...] PATH/TO/sa_token
# (run under etcd-test-env.sh; sa_token signs a token with a ServiceAccount key)
set -u
sa_token=${3:-}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
case "$store" in
etcd://*) ;;
*)
    echo "test_auth_clusters.sh: needs an etcd store URL (run it under etcd-test-env.sh); skipping" >&2
    exit 77
    ;;
esac
pids=""
stop_others() { for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done; }
trap 'stop_others; cleanup' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start_other NAME PORT STORE: a server with data directory $work/NAME (its pki/ as prepared)
start_other() {
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$2" --data-dir "$work/$1" --store "$3" \
        --controllers -* >>"$work/$1.out" 2>>"$work/$1.err" &
    pids="$pids $!"
    i=0
    until [ -f "$work/$1/pki/ca.crt" ] &&
        [ "$(curl -s --cacert "$work/$1/pki/ca.crt" "https://127.0.0.1:$2/readyz")" = ok ]; do
        i=$((i + 1))
        if [ $i -gt 150 ]; then
            echo "server $1 did not become ready:"; cat "$work/$1.err"; exit 1
        fi
        sleep 0.1
    done
}

start_server --controllers -*
a_url=$url
a_pki=$work/data/pki

# B: the same cluster (A's CA and ServiceAccount key), the same store
b_port=$(free_port)
b_url="https://127.0.0.1:$b_port"
mkdir -p "$work/b/pki"
chmod 700 "$work/b" "$work/b/pki"
cp -p "$a_pki/ca.crt" "$a_pki/ca.key" "$a_pki/sa.key" "$work/b/pki/"
start_other b "$b_port" "$store"

# C: another cluster, its own PKI and store
c_port=$(free_port)
c_url="https://127.0.0.1:$c_port"
mkdir -p "$work/c"
chmod 700 "$work/c"
start_other c "$c_port" "sqlite://$work/c/state.db"
c_pki=$work/c/pki
check "the other cluster has its own CA" sh -c "! cmp -s '$a_pki/ca.crt' '$c_pki/ca.crt'"
check "the other cluster has its own ServiceAccount key" \
    sh -c "! cmp -s '$a_pki/sa.key' '$c_pki/sa.key'"

# code_of CA CERT_PREFIX URL: the HTTP status of a GET as the certificate's user
cert_code() {
    curl -s -o "$work/body" -w '%{http_code}' --cacert "$1" --cert "$2.crt" --key "$2.key" "$3"
}
# token_code CA TOKEN URL: the HTTP status of a GET with the bearer token
token_code() {
    curl -s -o "$work/body" -w '%{http_code}' --cacert "$1" -H "Authorization: Bearer $2" "$3"
}
unauthorized() { # the last answer was Kubernetes' 401 Status
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
sys.exit(0 if s.get("kind")=="Status" and s.get("code")==401 and s.get("reason")=="Unauthorized" else 1)' "$work/body"
}
refused() { [ "$1" = 401 ] && unauthorized; }

# --- client certificates ---
ns=/api/v1/namespaces/default
check "A's admin certificate works against A" test "$(cert_code "$a_pki/ca.crt" "$a_pki/admin" "$a_url$ns")" = 200
check "A's admin certificate works against B" test "$(cert_code "$a_pki/ca.crt" "$a_pki/admin" "$b_url$ns")" = 200
check "C's admin certificate works against C" test "$(cert_code "$c_pki/ca.crt" "$c_pki/admin" "$c_url$ns")" = 200
check "A refuses C's admin certificate (401 Status)" \
    refused "$(cert_code "$a_pki/ca.crt" "$c_pki/admin" "$a_url$ns")"
check "B refuses C's admin certificate (401 Status)" \
    refused "$(cert_code "$a_pki/ca.crt" "$c_pki/admin" "$b_url$ns")"
check "C refuses A's admin certificate (401 Status)" \
    refused "$(cert_code "$c_pki/ca.crt" "$a_pki/admin" "$c_url$ns")"

# --- ServiceAccount tokens: one account, signed by each cluster's key ---
printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: probe}\n' >"$work/sa.yaml"
k create -f "$work/sa.yaml" >/dev/null
uid=$(k get sa probe -o jsonpath='{.metadata.uid}')
ours=$("$sa_token" "$a_pki/sa.key" default probe "$uid")
theirs=$("$sa_token" "$c_pki/sa.key" default probe "$uid")
check "tokens were made" test -n "$ours" -a -n "$theirs" -a "$ours" != "$theirs"
# authenticated as the account, which has no role: 403 naming it (401 is "who are you?")
as_probe() {
    [ "$1" = 403 ] && grep -q 'system:serviceaccount:default:probe' "$work/body"
}
pods=/api/v1/namespaces/default/pods
check "A authenticates its cluster's token" as_probe "$(token_code "$a_pki/ca.crt" "$ours" "$a_url$pods")"
check "B authenticates the same token" as_probe "$(token_code "$a_pki/ca.crt" "$ours" "$b_url$pods")"
check "A refuses the other cluster's token for the same account (401 Status)" \
    refused "$(token_code "$a_pki/ca.crt" "$theirs" "$a_url$pods")"
check "B refuses the other cluster's token for the same account (401 Status)" \
    refused "$(token_code "$a_pki/ca.crt" "$theirs" "$b_url$pods")"
check "C refuses the first cluster's token (401 Status)" \
    refused "$(token_code "$c_pki/ca.crt" "$ours" "$c_url$pods")"
finish
