#!/usr/bin/env python3
"""One user floods the API server with LISTs while another user's GETs are timed.

    python3 bench/flowcontrol/flood.py --ckube BIN [--objects 1000] [--conns 64]
                                       [--seconds 10] [--runs 3]

Starts `ckube server` (no agent, DNS or controllers) on a fresh data directory,
creates --objects ConfigMaps in `default` and restarts the server on that data,
so that the object count API Priority and Fairness estimates a LIST's seats
from is the one the store has (it is taken at start and then every minute).
Two users authenticated by token and bound to `view` both land in the
`global-default` priority level (`ByUser`, so each is a flow of its own):
"flooder" lists all the ConfigMaps from --conns keep-alive connections (wrk,
one thread) while "victim" GETs one ConfigMap at a time on one keep-alive
connection. Each run measures the victim alone (the same number of GETs)
and then under the flood; the whole is done with API Priority and Fairness
(the default) and with --enable-priority-and-fairness=false (the max-in-flight
filter). Prints, per mode, the medians over --runs of the victim's p50 and p99
latency, the flood's LISTs/s and its 429 answers, and the current limit of
global-default from /metrics at the end of the flood.
"""
import argparse
import http.client
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apiserver"))
from bench import free_port, request  # noqa: E402

FLOOD_TOKEN = "flood-token-0123456789"
VICTIM_TOKEN = "victim-token-0123456789"


class Server:
    def __init__(self, ckube, data, tokens, apf):
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        args = [ckube, "server", "--disable-agent", "--disable-dns", "--controllers=-*",
                "--listen", f"127.0.0.1:{self.port}", "--data-dir", data,
                "--token-auth-file", tokens]
        if not apf:
            args.append("--enable-priority-and-fairness=false")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(os.path.dirname(data), "ckube.err"), "a"))
        pki = os.path.join(data, "pki")
        for _ in range(400):
            if all(os.path.exists(os.path.join(d, f)) for d, f in
                   ((data, "kubeconfig"), (pki, "admin.crt"), (pki, "admin.key"))):
                break
            time.sleep(0.05)
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.admin = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.admin.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        for _ in range(400):
            if self.proc.poll() is not None:
                sys.exit("server exited early")
            try:
                if self.call("GET", "/readyz")[1] == b"ok":
                    return
            except OSError:
                pass
            time.sleep(0.05)
        sys.exit("server did not become ready")

    def connect(self, admin=False):
        return http.client.HTTPSConnection("127.0.0.1", self.port,
                                           context=self.admin if admin else self.ctx, timeout=60)

    def call(self, method, path, body=None, conn=None):
        """A request of the admin (system:masters), on conn or a new connection."""
        own = conn is None
        conn = conn or self.connect(admin=True)
        try:
            return request(self.port, method, path, body, conn)
        finally:
            if own:
                conn.close()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def victim_gets(server, n, stop=None):
    """Times GETs of one ConfigMap by the victim on one connection: n of them, or until stop."""
    conn = server.connect()
    headers = {"Accept": "application/json", "Authorization": "Bearer " + VICTIM_TOKEN}
    times = []
    while (stop is None and len(times) < n) or (stop is not None and not stop.is_set()):
        t0 = time.perf_counter()
        conn.request("GET", "/api/v1/namespaces/default/configmaps/cm-0", headers=headers)
        answer = conn.getresponse()
        answer.read()
        times.append(time.perf_counter() - t0)
        if answer.status != 200:
            sys.exit(f"the victim's GET answered {answer.status}")
    conn.close()
    return times


def flood(server, conns, seconds):
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--timeout", "60s",
           "-H", "Authorization: Bearer " + FLOOD_TOKEN, "-H", "Accept: application/json",
           server.url + "/api/v1/namespaces/default/configmaps"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, total, int(errors.group(1)) if errors else 0


def current_limit(server):
    _, text = server.call("GET", "/metrics")
    m = re.search(rb'^apiserver_flowcontrol_current_limit_seats\{priority_level="global-default"\} (\S+)',
                  text, re.M)
    return m.group(1).decode() if m else "-"


def one_run(server, conns, seconds):
    result = {}
    stop = threading.Event()
    got = {}
    th = threading.Thread(target=lambda: got.setdefault("t", victim_gets(server, 0, stop)))
    th.start()
    time.sleep(0.5)  # the victim's connection is up before the flood
    rps, total, rejected = flood(server, conns, seconds)
    limit = current_limit(server)
    stop.set()
    th.join()
    loaded = got["t"]
    alone = victim_gets(server, len(loaded))
    result["alone p50"] = percentile(alone, 50) * 1e3
    result["alone p99"] = percentile(alone, 99) * 1e3
    result["flood p50"] = percentile(loaded, 50) * 1e3
    result["flood p99"] = percentile(loaded, 99) * 1e3
    result["victim GETs"] = len(loaded)
    result["LISTs/s"] = rps
    result["429s"] = rejected
    result["LISTs"] = total
    result["limit"] = limit
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("flood.py needs wrk")
    tmp = tempfile.mkdtemp(prefix="ckube-flood-bench-")
    server = None
    try:
        data = os.path.join(tmp, "data")
        tokens = os.path.join(tmp, "tokens.csv")
        with open(tokens, "w") as f:
            f.write(f"{FLOOD_TOKEN},flooder,1\n{VICTIM_TOKEN},victim,2\n")
        server = Server(args.ckube, data, tokens, True)
        for user in ("flooder", "victim"):
            binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": "bench-" + user},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                   "name": "view"},
                       "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                     "name": user}]}
            server.call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        conn = server.connect(admin=True)
        for i in range(args.objects):
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
                  "data": {"key": "value-%d" % i, "more": "x" * 200}}
            status, body = server.call("POST", "/api/v1/namespaces/default/configmaps", cm, conn)
            if status != 201:
                sys.exit(f"create answered {status}: {body[:200]}")
        conn.close()
        server.stop()
        server = None
        with open("/proc/loadavg") as f:
            load0 = f.read().split()[0]
        modes = {}
        for name, apf in (("API Priority and Fairness", True), ("max-in-flight", False)):
            server = Server(args.ckube, data, tokens, apf)
            runs = [one_run(server, args.conns, args.seconds) for _ in range(args.runs)]
            server.stop()
            server = None
            modes[name] = runs
        with open("/proc/loadavg") as f:
            load1 = f.read().split()[0]
        print(f"{args.objects} ConfigMaps, flood of {args.conns} connections for {args.seconds} s, "
              f"{args.runs} runs, load {load0} -> {load1}")
        keys = ["alone p50", "alone p99", "flood p50", "flood p99", "victim GETs", "LISTs/s",
                "LISTs", "429s"]
        for name, runs in modes.items():
            med = {k: statistics.median(r[k] for r in runs) for k in keys}
            rng = {k: (min(r[k] for r in runs), max(r[k] for r in runs)) for k in keys}
            print(f"{name}:")
            for k in keys:
                unit = " ms" if "p50" in k or "p99" in k else ""
                print(f"  {k}: {med[k]:.2f}{unit} ({rng[k][0]:.2f}-{rng[k][1]:.2f})")
            print("  global-default current limit at the end: " +
                  ", ".join(r["limit"] for r in runs))
    finally:
        if server:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
