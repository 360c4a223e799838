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
 *
 * Errors: every function returns 0 or a negative CK_E* code with the
 * caller's struct ck_err filled (the Status the client gets); an object that
 * cannot be built whole for want of memory is a 500, never half-stored.
 *
 * No test of its own: tests/apiserver/test_handlers.c (create, generated
 * names, 422 with causes, namespaces, conflicts, generation),
 * test_delete.c (propagation, finalizers, grace periods, preconditions,
 * namespace termination, binding), test_patch.c (patches and subresources),
 * test_gates.c (gated fields) and test_alloc_fail.c (allocation failure)
 * drive it over HTTP.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

/*
 * An unconditional update retries when another write got in between, as
 * Kubernetes' GuaranteedUpdate does; every failed attempt means some other
 * write landed, so the bound only stops a request that a flood of 1,000
 * other writes to the same object keeps overtaking.
 */
#define UPDATE_RETRIES     1000
#define GENERATE_RETRIES   8
#define LIST_CHUNK_DEFAULT 500

/* What commit() and a delete attempt return when the key changed under them: try again. */
#define RACED 1

/* ---- keys and stored bytes ---------------------------------------------- */

int ck__object_key(const struct ck_kind *kind, const char *namespace, const char *name, char *buf,
                   size_t size)
{
    const char *resource = kind->storage_resource ? kind->storage_resource : kind->resource;
    int n = kind->namespaced ? snprintf(buf, size, "/registry/%s/%s/%s", resource, namespace, name)
                             : snprintf(buf, size, "/registry/%s/%s", resource, name);
    return n < 0 || (size_t)n >= size ? CK_EINVAL : n;
}

int ck__collection_prefix(const struct ck_kind *kind, const char *namespace, char *buf, size_t size)
{
    const char *resource = kind->storage_resource ? kind->storage_resource : kind->resource;
    int n = kind->namespaced && namespace && *namespace
                ? snprintf(buf, size, "/registry/%s/%s/", resource, namespace)
                : snprintf(buf, size, "/registry/%s/", resource);
    return n < 0 || (size_t)n >= size ? CK_EINVAL : n;
}

/*
 * The stored form: apiVersion, kind and metadata first (metadata without
 * resourceVersion), then every other member in its order. Caller frees;
 * NULL when out of memory (never an object with members missing).
 */
char *ck__encode_stored(const json_t *obj, const char *api_version, size_t *ret_len)
{
    json_t *ordered = json_object();
    if (!ordered)
        return NULL;
    int failed = 0;
    static const char *const first[] = {"apiVersion", "kind", "metadata"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(obj, first[i]);
        if (v && i == 0 && api_version) /* a custom resource's storage version */
            failed |= json_object_set_new(ordered, first[i], json_string(api_version));
        else if (v)
            failed |= json_object_set(ordered, first[i], v);
    }
    /* metadata without resourceVersion: a new object sharing the other members */
    const json_t *had = json_object_get(obj, "metadata");
    json_t *meta = json_object();
    const char *mkey;
    json_t *mvalue;
    json_object_foreach((json_t *)had, mkey, mvalue)
    {
        if (meta && strcmp(mkey, "resourceVersion") != 0)
            failed |= json_object_set(meta, mkey, mvalue);
    }
    failed |= json_object_set_new(ordered, "metadata", meta); /* NULL meta: fails */
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!json_object_get(ordered, key))
            failed |= json_object_set(ordered, key, value);
    }
    char *text =
        failed ? NULL : ck__json_dumps(ordered, JSON_COMPACT | JSON_PRESERVE_ORDER, ret_len);
    json_decref(ordered);
    return text;
}

static char *encode_for_store(const struct ck_kind *kind, const json_t *obj, size_t *ret_len)
{
    if (kind->to_storage) { /* a built-in kind's other version: the storage version's form */
        json_t *converted = ck__json_copy(obj);
        char *out = NULL;
        if (converted && kind->to_storage(converted) == 0)
            out = ck__encode_stored(converted, kind->storage_api_version, ret_len);
        json_decref(converted);
        return out;
    }
    return ck__encode_stored(obj, kind->storage_api_version, ret_len);
}

/*
 * obj in its stored form, converted to the storage version first when the kind has a
 * conversion webhook. Caller frees; NULL with reterr filled.
 */
static char *store_form(struct ck__registry *reg, const struct ck_kind *kind, const json_t *obj,
                        size_t *ret_len, struct ck_err *reterr)
{
    json_t *converted = NULL;
    if (kind->conversion_webhook && ck__convert_for_store(reg, kind, obj, &converted, reterr) < 0)
        return NULL;
    char *stored = encode_for_store(kind, converted ? converted : obj, ret_len);
    json_decref(converted);
    if (!stored)
        ck_err_no_memory(reterr);
    return stored;
}

/*
 * The answer to a write from the stored bytes: served (resourceVersion revision; < 0:
 * the stored form as it is, a dry run's), after a conversion back to the kind's version
 * when the kind has a webhook. Caller frees; NULL with reterr filled.
 */
static char *answer_form(struct ck__registry *reg, const struct ck_kind *kind, const char *stored,
                         size_t len, int64_t revision, size_t *ret_len, struct ck_err *reterr)
{
    const struct ck_kv *kv = NULL;
    if (kind->conversion_webhook) {
        kv = ck_kv_new("", 0, stored, len, 0, revision, 0);
        if (!kv) {
            ck_err_no_memory(reterr);
            return NULL;
        }
        if (ck__convert_kvs(reg, kind, &kv, 1, false, reterr) < 0) {
            ck_kv_unref(kv);
            return NULL;
        }
        stored = kv->value;
        len = kv->value_len;
    }
    char *out = NULL;
    if (revision >= 0) {
        out = ck__serve_stored(kind, stored, len, revision, ret_len);
    } else if ((out = ck__malloc(len + 1))) {
        memcpy(out, stored, len);
        out[len] = '\0';
        *ret_len = len;
    }
    ck_kv_unref(kv);
    if (!out)
        ck_err_no_memory(reterr);
    return out;
}

/*
 * stored with the kind's apiVersion in place of the storage version's (a custom
 * resource read through another version: conversion None). NULL when there is
 * nothing to rewrite, or when out of memory (*failed).
 */
static char *convert_stored(const struct ck_kind *kind, const char *stored, size_t len,
                            size_t *ret_len, bool *failed)
{
    char api_version[CK_API_VERSION_MAX], from[CK_API_VERSION_MAX + 64],
        to[CK_API_VERSION_MAX + 64];
    if (!kind || !kind->storage_api_version || kind->conversion_webhook ||
        strcmp(ck_kind_api_version(kind, api_version, sizeof(api_version)),
               kind->storage_api_version) == 0)
        return NULL;
    if (kind->from_storage) { /* a built-in kind's other version: its conversion */
        json_t *obj = NULL;
        char *out = NULL;
        if (ck_json_loadb(stored, len, 0, &obj, NULL) == 0 && kind->from_storage(obj) == 0)
            out = ck__json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER, ret_len);
        json_decref(obj);
        *failed = out == NULL;
        return out;
    }
    int from_len =
        snprintf(from, sizeof(from), "{\"apiVersion\":\"%s\"", kind->storage_api_version);
    int to_len = snprintf(to, sizeof(to), "{\"apiVersion\":\"%s\"", api_version);
    if (from_len < 0 || (size_t)from_len >= sizeof(from) || to_len < 0 ||
        (size_t)to_len >= sizeof(to) || len < (size_t)from_len ||
        memcmp(stored, from, (size_t)from_len) != 0)
        return NULL;
    char *out = ck__malloc(len - (size_t)from_len + (size_t)to_len + 1);
    if (!out) {
        *failed = true;
        return NULL;
    }
    memcpy(out, to, (size_t)to_len);
    memcpy(out + to_len, stored + from_len, len - (size_t)from_len);
    *ret_len = len - (size_t)from_len + (size_t)to_len;
    out[*ret_len] = '\0';
    return out;
}

/* Where the resourceVersion goes in stored bytes: after "metadata":{ (nowhere when absent). */
static void splice_resource_version(const char *stored, size_t len, int64_t resource_version,
                                    struct ck__served_parts *ret)
{
    static const char marker[] = "\"metadata\":{";
    const char *at = memmem(stored, len, marker, sizeof(marker) - 1);
    ret->owned = NULL;
    if (!at) { /* not our encoding (should not happen): served as is */
        ret->head = len;
        ret->rv_len = 0;
        ret->rv[0] = '\0';
        return;
    }
    ret->head = (size_t)(at - stored) + sizeof(marker) - 1;
    bool empty = ret->head < len && stored[ret->head] == '}';
    int n = snprintf(ret->rv, sizeof(ret->rv), "\"resourceVersion\":\"%lld\"%s",
                     (long long)resource_version, empty ? "" : ",");
    ret->rv_len = n > 0 ? (size_t)n : 0;
}

static char *serve_bytes(const struct ck_kind *kind, const char *stored, size_t len,
                         int64_t resource_version, size_t *ret_len)
{
    bool failed = false;
    size_t converted_len = 0;
    char *converted = convert_stored(kind, stored, len, &converted_len, &failed);
    if (failed)
        return NULL;
    if (converted) {
        char *out = serve_bytes(NULL, converted, converted_len, resource_version, ret_len);
        free(converted);
        return out;
    }
    struct ck__served_parts parts;
    splice_resource_version(stored, len, resource_version, &parts);
    char *out = ck__malloc(len + parts.rv_len + 1);
    if (!out)
        return NULL;
    memcpy(out, stored, parts.head);
    memcpy(out + parts.head, parts.rv, parts.rv_len);
    memcpy(out + parts.head + parts.rv_len, stored + parts.head, len - parts.head);
    *ret_len = len + parts.rv_len;
    out[*ret_len] = '\0';
    return out;
}

int ck__serve_stored_parts(const struct ck_kind *kind, const char *stored, size_t len,
                           int64_t resource_version, struct ck__served_parts *ret)
{
    memset(ret, 0, sizeof(*ret));
    bool failed = false;
    size_t n = 0;
    /* defaulted or converted: bytes of their own, as ck__serve_stored() makes them */
    char *defaulted = ck_crd_default_stored(kind, stored, len, &n, &failed);
    char *converted = defaulted || failed ? NULL : convert_stored(kind, stored, len, &n, &failed);
    if (failed)
        return CK_ENOMEM;
    if (defaulted || converted) {
        ret->owned = defaulted ? serve_bytes(kind, defaulted, n, resource_version, &ret->owned_len)
                               : serve_bytes(NULL, converted, n, resource_version, &ret->owned_len);
        free(defaulted);
        free(converted);
        return ret->owned ? 0 : CK_ENOMEM;
    }
    splice_resource_version(stored, len, resource_version, ret);
    return 0;
}

char *ck__serve_stored(const struct ck_kind *kind, const char *stored, size_t len,
                       int64_t resource_version, size_t *ret_len)
{
    bool failed = false;
    size_t defaulted_len = 0;
    char *defaulted = ck_crd_default_stored(kind, stored, len, &defaulted_len, &failed);
    if (failed)
        return NULL;
    char *out = defaulted ? serve_bytes(kind, defaulted, defaulted_len, resource_version, ret_len)
                          : serve_bytes(kind, stored, len, resource_version, ret_len);
    free(defaulted);
    return out;
}

json_t *ck__decode_stored(const struct ck_kv *kv)
{
    json_t *obj = NULL;
    if (ck_json_loadb(kv->value, kv->value_len, 0, &obj, NULL) < 0)
        return NULL;
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)kv->mod_revision);
    json_t *meta = json_object_get(obj, "metadata");
    if (json_is_object(meta))
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    return obj;
}

/* obj, stored, in kind's version: 0, or CK_ENOMEM. */
static int convert_decoded(const struct ck_kind *kind, json_t *obj)
{
    return kind && kind->from_storage ? kind->from_storage(obj) : 0;
}

json_t *ck__decode_served(const struct ck_kind *kind, const struct ck_kv *kv)
{
    json_t *obj = ck__decode_stored(kv);
    if (obj && (ck_crd_default_read(kind, obj) < 0 || convert_decoded(kind, obj) < 0))
        obj = (json_decref(obj), NULL);
    return obj;
}

/*
 * After a stored write of kind's name: a namespace's entry in the cache is out of date,
 * and so are admission's lists of the kind.
 */
static void written(struct ck__registry *reg, const struct ck_kind *kind, const char *name)
{
    if (kind->role == CK_KIND_ROLE_NAMESPACE)
        ck__namespace_cache_forget(reg->namespaces, name);
    ck__admission_cache_forget(reg->admission_lists, kind);
}

/* ---- create ------------------------------------------------------------- */

static const char *object_name(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* The schema's and the kind's defaults. 0, or CK_ENOMEM. */
static int apply_defaults(struct ck__registry *reg, const struct ck_kind *kind, json_t *obj)
{
    return ck_schema_default(ck_kind_schemas(kind, reg->schemas), kind->schema, obj) < 0 ||
                   ck_kind_default(kind, obj) < 0
               ? CK_ENOMEM
               : 0;
}

/* Defaults then validates obj (with sub's validate hook in place of the kind's, for a write
 * through a subresource that has one; user: who writes, for the admission policies' parameter
 * checks), then canonicalizes it; fills a 422 and returns CK_EINVAL when invalid. */
static int default_and_validate(struct ck__registry *reg, const struct ck_kind *kind,
                                const struct ck_subresource *sub, json_t *obj, const json_t *old,
                                const struct ck_auth_user *user, struct ck_err *reterr)
{
    if (apply_defaults(reg, kind, obj) < 0)
        return ck_err_no_memory(reterr);
    struct ck_field_errors errs = {0};
    if (old) /* an unchanged invalid value of a custom resource passes (ratcheting) */
        ck_schema_validate_update(ck_kind_schemas(kind, reg->schemas), kind->schema, obj, old,
                                  &errs);
    else
        ck_schema_validate(ck_kind_schemas(kind, reg->schemas), kind->schema, obj, &errs);
    ck_schema_validate_gated_values(ck_kind_schemas(kind, reg->schemas), kind->schema, obj, old,
                                    reg->feature_enabled, reg->feature_ctx, &errs);
    ck_meta_validate_subresource(kind, sub, obj, old, &errs);
    /* a custom resource's x-kubernetes-validations rules, after the schema's checks */
    ck_crd_rules_validate(kind->validation_rules, obj, old, 0, &errs);
    /* a well-formed admission policy or binding: may its writer read the parameters? */
    if (!errs.len && !sub)
        ck__admission_authorize_params(reg, kind, obj, old, user, &errs);
    int r =
        errs.len || errs.nomem ? ck__err_invalid_object(reterr, kind, object_name(obj), &errs) : 0;
    ck_field_errors_release(&errs);
    if (r == 0 && ck_kind_canonicalize(kind, obj) < 0)
        r = ck_err_no_memory(reterr);
    return r;
}

static json_t *managed_fields_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

/* The manager of writes the server makes on its own behalf (kube-apiserver's loopback client). */
static const struct ck_field_manager server_manager = {"kube-apiserver", NULL, 0};

/*
 * Sets next's managedFields for a write by who (NULL: the mutation computed
 * them, as an apply does). asked is the managedFields the request (or the
 * mutation) carried, taken before the strategy removed them. 0 or CK_ENOMEM.
 */
static int track_managed_fields(struct ck__registry *reg, const struct ck_kind *kind,
                                const json_t *old, json_t *next, const json_t *asked,
                                const struct ck_field_manager *who, const char *subresource)
{
    if (!who) {
        json_t *meta = json_object_get(next, "metadata");
        if (!asked || !meta)
            return 0;
        return json_object_set_new(meta, "managedFields", ck__json_copy(asked)) < 0 ? CK_ENOMEM : 0;
    }
    struct ck_field_manager w = *who;
    if (!w.subresource || !w.subresource[0]) /* a scale names itself; the registry knows status */
        w.subresource = subresource;
    if (!w.now)
        w.now = (long long)time(NULL);
    return ck_managed_fields_track_update(ck_kind_schemas(kind, reg->schemas), kind, old, next,
                                          asked, &w);
}

int ck__registry_create(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        json_t *obj, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck_err *reterr)
{
    return ck__registry_create_by(reg, kind, namespace, obj, &server_manager, NULL, dry_run,
                                  ret_body, ret_len, reterr);
}

int ck__registry_create_by(struct ck__registry *reg, const struct ck_kind *kind,
                           const char *namespace, json_t *obj, const struct ck_field_manager *who,
                           const struct ck_auth_user *user, bool dry_run, char **ret_body,
                           size_t *ret_len, struct ck_err *reterr)
{
    const char *body_name = object_name(obj);
    bool generated = !body_name || !*body_name;
    int r;
    for (int attempt = 0; attempt < GENERATE_RETRIES; attempt++) {
        json_t *candidate = ck__json_copy(obj);
        struct ck_err err = {0};
        if (!candidate)
            return ck_err_no_memory(reterr);
        struct ck__admission_attrs attrs = {.op = CK__ADMISSION_CREATE,
                                            .kind = kind,
                                            .namespace = namespace ? namespace : "",
                                            .name = body_name ? body_name : "",
                                            .obj = candidate,
                                            .dry_run = dry_run,
                                            .user = user};
        /* admission sees the object defaulted, as decoding defaults it in Kubernetes */
        if (apply_defaults(reg, kind, candidate) < 0) {
            json_decref(candidate);
            return ck_err_no_memory(reterr);
        }
        if ((r = ck__admission_admit(reg, &attrs, reterr)) < 0) {
            json_decref(candidate);
            return r;
        }
        r = ck_meta_prepare_create(kind, candidate, namespace, time(NULL), &err);
        if (r == 0 && kind->prepare_for_create_by && user) {
            json_t *info = ck__auth_user_info(user);
            r = !info || kind->prepare_for_create_by(candidate, info) < 0 ? CK_ENOMEM : 0;
            json_decref(info);
        }
        if (r < 0) {
            json_decref(candidate);
            if (r == CK_ENOMEM)
                return ck_err_no_memory(reterr);
            return ck_err_status(reterr, "BadRequest", "%s", err.msg);
        }
        struct ck__allocation al; /* a Service's cluster IP and node ports */
        r = ck_schema_drop_disabled(ck_kind_schemas(kind, reg->schemas), kind->schema, candidate,
                                    NULL, reg->feature_enabled, reg->feature_ctx) < 0
                ? ck_err_no_memory(reterr)
                : ck__allocation_take(reg->allocator, kind, candidate, NULL, dry_run, &al, reterr);
        if (r == 0 &&
            (r = default_and_validate(reg, kind, NULL, candidate, NULL, user, reterr)) < 0)
            ck__allocation_release(reg->allocator, &al, false);
        attrs.name = object_name(candidate) ? object_name(candidate) : "";
        if (r == 0 && (r = ck__admission_validate(reg, &attrs, reterr)) < 0)
            ck__allocation_release(reg->allocator, &al, false);
        if (r == 0 && track_managed_fields(reg, kind, NULL, candidate, managed_fields_of(obj), who,
                                           NULL) < 0) {
            ck__allocation_release(reg->allocator, &al, false);
            r = ck_err_no_memory(reterr);
        }
        if (r < 0) {
            json_decref(candidate);
            return r;
        }
        char name[254], key[512];
        snprintf(name, sizeof(name), "%s", object_name(candidate));
        size_t len = 0;
        char *stored = store_form(reg, kind, candidate, &len, reterr);
        json_decref(candidate);
        if (!stored || ck__object_key(kind, namespace, name, key, sizeof(key)) < 0) {
            ck__allocation_release(reg->allocator, &al, false);
            if (stored) {
                free(stored);
                return ck_err_no_memory(reterr);
            }
            return reterr->code < 0 ? reterr->code : ck_err_no_memory(reterr);
        }
        int64_t revision = 0;
        r = dry_run ? 0
                    : ck_store_create(reg->store, key, strlen(key), stored, len, &revision, &err);
        ck__allocation_release(reg->allocator, &al, r == 0);
        if (r == 0 && !dry_run)
            written(reg, kind, name);
        if (r == 0) {
            if (dry_run && !kind->conversion_webhook) {
                *ret_body = stored;
                *ret_len = len;
                return 0;
            }
            *ret_body =
                answer_form(reg, kind, stored, len, dry_run ? -1 : revision, ret_len, reterr);
            free(stored);
            /* a created object that cannot be served is still a failed request */
            return *ret_body ? 0 : reterr->code;
        }
        free(stored);
        if (r == CK_EEXIST && generated)
            continue; /* a generated name collided: try another */
        if (r == CK_EEXIST)
            return ck_err_already_exists(reterr, kind->group, kind->resource, name);
        return ck__err_store(reterr, &err);
    }
    return ck_err_status(reterr, "AlreadyExists",
                         "could not generate a unique name after %d attempts", GENERATE_RETRIES);
}

/* ---- get ---------------------------------------------------------------- */

/* Reads key: 0 with *ret_kv, or a negative code with *reterr (404, 500). */
static int read_key(struct ck__registry *reg, const struct ck_kind *kind, const char *name,
                    const char *key, const struct ck_kv **ret_kv, struct ck_err *reterr)
{
    struct ck_err err = {0};
    int r = ck_store_get(reg->store, key, strlen(key), 0, ret_kv, NULL, &err);
    if (r == CK_ENOENT)
        return ck__err_not_found(reterr, kind, name);
    if (r < 0)
        return ck__err_store(reterr, &err);
    return 0;
}

int ck__registry_get(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                     const char *name, const struct ck_kv **ret_kv, struct ck_err *reterr)
{
    char key[CK__KEY_MAX];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0)
        return ck__err_not_found(reterr, kind, name);
    int r = read_key(reg, kind, name, key, ret_kv, reterr);
    if (r == 0 && kind->conversion_webhook &&
        (r = ck__convert_kvs(reg, kind, ret_kv, 1, false, reterr)) < 0)
        *ret_kv = ck_kv_unref(*ret_kv);
    return r;
}

/* ---- update ------------------------------------------------------------- */

/* The new state for a write through the status subresource. */
static json_t *status_update(const struct ck_kind *kind, const json_t *obj, const json_t *old)
{
    /* old's members in their order, but the status and metadata about to be replaced */
    const bool new_meta = json_is_object(json_object_get(obj, "metadata"));
    json_t *next = json_object();
    if (!next)
        return NULL;
    int failed = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)old, key, value)
    {
        bool replaced = strcmp(key, "status") == 0 || (new_meta && strcmp(key, "metadata") == 0);
        failed |= json_object_set_new(next, key, replaced ? json_null() : ck__json_copy(value));
    }
    json_t *status = json_object_get(obj, "status");
    failed |= status ? json_object_set_new(next, "status", ck__json_copy(status))
                     : (json_object_del(next, "status"), 0);
    /* other metadata changes pass through, except what the server owns */
    json_t *meta = ck__json_copy(json_object_get(obj, "metadata"));
    if (!meta && json_object_get(obj, "metadata"))
        failed = -1;
    if (json_is_object(meta)) {
        const json_t *old_meta = json_object_get(old, "metadata");
        failed |= ck_meta_keep_server_owned(meta, old_meta);
        /* what the kind keeps on status writes: workloads their labels, pods their owners */
        for (size_t i = 0; kind->status_keeps_metadata && kind->status_keeps_metadata[i]; i++) {
            const char *kept = kind->status_keeps_metadata[i];
            json_t *v = json_object_get(old_meta, kept);
            if (v)
                failed |= json_object_set_new(meta, kept, ck__json_copy(v));
            else
                json_object_del(meta, kept);
        }
        failed |= json_object_set_new(next, "metadata", meta);
    } else {
        json_decref(meta);
    }
    if (failed) /* out of memory: no half-made state */
        next = (json_decref(next), NULL);
    return next;
}

/*
 * The new state for a write through a subresource whose kind computes it
 * (a namespace's finalize, a pod's binding). NULL with *reterr filled: 422
 * for field errors, 409 for a refusal, else 500.
 */
static json_t *custom_update(const struct ck_kind *kind, const struct ck_subresource *sub,
                             const char *name, const json_t *body, const json_t *old,
                             struct ck_err *reterr)
{
    struct ck_field_errors errs = {0};
    struct ck_err err = {0};
    json_t *next = sub->update(name, body, old, &errs, &err);
    if (!next && (errs.len || errs.nomem))
        ck__err_invalid_object(reterr, kind, name, &errs);
    else if (!next && err.code == CK_ECONFLICT)
        ck__err_conflict(reterr, kind, name, err.msg);
    else if (!next && err.code == CK_ENOMEM)
        ck_err_no_memory(reterr);
    else if (!next)
        ck_err_internal(reterr, "%s", err.msg);
    ck_field_errors_release(&errs);
    return next;
}

/* True when obj is being deleted, has no finalizers and no grace period left. */
static bool deletion_finished(const struct ck_kind *kind, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    return json_object_get(meta, "deletionTimestamp") && !ck__has_finalizers(kind, obj) &&
           json_integer_value(json_object_get(meta, "deletionGracePeriodSeconds")) == 0;
}

/*
 * Commits next over kv: removes the object when its deletion is finished,
 * writes nothing when nothing changed (or for a dry run), else updates it if
 * kv is still current. Returns 0 with the served result, RACED when kv
 * changed meanwhile (retry; *reterr untouched), or a negative code with
 * *reterr filled.
 */
static int commit(struct ck__registry *reg, const struct ck_kind *kind, const char *name,
                  const char *key, const struct ck_kv *kv, const json_t *next, bool dry_run,
                  char **ret_body, size_t *ret_len, struct ck_err *reterr)
{
    size_t len = 0;
    char *stored = store_form(reg, kind, next, &len, reterr);
    if (!stored)
        return reterr->code;
    struct ck_err err = {0};
    int64_t revision = kv->mod_revision;
    int r = 0;
    if (dry_run || (len == kv->value_len && memcmp(stored, kv->value, len) == 0))
        r = 0; /* no write, no new revision: the current (or would-be) state */
    else if (deletion_finished(kind, next)) { /* the object goes, in the same operation */
        r = ck_store_delete(reg->store, key, strlen(key), kv->mod_revision, &revision, NULL, &err);
        if (r == 0)
            ck__allocation_removed(reg->allocator, kind, next);
    } else
        r = ck_store_update(reg->store, key, strlen(key), stored, len, kv->mod_revision, &revision,
                            NULL, &err);
    if (r == 0 && revision != kv->mod_revision)
        written(reg, kind, name);
    if (r == 0) {
        *ret_body = answer_form(reg, kind, stored, len, revision, ret_len, reterr);
        free(stored);
        /* the write happened, but an answer we cannot build is a failure: never code 0 */
        return *ret_body ? 0 : reterr->code;
    }
    free(stored);
    if (r == CK_ECONFLICT)
        return RACED;
    if (r == CK_ENOENT)
        return ck__err_not_found(reterr, kind, name);
    return ck__err_store(reterr, &err);
}

static const char stale_message[] =
    "the object has been modified; please apply your changes to the latest version and try again";

int ck__registry_update(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const char *subresource, ck__mutate_fn mutate,
                        void *mutate_arg, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck_err *reterr)
{
    return ck__registry_update_by(reg, kind, namespace, name, subresource, &server_manager, NULL,
                                  mutate, mutate_arg, dry_run, ret_body, ret_len, reterr);
}

int ck__registry_update_by(struct ck__registry *reg, const struct ck_kind *kind,
                           const char *namespace, const char *name, const char *subresource,
                           const struct ck_field_manager *who, const struct ck_auth_user *user,
                           ck__mutate_fn mutate, void *mutate_arg, bool dry_run, char **ret_body,
                           size_t *ret_len, struct ck_err *reterr)
{
    char key[CK__KEY_MAX];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0)
        return ck__err_not_found(reterr, kind, name);
    const struct ck_subresource *sub = subresource ? ck_kind_subresource(kind, subresource) : NULL;
    const bool status_write = sub && sub->part == CK_SUBRESOURCE_STATUS;
    const bool custom_write = sub && sub->part == CK_SUBRESOURCE_CUSTOM && sub->update;
    for (int attempt = 0; attempt < UPDATE_RETRIES; attempt++) {
        const struct ck_kv *kv = NULL;
        int r = read_key(reg, kind, name, key, &kv, reterr);
        if (r < 0)
            return r;
        /* the mutation sees the object in the version written through */
        const struct ck_kv *seen = ck_kv_ref(kv);
        if (kind->conversion_webhook &&
            (r = ck__convert_kvs(reg, kind, &seen, 1, false, reterr)) < 0) {
            ck_kv_unref(seen);
            ck_kv_unref(kv);
            return r;
        }
        json_t *old = ck__decode_stored(seen);
        ck_kv_unref(seen);
        if (old && convert_decoded(kind, old) < 0)
            old = (json_decref(old), NULL);
        json_t *requested = old ? mutate(old, mutate_arg, reterr) : NULL;
        json_t *next = NULL;
        /* the strategy drops what the request says of managedFields: keep it for them */
        json_t *asked = json_incref(managed_fields_of(requested));
        if (!old) {
            r = ck_err_internal(reterr, "stored %s is corrupt", key);
            goto out_fail;
        }
        if (!requested) {
            /* a mutation that failed without saying why ran out of memory */
            r = reterr->code < 0 ? reterr->code : ck_err_no_memory(reterr);
            goto out_fail;
        }
        /* A resourceVersion in the request is a precondition. */
        const char *want_rv = ck__meta_str(requested, "resourceVersion");
        bool conditional = want_rv && *want_rv;
        if (conditional && want_rv[strspn(want_rv, "0123456789")] != '\0') {
            /* not a revision at all: the storage layer's InvalidError, as a 400 */
            r = ck_err_status(reterr, "BadRequest",
                              "resourceVersion: Invalid value: \"%s\": strconv.ParseUint: parsing "
                              "\"%s\": invalid syntax",
                              want_rv, want_rv);
            goto out_fail;
        }
        char current_rv[32];
        snprintf(current_rv, sizeof(current_rv), "%lld", (long long)kv->mod_revision);
        if (conditional && strcmp(want_rv, current_rv) != 0) {
            r = ck__err_conflict(reterr, kind, name, stale_message);
            goto out_fail;
        }
        const char *want_uid = ck__meta_str(requested, "uid");
        const char *old_uid = ck__meta_str(old, "uid");
        if (want_uid && *want_uid && old_uid && strcmp(want_uid, old_uid) != 0) {
            char why[256];
            snprintf(why, sizeof(why),
                     "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                     want_uid, old_uid);
            r = ck__err_conflict(reterr, kind, name, why);
            goto out_fail;
        }
        next = status_write   ? status_update(kind, requested, old)
               : custom_write ? custom_update(kind, sub, name, requested, old, reterr)
                              : json_incref(requested);
        if (next && status_write && sub->prepare && sub->prepare(next, old) < 0)
            next = (json_decref(next), NULL);
        if (!next) {
            /* custom_update() says why; the others only run out of memory */
            r = custom_write ? reterr->code : ck_err_no_memory(reterr);
            goto out_fail;
        }
        struct ck__admission_attrs attrs = {.op = CK__ADMISSION_UPDATE,
                                            .kind = kind,
                                            .subresource = subresource,
                                            .namespace = namespace ? namespace : "",
                                            .name = name,
                                            .obj = next,
                                            .old = old,
                                            .dry_run = dry_run,
                                            .user = user};
        if (!status_write && !custom_write && apply_defaults(reg, kind, next) < 0) {
            r = ck_err_no_memory(reterr);
            goto out_fail;
        }
        if ((r = ck__admission_admit(reg, &attrs, reterr)) < 0)
            goto out_fail;
        /* a binding is written as it is, as kube-apiserver writes it */
        const bool as_is = custom_write && sub->straight_to_storage;
        /* fields behind a gate that is off survive only where old already used them */
        r = as_is ? 0
                  : ck_schema_drop_disabled(ck_kind_schemas(kind, reg->schemas), kind->schema, next,
                                            old, reg->feature_enabled, reg->feature_ctx);
        /* defaults first, so that an omitted default is no spec change */
        if (r == 0 && !status_write && !custom_write &&
            (ck_schema_default(ck_kind_schemas(kind, reg->schemas), kind->schema, next) < 0 ||
             ck_kind_default(kind, next) < 0 || ck_meta_prepare_update(kind, next, old) < 0))
            r = CK_ENOMEM;
        if (r < 0) {
            r = ck_err_no_memory(reterr);
            goto out_fail;
        }
        struct ck__allocation al = {0}; /* a Service's new cluster IP and node ports */
        if (!status_write && !custom_write)
            r = ck__allocation_take(reg->allocator, kind, next, old, dry_run, &al, reterr);
        if (r == 0 && !as_is &&
            (r = default_and_validate(reg, kind, sub, next, old, attrs.user, reterr)) < 0)
            ck__allocation_release(reg->allocator, &al, false);
        if (r == 0 && (r = ck__admission_validate(reg, &attrs, reterr)) < 0)
            ck__allocation_release(reg->allocator, &al, false);
        if (r == 0 && !as_is &&
            track_managed_fields(reg, kind, old, next, asked, who, subresource) < 0) {
            ck__allocation_release(reg->allocator, &al, false);
            r = ck_err_no_memory(reterr);
        }
        if (r < 0)
            goto out_fail;
        r = commit(reg, kind, name, key, kv, next, dry_run, ret_body, ret_len, reterr);
        ck__allocation_release(reg->allocator, &al, r == 0);
        json_decref(asked);
        json_decref(next);
        json_decref(requested);
        json_decref(old);
        ck_kv_unref(kv);
        if (r == RACED && conditional)
            return ck__err_conflict(reterr, kind, name, stale_message);
        if (r != RACED)
            return r;
        continue; /* an unconditional write raced another writer: redo on the new state */

    out_fail:
        json_decref(asked);
        json_decref(next);
        json_decref(requested);
        json_decref(old);
        ck_kv_unref(kv);
        return r;
    }
    return ck__err_conflict(reterr, kind, name, "too many concurrent writers; please try again");
}

/* ---- delete ------------------------------------------------------------- */

bool ck__has_finalizers(const struct ck_kind *kind, const json_t *obj)
{
    return ck_kind_has_finalizers(kind, obj);
}

/* What DELETE answers for kinds whose registry returns a Status (apps kinds). */
static char *success_status(const struct ck_kind *kind, const char *name, const char *uid,
                            size_t *ret_len)
{
    struct ck_err success = {0};
    ck_err_set_details(&success, kind->group, kind->resource, name);
    snprintf(success.uid, sizeof(success.uid), "%s", uid ? uid : "");
    return ck__status_json(&success, false, ret_len);
}

/* 409 when a DeleteOptions precondition does not hold; 0 when they all do. */
static int check_preconditions(const struct ck_kind *kind, const char *name, const json_t *obj,
                               int64_t mod_revision, const struct ck__delete_options *opts,
                               struct ck_err *reterr)
{
    const char *uid = ck__meta_str(obj, "uid");
    char rv[32], why[256];
    snprintf(rv, sizeof(rv), "%lld", (long long)mod_revision);
    if (opts->precondition_uid && uid && strcmp(opts->precondition_uid, uid) != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                 opts->precondition_uid, uid);
        return ck__err_conflict(reterr, kind, name, why);
    }
    if (opts->precondition_rv && strcmp(opts->precondition_rv, rv) != 0) {
        snprintf(
            why, sizeof(why),
            "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
            opts->precondition_rv, rv);
        return ck__err_conflict(reterr, kind, name, why);
    }
    return 0;
}

static void remove_string(json_t *array, const char *s)
{
    for (size_t i = json_array_size(array); i-- > 0;) {
        const char *v = json_string_value(json_array_get(array, i));
        if (v && strcmp(v, s) == 0)
            json_array_remove(array, i);
    }
}

/*
 * The garbage collector's finalizers for a delete with policy: Orphan adds
 * `orphan`, Foreground `foregroundDeletion`, Background neither (and each
 * drops the other's); no policy keeps what the object has, as Kubernetes
 * does for kinds whose default policy is Background.
 */
static int set_gc_finalizers(json_t *meta, enum ck__propagation policy)
{
    if (policy == CK__PROPAGATION_DEFAULT)
        return 0;
    json_t *finalizers = json_object_get(meta, "finalizers");
    if (!json_is_array(finalizers)) {
        finalizers = json_array();
        if (json_object_set_new(meta, "finalizers", finalizers) < 0)
            return CK_ENOMEM;
    }
    remove_string(finalizers, "orphan");
    remove_string(finalizers, "foregroundDeletion");
    int failed = 0;
    if (policy == CK__PROPAGATION_ORPHAN)
        failed = json_array_append_new(finalizers, json_string("orphan"));
    else if (policy == CK__PROPAGATION_FOREGROUND)
        failed = json_array_append_new(finalizers, json_string("foregroundDeletion"));
    if (json_array_size(finalizers) == 0)
        json_object_del(meta, "finalizers");
    return failed ? CK_ENOMEM : 0;
}

/*
 * The grace period a delete gives obj (Kubernetes' CheckGracefulDelete), as
 * the kind decides from the request's; kinds without a say have none.
 */
static long long grace_period(const struct ck_kind *kind, const json_t *obj,
                              const struct ck__delete_options *opts)
{
    if (!kind->delete_grace)
        return 0;
    long long requested = opts->grace_seconds;
    return kind->delete_grace(obj, opts->has_grace ? &requested : NULL);
}

/*
 * The state a DELETE leaves obj in when it does not remove it at once:
 * deletionTimestamp (now + grace), deletionGracePeriodSeconds, the GC
 * finalizers, a generation bump, a namespace's Terminating phase. A delete of
 * an object already being deleted only changes its finalizers and may
 * shorten its grace period. Returns a new reference, or NULL when out of
 * memory (a half-built state could remove what should only be marked).
 */
static json_t *deleting_state(const struct ck_kind *kind, const json_t *obj, long long grace,
                              const struct ck__delete_options *opts)
{
    json_t *next = ck__json_copy(obj);
    if (!next)
        return NULL;
    json_t *meta = json_object_get(next, "metadata");
    json_object_del(meta, "resourceVersion");
    int failed = set_gc_finalizers(meta, opts->propagation);
    char when[32];
    ck_rfc3339(time(NULL) + grace, when, sizeof(when));
    json_t *old_grace = json_object_get(meta, "deletionGracePeriodSeconds");
    if (!json_object_get(meta, "deletionTimestamp")) {
        failed |= json_object_set_new(meta, "deletionTimestamp", json_string(when));
        failed |= json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace));
        if (kind->has_generation)
            failed |= json_object_set_new(
                meta, "generation",
                json_integer(json_integer_value(json_object_get(meta, "generation")) + 1));
        if (kind->prepare_for_delete && kind->prepare_for_delete(next) < 0)
            failed = -1;
    } else if (grace < json_integer_value(old_grace)) {
        failed |= json_object_set_new(meta, "deletionTimestamp", json_string(when));
        failed |= json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace));
    }
    if (failed) {
        json_decref(next);
        return NULL;
    }
    return next;
}

int ck__registry_delete(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const struct ck__delete_options *opts, char **ret_body,
                        size_t *ret_len, struct ck_err *reterr)
{
    static const struct ck__delete_options none = {0};
    if (!opts)
        opts = &none;
    char key[CK__KEY_MAX];
    if (ck__object_key(kind, namespace, name, key, sizeof(key)) < 0)
        return ck__err_not_found(reterr, kind, name);
    for (int attempt = 0; attempt < UPDATE_RETRIES; attempt++) {
        const struct ck_kv *kv = NULL;
        int r = read_key(reg, kind, name, key, &kv, reterr);
        if (r < 0)
            return r;
        json_t *obj = ck__decode_stored(kv);
        struct ck__admission_attrs attrs = {.op = CK__ADMISSION_DELETE,
                                            .kind = kind,
                                            .namespace = namespace ? namespace : "",
                                            .name = name,
                                            .old = obj,
                                            .dry_run = opts->dry_run,
                                            .user = opts->user};
        r = obj ? check_preconditions(kind, name, obj, kv->mod_revision, opts, reterr)
                : ck_err_internal(reterr, "stored %s is corrupt", key);
        if (r == 0)
            r = ck__admission_admit(reg, &attrs, reterr);
        if (r == 0)
            r = ck__admission_validate(reg, &attrs, reterr);
        if (r < 0) {
            json_decref(obj);
            ck_kv_unref(kv);
            return r;
        }
        long long grace = grace_period(kind, obj, opts);
        json_t *next = deleting_state(kind, obj, grace, opts);
        if (!next) {
            r = ck_err_no_memory(reterr);
        } else if (!deletion_finished(kind, next)) {
            /* Deletion is a state: mark it and let the finalizers' owners (or the node) finish. */
            r = commit(reg, kind, name, key, kv, next, opts->dry_run, ret_body, ret_len, reterr);
        } else {
            /* nothing holds it: the object goes now */
            int64_t deleted_at = kv->mod_revision;
            struct ck_err err = {0};
            r = opts->dry_run ? 0
                              : ck_store_delete(reg->store, key, strlen(key), kv->mod_revision,
                                                &deleted_at, NULL, &err);
            if (r == 0 && !opts->dry_run) {
                ck__allocation_removed(reg->allocator, kind, obj);
                written(reg, kind, name);
            }
            /* pods, namespaces ...: the last state, at the revision of its deletion */
            if (r == 0 && !kind->has_generation)
                *ret_body =
                    answer_form(reg, kind, kv->value, kv->value_len, deleted_at, ret_len, reterr);
            else if (r == 0) /* apps kinds: a Success Status */
                *ret_body = success_status(kind, name, ck__meta_str(obj, "uid"), ret_len);
            if (r == 0 && !*ret_body) /* deleted, but the answer could not be built */
                r = reterr->code < 0 ? reterr->code : ck_err_no_memory(reterr);
            else if (r == CK_ECONFLICT)
                r = RACED;
            else if (r == CK_ENOENT)
                r = ck__err_not_found(reterr, kind, name);
            else if (r < 0)
                r = ck__err_store(reterr, &err);
        }
        json_decref(next);
        json_decref(obj);
        ck_kv_unref(kv);
        if (r != RACED)
            return r;
    }
    return ck__err_conflict(reterr, kind, name, "too many concurrent writers; please try again");
}
