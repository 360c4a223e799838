/*
 * protobuf.c - the API server's side of application/vnd.kubernetes.protobuf.
 *
 * The codec is lib/api/protobuf.c; this file is the small hook between it
 * and the handlers, kept apart so that media-type negotiation can call it
 * from one place:
 *
 * - ck__proto_body_to_json(): a request body sent as protobuf becomes the
 *   JSON text the rest of the write path decodes, as if the client had sent
 *   JSON. A kind without a protobuf message (a custom resource) answers 415,
 *   as Kubernetes does.
 * - ck__send_proto(), ck__json_to_proto(): a response the handlers built as
 *   JSON (served bytes, a Status) goes out as protobuf, its message found
 *   from its apiVersion and kind; ck__proto_list() assembles a list from its
 *   items' encodings; watch.c frames each event's encoding.
 *
 * The store keeps JSON, so a protobuf answer is JSON parsed and encoded
 * again; each encoding is kept in a bounded cache keyed by the JSON it was
 * made from, so one object is encoded once for all its readers and watchers
 * (bench/apiserver/protobuf.py measures both beside JSON).
 *
 * Threading: the cache is shared by every request thread, under cache_lock;
 * the rest works on the request's own values.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

bool ck__is_proto_media_type(const char *content_type)
{
    static const char media[] = CK_PROTOBUF_MEDIA_TYPE;
    return content_type && strncasecmp(content_type, media, sizeof(media) - 1) == 0 &&
           (content_type[sizeof(media) - 1] == '\0' || content_type[sizeof(media) - 1] == ';' ||
            content_type[sizeof(media) - 1] == ' ');
}

int ck__proto_body_to_json(const char *schema, const char *body, size_t len, char **ret_json,
                           size_t *ret_len, struct ck_err *reterr)
{
    if (!ck_proto_has_message(schema))
        return ck_err_status(
            reterr, "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json");
    json_t *obj = NULL;
    int r = ck_proto_decode(schema, body ? body : "", len, &obj, reterr);
    if (r < 0)
        return r;
    size_t n = 0;
    char *text = ck__json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER, &n);
    json_decref(obj);
    if (!text)
        return ck_err_no_memory(reterr);
    *ret_json = text;
    *ret_len = n;
    return 0;
}

/*
 * The encodings already made, keyed by the JSON text they were made from
 * (served bytes carry their resourceVersion, so a changed object is another
 * key and nothing needs invalidating). One encoding serves every watcher
 * of an event and every later GET or LIST of an unchanged object, as
 * Kubernetes' watch cache keeps each object's encoding. Bounded by
 * CACHE_MAX_BYTES (keys, encodings and entry overhead): when an entry would
 * pass it, the cache is emptied first. Process-wide, under cache_lock.
 */
#define CACHE_MAX_BYTES (32u << 20)
#define ENTRY_OVERHEAD  64u /* the entry header and allocator slack, roughly */

struct cached {
    size_t len;
    char bytes[]; /* the encoding: "k8s\0", runtime.Unknown */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ck__strmap cache;
static size_t cache_bytes;

/* A copy of json's cached encoding (the caller frees it), or NULL. */
static char *cache_get(const char *json, size_t *ret_len)
{
    char *copy = NULL;
    pthread_mutex_lock(&cache_lock);
    struct ck__strmap_entry *e = ck__strmap_find(&cache, json);
    if (e) {
        const struct cached *c = e->value;
        copy = ck__malloc(c->len ? c->len : 1);
        if (copy) {
            memcpy(copy, c->bytes, c->len);
            *ret_len = c->len;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return copy;
}

/* Keeps a copy of an encoding of json; running out of memory only leaves it out. */
static void cache_put(const char *json, size_t json_len, const char *data, size_t len)
{
    size_t cost = json_len + len + sizeof(struct cached) + ENTRY_OVERHEAD;
    if (cost > CACHE_MAX_BYTES / 16)
        return; /* one object must not push the others out */
    pthread_mutex_lock(&cache_lock);
    if (cache_bytes + cost > CACHE_MAX_BYTES) {
        ck__strmap_release(&cache);
        cache_bytes = 0;
    }
    if (!ck__strmap_find(&cache, json)) {
        struct ck__strmap_entry *e =
            ck__strmap_insert(&cache, json, sizeof(struct cached) + (len ? len : 1));
        if (e) {
            struct cached *c = e->value;
            c->len = len;
            memcpy(c->bytes, data, len);
            cache_bytes += cost;
        }
    }
    pthread_mutex_unlock(&cache_lock);
}

int ck__json_to_proto(const char *json, size_t len, char **ret_data, size_t *ret_len,
                      struct ck_err *reterr)
{
    /* the key is the text: only a NUL-terminated one without NULs can be one */
    bool cacheable = json[len] == '\0' && strlen(json) == len;
    if (cacheable && (*ret_data = cache_get(json, ret_len)))
        return 0;
    json_t *obj = NULL;
    int r = ck_json_loadb(json, len, 0, &obj, NULL);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0)
        return ck_err_internal(reterr, "a served object is not JSON");
    char message[256];
    r = ck_proto_message_of(obj, message, sizeof(message));
    if (r == 0)
        r = ck_proto_encode(message, obj, ret_data, ret_len, reterr);
    else
        ck_err_status(reterr, "NotAcceptable", "%s has no protobuf form",
                      json_string_value(json_object_get(obj, "kind")));
    json_decref(obj);
    if (r == 0 && cacheable)
        cache_put(json, len, *ret_data, *ret_len);
    return r;
}

int ck__proto_list(const struct ck_kind *kind, const char *rv, const char *continue_token,
                   char *const *items, const size_t *item_lens, size_t n, char **ret_data,
                   size_t *ret_len, struct ck_err *reterr)
{
    char message[256], api_version[CK_API_VERSION_MAX];
    size_t prefix = strlen(kind->schema) - strlen(kind->kind);
    if (prefix >= sizeof(message) - strlen(kind->list_kind) ||
        strcmp(kind->schema + prefix, kind->kind) != 0)
        return ck_err_status(reterr, "NotAcceptable", "%s has no protobuf list", kind->kind);
    snprintf(message, sizeof(message), "%.*s%s", (int)prefix, kind->schema, kind->list_kind);
    ck_kind_api_version(kind, api_version, sizeof(api_version));
    char **encoded = ck__calloc(n + 1, sizeof(*encoded));
    size_t *lens = ck__calloc(n + 1, sizeof(*lens));
    json_t *meta = json_pack("{s:s}", "resourceVersion", rv);
    int r = encoded && lens && meta &&
                    (!continue_token ||
                     json_object_set_new(meta, "continue", json_string(continue_token)) == 0)
                ? 0
                : ck_err_no_memory(reterr);
    for (size_t i = 0; r == 0 && i < n; i++)
        r = ck__json_to_proto(items[i], item_lens[i], &encoded[i], &lens[i], reterr);
    if (r == 0)
        r = ck_proto_encode_list(message, api_version, kind->list_kind, meta,
                                 (const char *const *)encoded, lens, n, ret_data, ret_len, reterr);
    for (size_t i = 0; encoded && i < n; i++)
        free(encoded[i]);
    free(encoded);
    free(lens);
    json_decref(meta);
    return r;
}

enum ck__res ck__send_proto(struct ck__req *req, unsigned status, char *body, size_t len,
                            const struct ck_warnings *warnings)
{
    char *data = NULL;
    size_t n = 0;
    struct ck_err err = {0};
    int r = ck__json_to_proto(body, len, &data, &n, &err);
    free(body);
    if (r < 0)
        return ck__fail(req, &err);
    return ck__send_bytes(req, status, CK_PROTOBUF_MEDIA_TYPE, data, n, warnings);
}
