#!/bin/sh
# test_agent_cri_ephemeral.sh - `kubectl debug` on a pod of the CRI runtime: the real
# kubectl against a real `ckube server` (SQLite) and `ckube agent` driving a containerd of
# the test's own, in namespaces of its own (tests/lib/containerd.sh). Checked:
#
# - `kubectl debug -it POD --image=IMAGE` from a pseudo-terminal: the ephemeral container
#   starts in the pod's sandbox, kubectl attaches to its shell on its own terminal, and
#   the shell's exit ends kubectl with 0;
# - `kubectl debug POD --image=IMAGE --container=dbg -- CMD`: the command runs once (its
#   status terminated with exit code 0, no restart) and `kubectl logs -c dbg` reads its
#   output; the pod's own container runs on, and shares the sandbox's network (same
#   hostname);
# - `kubectl exec -c` into an ephemeral container that still runs;
# - the agent closes its stream to the runtime when each session ends (its --v=2 log).
#
# Usage: test_agent_cri_ephemeral.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_server_flags=--v=2 # the streams' byte counts in the logs, for a failure's report
    cri_e2e_server
    start_node --v=2

    create box "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep',
        '1000']}], 'terminationGracePeriodSeconds': 2}"
    wait_for "box Running" pod/box '{.status.phase}=Running'

    python3 "$here/pty_shell.py" -- kubectl debug -it box --image="$busybox_image" \
        --container=shell -- sh >"$work/debug.out" 2>&1
    check "debug -it: the shell computes 42 (the terminal showed: $(cat -v "$work/debug.out"))" \
        grep -q '^42' "$work/debug.out"
    check "debug -it: on a pseudo-terminal of the set size" \
        sh -c "grep -q '/dev/pts/' '$work/debug.out' && grep -q '^33 101' '$work/debug.out'"
    check "debug -it: kubectl exits 0 once the shell exits" grep -q '^EXIT 0' "$work/debug.out"
    if grep -q '^RETYPED' "$work/debug.out"; then
        echo "note: debug -it: the first line typed had no answer in 10 s and was typed again"
    fi
    poll "debug -it: the shell's container ended, reported" sh -c \
        "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[?(@.name==\"shell\")].state.terminated.exitCode}' | grep -qx 0"

    k debug box --image="$busybox_image" --container=dbg -- sh -c 'echo hi from $(hostname)' \
        >"$work/dbg.out" 2>&1
    poll "debug: dbg ran once and ended with 0" sh -c \
        "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[?(@.name==\"dbg\")].state.terminated.exitCode}' | grep -qx 0"
    check "debug: never restarted" test \
        "$(jp pod/box '{.status.ephemeralContainerStatuses[?(@.name=="dbg")].restartCount}')" = 0
    check "debug: a containerID from the runtime" sh -c \
        "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[?(@.name==\"dbg\")].containerID}' | grep -q '://'"
    check "logs -c dbg: its output, in the pod's sandbox ($(k logs box -c dbg 2>&1))" \
        test "$(k logs box -c dbg)" = "hi from $(k exec box -c c -- hostname)"
    check "the pod's container runs on" test "$(jp pod/box '{.status.containerStatuses[0].restartCount}')" = 0

    k debug box --image="$busybox_image" --container=long -- sleep 1000 >/dev/null 2>&1
    poll "debug: long runs" sh -c \
        "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[?(@.name==\"long\")].state.running.startedAt}' | grep -q ."
    check "exec -c into a running ephemeral container" test "$(k exec box -c long -- echo inside)" = inside
    # the attach and the two execs: each session's end frees its stream to the runtime
    poll "the agent closed its three streams to the runtime" sh -c \
        "[ \"\$(grep -c 'Runtime stream closed' '$work/agent.err')\" -ge 3 ]"

    k delete pod box --wait=true --timeout=60s >/dev/null 2>&1
    cri_e2e_finish
fi

cri_e2e_outside "$@"
