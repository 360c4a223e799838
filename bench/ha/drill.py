#!/usr/bin/env python3
"""drill.py - the failure drill behind bench/ha/run.sh (which starts the etcd cluster).

    drill.py PATH/TO/ckube etcd://H:P,H:P,H:P SECONDS_BETWEEN_FAULTS

Starts two servers on the store (the second with the first's CA and ServiceAccount
key), a ReplicaSet, 4 writer clients creating ServiceAccounts (each tries its server, then
the other, and retries a failed create until it is answered), and a watcher of the
ServiceAccounts that resumes from the last resourceVersion it saw on whichever server
answers. Then, SECONDS apart: kill -9 the server leading the controllers, stop a
follower member (SIGTERM) and restart it on its data directory SECONDS later, kill -9
the etcd leader, SIGSTOP one member for 10 s then SIGCONT, SIGTERM and restart the
controllers' leader. Reports acknowledged writes lost, pods beyond the ReplicaSet's
replicas, the time from each leader's death until a scale-up made then is done, how
long the restarted member took to serve again and to catch up, the longest pause in
acknowledged writes after each fault, and the watch's duplicates, reorderings and
missed objects (resourceVersions are etcd's).
The etcd CKUBE_ETCD_PIDS come from etcd-test-env.sh, in endpoint order; a member the
drill restarts is its own child, stopped when it ends.
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ckube, store, gap = sys.argv[1], sys.argv[2], float(sys.argv[3])
endpoints = store[len("etcd://"):].split(",")
etcd_pids = [int(p) for p in os.environ["CKUBE_ETCD_PIDS"].split()]
work = tempfile.mkdtemp(prefix="ckube-drill-")
stop = threading.Event()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, name):
        self.name, self.port, self.proc = name, free_port(), None
        self.dir = os.path.join(work, name)
        self.url = "https://127.0.0.1:%d" % self.port

    def start(self):
        self.proc = subprocess.Popen(
            [ckube, "server", "--disable-agent", "--disable-dns",
             "--listen", "127.0.0.1:%d" % self.port, "--data-dir", self.dir,
             "--store", store],
            stdout=subprocess.DEVNULL, stderr=open(self.dir + ".log", "a"))
        for _ in range(300):
            try:
                if request(self, "GET", "/readyz", raw=True) == b"ok":
                    break
            except Exception:
                pass
            time.sleep(0.1)
        self.identity = open(os.path.join(self.dir, "leader-identity")).read()

    def kill(self, sig):
        self.proc.send_signal(sig)
        self.proc.wait()


servers = [Server("a"), Server("b")]
ctx = None


def request(server, method, path, body=None, raw=False, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
        out = r.read()
        return out if raw else json.loads(out)


def any_request(method, path, body=None):
    """The request against each server in turn until one answers (a Status counts)."""
    while True:
        for s in servers:
            try:
                return request(s, method, path, body)
            except urllib.error.HTTPError as e:
                if e.code >= 500:  # the server or its etcd member is unavailable
                    continue
                return {"status": "Failure", "code": e.code, "body": e.read()[:300]}
            except Exception:
                pass
        time.sleep(0.2)


# ---- start --------------------------------------------------------------------------
os.makedirs(servers[0].dir, mode=0o700)
servers[0].start()
pki = os.path.join(servers[0].dir, "pki")
ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
os.makedirs(os.path.join(servers[1].dir, "pki"), mode=0o700)
os.chmod(servers[1].dir, 0o700)
for f in ("ca.crt", "ca.key", "sa.key"):
    shutil.copy2(os.path.join(pki, f), os.path.join(servers[1].dir, "pki", f))
servers[1].start()

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
RS = "/apis/apps/v1/namespaces/default/replicasets/drill"


def leader():
    holder = any_request("GET", LEASE).get("spec", {}).get("holderIdentity", "")
    return next((s for s in servers if s.identity == holder), None)


replicas = [3]
any_request("POST", "/apis/apps/v1/namespaces/default/replicasets", {
    "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "drill"},
    "spec": {"replicas": replicas[0], "selector": {"matchLabels": {"app": "drill"}},
             "template": {"metadata": {"labels": {"app": "drill"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


def owned_pods():
    uid = any_request("GET", RS)["metadata"]["uid"]
    items = any_request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Ddrill")
    return [p for p in items.get("items", [])
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences", []))
            and "deletionTimestamp" not in p["metadata"]]


# ---- writers and the watcher ----------------------------------------------------------
acked, lock = set(), threading.Lock()
ack_times = []  # monotonic time of every acknowledged create
faults = []  # (what, monotonic time of the fault)
write_errors = [0]


def writer(n):
    i = 0
    while not stop.is_set():
        name = "w%d-%d" % (n, i)
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        first = n % 2
        while True:
            done = False
            for s in (servers[first], servers[1 - first]):
                try:
                    request(s, "POST", "/api/v1/namespaces/default/serviceaccounts", body, timeout=5)
                    done = True
                except urllib.error.HTTPError as e:
                    done = e.code == 409  # a retry of a create that did happen
                except Exception:
                    pass
                if done:
                    break
                write_errors[0] += 1
            if done:
                break
            time.sleep(0.1)
        with lock:
            acked.add(name)
            ack_times.append(time.monotonic())
        i += 1


seen, events_rv, watch_restarts, resumes = set(), [], [0], []
watch_stop = threading.Event()  # set once the watcher has seen every acknowledged create


def watcher():
    first = any_request("GET", "/api/v1/namespaces/default/serviceaccounts")
    seen.update(o["metadata"]["name"] for o in first["items"])  # created before the watch
    rv = first["metadata"]["resourceVersion"]
    k = 0
    while not watch_stop.is_set():
        s = servers[k % 2]
        k += 1
        resumes.append(rv)
        try:
            req = urllib.request.Request(
                s.url + "/api/v1/namespaces/default/serviceaccounts?watch=true&resourceVersion=" + rv)
            with urllib.request.urlopen(req, context=ctx, timeout=15) as r:
                for line in r:
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        raise RuntimeError(ev)
                    meta = ev["object"]["metadata"]
                    rv = meta["resourceVersion"]
                    events_rv.append(int(rv))
                    if ev["type"] == "ADDED":
                        seen.add(meta["name"])
                    if watch_stop.is_set():
                        return
        except Exception:
            pass
        watch_restarts[0] += 1  # the stream ended or failed: resume on the other server
        time.sleep(0.1)


threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(4)]
threads.append(threading.Thread(target=watcher, daemon=True))
for t in threads:
    t.start()


def takeover(what, fault):
    """fault() the controllers' leader; the seconds until a scale-up made then is done."""
    replicas[0] += 1
    t0 = time.monotonic()
    fault()
    body = any_request("GET", RS)
    body["spec"]["replicas"] = replicas[0]
    while any_request("PUT", RS, body).get("code") == 409:
        body = any_request("GET", RS)
        body["spec"]["replicas"] = replicas[0]
    while len(owned_pods()) < replicas[0]:
        time.sleep(0.2)
    took = time.monotonic() - t0
    print("%-44s controllers act again after %5.1f s" % (what, took), flush=True)
    return took


def etcd_leader():
    for i, ep in enumerate(endpoints):
        try:
            out = subprocess.run(["etcdctl", "--endpoints", ep, "endpoint", "status", "-w",
                                  "json"], capture_output=True, timeout=5).stdout
            st = json.loads(out)[0]["Status"]
            if st["leader"] == st["header"]["member_id"]:
                return i
        except Exception:
            pass
    return None


def member_status(i):
    """Member i's etcd status (leader, raft index), or None when it does not answer."""
    try:
        out = subprocess.run(["etcdctl", "--endpoints", endpoints[i], "--command-timeout=2s",
                              "endpoint", "status", "-w", "json"],
                             capture_output=True, timeout=5).stdout
        return json.loads(out)[0]["Status"]
    except Exception:
        return None


def gone(pid):
    """The process has exited (a zombie of etcd-test-env.sh's shell counts)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


restarted = []  # members this drill started again (its children)


def stop_and_restart_member(i):
    """SIGTERM member i, restart it on its data directory `gap` seconds later with the
    same command line; returns (seconds until it answers, until it caught up)."""
    pid = etcd_pids[i]
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    os.kill(pid, signal.SIGTERM)
    while not gone(pid):
        time.sleep(0.05)
    faults.append(("SIGTERM etcd member %d" % i, time.monotonic()))
    print("SIGTERM etcd member %d (a follower)" % i, flush=True)
    time.sleep(gap)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "member-%d.log" % i), "a"))
    restarted.append(proc)
    etcd_pids[i] = proc.pid
    serving = caught_up = None
    while caught_up is None and time.monotonic() - t0 < 60:
        # another member's index first: under steady writes the restarted member has
        # caught up once it holds what another held a moment before
        others = [st for st in (member_status(j) for j in range(len(endpoints)) if j != i) if st]
        st = member_status(i)
        if st and serving is None:
            serving = time.monotonic() - t0
        if st and others and st["raftIndex"] >= max(o["raftIndex"] for o in others):
            caught_up = time.monotonic() - t0
        time.sleep(0.1)
    print("restart etcd member %d on its data directory: it answers after %s s, "
          "caught up after %s s" % (i, "%.1f" % serving if serving else "-",
                                    "%.1f" % caught_up if caught_up else "-"), flush=True)
    return serving, caught_up


def fault(what):
    faults.append((what, time.monotonic()))


time.sleep(gap)
ld = leader()
fault("kill -9 the controllers' leader")
takeover("kill -9 the controllers' leader (%s)" % ld.name, lambda: ld.kill(signal.SIGKILL))
ld.start()
time.sleep(gap)
first_leader = etcd_leader()
follower = next(i for i in range(len(endpoints)) if i != first_leader)
member_restart = stop_and_restart_member(follower)
fault("etcd member %d back" % follower)
time.sleep(gap)
e = etcd_leader()
fault("kill -9 the etcd leader")
os.kill(etcd_pids[e], signal.SIGKILL)
print("kill -9 the etcd leader (member %d)" % e, flush=True)
time.sleep(gap)
m = next(i for i in range(len(endpoints)) if i != e)
fault("SIGSTOP member %d" % m)
os.kill(etcd_pids[m], signal.SIGSTOP)
time.sleep(10)
os.kill(etcd_pids[m], signal.SIGCONT)
print("SIGSTOP member %d for 10 s, then SIGCONT" % m, flush=True)
time.sleep(gap)
ld = leader()
fault("SIGTERM the controllers' leader")
takeover("SIGTERM and restart the controllers' leader (%s)" % ld.name,
         lambda: ld.kill(signal.SIGTERM))
ld.start()
time.sleep(gap)
stop.set()
for t in threads[:-1]:
    t.join()
deadline = time.monotonic() + 30  # the watcher catches up with the last writes
while time.monotonic() < deadline and not acked <= seen:
    time.sleep(0.1)
watch_stop.set()

# ---- the report ----------------------------------------------------------------------
with lock:
    acks = set(acked)
listed = any_request("GET", "/api/v1/namespaces/default/serviceaccounts")["items"]
stored = {c["metadata"]["name"] for c in listed}
stored_rv = {c["metadata"]["name"]: c["metadata"]["resourceVersion"] for c in listed}
time.sleep(3)
pods = owned_pods()
dups = len(events_rv) - len(set(events_rv))
disorder = sum(1 for a, b in zip(events_rv, events_rv[1:]) if b <= a)
print("acknowledged writes: %d, lost: %d (write attempts that failed over: %d)"
      % (len(acks), len(acks - stored), write_errors[0]))
print("ReplicaSet replicas %d, owned pods %d: %d beyond"
      % (replicas[0], len(pods), max(0, len(pods) - replicas[0])))
print("watch: %d events over %d reconnects; duplicates %d, out of order %d, "
      "acknowledged creates never seen %d"
      % (len(events_rv), watch_restarts[0], dups, disorder, len(acks - seen)))
end = time.monotonic()
with lock:
    times = sorted(ack_times)
for k, (what, at) in enumerate(faults):
    until = faults[k + 1][1] if k + 1 < len(faults) else end
    window = [at] + [t for t in times if at < t <= until] + [until]
    print("longest pause in acknowledged writes after %-34s %5.1f s"
          % (what + ":", max(b - a for a, b in zip(window, window[1:]))))
for name in sorted(acks - seen):
    print("  never seen: %s (resourceVersion %s); resumed from: %s"
          % (name, stored_rv.get(name), resumes))
for s in servers:
    if s.proc.poll() is None:
        s.kill(signal.SIGTERM)
for proc in restarted:
    if proc.poll() is None:
        proc.terminate()
        proc.wait()
shutil.rmtree(work, ignore_errors=True)
ok = not (acks - stored) and len(pods) == replicas[0] and not dups and not disorder \
    and not (acks - seen) and member_restart[1] is not None
sys.exit(0 if ok else 1)
