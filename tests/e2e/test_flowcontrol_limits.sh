#!/bin/sh
# test_flowcontrol_limits.sh - API Priority and Fairness applied to requests, with
# curl and the real kubectl against a real `ckube server`: every response of a
# classified request names the FlowSchema and PriorityLevelConfiguration that
# classified it by their UIDs (X-Kubernetes-PF-FlowSchema-UID,
# X-Kubernetes-PF-PriorityLevel-UID), the admin (system:masters) is exempt, a watch
# is classified and pods/log (long-running) is not; a user matched by a FlowSchema of
# a level with one seat and limitResponse Reject gets kube-apiserver's 429 under
# parallel writes (plain text, Retry-After) while the others are served, and
# /metrics counts the rejections and shows the levels' limits (nominal, lower,
# current, the fair fraction of the borrowing); a ?timeout that is no Go duration
# is refused 400 with kube-apiserver's words, even before authentication, but a
# watch's is not read.
#
# Usage: test_flowcontrol_limits.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# the server's concurrency limit is 2: the level below gets one seat (ceil(2 * 1 / sum))
start_server --max-requests-inflight 1 --max-mutating-requests-inflight 1

uid() { k get "$1" -o jsonpath='{.metadata.uid}'; }
# names DESCRIPTION FILE FS_UID PL_UID: the dump names both UIDs (neither empty)
names() {
    check "$1 ($(cat "$2"))" test -n "$3" -a -n "$4" \
        -a "$(header X-Kubernetes-PF-FlowSchema-UID "$2")" = "$3" \
        -a "$(header X-Kubernetes-PF-PriorityLevel-UID "$2")" = "$4"
}

# --- the admin is exempt ---
kurl -D "$work/h1" -o /dev/null "$url/api/v1/namespaces"
exempt_fs=$(uid flowschema/exempt)
exempt_pl=$(uid prioritylevelconfiguration/exempt)
names "the admin's request names the exempt FlowSchema and level" "$work/h1" "$exempt_fs" "$exempt_pl"
kurl -D "$work/h2" -o /dev/null "$url/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1"
names "a watch is classified" "$work/h2" "$exempt_fs" "$exempt_pl"
kurl -D "$work/h3" -o /dev/null "$url/api/v1/namespaces/default/pods/none/log"
check "pods/log is long-running: not classified ($(cat "$work/h3"))" \
    test -z "$(header X-Kubernetes-PF-FlowSchema-UID "$work/h3")" -a -s "$work/h3"

# --- a level with one seat that rejects, and a FlowSchema for one user ---
k apply -f - >/dev/null <<'YAML'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tiny-users}
spec:
  priorityLevelConfiguration: {name: tiny}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: limited-user}}]
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
      clusterScope: true
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
YAML
k create clusterrolebinding limited-user --clusterrole=cluster-admin --user=limited-user >/dev/null
tiny_fs=$(uid flowschema/tiny-users)
tiny_pl=$(uid prioritylevelconfiguration/tiny)
as_user() { kurl -H "Impersonate-User: limited-user" "$@"; }
as_user -D "$work/h4" -o /dev/null "$url/api/v1/namespaces/default/configmaps"
names "the user's request names its FlowSchema and level" "$work/h4" "$tiny_fs" "$tiny_pl"
as_user -D "$work/h5" -o /dev/null "$url/version"
names "a non-resource request of the user is classified too" "$work/h5" "$tiny_fs" "$tiny_pl"

# parallel writes as the user: one runs at a time, the others are rejected at once
burst 1 60 -H "Impersonate-User: limited-user"
check_burst_429 any
[ -n "$rejected_n" ] && names "the 429 names the FlowSchema and level" \
    "$work/load/$rejected_n.head" "$tiny_fs" "$tiny_pl"
kurl "$url/metrics" >"$work/metrics"
check "the rejections are counted ($(grep -c flowcontrol "$work/metrics") flowcontrol lines)" \
    grep -q '^apiserver_flowcontrol_rejected_requests_total{flow_schema="tiny-users",priority_level="tiny",reason="concurrency-limit"} [1-9]' "$work/metrics"
check "the executing requests are a gauge" \
    grep -q '^apiserver_flowcontrol_current_executing_requests{flow_schema="tiny-users",priority_level="tiny"} 0' "$work/metrics"
# the admin is not limited meanwhile
check "the admin still lists" sh -c "kubectl get configmaps -n default >/dev/null"

# --- the level changed to queue: the same load waits instead of failing ---
k patch prioritylevelconfiguration tiny --type=merge -p \
    '{"spec":{"limited":{"limitResponse":{"type":"Queue","queuing":{"queues":4,"handSize":2,"queueLengthLimit":100}}}}}' >/dev/null
rm "$work/load"/*.code
burst 61 100 -H "Impersonate-User: limited-user"
cat "$work/load"/*.code | sort | uniq -c >"$work/queued"
check "queued writes all run ($(cat "$work/queued"))" \
    sh -c "test \"\$(cat '$work/load'/*.code | grep -c '^201$')\" -eq 40"

# --- lending: the levels' limits are on /metrics, and the one the load saw borrowed ---
kurl "$url/metrics" >"$work/metrics"
check "the nominal limits are a gauge" \
    grep -q '^apiserver_flowcontrol_nominal_limit_seats{priority_level="tiny"} 1$' "$work/metrics"
check "workload-low lends 90 % of its seat" \
    grep -q '^apiserver_flowcontrol_lower_limit_seats{priority_level="workload-low"} 0$' "$work/metrics"
check "the current limits and the fair fraction are shown" sh -c \
    "grep -q '^apiserver_flowcontrol_current_limit_seats{priority_level=\"tiny\"} [0-9]' '$work/metrics' &&
     grep -q '^apiserver_flowcontrol_seat_fair_frac [0-9]' '$work/metrics'"

# --- a ?timeout that is no Go duration: 400 (before authentication), not for a watch ---
code=$(curl -s --cacert "$ca" -o "$work/bad-timeout" -w '%{http_code}' "$url/api/v1/namespaces?timeout=10")
check "an anonymous request with ?timeout=10 is refused 400 ($code $(cat "$work/bad-timeout"))" \
    sh -c "test '$code' = 400 && grep -q '\"reason\": *\"BadRequest\"' '$work/bad-timeout'"
kubectl get --raw '/api/v1/namespaces?timeout=5x' >/dev/null 2>"$work/bad-timeout.err"
check "kubectl shows kube-apiserver's words ($(cat "$work/bad-timeout.err"))" grep -qF \
    'Error from server (BadRequest): invalid timeout specified in the request URL - time: unknown unit "x" in duration "5x"' \
    "$work/bad-timeout.err"
code=$(kurl -o /dev/null -w '%{http_code}' "$url/api/v1/namespaces?watch=1&timeoutSeconds=1&timeout=abc")
check "a watch has no deadline: its ?timeout is not read ($code)" test "$code" = 200
check "a good ?timeout is served" sh -c "kubectl get --raw '/api/v1/namespaces?timeout=5s' | grep -q NamespaceList"
finish
