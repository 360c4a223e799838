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

kurl -D "$work/h1" -o /dev/null "$url/api/v1/namespaces"
check "no FlowSchema is named ($(cat "$work/h1"))" \
    test -s "$work/h1" -a -z "$(header X-Kubernetes-PF-FlowSchema-UID "$work/h1")"

k create clusterrolebinding limited-user --clusterrole=cluster-admin --user=limited-user >/dev/null
burst 1 60 -H "Impersonate-User: limited-user"
check_burst_429 1
rm "$work/load"/*.code
burst 61 100 # the admin: system:masters is never refused
check "the admin's parallel writes all run ($(cat "$work/load"/*.code | sort | uniq -c))" \
    sh -c "test \"\$(cat '$work/load'/*.code | grep -c '^201$')\" -eq 40"
kurl "$url/metrics" >"$work/metrics"
check "nothing is counted as API Priority and Fairness" \
    sh -c "! grep -q '^apiserver_flowcontrol_rejected_requests_total' '$work/metrics'"
finish
