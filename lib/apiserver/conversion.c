/*
 * conversion.c - the conversion webhooks of custom resources: objects of a
 * CustomResourceDefinition with spec.conversion.strategy Webhook are converted between
 * its versions by an HTTPS service the definition names.
 *
 * Mirrors k8s.io/apiextensions-apiserver 1.32 pkg/apiserver/conversion
 * (webhook_converter.go: the ConversionReview sent and the checks of the one received;
 * restoreObjectMeta and validateConvertedObject, with their words). A review carries a
 * uid, the desiredAPIVersion and the objects not already in that version (a list's
 * objects go in one review); it is apiextensions.k8s.io/v1, or v1beta1 when the
 * definition's conversionReviewVersions name that first. The answer must be a
 * ConversionReview of the review's version with the same uid (v1beta1 answers were
 * never checked for either), result.status Success, as many convertedObjects as were
 * sent, each of the desired apiVersion and of the same kind, name, namespace and uid as
 * the object sent; of its metadata only labels and annotations are taken, the rest is
 * the original's. Any failure is the request's failure: `conversion webhook for
 * stable.example.com/v1, Kind=CronTab failed: <why>`, a 500.
 *
 * Where it runs (registry.c, list.c, watch.c): objects are stored in the storage
 * version, so a write converts the object to it before it is stored, and every read
 * (get, list, a watch's events, the answer to a write) converts what it read to the
 * version asked for. A kind without a webhook never comes here (one pointer test) and
 * a stored object already in the desired version is recognised by its first bytes,
 * without decoding it.
 *
 * Threading: no state of its own; runs on any request thread at once.
 *
 * Tested by tests/apiserver/test_crd_conversion.c and tests/e2e/test_crd_conversion.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define TIMEOUT_SECONDS 30 /* the webhook client's default, as Kubernetes gives it */

/* Whether stored bytes (our stored form: apiVersion first) are of api_version. */
static bool in_version(const char *stored, size_t len, const char *api_version)
{
    static const char head[] = "{\"apiVersion\":\"";
    size_t n = strlen(api_version);
    return len > sizeof(head) - 1 + n && memcmp(stored, head, sizeof(head) - 1) == 0 &&
           memcmp(stored + sizeof(head) - 1, api_version, n) == 0 &&
           stored[sizeof(head) - 1 + n] == '"';
}

static const char *str_of(const json_t *obj, const char *member)
{
    const char *s = json_string_value(json_object_get(obj, member));
    return s ? s : "";
}

static const char *meta_str(const json_t *obj, const char *member)
{
    return str_of(json_object_get(obj, "metadata"), member);
}

/* The review version to send: the first of conversionReviewVersions we speak. */
static const char *review_version(const json_t *webhook)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(webhook, "conversionReviewVersions"), i, v)
    {
        const char *s = json_string_value(v);
        if (s && (strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0))
            return s;
    }
    return NULL;
}

/*
 * getConvertedObjectsFromResponse: true with *ret the converted objects (NULL: none
 * given), or false with why filled.
 */
static bool converted_objects(const json_t *answer, const char *version, const char *uid,
                              const json_t **ret, struct ck__webhook_why *why)
{
    const json_t *resp = json_object_get(answer, "response");
    if (strcmp(version, "v1") == 0) {
        const char *av = str_of(answer, "apiVersion"), *kind = str_of(answer, "kind");
        if (strcmp(av, "apiextensions.k8s.io/v1") != 0 || strcmp(kind, "ConversionReview") != 0) {
            snprintf(why->text, sizeof(why->text),
                     "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                     "got %s%s, Kind=%s",
                     strchr(av, '/') ? "" : "/", av, kind);
            return false;
        }
    }
    if (!json_is_object(resp)) {
        snprintf(why->text, sizeof(why->text), "no response provided");
        return false;
    }
    if (strcmp(version, "v1") == 0 && strcmp(str_of(resp, "uid"), uid) != 0) {
        snprintf(why->text, sizeof(why->text), "expected response.uid=\"%s\", got \"%s\"", uid,
                 str_of(resp, "uid"));
        return false;
    }
    const json_t *result = json_object_get(resp, "result");
    if (strcmp(str_of(result, "status"), "Success") != 0) {
        const char *message = str_of(result, "message");
        if (*message)
            snprintf(why->text, sizeof(why->text), "%s", message);
        else
            snprintf(why->text, sizeof(why->text), "response.result.status was '%s', not 'Success'",
                     str_of(result, "status"));
        return false;
    }
    *ret = json_object_get(resp, "convertedObjects");
    return true;
}

/* validateConvertedObject: what the webhook may not change. 0, or -1 with why filled. */
static int same_identity(const json_t *in, const json_t *out, struct ck__webhook_why *why)
{
    static const struct {
        const char *member, *word;
        bool meta;
    } checks[] = {{"kind", "kind", false},
                  {"name", "name", true},
                  {"namespace", "namespace", true},
                  {"uid", "UID", true}};
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        const char *a =
            checks[i].meta ? meta_str(in, checks[i].member) : str_of(in, checks[i].member);
        const char *b =
            checks[i].meta ? meta_str(out, checks[i].member) : str_of(out, checks[i].member);
        if (strcmp(a, b) != 0) {
            snprintf(why->text, sizeof(why->text), "must have the same %s: %s != %s",
                     checks[i].word, a, b);
            return -1;
        }
    }
    return 0;
}

/* The words of errs as an aggregate: one error as it is, more in brackets. */
static void aggregate(const struct ck_field_errors *errs, struct ck__webhook_why *why)
{
    size_t at = 0;
    why->text[0] = '\0';
    for (size_t i = 0; i < errs->len && at < sizeof(why->text); i++) {
        char *s = ck_field_error_string(&errs->items[i]);
        int n = snprintf(why->text + at, sizeof(why->text) - at, "%s%s%s",
                         i == 0 && errs->len > 1 ? "[" : "", i ? ", " : "", s ? s : "");
        free(s);
        at += n > 0 ? (size_t)n : 0;
    }
    if (errs->len > 1 && at + 1 < sizeof(why->text))
        snprintf(why->text + at, sizeof(why->text) - at, "]");
}

/*
 * restoreObjectMeta: converted's metadata becomes a copy of original's, but for the
 * labels and annotations the webhook answered (validated when they changed). 0, -1
 * with why filled, or CK_ENOMEM.
 */
static int restore_meta(const json_t *original, json_t *converted, struct ck__webhook_why *why)
{
    json_t *answered = json_object_get(converted, "metadata");
    if (!answered) {
        snprintf(why->text, sizeof(why->text), "missing metadata in converted object");
        return -1;
    }
    if (!json_is_object(answered)) {
        snprintf(why->text, sizeof(why->text), "invalid metadata of type %s in converted object",
                 json_is_array(answered) ? "[]interface {}" : "string");
        return -1;
    }
    json_incref(answered);
    json_t *meta = json_deep_copy(json_object_get(original, "metadata"));
    if (!meta)
        meta = json_object();
    int r = meta ? 0 : CK_ENOMEM;
    static const char *const fields[] = {"labels", "annotations"};
    for (size_t f = 0; r == 0 && f < 2; f++) {
        json_t *given = json_object_get(answered, fields[f]);
        if (!given || json_is_null(given)) {
            json_object_del(meta, fields[f]);
            continue;
        }
        if (!json_is_object(given)) {
            snprintf(why->text, sizeof(why->text),
                     "invalid metadata.%s of type %s in converted object", fields[f],
                     json_is_array(given) ? "[]interface {}" : "string");
            r = -1;
            break;
        }
        const json_t *had = json_object_get(meta, fields[f]);
        bool changed = json_object_size(had) != json_object_size(given);
        const char *key;
        json_t *value;
        json_object_foreach(given, key, value)
        {
            if (!json_is_string(value)) {
                snprintf(why->text, sizeof(why->text),
                         "metadata.%s[%s] must be a string, but is %s in converted object",
                         fields[f], key, json_is_integer(value) ? "int64" : "float64");
                r = -1;
                break;
            }
            changed |= !json_equal(json_object_get(had, key), value);
        }
        if (r == 0 && changed) { /* ValidateLabels, ValidateAnnotations' keys */
            struct ck_field_errors errs = {0};
            const char *path = f == 0 ? "metadata.labels" : "metadata.annotation";
            json_object_foreach(given, key, value)
            {
                ck_validate_qualified_name(key, path, &errs);
                if (f == 0)
                    ck_validate_label_value(json_string_value(value), path, &errs);
            }
            if (errs.len) {
                aggregate(&errs, why);
                r = -1;
            }
            ck_field_errors_release(&errs);
        }
        if (r == 0 && json_object_set(meta, fields[f], given) < 0)
            r = CK_ENOMEM;
    }
    if (r == 0 && json_object_set_new(converted, "metadata", meta) < 0)
        r = CK_ENOMEM;
    else if (r != 0)
        json_decref(meta);
    json_decref(answered);
    return r;
}

/* "group/version, Kind=kind", as Go prints a GroupVersionKind. */
static void gvk_text(const char *api_version, const char *kind, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s, Kind=%s", strchr(api_version, '/') ? "" : "/", api_version, kind);
}

int ck__convert_objects(struct ck__registry *reg, const struct ck_kind *kind, json_t *objects,
                        const char *desired, bool list, struct ck_err *reterr)
{
    const json_t *webhook = kind->conversion_webhook;
    size_t n = json_array_size(objects), n_send = 0;
    json_t *send = json_array();
    if (!send)
        return ck_err_no_memory(reterr);
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        if (strcmp(str_of(obj, "apiVersion"), desired) != 0 && json_array_append(send, obj) < 0) {
            json_decref(send);
            return ck_err_no_memory(reterr);
        }
    }
    n_send = json_array_size(send);
    if (n_send == 0) {
        json_decref(send);
        return 0;
    }
    bool single = !list && n == 1;
    const json_t *first = json_array_get(send, 0);
    char gvk[CK_API_VERSION_MAX + 300];
    gvk_text(str_of(first, "apiVersion"), single ? kind->kind : kind->list_kind, gvk, sizeof(gvk));
    const char *version = review_version(webhook);
    if (!version) {
        json_decref(send);
        return ck_err_status(reterr, "InternalError", "no supported conversion review versions");
    }
    char uid[40], review_av[64];
    ck_uuid(uid);
    snprintf(review_av, sizeof(review_av), "apiextensions.k8s.io/%s", version);
    json_t *review = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}}", "apiVersion", review_av, "kind",
                               "ConversionReview", "request", "uid", uid, "desiredAPIVersion",
                               desired, "objects", send);
    if (!review)
        return ck_err_no_memory(reterr);
    json_t *answer = NULL;
    struct ck__webhook_why why = {""};
    int r = ck__webhook_post(reg, json_object_get(webhook, "clientConfig"), TIMEOUT_SECONDS, review,
                             "ConversionReview", NULL, &answer, &why);
    json_decref(review);
    const json_t *converted = NULL;
    if (r < 0 || !converted_objects(answer, version, uid, &converted, &why)) {
        json_decref(answer);
        /* the client's words without the admission webhooks' prefix, as Kubernetes words them */
        static const char call_prefix[] = "failed to call webhook: ";
        if (strncmp(why.text, call_prefix, sizeof(call_prefix) - 1) == 0)
            memmove(why.text, why.text + sizeof(call_prefix) - 1,
                    strlen(why.text) - (sizeof(call_prefix) - 1) + 1);
        CK_LOGS(0, "Conversion webhook failed", "kind", gvk, "err", why.text);
        return ck_err_status(reterr, "InternalError", "conversion webhook for %s failed: %s", gvk,
                             why.text);
    }
    if (json_array_size(converted) != n_send) {
        r = ck_err_status(reterr, "InternalError",
                          "conversion webhook for %s returned %zu objects, expected %zu", gvk,
                          json_array_size(converted), n_send);
        json_decref(answer);
        return r;
    }
    /* the checks, then each answered object in the place of the one it converts */
    size_t at = 0;
    r = 0;
    for (i = 0; i < n && r == 0; i++) {
        const json_t *original = json_array_get(objects, i);
        if (strcmp(str_of(original, "apiVersion"), desired) == 0)
            continue;
        json_t *out = json_deep_copy(json_array_get(converted, at++));
        char where[64];
        if (single)
            snprintf(where, sizeof(where), "object at index 0");
        else
            snprintf(where, sizeof(where), "converted object at index %zu", at);
        if (!out) {
            r = ck_err_no_memory(reterr);
        } else if (!json_is_object(out)) {
            r = ck_err_status(reterr, "InternalError",
                              "conversion webhook for %s returned invalid %s: the object is not "
                              "a JSON object",
                              gvk, where);
        } else if (strcmp(str_of(out, "apiVersion"), desired) != 0) {
            r = ck_err_status(reterr, "InternalError",
                              "conversion webhook for %s returned invalid %s: invalid groupVersion "
                              "(expected %s, received %s)",
                              gvk, where, desired, str_of(out, "apiVersion"));
        } else if (strcmp(str_of(out, "kind"), str_of(original, "kind")) != 0) {
            r = ck_err_status(reterr, "InternalError",
                              "conversion webhook for %s returned invalid %s: invalid kind "
                              "(expected %s, received %s)",
                              gvk, where, str_of(original, "kind"), str_of(out, "kind"));
        } else if (same_identity(original, out, &why) < 0) {
            if (single)
                snprintf(where, sizeof(where), "object");
            r = ck_err_status(reterr, "InternalError",
                              "conversion webhook for %s returned invalid %s: %s", gvk, where,
                              why.text);
        } else if ((r = restore_meta(original, out, &why)) != 0) {
            if (r == CK_ENOMEM)
                r = ck_err_no_memory(reterr);
            else if (single)
                r = ck_err_status(reterr, "InternalError",
                                  "conversion webhook for %s returned invalid metadata: %s", gvk,
                                  why.text);
            else
                r = ck_err_status(reterr, "InternalError",
                                  "conversion webhook for %s returned invalid metadata in object "
                                  "at index %zu: %s",
                                  gvk, at, why.text);
        }
        if (r == 0 && json_array_set(objects, i, out) < 0)
            r = ck_err_no_memory(reterr);
        json_decref(out);
    }
    json_decref(answer);
    return r;
}

/* A new kv like kv but holding obj in stored form; NULL when out of memory. */
static const struct ck_kv *kv_with(const struct ck_kv *kv, const json_t *obj)
{
    size_t len = 0;
    char *stored = ck__encode_stored(obj, NULL, &len);
    const struct ck_kv *out = stored ? ck_kv_new(kv->key, kv->key_len, stored, len,
                                                 kv->create_revision, kv->mod_revision, kv->version)
                                     : NULL;
    free(stored);
    return out;
}

int ck__convert_kvs(struct ck__registry *reg, const struct ck_kind *kind, const struct ck_kv **kvs,
                    size_t n, bool list, struct ck_err *reterr)
{
    if (!kind->conversion_webhook || n == 0)
        return 0;
    char desired[CK_API_VERSION_MAX];
    ck_kind_api_version(kind, desired, sizeof(desired));
    size_t n_send = 0;
    for (size_t i = 0; i < n; i++)
        n_send += kvs[i]->value_len && !in_version(kvs[i]->value, kvs[i]->value_len, desired);
    if (n_send == 0)
        return 0; /* everything is in the version asked for: nothing decoded */
    json_t *objects = json_array();
    size_t *index = ck__calloc(n_send, sizeof(*index));
    int r = objects && index ? 0 : CK_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        if (!kvs[i]->value_len || in_version(kvs[i]->value, kvs[i]->value_len, desired))
            continue;
        json_t *obj = NULL;
        if (ck_json_loadb(kvs[i]->value, kvs[i]->value_len, 0, &obj, NULL) < 0 ||
            json_array_append_new(objects, obj) < 0)
            r = CK_ENOMEM;
        index[k++] = i;
    }
    if (r < 0) {
        json_decref(objects);
        free(index);
        return ck_err_no_memory(reterr);
    }
    r = ck__convert_objects(reg, kind, objects, desired, list, reterr);
    for (size_t j = 0; r == 0 && j < k; j++) {
        const struct ck_kv *next = kv_with(kvs[index[j]], json_array_get(objects, j));
        if (!next) {
            r = ck_err_no_memory(reterr);
            break;
        }
        ck_kv_unref(kvs[index[j]]);
        kvs[index[j]] = next;
    }
    json_decref(objects);
    free(index);
    return r;
}

int ck__convert_for_store(struct ck__registry *reg, const struct ck_kind *kind, const json_t *obj,
                          json_t **ret, struct ck_err *reterr)
{
    *ret = NULL;
    if (!kind->conversion_webhook || !kind->storage_api_version ||
        strcmp(str_of(obj, "apiVersion"), kind->storage_api_version) == 0)
        return 0;
    json_t *objects = json_array();
    if (!objects || json_array_append_new(objects, json_deep_copy(obj)) < 0) {
        json_decref(objects);
        return ck_err_no_memory(reterr);
    }
    int r = ck__convert_objects(reg, kind, objects, kind->storage_api_version, false, reterr);
    if (r == 0)
        *ret = json_incref(json_array_get(objects, 0));
    json_decref(objects);
    return r;
}
