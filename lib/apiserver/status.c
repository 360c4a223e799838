/*
 * status.c - Kubernetes Status objects: the one place the API server turns a
 * struct ck_err into the JSON a client reads.
 *
 * Mirrors apimachinery's metav1.Status as the API server sends it. A failure
 * carries kind/apiVersion, empty metadata, status "Failure", the message,
 * the reason (a StatusReason such as NotFound), details (name, group, kind,
 * causes) and code, the HTTP status. A success (a delete that answers a
 * Status, a binding) carries status "Success" and what it concerns. Every
 * error response, every watch ERROR event and every Success Status is built
 * by ck__status_json(); the 422 Invalid form, with one cause per field
 * error, by ck__err_invalid().
 *
 * Memory: a Status is rendered with jansson and may fail when memory is
 * short; the sender then falls back to ck__status_no_memory_line, a static
 * body (ck__status_no_memory without the line break every JSON answer ends
 * with, for watch events).
 * An error without an HTTP code is rendered as 500 InternalError, so code 0
 * is never sent.
 *
 * Threading: pure functions over their arguments.
 *
 * Tested in tests/apiserver/test_status.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

const char ck__status_no_memory[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Internal error occurred: out of memory\",\"reason\":\"InternalError\","
    "\"details\":{},\"code\":500}";

const char ck__status_no_memory_line[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Internal error occurred: out of memory\",\"reason\":\"InternalError\","
    "\"details\":{},\"code\":500}\n";

/* Adds key: value (a string) to obj unless value is NULL or "". Returns 0 or -1. */
static int set_string(json_t *obj, const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    return json_object_set_new(obj, key, json_string(value));
}

/* metav1.StatusDetails; NULL when out of memory. */
static json_t *details_of(const struct ck_err *err, bool success)
{
    json_t *details = json_object();
    if (!details || set_string(details, "name", err->name) < 0 ||
        set_string(details, "group", err->group) < 0 ||
        set_string(details, "kind", err->kind) < 0 ||
        (success && set_string(details, "uid", err->uid) < 0))
        goto out_free;
    if (err->n_causes) {
        json_t *causes = json_array();
        if (json_object_set_new(details, "causes", causes) < 0)
            goto out_free;
        for (size_t i = 0; i < err->n_causes; i++) {
            const struct ck_err_cause *c = &err->causes[i];
            if (json_array_append_new(causes,
                                      json_pack("{s:s, s:s, s:s}", "reason", c->type ? c->type : "",
                                                "message", c->message, "field", c->field)) < 0)
                goto out_free;
        }
    }
    return details;

out_free:
    json_decref(details);
    return NULL;
}

char *ck__status_json(const struct ck_err *err, bool omit_empty_details, size_t *ret_len)
{
    bool success = err->code == 0;
    json_t *details = details_of(err, success);
    if (!details)
        return NULL;
    if (omit_empty_details && json_object_size(details) == 0)
        details = (json_decref(details), NULL);
    json_t *status;
    if (success) {
        status = json_pack("{s:s, s:s, s:{}, s:s, s:o*}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", "Success", "details", details);
        if (status && err->http_status &&
            json_object_set_new(status, "code", json_integer(err->http_status)) < 0)
            status = (json_decref(status), NULL);
    } else {
        /* an error that never got a Status reason is an internal one, never code 0 */
        bool api = err->http_status > 0 && err->reason;
        status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:o*, s:i}", "kind", "Status",
                           "apiVersion", "v1", "metadata", "status", "Failure", "message",
                           ck_err_message(err), "reason", api ? err->reason : "InternalError",
                           "details", details, "code", api ? err->http_status : 500);
    }
    char *text = ck__json_dumps(status, JSON_COMPACT | JSON_PRESERVE_ORDER, ret_len);
    json_decref(status);
    return text;
}

char *ck__field_errors_text(const struct ck_field_errors *errs)
{
    struct ck__buf b = {0};
    for (size_t i = 0; i < errs->len; i++) {
        char *text = ck_field_error_string(&errs->items[i]);
        ck__buf_printf(&b, "%s%s", i ? ", " : "", text ? text : "");
        free(text);
    }
    return ck__buf_take(&b);
}

int ck__err_aggregate(struct ck_err *err, const struct ck_field_errors *errs)
{
    char *joined = errs->nomem ? NULL : ck__field_errors_text(errs);
    int r = !joined ? ck_err_no_memory(err)
                    : ck_err_status(err, "Invalid", errs->len > 1 ? "[%s]" : "%s", joined);
    free(joined);
    return r;
}

int ck__err_invalid(struct ck_err *err, const char *group, const char *kind, const char *name,
                    const struct ck_field_errors *errs)
{
    /* a list that lost an error to an allocation failure no longer says what is wrong */
    if (errs->nomem)
        return ck_err_no_memory(err);
    /* the field errors joined; without memory for them, the causes still say each */
    char *joined = ck__field_errors_text(errs);
    char kind_name[128];
    if (group && group[0])
        snprintf(kind_name, sizeof(kind_name), "%s.%s", kind, group);
    else
        snprintf(kind_name, sizeof(kind_name), "%s", kind);
    int code = ck_err_status(
        err, "Invalid", errs->len > 1 ? "%s \"%s\" is invalid: [%s]" : "%s \"%s\" is invalid: %s",
        kind_name, name ? name : "", joined ? joined : "");
    free(joined);
    ck_err_set_details(err, group, kind, name);
    for (size_t i = 0; i < errs->len; i++) {
        const struct ck_field_error *e = &errs->items[i];
        char *text = ck_field_error_string(e);
        /* the cause's message is the text without "field: " (Go's ErrorBody) */
        size_t skip = text && e->field ? strlen(e->field) + 2 : 0;
        const char *body = text && strlen(text) >= skip ? text + skip : "";
        ck_err_add_cause(err, ck_field_error_reason(e->type), body, e->field);
        free(text);
    }
    return code;
}

int ck__err_invalid_object(struct ck_err *err, const struct ck_kind *kind, const char *name,
                           const struct ck_field_errors *errs)
{
    return ck__err_invalid(err, kind->group, kind->kind, name, errs);
}

int ck__err_not_found(struct ck_err *err, const struct ck_kind *kind, const char *name)
{
    return ck_err_not_found(err, kind->group, kind->resource, name);
}

int ck__err_conflict(struct ck_err *err, const struct ck_kind *kind, const char *name,
                     const char *why)
{
    return ck_err_conflict(err, kind->group, kind->resource, name, why);
}

int ck__err_store(struct ck_err *err, const struct ck_err *store_err)
{
    if (store_err->code == CK_ECOMPACTED)
        return ck_err_status(err, "Expired", "%s", store_err->msg);
    if (store_err->code == CK_ENOMEM)
        return ck_err_no_memory(err);
    return ck_err_internal(err, "%s", store_err->msg);
}
