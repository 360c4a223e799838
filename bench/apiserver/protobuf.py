#!/usr/bin/env python3
"""protobuf.py - GET of one pod and LIST of 1,000 pods in Kubernetes' protobuf
beside the same requests in JSON, on one ckube server in one run.

Run through bench/apiserver/run-protobuf.sh, which builds ckube optimised and calls

    protobuf.py --ckube BIN [--runs 3] [--seconds 5] [--pods 1000]

The server (SQLite, plain HTTP on a loopback port the kernel picked, in a
temporary directory) gets the pod of bench.py and a namespace of --pods
copies of it. Each run measures, with wrk, JSON then protobuf (the only
difference is the Accept header; every answer is checked to be in the
asked media type first):
  - GET of one pod: wrk, 2 threads, 64 connections, requests/s;
  - LIST of the namespace: wrk, 1 thread, 1 connection, median latency.
JSON is the reference: ckube stores JSON and serves the stored bytes, so a
protobuf answer costs a JSON parse and a protobuf encoding on top.
Prints the raw runs, the medians and the ratios.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import POD, UNITS, Servers, median, must, namespace, request, start_ckube  # noqa: E402

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def fetch(port, path, accept):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Accept": accept})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    if resp.status != 200 or resp.getheader("Content-Type") != accept:
        sys.exit(f"bench: GET {path} as {accept}: {resp.status} {resp.getheader('Content-Type')}")
    if accept == PROTOBUF and body[:4] != b"k8s\0":
        sys.exit(f"bench: GET {path}: not Kubernetes protobuf")
    return body


def wrk(url, threads, conns, seconds, accept):
    argv = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--latency",
            "-H", f"Accept: {accept}", url]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    out = done.stdout
    if re.search(r"Non-2xx or 3xx responses: (\d+)", out) or re.search(r"Socket errors", out):
        sys.exit(f"bench: failed requests to {url}:\n{out}")
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)", out, re.M)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": float(p50.group(1)) * UNITS[p50.group(2)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--pods", type=int, default=1000)
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckube-bench-proto-")
    servers = Servers()
    try:
        report(opts, tmp, servers)
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(opts, tmp, servers):
    load_start = os.getloadavg()[0]
    port, _ = start_ckube(servers, opts.ckube, tmp, "sqlite")
    pod_path = "/api/v1/namespaces/default/pods/bench-pod"
    namespace(port, "default")
    must(*request(port, "POST", "/api/v1/namespaces/default/pods", POD), "create bench-pod")
    namespace(port, "list")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(opts.pods):
        p = json.loads(json.dumps(POD))
        p["metadata"]["name"] = f"pod-{i:04d}"
        must(*request(port, "POST", "/api/v1/namespaces/list/pods", p, conn), "create list pod")
    conn.close()
    list_path = "/api/v1/namespaces/list/pods"
    sizes = {(path, accept): len(fetch(port, path, accept))
             for path in (pod_path, list_path) for accept in (JSON, PROTOBUF)}

    url = f"http://127.0.0.1:{port}"
    runs = {k: [] for k in ("get_json", "get_proto", "list_json", "list_proto")}
    for _ in range(opts.runs):
        runs["get_json"].append(wrk(url + pod_path, 2, 64, opts.seconds, JSON)["rps"])
        runs["get_proto"].append(wrk(url + pod_path, 2, 64, opts.seconds, PROTOBUF)["rps"])
        runs["list_json"].append(wrk(url + list_path, 1, 1, opts.seconds, JSON)["p50_ms"])
        runs["list_proto"].append(wrk(url + list_path, 1, 1, opts.seconds, PROTOBUF)["p50_ms"])
    med = {k: median(v) for k, v in runs.items()}
    fmt = lambda xs, f: " ".join(f.format(x) for x in xs)  # noqa: E731
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().machine}, "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}; {opts.runs} runs of {opts.seconds} s "
          f"each, medians; load average (1 min) at start {load_start:.1f}, "
          f"at end {os.getloadavg()[0]:.1f}")
    print(f"pod: {sizes[(pod_path, JSON)]} bytes JSON, {sizes[(pod_path, PROTOBUF)]} protobuf; "
          f"list of {opts.pods} pods: {sizes[(list_path, JSON)]} bytes JSON, "
          f"{sizes[(list_path, PROTOBUF)]} protobuf")
    print()
    print(f"{'measure':30} {'protobuf':>10} {'JSON':>10} {'ratio':>6}   runs (protobuf | JSON)")
    rows = [("GET pod, req/s", "get_proto", "get_json", "{:.0f}"),
            (f"LIST {opts.pods} pods, p50 ms", "list_proto", "list_json", "{:.2f}")]
    for name, a, b, f in rows:
        print(f"{name:30} {f.format(med[a]):>10} {f.format(med[b]):>10} {med[a] / med[b]:6.2f}   "
              f"{fmt(runs[a], f)} | {fmt(runs[b], f)}")


if __name__ == "__main__":
    main()
