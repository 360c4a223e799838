/*
 * test_apply.c - tests for lib/api/apply.c on the built-in Deployment and
 * Pod schemas: the fields an apply owns (map lists by their keys, atomic
 * selectors, maps per key), conflicts with Kubernetes' message and causes,
 * force, shared ownership of equal values, removal of what a manager stops
 * applying, merging of keyed lists from two appliers, Update entries for
 * other writers (created, changed, removed fields, time, the cap of ten),
 * and kubectl's upgrade from client-side apply.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static struct ck_schemas *schemas;
static const struct ck_kind *deployments;

static int setup(void **state)
{
    (void)state;
    struct ck_err err = {0};
    if (ck_api_builtin_schemas(&schemas, &err) < 0)
        return -1;
    deployments = ck_kind_lookup("apps", "v1", "deployments");
    return deployments ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    schemas = ck_schemas_free(schemas);
    return 0;
}

static const char web[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"labels\":{\"app\":\"web\"}},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":"
    "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
    "{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.25\",\"ports\":[{"
    "\"containerPort\":80}]}]}}}}";

/* Applies config (JSON text) to live as manager; returns the result or NULL with *err. */
static json_t *apply_as(const json_t *live, const char *config, const char *manager, bool force,
                        long long now, struct ck_err *err)
{
    json_t *cfg = load(config);
    struct ck_field_manager who = {manager, NULL, now};
    json_t *out = NULL;
    int r = ck_apply(schemas, deployments, live, cfg, &who, force, &out, err);
    json_decref(cfg);
    if (r == 0)
        assert_non_null(out);
    return r == 0 ? out : NULL;
}

/* The FieldsV1 of manager's entry (operation op) as compact sorted JSON, or "" when none. */
static char *fields_of(const json_t *obj, const char *manager, const char *op)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "managedFields"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "manager")), manager) == 0 &&
            strcmp(json_string_value(json_object_get(e, "operation")), op) == 0)
            return json_dumps(json_object_get(e, "fieldsV1"), JSON_COMPACT | JSON_SORT_KEYS);
    }
    return strdup("");
}

static void assert_fields(const json_t *obj, const char *manager, const char *op, const char *want)
{
    char *got = fields_of(obj, manager, op);
    if (strcmp(got, want) != 0)
        fail_msg("%s/%s owns\n  %s\nwant\n  %s", manager, op, got, want);
    free(got);
}

static void test_apply_creates_with_ownership_by_schema(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *obj = apply_as(NULL, web, "kubectl", false, 1767225600, &err);
    assert_non_null(obj);
    /* selector is atomic, containers and ports are keyed (the port by its defaulted protocol) */
    assert_fields(obj, "kubectl", "Apply",
                  "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{\"f:replicas\":{},"
                  "\"f:selector\":{},\"f:template\":{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}"
                  "},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"nginx\\\"}\":{\".\":{},"
                  "\"f:image\":{},\"f:name\":{},\"f:ports\":{\"k:{\\\"containerPort\\\":80,"
                  "\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{}}}}}}}}}");
    const json_t *entry =
        json_array_get(json_object_get(json_object_get(obj, "metadata"), "managedFields"), 0);
    assert_string_equal(json_string_value(json_object_get(entry, "time")), "2026-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(entry, "apiVersion")), "apps/v1");
    assert_string_equal(json_string_value(json_object_get(entry, "fieldsType")), "FieldsV1");
    json_decref(obj);
}

static void test_conflicts_force_and_shared_ownership(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *live = apply_as(NULL, web, "kubectl", false, 1, &err);
    static const char scale3[] = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                 "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":3}}";
    static const char scale2[] = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                                 "\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2}}";

    /* a different value of an owned field is a conflict naming field and manager */
    assert_null(apply_as(live, scale3, "hpa", false, 2, &err));
    assert_int_equal(err.http_status, 409);
    assert_string_equal(err.reason, "Conflict");
    assert_string_equal(ck_err_message(&err),
                        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas");
    assert_int_equal(err.n_causes, 1);
    assert_string_equal(err.causes[0].type, "FieldManagerConflict");
    assert_string_equal(err.causes[0].field, ".spec.replicas");
    assert_string_equal(err.causes[0].message, "conflict with \"kubectl\"");
    ck_err_release(&err);

    /* the same value is no conflict: both own it */
    json_t *shared = apply_as(live, scale2, "hpa", false, 2, &err);
    assert_non_null(shared);
    assert_fields(shared, "hpa", "Apply", "{\"f:spec\":{\"f:replicas\":{}}}");
    char *k = fields_of(shared, "kubectl", "Apply");
    assert_non_null(strstr(k, "f:replicas"));
    free(k);

    /* force takes it over */
    json_t *forced = apply_as(shared, scale3, "hpa", true, 3, &err);
    assert_non_null(forced);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(forced, "spec"), "replicas")), 3);
    k = fields_of(forced, "kubectl", "Apply");
    assert_null(strstr(k, "f:replicas"));
    free(k);
    json_decref(forced);
    json_decref(shared);
    json_decref(live);
}

static void test_conflict_message_lists_each_manager(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *live = apply_as(NULL, web, "kubectl", false, 1, &err);
    /* an Update manager owning the image too */
    json_t *next = json_deep_copy(live);
    json_object_set_new(json_object_get(json_object_get(next, "metadata"), "labels"), "app",
                        json_string("other"));
    struct ck_field_manager editor = {"kubectl-edit", NULL, 1767225600};
    assert_int_equal(
        ck_managed_fields_track_update(schemas, deployments, live, next, NULL, &editor), 0);
    static const char cfg[] = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                              "{\"name\":\"web\",\"labels\":{\"app\":\"x\"}},\"spec\":{"
                              "\"replicas\":9}}";
    assert_null(apply_as(next, cfg, "ci", false, 2, &err));
    assert_string_equal(ck_err_message(&err),
                        "Apply failed with 2 conflicts: conflicts with \"kubectl\":\n"
                        "- .spec.replicas\n"
                        "conflicts with \"kubectl-edit\" using apps/v1:\n"
                        "- .metadata.labels.app");
    assert_int_equal(err.n_causes, 2);
    assert_string_equal(err.causes[1].message, "conflict with \"kubectl-edit\" using apps/v1");
    ck_err_release(&err);
    json_decref(next);
    json_decref(live);
}

static void test_fields_no_longer_applied_are_removed(void **state)
{
    (void)state;
    struct ck_err err = {0};
    static const char v1[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":"
        "[{\"name\":\"main\",\"image\":\"x\"},{\"name\":\"side\",\"image\":\"y\"}]}}}}";
    static const char v2[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"labels\":{\"a\":\"1\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":"
        "[{\"name\":\"main\",\"image\":\"x\"}]}}}}";
    static const char other[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"labels\":{\"b\":\"2\"}}}";
    json_t *live = apply_as(NULL, v1, "kubectl", false, 1, &err);
    json_t *pruned = apply_as(live, v2, "kubectl", false, 2, &err);
    assert_non_null(pruned);
    const json_t *labels = json_object_get(json_object_get(pruned, "metadata"), "labels");
    assert_null(json_object_get(labels, "b"));
    const json_t *containers = json_object_get(
        json_object_get(json_object_get(json_object_get(pruned, "spec"), "template"), "spec"),
        "containers");
    assert_int_equal(json_array_size(containers), 1);

    /* a field another manager also owns stays */
    json_t *shared = apply_as(live, other, "labeller", false, 2, &err);
    json_t *kept = apply_as(shared, v2, "kubectl", false, 3, &err);
    labels = json_object_get(json_object_get(kept, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "b")), "2");
    json_decref(kept);
    json_decref(shared);
    json_decref(pruned);
    json_decref(live);
}

static void test_keyed_lists_merge_by_key(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *live = apply_as(NULL, web, "kubectl", false, 1, &err);
    static const char sidecar[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
        "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"proxy\",\"image\":"
        "\"envoy\"}]}}}}";
    json_t *both = apply_as(live, sidecar, "mesh", false, 2, &err);
    assert_non_null(both);
    const json_t *containers = json_object_get(
        json_object_get(json_object_get(json_object_get(both, "spec"), "template"), "spec"),
        "containers");
    assert_int_equal(json_array_size(containers), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(containers, 0), "name")),
                        "nginx");
    assert_string_equal(json_string_value(json_object_get(json_array_get(containers, 1), "name")),
                        "proxy");
    assert_fields(both, "mesh", "Apply",
                  "{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":"
                  "\\\"proxy\\\"}\":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}");
    /* an element without its key field is a 400 */
    static const char nokey[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
        "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"envoy\"}]}}}}";
    assert_null(apply_as(live, nokey, "mesh", false, 2, &err));
    assert_int_equal(err.http_status, 400);
    assert_non_null(strstr(ck_err_message(&err), "omits key field \"name\""));
    ck_err_release(&err);
    json_decref(both);
    json_decref(live);
}

static void test_update_entries_follow_changes(void **state)
{
    (void)state;
    json_t *created = load(web);
    struct ck_field_manager creator = {"kubectl-create", NULL, 100};
    assert_int_equal(
        ck_managed_fields_track_update(schemas, deployments, NULL, created, NULL, &creator), 0);
    /* a create owns what it set, labels as a map with its own member */
    assert_fields(created, "kubectl-create", "Update",
                  "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}},\"f:spec\":{"
                  "\"f:replicas\":{},\"f:selector\":{},\"f:template\":{\"f:metadata\":{"
                  "\"f:labels\":{\".\":{},\"f:app\":{}}},\"f:spec\":{\"f:containers\":{"
                  "\"k:{\\\"name\\\":\\\"nginx\\\"}\":{\".\":{},\"f:image\":{},\"f:name\":{},"
                  "\"f:ports\":{\".\":{},\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP"
                  "\\\"}\":{\".\":{},\"f:containerPort\":{}}}}}}}}}");

    /* an edit changing replicas takes it; removing the label removes it from everyone */
    json_t *edited = json_deep_copy(created);
    json_object_set_new(json_object_get(edited, "spec"), "replicas", json_integer(4));
    json_object_del(json_object_get(edited, "metadata"), "labels");
    struct ck_field_manager editor = {"kubectl-edit", NULL, 200};
    assert_int_equal(
        ck_managed_fields_track_update(schemas, deployments, created, edited, NULL, &editor), 0);
    assert_fields(edited, "kubectl-edit", "Update", "{\"f:spec\":{\"f:replicas\":{}}}");
    char *c = fields_of(edited, "kubectl-create", "Update");
    assert_null(strstr(c, "f:replicas"));
    assert_true(strncmp(c, "{\"f:metadata\"", 13) !=
                0); /* the labels went, and with them metadata */
    free(c);

    /* a write that changes nothing keeps every entry and time as they were */
    json_t *same = json_deep_copy(edited);
    struct ck_field_manager idle = {"idle", NULL, 300};
    assert_int_equal(
        ck_managed_fields_track_update(schemas, deployments, edited, same, NULL, &idle), 0);
    assert_true(json_equal(json_object_get(json_object_get(same, "metadata"), "managedFields"),
                           json_object_get(json_object_get(edited, "metadata"), "managedFields")));

    /* a request sending [] resets them; the write then owns only what it changed */
    json_t *reset = json_deep_copy(edited);
    json_t *empty = json_array();
    assert_int_equal(
        ck_managed_fields_track_update(schemas, deployments, edited, reset, empty, &idle), 0);
    assert_null(json_object_get(json_object_get(reset, "metadata"), "managedFields"));
    json_decref(empty);
    json_decref(reset);
    json_decref(same);
    json_decref(edited);
    json_decref(created);
}

static void test_update_managers_are_capped(void **state)
{
    (void)state;
    json_t *obj = load(web);
    for (int i = 0; i < 12; i++) {
        json_t *next = json_deep_copy(obj);
        char name[32], key[32];
        snprintf(name, sizeof(name), "writer-%02d", i);
        snprintf(key, sizeof(key), "l%02d", i);
        json_object_set_new(json_object_get(json_object_get(next, "metadata"), "labels"), key,
                            json_string("x"));
        struct ck_field_manager who = {name, NULL, 1000 + i};
        assert_int_equal(
            ck_managed_fields_track_update(schemas, deployments, obj, next, NULL, &who), 0);
        json_decref(obj);
        obj = next;
    }
    const json_t *entries = json_object_get(json_object_get(obj, "metadata"), "managedFields");
    assert_int_equal(json_array_size(entries), 10);
    char *bucket = fields_of(obj, "ancient-changes", "Update");
    assert_non_null(strstr(bucket, "f:l00"));
    assert_non_null(strstr(bucket, "f:l02"));
    free(bucket);
    json_decref(obj);
}

static void test_kubectl_upgrades_from_client_side_apply(void **state)
{
    (void)state;
    /* what `kubectl apply` (client-side) leaves: an Update entry and the annotation */
    json_t *live = load(web);
    json_t *ann = json_pack("{s:s}", "kubectl.kubernetes.io/last-applied-configuration", web);
    json_object_set_new(json_object_get(live, "metadata"), "annotations", ann);
    json_t *before = json_deep_copy(live);
    json_object_del(json_object_get(before, "metadata"), "annotations");
    struct ck_field_manager csa = {"kubectl-client-side-apply", NULL, 100};
    json_t *empty = json_object();
    assert_int_equal(ck_managed_fields_track_update(schemas, deployments, NULL, live, NULL, &csa),
                     0);
    json_decref(empty);
    json_decref(before);

    static const char scaled[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
        "\"spec\":{\"replicas\":3}}";
    struct ck_err err = {0};
    /* another manager conflicts with the client-side applier */
    assert_null(apply_as(live, scaled, "someone", false, 200, &err));
    assert_non_null(strstr(ck_err_message(&err), "\"kubectl-client-side-apply\" using apps/v1"));
    ck_err_release(&err);
    /* kubectl itself takes over what the annotation describes, and keeps it in step */
    json_t *up = apply_as(live, scaled, "kubectl", false, 200, &err);
    assert_non_null(up);
    char *c = fields_of(up, "kubectl-client-side-apply", "Update");
    assert_null(strstr(c, "f:replicas"));
    free(c);
    const char *last = json_string_value(
        json_object_get(json_object_get(json_object_get(up, "metadata"), "annotations"),
                        "kubectl.kubernetes.io/last-applied-configuration"));
    assert_non_null(strstr(last, "\"replicas\":3"));
    json_decref(up);

    /* a field changed since the annotation was written is no longer the client-side applier's */
    json_object_set_new(json_object_get(live, "spec"), "replicas", json_integer(7));
    assert_null(apply_as(live, scaled, "kubectl", false, 300, &err));
    assert_string_equal(ck_err_message(&err), "Apply failed with 1 conflict: conflict with "
                                              "\"kubectl-client-side-apply\" using apps/v1: "
                                              ".spec.replicas");
    ck_err_release(&err);
    json_decref(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_creates_with_ownership_by_schema),
        cmocka_unit_test(test_conflicts_force_and_shared_ownership),
        cmocka_unit_test(test_conflict_message_lists_each_manager),
        cmocka_unit_test(test_fields_no_longer_applied_are_removed),
        cmocka_unit_test(test_keyed_lists_merge_by_key),
        cmocka_unit_test(test_update_entries_follow_changes),
        cmocka_unit_test(test_update_managers_are_capped),
        cmocka_unit_test(test_kubectl_upgrades_from_client_side_apply),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
