/*
 * fuzz_managed_fields.c - libFuzzer target for metadata.managedFields: the
 * input is a JSON document taken as a managedFields list (and, when it is
 * an object, as one FieldsV1 set). Any input decodes or fails cleanly; a
 * set that parses writes back to FieldsV1 that parses again to the same
 * set; union with itself and difference from itself are the set and the
 * empty set; decoded entries encode to a list that decodes again; and an
 * apply to a Deployment carrying those managedFields ends in a result or a
 * Status, never a crash.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char deployment[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"labels\":{\"app\":\"web\"}},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":"
    "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
    "{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"ports\":[{\"containerPort\":80}]}]}}}}";

static const char config[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
    "\"spec\":{\"replicas\":3,\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\","
    "\"image\":\"y\"}]}}}}";

static struct ck_schemas *schemas;
static const struct ck_kind *kind;
static json_t *live, *cfg;

static void check_set(const json_t *fields_v1)
{
    json_t *set = NULL;
    struct ck_err err = {0};
    if (ck_fieldset_from_fields_v1(fields_v1, &set, &err) < 0)
        return;
    json_t *back = ck_fieldset_to_fields_v1(set);
    json_t *again = NULL;
    if (!back || ck_fieldset_from_fields_v1(back, &again, &err) < 0 || !json_equal(set, again))
        abort();
    json_t *u = ck_fieldset_union(set, set), *d = ck_fieldset_difference(set, set);
    if (!u || !d || !json_equal(u, set) || !ck_fieldset_is_empty(d))
        abort();
    json_decref(u);
    json_decref(d);
    json_decref(again);
    json_decref(back);
    json_decref(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!schemas) {
        struct ck_err err = {0};
        json_error_t jerr;
        if (ck_api_builtin_schemas(&schemas, &err) < 0)
            abort();
        kind = ck_kind_lookup("apps", "v1", "deployments");
        live = json_loads(deployment, 0, &jerr);
        cfg = json_loads(config, 0, &jerr);
        if (!kind || !live || !cfg)
            abort();
    }
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
    if (!doc)
        return 0;
    if (json_is_object(doc))
        check_set(doc);
    struct ck_managed_fields mf;
    struct ck_err err = {0};
    if (ck_managed_fields_decode(doc, &mf, &err) == 0) {
        json_t *encoded = ck_managed_fields_encode(&mf);
        struct ck_managed_fields again;
        if (!encoded || ck_managed_fields_decode(encoded, &again, &err) < 0)
            abort();
        ck_managed_fields_release(&again);
        /* the live object with these managedFields, applied to by a manager */
        json_t *obj = json_deep_copy(live);
        json_object_set(json_object_get(obj, "metadata"), "managedFields", encoded);
        struct ck_field_manager who = {"fuzz", NULL, 0};
        json_t *out = NULL;
        struct ck_err aerr = {0};
        int r = ck_apply(schemas, kind, obj, cfg, &who, false, &out, &aerr);
        if ((r == 0) != (out != NULL))
            abort();
        json_decref(out);
        ck_err_release(&aerr);
        json_decref(obj);
        json_decref(encoded);
        ck_managed_fields_release(&mf);
    }
    ck_err_release(&err);
    json_decref(doc);
    return 0;
}
