/*
 * status.c - Kubernetes Status objects, the one shape of every API error.
 *
 * Mirrors apimachinery's metav1.Status as the API server sends it for a
 * failure: kind/apiVersion, empty metadata, status "Failure", message,
 * reason (a StatusReason such as NotFound) and code (the HTTP status); and
 * the 422 Invalid form with its field causes.
 */
#define _GNU_SOURCE /* asprintf, open_memstream */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

char *ck__status_json(unsigned int code, const char *reason, const char *message)
{
    json_t *status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:{}, s:I}", "kind", "Status",
                               "apiVersion", "v1", "metadata", "status", "Failure", "message",
                               message, "reason", reason, "details", "code", (json_int_t)code);
    if (!status)
        return NULL;
    char *text = json_dumps(status, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(status);
    return text;
}

void ck__status_invalid(struct ck__status *st, const char *group, const char *kind,
                        const char *name, const struct ck_field_errors *errs)
{
    size_t len = 0;
    char *joined = NULL;
    FILE *f = open_memstream(&joined, &len);
    json_t *causes = json_array();
    for (size_t i = 0; f && i < errs->len; i++) {
        const struct ck_field_error *e = &errs->items[i];
        char *text = ck_field_error_string(e);
        fprintf(f, "%s%s", i ? ", " : "", text ? text : "");
        /* the cause's message is the text without "field: " (Go's ErrorBody) */
        size_t skip = text && e->field ? strlen(e->field) + 2 : 0;
        const char *body = text && strlen(text) >= skip ? text + skip : "";
        json_array_append_new(causes,
                              json_pack("{s:s, s:s, s:s}", "reason", ck_field_error_reason(e->type),
                                        "message", body, "field", e->field ? e->field : ""));
        free(text);
    }
    if (f)
        fclose(f);
    char kind_name[128];
    if (group[0])
        snprintf(kind_name, sizeof(kind_name), "%s.%s", kind, group);
    else
        snprintf(kind_name, sizeof(kind_name), "%s", kind);
    ck__status_set(st, 422, "Invalid",
                   errs->len > 1 ? "%s \"%s\" is invalid: [%s]" : "%s \"%s\" is invalid: %s",
                   kind_name, name ? name : "", joined ? joined : "");
    free(joined);
    snprintf(st->name, sizeof(st->name), "%s", name ? name : "");
    st->group = group;
    st->kind = kind;
    st->causes = causes;
}
