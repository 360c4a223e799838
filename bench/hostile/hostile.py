#!/usr/bin/env python3
"""
hostile.py - the long forms of the hostile-client tests (tests/hostile/): one
attack against a fresh `ckube server` (plain HTTP, SQLite store, no
controllers), measuring the server's peak RSS while a prober asks /readyz
every 200 ms. Prints one line of figures per run; docs/benchmarks.md has the
commands and results.

Attacks:
  patch_bomb   1.9 KB JSON patches of doubling copies, a 10,001-operation
               patch, and a strategic merge of 10,000 finalizers, N rounds
  watchers     1,000 watches that never read (a tiny receive window), while
               a 256 KiB pod is created and updated N times
  big_object   a 2.5 MB pod patched N times, one watcher reading along

The reference in the same run is the idle server's RSS after start-up
(`idle_rss`), measured before the attack begins.

usage: hostile.py ATTACK [--rounds N] [--ckube PATH] [--watchers N] [--cap-mib N]

--cap-mib runs the server under an address-space limit (RLIMIT_AS), to run an
older build, which has no bounds, without exhausting the machine.
"""
import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PODS = "/api/v1/namespaces/default/pods"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, ckube, extra, cap_mib=0):
        self.dir = tempfile.mkdtemp(prefix="ckube-hostile-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            [ckube, "server", "--disable-agent", "--disable-dns",
             "--insecure-plain-http", "--listen", "127.0.0.1:%d" % self.port,
             "--data-dir", self.dir, "--controllers", "-*"] + extra,
            stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_AS, (cap_mib << 20,) * 2))
            if cap_mib else None)
        for _ in range(200):
            try:
                if urllib.request.urlopen(self.url + "/readyz", timeout=1).status == 200:
                    return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        raise SystemExit("the server did not become ready; see " + self.log.name)

    def rss_kib(self, field="VmRSS"):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Monitor(threading.Thread):
    """Samples RSS every 100 ms and probes /readyz every 200 ms until stopped."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.stop_flag = threading.Event()
        self.peak_rss = 0
        self.probes = 0
        self.failed = 0
        self.slowest = 0.0

    def run(self):
        last_probe = 0.0
        while not self.stop_flag.is_set():
            self.peak_rss = max(self.peak_rss, self.server.rss_kib())
            now = time.monotonic()
            if now - last_probe >= 0.2:
                last_probe = now
                t0 = time.monotonic()
                try:
                    ok = urllib.request.urlopen(self.server.url + "/readyz", timeout=5).status == 200
                except (urllib.error.URLError, ConnectionError, socket.timeout):
                    ok = False
                self.slowest = max(self.slowest, time.monotonic() - t0)
                self.probes += 1
                self.failed += 0 if ok else 1
            time.sleep(0.1)


def call(server, method, path, body=None, content_type="application/json"):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(server.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return 0  # no answer: the server is gone or hung


def pod(name, arg_bytes=0, annotations=None):
    container = {"name": "c", "image": "x"}
    if arg_bytes:
        container["args"] = ["a" * arg_bytes]
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                       "spec": {"containers": [container]}})


def patch_bomb(server, args):
    assert call(server, "POST", PODS, pod("bomb", annotations={"a": "x" * 1024})) == 201
    copies = json.dumps([{"op": "copy", "from": "/metadata/annotations",
                          "path": "/metadata/annotations/c%d" % i} for i in range(22)])
    too_many = json.dumps([{"op": "test", "path": "/kind", "value": "Pod"}] * 10001)
    finalizers = json.dumps({"metadata": {"finalizers": ["example.com/f%d" % i
                                                         for i in range(10000)]}})
    codes = {}
    for _ in range(args.rounds):
        for body, ctype in ((copies, "application/json-patch+json"),
                            (too_many, "application/json-patch+json"),
                            (finalizers, "application/strategic-merge-patch+json")):
            code = call(server, "PATCH", PODS + "/bomb", body, ctype)
            codes[code] = codes.get(code, 0) + 1
    return "copy patch %d bytes; answers %s" % (len(copies), codes)


def open_idle_watch(server):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", server.port))
    s.sendall(("GET %s?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n" % PODS).encode())
    return s


def watchers(server, args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = [open_idle_watch(server) for _ in range(args.watchers)]
    time.sleep(1)
    arg = 256 * 1024
    assert call(server, "POST", PODS, pod("w", arg)) == 201
    failed = 0
    for i in range(args.rounds):
        patch = json.dumps({"metadata": {"annotations": {"n": str(i)}}})
        failed += call(server, "PATCH", PODS + "/w", patch, "application/merge-patch+json") != 200
    for s in socks:
        s.close()
    # the server logs each stream it ends for being too far behind (at -v=1)
    server.log.flush()
    with open(server.log.name) as f:
        ended = sum("client too slow" in line for line in f)
    return "%d watchers, %d updates of a %d KiB pod (%d failed); streams the server ended: %d" % (
        args.watchers, args.rounds, arg // 1024, failed, ended)


def big_object(server, args):
    size = 2500 * 1000
    assert call(server, "POST", PODS, pod("big", size)) == 201
    seen = [0]

    def read_watch():
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(("GET %s?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                   % PODS).encode())
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                return
            seen[0] += chunk.count(b'"type":"MODIFIED"')

    threading.Thread(target=read_watch, daemon=True).start()
    failed = 0
    for i in range(args.rounds):
        patch = json.dumps({"metadata": {"annotations": {"n": str(i)}}})
        failed += call(server, "PATCH", PODS + "/big", patch, "application/merge-patch+json") != 200
    time.sleep(1)
    return "%d updates of a %.1f MB pod (%d failed); MODIFIED events the watcher read: %d" % (
        args.rounds, size / 1e6, failed, seen[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attack", choices=["patch_bomb", "watchers", "big_object"])
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--ckube", default="build-rel/cmd/ckube/ckube")
    ap.add_argument("--server-flag", action="append", default=[])
    ap.add_argument("--cap-mib", type=int, default=0)
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = {"patch_bomb": 20, "watchers": 200, "big_object": 1000}[args.attack]
    flags = args.server_flag + (["--v=1"] if args.attack == "watchers" else [])
    server = Server(args.ckube, flags, args.cap_mib)
    try:
        time.sleep(0.5)
        idle = server.rss_kib()
        mon = Monitor(server)
        mon.start()
        t0 = time.monotonic()
        what = globals()[args.attack](server, args)
        elapsed = time.monotonic() - t0
        time.sleep(0.5)
        mon.stop_flag.set()
        mon.join()
        hwm = max(server.rss_kib("VmHWM"), mon.peak_rss)
        if server.proc.poll() is not None:
            what += "; the server exited with status %d" % server.proc.returncode
        print("%s: %s" % (args.attack, what))
        print("  idle_rss %.1f MiB  peak_rss %.1f MiB (VmHWM %.1f MiB)  took %.1f s" % (
            idle / 1024, mon.peak_rss / 1024, hwm / 1024, elapsed))
        print("  /readyz probes %d, failed %d, slowest %.0f ms" % (
            mon.probes, mon.failed, mon.slowest * 1000))
        sys.stdout.flush()
        return 0 if hwm < 512 * 1024 and mon.failed == 0 else 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
