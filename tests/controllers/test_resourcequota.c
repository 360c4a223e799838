/*
 * test_resourcequota.c - the resourcequota controller on fakes (kubernetes
 * pkg/controller/resourcequota/resource_quota_controller_test.go): a sync writes
 * status.hard from spec.hard and status.used from the cached pods and services (terminal
 * pods uncharged, scopes honoured), writes nothing when nothing changed, keeps what
 * admission charged for resources it does not count, and a deleted or terminated pod
 * queues its namespace's quotas so their usage is released.
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/resourcequota.h"
#include "fixtures.h"

struct env {
    struct fx_cache quotas, pods, services;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_resourcequota_controller *c;
    const struct ck_resource *quotas_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->quotas);
    fx_cache_init(&e->pods);
    fx_cache_init(&e->services);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    const struct ck_quota_counted counted[] = {{"", "pods", &e->pods.lister},
                                               {"", "services", &e->services.lister}};
    struct ck_resourcequota_controller_deps deps = {
        .client = &e->client, .quotas = &e->quotas.lister, .counted = counted, .n_counted = 2};
    assert_int_equal(ck_resourcequota_controller_new_with(&deps, &e->c, NULL), 0);
    e->quotas_res = ck_controller_resource("", "v1", "resourcequotas");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_resourcequota_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->quotas);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->services);
    free(e);
    return 0;
}

/* A quota q in default with spec (a JSON text), cached and on the fake server. */
static void add_quota(struct env *e, const char *name, const char *spec, const char *status)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"default\",\"resourceVersion\":\"1\"},\"spec\":%s%s%s}",
             name, spec, status ? ",\"status\":" : "", status ? status : "");
    json_t *q = json_loads(text, 0, NULL);
    assert_non_null(q);
    assert_int_equal(ck_fake_client_seed(e->fc, e->quotas_res, q), 0);
    fx_cache_add(&e->quotas, q);
}

/* A pod with a cpu request (NULL: best effort) in phase. Returns a borrowed pointer. */
static json_t *add_pod(struct env *e, const char *name, const char *cpu, const char *phase)
{
    json_t *pod = fx_pod("default", name, "a", NULL);
    if (cpu)
        json_object_set_new(
            json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0),
            "resources", json_pack("{s:{s:s}}", "requests", "cpu", cpu));
    json_object_set_new(pod, "status", json_pack("{s:s}", "phase", phase));
    json_incref(pod);
    fx_cache_add(&e->pods, pod);
    return pod; /* the caller drops it */
}

/* The status of the last update-status action on quotas. */
static const json_t *written_status(struct env *e, size_t index)
{
    const struct ck_fake_action *a = fx_action(e->fc, "update-status", "resourcequotas", index);
    assert_non_null(a);
    return json_object_get(a->body, "status");
}

static const char *entry(const json_t *status, const char *list, const char *name)
{
    return json_string_value(json_object_get(json_object_get(status, list), name));
}

static void test_sync_counts_pods_and_mirrors_hard(void **state)
{
    struct env *e = *state;
    add_quota(e, "q",
              "{\"hard\":{\"pods\":\"5\",\"count/pods\":\"9\",\"requests.cpu\":\"2\","
              "\"services\":\"3\"}}",
              NULL);
    json_decref(add_pod(e, "a", "500m", "Running"));
    json_decref(add_pod(e, "b", "250m", "Pending"));
    json_decref(add_pod(e, "done", "1", "Succeeded"));
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/q", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", e->quotas_res), 1);
    const json_t *s = written_status(e, 0);
    assert_string_equal(entry(s, "hard", "pods"), "5");
    assert_string_equal(entry(s, "hard", "requests.cpu"), "2");
    assert_string_equal(entry(s, "used", "pods"), "2");       /* the terminal pod is free */
    assert_string_equal(entry(s, "used", "count/pods"), "3"); /* but still counted */
    assert_string_equal(entry(s, "used", "requests.cpu"), "750m");
    assert_string_equal(entry(s, "used", "services"), "0");
    assert_int_equal(json_object_size(json_object_get(s, "used")), 4);
}

static void test_unchanged_status_is_not_written(void **state)
{
    struct env *e = *state;
    add_quota(e, "q", "{\"hard\":{\"pods\":\"5\"}}",
              "{\"hard\":{\"pods\":\"5\"},\"used\":{\"pods\":\"1\"}}");
    json_decref(add_pod(e, "a", NULL, "Running"));
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/q", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", e->quotas_res), 0);
    /* a missing quota is no error */
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/gone", NULL), 0);
}

static void test_scopes_and_uncounted_resources(void **state)
{
    struct env *e = *state;
    add_quota(e, "be", "{\"hard\":{\"pods\":\"5\"},\"scopes\":[\"BestEffort\"]}", NULL);
    /* count/deployments.apps: not counted here; what admission charged stays */
    add_quota(e, "other", "{\"hard\":{\"count/deployments.apps\":\"4\",\"configmaps\":\"2\"}}",
              "{\"hard\":{\"count/deployments.apps\":\"4\"},\"used\":{"
              "\"count/deployments.apps\":\"3\"}}");
    json_decref(add_pod(e, "besteffort", NULL, "Running"));
    json_decref(add_pod(e, "burstable", "100m", "Running"));
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/be", NULL), 0);
    assert_string_equal(entry(written_status(e, 0), "used", "pods"), "1");
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/other", NULL), 0);
    const json_t *s = written_status(e, 1);
    assert_string_equal(entry(s, "used", "count/deployments.apps"), "3");
    assert_string_equal(entry(s, "used", "configmaps"), "0");
    assert_string_equal(entry(s, "hard", "configmaps"), "2");
}

static void test_deleted_and_terminated_pods_queue_their_quotas(void **state)
{
    struct env *e = *state;
    add_quota(e, "pods", "{\"hard\":{\"pods\":\"5\"}}", NULL);
    add_quota(e, "svc", "{\"hard\":{\"services\":\"5\"}}", NULL);
    struct ck_event_handler h;
    ck_resourcequota_controller_handler(e->c, "", "pods", &h);
    struct ck_wq *q = ck_resourcequota_controller_queue(e->c);
    json_t *pod = add_pod(e, "a", "1", "Running");

    h.on_add(pod, true, h.arg); /* the first list: admission counted it */
    assert_int_equal(ck_wq_len(q), 0);

    /* a change that uses nothing different queues nothing */
    json_t *relabelled = json_deep_copy(pod);
    json_object_set_new(json_object_get(relabelled, "metadata"), "resourceVersion",
                        json_string("2"));
    h.on_update(pod, relabelled, h.arg);
    assert_int_equal(ck_wq_len(q), 0);

    /* terminated: its compute usage is released; only the pods quota is queued */
    json_t *done = json_deep_copy(relabelled);
    json_object_set_new(json_object_get(done, "metadata"), "resourceVersion", json_string("3"));
    json_object_set_new(done, "status", json_pack("{s:s}", "phase", "Succeeded"));
    h.on_update(relabelled, done, h.arg);
    assert_int_equal(ck_wq_len(q), 1);
    const char *key = NULL;
    assert_int_equal(ck_wq_get(q, &key), 0);
    assert_string_equal(key, "default/pods");
    ck_wq_done(q, key);

    h.on_delete(done, NULL, h.arg);
    assert_int_equal(ck_wq_len(q), 1);

    /* after the delete the cache has no pod: the sync releases the usage */
    assert_int_equal(ck_indexer_delete(e->pods.ix, pod, NULL), 0);
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/pods", NULL), 0);
    assert_string_equal(entry(written_status(e, 0), "used", "pods"), "0");

    /* a quota's spec.hard change queues it, its status changes do not */
    struct ck_event_handler qh;
    ck_resourcequota_controller_handler(e->c, NULL, NULL, &qh);
    json_t *a = json_pack("{s:{s:s, s:s}, s:{s:{s:s}}, s:{s:{s:s}}}", "metadata", "name", "svc",
                          "namespace", "default", "spec", "hard", "services", "5", "status", "used",
                          "services", "0");
    json_t *b = json_deep_copy(a);
    json_object_set_new(json_object_get(json_object_get(b, "status"), "used"), "services",
                        json_string("1"));
    size_t before = ck_wq_len(q);
    qh.on_update(a, b, qh.arg);
    assert_int_equal(ck_wq_len(q), before);
    json_object_set_new(json_object_get(json_object_get(b, "spec"), "hard"), "services",
                        json_string("6"));
    qh.on_update(a, b, qh.arg);
    assert_int_equal(ck_wq_len(q), before + 1);
    json_decref(a);
    json_decref(b);
    json_decref(relabelled);
    json_decref(done);
    json_decref(pod);
}

static void test_write_conflict_is_retried(void **state)
{
    struct env *e = *state;
    add_quota(e, "q", "{\"hard\":{\"pods\":\"5\"}}", NULL);
    assert_int_equal(ck_fake_client_fail(e->fc, "update-status", e->quotas_res, 1, CK_ECONFLICT,
                                         "the object has been modified"),
                     0);
    struct ck_err err = {0};
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/q", &err), CK_ECONFLICT);
    ck_err_release(&err);
    assert_int_equal(ck_resourcequota_controller_sync(e->c, "default/q", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", e->quotas_res), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sync_counts_pods_and_mirrors_hard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_status_is_not_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scopes_and_uncounted_resources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_and_terminated_pods_queue_their_quotas, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_write_conflict_is_retried, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
