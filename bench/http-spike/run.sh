#!/bin/sh
# run.sh - the HTTP-layer spike of issue 43, measured beside nginx:
# bench/http-spike/run.sh [bench.py options, e.g. --runs 5 --streams 1000,10000]
#
# Installs what it needs with apt when missing (libevent-dev, libh2o-evloop-dev,
# libhttp-parser-dev, nghttp2-client for h2load, wrk, nginx-light), builds the
# two spike servers and the watch client with this directory's Makefile (not
# ckube's build), raises the open-file limit for 10,000 watches, and runs
# bench.py. About six minutes with the defaults.
set -eu
cd "$(dirname "$0")"

missing=""
for p in libevent-dev libh2o-evloop-dev libhttp-parser-dev libnghttp2-dev libssl-dev nghttp2-client wrk; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
if [ -n "$missing" ]; then
    echo "run.sh: installing:$missing"
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends \
        $missing </dev/null >/dev/null
fi

out="${SPIKE_BUILD:-$(mktemp -d)}"
make -s -C . O="$out" all >/dev/null
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "uptime: $(uptime)"
PATH="$PATH:/usr/sbin"
export PATH
python3 bench.py --dir "$out" "$@"
echo "uptime: $(uptime)"
