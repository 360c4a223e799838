/*
 * handlers.c - the Kubernetes REST verbs over HTTP: get, list, create,
 * update, delete and deletecollection for every kind, as kubectl and the
 * Python client call them (kube-api-contract sections 1, 6, 8-11).
 *
 * Each handler parses what it needs from the request (query parameters,
 * Accept, Content-Type, body), calls the registry, and answers either the
 * served bytes, a Table (when Accept asks for as=Table), PartialObjectMetadata
 * or its List (as=PartialObjectMetadata, as=PartialObjectMetadataList), or the Status of
 * the struct ck_err the request failed with (request.c sends it, status.c
 * renders it). Any failure, running out of memory included, is answered
 * with a Status and a real HTTP code. Watches are in watch.c, the request
 * helpers every handler shares in request.c.
 *
 * Threading: handlers run on the transport's threads (or a worker); they share only the
 * immutable registry and the thread-safe store.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define TRIM_AFTER_OBJECTS 10000 /* a list this long gives its memory back (release_list) */

/*
 * A Table, like a PartialObjectMetadata, is answered with the bare media type of
 * its codec ("application/json", "application/yaml", protobuf's), no as=/g=/v=
 * parameters: kube-apiserver's transformResponseObject writes a converted object
 * through WriteObjectNegotiated without listing its kind in the Content-Type (only
 * aggregated discovery does); the kind is in the body.
 */
static const char transformed_content_type[] = "application/json";

static enum ck__res send_table(struct ck__req *req, const struct ck_kind *kind,
                               json_t *const *objects, size_t n, const char *rv,
                               const char *continue_token)
{
    enum ck_include_object include;
    if (ck_include_object_parse(ck__query(req, "includeObject"), &include) < 0)
        return ck__fail_with(req, "BadRequest", "includeObject must be Object, Metadata or None");
    json_t *table =
        ck_table_build(kind, objects, n, true, include, rv, continue_token, (long long)time(NULL));
    char *body = ck__json_dumps(table, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
    json_decref(table);
    if (!body)
        return ck__fail_no_memory(req);
    return ck__send_bytes(req, 200, transformed_content_type, body, strlen(body), NULL);
}

/*
 * Answers one served object (body, taken) as its PartialObjectMetadata. A
 * Status (what deleting some kinds answers) goes as it is, as Kubernetes
 * leaves a Status untransformed; asking for a List of one object is a 406.
 */
static enum ck__res send_partial(struct ck__req *req, const struct ck_kind *kind,
                                 enum ck__accept accept, unsigned status, char *body, size_t len,
                                 const struct ck_warnings *warnings)
{
    json_t *obj = NULL;
    int r = ck_json_loadb(body, len, 0, &obj, NULL);
    if (r == CK_ENOMEM) {
        free(body);
        return ck__fail_no_memory(req);
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        free(body);
        return ck__fail_with(req, "InternalError", "Internal error occurred: bad object");
    }
    const char *obj_kind = json_string_value(json_object_get(obj, "kind"));
    if (obj_kind && strcmp(obj_kind, "Status") == 0) {
        json_decref(obj);
        return ck__send_bytes(req, status, "application/json", body, len, warnings);
    }
    free(body);
    if (accept != CK__ACCEPT_PARTIAL) {
        json_decref(obj);
        struct ck_err err = {0};
        ck__err_partial_shape(&err, kind, accept);
        return ck__fail(req, &err);
    }
    json_t *partial = ck__partial_object(obj);
    json_decref(obj);
    size_t out_len = 0;
    char *out = ck__json_dumps(partial, JSON_COMPACT | JSON_PRESERVE_ORDER, &out_len);
    json_decref(partial);
    if (!out)
        return ck__fail_no_memory(req);
    return ck__send_bytes(req, status, transformed_content_type, out, out_len, warnings);
}

static bool is_partial(enum ck__accept accept)
{
    return accept == CK__ACCEPT_PARTIAL || accept == CK__ACCEPT_PARTIAL_LIST;
}

/*
 * Answers a served object that has no Table (a Scale, a deleted object or
 * its Status): as is, or as its PartialObjectMetadata.
 */
static enum ck__res send_plain(struct ck__req *req, const struct ck_kind *kind, unsigned status,
                               char *body, size_t len, const struct ck_warnings *warnings)
{
    enum ck__accept accept = ck__negotiate_kind(req, kind);
    if (is_partial(accept))
        return send_partial(req, kind, accept, status, body, len, warnings);
    if (accept == CK__ACCEPT_PROTOBUF)
        return ck__send_proto(req, status, body, len, warnings);
    return ck__send_bytes(req, status, "application/json", body, len, warnings);
}

/* Answers one served object: as is, as a one-row Table, or as its PartialObjectMetadata. */
static enum ck__res send_object(struct ck__req *req, const struct ck_kind *kind, unsigned status,
                                char *body, size_t len, const struct ck_warnings *warnings)
{
    enum ck__accept accept = ck__negotiate_kind(req, kind);
    if (is_partial(accept))
        return send_partial(req, kind, accept, status, body, len, warnings);
    if (accept == CK__ACCEPT_PROTOBUF)
        return ck__send_proto(req, status, body, len, warnings);
    if (accept == CK__ACCEPT_TABLE && status == 200) {
        json_t *obj = NULL;
        int r = ck_json_loadb(body, len, 0, &obj, NULL);
        free(body);
        if (r == CK_ENOMEM)
            return ck__fail_no_memory(req);
        if (!obj)
            return ck__fail_with(req, "InternalError", "Internal error occurred: bad object");
        const char *rv =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        enum ck__res ret = send_table(req, kind, &obj, 1, rv, NULL);
        json_decref(obj);
        return ret;
    }
    return ck__send_bytes(req, status, "application/json", body, len, warnings);
}

/* ---- GET ---------------------------------------------------------------- */

/* The subresource t addresses, as its kind describes it; NULL for the object itself. */
static const struct ck_subresource *target_subresource(const struct ck__target *t)
{
    return t->subresource[0] ? ck_kind_subresource(t->kind, t->subresource) : NULL;
}

static bool is_scale(const struct ck__target *t)
{
    const struct ck_subresource *sub = target_subresource(t);
    return sub && sub->part == CK_SUBRESOURCE_SCALE;
}

static enum ck__res handle_get(struct ck_apiserver *ctx, struct ck__req *req,
                               const struct ck__target *t)
{
    struct ck_err err = {0};
    const struct ck_kv *kv = NULL;
    if (ck__registry_get(ctx->registry, t->kind, t->namespace, t->name, &kv, &err) < 0)
        return ck__fail(req, &err);
    size_t len = 0;
    char *body = ck__serve_stored(t->kind, kv->value, kv->value_len, kv->mod_revision, &len);
    ck_kv_unref(kv);
    if (body && is_scale(t)) {
        char *scale = ck__scale_serve(t->kind, body, len, &len);
        free(body);
        body = scale;
    }
    if (!body)
        return ck__fail_no_memory(req);
    if (is_scale(t))
        return send_plain(req, t->kind, 200, body, len, NULL);
    return send_object(req, t->kind, 200, body, len, NULL);
}

/*
 * A JSON list {"kind":"PodList","apiVersion":"v1","metadata":{...},"items":[...]}
 * around the served bytes of each kv, kept as pieces that point into the kvs
 * (struct ck__served_parts): copied straight into the connection's send buffer
 * when the client takes compact JSON, else joined into one buffer for the
 * negotiated encoding. Copying every object twice into one body, and the
 * freshly mapped pages of that body, were a fifth of a 1,000-pod LIST's time.
 */
struct list_answer {
    const struct ck_kv *const *kvs; /* what the pieces point into */
    size_t n;
    struct ck__list_result result; /* the owner of kvs, when it is a list's (else empty) */
    char *head;                    /* up to "items":[ */
    size_t head_len;
    struct ck__served_parts *parts; /* one per kv */
    struct ck__piece *iov;          /* head, items and commas, tail */
    size_t n_iov;
};

static const char list_tail[] = "]}\n"; /* the line break ends every compact JSON answer */

static void release_list(struct ck__list_result *result);

static void list_answer_free(void *cls)
{
    struct list_answer *a = cls;
    for (size_t i = 0; a->parts && i < a->n; i++)
        free(a->parts[i].owned);
    free(a->parts);
    free(a->head);
    free(a->iov);
    release_list(&a->result);
    free(a);
}

/* Appends the pieces of item i to a->iov: its own bytes, or the stored bytes around its rv. */
static void item_pieces(struct list_answer *a, size_t i)
{
    const struct ck__served_parts *p = &a->parts[i];
    const struct ck_kv *kv = a->kvs[i];
    if (p->owned) {
        a->iov[a->n_iov++] = (struct ck__piece){p->owned, p->owned_len};
        return;
    }
    a->iov[a->n_iov++] = (struct ck__piece){kv->value, p->head};
    if (p->rv_len)
        a->iov[a->n_iov++] = (struct ck__piece){p->rv, p->rv_len};
    if (kv->value_len > p->head)
        a->iov[a->n_iov++] = (struct ck__piece){kv->value + p->head, kv->value_len - p->head};
}

/*
 * The pieces of the list of the n kvs (borrowed: they must outlive the
 * answer), the last piece ending in a line break or not; NULL when out of memory.
 */
static struct list_answer *list_answer_new(const struct ck_kind *kind, const char *rv,
                                           const char *continue_token,
                                           const struct ck_kv *const *kvs, size_t n,
                                           bool line_break)
{
    static const char head_fmt[] =
        "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%s\"%s%s%s},\"items\":[";
    struct list_answer *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->kvs = kvs;
    a->n = n;
    char api_version[CK_API_VERSION_MAX];
    ck_kind_api_version(kind, api_version, sizeof(api_version));
    const char *cont = continue_token ? continue_token : "";
    const char *cont_open = continue_token ? ",\"continue\":\"" : "";
    const char *cont_close = continue_token ? "\"" : "";
    int len =
        snprintf(NULL, 0, head_fmt, kind->list_kind, api_version, rv, cont_open, cont, cont_close);
    a->head = len >= 0 ? ck__malloc((size_t)len + 1) : NULL;
    a->parts = ck__calloc(n + 1, sizeof(*a->parts));
    a->iov = ck__calloc(4 * n + 2, sizeof(*a->iov));
    bool ok = a->head && a->parts && a->iov;
    if (ok) {
        snprintf(a->head, (size_t)len + 1, head_fmt, kind->list_kind, api_version, rv, cont_open,
                 cont, cont_close);
        a->head_len = (size_t)len;
        a->iov[a->n_iov++] = (struct ck__piece){a->head, a->head_len};
    }
    for (size_t i = 0; ok && i < n; i++) {
        ok = ck__serve_stored_parts(kind, kvs[i]->value, kvs[i]->value_len, kvs[i]->mod_revision,
                                    &a->parts[i]) == 0;
        if (ok && i > 0)
            a->iov[a->n_iov++] = (struct ck__piece){",", 1};
        if (ok)
            item_pieces(a, i);
    }
    if (!ok) {
        list_answer_free(a);
        return NULL;
    }
    a->iov[a->n_iov++] = (struct ck__piece){list_tail, line_break ? 3 : 2};
    return a;
}

/* The pieces of a joined into one string (its length in *ret_len), or NULL. */
static char *list_answer_join(const struct list_answer *a, size_t *ret_len)
{
    size_t len = 0;
    for (size_t j = 0; j < a->n_iov; j++)
        len += a->iov[j].len;
    char *body = ck__malloc(len + 1);
    for (size_t j = 0, at = 0; body && j < a->n_iov; at += a->iov[j].len, j++)
        memcpy(body + at, a->iov[j].data, a->iov[j].len);
    if (body)
        body[len] = '\0';
    *ret_len = len;
    return body;
}

char *ck__list_json(const struct ck_kind *kind, const char *rv,
                    const struct ck__list_result *result, size_t *ret_len)
{
    struct list_answer *a =
        list_answer_new(kind, rv, result->continue_token, result->kvs, result->n_kvs, false);
    char *body = a ? list_answer_join(a, ret_len) : NULL;
    if (a)
        list_answer_free(a); /* holds no result: the caller's kvs stay */
    return body;
}

/* Answers the list of result (taken) as compact JSON without a copy, or as negotiated. */
static enum ck__res send_list(struct ck__req *req, const struct ck_kind *kind, const char *rv,
                              struct ck__list_result *result)
{
    if (!ck__media_compact_json(req)) {
        size_t len = 0;
        char *body = ck__list_json(kind, rv, result, &len);
        release_list(result);
        if (!body)
            return ck__fail_no_memory(req);
        return ck__send_bytes(req, 200, "application/json", body, len, NULL);
    }
    struct list_answer *a =
        list_answer_new(kind, rv, result->continue_token, result->kvs, result->n_kvs, true);
    if (!a) {
        release_list(result);
        return ck__fail_no_memory(req);
    }
    a->result = *result; /* the answer holds the kvs until it is sent */
    memset(result, 0, sizeof(*result));
    /* copied from the kvs into the connection as it sends */
    return ck__send_pieces(req, 200, "application/json", a->iov, a->n_iov, list_answer_free, a);
}

/* The list in protobuf, each object's encoding made once (lib/apiserver/protobuf.c). */
static enum ck__res send_proto_list(struct ck__req *req, const struct ck_kind *kind, const char *rv,
                                    const struct ck__list_result *result)
{
    struct ck_err err = {0};
    char **items = ck__calloc(result->n_kvs + 1, sizeof(*items));
    size_t *lens = ck__calloc(result->n_kvs + 1, sizeof(*lens));
    size_t n = 0;
    while (items && lens && n < result->n_kvs &&
           (items[n] = ck__serve_stored(kind, result->kvs[n]->value, result->kvs[n]->value_len,
                                        result->kvs[n]->mod_revision, &lens[n])))
        n++;
    char *data = NULL;
    size_t len = 0;
    int r = items && lens && n == result->n_kvs ? ck__proto_list(kind, rv, result->continue_token,
                                                                 items, lens, n, &data, &len, &err)
                                                : ck_err_no_memory(&err);
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
    free(lens);
    if (r < 0)
        return ck__fail(req, &err);
    return ck__send_bytes(req, 200, CK_PROTOBUF_MEDIA_TYPE, data, len, NULL);
}

/*
 * Releases a list result; after one of many objects, also gives the free
 * memory of every allocator arena back to the system. glibc keeps what a thread
 * freed in that thread's arena, and the next large list usually runs on
 * another of the pool's threads, so each thread's arena grew to the largest
 * list it had served: a server that had deleted 100,000 pods twice with a
 * deletecollection held 343 MiB, 150 MiB more after each cycle.
 */
static void release_list(struct ck__list_result *result)
{
    size_t n = result->n_kvs;
    ck__list_result_release(result);
    if (n >= TRIM_AFTER_OBJECTS)
        ck__memory_release();
}

static enum ck__res handle_list(struct ck_apiserver *ctx, struct ck__req *req,
                                const struct ck__target *t)
{
    struct ck_err err = {0};
    struct ck_label_selector *labels = NULL;
    struct ck_field_selector *fields = NULL;
    if (ck__parse_selectors(req, t->kind, &labels, &fields, &err) < 0)
        return ck__fail(req, &err);
    const char *limit_text = ck__query(req, "limit");
    long long limit = limit_text ? strtoll(limit_text, NULL, 10) : 0;
    struct ck__list_options opts = {
        .namespace = t->namespace,
        .labels = labels,
        .fields = fields,
        .limit = limit > 0 ? limit : 0,
        .continue_token = ck__query(req, "continue"),
        .resource_version = ck__query(req, "resourceVersion"),
        .resource_version_match = ck__query(req, "resourceVersionMatch"),
    };
    struct ck__list_result result;
    int r = ck__registry_list(ctx->registry, t->kind, &opts, &result, &err);
    ck_label_selector_free(labels);
    ck_field_selector_free(fields);
    if (r < 0)
        return ck__fail(req, &err);

    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)result.revision);
    enum ck__res ret;
    enum ck__accept accept = ck__negotiate_kind(req, t->kind);
    if (accept == CK__ACCEPT_PARTIAL) {
        release_list(&result);
        ck__err_partial_shape(&err, t->kind, accept);
        return ck__fail(req, &err);
    }
    if (accept == CK__ACCEPT_PARTIAL_LIST) {
        json_t *list = ck__partial_list_of(&result, rv);
        release_list(&result);
        size_t len = 0;
        char *text = ck__json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
        json_decref(list);
        if (!text)
            return ck__fail_no_memory(req);
        return ck__send_bytes(req, 200, transformed_content_type, text, len, NULL);
    }
    if (accept == CK__ACCEPT_TABLE) {
        json_t **objects = ck__calloc(result.n_kvs + 1, sizeof(*objects));
        size_t n = 0;
        while (objects && n < result.n_kvs &&
               (objects[n] = ck__decode_served(t->kind, result.kvs[n])))
            n++;
        ret = objects && n == result.n_kvs
                  ? send_table(req, t->kind, objects, n, rv, result.continue_token)
                  : ck__fail_no_memory(req);
        for (size_t i = 0; i < n; i++)
            json_decref(objects[i]);
        free(objects);
        release_list(&result);
        return ret;
    }

    if (accept == CK__ACCEPT_PROTOBUF) {
        ret = send_proto_list(req, t->kind, rv, &result);
        release_list(&result);
        return ret;
    }
    return send_list(req, t->kind, rv, &result);
}

/* ---- writes ------------------------------------------------------------- */

/*
 * Decodes the request body as schema (of Kind kind_name; the kind's own when
 * NULL) for kind; NULL with *reterr (400, 415, 500) on failure.
 */
static json_t *decode_body(struct ck_apiserver *ctx, struct ck__req *req,
                           const struct ck_kind *kind, const char *schema, const char *kind_name,
                           const char *body, size_t len, struct ck_warnings *warnings,
                           struct ck_err *reterr)
{
    bool own_kind = !schema; /* the kind's own schema, not a subresource's */
    if (!schema) {
        schema = kind->schema;
        kind_name = kind->kind;
    }
    /* server.c has turned a YAML body into JSON: whatever the client sent is JSON here */
    const char *type = ck__req_header(req, "Content-Type");
    bool proto = ck__is_proto_media_type(type);
    if ((proto && !ck_proto_has_message(schema)) || (!proto && !ck__codec_for_content_type(type))) {
        ck__err_unsupported_media_for(reterr, ck_proto_has_message(schema));
        return NULL;
    }
    if (!proto && ck__media_check_json(kind_name, body ? body : "", body ? len : 0, reterr) < 0)
        return NULL;
    enum ck_field_validation fv;
    if (ck_field_validation_parse(ck__query(req, "fieldValidation"), &fv) < 0) {
        ck_err_status(reterr, "BadRequest",
                      "fieldValidation must be one of Strict, Warn or Ignore");
        return NULL;
    }
    char *json_body = NULL; /* a protobuf body, as JSON */
    if (proto) {
        struct ck_err perr = {0};
        if (ck__proto_body_to_json(schema, body, len, &json_body, &len, &perr) < 0) {
            if (perr.http_status == 400)
                ck_err_status(reterr, "BadRequest",
                              "%s in version \"%s\" cannot be handled as a %s: %s", kind_name,
                              kind->version, kind_name, ck_err_message(&perr));
            else
                ck_err_status(reterr, perr.reason ? perr.reason : "InternalError", "%s",
                              ck_err_message(&perr));
            ck_err_release(&perr);
            return NULL;
        }
        body = json_body;
        /* Kubernetes' protobuf decoding is never strict: what it does not know it skips */
        fv = CK_FIELD_VALIDATION_IGNORE;
    }
    json_t *obj = NULL;
    struct ck_err err = {0};
    int r = ck_schema_decode(ck_kind_schemas(kind, ctx->schemas), schema, body ? body : "", len, fv,
                             &obj, warnings, &err);
    free(json_body);
    if (r == CK_ENOMEM) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    if (r < 0) {
        ck_err_status(reterr, "BadRequest", "%s in version \"%s\" cannot be handled as a %s: %s",
                      kind_name, kind->version, kind_name, err.msg);
        return NULL;
    }
    const char *body_kind = json_string_value(json_object_get(obj, "kind"));
    const char *body_version = json_string_value(json_object_get(obj, "apiVersion"));
    char want_version[CK_API_VERSION_MAX];
    if (own_kind && body_version && *body_version &&
        strcmp(body_version, ck_kind_api_version(kind, want_version, sizeof(want_version))) != 0) {
        ck_err_status(reterr, "BadRequest",
                      "the API version in the data (%s) does not match the expected API version "
                      "(%s)",
                      body_version, want_version);
        json_decref(obj);
        return NULL;
    }
    if (body_kind && *body_kind && strcmp(body_kind, kind_name) != 0) {
        ck_err_status(reterr, "BadRequest",
                      "the kind in the data (%s) does not match the expected kind (%s)", body_kind,
                      kind_name);
        json_decref(obj);
        return NULL;
    }
    return obj;
}

/* ---- field managers ------------------------------------------------------- */

/* 422 as Kubernetes' ValidatePatchOptions / ValidateFieldManager word it. */
static int invalid_options(struct ck_err *reterr, const char *what, const char *field,
                           const char *detail)
{
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, field, NULL, false, "%s", detail);
    if (strcmp(what, "force") == 0)
        errs.items[0].type = CK_FIELD_FORBIDDEN;
    int r = ck__err_invalid(reterr, "meta.k8s.io", "PatchOptions", "", &errs);
    ck_field_errors_release(&errs);
    return r;
}

/*
 * Who a write is by, as Kubernetes names it: the fieldManager parameter, else
 * the User-Agent up to its first '/' (kubectl/v1.32.0 ... is "kubectl").
 * buf holds the name. A fieldManager longer than 128 bytes or with
 * unprintable characters is a 422.
 */
static int field_manager(struct ck__req *req, const char *options_kind,
                         struct ck_field_manager *ret, char *buf, size_t size,
                         struct ck_err *reterr)
{
    const char *manager = ck__query(req, "fieldManager");
    if (manager && *manager) {
        size_t n = strlen(manager);
        bool printable = true;
        for (size_t i = 0; i < n; i++)
            printable = printable && (unsigned char)manager[i] >= 0x20 && manager[i] != 0x7f;
        if (n > 128 || !printable) {
            struct ck_field_errors errs = {0};
            if (n > 128)
                ck_field_errors_add(&errs, CK_FIELD_TOO_LONG, "fieldManager", NULL, false,
                                    "may not be more than 128 bytes");
            else
                ck_field_errors_add(&errs, CK_FIELD_INVALID, "fieldManager", manager, true,
                                    "invalid characters");
            int r = ck__err_invalid(reterr, "meta.k8s.io", options_kind, "", &errs);
            ck_field_errors_release(&errs);
            return r;
        }
        snprintf(buf, size, "%s", manager);
    } else {
        const char *agent = ck__req_header(req, "User-Agent");
        snprintf(buf, size, "%.*s", agent ? (int)strcspn(agent, "/") : 0, agent ? agent : "");
    }
    memset(ret, 0, sizeof(*ret));
    ret->manager = buf;
    ret->now = (long long)time(NULL);
    return 0;
}

static bool dry_run(struct ck__req *req)
{
    const char *v = ck__query(req, "dryRun");
    return v && strcmp(v, "All") == 0;
}

static enum ck__res handle_create(struct ck_apiserver *ctx, struct ck__req *req,
                                  const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err err = {0};
    struct ck_warnings warnings = {0};
    if (t->kind->namespaced && !t->namespace[0])
        return ck__fail_with(req, "NotFound", "the server could not find the requested resource");
    json_t *obj = decode_body(ctx, req, t->kind, NULL, NULL, body, len, &warnings, &err);
    if (!obj) {
        ck_warnings_release(&warnings);
        return ck__fail(req, &err);
    }
    char *out = NULL;
    size_t out_len = 0;
    struct ck_field_manager who;
    char manager[160];
    int r = field_manager(req, "CreateOptions", &who, manager, sizeof(manager), &err);
    struct ck_warnings *prev = ck__admission_warnings_to(&warnings);
    if (r == 0)
        r = ck__registry_create_by(ctx->registry, t->kind, t->namespace, obj, &who, t->user,
                                   dry_run(req), &out, &out_len, &err);
    ck__admission_warnings_to(prev);
    json_decref(obj);
    enum ck__res ret =
        r < 0 ? ck__fail(req, &err) : send_object(req, t->kind, 201, out, out_len, &warnings);
    ck_warnings_release(&warnings);
    return ret;
}

/* A PUT's mutation: the new state is the body, whatever the current one is. */
static json_t *replace_with_body(const json_t *current, void *arg, struct ck_err *reterr)
{
    (void)current;
    json_t *copy = ck__json_copy(arg);
    if (!copy)
        ck_err_no_memory(reterr);
    return copy;
}

/*
 * Answers a successful write: a Scale for the scale subresource, else the
 * object (or its Table).
 */
static enum ck__res send_written(struct ck__req *req, const struct ck__target *t, char *out,
                                 size_t len, const struct ck_warnings *warnings)
{
    if (!is_scale(t))
        return send_object(req, t->kind, 200, out, len, warnings);
    char *scale = ck__scale_serve(t->kind, out, len, &len);
    free(out);
    if (!scale)
        return ck__fail_no_memory(req);
    return send_plain(req, t->kind, 200, scale, len, warnings);
}

/*
 * The registry's name for a write through t: the subresource when it writes
 * a part of the object itself ("status", "finalize"), else NULL (the object,
 * or a scale, which writes the object through its Scale view).
 */
static const char *write_subresource(const struct ck__target *t)
{
    const struct ck_subresource *sub = target_subresource(t);
    if (sub && (sub->part == CK_SUBRESOURCE_STATUS || sub->part == CK_SUBRESOURCE_CUSTOM))
        return t->subresource;
    return NULL;
}

static enum ck__res handle_update(struct ck_apiserver *ctx, struct ck__req *req,
                                  const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err err = {0};
    struct ck_warnings warnings = {0};
    json_t *obj = is_scale(t)
                      ? decode_body(ctx, req, t->kind, target_subresource(t)->schema,
                                    target_subresource(t)->kind, body, len, &warnings, &err)
                      : decode_body(ctx, req, t->kind, NULL, NULL, body, len, &warnings, &err);
    if (!obj) {
        ck_warnings_release(&warnings);
        return ck__fail(req, &err);
    }
    const char *body_name =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (body_name && strcmp(body_name, t->name) != 0) {
        json_decref(obj);
        ck_warnings_release(&warnings);
        return ck__fail_with(req, "BadRequest",
                             "the name of the object does not match the name on the URL");
    }
    char *out = NULL;
    size_t out_len = 0;
    struct ck_field_manager who;
    char manager[160];
    int r = field_manager(req, "UpdateOptions", &who, manager, sizeof(manager), &err);
    who.subresource = t->subresource[0] ? t->subresource : NULL;
    struct ck__scale_put put = {t->kind, obj};
    struct ck_warnings *prev = ck__admission_warnings_to(&warnings);
    if (r == 0)
        r = ck__registry_update_by(
            ctx->registry, t->kind, t->namespace, t->name, write_subresource(t), &who, t->user,
            is_scale(t) ? ck__scale_put_mutate : replace_with_body,
            is_scale(t) ? (void *)&put : (void *)obj, dry_run(req), &out, &out_len, &err);
    ck__admission_warnings_to(prev);
    json_decref(obj);
    enum ck__res ret = r < 0 ? ck__fail(req, &err) : send_written(req, t, out, out_len, &warnings);
    ck_warnings_release(&warnings);
    return ret;
}

/* fieldManager (required for apply) and force (apply only) of a PATCH. */
static int patch_options(struct ck__req *req, struct ck__patch *patch, char *buf, size_t size,
                         struct ck_err *reterr)
{
    const char *force = ck__query(req, "force");
    bool apply = patch->type == CK__PATCH_APPLY;
    if (force && !apply)
        return invalid_options(reterr, "force", "force",
                               "may not be specified for non-apply patch");
    const char *manager = ck__query(req, "fieldManager");
    if (apply && (!manager || !*manager))
        return invalid_options(reterr, "fieldManager", "fieldManager",
                               "is required for apply patch");
    patch->force = ck__query_bool(req, "force");
    return field_manager(req, "PatchOptions", &patch->who, buf, size, reterr);
}

/* An apply of an object that does not exist creates it. */
static int apply_create(struct ck_apiserver *ctx, const struct ck__target *t,
                        struct ck__patch *patch, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck_err *reterr)
{
    json_t *obj = ck__apply_patch(patch, NULL, reterr);
    if (!obj)
        return reterr->code < 0 ? reterr->code : ck_err_no_memory(reterr);
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    int r = 0;
    if (name && strcmp(name, t->name) != 0)
        r = ck_err_status(reterr, "BadRequest",
                          "the name of the object (%s) does not match the name on the URL (%s)",
                          name, t->name);
    else if (ns && *ns && strcmp(ns, t->namespace) != 0)
        r = ck_err_status(reterr, "BadRequest",
                          "the namespace of the provided object does not "
                          "match the namespace sent on the request");
    else if (!json_is_object(meta) || json_object_set_new(meta, "name", json_string(t->name)) < 0)
        r = ck_err_no_memory(reterr);
    if (r == 0)
        r = ck__registry_create_by(ctx->registry, t->kind, t->namespace, obj, NULL, t->user,
                                   dry_run, ret_body, ret_len, reterr);
    json_decref(obj);
    return r;
}

static enum ck__res handle_patch(struct ck_apiserver *ctx, struct ck__req *req,
                                 const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err err = {0};
    struct ck__patch patch;
    const char *type = ck__req_header(req, "Content-Type");
    if (ck__patch_init(&patch, ck_kind_schemas(t->kind, ctx->schemas), t->kind, type, body, len,
                       &err) < 0)
        return ck__fail(req, &err);
    if (ck_field_validation_parse(ck__query(req, "fieldValidation"), &patch.validation) < 0) {
        ck__patch_release(&patch);
        return ck__fail_with(req, "BadRequest",
                             "fieldValidation must be one of Strict, Warn or Ignore");
    }
    patch.scale = is_scale(t);
    const struct ck_subresource *sub = target_subresource(t);
    patch.status_only = sub && sub->part == CK_SUBRESOURCE_STATUS;
    char *out = NULL;
    size_t out_len = 0;
    char manager[160];
    int r = patch_options(req, &patch, manager, sizeof(manager), &err);
    patch.who.subresource = t->subresource[0] ? t->subresource : NULL;
    /* admission warns into the attempt's list: a retried attempt starts it afresh */
    struct ck_warnings *prev = ck__admission_warnings_to(&patch.warnings);
    if (r == 0)
        r = ck__registry_update_by(ctx->registry, t->kind, t->namespace, t->name,
                                   write_subresource(t),
                                   patch.type == CK__PATCH_APPLY ? NULL : &patch.who, t->user,
                                   ck__patch_mutate, &patch, dry_run(req), &out, &out_len, &err);
    bool created = false;
    if (r == CK_ENOENT && patch.type == CK__PATCH_APPLY && !t->subresource[0]) {
        ck_err_release(&err);
        r = apply_create(ctx, t, &patch, dry_run(req), &out, &out_len, &err);
        created = r == 0;
    }
    ck__admission_warnings_to(prev);
    enum ck__res ret = r < 0     ? ck__fail(req, &err)
                       : created ? send_object(req, t->kind, 201, out, out_len, &patch.warnings)
                                 : send_written(req, t, out, out_len, &patch.warnings);
    ck__patch_release(&patch);
    return ret;
}

/* 422 as Kubernetes' ValidateDeleteOptions words it. */
static int invalid_delete_options(struct ck_err *reterr, const char *field, const char *what,
                                  const char *value, const char *why)
{
    int code = ck_err_status(reterr, "Invalid",
                             "DeleteOptions.meta.k8s.io \"\" is invalid: %s: %s: \"%s\": %s", field,
                             what, value, why);
    ck_err_set_details(reterr, "meta.k8s.io", "DeleteOptions", NULL);
    return code;
}

/* Fills opts->propagation from a policy name (Background, Foreground, Orphan). */
static int parse_propagation(const char *policy, struct ck__delete_options *opts,
                             struct ck_err *reterr)
{
    static const char *const names[] = {"Background", "Foreground", "Orphan"};
    static const enum ck__propagation values[] = {
        CK__PROPAGATION_BACKGROUND, CK__PROPAGATION_FOREGROUND, CK__PROPAGATION_ORPHAN};
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(policy, names[i]) == 0) {
            opts->propagation = values[i];
            return 0;
        }
    }
    return invalid_delete_options(reterr, "propagationPolicy", "Unsupported value", policy,
                                  "supported values: \"Foreground\", \"Background\", \"Orphan\"");
}

/*
 * DeleteOptions from the body, then the query (which wins where both say):
 * propagationPolicy or the deprecated orphanDependents, gracePeriodSeconds,
 * preconditions and dryRun. The strings in opts point into *ret_doc.
 */
static int parse_delete_options(struct ck__req *req, const char *body, size_t len, json_t **ret_doc,
                                struct ck__delete_options *opts, struct ck_err *reterr)
{
    memset(opts, 0, sizeof(*opts));
    *ret_doc = NULL;
    const char *policy = NULL;
    json_t *orphan = NULL;
    if (body && len) {
        json_error_t jerr;
        json_t *doc = NULL;
        int r = ck_json_loadb(body, len, 0, &doc, &jerr);
        if (!json_is_object(doc)) {
            json_decref(doc);
            if (r == CK_ENOMEM)
                return ck_err_no_memory(reterr);
            return ck_err_status(reterr, "BadRequest", "invalid DeleteOptions: %s", jerr.text);
        }
        *ret_doc = doc;
        json_t *pre = json_object_get(doc, "preconditions");
        opts->precondition_uid = json_string_value(json_object_get(pre, "uid"));
        opts->precondition_rv = json_string_value(json_object_get(pre, "resourceVersion"));
        json_t *dry = json_object_get(doc, "dryRun");
        const char *first = json_string_value(json_array_get(dry, 0));
        if (json_array_size(dry) > 0 && (!first || strcmp(first, "All") != 0))
            return invalid_delete_options(reterr, "dryRun", "Unsupported value", first ? first : "",
                                          "supported values: \"All\"");
        opts->dry_run = first != NULL;
        policy = json_string_value(json_object_get(doc, "propagationPolicy"));
        orphan = json_object_get(doc, "orphanDependents");
        json_t *grace = json_object_get(doc, "gracePeriodSeconds");
        if (json_is_integer(grace)) {
            opts->has_grace = true;
            opts->grace_seconds = json_integer_value(grace);
        }
    }
    opts->dry_run = opts->dry_run || dry_run(req);
    const char *q = ck__query(req, "propagationPolicy");
    if (q)
        policy = q;
    q = ck__query(req, "gracePeriodSeconds");
    if (q) {
        char *end = NULL;
        opts->grace_seconds = strtoll(q, &end, 10);
        if (!*q || *end) {
            return ck_err_status(reterr, "BadRequest", "invalid gracePeriodSeconds: %s", q);
        }
        opts->has_grace = true;
    }
    bool orphan_set = json_is_boolean(orphan) || ck__query(req, "orphanDependents");
    bool orphan_true = json_is_true(orphan) || ck__query_bool(req, "orphanDependents");
    if (policy && orphan_set)
        return invalid_delete_options(
            reterr, "propagationPolicy", "Invalid value", policy,
            "orphanDependents and deletionPropagation cannot be both set");
    if (policy)
        return parse_propagation(policy, opts, reterr);
    if (orphan_set)
        opts->propagation = orphan_true ? CK__PROPAGATION_ORPHAN : CK__PROPAGATION_BACKGROUND;
    return 0;
}

/* parse_delete_options(), releasing the body's document on failure. */
static int delete_options(struct ck__req *req, const char *body, size_t len, json_t **ret_doc,
                          struct ck__delete_options *opts, struct ck_err *reterr)
{
    /* client-go's typed clients send DeleteOptions in protobuf */
    char *json_body = NULL;
    *ret_doc = NULL;
    if (body && len && ck__is_proto_media_type(ck__req_header(req, "Content-Type"))) {
        int r = ck__proto_body_to_json("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", body,
                                       len, &json_body, &len, reterr);
        if (r < 0)
            return r;
        body = json_body;
    }
    int r = parse_delete_options(req, body, len, ret_doc, opts, reterr);
    free(json_body);
    if (r < 0) {
        json_decref(*ret_doc);
        *ret_doc = NULL;
    }
    return r;
}

static enum ck__res handle_delete(struct ck_apiserver *ctx, struct ck__req *req,
                                  const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err err = {0};
    struct ck__delete_options opts;
    json_t *doc = NULL;
    if (delete_options(req, body, len, &doc, &opts, &err) < 0)
        return ck__fail(req, &err);
    opts.user = t->user;
    char *out = NULL;
    size_t out_len = 0;
    int r = ck__registry_delete(ctx->registry, t->kind, t->namespace, t->name, &opts, &out,
                                &out_len, &err);
    json_decref(doc);
    if (r < 0)
        return ck__fail(req, &err);
    return send_plain(req, t->kind, 200, out, out_len, NULL);
}

/*
 * A create on a subresource of an existing object, as pods/binding is (the
 * scheduler sets spec.nodeName once): the body, of the subresource's kind,
 * goes to the kind's update hook; 201 with a Success Status.
 */
static enum ck__res handle_binding(struct ck_apiserver *ctx, struct ck__req *req,
                                   const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err err = {0};
    const struct ck_subresource *sub = target_subresource(t);
    const char *want_kind = sub->kind ? sub->kind : t->kind->kind;
    json_t *binding = NULL;
    if (ck_json_loadb(body, len, 0, &binding, NULL) == CK_ENOMEM)
        return ck__fail_no_memory(req);
    if (!json_is_object(binding)) {
        json_decref(binding);
        char msg[160];
        snprintf(msg, sizeof(msg), "%s in version \"%s\" cannot be handled", want_kind,
                 sub->version ? sub->version : t->kind->version);
        return ck__fail_with(req, "BadRequest", msg);
    }
    const char *kind = json_string_value(json_object_get(binding, "kind"));
    const char *name =
        json_string_value(json_object_get(json_object_get(binding, "metadata"), "name"));
    if ((kind && strcmp(kind, want_kind) != 0) || (name && strcmp(name, t->name) != 0)) {
        json_decref(binding);
        return ck__fail_with(req, "BadRequest",
                             "the name of the object does not match the name on the URL");
    }
    char *out = NULL;
    size_t out_len = 0;
    struct ck_field_manager who;
    char manager[160];
    int r = field_manager(req, "CreateOptions", &who, manager, sizeof(manager), &err);
    who.subresource = t->subresource;
    if (r == 0)
        r = ck__registry_update_by(ctx->registry, t->kind, t->namespace, t->name, t->subresource,
                                   &who, t->user, replace_with_body, binding, dry_run(req), &out,
                                   &out_len, &err);
    json_decref(binding);
    free(out);
    if (r < 0)
        return ck__fail(req, &err);
    struct ck_err created = {.http_status = 201}; /* a Success Status */
    size_t ok_len = 0;
    char *ok = ck__status_json(&created, true, &ok_len);
    if (!ok)
        return ck__fail_no_memory(req);
    return ck__send_bytes(req, 201, "application/json", ok, ok_len, NULL);
}

/*
 * A create that deletes the object, as pods/eviction is (EvictionREST.Create):
 * the body, of the subresource's kind, carries the DeleteOptions; the pod's
 * disruption budget is honoured first (disruption_budget.c); 201 with a
 * Success Status, as for a binding.
 */
static enum ck__res handle_eviction(struct ck_apiserver *ctx, struct ck__req *req,
                                    const struct ck__target *t, const char *body, size_t len)
{
    const struct ck_subresource *sub = target_subresource(t);
    json_t *eviction = NULL;
    if (ck_json_loadb(body, len, 0, &eviction, NULL) == CK_ENOMEM)
        return ck__fail_no_memory(req);
    if (!json_is_object(eviction)) {
        json_decref(eviction);
        char msg[160];
        snprintf(msg, sizeof(msg), "%s in version \"%s\" cannot be handled",
                 sub->kind ? sub->kind : t->kind->kind,
                 sub->version ? sub->version : t->kind->version);
        return ck__fail_with(req, "BadRequest", msg);
    }
    const char *name =
        json_string_value(json_object_get(json_object_get(eviction, "metadata"), "name"));
    if (name && strcmp(name, t->name) != 0) {
        json_decref(eviction);
        return ck__fail_with(req, "BadRequest",
                             "name in URL does not match name in Eviction object");
    }
    char *options = NULL;
    const json_t *given = json_object_get(eviction, "deleteOptions");
    if (json_is_object(given) && !(options = json_dumps(given, JSON_COMPACT))) {
        json_decref(eviction);
        return ck__fail_no_memory(req);
    }
    json_decref(eviction);
    struct ck_err err = {0};
    struct ck__delete_options opts;
    json_t *doc = NULL;
    int r = delete_options(req, options, options ? strlen(options) : 0, &doc, &opts, &err);
    opts.user = t->user;
    char *out = NULL;
    size_t out_len = 0;
    struct ck__eviction_decision budget;
    /*
     * disruption_budget.c: the pod's budget is checked and spent first. A budget written
     * meanwhile (its controller's status) is read again, as Kubernetes' EvictionsRetry does.
     */
    for (int attempt = 0; r == 0; attempt++) {
        r = ck__eviction_check_budgets(ctx->registry, t->namespace, t->name, opts.dry_run, &budget,
                                       &err);
        if (r == 0 || err.http_status != 409 || attempt == 19)
            break;
        ck_err_release(&err);
        r = 0;
        usleep(10 * 1000);
    }
    bool preconditioned = r == 0 && budget.precondition && !opts.precondition_rv;
    if (preconditioned)
        opts.precondition_rv = budget.pod_resource_version;
    if (r == 0)
        r = ck__registry_delete(ctx->registry, t->kind, t->namespace, t->name, &opts, &out,
                                &out_len, &err);
    if (r < 0 && preconditioned && err.http_status == 409)
        r = ck__eviction_refused_by_conflict(&err, budget.budget);
    json_decref(doc);
    free(options);
    free(out);
    if (r < 0)
        return ck__fail(req, &err);
    struct ck_err created = {.http_status = 201}; /* a Success Status */
    size_t ok_len = 0;
    char *ok = ck__status_json(&created, true, &ok_len);
    if (!ok)
        return ck__fail_no_memory(req);
    return ck__send_bytes(req, 201, "application/json", ok, ok_len, NULL);
}

/* DELETE on a collection: list with the selectors, delete each, answer the list. */
static enum ck__res handle_delete_collection(struct ck_apiserver *ctx, struct ck__req *req,
                                             const struct ck__target *t, const char *body,
                                             size_t len)
{
    struct ck_err err = {0};
    struct ck__delete_options opts;
    json_t *doc = NULL;
    if (delete_options(req, body, len, &doc, &opts, &err) < 0)
        return ck__fail(req, &err);
    opts.user = t->user;
    opts.precondition_uid = opts.precondition_rv = NULL;
    struct ck_label_selector *labels = NULL;
    struct ck_field_selector *fields = NULL;
    if (ck__parse_selectors(req, t->kind, &labels, &fields, &err) < 0) {
        json_decref(doc);
        return ck__fail(req, &err);
    }
    struct ck__list_options lopts = {.namespace = t->namespace, .labels = labels, .fields = fields};
    struct ck__list_result result;
    int r = ck__registry_list(ctx->registry, t->kind, &lopts, &result, &err);
    ck_label_selector_free(labels);
    ck_field_selector_free(fields);
    if (r < 0) {
        json_decref(doc);
        return ck__fail(req, &err);
    }
    /*
     * The deleted objects as they were, pointers into result, rendered once
     * at the end: holding every one as a decoded tree until then cost about
     * ten times its text (a 2,000-pod delete peaked at 30 MB of heap).
     */
    const struct ck_kv **deleted = ck__calloc(result.n_kvs + 1, sizeof(*deleted));
    size_t n_deleted = 0;
    if (!deleted)
        ck_err_no_memory(&err);
    for (size_t i = 0; deleted && i < result.n_kvs; i++) {
        json_t *obj = ck__decode_stored(result.kvs[i]);
        const json_t *meta = json_object_get(obj, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        char *out = NULL;
        size_t out_len = 0;
        if (!obj)
            ck_err_no_memory(&err);
        else if (name && ck__registry_delete(ctx->registry, t->kind, ns ? ns : "", name, &opts,
                                             &out, &out_len, &err) == 0)
            deleted[n_deleted++] = result.kvs[i];
        else if (err.http_status == 404)
            ck_err_release(&err); /* already gone: not this request's failure */
        free(out);
        json_decref(obj);
        if (err.code < 0)
            break; /* any other failure ends the collection delete */
    }
    json_decref(doc);
    enum ck__accept accept = ck__negotiate_kind(req, t->kind);
    if (err.code == 0 && accept == CK__ACCEPT_PARTIAL)
        ck__err_partial_shape(&err, t->kind, accept);
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)result.revision);
    char *text = NULL;
    size_t text_len = 0;
    if (err.code < 0) {
        ;
    } else if (accept == CK__ACCEPT_PARTIAL_LIST) {
        json_t *items = json_array();
        for (size_t i = 0; items && i < n_deleted; i++)
            if (json_array_append_new(items, ck__decode_stored(deleted[i])) < 0)
                items = (json_decref(items), NULL);
        json_t *list = items ? ck__partial_list(items, rv, NULL) : NULL;
        json_decref(items);
        text = list ? ck__json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER, &text_len) : NULL;
        json_decref(list);
    } else {
        struct list_answer *a = list_answer_new(t->kind, rv, NULL, deleted, n_deleted, false);
        text = a ? list_answer_join(a, &text_len) : NULL;
        if (a)
            list_answer_free(a);
    }
    free(deleted);
    release_list(&result);
    if (err.code < 0)
        return ck__fail(req, &err);
    if (!text)
        return ck__fail_no_memory(req);
    if (accept == CK__ACCEPT_PROTOBUF)
        return ck__send_proto(req, 200, text, text_len, NULL);
    return ck__send_bytes(req, 200, "application/json", text, text_len, NULL);
}

/* ---- dispatch ----------------------------------------------------------- */

static enum ck__res method_not_allowed(struct ck__req *req)
{
    return ck__fail_with(req, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
}

/* The discovery verb of an HTTP method on one object: get, update, patch, create. */
static const char *object_verb(const char *method)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return "get";
    if (strcmp(method, "PUT") == 0)
        return "update";
    if (strcmp(method, "PATCH") == 0)
        return "patch";
    if (strcmp(method, "POST") == 0)
        return "create";
    return "";
}

/*
 * The subresources' own verbs, as the kind's table of them lists them
 * (status and scale: get, update, patch; finalize: update; binding and
 * eviction: create; log: not served). No subresource watches. Returns false to let the
 * object's handlers serve the request.
 */
static bool is_pod_connect(const struct ck__target *t, const struct ck_subresource *sub,
                           const char *verb)
{
    return sub && t->kind == ck_kind_with_role(CK_KIND_ROLE_POD) &&
           (strcmp(sub->name, "exec") == 0 || strcmp(sub->name, "attach") == 0 ||
            strcmp(sub->name, "portforward") == 0) &&
           (strcmp(verb, "get") == 0 || strcmp(verb, "create") == 0);
}

/*
 * pods/exec, attach and portforward: the admission chain is asked first (a CONNECT, as
 * Kubernetes' connect handler asks it before the pod is looked up), then the stream.
 */
int ck__admit_connect(struct ck_apiserver *ctx, const struct ck__target *t, struct ck_err *reterr)
{
    struct ck__admission_attrs attrs = {.op = CK__ADMISSION_CONNECT,
                                        .kind = t->kind,
                                        .subresource = t->subresource,
                                        .namespace = t->namespace,
                                        .name = t->name,
                                        .user = t->user};
    int r = ck__admission_admit(ctx->registry, &attrs, reterr);
    return r < 0 ? r : ck__admission_validate(ctx->registry, &attrs, reterr);
}

static enum ck__res serve_pod_connect(struct ck_apiserver *ctx, struct ck__req *req,
                                      const struct ck__target *t)
{
    struct ck_err err = {0};
    if (ck__admit_connect(ctx, t, &err) < 0)
        return ck__fail(req, &err);
    if (strcmp(t->subresource, "exec") == 0)
        return ck__serve_pod_exec(ctx, req, t); /* exec.c */
    if (strcmp(t->subresource, "attach") == 0)
        return ck__serve_pod_attach(ctx, req, t);  /* exec.c */
    return ck__serve_pod_portforward(ctx, req, t); /* portforward.c */
}

static bool serve_subresource(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                              const struct ck__target *t, const char *body, size_t len,
                              enum ck__res *ret)
{
    const struct ck_subresource *sub = target_subresource(t);
    const char *verb = object_verb(method);
    if (sub && strcmp(sub->name, "log") == 0 && t->kind == ck_kind_with_role(CK_KIND_ROLE_POD) &&
        strcmp(verb, "get") == 0)
        *ret = ck__serve_pod_log(ctx, req, t); /* podlog.c */
    else if (is_pod_connect(t, sub, verb))
        *ret = serve_pod_connect(ctx, req, t);
    else if (sub && sub->part == CK_SUBRESOURCE_UNSERVED)
        *ret = ck__fail_with(req, "ServiceUnavailable", sub->message ? sub->message : "");
    else if (!sub || !ck_subresource_allows(sub, verb))
        *ret = method_not_allowed(req);
    else if (strcmp(verb, "get") == 0 && ck__query_bool(req, "watch"))
        *ret = method_not_allowed(req);
    else if (strcmp(verb, "create") == 0 && sub->part == CK_SUBRESOURCE_DELETE)
        *ret = handle_eviction(ctx, req, t, body, len);
    else if (strcmp(verb, "create") == 0)
        *ret = handle_binding(ctx, req, t, body, len);
    else
        return false;
    return true;
}

/* ---- dryRun ------------------------------------------------------------- */

struct dry_run_values {
    struct ck__buf text; /* []string{"a", "b"}, as Go prints the list */
    bool unsupported;
};

static bool collect_dry_run(void *cls, const char *key, const char *value)
{
    struct dry_run_values *v = cls;
    if (strcmp(key, "dryRun") != 0)
        return true;
    if (!value || strcmp(value, "All") != 0)
        v->unsupported = true;
    ck__buf_printf(&v->text, "%s\"", v->text.len > strlen("[]string{") ? ", " : "");
    for (const char *c = value ? value : ""; *c; c++)
        ck__buf_printf(&v->text, "%s%c", *c == '"' || *c == '\\' ? "\\" : "", *c);
    ck__buf_printf(&v->text, "\"");
    return true;
}

/*
 * Every dryRun value of a write must be "All" (apimachinery's ValidateDryRun):
 * 422 naming the verb's options kind, before anything is read or stored.
 */
static int check_dry_run(struct ck__req *req, const char *method, struct ck_err *reterr)
{
    const char *options = strcmp(method, "POST") == 0     ? "CreateOptions"
                          : strcmp(method, "PUT") == 0    ? "UpdateOptions"
                          : strcmp(method, "PATCH") == 0  ? "PatchOptions"
                          : strcmp(method, "DELETE") == 0 ? "DeleteOptions"
                                                          : NULL;
    if (!options || !ck__query(req, "dryRun"))
        return 0;
    struct dry_run_values v = {0};
    ck__buf_printf(&v.text, "[]string{");
    ck__req_queries(req, collect_dry_run, &v);
    ck__buf_printf(&v.text, "}");
    int r = 0;
    if (v.unsupported) {
        struct ck_field_errors errs = {0};
        ck_field_errors_add(&errs, CK_FIELD_NOT_SUPPORTED, "dryRun",
                            v.text.p && !v.text.err ? v.text.p : "", false,
                            "supported values: \"All\"");
        r = ck__err_invalid(reterr, "meta.k8s.io", options, "", &errs);
        ck_field_errors_release(&errs);
    }
    ck__buf_release(&v.text);
    return r;
}

enum ck__res ck__serve_resource(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                                const struct ck__target *t, const char *body, size_t len)
{
    struct ck_err dry_run_err = {0};
    if (check_dry_run(req, method, &dry_run_err) < 0)
        return ck__fail(req, &dry_run_err);
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool watch = get && !t->name[0] && ck__query_bool(req, "watch");
    enum ck__accept accept = ck__negotiate_kind(req, t->kind);
    if (accept == CK__ACCEPT_NONE ||
        (watch && accept != CK__ACCEPT_PROTOBUF && !ck__media_can_stream(req))) {
        char types[256];
        ck__media_types_for(watch, ck_proto_has_message(t->kind->schema), types, sizeof(types));
        char msg[512];
        snprintf(
            msg, sizeof(msg),
            "only the following media types are accepted: %s, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            types);
        return ck__fail_with(req, "NotAcceptable", msg);
    }
    if (t->subresource[0]) {
        enum ck__res ret;
        if (serve_subresource(ctx, req, method, t, body, len, &ret))
            return ret;
    }
    if (get && t->name[0])
        return handle_get(ctx, req, t);
    if (get && ck__query_bool(req, "watch"))
        return ck__serve_watch(ctx, req, t);
    if (get)
        return handle_list(ctx, req, t);
    if (strcmp(method, "POST") == 0 && !t->name[0] && t->kind->refuse_create)
        return ck__fail_with(req, "MethodNotAllowed", t->kind->refuse_create);
    if (strcmp(method, "POST") == 0 && !t->name[0])
        return handle_create(ctx, req, t, body, len);
    if (strcmp(method, "PUT") == 0 && t->name[0])
        return handle_update(ctx, req, t, body, len);
    if (strcmp(method, "PATCH") == 0 && t->name[0])
        return handle_patch(ctx, req, t, body, len);
    if (strcmp(method, "DELETE") == 0 && t->name[0] && !t->subresource[0])
        return handle_delete(ctx, req, t, body, len);
    if (strcmp(method, "DELETE") == 0 && !t->name[0])
        return handle_delete_collection(ctx, req, t, body, len);
    char msg[160];
    snprintf(msg, sizeof(msg), "%s is not supported on resources of kind \"%s\"", method,
             t->kind->resource);
    return ck__fail_with(req, "MethodNotAllowed", msg);
}
