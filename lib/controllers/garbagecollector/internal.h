/*
 * internal.h - private to lib/controllers/garbagecollector; never installed.
 *
 * The garbage collector's shared state: the graph (graph.c), the change queue and its
 * one writer (graph_builder.c), the live calls (operations.c) and the workers (gc.c).
 *
 * Locking: gc->lock guards the graph and the absent-owner cache. The graph builder is
 * the only thread that changes the graph; workers take the lock to copy out what they
 * need of a node and never keep a node pointer past the unlock. gc->changes_lock guards
 * the change queue. No call into the client or a queue is made under gc->lock except
 * ck_wq_add (which never calls back).
 */
#ifndef CK_GC_INTERNAL_H
#define CK_GC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "../internal.h"
#include "ckube/garbagecollector.h"
#include "ckube/internal/util.h"

/* One ownerReference, copied. */
struct ck__gc_ref {
    char *api_version, *kind, *name, *uid;
    bool controller, block; /* blockOwnerDeletion */
};

/* Who an object is: what an event or an ownerReference says. */
struct ck__gc_identity {
    char *api_version, *kind, *namespace, *name, *uid;
};

struct ck__gc_node {
    struct ck__gc_identity id;
    struct ck__gc_ref *owners;
    size_t n_owners;
    struct ck__gc_node **deps; /* dependents: nodes whose owners name this uid */
    size_t n_deps, cap_deps;
    bool is_virtual; /* made for an ownerReference, not yet seen by an informer */
    bool being_deleted;
    bool deleting_dependents; /* deletionTimestamp and the foregroundDeletion finalizer */
};

/* ---- graph.c -------------------------------------------------------------------- */

int ck__gc_refs_parse(const json_t *obj, struct ck__gc_ref **ret, size_t *ret_n);
void ck__gc_refs_free(struct ck__gc_ref *refs, size_t n);
int ck__gc_identity_set(struct ck__gc_identity *id, const char *api_version, const char *kind,
                        const char *namespace, const char *name, const char *uid);
void ck__gc_identity_release(struct ck__gc_identity *id);
bool ck__gc_identity_equal(const struct ck__gc_identity *a, const struct ck__gc_identity *b);

struct ck__gc_node *ck__gc_node_new(const struct ck__gc_identity *id);
void ck__gc_node_free(struct ck__gc_node *n);

struct ck__gc_node *ck__gc_graph_get(struct ck__strmap *g, const char *uid);
int ck__gc_graph_put(struct ck__strmap *g, struct ck__gc_node *n);
int ck__gc_node_add_dependent(struct ck__gc_node *owner, struct ck__gc_node *dep);
void ck__gc_node_remove_dependent(struct ck__gc_node *owner, const struct ck__gc_node *dep);
/* Removes n from the graph and from its owners' dependents, and frees it. */
void ck__gc_graph_remove(struct ck__strmap *g, struct ck__gc_node *n);
void ck__gc_graph_release(struct ck__strmap *g);
bool ck__gc_has_finalizer(const json_t *obj, const char *finalizer);

/* ---- graph_builder.c ------------------------------------------------------------ */

struct ck__gc_change;

void ck__gc_changes_release(struct ck_gc *gc);
/* Queues a virtual delete of id (a live GET found it gone or replaced). */
int ck__gc_enqueue_virtual_delete(struct ck_gc *gc, const struct ck__gc_identity *id);
void *ck__gc_builder_main(void *arg);

/* ---- operations.c --------------------------------------------------------------- */

/* Live GET of id (resource through discovery); CK_ENOENT when absent. */
int ck__gc_get_object(struct ck_gc *gc, const struct ck__gc_identity *id, json_t **ret_obj,
                      struct ck_err *reterr);
int ck__gc_delete_object(struct ck_gc *gc, const struct ck__gc_identity *id, const char *policy,
                         struct ck_err *reterr);
/* Removes the ownerReferences whose uid is in uids from the live object. */
int ck__gc_remove_owner_refs(struct ck_gc *gc, const struct ck__gc_identity *id,
                             const char *const *uids, size_t n, struct ck_err *reterr);
/* Sets blockOwnerDeletion false on the references to uids. */
int ck__gc_unblock_owner_refs(struct ck_gc *gc, const struct ck__gc_identity *id,
                              const char *const *uids, size_t n, struct ck_err *reterr);
int ck__gc_remove_finalizer(struct ck_gc *gc, const struct ck__gc_identity *id,
                            const char *finalizer, struct ck_err *reterr);
/*
 * The resource of api_version/kind: 0, CK_EINVAL when the server serves no such kind
 * (after one fresh read of discovery; retried by the caller, never taken for an absent
 * object, as Kubernetes retries a REST mapping error), or discovery's error.
 */
int ck__gc_resource(struct ck_gc *gc, const char *api_version, const char *kind,
                    struct ck_api_resource *ret, struct ck_err *reterr);
void ck__gc_report_invalid_namespace(struct ck_gc *gc, const struct ck__gc_identity *dep,
                                     const struct ck__gc_ref *ref);

/* ---- the collector (gc.c) -------------------------------------------------------- */

struct ck__gc_monitor;

struct ck_gc {
    struct ck_ctl_client client;
    struct ck_discovery *discovery;
    struct ck_rest *rest;
    struct ck_informer_factory *shared; /* informers to monitor through; NULL: none */
    struct ck_clock *clock;
    struct ck_ctl_event_sink sink;      /* the recorder writes through client */
    struct ck_event_recorder *recorder; /* NULL when it could not be made: no events */

    pthread_mutex_t lock;
    struct ck__strmap graph;  /* uid -> struct ck__gc_node * */
    struct ck__strmap absent; /* "namespace/uid" of owners confirmed absent */

    pthread_mutex_t changes_lock;
    pthread_cond_t changes_cond;
    struct ck__gc_change *changes_head, *changes_tail;
    bool stopping;

    struct ck_wq *delete_queue, *orphan_queue;
    struct ck_controller delete_ctl, orphan_ctl;
    struct ck_runner *delete_runner, *orphan_runner;

    /* monitors: owned by the main thread */
    pthread_mutex_t monitors_lock;
    struct ck__gc_monitor *monitors;
    pthread_t main_thread, builder_thread;
    bool main_running, builder_running;
    int workers;
    atomic_bool stop;
    pthread_cond_t stop_cond; /* with monitors_lock: wakes the resync wait */
};

#endif /* CK_GC_INTERNAL_H */
