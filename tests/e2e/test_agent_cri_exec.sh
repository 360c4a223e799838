#!/bin/sh
# test_agent_cri_exec.sh - `kubectl exec` into containers of the CRI runtime: the real
# kubectl against a real `ckube server` (SQLite) and `ckube agent` driving a containerd of
# the test's own, in namespaces of its own (tests/lib/containerd.sh). The agent relays
# the session to containerd's streaming server over WebSocket. Checked:
#
# - stdout, stderr and exit code 3; `true` exits 0; the command runs in the container
#   (its hostname, its env, its root); 4 MiB of output arrive whole;
# - -i: stdin reaches the command, and a command that ends by itself gives its exit
#   code; with `cat`, stdin's end closes the stream (v4.channel.k8s.io cannot say it):
#   the input comes back and the exit code is reported unknown;
# - -it from a pseudo-terminal: a shell on a terminal of the set size, exit 0;
# - a command that does not exist: the runtime's error and a non-zero exit;
# - a container that does not run (completed), an unknown container or pod: refused
#   with kubectl's messages;
# - no process of the test is left afterwards.
#
# Usage: test_agent_cri_exec.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_start "$@"

    create box "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600'],
        'env': [{'name': 'GREETING', 'value': 'hello from the pod'}]}]}"
    create ended "{'restartPolicy': 'Never', 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['true']}]}"
    wait_for "box Running" pod/box '{.status.phase}=Running'

    # stdout, stderr and the exit code
    k exec box -- sh -c 'echo out; echo err >&2; exit 3' >"$work/exec.out" 2>"$work/exec.err"
    code=$?
    check "exec exit code 3 (got $code)" test "$code" -eq 3
    check "exec stdout ($(cat "$work/exec.out"))" test "$(cat "$work/exec.out")" = out
    check "exec stderr ($(cat "$work/exec.err"))" grep -qx err "$work/exec.err"
    check "exec true exits 0" k exec box -- true
    check "exec runs in the container: its hostname" test "$(k exec box -- hostname)" = box
    check "exec runs in the container: its env" \
        test "$(k exec box -- sh -c 'echo $GREETING')" = "hello from the pod"
    check "exec runs in the container: busybox is its /bin/sh" \
        sh -c "kubectl exec box -- sh -c 'readlink /bin/sh || ls -l /bin/sh' | grep -q busybox"
    got=$(k exec box -- head -c 4194304 /dev/zero | wc -c)
    check "exec output of 4 MiB arrives whole (got $got)" test "$got" -eq 4194304

    # stdin: a command that ends by itself, then cat, which waits for stdin's end
    got=$(printf 'one\ntwo\n' | k exec -i box -- sh -c 'read a; read b; echo "$b $a"; exit 4' 2>"$work/four.err")
    code=$?
    check "exec -i carries stdin ($got)" test "$got" = "two one"
    check "exec -i: exit code 4 (got $code)" test "$code" -eq 4
    check "exec -i: kubectl names the exit code" grep -q 'exit code 4' "$work/four.err"
    start=$(date +%s)
    echo hi | k exec -i box -- cat >"$work/cat.out" 2>"$work/cat.err"
    code=$?
    took=$(($(date +%s) - start))
    check "exec -i cat: the input comes back ($(cat "$work/cat.out"))" test "$(cat "$work/cat.out")" = hi
    check "exec -i cat: the end of stdin ends it (in ${took}s)" test "$took" -lt 15
    check "exec -i cat: the exit code is reported unknown (exit $code)" \
        sh -c "[ $code -ne 0 ] && grep -q 'cannot end stdin' '$work/cat.err'"

    # a shell on a pseudo-terminal
    python3 "$here/pty_shell.py" box >"$work/tty.out" 2>&1
    check "exec -it: the shell computes 42" grep -q '^42' "$work/tty.out"
    check "exec -it: on a pseudo-terminal" grep -q '/dev/pts/' "$work/tty.out"
    check "exec -it: the terminal's size" grep -q '^33 101' "$work/tty.out"
    check "exec -it: exits 0" grep -q '^EXIT 0' "$work/tty.out"

    # errors
    k exec box -- nosuchcommand >"$work/nocmd.out" 2>"$work/nocmd.err"
    code=$?
    check "exec of a missing command fails (exit $code)" test "$code" -ne 0
    check "exec of a missing command: the runtime's words ($(head -c 300 "$work/nocmd.err"))" \
        grep -q 'nosuchcommand' "$work/nocmd.err"
    wait_for "ended Succeeded" pod/ended '{.status.phase}=Succeeded'
    k exec ended -- true 2>"$work/ended.err"
    code=$?
    check "exec into a completed container fails (exit $code)" test "$code" -ne 0
    check "exec into a completed container: its words ($(cat "$work/ended.err"))" \
        grep -q 'container not found\|not running\|cannot exec' "$work/ended.err"
    k exec box -c nope -- true 2>"$work/bad.err"
    check "exec into a bad container fails" grep -q 'container nope is not valid for pod box' "$work/bad.err"
    k exec nosuchpod -- true 2>"$work/nopod.err"
    check "exec into a missing pod: NotFound" grep -q 'pods "nosuchpod" not found' "$work/nopod.err"

    k delete pod box ended --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
