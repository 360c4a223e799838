/*
 * fuzz_cel.c - libFuzzer target for the CEL library (lib/cel/): the input is an
 * expression, compiled and, when it compiles, evaluated against a small fixed
 * activation (`self` and `oldSelf`, objects as a CRD rule sees them) under a small
 * cost limit. Properties beyond "no crash, no leak": a refusal carries cel-go's
 * "ERROR: <input>:" prefix; evaluation ends with a value, an error, or the cost error
 * (with the cost spent past the limit), never anything else; a value's cost is within
 * the limit; evaluating twice gives the same text. The type checker runs too, with `self`
 * typed by a schema: it accepts with a type or refuses with cel-go's prefix, and a
 * primitive type it gives is the type of the value self (typed by the schema) gives.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cel.h"

#define COST_LIMIT 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *self, *old_self, *schema;

/* The checker's name of a primitive result type, NULL for the others. */
static const char *primitive(enum ck_cel_type t)
{
    static const char *const names[] = {
        [CK_CEL_BOOL] = "bool",     [CK_CEL_INT] = "int",       [CK_CEL_UINT] = "uint",
        [CK_CEL_DOUBLE] = "double", [CK_CEL_STRING] = "string", [CK_CEL_BYTES] = "bytes",
    };
    return t < sizeof(names) / sizeof(names[0]) ? names[t] : NULL;
}

/* The type checker over self and oldSelf of the schema's type (see the top). */
static void check(const struct ck_cel_program *prog)
{
    struct ck_cel_decl decls[] = {{.name = "self", .schema = schema, .resource_root = true},
                                  {.name = "oldSelf", .schema = schema, .optional = true}};
    char type[128] = "";
    struct ck_err err = {0};
    int r = ck_cel_check(prog, decls, 2, type, sizeof(type), &err);
    if (r == 0 && !type[0])
        abort();
    if (r == CK_EINVAL && strncmp(ck_err_message(&err), "ERROR: <input>:", 15) != 0)
        abort();
    if (r != 0 && r != CK_EINVAL && r != CK_ENOMEM)
        abort();
    ck_err_release(&err);
    if (r != 0)
        return;
    struct ck_cel_var vars[] = {{"self", self, false, NULL, schema},
                                {"oldSelf", old_self, true, NULL, schema}};
    struct ck_cel_result *res = NULL;
    if (ck_cel_eval(prog, vars, 2, COST_LIMIT, &res, NULL, &err) == 0) {
        const char *got = primitive(ck_cel_result_type(res));
        if (got && strchr(type, '(') == NULL && strcmp(type, "dyn") && strcmp(got, type))
            abort();
        ck_cel_result_free(res);
    }
    ck_err_release(&err);
}

static char *evaluate(const struct ck_cel_program *prog, int *ret_code, uint64_t *ret_cost)
{
    struct ck_cel_var vars[] = {{"self", self, false, NULL, NULL},
                                {"oldSelf", old_self, false, NULL, NULL}};
    struct ck_cel_result *res = NULL;
    struct ck_err err = {0};
    *ret_code = ck_cel_eval(prog, vars, 2, COST_LIMIT, &res, ret_cost, &err);
    char *text = NULL;
    if (*ret_code == 0) {
        text = ck_cel_result_format(res);
        json_t *j = NULL;
        if (ck_cel_result_to_json(res, &j) == 0)
            json_decref(j);
        ck_cel_result_free(res);
    } else {
        text = strdup(ck_err_message(&err));
        ck_err_release(&err);
    }
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) /* rules are short; long inputs only repeat what short ones find */
        return 0;
    if (!self) {
        self = json_loads("{\"metadata\": {\"name\": \"web\", \"labels\": {\"app\": \"x\"}}, "
                          "\"spec\": {\"replicas\": 3, \"ratio\": 0.5, \"items\": [\"a\", \"b\"], "
                          "\"flag\": true, \"none\": null}}",
                          0, NULL);
        old_self = json_loads("{\"spec\": {\"replicas\": 2, \"items\": []}}", 0, NULL);
        schema = json_loads(
            "{\"type\": \"object\", \"properties\": {\"spec\": {\"type\": \"object\", "
            "\"properties\": {\"replicas\": {\"type\": \"integer\"}, \"ratio\": {\"type\": "
            "\"number\"}, \"items\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "
            "\"flag\": {\"type\": \"boolean\"}, \"port\": {\"x-kubernetes-int-or-string\": "
            "true}, \"at\": {\"type\": \"string\", \"format\": \"date-time\"}, \"labels\": "
            "{\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}}}}}}",
            0, NULL);
        if (!self || !old_self || !schema)
            abort();
    }
    struct ck_cel_program *prog = NULL;
    struct ck_err err = {0};
    int r = ck_cel_compile((const char *)data, size, &prog, &err);
    if (r) {
        if (r != CK_EINVAL && r != CK_ENOMEM)
            abort();
        if (r == CK_EINVAL && strncmp(ck_err_message(&err), "ERROR: <input>:", 15) != 0)
            abort();
        ck_err_release(&err);
        return 0;
    }
    check(prog);
    int code, code2;
    uint64_t cost, cost2;
    char *a = evaluate(prog, &code, &cost);
    char *b = evaluate(prog, &code2, &cost2);
    if (code != 0 && code != CK_EINVAL && code != CK_CEL_ECOST && code != CK_ENOMEM)
        abort();
    if (code == 0 && cost > COST_LIMIT)
        abort();
    if (code == CK_CEL_ECOST && cost <= COST_LIMIT && !strstr(a, "memory"))
        abort();
    if (code != code2 || cost != cost2 || !a || !b || strcmp(a, b))
        abort();
    free(a);
    free(b);
    ck_cel_program_free(prog);
    return 0;
}
