/*
 * sqlite.c - the embedded backend: etcd's MVCC model in one SQLite file.
 *
 * Schema (version 1):
 *   meta(name, value): "magic" = "ckube-store", "schema" = 1, "current" and
 *       "compacted" revisions.
 *   kv(key, mod_revision, sub, create_revision, version, value): one row per
 *       write of a key. A delete writes a tombstone (version 0, empty value).
 *       The latest row of a key at or below revision R is its state at R.
 *       `sub` orders the rows of one revision (op order in the txn).
 * Reads at R pick, per key, the row with the greatest mod_revision <= R and
 * skip tombstones. Compaction to C removes rows superseded at or before C
 * and tombstones at or before C, so reads at >= C are unchanged.
 *
 * Group commit: writers queue their transaction and sleep; one writer thread
 * takes every queued request, runs them in one SQLite transaction (each with
 * its own SAVEPOINT and, when it writes, its own revision; compares see the
 * earlier txns of the batch), commits once - one WAL sync for the batch -
 * then publishes the batch's events to the watch hub and wakes the waiters.
 * A write is acknowledged only after COMMIT returned.
 *
 * Durability: journal_mode=WAL with synchronous=FULL (default: the WAL is
 * fsync'd at every commit; survives kill -9 and power loss) or NORMAL
 * (fsync only at checkpoints; survives kill -9, may lose the last commits on
 * power loss). See docs/internals/store.md.
 *
 * Threading: the writer connection belongs to the writer thread. Readers take
 * a connection from a pool (WAL lets them read while the writer writes); each
 * read runs in one read transaction, so it sees one consistent revision.
 */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SCHEMA_VERSION 1
#define MAGIC          "ckube-store"
#define HUB_CAPACITY   16384
#define BATCH_MAX      1024
/* each pooled reader's page cache, 8 MiB (negative: KiB); documented in store.md */
#define READER_CACHE "PRAGMA cache_size=-8192"

/* The statements a connection runs on every read or write: prepared once per
 * connection, on first use, and kept until it closes. */
enum query {
    Q_BEGIN,
    Q_BEGIN_IMMEDIATE,
    Q_COMMIT,
    Q_SAVEPOINT,
    Q_ROLLBACK_TO,
    Q_RELEASE,
    Q_REVISIONS,
    Q_SET_META,
    Q_GET,
    Q_RANGE,
    Q_RANGE_FROM,
    Q_COUNT,
    Q_COUNT_FROM,
    Q_HISTORY_KEY,
    Q_HISTORY_PREFIX,
    Q_BEFORE,
    Q_LATEST,
    Q_INSERT,
    Q_N
};

static const char *const QUERIES[Q_N] = {
    [Q_BEGIN] = "BEGIN",
    [Q_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_SAVEPOINT] = "SAVEPOINT t",
    [Q_ROLLBACK_TO] = "ROLLBACK TO t",
    [Q_RELEASE] = "RELEASE t",
    [Q_REVISIONS] = "SELECT (SELECT value FROM meta WHERE name = 'current'),"
                    " (SELECT value FROM meta WHERE name = 'compacted')",
    [Q_SET_META] = "UPDATE meta SET value = ?2 WHERE name = ?1",
    [Q_GET] = "SELECT key, mod_revision, create_revision, version, value FROM kv"
              " WHERE key = ?1 AND mod_revision <= ?2 ORDER BY mod_revision DESC LIMIT 1",
    /* Per key in [?1, ?2), the row with the greatest mod_revision <= ?3
     * (SQLite's bare columns come from the max() row), live ones only. The
     * range without an end (a prefix of 0xff bytes, or none) has statements
     * of its own: "?2 IS NULL OR key < ?2" would keep SQLite from bounding
     * its index search above, and every range would read the keys after it
     * to the end of the table. */
    [Q_RANGE] = "SELECT key, max(mod_revision), create_revision, version, value FROM kv"
                " WHERE key >= ?1 AND key < ?2 AND mod_revision <= ?3"
                " GROUP BY key HAVING version > 0 ORDER BY key LIMIT ?4",
    [Q_RANGE_FROM] = "SELECT key, max(mod_revision), create_revision, version, value FROM kv"
                     " WHERE key >= ?1 AND mod_revision <= ?3"
                     " GROUP BY key HAVING version > 0 ORDER BY key LIMIT ?4",
    [Q_COUNT] = "SELECT count(*) FROM (SELECT max(mod_revision), version FROM kv"
                " WHERE key >= ?1 AND key < ?2 AND mod_revision <= ?3"
                " GROUP BY key HAVING version > 0)",
    [Q_COUNT_FROM] = "SELECT count(*) FROM (SELECT max(mod_revision), version FROM kv"
                     " WHERE key >= ?1 AND mod_revision <= ?3"
                     " GROUP BY key HAVING version > 0)",
    [Q_HISTORY_KEY] = "SELECT key, mod_revision, create_revision, version, value FROM kv"
                      " WHERE mod_revision >= ?1 AND mod_revision <= ?2 AND key = ?3"
                      " ORDER BY mod_revision, sub",
    [Q_HISTORY_PREFIX] = "SELECT key, mod_revision, create_revision, version, value FROM kv"
                         " WHERE mod_revision >= ?1 AND mod_revision <= ?2"
                         " AND key >= ?3 AND (?4 IS NULL OR key < ?4)"
                         " ORDER BY mod_revision, sub",
    [Q_BEFORE] = "SELECT key, mod_revision, create_revision, version, value FROM kv"
                 " WHERE key = ?1 AND mod_revision < ?2 ORDER BY mod_revision DESC LIMIT 1",
    [Q_LATEST] = "SELECT key, mod_revision, create_revision, version, value FROM kv"
                 " WHERE key = ?1 ORDER BY mod_revision DESC LIMIT 1",
    [Q_INSERT] = "INSERT INTO kv (key, mod_revision, sub, create_revision, version, value)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
};

/* A connection and its statement cache; used by one thread at a time. */
struct conn {
    sqlite3 *db;
    sqlite3_stmt *st[Q_N];
    struct conn *next;
};

struct wreq {
    const struct ck_store_txn *txn; /* NULL: a compaction to compact_rev */
    struct ck_store_txn_result *res;
    int64_t compact_rev;
    struct ck_err err;
    int rc;
    sem_t acked; /* posted once the writer is done with it */
    struct wreq *next;
};

struct sq_store {
    struct ck_store base;
    char *path;
    struct conn w;        /* the writer thread's */
    pthread_mutex_t lock; /* the writer's queue and stop */
    pthread_cond_t queued;
    struct wreq *queue_head, *queue_tail;
    bool stop;
    pthread_t writer;
    pthread_mutex_t pool_lock;
    struct conn *pool; /* idle reader connections, under pool_lock */
    int64_t current;   /* writer thread only */
    struct ck__hub *hub;
};

static int sq_err(struct ck_err *err, sqlite3 *db, const char *what)
{
    return ck_err_set(err, CK_EIO, "store: sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

static int exec(sqlite3 *db, const char *sql, struct ck_err *err)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sq_err(err, db, sql);
    return 0;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, struct ck_err *err)
{
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return sq_err(err, db, "prepare");
    return 0;
}

/* The connection's statement `id`, prepared on its first use. The caller
 * gives it back with done() before the connection's next use of it. */
static sqlite3_stmt *query(struct conn *c, enum query id, struct ck_err *err)
{
    if (!c->st[id] && prepare(c->db, QUERIES[id], &c->st[id], err) < 0)
        return NULL;
    return c->st[id];
}

static void done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

/* Runs statement `id`, which returns no rows (BEGIN, COMMIT, SAVEPOINT ...). */
static int run(struct conn *c, enum query id, struct ck_err *err)
{
    sqlite3_stmt *st = query(c, id, err);
    if (!st)
        return CK_EIO;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sq_err(err, c->db, QUERIES[id]);
    return 0;
}

static void conn_close(struct conn *c)
{
    for (int i = 0; i < Q_N; i++) {
        sqlite3_finalize(c->st[i]);
        c->st[i] = NULL;
    }
    sqlite3_close(c->db);
    c->db = NULL;
}

static void bind_blob(sqlite3_stmt *st, int i, const char *p, size_t n)
{
    sqlite3_bind_blob64(st, i, n ? p : "", n, SQLITE_STATIC);
}

static int64_t meta_get(sqlite3 *db, const char *name, bool *ok)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    *ok = false;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        v = sqlite3_column_int64(st, 0);
        *ok = true;
    }
    sqlite3_finalize(st);
    return v;
}

/* Builds a kv from columns (key, mod, create, version, value) starting at col. */
static struct ck_kv *row_kv(sqlite3_stmt *st, int col, const char *key, size_t key_len)
{
    if (!key) {
        key = sqlite3_column_blob(st, col);
        key_len = (size_t)sqlite3_column_bytes(st, col);
    }
    const char *v = sqlite3_column_blob(st, col + 4);
    size_t vlen = (size_t)sqlite3_column_bytes(st, col + 4);
    return ck__kv_new(key, key_len, v, vlen, sqlite3_column_int64(st, col + 2),
                      sqlite3_column_int64(st, col + 1), sqlite3_column_int64(st, col + 3));
}

/* ---- reads ------------------------------------------------------------------ */

static int open_conn(struct sq_store *s, bool readonly, sqlite3 **ret, struct ck_err *err)
{
    sqlite3 *db;
    int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(s->path, &db, flags, NULL) != SQLITE_OK) {
        int r = sq_err(err, db, s->path);
        sqlite3_close(db);
        return r;
    }
    sqlite3_busy_timeout(db, 10000);
    /* SQLite's default 2 MiB held less than a 1,000-pod list, which then
     * read its pages from the OS again (pread) on every LIST */
    if (readonly)
        sqlite3_exec(db, READER_CACHE, NULL, NULL, NULL);
    *ret = db;
    return 0;
}

static int take_reader(struct sq_store *s, struct conn **ret, struct ck_err *err)
{
    pthread_mutex_lock(&s->pool_lock);
    struct conn *c = s->pool;
    if (c)
        s->pool = c->next;
    pthread_mutex_unlock(&s->pool_lock);
    if (c) {
        *ret = c;
        return 0;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    int r = open_conn(s, true, &c->db, err);
    if (r < 0) {
        free(c);
        return r;
    }
    *ret = c;
    return 0;
}

static void give_reader(struct sq_store *s, struct conn *c)
{
    pthread_mutex_lock(&s->pool_lock);
    c->next = s->pool;
    s->pool = c;
    pthread_mutex_unlock(&s->pool_lock);
}

/* Reads current and compacted inside the caller's read transaction. */
static int read_revisions(struct conn *c, int64_t *cur, int64_t *comp, struct ck_err *err)
{
    sqlite3_stmt *st = query(c, Q_REVISIONS, err);
    if (!st)
        return CK_EIO;
    int r = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
        sqlite3_column_type(st, 1) != SQLITE_NULL) {
        *cur = sqlite3_column_int64(st, 0);
        *comp = sqlite3_column_int64(st, 1);
    } else {
        r = sq_err(err, c->db, "reading revisions");
    }
    done(st);
    return r;
}

/*
 * Range over db at revision rev. Used by readers (in a read txn) and by the
 * writer's GET ops (inside its write txn). Appends to *kvs, sets count/more.
 */
static int range_at(struct conn *c, const struct ck_store_range *req, int64_t rev,
                    const struct ck_kv ***kvs, size_t *n, int64_t *count, bool *more,
                    struct ck_err *err)
{
    size_t cap = 0;
    *count = 0;
    *more = false;
    sqlite3_stmt *st;
    int r = 0;
    if (!req->prefix) {
        if (!(st = query(c, Q_GET, err)))
            return CK_EIO;
        bind_blob(st, 1, req->key, req->key_len);
        sqlite3_bind_int64(st, 2, rev);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_int64(st, 3) > 0) {
            *count = 1;
            if (!req->count_only) {
                struct ck_kv *kv = row_kv(st, 0, req->key, req->key_len);
                if (!kv || ck__kvs_append(kvs, n, &cap, kv) < 0)
                    r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
                ck_kv_unref(kv);
            }
        } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            r = sq_err(err, c->db, "get");
        }
        done(st);
        return r;
    }
    const char *lo = req->from_key ? req->from_key : req->key;
    size_t lo_len = req->from_key ? req->from_key_len : req->key_len;
    char *hi = malloc(req->key_len + 1);
    if (!hi)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    size_t hi_len = ck__prefix_end(req->key, req->key_len, hi);
    /* count: without a limit the rows read are all there are; a second pass
     * over the range would only repeat it */
    bool counted = req->count_only || req->limit > 0;
    if (counted) {
        if (!(st = query(c, hi_len ? Q_COUNT : Q_COUNT_FROM, err))) {
            r = CK_EIO;
            goto out_hi;
        }
        bind_blob(st, 1, lo, lo_len);
        if (hi_len)
            bind_blob(st, 2, hi, hi_len);
        sqlite3_bind_int64(st, 3, rev);
        if (sqlite3_step(st) == SQLITE_ROW)
            *count = sqlite3_column_int64(st, 0);
        else
            r = sq_err(err, c->db, "count");
        done(st);
    }
    if (r < 0 || req->count_only)
        goto out_hi;
    if (!(st = query(c, hi_len ? Q_RANGE : Q_RANGE_FROM, err))) {
        r = CK_EIO;
        goto out_hi;
    }
    bind_blob(st, 1, lo, lo_len);
    if (hi_len)
        bind_blob(st, 2, hi, hi_len);
    sqlite3_bind_int64(st, 3, rev);
    sqlite3_bind_int64(st, 4, req->limit > 0 ? req->limit : -1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ck_kv *kv = row_kv(st, 0, NULL, 0);
        if (!kv || ck__kvs_append(kvs, n, &cap, kv) < 0) {
            ck_kv_unref(kv);
            r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            break;
        }
        ck_kv_unref(kv);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sq_err(err, c->db, "range");
    done(st);
    if (!counted)
        *count = (int64_t)*n;
    *more = r == 0 && (int64_t)*n < *count;
out_hi:
    free(hi);
    return r;
}

static int sq_range(struct ck_store *store, const struct ck_store_range *req,
                    struct ck_store_range_result *ret, struct ck_err *err)
{
    struct sq_store *s = (struct sq_store *)store;
    struct conn *c = NULL;
    int r = take_reader(s, &c, err);
    if (r < 0)
        return r;
    struct ck_store_range_result res = {0};
    if ((r = run(c, Q_BEGIN, err)) < 0)
        goto out_give;
    int64_t cur = 0, comp = 0;
    if ((r = read_revisions(c, &cur, &comp, err)) < 0)
        goto out_end;
    int64_t rev = req->revision ? req->revision : cur;
    if (rev > cur) {
        r = ck_err_set(err, CK_EINVAL, "store: revision %lld is a future revision (current %lld)",
                       (long long)rev, (long long)cur);
        goto out_end;
    }
    if (rev < comp) {
        r = ck_err_set(err, CK_ECOMPACTED,
                       "store: required revision %lld has been compacted (compacted %lld)",
                       (long long)rev, (long long)comp);
        goto out_end;
    }
    r = range_at(c, req, rev, &res.kvs, &res.n_kvs, &res.count, &res.more, err);
    res.revision = cur;
out_end:
    run(c, Q_COMMIT, NULL);
out_give:
    give_reader(s, c);
    if (r < 0) {
        ck_store_range_result_release(&res);
        return r;
    }
    *ret = res;
    return 0;
}

/* ---- history (watch catch-up, on the hub's thread) --------------------------- */

static int sq_history(void *backend, const char *key, size_t key_len, bool prefix, int64_t from,
                      int64_t to, int (*emit)(const struct ck__event *ev, void *arg), void *arg,
                      int64_t *ret_compacted, struct ck_err *err)
{
    struct sq_store *s = backend;
    struct conn *c = NULL;
    int r = take_reader(s, &c, err);
    if (r < 0)
        return r;
    char *hi = malloc(key_len + 1);
    sqlite3_stmt *st = NULL, *pst = NULL;
    if (!hi) {
        r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
        goto out_give;
    }
    size_t hi_len = prefix ? ck__prefix_end(key, key_len, hi) : 0;
    if ((r = run(c, Q_BEGIN, err)) < 0)
        goto out_give;
    int64_t cur = 0, comp = 0;
    if ((r = read_revisions(c, &cur, &comp, err)) < 0)
        goto out_end;
    *ret_compacted = comp;
    if (from < comp) {
        r = ck_err_set(err, CK_ECOMPACTED, "store: required revision %lld has been compacted",
                       (long long)from);
        goto out_end;
    }
    if (!(st = query(c, prefix ? Q_HISTORY_PREFIX : Q_HISTORY_KEY, err)) ||
        !(pst = query(c, Q_BEFORE, err))) {
        r = CK_EIO;
        goto out_end;
    }
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    bind_blob(st, 3, key, key_len);
    if (prefix && hi_len)
        bind_blob(st, 4, hi, hi_len);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ck__event ev = {0};
        struct ck_kv *kv = row_kv(st, 0, NULL, 0);
        if (!kv) {
            r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            break;
        }
        ev.kv = kv;
        ev.revision = kv->mod_revision;
        ev.type = kv->version > 0 ? CK_STORE_EVENT_PUT : CK_STORE_EVENT_DELETE;
        done(pst);
        bind_blob(pst, 1, kv->key, kv->key_len);
        sqlite3_bind_int64(pst, 2, kv->mod_revision);
        if (sqlite3_step(pst) == SQLITE_ROW && sqlite3_column_int64(pst, 3) > 0)
            ev.prev_kv = row_kv(pst, 0, NULL, 0);
        emit(&ev, arg);
        ck_kv_unref(ev.kv);
        ck_kv_unref(ev.prev_kv);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sq_err(err, c->db, "history");
out_end:
    done(st);
    done(pst);
    run(c, Q_COMMIT, NULL);
out_give:
    free(hi);
    give_reader(s, c);
    return r;
}

/* ---- the writer --------------------------------------------------------------- */

struct events {
    struct ck__event *v;
    size_t n, cap;
};

static int events_push(struct events *e, struct ck__event ev)
{
    if (e->n == e->cap) {
        size_t ncap = e->cap ? e->cap * 2 : 64;
        struct ck__event *nv = realloc(e->v, ncap * sizeof(*nv));
        if (!nv)
            return CK_ENOMEM;
        e->v = nv;
        e->cap = ncap;
    }
    e->v[e->n++] = ev;
    return 0;
}

static void events_truncate(struct events *e, size_t n)
{
    while (e->n > n) {
        e->n--;
        ck_kv_unref(e->v[e->n].kv);
        ck_kv_unref(e->v[e->n].prev_kv);
    }
}

/* The latest live row of key (writer connection, sees the batch so far). */
static int latest(struct conn *c, const char *key, size_t key_len, struct ck_kv **ret,
                  struct ck_err *err)
{
    sqlite3_stmt *st = query(c, Q_LATEST, err);
    if (!st)
        return CK_EIO;
    int r = 0;
    bind_blob(st, 1, key, key_len);
    *ret = NULL;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_int64(st, 3) > 0) {
        *ret = row_kv(st, 0, key, key_len);
        if (!*ret)
            r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        r = sq_err(err, c->db, "read");
    }
    done(st);
    return r;
}

static bool cmp_holds(const struct ck_store_cmp *c, const struct ck_kv *kv)
{
    int d;
    if (c->target == CK_STORE_CMP_VALUE) {
        if (!kv)
            return false;
        size_t n = kv->value_len < c->value_len ? kv->value_len : c->value_len;
        d = n ? memcmp(kv->value, c->value, n) : 0;
        if (d == 0)
            d = kv->value_len < c->value_len ? -1 : kv->value_len > c->value_len;
    } else {
        int64_t have = 0;
        if (kv)
            have = c->target == CK_STORE_CMP_VERSION  ? kv->version
                   : c->target == CK_STORE_CMP_CREATE ? kv->create_revision
                                                      : kv->mod_revision;
        d = have < c->number ? -1 : have > c->number;
    }
    switch (c->result) {
    case CK_STORE_CMP_EQUAL:
        return d == 0;
    case CK_STORE_CMP_NOT_EQUAL:
        return d != 0;
    case CK_STORE_CMP_LESS:
        return d < 0;
    case CK_STORE_CMP_GREATER:
        return d > 0;
    }
    return false;
}

static int insert_row(struct conn *c, const char *key, size_t key_len, int64_t rev, int64_t sub,
                      int64_t create, int64_t version, const char *value, size_t value_len,
                      struct ck_err *err)
{
    sqlite3_stmt *st = query(c, Q_INSERT, err);
    if (!st)
        return CK_EIO;
    int r = 0;
    bind_blob(st, 1, key, key_len);
    sqlite3_bind_int64(st, 2, rev);
    sqlite3_bind_int64(st, 3, sub);
    sqlite3_bind_int64(st, 4, create);
    sqlite3_bind_int64(st, 5, version);
    bind_blob(st, 6, value, value_len);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_CONSTRAINT)
        r = ck_err_set(err, CK_EINVAL, "store: duplicate key given in txn request");
    else if (rc != SQLITE_DONE)
        r = sq_err(err, c->db, "insert");
    done(st);
    return r;
}

/* Runs one txn at base revision `base` inside the batch; appends events. */
static int apply_txn(struct sq_store *s, const struct ck_store_txn *txn, int64_t base,
                     struct events *events, struct ck_store_txn_result *ret, struct ck_err *err)
{
    struct conn *w = &s->w;
    int r = 0;
    bool ok = true;
    for (size_t i = 0; i < txn->n_cmps && ok; i++) {
        struct ck_kv *kv;
        if ((r = latest(w, txn->cmps[i].key, txn->cmps[i].key_len, &kv, err)) < 0)
            return r;
        ok = cmp_holds(&txn->cmps[i], kv);
        ck_kv_unref(kv);
    }
    const struct ck_store_op *ops = ok ? txn->then_ops : txn->else_ops;
    size_t n_ops = ok ? txn->n_then : txn->n_else;
    struct ck_store_txn_result res = {.succeeded = ok};
    res.results = calloc(n_ops ? n_ops : 1, sizeof(*res.results));
    if (!res.results)
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    res.n_results = n_ops;
    int64_t rev = base + 1;
    int64_t sub = 0;
    for (size_t i = 0; i < n_ops && r == 0; i++) {
        const struct ck_store_op *op = &ops[i];
        struct ck_store_op_result *out = &res.results[i];
        size_t cap = 0;
        if (op->type == CK_STORE_OP_GET) {
            struct ck_store_range q = {
                .key = op->key, .key_len = op->key_len, .prefix = op->prefix};
            int64_t count;
            bool more;
            /* Reads at the latest state, including this txn's earlier writes. */
            r = range_at(w, &q, INT64_MAX, &out->kvs, &out->n_kvs, &count, &more, err);
        } else if (op->type == CK_STORE_OP_PUT) {
            struct ck_kv *prev;
            if ((r = latest(w, op->key, op->key_len, &prev, err)) < 0)
                break;
            int64_t create = prev ? prev->create_revision : rev;
            int64_t version = prev ? prev->version + 1 : 1;
            r = insert_row(w, op->key, op->key_len, rev, sub++, create, version, op->value,
                           op->value_len, err);
            struct ck_kv *kv = r == 0 ? ck__kv_new(op->key, op->key_len, op->value, op->value_len,
                                                   create, rev, version)
                                      : NULL;
            if (r == 0 && !kv)
                r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            if (r == 0 && op->prev_kv && prev && ck__kvs_append(&out->kvs, &out->n_kvs, &cap, prev))
                r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            if (r == 0 &&
                events_push(events, (struct ck__event){CK_STORE_EVENT_PUT, rev, kv, prev}) < 0)
                r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
            if (r < 0) {
                ck_kv_unref(kv);
                ck_kv_unref(prev);
            }
        } else {
            struct ck_store_range q = {
                .key = op->key, .key_len = op->key_len, .prefix = op->prefix};
            const struct ck_kv **victims = NULL;
            size_t nv = 0;
            int64_t count;
            bool more;
            r = range_at(w, &q, INT64_MAX, &victims, &nv, &count, &more, err);
            for (size_t j = 0; j < nv && r == 0; j++) {
                const struct ck_kv *p = victims[j];
                r = insert_row(w, p->key, p->key_len, rev, sub++, 0, 0, NULL, 0, err);
                struct ck_kv *kv =
                    r == 0 ? ck__kv_new(p->key, p->key_len, NULL, 0, 0, rev, 0) : NULL;
                if (r == 0 && !kv)
                    r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
                if (r == 0 && op->prev_kv && ck__kvs_append(&out->kvs, &out->n_kvs, &cap, p))
                    r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
                if (r == 0 && events_push(events, (struct ck__event){CK_STORE_EVENT_DELETE, rev, kv,
                                                                     ck_kv_ref(p)}) < 0) {
                    ck_kv_unref(p);
                    r = ck_err_set(err, CK_ENOMEM, "store: out of memory");
                }
                if (r < 0)
                    ck_kv_unref(kv);
                else
                    out->deleted++;
            }
            ck__kvs_free(victims, nv);
        }
    }
    if (r < 0) {
        ck_store_txn_result_release(&res);
        return r;
    }
    res.revision = sub > 0 ? rev : base;
    *ret = res;
    return 0;
}

static int set_meta(struct conn *c, const char *name, int64_t v, struct ck_err *err)
{
    sqlite3_stmt *st = query(c, Q_SET_META, err);
    if (!st)
        return CK_EIO;
    int r = 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = sq_err(err, c->db, "update meta");
    done(st);
    return r;
}

static void run_compaction(struct sq_store *s, struct wreq *q)
{
    sqlite3 *db = s->w.db;
    struct ck_err *err = &q->err;
    int64_t c = q->compact_rev;
    bool ok;
    int r = exec(db, "BEGIN IMMEDIATE", err);
    if (r < 0)
        goto out;
    int64_t comp = meta_get(db, "compacted", &ok);
    if (c <= comp) {
        r = ck_err_set(err, CK_ECOMPACTED, "store: revision %lld has already been compacted",
                       (long long)c);
    } else if (c > s->current) {
        r = ck_err_set(err, CK_EINVAL, "store: revision %lld is a future revision (current %lld)",
                       (long long)c, (long long)s->current);
    } else {
        sqlite3_stmt *st;
        if ((r = prepare(db,
                         "DELETE FROM kv WHERE mod_revision < ?1 AND EXISTS (SELECT 1 FROM kv b"
                         " WHERE b.key = kv.key AND b.mod_revision > kv.mod_revision"
                         " AND b.mod_revision <= ?1)",
                         &st, err)) == 0) {
            sqlite3_bind_int64(st, 1, c);
            if (sqlite3_step(st) != SQLITE_DONE)
                r = sq_err(err, db, "compact");
            sqlite3_finalize(st);
        }
        if (r == 0 && (r = prepare(db, "DELETE FROM kv WHERE mod_revision <= ?1 AND version = 0",
                                   &st, err)) == 0) {
            sqlite3_bind_int64(st, 1, c);
            if (sqlite3_step(st) != SQLITE_DONE)
                r = sq_err(err, db, "compact");
            sqlite3_finalize(st);
        }
        if (r == 0)
            r = set_meta(&s->w, "compacted", c, err);
    }
    if (r == 0)
        r = exec(db, "COMMIT", err);
    if (r < 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    q->rc = r;
}

static void run_batch(struct sq_store *s, struct wreq *batch)
{
    sqlite3 *db = s->w.db;
    struct events events = {0};
    int64_t rev = s->current;
    int r = run(&s->w, Q_BEGIN_IMMEDIATE, NULL);
    for (struct wreq *q = batch; q; q = q->next) {
        if (!q->txn)
            continue;
        if (r < 0) {
            q->rc = sq_err(&q->err, db, "begin");
            continue;
        }
        size_t mark = events.n;
        run(&s->w, Q_SAVEPOINT, NULL);
        q->rc = apply_txn(s, q->txn, rev, &events, q->res, &q->err);
        if (q->rc < 0) {
            events_truncate(&events, mark);
            run(&s->w, Q_ROLLBACK_TO, NULL);
        } else if (q->res->revision > rev) {
            rev = q->res->revision;
        }
        run(&s->w, Q_RELEASE, NULL);
    }
    if (r == 0) {
        struct ck_err err = {0};
        r = set_meta(&s->w, "current", rev, &err);
        if (r == 0)
            r = run(&s->w, Q_COMMIT, &err);
        if (r < 0) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            events_truncate(&events, 0);
            for (struct wreq *q = batch; q; q = q->next) {
                if (q->txn && q->rc == 0) {
                    ck_store_txn_result_release(q->res);
                    q->rc = ck_err_set(&q->err, err.code, "%s", err.msg);
                }
            }
        } else {
            s->current = rev;
            ck__hub_publish(s->hub, events.v, events.n, rev);
        }
    }
    free(events.v);
    for (struct wreq *q = batch; q; q = q->next)
        if (!q->txn)
            run_compaction(s, q);
}

static void *writer_main(void *arg)
{
    struct sq_store *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->queue_head && !s->stop)
            pthread_cond_wait(&s->queued, &s->lock);
        if (!s->queue_head)
            break;
        struct wreq *batch = s->queue_head;
        struct wreq *last = batch;
        for (int n = 1; last->next && n < BATCH_MAX; n++)
            last = last->next;
        s->queue_head = last->next;
        if (!s->queue_head)
            s->queue_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&s->lock);
        run_batch(s, batch);
        /* each waiter wakes alone: a broadcast woke those of the next batch too */
        for (struct wreq *q = batch, *next; q; q = next) {
            next = q->next; /* q is gone once posted */
            sem_post(&q->acked);
        }
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int submit(struct sq_store *s, struct wreq *q, struct ck_err *err)
{
    pthread_mutex_lock(&s->lock);
    if (s->stop) {
        pthread_mutex_unlock(&s->lock);
        return ck_err_set(err, CK_EIO, "store: closed");
    }
    sem_init(&q->acked, 0, 0);
    if (s->queue_tail)
        s->queue_tail->next = q;
    else
        s->queue_head = q;
    s->queue_tail = q;
    pthread_cond_signal(&s->queued);
    pthread_mutex_unlock(&s->lock);
    while (sem_wait(&q->acked) < 0 && errno == EINTR)
        ;
    sem_destroy(&q->acked);
    if (q->rc < 0 && err)
        *err = q->err;
    return q->rc;
}

static int sq_txn(struct ck_store *store, const struct ck_store_txn *txn,
                  struct ck_store_txn_result *ret, struct ck_err *err)
{
    struct wreq q = {.txn = txn, .res = ret};
    return submit((struct sq_store *)store, &q, err);
}

static int sq_compact(struct ck_store *store, int64_t revision, struct ck_err *err)
{
    struct wreq q = {.compact_rev = revision};
    return submit((struct sq_store *)store, &q, err);
}

static int sq_revisions(struct ck_store *store, int64_t *cur, int64_t *comp, struct ck_err *err)
{
    struct sq_store *s = (struct sq_store *)store;
    struct conn *c = NULL;
    int r = take_reader(s, &c, err);
    if (r < 0)
        return r;
    if ((r = run(c, Q_BEGIN, err)) == 0) {
        r = read_revisions(c, cur, comp, err);
        run(c, Q_COMMIT, NULL);
    }
    give_reader(s, c);
    return r;
}

static int sq_watch(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                    int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                    struct ck_store_watch **ret_watch, struct ck_err *err)
{
    struct sq_store *s = (struct sq_store *)store;
    int64_t cur = 0, comp = 0;
    int r = sq_revisions(store, &cur, &comp, err);
    if (r < 0)
        return r;
    return ck__hub_watch(s->hub, &ck__sqlite_ops, key, key_len, prefix, start_revision, comp, fn,
                         userdata, ret_watch, err);
}

/* ---- opening ------------------------------------------------------------------ */

/*
 * Refuses anything that is not an empty file, an empty SQLite database or a
 * ckube store of a schema we know, without writing to it.
 */
static int check_file(struct sq_store *s, bool *ret_fresh, struct ck_err *err)
{
    *ret_fresh = false;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *ret_fresh = true;
            return 0;
        }
        return ck_err_set(err, CK_EIO, "store: cannot open %s: %s", s->path, strerror(errno));
    }
    char hdr[16] = {0};
    ssize_t n = read(fd, hdr, sizeof(hdr));
    close(fd);
    if (n == 0) {
        *ret_fresh = true;
        return 0;
    }
    if (n != (ssize_t)sizeof(hdr) || memcmp(hdr, "SQLite format 3", 16) != 0)
        return ck_err_set(err, CK_EINVAL,
                          "store: %s is not a ckube store (not an SQLite database); refusing to "
                          "touch it",
                          s->path);
    return 0;
}

static int check_schema(struct sq_store *s, bool *ret_fresh, struct ck_err *err)
{
    sqlite3 *db = s->w.db;
    sqlite3_stmt *st;
    char qc[64] = "";
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
        return ck_err_set(err, CK_EIO, "store: %s is corrupt or unreadable: %s", s->path,
                          sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(qc, sizeof(qc), "%s", (const char *)sqlite3_column_text(st, 0));
    else
        snprintf(qc, sizeof(qc), "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (strcmp(qc, "ok") != 0)
        return ck_err_set(err, CK_EIO, "store: %s is corrupt (%s); refusing to use it", s->path,
                          qc);
    int tables = 0, metas = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*), sum(name = 'meta') FROM sqlite_schema WHERE type = "
                           "'table'",
                           -1, &st, NULL) != SQLITE_OK)
        return ck_err_set(err, CK_EIO, "store: %s is corrupt or unreadable: %s", s->path,
                          sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW) {
        tables = sqlite3_column_int(st, 0);
        metas = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    if (tables == 0) {
        *ret_fresh = true;
        return 0;
    }
    bool ok;
    char magic[32] = "";
    if (metas == 1 && sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name = 'magic'", -1, &st,
                                         NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(magic, sizeof(magic), "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    if (strcmp(magic, MAGIC) != 0)
        return ck_err_set(err, CK_EINVAL,
                          "store: %s is an SQLite database but not a ckube store; refusing to "
                          "touch it",
                          s->path);
    int64_t schema = meta_get(db, "schema", &ok);
    if (!ok || schema > SCHEMA_VERSION)
        return ck_err_set(err, CK_EINVAL,
                          "store: %s has schema version %lld, newer than this ckube's %d; "
                          "upgrade ckube",
                          s->path, (long long)schema, SCHEMA_VERSION);
    if (schema < 1)
        return ck_err_set(err, CK_EINVAL, "store: %s has an invalid schema version %lld", s->path,
                          (long long)schema);
    return 0;
}

static const char SCHEMA[] =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "CREATE TABLE kv (key BLOB NOT NULL, mod_revision INTEGER NOT NULL, sub INTEGER NOT NULL,"
    " create_revision INTEGER NOT NULL, version INTEGER NOT NULL, value BLOB NOT NULL,"
    " UNIQUE (key, mod_revision));"
    "CREATE INDEX kv_by_revision ON kv (mod_revision, sub);"
    "INSERT INTO meta VALUES ('magic', 'ckube-store'), ('schema', 1), ('current', 1),"
    " ('compacted', 0);"
    "COMMIT;";

static void sq_close(struct ck_store *store);

/* SQLite's memory statistics take one process-wide mutex on every allocation
 * of every connection; nothing reads them, and with many readers the mutex
 * was the most contended lock of a GET. Off before the first connection. */
static void configure_sqlite(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int sq_open(const char *rest, const struct ck_store_options *opts, struct ck_store **ret,
                   struct ck_err *err)
{
    if (!*rest)
        return ck_err_set(err, CK_EINVAL, "store: sqlite:// needs a file path");
    struct sq_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(rest))) {
        free(s);
        return ck_err_set(err, CK_ENOMEM, "store: out of memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_cond_init(&s->queued, NULL);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, configure_sqlite);
    bool fresh;
    int r = check_file(s, &fresh, err);
    if (r < 0)
        goto fail;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (fresh ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(s->path, &s->w.db, flags, NULL) != SQLITE_OK) {
        r = sq_err(err, s->w.db, s->path);
        goto fail;
    }
    sqlite3_busy_timeout(s->w.db, 10000);
    sqlite3_extended_result_codes(s->w.db, 0);
    if (!fresh && (r = check_schema(s, &fresh, err)) < 0)
        goto fail;
    if ((r = exec(s->w.db, "PRAGMA journal_mode=WAL", err)) < 0 ||
        (r = exec(s->w.db,
                  opts->sqlite_synchronous_normal ? "PRAGMA synchronous=NORMAL"
                                                  : "PRAGMA synchronous=FULL",
                  err)) < 0)
        goto fail;
    if (fresh && (r = exec(s->w.db, SCHEMA, err)) < 0)
        goto fail;
    bool ok;
    s->current = meta_get(s->w.db, "current", &ok);
    if (!ok) {
        r = sq_err(err, s->w.db, "reading the current revision");
        goto fail;
    }
    if ((r = ck__hub_new_bounded(opts->watch_history_events ? opts->watch_history_events
                                                            : HUB_CAPACITY,
                                 opts->watch_history_bytes, s->current, opts->progress_interval_ms,
                                 sq_history, s, &s->hub, err)) < 0)
        goto fail;
    if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
        r = ck_err_set(err, CK_ENOMEM, "store: cannot start the writer thread");
        goto fail;
    }
    *ret = &s->base;
    return 0;
fail:
    s->stop = true; /* no writer thread: sq_close must not join it */
    sq_close(&s->base);
    return r;
}

static void sq_close(struct ck_store *store)
{
    struct sq_store *s = (struct sq_store *)store;
    pthread_mutex_lock(&s->lock);
    bool joined = s->stop;
    s->stop = true;
    pthread_cond_signal(&s->queued);
    pthread_mutex_unlock(&s->lock);
    if (!joined)
        pthread_join(s->writer, NULL);
    ck__hub_free(s->hub);
    while (s->pool) {
        struct conn *c = s->pool;
        s->pool = c->next;
        conn_close(c);
        free(c);
    }
    conn_close(&s->w);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->pool_lock);
    pthread_cond_destroy(&s->queued);
    free(s->path);
    free(s);
}

const struct ck_store_ops ck__sqlite_ops = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .range = sq_range,
    .txn = sq_txn,
    .watch = sq_watch,
    .watch_progress = ck__hub_watch_progress,
    .watch_cancel = ck__hub_watch_cancel,
    .compact = sq_compact,
    .revisions = sq_revisions,
};
