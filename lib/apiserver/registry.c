/*
 * registry.c - Kubernetes objects in the revisioned store: create, get,
 * list, update and delete with Kubernetes' semantics.
 *
 * Layout: an object lives at /registry/<resource>/<namespace>/<name>
 * (cluster-scoped: /registry/<resource>/<name>), as in Kubernetes' etcd3
 * storage. The stored value is the object's JSON without
 * metadata.resourceVersion, serialised with apiVersion, kind and metadata
 * first; the resourceVersion is the key's mod revision, spliced in right
 * after `"metadata":{` when the object is served. So GET, LIST and watch
 * send the stored bytes without parsing them, and every reader of one
 * revision gets the same bytes.
 *
 * Writes are optimistic: an update reads the key, computes the new object
 * and commits only if the key's mod revision is unchanged; a client that
 * sent a resourceVersion gets 409 Conflict when it is stale, a client that
 * did not gets a transparent retry, as Kubernetes' GuaranteedUpdate does.
 *
 * Threading: a registry is immutable after creation and the store is
 * thread-safe, so every function may run on any MHD thread at once.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define UPDATE_RETRIES     16
#define GENERATE_RETRIES   8
#define LIST_CHUNK_DEFAULT 500

/* ---- errors ------------------------------------------------------------- */

void ck__status_set(struct ck__status *st, unsigned code, const char *reason, const char *fmt, ...)
{
    if (!st)
        return;
    ck__status_release(st);
    st->code = code;
    st->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&st->message, fmt, ap) < 0)
        st->message = NULL;
    va_end(ap);
}

void ck__status_release(struct ck__status *st)
{
    free(st->message);
    json_decref(st->causes);
    memset(st, 0, sizeof(*st));
}

/* Fills the details Kubernetes attaches about the object concerned. */
static void status_details(struct ck__status *st, const struct ck_kind *kind, const char *name)
{
    snprintf(st->name, sizeof(st->name), "%s", name ? name : "");
    st->group = kind->group;
    st->kind = kind->resource;
}

static void not_found(struct ck__status *st, const struct ck_kind *kind, const char *name)
{
    char qr[128];
    ck__status_set(st, 404, "NotFound", "%s \"%s\" not found",
                   ck_kind_qualified_resource(kind, qr, sizeof(qr)), name);
    status_details(st, kind, name);
}

static void conflict(struct ck__status *st, const struct ck_kind *kind, const char *name,
                     const char *why)
{
    char qr[128];
    ck__status_set(st, 409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": %s",
                   ck_kind_qualified_resource(kind, qr, sizeof(qr)), name, why);
    status_details(st, kind, name);
}

static void store_failed(struct ck__status *st, const struct ck_err *err)
{
    if (err->code == CK_ECOMPACTED)
        ck__status_set(st, 410, "Expired", "%s", err->msg);
    else
        ck__status_set(st, 500, "InternalError", "Internal error occurred: %s", err->msg);
}

void ck__status_invalid(struct ck__status *st, const struct ck_kind *kind, const char *name,
                        const struct ck_field_errors *errs)
{
    size_t len = 0;
    char *joined = NULL;
    FILE *f = open_memstream(&joined, &len);
    json_t *causes = json_array();
    for (size_t i = 0; f && i < errs->len; i++) {
        char *s = ck_field_error_string(&errs->items[i]);
        fprintf(f, "%s%s", i ? ", " : "", s ? s : "");
        free(s);
        const struct ck_field_error *e = &errs->items[i];
        char *msg = NULL;
        if (asprintf(&msg, "%s%s%s%s%s", e->value ? "Invalid value: " : "",
                     e->value ? e->value : "", e->value && e->detail ? ": " : "",
                     e->detail ? e->detail : "",
                     !e->value && !e->detail ? "Required value" : "") < 0)
            msg = NULL;
        json_array_append_new(causes,
                              json_pack("{s:s, s:s, s:s}", "reason", ck_field_error_reason(e->type),
                                        "message", msg ? msg : "", "field", e->field));
        free(msg);
    }
    if (f)
        fclose(f);
    char kind_name[128];
    if (kind->group[0])
        snprintf(kind_name, sizeof(kind_name), "%s.%s", kind->kind, kind->group);
    else
        snprintf(kind_name, sizeof(kind_name), "%s", kind->kind);
    ck__status_set(st, 422, "Invalid",
                   errs->len > 1 ? "%s \"%s\" is invalid: [%s]" : "%s \"%s\" is invalid: %s",
                   kind_name, name ? name : "", joined ? joined : "");
    free(joined);
    status_details(st, kind, name);
    st->kind = kind->kind;
    st->causes = causes;
}

/* ---- keys and stored bytes ---------------------------------------------- */

int ck__object_key(const struct ck_kind *kind, const char *namespace, const char *name, char *buf,
                   size_t size)
{
    int n = kind->namespaced
                ? snprintf(buf, size, "/registry/%s/%s/%s", kind->resource, namespace, name)
                : snprintf(buf, size, "/registry/%s/%s", kind->resource, name);
    return n < 0 || (size_t)n >= size ? CK_EINVAL : n;
}

int ck__collection_prefix(const struct ck_kind *kind, const char *namespace, char *buf, size_t size)
{
    int n = kind->namespaced && namespace && *namespace
                ? snprintf(buf, size, "/registry/%s/%s/", kind->resource, namespace)
                : snprintf(buf, size, "/registry/%s/", kind->resource);
    return n < 0 || (size_t)n >= size ? CK_EINVAL : n;
}

/*
 * The stored form: apiVersion, kind and metadata first (metadata without
 * resourceVersion), then every other member in its order. Caller frees.
 */
static char *encode_for_store(const json_t *obj, size_t *ret_len)
{
    json_t *ordered = json_object();
    static const char *const first[] = {"apiVersion", "kind", "metadata"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(obj, first[i]);
        if (v)
            json_object_set(ordered, first[i], v);
    }
    json_t *meta = json_object_get(ordered, "metadata");
    if (meta) {
        meta = json_copy(meta);
        json_object_del(meta, "resourceVersion");
        json_object_set_new(ordered, "metadata", meta);
    } else {
        json_object_set_new(ordered, "metadata", json_object());
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!json_object_get(ordered, key))
            json_object_set(ordered, key, value);
    }
    char *text = json_dumps(ordered, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(ordered);
    if (text)
        *ret_len = strlen(text);
    return text;
}

char *ck__serve_stored(const char *stored, size_t len, int64_t resource_version, size_t *ret_len)
{
    static const char marker[] = "\"metadata\":{";
    const char *at = memmem(stored, len, marker, sizeof(marker) - 1);
    char rv[48];
    if (!at) {
        /* not our encoding (should not happen): serve as is */
        char *copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, stored, len);
            copy[len] = '\0';
            *ret_len = len;
        }
        return copy;
    }
    size_t head = (size_t)(at - stored) + sizeof(marker) - 1;
    bool empty = head < len && stored[head] == '}';
    int rv_len = snprintf(rv, sizeof(rv), "\"resourceVersion\":\"%lld\"%s",
                          (long long)resource_version, empty ? "" : ",");
    char *out = malloc(len + (size_t)rv_len + 1);
    if (!out)
        return NULL;
    memcpy(out, stored, head);
    memcpy(out + head, rv, (size_t)rv_len);
    memcpy(out + head + (size_t)rv_len, stored + head, len - head);
    *ret_len = len + (size_t)rv_len;
    out[*ret_len] = '\0';
    return out;
}

json_t *ck__decode_stored(const struct ck_kv *kv)
{
    json_error_t jerr;
    json_t *obj = json_loadb(kv->value, kv->value_len, 0, &jerr);
    if (!obj)
        return NULL;
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)kv->mod_revision);
    json_t *meta = json_object_get(obj, "metadata");
    if (json_is_object(meta))
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    return obj;
}

/* ---- namespaces --------------------------------------------------------- */

/* 404 when the namespace is missing, 403 when it is terminating. */
static int check_namespace(struct ck__registry *reg, const struct ck_kind *kind,
                           const char *namespace, const char *name, struct ck__status *st)
{
    if (!kind->namespaced)
        return 0;
    const struct ck_kind *ns_kind = ck_kind_lookup("", "v1", "namespaces");
    char key[512];
    ck__object_key(ns_kind, NULL, namespace, key, sizeof(key));
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = ck_store_get(reg->store, key, strlen(key), 0, &kv, NULL, &err);
    if (r == CK_ENOENT) {
        not_found(st, ns_kind, namespace);
        return -1;
    }
    if (r < 0) {
        store_failed(st, &err);
        return -1;
    }
    json_t *ns = ck__decode_stored(kv);
    bool terminating =
        ns && json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") != NULL;
    json_decref(ns);
    ck_kv_unref(kv);
    if (terminating) {
        char qr[128];
        ck__status_set(
            st, 403, "Forbidden",
            "%s \"%s\" is forbidden: unable to create new content in namespace %s because it is being terminated",
            ck_kind_qualified_resource(kind, qr, sizeof(qr)), name ? name : "", namespace);
        status_details(st, kind, name);
        st->causes = json_pack("[{s:s, s:s, s:s}]", "reason", "NamespaceTerminating", "message",
                               "namespace is being terminated", "field", "metadata.namespace");
        return -1;
    }
    return 0;
}

/* ---- create ------------------------------------------------------------- */

static const char *object_name(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* Defaults then validates obj; fills a 422 and returns -1 when invalid. */
static int default_and_validate(struct ck__registry *reg, const struct ck_kind *kind, json_t *obj,
                                const json_t *old, struct ck__status *st)
{
    ck_schema_default(reg->schemas, kind->schema, obj);
    ck_kind_default(kind, obj);
    struct ck_field_errors errs = {0};
    ck_schema_validate(reg->schemas, kind->schema, obj, &errs);
    ck_meta_validate(kind, obj, old, &errs);
    int r = 0;
    if (errs.len) {
        ck__status_invalid(st, kind, object_name(obj), &errs);
        r = -1;
    }
    ck_field_errors_release(&errs);
    return r;
}

int ck__registry_create(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        json_t *obj, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck__status *st)
{
    const char *body_name = object_name(obj);
    if (check_namespace(reg, kind, namespace, body_name, st) < 0)
        return -1;
    bool generated = !body_name || !*body_name;
    for (int attempt = 0; attempt < GENERATE_RETRIES; attempt++) {
        json_t *candidate = json_deep_copy(obj);
        struct ck_err err = {0};
        if (!candidate ||
            ck_meta_prepare_create(kind, candidate, namespace, time(NULL), &err) < 0) {
            ck__status_set(st, 400, "BadRequest", "%s", candidate ? err.msg : "out of memory");
            json_decref(candidate);
            return -1;
        }
        if (default_and_validate(reg, kind, candidate, NULL, st) < 0) {
            json_decref(candidate);
            return -1;
        }
        char name[254], key[512];
        snprintf(name, sizeof(name), "%s", object_name(candidate));
        size_t len = 0;
        char *stored = encode_for_store(candidate, &len);
        json_decref(candidate);
        if (!stored || ck__object_key(kind, namespace, name, key, sizeof(key)) < 0) {
            free(stored);
            ck__status_set(st, 500, "InternalError", "Internal error occurred: out of memory");
            return -1;
        }
        int64_t revision = 0;
        int r = dry_run
                    ? 0
                    : ck_store_create(reg->store, key, strlen(key), stored, len, &revision, &err);
        if (r == CK_EEXIST && generated)
            r = 1; /* a generated name collided: try another */
        if (r == 0) {
            if (dry_run) {
                *ret_body = stored;
                *ret_len = len;
            } else {
                *ret_body = ck__serve_stored(stored, len, revision, ret_len);
                free(stored);
            }
            return 0;
        }
        free(stored);
        if (r == CK_EEXIST) {
            char qr[128];
            ck__status_set(st, 409, "AlreadyExists", "%s \"%s\" already exists",
                           ck_kind_qualified_resource(kind, qr, sizeof(qr)), name);
            status_details(st, kind, name);
            return -1;
        }
        if (r < 0) {
            store_failed(st, &err);
            return -1;
        }
    }
    ck__status_set(st, 409, "AlreadyExists", "could not generate a unique name after %d attempts",
                   GENERATE_RETRIES);
    return -1;
}

/* ---- get ---------------------------------------------------------------- */

int ck__registry_get(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                     const char *name, const struct ck_kv **ret_kv, struct ck__status *st)
{
    char key[512];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0) {
        not_found(st, kind, name);
        return -1;
    }
    struct ck_err err = {0};
    int r = ck_store_get(reg->store, key, strlen(key), 0, ret_kv, NULL, &err);
    if (r == CK_ENOENT) {
        not_found(st, kind, name);
        return -1;
    }
    if (r < 0) {
        store_failed(st, &err);
        return -1;
    }
    return 0;
}

/* ---- update ------------------------------------------------------------- */

static const char *meta_string(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* The new state for a write through the status subresource. */
static json_t *status_update(const struct ck_kind *kind, const json_t *obj, const json_t *old)
{
    json_t *next = json_deep_copy(old);
    if (!next)
        return NULL;
    json_t *status = json_object_get(obj, "status");
    if (status)
        json_object_set_new(next, "status", json_deep_copy(status));
    else
        json_object_del(next, "status");
    /* other metadata changes pass through, except what the server owns */
    json_t *meta = json_deep_copy(json_object_get(obj, "metadata"));
    if (json_is_object(meta)) {
        const json_t *old_meta = json_object_get(old, "metadata");
        static const char *const owned[] = {"name",
                                            "namespace",
                                            "uid",
                                            "creationTimestamp",
                                            "generation",
                                            "deletionTimestamp",
                                            "deletionGracePeriodSeconds"};
        for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
            json_t *v = json_object_get(old_meta, owned[i]);
            if (v)
                json_object_set_new(meta, owned[i], json_deep_copy(v));
            else
                json_object_del(meta, owned[i]);
        }
        /* workloads keep their labels on status writes, pods their owners */
        const char *kept = kind->has_generation             ? "labels"
                           : strcmp(kind->kind, "Pod") == 0 ? "ownerReferences"
                                                            : NULL;
        json_t *v = kept ? json_object_get(old_meta, kept) : NULL;
        if (v)
            json_object_set_new(meta, kept, json_deep_copy(v));
        else if (kept)
            json_object_del(meta, kept);
        json_object_set_new(next, "metadata", meta);
    } else {
        json_decref(meta);
    }
    return next;
}

/* The new state for a namespace's finalize subresource: only spec.finalizers is taken. */
static json_t *finalize_update(const json_t *obj, const json_t *old)
{
    json_t *next = json_deep_copy(old);
    if (!next)
        return NULL;
    json_t *spec = json_object_get(next, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(next, "spec", spec);
    }
    json_t *finalizers = json_object_get(json_object_get(obj, "spec"), "finalizers");
    if (finalizers)
        json_object_set_new(spec, "finalizers", json_deep_copy(finalizers));
    else
        json_object_del(spec, "finalizers");
    return next;
}

int ck__registry_update(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const char *subresource, ck__mutate_fn mutate,
                        void *mutate_arg, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck__status *st)
{
    char key[512];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0) {
        not_found(st, kind, name);
        return -1;
    }
    const bool status_write = subresource && strcmp(subresource, "status") == 0;
    const bool finalize_write = subresource && strcmp(subresource, "finalize") == 0;
    for (int attempt = 0; attempt < UPDATE_RETRIES; attempt++) {
        const struct ck_kv *kv = NULL;
        struct ck_err err = {0};
        int r = ck_store_get(reg->store, key, strlen(key), 0, &kv, NULL, &err);
        if (r == CK_ENOENT) {
            not_found(st, kind, name);
            return -1;
        }
        if (r < 0) {
            store_failed(st, &err);
            return -1;
        }
        json_t *old = ck__decode_stored(kv);
        json_t *requested = old ? mutate(old, mutate_arg, st) : NULL;
        if (!requested) {
            if (!old)
                ck__status_set(st, 500, "InternalError",
                               "Internal error occurred: stored %s is corrupt", key);
            json_decref(old);
            ck_kv_unref(kv);
            return -1;
        }
        /* A resourceVersion in the request is a precondition. */
        const char *want_rv = meta_string(requested, "resourceVersion");
        char current_rv[32];
        snprintf(current_rv, sizeof(current_rv), "%lld", (long long)kv->mod_revision);
        if (want_rv && *want_rv && strcmp(want_rv, current_rv) != 0) {
            conflict(
                st, kind, name,
                "the object has been modified; please apply your changes to the latest version and try again");
            goto out_fail;
        }
        const char *want_uid = meta_string(requested, "uid");
        const char *old_uid = meta_string(old, "uid");
        if (want_uid && *want_uid && old_uid && strcmp(want_uid, old_uid) != 0) {
            char why[256];
            snprintf(why, sizeof(why),
                     "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                     want_uid, old_uid);
            conflict(st, kind, name, why);
            goto out_fail;
        }
        json_t *next = status_write     ? status_update(kind, requested, old)
                       : finalize_write ? finalize_update(requested, old)
                                        : json_incref(requested);
        json_decref(requested);
        requested = NULL;
        if (!next) {
            ck__status_set(st, 500, "InternalError", "Internal error occurred: out of memory");
            goto out_fail;
        }
        const json_t *req_meta = json_object_get(next, "metadata");
        json_t *deleting = json_deep_copy(json_object_get(req_meta, "deletionTimestamp"));
        json_t *grace = json_deep_copy(json_object_get(req_meta, "deletionGracePeriodSeconds"));
        if (!status_write && !finalize_write) {
            /* defaults first, so that an omitted default is no spec change */
            ck_schema_default(reg->schemas, kind->schema, next);
            ck_kind_default(kind, next);
            ck_meta_prepare_update(kind, next, old);
        }
        if (mutate == ck__mark_deleting && deleting &&
            !json_object_get(json_object_get(old, "metadata"), "deletionTimestamp")) {
            /* the one write that may start deletion */
            json_t *m = json_object_get(next, "metadata");
            json_object_set(m, "deletionTimestamp", deleting);
            json_object_set(m, "deletionGracePeriodSeconds", grace ? grace : json_integer(0));
            if (kind->has_generation)
                json_object_set_new(
                    m, "generation",
                    json_integer(json_integer_value(json_object_get(m, "generation")) + 1));
            if (strcmp(kind->kind, "Namespace") == 0)
                json_object_set_new(json_object_get(next, "status"), "phase",
                                    json_string("Terminating"));
        }
        json_decref(deleting);
        json_decref(grace);
        if (default_and_validate(reg, kind, next, old, st) < 0) {
            json_decref(next);
            goto out_fail;
        }
        bool finished = json_object_get(json_object_get(next, "metadata"), "deletionTimestamp") &&
                        !ck__has_finalizers(kind, next);
        size_t len = 0;
        char *stored = encode_for_store(next, &len);
        json_decref(next);
        if (!stored) {
            ck__status_set(st, 500, "InternalError", "Internal error occurred: out of memory");
            goto out_fail;
        }
        if (finished && !dry_run) {
            /* the last finalizer went: the object goes with it, in the same operation */
            int64_t deleted_at = 0;
            r = ck_store_delete(reg->store, key, strlen(key), kv->mod_revision, &deleted_at, NULL,
                                &err);
            json_decref(old);
            ck_kv_unref(kv);
            if (r == 0) {
                *ret_body = ck__serve_stored(stored, len, deleted_at, ret_len);
                free(stored);
                return 0;
            }
            free(stored);
            if (r == CK_ECONFLICT)
                continue;
            if (r == CK_ENOENT)
                not_found(st, kind, name);
            else
                store_failed(st, &err);
            return -1;
        }
        bool unchanged = len == kv->value_len && memcmp(stored, kv->value, len) == 0;
        if (unchanged || dry_run) {
            /* no write, no new revision: answer with the current (or would-be) state */
            *ret_body = ck__serve_stored(stored, len, kv->mod_revision, ret_len);
            free(stored);
            json_decref(old);
            ck_kv_unref(kv);
            return 0;
        }
        int64_t revision = 0;
        r = ck_store_update(reg->store, key, strlen(key), stored, len, kv->mod_revision, &revision,
                            NULL, &err);
        json_decref(old);
        ck_kv_unref(kv);
        if (r == 0) {
            *ret_body = ck__serve_stored(stored, len, revision, ret_len);
            free(stored);
            return 0;
        }
        free(stored);
        if (r == CK_ENOENT) {
            not_found(st, kind, name);
            return -1;
        }
        if (r == CK_ECONFLICT) {
            if (want_rv && *want_rv) {
                conflict(
                    st, kind, name,
                    "the object has been modified; please apply your changes to the latest version and try again");
                return -1;
            }
            continue; /* unconditional update raced another writer: redo on the new state */
        }
        store_failed(st, &err);
        return -1;

    out_fail:
        json_decref(requested);
        json_decref(old);
        ck_kv_unref(kv);
        return -1;
    }
    conflict(st, kind, name, "too many concurrent writers; please try again");
    return -1;
}

/* ---- delete ------------------------------------------------------------- */

bool ck__has_finalizers(const struct ck_kind *kind, const json_t *obj)
{
    if (json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) > 0)
        return true;
    return strcmp(kind->kind, "Namespace") == 0 &&
           json_array_size(json_object_get(json_object_get(obj, "spec"), "finalizers")) > 0;
}

json_t *ck__mark_deleting(const json_t *current, void *arg, struct ck__status *st)
{
    (void)arg;
    (void)st;
    json_t *next = json_deep_copy(current);
    if (!next)
        return NULL;
    json_t *meta = json_object_get(next, "metadata");
    json_object_del(meta, "resourceVersion"); /* not a precondition here */
    if (!json_object_get(meta, "deletionTimestamp")) {
        char now[32];
        json_object_set_new(meta, "deletionTimestamp",
                            json_string(ck_rfc3339(time(NULL), now, sizeof(now))));
        json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0));
    }
    return next;
}

/* What DELETE answers for kinds whose registry returns a Status (apps kinds). */
static char *success_status(const struct ck_kind *kind, const char *name, const char *uid,
                            size_t *ret_len)
{
    json_t *s =
        json_pack("{s:s, s:s, s:{}, s:s, s:{s:s, s:s, s:s, s:s}}", "kind", "Status", "apiVersion",
                  "v1", "metadata", "status", "Success", "details", "name", name, "group",
                  kind->group, "kind", kind->resource, "uid", uid ? uid : "");
    char *text = s ? json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(s);
    if (text)
        *ret_len = strlen(text);
    return text;
}

int ck__registry_delete(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const struct ck__delete_options *opts, char **ret_body,
                        size_t *ret_len, struct ck__status *st)
{
    char key[512];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0) {
        not_found(st, kind, name);
        return -1;
    }
    for (int attempt = 0; attempt < UPDATE_RETRIES; attempt++) {
        const struct ck_kv *kv = NULL;
        struct ck_err err = {0};
        int r = ck_store_get(reg->store, key, strlen(key), 0, &kv, NULL, &err);
        if (r == CK_ENOENT) {
            not_found(st, kind, name);
            return -1;
        }
        if (r < 0) {
            store_failed(st, &err);
            return -1;
        }
        json_t *obj = ck__decode_stored(kv);
        const char *uid = meta_string(obj, "uid");
        char rv[32];
        snprintf(rv, sizeof(rv), "%lld", (long long)kv->mod_revision);
        if (opts && opts->precondition_uid && uid && strcmp(opts->precondition_uid, uid) != 0) {
            char why[256];
            snprintf(why, sizeof(why),
                     "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                     opts->precondition_uid, uid);
            conflict(st, kind, name, why);
            json_decref(obj);
            ck_kv_unref(kv);
            return -1;
        }
        if (opts && opts->precondition_rv && strcmp(opts->precondition_rv, rv) != 0) {
            char why[256];
            snprintf(
                why, sizeof(why),
                "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
                opts->precondition_rv, rv);
            conflict(st, kind, name, why);
            json_decref(obj);
            ck_kv_unref(kv);
            return -1;
        }
        if (!(opts && opts->dry_run) && ck__has_finalizers(kind, obj)) {
            /* Deletion is a state: mark it and let the finalizers' owners finish. */
            json_decref(obj);
            ck_kv_unref(kv);
            r = ck__registry_update(reg, kind, namespace, name, NULL, ck__mark_deleting, NULL,
                                    false, ret_body, ret_len, st);
            return r;
        }
        bool returns_object = !kind->has_generation; /* pods, namespaces, ... */
        char *uid_copy = strdup(uid ? uid : "");
        char *served = ck__serve_stored(kv->value, kv->value_len, kv->mod_revision, ret_len);
        json_decref(obj);
        int64_t mod = kv->mod_revision;
        ck_kv_unref(kv);
        if (opts && opts->dry_run) {
            r = 0;
        } else {
            r = ck_store_delete(reg->store, key, strlen(key), mod, NULL, NULL, &err);
        }
        if (r == 0) {
            if (returns_object) {
                *ret_body = served;
            } else {
                free(served);
                *ret_body = success_status(kind, name, uid_copy, ret_len);
            }
            free(uid_copy);
            return *ret_body ? 0 : -1;
        }
        free(served);
        free(uid_copy);
        if (r == CK_ECONFLICT)
            continue;
        if (r == CK_ENOENT) {
            not_found(st, kind, name);
            return -1;
        }
        store_failed(st, &err);
        return -1;
    }
    conflict(st, kind, name, "too many concurrent writers; please try again");
    return -1;
}
