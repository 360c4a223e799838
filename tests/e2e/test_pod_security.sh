#!/bin/sh
# test_pod_security.sh - the PodSecurity admission plugin with the real kubectl
# against a real `ckube server`: a namespace labelled enforce=restricted refuses a
# plain pod in Kubernetes' words, takes a compliant one silently, and lets a
# Deployment through with kubectl's "Warning: would violate PodSecurity" line; a
# warn-only namespace warns; the Job controller's pods are refused (its FailedCreate
# event says so); raising a namespace's enforce level lists the existing pods that
# violate it; an invalid label value is refused; an admission configuration file's
# PodSecurity defaults and exempt namespaces, and a bad one stopping the server.
#
# Usage: test_pod_security.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

start_server --controllers=-* --disable-admission-plugins ServiceAccount
check "the server runs PodSecurity by default" grep -q \
    'validating admission controllers" count="[0-9]*" order="LimitRanger,PodSecurity,Priority,' "$work/server.err"

restricted='allowPrivilegeEscalation != false (container "bare" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "bare" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "bare" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "bare" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'

# --- enforce ---
k create namespace secure >/dev/null 2>&1
k label namespace secure pod-security.kubernetes.io/enforce=restricted >"$work/out" 2>&1
check "labelling an empty namespace warns of nothing" sh -c '! grep -q Warning "$1"' - "$work/out"
k -n secure run bare --image=x --restart=Never >"$work/out" 2>&1
check "a plain pod is refused in Kubernetes' words" grep -qF \
    "Error from server (Forbidden): pods \"bare\" is forbidden: violates PodSecurity \"restricted:latest\": $restricted" \
    "$work/out"
check "the refused pod was not stored" sh -c '! kubectl -n secure get pod bare >/dev/null 2>&1'

cat >"$work/ok.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ok, namespace: secure}
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: c
    image: x
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
YAML
k apply -f "$work/ok.yaml" >"$work/out" 2>&1
check "a compliant pod is created" grep -q 'pod/ok created' "$work/out"
check "without a warning" sh -c '! grep -q Warning "$1"' - "$work/out"

k -n secure create deployment web --image=x >"$work/out" 2>&1
check "a Deployment is created though its template violates enforce" grep -q \
    'deployment.apps/web created' "$work/out"
check "kubectl shows the warning" grep -qF \
    'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "x" must set securityContext.allowPrivilegeEscalation=false)' \
    "$work/out"

# --- warn only ---
k create namespace noisy >/dev/null 2>&1
k label namespace noisy pod-security.kubernetes.io/warn=baseline >/dev/null 2>&1
k -n noisy run host --image=x --restart=Never \
    --overrides='{"spec":{"hostNetwork":true}}' >"$work/out" 2>&1
check "warn lets the pod in" grep -q 'pod/host created' "$work/out"
check "and says why" grep -qF \
    'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' \
    "$work/out"

# --- existing pods under a new enforce level ---
k create namespace old >/dev/null 2>&1
k -n old run a --image=x --restart=Never >/dev/null 2>&1
k -n old run b --image=x --restart=Never >/dev/null 2>&1
k label namespace old pod-security.kubernetes.io/enforce=baseline >"$work/out" 2>&1
check "baseline-compliant pods give no warning" sh -c '! grep -q Warning "$1"' - "$work/out"
k label --overwrite namespace old pod-security.kubernetes.io/enforce=restricted >"$work/out" 2>&1
check "the label is set" grep -q 'namespace/old labeled' "$work/out"
check "the existing pods are named" grep -qF \
    'Warning: existing pods in namespace "old" violate the new PodSecurity enforce level "restricted:latest"' \
    "$work/out"
check "grouped by their reasons" grep -qF \
    'Warning: a (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile' \
    "$work/out"

# --- a controller's pods are refused like any other ---
stop_server
start_server --controllers=job --disable-admission-plugins ServiceAccount
k -n secure create job j --image=x >"$work/out" 2>&1
check "a Job is created, with the warning" grep -qF \
    'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "j" must' \
    "$work/out"
# job_refused: the Job's FailedCreate event names its generated pod and PodSecurity's words
job_refused() {
    kubectl -n secure get events --field-selector reason=FailedCreate \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' >"$work/events" 2>&1 &&
        grep -qE '^Error creating: pods "j-[a-z0-9]{5}" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "j" must set' \
            "$work/events"
}
poll "the Job controller's pod is refused by PodSecurity" job_refused

# --- invalid labels ---
k label namespace old pod-security.kubernetes.io/warn=loud >"$work/out" 2>&1
check "an invalid level is refused" grep -qF \
    'Namespace "old" is invalid: metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "loud": must be one of privileged, baseline, restricted' \
    "$work/out"
# --- the admission configuration file: defaults and exemptions ---
stop_server
mkdir -p "$work/admission"
cat >"$work/admission/config.yaml" <<'YAML'
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: podsecurity.yaml
YAML
cat >"$work/admission/podsecurity.yaml" <<'YAML'
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
exemptions:
  namespaces: [free]
YAML
start_server --controllers=-* --disable-admission-plugins ServiceAccount \
    --admission-control-config-file "$work/admission/config.yaml"
k create namespace plain >/dev/null 2>&1
k create namespace free >/dev/null 2>&1
k -n plain run root --image=x --restart=Never --privileged >"$work/out" 2>&1
check "defaults.enforce applies to a namespace without labels" grep -qF \
    'pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged (container "root" must not set securityContext.privileged=true)' \
    "$work/out"
k -n plain run bare --image=x --restart=Never >"$work/out" 2>&1
check "a pod that meets the default level is admitted" grep -q 'pod/bare created' "$work/out"
k -n free run root --image=x --restart=Never --privileged >"$work/out" 2>&1
check "an exempt namespace admits what the default refuses" grep -q 'pod/root created' "$work/out"

# a configuration that is not valid stops the server with its errors
stop_server
sed -i 's/enforce: baseline/enforce: strict/' "$work/admission/podsecurity.yaml"
timeout 30 "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --store "$store" --controllers=-* --admission-control-config-file "$work/admission/config.yaml" \
    >"$work/bad.out" 2>&1
check "a bad PodSecurityConfiguration stops the server ($?)" grep -qF \
    'couldn'"'"'t init admission plugin "PodSecurity": defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted' \
    "$work/bad.out"
timeout 30 "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --store "$store" --controllers=-* --admission-control-config-file "$work/admission/missing.yaml" \
    >"$work/bad.out" 2>&1
check "a missing file stops the server" grep -qF \
    "unable to read admission control configuration from \"$work/admission/missing.yaml\" [open $work/admission/missing.yaml: no such file or directory]" \
    "$work/bad.out"
finish
