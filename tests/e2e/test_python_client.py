#!/usr/bin/env python3
"""test_python_client.py - the official Kubernetes Python client against a
real `ckube server`: list, create, read, watch (with its True-valued query
booleans and newline-delimited events) and delete; and the wire details its
own tests compare byte for byte: two 409 bodies alike and ending with a line
break, the version call (on /version/), YAML in and out, pretty output and
/openapi/v2.

Usage: test_python_client.py PATH/TO/ckube [STORE_URL]
"""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

try:
    from kubernetes import client, config, watch
except ImportError:
    print("test_python_client: no kubernetes module (Debian package python3-kubernetes); skipping",
          file=sys.stderr)
    sys.exit(77)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw(core, method, path, body=None, headers=None):
    """One call through the client's own connection: (status, headers, body bytes)."""
    api = core.api_client
    url = api.configuration.host + path
    r = api.rest_client.pool_manager.request(method, url, body=body,
                                             headers={**(headers or {}),
                                                      **api.default_headers},
                                             preload_content=True)
    return r.status, r.headers, r.data


def wire_details(core, check):
    """The wire behaviours of docs/internals/api.md a client compares as text."""
    sa = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="py-twice"))
    core.create_namespaced_service_account("default", sa)
    bodies = []
    for _ in range(2):
        try:
            core.create_namespaced_service_account("default", sa)
        except client.ApiException as e:
            bodies.append((e.status, e.body))
    check("two 409 AlreadyExists bodies are the same text",
          len(bodies) == 2 and bodies[0] == bodies[1] and bodies[0][0] == 409)
    check("an error body ends with a line break",
          bodies and bodies[0][1].endswith("}\n"))
    core.delete_namespaced_service_account("py-twice", "default")

    version = client.VersionApi().get_code()
    check("the version call (GET /version/)", version.major == "1" and version.git_version)

    status, headers, body = raw(core, "GET", "/api/v1/namespaces/default",
                                headers={"Accept": "application/yaml"})
    check("Accept: application/yaml answers YAML",
          status == 200 and headers.get("Content-Type") == "application/yaml" and
          body.startswith(b"apiVersion: v1\nkind: Namespace\nmetadata:\n"))
    yaml_sa = b"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: py-yaml\n"
    status, _, body = raw(core, "POST", "/api/v1/namespaces/default/serviceaccounts",
                          body=yaml_sa, headers={"Content-Type": "application/yaml"})
    check("a YAML body creates", status == 201 and b'"name":"py-yaml"' in body)
    core.delete_namespaced_service_account("py-yaml", "default")

    status, _, body = raw(core, "GET", "/api/v1/namespaces/default?pretty=true")
    check("?pretty=true indents, without a final line break",
          status == 200 and body.startswith(b'{\n  "') and body.endswith(b"\n}"))
    status, _, body = raw(core, "GET", "/api/v1/namespaces/default")
    check("the client gets compact JSON with a line break",
          status == 200 and body.endswith(b"}\n") and b"\n" not in body[:-1])

    status, headers, body = raw(core, "GET", "/openapi/v2")
    etag = headers.get("ETag")
    check("/openapi/v2 is Swagger 2.0 with an ETag",
          status == 200 and b'"swagger":"2.0"' in body and etag)
    status, _, _ = raw(core, "GET", "/openapi/v2", headers={"If-None-Match": etag or ""})
    check("/openapi/v2 answers 304 to its ETag", status == 304)


def main():
    ckube = sys.argv[1]
    work = tempfile.mkdtemp()
    store = sys.argv[2] if len(sys.argv) > 2 else f"sqlite://{work}/state.db"
    port = free_port()
    server = subprocess.Popen(
        [ckube, "server", "--listen", f"127.0.0.1:{port}", "--data-dir", f"{work}/data",
         "--store", store],
        stdout=subprocess.DEVNULL, stderr=open(f"{work}/server.err", "w"))
    failures = []
    passes = 0

    def check(desc, ok):
        nonlocal passes
        if ok:
            passes += 1
        else:
            failures.append(desc)
            print(f"FAIL: {desc}")

    try:
        # ready, and the kubeconfig written (the server writes it once it serves)
        for _ in range(100):
            try:
                ctx = ssl.create_default_context(cafile=f"{work}/data/pki/ca.crt")
                if (urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz",
                                           context=ctx).read() == b"ok"
                        and os.path.exists(f"{work}/data/kubeconfig")):
                    break
            except OSError:
                pass
            time.sleep(0.1)
        config.load_kube_config(config_file=f"{work}/data/kubeconfig")
        core = client.CoreV1Api()
        apps = client.AppsV1Api()

        namespaces = [ns.metadata.name for ns in core.list_namespace().items]
        check("default and kube-system exist", {"default", "kube-system"} <= set(namespaces))
        check("empty pod list is a list", core.list_namespaced_pod("default").items == [])

        events = []

        def watch_pods():
            w = watch.Watch()
            for ev in w.stream(core.list_namespaced_pod, "default", timeout_seconds=10):
                events.append((ev["type"], ev["object"].metadata.name))
                if ev["type"] == "DELETED":
                    w.stop()

        watcher = threading.Thread(target=watch_pods)
        watcher.start()
        time.sleep(0.5)

        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name="py-1", labels={"app": "py"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox:1")]))
        created = core.create_namespaced_pod("default", pod)
        check("create returns the stored pod", created.metadata.uid and created.status.phase == "Pending")
        read = core.read_namespaced_pod("py-1", "default")
        check("read returns the same uid", read.metadata.uid == created.metadata.uid)
        listed = core.list_namespaced_pod("default", label_selector="app=py")
        check("list with a label selector", [p.metadata.name for p in listed.items] == ["py-1"])

        deploy = client.V1Deployment(
            metadata=client.V1ObjectMeta(name="py-deploy"),
            spec=client.V1DeploymentSpec(
                replicas=2,
                selector=client.V1LabelSelector(match_labels={"app": "pyd"}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": "pyd"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x:1")]))))
        made = apps.create_namespaced_deployment("default", deploy)
        check("deployment created with defaults", made.spec.revision_history_limit == 10)

        # dict bodies go as strategic merge patches, on the object and on /scale and /status
        patched = apps.patch_namespaced_deployment(
            "py-deploy", "default",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:2"}]}}}})
        check("strategic patch merges containers by name",
              [(c.name, c.image) for c in patched.spec.template.spec.containers] == [("c", "x:2")])
        scale = apps.patch_namespaced_deployment_scale("py-deploy", "default", {"spec": {"replicas": 4}})
        check("patch of the scale subresource", scale.spec.replicas == 4 and scale.status.replicas == 0)
        check("scale reads back", apps.read_namespaced_deployment_scale("py-deploy", "default").spec.replicas == 4)
        status = apps.patch_namespaced_deployment_status(
            "py-deploy", "default", {"status": {"observedGeneration": 3, "replicas": 1}})
        check("status patch writes status only",
              status.status.observed_generation == 3 and status.spec.replicas == 4)
        gone = apps.delete_namespaced_deployment(
            "py-deploy", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
        held = apps.read_namespaced_deployment("py-deploy", "default")
        check("foreground delete leaves the deployment with its finalizer",
              held.metadata.finalizers == ["foregroundDeletion"] and
              held.metadata.deletion_timestamp is not None and gone is not None)

        try:
            core.read_namespaced_pod("nope", "default")
            check("missing pod raises 404", False)
        except client.ApiException as e:
            check("missing pod raises 404", e.status == 404)

        wire_details(core, check)

        core.delete_namespaced_pod("py-1", "default")
        watcher.join(timeout=15)
        check("watch saw ADDED then DELETED",
              ("ADDED", "py-1") in events and ("DELETED", "py-1") in events)
    finally:
        server.terminate()
        server.wait(timeout=10)
        if failures:
            print(open(f"{work}/server.err").read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passes} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
