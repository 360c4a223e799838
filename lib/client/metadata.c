/*
 * metadata.c - the metadata client and metadata-only informers (client-go metadata
 * package and metadatainformer).
 *
 * Every read asks for PartialObjectMetadata (lists for PartialObjectMetadataList, watch
 * events carrying PartialObjectMetadata) with the Accept header client-go's metadata
 * client sends, plain JSON last as the fallback. A server that answers the form (ckube's
 * API server, kube-apiserver) sends metadata only; one that does not answers full objects,
 * and this file strips each object to {apiVersion, kind, metadata} the moment it arrives, so
 * a caller, and an informer's cache, holds metadata only either way. The stripped object
 * shares the metadata value of the decoded answer; the rest of the answer is freed at
 * once.
 *
 * A metadata informer is an ordinary informer (informer.c) whose list/watch source is
 * this file's: the reflector, the handlers and the indexer are the same; only what is
 * stored differs.
 *
 * Threading: no state beyond the REST client, which is thread-safe; a metadata
 * informer's source is used by its reflector thread only.
 *
 * Tested by tests/client/test_metadata.c (stripping; lists, gets and watches against a
 * real server, which answers metadata only on the wire).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/informer.h"
#include "ckube/rest.h"
#include "internal.h"

json_t *ck_metadata_strip(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta))
        return NULL;
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (kind && strcmp(kind, "PartialObjectMetadata") == 0 && json_object_size(obj) <= 3) {
        ck__json_ref(obj);
        return obj;
    }
    json_t *out = json_object();
    if (!out || json_object_set_new(out, "apiVersion", json_string("meta.k8s.io/v1")) < 0 ||
        json_object_set_new(out, "kind", json_string("PartialObjectMetadata")) < 0 ||
        json_object_set(out, "metadata", meta) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* Replaces every item of a List with its metadata; CK_ENOMEM when one cannot be made. */
static int strip_list(json_t *list)
{
    json_t *items = json_object_get(list, "items");
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        json_t *m = ck_metadata_strip(item);
        if (!m || json_array_set_new(items, i, m) < 0)
            return CK_ENOMEM;
    }
    if (json_object_get(list, "kind"))
        json_object_set_new(list, "kind", json_string("PartialObjectMetadataList"));
    json_object_set_new(list, "apiVersion", json_string("meta.k8s.io/v1"));
    return 0;
}

/* Replaces *obj with its metadata. */
static int strip_in_place(json_t **obj, struct ck_err *reterr)
{
    json_t *m = ck_metadata_strip(*obj);
    if (!m) {
        json_decref(*obj);
        *obj = NULL;
        return ck_err_set(reterr, CK_EIO, "the answer has no metadata");
    }
    json_decref(*obj);
    *obj = m;
    return 0;
}

int ck_metadata_get(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                    const char *name, json_t **ret_obj, struct ck_err *reterr)
{
    char path[1024];
    if (ck_rest_path(res, namespace, name, NULL, NULL, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s %s: not a valid path", res->resource, name);
    json_t *obj = NULL;
    int r = ck_rest_do_accept(client, "GET", path, NULL, NULL, CK_ACCEPT_PARTIAL_METADATA, &obj,
                              reterr);
    if (r == 0)
        r = strip_in_place(&obj, reterr);
    if (r == 0)
        *ret_obj = obj;
    return r;
}

int ck_metadata_list(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                     const struct ck_list_options *opts, json_t **ret_list, struct ck_err *reterr)
{
    json_t *list = NULL;
    int r = ck_rest_list_accept(client, res, namespace, opts, CK_ACCEPT_PARTIAL_METADATA_LIST,
                                &list, reterr);
    if (r == 0 && strip_list(list) < 0) {
        json_decref(list);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (r == 0)
        *ret_list = list;
    return r;
}

struct watch_strip {
    ck_watch_func fn;
    void *arg;
};

/* Strips each event's object before the caller sees it (ERROR Status objects pass). */
static int strip_event(const char *type, json_t *object, void *arg)
{
    struct watch_strip *w = arg;
    if (strcmp(type, "ERROR") != 0 && strcmp(type, "BOOKMARK") != 0) {
        json_t *m = ck_metadata_strip(object);
        json_decref(object);
        if (!m)
            return CK_ENOMEM;
        object = m;
    }
    return w->fn(type, object, w->arg);
}

int ck_metadata_watch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                      const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                      const atomic_bool *stop, struct ck_err *reterr)
{
    struct watch_strip w = {fn, arg};
    return ck_rest_watch_accept(client, res, namespace, opts, CK_ACCEPT_PARTIAL_METADATA,
                                strip_event, &w, stop, reterr);
}

int ck_metadata_patch(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                      const char *name, const char *patch_type, const json_t *patch,
                      json_t **ret_obj, struct ck_err *reterr)
{
    json_t *obj = NULL;
    int r = ck_rest_patch(client, res, namespace, name, NULL, patch_type, patch,
                          ret_obj ? &obj : NULL, reterr);
    if (r == 0 && ret_obj && obj)
        r = strip_in_place(&obj, reterr);
    if (r == 0 && ret_obj)
        *ret_obj = obj;
    return r;
}

int ck_metadata_delete(struct ck_rest *client, const struct ck_resource *res, const char *namespace,
                       const char *name, const json_t *options, struct ck_err *reterr)
{
    return ck_rest_delete(client, res, namespace, name, options, NULL, reterr);
}

int ck_metadata_delete_collection(struct ck_rest *client, const struct ck_resource *res,
                                  const char *namespace, const json_t *options,
                                  const char *label_selector, struct ck_err *reterr)
{
    char query[1024] = "", path[2048];
    if (label_selector && *label_selector) {
        char *esc = curl_easy_escape(NULL, label_selector, 0);
        if (!esc)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        int n = snprintf(query, sizeof(query), "labelSelector=%s", esc);
        curl_free(esc);
        if (n < 0 || (size_t)n >= sizeof(query))
            return ck_err_set(reterr, CK_EINVAL, "label selector too long");
    }
    if (ck_rest_path(res, namespace, NULL, NULL, query, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s: not a valid path", res->resource);
    return ck_rest_do(client, "DELETE", path, options, NULL, NULL, reterr);
}

/* ---- metadata informers ------------------------------------------------------------ */

struct ck_metadata_informer {
    struct ck_list_watch lw;
    struct ck_list_watch_maker maker; /* made lw (released with it); make NULL: client */
    struct ck_rest *client;
    struct ck_resource res; /* points at the strings below */
    char group[128], version[64], resource[128];
    char *namespace;
    struct ck_informer *inf;
};

static int md_list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                   struct ck_err *reterr)
{
    struct ck_metadata_informer *mi = ctx;
    return ck_metadata_list(mi->client, &mi->res, mi->namespace, opts, ret_list, reterr);
}

static int md_watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                    const atomic_bool *stop, struct ck_err *reterr)
{
    struct ck_metadata_informer *mi = ctx;
    return ck_metadata_watch(mi->client, &mi->res, mi->namespace, opts, fn, arg, stop, reterr);
}

int ck__metadata_informer_new(struct ck_rest *client, const struct ck_list_watch_maker *maker,
                              const struct ck_resource *res, const char *namespace,
                              long long resync, struct ck_clock *clock,
                              struct ck_metadata_informer **ret_mi, struct ck_err *reterr)
{
    struct ck_metadata_informer *mi = ck__calloc(1, sizeof(*mi));
    if (!mi || (namespace && !(mi->namespace = ck__strdup(namespace)))) {
        free(mi);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    snprintf(mi->group, sizeof(mi->group), "%s", res->group);
    snprintf(mi->version, sizeof(mi->version), "%s", res->version);
    snprintf(mi->resource, sizeof(mi->resource), "%s", res->resource);
    mi->res = (struct ck_resource){mi->group, mi->version, mi->resource, res->namespaced};
    mi->client = client;
    mi->lw = (struct ck_list_watch){.list = md_list, .watch = md_watch, .ctx = mi};
    int r = 0;
    if (maker && maker->make) {
        r = maker->make(maker->arg, &mi->res, mi->namespace, true, &mi->lw, reterr);
        if (r == 0)
            mi->maker = *maker;
    }
    struct ck_informer_options o = {
        .list_watch = &mi->lw,
        .res = &mi->res,
        .namespace = mi->namespace,
        .resync = resync,
        .clock = clock,
    };
    if (r == 0)
        r = ck_informer_new(&o, &mi->inf, reterr);
    if (r < 0) {
        if (mi->maker.release)
            mi->maker.release(mi->maker.arg, &mi->lw);
        free(mi->namespace);
        free(mi);
        return r;
    }
    *ret_mi = mi;
    return 0;
}

int ck_metadata_informer_new(struct ck_rest *client, const struct ck_resource *res,
                             const char *namespace, int64_t resync, struct ck_clock *clock,
                             struct ck_metadata_informer **ret_mi, struct ck_err *reterr)
{
    return ck__metadata_informer_new(client, NULL, res, namespace, resync, clock, ret_mi, reterr);
}

struct ck_informer *ck_metadata_informer_informer(struct ck_metadata_informer *mi)
{
    return mi->inf;
}

struct ck_metadata_informer *ck_metadata_informer_free(struct ck_metadata_informer *mi)
{
    if (!mi)
        return NULL;
    ck_informer_free(mi->inf);
    if (mi->maker.release) /* its reflector is gone: nothing reads it */
        mi->maker.release(mi->maker.arg, &mi->lw);
    free(mi->namespace);
    free(mi);
    return NULL;
}
