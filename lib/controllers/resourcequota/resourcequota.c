/*
 * resourcequota.c - the resourcequota controller (kubernetes
 * pkg/controller/resourcequota/resource_quota_controller.go and
 * resource_quota_monitor.go).
 *
 * sync(key) recounts one ResourceQuota from the informer caches: status.hard becomes
 * spec.hard, and status.used, for every hard resource a counted resource's evaluator
 * matches (include/ckube/quota.h), the sum of what the namespace's objects covered by
 * the quota's scopes use (zero when none); a hard resource no counted resource matches
 * keeps what the ResourceQuota admission plugin charged it (0 when never charged). The
 * status is written only when it changed, with the quota's resourceVersion, so a write
 * racing admission's charge fails and is retried. Every quota is queued again after
 * the sync period (--resource-quota-sync-period, 5 minutes), Kubernetes' full resync.
 *
 * Handlers: a quota added, or whose spec.hard changed, is queued (its status updates,
 * which this controller and admission make, are not: Kubernetes' rule); an object of a
 * counted resource added (after the first list), deleted, or changed in what it uses (a
 * pod that terminated) queues the quotas of its namespace that limit its resource, so
 * usage is released without waiting for the resync (Kubernetes' replenishment).
 *
 * Threading: the runner syncs one key at a time per key; handlers run on the informers'
 * threads; the controller's state is read-only after creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/quota.h"
#include "ckube/resourcequota.h"

/* What the manager's controller counts: the resources of quota's evaluators and counts. */
static const struct {
    const char *group, *version, *resource;
} counted_resources[] = {
    {"", "v1", "pods"},
    {"", "v1", "services"},
    {"", "v1", "persistentvolumeclaims"},
    {"", "v1", "configmaps"},
    {"", "v1", "secrets"},
    {"", "v1", "replicationcontrollers"},
    {"", "v1", "resourcequotas"},
    {"apps", "v1", "deployments"},
    {"apps", "v1", "replicasets"},
    {"apps", "v1", "statefulsets"},
    {"apps", "v1", "daemonsets"},
    {"batch", "v1", "jobs"},
    {"batch", "v1", "cronjobs"},
};
#define N_COUNTED (sizeof(counted_resources) / sizeof(counted_resources[0]))

struct counted {
    const char *group, *resource;
    struct ck_lister lister;
    struct ck_resourcequota_controller *c; /* the handlers' argument */
};

struct ck_resourcequota_controller {
    struct ck_ctl_client client;
    struct ck_lister quotas;
    const struct ck_resource *quotas_res;
    struct counted counted[N_COUNTED];
    size_t n_counted;
    struct ck_informer *infs[1 + N_COUNTED];
    size_t n_infs;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    int64_t (*now)(void *arg);
    void *now_arg;
    int64_t sync_period;
};

static int64_t wall_seconds(const struct ck_resourcequota_controller *c)
{
    if (c->now)
        return c->now(c->now_arg) / CK_SEC;
    return (int64_t)time(NULL);
}

/* ---- the recount ------------------------------------------------------------------- */

/* Adds to sum what obj uses of the names in matched, when quota (view) covers obj. */
static int add_usage(const struct counted *k, const json_t *view, const json_t *obj,
                     const json_t *matched, int64_t now, json_t *sum)
{
    if (!ck_quota_matches(view, k->group, k->resource, obj))
        return 0;
    json_t *usage = ck_quota_usage(k->group, k->resource, obj, now);
    json_t *masked = json_object();
    int r = usage && masked ? 0 : -1;
    const char *name;
    json_t *v;
    json_object_foreach(usage, name, v)
    {
        if (r == 0 && json_object_get(matched, name))
            r = json_object_set(masked, name, v);
    }
    if (r == 0)
        r = ck_quota_add(sum, masked);
    json_decref(usage);
    json_decref(masked);
    return r;
}

/* CalculateUsage for one counted resource: sets used[name] for each name it matches. */
static int recount(const struct counted *k, const char *ns, const json_t *view, int64_t now,
                   json_t *used, struct ck_err *reterr)
{
    const json_t *hard = json_object_get(json_object_get(view, "status"), "hard");
    json_t *sum = json_object();
    if (!sum)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)hard, name, v)
    {
        if (ck_quota_matching_resource(k->group, k->resource, name))
            json_object_set_new(sum, name, json_string("0"));
    }
    if (json_object_size(sum) == 0) {
        json_decref(sum);
        return 0;
    }
    struct ck_obj_list list = {0};
    int r = ck_lister_list(&k->lister, ns, NULL, &list, reterr);
    for (size_t i = 0; r == 0 && i < list.n; i++)
        if (add_usage(k, view, list.items[i], sum, now, sum) < 0)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    ck_obj_list_release(&list);
    json_object_foreach(sum, name, v)
    {
        if (r == 0 && json_object_set(used, name, v) < 0)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    json_decref(sum);
    return r;
}

/* The status quota should have: {hard: spec.hard, used: recounted}. New reference. */
static json_t *wanted_status(struct ck_resourcequota_controller *c, const json_t *quota,
                             struct ck_err *reterr)
{
    const char *ns = ck__meta_str(quota, "namespace");
    const json_t *spec_hard = json_object_get(json_object_get(quota, "spec"), "hard");
    json_t *hard = json_is_object(spec_hard) ? json_deep_copy(spec_hard) : json_object();
    json_t *view = json_pack("{s:O?, s:{s:O}}", "spec", json_object_get(quota, "spec"), "status",
                             "hard", hard);
    const json_t *old_used = json_object_get(json_object_get(quota, "status"), "used");
    json_t *used = json_is_object(old_used) ? json_deep_copy(old_used) : json_object();
    if (!hard || !view || !used) {
        json_decref(hard);
        json_decref(view);
        json_decref(used);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    int64_t now = wall_seconds(c);
    int r = 0;
    for (size_t i = 0; r == 0 && i < c->n_counted; i++)
        r = recount(&c->counted[i], ns ? ns : "", view, now, used, reterr);
    /* only what is limited; a limit never counted starts at zero */
    json_t *masked = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(hard, name, v)
    {
        const json_t *u = json_object_get(used, name);
        if (r == 0 && masked &&
            json_object_set_new(masked, name, u ? json_incref((json_t *)u) : json_string("0")) < 0)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    json_t *status =
        r == 0 && masked ? json_pack("{s:O, s:O}", "hard", hard, "used", masked) : NULL;
    if (r == 0 && !status)
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(hard);
    json_decref(view);
    json_decref(used);
    json_decref(masked);
    return status;
}

/* The milli value of a quantity (a string or a JSON number): true when it is one. */
static bool milli_of(const json_t *v, int64_t *ret)
{
    char buf[48];
    const char *s = json_string_value(v);
    if (!s && json_is_integer(v))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v)), s = buf;
    return s && ck_quantity_milli(s, ret) == 0;
}

/* Whether two resource lists hold the same quantities (quota.Equals: "1000m" is "1"). */
static bool same_list(const json_t *a, const json_t *b)
{
    if (json_object_size(a) != json_object_size(b))
        return false;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)a, name, v)
    {
        const json_t *w = json_object_get(b, name);
        int64_t ma, mb;
        if (!w)
            return false;
        if (milli_of(v, &ma) && milli_of(w, &mb) ? ma != mb : !json_equal(v, (json_t *)w))
            return false;
    }
    return true;
}

static int sync_key(struct ck_resourcequota_controller *c, const char *key, struct ck_err *reterr)
{
    char *ns = NULL, *name = NULL;
    const json_t *quota = NULL;
    if (ck_split_meta_namespace_key(key, &ns, &name, NULL) < 0 ||
        ck_lister_get(&c->quotas, ns, name, &quota) < 0) {
        free(ns);
        free(name);
        return 0; /* deleted: nothing to keep */
    }
    int r = 0;
    json_t *status = wanted_status(c, quota, reterr);
    const json_t *old = json_object_get(quota, "status");
    if (!status) {
        r = CK_ENOMEM;
    } else if (!json_equal(json_object_get(status, "hard"), json_object_get(old, "hard")) ||
               !same_list(json_object_get(status, "used"), json_object_get(old, "used"))) {
        json_t *next = json_deep_copy(quota);
        if (!next || json_object_set(next, "status", status) < 0)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        else
            r = ck_ctl_update_status(&c->client, c->quotas_res, ns, next, NULL, reterr);
        if (r == 0)
            CK_LOGV(4, "resourcequota: updated the status of %s", key);
        json_decref(next);
    }
    json_decref(status);
    ck_cached_unref(quota);
    if (r == CK_ENOENT) { /* deleted meanwhile */
        ck_err_release(reterr);
        r = 0;
    } else if (r == 0) {
        ck_wq_add_after(c->queue, key, c->sync_period);
    }
    free(ns);
    free(name);
    return r;
}

static int sync_quota(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return sync_key(ctl->data, key, reterr);
}

/* ---- handlers ---------------------------------------------------------------------- */

static void quota_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_resourcequota_controller *)arg)->queue, obj);
}

static void quota_update(const json_t *old, const json_t *obj, void *arg)
{
    const json_t *a = json_object_get(json_object_get(old, "spec"), "hard");
    const json_t *b = json_object_get(json_object_get(obj, "spec"), "hard");
    if (!a || !b || !same_list(a, b))
        ck__ctl_enqueue(((struct ck_resourcequota_controller *)arg)->queue, obj);
}

static void quota_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                         void *arg)
{
    (void)obj, (void)t, (void)arg; /* a deleted quota needs no status */
}

/* Queues the quotas of obj's namespace that limit k's resource. */
static void replenish(const struct counted *k, const json_t *obj)
{
    const char *ns = ck__meta_str(obj, "namespace");
    if (!ns || !*ns)
        return;
    struct ck_obj_list list = {0};
    if (ck_lister_list(&k->c->quotas, ns, NULL, &list, NULL) < 0)
        return;
    for (size_t i = 0; i < list.n; i++) {
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(list.items[i], "spec"), "hard"), name,
                            v)
        {
            if (ck_quota_matching_resource(k->group, k->resource, name)) {
                ck__ctl_enqueue(k->c->queue, list.items[i]);
                break;
            }
        }
    }
    ck_obj_list_release(&list);
}

static void counted_add(const json_t *obj, bool initial, void *arg)
{
    if (!initial)
        replenish(arg, obj);
}

static void counted_update(const json_t *old, const json_t *obj, void *arg)
{
    const struct counted *k = arg;
    if (ck__ctl_same_version(old, obj))
        return;
    int64_t now = wall_seconds(k->c);
    json_t *a = ck_quota_usage(k->group, k->resource, old, now);
    json_t *b = ck_quota_usage(k->group, k->resource, obj, now);
    if (!a || !b || !json_equal(a, b))
        replenish(k, obj);
    json_decref(a);
    json_decref(b);
}

static void counted_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                           void *arg)
{
    (void)t;
    replenish(arg, obj);
}

void ck_resourcequota_controller_handler(struct ck_resourcequota_controller *c, const char *group,
                                         const char *which, struct ck_event_handler *ret)
{
    *ret = (struct ck_event_handler){quota_add, quota_update, quota_delete, c};
    for (size_t i = 0; which && i < c->n_counted; i++)
        if (strcmp(c->counted[i].group, group ? group : "") == 0 &&
            strcmp(c->counted[i].resource, which) == 0)
            *ret = (struct ck_event_handler){counted_add, counted_update, counted_delete,
                                             &c->counted[i]};
}

/* ---- life ---------------------------------------------------------------------------- */

static int init_common(struct ck_resourcequota_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, int64_t sync_period, struct ck_err *reterr)
{
    c->client = *client;
    c->sync_period = sync_period > 0 ? sync_period : CK_RESOURCE_QUOTA_SYNC_PERIOD;
    c->quotas_res = ck_controller_resource("", "v1", "resourcequotas");
    if (!c->quotas_res)
        return ck_err_set(reterr, CK_ENOENT, "resourcequota: the API serves no resourcequotas");
    int r = ck__ctl_init(&c->ctl, "resourcequota", sync_quota, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_resourcequota_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                                    int64_t sync_period, struct ck_resourcequota_controller **ret,
                                    struct ck_err *reterr)
{
    struct ck_resourcequota_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    int r = init_common(c, &rest, NULL, sync_period, reterr);
    struct ck_event_handler h = {quota_add, quota_update, quota_delete, c};
    if (r == 0)
        r = ck__ctl_watch(factory, c->quotas_res, &h, &c->infs[c->n_infs++], &c->quotas, reterr);
    for (size_t i = 0; r == 0 && i < N_COUNTED; i++) {
        const struct ck_resource *res =
            ck_controller_resource(counted_resources[i].group, counted_resources[i].version,
                                   counted_resources[i].resource);
        if (!res)
            continue; /* a kind this build does not serve */
        struct counted *k = &c->counted[c->n_counted++];
        k->group = counted_resources[i].group;
        k->resource = counted_resources[i].resource;
        k->c = c;
        struct ck_event_handler kh = {counted_add, counted_update, counted_delete, k};
        r = ck__ctl_watch(factory, res, &kh, &c->infs[c->n_infs++], &k->lister, reterr);
    }
    if (r < 0) {
        ck_resourcequota_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_resourcequota_controller_new_with(const struct ck_resourcequota_controller_deps *deps,
                                         struct ck_resourcequota_controller **ret,
                                         struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->quotas || deps->n_counted > N_COUNTED)
        return ck_err_set(reterr, CK_EINVAL,
                          "resourcequota: a client, a quota lister and at most %zu counted "
                          "resources are needed",
                          N_COUNTED);
    struct ck_resourcequota_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->quotas = *deps->quotas;
    for (size_t i = 0; i < deps->n_counted; i++)
        c->counted[i] = (struct counted){deps->counted[i].group, deps->counted[i].resource,
                                         *deps->counted[i].lister, c};
    c->n_counted = deps->n_counted;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    int r = init_common(c, deps->client, deps->clock, deps->sync_period, reterr);
    if (r < 0) {
        ck_resourcequota_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_resourcequota_controller_sync(struct ck_resourcequota_controller *c, const char *key,
                                     struct ck_err *reterr)
{
    return sync_key(c, key, reterr);
}

struct ck_wq *ck_resourcequota_controller_queue(struct ck_resourcequota_controller *c)
{
    return c->queue;
}

int ck_resourcequota_controller_run(struct ck_resourcequota_controller *c, int workers,
                                    struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, c->n_infs, workers, &c->runner, reterr);
}

struct ck_resourcequota_controller *
ck_resourcequota_controller_free(struct ck_resourcequota_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    free(c);
    return NULL;
}
