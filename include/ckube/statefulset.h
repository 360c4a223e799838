/*
 * ckube/statefulset.h - the StatefulSet controller (kubernetes pkg/controller/statefulset):
 * pods <set>-<ordinal> with stable names, labels and claims, created in order (each after
 * the previous is Running and Ready) or in parallel, deleted from the highest ordinal,
 * updated from the highest ordinal down to the partition; ControllerRevisions for the
 * history `kubectl rollout history|undo sts` reads; the status.
 *
 * It reads through listers (pods, StatefulSets, ControllerRevisions) and writes through
 * the ctl_client interface; ck_sts_controller_new_with() takes fakes for unit tests.
 */
#ifndef CKUBE_STATEFULSET_H
#define CKUBE_STATEFULSET_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

struct ck_sts_controller;

int ck_sts_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_sts_controller **ret_c, struct ck_err *reterr);

struct ck_sts_controller_deps {
    const struct ck_ctl_client *client;   /* copied; what it points to must outlive c */
    const struct ck_lister *pods;         /* copied; ditto */
    const struct ck_lister *statefulsets; /* copied; ditto */
    const struct ck_lister *revisions;    /* copied; ditto */
    /* The wall clock, nanoseconds since the Unix epoch; NULL = the real time. */
    int64_t (*now)(void *arg);
    void *now_arg;
    /*
     * Feature gates (MaxUnavailableStatefulSet); NULL: the API server's gate decided, as it
     * drops rollingUpdate.maxUnavailable while the gate is off.
     */
    bool (*feature_enabled)(void *ctx, const char *feature);
    void *feature_ctx;
};

/* Over given listers and client (unit tests); events are written synchronously. */
int ck_sts_controller_new_with(const struct ck_sts_controller_deps *deps,
                               struct ck_sts_controller **ret_c, struct ck_err *reterr);

int ck_sts_controller_sync(struct ck_sts_controller *c, const char *key, struct ck_err *reterr);
int ck_sts_controller_run(struct ck_sts_controller *c, int workers, struct ck_err *reterr);
struct ck_sts_controller *ck_sts_controller_free(struct ck_sts_controller *c);

/*
 * hashControllerRevision: the FNV-32 of the revision's data as Kubernetes encodes it
 * (compact JSON, keys sorted, Go's escapes) followed by collision_count in decimal, spelled
 * with Kubernetes' safe alphabet. Writes into buf (size >= 11); returns buf, NULL on no
 * memory or a short buf.
 */
const char *ck_sts_revision_hash(const json_t *data, long long collision_count, char *buf,
                                 size_t size);

/*
 * The name of the set's update ControllerRevision: "<set>-<hash>" (the name cut to 223
 * bytes), the hash of {"spec":{"template":{...,"$patch":"replace"}}}. Writes into buf
 * (size >= 240); returns buf, NULL on no memory.
 */
const char *ck_sts_revision_name(const json_t *set, long long collision_count, char *buf,
                                 size_t size);

/* The controller manager's row (manager.c). */
int ck_sts_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                         struct ck_err *reterr);
int ck_sts_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_sts_manager_stop(void *state);

#endif /* CKUBE_STATEFULSET_H */
