#!/bin/sh
# test_ha.sh - two `ckube server`s on one etcd cluster, as one cluster: the second gets
# the first's CA and ServiceAccount key (ca.crt, ca.key, sa.key copied into its --pki-dir),
# so the first's kubeconfig and a ServiceAccount token work against both; the servers'
# controllers elect one leader (Lease kube-system/kube-controller-manager), so a
# ReplicaSet gets exactly its replicas; after kill -9 of the leading server the other
# takes over and acts; a restarted server takes its own lease back at once (stable
# identity per data directory); a server stopped cleanly hands its lease over at once;
# a separate `ckube scheduler` campaigns on the same Lease and defers to the server; a
# leader frozen past its lease (SIGSTOP) loses it, and thawed stops its controllers,
# keeps serving and campaigns again; an etcd member stopped (SIGTERM) and restarted on
# its data directory catches up with the writes made without it, and the server
# serves writes throughout. Both servers list themselves in the kubernetes Service's
# Endpoints (--advertise-address 10.0.0.1 and 10.0.0.2); the one killed drops out once
# its record expires, the one stopped cleanly at once.
#
# Usage: test_ha.sh PATH/TO/ckube etcd://HOST:PORT[,...] PATH/TO/sa_token
# (run under etcd-test-env.sh; sa_token signs a token with a ServiceAccount key)
# Waits are `kubectl wait` or polls with a deadline; nothing asserts on time.
set -u
sa_token=${3:-}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
case "$store" in
etcd://*) ;;
*)
    echo "test_ha.sh: needs an etcd store URL (run it under etcd-test-env.sh); skipping" >&2
    exit 77
    ;;
esac
b_pid=""
member_pid="" # an etcd member this script restarted (its child)
stop_b() { [ -n "$b_pid" ] && kill "$b_pid" 2>/dev/null && wait "$b_pid" 2>/dev/null; b_pid=""; }
stop_member() { [ -n "$member_pid" ] && kill "$member_pid" 2>/dev/null && wait "$member_pid" 2>/dev/null; member_pid=""; }
trap 'stop_b; stop_member; cleanup' EXIT

start_server --advertise-address 10.0.0.1
a_url=$url
a_id=$(cat "$work/data/leader-identity")

# --- a second server beside the first: the same CA and ServiceAccount key ---
b_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
b_url="https://127.0.0.1:$b_port"
mkdir -p "$work/b/pki"
chmod 700 "$work/b" "$work/b/pki"
cp -p "$work/data/pki/ca.crt" "$work/data/pki/ca.key" "$work/data/pki/sa.key" "$work/b/pki/"
start_b() {
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$b_port" --data-dir "$work/b" --store "$store" \
        --advertise-address 10.0.0.2 \
        >>"$work/b.out" 2>>"$work/b.err" &
    b_pid=$!
    i=0
    until [ "$(kurl -m 10 "$b_url/readyz" 2>/dev/null)" = ok ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$b_pid" 2>/dev/null; then
            echo "second server did not become ready:"; cat "$work/b.err"; exit 1
        fi
        sleep 0.1
    done
}
start_b
b_id=$(cat "$work/b/leader-identity")
check "the servers have different identities" test "$a_id" != "$b_id"
kb() { kubectl --request-timeout=20s --server "$b_url" "$@"; }
check "the first server's kubeconfig works against the second" \
    sh -c "kubectl --request-timeout=20s --server '$b_url' get ns default >/dev/null"
check "the second server's certificate is from the same CA" \
    sh -c "curl -fs --cacert '$ca' '$b_url/readyz' >/dev/null"
# (the server does not serve TokenRequest yet: the token is signed with the first's key)
printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ha-sa}\n' >"$work/sa.yaml"
k create -f "$work/sa.yaml" >/dev/null
token=$("$sa_token" "$work/data/pki/sa.key" default ha-sa \
    "$(k get sa ha-sa -o jsonpath='{.metadata.uid}')" 2>"$work/token.err")
# token_works URL: the server at URL authenticates the token as the ServiceAccount (it
# has no role: 403 naming the user, where a token it cannot verify gets 401)
token_works() {
    code=$(curl -s -o "$work/token.out" -w '%{http_code}' --cacert "$ca" \
        -H "Authorization: Bearer $token" "$1/api/v1/namespaces/default/pods")
    [ -n "$token" ] && [ "$code" = 403 ] &&
        grep -q 'system:serviceaccount:default:ha-sa' "$work/token.out"
}
check "the first server authenticates a ServiceAccount token" token_works "$a_url"
check "the second server authenticates the same token" token_works "$b_url"
# masters_are URL LIST: the kubernetes Service's Endpoints, read from the server at URL,
# list exactly these addresses
masters_are() {
    [ "$(kubectl --request-timeout=20s --server "$1" get endpoints kubernetes \
        -o jsonpath='{.subsets[*].addresses[*].ip}')" = "$2" ]
}
poll "the kubernetes Endpoints list both servers" masters_are "$b_url" "10.0.0.1 10.0.0.2"

# holder LEASE URL: the Lease's holderIdentity as the server at URL has it
holder() {
    kurl "$2/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$1" | python3 -c '
import json, sys
try: print(json.load(sys.stdin)["spec"].get("holderIdentity", ""))
except Exception: print("")'
}
renewed() { # renewed LEASE URL: its renewTime
    kurl "$2/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$1" | python3 -c '
import json, sys
try: print(json.load(sys.stdin)["spec"].get("renewTime", ""))
except Exception: print("")'
}
# await_holder URL LEASE ID SECONDS: polls until ID holds LEASE; false after SECONDS
await_holder() {
    i=0
    while [ "$(holder "$2" "$1")" != "$3" ]; do
        i=$((i + 1))
        [ $i -gt $(($4 * 10)) ] && return 1
        sleep 0.1
    done
}
# stays_holder URL LEASE ID: ID still holds LEASE after 3 s (its rival's retry periods)
stays_holder() { sleep 3; [ "$(holder "$2" "$1")" = "$3" ]; }
check "the first server leads the controllers" await_holder "$b_url" kube-controller-manager "$a_id" 10
check "the first server leads the scheduler" await_holder "$b_url" kube-scheduler "$a_id" 10
check "the second server does not take the lease" \
    stays_holder "$b_url" kube-controller-manager "$a_id"

# --- a separate `ckube scheduler` elects on the same Lease: it defers to the server ---
"$ckube" scheduler --kubeconfig "$KUBECONFIG" >"$work/sched.out" 2>"$work/sched.err" &
sched_pid=$!
check "ckube scheduler defers to the server holding kube-scheduler" \
    stays_holder "$b_url" kube-scheduler "$a_id"
check "ckube scheduler campaigns on kube-system/kube-scheduler" \
    grep -q 'Attempting to acquire leader lease.*lease="kube-scheduler"' "$work/sched.err"
kill "$sched_pid"
check "ckube scheduler exits 0 on SIGTERM" wait "$sched_pid"
"$ckube" scheduler --kubeconfig "$KUBECONFIG" --leader-elect=maybe >/dev/null 2>&1
check "ckube scheduler --leader-elect=maybe is a usage error" test $? -eq 2

# --- one set of controllers: a ReplicaSet gets exactly its replicas ---
cat >"$work/rs.yaml" <<EOF
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: ha
spec:
  replicas: 4
  selector:
    matchLabels: {app: ha}
  template:
    metadata:
      labels: {app: ha}
    spec:
      containers:
      - name: c
        image: nginx
EOF
pods() { kb get pods -l app=ha -o name 2>/dev/null | wc -l; }
create_rs() { kb create -f "$work/rs.yaml" >/dev/null; }
check "create the ReplicaSet through the second server" create_rs
wait_for "status.replicas reaches 4" rs/ha '{.status.replicas}=4'
sleep 2 # a second set of controllers would have created more by now
check "exactly 4 pods (one controller acted)" test "$(pods)" -eq 4

# --- kill -9 the leader: the other takes over and acts ---
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=""
check "the second server takes the controllers' lease" \
    await_holder "$b_url" kube-controller-manager "$b_id" 40
check "the second server takes the scheduler's lease" await_holder "$b_url" kube-scheduler "$b_id" 40
poll "the killed server drops out of the kubernetes Endpoints" masters_are "$b_url" "10.0.0.2"
kb scale rs ha --replicas=6 >/dev/null
i=0
until [ "$(pods)" -eq 6 ] || [ $i -gt 300 ]; do i=$((i + 1)); sleep 0.1; done
check "the new leader's ReplicaSet controller acts (6 pods)" test "$(pods)" -eq 6

# --- the killed server restarts with its identity and serves; it does not lead ---
start_server --advertise-address 10.0.0.1
check "the restarted server keeps its identity" test "$(cat "$work/data/leader-identity")" = "$a_id"
check "the restarted server serves" sh -c "kubectl --request-timeout=20s get rs ha >/dev/null"
check "the leader stays" stays_holder "$a_url" kube-controller-manager "$b_id"
poll "the restarted server is listed again" masters_are "$b_url" "10.0.0.1 10.0.0.2"

# --- a clean stop releases the lease: the other takes it within a few retry periods,
# not the 15 s of an unreleased lease ---
stop_b
check "a cleanly stopped leader's lease goes to the other" \
    await_holder "$a_url" kube-controller-manager "$a_id" 10
check "a cleanly stopped server left the kubernetes Endpoints" masters_are "$a_url" "10.0.0.1"
k scale rs ha --replicas=3 >/dev/null
i=0
until [ "$(k get pods -l app=ha -o name 2>/dev/null | wc -l)" -eq 3 ] || [ $i -gt 300 ]; do
    i=$((i + 1))
    sleep 0.1
done
check "the first server's controllers act again (3 pods)" \
    test "$(k get pods -l app=ha -o name 2>/dev/null | wc -l)" -eq 3

# --- a leader frozen past its lease loses it: the other leads; thawed, the first stops
# its controllers, keeps serving and campaigns again ---
kill -STOP "$server_pid"
start_b
check "the other server takes the lease of a frozen leader" \
    await_holder "$b_url" kube-controller-manager "$b_id" 40
kill -CONT "$server_pid"
lost_and_campaigning() {
    i=0
    until grep -q 'Leader lease lost: campaigning again.*kube-controller-manager' \
        "$work/server.err"; do
        i=$((i + 1))
        [ $i -gt 200 ] && return 1
        sleep 0.1
    done
}
check "the thawed server stops its controllers and campaigns again" lost_and_campaigning
check "the thawed server keeps serving" sh -c "kubectl --request-timeout=20s get rs ha >/dev/null"
check "the lease stays with the other" stays_holder "$a_url" kube-controller-manager "$b_id"
k scale rs ha --replicas=2 >/dev/null
i=0
until [ "$(k get pods -l app=ha -o name 2>/dev/null | wc -l)" -eq 2 ] || [ $i -gt 300 ]; do
    i=$((i + 1))
    sleep 0.1
done
check "one set of controllers acts after the thaw (2 pods)" \
    test "$(k get pods -l app=ha -o name 2>/dev/null | wc -l)" -eq 2
stop_b
await_holder "$a_url" kube-controller-manager "$a_id" 10

# --- killed and restarted at once, a server takes its own unexpired lease back (the
# lease lasts 15 s: another identity would have to wait it out) ---
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=""
start_server --advertise-address 10.0.0.1
before=$(renewed kube-controller-manager "$a_url")
takes_back() {
    i=0
    while [ "$(renewed kube-controller-manager "$a_url")" = "$before" ]; do
        i=$((i + 1))
        [ $i -gt 100 ] && return 1
        sleep 0.1
    done
    [ "$(holder kube-controller-manager "$a_url")" = "$a_id" ]
}
check "a restarted server takes its own unexpired lease back" takes_back

# --- an etcd member stopped (SIGTERM) and restarted on its data directory ---
# (etcd-test-env.sh gives the members' pids in endpoint order)
# shellcheck disable=SC2086
set -- ${CKUBE_ETCD_PIDS:-}
old_member=${1:-}
endpoint=$(echo "${store#etcd://}" | cut -d, -f1)
gone() { # gone PID: exited (a zombie of etcd-test-env.sh's shell counts)
    # one read: the process may be reaped between a test for the file and a read of it
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    [ -z "$stat" ] || [ "$(echo "$stat" | sed 's/.*) //' | cut -d' ' -f1)" = Z ]
}
if [ -z "$old_member" ] || [ ! -r "/proc/$old_member/cmdline" ]; then
    fail "the first etcd member's pid (CKUBE_ETCD_PIDS) is readable"
else
    tr '\0' '\n' <"/proc/$old_member/cmdline" >"$work/member.args"
    kill -TERM "$old_member"
    i=0
    until gone "$old_member" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
    check "the etcd member stopped on SIGTERM" gone "$old_member"
    printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: while-down}\n' >"$work/down.yaml"
    check "the server writes with two members of three" sh -c "kubectl --request-timeout=20s create -f '$work/down.yaml' >/dev/null"
    set --
    while IFS= read -r arg; do set -- "$@" "$arg"; done <"$work/member.args"
    "$@" >"$work/member.log" 2>&1 &
    member_pid=$!
    member_caught_up() { # the restarted member answers and holds the write made without it
        i=0
        until ETCDCTL_API=3 etcdctl --endpoints "$endpoint" --command-timeout=2s \
            --consistency=s get "" --prefix --keys-only 2>/dev/null | grep -q 'while-down'; do
            i=$((i + 1))
            [ $i -gt 300 ] && return 1
            sleep 0.1
        done
    }
    check "the restarted member catches up with the write made without it" member_caught_up
    printf 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: after-restart}\n' >"$work/after.yaml"
    check "the server writes once the member is back" sh -c "kubectl --request-timeout=20s create -f '$work/after.yaml' >/dev/null"
    check "the server reads both" sh -c "kubectl --request-timeout=20s get sa while-down after-restart >/dev/null"
fi
finish
