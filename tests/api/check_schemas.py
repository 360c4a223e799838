#!/usr/bin/env python3
"""Checks the API schema documents of lib/api/schemas (standard library only).

Usage: check_schemas.py SCHEMA_DIR [DATA_DIR]

SCHEMA_DIR holds one JSON document per group-version, each mapping schema
names to schemas (OpenAPI components.schemas).  The script checks that:
  - every document parses, no schema name is defined twice;
  - only the keywords the C schema engine implements appear, with valid values
    (the value validations of custom resources - pattern, lengths, counts,
    exclusive bounds, multipleOf, uniqueItems, string formats,
    x-kubernetes-embedded-resource - only in the inline parts of a kind marked
    x-ckube-custom-resource, the only place the engine reads them);
  - every $ref resolves (across documents);
  - every `required` and `x-ckube-always-emit` name is a property;
  - every `default` validates against its schema (type, enum, bounds, fields);
  - patch merge keys and list-map keys exist in the list's item schema;
  - every kind (a schema with x-kubernetes-group-version-kind) has apiVersion,
    kind and metadata, and the kinds ckube serves are all present.
DATA_DIR (default: the `data` folder next to this script) holds sample
manifests; those listed in its README.md as valid must pass a strict check,
those listed as invalid must fail it (with the recorded kind of error).
Before any of that the script runs itself on deliberately broken copies of
the documents and fails unless each breakage is reported.

Exit status 0 when everything holds, 1 otherwise (every problem printed).
"""

import copy
import json
import os
import re
import shutil
import sys
import tempfile

SCHEMA_KEYWORDS = {
    "type", "format", "properties", "required", "items", "additionalProperties",
    "$ref", "allOf", "default", "enum", "nullable", "minimum", "maximum",
    "description", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-group-version-kind",
    "x-ckube-always-emit", "x-ckube-feature-gate", "x-ckube-feature-gated-values",
    "x-ckube-custom-resource",
}
# Read by the engine only for the inline parts of a kind marked x-ckube-custom-resource.
CUSTOM_RESOURCE_KEYWORDS = {
    "pattern", "minLength", "maxLength", "minItems", "maxItems", "minProperties",
    "maxProperties", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
    "x-kubernetes-embedded-resource",
}
# The string formats apiextensions keeps (lib/api/formats.c checks them).
CUSTOM_RESOURCE_FORMATS = {
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
    "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
    "byte", "password", "date", "duration", "datetime", "date-time",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
FORMATS = {"integer": {"int32", "int64"}, "number": {"double"}, "string": {"date-time", "byte"}}
PATCH_STRATEGIES = {"merge", "retainKeys", "merge,retainKeys"}
LIST_TYPES = {"atomic", "set", "map"}
MAP_TYPES = {"atomic", "granular"}
ALLOF_SIBLINGS = {"allOf", "default", "description", "nullable", "x-kubernetes-patch-strategy",
                  "x-kubernetes-patch-merge-key", "x-ckube-feature-gate"}
REF_PREFIX = "#/components/schemas/"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

# The kinds ckube serves: (group, version, kind) -> schema name.
EXPECTED_KINDS = {
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"): "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfigurationList"): "io.k8s.api.admissionregistration.v1.MutatingWebhookConfigurationList",
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"): "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfigurationList"): "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfigurationList",
    ("apps", "v1", "DaemonSet"): "io.k8s.api.apps.v1.DaemonSet",
    ("apps", "v1", "DaemonSetList"): "io.k8s.api.apps.v1.DaemonSetList",
    ("apps", "v1", "StatefulSet"): "io.k8s.api.apps.v1.StatefulSet",
    ("apps", "v1", "StatefulSetList"): "io.k8s.api.apps.v1.StatefulSetList",
    ("apps", "v1", "ControllerRevision"): "io.k8s.api.apps.v1.ControllerRevision",
    ("apps", "v1", "ControllerRevisionList"): "io.k8s.api.apps.v1.ControllerRevisionList",
    ("", "v1", "PersistentVolumeClaim"): "io.k8s.api.core.v1.PersistentVolumeClaim",
    ("", "v1", "PersistentVolumeClaimList"): "io.k8s.api.core.v1.PersistentVolumeClaimList",
    ("policy", "v1", "PodDisruptionBudget"): "io.k8s.api.policy.v1.PodDisruptionBudget",
    ("policy", "v1", "PodDisruptionBudgetList"): "io.k8s.api.policy.v1.PodDisruptionBudgetList",
    ("", "v1", "Pod"): "io.k8s.api.core.v1.Pod",
    ("storage.k8s.io", "v1", "CSIDriver"): "io.k8s.api.storage.v1.CSIDriver",
    ("storage.k8s.io", "v1", "CSIDriverList"): "io.k8s.api.storage.v1.CSIDriverList",
    ("storage.k8s.io", "v1", "CSINode"): "io.k8s.api.storage.v1.CSINode",
    ("storage.k8s.io", "v1", "CSINodeList"): "io.k8s.api.storage.v1.CSINodeList",
    ("storage.k8s.io", "v1", "CSIStorageCapacity"): "io.k8s.api.storage.v1.CSIStorageCapacity",
    ("storage.k8s.io", "v1", "CSIStorageCapacityList"): "io.k8s.api.storage.v1.CSIStorageCapacityList",
    ("storage.k8s.io", "v1", "VolumeAttachment"): "io.k8s.api.storage.v1.VolumeAttachment",
    ("storage.k8s.io", "v1", "VolumeAttachmentList"): "io.k8s.api.storage.v1.VolumeAttachmentList",
    ("", "v1", "PodList"): "io.k8s.api.core.v1.PodList",
    ("", "v1", "Namespace"): "io.k8s.api.core.v1.Namespace",
    ("", "v1", "NamespaceList"): "io.k8s.api.core.v1.NamespaceList",
    ("", "v1", "Node"): "io.k8s.api.core.v1.Node",
    ("", "v1", "NodeList"): "io.k8s.api.core.v1.NodeList",
    ("", "v1", "Event"): "io.k8s.api.core.v1.Event",
    ("", "v1", "EventList"): "io.k8s.api.core.v1.EventList",
    ("", "v1", "Binding"): "io.k8s.api.core.v1.Binding",
    ("", "v1", "Status"): "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    ("apps", "v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("apps", "v1", "DeploymentList"): "io.k8s.api.apps.v1.DeploymentList",
    ("apps", "v1", "ReplicaSet"): "io.k8s.api.apps.v1.ReplicaSet",
    ("apps", "v1", "ReplicaSetList"): "io.k8s.api.apps.v1.ReplicaSetList",
    ("batch", "v1", "Job"): "io.k8s.api.batch.v1.Job",
    ("batch", "v1", "JobList"): "io.k8s.api.batch.v1.JobList",
    ("batch", "v1", "CronJob"): "io.k8s.api.batch.v1.CronJob",
    ("batch", "v1", "CronJobList"): "io.k8s.api.batch.v1.CronJobList",
    ("", "v1", "ReplicationController"): "io.k8s.api.core.v1.ReplicationController",
    ("", "v1", "ReplicationControllerList"): "io.k8s.api.core.v1.ReplicationControllerList",
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
    ("autoscaling", "v1", "HorizontalPodAutoscalerList"): "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerList",
    ("autoscaling", "v1", "Scale"): "io.k8s.api.autoscaling.v1.Scale",
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    ("autoscaling", "v2", "HorizontalPodAutoscalerList"): "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerList",
    ("coordination.k8s.io", "v1", "Lease"): "io.k8s.api.coordination.v1.Lease",
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"):
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinitionList"):
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList",
    ("coordination.k8s.io", "v1", "LeaseList"): "io.k8s.api.coordination.v1.LeaseList",
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"):
        "io.k8s.api.certificates.v1.CertificateSigningRequest",
    ("certificates.k8s.io", "v1", "CertificateSigningRequestList"):
        "io.k8s.api.certificates.v1.CertificateSigningRequestList",
    ("policy", "v1", "Eviction"): "io.k8s.api.policy.v1.Eviction",
    ("", "v1", "ServiceAccount"): "io.k8s.api.core.v1.ServiceAccount",
    ("", "v1", "ServiceAccountList"): "io.k8s.api.core.v1.ServiceAccountList",
    ("", "v1", "ConfigMap"): "io.k8s.api.core.v1.ConfigMap",
    ("", "v1", "ConfigMapList"): "io.k8s.api.core.v1.ConfigMapList",
    ("", "v1", "Secret"): "io.k8s.api.core.v1.Secret",
    ("", "v1", "SecretList"): "io.k8s.api.core.v1.SecretList",
    ("", "v1", "Service"): "io.k8s.api.core.v1.Service",
    ("", "v1", "ServiceList"): "io.k8s.api.core.v1.ServiceList",
    ("", "v1", "Endpoints"): "io.k8s.api.core.v1.Endpoints",
    ("", "v1", "EndpointsList"): "io.k8s.api.core.v1.EndpointsList",
    ("discovery.k8s.io", "v1", "EndpointSlice"): "io.k8s.api.discovery.v1.EndpointSlice",
    ("discovery.k8s.io", "v1", "EndpointSliceList"): "io.k8s.api.discovery.v1.EndpointSliceList",
    ("rbac.authorization.k8s.io", "v1", "Role"): "io.k8s.api.rbac.v1.Role",
    ("rbac.authorization.k8s.io", "v1", "RoleList"): "io.k8s.api.rbac.v1.RoleList",
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"): "io.k8s.api.rbac.v1.ClusterRole",
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleList"): "io.k8s.api.rbac.v1.ClusterRoleList",
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"): "io.k8s.api.rbac.v1.RoleBinding",
    ("rbac.authorization.k8s.io", "v1", "RoleBindingList"): "io.k8s.api.rbac.v1.RoleBindingList",
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"): "io.k8s.api.rbac.v1.ClusterRoleBinding",
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBindingList"): "io.k8s.api.rbac.v1.ClusterRoleBindingList",
    ("example.ckube.io", "v1", "Frobber"): "io.ckube.example.v1.Frobber",
    ("example.ckube.io", "v1", "FrobberList"): "io.ckube.example.v1.FrobberList",
}
# Kinds that are options rather than objects: no metadata.
NO_METADATA_KINDS = {"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"}


class DuplicateKey(Exception):
    pass


def strict_pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(k)
        out[k] = v
    return out


def load_documents(schema_dir, errors):
    schemas, origin = {}, {}
    names = sorted(f for f in os.listdir(schema_dir) if f.endswith(".json"))
    if not names:
        errors.append("%s: no *.json schema documents" % schema_dir)
    for f in names:
        path = os.path.join(schema_dir, f)
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh, object_pairs_hook=strict_pairs)
        except (ValueError, DuplicateKey) as e:
            errors.append("%s: does not parse: %s" % (f, e))
            continue
        if not isinstance(doc, dict) or not doc:
            errors.append("%s: not a non-empty object of schemas" % f)
            continue
        for name, schema in doc.items():
            if name in schemas:
                errors.append("%s: schema %s already defined in %s" % (f, name, origin[name]))
            schemas[name] = schema
            origin[name] = f
    return schemas, origin


def resolve(schemas, schema):
    """Follows $ref and allOf wrappers; returns the target schema or None."""
    seen = 0
    while isinstance(schema, dict) and seen < 64:
        seen += 1
        if "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
                return None
            schema = schemas.get(ref[len(REF_PREFIX):])
        elif "allOf" in schema:
            schema = schema["allOf"][0] if schema["allOf"] else None
        else:
            return schema
    return None


def check_custom_keywords(where, s, t, errors):
    """The custom resource value validations of one node, when it has them."""
    for key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        if key in s and not (isinstance(s[key], int) and not isinstance(s[key], bool) and s[key] >= 0):
            errors.append("%s: %s must be a non-negative integer" % (where, key))
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if key in s and (not isinstance(s[key], bool) or bound not in s):
            errors.append("%s: %s must be a boolean beside %s" % (where, key, bound))
    if "multipleOf" in s and (not is_number(s["multipleOf"]) or s["multipleOf"] <= 0 or
                              t not in ("integer", "number")):
        errors.append("%s: multipleOf needs a numeric type and a positive value" % where)
    for key in ("uniqueItems", "x-kubernetes-embedded-resource"):
        if key in s and not isinstance(s[key], bool):
            errors.append("%s: %s must be a boolean" % (where, key))
    if "pattern" in s:
        try:
            if t != "string":
                raise re.error("not on a string")
            re.compile(s["pattern"])
        except (re.error, TypeError) as e:
            errors.append("%s: pattern %r is not a regular expression of a string (%s)" %
                          (where, s["pattern"], e))


def check_schema(schemas, where, s, errors, custom=False):
    """Structural check of one schema node and, recursively, its children.
    custom: the node is an inline part of a kind marked x-ckube-custom-resource."""
    if not isinstance(s, dict):
        errors.append("%s: schema is not an object" % where)
        return
    custom = custom or s.get("x-ckube-custom-resource") is True
    for k in s:
        if k not in SCHEMA_KEYWORDS and not (custom and k in CUSTOM_RESOURCE_KEYWORDS):
            errors.append("%s: keyword %r is not allowed" % (where, k))
    if "$ref" in s:
        ref = s["$ref"]
        if len(s) != 1:
            errors.append("%s: $ref with siblings %s (wrap in allOf)" % (where, sorted(set(s) - {"$ref"})))
        if not isinstance(ref, str) or not ref.startswith(REF_PREFIX) or ref[len(REF_PREFIX):] not in schemas:
            errors.append("%s: $ref %r does not resolve" % (where, ref))
        return
    if "allOf" in s:
        a = s["allOf"]
        if not (isinstance(a, list) and len(a) == 1 and isinstance(a[0], dict) and list(a[0]) == ["$ref"]):
            errors.append("%s: allOf must be [{\"$ref\": ...}]" % where)
            return
        for k in set(s) - ALLOF_SIBLINGS:
            errors.append("%s: keyword %r not allowed next to allOf" % (where, k))
        check_schema(schemas, where + ".allOf[0]", a[0], errors)
    t = s.get("type")
    if t is not None and t not in TYPES:
        errors.append("%s: unknown type %r" % (where, t))
    if s.get("x-kubernetes-int-or-string"):
        if s["x-kubernetes-int-or-string"] is not True or t is not None:
            errors.append("%s: x-kubernetes-int-or-string must be true and come without type" % where)
    elif t is None and "allOf" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
        errors.append("%s: schema without type" % where)
    if "format" in s and s["format"] not in FORMATS.get(t, ()) and not (
            custom and t == "string" and s["format"] in CUSTOM_RESOURCE_FORMATS):
        errors.append("%s: format %r not allowed for type %r" % (where, s["format"], t))
    if custom:
        check_custom_keywords(where, s, t, errors)
    for flag in ("nullable", "x-kubernetes-preserve-unknown-fields"):
        if flag in s and not isinstance(s[flag], bool):
            errors.append("%s: %s must be a boolean" % (where, flag))
    if "description" in s and not isinstance(s["description"], str):
        errors.append("%s: description must be a string" % where)
    for bound in ("minimum", "maximum"):
        if bound in s and (t not in ("integer", "number") or not is_number(s[bound])):
            errors.append("%s: %s needs a numeric type and value" % (where, bound))
    if "enum" in s:
        if not isinstance(s["enum"], list) or not s["enum"]:
            errors.append("%s: enum must be a non-empty list" % where)
        else:
            for v in s["enum"]:
                if not has_type(v, t):
                    errors.append("%s: enum value %r is not of type %r" % (where, v, t))
    props = s.get("properties")
    if props is not None:
        if t != "object" or not isinstance(props, dict):
            errors.append("%s: properties need type object and a map" % where)
            props = {}
        for name, sub in props.items():
            check_schema(schemas, "%s.%s" % (where, name), sub, errors, custom)
    if "x-ckube-feature-gate" in s and not (isinstance(s["x-ckube-feature-gate"], str)
                                             and re.match(r"^[A-Z][A-Za-z0-9]+$", s["x-ckube-feature-gate"])):
        errors.append("%s: x-ckube-feature-gate must name a gate (CamelCase)" % where)
    if "x-ckube-feature-gated-values" in s:
        gated = s["x-ckube-feature-gated-values"]
        if not isinstance(gated, dict) or not all(
                v in s.get("enum", []) and isinstance(g, str) and g for v, g in gated.items()):
            errors.append("%s: x-ckube-feature-gated-values must map enum values to gates" % where)
    for key in ("required", "x-ckube-always-emit"):
        if key in s:
            names = s[key]
            if not isinstance(names, list) or len(set(map(str, names))) != len(names):
                errors.append("%s: %s must be a list of distinct names" % (where, key))
                continue
            for n in names:
                if n not in (props or {}):
                    errors.append("%s: %s name %r is not a property" % (where, key, n))
    if "additionalProperties" in s:
        if t != "object" or props:
            errors.append("%s: additionalProperties needs type object and no properties" % where)
        check_schema(schemas, where + "{}", s["additionalProperties"], errors, custom)
    if t == "array":
        if "items" not in s:
            errors.append("%s: array without items" % where)
        else:
            check_schema(schemas, where + "[]", s["items"], errors, custom)
    elif "items" in s:
        errors.append("%s: items on a non-array" % where)
    check_list_extensions(schemas, where, s, errors)
    if "x-kubernetes-map-type" in s and s["x-kubernetes-map-type"] not in MAP_TYPES:
        errors.append("%s: bad x-kubernetes-map-type %r" % (where, s["x-kubernetes-map-type"]))
    if "default" in s:
        target = s if "allOf" not in s else resolve(schemas, s)
        if target is None:
            errors.append("%s: default on an unresolvable schema" % where)
        else:
            for e in validate(schemas, s["default"], target, ""):
                errors.append("%s: default does not validate: %s" % (where, e))


def check_list_extensions(schemas, where, s, errors):
    strat = s.get("x-kubernetes-patch-strategy")
    mk = s.get("x-kubernetes-patch-merge-key")
    lt = s.get("x-kubernetes-list-type")
    keys = s.get("x-kubernetes-list-map-keys")
    if strat is not None and strat not in PATCH_STRATEGIES:
        errors.append("%s: bad x-kubernetes-patch-strategy %r" % (where, strat))
    if lt is not None and lt not in LIST_TYPES:
        errors.append("%s: bad x-kubernetes-list-type %r" % (where, lt))
    target = resolve(schemas, s) if "allOf" in s else s
    is_array = isinstance(target, dict) and target.get("type") == "array"
    if (mk is not None or lt is not None or keys is not None) and not is_array:
        errors.append("%s: list extensions on a non-array" % where)
        return
    if strat is not None and "merge" not in strat.split(",") and strat != "retainKeys":
        errors.append("%s: bad x-kubernetes-patch-strategy %r" % (where, strat))
    if strat == "retainKeys" and is_array:
        errors.append("%s: retainKeys alone applies to maps, not lists" % where)
    if not is_array:
        return
    item = resolve(schemas, target.get("items"))
    item_props = (item or {}).get("properties", {})
    if mk is not None:
        if strat is None or "merge" not in strat.split(","):
            errors.append("%s: merge key without patch strategy merge" % where)
        if mk not in item_props:
            errors.append("%s: merge key %r is not a property of the item schema" % (where, mk))
    if keys is not None:
        if lt != "map":
            errors.append("%s: list-map-keys without list-type map" % where)
        if not isinstance(keys, list) or not keys:
            errors.append("%s: list-map-keys must be a non-empty list" % where)
            keys = []
        required = set((item or {}).get("required", []))
        for k in keys:
            if k not in item_props:
                errors.append("%s: list-map key %r is not a property of the item schema" % (where, k))
            elif k not in required and "default" not in item_props[k]:
                errors.append("%s: list-map key %r is neither required nor defaulted" % (where, k))
    elif lt == "map":
        errors.append("%s: list-type map without list-map-keys" % where)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_type(v, t):
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return is_number(v)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    return True


INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def join(path, key):
    return key if not path else path + "." + key


def where(path):
    return path or "<root>"


def validate(schemas, v, s, path):
    """Strict validation of a value: returns a list of problems, with paths
    written as the API server writes them (spec.containers[0].name).

    Problems are tagged like the API server's answers: "unknown field",
    "invalid type", "Required value", "Unsupported value", "Invalid value".
    """
    errs = []
    wrapper = s
    s = resolve(schemas, s)
    if s is None:
        return ["%s: unresolvable schema" % where(path)]
    if v is None:
        if s.get("nullable") or wrapper.get("nullable"):
            return []
        return ["%s: invalid type: null" % where(path)]
    if s.get("x-kubernetes-preserve-unknown-fields") and "type" not in s:
        return []
    if s.get("x-kubernetes-int-or-string"):
        if s is schemas.get(QUANTITY) and is_number(v):
            return errs  # Quantity also takes decimal numbers (0.5).
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            errs.append("%s: invalid type: want integer or string, got %s" % (where(path), type(v).__name__))
        return errs
    t = s.get("type")
    if not has_type(v, t):
        return ["%s: invalid type: want %s, got %s" % (where(path), t, type(v).__name__)]
    fmt = s.get("format")
    if fmt in INT_RANGES and not INT_RANGES[fmt][0] <= v <= INT_RANGES[fmt][1]:
        errs.append("%s: Invalid value: %r out of %s range" % (where(path), v, fmt))
    if fmt == "date-time" and not DATE_TIME.match(v):
        errs.append("%s: invalid type: %r is not an RFC 3339 time" % (where(path), v))
    if "enum" in s and v not in s["enum"]:
        errs.append("%s: Unsupported value: %r" % (where(path), v))
    if "minimum" in s and v < s["minimum"]:
        errs.append("%s: Invalid value: %r below %r" % (where(path), v, s["minimum"]))
    if "maximum" in s and v > s["maximum"]:
        errs.append("%s: Invalid value: %r above %r" % (where(path), v, s["maximum"]))
    if t == "object":
        props = s.get("properties")
        if props is not None:
            for k, sub in v.items():
                if k in props:
                    if sub is None and k not in s.get("required", []):
                        continue  # Go's decoder takes null as absent for optional fields.
                    errs += validate(schemas, sub, props[k], join(path, k))
                elif not s.get("x-kubernetes-preserve-unknown-fields"):
                    errs.append("unknown field \"%s\"" % join(path, k))
            for k in s.get("required", []):
                if k not in v:
                    errs.append("%s: Required value" % join(path, k))
        elif "additionalProperties" in s:
            for k, sub in v.items():
                errs += validate(schemas, sub, s["additionalProperties"], join(path, k))
    elif t == "array":
        for i, sub in enumerate(v):
            errs += validate(schemas, sub, s["items"], "%s[%d]" % (path, i))
    return errs


def check_kinds(schemas, errors):
    kinds = {}
    for name, s in schemas.items():
        gvks = s.get("x-kubernetes-group-version-kind") if isinstance(s, dict) else None
        if gvks is None:
            continue
        if not isinstance(gvks, list) or not gvks:
            errors.append("%s: x-kubernetes-group-version-kind must be a non-empty list" % name)
            continue
        for g in gvks:
            if not isinstance(g, dict) or set(g) != {"group", "version", "kind"} or \
                    not all(isinstance(x, str) for x in g.values()):
                errors.append("%s: bad group-version-kind %r" % (name, g))
                continue
            kinds[(g["group"], g["version"], g["kind"])] = name
        props = s.get("properties", {})
        for p in ("apiVersion", "kind"):
            if (props.get(p) or {}).get("type") != "string":
                errors.append("%s: kind without a string %s property" % (name, p))
        if name not in NO_METADATA_KINDS:
            meta = resolve(schemas, props.get("metadata"))
            if meta is None or "name" not in meta.get("properties", {}) and \
                    "resourceVersion" not in meta.get("properties", {}):
                errors.append("%s: kind without an ObjectMeta/ListMeta metadata property" % name)
    for gvk, name in EXPECTED_KINDS.items():
        if kinds.get(gvk) != name:
            errors.append("kind %s/%s %s: expected schema %s, found %s" % (gvk + (name, kinds.get(gvk))))
    return kinds


def check_documents(schema_dir):
    errors = []
    schemas, _ = load_documents(schema_dir, errors)
    for name, s in sorted(schemas.items()):
        check_schema(schemas, name, s, errors)
    kinds = check_kinds(schemas, errors)
    return errors, schemas, kinds


def parse_readme(data_dir):
    """Rows of the README table: (file, expected) where expected is "valid"
    or the error tag the strict check must report."""
    rows = []
    with open(os.path.join(data_dir, "README.md"), encoding="utf-8") as fh:
        for line in fh:
            m = re.match(r"^\|\s*`([^`]+\.json)`\s*\|\s*([^|]+?)\s*\|", line)
            if m:
                rows.append((m.group(1), m.group(2)))
    return rows


def check_samples(schemas, kinds, data_dir):
    errors = []
    rows = parse_readme(data_dir)
    listed = {f for f, _ in rows}
    present = {f for f in os.listdir(data_dir) if f.endswith(".json")}
    for f in sorted(present - listed):
        errors.append("%s: sample not listed in README.md" % f)
    for f, expected in rows:
        path = os.path.join(data_dir, f)
        if not os.path.exists(path):
            errors.append("%s: listed in README.md but missing" % f)
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        try:
            obj = json.loads(text, object_pairs_hook=strict_pairs)
            problems = []
        except DuplicateKey as e:
            obj, problems = json.loads(text), ["duplicate field \"%s\"" % e]
        except ValueError as e:
            errors.append("%s: not JSON: %s" % (f, e))
            continue
        api_version = obj.get("apiVersion", "")
        group, _, version = api_version.rpartition("/")
        name = kinds.get((group, version, obj.get("kind")))
        if name is None:
            errors.append("%s: no schema for %s %s" % (f, api_version, obj.get("kind")))
            continue
        problems += validate(schemas, obj, schemas[name], "")
        if expected == "valid":
            for p in problems:
                errors.append("%s: valid sample fails: %s" % (f, p))
        elif not problems:
            errors.append("%s: invalid sample (%s) passes the strict check" % (f, expected))
        elif not any(expected in p for p in problems):
            errors.append("%s: expected a %r problem, got %s" % (f, expected, problems))
    return errors, len(rows)


# Each breakage: (description, function mutating the loaded documents).
def _first(docs, pred):
    for fname, doc in sorted(docs.items()):
        for name, s in sorted(doc.items()):
            if pred(s):
                return fname, name, s
    raise AssertionError("self-test found nothing to break")


def _break_ref(docs):
    _, _, s = _first(docs, lambda s: "properties" in s and "metadata" in s["properties"])
    s["properties"]["metadata"] = {"$ref": REF_PREFIX + "io.k8s.NoSuchSchema"}


def _break_keyword(docs):
    _, _, s = _first(docs, lambda s: s.get("type") == "object")
    s["oneOf"] = [{"type": "string"}]


def _break_custom_keyword(docs):
    _, _, s = _first(docs, lambda s: s.get("type") == "string" and "x-ckube-custom-resource" not in s)
    s["pattern"] = "^a+$"


def _break_required(docs):
    _, _, s = _first(docs, lambda s: "required" in s)
    s["required"].append("noSuchField")


def _break_default(docs):
    _, _, s = _first(docs, lambda s: any(p.get("type") == "integer" and "default" in p
                                         for p in s.get("properties", {}).values()))
    p = next(p for p in s["properties"].values() if p.get("type") == "integer" and "default" in p)
    p["default"] = "ten"


def _break_merge_key(docs):
    _, _, s = _first(docs, lambda s: any("x-kubernetes-patch-merge-key" in p
                                         for p in s.get("properties", {}).values()))
    p = next(p for p in s["properties"].values() if "x-kubernetes-patch-merge-key" in p)
    p["x-kubernetes-patch-merge-key"] = "noSuchKey"


def _break_kind(docs):
    _, _, s = _first(docs, lambda s: "x-kubernetes-group-version-kind" in s and
                     "metadata" in s.get("properties", {}))
    del s["properties"]["kind"]


def _break_gvk(docs):
    _, _, s = _first(docs, lambda s: "x-kubernetes-group-version-kind" in s)
    del s["x-kubernetes-group-version-kind"]


BREAKAGES = [
    ("dangling $ref", _break_ref, None),
    ("unknown keyword", _break_keyword, None),
    ("custom resource keyword outside a custom resource", _break_custom_keyword, None),
    ("required name not a property", _break_required, None),
    ("default of the wrong type", _break_default, None),
    ("merge key not in the item schema", _break_merge_key, None),
    ("kind without a kind property", _break_kind, None),
    ("kind without group-version-kind", _break_gvk, None),
    ("document that is not JSON", None, "{\"io.k8s.Broken\": {\"type\": \"object\",}"),
]


def self_test(schema_dir):
    """Runs the checks on broken copies; returns the breakages not caught."""
    missed = []
    docs = {}
    for f in os.listdir(schema_dir):
        if f.endswith(".json"):
            with open(os.path.join(schema_dir, f), encoding="utf-8") as fh:
                docs[f] = json.load(fh)
    for what, mutate, raw in BREAKAGES:
        tmp = tempfile.mkdtemp(prefix="check-schemas-")
        try:
            broken = copy.deepcopy(docs)
            if mutate is not None:
                mutate(broken)
            for f, doc in broken.items():
                with open(os.path.join(tmp, f), "w", encoding="utf-8") as fh:
                    json.dump(doc, fh)
            if raw is not None:
                with open(os.path.join(tmp, "zz-broken.json"), "w", encoding="utf-8") as fh:
                    fh.write(raw)
            errors, _, _ = check_documents(tmp)
            if not errors:
                missed.append(what)
        finally:
            shutil.rmtree(tmp)
    return missed


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    schema_dir = argv[1]
    data_dir = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    failed = False

    errors, schemas, kinds = check_documents(schema_dir)
    for e in errors:
        print("FAIL schema:", e)
    failed |= bool(errors)
    print("schemas: %d schemas, %d kinds, %d problems" % (len(schemas), len(kinds), len(errors)))

    if not errors:
        missed = self_test(schema_dir)
        for m in missed:
            print("FAIL self-test: a %s went unnoticed" % m)
        failed |= bool(missed)
        print("self-test: %d/%d deliberate breakages caught" % (len(BREAKAGES) - len(missed), len(BREAKAGES)))

        sample_errors, n = check_samples(schemas, kinds, data_dir)
        for e in sample_errors:
            print("FAIL sample:", e)
        failed |= bool(sample_errors)
        print("samples: %d checked, %d problems" % (n, len(sample_errors)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
