/*
 * sync.c - the pure parts of kubernetes pkg/controller/deployment/sync.go.
 *
 *   - ck__deploy_scale() is scale(): when spec.replicas changes mid-rollout (or while
 *     paused), the difference is spread over the active ReplicaSets in proportion to
 *     their size, using the max-replicas annotation each carries from the last time
 *     the Deployment sized it. Scaling up visits the largest first, newer before older
 *     on ties; scaling down the largest first, older before newer; whatever rounding
 *     leaves over goes to the first one visited.
 *   - ck__deploy_is_scaling_event() is isScalingEvent(), which sends a sync to scale()
 *     rather than to a rollout; ck__deploy_check_paused_conditions() is
 *     checkPausedConditions().
 *   - ck__deploy_scaled_rs() is the object scaleReplicaSet() writes.
 *   - ck__deploy_calculate_status() is calculateStatus().
 *   - ck__deploy_cleanup_choice() is cleanupDeployment()'s choice of old ReplicaSets to
 *     delete beyond revisionHistoryLimit, lowest revision first.
 *   - ck__deploy_new_rs_object() and ck__deploy_sync_new_rs() are getNewReplicaSet():
 *     the ReplicaSet to create, or the annotation update an existing one needs.
 *
 * Threading: no state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "deployment.h"

/* A ReplicaSet taking part in proportional scaling and where its new size goes. */
struct slot {
    const json_t *rs;
    int32_t *size;
};

static void sort_slots(struct slot *s, size_t n, ck__deploy_rs_cmp cmp)
{
    for (size_t i = 1; i < n; i++) {
        struct slot x = s[i];
        size_t j = i;
        for (; j > 0 && cmp(s[j - 1].rs, x.rs) > 0; j--)
            s[j] = s[j - 1];
        s[j] = x;
    }
}

int ck__deploy_scale(const json_t *d, const json_t *new_rs, const json_t *const *old, size_t n_old,
                     int32_t *ret_new_size, int32_t *ret_old_sizes, bool *ret_proportional)
{
    bool ignored;
    if (!ret_proportional)
        ret_proportional = &ignored;
    *ret_proportional = false;
    int32_t replicas = ck__deploy_spec_replicas(d);
    if (new_rs)
        *ret_new_size = ck__deploy_spec_replicas(new_rs);
    for (size_t i = 0; i < n_old; i++)
        ret_old_sizes[i] = old[i] ? ck__deploy_spec_replicas(old[i]) : 0;

    /* One active ReplicaSet (or none: the newest) takes the whole count. */
    const json_t *only = ck__deploy_find_active_or_latest(new_rs, old, n_old);
    if (only) {
        if (only == new_rs) {
            *ret_new_size = replicas;
            return 0;
        }
        for (size_t i = 0; i < n_old; i++)
            if (old[i] == only)
                ret_old_sizes[i] = replicas;
        return 0;
    }
    /* A saturated new ReplicaSet (e.g. just adopted): the old ones go. */
    if (ck__deploy_is_saturated(d, new_rs)) {
        for (size_t i = 0; i < n_old; i++)
            ret_old_sizes[i] = 0;
        return 0;
    }
    if (!ck__deploy_is_rolling_update(d))
        return 0;

    struct slot *slots = ck__malloc((n_old + 1) * sizeof(*slots));
    size_t n = 0;
    if (!slots)
        return CK_ENOMEM;
    *ret_proportional = true;
    for (size_t i = 0; i < n_old; i++)
        if (old[i] && ck__deploy_spec_replicas(old[i]) > 0)
            slots[n++] = (struct slot){old[i], &ret_old_sizes[i]};
    if (new_rs && ck__deploy_spec_replicas(new_rs) > 0)
        slots[n++] = (struct slot){new_rs, ret_new_size};

    int32_t current = 0;
    for (size_t i = 0; i < n; i++)
        current += ck__deploy_spec_replicas(slots[i].rs);
    int32_t allowed = replicas > 0 ? replicas + ck__deploy_max_surge(d) : 0;
    int32_t to_add = allowed - current, added = 0;
    if (to_add > 0)
        sort_slots(slots, n, ck__deploy_cmp_by_size_newer);
    else if (to_add < 0)
        sort_slots(slots, n, ck__deploy_cmp_by_size_older);

    for (size_t i = 0; i < n && to_add != 0; i++) {
        int32_t p = ck__deploy_rs_proportion(slots[i].rs, d, to_add, added);
        *slots[i].size = ck__deploy_spec_replicas(slots[i].rs) + p;
        added += p;
    }
    if (n > 0 && to_add != 0) {
        *slots[0].size += to_add - added; /* leftovers to the first visited */
        if (*slots[0].size < 0)
            *slots[0].size = 0;
    }
    free(slots);
    return 0;
}

bool ck__deploy_is_scaling_event(const json_t *d, const json_t *const *rss, size_t n)
{
    int32_t desired;
    for (size_t i = 0; i < n; i++) {
        if (!rss[i] || ck__deploy_spec_replicas(rss[i]) <= 0 ||
            !ck__deploy_annotation_int32(rss[i], CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, &desired))
            continue;
        if (desired != ck__deploy_spec_replicas(d))
            return true;
    }
    return false;
}

bool ck__deploy_check_paused_conditions(json_t *d, int64_t now_ns)
{
    if (!ck__deploy_has_progress_deadline(d))
        return false;
    json_t *status = ck__deploy_child(d, "status");
    const json_t *c = ck__deploy_condition_get(status, CK_DEPLOY_COND_PROGRESSING);
    const char *reason = json_string_value(json_object_get(c, "reason"));
    if (reason && strcmp(reason, CK_DEPLOY_REASON_TIMED_OUT) == 0)
        return false; /* a reported lack of progress stays */
    bool paused_cond = reason && strcmp(reason, CK_DEPLOY_REASON_PAUSED) == 0;
    bool paused = json_is_true(json_object_get(json_object_get(d, "spec"), "paused"));
    if (paused == paused_cond)
        return false;
    ck__deploy_condition_set(
        status, ck__deploy_condition_new(
                    CK_DEPLOY_COND_PROGRESSING, "Unknown",
                    paused ? CK_DEPLOY_REASON_PAUSED : CK_DEPLOY_REASON_RESUMED,
                    paused ? "Deployment is paused" : "Deployment is resumed", now_ns));
    return true;
}

json_t *ck__deploy_scaled_rs(const json_t *rs, const json_t *d, int32_t size)
{
    int32_t replicas = ck__deploy_spec_replicas(d);
    int32_t max = replicas + ck__deploy_max_surge(d);
    if (ck__deploy_spec_replicas(rs) == size &&
        !ck__deploy_replicas_annotations_need_update(rs, replicas, max))
        return NULL;
    json_t *copy = ck__json_copy(rs);
    if (!copy)
        return NULL;
    json_object_set_new(ck__deploy_child(copy, "spec"), "replicas", json_integer(size));
    ck__deploy_set_replicas_annotations(copy, replicas, max);
    return copy;
}

/* Sets key to v unless v is 0 (Go's omitempty). */
static void set_count(json_t *obj, const char *key, json_int_t v)
{
    if (v != 0)
        json_object_set_new(obj, key, json_integer(v));
}

json_t *ck__deploy_calculate_status(const json_t *const *all, size_t n_all, const json_t *new_rs,
                                    const json_t *d, int64_t now_ns)
{
    const json_t *old_status = json_object_get(d, "status");
    int32_t available = ck__deploy_available_replica_count(all, n_all);
    int32_t unavailable = ck__deploy_replica_count(all, n_all) - available;
    if (unavailable < 0)
        unavailable = 0; /* more available than desired while scaling down */
    const json_t *news[1] = {new_rs};
    json_t *st = json_object();
    set_count(st, "observedGeneration",
              json_integer_value(json_object_get(json_object_get(d, "metadata"), "generation")));
    set_count(st, "replicas", ck__deploy_actual_replica_count(all, n_all));
    set_count(st, "updatedReplicas", ck__deploy_actual_replica_count(news, 1));
    set_count(st, "readyReplicas", ck__deploy_ready_replica_count(all, n_all));
    set_count(st, "availableReplicas", available);
    set_count(st, "unavailableReplicas", unavailable);
    json_t *cc = json_object_get(old_status, "collisionCount");
    if (cc)
        json_object_set(st, "collisionCount", cc);
    json_t *conds = json_object_get(old_status, "conditions");
    if (json_array_size(conds) > 0)
        json_object_set_new(st, "conditions", ck__json_copy(conds));

    if (available >= ck__deploy_spec_replicas(d) - ck__deploy_max_unavailable(d))
        ck__deploy_condition_set(
            st, ck__deploy_condition_new(CK_DEPLOY_COND_AVAILABLE, "True",
                                         CK_DEPLOY_REASON_MIN_AVAILABLE,
                                         "Deployment has minimum availability.", now_ns));
    else
        ck__deploy_condition_set(
            st, ck__deploy_condition_new(CK_DEPLOY_COND_AVAILABLE, "False",
                                         CK_DEPLOY_REASON_MIN_UNAVAILABLE,
                                         "Deployment does not have minimum availability.", now_ns));
    return st;
}

static bool being_deleted(const json_t *rs)
{
    const json_t *ts = json_object_get(json_object_get(rs, "metadata"), "deletionTimestamp");
    return ts && !json_is_null(ts);
}

size_t ck__deploy_cleanup_choice(const json_t *d, const json_t *const *old, size_t n_old,
                                 const json_t **ret_delete)
{
    if (!ck__deploy_has_revision_history_limit(d))
        return 0;
    /* ret_delete doubles as the sorted list: the chosen ones are compacted to its front */
    const json_t **alive = ret_delete;
    size_t n = 0, chosen = 0;
    for (size_t i = 0; i < n_old; i++)
        if (old[i] && !being_deleted(old[i]))
            alive[n++] = old[i];
    json_int_t limit =
        json_integer_value(json_object_get(json_object_get(d, "spec"), "revisionHistoryLimit"));
    json_int_t diff = (json_int_t)n - limit;
    ck__deploy_sort(alive, n, ck__deploy_cmp_by_revision);
    for (json_int_t i = 0; i < diff; i++) {
        const json_t *rs = alive[i];
        json_int_t gen =
            json_integer_value(json_object_get(json_object_get(rs, "metadata"), "generation"));
        /* only ReplicaSets with no pods, whose controller saw their latest spec */
        if (ck__deploy_status_count(rs, "replicas") != 0 || ck__deploy_spec_replicas(rs) != 0 ||
            gen > ck__deploy_status_count(rs, "observedGeneration") || being_deleted(rs))
            continue;
        ret_delete[chosen++] = rs; /* chosen <= i: never overwrites an unread entry */
    }
    return chosen;
}

/* CloneSelectorAndAddLabel: a copy of the selector with key=value in matchLabels. */
static json_t *selector_with(const json_t *selector, const char *key, const char *value)
{
    json_t *s = selector ? ck__json_copy(selector) : json_object();
    json_object_set_new(ck__deploy_child(s, "matchLabels"), key, json_string(value));
    return s;
}

static void next_revision(const json_t *const *old, size_t n_old, char *buf, size_t size)
{
    snprintf(buf, size, "%" PRId64, ck__deploy_max_revision(old, n_old) + 1);
}

json_t *ck__deploy_new_rs_object(const json_t *d, const json_t *const *old, size_t n_old,
                                 int *ret_err)
{
    const json_t *dmeta = json_object_get(d, "metadata");
    const json_t *dspec = json_object_get(d, "spec");
    char hash[16], revision[24];
    ck__deploy_template_hash(json_object_get(dspec, "template"),
                             json_object_get(json_object_get(d, "status"), "collisionCount"), hash,
                             sizeof(hash));

    json_t *tmpl = ck__json_copy(json_object_get(dspec, "template"));
    if (!tmpl)
        tmpl = json_object();
    json_t *labels = ck__deploy_child(ck__deploy_child(tmpl, "metadata"), "labels");
    json_object_set_new(labels, CK_DEPLOY_HASH_LABEL, json_string(hash));

    const char *dname = json_string_value(json_object_get(dmeta, "name"));
    const char *duid = json_string_value(json_object_get(dmeta, "uid"));
    size_t name_len = strlen(dname ? dname : "") + strlen(hash) + 2;
    char *name = ck__malloc(name_len);
    if (!name) {
        json_decref(tmpl);
        *ret_err = CK_ENOMEM;
        return NULL;
    }
    snprintf(name, name_len, "%s-%s", dname ? dname : "", hash);
    json_t *owner = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", "apps/v1", "kind",
                              "Deployment", "name", dname ? dname : "", "uid", duid ? duid : "",
                              "controller", 1, "blockOwnerDeletion", 1);
    json_t *rs =
        json_pack("{s:s, s:s, s:{s:s, s:o, s:O}, s:{s:i, s:o, s:o}}", "apiVersion", "apps/v1",
                  "kind", "ReplicaSet", "metadata", "name", name, "ownerReferences",
                  json_pack("[o]", owner), "labels", labels, "spec", "replicas", 0, "selector",
                  selector_with(json_object_get(dspec, "selector"), CK_DEPLOY_HASH_LABEL, hash),
                  "template", tmpl);
    free(name);
    if (!rs) {
        *ret_err = CK_ENOMEM;
        return NULL;
    }
    const char *ns = json_string_value(json_object_get(dmeta, "namespace"));
    if (ns)
        json_object_set_new(json_object_get(rs, "metadata"), "namespace", json_string(ns));
    json_t *mrs = json_object_get(dspec, "minReadySeconds");
    if (mrs)
        json_object_set(json_object_get(rs, "spec"), "minReadySeconds", mrs);

    /* sized against the old ReplicaSets plus itself (at 0) */
    const json_t **all = ck__malloc((n_old + 1) * sizeof(*all));
    int32_t size = 0;
    int err = all ? 0 : CK_ENOMEM;
    if (all) {
        for (size_t i = 0; i < n_old; i++)
            all[i] = old[i];
        all[n_old] = rs;
        err = ck__deploy_new_rs_new_replicas(d, all, n_old + 1, rs, &size);
        free(all);
    }
    if (err < 0) {
        json_decref(rs);
        *ret_err = err;
        return NULL;
    }
    json_object_set_new(json_object_get(rs, "spec"), "replicas", json_integer(size));
    next_revision(old, n_old, revision, sizeof(revision));
    ck__deploy_set_new_rs_annotations(d, rs, revision, false, CK_DEPLOY_MAX_REV_HISTORY_CHARS);
    *ret_err = 0;
    return rs;
}

json_t *ck__deploy_sync_new_rs(const json_t *d, const json_t *new_rs, const json_t *const *old,
                               size_t n_old)
{
    char revision[24];
    json_t *copy = ck__json_copy(new_rs);
    if (!copy)
        return NULL;
    next_revision(old, n_old, revision, sizeof(revision));
    bool changed =
        ck__deploy_set_new_rs_annotations(d, copy, revision, true, CK_DEPLOY_MAX_REV_HISTORY_CHARS);
    json_t *dmrs = json_object_get(json_object_get(d, "spec"), "minReadySeconds");
    json_t *spec = json_object_get(copy, "spec");
    if (json_integer_value(json_object_get(spec, "minReadySeconds")) != json_integer_value(dmrs)) {
        json_object_set_new(spec, "minReadySeconds", json_integer(json_integer_value(dmrs)));
        changed = true;
    }
    if (!changed)
        copy = (json_decref(copy), NULL);
    return copy;
}

bool ck__deploy_sync_deployment_revision(json_t *d, const json_t *new_rs, int64_t now_ns)
{
    const char *rev = ck__deploy_annotation(new_rs, CK_DEPLOY_REVISION_ANNOTATION);
    bool changed = ck__deploy_set_revision(d, rev ? rev : "");
    json_t *status = json_object_get(d, "status");
    if (ck__deploy_has_progress_deadline(d) &&
        !ck__deploy_condition_get(status, CK_DEPLOY_COND_PROGRESSING)) {
        status = ck__deploy_child(d, "status");
        char msg[320];
        const char *name = ck__deploy_name(new_rs);
        snprintf(msg, sizeof(msg), "Found new replica set \"%s\"", name ? name : "");
        ck__deploy_condition_set(
            status, ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "True",
                                             CK_DEPLOY_REASON_FOUND_NEW_RS, msg, now_ns));
        changed = true;
    }
    return changed;
}
