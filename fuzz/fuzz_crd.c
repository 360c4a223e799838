/*
 * fuzz_crd.c - libFuzzer target for CustomResourceDefinitions: the kinds a
 * definition describes (lib/api/customresource.c) and the definition's own
 * defaults and validation (lib/api/kinds/customresourcedefinition.c).
 *
 * The input is a CustomResourceDefinition body. It is defaulted and
 * validated as the registry does on create; then, valid or not (the server
 * only builds kinds from stored definitions, but a stored one may predate a
 * rule), its kinds are built over the built-in schemas and a fixed custom
 * resource is decoded, defaulted and validated against each kind's schema,
 * its Table row and Scale-relevant paths read. Any input must be accepted
 * or refused cleanly; beyond not crashing the target checks that every
 * built kind names its group, version, resource and schema, that the
 * schema resolves in the kind's set, and that every field error names a
 * field (the empty path for the object itself: a stored definition may
 * predate the rule that its root schema is an object).
 *
 * Threading: libFuzzer calls the target on one thread; the schema set is
 * built once and only read afterwards.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char body[] =
    "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":\"a\","
    "\"namespace\":\"default\"},\"spec\":{\"cronSpec\":\"* * * * *\",\"replicas\":3,\"x\":[1]},"
    "\"status\":{\"replicas\":1}}";

/* Every error names its field; "" is the object itself (a root schema that is no object). */
static void check_errors(const struct ck_field_errors *errs)
{
    for (size_t i = 0; i < errs->len; i++)
        if (!errs->items[i].field)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ck_schemas *base;
    if (!base && ck_api_builtin_schemas(&base, NULL) < 0)
        abort();
    json_t *crd = NULL;
    if (ck_json_loadb((const char *)data, size, 0, &crd, NULL) < 0 || !json_is_object(crd)) {
        json_decref(crd);
        return 0;
    }
    const struct ck_kind *crd_kind =
        ck_kind_lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    struct ck_field_errors errs = {0};
    if (ck_kind_default(crd_kind, crd) == 0) {
        ck_meta_validate(crd_kind, crd, NULL, &errs);
        check_errors(&errs);
    }
    ck_field_errors_release(&errs);

    struct ck_crd_kinds *kinds = NULL;
    struct ck_err err = {0};
    if (ck_crd_kinds_new(crd, base, &kinds, &err) == 0) {
        for (size_t i = 0; i < ck_crd_kinds_count(kinds); i++) {
            const struct ck_kind *k = ck_crd_kinds_get(kinds, i);
            if (!k->group || !k->version || !k->resource || !k->schema || !k->schemas)
                abort();
            const struct ck_schemas *set = ck_kind_schemas(k, base);
            if (!ck_schemas_get(set, k->schema))
                abort();
            json_t *obj = NULL;
            struct ck_err derr = {0};
            struct ck_warnings warnings = {0};
            int r = ck_schema_decode(set, k->schema, body, strlen(body), CK_FIELD_VALIDATION_WARN,
                                     &obj, &warnings, &derr);
            ck_warnings_release(&warnings);
            if (r == 0) {
                ck_schema_default(set, k->schema, obj);
                struct ck_field_errors verrs = {0};
                ck_schema_validate(set, k->schema, obj, &verrs);
                check_errors(&verrs);
                ck_field_errors_release(&verrs);
                json_t *row = ck_table_build(k, &obj, 1, true, CK_INCLUDE_NONE, "1", NULL, 0);
                json_decref(row);
                json_decref(obj);
            }
            ck_err_release(&derr);
        }
        ck_crd_kinds_free(kinds);
    }
    ck_err_release(&err);
    json_decref(crd);
    return 0;
}
