/*
 * etcd.c - the distributed backend: a real etcd (3.4+) through its v3
 * HTTP/JSON gateway (grpc-gateway), with libcurl and jansson.
 *
 * Each interface call is one POST: /v3/kv/range, /v3/kv/txn, /v3/kv/compaction
 * (puts and deletes are txns, so the helpers' compares travel with them).
 * Keys and values are base64 in JSON; 64-bit numbers arrive as strings; fields
 * with default values are omitted (a failed txn has no "succeeded", a PUT
 * event no "type").
 *
 * Failover: the endpoints are tried in turn starting with the last one that
 * answered. A connection that cannot be made is always retried on the next
 * endpoint (nothing was sent); a read is also retried after any transport
 * error or an "unavailable" answer; a write whose request may have reached
 * etcd is not retried (its outcome is unknown) but reported as CK_EIO.
 * After each full round over the endpoints we back off (50 ms doubling, at
 * most opts->etcd_attempts rounds) and then fail with a clear error.
 *
 * Watch: one thread per watch holding a streaming POST /v3/watch (one JSON
 * object per line) in a curl multi handle, so cancel can wake it with
 * curl_multi_wakeup(). When the stream breaks it reconnects (next endpoint,
 * backoff) with start_revision = last delivered revision + 1, so the caller
 * sees no gap and no duplicate; a resume below etcd's compacted revision
 * ends the watch with CK_ECOMPACTED.
 *
 * Threading: requests use a pool of curl easy handles under `lock`; each
 * watch's thread owns its handles. `compacted` is atomic.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_BODY (256u << 20)

struct easy {
    CURL *curl;
    struct easy *next;
};

struct etcd_store {
    struct ck_store base;
    char **endpoints;
    size_t n_ep;
    atomic_size_t cur; /* endpoint that answered last */
    int timeout_ms;
    int attempts;
    int64_t progress_ms;
    pthread_mutex_t lock;
    struct easy *pool;
    atomic_llong compacted;
};

static int set_b64(json_t *obj, const char *name, const char *p, size_t n)
{
    char *e = ck_base64_encode(p, n);
    if (!e)
        return CK_ENOMEM;
    int r = json_object_set_new(obj, name, json_string(e));
    free(e);
    return r == 0 ? 0 : CK_ENOMEM;
}

static int64_t num(json_t *v)
{
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    return 0;
}

static int64_t header_revision(json_t *resp)
{
    return num(json_object_get(json_object_get(resp, "header"), "revision"));
}

/* A kv from etcd's mvccpb.KeyValue JSON; NULL when out of memory or malformed. */
static struct ck_kv *parse_kv(json_t *o)
{
    if (!json_is_object(o))
        return NULL;
    const char *k = json_string_value(json_object_get(o, "key"));
    const char *v = json_string_value(json_object_get(o, "value"));
    size_t kl = 0, vl = 0;
    char *kd = ck_base64_decode(k ? k : "", &kl);
    char *vd = ck_base64_decode(v ? v : "", &vl);
    struct ck_kv *kv = NULL;
    if (kd && vd)
        kv =
            ck__kv_new(kd, kl, vd, vl, num(json_object_get(o, "create_revision")),
                       num(json_object_get(o, "mod_revision")), num(json_object_get(o, "version")));
    free(kd);
    free(vd);
    return kv;
}

static int parse_kvs(json_t *arr, const struct ck_kv ***kvs, size_t *n, struct ck_err *err)
{
    size_t cap = 0, i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        struct ck_kv *kv = parse_kv(o);
        if (!kv || ck__kvs_append(kvs, n, &cap, kv) < 0) {
            ck_kv_unref(kv);
            return ck_err_set(err, CK_EIO, "store: etcd: malformed key-value in the answer");
        }
        ck_kv_unref(kv);
    }
    return 0;
}

/* ---- requests with failover --------------------------------------------------- */

static CURL *take_easy(struct etcd_store *s)
{
    pthread_mutex_lock(&s->lock);
    struct easy *e = s->pool;
    if (e)
        s->pool = e->next;
    pthread_mutex_unlock(&s->lock);
    if (!e)
        return curl_easy_init();
    CURL *c = e->curl;
    free(e);
    return c;
}

static void give_easy(struct etcd_store *s, CURL *c)
{
    struct easy *e = malloc(sizeof(*e));
    if (!e) {
        curl_easy_cleanup(c);
        return;
    }
    e->curl = c;
    pthread_mutex_lock(&s->lock);
    e->next = s->pool;
    s->pool = e;
    pthread_mutex_unlock(&s->lock);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Maps an etcd error answer to a code; sets *retry for "try elsewhere". */
static int etcd_error(json_t *resp, long status, bool idempotent, bool *retry, struct ck_err *err)
{
    const char *msg = json_string_value(json_object_get(resp, "error"));
    if (!msg)
        msg = json_string_value(json_object_get(resp, "message"));
    int code = (int)num(json_object_get(resp, "code"));
    if (!msg)
        msg = "no message";
    *retry = false;
    if (strstr(msg, "required revision has been compacted"))
        return ck_err_set(err, CK_ECOMPACTED, "store: etcd: %s", msg);
    if (strstr(msg, "future revision") || code == 3)
        return ck_err_set(err, CK_EINVAL, "store: etcd: %s", msg);
    /* gRPC Unavailable (14): "no leader" means nothing was proposed. */
    if (code == 14 && (idempotent || strstr(msg, "no leader")))
        *retry = true;
    return ck_err_set(err, CK_EIO, "store: etcd: %s (HTTP %ld, code %d)", msg, status, code);
}

/*
 * POSTs req (taken) to /v3/<path> with failover. On success *ret is the parsed
 * answer (caller decrefs).
 */
static int call(struct etcd_store *s, const char *path, json_t *req, bool idempotent, json_t **ret,
                struct ck_err *err)
{
    char *body = ck__json_dumps(req, JSON_COMPACT, NULL);
    json_decref(req);
    if (!body)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    CURL *c = take_easy(s);
    if (!c) {
        free(body);
        return ck_err_set(err, CK_ENOMEM, "store: cannot create a curl handle");
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    int r = CK_EIO;
    char last[512] = "no endpoint tried";
    int64_t backoff = 50;
    size_t start = atomic_load(&s->cur);
    for (int round = 0; round < s->attempts; round++) {
        if (round > 0) {
            sleep_ms(backoff);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        }
        for (size_t i = 0; i < s->n_ep; i++) {
            size_t ep = (start + i) % s->n_ep;
            char url[512];
            snprintf(url, sizeof(url), "http://%s/v3/%s", s->endpoints[ep], path);
            struct ck__buf b = {.max = MAX_BODY};
            curl_easy_reset(c);
            curl_easy_setopt(c, CURLOPT_URL, url);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ck__buf_curl_write);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
            curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                             (long)(s->timeout_ms < 1000 ? s->timeout_ms : 1000));
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
            CURLcode cc = curl_easy_perform(c);
            if (cc != CURLE_OK) {
                snprintf(last, sizeof(last), "%s: %s", s->endpoints[ep], curl_easy_strerror(cc));
                free(b.p);
                if (cc == CURLE_COULDNT_CONNECT || idempotent)
                    continue;
                r = ck_err_set(err, CK_EIO,
                               "store: etcd: %s; the write may or may not have been applied", last);
                goto out;
            }
            long status = 0;
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
            json_error_t jerr;
            json_t *resp = b.p ? json_loadb(b.p, b.len, 0, &jerr) : NULL;
            free(b.p);
            if (!resp) {
                snprintf(last, sizeof(last), "%s: unparsable answer (HTTP %ld)", s->endpoints[ep],
                         status);
                r = ck_err_set(err, CK_EIO, "store: etcd: %s", last);
                if (idempotent)
                    continue;
                goto out;
            }
            if (status != 200 || json_object_get(resp, "error")) {
                bool retry;
                r = etcd_error(resp, status, idempotent, &retry, err);
                json_decref(resp);
                if (retry) {
                    snprintf(last, sizeof(last), "%s: %s", s->endpoints[ep], err ? err->msg : "");
                    continue;
                }
                goto out;
            }
            atomic_store(&s->cur, ep);
            *ret = resp;
            r = 0;
            goto out;
        }
    }
    r = ck_err_set(err, CK_EIO, "store: etcd: no endpoint answered after %d rounds (last: %s)",
                   s->attempts, last);
out:
    curl_slist_free_all(hdrs);
    give_easy(s, c);
    free(body);
    return r;
}

/* ---- kv operations -------------------------------------------------------------- */

/* Sets key and range_end of an etcd range-shaped request. */
static int set_range(json_t *o, const char *key, size_t key_len, bool prefix, const char *from,
                     size_t from_len)
{
    int r = set_b64(o, "key", from ? from : key, from ? from_len : key_len);
    if (r < 0 || !prefix)
        return r;
    char *end = malloc(key_len + 1);
    if (!end)
        return CK_ENOMEM;
    size_t n = ck__prefix_end(key, key_len, end);
    /* An open-ended prefix is range_end "\0": every key >= key. */
    r = n ? set_b64(o, "range_end", end, n) : set_b64(o, "range_end", "", 1);
    free(end);
    return r;
}

static int et_range(struct ck_store *store, const struct ck_store_range *req,
                    struct ck_store_range_result *ret, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    json_t *o = json_object();
    if (!o || set_range(o, req->key, req->key_len, req->prefix, req->from_key, req->from_key_len))
        return json_decref(o), ck_err_set(err, CK_ENOMEM, "store: out of memory");
    if (req->limit)
        json_object_set_new(o, "limit", json_integer(req->limit));
    if (req->revision)
        json_object_set_new(o, "revision", json_integer(req->revision));
    if (req->count_only)
        json_object_set_new(o, "count_only", json_true());
    json_t *resp;
    int r = call(s, "kv/range", o, true, &resp, err);
    if (r < 0)
        return r;
    struct ck_store_range_result res = {0};
    res.revision = header_revision(resp);
    res.count = num(json_object_get(resp, "count"));
    res.more = json_is_true(json_object_get(resp, "more"));
    r = parse_kvs(json_object_get(resp, "kvs"), &res.kvs, &res.n_kvs, err);
    json_decref(resp);
    if (r < 0) {
        ck_store_range_result_release(&res);
        return r;
    }
    *ret = res;
    return 0;
}

static json_t *encode_ops(const struct ck_store_op *ops, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        const struct ck_store_op *op = &ops[i];
        json_t *inner = json_object(), *wrap = json_object();
        int r = inner && wrap ? 0 : CK_ENOMEM;
        if (r == 0)
            r = set_range(inner, op->key, op->key_len, op->prefix, NULL, 0);
        if (r == 0 && op->type == CK_STORE_OP_PUT)
            r = set_b64(inner, "value", op->value, op->value_len);
        if (op->prev_kv && op->type != CK_STORE_OP_GET)
            json_object_set_new(inner, "prev_kv", json_true());
        const char *name = op->type == CK_STORE_OP_PUT      ? "request_put"
                           : op->type == CK_STORE_OP_DELETE ? "request_delete_range"
                                                            : "request_range";
        if (r < 0 || json_object_set_new(wrap, name, inner) || json_array_append_new(arr, wrap)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static const char *const CMP_TARGET[] = {"VERSION", "CREATE", "MOD", "VALUE"};
static const char *const CMP_FIELD[] = {"version", "create_revision", "mod_revision", "value"};
static const char *const CMP_RESULT[] = {"EQUAL", "NOT_EQUAL", "LESS", "GREATER"};

static int et_txn(struct ck_store *store, const struct ck_store_txn *txn,
                  struct ck_store_txn_result *ret, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    json_t *o = json_object(), *cmps = json_array();
    int r = o && cmps ? 0 : CK_ENOMEM;
    for (size_t i = 0; r == 0 && i < txn->n_cmps; i++) {
        const struct ck_store_cmp *c = &txn->cmps[i];
        json_t *j = json_object();
        if (!j || set_b64(j, "key", c->key, c->key_len) < 0) {
            json_decref(j);
            r = CK_ENOMEM;
            break;
        }
        json_object_set_new(j, "target", json_string(CMP_TARGET[c->target]));
        json_object_set_new(j, "result", json_string(CMP_RESULT[c->result]));
        if (c->target == CK_STORE_CMP_VALUE)
            r = set_b64(j, "value", c->value, c->value_len);
        else
            json_object_set_new(j, CMP_FIELD[c->target], json_integer(c->number));
        json_array_append_new(cmps, j);
    }
    json_t *then = encode_ops(txn->then_ops, txn->n_then);
    json_t *els = encode_ops(txn->else_ops, txn->n_else);
    if (r < 0 || !then || !els) {
        json_decref(o);
        json_decref(cmps);
        json_decref(then);
        json_decref(els);
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    }
    json_object_set_new(o, "compare", cmps);
    json_object_set_new(o, "success", then);
    json_object_set_new(o, "failure", els);
    bool writes = false;
    for (size_t i = 0; i < txn->n_then; i++)
        writes |= txn->then_ops[i].type != CK_STORE_OP_GET;
    for (size_t i = 0; i < txn->n_else; i++)
        writes |= txn->else_ops[i].type != CK_STORE_OP_GET;
    json_t *resp;
    if ((r = call(s, "kv/txn", o, !writes, &resp, err)) < 0)
        return r;
    struct ck_store_txn_result res = {0};
    res.succeeded = json_is_true(json_object_get(resp, "succeeded"));
    res.revision = header_revision(resp);
    size_t n_ops = res.succeeded ? txn->n_then : txn->n_else;
    res.results = calloc(n_ops ? n_ops : 1, sizeof(*res.results));
    json_t *responses = json_object_get(resp, "responses");
    if (!res.results)
        r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
    else
        res.n_results = n_ops;
    for (size_t i = 0; r == 0 && i < n_ops; i++) {
        json_t *one = json_array_get(responses, i);
        struct ck_store_op_result *out = &res.results[i];
        json_t *x;
        if ((x = json_object_get(one, "response_put"))) {
            json_t *p = json_object_get(x, "prev_kv");
            if (p) {
                size_t cap = 0;
                struct ck_kv *kv = parse_kv(p);
                if (!kv || ck__kvs_append(&out->kvs, &out->n_kvs, &cap, kv) < 0)
                    r = ck_err_set(err, CK_EIO, "store: etcd: malformed prev_kv");
                ck_kv_unref(kv);
            }
        } else if ((x = json_object_get(one, "response_delete_range"))) {
            out->deleted = num(json_object_get(x, "deleted"));
            r = parse_kvs(json_object_get(x, "prev_kvs"), &out->kvs, &out->n_kvs, err);
        } else if ((x = json_object_get(one, "response_range"))) {
            r = parse_kvs(json_object_get(x, "kvs"), &out->kvs, &out->n_kvs, err);
        }
    }
    json_decref(resp);
    if (r < 0) {
        ck_store_txn_result_release(&res);
        return r;
    }
    *ret = res;
    return 0;
}

static void note_compacted(struct etcd_store *s, int64_t rev)
{
    long long cur = atomic_load(&s->compacted);
    while (rev > cur && !atomic_compare_exchange_weak(&s->compacted, &cur, rev))
        ;
}

static int et_compact(struct ck_store *store, int64_t revision, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    json_t *o = json_object();
    if (!o)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    json_object_set_new(o, "revision", json_integer(revision));
    json_object_set_new(o, "physical", json_true());
    json_t *resp;
    int r = call(s, "kv/compaction", o, true, &resp, err);
    if (r == 0) {
        json_decref(resp);
        note_compacted(s, revision);
    }
    return r;
}

static int et_revisions(struct ck_store *store, int64_t *cur, int64_t *comp, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    json_t *o = json_object();
    if (!o || set_b64(o, "key", "", 1) < 0) /* one small key: count_only, no data */
        return json_decref(o), ck_err_set(err, CK_ENOMEM, "store: out of memory");
    json_object_set_new(o, "count_only", json_true());
    json_t *resp;
    int r = call(s, "kv/range", o, true, &resp, err);
    if (r < 0)
        return r;
    *cur = header_revision(resp);
    *comp = atomic_load(&s->compacted);
    json_decref(resp);
    return 0;
}

/* ---- watch --------------------------------------------------------------------- */

struct et_watch {
    struct ck_store_watch base;
    struct etcd_store *s;
    char *key;
    size_t key_len;
    bool prefix;
    int64_t next; /* next revision wanted; 0 until the first "created" */
    ck_store_watch_fn fn;
    void *userdata;
    atomic_bool cancel;
    atomic_bool progress;
    bool finished;
    pthread_mutex_t lock; /* guards multi (wakeup from other threads) */
    CURLM *multi;
    struct ck__buf line;
    pthread_t thread;
};

static void watch_error(struct et_watch *w, int code, int64_t compacted, const char *msg)
{
    struct ck_store_event e = {
        .type = CK_STORE_EVENT_ERROR, .error = code, .message = msg, .compact_revision = compacted};
    w->finished = true;
    w->fn(&e, w->userdata);
}

/* Handles one line of the watch stream; false once the watch has finished. */
static bool watch_line(void *arg, const char *p, size_t n)
{
    struct et_watch *w = arg;
    json_error_t jerr;
    json_t *msg = json_loadb(p, n, 0, &jerr);
    if (!msg)
        return true;
    json_t *res = json_object_get(msg, "result");
    if (!res) {
        json_decref(msg);
        return true;
    }
    int64_t rev = header_revision(res);
    json_t *events = json_object_get(res, "events");
    if (json_is_true(json_object_get(res, "canceled"))) {
        int64_t comp = num(json_object_get(res, "compact_revision"));
        if (comp > 0) {
            note_compacted(w->s, comp);
            watch_error(w, CK_ECOMPACTED, comp, "store: required revision has been compacted");
        } else {
            const char *why = json_string_value(json_object_get(res, "cancel_reason"));
            watch_error(w, CK_EIO, 0, why ? why : "store: etcd canceled the watch");
        }
    } else if (json_is_true(json_object_get(res, "created"))) {
        if (w->next == 0)
            w->next = rev + 1;
    } else if (json_array_size(events) == 0) {
        if (rev + 1 > w->next)
            w->next = rev + 1;
        struct ck_store_event e = {.type = CK_STORE_EVENT_PROGRESS, .revision = rev};
        w->fn(&e, w->userdata);
    } else {
        size_t i;
        json_t *ev;
        json_array_foreach(events, i, ev)
        {
            struct ck_kv *kv = parse_kv(json_object_get(ev, "kv"));
            struct ck_kv *prev = parse_kv(json_object_get(ev, "prev_kv"));
            if (!kv) {
                ck_kv_unref(prev);
                watch_error(w, CK_EIO, 0, "store: etcd: malformed watch event");
                break;
            }
            bool del = json_is_string(json_object_get(ev, "type")) &&
                       strcmp(json_string_value(json_object_get(ev, "type")), "DELETE") == 0;
            if (kv->mod_revision >= w->next || w->next == 0) {
                struct ck_store_event e = {.type = del ? CK_STORE_EVENT_DELETE : CK_STORE_EVENT_PUT,
                                           .revision = kv->mod_revision,
                                           .kv = kv,
                                           .prev_kv = prev};
                w->fn(&e, w->userdata);
            }
            /* events of one revision arrive in one message: move past it after */
            if (i + 1 == json_array_size(events) && kv->mod_revision + 1 > w->next)
                w->next = kv->mod_revision + 1;
            ck_kv_unref(kv);
            ck_kv_unref(prev);
        }
    }
    json_decref(msg);
    return !w->finished;
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct et_watch *w = arg;
    size_t n = size * nmemb;
    if (atomic_load(&w->cancel) || w->finished)
        return 0;
    return ck__buf_lines(&w->line, data, n, watch_line, w) ? n : 0;
}

/* One streaming connection; returns when it ends, breaks or is cancelled. */
static void watch_stream(struct et_watch *w, const char *endpoint)
{
    json_t *create = json_object(), *o = json_object();
    set_range(create, w->key, w->key_len, w->prefix, NULL, 0);
    if (w->next > 0)
        json_object_set_new(create, "start_revision", json_integer(w->next));
    json_object_set_new(create, "prev_kv", json_true());
    json_object_set_new(create, "progress_notify", json_true());
    json_object_set_new(o, "create_request", create);
    char *body = ck__json_dumps(o, JSON_COMPACT, NULL);
    json_decref(o);
    if (!body)
        return;
    char url[512];
    snprintf(url, sizeof(url), "http://%s/v3/watch", endpoint);
    CURL *c = curl_easy_init();
    if (!c) {
        free(body);
        return;
    }
    ck__buf_release(&w->line); /* what a broken stream left */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* a dead peer: no byte for 30 s (progress notifications keep it alive) */
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    pthread_mutex_lock(&w->lock);
    curl_multi_add_handle(w->multi, c);
    pthread_mutex_unlock(&w->lock);
    int running = 1;
    while (running && !atomic_load(&w->cancel) && !w->finished) {
        if (curl_multi_perform(w->multi, &running) != CURLM_OK)
            break;
        if (atomic_exchange(&w->progress, false) && w->next > 0) {
            /* The gateway cannot carry progress_request on this stream; see
             * et_watch_progress. */
        }
        if (running)
            curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    pthread_mutex_lock(&w->lock);
    curl_multi_remove_handle(w->multi, c);
    pthread_mutex_unlock(&w->lock);
    curl_easy_cleanup(c);
    free(body);
}

static void *watch_main(void *arg)
{
    struct et_watch *w = arg;
    int64_t backoff = 50;
    size_t ep = atomic_load(&w->s->cur);
    while (!atomic_load(&w->cancel) && !w->finished) {
        int64_t before = w->next;
        watch_stream(w, w->s->endpoints[ep % w->s->n_ep]);
        if (atomic_load(&w->cancel) || w->finished)
            break;
        /* The stream broke: next endpoint, back off (cut short by cancel). */
        ep++;
        backoff = w->next > before ? 50 : (backoff * 2 > 2000 ? 2000 : backoff * 2);
        for (int64_t t = 0; t < backoff && !atomic_load(&w->cancel); t += 10)
            sleep_ms(10);
    }
    return NULL;
}

static int et_watch(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                    int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                    struct ck_store_watch **ret_watch, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    struct et_watch *w = calloc(1, sizeof(*w));
    if (!w || !(w->key = malloc(key_len + 1)) || !(w->multi = curl_multi_init())) {
        if (w)
            free(w->key);
        free(w);
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    }
    w->line.max = MAX_BODY;
    if (key_len)
        memcpy(w->key, key, key_len);
    w->base.ops = &ck__etcd_ops;
    w->s = s;
    w->key_len = key_len;
    w->prefix = prefix;
    w->fn = fn;
    w->userdata = userdata;
    w->next = start_revision;
    if (start_revision == 0) {
        /* Pin "from now" to a revision so a reconnect cannot skip events. */
        int64_t cur = 0, comp = 0;
        int r = et_revisions(store, &cur, &comp, err);
        if (r < 0) {
            curl_multi_cleanup(w->multi);
            free(w->key);
            free(w);
            return r;
        }
        w->next = cur + 1;
    }
    pthread_mutex_init(&w->lock, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        curl_multi_cleanup(w->multi);
        free(w->key);
        free(w);
        return ck_err_set(err, CK_ENOMEM, "store: cannot start a watch thread");
    }
    *ret_watch = &w->base;
    return 0;
}

static int et_watch_progress(struct ck_store_watch *watch, struct ck_err *err)
{
    (void)watch;
    return ck_err_set(err, CK_EINVAL,
                      "store: etcd: progress requests cannot be sent through the HTTP gateway; "
                      "progress arrives at etcd's --experimental-watch-progress-notify-interval");
}

static void et_watch_cancel(struct ck_store_watch *watch)
{
    struct et_watch *w = (struct et_watch *)watch;
    atomic_store(&w->cancel, true);
    pthread_mutex_lock(&w->lock);
    curl_multi_wakeup(w->multi);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    curl_multi_cleanup(w->multi);
    ck__buf_release(&w->line);
    free(w->key);
    free(w);
}

/* ---- opening ------------------------------------------------------------------- */

static void et_close(struct ck_store *store)
{
    struct etcd_store *s = (struct etcd_store *)store;
    while (s->pool) {
        struct easy *e = s->pool;
        s->pool = e->next;
        curl_easy_cleanup(e->curl);
        free(e);
    }
    for (size_t i = 0; i < s->n_ep; i++)
        free(s->endpoints[i]);
    free(s->endpoints);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int et_open(const char *rest, const struct ck_store_options *opts, struct ck_store **ret,
                   struct ck_err *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    struct etcd_store *s = calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->timeout_ms = opts->etcd_timeout_ms;
    s->attempts = opts->etcd_attempts;
    s->progress_ms = opts->progress_interval_ms;
    int r = 0;
    const char *p = rest;
    while (*p && r == 0) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        if (n == 0 || n > 255 || !colon || colon == p || colon + 1 == p + n ||
            strspn(colon + 1, "0123456789") != (size_t)(p + n - colon - 1) || memchr(p, '/', n)) {
            r = ck_err_set(err, CK_EINVAL,
                           "store: bad etcd endpoint \"%.*s\" (want host:port[,host:port...])",
                           (int)n, p);
            break;
        }
        char **ne = realloc(s->endpoints, (s->n_ep + 1) * sizeof(*ne));
        if (!ne || !(ne[s->n_ep] = strndup(p, n))) {
            if (ne)
                s->endpoints = ne;
            r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            break;
        }
        s->endpoints = ne;
        s->n_ep++;
        p += n;
        if (*p == ',')
            p++;
    }
    if (r == 0 && s->n_ep == 0)
        r = ck_err_set(err, CK_EINVAL, "store: etcd:// needs at least one host:port");
    int64_t cur = 0, comp = 0;
    if (r == 0)
        r = et_revisions(&s->base, &cur, &comp, err);
    if (r < 0) {
        et_close(&s->base);
        return r;
    }
    *ret = &s->base;
    return 0;
}

const struct ck_store_ops ck__etcd_ops = {
    .name = "etcd",
    .open = et_open,
    .close = et_close,
    .range = et_range,
    .txn = et_txn,
    .watch = et_watch,
    .watch_progress = et_watch_progress,
    .watch_cancel = et_watch_cancel,
    .compact = et_compact,
    .revisions = et_revisions,
};
