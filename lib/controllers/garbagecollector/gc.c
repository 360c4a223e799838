/*
 * gc.c - the garbage collector's workers, monitors and lifecycle (kubernetes
 * pkg/controller/garbagecollector/garbagecollector.go).
 *
 * attemptToDelete(uid) (attemptToDeleteItem):
 *   1. a node being deleted that is not deleting its dependents is left alone;
 *   2. a fresh GET of the node: gone or another uid -> a virtual delete event (the graph
 *      builder removes the node and queues its dependents); a virtual node that exists is
 *      retried until an informer shows it;
 *   3. an object deleting its dependents (foregroundDeletion): when no dependent with
 *      blockOwnerDeletion pointing at it is left, its finalizer is removed; otherwise
 *      those dependents are queued;
 *   4. otherwise each ownerReference is classified by a fresh GET of the owner in the
 *      dependent's namespace (cluster-scoped owners without one): dangling (absent or
 *      another uid), waiting (owner deleting its dependents) or solid. A cluster-scoped
 *      object naming a namespaced owner is invalid: it gets an OwnerRefInvalidNamespace
 *      event and is never deleted for it (Kubernetes' rule);
 *   5. with a solid owner, only the dangling and waiting references are removed; with
 *      waiting owners and dependents of its own, the object's blocking references to the
 *      waiting owners are unblocked and it is deleted in foreground; otherwise it is
 *      deleted with the policy its own finalizers ask for (orphan, foreground, else
 *      background), always with a uid precondition.
 * attemptToOrphan(uid) (attemptToOrphanWorker): removes the owner's references from
 *   every dependent in the graph, then the owner's orphan finalizer.
 *
 * Monitors: one per resource discovery reports with list, watch and delete in its
 * group's preferred version, except events (Kubernetes' ignored resources): a handler on
 * the shared informer the controller manager already has for it, else a metadata
 * informer of its own. Discovery is re-read every CK_GC_RESYNC_PERIOD: new resources get
 * monitors, vanished ones lose theirs. Workers start once the first monitors synced, so
 * decisions never rest on a half-built graph.
 *
 * Threading: the main thread owns the monitors; the graph builder thread owns the graph
 * (see internal.h); workers run under two runners. ck_gc_free stops them in the order
 * informers, main thread, builder, workers.
 *
 * Tested by tests/controllers/test_gc_graph.c and test_gc_sync.c (fakes) and by
 * tests/e2e/test_gc.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ck__gc_monitor {
    struct ck__gc_monitor *next;
    struct ck_gc *gc;
    char api_version[192], kind[128], group[128], resource[128];
    struct ck_metadata_informer *mi; /* NULL when shared is used */
    struct ck_informer *shared;      /* borrowed from the factory; NULL: mi */
    struct ck_event_handler handler;
    bool seen;
};

static struct ck_informer *monitor_informer(struct ck__gc_monitor *m)
{
    return m->shared ? m->shared : ck_metadata_informer_informer(m->mi);
}

/* Detaches the monitor from a shared informer, or stops and frees its own; frees m. */
static void monitor_free(struct ck__gc_monitor *m)
{
    if (m->shared)
        ck_informer_remove_handler(m->shared, &m->handler);
    ck_metadata_informer_free(m->mi);
    free(m);
}

/* ---- the workers -------------------------------------------------------------------- */

struct blocking {
    char *uid;
    bool deleting_dependents;
};

/* What a worker copies out of a node under the lock. */
struct node_copy {
    struct ck__gc_identity id;
    bool is_virtual, being_deleted, deleting_dependents;
    bool dep_deleting_dependents; /* a dependent is itself deleting in the foreground */
    size_t n_deps;
    struct blocking *blocking; /* dependents with blockOwnerDeletion to this node */
    size_t n_blocking;
    struct ck__gc_identity *deps; /* every dependent (for orphaning) */
};

static void node_copy_release(struct node_copy *c)
{
    ck__gc_identity_release(&c->id);
    for (size_t i = 0; i < c->n_blocking; i++)
        free(c->blocking[i].uid);
    free(c->blocking);
    for (size_t i = 0; c->deps && i < c->n_deps; i++)
        ck__gc_identity_release(&c->deps[i]);
    free(c->deps);
}

/* 1 with *c filled, 0 when uid is not in the graph, CK_ENOMEM. */
static int copy_node(struct ck_gc *gc, const char *uid, bool with_deps, struct node_copy *c)
{
    memset(c, 0, sizeof(*c));
    int r = 1;
    pthread_mutex_lock(&gc->lock);
    struct ck__gc_node *n = ck__gc_graph_get(&gc->graph, uid);
    if (!n) {
        r = 0;
        goto out;
    }
    if (ck__gc_identity_set(&c->id, n->id.api_version, n->id.kind, n->id.namespace, n->id.name,
                            n->id.uid) < 0) {
        r = CK_ENOMEM;
        goto out;
    }
    c->is_virtual = n->is_virtual;
    c->being_deleted = n->being_deleted;
    c->deleting_dependents = n->deleting_dependents;
    c->n_deps = n->n_deps;
    c->blocking = n->n_deps ? ck__calloc(n->n_deps, sizeof(*c->blocking)) : NULL;
    c->deps = with_deps && n->n_deps ? ck__calloc(n->n_deps, sizeof(*c->deps)) : NULL;
    if ((n->n_deps && !c->blocking) || (with_deps && n->n_deps && !c->deps)) {
        r = CK_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n->n_deps; i++) {
        const struct ck__gc_node *d = n->deps[i];
        c->dep_deleting_dependents = c->dep_deleting_dependents || d->deleting_dependents;
        if (with_deps && ck__gc_identity_set(&c->deps[i], d->id.api_version, d->id.kind,
                                             d->id.namespace, d->id.name, d->id.uid) < 0) {
            r = CK_ENOMEM;
            goto out;
        }
        for (size_t k = 0; k < d->n_owners; k++)
            if (d->owners[k].block && strcmp(d->owners[k].uid, uid) == 0) {
                struct blocking *b = &c->blocking[c->n_blocking];
                if (!(b->uid = ck__strdup(d->id.uid))) {
                    r = CK_ENOMEM;
                    goto out;
                }
                b->deleting_dependents = d->deleting_dependents;
                c->n_blocking++;
                break;
            }
    }
out:
    pthread_mutex_unlock(&gc->lock);
    if (r <= 0)
        node_copy_release(c);
    return r;
}

static bool is_absent(struct ck_gc *gc, const char *namespace, const char *uid)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", namespace, uid);
    pthread_mutex_lock(&gc->lock);
    bool hit = ck__strmap_find(&gc->absent, key) != NULL;
    pthread_mutex_unlock(&gc->lock);
    return hit;
}

static void mark_absent(struct ck_gc *gc, const char *namespace, const char *uid)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", namespace, uid);
    pthread_mutex_lock(&gc->lock);
    if (gc->absent.len >= 1024)
        ck__strmap_release(&gc->absent);
    bool created;
    ck__strmap_put(&gc->absent, key, NULL, &created);
    pthread_mutex_unlock(&gc->lock);
}

static bool deleting_dependents(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") &&
           ck__gc_has_finalizer(obj, "foregroundDeletion");
}

enum ref_class { REF_SOLID, REF_DANGLING, REF_WAITING, REF_INVALID };

/* Classifies one ownerReference of the dependent id (isDangling). */
static int classify(struct ck_gc *gc, const struct ck__gc_identity *id,
                    const struct ck__gc_ref *ref, enum ref_class *ret, struct ck_err *reterr)
{
    if (is_absent(gc, "", ref->uid) || is_absent(gc, id->namespace, ref->uid)) {
        *ret = REF_DANGLING;
        return 0;
    }
    struct ck_api_resource ar;
    int r = ck__gc_resource(gc, ref->api_version, ref->kind, &ar, reterr);
    if (r < 0)
        return r;
    if (ar.res.namespaced && !*id->namespace) {
        *ret = REF_INVALID;
        return 0;
    }
    const char *ns = ar.res.namespaced ? id->namespace : "";
    json_t *owner = NULL;
    r = ck_ctl_get(&gc->client, &ar.res, ns, ref->name, &owner, reterr);
    if (r == CK_ENOENT) {
        mark_absent(gc, ns, ref->uid);
        *ret = REF_DANGLING;
        return 0;
    }
    if (r < 0)
        return r;
    const char *uid = ck__meta_str(owner, "uid");
    if (!uid || strcmp(uid, ref->uid) != 0) {
        mark_absent(gc, ns, ref->uid);
        *ret = REF_DANGLING;
    } else {
        *ret = deleting_dependents(owner) ? REF_WAITING : REF_SOLID;
    }
    json_decref(owner);
    return 0;
}

static int process_deleting_dependents(struct ck_gc *gc, const struct node_copy *c,
                                       struct ck_err *reterr)
{
    if (c->n_blocking == 0)
        return ck__gc_remove_finalizer(gc, &c->id, "foregroundDeletion", reterr);
    for (size_t i = 0; i < c->n_blocking; i++)
        if (!c->blocking[i].deleting_dependents)
            ck_wq_add(gc->delete_queue, c->blocking[i].uid);
    return 0;
}

/* Acts on the classified references of the live object latest. */
static int act_on_refs(struct ck_gc *gc, const struct node_copy *c, const json_t *latest,
                       struct ck_err *reterr)
{
    struct ck__gc_ref *refs = NULL;
    size_t n = 0;
    if (ck__gc_refs_parse(latest, &refs, &n) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (n == 0)
        return 0;
    const char **gone = ck__calloc(n, sizeof(*gone)), **waiting = ck__calloc(n, sizeof(*waiting));
    size_t n_solid = 0, n_gone = 0, n_waiting = 0;
    int r = gone && waiting ? 0 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    for (size_t i = 0; r == 0 && i < n; i++) {
        enum ref_class cls;
        r = classify(gc, &c->id, &refs[i], &cls, reterr);
        if (r < 0)
            break;
        if (cls == REF_INVALID) {
            ck__gc_report_invalid_namespace(gc, &c->id, &refs[i]);
            n_solid++; /* never a reason to delete */
        } else if (cls == REF_SOLID) {
            n_solid++;
        } else if (cls == REF_DANGLING) {
            gone[n_gone++] = refs[i].uid;
        } else {
            waiting[n_waiting++] = refs[i].uid;
            gone[n_gone++] = refs[i].uid; /* with a solid owner, waiting refs go too */
        }
    }
    if (r == 0 && n_solid > 0) {
        if (n_gone)
            r = ck__gc_remove_owner_refs(gc, &c->id, gone, n_gone, reterr);
    } else if (r == 0 && n_waiting > 0 && c->n_deps > 0) {
        /*
         * An owner waits for us and we have dependents: delete in the foreground too,
         * so the owner keeps waiting for us. Only when one of our dependents is itself
         * deleting its dependents may this be a cycle of owners; then (as Kubernetes)
         * our references to the waiting owners stop blocking them first.
         */
        if (c->dep_deleting_dependents)
            r = ck__gc_unblock_owner_refs(gc, &c->id, waiting, n_waiting, reterr);
        if (r == 0)
            r = ck__gc_delete_object(gc, &c->id, "Foreground", reterr);
    } else if (r == 0) {
        const char *policy = ck__gc_has_finalizer(latest, "orphan")               ? "Orphan"
                             : ck__gc_has_finalizer(latest, "foregroundDeletion") ? "Foreground"
                                                                                  : "Background";
        CK_LOGV(2, "garbage collector: deleting %s %s/%s (%s), its owners are gone", c->id.kind,
                c->id.namespace, c->id.name, policy);
        r = ck__gc_delete_object(gc, &c->id, policy, reterr);
        if (r == CK_ENOENT || r == CK_ECONFLICT) /* gone, or replaced: nothing to do */
            r = 0;
    }
    free(gone);
    free(waiting);
    ck__gc_refs_free(refs, n);
    return r;
}

int ck_gc_attempt_to_delete(struct ck_gc *gc, const char *uid, struct ck_err *reterr)
{
    struct node_copy c;
    int r = copy_node(gc, uid, false, &c);
    if (r <= 0)
        return r < 0 ? ck_err_set(reterr, r, "out of memory") : 0;
    if (c.being_deleted && !c.deleting_dependents) {
        node_copy_release(&c);
        return 0;
    }
    json_t *latest = NULL;
    r = ck__gc_get_object(gc, &c.id, &latest, reterr);
    const char *live_uid = r == 0 ? ck__meta_str(latest, "uid") : NULL;
    if (r == CK_ENOENT || (r == 0 && (!live_uid || strcmp(live_uid, c.id.uid) != 0))) {
        r = ck__gc_enqueue_virtual_delete(gc, &c.id);
        if (r < 0)
            ck_err_set(reterr, r, "out of memory");
    } else if (r == 0 && c.is_virtual) {
        r = ck_err_set(reterr, CK_ECONFLICT, "%s %s exists but no informer has shown it yet",
                       c.id.kind, c.id.name);
    } else if (r == 0 && deleting_dependents(latest)) {
        r = process_deleting_dependents(gc, &c, reterr);
    } else if (r == 0) {
        r = act_on_refs(gc, &c, latest, reterr);
    }
    json_decref(latest);
    node_copy_release(&c);
    return r;
}

int ck_gc_attempt_to_orphan(struct ck_gc *gc, const char *uid, struct ck_err *reterr)
{
    struct node_copy c;
    int r = copy_node(gc, uid, true, &c);
    if (r <= 0)
        return r < 0 ? ck_err_set(reterr, r, "out of memory") : 0;
    const char *uids[] = {c.id.uid};
    int first = 0;
    for (size_t i = 0; i < c.n_deps; i++) {
        r = ck__gc_remove_owner_refs(gc, &c.deps[i], uids, 1, reterr);
        if (r < 0 && first == 0)
            first = r;
    }
    if (first == 0)
        first = ck__gc_remove_finalizer(gc, &c.id, "orphan", reterr);
    node_copy_release(&c);
    return first;
}

static int delete_sync(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_gc_attempt_to_delete(ctl->data, key, reterr);
}

static int orphan_sync(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_gc_attempt_to_orphan(ctl->data, key, reterr);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

int ck_gc_new(const struct ck_gc_config *config, struct ck_gc **ret_gc, struct ck_err *reterr)
{
    if (!config->discovery || !config->client.ops)
        return ck_err_set(reterr, CK_EINVAL, "garbage collector: needs a client and discovery");
    struct ck_gc *gc = ck__calloc(1, sizeof(*gc));
    if (!gc)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    gc->client = config->client;
    gc->discovery = config->discovery;
    gc->rest = config->rest;
    gc->shared = config->shared;
    gc->clock = config->clock;
    if (ck__ctl_recorder(&gc->sink, &gc->client, "garbage-collector-controller", config->clock,
                         !config->async_events, &gc->recorder, NULL) < 0)
        gc->recorder = NULL; /* events are best effort; the collector works without */
    pthread_mutex_init(&gc->lock, NULL);
    pthread_mutex_init(&gc->changes_lock, NULL);
    pthread_cond_init(&gc->changes_cond, NULL);
    pthread_mutex_init(&gc->monitors_lock, NULL);
    pthread_cond_init(&gc->stop_cond, NULL);
    atomic_init(&gc->stop, false);
    struct ck_wq_options d = {.name = "garbage_collector_attempt_to_delete",
                              .clock = config->clock,
                              .limiter = ck_rl_default_controller_new(config->clock)};
    struct ck_wq_options o = {.name = "garbage_collector_attempt_to_orphan",
                              .clock = config->clock,
                              .limiter = ck_rl_default_controller_new(config->clock)};
    int r = d.limiter && o.limiter ? 0 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0)
        r = ck_wq_new(&d, &gc->delete_queue, reterr);
    else
        ck_rl_free(d.limiter);
    if (r == 0)
        r = ck_wq_new(&o, &gc->orphan_queue, reterr);
    else
        ck_rl_free(o.limiter);
    if (r < 0) {
        ck_gc_free(gc);
        return r;
    }
    gc->delete_ctl = (struct ck_controller){.name = "garbagecollector-delete",
                                            .sync = delete_sync,
                                            .data = gc,
                                            .queue = gc->delete_queue};
    gc->orphan_ctl = (struct ck_controller){.name = "garbagecollector-orphan",
                                            .sync = orphan_sync,
                                            .data = gc,
                                            .queue = gc->orphan_queue};
    *ret_gc = gc;
    return 0;
}

/* ---- monitors ------------------------------------------------------------------------ */

static void mon_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    struct ck__gc_monitor *m = arg;
    ck_gc_observe(m->gc, CK_GC_ADD, m->api_version, m->kind, obj, NULL);
}

static void mon_update(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    struct ck__gc_monitor *m = arg;
    if (old_obj != new_obj) /* a resync changes nothing the graph knows */
        ck_gc_observe(m->gc, CK_GC_UPDATE, m->api_version, m->kind, new_obj, old_obj);
}

static void mon_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    struct ck__gc_monitor *m = arg;
    ck_gc_observe(m->gc, CK_GC_DELETE, m->api_version, m->kind, obj, NULL);
}

static bool wanted(const struct ck_discovered *d)
{
    unsigned need = CK_VERB_LIST | CK_VERB_WATCH | CK_VERB_DELETE;
    if (!d->preferred || (d->verbs & need) != need)
        return false;
    /* Kubernetes' DefaultIgnoredResources: events come and go by the thousand */
    return strcmp(d->resource, "events") != 0 ||
           (strcmp(d->group, "") != 0 && strcmp(d->group, "events.k8s.io") != 0);
}

static struct ck__gc_monitor *monitor_new(struct ck_gc *gc, const struct ck_discovered *d)
{
    struct ck__gc_monitor *m = ck__calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->gc = gc;
    snprintf(m->api_version, sizeof(m->api_version), "%s", d->api_version);
    snprintf(m->kind, sizeof(m->kind), "%s", d->kind);
    snprintf(m->group, sizeof(m->group), "%s", d->group);
    snprintf(m->resource, sizeof(m->resource), "%s", d->resource);
    struct ck_err err = {0};
    m->handler = (struct ck_event_handler){mon_add, mon_update, mon_delete, m};
    m->shared = gc->shared ? ck_informer_factory_lookup(gc->shared, d->group, d->resource) : NULL;
    if (m->shared && ck_informer_add_handler(m->shared, &m->handler, 0, &err) == 0) {
        CK_LOGV(2, "garbage collector: monitoring %s.%s through the shared informer", d->resource,
                d->group);
        return m;
    }
    m->shared = NULL; /* not shared, or that informer cannot take a late handler */
    /*
     * As kube-controller-manager's metadata informers: the graph never reads managedFields.
     * Through the factory when there is one, so that they read as its informers do (in
     * `ckube server`, in-process).
     */
    int r =
        gc->shared
            ? ck_informer_factory_metadata_informer(gc->shared, &d->res, 0, gc->clock, &m->mi, &err)
            : ck_metadata_informer_new(gc->rest, &d->res, NULL, 0, gc->clock, &m->mi, &err);
    if (r < 0 ||
        ck_informer_set_transform(ck_metadata_informer_informer(m->mi),
                                  ck_transform_strip_managed_fields, NULL, &err) < 0 ||
        ck_informer_add_handler(ck_metadata_informer_informer(m->mi), &m->handler, 0, &err) < 0 ||
        ck_informer_start(ck_metadata_informer_informer(m->mi), &err) < 0) {
        CK_LOGW("garbage collector: cannot monitor %s: %s", d->resource, err.msg);
        monitor_free(m);
        return NULL;
    }
    CK_LOGV(2, "garbage collector: monitoring %s.%s", d->resource, d->group);
    return m;
}

/* Starts monitors for new resources and stops those of vanished ones. */
static int sync_monitors(struct ck_gc *gc, struct ck_err *reterr)
{
    ck_discovery_invalidate(gc->discovery);
    struct ck_discovery_snapshot *snap = NULL;
    int r = ck_discovery_get(gc->discovery, &snap, reterr);
    if (r < 0)
        return r;
    pthread_mutex_lock(&gc->monitors_lock);
    for (struct ck__gc_monitor *m = gc->monitors; m; m = m->next)
        m->seen = false;
    for (size_t i = 0; i < snap->n; i++) {
        const struct ck_discovered *d = &snap->resources[i];
        if (!wanted(d))
            continue;
        struct ck__gc_monitor *m = gc->monitors;
        while (m && (strcmp(m->group, d->group) || strcmp(m->resource, d->resource)))
            m = m->next;
        if (!m && (m = monitor_new(gc, d))) {
            m->next = gc->monitors;
            gc->monitors = m;
        }
        if (m)
            m->seen = true;
    }
    for (struct ck__gc_monitor **p = &gc->monitors; *p;) {
        struct ck__gc_monitor *m = *p;
        if (m->seen) {
            p = &m->next;
            continue;
        }
        *p = m->next;
        monitor_free(m);
    }
    pthread_mutex_unlock(&gc->monitors_lock);
    ck_discovery_snapshot_unref(snap);
    return 0;
}

/* Sleeps until deadline or stop; returns false when stopping. */
static bool sleep_until(struct ck_gc *gc, int64_t deadline)
{
    pthread_mutex_lock(&gc->monitors_lock);
    while (!atomic_load(&gc->stop) && ck_clock_now(gc->clock) < deadline)
        ck_clock_wait(gc->clock, &gc->stop_cond, &gc->monitors_lock, deadline);
    bool go_on = !atomic_load(&gc->stop);
    pthread_mutex_unlock(&gc->monitors_lock);
    return go_on;
}

static bool monitors_synced(struct ck_gc *gc)
{
    pthread_mutex_lock(&gc->monitors_lock);
    bool synced = true;
    for (struct ck__gc_monitor *m = gc->monitors; m && synced; m = m->next)
        synced = ck_informer_has_synced(monitor_informer(m));
    pthread_mutex_unlock(&gc->monitors_lock);
    return synced;
}

static void *main_thread(void *arg)
{
    struct ck_gc *gc = arg;
    struct ck_err err = {0};
    while (sync_monitors(gc, &err) < 0) {
        CK_LOGV(1, "garbage collector: discovery failed, retrying: %s", err.msg);
        if (!sleep_until(gc, ck_clock_now(gc->clock) + CK_SEC))
            return NULL;
    }
    while (!monitors_synced(gc))
        if (!sleep_until(gc, ck_clock_now(gc->clock) + 100 * CK_MSEC))
            return NULL;
    CK_LOGV(1, "garbage collector: %zu monitors synced, starting workers", ck_gc_monitors(gc));
    if (pthread_create(&gc->builder_thread, NULL, ck__gc_builder_main, gc) == 0)
        gc->builder_running = true;
    if (ck_runner_start(&gc->delete_ctl, gc->workers, &gc->delete_runner, &err) < 0 ||
        ck_runner_start(&gc->orphan_ctl, gc->workers, &gc->orphan_runner, &err) < 0)
        CK_LOGW("garbage collector: workers not started: %s", err.msg);
    while (sleep_until(gc, ck_clock_now(gc->clock) + CK_GC_RESYNC_PERIOD))
        if (sync_monitors(gc, &err) < 0)
            CK_LOGV(1, "garbage collector: discovery failed: %s", err.msg);
    return NULL;
}

int ck_gc_run(struct ck_gc *gc, int workers, struct ck_err *reterr)
{
    if (!gc->rest)
        return ck_err_set(reterr, CK_EINVAL, "garbage collector: no REST client to watch with");
    gc->workers = workers > 0 ? workers : CK_GC_CONCURRENT_SYNCS;
    if (pthread_create(&gc->main_thread, NULL, main_thread, gc) != 0)
        return ck_err_set(reterr, CK_ENOMEM, "garbage collector: cannot start");
    gc->main_running = true;
    return 0;
}

struct ck_gc *ck_gc_free(struct ck_gc *gc)
{
    if (!gc)
        return NULL;
    pthread_mutex_lock(&gc->monitors_lock);
    atomic_store(&gc->stop, true);
    pthread_cond_broadcast(&gc->stop_cond);
    pthread_mutex_unlock(&gc->monitors_lock);
    if (gc->main_running)
        pthread_join(gc->main_thread, NULL);
    /* every monitor's watch winds down at once, then each is freed */
    for (struct ck__gc_monitor *m = gc->monitors; m; m = m->next)
        if (m->mi)
            ck_informer_request_stop(ck_metadata_informer_informer(m->mi));
    while (gc->monitors) {
        struct ck__gc_monitor *m = gc->monitors;
        gc->monitors = m->next;
        monitor_free(m);
    }
    pthread_mutex_lock(&gc->changes_lock);
    gc->stopping = true;
    pthread_cond_broadcast(&gc->changes_cond);
    pthread_mutex_unlock(&gc->changes_lock);
    if (gc->builder_running)
        pthread_join(gc->builder_thread, NULL);
    if (gc->delete_runner)
        ck_runner_stop(gc->delete_runner);
    if (gc->orphan_runner)
        ck_runner_stop(gc->orphan_runner);
    ck__gc_changes_release(gc);
    ck_event_recorder_free(gc->recorder);
    ck_wq_free(gc->delete_queue);
    ck_wq_free(gc->orphan_queue);
    ck__gc_graph_release(&gc->graph);
    ck__strmap_release(&gc->absent);
    pthread_mutex_destroy(&gc->lock);
    pthread_mutex_destroy(&gc->changes_lock);
    pthread_cond_destroy(&gc->changes_cond);
    pthread_mutex_destroy(&gc->monitors_lock);
    pthread_cond_destroy(&gc->stop_cond);
    free(gc);
    return NULL;
}

/* ---- inspection ------------------------------------------------------------------------ */

struct ck_wq *ck_gc_delete_queue(struct ck_gc *gc)
{
    return gc->delete_queue;
}

struct ck_wq *ck_gc_orphan_queue(struct ck_gc *gc)
{
    return gc->orphan_queue;
}

bool ck_gc_graph_node(struct ck_gc *gc, const char *uid, struct ck_gc_node_info *ret_info)
{
    pthread_mutex_lock(&gc->lock);
    const struct ck__gc_node *n = ck__gc_graph_get(&gc->graph, uid);
    if (n && ret_info)
        *ret_info = (struct ck_gc_node_info){
            .is_virtual = n->is_virtual,
            .observed = !n->is_virtual,
            .being_deleted = n->being_deleted,
            .deleting_dependents = n->deleting_dependents,
            .n_dependents = n->n_deps,
            .n_owners = n->n_owners,
        };
    pthread_mutex_unlock(&gc->lock);
    return n != NULL;
}

size_t ck_gc_graph_len(struct ck_gc *gc)
{
    pthread_mutex_lock(&gc->lock);
    size_t n = gc->graph.len;
    pthread_mutex_unlock(&gc->lock);
    return n;
}

size_t ck_gc_monitors(struct ck_gc *gc)
{
    size_t n = 0;
    pthread_mutex_lock(&gc->monitors_lock);
    for (struct ck__gc_monitor *m = gc->monitors; m; m = m->next)
        n++;
    pthread_mutex_unlock(&gc->monitors_lock);
    return n;
}

/* ---- the controller manager's row ------------------------------------------------------ */

/* The client the collector reads and writes with: metadata for objects, REST for events. */
static int md_get(void *data, const struct ck_resource *res, const char *namespace,
                  const char *name, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_metadata_get(data, res, namespace, name, ret_obj, reterr);
}

static int md_create(void *data, const struct ck_resource *res, const char *namespace,
                     const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_create(data, res, namespace, obj, ret_obj, reterr);
}

static int md_update(void *data, const struct ck_resource *res, const char *namespace,
                     const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_update(data, res, namespace, obj, ret_obj, reterr);
}

static int md_update_status(void *data, const struct ck_resource *res, const char *namespace,
                            const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_update_status(data, res, namespace, obj, ret_obj, reterr);
}

static int md_patch(void *data, const struct ck_resource *res, const char *namespace,
                    const char *name, const char *subresource, const char *patch_type,
                    const json_t *patch, json_t **ret_obj, struct ck_err *reterr)
{
    if (subresource)
        return ck_rest_patch(data, res, namespace, name, subresource, patch_type, patch, ret_obj,
                             reterr);
    return ck_metadata_patch(data, res, namespace, name, patch_type, patch, ret_obj, reterr);
}

static int md_delete(void *data, const struct ck_resource *res, const char *namespace,
                     const char *name, const json_t *options, json_t **ret_obj,
                     struct ck_err *reterr)
{
    if (ret_obj)
        *ret_obj = NULL;
    return ck_metadata_delete(data, res, namespace, name, options, reterr);
}

static const struct ck_ctl_client_ops metadata_ops = {
    .get = md_get,
    .create = md_create,
    .update = md_update,
    .update_status = md_update_status,
    .patch = md_patch,
    .delete = md_delete,
};

struct gc_state {
    struct ck_discovery *discovery;
    struct ck_gc *gc;
};

int ck_gc_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr)
{
    struct gc_state *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_discovery_source src;
    ck_discovery_source_rest(&src, ctx->client);
    int r = ck_discovery_new(&src, 0, NULL, &s->discovery, reterr);
    struct ck_gc_config config = {
        .client = {&metadata_ops, ctx->client},
        .discovery = s->discovery,
        .rest = ctx->client,
        .shared = ctx->factory,
        .async_events = true,
    };
    if (r == 0)
        r = ck_gc_new(&config, &s->gc, reterr);
    if (r < 0) {
        ck_discovery_free(s->discovery);
        free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

int ck_gc_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct gc_state *s = state;
    return ck_gc_run(s->gc, workers, reterr); /* --concurrent-gc-syncs */
}

void ck_gc_manager_stop(void *state)
{
    struct gc_state *s = state;
    if (!s)
        return;
    ck_gc_free(s->gc);
    ck_discovery_free(s->discovery);
    free(s);
}
