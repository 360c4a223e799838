/*
 * test_discovery.c - tests for lib/api/discovery.c: legacy discovery
 * documents as kubectl reads them, and OpenAPI v3 documents whose PATCH
 * operations declare fieldValidation, with schemas closed over $ref and an
 * index hash that follows the documents' content; the storageVersionHash of
 * every stored resource, checked against Python's SHA-256 and base64 and
 * against the value kube-apiserver serves for pods; aggregated discovery
 * holding exactly what the legacy documents hold, custom resources included.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static json_t *find_by(const json_t *array, const char *field, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        const char *v = json_string_value(json_object_get(item, field));
        if (v && strcmp(v, value) == 0)
            return item;
    }
    return NULL;
}

static bool has_string(const json_t *array, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        if (strcmp(json_string_value(item), value) == 0)
            return true;
    }
    return false;
}

static void test_api_versions_and_groups(void **state)
{
    (void)state;
    json_t *v = ck_discovery_api_versions("127.0.0.1:6443");
    assert_string_equal(json_string_value(json_object_get(v, "kind")), "APIVersions");
    assert_true(has_string(json_object_get(v, "versions"), "v1"));
    json_t *cidr = json_array_get(json_object_get(v, "serverAddressByClientCIDRs"), 0);
    assert_string_equal(json_string_value(json_object_get(cidr, "serverAddress")),
                        "127.0.0.1:6443");
    json_decref(v);

    json_t *g = ck_discovery_api_groups();
    assert_string_equal(json_string_value(json_object_get(g, "kind")), "APIGroupList");
    json_t *groups = json_object_get(g, "groups");
    /* apps, batch, certificates, discovery, networking, policy, rbac, storage, scheduling,
     * node, admissionregistration, coordination, apiextensions, apiregistration,
     * authentication, authorization, metrics (served by the server itself), autoscaling,
     * events, flowcontrol and the feature-gate example group; the core group is never
     * listed */
    assert_int_equal(json_array_size(groups), 21);
    assert_non_null(find_by(groups, "name", "events.k8s.io"));
    assert_non_null(find_by(groups, "name", "flowcontrol.apiserver.k8s.io"));
    assert_non_null(find_by(groups, "name", "certificates.k8s.io"));
    json_t *autoscaling = find_by(groups, "name", "autoscaling");
    assert_non_null(autoscaling);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(autoscaling, "preferredVersion"), "groupVersion")),
                        "autoscaling/v2");
    assert_int_equal(json_array_size(json_object_get(autoscaling, "versions")), 2);
    json_t *metrics = find_by(groups, "name", "metrics.k8s.io");
    assert_non_null(metrics);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(metrics, "preferredVersion"), "groupVersion")),
                        "metrics.k8s.io/v1beta1");
    assert_non_null(find_by(groups, "name", "node.k8s.io"));
    assert_non_null(find_by(groups, "name", "scheduling.k8s.io"));
    assert_non_null(find_by(groups, "name", "storage.k8s.io"));
    assert_non_null(find_by(groups, "name", "networking.k8s.io"));
    assert_non_null(find_by(groups, "name", "apiextensions.k8s.io"));
    assert_non_null(find_by(groups, "name", "batch"));
    assert_non_null(find_by(groups, "name", "discovery.k8s.io"));
    assert_non_null(find_by(groups, "name", "policy"));
    assert_non_null(find_by(groups, "name", "coordination.k8s.io"));
    assert_non_null(find_by(groups, "name", "authentication.k8s.io"));
    assert_non_null(find_by(groups, "name", "authorization.k8s.io"));
    assert_non_null(find_by(groups, "name", "rbac.authorization.k8s.io"));
    assert_non_null(find_by(groups, "name", "example.ckube.io"));
    json_t *apps = find_by(groups, "name", "apps");
    assert_non_null(apps);
    assert_string_equal(json_string_value(json_object_get(json_object_get(apps, "preferredVersion"),
                                                          "groupVersion")),
                        "apps/v1");
    json_decref(g);
}

static void test_resource_lists(void **state)
{
    (void)state;
    json_t *core = ck_discovery_resources("", "v1");
    assert_string_equal(json_string_value(json_object_get(core, "groupVersion")), "v1");
    json_t *resources = json_object_get(core, "resources");
    json_t *pods = find_by(resources, "name", "pods");
    assert_non_null(pods);
    assert_string_equal(json_string_value(json_object_get(pods, "singularName")), "pod");
    assert_true(json_is_true(json_object_get(pods, "namespaced")));
    assert_true(has_string(json_object_get(pods, "shortNames"), "po"));
    assert_true(has_string(json_object_get(pods, "categories"), "all"));
    assert_int_equal(json_array_size(json_object_get(pods, "verbs")), 8);
    assert_true(has_string(json_object_get(pods, "verbs"), "watch"));
    json_t *log = find_by(resources, "name", "pods/log");
    assert_non_null(log);
    assert_int_equal(json_array_size(json_object_get(log, "verbs")), 1);
    assert_string_equal(json_string_value(json_object_get(log, "singularName")), "");
    json_t *binding = find_by(resources, "name", "pods/binding");
    assert_string_equal(json_string_value(json_object_get(binding, "kind")), "Binding");
    json_t *finalize = find_by(resources, "name", "namespaces/finalize");
    assert_true(has_string(json_object_get(finalize, "verbs"), "update"));
    json_t *ns = find_by(resources, "name", "namespaces");
    assert_true(json_is_false(json_object_get(ns, "namespaced")));
    assert_null(json_object_get(ns, "categories"));
    json_decref(core);

    json_t *apps = ck_discovery_resources("apps", "v1");
    json_t *scale = find_by(json_object_get(apps, "resources"), "name", "deployments/scale");
    assert_non_null(scale);
    assert_string_equal(json_string_value(json_object_get(scale, "group")), "autoscaling");
    assert_string_equal(json_string_value(json_object_get(scale, "kind")), "Scale");
    json_t *status = find_by(json_object_get(apps, "resources"), "name", "replicasets/status");
    assert_string_equal(json_string_value(json_object_get(status, "kind")), "ReplicaSet");
    json_decref(apps);

    assert_null(ck_discovery_resources("apps", "v2"));
    assert_null(ck_discovery_resources("nosuch.example.com", "v1"));
}

/* Minimal schemas under the real names, enough to check closure and hashing. */
static struct ck_schemas *load_schemas_labels(const char *deployment_description,
                                              const char *labels_type)
{
    char apps[1024], meta[512];
    snprintf(apps, sizeof(apps),
             "{\"io.k8s.api.apps.v1.Deployment\":{\"type\":\"object\",\"description\":\"%s\","
             "\"properties\":{\"metadata\":{\"$ref\":\"#/components/schemas/meta.ObjectMeta\"}}},"
             "\"io.k8s.api.apps.v1.ReplicaSet\":{\"type\":\"object\"}}",
             deployment_description);
    snprintf(meta, sizeof(meta),
             "{\"meta.ObjectMeta\":{\"type\":\"object\",\"properties\":{\"labels\":{\"$ref\":"
             "\"#/components/schemas/meta.Labels\"}}},\"meta.Labels\":{\"type\":\"%s\"},"
             "\"unrelated.Thing\":{\"type\":\"string\"}}",
             labels_type);
    const char *docs[] = {
        apps,
        meta,
        "{\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\"},\"io.k8s.api.core.v1.Namespace\":{},"
        "\"io.k8s.api.core.v1.Node\":{},\"io.k8s.api.core.v1.Event\":{}}",
    };
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    if (ck_schemas_new(docs, 3, &set, &err) != 0)
        fail_msg("%s", err.msg);
    return set;
}

static struct ck_schemas *load_schemas(const char *deployment_description)
{
    return load_schemas_labels(deployment_description, "object");
}

/* The patch types the OpenAPI patch operation of kind (at item path) accepts. */
static json_t *patch_content(const struct ck_schemas *set, const char *group, const char *path,
                             json_t **ret_doc)
{
    *ret_doc = ck_openapi_document(set, group, "v1");
    json_t *patch =
        json_object_get(json_object_get(json_object_get(*ret_doc, "paths"), path), "patch");
    return json_object_get(json_object_get(patch, "requestBody"), "content");
}

static void test_strategic_merge_patch_for_built_in_kinds_only(void **state)
{
    (void)state;
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_api_builtin_schemas(&set, &err), 0);
    assert_true(ck_schema_is_strategic(set, "io.k8s.api.apps.v1.Deployment"));
    assert_true(ck_schema_is_strategic(set, "io.k8s.api.core.v1.Pod"));
    /* built-in kinds without merge keys take it too (the event recorder's patches) */
    assert_true(ck_schema_is_strategic(set, "io.k8s.api.core.v1.Event"));
    assert_true(ck_schema_is_strategic(set, "io.k8s.api.rbac.v1.Role"));
    assert_false(ck_schema_is_strategic(set, "io.ckube.example.v1.Frobber"));
    assert_false(ck_schema_is_strategic(set, "no.such.Schema"));
    json_t *doc = NULL;
    json_t *content =
        patch_content(set, "apps", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", &doc);
    assert_non_null(json_object_get(content, "application/strategic-merge-patch+json"));
    assert_non_null(json_object_get(content, "application/merge-patch+json"));
    json_decref(doc);
    content =
        patch_content(set, "example.ckube.io",
                      "/apis/example.ckube.io/v1/namespaces/{namespace}/frobbers/{name}", &doc);
    assert_null(json_object_get(content, "application/strategic-merge-patch+json"));
    assert_non_null(json_object_get(content, "application/json-patch+json"));
    json_decref(doc);
    ck_schemas_free(set);
}

/* The media types of operation op at path's 200 answer. */
static json_t *answer_content(json_t *doc, const char *path, const char *op)
{
    json_t *o = json_object_get(json_object_get(json_object_get(doc, "paths"), path), op);
    return json_object_get(json_object_get(json_object_get(o, "responses"), "200"), "content");
}

static void test_openapi_advertises_protobuf_for_built_in_kinds_only(void **state)
{
    (void)state;
    struct ck_schemas *set = NULL;
    assert_int_equal(ck_api_builtin_schemas(&set, NULL), 0);
    json_t *doc = ck_openapi_document(set, "apps", "v1");
    json_t *get =
        answer_content(doc, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "get");
    assert_non_null(json_object_get(get, "application/json"));
    assert_non_null(json_object_get(get, "application/vnd.kubernetes.protobuf"));
    assert_null(json_object_get(get, "application/vnd.kubernetes.protobuf;stream=watch"));
    json_t *list = answer_content(doc, "/apis/apps/v1/namespaces/{namespace}/deployments", "get");
    assert_non_null(json_object_get(list, "application/vnd.kubernetes.protobuf;stream=watch"));
    assert_non_null(json_object_get(list, "application/json;stream=watch"));
    json_decref(doc);
    doc = ck_openapi_document(set, "example.ckube.io", "v1");
    get = answer_content(doc, "/apis/example.ckube.io/v1/namespaces/{namespace}/frobbers/{name}",
                         "get");
    assert_non_null(json_object_get(get, "application/json"));
    assert_null(json_object_get(get, "application/vnd.kubernetes.protobuf"));
    json_decref(doc);
    ck_schemas_free(set);
}

static void test_openapi_document_declares_field_validation(void **state)
{
    (void)state;
    struct ck_schemas *set = load_schemas("v1");
    json_t *doc = ck_openapi_document(set, "apps", "v1");
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.0");
    json_t *paths = json_object_get(doc, "paths");
    json_t *item =
        json_object_get(paths, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}");
    assert_non_null(item);
    json_t *patch = json_object_get(item, "patch");
    json_t *gvk = json_object_get(patch, "x-kubernetes-group-version-kind");
    assert_string_equal(json_string_value(json_object_get(gvk, "kind")), "Deployment");
    assert_string_equal(json_string_value(json_object_get(gvk, "group")), "apps");
    assert_non_null(find_by(json_object_get(patch, "parameters"), "name", "fieldValidation"));
    assert_non_null(json_object_get(paths, "/apis/apps/v1/namespaces/{namespace}/replicasets"));

    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    assert_non_null(json_object_get(schemas, "io.k8s.api.apps.v1.Deployment"));
    assert_non_null(json_object_get(schemas, "meta.ObjectMeta")); /* reached by $ref */
    assert_non_null(json_object_get(schemas, "meta.Labels"));     /* transitively */
    assert_null(json_object_get(schemas, "unrelated.Thing"));
    assert_null(json_object_get(schemas, "io.k8s.api.core.v1.Pod"));
    json_decref(doc);

    doc = ck_openapi_document(set, "", "v1");
    assert_non_null(json_object_get(json_object_get(doc, "paths"), "/api/v1/nodes/{name}"));
    assert_non_null(
        json_object_get(json_object_get(doc, "paths"), "/api/v1/namespaces/{namespace}/pods"));
    json_decref(doc);
    assert_null(ck_openapi_document(set, "nosuch.example.com", "v1"));
    ck_schemas_free(set);
}

static const char *index_url(json_t *index, const char *key)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(index, "paths"), key),
                                             "serverRelativeURL"));
}

static void test_openapi_index_hash_follows_content(void **state)
{
    (void)state;
    struct ck_schemas *a = load_schemas("first");
    struct ck_schemas *b = load_schemas("second");
    json_t *ia = ck_openapi_index(a);
    json_t *ia2 = ck_openapi_index(a);
    json_t *ib = ck_openapi_index(b);
    assert_int_equal(json_object_size(json_object_get(ia, "paths")), 23);
    assert_non_null(strstr(index_url(ia, "apis/apps/v1"), "/openapi/v3/apis/apps/v1?hash="));
    assert_non_null(strstr(index_url(ia, "api/v1"), "/openapi/v3/api/v1?hash="));
    assert_string_equal(index_url(ia, "apis/apps/v1"), index_url(ia2, "apis/apps/v1"));
    assert_string_not_equal(index_url(ia, "apis/apps/v1"), index_url(ib, "apis/apps/v1"));
    assert_string_equal(index_url(ia, "api/v1"), index_url(ib, "api/v1")); /* unchanged */
    /* rebuilt (a new set, the cache holds b's) from the same content: the same hashes */
    struct ck_schemas *a2 = load_schemas("first");
    json_t *ia3 = ck_openapi_index(a2);
    assert_string_equal(index_url(ia, "apis/apps/v1"), index_url(ia3, "apis/apps/v1"));
    assert_string_equal(index_url(ia, "api/v1"), index_url(ia3, "api/v1"));
    json_decref(ia3);
    ck_schemas_free(a2);
    /* a schema reached only through two $refs changes the hash of the documents naming it */
    a2 = load_schemas_labels("first", "string");
    ia3 = ck_openapi_index(a2);
    assert_string_not_equal(index_url(ia, "apis/apps/v1"), index_url(ia3, "apis/apps/v1"));
    json_decref(ia3);
    ck_schemas_free(a2);
    json_decref(ia);
    json_decref(ia2);
    json_decref(ib);
    ck_schemas_free(a);
    ck_schemas_free(b);
}

/*
 * For each of the n strings of gvks, base64 of the first 8 bytes of its SHA-256,
 * as Python computes it (not ckube's code), into want[i] (32 bytes each); false
 * when python3 cannot be run. The strings hold no shell characters.
 */
static bool python_hashes(const char *const *gvks, size_t n, char (*want)[32])
{
    char cmd[8192] = "python3 -c 'import sys, hashlib, base64\n"
                     "for a in sys.argv[1:]: "
                     "print(base64.b64encode(hashlib.sha256(a.encode()).digest()[:8]).decode())'";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(cmd);
        snprintf(cmd + len, sizeof(cmd) - len, " '%s'", gvks[i]);
    }
    size_t len = strlen(cmd);
    snprintf(cmd + len, sizeof(cmd) - len, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t got = 0;
    char line[32];
    while (got < n && fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(want[got++], sizeof(want[0]), "%s", line);
    }
    return pclose(p) == 0 && got == n;
}

static bool python_hash(const char *gvk, char want[32])
{
    char one[1][32];
    const char *const gvks[] = {gvk};
    if (!python_hashes(gvks, 1, one))
        return false;
    memcpy(want, one[0], sizeof(one[0]));
    return true;
}

static const char *hash_of(const json_t *list, const char *resource)
{
    return json_string_value(json_object_get(
        find_by(json_object_get(list, "resources"), "name", resource), "storageVersionHash"));
}

static void test_storage_version_hash_of_built_in_resources(void **state)
{
    (void)state;
    json_t *core = ck_discovery_resources("", "v1");
    /* what kube-apiserver 1.32 serves for pods in /api/v1 */
    assert_string_equal(hash_of(core, "pods"), "xPOwRZ+Yhw8=");
    json_decref(core);

    /* every stored resource, its own GVK being its storage version; Python agrees on pods */
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    char(*gvk)[256] = calloc(n + 1, sizeof(*gvk));
    const char **gvks = calloc(n + 1, sizeof(*gvks));
    char(*want)[32] = calloc(n + 1, sizeof(*want));
    assert_true(gvk && gvks && want);
    for (size_t i = 0; i < n; i++) {
        if (kinds[i]->storage_api_version) /* served in another version than it is stored in */
            snprintf(gvk[i], sizeof(gvk[i]), "%s%s/%s",
                     strchr(kinds[i]->storage_api_version, '/') ? "" : "/", /* the core group */
                     kinds[i]->storage_api_version, kinds[i]->kind);
        else
            snprintf(gvk[i], sizeof(gvk[i]), "%s/%s/%s", kinds[i]->group, kinds[i]->version,
                     kinds[i]->kind);
        gvks[i] = gvk[i];
    }
    gvks[n] = "/v1/Pod";
    if (!python_hashes(gvks, n + 1, want)) {
        free(gvk), free(gvks), free(want);
        print_message("skipped: python3 could not be run to compute the hashes\n");
        skip();
    }
    assert_string_equal(want[n], "xPOwRZ+Yhw8=");
    size_t hashed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        json_t *list = ck_discovery_resources(k->group, k->version);
        const char *got = hash_of(list, k->resource);
        if (k->verbs) { /* the reviews and TokenRequest are never stored: no hash */
            assert_null(got);
        } else {
            if (!got || strcmp(got, want[i]) != 0)
                fail_msg("%s: storageVersionHash %s, want %s", gvk[i], got ? got : "none", want[i]);
            hashed++;
        }
        /* subresources never carry one */
        size_t j;
        json_t *e;
        json_array_foreach(json_object_get(list, "resources"), j, e)
        {
            if (strchr(json_string_value(json_object_get(e, "name")), '/'))
                assert_null(json_object_get(e, "storageVersionHash"));
        }
        json_decref(list);
    }
    assert_true(hashed > 20);
    json_t *authn = ck_discovery_resources("authentication.k8s.io", "v1");
    assert_non_null(find_by(json_object_get(authn, "resources"), "name", "tokenreviews"));
    assert_null(hash_of(authn, "tokenreviews"));
    json_decref(authn);
    free(gvk), free(gvks), free(want);
}

#define OPEN_SCHEMA                                                                                \
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","                                        \
    "\"x-kubernetes-preserve-unknown-fields\":true}}"

static struct ck_schemas *base_schemas;

/* A CronTab definition served at v1 and v1beta1, stored in storage, which is served or not. */
static struct ck_crd_kinds *crontab_kinds(const char *group, const char *storage,
                                          bool storage_served)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
             "\"metadata\":{\"name\":\"crontabs.%s\"},"
             "\"spec\":{\"group\":\"%s\",\"scope\":\"Namespaced\","
             "\"names\":{\"plural\":\"crontabs\",\"singular\":\"crontab\",\"kind\":\"CronTab\"},"
             "\"versions\":["
             "{\"name\":\"v1beta1\",\"served\":true,\"storage\":%s," OPEN_SCHEMA "},"
             "{\"name\":\"v1\",\"served\":%s,\"storage\":%s," OPEN_SCHEMA ","
             "\"subresources\":{\"status\":{}}}]}}",
             group, group, strcmp(storage, "v1beta1") == 0 ? "true" : "false",
             storage_served || strcmp(storage, "v1") != 0 ? "true" : "false",
             strcmp(storage, "v1") == 0 ? "true" : "false");
    json_t *crd = json_loads(text, 0, NULL);
    assert_non_null(crd);
    struct ck_crd_kinds *kinds = NULL;
    struct ck_err err = {0};
    if (ck_crd_kinds_new(crd, base_schemas, &kinds, &err) != 0)
        fail_msg("%s", err.msg);
    json_decref(crd);
    const struct ck_kind *add[2];
    size_t n = ck_crd_kinds_count(kinds);
    for (size_t i = 0; i < n; i++)
        add[i] = ck_crd_kinds_get(kinds, i);
    size_t skipped = 0;
    if (ck_kinds_change(NULL, 0, add, n, &skipped, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(skipped, 0);
    return kinds;
}

static void forget_kinds(struct ck_crd_kinds *kinds)
{
    const struct ck_kind *remove[2];
    size_t n = ck_crd_kinds_count(kinds);
    for (size_t i = 0; i < n; i++)
        remove[i] = ck_crd_kinds_get(kinds, i);
    assert_int_equal(ck_kinds_change(remove, n, NULL, 0, NULL, NULL), 0);
    ck_crd_kinds_free(kinds);
}

static void test_storage_version_hash_of_custom_resources(void **state)
{
    (void)state;
    char want[32];
    if (!python_hash("stable.example.com/v1/CronTab", want)) {
        print_message("skipped: python3 could not be run to compute the hashes\n");
        skip();
    }
    assert_int_equal(ck_api_builtin_schemas(&base_schemas, NULL), 0);
    /* every served version shows the hash of the storage version's GVK */
    struct ck_crd_kinds *kinds = crontab_kinds("stable.example.com", "v1", true);
    json_t *v1 = ck_discovery_resources("stable.example.com", "v1");
    json_t *beta = ck_discovery_resources("stable.example.com", "v1beta1");
    assert_string_equal(hash_of(v1, "crontabs"), want);
    assert_string_equal(hash_of(beta, "crontabs"), want);
    assert_non_null(find_by(json_object_get(v1, "resources"), "name", "crontabs/status"));
    assert_null(hash_of(v1, "crontabs/status"));
    json_decref(v1);
    json_decref(beta);
    forget_kinds(kinds);

    /* stored in v1beta1: the hash names v1beta1 */
    assert_true(python_hash("other.example.com/v1beta1/CronTab", want));
    kinds = crontab_kinds("other.example.com", "v1beta1", true);
    v1 = ck_discovery_resources("other.example.com", "v1");
    assert_string_equal(hash_of(v1, "crontabs"), want);
    json_decref(v1);
    forget_kinds(kinds);

    /* a storage version that is not served: kube-apiserver computes no hash */
    kinds = crontab_kinds("third.example.com", "v1", false);
    assert_null(ck_discovery_resources("third.example.com", "v1"));
    beta = ck_discovery_resources("third.example.com", "v1beta1");
    assert_non_null(find_by(json_object_get(beta, "resources"), "name", "crontabs"));
    assert_null(hash_of(beta, "crontabs"));
    json_decref(beta);
    forget_kinds(kinds);
    base_schemas = ck_schemas_free(base_schemas);
}

/* Whether two JSON arrays of strings (either may be absent: empty) hold the same strings. */
static bool same_strings(const json_t *a, const json_t *b)
{
    return json_array_size(a) == json_array_size(b) && (!a || json_equal(a, b));
}

/*
 * The aggregated document of one side (core or not) holds exactly what the
 * legacy documents hold: the same groups in /apis' order, the preferred
 * version first, every resource with its kind, scope, singular, verbs, short
 * names and categories, every subresource with its verbs and kind.
 */
static void assert_aggregated_matches_legacy(bool core)
{
    json_t *agg = ck_discovery_aggregated(core, "apidiscovery.k8s.io/v2");
    assert_non_null(agg);
    assert_string_equal(json_string_value(json_object_get(agg, "kind")), "APIGroupDiscoveryList");
    assert_string_equal(json_string_value(json_object_get(agg, "apiVersion")),
                        "apidiscovery.k8s.io/v2");
    json_t *items = json_object_get(agg, "items");
    json_t *legacy_groups = core ? NULL : ck_discovery_api_groups();
    size_t n_groups = core ? 1 : json_array_size(json_object_get(legacy_groups, "groups"));
    assert_int_equal(json_array_size(items), n_groups);
    size_t resources_seen = 0;
    for (size_t g = 0; g < n_groups; g++) {
        json_t *item = json_array_get(items, g);
        json_t *meta = json_object_get(item, "metadata");
        assert_true(json_is_null(json_object_get(meta, "creationTimestamp")));
        const char *group = "";
        json_t *versions;
        if (core) {
            assert_null(json_object_get(meta, "name"));
            versions = json_pack("[{s:s}]", "version", "v1");
        } else {
            json_t *lg = json_array_get(json_object_get(legacy_groups, "groups"), g);
            group = json_string_value(json_object_get(lg, "name"));
            assert_string_equal(json_string_value(json_object_get(meta, "name")), group);
            versions = json_incref(json_object_get(lg, "versions"));
            /* the preferred version first */
            assert_string_equal(
                json_string_value(json_object_get(
                    json_array_get(json_object_get(item, "versions"), 0), "version")),
                json_string_value(
                    json_object_get(json_object_get(lg, "preferredVersion"), "version")));
        }
        assert_int_equal(json_array_size(json_object_get(item, "versions")),
                         json_array_size(versions));
        for (size_t v = 0; v < json_array_size(versions); v++) {
            const char *version =
                json_string_value(json_object_get(json_array_get(versions, v), "version"));
            json_t *av = json_array_get(json_object_get(item, "versions"), v);
            assert_string_equal(json_string_value(json_object_get(av, "version")), version);
            assert_string_equal(json_string_value(json_object_get(av, "freshness")), "Current");
            json_t *aresources = json_object_get(av, "resources");
            json_t *list = ck_discovery_resources(group, version);
            assert_non_null(list);
            size_t i, top = 0;
            json_t *lr;
            json_array_foreach(json_object_get(list, "resources"), i, lr)
            {
                const char *name = json_string_value(json_object_get(lr, "name"));
                const char *slash = strchr(name, '/');
                char parent[128];
                snprintf(parent, sizeof(parent), "%.*s",
                         (int)(slash ? (size_t)(slash - name) : strlen(name)), name);
                json_t *ar = find_by(aresources, "resource", parent);
                if (!ar)
                    fail_msg("%s/%s %s: not in aggregated discovery", group, version, name);
                json_t *entry = ar;
                if (slash) {
                    entry = find_by(json_object_get(ar, "subresources"), "subresource", slash + 1);
                    if (!entry)
                        fail_msg("%s/%s %s: no such subresource", group, version, name);
                } else {
                    top++;
                    assert_string_equal(
                        json_string_value(json_object_get(ar, "scope")),
                        json_is_true(json_object_get(lr, "namespaced")) ? "Namespaced" : "Cluster");
                    assert_string_equal(json_string_value(json_object_get(ar, "singularResource")),
                                        json_string_value(json_object_get(lr, "singularName")));
                    assert_true(same_strings(json_object_get(ar, "shortNames"),
                                             json_object_get(lr, "shortNames")));
                    assert_true(same_strings(json_object_get(ar, "categories"),
                                             json_object_get(lr, "categories")));
                }
                assert_true(
                    json_equal(json_object_get(entry, "verbs"), json_object_get(lr, "verbs")));
                json_t *kind = json_object_get(entry, "responseKind");
                assert_string_equal(json_string_value(json_object_get(kind, "kind")),
                                    json_string_value(json_object_get(lr, "kind")));
                const char *lgroup = json_string_value(json_object_get(lr, "group"));
                assert_string_equal(json_string_value(json_object_get(kind, "group")),
                                    lgroup ? lgroup : "");
            }
            assert_int_equal(json_array_size(aresources), top);
            resources_seen += top;
            json_decref(list);
        }
        json_decref(versions);
    }
    assert_true(resources_seen > (core ? 10 : 30));
    json_decref(legacy_groups);
    json_decref(agg);
}

static void test_aggregated_discovery_matches_legacy(void **state)
{
    (void)state;
    assert_aggregated_matches_legacy(true);
    assert_aggregated_matches_legacy(false);
    /* v2beta1 has the same shape: only the apiVersion differs */
    json_t *v2 = ck_discovery_aggregated(false, "apidiscovery.k8s.io/v2");
    json_t *beta = ck_discovery_aggregated(false, "apidiscovery.k8s.io/v2beta1");
    assert_string_equal(json_string_value(json_object_get(beta, "apiVersion")),
                        "apidiscovery.k8s.io/v2beta1");
    assert_true(json_equal(json_object_get(v2, "items"), json_object_get(beta, "items")));
    json_decref(v2);
    json_decref(beta);
}

/* A custom resource's responseKind names its group and version, as apiextensions writes it. */
static void test_aggregated_discovery_of_custom_resources(void **state)
{
    (void)state;
    assert_int_equal(ck_api_builtin_schemas(&base_schemas, NULL), 0);
    struct ck_crd_kinds *kinds = crontab_kinds("agg.example.com", "v1", true);
    json_t *agg = ck_discovery_aggregated(false, "apidiscovery.k8s.io/v2");
    json_t *group = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(agg, "items"), i, item)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
        if (name && strcmp(name, "agg.example.com") == 0)
            group = item;
    }
    assert_non_null(group);
    json_t *versions = json_object_get(group, "versions");
    assert_int_equal(json_array_size(versions), 2);
    json_t *v1 = find_by(versions, "version", "v1");
    json_t *crontabs = find_by(json_object_get(v1, "resources"), "resource", "crontabs");
    assert_non_null(crontabs);
    json_t *want = json_pack("{s:s, s:s, s:s}", "group", "agg.example.com", "version", "v1", "kind",
                             "CronTab");
    assert_true(json_equal(json_object_get(crontabs, "responseKind"), want));
    json_t *status = find_by(json_object_get(crontabs, "subresources"), "subresource", "status");
    assert_true(json_equal(json_object_get(status, "responseKind"), want));
    json_decref(want);
    json_decref(agg);
    forget_kinds(kinds);
    /* gone with its kinds */
    agg = ck_discovery_aggregated(false, "apidiscovery.k8s.io/v2");
    json_array_foreach(json_object_get(agg, "items"), i, item)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
        assert_true(!name || strcmp(name, "agg.example.com") != 0);
    }
    json_decref(agg);
    base_schemas = ck_schemas_free(base_schemas);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_and_groups),
        cmocka_unit_test(test_resource_lists),
        cmocka_unit_test(test_openapi_document_declares_field_validation),
        cmocka_unit_test(test_strategic_merge_patch_for_built_in_kinds_only),
        cmocka_unit_test(test_openapi_index_hash_follows_content),
        cmocka_unit_test(test_openapi_advertises_protobuf_for_built_in_kinds_only),
        cmocka_unit_test(test_storage_version_hash_of_built_in_resources),
        cmocka_unit_test(test_storage_version_hash_of_custom_resources),
        cmocka_unit_test(test_aggregated_discovery_matches_legacy),
        cmocka_unit_test(test_aggregated_discovery_of_custom_resources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
