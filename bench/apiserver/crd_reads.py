#!/usr/bin/env python3
"""crd_reads.py - what defaulting on read costs a custom resource's GET and LIST.

Usage (after building ckube optimised, as bench/apiserver/run-crd.sh does):

    crd_reads.py --ckube BIN [--runs 5] [--seconds 5] [--objects 100]

On loopback, with one `ckube server` on SQLite (plain HTTP, no controllers),
two definitions of the same CronTab schema are installed: one with the
schema's defaults (spec.replicas, spec.paused), so every object read is
decoded, defaulted and encoded again, and one without them, whose objects are
served as stored (the path every read took before defaulting on read). Each
gets --objects identical objects (every field set). wrk (2 threads, 16
keep-alive clients) then GETs one object and LISTs all of them, for each
definition and for pods (the built-in reference), alternating run by run.
Prints the raw runs, the medians and the ratios to the definition without
defaults.
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (the shared helpers: servers, wrk, requests)
from crd import CRONTAB_CRD, start_server, wait_established  # noqa: E402

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "bench"}},
       "spec": {"containers": [{"name": "c", "image": "my-awesome-cron-image"}]}}


def without_defaults():
    """The CronTab definition as another group, its schema without defaults."""
    crd = json.loads(json.dumps(CRONTAB_CRD))
    crd["metadata"]["name"] = "crontabs.plain.example.com"
    crd["spec"]["group"] = "plain.example.com"
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for p in props.values():
        p.pop("default", None)
    return crd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5, help="duration of each wrk run")
    ap.add_argument("--objects", type=int, default=100)
    args = ap.parse_args()

    servers = bench.Servers()
    cases = {}
    with tempfile.TemporaryDirectory(prefix="ckube-bench-crd-reads-") as tmp:
        try:
            load_start = os.getloadavg()[0]
            port, _ = start_server(servers, args.ckube, tmp, "sqlite")
            bench.namespace(port, "b")
            for crd in (CRONTAB_CRD, without_defaults()):
                bench.must(*bench.request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                          crd), "create a definition")
            wait_established(port, 2)
            collections = {
                "pod": "/api/v1/namespaces/b/pods",
                "cr, defaults": "/apis/stable.example.com/v1/namespaces/b/crontabs",
                "cr, no defaults": "/apis/plain.example.com/v1/namespaces/b/crontabs",
            }
            for name, path in collections.items():
                for i in range(args.objects):
                    if name == "pod":
                        obj = json.loads(json.dumps(POD))
                    else:
                        obj = {"apiVersion": path.split("/")[2] + "/v1", "kind": "CronTab",
                               "metadata": {"labels": {"app": "bench"}},
                               "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image",
                                        "replicas": 2, "paused": False}}
                    obj["metadata"]["name"] = f"o{i}"
                    bench.must(*bench.request(port, "POST", path, obj), f"create {name} {i}")
                for verb, suffix in (("GET", "/o0"), ("LIST", "")):
                    cases[(verb, name)] = (f"http://127.0.0.1:{port}{path}{suffix}", [])
            for _ in range(args.runs):
                for url, runs in cases.values():
                    runs.append(bench.wrk(url, 2, 16, args.seconds)["rps"])
            load_end = os.getloadavg()[0]
        finally:
            servers.stop()

    print(f"machine: {os.cpu_count()} CPUs; {args.runs} runs of {args.seconds} s each, alternating, "
          f"medians; {args.objects} objects per LIST; load average (1 min) at start {load_start:.1f}, "
          f"at end {load_end:.1f}")
    for verb in ("GET", "LIST"):
        base = bench.median(cases[(verb, "cr, no defaults")][1])
        for name in ("pod", "cr, no defaults", "cr, defaults"):
            runs = cases[(verb, name)][1]
            m = bench.median(runs)
            print(f"{verb:4} {name:16} {m:8.0f}/s  x{m / base:5.2f}   runs {' '.join(f'{x:.0f}' for x in runs)}")


if __name__ == "__main__":
    main()
