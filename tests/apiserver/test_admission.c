/*
 * test_admission.c - tests for lib/apiserver/admission/: the chain (kube-apiserver's
 * order and default set, its flags' errors, AlwaysDeny enabled by flag) and the
 * plugins DefaultTolerationSeconds, TaintNodesByCondition, Priority,
 * DefaultIngressClass, RuntimeClass, AlwaysPullImages, DenyServiceExternalIPs and
 * NamespaceLifecycle's immortal namespaces, through a real server where they read other
 * objects. The ServiceAccount plugin has test_serviceaccount_admission.c.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"
#include "httptest.h"

static json_t *load(const char *text)
{
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    return obj;
}

/* ---- the chain -------------------------------------------------------------------- */

static void test_default_chain_in_kubernetes_order(void **state)
{
    (void)state;
    struct ck__admission_chain *c = NULL;
    assert_int_equal(ck__admission_chain_new(NULL, NULL, &c, NULL), 0);
    static const char *const want[] = {"NamespaceLifecycle",
                                       "LimitRanger",
                                       "ServiceAccount",
                                       "NodeRestriction",
                                       "TaintNodesByCondition",
                                       "PodSecurity",
                                       "Priority",
                                       "DefaultTolerationSeconds",
                                       "DefaultStorageClass",
                                       "StorageObjectInUseProtection",
                                       "RuntimeClass",
                                       "CertificateApproval",
                                       "CertificateSigning",
                                       "CertificateSubjectRestriction",
                                       "DefaultIngressClass",
                                       "MutatingAdmissionWebhook",
                                       "ValidatingAdmissionPolicy",
                                       "ValidatingAdmissionWebhook",
                                       "ResourceQuota"};
    assert_int_equal(c->n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < c->n; i++)
        assert_string_equal(c->plugins[i]->name, want[i]);
    assert_false(ck__admission_chain_has(c, "AlwaysDeny"));
    ck__admission_chain_free(c);

    /* off by default, on by flag, at its place (the very end) */
    assert_int_equal(ck__admission_chain_new("AlwaysDeny, AlwaysAdmit", "Priority", &c, NULL), 0);
    assert_string_equal(c->plugins[0]->name, "AlwaysAdmit");
    assert_string_equal(c->plugins[c->n - 1]->name, "AlwaysDeny");
    assert_false(ck__admission_chain_has(c, "Priority"));
    ck__admission_chain_free(c);

    /* a default plugin ckube lacks may be disabled: it does not run anyway */
    assert_int_equal(ck__admission_chain_new(
                         NULL, "ClusterTrustBundleAttest,PersistentVolumeClaimResize", &c, NULL),
                     0);
    ck__admission_chain_free(c);
}

static void test_flag_errors(void **state)
{
    (void)state;
    static const struct {
        const char *enable, *disable, *msg;
    } cases[] = {
        {"Foo", NULL, "enable-admission-plugins plugin \"Foo\" is unknown"},
        {NULL, "Priority,Bar", "disable-admission-plugins plugin \"Bar\" is unknown"},
        {"AlwaysDeny,Priority", "Priority,AlwaysDeny",
         "[Priority AlwaysDeny] in enable-admission-plugins and disable-admission-plugins "
         "overlapped"},
        {"PodNodeSelector", NULL,
         "enable-admission-plugins plugin \"PodNodeSelector\" is not implemented by ckube "
         "(docs/admission.md lists those that are)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__admission_chain *c = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck__admission_chain_new(cases[i].enable, cases[i].disable, &c, &err),
                         CK_EINVAL);
        assert_null(c);
        assert_string_equal(err.msg, cases[i].msg);
        ck_err_release(&err);
    }
}

static void test_always_deny_refuses_writes(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start_admission(dir, "AlwaysDeny", "ServiceAccount");
    assert_non_null(server);
    struct response r;
    http_call(server, "POST", "/api/v1/namespaces/default/configmaps",
              "{\"metadata\":{\"name\":\"c\"}}", NULL, &r);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "configmaps \\\"c\\\" is forbidden: admission control is "
                                   "denying all modifications"));
    response_release(&r);
    http_call(server, "GET", "/api/v1/namespaces/default/configmaps/c", NULL, NULL, &r);
    assert_int_equal(r.status, 404); /* nothing was stored */
    response_release(&r);
    /* connects too: asked before the pod is looked up, as Kubernetes asks */
    static const char *const connects[] = {
        "/api/v1/namespaces/default/pods/p/exec?command=true&stdout=1",
        "/api/v1/namespaces/default/pods/p/attach?stdout=1",
        "/api/v1/namespaces/default/pods/p/portforward?ports=80"};
    for (size_t i = 0; i < sizeof(connects) / sizeof(connects[0]); i++) {
        http_call(server, "GET", connects[i], NULL, NULL, &r);
        assert_int_equal(r.status, 403);
        assert_non_null(strstr(r.body, "pods \\\"p\\\" is forbidden: admission control is "
                                       "denying all modifications"));
        response_release(&r);
    }
    test_server_stop(server, dir);
}

/* ---- DefaultTolerationSeconds ------------------------------------------------------ */

/* Not-ready and unreachable NoExecute for 300 s, unless tolerated; only pods themselves. */
static void test_default_toleration_seconds(void **state)
{
    (void)state;
    const struct ck_kind *pods = ck_kind_lookup("", "v1", "pods");
    static const struct {
        const char *tolerations;
        size_t want;          /* tolerations after admission */
        const char *last_key; /* the last one's key */
    } cases[] = {
        {"[]", 2, "node.kubernetes.io/unreachable"},
        {"[{\"operator\":\"Exists\"}]", 1, NULL},
        {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
         "\"effect\":\"NoExecute\",\"tolerationSeconds\":10}]",
         2, "node.kubernetes.io/not-ready"},
        {"[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
         "\"effect\":\"NoSchedule\"}]",
         3, "node.kubernetes.io/unreachable"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int sub = 0; sub < 2; sub++) {
            json_t *pod = json_pack("{s:{s:s}, s:{s:[{s:s, s:s}], s:o}}", "metadata", "name", "p",
                                    "spec", "containers", "name", "a", "image", "x", "tolerations",
                                    load(cases[i].tolerations));
            struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                            .kind = pods,
                                            .subresource = sub ? "status" : NULL,
                                            .namespace = "default",
                                            .name = "p",
                                            .obj = pod};
            struct ck_err err = {0};
            assert_int_equal(ck__admission_default_toleration_seconds.admit(NULL, &a, &err), 0);
            const json_t *list = json_object_get(json_object_get(pod, "spec"), "tolerations");
            if (sub) { /* a subresource is left alone */
                json_t *given = load(cases[i].tolerations);
                assert_true(json_equal(list, given));
                json_decref(given);
                json_decref(pod);
                continue;
            }
            assert_int_equal(json_array_size(list), cases[i].want);
            if (cases[i].last_key) {
                const json_t *last = json_array_get(list, json_array_size(list) - 1);
                assert_string_equal(json_string_value(json_object_get(last, "key")),
                                    cases[i].last_key);
                assert_string_equal(json_string_value(json_object_get(last, "effect")),
                                    "NoExecute");
                assert_int_equal(json_integer_value(json_object_get(last, "tolerationSeconds")),
                                 300);
            }
            json_decref(pod);
        }
    }
}

/* ---- TaintNodesByCondition --------------------------------------------------------- */

/* A created Node gets not-ready:NoSchedule unless it has a taint of that key and effect. */
static void test_taint_nodes_by_condition(void **state)
{
    (void)state;
    const struct ck_kind *nodes = ck_kind_lookup("", "v1", "nodes");
    static const struct {
        const char *node;
        enum ck__admission_op op;
        const char *subresource;
        const char *want_taints; /* spec.taints after admission; NULL: spec unchanged */
    } cases[] = {
        {"{\"metadata\":{\"name\":\"n\"}}", CK__ADMISSION_CREATE, NULL,
         "[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoSchedule\"}]"},
        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\","
         "\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":"
         "\"NoExecute\"}]}}",
         CK__ADMISSION_CREATE, NULL,
         "[{\"key\":\"a\",\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/"
         "not-ready\",\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes.io/not-ready\","
         "\"effect\":\"NoSchedule\"}]"},
        /* there already, with a value: kept as it is, not added twice */
        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":"
         "\"node.kubernetes.io/not-ready\",\"value\":\"x\",\"effect\":\"NoSchedule\"}]}}",
         CK__ADMISSION_CREATE, NULL, NULL},
        /* only creates of the node itself */
        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", CK__ADMISSION_UPDATE, NULL, NULL},
        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", CK__ADMISSION_CREATE, "status", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *node = load(cases[i].node);
        json_t *given = json_deep_copy(node);
        json_t *old = cases[i].op == CK__ADMISSION_UPDATE ? given : NULL;
        struct ck__admission_attrs a = {.op = cases[i].op,
                                        .kind = nodes,
                                        .subresource = cases[i].subresource,
                                        .namespace = "",
                                        .name = "n",
                                        .obj = node,
                                        .old = old};
        struct ck_err err = {0};
        assert_int_equal(ck__admission_taint_nodes_by_condition.admit(NULL, &a, &err), 0);
        if (cases[i].want_taints) {
            json_t *want = load(cases[i].want_taints);
            if (!json_equal(json_object_get(json_object_get(node, "spec"), "taints"), want))
                fail_msg("case %zu: taints %s", i,
                         json_dumps(json_object_get(json_object_get(node, "spec"), "taints"),
                                    JSON_COMPACT));
            json_decref(want);
        } else {
            assert_true(json_equal(node, given));
        }
        json_decref(given);
        json_decref(node);
    }
    /* other kinds are left alone */
    json_t *pod = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{}}");
    struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                    .kind = ck_kind_lookup("", "v1", "pods"),
                                    .namespace = "default",
                                    .name = "p",
                                    .obj = pod};
    assert_int_equal(ck__admission_taint_nodes_by_condition.admit(NULL, &a, NULL), 0);
    assert_null(json_object_get(json_object_get(pod, "spec"), "taints"));
    json_decref(pod);
}

/* ---- through a server --------------------------------------------------------------- */

/* POSTs body to path; the answer's status, and its body parsed into *ret (may be NULL). */
static long post(struct ck_apiserver *server, const char *path, const char *body, json_t **ret)
{
    struct response r;
    http_call(server, "POST", path, body, NULL, &r);
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

#define PODS "/api/v1/namespaces/default/pods"
#define PCS  "/apis/scheduling.k8s.io/v1/priorityclasses"

static json_t *pod_spec_of(const json_t *pod)
{
    return json_object_get((json_t *)pod, "spec");
}

static void test_priority(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    json_t *out = NULL;

    /* no class, no default: priority 0, PreemptLowerPriority */
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"name\":\"p0\"},\"spec\":{\"containers\":"
                          "[{\"name\":\"c\",\"image\":\"x\"}]}}",
                          &out),
                     201);
    assert_int_equal(json_integer_value(json_object_get(pod_spec_of(out), "priority")), 0);
    assert_string_equal(json_string_value(json_object_get(pod_spec_of(out), "preemptionPolicy")),
                        "PreemptLowerPriority");
    assert_null(json_object_get(pod_spec_of(out), "priorityClassName"));
    json_decref(out);

    /* a system class by name */
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"name\":\"crit\"},\"spec\":{\"priorityClassName\":"
                          "\"system-node-critical\",\"containers\":[{\"name\":\"c\",\"image\":"
                          "\"x\"}]}}",
                          &out),
                     201);
    assert_int_equal(json_integer_value(json_object_get(pod_spec_of(out), "priority")), 2000001000);
    json_decref(out);

    /* a missing class */
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"generateName\":\"gen-\"},\"spec\":{"
                          "\"priorityClassName\":\"nope\",\"containers\":[{\"name\":\"c\","
                          "\"image\":\"x\"}]}}",
                          &out),
                     403);
    assert_string_equal(message(out),
                        "pods \"gen-\" is forbidden: no PriorityClass with name nope was found");
    json_decref(out);

    /* a global default, then a second one */
    assert_int_equal(post(server, PCS,
                          "{\"metadata\":{\"name\":\"high\"},\"value\":1000,\"globalDefault\":true,"
                          "\"preemptionPolicy\":\"Never\"}",
                          NULL),
                     201);
    assert_int_equal(post(server, PCS,
                          "{\"metadata\":{\"name\":\"higher\"},\"value\":2000,"
                          "\"globalDefault\":true}",
                          &out),
                     403);
    assert_string_equal(message(out),
                        "priorityclasses.scheduling.k8s.io \"higher\" is forbidden: PriorityClass "
                        "high is already marked as default. Only one default can exist");
    json_decref(out);
    /* the default itself may be written again */
    struct response r;
    http_call(server, "PATCH", PCS "/high", "{\"description\":\"d\"}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);

    /* a pod without a class now gets the default's name, value and policy */
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":"
                          "[{\"name\":\"c\",\"image\":\"x\"}]}}",
                          &out),
                     201);
    assert_string_equal(json_string_value(json_object_get(pod_spec_of(out), "priorityClassName")),
                        "high");
    assert_int_equal(json_integer_value(json_object_get(pod_spec_of(out), "priority")), 1000);
    assert_string_equal(json_string_value(json_object_get(pod_spec_of(out), "preemptionPolicy")),
                        "Never");
    json_decref(out);

    /* a priority that differs from the class's */
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"name\":\"p2\"},\"spec\":{\"priority\":7,"
                          "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                          &out),
                     403);
    assert_string_equal(message(out),
                        "pods \"p2\" is forbidden: the integer value of priority (7) must not be "
                        "provided in pod spec; priority admission controller computed 1000 from "
                        "the given PriorityClass name");
    json_decref(out);

    /* an update that leaves priority out keeps it */
    http_call(server, "GET", PODS "/p1", NULL, NULL, &r);
    json_t *p1 = json_loads(r.body, 0, NULL);
    response_release(&r);
    json_object_del(pod_spec_of(p1), "priority");
    json_object_del(pod_spec_of(p1), "preemptionPolicy");
    char *body = json_dumps(p1, JSON_COMPACT);
    http_call(server, "PUT", PODS "/p1", body, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *updated = json_loads(r.body, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(pod_spec_of(updated), "priority")), 1000);
    json_decref(updated);
    response_release(&r);
    free(body);
    json_decref(p1);
    test_server_stop(server, dir);
}

#define ICS       "/apis/networking.k8s.io/v1/ingressclasses"
#define INGRESSES "/apis/networking.k8s.io/v1/namespaces/default/ingresses"

static const char *ingress_class_of(const json_t *ing)
{
    return json_string_value(json_object_get(json_object_get(ing, "spec"), "ingressClassName"));
}

/* POSTs the Ingress body: created, with class want (NULL: none). */
static void expect_ingress_class(struct ck_apiserver *server, const char *body, const char *want)
{
    json_t *out = NULL;
    assert_int_equal(post(server, INGRESSES, body, &out), 201);
    if (want)
        assert_string_equal(ingress_class_of(out), want);
    else
        assert_null(ingress_class_of(out));
    json_decref(out);
}

static void test_default_ingress_class(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    static const char ingress[] = "{\"metadata\":{\"generateName\":\"i-\"},\"spec\":{"
                                  "\"defaultBackend\":{\"service\":{\"name\":\"s\",\"port\":{"
                                  "\"number\":80}}}}}";
    /* no default class: none set */
    expect_ingress_class(server, ingress, NULL);

    assert_int_equal(post(server, ICS,
                          "{\"metadata\":{\"name\":\"b\",\"annotations\":{\"ingressclass."
                          "kubernetes.io/is-default-class\":\"true\"}},\"spec\":{\"controller\":"
                          "\"x.io/c\"}}",
                          NULL),
                     201);
    assert_int_equal(
        post(server, ICS,
             "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"controller\":\"x.io/c\"}}", NULL),
        201);
    expect_ingress_class(server, ingress, "b");

    /* a newer default wins */
    sleep(1); /* creationTimestamp has seconds */
    assert_int_equal(post(server, ICS,
                          "{\"metadata\":{\"name\":\"c\",\"annotations\":{\"ingressclass."
                          "kubernetes.io/is-default-class\":\"true\"}},\"spec\":{\"controller\":"
                          "\"x.io/c\"}}",
                          NULL),
                     201);
    expect_ingress_class(server, ingress, "c");

    /* a class given by field or by the old annotation is kept */
    expect_ingress_class(server,
                         "{\"metadata\":{\"name\":\"given\"},\"spec\":{\"ingressClassName\":"
                         "\"plain\",\"defaultBackend\":{\"service\":{\"name\":\"s\",\"port\":{"
                         "\"number\":80}}}}}",
                         "plain");
    expect_ingress_class(server,
                         "{\"metadata\":{\"name\":\"annotated\",\"annotations\":{\"kubernetes.io/"
                         "ingress.class\":\"nginx\"}},\"spec\":{\"defaultBackend\":{\"service\":{"
                         "\"name\":\"s\",\"port\":{\"number\":80}}}}}",
                         NULL);
    test_server_stop(server, dir);
}

#define SCS  "/apis/storage.k8s.io/v1/storageclasses"
#define PVCS "/api/v1/namespaces/default/persistentvolumeclaims"

/* POSTs a claim with the given metadata and spec members; expects want as its class. */
static void expect_claim_class(struct ck_apiserver *server, const char *meta, const char *spec,
                               const char *want)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"generateName\":\"c-\"%s},\"spec\":{%s\"accessModes\":["
             "\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}",
             meta, spec);
    json_t *out = NULL;
    assert_int_equal(post(server, PVCS, body, &out), 201);
    const char *got =
        json_string_value(json_object_get(json_object_get(out, "spec"), "storageClassName"));
    if (want)
        assert_string_equal(got, want);
    else
        assert_null(got);
    json_decref(out);
}

static void test_default_storage_class(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    expect_claim_class(server, "", "", NULL); /* no default class: none set */
    assert_int_equal(post(server, SCS,
                          "{\"metadata\":{\"name\":\"z\",\"annotations\":{\"storageclass.beta."
                          "kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":\"x.io/p\"}",
                          NULL),
                     201);
    assert_int_equal(
        post(server, SCS, "{\"metadata\":{\"name\":\"plain\"},\"provisioner\":\"x.io/p\"}", NULL),
        201);
    expect_claim_class(server, "", "", "z"); /* the beta annotation marks a default too */
    /* created in the same second the smaller name wins, later the newer: "c" either way */
    assert_int_equal(post(server, SCS,
                          "{\"metadata\":{\"name\":\"c\",\"annotations\":{\"storageclass."
                          "kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":\"x.io/p\"}",
                          NULL),
                     201);
    expect_claim_class(server, "", "", "c");
    expect_claim_class(server, "", "\"storageClassName\":null,", "c");
    /* a class asked for is kept: by name, "" (no class), or the beta annotation */
    expect_claim_class(server, "", "\"storageClassName\":\"plain\",", "plain");
    expect_claim_class(server, "", "\"storageClassName\":\"\",", "");
    expect_claim_class(server,
                       ",\"annotations\":{\"volume.beta.kubernetes.io/storage-class\":\"plain\"}",
                       "", NULL);
    test_server_stop(server, dir);
}

/* StorageObjectInUseProtection: the protection finalizers on new volumes and claims. */
static void test_storage_object_in_use_protection(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    json_t *out = NULL;
    assert_int_equal(post(server, "/api/v1/persistentvolumes",
                          "{\"metadata\":{\"name\":\"pv1\",\"finalizers\":[\"x.io/keep\"]},"
                          "\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":["
                          "\"ReadWriteOnce\"],\"hostPath\":{\"path\":\"/d\"}}}",
                          &out),
                     201);
    const json_t *f = json_object_get(json_object_get(out, "metadata"), "finalizers");
    assert_int_equal(json_array_size(f), 2);
    assert_string_equal(json_string_value(json_array_get(f, 0)), "x.io/keep");
    assert_string_equal(json_string_value(json_array_get(f, 1)), "kubernetes.io/pv-protection");
    json_decref(out);
    out = NULL;
    assert_int_equal(post(server, "/api/v1/namespaces/default/persistentvolumeclaims",
                          "{\"metadata\":{\"name\":\"c1\",\"finalizers\":[\"kubernetes.io/"
                          "pvc-protection\"]},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
                          "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}",
                          &out),
                     201);
    f = json_object_get(json_object_get(out, "metadata"), "finalizers");
    assert_int_equal(json_array_size(f), 1); /* already there: not twice */
    assert_string_equal(json_string_value(json_array_get(f, 0)), "kubernetes.io/pvc-protection");
    json_decref(out);
    test_server_stop(server, dir);
}

#define RCS "/apis/node.k8s.io/v1/runtimeclasses"

/* POSTs a pod named name with the given spec members (JSON text); status, answer in *ret. */
static long post_pod(struct ck_apiserver *server, const char *name, const char *spec_members,
                     json_t **ret)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s%s\"containers\":[{\"name\":\"c\","
             "\"image\":\"x\"}]}}",
             name, spec_members, *spec_members ? "," : "");
    return post(server, PODS, body, ret);
}

static void test_runtime_class(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    assert_int_equal(
        post(server, RCS,
             "{\"metadata\":{\"name\":\"kata\"},\"handler\":\"kata\",\"overhead\":{\"podFixed\":{"
             "\"cpu\":\"250m\",\"memory\":\"120Mi\"}},\"scheduling\":{\"nodeSelector\":{"
             "\"sandbox\":\"kata\"},\"tolerations\":[{\"key\":\"sandbox\",\"operator\":"
             "\"Exists\",\"effect\":\"NoSchedule\"}]}}",
             NULL),
        201);
    json_t *out = NULL;
    assert_int_equal(post_pod(server, "a",
                              "\"runtimeClassName\":\"kata\",\"nodeSelector\":{"
                              "\"disk\":\"ssd\"}",
                              &out),
                     201);
    const json_t *spec = pod_spec_of(out);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "overhead"), "cpu")), "250m");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "nodeSelector"), "sandbox")),
        "kata");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "nodeSelector"), "disk")), "ssd");
    bool tolerated = false;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "tolerations"), i, t)
    {
        tolerated |= strcmp(json_string_value(json_object_get(t, "key")) ?: "", "sandbox") == 0;
    }
    assert_true(tolerated);
    json_decref(out);

    /* a toleration of everything covers the class's: merged away */
    assert_int_equal(post_pod(server, "b",
                              "\"runtimeClassName\":\"kata\",\"tolerations\":[{\"operator\":"
                              "\"Exists\"}]",
                              &out),
                     201);
    assert_int_equal(json_array_size(json_object_get(pod_spec_of(out), "tolerations")), 1);
    json_decref(out);

    /* the same overhead written otherwise is the same */
    assert_int_equal(post_pod(server, "c",
                              "\"runtimeClassName\":\"kata\",\"overhead\":{\"cpu\":\"0.25\","
                              "\"memory\":\"120Mi\"}",
                              NULL),
                     201);

    static const struct {
        const char *spec, *msg;
    } refused[] = {
        {"\"runtimeClassName\":\"kata\",\"nodeSelector\":{\"sandbox\":\"gvisor\"}",
         "pods \"r\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = "
         "kata; pod.spec.nodeSelector[sandbox] = gvisor"},
        {"\"runtimeClassName\":\"kata\",\"overhead\":{\"cpu\":\"1\"}",
         "pods \"r\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's "
         "defined Overhead"},
        {"\"overhead\":{\"cpu\":\"1\"}",
         "pods \"r\" is forbidden: pod rejected: Pod Overhead set without corresponding "
         "RuntimeClass defined Overhead"},
        {"\"runtimeClassName\":\"runsc\"",
         "pods \"r\" is forbidden: pod rejected: RuntimeClass \"runsc\" not found"},
    };
    for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
        assert_int_equal(post_pod(server, "r", refused[k].spec, &out), 403);
        assert_string_equal(message(out), refused[k].msg);
        json_decref(out);
    }
    test_server_stop(server, dir);
}

static void test_always_pull_images_and_external_ips(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start_admission(
        dir, "AlwaysPullImages,DenyServiceExternalIPs", "ServiceAccount");
    assert_non_null(server);
    json_t *out = NULL;
    assert_int_equal(post(server, PODS,
                          "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{"
                          "\"name\":\"i\",\"image\":\"x:1\",\"imagePullPolicy\":\"Never\"}],"
                          "\"containers\":[{\"name\":\"c\",\"image\":\"x:1\","
                          "\"imagePullPolicy\":\"IfNotPresent\"}]}}",
                          &out),
                     201);
    const json_t *spec = pod_spec_of(out);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(spec, "containers"), 0),
                                          "imagePullPolicy")),
        "Always");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(spec, "initContainers"), 0), "imagePullPolicy")),
        "Always");
    json_decref(out);

    /* the validating step, on a pod some later step left otherwise */
    json_t *pod = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"containers\":["
                       "{\"name\":\"a\",\"image\":\"x\",\"imagePullPolicy\":\"Never\"},"
                       "{\"name\":\"b\",\"image\":\"y\",\"imagePullPolicy\":\"IfNotPresent\"}]}}");
    struct ck__admission_attrs a = {.op = CK__ADMISSION_CREATE,
                                    .kind = ck_kind_lookup("", "v1", "pods"),
                                    .namespace = "default",
                                    .name = "q",
                                    .obj = pod};
    struct ck_err err = {0};
    assert_int_equal(ck__admission_always_pull_images.validate(NULL, &a, &err), CK_EPERM);
    assert_string_equal(err.msg, "pods \"q\" is forbidden: [spec.containers[0].imagePullPolicy: "
                                 "Unsupported value: \"Never\": supported values: \"Always\", "
                                 "spec.containers[1].imagePullPolicy: Unsupported value: "
                                 "\"IfNotPresent\": supported values: \"Always\"]");
    ck_err_release(&err);
    json_decref(pod);

    static const char svc[] = "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"ports\":[{"
                              "\"port\":80}]%s}}";
    char body[512];
    snprintf(body, sizeof(body), svc, "ext", ",\"externalIPs\":[\"192.0.2.1\"]");
    assert_int_equal(post(server, "/api/v1/namespaces/default/services", body, &out), 403);
    assert_string_equal(message(out),
                        "services \"ext\" is forbidden: Use of external IPs is denied "
                        "by admission control");
    json_decref(out);
    snprintf(body, sizeof(body), svc, "plain", "");
    assert_int_equal(post(server, "/api/v1/namespaces/default/services", body, NULL), 201);
    struct response r;
    http_call(server, "PATCH", "/api/v1/namespaces/default/services/plain",
              "{\"spec\":{\"externalIPs\":[\"192.0.2.1\"]}}",
              (const char *const[]){"Content-Type: application/merge-patch+json", NULL}, &r);
    assert_int_equal(r.status, 403);
    response_release(&r);
    test_server_stop(server, dir);
}

static void test_limit_ranger(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    json_t *out = NULL;
    /* the kind's own validation */
    assert_int_equal(post(server, "/api/v1/namespaces/default/limitranges",
                          "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"limits\":[{\"type\":"
                          "\"Container\",\"min\":{\"cpu\":\"1\"},\"max\":{\"cpu\":\"500m\"}},{"
                          "\"type\":\"Pod\",\"default\":{\"cpu\":\"1\"}}]}}",
                          &out),
                     422);
    assert_string_equal(
        message(out), "LimitRange \"bad\" is invalid: [spec.limits[0].min[cpu]: Invalid value: "
                      "\"1\": min value 1 is greater than max value 500m, spec.limits[1].default: "
                      "Forbidden: may not be specified when `type` is 'Pod']");
    json_decref(out);
    assert_int_equal(
        post(server, "/api/v1/namespaces/default/limitranges",
             "{\"metadata\":{\"name\":\"lr\"},\"spec\":{\"limits\":[{\"type\":\"Container\","
             "\"default\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"},\"defaultRequest\":{\"cpu\":"
             "\"100m\"},\"min\":{\"cpu\":\"50m\"},\"max\":{\"cpu\":\"1\"},\"maxLimitRequestRatio\":"
             "{\"cpu\":\"10\"}},{\"type\":\"Pod\",\"max\":{\"memory\":\"1Gi\"}},{\"type\":"
             "\"PersistentVolumeClaim\",\"min\":{\"storage\":\"1Gi\"},\"max\":{\"storage\":"
             "\"10Gi\"}}]}}",
             NULL),
        201);

    /* defaults, and the annotation that says so */
    assert_int_equal(post_pod(server, "plain", "", &out), 201);
    const json_t *res = json_object_get(
        json_array_get(json_object_get(pod_spec_of(out), "containers"), 0), "resources");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "cpu")),
                        "100m");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "limits"), "memory")), "256Mi");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(out, "metadata"), "annotations"),
                            "kubernetes.io/limit-ranger")),
                        "LimitRanger plugin set: cpu request for container c; cpu, memory limit "
                        "for container c");
    json_decref(out);

    static const struct {
        const char *name, *spec, *msg;
    } refused[] = {
        {"small",
         "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":"
         "\"10m\"}}}]",
         "pods \"small\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, "
         "cpu max limit to request ratio per Container is 10, but provided ratio is 50.000000]"},
        {"big",
         "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":{\"cpu\":"
         "\"2\"}}}]",
         "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"},
        {"wide",
         "\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":"
         "\"600Mi\"}}},{\"name\":\"b\",\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":"
         "\"600Mi\"}}}]",
         "pods \"wide\" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1200Mi"},
    };
    for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
        char body[1024];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s}}",
                 refused[k].name, refused[k].spec);
        assert_int_equal(post(server, PODS, body, &out), 403);
        assert_string_equal(message(out), refused[k].msg);
        json_decref(out);
    }

    assert_int_equal(post(server, "/api/v1/namespaces/default/persistentvolumeclaims",
                          "{\"metadata\":{\"name\":\"huge\"},\"spec\":{\"accessModes\":["
                          "\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":"
                          "\"100Gi\"}}}}",
                          &out),
                     403);
    assert_string_equal(message(out),
                        "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per "
                        "PersistentVolumeClaim is 10Gi, but request is 100Gi");
    json_decref(out);
    test_server_stop(server, dir);
}

static void test_immortal_namespaces(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-admission-XXXXXX";
    struct ck_apiserver *server = test_server_start(dir);
    assert_non_null(server);
    struct response r;
    http_call(server, "DELETE", "/api/v1/namespaces/kube-system", NULL, NULL, &r);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body,
                           "namespaces \\\"kube-system\\\" is forbidden: this namespace may not be "
                           "deleted"));
    response_release(&r);
    /* the chain without NamespaceLifecycle: nothing keeps it (kube-apiserver alike) */
    test_server_stop(server, dir);
    char dir2[] = "/tmp/ckube-admission-XXXXXX";
    server = test_server_start_admission(dir2, NULL, "ServiceAccount,NamespaceLifecycle");
    assert_non_null(server);
    http_call(server, "DELETE", "/api/v1/namespaces/kube-public", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    test_server_stop(server, dir2);
}

/* ---- NodeRestriction ---------------------------------------------------------------- */

/* A node's writes narrowed to its own objects; other users and the server untouched. */
static void test_node_restriction(void **state)
{
    (void)state;
    struct ck_auth_user *node = ck_auth_user_new("system:node:n1", "");
    assert_non_null(node);
    assert_int_equal(ck_auth_user_add_group(node, "system:nodes"), 0);
    struct ck_auth_user *admin = ck_auth_user_new("system:node:n1", ""); /* not in the group */
    assert_non_null(admin);
    const struct ck_kind *pods = ck_kind_with_role(CK_KIND_ROLE_POD);
    const struct ck_kind *nodes = ck_kind_with_role(CK_KIND_ROLE_NODE);
    const struct ck_kind *leases = ck_kind_with_role(CK_KIND_ROLE_LEASE);
    json_t *on_n2 = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n2\"}}");
    json_t *on_n1 = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\"}}");
    static const struct {
        enum ck__admission_op op;
        int kind; /* 0 pods, 1 nodes, 2 leases */
        const char *namespace, *name, *sub;
        bool old_on_n1;
        const char *msg; /* NULL: admitted */
    } cases[] = {
        {CK__ADMISSION_UPDATE, 0, "default", "p", "status", true, NULL},
        {CK__ADMISSION_UPDATE, 0, "default", "p", "status", false,
         "pods \"p\" is forbidden: node \"n1\" can only update pod status for pods with "
         "spec.nodeName set to itself"},
        {CK__ADMISSION_UPDATE, 0, "default", "p", NULL, true,
         "pods \"p\" is forbidden: unexpected operation UPDATE, node \"n1\" can only create and "
         "delete mirror pods"},
        {CK__ADMISSION_DELETE, 0, "default", "p", NULL, true, NULL},
        {CK__ADMISSION_DELETE, 0, "default", "p", NULL, false,
         "pods \"p\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to "
         "itself"},
        {CK__ADMISSION_UPDATE, 1, "", "n1", "status", true, NULL},
        {CK__ADMISSION_UPDATE, 1, "", "n2", "status", true,
         "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""},
        {CK__ADMISSION_UPDATE, 2, "kube-node-lease", "n1", NULL, true, NULL},
        {CK__ADMISSION_UPDATE, 2, "default", "n1", NULL, true,
         "leases.coordination.k8s.io \"n1\" is forbidden: can only access leases in the "
         "\"kube-node-lease\" system namespace"},
        {CK__ADMISSION_UPDATE, 2, "kube-node-lease", "n2", NULL, true,
         "leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the "
         "same name as the requesting node"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct ck_kind *kinds[] = {pods, nodes, leases};
        json_t *obj = json_deep_copy(cases[i].old_on_n1 ? on_n1 : on_n2);
        json_object_set_new(json_object_get(obj, "metadata"), "name", json_string(cases[i].name));
        struct ck__admission_attrs a = {.op = cases[i].op,
                                        .kind = kinds[cases[i].kind],
                                        .subresource = cases[i].sub,
                                        .namespace = cases[i].namespace,
                                        .name = cases[i].name,
                                        .obj = cases[i].op == CK__ADMISSION_DELETE ? NULL : obj,
                                        .old = obj,
                                        .user = node};
        struct ck_err err = {0};
        int r = ck__admission_node_restriction.admit(NULL, &a, &err);
        if (cases[i].msg) {
            assert_int_equal(r, CK_EPERM);
            assert_string_equal(err.msg, cases[i].msg);
        } else
            assert_int_equal(r, 0);
        ck_err_release(&err);
        /* anyone else, and the server itself, pass */
        a.user = admin;
        assert_int_equal(ck__admission_node_restriction.admit(NULL, &a, &err), 0);
        a.user = NULL;
        assert_int_equal(ck__admission_node_restriction.admit(NULL, &a, &err), 0);
        json_decref(obj);
    }
    json_decref(on_n1);
    json_decref(on_n2);
    ck_auth_user_free(node);
    ck_auth_user_free(admin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_chain_in_kubernetes_order),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_always_deny_refuses_writes),
        cmocka_unit_test(test_default_toleration_seconds),
        cmocka_unit_test(test_taint_nodes_by_condition),
        cmocka_unit_test(test_priority),
        cmocka_unit_test(test_default_ingress_class),
        cmocka_unit_test(test_default_storage_class),
        cmocka_unit_test(test_storage_object_in_use_protection),
        cmocka_unit_test(test_runtime_class),
        cmocka_unit_test(test_limit_ranger),
        cmocka_unit_test(test_always_pull_images_and_external_ips),
        cmocka_unit_test(test_immortal_namespaces),
        cmocka_unit_test(test_node_restriction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
