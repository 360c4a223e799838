/*
 * fuzz_patch.c - libFuzzer target for the three patch formats: the first
 * byte picks JSON patch, merge patch or strategic merge patch, the rest is
 * the patch, applied to a Deployment (strategic: with the built-in schemas,
 * so merge keys and directives are exercised). Any input applies or fails
 * cleanly, and the target document is never modified.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char deployment[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"labels\":{\"app\":\"web\"},\"finalizers\":[\"a/b\"],\"ownerReferences\":[{\"uid\":\"u1\","
    "\"name\":\"o\",\"kind\":\"K\",\"apiVersion\":\"v1\"}]},\"spec\":{\"replicas\":2,"
    "\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}},"
    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":"
    "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"env\":"
    "[{\"name\":\"A\",\"value\":\"1\"}],\"ports\":[{\"containerPort\":80}]},{\"name\":\"b\","
    "\"image\":\"y\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}},\"status\":"
    "{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}";

static struct ck_schemas *schemas;
static json_t *doc;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!schemas) {
        struct ck_err err = {0};
        if (ck_api_builtin_schemas(&schemas, &err) < 0)
            abort();
        json_error_t jerr;
        doc = json_loads(deployment, 0, &jerr);
        if (!doc)
            abort();
    }
    if (size < 1)
        return 0;
    json_error_t jerr;
    json_t *patch = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, &jerr);
    if (!patch)
        return 0;
    json_t *before = json_deep_copy(doc);
    json_t *out = NULL;
    struct ck_err err = {0};
    switch (data[0] % 3) {
    case 0:
        (void)ck_json_patch(doc, patch, &out, &err);
        break;
    case 1:
        out = ck_merge_patch(doc, patch);
        break;
    default:
        (void)ck_strategic_merge_patch(schemas, "io.k8s.api.apps.v1.Deployment", doc, patch, &out,
                                       &err);
        break;
    }
    if (!json_equal(before, doc))
        abort(); /* a patch must never touch its target */
    json_decref(out);
    json_decref(before);
    json_decref(patch);
    return 0;
}
