#!/bin/sh
# test_serviceaccount.sh - end-to-end: pods get their ServiceAccount's credentials as
# Kubernetes 1.32's ServiceAccount admission gives them. `kubectl run` in a new
# namespace (whose "default" account the controller makes moments later) gets
# serviceAccountName default and one projected kube-api-access-<5> volume (token
# 3607 s, kube-root-ca.crt's ca.crt, the namespace) mounted read-only at
# /var/run/secrets/kubernetes.io/serviceaccount; a pod naming a missing account is
# refused 403 Forbidden; automountServiceAccountToken false on the pod or on its
# account leaves the pod without the volume. The root CA publisher keeps
# kube-root-ca.crt, with the server's CA, in every namespace.
#
#   sh test_serviceaccount.sh PATH/TO/ckube [STORE_URL]
. "$(dirname "$0")/lib.sh"
start_server

k create namespace sa-e2e >/dev/null
# Admission looks the "default" account up 10 times, 100-199 ms apart, as Kubernetes'
# does; a controller slower than that (a loaded machine) gets Kubernetes' 403 after
# those tries, and the pod goes in once the account is there.
start_ms=$(date +%s%3N)
if k run web -n sa-e2e --image=registry.k8s.io/pause:3.10 --restart=Never 2>"$work/run.err"; then
    pass
else
    took=$(($(date +%s%3N) - start_ms))
    check "kubectl run right after its namespace: refused only after admission's tries ($took ms: $(cat "$work/run.err"))" \
        sh -c "[ $took -ge 900 ] && grep -q 'error looking up service account sa-e2e/default: serviceaccount \"default\" not found' '$work/run.err'"
    for _ in $(seq 300); do
        k get serviceaccount default -n sa-e2e >/dev/null 2>&1 && break
        sleep 0.1
    done
    check "kubectl run once the account is there" \
        k run web -n sa-e2e --image=registry.k8s.io/pause:3.10 --restart=Never
fi
k get pod web -n sa-e2e -o json >"$work/web.json" 2>"$work/web.err"
python3 - "$work/web.json" >"$work/web.check" 2>&1 <<'PY'
import json, re, sys
p = json.load(open(sys.argv[1]))
spec = p["spec"]
assert spec["serviceAccountName"] == "default", spec.get("serviceAccountName")
vols = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
assert len(vols) == 1, vols
v = vols[0]
assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", v["name"]), v["name"]
pr = v["projected"]
assert pr["defaultMode"] == 420, pr
src = pr["sources"]
assert src[0]["serviceAccountToken"] == {"expirationSeconds": 3607, "path": "token"}, src[0]
assert src[1]["configMap"]["name"] == "kube-root-ca.crt", src[1]
assert src[1]["configMap"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}], src[1]
assert src[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace", src[2]
m = [m for m in spec["containers"][0]["volumeMounts"]
     if m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"]
assert len(m) == 1 and m[0]["name"] == v["name"] and m[0]["readOnly"] is True, m
PY
cat "$work/web.err" >>"$work/web.check"
check "the pod has the kube-api-access volume and mount ($(cat "$work/web.check"))" \
    [ ! -s "$work/web.check" ]
check "kubectl get pod -o yaml shows the volume" \
    sh -c "kubectl get pod web -n sa-e2e -o yaml | grep -q 'name: kube-api-access-'"

# a missing account: 403 in Kubernetes' words
k run nobody -n sa-e2e --image=registry.k8s.io/pause:3.10 --restart=Never \
    --overrides='{"spec":{"serviceAccountName":"nobody"}}' >/dev/null 2>"$work/nobody.err"
check "a pod naming a missing account is forbidden ($(cat "$work/nobody.err"))" \
    grep -q 'pods "nobody" is forbidden: error looking up service account sa-e2e/nobody: serviceaccount "nobody" not found' "$work/nobody.err"

# automountServiceAccountToken false on the pod, then on the account
k run quiet -n sa-e2e --image=registry.k8s.io/pause:3.10 --restart=Never \
    --overrides='{"spec":{"automountServiceAccountToken":false}}' >/dev/null
check "automountServiceAccountToken false on the pod: no volume" \
    [ -z "$(k get pod quiet -n sa-e2e -o jsonpath='{.spec.volumes}')" ]
k create serviceaccount shy -n sa-e2e >/dev/null
k patch serviceaccount shy -n sa-e2e -p '{"automountServiceAccountToken":false}' >/dev/null
k run shy -n sa-e2e --image=registry.k8s.io/pause:3.10 --restart=Never \
    --overrides='{"spec":{"serviceAccountName":"shy"}}' >/dev/null
check "automountServiceAccountToken false on the account: no volume" \
    [ -z "$(k get pod shy -n sa-e2e -o jsonpath='{.spec.volumes}')" ]
check "the pod runs as the account it names" \
    [ "$(k get pod shy -n sa-e2e -o jsonpath='{.spec.serviceAccountName}')" = shy ]

# the root CA publisher: kube-root-ca.crt in every namespace holds the server's CA,
# and is put back when deleted or changed
ca_of() { k get configmap kube-root-ca.crt -n "$1" -o jsonpath='{.data.ca\.crt}' 2>/dev/null; }
same_ca() { [ "$(ca_of "$1")" = "$(cat "$ca")" ]; }
poll "kube-root-ca.crt in sa-e2e holds the server's CA" same_ca sa-e2e
poll "kube-root-ca.crt in kube-system holds the server's CA" same_ca kube-system
check "it has the description annotation" \
    [ -n "$(k get configmap kube-root-ca.crt -n sa-e2e -o jsonpath='{.metadata.annotations.kubernetes\.io/description}')" ]
k delete configmap kube-root-ca.crt -n sa-e2e >/dev/null
poll "a deleted kube-root-ca.crt is made again" same_ca sa-e2e
k patch configmap kube-root-ca.crt -n sa-e2e -p '{"data":{"ca.crt":"changed","extra":"x"}}' >/dev/null
restored() { same_ca sa-e2e && [ -z "$(k get configmap kube-root-ca.crt -n sa-e2e -o jsonpath='{.data.extra}')" ]; }
poll "a changed kube-root-ca.crt is put back" restored
finish
