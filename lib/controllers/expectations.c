/*
 * expectations.c - "don't act again until what you did has been seen" (kubernetes
 * pkg/controller/controller_utils.go: ControllerExpectations and
 * UIDTrackingControllerExpectations).
 *
 * A ReplicaSet controller that creates 5 pods must not, on its next sync, count pods in a
 * cache that has not seen them yet and create 5 more. Before acting it records how many
 * creates (or deletes) it issued for its key; the informer's handlers lower the counts as
 * the events arrive; sync acts only when the counts are met (both <= 0) or the record is
 * older than the timeout (5 minutes in Kubernetes, in case an event was lost).
 *
 * Deletion tracking remembers which objects are expected to go, so that an object seen
 * going twice (an update carrying deletionTimestamp, then the delete event) lowers the
 * count once.
 *
 * Threading: one mutex around a map from controller key to record; time comes from the
 * injected clock.
 */
#include <stdlib.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

struct record {
    int64_t adds, dels;
    int64_t stamp;           /* when set */
    struct ck__strmap *uids; /* tracked deletions, or NULL */
};

struct ck_expectations {
    pthread_mutex_t lock;
    struct ck_clock *clock;
    int64_t timeout;
    struct ck__strmap records; /* controller key -> struct record */
};

int ck_expectations_new(struct ck_clock *clock, int64_t timeout, struct ck_expectations **ret_e,
                        struct ck_err *reterr)
{
    struct ck_expectations *e = ck__calloc(1, sizeof(*e));
    if (!e)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory creating expectations");
    pthread_mutex_init(&e->lock, NULL);
    e->clock = clock ? clock : ck_clock_real();
    e->timeout = timeout > 0 ? timeout : CK_EXPECTATIONS_TIMEOUT;
    *ret_e = e;
    return 0;
}

static void free_uids(struct ck__strmap *uids)
{
    if (uids) {
        ck__strmap_release(uids);
        free(uids);
    }
}

static void free_record(struct record *rec)
{
    free_uids(rec->uids);
    free(rec);
}

struct ck_expectations *ck_expectations_free(struct ck_expectations *e)
{
    if (!e)
        return NULL;
    size_t bucket;
    for (struct ck__strmap_entry *r = ck__strmap_next(&e->records, NULL, &bucket); r;
         r = ck__strmap_next(&e->records, r, &bucket))
        free_record(r->value);
    ck__strmap_release(&e->records);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return NULL;
}

static struct record *find(struct ck_expectations *e, const char *key)
{
    struct ck__strmap_entry *r = ck__strmap_find(&e->records, key);
    return r ? r->value : NULL;
}

bool ck_expectations_satisfied(struct ck_expectations *e, const char *key)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = find(e, key);
    bool ok = !rec || (rec->adds <= 0 && rec->dels <= 0) ||
              ck_clock_now(e->clock) - rec->stamp > e->timeout;
    pthread_mutex_unlock(&e->lock);
    return ok;
}

/* Sets key's record with e->lock held; takes uids (freed on failure). */
static int set_locked(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels,
                      struct ck__strmap *uids)
{
    struct record *rec = find(e, key);
    if (!rec) {
        bool created;
        rec = ck__calloc(1, sizeof(*rec));
        if (!rec || !ck__strmap_put(&e->records, key, rec, &created)) {
            free(rec);
            free_uids(uids);
            return CK_ENOMEM;
        }
    }
    rec->adds = adds;
    rec->dels = dels;
    rec->stamp = ck_clock_now(e->clock);
    free_uids(rec->uids);
    rec->uids = uids;
    return 0;
}

int ck_expectations_set(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels)
{
    pthread_mutex_lock(&e->lock);
    int r = set_locked(e, key, adds, dels, NULL);
    pthread_mutex_unlock(&e->lock);
    return r;
}

int ck_expectations_expect_creations(struct ck_expectations *e, const char *key, int64_t adds)
{
    return ck_expectations_set(e, key, adds, 0);
}

int ck_expectations_expect_deletions(struct ck_expectations *e, const char *key, int64_t dels)
{
    return ck_expectations_set(e, key, 0, dels);
}

void ck_expectations_raise(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = find(e, key);
    if (rec) {
        rec->adds += adds;
        rec->dels += dels;
    }
    pthread_mutex_unlock(&e->lock);
}

void ck_expectations_lower(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels)
{
    ck_expectations_raise(e, key, -adds, -dels);
}

void ck_expectations_creation_observed(struct ck_expectations *e, const char *key)
{
    ck_expectations_lower(e, key, 1, 0);
}

void ck_expectations_deletion_observed(struct ck_expectations *e, const char *key)
{
    ck_expectations_lower(e, key, 0, 1);
}

void ck_expectations_delete(struct ck_expectations *e, const char *key)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = ck__strmap_remove(&e->records, key);
    if (rec)
        free_record(rec);
    pthread_mutex_unlock(&e->lock);
}

int ck_expectations_get(struct ck_expectations *e, const char *key, int64_t *ret_adds,
                        int64_t *ret_dels)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = find(e, key);
    if (rec) {
        *ret_adds = rec->adds;
        *ret_dels = rec->dels;
    }
    pthread_mutex_unlock(&e->lock);
    return rec ? 0 : CK_ENOENT;
}

int ck_expectations_expect_deletions_of(struct ck_expectations *e, const char *key,
                                        const char *const *deleted, size_t n)
{
    struct ck__strmap *uids = ck__calloc(1, sizeof(*uids));
    if (!uids)
        return CK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        bool created;
        if (!ck__strmap_put(uids, deleted[i], NULL, &created)) {
            free_uids(uids);
            return CK_ENOMEM;
        }
    }
    pthread_mutex_lock(&e->lock);
    int r = set_locked(e, key, 0, (int64_t)uids->len, uids);
    pthread_mutex_unlock(&e->lock);
    return r;
}

void ck_expectations_deletion_observed_of(struct ck_expectations *e, const char *key,
                                          const char *deleted)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = find(e, key);
    if (rec && rec->uids && ck__strmap_find(rec->uids, deleted)) {
        ck__strmap_remove(rec->uids, deleted);
        rec->dels--;
    }
    pthread_mutex_unlock(&e->lock);
}

size_t ck_expectations_pending_deletions(struct ck_expectations *e, const char *key)
{
    pthread_mutex_lock(&e->lock);
    struct record *rec = find(e, key);
    size_t n = rec && rec->uids ? rec->uids->len : 0;
    pthread_mutex_unlock(&e->lock);
    return n;
}
