/*
 * shared.c - what every controller shares (internal.h): the plumbing between a
 * controller, its queue, its informers and the runner; and, for the informer handlers,
 * from an event about a child object to its owners' keys (kubernetes pkg/controller's
 * resolveControllerRef and the Get*For* lookups of the ReplicaSet and Deployment
 * listers).
 *
 * Threading: stateless; listers and queues are thread-safe.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

int ck__ctl_init(struct ck_controller *ctl, const char *name,
                 int (*sync)(struct ck_controller *c, const char *key, struct ck_err *reterr),
                 void *data, struct ck_clock *clock, struct ck_err *reterr)
{
    struct ck_wq_options qopts = {
        .name = name,
        .clock = clock,
        .limiter = ck_rl_default_controller_new(clock),
    };
    int r = qopts.limiter ? ck_wq_new(&qopts, &ctl->queue, reterr)
                          : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    ctl->name = name;
    ctl->sync = sync;
    ctl->data = data;
    return r;
}

int ck__ctl_watch(struct ck_informer_factory *factory, const struct ck_resource *res,
                  const struct ck_event_handler *handler, struct ck_informer **ret_inf,
                  struct ck_lister *ret_lister, struct ck_err *reterr)
{
    struct ck_informer *inf = ck_informer_factory_for(factory, res);
    if (!inf)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    ck_lister_init(ret_lister, ck_informer_indexer(inf));
    *ret_inf = inf;
    return ck_informer_add_handler(inf, handler, 0, reterr);
}

int ck__ctl_run(struct ck_controller *ctl, struct ck_informer *const *infs, size_t n, int workers,
                struct ck_runner **ret_runner, struct ck_err *reterr)
{
    for (size_t i = 0; i < n; i++)
        if (infs[i] && !ck_informer_wait_for_sync(infs[i], CK_TIME_NEVER))
            return ck_err_set(reterr, CK_ESHUTDOWN, "%s: informers stopped before syncing",
                              ctl->name);
    return ck_runner_start(ctl, workers > 0 ? workers : 5, ret_runner, reterr);
}

int ck__ctl_recorder(struct ck_ctl_event_sink *sink_state, const struct ck_ctl_client *client,
                     const char *component, struct ck_clock *clock, bool synchronous,
                     struct ck_event_recorder **ret, struct ck_err *reterr)
{
    struct ck_event_sink sink;
    if (ck_ctl_event_sink_init(sink_state, client, &sink) < 0)
        return ck_err_set(reterr, CK_ENOENT, "%s: the API server serves no v1 events", component);
    struct ck_event_recorder_options opts = {
        .component = component,
        .synchronous = synchronous,
        .correlator = {.clock = clock},
    };
    return ck_event_recorder_new(&opts, &sink, ret, reterr);
}

void ck__ctl_stop(struct ck_controller *ctl, struct ck_runner *runner)
{
    if (runner)
        ck_runner_stop(runner);
    ck_wq_free(ctl->queue);
    ctl->queue = NULL;
}

void ck__ctl_enqueue(struct ck_wq *q, const json_t *obj)
{
    char *key = NULL;
    if (ck_meta_namespace_key(obj, &key, NULL) == 0)
        ck_wq_add(q, key);
    free(key);
}

bool ck__ctl_same_ref(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    const char *ua = json_string_value(json_object_get(a, "uid"));
    const char *ub = json_string_value(json_object_get(b, "uid"));
    return ua && ub && strcmp(ua, ub) == 0;
}

const json_t *ck__ctl_resolve_ref(const struct ck_lister *l, const char *kind, const char *ns,
                                  const json_t *ref)
{
    const char *k = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    if (!k || strcmp(k, kind) != 0 || !name || !uid)
        return NULL;
    const json_t *obj = NULL;
    if (ck_lister_get(l, ns ? ns : "", name, &obj) < 0)
        return NULL;
    const char *have = ck__meta_str(obj, "uid");
    if (!have || strcmp(have, uid) != 0) {
        ck_cached_unref(obj);
        return NULL;
    }
    return obj;
}

void ck__ctl_enqueue_owner(struct ck_wq *q, const struct ck_lister *owners, const char *kind,
                           const json_t *child, const json_t *ref)
{
    const json_t *owner =
        ref ? ck__ctl_resolve_ref(owners, kind, ck__meta_str(child, "namespace"), ref) : NULL;
    if (owner)
        ck__ctl_enqueue(q, owner);
    ck_cached_unref(owner);
}

bool ck__ctl_same_version(const json_t *old, const json_t *obj)
{
    const char *a = ck__meta_str(old, "resourceVersion");
    const char *b = ck__meta_str(obj, "resourceVersion");
    return a && b && strcmp(a, b) == 0;
}

void ck__ctl_enqueue_selecting(struct ck_wq *q, const struct ck_lister *owners, const json_t *child)
{
    const char *ns = ck__meta_str(child, "namespace");
    struct ck_obj_list list = {0};
    if (!ns || ck_lister_list(owners, ns, NULL, &list, NULL) < 0)
        return;
    const json_t *labels = json_object_get(json_object_get(child, "metadata"), "labels");
    for (size_t i = 0; i < list.n; i++) {
        struct ck_label_selector *sel = NULL;
        const json_t *spec_sel =
            json_object_get(json_object_get(list.items[i], "spec"), "selector");
        if (!spec_sel || ck_label_selector_from_object(spec_sel, &sel, NULL) < 0)
            continue;
        if (!ck_label_selector_is_empty(sel) && ck_label_selector_matches(sel, labels))
            ck__ctl_enqueue(q, list.items[i]);
        ck_label_selector_free(sel);
    }
    ck_obj_list_release(&list);
}
