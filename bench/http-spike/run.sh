#!/bin/sh
# run.sh - the HTTP-layer spike of issue 43, measured beside nginx:
# bench/http-spike/run.sh [bench.py options, e.g. --runs 5 --streams 1000,10000]
#
# Installs what it needs with apt when missing (libevent-dev, libh2o-evloop-dev,
# libhttp-parser-dev, libgnutls28-dev, nghttp2-client for h2load, wrk, nginx-light),
# builds the spike servers and clients with this directory's Makefile (not
# ckube's build), raises the open-file limit for 10,000 watches, and runs
# bench.py. About ten minutes with the defaults.
set -eu
cd "$(dirname "$0")/../.."
. bench/lib.sh
cd bench/http-spike

missing=""
for p in libevent-dev libh2o-evloop-dev libhttp-parser-dev libnghttp2-dev libssl-dev libgnutls28-dev \
    nghttp2-client wrk; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
bench_install run.sh $missing

# the programs go to SPIKE_BUILD when set (kept), else to a temp dir (removed)
if [ -n "${SPIKE_BUILD:-}" ]; then
    out=$SPIKE_BUILD
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
make -s -C . O="$out" all >/dev/null
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "uptime: $(uptime)"
PATH="$PATH:/usr/sbin"
export PATH
python3 bench.py --dir "$out" "$@"
echo "uptime: $(uptime)"
