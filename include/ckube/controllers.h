/*
 * ckube/controllers.h - libckube-controllers: what every controller is built from.
 *
 * - The runner: the one worker loop of the tree (client-go's processNextWorkItem as every
 *   Kubernetes controller writes it). N worker threads take keys from the controller's
 *   rate-limited queue and call its sync(); success forgets the key's backoff, failure
 *   re-adds it with rate limiting, and the key is always marked done.
 * - Expectations (kubernetes pkg/controller/controller_utils.go ControllerExpectations and
 *   UIDTrackingControllerExpectations): a controller that issued creates or deletes waits
 *   until its informer has seen them all (or a timeout passes) before it acts again on the
 *   same key, so it never acts twice on a stale cache.
 *
 * Depends on libckube-client only. Every function is thread-safe unless it says otherwise.
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
 * Starts `workers` threads running c's worker loop. Returns 0 and sets *ret_runner, or
 * CK_EINVAL (no sync, no queue, workers < 1) or CK_ENOMEM (nothing left running).
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
    struct ck_rest *client;                   /* for the fresh read, adopt and release */
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
