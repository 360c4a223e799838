/*
 * internal.h - private to lib/store; never installed.
 *
 * The backend interface (struct ck_store_ops), the generic store header every
 * backend embeds, kv construction, and the in-memory watch hub (watch.c) that
 * the SQLite backend feeds from its commits.
 *
 * Threading: ops are called from any thread; each backend says how it
 * serialises. The hub has one lock and one delivery thread.
 */
#ifndef CKUBE_STORE_INTERNAL_H
#define CKUBE_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ckube/internal/util.h"
#include "ckube/store.h"

struct ck_store_ops {
    const char *name;
    /* Parses the part of the URL after "scheme://" and opens; sets *ret. */
    int (*open)(const char *rest, const struct ck_store_options *opts, struct ck_store **ret,
                struct ck_err *reterr);
    void (*close)(struct ck_store *store);
    int (*range)(struct ck_store *store, const struct ck_store_range *req,
                 struct ck_store_range_result *ret, struct ck_err *reterr);
    int (*txn)(struct ck_store *store, const struct ck_store_txn *txn,
               struct ck_store_txn_result *ret, struct ck_err *reterr);
    int (*watch)(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                 int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                 struct ck_store_watch **ret_watch, struct ck_err *reterr);
    int (*watch_progress)(struct ck_store_watch *watch, struct ck_err *reterr);
    void (*watch_cancel)(struct ck_store_watch *watch);
    int (*compact)(struct ck_store *store, int64_t revision, struct ck_err *reterr);
    int (*revisions)(struct ck_store *store, int64_t *ret_current, int64_t *ret_compacted,
                     struct ck_err *reterr);
};

/* The part of every store the generic layer owns; backends embed it first. */
struct ck_store {
    const struct ck_store_ops *ops;
    struct ck_store_options opts; /* with defaults filled in */
    /* automatic compaction (store.c) */
    pthread_t compactor;
    bool compactor_running;
    pthread_mutex_t compactor_lock;
    pthread_cond_t compactor_cond;
    bool compactor_stop;
};

/* Every watch handle starts with this so ck_store_watch_cancel() finds its ops. */
struct ck_store_watch {
    const struct ck_store_ops *ops;
};

extern const struct ck_store_ops ck__sqlite_ops;
extern const struct ck_store_ops ck__etcd_ops;

/* A new kv with one reference, key and value copied; NULL when out of memory. */
struct ck_kv *ck__kv_new(const char *key, size_t key_len, const char *value, size_t value_len,
                         int64_t create_revision, int64_t mod_revision, int64_t version);

/*
 * End of the prefix range: the smallest key greater than every key starting
 * with prefix. Writes it to out (capacity >= len) and returns its length, or
 * 0 when there is no such key (prefix empty or all 0xff): the range is open.
 */
size_t ck__prefix_end(const char *prefix, size_t len, char *out);

/* True when key lies in the watch/range described by (wkey, prefix). */
bool ck__key_matches(const char *wkey, size_t wkey_len, bool prefix, const char *key,
                     size_t key_len);

/* Grows a kv array by one reference-taking append; returns 0 or CK_ENOMEM. */
int ck__kvs_append(const struct ck_kv ***kvs, size_t *n, size_t *cap, const struct ck_kv *kv);

/* Drops every reference in kvs[0..n) and frees the array. */
void ck__kvs_free(const struct ck_kv **kvs, size_t n);

/*
 * Decodes bytes as an answer of etcd's (etcd.c): p[0] picks a RangeResponse, a
 * TxnResponse (for p[1] % 4 and p[2] % 4 operations in its branches) or a
 * watch stream's bytes; the rest is the answer. For fuzz/fuzz_etcd_answer.c.
 */
void ck__etcd_decode_answer(const unsigned char *p, size_t n);

/* ---- watch hub (watch.c) ---------------------------------------------------- */

/*
 * One committed change. The hub keeps references to kv and prev_kv.
 */
struct ck__event {
    enum ck_store_event_type type;
    int64_t revision;
    const struct ck_kv *kv;
    const struct ck_kv *prev_kv;
};

/*
 * Reads committed history for catch-up: calls emit for every event on
 * (key, prefix) with from <= revision <= to, in order. Returns 0, CK_ECOMPACTED
 * when from is below the compacted revision, or another error.
 */
typedef int (*ck__history_fn)(void *backend, const char *key, size_t key_len, bool prefix,
                              int64_t from, int64_t to,
                              int (*emit)(const struct ck__event *ev, void *arg), void *arg,
                              int64_t *ret_compacted, struct ck_err *reterr);

struct ck__hub;

/*
 * A hub for a store whose latest committed revision is head. Keeps the last
 * `capacity` events in memory; older ones are read through history.
 */
int ck__hub_new(size_t capacity, int64_t head, int64_t progress_interval_ms, ck__history_fn history,
                void *backend, struct ck__hub **ret_hub, struct ck_err *reterr);

/*
 * The same, the ring also bounded by max_bytes of keys and values (0: no
 * bound): past either bound the oldest revisions leave the ring for history.
 */
int ck__hub_new_bounded(size_t capacity, size_t max_bytes, int64_t head,
                        int64_t progress_interval_ms, ck__history_fn history, void *backend,
                        struct ck__hub **ret_hub, struct ck_err *reterr);

/* What the ring holds now: events, their bytes (as bounded), and the floor revision. */
void ck__hub_usage(struct ck__hub *hub, size_t *ret_events, size_t *ret_bytes, int64_t *ret_floor);

/* Stops the delivery thread and frees the hub (every watch cancelled before). */
void ck__hub_free(struct ck__hub *hub);

/*
 * Publishes the events of committed revisions up to head (the caller, a single
 * writer, passes them in revision order). Takes the events' kv references.
 */
void ck__hub_publish(struct ck__hub *hub, struct ck__event *events, size_t n, int64_t head);

int ck__hub_watch(struct ck__hub *hub, const struct ck_store_ops *ops, const char *key,
                  size_t key_len, bool prefix, int64_t start_revision, int64_t compacted,
                  ck_store_watch_fn fn, void *userdata, struct ck_store_watch **ret_watch,
                  struct ck_err *reterr);
int ck__hub_watch_progress(struct ck_store_watch *watch, struct ck_err *reterr);
void ck__hub_watch_cancel(struct ck_store_watch *watch);

#endif /* CKUBE_STORE_INTERNAL_H */
