#!/bin/sh
# run.sh - queries per second and latency of `ckube dns` for Service names, beside
# dnsmasq answering the same names from its configuration in the same run.
#
# Starts `ckube server --disable-agent` on loopback, creates SERVICES ClusterIP Services,
# starts `ckube dns` for them, and drives it with dnsperf (DNS-OARC's load tool) over UDP
# with the names of those Services, A records, in two ways:
#   - throughput: as fast as answers come back (dnsperf's 100 queries in flight), SECONDS
#     long: queries per second, dnsperf's average latency, and the server's CPU seconds
#     per 1,000 queries (utime + stime from /proc);
#   - latency: a fixed 5,000 queries per second with every answer's latency logged
#     (dnsperf -v): p50, p99 and the maximum.
# dnsmasq (Debian's dnsmasq-base), given one host-record per Service on another loopback
# port, takes the same two runs as the reference. The rounds alternate ckube and dnsmasq.
# Everything runs on loopback; the processes are started here and stopped by PID.
#
# Needs: dnsperf (Debian's dnsperf), kubectl, curl, python3; dnsmasq for the reference
# (`apt-get install dnsperf dnsmasq-base`; without dnsmasq only ckube is measured).
#
# Usage: bench/dns/run.sh PATH/TO/ckube [SECONDS] [ROUNDS] [SERVICES]
set -eu
ckube=$1
secs=${2:-5}
rounds=${3:-2}
nsvc=${4:-100}
command -v dnsperf >/dev/null || { echo "run.sh: needs dnsperf (apt-get install dnsperf)" >&2; exit 1; }
work=$(mktemp -d)
server_pid="" dns_pid="" dm_pid=""
cleanup() {
    for p in $dm_pid $dns_pid $server_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port=$(free_port)
"$ckube" server --disable-agent --listen "127.0.0.1:$port" --data-dir "$work/data" \
    >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
export KUBECONFIG="$work/data/kubeconfig"
i=0
until [ -f "$KUBECONFIG" ] && kubectl get --raw /readyz >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo "server not ready" >&2; exit 1; }; sleep 0.1
done
: >"$work/queries"
: >"$work/dnsmasq.conf"
n=0
while [ $n -lt "$nsvc" ]; do
    kubectl create service clusterip "svc-$n" --tcp=80 >/dev/null
    echo "svc-$n.default.svc.cluster.local A" >>"$work/queries"
    n=$((n + 1))
done
kubectl get services -n default -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.clusterIP}{"\n"}{end}' |
    while read -r name ip; do
        echo "host-record=$name.default.svc.cluster.local,$ip" >>"$work/dnsmasq.conf"
    done

dns_port=$(free_port)
echo "nameserver 127.0.0.1:1" >"$work/resolv.conf"
"$ckube" dns --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$dns_port" \
    --resolv-conf "$work/resolv.conf" >"$work/dns.out" 2>"$work/dns.err" &
dns_pid=$!
i=0
until [ "$(dig @127.0.0.1 -p "$dns_port" +short svc-0.default.svc.cluster.local 2>/dev/null)" != "" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo "ckube dns not answering" >&2; exit 1; }; sleep 0.1
done
if command -v dnsmasq >/dev/null 2>&1; then
    dm_port=$(free_port)
    dnsmasq --keep-in-foreground --port="$dm_port" --listen-address=127.0.0.1 --bind-interfaces \
        --no-resolv --no-hosts --conf-file="$work/dnsmasq.conf" --pid-file= --user="$(id -un)" \
        2>"$work/dnsmasq.err" &
    dm_pid=$!
    sleep 0.3
else
    echo "(no dnsmasq: the reference is skipped; apt-get install dnsmasq-base)"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# throughput NAME PORT PID
throughput() {
    before=$(cpu_ticks "$3")
    dnsperf -s 127.0.0.1 -p "$2" -d "$work/queries" -l "$secs" -c 1 >"$work/perf.out" 2>&1
    after=$(cpu_ticks "$3")
    awk -v name="$1" -v ticks=$((after - before)) -v hz="$hz" '
        /Queries per second/ { qps = $4 }
        /Queries completed/ { done = $3 }
        /Queries lost/ { lost = $3 }
        /Average Latency/ { avg = $4 * 1000 }
        END { printf "%-7s throughput: %8.0f queries/s, average %.3f ms, lost %d, CPU %.1f ms per 1,000 queries\n",
                     name, qps, avg, lost, done ? ticks / hz * 1000 * 1000 / done : 0 }' "$work/perf.out"
}
# latency NAME PORT
latency() {
    dnsperf -s 127.0.0.1 -p "$2" -d "$work/queries" -l "$secs" -c 1 -Q 5000 -v 2>/dev/null |
        awk '/^> NOERROR/ { print $NF * 1000 }' | sort -n >"$work/lat"
    awk -v name="$1" '{ v[NR] = $1 } END {
        printf "%-7s latency at 5,000 queries/s: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d answers)\n",
               name, v[int(NR * 0.50)], v[int(NR * 0.99)], v[NR], NR }' "$work/lat"
}

echo "$nsvc Services, ${secs} s runs, $rounds rounds; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
    throughput ckube "$dns_port" "$dns_pid"
    [ -n "$dm_pid" ] && throughput dnsmasq "$dm_port" "$dm_pid"
    latency ckube "$dns_port"
    [ -n "$dm_pid" ] && latency dnsmasq "$dm_port"
    r=$((r + 1))
done
echo "ckube dns RSS: $(awk '/VmRSS/ {print $2, $3}' "/proc/$dns_pid/status"), threads: $(awk '/Threads/ {print $2}' "/proc/$dns_pid/status")"
