/*
 * configdata.c - what ConfigMaps and Secrets share: the rule for their data
 * keys (apimachinery's IsConfigMapKey), the 1 MiB limit on their data, and
 * the `immutable` flag that freezes it.
 *
 * Mirrors ValidateConfigMap, ValidateSecret and their update checks in
 * Kubernetes' pkg/apis/core/validation; the messages are theirs.
 *
 * Threading: pure functions.
 * Tested by tests/api/test_configdata.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

#define CONFIG_KEY_MAX 253

static bool config_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

void ck__config_key_validate(const char *key, const char *path, struct ck_field_errors *errs)
{
    size_t len = strlen(key);
    bool chars_ok = len > 0;
    for (size_t i = 0; i < len && chars_ok; i++)
        chars_ok = config_key_char(key[i]);
    if (len > CONFIG_KEY_MAX)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true,
                            "must be no more than %d characters", CONFIG_KEY_MAX);
    if (!chars_ok)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true,
                            "a valid config key must consist of alphanumeric characters, '-', '_' "
                            "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
                            "for validation is '[-._a-zA-Z0-9]+')");
    if (strcmp(key, ".") == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true, "must not be '.'");
    else if (strcmp(key, "..") == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true, "must not be '..'");
    else if (strncmp(key, "..", 2) == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true, "must not start with '..'");
}

size_t ck__config_map_validate_keys(const json_t *map, const char *field, bool base64,
                                    struct ck_field_errors *errs)
{
    size_t total = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)map, key, value)
    {
        char path[CONFIG_KEY_MAX + 64];
        snprintf(path, sizeof(path), "%s[%s]", field, key);
        ck__config_key_validate(key, path, errs);
        const char *text = json_string_value(value);
        size_t len = text ? strlen(text) : 0;
        if (base64 && text) {
            size_t decoded = 0;
            char *bytes = ck_base64_decode(text, &decoded);
            if (!bytes)
                ck_field_errors_add(errs, CK_FIELD_INVALID, path, NULL, false,
                                    "illegal base64 data");
            free(bytes);
            len = decoded;
        }
        total += len;
    }
    return total;
}

void ck__config_immutable_validate(const json_t *obj, const json_t *old, const char *const *frozen,
                                   struct ck_field_errors *errs)
{
    if (!old || !json_is_true(json_object_get(old, "immutable")))
        return;
    static const char detail[] = "field is immutable when `immutable` is set";
    if (!json_is_true(json_object_get(obj, "immutable")))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "immutable", NULL, false, detail);
    for (size_t i = 0; frozen[i]; i++) {
        const json_t *now = json_object_get(obj, frozen[i]);
        const json_t *before = json_object_get(old, frozen[i]);
        /* an empty map and no map are the same to Go's reflect.DeepEqual of nil maps */
        bool now_empty = !now || json_object_size(now) == 0;
        bool before_empty = !before || json_object_size(before) == 0;
        if (!(now_empty && before_empty) && !json_equal(now, before))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, frozen[i], NULL, false, detail);
    }
}
