/*
 * field_errors.c - the list of field errors validation collects before it
 * fails once, and their Kubernetes wording.
 *
 * Mirrors apimachinery pkg/util/validation/field: each error has a type
 * (Invalid, Required, ...), the field's path, the bad value and a detail;
 * rendered as `<field>: <Type text>[: <value>][: <detail>]`.
 *
 * Tested through its callers: tests/api/test_validation.c builds and renders
 * lists of every error type, and test_schema.c, test_meta.c, test_strategy.c
 * and test_gates.c check the rendered texts of the errors they cause.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

static const struct {
    const char *reason;
    const char *text;
    bool shows_value;
} types[] = {
    [CK_FIELD_INVALID] = {"FieldValueInvalid", "Invalid value", true},
    [CK_FIELD_REQUIRED] = {"FieldValueRequired", "Required value", false},
    [CK_FIELD_NOT_SUPPORTED] = {"FieldValueNotSupported", "Unsupported value", true},
    [CK_FIELD_DUPLICATE] = {"FieldValueDuplicate", "Duplicate value", true},
    [CK_FIELD_FORBIDDEN] = {"FieldValueForbidden", "Forbidden", false},
    [CK_FIELD_TOO_LONG] = {"FieldValueTooLong", "Too long", false},
    [CK_FIELD_TYPE_INVALID] = {"FieldValueTypeInvalid", "Invalid value", true},
    [CK_FIELD_TOO_MANY] = {"FieldValueTooMany", "Too many", true},
    [CK_FIELD_NOT_FOUND] = {"FieldValueNotFound", "Not found", true},
};

const char *ck_field_error_reason(enum ck_field_error_type type)
{
    return types[type].reason;
}

void ck_field_errors_add(struct ck_field_errors *errs, enum ck_field_error_type type,
                         const char *field, const char *value, bool value_is_string,
                         const char *detail_fmt, ...)
{
    if (errs->len == errs->cap) {
        size_t cap = errs->cap ? errs->cap * 2 : 4;
        struct ck_field_error *items = ck__realloc(errs->items, cap * sizeof(*items));
        if (!items) {
            errs->nomem = true;
            return;
        }
        errs->items = items;
        errs->cap = cap;
    }
    struct ck_field_error *e = &errs->items[errs->len++];
    memset(e, 0, sizeof(*e));
    e->type = type;
    e->field = ck__strdup(field);
    if (value)
        e->value = value_is_string ? ck__quote_dup(value) : ck__strdup(value);
    if (detail_fmt) {
        struct ck__buf b = {0};
        va_list ap;
        va_start(ap, detail_fmt);
        ck__buf_vprintf(&b, detail_fmt, ap);
        va_end(ap);
        e->detail = ck__buf_take(&b);
    }
    if (!e->field || (value && !e->value) || (detail_fmt && !e->detail))
        errs->nomem = true;
}

void ck_field_errors_release(struct ck_field_errors *errs)
{
    for (size_t i = 0; i < errs->len; i++) {
        free(errs->items[i].field);
        free(errs->items[i].value);
        free(errs->items[i].detail);
    }
    free(errs->items);
    memset(errs, 0, sizeof(*errs));
}

char *ck_field_error_string(const struct ck_field_error *e)
{
    const char *field = e->field ? e->field : "<nil>";
    const char *text = types[e->type].text;
    char *out = NULL;
    int n;
    bool with_value = types[e->type].shows_value && e->value;
    if (with_value && e->detail)
        n = asprintf(&out, "%s: %s: %s: %s", field, text, e->value, e->detail);
    else if (with_value)
        n = asprintf(&out, "%s: %s: %s", field, text, e->value);
    else if (e->detail)
        n = asprintf(&out, "%s: %s: %s", field, text, e->detail);
    else
        n = asprintf(&out, "%s: %s", field, text);
    return n < 0 ? NULL : out;
}
