#!/usr/bin/env python3
"""test_python_client.py - the official Kubernetes Python client against a
real `ckube server`: list, create, read, watch (with its True-valued query
booleans and newline-delimited events) and delete; and the wire details its
own tests compare byte for byte: two 409 bodies alike and ending with a line
break, the version call (on /version/), YAML in and out, pretty output and
/openapi/v2.

Then the calls of the client's own end-to-end tests for Jobs, DaemonSets and
ReplicationControllers (kubernetes-client/python: kubernetes/e2e_test/
test_batch.py test_job_apis, test_apps.py test_create_daemonset,
test_client.py test_replication_controller_apis, test_utils.py
test_create_from_multi_resource_yaml, test_create_multi_resource_from_directory
and test_create_from_multi_resource_yaml_with_conflict over their YAML files,
and kubernetes/base dynamic/test_client.py test_replication_controller_apis),
with the same manifests, client calls and assertions, run here in one process;
and patch, scale and status reads of the three kinds through the same APIs.

And the dynamic client's discovery cache (kubernetes/base dynamic/
test_discovery.py): a second client reads the cache file without rewriting it,
and every Resource and Subresource decoded from that file equals the one built
from the live discovery answer, storageVersionHash included.

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


# The YAML files of the client's e2e_test/test_yaml the multi-resource tests read.
MULTI_RESOURCE_SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: mock
  labels:
    app: mock
spec:
  ports:
  - port: 99
    protocol: TCP
    targetPort: 9949
  selector:
    app: mock
"""
MULTI_RESOURCE_RC = """apiVersion: v1
kind: ReplicationController
metadata:
  name: mock
spec:
  replicas: 1
  selector:
    app: mock
  template:
    metadata:
      labels:
        app: mock
    spec:
      containers:
      - name: mock-container
        image: k8s.gcr.io/pause:2.0
        ports:
        - containerPort: 9949
          protocol: TCP
"""


def discovery_cache_tests(work, check):
    """The dynamic client's discovery cache file, as its test_discovery.py uses it."""
    import base64
    import hashlib
    from kubernetes.dynamic import DynamicClient

    cache = f"{work}/discovery-cache.json"

    def dynamic():
        return DynamicClient(client.api_client.ApiClient(), cache_file=cache)

    # test_init_cache_from_file: the second client reads the file, never writes it
    dynamic().resources.get(api_version='v1', kind='Node')
    mtime1 = os.path.getmtime(cache)
    time.sleep(0.05)
    dynamic().resources.get(api_version='v1', kind='Node')
    check("discovery cache: a second client does not rewrite the file",
          mtime1 == os.path.getmtime(cache))

    # test_cache_decoder_resource_and_subresource. Its `deploy1 == deploy2` is
    # identity in this client (Resource and Subresource define no __eq__), false
    # against any server; what it means is that the decoded Resource is the live
    # one, attribute for attribute, which is what is compared here.
    def state(r):
        d = {k: v for k, v in vars(r).items() if k not in ('client', 'parent', 'subresources')}
        if vars(r).get('subresources') is not None:
            d['subresources'] = {k: state(sub) for k, sub in r.subresources.items()}
        return d

    dynamic().resources.invalidate_cache()
    deploy1 = dynamic().resources.get(kind='Deployment')  # from the live answer
    deploy2 = dynamic().resources.get(kind='Deployment')  # decoded from the file
    check("discovery cache: the decoded Deployment resource is the live one",
          deploy1 is not deploy2 and state(deploy1) == state(deploy2) and
          deploy1.to_dict() == deploy2.to_dict())
    check("discovery cache: its status subresource too",
          state(deploy1.status) == state(deploy2.status) and
          deploy1.status.to_dict() == deploy2.status.to_dict())

    # every resource of every group, live against decoded
    live_client = dynamic()
    live_client.resources.invalidate_cache()
    live = {(r.group, r.api_version, r.kind, vars(r).get('name')): r
            for rs in live_client.resources for r in rs}
    decoded = {(r.group, r.api_version, r.kind, vars(r).get('name')): r
               for rs in dynamic().resources for r in rs}
    differ = [k for k in live if k not in decoded or state(live[k]) != state(decoded[k])]
    check(f"discovery cache: every resource decodes as it was discovered ({differ})",
          len(live) > 40 and set(live) == set(decoded) and not differ)

    # kube-apiserver's storageVersionHash: sha256("apps/v1/Deployment")[:8] in base64
    want = base64.b64encode(hashlib.sha256(b"apps/v1/Deployment").digest()[:8]).decode()
    check("discovery: deployments carry the storageVersionHash of apps/v1 Deployment",
          deploy1.extra_args.get('storageVersionHash') == want and
          deploy2.extra_args.get('storageVersionHash') == want and
          'storageVersionHash' not in deploy1.status.extra_args)


def workload_tests(work, check):
    """The client's own e2e tests for Jobs, DaemonSets and ReplicationControllers."""
    import uuid
    from kubernetes import utils
    from kubernetes.dynamic import DynamicClient

    k8s_client = client.api_client.ApiClient()
    batch = client.BatchV1Api(k8s_client)
    apps = client.AppsV1Api(k8s_client)
    core = client.CoreV1Api(k8s_client)

    # test_batch.py: test_job_apis
    name = 'test-job-' + str(uuid.uuid4())
    job_manifest = {
        'kind': 'Job',
        'spec': {
            'template':
                {'spec':
                    {'containers': [
                        {'image': 'busybox',
                         'name': name,
                         'command': ["sh", "-c", "sleep 5"]
                         }],
                        'restartPolicy': 'Never'},
                    'metadata': {'name': name}}},
        'apiVersion': 'batch/v1',
        'metadata': {'name': name}}
    resp = batch.create_namespaced_job(body=job_manifest, namespace='default')
    check("job: create returns its name", name == resp.metadata.name)
    resp = batch.read_namespaced_job(name=name, namespace='default')
    check("job: read returns its name", name == resp.metadata.name)
    # beyond the client's test: a patch and the status read
    resp = batch.patch_namespaced_job(name, 'default', {'metadata': {'labels': {'py': 'yes'}}})
    check("job: a strategic patch adds a label", resp.metadata.labels.get('py') == 'yes')
    resp = batch.read_namespaced_job_status(name, 'default')
    check("job: the status read has the defaults",
          resp.spec.backoff_limit == 6 and resp.spec.completions == 1 and
          resp.spec.parallelism == 1)
    resp = batch.delete_namespaced_job(name=name, body={}, namespace='default')
    check("job: delete answers", resp is not None)

    # test_apps.py: test_create_daemonset
    name = 'nginx-app-' + str(uuid.uuid4())
    daemonset = {
        'apiVersion': 'apps/v1',
        'kind': 'DaemonSet',
        'metadata': {
            'labels': {'app': 'nginx'},
            'name': '%s' % name,
        },
        'spec': {
            'selector': {
                'matchLabels': {'app': 'nginx'},
            },
            'template': {
                'metadata': {
                    'labels': {'app': 'nginx'},
                    'name': name},
                'spec': {
                    'containers': [
                        {'name': 'nginx-app',
                         'image': 'nginx:1.15.4'},
                    ],
                },
            },
            'updateStrategy': {
                'type': 'RollingUpdate',
            },
        }
    }
    apps.create_namespaced_daemon_set('default', body=daemonset)
    resp = apps.read_namespaced_daemon_set(name, 'default')
    check("daemonset: read", resp is not None and resp.metadata.name == name)
    check("daemonset: selector", resp.spec.selector.match_labels['app'] == 'nginx')
    check("daemonset: template labels", resp.spec.template.metadata.labels['app'] == 'nginx')
    check("daemonset: container name", resp.spec.template.spec.containers[0].name == 'nginx-app')
    check("daemonset: container image",
          resp.spec.template.spec.containers[0].image == 'nginx:1.15.4')
    # beyond the client's test: a strategic patch of the image, merged by container name
    resp = apps.patch_namespaced_daemon_set(
        name, 'default',
        {'spec': {'template': {'spec': {'containers': [{'name': 'nginx-app',
                                                        'image': 'nginx:1.16'}]}}}})
    check("daemonset: patch merges the container by name",
          [(c.name, c.image) for c in resp.spec.template.spec.containers] ==
          [('nginx-app', 'nginx:1.16')] and resp.metadata.generation == 2)
    check("daemonset: the status read",
          apps.read_namespaced_daemon_set_status(name, 'default').metadata.name == name)
    options = client.V1DeleteOptions()
    apps.delete_namespaced_daemon_set(name, 'default', body=options)

    # test_client.py: test_replication_controller_apis
    name = 'frontend-' + str(uuid.uuid4())[-12:]
    rc_manifest = {
        'apiVersion': 'v1',
        'kind': 'ReplicationController',
        'metadata': {'labels': {'name': name},
                     'name': name},
        'spec': {'replicas': 2,
                 'selector': {'name': name},
                 'template': {'metadata': {
                     'labels': {'name': name}},
                     'spec': {'containers': [{
                         'image': 'nginx',
                         'name': 'nginx',
                         'ports': [{'containerPort': 80,
                                    'protocol': 'TCP'}]}]}}}}
    resp = core.create_namespaced_replication_controller(body=rc_manifest, namespace='default')
    check("rc: create", name == resp.metadata.name and 2 == resp.spec.replicas)
    resp = core.read_namespaced_replication_controller(name=name, namespace='default')
    check("rc: read", name == resp.metadata.name and 2 == resp.spec.replicas)
    # beyond the client's test: the scale subresource and a patch
    scale = core.read_namespaced_replication_controller_scale(name, 'default')
    check("rc: the scale reads spec.replicas", scale.spec.replicas == 2)
    scale = core.patch_namespaced_replication_controller_scale(
        name, 'default', {'spec': {'replicas': 3}})
    check("rc: a patch of the scale", scale.spec.replicas == 3)
    resp = core.replace_namespaced_replication_controller_scale(
        name, 'default', client.V1Scale(metadata=client.V1ObjectMeta(name=name),
                                        spec=client.V1ScaleSpec(replicas=1)))
    check("rc: a replace of the scale", resp.spec.replicas == 1 and
          core.read_namespaced_replication_controller(name, 'default').spec.replicas == 1)
    resp = core.patch_namespaced_replication_controller(
        name, 'default', {'spec': {'minReadySeconds': 5}})
    check("rc: a patch of the spec", resp.spec.min_ready_seconds == 5)
    resp = core.delete_namespaced_replication_controller(
        name=name, namespace='default', propagation_policy='Background')
    check("rc: delete answers", resp is not None)

    # dynamic/test_client.py: test_replication_controller_apis
    dyn = DynamicClient(client.api_client.ApiClient())
    api = dyn.resources.get(api_version='v1', kind='ReplicationController')
    name = 'frontend-' + str(uuid.uuid4())[-12:]
    rc_manifest['metadata'] = {'labels': {'name': name}, 'name': name}
    rc_manifest['spec']['selector'] = {'name': name}
    rc_manifest['spec']['template']['metadata'] = {'labels': {'name': name}}
    resp = api.create(body=rc_manifest, namespace='default')
    check("dynamic rc: create", name == resp.metadata.name and 2 == resp.spec.replicas)
    resp = api.get(name=name, namespace='default')
    check("dynamic rc: get", name == resp.metadata.name and 2 == resp.spec.replicas)
    api.delete(name=name, namespace='default', propagation_policy='Background')

    # test_utils.py: test_create_from_multi_resource_yaml and
    # test_create_multi_resource_from_directory (a Service and an RC)
    def check_mock(how):
        svc = core.read_namespaced_service(name="mock", namespace="default")
        check(f"{how}: service", svc is not None and svc.metadata.name == "mock" and
              svc.metadata.labels["app"] == "mock" and svc.spec.selector["app"] == "mock")
        ctr = core.read_namespaced_replication_controller(name="mock", namespace="default")
        check(f"{how}: rc", ctr is not None and ctr.metadata.name == "mock" and
              ctr.spec.template.metadata.labels["app"] == "mock" and
              ctr.spec.selector["app"] == "mock" and ctr.spec.replicas == 1 and
              ctr.spec.template.spec.containers[0].image == "k8s.gcr.io/pause:2.0" and
              ctr.spec.template.spec.containers[0].name == "mock-container")
        core.delete_namespaced_replication_controller(
            name="mock", namespace="default", propagation_policy="Background")
        core.delete_namespaced_service(name="mock", namespace="default", body={})

    with open(f"{work}/multi-resource.yaml", "w") as f:
        f.write(MULTI_RESOURCE_SERVICE + "---\n" + MULTI_RESOURCE_RC)
    utils.create_from_yaml(k8s_client, f"{work}/multi-resource.yaml")
    check_mock("multi-resource yaml")
    os.mkdir(f"{work}/multi-resource")
    with open(f"{work}/multi-resource/multi-resource-service.yaml", "w") as f:
        f.write(MULTI_RESOURCE_SERVICE)
    with open(f"{work}/multi-resource/multi-resource-replication-controller.yaml", "w") as f:
        f.write(MULTI_RESOURCE_RC)
    for _ in range(50):  # the RC of the same name above is deleted in the background
        try:
            core.read_namespaced_replication_controller("mock", "default")
            time.sleep(0.1)
        except client.ApiException:
            break
    utils.create_from_directory(k8s_client, f"{work}/multi-resource/")
    check_mock("multi-resource directory")

    # test_utils.py: test_create_from_multi_resource_yaml_with_conflict
    conflict_service = MULTI_RESOURCE_SERVICE.replace("mock", "mock-2")
    with open(f"{work}/yaml-conflict-first.yaml", "w") as f:
        f.write(conflict_service)
    with open(f"{work}/yaml-conflict-multi.yaml", "w") as f:
        f.write(conflict_service + "---\n" + MULTI_RESOURCE_RC.replace("mock", "mock-2"))
    utils.create_from_yaml(k8s_client, f"{work}/yaml-conflict-first.yaml")
    svc = core.read_namespaced_service(name="mock-2", namespace="default")
    check("conflict: first service", svc.metadata.name == "mock-2" and
          svc.spec.ports[0].port == 99)
    try:
        utils.create_from_yaml(k8s_client, f"{work}/yaml-conflict-multi.yaml")
        check("conflict: the second service fails", False)
    except utils.FailToCreateError as e:
        exp_error = ('Error from server (Conflict): {"kind":"Status",'
                     '"apiVersion":"v1","metadata":{},"status":"Failure",'
                     '"message":"services \\"mock-2\\" already exists",'
                     '"reason":"AlreadyExists","details":{"name":"mock-2",'
                     '"kind":"services"},"code":409}\n')
        check("conflict: the error text is Kubernetes'", exp_error == str(e))
    ctr = core.read_namespaced_replication_controller(name="mock-2", namespace="default")
    check("conflict: the rc after it is created", ctr is not None)
    core.delete_namespaced_replication_controller(
        name="mock-2", namespace="default", propagation_policy="Background")
    core.delete_namespaced_service(name="mock-2", namespace="default", body={})


def main():
    ckube = sys.argv[1]
    work = tempfile.mkdtemp()
    store = sys.argv[2] if len(sys.argv) > 2 else f"sqlite://{work}/state.db"
    port = free_port()
    server = subprocess.Popen(
        [ckube, "server", "--disable-agent", "--disable-dns",
         "--listen", f"127.0.0.1:{port}", "--data-dir", f"{work}/data",
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
                # the Deployment's pods come and go meanwhile: stop at py-1's deletion
                if ev["type"] == "DELETED" and ev["object"].metadata.name == "py-1":
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
        # a dependent that blocks its owner's deletion and holds a finalizer of its own, so
        # that the foreground deletion waits for it however fast the garbage collector is
        core.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(
                name="py-hold", finalizers=["example.com/hold"],
                owner_references=[client.V1OwnerReference(
                    api_version="apps/v1", kind="Deployment", name="py-deploy",
                    uid=made.metadata.uid, block_owner_deletion=True)])))
        gone = apps.delete_namespaced_deployment(
            "py-deploy", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
        held = apps.read_namespaced_deployment("py-deploy", "default")
        check("foreground delete leaves the deployment with its finalizer",
              held.metadata.finalizers == ["foregroundDeletion"] and
              held.metadata.deletion_timestamp is not None and gone is not None)
        core.patch_namespaced_config_map("py-hold", "default", {"metadata": {"finalizers": None}})

        try:
            core.read_namespaced_pod("nope", "default")
            check("missing pod raises 404", False)
        except client.ApiException as e:
            check("missing pod raises 404", e.status == 404)

        wire_details(core, check)

        core.delete_namespaced_pod("py-1", "default")
        watcher.join(timeout=15)
        check(f"watch saw ADDED then DELETED (it saw {events})",
              ("ADDED", "py-1") in events and ("DELETED", "py-1") in events)

        # after the watch above, whose 10 s these would outlast
        workload_tests(work, check)
        discovery_cache_tests(work, check)
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
