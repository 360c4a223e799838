#!/usr/bin/env python3
"""check_proto_fields.py - lib/api/protobuf/fields.json against the schemas.

Usage: check_proto_fields.py FIELDS_JSON SCHEMAS_DIR

A protobuf answer carries only the fields of the message, so every property
the schemas give a Kubernetes type (io.k8s.*) must be a field of its message
(or of a message inlined into it), of a matching shape: an array property is
a repeated field (or a named slice's message), a map property (an object
with additionalProperties) a map field. Every io.k8s.* schema must have a
message. Prints each mismatch and exits 1 if there is one.
"""
import glob
import json
import os
import sys

# the types whose JSON is not an object of their fields (lib/api/protobuf.c)
SPECIAL = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
}


# the groups ckube serves in JSON only (docs/differences.md): no message is expected
JSON_ONLY = ("io.k8s.apiextensions-apiserver.", "io.k8s.metrics.", "io.k8s.kube-aggregator.")


def resolve(schema, schemas):
    """Follows $ref and allOf [{$ref}] to the schema describing a value."""
    for _ in range(16):
        ref = schema.get("$ref")
        if not ref and len(schema.get("allOf", [])) == 1:
            ref = schema["allOf"][0].get("$ref")
        if not ref:
            return schema
        schema = schemas.get(ref.rsplit("/", 1)[1], {})
    return schema


def fields_of(name, messages):
    """A message's fields by JSON name, those of inlined messages included."""
    out = {}
    for f in messages[name]:
        if f.get("inline"):
            out.update(fields_of(f["type"], messages))
        else:
            out[f["name"]] = f
    return out


def main():
    data = json.load(open(sys.argv[1]))
    messages, arrays = data["messages"], set(data["arrays"])
    schemas = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.json"))):
        schemas.update(json.load(open(path)))
    problems = []
    for name, schema in sorted(schemas.items()):
        if not name.startswith("io.k8s.") or name.startswith(JSON_ONLY):
            continue
        if name not in messages:
            problems.append(f"{name}: no protobuf message")
            continue
        if name in SPECIAL or name in arrays:
            continue
        fields = fields_of(name, messages)
        for prop, sub in schema.get("properties", {}).items():
            if prop in ("apiVersion", "kind"):
                continue
            f = fields.get(prop)
            if not f:
                problems.append(f"{name}.{prop}: not a field of the message")
                continue
            sub = resolve(sub, schemas)
            if sub.get("type") == "array" and not (f.get("repeated") or f["type"] in arrays):
                problems.append(f"{name}.{prop}: an array, but field {f['number']} is not repeated")
            if (sub.get("type") == "object" and isinstance(sub.get("additionalProperties"), dict)
                    and f["type"] != "map"):
                problems.append(f"{name}.{prop}: a map, but field {f['number']} is not")
            if f["type"] == "map" and sub.get("type") not in (None, "object"):
                problems.append(f"{name}.{prop}: field {f['number']} is a map, the schema not")
    for p in problems:
        print(p)
    print(f"check_proto_fields: {len(schemas)} schemas, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
