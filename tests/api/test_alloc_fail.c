/*
 * test_alloc_fail.c - lib/api under allocation failure: reading JSON,
 * decoding, defaulting, the kinds' hooks, the three patch formats, Tables,
 * CRD validation rules,
 * discovery and OpenAPI each either give the result they give with memory
 * to spare or fail with CK_ENOMEM (NULL where the function returns a value),
 * and leak nothing (under ASan).
 *
 * jansson allocates through the project's hook here (json_set_alloc_funcs in
 * main, before anything else uses jansson), so every allocation an operation
 * makes can be failed: for each operation the test fails allocation n for
 * n = 1, 2, ... until the operation no longer reaches allocation n (SQLite's
 * faultsim). Inputs are built with the hook disarmed.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "jsontest.h"

#define NOW 1800000000LL /* 2027-01-15T08:00:00Z */

static struct ck_schemas *schemas;
static json_t *deployment; /* a decoded, defaulted Deployment */

static const char deployment_body[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"namespace\":\"default\",\"uid\":\"5a1f2c3e-0ae0-4ff3-9dce-9ba781507e65\","
    "\"creationTimestamp\":\"2027-01-15T07:00:00+01:00\",\"labels\":{\"app\":\"web\","
    "\"app.kubernetes.io/part-of\":\"a-rather-long-label-value\"}},\"spec\":{\"replicas\":3,"
    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":"
    "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
    "\"registry.example.com/team/nginx:1.27\",\"ports\":[{\"containerPort\":80}],\"args\":"
    "[\"--escaped=\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\t\",\"1234567890123456789\"]},{\"name\":"
    "\"sidecar\",\"image\":\"busybox\"}]}}},\"status\":{\"replicas\":3,\"readyReplicas\":2}}";

/* While true, jansson allocates around the hook: an operation's own inputs never fail. */
static bool building_input;

static void *hooked_malloc(size_t size)
{
    return building_input ? malloc(size) : ck__malloc(size);
}

/* load() without the hook, and without counting (an input of an operation). */
static json_t *input(const char *text)
{
    building_input = true;
    json_t *j = load(text);
    building_input = false;
    return j;
}

/* An operation under test: 0 with *ret (a new reference), or CK_ENOMEM with nothing. */
typedef int (*op_fn)(json_t **ret);

/* Fails allocation 1, 2, ... of op until op gets by; each answer is the whole result or CK_ENOMEM.
 */
static void faultsim(const char *name, op_fn op)
{
    json_t *want = NULL;
    assert_int_equal(op(&want), 0);
    unsigned long n;
    for (n = 1; n < 1000000; n++) {
        json_t *got = NULL;
        ck__alloc_fail_at(n, false);
        int r = op(&got);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (r == 0 && !json_equal(got, want)) {
            char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
            char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
            fail_msg("%s, allocation %lu failed: another result\ngot  %s\nwant %s", name, n,
                     g ? g : "(null)", w ? w : "(null)");
        }
        if (r != 0 && r != CK_ENOMEM)
            fail_msg("%s, allocation %lu failed: answered %d, not CK_ENOMEM", name, n, r);
        if (r != 0 && got)
            fail_msg("%s, allocation %lu failed: a result with CK_ENOMEM", name, n);
        json_decref(got);
        if (made < n)
            break; /* the operation finished before allocation n: every one was tried */
    }
    print_message("%s: %lu allocations\n", name, n - 1);
    json_decref(want);
}

/* ---- the operations ------------------------------------------------------ */

static int load_body(json_t **ret)
{
    return ck_json_loadb(deployment_body, strlen(deployment_body), JSON_REJECT_DUPLICATES, ret,
                         NULL);
}

static int decode(json_t **ret)
{
    struct ck_warnings warnings = {0};
    struct ck_err err = {0};
    int r =
        ck_schema_decode(schemas, "io.k8s.api.apps.v1.Deployment", deployment_body,
                         strlen(deployment_body), CK_FIELD_VALIDATION_STRICT, ret, &warnings, &err);
    ck_warnings_release(&warnings);
    return r;
}

/* Runs change on a copy of deployment; the copy is the result. */
static int on_copy(json_t **ret, int (*change)(json_t *obj))
{
    json_t *obj = json_deep_copy(deployment);
    if (!obj)
        return CK_ENOMEM;
    int r = change(obj);
    if (r < 0) {
        json_decref(obj);
        return r;
    }
    *ret = obj;
    return 0;
}

static const struct ck_kind *deployments(void)
{
    return ck_kind_lookup("apps", "v1", "deployments");
}

static int drop_defaults(json_t *obj)
{
    /* what defaulting fills, gone again, so that it has work to do */
    json_t *spec = json_object_get(obj, "spec");
    json_object_del(spec, "strategy");
    json_object_del(spec, "revisionHistoryLimit");
    json_t *pod = json_object_get(json_object_get(spec, "template"), "spec");
    json_object_del(pod, "restartPolicy");
    json_object_del(pod, "dnsPolicy");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(pod, "containers"), i, c)
    {
        json_object_del(c, "imagePullPolicy");
        json_object_del(c, "terminationMessagePath");
    }
    return 0;
}

static int schema_and_kind_defaults(json_t *obj)
{
    drop_defaults(obj);
    int r = ck_schema_default(schemas, "io.k8s.api.apps.v1.Deployment", obj);
    return r < 0 ? r : ck_kind_default(deployments(), obj);
}

static int defaults(json_t **ret)
{
    return on_copy(ret, schema_and_kind_defaults);
}

static int update_metadata(json_t *obj)
{
    /* a changed spec: the generation goes up */
    if (json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(5)) < 0)
        return CK_ENOMEM;
    json_object_del(obj, "apiVersion");
    json_object_del(json_object_get(obj, "metadata"), "uid");
    return ck_meta_prepare_update(deployments(), obj, deployment);
}

static int prepare_update(json_t **ret)
{
    return on_copy(ret, update_metadata);
}

/* A namespace through its kind's hooks: create, defaults, then the delete that starts. */
static int namespace_hooks(json_t **ret)
{
    const struct ck_kind *k = ck_kind_lookup("", "v1", "namespaces");
    json_t *ns = json_pack("{s:{s:s}, s:{s:[s]}}", "metadata", "name", "team-a", "spec",
                           "finalizers", "example.com/cleanup");
    if (!ns)
        return CK_ENOMEM;
    int r = k->prepare_for_create(ns);
    if (r == 0)
        r = ck_kind_default(k, ns);
    if (r == 0)
        r = k->prepare_for_delete(ns);
    if (r < 0)
        return json_decref(ns), r;
    *ret = ns;
    return 0;
}

static int merge_patch(json_t **ret)
{
    json_t *patch = input("{\"metadata\":{\"labels\":{\"tier\":\"frontend-tier-label\","
                          "\"app.kubernetes.io/part-of\":null}},\"spec\":{\"replicas\":7,"
                          "\"template\":{\"spec\":{\"containers\":[{\"name\":\"only\"}]}}}}");
    *ret = ck_merge_patch(deployment, patch);
    json_decref(patch);
    return *ret ? 0 : CK_ENOMEM;
}

static int json_patch(json_t **ret)
{
    json_t *ops = input(
        "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":4},"
        "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"a\":\"b\"}},"
        "{\"op\":\"copy\",\"from\":\"/metadata/labels\",\"path\":\"/metadata/annotations/c\"},"
        "{\"op\":\"move\",\"from\":\"/spec/template/spec/containers/1\","
        "\"path\":\"/spec/template/spec/containers/0\"},"
        "{\"op\":\"remove\",\"path\":\"/status\"},"
        "{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":4}]");
    struct ck_err err = {0};
    int r = ck_json_patch(deployment, ops, ret, &err);
    json_decref(ops);
    return r;
}

static int strategic_patch(json_t **ret)
{
    json_t *patch = input(
        "{\"metadata\":{\"labels\":{\"tier\":\"fe\"}},\"spec\":{\"strategy\":{\"$retainKeys\":"
        "[\"type\"],\"type\":\"Recreate\"},\"template\":{\"spec\":{\"$setElementOrder/"
        "containers\":[{\"name\":\"sidecar\"},{\"name\":\"c\"},{\"name\":\"new\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.28\",\"args\":[\"x\"]},"
        "{\"name\":\"new\",\"image\":\"alpine\",\"$patch\":\"merge\"}]}}}}");
    struct ck_err err = {0};
    int r = ck_strategic_merge_patch(schemas, "io.k8s.api.apps.v1.Deployment", deployment, patch,
                                     ret, &err);
    json_decref(patch);
    return r;
}

static int table(json_t **ret)
{
    json_t *objects[] = {deployment, deployment};
    *ret = ck_table_build(deployments(), objects, 2, true, CK_INCLUDE_METADATA, "12", "", NOW);
    return *ret ? 0 : CK_ENOMEM;
}

static int discovery(json_t **ret)
{
    *ret = ck_discovery_resources("apps", "v1");
    return *ret ? 0 : CK_ENOMEM;
}

static int groups(json_t **ret)
{
    *ret = ck_discovery_api_groups();
    return *ret ? 0 : CK_ENOMEM;
}

/*
 * The document of a small group: it copies every schema it reaches, so each
 * failed allocation reruns thousands of them for apps/v1, and the same code
 * runs for a Lease and the ObjectMeta it references.
 */
static int openapi(json_t **ret)
{
    *ret = ck_openapi_document(schemas, "coordination.k8s.io", "v1");
    return *ret ? 0 : CK_ENOMEM;
}

/* A label selector parsed and printed again (the list's labelSelector). */
static int label_selector(json_t **ret)
{
    struct ck_label_selector *sel = NULL;
    struct ck_err err = {0};
    int r = ck_label_selector_parse("app=web,tier in (fe,be),!canary,env notin (dev)", &sel, &err);
    if (r < 0)
        return r;
    char *text = ck_label_selector_string(sel);
    ck_label_selector_free(sel);
    *ret = text ? json_string(text) : NULL;
    free(text);
    return *ret ? 0 : CK_ENOMEM;
}

/* The field errors of an invalid Deployment: the same list, or nomem. */
/* The errors' texts as a JSON array in *ret; releases errs. 0, or CK_ENOMEM when any was lost. */
static int errors_json(struct ck_field_errors *errs, json_t **ret)
{
    json_t *out = json_array();
    int r = errs->nomem || !out ? CK_ENOMEM : 0;
    for (size_t i = 0; i < errs->len && r == 0; i++) {
        char *text = ck_field_error_string(&errs->items[i]);
        if (!text || json_array_append_new(out, json_string(text)) < 0)
            r = CK_ENOMEM;
        free(text);
    }
    ck_field_errors_release(errs);
    if (r < 0)
        return json_decref(out), r;
    *ret = out;
    return 0;
}

static int validation(json_t **ret)
{
    json_t *bad = input("{\"metadata\":{\"name\":\"Bad_Name\",\"namespace\":\"default\"},"
                        "\"spec\":{\"replicas\":-1,\"selector\":{\"matchLabels\":{\"app\":\"x\"}},"
                        "\"strategy\":{\"type\":\"Sometimes\"},\"template\":{\"metadata\":"
                        "{\"labels\":{\"app\":\"y\"}},\"spec\":{\"containers\":[]}}}}");
    struct ck_field_errors errs = {0};
    ck_schema_validate(schemas, "io.k8s.api.apps.v1.Deployment", bad, &errs);
    ck_meta_validate(deployments(), bad, NULL, &errs);
    json_decref(bad);
    return errors_json(&errs, ret);
}

/* A CRD version's rules compiled, then a custom resource's update checked against them. */
static int crd_rules(json_t **ret)
{
    json_t *schema =
        input("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
              "\"x-kubernetes-validations\":[{\"rule\":\"self.a <= self.b\",\"messageExpression\":"
              "\"'a (' + string(self.a) + ') passes b'\",\"fieldPath\":\".a\"},{\"rule\":"
              "\"self.name == oldSelf.name\",\"message\":\"immutable\"}],\"properties\":{\"a\":"
              "{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},\"name\":{\"type\":\"string\"},"
              "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
              "\"x-kubernetes-validations\":[{\"rule\":\"self.matches('^[a-z]+$')\"}]}}}}}}");
    json_t *obj = input("{\"spec\":{\"a\":3,\"b\":1,\"name\":\"x\",\"tags\":[\"ok\",\"No\"]}}");
    json_t *old = input("{\"spec\":{\"a\":1,\"b\":1,\"name\":\"y\",\"tags\":[]}}");
    struct ck_crd_rules *rules = NULL;
    struct ck_err err = {0};
    struct ck_field_errors errs = {0};
    int r = ck_crd_rules_new(schema, 0, &rules, &err);
    if (r == 0)
        ck_crd_rules_validate(rules, obj, old, 0, &errs);
    ck_crd_rules_free(rules);
    json_decref(schema);
    json_decref(obj);
    json_decref(old);
    if (r < 0) {
        ck_field_errors_release(&errs);
        return r;
    }
    return errors_json(&errs, ret);
}

/* A create by one manager, then an edit by another: the edit's object with its managedFields. */
static int track_updates(json_t **ret)
{
    const struct ck_kind *kind = deployments();
    json_t *created = json_deep_copy(deployment);
    json_t *edited = NULL;
    struct ck_field_manager creator = {"kubectl-create", NULL, 1000};
    struct ck_field_manager editor = {"kubectl-edit", NULL, 2000};
    int r = created ? ck_managed_fields_track_update(schemas, kind, NULL, created, NULL, &creator)
                    : CK_ENOMEM;
    if (r == 0)
        edited = json_deep_copy(created);
    json_t *labels = edited ? json_object_get(json_object_get(edited, "metadata"), "labels") : NULL;
    if (r == 0 && (!labels || json_object_set_new(labels, "tier", json_string("fe")) < 0))
        r = CK_ENOMEM;
    if (r == 0) {
        json_object_del(labels, "app.kubernetes.io/part-of");
        r = ck_managed_fields_track_update(schemas, kind, created, edited, NULL, &editor);
    }
    json_decref(created);
    if (r < 0) {
        json_decref(edited);
        return r;
    }
    *ret = edited;
    return 0;
}

/* A forced server-side apply over what track_updates() leaves, taking a field and dropping one. */
static int apply(json_t **ret)
{
    json_t *live = NULL;
    int r = track_updates(&live);
    if (r < 0)
        return r;
    building_input = true;
    json_t *config = load("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
                          "\"name\":\"web\",\"labels\":{\"tier\":\"be\"}},\"spec\":{\"replicas\":"
                          "5,\"template\":{\"spec\":{\"containers\":[{\"name\":\"sidecar\","
                          "\"image\":\"envoy\"}]}}}}");
    building_input = false;
    struct ck_field_manager who = {"ci", NULL, 3000};
    struct ck_err err = {0};
    json_t *out = NULL;
    r = ck_apply(schemas, deployments(), live, config, &who, true, &out, &err);
    ck_err_release(&err);
    json_decref(config);
    json_decref(live);
    if (r < 0)
        return r;
    *ret = out;
    return 0;
}

/* kubectl's server-side apply over an object client-side apply made: the conflicts it forces. */
static int apply_upgrade(json_t **ret)
{
    json_t *live = NULL;
    int r = track_updates(&live);
    if (r < 0)
        return r;
    building_input = true;
    json_t *last = json_pack("{s:s}", "kubectl.kubernetes.io/last-applied-configuration",
                             "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
                             "{\"name\":\"web\"},\"spec\":{\"replicas\":3}}");
    json_object_set_new(json_object_get(live, "metadata"), "annotations", last);
    json_t *config = load("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
                          "\"name\":\"web\"},\"spec\":{\"replicas\":4}}");
    building_input = false;
    struct ck_field_manager who = {"kubectl", NULL, 3000};
    struct ck_err err = {0};
    json_t *out = NULL;
    r = ck_apply(schemas, deployments(), live, config, &who, false, &out, &err);
    ck_err_release(&err);
    json_decref(config);
    json_decref(live);
    if (r < 0)
        return r;
    *ret = out;
    return 0;
}

/* ---- the tests ----------------------------------------------------------- */

static void test_reading_json(void **state)
{
    (void)state;
    faultsim("ck_json_loadb", load_body);
}

static void test_decode_and_defaults(void **state)
{
    (void)state;
    faultsim("ck_schema_decode", decode);
    faultsim("ck_schema_default + ck_kind_default", defaults);
    faultsim("ck_meta_prepare_update", prepare_update);
    faultsim("a namespace's prepare_for_create, defaults, prepare_for_delete", namespace_hooks);
}

static void test_patches(void **state)
{
    (void)state;
    faultsim("ck_merge_patch", merge_patch);
    faultsim("ck_json_patch", json_patch);
    faultsim("ck_strategic_merge_patch", strategic_patch);
}

static void test_tables_and_discovery(void **state)
{
    (void)state;
    faultsim("ck_table_build", table);
    faultsim("ck_discovery_resources", discovery);
    faultsim("ck_discovery_api_groups", groups);
    faultsim("ck_openapi_document", openapi);
}

static void test_managed_fields(void **state)
{
    (void)state;
    faultsim("ck_managed_fields_track_update", track_updates);
    faultsim("ck_apply", apply);
    faultsim("ck_apply upgrading from client-side apply", apply_upgrade);
}

static void test_validation(void **state)
{
    (void)state;
    faultsim("ck_schema_validate + ck_meta_validate", validation);
    faultsim("ck_label_selector_parse + ck_label_selector_string", label_selector);
    faultsim("ck_crd_rules_new + ck_crd_rules_validate", crd_rules);
}

static int setup(void **state)
{
    (void)state;
    struct ck_err err = {0};
    if (ck_api_builtin_schemas(&schemas, &err) < 0)
        return -1;
    json_t *obj = NULL;
    if (decode(&obj) < 0)
        return -1;
    ck_schema_default(schemas, "io.k8s.api.apps.v1.Deployment", obj);
    ck_kind_default(deployments(), obj);
    deployment = obj;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(deployment);
    ck_schemas_free(schemas);
    return 0;
}

int main(void)
{
    /* before anything uses jansson: every allocation of theirs can fail */
    json_set_alloc_funcs(hooked_malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reading_json), cmocka_unit_test(test_decode_and_defaults),
        cmocka_unit_test(test_patches),      cmocka_unit_test(test_tables_and_discovery),
        cmocka_unit_test(test_validation),   cmocka_unit_test(test_managed_fields),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
