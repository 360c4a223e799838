#!/bin/sh
# test_admission.sh - the admission chain with the real kubectl against a real
# `ckube server`: the flags' errors at start (unknown, overlapping and
# unimplemented plugins), the chain the server logs, AlwaysDeny enabled by flag,
# and the default plugins that read other objects: Priority (a pod's priority from
# its class or the global default, one global default only) and DefaultIngressClass,
# with kubectl's own words on the refusals; TaintNodesByCondition's taint on a new node.
#
# Usage: test_admission.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# --- the flags ---
# refuse_start DESCRIPTION MESSAGE ARGS...: the server exits 1 at once saying MESSAGE
refuse_start() {
    desc=$1 msg=$2; shift 2
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" \
        --data-dir "$work/refused" --store "sqlite://$work/refused.db" "$@" >"$work/refused.out" 2>&1
    rc=$?
    check "$desc" sh -c '[ "$1" = 1 ] && grep -qF "$2" "$3"' - "$rc" "$msg" "$work/refused.out"
}
refuse_start "an unknown plugin stops the start" \
    'enable-admission-plugins plugin "Nope" is unknown' --enable-admission-plugins Nope
refuse_start "a plugin both enabled and disabled stops the start" \
    '[Priority] in enable-admission-plugins and disable-admission-plugins overlapped' \
    --enable-admission-plugins Priority --disable-admission-plugins=Priority
refuse_start "a plugin ckube lacks is refused, not pretended" \
    'plugin "PodNodeSelector" is not implemented by ckube' --enable-admission-plugins PodNodeSelector

# --- AlwaysDeny, named over two uses of the flag ---
start_server --controllers=-* --enable-admission-plugins AlwaysAdmit --enable-admission-plugins=AlwaysDeny
check "the server logs its chain in kube-apiserver's order" grep -q \
    'order="AlwaysAdmit,NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,TaintNodesByCondition,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,RuntimeClass,DefaultIngressClass,MutatingAdmissionWebhook,AlwaysDeny"' \
    "$work/server.err"
k create configmap c --from-literal=a=b >"$work/out" 2>&1
check "AlwaysDeny refuses a create" grep -q \
    'configmaps "c" is forbidden: admission control is denying all modifications' "$work/out"
check "nothing was stored" sh -c '! kubectl get configmap c >/dev/null 2>&1'
stop_server

# --- the default chain ---
start_server --controllers=-* --disable-admission-plugins ServiceAccount
k run plain --image=x --restart=Never >/dev/null 2>&1
check "a pod without a class: priority 0, PreemptLowerPriority" sh -c \
    '[ "$(kubectl get pod plain -o jsonpath={.spec.priority}/{.spec.preemptionPolicy})" = 0/PreemptLowerPriority ]'
k create priorityclass high --value=1000 --global-default >/dev/null 2>&1
k create priorityclass higher --value=2000 --global-default >"$work/out" 2>&1
check "a second global default is refused" grep -q \
    'priorityclasses.scheduling.k8s.io "higher" is forbidden: PriorityClass high is already marked as default. Only one default can exist' \
    "$work/out"
k run defaulted --image=x --restart=Never >/dev/null 2>&1
check "a pod without a class gets the global default" sh -c \
    '[ "$(kubectl get pod defaulted -o jsonpath={.spec.priorityClassName}/{.spec.priority})" = high/1000 ]'
k run critical --image=x --restart=Never \
    --overrides='{"spec":{"priorityClassName":"system-cluster-critical"}}' >/dev/null 2>&1
check "a system class by name" sh -c \
    '[ "$(kubectl get pod critical -o jsonpath={.spec.priority})" = 2000000000 ]'
k run lost --image=x --restart=Never --overrides='{"spec":{"priorityClassName":"nope"}}' >"$work/out" 2>&1
check "a missing class is refused" grep -q \
    'pods "lost" is forbidden: no PriorityClass with name nope was found' "$work/out"
k label pod defaulted a=b >/dev/null 2>&1
check "an update keeps the priority" sh -c \
    '[ "$(kubectl get pod defaulted -o jsonpath={.spec.priority}/{.metadata.labels.a})" = 1000/b ]'

# TaintNodesByCondition: no node lifecycle controller here to take the taint away
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}' | k create -f - >/dev/null 2>&1
check "a created node is tainted not-ready:NoSchedule" sh -c \
    '[ "$(kubectl get node n1 -o jsonpath="{.spec.taints[*].key}:{.spec.taints[*].effect}")" = node.kubernetes.io/not-ready:NoSchedule ]'

cat >"$work/ic.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: main
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: example.com/ingress}
YAML
k apply -f "$work/ic.yaml" >/dev/null 2>&1
k create ingress web --rule='web.example.com/=web:80' >/dev/null 2>&1
check "an Ingress without a class gets the default one" sh -c \
    '[ "$(kubectl get ingress web -o jsonpath={.spec.ingressClassName})" = main ]'
k create ingress other --class=special --rule='o.example.com/=o:80' >/dev/null 2>&1
check "a class given is kept" sh -c \
    '[ "$(kubectl get ingress other -o jsonpath={.spec.ingressClassName})" = special ]'
cat >"$work/lr.yaml" <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
YAML
k apply -f "$work/lr.yaml" >/dev/null 2>&1
k get limits >"$work/out" 2>&1
check "limitrange columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +CREATED AT$" && grep -Eq "^limits +20[0-9-]+T" "$1"' - "$work/out"
k run limited --image=x --restart=Never >/dev/null 2>&1
check "a container without resources gets the LimitRange's defaults" sh -c \
    '[ "$(kubectl get pod limited -o jsonpath={.spec.containers[0].resources.requests.cpu}/{.spec.containers[0].resources.limits.memory})" = 100m/256Mi ]'
check "and the annotation that says so" sh -c \
    '[ "$(kubectl get pod limited -o "jsonpath={.metadata.annotations.kubernetes\\.io/limit-ranger}")" = "LimitRanger plugin set: cpu request for container limited; cpu, memory limit for container limited" ]'
k run greedy --image=x --restart=Never \
    --overrides='{"spec":{"containers":[{"name":"greedy","image":"x","resources":{"limits":{"cpu":"2"}}}]}}' >"$work/out" 2>&1
check "a container over the maximum is refused" grep -q \
    'pods "greedy" is forbidden: maximum cpu usage per Container is 1, but limit is 2' "$work/out"
k delete namespace kube-public >"$work/out" 2>&1
check "kube-public may not be deleted" grep -q \
    'namespaces "kube-public" is forbidden: this namespace may not be deleted' "$work/out"
finish
