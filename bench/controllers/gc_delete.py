#!/usr/bin/env python3
"""gc_delete.py - the garbage collector's and the namespace controller's deletion times.

Usage: gc_delete.py URL RS PODS

Against a server whose garbage collector and namespace controller run (and no
ReplicaSet controller: the ReplicaSets have replicas 0 and the benchmark creates
their pods itself, owned by them):
  1. a namespace holding RS ReplicaSets with PODS pods each is deleted; time until
     the namespace is gone;
  2. the reference: a client deleting the same objects directly (8 threads);
  3. RS ReplicaSets of PODS pods deleted in background; time until the last pod is gone.
"""
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

url, n_rs, n_pods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


def populate(ns):
    call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": ns}})
    owners = []
    for i in range(n_rs):
        _, rs = call("POST", f"/apis/apps/v1/namespaces/{ns}/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": f"rs{i}"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"rs": f"rs{i}"}},
                     "template": {"metadata": {"labels": {"rs": f"rs{i}"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
        owners.append(rs["metadata"])

    def pod(k):
        o = owners[k % n_rs]
        call("POST", f"/api/v1/namespaces/{ns}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "p-", "labels": {"rs": o["name"]},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": o["name"], "uid": o["uid"],
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(pod, range(n_rs * n_pods)))


def wait(cond):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > 1800:
            sys.exit("timed out after 30 minutes")
        time.sleep(0.05)


def pods_left(ns):
    return call("GET", f"/api/v1/namespaces/{ns}/pods?limit=1")[1]["items"]


total = n_rs * n_pods
populate("bench-ns")
t0 = time.monotonic()
call("DELETE", "/api/v1/namespaces/bench-ns")
wait(lambda: call("GET", "/api/v1/namespaces/bench-ns")[0] == 404)
t_ns = time.monotonic() - t0

populate("bench-ref")
t0 = time.monotonic()
_, pods = call("GET", "/api/v1/namespaces/bench-ref/pods")
names = [p["metadata"]["name"] for p in pods["items"]]
with ThreadPoolExecutor(8) as ex:
    list(ex.map(lambda n: call("DELETE", f"/api/v1/namespaces/bench-ref/pods/{n}"), names))
    list(ex.map(lambda i: call("DELETE", f"/apis/apps/v1/namespaces/bench-ref/replicasets/rs{i}"),
                range(n_rs)))
t_ref = time.monotonic() - t0

populate("bench-bg")
t0 = time.monotonic()
bg = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
with ThreadPoolExecutor(8) as ex:
    list(ex.map(lambda i: call("DELETE", f"/apis/apps/v1/namespaces/bench-bg/replicasets/rs{i}",
                               bg), range(n_rs)))
wait(lambda: not pods_left("bench-bg"))
t_bg = time.monotonic() - t0

print(f"objects per run                  {n_rs} ReplicaSets, {total} pods")
print(f"namespace deleted (controllers)  {t_ns:8.2f} s")
print(f"same objects deleted by a client {t_ref:8.2f} s   (reference, 8 threads)")
print(f"background delete, last pod gone {t_bg:8.2f} s   ({total / t_bg:.0f} pods/s)")
