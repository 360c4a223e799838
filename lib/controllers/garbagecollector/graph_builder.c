/*
 * graph_builder.c - turns informer events into graph changes (kubernetes
 * pkg/controller/garbagecollector/graph_builder.go: processGraphChanges).
 *
 * Monitors' handlers (and ck_gc_observe) copy what they need of an event's metadata into
 * a change - identity, ownerReferences, whether it is being deleted and with which GC
 * finalizers, the same for the old object - and append it to one FIFO. One thread, the
 * graph builder, takes changes off in order and is the only writer of the graph:
 *
 * - a new uid becomes a node, linked as a dependent of each owner it names; an owner
 *   not in the graph becomes a virtual node and is queued for attemptToDelete, whose
 *   live GET confirms or refutes it;
 * - an event for a virtual node's uid makes it real, taking the observed identity; a
 *   dependent whose reference disagrees with it (another namespace) is reported
 *   (OwnerRefInvalidNamespace) and queued for attemptToDelete;
 * - a change of ownerReferences relinks the node; a removed or unblocked
 *   blockOwnerDeletion reference queues that owner (it may be waiting for it);
 * - a deletion removes the node, queues its dependents for attemptToDelete and its
 *   owners that are deleting dependents (foreground) for another look;
 * - transitions: an object that starts being deleted with the orphan finalizer goes to
 *   attemptToOrphan; one with foregroundDeletion is marked deleting-dependents and it
 *   and its dependents go to attemptToDelete. An object first seen already in that state
 *   (a restart) counts as starting, so interrupted deletions finish.
 *
 * Threading: producers take gc->changes_lock only; the builder applies a change under
 * gc->lock and records events after dropping it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ck__gc_change {
    struct ck__gc_change *next;
    enum ck_gc_event_type type;
    bool is_virtual;
    struct ck__gc_identity id;
    struct ck__gc_ref *owners;
    size_t n_owners;
    bool being_deleted, has_fg, has_orphan;
    bool old_present, old_being_deleted, old_has_fg, old_has_orphan;
};

static void change_free(struct ck__gc_change *ch)
{
    ck__gc_identity_release(&ch->id);
    ck__gc_refs_free(ch->owners, ch->n_owners);
    free(ch);
}

static void push(struct ck_gc *gc, struct ck__gc_change *ch)
{
    pthread_mutex_lock(&gc->changes_lock);
    if (gc->changes_tail)
        gc->changes_tail->next = ch;
    else
        gc->changes_head = ch;
    gc->changes_tail = ch;
    pthread_cond_signal(&gc->changes_cond);
    pthread_mutex_unlock(&gc->changes_lock);
}

/* Takes the next change; blocks when wait is set, until one comes or the GC stops. */
static struct ck__gc_change *pop(struct ck_gc *gc, bool wait)
{
    pthread_mutex_lock(&gc->changes_lock);
    while (wait && !gc->changes_head && !gc->stopping)
        pthread_cond_wait(&gc->changes_cond, &gc->changes_lock);
    struct ck__gc_change *ch = gc->changes_head;
    if (ch) {
        gc->changes_head = ch->next;
        if (!gc->changes_head)
            gc->changes_tail = NULL;
    }
    pthread_mutex_unlock(&gc->changes_lock);
    return ch;
}

void ck__gc_changes_release(struct ck_gc *gc)
{
    struct ck__gc_change *ch;
    while ((ch = pop(gc, false)))
        change_free(ch);
}

int ck_gc_observe(struct ck_gc *gc, enum ck_gc_event_type type, const char *api_version,
                  const char *kind, const json_t *obj, const json_t *old_obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!uid || !*uid)
        return CK_EINVAL;
    struct ck__gc_change *ch = ck__calloc(1, sizeof(*ch));
    if (!ch)
        return CK_ENOMEM;
    ch->type = type;
    if (ck__gc_identity_set(&ch->id, api_version, kind,
                            json_string_value(json_object_get(meta, "namespace")),
                            json_string_value(json_object_get(meta, "name")), uid) < 0 ||
        ck__gc_refs_parse(obj, &ch->owners, &ch->n_owners) < 0) {
        change_free(ch);
        return CK_ENOMEM;
    }
    ch->being_deleted = json_object_get(meta, "deletionTimestamp") != NULL;
    ch->has_fg = ck__gc_has_finalizer(obj, "foregroundDeletion");
    ch->has_orphan = ck__gc_has_finalizer(obj, "orphan");
    if (old_obj) {
        ch->old_present = true;
        ch->old_being_deleted =
            json_object_get(json_object_get(old_obj, "metadata"), "deletionTimestamp") != NULL;
        ch->old_has_fg = ck__gc_has_finalizer(old_obj, "foregroundDeletion");
        ch->old_has_orphan = ck__gc_has_finalizer(old_obj, "orphan");
    }
    push(gc, ch);
    return 0;
}

int ck__gc_enqueue_virtual_delete(struct ck_gc *gc, const struct ck__gc_identity *id)
{
    struct ck__gc_change *ch = ck__calloc(1, sizeof(*ch));
    if (!ch || ck__gc_identity_set(&ch->id, id->api_version, id->kind, id->namespace, id->name,
                                   id->uid) < 0) {
        free(ch);
        return CK_ENOMEM;
    }
    ch->type = CK_GC_DELETE;
    ch->is_virtual = true;
    push(gc, ch);
    return 0;
}

/* ---- applying a change (under gc->lock) ---------------------------------------- */

/* A dependent to report for an invalid cross-namespace reference, after the unlock. */
struct report {
    struct ck__gc_identity dep;
    struct ck__gc_ref ref; /* borrowed strings copied below */
    char *ref_strs[4];
};

struct apply_ctx {
    struct ck_gc *gc;
    struct report *reports;
    size_t n_reports;
};

static void add_report(struct apply_ctx *a, const struct ck__gc_node *dep, const char *owner_uid)
{
    for (size_t i = 0; i < dep->n_owners; i++) {
        const struct ck__gc_ref *r = &dep->owners[i];
        if (strcmp(r->uid, owner_uid) != 0)
            continue;
        struct report *grown = ck__realloc(a->reports, (a->n_reports + 1) * sizeof(*grown));
        if (!grown)
            return; /* an event is best effort */
        a->reports = grown;
        struct report *rep = &a->reports[a->n_reports];
        memset(rep, 0, sizeof(*rep));
        if (ck__gc_identity_set(&rep->dep, dep->id.api_version, dep->id.kind, dep->id.namespace,
                                dep->id.name, dep->id.uid) < 0)
            return;
        rep->ref.api_version = rep->ref_strs[0] = ck__strdup(r->api_version);
        rep->ref.kind = rep->ref_strs[1] = ck__strdup(r->kind);
        rep->ref.name = rep->ref_strs[2] = ck__strdup(r->name);
        rep->ref.uid = rep->ref_strs[3] = ck__strdup(r->uid);
        a->n_reports++;
        return;
    }
}

static void enqueue_delete(struct ck_gc *gc, const char *uid)
{
    ck_wq_add(gc->delete_queue, uid);
}

static void absent_add(struct ck_gc *gc, const struct ck__gc_identity *id)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", id->namespace, id->uid);
    if (gc->absent.len >= 1024) /* a bounded cache, as Kubernetes' LRU of 500 */
        ck__strmap_release(&gc->absent);
    bool created;
    ck__strmap_put(&gc->absent, key, NULL, &created);
}

static bool ref_matches(const struct ck__gc_ref *r, const struct ck__gc_identity *id)
{
    return strcmp(r->uid, id->uid) == 0 && strcmp(r->api_version, id->api_version) == 0 &&
           strcmp(r->kind, id->kind) == 0 && strcmp(r->name, id->name) == 0;
}

/* Links n under each of refs' owners, making virtual owners where none is known. */
static void add_dependent_to_owners(struct apply_ctx *a, struct ck__gc_node *n,
                                    const struct ck__gc_ref *refs, size_t n_refs)
{
    struct ck_gc *gc = a->gc;
    for (size_t i = 0; i < n_refs; i++) {
        const struct ck__gc_ref *r = &refs[i];
        struct ck__gc_node *owner = ck__gc_graph_get(&gc->graph, r->uid);
        if (!owner) {
            struct ck__gc_identity vid = {(char *)r->api_version, (char *)r->kind, n->id.namespace,
                                          (char *)r->name, (char *)r->uid};
            owner = ck__gc_node_new(&vid);
            if (!owner || ck__gc_graph_put(&gc->graph, owner) < 0) {
                ck__gc_node_free(owner);
                CK_LOGW("garbage collector: out of memory adding owner %s", r->uid);
                continue;
            }
            owner->is_virtual = true;
            enqueue_delete(gc, owner->id.uid);
        } else if (!owner->is_virtual) {
            if (!ref_matches(r, &owner->id)) {
                enqueue_delete(gc, n->id.uid);
            } else if (*owner->id.namespace && strcmp(owner->id.namespace, n->id.namespace)) {
                add_report(a, n, owner->id.uid);
                enqueue_delete(gc, n->id.uid);
            }
        }
        if (ck__gc_node_add_dependent(owner, n) < 0)
            CK_LOGW("garbage collector: out of memory linking %s", n->id.uid);
    }
}

static void remove_dependent_from_owners(struct ck_gc *gc, struct ck__gc_node *n,
                                         const struct ck__gc_ref *refs, size_t n_refs)
{
    for (size_t i = 0; i < n_refs; i++) {
        struct ck__gc_node *owner = ck__gc_graph_get(&gc->graph, refs[i].uid);
        if (owner)
            ck__gc_node_remove_dependent(owner, n);
    }
}

static const struct ck__gc_ref *find_ref(const struct ck__gc_ref *refs, size_t n, const char *uid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(refs[i].uid, uid) == 0)
            return &refs[i];
    return NULL;
}

/* Owners that lost a blocking reference may be waiting for exactly that. */
static void add_unblocked_owners(struct ck_gc *gc, const struct ck__gc_ref *old, size_t n_old,
                                 const struct ck__gc_ref *now, size_t n_now)
{
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i].block)
            continue;
        const struct ck__gc_ref *still = find_ref(now, n_now, old[i].uid);
        if ((!still || !still->block) && ck__gc_graph_get(&gc->graph, old[i].uid))
            enqueue_delete(gc, old[i].uid);
    }
}

static void process_transitions(struct ck_gc *gc, const struct ck__gc_change *ch,
                                struct ck__gc_node *n)
{
    bool old_orphan = ch->old_present && ch->old_being_deleted && ch->old_has_orphan;
    bool old_fg = ch->old_present && ch->old_being_deleted && ch->old_has_fg;
    if (ch->being_deleted && ch->has_orphan && !old_orphan) {
        ck_wq_add(gc->orphan_queue, n->id.uid);
        return;
    }
    if (ch->being_deleted && ch->has_fg && !old_fg) {
        n->deleting_dependents = true;
        for (size_t i = 0; i < n->n_deps; i++)
            enqueue_delete(gc, n->deps[i]->id.uid);
        enqueue_delete(gc, n->id.uid);
    }
}

static void apply_upsert(struct apply_ctx *a, struct ck__gc_change *ch, struct ck__gc_node *n)
{
    struct ck_gc *gc = a->gc;
    if (!n) {
        n = ck__gc_node_new(&ch->id);
        if (!n || ck__gc_graph_put(&gc->graph, n) < 0) {
            ck__gc_node_free(n);
            CK_LOGW("garbage collector: out of memory adding %s", ch->id.uid);
            return;
        }
        n->owners = ch->owners;
        n->n_owners = ch->n_owners;
        ch->owners = NULL;
        ch->n_owners = 0;
        n->being_deleted = ch->being_deleted;
        n->deleting_dependents = ch->being_deleted && ch->has_fg;
        add_dependent_to_owners(a, n, n->owners, n->n_owners);
        process_transitions(gc, ch, n);
        return;
    }
    if (strcmp(n->id.api_version, ch->id.api_version) || strcmp(n->id.kind, ch->id.kind)) {
        struct ck__gc_identity id = {0};
        if (ck__gc_identity_set(&id, ch->id.api_version, ch->id.kind, n->id.namespace, n->id.name,
                                n->id.uid) == 0) {
            ck__gc_identity_release(&n->id);
            n->id = id;
        }
    }
    struct ck__gc_ref *old = n->owners;
    size_t n_old = n->n_owners;
    bool changed = n_old != ch->n_owners;
    for (size_t i = 0; !changed && i < n_old; i++) {
        const struct ck__gc_ref *r = find_ref(ch->owners, ch->n_owners, old[i].uid);
        changed = !r || r->block != old[i].block;
    }
    if (changed) {
        add_unblocked_owners(gc, old, n_old, ch->owners, ch->n_owners);
        /* unlink from every old owner, link under every new one */
        remove_dependent_from_owners(gc, n, old, n_old);
        n->owners = ch->owners;
        n->n_owners = ch->n_owners;
        ch->owners = old;
        ch->n_owners = n_old;
        add_dependent_to_owners(a, n, n->owners, n->n_owners);
    }
    if (ch->being_deleted)
        n->being_deleted = true;
    process_transitions(gc, ch, n);
}

static void apply_delete(struct ck_gc *gc, struct ck__gc_change *ch, struct ck__gc_node *n)
{
    if (!n)
        return;
    if (ch->is_virtual && !n->is_virtual && !ck__gc_identity_equal(&n->id, &ch->id)) {
        /* a live GET found other coordinates gone: the real node stays */
        absent_add(gc, &ch->id);
        for (size_t i = 0; i < n->n_deps; i++)
            enqueue_delete(gc, n->deps[i]->id.uid);
        return;
    }
    if (n->n_deps)
        absent_add(gc, &n->id);
    for (size_t i = 0; i < n->n_deps; i++)
        enqueue_delete(gc, n->deps[i]->id.uid);
    for (size_t i = 0; i < n->n_owners; i++) {
        struct ck__gc_node *owner = ck__gc_graph_get(&gc->graph, n->owners[i].uid);
        if (owner && owner->deleting_dependents)
            enqueue_delete(gc, owner->id.uid);
    }
    ck__gc_graph_remove(&gc->graph, n);
}

static void apply(struct apply_ctx *a, struct ck__gc_change *ch)
{
    struct ck_gc *gc = a->gc;
    struct ck__gc_node *n = ck__gc_graph_get(&gc->graph, ch->id.uid);
    if (n && !ch->is_virtual && n->is_virtual) {
        /* observed at last: take the observed identity */
        if (!ck__gc_identity_equal(&n->id, &ch->id)) {
            for (size_t i = 0; i < n->n_deps; i++) {
                struct ck__gc_node *dep = n->deps[i];
                if (*ch->id.namespace && strcmp(dep->id.namespace, ch->id.namespace) != 0)
                    add_report(a, dep, ch->id.uid);
                enqueue_delete(gc, dep->id.uid);
            }
            struct ck__gc_identity id = {0};
            if (ck__gc_identity_set(&id, ch->id.api_version, ch->id.kind, ch->id.namespace,
                                    ch->id.name, ch->id.uid) == 0) {
                ck__gc_identity_release(&n->id);
                n->id = id;
            }
        }
        n->is_virtual = false;
    }
    if (ch->type == CK_GC_DELETE)
        apply_delete(gc, ch, n);
    else
        apply_upsert(a, ch, n);
}

/* Applies one change and sends the events it produced. */
static void process(struct ck_gc *gc, struct ck__gc_change *ch)
{
    struct apply_ctx a = {.gc = gc};
    pthread_mutex_lock(&gc->lock);
    apply(&a, ch);
    pthread_mutex_unlock(&gc->lock);
    for (size_t i = 0; i < a.n_reports; i++) {
        struct report *rep = &a.reports[i];
        if (rep->ref.api_version && rep->ref.kind && rep->ref.name && rep->ref.uid)
            ck__gc_report_invalid_namespace(gc, &rep->dep, &rep->ref);
        ck__gc_identity_release(&rep->dep);
        for (size_t k = 0; k < 4; k++)
            free(rep->ref_strs[k]);
    }
    free(a.reports);
    change_free(ch);
}

size_t ck_gc_process_graph_changes(struct ck_gc *gc)
{
    size_t n = 0;
    struct ck__gc_change *ch;
    while ((ch = pop(gc, false))) {
        process(gc, ch);
        n++;
    }
    return n;
}

void *ck__gc_builder_main(void *arg)
{
    struct ck_gc *gc = arg;
    struct ck__gc_change *ch;
    while ((ch = pop(gc, true)))
        process(gc, ch);
    return NULL;
}
