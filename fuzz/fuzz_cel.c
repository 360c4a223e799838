/*
 * fuzz_cel.c - libFuzzer target for the CEL library (lib/cel/): the input is an
 * expression, compiled and, when it compiles, evaluated against a small fixed
 * activation (`self` and `oldSelf`, objects as a CRD rule sees them) under a small
 * cost limit. Properties beyond "no crash, no leak": a refusal carries cel-go's
 * "ERROR: <input>:" prefix; evaluation ends with a value, an error, or the cost error
 * (with the cost spent past the limit), never anything else; a value's cost is within
 * the limit; evaluating twice gives the same text.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cel.h"

#define COST_LIMIT 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *self, *old_self;

static char *evaluate(const struct ck_cel_program *prog, int *ret_code, uint64_t *ret_cost)
{
    struct ck_cel_var vars[] = {{"self", self, false, NULL}, {"oldSelf", old_self, false, NULL}};
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
        if (!self || !old_self)
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
