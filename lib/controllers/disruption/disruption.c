/*
 * disruption.c - the disruption controller (kubernetes pkg/controller/disruption/
 * disruption.go): the status of every PodDisruptionBudget, which pods/eviction
 * reads and spends.
 *
 * Handlers enqueue a budget when it changes and, for a pod that is added, changes or
 * goes, every budget of its namespace whose selector matches it (before and after a
 * label change).
 *
 * sync(key) (trySync) lists the pods the budget selects and computes:
 *   - expectedPods and desiredHealthy (getExpectedPodCount): an integer minAvailable
 *     counts the pods and wants that many healthy; maxUnavailable or a percentage
 *     minAvailable count the replicas of the pods' controllers (ReplicaSet, or its
 *     Deployment, StatefulSet, ReplicationController; each controller once), percentages
 *     rounded up; a pod without a known controller is a Warning event
 *     CalculateExpectedPodCountFailed and the fail-safe status (no disruption allowed,
 *     DisruptionAllowed False reason SyncFailed);
 *   - disruptedPods (buildDisruptedPodMap): an entry stays while its pod exists, is not
 *     being deleted and was disrupted less than CK_DISRUPTION_DELETION_TIMEOUT ago; the
 *     key is requeued when the oldest entry expires;
 *   - currentHealthy: pods Ready, not being deleted, not in disruptedPods;
 *   - disruptionsAllowed = currentHealthy - desiredHealthy, 0 when that is negative or
 *     nothing is expected; the DisruptionAllowed condition (SufficientPods /
 *     InsufficientPods) and observedGeneration;
 * and writes status when it changed. No pods at all is a Normal event NoPods.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers run on the
 * informers' threads and only enqueue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/disruption.h"
#include "ckube/internal/util.h"

struct ck_disruption_controller {
    struct ck_ctl_client client;
    struct ck_lister pods, budgets;
    const struct ck_resource *pods_res, *budgets_res;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_informer *infs[2]; /* budgets, pods; NULL when made from given listers */
    struct ck_clock *clock;      /* NULL: the real (wall) clock */
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

/* ---- handlers ------------------------------------------------------------------ */

static void budget_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_disruption_controller *)arg)->queue, obj);
}

static void budget_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_disruption_controller *)arg)->queue, obj);
}

static void budget_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                          void *arg)
{
    (void)obj;
    (void)t;
    (void)arg; /* a deleted budget has no status to keep */
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)initial;
    struct ck_disruption_controller *c = arg;
    ck__ctl_enqueue_selecting(c->queue, &c->budgets, pod);
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    struct ck_disruption_controller *c = arg;
    ck__ctl_enqueue_selecting(c->queue, &c->budgets, pod);
    if (old != pod &&
        !json_equal(json_object_get(meta(old), "labels"), json_object_get(meta(pod), "labels")))
        ck__ctl_enqueue_selecting(c->queue, &c->budgets, old);
}

static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    const json_t *obj = pod ? pod : (t ? t->obj : NULL);
    if (obj)
        ck__ctl_enqueue_selecting(((struct ck_disruption_controller *)arg)->queue,
                                  &((struct ck_disruption_controller *)arg)->budgets, obj);
}

/* ---- expected pods --------------------------------------------------------------- */

/* An int-or-string against a total: the integer, or the percentage rounded up. -1: invalid. */
static long long scaled_value(const json_t *v, long long total)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    const char *s = json_string_value(v);
    int percent = -1;
    char rest = 0;
    if (!s || sscanf(s, "%d%%%c", &percent, &rest) != 1 || percent < 0)
        return -1;
    return (percent * total + 99) / 100;
}

/* The replicas of one controller, by its reference (the finders of getExpectedScale). */
static int controller_scale(struct ck_disruption_controller *c, const char *ns, const json_t *ref,
                            json_t *seen, long long *total, struct ck_err *reterr)
{
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    const char *api_version = json_string_value(json_object_get(ref, "apiVersion"));
    const struct ck_resource *res = NULL;
    if (!kind || !name || !uid || !api_version)
        return CK_ENOENT;
    if (strcmp(api_version, "apps/v1") == 0 && strcmp(kind, "ReplicaSet") == 0)
        res = ck_controller_resource("apps", "v1", "replicasets");
    else if (strcmp(api_version, "apps/v1") == 0 && strcmp(kind, "StatefulSet") == 0)
        res = ck_controller_resource("apps", "v1", "statefulsets");
    else if (strcmp(api_version, "apps/v1") == 0 && strcmp(kind, "Deployment") == 0)
        res = ck_controller_resource("apps", "v1", "deployments");
    else if (strcmp(api_version, "v1") == 0 && strcmp(kind, "ReplicationController") == 0)
        res = ck_controller_resource("", "v1", "replicationcontrollers");
    if (!res)
        return CK_ENOENT;
    json_t *owner = NULL;
    int r = ck_ctl_get(&c->client, res, ns, name, &owner, reterr);
    if (r < 0)
        return r;
    const char *owner_uid = json_string_value(json_object_get(meta(owner), "uid"));
    if (!owner_uid || strcmp(owner_uid, uid) != 0) {
        json_decref(owner);
        return CK_ENOENT;
    }
    /* a ReplicaSet of a Deployment: the Deployment's scale */
    const json_t *up = ck_controller_ref(owner);
    const char *up_kind = json_string_value(json_object_get(up, "kind"));
    if (strcmp(kind, "ReplicaSet") == 0 && up_kind && strcmp(up_kind, "Deployment") == 0) {
        json_t *up_ref = ck__json_copy(up);
        json_decref(owner);
        r = up_ref ? controller_scale(c, ns, up_ref, seen, total, reterr) : CK_ENOMEM;
        json_decref(up_ref);
        return r;
    }
    if (!json_object_get(seen, owner_uid)) {
        const json_t *replicas = json_object_get(json_object_get(owner, "spec"), "replicas");
        *total += json_is_integer(replicas) ? json_integer_value(replicas) : 1;
        json_object_set_new(seen, owner_uid, json_true());
    }
    json_decref(owner);
    return 0;
}

/*
 * getExpectedPodCount. 0, or a negative code with *why (the fail-safe's message) filled.
 */
static int expected_pods(struct ck_disruption_controller *c, const json_t *pdb,
                         const struct ck_obj_list *pods, long long *ret_expected,
                         long long *ret_desired, char *why, size_t why_size)
{
    const json_t *spec = json_object_get(pdb, "spec");
    const json_t *min = json_object_get(spec, "minAvailable");
    const json_t *max = json_object_get(spec, "maxUnavailable");
    *ret_expected = *ret_desired = 0;
    if (!max && !min)
        return 0;
    if (json_is_integer(min) && !max) {
        *ret_expected = (long long)pods->n;
        *ret_desired = json_integer_value(min);
        return 0;
    }
    json_t *seen = json_object();
    long long total = 0;
    int r = seen ? 0 : CK_ENOMEM;
    for (size_t i = 0; r == 0 && i < pods->n; i++) {
        const json_t *ref = ck_controller_ref(pods->items[i]);
        const char *pod_name = json_string_value(json_object_get(meta(pods->items[i]), "name"));
        struct ck_err err = {0};
        if (!ref) {
            snprintf(why, why_size, "found no controller ref for pod \"%s\"", pod_name);
            r = CK_ENOENT;
        } else if ((r = controller_scale(
                        c, json_string_value(json_object_get(meta(pods->items[i]), "namespace")),
                        ref, seen, &total, &err)) < 0) {
            snprintf(why, why_size, "found no controllers for pod \"%s\"", pod_name);
        }
        ck_err_release(&err);
    }
    json_decref(seen);
    if (r < 0)
        return r;
    *ret_expected = total;
    if (max) {
        long long unavailable = scaled_value(max, total);
        *ret_desired = total - (unavailable < 0 ? 0 : unavailable);
        if (*ret_desired < 0)
            *ret_desired = 0;
    } else {
        *ret_desired = scaled_value(min, total);
    }
    return 0;
}

/* ---- status ---------------------------------------------------------------------- */

/* The DisruptionAllowed condition as pdbhelper.UpdateDisruptionAllowedCondition sets it. */
static int set_condition(json_t *status, const json_t *old_status, const char *value,
                         const char *reason, const char *message, const char *now)
{
    json_t *conds = json_array();
    const json_t *old = NULL;
    size_t i;
    const json_t *each;
    json_array_foreach(json_object_get(old_status, "conditions"), i, each)
    {
        const char *type = json_string_value(json_object_get(each, "type"));
        if (type && strcmp(type, "DisruptionAllowed") == 0)
            old = each;
        else
            json_array_append(conds, (json_t *)each);
    }
    const char *old_value = json_string_value(json_object_get(old, "status"));
    const char *since = old_value && strcmp(old_value, value) == 0
                            ? json_string_value(json_object_get(old, "lastTransitionTime"))
                            : NULL;
    json_t *cond = json_pack(
        "{s:s, s:s, s:I, s:s, s:s, s:s}", "type", "DisruptionAllowed", "status", value,
        "observedGeneration", json_integer_value(json_object_get(status, "observedGeneration")),
        "lastTransitionTime", since ? since : now, "reason", reason, "message", message);
    if (!conds || !cond || json_array_append_new(conds, cond) < 0 ||
        json_object_set_new(status, "conditions", conds) < 0)
        return CK_ENOMEM;
    return 0;
}

static int write_status(struct ck_disruption_controller *c, const json_t *pdb, json_t *status,
                        struct ck_err *reterr)
{
    if (json_equal(json_object_get(pdb, "status"), status))
        return 0;
    json_t *copy = ck__json_copy(pdb);
    if (!copy || json_object_set(copy, "status", status) < 0) {
        json_decref(copy);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    int r = ck_ctl_update_status(&c->client, c->budgets_res,
                                 json_string_value(json_object_get(meta(pdb), "namespace")), copy,
                                 NULL, reterr);
    json_decref(copy);
    return r; /* a conflict is retried with backoff: the update will come as an event */
}

static int sync_budget(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_disruption_controller *c = ctl->data;
    const json_t *pdb = NULL;
    char *ns = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->budgets, ns, name, &pdb);
    free(name);
    if (r < 0) {
        free(ns);
        return 0; /* gone */
    }
    struct ck_obj_list pods = {0};
    const json_t *spec_sel = json_object_get(json_object_get(pdb, "spec"), "selector");
    struct ck_label_selector *sel = NULL;
    if (spec_sel && ck_label_selector_from_object(spec_sel, &sel, NULL) == 0)
        r = ck_lister_list(&c->pods, ns, sel, &pods, reterr);
    ck_label_selector_free(sel);
    free(ns);
    if (r < 0) {
        ck_cached_unref(pdb);
        return r;
    }
    if (pods.n == 0)
        ck_event_recordf(c->recorder, pdb, CK_EVENT_NORMAL, "NoPods", "No matching pods found");

    /* status times are wall-clock ones: a test's fake clock stands for Unix time */
    int64_t now_ns = c->clock ? ck_clock_now(c->clock) : (int64_t)time(NULL) * CK_SEC;
    int64_t now = now_ns / CK_SEC;
    char now_s[CK__TIME_LEN];
    ck__time_format(now, 0, now_s, sizeof(now_s));
    const json_t *old_status = json_object_get(pdb, "status");
    json_t *status = json_pack("{s:I}", "observedGeneration",
                               json_integer_value(json_object_get(meta(pdb), "generation")));
    long long expected = 0, desired = 0;
    char why[300] = "";
    int e =
        status ? expected_pods(c, pdb, &pods, &expected, &desired, why, sizeof(why)) : CK_ENOMEM;
    int fail = status ? 0 : CK_ENOMEM;
    if (e < 0 && e != CK_ENOMEM) {
        /* failSafe: no disruption while the budget cannot be computed */
        ck_event_recordf(c->recorder, pdb, CK_EVENT_WARNING, "CalculateExpectedPodCountFailed",
                         "Failed to calculate the number of expected pods: %s", why);
        json_t *kept = ck__json_copy(old_status ? old_status : json_object());
        json_decref(status);
        status = kept;
        if (!status ||
            json_object_set_new(
                status, "observedGeneration",
                json_integer(json_integer_value(json_object_get(meta(pdb), "generation")))) < 0 ||
            json_object_set_new(status, "disruptionsAllowed", json_integer(0)) < 0 ||
            set_condition(status, old_status, "False", "SyncFailed", why, now_s) < 0)
            fail = CK_ENOMEM;
    } else if (e == CK_ENOMEM) {
        fail = CK_ENOMEM;
    } else if (status) {
        /* buildDisruptedPodMap and countHealthyPods */
        const json_t *old_disrupted = json_object_get(old_status, "disruptedPods");
        json_t *disrupted = json_object();
        long long healthy = 0;
        int64_t recheck = 0;
        for (size_t i = 0; disrupted && i < pods.n; i++) {
            const json_t *pod = pods.items[i];
            const char *pod_name = json_string_value(json_object_get(meta(pod), "name"));
            if (json_object_get(meta(pod), "deletionTimestamp"))
                continue;
            const json_t *when = json_object_get(old_disrupted, pod_name ? pod_name : "");
            int64_t t = 0;
            if (when && ck__time_parse(json_string_value(when), &t, NULL) == 0) {
                int64_t expires = t * CK_SEC + CK_DISRUPTION_DELETION_TIMEOUT;
                if (expires > now_ns) {
                    json_object_set(disrupted, pod_name, (json_t *)when);
                    if (!recheck || expires - now_ns < recheck)
                        recheck = expires - now_ns;
                    continue; /* not counted healthy while its eviction is on its way */
                }
                CK_LOGV(2, "disruption %s: pod %s was expected to be deleted but was not", key,
                        pod_name);
            }
            if (ck_pod_is_ready(pod, NULL))
                healthy++;
        }
        long long allowed = healthy - desired;
        if (expected <= 0 || allowed <= 0)
            allowed = 0;
        if (!disrupted ||
            json_object_set_new(status, "disruptionsAllowed", json_integer(allowed)) < 0 ||
            json_object_set_new(status, "currentHealthy", json_integer(healthy)) < 0 ||
            json_object_set_new(status, "desiredHealthy", json_integer(desired)) < 0 ||
            json_object_set_new(status, "expectedPods", json_integer(expected)) < 0 ||
            (json_object_size(disrupted) &&
             json_object_set(status, "disruptedPods", disrupted) < 0) ||
            set_condition(status, old_status, allowed > 0 ? "True" : "False",
                          allowed > 0 ? "SufficientPods" : "InsufficientPods", "", now_s) < 0)
            fail = CK_ENOMEM;
        json_decref(disrupted);
        if (recheck > 0)
            ck_wq_add_after(c->queue, key, recheck);
    }
    ck_obj_list_release(&pods);
    if (fail == 0)
        r = write_status(c, pdb, status, reterr);
    else
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(status);
    ck_cached_unref(pdb);
    return r;
}

/* ---- lifecycle ------------------------------------------------------------------- */

static int init_common(struct ck_disruption_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->clock = clock;
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->budgets_res = ck_controller_resource("policy", "v1", "poddisruptionbudgets");
    if (!c->pods_res || !c->budgets_res)
        return ck_err_set(reterr, CK_ENOENT, "disruption: the API kinds it needs are unknown");
    int r = ck__ctl_recorder(&c->sink, &c->client, "controllermanager", clock, synchronous_events,
                             &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "disruption", sync_budget, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_disruption_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                                 struct ck_clock *clock, struct ck_disruption_controller **ret_c,
                                 struct ck_err *reterr)
{
    struct ck_disruption_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler budget_h = {budget_add, budget_update, budget_delete, c};
    struct ck_event_handler pod_h = {pod_add, pod_update, pod_delete, c};
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->budgets_res, &budget_h, &c->infs[0], &c->budgets, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r < 0) {
        ck_disruption_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_disruption_controller_new_with(const struct ck_disruption_controller_deps *deps,
                                      struct ck_disruption_controller **ret_c,
                                      struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->pods || !deps->budgets)
        return ck_err_set(reterr, CK_EINVAL, "disruption: a client and two listers are needed");
    struct ck_disruption_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->pods = *deps->pods;
    c->budgets = *deps->budgets;
    int r = init_common(c, deps->client, deps->clock, true, reterr);
    if (r < 0) {
        ck_disruption_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_disruption_controller_sync(struct ck_disruption_controller *c, const char *key,
                                  struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_disruption_controller_run(struct ck_disruption_controller *c, int workers,
                                 struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 2, workers, &c->runner, reterr);
}

struct ck_disruption_controller *ck_disruption_controller_free(struct ck_disruption_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    free(c);
    return NULL;
}

struct ck_wq *ck_disruption_controller_queue(struct ck_disruption_controller *c)
{
    return c->queue;
}

int ck_disruption_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr)
{
    struct ck_disruption_controller *c = NULL;
    int r = ck_disruption_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

int ck_disruption_manager_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_disruption_controller_run(state, workers, reterr);
}

void ck_disruption_manager_stop(void *state)
{
    ck_disruption_controller_free(state);
}
