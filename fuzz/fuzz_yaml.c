/*
 * fuzz_yaml.c - libFuzzer target for lib/util/yaml.c: any input read as
 * YAML loads or fails cleanly; whatever loads is written back as YAML the
 * way kube-apiserver writes it, and that text must read back to the same
 * value (numbers compared by value: Go, too, writes the float 1.0 as 1).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x == y || (isnan(x) && isnan(y));
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)a, key, value)
        {
            json_t *other = json_object_get(b, key);
            if (!other || !same(value, other))
                return false;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *value = NULL;
    struct ck_err err = {0};
    if (ck__yaml_to_json((const char *)data, size, &value, &err) != 0)
        return 0;
    size_t len = 0;
    char *text = ck__json_to_yaml(value, &len);
    if (text) {
        json_t *back = NULL;
        if (ck__yaml_to_json(text, len, &back, &err) != 0 || !same(value, back))
            abort(); /* what we write must read back as what it was */
        json_decref(back);
        free(text);
    }
    json_decref(value);
    return 0;
}
