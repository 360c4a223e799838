/*
 * test_quota_admission.c - tests for lib/apiserver/admission/resource_quota.c (the
 * ResourceQuota admission plugin) through a real server: the kind's validation and
 * status subresource, quotas not yet counted, missing usage, constraints, object
 * counts, exceeded quotas in Kubernetes' words, charged usage, dry runs, service and
 * claim updates charged their growth, a PriorityClass scope selector, the
 * configuration's limitedResources and their matchScopes, allocation
 * failures while charging, and creates racing for a quota's last unit, serialized by
 * the namespace's lock and without it (the resourceVersion precondition and its
 * retries).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"
#include "httptest.h"

#define NS     "/api/v1/namespaces/default"
#define QUOTAS NS "/resourcequotas"
#define PODS   NS "/pods"

static long call(struct ck_apiserver *server, const char *method, const char *path,
                 const char *body, json_t **ret)
{
    struct response r;
    http_call(server, method, path, body, NULL, &r);
    long status = r.status;
    if (ret)
        *ret = json_loads(r.body, 0, NULL);
    response_release(&r);
    return status;
}

static const char *message(const json_t *status)
{
    return json_string_value(json_object_get(status, "message"));
}

/* The quota's status.used[name], or NULL (the caller frees). */
static char *used_of(struct ck_apiserver *server, const char *quota, const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), QUOTAS "/%s", quota);
    json_t *q = NULL;
    assert_int_equal(call(server, "GET", path, NULL, &q), 200);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(q, "status"), "used"), name));
    char *out = v ? strdup(v) : NULL;
    json_decref(q);
    return out;
}

static void assert_used(struct ck_apiserver *server, const char *quota, const char *name,
                        const char *want)
{
    char *got = used_of(server, quota, name);
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s used %s: want %s, got %s", quota, name, want, got ? got : "(absent)");
    free(got);
}

/* Writes the quota's status as the controller would: hard from spec, used as given. */
static void set_status(struct ck_apiserver *server, const char *quota, const char *hard,
                       const char *used)
{
    char path[256], body[1024];
    snprintf(path, sizeof(path), QUOTAS "/%s/status", quota);
    snprintf(body, sizeof(body), "{\"status\":{\"hard\":%s,\"used\":%s}}", hard, used);
    struct response r;
    http_call(server, "PATCH", path, body,
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    if (r.status != 200)
        fail_msg("status of %s: %ld %s", quota, r.status, r.body);
    response_release(&r);
}

/*
 * Creates quota name (spec.hard hard, more spec members in more: "" or ",\"scopes\":...")
 * with the status the controller would write: hard, and used as given.
 */
static void add_counted_quota(struct ck_apiserver *server, const char *name, const char *hard,
                              const char *more, const char *used)
{
    char body[1024];
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"hard\":%s%s}}", name,
             hard, more);
    json_t *out = NULL;
    long code = call(server, "POST", QUOTAS, body, &out);
    if (code != 201)
        fail_msg("quota %s: %ld %s", name, code, out ? message(out) : "");
    json_decref(out);
    set_status(server, name, hard, used);
}

static long post_pod(struct ck_apiserver *server, const char *name, const char *resources,
                     json_t **ret)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"x\"%s%s}]}}",
             name, *resources ? ",\"resources\":" : "", resources);
    return call(server, "POST", PODS, body, ret);
}

static void test_kind_validation_and_status(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    assert_int_equal(call(server, "POST", QUOTAS,
                          "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"hard\":{\"pods\":\"-1\","
                          "\"requests.cpu\":\"1\"},\"scopes\":[\"BestEffort\"]}}",
                          &out),
                     422);
    assert_string_equal(message(out),
                        "ResourceQuota \"bad\" is invalid: [spec.hard[pods]: Invalid value: "
                        "\"-1\": must be greater than or equal to 0, spec.scopes: Invalid value: "
                        "[\"BestEffort\"]: unsupported scope applied to resource]");
    json_decref(out);
    /* a create starts without status, whatever the body says */
    assert_int_equal(call(server, "POST", QUOTAS,
                          "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":{\"pods\":\"2\"}},"
                          "\"status\":{\"used\":{\"pods\":\"7\"}}}",
                          &out),
                     201);
    assert_null(json_object_get(json_object_get(out, "status"), "used"));
    json_decref(out);
    /* a quota not counted yet (no status.hard) covers nothing */
    assert_int_equal(post_pod(server, "free", "", NULL), 201);
    /* hard known but not its usage: Kubernetes refuses */
    set_status(server, "q", "{\"pods\":\"2\"}", "{}");
    assert_int_equal(post_pod(server, "unknown", "", &out), 403);
    assert_string_equal(message(out), "pods \"unknown\" is forbidden: status unknown for quota: "
                                      "q, resources: pods");
    json_decref(out);
    /* the main resource's update keeps the status */
    assert_int_equal(call(server, "PUT", QUOTAS "/q",
                          "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":{\"pods\":\"3\"}}}",
                          &out),
                     200);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(out, "status"), "hard"), "pods")),
                        "2");
    json_decref(out);
}

static void test_exceeded_charged_and_counted(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    add_counted_quota(server, "q",
                      "{\"pods\":\"2\",\"configmaps\":\"1\",\"count/deployments.apps\":\"0\"}", "",
                      "{\"pods\":\"0\",\"configmaps\":\"0\",\"count/deployments.apps\":\"0\"}");
    assert_int_equal(post_pod(server, "p1", "", NULL), 201);
    assert_used(server, "q", "pods", "1");
    /* a dry run is checked and charges nothing */
    assert_int_equal(call(server, "POST", PODS "?dryRun=All",
                          "{\"metadata\":{\"name\":\"dry\"},\"spec\":{\"containers\":[{\"name\":"
                          "\"c\",\"image\":\"x\"}]}}",
                          NULL),
                     201);
    assert_used(server, "q", "pods", "1");
    assert_int_equal(post_pod(server, "p2", "", NULL), 201);
    assert_used(server, "q", "pods", "2");
    assert_int_equal(post_pod(server, "p3", "", &out), 403);
    assert_string_equal(message(out), "pods \"p3\" is forbidden: exceeded quota: q, requested: "
                                      "pods=1, used: pods=2, limited: pods=2");
    json_decref(out);
    assert_int_equal(call(server, "GET", PODS "/p3", NULL, NULL), 404);
    assert_used(server, "q", "pods", "2");

    /* the legacy object count and count/<resource>.<group> */
    assert_int_equal(
        call(server, "POST", NS "/configmaps", "{\"metadata\":{\"name\":\"c1\"}}", NULL), 201);
    assert_used(server, "q", "configmaps", "1");
    assert_int_equal(
        call(server, "POST", NS "/configmaps", "{\"metadata\":{\"name\":\"c2\"}}", &out), 403);
    assert_string_equal(message(out), "configmaps \"c2\" is forbidden: exceeded quota: q, "
                                      "requested: configmaps=1, used: configmaps=1, limited: "
                                      "configmaps=1");
    json_decref(out);
    assert_int_equal(call(server, "POST", "/apis/apps/v1/namespaces/default/deployments",
                          "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"selector\":{\"matchLabels\":"
                          "{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
                          "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
                          &out),
                     403);
    assert_string_equal(message(out),
                        "deployments.apps \"d\" is forbidden: exceeded quota: q, "
                        "requested: count/deployments.apps=1, used: "
                        "count/deployments.apps=0, limited: count/deployments.apps=0");
    json_decref(out);
    /* a secret is not limited by q */
    assert_int_equal(call(server, "POST", NS "/secrets", "{\"metadata\":{\"name\":\"s\"}}", NULL),
                     201);
}

static void test_compute_constraints_and_scopes(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    add_counted_quota(server, "compute", "{\"requests.cpu\":\"1\",\"limits.memory\":\"1Gi\"}", "",
                      "{\"requests.cpu\":\"0\",\"limits.memory\":\"0\"}");
    add_counted_quota(server, "best-effort", "{\"pods\":\"0\"}", ",\"scopes\":[\"BestEffort\"]",
                      "{\"pods\":\"0\"}");
    /* a pod without requests or limits: compute's constraint speaks first */
    assert_int_equal(post_pod(server, "bare", "", &out), 403);
    assert_string_equal(message(out), "pods \"bare\" is forbidden: failed quota: compute: must "
                                      "specify limits.memory for: c; requests.cpu for: c");
    json_decref(out);
    assert_int_equal(post_pod(server, "ok",
                              "{\"requests\":{\"cpu\":\"600m\"},\"limits\":{\"memory\":\"512Mi\"}}",
                              NULL),
                     201);
    assert_used(server, "compute", "requests.cpu", "600m");
    assert_used(server, "compute", "limits.memory", "512Mi");
    assert_used(server, "best-effort", "pods", "0"); /* not best effort: not its scope */
    assert_int_equal(post_pod(server, "more",
                              "{\"requests\":{\"cpu\":\"600m\"},\"limits\":{\"memory\":\"256Mi\"}}",
                              &out),
                     403);
    assert_string_equal(message(out),
                        "pods \"more\" is forbidden: exceeded quota: compute, requested: "
                        "requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1");
    json_decref(out);
}

static void test_service_updates_are_charged_their_growth(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    add_counted_quota(server, "svc",
                      "{\"services\":\"5\",\"services.loadbalancers\":\"0\",\"services.nodeports\":"
                      "\"1\"}",
                      "",
                      "{\"services\":\"0\",\"services.loadbalancers\":\"0\",\"services.nodeports\":"
                      "\"0\"}");
    assert_int_equal(call(server, "POST", NS "/services",
                          "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"ports\":[{\"port\":80}]}}",
                          NULL),
                     201);
    assert_used(server, "svc", "services", "1");
    struct response r;
    http_call(server, "PATCH", NS "/services/web", "{\"spec\":{\"type\":\"NodePort\"}}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    assert_used(server, "svc", "services", "1");
    assert_used(server, "svc", "services.nodeports", "1");
    http_call(server, "PATCH", NS "/services/web", "{\"spec\":{\"type\":\"LoadBalancer\"}}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 403);
    out = json_loads(r.body, 0, NULL);
    assert_string_equal(message(out),
                        "services \"web\" is forbidden: exceeded quota: svc, requested: "
                        "services.loadbalancers=1, used: services.loadbalancers=0, limited: "
                        "services.loadbalancers=0");
    json_decref(out);
    response_release(&r);
}

/* A scope selector on PriorityClass: only pods of the classes named are covered. */
static void test_priority_class_scope(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    assert_int_equal(call(server, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                          "{\"metadata\":{\"name\":\"high\"},\"value\":1000}", NULL),
                     201);
    add_counted_quota(server, "no-high", "{\"pods\":\"0\"}",
                      ",\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\","
                      "\"operator\":\"In\",\"values\":[\"high\"]}]}",
                      "{\"pods\":\"0\"}");
    assert_int_equal(post_pod(server, "plain", "", NULL), 201);
    assert_int_equal(call(server, "POST", PODS,
                          "{\"metadata\":{\"name\":\"vip\"},\"spec\":{\"priorityClassName\":"
                          "\"high\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                          &out),
                     403);
    assert_string_equal(message(out), "pods \"vip\" is forbidden: exceeded quota: no-high, "
                                      "requested: pods=1, used: pods=0, limited: pods=0");
    json_decref(out);
}

/* A claim is charged its storage at create, and its growth when it is resized. */
static void test_claims_are_charged_their_storage(void **state)
{
    struct ck_apiserver *server = served(state);
    json_t *out = NULL;
    add_counted_quota(server, "storage",
                      "{\"requests.storage\":\"10Gi\",\"gold.storageclass.storage.k8s.io/"
                      "persistentvolumeclaims\":\"1\"}",
                      "",
                      "{\"requests.storage\":\"0\",\"gold.storageclass.storage.k8s.io/"
                      "persistentvolumeclaims\":\"0\"}");
    static const char claim[] = "{\"metadata\":{\"name\":\"%s\"},\"spec\":{"
                                "\"storageClassName\":\"gold\",\"accessModes\":["
                                "\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":"
                                "\"%s\"}}}}";
    char body[512];
    snprintf(body, sizeof(body), claim, "data", "4Gi");
    assert_int_equal(call(server, "POST", NS "/persistentvolumeclaims", body, NULL), 201);
    assert_used(server, "storage", "requests.storage", "4Gi");
    assert_used(server, "storage", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1");
    snprintf(body, sizeof(body), claim, "more", "1Gi");
    assert_int_equal(call(server, "POST", NS "/persistentvolumeclaims", body, &out), 403);
    assert_string_equal(message(out),
                        "persistentvolumeclaims \"more\" is forbidden: exceeded quota: storage, "
                        "requested: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, "
                        "used: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, limited: "
                        "gold.storageclass.storage.k8s.io/persistentvolumeclaims=1");
    json_decref(out);
    struct response r;
    http_call(server, "PATCH", NS "/persistentvolumeclaims/data",
              "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"12Gi\"}}}}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 403);
    out = json_loads(r.body, 0, NULL);
    assert_string_equal(message(out), "persistentvolumeclaims \"data\" is forbidden: exceeded "
                                      "quota: storage, requested: requests.storage=8Gi, used: "
                                      "requests.storage=4Gi, limited: requests.storage=10Gi");
    json_decref(out);
    response_release(&r);
    http_call(server, "PATCH", NS "/persistentvolumeclaims/data",
              "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"6Gi\"}}}}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    assert_used(server, "storage", "requests.storage", "6Gi");
}

/*
 * Every allocation of a charged create failed in turn: the answer is the create or a
 * 500, never a crash or a leak (under ASan), and the server serves on.
 */
static void test_allocation_failures_while_charging(void **state)
{
    struct ck_apiserver *server = served(state);
    add_counted_quota(server, "q", "{\"pods\":\"1000\"}", "", "{\"pods\":\"0\"}");
    unsigned long n, made = 0;
    size_t created = 0;
    for (n = 1; n < 2000; n++) {
        char name[32];
        snprintf(name, sizeof(name), "p%lu", n);
        ck__alloc_fail_at(n, false);
        long status = post_pod(server, name, "", NULL);
        made = ck__alloc_fail_at(0, false);
        if (status != 201 && status != 500)
            fail_msg("allocation %lu failed: %ld", n, status);
        created += status == 201;
        if (made < n) /* nothing failed: the whole create ran */
            break;
    }
    assert_true(made < n);
    assert_true(created >= 1);
    char *used = used_of(server, "q", "pods");
    assert_non_null(used);
    assert_true(strtoul(used, NULL, 10) >= created); /* a failure after the charge over-counts */
    free(used);
    assert_int_equal(post_pod(server, "after", "", NULL), 201);
}

/* ---- racing for the last unit --------------------------------------------------------- */

#define RACERS 6

struct racer {
    struct ck_apiserver *server;
    char name[32];
    pthread_barrier_t *start;
    long status;
    char message[512];
};

static void *race(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->start);
    json_t *out = NULL;
    r->status = post_pod(r->server, r->name, "", &out);
    snprintf(r->message, sizeof(r->message), "%s", out && message(out) ? message(out) : "");
    json_decref(out);
    return NULL;
}

/* RACERS creates at once through servers[i % n] for one unit left: one wins. */
static void race_for_last_unit(struct ck_apiserver *const *servers, size_t n_servers)
{
    add_counted_quota(servers[0], "q", "{\"pods\":\"3\"}", "", "{\"pods\":\"2\"}");
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, RACERS);
    struct racer racers[RACERS];
    pthread_t threads[RACERS];
    for (size_t i = 0; i < RACERS; i++) {
        racers[i] = (struct racer){.server = servers[i % n_servers], .start = &start};
        snprintf(racers[i].name, sizeof(racers[i].name), "racer-%zu", i);
        assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
    }
    size_t won = 0;
    for (size_t i = 0; i < RACERS; i++) {
        pthread_join(threads[i], NULL);
        if (racers[i].status == 201) {
            won++;
            continue;
        }
        char want[256];
        snprintf(want, sizeof(want),
                 "pods \"%s\" is forbidden: exceeded quota: q, requested: pods=1, used: "
                 "pods=3, limited: pods=3",
                 racers[i].name);
        if (racers[i].status != 403 || strcmp(racers[i].message, want) != 0)
            fail_msg("%s: %ld %s", racers[i].name, racers[i].status, racers[i].message);
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(won, 1);
    assert_used(servers[0], "q", "pods", "3");
}

static void test_one_server_race_has_one_winner(void **state)
{
    struct ck_apiserver *server = served(state);
    race_for_last_unit(&server, 1);
}

/*
 * Without the namespace's lock, as two servers over one etcd would be: every racer reads
 * used=2 and passes its check before any charges, one write wins, the others conflict,
 * read again and are refused.
 */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static int held;

/* Holds the first RACERS checked requests until all of them have checked. */
static void hold_until_all_checked(void)
{
    pthread_mutex_lock(&held_lock);
    if (held < RACERS && ++held == RACERS)
        pthread_cond_broadcast(&held_cond);
    while (held < RACERS)
        pthread_cond_wait(&held_cond, &held_lock);
    pthread_mutex_unlock(&held_lock);
}

static void test_precondition_race_has_one_winner(void **state)
{
    struct ck_apiserver *server = served(state);
    ck__resource_quota_serialize = false;
    ck__resource_quota_checked = hold_until_all_checked;
    race_for_last_unit(&server, 1);
    assert_int_equal(held, RACERS); /* every racer passed its first check */
    ck__resource_quota_checked = NULL;
    ck__resource_quota_serialize = true;
}

/* limitedResources (the plugin's configuration): pods need a covering quota. */
static void test_limited_resources(void **state)
{
    struct ck_apiserver *server = served(state);
    server->admission->quota_limited =
        json_loads("[{\"resource\":\"pods\",\"matchContains\":[\"pods\"]},"
                   "{\"apiGroup\":\"apps\",\"resource\":\"pods\",\"matchContains\":[\"cpu\"]}]",
                   0, NULL);
    assert_non_null(server->admission->quota_limited);
    json_t *out = NULL;
    /* no quota at all: refused */
    assert_int_equal(post_pod(server, "p1", "", &out), 403);
    assert_string_equal(message(out), "pods \"p1\" is forbidden: insufficient quota to consume: "
                                      "count/pods,pods");
    json_decref(out);
    /* a quota that covers pods only: count/pods is still uncovered */
    add_counted_quota(server, "q", "{\"pods\":\"5\"}", "", "{\"pods\":\"0\"}");
    assert_int_equal(post_pod(server, "p1", "", &out), 403);
    assert_string_equal(message(out), "pods \"p1\" is forbidden: insufficient quota to consume: "
                                      "count/pods");
    json_decref(out);
    /* covered by two quotas together: admitted and charged */
    add_counted_quota(server, "q2", "{\"count/pods\":\"5\"}", "", "{\"count/pods\":\"0\"}");
    assert_int_equal(post_pod(server, "p1", "", NULL), 201);
    assert_used(server, "q", "pods", "1");
    /* what is not limited needs no quota */
    assert_int_equal(
        call(server, "POST", NS "/configmaps", "{\"metadata\":{\"name\":\"c\"}}", NULL), 201);
}

/*
 * limitedResources' matchScopes: a pod matching one needs a quota with a scope of that
 * name that it matches, whatever the entry's resource and the quota's resources.
 */
static void test_limited_scopes(void **state)
{
    struct ck_apiserver *server = served(state);
    server->admission->quota_limited =
        json_loads("[{\"resource\":\"pods\",\"matchScopes\":[{\"scopeName\":\"PriorityClass\","
                   "\"operator\":\"In\",\"values\":[\"cluster-services\",\"critical\"]}]},"
                   "{\"resource\":\"services\",\"matchScopes\":[{\"scopeName\":"
                   "\"CrossNamespacePodAffinity\",\"operator\":\"Exists\"}]}]",
                   0, NULL);
    assert_non_null(server->admission->quota_limited);
    assert_int_equal(call(server, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                          "{\"metadata\":{\"name\":\"cluster-services\"},\"value\":1000}", NULL),
                     201);
    static const char vip[] =
        "{\"metadata\":{\"name\":\"vip\"},\"spec\":{\"priorityClassName\":"
        "\"cluster-services\",\"affinity\":{\"podAffinity\":{"
        "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"k\","
        "\"namespaces\":[\"other\"]}]}},\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";
    json_t *out = NULL;
    /* a pod matching no limited scope needs nothing */
    assert_int_equal(post_pod(server, "plain", "", NULL), 201);
    /* matching both, without any quota: refused, both listed as Go prints them */
    assert_int_equal(call(server, "POST", PODS, vip, &out), 500);
    assert_string_equal(message(out), "insufficient quota to match these scopes: "
                                      "[{PriorityClass In [cluster-services critical]} "
                                      "{CrossNamespacePodAffinity Exists []}]");
    json_decref(out);
    /* a quota with a PriorityClass scope the pod matches covers that scope */
    add_counted_quota(server, "classy", "{\"count/pods\":\"5\"}",
                      ",\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":"
                      "\"PriorityClass\",\"operator\":\"Exists\"}]}",
                      "{\"count/pods\":\"0\"}");
    assert_int_equal(call(server, "POST", PODS, vip, &out), 500);
    assert_string_equal(message(out), "insufficient quota to match these scopes: "
                                      "[{CrossNamespacePodAffinity Exists []}]");
    json_decref(out);
    /* a quota with scopes the pod does not match covers nothing */
    add_counted_quota(server, "terminating", "{\"pods\":\"5\"}", ",\"scopes\":[\"Terminating\"]",
                      "{\"pods\":\"0\"}");
    assert_int_equal(call(server, "POST", PODS, vip, &out), 500);
    json_decref(out);
    /*
     * each of a quota's scopes counts on its own (MatchingScopes): this one covers the
     * scope though the quota, with a Terminating scope too, does not cover the pod
     */
    add_counted_quota(server, "cross", "{\"pods\":\"5\"}",
                      ",\"scopes\":[\"CrossNamespacePodAffinity\",\"Terminating\"]",
                      "{\"pods\":\"0\"}");
    assert_int_equal(call(server, "POST", PODS, vip, NULL), 201);
    assert_used(server, "classy", "count/pods", "1");
    assert_used(server, "cross", "pods", "0");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kind_validation_and_status, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_limited_resources, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_limited_scopes, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_exceeded_charged_and_counted, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_compute_constraints_and_scopes, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_service_updates_are_charged_their_growth, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_priority_class_scope, test_serve, test_unserve),
        cmocka_unit_test_setup_teardown(test_claims_are_charged_their_storage, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_allocation_failures_while_charging, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_one_server_race_has_one_winner, test_serve,
                                        test_unserve),
        cmocka_unit_test_setup_teardown(test_precondition_race_has_one_winner, test_serve,
                                        test_unserve),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
