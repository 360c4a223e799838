#!/bin/sh
# test_agent_cri_pull.sh - `ckube agent` pulling images through containerd's CRI from
# a registry that wants a password, with a pod's image pull secrets, and the node's
# status from the runtime; driven with the real kubectl against a real `ckube server`
# (SQLite).
#
# Everything runs inside a network namespace and a mount namespace the test creates
# (tests/lib/containerd.sh): the server, a containerd of the test's own, a registry
# of its own (Debian's docker-registry on 127.0.0.1, htpasswd authentication) holding
# the project's busybox image (pushed there with ctr), the agent and its pods. Checked:
#
# - the node's status.images lists the runtime's images (names and sizes, largest
#   first);
# - a pod whose imagePullSecrets hold the registry's password pulls its image and
#   runs, with the kubelet's Pulling and Pulled events; a secret that does not exist
#   next to it gives the FailedToRetrieveImagePullSecret warning and the pull goes on
#   with the others; a wrong password before the right one: the right one pulls;
# - without a secret, and with a wrong password: ErrImagePull with the registry's
#   401 words, then ImagePullBackOff;
# - the pulled image shows in the node's status.images;
# - containerd stopped: the node's Ready turns False with the kubelet's reason and
#   message (KubeletNotReady, "container runtime is down") within a few node status
#   periods (1 s here), with a NodeNotReady event; containerd started again: Ready.
#
# Usage: test_agent_cri_pull.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    registry_pid=""
    stop_registry() {
        [ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null
        registry_pid=""
    }
    cri_e2e_cleanup=stop_registry

    # the registry: htpasswd (bcrypt through the C library's crypt) on a free port
    reg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    reg="127.0.0.1:$reg_port"
    python3 -W ignore -c 'import crypt, sys
h = crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH))
if not h or not h.startswith("$2"):
    sys.exit("no bcrypt in crypt(3)")
print("puller:" + h)' 'right-password' >"$cri_dir/htpasswd" 2>"$cri_dir/htpasswd.err" ||
        skip "cannot make a bcrypt htpasswd entry: $(cat "$cri_dir/htpasswd.err")"
    cat >"$cri_dir/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $cri_dir/registry
http:
  addr: $reg
auth:
  htpasswd:
    realm: ckube-test
    path: $cri_dir/htpasswd
EOF
    docker-registry serve "$cri_dir/registry.yml" >"$cri_dir/registry.log" 2>&1 &
    registry_pid=$!
    i=0
    until python3 -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://" + sys.argv[1] + "/v2/", timeout=2)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 401 else 1)
sys.exit(1)' "$reg" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$registry_pid" 2>/dev/null; then
            tail -n 5 "$cri_dir/registry.log" >&2
            fail "the registry did not answer 401 on /v2/ within 10 s"
        fi
        sleep 0.1
    done
    image="$reg/busybox:1"
    if ! ctr -a "$cri_sock" -n k8s.io images tag "$busybox_image" "$image" >"$cri_dir/push.log" 2>&1 ||
        ! ctr -a "$cri_sock" -n k8s.io images push --plain-http --user puller:right-password \
            "$image" >>"$cri_dir/push.log" 2>&1; then
        tail -n 5 "$cri_dir/push.log" >&2
        fail "ctr could not push $image"
    fi
    # gone from containerd again: the pods' pulls must fetch it
    ctr -a "$cri_sock" -n k8s.io images rm "$image" >/dev/null

    cri_e2e_server
    cat >"$work/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
nodeStatusUpdateFrequency: 1s
EOF
    start_agent --config "$work/kubelet.yaml"
    ready() { jp node/n1 '{.status.conditions[?(@.type=="Ready")].status}'; }
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

    # the node's images: the imported ones, with their sizes, largest first
    k get node n1 -o json >"$work/node.json"
    check "status.images lists the busybox image with its size" python3 -c '
import json, sys
imgs = json.load(open(sys.argv[1]))["status"]["images"]
sizes = [i["sizeBytes"] for i in imgs]
assert sizes == sorted(sizes, reverse=True), sizes
mine = [i for i in imgs if sys.argv[2] in i["names"]]
assert len(mine) == 1 and mine[0]["sizeBytes"] > 0, imgs
' "$work/node.json" "$busybox_image"

    # create NAME IMAGE SECRETS: a pod on n1 that always pulls, with those pull secrets
    create() {
        python3 - "$1" "$2" "$3" <<'EOF' | k create -f - >/dev/null
import json, sys
spec = {"nodeName": "n1", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": sys.argv[2], "imagePullPolicy": "Always",
                        "command": ["sleep", "3600"]}]}
if sys.argv[3]:
    spec["imagePullSecrets"] = [{"name": n} for n in sys.argv[3].split(",")]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": sys.argv[1]},
                  "spec": spec}))
EOF
    }
    k create secret docker-registry regcred --docker-server="$reg" --docker-username=puller \
        --docker-password=right-password >/dev/null
    k create secret docker-registry regwrong --docker-server="$reg" --docker-username=puller \
        --docker-password=wrong-password >/dev/null

    create withsecret "$image" regcred
    wait_for "withsecret Running (pulled with its secret)" pod/withsecret '{.status.phase}=Running'
    poll "withsecret: the Pulling event" sh -c "kubectl get events --field-selector involvedObject.name=withsecret,reason=Pulling -o jsonpath='{.items[*].message}' | grep -q 'Pulling image \"$image\"'"
    check "withsecret: the Pulled event" sh -c \
        "kubectl get events --field-selector involvedObject.name=withsecret,reason=Pulled -o jsonpath='{.items[*].message}' | grep -q 'Successfully pulled image \"$image\" in'"
    case $(jp pod/withsecret '{.status.containerStatuses[0].imageID}') in
    "$reg/busybox@sha256:"*) pass ;;
    *) fail "withsecret's imageID: '$(jp pod/withsecret '{.status.containerStatuses[0].imageID}')'" ;;
    esac

    # a secret that does not exist, before the right one: a warning, and the pull goes on
    create absentfirst "$image" absent,regcred
    wait_for "absentfirst Running" pod/absentfirst '{.status.phase}=Running'
    poll "absentfirst: FailedToRetrieveImagePullSecret" sh -c \
        "kubectl get events --field-selector involvedObject.name=absentfirst,reason=FailedToRetrieveImagePullSecret -o jsonpath='{.items[*].message}' | grep -q 'Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed.'"

    # a wrong password first, then the right one for the same registry: each is tried
    create wrongfirst "$image" regwrong,regcred
    wait_for "wrongfirst Running (the second credentials pulled)" pod/wrongfirst '{.status.phase}=Running'

    # no secret, and a wrong password: the registry's 401, then back-off
    create nosecret "$image" ""
    create wrongpw "$image" regwrong
    for p in nosecret wrongpw; do
        wait_for "$p: ErrImagePull" pod/$p '{.status.containerStatuses[0].state.waiting.reason}=ErrImagePull'
        msg=$(jp pod/$p '{.status.containerStatuses[0].state.waiting.message}')
        case $msg in
        *401\ Unauthorized*) pass ;;
        *) fail "$p: ErrImagePull carries the registry's 401: '$msg'" ;;
        esac
        wait_for "$p: ImagePullBackOff" pod/$p '{.status.containerStatuses[0].state.waiting.reason}=ImagePullBackOff'
    done
    check "wrongpw: the Failed event has the 401" sh -c \
        "kubectl get events --field-selector involvedObject.name=wrongpw,reason=Failed -o jsonpath='{.items[*].message}' | grep -q 'Failed to pull image \"$image\": .*401 Unauthorized'"
    check "the registry saw the wrong password" grep -q 'authentication failure\|invalid authorization credential\|unauthorized' "$cri_dir/registry.log"

    # the pulled image is in the node's status
    poll "status.images lists the pulled image" sh -c \
        "kubectl get node n1 -o jsonpath='{.status.images[*].names}' | grep -q '\"$image\"'"

    # containerd stopped: NotReady with the kubelet's words; started again: Ready
    kill "$cri_pid"
    wait "$cri_pid" 2>/dev/null
    cri_pid=""
    t0=$(date +%s)
    poll "node NotReady once containerd is down" sh -c "[ \"\$(kubectl get node n1 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = False ]"
    t1=$(date +%s)
    echo "the node was NotReady $((t1 - t0)) s after containerd's end"
    check "NotReady within 6 s of containerd's end (took $((t1 - t0)) s, status every 1 s)" [ $((t1 - t0)) -le 6 ]
    check "Ready's reason is KubeletNotReady" \
        [ "$(jp node/n1 '{.status.conditions[?(@.type=="Ready")].reason}')" = KubeletNotReady ]
    msg=$(jp node/n1 '{.status.conditions[?(@.type=="Ready")].message}')
    check "Ready's message is the kubelet's ('$msg')" [ "$msg" = "container runtime is down" ]
    poll "the NodeNotReady event" sh -c \
        "kubectl get events --field-selector involvedObject.name=n1,reason=NodeNotReady -o jsonpath='{.items[*].message}' | grep -q 'Node n1 status is now: NodeNotReady'"
    sleep 3
    check "the node stays NotReady while containerd is down" [ "$(ready)" = False ]
    # started again as cri_start_containerd did (its config), its log kept
    containerd --config "$cri_dir/config.toml" >>"$cri_dir/containerd.log" 2>&1 &
    cri_pid=$!
    i=0
    until ctr -a "$cri_sock" version >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 300 ] || ! kill -0 "$cri_pid" 2>/dev/null; then
            tail -n 20 "$cri_dir/containerd.log" >&2
            fail "containerd did not start again within 30 s"
            finish
        fi
        sleep 0.1
    done
    poll "node Ready again once containerd is back" sh -c "[ \"\$(kubectl get node n1 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"
    check "Ready's message once more the kubelet's ready one" \
        [ "$(jp node/n1 '{.status.conditions[?(@.type=="Ready")].message}')" = "kubelet is posting ready status" ]
    check "withsecret kept running across containerd's restart" \
        [ "$(jp pod/withsecret '{.status.containerStatuses[0].restartCount}')" = 0 ]

    k delete pod withsecret absentfirst wrongfirst nosecret wrongpw --wait=false >/dev/null
    cri_e2e_all_gone
    cri_e2e_finish eval 'echo "--- registry log ---"; tail -n 10 "$cri_dir/registry.log"'
fi

command -v docker-registry >/dev/null 2>&1 ||
    skip "no docker-registry (Debian package docker-registry)"
cri_e2e_outside "$@"
