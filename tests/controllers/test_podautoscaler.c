/*
 * test_podautoscaler.c - the horizontal pod autoscaler on fakes (kubernetes
 * pkg/controller/podautoscaler replica_calculator_test.go and horizontal_test.go):
 * the replica calculation (scale up and down, the tolerance, unready, pending,
 * failed and missing pods, raw values, Kubernetes' errors), and the controller's sync
 * over a fake client, fake scale and metrics sources and a fake clock: a rescale with
 * its status, conditions and event, the scale-up limit, the min and max bounds, the
 * downscale stabilization window, behavior policies' rates, a target scaled to zero,
 * an unknown target kind, metrics that cannot be read, and no status write when
 * nothing changed; Pods, Object and External metrics read from the custom and external
 * metrics APIs (the paths and selectors asked for, value and averageValue targets, the
 * statuses, and Kubernetes' FailedGet... conditions and events).
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/podautoscaler.h"
#include "fixtures.h"

#define NOW (1800000000LL * CK_SEC) /* 2027-01-15T08:00:00Z */

/* ---- the calculation -------------------------------------------------------------- */

/* A Running pod requesting cpu (NULL: none), Ready since ready_ago seconds (<0: False). */
static json_t *calc_pod(const char *name, const char *cpu, long long ready_ago,
                        long long started_ago)
{
    char since[40], start[40];
    ck_rfc3339((NOW / CK_SEC) - (ready_ago < 0 ? -ready_ago : ready_ago), since, sizeof(since));
    ck_rfc3339((NOW / CK_SEC) - started_ago, start, sizeof(start));
    json_t *pod = fx_pod("default", name, "web", NULL);
    json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
    if (cpu)
        json_object_set_new(c, "resources", json_pack("{s:{s:s}}", "requests", "cpu", cpu));
    json_object_set_new(pod, "status",
                        json_pack("{s:s,s:s,s:[{s:s,s:s,s:s}]}", "phase", "Running", "startTime",
                                  start, "conditions", "type", "Ready", "status",
                                  ready_ago < 0 ? "False" : "True", "lastTransitionTime", since));
    return pod;
}

struct calc_case {
    int32_t current;
    int64_t target;
    bool raw;
    size_t n;
    const char *cpu[6];
    long long ready_ago[6]; /* <0: not ready since that long; 0 with phase: see phase */
    const char *phase[6];   /* NULL: Running */
    int64_t level[6];       /* milli; -1: no metric */
    int32_t want_replicas;
    int32_t want_utilization;
    int64_t want_raw;
    const char *want_err;
};

static void run_case(const struct calc_case *k)
{
    json_t *pods[6];
    struct ck_hpa_pod_metric metrics[6];
    size_t n_metrics = 0;
    char names[6][24];
    for (size_t i = 0; i < k->n; i++) {
        snprintf(names[i], sizeof(names[i]), "p%zu", i);
        /* a pod not ready yet started shortly before, within the CPU initialization period */
        long long ago = k->ready_ago[i];
        pods[i] = calc_pod(names[i], k->cpu[i], ago ? ago : 600, ago < 0 ? 10 - ago : 900);
        if (k->phase[i]) {
            json_t *st = json_object_get(pods[i], "status");
            json_object_set_new(st, "phase", json_string(k->phase[i]));
        }
        if (k->level[i] >= 0)
            metrics[n_metrics++] =
                (struct ck_hpa_pod_metric){names[i], k->level[i], NOW - CK_SEC, 30 * CK_SEC};
    }
    struct ck_hpa_calc calc = {0.1, 300 * CK_SEC, 30 * CK_SEC, NOW};
    struct ck_hpa_proposal out = {0};
    char err[256] = "";
    int r = ck_hpa_resource_replicas(&calc, k->current, k->target, k->raw, "cpu", NULL,
                                     (const json_t *const *)pods, k->n, metrics, n_metrics, &out,
                                     err, sizeof(err));
    if (k->want_err) {
        assert_int_equal(r, CK_EINVAL);
        assert_string_equal(err, k->want_err);
    } else {
        if (r != 0)
            fail_msg("unexpected error: %s", err);
        assert_int_equal(out.replicas, k->want_replicas);
        if (!k->raw)
            assert_int_equal(out.utilization, k->want_utilization);
        assert_int_equal(out.raw, k->want_raw);
        assert_int_equal(out.timestamp_ns, NOW - CK_SEC);
    }
    for (size_t i = 0; i < k->n; i++)
        json_decref(pods[i]);
}

static void run_cases(const struct calc_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        run_case(&cases[i]);
}

/*
 * One case a row: current replicas, target, raw, the number of pods, then per pod its
 * cpu request, ready_ago, phase and metric, then the replicas, utilization and raw
 * value wanted, or the error.
 */
/* clang-format off */
static void test_calc_scale_up_and_down(void **state)
{
    (void)state;
    static const struct calc_case cases[] = {
        /* 1500m of 3000m is 50% against 30%: ceil(3 x 50/30) = 5 */
        {3, 30, false, 3, {"1", "1", "1"}, {0}, {NULL}, {300, 500, 700}, 5, 50, 500, NULL},
        /* 28% against 50%: ceil(5 x 0.56) = 3 */
        {5, 50, false, 5, {"1", "1", "1", "1", "1"}, {0}, {NULL}, {100, 300, 500, 250, 250},
         3, 28, 280, NULL},
        /* 102% against 100% is within the tolerance */
        {3, 100, false, 3, {"900m", "1", "1100m"}, {0}, {NULL}, {1010, 1030, 1020},
         3, 102, 1020, NULL},
        /* a raw average value: 2000m per pod against 1000m doubles */
        {3, 1000, true, 3, {NULL}, {0}, {NULL}, {1000, 2000, 3000}, 6, 0, 2000, NULL},
    };
    run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_calc_unready_missing_and_ignored(void **state)
{
    (void)state;
    static const struct calc_case cases[] = {
        /* an unready pod counts as using nothing on a scale up: 1200m of 3000m is 40% */
        {3, 30, false, 3, {"1", "1", "1"}, {-60, 0, 0}, {NULL}, {300, 500, 700}, 4, 60, 600, NULL},
        /* so does a Pending one, which has no metric */
        {3, 30, false, 3, {"1", "1", "1"}, {0}, {"Pending", NULL, NULL}, {-1, 500, 700},
         4, 60, 600, NULL},
        /* a pod without a metric uses nothing on a scale up: 1800m of 3000m against 30% */
        {3, 30, false, 3, {"1", "1", "1"}, {0}, {NULL}, {900, 900, -1}, 6, 90, 900, NULL},
        /* and its whole request on a scale down: 1200m of 3000m against 80% */
        {3, 80, false, 3, {"1", "1", "1"}, {0}, {NULL}, {100, 100, -1}, 2, 10, 100, NULL},
        /* when counting it that way turns the direction round, nothing changes */
        {4, 50, false, 4, {"1", "1", "1", "1"}, {0}, {NULL}, {400, 95, -1, -1}, 4, 24, 247, NULL},
        /* a raw target: a missing pod on a scale down counts as using the target itself */
        {3, 1000, true, 3, {NULL}, {0}, {NULL}, {200, 200, -1}, 2, 0, 200, NULL},
        /* a Failed pod's metric is ignored: 500m of 2000m against 50% */
        {3, 50, false, 3, {"1", "1", "1"}, {0}, {NULL, NULL, "Failed"}, {250, 250, 5000},
         1, 25, 250, NULL},
    };
    run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_calc_errors(void **state)
{
    (void)state;
    static const struct calc_case cases[] = {
        {1, 50, false, 0, {NULL}, {0}, {NULL}, {0}, 0, 0, 0,
         "no pods returned by selector while calculating replica count"},
        {2, 50, false, 2, {"1", "1"}, {-10, -10}, {NULL}, {300, 300}, 0, 0, 0,
         "did not receive metrics for targeted pods (pods might be unready)"},
        {2, 50, false, 2, {"1", NULL}, {0}, {NULL}, {300, 300}, 0, 0, 0,
         "missing request for cpu in container c of Pod p1"},
    };
    run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
/* clang-format on */

/* ---- the controller ------------------------------------------------------------------- */

struct fake_sources {
    json_t *scale;   /* the Deployment's Scale */
    json_t *metrics; /* PodMetrics items */
    int updates;
    int64_t last_replicas;
    bool metrics_fail;
    json_t *values; /* what the custom or external metrics API answers; NULL: an error */
    /* the custom metrics group in the server's group list (JSON), NULL: none; "" (the
       default): v1beta2 and v1beta1, v1beta2 preferred */
    const char *custom_group;
    int group_lists; /* how often the group list was asked for */
    char path[512];  /* what it was last asked for */
    char selector[256], metric_selector[256];
};

static int fs_get_scale(void *data, const struct ck_resource *res, const char *ns, const char *name,
                        json_t **ret, struct ck_err *reterr)
{
    struct fake_sources *f = data;
    if (strcmp(res->resource, "deployments") != 0 || strcmp(name, "web") != 0)
        return ck_err_set(reterr, CK_ENOENT, "%s.apps \"%s\" not found", res->resource, name);
    (void)ns;
    *ret = json_deep_copy(f->scale);
    return 0;
}

static int fs_update_scale(void *data, const struct ck_resource *res, const char *ns,
                           const char *name, const json_t *scale, struct ck_err *reterr)
{
    struct fake_sources *f = data;
    (void)res, (void)ns, (void)name, (void)reterr;
    f->updates++;
    f->last_replicas =
        json_integer_value(json_object_get(json_object_get(scale, "spec"), "replicas"));
    return 0;
}

static int fs_pod_metrics(void *data, const char *ns, const char *selector, json_t **ret,
                          struct ck_err *reterr)
{
    struct fake_sources *f = data;
    (void)ns;
    assert_string_equal(selector, "app=web");
    if (f->metrics_fail)
        return ck_err_set(reterr, CK_ENOENT, "the server could not find the requested resource");
    *ret = json_incref(f->metrics);
    return 0;
}

static int fs_metric_values(void *data, const char *path, const char *selector, const char *msel,
                            json_t **ret, struct ck_err *reterr)
{
    struct fake_sources *f = data;
    snprintf(f->path, sizeof(f->path), "%s", path);
    snprintf(f->selector, sizeof(f->selector), "%s", selector ? selector : "");
    snprintf(f->metric_selector, sizeof(f->metric_selector), "%s", msel ? msel : "");
    if (!f->values)
        return ck_err_set(reterr, CK_ENOENT, "the server could not find the requested resource");
    *ret = json_incref(f->values);
    return 0;
}

static int fs_api_groups(void *data, json_t **ret, struct ck_err *reterr)
{
    struct fake_sources *f = data;
    f->group_lists++;
    const char *group =
        f->custom_group && !*f->custom_group
            ? "{\"name\":\"custom.metrics.k8s.io\",\"versions\":[{\"groupVersion\":"
              "\"custom.metrics.k8s.io/v1beta2\",\"version\":\"v1beta2\"},{\"groupVersion\":"
              "\"custom.metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}],"
              "\"preferredVersion\":{\"groupVersion\":\"custom.metrics.k8s.io/v1beta2\","
              "\"version\":\"v1beta2\"}}"
            : f->custom_group;
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[{\"name\":"
             "\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}]}%s%s]}",
             group ? "," : "", group ? group : "");
    *ret = json_loads(text, 0, NULL);
    return *ret ? 0 : ck_err_set(reterr, CK_EINVAL, "bad group list in the test");
}

static const struct ck_hpa_sources_ops fake_sources_ops = {
    fs_get_scale, fs_update_scale, fs_pod_metrics, fs_metric_values, fs_api_groups};

struct env {
    struct fx_cache hpas, pods;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct fake_sources fs;
    struct ck_hpa_sources sources;
    struct ck_hpa_controller *c;
    int64_t now;
};

static int64_t fake_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->hpas);
    fx_cache_init(&e->pods);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->sources = (struct ck_hpa_sources){&fake_sources_ops, &e->fs};
    e->fs.metrics = json_array();
    e->fs.custom_group = "";
    e->now = NOW;
    struct ck_hpa_controller_deps deps = {.sources = &e->sources,
                                          .client = &e->client,
                                          .hpas = &e->hpas.lister,
                                          .pods = &e->pods.lister,
                                          .now = fake_now,
                                          .now_arg = e};
    assert_int_equal(ck_hpa_controller_new_with(&deps, &e->c, NULL), 0);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_hpa_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->hpas);
    fx_cache_release(&e->pods);
    json_decref(e->fs.scale);
    json_decref(e->fs.metrics);
    json_decref(e->fs.values);
    free(e);
    return 0;
}

/* The Deployment's scale: replicas, selector app=web. */
static void set_scale(struct env *e, int replicas)
{
    json_decref(e->fs.scale);
    e->fs.scale =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:i},s:{s:i,s:s}}", "apiVersion", "autoscaling/v1",
                  "kind", "Scale", "metadata", "name", "web", "namespace", "default", "spec",
                  "replicas", replicas, "status", "replicas", replicas, "selector", "app=web");
}

/* The autoscaler web (replacing any), its spec's members from the JSON text extra. */
static void set_hpa(struct env *e, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"autoscaling/v2\",\"kind\":\"HorizontalPodAutoscaler\","
             "\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"resourceVersion\":"
             "\"1\"},\"spec\":{\"scaleTargetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":"
             "\"Deployment\",\"name\":\"web\"},\"minReplicas\":1,\"maxReplicas\":10,"
             "\"metrics\":[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":"
             "{\"type\":\"Utilization\",\"averageUtilization\":50}}}]%s%s},\"status\":{}}",
             extra ? "," : "", extra ? extra : "");
    json_t *h = json_loads(text, 0, NULL);
    assert_non_null(h);
    assert_int_equal(
        ck_fake_client_seed(
            e->fc, ck_controller_resource("autoscaling", "v2", "horizontalpodautoscalers"), h),
        0);
    fx_cache_add(&e->hpas, h);
}

/* n ready pods p0.. requesting 1 cpu, each using milli (their metrics replaced). */
static void set_pods(struct env *e, int n, int64_t milli)
{
    char ts[40];
    ck_rfc3339(e->now / CK_SEC - 1, ts, sizeof(ts));
    json_array_clear(e->fs.metrics);
    for (int i = 0; i < n; i++) {
        char name[16], usage[32];
        snprintf(name, sizeof(name), "p%d", i);
        snprintf(usage, sizeof(usage), "%lldm", (long long)milli);
        json_t *pod = calc_pod(name, "1", 3600, 7200);
        fx_cache_add(&e->pods, pod);
        json_array_append_new(
            e->fs.metrics, json_pack("{s:{s:s,s:s},s:s,s:s,s:[{s:s,s:{s:s}}]}", "metadata", "name",
                                     name, "namespace", "default", "timestamp", ts, "window",
                                     "15.5s", "containers", "name", "c", "usage", "cpu", usage));
    }
}

/* The status of the index-th update-status of the autoscaler. */
static const json_t *written(struct env *e, size_t index)
{
    const struct ck_fake_action *a =
        fx_action(e->fc, "update-status", "horizontalpodautoscalers", index);
    assert_non_null(a);
    return json_object_get(a->body, "status");
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
    fail_msg("no condition %s", type);
    return NULL;
}

static void expect_condition(const json_t *status, const char *type, const char *st,
                             const char *reason, const char *message)
{
    const json_t *c = condition(status, type);
    assert_string_equal(json_string_value(json_object_get(c, "status")), st);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), reason);
    if (message)
        assert_string_equal(json_string_value(json_object_get(c, "message")), message);
}

/* The message of the index-th event with reason, or NULL. */
static const char *event(struct env *e, const char *reason)
{
    for (size_t i = 0;; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "create", "events", i);
        if (!a)
            return NULL;
        const char *r = json_string_value(json_object_get(a->body, "reason"));
        if (r && strcmp(r, reason) == 0)
            return json_string_value(json_object_get(a->body, "message"));
    }
}

static void sync(struct env *e)
{
    assert_int_equal(ck_hpa_controller_sync(e->c, "default/web", NULL), 0);
}

/* The Deployment at replicas, with as many pods each using milli. */
static void set_target(struct env *e, int replicas, int64_t milli)
{
    set_scale(e, replicas);
    set_pods(e, replicas, milli);
}

/* set_target, the autoscaler web with extra (see set_hpa), then its first sync. */
static void start(struct env *e, int replicas, int64_t milli, const char *extra)
{
    set_target(e, replicas, milli);
    set_hpa(e, extra);
    sync(e);
}

static void test_sync_scales_up_with_status_and_event(void **state)
{
    struct env *e = *state;
    start(e, 3, 900, NULL); /* 90% against 50%: ceil(3 x 1.8) = 6 */
    assert_int_equal(e->fs.updates, 1);
    assert_int_equal(e->fs.last_replicas, 6);
    const json_t *s = written(e, 0);
    assert_int_equal(json_integer_value(json_object_get(s, "currentReplicas")), 3);
    assert_int_equal(json_integer_value(json_object_get(s, "desiredReplicas")), 6);
    assert_string_equal(json_string_value(json_object_get(s, "lastScaleTime")),
                        "2027-01-15T08:00:00Z");
    const json_t *m =
        json_object_get(json_array_get(json_object_get(s, "currentMetrics"), 0), "resource");
    assert_string_equal(json_string_value(json_object_get(m, "name")), "cpu");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(m, "current"), "averageUtilization")),
        90);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(m, "current"), "averageValue")), "900m");
    expect_condition(s, "AbleToScale", "True", "SucceededRescale",
                     "the HPA controller was able to update the target scale to 6");
    expect_condition(s, "ScalingActive", "True", "ValidMetricFound",
                     "the HPA was able to successfully calculate a replica count from cpu "
                     "resource utilization (percentage of request)");
    expect_condition(s, "ScalingLimited", "False", "DesiredWithinRange",
                     "the desired count is within the acceptable range");
    assert_string_equal(
        event(e, "SuccessfulRescale"),
        "New size: 6; reason: cpu resource utilization (percentage of request) above target");
    /* requeued after the sync period, not at once */
    assert_int_equal(ck_wq_len(ck_hpa_controller_queue(e->c)), 0);
    assert_int_equal(ck_wq_delayed_len(ck_hpa_controller_queue(e->c)), 1);
}

static void test_scale_up_limit_and_bounds(void **state)
{
    struct env *e = *state;
    start(e, 1, 9000, NULL); /* 900%: 18 pods asked for, at most max(2 x 1, 4) */
    assert_int_equal(e->fs.last_replicas, 4);
    expect_condition(written(e, 0), "ScalingLimited", "True", "ScaleUpLimit",
                     "the desired replica count is increasing faster than the maximum scale "
                     "rate");

    set_target(e, 8, 9000); /* then the maximum, 10 */
    e->now += 20 * CK_SEC;
    sync(e);
    assert_int_equal(e->fs.last_replicas, 10);
    expect_condition(written(e, 1), "ScalingLimited", "True", "TooManyReplicas",
                     "the desired replica count is more than the maximum replica count");

    /* a target above the maximum comes down to it whatever the metrics say */
    set_scale(e, 12);
    e->now += 20 * CK_SEC;
    sync(e);
    assert_int_equal(e->fs.last_replicas, 10);
    assert_string_equal(event(e, "SuccessfulRescale"),
                        "New size: 4; reason: cpu resource utilization (percentage of request) "
                        "above target");
}

static void test_min_bound_and_zero_target(void **state)
{
    struct env *e = *state;
    /* minReplicas is in the text after the default one: the later wins in jansson */
    start(e, 1, 100, "\"minReplicas\":2");
    assert_int_equal(e->fs.last_replicas, 2);
    const char *msg = event(e, "SuccessfulRescale");
    assert_non_null(msg);
    assert_string_equal(msg, "New size: 2; reason: Current number of replicas below "
                             "Spec.MinReplicas");

    /* a target scaled to zero is left alone */
    set_scale(e, 0);
    e->fs.updates = 0;
    sync(e);
    assert_int_equal(e->fs.updates, 0);
    expect_condition(written(e, 1), "ScalingActive", "False", "ScalingDisabled",
                     "scaling is disabled since the replica count of the target is zero");
}

static void test_downscale_stabilization(void **state)
{
    struct env *e = *state;
    start(e, 6, 500, NULL); /* at the target: 6 stays */
    assert_int_equal(e->fs.updates, 0);
    set_pods(e, 6, 100); /* 10%: 2 would do, but 6 was recommended within 5 minutes */
    e->now += 60 * CK_SEC;
    sync(e);
    assert_int_equal(e->fs.updates, 0);
    size_t n = ck_fake_client_count(e->fc, "update-status", NULL);
    expect_condition(written(e, n - 1), "AbleToScale", "True", "ScaleDownStabilized",
                     "recent recommendations were higher than current one, applying the "
                     "highest recent recommendation");
    e->now += 300 * CK_SEC; /* the window has passed */
    sync(e);
    assert_int_equal(e->fs.updates, 1);
    assert_int_equal(e->fs.last_replicas, 2);
    assert_string_equal(event(e, "SuccessfulRescale"),
                        "New size: 2; reason: All metrics below target");
}

static void test_behavior_policies_limit_the_rate(void **state)
{
    struct env *e = *state;
    /* 400%: 16 asked for */
    start(e, 2, 4000,
          "\"behavior\":{\"scaleUp\":{\"stabilizationWindowSeconds\":0,\"selectPolicy\":"
          "\"Max\",\"policies\":[{\"type\":\"Pods\",\"value\":1,\"periodSeconds\":60}]},"
          "\"scaleDown\":{\"selectPolicy\":\"Max\",\"policies\":[{\"type\":\"Percent\","
          "\"value\":100,\"periodSeconds\":15}]}}");
    assert_int_equal(e->fs.last_replicas, 3); /* one pod a minute */
    expect_condition(written(e, 0), "ScalingLimited", "True", "ScaleUpLimit", NULL);
    set_target(e, 3, 4000);
    e->now += 10 * CK_SEC; /* within the minute: the pod added already counts */
    sync(e);
    assert_int_equal(e->fs.updates, 1);
    e->now += 55 * CK_SEC;
    sync(e);
    assert_int_equal(e->fs.updates, 2);
    assert_int_equal(e->fs.last_replicas, 4);
}

static void test_failures_set_conditions(void **state)
{
    struct env *e = *state;
    e->fs.metrics_fail = true;
    start(e, 2, 500, NULL);
    assert_int_equal(e->fs.updates, 0);
    const json_t *s = written(e, 0);
    expect_condition(s, "AbleToScale", "True", "SucceededGetScale", NULL);
    expect_condition(s, "ScalingActive", "False", "FailedGetResourceMetric",
                     "the HPA was unable to compute the replica count: unable to get metrics for "
                     "resource cpu: unable to fetch metrics from resource metrics API: the server "
                     "could not find the requested resource");
    assert_int_equal(json_integer_value(json_object_get(s, "currentReplicas")), 2);
    assert_non_null(event(e, "FailedGetResourceMetric"));
    assert_string_equal(event(e, "FailedComputeMetricsReplicas"),
                        "invalid metrics (1 invalid out of 1), first error is: failed to get cpu "
                        "resource metric value: failed to get cpu utilization: unable to get "
                        "metrics for resource cpu: unable to fetch metrics from resource metrics "
                        "API: the server could not find the requested resource");

    /* a kind nobody serves */
    set_hpa(e, "\"scaleTargetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Frob\",\"name\":\"x\"}");
    e->now += 20 * CK_SEC;
    sync(e);
    s = written(e, 1);
    expect_condition(s, "AbleToScale", "False", "FailedGetScale",
                     "the HPA controller was unable to get the target's current scale: no matches "
                     "for kind \"Frob\" in group \"apps\"");
    assert_string_equal(event(e, "FailedGetScale"),
                        "no matches for kind \"Frob\" in group \"apps\"");
}

/* ---- the custom and external metrics APIs ---- */

/* A MetricValueList (describing pods p0.. when pods, else one object) of the values. */
static void set_values(struct env *e, bool pods, const char *const *values, size_t n)
{
    json_decref(e->fs.values);
    e->fs.values = json_pack("{s:s,s:s,s:{},s:[]}", "kind", "MetricValueList", "apiVersion",
                             "custom.metrics.k8s.io/v1beta2", "metadata", "items");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%zu", i);
        json_array_append_new(json_object_get(e->fs.values, "items"),
                              json_pack("{s:{s:s,s:s},s:s,s:s,s:i,s:s}", "describedObject", "kind",
                                        pods ? "Pod" : "Ingress", "name",
                                        pods ? name : "main-route", "metricName", "m", "timestamp",
                                        "2027-01-15T07:59:59Z", "windowSeconds", 60, "value",
                                        values[i]));
    }
}

/* The autoscaler web with the one metric spec metric (JSON text), then its first sync. */
static void start_metric(struct env *e, int replicas, const char *metric)
{
    char extra[1024];
    snprintf(extra, sizeof(extra), "\"metrics\":[%s]", metric);
    start(e, replicas, 500, extra);
}

/* What the metrics API was last asked for: the path and the two selectors. */
static void expect_asked(struct env *e, const char *path, const char *selector, const char *msel)
{
    assert_string_equal(e->fs.path, path);
    assert_string_equal(e->fs.selector, selector);
    assert_string_equal(e->fs.metric_selector, msel);
}

static const json_t *current_metric(struct env *e, const char *member)
{
    const json_t *m = json_array_get(json_object_get(written(e, 0), "currentMetrics"), 0);
    assert_non_null(json_object_get(m, member));
    return json_object_get(json_object_get(m, member), "current");
}

static const char *current_str(struct env *e, const char *member, const char *field)
{
    return json_string_value(json_object_get(current_metric(e, member), field));
}

#define PODS_METRIC                                                                                \
    "{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":\"packets-per-second\"},\"target\":{"       \
    "\"type\":\"AverageValue\",\"averageValue\":\"1k\"}}}"

static void test_pods_metric(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"2k", "2k", "2k"};
    set_values(e, true, values, 3);
    start_metric(e, 3, PODS_METRIC); /* 2k per pod against 1k: 6 */
    expect_asked(e,
                 "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/packets-per-second",
                 "app=web", "");
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "pods", "averageValue"), "2k");
    expect_condition(written(e, 0), "ScalingActive", "True", "ValidMetricFound",
                     "the HPA was able to successfully calculate a replica count from pods "
                     "metric packets-per-second");
    assert_string_equal(event(e, "SuccessfulRescale"),
                        "New size: 6; reason: pods metric packets-per-second above target");
}

static void test_pods_metric_within_tolerance_and_missing(void **state)
{
    struct env *e = *state;
    /* 1050m per pod: within the tolerance; the metric selector goes as metricLabelSelector */
    static const char *const values[] = {"1050m", "1050m", "1050m"};
    set_values(e, true, values, 3);
    start_metric(e, 3,
                 "{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":\"qps\",\"selector\":{"
                 "\"matchLabels\":{\"verb\":\"GET\"}}},\"target\":{\"type\":\"AverageValue\","
                 "\"averageValue\":\"1\"}}}");
    assert_string_equal(e->fs.metric_selector, "verb=GET");
    assert_int_equal(e->fs.updates, 0);
    assert_string_equal(current_str(e, "pods", "averageValue"), "1050m");
    /* no values at all: Kubernetes' words */
    json_array_clear(json_object_get(e->fs.values, "items"));
    e->now += 20 * CK_SEC;
    sync(e);
    expect_condition(written(e, 1), "ScalingActive", "False", "FailedGetPodsMetric",
                     "the HPA was unable to compute the replica count: unable to get metric qps: "
                     "no metrics returned from custom metrics API");
}

/* An adapter that serves only v1beta1 (a MetricValue of metricName, selector, window). */
#define V1BETA1_ONLY                                                                               \
    "{\"name\":\"custom.metrics.k8s.io\",\"versions\":[{\"groupVersion\":"                         \
    "\"custom.metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}],\"preferredVersion\":{"           \
    "\"groupVersion\":\"custom.metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}}"

static void test_pods_metric_v1beta1_adapter(void **state)
{
    struct env *e = *state;
    e->fs.custom_group = V1BETA1_ONLY;
    static const char *const values[] = {"2k", "2k", "2k"};
    set_values(e, true, values, 3);
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(e->fs.values, "items"), i, item)
    {
        json_object_del(item, "windowSeconds");
        json_object_set_new(item, "window", json_integer(30));
    }
    start_metric(e, 3, PODS_METRIC);
    expect_asked(e,
                 "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/packets-per-second",
                 "app=web", "");
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "pods", "averageValue"), "2k");
}

static void test_custom_metrics_discovery(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"2k", "2k", "2k"};
    set_values(e, true, values, 3);
    /* a preferred version this client does not read: the first listed one it reads */
    e->fs.custom_group = "{\"name\":\"custom.metrics.k8s.io\",\"versions\":[{\"groupVersion\":"
                         "\"custom.metrics.k8s.io/v2\"},{\"groupVersion\":"
                         "\"custom.metrics.k8s.io/v1beta1\"}],\"preferredVersion\":{"
                         "\"groupVersion\":\"custom.metrics.k8s.io/v2\"}}";
    start_metric(e, 3, PODS_METRIC);
    assert_non_null(strstr(e->fs.path, "/custom.metrics.k8s.io/v1beta1/"));
    assert_int_equal(e->fs.group_lists, 1);
    /* the version is kept for a sync period, then found again */
    e->fs.custom_group = "";
    e->now += 5 * CK_SEC;
    sync(e);
    assert_non_null(strstr(e->fs.path, "/custom.metrics.k8s.io/v1beta1/"));
    assert_int_equal(e->fs.group_lists, 1);
    e->now += 20 * CK_SEC;
    sync(e);
    assert_non_null(strstr(e->fs.path, "/custom.metrics.k8s.io/v1beta2/"));
    assert_int_equal(e->fs.group_lists, 2);
}

/* After the next sync (written status n): the Pods metric PODS_METRIC failed, saying why. */
static void expect_pods_metric_failure(struct env *e, size_t n, const char *why)
{
    char want[1024];
    snprintf(want, sizeof(want),
             "the HPA was unable to compute the replica count: unable to get metric "
             "packets-per-second: unable to fetch metrics from custom metrics API: %s",
             why);
    expect_condition(written(e, n), "ScalingActive", "False", "FailedGetPodsMetric", want);
}

static void test_custom_metrics_not_registered(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"2k"};
    set_values(e, true, values, 1);
    e->fs.custom_group = NULL;
    start_metric(e, 3, PODS_METRIC);
    expect_pods_metric_failure(e, 0, "no custom metrics API (custom.metrics.k8s.io) registered");
    e->fs.custom_group = "{\"name\":\"custom.metrics.k8s.io\",\"versions\":[{\"groupVersion\":"
                         "\"custom.metrics.k8s.io/v3\"}],\"preferredVersion\":{"
                         "\"groupVersion\":\"custom.metrics.k8s.io/v3\"}}";
    e->now += 20 * CK_SEC;
    sync(e);
    expect_pods_metric_failure(e, 1, "no known available metric versions found");
}

#define OBJECT_METRIC(type, member, value)                                                         \
    "{\"type\":\"Object\",\"object\":{\"describedObject\":{\"apiVersion\":"                        \
    "\"networking.k8s.io/v1\",\"kind\":\"Ingress\",\"name\":\"main-route\"},\"metric\":{"          \
    "\"name\":\"requests-per-second\"},\"target\":{\"type\":\"" type "\",\"" member "\":\"" value  \
    "\"}}}"

static void test_object_metric_value(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"20k"};
    set_values(e, false, values, 1);
    start_metric(e, 3, OBJECT_METRIC("Value", "value", "10k")); /* twice: 3 ready pods x 2 */
    expect_asked(e,
                 "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/"
                 "ingresses.networking.k8s.io/main-route/requests-per-second",
                 "", "");
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "object", "value"), "20k");
    const json_t *m = json_array_get(json_object_get(written(e, 0), "currentMetrics"), 0);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(m, "object"), "describedObject"), "name")),
        "main-route");
    expect_condition(written(e, 0), "ScalingActive", "True", "ValidMetricFound",
                     "the HPA was able to successfully calculate a replica count from Ingress "
                     "metric requests-per-second");
}

static void test_object_metric_average_value(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"30k"};
    set_values(e, false, values, 1);
    start_metric(e, 3, OBJECT_METRIC("AverageValue", "averageValue", "5k")); /* 30k / 5k */
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "object", "averageValue"), "10k");
    /* Kubernetes' name of it, its selector as Go prints a nil one */
    expect_condition(written(e, 0), "ScalingActive", "True", "ValidMetricFound",
                     "the HPA was able to successfully calculate a replica count from external "
                     "metric requests-per-second(nil)");
}

/*
 * After a first sync whose one metric failed: the condition (reason, Kubernetes' words),
 * the event of that reason saying inner, and FailedComputeMetricsReplicas saying
 * computeReplicasForMetric's error (prefix, then inner).
 */
static void expect_failure(struct env *e, const char *reason, const char *prefix, const char *inner)
{
    char want[1024];
    snprintf(want, sizeof(want), "the HPA was unable to compute the replica count: %s", inner);
    expect_condition(written(e, 0), "ScalingActive", "False", reason, want);
    assert_string_equal(event(e, reason), inner);
    snprintf(want, sizeof(want), "invalid metrics (1 invalid out of 1), first error is: %s%s",
             prefix, inner);
    assert_string_equal(event(e, "FailedComputeMetricsReplicas"), want);
    assert_int_equal(e->fs.updates, 0);
}

static void test_object_metric_errors(void **state)
{
    struct env *e = *state;
    set_values(e, false, NULL, 0); /* not exactly one value */
    start_metric(e, 3, OBJECT_METRIC("Value", "value", "10k"));
    expect_failure(e, "FailedGetObjectMetric", "failed to get object metric value: ",
                   "unable to get metric requests-per-second: Ingress on default "
                   "main-route/unable to fetch metrics from custom metrics API: the custom "
                   "metrics API server returned 0 results when we asked for exactly one");
    assert_int_equal(e->fs.updates, 0);
}

#define EXTERNAL_METRIC(member, value)                                                             \
    "{\"type\":\"External\",\"external\":{\"metric\":{\"name\":\"queue_messages_ready\","          \
    "\"selector\":{\"matchLabels\":{\"queue\":\"worker\"}}},\"target\":{\"type\":\"Value\","       \
    "\"" member "\":\"" value "\"}}}"
#define GO_SELECTOR                                                                                \
    "&LabelSelector{MatchLabels:map[string]string{queue: worker,},MatchExpressions:[]"             \
    "LabelSelectorRequirement{},}"

static void test_external_metric_value(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"3", "5"};
    set_values(e, false, values, 2);
    start_metric(e, 3, EXTERNAL_METRIC("value", "4")); /* 8 against 4: 3 ready pods x 2 */
    expect_asked(e, "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready",
                 "queue=worker", "");
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "external", "value"), "8");
    expect_condition(written(e, 0), "ScalingActive", "True", "ValidMetricFound",
                     "the HPA was able to successfully calculate a replica count from external "
                     "metric queue_messages_ready(" GO_SELECTOR ")");
}

static void test_external_metric_average_value(void **state)
{
    struct env *e = *state;
    static const char *const values[] = {"12"};
    set_values(e, false, values, 1);
    start_metric(e, 3, EXTERNAL_METRIC("averageValue", "2")); /* 12 / 2 */
    assert_int_equal(e->fs.last_replicas, 6);
    assert_string_equal(current_str(e, "external", "averageValue"), "4");
}

static void test_external_metric_errors(void **state)
{
    struct env *e = *state;
    start_metric(e, 3, EXTERNAL_METRIC("value", "4")); /* the API answers an error */
    expect_failure(e, "FailedGetExternalMetric",
                   "failed to get external metric queue_messages_ready: ",
                   "unable to get external metric default/queue_messages_ready/" GO_SELECTOR
                   ": unable to fetch metrics from external metrics API: the server could not "
                   "find the requested resource");
    /* the pods API failing too */
    set_hpa(e, "\"metrics\":[" PODS_METRIC "]");
    e->now += 20 * CK_SEC;
    sync(e);
    expect_pods_metric_failure(e, 1, "the server could not find the requested resource");
}

static void test_unchanged_status_is_not_written(void **state)
{
    struct env *e = *state;
    start(e, 2, 500, NULL);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", NULL), 1);
    /* the cache now holds what was written */
    const json_t *s = written(e, 0);
    json_t *h = NULL;
    const json_t *cached = NULL;
    assert_int_equal(ck_lister_get(&e->hpas.lister, "default", "web", &cached), 0);
    h = json_deep_copy(cached);
    ck_cached_unref(cached);
    json_object_set(h, "status", (json_t *)s);
    fx_cache_add(&e->hpas, h);
    e->now += 15 * CK_SEC;
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", NULL), 1);
    assert_int_equal(e->fs.updates, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calc_scale_up_and_down),
        cmocka_unit_test(test_calc_unready_missing_and_ignored),
        cmocka_unit_test(test_calc_errors),
        cmocka_unit_test_setup_teardown(test_sync_scales_up_with_status_and_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scale_up_limit_and_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_bound_and_zero_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_downscale_stabilization, setup, teardown),
        cmocka_unit_test_setup_teardown(test_behavior_policies_limit_the_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_set_conditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_status_is_not_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pods_metric, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pods_metric_v1beta1_adapter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_custom_metrics_discovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_custom_metrics_not_registered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pods_metric_within_tolerance_and_missing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_object_metric_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_object_metric_average_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_object_metric_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_metric_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_metric_average_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_metric_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
