#!/usr/bin/env python3
"""tls_bench.py - the API server over TLS beside nginx over TLS.

Run through bench/auth/run_tls.sh, which builds ckube optimised and installs
wrk and nginx when missing, then calls

    tls_bench.py --ckube BIN [--runs 3] [--seconds 5]

On loopback, with both servers presenting the same certificate (the ECDSA
P-256 serving certificate `ckube server` made in its pki/), TLS 1.2 and 1.3
allowed, it measures, alternating ckube and nginx, medians of --runs runs:
  - GET of one pod with keep-alive: wrk, 2 threads, 64 connections; ckube
    authenticates a bearer token (--token-auth-file) and authorizes it with
    RBAC (a ClusterRoleBinding of `view`), nginx serves the exact bytes
    ckube answered as a static file (the same header is sent to both);
  - new TLS connections per second: the same GET with `Connection: close`,
    so that every request opens a connection and does a full handshake
    (wrk does not resume sessions), 2 threads, 16 connections;
  - full handshakes per second one connection at a time, no request
    (`openssl s_time -new`): the handshake's latency alone.
Prints the runs, the medians and the ratios.
"""
import argparse
import os
import re
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TOKEN = "bench-token-0123456789"
POD = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench-pod","labels":{"app":"bench",'
       b'"tier":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":'
       b'[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m",'
       b'"memory":"64Mi"}}}]}}')
BINDING = (b'{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",'
           b'"metadata":{"name":"bench-view"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io",'
           b'"kind":"ClusterRole","name":"view"},"subjects":[{"apiGroup":'
           b'"rbac.authorization.k8s.io","kind":"User","name":"bench"}]}')
POD_PATH = "/api/v1/namespaces/default/pods/bench-pod"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(ctx, url, method="GET", body=None):
    req = urllib.request.Request(url, data=body, method=method, headers={
        "Authorization": "Bearer " + TOKEN, "Content-Type": "application/json",
        "Accept": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return r.read()


def wait_ready(ctx, url, proc):
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit("server exited early")
        try:
            if call(ctx, url + "/readyz") == b"ok":
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("server did not become ready")


def wrk(url, threads, conns, seconds, close):
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s",
           "-H", "Authorization: Bearer " + TOKEN, "-H", "Accept: application/json"]
    if close:
        cmd += ["-H", "Connection: close"]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"wrk saw {errors.group(1)} non-2xx answers from {url}:\n{out}")
    return rps


def s_time(port, ca, seconds):
    """Full handshakes per second, one at a time (openssl s_time -new), no request sent."""
    out = subprocess.run(["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new",
                          "-time", str(seconds), "-CAfile", ca],
                         capture_output=True, text=True).stdout
    m = re.search(r"(\d+) connections in (\d+) real seconds", out)
    return int(m.group(1)) / int(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckube-tls-bench-")
    os.chmod(tmp, 0o755)  # nginx's workers may run as another user
    procs = []
    try:
        data = os.path.join(tmp, "data")
        tokens = os.path.join(tmp, "tokens.csv")
        with open(tokens, "w") as f:
            f.write(f"{TOKEN},bench,1\n")
        port = free_port()
        url = f"https://127.0.0.1:{port}"
        ckube = subprocess.Popen([args.ckube, "server", "--disable-agent", "--disable-dns",
                                  "--listen", f"127.0.0.1:{port}",
                                  "--data-dir", data, "--token-auth-file", tokens,
                                  "--controllers=-*"],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "ckube.err"), "w"))
        procs.append(ckube)
        pki = os.path.join(data, "pki")
        for _ in range(200):
            if os.path.exists(os.path.join(data, "kubeconfig")):
                break
            time.sleep(0.05)
        ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        admin = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        admin.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        wait_ready(admin, url, ckube)
        call(admin, url + "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "POST", BINDING)
        call(admin, url + "/api/v1/namespaces/default/pods", "POST", POD)
        body = call(ctx, url + POD_PATH)

        www = os.path.join(tmp, "nginx", "www")
        os.makedirs(os.path.dirname(www + POD_PATH), exist_ok=True)
        os.makedirs(os.path.join(tmp, "nginx", "tmp"), exist_ok=True)
        with open(www + POD_PATH, "wb") as f:
            f.write(body)
        nport = free_port()
        root = os.path.join(tmp, "nginx")
        conf = os.path.join(root, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
worker_processes auto;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/json;
    client_body_temp_path {root}/tmp;
    proxy_temp_path {root}/tmp;
    fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp;
    scgi_temp_path {root}/tmp;
    server {{
        listen 127.0.0.1:{nport} ssl;
        ssl_certificate {pki}/apiserver.crt;
        ssl_certificate_key {pki}/apiserver.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache off;
        ssl_session_tickets off;
        root {www};
    }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        ng = subprocess.Popen([nginx, "-e", f"{root}/error.log", "-p", root, "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ng)
        nurl = f"https://127.0.0.1:{nport}"
        for _ in range(200):
            try:
                if call(ctx, nurl + POD_PATH) == body:
                    break
            except OSError:
                time.sleep(0.05)
        else:
            with open(os.path.join(root, "error.log")) as f:
                sys.exit("nginx did not serve the pod:\n" + f.read())

        with open("/proc/loadavg") as f:
            load0 = f.read().split()[0]
        results = {}
        for name, threads, conns, close in (("GET pod, keep-alive, req/s", 2, 64, False),
                                            ("new TLS connections/s (GET, Connection: close)", 2, 16, True)):
            runs = {"ckube": [], "nginx": []}
            for _ in range(args.runs):
                runs["ckube"].append(wrk(url + POD_PATH, threads, conns, args.seconds, close))
                runs["nginx"].append(wrk(nurl + POD_PATH, threads, conns, args.seconds, close))
            results[name] = runs
        runs = {"ckube": [], "nginx": []}
        ca = os.path.join(pki, "ca.crt")
        for _ in range(args.runs):
            runs["ckube"].append(s_time(port, ca, args.seconds))
            runs["nginx"].append(s_time(nport, ca, args.seconds))
        results["TLS handshakes/s, one at a time (s_time -new)"] = runs
        with open("/proc/loadavg") as f:
            load1 = f.read().split()[0]
        proto = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                                "-CAfile", os.path.join(pki, "ca.crt")], input="",
                               capture_output=True, text=True).stdout
        m = re.search(r"(TLSv1\.\d), Cipher is (\S+)", proto)
        print(f"machine: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}; "
              f"{args.runs} runs of {args.seconds} s each, medians; load average (1 min) "
              f"at start {load0}, at end {load1}")
        print(f"pod: {len(body)} bytes; certificate: ECDSA P-256 (the same file for both); "
              f"ckube negotiates {m.group(1) + ' ' + m.group(2) if m else '?'}")
        print()
        print(f"{'measure':50} {'ckube':>9} {'nginx':>9} {'ratio':>6}   runs (ckube | nginx)")
        for name, runs in results.items():
            c, n = statistics.median(runs["ckube"]), statistics.median(runs["nginx"])
            print(f"{name:50} {c:9.0f} {n:9.0f} {c / n:6.2f}   "
                  + " ".join(f"{v:.0f}" for v in runs["ckube"]) + " | "
                  + " ".join(f"{v:.0f}" for v in runs["nginx"]))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
