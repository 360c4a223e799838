#!/usr/bin/env python3
"""conversion_webhook.py - a CRD conversion webhook for the end-to-end tests: an HTTPS
server on loopback (webhook_https.py) that answers ConversionReviews
(apiextensions.k8s.io/v1 and v1beta1) as a real webhook does.

It converts the CronTab of stable.example.com between v1 (spec.cronSpec) and v2
(spec.schedule), and labels what it converted with converted-to=<version>.
Objects whose spec.cronSpec or spec.schedule is "fail" make it answer a Failure with
the message "cannot convert <name>".

Every review received is appended, one JSON line each, to LOG.

Usage: conversion_webhook.py CERT KEY PORTFILE LOG
It binds an ephemeral port on 127.0.0.1 and writes it to PORTFILE.
"""
import json

import webhook_https


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


def answer(path, review):
    req = review["request"]
    desired = req["desiredAPIVersion"]
    failing = [o["metadata"]["name"] for o in req["objects"]
               if "fail" in (o.get("spec") or {}).values()]
    if failing:
        return {"uid": req["uid"], "result": {"status": "Failure",
                                              "message": "cannot convert %s" % failing[0]}}
    return {"uid": req["uid"], "result": {"status": "Success"},
            "convertedObjects": [convert(o, desired) for o in req["objects"]]}


webhook_https.serve("ConversionReview", answer)
