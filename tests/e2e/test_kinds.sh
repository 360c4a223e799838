#!/bin/sh
# test_kinds.sh - the real kubectl with the cluster kinds published manifests
# use (IngressClass, Ingress, NetworkPolicy, StorageClass, PersistentVolume,
# PriorityClass, RuntimeClass, PodTemplate) and the CSI kinds (CSIDriver, CSINode,
# VolumeAttachment, CSIStorageCapacity) on a real `ckube server`: apply of a manifest with all of
# them, kubectl's columns, the defaults the server fills in, the system
# PriorityClasses the server creates at start, Kubernetes' validation and
# immutability messages, short names and discovery.
#
# Usage: test_kinds.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-*

jp() { kubectl get "$1" -o "jsonpath=$2"; } # jp OBJECT JSONPATH

# --- apply ---
k apply -f "$data/cluster-kinds.yaml" >"$work/out" 2>&1
check "apply creates every object" sh -c 'grep -q "ingressclass.networking.k8s.io/nginx created" "$1" &&
    grep -q "ingress.networking.k8s.io/web created" "$1" &&
    grep -q "networkpolicy.networking.k8s.io/web-allow created" "$1" &&
    grep -q "storageclass.storage.k8s.io/standard created" "$1" &&
    grep -q "persistentvolume/data-1 created" "$1" &&
    grep -q "priorityclass.scheduling.k8s.io/high created" "$1" &&
    grep -q "runtimeclass.node.k8s.io/gvisor created" "$1" &&
    grep -q "podtemplate/worker created" "$1"' - "$work/out"
k apply -f "$data/cluster-kinds.yaml" >"$work/out" 2>&1
# (the NetworkPolicy's egress list is atomic and the server fills in its ports' protocol,
# so kubectl's three-way patch replaces the whole list and reports it configured)
check "a second apply leaves the others unchanged" sh -c '[ "$(grep -c unchanged "$1")" = 7 ] &&
    grep -q "networkpolicy.networking.k8s.io/web-allow" "$1"' - "$work/out"

# --- columns (no controllers run: a volume stays Pending) ---
k get ingressclass >"$work/out" 2>&1
check "ingressclass columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +CONTROLLER +PARAMETERS +AGE$" &&
    grep -Eq "^nginx +k8s.io/ingress-nginx +<none> " "$1"' - "$work/out"
k get ing >"$work/out" 2>&1
check "ingress columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +CLASS +HOSTS +ADDRESS +PORTS +AGE$" &&
    grep -Eq "^web +nginx +web.example.com +80, 443 " "$1"' - "$work/out"
k get netpol >"$work/out" 2>&1
check "networkpolicy columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +POD-SELECTOR +AGE$" &&
    grep -Eq "^web-allow +app=web " "$1"' - "$work/out"
k get sc >"$work/out" 2>&1
check "storageclass columns, the default marked" sh -c 'head -1 "$1" |
    grep -Eq "^NAME +PROVISIONER +RECLAIMPOLICY +VOLUMEBINDINGMODE +ALLOWVOLUMEEXPANSION +AGE$" &&
    grep -Eq "^standard \(default\) +rancher.io/local-path +Delete +Immediate +false " "$1"' - "$work/out"
k get pv >"$work/out" 2>&1
check "persistentvolume columns" sh -c 'head -1 "$1" |
    grep -Eq "^NAME +CAPACITY +ACCESS MODES +RECLAIM POLICY +STATUS +CLAIM +STORAGECLASS +VOLUMEATTRIBUTESCLASS +REASON +AGE$" &&
    grep -Eq "^data-1 +5Gi +RWO +Retain +Pending +standard +<unset> " "$1"' - "$work/out"
k get pc >"$work/out" 2>&1
check "priorityclass columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +VALUE +GLOBAL-DEFAULT +AGE +PREEMPTIONPOLICY$" &&
    grep -Eq "^high +1000000 +false +.* +PreemptLowerPriority$" "$1"' - "$work/out"
k get runtimeclass >"$work/out" 2>&1
check "runtimeclass columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +HANDLER +AGE$" && grep -Eq "^gvisor +runsc " "$1"' - "$work/out"
k get podtemplate >"$work/out" 2>&1
check "podtemplate columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +CONTAINERS +IMAGES +POD LABELS$" &&
    grep -Eq "^worker +main +busybox:1.36 +app=worker$" "$1"' - "$work/out"

# --- defaults and what the server creates ---
check "storageclass defaults" sh -c '[ "$(kubectl get sc standard -o jsonpath={.reclaimPolicy}/{.volumeBindingMode})" = Delete/Immediate ]'
check "persistentvolume reclaim policy Retain, phase Pending (no binder runs)" sh -c \
    '[ "$(kubectl get pv data-1 -o jsonpath={.spec.persistentVolumeReclaimPolicy}/{.status.phase})" = Retain/Pending ]'
check "networkpolicy policyTypes and port protocol" sh -c \
    '[ "$(kubectl get netpol web-allow -o jsonpath={.spec.policyTypes[*]}/{.spec.egress[0].ports[0].protocol})" = "Ingress Egress/TCP" ]'
check "the system priority classes exist" sh -c \
    '[ "$(kubectl get pc system-node-critical -o jsonpath={.value})" = 2000001000 ] &&
     [ "$(kubectl get pc system-cluster-critical -o jsonpath={.value})" = 2000000000 ]'
check "ingress status starts empty" sh -c '[ -z "$(kubectl get ing web -o jsonpath={.status.loadBalancer.ingress})" ]'
kubectl patch ing web --subresource=status --type=merge \
    -p '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}' >/dev/null 2>&1
check "ingress status through its subresource shows as ADDRESS" sh -c 'kubectl get ing web | grep -Eq "^web +nginx +web.example.com +192.0.2.10 +80, 443 "'

# --- validation and immutability, as Kubernetes words them ---
cat >"$work/bad-ing.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad}
spec:
  rules:
  - host: 1.2.3.4
    http:
      paths:
      - path: relative
        pathType: Exact
        backend: {service: {name: web}}
YAML
k apply -f "$work/bad-ing.yaml" >"$work/out" 2>&1
check "an invalid ingress is refused with Kubernetes' messages" sh -c 'grep -q "is invalid" "$1" &&
    grep -q "spec.rules\[0\].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address" "$1" &&
    grep -q "spec.rules\[0\].http.paths\[0\].path: Invalid value: \"relative\": must be an absolute path" "$1" &&
    grep -q "spec.rules\[0\].http.paths\[0\].backend: Required value: port name or number is required" "$1"' - "$work/out"
cat >"$work/bad-np.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad}
spec:
  podSelector: {}
  ingress:
  - ports: [{port: 9000, endPort: 8000}]
    from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.1.0.0/24]}}]
YAML
k apply -f "$work/bad-np.yaml" >"$work/out" 2>&1
check "an invalid networkpolicy is refused" sh -c 'grep -q "endPort: Invalid value: 8000: must be greater than or equal to \`port\`" "$1" &&
    grep -q "must be a strict subset of \`cidr\`" "$1"' - "$work/out"
k patch sc standard --type=merge -p '{"parameters":{"type":"ssd"},"reclaimPolicy":"Retain"}' >"$work/out" 2>&1
check "storageclass parameters and reclaimPolicy are immutable" sh -c 'grep -q "parameters: Forbidden: updates to parameters are forbidden." "$1" &&
    grep -q "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden." "$1"' - "$work/out"
k patch pc high --type=merge -p '{"value":5}' >"$work/out" 2>&1
check "priorityclass value is immutable" sh -c 'grep -q "value: Forbidden: may not be changed in an update." "$1"' - "$work/out"
printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: too-high}\nvalue: 1000000001\n' |
    k apply -f - >"$work/out" 2>&1
check "a user priority above 1000000000 is refused" sh -c 'grep -q "maximum allowed value of a user defined priority is 1000000000" "$1"' - "$work/out"
printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: bad}\nspec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce]}\n' |
    k apply -f - >"$work/out" 2>&1
check "a persistentvolume without a source is refused" sh -c 'grep -q "spec: Required value: must specify a volume type" "$1"' - "$work/out"
k patch ingressclass nginx --type=merge -p '{"spec":{"controller":"example.com/other"}}' >"$work/out" 2>&1
check "ingressclass controller is immutable" sh -c 'grep -q "spec.controller: Invalid value: \"example.com/other\": field is immutable" "$1"' - "$work/out"

# --- the CSI kinds ---
k apply -f "$data/csi-kinds.yaml" >"$work/out" 2>&1
check "apply creates the CSI kinds" sh -c 'grep -q "csidriver.storage.k8s.io/hostpath.csi.k8s.io created" "$1" &&
    grep -q "csinode.storage.k8s.io/node-1 created" "$1" &&
    grep -q "volumeattachment.storage.k8s.io/csi-0123 created" "$1" &&
    grep -q "csistoragecapacity.storage.k8s.io/csisc-node-1 created" "$1"' - "$work/out"
k get csidriver >"$work/out" 2>&1
check "csidriver columns and defaults" sh -c 'head -1 "$1" |
    grep -Eq "^NAME +ATTACHREQUIRED +PODINFOONMOUNT +STORAGECAPACITY +TOKENREQUESTS +REQUIRESREPUBLISH +MODES +AGE$" &&
    grep -Eq "^hostpath.csi.k8s.io +true +true +false +vault +false +Persistent " "$1"' - "$work/out"
check "csidriver fsGroupPolicy defaults" sh -c '[ "$(kubectl get csidriver hostpath.csi.k8s.io -o jsonpath={.spec.fsGroupPolicy})" = ReadWriteOnceWithFSType ]'
k get csinode >"$work/out" 2>&1
check "csinode columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +DRIVERS +AGE$" && grep -Eq "^node-1 +1 " "$1"' - "$work/out"
k get volumeattachment >"$work/out" 2>&1
check "volumeattachment columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +ATTACHER +PV +NODE +ATTACHED +AGE$" &&
    grep -Eq "^csi-0123 +hostpath.csi.k8s.io +pvc-1 +node-1 +false " "$1"' - "$work/out"
k patch volumeattachment csi-0123 --subresource=status --type=merge -p '{"status":{"attached":true}}' >"$work/out" 2>&1
check "volumeattachment status through its subresource" sh -c '[ "$(kubectl get volumeattachment csi-0123 -o jsonpath={.status.attached})" = true ]'
k patch volumeattachment csi-0123 --type=merge -p '{"spec":{"nodeName":"node-2"}}' >"$work/out" 2>&1
check "volumeattachment spec is immutable" sh -c 'grep -q "field is immutable" "$1"' - "$work/out"
k get csistoragecapacity >"$work/out" 2>&1
check "csistoragecapacity columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +STORAGECLASSNAME +CAPACITY$" &&
    grep -Eq "^csisc-node-1 +csi-hostpath +100Gi$" "$1"' - "$work/out"
k patch csidriver hostpath.csi.k8s.io --type=merge -p '{"spec":{"attachRequired":false}}' >"$work/out" 2>&1
check "csidriver attachRequired is immutable" sh -c 'grep -q "spec.attachedRequired: Invalid value: false: field is immutable" "$1"' - "$work/out"

# --- discovery ---
k api-resources >"$work/out" 2>&1
check "api-resources lists the kinds" sh -c '
    grep -Eq "^ingressclasses +networking.k8s.io/v1 +false +IngressClass" "$1" &&
    grep -Eq "^ingresses +ing +networking.k8s.io/v1 +true +Ingress" "$1" &&
    grep -Eq "^networkpolicies +netpol +networking.k8s.io/v1 +true +NetworkPolicy" "$1" &&
    grep -Eq "^storageclasses +sc +storage.k8s.io/v1 +false +StorageClass" "$1" &&
    grep -Eq "^persistentvolumes +pv +v1 +false +PersistentVolume" "$1" &&
    grep -Eq "^priorityclasses +pc +scheduling.k8s.io/v1 +false +PriorityClass" "$1" &&
    grep -Eq "^runtimeclasses +node.k8s.io/v1 +false +RuntimeClass" "$1" &&
    grep -Eq "^podtemplates +v1 +true +PodTemplate" "$1" &&
    grep -Eq "^csidrivers +storage.k8s.io/v1 +false +CSIDriver" "$1" &&
    grep -Eq "^csistoragecapacities +storage.k8s.io/v1 +true +CSIStorageCapacity" "$1"' - "$work/out"
check "kubectl explain ingress.spec.rules" sh -c 'kubectl explain ingress.spec.rules.http.paths >/dev/null 2>&1'

finish
