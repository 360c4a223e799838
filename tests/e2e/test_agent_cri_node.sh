#!/bin/sh
# test_agent_cri_node.sh - the node agent's kubelet housekeeping on containerd's CRI: the
# real kubectl against a real `ckube server` (SQLite) and `ckube agent` driving a
# containerd of the test's own, in namespaces of its own (tests/lib/containerd.sh).
# Checked:
#
# - container log rotation (--container-log-max-size 4Ki, --container-log-max-files 3,
#   --container-log-monitor-interval 3s) of a container printing numbered lines fast:
#   rotated files appear, all gzipped but the newest, at most 3 files kept; `kubectl
#   logs` reads every kept line in order (the gzipped ones too) up to the latest, and a
#   `kubectl logs -f` started before goes on across the rotations without a gap;
# - emptyDir volumes of medium Memory: the container sees a tmpfs of the pod's memory
#   limit (64Mi), or of the volume's sizeLimit when smaller (8Mi); the agent restarted
#   mounts nothing twice; the tmpfs is unmounted and the pod's directory removed when the
#   pod is deleted, and when it was deleted while the agent was away;
# - service links: a Service made before the pod gives its container
#   BACKEND_SERVICE_HOST, _SERVICE_PORT, _SERVICE_PORT_<NAME>, _PORT, _PORT_80_TCP...,
#   an env value's $(BACKEND_SERVICE_HOST) is expanded with it and the container's own
#   variable of the same name wins; with enableServiceLinks false only the kubernetes
#   Service's variables come;
# - pod cgroup limits: a Guaranteed pod's cgroup (kubepods/pod<uid>) carries the larger of
#   its containers' summed limits and its init container's (cpu shares 512, quota 50 ms
#   per 100 ms, memory 80Mi), a Burstable pod's (kubepods/burstable/pod<uid>) its
#   requests' shares and no quota or memory limit (cgroup v1 files, or v2's cpu.weight,
#   cpu.max, memory.max);
# - RuntimeClass: a pod of a class whose handler is runc runs; one of a class whose handler
#   containerd does not know gets FailedCreatePodSandBox with containerd's answer naming
#   the handler, so the handler reached RunPodSandbox;
# - no process of the test is left afterwards.
#
# Usage: test_agent_cri_node.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

# consecutive FILE: the numbers of its "line N" lines follow each other, and there are
# at least $2 of them
consecutive() {
    python3 - "$1" "$2" <<'EOF'
import re, sys
nums = [int(m.group(1)) for m in re.finditer(r"^line (\d+) ", open(sys.argv[1]).read(), re.M)]
ok = len(nums) >= int(sys.argv[2]) and all(b == a + 1 for a, b in zip(nums, nums[1:]))
if not ok:
    print("lines:", len(nums), "first:", nums[:3], "gaps:",
          [(a, b) for a, b in zip(nums, nums[1:]) if b != a + 1][:5], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

# rotated_ok DIR: DIR's 0.log.* are at most 2 (with 0.log, at most 3 files), at least one
# gzipped, the newest not, every other gzipped and holding CRI records
rotated_ok() {
    python3 - "$1" <<'EOF'
import gzip, os, sys
d = sys.argv[1]
rot = sorted(f for f in os.listdir(d) if f.startswith("0.log.") and not f.endswith(".tmp"))
gz = [f for f in rot if f.endswith(".gz")]
ok = 0 < len(gz) and len(rot) <= 2 and not rot[-1].endswith(".gz") and gz == rot[:-1]
for f in gz:
    text = gzip.open(os.path.join(d, f)).read().decode()
    ok = ok and " stdout F line " in text
if not ok:
    print("rotated files:", rot, file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_e2e_server
    start_agent --container-log-max-size 4Ki --container-log-max-files 3 \
        --container-log-monitor-interval 3s
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

    # ---- container log rotation through ReopenContainerLog
    create chatty "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh', '-c',
        'i=0; while :; do echo \"line \$i of a container that prints fast\"; i=\$((i+1)); usleep 5000; done']}]}"
    wait_for "chatty Running" pod/chatty '{.status.phase}=Running'
    logs="$root/pods/$(jp pod/chatty '{.metadata.uid}')/containers/c"
    k logs -f chatty >"$work/follow.out" 2>"$work/follow.err" &
    follow_pid=$!
    first_inode=$(stat -c %i "$logs/0.log")
    poll "a rotated log is gzipped" sh -c "ls '$logs' | grep -q '^0\.log\..*\.gz$'"
    poll "the rotation keeps 3 files, all gzipped but the newest" rotated_ok "$logs"
    sleep 4 # one more rotation at least under the follower
    # Polled, not sampled once: a rotation may give the new 0.log the inode the
    # compressed file freed, so one look can see the first inode again.
    poll "the log was rotated (a new 0.log)" sh -c "test \"\$(stat -c %i '$logs/0.log')\" != '$first_inode'"
    k logs chatty >"$work/all.out" 2>"$work/all.err"
    check "kubectl logs: every kept line in order, the gzipped ones too" consecutive "$work/all.out" 100
    before=$(sed -n 's/^line \([0-9]*\) .*/\1/p' "$work/all.out" | tail -n 1)
    sleep 1
    last=$(k logs --tail=1 chatty | sed -n 's/^line \([0-9]*\) .*/\1/p')
    check "kubectl logs --tail=1: the latest line (line $last, after line $before)" \
        test "${last:-0}" -gt "${before:-0}"
    kill "$follow_pid" 2>/dev/null
    wait "$follow_pid" 2>/dev/null
    check "kubectl logs -f goes on across rotations without a gap" consecutive "$work/follow.out" 300
    check "the agent logged no rotation failure" sh -c "! grep -q 'Failed to rotate' '$work/agent.err'"

    # ---- emptyDir medium Memory
    for name in memvol memorphan; do
        create $name "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600'],
            'resources': {'limits': {'cpu': '100m', 'memory': '64Mi'}},
            'volumeMounts': [{'name': 'm', 'mountPath': '/mem'}, {'name': 's', 'mountPath': '/small'}]}],
            'volumes': [{'name': 'm', 'emptyDir': {'medium': 'Memory'}},
                        {'name': 's', 'emptyDir': {'medium': 'Memory', 'sizeLimit': '8Mi'}}]}"
    done
    wait_for "memvol Running" pod/memvol '{.status.phase}=Running'
    wait_for "memorphan Running" pod/memorphan '{.status.phase}=Running'
    k exec memvol -- cat /proc/mounts >"$work/memvol.mounts" 2>&1
    check "memory emptyDir: a tmpfs of the pod's limit at /mem ($(grep ' /mem ' "$work/memvol.mounts"))" \
        grep -q '^[^ ]* /mem tmpfs [^ ]*size=65536k' "$work/memvol.mounts"
    check "memory emptyDir: a tmpfs of its sizeLimit at /small ($(grep ' /small ' "$work/memvol.mounts"))" \
        grep -q '^[^ ]* /small tmpfs [^ ]*size=8192k' "$work/memvol.mounts"
    check "memory emptyDir: the container writes to it" k exec memvol -- sh -c 'echo hi >/mem/f && cat /mem/f'
    mem_dir="$root/pods/$(jp pod/memvol '{.metadata.uid}')"
    orphan_dir="$root/pods/$(jp pod/memorphan '{.metadata.uid}')"
    check "memory emptyDir: mounted on the node" grep -q " $mem_dir/volumes/m tmpfs " /proc/mounts
    stop_agent
    k delete pod memorphan --grace-period=0 --force >/dev/null 2>&1
    start_agent --container-log-max-size 4Ki --container-log-max-files 3 \
        --container-log-monitor-interval 3s
    poll "the orphaned pod's tmpfs is unmounted" sh -c "! grep -q ' $orphan_dir/' /proc/mounts"
    poll "the orphaned pod's directory is removed" sh -c "[ ! -e '$orphan_dir' ]"
    sleep 2 # the restarted agent has set memvol's volumes up again
    check "memory emptyDir: the restarted agent mounted nothing twice" \
        test "$(grep -c " $mem_dir/volumes/m tmpfs " /proc/mounts)" -eq 1
    k delete pod memvol --wait=false >/dev/null
    poll "memory emptyDir: unmounted once the pod is deleted" sh -c "! grep -q ' $mem_dir/' /proc/mounts"
    poll "memory emptyDir: the pod's directory removed" sh -c "[ ! -e '$mem_dir' ]"

    # ---- service links
    k create service clusterip backend --tcp=80:8080 >/dev/null
    backend_ip=$(jp service/backend '{.spec.clusterIP}')
    kube_ip=$(jp service/kubernetes '{.spec.clusterIP}')
    create linked "{'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sh', '-c', 'env | sort; sleep 3600'],
        'env': [{'name': 'BACKEND_URL', 'value': 'http://\$(BACKEND_SERVICE_HOST):\$(BACKEND_SERVICE_PORT)/'},
                {'name': 'BACKEND_SERVICE_PORT', 'value': 'mine'}]}]}"
    create unlinked "{'enableServiceLinks': False, 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sh', '-c', 'env | sort; sleep 3600']}]}"
    wait_for "linked Running" pod/linked '{.status.phase}=Running'
    wait_for "unlinked Running" pod/unlinked '{.status.phase}=Running'
    poll "linked printed its env" sh -c "kubectl logs linked | grep -q '^HOSTNAME='"
    poll "unlinked printed its env" sh -c "kubectl logs unlinked | grep -q '^HOSTNAME='"
    k logs linked >"$work/linked.env"
    k logs unlinked >"$work/unlinked.env"
    for want in "BACKEND_SERVICE_HOST=$backend_ip" "BACKEND_SERVICE_PORT_80_8080=80" \
        "BACKEND_PORT=tcp://$backend_ip:80" "BACKEND_PORT_80_TCP=tcp://$backend_ip:80" \
        "BACKEND_PORT_80_TCP_PROTO=tcp" "BACKEND_PORT_80_TCP_PORT=80" \
        "BACKEND_PORT_80_TCP_ADDR=$backend_ip" "KUBERNETES_SERVICE_HOST=$kube_ip" \
        "BACKEND_URL=http://$backend_ip:80/" "BACKEND_SERVICE_PORT=mine"; do
        check "service links: $want" grep -qx "$want" "$work/linked.env"
    done
    check "enableServiceLinks false: the kubernetes Service's variables" \
        grep -qx "KUBERNETES_SERVICE_HOST=$kube_ip" "$work/unlinked.env"
    check "enableServiceLinks false: no other Service's" sh -c "! grep -q '^BACKEND_' '$work/unlinked.env'"
    k delete pod linked unlinked --wait=false >/dev/null

    # ---- pod cgroup limits
    create limited "{'initContainers': [{'name': 'i', 'image': '$busybox_image', 'command': ['true'],
            'resources': {'limits': {'cpu': '500m', 'memory': '16Mi'}}}],
        'containers': [{'name': 'a', 'image': '$busybox_image', 'command': ['sleep', '3600'],
            'resources': {'limits': {'cpu': '100m', 'memory': '32Mi'}}},
          {'name': 'b', 'image': '$busybox_image', 'command': ['sleep', '3600'],
            'resources': {'limits': {'cpu': '150m', 'memory': '48Mi'}}}]}"
    create burst "{'containers': [{'name': 'a', 'image': '$busybox_image', 'command': ['sleep', '3600'],
        'resources': {'requests': {'cpu': '100m'}}}]}"
    wait_for "limited Running" pod/limited '{.status.phase}=Running'
    wait_for "burst Running" pod/burst '{.status.phase}=Running'
    limited_cg="${cgroup_root}/kubepods/pod$(jp pod/limited '{.metadata.uid}')"
    burst_cg="${cgroup_root}/kubepods/burstable/pod$(jp pod/burst '{.metadata.uid}')"
    value() { cat "$1/$2" 2>/dev/null; }
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then # cgroup v2
        g=/sys/fs/cgroup
        check "pod cgroup v2: cpu.weight of 500m ($(value "$g$limited_cg" cpu.weight))" \
            test "$(value "$g$limited_cg" cpu.weight)" = 20
        check "pod cgroup v2: cpu.max ($(value "$g$limited_cg" cpu.max))" \
            test "$(value "$g$limited_cg" cpu.max)" = "50000 100000"
        check "pod cgroup v2: memory.max ($(value "$g$limited_cg" memory.max))" \
            test "$(value "$g$limited_cg" memory.max)" = 83886080
        check "Burstable pod cgroup v2: cpu.weight of 100m" test "$(value "$g$burst_cg" cpu.weight)" = 4
        check "Burstable pod cgroup v2: no cpu.max" test "$(value "$g$burst_cg" cpu.max)" = "max 100000"
        check "Burstable pod cgroup v2: no memory.max" test "$(value "$g$burst_cg" memory.max)" = max
    else # cgroup v1: the cpu and memory hierarchies' shortest mount points
        cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print length($2), $2 }' /proc/self/mounts | sort -n | sed -n '1s/^[0-9]* //p')
        mem=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print length($2), $2 }' /proc/self/mounts | sort -n | sed -n '1s/^[0-9]* //p')
        check "pod cgroup: cpu.shares of 500m ($(value "$cpu$limited_cg" cpu.shares))" \
            test "$(value "$cpu$limited_cg" cpu.shares)" = 512
        check "pod cgroup: cpu.cfs_quota_us ($(value "$cpu$limited_cg" cpu.cfs_quota_us))" \
            test "$(value "$cpu$limited_cg" cpu.cfs_quota_us)" = 50000
        check "pod cgroup: cpu.cfs_period_us" test "$(value "$cpu$limited_cg" cpu.cfs_period_us)" = 100000
        check "pod cgroup: memory.limit_in_bytes ($(value "$mem$limited_cg" memory.limit_in_bytes))" \
            test "$(value "$mem$limited_cg" memory.limit_in_bytes)" = 83886080
        check "Burstable pod cgroup: cpu.shares of 100m ($(value "$cpu$burst_cg" cpu.shares))" \
            test "$(value "$cpu$burst_cg" cpu.shares)" = 102
        check "Burstable pod cgroup: no cfs quota" test "$(value "$cpu$burst_cg" cpu.cfs_quota_us)" = -1
        check "Burstable pod cgroup: no memory limit ($(value "$mem$burst_cg" memory.limit_in_bytes))" \
            test "$(value "$mem$burst_cg" memory.limit_in_bytes)" -gt 1000000000000
        check "the containers' cgroups are below the pod's" \
            sh -c "ls -d '$cpu$limited_cg'/*/ | grep -q ."
    fi
    k delete pod limited burst --wait=false >/dev/null

    # ---- the RuntimeClass's handler reaches RunPodSandbox
    for class in "runc runc" "nope nope"; do
        set -- $class
        printf '{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"%s"},"handler":"%s"}' \
            "$1" "$2" | k create -f - >/dev/null
    done
    create classed "{'runtimeClassName': 'runc', 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sleep', '3600']}]}"
    create unhandled "{'runtimeClassName': 'nope', 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['sleep', '3600']}]}"
    wait_for "a pod of RuntimeClass runc Running" pod/classed '{.status.phase}=Running'
    poll "a pod of a RuntimeClass whose handler containerd lacks: FailedCreatePodSandBox naming it" \
        sh -c "kubectl get events --field-selector involvedObject.name=unhandled,reason=FailedCreatePodSandBox \
            -o jsonpath='{.items[*].message}' | grep -q 'no runtime for \"nope\" is configured'"
    check "... and it does not run" test "$(jp pod/unhandled '{.status.phase}')" = Pending
    k delete pod classed unhandled --wait=false >/dev/null

    k delete pod chatty --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
