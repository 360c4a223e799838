/*
 * fuzz_structural.c - libFuzzer target for ck_crd_schema_check() and the
 * custom-resource side of schema decoding, defaulting and validation. The
 * input is a JSON document {"schema": <openAPIV3Schema>, "object": <value>}.
 * The check must survive any schema; when it finds the schema structural,
 * the schema becomes a one-kind set (marked x-ckube-custom-resource) and the
 * object goes through decode, default and validate (and validation of an
 * update from the object as sent). Pruning must be idempotent: decoding the
 * decoded object again changes nothing; so must defaulting (read after
 * write); ratcheting never adds an error.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_object(const json_t *schema, const json_t *object)
{
    json_t *kind = json_deep_copy(schema);
    json_t *doc = json_object();
    if (!kind || !doc || json_object_set_new(kind, "x-ckube-custom-resource", json_true()) < 0 ||
        json_object_set(doc, "fuzz.Kind", kind) < 0) {
        json_decref(kind);
        json_decref(doc);
        return;
    }
    json_decref(kind);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    char *body = json_dumps(object, JSON_COMPACT | JSON_ENCODE_ANY);
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    const char *docs[] = {text};
    if (text && body && ck_schemas_new(docs, 1, &set, &err) == 0) {
        json_t *obj = NULL;
        struct ck_warnings warnings = {0};
        if (ck_schema_decode(set, "fuzz.Kind", body, strlen(body), CK_FIELD_VALIDATION_WARN, &obj,
                             &warnings, &err) == 0) {
            char *again_text = json_dumps(obj, JSON_COMPACT | JSON_ENCODE_ANY);
            json_t *again = NULL;
            if (again_text &&
                ck_schema_decode(set, "fuzz.Kind", again_text, strlen(again_text),
                                 CK_FIELD_VALIDATION_IGNORE, &again, NULL, &err) == 0) {
                if (!json_equal(again, obj))
                    abort(); /* pruning a pruned object changed it */
                json_decref(again);
            }
            free(again_text);
            /* defaulting a defaulted object changes nothing (defaults on read after write) */
            json_t *once = NULL;
            if (ck_schema_default(set, "fuzz.Kind", obj) == 0 && (once = json_deep_copy(obj)) &&
                ck_schema_default(set, "fuzz.Kind", once) == 0 && !json_equal(once, obj))
                abort();
            json_decref(once);
            struct ck_field_errors errs = {0};
            ck_schema_validate(set, "fuzz.Kind", obj, &errs);
            size_t all = errs.len;
            for (size_t i = 0; i < errs.len; i++)
                free(ck_field_error_string(&errs.items[i]));
            ck_field_errors_release(&errs);
            /* an update from the object as sent: ratcheting only ever removes errors */
            ck_schema_validate_update(set, "fuzz.Kind", obj, object, &errs);
            if (errs.len > all && !errs.nomem)
                abort();
            ck_field_errors_release(&errs);
            json_decref(obj);
        }
        ck_warnings_release(&warnings);
    }
    ck_schemas_free(set);
    free(text);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *input = json_loadb((const char *)data, size, 0, &jerr);
    if (!input)
        return 0;
    const json_t *schema = json_object_get(input, "schema");
    const json_t *object = json_object_get(input, "object");
    struct ck_field_errors errs = {0};
    ck_crd_schema_check(schema, "spec.versions[0].schema.openAPIV3Schema", &errs);
    for (size_t i = 0; i < errs.len; i++)
        free(ck_field_error_string(&errs.items[i]));
    bool structural = errs.len == 0 && !errs.nomem;
    ck_field_errors_release(&errs);
    if (structural && object)
        run_object(schema, object);
    json_decref(input);
    return 0;
}
