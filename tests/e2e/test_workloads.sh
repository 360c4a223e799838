#!/bin/sh
# test_workloads.sh - DaemonSets, StatefulSets, ControllerRevisions, PersistentVolumeClaims
# and PodDisruptionBudgets with the real kubectl against a real `ckube server` and
# `ckube fake-nodes` (nodes, and pods Running and Ready): the kinds are served with
# kubectl's columns and `kubectl get all` lists the workloads (Jobs, CronJobs,
# ReplicationControllers, DaemonSets, StatefulSets); a StatefulSet creates its
# pods in order with their claims, updates by partition, rolls back with `kubectl rollout
# undo` and scales down from the highest ordinal; the disruption controller
# keeps a budget's status from the pods of a Deployment; pods/eviction refuses (429) the
# eviction that would break the budget and lets through the one it allows; `kubectl
# drain` evicts through the budget. Waits are `kubectl wait` (a watch) or bounded polls.
# Then: minReadySeconds holds availableReplicas; whenScaled Delete deletes the claims of
# the pods scaled away; revisions beyond revisionHistoryLimit are pruned; a revision's
# name is Kubernetes' hash of its data; rollingUpdate.maxUnavailable is dropped while
# MaxUnavailableStatefulSet is off (1.32's default) and, after a restart with the gate on,
# kept and a rollout with it completes.
#
# Usage: test_workloads.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server
start_fake_nodes --count 3 --prefix n- --cpu 4 --memory 8Gi --renew-interval 1s
# exists OBJECT: waits (10 s at most) until the object exists, as kubectl wait needs it to
exists() {
    i=0
    until k get "$1" >/dev/null 2>&1 || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
}
exists node/n-2
wait_for "node n-2 Ready" node/n-2 '{.status.conditions[?(@.type=="Ready")].status}=True'

# --- the kinds are served, with kubectl's columns ---
cat >"$work/kinds.yaml" <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: a, image: busybox}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 0
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
check "apply a DaemonSet, a StatefulSet and a claim" sh -c "kubectl apply -f '$work/kinds.yaml' >/dev/null"
check "DaemonSet columns" sh -c "kubectl get ds agent | head -1 | grep -q 'NAME *DESIRED *CURRENT *READY *UP-TO-DATE *AVAILABLE *NODE SELECTOR *AGE'"
check "DaemonSet node selector cell" sh -c "kubectl get ds agent --no-headers | grep -q 'disk=ssd'"
check "DaemonSet update strategy defaults" \
    test "$(k get ds agent -o jsonpath='{.spec.updateStrategy.type}')" = RollingUpdate
check "StatefulSet defaults" \
    test "$(k get sts db -o jsonpath='{.spec.podManagementPolicy}/{.spec.persistentVolumeClaimRetentionPolicy.whenDeleted}')" = OrderedReady/Retain
check "StatefulSet READY column" sh -c "kubectl get sts db --no-headers | grep -q '^db *0/0 '"
check "claim is Pending (no provisioning)" \
    test "$(k get pvc claim -o jsonpath='{.status.phase}')" = Pending
check "claim columns" sh -c "kubectl get pvc | head -1 | grep -q 'NAME *STATUS *VOLUME *CAPACITY *ACCESS MODES *STORAGECLASS *VOLUMEATTRIBUTESCLASS *AGE'"
check "a claim without access modes is refused" sh -c \
    "echo '{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"bad\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}' | kubectl create -f - 2>&1 | grep -q 'at least 1 access mode is required'"
check "kubectl get all lists the DaemonSet and the StatefulSet" sh -c \
    "kubectl get all 2>&1 | grep -q 'daemonset.apps/agent' && kubectl get all | grep -q 'statefulset.apps/db'"
cat >"$work/all.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: o, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: cron, image: busybox}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 0
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: l, image: busybox}]
YAML
k apply -f "$work/all.yaml" >/dev/null
k get all >"$work/all.out" 2>&1
for name in job.batch/once cronjob.batch/nightly replicationcontroller/legacy daemonset.apps/agent \
    statefulset.apps/db; do
    check "kubectl get all lists $name" grep -q "^$name " "$work/all.out"
done
k delete -f "$work/all.yaml" >/dev/null
i=0
until k get controllerrevisions 2>&1 | grep -q 'statefulset.apps/db' || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "controllerrevisions are served, owned by the StatefulSet" sh -c "kubectl get controllerrevisions 2>&1 | grep -q 'statefulset.apps/db'"

# --- a budget over a Deployment's pods ---
cat >"$work/web.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      # fake nodes keep a deleted pod this long: the checks between the first eviction and
      # the pod's removal (the budget still counts it) need the time under a loaded machine
      terminationGracePeriodSeconds: 5
      containers: [{name: nginx, image: nginx}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
YAML
check "apply a Deployment and its budget" sh -c "kubectl apply -f '$work/web.yaml' >/dev/null"
wait_for "Deployment available" deploy/web '{.status.availableReplicas}=3'
wait_for "budget allows one disruption" pdb/web '{.status.disruptionsAllowed}=1'
check "budget status" \
    test "$(k get pdb web -o jsonpath='{.status.expectedPods}/{.status.desiredHealthy}/{.status.currentHealthy}')" = 3/2/3
check "DisruptionAllowed condition" \
    test "$(k get pdb web -o jsonpath='{.status.conditions[?(@.type=="DisruptionAllowed")].reason}')" = SufficientPods
check "budget columns" sh -c "kubectl get pdb web --no-headers | grep -q '^web *N/A *1 *1 '"
pods=$(k get pods -l app=web -o jsonpath='{.items[*].metadata.name}')
first=${pods%% *}
rest=${pods#* }
second=${rest%% *}
echo "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$first\"}}" >"$work/ev1.json"
echo "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$second\"}}" >"$work/ev2.json"
# The first pod's replacement must not become Ready before the second eviction (a Ready
# replacement gives the budget its disruption back): with every node cordoned it stays
# Pending until the checks below are done.
nodes=$(k get nodes -o name)
k cordon $nodes >/dev/null
# the controller drops the entry once it sees the pod terminating: watch for it from before
k get pdb web --watch -o jsonpath='{.status.disruptedPods}{"\n"}' >"$work/pdb.watch" 2>"$work/pdb.watch.err" &
pdb_watch=$!
# it is watching once it printed the budget as it is (a list, then a watch from its revision)
i=0
until [ -s "$work/pdb.watch" ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
check "the first eviction is allowed" sh -c \
    "kubectl create --raw /api/v1/namespaces/default/pods/$first/eviction -f '$work/ev1.json' >/dev/null"
i=0
until grep -q "$first" "$work/pdb.watch" || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
kill "$pdb_watch" 2>/dev/null || true
wait "$pdb_watch" 2>/dev/null || true
check "the budget recorded the disrupted pod" grep -q "$first" "$work/pdb.watch"
k create --raw "/api/v1/namespaces/default/pods/$second/eviction" -f "$work/ev2.json" >"$work/ev2.out" 2>&1
check "the second eviction is refused with 429" \
    grep -q "TooManyRequests.*Cannot evict pod as it would violate the pod's disruption budget." "$work/ev2.out"
check "the refused pod is still there" sh -c "kubectl get pod '$second' >/dev/null"
k uncordon $nodes >/dev/null
wait_for "the Deployment is whole again" deploy/web '{.status.availableReplicas}=3'
wait_for "the budget allows one disruption again" pdb/web '{.status.disruptionsAllowed}=1'

# --- kubectl drain evicts through the budget ---
node=$(k get pod "$second" -o jsonpath='{.spec.nodeName}')
check "kubectl drain respects the budget and completes" sh -c \
    "kubectl drain '$node' --ignore-daemonsets --timeout=90s >'$work/drain.out' 2>&1"
sed 's/^/  drain: /' "$work/drain.out" | tail -8
check "no web pod is left on the drained node" \
    test -z "$(k get pods -l app=web --field-selector spec.nodeName="$node" -o name)"
k uncordon "$node" >/dev/null

# --- an integer minAvailable over every pod refuses all evictions ---
cat >"$work/strict.yaml" <<YAML
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: strict}
spec:
  minAvailable: 3
  selector: {matchLabels: {app: web}}
YAML
k delete pdb web >/dev/null
check "create a budget that allows nothing" sh -c "kubectl apply -f '$work/strict.yaml' >/dev/null"
wait_for "the strict budget is computed" pdb/strict '{.status.desiredHealthy}=3'
victim=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
echo "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$victim\"}}" >"$work/ev3.json"
k create --raw "/api/v1/namespaces/default/pods/$victim/eviction" -f "$work/ev3.json" >"$work/ev3.out" 2>&1
check "the strict budget refuses" grep -q "TooManyRequests" "$work/ev3.out"
check "a minAvailable with a maxUnavailable is refused" sh -c \
    "echo '{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"both\"},\"spec\":{\"minAvailable\":1,\"maxUnavailable\":1,\"selector\":{\"matchLabels\":{\"a\":\"b\"}}}}' | kubectl create -f - 2>&1 | grep -q 'minAvailable and maxUnavailable cannot be both set'"
# --- a StatefulSet: ordered creation, claims, scale down, partitioned update, history ---
cat >"$work/store.yaml" <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: store}
spec:
  replicas: 3
  serviceName: store
  selector: {matchLabels: {app: store}}
  template:
    metadata: {labels: {app: store}}
    spec:
      terminationGracePeriodSeconds: 1 # fake nodes keep a deleted pod this long
      containers: [{name: s, image: "store:1"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
YAML
check "apply a StatefulSet of 3" sh -c "kubectl apply -f '$work/store.yaml' >/dev/null"
wait_for "the StatefulSet is ready" sts/store '{.status.readyReplicas}=3'
check "stable names" test "$(k get pods -l app=store -o jsonpath='{.items[*].metadata.name}')" = "store-0 store-1 store-2"
check "pod-name and pod-index labels" \
    test "$(k get pod store-1 -o jsonpath='{.metadata.labels.statefulset\.kubernetes\.io/pod-name}/{.metadata.labels.apps\.kubernetes\.io/pod-index}')" = store-1/1
check "hostname and subdomain" \
    test "$(k get pod store-2 -o jsonpath='{.spec.hostname}.{.spec.subdomain}')" = store-2.store
check "a claim per pod" \
    test "$(k get pvc -l app=store -o jsonpath='{.items[*].metadata.name}')" = "data-store-0 data-store-1 data-store-2"
check "the pod mounts its claim" \
    test "$(k get pod store-0 -o jsonpath='{.spec.volumes[?(@.name=="data")].persistentVolumeClaim.claimName}')" = data-store-0
# OrderedReady: each pod was created after the previous one was Ready
k get pods store-0 store-1 store-2 -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
ready = {p["metadata"]["name"]: [c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0] for p in pods}
made = {p["metadata"]["name"]: p["metadata"]["creationTimestamp"] for p in pods}
sys.exit(0 if ready["store-0"] <= made["store-1"] and ready["store-1"] <= made["store-2"] else 1)' \
    && pass || fail "OrderedReady creation order"
check "a revision hash on the pods and in status" \
    test "$(k get pod store-0 -o jsonpath='{.metadata.labels.controller-revision-hash}')" = "$(k get sts store -o jsonpath='{.status.updateRevision}')"
check "one ControllerRevision owned by the set" \
    test "$(k get controllerrevisions -l app=store -o jsonpath='{.items[*].revision}')" = 1
# partitioned update: only ordinals >= 2 take the new template
k patch sts store --type=merge -p '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}' >/dev/null
k set image sts/store s=store:2 >/dev/null
i=0
until [ "$(k get pod store-2 -o jsonpath='{.spec.containers[0].image}' 2>/dev/null)" = store:2 ] || [ $i -gt 150 ]; do i=$((i + 1)); sleep 0.2; done
wait_for "the partitioned update settles" sts/store '{.status.updatedReplicas}=1'
check "store-2 updated, store-0 and store-1 not" \
    test "$(k get pods -l app=store -o jsonpath='{.items[*].spec.containers[0].image}')" = "store:1 store:1 store:2"
check "current and update revisions differ" \
    test "$(k get sts store -o jsonpath='{.status.currentRevision}')" != "$(k get sts store -o jsonpath='{.status.updateRevision}')"
k patch sts store --type=merge -p '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}' >/dev/null
wait_for "the update completes" sts/store '{.status.updatedReplicas}=3'
wait_for "the update revision becomes current" sts/store "{.status.currentRevision}=$(k get sts store -o jsonpath='{.status.updateRevision}')"
check "kubectl rollout status sts" sh -c "kubectl rollout status sts/store --timeout=60s >/dev/null"
check "kubectl rollout history sts lists two revisions" sh -c \
    "test \$(kubectl rollout history sts/store | grep -c '^[12] ') -eq 2"
check "kubectl rollout undo sts" sh -c "kubectl rollout undo sts/store >/dev/null"
wait_for "undo restores the old image" sts/store '{.spec.template.spec.containers[0].image}=store:1'
wait_for "the undo rolls out" sts/store '{.status.updatedReplicas}=3'
# scale down: from the highest ordinal
k scale sts store --replicas=1 >/dev/null
wait_for "scaled down to one" sts/store '{.status.replicas}=1'
check "store-0 is the one left" test "$(k get pods -l app=store -o jsonpath='{.items[*].metadata.name}')" = store-0
check "claims are retained (whenScaled Retain)" \
    test "$(k get pvc -l app=store -o name | wc -l)" -eq 3

# --- minReadySeconds: Ready is not yet available ---
# Made with no replica, watched, then scaled to one: the watch sees every status the
# controller writes, so "ready, not yet available" is seen however late a kubectl runs.
cat >"$work/slow.yaml" <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: slow}
spec:
  replicas: 0
  minReadySeconds: 8
  serviceName: slow
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: s, image: "slow:1"}]
YAML
k apply -f "$work/slow.yaml" >/dev/null
k get sts slow --watch -o jsonpath='{.status.readyReplicas}/{.status.availableReplicas}{"\n"}' \
    >"$work/slow.watch" 2>"$work/slow.watch.err" &
slow_watch=$!
i=0
until [ -s "$work/slow.watch" ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
k scale sts slow --replicas=1 >/dev/null
wait_for "minReadySeconds: the pod is ready" sts/slow '{.status.readyReplicas}=1'
wait_for "minReadySeconds: available after it" sts/slow '{.status.availableReplicas}=1'
i=0
until grep -qx '1/1' "$work/slow.watch" || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
kill "$slow_watch" 2>/dev/null || true
wait "$slow_watch" 2>/dev/null || true
# ready and not available (1/ or 1/0) first, available (1/1) after
check "minReadySeconds: ready, not yet available, then available" awk \
    '/^1\/0?$/ && !r { r = NR } /^1\/1$/ && !a { a = NR } END { exit !(r && a && r < a) }' \
    "$work/slow.watch"

# --- whenScaled: Delete deletes the claims of the pods scaled away ---
cat >"$work/tmp.yaml" <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: tmp}
spec:
  replicas: 2
  podManagementPolicy: Parallel
  serviceName: tmp
  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}
  selector: {matchLabels: {app: tmp}}
  template:
    metadata: {labels: {app: tmp}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: t, image: "tmp:1"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
YAML
k apply -f "$work/tmp.yaml" >/dev/null
wait_for "whenScaled Delete: two ready" sts/tmp '{.status.readyReplicas}=2'
k scale sts tmp --replicas=1 >/dev/null
wait_for "whenScaled Delete: scaled to one" sts/tmp '{.status.replicas}=1'
i=0
until [ "$(k get pvc -l app=tmp -o jsonpath='{.items[*].metadata.name}')" = data-tmp-0 ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
check "whenScaled Delete: the scaled-away claim is gone, the other kept" \
    test "$(k get pvc -l app=tmp -o jsonpath='{.items[*].metadata.name}')" = data-tmp-0

# --- revision history: pruned beyond revisionHistoryLimit; names are Kubernetes' hash ---
cat >"$work/hist.yaml" <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: hist}
spec:
  replicas: 0
  revisionHistoryLimit: 1
  serviceName: hist
  selector: {matchLabels: {app: hist}}
  template:
    metadata: {labels: {app: hist}}
    spec:
      containers: [{name: h, image: "hist:1"}]
YAML
k apply -f "$work/hist.yaml" >/dev/null
for v in 2 3 4; do
    i=0
    until [ "$(k get sts hist -o jsonpath='{.status.observedGeneration}')" = "$(k get sts hist -o jsonpath='{.metadata.generation}')" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
    k set image sts/hist h=hist:$v >/dev/null
done
wait_for "history: the last template is the update revision" sts/hist '{.status.observedGeneration}=4'
i=0
until [ "$(k get controllerrevisions -l app=hist -o name | wc -l)" -eq 2 ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "history: the live revision and one more are kept of four" \
    test "$(k get controllerrevisions -l app=hist -o name | wc -l)" -eq 2
check "history: the newest revision is 4" sh -c \
    "kubectl get controllerrevisions -l app=hist -o jsonpath='{.items[*].revision}' | tr ' ' '\n' | sort -n | tail -1 | grep -qx 4"
k get controllerrevisions -l app=hist -o json | python3 -c '
import json, sys
# hashControllerRevision: FNV-32 of the data as Go writes it, then the collision count
def go(d):
    s = json.dumps(d, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
ok = True
for r in json.load(sys.stdin)["items"]:
    h = 2166136261
    for b in (go(r["data"]) + "0").encode():
        h = (h * 16777619) & 0xFFFFFFFF
        h ^= b
    safe = "".join("bcdfghjklmnpqrstvwxz2456789"[ord(c) % 27] for c in str(h))
    ok = ok and r["metadata"]["name"] == "hist-" + safe
sys.exit(0 if ok else 1)' && pass || fail "revision names are the hash of their data"

# --- rollingUpdate.maxUnavailable: alpha and off in 1.32, so dropped ---
cat >"$work/wide.yaml" <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: wide}
spec:
  replicas: 3
  podManagementPolicy: Parallel
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}
  serviceName: wide
  selector: {matchLabels: {app: wide}}
  template:
    metadata: {labels: {app: wide}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: w, image: "wide:1"}]
YAML
k apply -f "$work/wide.yaml" >/dev/null
check "maxUnavailable dropped while MaxUnavailableStatefulSet is off" \
    test -z "$(k get sts wide -o jsonpath='{.spec.updateStrategy.rollingUpdate.maxUnavailable}')"
k delete sts wide --wait=false >/dev/null
stop_server
start_server --feature-gates MaxUnavailableStatefulSet=true
i=0
until ! k get sts wide >/dev/null 2>&1 || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
k apply -f "$work/wide.yaml" >/dev/null
check "maxUnavailable kept with MaxUnavailableStatefulSet on" \
    test "$(k get sts wide -o jsonpath='{.spec.updateStrategy.rollingUpdate.maxUnavailable}')" = 2
for bad in "0:Invalid value: 0: cannot be 0" "\"101%\":Invalid value: \"101%\": must not be greater than 100%" \
    "\"x\":Invalid value: \"x\": a valid percent string must be a numeric string"; do
    sed -e "s/name: wide}/name: bad}/" -e "s/maxUnavailable: 2/maxUnavailable: ${bad%%:*}/" "$work/wide.yaml" |
        kubectl create -f - >"$work/bad.out" 2>&1
    check "maxUnavailable ${bad%%:*} is refused" grep -q "spec.updateStrategy.rollingUpdate.maxUnavailable: ${bad#*:}" "$work/bad.out"
done
wait_for "maxUnavailable: three ready" sts/wide '{.status.readyReplicas}=3'
k set image sts/wide w=wide:2 >/dev/null
wait_for "maxUnavailable: the rollout completes" sts/wide '{.status.updatedReplicas}=3'
wait_for "maxUnavailable: all ready again" sts/wide '{.status.readyReplicas}=3'
i=0 # the replaced pods may still be terminating
until [ "$(k get pods -l app=wide -o jsonpath='{.items[*].spec.containers[0].image}')" = "wide:2 wide:2 wide:2" ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
check "maxUnavailable: the new image everywhere" \
    test "$(k get pods -l app=wide -o jsonpath='{.items[*].spec.containers[0].image}')" = "wide:2 wide:2 wide:2"

finish
