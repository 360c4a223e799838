#!/bin/sh
# test_agent_cri_sidecar.sh - sidecar containers (init containers with restartPolicy
# Always, KEP-753) on the CRI runtime: the real kubectl against a real `ckube server`
# (SQLite) and `ckube agent` driving a containerd of the test's own, in namespaces of
# its own (tests/lib/containerd.sh). Usage: test_agent_cri_sidecar.sh PATH/TO/ckube.
# Checked, with a restartPolicy Never pod:
#
# - the order: the sidecar (a loop that writes a file into a shared emptyDir) starts
#   first; the regular init container after it, once its startupProbe passed, finds
#   the file; the app container runs while the sidecar keeps running;
# - initContainerStatuses: the sidecar started and ready (its readinessProbe), the
#   regular one Completed; the pod Initialized and Ready;
# - the sidecar killed (SIGTERM from inside, exit 0) is restarted though the pod's
#   restartPolicy is Never, and the app goes on;
# - the app container exits 0: the sidecar is stopped after it and the pod Succeeded;
# - a running pod deleted: its app container is stopped first, its two sidecars after it
#   in reverse order (each writes its name to a hostPath file when SIGTERM reaches it).
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_start "$@"

    mounts="[{'name': 'shared', 'mountPath': '/shared'}]"
    alive="{'exec': {'command': ['test', '-f', '/shared/alive']}, 'periodSeconds': 1}"
    create side "{'restartPolicy': 'Never', 'volumes': [{'name': 'shared', 'emptyDir': {}}],
        'initContainers': [
          {'name': 'sidecar', 'image': '$busybox_image', 'restartPolicy': 'Always',
           'volumeMounts': $mounts, 'startupProbe': $alive, 'readinessProbe': $alive,
           'command': ['sh', '-c', 'trap \"exit 0\" TERM; echo started >>/shared/starts; sleep 2; date >/shared/alive; while true; do sleep 1; done']},
          {'name': 'check', 'image': '$busybox_image', 'volumeMounts': $mounts,
           'command': ['sh', '-c', 'test -f /shared/alive && echo saw >/shared/check']}],
        'containers': [{'name': 'app', 'image': '$busybox_image', 'volumeMounts': $mounts,
           'command': ['sh', '-c', 'trap \"exit 0\" TERM; while [ ! -f /shared/done ]; do sleep 1; done']}]}"
    wait_for "side Running" pod/side '{.status.phase}=Running'
    wait_for "side Ready (the sidecar's readiness counts)" pod/side \
        '{.status.conditions[?(@.type=="Ready")].status}=True'
    check "side Initialized" test \
        "$(jp pod/side '{.status.conditions[?(@.type=="Initialized")].status}')" = True
    check "the regular init container found the sidecar's file: it ran after the sidecar started" \
        test "$(k exec side -c app -- cat /shared/check)" = saw
    check "the regular init container succeeded at its first attempt" test \
        "$(jp pod/side '{.status.initContainerStatuses[1].restartCount} {.status.initContainerStatuses[1].state.terminated.reason}')" = "0 Completed"
    check "the sidecar is running, started and ready" test \
        "$(jp pod/side '{.status.initContainerStatuses[0].started} {.status.initContainerStatuses[0].ready} {.status.initContainerStatuses[0].state.running.startedAt}' | cut -d' ' -f1,2)" = "true true"
    check "the sidecar's state is running" test -n \
        "$(jp pod/side '{.status.initContainerStatuses[0].state.running.startedAt}')"
    check "the sidecar runs alongside the app" test \
        "$(k exec side -c sidecar -- sh -c 'test -f /shared/alive && echo alive')" = alive

    # killed, the sidecar is restarted whatever the pod's restartPolicy; the app goes on
    k exec side -c sidecar -- kill 1 >/dev/null 2>&1
    wait_for "the sidecar restarted" pod/side '{.status.initContainerStatuses[0].restartCount}=1'
    check "its last state: it ended by its trap (exit 0)" test \
        "$(jp pod/side '{.status.initContainerStatuses[0].lastState.terminated.exitCode}')" = 0
    wait_for "the sidecar running again" pod/side \
        '{.status.initContainerStatuses[0].started}=true'
    check "the sidecar started twice" test "$(k exec side -c app -- cat /shared/starts | wc -l)" -eq 2
    check "the app kept running (not restarted)" test \
        "$(jp pod/side '{.status.containerStatuses[0].restartCount}')" = 0
    check "the app is running" test -n \
        "$(jp pod/side '{.status.containerStatuses[0].state.running.startedAt}')"
    check "the check init container did not run again" test \
        "$(jp pod/side '{.status.initContainerStatuses[1].restartCount}')" = 0

    # the app ends: the sidecar is stopped after it, and the pod Succeeded
    k exec side -c app -- touch /shared/done
    wait_for "side Succeeded" pod/side '{.status.phase}=Succeeded'
    check "the app Completed" test \
        "$(jp pod/side '{.status.containerStatuses[0].state.terminated.reason}')" = Completed
    check "the sidecar stopped (terminated, by its trap)" test \
        "$(jp pod/side '{.status.initContainerStatuses[0].state.terminated.exitCode}')" = 0
    app_end=$(jp pod/side '{.status.containerStatuses[0].state.terminated.finishedAt}')
    side_end=$(jp pod/side '{.status.initContainerStatuses[0].state.terminated.finishedAt}')
    check "the sidecar stopped after the app ($app_end, $side_end)" \
        sh -c "[ -n '$app_end' ] && [ -n '$side_end' ] && ! [ '$side_end' \\< '$app_end' ]"
    check "the sidecar was not restarted after the app ended" test \
        "$(jp pod/side '{.status.initContainerStatuses[0].restartCount}')" = 1

    # deletion: the app first, then the sidecars, the last one first
    mkdir -p "$work/order"
    log="[{'name': 'log', 'mountPath': '/log'}]"
    # loop NAME DELAY: on SIGTERM, waits DELAY s and writes NAME: signalled at once, the
    # three would write in the reverse order
    loop() { echo "trap 'sleep $2; echo $1 >>/log/order; exit 0' TERM; while true; do sleep 1; done"; }
    create ordered "{'terminationGracePeriodSeconds': 20,
        'volumes': [{'name': 'log', 'hostPath': {'path': '$work/order', 'type': 'Directory'}}],
        'initContainers': [
          {'name': 'first', 'image': '$busybox_image', 'restartPolicy': 'Always',
           'volumeMounts': $log, 'command': ['sh', '-c', \"$(loop first 0)\"]},
          {'name': 'second', 'image': '$busybox_image', 'restartPolicy': 'Always',
           'volumeMounts': $log, 'command': ['sh', '-c', \"$(loop second 1)\"]}],
        'containers': [{'name': 'app', 'image': '$busybox_image', 'volumeMounts': $log,
           'command': ['sh', '-c', \"$(loop app 2)\"]}]}"
    wait_for "ordered Ready" pod/ordered '{.status.conditions[?(@.type=="Ready")].status}=True'
    k delete pod ordered --wait=true --timeout=60s >/dev/null 2>&1
    check "stopped in order: app, then second, then first ($(cat "$work/order/order" | tr '\n' ' '))" \
        test "$(cat "$work/order/order" | tr '\n' ' ')" = "app second first "

    k delete pod side --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
