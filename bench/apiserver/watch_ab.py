#!/usr/bin/env python3
"""watch_ab.py - two ckube builds side by side: watch delivery to many watchers.

    bench/apiserver/watch_ab.py --base OLD/ckube --new NEW/ckube --watch-tool BENCH_WATCH
                                [--watchers 1000] [--updates 100] [--interval-ms 20]
                                [--rounds 3]

Starts both servers at once on SQLite (random loopback ports, a temporary
directory removed at the end, connection limits raised for the watchers),
creates bench.py's watched pod in each, then alternates bench_watch runs
between them, round after round, so both see the same load on a shared
machine. Prints each build's runs (delivery p50 / p99 / max in ms and the
share of deliveries that arrived) and the medians. Raise the open-file limit
first (ulimit -n) for more than about 1,000 watchers.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402


def start(servers, binary, tmp, name, watchers):
    port = b.free_port()
    limit = str(max(10000, watchers + 1000))
    argv = [binary, "server", "--disable-agent", "--disable-dns",
            "--insecure-plain-http", "--listen", f"127.0.0.1:{port}",
            "--data-dir", os.path.join(tmp, name), "--max-connections", limit,
            "--max-connections-per-address", limit]
    proc = servers.start(argv, open(os.path.join(tmp, name + ".log"), "w"))
    b.wait_ready(port, proc, f"ckube ({name})")
    b.namespace(port, "watch")
    pod = json.loads(json.dumps(b.POD))
    pod["metadata"].update(name="w", annotations={"bench.ckube.io/sent": "0"})
    b.must(*b.request(port, "POST", "/api/v1/namespaces/watch/pods", pod), "create watched pod")
    return port, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--watch-tool", required=True)
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--updates", type=int, default=100)
    ap.add_argument("--interval-ms", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckube-watch-ab-")
    servers = b.Servers()
    try:
        pod = json.loads(json.dumps(b.POD))
        pod["metadata"].update(name="w", annotations={"bench.ckube.io/sent": "@SENT@"})
        pod_file = os.path.join(tmp, "watch-pod.json")
        with open(pod_file, "w") as f:
            json.dump(pod, f, separators=(",", ":"))
        started = {k: start(servers, getattr(opts, k), tmp, k, opts.watchers)
                   for k in ("base", "new")}
        runs = {k: [] for k in started}
        for _ in range(opts.rounds):
            for name, (port, proc) in started.items():
                argv = [opts.watch_tool, "127.0.0.1", str(port), "watch", "w", pod_file,
                        str(opts.watchers), str(opts.updates), str(opts.interval_ms),
                        str(proc.pid)]
                out = subprocess.run(argv, capture_output=True, text=True)
                try:
                    runs[name].append(json.loads(out.stdout))
                except ValueError:
                    sys.exit(f"watch_ab: {name}: {out.stdout[-300:]} {out.stderr[-300:]}")
                time.sleep(2)  # let the closed watches go before the next run
        print(f"{opts.rounds} alternating rounds, {opts.watchers} watchers, {opts.updates} PUTs "
              f"{opts.interval_ms} ms apart; load average {os.getloadavg()[0]:.1f} at the end")
        for k in ("base", "new"):
            rs = runs[k]
            print(f"{k:4} delivery p50 {statistics.median(r['p50_us'] for r in rs) / 1000:9.2f} ms"
                  f"  p99 {statistics.median(r['p99_us'] for r in rs) / 1000:9.2f} ms")
            for r in rs:
                print(f"  p50 {r['p50_us'] / 1000:.2f}  p99 {r['p99_us'] / 1000:.2f}  "
                      f"max {r['max_us'] / 1000:.2f} ms  delivered {r['deliveries']}"
                      f"/{r['expected']}  PUT p50 {r['put_p50_us'] / 1000:.2f} ms  "
                      f"RSS watching {r['rss_watching_kib'] / 1024:.0f} MiB")
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
