/*
 * test_discovery.c - the cached discovery client over a fake source (no server): what a
 * snapshot holds (top-level resources only, verbs, scope, preferred versions), group
 * versions that fail listed without failing the refresh, /apis failing the refresh and
 * keeping the old snapshot, the ttl on a fake clock, invalidation, and snapshots kept by
 * readers across refreshes.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/rest.h"

struct source {
    int gets;
    bool fail_apis;
    bool fail_v2;
};

static int fake_get(void *ctx, const char *path, json_t **ret_doc, struct ck_err *reterr)
{
    struct source *s = ctx;
    s->gets++;
    const char *text = NULL;
    if (strcmp(path, "/api") == 0)
        text = "{\"versions\": [\"v1\"]}";
    else if (strcmp(path, "/apis") == 0 && !s->fail_apis)
        text = "{\"groups\": [{\"name\": \"g\", \"versions\": [{\"version\": \"v1\"}, "
               "{\"version\": \"v2\"}], \"preferredVersion\": {\"version\": \"v2\"}}]}";
    else if (strcmp(path, "/api/v1") == 0)
        text = "{\"resources\": [{\"name\": \"pods\", \"kind\": \"Pod\", \"namespaced\": true, "
               "\"verbs\": [\"get\", \"list\", \"watch\", \"delete\", \"deletecollection\"]}, "
               "{\"name\": \"pods/status\", \"kind\": \"Pod\", \"namespaced\": true, \"verbs\": "
               "[\"get\"]}, {\"name\": \"nodes\", \"kind\": \"Node\", \"namespaced\": false, "
               "\"verbs\": [\"get\"]}]}";
    else if (strcmp(path, "/apis/g/v1") == 0)
        text = "{\"resources\": [{\"name\": \"things\", \"kind\": \"Thing\", \"namespaced\": "
               "true, \"verbs\": [\"list\"]}]}";
    else if (strcmp(path, "/apis/g/v2") == 0 && !s->fail_v2)
        text = "{\"resources\": [{\"name\": \"things\", \"kind\": \"Thing\", \"namespaced\": "
               "true, \"verbs\": [\"list\", \"watch\", \"delete\"]}]}";
    if (!text)
        return ck_err_set(reterr, CK_EIO, "%s: service unavailable", path);
    *ret_doc = json_loads(text, 0, NULL);
    return 0;
}

static void test_snapshot_holds_top_level_resources(void **state)
{
    (void)state;
    struct source s = {0};
    struct ck_discovery_source src = {fake_get, &s};
    struct ck_discovery *d = NULL;
    assert_int_equal(ck_discovery_new(&src, 0, NULL, &d, NULL), 0);
    struct ck_discovery_snapshot *snap = NULL;
    assert_int_equal(ck_discovery_get(d, &snap, NULL), 0);
    assert_int_equal(snap->n, 4); /* pods, nodes, things v1 and v2; no pods/status */
    const struct ck_discovered *pods = ck_discovery_find_kind(snap, "v1", "Pod");
    assert_non_null(pods);
    assert_string_equal(pods->res.resource, "pods");
    assert_string_equal(pods->res.group, "");
    assert_true(pods->res.namespaced);
    assert_true(pods->preferred);
    assert_int_equal(pods->verbs, CK_VERB_GET | CK_VERB_LIST | CK_VERB_WATCH | CK_VERB_DELETE |
                                      CK_VERB_DELETECOLLECTION);
    assert_false(ck_discovery_find(snap, "", "v1", "nodes")->res.namespaced);
    assert_false(ck_discovery_find(snap, "g", "v1", "things")->preferred);
    const struct ck_discovered *v2 = ck_discovery_find_kind(snap, "g/v2", "Thing");
    assert_true(v2->preferred);
    assert_string_equal(v2->api_version, "g/v2");
    assert_null(ck_discovery_find_kind(snap, "g/v3", "Thing"));
    ck_discovery_snapshot_unref(snap);
    ck_discovery_free(d);
}

static void test_failing_group_version_is_listed(void **state)
{
    (void)state;
    struct source s = {.fail_v2 = true};
    struct ck_discovery_source src = {fake_get, &s};
    struct ck_discovery *d = NULL;
    assert_int_equal(ck_discovery_new(&src, 0, NULL, &d, NULL), 0);
    struct ck_discovery_snapshot *snap = NULL;
    assert_int_equal(ck_discovery_get(d, &snap, NULL), 0);
    assert_int_equal(snap->n_failed, 1);
    assert_string_equal(snap->failed[0], "g/v2");
    assert_null(ck_discovery_find_kind(snap, "g/v2", "Thing"));
    ck_discovery_snapshot_unref(snap);
    ck_discovery_free(d);
}

static void test_ttl_invalidate_and_failed_refresh(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct source s = {0};
    struct ck_discovery_source src = {fake_get, &s};
    struct ck_discovery *d = NULL;
    assert_int_equal(ck_discovery_new(&src, 10 * CK_SEC, clock, &d, NULL), 0);
    struct ck_discovery_snapshot *first = NULL, *again = NULL;
    assert_int_equal(ck_discovery_get(d, &first, NULL), 0);
    int gets = s.gets;
    assert_int_equal(ck_discovery_get(d, &again, NULL), 0);
    assert_ptr_equal(first, again); /* fresh: no reads */
    assert_int_equal(s.gets, gets);
    ck_discovery_snapshot_unref(again);
    ck_fake_clock_step(clock, 11 * CK_SEC);
    assert_int_equal(ck_discovery_get(d, &again, NULL), 0);
    assert_ptr_not_equal(first, again); /* stale: read again */
    assert_true(s.gets > gets);
    ck_discovery_snapshot_unref(again);
    /* the reader's old snapshot is still whole */
    assert_non_null(ck_discovery_find_kind(first, "v1", "Pod"));
    ck_discovery_snapshot_unref(first);
    /* /apis failing fails the refresh; after an invalidate there is nothing to serve */
    s.fail_apis = true;
    ck_discovery_invalidate(d);
    struct ck_err err = {0};
    assert_int_equal(ck_discovery_get(d, &again, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "/apis"));
    s.fail_apis = false;
    assert_int_equal(ck_discovery_refresh(d, NULL), 0);
    assert_int_equal(ck_discovery_get(d, &again, NULL), 0);
    ck_discovery_snapshot_unref(again);
    ck_discovery_free(d);
    ck_fake_clock_free(clock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_holds_top_level_resources),
        cmocka_unit_test(test_failing_group_version_is_listed),
        cmocka_unit_test(test_ttl_invalidate_and_failed_refresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
