#!/usr/bin/env python3
"""bench.py - the HTTP-layer spike measured side by side with nginx (issue 43).

Run through run.sh, which installs the packages and builds the servers:

    bench.py --dir DIR [--runs 3] [--seconds 5] [--threads 2] [--streams 1000,10000]
             [--events 100] [--interval-ms 50] [--reset-pairs 100000]

Starts, on loopback ports, ngev_server (libnghttp2 + libevent + http-parser),
h2o_server (libh2o-evloop) and nginx (from a configuration written in a temp
dir, stopped by PID), all three with THREADS loop threads or workers and the
same ECDSA P-256 certificate, TLS 1.2 and 1.3, no session resumption. Then,
server after server inside each run, medians over --runs runs:
  - h1: GET /obj with 64 keep-alive TLS connections over HTTP/1.1
        (h2load --h1 -t2 -c64 -D SECONDS);
  - h2: the same over HTTP/2, one stream per connection at a time
        (h2load -t2 -c64 -m1 -D SECONDS), and 8 at a time (-m8);
  - handshakes: GET /obj with `Connection: close`, so each request opens a
        connection with a full handshake (wrk -t2 -c16 -d SECONDS);
  - watch fan-out (the two spike servers; nginx has no broadcast): for each
        count in --streams, a fresh server, watch_client opening that many
        HTTP/1.1 TLS watches and receiving --events events --interval-ms
        apart (at least 1 ms per 20 streams, so that an event is fanned out
        before the next): delivery latency p50/p99, the server's RSS per stream;
  - rapid reset (CVE-2023-44487), all three: one HTTP/2 connection sending
        HEADERS + RST_STREAM pairs (rapid_reset): does the server end it?
  - full TLS handshakes in one process, GnuTLS beside OpenSSL, from the same
        certificate and key files, made by OpenSSL then by GnuTLS (tls_handshake).
Beside requests/s, the server's CPU time per request (from /proc, nginx's
master and workers added), which other work on the machine disturbs less.
Prints the load average beside the figures and one JSON line with everything.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    for _ in range(100):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not listen on {port}")


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_s(pids):
    """User + system CPU seconds of the processes (all their threads)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def h2load(url, seconds, h1, streams=1):
    """requests/s and the number of 2xx answers (warm-up included)"""
    cmd = ["h2load", "-t2", "-c64", f"-m{streams}", "-D", str(seconds), "--warm-up-time=1"]
    if h1:
        cmd.append("--h1")
    out = subprocess.run(cmd + [url], capture_output=True, text=True).stdout
    m = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out)
    ok = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", out)
    st = re.search(r"status codes: (\d+) 2xx, \d+ 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not m or not ok or int(ok.group(2)) != 0 or not st or st.group(2) != "0" or st.group(3) != "0":
        sys.exit(f"h2load failed on {url}:\n{out}")
    return float(m.group(1)), int(st.group(1))


def wrk_close(url, seconds):
    """requests/s and the number of requests"""
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{seconds}s", "-H", "Connection: close", url],
                         capture_output=True, text=True).stdout
    if "Non-2xx" in out:
        sys.exit(f"wrk saw errors on {url}:\n{out}")
    n = re.search(r"(\d+) requests in", out)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), int(n.group(1))


def nginx_conf(root, port, threads, cert, key):
    return f"""worker_processes {threads};
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 20000; }}
http {{
    access_log off;
    client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache off;
        ssl_session_tickets off;
        location = /obj {{ root {root}/www; default_type application/json; }}
    }}
}}
"""


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where the programs of the Makefile are")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", default="1000,10000")
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--interval-ms", type=int, default=50)
    ap.add_argument("--reset-pairs", type=int, default=100000)
    ap.add_argument("--skip-load", action="store_true", help="no requests/s nor handshakes")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="http-spike-")
    os.chmod(tmp, 0o755)  # nginx's workers may run as another user
    procs = []
    results = {"load_before": load()}
    try:
        cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        os.chmod(key, 0o644)
        root = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(root, "www"))
        os.makedirs(os.path.join(root, "tmp"))
        servers = {}

        def start(name, argv, port):
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, name + ".log"), "w"))
            procs.append(p)
            wait_port(port, p, name)
            return p

        def start_nginx():
            port = free_port()
            conf = os.path.join(root, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(root, port, args.threads, cert, key))
            nginx = shutil.which("nginx") or "/usr/sbin/nginx"
            # -g 'daemon off;' keeps the master our child, stopped by its PID
            argv = [nginx, "-e", f"{root}/error.log", "-p", root, "-c", conf, "-g", "daemon off;"]
            return start("nginx", argv, port), port

        tls = ["-c", cert, "-k", key, "-t", str(args.threads), "-n", str(args.events), "-i", str(args.interval_ms)]
        if not args.skip_load:
            for name in ("ngev", "h2o"):
                port = free_port()
                start(name, [os.path.join(args.dir, name + "_server"), "-p", str(port)] + tls, port)
                servers[name] = port
            # nginx serves the exact bytes the spike servers answer
            obj = subprocess.run(["curl", "-sk", "--http1.1", f"https://127.0.0.1:{servers['ngev']}/obj"],
                                 capture_output=True, check=True).stdout
            with open(os.path.join(root, "www", "obj"), "wb") as f:
                f.write(obj)
            servers["nginx"] = start_nginx()[1]
            for name, p in servers.items():
                got = subprocess.run(["curl", "-sk", f"https://127.0.0.1:{p}/obj"], capture_output=True).stdout
                if got != obj:
                    sys.exit(f"{name} does not serve the same {len(obj)} bytes")
            print(f"GET /obj: {len(obj)} bytes of JSON; {args.threads} threads/workers each; load before: {load()}")
            tests = [("h1, 64 keep-alive", lambda u: h2load(u, args.seconds, True)),
                     ("h2, 64 conns x 1 stream", lambda u: h2load(u, args.seconds, False)),
                     ("h2, 64 conns x 8 streams", lambda u: h2load(u, args.seconds, False, 8)),
                     ("new TLS connection each", lambda u: wrk_close(u, args.seconds))]
            # the server's CPU per request: less disturbed than requests/s by
            # other work on the machine (nginx: its master and workers)
            pids = {n: [pr.pid] for n, pr in zip(servers, procs)}
            pids["nginx"] += [int(x) for x in subprocess.run(["pgrep", "-P", str(procs[2].pid)],
                                                            capture_output=True, text=True).stdout.split()]
            runs = {t: {n: [] for n in servers} for t, _ in tests}
            cpu = {t: {n: [] for n in servers} for t, _ in tests}
            for r in range(args.runs):
                for t, fn in tests:
                    for n, p in servers.items():
                        c0 = cpu_s(pids[n])
                        rate, count = fn(f"https://127.0.0.1:{p}/obj")
                        runs[t][n].append(rate)
                        cpu[t][n].append((cpu_s(pids[n]) - c0) * 1e6 / count)
                print(f"run {r + 1}/{args.runs} done, load {load()}", flush=True)
            for title, data, unit in (("requests/s", runs, ""), ("server CPU per request, us", cpu, "")):
                print(f"\n{title:30} {'ngev':>9} {'h2o':>9} {'nginx':>9} {'ngev/nginx':>10} {'h2o/nginx':>9}   runs")
                for t, _ in tests:
                    med = {n: statistics.median(v) for n, v in data[t].items()}
                    print(f"{t:30} {med['ngev']:9.1f} {med['h2o']:9.1f} {med['nginx']:9.1f} "
                          f"{med['ngev'] / med['nginx']:10.2f} {med['h2o'] / med['nginx']:9.2f}   "
                          + " | ".join(" ".join(f"{v:.0f}" for v in data[t][n]) for n in servers))
            results["load"] = runs
            results["cpu_us_per_request"] = cpu
            for p in procs:
                stop(p)
            procs.clear()
            print(f"load after: {load()}")

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        watch = {}
        for k in (int(x) for x in args.streams.split(",") if x):
            if k + 100 > soft:
                print(f"watch fan-out: {k} streams skipped: open-file limit {soft}")
                continue
            # events far enough apart that one is fanned out before the next:
            # 1 ms per 20 streams at least
            interval = max(args.interval_ms, k // 20)
            wtls = tls[:-1] + [str(interval)]
            for name in ("ngev", "h2o"):
                for r in range(max(1, args.runs if k <= 1000 else 1)):
                    port = free_port()
                    p = start(name, [os.path.join(args.dir, name + "_server"), "-p", str(port)] + wtls, port)
                    time.sleep(0.3)
                    out = subprocess.run([os.path.join(args.dir, "watch_client"), str(port), str(k),
                                          str(args.events), str(p.pid)], capture_output=True, text=True)
                    stop(p)
                    procs.remove(p)
                    if out.returncode != 0:
                        sys.exit(f"watch_client against {name}: {out.stdout}{out.stderr}")
                    w = json.loads(out.stdout)
                    w["load"] = load()
                    watch.setdefault(f"{name} {k}", []).append(w)
                    print(f"watch {name:5} {k:6} streams, {interval} ms apart: p50 {w['p50_ms']:7.2f} ms  p99 {w['p99_ms']:7.2f} ms  "
                          f"max {w['max_ms']:7.2f} ms  {w['kib_per_stream']:5.1f} KiB/stream  "
                          f"server CPU {w['server_cpu_us_per_delivery']:.2f} us/delivery  "
                          f"(RSS {w['rss_before_kib']} -> {w['rss_open_kib']} KiB, opened in {w['open_s']:.1f} s, "
                          f"load {w['load']})", flush=True)
        results["watch"] = watch

        # HTTP/2 rapid reset (CVE-2023-44487): one connection, HEADERS then
        # RST_STREAM, --reset-pairs at most; nginx's CPU is its master's
        # children's, so only the spike servers' CPU per pair is read
        reset = {}
        for name in ("ngev", "h2o", "nginx"):
            if name == "nginx":
                p, port = start_nginx()
                pid = p.pid
                kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
                pid = int(kids[0]) if args.threads == 1 and kids else pid
            else:
                port = free_port()
                p = start(name, [os.path.join(args.dir, name + "_server"), "-p", str(port)] + tls, port)
                pid = p.pid
            out = subprocess.run([os.path.join(args.dir, "rapid_reset"), str(port), str(args.reset_pairs), str(pid)],
                                 capture_output=True, text=True, timeout=300)
            alive = p.poll() is None
            stop(p)
            procs.remove(p)
            r = json.loads(out.stdout)
            r["server_alive"] = alive
            reset[name] = r
            print(f"rapid reset {name:5}: {r['pairs_sent']} pairs sent, GOAWAY "
                  + (f"code {r['goaway_error']} after {r['goaway_after_pairs']} pairs" if r["goaway_error"] >= 0
                     else "none") + f", connection closed: {bool(r['closed'])}, {r['responses']} responses started, "
                  f"{r['seconds']:.1f} s" + (f", server CPU {r['server_cpu_us_per_pair']:.1f} us/pair"
                                            if name != "nginx" or args.threads == 1 else ""), flush=True)
        results["rapid_reset"] = reset

        # the TLS libraries alone: GnuTLS and OpenSSL handshakes from the same PEM files
        # (made by openssl req, then by GnuTLS as ckube's PKI makes them)
        gdir = os.path.join(tmp, "gnutls")
        os.makedirs(gdir)
        hs = ""
        for files in ([cert, key], ["--gnutls-made", gdir]):
            hs += subprocess.run([os.path.join(args.dir, "tls_handshake")] + files + ["7"],
                                 capture_output=True, text=True, check=True).stdout
        print(hs, end="")
        results["tls_handshake"] = hs
        print(json.dumps(results))
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
