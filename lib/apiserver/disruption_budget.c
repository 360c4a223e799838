/*
 * disruption_budget.c - what pods/eviction asks of PodDisruptionBudgets
 * before it deletes a pod, as Kubernetes' EvictionREST.Create does
 * (pkg/registry/core/pod/storage/eviction.go):
 *
 *   - a pod that is Pending, Succeeded, Failed or already being deleted is
 *     deleted without looking at budgets;
 *   - the budgets of the pod's namespace whose non-empty selector matches its
 *     labels: none lets the eviction through, more than one is a 500;
 *   - a pod that is not Ready is let through without spending the budget when
 *     the budget is healthy (IfHealthyBudget) or its policy is AlwaysAllow,
 *     the delete then carrying the pod's resourceVersion as a precondition;
 *   - else the budget's status is checked and decremented in one optimistic
 *     update of the status subresource (read, check, write if unchanged, else
 *     again), so that two evictions never spend the same disruption:
 *     429 "Cannot evict pod as it would violate the pod's disruption budget."
 *     when none is allowed or the controller has not yet observed the
 *     budget's generation; the pod's name goes into status.disruptedPods.
 *
 * Threading: called on a request's thread; the registry serialises writes.
 *
 * Tested by tests/e2e/test_workloads.sh (a budget refuses the eviction that
 * would break it; kubectl drain waits on it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define EVICTION_REFUSED   "Cannot evict pod as it would violate the pod's disruption budget."
#define MAX_DISRUPTED_PODS 2000 /* MaxDisruptedPodSize */

static bool phase_is(const json_t *pod, const char *phase)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return strcmp(p ? p : "Pending", phase) == 0;
}

static bool pod_is_ready(const json_t *pod)
{
    const json_t *conditions = json_object_get(json_object_get(pod, "status"), "conditions");
    size_t i;
    const json_t *c;
    json_array_foreach(conditions, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (type && strcmp(type, "Ready") == 0)
            return status && strcmp(status, "True") == 0;
    }
    return false;
}

/* The 429 of a refused eviction, with its DisruptionBudget cause. */
static int refuse(struct ck_err *err, const char *cause)
{
    ck_err_status(err, "TooManyRequests", EVICTION_REFUSED);
    if (ck_err_add_cause(err, "DisruptionBudget", cause, NULL) < 0)
        return ck_err_no_memory(err);
    return err->code;
}

static int still_processing(struct ck_err *err, const char *name)
{
    char cause[400];
    snprintf(cause, sizeof(cause),
             "The disruption budget %s is still being processed by the server.", name);
    return refuse(err, cause);
}

/* Sets the DisruptionAllowed condition from status.disruptionsAllowed, as pdbhelper does. */
static int set_disruption_allowed_condition(json_t *status, const char *now)
{
    bool allowed = json_integer_value(json_object_get(status, "disruptionsAllowed")) > 0;
    const char *value = allowed ? "True" : "False";
    json_t *conditions = json_object_get(status, "conditions");
    if (!json_is_array(conditions)) {
        conditions = json_array();
        if (json_object_set_new(status, "conditions", conditions) < 0)
            return CK_ENOMEM;
    }
    json_t *c = NULL;
    size_t i;
    json_t *each;
    json_array_foreach(conditions, i, each)
    {
        const char *type = json_string_value(json_object_get(each, "type"));
        if (type && strcmp(type, "DisruptionAllowed") == 0)
            c = each;
    }
    if (!c) {
        c = json_object();
        if (json_array_append_new(conditions, c) < 0)
            return CK_ENOMEM;
    }
    const char *old = json_string_value(json_object_get(c, "status"));
    int r = json_object_set_new(c, "type", json_string("DisruptionAllowed"));
    if (!old || strcmp(old, value) != 0)
        r |= json_object_set_new(c, "lastTransitionTime", json_string(now));
    r |= json_object_set_new(c, "status", json_string(value));
    r |= json_object_set_new(c, "reason",
                             json_string(allowed ? "SufficientPods" : "InsufficientPods"));
    if (!json_object_get(c, "message"))
        r |= json_object_set_new(c, "message", json_string(""));
    r |= json_object_set_new(
        c, "observedGeneration",
        json_integer(json_integer_value(json_object_get(status, "observedGeneration"))));
    return r < 0 ? CK_ENOMEM : 0;
}

struct decrement {
    const char *pod_name;
    bool dry_run;
};

/* checkAndDecrement, as the status mutation of one optimistic update. */
static json_t *check_and_decrement(const json_t *current, void *arg, struct ck_err *err)
{
    const struct decrement *d = arg;
    const json_t *meta = json_object_get(current, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const json_t *status = json_object_get(current, "status");
    long long generation = json_integer_value(json_object_get(meta, "generation"));
    long long observed = json_integer_value(json_object_get(status, "observedGeneration"));
    long long allowed = json_integer_value(json_object_get(status, "disruptionsAllowed"));
    if (observed < generation) {
        still_processing(err, name ? name : "");
        return NULL;
    }
    if (allowed < 0) {
        ck_err_status(err, "Forbidden",
                      "poddisruptionbudgets.policy \"%s\" is forbidden: pdb disruptions allowed "
                      "is negative",
                      name ? name : "");
        return NULL;
    }
    if (json_object_size(json_object_get(status, "disruptedPods")) > MAX_DISRUPTED_PODS) {
        ck_err_status(err, "Forbidden",
                      "poddisruptionbudgets.policy \"%s\" is forbidden: DisruptedPods map too big "
                      "- too many evictions not confirmed by PDB controller",
                      name ? name : "");
        return NULL;
    }
    if (allowed == 0) {
        char cause[400];
        snprintf(cause, sizeof(cause),
                 "The disruption budget %s needs %lld healthy pods and has %lld currently",
                 name ? name : "",
                 (long long)json_integer_value(json_object_get(status, "desiredHealthy")),
                 (long long)json_integer_value(json_object_get(status, "currentHealthy")));
        refuse(err, cause);
        return NULL;
    }
    json_t *copy = ck__json_copy(current);
    json_t *new_status = copy ? json_object_get(copy, "status") : NULL;
    char now[40];
    ck_rfc3339((long long)time(NULL), now, sizeof(now));
    int r = new_status ? 0 : CK_ENOMEM;
    if (r == 0)
        r = json_object_set_new(new_status, "disruptionsAllowed", json_integer(allowed - 1));
    if (r == 0 && allowed - 1 == 0)
        r = set_disruption_allowed_condition(new_status, now);
    if (r == 0 && !d->dry_run) {
        json_t *disrupted = json_object_get(new_status, "disruptedPods");
        if (!json_is_object(disrupted)) {
            disrupted = json_object();
            r = json_object_set_new(new_status, "disruptedPods", disrupted);
        }
        if (r == 0)
            r = json_object_set_new(disrupted, d->pod_name, json_string(now));
    }
    if (r < 0) {
        json_decref(copy);
        ck_err_no_memory(err);
        return NULL;
    }
    return copy;
}

/* The one budget of the pod's namespace that selects it: 0 none, 1 one (*ret_name), >1 many. */
static int matching_budgets(struct ck__registry *reg, const struct ck_kind *pdb_kind,
                            const char *namespace, const json_t *pod_labels, char *ret_name,
                            size_t name_size, struct ck_err *err)
{
    struct ck__list_options lopts = {.namespace = namespace};
    struct ck__list_result result;
    if (ck__registry_list(reg, pdb_kind, &lopts, &result, err) < 0)
        return err->code;
    int found = 0;
    for (size_t i = 0; i < result.n_kvs && found >= 0; i++) {
        json_t *pdb = ck__decode_stored(result.kvs[i]);
        if (!pdb) {
            found = ck_err_no_memory(err);
            break;
        }
        struct ck_label_selector *s = NULL;
        const json_t *selector = json_object_get(json_object_get(pdb, "spec"), "selector");
        int r = selector ? ck_label_selector_from_object(selector, &s, NULL) : -1;
        if (r == CK_ENOMEM) {
            found = ck_err_no_memory(err);
        } else if (r == 0 && !ck_label_selector_is_empty(s) &&
                   ck_label_selector_matches(s, pod_labels)) {
            if (found++ == 0)
                snprintf(
                    ret_name, name_size, "%s",
                    json_string_value(json_object_get(json_object_get(pdb, "metadata"), "name")));
        }
        ck_label_selector_free(s);
        json_decref(pdb);
    }
    ck__list_result_release(&result);
    return found;
}

int ck__eviction_check_budgets(struct ck__registry *reg, const char *namespace,
                               const char *pod_name, bool dry_run,
                               struct ck__eviction_decision *ret, struct ck_err *err)
{
    memset(ret, 0, sizeof(*ret));
    const struct ck_kind *pod_kind = ck_kind_with_role(CK_KIND_ROLE_POD);
    const struct ck_kind *pdb_kind = ck_kind_lookup("policy", "v1", "poddisruptionbudgets");
    if (!pod_kind || !pdb_kind)
        return 0; /* budgets are not served: nothing to honour */
    const struct ck_kv *kv = NULL;
    if (ck__registry_get(reg, pod_kind, namespace, pod_name, &kv, err) < 0)
        return err->code;
    json_t *pod = ck__decode_stored(kv);
    long long pod_revision = (long long)kv->mod_revision;
    ck_kv_unref(kv);
    if (!pod)
        return ck_err_no_memory(err);
    const json_t *meta = json_object_get(pod, "metadata");
    if (phase_is(pod, "Succeeded") || phase_is(pod, "Failed") || phase_is(pod, "Pending") ||
        json_object_get(meta, "deletionTimestamp")) {
        json_decref(pod);
        return 0; /* canIgnorePDB */
    }
    int n = matching_budgets(reg, pdb_kind, namespace, json_object_get(meta, "labels"), ret->budget,
                             sizeof(ret->budget), err);
    bool ready = pod_is_ready(pod);
    json_decref(pod);
    if (n < 0)
        return n;
    if (n > 1) {
        ck_err_status(err, "InternalError",
                      "This pod has more than one PodDisruptionBudget, which the eviction "
                      "subresource does not support.");
        return err->code;
    }
    if (n == 0)
        return 0;
    if (!ready) {
        const struct ck_kv *pdb_kv = NULL;
        if (ck__registry_get(reg, pdb_kind, namespace, ret->budget, &pdb_kv, err) < 0)
            return err->code;
        json_t *pdb = ck__decode_stored(pdb_kv);
        ck_kv_unref(pdb_kv);
        if (!pdb)
            return ck_err_no_memory(err);
        const json_t *status = json_object_get(pdb, "status");
        const char *policy = json_string_value(
            json_object_get(json_object_get(pdb, "spec"), "unhealthyPodEvictionPolicy"));
        long long current = json_integer_value(json_object_get(status, "currentHealthy"));
        long long desired = json_integer_value(json_object_get(status, "desiredHealthy"));
        bool let_through =
            (policy && strcmp(policy, "AlwaysAllow") == 0) || (current >= desired && desired > 0);
        json_decref(pdb);
        if (let_through) { /* the delete must not race the pod becoming Ready */
            ret->precondition = true;
            snprintf(ret->pod_resource_version, sizeof(ret->pod_resource_version), "%lld",
                     pod_revision);
            return 0;
        }
    }
    struct decrement d = {.pod_name = pod_name, .dry_run = dry_run};
    char *out = NULL;
    size_t out_len = 0;
    int r = ck__registry_update(reg, pdb_kind, namespace, ret->budget, "status",
                                check_and_decrement, &d, dry_run, &out, &out_len, err);
    free(out);
    return r < 0 ? r : 0;
}

int ck__eviction_refused_by_conflict(struct ck_err *err, const char *budget)
{
    ck_err_release(err);
    return still_processing(err, budget);
}
