#!/bin/sh
# run.sh - the failure drill of several servers on one etcd cluster: a 3-member etcd
# (Debian's etcd-server on loopback ports, tests/store/etcd-test-env.sh) and two
# `ckube server`s under steady writes from clients that fail over between them, while
# the drill kills a server, stops a member and restarts it on its data directory, kills
# the etcd leader, stops and resumes a member, and restarts the controllers' leader.
# drill.py prints the report (docs/benchmarks.md).
#
# Usage: bench/ha/run.sh PATH/TO/ckube [SECONDS_BETWEEN_FAULTS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../../tests/store/etcd-test-env.sh" 3 \
    python3 "$here/drill.py" "$1" @ETCD@ "${2:-8}"
