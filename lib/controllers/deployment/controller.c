/*
 * controller.c - the Deployment controller's loop (kubernetes pkg/controller/deployment/
 * deployment_controller.go, and the API-writing halves of sync.go, rolling.go,
 * recreate.go and progress.go).
 *
 * Handlers (on the informers' threads) only map events to Deployment keys:
 *   - a Deployment added, updated or deleted: its key;
 *   - a ReplicaSet with a controller reference: its owner, if that is a Deployment we
 *     know with the same uid (a changed reference also enqueues the old owner); an
 *     orphan (added, or relabelled): every Deployment of its namespace whose selector
 *     matches, so one adopts it; a ReplicaSet being deleted counts as deleted;
 *   - a pod deleted: its Deployment (through its ReplicaSet) when that one uses the
 *     Recreate strategy, which waits for old pods to go. (Kubernetes first checks that no
 *     pod is left; the sync checks that again, so we enqueue without counting.)
 *
 * sync(key) (syncDeployment) works on a deep copy of the cached Deployment: claims its
 * ReplicaSets with the controller-ref manager, maps its pods to them, then, as
 * Kubernetes does: being deleted -> status only; paused or a scaling event -> scale
 * (proportionally in a rollout) and status; otherwise a Recreate or RollingUpdate step.
 * Every decision comes from the pure functions of deployment.h; this file only turns
 * them into client calls: creating the new ReplicaSet (with hash collision handling),
 * scaling ReplicaSets (with ScalingReplicaSet events), deleting old ones beyond the
 * history limit, writing the Deployment's status and requeueing a rollout whose
 * progress deadline is still to be judged.
 *
 * One sync's ReplicaSets live in `struct world`: references (cached ones, or the
 * objects the server returned for our writes, which replace them), so later steps of
 * the same sync see what earlier steps wrote, as Kubernetes' sync passes the updated
 * objects along.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers run on the
 * informers' threads; the controller's state is read-only after creation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/deployment.h"
#include "ckube/internal/util.h"
#include "deployment.h"

#define D_API_VERSION "apps/v1"
#define D_KIND        "Deployment"

struct ck_deploy_controller {
    struct ck_ctl_client client;
    struct ck_lister ds, rss, pods;
    const struct ck_resource *ds_res, *rss_res, *pods_res;
    struct ck_ctl_event_sink sink;      /* the recorder writes through client */
    struct ck_event_recorder *recorder; /* events on the Deployments */
    struct ck_informer *infs[3];        /* Deployments, ReplicaSets, pods; NULL on given listers */
    int64_t (*now)(void *arg);
    void *now_arg;
    struct ck_controller ctl; /* ctl.queue: the rate-limited queue */
    struct ck_runner *runner;
};

/* What one sync works on. */
struct world {
    const char *key;
    json_t *d;            /* our copy of the Deployment */
    const json_t **rss;   /* claimed ReplicaSets, references (ck_cached_unref) */
    size_t n, cap;        /* rss entries, allocated */
    json_t *pod_map;      /* ReplicaSet uid -> [pod phases]: built for Recreate only */
    const json_t *new_rs; /* borrowed from rss, or NULL */
    const json_t **old;   /* the others (borrowed), oldest first */
    size_t n_old;
};

/* ---- small helpers ------------------------------------------------------------- */

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static bool being_deleted(const json_t *obj)
{
    return json_object_get(meta(obj), "deletionTimestamp") != NULL;
}

static int64_t real_now(void *arg)
{
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_DEPLOY_NS_PER_SEC + ts.tv_nsec;
}

static int64_t now_ns(const struct ck_deploy_controller *c)
{
    return c->now(c->now_arg);
}

static bool is_recreate(const json_t *d)
{
    const char *type = json_string_value(
        json_object_get(json_object_get(json_object_get(d, "spec"), "strategy"), "type"));
    return type && strcmp(type, "Recreate") == 0;
}

static void enqueue_owner(struct ck_deploy_controller *c, const json_t *child, const json_t *ref)
{
    ck__ctl_enqueue_owner(c->ctl.queue, &c->ds, D_KIND, child, ref);
}

/* ---- handlers ------------------------------------------------------------------ */

static void d_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_deploy_controller *)arg)->ctl.queue, obj);
}

static void d_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_deploy_controller *)arg)->ctl.queue, obj);
}

static void d_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    struct ck_deploy_controller *c = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) < 0)
        return;
    ck_wq_add(c->ctl.queue, key);
    free(key);
}

static void rs_deleted(struct ck_deploy_controller *c, const json_t *rs)
{
    const json_t *ref = ck_controller_ref(rs);
    if (ref)
        enqueue_owner(c, rs, ref);
}

static void rs_add(const json_t *rs, bool initial, void *arg)
{
    (void)initial;
    struct ck_deploy_controller *c = arg;
    if (being_deleted(rs)) {
        rs_deleted(c, rs); /* a restart can show one already being deleted */
        return;
    }
    const json_t *ref = ck_controller_ref(rs);
    if (ref)
        enqueue_owner(c, rs, ref);
    else
        ck__ctl_enqueue_selecting(c->ctl.queue, &c->ds, rs);
}

static void rs_update(const json_t *old, const json_t *rs, void *arg)
{
    struct ck_deploy_controller *c = arg;
    if (old == rs) { /* a resync: the owner looks again */
        rs_add(rs, false, arg);
        return;
    }
    if (ck__ctl_same_version(old, rs))
        return;
    const json_t *old_ref = ck_controller_ref(old), *ref = ck_controller_ref(rs);
    bool ref_changed = !ck__ctl_same_ref(old_ref, ref);
    if (ref_changed && old_ref)
        enqueue_owner(c, old, old_ref);
    if (ref) {
        enqueue_owner(c, rs, ref);
        return;
    }
    bool labels_changed =
        !json_equal(json_object_get(meta(old), "labels"), json_object_get(meta(rs), "labels"));
    if (labels_changed || ref_changed)
        ck__ctl_enqueue_selecting(c->ctl.queue, &c->ds, rs);
}

static void rs_delete(const json_t *rs, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    if (rs)
        rs_deleted(arg, rs);
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)pod, (void)initial, (void)arg;
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    (void)old, (void)pod, (void)arg;
}

/* deletePod: a Recreate Deployment waits for its old pods to go. */
static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    struct ck_deploy_controller *c = arg;
    const json_t *ref = pod ? ck_controller_ref(pod) : NULL;
    if (!ref)
        return;
    const char *ns = ck__meta_str(pod, "namespace");
    const json_t *rs = ck__ctl_resolve_ref(&c->rss, "ReplicaSet", ns, ref);
    const json_t *rs_ref = rs ? ck_controller_ref(rs) : NULL;
    const json_t *d = rs_ref ? ck__ctl_resolve_ref(&c->ds, D_KIND, ns, rs_ref) : NULL;
    if (d && is_recreate(d))
        ck__ctl_enqueue(c->ctl.queue, d);
    ck_cached_unref(d);
    ck_cached_unref(rs);
}

/* ---- the world of one sync ------------------------------------------------------- */

static void world_release(struct world *w)
{
    for (size_t i = 0; i < w->n; i++)
        ck_cached_unref(w->rss[i]);
    free(w->rss);
    free(w->old);
    json_decref(w->pod_map);
    json_decref(w->d);
}

/* Appends rs (a reference the world takes). */
static int world_add(struct world *w, const json_t *rs)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        const json_t **items = ck__realloc(w->rss, cap * sizeof(*items));
        const json_t **old = ck__realloc(w->old, cap * sizeof(*old));
        if (items)
            w->rss = items;
        if (old)
            w->old = old;
        if (!items || !old) {
            ck_cached_unref(rs);
            return CK_ENOMEM;
        }
        w->cap = cap;
    }
    w->rss[w->n++] = rs;
    return 0;
}

/* Replaces rs (borrowed from the world) with got (a reference it takes). */
static const json_t *world_replace(struct world *w, const json_t *rs, const json_t *got)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->rss[i] == rs) {
            ck_cached_unref(rs);
            w->rss[i] = got;
            if (w->new_rs == rs)
                w->new_rs = got;
            for (size_t j = 0; j < w->n_old; j++)
                if (w->old[j] == rs)
                    w->old[j] = got;
            return got;
        }
    ck_cached_unref(got);
    return rs;
}

/* FindNewReplicaSet and FindOldReplicaSets over the world. */
static void world_split(struct world *w)
{
    w->new_rs = ck__deploy_find_new_rs(w->d, w->rss, w->n);
    size_t n_req = 0;
    const json_t **req = ck__calloc(w->n ? w->n : 1, sizeof(*req));
    if (!req) { /* no memory: every ReplicaSet but the new one, unsorted */
        w->n_old = 0;
        for (size_t i = 0; i < w->n; i++)
            if (w->rss[i] != w->new_rs)
                w->old[w->n_old++] = w->rss[i];
        return;
    }
    ck__deploy_find_old_rss(w->d, w->rss, w->n, w->old, &w->n_old, req, &n_req);
    free(req);
}

/* ---- writes ----------------------------------------------------------------------- */

/* Writes w->d's status (and annotations) through the status subresource. */
static int update_status(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    json_t *got = NULL;
    int r = ck_ctl_update_status(&c->client, c->ds_res, ck__meta_str(w->d, "namespace"), w->d, &got,
                                 reterr);
    const char *rv = got ? ck__meta_str(got, "resourceVersion") : NULL;
    if (r == 0 && rv) /* later writes of this sync go on from what the server has */
        json_object_set_new(ck__deploy_child(w->d, "metadata"), "resourceVersion", json_string(rv));
    json_decref(got);
    return r;
}

/*
 * scaleReplicaSet (always_write) and scaleReplicaSetAndRecordEvent (!always_write: only
 * a changed size is written): the size and the replicas annotations, then the event.
 */
static int scale_rs(struct ck_deploy_controller *c, struct world *w, const json_t *rs, int32_t size,
                    bool always_write, bool *ret_scaled, struct ck_err *reterr)
{
    int32_t from = ck__deploy_spec_replicas(rs);
    if (!always_write && from == size)
        return 0;
    json_t *upd = ck__deploy_scaled_rs(rs, w->d, size);
    if (!upd)
        return 0;
    json_t *got = NULL;
    int r = ck_ctl_update(&c->client, c->rss_res, ck__meta_str(rs, "namespace"), upd, &got, reterr);
    if (r < 0) {
        json_decref(upd);
        return r;
    }
    /* rs may be freed by the replacement: name the event after what the server has */
    const json_t *now_rs = world_replace(w, rs, got ? got : upd);
    if (got)
        json_decref(upd);
    if (from != size) {
        ck_event_recordf(c->recorder, w->d, CK_EVENT_NORMAL, "ScalingReplicaSet",
                         "Scaled %s replica set %s from %" PRId32 " to %" PRId32,
                         from < size ? "up" : "down", ck__deploy_name(now_rs), from, size);
        if (ret_scaled)
            *ret_scaled = true;
    }
    return 0;
}

/* The hash collided with a ReplicaSet of another template: bump status.collisionCount. */
static int bump_collision_count(struct ck_deploy_controller *c, struct world *w,
                                struct ck_err *reterr)
{
    json_t *status = ck__deploy_child(w->d, "status");
    json_int_t count = json_integer_value(json_object_get(status, "collisionCount"));
    json_object_set_new(status, "collisionCount", json_integer(count + 1));
    struct ck_err err = {0};
    if (update_status(c, w, &err) == 0)
        CK_LOGV(2, "deployment %s: hash collision, collisionCount now %lld", w->key,
                (long long)count + 1);
    return ck_err_set(reterr, CK_EEXIST, "replica set name collision for deployment %s", w->key);
}

/* getNewReplicaSet's creating half. */
static int create_new_rs(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    int err = 0;
    json_t *rs = ck__deploy_new_rs_object(w->d, w->old, w->n_old, &err);
    if (!rs)
        return ck_err_set(reterr, err ? err : CK_ENOMEM,
                          "deployment %s: cannot build its new "
                          "replica set",
                          w->key);
    const char *ns = ck__meta_str(w->d, "namespace");
    const char *name = ck__meta_str(rs, "name");
    int32_t size = ck__deploy_spec_replicas(rs);
    json_t *got = NULL;
    struct ck_err cerr = {0};
    int r = ck_ctl_create(&c->client, c->rss_res, ns, rs, &got, &cerr);
    bool already_exists = false;
    const json_t *created = got;
    if (r == CK_EEXIST) {
        /* ours already (a stale cache)? Else a hash collision with another template */
        const json_t *have = NULL;
        if (ck_lister_get(&c->rss, ns ? ns : "", name, &have) < 0) {
            json_decref(rs);
            *reterr = cerr;
            return r;
        }
        const json_t *ref = ck_controller_ref(have);
        const char *uid = ck__deploy_uid(w->d);
        const char *ref_uid = json_string_value(json_object_get(ref, "uid"));
        if (ref && uid && ref_uid && strcmp(uid, ref_uid) == 0 &&
            ck__deploy_equal_ignore_hash(
                json_object_get(json_object_get(w->d, "spec"), "template"),
                json_object_get(json_object_get(have, "spec"), "template"))) {
            created = have;
            already_exists = true;
            r = 0;
        } else {
            ck_cached_unref(have);
            json_decref(rs);
            return bump_collision_count(c, w, reterr);
        }
    } else if (r < 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "Failed to create new replica set \"%s\": %s", name, cerr.msg);
        if (ck__deploy_has_progress_deadline(w->d)) {
            json_t *status = ck__deploy_child(w->d, "status");
            ck__deploy_condition_set(status,
                                     ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "False",
                                                              CK_DEPLOY_REASON_FAILED_RS_CREATE,
                                                              msg, now_ns(c)));
            update_status(c, w, NULL);
        }
        ck_event_recordf(c->recorder, w->d, CK_EVENT_WARNING, CK_DEPLOY_REASON_FAILED_RS_CREATE,
                         "%s", msg);
        json_decref(rs);
        *reterr = cerr;
        return r;
    }
    if (!created) /* a client that returns nothing: what we sent */
        created = json_incref(rs);
    if (!already_exists && size > 0)
        ck_event_recordf(c->recorder, w->d, CK_EVENT_NORMAL, "ScalingReplicaSet",
                         "Scaled up replica set %s from 0 to %" PRId32, ck__deploy_name(created),
                         size);
    json_decref(rs);
    if (world_add(w, created) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    w->new_rs = created;

    const char *rev = ck__deploy_annotation(created, CK_DEPLOY_REVISION_ANNOTATION);
    bool needs_update = ck__deploy_set_revision(w->d, rev ? rev : "");
    if (!already_exists && ck__deploy_has_progress_deadline(w->d)) {
        char msg[320];
        snprintf(msg, sizeof(msg), "Created new replica set \"%s\"", ck__deploy_name(created));
        ck__deploy_condition_set(ck__deploy_child(w->d, "status"),
                                 ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "True",
                                                          CK_DEPLOY_REASON_NEW_RS, msg, now_ns(c)));
        needs_update = true;
    }
    return needs_update ? update_status(c, w, reterr) : 0;
}

/*
 * getAllReplicaSetsAndSyncRevision: splits the world into new and old, syncs an existing
 * new ReplicaSet's annotations and the Deployment's revision, and creates the new one
 * when `create` and there is none.
 */
static int sync_revision(struct ck_deploy_controller *c, struct world *w, bool create,
                         struct ck_err *reterr)
{
    world_split(w);
    if (!w->new_rs)
        return create ? create_new_rs(c, w, reterr) : 0;
    json_t *upd = ck__deploy_sync_new_rs(w->d, w->new_rs, w->old, w->n_old);
    if (upd) {
        json_t *got = NULL;
        int r = ck_ctl_update(&c->client, c->rss_res, ck__meta_str(upd, "namespace"), upd, &got,
                              reterr);
        if (r < 0) {
            json_decref(upd);
            return r;
        }
        world_replace(w, w->new_rs, got ? got : json_incref(upd));
        json_decref(upd);
    }
    if (ck__deploy_sync_deployment_revision(w->d, w->new_rs, now_ns(c)))
        return update_status(c, w, reterr);
    return 0;
}

/* cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit, oldest revision first. */
static int cleanup(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    if (!ck__deploy_has_revision_history_limit(w->d) || !w->n_old)
        return 0;
    const json_t **del = ck__calloc(w->n_old, sizeof(*del));
    if (!del)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    size_t n = ck__deploy_cleanup_choice(w->d, w->old, w->n_old, del);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        struct ck_err err = {0};
        CK_LOGV(4, "deployment %s: deleting old replica set %s", w->key, ck__deploy_name(del[i]));
        int r = ck_ctl_delete(&c->client, c->rss_res, ck__meta_str(del[i], "namespace"),
                              ck__deploy_name(del[i]), NULL, NULL, &err);
        if (r < 0 && r != CK_ENOENT && !first) {
            first = r;
            if (reterr)
                *reterr = err;
        }
    }
    free(del);
    return first;
}

/* The new ReplicaSet followed by the old ones (allRSs), borrowed; caller frees. */
static const json_t **all_rss(const struct world *w, size_t *ret_n)
{
    const json_t **all = ck__calloc(w->n_old + 1, sizeof(*all));
    size_t n = 0;
    if (!all)
        return NULL;
    for (size_t i = 0; i < w->n_old; i++)
        all[n++] = w->old[i];
    if (w->new_rs)
        all[n++] = w->new_rs;
    *ret_n = n;
    return all;
}

/* syncDeploymentStatus: calculateStatus, written when it changed. */
static int sync_status(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    size_t n = 0;
    const json_t **all = all_rss(w, &n);
    json_t *status = all ? ck__deploy_calculate_status(all, n, w->new_rs, w->d, now_ns(c)) : NULL;
    free(all);
    if (!status)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = 0;
    if (!json_equal(json_object_get(w->d, "status"), status)) {
        json_object_set(w->d, "status", status);
        r = update_status(c, w, reterr);
    }
    json_decref(status);
    return r;
}

/* syncRolloutStatus: the status with the Progressing condition; requeue a stuck rollout. */
static int sync_rollout_status(struct ck_deploy_controller *c, struct world *w,
                               struct ck_err *reterr)
{
    size_t n = 0;
    int64_t now = now_ns(c);
    const json_t **all = all_rss(w, &n);
    json_t *status = all ? ck__deploy_rollout_status(all, n, w->new_rs, w->d, now) : NULL;
    free(all);
    if (!status)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = 0;
    if (json_equal(json_object_get(w->d, "status"), status)) {
        int64_t after = ck__deploy_requeue_stuck_after(w->d, status, now);
        if (after == 0)
            ck_wq_add_rate_limited(c->ctl.queue, w->key);
        else if (after > 0)
            ck_wq_add_after(c->ctl.queue, w->key, after);
    } else {
        json_object_set(w->d, "status", status);
        r = update_status(c, w, reterr);
    }
    json_decref(status);
    return r;
}

/* ---- the strategies ------------------------------------------------------------ */

/* sync: scale (proportionally during a rollout), clean up when paused, write status. */
static int sync_scale(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    int r = sync_revision(c, w, false, reterr);
    if (r < 0)
        return r;
    int32_t new_size = 0;
    int32_t *sizes = ck__calloc(w->n_old ? w->n_old : 1, sizeof(*sizes));
    const json_t **old = ck__calloc(w->n_old ? w->n_old : 1, sizeof(*old));
    bool prop = false;
    if (!sizes || !old ||
        ck__deploy_scale(w->d, w->new_rs, w->old, w->n_old, &new_size, sizes, &prop) < 0) {
        free(sizes);
        free(old);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    /* scale_rs replaces entries of w->old: work from a snapshot */
    size_t n_old = w->n_old;
    if (n_old)
        memcpy(old, w->old, n_old * sizeof(*old));
    const json_t *new_rs = w->new_rs;
    for (size_t i = 0; i < n_old && r == 0; i++)
        if (!prop || ck__deploy_spec_replicas(old[i]) > 0)
            r = scale_rs(c, w, old[i], sizes[i], prop, NULL, reterr);
    if (r == 0 && new_rs && (!prop || ck__deploy_spec_replicas(new_rs) > 0))
        r = scale_rs(c, w, new_rs, new_size, prop, NULL, reterr);
    free(sizes);
    free(old);
    if (r < 0)
        return r;
    bool paused = json_is_true(json_object_get(json_object_get(w->d, "spec"), "paused"));
    if (paused && ck__deploy_rollback_revision(w->d) < 0) {
        r = cleanup(c, w, reterr);
        if (r < 0)
            return r;
    }
    return sync_status(c, w, reterr);
}

/* The end of both strategies: a complete rollout cleans up its history; the status. */
static int finish_rollout(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    if (ck__deploy_complete(w->d, json_object_get(w->d, "status"))) {
        int r = cleanup(c, w, reterr);
        if (r < 0)
            return r;
    }
    return sync_rollout_status(c, w, reterr);
}

/* rolloutRolling. */
static int rollout_rolling(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    int r = sync_revision(c, w, true, reterr);
    if (r < 0)
        return r;
    size_t n_all = 0;
    const json_t **all = all_rss(w, &n_all);
    if (!all)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    bool scaled = false;
    int32_t size = 0;
    if (w->new_rs && ck__deploy_reconcile_new_rs(w->d, all, n_all, w->new_rs, &size) == 0)
        r = scale_rs(c, w, w->new_rs, size, false, &scaled, reterr);
    free(all);
    if (r < 0 || scaled)
        return r < 0 ? r : sync_rollout_status(c, w, reterr);

    /* the active old ReplicaSets */
    all = all_rss(w, &n_all);
    const json_t **active = ck__calloc(w->n_old ? w->n_old : 1, sizeof(*active));
    int32_t *sizes = ck__calloc(w->n_old ? w->n_old : 1, sizeof(*sizes));
    if (!all || !active || !sizes) {
        free(all);
        free(active);
        free(sizes);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    size_t n_active = 0;
    for (size_t i = 0; i < w->n_old; i++)
        if (ck__deploy_spec_replicas(w->old[i]) > 0)
            active[n_active++] = w->old[i];
    int32_t down =
        ck__deploy_reconcile_old_rss(w->d, all, n_all, active, n_active, w->new_rs, sizes);
    for (size_t i = 0; down > 0 && i < n_active && r == 0; i++)
        r = scale_rs(c, w, active[i], sizes[i], false, &scaled, reterr);
    free(all);
    free(active);
    free(sizes);
    if (r < 0 || scaled)
        return r < 0 ? r : sync_rollout_status(c, w, reterr);

    return finish_rollout(c, w, reterr);
}

/* rolloutRecreate. */
static int rollout_recreate(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    int r = sync_revision(c, w, false, reterr);
    if (r < 0)
        return r;
    bool scaled = false;
    const json_t **snap = ck__calloc(w->n_old ? w->n_old : 1, sizeof(*snap));
    if (!snap)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    size_t n_old = w->n_old;
    if (n_old)
        memcpy(snap, w->old, n_old * sizeof(*snap));
    for (size_t i = 0; i < n_old && r == 0; i++)
        if (ck__deploy_spec_replicas(snap[i]) > 0)
            r = scale_rs(c, w, snap[i], 0, false, &scaled, reterr);
    free(snap);
    if (r < 0 || scaled)
        return r < 0 ? r : sync_rollout_status(c, w, reterr);

    if (ck__deploy_old_pods_running(w->new_rs, w->old, w->n_old, w->pod_map))
        return sync_rollout_status(c, w, reterr);
    if (!w->new_rs) {
        r = sync_revision(c, w, true, reterr);
        if (r < 0)
            return r;
    }
    if (w->new_rs) {
        r = scale_rs(c, w, w->new_rs, ck__deploy_spec_replicas(w->d), false, NULL, reterr);
        if (r < 0)
            return r;
    }
    return finish_rollout(c, w, reterr);
}

/* updateDeploymentAndClearRollbackTo: the Deployment without the rollback annotation. */
static int clear_rollback(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    json_object_del(json_object_get(json_object_get(w->d, "metadata"), "annotations"),
                    CK_DEPLOY_ROLLBACK_TO_ANNOTATION);
    return ck_ctl_update(&c->client, c->ds_res, ck__meta_str(w->d, "namespace"), w->d, NULL,
                         reterr);
}

/*
 * rollback: the deprecated deprecated.deployment.rollback.to annotation (set by the old
 * extensions/v1beta1 rollback subresource, or by hand): the Deployment takes the
 * template of that revision (0: the previous one), the annotation goes, events say how
 * it went. kubectl 1.32's undo does not use it (it patches the template itself).
 */
static int rollback(struct ck_deploy_controller *c, struct world *w, struct ck_err *reterr)
{
    int r = sync_revision(c, w, true, reterr);
    if (r < 0)
        return r;
    size_t n = 0;
    const json_t **all = all_rss(w, &n);
    if (!all)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int64_t revision = ck__deploy_rollback_revision(w->d);
    const json_t *rs = NULL;
    if (ck__deploy_rollback_find(all, n, revision, &rs) < 0) {
        ck_event_recordf(c->recorder, w->d, CK_EVENT_WARNING, CK_DEPLOY_REASON_ROLLBACK_NOT_FOUND,
                         "%s",
                         revision == 0 ? "Unable to find last revision."
                                       : "Unable to find the revision to rollback to.");
    } else {
        int64_t to = 0;
        if (ck__deploy_revision(rs, &to) < 0)
            to = revision;
        if (ck__deploy_rollback_to_template(w->d, rs))
            ck_event_recordf(c->recorder, w->d, CK_EVENT_NORMAL, CK_DEPLOY_REASON_ROLLBACK_DONE,
                             "Rolled back deployment \"%s\" to revision %" PRId64,
                             ck__deploy_name(w->d), to);
        else
            ck_event_recordf(c->recorder, w->d, CK_EVENT_WARNING,
                             CK_DEPLOY_REASON_ROLLBACK_UNCHANGED,
                             "The rollback revision contains the same template as current "
                             "deployment \"%s\"",
                             ck__deploy_name(w->d));
    }
    free(all);
    return clear_rollback(c, w, reterr);
}

/* ---- sync ------------------------------------------------------------------------- */

/* getReplicaSetsForDeployment: the namespace's ReplicaSets, claimed. */
static int claim_rss(struct ck_deploy_controller *c, struct world *w, const json_t *cached,
                     const struct ck_label_selector *sel, struct ck_err *reterr)
{
    struct ck_obj_list all = {0}, claimed = {0};
    const char *ns = ck__meta_str(w->d, "namespace");
    int r = ck_lister_list(&c->rss, ns ? ns : "", NULL, &all, reterr);
    if (r < 0)
        return r;
    struct ck_ref_owner owner = {
        .owner = cached,
        .api_version = D_API_VERSION,
        .kind = D_KIND,
        .selector = sel,
        .client = &c->client,
        .owner_res = c->ds_res,
        .child_res = c->rss_res,
    };
    r = ck_claim_objects(&owner, all.items, all.n, &claimed, reterr);
    ck_obj_list_release(&all);
    for (size_t i = 0; i < claimed.n && r == 0; i++) {
        r = world_add(w, claimed.items[i]);
        claimed.items[i] = NULL;
    }
    ck_obj_list_release(&claimed);
    if (r == CK_ENOMEM)
        ck_err_set(reterr, r, "out of memory");
    return r;
}

/*
 * getPodMapForDeployment: for every claimed ReplicaSet's uid, the phases of the pods it
 * controls that the Deployment's selector matches (only what oldPodsRunning reads).
 */
static int map_pods(struct ck_deploy_controller *c, struct world *w,
                    const struct ck_label_selector *sel, struct ck_err *reterr)
{
    w->pod_map = json_object();
    if (!w->pod_map)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n; i++) {
        const char *uid = ck__deploy_uid(w->rss[i]);
        if (uid)
            json_object_set_new(w->pod_map, uid, json_array());
    }
    struct ck_obj_list pods = {0};
    const char *ns = ck__meta_str(w->d, "namespace");
    int r = ck_lister_list(&c->pods, ns ? ns : "", sel, &pods, reterr);
    if (r < 0)
        return r;
    for (size_t i = 0; i < pods.n; i++) {
        const json_t *ref = ck_controller_ref(pods.items[i]);
        const char *uid = ref ? json_string_value(json_object_get(ref, "uid")) : NULL;
        json_t *list = uid ? json_object_get(w->pod_map, uid) : NULL;
        if (!list)
            continue;
        const json_t *phase = json_object_get(json_object_get(pods.items[i], "status"), "phase");
        json_array_append_new(list, json_pack("{s:{s:s?}, s:{s:O?}}", "metadata", "name",
                                              ck__meta_str(pods.items[i], "name"), "status",
                                              "phase", phase));
    }
    ck_obj_list_release(&pods);
    return 0;
}

static int sync_deployment(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_deploy_controller *c = ctl->data;
    const json_t *cached = NULL;
    char *ns = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->ds, ns, name, &cached);
    free(ns);
    free(name);
    if (r < 0) {
        CK_LOGV(4, "deployment %s has been deleted", key);
        return 0;
    }
    struct world w = {.key = key, .d = ck__json_copy(cached)};
    if (!w.d) {
        ck_cached_unref(cached);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }

    struct ck_label_selector *sel = NULL;
    const json_t *spec_sel = json_object_get(json_object_get(w.d, "spec"), "selector");
    if (!spec_sel || ck_label_selector_from_object(spec_sel, &sel, NULL) < 0) {
        CK_LOGE("deployment %s: invalid selector; not syncing", key);
        r = 0; /* retrying cannot help until the object changes */
        goto out;
    }
    if (ck_label_selector_is_empty(sel)) {
        ck_event_recordf(c->recorder, w.d, CK_EVENT_WARNING, "SelectingAll",
                         "This deployment is selecting all pods. A non-empty selector is "
                         "required.");
        json_t *status = ck__deploy_child(w.d, "status");
        json_int_t gen = json_integer_value(json_object_get(meta(w.d), "generation"));
        if (json_integer_value(json_object_get(status, "observedGeneration")) < gen) {
            json_object_set_new(status, "observedGeneration", json_integer(gen));
            r = update_status(c, &w, reterr);
        }
        goto out;
    }

    r = claim_rss(c, &w, cached, sel, reterr);
    /* Kubernetes builds the pod map on every sync, but only rolloutRecreate reads it: for a
     * RollingUpdate it was a list and a copy of every pod per sync for nothing (half the
     * controller-manager's CPU in a 10,000-replica create). Same decisions, same writes. */
    if (r == 0 && is_recreate(w.d))
        r = map_pods(c, &w, sel, reterr);
    if (r < 0)
        goto out;

    if (being_deleted(w.d)) {
        r = sync_revision(c, &w, false, reterr);
        if (r == 0)
            r = sync_status(c, &w, reterr);
        goto out;
    }
    /* checkPausedConditions */
    if (ck__deploy_check_paused_conditions(w.d, now_ns(c))) {
        r = update_status(c, &w, reterr);
        if (r < 0)
            goto out;
    }
    if (json_is_true(json_object_get(json_object_get(w.d, "spec"), "paused"))) {
        r = sync_scale(c, &w, reterr);
        goto out;
    }
    if (ck__deploy_rollback_revision(w.d) >= 0) {
        r = rollback(c, &w, reterr);
        goto out;
    }
    if (ck__deploy_is_scaling_event(w.d, w.rss, w.n)) {
        r = sync_scale(c, &w, reterr);
        goto out;
    }
    if (is_recreate(w.d))
        r = rollout_recreate(c, &w, reterr);
    else
        r = rollout_rolling(c, &w, reterr);
out:
    ck_label_selector_free(sel);
    ck_cached_unref(cached);
    world_release(&w);
    return r;
}

/* ---- lifecycle ------------------------------------------------------------------- */

static int init_common(struct ck_deploy_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->ds_res = ck_controller_resource("apps", "v1", "deployments");
    c->rss_res = ck_controller_resource("apps", "v1", "replicasets");
    c->pods_res = ck_controller_resource("", "v1", "pods");
    if (!c->now)
        c->now = real_now;
    if (!c->ds_res || !c->rss_res || !c->pods_res)
        return ck_err_set(reterr, CK_ENOENT, "deployment: the API kinds it needs are unknown");
    int r = ck__ctl_recorder(&c->sink, &c->client, "deployment-controller", clock,
                             synchronous_events, &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "deployment", sync_deployment, c, clock, reterr);
    return r;
}

int ck_deploy_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                             struct ck_clock *clock, struct ck_deploy_controller **ret_c,
                             struct ck_err *reterr)
{
    struct ck_deploy_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler d_h, rs_h, pod_h;
    ck_deploy_controller_handlers(c, &d_h, &rs_h, &pod_h);
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->ds_res, &d_h, &c->infs[0], &c->ds, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->rss_res, &rs_h, &c->infs[1], &c->rss, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[2], &c->pods, reterr);
    if (r < 0) {
        ck_deploy_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_deploy_controller_new_with(const struct ck_deploy_controller_deps *deps,
                                  struct ck_deploy_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->deployments || !deps->replicasets || !deps->pods)
        return ck_err_set(reterr, CK_EINVAL, "deployment: a client and three listers are needed");
    struct ck_deploy_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->ds = *deps->deployments;
    c->rss = *deps->replicasets;
    c->pods = *deps->pods;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    int r = init_common(c, deps->client, deps->clock, !deps->async_events, reterr);
    if (r < 0) {
        ck_deploy_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

void ck_deploy_controller_handlers(struct ck_deploy_controller *c,
                                   struct ck_event_handler *ret_deployments,
                                   struct ck_event_handler *ret_rss,
                                   struct ck_event_handler *ret_pods)
{
    *ret_deployments = (struct ck_event_handler){d_add, d_update, d_delete, c};
    *ret_rss = (struct ck_event_handler){rs_add, rs_update, rs_delete, c};
    *ret_pods = (struct ck_event_handler){pod_add, pod_update, pod_delete, c};
}

int ck_deploy_controller_sync(struct ck_deploy_controller *c, const char *key,
                              struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_deploy_controller_run(struct ck_deploy_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 3, workers, &c->runner, reterr);
}

struct ck_deploy_controller *ck_deploy_controller_free(struct ck_deploy_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    free(c);
    return NULL;
}

struct ck_wq *ck_deploy_controller_queue(struct ck_deploy_controller *c)
{
    return c->ctl.queue;
}
