/*
 * fuzz_field_selector.c - libFuzzer target for the field selector parser:
 * any input parses or fails cleanly, and matching a parsed selector with a
 * getter must not crash.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *get_name(const char *field, const json_t *obj, const void *ctx, char *buf,
                            size_t size)
{
    (void)ctx;
    (void)buf;
    (void)size;
    return strcmp(field, "metadata.name") == 0 ? json_string_value(json_object_get(obj, "name"))
                                               : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *)data, size);
    if (!text)
        return 0;
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    if (ck_field_selector_parse(text, &s, &err) == 0) {
        json_t *obj = json_pack("{s:s}", "name", "web-1");
        (void)ck_field_selector_matches(s, obj, get_name, NULL);
        (void)ck_field_selector_exact(s, "metadata.name");
        static const char *const supported[] = {"metadata.name", NULL};
        (void)ck_field_selector_check_fields(s, supported, &err);
        json_decref(obj);
        ck_field_selector_free(s);
    }
    free(text);
    return 0;
}
