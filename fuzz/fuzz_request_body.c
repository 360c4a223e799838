/*
 * fuzz_request_body.c - libFuzzer target for the path a create or update
 * request body takes through lib/api, for every kind ckube serves.
 *
 * The input is a POST/PUT body. For each kind in ck_kinds() whose kind the
 * body does not contradict (the handler answers 400 before any of this when
 * "kind" names another kind), it is decoded against the kind's schema under
 * fieldValidation Strict and Warn, then taken through what the registry does
 * on create: ObjectMeta preparation, schema and computed defaults, schema
 * validation and ObjectMeta plus the kind's own validation; and through an
 * update of that result by the decoded body (prepare_for_update, defaults,
 * validation against the old object).
 *
 * Any input must be accepted or refused cleanly. Beyond not crashing, the
 * target checks properties the server relies on:
 *   - Strict accepting a body implies Warn accepts it with no warning and
 *     decodes it to the same object (the two modes differ only in what they
 *     do with unknown and duplicate fields);
 *   - an object that passed validation on create, serialised as the store
 *     holds it, decodes again under Strict (what the server wrote it can read
 *     back) and is a fixed point of defaulting (defaults are idempotent);
 *   - every field error names a field.
 *
 * Threading: libFuzzer calls the target on one thread; the schema set is
 * built once and only read afterwards.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define FUZZ_NAMESPACE "default"
#define FUZZ_NOW       1767225600LL /* 2026-01-01T00:00:00Z: inputs replay the same way */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ck_schemas *schemas(void)
{
    static struct ck_schemas *set;
    if (!set) {
        struct ck_err err = {0};
        if (ck_api_builtin_schemas(&set, &err) < 0)
            abort(); /* the built-in schemas are part of the program */
    }
    return set;
}

/* Fails the run when an error has no field path: the 422 would be unreadable. */
static void check_errors(const struct ck_field_errors *errs)
{
    for (size_t i = 0; i < errs->len; i++)
        if (!errs->items[i].field || !errs->items[i].field[0])
            abort();
}

/* Defaults then validates, as the registry does; returns whether obj is valid. */
static bool default_and_validate(const struct ck_kind *kind, json_t *obj, const json_t *old)
{
    ck_schema_default(schemas(), kind->schema, obj);
    ck_kind_default(kind, obj);
    struct ck_field_errors errs = {0};
    ck_schema_validate(schemas(), kind->schema, obj, &errs);
    ck_meta_validate(kind, obj, old, &errs);
    check_errors(&errs);
    bool valid = errs.len == 0;
    ck_field_errors_release(&errs);
    return valid;
}

/* A created object must read back under Strict and not change when defaulted again. */
static void check_round_trip(const struct ck_kind *kind, const json_t *created)
{
    char *text = json_dumps(created, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text)
        return; /* out of memory is not what this target looks for */
    json_t *again = NULL;
    struct ck_err err = {0};
    if (ck_schema_decode(schemas(), kind->schema, text, strlen(text), CK_FIELD_VALIDATION_STRICT,
                         &again, NULL, &err) < 0) {
        fprintf(stderr, "%s: the stored object does not decode: %s\n", kind->kind, err.msg);
        abort(); /* the server could not read what it stored */
    }
    ck_schema_default(schemas(), kind->schema, again);
    ck_kind_default(kind, again);
    if (!json_equal(again, created)) {
        fprintf(stderr, "%s: defaulting twice changed %s\n", kind->kind, text);
        abort(); /* defaults are not idempotent */
    }
    json_decref(again);
    free(text);
}

static json_t *decode(const struct ck_kind *kind, const uint8_t *data, size_t size,
                      enum ck_field_validation fv, struct ck_warnings *warnings)
{
    json_t *obj = NULL;
    struct ck_err err = {0};
    if (ck_schema_decode(schemas(), kind->schema, (const char *)data, size, fv, &obj, warnings,
                         &err) < 0)
        return NULL;
    return obj;
}

static void fuzz_kind(const struct ck_kind *kind, const uint8_t *data, size_t size)
{
    struct ck_warnings warnings = {0};
    json_t *strict = decode(kind, data, size, CK_FIELD_VALIDATION_STRICT, NULL);
    json_t *body = decode(kind, data, size, CK_FIELD_VALIDATION_WARN, &warnings);
    if (strict && (!body || warnings.len || !json_equal(strict, body)))
        abort(); /* Strict accepted what Warn refused or changed */
    json_decref(strict);
    ck_warnings_release(&warnings);
    if (!body)
        return;
    const char *body_kind = json_string_value(json_object_get(body, "kind"));
    if (body_kind && *body_kind && strcmp(body_kind, kind->kind) != 0) {
        json_decref(body); /* the handler's 400: not this kind's body */
        return;
    }

    json_t *created = json_deep_copy(body);
    struct ck_err err = {0};
    if (created && ck_meta_prepare_create(kind, created, FUZZ_NAMESPACE, FUZZ_NOW, &err) == 0 &&
        default_and_validate(kind, created, NULL)) {
        check_round_trip(kind, created);
        json_t *updated = json_deep_copy(body);
        if (updated) {
            ck_meta_prepare_update(kind, updated, created);
            (void)default_and_validate(kind, updated, created);
        }
        json_decref(updated);
    }
    json_decref(created);
    json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = 0;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++)
        fuzz_kind(kinds[i], data, size);
    return 0;
}
