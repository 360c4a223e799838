#!/bin/sh
# test_kubectl_create.sh - kubectl's generator commands on a real `ckube
# server`. kubectl's typed clients speak Kubernetes' protobuf: each `kubectl
# create <generator>` POSTs an application/vnd.kubernetes.protobuf body and
# reads the answer (or the Status of a refusal) in protobuf; `kubectl
# describe` and `kubectl events` list in protobuf. Every generator for a kind
# ckube serves is run (namespace, deployment, serviceaccount, role,
# clusterrole, rolebinding, clusterrolebinding, and configmap, secret
# generic|docker-registry|tls, service clusterip, job, cronjob, `expose` and
# `create token` where the server lists their resource); the generators of
# kinds it does not serve are checked to fail cleanly with a 404. A protobuf
# watch stream and a custom resource's JSON-only answers (406, 415) are
# checked with curl.
#
# Usage: test_kubectl_create.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server
export work # for the sh -c checks below

# created with kubectl's protobuf body; `-o json` reads it back as stored
created() { # created DESCRIPTION EXPECTED-LINE COMMAND...
    desc=$1; want=$2; shift 2
    if "$@" >"$work/out" 2>&1 && grep -qx "$want" "$work/out"; then pass; else
        fail "$desc: $(cat "$work/out")"
    fi
}

# --- namespace and deployment, the two a new user types first ---
created "create namespace" "namespace/foo created" k create namespace foo
check "namespace is Active" sh -c '[ "$(kubectl get ns foo -o jsonpath={.status.phase})" = Active ]'
check "namespace has the kubernetes finalizer" sh -c '[ "$(kubectl get ns foo -o jsonpath={.spec.finalizers[0]})" = kubernetes ]'
created "create deployment" "deployment.apps/web created" \
    k create deployment web --image=nginx -n foo
check "deployment image" sh -c '[ "$(kubectl get deploy web -n foo -o jsonpath={.spec.template.spec.containers[0].image})" = nginx ]'
check "deployment replicas 1 (a pointer kubectl sets)" sh -c '[ "$(kubectl get deploy web -n foo -o jsonpath={.spec.replicas})" = 1 ]'
check "deployment selector" sh -c '[ "$(kubectl get deploy web -n foo -o jsonpath={.spec.selector.matchLabels.app})" = web ]'
check "deployment defaults applied" sh -c '[ "$(kubectl get deploy web -n foo -o jsonpath={.spec.strategy.rollingUpdate.maxSurge})" = 25% ]'
# kubectl sends every non-pointer field, zero or not: none of them is stored
kubectl get deploy web -n foo -o json >"$work/deploy.json"
check "no zero fields from the protobuf body (stdin, tty, paused)" sh -c '! grep -Eq "\"(stdin|tty|paused|generateName)\"" "$work/deploy.json"'
created "create deployment with replicas 0 and a port" "deployment.apps/zero created" \
    k create deployment zero --image=nginx --replicas=0 --port=8080 -n foo
check "replicas 0 kept (proto2 presence of a pointer)" sh -c '[ "$(kubectl get deploy zero -n foo -o jsonpath={.spec.replicas})" = 0 ]'
check "container port" sh -c '[ "$(kubectl get deploy zero -n foo -o jsonpath={.spec.template.spec.containers[0].ports[0].containerPort})" = 8080 ]'
created "create deployment with two images" "deployment.apps/multi created" \
    k create deployment multi --image=busybox --image=nginx -n foo
check "two containers" sh -c '[ "$(kubectl get deploy multi -n foo -o jsonpath={.spec.template.spec.containers[*].image})" = "busybox nginx" ]'
created "create deployment with a command" "deployment.apps/sleeper created" \
    k create deployment sleeper --image=busybox -n foo -- sleep 3600
check "the command" sh -c '[ "$(kubectl get deploy sleeper -n foo -o jsonpath={.spec.template.spec.containers[0].command})" = "[\"sleep\",\"3600\"]" ]'

# --- the other generators of kinds ckube serves ---
created "create serviceaccount" "serviceaccount/robot created" k create serviceaccount robot -n foo
created "create role" "role.rbac.authorization.k8s.io/reader created" \
    k create role reader --verb=get,list --resource=pods,deployments.apps -n foo
check "role rules" sh -c '[ "$(kubectl get role reader -n foo -o jsonpath={.rules[1].apiGroups[0]})" = apps ]'
created "create clusterrole" "clusterrole.rbac.authorization.k8s.io/viewer created" \
    k create clusterrole viewer --verb=get --non-resource-url=/logs/*
check "clusterrole non-resource URL" sh -c '[ "$(kubectl get clusterrole viewer -o jsonpath={.rules[0].nonResourceURLs[0]})" = "/logs/*" ]'
created "create clusterrole with an aggregation rule" "clusterrole.rbac.authorization.k8s.io/agg created" \
    k create clusterrole agg --aggregation-rule=team=a
created "create rolebinding" "rolebinding.rbac.authorization.k8s.io/read created" \
    k create rolebinding read --role=reader --serviceaccount=foo:robot --user=alice -n foo
check "rolebinding subjects" sh -c '[ "$(kubectl get rolebinding read -n foo -o jsonpath={.subjects[*].kind})" = "User ServiceAccount" ]'
created "create clusterrolebinding" "clusterrolebinding.rbac.authorization.k8s.io/view created" \
    k create clusterrolebinding view --clusterrole=viewer --group=devs
check "clusterrolebinding roleRef" sh -c '[ "$(kubectl get clusterrolebinding view -o jsonpath={.roleRef.name})" = viewer ]'

# --- refusals come back as protobuf Statuses kubectl reads ---
k create namespace foo >"$work/out" 2>&1
check "AlreadyExists through a protobuf Status" grep -q 'Error from server (AlreadyExists): namespaces "foo" already exists' "$work/out"
k create deployment Bad --image=nginx -n foo >"$work/out" 2>&1
check "Invalid through a protobuf Status" grep -q 'failed to create deployment: Deployment.apps "Bad" is invalid: metadata.name: Invalid value: "Bad"' "$work/out"
k create deployment web2 --image=nginx -n nowhere >"$work/out" 2>&1
check "NotFound namespace through a protobuf Status" grep -q 'failed to create deployment: namespaces "nowhere" not found' "$work/out"

# --- the generators of the other kinds: created where ckube serves the kind
# (its protobuf message is in the data already), else a clean 404 ---
kubectl api-resources -o name >"$work/resources" 2>/dev/null
serves() { grep -qx "$1" "$work/resources"; }
# generator RESOURCE EXPECTED-LINE ARGS...: kubectl create ARGS -n foo
generator() {
    resource=$1; want=$2; shift 2
    if serves "$resource"; then
        created "create $*" "$want" k create "$@" -n foo
    else
        k create "$@" -n foo >"$work/out" 2>&1
        check "create $* without $resource is a clean not-found" \
            grep -q "the server could not find the requested resource" "$work/out"
    fi
}
generator configmaps "configmap/cm created" configmap cm --from-literal=a=b --from-literal=c=d
generator secrets "secret/s created" secret generic s --from-literal=password=hunter2
generator secrets "secret/reg created" secret docker-registry reg --docker-server=r.example \
    --docker-username=u --docker-password=p
if command -v openssl >/dev/null 2>&1 &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=t \
        -keyout "$work/tls.key" -out "$work/tls.crt" >/dev/null 2>&1; then
    generator secrets "secret/tls created" secret tls tls --cert="$work/tls.crt" --key="$work/tls.key"
fi
generator services "service/svc created" service clusterip svc --tcp=80:8080
generator jobs.batch "job.batch/j created" job j --image=busybox
generator cronjobs.batch "cronjob.batch/c created" cronjob c --image=busybox --schedule="*/5 * * * *"
generator ingresses.networking.k8s.io "ingress.networking.k8s.io/ing created" ingress ing \
    --class=nginx --rule="web.example.com/=web:80,tls=web-tls"
generator priorityclasses.scheduling.k8s.io "priorityclass.scheduling.k8s.io/pc created" \
    priorityclass pc --value=1000 --description=test
if serves secrets; then
    check "secret data is the base64 of the literal (protobuf bytes)" sh -c '[ "$(kubectl get secret s -n foo -o jsonpath={.data.password})" = aHVudGVyMg== ]'
fi
k expose deployment web -n foo --port=80 >"$work/out" 2>&1
if serves services; then
    check "expose" grep -qx "service/web exposed" "$work/out"
else
    check "expose without services fails cleanly" grep -q 'no matches for kind "Service" in version "v1"' "$work/out"
fi
if kurl "$url/api/v1" | grep -q '"serviceaccounts/token"'; then
    check "create token" sh -c 'kubectl create token robot -n foo | grep -q "^eyJ"'
fi

# --- typed reads in protobuf: describe lists ReplicaSets and events ---
check "describe deployment (protobuf GET and lists)" sh -c 'kubectl describe deploy web -n foo | grep -q "^Selector: *app=web"'
k wait deploy/web -n foo --for=jsonpath='{.status.observedGeneration}'=1 --timeout=60s >/dev/null 2>&1
check "events (protobuf list)" sh -c 'kubectl events -n foo | grep -q ScalingReplicaSet'

# --- the wire itself, with curl ---
P=application/vnd.kubernetes.protobuf
kurl -H "Accept: $P" -o "$work/ns.pb" -w '%{http_code} %{content_type}' "$url/api/v1/namespaces/foo" >"$work/out"
check "GET in protobuf" grep -qx "200 $P" "$work/out"
check "protobuf body starts with k8s\\0" sh -c '[ "$(head -c 4 "$work/ns.pb" | od -An -c | tr -d " ")" = "k8s\\0" ]'
kurl -H "Accept: $P, application/json" -o /dev/null -w '%{http_code} %{content_type}' "$url/apis/apps/v1/namespaces/foo/deployments" >"$work/out"
check "LIST in protobuf" grep -qx "200 $P" "$work/out"
kurl -H "Accept: $P;stream=watch, application/json" -o "$work/watch.pb" -w '%{content_type}' \
    "$url/api/v1/namespaces?watch=1&timeoutSeconds=1" >"$work/out"
check "watch in protobuf frames" grep -qx "$P;stream=watch" "$work/out"
# every frame is a 4-byte big-endian length and that many bytes, each an ADDED event
check "watch frames are length-delimited" python3 -c '
import sys
data = open(sys.argv[1], "rb").read()
frames = 0
while data:
    n = int.from_bytes(data[:4], "big")
    frame = data[4:4 + n]
    assert len(frame) == n and frame[:7] == b"\x0a\x05ADDED" and b"k8s\x00" in frame, frame[:16]
    data = data[4 + n:]
    frames += 1
assert frames >= 4, frames  # default, kube-system, kube-public, kube-node-lease, foo
' "$work/watch.pb"
kurl -H "Accept: $P" -o /dev/null -w '%{http_code}' "$url/apis/example.ckube.io/v1/namespaces/foo/frobbers" >"$work/out"
check "a custom resource refuses a protobuf-only Accept (406)" grep -qx 406 "$work/out"
kurl -H "Accept: $P, application/json" -o /dev/null -w '%{http_code} %{content_type}' "$url/apis/example.ckube.io/v1/namespaces/foo/frobbers" >"$work/out"
check "a custom resource answers JSON to a protobuf-first Accept" grep -qx "200 application/json" "$work/out"
kurl -X POST -H "Content-Type: $P" --data-binary @"$work/ns.pb" -o /dev/null -w '%{http_code}' "$url/apis/example.ckube.io/v1/namespaces/foo/frobbers" >"$work/out"
check "a custom resource refuses a protobuf body (415)" grep -qx 415 "$work/out"
finish
