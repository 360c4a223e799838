/*
 * ckube/store.h - the revisioned key-value store ckube keeps its objects in.
 *
 * The data model is etcd v3's, for the operations the API server needs
 * (Kubernetes' staging/src/k8s.io/apiserver/pkg/storage/etcd3 is built on it):
 *
 *   - one global revision that grows by exactly one per committed write
 *     transaction (a transaction that writes nothing does not move it);
 *   - per key: create_revision (when the current incarnation was created),
 *     mod_revision (last write) and version (writes since creation, 1 on create);
 *   - reads (get, range, count) at the current revision or at a past one that
 *     has not been compacted;
 *   - transactions: compares, then a list of operations, else another list;
 *   - watch a key or a prefix from a revision; compaction of old revisions.
 *
 * Two backends sit behind one interface, chosen by a connection string:
 *   sqlite://PATH                   embedded, one file (WAL), the default
 *   etcd://host:port[,host:port...] a real etcd (3.4+) cluster via its
 *                                   gRPC API, with failover
 *
 * Keys and values are byte strings (pointer + length), binary safe. Values
 * are stored and handed back as the exact bytes written, so the API server
 * can serve stored JSON as-is.
 *
 * Memory: every key-value handed out is a `struct ck_kv`, an immutable,
 * refcounted buffer holding its key and value. Results own one reference to
 * each kv they list; take your own with ck_kv_ref() to keep one beyond the
 * result, drop it with ck_kv_unref(). Inputs are always borrowed (copied when
 * needed before the call returns).
 *
 * Errors: every call returns 0 or a negative CK_E* code and fills *reterr
 * (when not NULL). Codes with a meaning of their own here:
 *   CK_ENOENT     key absent (helpers only; range returns an empty list)
 *   CK_EEXIST     create of a key that exists
 *   CK_ECONFLICT  update/delete whose expected mod revision no longer matches
 *   CK_ECOMPACTED read or watch below the compacted revision (HTTP 410 later)
 *   CK_EINVAL     bad argument, including a revision above the current one
 *   CK_EIO        backend failure (disk, etcd unreachable after retries, ...)
 * Nothing aborts the process.
 *
 * Leases (TTL keys) are not implemented by either backend yet.
 *
 * Threading: a struct ck_store is safe to use from any number of threads at
 * once. Watch callbacks run on threads the store owns (see ck_store_watch).
 */
#ifndef CKUBE_STORE_H
#define CKUBE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/util.h"

struct ck_store;
struct ck_store_watch;

/* ---- key-values ----------------------------------------------------------- */

/*
 * One key at one revision. Immutable and refcounted; `key` and `value` point
 * into the same allocation and stay valid while a reference is held. `value`
 * is NUL-terminated one byte past value_len (handy for JSON), `key` likewise;
 * neither terminator counts in the lengths. A kv describing a deletion (a
 * watch event's kv) has value_len 0, version 0 and mod_revision = the
 * revision of the delete.
 */
struct ck_kv {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
    int64_t create_revision;
    int64_t mod_revision;
    int64_t version;
};

/*
 * A kv of the caller's own (a converted object in place of a stored one): copies of key
 * and value with the revisions given, one reference. NULL when out of memory.
 */
const struct ck_kv *ck_kv_new(const char *key, size_t key_len, const char *value, size_t value_len,
                              int64_t create_revision, int64_t mod_revision, int64_t version);

/* Takes a reference; returns kv. ck_kv_ref(NULL) returns NULL. */
const struct ck_kv *ck_kv_ref(const struct ck_kv *kv);

/* Drops a reference, freeing the kv with the last one. Always returns NULL. */
const struct ck_kv *ck_kv_unref(const struct ck_kv *kv);

/* ---- opening -------------------------------------------------------------- */

struct ck_store_options {
    /*
     * Automatic compaction period in milliseconds. 0 means the default,
     * 5 minutes (kube-apiserver's --etcd-compaction-interval); negative turns
     * it off. Each tick compacts to the revision seen at the previous tick, so
     * at least one interval of history stays readable (as Kubernetes does).
     */
    int64_t compaction_interval_ms;
    /*
     * Every watch receives a CK_STORE_EVENT_PROGRESS event after this many
     * milliseconds without other events. 0: never (only on request).
     */
    int64_t progress_interval_ms;
    /* SQLite: false (default) selects synchronous=FULL; true NORMAL (see docs). */
    bool sqlite_synchronous_normal;
    /* etcd: per-request timeout in ms (default 5000) and attempts (default 4). */
    int etcd_timeout_ms;
    int etcd_attempts;
    /*
     * SQLite: the watch history kept in memory, bounded by events (default
     * 16384) and by the bytes of their keys and values (default 64 MiB);
     * older revisions are read back from the database. 0 means the default.
     * Also settable in the connection string:
     * sqlite://PATH?watch-history-events=N&watch-history-bytes=N.
     */
    size_t watch_history_events;
    size_t watch_history_bytes;
};

/*
 * Opens the store named by url ("sqlite://PATH" or "etcd://h:p[,h:p...]",
 * optionally followed by ?watch-history-events=N&watch-history-bytes=N, which
 * override opts).
 * opts may be NULL for defaults. SQLite creates the file (not its directory)
 * when absent and refuses a file that is not a ckube store, is corrupt or has
 * a newer schema (CK_EINVAL / CK_EIO, the file untouched). etcd checks that
 * at least one endpoint answers. On success *ret_store is set; free it with
 * ck_store_close().
 */
int ck_store_open(const char *url, const struct ck_store_options *opts, struct ck_store **ret_store,
                  struct ck_err *reterr);

/*
 * Stops background threads, waits for in-flight writes, closes. Every watch
 * must have been cancelled before. ck_store_close(NULL) is a no-op.
 */
void ck_store_close(struct ck_store *store);

/* "sqlite" or "etcd" (static string). */
const char *ck_store_backend(const struct ck_store *store);

/* ---- transformed values (encryption at rest) ------------------------------ */

/*
 * How the values of some keys are stored: to_storage turns a value into its
 * stored form, from_storage turns it back; both return 0 with a new buffer
 * (*ret, malloc'ed, *ret_len bytes) or a negative code with *reterr. applies
 * says which keys are transformed. All three may run on any thread at once;
 * release (may be NULL) frees ctx when the store closes.
 */
struct ck_store_transformer {
    bool (*applies)(void *ctx, const char *key, size_t key_len);
    int (*to_storage)(void *ctx, const char *key, size_t key_len, const char *value,
                      size_t value_len, char **ret, size_t *ret_len, struct ck_err *reterr);
    int (*from_storage)(void *ctx, const char *key, size_t key_len, const char *stored,
                        size_t stored_len, char **ret, size_t *ret_len, struct ck_err *reterr);
    void (*release)(void *ctx);
    void *ctx;
};

/*
 * A store over inner whose values, for the keys t applies to, are stored
 * transformed: puts are transformed on the way in, every value read (range,
 * txn results, watch events) on the way out. It takes ownership of inner
 * (closing it closes inner) and of t->ctx. A value compare on a transformed
 * key is refused (CK_EINVAL); a stored value that does not transform back
 * fails its read. Returns 0, or CK_EINVAL/CK_ENOMEM (inner is then still the
 * caller's).
 */
int ck_store_transformed(struct ck_store *inner, const struct ck_store_transformer *t,
                         struct ck_store **ret_store, struct ck_err *reterr);

/* ---- reads ---------------------------------------------------------------- */

struct ck_store_range {
    const char *key; /* the key, or the prefix when prefix is true */
    size_t key_len;
    bool prefix; /* every key that starts with key[0..key_len) */
    /*
     * Prefix ranges only: start at this key (inclusive) instead of the prefix
     * itself; it must lie within the prefix. This is how `continue` pages:
     * pass the last key returned plus a trailing "\0" byte.
     */
    const char *from_key;
    size_t from_key_len;
    int64_t limit;    /* at most this many kvs; 0: no limit */
    int64_t revision; /* read as of this revision; 0: current */
    bool count_only;  /* fill count only, no kvs */
};

struct ck_store_range_result {
    const struct ck_kv **kvs; /* in key order (bytewise); one reference each */
    size_t n_kvs;
    int64_t count;    /* keys in [from_key or key, end of range), ignoring limit */
    bool more;        /* more keys follow the last one returned (limit cut the list) */
    int64_t revision; /* the store's current revision when the read was served */
};

/*
 * Reads a key or a range. On success fills *ret (which the caller releases
 * with ck_store_range_result_release()). count counts the keys in
 * [from_key or key, end of range), like etcd's count. A revision below the
 * compacted one is CK_ECOMPACTED; above the current one CK_EINVAL.
 */
int ck_store_range(struct ck_store *store, const struct ck_store_range *req,
                   struct ck_store_range_result *ret, struct ck_err *reterr);

/* Drops the result's references and frees its arrays; ret is zeroed. */
void ck_store_range_result_release(struct ck_store_range_result *ret);

/*
 * One key at the current revision (revision 0) or a past one. Returns
 * CK_ENOENT when absent. *ret_kv gets a reference the caller drops with
 * ck_kv_unref(); ret_revision (may be NULL) the store's current revision.
 */
int ck_store_get(struct ck_store *store, const char *key, size_t key_len, int64_t revision,
                 const struct ck_kv **ret_kv, int64_t *ret_revision, struct ck_err *reterr);

/* ---- transactions --------------------------------------------------------- */

enum ck_store_cmp_target {
    CK_STORE_CMP_VERSION, /* number: the key's version (0 when absent) */
    CK_STORE_CMP_CREATE,  /* number: create_revision (0 when absent: "does not exist") */
    CK_STORE_CMP_MOD,     /* number: mod_revision (0 when absent) */
    CK_STORE_CMP_VALUE,   /* bytes: the value; an absent key fails every value compare */
};

enum ck_store_cmp_result {
    CK_STORE_CMP_EQUAL,
    CK_STORE_CMP_NOT_EQUAL,
    CK_STORE_CMP_LESS,
    CK_STORE_CMP_GREATER,
};

struct ck_store_cmp {
    const char *key;
    size_t key_len;
    enum ck_store_cmp_target target;
    enum ck_store_cmp_result result;
    int64_t number;    /* VERSION, CREATE, MOD */
    const char *value; /* VALUE (bytewise compare) */
    size_t value_len;
};

enum ck_store_op_type {
    CK_STORE_OP_PUT,    /* set key to value */
    CK_STORE_OP_DELETE, /* delete key, or every key under it with prefix */
    CK_STORE_OP_GET,    /* read key (or prefix) at the txn's revision */
};

struct ck_store_op {
    enum ck_store_op_type type;
    const char *key;
    size_t key_len;
    const char *value; /* PUT */
    size_t value_len;
    bool prefix;  /* DELETE, GET: the whole prefix */
    bool prev_kv; /* PUT, DELETE: return the kvs overwritten / deleted */
};

struct ck_store_txn {
    const struct ck_store_cmp *cmps; /* all must hold for `then` to run */
    size_t n_cmps;
    const struct ck_store_op *then_ops;
    size_t n_then;
    const struct ck_store_op *else_ops;
    size_t n_else;
};

struct ck_store_op_result {
    const struct ck_kv **kvs; /* GET: the kvs read; PUT/DELETE with prev_kv: previous kvs */
    size_t n_kvs;
    int64_t deleted; /* DELETE: keys deleted */
};

struct ck_store_txn_result {
    bool succeeded; /* the compares held and `then` ran */
    /*
     * The store's revision after the txn: the txn's own new revision when it
     * wrote something, else the current revision it was evaluated at.
     */
    int64_t revision;
    struct ck_store_op_result *results; /* one per op of the branch that ran */
    size_t n_results;
};

/*
 * Runs a transaction atomically: evaluates every compare against the latest
 * state, runs then_ops if all hold, else else_ops. Writes in the branch get
 * one new revision together; a key may be written once per txn (CK_EINVAL
 * otherwise, as in etcd). On success (whichever branch ran) returns 0 and
 * fills *ret, released with ck_store_txn_result_release(). A successful
 * return means the write is durable (SQLite: committed and synced per the
 * chosen level; etcd: committed by the cluster).
 */
int ck_store_txn(struct ck_store *store, const struct ck_store_txn *txn,
                 struct ck_store_txn_result *ret, struct ck_err *reterr);

void ck_store_txn_result_release(struct ck_store_txn_result *ret);

/* ---- helpers: the shapes the API server uses (each one txn) --------------- */

/* Unconditional put. ret_revision (may be NULL): the new revision. */
int ck_store_put(struct ck_store *store, const char *key, size_t key_len, const char *value,
                 size_t value_len, int64_t *ret_revision, struct ck_err *reterr);

/* Create-if-absent: CK_EEXIST when the key exists. */
int ck_store_create(struct ck_store *store, const char *key, size_t key_len, const char *value,
                    size_t value_len, int64_t *ret_revision, struct ck_err *reterr);

/*
 * Update-if-unchanged: puts when the key's mod_revision is still
 * expected_mod_revision. On a mismatch returns CK_ECONFLICT (or CK_ENOENT when
 * the key is gone) and, when ret_current is not NULL, sets it to a reference
 * to the current kv (NULL when absent) so the caller can retry without a read.
 */
int ck_store_update(struct ck_store *store, const char *key, size_t key_len, const char *value,
                    size_t value_len, int64_t expected_mod_revision, int64_t *ret_revision,
                    const struct ck_kv **ret_current, struct ck_err *reterr);

/*
 * Delete-if-unchanged (expected_mod_revision 0: unconditionally). CK_ENOENT
 * when absent, CK_ECONFLICT on a mismatch. ret_prev (may be NULL) receives a
 * reference to the deleted kv (or the current one on CK_ECONFLICT).
 */
int ck_store_delete(struct ck_store *store, const char *key, size_t key_len,
                    int64_t expected_mod_revision, int64_t *ret_revision,
                    const struct ck_kv **ret_prev, struct ck_err *reterr);

/* Deletes every key under prefix; ret_deleted (may be NULL) gets how many. */
int ck_store_delete_prefix(struct ck_store *store, const char *prefix, size_t prefix_len,
                           int64_t *ret_revision, int64_t *ret_deleted, struct ck_err *reterr);

/* ---- watch ---------------------------------------------------------------- */

enum ck_store_event_type {
    CK_STORE_EVENT_PUT,      /* kv: the new kv; prev_kv: the previous one, NULL on create */
    CK_STORE_EVENT_DELETE,   /* kv: key + mod_revision of the delete; prev_kv: deleted kv */
    CK_STORE_EVENT_PROGRESS, /* revision: every event up to it has been delivered */
    CK_STORE_EVENT_ERROR,    /* the watch ended: error (e.g. CK_ECOMPACTED) and message */
};

struct ck_store_event {
    enum ck_store_event_type type;
    int64_t revision;            /* PUT/DELETE: the event's revision; PROGRESS: see above */
    const struct ck_kv *kv;      /* borrowed for the callback; ck_kv_ref() to keep */
    const struct ck_kv *prev_kv; /* borrowed likewise */
    int error;                   /* ERROR: negative CK_E* code */
    const char *message;         /* ERROR: one sentence */
    int64_t compact_revision;    /* ERROR with CK_ECOMPACTED: the compacted revision */
};

/*
 * Called for each event. Must not block and must not call
 * ck_store_watch_cancel() on its own watch (queue the work elsewhere):
 * callbacks of several watches may share one store thread.
 */
typedef void (*ck_store_watch_fn)(const struct ck_store_event *event, void *userdata);

/*
 * Watches key (or every key under it with prefix) for changes after
 * start_revision - 1, i.e. events with revision >= start_revision;
 * start_revision 0 means "from now" (current revision + 1). Events arrive on
 * a store-owned thread, in revision order (events of one txn in op order),
 * each exactly once, PUT/DELETE with prev_kv. A start_revision at or below
 * the compacted revision delivers one CK_STORE_EVENT_ERROR with CK_ECOMPACTED
 * and nothing more; so does a watcher that falls too far behind. On etcd a
 * lost connection is resumed from the last delivered revision transparently.
 * On success *ret_watch is set; cancel it with ck_store_watch_cancel().
 */
int ck_store_watch(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                   int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                   struct ck_store_watch **ret_watch, struct ck_err *reterr);

/*
 * Asks for a CK_STORE_EVENT_PROGRESS event soon (a bookmark). Returns 0 or
 * a negative code; the event follows asynchronously.
 */
int ck_store_watch_progress(struct ck_store_watch *watch, struct ck_err *reterr);

/*
 * Stops the watch and frees it. When it returns no callback of this watch is
 * running or will run. Must not be called from the watch's own callback.
 * ck_store_watch_cancel(NULL) is a no-op.
 */
void ck_store_watch_cancel(struct ck_store_watch *watch);

/* ---- compaction ----------------------------------------------------------- */

/*
 * Discards history below revision: afterwards reads and watches at revisions
 * < revision fail with CK_ECOMPACTED; the latest value of each key (and reads
 * at >= revision) stay. Compacting to a revision already compacted is
 * CK_ECOMPACTED; above the current one CK_EINVAL.
 */
int ck_store_compact(struct ck_store *store, int64_t revision, struct ck_err *reterr);

/*
 * The current and compacted revisions (either pointer may be NULL). etcd does
 * not publish its compacted revision: there it is the highest one this
 * process compacted to or learned from an error, else 0.
 */
int ck_store_revisions(struct ck_store *store, int64_t *ret_current, int64_t *ret_compacted,
                       struct ck_err *reterr);

#endif /* CKUBE_STORE_H */
