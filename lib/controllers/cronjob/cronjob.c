/*
 * cronjob.c - the CronJob controller (kubernetes pkg/controller/cronjob/
 * cronjob_controllerv2.go and utils.go).
 *
 * Handlers queue a CronJob when it changes and when one of the Jobs it controls does.
 * sync(key) (syncCronJob) reads the CronJob and the Jobs it controls from the caches (the
 * Jobs cache's controller-uid index; a cache without it, as unit tests give: the
 * namespace's Jobs filtered by controller) and:
 *   1. reconciles status.active with the Jobs it controls: a finished Job leaves it
 *      (SawCompletedJob; a Complete one moves lastSuccessfulTime), a Job gone leaves it
 *      (MissingJob), an unfinished Job not in it is reported (UnexpectedJob);
 *   2. deletes the oldest finished Jobs beyond successfulJobsHistoryLimit and
 *      failedJobsHistoryLimit;
 *   3. unless suspended, finds the most recent scheduled time since lastScheduleTime (or
 *      creation, or now - startingDeadlineSeconds), warning TooManyMissedTimes past 100
 *      missed; skips it when the starting deadline has passed (MissSchedule), when its Job
 *      exists already, or under Forbid while a run is active (JobAlreadyActive); under
 *      Replace deletes the active runs; creates the Job "<name>-<scheduled minute>"
 *      (SuccessfulCreate) and records it in status.active and lastScheduleTime;
 *   4. writes status when it changed and queues the key again for the next scheduled time.
 * A create that meets an existing Job of the same name owned by this CronJob (a restart
 * between the create and the status write) records that Job instead: a run is never
 * created twice.
 *
 * Threading: the runner syncs one key at a time per key; handlers run on the informers'
 * threads; the controller's state is read-only after creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/cronjob.h"
#include "ckube/internal/util.h"

#define CJ_KIND             "CronJob"
#define SCHEDULED_TIMESTAMP "batch.kubernetes.io/cronjob-scheduled-timestamp"
#define NEXT_SCHEDULE_DELTA (100 * INT64_C(1000000)) /* nextScheduleDelta, 100 ms */
#define MAX_SCHEDULE_WALK   1000000

struct ck_cronjob_controller {
    struct ck_ctl_client client;
    struct ck_lister cronjobs, jobs;
    const struct ck_resource *cronjobs_res, *jobs_res;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_informer *infs[2];
    /* the Jobs informer's cache, which has the controller-uid index; NULL: list and filter */
    struct ck_indexer *jobs_by_owner;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    int64_t (*now)(void *arg);
    void *now_arg;
};

static const json_t *at(const json_t *obj, const char *a, const char *b)
{
    return json_object_get(json_object_get(obj, a), b);
}

static int64_t wall_now(const struct ck_cronjob_controller *c)
{
    if (c->now)
        return c->now(c->now_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static int64_t parse_sec(const char *s)
{
    int64_t t = 0;
    return s && ck__time_parse(s, &t, NULL) == 0 ? t : 0;
}

static const char *utc_text(int64_t sec, char *buf, size_t size)
{
    return ck__time_format(sec, -1, buf, size);
}

/* RFC 3339 in the schedule's zone (as Go formats a time.Time in a Location). */
static const char *zone_text(const struct ck_cron_schedule *s, int64_t sec, char *buf, size_t size)
{
    int64_t wall = ck_cron_to_wall(s, sec);
    long off = (long)(wall - sec);
    if (off == 0)
        return utc_text(sec, buf, size);
    time_t tt = (time_t)wall;
    struct tm tm;
    gmtime_r(&tt, &tm);
    long aoff = off < 0 ? -off : off;
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+',
             aoff / 3600, (aoff % 3600) / 60);
    return buf;
}

/* The type of the Job's finished condition ("Complete", "Failed") or NULL. */
static const char *finished_type(const json_t *job)
{
    size_t i;
    const json_t *c;
    json_array_foreach(at(job, "status", "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(s, "True") == 0 &&
            (strcmp(t, "Complete") == 0 || strcmp(t, "Failed") == 0))
            return t;
    }
    return NULL;
}

/* ---- handlers ---------------------------------------------------------------------- */

static void cj_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_cronjob_controller *)arg)->queue, obj);
}

static void cj_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    cj_add(obj, false, arg);
}

static void cj_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)obj, (void)t, (void)arg;
}

static void job_event(const json_t *job, void *arg)
{
    struct ck_cronjob_controller *c = arg;
    ck__ctl_enqueue_owner(c->queue, &c->cronjobs, CJ_KIND, job, ck_controller_ref(job));
}

static void job_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    job_event(obj, arg);
}

static void job_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    job_event(obj, arg);
}

static void job_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    job_event(obj, arg);
}

/* ---- status.active ----------------------------------------------------------------- */

static json_t *active_list(json_t *status)
{
    json_t *a = json_object_get(status, "active");
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(status, "active", a);
    }
    return a;
}

static long active_index(json_t *status, const char *field, const char *value)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(status, "active"), i, ref)
    {
        const char *v = json_string_value(json_object_get(ref, field));
        if (v && value && strcmp(v, value) == 0)
            return (long)i;
    }
    return -1;
}

static void add_active(json_t *status, const json_t *job)
{
    if (active_index(status, "uid", ck__meta_str(job, "uid")) >= 0)
        return;
    json_array_append_new(active_list(status),
                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "Job", "namespace",
                                    ck__meta_str(job, "namespace") ?: "", "name",
                                    ck__meta_str(job, "name") ?: "", "uid",
                                    ck__meta_str(job, "uid") ?: "", "apiVersion", "batch/v1",
                                    "resourceVersion", ck__meta_str(job, "resourceVersion") ?: ""));
}

static int delete_job(struct ck_cronjob_controller *c, const json_t *cj, const char *name,
                      struct ck_err *reterr)
{
    json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background");
    int r = opts ? ck_ctl_delete(&c->client, c->jobs_res, ck__meta_str(cj, "namespace"), name, opts,
                                 NULL, reterr)
                 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(opts);
    if (r == 0)
        ck_event_recordf(c->recorder, cj, CK_EVENT_NORMAL, "SuccessfulDelete", "Deleted job %s",
                         name);
    else if (r != CK_ENOENT)
        ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "FailedDelete", "Deleted job: %s",
                         ck_err_message(reterr));
    return r == CK_ENOENT ? 0 : r;
}

static int by_start_time(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    int64_t tx = parse_sec(json_string_value(at(x, "status", "startTime")));
    int64_t ty = parse_sec(json_string_value(at(y, "status", "startTime")));
    if (!tx)
        tx = parse_sec(ck__meta_str(x, "creationTimestamp"));
    if (!ty)
        ty = parse_sec(ck__meta_str(y, "creationTimestamp"));
    return tx < ty ? -1 : tx > ty;
}

/* cleanupFinishedJobs for one kind of finish: deletes the oldest beyond limit. */
static void cleanup_history(struct ck_cronjob_controller *c, const json_t *cj, json_t *status,
                            const json_t **children, size_t n, const char *type,
                            const json_t *limit)
{
    if (!json_is_integer(limit))
        return;
    const json_t **finished = ck__calloc(n ? n : 1, sizeof(*finished));
    if (!finished)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = finished_type(children[i]);
        if (t && strcmp(t, type) == 0)
            finished[m++] = children[i];
    }
    qsort(finished, m, sizeof(*finished), by_start_time);
    size_t keep = (size_t)json_integer_value(limit);
    for (size_t i = 0; i + keep < m; i++) {
        const char *name = ck__meta_str(finished[i], "name");
        if (delete_job(c, cj, name, NULL) == 0) {
            long ix = active_index(status, "uid", ck__meta_str(finished[i], "uid"));
            if (ix >= 0)
                json_array_remove(json_object_get(status, "active"), (size_t)ix);
        }
    }
    free(finished);
}

/* ---- sync -------------------------------------------------------------------------- */

static int write_status(struct ck_cronjob_controller *c, const json_t *cj, json_t *next,
                        struct ck_err *reterr)
{
    json_t *active = json_object_get(json_object_get(next, "status"), "active");
    if (json_is_array(active) && json_array_size(active) == 0)
        json_object_del(json_object_get(next, "status"), "active");
    if (json_equal(json_object_get(cj, "status"), json_object_get(next, "status")))
        return 0;
    return ck_ctl_update_status(&c->client, c->cronjobs_res, ck__meta_str(cj, "namespace"), next,
                                NULL, reterr);
}

/* The Job of the run at `scheduled` (getJobFromTemplate2). New reference or NULL. */
static json_t *job_for(const json_t *cj, const struct ck_cron_schedule *sched, int64_t scheduled,
                       const char *name)
{
    const json_t *tmpl = at(cj, "spec", "jobTemplate");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    json_t *ref = ck_controller_ref_new(cj, "batch/v1", CJ_KIND);
    char ts[64];
    zone_text(sched, scheduled, ts, sizeof(ts));
    json_t *labels = ck__json_copy(json_object_get(tmeta, "labels"));
    json_t *ann = ck__json_copy(json_object_get(tmeta, "annotations"));
    if (!json_is_object(ann)) {
        json_decref(ann);
        ann = json_object();
    }
    if (ann)
        json_object_set_new(ann, SCHEDULED_TIMESTAMP, json_string(ts));
    json_t *spec = ck__json_copy(json_object_get(tmpl, "spec"));
    if (!ref || !ann || !spec) {
        json_decref(ref);
        json_decref(labels);
        json_decref(ann);
        json_decref(spec);
        return NULL;
    }
    json_t *job =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:[o]}, s:o}", "apiVersion", "batch/v1", "kind",
                  "Job", "metadata", "name", name, "namespace", ck__meta_str(cj, "namespace") ?: "",
                  "annotations", ann, "ownerReferences", ref, "spec", spec);
    if (job && json_is_object(labels))
        json_object_set(json_object_get(job, "metadata"), "labels", labels);
    json_decref(labels);
    return job;
}

static int sync_key(struct ck_cronjob_controller *c, const char *key, int64_t *ret_after,
                    struct ck_err *reterr)
{
    if (ret_after)
        *ret_after = 0;
    char *ns = NULL, *name = NULL;
    const json_t *cj = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->cronjobs, ns, name, &cj);
    free(ns);
    free(name);
    if (r < 0 || json_object_get(json_object_get(cj, "metadata"), "deletionTimestamp")) {
        ck_cached_unref(cj);
        return 0;
    }
    struct ck_obj_list jobs = {0};
    struct ck_cron_schedule *sched = NULL;
    json_t *next = ck__json_copy(cj);
    const json_t **children = NULL;
    size_t n_children = 0;
    int result = 0;
    /* getJobsToBeReconciled: the Jobs it controls, straight from the controller-uid index
     * (a sync then costs the CronJob's own Jobs, not every Job of the namespace) */
    r = CK_ENOENT;
    if (c->jobs_by_owner && ck__meta_str(cj, "uid"))
        r = ck_indexer_by_index(c->jobs_by_owner, CK_INDEX_CONTROLLER_UID, ck__meta_str(cj, "uid"),
                                &jobs, NULL);
    if (r == CK_ENOENT)
        r = ck_lister_list(&c->jobs, ck__meta_str(cj, "namespace") ?: "", NULL, &jobs, reterr);
    else if (r < 0)
        r = ck_err_set(reterr, r, "cannot read the Jobs index");
    children = ck__calloc(jobs.n ? jobs.n : 1, sizeof(*children));
    if (r < 0 || !next || !children) {
        result = r < 0 ? r : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    const char *uid = ck__meta_str(cj, "uid");
    for (size_t i = 0; i < jobs.n; i++) {
        const json_t *ref = ck_controller_ref(jobs.items[i]);
        const char *ref_uid = json_string_value(json_object_get(ref, "uid"));
        if (ref_uid && uid && strcmp(ref_uid, uid) == 0)
            children[n_children++] = jobs.items[i];
    }
    if (!json_is_object(json_object_get(next, "status")))
        json_object_set_new(next, "status", json_object());
    json_t *status = json_object_get(next, "status");

    /* 1. status.active against the Jobs */
    for (size_t i = 0; i < n_children; i++) {
        const json_t *j = children[i];
        const char *t = finished_type(j);
        long ix = active_index(status, "uid", ck__meta_str(j, "uid"));
        if (ix < 0 && !t) {
            ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "UnexpectedJob",
                             "Saw a job that the controller did not create or forgot: %s",
                             ck__meta_str(j, "name") ?: "");
        } else if (ix >= 0 && t) {
            json_array_remove(json_object_get(status, "active"), (size_t)ix);
            ck_event_recordf(c->recorder, cj, CK_EVENT_NORMAL, "SawCompletedJob",
                             "Saw completed job: %s, condition: %s", ck__meta_str(j, "name") ?: "",
                             t);
            const char *done = json_string_value(at(j, "status", "completionTime"));
            if (strcmp(t, "Complete") == 0 && done &&
                parse_sec(done) >
                    parse_sec(json_string_value(json_object_get(status, "lastSuccessfulTime"))))
                json_object_set_new(status, "lastSuccessfulTime", json_string(done));
        }
    }
    json_t *active = json_object_get(status, "active");
    for (size_t i = json_array_size(active); i-- > 0;) {
        const char *auid = json_string_value(json_object_get(json_array_get(active, i), "uid"));
        bool found = false;
        for (size_t k = 0; k < n_children && !found; k++)
            found = auid && strcmp(auid, ck__meta_str(children[k], "uid") ?: "") == 0;
        if (!found) {
            ck_event_recordf(
                c->recorder, cj, CK_EVENT_NORMAL, "MissingJob", "Active job went missing: %s",
                json_string_value(json_object_get(json_array_get(active, i), "name")) ?: "");
            json_array_remove(active, i);
        }
    }
    /* 2. history */
    cleanup_history(c, cj, status, children, n_children, "Complete",
                    at(cj, "spec", "successfulJobsHistoryLimit"));
    cleanup_history(c, cj, status, children, n_children, "Failed",
                    at(cj, "spec", "failedJobsHistoryLimit"));
    if (json_is_true(at(cj, "spec", "suspend")))
        goto write;

    /* 3. the schedule */
    struct ck_err perr = {0};
    const char *schedule = json_string_value(at(cj, "spec", "schedule"));
    if (ck_cron_parse(schedule, json_string_value(at(cj, "spec", "timeZone")), &sched, &perr) < 0) {
        if (perr.code == CK_ENOMEM) {
            result = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out;
        }
        ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "UnparseableSchedule",
                         "unparseable schedule: \"%s\" : %s", schedule ? schedule : "",
                         ck_err_message(&perr));
        ck_err_release(&perr);
        goto write;
    }
    int64_t now_ns = wall_now(c);
    int64_t now = now_ns / CK_SEC;
    int64_t earliest = parse_sec(json_string_value(json_object_get(status, "lastScheduleTime")));
    if (!earliest)
        earliest = parse_sec(ck__meta_str(cj, "creationTimestamp"));
    const json_t *sds = at(cj, "spec", "startingDeadlineSeconds");
    if (json_is_integer(sds) && now - json_integer_value(sds) > earliest)
        earliest = now - json_integer_value(sds);
    /* mostRecentScheduleTime */
    int64_t scheduled = 0, t = ck_cron_next(sched, earliest);
    long missed = 0;
    while (t && t <= now && missed < MAX_SCHEDULE_WALK) {
        scheduled = t;
        missed++;
        t = ck_cron_next(sched, t);
    }
    if (missed > CK_CRONJOB_MAX_MISSED)
        ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "TooManyMissedTimes",
                         "too many missed start times: %ld. Set or decrease "
                         ".spec.startingDeadlineSeconds or check clock skew",
                         missed);
    if (!scheduled)
        goto write;
    char ts[64];
    if (json_is_integer(sds) && scheduled + json_integer_value(sds) < now) {
        ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "MissSchedule",
                         "Missed scheduled time to start a job: %s",
                         zone_text(sched, scheduled, ts, sizeof(ts)));
        goto write;
    }
    char job_name[320];
    snprintf(job_name, sizeof(job_name), "%s-%lld", ck__meta_str(cj, "name") ?: "",
             (long long)(scheduled / 60));
    if (active_index(status, "name", job_name) >= 0 ||
        parse_sec(json_string_value(json_object_get(status, "lastScheduleTime"))) == scheduled)
        goto write;
    const char *policy = json_string_value(at(cj, "spec", "concurrencyPolicy"));
    active = json_object_get(status, "active");
    if (policy && strcmp(policy, "Forbid") == 0 && json_array_size(active) > 0) {
        ck_event_recordf(c->recorder, cj, CK_EVENT_NORMAL, "JobAlreadyActive",
                         "Not starting job because prior execution is running and concurrency "
                         "policy is Forbid");
        goto write;
    }
    if (policy && strcmp(policy, "Replace") == 0) {
        for (size_t i = json_array_size(active); i-- > 0;) {
            const char *an = json_string_value(json_object_get(json_array_get(active, i), "name"));
            if (delete_job(c, cj, an ? an : "", reterr) < 0) {
                result = reterr ? reterr->code : CK_EIO;
                goto out;
            }
            json_array_remove(active, i);
        }
    }
    json_t *job = job_for(cj, sched, scheduled, job_name);
    if (!job) {
        result = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    json_t *made = NULL;
    struct ck_err cerr = {0};
    r = ck_ctl_create(&c->client, c->jobs_res, ck__meta_str(cj, "namespace"), job, &made, &cerr);
    json_decref(job);
    if (r == CK_EEXIST) {
        /* created before a restart: record it if it is ours, never create it twice */
        ck_err_release(&cerr);
        r = ck_ctl_get(&c->client, c->jobs_res, ck__meta_str(cj, "namespace"), job_name, &made,
                       &cerr);
        const char *owner =
            r == 0 ? json_string_value(json_object_get(ck_controller_ref(made), "uid")) : NULL;
        if (r == 0 && !(owner && uid && strcmp(owner, uid) == 0))
            r = ck_err_set(&cerr, CK_EEXIST, "job %s exists and is not controlled by cronjob %s",
                           job_name, ck__meta_str(cj, "name") ?: "");
    } else if (r == 0) {
        ck_event_recordf(c->recorder, cj, CK_EVENT_NORMAL, "SuccessfulCreate", "Created job %s",
                         job_name);
    } else {
        ck_event_recordf(c->recorder, cj, CK_EVENT_WARNING, "FailedCreate",
                         "Error creating job: %s", ck_err_message(&cerr));
    }
    if (r < 0) {
        json_decref(made);
        *reterr = cerr;
        result = r;
        goto out;
    }
    ck_err_release(&cerr);
    if (!finished_type(made))
        add_active(status, made);
    json_decref(made);
    json_object_set_new(status, "lastScheduleTime",
                        json_string(utc_text(scheduled, ts, sizeof(ts))));
write:
    result = write_status(c, cj, next, reterr);
    if (result == 0 && sched) {
        int64_t now_ns2 = wall_now(c);
        int64_t nr = ck_cron_next(sched, now_ns2 / CK_SEC);
        int64_t after =
            nr ? (nr - now_ns2 / CK_SEC) * CK_SEC - (now_ns2 % CK_SEC) + NEXT_SCHEDULE_DELTA : 0;
        if (after > 0) {
            ck_wq_add_after(c->queue, key, after);
            if (ret_after)
                *ret_after = after;
        }
    }
out:
    ck_cron_free(sched);
    free(children);
    ck_obj_list_release(&jobs);
    json_decref(next);
    ck_cached_unref(cj);
    return result;
}

static int sync_cj(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return sync_key(ctl->data, key, NULL, reterr);
}

/* ---- lifecycle --------------------------------------------------------------------- */

static int init_common(struct ck_cronjob_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->cronjobs_res = ck_controller_resource("batch", "v1", "cronjobs");
    c->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    if (!c->cronjobs_res || !c->jobs_res)
        return ck_err_set(reterr, CK_ENOENT, "cronjob: the API kinds it needs are unknown");
    int r = ck__ctl_recorder(&c->sink, &c->client, "cronjob-controller", clock, synchronous_events,
                             &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "cronjob", sync_cj, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_cronjob_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                              struct ck_clock *clock, struct ck_cronjob_controller **ret_c,
                              struct ck_err *reterr)
{
    struct ck_cronjob_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler cj_h = {cj_add, cj_update, cj_delete, c};
    struct ck_event_handler job_h = {job_add, job_update, job_delete, c};
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->cronjobs_res, &cj_h, &c->infs[0], &c->cronjobs, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->jobs_res, &job_h, &c->infs[1], &c->jobs, reterr);
    if (r == 0) {
        /* other controllers may have added it already: that is fine */
        int ix = ck_informer_add_index(c->infs[1], CK_INDEX_CONTROLLER_UID,
                                       ck_index_by_controller_uid, NULL, NULL);
        if (ix < 0 && ix != CK_EEXIST)
            r = ck_err_set(reterr, ix, "cannot add the controller-uid index");
        else
            c->jobs_by_owner = ck_informer_indexer(c->infs[1]);
    }
    if (r < 0) {
        ck_cronjob_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_cronjob_controller_new_with(const struct ck_cronjob_controller_deps *deps,
                                   struct ck_cronjob_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->cronjobs || !deps->jobs)
        return ck_err_set(reterr, CK_EINVAL, "cronjob: a client and two listers are needed");
    struct ck_cronjob_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->cronjobs = *deps->cronjobs;
    c->jobs = *deps->jobs;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    c->jobs_by_owner = deps->jobs_indexer;
    int r = init_common(c, deps->client, deps->clock, true, reterr);
    if (r < 0) {
        ck_cronjob_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_cronjob_controller_sync(struct ck_cronjob_controller *c, const char *key,
                               int64_t *ret_requeue_after, struct ck_err *reterr)
{
    return sync_key(c, key, ret_requeue_after, reterr);
}

int ck_cronjob_controller_run(struct ck_cronjob_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 2, workers, &c->runner, reterr);
}

struct ck_cronjob_controller *ck_cronjob_controller_free(struct ck_cronjob_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    free(c);
    return NULL;
}
