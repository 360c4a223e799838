/*
 * list.c - listing a collection: selectors, paging and resourceVersion.
 *
 * Follows Kubernetes' etcd3 store GetList:
 *   - resourceVersion unset, "" or "0": the latest state; "N" (NotOlderThan,
 *     the default match): the latest state, which is at least N (a N above
 *     the current revision is answered 504 "Too large resource version");
 *     resourceVersionMatch=Exact: exactly revision N, 410 Expired when
 *     compacted. resourceVersionMatch without resourceVersion, with a
 *     continue token, or Exact with "0" are 422 Invalid.
 *   - limit/continue: every page is read at the revision of the first, the
 *     token carries that revision and the last key served (hex, opaque to
 *     clients); a token whose revision was compacted is 410 Expired.
 *   - selectors filter after reading, and the store is read page by page
 *     until limit matching objects are found or the range is exhausted.
 *   - a field selector pinning metadata.name in one namespace reads one key.
 *
 * Errors: a negative CK_E* code with the caller's struct ck_err filled:
 * 400, 410, 422, 504 as above, 500 when the store or memory fails (an item
 * that cannot be decoded fails the list; it is never left out).
 *
 * No test of its own: tests/apiserver/test_handlers.c
 * (test_list_paging_and_selectors: limit/continue, selectors, Exact and its
 * 422s, bad tokens; test_list_holds_every_served_item) and
 * tests/apiserver/test_alloc_fail.c (list under allocation failure) list
 * over HTTP; watch.c's initial events go through it too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define STORE_PAGE 500

static const char expired_continue[] =
    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

void ck__list_result_release(struct ck__list_result *ret)
{
    for (size_t i = 0; i < ret->n_kvs; i++)
        ck_kv_unref(ret->kvs[i]);
    free(ret->kvs);
    free(ret->continue_token);
    memset(ret, 0, sizeof(*ret));
}

bool ck__matches(const struct ck_kind *kind, const json_t *obj,
                 const struct ck_label_selector *labels, const struct ck_field_selector *fields)
{
    if (labels && !ck_label_selector_matches(
                      labels, json_object_get(json_object_get(obj, "metadata"), "labels")))
        return false;
    return !fields || ck_field_selector_matches(fields, obj, ck_kind_field_getter, kind);
}

/* ---- continue tokens: "<revision>.<hex of the last key after the prefix>" ---- */

static char *encode_token(int64_t revision, const char *key, size_t key_len)
{
    char *token = ck__malloc(32 + key_len * 2);
    if (!token)
        return NULL;
    int n = sprintf(token, "%lld.", (long long)revision);
    for (size_t i = 0; i < key_len; i++)
        n += sprintf(token + n, "%02x", (unsigned char)key[i]);
    return token;
}

/* Decodes a token; *ret_key is malloc'd (the last key served, raw bytes). */
static int decode_token(const char *token, int64_t *ret_revision, char **ret_key,
                        size_t *ret_key_len)
{
    char *end;
    errno = 0;
    long long rev = strtoll(token, &end, 10);
    if (end == token || *end != '.' || rev <= 0 || errno == ERANGE)
        return CK_EINVAL;
    const char *hex = end + 1;
    size_t hex_len = strlen(hex);
    if (hex_len == 0 || hex_len % 2)
        return CK_EINVAL;
    char *key = ck__malloc(hex_len / 2 + 2);
    if (!key)
        return CK_ENOMEM;
    for (size_t i = 0; i < hex_len / 2; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1) {
            free(key);
            return CK_EINVAL;
        }
        key[i] = (char)byte;
    }
    *ret_revision = rev;
    *ret_key = key;
    *ret_key_len = hex_len / 2;
    return 0;
}

/* ---- resourceVersion rules -------------------------------------------- */

static bool parse_revision(const char *text, int64_t *ret)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || v < 0 || errno == ERANGE)
        return false;
    *ret = v;
    return true;
}

/* Works out the revision to read at (0 = latest). A negative code with *reterr when invalid. */
static int read_revision(const struct ck__list_options *opts, int64_t current,
                         int64_t *ret_revision, struct ck_err *reterr)
{
    const char *rv = opts->resource_version;
    const char *match = opts->resource_version_match;
    bool has_rv = rv && *rv;
    bool has_match = match && *match;
    bool has_continue = opts->continue_token && *opts->continue_token;
    *ret_revision = 0;
    if (has_match && !has_rv) {
        return ck_err_status(
            reterr, "Invalid",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if (has_match && has_continue) {
        return ck_err_status(
            reterr, "Invalid",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided");
    }
    int64_t wanted = 0;
    if (has_rv && !parse_revision(rv, &wanted)) {
        return ck_err_status(reterr, "BadRequest", "invalid resource version: %s", rv);
    }
    if (has_match && strcmp(match, "Exact") == 0) {
        if (wanted == 0) {
            return ck_err_status(
                reterr, "Invalid",
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
        }
        *ret_revision = wanted;
    } else if (has_match && strcmp(match, "NotOlderThan") != 0) {
        return ck_err_status(
            reterr, "Invalid",
            "resourceVersionMatch: Unsupported value: \"%s\": supported values: \"Exact\", \"NotOlderThan\"",
            match);
    }
    if (wanted > current)
        return ck__err_too_large_rv(reterr, wanted, current);
    return 0;
}

int ck__err_too_large_rv(struct ck_err *reterr, int64_t wanted, int64_t current)
{
    int code =
        ck_err_status(reterr, "Timeout", "Timeout: Too large resource version: %lld, current: %lld",
                      (long long)wanted, (long long)current);
    ck_err_add_cause(reterr, "ResourceVersionTooLarge", "Too large resource version", NULL);
    return code;
}

/* ---- the list ------------------------------------------------------------ */

static int append(struct ck__list_result *ret, const struct ck_kv *kv)
{
    const struct ck_kv **kvs = ck__realloc(ret->kvs, (ret->n_kvs + 1) * sizeof(*kvs));
    if (!kvs)
        return CK_ENOMEM;
    ret->kvs = kvs;
    ret->kvs[ret->n_kvs++] = ck_kv_ref(kv);
    return 0;
}

/* 1 when kv passes the selectors, 0 when not, CK_ENOMEM when it cannot be decoded. */
static int kv_matches(const struct ck_kind *kind, const struct ck_kv *kv,
                      const struct ck__list_options *opts)
{
    bool label_filter = opts->labels && !ck_label_selector_is_empty(opts->labels);
    bool field_filter = opts->fields && !ck_field_selector_is_empty(opts->fields);
    if (!label_filter && !field_filter)
        return 1;
    json_t *obj = ck__decode_served(kind, kv); /* selectors see the defaults, as served */
    if (!obj)
        return CK_ENOMEM; /* the store holds what we wrote: only memory can fail here */
    bool ok = ck__matches(kind, obj, label_filter ? opts->labels : NULL,
                          field_filter ? opts->fields : NULL);
    json_decref(obj);
    return ok;
}

/* Appends kv when it passes the selectors: 0 or CK_ENOMEM. */
static int append_matching(const struct ck_kind *kind, struct ck__list_result *ret,
                           const struct ck_kv *kv, const struct ck__list_options *opts)
{
    int r = kv_matches(kind, kv, opts);
    return r > 0 ? append(ret, kv) : r;
}

/* metadata.name=X in a known namespace (or cluster-scoped): one key to read. */
static const char *single_name(const struct ck_kind *kind, const struct ck__list_options *opts)
{
    if (!opts->fields || (kind->namespaced && (!opts->namespace || !*opts->namespace)))
        return NULL;
    return ck_field_selector_exact(opts->fields, "metadata.name");
}

int ck__registry_list(struct ck__registry *reg, const struct ck_kind *kind,
                      const struct ck__list_options *opts, struct ck__list_result *ret,
                      struct ck_err *reterr)
{
    memset(ret, 0, sizeof(*ret));
    struct ck_err err = {0};
    int64_t current = 0;
    if (ck_store_revisions(reg->store, &current, NULL, &err) < 0)
        return ck_err_internal(reterr, "%s", err.msg);
    int64_t revision = 0;
    int r = read_revision(opts, current, &revision, reterr);
    if (r < 0)
        return r;

    char prefix[CK__KEY_MAX];
    if (ck__collection_prefix(kind, opts->namespace, prefix, sizeof(prefix)) < 0)
        return ck_err_status(reterr, "BadRequest", "namespace too long");
    size_t prefix_len = strlen(prefix);

    char *from = NULL;
    size_t from_len = 0;
    if (opts->continue_token && *opts->continue_token) {
        char *last = NULL;
        size_t last_len = 0;
        r = decode_token(opts->continue_token, &revision, &last, &last_len);
        if (r == CK_ENOMEM)
            return ck_err_no_memory(reterr);
        if (r < 0)
            return ck_err_status(reterr, "BadRequest", "invalid continue token");
        if (revision > current) { /* a token no list of this store handed out */
            free(last);
            return ck__err_too_large_rv(reterr, revision, current);
        }
        /* resume right after the last key served: prefix + last + "\0" */
        from = ck__malloc(prefix_len + last_len + 1);
        if (!from) {
            free(last);
            return ck_err_no_memory(reterr);
        }
        memcpy(from, prefix, prefix_len);
        memcpy(from + prefix_len, last, last_len);
        from[prefix_len + last_len] = '\0';
        from_len = prefix_len + last_len + 1;
        free(last);
    }

    const char *name = single_name(kind, opts);
    if (name && !from) {
        char key[CK__KEY_MAX];
        if (ck__object_key(kind, opts->namespace, name, key, sizeof(key)) >= 0) {
            const struct ck_kv *kv = NULL;
            int64_t at = 0;
            r = ck_store_get(reg->store, key, strlen(key), revision, &kv, &at, &err);
            if (r == CK_ECOMPACTED)
                return ck_err_status(reterr, "Expired", "too old resource version: %lld",
                                     (long long)revision);
            if (r < 0 && r != CK_ENOENT)
                return ck_err_internal(reterr, "%s", err.msg);
            ret->revision = revision ? revision : at;
            /* the selectors see the object in the version listed */
            if (kv && kind->conversion_webhook &&
                (r = ck__convert_kvs(reg, kind, &kv, 1, true, reterr)) < 0) {
                ck_kv_unref(kv);
                return r;
            }
            r = kv ? append_matching(kind, ret, kv, opts) : 0;
            ck_kv_unref(kv);
            return r < 0 ? ck_err_no_memory(reterr) : 0;
        }
    }

    int64_t limit = opts->limit > 0 ? opts->limit : 0;
    const bool selecting = (opts->labels && !ck_label_selector_is_empty(opts->labels)) ||
                           (opts->fields && !ck_field_selector_is_empty(opts->fields));
    for (;;) {
        struct ck_store_range req = {
            .key = prefix,
            .key_len = prefix_len,
            .prefix = true,
            .from_key = from,
            .from_key_len = from_len,
            .limit =
                limit ? (limit - (int64_t)ret->n_kvs > STORE_PAGE / 5 ? limit - (int64_t)ret->n_kvs
                                                                      : STORE_PAGE / 5)
                      : 0,
            .revision = revision,
        };
        struct ck_store_range_result page = {0};
        r = ck_store_range(reg->store, &req, &page, &err);
        if (r < 0) {
            free(from);
            ck__list_result_release(ret);
            if (r == CK_ECOMPACTED)
                return ck_err_status(reterr, "Expired", "%s",
                                     opts->continue_token && *opts->continue_token
                                         ? expired_continue
                                         : "too old resource version");
            return ck_err_internal(reterr, "%s", err.msg);
        }
        if (!revision)
            revision = page.revision; /* later pages read at the first one's revision */
        /* selectors see the objects in the version listed: a page converted in one review */
        if (selecting && kind->conversion_webhook &&
            (r = ck__convert_kvs(reg, kind, page.kvs, page.n_kvs, true, reterr)) < 0) {
            ck_store_range_result_release(&page);
            free(from);
            ck__list_result_release(ret);
            return r;
        }
        const struct ck_kv *last = NULL;
        for (size_t i = 0; i < page.n_kvs; i++) {
            if (limit && (int64_t)ret->n_kvs == limit)
                break;
            last = page.kvs[i];
            if (append_matching(kind, ret, page.kvs[i], opts) < 0)
                r = CK_ENOMEM;
        }
        bool consumed_page = !limit || last == (page.n_kvs ? page.kvs[page.n_kvs - 1] : NULL);
        bool more = page.more || !consumed_page;
        if (last) {
            free(from);
            from_len = last->key_len + 1;
            from = ck__malloc(from_len);
            if (from) {
                memcpy(from, last->key, last->key_len);
                from[last->key_len] = '\0';
            } else {
                r = CK_ENOMEM;
            }
        }
        bool full = limit && (int64_t)ret->n_kvs >= limit;
        if (full && more && r == 0) {
            ret->continue_token =
                encode_token(revision, last->key + prefix_len, last->key_len - prefix_len);
            if (!ret->continue_token)
                r = CK_ENOMEM;
        }
        if (r < 0) {
            ck_store_range_result_release(&page);
            free(from);
            ck__list_result_release(ret);
            return ck_err_no_memory(reterr);
        }
        if (!more || full || !from) {
            ck_store_range_result_release(&page);
            break;
        }
        ck_store_range_result_release(&page);
    }
    free(from);
    ret->revision = revision;
    /* a custom resource read through another version than it is stored in: one review
     * (none when the pages were converted already, for the selectors) */
    if (kind->conversion_webhook &&
        (r = ck__convert_kvs(reg, kind, ret->kvs, ret->n_kvs, true, reterr)) < 0) {
        ck__list_result_release(ret);
        return r;
    }
    return 0;
}
