#!/usr/bin/env python3
"""bench.py - the API server benchmark, every figure beside its reference.

Run through bench/apiserver/run.sh, which builds ckube optimised, installs
wrk and nginx when missing and starts a throwaway etcd, then calls

    bench.py --ckube BIN --watch-tool BIN --etcd etcd://127.0.0.1:PORT [--runs 3]

In one run, on loopback, it measures (medians of --runs runs each):
  - GET of one pod: wrk, 2 threads, 64 connections, against ckube and against
    nginx serving the exact bytes of ckube's answer as a static file;
  - LIST of 1,000 pods: median latency, wrk, 1 thread, 1 connection, against
    ckube and nginx (again the same bytes);
  - creates per second from 16 keep-alive clients (--create-clients; wrk, 2 threads) on a ckube
    backed by SQLite and on one backed by etcd, and raw etcd puts of a stored
    pod through etcd's v3 JSON gateway at the same concurrency, and (with
    --etcd-put-tool) the same puts over etcd's gRPC, the protocol ckube's
    etcd backend speaks (bench_etcd_put, one HTTP/2 connection a client);
  - watch delivery: 1,000 watchers of one namespace while one client PUTs a
    pod in it every 20 ms (bench_watch.c): p50/p99 from the PUT being sent to
    each watcher reading the event;
  - the SQLite server's resident memory: idle after start, with the watchers
    open, at its highest while they receive, and idle at the end.
The ckube servers run without their in-process controllers
(--controllers=-*): the API server alone, as kube-apiserver is measured.
With them (--with-controllers, ckube server's default) every created pod is
also seen by the scheduler, which, with no nodes here, answers each with a
status update and an event: the creates then measure three writes each, and
that work goes on into the measurements after them. For the creates the
report also gives the CPU time each process spent per request (ckube, etcd),
from /proc, which bounds the ratios on a machine that all of them share.
Every server listens on 127.0.0.1 on a port the kernel picked, in a
temporary directory removed at the end. Prints a report with the raw runs,
the medians, the ratios and whether each target of the API server issue is
met.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "bench-pod", "labels": {"app": "bench", "tier": "web"}},
    "spec": {
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ]
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User and system CPU time of a process so far, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def request(port, method, path, body=None, conn=None):
    """One request on conn (or a new connection); returns (status, bytes)."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    out = resp.read()
    if own:
        conn.close()
    return resp.status, out


def must(status, body, what):
    if status not in (200, 201):
        sys.exit(f"bench: {what}: HTTP {status}: {body[:300]!r}")
    return body


def namespace(port, name, conn=None):
    """Creates the namespace name (unless it is default) and its ServiceAccount
    default, which the ServiceAccount admission plugin looks up for every pod
    and which no controller makes on a server run with --controllers=-*."""
    if name != "default":
        must(*request(port, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}, conn),
             f"create namespace {name}")
    status, body = request(port, "POST", f"/api/v1/namespaces/{name}/serviceaccounts",
                           {"metadata": {"name": "default"}}, conn)
    if status != 409:  # made already by the serviceaccount controller, if it runs
        must(status, body, f"create {name}/default")


def wait_ready(port, proc, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"bench: {what} exited with {proc.returncode}")
        try:
            if request(port, "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"bench: {what} not ready after 30 s")


class Servers:
    """The processes a run starts; stop() ends them all."""

    def __init__(self):
        self.procs = []

    def start(self, argv, log):
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def start_ckube(servers, ckube, tmp, name, store=None, connections=0, controllers=False):
    port = free_port()
    data = os.path.join(tmp, name)
    # plain HTTP: these runs compare the API path with nginx and etcd over plain HTTP
    argv = [ckube, "server", "--disable-agent", "--disable-dns",
            "--insecure-plain-http", "--listen", f"127.0.0.1:{port}",
            "--data-dir", data]
    if not controllers:
        argv.append("--controllers=-*")
    if connections:  # every watcher is a connection from 127.0.0.1
        argv += ["--max-connections", str(connections),
                 "--max-connections-per-address", str(connections)]
    if store:
        argv += ["--store", store]
    log = open(os.path.join(tmp, name + ".log"), "w")
    proc = servers.start(argv, log)
    wait_ready(port, proc, f"ckube ({name})")
    return port, proc


def start_nginx(servers, tmp):
    port = free_port()
    root = os.path.join(tmp, "nginx")
    conf = os.path.join(root, "nginx.conf")
    with open(conf, "w") as f:
        f.write(
            f"""daemon off;
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
        listen 127.0.0.1:{port};
        root {root}/www;
    }}
}}
"""
        )
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = servers.start([nginx, "-e", f"{root}/error.log", "-p", root, "-c", conf], subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            if proc.poll() is not None:
                sys.exit("bench: nginx did not start: " + open(f"{root}/error.log").read())
            time.sleep(0.05)
    sys.exit("bench: nginx not listening after 10 s")


def serve_static(tmp, path, data):
    """Puts data where the throwaway nginx serves `path`."""
    dest = os.path.join(tmp, "nginx", "www", path.lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(data)


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk(url, threads, conns, seconds, script=None, args=()):
    argv = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--latency"]
    if script:
        argv += ["-s", os.path.join(HERE, script)]
    argv.append(url)
    if args:
        argv += ["--", *args]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    out = done.stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failed = re.search(r"^failed (\d+)", out, re.M)
    bad = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, errors.groups())) if errors else 0)
    if failed:
        bad = max(bad, int(failed.group(1)))
    if bad:
        sys.exit(f"bench: {bad} failed requests to {url}:\n{out}")
    return {"rps": rps, "p50_ms": float(p50.group(1)) * UNITS[p50.group(2)]}


def median(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--watch-tool", required=True)
    ap.add_argument("--etcd-put-tool", help="bench_etcd_put: raw puts over etcd's gRPC as a second reference")
    ap.add_argument("--etcd", required=True, help="etcd://127.0.0.1:PORT")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="duration of each wrk run")
    ap.add_argument("--pods", type=int, default=1000, help="pods in the LIST")
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--create-clients", type=int, default=16,
                    help="keep-alive clients of the create and raw put runs")
    ap.add_argument("--updates", type=int, default=100)
    ap.add_argument("--interval-ms", type=int, default=20)
    ap.add_argument("--with-controllers", action="store_true",
                    help="run the ckube servers with their in-process controllers")
    opts = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ckube-bench-")
    os.chmod(tmp, 0o755)  # nginx's workers run as another user
    os.makedirs(os.path.join(tmp, "nginx", "tmp"))
    servers = Servers()
    try:
        report(opts, tmp, servers)
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(opts, tmp, servers):
    ckube, n, secs = opts.ckube, opts.runs, opts.seconds
    load_start = os.getloadavg()[0]
    etcd_url = "http://" + opts.etcd[len("etcd://") :].split(",")[0]
    port, proc = start_ckube(servers, ckube, tmp, "sqlite",
                             connections=opts.watchers + 1000 if opts.watchers > 1000 else 0,
                             controllers=opts.with_controllers)
    time.sleep(1)
    rss_idle = rss_kib(proc.pid)

    # the objects: one pod to GET, a namespace of 1,000 pods to LIST
    pod_path = "/api/v1/namespaces/default/pods/bench-pod"
    namespace(port, "default")
    must(*request(port, "POST", "/api/v1/namespaces/default/pods", POD), "create bench-pod")
    pod_bytes = must(*request(port, "GET", pod_path), "get bench-pod")
    serve_static(tmp, pod_path, pod_bytes)
    namespace(port, "list")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(opts.pods):
        p = json.loads(json.dumps(POD))
        p["metadata"]["name"] = f"pod-{i:04d}"
        must(*request(port, "POST", "/api/v1/namespaces/list/pods", p, conn), "create list pod")
    conn.close()
    list_path = "/api/v1/namespaces/list/pods"
    list_bytes = must(*request(port, "GET", list_path), "list")
    if len(json.loads(list_bytes)["items"]) != opts.pods:
        sys.exit("bench: the list does not hold every pod")
    serve_static(tmp, list_path, list_bytes)
    nginx = start_nginx(servers, tmp)
    if request(nginx, "GET", pod_path)[1] != pod_bytes:
        sys.exit("bench: nginx does not serve the same bytes")

    ck, ng = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{nginx}"
    get_ck, get_ng, list_ck, list_ng = [], [], [], []
    for _ in range(n):
        get_ck.append(wrk(ck + pod_path, 2, 64, secs)["rps"])
        get_ng.append(wrk(ng + pod_path, 2, 64, secs)["rps"])
    for _ in range(n):
        list_ck.append(wrk(ck + list_path, 1, 1, secs)["p50_ms"])
        list_ng.append(wrk(ng + list_path, 1, 1, secs)["p50_ms"])

    # watch: a namespace with one pod, PUT every interval, read by every watcher
    namespace(port, "watch")
    wpod = json.loads(json.dumps(POD))
    wpod["metadata"].update(name="w", annotations={"bench.ckube.io/sent": "0"})
    must(*request(port, "POST", "/api/v1/namespaces/watch/pods", wpod), "create watched pod")
    wpod["metadata"]["annotations"]["bench.ckube.io/sent"] = "@SENT@"
    pod_file = os.path.join(tmp, "watch-pod.json")
    with open(pod_file, "w") as f:
        json.dump(wpod, f, separators=(",", ":"))
    watch = []
    for _ in range(n):
        argv = [opts.watch_tool, "127.0.0.1", str(port), "watch", "w", pod_file, str(opts.watchers),
                str(opts.updates), str(opts.interval_ms), str(proc.pid)]
        res = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        if res["deliveries"] != res["expected"] or res["failed_updates"]:
            sys.exit(f"bench: watch run lost events or updates: {res}")
        watch.append(res)
        time.sleep(1)  # let the closed watches go before the next run

    # creates: ckube on SQLite, ckube on etcd, raw etcd puts of a stored pod
    eport, eproc = start_ckube(servers, ckube, tmp, "etcd", opts.etcd,
                               controllers=opts.with_controllers)
    etcd_pids = [int(p) for p in os.environ.get("CKUBE_ETCD_PIDS", "").split() if p]
    for p in (port, eport):
        namespace(p, "create")
    value_file = os.path.join(tmp, "value.json")
    with open(value_file, "wb") as f:
        f.write(pod_bytes)
    cr_sq, cr_et, raw, raw_grpc = [], [], [], []
    cpu = {"sqlite": [], "etcd_ckube": [], "etcd_etcd": [], "raw_etcd": [], "raw_grpc": []}  # us per request

    def timed(url, script, args, procs):
        before = [cpu_seconds(p) for p in procs]
        rps = wrk(url, 2, opts.create_clients, secs, script, args)["rps"]
        used = [cpu_seconds(p) - b for p, b in zip(procs, before)]
        return rps, [1e6 * u / max(1.0, rps * secs) for u in used]

    for _ in range(n):
        rps, (c,) = timed(ck, "create.lua", ["create"], [proc.pid])
        cr_sq.append(rps)
        cpu["sqlite"].append(c)
        rps, per = timed(f"http://127.0.0.1:{eport}", "create.lua", ["create"],
                         [eproc.pid] + etcd_pids[:1])
        cr_et.append(rps)
        cpu["etcd_ckube"].append(per[0])
        if etcd_pids:
            cpu["etcd_etcd"].append(per[1])
        rps, per = timed(etcd_url, "etcd_put.lua", [value_file], etcd_pids[:1])
        raw.append(rps)
        if etcd_pids:
            cpu["raw_etcd"].append(per[0])
        if opts.etcd_put_tool:  # the same puts over gRPC, the protocol ckube's etcd backend speaks
            before = [cpu_seconds(p) for p in etcd_pids[:1]]
            done = subprocess.run([opts.etcd_put_tool, etcd_url[len("http://"):], value_file,
                                   str(opts.create_clients), str(secs)], capture_output=True, text=True)
            got = re.search(r"^puts/s ([\d.]+)", done.stdout, re.M)
            if done.returncode != 0 or not got:
                sys.exit(f"bench: {opts.etcd_put_tool} failed:\n{done.stdout}{done.stderr}")
            raw_grpc.append(float(got.group(1)))
            for p, b in zip(etcd_pids[:1], before):
                cpu["raw_grpc"].append(1e6 * (cpu_seconds(p) - b) / max(1.0, raw_grpc[-1] * secs))
    time.sleep(2)
    rss_end = rss_kib(proc.pid)

    med = {
        "get_ckube": median(get_ck), "get_nginx": median(get_ng),
        "list_ckube_ms": median(list_ck), "list_nginx_ms": median(list_ng),
        "create_sqlite": median(cr_sq), "create_etcd": median(cr_et), "etcd_put": median(raw),
        "etcd_put_grpc": median(raw_grpc) if raw_grpc else 0,
        "watch_p50_ms": median([w["p50_us"] for w in watch]) / 1000,
        "watch_p99_ms": median([w["p99_us"] for w in watch]) / 1000,
        "rss_watching_mib": median([w["rss_watching_kib"] for w in watch]) / 1024,
        "rss_peak_mib": median([w["rss_peak_kib"] for w in watch]) / 1024,
    }
    fmt = lambda xs, f="{:.0f}": " ".join(f.format(x) for x in xs)  # noqa: E731
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().machine}, "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}; {n} runs of {secs} s each, medians")
    print(f"pod: {len(pod_bytes)} bytes; list of {opts.pods} pods: {len(list_bytes)} bytes; "
          f"load average (1 min) at start {load_start:.1f}, at end {os.getloadavg()[0]:.1f}")
    print()
    print(f"{'measure':34} {'ckube':>10} {'reference':>10} {'ratio':>6}   runs (ckube | reference)")
    rows = [
        ("GET pod, req/s (nginx)", med["get_ckube"], med["get_nginx"], get_ck, get_ng, "{:.0f}"),
        (f"LIST {opts.pods} pods, p50 ms (nginx)", med["list_ckube_ms"], med["list_nginx_ms"], list_ck, list_ng, "{:.2f}"),
        ("create/s SQLite (raw etcd put)", med["create_sqlite"], med["etcd_put"], cr_sq, raw, "{:.0f}"),
        ("create/s etcd (raw etcd put)", med["create_etcd"], med["etcd_put"], cr_et, raw, "{:.0f}"),
    ]
    if raw_grpc:
        rows += [
            ("create/s SQLite (raw gRPC put)", med["create_sqlite"], med["etcd_put_grpc"], cr_sq, raw_grpc, "{:.0f}"),
            ("create/s etcd (raw gRPC put)", med["create_etcd"], med["etcd_put_grpc"], cr_et, raw_grpc, "{:.0f}"),
        ]
    for name, a, b, ra, rb, f in rows:
        print(f"{name:34} {f.format(a):>10} {f.format(b):>10} {a / b:6.2f}   {fmt(ra, f)} | {fmt(rb, f)}")
    w0 = watch[0]
    print()
    print(f"watch: {w0['watchers']} watchers, {w0['updates']} PUTs {w0['interval_ms']} ms apart, "
          f"{w0['expected']} deliveries per run, all received")
    print(f"  delivery p50 ms: {med['watch_p50_ms']:.2f}   runs {fmt([w['p50_us'] / 1000 for w in watch], '{:.2f}')}")
    print(f"  delivery p99 ms: {med['watch_p99_ms']:.2f}   runs {fmt([w['p99_us'] / 1000 for w in watch], '{:.2f}')}")
    print(f"  delivery max ms: {fmt([w['max_us'] / 1000 for w in watch], '{:.2f}')}")
    print(f"  the PUT alone (sent -> answered), p50 / p99 ms: "
          f"{median([w['put_p50_us'] for w in watch]) / 1000:.2f} / "
          f"{median([w['put_p99_us'] for w in watch]) / 1000:.2f}")
    if cpu["raw_etcd"]:
        print(f"CPU us per request: ckube create on SQLite {median(cpu['sqlite']):.0f}; "
              f"on etcd: ckube {median(cpu['etcd_ckube']):.0f} + etcd {median(cpu['etcd_etcd']):.0f}; "
              f"raw put: etcd {median(cpu['raw_etcd']):.0f}"
              + (f"; raw gRPC put: etcd {median(cpu['raw_grpc']):.0f}" if cpu["raw_grpc"] else "")
              + " (the clients, wrk and bench_etcd_put, not counted)")
    else:
        print(f"CPU us per request: ckube create on SQLite {median(cpu['sqlite']):.0f}")
    print(f"RSS MiB: idle after start {rss_idle / 1024:.1f}; watchers open {med['rss_watching_mib']:.1f}; "
          f"peak while delivering {med['rss_peak_mib']:.1f}; idle at the end {rss_end / 1024:.1f}")
    print()
    get_ratio = med["get_ckube"] / med["get_nginx"]
    list_ratio = med["list_ckube_ms"] / med["list_nginx_ms"]
    sq_ratio, et_ratio = med["create_sqlite"] / med["etcd_put"], med["create_etcd"] / med["etcd_put"]
    targets = [
        ("GET >= 0.7x nginx", get_ratio >= 0.7, f"{get_ratio:.2f}x"),
        (f"LIST {opts.pods} p50 <= 3x nginx", list_ratio <= 3, f"{list_ratio:.2f}x"),
        ("creates on SQLite >= 1.5x raw etcd", sq_ratio >= 1.5, f"{sq_ratio:.2f}x"),
        ("creates on etcd >= 0.8x raw etcd", et_ratio >= 0.8, f"{et_ratio:.2f}x"),
    ]
    if raw_grpc:
        grpc_sq, grpc_et = med["create_sqlite"] / med["etcd_put_grpc"], med["create_etcd"] / med["etcd_put_grpc"]
        targets += [
            ("creates on SQLite >= 1.5x raw gRPC puts", grpc_sq >= 1.5, f"{grpc_sq:.2f}x"),
            ("creates on etcd >= 0.8x raw gRPC puts", grpc_et >= 0.8, f"{grpc_et:.2f}x"),
        ]
    targets += [
        (f"watch p99 <= 10 ms ({opts.watchers} watchers)", med["watch_p99_ms"] <= 10,
         f"{med['watch_p99_ms']:.2f} ms"),
        ("idle RSS <= 20 MB", rss_idle * 1024 <= 20e6, f"{rss_idle / 1024:.1f} MiB"),
    ]
    for name, ok, value in targets:
        print(f"target {name:46} {'met' if ok else 'MISSED':6} ({value})")


if __name__ == "__main__":
    main()
