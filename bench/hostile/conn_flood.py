#!/usr/bin/env python3
"""conn_flood.py - the slow-header connection flood against `ckube server`.

Opens N connections that each send the start of a request header and then one
more header field every INTERVAL seconds, never finishing it (the slowloris
attack: each byte used to reset the server's idle timer). Two uses:

  flood only (tests/hostile/test_conn_flood.sh keeps it running while kubectl
  works):
    conn_flood.py flood --port P [--tls] --connections N --interval S --duration S

  the benchmark (starts its own plain-HTTP server, measures, prints a table):
    conn_flood.py bench --ckube PATH/TO/ckube [--connections 10100]
                  [--interval 3] [--requests 400] [--pace 0.02] [--sources 1] [--tls]
                  [--server-arg ARG ...]

The benchmark reports, for a legitimate client, GET latency (median, p99) of
one object on a kept-alive connection and on a fresh connection per request,
first without a flood (the reference, same run) and then with the flood at
full size; the server's peak RSS (VmHWM) and whether /readyz answered
throughout; and how many flood connections the server cut (evicted or timed
out), which the flood re-opens at once to keep the pressure on.

Only the standard library: sockets, selectors, http.client, ssl.
"""
import argparse
import http.client
import json
import os
import resource
import selectors
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PARTIAL = b"GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: flood\r\n"


class Flood:
    """N slow-header connections, re-opened when the server cuts one."""

    def __init__(self, host, port, n, interval, tls=False, sources=1):
        self.host, self.port, self.n, self.interval, self.tls = host, port, n, interval, tls
        self.sources = sources  # > 1: from 127.0.0.2, 127.0.0.3, ... in turn
        self.opened = 0
        self.sel = selectors.DefaultSelector()
        self.socks = {}
        self.cut = 0  # connections the server closed
        self.open_failures = 0
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.ctx = None
        if tls:
            self.ctx = ssl.create_default_context()
            self.ctx.check_hostname = False
            self.ctx.verify_mode = ssl.CERT_NONE

    def _open_one(self):
        try:
            source = None
            if self.sources > 1:
                source = (f"127.0.0.{2 + self.opened % self.sources}", 0)
            self.opened += 1
            s = socket.create_connection((self.host, self.port), timeout=5,
                                         source_address=source)
            if self.ctx:
                s = self.ctx.wrap_socket(s)
            s.sendall(PARTIAL)
            s.setblocking(False)
        except OSError:
            self.open_failures += 1
            return
        self.socks[s.fileno()] = s
        self.sel.register(s, selectors.EVENT_READ)

    def _drop(self, s):
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        self.socks.pop(s.fileno(), None)
        s.close()

    def run(self):
        while len(self.socks) < self.n and not self.stop.is_set():
            self._open_one()
        self.ready.set()
        next_trickle = time.monotonic() + self.interval
        while not self.stop.is_set():
            timeout = max(0.0, next_trickle - time.monotonic())
            for key, _ in self.sel.select(timeout=min(timeout, 0.2)):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except (BlockingIOError, ssl.SSLWantReadError):
                    continue
                except OSError:
                    data = b""
                if not data:  # cut by the server
                    self.cut += 1
                    self._drop(s)
            if time.monotonic() >= next_trickle:
                for s in list(self.socks.values()):
                    try:
                        s.send(b"X-Trickle: 1\r\n")
                    except (BlockingIOError, ssl.SSLWantWriteError):
                        pass
                    except OSError:
                        self.cut += 1
                        self._drop(s)
                next_trickle = time.monotonic() + self.interval
            # keep the flood at full size
            for _ in range(min(200, self.n - len(self.socks))):
                self._open_one()
        for s in list(self.socks.values()):
            self._drop(s)

    def start(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def finish(self):
        self.stop.set()
        self.thread.join()


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n + 1024))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def cmd_flood(args):
    raise_nofile(args.connections)
    flood = Flood("127.0.0.1", args.port, args.connections, args.interval, args.tls).start()
    flood.ready.wait()
    print(f"flood up: {len(flood.socks)} connections", flush=True)
    time.sleep(args.duration)
    flood.finish()
    print(f"flood done: cut {flood.cut}, open failures {flood.open_failures}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


CONNECT = {"ctx": None}  # the bench's TLS context (CA and admin certificate), or None


def connect(port, timeout):
    """A legitimate client's connection: HTTPS as the admin with --tls, else HTTP."""
    if CONNECT["ctx"]:
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                           context=CONNECT["ctx"])
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def timed_gets(port, path, n, fresh, pace, give_up):
    """n GETs of path, one every `pace` seconds, for `give_up` seconds at most;
    returns latencies in ms (a failure counts as the time it took) and the
    number of failures."""
    lat, failures = [], 0
    conn = None
    until = time.monotonic() + give_up
    for _ in range(n):
        if time.monotonic() > until:
            break
        time.sleep(pace)
        if fresh or conn is None:
            if conn:
                conn.close()
            conn = connect(port, 2)
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            ok = resp.status == 200
        except (OSError, http.client.HTTPException) as e:
            ok = False
            REASONS[type(e).__name__] = REASONS.get(type(e).__name__, 0) + 1
            conn.close()
            conn = None
        lat.append((time.perf_counter() - t0) * 1e3)
        failures += 0 if ok else 1
    if conn:
        conn.close()
    return lat, failures


REASONS = {}  # failed GETs by exception


def p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]


def cmd_bench(args):
    raise_nofile(args.connections)
    port = free_port()
    data = tempfile.mkdtemp(prefix="ckube-flood-")
    server = subprocess.Popen(
        [args.ckube, "server", "--disable-agent", "--disable-dns",
         "--listen", f"127.0.0.1:{port}", "--data-dir", data,
         "--controllers", "-*"] + ([] if args.tls else ["--insecure-plain-http"]) + args.server_arg,
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(data, "server.err"), "w"))
    try:
        for _ in range(200):
            try:
                if args.tls and not os.path.exists(os.path.join(data, "kubeconfig")):
                    raise OSError("not yet")
                if args.tls and not CONNECT["ctx"]:
                    ctx = ssl.create_default_context(cafile=os.path.join(data, "pki", "ca.crt"))
                    ctx.load_cert_chain(os.path.join(data, "pki", "admin.crt"),
                                        os.path.join(data, "pki", "admin.key"))
                    CONNECT["ctx"] = ctx
                c = connect(port, 1)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "legit"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        c = connect(port, 10)
        c.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod),
                  {"Content-Type": "application/json"})
        assert c.getresponse().status == 201
        path = "/api/v1/namespaces/default/pods/legit"
        rows = []
        base_rss = vm_kib(server.pid, "VmRSS")
        for fresh in (False, True):
            lat, fail = timed_gets(port, path, args.requests, fresh, args.pace, 60)
            rows.append(("no flood", "fresh" if fresh else "kept-alive", lat, fail))

        flood = Flood("127.0.0.1", port, args.connections, args.interval, tls=args.tls,
                      sources=args.sources).start()
        flood.ready.wait()
        up_at = time.monotonic()
        readyz_failures = 0
        readyz_checks = 0
        stop_probe = threading.Event()

        def probe():
            nonlocal readyz_failures, readyz_checks
            while not stop_probe.is_set():
                readyz_checks += 1
                try:
                    pc = connect(port, 5)
                    pc.request("GET", "/readyz")
                    if pc.getresponse().status != 200:
                        readyz_failures += 1
                    pc.close()
                except OSError:
                    readyz_failures += 1
                time.sleep(0.5)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        held = len(flood.socks)
        time.sleep(args.interval * 2)  # the flood trickles at least twice
        for fresh in (False, True):
            lat, fail = timed_gets(port, path, args.requests, fresh, args.pace, 60)
            rows.append(("flood", "fresh" if fresh else "kept-alive", lat, fail))
        flood_rss = vm_kib(server.pid, "VmRSS")
        stop_probe.set()
        prober.join()
        flood.finish()
        peak = vm_kib(server.pid, "VmHWM")
        print(f"flood: {args.connections} slow-header connections from {args.sources} "
              f"address(es), "
              f"a header field every {args.interval}s; {held} open at the start, "
              f"{flood.cut} cut by the server in {time.monotonic() - up_at:.0f}s "
              f"(re-opened), {flood.open_failures} refused at connect")
        print(f"{'phase':<9} {'client':<11} {'n':>5} {'fail':>5} {'median ms':>10} {'p99 ms':>8}")
        for phase, client, lat, fail in rows:
            print(f"{phase:<9} {client:<11} {len(lat):>5} {fail:>5} "
                  f"{statistics.median(lat):>10.2f} {p99(lat):>8.2f}")
        print(f"server RSS: {base_rss / 1024:.0f} MiB before, {flood_rss / 1024:.0f} MiB "
              f"under the flood, peak (VmHWM) {peak / 1024:.0f} MiB")
        print(f"/readyz during the flood: {readyz_checks - readyz_failures}/{readyz_checks} ok")
        if REASONS:
            print("failed GETs: " + ", ".join(f"{k} {v}" for k, v in sorted(REASONS.items())))
    finally:
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", data])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("flood")
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--tls", action="store_true")
    f.add_argument("--connections", type=int, default=10100)
    f.add_argument("--interval", type=float, default=3)
    f.add_argument("--duration", type=float, default=10)
    b = sub.add_parser("bench")
    b.add_argument("--ckube", required=True)
    b.add_argument("--connections", type=int, default=10100)
    b.add_argument("--interval", type=float, default=3)
    b.add_argument("--requests", type=int, default=400)
    b.add_argument("--pace", type=float, default=0.02, help="seconds between two GETs")
    b.add_argument("--tls", action="store_true",
                   help="serve HTTPS (the default of ckube server); the flood completes TLS "
                        "handshakes, the client authenticates as the admin")
    b.add_argument("--sources", type=int, default=1,
                   help="flood from this many loopback addresses (127.0.0.2, ...)")
    b.add_argument("--server-arg", action="append", default=[])
    args = ap.parse_args()
    return cmd_flood(args) if args.cmd == "flood" else cmd_bench(args)


if __name__ == "__main__":
    sys.exit(main())
