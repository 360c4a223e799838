/*
 * statefulset.c - the StatefulSet controller (kubernetes pkg/controller/statefulset:
 * stateful_set.go, stateful_set_control.go, stateful_set_utils.go; history for revisions).
 *
 * Handlers enqueue a StatefulSet when it changes, and the owner of a pod that is added,
 * changes or goes (an orphan: every set of its namespace selecting it, to adopt it).
 *
 * sync(key) (UpdateStatefulSet) claims the set's pods and:
 *   - revisions: the ControllerRevision of the template (data
 *     {"spec":{"template":{...,"$patch":"replace"}}}, named <set>-<hash> with Kubernetes'
 *     hash of those bytes and status.collisionCount, which a name held by another
 *     revision bumps) is the update revision, made with the next revision number when
 *     new; taking back an older template renumbers its revision, as a rollback does.
 *     status.currentRevision stays until a rolling update completes. Revisions neither
 *     current, nor the update, nor a pod's are deleted, the lowest numbers first, beyond
 *     revisionHistoryLimit (truncateHistory);
 *   - pods <set>-<ordinal> for ordinals start .. start+replicas-1, with the labels
 *     statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
 *     controller-revision-hash, hostname and subdomain, and a claim
 *     <template>-<set>-<ordinal> per volumeClaimTemplate (created first; owned by the
 *     set when persistentVolumeClaimRetentionPolicy.whenDeleted is Delete). Under
 *     OrderedReady one pod is created at a time, each after the lower ones are Running,
 *     Ready and available (Ready for minReadySeconds); Parallel creates them all. A pod
 *     below the partition is made from the current revision, the others from the update
 *     revision. A Failed or Succeeded pod is deleted to be made again;
 *   - pods beyond the ordinals: under whenScaled Delete their claims get an owner
 *     reference to the pod first (the garbage collector deletes them with it); then they
 *     are deleted from the highest, one at a time under OrderedReady, each after the
 *     others are available (the first unhealthy one excepted);
 *   - RollingUpdate: the highest pod at or above the partition that is not of the update
 *     revision is deleted (it comes back new), once the pods above it are healthy (Running,
 *     Ready, not terminating: 1.32 does not wait out minReadySeconds here); with
 *     MaxUnavailableStatefulSet on, as many as keep at most rollingUpdate.maxUnavailable
 *     (a number or a percentage of replicas rounded down, at least 1) pods unhealthy
 *     (updateStatefulSetAfterInvariantEstablished). OnDelete leaves pods to the user;
 *   - status: replicas, readyReplicas, availableReplicas (Ready for minReadySeconds; the
 *     set is looked at again when the next pod becomes available), currentReplicas,
 *     updatedReplicas, currentRevision, updateRevision, observedGeneration,
 *     collisionCount.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers run on the
 * informers' threads and only enqueue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/statefulset.h"

#define STS_API_VERSION "apps/v1"
#define STS_KIND        "StatefulSet"
#define LABEL_POD_NAME  "statefulset.kubernetes.io/pod-name"
#define LABEL_POD_INDEX "apps.kubernetes.io/pod-index"
#define LABEL_REVISION  "controller-revision-hash"

struct ck_sts_controller {
    struct ck_ctl_client client;
    struct ck_lister pods, sets, revisions;
    const struct ck_resource *pods_res, *sets_res, *revisions_res, *claims_res;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_informer *infs[3]; /* sets, pods, revisions; NULL when made from given listers */
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    int64_t (*now)(void *arg); /* wall clock, ns; NULL: the real time */
    void *now_arg;
    /* MaxUnavailableStatefulSet; NULL: the API server's gate has decided (it drops the
     * field while the gate is off) */
    bool (*feature_enabled)(void *ctx, const char *feature);
    void *feature_ctx;
};

/* Seconds since the Unix epoch on the controller's clock. */
static int64_t now_sec(const struct ck_sts_controller *c)
{
    return c->now ? c->now(c->now_arg) / CK_SEC : (int64_t)time(NULL);
}

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static const char *meta_str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(meta(obj), field));
}

/* ---- handlers ------------------------------------------------------------------ */

static void set_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_sts_controller *)arg)->queue, obj);
}

static void set_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_sts_controller *)arg)->queue, obj);
}

static void set_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)obj;
    (void)t;
    (void)arg; /* the garbage collector deletes what the set owned */
}

static void pod_event(struct ck_sts_controller *c, const json_t *pod)
{
    const json_t *ref = ck_controller_ref(pod);
    if (!ref) {
        ck__ctl_enqueue_selecting(c->queue, &c->sets, pod);
        return;
    }
    ck__ctl_enqueue_owner(c->queue, &c->sets, STS_KIND, pod, ref);
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)initial;
    pod_event(arg, pod);
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    if (old != pod && !ck__ctl_same_ref(ck_controller_ref(old), ck_controller_ref(pod)))
        pod_event(arg, old);
    pod_event(arg, pod);
}

static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    const json_t *obj = pod ? pod : (t ? t->obj : NULL);
    if (obj)
        pod_event(arg, obj);
}

static void revision_add(const json_t *obj, bool initial, void *arg)
{
    (void)obj, (void)initial, (void)arg;
}

static void revision_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old, (void)obj, (void)arg;
}

static void revision_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                            void *arg)
{
    (void)obj, (void)t, (void)arg;
}

/* ---- revisions ------------------------------------------------------------------- */

/*
 * Appends text to out with Go's encoding/json escapes where they differ from jansson's:
 * '<', '>', '&', U+2028 and U+2029 as \u escapes, and lower-case hex digits in \u
 * escapes. text is jansson's compact output, so these bytes only occur inside strings.
 */
static char *go_json_escapes(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n * 6 + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '\\' && p[1] == 'u') {
            *o++ = *p++;
            *o++ = *p;
            for (int k = 0; k < 4 && p[1]; k++) {
                char h = *++p;
                *o++ = (h >= 'A' && h <= 'F') ? (char)(h - 'A' + 'a') : h;
            }
        } else if (ch == '\\' && p[1]) {
            *o++ = *p++;
            *o++ = *p;
        } else if (ch == '<' || ch == '>' || ch == '&') {
            o += sprintf(o, "\\u00%02x", ch);
        } else if (ch == 0xe2 && (unsigned char)p[1] == 0x80 &&
                   ((unsigned char)p[2] == 0xa8 || (unsigned char)p[2] == 0xa9)) {
            o += sprintf(o, "\\u202%c", (unsigned char)p[2] == 0xa8 ? '8' : '9');
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

const char *ck_sts_revision_hash(const json_t *data, long long collision_count, char *buf,
                                 size_t size)
{
    char *text = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    char *raw = text ? go_json_escapes(text) : NULL;
    free(text);
    if (!raw)
        return NULL;
    /* hashControllerRevision: FNV-32 (not 1a) of Data.Raw, then the probe in decimal */
    char probe[32];
    snprintf(probe, sizeof(probe), "%lld", collision_count);
    uint32_t hash = 2166136261u;
    for (const char *part[2] = {raw, probe}, **q = part; q < part + 2; q++)
        for (const char *p = *q; *p; p++) {
            hash *= 16777619u;
            hash ^= (unsigned char)*p;
        }
    free(raw);
    /* rand.SafeEncodeString of the decimal hash: no vowels, no look-alikes */
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char digits[16];
    snprintf(digits, sizeof(digits), "%u", hash);
    size_t n = strlen(digits);
    if (size < n + 1)
        return NULL;
    for (size_t i = 0; i < n; i++)
        buf[i] = alphabet[(unsigned char)digits[i] % (sizeof(alphabet) - 1)];
    buf[n] = '\0';
    return buf;
}

static json_t *revision_data(const json_t *set);

const char *ck_sts_revision_name(const json_t *set, long long collision_count, char *buf,
                                 size_t size)
{
    json_t *data = revision_data(set);
    char hash[16];
    const char *h = data ? ck_sts_revision_hash(data, collision_count, hash, sizeof(hash)) : NULL;
    json_decref(data);
    const char *name = meta_str(set, "name");
    if (!h || !name)
        return NULL;
    /* ControllerRevisionName: the prefix cut to 223 bytes */
    snprintf(buf, size, "%.223s-%s", name, h);
    return buf;
}

/* The set's template as a revision stores it: a patch replacing spec.template. */
static json_t *revision_data(const json_t *set)
{
    json_t *template = ck__json_copy(json_object_get(json_object_get(set, "spec"), "template"));
    if (!template || json_object_set_new(template, "$patch", json_string("replace")) < 0) {
        json_decref(template);
        return NULL;
    }
    return json_pack("{s:{s:o}}", "spec", "template", template);
}

static bool owned_by(const json_t *obj, const char *uid)
{
    const char *ref_uid = json_string_value(json_object_get(ck_controller_ref(obj), "uid"));
    return ref_uid && uid && strcmp(ref_uid, uid) == 0;
}

/* Creates the update revision named name holding data, numbered revision. */
static int create_revision(struct ck_sts_controller *c, const json_t *set, const char *name,
                           const json_t *data, long long revision, struct ck_err *reterr)
{
    const char *ns = meta_str(set, "namespace");
    json_t *ref = ck_controller_ref_new(set, STS_API_VERSION, STS_KIND);
    json_t *labels = ck__json_copy(json_object_get(
        json_object_get(json_object_get(json_object_get(set, "spec"), "template"), "metadata"),
        "labels"));
    const char *hash = strrchr(name, '-') + 1;
    if (!labels)
        labels = json_object();
    json_t *rev = ref && labels
                      ? json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:[O]}, s:O, s:I}", "apiVersion",
                                  "apps/v1", "kind", "ControllerRevision", "metadata", "name", name,
                                  "namespace", ns, "labels", labels, "ownerReferences", ref, "data",
                                  data, "revision", (json_int_t)revision)
                      : NULL;
    if (rev)
        json_object_set_new(json_object_get(json_object_get(rev, "metadata"), "labels"),
                            "controller.kubernetes.io/hash", json_string(hash));
    int r = rev ? ck_ctl_create(&c->client, c->revisions_res, ns, rev, NULL, reterr)
                : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(rev);
    json_decref(ref);
    json_decref(labels);
    return r;
}

/*
 * Makes sure the update revision exists and is the newest (getStatefulSetRevisions:
 * FindEqualRevisions, the renumbering of an equal older one as a rollback, or
 * CreateControllerRevision with a collision count bumped while another revision holds
 * the name); its name into update_name. *ret_current_template: the template of
 * status.currentRevision (a new reference), or NULL when that revision is unknown.
 * all: the namespace's revisions as the cache has them (the caller releases it);
 * *ret_collisions: the collision count for status.
 */
static int ensure_revision(struct ck_sts_controller *c, const json_t *set, char *update_name,
                           size_t size, json_t **ret_current_template, struct ck_obj_list *all,
                           long long *ret_collisions, struct ck_err *reterr)
{
    *ret_current_template = NULL;
    const char *ns = meta_str(set, "namespace");
    const char *uid = meta_str(set, "uid");
    const char *current =
        json_string_value(json_object_get(json_object_get(set, "status"), "currentRevision"));
    long long collisions =
        json_integer_value(json_object_get(json_object_get(set, "status"), "collisionCount"));
    int r = ck_lister_list(&c->revisions, ns, NULL, all, reterr);
    if (r < 0)
        return r;
    json_t *data = revision_data(set);
    long long max = 0;
    const json_t *equal = NULL; /* the newest revision of the same data */
    for (size_t i = 0; i < all->n && data; i++) {
        const json_t *rev = all->items[i];
        if (!owned_by(rev, uid))
            continue;
        long long number = json_integer_value(json_object_get(rev, "revision"));
        if (number > max)
            max = number;
        if (json_equal(json_object_get(rev, "data"), data) &&
            (!equal || number > json_integer_value(json_object_get(equal, "revision"))))
            equal = rev;
        const char *name = meta_str(rev, "name");
        if (name && current && strcmp(name, current) == 0) {
            json_t *t = ck__json_copy(
                json_object_get(json_object_get(json_object_get(rev, "data"), "spec"), "template"));
            if (t)
                json_object_del(t, "$patch");
            *ret_current_template = t;
        }
    }
    if (!data && r == 0)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0 && equal) {
        snprintf(update_name, size, "%s", meta_str(equal, "name"));
        if (json_integer_value(json_object_get(equal, "revision")) < max) {
            json_t *copy = ck__json_copy(equal); /* a rollback: the old template is newest */
            if (copy)
                json_object_set_new(copy, "revision", json_integer(max + 1));
            r = copy ? ck_ctl_update(&c->client, c->revisions_res, ns, copy, NULL, reterr)
                     : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(copy);
        }
    } else if (r == 0) {
        /* a name some other revision holds is a collision: the next count, as
         * CreateControllerRevision retries (bounded, as the names are finite) */
        for (int tries = 0; r == 0 && tries < 100; tries++, collisions++) {
            if (!ck_sts_revision_name(set, collisions, update_name, size)) {
                r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
                break;
            }
            bool taken = false;
            for (size_t i = 0; i < all->n && !taken; i++)
                taken = strcmp(meta_str(all->items[i], "name"), update_name) == 0;
            if (taken)
                continue;
            r = create_revision(c, set, update_name, data, max + 1, reterr);
            if (r == CK_EEXIST) { /* not in the cache yet: the next sync sees whose it is */
                ck_err_release(reterr);
                r = 0;
            }
            break;
        }
    }
    *ret_collisions = collisions;
    json_decref(data);
    return r;
}

/*
 * truncateHistory: the set's revisions that are neither current, nor the update, nor a
 * pod's are deleted, the lowest numbers first, until revisionHistoryLimit remain.
 */
static int truncate_history(struct ck_sts_controller *c, const json_t *set,
                            const struct ck_obj_list *all, const struct ck_obj_list *pods,
                            const char *current, const char *update, struct ck_err *reterr)
{
    const json_t *limit_v = json_object_get(json_object_get(set, "spec"), "revisionHistoryLimit");
    long long limit = json_is_integer(limit_v) ? json_integer_value(limit_v) : 10;
    const json_t **history = ck__calloc(all->n ? all->n : 1, sizeof(*history));
    if (!history)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < all->n; i++) {
        if (!owned_by(all->items[i], meta_str(set, "uid")))
            continue;
        const char *name = meta_str(all->items[i], "name");
        bool live = !name || strcmp(name, current) == 0 || strcmp(name, update) == 0;
        for (size_t j = 0; j < pods->n && !live; j++) {
            const char *rev = json_string_value(
                json_object_get(json_object_get(meta(pods->items[j]), "labels"), LABEL_REVISION));
            live = rev && strcmp(rev, name) == 0;
        }
        if (!live)
            history[n++] = all->items[i];
    }
    int r = 0;
    if (limit >= 0 && (long long)n > limit) {
        for (size_t a = 1; a < n; a++) /* by revision number, lowest first */
            for (size_t b = a;
                 b > 0 && json_integer_value(json_object_get(history[b - 1], "revision")) >
                              json_integer_value(json_object_get(history[b], "revision"));
                 b--) {
                const json_t *t = history[b];
                history[b] = history[b - 1];
                history[b - 1] = t;
            }
        for (size_t i = 0; i < n - (size_t)limit && r == 0; i++) {
            r = ck_ctl_delete(&c->client, c->revisions_res, meta_str(set, "namespace"),
                              meta_str(history[i], "name"), NULL, NULL, reterr);
            if (r == CK_ENOENT) {
                ck_err_release(reterr);
                r = 0;
            }
        }
    }
    free(history);
    return r;
}

/* parent[key] when it is an object, else a new empty object stored there (borrowed). */
static json_t *object_at(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (json_is_object(o))
        return o;
    o = json_object();
    return json_object_set_new(parent, key, o) < 0 ? NULL : o;
}

/* ---- pods and claims ------------------------------------------------------------- */

/* The ordinal in "<set>-<ordinal>", or -1 when name is not one of the set's. */
static long ordinal_of(const char *set_name, const char *name)
{
    size_t n = strlen(set_name);
    if (!name || strncmp(name, set_name, n) != 0 || name[n] != '-' || !name[n + 1])
        return -1;
    char *end = NULL;
    long ord = strtol(name + n + 1, &end, 10);
    return *end || ord < 0 ? -1 : ord;
}

static bool running_and_ready(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && strcmp(phase, "Running") == 0 && ck_pod_is_ready(pod, NULL);
}

static bool pod_failed(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0);
}

static bool terminating(const json_t *pod)
{
    return json_object_get(meta(pod), "deletionTimestamp") != NULL;
}

static const char *pod_revision(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(meta(pod), "labels"), LABEL_REVISION));
}

/* Creates the claims of the pod's volumeClaimTemplates that do not exist
 * (createPersistentVolumeClaims). */
static int ensure_claims(struct ck_sts_controller *c, const json_t *set, const char *pod_name,
                         struct ck_err *reterr)
{
    const json_t *spec = json_object_get(set, "spec");
    const char *ns = meta_str(set, "namespace");
    const char *when_deleted = json_string_value(json_object_get(
        json_object_get(spec, "persistentVolumeClaimRetentionPolicy"), "whenDeleted"));
    size_t i;
    const json_t *tmpl;
    json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), i, tmpl)
    {
        char name[512];
        snprintf(name, sizeof(name), "%s-%s", meta_str(tmpl, "name"), pod_name);
        json_t *have = NULL;
        struct ck_err err = {0};
        int r = ck_ctl_get(&c->client, c->claims_res, ns, name, &have, &err);
        json_decref(have);
        if (r == 0)
            continue;
        ck_err_release(&err);
        if (r != CK_ENOENT)
            return ck_err_set(reterr, r, "get claim %s: failed", name);
        json_t *labels = ck__json_copy(json_object_get(meta(tmpl), "labels"));
        if (!labels)
            labels = json_object();
        json_object_update(labels,
                           json_object_get(json_object_get(spec, "selector"), "matchLabels"));
        json_t *claim = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:O}", "apiVersion", "v1", "kind",
                                  "PersistentVolumeClaim", "metadata", "name", name, "namespace",
                                  ns, "labels", labels, "spec", json_object_get(tmpl, "spec"));
        if (claim && when_deleted && strcmp(when_deleted, "Delete") == 0)
            json_object_set_new(
                json_object_get(claim, "metadata"), "ownerReferences",
                json_pack("[o]", ck_controller_ref_new(set, STS_API_VERSION, STS_KIND)));
        r = claim ? ck_ctl_create(&c->client, c->claims_res, ns, claim, NULL, reterr)
                  : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        json_decref(claim);
        if (r == 0)
            ck_event_recordf(c->recorder, set, CK_EVENT_NORMAL, "SuccessfulCreate",
                             "create Claim %s Pod %s in StatefulSet %s success", name, pod_name,
                             meta_str(set, "name"));
        else if (r != CK_EEXIST)
            return r;
        else
            ck_err_release(reterr);
    }
    return 0;
}

/* The pod of ordinal from template (newStatefulSetPod and its identity and storage). */
static json_t *new_pod(const json_t *set, const json_t *template, long ordinal,
                       const char *revision)
{
    json_t *ref = ck_controller_ref_new(set, STS_API_VERSION, STS_KIND);
    json_t *pod = ref ? ck_pod_from_template(template, set, ref) : NULL;
    json_decref(ref);
    if (!pod)
        return NULL;
    char name[300], index[32];
    snprintf(name, sizeof(name), "%s-%ld", meta_str(set, "name"), ordinal);
    snprintf(index, sizeof(index), "%ld", ordinal);
    json_t *m = json_object_get(pod, "metadata");
    json_object_del(m, "generateName");
    json_object_set_new(m, "name", json_string(name));
    json_t *labels = object_at(m, "labels");
    json_object_set_new(labels, LABEL_POD_NAME, json_string(name));
    json_object_set_new(labels, LABEL_POD_INDEX, json_string(index));
    json_object_set_new(labels, LABEL_REVISION, json_string(revision));
    json_t *spec = object_at(pod, "spec");
    json_object_set_new(spec, "hostname", json_string(name));
    const char *service =
        json_string_value(json_object_get(json_object_get(set, "spec"), "serviceName"));
    if (service && *service)
        json_object_set_new(spec, "subdomain", json_string(service));
    /* each claim template is the volume of its name */
    const json_t *tmpls = json_object_get(json_object_get(set, "spec"), "volumeClaimTemplates");
    json_t *volumes = json_object_get(spec, "volumes");
    size_t i;
    const json_t *tmpl;
    json_array_foreach(tmpls, i, tmpl)
    {
        const char *vname = meta_str(tmpl, "name");
        char claim[512];
        snprintf(claim, sizeof(claim), "%s-%s", vname ? vname : "", name);
        if (!json_is_array(volumes)) {
            volumes = json_array();
            json_object_set_new(spec, "volumes", volumes);
        }
        for (size_t j = 0; j < json_array_size(volumes); j++) {
            const char *have =
                json_string_value(json_object_get(json_array_get(volumes, j), "name"));
            if (have && vname && strcmp(have, vname) == 0)
                json_array_remove(volumes, j--);
        }
        json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", vname ? vname : "",
                                                 "persistentVolumeClaim", "claimName", claim));
    }
    return pod;
}

static int create_pod(struct ck_sts_controller *c, const json_t *set, const json_t *template,
                      long ordinal, const char *revision, struct ck_err *reterr)
{
    char name[300];
    snprintf(name, sizeof(name), "%s-%ld", meta_str(set, "name"), ordinal);
    int r = ensure_claims(c, set, name, reterr);
    if (r < 0)
        return r;
    json_t *pod = new_pod(set, template, ordinal, revision);
    r = pod ? ck_ctl_create(&c->client, c->pods_res, meta_str(set, "namespace"), pod, NULL, reterr)
            : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(pod);
    if (r == 0)
        ck_event_recordf(c->recorder, set, CK_EVENT_NORMAL, "SuccessfulCreate",
                         "create Pod %s in StatefulSet %s successful", name, meta_str(set, "name"));
    else
        ck_event_recordf(c->recorder, set, CK_EVENT_WARNING, "FailedCreate",
                         "create Pod %s in StatefulSet %s failed error: %s", name,
                         meta_str(set, "name"), ck_err_message(reterr));
    return r;
}

static int delete_pod(struct ck_sts_controller *c, const json_t *set, const json_t *pod,
                      struct ck_err *reterr)
{
    const char *name = meta_str(pod, "name");
    int r = ck_ctl_delete(&c->client, c->pods_res, meta_str(pod, "namespace"), name, NULL, NULL,
                          reterr);
    if (r == CK_ENOENT) {
        ck_err_release(reterr);
        return 0;
    }
    if (r == 0)
        ck_event_recordf(c->recorder, set, CK_EVENT_NORMAL, "SuccessfulDelete",
                         "delete Pod %s in StatefulSet %s successful", name, meta_str(set, "name"));
    return r;
}

/* ---- sync ------------------------------------------------------------------------- */

/*
 * isRunningAndAvailable: Running and Ready, and Ready for minReadySeconds at now; a pod
 * that will be lowers *requeue (seconds) to when it is.
 */
static bool available(const json_t *pod, long min_ready, int64_t now, int64_t *requeue)
{
    const char *since = NULL;
    if (!running_and_ready(pod) || !ck_pod_is_ready(pod, &since))
        return false;
    if (min_ready <= 0)
        return true;
    int64_t t = 0;
    if (!since || ck__time_parse(since, &t, NULL) != 0 || t <= 0)
        return false;
    if (t + min_ready <= now)
        return true;
    int64_t left = t + min_ready - now;
    if (*requeue == 0 || left < *requeue)
        *requeue = left;
    return false;
}

/* isHealthy: made, Running and Ready, not terminating (1.32 paces updates on this, not on
 * minReadySeconds). */
static bool healthy(const json_t *pod)
{
    return pod && running_and_ready(pod) && !terminating(pod);
}

static long min_ready_seconds(const json_t *set)
{
    return (long)json_integer_value(
        json_object_get(json_object_get(set, "spec"), "minReadySeconds"));
}

static json_t *compute_status(const json_t *set, const struct ck_obj_list *pods,
                              const char *current, const char *update, long long collisions,
                              int64_t now, int64_t *requeue)
{
    long min_ready = min_ready_seconds(set);
    json_int_t replicas = 0, ready = 0, avail = 0, cur = 0, upd = 0;
    for (size_t i = 0; i < pods->n; i++) {
        const json_t *pod = pods->items[i];
        replicas++;
        if (running_and_ready(pod)) {
            ready++;
            if (available(pod, min_ready, now, requeue))
                avail++;
        }
        const char *rev = pod_revision(pod);
        if (!terminating(pod) && rev && strcmp(rev, current) == 0)
            cur++;
        if (!terminating(pod) && rev && strcmp(rev, update) == 0)
            upd++;
    }
    const json_t *spec = json_object_get(set, "spec");
    const char *type =
        json_string_value(json_object_get(json_object_get(spec, "updateStrategy"), "type"));
    const json_t *want = json_object_get(spec, "replicas");
    json_int_t desired = json_is_integer(want) ? json_integer_value(want) : 1;
    /* completeRollingUpdate: every pod updated and ready makes the update current */
    if ((!type || strcmp(type, "RollingUpdate") == 0) && upd == desired && ready == desired &&
        replicas == desired) {
        current = update;
        cur = upd;
    }
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I}", "observedGeneration",
                     json_integer_value(json_object_get(meta(set), "generation")), "replicas",
                     replicas, "readyReplicas", ready, "availableReplicas", avail,
                     "currentReplicas", cur, "updatedReplicas", upd, "currentRevision", current,
                     "updateRevision", update, "collisionCount", (json_int_t)collisions);
}

/*
 * UpdatePodClaimForRetentionPolicy for a pod being scaled away: under whenScaled Delete
 * each of its claims gets an owner reference to the pod, so that the garbage collector
 * deletes the claim once the pod is gone.
 */
static int claims_follow_pod(struct ck_sts_controller *c, const json_t *set, const json_t *pod,
                             struct ck_err *reterr)
{
    const json_t *spec = json_object_get(set, "spec");
    const char *when_scaled = json_string_value(json_object_get(
        json_object_get(spec, "persistentVolumeClaimRetentionPolicy"), "whenScaled"));
    if (!when_scaled || strcmp(when_scaled, "Delete") != 0)
        return 0;
    const char *ns = meta_str(set, "namespace"), *pod_uid = meta_str(pod, "uid");
    size_t i;
    const json_t *tmpl;
    json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), i, tmpl)
    {
        char name[512];
        snprintf(name, sizeof(name), "%s-%s", meta_str(tmpl, "name"), meta_str(pod, "name"));
        json_t *claim = NULL;
        struct ck_err err = {0};
        int r = ck_ctl_get(&c->client, c->claims_res, ns, name, &claim, &err);
        ck_err_release(&err);
        if (r == CK_ENOENT)
            continue;
        if (r < 0)
            return ck_err_set(reterr, r, "get claim %s: failed", name);
        json_t *m = json_object_get(claim, "metadata");
        json_t *refs = json_object_get(m, "ownerReferences");
        bool has = false;
        size_t j;
        const json_t *ref;
        json_array_foreach(refs, j, ref)
        {
            const char *uid = json_string_value(json_object_get(ref, "uid"));
            has = has || (uid && pod_uid && strcmp(uid, pod_uid) == 0);
        }
        if (!has && pod_uid) {
            if (!json_is_array(refs)) {
                refs = json_array();
                json_object_set_new(m, "ownerReferences", refs);
            }
            json_array_append_new(refs,
                                  json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind",
                                            "Pod", "name", meta_str(pod, "name"), "uid", pod_uid));
            r = ck_ctl_update(&c->client, c->claims_res, ns, claim, NULL, reterr);
        }
        json_decref(claim);
        if (r == CK_ENOENT) { /* gone meanwhile */
            ck_err_release(reterr);
            r = 0;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* getStatefulSetMaxUnavailable: a number, or a percentage of replicas rounded down; >= 1. */
static long max_unavailable(const json_t *value, long replicas)
{
    long n = 1;
    if (json_is_integer(value)) {
        n = (long)json_integer_value(value);
    } else if (json_is_string(value)) {
        const char *s = json_string_value(value);
        char *end = NULL;
        long pct = strtol(s, &end, 10);
        if (end != s && strcmp(end, "%") == 0)
            n = pct * replicas / 100;
    }
    return n < 1 ? 1 : n;
}

/* The knobs and findings of one sync. */
struct sync_state {
    long min_ready;
    int64_t now;
    int64_t requeue; /* seconds until a pod becomes available; 0: none */
};

/* Creates, replaces, deletes and updates pods (the body of updateStatefulSet). */
static int manage_pods(struct ck_sts_controller *c, const json_t *set,
                       const struct ck_obj_list *pods, const json_t *current_template,
                       const char *current, const char *update, struct sync_state *st,
                       struct ck_err *reterr)
{
    const json_t *spec = json_object_get(set, "spec");
    const char *set_name = meta_str(set, "name");
    const json_t *want = json_object_get(spec, "replicas");
    long replicas = json_is_integer(want) ? (long)json_integer_value(want) : 1;
    long start =
        (long)json_integer_value(json_object_get(json_object_get(spec, "ordinals"), "start"));
    const char *policy = json_string_value(json_object_get(spec, "podManagementPolicy"));
    bool monotonic = !policy || strcmp(policy, "Parallel") != 0;
    const json_t *strategy = json_object_get(spec, "updateStrategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    bool rolling = !type || strcmp(type, "RollingUpdate") == 0;
    const json_t *rolling_update = json_object_get(strategy, "rollingUpdate");
    long partition = (long)json_integer_value(json_object_get(rolling_update, "partition"));
    const json_t *max_unavail_v = json_object_get(rolling_update, "maxUnavailable");
    bool gate = c->feature_enabled ? c->feature_enabled(c->feature_ctx, "MaxUnavailableStatefulSet")
                                   : max_unavail_v != NULL;
    const json_t *update_template = json_object_get(spec, "template");
    long min_ready = st->min_ready;
    int64_t now = st->now;

    const json_t **by_index = ck__calloc(replicas > 0 ? (size_t)replicas : 1, sizeof(*by_index));
    const json_t **condemned = ck__calloc(pods->n ? pods->n : 1, sizeof(*condemned));
    size_t n_condemned = 0;
    if (!by_index || !condemned) {
        free(by_index);
        free(condemned);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < pods->n; i++) {
        long ord = ordinal_of(set_name, meta_str(pods->items[i], "name"));
        if (ord >= start && ord < start + replicas)
            by_index[ord - start] = pods->items[i];
        else if (ord >= 0)
            condemned[n_condemned++] = pods->items[i];
    }
    /* condemned pods: the highest ordinal first */
    for (size_t a = 1; a < n_condemned; a++)
        for (size_t b = a; b > 0 && ordinal_of(set_name, meta_str(condemned[b - 1], "name")) <
                                        ordinal_of(set_name, meta_str(condemned[b], "name"));
             b--) {
            const json_t *t = condemned[b];
            condemned[b] = condemned[b - 1];
            condemned[b - 1] = t;
        }
    /* the first unhealthy pod: of the replicas in order, else the lowest condemned */
    bool replica_unhealthy = false;
    const json_t *first_unhealthy = NULL;
    for (long i = 0; i < replicas && !replica_unhealthy; i++)
        replica_unhealthy = !healthy(by_index[i]);
    for (size_t i = n_condemned; i > 0 && !replica_unhealthy && !first_unhealthy; i--)
        if (!healthy(condemned[i - 1]))
            first_unhealthy = condemned[i - 1];

    int r = 0;
    bool stop = false;
    /* processReplica, in order; monotonic stops at the first that is not available */
    for (long i = 0; i < replicas && !stop && r == 0; i++) {
        const json_t *pod = by_index[i];
        if (pod && pod_failed(pod)) {
            if (!terminating(pod))
                r = delete_pod(c, set, pod, reterr); /* made again on a later sync */
            stop = monotonic;
            continue;
        }
        if (!pod) {
            bool old = rolling && i < partition && current_template;
            r = create_pod(c, set, old ? current_template : update_template, start + i,
                           old ? current : update, reterr);
            stop = monotonic;
            continue;
        }
        if (monotonic && (terminating(pod) || !available(pod, min_ready, now, &st->requeue)))
            stop = true;
    }
    /* claims of the pods scaled away follow the retention policy first */
    for (size_t i = 0; i < n_condemned && !stop && r == 0; i++)
        r = claims_follow_pod(c, set, condemned[i], reterr);
    /* processCondemned: the highest ordinal first, one at a time when monotonic */
    for (size_t i = 0; i < n_condemned && !stop && r == 0; i++) {
        const json_t *pod = condemned[i];
        if (terminating(pod)) {
            stop = monotonic;
            continue;
        }
        if (monotonic && pod != first_unhealthy && !available(pod, min_ready, now, &st->requeue)) {
            stop = true; /* scale down waits for the others to be available */
            break;
        }
        r = delete_pod(c, set, pod, reterr);
        stop = monotonic;
    }
    if (r == 0 && !stop && rolling && !gate) {
        /* the highest stale pod at or above the partition, after the ones above it are
         * healthy */
        for (long i = replicas - 1; i >= partition && i >= 0; i--) {
            const json_t *pod = by_index[i];
            const char *rev = pod ? pod_revision(pod) : NULL;
            if (pod && (!rev || strcmp(rev, update) != 0) && !terminating(pod)) {
                r = delete_pod(c, set, pod, reterr);
                break;
            }
            if (!healthy(pod))
                break;
        }
    } else if (r == 0 && !stop && rolling) {
        /* updateStatefulSetAfterInvariantEstablished: up to maxUnavailable pods unhealthy */
        long max = max_unavailable(max_unavail_v, replicas), down = 0;
        for (long i = 0; i < replicas; i++)
            down += !healthy(by_index[i]);
        for (long i = replicas - 1, budget = max - down;
             i >= partition && i >= 0 && budget > 0 && r == 0; i--) {
            const json_t *pod = by_index[i];
            const char *rev = pod ? pod_revision(pod) : NULL;
            if (pod && (!rev || strcmp(rev, update) != 0) && !terminating(pod)) {
                r = delete_pod(c, set, pod, reterr);
                budget--;
            }
        }
    }
    free(by_index);
    free(condemned);
    return r;
}

static int sync_set(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_sts_controller *c = ctl->data;
    const json_t *set = NULL;
    char *ns = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->sets, ns, name, &set);
    free(name);
    if (r < 0) {
        free(ns);
        return 0;
    }
    struct ck_label_selector *sel = NULL;
    const json_t *spec_sel = json_object_get(json_object_get(set, "spec"), "selector");
    if (!spec_sel || ck_label_selector_from_object(spec_sel, &sel, NULL) < 0) {
        free(ns);
        ck_cached_unref(set);
        return 0; /* retrying cannot help until the object changes */
    }
    struct ck_obj_list all = {0}, claimed = {0};
    r = ck_lister_list(&c->pods, ns, NULL, &all, reterr);
    free(ns);
    if (r == 0) {
        struct ck_ref_owner owner = {
            .owner = set,
            .api_version = STS_API_VERSION,
            .kind = STS_KIND,
            .selector = sel,
            .client = &c->client,
            .owner_res = c->sets_res,
            .child_res = c->pods_res,
        };
        r = ck_claim_objects(&owner, all.items, all.n, &claimed, reterr);
    }
    ck_obj_list_release(&all);
    ck_label_selector_free(sel);
    char update[320];
    json_t *current_template = NULL;
    struct ck_obj_list revisions = {0};
    long long collisions = 0;
    struct sync_state st = {.min_ready = min_ready_seconds(set), .now = now_sec(c)};
    if (r == 0)
        r = ensure_revision(c, set, update, sizeof(update), &current_template, &revisions,
                            &collisions, reterr);
    const char *current =
        json_string_value(json_object_get(json_object_get(set, "status"), "currentRevision"));
    if (r == 0 && (!current || !current_template))
        current = update; /* a first sync, or a current revision gone: all is current */
    if (r == 0 && !terminating(set))
        r = manage_pods(c, set, &claimed, current_template, current, update, &st, reterr);
    if (r == 0) {
        json_t *status =
            compute_status(set, &claimed, current, update, collisions, st.now, &st.requeue);
        if (!status) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        } else if (!json_equal(status, json_object_get(set, "status"))) {
            json_t *copy = ck__json_copy(set);
            if (copy)
                json_object_set(copy, "status", status);
            r = copy ? ck_ctl_update_status(&c->client, c->sets_res, meta_str(set, "namespace"),
                                            copy, NULL, reterr)
                     : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(copy);
        }
        if (r == 0) /* maintain the revision history limit (truncateHistory) */
            r = truncate_history(c, set, &revisions, &claimed,
                                 json_string_value(json_object_get(status, "currentRevision")),
                                 update, reterr);
        json_decref(status);
    }
    /* a pod becoming available after minReadySeconds: look again then */
    if (r == 0 && st.requeue > 0)
        ck_wq_add_after(c->queue, key, st.requeue * CK_SEC);
    ck_obj_list_release(&revisions);
    json_decref(current_template);
    ck_obj_list_release(&claimed);
    ck_cached_unref(set);
    return r;
}

/* ---- lifecycle ------------------------------------------------------------------- */

static int init_common(struct ck_sts_controller *c, const struct ck_ctl_client *client,
                       bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->sets_res = ck_controller_resource("apps", "v1", "statefulsets");
    c->revisions_res = ck_controller_resource("apps", "v1", "controllerrevisions");
    c->claims_res = ck_controller_resource("", "v1", "persistentvolumeclaims");
    if (!c->pods_res || !c->sets_res || !c->revisions_res || !c->claims_res)
        return ck_err_set(reterr, CK_ENOENT, "statefulset: the API kinds it needs are unknown");
    int r = ck__ctl_recorder(&c->sink, &c->client, "statefulset-controller", NULL,
                             synchronous_events, &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "statefulset", sync_set, c, NULL, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_sts_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_sts_controller **ret_c, struct ck_err *reterr)
{
    struct ck_sts_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler set_h = {set_add, set_update, set_delete, c};
    struct ck_event_handler pod_h = {pod_add, pod_update, pod_delete, c};
    struct ck_event_handler rev_h = {revision_add, revision_update, revision_delete, c};
    int r = init_common(c, &rest, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->sets_res, &set_h, &c->infs[0], &c->sets, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->revisions_res, &rev_h, &c->infs[2], &c->revisions, reterr);
    if (r < 0) {
        ck_sts_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_sts_controller_new_with(const struct ck_sts_controller_deps *deps,
                               struct ck_sts_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->pods || !deps->statefulsets || !deps->revisions)
        return ck_err_set(reterr, CK_EINVAL, "statefulset: a client and three listers are needed");
    struct ck_sts_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->pods = *deps->pods;
    c->sets = *deps->statefulsets;
    c->revisions = *deps->revisions;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    c->feature_enabled = deps->feature_enabled;
    c->feature_ctx = deps->feature_ctx;
    int r = init_common(c, deps->client, true, reterr);
    if (r < 0) {
        ck_sts_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_sts_controller_sync(struct ck_sts_controller *c, const char *key, struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_sts_controller_run(struct ck_sts_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 3, workers, &c->runner, reterr);
}

struct ck_sts_controller *ck_sts_controller_free(struct ck_sts_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    free(c);
    return NULL;
}

int ck_sts_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                         struct ck_err *reterr)
{
    struct ck_sts_controller *c = NULL;
    int r = ck_sts_controller_new(ctx->client, ctx->factory, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

int ck_sts_manager_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_sts_controller_run(state, workers, reterr);
}

void ck_sts_manager_stop(void *state)
{
    ck_sts_controller_free(state);
}
