/*
 * etcd.c - the distributed backend: a real etcd (3.4+) through its gRPC API
 * (etcdserverpb), over HTTP/2 without TLS (h2c, prior knowledge) on etcd's
 * client port (grpc.c).
 *
 * Each interface call is one unary call: KV/Range, KV/Txn, KV/Compact (puts
 * and deletes are txns, so the helpers' compares travel with them). The
 * messages are written and read here on libckube-util's protobuf wire layer
 * with the field numbers of etcd's rpc.proto and kv.proto; a gRPC message is
 * a 5-byte prefix (compressed flag, big-endian length) and the answer's
 * outcome is the grpc-status trailer (or header, for an answer without a
 * body). etcd's JSON gateway (/v3/...) does the same work at about twice
 * etcd's CPU (docs/benchmarks.md).
 *
 * Failover: the endpoints are tried in turn starting with the last one that
 * answered. A connection that cannot be made is always retried on the next
 * endpoint (nothing was sent); a read is also retried after any transport
 * error or an "unavailable" answer; a write whose request may have reached
 * etcd is not retried (its outcome is unknown) but reported as CK_EIO,
 * unless etcd refused it unprocessed (HTTP/2 REFUSED_STREAM, after a GOAWAY).
 * After each full round over the endpoints we back off (50 ms doubling, at
 * most opts->etcd_attempts rounds) and then fail with a clear error.
 *
 * Watch: one thread per watch holding a streaming Watch/Watch call on a
 * connection of its own: the create request, then a progress request
 * whenever ck_store_watch_progress() asks (its answer is a WatchResponse
 * without events: a PROGRESS event). Cancel and progress wake the thread
 * through an eventfd. When the stream breaks it reconnects (next endpoint,
 * backoff) with start_revision = last delivered revision + 1, so the caller
 * sees no gap and no duplicate; a resume below etcd's compacted revision
 * ends the watch with CK_ECOMPACTED.
 *
 * Threading: calls take connections from a pool under `lock`; each watch's
 * thread owns its connection. `compacted` is atomic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_BODY (256u << 20)
/* an answer's bytes: one message and its 5-byte gRPC prefix */
#define MAX_FRAME (MAX_BODY + 5)

/* An idle gRPC connection to endpoints[ep]. */
struct pooled {
    struct ck__grpc_conn *conn;
    size_t ep;
    struct pooled *next;
};

struct etcd_store {
    struct ck_store base;
    char **endpoints;
    size_t n_ep;
    atomic_size_t cur; /* endpoint that answered last */
    int timeout_ms;
    int attempts;
    pthread_mutex_t lock;
    struct pooled *pool;
    atomic_llong compacted;
};

/* ---- etcd's messages (etcdserverpb, mvccpb) ------------------------------------ */

/* Field numbers from etcd's api/etcdserverpb/rpc.proto and api/mvccpb/kv.proto, by message. */
enum { HEADER_REVISION = 3 };                                                 /* ResponseHeader */
enum { KV_KEY = 1, KV_CREATE = 2, KV_MOD = 3, KV_VERSION = 4, KV_VALUE = 5 }; /* KeyValue */
enum { RANGE_KEY = 1, RANGE_END = 2, RANGE_LIMIT = 3, RANGE_REVISION = 4, RANGE_COUNT_ONLY = 9 };
enum { RANGE_RESP_HEADER = 1, RANGE_RESP_KVS = 2, RANGE_RESP_MORE = 3, RANGE_RESP_COUNT = 4 };
enum { PUT_KEY = 1, PUT_VALUE = 2, PUT_PREV_KV = 4, PUT_RESP_PREV_KV = 2 };
enum { DELETE_KEY = 1, DELETE_END = 2, DELETE_PREV_KV = 3 };
enum { DELETE_RESP_DELETED = 2, DELETE_RESP_PREV_KVS = 3 };
enum { OP_RANGE = 1, OP_PUT = 2, OP_DELETE = 3 }; /* RequestOp and ResponseOp */
/* Compare: the numbers of version, create_revision, mod_revision follow our targets' order. */
enum { CMP_RESULT = 1, CMP_TARGET = 2, CMP_KEY = 3, CMP_VERSION = 4, CMP_VALUE = 7 };
enum { TXN_COMPARE = 1, TXN_SUCCESS = 2, TXN_FAILURE = 3 };
enum { TXN_RESP_HEADER = 1, TXN_RESP_SUCCEEDED = 2, TXN_RESP_RESPONSES = 3 };
enum { COMPACT_REVISION = 1, COMPACT_PHYSICAL = 2 };
enum { WATCH_CREATE = 1, WATCH_PROGRESS = 3 }; /* WatchRequest */
enum {
    WCREATE_KEY = 1,
    WCREATE_END = 2,
    WCREATE_START = 3,
    WCREATE_PROGRESS = 4,
    WCREATE_PREV = 6
};
enum {
    WRESP_HEADER = 1,
    WRESP_CREATED = 3,
    WRESP_CANCELED = 4,
    WRESP_COMPACT = 5,
    WRESP_REASON = 6
};
enum { WRESP_EVENTS = 11 };
enum { EVENT_TYPE = 1, EVENT_KV = 2, EVENT_PREV_KV = 3 }; /* Event; its type DELETE is 1 */

/* Compare.target numbers are our CK_STORE_CMP_* in order; Compare.result's are not. */
static const uint64_t CMP_RESULT_NUMBER[] = {[CK_STORE_CMP_EQUAL] = 0,
                                             [CK_STORE_CMP_GREATER] = 1,
                                             [CK_STORE_CMP_LESS] = 2,
                                             [CK_STORE_CMP_NOT_EQUAL] = 3};

/* A key (or from, when given) as field key_no and, for a prefix, its range_end as end_no. */
static void put_range(struct ck__buf *b, uint32_t key_no, uint32_t end_no, const char *key,
                      size_t key_len, bool prefix, const char *from, size_t from_len)
{
    ck__pb_put_bytes(b, key_no, from ? from : key, from ? from_len : key_len);
    if (!prefix)
        return;
    char *end = malloc(key_len + 1);
    if (!end) {
        b->err = b->err ? b->err : CK_ENOMEM;
        return;
    }
    size_t n = ck__prefix_end(key, key_len, end);
    /* An open-ended prefix is range_end "\0": every key >= key. */
    ck__pb_put_bytes(b, end_no, n ? end : "", n ? n : 1);
    free(end);
}

/* ResponseHeader.revision. */
static int64_t header_revision(struct ck__pb_reader r)
{
    uint32_t no;
    unsigned wire;
    uint64_t v = 0;
    while (ck__pb_next(&r, &no, &wire) == 1) {
        if (no == HEADER_REVISION && wire == CK__PB_VARINT) {
            if (!ck__pb_get_varint(&r, &v))
                return 0;
        } else if (!ck__pb_skip(&r, wire)) {
            return 0;
        }
    }
    return (int64_t)v;
}

/* The length-delimited field's content at r, or false. */
static bool sub(struct ck__pb_reader *r, unsigned wire, struct ck__pb_reader *ret)
{
    return wire == CK__PB_LEN && ck__pb_get_len(r, ret);
}

static bool varint(struct ck__pb_reader *r, unsigned wire, uint64_t *ret)
{
    return wire == CK__PB_VARINT && ck__pb_get_varint(r, ret);
}

/* A kv from an mvccpb.KeyValue; NULL when out of memory or malformed. */
static struct ck_kv *parse_kv(struct ck__pb_reader r)
{
    static const unsigned char none[1];
    struct ck__pb_reader key = {none, none}, value = {none, none}, s;
    uint64_t create = 0, mod = 0, version = 0, *num;
    uint32_t no;
    unsigned wire;
    int more;
    while ((more = ck__pb_next(&r, &no, &wire)) == 1) {
        bool ok;
        num = no == KV_CREATE ? &create : no == KV_MOD ? &mod : no == KV_VERSION ? &version : NULL;
        if (no == KV_KEY || no == KV_VALUE) {
            if ((ok = sub(&r, wire, &s)))
                *(no == KV_KEY ? &key : &value) = s;
        } else {
            ok = num ? varint(&r, wire, num) : ck__pb_skip(&r, wire);
        }
        if (!ok)
            return NULL;
    }
    if (more < 0)
        return NULL;
    return ck__kv_new((const char *)key.p, (size_t)(key.end - key.p), (const char *)value.p,
                      (size_t)(value.end - value.p), (int64_t)create, (int64_t)mod,
                      (int64_t)version);
}

static int append_kv(struct ck__pb_reader r, const struct ck_kv ***kvs, size_t *n, size_t *cap,
                     struct ck_err *err)
{
    struct ck_kv *kv = parse_kv(r);
    if (!kv || ck__kvs_append(kvs, n, cap, kv) < 0) {
        ck_kv_unref(kv);
        return ck_err_set(err, CK_EIO, "store: etcd: malformed key-value in the answer");
    }
    ck_kv_unref(kv);
    return 0;
}

static int malformed(struct ck_err *err)
{
    return ck_err_set(err, CK_EIO, "store: etcd: malformed answer");
}

/* ---- requests with failover --------------------------------------------------- */

/* An idle connection to endpoint ep that can still carry a call, or a new one; NULL with why. */
static struct ck__grpc_conn *take_conn(struct etcd_store *s, size_t ep, char *why, size_t why_len)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct pooled **pp = &s->pool;
        while (*pp && (*pp)->ep != ep)
            pp = &(*pp)->next;
        struct pooled *p = *pp;
        if (p)
            *pp = p->next;
        pthread_mutex_unlock(&s->lock);
        if (!p)
            break;
        struct ck__grpc_conn *c = p->conn;
        free(p);
        if (ck__grpc_usable(c))
            return c;
        ck__grpc_close(c);
    }
    struct ck__grpc_conn *c = NULL;
    int t = s->timeout_ms < 1000 ? s->timeout_ms : 1000;
    return ck__grpc_connect(s->endpoints[ep], t, &c, why, why_len) == 0 ? c : NULL;
}

/* Pools a connection a call succeeded on (take_conn checks it before its next call). */
static void give_conn(struct etcd_store *s, size_t ep, struct ck__grpc_conn *c)
{
    struct pooled *p = malloc(sizeof(*p));
    if (!p) {
        ck__grpc_close(c);
        return;
    }
    p->conn = c;
    p->ep = ep;
    pthread_mutex_lock(&s->lock);
    p->next = s->pool;
    s->pool = p;
    pthread_mutex_unlock(&s->lock);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Maps a failed call's gRPC status to a code; sets *retry for "try elsewhere". */
static int etcd_error(const struct ck__grpc_answer *st, bool idempotent, bool *retry,
                      struct ck_err *err)
{
    const char *msg = st->message[0] ? st->message : "no message";
    *retry = false;
    if (strstr(msg, "required revision has been compacted"))
        return ck_err_set(err, CK_ECOMPACTED, "store: etcd: %s", msg);
    /* InvalidArgument (3); a future revision is OutOfRange. */
    if (strstr(msg, "future revision") || st->status == 3)
        return ck_err_set(err, CK_EINVAL, "store: etcd: %s", msg);
    /* Unavailable (14): "no leader" means nothing was proposed. */
    if (st->status == 14 && (idempotent || strstr(msg, "no leader")))
        *retry = true;
    return ck_err_set(err, CK_EIO, "store: etcd: %s (gRPC code %d)", msg, st->status);
}

/* The message length in a gRPC frame's 5-byte prefix (after its compressed flag). */
static size_t frame_length(const unsigned char *p)
{
    return (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
}

/*
 * Calls /etcdserverpb.<method> with the message in req (released) and the
 * failover above. On success *ret holds the answer's frame and *msg reads its
 * message (the caller releases *ret).
 */
static int call(struct etcd_store *s, const char *method, struct ck__buf *req, bool idempotent,
                struct ck__buf *ret, struct ck__pb_reader *msg, struct ck_err *err)
{
    if (req->err) {
        ck__buf_release(req);
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    }
    char path[64], why[256];
    snprintf(path, sizeof(path), "/etcdserverpb.%s", method);
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
            struct ck__grpc_conn *c = take_conn(s, ep, why, sizeof(why));
            if (!c) { /* nothing was sent */
                snprintf(last, sizeof(last), "%s: %s", s->endpoints[ep], why);
                continue;
            }
            struct ck__grpc_answer a = {.body = {.max = MAX_FRAME}};
            int cr = ck__grpc_call(c, path, req->p, req->len, s->timeout_ms, &a, why, sizeof(why));
            if (cr < 0) {
                ck__grpc_close(c); /* a failed call leaves its connection dead */
                snprintf(last, sizeof(last), "%s: %s", s->endpoints[ep], why);
                ck__buf_release(&a.body);
                if (idempotent || a.refused)
                    continue;
                r = ck_err_set(err, CK_EIO,
                               "store: etcd: %s; the write may or may not have been applied", last);
                goto out;
            }
            give_conn(s, ep, c);
            if (a.status_seen && a.status != 0) {
                bool retry;
                ck__buf_release(&a.body);
                r = etcd_error(&a, idempotent, &retry, err);
                if (retry) {
                    snprintf(last, sizeof(last), "%s: %s", s->endpoints[ep], err ? err->msg : "");
                    continue;
                }
                goto out;
            }
            if (!a.status_seen || !ck__grpc_unary_message(&a.body, msg)) {
                ck__buf_release(&a.body);
                snprintf(last, sizeof(last), "%s: not a gRPC answer", s->endpoints[ep]);
                r = ck_err_set(err, CK_EIO, "store: etcd: %s", last);
                if (idempotent)
                    continue;
                goto out;
            }
            atomic_store(&s->cur, ep);
            *ret = a.body;
            r = 0;
            goto out;
        }
    }
    r = ck_err_set(err, CK_EIO, "store: etcd: no endpoint answered after %d rounds (last: %s)",
                   s->attempts, last);
out:
    ck__buf_release(req);
    return r;
}

/* ---- kv operations -------------------------------------------------------------- */

static void put_range_request(struct ck__buf *b, const char *key, size_t key_len, bool prefix,
                              const char *from, size_t from_len)
{
    put_range(b, RANGE_KEY, RANGE_END, key, key_len, prefix, from, from_len);
}

/* A RangeResponse into res; 0 or CK_EIO. */
static int parse_range(struct ck__pb_reader r, struct ck_store_range_result *res, size_t *cap,
                       struct ck_err *err)
{
    uint32_t no;
    unsigned wire;
    int more;
    while ((more = ck__pb_next(&r, &no, &wire)) == 1) {
        struct ck__pb_reader s;
        uint64_t v;
        if (no == RANGE_RESP_HEADER && sub(&r, wire, &s)) {
            res->revision = header_revision(s);
        } else if (no == RANGE_RESP_KVS && sub(&r, wire, &s)) {
            if (append_kv(s, &res->kvs, &res->n_kvs, cap, err) < 0)
                return CK_EIO;
        } else if ((no == RANGE_RESP_MORE || no == RANGE_RESP_COUNT) && varint(&r, wire, &v)) {
            if (no == RANGE_RESP_MORE)
                res->more = v != 0;
            else
                res->count = (int64_t)v;
        } else if (no <= RANGE_RESP_COUNT || !ck__pb_skip(&r, wire)) {
            return malformed(err);
        }
    }
    return more < 0 ? malformed(err) : 0;
}

static int et_range(struct ck_store *store, const struct ck_store_range *req,
                    struct ck_store_range_result *ret, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    struct ck__buf b = {0}, answer;
    struct ck__pb_reader msg;
    put_range_request(&b, req->key, req->key_len, req->prefix, req->from_key, req->from_key_len);
    ck__pb_put_uint(&b, RANGE_LIMIT, (uint64_t)req->limit);
    ck__pb_put_uint(&b, RANGE_REVISION, (uint64_t)req->revision);
    ck__pb_put_uint(&b, RANGE_COUNT_ONLY, req->count_only);
    int r = call(s, "KV/Range", &b, true, &answer, &msg, err);
    if (r < 0)
        return r;
    struct ck_store_range_result res = {0};
    size_t cap = 0;
    r = parse_range(msg, &res, &cap, err);
    ck__buf_release(&answer);
    if (r < 0) {
        ck_store_range_result_release(&res);
        return r;
    }
    *ret = res;
    return 0;
}

/* The RequestOps of one branch, as repeated field `number` of a TxnRequest. */
static void put_ops(struct ck__buf *b, uint32_t number, const struct ck_store_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct ck_store_op *op = &ops[i];
        size_t outer = ck__pb_begin_len(b, number);
        if (op->type == CK_STORE_OP_PUT) {
            size_t inner = ck__pb_begin_len(b, OP_PUT);
            ck__pb_put_bytes(b, PUT_KEY, op->key, op->key_len);
            ck__pb_put_bytes(b, PUT_VALUE, op->value, op->value_len);
            ck__pb_put_uint(b, PUT_PREV_KV, op->prev_kv);
            ck__pb_end_len(b, inner);
        } else if (op->type == CK_STORE_OP_DELETE) {
            size_t inner = ck__pb_begin_len(b, OP_DELETE);
            put_range(b, DELETE_KEY, DELETE_END, op->key, op->key_len, op->prefix, NULL, 0);
            ck__pb_put_uint(b, DELETE_PREV_KV, op->prev_kv);
            ck__pb_end_len(b, inner);
        } else {
            size_t inner = ck__pb_begin_len(b, OP_RANGE);
            put_range_request(b, op->key, op->key_len, op->prefix, NULL, 0);
            ck__pb_end_len(b, inner);
        }
        ck__pb_end_len(b, outer);
    }
}

/* One ResponseOp into out. */
static int parse_op_result(struct ck__pb_reader r, struct ck_store_op_result *out,
                           struct ck_err *err)
{
    uint32_t no, no2;
    unsigned wire, wire2;
    struct ck__pb_reader op, s;
    size_t cap = 0;
    int more;
    if (ck__pb_next(&r, &no, &wire) != 1 || !sub(&r, wire, &op))
        return malformed(err);
    while ((more = ck__pb_next(&op, &no2, &wire2)) == 1) {
        uint64_t v;
        if (no == OP_RANGE && no2 == RANGE_RESP_KVS && sub(&op, wire2, &s)) {
            if (append_kv(s, &out->kvs, &out->n_kvs, &cap, err) < 0)
                return CK_EIO;
        } else if (no == OP_PUT && no2 == PUT_RESP_PREV_KV && sub(&op, wire2, &s)) {
            if (append_kv(s, &out->kvs, &out->n_kvs, &cap, err) < 0)
                return CK_EIO;
        } else if (no == OP_DELETE && no2 == DELETE_RESP_PREV_KVS && sub(&op, wire2, &s)) {
            if (append_kv(s, &out->kvs, &out->n_kvs, &cap, err) < 0)
                return CK_EIO;
        } else if (no == OP_DELETE && no2 == DELETE_RESP_DELETED && varint(&op, wire2, &v)) {
            out->deleted = (int64_t)v;
        } else if (!ck__pb_skip(&op, wire2)) {
            return malformed(err);
        }
    }
    return more < 0 ? malformed(err) : 0;
}

/* A TxnResponse into res, whose branches had n_then and n_else operations. */
static int parse_txn(struct ck__pb_reader msg, size_t n_then, size_t n_else,
                     struct ck_store_txn_result *res, struct ck_err *err)
{
    int r = 0;
    size_t n_seen = 0;
    uint32_t no;
    unsigned wire;
    int more = 0;
    struct ck__pb_reader pass = msg, sr;
    /* first the header, the outcome and the count of results; then the results */
    while (r == 0 && (more = ck__pb_next(&pass, &no, &wire)) == 1) {
        uint64_t v;
        if (no == TXN_RESP_HEADER && sub(&pass, wire, &sr))
            res->revision = header_revision(sr);
        else if (no == TXN_RESP_SUCCEEDED && varint(&pass, wire, &v))
            res->succeeded = v != 0;
        else if (no == TXN_RESP_RESPONSES && sub(&pass, wire, &sr))
            n_seen++;
        else if (no <= TXN_RESP_RESPONSES || !ck__pb_skip(&pass, wire))
            r = malformed(err);
    }
    if (r == 0 && more < 0)
        r = malformed(err);
    size_t n_ops = res->succeeded ? n_then : n_else;
    if (r == 0 && n_seen != n_ops)
        r = ck_err_set(err, CK_EIO, "store: etcd: %zu results for %zu operations", n_seen, n_ops);
    if (r == 0 && !(res->results = calloc(n_ops ? n_ops : 1, sizeof(*res->results))))
        r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
    if (r == 0)
        res->n_results = n_ops;
    for (size_t i = 0; r == 0 && ck__pb_next(&msg, &no, &wire) == 1;) {
        if (no == TXN_RESP_RESPONSES && sub(&msg, wire, &sr))
            r = parse_op_result(sr, &res->results[i++], err);
        else
            ck__pb_skip(&msg, wire); /* checked in the first pass */
    }
    return r;
}

static int et_txn(struct ck_store *store, const struct ck_store_txn *txn,
                  struct ck_store_txn_result *ret, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    struct ck__buf b = {0}, answer;
    struct ck__pb_reader msg;
    for (size_t i = 0; i < txn->n_cmps; i++) {
        const struct ck_store_cmp *c = &txn->cmps[i];
        size_t start = ck__pb_begin_len(&b, TXN_COMPARE);
        ck__pb_put_uint(&b, CMP_RESULT, CMP_RESULT_NUMBER[c->result]);
        ck__pb_put_uint(&b, CMP_TARGET, (uint64_t)c->target);
        ck__pb_put_bytes(&b, CMP_KEY, c->key, c->key_len);
        if (c->target == CK_STORE_CMP_VALUE) {
            ck__pb_put_bytes(&b, CMP_VALUE, c->value, c->value_len);
        } else { /* a oneof member: written even when 0 */
            ck__pb_put_tag(&b, CMP_VERSION + (uint32_t)c->target, CK__PB_VARINT);
            ck__pb_put_varint(&b, (uint64_t)c->number);
        }
        ck__pb_end_len(&b, start);
    }
    put_ops(&b, TXN_SUCCESS, txn->then_ops, txn->n_then);
    put_ops(&b, TXN_FAILURE, txn->else_ops, txn->n_else);
    bool writes = false;
    for (size_t i = 0; i < txn->n_then; i++)
        writes |= txn->then_ops[i].type != CK_STORE_OP_GET;
    for (size_t i = 0; i < txn->n_else; i++)
        writes |= txn->else_ops[i].type != CK_STORE_OP_GET;
    int r = call(s, "KV/Txn", &b, !writes, &answer, &msg, err);
    if (r < 0)
        return r;
    struct ck_store_txn_result res = {0};
    r = parse_txn(msg, txn->n_then, txn->n_else, &res, err);
    ck__buf_release(&answer);
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
    struct ck__buf b = {0}, answer;
    struct ck__pb_reader msg;
    ck__pb_put_uint(&b, COMPACT_REVISION, (uint64_t)revision);
    ck__pb_put_uint(&b, COMPACT_PHYSICAL, 1);
    int r = call(s, "KV/Compact", &b, true, &answer, &msg, err);
    if (r == 0) {
        ck__buf_release(&answer);
        note_compacted(s, revision);
    }
    return r;
}

static int et_revisions(struct ck_store *store, int64_t *cur, int64_t *comp, struct ck_err *err)
{
    struct etcd_store *s = (struct etcd_store *)store;
    struct ck__buf b = {0}, answer;
    struct ck__pb_reader msg;
    ck__pb_put_bytes(&b, RANGE_KEY, "", 1); /* one small key: count_only, no data */
    ck__pb_put_uint(&b, RANGE_COUNT_ONLY, 1);
    int r = call(s, "KV/Range", &b, true, &answer, &msg, err);
    if (r < 0)
        return r;
    struct ck_store_range_result res = {0};
    size_t cap = 0;
    r = parse_range(msg, &res, &cap, err);
    ck__buf_release(&answer);
    *cur = res.revision;
    *comp = atomic_load(&s->compacted);
    ck_store_range_result_release(&res);
    return r;
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
    atomic_bool progress; /* a progress request is wanted */
    bool finished;
    int wake;              /* eventfd: cancel and progress requests wake the thread */
    struct ck__buf frames; /* the stream's bytes not yet a whole frame */
    pthread_t thread;
};

static void watch_error(struct et_watch *w, int code, int64_t compacted, const char *msg)
{
    struct ck_store_event e = {
        .type = CK_STORE_EVENT_ERROR, .error = code, .message = msg, .compact_revision = compacted};
    w->finished = true;
    w->fn(&e, w->userdata);
}

/* The events of one WatchResponse, in order. */
static void watch_events(struct et_watch *w, struct ck__pb_reader events[], size_t n)
{
    for (size_t i = 0; i < n && !w->finished; i++) {
        struct ck__pb_reader r = events[i], s;
        struct ck_kv *kv = NULL, *prev = NULL;
        bool del = false, ok = true;
        uint32_t no;
        unsigned wire;
        uint64_t v;
        int more;
        while (ok && (more = ck__pb_next(&r, &no, &wire)) == 1) {
            if (no == EVENT_TYPE && varint(&r, wire, &v))
                del = v == 1;
            else if ((no == EVENT_KV || no == EVENT_PREV_KV) && sub(&r, wire, &s))
                ok = !*(no == EVENT_KV ? &kv : &prev) &&
                     (*(no == EVENT_KV ? &kv : &prev) = parse_kv(s)) != NULL;
            else
                ok = no > EVENT_PREV_KV && ck__pb_skip(&r, wire);
        }
        if (!ok || more < 0 || !kv) {
            ck_kv_unref(kv);
            ck_kv_unref(prev);
            watch_error(w, CK_EIO, 0, "store: etcd: malformed watch event");
            return;
        }
        if (kv->mod_revision >= w->next || w->next == 0) {
            struct ck_store_event e = {.type = del ? CK_STORE_EVENT_DELETE : CK_STORE_EVENT_PUT,
                                       .revision = kv->mod_revision,
                                       .kv = kv,
                                       .prev_kv = prev};
            w->fn(&e, w->userdata);
        }
        /* events of one revision arrive in one message: move past it after */
        if (i + 1 == n && kv->mod_revision + 1 > w->next)
            w->next = kv->mod_revision + 1;
        ck_kv_unref(kv);
        ck_kv_unref(prev);
    }
}

/* Handles one WatchResponse; false once the watch has finished. */
static bool watch_message(struct et_watch *w, struct ck__pb_reader r)
{
    int64_t rev = 0, compact = 0;
    bool created = false, canceled = false;
    char reason[256] = "";
    size_t n_events = 0, cap = 0;
    struct ck__pb_reader *events = NULL, s;
    uint32_t no;
    unsigned wire;
    uint64_t v;
    int more;
    bool ok = true;
    while (ok && (more = ck__pb_next(&r, &no, &wire)) == 1) {
        if (no == WRESP_HEADER && sub(&r, wire, &s)) {
            rev = header_revision(s);
        } else if ((no == WRESP_CREATED || no == WRESP_CANCELED || no == WRESP_COMPACT) &&
                   varint(&r, wire, &v)) {
            if (no == WRESP_COMPACT)
                compact = (int64_t)v;
            else
                *(no == WRESP_CREATED ? &created : &canceled) = v != 0;
        } else if (no == WRESP_REASON && sub(&r, wire, &s)) {
            snprintf(reason, sizeof(reason), "%.*s", (int)(s.end - s.p), (const char *)s.p);
        } else if (no == WRESP_EVENTS && sub(&r, wire, &s)) {
            if (n_events == cap) {
                struct ck__pb_reader *grown = realloc(events, (cap ? 2 * cap : 8) * sizeof(*grown));
                ok = grown != NULL;
                if (grown) {
                    events = grown;
                    cap = cap ? 2 * cap : 8;
                }
            }
            if (ok)
                events[n_events++] = s;
        } else {
            ok = no != WRESP_HEADER && no != WRESP_REASON && no != WRESP_EVENTS &&
                 ck__pb_skip(&r, wire);
        }
    }
    if (!ok || more < 0) {
        watch_error(w, CK_EIO, 0, "store: etcd: malformed watch answer");
    } else if (canceled) {
        if (compact > 0) {
            note_compacted(w->s, compact);
            watch_error(w, CK_ECOMPACTED, compact, "store: required revision has been compacted");
        } else {
            watch_error(w, CK_EIO, 0, reason[0] ? reason : "store: etcd canceled the watch");
        }
    } else if (created) {
        if (w->next == 0)
            w->next = rev + 1;
    } else if (n_events == 0) {
        if (rev + 1 > w->next)
            w->next = rev + 1;
        struct ck_store_event e = {.type = CK_STORE_EVENT_PROGRESS, .revision = rev};
        w->fn(&e, w->userdata);
    } else {
        watch_events(w, events, n_events);
    }
    free(events);
    return !w->finished;
}

/* Takes the stream's bytes: every complete gRPC frame is one WatchResponse. */
static bool watch_bytes(void *arg, const void *data, size_t n)
{
    struct et_watch *w = arg;
    if (atomic_load(&w->cancel) || w->finished || ck__buf_add(&w->frames, data, n) < 0)
        return false;
    size_t used = 0;
    while (w->frames.len - used >= 5) {
        const unsigned char *p = (const unsigned char *)w->frames.p + used;
        size_t len = frame_length(p);
        if (p[0] != 0 || len > MAX_BODY) {
            watch_error(w, CK_EIO, 0, "store: etcd: malformed watch stream");
            return false;
        }
        if (w->frames.len - used - 5 < len)
            break;
        struct ck__pb_reader r = {p + 5, p + 5 + len};
        used += 5 + len;
        if (!watch_message(w, r))
            return false;
    }
    memmove(w->frames.p, w->frames.p + used, w->frames.len - used);
    w->frames.len -= used;
    return true;
}

/* Empties the wake-up descriptor. */
static void drain(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ;
}

/* One streaming call; returns when it ends, breaks or is cancelled. */
static void watch_stream(struct et_watch *w, const char *endpoint)
{
    struct ck__buf req = {0};
    size_t start = ck__pb_begin_len(&req, WATCH_CREATE);
    put_range(&req, WCREATE_KEY, WCREATE_END, w->key, w->key_len, w->prefix, NULL, 0);
    if (w->next > 0)
        ck__pb_put_uint(&req, WCREATE_START, (uint64_t)w->next);
    ck__pb_put_uint(&req, WCREATE_PROGRESS, 1);
    ck__pb_put_uint(&req, WCREATE_PREV, 1);
    ck__pb_end_len(&req, start);
    static const unsigned char progress_request[] = {WATCH_PROGRESS << 3 | CK__PB_LEN, 0};
    struct ck__grpc_conn *c = NULL;
    struct ck__grpc_answer status = {0};
    char why[256];
    w->frames.len = 0; /* what a broken stream left */
    if (req.err || ck__grpc_connect(endpoint, 1000, &c, why, sizeof(why)) < 0 ||
        ck__grpc_stream_open(c, "/etcdserverpb.Watch/Watch", req.p, req.len, watch_bytes, w,
                             &status, why, sizeof(why)) < 0) {
        ck__grpc_close(c);
        ck__buf_release(&req);
        return;
    }
    ck__buf_release(&req);
    while (!atomic_load(&w->cancel) && !w->finished) {
        if (atomic_exchange(&w->progress, false) &&
            ck__grpc_stream_send(c, progress_request, sizeof(progress_request)) < 0)
            break;
        int r = ck__grpc_stream_run(c, w->wake, 1000, why, sizeof(why));
        drain(w->wake);
        if (r <= 0)
            break; /* ended or broke: the caller reconnects */
    }
    ck__grpc_close(c);
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
    if (!w || !(w->key = malloc(key_len + 1)) ||
        (w->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        if (w)
            free(w->key);
        free(w);
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    }
    w->frames.max = MAX_FRAME;
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
            close(w->wake);
            free(w->key);
            free(w);
            return r;
        }
        w->next = cur + 1;
    }
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        close(w->wake);
        free(w->key);
        free(w);
        return ck_err_set(err, CK_ENOMEM, "store: cannot start a watch thread");
    }
    *ret_watch = &w->base;
    return 0;
}

/* A WatchRequest's progress_request, sent by the watch's thread on its stream. */
static void wake(struct et_watch *w)
{
    uint64_t one = 1;
    if (write(w->wake, &one, sizeof(one)) < 0) {
        /* the counter is full: the thread is awake already */
    }
}

static int et_watch_progress(struct ck_store_watch *watch, struct ck_err *err)
{
    (void)err;
    struct et_watch *w = (struct et_watch *)watch;
    atomic_store(&w->progress, true);
    wake(w);
    return 0;
}

static void et_watch_cancel(struct ck_store_watch *watch)
{
    struct et_watch *w = (struct et_watch *)watch;
    atomic_store(&w->cancel, true);
    wake(w);
    pthread_join(w->thread, NULL);
    close(w->wake);
    ck__buf_release(&w->frames);
    free(w->key);
    free(w);
}

/* ---- answers decoded alone, for fuzz/fuzz_etcd_answer.c ---------------------------- */

static void ignore_event(const struct ck_store_event *e, void *arg)
{
    (void)e;
    (void)arg;
}

void ck__etcd_decode_answer(const unsigned char *p, size_t n)
{
    if (n < 3)
        return;
    unsigned what = p[0] % 3, n_then = p[1] % 4, n_else = p[2] % 4;
    struct ck__pb_reader r = {p + 3, p + n};
    if (what == 0) {
        struct ck_store_range_result res = {0};
        size_t cap = 0;
        parse_range(r, &res, &cap, NULL);
        ck_store_range_result_release(&res);
    } else if (what == 1) {
        struct ck_store_txn_result res = {0};
        parse_txn(r, n_then, n_else, &res, NULL);
        ck_store_txn_result_release(&res);
    } else { /* the watch stream, in pieces of 1 to 4 bytes at first, as a socket may cut it */
        struct etcd_store s = {0};
        struct et_watch w = {.s = &s, .fn = ignore_event, .wake = -1, .frames = {.max = MAX_FRAME}};
        size_t at = 3, piece = 1;
        while (at < n && !w.finished) {
            size_t len = piece < n - at ? piece : n - at;
            if (!watch_bytes(&w, p + at, len))
                break;
            at += len;
            piece = piece < 4 ? piece + 1 : n;
        }
        ck__buf_release(&w.frames);
    }
}

/* ---- opening ------------------------------------------------------------------- */

static void et_close(struct ck_store *store)
{
    struct etcd_store *s = (struct etcd_store *)store;
    while (s->pool) {
        struct pooled *p = s->pool;
        s->pool = p->next;
        ck__grpc_close(p->conn);
        free(p);
    }
    for (size_t i = 0; i < s->n_ep; i++)
        free(s->endpoints[i]);
    free(s->endpoints);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int et_open(const char *rest, const struct ck_store_options *opts, struct ck_store **ret,
                   struct ck_err *err)
{
    struct etcd_store *s = calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->timeout_ms = opts->etcd_timeout_ms;
    s->attempts = opts->etcd_attempts;
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
