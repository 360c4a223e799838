#!/usr/bin/env python3
"""webhook_server.py - an admission webhook for the end-to-end tests: an HTTPS
server on loopback (webhook_https.py) that answers AdmissionReviews as a real
webhook does.

  /deny    refuses objects labelled deny=yes, with a message naming the object;
           allows the rest, those labelled warn=yes with a warning naming them
  /silent  refuses everything without a message
  /coded   refuses everything with its own code (403) and a reason apimachinery lacks
  /label   allows, adding the label mutated=yes with a JSONPatch (a second call
           on an object already labelled adds nothing)
  /count   allows, adding count-<n>=yes for its n-th call (shows reinvocation)

Every review received is appended, one JSON line each, to LOG, so the test can
look at what the server sent (dryRun, userInfo, the object).

Usage: webhook_server.py CERT KEY PORTFILE LOG
It binds an ephemeral port on 127.0.0.1 and writes it to PORTFILE.
"""
import base64
import json

import webhook_https

calls = {"count": 0}


def patch(ops):
    return base64.b64encode(json.dumps(ops).encode()).decode()


def answer(path, review):
    req = review["request"]
    resp = {"uid": req["uid"], "allowed": True}
    obj = req.get("object") or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    path = path.split("?")[0]
    if path == "/deny" and labels.get("deny") == "yes":
        resp = {"uid": req["uid"], "allowed": False,
                "status": {"message": "objects labelled deny=yes are refused (%s)" %
                           obj["metadata"]["name"]}}
    elif path == "/deny" and labels.get("warn") == "yes":
        resp["warnings"] = ["%s looks suspicious" % obj["metadata"]["name"]]
    elif path == "/coded":
        resp = {"uid": req["uid"], "allowed": False,
                "status": {"code": 403, "reason": "NotOnTuesdays", "message": "not today"}}
    elif path == "/silent":
        resp = {"uid": req["uid"], "allowed": False}
    elif path == "/label" and labels.get("mutated") != "yes":
        ops = []
        if not labels:
            ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
        ops.append({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})
        resp.update(patchType="JSONPatch", patch=patch(ops))
    elif path == "/count":
        calls["count"] += 1
        ops = []
        if not labels:
            ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
        ops.append({"op": "add", "path": "/metadata/labels/count-%d" % calls["count"],
                    "value": "yes"})
        resp.update(patchType="JSONPatch", patch=patch(ops))
    if review.get("apiVersion") == "admission.k8s.io/v1beta1":
        resp.pop("uid", None)
    return resp


webhook_https.serve("AdmissionReview", answer)
