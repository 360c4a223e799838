/*
 * serviceaccount.c - the ServiceAccount controller (kubernetes
 * pkg/controller/serviceaccount/serviceaccounts_controller.go): a queue of namespace
 * names fed by the namespaces informer (every add and update) and the serviceaccounts
 * informer (a deleted account enqueues its namespace), and one worker, as
 * kube-controller-manager runs it, that creates the `default` account of an Active
 * namespace when the cache does not hold it. A failed create is retried with the queue's
 * exponential backoff (5 ms doubling to 1000 s, client-go's default controller limiter
 * without the bucket).
 *
 * Threading: the runner's worker; the caches are the informers' (thread-safe).
 *
 * Tested by tests/controllers/test_serviceaccount.c (fakes) and tests/e2e/test_auth.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/sacontroller.h"

struct ck_sa_controller {
    struct ck_ctl_client client;
    struct ck_indexer *namespaces, *accounts;
    const struct ck_resource *sa_res;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

static const char *const accounts_to_ensure[] = {CK_SA_DEFAULT_NAME};

int ck_sa_controller_sync(struct ck_sa_controller *c, const char *name, struct ck_err *reterr)
{
    const json_t *ns = NULL;
    if (ck_indexer_get_by_key(c->namespaces, name, &ns) < 0)
        return 0; /* gone: nothing to ensure */
    const char *phase = json_string_value(json_object_get(json_object_get(ns, "status"), "phase"));
    bool active = phase && strcmp(phase, "Active") == 0;
    ck_cached_unref(ns);
    if (!active)
        return 0; /* Terminating: its accounts are being deleted */
    for (size_t i = 0; i < sizeof(accounts_to_ensure) / sizeof(accounts_to_ensure[0]); i++) {
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", name, accounts_to_ensure[i]);
        const json_t *sa = NULL;
        if (ck_indexer_get_by_key(c->accounts, key, &sa) == 0) {
            ck_cached_unref(sa);
            continue;
        }
        json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                                "metadata", "name", accounts_to_ensure[i]);
        if (!obj)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        struct ck_err err = {0};
        int r = ck_ctl_create(&c->client, c->sa_res, name, obj, NULL, &err);
        json_decref(obj);
        if (r == CK_EEXIST)
            r = 0; /* made meanwhile, by us or another */
        if (r < 0) {
            ck_err_set(reterr, r, "creating serviceaccount %s/%s: %s", name, accounts_to_ensure[i],
                       ck_err_message(&err));
            ck_err_release(&err);
            return r;
        }
        ck_err_release(&err);
    }
    return 0;
}

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_sa_controller_sync(ctl->data, key, reterr);
}

struct ck_wq *ck_sa_controller_queue(struct ck_sa_controller *c)
{
    return c->queue;
}

int ck_sa_controller_new(const struct ck_sa_controller_config *config,
                         struct ck_sa_controller **ret_c, struct ck_err *reterr)
{
    if (!config->client.ops || !config->namespaces || !config->accounts)
        return ck_err_set(reterr, CK_EINVAL, "serviceaccount controller: missing interfaces");
    const struct ck_resource *sa_res = ck_controller_resource("", "v1", "serviceaccounts");
    if (!sa_res)
        return ck_err_set(reterr, CK_ENOENT, "serviceaccount controller: no serviceaccounts kind");
    struct ck_sa_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->client = config->client;
    c->namespaces = config->namespaces;
    c->accounts = config->accounts;
    c->sa_res = sa_res;
    struct ck_wq_options o = {.name = "serviceaccount",
                              .clock = config->clock,
                              .limiter = ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC)};
    int r = o.limiter ? ck_wq_new(&o, &c->queue, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0) {
        ck_rl_free(o.limiter);
        free(c);
        return r;
    }
    c->ctl = (struct ck_controller){
        .name = "serviceaccount", .sync = sync_key, .data = c, .queue = c->queue};
    *ret_c = c;
    return 0;
}

struct ck_sa_controller *ck_sa_controller_free(struct ck_sa_controller *c)
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

static void enqueue_namespace(struct ck_sa_controller *c, const json_t *ns)
{
    const char *name = ck__meta_str(ns, "name");
    if (name)
        ck_wq_add(c->queue, name);
}

static void ns_added(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_namespace(arg, obj);
}

static void ns_updated(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    enqueue_namespace(arg, new_obj);
}

static void sa_deleted(const json_t *obj, const struct ck_deleted_final_state_unknown *tombstone,
                       void *arg)
{
    (void)tombstone;
    const char *ns = ck__meta_str(obj, "namespace");
    if (ns)
        ck_wq_add(((struct ck_sa_controller *)arg)->queue, ns);
}

struct sa_state {
    struct ck_informer *ns_inf, *sa_inf;
    struct ck_sa_controller *c;
};

int ck_sa_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr)
{
    const struct ck_resource *ns_res = ck_controller_resource("", "v1", "namespaces");
    const struct ck_resource *sa_res = ck_controller_resource("", "v1", "serviceaccounts");
    struct sa_state *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    s->ns_inf = ns_res ? ck_informer_factory_for(ctx->factory, ns_res) : NULL;
    s->sa_inf = sa_res ? ck_informer_factory_for(ctx->factory, sa_res) : NULL;
    int r = 0;
    if (!s->ns_inf || !s->sa_inf)
        r = ck_err_set(reterr, CK_ENOMEM, "serviceaccount controller: no informers");
    struct ck_sa_controller_config config = {0};
    if (r == 0) {
        ck_ctl_client_init_rest(&config.client, ctx->client);
        config.namespaces = ck_informer_indexer(s->ns_inf);
        config.accounts = ck_informer_indexer(s->sa_inf);
        r = ck_sa_controller_new(&config, &s->c, reterr);
    }
    if (r == 0) {
        struct ck_event_handler nh = {.on_add = ns_added, .on_update = ns_updated, .arg = s->c};
        struct ck_event_handler sh = {.on_delete = sa_deleted, .arg = s->c};
        r = ck_informer_add_handler(s->ns_inf, &nh, 0, reterr);
        if (r == 0)
            r = ck_informer_add_handler(s->sa_inf, &sh, 0, reterr);
    }
    if (r < 0) {
        ck_sa_controller_free(s->c);
        free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

int ck_sa_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct sa_state *s = state;
    (void)workers; /* kube-controller-manager runs this controller with one worker */
    if (!ck_informer_wait_for_sync(s->ns_inf, CK_TIME_NEVER) ||
        !ck_informer_wait_for_sync(s->sa_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "serviceaccount controller: informer stopped");
    return ck_runner_start(&s->c->ctl, 1, &s->c->runner, reterr);
}

void ck_sa_manager_stop(void *state)
{
    struct sa_state *s = state;
    if (!s)
        return;
    ck_sa_controller_free(s->c);
    free(s);
}
