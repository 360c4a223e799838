#!/bin/sh
# test_deployment.sh - the Deployment controller driven with the real kubectl against a
# real `ckube server`: create -> `kubectl rollout status`; `set image` -> a second
# ReplicaSet, revision 2, the old one at 0; `rollout history`, `undo` and
# `--to-revision`; `rollout restart`; pause and resume; scaling in the middle of a
# rollout; the history limit; Recreate; a progress deadline exceeded; events in
# `kubectl describe`; with a separate controller-manager, a restart of it in the middle
# of a rollout.
#
# There is no node agent yet, so a helper written here in Python (the official client)
# plays the kubelet: it watches every pod and marks it Running and Ready through
# pods/status, except pods whose image says "never-ready". The same watch checks the
# rollout bounds as they happen, not by sampling: never more than replicas + maxSurge
# live pods, never fewer than replicas - maxUnavailable ready ones once the Deployment
# was up, and for Recreate never pods of two templates at once.
#
# Usage: test_deployment.sh PATH/TO/ckube inprocess|separate [STORE_URL]
#   inprocess: the controllers run inside `ckube server` (the default);
#   separate:  `ckube server --controllers=-*` plus a separate
#              `ckube controller-manager --kubeconfig FILE` process.
set -u
mode=${2:-inprocess}
set -- "$1" "${3:-}"
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
python=/usr/bin/python3
if ! "$python" -c 'import kubernetes' 2>/dev/null; then
    echo "test_deployment: no kubernetes module (Debian package python3-kubernetes); skipping" >&2
    exit 77
fi
cm_pid=""
kubelet_pid=""
stop_helpers() {
    [ -n "$kubelet_pid" ] && kill "$kubelet_pid" 2>/dev/null && wait "$kubelet_pid" 2>/dev/null
    [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null && wait "$cm_pid" 2>/dev/null
}
trap 'stop_helpers; cleanup' EXIT
if [ "$mode" = separate ]; then
    start_server --controllers=-*
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" >"$work/cm.out" 2>"$work/cm.err" &
    cm_pid=$!
else
    start_server
fi

# ---- the kubelet stand-in and the bounds watcher ------------------------------------
cat >"$work/kubelet.py" <<'EOF'
import datetime, json, os, sys, time
from kubernetes import client, config, watch

stats_file = sys.argv[1]
full = {a.split("=")[0]: int(a.split("=")[1]) for a in sys.argv[2:]}  # ns=replicas
config.load_kube_config(os.environ["KUBECONFIG"])
v1 = client.CoreV1Api()
pods = {}   # (ns, name) -> (ready, hash)
stats = {}  # ns -> max_live, min_ready (once full), max_templates

def ready(p):
    return any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))

def record(ns):
    live = [v for (n, _), v in pods.items() if n == ns]
    s = stats.setdefault(ns, {"max_live": 0, "min_ready": None, "max_templates": 0, "full": False})
    nready = sum(1 for r, _ in live if r)
    s["max_live"] = max(s["max_live"], len(live))
    s["max_templates"] = max(s["max_templates"], len({h for _, h in live}))
    if ns in full and nready >= full[ns]:
        s["full"] = True
    if s["full"]:
        s["min_ready"] = nready if s["min_ready"] is None else min(s["min_ready"], nready)
    with open(stats_file + ".tmp", "w") as f:
        json.dump(stats, f)
    os.replace(stats_file + ".tmp", stats_file)

def mark_ready(p):
    now = datetime.datetime.now(datetime.timezone.utc)
    p.status = client.V1PodStatus(phase="Running", conditions=[
        client.V1PodCondition(type="Ready", status="True", last_transition_time=now,
                              last_probe_time=now)])
    try:
        v1.replace_namespaced_pod_status(p.metadata.name, p.metadata.namespace, p)
    except client.exceptions.ApiException:
        pass  # changed or gone meanwhile: a later event brings it back

while True:
    try:
        for ev in watch.Watch().stream(v1.list_pod_for_all_namespaces, timeout_seconds=300):
            p = ev["object"]
            key = (p.metadata.namespace, p.metadata.name)
            if ev["type"] == "DELETED" or p.metadata.deletion_timestamp:
                pods.pop(key, None)
            else:
                h = (p.metadata.labels or {}).get("pod-template-hash", "")
                pods[key] = (ready(p), h)
                image = p.spec.containers[0].image if p.spec.containers else ""
                if not ready(p) and "never-ready" not in image:
                    mark_ready(p)
            record(p.metadata.namespace)
    except Exception as e:  # the watch ended or the server restarted: watch again
        print("kubelet.py:", e, file=sys.stderr)
        time.sleep(0.5)
EOF
"$python" "$work/kubelet.py" "$work/stats.json" bounds=4 >"$work/kubelet.out" 2>"$work/kubelet.err" &
kubelet_pid=$!

# ---- helpers -------------------------------------------------------------------------
# every wait is bounded and says what it waited for
rollout_ok() { # rollout_ok DESCRIPTION NAMESPACE
    if k -n "$2" rollout status deploy/web --timeout=60s >"$work/rollout.out" 2>&1; then
        pass
    else
        fail "$1 ($(tail -n 2 "$work/rollout.out"))"
    fi
}
wait_for() { # wait_for DESCRIPTION NAMESPACE OBJECT JSONPATH=VALUE
    if k -n "$2" wait "$3" --for=jsonpath="$4" --timeout=60s >/dev/null 2>"$work/wait.err"; then
        pass
    else
        fail "$1 ($(cat "$work/wait.err"))"
    fi
}
wait_until() { # wait_until DESCRIPTION COMMAND... : polls for up to 30 s
    desc=$1; shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 150 ]; then fail "$desc (timed out after 30 s)"; return; fi
        sleep 0.2
    done
    pass
}
# the ReplicaSets of a namespace: name replicas revision image, one a line
rs_table() {
    k -n "$1" get rs -o json | "$python" -c '
import json, sys
for r in sorted(json.load(sys.stdin)["items"], key=lambda r: r["metadata"]["name"]):
    a = r["metadata"].get("annotations", {})
    print(r["metadata"]["name"], r["spec"]["replicas"],
          a.get("deployment.kubernetes.io/revision", "-"),
          r["spec"]["template"]["spec"]["containers"][0]["image"])'
}
rs_count() { [ "$(rs_table "$1" | grep -c .)" -eq "$2" ]; }
# the revision and spec.replicas of the ReplicaSet running image $2
rs_of_image() { rs_table "$1" | awk -v img="$2" '$4 == img { print $3, $2 }'; }
has_rs_of() { [ -n "$(rs_of_image "$1" "$2")" ]; }
deployment() { # deployment NAMESPACE REPLICAS STRATEGY-YAML [EXTRA SPEC YAML]
    cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: $1
  annotations:
    kubernetes.io/change-cause: first version
spec:
  replicas: $2
  strategy: $3
  ${4:-minReadySeconds: 0}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
EOF
}
seen() { # seen NAMESPACE FIELD: what the watcher saw
    "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' \
        "$work/stats.json" "$1" "$2"
}
# (kubectl create namespace sends protobuf, which ckube refuses: a manifest instead)
for ns in roll bounds recreate stuck; do
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$ns" | k create -f - >/dev/null
done

# ---- create -> rollout status ----------------------------------------------------------
deployment roll 3 '{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}' \
    >"$work/roll.yaml"
check "create the Deployment" sh -c "kubectl create -f '$work/roll.yaml' >/dev/null"
rollout_ok "rollout status after create" roll
check "kubectl wait --for=condition=Available" \
    sh -c "kubectl -n roll wait deploy/web --for=condition=Available --timeout=30s >/dev/null"
check "one ReplicaSet web-<hash> with 3 replicas at revision 1" \
    sh -c "kubectl -n roll get rs --no-headers | grep -Eq '^web-[bcdfghjklmnpqrstvwxz2456789]+ +3 +3 +3 '"
check "READY 3/3 in kubectl get deploy" sh -c "kubectl -n roll get deploy web --no-headers | grep -Eq '^web +3/3 +3 +3 '"
first_rs=$(k -n roll get rs -o jsonpath='{.items[0].metadata.name}')
check "pods carry the pod-template-hash label" \
    sh -c "[ \$(kubectl -n roll get pods -l pod-template-hash='${first_rs#web-}' --no-headers | grep -c .) -eq 3 ]"
check "the ReplicaSet is controlled by the Deployment" \
    sh -c "kubectl -n roll get rs '$first_rs' -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].blockOwnerDeletion}' | grep -qx Deployment/web/true"
check "change-cause copied to the ReplicaSet" \
    sh -c "kubectl -n roll get rs '$first_rs' -o yaml | grep -q 'kubernetes.io/change-cause: first version'"

# ---- set image -> revision 2, old ReplicaSet at 0 ----------------------------------------
check "kubectl set image" sh -c "kubectl -n roll set image deploy/web web=nginx:1.28 >/dev/null"
rollout_ok "rollout status after set image" roll
check "two ReplicaSets" rs_count roll 2
check "the new ReplicaSet is revision 2 with 3 replicas" [ "$(rs_of_image roll nginx:1.28)" = '2 3' ]
check "the old ReplicaSet is revision 1 at 0" [ "$(rs_of_image roll nginx:1.27)" = '1 0' ]
check "the Deployment says revision 2" \
    sh -c "kubectl -n roll get deploy web -o yaml | grep -q 'deployment.kubernetes.io/revision: \"2\"'"
check "rollout history lists revisions 1 and 2" \
    sh -c "kubectl -n roll rollout history deploy/web | grep -Eq '^1 +first version' && kubectl -n roll rollout history deploy/web | grep -Eq '^2 '"

# ---- undo and --to-revision: the old ReplicaSet is reused ---------------------------------
check "kubectl rollout undo" sh -c "kubectl -n roll rollout undo deploy/web >/dev/null"
rollout_ok "rollout status after undo" roll
check "undo reuses the 1.27 ReplicaSet as revision 3" [ "$(rs_of_image roll nginx:1.27)" = '3 3' ]
check "still two ReplicaSets after undo" rs_count roll 2
check "kubectl rollout undo --to-revision=2" \
    sh -c "kubectl -n roll rollout undo deploy/web --to-revision=2 >/dev/null"
rollout_ok "rollout status after undo --to-revision" roll
check "--to-revision=2 brings 1.28 back as revision 4" [ "$(rs_of_image roll nginx:1.28)" = '4 3' ]
check "the 1.27 ReplicaSet is at 0 again" [ "$(rs_of_image roll nginx:1.27)" = '3 0' ]

# ---- pause / resume ------------------------------------------------------------------------
check "kubectl rollout pause" sh -c "kubectl -n roll rollout pause deploy/web >/dev/null"
check "set image while paused" sh -c "kubectl -n roll set image deploy/web web=nginx:1.29 >/dev/null"
wait_for "Progressing says DeploymentPaused" roll deploy/web \
    '{.status.conditions[?(@.type=="Progressing")].reason}=DeploymentPaused'
check "no ReplicaSet for the paused template" [ -z "$(rs_of_image roll nginx:1.29)" ]
check "kubectl rollout resume" sh -c "kubectl -n roll rollout resume deploy/web >/dev/null"
rollout_ok "rollout status after resume" roll
check "resumed: the 1.29 ReplicaSet is revision 5 with 3" [ "$(rs_of_image roll nginx:1.29)" = '5 3' ]

# ---- scale in the middle of a rollout ------------------------------------------------------
check "set image then scale to 6 at once" \
    sh -c "kubectl -n roll set image deploy/web web=nginx:1.30 >/dev/null && kubectl -n roll scale deploy/web --replicas=6 >/dev/null"
rollout_ok "rollout status after scaling mid-rollout" roll
check "the 1.30 ReplicaSet ends with all 6" [ "$(rs_of_image roll nginx:1.30)" = '6 6' ]
check "every other ReplicaSet is at 0" \
    [ "$(rs_table roll | awk '$4 != "nginx:1.30" && $2 != 0' | grep -c .)" -eq 0 ]
check "READY 6/6" sh -c "kubectl -n roll get deploy web --no-headers | grep -Eq '^web +6/6 +6 +6 '"

# ---- rollout restart ---------------------------------------------------------------------------
check "kubectl rollout restart" sh -c "kubectl -n roll rollout restart deploy/web >/dev/null"
rollout_ok "rollout status after restart" roll
check "restart made a new ReplicaSet (five templates so far)" rs_count roll 5

# ---- history limit: old ReplicaSets beyond it are deleted -------------------------------------
check "set revisionHistoryLimit 1" \
    sh -c "kubectl -n roll patch deploy web --type merge -p '{\"spec\":{\"revisionHistoryLimit\":1}}' >/dev/null"
wait_until "old ReplicaSets beyond the limit deleted (2 left)" rs_count roll 2

# ---- events ------------------------------------------------------------------------------------
k -n roll describe deployment web >"$work/describe.out" 2>&1
check "describe shows ScalingReplicaSet events" grep -q "ScalingReplicaSet" "$work/describe.out"
check "describe shows a scale-up message" grep -Eq "Scaled up replica set web-[a-z0-9]+ from [0-9]+ to [0-9]+" "$work/describe.out"
check "describe shows a scale-down message" grep -Eq "Scaled down replica set web-[a-z0-9]+ from [0-9]+ to [0-9]+" "$work/describe.out"
check "kubectl events --for deployment/web lists them" \
    sh -c "kubectl -n roll events --for deployment/web | grep -q ScalingReplicaSet"
check "events select by involvedObject" \
    sh -c "kubectl -n roll get events --field-selector involvedObject.kind=Deployment,involvedObject.name=web | grep -q 'Scaled up replica set'"

# ---- the bounds, watched during a rolling update ------------------------------------------------
deployment bounds 4 '{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}' |
    k create -f - >/dev/null
rollout_ok "bounds: rollout status after create" bounds
check "bounds: set image" sh -c "kubectl -n bounds set image deploy/web web=nginx:1.28 >/dev/null"
rollout_ok "bounds: rollout status after set image" bounds
check "bounds: never more than replicas + maxSurge = 5 live pods (saw $(seen bounds max_live))" \
    [ "$(seen bounds max_live)" -le 5 ]
check "bounds: never fewer than replicas - maxUnavailable = 3 ready pods (saw $(seen bounds min_ready))" \
    [ "$(seen bounds min_ready)" -ge 3 ]

# ---- Recreate: never old and new pods at once ----------------------------------------------------
deployment recreate 3 '{type: Recreate}' | k create -f - >/dev/null
rollout_ok "recreate: rollout status after create" recreate
check "recreate: set image" sh -c "kubectl -n recreate set image deploy/web web=nginx:1.28 >/dev/null"
rollout_ok "recreate: rollout status after set image" recreate
check "recreate: new ReplicaSet 3, old 0" \
    [ "$(rs_of_image recreate nginx:1.28),$(rs_of_image recreate nginx:1.27)" = '2 3,1 0' ]
check "recreate: the deprecated rollback annotation" \
    sh -c "kubectl -n recreate annotate deploy web deprecated.deployment.rollback.to=1 >/dev/null"
rollout_ok "recreate: rollout status after the rollback annotation" recreate
check "recreate: revision 1's ReplicaSet is back as revision 3" \
    [ "$(rs_of_image recreate nginx:1.27),$(rs_of_image recreate nginx:1.28)" = '3 3,2 0' ]
check "recreate: never pods of two templates at once (saw $(seen recreate max_templates))" \
    [ "$(seen recreate max_templates)" -eq 1 ]

# ---- progress deadline exceeded -------------------------------------------------------------------
deployment stuck 2 '{type: RollingUpdate}' 'progressDeadlineSeconds: 3' |
    sed 's|image: nginx:1.27|image: example.invalid/never-ready:1|' | k create -f - >/dev/null
wait_for "stuck: Progressing becomes ProgressDeadlineExceeded" stuck deploy/web \
    '{.status.conditions[?(@.type=="Progressing")].reason}=ProgressDeadlineExceeded'
k -n stuck rollout status deploy/web --timeout=20s >"$work/stuck.out" 2>&1
check "stuck: rollout status fails on the deadline" grep -q 'exceeded its progress deadline' "$work/stuck.out"
check "stuck: Available is False" \
    sh -c "kubectl -n stuck get deploy web -o jsonpath='{.status.conditions[?(@.type==\"Available\")].status}' | grep -qx False"

# ---- a controller-manager restarted in the middle of a rollout finishes it ----------------------
if [ "$mode" = separate ]; then
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: restart}\n' | k create -f - >/dev/null
    deployment restart 4 '{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}' |
        k create -f - >/dev/null
    rollout_ok "restart: rollout status after create" restart
    check "restart: set image" sh -c "kubectl -n restart set image deploy/web web=nginx:1.28 >/dev/null"
    wait_until "restart: the rollout has begun" has_rs_of restart nginx:1.28
    kill "$cm_pid" && wait "$cm_pid" 2>/dev/null
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" >>"$work/cm.out" 2>>"$work/cm.err" &
    cm_pid=$!
    rollout_ok "restart: rollout status after the controller-manager restarted" restart
    check "restart: new ReplicaSet 4, old 0" \
        [ "$(rs_of_image restart nginx:1.28),$(rs_of_image restart nginx:1.27)" = '2 4,1 0' ]
fi

check "kubectl get rs lists the Deployments' ReplicaSets" \
    sh -c "kubectl get rs -A --no-headers | grep -c 'web-' | grep -qv '^0$'"

echo "test_deployment ($mode): watched bounds max_live=$(seen bounds max_live)" \
    "min_ready=$(seen bounds min_ready), recreate max_templates=$(seen recreate max_templates)"
if [ "$failures" -ne 0 ]; then
    echo "--- kubelet helper log"; tail -5 "$work/kubelet.err"
    [ -n "$cm_pid" ] && { echo "--- controller-manager log"; tail -20 "$work/cm.err"; }
fi
finish
