/*
 * request.c - what every handler of a resource request shares: reading the
 * query, parsing selectors, and queuing answers (bytes, JSON, a Status for
 * an error) in the format the client negotiated (media.c).
 *
 * handlers.c and watch.c both build on this file and it on neither, so the
 * dependency runs one way: server.c -> handlers.c -> watch.c -> request.c ->
 * status.c.
 *
 * Errors: an error answer is a Status rendered from a struct ck_err by
 * status.c. When memory is too short to render it, the static
 * ck__status_no_memory body is sent instead, so an allocation failure is
 * still a 500 InternalError Status. The transport's own allocations (its
 * response object, its headers) are outside our reach: when one fails the
 * answer is CK__NO, and the connection is closed.
 *
 * Every answer leaves through the request seam (req.h): ck__respond() and
 * its kin, never the transport itself.
 *
 * Threading: functions of one request, on the thread serving it.
 *
 * Tested through the servers of tests/apiserver/test_handlers.c (query
 * parsing, negotiation, selectors, Warning headers), test_wire.c and
 * tests/apiserver/test_alloc_fail.c (the fallback Status).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

const char *ck__query(struct ck__req *req, const char *name)
{
    return ck__req_query(req, name);
}

bool ck__query_bool(struct ck__req *req, const char *name)
{
    bool v = false;
    /* Go's strconv.ParseBool, which the Python client's "True" relies on */
    return ck__parse_bool(ck__query(req, name), &v) && v;
}

json_t *ck__partial_object(const json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    /* "o" takes the reference, also when json_pack fails */
    return json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                     "meta.k8s.io/v1", "metadata", meta ? json_incref(meta) : json_object());
}

json_t *ck__partial_list(const json_t *items, const char *rv, const char *continue_token)
{
    json_t *partials = json_array();
    json_t *meta = json_pack("{s:s}", "resourceVersion", rv);
    bool ok = partials && meta &&
              (!continue_token ||
               json_object_set_new(meta, "continue", json_string(continue_token)) == 0);
    for (size_t i = 0; ok && i < json_array_size(items); i++)
        ok = json_array_append_new(partials, ck__partial_object(json_array_get(items, i))) == 0;
    if (!ok) {
        json_decref(partials);
        json_decref(meta);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "kind", "PartialObjectMetadataList", "apiVersion",
                     "meta.k8s.io/v1", "metadata", meta, "items", partials);
}

json_t *ck__partial_list_of(const struct ck__list_result *result, const char *rv)
{
    json_t *items = json_array();
    bool ok = items != NULL;
    for (size_t i = 0; ok && i < result->n_kvs; i++)
        ok = json_array_append_new(items, ck__decode_stored(result->kvs[i])) == 0;
    json_t *list = ok ? ck__partial_list(items, rv, result->continue_token) : NULL;
    json_decref(items);
    return list;
}

int ck__err_partial_shape(struct ck_err *err, const struct ck_kind *kind, enum ck__accept accept)
{
    /* Kubernetes names the Go type it has: *v1.Pod, *v1.PodList */
    if (accept == CK__ACCEPT_PARTIAL)
        return ck_err_status(
            err, "NotAcceptable",
            "you requested PartialObjectMetadata, but the requested object is a list (*%s.%s)",
            kind->version, kind->list_kind);
    return ck_err_status(
        err, "NotAcceptable",
        "you requested PartialObjectMetadataList, but the requested object is not a list (*%s.%s)",
        kind->version, kind->kind);
}

int ck__parse_selector_text(const struct ck_kind *kind, const char *labels, const char *fields,
                            struct ck_label_selector **ret_labels,
                            struct ck_field_selector **ret_fields, struct ck_err *reterr)
{
    struct ck_err err = {0};
    *ret_labels = NULL;
    *ret_fields = NULL;
    int r = ck_label_selector_parse(labels ? labels : "", ret_labels, &err);
    if (r == 0) {
        r = ck_field_selector_parse(fields ? fields : "", ret_fields, &err);
        if (r == 0)
            r = ck_field_selector_check_fields(*ret_fields, ck_kind_field_label_names(kind), &err);
    }
    if (r == 0)
        return 0;
    *ret_labels = ck_label_selector_free(*ret_labels);
    *ret_fields = ck_field_selector_free(*ret_fields);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    return ck_err_status(reterr, "BadRequest", "%s", err.msg);
}

int ck__parse_selectors(struct ck__req *req, const struct ck_kind *kind,
                        struct ck_label_selector **ret_labels,
                        struct ck_field_selector **ret_fields, struct ck_err *reterr)
{
    return ck__parse_selector_text(kind, ck__query(req, "labelSelector"),
                                   ck__query(req, "fieldSelector"), ret_labels, ret_fields, reterr);
}

/*
 * A Warning header value as Kubernetes writes it (RFC 7234 code 299, agent
 * "-", the text as a quoted string: quotes and backslashes escaped, control
 * characters dropped), of at most max_runes UTF-8 characters of text.
 * Caller frees; NULL out of memory.
 */
static char *format_warning(const char *text, size_t max_runes)
{
    char *out = ck__malloc(2 * strlen(text) + 16);
    if (!out)
        return NULL;
    size_t n = (size_t)sprintf(out, "299 - \"");
    size_t runes = 0;
    for (const char *c = text; *c; c++) {
        if (((unsigned char)*c & 0xc0) != 0x80 && runes++ == max_runes)
            break;
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            continue;
        if (*c == '"' || *c == '\\')
            out[n++] = '\\';
        out[n++] = *c;
    }
    out[n++] = '"';
    out[n] = '\0';
    return out;
}

/* UTF-8 characters in s (Go's utf8.RuneCountInString, for valid text). */
static size_t rune_count(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Whether w's warning i is empty or repeats an earlier one (the recorder keeps one). */
static bool warning_skipped(const struct ck_warnings *w, size_t i)
{
    if (!w->items[i][0])
        return true;
    for (size_t k = 0; k < i; k++)
        if (strcmp(w->items[k], w->items[i]) == 0)
            return true;
    return false;
}

/*
 * Kubernetes' limits on a response's warnings (apiserver's endpoints/filters/warning.go):
 * while their texts total at most 4096 characters they go whole; the warning that would
 * pass that cuts every warning, those before it included, to 256 characters, and the
 * ones after it stop once 4096 characters have been written. Adds the headers to resp.
 */
#define WARNINGS_MAX_RUNES 4096
#define WARNING_CUT_RUNES  256

/* The headers of an API answer, in the order they are sent. */
#define API_HEADERS_LOCAL 16
struct api_headers {
    struct ck__header local[API_HEADERS_LOCAL];
    struct ck__header *h; /* local, or allocated for many warnings */
    size_t n;
    size_t warnings; /* h[warnings..n) are Warning headers whose values are ours */
};

static void add_header(struct api_headers *a, const char *name, const char *value)
{
    a->h[a->n++] = (struct ck__header){name, value};
}

/* Adds w's Warning headers to a (which has room for them all). */
static void add_warning_headers(struct api_headers *a, const struct ck_warnings *w)
{
    size_t written = 0, overflow = w->len; /* the warning that starts the cutting */
    for (size_t i = 0; i < w->len && overflow == w->len; i++) {
        if (warning_skipped(w, i))
            continue;
        written += rune_count(w->items[i]);
        if (written > WARNINGS_MAX_RUNES)
            overflow = i;
    }
    bool truncating = overflow < w->len;
    written = 0;
    for (size_t i = 0; i < w->len; i++) {
        if (warning_skipped(w, i))
            continue;
        if (i > overflow && written >= WARNINGS_MAX_RUNES)
            break;
        size_t runes = rune_count(w->items[i]);
        if (truncating && runes > WARNING_CUT_RUNES)
            runes = WARNING_CUT_RUNES;
        char *header = format_warning(w->items[i], truncating ? WARNING_CUT_RUNES : SIZE_MAX);
        if (header)
            add_header(a, "Warning", header);
        written += runes;
    }
}

/*
 * The headers every API answer has: X-Content-Type-Options (with nosniff),
 * Content-Type, Cache-Control and one Warning per warning (NULL: none).
 */
static void api_headers_init(struct api_headers *a, const char *content_type, bool nosniff,
                             const struct ck_warnings *w)
{
    size_t room = 3 + (w ? w->len : 0);
    a->h = room <= API_HEADERS_LOCAL ? a->local : ck__calloc(room, sizeof(*a->h));
    if (!a->h) { /* without memory for them the warnings go unsent */
        a->h = a->local;
        w = NULL;
    }
    a->n = 0;
    if (nosniff)
        add_header(a, "X-Content-Type-Options", "nosniff");
    add_header(a, "Content-Type", content_type);
    add_header(a, "Cache-Control", "no-cache, private");
    a->warnings = a->n;
    if (w)
        add_warning_headers(a, w);
}

static void api_headers_release(struct api_headers *a)
{
    for (size_t i = a->warnings; i < a->n; i++)
        free((void *)a->h[i].value);
    if (a->h != a->local)
        free(a->h);
}

/* What becomes of an answer's body. */
enum body_use {
    BODY_TAKEN,  /* freed once sent */
    BODY_COPIED, /* copied, the caller's stays */
    BODY_STATIC, /* outlives the answer */
};

/* Answers body with the headers of an API answer. */
static enum ck__res send_api(struct ck__req *req, unsigned status, const char *content_type,
                             bool nosniff, const struct ck_warnings *warnings, const char *body,
                             size_t len, enum body_use use)
{
    struct api_headers a;
    api_headers_init(&a, content_type, nosniff, warnings);
    enum ck__res ret = use == BODY_TAKEN    ? ck__respond(req, status, a.h, a.n, (char *)body, len)
                       : use == BODY_COPIED ? ck__respond_bytes(req, status, a.h, a.n, body, len)
                                            : ck__respond_static(req, status, a.h, a.n, body, len);
    api_headers_release(&a);
    return ret;
}

enum ck__res ck__send_pieces(struct ck__req *req, unsigned status, const char *content_type,
                             const struct ck__piece *pieces, size_t n, void (*release)(void *),
                             void *arg)
{
    struct api_headers a;
    api_headers_init(&a, content_type, false, NULL);
    enum ck__res ret = ck__respond_pieces(req, status, a.h, a.n, pieces, n, release, arg);
    api_headers_release(&a);
    return ret;
}

enum ck__res ck__send_bytes(struct ck__req *req, unsigned status, const char *content_type,
                            char *body, size_t len, const struct ck_warnings *warnings)
{
    char type[256];
    if (ck__media_encode(req, content_type, body, len, &body, &len, type, sizeof(type)) < 0)
        return ck__fail_no_memory(req);
    return send_api(req, status, type, false, warnings, body, len, BODY_TAKEN);
}

enum ck__res ck__send_json(struct ck__req *req, unsigned status, const char *json)
{
    return send_api(req, status, "application/json", true, NULL, json, strlen(json), BODY_COPIED);
}

/* A Status in protobuf when the client prefers it; false to answer JSON. */
static bool send_error_proto(struct ck__req *req, const struct ck_err *err, unsigned status,
                             enum ck__res *ret)
{
    /* a 406 is about the media types themselves: its Status stays JSON, as Kubernetes' fallback */
    if (status == 406 || ck__negotiate(req) != CK__ACCEPT_PROTOBUF)
        return false;
    size_t len = 0;
    char *body = ck__status_json(err, false, &len);
    char *data = NULL;
    struct ck_err unused = {0};
    if (!body || ck__json_to_proto(body, len, &data, &len, &unused) < 0) {
        free(body);
        ck_err_release(&unused);
        return false;
    }
    free(body);
    *ret = ck__send_bytes(req, status, CK_PROTOBUF_MEDIA_TYPE, data, len, NULL);
    return true;
}

enum ck__res ck__send_error(struct ck__req *req, const struct ck_err *err)
{
    struct ck_err unset = {0};
    if (err->code >= 0) { /* a failure nobody described: still a real Status */
        ck_err_internal(&unset, "the request failed for an unreported reason");
        err = &unset;
    }
    unsigned status = err->http_status > 0 && err->reason ? (unsigned)err->http_status : 500;
    enum ck__res proto_ret;
    if (send_error_proto(req, err, status, &proto_ret))
        return proto_ret;
    size_t len = 0;
    char *body = ck__status_json(err, false, &len);
    /* a Status is an API object: in the format the client asked for */
    char type[256] = "application/json";
    if (body && ck__media_encode(req, type, body, len, &body, &len, type, sizeof(type)) < 0)
        body = NULL;
    if (body)
        return send_api(req, status, type, true, NULL, body, len, BODY_TAKEN);
    /* the static body needs no allocation of ours */
    return send_api(req, 500, "application/json", true, NULL, ck__status_no_memory_line,
                    strlen(ck__status_no_memory_line), BODY_STATIC);
}

enum ck__res ck__fail(struct ck__req *req, struct ck_err *err)
{
    enum ck__res ret = ck__send_error(req, err);
    ck_err_release(err);
    return ret;
}

enum ck__res ck__fail_with(struct ck__req *req, const char *reason, const char *message)
{
    struct ck_err err = {0};
    ck_err_status(&err, reason, "%s", message);
    return ck__fail(req, &err);
}

enum ck__res ck__fail_no_memory(struct ck__req *req)
{
    struct ck_err err = {0};
    ck_err_no_memory(&err);
    return ck__fail(req, &err);
}
