/*
 * err.c - filling struct ck_err, the one error carrier of ckube's libraries.
 *
 * A function that fails returns a negative CK_E* code and, when its caller
 * passed a struct ck_err, one sentence saying what failed. On the API path
 * the same struct also carries what a Kubernetes Status needs (apimachinery's
 * StatusError around a metav1.Status): the StatusReason, the HTTP code that
 * goes with it, details naming the object, and field causes. The API server
 * renders that into a Status in one place (lib/apiserver/status.c).
 *
 * Invariants: http_status is never 0 once an API setter ran (an unknown
 * reason becomes InternalError/500); reason is always one of the table's
 * static strings. ck_err_set() never allocates, so reporting an
 * out-of-memory error cannot itself fail. The API setters allocate only for
 * what does not fit inline (a long message, causes) and drop it when memory
 * is short, so the error stays well formed. Allocation goes through
 * ck__malloc, so tests can fail it.
 *
 * Threading: an error belongs to its caller; the reason table is constant.
 *
 * Tested in tests/util/test_err.c; the Status rendering in
 * tests/apiserver/test_status.c.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

/* apimachinery's StatusReason values, the HTTP code each answers, and ckube's code. */
static const struct reason {
    const char *name;
    int http;
    int code;
} reasons[] = {
    {"BadRequest", 400, CK_EINVAL},
    {"Unauthorized", 401, CK_EPERM},
    {"Forbidden", 403, CK_EPERM},
    {"NotFound", 404, CK_ENOENT},
    {"MethodNotAllowed", 405, CK_EINVAL},
    {"NotAcceptable", 406, CK_EINVAL},
    {"AlreadyExists", 409, CK_EEXIST},
    {"Conflict", 409, CK_ECONFLICT},
    {"Gone", 410, CK_ECOMPACTED},
    {"Expired", 410, CK_ECOMPACTED},
    {"RequestEntityTooLarge", 413, CK_EINVAL},
    {"UnsupportedMediaType", 415, CK_EINVAL},
    {"Invalid", 422, CK_EINVAL},
    {"TooManyRequests", 429, CK_EIO},
    {"InternalError", 500, CK_EIO},
    {"ServerTimeout", 500, CK_EIO},
    {"StoreReadError", 500, CK_EIO},
    {"Unknown", 500, CK_EIO},
    {"ServiceUnavailable", 503, CK_EIO},
    {"Timeout", 504, CK_EIO},
};

#define INTERNAL_ERROR (&reasons[14])

static const struct reason *find_reason(const char *name)
{
    for (size_t i = 0; name && i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reasons[i].name, name) == 0)
            return &reasons[i];
    return NULL;
}

int ck_err_reason_http(const char *reason)
{
    const struct reason *r = find_reason(reason);
    return r ? r->http : 500;
}

int ck_err_reason_code(const char *reason)
{
    const struct reason *r = find_reason(reason);
    return r ? r->code : CK_EIO;
}

/* Clears everything but the inline message, without freeing. */
static void clear(struct ck_err *err, int code)
{
    err->code = code;
    err->http_status = 0;
    err->reason = NULL;
    err->long_msg = NULL;
    err->name[0] = '\0';
    err->uid[0] = '\0';
    err->group = NULL;
    err->kind = NULL;
    err->causes = NULL;
    err->n_causes = 0;
}

int ck_err_set(struct ck_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    clear(err, code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int ck_err_set_long(struct ck_err *err, int code, const char *text)
{
    if (!err)
        return code;
    clear(err, code);
    snprintf(err->msg, sizeof(err->msg), "%s", text);
    if (strlen(text) >= sizeof(err->msg))
        err->long_msg = ck__strdup(text); /* NULL when out of memory: msg has the start */
    return code;
}

void ck_err_release(struct ck_err *err)
{
    if (!err)
        return;
    free(err->long_msg);
    for (size_t i = 0; i < err->n_causes; i++) {
        free(err->causes[i].message);
        free(err->causes[i].field);
    }
    free(err->causes);
    clear(err, 0);
    err->msg[0] = '\0';
}

const char *ck_err_message(const struct ck_err *err)
{
    return err->long_msg ? err->long_msg : err->msg;
}

/* The API setters' common part: reason, codes and the message (prefix, then fmt). */
static int set_status(struct ck_err *err, const struct reason *r, int code, const char *prefix,
                      const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static int set_status(struct ck_err *err, const struct reason *r, int code, const char *prefix,
                      const char *fmt, va_list ap)
{
    if (!err)
        return code;
    ck_err_release(err);
    err->code = code;
    err->http_status = r->http;
    err->reason = r->name;
    va_list again;
    va_copy(again, ap);
    size_t head = strlen(prefix);
    int n = vsnprintf(NULL, 0, fmt, ap);
    size_t len = head + (n > 0 ? (size_t)n : 0);
    char *text = len >= sizeof(err->msg) ? ck__malloc(len + 1) : NULL;
    char *out = text ? text : err->msg;
    size_t size = text ? len + 1 : sizeof(err->msg);
    snprintf(out, size, "%s", prefix);
    if (head < size)
        vsnprintf(out + head, size - head, fmt, again);
    va_end(again);
    if (text) {
        snprintf(err->msg, sizeof(err->msg), "%s", text);
        err->long_msg = text;
    }
    return code;
}

int ck_err_status(struct ck_err *err, const char *reason, const char *fmt, ...)
{
    const struct reason *r = find_reason(reason);
    assert(r && "unknown StatusReason");
    if (!r)
        r = INTERNAL_ERROR;
    va_list ap;
    va_start(ap, fmt);
    int code = set_status(err, r, r->code, "", fmt, ap);
    va_end(ap);
    return code;
}

int ck_err_internal(struct ck_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = set_status(err, INTERNAL_ERROR, CK_EIO, "Internal error occurred: ", fmt, ap);
    va_end(ap);
    return code;
}

int ck_err_no_memory(struct ck_err *err)
{
    ck_err_internal(err, "out of memory"); /* fits msg: allocates nothing */
    if (err)
        err->code = CK_ENOMEM;
    return CK_ENOMEM;
}

void ck_err_set_details(struct ck_err *err, const char *group, const char *kind, const char *name)
{
    if (!err)
        return;
    snprintf(err->name, sizeof(err->name), "%s", name ? name : "");
    err->group = group;
    err->kind = kind;
}

/* `<prefix><resource>[.<group>] "<name>"<suffix><why>` with the object's details. */
static int object_error(struct ck_err *err, const char *reason, const char *prefix,
                        const char *group, const char *resource, const char *name,
                        const char *suffix, const char *why)
{
    bool grouped = group && *group;
    int code =
        ck_err_status(err, reason, "%s%s%s%s \"%s\"%s%s", prefix, resource, grouped ? "." : "",
                      grouped ? group : "", name ? name : "", suffix, why);
    ck_err_set_details(err, group, resource, name);
    return code;
}

int ck_err_not_found(struct ck_err *err, const char *group, const char *resource, const char *name)
{
    return object_error(err, "NotFound", "", group, resource, name, " not found", "");
}

int ck_err_already_exists(struct ck_err *err, const char *group, const char *resource,
                          const char *name)
{
    return object_error(err, "AlreadyExists", "", group, resource, name, " already exists", "");
}

int ck_err_conflict(struct ck_err *err, const char *group, const char *resource, const char *name,
                    const char *why)
{
    return object_error(err, "Conflict", "Operation cannot be fulfilled on ", group, resource, name,
                        ": ", why);
}

int ck_err_add_cause(struct ck_err *err, const char *type, const char *message, const char *field)
{
    if (!err)
        return 0;
    struct ck_err_cause *grown = ck__realloc(err->causes, (err->n_causes + 1) * sizeof(*grown));
    if (!grown)
        return CK_ENOMEM;
    err->causes = grown;
    struct ck_err_cause *c = &grown[err->n_causes];
    c->type = type;
    c->message = ck__strdup(message ? message : "");
    c->field = ck__strdup(field ? field : "");
    if (!c->message || !c->field) {
        free(c->message);
        free(c->field);
        return CK_ENOMEM;
    }
    err->n_causes++;
    return 0;
}
