/*
 * test_kinds.c - tests for lib/api/kinds.c: the registry serves the kinds of
 * the contract's resource table, lookups by group/version/resource and by
 * role, names in messages, subresource tables, field selector labels and
 * values per kind, and kinds registered and unregistered at run time, also
 * while other threads read the registry (labelled `concurrency`, so it runs
 * under ThreadSanitizer too).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ckube/api.h"

static void test_registry_matches_the_resource_table(void **state)
{
    (void)state;
    static const struct {
        const char *group, *resource, *kind, *short_name;
        bool namespaced;
    } want[] = {
        {"", "namespaces", "Namespace", "ns", false},
        {"", "pods", "Pod", "po", true},
        {"", "nodes", "Node", "no", false},
        {"", "events", "Event", "ev", true},
        {"", "serviceaccounts", "ServiceAccount", "sa", true},
        {"", "configmaps", "ConfigMap", "cm", true},
        {"", "secrets", "Secret", NULL, true},
        {"", "services", "Service", "svc", true},
        {"", "endpoints", "Endpoints", "ep", true},
        {"", "persistentvolumes", "PersistentVolume", "pv", false},
        {"", "podtemplates", "PodTemplate", NULL, true},
        {"", "limitranges", "LimitRange", "limits", true},
        {"", "resourcequotas", "ResourceQuota", "quota", true},
        {"apps", "deployments", "Deployment", "deploy", true},
        {"apps", "replicasets", "ReplicaSet", "rs", true},
        {"discovery.k8s.io", "endpointslices", "EndpointSlice", NULL, true},
        {"networking.k8s.io", "ingressclasses", "IngressClass", NULL, false},
        {"networking.k8s.io", "ingresses", "Ingress", "ing", true},
        {"networking.k8s.io", "networkpolicies", "NetworkPolicy", "netpol", true},
        {"storage.k8s.io", "storageclasses", "StorageClass", "sc", false},
        {"storage.k8s.io", "csidrivers", "CSIDriver", NULL, false},
        {"storage.k8s.io", "csinodes", "CSINode", NULL, false},
        {"storage.k8s.io", "csistoragecapacities", "CSIStorageCapacity", NULL, true},
        {"storage.k8s.io", "volumeattachments", "VolumeAttachment", NULL, false},
        {"scheduling.k8s.io", "priorityclasses", "PriorityClass", "pc", false},
        {"node.k8s.io", "runtimeclasses", "RuntimeClass", NULL, false},
        {"batch", "jobs", "Job", NULL, true},
        {"batch", "cronjobs", "CronJob", "cj", true},
        {"certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest", "csr",
         false},
        {"", "replicationcontrollers", "ReplicationController", "rc", true},
        {"", "persistentvolumeclaims", "PersistentVolumeClaim", "pvc", true},
        {"apps", "daemonsets", "DaemonSet", "ds", true},
        {"apps", "statefulsets", "StatefulSet", "sts", true},
        {"apps", "controllerrevisions", "ControllerRevision", NULL, true},
        {"events.k8s.io", "events", "Event", "ev", true},
        {"autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa",
         true}, /* v2 */
        {"autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa",
         true}, /* v1 */
        {"policy", "poddisruptionbudgets", "PodDisruptionBudget", "pdb", true},
        {"rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", NULL, false},
        {"rbac.authorization.k8s.io", "clusterroles", "ClusterRole", NULL, false},
        {"admissionregistration.k8s.io", "mutatingwebhookconfigurations",
         "MutatingWebhookConfiguration", NULL, false},
        {"admissionregistration.k8s.io", "validatingwebhookconfigurations",
         "ValidatingWebhookConfiguration", NULL, false},
        {"admissionregistration.k8s.io", "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
         NULL, false},
        {"admissionregistration.k8s.io", "validatingadmissionpolicybindings",
         "ValidatingAdmissionPolicyBinding", NULL, false},
        {"rbac.authorization.k8s.io", "rolebindings", "RoleBinding", NULL, true},
        {"rbac.authorization.k8s.io", "roles", "Role", NULL, true},
        {"coordination.k8s.io", "leases", "Lease", NULL, true},
        {"flowcontrol.apiserver.k8s.io", "flowschemas", "FlowSchema", NULL, false},
        {"flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations",
         "PriorityLevelConfiguration", NULL, false},
        {"apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", "crd",
         false},
        {"apiregistration.k8s.io", "apiservices", "APIService", NULL, false},
        {"authentication.k8s.io", "tokenreviews", "TokenReview", NULL, false},
        {"authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview", NULL, false},
        {"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", NULL, false},
        {"authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", NULL,
         true},
        {"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", NULL,
         false},
        {"authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview", NULL, false},
        {"example.ckube.io", "frobbers", "Frobber", NULL, true},
        {"metrics.k8s.io", "nodes", "NodeMetrics", NULL, false}, /* v1beta1 */
        {"metrics.k8s.io", "pods", "PodMetrics", NULL, true},
    };
    size_t n;
    ck_kinds(&n);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        bool beta = strcmp(want[i].group, "metrics.k8s.io") == 0;
        /* autoscaling's v2, its preferred version, is registered before its v1 */
        bool v2 = strcmp(want[i].group, "autoscaling") == 0 &&
                  strcmp(want[i + 1].group, "autoscaling") == 0;
        const struct ck_kind *k = ck_kind_lookup(want[i].group,
                                                 beta ? "v1beta1"
                                                 : v2 ? "v2"
                                                      : "v1",
                                                 want[i].resource);
        assert_non_null(k);
        assert_string_equal(k->kind, want[i].kind);
        if (want[i].short_name)
            assert_string_equal(k->short_names[0], want[i].short_name);
        else
            assert_null(k->short_names);
        assert_int_equal(k->namespaced, want[i].namespaced);
        assert_int_equal(k->n_columns > 0, true);
    }
    assert_null(ck_kind_lookup("apps", "v1", "pods"));
    assert_null(ck_kind_lookup("", "v2", "pods"));
    assert_null(ck_kind_lookup("", "v1", "volumeattachments"));
}

static void test_names_in_messages(void **state)
{
    (void)state;
    char buf[64];
    const struct ck_kind *d = ck_kind_lookup("apps", "v1", "deployments");
    const struct ck_kind *p = ck_kind_lookup("", "v1", "pods");
    assert_string_equal(ck_kind_qualified_resource(d, buf, sizeof(buf)), "deployments.apps");
    assert_string_equal(ck_kind_qualified_resource(p, buf, sizeof(buf)), "pods");
    assert_string_equal(ck_kind_api_version(d, buf, sizeof(buf)), "apps/v1");
    assert_string_equal(ck_kind_api_version(p, buf, sizeof(buf)), "v1");
    assert_true(d->has_generation);
    assert_false(p->has_generation);
}

static bool supports(const struct ck_kind *k, const char *label)
{
    for (const char *const *l = ck_kind_field_label_names(k); *l; l++)
        if (strcmp(*l, label) == 0)
            return true;
    return false;
}

static void test_field_labels_per_kind(void **state)
{
    (void)state;
    const struct ck_kind *pod = ck_kind_lookup("", "v1", "pods");
    const struct ck_kind *event = ck_kind_lookup("", "v1", "events");
    const struct ck_kind *rs = ck_kind_lookup("apps", "v1", "replicasets");
    const struct ck_kind *deploy = ck_kind_lookup("apps", "v1", "deployments");
    assert_true(supports(pod, "metadata.name"));
    assert_true(supports(pod, "spec.nodeName"));
    assert_true(supports(pod, "status.phase"));
    assert_false(supports(pod, "spec.foo"));
    assert_true(supports(event, "involvedObject.uid"));
    assert_true(supports(event, "source"));
    assert_true(supports(rs, "status.replicas"));
    assert_true(supports(deploy, "metadata.namespace"));
    assert_false(supports(deploy, "status.replicas"));
}

static void test_field_values_render_like_kubernetes(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *pod = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
                             "\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true},"
                             "\"status\":{\"phase\":\"Running\"}}",
                             0, &jerr);
    json_t *event = json_loads("{\"source\":{\"component\":\"kubelet\"}}", 0, &jerr);
    json_t *rs = json_loads("{\"status\":{\"replicas\":3}}", 0, &jerr);
    json_t *empty = json_object();
    char buf[32];
    const struct ck_kind *pk = ck_kind_lookup("", "v1", "pods");
    const struct ck_kind *ek = ck_kind_lookup("", "v1", "events");
    const struct ck_kind *rk = ck_kind_lookup("apps", "v1", "replicasets");
    const struct ck_kind *nk = ck_kind_lookup("", "v1", "nodes");
    assert_string_equal(ck_kind_field_value(pk, "metadata.namespace", pod, buf, 32), "ns");
    assert_string_equal(ck_kind_field_value(pk, "spec.nodeName", pod, buf, 32), "n1");
    assert_string_equal(ck_kind_field_value(pk, "spec.hostNetwork", pod, buf, 32), "true");
    assert_string_equal(ck_kind_field_value(pk, "spec.hostNetwork", empty, buf, 32), "false");
    assert_null(ck_kind_field_value(pk, "status.podIP", pod, buf, 32));
    assert_string_equal(ck_kind_field_value(ek, "source", event, buf, 32), "kubelet");
    assert_string_equal(ck_kind_field_value(rk, "status.replicas", rs, buf, 32), "3");
    assert_string_equal(ck_kind_field_value(rk, "status.replicas", empty, buf, 32), "0");
    assert_string_equal(ck_kind_field_value(nk, "spec.unschedulable", empty, buf, 32), "false");

    /* through a parsed selector, as the API server will use it */
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("spec.nodeName=n1,status.phase!=Failed", &s, &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, ck_kind_field_label_names(pk), &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, ck_kind_field_label_names(nk), &err),
                     CK_EINVAL);
    assert_string_equal(err.msg, "field label not supported: spec.nodeName");
    ck_field_selector_free(s);
    json_decref(pod);
    json_decref(event);
    json_decref(rs);
    json_decref(empty);
}

static void test_roles_and_subresources(void **state)
{
    (void)state;
    const struct ck_kind *ns = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    assert_non_null(ns);
    assert_ptr_equal(ns, ck_kind_lookup("", "v1", "namespaces"));
    assert_int_equal(ns->name_rule, CK_NAME_DNS_LABEL);
    /* the kinds node restriction and the node authorizer find by role */
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_NODE), ck_kind_lookup("", "v1", "nodes"));
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_LEASE),
                     ck_kind_lookup("coordination.k8s.io", "v1", "leases"));
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_POD), ck_kind_lookup("", "v1", "pods"));
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_SECRET), ck_kind_lookup("", "v1", "secrets"));
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_CONFIG_MAP),
                     ck_kind_lookup("", "v1", "configmaps"));
    /* the certificate admission plugins find CertificateSigningRequests by role */
    assert_ptr_equal(ck_kind_with_role(CK_KIND_ROLE_CERTIFICATE_SIGNING_REQUEST),
                     ck_kind_lookup("certificates.k8s.io", "v1", "certificatesigningrequests"));

    const struct ck_kind *pod = ck_kind_lookup("", "v1", "pods");
    const struct ck_subresource *binding = ck_kind_subresource(pod, "binding");
    assert_non_null(binding);
    assert_int_equal(binding->part, CK_SUBRESOURCE_CUSTOM);
    assert_true(ck_subresource_allows(binding, "create"));
    assert_false(ck_subresource_allows(binding, "get"));
    assert_int_equal(ck_kind_subresource(pod, "log")->part, CK_SUBRESOURCE_UNSERVED);
    assert_null(ck_kind_subresource(pod, "scale"));
    assert_null(ck_kind_subresource_part(pod, CK_SUBRESOURCE_SCALE));

    const struct ck_kind *rs = ck_kind_lookup("apps", "v1", "replicasets");
    const struct ck_subresource *scale = ck_kind_subresource_part(rs, CK_SUBRESOURCE_SCALE);
    assert_non_null(scale);
    assert_string_equal(scale->name, "scale");
    assert_string_equal(scale->kind, "Scale");
    assert_true(ck_subresource_allows(scale, "patch"));

    /* a namespace's spec.finalizers hold it as metadata.finalizers do */
    json_error_t jerr;
    json_t *obj = json_loads("{\"spec\":{\"finalizers\":[\"kubernetes\"]}}", 0, &jerr);
    assert_true(ck_kind_has_finalizers(ns, obj));
    assert_false(ck_kind_has_finalizers(pod, obj));
    json_decref(obj);
}

/* A field label that is no single field of the object: the kind's field_value renders it. */
static const char *gizmo_field_value(const char *label, const json_t *obj, char *buf, size_t size)
{
    (void)label;
    json_int_t w = json_integer_value(json_object_get(json_object_get(obj, "spec"), "width"));
    json_int_t h = json_integer_value(json_object_get(json_object_get(obj, "spec"), "height"));
    snprintf(buf, size, "%lld", (long long)(w * h));
    return buf;
}

static const struct ck_field_label gizmo_labels[] = {
    {"spec.area", NULL, CK_FIELD_LABEL_STRING},
    {"spec.width", "spec.width", CK_FIELD_LABEL_INT},
};

static const struct ck_kind gizmo_kind = {
    .group = "test.ckube.io",
    .version = "v1",
    .kind = "Gizmo",
    .resource = "gizmos",
    .schema = "io.ckube.test.v1.Gizmo",
    .field_labels = gizmo_labels,
    .n_field_labels = 2,
    .field_value = gizmo_field_value,
};

static void test_computed_field_labels(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *obj = json_loads("{\"spec\":{\"width\":3,\"height\":4}}", 0, &jerr);
    char buf[32];
    assert_string_equal(ck_kind_field_value(&gizmo_kind, "spec.area", obj, buf, 32), "12");
    assert_string_equal(ck_kind_field_value(&gizmo_kind, "spec.width", obj, buf, 32), "3");
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("spec.area=12", &s, &err), 0);
    assert_true(ck_field_selector_matches(s, obj, ck_kind_field_getter, &gizmo_kind));
    ck_field_selector_free(s);
    json_decref(obj);
}

/* ---- kinds registered at run time ---------------------------------------- */

#define MANY_LABELS 40

static struct ck_field_label many_labels[MANY_LABELS];
static char many_label_names[MANY_LABELS][32];

static const struct ck_kind widget_kind = {
    .group = "test.ckube.io",
    .version = "v1",
    .kind = "Widget",
    .list_kind = "WidgetList",
    .resource = "widgets",
    .singular = "widget",
    .namespaced = true,
    .schema = "io.ckube.test.v1.Widget",
    .field_labels = many_labels,
    .n_field_labels = MANY_LABELS,
};

static void test_register_and_unregister(void **state)
{
    (void)state;
    for (size_t i = 0; i < MANY_LABELS; i++) {
        snprintf(many_label_names[i], sizeof(many_label_names[i]), "spec.field%zu", i);
        many_labels[i] = (struct ck_field_label){many_label_names[i], many_label_names[i],
                                                 CK_FIELD_LABEL_STRING};
    }
    size_t before = 0, after = 0;
    ck_kinds(&before);
    struct ck_err err = {0};
    assert_null(ck_kind_lookup("test.ckube.io", "v1", "widgets"));
    assert_int_equal(ck_kind_register(&widget_kind, &err), 0);
    const struct ck_kind *const *kinds = ck_kinds(&after);
    assert_int_equal(after, before + 1);
    assert_ptr_equal(kinds[after - 1], &widget_kind); /* discovery order: registration order */
    assert_ptr_equal(ck_kind_lookup("test.ckube.io", "v1", "widgets"), &widget_kind);

    /* every field label, however many, plus metadata.name and metadata.namespace */
    const char *const *names = ck_kind_field_label_names(&widget_kind);
    size_t n = 0;
    while (names[n])
        n++;
    assert_int_equal(n, MANY_LABELS + 2);
    assert_string_equal(names[MANY_LABELS + 1], "spec.field39");

    /* one kind per group/version/resource */
    assert_int_equal(ck_kind_register(&widget_kind, &err), CK_EEXIST);
    assert_string_equal(err.msg, "widgets.test.ckube.io of test.ckube.io/v1 is served already");
    const struct ck_kind nameless = {.group = "", .version = "v1"};
    assert_int_equal(ck_kind_register(&nameless, &err), CK_EINVAL);

    assert_int_equal(ck_kind_unregister(&widget_kind, &err), 0);
    assert_null(ck_kind_lookup("test.ckube.io", "v1", "widgets"));
    ck_kinds(&n);
    assert_int_equal(n, before);
    assert_int_equal(ck_kind_unregister(&widget_kind, &err), CK_ENOENT);
    /* a reader that looked the kind up before still reads its labels */
    assert_ptr_equal(ck_kind_field_label_names(&widget_kind), names);
    /* the array an earlier ck_kinds() returned is still whole */
    assert_ptr_equal(kinds[after - 1], &widget_kind);
}

static const struct ck_kind gadget_v1 = {.group = "test.ckube.io",
                                         .version = "v1",
                                         .kind = "Gadget",
                                         .list_kind = "GadgetList",
                                         .resource = "gadgets",
                                         .singular = "gadget",
                                         .schema = "io.ckube.test.v1.Gadget"};
static const struct ck_kind gadget_v2 = {.group = "test.ckube.io",
                                         .version = "v2",
                                         .kind = "Gadget",
                                         .list_kind = "GadgetList",
                                         .resource = "gadgets",
                                         .singular = "gadget",
                                         .schema = "io.ckube.test.v2.Gadget"};
static const struct ck_kind gadget_v1_again = {.group = "test.ckube.io",
                                               .version = "v1",
                                               .kind = "Gadget",
                                               .list_kind = "GadgetList",
                                               .resource = "gadgets",
                                               .singular = "gadget",
                                               .schema = "io.ckube.test.v1.Gadget2"};

static void test_many_changes_in_one_snapshot(void **state)
{
    (void)state;
    size_t before = 0, n = 0;
    const struct ck_kind *const *old = ck_kinds(&before);
    const struct ck_kind *add[] = {&gadget_v1, &gadget_v2, &gadget_v1_again};
    size_t skipped = 0;
    struct ck_err err = {0};
    /* the third serves what the first does: skipped, the others registered together */
    assert_int_equal(ck_kinds_change(NULL, 0, add, 3, &skipped, &err), 0);
    assert_int_equal(skipped, 1);
    const struct ck_kind *const *kinds = ck_kinds(&n);
    assert_int_equal(n, before + 2);
    assert_ptr_equal(kinds[n - 2], &gadget_v1);
    assert_ptr_equal(kinds[n - 1], &gadget_v2);
    assert_ptr_equal(ck_kind_lookup("test.ckube.io", "v1", "gadgets"), &gadget_v1);
    assert_non_null(ck_kind_field_label_names(&gadget_v2));
    /* removing and adding the same resource in one change replaces it */
    const struct ck_kind *remove[] = {&gadget_v1, &gadget_v2};
    const struct ck_kind *replace[] = {&gadget_v1_again};
    assert_int_equal(ck_kinds_change(remove, 2, replace, 1, &skipped, &err), 0);
    assert_int_equal(skipped, 0);
    ck_kinds(&n);
    assert_int_equal(n, before + 1);
    assert_ptr_equal(ck_kind_lookup("test.ckube.io", "v1", "gadgets"), &gadget_v1_again);
    assert_null(ck_kind_lookup("test.ckube.io", "v2", "gadgets"));
    assert_int_equal(ck_kinds_change(replace, 1, NULL, 0, NULL, &err), 0);
    ck_kinds(&n);
    assert_int_equal(n, before);
    assert_ptr_equal(ck_kinds(&n)[0], old[0]); /* older arrays stay whole */
}

#define WRITER_KINDS 64
#define READERS      3

static struct ck_kind writer_kinds[WRITER_KINDS];
static char writer_resources[WRITER_KINDS][32];
static atomic_bool writer_done;

/*
 * Reads the registry until the writer is done, counting broken promises of a
 * snapshot in reader_failures (cmocka's asserts belong to the main thread).
 */
static atomic_int reader_failures;

static void *reader(void *arg)
{
    (void)arg;
    size_t rounds = 0;
    while (!atomic_load(&writer_done) || rounds < 10) {
        size_t n = 0;
        const struct ck_kind *const *kinds = ck_kinds(&n);
        for (size_t i = 0; i < n; i++) {
            const struct ck_kind *k = kinds[i];
            const struct ck_kind *found = ck_kind_lookup(k->group, k->version, k->resource);
            const char *const *labels = ck_kind_field_label_names(k);
            /* the kind is gone since (unregistered) or it is the same descriptor */
            bool ok =
                (found == NULL || found == k) && labels && strcmp(labels[0], "metadata.name") == 0;
            if (!ok)
                atomic_fetch_add(&reader_failures, 1);
        }
        if (!ck_kind_with_role(CK_KIND_ROLE_NAMESPACE))
            atomic_fetch_add(&reader_failures, 1);
        rounds++;
    }
    return NULL;
}

static void test_readers_while_a_writer_registers(void **state)
{
    (void)state;
    for (size_t i = 0; i < WRITER_KINDS; i++) {
        snprintf(writer_resources[i], sizeof(writer_resources[i]), "gadgets%zu", i);
        writer_kinds[i] = (struct ck_kind){.group = "test.ckube.io",
                                           .version = "v1",
                                           .kind = "Gadget",
                                           .list_kind = "GadgetList",
                                           .resource = writer_resources[i],
                                           .singular = "gadget",
                                           .schema = "io.ckube.test.v1.Gadget"};
    }
    size_t before = 0;
    ck_kinds(&before);
    atomic_store(&writer_done, false);
    pthread_t readers[READERS];
    for (size_t i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&readers[i], NULL, reader, NULL), 0);
    struct ck_err err = {0};
    for (size_t i = 0; i < WRITER_KINDS; i++)
        assert_int_equal(ck_kind_register(&writer_kinds[i], &err), 0);
    for (size_t i = 0; i < WRITER_KINDS; i += 2)
        assert_int_equal(ck_kind_unregister(&writer_kinds[i], &err), 0);
    atomic_store(&writer_done, true);
    for (size_t i = 0; i < READERS; i++)
        pthread_join(readers[i], NULL);
    assert_int_equal(atomic_load(&reader_failures), 0);
    size_t n = 0;
    ck_kinds(&n);
    assert_int_equal(n, before + WRITER_KINDS / 2);
    assert_null(ck_kind_lookup("test.ckube.io", "v1", "gadgets0"));
    assert_ptr_equal(ck_kind_lookup("test.ckube.io", "v1", "gadgets1"), &writer_kinds[1]);
    for (size_t i = 1; i < WRITER_KINDS; i += 2)
        assert_int_equal(ck_kind_unregister(&writer_kinds[i], &err), 0);
    ck_kinds(&n);
    assert_int_equal(n, before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_matches_the_resource_table),
        cmocka_unit_test(test_names_in_messages),
        cmocka_unit_test(test_field_labels_per_kind),
        cmocka_unit_test(test_field_values_render_like_kubernetes),
        cmocka_unit_test(test_roles_and_subresources),
        cmocka_unit_test(test_computed_field_labels),
        cmocka_unit_test(test_register_and_unregister),
        cmocka_unit_test(test_many_changes_in_one_snapshot),
        cmocka_unit_test(test_readers_while_a_writer_registers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
