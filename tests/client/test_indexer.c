/*
 * test_indexer.c - tests for lib/client/indexer.c: object keys, the indexer's store and
 * indices (client-go's index_test.go and thread_safe_store_test.go cases: multi-valued
 * index functions, updates moving keys between index values, empty sets removed), the
 * atomic replace, references outliving updates, allocation failure and concurrent readers
 * and writers (run under ThreadSanitizer).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/client/internal.h"
#include "ckube/client.h"

static json_t *pod(const char *ns, const char *name, const char *users, const char *owner_uid)
{
    json_t *meta = json_pack("{s:s}", "name", name);
    if (ns)
        json_object_set_new(meta, "namespace", json_string(ns));
    if (users)
        json_object_set_new(meta, "annotations", json_pack("{s:s}", "users", users));
    if (owner_uid)
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s,s:s,s:b},{s:s,s:s,s:b}]", "kind", "Other", "uid",
                                      "not-the-controller", "controller", 0, "kind", "ReplicaSet",
                                      "uid", owner_uid, "controller", 1));
    return json_pack("{s:s,s:o}", "kind", "Pod", "metadata", meta);
}

/* A user-defined, multi-valued index: the comma-separated "users" annotation. */
static int index_by_users(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const char *users = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), "users"));
    if (!users)
        return 0;
    char *copy = strdup(users), *save = NULL;
    int r = 0;
    for (char *u = strtok_r(copy, ",", &save); u && r == 0; u = strtok_r(NULL, ",", &save))
        r = ck_index_values_add(out, u);
    free(copy);
    return r;
}

static int failing_index(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)out;
    (void)arg;
    return json_object_get(json_object_get(obj, "metadata"), "labels") ? CK_EINVAL : 0;
}

/* The second run of the tests: every indexer keeps its objects as text. */
static bool compact;

static struct ck_indexer *empty_indexer(void)
{
    struct ck_indexer *ix;
    assert_int_equal(ck_indexer_new(&ix, NULL), 0);
    if (compact)
        ck_indexer_set_compact(ix);
    return ix;
}

static struct ck_indexer *new_indexer(void)
{
    struct ck_indexer *ix = empty_indexer();
    assert_int_equal(
        ck_indexer_add_index(ix, CK_INDEX_NAMESPACE, ck_index_by_namespace, NULL, NULL), 0);
    assert_int_equal(
        ck_indexer_add_index(ix, CK_INDEX_CONTROLLER_UID, ck_index_by_controller_uid, NULL, NULL),
        0);
    assert_int_equal(ck_indexer_add_index(ix, "users", index_by_users, NULL, NULL), 0);
    return ix;
}

static void add_new(struct ck_indexer *ix, json_t *obj)
{
    assert_int_equal(ck_indexer_add(ix, obj, NULL), 0);
    json_decref(obj);
}

/* Asserts the sorted keys of index=value are exactly the NULL-terminated list. */
static void expect_index(struct ck_indexer *ix, const char *index, const char *value, ...)
{
    struct ck_key_list keys;
    assert_int_equal(ck_indexer_index_keys(ix, index, value, &keys, NULL), 0);
    va_list ap;
    va_start(ap, value);
    size_t n = 0;
    for (const char *want = va_arg(ap, const char *); want; want = va_arg(ap, const char *)) {
        assert_true(n < keys.n);
        assert_string_equal(keys.keys[n], want);
        n++;
    }
    va_end(ap);
    assert_int_equal(keys.n, n);
    ck_key_list_release(&keys);
}

static void test_key_of_namespaced_and_cluster_scoped_objects(void **state)
{
    (void)state;
    char *key;
    json_t *p = pod("default", "web-1", NULL, NULL);
    assert_int_equal(ck_meta_namespace_key(p, &key, NULL), 0);
    assert_string_equal(key, "default/web-1");
    free(key);
    json_decref(p);
    json_t *node = json_pack("{s:{s:s}}", "metadata", "name", "node-1");
    assert_int_equal(ck_meta_namespace_key(node, &key, NULL), 0);
    assert_string_equal(key, "node-1");
    free(key);
    json_decref(node);
    json_t *empty_ns = json_pack("{s:{s:s,s:s}}", "metadata", "name", "n", "namespace", "");
    assert_int_equal(ck_meta_namespace_key(empty_ns, &key, NULL), 0);
    assert_string_equal(key, "n");
    free(key);
    json_decref(empty_ns);
}

static void test_key_of_a_bad_object_is_an_error(void **state)
{
    (void)state;
    const char *bad[] = {
        "[]",
        "{}",
        "{\"metadata\":3}",
        "{\"metadata\":{}}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":7}}",
        "{\"metadata\":{\"name\":\"x\",\"namespace\":5}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *obj = json_loads(bad[i], 0, NULL);
        char *key = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_meta_namespace_key(obj, &key, &err), CK_EINVAL);
        assert_null(key);
        assert_int_equal(err.code, CK_EINVAL);
        assert_true(strlen(err.msg) > 0);
        json_decref(obj);
    }
    char *key = NULL;
    assert_int_equal(ck_meta_namespace_key(NULL, &key, NULL), CK_EINVAL);
}

static void test_split_key(void **state)
{
    (void)state;
    static const struct {
        const char *key, *ns, *name;
        int ret;
    } cases[] = {
        {"default/web", "default", "web", 0}, {"node-1", "", "node-1", 0},
        {"a/b/c", NULL, NULL, CK_EINVAL},     {"", NULL, NULL, CK_EINVAL},
        {"ns/", NULL, NULL, CK_EINVAL},       {"/name", NULL, NULL, CK_EINVAL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *ns = NULL, *name = NULL;
        assert_int_equal(ck_split_meta_namespace_key(cases[i].key, &ns, &name, NULL), cases[i].ret);
        if (cases[i].ret == 0) {
            assert_string_equal(ns, cases[i].ns);
            assert_string_equal(name, cases[i].name);
        } else {
            assert_null(ns);
            assert_null(name);
        }
        free(ns);
        free(name);
    }
}

static void test_add_get_update_delete(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("default", "a", NULL, NULL));
    add_new(ix, pod("kube-system", "b", NULL, NULL));
    add_new(ix, json_pack("{s:{s:s}}", "metadata", "name", "node-1"));
    assert_int_equal(ck_indexer_len(ix), 3);

    const json_t *got = NULL;
    assert_int_equal(ck_indexer_get_by_key(ix, "default/a", &got), 0);
    assert_string_equal(json_string_value(json_object_get(got, "kind")), "Pod");
    ck_cached_unref(got);
    assert_int_equal(ck_indexer_get_by_key(ix, "default/zzz", &got), CK_ENOENT);

    struct ck_key_list keys;
    assert_int_equal(ck_indexer_list_keys(ix, &keys), 0);
    assert_int_equal(keys.n, 3);
    assert_string_equal(keys.keys[0], "default/a");
    assert_string_equal(keys.keys[1], "kube-system/b");
    assert_string_equal(keys.keys[2], "node-1");
    ck_key_list_release(&keys);

    /* Update: same key, new object. */
    json_t *v2 = pod("default", "a", NULL, NULL);
    json_object_set_new(v2, "kind", json_string("PodV2"));
    add_new(ix, v2);
    assert_int_equal(ck_indexer_len(ix), 3);
    assert_int_equal(ck_indexer_get_by_key(ix, "default/a", &got), 0);
    assert_string_equal(json_string_value(json_object_get(got, "kind")), "PodV2");
    ck_cached_unref(got);

    struct ck_obj_list list;
    assert_int_equal(ck_indexer_list(ix, &list), 0);
    assert_int_equal(list.n, 3);
    ck_obj_list_release(&list);

    json_t *a = pod("default", "a", NULL, NULL);
    assert_int_equal(ck_indexer_delete(ix, a, NULL), 0);
    assert_int_equal(ck_indexer_delete(ix, a, NULL), CK_ENOENT);
    json_decref(a);
    assert_int_equal(ck_indexer_delete_key(ix, "node-1", NULL), 0);
    assert_int_equal(ck_indexer_len(ix), 1);
    expect_index(ix, CK_INDEX_NAMESPACE, "default", NULL);
    expect_index(ix, CK_INDEX_NAMESPACE, "kube-system", "kube-system/b", NULL);

    json_t *keyless = json_pack("{s:{}}", "metadata");
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_add(ix, keyless, &err), CK_EINVAL);
    assert_int_equal(ck_indexer_delete(ix, keyless, NULL), CK_EINVAL);
    json_decref(keyless);
    ck_indexer_free(ix);
}

static void test_namespace_and_controller_indices(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("default", "web-1", NULL, "rs-uid-1"));
    add_new(ix, pod("default", "web-2", NULL, "rs-uid-1"));
    add_new(ix, pod("default", "db-1", NULL, "rs-uid-2"));
    add_new(ix, pod("other", "web-1", NULL, NULL));
    expect_index(ix, CK_INDEX_NAMESPACE, "default", "default/db-1", "default/web-1",
                 "default/web-2", NULL);
    expect_index(ix, CK_INDEX_NAMESPACE, "other", "other/web-1", NULL);
    expect_index(ix, CK_INDEX_CONTROLLER_UID, "rs-uid-1", "default/web-1", "default/web-2", NULL);
    /* Only the controller reference counts. */
    expect_index(ix, CK_INDEX_CONTROLLER_UID, "not-the-controller", NULL);

    struct ck_obj_list list;
    assert_int_equal(ck_indexer_by_index(ix, CK_INDEX_CONTROLLER_UID, "rs-uid-2", &list, NULL), 0);
    assert_int_equal(list.n, 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(list.items[0], "metadata"), "name")),
        "db-1");
    ck_obj_list_release(&list);

    /* Orphaned (controller reference removed): leaves the index. */
    add_new(ix, pod("default", "web-2", NULL, NULL));
    expect_index(ix, CK_INDEX_CONTROLLER_UID, "rs-uid-1", "default/web-1", NULL);

    struct ck_key_list values;
    assert_int_equal(ck_indexer_index_values(ix, CK_INDEX_NAMESPACE, &values, NULL), 0);
    assert_int_equal(values.n, 2);
    assert_string_equal(values.keys[0], "default");
    assert_string_equal(values.keys[1], "other");
    ck_key_list_release(&values);
    ck_indexer_free(ix);
}

static void test_multi_valued_index_follows_updates_and_deletes(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("ns", "one", "ernie,bert", NULL));
    add_new(ix, pod("ns", "two", "bert,oscar", NULL));
    add_new(ix, pod("ns", "tre", "ernie,elmo", NULL));
    expect_index(ix, "users", "ernie", "ns/one", "ns/tre", NULL);
    expect_index(ix, "users", "bert", "ns/one", "ns/two", NULL);
    expect_index(ix, "users", "elmo", "ns/tre", NULL);
    expect_index(ix, "users", "oscar", "ns/two", NULL);

    /* one: ernie,bert -> oscar,elmo */
    add_new(ix, pod("ns", "one", "oscar,elmo", NULL));
    expect_index(ix, "users", "ernie", "ns/tre", NULL);
    expect_index(ix, "users", "bert", "ns/two", NULL);
    expect_index(ix, "users", "elmo", "ns/one", "ns/tre", NULL);
    expect_index(ix, "users", "oscar", "ns/one", "ns/two", NULL);

    assert_int_equal(ck_indexer_delete_key(ix, "ns/tre", NULL), 0);
    expect_index(ix, "users", "ernie", NULL);
    expect_index(ix, "users", "elmo", "ns/one", NULL);

    /* Values whose last key went away are gone, not empty sets. */
    struct ck_key_list values;
    assert_int_equal(ck_indexer_index_values(ix, "users", &values, NULL), 0);
    assert_int_equal(values.n, 3);
    assert_string_equal(values.keys[0], "bert");
    assert_string_equal(values.keys[1], "elmo");
    assert_string_equal(values.keys[2], "oscar");
    ck_key_list_release(&values);
    ck_indexer_free(ix);
}

static void test_unknown_and_duplicate_indices(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    struct ck_obj_list list = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_by_index(ix, "nope", "x", &list, &err), CK_ENOENT);
    assert_string_equal(err.msg, "Index with name nope does not exist");
    assert_null(list.items);
    struct ck_key_list keys;
    assert_int_equal(ck_indexer_index_keys(ix, "nope", "x", &keys, NULL), CK_ENOENT);
    assert_int_equal(ck_indexer_index_values(ix, "nope", &keys, NULL), CK_ENOENT);
    /* the same index again is there already; another under its name conflicts */
    assert_int_equal(ck_indexer_add_index(ix, "users", index_by_users, NULL, &err), 0);
    assert_int_equal(ck_indexer_add_index(ix, "users", failing_index, NULL, &err), CK_EEXIST);
    assert_string_equal(err.msg, "indexer conflict: users");
    assert_int_equal(ck_indexer_add_index(ix, NULL, index_by_users, NULL, NULL), CK_EINVAL);
    ck_indexer_free(ix);
}

static void test_an_index_added_later_covers_stored_objects(void **state)
{
    (void)state;
    struct ck_indexer *ix = empty_indexer();
    add_new(ix, pod("a", "x", "bert", NULL));
    add_new(ix, pod("b", "y", "bert", NULL));
    assert_int_equal(ck_indexer_add_index(ix, "users", index_by_users, NULL, NULL), 0);
    expect_index(ix, "users", "bert", "a/x", "b/y", NULL);
    ck_indexer_free(ix);
}

static void test_an_index_error_leaves_the_store_unchanged(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    assert_int_equal(ck_indexer_add_index(ix, "failing", failing_index, NULL, NULL), 0);
    add_new(ix, pod("ns", "a", "bert", NULL));
    json_t *bad = pod("ns", "a", "ernie", NULL);
    json_object_set_new(json_object_get(bad, "metadata"), "labels", json_object());
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_add(ix, bad, &err), CK_EINVAL);
    json_decref(bad);
    expect_index(ix, "users", "bert", "ns/a", NULL);
    expect_index(ix, "users", "ernie", NULL);
    ck_indexer_free(ix);
}

static void test_replace_swaps_the_whole_content(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("ns", "old-1", "bert", NULL));
    add_new(ix, pod("ns", "old-2", "bert", NULL));
    json_t *objs[] = {pod("ns", "new-1", "ernie", "uid"), pod("ns", "new-2", "bert", NULL),
                      pod("ns", "new-1", "oscar", NULL)}; /* a later duplicate wins */
    assert_int_equal(ck_indexer_replace(ix, (const json_t *const *)objs, 3, NULL), 0);
    for (int i = 0; i < 3; i++)
        json_decref(objs[i]);
    assert_int_equal(ck_indexer_len(ix), 2);
    expect_index(ix, "users", "bert", "ns/new-2", NULL);
    expect_index(ix, "users", "ernie", NULL);
    expect_index(ix, "users", "oscar", "ns/new-1", NULL);
    expect_index(ix, CK_INDEX_CONTROLLER_UID, "uid", NULL);

    /* A keyless object makes the whole replace fail and change nothing. */
    json_t *bad[] = {pod("ns", "other", NULL, NULL), json_pack("{s:{}}", "metadata")};
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_replace(ix, (const json_t *const *)bad, 2, &err), CK_EINVAL);
    json_decref(bad[0]);
    json_decref(bad[1]);
    assert_int_equal(ck_indexer_len(ix), 2);
    expect_index(ix, CK_INDEX_NAMESPACE, "ns", "ns/new-1", "ns/new-2", NULL);

    assert_int_equal(ck_indexer_replace(ix, NULL, 0, NULL), 0);
    assert_int_equal(ck_indexer_len(ix), 0);
    expect_index(ix, "users", "bert", NULL);
    ck_indexer_free(ix);
}

static void test_references_outlive_updates_and_the_indexer(void **state)
{
    (void)state;
    if (compact)
        skip(); /* a compact indexer holds no tree: the test below says what it does */
    struct ck_indexer *ix = new_indexer();
    json_t *v1 = pod("ns", "a", NULL, NULL);
    assert_int_equal(ck_indexer_add(ix, v1, NULL), 0);
    assert_int_equal(v1->refcount, 2); /* ours and the indexer's */
    const json_t *got;
    assert_int_equal(ck_indexer_get_by_key(ix, "ns/a", &got), 0);
    assert_ptr_equal(got, v1);
    add_new(ix, pod("ns", "a", "bert", NULL));
    assert_int_equal(v1->refcount, 2); /* ours and `got` */
    ck_indexer_free(ix);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(got, "metadata"), "name")), "a");
    ck_cached_unref(got);
    assert_int_equal(v1->refcount, 1);
    json_decref(v1);
}

/*
 * A compact indexer holds no reference on what it stores: each read decodes a tree equal
 * to the stored object, the reader's own, so one reader's tree is not another's.
 */
static void test_compact_reads_decode_trees_of_their_own(void **state)
{
    (void)state;
    if (!compact)
        skip();
    struct ck_indexer *ix = new_indexer();
    json_t *v1 = pod("ns", "a", "bert", "uid-1");
    json_object_set_new(v1, "spec",
                        json_pack("{s:f, s:i, s:[b, n]}", "ratio", 0.5, "n", 3, "l", 1));
    assert_int_equal(ck_indexer_add(ix, v1, NULL), 0);
    assert_int_equal(v1->refcount, 1); /* ours alone */
    const json_t *got, *again;
    assert_int_equal(ck_indexer_get_by_key(ix, "ns/a", &got), 0);
    assert_int_equal(ck_indexer_get_by_key(ix, "ns/a", &again), 0);
    assert_ptr_not_equal(got, v1);
    assert_ptr_not_equal(got, again);
    assert_true(json_equal(got, v1));
    assert_true(json_equal(again, v1));
    struct ck_obj_list list;
    assert_int_equal(ck_indexer_by_index(ix, "users", "bert", &list, NULL), 0);
    assert_int_equal(list.n, 1);
    assert_true(json_equal(list.items[0], v1));
    ck_obj_list_release(&list);
    ck_indexer_free(ix);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(got, "metadata"), "name")), "a");
    ck_cached_unref(got);
    ck_cached_unref(again);
    json_decref(v1);
}

static void test_tombstones_carry_key_and_last_state(void **state)
{
    (void)state;
    json_t *p = pod("ns", "gone", NULL, NULL);
    struct ck_deleted_final_state_unknown *t = ck_tombstone_new("ns/gone", p);
    assert_non_null(t);
    json_decref(p);
    char *key;
    assert_int_equal(ck_deletion_handling_key(NULL, t, &key, NULL), 0);
    assert_string_equal(key, "ns/gone");
    free(key);
    assert_int_equal(ck_deletion_handling_key(t->obj, NULL, &key, NULL), 0);
    assert_string_equal(key, "ns/gone");
    free(key);
    assert_null(ck_tombstone_free(t));
    assert_null(ck_tombstone_free(NULL));
}

static void test_allocation_failure_keeps_every_change_atomic(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("ns", "base", "bert,ernie", "uid-1"));
    char name[32];
    int failures = 0;
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "p%02d", i);
        json_t *p = pod("ns", name, i % 2 ? "bert,oscar" : "elmo", "uid-1");
        for (unsigned long n = 1;; n++) {
            ck__alloc_fail_at(n, true);
            int r = ck_indexer_add(ix, p, NULL);
            ck__alloc_fail_at(0, false);
            if (r == 0)
                break;
            failures++;
            assert_int_equal(r, CK_ENOMEM);
            assert_int_equal(ck_indexer_len(ix), (size_t)i + 1);
            char key[40];
            snprintf(key, sizeof(key), "ns/%s", name);
            const json_t *got;
            assert_int_equal(ck_indexer_get_by_key(ix, key, &got), CK_ENOENT);
            struct ck_key_list keys;
            assert_int_equal(ck_indexer_index_keys(ix, "users", "oscar", &keys, NULL), 0);
            for (size_t k = 0; k < keys.n; k++)
                assert_string_not_equal(keys.keys[k], key);
            ck_key_list_release(&keys);
        }
        json_decref(p);
    }
    assert_true(failures > 20);
    /* Updating base (bert,ernie -> oscar) under failures keeps the old memberships. */
    json_t *upd = pod("ns", "base", "oscar", NULL);
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, true);
        int r = ck_indexer_add(ix, upd, NULL);
        ck__alloc_fail_at(0, false);
        if (r == 0)
            break;
        expect_index(ix, "users", "ernie", "ns/base", NULL);
    }
    json_decref(upd);
    expect_index(ix, "users", "ernie", NULL);
    struct ck_key_list keys;
    assert_int_equal(ck_indexer_index_keys(ix, CK_INDEX_CONTROLLER_UID, "uid-1", &keys, NULL), 0);
    assert_int_equal(keys.n, 20);
    ck_key_list_release(&keys);
    ck_indexer_free(ix);
}

static void test_allocation_failure_in_replace_and_add_index_changes_nothing(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    add_new(ix, pod("ns", "old", "bert", NULL));
    json_t *objs[30];
    char name[16];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "new-%02d", i);
        objs[i] = pod("ns", name, i % 2 ? "ernie" : "elmo,bert", "uid");
    }
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, true);
        int r = ck_indexer_replace(ix, (const json_t *const *)objs, 30, NULL);
        ck__alloc_fail_at(0, false);
        if (r == 0)
            break;
        assert_int_equal(r, CK_ENOMEM);
        assert_int_equal(ck_indexer_len(ix), 1);
        expect_index(ix, "users", "bert", "ns/old", NULL);
    }
    for (int i = 0; i < 30; i++)
        json_decref(objs[i]);
    assert_int_equal(ck_indexer_len(ix), 30);

    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, true);
        int r = ck_indexer_add_index(ix, "users-again", index_by_users, NULL, NULL);
        ck__alloc_fail_at(0, false);
        if (r == 0)
            break;
        assert_int_equal(r, CK_ENOMEM);
        struct ck_key_list keys;
        assert_int_equal(ck_indexer_index_keys(ix, "users-again", "ernie", &keys, NULL), CK_ENOENT);
    }
    struct ck_key_list keys;
    assert_int_equal(ck_indexer_index_keys(ix, "users-again", "ernie", &keys, NULL), 0);
    assert_int_equal(keys.n, 15);
    ck_key_list_release(&keys);
    ck_indexer_free(ix);
}

/* ---- concurrency: readers see whole objects and consistent indices ------------- */

struct rw {
    struct ck_indexer *ix;
    int errors;
};

static void *writer_main(void *arg)
{
    struct rw *rw = arg;
    char name[16];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "p%d", i % 50);
        json_t *p = pod("ns", name, i % 3 ? "bert" : "ernie", NULL);
        if (ck_indexer_add(rw->ix, p, NULL) != 0)
            rw->errors++;
        ck_cached_unref(p); /* shared with the readers now */
        if (i % 7 == 0)
            ck_indexer_delete_key(rw->ix, "ns/p3", NULL);
        if (i % 500 == 0 && ck_indexer_replace(rw->ix, NULL, 0, NULL) != 0)
            rw->errors++;
    }
    return NULL;
}

static void *reader_main(void *arg)
{
    struct rw *rw = arg;
    for (int i = 0; i < 2000; i++) {
        struct ck_obj_list list;
        if (ck_indexer_by_index(rw->ix, "users", "bert", &list, NULL) != 0) {
            rw->errors++;
            continue;
        }
        for (size_t k = 0; k < list.n; k++) {
            const char *users = json_string_value(json_object_get(
                json_object_get(json_object_get(list.items[k], "metadata"), "annotations"),
                "users"));
            if (!users || strcmp(users, "bert") != 0)
                rw->errors++;
        }
        ck_obj_list_release(&list);
    }
    return NULL;
}

static void test_concurrent_readers_see_consistent_indices(void **state)
{
    (void)state;
    struct ck_indexer *ix = new_indexer();
    struct rw rws[4] = {{ix, 0}, {ix, 0}, {ix, 0}, {ix, 0}};
    pthread_t t[4];
    pthread_create(&t[0], NULL, writer_main, &rws[0]);
    pthread_create(&t[1], NULL, writer_main, &rws[1]);
    pthread_create(&t[2], NULL, reader_main, &rws[2]);
    pthread_create(&t[3], NULL, reader_main, &rws[3]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(rws[i].errors, 0);
    }
    ck_indexer_free(ix);
}

static int set_compact(void **state)
{
    (void)state;
    compact = true;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_of_namespaced_and_cluster_scoped_objects),
        cmocka_unit_test(test_key_of_a_bad_object_is_an_error),
        cmocka_unit_test(test_split_key),
        cmocka_unit_test(test_add_get_update_delete),
        cmocka_unit_test(test_namespace_and_controller_indices),
        cmocka_unit_test(test_multi_valued_index_follows_updates_and_deletes),
        cmocka_unit_test(test_unknown_and_duplicate_indices),
        cmocka_unit_test(test_an_index_added_later_covers_stored_objects),
        cmocka_unit_test(test_an_index_error_leaves_the_store_unchanged),
        cmocka_unit_test(test_replace_swaps_the_whole_content),
        cmocka_unit_test(test_references_outlive_updates_and_the_indexer),
        cmocka_unit_test(test_tombstones_carry_key_and_last_state),
        cmocka_unit_test(test_allocation_failure_keeps_every_change_atomic),
        cmocka_unit_test(test_allocation_failure_in_replace_and_add_index_changes_nothing),
        cmocka_unit_test(test_concurrent_readers_see_consistent_indices),
        cmocka_unit_test(test_compact_reads_decode_trees_of_their_own),
    };
    int failed = cmocka_run_group_tests_name("trees", tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("compact", tests, set_compact, NULL);
}
