#!/usr/bin/env python3
"""watch_ab.py - the 1,000-watcher delivery measure of bench/apiserver/bench.py alone,
for two ckube binaries in alternation (a change to the connection layer must not cost
the watch streams):

    watch_ab.py --ckube-a BIN --ckube-b BIN --watch-tool build-rel/bench/bench_watch
                [--runs 3] [--watchers 1000] [--updates 100] [--interval-ms 20]

Each run starts `ckube server --insecure-plain-http --controllers -*` on a free
loopback port with a fresh data directory, creates namespace `watch` and pod `w`, and
runs bench_watch (1,000 watchers of the namespace while one client PUTs the pod every
20 ms; delivery latency from the PUT being sent to each watcher reading the event).
Prints each run and the medians of p50 and p99 for A and B.
"""
import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "w", "annotations": {"bench.ckube.io/sent": "0"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    status = c.getresponse().status
    c.close()
    if status != 201:
        raise SystemExit(f"watch_ab: POST {path}: {status}")


def one_run(ckube, opts):
    port, tmp = free_port(), tempfile.mkdtemp(prefix="ckube-watch-ab-")
    proc = subprocess.Popen([ckube, "server", "--disable-agent", "--disable-dns",
                             "--insecure-plain-http", "--listen",
                             f"127.0.0.1:{port}", "--data-dir", os.path.join(tmp, "data"),
                             "--controllers", "-*"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        post(port, "/api/v1/namespaces", {"metadata": {"name": "watch"}})
        # the pod's ServiceAccount, which the ServiceAccount admission plugin looks up
        post(port, "/api/v1/namespaces/watch/serviceaccounts", {"metadata": {"name": "default"}})
        post(port, "/api/v1/namespaces/watch/pods", POD)
        pod = json.loads(json.dumps(POD))
        pod["metadata"]["annotations"]["bench.ckube.io/sent"] = "@SENT@"
        pod_file = os.path.join(tmp, "pod.json")
        with open(pod_file, "w") as f:
            json.dump(pod, f, separators=(",", ":"))
        argv = [opts.watch_tool, "127.0.0.1", str(port), "watch", "w", pod_file,
                str(opts.watchers), str(opts.updates), str(opts.interval_ms), str(proc.pid)]
        res = json.loads(subprocess.run(argv, capture_output=True, text=True,
                                        check=True).stdout)
        if res["deliveries"] != res["expected"] or res["failed_updates"]:
            raise SystemExit(f"watch_ab: lost events or updates: {res}")
        return res
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckube-a", required=True)
    ap.add_argument("--ckube-b", required=True)
    ap.add_argument("--watch-tool", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--updates", type=int, default=100)
    ap.add_argument("--interval-ms", type=int, default=20)
    opts = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * opts.watchers)), hard))
    results = {"A": [], "B": []}
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for i in range(opts.runs):
        for label, ckube in (("A", opts.ckube_a), ("B", opts.ckube_b)):
            res = one_run(ckube, opts)
            results[label].append(res)
            print(f"run {i + 1} {label}: p50 {res['p50_us'] / 1000:.2f} ms, "
                  f"p99 {res['p99_us'] / 1000:.2f} ms, max {res['max_us'] / 1000:.2f} ms",
                  flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    for label in ("A", "B"):
        runs = results[label]
        print(f"{label}: median p50 {statistics.median(r['p50_us'] for r in runs) / 1000:.2f} ms, "
              f"median p99 {statistics.median(r['p99_us'] for r in runs) / 1000:.2f} ms "
              f"({opts.watchers} watchers, {opts.updates} PUTs {opts.interval_ms} ms apart)")


if __name__ == "__main__":
    main()
