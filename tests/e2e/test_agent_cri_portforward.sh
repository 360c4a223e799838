#!/bin/sh
# test_agent_cri_portforward.sh - `kubectl port-forward` to a pod of the CRI runtime: the
# real kubectl against a real `ckube server` (SQLite) and `ckube agent` driving a
# containerd of the test's own, in namespaces of its own (tests/lib/containerd.sh). The
# agent goes through containerd's PortForward streaming server over WebSocket, inside the
# pod's network namespace. Checked:
#
# - busybox httpd in the pod answers through the local port: a page, then 2 MiB whole on
#   a second connection, over kubectl's default WebSocket tunnel and over direct SPDY
#   (KUBECTL_PORT_FORWARD_WEBSOCKETS=false);
# - a port where nothing listens in the pod: kubectl reports the runtime's error
#   (the kubelet's "error forwarding port ... to pod ...") and drops the session;
# - a pod that completed: kubectl refuses it;
# - no container is left afterwards.
#
# Usage: test_agent_cri_portforward.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_e2e_server
    start_agent
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

    create web "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sh', '-c',
        'mkdir -p /www && echo hello from web >/www/index.html && head -c 2097152 /dev/urandom >/www/big && exec httpd -f -p 8080 -h /www']}]}"
    create ended "{'restartPolicy': 'Never', 'containers': [{'name': 'c', 'image': '$busybox_image',
        'command': ['true']}]}"
    wait_for "web Running" pod/web '{.status.phase}=Running'
    poll "httpd answers in the pod" sh -c "kubectl exec web -- wget -qO- http://127.0.0.1:8080/index.html | grep -q web"
    want=$(k exec web -- md5sum /www/big | cut -d' ' -f1)

    pf_pid=""
    # port_forward NAME :REMOTE [ENV...]: kubectl port-forward in the background, ready, on the
# local port kubectl chose ($local)
    port_forward() {
        name=$1 ports=$2
        shift 2
        env "$@" kubectl port-forward pod/web "$ports" >"$work/$name.out" 2>"$work/$name.err" &
        pf_pid=$!
        i=0
        until grep -q '^Forwarding from' "$work/$name.out" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
    local=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$work/$name.out" | head -n 1)
    }
    for mode in true false; do
        port_forward pf.$mode :8080 KUBECTL_PORT_FORWARD_WEBSOCKETS=$mode
        got=$(curl -s -m 10 "http://127.0.0.1:$local/index.html")
        check "websockets=$mode: the pod's page through the forwarded port ($got)" test "$got" = "hello from web"
        got=$(curl -s -m 30 "http://127.0.0.1:$local/big" | md5sum | cut -d' ' -f1)
        check "websockets=$mode: 2 MiB arrive whole on a second connection" test "$got" = "$want"
        check "websockets=$mode: kubectl still runs" kill -0 "$pf_pid"
        kill "$pf_pid" 2>/dev/null
        wait "$pf_pid" 2>/dev/null
    done

    # nothing listens on 8081 in the pod: the runtime's error, then kubectl ends
    port_forward closed :8081
    curl -s -m 10 -o /dev/null "http://127.0.0.1:$local/" 2>/dev/null
    i=0
    while kill -0 "$pf_pid" 2>/dev/null && [ $i -lt 150 ]; do i=$((i + 1)); sleep 0.1; done
    check "closed port: kubectl reports the runtime's error ($(head -c 400 "$work/closed.err"))" \
        grep -q 'error forwarding port 8081 to pod .*8081' "$work/closed.err"
    check "closed port: kubectl ends, as with a kubelet" sh -c "! kill -0 $pf_pid 2>/dev/null"
    kill "$pf_pid" 2>/dev/null
    wait "$pf_pid" 2>/dev/null

    wait_for "ended Succeeded" pod/ended '{.status.phase}=Succeeded'
    kubectl port-forward pod/ended :80 >/dev/null 2>"$work/ended.err"
    check "a completed pod: kubectl refuses ($(cat "$work/ended.err"))" \
        grep -q 'unable to forward port because pod is not running' "$work/ended.err"

    k delete pod web ended --wait=false >/dev/null
    poll "every pod deleted" sh -c "[ -z \"\$(kubectl get pods -o name)\" ]"
    poll "no container left in containerd" sh -c \
        "[ -z \"\$(ctr -a $cri_sock -n k8s.io containers ls -q)\" ]"
    if [ "$failures" -ne 0 ]; then
        for f in "$work"/pf.*.err "$work"/closed.err; do echo "--- $f ---"; cat "$f"; done
        echo "--- agent log ---"
        tail -n 40 "$work/agent.err"
        echo "--- containerd log ---"
        tail -n 20 "$cri_dir/containerd.log"
    fi
    finish
fi

cri_e2e_outside "$@"
