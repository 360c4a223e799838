#!/bin/sh
# test_jobs.sh - Jobs, ReplicationControllers and the batch kinds with the real kubectl
# against a real `ckube server`: a Job of 3 completions and parallelism 2 never runs more
# than 2 pods and completes (`kubectl wait --for=condition=complete`); a failing Job
# reaches BackoffLimitExceeded after its back-off; an Indexed Job gives each index one
# success; a finished Job with ttlSecondsAfterFinished 0 is deleted; `kubectl scale rc`;
# `kubectl get all` lists Jobs, CronJobs and ReplicationControllers. Pods are finished
# through the status subresource by the test, as there is no node agent yet.
#
# Usage: test_jobs.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

# job_pods JOB: the names of the Job's pods that have not finished, one a line
job_pods() {
    k get pods -l "batch.kubernetes.io/job-name=$1" -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p.get("status", {}).get("phase") not in ("Succeeded", "Failed") and \
            "deletionTimestamp" not in p["metadata"]:
        print(p["metadata"]["name"])'
}

# finish_pod POD PHASE: the pod ends Succeeded or Failed (exit code 1), as a node would say;
# a write that loses a race with another writer (409) reads the pod again
finish_pod() {
    for attempt in 1 2 3 4 5; do
        finish_pod_once "$1" "$2" 2>"$work/finish.err" && return 0
        sleep 0.2
    done
    fail "finish $1 as $2 ($(cat "$work/finish.err"))"
}
finish_pod_once() {
    [ -n "$1" ] || { echo "no pod to finish" >&2; return 1; }
    k get pod "$1" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
phase = sys.argv[1]
code = 0 if phase == "Succeeded" else 1
t = "2026-01-01T00:00:00Z"
p["status"] = {"phase": phase, "containerStatuses": [{"name": c["name"], "image": c["image"],
    "imageID": "", "ready": False, "restartCount": 0,
    "state": {"terminated": {"exitCode": code, "finishedAt": t, "startedAt": t}}}
    for c in p["spec"]["containers"]]}
print(json.dumps(p))' "$2" | k replace --subresource=status -f - >/dev/null
}

# --- 3 completions, parallelism 2: at most 2 pods at once, then Complete ---
cat >"$work/job.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
EOF
check "create the Job" sh -c "kubectl create -f '$work/job.yaml' >/dev/null"
wait_for "two pods active" job/pi '{.status.active}=2'
max_seen=0
done_count=0
while [ "$done_count" -lt 3 ]; do
    job_pods pi >"$work/pods"
    n=$(wc -l <"$work/pods")
    [ "$n" -gt "$max_seen" ] && max_seen=$n
    first=$(head -n 1 "$work/pods")
    if [ -z "$first" ]; then
        fail "no active pod with $done_count of 3 done"
        break
    fi
    finish_pod "$first" Succeeded
    done_count=$((done_count + 1))
    wait_for "succeeded reaches $done_count" job/pi "{.status.succeeded}=$done_count"
done
check "never more than 2 pods at once (saw $max_seen)" test "$max_seen" -le 2
if k wait job/pi --for=condition=complete --timeout=60s >/dev/null 2>"$work/wait.err"; then
    pass
else
    fail "the Job completes ($(cat "$work/wait.err"))"
fi
check "completionTime is set" sh -c "[ -n \"\$(kubectl get job pi -o jsonpath='{.status.completionTime}')\" ]"
check "kubectl get job prints Complete and 3/3" sh -c \
    "kubectl get job pi --no-headers | grep -q 'Complete *3/3'"
check "no tracking finalizer is left on the pods" sh -c \
    "! kubectl get pods -l batch.kubernetes.io/job-name=pi -o jsonpath='{.items[*].metadata.finalizers}' | grep -q job-tracking"
check "the Completed event" sh -c \
    "kubectl get events --field-selector involvedObject.name=pi,reason=Completed -o name | grep -q ."

# --- a failing Job: backoffLimit 1, two failures (10 s apart) end it ---
cat >"$work/fail.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: fails
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
EOF
check "create the failing Job" sh -c "kubectl create -f '$work/fail.yaml' >/dev/null"
wait_for "its pod is active" job/fails '{.status.active}=1'
finish_pod "$(job_pods fails | head -n 1)" Failed
wait_for "one failure counted" job/fails '{.status.failed}=1'
# the replacement comes after the 10 s back-off
wait_for "a replacement after the back-off" job/fails '{.status.active}=1'
finish_pod "$(job_pods fails | head -n 1)" Failed
if k wait job/fails --for=condition=failed --timeout=60s >/dev/null 2>"$work/wait.err"; then
    pass
else
    fail "the Job fails ($(cat "$work/wait.err"))"
fi
check "reason BackoffLimitExceeded" sh -c \
    "kubectl get job fails -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].reason}' | grep -qx BackoffLimitExceeded"
check "kubectl get job prints Failed" sh -c "kubectl get job fails --no-headers | grep -q ' Failed '"

# --- an Indexed Job: one success per index ---
cat >"$work/indexed.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: idx
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
EOF
check "create the Indexed Job" sh -c "kubectl create -f '$work/indexed.yaml' >/dev/null"
wait_for "three pods active" job/idx '{.status.active}=3'
check "each index has one pod" sh -c \
    "kubectl get pods -l batch.kubernetes.io/job-name=idx -o jsonpath='{range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-completion-index}{\"\\n\"}{end}' | sort | tr '\\n' ' ' | grep -qx '0 1 2 '"
for p in $(job_pods idx); do finish_pod "$p" Succeeded; done
if k wait job/idx --for=condition=complete --timeout=60s >/dev/null 2>"$work/wait.err"; then
    pass
else
    fail "the Indexed Job completes ($(cat "$work/wait.err"))"
fi
check "completedIndexes is 0-2" sh -c \
    "[ \"\$(kubectl get job idx -o jsonpath='{.status.completedIndexes}')\" = 0-2 ]"

# --- ttlSecondsAfterFinished: 0 deletes the Job once it is finished ---
cat >"$work/ttl.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: short
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
EOF
check "create the Job with a TTL" sh -c "kubectl create -f '$work/ttl.yaml' >/dev/null"
wait_for "its pod is active" job/short '{.status.active}=1'
finish_pod "$(job_pods short | head -n 1)" Succeeded
if k wait job/short --for=delete --timeout=60s >/dev/null 2>"$work/wait.err"; then
    pass
else
    fail "the finished Job is deleted ($(cat "$work/wait.err"))"
fi

# --- a ReplicationController and kubectl scale rc ---
cat >"$work/rc.yaml" <<EOF
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 2
  selector: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx
EOF
check "create the ReplicationController" sh -c "kubectl create -f '$work/rc.yaml' >/dev/null"
wait_for "rc replicas reach 2" rc/web '{.status.replicas}=2'
check "kubectl scale rc" sh -c "kubectl scale rc web --replicas=4 >/dev/null"
wait_for "rc replicas reach 4" rc/web '{.status.replicas}=4'
check "the RC's pods are owned by it" sh -c \
    "[ \$(kubectl get pods -l app=web -o jsonpath='{.items[*].metadata.ownerReferences[0].kind}' | tr ' ' '\\n' | grep -c ReplicationController) -eq 4 ]"

# --- a CronJob is served, and kubectl get all lists them all ---
cat >"$work/cj.yaml" <<EOF
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "*/5 * * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: hello
            image: busybox
EOF
check "create the CronJob" sh -c "kubectl create -f '$work/cj.yaml' >/dev/null"
k get all >"$work/all" 2>&1
for name in job.batch/pi job.batch/idx cronjob.batch/hello replicationcontroller/web; do
    check "kubectl get all lists $name" grep -q "^$name " "$work/all"
done
# --- a CronJob every minute: a run per minute, none twice across a server restart ---
cat >"$work/every.yaml" <<EOF
apiVersion: batch/v1
kind: CronJob
metadata:
  name: every
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: c
            image: busybox
EOF
# cron_runs: the names of the Jobs the CronJob every made, one a line
cron_runs() {
    k get jobs -o json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["items"]:
    refs = [r for r in j["metadata"].get("ownerReferences", []) if r.get("kind") == "CronJob"]
    if refs and refs[0]["name"] == "every":
        print(j["metadata"]["name"])'
}
check "create the CronJob every minute" sh -c "kubectl create -f '$work/every.yaml' >/dev/null"
wait_for "the first run starts within a minute" cronjob/every '{.status.active[0].kind}=Job'
first_run=$(k get cronjob every -o jsonpath='{.status.lastScheduleTime}')
stop_server
start_server
# the restarted controllers must not run that minute again; the next minute runs once
i=0
while [ "$(k get cronjob every -o jsonpath='{.status.lastScheduleTime}')" = "$first_run" ] &&
    [ $i -lt 80 ]; do
    sleep 1
    i=$((i + 1))
done
check "the next minute runs after the restart" test $i -lt 80
cron_runs >"$work/runs"
check "runs are named <cronjob>-<minute>" grep -q '^every-[0-9][0-9]*$' "$work/runs"
check "no run twice ($(tr '\n' ' ' <"$work/runs"))" sh -c \
    "[ \$(sort -u '$work/runs' | wc -l) -eq \$(wc -l <'$work/runs') ] && [ \$(wc -l <'$work/runs') -ge 2 ]"
check "the scheduled-timestamp annotation" sh -c \
    "kubectl get jobs -o jsonpath='{.items[*].metadata.annotations.batch\.kubernetes\.io/cronjob-scheduled-timestamp}' | grep -q T"

check "a Job must not restart Always (422 with Kubernetes' message)" sh -c \
    "sed 's/Never/Always/; s/name: pi/name: bad/' '$work/job.yaml' | kubectl create -f - 2>&1 | grep -q 'spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"'"
finish
