/*
 * fuzz_jsonpath.c - libFuzzer target for Kubernetes' JSONPath as ckube
 * parses and evaluates a printer column's jsonPath (lib/api/jsonpath.c):
 * any input parses or fails cleanly with a message, and whatever parses
 * evaluates without crashing over a fixed object with nested objects,
 * arrays, numbers, booleans and nulls. A path that does not parse selects
 * nothing.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char object_text[] =
    "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app.kubernetes.io/name\":\"x\"}},"
    "\"spec\":{\"items\":[{\"name\":\"b\",\"n\":1},{\"name\":\"c\",\"n\":2.5,\"on\":true},"
    "[1,[2,[3]]],null,\"s\"],\"replicas\":3},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
    "{\"type\":\"Synced\",\"status\":\"False\",\"n\":1}]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *object;
    if (!object)
        object = json_loads(object_text, 0, NULL);
    char *text = strndup((const char *)data, size);
    if (!text || !object) {
        free(text);
        return 0;
    }
    struct ck_err err = {0};
    int r = ck_jsonpath_check(text, &err);
    if (r == CK_EINVAL && !err.msg[0])
        abort(); /* a refusal always says why */
    json_t *first = ck_jsonpath_first(text, object);
    if (r < 0 && first)
        abort(); /* what does not parse selects nothing */
    json_decref(first);
    ck_err_release(&err);
    free(text);
    return 0;
}
