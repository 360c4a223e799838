/*
 * test_store.c - the interface layer's own pieces, which the conformance suite only
 * reaches through a backend: kv boxes (binary keys, NUL-terminated copies, references),
 * the end of a prefix range (0xff carries), key matching for watches and ranges, the
 * reference-taking kv array, and the argument checks a transaction passes before any
 * backend sees it. Everything else in store.c (dispatch, the create/update/delete
 * transactions, the compactor) runs in tests/store/test_conformance.c on both backends.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/store/internal.h"

static void test_kv_boxes(void **state)
{
    (void)state;
    struct ck_kv *kv = ck__kv_new("a\0b", 3, "", 0, 2, 5, 3);
    assert_non_null(kv);
    assert_int_equal(kv->key_len, 3);
    assert_memory_equal(kv->key, "a\0b", 4); /* copied, NUL-terminated past key_len */
    assert_int_equal(kv->value_len, 0);
    assert_string_equal(kv->value, "");
    assert_int_equal(kv->create_revision, 2);
    assert_int_equal(kv->mod_revision, 5);
    assert_int_equal(kv->version, 3);
    assert_ptr_equal(ck_kv_ref(kv), kv);
    assert_null(ck_kv_unref(kv));
    assert_null(ck_kv_unref(kv)); /* the last reference frees it (ASan would tell) */
    assert_null(ck_kv_ref(NULL));
    assert_null(ck_kv_unref(NULL));
}

static void test_prefix_end(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(ck__prefix_end("/a/", 3, out), 3);
    assert_memory_equal(out, "/a0", 3);
    assert_int_equal(ck__prefix_end("a\xff\xff", 3, out), 1); /* 0xff carries */
    assert_memory_equal(out, "b", 1);
    assert_int_equal(ck__prefix_end("\xff\xff", 2, out), 0); /* no end: open range */
    assert_int_equal(ck__prefix_end("", 0, out), 0);
}

static void test_key_matches(void **state)
{
    (void)state;
    assert_true(ck__key_matches("/a/", 3, true, "/a/x", 4));
    assert_true(ck__key_matches("/a/", 3, true, "/a/", 3));
    assert_false(ck__key_matches("/a/", 3, true, "/a", 2));
    assert_false(ck__key_matches("/a/", 3, true, "/b/x", 4));
    assert_true(ck__key_matches("/a", 2, false, "/a", 2));
    assert_false(ck__key_matches("/a", 2, false, "/a/x", 4));
    assert_true(ck__key_matches("", 0, true, "anything", 8));
}

static void test_kvs_append_takes_references(void **state)
{
    (void)state;
    struct ck_kv *kv = ck__kv_new("k", 1, "v", 1, 1, 1, 1);
    const struct ck_kv **kvs = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 40; i++) /* past two doublings */
        assert_int_equal(ck__kvs_append(&kvs, &n, &cap, kv), 0);
    assert_int_equal(n, 40);
    assert_true(cap >= 40);
    ck__kvs_free(kvs, n);
    ck_kv_unref(kv); /* ours: the array held its own 40 */
}

static void test_txn_checks_before_the_backend(void **state)
{
    (void)state;
    char dir[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/ckube-store-XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    char url[300];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    struct ck_store_options opts = {.compaction_interval_ms = -1};
    struct ck_store *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, &opts, &s, &err), 0);
    assert_string_equal(ck_store_backend(s), "sqlite");

    struct ck_store_txn_result res;
    struct ck_store_op put_prefix = {
        .type = CK_STORE_OP_PUT, .key = "/a/", .key_len = 3, .prefix = true};
    struct ck_store_txn txn = {.then_ops = &put_prefix, .n_then = 1};
    assert_int_equal(ck_store_txn(s, &txn, &res, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "prefix"));

    struct ck_store_op no_key = {.type = CK_STORE_OP_GET, .key = NULL, .key_len = 2};
    txn = (struct ck_store_txn){.else_ops = &no_key, .n_else = 1};
    assert_int_equal(ck_store_txn(s, &txn, &res, &err), CK_EINVAL);

    struct ck_store_cmp bad = {.key = "/a", .key_len = 2, .target = (enum ck_store_cmp_target)9};
    txn = (struct ck_store_txn){.cmps = &bad, .n_cmps = 1};
    assert_int_equal(ck_store_txn(s, &txn, &res, &err), CK_EINVAL);
    assert_int_equal(ck_store_txn(s, NULL, &res, &err), CK_EINVAL);

    int64_t rev = 0;
    assert_int_equal(ck_store_update(s, "/a", 2, "v", 1, 0, &rev, NULL, &err), CK_EINVAL);
    const struct ck_kv *kv = NULL;
    assert_int_equal(ck_store_get(s, "/missing", 8, 0, &kv, &rev, &err), CK_ENOENT);
    ck_store_close(s);

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_boxes),
        cmocka_unit_test(test_prefix_end),
        cmocka_unit_test(test_key_matches),
        cmocka_unit_test(test_kvs_append_takes_references),
        cmocka_unit_test(test_txn_checks_before_the_backend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
