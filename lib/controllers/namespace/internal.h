/*
 * internal.h - private to lib/controllers/namespace; never installed.
 *
 * The controller's state, shared by namespace.c (queue, handlers, lifecycle) and
 * deleter.c (one deletion pass).
 */
#ifndef CK_NS_INTERNAL_H
#define CK_NS_INTERNAL_H

#include <stdbool.h>

#include "ckube/internal/util.h"
#include "ckube/nscontroller.h"

struct ck_ns_controller {
    struct ck_ctl_client client;
    const struct ck_ns_content_ops *content;
    void *content_ctx;
    struct ck_discovery *discovery;
    const struct ck_resource *ns_res;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    struct ck_informer *ns_inf; /* the manager's, or NULL */
};

/*
 * One deletion pass over namespace name. Returns 0 (done, or nothing to do, or
 * *ret_remaining set: content is left, look again later) or an error to retry with
 * backoff.
 */
int ck__ns_delete(struct ck_ns_controller *c, const char *name, bool *ret_remaining,
                  struct ck_err *reterr);

#endif /* CK_NS_INTERNAL_H */
