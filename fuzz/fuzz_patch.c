/*
 * fuzz_patch.c - libFuzzer target for the three patch formats: the first
 * byte picks JSON patch, merge patch or strategic merge patch, the rest is
 * the patch, applied to a Deployment (strategic: with the built-in schemas,
 * so merge keys and directives are exercised). Any input applies or fails
 * cleanly, and the target document is never modified. JSON and strategic
 * patches run under small limits (struct ck_patch_limits) so that inputs
 * reach the paths that stop a patch at its operation, copy and comparison
 * budgets.
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

/* small enough that short inputs hit every limit */
static const struct ck_patch_limits limits = {
    .max_operations = 64, .max_copy_bytes = 16 * 1024, .max_comparisons = 4096};

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
        (void)ck_json_patch_bounded(doc, patch, &limits, &out, &err);
        break;
    case 1:
        out = ck_merge_patch(doc, patch);
        break;
    default:
        (void)ck_strategic_merge_patch_bounded(schemas, "io.k8s.api.apps.v1.Deployment", doc, patch,
                                               &limits, &out, &err);
        break;
    }
    if (!json_equal(before, doc))
        abort(); /* a patch must never touch its target */
    json_decref(out);
    ck_err_release(&err);
    json_decref(before);
    json_decref(patch);
    return 0;
}
