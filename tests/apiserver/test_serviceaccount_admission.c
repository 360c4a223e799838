/*
 * test_serviceaccount_admission.c - tests for lib/apiserver/admission/service_account.c,
 * the ServiceAccount admission plugin: a pod without an account runs as "default"
 * (or as its deprecated spec.serviceAccount); it gets one kube-api-access-<5> volume
 * with the token (3607 s), kube-root-ca.crt's ca.crt and the namespace, mounted
 * read-only at the service account path in every init container and container that
 * mounts nothing there; the pod's automountServiceAccountToken wins over the
 * account's; a pod with a kube-api-access-* volume keeps it; a mirror pod is left
 * alone; the account's imagePullSecrets are copied into a pod without any. Through
 * the registry: a pod whose account is missing is 403 Forbidden in Kubernetes'
 * words, one whose account exists is stored with the volume, and a registry
 * without the plugin stores the pod as it is.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"

#define MOUNT_PATH "/var/run/secrets/kubernetes.io/serviceaccount"

static json_t *load(const char *text)
{
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    return obj;
}

static const json_t *spec_of(const json_t *pod)
{
    return json_object_get(pod, "spec");
}

/* The one volume whose name starts kube-api-access-, or NULL; fails on two. */
static const json_t *token_volume(const json_t *pod)
{
    const json_t *found = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec_of(pod), "volumes"), i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strncmp(n, "kube-api-access-", 16) == 0) {
            assert_null(found);
            found = v;
        }
    }
    return found;
}

/* The mount of container c at MOUNT_PATH, or NULL; fails on two. */
static const json_t *sa_mount(const json_t *c)
{
    const json_t *found = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(c, "volumeMounts"), i, m)
    {
        const char *p = json_string_value(json_object_get(m, "mountPath"));
        if (p && strcmp(p, MOUNT_PATH) == 0) {
            assert_null(found);
            found = m;
        }
    }
    return found;
}

static void test_default_account_and_volume(void **state)
{
    (void)state;
    json_t *pod = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{"
                       "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\"}],"
                       "\"containers\":[{\"name\":\"a\",\"image\":\"x\"},"
                       "{\"name\":\"b\",\"image\":\"x\",\"volumeMounts\":[{\"name\":\"d\","
                       "\"mountPath\":\"/data\"}]}]}}");
    assert_true(ck__sa_admission_applies(pod));
    assert_string_equal(ck__sa_admission_account(pod), "default");
    assert_string_equal(json_string_value(json_object_get(spec_of(pod), "serviceAccountName")),
                        "default");
    assert_string_equal(json_string_value(json_object_get(spec_of(pod), "serviceAccount")),
                        "default");
    json_t *sa = load("{\"metadata\":{\"name\":\"default\"}}");
    assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);

    const json_t *v = token_volume(pod);
    assert_non_null(v);
    const char *name = json_string_value(json_object_get(v, "name"));
    assert_int_equal(strlen(name), strlen("kube-api-access-") + 5);
    for (const char *c = name + 16; *c; c++) /* utilrand's alphabet: no vowels, no 0 1 3 */
        assert_non_null(strchr("bcdfghjklmnpqrstvwxz2456789", *c));
    json_t *want = load(
        "{\"defaultMode\":420,\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,"
        "\"path\":\"token\"}},{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":"
        "\"ca.crt\",\"path\":\"ca.crt\"}]}},{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\","
        "\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}]}}]}");
    assert_true(json_equal(json_object_get(v, "projected"), want));
    json_decref(want);

    static const char *const lists[] = {"initContainers", "containers"};
    int mounted = 0;
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec_of(pod), lists[l]), i, c)
        {
            const json_t *m = sa_mount(c);
            assert_non_null(m);
            assert_string_equal(json_string_value(json_object_get(m, "name")), name);
            assert_true(json_is_true(json_object_get(m, "readOnly")));
            mounted++;
        }
    }
    assert_int_equal(mounted, 3);
    /* b keeps its own mount, first */
    const json_t *b = json_array_get(json_object_get(spec_of(pod), "containers"), 1);
    assert_int_equal(json_array_size(json_object_get(b, "volumeMounts")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(b, "volumeMounts"), 0), "mountPath")),
                        "/data");
    json_decref(sa);
    json_decref(pod);
}

static void test_deprecated_service_account_field(void **state)
{
    (void)state;
    json_t *pod = load("{\"spec\":{\"serviceAccount\":\"old\",\"containers\":[]}}");
    assert_string_equal(ck__sa_admission_account(pod), "old");
    json_decref(pod);
    pod = load("{\"spec\":{\"serviceAccountName\":\"builder\",\"containers\":[]}}");
    assert_string_equal(ck__sa_admission_account(pod), "builder");
    json_decref(pod);
}

/* automountServiceAccountToken: the pod's wins, then the account's, then true. */
static void test_automount_preference(void **state)
{
    (void)state;
    static const struct {
        const char *pod, *sa;
        bool mounted;
    } cases[] = {
        {"", "", true},       {"", "false", false},    {"", "true", true},
        {"false", "", false}, {"true", "false", true}, {"false", "true", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}");
        json_t *sa = load("{\"metadata\":{\"name\":\"default\"}}");
        if (*cases[i].pod)
            json_object_set_new(json_object_get(pod, "spec"), "automountServiceAccountToken",
                                json_boolean(strcmp(cases[i].pod, "true") == 0));
        if (*cases[i].sa)
            json_object_set_new(sa, "automountServiceAccountToken",
                                json_boolean(strcmp(cases[i].sa, "true") == 0));
        assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);
        const json_t *c = json_array_get(json_object_get(spec_of(pod), "containers"), 0);
        if (cases[i].mounted) {
            assert_non_null(token_volume(pod));
            assert_non_null(sa_mount(c));
        } else {
            assert_null(token_volume(pod));
            assert_null(sa_mount(c));
        }
        json_decref(sa);
        json_decref(pod);
    }
}

static void test_existing_volume_and_mounts_are_kept(void **state)
{
    (void)state;
    /* an existing kube-api-access-* volume is reused and not added twice */
    json_t *pod =
        load("{\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-abcde\",\"emptyDir\":{}}],"
             "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}");
    json_t *sa = load("{}");
    assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);
    assert_int_equal(json_array_size(json_object_get(spec_of(pod), "volumes")), 1);
    const json_t *m = sa_mount(json_array_get(json_object_get(spec_of(pod), "containers"), 0));
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "kube-api-access-abcde");
    json_decref(pod);
    /* every container mounting something there already: no volume at all */
    pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"volumeMounts\":"
               "[{\"name\":\"mine\",\"mountPath\":\"" MOUNT_PATH "\"}]}]}}");
    assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);
    assert_null(token_volume(pod));
    json_decref(pod);
    json_decref(sa);
}

static void test_mirror_pods_are_left_alone(void **state)
{
    (void)state;
    json_t *pod = load("{\"metadata\":{\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}},"
                       "\"spec\":{\"containers\":[]}}");
    assert_false(ck__sa_admission_applies(pod));
    json_decref(pod);
}

static void test_image_pull_secrets_copied(void **state)
{
    (void)state;
    json_t *sa = load("{\"imagePullSecrets\":[{\"name\":\"reg\"}]}");
    json_t *pod = load("{\"spec\":{\"containers\":[]}}");
    assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(spec_of(pod), "imagePullSecrets"), 0), "name")),
        "reg");
    json_decref(pod);
    pod = load("{\"spec\":{\"containers\":[],\"imagePullSecrets\":[{\"name\":\"own\"}]}}");
    assert_int_equal(ck__sa_admission_mutate(pod, sa), 0);
    assert_int_equal(json_array_size(json_object_get(spec_of(pod), "imagePullSecrets")), 1);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(spec_of(pod), "imagePullSecrets"), 0), "name")),
        "own");
    json_decref(pod);
    json_decref(sa);
}

/* ---- through the registry ---------------------------------------------------------- */

static char dir[] = "/tmp/ckube-saadm-XXXXXX";

static json_t *create(struct ck__registry *reg, const char *resource, const char *namespace,
                      const char *text, struct ck_err *err)
{
    json_t *obj = load(text);
    char *body = NULL;
    size_t len = 0;
    ck__registry_create(reg, ck_kind_lookup("", "v1", resource), namespace, obj, false, &body, &len,
                        err);
    json_decref(obj);
    json_t *out = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    return out;
}

static void test_registry_requires_the_account(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/ckube-saadm-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char url[300];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    struct ck_store *store = NULL;
    const struct ck_schemas *schemas = NULL;
    assert_int_equal(ck_store_open(url, NULL, &store, NULL), 0);
    assert_int_equal(ck__shared_schemas(&schemas, NULL), 0);
    struct ck__admission_chain *with = NULL, *without = NULL;
    assert_int_equal(ck__admission_chain_new(NULL, NULL, &with, NULL), 0);
    assert_int_equal(ck__admission_chain_new(NULL, "ServiceAccount", &without, NULL), 0);
    assert_true(ck__admission_chain_has(with, "ServiceAccount"));
    assert_false(ck__admission_chain_has(without, "ServiceAccount"));
    struct ck__registry reg = {.store = store, .schemas = schemas, .admission = with};
    struct ck_err err = {0};
    json_decref(create(&reg, "namespaces", NULL, "{\"metadata\":{\"name\":\"ns\"}}", &err));
    assert_int_equal(err.code, 0);

    static const char pod[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"serviceAccountName\":"
                              "\"builder\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";
    assert_null(create(&reg, "pods", "ns", pod, &err));
    assert_int_equal(err.http_status, 403);
    assert_string_equal(err.reason, "Forbidden");
    assert_string_equal(err.msg, "pods \"p\" is forbidden: error looking up service account "
                                 "ns/builder: serviceaccount \"builder\" not found");
    ck_err_release(&err);

    json_decref(
        create(&reg, "serviceaccounts", "ns", "{\"metadata\":{\"name\":\"builder\"}}", &err));
    assert_int_equal(err.code, 0);
    json_t *stored = create(&reg, "pods", "ns", pod, &err);
    assert_non_null(stored);
    assert_non_null(token_volume(stored));
    assert_non_null(sa_mount(json_array_get(json_object_get(spec_of(stored), "containers"), 0)));
    json_decref(stored);

    /* without the plugin, a pod is stored as it came */
    reg.admission = without;
    stored = create(&reg, "pods", "ns",
                    "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"serviceAccountName\":\"nobody\","
                    "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                    &err);
    assert_non_null(stored);
    assert_null(token_volume(stored));
    json_decref(stored);

    ck_store_close(store);
    ck__admission_chain_free(with);
    ck__admission_chain_free(without);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_account_and_volume),
        cmocka_unit_test(test_deprecated_service_account_field),
        cmocka_unit_test(test_automount_preference),
        cmocka_unit_test(test_existing_volume_and_mounts_are_kept),
        cmocka_unit_test(test_mirror_pods_are_left_alone),
        cmocka_unit_test(test_image_pull_secrets_copied),
        cmocka_unit_test(test_registry_requires_the_account),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
