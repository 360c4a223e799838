/*
 * test_ttlafterfinished.c - the TTL-after-finished controller on fakes with a fake wall
 * clock (kubernetes pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go):
 * a finished Job waits out its TTL, then goes in the foreground with a uid precondition;
 * unfinished Jobs and Jobs without a TTL stay.
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/job.h"
#include "fixtures.h"

#define T0 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */

struct env {
    struct fx_cache jobs;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_ttl_controller *tc;
    const struct ck_resource *jobs_res;
    int64_t now;
};

static int64_t fake_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->now = T0 * CK_SEC;
    fx_cache_init(&e->jobs);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_job_controller_deps deps = {
        .client = &e->client, .jobs = &e->jobs.lister, .now = fake_now, .now_arg = e};
    assert_int_equal(ck_ttl_controller_new_with(&deps, &e->tc, NULL), 0);
    e->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_ttl_controller_free(e->tc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->jobs);
    free(e);
    return 0;
}

/* A Job finished (condition type) at T0, with ttl seconds (< 0: none). */
static void add_job(struct env *e, const char *type, int ttl)
{
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{}, s:{}}", "apiVersion",
                          "batch/v1", "kind", "Job", "metadata", "name", "pi", "namespace",
                          "default", "uid", "job-uid", "resourceVersion", "1", "spec", "status");
    if (ttl >= 0)
        json_object_set_new(json_object_get(j, "spec"), "ttlSecondsAfterFinished",
                            json_integer(ttl));
    if (type)
        json_object_set_new(json_object_get(j, "status"), "conditions",
                            json_pack("[{s:s, s:s, s:s}]", "type", type, "status", "True",
                                      "lastTransitionTime", "2026-01-01T00:00:00Z"));
    assert_int_equal(ck_fake_client_seed(e->fc, e->jobs_res, j), 0);
    fx_cache_add(&e->jobs, j);
}

static void test_finished_job_goes_after_its_ttl(void **state)
{
    struct env *e = *state;
    add_job(e, "Complete", 100);
    int64_t after = 0;
    e->now = (T0 + 40) * CK_SEC;
    assert_int_equal(ck_ttl_controller_sync(e->tc, "default/pi", &after, NULL), 0);
    assert_int_equal(after, 60 * CK_SEC);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->jobs_res), 0);
    e->now = (T0 + 100) * CK_SEC;
    assert_int_equal(ck_ttl_controller_sync(e->tc, "default/pi", &after, NULL), 0);
    const struct ck_fake_action *d = fx_action(e->fc, "delete", "jobs", 0);
    assert_non_null(d);
    assert_string_equal(d->name, "pi");
}

static void test_failed_job_with_ttl_zero_goes_at_once(void **state)
{
    struct env *e = *state;
    add_job(e, "Failed", 0);
    assert_int_equal(ck_ttl_controller_sync(e->tc, "default/pi", NULL, NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->jobs_res), 1);
}

static void test_unfinished_or_without_ttl_stays(void **state)
{
    struct env *e = *state;
    add_job(e, NULL, 0);
    e->now = (T0 + 1000) * CK_SEC;
    assert_int_equal(ck_ttl_controller_sync(e->tc, "default/pi", NULL, NULL), 0);
    add_job(e, "Complete", -1);
    assert_int_equal(ck_ttl_controller_sync(e->tc, "default/pi", NULL, NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->jobs_res), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_finished_job_goes_after_its_ttl),
        T(test_failed_job_with_ttl_zero_goes_at_once),
        T(test_unfinished_or_without_ttl_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
