/*
 * test_nodeipam.c - the node IPAM controller (lib/controllers/nodeipam) on fakes: the
 * CIDR set's search, occupy and release as Kubernetes' cidr_set_test.go checks them, and
 * the controller's sync over a node cache the test fills and the fake client, as
 * range_allocator_test.go does with fake informers and the fake clientset; workers on
 * several threads at once never hand out a block twice.
 */
#include "cktest.h"

#include <pthread.h>

#include "ckube/internal/util.h"
#include "ckube/nodeipam.h"
#include "fixtures.h"

/* ---- the CIDR set ------------------------------------------------------------------------ */

static void test_set_hands_out_blocks_in_order_and_wraps_past_released_ones(void **state)
{
    (void)state;
    struct ck_cidr_set *s = NULL;
    assert_int_equal(ck_cidr_set_new("10.0.0.0/22", 24, &s, NULL), 0);
    assert_int_equal(ck_cidr_set_size(s), 4);
    char b[32];
    const char *want[] = {"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(ck_cidr_set_allocate_next(s, b, sizeof(b)), 0);
        assert_string_equal(b, want[i]);
    }
    assert_int_equal(ck_cidr_set_allocate_next(s, b, sizeof(b)), CK_ENOENT);
    assert_int_equal(ck_cidr_set_release(s, "10.0.1.0/24", NULL), 0);
    assert_int_equal(ck_cidr_set_used(s), 3);
    assert_int_equal(ck_cidr_set_allocate_next(s, b, sizeof(b)), 0);
    assert_string_equal(b, "10.0.1.0/24");
    /* the next search starts after the block handed out last */
    assert_int_equal(ck_cidr_set_release(s, "10.0.0.0/24", NULL), 0);
    assert_int_equal(ck_cidr_set_release(s, "10.0.3.0/24", NULL), 0);
    assert_int_equal(ck_cidr_set_allocate_next(s, b, sizeof(b)), 0);
    assert_string_equal(b, "10.0.3.0/24");
    ck_cidr_set_free(s);
}

static void test_set_occupy_covers_every_block_a_prefix_overlaps(void **state)
{
    (void)state;
    struct ck_cidr_set *s = NULL;
    assert_int_equal(ck_cidr_set_new("10.244.0.0/16", 24, &s, NULL), 0);
    assert_int_equal(ck_cidr_set_occupy(s, "10.244.4.0/23", NULL), 0); /* blocks 4 and 5 */
    assert_int_equal(ck_cidr_set_used(s), 2);
    assert_int_equal(ck_cidr_set_occupy(s, "10.244.5.7/26", NULL), 0); /* inside block 5 */
    assert_int_equal(ck_cidr_set_used(s), 2);
    assert_int_equal(ck_cidr_set_occupy(s, "10.244.0.0/24", NULL), 0);
    char b[32];
    assert_int_equal(ck_cidr_set_allocate_next(s, b, sizeof(b)), 0);
    assert_string_equal(b, "10.244.1.0/24");
    struct ck_err err = {0};
    assert_int_equal(ck_cidr_set_occupy(s, "10.245.0.0/24", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "out the range"));
    assert_int_equal(ck_cidr_set_occupy(s, "10.244.0.0", NULL), CK_EINVAL);
    assert_int_equal(ck_cidr_set_occupy(s, "10.0.0.0/8", NULL), 0); /* covers the whole range */
    assert_int_equal(ck_cidr_set_used(s), 256);
    ck_cidr_set_free(s);
}

static void test_set_refuses_bad_masks(void **state)
{
    (void)state;
    struct ck_cidr_set *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_cidr_set_new("10.244.0.0/16", 8, &s, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "--node-cidr-mask-size"));
    assert_int_equal(ck_cidr_set_new("10.0.0.0/8", 25, &s, &err), CK_EINVAL);
    assert_int_equal(ck_cidr_set_new("10.0.0.0/33", 34, &s, &err), CK_EINVAL);
    assert_int_equal(ck_cidr_set_new("fd00::/48", 64, &s, &err), CK_EINVAL);
    assert_int_equal(ck_cidr_set_new("10.0.0.0/8", 24, &s, &err), 0); /* 2^16 blocks: the limit */
    assert_int_equal(ck_cidr_set_size(s), 65536);
    ck_cidr_set_free(s);
}

/* ---- the controller ----------------------------------------------------------------------- */

struct env {
    struct fx_cache nodes;
    struct ck_fake_client *fc;
    struct ck_nodeipam *c;
};

static struct env *env_new(const char *cluster_cidr, int mask)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->nodes);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    struct ck_nodeipam_config config = {.nodes = e->nodes.lister,
                                        .cluster_cidr = cluster_cidr,
                                        .node_mask_size = mask,
                                        .synchronous_events = true};
    ck_fake_client_iface(e->fc, &config.client);
    struct ck_err err = {0};
    if (ck_nodeipam_new(&config, &e->c, &err) < 0)
        fail_msg("new: %s", err.msg);
    return e;
}

static void env_free(struct env *e)
{
    ck_nodeipam_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->nodes);
    free(e);
}

static json_t *node(const char *name, const char *cidr)
{
    json_t *n = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion", "v1", "kind", "Node",
                          "metadata", "name", name, "uid", name, "spec");
    if (cidr)
        json_object_set_new(json_object_get(n, "spec"), "podCIDRs", json_pack("[s]", cidr));
    if (cidr)
        json_object_set_new(json_object_get(n, "spec"), "podCIDR", json_string(cidr));
    return n;
}

/* The podCIDR the n-th node patch set, or NULL. */
static const char *patched(struct env *e, size_t n)
{
    const struct ck_fake_action *a = fx_action(e->fc, "patch", "nodes", n);
    const json_t *spec = a ? json_object_get(a->body, "spec") : NULL;
    const char *one = json_string_value(json_object_get(spec, "podCIDR"));
    const char *list = json_string_value(json_array_get(json_object_get(spec, "podCIDRs"), 0));
    assert_true(json_array_size(json_object_get(spec, "podCIDRs")) == (one ? 1 : 0));
    if (one)
        assert_string_equal(one, list);
    return one;
}

static void sync_ok(struct env *e, const char *name)
{
    struct ck_err err = {0};
    if (ck_nodeipam_sync(e->c, name, &err) < 0)
        fail_msg("sync %s: %s", name, err.msg);
}

static void test_new_nodes_get_the_next_blocks(void **state)
{
    (void)state;
    struct env *e = env_new(NULL, 0); /* the defaults: 10.244.0.0/16, /24 */
    fx_cache_add(&e->nodes, node("a", NULL));
    fx_cache_add(&e->nodes, node("b", NULL));
    sync_ok(e, "a");
    sync_ok(e, "b");
    assert_string_equal(patched(e, 0), "10.244.0.0/24");
    assert_string_equal(patched(e, 1), "10.244.1.0/24");
    assert_string_equal(fx_action(e->fc, "patch", "nodes", 1)->name, "b");
    size_t used, size;
    ck_nodeipam_usage(e->c, &used, &size);
    assert_int_equal(used, 2);
    assert_int_equal(size, 256);
    env_free(e);
}

static void test_existing_ranges_are_kept_and_never_handed_out_again(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/16", 24);
    fx_cache_add(&e->nodes, node("old", "10.244.0.0/24"));
    fx_cache_add(&e->nodes, node("older", "10.244.1.0/24"));
    fx_cache_add(&e->nodes, node("foreign", "10.64.0.0/24")); /* outside: left alone */
    fx_cache_add(&e->nodes, node("new", NULL));
    ck_nodeipam_occupy_existing(e->c); /* as at start, before any sync */
    sync_ok(e, "new");
    sync_ok(e, "old");
    sync_ok(e, "foreign");
    assert_int_equal(ck_fake_client_count(e->fc, "patch", NULL), 1);
    assert_string_equal(patched(e, 0), "10.244.2.0/24");
    env_free(e);
}

static void test_a_stale_cache_gets_the_same_block_again(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/16", 24);
    fx_cache_add(&e->nodes, node("a", NULL));
    sync_ok(e, "a");
    sync_ok(e, "a"); /* the watch has not shown the patch yet */
    assert_string_equal(patched(e, 0), "10.244.0.0/24");
    assert_string_equal(patched(e, 1), "10.244.0.0/24");
    fx_cache_add(&e->nodes, node("a", "10.244.0.0/24")); /* now it has */
    sync_ok(e, "a");
    assert_int_equal(ck_fake_client_count(e->fc, "patch", NULL), 2);
    size_t used, size;
    ck_nodeipam_usage(e->c, &used, &size);
    assert_int_equal(used, 1);
    env_free(e);
}

static void test_a_failed_patch_is_retried_with_the_same_block(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/16", 24);
    fx_cache_add(&e->nodes, node("a", NULL));
    fx_cache_add(&e->nodes, node("b", NULL));
    assert_int_equal(ck_fake_client_fail(e->fc, "patch", NULL, 1, CK_EIO, "boom"), 0);
    struct ck_err err = {0};
    assert_int_equal(ck_nodeipam_sync(e->c, "a", &err), CK_EIO);
    sync_ok(e, "b");
    sync_ok(e, "a");
    assert_string_equal(patched(e, 1), "10.244.1.0/24"); /* b */
    assert_string_equal(patched(e, 2), "10.244.0.0/24"); /* a, again its block */
    env_free(e);
}

static void test_deleted_nodes_release_their_blocks(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/23", 24); /* two blocks */
    json_t *a = node("a", "10.244.0.0/24");
    fx_cache_add(&e->nodes, json_incref(a));
    fx_cache_add(&e->nodes, node("b", "10.244.1.0/24"));
    fx_cache_add(&e->nodes, node("c", NULL));
    ck_nodeipam_occupy_existing(e->c);
    struct ck_err err = {0};
    assert_int_equal(ck_nodeipam_sync(e->c, "c", &err), CK_ENOENT);
    assert_non_null(strstr(err.msg, "no remaining CIDRs"));
    assert_int_equal(ck_fake_client_count(e->fc, "patch", NULL), 0);
    /* the event Kubernetes' range allocator records on the node */
    const struct ck_fake_action *ev = fx_action(e->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev->body, "reason")), "CIDRNotAvailable");
    assert_string_equal(json_string_value(json_object_get(ev->body, "type")), "Normal");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ev->body, "involvedObject"), "name")),
        "c");

    assert_int_equal(ck_indexer_delete(e->nodes.ix, a, NULL), 0);
    ck_nodeipam_node_deleted(e->c, a);
    json_decref(a);
    sync_ok(e, "c");
    assert_string_equal(patched(e, 0), "10.244.0.0/24");
    env_free(e);
}

static void test_a_node_gone_before_its_patch_frees_its_block(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/24", 24); /* one block */
    fx_cache_add(&e->nodes, node("a", NULL));
    fx_cache_add(&e->nodes, node("b", NULL));
    assert_int_equal(ck_fake_client_fail(e->fc, "patch", NULL, 1, CK_ENOENT, "gone"), 0);
    sync_ok(e, "a"); /* 404: nothing to retry */
    sync_ok(e, "b");
    assert_string_equal(patched(e, 1), "10.244.0.0/24");
    env_free(e);
}

/* ---- concurrency: workers sync different nodes at once ------------------------------------ */

#define THREADS        8
#define NODES_A_THREAD 16

struct worker {
    struct env *e;
    int first;
    int failures;
};

static void *sync_some(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < NODES_A_THREAD; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", w->first + i);
        w->failures += ck_nodeipam_sync(w->e->c, name, NULL) < 0;
    }
    return NULL;
}

static void test_workers_at_once_never_share_a_block(void **state)
{
    (void)state;
    struct env *e = env_new("10.244.0.0/16", 24);
    for (int i = 0; i < THREADS * NODES_A_THREAD; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", i);
        fx_cache_add(&e->nodes, node(name, NULL));
    }
    pthread_t t[THREADS];
    struct worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){e, i * NODES_A_THREAD, 0};
        assert_int_equal(pthread_create(&t[i], NULL, sync_some, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    size_t n = THREADS * NODES_A_THREAD, used, size;
    ck_nodeipam_usage(e->c, &used, &size);
    assert_int_equal(used, n);
    json_t *seen = json_object();
    for (size_t i = 0; i < n; i++) {
        const char *cidr = patched(e, i);
        assert_non_null(cidr);
        assert_null(json_object_get(seen, cidr)); /* no block twice */
        json_object_set_new(seen, cidr, json_true());
    }
    json_decref(seen);
    env_free(e);
}

static void test_flags_are_validated(void **state)
{
    (void)state;
    struct ck_fake_client *fc = NULL;
    assert_int_equal(ck_fake_client_new(&fc, NULL), 0);
    struct fx_cache nodes;
    fx_cache_init(&nodes);
    struct ck_nodeipam_config config = {
        .nodes = nodes.lister, .cluster_cidr = "10.244.0.0/16", .node_mask_size = 12};
    ck_fake_client_iface(fc, &config.client);
    struct ck_nodeipam *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_nodeipam_new(&config, &c, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "mask size of cluster CIDR"));
    config.cluster_cidr = "10.244.0.0";
    config.node_mask_size = 24;
    assert_int_equal(ck_nodeipam_new(&config, &c, &err), CK_EINVAL);
    assert_null(c);
    fx_cache_release(&nodes);
    ck_fake_client_free(fc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_hands_out_blocks_in_order_and_wraps_past_released_ones),
        cmocka_unit_test(test_set_occupy_covers_every_block_a_prefix_overlaps),
        cmocka_unit_test(test_set_refuses_bad_masks),
        cmocka_unit_test(test_new_nodes_get_the_next_blocks),
        cmocka_unit_test(test_existing_ranges_are_kept_and_never_handed_out_again),
        cmocka_unit_test(test_a_stale_cache_gets_the_same_block_again),
        cmocka_unit_test(test_a_failed_patch_is_retried_with_the_same_block),
        cmocka_unit_test(test_deleted_nodes_release_their_blocks),
        cmocka_unit_test(test_a_node_gone_before_its_patch_frees_its_block),
        cmocka_unit_test(test_workers_at_once_never_share_a_block),
        cmocka_unit_test(test_flags_are_validated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
