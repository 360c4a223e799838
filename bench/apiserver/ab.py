#!/usr/bin/env python3
"""ab.py - two ckube builds side by side: GET of one pod and LIST of 1,000 pods,
and with --creates the creates of 16 clients.

    bench/apiserver/ab.py --base OLD/ckube --new NEW/ckube [--rounds 8] [--creates]
                          [--base-plain-flag ''] [--new-plain-flag --insecure-plain-http]

Starts both servers at once on SQLite (random loopback ports, a temporary
directory removed at the end), fills each with the same pod and 1,000 pods in
one namespace (bench.py's pod), then alternates between them, round after
round, so both see the same load on a shared machine: wrk, 1 thread and 1
connection, 3 s, for the LIST's median latency; 2 threads and 64 connections,
3 s, for GET requests per second. Prints each build's runs and medians and the
ratio new/base. A build from before TLS has no --insecure-plain-http flag
(plain HTTP was its only mode): pass --base-plain-flag ''.

With --creates both servers run without their in-process controllers
(--controllers=-*, as bench.py measures creates: one write each), and every
round also runs bench.py's create load on each, wrk with 2 threads and 16
connections for 5 s (create.lua), reporting creates per second and the
server's CPU time (user and system, from /proc) per create.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402


def start(servers, binary, plain_flag, tmp, name, controllers):
    port = b.free_port()
    argv = [binary, "server", "--disable-agent", "--disable-dns", "--listen", f"127.0.0.1:{port}", "--data-dir",
            os.path.join(tmp, name)]
    if plain_flag:
        argv.insert(2, plain_flag)
    if not controllers:
        argv.append("--controllers=-*")
    proc = servers.start(argv, open(os.path.join(tmp, name + ".log"), "w"))
    b.wait_ready(port, proc, f"ckube ({name})")
    return port, proc.pid


def fill(port, pods):
    b.namespace(port, "list")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(pods):
        pod = json.loads(json.dumps(b.POD))
        pod["metadata"]["name"] = f"pod-{i:05d}"
        b.must(*b.request(port, "POST", "/api/v1/namespaces/list/pods", pod, conn), "pod")
    b.namespace(port, "default")
    b.must(*b.request(port, "POST", "/api/v1/namespaces/default/pods", b.POD), "bench-pod")
    b.namespace(port, "create")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--base-plain-flag", default="--insecure-plain-http")
    ap.add_argument("--new-plain-flag", default="--insecure-plain-http")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--creates", action="store_true",
                    help="also creates of 16 clients, the servers without their controllers")
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckube-ab-")
    servers = b.Servers()
    try:
        started = {
            "base": start(servers, opts.base, opts.base_plain_flag, tmp, "base", not opts.creates),
            "new": start(servers, opts.new, opts.new_plain_flag, tmp, "new", not opts.creates),
        }
        ports = {k: port for k, (port, _) in started.items()}
        for port in ports.values():
            fill(port, 1000)
        measures = ["list", "get"] + (["creates", "cpu"] if opts.creates else [])
        runs = {k: {m: [] for m in measures} for k in ports}
        for _ in range(opts.rounds):
            for name, port in ports.items():
                url = f"http://127.0.0.1:{port}"
                runs[name]["list"].append(
                    b.wrk(url + "/api/v1/namespaces/list/pods", 1, 1, 3)["p50_ms"])
                runs[name]["get"].append(
                    b.wrk(url + "/api/v1/namespaces/default/pods/bench-pod", 2, 64, 3)["rps"])
                if opts.creates:
                    pid = started[name][1]
                    cpu = b.cpu_seconds(pid)
                    rps = b.wrk(url, 2, 16, 5, "create.lua", ["create"])["rps"]
                    runs[name]["creates"].append(rps)
                    runs[name]["cpu"].append((b.cpu_seconds(pid) - cpu) * 1e6 / (rps * 5))
        med = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in runs.items()}
        print(f"{opts.rounds} alternating rounds; load average {os.getloadavg()[0]:.1f} at the end")
        units = [("list", "LIST 1000 pods, p50 ms"), ("get", "GET pod, req/s")]
        if opts.creates:
            units += [("creates", "creates/s, 16 clients"), ("cpu", "server CPU us per create")]
        for m, unit in units:
            print(f"{unit:24} base {med['base'][m]:9.2f}  new {med['new'][m]:9.2f}  "
                  f"new/base {med['new'][m] / med['base'][m]:.2f}")
            for k in ("base", "new"):
                print(f"  {k:4} runs: " + " ".join(f"{x:.2f}" for x in runs[k][m]))
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
