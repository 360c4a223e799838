#!/usr/bin/env python3
# cri_pod_start.py - the timing side of cri_pod_start.sh: pods created through the API
# server and watched until the agent reports them Running; `ctr run` of the same image
# timed alone; the per-pod steps read back from containerd's and the agent's logs.
#
#   cri_pod_start.py pods URL PKI_DIR MODE N IMAGE PREFIX OUT.json
#       MODE seq: one pod at a time, the next created once the last one runs;
#       MODE all: N pods created back to back, then all waited for.
#       Each pod is bound to node n1 (spec.nodeName: no scheduler in the path), one
#       container `sleep 3600`. A watch opened before the first create stamps each
#       pod's ADDED event and the first event whose containerStatuses[0].state is
#       running (phase Running): the latency is the difference, both stamped on the
#       same clock by the same reader. Writes {name: [added, running]} (wall clock).
#   cri_pod_start.py ctr SOCKET IMAGE CGROUP RUNS OUT.json
#       `ctr -n k8s.io run -d` of IMAGE `sleep 3600`, one container at a time: the
#       seconds from the invocation until it returns (ctr returns once the task is
#       started), checked RUNNING in `ctr task ls`; then `ctr run --rm IMAGE ID true`
#       (create, start, exit, delete). Everything it made is deleted.
#   cri_pod_start.py steps OUT.json AGENT_LOG [CONTAINERD_LOG]
#       per pod: ADDED to the agent's "Pod added" (the wait for its 200 ms tick), from
#       there to the CRI's RunPodSandbox, RunPodSandbox, from its return to
#       CreateContainer (the agent's image check), CreateContainer, StartContainer, and
#       from its return to Running in the watch (the status write); the agent's own
#       time is the latency less the three CRI calls. Without containerd's log (the
#       process runtime): "Pod added" to "Container started", then the status write.
#       Medians and p99.
#   cri_pod_start.py summary RESULTS_DIR
#       medians, p99 and ratios of everything above.
import datetime
import http.client
import json
import os
import re
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse


def pct(values, p):
    """The nearest-rank percentile p (0-100) of values."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def ms(x):
    return "%.1f ms" % (x * 1000)


class Api:
    def __init__(self, url, pki):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.conn = self.connect()

    def connect(self):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=300)

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        out = r.read()
        if r.status >= 300:
            raise SystemExit("%s %s: %d %s" % (method, path, r.status, out[:300]))
        return json.loads(out)


def pods(url, pki, mode, n, image, prefix, out):
    api = Api(url, pki)
    rv = api.request("GET", "/api/v1/namespaces/default/pods")["metadata"]["resourceVersion"]
    added, running = {}, {}
    cond = threading.Condition()
    wconn = api.connect()
    wconn.request("GET", "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=false"
                  "&resourceVersion=" + rv)
    resp = wconn.getresponse()
    if resp.status != 200:
        raise SystemExit("watch: %d" % resp.status)

    def reader():
        while True:
            line = resp.readline()
            if not line:
                return
            t = time.time()
            ev = json.loads(line)
            obj = ev.get("object", {})
            name = obj.get("metadata", {}).get("name", "")
            if not name.startswith(prefix):
                continue
            with cond:
                if ev["type"] == "ADDED" and name not in added:
                    added[name] = t
                st = obj.get("status", {}).get("containerStatuses") or [{}]
                if name not in running and "running" in st[0].get("state", {}):
                    running[name] = t
                    cond.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def create(i):
        name = "%s-%d" % (prefix, i)
        api.request("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": image, "command": ["sleep", "3600"]}]}})
        return name

    def wait(names, timeout):
        deadline = time.time() + timeout
        with cond:
            while not all(x in running for x in names):
                left = deadline - time.time()
                if left <= 0:
                    raise SystemExit("%d of %d pods not Running after %d s" %
                                     (sum(x not in running for x in names), len(names), timeout))
                cond.wait(left)

    t0 = time.time()
    if mode == "seq":
        for i in range(n):
            wait([create(i)], 120)
    else:
        wait([create(i) for i in range(n)], 600)
    wall = time.time() - t0
    with cond:
        res = {x: [added[x], running[x]] for x in running}
    with open(out, "w") as f:
        json.dump({"wall": wall, "pods": res}, f)
    lat = [r - a for a, r in res.values()]
    print("%s: %d pods in %.2f s; latency median %s p99 %s max %s" %
          (prefix, n, wall, ms(statistics.median(lat)), ms(pct(lat, 99)), ms(max(lat))))


def ctr(sock, image, cgroup, runs, out):
    base = ["ctr", "-a", sock, "-n", "k8s.io"]
    detached, rm = [], []
    try:
        for i in range(runs):
            cid = "ctr-bench-%d" % i
            t = time.time()
            subprocess.run(base + ["run", "-d", "--cgroup", "%s/%s" % (cgroup, cid), image, cid,
                                   "sleep", "3600"], check=True, stdout=subprocess.DEVNULL)
            detached.append(time.time() - t)
            tasks = subprocess.run(base + ["task", "ls"], check=True, capture_output=True,
                                   text=True).stdout
            if not re.search(r"^%s\s+\d+\s+RUNNING" % cid, tasks, re.M):
                raise SystemExit("ctr: %s not RUNNING after `ctr run -d`:\n%s" % (cid, tasks))
        for i in range(runs):
            cid = "ctr-bench-rm-%d" % i
            t = time.time()
            subprocess.run(base + ["run", "--rm", "--cgroup", "%s/%s" % (cgroup, cid), image, cid,
                                   "true"], check=True)
            rm.append(time.time() - t)
    finally:
        for i in range(runs):
            cid = "ctr-bench-%d" % i
            subprocess.run(base + ["task", "kill", "-s", "SIGKILL", cid], capture_output=True)
        time.sleep(0.5)
        for i in range(runs):
            cid = "ctr-bench-%d" % i
            subprocess.run(base + ["task", "delete", "-f", cid], capture_output=True)
            subprocess.run(base + ["container", "delete", cid], capture_output=True)
    with open(out, "w") as f:
        json.dump({"run_d": detached, "run_rm": rm}, f)
    print("ctr run -d: median %s p99 %s; ctr run --rm ... true: median %s (%d runs each)" %
          (ms(statistics.median(detached)), ms(pct(detached, 99)), ms(statistics.median(rm)), runs))


def log_time(s):
    # containerd: time="2026-12-06T22:00:00.123456789Z"; nanoseconds cut to microseconds
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", s)
    frac = (m.group(2) or ".0")[:7]
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(m.group(1) + frac + tz).timestamp()


def agent_log(log, year):
    """{pod: {"added": t, "started": t}} from the agent's klog lines (UTC, no year)."""
    ev = {}
    line_re = re.compile(r'^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) .*?"(Pod added|Container started)"'
                         r'.*? pod="([^"]+)"')
    for line in open(log, errors="replace"):
        m = line_re.match(line)
        if not m:
            continue
        mo, d, h, mi, sec, us = (int(x) for x in m.groups()[:6])
        t = datetime.datetime(year, mo, d, h, mi, sec, us, datetime.timezone.utc).timestamp()
        key = "added" if m.group(7) == "Pod added" else "started"
        ev.setdefault(m.group(8), {}).setdefault(key, t)
    return ev


def containerd_log(log):
    """{pod: {step: t}} of the CRI calls in containerd's log (info level)."""
    ev = {}
    sandbox_pod, ctr_pod = {}, {}
    msg_re = re.compile(r'time="([^"]+)".*?msg="((?:[^"\\]|\\.)*)"')
    for line in open(log, errors="replace"):
        m = msg_re.search(line)
        if not m:
            continue
        t, msg = log_time(m.group(1)), m.group(2).replace('\\"', '"')
        if msg.startswith("RunPodSandbox for"):
            name = re.search(r"Name:([^,]+),", msg).group(1)
            r = re.search(r'returns sandbox id "([0-9a-f]+)"', msg)
            if r:
                ev.setdefault(name, {})["sandbox_end"] = t
                sandbox_pod[r.group(1)] = name
            else:
                ev.setdefault(name, {}).setdefault("sandbox_start", t)
        elif msg.startswith("CreateContainer within sandbox"):
            sid = re.search(r'sandbox "([0-9a-f]+)"', msg).group(1)
            name = sandbox_pod.get(sid)
            if not name:
                continue
            r = re.search(r'returns container id "([0-9a-f]+)"', msg)
            if r:
                ev[name]["create_end"] = t
                ctr_pod[r.group(1)] = name
            else:
                ev[name].setdefault("create_start", t)
        elif msg.startswith("StartContainer for"):
            cid = re.search(r'for "([0-9a-f]+)"', msg).group(1)
            name = ctr_pod.get(cid)
            if not name:
                continue
            ev[name]["start_end" if "returns successfully" in msg else "start_start"] = t
    return ev


def steps(result, alog, clog):
    pods = json.load(open(result))["pods"]
    year = datetime.datetime.fromtimestamp(min(a for a, _ in pods.values()),
                                           datetime.timezone.utc).year
    ag = agent_log(alog, year)
    ev = containerd_log(clog) if clog else {}
    keys = ["sandbox_start", "sandbox_end", "create_start", "create_end", "start_start",
            "start_end"]
    parts = {}

    def add(k, v):
        parts.setdefault(k, []).append(v)

    for name, (added, running) in pods.items():
        a = ag.get(name, {})
        if "added" not in a or "started" not in a:
            continue
        add("tick wait", a["added"] - added)  # ADDED in a watch to the tick that takes it
        e = ev.get(name, {})
        if all(k in e for k in keys):
            calls = ((e["sandbox_end"] - e["sandbox_start"]) + (e["create_end"] - e["create_start"]) +
                     (e["start_end"] - e["start_start"]))
            add("to RunPodSandbox", e["sandbox_start"] - a["added"])
            add("RunPodSandbox", e["sandbox_end"] - e["sandbox_start"])
            add("image check", e["create_start"] - e["sandbox_end"])
            add("CreateContainer", e["create_end"] - e["create_start"])
            add("StartContainer", e["start_end"] - e["start_start"])
            add("status write", running - e["start_end"])
            add("the agent's own", running - added - calls)
            add("the agent less the tick", running - a["added"] - calls)
        else:
            add("tick to started", a["started"] - a["added"])
            add("status write", running - a["started"])
    n = len(parts.get("tick wait", []))
    print("  steps of %d pods (the agent's -v 2 log%s), median (p99):" %
          (n, " and containerd's" if clog else ""))
    for k, v in parts.items():
        print("    %-24s %10s (%s)" % (k, ms(statistics.median(v)), ms(pct(v, 99))))


def summary(d):
    def lat(name):
        p = json.load(open(os.path.join(d, name)))["pods"]
        return [r - a for a, r in p.values()]

    c = json.load(open(os.path.join(d, "ctr.json")))
    ctr_med = statistics.median(c["run_d"])
    rows = {}
    for rt in ["cri", "process"]:
        for mode in ["seq", "all"]:
            f = "%s-%s.json" % (rt, mode)
            if os.path.exists(os.path.join(d, f)):
                v = lat(f)
                rows[rt, mode] = (statistics.median(v), pct(v, 99))
    print("summary (pod created -> Running seen in a watch):")
    for (rt, mode), (p50, p99) in rows.items():
        line = "  %-7s %-3s median %10s  p99 %10s" % (rt, mode, ms(p50), ms(p99))
        if rt == "cri":
            line += "  / ctr run -d: %.2f" % (p50 / ctr_med)
            if ("process", mode) in rows:
                line += "  / process: %.2f" % (p50 / rows["process", mode][0])
        print(line)
    print("  ctr run -d median %s, ctr run --rm true median %s" %
          (ms(ctr_med), ms(statistics.median(c["run_rm"]))))
    if ("cri", "seq") in rows:
        print("  the agent's addition, sequential median - ctr run -d median: %s (target < 50 ms)" %
              ms(rows["cri", "seq"][0] - ctr_med))


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "pods":
        pods(a[2], a[3], a[4], int(a[5]), a[6], a[7], a[8])
    elif a[1] == "ctr":
        ctr(a[2], a[3], a[4], int(a[5]), a[6])
    elif a[1] == "steps":
        steps(a[2], a[3], a[4] if len(a) > 4 else None)
    elif a[1] == "summary":
        summary(a[2])
