/*
 * internal.h - private to libckube-controllers, never installed: what the controllers
 * share (shared.c), so each controller file holds only its own logic.
 *
 * Plumbing: a controller's rate-limited queue and its view for the runner; an informer
 * from the factory with a lister over its cache and the controller's handler; waiting
 * for the caches before starting the workers; stopping.
 *
 * Handlers (kubernetes pkg/controller: resolveControllerRef and the Get*For* lookups
 * every controller writes again):
 * An event about a child object (a pod, a ReplicaSet) becomes keys of its owners: the
 * owner its controller reference names, if the cache has it with the same uid; or, for
 * an orphan, every object of the namespace whose selector matches the child's labels,
 * so that one of them adopts it.
 *
 * Threading: stateless; listers and queues are thread-safe.
 */
#ifndef CKUBE_CONTROLLERS_INTERNAL_H
#define CKUBE_CONTROLLERS_INTERNAL_H

#include "ckube/controllers.h"
#include "ckube/informer.h"

/*
 * Creates ctl's rate-limited queue (client-go's default controller limiter, on clock;
 * NULL = real) named `name` and fills ctl for the runner. Returns 0 or CK_ENOMEM.
 */
int ck__ctl_init(struct ck_controller *ctl, const char *name,
                 int (*sync)(struct ck_controller *c, const char *key, struct ck_err *reterr),
                 void *data, struct ck_clock *clock, struct ck_err *reterr);

/*
 * The factory's informer for res into *ret_inf, a lister over its cache into
 * *ret_lister, and handler registered on it. Returns 0 or an error.
 */
int ck__ctl_watch(struct ck_informer_factory *factory, const struct ck_resource *res,
                  const struct ck_event_handler *handler, struct ck_informer **ret_inf,
                  struct ck_lister *ret_lister, struct ck_err *reterr);

/*
 * Waits until the n informers (NULL entries skipped: a controller on given listers)
 * have synced, then starts `workers` workers (<= 0: 5). CK_ESHUTDOWN when an informer
 * stopped first.
 */
int ck__ctl_run(struct ck_controller *ctl, struct ck_informer *const *infs, size_t n, int workers,
                struct ck_runner **ret_runner, struct ck_err *reterr);

/*
 * The controller's event recorder (component names it: "replicaset-controller"),
 * writing through client by way of sink_state, which the caller keeps alive as long as
 * the recorder. synchronous: each event is written before ck_event_recordf() returns
 * (unit tests on fakes); else one sender thread writes them. Free it with
 * ck_event_recorder_free() after the runner has stopped.
 */
int ck__ctl_recorder(struct ck_ctl_event_sink *sink_state, const struct ck_ctl_client *client,
                     const char *component, struct ck_clock *clock, bool synchronous,
                     struct ck_event_recorder **ret, struct ck_err *reterr);

/* Stops the runner (may be NULL), draining the queue, and frees the queue. */
void ck__ctl_stop(struct ck_controller *ctl, struct ck_runner *runner);

/* Adds obj's key ("namespace/name") to q; nothing when obj has no name. */
void ck__ctl_enqueue(struct ck_wq *q, const json_t *obj);

/* Two controller references name the same owner (uid); two NULLs are the same too. */
bool ck__ctl_same_ref(const json_t *a, const json_t *b);

/*
 * resolveControllerRef: the object of `kind` that ref names in namespace ns, from lister
 * l, when it has ref's uid (a new reference to drop with ck_cached_unref), else NULL.
 */
const json_t *ck__ctl_resolve_ref(const struct ck_lister *l, const char *kind, const char *ns,
                                  const json_t *ref);

/*
 * Enqueues on q the owner of `kind` that ref (NULL: none) names in child's namespace,
 * when lister owners has it with ref's uid.
 */
void ck__ctl_enqueue_owner(struct ck_wq *q, const struct ck_lister *owners, const char *kind,
                           const json_t *child, const json_t *ref);

/* An update event whose two objects have the same resourceVersion (a periodic resync). */
bool ck__ctl_same_version(const json_t *old, const json_t *obj);

/*
 * Enqueues on q every object of child's namespace in lister owners whose non-empty
 * spec.selector matches child's labels (GetPodReplicaSets, GetDeploymentsForReplicaSet).
 */
void ck__ctl_enqueue_selecting(struct ck_wq *q, const struct ck_lister *owners,
                               const json_t *child);

#endif /* CKUBE_CONTROLLERS_INTERNAL_H */
