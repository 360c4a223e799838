/*
 * ckube/controllers.h - libckube-controllers: what every controller is built from.
 *
 * - The runner: the one worker loop of the tree (client-go's processNextWorkItem as every
 *   Kubernetes controller writes it). N worker threads take keys from the controller's
 *   rate-limited queue and call its sync(); success forgets the key's backoff, failure
 *   re-adds it with rate limiting, and the key is always marked done.
 * - The two interfaces a controller's sync sees the world through: listers (reads from
 *   the informer caches: get and list) and a client (writes to the API server: create,
 *   update, update status, patch, delete, and the rare fresh get). Production code gives
 *   it listers over its informers' indexers and a client over ck_rest; unit tests give it
 *   listers over indexers they fill themselves and the fake client, which records every
 *   action and can be told to fail, as Kubernetes' controller tests use the fake clientset.
 * - controller_utils (kubernetes pkg/controller/controller_utils.go): resources from the
 *   API kind descriptors, the event sink over the client interface, pod-from-template,
 *   slow-start batches, pod ranking for scale-down, pod predicates, and expectations
 *   (ControllerExpectations and UIDTrackingControllerExpectations): a controller that
 *   issued creates or deletes waits until its informer has seen them all (or a timeout
 *   passes) before it acts again on the same key, so it never acts twice on a stale
 *   cache.
 * - The controller-ref manager (controller_ref_manager.go): adoption and release.
 *
 * Depends on libckube-client and libckube-api only. Every function is thread-safe unless
 * it says otherwise.
 */
#ifndef CKUBE_CONTROLLERS_H
#define CKUBE_CONTROLLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/api.h"
#include "ckube/client.h"
#include "ckube/rest.h"

/* ---- the runner ----------------------------------------------------------- */

/*
 * A controller as the runner sees it. The caller owns the struct, fills it before
 * ck_runner_start() and leaves it alone (and alive) until ck_runner_stop() returns.
 */
struct ck_controller {
    const char *name; /* for logs: "replicaset" */

    /*
     * Makes the world match the spec for key ("namespace/name"), re-reading state from
     * the informer caches (syncHandler). Returns 0 when done, or a negative code (with
     * words in *reterr) to be retried with rate limiting. Called by one worker at a time
     * per key (the queue guarantees it), by several workers for different keys. A pointer
     * in the struct so a test can swap it before starting, as Kubernetes tests replace
     * syncHandler.
     */
    int (*sync)(struct ck_controller *c, const char *key, struct ck_err *reterr);

    void *data;          /* the controller's own state, for sync */
    struct ck_wq *queue; /* borrowed; give it a rate limiter (without one, failed keys are
                          * retried at once) */
};

struct ck_runner;

/*
 * Runs c's worker loop on up to `workers` threads: one now, the others as keys need
 * them (a worker is always waiting for the next key while fewer than `workers` are
 * busy). Returns 0 and sets *ret_runner, or CK_EINVAL (no sync, no queue, workers < 1)
 * or CK_ENOMEM (nothing left running).
 */
int ck_runner_start(struct ck_controller *c, int workers, struct ck_runner **ret_runner,
                    struct ck_err *reterr);

/*
 * Stops gracefully: shuts the queue down with drain (keys already queued are still
 * synced, syncs in flight finish), joins every worker and frees the runner. Keys that
 * fail during the drain are not retried (the queue refuses adds once shutting down), as
 * in client-go. Returns NULL.
 */
struct ck_runner *ck_runner_stop(struct ck_runner *r);

struct ck_runner_stats {
    uint64_t syncs;    /* sync calls */
    uint64_t failures; /* sync calls that returned an error (each requeued) */
    int workers;       /* worker threads started so far */
};

void ck_runner_stats(struct ck_runner *r, struct ck_runner_stats *ret_stats);

/*
 * C has no recover(): a sync that crashes (SIGSEGV, abort ...) takes the whole process
 * with it, and continuing after such a signal would be undefined behaviour. What we do
 * instead is make the crash loud and attributable, never silent: this installs handlers
 * for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT that write one line to standard error
 * naming the controller and the key whose sync was running on the crashing thread, then
 * re-raise the signal with its default action (so the exit status and core dump are the
 * real ones). The supervisor restarts the process; the informers then relist and enqueue
 * every object, so no key is lost across the crash either. Call it once, from main(),
 * after any other library that installs such handlers. Returns 0 or CK_EINVAL.
 */
int ck_runner_install_crash_handler(void);

/* ---- resources (from the API kind descriptors) ------------------------------- */

/*
 * The resource group/version/resource names, built from its kind descriptor
 * (ck_kind_lookup: group, version, plural, namespaced). group is "" for the core group.
 * Returns a pointer valid until exit (the same one on every call for the same resource,
 * so it can be handed to an informer factory), or NULL when no kind serves it (or when
 * out of memory).
 */
const struct ck_resource *ck_controller_resource(const char *group, const char *version,
                                                 const char *resource);

/* ---- listers: reads from a cache (client-go listers) ---------------------------- */

/*
 * A read-only view of one resource's cache. Objects it hands out are new references to
 * shared, immutable objects: drop them with ck_cached_unref() / ck_obj_list_release(),
 * never change them.
 */
struct ck_lister_ops {
    /* The object namespace/name (namespace "" for cluster-scoped): 0, or CK_ENOENT. */
    int (*get)(void *data, const char *namespace, const char *name, const json_t **ret_obj);
    /*
     * The objects of namespace ("" or NULL: every namespace) whose labels selector matches
     * (NULL: every object), in key order. 0, or CK_ENOMEM.
     */
    int (*list)(void *data, const char *namespace, const struct ck_label_selector *selector,
                struct ck_obj_list *ret_list, struct ck_err *reterr);
};

/* A lister: its operations and their state. Caller-owned; copy it freely. */
struct ck_lister {
    const struct ck_lister_ops *ops;
    void *data;
};

/*
 * A lister over an indexer (borrowed; it must outlive the lister): an informer's cache
 * (ck_informer_indexer) in production, an indexer the test fills in unit tests. Lists
 * use the indexer's namespace index when it has one (informers' do).
 */
void ck_lister_init(struct ck_lister *l, struct ck_indexer *ix);

int ck_lister_get(const struct ck_lister *l, const char *namespace, const char *name,
                  const json_t **ret_obj);
int ck_lister_list(const struct ck_lister *l, const char *namespace,
                   const struct ck_label_selector *selector, struct ck_obj_list *ret_list,
                   struct ck_err *reterr);

/* ---- the client interface: writes to the API server (client-go clientset) ----- */

/*
 * Each operation means what the ck_rest call of the same name means (see rest.h): the
 * same arguments, errors and ownership. ret_obj may be NULL.
 */
struct ck_ctl_client_ops {
    int (*get)(void *data, const struct ck_resource *res, const char *namespace, const char *name,
               json_t **ret_obj, struct ck_err *reterr);
    int (*create)(void *data, const struct ck_resource *res, const char *namespace,
                  const json_t *obj, json_t **ret_obj, struct ck_err *reterr);
    int (*update)(void *data, const struct ck_resource *res, const char *namespace,
                  const json_t *obj, json_t **ret_obj, struct ck_err *reterr);
    int (*update_status)(void *data, const struct ck_resource *res, const char *namespace,
                         const json_t *obj, json_t **ret_obj, struct ck_err *reterr);
    int (*patch)(void *data, const struct ck_resource *res, const char *namespace, const char *name,
                 const char *subresource, const char *patch_type, const json_t *patch,
                 json_t **ret_obj, struct ck_err *reterr);
    int (*delete)(void *data, const struct ck_resource *res, const char *namespace,
                  const char *name, const json_t *options, json_t **ret_obj, struct ck_err *reterr);
};

/* A client: its operations and their state. Caller-owned; copy it freely. */
struct ck_ctl_client {
    const struct ck_ctl_client_ops *ops;
    void *data;
};

/* The client over a REST client (borrowed; it must outlive the interface). */
void ck_ctl_client_init_rest(struct ck_ctl_client *c, struct ck_rest *rest);

int ck_ctl_get(const struct ck_ctl_client *c, const struct ck_resource *res, const char *namespace,
               const char *name, json_t **ret_obj, struct ck_err *reterr);
int ck_ctl_create(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const json_t *obj, json_t **ret_obj,
                  struct ck_err *reterr);
int ck_ctl_update(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const json_t *obj, json_t **ret_obj,
                  struct ck_err *reterr);
int ck_ctl_update_status(const struct ck_ctl_client *c, const struct ck_resource *res,
                         const char *namespace, const json_t *obj, json_t **ret_obj,
                         struct ck_err *reterr);
int ck_ctl_patch(const struct ck_ctl_client *c, const struct ck_resource *res,
                 const char *namespace, const char *name, const char *subresource,
                 const char *patch_type, const json_t *patch, json_t **ret_obj,
                 struct ck_err *reterr);
int ck_ctl_delete(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const char *name, const json_t *options, json_t **ret_obj,
                  struct ck_err *reterr);

/* ---- the fake client, for unit tests (client-go kubernetes/fake) ---------------- */

/*
 * An in-memory client that records every call as an action and answers from a small
 * object tracker: create stores the object (naming it from generateName with a counter,
 * giving it a uid and resourceVersion "1" when it has none), update and update_status
 * replace a stored object (CK_ENOENT when absent), delete removes it (CK_ENOENT when
 * absent), get reads it; patch is recorded and answers 0 without changing anything.
 * Failures can be scripted per verb and resource. Thread-safe (a controller may write
 * from several threads).
 */
struct ck_fake_client;

/* One recorded call. Strings and body are owned by the fake. */
struct ck_fake_action {
    const char *verb; /* "get", "create", "update", "update-status", "patch", "delete" */
    char *resource;   /* the plural: "pods", "replicasets" */
    char *namespace;  /* "" for cluster-scoped */
    char *name;       /* the object's name (a create: the one the fake gave it) */
    json_t *body;     /* a copy of what was sent (create, update, patch), or NULL */
    int result;       /* what the call returned */
};

/* Returns 0 and sets *ret_fc, or CK_ENOMEM. */
int ck_fake_client_new(struct ck_fake_client **ret_fc, struct ck_err *reterr);
struct ck_fake_client *ck_fake_client_free(struct ck_fake_client *fc);

/* The client interface over the fake (borrowing it). */
void ck_fake_client_iface(struct ck_fake_client *fc, struct ck_ctl_client *ret_client);

/* Stores a copy of obj for res, as if it were on the server (no action recorded). */
int ck_fake_client_seed(struct ck_fake_client *fc, const struct ck_resource *res,
                        const json_t *obj);

/*
 * Makes the next `times` calls of verb on res (NULL: any resource) fail with code and
 * message (times < 0: every call from now). Scripts are tried in the order they were
 * added; the first that matches is used.
 */
int ck_fake_client_fail(struct ck_fake_client *fc, const char *verb, const struct ck_resource *res,
                        int times, int code, const char *message);

/*
 * The actions recorded so far, oldest first (calls made concurrently appear in the order
 * they took the fake's lock). The array stays valid until the next call to the fake.
 */
const struct ck_fake_action *ck_fake_client_actions(struct ck_fake_client *fc, size_t *ret_n);

/* How many recorded actions have this verb (and resource, when not NULL). */
size_t ck_fake_client_count(struct ck_fake_client *fc, const char *verb,
                            const struct ck_resource *res);

/* Forgets the recorded actions (the tracked objects and scripts stay). */
void ck_fake_client_clear_actions(struct ck_fake_client *fc);

/* ---- controller_utils (kubernetes pkg/controller/controller_utils.go) ---------- */

/*
 * Events: controllers record with the recorder of libckube-client (ck_event_recordf(), see
 * ckube/client.h). This is its sink over a client interface, so the events go wherever
 * the controller's writes go: the API server, or the fake client in unit tests (where
 * they appear as "create" and "patch" actions on "events").
 */
struct ck_ctl_event_sink {
    struct ck_ctl_client client;      /* copied at init */
    const struct ck_resource *events; /* v1 events */
};

/*
 * Fills state (caller-owned; it must outlive every user of the sink) and *ret_sink.
 * Returns 0, or CK_ENOENT when no kind serves v1 events.
 */
int ck_ctl_event_sink_init(struct ck_ctl_event_sink *state, const struct ck_ctl_client *client,
                           struct ck_event_sink *ret_sink);

/*
 * A controller reference to owner (metav1.NewControllerRef): apiVersion, kind, owner's
 * name and uid, controller and blockOwnerDeletion true. New reference, NULL on no memory.
 */
json_t *ck_controller_ref_new(const json_t *owner, const char *api_version, const char *kind);

/*
 * The pod a template describes (GetPodFromTemplate): v1 Pod in parent's namespace with
 * generateName "<parent name>-", the template's labels, annotations and finalizers, its
 * spec, and controller_ref (borrowed; NULL for none) as the only ownerReference. Returns
 * a new reference, or NULL when out of memory.
 */
json_t *ck_pod_from_template(const json_t *template, const json_t *parent,
                             const json_t *controller_ref);

/* Kubernetes' SlowStartInitialBatchSize. */
#define CK_SLOW_START_INITIAL_BATCH 1

/*
 * slowStartBatch: calls fn count times in batches of initial, 2*initial, 4*initial, ...
 * (each call of a batch on one of up to 16 threads, so fn must be thread-safe); after a
 * batch with any failure, no further batch starts. Returns how many calls succeeded, and
 * copies the first failure's words into *reterr (may be NULL).
 */
int ck_slow_start_batch(int count, int initial, int (*fn)(void *arg, struct ck_err *reterr),
                        void *arg, struct ck_err *reterr);

/* A pod not being deleted and not Succeeded or Failed (IsPodActive). */
bool ck_pod_is_active(const json_t *pod);

/*
 * The pod's Ready condition is "True" (IsPodReady); *ret_since (may be NULL) gets that
 * condition's lastTransitionTime, borrowed from pod, or NULL.
 */
bool ck_pod_is_ready(const json_t *pod, const char **ret_since);

/*
 * Sorts pods so that those to delete first come first (ActivePodsWithRanks.Less):
 * unassigned before assigned; Pending, Unknown, then Running; not ready before ready;
 * more pods of `related` on the same node first (related NULL: pods itself); ready for
 * less time first; more container restarts first; newer first; then by name, so the
 * order is total. Returns 0 or CK_ENOMEM (pods unchanged).
 */
int ck_pods_rank_for_deletion(const json_t **pods, size_t n, const json_t *const *related,
                              size_t n_related);

/* ---- expectations ----------------------------------------------------------- */

/* Kubernetes' ExpectationsTimeout: expectations older than this are considered met. */
#define CK_EXPECTATIONS_TIMEOUT (5 * 60 * CK_SEC)

struct ck_expectations;

/*
 * Creates an empty expectations cache. clock may be NULL (real clock); timeout is how
 * old unmet expectations may get before they count as satisfied (<= 0: the Kubernetes
 * default, 5 minutes). Returns 0 or CK_ENOMEM.
 */
int ck_expectations_new(struct ck_clock *clock, int64_t timeout, struct ck_expectations **ret_e,
                        struct ck_err *reterr);
struct ck_expectations *ck_expectations_free(struct ck_expectations *e);

/*
 * True when the controller may sync key (SatisfiedExpectations): there are no
 * expectations for it, or every expected create and delete has been observed (both
 * counts <= 0), or they were set longer than the timeout ago.
 */
bool ck_expectations_satisfied(struct ck_expectations *e, const char *key);

/* Replaces key's expectations with adds creations and dels deletions, stamped now. */
int ck_expectations_set(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels);
/* ck_expectations_set(key, adds, 0) (ExpectCreations). */
int ck_expectations_expect_creations(struct ck_expectations *e, const char *key, int64_t adds);
/* ck_expectations_set(key, 0, dels) (ExpectDeletions). */
int ck_expectations_expect_deletions(struct ck_expectations *e, const char *key, int64_t dels);

/* Adds to existing expectations of key (RaiseExpectations); no-op when there are none. */
void ck_expectations_raise(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels);
/* Subtracts from existing expectations (LowerExpectations); counts may go below 0. */
void ck_expectations_lower(struct ck_expectations *e, const char *key, int64_t adds, int64_t dels);
/* One expected creation was seen (CreationObserved): lower(key, 1, 0). */
void ck_expectations_creation_observed(struct ck_expectations *e, const char *key);
/* One expected deletion was seen (DeletionObserved): lower(key, 0, 1). */
void ck_expectations_deletion_observed(struct ck_expectations *e, const char *key);

/* Forgets key's expectations, counted and tracked (DeleteExpectations). */
void ck_expectations_delete(struct ck_expectations *e, const char *key);

/* Returns 0 with key's current counts, or CK_ENOENT (GetExpectations). */
int ck_expectations_get(struct ck_expectations *e, const char *key, int64_t *ret_adds,
                        int64_t *ret_dels);

/*
 * UIDTrackingControllerExpectations: expects the deletion of exactly these n objects
 * (their keys or uids, copied), replacing any earlier tracked set, and sets the deletion
 * count to n. Returns 0 or CK_ENOMEM (nothing changed).
 */
int ck_expectations_expect_deletions_of(struct ck_expectations *e, const char *key,
                                        const char *const *deleted, size_t n);

/*
 * Records that `deleted` is gone: when it is in key's tracked set, removes it and lowers
 * the deletion count by one; otherwise does nothing, so a deletion seen twice (an update
 * with a deletionTimestamp, then the delete) counts once.
 */
void ck_expectations_deletion_observed_of(struct ck_expectations *e, const char *key,
                                          const char *deleted);

/* How many tracked deletions of key are still unobserved. */
size_t ck_expectations_pending_deletions(struct ck_expectations *e, const char *key);

/* ---- the controller-ref manager (kubernetes pkg/controller/controller_ref_manager.go) ---- */

/*
 * The controller reference of obj: its ownerReferences entry with controller: true, or
 * NULL (borrowed from obj).
 */
const json_t *ck_controller_ref(const json_t *obj);

/* What a controller claims children for. Every pointer is borrowed for the call. */
struct ck_ref_owner {
    const json_t *owner;                      /* the controller object (from the cache) */
    const char *api_version;                  /* "apps/v1" */
    const char *kind;                         /* "ReplicaSet" */
    const struct ck_label_selector *selector; /* the owner's spec.selector */
    const struct ck_ctl_client *client;       /* for the fresh read, adopt and release */
    const struct ck_resource *owner_res;      /* where to re-read the owner */
    const struct ck_resource *child_res;      /* where to write children */
};

/*
 * ClaimObjects: of the n candidate children (same namespace, from the cache), returns in
 * *ret_claimed (new references) those the owner controls after this call:
 *
 * - a child controlled by someone else (another uid) is ignored;
 * - a child we control whose labels still match is kept; one that no longer matches is
 *   released (our ownerReference removed with a conditional update), unless the owner
 *   is being deleted (then it is ignored);
 * - an orphan whose labels match is adopted (our controller reference added, with
 *   blockOwnerDeletion), but only if the owner is not being deleted, the child is not
 *   being deleted, and a fresh read of the owner from the server (not the cache) still
 *   has the same uid and no deletionTimestamp (RecheckDeletionTimestamp);
 * - with an empty selector nothing is adopted (nor kept: an empty selector selects
 *   nothing here, where apimachinery's would select everything).
 *
 * A child that vanished (404) while being adopted or released is skipped. Other errors
 * stop nothing: the claimed list is still returned, and the first error is returned as
 * well (as Kubernetes aggregates them) so the caller requeues.
 */
int ck_claim_objects(const struct ck_ref_owner *o, const json_t *const *candidates, size_t n,
                     struct ck_obj_list *ret_claimed, struct ck_err *reterr);

#endif /* CKUBE_CONTROLLERS_H */
