#!/usr/bin/env python3
"""managedfields_ab.py - what keeping metadata.managedFields adds to an update.

    bench/apiserver/managedfields_ab.py --base OLD/ckube --new NEW/ckube
                                        [--rounds 6] [--requests 1000]

Starts both builds at once on SQLite (plain HTTP, random loopback ports, a
temporary directory removed at the end), creates the same Deployment in each
and a ReplicaSet-free namespace (--controllers=-*, so nothing else writes),
then alternates between them round after round, so both see the same load on
a shared machine. Each round sends --requests sequential PATCHes on one
keep-alive connection, each a merge patch changing one label of the
Deployment (a real write every time, as `kubectl label --overwrite` is), and
records the median latency and the server's CPU time (user + system, from
/proc) per request, which tells the work managedFields add from the larger
writes' I/O. With --new it also times, in the same rounds,
server-side apply PATCHes that change the same label (the new build only).
Prints each build's medians per round, the median of the rounds and the
ratio new/base.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web", "round": "0"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "web", "image": "nginx:1.27",
                 "ports": [{"containerPort": 80}],
                 "env": [{"name": f"E{i}", "value": str(i)} for i in range(8)],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                {"name": "sidecar", "image": "envoy:1.30", "ports": [{"containerPort": 9901}]},
            ]},
        },
    },
}
PATH = "/apis/apps/v1/namespaces/default/deployments/web"


def start(servers, binary, tmp, name):
    port = b.free_port()
    argv = [binary, "server", "--disable-agent", "--disable-dns",
            "--insecure-plain-http", "--controllers=-*", "--listen",
            f"127.0.0.1:{port}", "--data-dir", os.path.join(tmp, name)]
    proc = servers.start(argv, open(os.path.join(tmp, name + ".log"), "w"))
    b.wait_ready(port, proc, f"ckube ({name})")
    b.must(*b.request(port, "POST", "/apis/apps/v1/namespaces/default/deployments",
                      DEPLOYMENT), "create deployment")
    return port, proc.pid


def cpu_seconds(pid):
    """User and system CPU time the process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def timed(server, n, content_type, body_of, query=""):
    """Median seconds of n sequential PATCHes on one connection, and the server's CPU
    seconds per PATCH."""
    port, pid = server
    cpu0 = cpu_seconds(pid)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    for i in range(n):
        body = json.dumps(body_of(i)).encode()
        t0 = time.perf_counter()
        conn.request("PATCH", PATH + query, body, {"Content-Type": content_type,
                                                   "Accept": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        times.append(time.perf_counter() - t0)
        if resp.status != 200:
            sys.exit(f"PATCH: HTTP {resp.status}: {data[:300]!r}")
    conn.close()
    cpu1 = cpu_seconds(pid)
    return statistics.median(times), ((cpu1[0] - cpu0[0]) / n, (cpu1[1] - cpu0[1]) / n)


def label_patch(tag):
    return lambda i: {"metadata": {"labels": {"round": f"{tag}-{i}"}}}


def apply_config(tag):
    def body(i):
        cfg = json.loads(json.dumps(DEPLOYMENT))
        cfg["metadata"]["labels"]["round"] = f"{tag}-{i}"
        return cfg
    return body


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--requests", type=int, default=1000)
    opts = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckube-mf-")
    servers = b.Servers()
    try:
        base = start(servers, opts.base, tmp, "base")
        new = start(servers, opts.new, tmp, "new")
        runs = {"base": [], "new": [], "apply": []}
        cpu = {"base": [], "new": [], "apply": []}
        for r in range(opts.rounds):
            for name, server, ctype, body, query in (
                    ("base", base, "application/merge-patch+json", label_patch(f"b{r}"), ""),
                    ("new", new, "application/merge-patch+json", label_patch(f"n{r}"), ""),
                    ("apply", new, "application/apply-patch+yaml", apply_config(f"a{r}"),
                     "?fieldManager=bench&force=true")):
                latency, cpu_per = timed(server, opts.requests, ctype, body, query)
                runs[name].append(latency)
                cpu[name].append(cpu_per)
        _, body = b.request(new[0], "GET", PATH)
        entries = json.loads(body)["metadata"].get("managedFields", [])
        print(f"managedFields entries on the new build's Deployment: {len(entries)} "
              f"({len(json.dumps(entries))} bytes)")
        med = {}
        for name, vals in runs.items():
            us = [round(v * 1e6) for v in vals]
            user = statistics.median(c[0] for c in cpu[name])
            system = statistics.median(c[1] for c in cpu[name])
            med[name] = (statistics.median(vals), user, system)
            print(f"{name:>6}: median latency per round (us): {us}; median "
                  f"{round(med[name][0] * 1e6)} us; server CPU per request: user "
                  f"{round(user * 1e6)} us, system {round(system * 1e6)} us")
        mb, mn = med["base"][0], med["new"][0]
        ma = med["apply"][0]
        print(f"merge patch, new/base: latency {mn / mb:.2f} (+{round((mn - mb) * 1e6)} us), "
              f"user CPU +{round((med['new'][1] - med['base'][1]) * 1e6)} us, system CPU "
              f"+{round((med['new'][2] - med['base'][2]) * 1e6)} us per update")
        print(f"apply (new) / merge patch (base): latency {ma / mb:.2f}")
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
