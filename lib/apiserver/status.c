/*
 * status.c - Kubernetes Status objects, the one shape of every API error.
 *
 * Mirrors apimachinery's metav1.Status as the API server sends it for a
 * failure: kind/apiVersion, empty metadata, status "Failure", message,
 * reason (a StatusReason such as NotFound) and code (the HTTP status).
 */
#include <jansson.h>

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
