#!/usr/bin/env python3
"""conversion_webhook.py - a CRD conversion webhook for the end-to-end tests: an HTTPS
server (http.server and ssl of the standard library) on loopback that answers
ConversionReviews (apiextensions.k8s.io/v1 and v1beta1) as a real webhook does.

It converts the CronTab of stable.example.com between v1 (spec.cronSpec) and v2
(spec.schedule), and labels what it converted with converted-to=<version>.
Objects whose spec.cronSpec or spec.schedule is "fail" make it answer a Failure with
the message "cannot convert <name>".

Every review received is appended, one JSON line each, to LOG.

Usage: conversion_webhook.py CERT KEY PORTFILE LOG
It binds an ephemeral port on 127.0.0.1 and writes it to PORTFILE.
"""
import http.server
import json
import os
import ssl
import sys

cert, key, portfile, log = sys.argv[1:5]


def convert(obj, desired):
    out = json.loads(json.dumps(obj))
    spec = out.setdefault("spec", {})
    if desired.endswith("/v2") and "cronSpec" in spec:
        spec["schedule"] = spec.pop("cronSpec")
    elif desired.endswith("/v1") and "schedule" in spec:
        spec["cronSpec"] = spec.pop("schedule")
    out["apiVersion"] = desired
    labels = out.setdefault("metadata", {}).setdefault("labels", {})
    labels["converted-to"] = desired.split("/")[-1]
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with open(log, "a") as fh:
            fh.write(json.dumps({"path": self.path, "review": review}) + "\n")
        req = review["request"]
        desired = req["desiredAPIVersion"]
        failing = [o["metadata"]["name"] for o in req["objects"]
                   if "fail" in (o.get("spec") or {}).values()]
        if failing:
            resp = {"uid": req["uid"], "result": {"status": "Failure",
                                                  "message": "cannot convert %s" % failing[0]}}
        else:
            resp = {"uid": req["uid"], "result": {"status": "Success"},
                    "convertedObjects": [convert(o, desired) for o in req["objects"]]}
        out = json.dumps({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                          "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(portfile + ".tmp", "w") as fh:
    fh.write(str(server.server_address[1]))
os.rename(portfile + ".tmp", portfile)
server.serve_forever()
