#!/bin/sh
# test_agent_cri_attach.sh - `kubectl attach` and `kubectl run -i` on containers of the
# CRI runtime: the real kubectl against a real `ckube server` (SQLite) and `ckube agent`
# driving a containerd of the test's own, in namespaces of its own
# (tests/lib/containerd.sh). The agent relays containerd's Attach stream over WebSocket.
# Checked:
#
# - -it from a pseudo-terminal to a shell with stdin and tty: the shell answers on its
#   terminal, of the set size (the spec's stdin and tty reached the runtime);
# - -i to a shell with stdin and no tty: a command sent comes back with its output, and
#   the end of stdin ends kubectl's attach with exit 0, the shell left running;
# - without -i: a looping container's new output arrives, not what it wrote before;
# - an unknown container (kubectl's check, then the API's), a container that does not
#   run, a pod without a node: refused in kube-apiserver's and the kubelet's words;
# - `kubectl run -i --rm --restart=Never` with input piped: the container reads it and
#   its answer comes back, and the pod is deleted; `kubectl run -it --rm` from a
#   pseudo-terminal gives a shell, and the pod goes when it exits;
# - no pod or container of the test is left afterwards.
#
# Usage: test_agent_cri_attach.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_server_flags=--v=2 # the streams' byte counts in the logs, for a failure's report
    cri_e2e_server
    start_node --v=2

    create term "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh'],
        'stdin': True, 'tty': True}]}"
    create shin "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh'],
        'stdin': True}]}"
    create loop "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh', '-c',
        'i=0; while true; do i=\$((i+1)); echo tick-\$i; sleep 0.3; done']}]}"
    create crash "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['false']}]}"
    create unplaced "{'nodeName': None, 'nodeSelector': {'no': 'such-node'},
        'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh']}]}"
    for p in term shin loop; do wait_for "$p Running" pod/$p '{.status.phase}=Running'; done

    # a shell on the container's own terminal
    python3 "$here/pty_shell.py" -- kubectl attach -it term >"$work/term.out" 2>&1
    check "attach -it: the shell computes 42" grep -q '^42' "$work/term.out"
    check "attach -it: on the container's pseudo-terminal" grep -q '/dev/pts/' "$work/term.out"
    check "attach -it: the terminal's size" grep -q '^33 101' "$work/term.out"
    check "attach -it: kubectl exits 0 once the shell exits" grep -q '^EXIT 0' "$work/term.out"

    # stdin without a tty: a command in, its output out; the end of stdin ends the attach
    start=$(date +%s)
    printf 'X=kept; echo hello-$((6*7))\n' | timeout 60 kubectl attach -i shin >"$work/shin.out" 2>"$work/shin.err"
    code=$?
    took=$(($(date +%s) - start))
    check "attach -i: the command's output comes back ($(cat "$work/shin.out"))" \
        grep -qx hello-42 "$work/shin.out"
    check "attach -i: the end of stdin ends it with exit 0 (exit $code in ${took}s: $(cat "$work/shin.err"))" \
        test "$code" -eq 0
    check "attach -i: the shell runs on" test "$(jp pod/shin '{.status.containerStatuses[0].restartCount}')" = 0
    printf 'echo "$X-again"\n' | k attach -i shin >"$work/shin2.out" 2>&1
    check "attach -i a second time reaches the same shell ($(cat "$work/shin2.out"))" \
        grep -qx kept-again "$work/shin2.out"

    # output only: what the container writes from now on
    sleep 2
    timeout 6 kubectl attach loop >"$work/loop.out" 2>"$work/loop.err"
    n=$(grep -c '^tick-' "$work/loop.out")
    check "attach: the looping container's output arrives ($n lines)" test "$n" -ge 3
    check "attach: only new output, not the first lines" sh -c "! grep -qx tick-1 '$work/loop.out'"
    first=$(grep -m1 '^tick-' "$work/loop.out" | cut -d- -f2)
    last=$(grep '^tick-' "$work/loop.out" | tail -n1 | cut -d- -f2)
    check "attach: the lines follow each other (tick-$first to tick-$last)" \
        test "$((last - first + 1))" -eq "$n"

    # errors
    k attach shin -c nope 2>"$work/nope.err"
    check "attach to an unknown container: kubectl's words ($(cat "$work/nope.err"))" \
        grep -q 'container nope not found in pod shin' "$work/nope.err"
    kurl -w '%{http_code}' "$url/api/v1/namespaces/default/pods/shin/attach?container=nope&stdout=true" \
        >"$work/nope.api"
    check "pods/attach of an unknown container: kube-apiserver's 400 ($(cat "$work/nope.api"))" \
        sh -c "grep -q 'container nope is not valid for pod shin' '$work/nope.api' && grep -q '400\$' '$work/nope.api'"
    kurl "$url/api/v1/namespaces/default/pods/shin/attach?stdout=true" >"$work/noupgrade.api"
    check "pods/attach without an upgrade: refused ($(cat "$work/noupgrade.api"))" \
        grep -q 'Upgrade request required: pods/attach' "$work/noupgrade.api"
    poll "crash's container waits to restart" \
        sh -c "kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}' | grep -q CrashLoopBackOff"
    k attach crash 2>"$work/crash.err" >/dev/null
    code=$?
    check "attach to a container that does not run fails (exit $code)" test "$code" -ne 0
    check "attach to a container that does not run: the kubelet's words ($(cat "$work/crash.err"))" \
        grep -q 'container c not found in pod crash_default' "$work/crash.err"
    k attach unplaced 2>"$work/unplaced.err" >/dev/null
    check "attach to a pod without a node: kube-apiserver's words ($(cat "$work/unplaced.err"))" \
        grep -q 'pod unplaced does not have a host assigned' "$work/unplaced.err"
    k attach nosuchpod 2>"$work/nopod.err" >/dev/null
    check "attach to a missing pod: NotFound" grep -q 'pods "nosuchpod" not found' "$work/nopod.err"

    # kubectl run -i --rm: the input read, the answer back, the pod gone
    echo world | k run hello -i --rm --restart=Never --image="$busybox_image" \
        --overrides='{"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 2}}' \
        -- sh -c 'read x; echo got $x' >"$work/run.out" 2>"$work/run.err"
    code=$?
    check "run -i: the container's answer comes back ($(cat "$work/run.out"); $(cat "$work/run.err"))" \
        grep -qx 'got world' "$work/run.out"
    check "run -i: exit 0 (got $code)" test "$code" -eq 0
    check "run -i --rm: kubectl deleted the pod" grep -q 'pod "hello" deleted' "$work/run.out"
    poll "run -i --rm: the pod is gone" sh -c '! kubectl get pod hello >/dev/null 2>&1'

    # kubectl run -it --rm from a pseudo-terminal
    python3 "$here/pty_shell.py" -- kubectl run shell -it --rm --restart=Never \
        --image="$busybox_image" \
        --overrides='{"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 2}}' \
        -- sh >"$work/runt.out" 2>&1
    check "run -it: kubectl's prompt hint" grep -q "If you don't see a command prompt, try pressing enter." "$work/runt.out"
    check "run -it: the shell computes 42" grep -q '^42' "$work/runt.out"
    check "run -it: on a pseudo-terminal of the set size" \
        sh -c "grep -q '/dev/pts/' '$work/runt.out' && grep -q '^33 101' '$work/runt.out'"
    check "run -it: exits 0" grep -q '^EXIT 0' "$work/runt.out"
    poll "run -it --rm: the pod is gone" sh -c '! kubectl get pod shell >/dev/null 2>&1'

    k delete pod term shin loop crash unplaced --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
