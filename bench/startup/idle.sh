#!/bin/bash
# idle.sh - how long `ckube server` takes to answer /readyz, and how much memory it
# holds once started, with its in-process controllers and without:
#
#   bench/startup/idle.sh [RESTARTS]          (default 7)
#   CKUBE=BINARY bench/startup/idle.sh        (another build: to compare two)
#   bench/startup/idle.sh --breakdown         (one restart each, and what its RSS is
#                                              made of: bench/startup/breakdown.sh)
#
# Builds ckube as users run it (build-rel: RelWithDebInfo, jemalloc), then for each of
# "--controllers=*" (the default) and "--controllers=-*": a first start on a new data
# directory (it makes the PKI), then RESTARTS restarts on that same directory. Each
# start is timed from the fork to the first 200 from /readyz (curl over HTTPS with the
# cluster CA, asked every 5 ms); 2 s later the server's VmRSS, RssAnon, RssFile and
# thread count are read from /proc, and its CPU time (user + system) at /readyz and
# at the read. Prints one line per start and the medians and ranges of the restarts,
# with the 1-minute load average before and after (the time to /readyz moves with it
# on a shared machine; the CPU times and memory move much less).
set -eu
cd "$(dirname "$0")/../.."
breakdown=false
if [ "${1:-}" = --breakdown ]; then
    breakdown=true
    set -- 1
fi
restarts=${1:-7}
. bench/lib.sh
ckube=$(bench_ckube)
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
ticks=$(getconf CLK_TCK)

# cpu_ms PID: user + system CPU of the process so far, in ms
cpu_ms() { awk -v t="$ticks" '{ print int(($14 + $15) * 1000 / t) }' "/proc/$1/stat"; }
status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# one_start DATA_DIR CONTROLLERS: prints "ms cpu_ready_ms cpu_2s_ms rss anon file threads"
one_start() {
    local dir=$1 controllers=$2 port start end
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    start=$(date +%s%N)
    "$ckube" server --disable-agent --disable-dns --data-dir "$dir" --listen "127.0.0.1:$port" --controllers="$controllers" \
        >>"$work/server.out" 2>>"$work/server.err" &
    server_pid=$!
    local tries=0
    until [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/pki/ca.crt" \
        "https://127.0.0.1:$port/readyz" 2>/dev/null)" = 200 ]; do
        kill -0 "$server_pid" 2>/dev/null || { echo "server exited; see its log:" >&2; tail "$work/server.err" >&2; exit 1; }
        tries=$((tries + 1))
        [ $tries -lt 12000 ] || { echo "no /readyz in a minute" >&2; exit 1; }
        sleep 0.005
    done
    end=$(date +%s%N)
    local cpu_ready cpu_idle
    cpu_ready=$(cpu_ms "$server_pid")
    sleep 2
    cpu_idle=$(cpu_ms "$server_pid")
    echo "$(((end - start) / 1000000)) $cpu_ready $cpu_idle $(status "$server_pid" VmRSS)" \
        "$(status "$server_pid" RssAnon) $(status "$server_pid" RssFile)" \
        "$(status "$server_pid" Threads)"
    ! $breakdown || bench/startup/breakdown.sh "$server_pid" >>"$work/breakdown"
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}


echo "ckube: $ckube; $(nproc) CPUs; load average (1 min) at start $(cut -d' ' -f1 /proc/loadavg)"
for controllers in '*' '-*'; do
    dir=$work/data-$RANDOM
    echo
    echo "--controllers=$controllers"
    echo "start     ms  cpu@ready  cpu@+2s  VmRSS  RssAnon  RssFile  threads  (ms, KiB)"
    printf "first %8s %10s %8s %6s %8s %8s %8s\n" $(one_start "$dir" "$controllers")
    : >"$work/runs"
    : >"$work/breakdown"
    for i in $(seq "$restarts"); do
        line=$(one_start "$dir" "$controllers")
        echo "$line" >>"$work/runs"
        printf "restart %6s %10s %8s %6s %8s %8s %8s\n" $line
    done
    echo "restarts, median (range): to /readyz $(cut -d' ' -f1 "$work/runs" | summary) ms;" \
        "CPU at /readyz $(cut -d' ' -f2 "$work/runs" | summary) ms, 2 s later" \
        "$(cut -d' ' -f3 "$work/runs" | summary) ms;" \
        "VmRSS $(cut -d' ' -f4 "$work/runs" | summary) KiB (anon $(cut -d' ' -f5 "$work/runs" | summary));" \
        "threads $(cut -d' ' -f7 "$work/runs" | summary)"
    ! $breakdown || { echo; cat "$work/breakdown"; }
done
echo
echo "load average (1 min) at the end $(cut -d' ' -f1 /proc/loadavg)"
