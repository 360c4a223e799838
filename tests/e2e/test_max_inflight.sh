#!/bin/sh
# test_max_inflight.sh - `ckube server --enable-priority-and-fairness=false`, with curl
# against a real server: kube-apiserver's max-in-flight filter replaces API Priority and
# Fairness. Responses carry no X-Kubernetes-PF-* headers; with one write allowed at
# once, parallel writes of a user are partly refused with kube-apiserver's 429 (plain
# text, Retry-After: 1) and partly served, while a member of system:masters is never
# refused; nothing is counted as API Priority and Fairness.
#
# Usage: test_max_inflight.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --enable-priority-and-fairness=false --max-requests-inflight 1 \
    --max-mutating-requests-inflight 1
header() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | tail -n 1; }

kurl -D "$work/h1" -o /dev/null "$url/api/v1/namespaces"
check "no FlowSchema is named ($(cat "$work/h1"))" \
    test -s "$work/h1" -a -z "$(header X-Kubernetes-PF-FlowSchema-UID "$work/h1")"

k create clusterrolebinding limited-user --clusterrole=cluster-admin --user=limited-user >/dev/null
mkdir "$work/load"
# burst FIRST LAST [HEADER]: creates configmaps cm-FIRST..cm-LAST at once, each answer's
# status in load/N.code, body in N.body, header in N.head
burst() {
    pids=""
    for i in $(seq "$1" "$2"); do
        kurl ${3:+-H "$3"} -o "$work/load/$i.body" -D "$work/load/$i.head" -w '%{http_code}\n' \
            -X POST -H 'Content-Type: application/json' \
            -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-$i\"}}" \
            "$url/api/v1/namespaces/default/configmaps" >"$work/load/$i.code" &
        pids="$pids $!"
    done
    wait $pids
}
burst 1 60 "Impersonate-User: limited-user"
cat "$work/load"/*.code | sort | uniq -c >"$work/codes"
rejected=$(grep -l '^429$' "$work/load"/*.code | head -n 1)
check "some parallel writes were rejected 429 ($(cat "$work/codes"))" test -n "$rejected"
check "some parallel writes were served ($(cat "$work/codes"))" grep -q ' 201$' "$work/codes"
if [ -n "$rejected" ]; then
    n=$(basename "$rejected" .code)
    check "the 429 says kube-apiserver's words ($(cat "$work/load/$n.body"))" \
        test "$(cat "$work/load/$n.body")" = "Too many requests, please try again later."
    check "the 429 has Retry-After: 1 ($(cat "$work/load/$n.head"))" \
        test "$(header Retry-After "$work/load/$n.head")" = 1
fi
rm "$work/load"/*.code
burst 61 100 # the admin: system:masters is never refused
check "the admin's parallel writes all run ($(cat "$work/load"/*.code | sort | uniq -c))" \
    sh -c "test \"\$(cat '$work/load'/*.code | grep -c '^201$')\" -eq 40"
kurl "$url/metrics" >"$work/metrics"
check "nothing is counted as API Priority and Fairness" \
    sh -c "! grep -q '^apiserver_flowcontrol_rejected_requests_total' '$work/metrics'"
finish
