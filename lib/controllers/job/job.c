/*
 * job.c - the Job controller (kubernetes pkg/controller/job/job_controller.go,
 * indexed_job_utils.go, pod_failure_policy.go, backoff_utils.go).
 *
 * Handlers map events to Job keys: a Job added or changed; a pod through its controller
 * reference (creations and deletions observed for the expectations), or, for an orphan,
 * the Jobs whose selector matches. A pod that still carries the tracking finalizer but
 * whose Job is gone is queued as "orphan-pod:<ns>/<name>", whose sync removes the
 * finalizer so that the pod can go.
 *
 * sync(key) (syncJob) reads the Job and its namespace's pods from the caches, claims the
 * pods, then, in Kubernetes' order:
 *   1. the counts: status.succeeded/failed plus what uncountedTerminatedPods holds;
 *   2. the finished condition: an interim SuccessCriteriaMet or FailureTarget already in
 *      status, a FailJob rule of the pod failure policy, failed > backoffLimit or, under
 *      restartPolicy OnFailure, the container restarts of the running and pending pods
 *      reaching it (BackoffLimitExceeded), or the active deadline passed (DeadlineExceeded; else
 * the key comes back when it will have);
 *   3. a finishing Job deletes its active pods; otherwise manageJob: a suspended Job
 *      deletes its active pods, others create or delete to have
 *      min(parallelism, completions - succeeded) active (Indexed: the lowest indexes
 *      neither succeeded nor active), creation waiting out the back-off of failed pods;
 *      complete is succeeded >= completions (or any success without completions) with no
 *      pod active;
 *   4. trackJobStatusAndRemoveFinalizers: every finished pod still carrying the finalizer
 *      gets its uid into uncountedTerminatedPods (an Indexed Job records its index in
 *      completedIndexes instead of a succeeded uid) and status is written; then the
 *      finalizers go; then the uids whose finalizer is gone move into the counters, and the
 *      Complete or Failed condition is added once nothing is uncounted or terminating.
 * A status write uses the cached resourceVersion and is never retried on a conflict: a
 * stale cache cannot make a pod count twice, the key simply comes back.
 *
 * Back-off (backoff_utils.go) is kept per Job in memory: failures since the last success
 * and when the last one happened, from the pods counted in this process.
 *
 * Threading: the runner syncs one key at a time per key; the handlers run on the
 * informers' threads; the back-off records take c->lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/job.h"

#define JOB_API_VERSION "batch/v1"
#define JOB_KIND        "Job"
#define ORPHAN_PREFIX   "orphan-pod:"

struct backoff_record {
    char *key;
    int failures_after_success;
    int64_t last_failure; /* wall clock, ns */
    /*
     * What this process last wrote to the Job's status: its uid and the finished pods it
     * accounts for (counters plus uncounted uids). A cached status accounting for fewer is
     * older than our own write, and acting on it could create pods for completions that
     * are done: such a sync waits for the cache (the write's event brings the key back).
     */
    char uid[64];
    long accounted;
    struct backoff_record *next;
};

struct ck_job_controller {
    struct ck_ctl_client client;
    struct ck_lister pods, jobs;
    const struct ck_resource *pods_res, *jobs_res;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_informer *infs[2]; /* jobs, pods; NULL on given listers */
    struct ck_expectations *exp;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    int64_t (*now)(void *arg);
    void *now_arg;
    pthread_mutex_t lock; /* backoffs */
    struct backoff_record *backoffs;
};

/* ---- small helpers ------------------------------------------------------------------ */

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static const json_t *at(const json_t *obj, const char *a, const char *b)
{
    return json_object_get(json_object_get(obj, a), b);
}

static int64_t wall_now(const struct ck_job_controller *c)
{
    if (c->now)
        return c->now(c->now_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static void format_time(int64_t ns, char *buf, size_t size)
{
    ck__time_format(ns / CK_SEC, -1, buf, size);
}

static int64_t parse_time(const char *s)
{
    int64_t t = 0;
    return s && ck__time_parse(s, &t, NULL) == 0 ? t * CK_SEC : 0;
}

static bool has_finalizer(const json_t *pod)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(meta(pod), "finalizers"), i, f)
    {
        if (json_string_value(f) && strcmp(json_string_value(f), CK_JOB_TRACKING_FINALIZER) == 0)
            return true;
    }
    return false;
}

static const char *phase(const json_t *pod)
{
    const char *p = json_string_value(at(pod, "status", "phase"));
    return p ? p : "";
}

static bool being_deleted(const json_t *obj)
{
    return json_object_get(meta(obj), "deletionTimestamp") != NULL;
}

static bool only_replace_failed(const json_t *job)
{
    const char *p = json_string_value(at(job, "spec", "podReplacementPolicy"));
    return (p && strcmp(p, "Failed") == 0) || at(job, "spec", "podFailurePolicy");
}

/* isPodFailed: Failed, or (unless only failed pods are replaced) deleted before success. */
static bool pod_failed(const json_t *pod, const json_t *job)
{
    if (strcmp(phase(pod), "Failed") == 0)
        return true;
    if (only_replace_failed(job))
        return false;
    return being_deleted(pod) && strcmp(phase(pod), "Succeeded") != 0;
}

static bool pod_finished(const json_t *pod)
{
    return strcmp(phase(pod), "Succeeded") == 0 || strcmp(phase(pod), "Failed") == 0;
}

/* The pod's completion index, or -1 (getCompletionIndex). */
static long completion_index(const json_t *pod)
{
    const char *s = json_string_value(
        json_object_get(at(pod, "metadata", "annotations"), CK_JOB_COMPLETION_INDEX));
    if (!s || !*s)
        return -1;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || (s[0] == '0' && s[1]))
        return -1;
    return v;
}

static const json_t *find_condition(const json_t *job, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(at(job, "status", "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static bool condition_true(const json_t *job, const char *type)
{
    const json_t *c = find_condition(job, type);
    const char *s = c ? json_string_value(json_object_get(c, "status")) : NULL;
    return s && strcmp(s, "True") == 0;
}

static bool job_finished(const json_t *job)
{
    return condition_true(job, "Complete") || condition_true(job, "Failed");
}

static bool job_suspended(const json_t *job)
{
    return json_is_true(at(job, "spec", "suspend"));
}

static bool job_indexed(const json_t *job)
{
    const char *m = json_string_value(at(job, "spec", "completionMode"));
    return m && strcmp(m, "Indexed") == 0;
}

static bool in_array(const json_t *array, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(array, i, v)
    {
        if (json_string_value(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* ---- completed indexes ("1,3-5") ---------------------------------------------------- */

/* Marks in done[0..n) the indexes text names (parseIndexesFromString); ignores bad parts. */
static void parse_indexes(const char *text, bool *done, long n)
{
    for (const char *p = text ? text : ""; *p;) {
        char *end = NULL;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long i = a < 0 ? 0 : a; i <= b && i < n; i++)
            done[i] = true;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            break;
    }
}

/* The text of the marked indexes, intervals joined by commas; NULL on no memory. */
static char *format_indexes(const bool *done, long n)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (long i = 0; i < n;) {
        if (!done[i]) {
            i++;
            continue;
        }
        long j = i;
        while (j + 1 < n && done[j + 1])
            j++;
        char part[48];
        int w = j == i ? snprintf(part, sizeof(part), "%s%ld", len ? "," : "", i)
                       : snprintf(part, sizeof(part), "%s%ld-%ld", len ? "," : "", i, j);
        if (len + (size_t)w + 1 > cap) {
            cap = (len + (size_t)w + 1) * 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        memcpy(out + len, part, (size_t)w + 1);
        len += (size_t)w;
        i = j + 1;
    }
    return out;
}

/* ---- back-off ---------------------------------------------------------------------- */

static struct backoff_record *backoff_find(struct ck_job_controller *c, const char *key,
                                           bool create)
{
    for (struct backoff_record *r = c->backoffs; r; r = r->next)
        if (strcmp(r->key, key) == 0)
            return r;
    if (!create)
        return NULL;
    struct backoff_record *r = ck__calloc(1, sizeof(*r));
    if (r && !(r->key = strdup(key))) {
        free(r);
        r = NULL;
    }
    if (r) {
        r->next = c->backoffs;
        c->backoffs = r;
    }
    return r;
}

static void backoff_forget(struct ck_job_controller *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    for (struct backoff_record **p = &c->backoffs; *p; p = &(*p)->next) {
        if (strcmp((*p)->key, key) == 0) {
            struct backoff_record *r = *p;
            *p = r->next;
            free(r->key);
            free(r);
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/*
 * pastBackoffLimitOnFailure: under restartPolicy OnFailure the kubelet restarts failed
 * containers in place, so their restarts count against backoffLimit: the restartCount of
 * every (init) container of the Running and Pending pods reaches the limit (any restart
 * when the limit is 0).
 */
static bool past_backoff_limit_on_failure(const json_t *job, const struct ck_obj_list *pods)
{
    const char *policy =
        json_string_value(at(at(job, "spec", "template"), "spec", "restartPolicy"));
    if (!policy || strcmp(policy, "OnFailure") != 0)
        return false;
    long long restarts = 0;
    for (size_t i = 0; i < pods->n; i++) {
        const json_t *pod = pods->items[i];
        if (strcmp(phase(pod), "Running") != 0 && strcmp(phase(pod), "Pending") != 0)
            continue;
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
        for (size_t l = 0; l < 2; l++) {
            size_t j;
            const json_t *cs;
            json_array_foreach(at(pod, "status", lists[l]), j, cs)
            {
                restarts += json_integer_value(json_object_get(cs, "restartCount"));
            }
        }
    }
    long long limit = json_integer_value(at(job, "spec", "backoffLimit"));
    return limit == 0 ? restarts > 0 : restarts >= limit;
}

/* The time a pod finished (getFinishedTime): its containers' last finishedAt, else now. */
static int64_t finished_time(const json_t *pod, int64_t now)
{
    int64_t latest = 0;
    size_t i;
    const json_t *cs;
    json_array_foreach(at(pod, "status", "containerStatuses"), i, cs)
    {
        int64_t t = parse_time(
            json_string_value(json_object_get(at(cs, "state", "terminated"), "finishedAt")));
        if (t > latest)
            latest = t;
    }
    if (!latest)
        latest = parse_time(json_string_value(at(pod, "metadata", "deletionTimestamp")));
    return latest ? latest : now;
}

/* newBackoffRecord + updateBackoffRecord: successes reset, failures count on. */
static void backoff_record(struct ck_job_controller *c, const char *key, int new_succeeded,
                           int new_failed, int64_t last_failure)
{
    if (!new_succeeded && !new_failed)
        return;
    pthread_mutex_lock(&c->lock);
    struct backoff_record *r = backoff_find(c, key, true);
    if (r) {
        if (new_succeeded)
            r->failures_after_success = 0;
        r->failures_after_success += new_failed;
        if (new_failed && last_failure > r->last_failure)
            r->last_failure = last_failure;
    }
    pthread_mutex_unlock(&c->lock);
}

/*
 * getRemainingTime: base * 2^(failures-1), at most max, less the time since the last
 * failure; the record as it will be once the pods this sync counts are added
 * (newBackoffRecord).
 */
static int64_t backoff_remaining(struct ck_job_controller *c, const char *key, int new_succeeded,
                                 int new_failed, int64_t new_last_failure, int64_t now)
{
    pthread_mutex_lock(&c->lock);
    struct backoff_record *r = backoff_find(c, key, false);
    int failures = r && !new_succeeded ? r->failures_after_success : 0;
    int64_t last = r ? r->last_failure : 0;
    pthread_mutex_unlock(&c->lock);
    failures += new_failed;
    if (new_failed && new_last_failure > last)
        last = new_last_failure;
    if (failures == 0)
        return 0;
    int64_t backoff = CK_JOB_BACKOFF_BASE;
    for (int i = 1; i < failures && backoff < CK_JOB_BACKOFF_MAX; i++)
        backoff *= 2;
    if (backoff > CK_JOB_BACKOFF_MAX)
        backoff = CK_JOB_BACKOFF_MAX;
    int64_t remaining = backoff - (now - last);
    return remaining > 0 ? remaining : 0;
}

/* ---- the pod failure policy --------------------------------------------------------- */

enum pfp_action { PFP_NONE, PFP_FAIL_JOB, PFP_IGNORE, PFP_COUNT, PFP_FAIL_INDEX };

static bool exit_code_matches(const json_t *req, const json_t *pod, char *msg, size_t size,
                              size_t rule, const json_t *job)
{
    const char *container = json_string_value(json_object_get(req, "containerName"));
    const char *op = json_string_value(json_object_get(req, "operator"));
    bool in = op && strcmp(op, "In") == 0;
    static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *cs;
        json_array_foreach(at(pod, "status", lists[l]), i, cs)
        {
            const char *name = json_string_value(json_object_get(cs, "name"));
            const json_t *term = at(cs, "state", "terminated");
            if (!term || (container && (!name || strcmp(container, name) != 0)))
                continue;
            json_int_t code = json_integer_value(json_object_get(term, "exitCode"));
            if (code == 0)
                continue;
            bool found = false;
            size_t k;
            const json_t *v;
            json_array_foreach(json_object_get(req, "values"), k, v)
            {
                found = found || json_integer_value(v) == code;
            }
            if (found == in) {
                snprintf(msg, size,
                         "Container %s for pod %s/%s failed with exit code %lld matching %s rule "
                         "at index %zu",
                         name ? name : "", ck__meta_str(job, "namespace") ?: "",
                         ck__meta_str(pod, "name") ?: "", (long long)code, "FailJob", rule);
                return true;
            }
        }
    }
    return false;
}

static bool pod_condition_matches(const json_t *patterns, const json_t *pod, const char **ret_type)
{
    size_t i, j;
    const json_t *p, *cond;
    json_array_foreach(patterns, i, p)
    {
        const char *type = json_string_value(json_object_get(p, "type"));
        const char *want = json_string_value(json_object_get(p, "status"));
        json_array_foreach(at(pod, "status", "conditions"), j, cond)
        {
            const char *t = json_string_value(json_object_get(cond, "type"));
            const char *s = json_string_value(json_object_get(cond, "status"));
            if (type && t && s && strcmp(type, t) == 0 && strcmp(want ? want : "True", s) == 0) {
                *ret_type = type;
                return true;
            }
        }
    }
    return false;
}

/*
 * matchPodFailurePolicy: the action of the first rule matching the failed pod, and for
 * FailJob the message the Job's condition gets (in msg).
 */
static enum pfp_action match_failure_policy(const json_t *job, const json_t *pod, char *msg,
                                            size_t size)
{
    const json_t *rules = json_object_get(at(job, "spec", "podFailurePolicy"), "rules");
    size_t i;
    const json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const char *action = json_string_value(json_object_get(rule, "action"));
        if (!action)
            continue;
        const json_t *codes = json_object_get(rule, "onExitCodes");
        const json_t *conds = json_object_get(rule, "onPodConditions");
        const char *cond_type = NULL;
        bool matched = false;
        if (codes) {
            matched = exit_code_matches(codes, pod, msg, size, i, job);
            if (matched && strcmp(action, "FailJob") != 0)
                msg[0] = '\0';
        } else if (conds && pod_condition_matches(conds, pod, &cond_type)) {
            matched = true;
            snprintf(msg, size, "Pod %s/%s has condition %s matching FailJob rule at index %zu",
                     ck__meta_str(pod, "namespace") ?: "", ck__meta_str(pod, "name") ?: "",
                     cond_type, i);
        }
        if (!matched)
            continue;
        if (strcmp(action, "FailJob") == 0)
            return PFP_FAIL_JOB;
        if (strcmp(action, "Ignore") == 0)
            return PFP_IGNORE;
        if (strcmp(action, "FailIndex") == 0)
            return PFP_FAIL_INDEX;
        return PFP_COUNT;
    }
    return PFP_NONE;
}

/* ---- handlers ---------------------------------------------------------------------- */

static void job_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_job_controller *)arg)->queue, obj);
}

static void job_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_job_controller *)arg)->queue, obj);
}

static void job_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    struct ck_job_controller *c = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) < 0)
        return;
    ck_expectations_delete(c->exp, key);
    ck_wq_add(c->queue, key);
    free(key);
}

static void enqueue_orphan_pod(struct ck_job_controller *c, const json_t *pod)
{
    char *key = NULL;
    if (ck_meta_namespace_key(pod, &key, NULL) < 0)
        return;
    size_t n = strlen(ORPHAN_PREFIX) + strlen(key) + 1;
    char *okey = malloc(n);
    if (okey) {
        snprintf(okey, n, "%s%s", ORPHAN_PREFIX, key);
        ck_wq_add(c->queue, okey);
    }
    free(okey);
    free(key);
}

/* The pod's Job from the cache (a reference) or NULL. */
static const json_t *owner_job(struct ck_job_controller *c, const json_t *pod)
{
    const json_t *ref = ck_controller_ref(pod);
    return ref ? ck__ctl_resolve_ref(&c->jobs, JOB_KIND, ck__meta_str(pod, "namespace"), ref)
               : NULL;
}

static void pod_event(struct ck_job_controller *c, const json_t *pod, bool created, bool deleted)
{
    const json_t *job = owner_job(c, pod);
    if (!job) {
        if (has_finalizer(pod))
            enqueue_orphan_pod(c, pod);
        else if (!ck_controller_ref(pod) && !deleted)
            ck__ctl_enqueue_selecting(c->queue, &c->jobs, pod);
        return;
    }
    char *key = NULL;
    if (ck_meta_namespace_key(job, &key, NULL) == 0) {
        if (created)
            ck_expectations_creation_observed(c->exp, key);
        if (deleted) {
            char *pod_key = NULL;
            if (ck_meta_namespace_key(pod, &pod_key, NULL) == 0)
                ck_expectations_deletion_observed_of(c->exp, key, pod_key);
            free(pod_key);
        }
        ck_wq_add(c->queue, key);
    }
    free(key);
    ck_cached_unref(job);
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)initial;
    pod_event(arg, pod, !being_deleted(pod), being_deleted(pod));
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    struct ck_job_controller *c = arg;
    bool newly_deleted = being_deleted(pod) && (old == pod || !being_deleted(old));
    if (old != pod && !ck__ctl_same_ref(ck_controller_ref(old), ck_controller_ref(pod)))
        pod_event(c, old, false, false);
    pod_event(c, pod, false, newly_deleted);
}

static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    pod_event(arg, pod, false, true);
}

/* ---- writes ------------------------------------------------------------------------ */

/* Removes the tracking finalizer from pod (a strategic merge patch); 0 also when gone. */
static int remove_finalizer(struct ck_job_controller *c, const json_t *pod, struct ck_err *reterr)
{
    json_t *patch = json_pack("{s:{s:[s]}}", "metadata", "$deleteFromPrimitiveList/finalizers",
                              CK_JOB_TRACKING_FINALIZER);
    if (!patch)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck_ctl_patch(&c->client, c->pods_res, ck__meta_str(pod, "namespace"),
                         ck__meta_str(pod, "name"), NULL, CK_PATCH_STRATEGIC, patch, NULL, reterr);
    json_decref(patch);
    if (r == CK_ENOENT) {
        ck_err_release(reterr);
        return 0;
    }
    return r;
}

static void tidy_uncounted(json_t *status);

/* The finished pods a Job's status accounts for: its counters and its uncounted uids. */
static long accounted(const json_t *job)
{
    const json_t *status = json_object_get(job, "status");
    const json_t *u = json_object_get(status, "uncountedTerminatedPods");
    return (long)json_integer_value(json_object_get(status, "succeeded")) +
           (long)json_integer_value(json_object_get(status, "failed")) +
           (long)json_array_size(json_object_get(u, "succeeded")) +
           (long)json_array_size(json_object_get(u, "failed"));
}

static void remember_written(struct ck_job_controller *c, const char *key, const json_t *job)
{
    const char *uid = ck__meta_str(job, "uid");
    pthread_mutex_lock(&c->lock);
    struct backoff_record *r = backoff_find(c, key, true);
    if (r && uid) {
        snprintf(r->uid, sizeof(r->uid), "%s", uid);
        r->accounted = accounted(job);
    }
    pthread_mutex_unlock(&c->lock);
}

/* The cached job accounts for fewer finished pods than this process wrote last. */
static bool cache_behind(struct ck_job_controller *c, const char *key, const json_t *job)
{
    const char *uid = ck__meta_str(job, "uid");
    pthread_mutex_lock(&c->lock);
    struct backoff_record *r = backoff_find(c, key, false);
    bool behind = r && uid && strcmp(r->uid, uid) == 0 && accounted(job) < r->accounted;
    pthread_mutex_unlock(&c->lock);
    return behind;
}

static int write_status(struct ck_job_controller *c, const char *key, json_t *job,
                        struct ck_err *reterr)
{
    json_t *written = NULL;
    tidy_uncounted(json_object_get(job, "status"));
    int r = ck_ctl_update_status(&c->client, c->jobs_res, ck__meta_str(job, "namespace"), job,
                                 &written, reterr);
    if (r == 0)
        remember_written(c, key, job);
    /* carry the new resourceVersion for a second write in the same sync */
    const char *rv = written ? ck__meta_str(written, "resourceVersion") : NULL;
    if (r == 0 && rv)
        json_object_set_new(json_object_get(job, "metadata"), "resourceVersion", json_string(rv));
    json_decref(written);
    return r;
}

struct create_ctx {
    struct ck_job_controller *c;
    const json_t *job;
    json_t **pods; /* one per call, made beforehand */
    int next;      /* the next pod to create */
    pthread_mutex_t mu;
};

static int create_one(void *arg, struct ck_err *reterr)
{
    struct create_ctx *x = arg;
    pthread_mutex_lock(&x->mu);
    json_t *pod = x->pods[x->next++];
    pthread_mutex_unlock(&x->mu);
    json_t *made = NULL;
    int r = ck_ctl_create(&x->c->client, x->c->pods_res, ck__meta_str(x->job, "namespace"), pod,
                          &made, reterr);
    if (r < 0)
        ck_event_recordf(x->c->recorder, x->job, CK_EVENT_WARNING, "FailedCreate",
                         "Error creating: %s", reterr ? ck_err_message(reterr) : "");
    else
        ck_event_recordf(x->c->recorder, x->job, CK_EVENT_NORMAL, "SuccessfulCreate",
                         "Created pod: %s", ck__meta_str(made, "name") ?: "");
    json_decref(made);
    return r;
}

/* The pod for index (-1: NonIndexed) of job, with the tracking finalizer. */
static json_t *job_pod(const json_t *job, long index)
{
    json_t *ref = ck_controller_ref_new(job, JOB_API_VERSION, JOB_KIND);
    json_t *pod = ref ? ck_pod_from_template(at(job, "spec", "template"), job, ref) : NULL;
    json_decref(ref);
    if (!pod)
        return NULL;
    json_t *m = json_object_get(pod, "metadata");
    json_t *finalizers = json_object_get(m, "finalizers");
    if (!json_is_array(finalizers)) {
        finalizers = json_array();
        json_object_set_new(m, "finalizers", finalizers);
    }
    int failed = json_array_append_new(finalizers, json_string(CK_JOB_TRACKING_FINALIZER));
    if (index >= 0) {
        char ix[24], name[320];
        snprintf(ix, sizeof(ix), "%ld", index);
        const char *job_name = ck__meta_str(job, "name") ?: "";
        snprintf(name, sizeof(name), "%s-%ld-", job_name, index);
        failed |= json_object_set_new(m, "generateName", json_string(name));
        json_t *ann = json_object_get(m, "annotations");
        if (!json_is_object(ann)) {
            ann = json_object();
            failed |= json_object_set_new(m, "annotations", ann);
        }
        failed |= json_object_set_new(ann, CK_JOB_COMPLETION_INDEX, json_string(ix));
        json_t *labels = json_object_get(m, "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            failed |= json_object_set_new(m, "labels", labels);
        }
        failed |= json_object_set_new(labels, CK_JOB_COMPLETION_INDEX, json_string(ix));
        json_t *spec = json_object_get(pod, "spec");
        if (!json_object_get(spec, "hostname")) {
            snprintf(name, sizeof(name), "%s-%ld", job_name, index);
            failed |= json_object_set_new(spec, "hostname", json_string(name));
        }
        /* addCompletionIndexEnvVariables */
        static const char *const lists[] = {"initContainers", "containers"};
        for (size_t l = 0; l < 2; l++) {
            size_t i;
            json_t *ctr;
            json_array_foreach(json_object_get(spec, lists[l]), i, ctr)
            {
                json_t *env = json_object_get(ctr, "env");
                if (!json_is_array(env)) {
                    env = json_array();
                    failed |= json_object_set_new(ctr, "env", env);
                }
                bool present = false;
                size_t k;
                json_t *e;
                json_array_foreach(env, k, e)
                {
                    const char *n = json_string_value(json_object_get(e, "name"));
                    present = present || (n && strcmp(n, "JOB_COMPLETION_INDEX") == 0);
                }
                if (!present)
                    failed |= json_array_append_new(
                        env, json_pack("{s:s, s:{s:{s:s}}}", "name", "JOB_COMPLETION_INDEX",
                                       "valueFrom", "fieldRef", "fieldPath",
                                       "metadata.annotations['" CK_JOB_COMPLETION_INDEX "']"));
            }
        }
    }
    if (failed) {
        json_decref(pod);
        return NULL;
    }
    return pod;
}

/* ---- manageJob --------------------------------------------------------------------- */

struct job_ctx {
    const char *key;
    const json_t *job; /* from the cache */
    json_t *next;      /* the status being built: a copy of job */
    const json_t **pods;
    size_t n_pods;
    const json_t **active;
    size_t n_active;
    long terminating;
    long ready;
    long succeeded, failed;        /* status counters plus uncounted */
    bool *done;                    /* Indexed: succeeded indexes, [completions] */
    long completions;              /* -1: none */
    int new_succeeded, new_failed; /* finished pods this sync counts */
    int64_t new_last_failure;
    const char *fin_type, *fin_reason;
    char fin_message[512];
};

/* Deletes pods (podControl.DeletePod); returns how many went, the first error in *reterr. */
static int delete_pods(struct ck_job_controller *c, struct job_ctx *x, const json_t **pods,
                       size_t n, bool expect, int *ret_ready, struct ck_err *reterr)
{
    int deleted = 0, first = 0;
    char **keys = ck__calloc(n ? n : 1, sizeof(*keys));
    if (!keys)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        ck_meta_namespace_key(pods[i], &keys[i], NULL);
    if (expect)
        ck_expectations_expect_deletions_of(c->exp, x->key, (const char **)keys, n);
    *ret_ready = 0;
    for (size_t i = 0; i < n; i++) {
        struct ck_err err = {0};
        const char *name = ck__meta_str(pods[i], "name");
        int e = ck_ctl_delete(&c->client, c->pods_res, ck__meta_str(pods[i], "namespace"), name,
                              NULL, NULL, &err);
        if (e < 0 && expect)
            ck_expectations_deletion_observed_of(c->exp, x->key, keys[i] ? keys[i] : "");
        if (e == 0 || e == CK_ENOENT) {
            deleted++;
            if (ck_pod_is_ready(pods[i], NULL))
                (*ret_ready)++;
        }
        if (e == 0)
            ck_event_recordf(c->recorder, x->job, CK_EVENT_NORMAL, "SuccessfulDelete",
                             "Deleted pod: %s", name ? name : "");
        else if (e != CK_ENOENT)
            ck_event_recordf(c->recorder, x->job, CK_EVENT_WARNING, "FailedDelete",
                             "Error deleting: %s", ck_err_message(&err));
        if (e < 0 && e != CK_ENOENT && !first) {
            first = e;
            *reterr = err;
        } else {
            ck_err_release(&err);
        }
        free(keys[i]);
    }
    free(keys);
    return first < 0 ? first : deleted;
}

/* Active pods to delete first: an Indexed Job's out of range and duplicate indexes, then ranked. */
static int pods_for_removal(struct job_ctx *x, size_t at_least, const json_t ***ret, size_t *ret_n)
{
    const json_t **order = ck__calloc(x->n_active ? x->n_active : 1, sizeof(*order));
    if (!order)
        return CK_ENOMEM;
    size_t n = 0;
    if (job_indexed(x->job)) {
        bool *seen = ck__calloc((size_t)(x->completions > 0 ? x->completions : 1), sizeof(*seen));
        if (!seen) {
            free(order);
            return CK_ENOMEM;
        }
        for (size_t i = 0; i < x->n_active; i++) {
            long ix = completion_index(x->active[i]);
            if (ix < 0 || ix >= x->completions || x->done[ix] || seen[ix])
                order[n++] = x->active[i];
            else
                seen[ix] = true;
        }
        free(seen);
    }
    size_t forced = n;
    if (n < at_least) {
        const json_t **rest = ck__calloc(x->n_active ? x->n_active : 1, sizeof(*rest));
        size_t m = 0;
        if (!rest) {
            free(order);
            return CK_ENOMEM;
        }
        for (size_t i = 0; i < x->n_active; i++) {
            bool taken = false;
            for (size_t k = 0; k < forced; k++)
                taken = taken || order[k] == x->active[i];
            if (!taken)
                rest[m++] = x->active[i];
        }
        if (ck_pods_rank_for_deletion(rest, m, NULL, 0) < 0) {
            free(rest);
            free(order);
            return CK_ENOMEM;
        }
        for (size_t i = 0; i < m && n < at_least; i++)
            order[n++] = rest[i];
        free(rest);
    }
    *ret = order;
    *ret_n = n;
    return 0;
}

/*
 * manageJob: returns the number of active pods after it (or a negative error, its words in
 * reterr), and may queue the key again after the back-off.
 */
static long manage_job(struct ck_job_controller *c, struct job_ctx *x, struct ck_err *reterr)
{
    long active = (long)x->n_active;
    long parallelism = (long)json_integer_value(at(x->job, "spec", "parallelism"));
    const json_t **del = NULL;
    size_t n_del = 0;
    int ready_deleted = 0;
    if (job_suspended(x->job)) {
        if (pods_for_removal(x, x->n_active, &del, &n_del) < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        int d = delete_pods(c, x, del, n_del, true, &ready_deleted, reterr);
        free(del);
        if (d < 0)
            return d;
        x->terminating += d;
        x->ready -= ready_deleted;
        return active - d;
    }
    long want;
    if (x->completions < 0)
        want = x->succeeded > 0 ? active : parallelism;
    else {
        want = x->completions - x->succeeded;
        if (want > parallelism)
            want = parallelism;
        if (want < 0)
            want = 0;
    }
    long rm_at_least = active - want > 0 ? active - want : 0;
    if (pods_for_removal(x, (size_t)rm_at_least, &del, &n_del) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (n_del > CK_JOB_MAX_CREATE_DELETE_PER_SYNC)
        n_del = CK_JOB_MAX_CREATE_DELETE_PER_SYNC;
    if (n_del > 0) {
        CK_LOGV(4, "job %s: too many pods running, deleting %zu", x->key, n_del);
        int d = delete_pods(c, x, del, n_del, true, &ready_deleted, reterr);
        free(del);
        if (d < 0)
            return d;
        x->terminating += d;
        x->ready -= ready_deleted;
        return active - d;
    }
    free(del);
    long diff = want - active;
    if (diff <= 0)
        return active;
    int64_t remaining = backoff_remaining(c, x->key, x->new_succeeded, x->new_failed,
                                          x->new_last_failure, wall_now(c));
    if (remaining > 0) {
        CK_LOGV(4, "job %s: back-off of %lld ms before creating pods", x->key,
                (long long)(remaining / 1000000));
        ck_wq_add_after(c->queue, x->key, remaining);
        return active;
    }
    if (diff > CK_JOB_MAX_CREATE_DELETE_PER_SYNC)
        diff = CK_JOB_MAX_CREATE_DELETE_PER_SYNC;
    /* the pods to create: for an Indexed Job, the lowest indexes neither done nor active */
    json_t **made = ck__calloc((size_t)diff, sizeof(*made));
    if (!made)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    long n = 0;
    if (job_indexed(x->job)) {
        bool *busy = ck__calloc((size_t)(x->completions > 0 ? x->completions : 1), sizeof(*busy));
        for (size_t i = 0; busy && i < x->n_active; i++) {
            long ix = completion_index(x->active[i]);
            if (ix >= 0 && ix < x->completions)
                busy[ix] = true;
        }
        for (long ix = 0; busy && ix < x->completions && n < diff; ix++)
            if (!x->done[ix] && !busy[ix])
                made[n++] = job_pod(x->job, ix);
        free(busy);
    } else {
        for (; n < diff; n++)
            made[n] = job_pod(x->job, -1);
    }
    bool nomem = false;
    for (long i = 0; i < n; i++)
        nomem = nomem || !made[i];
    int created = 0;
    if (!nomem && n > 0) {
        CK_LOGV(4, "job %s: too few pods running, creating %ld", x->key, n);
        ck_expectations_expect_creations(c->exp, x->key, n);
        struct create_ctx cx = {.c = c, .job = x->job, .pods = made};
        pthread_mutex_init(&cx.mu, NULL);
        created = ck_slow_start_batch((int)n, CK_SLOW_START_INITIAL_BATCH, create_one, &cx, reterr);
        pthread_mutex_destroy(&cx.mu);
        for (long i = created; i < n; i++)
            ck_expectations_creation_observed(c->exp, x->key);
    }
    for (long i = 0; i < n; i++)
        json_decref(made[i]);
    free(made);
    if (nomem)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (created < n)
        return reterr && reterr->code ? reterr->code : CK_EIO;
    return active + created;
}

/* ---- status ------------------------------------------------------------------------ */

/* Sets the condition of type in status (ensureJobConditionStatus); true when it changed. */
static bool ensure_condition(json_t *status, const char *type, const char *cstatus,
                             const char *reason, const char *message, int64_t now)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        if (strcmp(cstatus, "False") == 0)
            return false; /* a condition that is False need not be added */
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    char ts[40];
    format_time(now, ts, sizeof(ts));
    size_t i;
    json_t *cond;
    json_array_foreach(conds, i, cond)
    {
        const char *t = json_string_value(json_object_get(cond, "type"));
        if (!t || strcmp(t, type) != 0)
            continue;
        const char *s = json_string_value(json_object_get(cond, "status"));
        const char *r = json_string_value(json_object_get(cond, "reason"));
        const char *m = json_string_value(json_object_get(cond, "message"));
        if (s && strcmp(s, cstatus) == 0 && strcmp(r ? r : "", reason) == 0 &&
            strcmp(m ? m : "", message) == 0)
            return false;
        if (!s || strcmp(s, cstatus) != 0)
            json_object_set_new(cond, "lastTransitionTime", json_string(ts));
        json_object_set_new(cond, "status", json_string(cstatus));
        json_object_set_new(cond, "reason", json_string(reason));
        json_object_set_new(cond, "message", json_string(message));
        json_object_set_new(cond, "lastProbeTime", json_string(ts));
        return true;
    }
    if (strcmp(cstatus, "False") == 0)
        return false;
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status",
                                           cstatus, "lastProbeTime", ts, "lastTransitionTime", ts,
                                           "reason", reason, "message", message));
    return true;
}

static json_t *uncounted_list(json_t *status, const char *which)
{
    json_t *u = json_object_get(status, "uncountedTerminatedPods");
    if (!json_is_object(u)) {
        u = json_object();
        json_object_set_new(status, "uncountedTerminatedPods", u);
    }
    json_t *l = json_object_get(u, which);
    if (!json_is_array(l)) {
        l = json_array();
        json_object_set_new(u, which, l);
    }
    return l;
}

/* Drops the empty lists of uncountedTerminatedPods (omitempty), keeping the object. */
static void tidy_uncounted(json_t *status)
{
    json_t *u = json_object_get(status, "uncountedTerminatedPods");
    if (!json_is_object(u)) {
        json_object_set_new(status, "uncountedTerminatedPods", json_object());
        return;
    }
    if (json_is_array(json_object_get(u, "succeeded")) &&
        !json_array_size(json_object_get(u, "succeeded")))
        json_object_del(u, "succeeded");
    if (json_is_array(json_object_get(u, "failed")) &&
        !json_array_size(json_object_get(u, "failed")))
        json_object_del(u, "failed");
}

/* Sets status.<field> to v (dropping it at 0 when omit_zero, as Go's omitempty). */
static void set_count(json_t *status, const char *field, long v, bool omit_zero)
{
    if (v == 0 && omit_zero)
        json_object_del(status, field);
    else
        json_object_set_new(status, field, json_integer(v));
}

/*
 * cleanUncountedPodsWithoutFinalizers: uids no longer held by a finalizer move from the
 * uncounted lists into the counters. with_finalizer: the uids that still are.
 */
static bool move_counted(json_t *status, const char *const *with_finalizer, size_t n)
{
    static const char *const which[] = {"succeeded", "failed"};
    bool changed = false;
    for (size_t w = 0; w < 2; w++) {
        json_t *l = uncounted_list(status, which[w]);
        long moved = 0;
        for (size_t i = json_array_size(l); i-- > 0;) {
            const char *uid = json_string_value(json_array_get(l, i));
            bool held = false;
            for (size_t k = 0; uid && k < n && !held; k++)
                held = with_finalizer[k] && strcmp(with_finalizer[k], uid) == 0;
            if (!held) {
                json_array_remove(l, i);
                moved++;
            }
        }
        if (moved) {
            changed = true;
            set_count(status, which[w],
                      (long)json_integer_value(json_object_get(status, which[w])) + moved, true);
        }
    }
    return changed;
}

/*
 * trackJobStatusAndRemoveFinalizers and enactJobFinished: counts finished pods into
 * the uncounted lists (writing status), removes their finalizers, moves them into the
 * counters and finishes the Job when it can; writes status when anything changed.
 */
static int track_and_finish(struct ck_job_controller *c, struct job_ctx *x, bool needs_flush,
                            struct ck_err *reterr)
{
    json_t *status = json_object_get(x->next, "status");
    bool indexed = job_indexed(x->job);
    const json_t *u_succ = uncounted_list(status, "succeeded");
    const json_t *u_fail = uncounted_list(status, "failed");
    const char **with_fin = ck__calloc(x->n_pods ? x->n_pods : 1, sizeof(*with_fin));
    const json_t **to_remove = ck__calloc(x->n_pods ? x->n_pods : 1, sizeof(*to_remove));
    if (!with_fin || !to_remove) {
        free(with_fin);
        free(to_remove);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    size_t n_with = 0, n_remove = 0;
    for (size_t i = 0; i < x->n_pods; i++)
        if (has_finalizer(x->pods[i]))
            with_fin[n_with++] = ck__meta_str(x->pods[i], "uid");
    if (move_counted(status, with_fin, n_with))
        needs_flush = true;
    bool failing = x->fin_type && strcmp(x->fin_type, "SuccessCriteriaMet") != 0;
    int new_succeeded = 0, new_failed = 0;
    bool capped = false; /* reachedMaxUncountedPods */
    int64_t now = wall_now(c), last_failure = 0;
    for (size_t i = 0; i < x->n_pods; i++) {
        const json_t *pod = x->pods[i];
        if (!has_finalizer(pod))
            continue;
        bool failed = pod_failed(pod, x->job);
        /* canRemoveFinalizer */
        if (!(being_deleted(x->job) || x->fin_type || strcmp(phase(pod), "Succeeded") == 0 ||
              failed))
            continue;
        to_remove[n_remove++] = pod;
        const char *uid = ck__meta_str(pod, "uid");
        if (!uid)
            continue;
        if (strcmp(phase(pod), "Succeeded") == 0 && !in_array(u_fail, uid)) {
            if (indexed) {
                long ix = completion_index(pod);
                if (ix >= 0 && ix < x->completions && !x->done[ix]) {
                    x->done[ix] = true;
                    needs_flush = true;
                    new_succeeded++;
                }
            } else if (!in_array(u_succ, uid)) {
                json_array_append_new(uncounted_list(status, "succeeded"), json_string(uid));
                needs_flush = true;
                new_succeeded++;
            }
        } else if (failed || failing) {
            long ix = completion_index(pod);
            if (!in_array(u_fail, uid) && (!indexed || (ix >= 0 && ix < x->completions))) {
                char msg[512];
                enum pfp_action a = match_failure_policy(x->job, pod, msg, sizeof(msg));
                if (a != PFP_IGNORE) {
                    json_array_append_new(uncounted_list(status, "failed"), json_string(uid));
                    needs_flush = true;
                    new_failed++;
                    int64_t t = finished_time(pod, now);
                    if (t > last_failure)
                        last_failure = t;
                }
            }
        }
        if (json_array_size(u_succ) + json_array_size(u_fail) >= CK_JOB_MAX_UNCOUNTED_PODS) {
            capped = true; /* the rest next time: the Job cannot finish in this sync */
            break;
        }
    }
    if (indexed) {
        char *text = format_indexes(x->done, x->completions);
        if (!text) {
            free(with_fin);
            free(to_remove);
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        long total = 0;
        for (long i = 0; i < x->completions; i++)
            total += x->done[i];
        const char *old = json_string_value(json_object_get(status, "completedIndexes"));
        if (strcmp(old ? old : "", text) != 0)
            needs_flush = true;
        json_object_set_new(status, "completedIndexes", json_string(text));
        set_count(status, "succeeded", total, true);
        free(text);
    }
    /* the interim conditions go with the first write, before any finalizer is removed */
    const char *final_type = NULL;
    if (x->fin_type && strcmp(x->fin_type, "FailureTarget") == 0) {
        if (ensure_condition(status, "FailureTarget", "True", x->fin_reason, x->fin_message, now))
            needs_flush = true;
        final_type = "Failed";
    } else if (x->fin_type && strcmp(x->fin_type, "SuccessCriteriaMet") == 0) {
        if (!condition_true(x->next, "SuccessCriteriaMet") &&
            ensure_condition(status, "SuccessCriteriaMet", "True", x->fin_reason, x->fin_message,
                             now))
            needs_flush = true;
        final_type = "Complete";
    }
    int r = 0;
    if (needs_flush) {
        r = write_status(c, x->key, x->next, reterr);
        if (r < 0)
            goto out;
        backoff_record(c, x->key, new_succeeded, new_failed, last_failure);
        needs_flush = false;
    }
    int rm_err = 0;
    for (size_t i = 0; i < n_remove; i++) {
        struct ck_err err = {0};
        int e = remove_finalizer(c, to_remove[i], &err);
        if (e == 0) {
            const char *uid = ck__meta_str(to_remove[i], "uid");
            for (size_t k = 0; uid && k < n_with; k++)
                if (with_fin[k] && strcmp(with_fin[k], uid) == 0)
                    with_fin[k] = NULL;
        } else if (!rm_err) {
            rm_err = e;
            *reterr = err;
            continue;
        }
        ck_err_release(&err);
    }
    if (move_counted(status, with_fin, n_with))
        needs_flush = true;
    if (rm_err < 0) {
        if (needs_flush)
            write_status(c, x->key, x->next, NULL);
        r = rm_err;
        goto out;
    }
    /* enactJobFinished */
    bool finished = false;
    if (capped)
        ck_wq_add(c->queue, x->key);
    if (final_type && !capped && json_array_size(uncounted_list(status, "succeeded")) == 0 &&
        json_array_size(uncounted_list(status, "failed")) == 0 && x->terminating == 0) {
        ensure_condition(status, final_type, "True", x->fin_reason, x->fin_message, now);
        if (strcmp(final_type, "Complete") == 0) {
            char ts[40];
            format_time(now, ts, sizeof(ts));
            json_object_set_new(status, "completionTime", json_string(ts));
        }
        finished = needs_flush = true;
    }
    if (needs_flush) {
        r = write_status(c, x->key, x->next, reterr);
        if (r == 0 && finished) {
            if (strcmp(final_type, "Complete") == 0) {
                if (x->completions >= 0 &&
                    json_integer_value(json_object_get(status, "succeeded")) > x->completions)
                    ck_event_recordf(c->recorder, x->job, CK_EVENT_WARNING, "TooManySucceededPods",
                                     "Too many succeeded pods running after completion count "
                                     "reached");
                ck_event_recordf(c->recorder, x->job, CK_EVENT_NORMAL, "Completed",
                                 "Job completed");
            } else {
                ck_event_recordf(c->recorder, x->job, CK_EVENT_WARNING, x->fin_reason, "%s",
                                 x->fin_message);
            }
        }
    }
out:
    free(with_fin);
    free(to_remove);
    return r;
}

/* ---- sync -------------------------------------------------------------------------- */

/* Removes the finalizer of an orphan pod: its Job is gone, or the pod is not its. */
static int sync_orphan_pod(struct ck_job_controller *c, const char *pod_key, struct ck_err *reterr)
{
    char *ns = NULL, *name = NULL;
    const json_t *pod = NULL;
    int r = ck_split_meta_namespace_key(pod_key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->pods, ns, name, &pod);
    free(ns);
    free(name);
    if (r < 0)
        return 0;
    const json_t *job = owner_job(c, pod);
    if (!job && has_finalizer(pod))
        r = remove_finalizer(c, pod, reterr);
    ck_cached_unref(job);
    ck_cached_unref(pod);
    return r;
}

static int job_selector(const json_t *job, struct ck_label_selector **ret)
{
    const json_t *sel = at(job, "spec", "selector");
    if (!sel)
        return CK_EINVAL;
    return ck_label_selector_from_object(sel, ret, NULL);
}

static int sync_job(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_job_controller *c = ctl->data;
    if (strncmp(key, ORPHAN_PREFIX, strlen(ORPHAN_PREFIX)) == 0)
        return sync_orphan_pod(c, key + strlen(ORPHAN_PREFIX), reterr);
    const json_t *job = NULL;
    char *ns_part = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns_part, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->jobs, ns_part, name, &job);
    free(ns_part);
    free(name);
    if (r < 0) {
        ck_expectations_delete(c->exp, key);
        backoff_forget(c, key);
        return 0;
    }
    if (cache_behind(c, key, job)) {
        CK_LOGV(4, "job %s: the cache is behind our last status write; waiting for it", key);
        ck_cached_unref(job);
        return 0;
    }
    struct job_ctx x = {.key = key, .job = job, .completions = -1};
    struct ck_label_selector *sel = NULL;
    struct ck_obj_list all = {0}, claimed = {0};
    int result = 0;
    if (job_selector(job, &sel) < 0) {
        CK_LOGE("job %s: invalid selector; not syncing", key);
        goto out;
    }
    bool satisfied = ck_expectations_satisfied(c->exp, key);
    const char *ns = ck__meta_str(job, "namespace");
    r = ck_lister_list(&c->pods, ns ? ns : "", NULL, &all, reterr);
    if (r < 0) {
        result = r;
        goto out;
    }
    struct ck_ref_owner owner = {
        .owner = job,
        .api_version = JOB_API_VERSION,
        .kind = JOB_KIND,
        .selector = sel,
        .client = &c->client,
        .owner_res = c->jobs_res,
        .child_res = c->pods_res,
    };
    r = ck_claim_objects(&owner, all.items, all.n, &claimed, reterr);
    if (r < 0) {
        result = r;
        goto out;
    }
    x.pods = claimed.items;
    x.n_pods = claimed.n;
    x.next = ck__json_copy(job);
    x.active = ck__calloc(claimed.n ? claimed.n : 1, sizeof(*x.active));
    const json_t *completions = at(job, "spec", "completions");
    if (json_is_integer(completions))
        x.completions = (long)json_integer_value(completions);
    x.done = ck__calloc((size_t)(x.completions > 0 ? x.completions : 1), sizeof(*x.done));
    if (!x.next || !x.active || !x.done) {
        result = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    if (!json_is_object(json_object_get(x.next, "status")))
        json_object_set_new(x.next, "status", json_object());
    json_t *status = json_object_get(x.next, "status");

    if (job_finished(job)) {
        /* only finalizers are left to remove (the orphan pods' way, in one go) */
        for (size_t i = 0; i < claimed.n; i++)
            if (has_finalizer(claimed.items[i]))
                remove_finalizer(c, claimed.items[i], NULL);
        goto out;
    }

    for (size_t i = 0; i < claimed.n; i++) {
        const json_t *pod = claimed.items[i];
        if (ck_pod_is_active(pod)) {
            x.active[x.n_active++] = pod;
            if (ck_pod_is_ready(pod, NULL))
                x.ready++;
        } else if (being_deleted(pod) && !pod_finished(pod)) {
            x.terminating++;
        }
    }
    const json_t *u = json_object_get(status, "uncountedTerminatedPods");
    x.succeeded = (long)json_integer_value(json_object_get(status, "succeeded")) +
                  (long)json_array_size(json_object_get(u, "succeeded"));
    x.failed = (long)json_integer_value(json_object_get(status, "failed")) +
               (long)json_array_size(json_object_get(u, "failed"));
    int64_t now = wall_now(c);
    char ts[40];
    if (!json_object_get(status, "startTime") && !job_suspended(job)) {
        format_time(now, ts, sizeof(ts));
        json_object_set_new(status, "startTime", json_string(ts));
    }
    /* failures of finished pods not yet counted count already for the limit */
    long new_failed = 0;
    for (size_t i = 0; i < claimed.n; i++) {
        const json_t *pod = claimed.items[i];
        const char *uid = ck__meta_str(pod, "uid");
        if (has_finalizer(pod) && uid && pod_failed(pod, job) &&
            !in_array(json_object_get(u, "failed"), uid)) {
            char msg[512];
            enum pfp_action a = match_failure_policy(job, pod, msg, sizeof(msg));
            if (a == PFP_FAIL_JOB && !x.fin_type) {
                x.fin_type = "FailureTarget";
                x.fin_reason = "PodFailurePolicy";
                snprintf(x.fin_message, sizeof(x.fin_message), "%s", msg);
            }
            if (a != PFP_IGNORE) {
                new_failed++;
                int64_t t = finished_time(pod, now);
                if (t > x.new_last_failure)
                    x.new_last_failure = t;
            }
        } else if (has_finalizer(pod) && uid && strcmp(phase(pod), "Succeeded") == 0 &&
                   !in_array(json_object_get(u, "succeeded"), uid)) {
            x.new_succeeded++;
        }
    }
    x.new_failed = (int)new_failed;
    x.failed += new_failed;
    if (job_indexed(job))
        parse_indexes(json_string_value(json_object_get(status, "completedIndexes")), x.done,
                      x.completions);
    /* the finished condition */
    if (condition_true(job, "SuccessCriteriaMet")) {
        const json_t *cond = find_condition(job, "SuccessCriteriaMet");
        x.fin_type = "SuccessCriteriaMet";
        x.fin_reason = json_string_value(json_object_get(cond, "reason")) ?: "";
        snprintf(x.fin_message, sizeof(x.fin_message), "%s",
                 json_string_value(json_object_get(cond, "message")) ?: "");
    } else if (condition_true(job, "FailureTarget")) {
        const json_t *cond = find_condition(job, "FailureTarget");
        x.fin_type = "FailureTarget";
        x.fin_reason = json_string_value(json_object_get(cond, "reason")) ?: "";
        snprintf(x.fin_message, sizeof(x.fin_message), "%s",
                 json_string_value(json_object_get(cond, "message")) ?: "");
    }
    long backoff_limit = (long)json_integer_value(at(job, "spec", "backoffLimit"));
    const json_t *deadline = at(job, "spec", "activeDeadlineSeconds");
    int64_t start = parse_time(json_string_value(json_object_get(status, "startTime")));
    if (!x.fin_type) {
        if (x.failed > backoff_limit || past_backoff_limit_on_failure(job, &claimed)) {
            x.fin_type = "FailureTarget";
            x.fin_reason = "BackoffLimitExceeded";
            snprintf(x.fin_message, sizeof(x.fin_message),
                     "Job has reached the specified backoff limit");
        } else if (deadline && start && !job_suspended(job) &&
                   now - start >= json_integer_value(deadline) * CK_SEC) {
            x.fin_type = "FailureTarget";
            x.fin_reason = "DeadlineExceeded";
            snprintf(x.fin_message, sizeof(x.fin_message),
                     "Job was active longer than specified deadline");
        } else if (deadline && start && !job_suspended(job)) {
            ck_wq_add_after(c->queue, key, json_integer_value(deadline) * CK_SEC - (now - start));
        }
    }
    if (job_indexed(job)) {
        /* count the indexes that succeeded since, for completion below */
        for (size_t i = 0; i < claimed.n; i++) {
            long ix = completion_index(claimed.items[i]);
            if (strcmp(phase(claimed.items[i]), "Succeeded") == 0 &&
                has_finalizer(claimed.items[i]) && ix >= 0 && ix < x.completions)
                x.done[ix] = true;
        }
        long total = 0;
        for (long i = 0; i < x.completions; i++)
            total += x.done[i];
        x.succeeded = total;
    } else {
        for (size_t i = 0; i < claimed.n; i++) {
            const char *uid = ck__meta_str(claimed.items[i], "uid");
            if (has_finalizer(claimed.items[i]) &&
                strcmp(phase(claimed.items[i]), "Succeeded") == 0 && uid &&
                !in_array(json_object_get(u, "succeeded"), uid) &&
                !in_array(json_object_get(u, "failed"), uid))
                x.succeeded++;
        }
    }

    long active = (long)x.n_active;
    bool suspend_changed = false;
    int manage_err = 0;
    struct ck_err manage_words = {0};
    if (x.fin_type) {
        int ready_deleted = 0;
        int d = delete_pods(c, &x, x.active, x.n_active, false, &ready_deleted, &manage_words);
        if (d < 0) {
            manage_err = d;
        } else {
            if ((size_t)d != x.n_active || !satisfied)
                x.fin_type = NULL;
            active -= d;
            x.terminating += d;
            x.ready -= ready_deleted;
        }
    } else {
        bool managed = false;
        if (satisfied && !being_deleted(job)) {
            long a = manage_job(c, &x, &manage_words);
            if (a < 0)
                manage_err = (int)a;
            else
                active = a;
            managed = true;
        }
        bool complete = x.completions < 0 ? (x.succeeded > 0 && active == 0)
                                          : (x.succeeded >= x.completions && active == 0);
        if (complete) {
            x.fin_type = "SuccessCriteriaMet";
            x.fin_reason = "CompletionsReached";
            snprintf(x.fin_message, sizeof(x.fin_message),
                     "Reached expected number of succeeded pods");
        } else if (managed) {
            if (job_suspended(job)) {
                if (ensure_condition(status, "Suspended", "True", "JobSuspended", "Job suspended",
                                     now)) {
                    suspend_changed = true;
                    ck_event_recordf(c->recorder, job, CK_EVENT_NORMAL, "Suspended",
                                     "Job suspended");
                }
            } else if (ensure_condition(status, "Suspended", "False", "JobResumed", "Job resumed",
                                        now)) {
                suspend_changed = true;
                ck_event_recordf(c->recorder, job, CK_EVENT_NORMAL, "Resumed", "Job resumed");
                format_time(now, ts, sizeof(ts));
                json_object_set_new(status, "startTime", json_string(ts));
            }
        }
    }
    set_count(status, "active", active, true);
    set_count(status, "ready", x.ready, false);
    set_count(status, "terminating", x.terminating, false);
    tidy_uncounted(status);
    bool needs_flush = suspend_changed || !json_equal(json_object_get(job, "status"), status);
    result = track_and_finish(c, &x, needs_flush, reterr);
    if (result == 0 && manage_err < 0) {
        *reterr = manage_words;
        result = manage_err;
    } else {
        ck_err_release(&manage_words);
    }
out:
    ck_label_selector_free(sel);
    ck_obj_list_release(&claimed);
    ck_obj_list_release(&all);
    json_decref(x.next);
    free(x.active);
    free(x.done);
    ck_cached_unref(job);
    return result;
}

/* ---- lifecycle --------------------------------------------------------------------- */

static int init_common(struct ck_job_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    pthread_mutex_init(&c->lock, NULL);
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    if (!c->pods_res || !c->jobs_res)
        return ck_err_set(reterr, CK_ENOENT, "job: the API kinds it needs are unknown");
    int r = ck__ctl_recorder(&c->sink, &c->client, "job-controller", clock, synchronous_events,
                             &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "job", sync_job, c, clock, reterr);
    c->queue = c->ctl.queue;
    if (r == 0)
        r = ck_expectations_new(clock, 0, &c->exp, reterr);
    return r;
}

int ck_job_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_clock *clock, struct ck_job_controller **ret_c,
                          struct ck_err *reterr)
{
    struct ck_job_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler job_h, pod_h;
    ck_job_controller_handlers(c, &job_h, &pod_h);
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->jobs_res, &job_h, &c->infs[0], &c->jobs, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r < 0) {
        ck_job_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_job_controller_new_with(const struct ck_job_controller_deps *deps,
                               struct ck_job_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->pods || !deps->jobs)
        return ck_err_set(reterr, CK_EINVAL, "job: a client and two listers are needed");
    struct ck_job_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->pods = *deps->pods;
    c->jobs = *deps->jobs;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    int r = init_common(c, deps->client, deps->clock, !deps->async_events, reterr);
    if (r < 0) {
        ck_job_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

void ck_job_controller_handlers(struct ck_job_controller *c, struct ck_event_handler *ret_jobs,
                                struct ck_event_handler *ret_pods)
{
    *ret_jobs = (struct ck_event_handler){job_add, job_update, job_delete, c};
    *ret_pods = (struct ck_event_handler){pod_add, pod_update, pod_delete, c};
}

int ck_job_controller_sync(struct ck_job_controller *c, const char *key, struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_job_controller_run(struct ck_job_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 2, workers, &c->runner, reterr);
}

struct ck_job_controller *ck_job_controller_free(struct ck_job_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    ck_expectations_free(c->exp);
    while (c->backoffs) {
        struct backoff_record *r = c->backoffs;
        c->backoffs = r->next;
        free(r->key);
        free(r);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
}

struct ck_wq *ck_job_controller_queue(struct ck_job_controller *c)
{
    return c->queue;
}

struct ck_expectations *ck_job_controller_expectations(struct ck_job_controller *c)
{
    return c->exp;
}
