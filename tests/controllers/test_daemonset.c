/*
 * test_daemonset.c - the DaemonSet controller's decisions on the fake client, caches the
 * test fills and a fake clock, as kubernetes' daemon_controller_test.go and update_test.go
 * drive syncDaemonSet with fake informers and the fake clientset:
 *   - the node predicate on a table of nodes (selector, affinity, taints, the tolerations
 *     daemon pods get, hostNetwork, the template's nodeName);
 *   - placement: one pod per eligible node, each with the matchFields affinity, labels
 *     and tolerations; expectations hold back a second round; slow start stops at a
 *     failed batch;
 *   - nodes changing: misscheduled pods deleted, NoSchedule taints keep a pod, NoExecute
 *     ones do not, unscheduled pods for gone nodes deleted, extra pods pruned;
 *   - updates: RollingUpdate with maxUnavailable / maxSurge (a table), surge completion,
 *     OnDelete; failed pods replaced with back-off;
 *   - history: the first revision, the limit, a rollback renumbering;
 *   - the status counts.
 */
#include "cktest.h"

#include "ckube/daemonset.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

/* 2026-01-02T00:00:00Z: a day after the fixtures' pods became Ready. */
#define NOW (INT64_C(1767312000) * CK_SEC)

struct env {
    struct fx_cache pods, nodes, sets, revisions;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_clock *clock;
    struct ck_ds_controller *dc;
    const struct ck_resource *sets_res, *revisions_res;
    char hash[64]; /* the current revision's, after settle() */
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->nodes);
    fx_cache_init(&e->sets);
    fx_cache_init(&e->revisions);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->clock = ck_fake_clock_new(NOW);
    struct ck_ds_controller_deps deps = {.client = &e->client,
                                         .pods = &e->pods.lister,
                                         .nodes = &e->nodes.lister,
                                         .daemonsets = &e->sets.lister,
                                         .revisions = &e->revisions.lister,
                                         .clock = e->clock};
    assert_int_equal(ck_ds_controller_new_with(&deps, &e->dc, NULL), 0);
    e->sets_res = ck_controller_resource("apps", "v1", "daemonsets");
    e->revisions_res = ck_controller_resource("apps", "v1", "controllerrevisions");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_ds_controller_free(e->dc);
    ck_fake_client_free(e->fc);
    ck_fake_clock_free(e->clock);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->nodes);
    fx_cache_release(&e->sets);
    fx_cache_release(&e->revisions);
    free(e);
    return 0;
}

/* A DaemonSet "agent" of app=agent, template generation 1, RollingUpdate 1/0. */
static json_t *new_ds(void)
{
    json_t *ds = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i, s:{s:s}}, s:{s:{s:{s:s}}, s:{s:{s:{s:s}}, "
        "s:{s:[{s:s, s:s}]}}, s:{s:s, s:{s:i, s:i}}, s:i}}",
        "apiVersion", "apps/v1", "kind", "DaemonSet", "metadata", "name", "agent", "namespace",
        "ns", "uid", "ds-uid", "resourceVersion", "1", "generation", 1, "annotations",
        CK_DS_TEMPLATE_GENERATION_ANNOTATION, "1", "spec", "selector", "matchLabels", "app",
        "agent", "template", "metadata", "labels", "app", "agent", "spec", "containers", "name",
        "c", "image", "agent:1", "updateStrategy", "type", "RollingUpdate", "rollingUpdate",
        "maxUnavailable", 1, "maxSurge", 0, "revisionHistoryLimit", 10);
    assert_non_null(ds);
    return ds;
}

static json_t *tmpl_spec(json_t *ds)
{
    return json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec");
}

/* Adds ds to the cache and the fake; returns it (borrowed: the cache holds it). */
static const json_t *add_ds(struct env *e, json_t *ds)
{
    assert_int_equal(ck_fake_client_seed(e->fc, e->sets_res, ds), 0);
    fx_cache_add(&e->sets, ds);
    return ds;
}

/* A node with labels (a JSON object, taken) and taints (a JSON array, taken, or NULL). */
static json_t *new_node(const char *name, json_t *labels, json_t *taints)
{
    json_t *node = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{}}", "apiVersion", "v1", "kind",
                             "Node", "metadata", "name", name, "uid", name, "labels",
                             labels ? labels : json_object(), "spec");
    if (taints)
        json_object_set_new(json_object_get(node, "spec"), "taints", taints);
    return node;
}

static void add_node(struct env *e, const char *name, json_t *labels, json_t *taints)
{
    fx_cache_add(&e->nodes, new_node(name, labels, taints));
}

/* A pod of ds on node (bound), with the hash label, Ready since `since` unless NULL. */
static json_t *add_pod(struct env *e, const json_t *ds, const char *name, const char *node,
                       const char *hash, const char *since, const char *created)
{
    json_t *pod = fx_pod("ns", name, "agent", NULL);
    json_t *meta = json_object_get(pod, "metadata");
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[o]", ck_controller_ref_new(ds, "apps/v1", "DaemonSet")));
    json_object_set_new(json_object_get(meta, "labels"), "controller-revision-hash",
                        json_string(hash));
    if (created)
        json_object_set_new(meta, "creationTimestamp", json_string(created));
    fx_pod_running(pod, node, since);
    /* on the server too, so that deleting it succeeds and is awaited */
    assert_int_equal(ck_fake_client_seed(e->fc, ck_controller_resource("", "v1", "pods"), pod), 0);
    fx_cache_add(&e->pods, pod);
    return pod;
}

static int sync_ds(struct env *e)
{
    struct ck_err err = {0};
    int r = ck_ds_controller_sync(e->dc, "ns/agent", &err);
    ck_err_release(&err);
    return r;
}

/*
 * A first sync with no nodes: the controller records the revision, which goes into the
 * cache as the informer would bring it; e->hash gets its hash. Actions are forgotten.
 */
static void settle(struct env *e)
{
    assert_int_equal(sync_ds(e), 0);
    const struct ck_fake_action *rev = fx_action(e->fc, "create", "controllerrevisions", 0);
    assert_non_null(rev);
    json_t *copy = json_deep_copy(rev->body);
    json_object_set_new(json_object_get(copy, "metadata"), "uid", json_string("rev-uid"));
    snprintf(e->hash, sizeof(e->hash), "%s",
             json_string_value(
                 json_object_get(json_object_get(json_object_get(copy, "metadata"), "labels"),
                                 "controller-revision-hash")));
    fx_cache_add(&e->revisions, copy);
    ck_fake_client_clear_actions(e->fc);
}

static size_t count(struct env *e, const char *verb, const char *resource)
{
    size_t n = 0;
    while (fx_action(e->fc, verb, resource, n))
        n++;
    return n;
}

/* The sync deleted one pod, name. */
static void assert_deleted_only(struct env *e, const char *name)
{
    assert_int_equal(count(e, "delete", "pods"), 1);
    assert_string_equal(fx_action(e->fc, "delete", "pods", 0)->name, name);
}

/* The node a created pod's matchFields affinity names. */
static const char *affinity_node(const json_t *pod)
{
    const json_t *term = json_array_get(
        json_object_get(
            json_object_get(
                json_object_get(json_object_get(json_object_get(pod, "spec"), "affinity"),
                                "nodeAffinity"),
                "requiredDuringSchedulingIgnoredDuringExecution"),
            "nodeSelectorTerms"),
        0);
    const json_t *req = json_array_get(json_object_get(term, "matchFields"), 0);
    assert_string_equal(json_string_value(json_object_get(req, "key")), "metadata.name");
    assert_string_equal(json_string_value(json_object_get(req, "operator")), "In");
    return json_string_value(json_array_get(json_object_get(req, "values"), 0));
}

/* The last status the controller wrote. */
static const json_t *last_status(struct env *e)
{
    const json_t *status = NULL;
    for (size_t i = 0; fx_action(e->fc, "update-status", "daemonsets", i); i++)
        status =
            json_object_get(fx_action(e->fc, "update-status", "daemonsets", i)->body, "status");
    assert_non_null(status);
    return status;
}

static long long status_int(const json_t *status, const char *field)
{
    return (long long)json_integer_value(json_object_get(status, field));
}

/* ---- the node predicate -------------------------------------------------------- */

static void test_node_should_run_table(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        const char *node_labels; /* JSON */
        const char *node_taints; /* JSON or NULL */
        const char *tmpl_patch;  /* JSON merged into the template spec, or NULL */
        bool run, cont;
    } cases[] = {
        {"no constraints", "{}", NULL, NULL, true, true},
        {"selector matches", "{\"disk\":\"ssd\"}", NULL, "{\"nodeSelector\":{\"disk\":\"ssd\"}}",
         true, true},
        {"selector does not match", "{\"disk\":\"hdd\"}", NULL,
         "{\"nodeSelector\":{\"disk\":\"ssd\"}}", false, false},
        {"required affinity matches", "{\"zone\":\"a\"}", NULL,
         "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
         "\"values\":[\"a\",\"b\"]}]}]}}}}",
         true, true},
        {"required affinity does not match", "{\"zone\":\"c\"}", NULL,
         "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
         "\"values\":[\"a\",\"b\"]}]}]}}}}",
         false, false},
        {"other nodeName", "{}", NULL, "{\"nodeName\":\"elsewhere\"}", false, false},
        {"own nodeName", "{}", NULL, "{\"nodeName\":\"n1\"}", true, true},
        {"untolerated NoSchedule: stays, not created", "{}",
         "[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]", NULL, false, true},
        {"untolerated NoExecute: goes", "{}",
         "[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoExecute\"}]", NULL, false, false},
        {"tolerated NoExecute", "{}",
         "[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoExecute\"}]",
         "{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"db\"}]}",
         true, true},
        {"PreferNoSchedule ignored", "{}",
         "[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"PreferNoSchedule\"}]", NULL, true,
         true},
        {"not-ready is tolerated", "{}",
         "[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"}]", NULL, true, true},
        {"unreachable is tolerated", "{}",
         "[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}]", NULL, true,
         true},
        {"unschedulable is tolerated", "{}",
         "[{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}]", NULL, true,
         true},
        {"memory-pressure is tolerated", "{}",
         "[{\"key\":\"node.kubernetes.io/memory-pressure\",\"effect\":\"NoSchedule\"}]", NULL, true,
         true},
        {"network-unavailable without hostNetwork", "{}",
         "[{\"key\":\"node.kubernetes.io/network-unavailable\",\"effect\":\"NoSchedule\"}]", NULL,
         false, true},
        {"network-unavailable with hostNetwork", "{}",
         "[{\"key\":\"node.kubernetes.io/network-unavailable\",\"effect\":\"NoSchedule\"}]",
         "{\"hostNetwork\":true}", true, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *ds = new_ds();
        if (cases[i].tmpl_patch) {
            json_t *patch = json_loads(cases[i].tmpl_patch, 0, NULL);
            assert_non_null(patch);
            json_object_update(tmpl_spec(ds), patch);
            json_decref(patch);
        }
        json_t *node =
            new_node("n1", json_loads(cases[i].node_labels, 0, NULL),
                     cases[i].node_taints ? json_loads(cases[i].node_taints, 0, NULL) : NULL);
        bool run, cont;
        ck_ds_node_should_run(node, ds, &run, &cont);
        if (run != cases[i].run || cont != cases[i].cont)
            fail_msg("%s: got run=%d continue=%d", cases[i].what, run, cont);
        json_decref(node);
        json_decref(ds);
    }
}

static void test_daemon_tolerations_added_once(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:b, s:[{s:s, s:s, s:s, s:i}]}", "hostNetwork", 1, "tolerations",
                             "key", "node.kubernetes.io/not-ready", "operator", "Exists", "effect",
                             "NoExecute", "tolerationSeconds", 300);
    assert_int_equal(ck_ds_add_daemon_tolerations(spec), 0);
    assert_int_equal(ck_ds_add_daemon_tolerations(spec), 0);
    const json_t *list = json_object_get(spec, "tolerations");
    assert_int_equal(json_array_size(list), 7); /* six always, network-unavailable */
    /* the user's not-ready toleration is replaced by the daemon one, without seconds */
    assert_null(json_object_get(json_array_get(list, 0), "tolerationSeconds"));
    json_decref(spec);
}

/* ---- placement ------------------------------------------------------------------- */

static void test_creates_one_pod_per_eligible_node(void **state)
{
    struct env *e = *state;
    json_t *ds = new_ds();
    json_object_set_new(tmpl_spec(ds), "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
    add_ds(e, ds);
    settle(e);
    add_node(e, "n1", json_pack("{s:s}", "disk", "ssd"), NULL);
    add_node(e, "n2", json_pack("{s:s}", "disk", "ssd"), NULL);
    add_node(e, "n3", json_pack("{s:s}", "disk", "hdd"), NULL);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "pods"), 2);
    bool seen[2] = {false, false};
    for (size_t i = 0; i < 2; i++) {
        const json_t *pod = fx_action(e->fc, "create", "pods", i)->body;
        const char *node = affinity_node(pod);
        assert_true(strcmp(node, "n1") == 0 || strcmp(node, "n2") == 0);
        seen[node[1] - '1'] = true;
        const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "pod-template-generation")),
                            "1");
        assert_string_equal(json_string_value(json_object_get(labels, "controller-revision-hash")),
                            e->hash);
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(pod, "spec"), "tolerations")), 6);
        assert_null(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const json_t *ref =
            json_array_get(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), 0);
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "DaemonSet");
    }
    assert_true(seen[0] && seen[1]);
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "desiredNumberScheduled"), 2);
    assert_int_equal(status_int(status, "currentNumberScheduled"), 0);
    assert_int_equal(status_int(status, "numberUnavailable"), 2);
    /* the informer has not seen the pods: a second sync creates nothing more */
    ck_fake_client_clear_actions(e->fc);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "pods"), 0);
}

static void test_first_sync_records_revision(void **state)
{
    struct env *e = *state;
    add_ds(e, new_ds());
    assert_int_equal(sync_ds(e), 0);
    const struct ck_fake_action *rev = fx_action(e->fc, "create", "controllerrevisions", 0);
    assert_non_null(rev);
    assert_int_equal(json_integer_value(json_object_get(rev->body, "revision")), 1);
    const json_t *tmpl =
        json_object_get(json_object_get(json_object_get(rev->body, "data"), "spec"), "template");
    assert_string_equal(json_string_value(json_object_get(tmpl, "$patch")), "replace");
    const char *hash = json_string_value(
        json_object_get(json_object_get(json_object_get(rev->body, "metadata"), "labels"),
                        "controller-revision-hash"));
    char want[128];
    snprintf(want, sizeof(want), "agent-%s", hash);
    assert_string_equal(fx_meta(rev->body, "name"), want);
}

static void test_create_failure_stops_slow_start(void **state)
{
    struct env *e = *state;
    add_ds(e, new_ds());
    settle(e);
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        add_node(e, name, NULL, NULL);
    }
    ck_fake_client_fail(e->fc, "create", ck_controller_resource("", "v1", "pods"), -1, CK_EIO,
                        "boom");
    assert_int_not_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "pods"), 1); /* the first batch of one failed */
    /* the failed and skipped creations are no longer expected */
    assert_true(ck_expectations_satisfied(ck_ds_controller_expectations(e->dc), "ns/agent"));
}

/* ---- nodes changing -------------------------------------------------------------- */

static void test_node_label_change_deletes_misscheduled_pod(void **state)
{
    struct env *e = *state;
    json_t *ds = new_ds();
    json_object_set_new(tmpl_spec(ds), "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
    const json_t *d = add_ds(e, ds);
    settle(e);
    add_node(e, "n1", json_pack("{s:s}", "disk", "ssd"), NULL);
    add_node(e, "n2", json_pack("{s:s}", "disk", "hdd"), NULL); /* was ssd */
    add_pod(e, d, "agent-a", "n1", e->hash, "2026-01-01T00:00:00Z", NULL);
    add_pod(e, d, "agent-b", "n2", e->hash, "2026-01-01T00:00:00Z", NULL);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "pods"), 0);
    assert_deleted_only(e, "agent-b");
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "numberMisscheduled"), 1);
    assert_int_equal(status_int(status, "desiredNumberScheduled"), 1);
}

static void test_taints_noschedule_keeps_noexecute_evicts(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, json_pack("[{s:s, s:s}]", "key", "dedicated", "effect", "NoSchedule"));
    add_node(e, "n2", NULL, json_pack("[{s:s, s:s}]", "key", "dedicated", "effect", "NoExecute"));
    add_node(e, "n3", NULL, json_pack("[{s:s, s:s}]", "key", "dedicated", "effect", "NoSchedule"));
    add_pod(e, d, "agent-a", "n1", e->hash, "2026-01-01T00:00:00Z", NULL);
    add_pod(e, d, "agent-b", "n2", e->hash, "2026-01-01T00:00:00Z", NULL);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "pods"), 0); /* not on n3 */
    assert_deleted_only(e, "agent-b");
}

static void test_unscheduled_pod_for_gone_node_deleted(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, NULL);
    add_pod(e, d, "agent-a", "n1", e->hash, "2026-01-01T00:00:00Z", NULL);
    json_t *pending = add_pod(e, d, "agent-gone", NULL, e->hash, NULL, NULL);
    json_object_set_new(json_object_get(pending, "spec"), "affinity",
                        json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}", "nodeAffinity",
                                  "requiredDuringSchedulingIgnoredDuringExecution",
                                  "nodeSelectorTerms", "matchFields", "key", "metadata.name",
                                  "operator", "In", "values", "n9"));
    assert_int_equal(sync_ds(e), 0);
    assert_deleted_only(e, "agent-gone");
}

static void test_extra_pods_on_node_keep_oldest(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, NULL);
    add_pod(e, d, "agent-new", "n1", e->hash, "2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z");
    add_pod(e, d, "agent-old", "n1", e->hash, "2026-01-01T00:00:00Z", "2026-01-01T09:00:00Z");
    assert_int_equal(sync_ds(e), 0);
    assert_deleted_only(e, "agent-new");
}

static void test_failed_pod_replaced_with_backoff(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, NULL);
    json_t *pod = add_pod(e, d, "agent-a", "n1", e->hash, NULL, NULL);
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Failed"));
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 1);
    assert_non_null(fx_action(e->fc, "create", "events", 0)); /* FailedDaemonPod */
    /* the replacement failed at once: within the back-off it is left alone */
    ck_expectations_delete(ck_ds_controller_expectations(e->dc), "ns/agent");
    ck_fake_client_clear_actions(e->fc);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 0);
    /* the first back-off is a second */
    ck_fake_clock_step(e->clock, 2 * CK_SEC);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 1);
    /* the second is two: one second later it still holds */
    ck_expectations_delete(ck_ds_controller_expectations(e->dc), "ns/agent");
    ck_fake_client_clear_actions(e->fc);
    ck_fake_clock_step(e->clock, 1 * CK_SEC);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 0);
}

/* ---- updates --------------------------------------------------------------------- */

/* ds at template generation 2 (image agent:2), three nodes with old available pods. */
static const json_t *rollout_world(struct env *e, json_t *max_unavailable, json_t *max_surge,
                                   const char *type)
{
    json_t *ds = new_ds();
    json_object_set_new(json_object_get(ds, "metadata"), "annotations",
                        json_pack("{s:s}", CK_DS_TEMPLATE_GENERATION_ANNOTATION, "2"));
    json_object_set_new(json_array_get(json_object_get(tmpl_spec(ds), "containers"), 0), "image",
                        json_string("agent:2"));
    json_t *strategy = json_object_get(json_object_get(ds, "spec"), "updateStrategy");
    json_object_set_new(strategy, "type", json_string(type));
    if (strcmp(type, "RollingUpdate") != 0)
        json_object_del(strategy, "rollingUpdate");
    else
        json_object_set_new(
            strategy, "rollingUpdate",
            json_pack("{s:o, s:o}", "maxUnavailable", max_unavailable, "maxSurge", max_surge));
    const json_t *d = add_ds(e, ds);
    settle(e);
    for (int i = 0; i < 3; i++) {
        char node[8], pod[16];
        snprintf(node, sizeof(node), "n%d", i);
        snprintf(pod, sizeof(pod), "agent-old%d", i);
        add_node(e, node, NULL, NULL);
        add_pod(e, d, pod, node, "oldhash", "2026-01-01T00:00:00Z", NULL);
    }
    return d;
}

static void test_rolling_update_table(void **state)
{
    struct env *e = *state;
    static const struct {
        const char *max_unavailable, *max_surge; /* JSON */
        size_t deletes, creates;
    } cases[] =
        {
            {"1", "0", 1, 0},       {"2", "0", 2, 0}, {"\"50%\"", "0", 2, 0},
            {"\"10%\"", "0", 1, 0}, {"0", "1", 0, 1}, {"0", "\"100%\"", 0, 3},
            {"0", "0", 1, 0}, /* neither: one unavailable node is allowed */
        };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        teardown(state);
        setup(state);
        e = *state;
        rollout_world(e, json_loads(cases[i].max_unavailable, JSON_DECODE_ANY, NULL),
                      json_loads(cases[i].max_surge, JSON_DECODE_ANY, NULL), "RollingUpdate");
        assert_int_equal(sync_ds(e), 0);
        if (count(e, "delete", "pods") != cases[i].deletes ||
            count(e, "create", "pods") != cases[i].creates)
            fail_msg("maxUnavailable %s maxSurge %s: %zu deletes, %zu creates",
                     cases[i].max_unavailable, cases[i].max_surge, count(e, "delete", "pods"),
                     count(e, "create", "pods"));
        for (size_t k = 0; k < cases[i].creates; k++) {
            const json_t *pod = fx_action(e->fc, "create", "pods", k)->body;
            const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
            assert_string_equal(
                json_string_value(json_object_get(labels, "pod-template-generation")), "2");
        }
    }
}

static void test_rolling_update_replaces_unavailable_old_pod_at_once(void **state)
{
    struct env *e = *state;
    const json_t *d = rollout_world(e, json_integer(1), json_integer(0), "RollingUpdate");
    (void)d;
    /* one node's old pod is not ready: it takes the one node maxUnavailable allows */
    const json_t *p = NULL;
    assert_int_equal(ck_lister_get(&e->pods.lister, "ns", "agent-old1", &p), 0);
    json_object_del((json_t *)json_object_get(p, "status"), "conditions");
    ck_cached_unref(p);
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 1); /* the unavailable one uses the budget */
    assert_string_equal(fx_action(e->fc, "delete", "pods", 0)->name, "agent-old1");
}

static void test_surge_deletes_old_pod_once_new_is_available(void **state)
{
    struct env *e = *state;
    const json_t *d = rollout_world(e, json_integer(0), json_integer(1), "RollingUpdate");
    add_pod(e, d, "agent-new0", "n0", e->hash, "2026-01-01T00:00:00Z", "2026-01-01T12:00:00Z");
    assert_int_equal(sync_ds(e), 0);
    /* the manage step deletes the old pod beside an available new one */
    assert_deleted_only(e, "agent-old0");
    assert_int_equal(count(e, "create", "pods"), 0); /* the update waits for that delete */
}

static void test_surge_keeps_old_pod_until_new_is_available(void **state)
{
    struct env *e = *state;
    const json_t *d = rollout_world(e, json_integer(0), json_integer(1), "RollingUpdate");
    add_pod(e, d, "agent-new0", "n0", e->hash, NULL, "2026-01-01T12:00:00Z"); /* not ready */
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 0);
    /* maxSurge 1 is in use on n0: no other node gets a new pod yet */
    assert_int_equal(count(e, "create", "pods"), 0);
}

static void test_succeeded_pod_deleted(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, NULL);
    json_t *pod = add_pod(e, d, "agent-a", "n1", e->hash, NULL, NULL);
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 1);
}

static void test_on_delete_leaves_old_pods(void **state)
{
    struct env *e = *state;
    rollout_world(e, NULL, NULL, "OnDelete");
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "pods"), 0);
    assert_int_equal(count(e, "create", "pods"), 0);
    const json_t *status = last_status(e);
    assert_null(json_object_get(status, "updatedNumberScheduled")); /* omitempty */
    assert_int_equal(status_int(status, "numberAvailable"), 3);
}

/* ---- history ---------------------------------------------------------------------- */

/* A revision of the DaemonSet with the given number, hash and image in its template. */
static void add_revision(struct env *e, const json_t *ds, long long number, const char *hash,
                         const char *image)
{
    json_t *tmpl = json_deep_copy(json_object_get(json_object_get(ds, "spec"), "template"));
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(tmpl, "spec"), "containers"), 0), "image",
        json_string(image));
    json_object_set_new(tmpl, "$patch", json_string("replace"));
    char name[64];
    snprintf(name, sizeof(name), "agent-%s", hash);
    json_t *rev = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[o]}, "
                            "s:{s:{s:o}}, s:I}",
                            "apiVersion", "apps/v1", "kind", "ControllerRevision", "metadata",
                            "name", name, "namespace", "ns", "uid", name, "resourceVersion", "1",
                            "labels", "app", "agent", "controller-revision-hash", hash,
                            "ownerReferences", ck_controller_ref_new(ds, "apps/v1", "DaemonSet"),
                            "data", "spec", "template", tmpl, "revision", (json_int_t)number);
    assert_int_equal(ck_fake_client_seed(e->fc, e->revisions_res, rev), 0);
    fx_cache_add(&e->revisions, rev);
}

static void test_history_limit_deletes_oldest_unused(void **state)
{
    struct env *e = *state;
    json_t *ds = new_ds();
    json_object_set_new(json_object_get(ds, "spec"), "revisionHistoryLimit", json_integer(1));
    const json_t *d = add_ds(e, ds);
    settle(e); /* the current revision: number 1 */
    add_revision(e, d, 2, "h2", "agent:0.2");
    add_revision(e, d, 3, "h3", "agent:0.3");
    add_revision(e, d, 4, "h4", "agent:0.4");
    add_node(e, "n1", NULL, NULL);
    add_pod(e, d, "agent-a", "n1", "h2", "2026-01-01T00:00:00Z", NULL); /* h2 is in use */
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "delete", "controllerrevisions"), 2);
    assert_string_equal(fx_action(e->fc, "delete", "controllerrevisions", 0)->name, "agent-h3");
    /* and the current one is renumbered above the old ones */
    const struct ck_fake_action *up = fx_action(e->fc, "update", "controllerrevisions", 0);
    assert_non_null(up);
    assert_int_equal(json_integer_value(json_object_get(up->body, "revision")), 5);
}

static void test_rollback_renumbers_matching_revision(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    add_revision(e, d, 1, "h1", "agent:1"); /* the DaemonSet's template again */
    add_revision(e, d, 2, "h2", "agent:2");
    assert_int_equal(sync_ds(e), 0);
    assert_int_equal(count(e, "create", "controllerrevisions"), 0);
    const struct ck_fake_action *up = fx_action(e->fc, "update", "controllerrevisions", 0);
    assert_non_null(up);
    assert_string_equal(up->name, "agent-h1");
    assert_int_equal(json_integer_value(json_object_get(up->body, "revision")), 3);
}

static void test_duplicate_current_revisions_keep_newest(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    add_revision(e, d, 1, "h1", "agent:1"); /* both hold the DaemonSet's template */
    add_revision(e, d, 2, "h2", "agent:1");
    add_node(e, "n1", NULL, NULL);
    add_pod(e, d, "agent-a", "n1", "h1", "2026-01-01T00:00:00Z", NULL);
    assert_int_equal(sync_ds(e), 0);
    const struct ck_fake_action *relabel = fx_action(e->fc, "patch", "pods", 0);
    assert_non_null(relabel);
    assert_string_equal(relabel->name, "agent-a");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(relabel->body, "metadata"), "labels"),
                            "controller-revision-hash")),
                        "h2");
    assert_int_equal(count(e, "delete", "controllerrevisions"), 1);
    assert_string_equal(fx_action(e->fc, "delete", "controllerrevisions", 0)->name, "agent-h1");
}

/* ---- status ----------------------------------------------------------------------- */

static void test_status_counts(void **state)
{
    struct env *e = *state;
    json_t *ds = new_ds();
    json_object_set_new(tmpl_spec(ds), "nodeSelector", json_pack("{s:s}", "role", "agent"));
    json_object_set_new(json_object_get(ds, "spec"), "minReadySeconds", json_integer(60));
    const json_t *d = add_ds(e, ds);
    settle(e);
    for (int i = 1; i <= 4; i++) {
        char node[8];
        snprintf(node, sizeof(node), "n%d", i);
        add_node(e, node, json_pack("{s:s}", "role", i < 4 ? "agent" : "other"), NULL);
    }
    add_pod(e, d, "agent-p1", "n1", e->hash, "2026-01-01T00:00:00Z", NULL);   /* available */
    add_pod(e, d, "agent-p2", "n2", "oldhash", "2026-01-01T23:59:30Z", NULL); /* ready 30 s */
    add_pod(e, d, "agent-p4", "n4", e->hash, "2026-01-01T00:00:00Z", NULL);   /* misscheduled */
    assert_int_equal(sync_ds(e), 0);
    const json_t *status = last_status(e);
    assert_int_equal(status_int(status, "desiredNumberScheduled"), 3);
    assert_int_equal(status_int(status, "currentNumberScheduled"), 2);
    assert_int_equal(status_int(status, "numberReady"), 2);
    assert_int_equal(status_int(status, "numberAvailable"), 1);
    assert_int_equal(status_int(status, "numberUnavailable"), 2);
    assert_int_equal(status_int(status, "updatedNumberScheduled"), 1);
    assert_int_equal(status_int(status, "numberMisscheduled"), 1);
    assert_int_equal(status_int(status, "observedGeneration"), 1);
}

/* ---- handlers ------------------------------------------------------------------------ */

static void test_node_handlers_enqueue_affected_daemonsets(void **state)
{
    struct env *e = *state;
    json_t *ds = new_ds();
    json_object_set_new(tmpl_spec(ds), "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
    add_ds(e, ds);
    struct ck_event_handler h_ds, h_pods, h_nodes, h_revs;
    ck_ds_controller_handlers(e->dc, &h_ds, &h_pods, &h_nodes, &h_revs);
    struct ck_wq *q = ck_ds_controller_queue(e->dc);
    json_t *hdd = new_node("n1", json_pack("{s:s}", "disk", "hdd"), NULL);
    json_t *ssd = new_node("n1", json_pack("{s:s}", "disk", "ssd"), NULL);
    json_object_set_new(json_object_get(ssd, "metadata"), "resourceVersion", json_string("2"));
    h_nodes.on_add(hdd, false, h_nodes.arg);
    assert_int_equal(ck_wq_len(q), 0); /* the DaemonSet does not want it */
    h_nodes.on_update(hdd, ssd, h_nodes.arg);
    assert_int_equal(ck_wq_len(q), 1); /* now it does */
    json_decref(hdd);
    json_decref(ssd);
}

static void test_pod_events_observe_expectations(void **state)
{
    struct env *e = *state;
    const json_t *d = add_ds(e, new_ds());
    settle(e);
    add_node(e, "n1", NULL, NULL);
    add_node(e, "n2", NULL, NULL);
    assert_int_equal(sync_ds(e), 0);
    struct ck_expectations *exp = ck_ds_controller_expectations(e->dc);
    assert_false(ck_expectations_satisfied(exp, "ns/agent"));
    struct ck_event_handler h_ds, h_pods, h_nodes, h_revs;
    ck_ds_controller_handlers(e->dc, &h_ds, &h_pods, &h_nodes, &h_revs);
    /* the informer brings the two pods the sync created */
    for (size_t i = 0; i < 2; i++)
        h_pods.on_add(fx_action(e->fc, "create", "pods", i)->body, false, h_pods.arg);
    assert_true(ck_expectations_satisfied(exp, "ns/agent"));
    assert_int_equal(ck_wq_len(ck_ds_controller_queue(e->dc)), 1);
    /* a delete seen first as a deletionTimestamp, then as the delete, counts once */
    ck_expectations_set(exp, "ns/agent", 0, 2);
    json_t *pod = add_pod(e, d, "agent-x", "n1", e->hash, NULL, NULL);
    json_t *going = json_deep_copy(pod);
    json_object_set_new(json_object_get(going, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T00:00:00Z"));
    json_object_set_new(json_object_get(going, "metadata"), "resourceVersion", json_string("2"));
    h_pods.on_update(pod, going, h_pods.arg);
    h_pods.on_delete(going, NULL, h_pods.arg);
    int64_t adds = 0, dels = 0;
    assert_int_equal(ck_expectations_get(exp, "ns/agent", &adds, &dels), 0);
    assert_int_equal(dels, 1);
    json_decref(going);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_should_run_table),
        cmocka_unit_test(test_daemon_tolerations_added_once),
        cmocka_unit_test_setup_teardown(test_creates_one_pod_per_eligible_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_sync_records_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_failure_stops_slow_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_label_change_deletes_misscheduled_pod, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_taints_noschedule_keeps_noexecute_evicts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unscheduled_pod_for_gone_node_deleted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_extra_pods_on_node_keep_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_pod_replaced_with_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rolling_update_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rolling_update_replaces_unavailable_old_pod_at_once,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_surge_deletes_old_pod_once_new_is_available, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_surge_keeps_old_pod_until_new_is_available, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_succeeded_pod_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_on_delete_leaves_old_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_limit_deletes_oldest_unused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_renumbers_matching_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_current_revisions_keep_newest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_status_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_events_observe_expectations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_handlers_enqueue_affected_daemonsets, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
