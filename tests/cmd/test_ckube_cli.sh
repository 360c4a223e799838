#!/bin/sh
# test_ckube_cli.sh - the `ckube` command as a user meets it: help, version
# (text and JSON), exit code 2 with a one-line error for bad flags, and a
# server that starts, answers /readyz, refuses a taken port with exit 1, and
# stops cleanly on SIGTERM and SIGINT.
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

# --- the server ---
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
addr="127.0.0.1:$port"

wait_ready() { # wait_ready: up to 10 s for /readyz to say ok
    i=0
    while [ $i -lt 100 ]; do
        [ "$(curl -s "http://$addr/readyz" 2>/dev/null)" = ok ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

start_server() { # start_server EXTRA_FLAGS...
    "$ckube" server --listen "$addr" --data-dir "$work/data" "$@" >"$work/server.out" 2>"$work/server.err" &
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
check "kubeconfig names the server" grep -q "\"http://$addr\"" "$work/data/kubeconfig"
check "json logs are JSON" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines and all("ts" in l and "msg" in l for l in lines), lines
' "$work/server.err"

"$ckube" server --listen "$addr" --data-dir "$work/data2" >/dev/null 2>"$work/err2"
rc=$?
check "taken port exits 1" [ "$rc" -eq 1 ]
check "taken port says so in one line" sh -c "grep -q 'address already in use' '$work/err2' && [ \$(wc -l <'$work/err2') -eq 1 ]"

stop_server TERM
check "SIGTERM logs a clean stop" grep -q "Stopped cleanly" "$work/server.err"

start_server -v 2
check "server restarts on the same port" wait_ready
stop_server INT

"$ckube" server --listen "0.0.0.0:$port" --data-dir "$work/data" >/dev/null 2>"$work/err3"
rc=$?
check "non-loopback listen exits 1" [ "$rc" -eq 1 ]
check "non-loopback listen explains" grep -q "loopback" "$work/err3"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
