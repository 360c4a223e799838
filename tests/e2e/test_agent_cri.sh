#!/bin/sh
# test_agent_cri.sh - `ckube agent` running real containers through containerd's CRI,
# driven with the real kubectl against a real `ckube server` (SQLite).
#
# Everything runs inside a network namespace and a mount namespace the test creates
# (tests/lib/containerd.sh): the server, a containerd of the test's own (stopped by
# PID), the agent and its pods, whose bridge and addresses never touch the machine's
# network. The images are the project's own (scripts/build-images); nothing is pulled
# from outside. Checked:
#
# - an endpoint whose socket is absent: the agent exits 1 naming the ways out;
# - the node is Ready with containerRuntimeVersion containerd://..., and the agent
#   wrote its CNI configuration into the runtime's empty directory;
# - a Deployment of an image whose ENTRYPOINT serves HTTP becomes available through
#   a readiness probe (httpGet at the pod IP), its pod has an address from the
#   node's range, containerID containerd://..., the image's id as imageID, and
#   answers from the namespace's network; the kubelet's image event;
# - command and args with $(VAR) expansion, env from values and fieldRefs, a
#   ConfigMap volume, exec liveness and readiness probes (ExecSync) and the log;
# - an exec liveness probe that fails restarts the container;
# - a crashing container restarts with back-off (restartCount, lastState exit code,
#   CrashLoopBackOff) and `kubectl logs --previous` shows the previous attempt; the
#   container GC (--container-gc-period 2s) removes its older dead attempts and their
#   logs, keeping the current and the previous one (logs --previous still works);
# - imagePullPolicy Never without the image: ErrImageNeverPull; a pull that fails:
#   ErrImagePull, then ImagePullBackOff, and the Failed event; the pull back-off is the
#   pod's and the image's (the kubelet's backOffKey): a second container of the pod with
#   that image waits in ImagePullBackOff without a pull of its own, another pod pulls it;
# - a memory limit: OOMKilled, exit 137;
# - a hostNetwork pod has the node's address;
# - the agent killed with SIGKILL and started again keeps the containers (same
#   containerID, no restart);
# - the image GC over thresholds of 1% and 0%: the unused image goes, the sandbox image
#   and a running pod's stay, FreeDiskSpaceFailed on the node;
# - deleted pods leave no container, sandbox, task or pod cgroup behind (checked
#   with ctr and in /sys/fs/cgroup); no process of the test is left afterwards.
#
# Usage: test_agent_cri.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_e2e_server

    # an absent socket: exit 1, and the message names the ways out
    # shellcheck disable=SC2046
    "$ckube" agent $(agent_flags) --container-runtime-endpoint "unix://$cri_dir/none.sock" \
        >/dev/null 2>"$work/absent.err"
    rc=$?
    check "absent runtime socket: exit 1" [ $rc -eq 1 ]
    check "absent runtime socket: the ways out named" \
        grep -q "install containerd.*--container-runtime process" "$work/absent.err"

    start_agent --container-gc-period 2s
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'
    case $(jp node/n1 '{.status.nodeInfo.containerRuntimeVersion}') in
    containerd://1.*) pass ;;
    *) fail "containerRuntimeVersion: $(jp node/n1 '{.status.nodeInfo.containerRuntimeVersion}')" ;;
    esac
    # the controller manager's node-ipam-controller gives the node its range, the pods'
    # (the agent has no --pod-cidr)
    poll "the node has a pod range" sh -c "[ -n \"\$(kubectl get node n1 -o jsonpath='{.spec.podCIDR}')\" ]"
    pod_cidr=$(jp node/n1 '{.spec.podCIDR}')
    case $pod_cidr in 10.244.*.0/24) pass ;; *) fail "n1's spec.podCIDR from --cluster-cidr: '$pod_cidr'" ;; esac
    poll "the agent wrote the node's CNI configuration for it" \
        grep -q "\"$pod_cidr\"" "$cri_dir/cni/net.d/10-ckube.conflist"

    # a Deployment of the web image: its ENTRYPOINT serves HTTP; Ready by httpGet
    python3 - "$web_image" <<'EOF' | k create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
      "spec": {"terminationGracePeriodSeconds": 2, "containers": [{"name": "web", "image": sys.argv[1],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"},
                           "periodSeconds": 1}}]}}}}))
EOF
    if k rollout status deployment/web --timeout=90s >/dev/null 2>"$work/rollout.err"; then
        pass
    else
        fail "web available ($(cat "$work/rollout.err"))"
    fi
    web=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
    web_ip=$(jp "pod/$web" '{.status.podIP}')
    case $web_ip in "${pod_cidr%0/24}"*) pass ;; *) fail "web's pod IP from the node's range $pod_cidr: '$web_ip'" ;; esac
    web_cid=$(jp "pod/$web" '{.status.containerStatuses[0].containerID}')
    case $web_cid in containerd://?*) pass ;; *) fail "web's containerID: '$web_cid'" ;; esac
    check "web's imageID is the image's id" \
        [ "$(jp "pod/$web" '{.status.containerStatuses[0].imageID}')" = "$web_id" ]
    fetch() { python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode(), end="")' "$1"; }
    check "web serves its page at the pod IP" \
        [ "$(fetch "http://$web_ip:8080/index.html" 2>/dev/null)" = "ckube web" ]
    poll "the kubelet's image event" sh -c \
        "kubectl get events --field-selector involvedObject.name=$web -o jsonpath='{.items[*].message}' | grep -q 'already present on machine'"

    # command and args expanded, env, a ConfigMap volume, exec probes
    k create configmap greeting --from-literal=word=hello >/dev/null
    create env "{'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sh', '-c'], 'args': ['echo \$(WORD) from \$(POD) in \$NS; cat /cfg/word; echo; touch /tmp/ok; sleep 3600'],
        'env': [{'name': 'POD', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.name'}}},
                {'name': 'NS', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.namespace'}}},
                {'name': 'WORD', 'valueFrom': {'configMapKeyRef': {'name': 'greeting', 'key': 'word'}}}],
        'volumeMounts': [{'name': 'cfg', 'mountPath': '/cfg', 'readOnly': True}],
        'livenessProbe': {'exec': {'command': ['cat', '/tmp/ok']}, 'periodSeconds': 1},
        'readinessProbe': {'exec': {'command': ['test', '-f', '/tmp/ok']}, 'periodSeconds': 1}}],
      'volumes': [{'name': 'cfg', 'configMap': {'name': 'greeting'}}]}"
    wait_for "env Ready (exec readiness probe)" pod/env '{.status.conditions[?(@.type=="Ready")].status}=True'
    # its resolv.conf as the kubelet forms it: the cluster DNS, the cluster's search
    # domains then the node's, ndots:5 (the node's options dropped)
    k exec env -- cat /etc/resolv.conf >"$work/env-resolv.conf" 2>&1
    check "env's nameserver is the cluster DNS only" \
        [ "$(grep '^nameserver' "$work/env-resolv.conf")" = "nameserver 10.96.0.10" ]
    check "env's search domains" [ "$(grep '^search' "$work/env-resolv.conf")" = \
        "search default.svc.cluster.local svc.cluster.local cluster.local example.test" ]
    check "env's options" [ "$(grep '^options' "$work/env-resolv.conf")" = "options ndots:5" ]
    # dnsPolicy None: the pod's dnsConfig alone
    create dnsnone "{'dnsPolicy': 'None', 'dnsConfig': {'nameservers': ['203.0.113.5'],
        'searches': ['a.example'], 'options': [{'name': 'edns0'}]},
        'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    wait_for "dnsnone Running" pod/dnsnone '{.status.phase}=Running'
    check "dnsPolicy None: the pod's dnsConfig alone" sh -c \
        "kubectl exec dnsnone -- cat /etc/resolv.conf | grep -v '^#' | tr '\n' ' ' | grep -qx 'search a.example nameserver 203.0.113.5 options edns0 '"
    poll "env's log: expanded args, env, the ConfigMap's file" sh -c \
        "kubectl logs env | tr '\n' '|' | grep -qx 'hello from env in default|hello|'"
    k logs env | tr '\n' '|' | grep -qx 'hello from env in default|hello|' ||
        echo "env's log: $(k logs env 2>&1)"

    # an exec liveness probe that fails: the container is restarted
    create sick "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600'],
        'livenessProbe': {'exec': {'command': ['false']}, 'periodSeconds': 1, 'failureThreshold': 1}}]}"
    poll "sick restarted by its liveness probe" sh -c \
        "[ \"\$(kubectl get pod sick -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -ge 1 ]"

    # a crash loop, and the previous attempt's log
    create crash "{'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sh', '-c', 'echo attempt \$(date +%s%N); exit 3']}]}"
    poll "crash restarted" sh -c \
        "[ \"\$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -ge 1 ]"
    check "crash: the last state's exit code" \
        [ "$(jp pod/crash '{.status.containerStatuses[0].lastState.terminated.exitCode}')" = 3 ]
    wait_for "crash in CrashLoopBackOff" pod/crash \
        '{.status.containerStatuses[0].state.waiting.reason}=CrashLoopBackOff'
    check "crash: logs --previous" sh -c "kubectl logs --previous crash | grep -q '^attempt [0-9]'"
    # the container GC (every 2 s here): once attempt 2 exists, attempt 0 goes with its
    # log; the current attempt and the previous one, whose log --previous reads, stay
    poll "crash restarted twice" sh -c \
        "[ \"\$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -ge 2 ]"
    crash_uid=$(jp pod/crash '{.metadata.uid}')
    # crash's containers (not its sandbox, which containerd keeps as a container too)
    crash_filter='labels."io.kubernetes.pod.name"==crash,labels."io.cri-containerd.kind"==container'
    crash_ctrs() {
        ctr -a "$cri_sock" -n k8s.io containers ls -q "$crash_filter" | wc -l
    }
    crash_dir="$root/pods/$crash_uid/containers/c"
    poll "GC: attempt 0's log removed" sh -c "[ ! -e '$crash_dir/0.log' ]"
    poll "GC: with its exit record" sh -c "[ ! -e '$crash_dir/0' ]"
    # (a restart may come between two passes: the next one removes the older attempt)
    poll "GC: containerd holds at most the current and one dead attempt of crash" \
        sh -c "[ \$(ctr -a '$cri_sock' -n k8s.io containers ls -q '$crash_filter' | wc -l) -le 2 ]"
    check "GC: the current and the previous attempt stay ($(crash_ctrs))" [ "$(crash_ctrs)" -ge 2 ]
    check "GC: logs --previous after GC" sh -c "kubectl logs --previous crash | grep -q '^attempt [0-9]'"
    # (the restart count read again each time: a restart moves what "previous" is)
    poll "GC: the previous attempt's log stays" sh -c \
        "r=\$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}'); [ -e '$crash_dir'/\$((r - 1)).log ]"

    # images that are not there
    create never "{'containers': [{'name': 'c', 'image': 'ckube.local/missing:1', 'imagePullPolicy': 'Never'}]}"
    wait_for "ErrImageNeverPull" pod/never '{.status.containerStatuses[0].state.waiting.reason}=ErrImageNeverPull'
    create nopull "{'containers': [{'name': 'c', 'image': '127.0.0.1:1/none:1'}]}"
    wait_for "ErrImagePull" pod/nopull '{.status.containerStatuses[0].state.waiting.reason}=ErrImagePull'
    check "ErrImagePull carries the runtime's words" sh -c \
        "kubectl get pod nopull -o jsonpath='{.status.containerStatuses[0].state.waiting.message}' | grep -q '127.0.0.1:1'"
    wait_for "ImagePullBackOff" pod/nopull '{.status.containerStatuses[0].state.waiting.reason}=ImagePullBackOff'
    poll "the Failed pull event" sh -c \
        "kubectl get events --field-selector involvedObject.name=nopull,reason=Failed -o jsonpath='{.items[*].message}' | grep -q 'Failed to pull image'"
    # the same image in a second pod: a back-off of its own, so its first pull is tried
    create nopull2 "{'containers': [{'name': 'a', 'image': '127.0.0.1:1/none:1'},
        {'name': 'b', 'image': '127.0.0.1:1/none:1'}]}"
    wait_for "nopull2: a pull of its own" pod/nopull2 \
        '{.status.containerStatuses[?(@.name=="a")].state.waiting.reason}=ErrImagePull'
    # its second container meets the back-off a's failure started, in the same sync
    check "nopull2: the second container waits in the pod's back-off for the image" \
        [ "$(jp pod/nopull2 '{.status.containerStatuses[?(@.name=="b")].state.waiting.message}')" = \
          'Back-off pulling image "127.0.0.1:1/none:1"' ]

    # a memory limit
    create oom "{'restartPolicy': 'Never', 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sh', '-c', 'head -c 300m /dev/zero | tail'],
        'resources': {'limits': {'memory': '32Mi'}}}]}"
    wait_for "oom: OOMKilled" pod/oom '{.status.containerStatuses[0].state.terminated.reason}=OOMKilled'
    check "oom: exit 137" [ "$(jp pod/oom '{.status.containerStatuses[0].state.terminated.exitCode}')" = 137 ]

    # termination messages: the file at terminationMessagePath (default and custom), and
    # a failed container's log tail under FallbackToLogsOnError
    create msg "{'restartPolicy': 'Never', 'containers': [
        {'name': 'a', 'image': '$busybox_image', 'command': ['sh', '-c', 'echo -n all done >/dev/termination-log']},
        {'name': 'b', 'image': '$busybox_image', 'terminationMessagePath': '/tmp/why',
         'command': ['sh', '-c', 'echo -n custom path >/tmp/why; exit 3']},
        {'name': 'c', 'image': '$busybox_image', 'terminationMessagePolicy': 'FallbackToLogsOnError',
         'command': ['sh', '-c', 'echo first; echo it broke; exit 1']}]}"
    wait_for "msg: ended" pod/msg '{.status.phase}=Failed'
    msg_of() { jp pod/msg "{.status.containerStatuses[?(@.name==\"$1\")].state.terminated.message}"; }
    check "the termination file's message ($(msg_of a))" [ "$(msg_of a)" = "all done" ]
    check "at a custom terminationMessagePath ($(msg_of b))" [ "$(msg_of b)" = "custom path" ]
    check "FallbackToLogsOnError: the failed container's log tail ($(msg_of c))" \
        [ "$(msg_of c)" = "$(printf 'first\nit broke')" ]

    # postStart hooks: run right after the start; a failing one stops the container
    create hooked "{'containers': [{'name': 'c', 'image': '$busybox_image',
        'lifecycle': {'postStart': {'exec': {'command': ['sh', '-c', 'echo hooked >/tmp/started']}}},
        'command': ['sh', '-c', 'while [ ! -f /tmp/started ]; do sleep 0.1; done; echo saw the hook; sleep 3600']}]}"
    create badhook "{'containers': [{'name': 'c', 'image': '$busybox_image',
        'lifecycle': {'postStart': {'exec': {'command': ['false']}}}, 'command': ['sleep', '3600']}]}"
    poll "a postStart hook runs in the started container" sh -c "kubectl logs hooked | grep -q 'saw the hook'"
    poll "a failing postStart hook: FailedPostStartHook" sh -c \
        "kubectl get events --field-selector involvedObject.name=badhook,reason=FailedPostStartHook -o name | grep -q ."
    poll "and the container is stopped, then restarted" sh -c \
        "[ \"\$(kubectl get pod badhook -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -ge 1 ]"

    # the host's network
    create hostnet "{'hostNetwork': True, 'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    wait_for "hostnet Running" pod/hostnet '{.status.phase}=Running'
    check "hostnet has the node's address" \
        [ "$(jp pod/hostnet '{.status.podIP}')" = "$(jp node/n1 '{.status.addresses[?(@.type=="InternalIP")].address}')" ]

    # the agent killed and started again keeps its containers
    env_cid=$(jp pod/env '{.status.containerStatuses[0].containerID}')
    kill -9 "$agent_pid"
    wait "$agent_pid" 2>/dev/null
    agent_pid=""
    start_agent --container-gc-period 2s
    poll "agent back: its log says the containers were found" grep -q "Container found again" "$work/agent.err"
    sleep 3
    check "web: same containerID after the agent's restart" \
        [ "$(jp "pod/$web" '{.status.containerStatuses[0].containerID}')" = "$web_cid" ]
    check "env: same containerID after the agent's restart" \
        [ "$(jp pod/env '{.status.containerStatuses[0].containerID}')" = "$env_cid" ]
    check "env: not restarted" [ "$(jp pod/env '{.status.containerStatuses[0].restartCount}')" = 0 ]

    # deletion leaves nothing behind
    k delete deployment web >/dev/null
    k delete pod env dnsnone sick crash never nopull nopull2 oom msg hooked badhook hostnet --wait=false >/dev/null
    poll "every pod deleted" sh -c "[ -z \"\$(kubectl get pods -o name)\" ]"
    poll "every pod's directory removed" sh -c "[ -z \"\$(ls -A '$root/pods' 2>/dev/null)\" ]"
    poll "no container left in containerd" sh -c \
        "[ -z \"\$(ctr -a $cri_sock -n k8s.io containers ls -q)\" ]"
    check "no task left in containerd" sh -c "[ -z \"\$(ctr -a $cri_sock -n k8s.io tasks ls -q)\" ]"
    left=$(find /sys/fs/cgroup/*/"${cgroup_root#/}"/kubepods -name 'pod*' -type d 2>/dev/null | head -3)
    check "no pod cgroup left ($left)" [ -z "$left" ]

    # the image GC (every fifth container GC pass): from 1% of the disk down to 0% and
    # with no minimum age, a pass removes every image no container uses (web), keeps
    # the sandbox image and a running pod's, and warns FreeDiskSpaceFailed on the node,
    # as the disk holds more than images
    create keeper "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    wait_for "keeper Running" pod/keeper '{.status.phase}=Running'
    stop_agent
    start_agent --container-gc-period 1s --image-gc-high-threshold 1 --image-gc-low-threshold 0 \
        --minimum-image-ttl-duration 0s
    poll "image GC: the unused web image removed" sh -c \
        "! ctr -a '$cri_sock' -n k8s.io images ls -q | grep -qxF '$web_image'"
    check "image GC: busybox (in use) stays" sh -c \
        "ctr -a '$cri_sock' -n k8s.io images ls -q | grep -qxF '$busybox_image'"
    check "image GC: the sandbox image stays" sh -c \
        "ctr -a '$cri_sock' -n k8s.io images ls -q | grep -qxF '$pause_image'"
    poll "image GC: FreeDiskSpaceFailed on the node" sh -c \
        "kubectl get events --field-selector involvedObject.kind=Node,reason=FreeDiskSpaceFailed -o jsonpath='{.items[*].message}' | grep -q 'Failed to garbage collect required amount of images'"
    k delete pod keeper --wait=false >/dev/null
    poll "keeper deleted, no container left in containerd" sh -c \
        "[ -z \"\$(ctr -a $cri_sock -n k8s.io containers ls -q)\" ]"
    cri_e2e_report
fi

cri_e2e_outside "$@"
