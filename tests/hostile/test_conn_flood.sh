#!/bin/sh
# test_conn_flood.sh - kubectl keeps working while a slow-header flood from the
# same address holds more connections than the server allows one address
# (bench/hostile/conn_flood.py, short form: 300 TLS connections against a bound
# of 100, a header field every second, a 2 s header deadline); and the server
# refuses a data directory other users may write into.
#
# Usage: test_conn_flood.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/../e2e/lib.sh"
flood_py="$here/../../bench/hostile/conn_flood.py"

start_server --controllers "-*" --max-connections-per-address 100 --request-header-timeout 2s

python3 "$flood_py" flood --tls --port "$port" --connections 300 --interval 1 --duration 12 \
    >"$work/flood.out" 2>&1 &
flood_pid=$!
i=0
until grep -q "flood up" "$work/flood.out" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$flood_pid" 2>/dev/null; then
        echo "the flood did not start:"; cat "$work/flood.out"; exit 1
    fi
    sleep 0.1
done
sleep 3 # past the header deadline: the first flood connections were cut and re-opened

for n in 1 2 3; do
    check "kubectl get pods during the flood ($n)" k get pods -n default
done
check "/readyz during the flood" test "$(kurl "$url/readyz")" = ok
if echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"flooded"}}' |
    k create -f - >"$work/create.out" 2>&1; then
    pass
else
    fail "a create during the flood: $(cat "$work/create.out")"
fi
check "the flood is still running" kill -0 "$flood_pid"
wait "$flood_pid"
check "the server cut flood connections" grep -q "cut [1-9]" "$work/flood.out"
check "the server survived the flood" test "$(kurl "$url/readyz")" = ok
stop_server

# a data directory others may write into is refused
shared="$work/shared-data"
mkdir "$shared" && chmod 0777 "$shared"
if "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$shared" >"$work/shared.out" 2>&1; then
    fail "a world-writable data directory was accepted"
else
    check "the refusal says why" grep -q "writable by nobody else" "$work/shared.out"
fi
finish
