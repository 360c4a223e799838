/*
 * ckube/garbagecollector.h - the garbage collector (kubernetes
 * pkg/controller/garbagecollector): deletes objects whose owners are gone, and carries
 * out foreground and orphan deletion, for every kind the server serves.
 *
 * A dependency graph keyed by uid is fed by metadata-only informers ("monitors") on
 * every resource discovery reports with the list, watch and delete verbs; monitors are
 * started and stopped as discovery changes. Owners named by an ownerReference but not
 * (yet) observed are virtual nodes, confirmed absent by a live GET before anything is
 * deleted because of them. Two rate-limited queues of uids, attemptToDelete and
 * attemptToOrphan, are served by worker threads.
 *
 * Deletion policies, as the API server marks them:
 * - background: a dependent all of whose owners are gone (or have another uid) is
 *   deleted with a uid precondition; one with owners left loses only the references to
 *   the gone ones;
 * - foreground (the owner has deletionTimestamp and the foregroundDeletion finalizer):
 *   its dependents are deleted (in foreground when they have dependents themselves), and
 *   once none with blockOwnerDeletion is left, the finalizer is removed;
 * - orphan (the orphan finalizer): the owner's references are removed from every
 *   dependent, then the finalizer.
 *
 * Restart-safe: the graph lives in memory only and is rebuilt from the informers' lists;
 * the finalizers on the server say what was in progress.
 */
#ifndef CKUBE_GARBAGECOLLECTOR_H
#define CKUBE_GARBAGECOLLECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"
#include "ckube/rest.h"

/* Workers per queue (kube-controller-manager's --concurrent-gc-syncs default). */
#define CK_GC_CONCURRENT_SYNCS 20

/* How often discovery is re-read to start and stop monitors (Kubernetes: 30 s). */
#define CK_GC_RESYNC_PERIOD (30 * CK_SEC)

struct ck_gc_config {
    struct ck_ctl_client client;    /* live reads and writes (copied) */
    struct ck_discovery *discovery; /* borrowed; maps apiVersion/kind to resources */
    struct ck_rest *rest;           /* borrowed; for the monitors; NULL: none (tests) */
    /*
     * Borrowed; NULL: none. A resource this factory already has an informer for is
     * monitored through that informer, not a metadata informer of its own (one watch
     * of pods per process, as Kubernetes' ObjectOrMetadataInformerFactory gives).
     */
    struct ck_informer_factory *shared;
    struct ck_clock *clock; /* borrowed; NULL = real */
    bool async_events;      /* false (tests): events written before the call returns */
};

struct ck_gc;

/* Creates a stopped garbage collector. Returns 0 or CK_ENOMEM / CK_EINVAL. */
int ck_gc_new(const struct ck_gc_config *config, struct ck_gc **ret_gc, struct ck_err *reterr);

/*
 * Starts it in the background: reads discovery (retrying until the server answers),
 * starts the monitors, waits for their caches, then runs the graph builder and
 * `workers` workers per queue, and re-reads discovery every CK_GC_RESYNC_PERIOD.
 */
int ck_gc_run(struct ck_gc *gc, int workers, struct ck_err *reterr);

/* Stops everything and frees it. NULL is a no-op. */
struct ck_gc *ck_gc_free(struct ck_gc *gc);

/* ---- driving it without informers (tests) ---------------------------------------- */

enum ck_gc_event_type { CK_GC_ADD, CK_GC_UPDATE, CK_GC_DELETE };

/*
 * Queues a graph change, as a monitor's handler does: obj (and old_obj for an update,
 * may be NULL) of kind api_version/kind. Only metadata is read; nothing is kept.
 */
int ck_gc_observe(struct ck_gc *gc, enum ck_gc_event_type type, const char *api_version,
                  const char *kind, const json_t *obj, const json_t *old_obj);

/* Applies every queued graph change on the calling thread; returns how many. */
size_t ck_gc_process_graph_changes(struct ck_gc *gc);

/* One attemptToDelete / attemptToOrphan sync of uid, as a worker runs it. */
int ck_gc_attempt_to_delete(struct ck_gc *gc, const char *uid, struct ck_err *reterr);
int ck_gc_attempt_to_orphan(struct ck_gc *gc, const char *uid, struct ck_err *reterr);

/* The queues (borrowed), to see what was enqueued. */
struct ck_wq *ck_gc_delete_queue(struct ck_gc *gc);
struct ck_wq *ck_gc_orphan_queue(struct ck_gc *gc);

/* What the graph knows of uid: false when absent; else its flags and dependents. */
struct ck_gc_node_info {
    bool is_virtual;
    bool observed;
    bool being_deleted;
    bool deleting_dependents;
    size_t n_dependents;
    size_t n_owners;
};
bool ck_gc_graph_node(struct ck_gc *gc, const char *uid, struct ck_gc_node_info *ret_info);

/* Nodes in the graph. */
size_t ck_gc_graph_len(struct ck_gc *gc);

/* How many monitors (resources watched) run. */
size_t ck_gc_monitors(struct ck_gc *gc);

/* ---- the controller manager's row ------------------------------------------------ */

int ck_gc_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr);
int ck_gc_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_gc_manager_stop(void *state);

#endif /* CKUBE_GARBAGECOLLECTOR_H */
