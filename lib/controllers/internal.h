/*
 * internal.h - private to libckube-controllers, never installed: what the controllers'
 * informer handlers share (kubernetes pkg/controller: resolveControllerRef and the
 * Get*For* lookups every controller writes again).
 *
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
 * Enqueues on q every object of child's namespace in lister owners whose non-empty
 * spec.selector matches child's labels (GetPodReplicaSets, GetDeploymentsForReplicaSet).
 */
void ck__ctl_enqueue_selecting(struct ck_wq *q, const struct ck_lister *owners,
                               const json_t *child);

#endif /* CKUBE_CONTROLLERS_INTERNAL_H */
