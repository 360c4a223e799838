/*
 * test_namespace_cache.c - tests for lib/apiserver/namespace_cache.c, what creates
 * remember of their namespace: a fill is found again, a change stored by anyone else
 * (another server on the same store) is forgotten once its watch event arrives, a fill
 * that raced a forget is dropped, a watch that ends leaves the cache empty for good, and
 * the cache holds at most CK__NAMESPACE_CACHE_MAX names, and the registry forgets a
 * namespace it writes before it answers (on a cache without a watch, so that nothing else
 * can make it forget): a create, the namespace deleted, the next create refused, the
 * namespace finalized, the next create not found.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"

static char dir[] = "/tmp/ckube-nscache-XXXXXX";
static struct ck_store *store;
static struct ck__namespace_cache *cache;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/ckube-nscache-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char url[300];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    if (ck_store_open(url, NULL, &store, NULL) < 0)
        return -1;
    const struct ck_kind *ns_kind = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    return ns_kind ? ck__namespace_cache_start(store, ns_kind, &cache, NULL) : -1;
}

static int teardown(void **state)
{
    (void)state;
    ck__namespace_cache_free(cache);
    ck_store_close(store);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

/* Looks name up and fills it with terminating when unknown; true if it was known. */
static bool lookup_or_fill(const char *name, bool terminating, bool *ret_known_terminating)
{
    bool t = false;
    uint64_t generation = 0;
    if (ck__namespace_cache_lookup(cache, name, &t, &generation)) {
        *ret_known_terminating = t;
        return true;
    }
    ck__namespace_cache_fill(cache, name, terminating, generation);
    return false;
}

static bool known(const char *name)
{
    bool t;
    uint64_t g;
    return ck__namespace_cache_lookup(cache, name, &t, &g);
}

static void test_fill_then_found(void **state)
{
    (void)state;
    bool t = true;
    assert_false(lookup_or_fill("alpha", false, &t));
    assert_false(lookup_or_fill("omega", true, &t));
    assert_true(lookup_or_fill("alpha", true, &t));
    assert_false(t);
    assert_true(lookup_or_fill("omega", false, &t));
    assert_true(t);
    ck__namespace_cache_forget(cache, "alpha");
    assert_false(known("alpha"));
    assert_true(known("omega"));
}

static void test_a_change_stored_elsewhere_is_forgotten(void **state)
{
    (void)state;
    bool t;
    lookup_or_fill("shared", false, &t);
    lookup_or_fill("untouched", false, &t);
    assert_true(known("shared"));
    /* another server marks it terminating: only the store and the watch tell us */
    static const char key[] = "/registry/namespaces/shared";
    static const char value[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
        "\"name\":\"shared\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}";
    assert_int_equal(ck_store_put(store, key, strlen(key), value, strlen(value), NULL, NULL), 0);
    for (int i = 0; i < 500 && known("shared"); i++)
        usleep(10000);
    assert_false(known("shared"));
    assert_true(known("untouched"));
    /* and its deletion likewise */
    lookup_or_fill("shared", true, &t);
    assert_true(known("shared"));
    assert_int_equal(ck_store_delete(store, key, strlen(key), 0, NULL, NULL, NULL), 0);
    for (int i = 0; i < 500 && known("shared"); i++)
        usleep(10000);
    assert_false(known("shared"));
}

static void test_a_fill_that_raced_a_forget_is_dropped(void **state)
{
    (void)state;
    bool t = false;
    uint64_t generation = 0;
    assert_false(ck__namespace_cache_lookup(cache, "raced", &t, &generation));
    /* while that create read the store, something was written */
    ck__namespace_cache_forget(cache, "other");
    ck__namespace_cache_fill(cache, "raced", false, generation);
    assert_false(known("raced"));
    /* the next read fills it */
    assert_false(ck__namespace_cache_lookup(cache, "raced", &t, &generation));
    ck__namespace_cache_fill(cache, "raced", false, generation);
    assert_true(known("raced"));
}

static void test_at_most_the_limit(void **state)
{
    (void)state;
    char name[32];
    int filled = 0;
    for (int i = 0; i < CK__NAMESPACE_CACHE_MAX + 10; i++) {
        snprintf(name, sizeof(name), "many-%d", i);
        bool t;
        lookup_or_fill(name, false, &t);
        filled += known(name);
    }
    /* the earlier tests' names count too: never more than the limit in all */
    assert_true(filled <= CK__NAMESPACE_CACHE_MAX);
    assert_true(filled > CK__NAMESPACE_CACHE_MAX - 10);
    snprintf(name, sizeof(name), "many-%d", CK__NAMESPACE_CACHE_MAX + 9);
    assert_false(known(name));
    for (int i = 0; i < CK__NAMESPACE_CACHE_MAX + 10; i++) { /* room for the next test */
        snprintf(name, sizeof(name), "many-%d", i);
        ck__namespace_cache_forget(cache, name);
    }
}

static void test_an_ended_watch_leaves_it_empty(void **state)
{
    (void)state;
    bool t;
    lookup_or_fill("before", false, &t);
    assert_true(known("before"));
    struct ck_store_event ended = {
        .type = CK_STORE_EVENT_ERROR, .error = CK_ECOMPACTED, .message = "the watch fell behind"};
    ck__namespace_cache_event(cache, &ended);
    assert_false(known("before"));
    lookup_or_fill("after", false, &t);
    assert_false(known("after"));
}

static char *create(struct ck__registry *reg, const char *resource, const char *namespace,
                    const char *text, struct ck_err *err)
{
    json_t *obj = json_loads(text, 0, NULL);
    char *body = NULL;
    size_t len = 0;
    assert_non_null(obj);
    ck__registry_create(reg, ck_kind_lookup("", "v1", resource), namespace, obj, false, &body, &len,
                        err);
    json_decref(obj);
    return body;
}

/* The finalize subresource's body: the namespace without its finalizers. */
static json_t *no_finalizers(const json_t *current, void *arg, struct ck_err *reterr)
{
    (void)arg;
    (void)reterr;
    json_t *next = json_deep_copy(current);
    json_t *spec = json_object_get(next, "spec");
    assert_non_null(spec); /* the namespace's "kubernetes" finalizer is there */
    json_object_set_new(spec, "finalizers", json_array());
    return next;
}

static void test_the_registry_forgets_what_it_writes(void **state)
{
    (void)state;
    /* a cache without a watch: only the registry's own forgets can keep it right */
    struct ck__namespace_cache *own = NULL;
    const struct ck_schemas *schemas = NULL;
    assert_int_equal(ck__namespace_cache_new(ck_kind_with_role(CK_KIND_ROLE_NAMESPACE), &own, NULL),
                     0);
    assert_int_equal(ck__shared_schemas(&schemas, NULL), 0);
    struct ck__admission_chain *chain = NULL; /* NamespaceLifecycle reads the cache */
    assert_int_equal(ck__admission_chain_new(NULL, "ServiceAccount", &chain, NULL), 0);
    struct ck__registry reg = {
        .store = store, .schemas = schemas, .namespaces = own, .admission = chain};
    static const char pod[] = "{\"metadata\":{\"generateName\":\"p-\"},\"spec\":{"
                              "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";
    struct ck_err err = {0};
    free(create(&reg, "namespaces", NULL, "{\"metadata\":{\"name\":\"own\"}}", &err));
    free(create(&reg, "pods", "own", pod, &err));
    assert_int_equal(err.code, 0);
    bool t = true;
    uint64_t g;
    assert_true(ck__namespace_cache_lookup(own, "own", &t, &g));
    assert_false(t);
    /* deleting the namespace marks it terminating (its finalizer holds it) */
    char *body = NULL;
    size_t len = 0;
    assert_int_equal(ck__registry_delete(&reg, ck_kind_with_role(CK_KIND_ROLE_NAMESPACE), NULL,
                                         "own", NULL, &body, &len, &err),
                     0);
    free(body);
    assert_null(create(&reg, "pods", "own", pod, &err));
    assert_int_equal(err.http_status, 403);
    assert_non_null(strstr(err.msg, "because it is being terminated"));
    ck_err_release(&err);
    /* and its answer is remembered in turn */
    assert_true(ck__namespace_cache_lookup(own, "own", &t, &g));
    assert_true(t);
    /* finalized, it goes: the next create finds no namespace */
    assert_int_equal(ck__registry_update(&reg, ck_kind_with_role(CK_KIND_ROLE_NAMESPACE), NULL,
                                         "own", "finalize", no_finalizers, NULL, false, &body, &len,
                                         &err),
                     0);
    free(body);
    assert_false(ck__namespace_cache_lookup(own, "own", &t, &g));
    assert_null(create(&reg, "pods", "own", pod, &err));
    assert_int_equal(err.http_status, 404);
    ck_err_release(&err);
    ck__namespace_cache_free(own);
    ck__admission_chain_free(chain);
}

static void test_no_cache(void **state)
{
    (void)state;
    bool t = false;
    uint64_t generation = 1;
    assert_false(ck__namespace_cache_lookup(NULL, "x", &t, &generation));
    ck__namespace_cache_fill(NULL, "x", false, generation);
    ck__namespace_cache_forget(NULL, "x");
    ck__namespace_cache_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_then_found),
        cmocka_unit_test(test_a_change_stored_elsewhere_is_forgotten),
        cmocka_unit_test(test_a_fill_that_raced_a_forget_is_dropped),
        cmocka_unit_test(test_at_most_the_limit),
        cmocka_unit_test(test_an_ended_watch_leaves_it_empty),
        cmocka_unit_test(test_the_registry_forgets_what_it_writes),
        cmocka_unit_test(test_no_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
