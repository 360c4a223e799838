/*
 * namespace.c - the namespace controller (kubernetes
 * pkg/controller/namespace/namespace_controller.go): a queue of namespace names, fed by
 * the namespaces informer, and workers that run one deletion pass (deleter.c) per key.
 *
 * Every namespace event enqueues its name when it has a deletionTimestamp; the pass
 * re-reads the namespace from the server, so a stale event costs one GET. A pass that
 * leaves content requeues the name after CK_NS_RECHECK; a failing pass is retried with
 * the queue's exponential backoff (5 ms doubling to 1000 s, as Kubernetes' namespace
 * queue).
 *
 * In production the collection calls go through the metadata client (deletecollection,
 * metadata lists) and finalize is a PUT of namespaces/NAME/finalize; tests give fakes.
 *
 * Threading: the runner's workers; one namespace is never synced by two at once.
 *
 * Tested by tests/controllers/test_namespace_sync.c (fakes) and tests/e2e/test_gc.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_ns_controller_sync(ctl->data, key, reterr);
}

int ck_ns_controller_sync(struct ck_ns_controller *c, const char *name, struct ck_err *reterr)
{
    bool remaining = false;
    int r = ck__ns_delete(c, name, &remaining, reterr);
    if (r == 0 && remaining)
        ck_wq_add_after(c->queue, name, CK_NS_RECHECK);
    return r;
}

struct ck_wq *ck_ns_controller_queue(struct ck_ns_controller *c)
{
    return c->queue;
}

int ck_ns_controller_new(const struct ck_ns_controller_config *config,
                         struct ck_ns_controller **ret_c, struct ck_err *reterr)
{
    if (!config->client.ops || !config->content || !config->discovery)
        return ck_err_set(reterr, CK_EINVAL, "namespace controller: missing interfaces");
    const struct ck_resource *ns_res = ck_controller_resource("", "v1", "namespaces");
    if (!ns_res)
        return ck_err_set(reterr, CK_ENOENT, "namespace controller: no namespaces kind");
    struct ck_ns_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->client = config->client;
    c->content = config->content;
    c->content_ctx = config->content_ctx;
    c->discovery = config->discovery;
    c->ns_res = ns_res;
    struct ck_wq_options o = {.name = "namespace",
                              .clock = config->clock,
                              .limiter = ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC)};
    int r = o.limiter ? ck_wq_new(&o, &c->queue, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0) {
        ck_rl_free(o.limiter);
        free(c);
        return r;
    }
    c->ctl =
        (struct ck_controller){.name = "namespace", .sync = sync_key, .data = c, .queue = c->queue};
    *ret_c = c;
    return 0;
}

struct ck_ns_controller *ck_ns_controller_free(struct ck_ns_controller *c)
{
    if (!c)
        return NULL;
    if (c->runner)
        ck_runner_stop(c->runner);
    ck_wq_free(c->queue);
    free(c);
    return NULL;
}

/* ---- the controller manager's row --------------------------------------------------- */

static void enqueue_if_deleting(struct ck_ns_controller *c, const json_t *ns)
{
    const char *name = ck__meta_str(ns, "name");
    if (name && json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp"))
        ck_wq_add(c->queue, name);
}

static void on_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_if_deleting(arg, obj);
}

static void on_update(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    enqueue_if_deleting(arg, new_obj);
}

static int content_delete_collection(void *ctx, const struct ck_resource *res,
                                     const char *namespace, const json_t *options,
                                     struct ck_err *reterr)
{
    return ck_metadata_delete_collection(ctx, res, namespace, options, NULL, reterr);
}

static int content_list(void *ctx, const struct ck_resource *res, const char *namespace,
                        json_t **ret_list, struct ck_err *reterr)
{
    return ck_metadata_list(ctx, res, namespace, NULL, ret_list, reterr);
}

static int content_finalize(void *ctx, const json_t *ns, struct ck_err *reterr)
{
    const char *name = ck__meta_str(ns, "name");
    char path[512];
    int n = snprintf(path, sizeof(path), "/api/v1/namespaces/%s/finalize", name ? name : "");
    if (!name || n < 0 || (size_t)n >= sizeof(path))
        return ck_err_set(reterr, CK_EINVAL, "namespace without a usable name");
    return ck_rest_do(ctx, "PUT", path, ns, NULL, NULL, reterr);
}

static const struct ck_ns_content_ops rest_content = {
    .delete_collection = content_delete_collection,
    .list = content_list,
    .finalize = content_finalize,
};

struct ns_state {
    struct ck_discovery *discovery;
    struct ck_ns_controller *c;
};

int ck_ns_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr)
{
    struct ns_state *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_discovery_source src;
    ck_discovery_source_rest(&src, ctx->client);
    /* each pass sees resources added within the last 5 s (a CRD just created) */
    int r = ck_discovery_new(&src, 5 * CK_SEC, NULL, &s->discovery, reterr);
    struct ck_ns_controller_config config = {
        .content = &rest_content,
        .content_ctx = ctx->client,
        .discovery = s->discovery,
    };
    ck_ctl_client_init_rest(&config.client, ctx->client);
    if (r == 0)
        r = ck_ns_controller_new(&config, &s->c, reterr);
    if (r == 0) {
        s->c->ns_inf = ck_informer_factory_for(ctx->factory, s->c->ns_res);
        struct ck_event_handler h = {.on_add = on_add, .on_update = on_update, .arg = s->c};
        r = s->c->ns_inf ? ck_informer_add_handler(s->c->ns_inf, &h, 0, reterr)
                         : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (r < 0) {
        ck_ns_controller_free(s->c);
        ck_discovery_free(s->discovery);
        free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

int ck_ns_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct ns_state *s = state;
    if (!ck_informer_wait_for_sync(s->c->ns_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "namespace controller: informer stopped");
    /* kube-controller-manager's --concurrent-namespace-syncs default is 10 */
    return ck_runner_start(&s->c->ctl, workers > 0 ? workers : 10, &s->c->runner, reterr);
}

void ck_ns_manager_stop(void *state)
{
    struct ns_state *s = state;
    if (!s)
        return;
    ck_ns_controller_free(s->c);
    ck_discovery_free(s->discovery);
    free(s);
}
