#!/usr/bin/env python3
"""crd.py - custom resources beside built-in kinds: create rate and memory.

Usage (after building ckube optimised, as bench/apiserver/run-crd.sh does):

    crd.py --ckube BIN [--runs 5] [--seconds 5] [--crds 1000]

On loopback, with one `ckube server` on SQLite (plain HTTP, no controllers),
it measures:
  - creates per second of a custom resource (the CronTab of Kubernetes'
    documentation, with defaults and a status subresource) and of a pod, from
    16 keep-alive clients (wrk, 2 threads), the two alternating run by run,
    in two namespaces of the same server; the medians and their ratio (the
    target is custom resources at >= 90% of pods); and, alternating with them,
    the same CronTab kind in another group whose spec has five CEL rules
    (x-kubernetes-validations: a regular expression, sizes, a cross-field
    rule), against the kind without rules (the target is >= 90%);
  - the memory of 1,000 CustomResourceDefinitions installed: the server's
    VmRSS before, once all of them are Established and served (discovery
    lists them), and the time that took; each definition has a schema of
    four fields and two printer columns; then, on the server restarted with
    them stored, the time of GET /apis, the OpenAPI v3 index (twice: the
    second is served from the index kept for the registry snapshot) and
    /openapi/v2.
Prints the raw runs, the medians and whether the target is met.
"""
import argparse
import http.client
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (the shared helpers: servers, wrk, requests)

CRONTAB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "paused": {"type": "boolean", "default": False}},
                    "required": ["cronSpec"]},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
        }],
    },
}


# the CronTab definition again, in the group rules.example.com, with five CEL rules on spec
RULES_CRD = json.loads(json.dumps(CRONTAB_CRD))
RULES_CRD["metadata"]["name"] = "crontabs.rules.example.com"
RULES_CRD["spec"]["group"] = "rules.example.com"
RULES_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
    "x-kubernetes-validations"] = [
    {"rule": r"self.cronSpec.matches('^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$')",
     "message": "cronSpec must be a cron schedule"},
    {"rule": "!has(self.image) || self.image.size() <= 253", "message": "image too long"},
    {"rule": "!has(self.image) || !self.image.contains(' ')", "message": "image has a space"},
    {"rule": "self.replicas >= 1 && self.replicas <= 10", "message": "replicas out of range"},
    {"rule": "!self.paused || self.replicas == 1", "message": "a paused CronTab has one replica"}]


def small_crd(i):
    """Definition number i of the memory run: its own group, a four-field schema."""
    crd = json.loads(json.dumps(CRONTAB_CRD))
    group = f"g{i}.bench.example.com"
    crd["metadata"]["name"] = f"widgets.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["names"] = {"plural": "widgets", "singular": "widget", "kind": "Widget"}
    return crd


def established(crd):
    for c in crd.get("status", {}).get("conditions", []):
        if c.get("type") == "Established" and c.get("status") == "True":
            return True
    return False


def wait_established(port, count, deadline_s=600):
    """Waits until count definitions are Established; returns how long it took."""
    start = time.time()
    while time.time() - start < deadline_s:
        status, body = bench.request(port, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        if status == 200:
            items = json.loads(body)["items"]
            if sum(1 for c in items if established(c)) >= count:
                return time.time() - start
        time.sleep(0.2)
    sys.exit(f"bench: {count} definitions not established after {deadline_s} s")


def start_server(servers, ckube, tmp, name):
    """ckube server on SQLite, plain HTTP, without controllers (no scheduler acts on the pods)."""
    port = bench.free_port()
    argv = [ckube, "server", "--disable-agent", "--disable-dns",
            "--insecure-plain-http", "--listen", f"127.0.0.1:{port}",
            "--data-dir", os.path.join(tmp, name), "--controllers=-*"]
    proc = servers.start(argv, open(os.path.join(tmp, name + ".log"), "w"))
    bench.wait_ready(port, proc, f"ckube ({name})")
    return port, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckube", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5, help="duration of each wrk run")
    ap.add_argument("--crds", type=int, default=1000)
    args = ap.parse_args()

    servers = bench.Servers()
    with tempfile.TemporaryDirectory(prefix="ckube-bench-crd-") as tmp:
        try:
            load_start = os.getloadavg()[0]
            port, proc = start_server(servers, args.ckube, tmp, "sqlite")
            for ns in ("pods", "crs", "rules"):
                bench.namespace(port, ns)
            bench.must(*bench.request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      CRONTAB_CRD), "create the CronTab definition")
            bench.must(*bench.request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      RULES_CRD), "create the CronTab definition with rules")
            wait_established(port, 2)
            url = f"http://127.0.0.1:{port}"
            pods, crs, ruled = [], [], []
            for _ in range(args.runs):
                pods.append(bench.wrk(url, 2, 16, args.seconds, "create.lua", ["pods"])["rps"])
                crs.append(bench.wrk(url, 2, 16, args.seconds, "create_cr.lua", ["crs"])["rps"])
                ruled.append(bench.wrk(url, 2, 16, args.seconds, "create_cr.lua",
                                       ["rules", "rules.example.com"])["rps"])
            servers.stop()

            # memory: a fresh server, then --crds definitions
            servers = bench.Servers()
            port, proc = start_server(servers, args.ckube, tmp, "memory")
            time.sleep(1)
            before = bench.rss_kib(proc.pid)
            start = time.time()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for i in range(args.crds):
                bench.must(*bench.request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                          small_crd(i), conn), f"create definition {i}")
            created = time.time() - start
            took = wait_established(port, args.crds)
            # Established is written first; the pass that reads it back registers the kinds
            for _ in range(600):
                served = [bench.request(port, "GET", f"/apis/g{i}.bench.example.com/v1")[0]
                          for i in (0, args.crds // 2, args.crds - 1)]
                if served == [200, 200, 200]:
                    break
                time.sleep(0.1)
            else:
                sys.exit(f"bench: the definitions are not all served: HTTP {served}")
            took = time.time() - start - created
            time.sleep(1)
            after = bench.rss_kib(proc.pid)
            # the same definitions served by a restarted server: what they cost in steady state
            servers.stop()
            servers = bench.Servers()
            start = time.time()
            port, proc = start_server(servers, args.ckube, tmp, "memory")
            restart_ready = time.time() - start
            status, _ = bench.request(port, "GET", f"/apis/g{args.crds - 1}.bench.example.com/v1")
            if status != 200:
                sys.exit(f"bench: after a restart the definitions are not served: HTTP {status}")
            time.sleep(1)
            restarted = bench.rss_kib(proc.pid)
            # what clients read about them: discovery and OpenAPI (the index twice: cached)
            reads = []
            for path in ("/apis", "/openapi/v3", "/openapi/v3", "/openapi/v2"):
                t0 = time.time()
                status, body = bench.request(port, "GET", path)
                if status != 200:
                    sys.exit(f"bench: GET {path}: HTTP {status}")
                reads.append((path, len(body), time.time() - t0))
            load_end = os.getloadavg()[0]
        finally:
            servers.stop()

    pm, cm, rm = bench.median(pods), bench.median(crs), bench.median(ruled)
    print(f"machine: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}; {args.runs} runs of "
          f"{args.seconds} s each, alternating, medians; load average (1 min) at start {load_start:.1f}, "
          f"at end {load_end:.1f}")
    print(f"creates/s pod                 {pm:8.0f}   runs {' '.join(f'{x:.0f}' for x in pods)}")
    print(f"creates/s custom resource     {cm:8.0f}   runs {' '.join(f'{x:.0f}' for x in crs)}")
    print(f"ratio custom resource / pod   {cm / pm:8.2f}")
    print(f"creates/s with 5 CEL rules    {rm:8.0f}   runs {' '.join(f'{x:.0f}' for x in ruled)}")
    print(f"ratio with rules / without    {rm / cm:8.2f}")
    print(f"{args.crds} definitions: created in {created:.1f} s, all Established and served after "
          f"{took:.1f} s more")
    print(f"RSS KiB before {before}, after {after}: {(after - before) / 1024:.1f} MiB, "
          f"{(after - before) / args.crds:.1f} KiB per definition")
    print(f"restarted with them stored: ready in {restart_ready:.1f} s, serving them; RSS KiB {restarted}: "
          f"{(restarted - before) / 1024:.1f} MiB over an empty server, "
          f"{(restarted - before) / args.crds:.1f} KiB per definition")
    for path, size, took_s in reads:
        print(f"GET {path:12} {size:8d} bytes {took_s * 1000:8.1f} ms")
    ok = cm >= 0.9 * pm
    print(f"target custom resources >= 90% of pods   {'met' if ok else 'MISSED'} ({cm / pm:.0%})")
    ok = rm >= 0.9 * cm
    print(f"target 5 CEL rules >= 90% of none        {'met' if ok else 'MISSED'} ({rm / cm:.0%})")


if __name__ == "__main__":
    main()
