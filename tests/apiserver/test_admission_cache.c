/*
 * test_admission_cache.c - tests for lib/apiserver/admission/list_cache.c, the lists of
 * configuration objects admission reads on every write: the kinds whose descriptors set
 * admission_lists_all are kept, and no other; a fill is found again; a change
 * stored by anyone else (another server on the same store) is forgotten once its watch
 * event arrives, for that kind only; a fill that raced a forget is dropped; a watch that
 * ends leaves the cache empty for good; kinds that are not configuration (pods) and lists
 * over CK__ADMISSION_CACHE_MAX objects are never kept; and ck__admission_list answers
 * from the cache while nothing changes, and the registry forgets a kind it writes before
 * it answers (on a cache without watches, so that nothing else can make it forget).
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* only the store helpers */
#include "httptest.h"
#pragma GCC diagnostic pop

static char dir[] = "/tmp/ckube-admcache-XXXXXX";
static struct ck_store *store;
static struct ck__admission_cache *cache;

static int setup(void **state)
{
    (void)state;
    char url[300];
    snprintf(dir, sizeof(dir), "%s", "/tmp/ckube-admcache-XXXXXX");
    if (test_store_dir(dir, url, sizeof(url)) < 0 || ck_store_open(url, NULL, &store, NULL) < 0)
        return -1;
    return ck__admission_cache_start(store, &cache, NULL);
}

static int teardown(void **state)
{
    (void)state;
    ck__admission_cache_free(cache);
    ck_store_close(store);
    test_store_remove(dir);
    return 0;
}

/* The collection prefix of group/resource (v1) in namespace (NULL: all). */
static const char *prefix_of(const char *group, const char *resource, const char *namespace)
{
    static char prefix[CK__KEY_MAX];
    const struct ck_kind *kind = ck_kind_lookup(group, "v1", resource);
    assert_non_null(kind);
    assert_true(ck__collection_prefix(kind, namespace, prefix, sizeof(prefix)) > 0);
    return prefix;
}

/* Whether a list is kept for prefix. */
static bool kept(const char *prefix)
{
    bool keep;
    uint64_t generation;
    json_t *items = ck__admission_cache_lookup(cache, prefix, &keep, &generation);
    ck__json_unref(items);
    return items != NULL;
}

/* Looks prefix up and, on a miss, fills it with a one-object list named name. */
static void fill(const char *prefix, const char *name)
{
    bool keep = false;
    uint64_t generation = 0;
    json_t *items = ck__admission_cache_lookup(cache, prefix, &keep, &generation);
    if (items) {
        ck__json_unref(items);
        return;
    }
    json_t *list = json_pack("[{s:{s:s}}]", "metadata", "name", name);
    if (keep)
        ck__admission_cache_fill(cache, prefix, list, generation);
    ck__json_unref(list); /* the cache may share it */
}

static void test_fill_then_found(void **state)
{
    (void)state;
    char webhooks[CK__KEY_MAX];
    snprintf(webhooks, sizeof(webhooks), "%s",
             prefix_of("admissionregistration.k8s.io", "validatingwebhookconfigurations", NULL));
    assert_false(kept(webhooks));
    fill(webhooks, "hook");
    bool keep;
    uint64_t generation;
    json_t *items = ck__admission_cache_lookup(cache, webhooks, &keep, &generation);
    assert_non_null(items);
    assert_int_equal(json_array_size(items), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(items, 0), "metadata"), "name")),
                        "hook");
    ck__json_unref(items);
    /* a namespaced kind: one list per namespace asked for */
    char in_a[CK__KEY_MAX];
    snprintf(in_a, sizeof(in_a), "%s", prefix_of("", "limitranges", "a"));
    fill(in_a, "limits");
    assert_true(kept(in_a));
    assert_false(kept(prefix_of("", "limitranges", "b")));
    /* this server writes a LimitRange: every list of the kind goes, the webhooks' stay */
    ck__admission_cache_forget(cache, ck_kind_lookup("", "v1", "limitranges"));
    assert_false(kept(in_a));
    assert_true(kept(webhooks));
}

static void test_the_flagged_kinds_are_kept(void **state)
{
    (void)state;
    static const char *const configuration[][2] = {
        {"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
        {"admissionregistration.k8s.io", "validatingwebhookconfigurations"},
        {"admissionregistration.k8s.io", "validatingadmissionpolicies"},
        {"admissionregistration.k8s.io", "validatingadmissionpolicybindings"},
        {"scheduling.k8s.io", "priorityclasses"},
        {"", "limitranges"},
        {"storage.k8s.io", "storageclasses"},
        {"networking.k8s.io", "ingressclasses"},
    };
    for (size_t i = 0; i < sizeof(configuration) / sizeof(configuration[0]); i++) {
        const struct ck_kind *kind = ck_kind_lookup(configuration[i][0], "v1", configuration[i][1]);
        assert_non_null(kind);
        assert_true(kind->admission_lists_all);
    }
    /* a fresh cache (no watch to end): a kind is kept exactly when its descriptor says */
    struct ck__admission_cache *own = NULL;
    assert_int_equal(ck__admission_cache_start(NULL, &own, NULL), 0);
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++) {
        char prefix[CK__KEY_MAX];
        if (ck__collection_prefix(kinds[i], NULL, prefix, sizeof(prefix)) <= 0)
            continue;
        bool keep = !kinds[i]->admission_lists_all;
        uint64_t generation;
        assert_null(ck__admission_cache_lookup(own, prefix, &keep, &generation));
        if (keep != kinds[i]->admission_lists_all)
            fail_msg("%s/%s: kept %d, flag %d", kinds[i]->group, kinds[i]->resource, keep,
                     kinds[i]->admission_lists_all);
    }
    ck__admission_cache_free(own);
}

static void test_what_is_never_kept(void **state)
{
    (void)state;
    const char *pods = prefix_of("", "pods", NULL);
    bool keep = true;
    uint64_t generation;
    assert_null(ck__admission_cache_lookup(cache, pods, &keep, &generation));
    assert_false(keep); /* pods are no configuration: read each time */
    fill(pods, "p");
    assert_false(kept(pods));
    /* nor a list over the limit */
    const char *classes = prefix_of("scheduling.k8s.io", "priorityclasses", NULL);
    json_t *items = ck__admission_cache_lookup(cache, classes, &keep, &generation);
    assert_null(items);
    assert_true(keep);
    json_t *many = json_array();
    for (int i = 0; i <= CK__ADMISSION_CACHE_MAX; i++)
        json_array_append_new(many, json_object());
    ck__admission_cache_fill(cache, classes, many, generation);
    json_decref(many);
    assert_false(kept(classes));
}

static void test_a_change_stored_elsewhere_is_forgotten(void **state)
{
    (void)state;
    char policies[CK__KEY_MAX], classes[CK__KEY_MAX];
    snprintf(policies, sizeof(policies), "%s",
             prefix_of("admissionregistration.k8s.io", "validatingadmissionpolicies", NULL));
    snprintf(classes, sizeof(classes), "%s", prefix_of("storage.k8s.io", "storageclasses", NULL));
    fill(policies, "old");
    fill(classes, "standard");
    assert_true(kept(policies));
    /* another server stores a policy: only the store and the watch tell us */
    char key[CK__KEY_MAX + 4];
    snprintf(key, sizeof(key), "%snew", policies);
    static const char value[] = "{\"apiVersion\":\"admissionregistration.k8s.io/v1\","
                                "\"kind\":\"ValidatingAdmissionPolicy\",\"metadata\":{"
                                "\"name\":\"new\"}}";
    assert_int_equal(ck_store_put(store, key, strlen(key), value, strlen(value), NULL, NULL), 0);
    for (int i = 0; i < 500 && kept(policies); i++)
        usleep(10000);
    assert_false(kept(policies));
    assert_true(kept(classes));
}

static void test_a_fill_that_raced_a_forget_is_dropped(void **state)
{
    (void)state;
    const char *classes = prefix_of("networking.k8s.io", "ingressclasses", NULL);
    bool keep = false;
    uint64_t generation = 0;
    assert_null(ck__admission_cache_lookup(cache, classes, &keep, &generation));
    /* while that list read the store, an IngressClass was written */
    ck__admission_cache_forget(cache, ck_kind_lookup("networking.k8s.io", "v1", "ingressclasses"));
    json_t *list = json_array();
    ck__admission_cache_fill(cache, classes, list, generation);
    assert_false(kept(classes));
    /* the next read fills it */
    assert_null(ck__admission_cache_lookup(cache, classes, &keep, &generation));
    ck__admission_cache_fill(cache, classes, list, generation);
    assert_true(kept(classes));
    ck__json_unref(list);
}

static void test_an_ended_watch_leaves_it_empty(void **state)
{
    (void)state;
    const char *hooks =
        prefix_of("admissionregistration.k8s.io", "mutatingwebhookconfigurations", NULL);
    fill(hooks, "before");
    assert_true(kept(hooks));
    /* the watch of a kind ends (its events fell behind): nothing is kept any more */
    char key[CK__KEY_MAX];
    snprintf(key, sizeof(key), "%s", hooks);
    const struct ck_store_event ended = {
        .type = CK_STORE_EVENT_ERROR, .error = CK_ECOMPACTED, .message = "fell behind"};
    ck__admission_cache_event(
        cache,
        ck_kind_lookup("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"),
        &ended);
    assert_false(kept(hooks));
    bool keep = true;
    uint64_t generation;
    assert_null(ck__admission_cache_lookup(cache, key, &keep, &generation));
    assert_false(keep);
}

/* Appends the name of each object ck__admission_list hands over, with a space. */
static int name_of(const json_t *obj, void *arg)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    strcat(arg, name ? name : "?");
    strcat(arg, " ");
    return 0;
}

/* The names of kind's objects as admission lists them. */
static const char *listed(struct ck__registry *reg, const struct ck_kind *kind)
{
    static char names[256];
    names[0] = '\0';
    struct ck_err err = {0};
    assert_int_equal(ck__admission_list(reg, kind, NULL, name_of, names, &err), 0);
    return names;
}

static void test_the_registry_forgets_what_it_writes(void **state)
{
    (void)state;
    /* a cache without watches: only the registry's own forgets can keep it right */
    struct ck__admission_cache *own = NULL;
    const struct ck_schemas *schemas = NULL;
    assert_int_equal(ck__admission_cache_start(NULL, &own, NULL), 0);
    assert_int_equal(ck__shared_schemas(&schemas, NULL), 0);
    struct ck__registry reg = {.store = store, .schemas = schemas, .admission_lists = own};
    const struct ck_kind *pc = ck_kind_lookup("scheduling.k8s.io", "v1", "priorityclasses");
    char key[CK__KEY_MAX];
    assert_true(ck__object_key(pc, NULL, "behind", key, sizeof(key)) > 0);
    static const char value[] = "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                "\"PriorityClass\",\"metadata\":{\"name\":\"behind\"},"
                                "\"value\":5}";
    assert_int_equal(ck_store_put(store, key, strlen(key), value, strlen(value), NULL, NULL), 0);
    assert_string_equal(listed(&reg, pc), "behind ");
    /* written behind the registry's back: the kept list answers, unchanged */
    assert_int_equal(ck_store_delete(store, key, strlen(key), 0, NULL, NULL, NULL), 0);
    assert_string_equal(listed(&reg, pc), "behind ");
    /* a write through the registry forgets the kind before it answers */
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}, s:i}", "apiVersion", "scheduling.k8s.io/v1",
                            "kind", "PriorityClass", "metadata", "name", "fresh", "value", 7);
    char *body = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    ck__registry_create(&reg, pc, NULL, obj, false, &body, &len, &err);
    assert_non_null(body);
    free(body);
    json_decref(obj);
    assert_string_equal(listed(&reg, pc), "fresh "); /* read again */
    ck__admission_cache_free(own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_then_found),
        cmocka_unit_test(test_the_flagged_kinds_are_kept),
        cmocka_unit_test(test_what_is_never_kept),
        cmocka_unit_test(test_a_change_stored_elsewhere_is_forgotten),
        cmocka_unit_test(test_a_fill_that_raced_a_forget_is_dropped),
        cmocka_unit_test(test_an_ended_watch_leaves_it_empty),
        cmocka_unit_test(test_the_registry_forgets_what_it_writes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
