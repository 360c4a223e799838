/*
 * test_job.c - the Job controller's decisions on fakes (kubernetes
 * pkg/controller/job/job_controller_test.go): caches the test fills, the fake client, and
 * a fake wall clock for start times, deadlines and back-offs. Each test builds a world,
 * runs a sync and checks what the client was asked to do.
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/job.h"
#include "fixtures.h"

#define T0 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */

struct env {
    struct fx_cache pods, jobs;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_job_controller *jc;
    const struct ck_resource *pods_res, *jobs_res;
    int64_t now; /* ns */
};

static int64_t fake_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->now = T0 * CK_SEC;
    fx_cache_init(&e->pods);
    fx_cache_init(&e->jobs);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_job_controller_deps deps = {.client = &e->client,
                                          .jobs = &e->jobs.lister,
                                          .pods = &e->pods.lister,
                                          .now = fake_now,
                                          .now_arg = e};
    assert_int_equal(ck_job_controller_new_with(&deps, &e->jc, NULL), 0);
    e->pods_res = ck_controller_resource("", "v1", "pods");
    e->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    assert_non_null(e->jobs_res);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_job_controller_free(e->jc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->jobs);
    free(e);
    return 0;
}

/* A Job as the server stores it after defaulting: selector on the controller uid. */
static json_t *job(const char *name, int completions, int parallelism, int backoff_limit)
{
    json_t *j = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:i, s:i, s:i, s:s, s:b, "
        "s:{s:{s:s}}, s:{s:{s:{s:s, s:s}}, s:{s:s, s:[{s:s, s:s}]}}}, s:{}}",
        "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "namespace", "default",
        "uid", "job-uid", "resourceVersion", "1", "generation", 1, "spec", "completions",
        completions, "parallelism", parallelism, "backoffLimit", backoff_limit, "completionMode",
        "NonIndexed", "suspend", 0, "selector", "matchLabels", "batch.kubernetes.io/controller-uid",
        "job-uid", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid",
        "job-uid", "batch.kubernetes.io/job-name", name, "spec", "restartPolicy", "Never",
        "containers", "name", "c", "image", "busybox", "status");
    assert_non_null(j);
    return j;
}

static json_t *add_job(struct env *e, json_t *j)
{
    assert_int_equal(ck_fake_client_seed(e->fc, e->jobs_res, j), 0);
    fx_cache_add(&e->jobs, j);
    return j;
}

/* A pod of the Job in phase (Pending, Running, Succeeded, Failed), with the finalizer. */
static json_t *job_pod(const json_t *j, const char *name, const char *phase, long index)
{
    json_t *pod = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:[s], s:[o]}, s:{s:[{s:s, s:s}]}, "
        "s:{s:s}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "default", "uid",
        name, "resourceVersion", "1", "creationTimestamp", "2026-01-01T00:00:00Z", "labels",
        "batch.kubernetes.io/controller-uid", "job-uid", "finalizers", CK_JOB_TRACKING_FINALIZER,
        "ownerReferences", ck_controller_ref_new(j, "batch/v1", "Job"), "spec", "containers",
        "name", "c", "image", "busybox", "status", "phase", phase);
    assert_non_null(pod);
    if (index >= 0) {
        char ix[24];
        snprintf(ix, sizeof(ix), "%ld", index);
        json_object_set_new(json_object_get(pod, "metadata"), "annotations",
                            json_pack("{s:s}", CK_JOB_COMPLETION_INDEX, ix));
    }
    return pod;
}

static void add_pod(struct env *e, json_t *pod)
{
    assert_int_equal(ck_fake_client_seed(e->fc, e->pods_res, pod), 0);
    fx_cache_add(&e->pods, pod);
}

static const json_t *last_status(struct env *e)
{
    size_t n = ck_fake_client_count(e->fc, "update-status", e->jobs_res);
    assert_true(n > 0);
    return json_object_get(fx_action(e->fc, "update-status", "jobs", n - 1)->body, "status");
}

static long status_int(const json_t *status, const char *field)
{
    return (long)json_integer_value(json_object_get(status, field));
}

static const json_t *condition(const json_t *status, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
            return c;
    }
    return NULL;
}

static const char *str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(obj, field));
}

static bool has_event(struct env *e, const char *reason)
{
    for (size_t i = 0;; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "create", "events", i);
        if (!a)
            return false;
        if (strcmp(str(a->body, "reason"), reason) == 0)
            return true;
    }
}

static void sync_ok(struct env *e)
{
    struct ck_err err = {0};
    int r = ck_job_controller_sync(e->jc, "default/pi", &err);
    if (r != 0)
        fail_msg("sync: %d %s", r, err.msg);
}

static void test_creates_parallelism_pods_with_finalizer_and_labels(void **state)
{
    struct env *e = *state;
    add_job(e, job("pi", 3, 2, 6));
    sync_ok(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 2);
    const json_t *pod = fx_action(e->fc, "create", "pods", 0)->body;
    assert_string_equal(fx_meta(pod, "generateName"), "pi-");
    const json_t *m = json_object_get(pod, "metadata");
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "finalizers"), 0)),
                        CK_JOB_TRACKING_FINALIZER);
    assert_string_equal(str(json_object_get(m, "labels"), "batch.kubernetes.io/job-name"), "pi");
    const json_t *ref = ck_controller_ref(pod);
    assert_string_equal(str(ref, "kind"), "Job");
    assert_string_equal(str(ref, "apiVersion"), "batch/v1");
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "active"), 2);
    assert_string_equal(str(status, "startTime"), "2026-01-01T00:00:00Z");
    assert_true(has_event(e, "SuccessfulCreate"));
}

static void test_never_more_active_than_remaining_completions(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 3, 2, 6);
    json_object_set_new(json_object_get(j, "status"), "succeeded", json_integer(2));
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Running", -1));
    add_pod(e, job_pod(j, "b", "Running", -1));
    sync_ok(e);
    /* one completion remains: one of the two running pods goes */
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pods_res), 1);
}

static void test_indexed_pods_carry_their_index(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 3, 3, 6);
    json_object_set_new(json_object_get(j, "spec"), "completionMode", json_string("Indexed"));
    json_object_set_new(json_object_get(j, "status"), "completedIndexes", json_string("1"));
    json_object_set_new(json_object_get(j, "status"), "succeeded", json_integer(1));
    add_job(e, j);
    sync_ok(e);
    /* indexes 0 and 2 remain */
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 2);
    const json_t *pod = fx_action(e->fc, "create", "pods", 1)->body;
    assert_string_equal(fx_meta(pod, "generateName"), "pi-2-");
    const json_t *m = json_object_get(pod, "metadata");
    assert_string_equal(str(json_object_get(m, "annotations"), CK_JOB_COMPLETION_INDEX), "2");
    assert_string_equal(str(json_object_get(m, "labels"), CK_JOB_COMPLETION_INDEX), "2");
    const json_t *spec = json_object_get(pod, "spec");
    assert_string_equal(str(spec, "hostname"), "pi-2");
    const json_t *env =
        json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "env");
    assert_string_equal(str(json_array_get(env, 0), "name"), "JOB_COMPLETION_INDEX");
}

static void test_indexed_success_fills_completed_indexes(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 3, 3, 6);
    json_object_set_new(json_object_get(j, "spec"), "completionMode", json_string("Indexed"));
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "p0", "Succeeded", 0));
    add_pod(e, job_pod(j, "p0b", "Succeeded", 0)); /* the same index twice counts once */
    add_pod(e, job_pod(j, "p2", "Succeeded", 2));
    add_pod(e, job_pod(j, "p1", "Running", 1));
    sync_ok(e);
    const json_t *status = last_status(e);
    assert_string_equal(str(status, "completedIndexes"), "0,2");
    assert_int_equal(status_int(status, "succeeded"), 2);
    assert_int_equal(ck_fake_client_count(e->fc, "patch", e->pods_res), 3);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
}

static void test_finished_pod_counted_once_through_uncounted(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 2, 1, 6);
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Succeeded", -1));
    sync_ok(e);
    /* first the uid goes into uncountedTerminatedPods, then the finalizer, then the count */
    const struct ck_fake_action *first = fx_action(e->fc, "update-status", "jobs", 0);
    const json_t *u =
        json_object_get(json_object_get(first->body, "status"), "uncountedTerminatedPods");
    assert_string_equal(json_string_value(json_array_get(json_object_get(u, "succeeded"), 0)), "a");
    const struct ck_fake_action *patch = fx_action(e->fc, "patch", "pods", 0);
    assert_non_null(patch);
    assert_non_null(json_object_get(json_object_get(patch->body, "metadata"),
                                    "$deleteFromPrimitiveList/finalizers"));
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "succeeded"), 1);
    assert_int_equal(json_array_size(json_object_get(
                         json_object_get(status, "uncountedTerminatedPods"), "succeeded")),
                     0);
    /* the replacement for the second completion */
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 1);

    /* a second sync on the same stale caches (the Job's status older than our write)
     * neither counts the pod again nor creates for it: it waits for the cache */
    ck_fake_client_clear_actions(e->fc);
    sync_ok(e);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", e->jobs_res), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
}

static void test_no_completion_while_pods_remain_uncounted(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 600, 600, 6);
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    for (int i = 0; i < 600; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        add_pod(e, job_pod(j, name, "Succeeded", -1));
    }
    sync_ok(e);
    /* at most 500 pods are counted in one sync (MaxUncountedPods): not Complete yet */
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "succeeded"), 500);
    assert_null(condition(status, "Complete"));
    assert_int_equal(ck_fake_client_count(e->fc, "patch", e->pods_res), 500);
}

static void test_counted_pod_without_finalizer_is_not_counted_again(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 2, 1, 6);
    json_t *st = json_object_get(j, "status");
    json_object_set_new(st, "succeeded", json_integer(1));
    json_object_set_new(st, "startTime", json_string("2026-01-01T00:00:00Z"));
    json_object_set_new(st, "active", json_integer(1));
    json_object_set_new(st, "ready", json_integer(0));
    json_object_set_new(st, "terminating", json_integer(0));
    json_object_set_new(st, "uncountedTerminatedPods", json_object());
    add_job(e, j);
    json_t *pod = job_pod(j, "a", "Succeeded", -1);
    json_object_del(json_object_get(pod, "metadata"), "finalizers");
    add_pod(e, pod);
    add_pod(e, job_pod(j, "b", "Running", -1));
    sync_ok(e);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", e->jobs_res), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
}

static void test_completes_with_success_criteria_then_complete(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 1, 1, 6);
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Succeeded", -1));
    e->now += 42 * CK_SEC;
    sync_ok(e);
    const json_t *status = last_status(e);
    const json_t *met = condition(status, "SuccessCriteriaMet");
    const json_t *complete = condition(status, "Complete");
    assert_non_null(met);
    assert_non_null(complete);
    assert_string_equal(str(complete, "status"), "True");
    assert_string_equal(str(complete, "reason"), "CompletionsReached");
    assert_string_equal(str(complete, "message"), "Reached expected number of succeeded pods");
    assert_string_equal(str(status, "completionTime"), "2026-01-01T00:00:42Z");
    assert_int_equal(status_int(status, "succeeded"), 1);
    assert_true(has_event(e, "Completed"));
}

static void test_backoff_limit_exceeded_fails_the_job(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 1, 1, 1);
    json_object_set_new(json_object_get(j, "status"), "failed", json_integer(1));
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "b", "Failed", -1));
    sync_ok(e);
    const json_t *status = last_status(e);
    const json_t *target = condition(status, "FailureTarget");
    const json_t *failed = condition(status, "Failed");
    assert_non_null(target);
    assert_non_null(failed);
    assert_string_equal(str(failed, "reason"), "BackoffLimitExceeded");
    assert_string_equal(str(failed, "message"), "Job has reached the specified backoff limit");
    assert_int_equal(status_int(status, "failed"), 2);
    assert_null(json_object_get(status, "completionTime"));
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
    assert_true(has_event(e, "BackoffLimitExceeded"));
}

static void test_failed_pod_replacement_waits_for_the_backoff(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 1, 1, 6);
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Failed", -1));
    sync_ok(e);
    /* counted, but no replacement before 10 s have passed */
    assert_int_equal(status_int(last_status(e), "failed"), 1);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);

    /* the next sync sees the pod counted (no finalizer) and the status written (replacing
     * what the caches held) */
    json_t *counted = job("pi", 1, 1, 6);
    json_t *st = json_object_get(counted, "status");
    json_object_set_new(st, "failed", json_integer(1));
    json_object_set_new(st, "startTime", json_string("2026-01-01T00:00:00Z"));
    json_object_set_new(st, "ready", json_integer(0));
    json_object_set_new(st, "terminating", json_integer(0));
    json_object_set_new(st, "uncountedTerminatedPods", json_object());
    fx_cache_add(&e->jobs, counted);
    json_t *pod = job_pod(counted, "a", "Failed", -1);
    json_object_del(json_object_get(pod, "metadata"), "finalizers");
    fx_cache_add(&e->pods, pod);
    ck_fake_client_clear_actions(e->fc);
    e->now += 9 * CK_SEC;
    sync_ok(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
    e->now += 1 * CK_SEC;
    struct ck_err err = {0};
    ck_job_controller_sync(e->jc, "default/pi", &err); /* its status write is stale: conflict */
    ck_err_release(&err);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 1);
}

static void test_active_deadline_exceeded(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 1, 1, 6);
    json_object_set_new(json_object_get(j, "spec"), "activeDeadlineSeconds", json_integer(5));
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Running", -1));
    e->now += 5 * CK_SEC;
    sync_ok(e);
    /* the active pod is deleted; Failed waits until it is gone (terminating) */
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pods_res), 1);
    const json_t *status = last_status(e);
    const json_t *target = condition(status, "FailureTarget");
    assert_non_null(target);
    assert_string_equal(str(target, "reason"), "DeadlineExceeded");
    assert_string_equal(str(target, "message"), "Job was active longer than specified deadline");
    assert_null(condition(status, "Failed"));
    assert_int_equal(status_int(status, "terminating"), 1);
}

static void test_suspended_job_deletes_active_pods(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 2, 2, 6);
    json_object_set_new(json_object_get(j, "spec"), "suspend", json_true());
    add_job(e, j);
    add_pod(e, job_pod(j, "a", "Running", -1));
    sync_ok(e);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pods_res), 1);
    const json_t *status = last_status(e);
    const json_t *s = condition(status, "Suspended");
    assert_non_null(s);
    assert_string_equal(str(s, "reason"), "JobSuspended");
    assert_null(json_object_get(status, "startTime"));
    assert_true(has_event(e, "Suspended"));
}

static void set_exit_code(json_t *pod, int code)
{
    json_object_set_new(json_object_get(pod, "status"), "containerStatuses",
                        json_pack("[{s:s, s:{s:{s:i, s:s}}}]", "name", "c", "state", "terminated",
                                  "exitCode", code, "finishedAt", "2026-01-01T00:00:00Z"));
}

static void test_pod_failure_policy_fail_job_and_ignore(void **state)
{
    struct env *e = *state;
    json_t *j = job("pi", 2, 2, 6);
    json_object_set_new(json_object_get(j, "spec"), "podFailurePolicy",
                        json_pack("{s:[{s:s, s:{s:s, s:[i]}}, {s:s, s:{s:s, s:[i]}}]}", "rules",
                                  "action", "Ignore", "onExitCodes", "operator", "In", "values", 3,
                                  "action", "FailJob", "onExitCodes", "operator", "In", "values",
                                  42));
    json_object_set_new(json_object_get(j, "status"), "startTime",
                        json_string("2026-01-01T00:00:00Z"));
    add_job(e, j);
    json_t *ignored = job_pod(j, "a", "Failed", -1);
    set_exit_code(ignored, 3);
    add_pod(e, ignored);
    sync_ok(e);
    /* an ignored failure does not count */
    assert_int_equal(status_int(last_status(e), "failed"), 0);

    json_t *fatal = job_pod(j, "b", "Failed", -1);
    set_exit_code(fatal, 42);
    add_pod(e, fatal);
    ck_fake_client_clear_actions(e->fc);
    /* the two replacements the first sync created are observed */
    ck_expectations_delete(ck_job_controller_expectations(e->jc), "default/pi");
    struct ck_err err = {0};
    ck_job_controller_sync(e->jc, "default/pi", &err);
    ck_err_release(&err);
    const json_t *target =
        condition(json_object_get(fx_action(e->fc, "update-status", "jobs", 0)->body, "status"),
                  "FailureTarget");
    assert_non_null(target);
    assert_string_equal(str(target, "reason"), "PodFailurePolicy");
    assert_string_equal(str(target, "message"),
                        "Container c for pod default/b failed with exit code 42 matching FailJob "
                        "rule at index 1");
}

static void test_orphan_pod_loses_its_finalizer(void **state)
{
    struct env *e = *state;
    json_t *gone = job("pi", 1, 1, 6); /* never in the cache */
    json_t *pod = job_pod(gone, "orphan", "Running", -1);
    json_object_set_new(json_object_get(pod, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    add_pod(e, pod);
    struct ck_event_handler job_h, pod_h;
    ck_job_controller_handlers(e->jc, &job_h, &pod_h);
    pod_h.on_update(pod, pod, pod_h.arg);
    struct ck_wq *q = ck_job_controller_queue(e->jc);
    const char *key = NULL;
    assert_int_equal(ck_wq_get(q, &key), 0);
    assert_string_equal(key, "orphan-pod:default/orphan");
    struct ck_err err = {0};
    assert_int_equal(ck_job_controller_sync(e->jc, key, &err), 0);
    ck_wq_done(q, key);
    assert_int_equal(ck_fake_client_count(e->fc, "patch", e->pods_res), 1);
    json_decref(gone);
}

/* A pod whose (init) containers restarted, as the node agent reports them. */
static json_t *restarted_pod(const json_t *j, const char *name, const char *phase, int restarts,
                             int init_restarts)
{
    json_t *pod = job_pod(j, name, phase, -1);
    json_t *status = json_object_get(pod, "status");
    json_object_set_new(status, "containerStatuses",
                        json_pack("[{s:s, s:i}]", "name", "c", "restartCount", restarts));
    json_object_set_new(status, "initContainerStatuses",
                        json_pack("[{s:s, s:i}]", "name", "i", "restartCount", init_restarts));
    return pod;
}

static void test_restarts_of_on_failure_pods_count_against_the_limit(void **state)
{
    struct env *e = *state;
    static const struct {
        const char *restart_policy;
        int backoff_limit;
        const char *phase;
        int restarts, init_restarts;
        bool fails;
    } cases[] = {
        {"OnFailure", 3, "Running", 2, 1, true},    /* 3 restarts reach the limit 3 */
        {"OnFailure", 3, "Running", 2, 0, false},   /* 2 do not */
        {"OnFailure", 3, "Pending", 3, 0, true},    /* a Pending pod counts too */
        {"OnFailure", 0, "Running", 1, 0, true},    /* limit 0: any restart */
        {"OnFailure", 0, "Running", 0, 0, false},   /* ... and none is fine */
        {"Never", 1, "Running", 5, 0, false},       /* Never: the kubelet restarts nothing */
        {"OnFailure", 2, "Succeeded", 9, 0, false}, /* finished pods do not count */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        teardown(state);
        setup(state);
        e = *state;
        json_t *j = job("pi", 2, 1, cases[i].backoff_limit);
        json_object_set_new(
            json_object_get(json_object_get(json_object_get(j, "spec"), "template"), "spec"),
            "restartPolicy", json_string(cases[i].restart_policy));
        json_object_set_new(json_object_get(j, "status"), "startTime",
                            json_string("2026-01-01T00:00:00Z"));
        add_job(e, j);
        add_pod(e,
                restarted_pod(j, "a", cases[i].phase, cases[i].restarts, cases[i].init_restarts));
        sync_ok(e);
        const json_t *target = condition(last_status(e), "FailureTarget");
        if (cases[i].fails) {
            if (!target)
                fail_msg("case %zu: no FailureTarget", i);
            assert_string_equal(str(target, "reason"), "BackoffLimitExceeded");
            assert_string_equal(str(target, "message"),
                                "Job has reached the specified backoff limit");
        } else if (target) {
            fail_msg("case %zu: FailureTarget %s", i, str(target, "reason"));
        }
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_creates_parallelism_pods_with_finalizer_and_labels),
        T(test_never_more_active_than_remaining_completions),
        T(test_indexed_pods_carry_their_index),
        T(test_indexed_success_fills_completed_indexes),
        T(test_finished_pod_counted_once_through_uncounted),
        T(test_counted_pod_without_finalizer_is_not_counted_again),
        T(test_no_completion_while_pods_remain_uncounted),
        T(test_completes_with_success_criteria_then_complete),
        T(test_backoff_limit_exceeded_fails_the_job),
        T(test_restarts_of_on_failure_pods_count_against_the_limit),
        T(test_failed_pod_replacement_waits_for_the_backoff),
        T(test_active_deadline_exceeded),
        T(test_suspended_job_deletes_active_pods),
        T(test_pod_failure_policy_fail_job_and_ignore),
        T(test_orphan_pod_loses_its_finalizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
