#!/bin/sh
# test_ckube_cli.sh - the `ckube` command as a user meets it: help, version
# (text and JSON), exit code 2 with a one-line error for bad flags, and a
# server that starts, answers /readyz, refuses a taken port with exit 1, and
# stops cleanly on SIGTERM and SIGINT; feature gates from --feature-gates,
# --config and --emulated-version, with flags overriding the file; the agent's
# container runtime settings from its flags and its KubeletConfiguration.
# Usage: test_ckube_cli.sh PATH/TO/ckube
set -u
ckube=$1
work=$(mktemp -d)
server_pid=""
failures=0
passes=0
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT

pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
    desc=$1; shift
    if "$@"; then pass; else fail "$desc"; fi
}

# --- help and version ---
check "help exits 0" "$ckube" --help >"$work/out" 2>&1
check "help names server" grep -q "ckube server" "$work/out"
check "version text" sh -c "'$ckube' version | grep -q '^gitVersion: v1\.32\.'"
"$ckube" version -o json >"$work/version.json"
check "version -o json parses with all fields" python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
want = ["major","minor","gitVersion","gitCommit","gitTreeState","buildDate","goVersion","compiler","platform"]
assert all(isinstance(v[k], str) for k in want), v
assert (v["major"], v["minor"]) == ("1", "32"), v
' "$work/version.json"

# --- usage errors: exit 2, one error line first, then usage ---
expect_usage_error() { # expect_usage_error WORDS_IN_ERROR ARGS...
    words=$1; shift
    "$ckube" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" -eq 2 ] || { fail "ckube $* exited $rc, want 2"; return; }
    head -n 1 "$work/err" | grep -q "^error: .*$words" || { fail "ckube $*: first line: $(head -n 1 "$work/err")"; return; }
    grep -q "^Usage:" "$work/err" || { fail "ckube $*: no usage"; return; }
    [ ! -s "$work/out" ] || { fail "ckube $*: wrote to stdout"; return; }
    pass
}
expect_usage_error "unknown flag: --bogus" server --bogus
expect_usage_error "unknown command: frobnicate" frobnicate
expect_usage_error "invalid value \"many\" for -v" server -v many
expect_usage_error "invalid value \"xml\" for --logging-format" version --logging-format xml
expect_usage_error "invalid value \"yaml\" for --output" version -o yaml
expect_usage_error "flag needs an argument" server --listen
expect_usage_error "unexpected argument: extra" version extra
expect_usage_error "invalid value \"90\" for --event-ttl" server --event-ttl 90
expect_usage_error "invalid value \"-1s\" for --event-ttl" server --event-ttl -1s
expect_usage_error "--kubeconfig is required" dns --listen 127.0.0.1:0
expect_usage_error "invalid value for --ttl" dns --kubeconfig x --ttl 0
expect_usage_error "invalid value for --max-tcp-clients" dns --kubeconfig x --max-tcp-clients 0
expect_usage_error "unknown flag" dns --bogus
expect_usage_error "invalid value \"0\" for --concurrent-gc-syncs" server --concurrent-gc-syncs 0
expect_usage_error "invalid value \"x\" for --concurrent-namespace-syncs" controller-manager --concurrent-namespace-syncs x
check "help lists --concurrent-gc-syncs with its default" sh -c "'$ckube' --help | grep -q -- '--concurrent-gc-syncs N.*(default 20)'"
check "controller-manager help lists it too" sh -c "'$ckube' controller-manager --help | grep -q -- '--concurrent-gc-syncs N.*(default 20)'"
expect_usage_error "unrecognized feature gate: Bogus" server --feature-gates Bogus=true
expect_usage_error "invalid value of WatchList=maybe" server --feature-gates WatchList=maybe
expect_usage_error "invalid value \"1.30\" for --emulated-version: .*\[1.31, 1.32" server --emulated-version 1.30
expect_usage_error "invalid value \"banana\" for --emulated-version" server --emulated-version banana
# the agent's runtime settings: an unknown runtime is a usage error; a known one, the
# KubeletConfiguration's keys and the flags over them reach the start-up log (the
# kubeconfig that cannot be read stops the agent right after it, with exit 1)
expect_usage_error "invalid value for --container-runtime (want cri or process): bogus" \
    agent --container-runtime bogus
agent_start() { # agent_start ARGS...: ckube agent without a server; its stderr in agent.err
    "$ckube" agent --kubeconfig "$work/no-kubeconfig" --node-name n1 --root-dir "$work" "$@" \
        >/dev/null 2>"$work/agent.err"
    echo $?
}
check "--container-runtime process is accepted" [ "$(agent_start --container-runtime process)" = 1 ]
check "the process runtime is logged" grep -q '"Container runtime" runtime="process"$' "$work/agent.err"
check "cri is the default runtime, with kubelet's endpoint" [ "$(agent_start)" = 1 ]
check "the default runtime is logged" grep -q '"Container runtime" runtime="cri" endpoint="unix:///run/containerd/containerd.sock" imageEndpoint="" cniConfDir="/etc/cni/net.d" cniBinDir="/usr/lib/cni" podCIDR=""' "$work/agent.err"
check "no pod DNS settings by default" grep -q '"Pod DNS" clusterDNS="" clusterDomain="" resolvConf="/etc/resolv.conf"' "$work/agent.err"
printf 'kind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///file/containerd.sock\nimageServiceEndpoint: unix:///file/images.sock\npodCIDR: 10.1.0.0/16\n' >"$work/kubelet.yaml"
check "the agent reads the runtime settings of --config" \
    [ "$(agent_start --config "$work/kubelet.yaml" --pod-cidr 10.2.0.0/24 --cni-conf-dir "$work/net.d" --cni-bin-dir "$work/bin" --container-runtime cri)" = 1 ]
check "the file's endpoints, the flags' pod range and CNI directories" grep -q "\"Container runtime\" runtime=\"cri\" endpoint=\"unix:///file/containerd.sock\" imageEndpoint=\"unix:///file/images.sock\" cniConfDir=\"$work/net.d\" cniBinDir=\"$work/bin\" podCIDR=\"10.2.0.0/24\"" "$work/agent.err"
check "the flag wins over the file's containerRuntimeEndpoint" \
    [ "$(agent_start --config "$work/kubelet.yaml" --container-runtime-endpoint unix:///flag.sock)" = 1 ]
check "the flag's endpoint is the one logged" grep -q 'endpoint="unix:///flag.sock" imageEndpoint="unix:///file/images.sock" .* podCIDR="10.1.0.0/16"' "$work/agent.err"
printf 'kind: KubeletConfiguration\npodCIDR: [10.1.0.0/16]\n' >"$work/kubelet-bad.yaml"
check "a podCIDR that is not a string is a usage error" [ "$(agent_start --config "$work/kubelet-bad.yaml")" = 2 ]
check "which names the key" grep -q "podCIDR must be a string" "$work/agent.err"
printf 'kind: KubeletConfiguration\nclusterDNS: [10.96.0.10, "fd00::a"]\nclusterDomain: cluster.local\nresolvConf: ""\n' >"$work/kubelet-dns.yaml"
check "the agent reads clusterDNS, clusterDomain and resolvConf of --config" [ "$(agent_start --config "$work/kubelet-dns.yaml")" = 1 ]
check "as logged" grep -q '"Pod DNS" clusterDNS="10.96.0.10,fd00::a" clusterDomain="cluster.local" resolvConf=""' "$work/agent.err"
check "the flags win over the file's" [ "$(agent_start --config "$work/kubelet-dns.yaml" --cluster-dns 10.0.0.10,10.0.0.11 --cluster-domain k.test --resolv-conf /r.conf)" = 1 ]
check "as logged" grep -q '"Pod DNS" clusterDNS="10.0.0.10,10.0.0.11" clusterDomain="k.test" resolvConf="/r.conf"' "$work/agent.err"
check "a --cluster-dns that is not an address is a usage error" [ "$(agent_start --cluster-dns 10.0.0.10,dns.example)" = 2 ]
check "which says what it wants" grep -q 'invalid value for --cluster-dns' "$work/agent.err"
# the garbage collection's settings: kubelet's defaults, the file's image keys, the flags
# over them, and kubelet's check that the low threshold is below the high one
check "kubelet's GC defaults" [ "$(agent_start)" = 1 ]
check "as logged" grep -q '"Garbage collection" containerGCPeriod="60s" minimumContainerTTLDuration="0s" maxPerPodContainer="1" maxContainers="-1" imageGCHighThresholdPercent="85" imageGCLowThresholdPercent="80" imageMinimumGCAge="120s"' "$work/agent.err"
printf 'kind: KubeletConfiguration\nimageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: 50\nimageMinimumGCAge: 5m\n' >"$work/kubelet-gc.yaml"
check "a --sync-frequency of 0s is a usage error" [ "$(agent_start --sync-frequency 0s)" = 2 ]
check "which names the flag" grep -q 'invalid value for --sync-frequency' "$work/agent.err"
printf 'kind: KubeletConfiguration\nsyncFrequency: soon\n' >"$work/kubelet-sync.yaml"
check "an invalid syncFrequency in --config is a usage error" [ "$(agent_start --config "$work/kubelet-sync.yaml")" = 2 ]
check "which names the key" grep -q 'invalid syncFrequency' "$work/agent.err"
check "the image GC keys of --config and the GC flags" [ "$(agent_start --config "$work/kubelet-gc.yaml" --image-gc-low-threshold 60 --container-gc-period 10s --maximum-dead-containers-per-container 2 --maximum-dead-containers 100 --minimum-container-ttl-duration 1m)" = 1 ]
check "as logged" grep -q '"Garbage collection" containerGCPeriod="10s" minimumContainerTTLDuration="60s" maxPerPodContainer="2" maxContainers="100" imageGCHighThresholdPercent="70" imageGCLowThresholdPercent="60" imageMinimumGCAge="300s"' "$work/agent.err"
check "a low threshold not below the high one is a usage error" [ "$(agent_start --config "$work/kubelet-gc.yaml" --image-gc-high-threshold 50)" = 2 ]
check "which names both" grep -q 'imageGCLowThresholdPercent (--image-gc-low-threshold) 50 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 50' "$work/agent.err"
check "a threshold over 100 is a usage error" [ "$(agent_start --image-gc-high-threshold 101)" = 2 ]
check "a --node-ip that is not an IPv4 address is a usage error" [ "$(agent_start --node-ip fd00::1)" = 2 ]
check "which says what it wants" grep -q 'invalid value for --node-ip (want an IPv4 address)' "$work/agent.err"
printf 'kind: KubeletConfiguration\nclusterDNS: 10.96.0.10\n' >"$work/kubelet-dns-bad.yaml"
check "a clusterDNS that is not a list is a usage error" [ "$(agent_start --config "$work/kubelet-dns-bad.yaml")" = 2 ]
check "which names the key" grep -q "clusterDNS must be a list of IP addresses" "$work/agent.err"
printf 'featureGates: [\n' >"$work/bad.yaml"
"$ckube" server --disable-agent --disable-dns --config "$work/bad.yaml" --data-dir "$work/data" >/dev/null 2>"$work/err"
rc=$?
check "malformed --config file exits 1" [ "$rc" -eq 1 ]
check "malformed --config file names the file" grep -q "bad.yaml" "$work/err"

# --- the server ---
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
addr="127.0.0.1:$port"

admin_curl() { # admin_curl ARGS...: curl with the CA and the admin certificate
    curl -s --cacert "$work/data/pki/ca.crt" --cert "$work/data/pki/admin.crt" \
        --key "$work/data/pki/admin.key" "$@"
}

wait_ready() { # wait_ready: up to 10 s for /readyz to say ok and the KUBECONFIG line
    i=0
    while [ $i -lt 100 ]; do
        [ "$(curl -s --cacert "$work/data/pki/ca.crt" "https://$addr/readyz" 2>/dev/null)" = ok ] &&
            grep -q "^export KUBECONFIG=" "$work/server.out" && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

start_server() { # start_server EXTRA_FLAGS...
    "$ckube" server --disable-agent --disable-dns --listen "$addr" --data-dir "$work/data" "$@" >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
}

stop_server() { # stop_server SIGNAL: the server must exit 0 within 10 s
    kill -"$1" "$server_pid"
    i=0
    while kill -0 "$server_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    wait "$server_pid"
    rc=$?
    server_pid=""
    [ "$rc" -eq 0 ] || fail "server exited $rc after SIG$1"
    pass
}

start_server --logging-format json
check "server becomes ready" wait_ready
check "server prints the KUBECONFIG line" grep -q "^export KUBECONFIG=.*/kubeconfig$" "$work/server.out"
check "kubeconfig names the server" grep -q "\"https://$addr\"" "$work/data/kubeconfig"
check "kubeconfig embeds the CA" grep -q "certificate-authority-data" "$work/data/kubeconfig"
check "kubeconfig is private" [ "$(stat -c %a "$work/data/kubeconfig")" = 600 ]
check "the PKI's keys are private" [ "$(stat -c %a "$work/data/pki/ca.key")" = 600 ]
check "json logs are JSON" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines and all("ts" in l and "msg" in l for l in lines), lines
' "$work/server.err"

"$ckube" server --disable-agent --disable-dns --listen "$addr" --data-dir "$work/data2" >/dev/null 2>"$work/err2"
rc=$?
check "taken port exits 1" [ "$rc" -eq 1 ]
check "taken port says so in one line" sh -c "grep -q 'address already in use' '$work/err2' && [ \$(wc -l <'$work/err2') -eq 1 ]"

stop_server TERM
check "SIGTERM logs a clean stop" grep -q "Stopped cleanly" "$work/server.err"

start_server -v 2
check "server restarts on the same port" wait_ready
stop_server INT

# --- feature gates: file, flags over the file, emulated version ---
printf 'apiVersion: ckube.io/v1alpha1\nfeatureGates:\n  WatchList: false\n  PodLevelResources: true\n' >"$work/config.yaml"
gate_metric() { # gate_metric NAME: the kubernetes_feature_enabled value
    admin_curl "https://$addr/metrics" | sed -n "s/^kubernetes_feature_enabled{name=\"$1\",.*} //p"
}
initial_events_code() {
    admin_curl -o /dev/null -w '%{http_code}' --max-time 3 \
        "https://$addr/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
}
start_server --config "$work/config.yaml" --feature-gates PodLevelResources=false \
    --feature-gates WatchList=true,PodLevelResources=true --feature-gates PodLevelResources=false
check "server with gates becomes ready" wait_ready
check "the last --feature-gates value wins over the file (WatchList on)" [ "$(gate_metric WatchList)" = 1 ]
check "a later flag overrides an earlier one (PodLevelResources off)" [ "$(gate_metric PodLevelResources)" = 0 ]
check "WatchList on: sendInitialEvents is served" [ "$(initial_events_code)" = 200 ]
check "start-up logs every gate" grep -q "Feature gates: emulationVersion=1.32 .*WatchList=true" "$work/server.err"
stop_server TERM
start_server --config "$work/config.yaml"
check "server with the config file becomes ready" wait_ready
check "the file alone sets WatchList off" [ "$(gate_metric WatchList)" = 0 ]
check "the file alone sets PodLevelResources on" [ "$(gate_metric PodLevelResources)" = 1 ]
check "WatchList off: sendInitialEvents is 422" [ "$(initial_events_code)" = 422 ]
stop_server TERM
start_server --emulated-version 1.31 --feature-gates WatchList=true
check "server emulating 1.31 becomes ready" wait_ready
check "emulating 1.31 logs the version" grep -q "Feature gates: emulationVersion=1.31 " "$work/server.err"
check "WatchList is alpha at 1.31" sh -c "curl -s --cacert '$work/data/pki/ca.crt' --cert '$work/data/pki/admin.crt' --key '$work/data/pki/admin.key' 'https://$addr/metrics' | grep -q '^kubernetes_feature_enabled{name=\"WatchList\",stage=\"ALPHA\"} 1'"
stop_server TERM

"$ckube" server --disable-agent --disable-dns --insecure-plain-http --listen "0.0.0.0:$port" --data-dir "$work/data" >/dev/null 2>"$work/err3"
rc=$?
check "non-loopback plain-HTTP listen exits 1" [ "$rc" -eq 1 ]
check "non-loopback plain-HTTP listen explains" grep -q "loopback" "$work/err3"
expect_usage_error "--anonymous-auth: want true or false" server --anonymous-auth maybe
expect_usage_error "cannot be combined" server --insecure-plain-http --token-auth-file x
# the node's flags are checked before anything starts; --help warns about the process runtime
"$ckube" server --help >"$work/help" 2>&1
check "server --help warns that process pods are not isolated" grep -q "NOT ISOLATED" "$work/help"
expect_usage_error "--container-runtime: want cri or process" server --container-runtime docker
expect_usage_error "apply to the cri runtime only" server --container-runtime process \
    --container-runtime-endpoint unix:///nowhere.sock
expect_usage_error "--node-name: want a lowercase DNS subdomain" server --node-name Bad_Name
expect_usage_error "invalid value \"0\" for --agent-port" server --agent-port 0

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
