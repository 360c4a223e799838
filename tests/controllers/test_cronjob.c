/*
 * test_cronjob.c - the CronJob controller on fakes with a fake wall clock
 * (kubernetes pkg/controller/cronjob/cronjob_controllerv2_test.go): a day of
 * one-minute schedules in a second, with a controller restart in the middle and a
 * crash between a Job's create and the status write, creating every run exactly once;
 * Forbid, the starting deadline, too many missed times, suspend, history limits and the
 * active list. Every test runs twice: the Jobs listed and filtered, and read from the
 * controller-uid index as the informer's cache has it.
 */
#include "cktest.h"

#include "ckube/cronjob.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

#define T0 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */

struct env {
    struct fx_cache cjs, jobs;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_cronjob_controller *cc;
    const struct ck_resource *cjs_res, *jobs_res;
    int64_t now; /* ns */
};

static int64_t fake_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static bool with_index; /* the second run: the Jobs cache has the controller-uid index */

static int index_group(void **state)
{
    (void)state;
    with_index = true;
    return 0;
}

static void start_controller(struct env *e)
{
    struct ck_cronjob_controller_deps deps = {.client = &e->client,
                                              .cronjobs = &e->cjs.lister,
                                              .jobs = &e->jobs.lister,
                                              .now = fake_now,
                                              .now_arg = e,
                                              .jobs_indexer = with_index ? e->jobs.ix : NULL};
    assert_int_equal(ck_cronjob_controller_new_with(&deps, &e->cc, NULL), 0);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->now = T0 * CK_SEC;
    fx_cache_init(&e->cjs);
    fx_cache_init(&e->jobs);
    if (with_index)
        assert_int_equal(ck_indexer_add_index(e->jobs.ix, CK_INDEX_CONTROLLER_UID,
                                              ck_index_by_controller_uid, NULL, NULL),
                         0);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->cjs_res = ck_controller_resource("batch", "v1", "cronjobs");
    e->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    assert_non_null(e->cjs_res);
    start_controller(e);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_cronjob_controller_free(e->cc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->cjs);
    fx_cache_release(&e->jobs);
    free(e);
    return 0;
}

static json_t *cronjob(const char *schedule, const char *policy)
{
    json_t *cj = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:b, s:i, s:i, "
        "s:{s:{s:{s:s}}, s:{s:{s:{s:s, s:[{s:s, s:s}]}}}}}, s:{}}",
        "apiVersion", "batch/v1", "kind", "CronJob", "metadata", "name", "tick", "namespace",
        "default", "uid", "cj-uid", "resourceVersion", "1", "creationTimestamp",
        "2025-12-31T23:59:30Z", "spec", "schedule", schedule, "concurrencyPolicy", policy,
        "suspend", 0, "successfulJobsHistoryLimit", 3, "failedJobsHistoryLimit", 1, "jobTemplate",
        "metadata", "labels", "app", "tick", "spec", "template", "spec", "restartPolicy",
        "OnFailure", "containers", "name", "c", "image", "busybox", "status");
    assert_non_null(cj);
    return cj;
}

/* What an informer would do: the caches take the fake server's objects. */
static void refresh_caches(struct env *e, bool cronjob_too)
{
    if (cronjob_too) {
        json_t *cj = NULL;
        assert_int_equal(ck_ctl_get(&e->client, e->cjs_res, "default", "tick", &cj, NULL), 0);
        fx_cache_add(&e->cjs, cj);
    }
    size_t n = 0, m = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    char names[8][64]; /* the actions stay valid only until the next call to the fake */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(a[i].resource, "jobs") != 0 || a[i].result != 0)
            continue;
        if (strcmp(a[i].verb, "create") == 0 && m < 8)
            snprintf(names[m++], sizeof(names[0]), "%s", a[i].name);
        if (strcmp(a[i].verb, "delete") == 0) { /* the history limit at work */
            char key[128];
            snprintf(key, sizeof(key), "default/%s", a[i].name);
            ck_indexer_delete_key(e->jobs.ix, key, NULL);
        }
    }
    for (size_t i = 0; i < m; i++) {
        json_t *job = NULL;
        if (ck_ctl_get(&e->client, e->jobs_res, "default", names[i], &job, NULL) == 0) {
            /* finished at once, so that the history limit has work */
            json_object_set_new(job, "status",
                                json_pack("{s:[{s:s, s:s}], s:s, s:s}", "conditions", "type",
                                          "Complete", "status", "True", "startTime",
                                          "2026-01-01T00:00:00Z", "completionTime",
                                          "2026-01-01T00:00:05Z"));
            fx_cache_add(&e->jobs, job);
        }
    }
}

/* Jobs the fake server really created (an AlreadyExists answer creates nothing). */
static size_t jobs_created(struct env *e)
{
    size_t n = 0, made = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    for (size_t i = 0; i < n; i++)
        made += strcmp(a[i].verb, "create") == 0 && strcmp(a[i].resource, "jobs") == 0 &&
                a[i].result == 0;
    return made;
}

static int sync_cj(struct env *e)
{
    struct ck_err err = {0};
    int r = ck_cronjob_controller_sync(e->cc, "default/tick", NULL, &err);
    ck_err_release(&err);
    return r;
}

static void test_a_day_of_minutes_once_each_across_restarts(void **state)
{
    struct env *e = *state;
    json_t *cj = cronjob("* * * * *", "Allow");
    assert_int_equal(ck_fake_client_seed(e->fc, e->cjs_res, cj), 0);
    fx_cache_add(&e->cjs, cj);
    size_t created = 0;
    for (int minute = 0; minute < 1440; minute++) {
        e->now = (T0 + 60 * minute + 2) * CK_SEC;
        ck_fake_client_clear_actions(e->fc);
        if (minute == 700) {
            /* a crash after the create, before the status write: the cache never sees it */
            ck_fake_client_fail(e->fc, "update-status", e->cjs_res, 1, CK_EIO, "crashed");
            sync_cj(e);
            refresh_caches(e, false);
            e->cc = ck_cronjob_controller_free(e->cc);
            start_controller(e);
            created += jobs_created(e);
            ck_fake_client_clear_actions(e->fc);
        }
        if (minute == 1000) { /* a plain restart */
            e->cc = ck_cronjob_controller_free(e->cc);
            start_controller(e);
        }
        assert_int_equal(sync_cj(e), 0);
        /* a second sync in the same minute (a resync) creates nothing */
        refresh_caches(e, true);
        size_t made = jobs_created(e);
        assert_int_equal(sync_cj(e), 0);
        assert_int_equal(jobs_created(e), made);
        refresh_caches(e, true);
        created += made;
    }
    assert_int_equal(created, 1440);
    /* the history limit keeps the last 3 successful runs */
    struct ck_obj_list left = {0};
    assert_int_equal(ck_lister_list(&e->jobs.lister, "default", NULL, &left, NULL), 0);
    assert_true(left.n <= 4);
    ck_obj_list_release(&left);
    json_t *got = NULL;
    assert_int_equal(ck_ctl_get(&e->client, e->cjs_res, "default", "tick", &got, NULL), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(got, "status"), "lastScheduleTime")),
        "2026-01-01T23:59:00Z");
    json_decref(got);
}

static void test_job_name_and_owner(void **state)
{
    struct env *e = *state;
    json_t *cj = cronjob("*/5 * * * *", "Allow");
    assert_int_equal(ck_fake_client_seed(e->fc, e->cjs_res, cj), 0);
    fx_cache_add(&e->cjs, cj);
    e->now = (T0 + 5 * 60 + 1) * CK_SEC;
    int64_t after = 0;
    struct ck_err err = {0};
    assert_int_equal(ck_cronjob_controller_sync(e->cc, "default/tick", &after, &err), 0);
    const struct ck_fake_action *a = fx_action(e->fc, "create", "jobs", 0);
    assert_non_null(a);
    char want[64];
    snprintf(want, sizeof(want), "tick-%lld", (long long)((T0 + 300) / 60));
    assert_string_equal(a->name, want);
    const json_t *ref = ck_controller_ref(a->body);
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "CronJob");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(a->body, "metadata"), "annotations"),
                            "batch.kubernetes.io/cronjob-scheduled-timestamp")),
                        "2026-01-01T00:05:00Z");
    /* back at the next run, 5 minutes on (less the second past, plus 100 ms) */
    assert_int_equal(after, 299 * CK_SEC + 100 * INT64_C(1000000));
    const struct ck_fake_action *st = fx_action(e->fc, "update-status", "cronjobs", 0);
    assert_non_null(st);
    const json_t *status = json_object_get(st->body, "status");
    assert_string_equal(json_string_value(json_object_get(status, "lastScheduleTime")),
                        "2026-01-01T00:05:00Z");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(status, "active"), 0), "name")),
                        want);
}

static bool has_event(struct env *e, const char *reason)
{
    for (size_t i = 0;; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "create", "events", i);
        if (!a)
            return false;
        if (strcmp(json_string_value(json_object_get(a->body, "reason")), reason) == 0)
            return true;
    }
}

static void test_forbid_skips_while_a_run_is_active(void **state)
{
    struct env *e = *state;
    json_t *cj = cronjob("* * * * *", "Forbid");
    json_object_set_new(
        json_object_get(cj, "status"), "active",
        json_pack("[{s:s, s:s, s:s}]", "kind", "Job", "name", "tick-1", "uid", "running"));
    assert_int_equal(ck_fake_client_seed(e->fc, e->cjs_res, cj), 0);
    fx_cache_add(&e->cjs, cj);
    json_t *running =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{}}", "apiVersion", "batch/v1", "kind",
                  "Job", "metadata", "name", "tick-1", "namespace", "default", "uid", "running",
                  "resourceVersion", "1", "status");
    json_object_set_new(json_object_get(running, "metadata"), "ownerReferences",
                        json_pack("[o]", ck_controller_ref_new(cj, "batch/v1", "CronJob")));
    fx_cache_add(&e->jobs, running);
    e->now = (T0 + 61) * CK_SEC;
    assert_int_equal(sync_cj(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->jobs_res), 0);
    assert_true(has_event(e, "JobAlreadyActive"));
}

static void test_missed_start_deadline_and_too_many_missed(void **state)
{
    struct env *e = *state;
    json_t *cj = cronjob("* * * * *", "Allow");
    json_object_set_new(json_object_get(cj, "spec"), "startingDeadlineSeconds", json_integer(10));
    assert_int_equal(ck_fake_client_seed(e->fc, e->cjs_res, cj), 0);
    fx_cache_add(&e->cjs, cj);
    e->now = (T0 + 30) * CK_SEC; /* the run at T0 is 30 s late, past its 10 s deadline */
    assert_int_equal(sync_cj(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->jobs_res), 0);

    /* without a deadline, 3 hours missed: one run (the latest), and the warning */
    json_object_del(json_object_get(cj, "spec"), "startingDeadlineSeconds");
    ck_fake_client_clear_actions(e->fc);
    e->now = (T0 + 3 * 3600 + 1) * CK_SEC;
    assert_int_equal(sync_cj(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->jobs_res), 1);
    char want[64];
    snprintf(want, sizeof(want), "tick-%lld", (long long)((T0 + 3 * 3600) / 60));
    assert_string_equal(fx_action(e->fc, "create", "jobs", 0)->name, want);
    assert_true(has_event(e, "TooManyMissedTimes"));
}

static void test_suspended_and_unparseable(void **state)
{
    struct env *e = *state;
    json_t *cj = cronjob("* * * * *", "Allow");
    json_object_set_new(json_object_get(cj, "spec"), "suspend", json_true());
    assert_int_equal(ck_fake_client_seed(e->fc, e->cjs_res, cj), 0);
    fx_cache_add(&e->cjs, cj);
    e->now = (T0 + 61) * CK_SEC;
    assert_int_equal(sync_cj(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->jobs_res), 0);
    json_object_set_new(json_object_get(cj, "spec"), "suspend", json_false());
    json_object_set_new(json_object_get(cj, "spec"), "schedule", json_string("61 * * * *"));
    assert_int_equal(sync_cj(e), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->jobs_res), 0);
    assert_true(has_event(e, "UnparseableSchedule"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_day_of_minutes_once_each_across_restarts),
        T(test_job_name_and_owner),
        T(test_forbid_skips_while_a_run_is_active),
        T(test_missed_start_deadline_and_too_many_missed),
        T(test_suspended_and_unparseable),
    };
    int failed = cmocka_run_group_tests_name("jobs listed", tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("jobs by index", tests, index_group, NULL);
}
