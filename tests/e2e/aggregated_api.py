"""aggregated_api.py - the end-to-end tests' aggregated API server: an HTTPS server
(webhook_https.listen) on an ephemeral loopback port serving the
group wardle.example.com/v1alpha1 with one namespaced resource, flunders (two objects,
read only), as a server behind an APIService does, and metrics.k8s.io/v1beta1 as
metrics-server would (its NodeMetricsList names one node, "from-metrics-backend", and
its nodes resource is in the category "from-metrics-backend", so a test can tell its
answers and its discovery from the API server's built-in ones), and
external.metrics.k8s.io/v1beta1 as an external metrics adapter would: every metric of
every namespace has the one value 3, and custom.metrics.k8s.io in v1beta1 only, as an
older custom metrics adapter would: every metric of every object has the value 3 (a
v1beta1 MetricValue: metricName, window, selector).

Reads CERT KEY PORTFILE LOG from the command line, writes the port to PORTFILE once it
listens (whole: through a rename) and appends one JSON line per request to LOG: {"path",
"user": X-Remote-User, "groups": the X-Remote-Group values}, so a test can see who the
API server said was asking.
"""
import http.server
import json
import sys

import webhook_https

GV = "wardle.example.com/v1alpha1"
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV,
             "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                            "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}]}


def flunder(name, ns):
    return {"apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": name, "namespace": ns,
                         "creationTimestamp": "2026-01-01T00:00:00Z"}}


METRICS = "metrics.k8s.io/v1beta1"
METRICS_RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": METRICS,
                     "resources": [{"name": "nodes", "singularName": "", "namespaced": False,
                                    "kind": "NodeMetrics", "verbs": ["get", "list"],
                                    "categories": ["from-metrics-backend"]},
                                   {"name": "pods", "singularName": "", "namespaced": True,
                                    "kind": "PodMetrics", "verbs": ["get", "list"]}]}


def metrics_answer(rest):
    if not rest:
        return 200, METRICS_RESOURCES
    if rest == ["nodes"]:
        node = {"metadata": {"name": "from-metrics-backend",
                             "creationTimestamp": "2026-01-01T00:00:00Z"},
                "timestamp": "2026-01-01T00:00:00Z", "window": "10s",
                "usage": {"cpu": "1m", "memory": "1Mi"}}
        return 200, {"kind": "NodeMetricsList", "apiVersion": METRICS, "metadata": {},
                     "items": [node]}
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}


EXTERNAL = "external.metrics.k8s.io/v1beta1"


def external_answer(rest):
    if not rest:
        return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": EXTERNAL,
                     "resources": [{"name": "*", "singularName": "", "namespaced": True,
                                    "kind": "ExternalMetricValueList", "verbs": ["get"]}]}
    if len(rest) == 3 and rest[0] == "namespaces":
        value = {"metricName": rest[2], "metricLabels": {},
                 "timestamp": "2026-01-01T00:00:00Z", "value": "3"}
        return 200, {"kind": "ExternalMetricValueList", "apiVersion": EXTERNAL, "metadata": {},
                     "items": [value]}
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}


CUSTOM = "custom.metrics.k8s.io/v1beta1"


def custom_answer(rest):
    if not rest:
        return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": CUSTOM,
                     "resources": [{"name": "services/requests", "singularName": "",
                                    "namespaced": True, "kind": "MetricValueList",
                                    "verbs": ["get"]}]}
    if len(rest) == 5 and rest[0] == "namespaces":
        value = {"describedObject": {"kind": "Service", "namespace": rest[1], "name": rest[3],
                                     "apiVersion": "/v1"},
                 "metricName": rest[4], "timestamp": "2026-01-01T00:00:00Z", "window": 60,
                 "value": "3", "selector": None}
        return 200, {"kind": "MetricValueList", "apiVersion": CUSTOM, "metadata": {},
                     "items": [value]}
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}


def answer(path):
    parts = path.split("?")[0].strip("/").split("/")
    if parts[:3] == ["apis", "custom.metrics.k8s.io", "v1beta1"]:
        return custom_answer(parts[3:])
    if parts[:3] == ["apis", "external.metrics.k8s.io", "v1beta1"]:
        return external_answer(parts[3:])
    if parts[:3] == ["apis", "metrics.k8s.io", "v1beta1"]:
        return metrics_answer(parts[3:])
    if parts[:3] != ["apis", "wardle.example.com", "v1alpha1"]:
        return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}
    rest = parts[3:]
    if not rest:
        return 200, RESOURCES
    ns = "default"
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    if rest[0] != "flunders":
        return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}
    items = [flunder("one", ns), flunder("two", ns)]
    if len(rest) == 2:
        found = [i for i in items if i["metadata"]["name"] == rest[1]]
        return (200, found[0]) if found else (404, {"kind": "Status", "code": 404})
    return 200, {"apiVersion": GV, "kind": "FlunderList", "metadata": {"resourceVersion": "1"},
                 "items": items}


def main():
    cert, key, portfile, log = sys.argv[1:5]

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            with open(log, "a") as fh:
                fh.write(json.dumps({"path": self.path,
                                     "user": self.headers.get("X-Remote-User"),
                                     "groups": self.headers.get_all("X-Remote-Group") or []})
                         + "\n")
            status, body = answer(self.path)
            out = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    webhook_https.listen(Handler, cert, key, portfile)


main()
