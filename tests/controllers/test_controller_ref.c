/*
 * test_controller_ref.c - the controller-ref manager (controller_ref.c) on the fake
 * client: which candidates a claim keeps, adopts, releases and ignores, the one fresh
 * read of the owner before adopting, and how errors are reported (kubernetes
 * controller_ref_manager_test.go, TestClaimPods).
 */
#include "cktest.h"

#include "fixtures.h"

struct env {
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    const struct ck_resource *pods_res, *rss_res;
    json_t *rs;
    struct ck_label_selector *sel;
    struct ck_ref_owner owner;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->pods_res = ck_controller_resource("", "v1", "pods");
    e->rss_res = ck_controller_resource("apps", "v1", "replicasets");
    assert_non_null(e->pods_res);
    assert_non_null(e->rss_res);
    e->rs = fx_rs("default", "web", "rs-uid", 1, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rss_res, e->rs), 0);
    assert_int_equal(
        ck_label_selector_from_object(json_object_get(json_object_get(e->rs, "spec"), "selector"),
                                      &e->sel, NULL),
        0);
    e->owner = (struct ck_ref_owner){
        .owner = e->rs,
        .api_version = "apps/v1",
        .kind = "ReplicaSet",
        .selector = e->sel,
        .client = &e->client,
        .owner_res = e->rss_res,
        .child_res = e->pods_res,
    };
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_label_selector_free(e->sel);
    json_decref(e->rs);
    ck_fake_client_free(e->fc);
    free(e);
    return 0;
}

/* Seeds pod on the fake "server" too, so adopt and release can update it. */
static json_t *server_pod(struct env *e, const char *name, const char *app, const json_t *owner)
{
    json_t *pod = fx_pod("default", name, app, owner);
    assert_int_equal(ck_fake_client_seed(e->fc, e->pods_res, pod), 0);
    return pod;
}

static bool claimed_has(const struct ck_obj_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(fx_meta(l->items[i], "name"), name) == 0)
            return true;
    return false;
}

static const char *ref_uid(const json_t *obj)
{
    return json_string_value(json_object_get(ck_controller_ref(obj), "uid"));
}

static void test_controller_ref_finds_the_controller_entry(void **state)
{
    (void)state;
    json_t *pod = json_pack("{s:{s:[{s:s, s:b}, {s:s, s:b}]}}", "metadata", "ownerReferences",
                            "uid", "a", "controller", 0, "uid", "b", "controller", 1);
    assert_string_equal(ref_uid(pod), "b");
    json_t *none = json_pack("{s:{s:[{s:s}]}}", "metadata", "ownerReferences", "uid", "a");
    assert_null(ck_controller_ref(none));
    assert_null(ck_controller_ref(NULL));
    json_decref(pod);
    json_decref(none);
}

static void test_claim_keeps_adopts_releases_and_ignores(void **state)
{
    struct env *e = *state;
    json_t *other = fx_rs("default", "other", "other-uid", 1, "web");
    json_t *pods[] = {
        server_pod(e, "mine", "web", e->rs),     /* kept */
        server_pod(e, "relabeled", "db", e->rs), /* released */
        server_pod(e, "orphan-a", "web", NULL),  /* adopted */
        server_pod(e, "orphan-b", "web", NULL),  /* adopted */
        server_pod(e, "theirs", "web", other),   /* someone else's */
        server_pod(e, "stranger", "db", NULL),   /* orphan that does not match */
    };
    size_t n = sizeof(pods) / sizeof(pods[0]);
    struct ck_obj_list claimed = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)pods, n, &claimed, &err),
                     0);
    assert_int_equal(claimed.n, 3);
    assert_true(claimed_has(&claimed, "mine"));
    assert_true(claimed_has(&claimed, "orphan-a"));
    assert_true(claimed_has(&claimed, "orphan-b"));

    /* one fresh read of the owner, then two adoptions and one release */
    assert_int_equal(ck_fake_client_count(e->fc, "get", e->rss_res), 1);
    assert_int_equal(ck_fake_client_count(e->fc, "update", e->pods_res), 3);
    size_t nact = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &nact);
    assert_int_equal(nact, 4);
    assert_string_equal(a[0].verb, "update"); /* the release comes first, in candidate order */
    assert_string_equal(a[0].name, "relabeled");
    assert_null(json_object_get(json_object_get(a[0].body, "metadata"), "ownerReferences"));
    assert_string_equal(fx_meta(a[0].body, "resourceVersion"), "1"); /* conditional */
    assert_string_equal(a[1].verb, "get");
    assert_string_equal(a[1].name, "web");
    for (size_t i = 2; i < 4; i++) {
        assert_string_equal(a[i].verb, "update");
        const json_t *ref = ck_controller_ref(a[i].body);
        assert_string_equal(ref_uid(a[i].body), "rs-uid");
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicaSet");
        assert_string_equal(json_string_value(json_object_get(ref, "apiVersion")), "apps/v1");
        assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
    }
    ck_obj_list_release(&claimed);
    for (size_t i = 0; i < n; i++)
        json_decref(pods[i]);
    json_decref(other);
}

static void test_claim_by_owner_being_deleted_adopts_and_releases_nothing(void **state)
{
    struct env *e = *state;
    json_object_set_new(json_object_get(e->rs, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    json_t *pods[] = {server_pod(e, "mine", "web", e->rs), server_pod(e, "relabeled", "db", e->rs),
                      server_pod(e, "orphan", "web", NULL)};
    struct ck_obj_list claimed = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)pods, 3, &claimed, NULL),
                     0);
    assert_int_equal(claimed.n, 1); /* still controls what it controls */
    assert_true(claimed_has(&claimed, "mine"));
    size_t nact = 1;
    ck_fake_client_actions(e->fc, &nact);
    assert_int_equal(nact, 0);
    ck_obj_list_release(&claimed);
    for (size_t i = 0; i < 3; i++)
        json_decref(pods[i]);
}

static void test_claim_skips_orphans_being_deleted_and_empty_selectors(void **state)
{
    struct env *e = *state;
    json_t *dying = server_pod(e, "dying", "web", NULL);
    json_object_set_new(json_object_get(dying, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    struct ck_obj_list claimed = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)&dying, 1, &claimed, NULL),
                     0);
    assert_int_equal(claimed.n, 0);
    ck_obj_list_release(&claimed);

    /* an empty selector selects nothing here: no adoption, and our own pod is released */
    struct ck_label_selector *empty = NULL;
    json_t *sel = json_object();
    assert_int_equal(ck_label_selector_from_object(sel, &empty, NULL), 0);
    e->owner.selector = empty;
    json_t *pods[] = {server_pod(e, "orphan", "web", NULL), server_pod(e, "mine", "web", e->rs)};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)pods, 2, &claimed, NULL),
                     0);
    assert_int_equal(claimed.n, 0);
    assert_int_equal(ck_fake_client_count(e->fc, "get", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update", NULL), 1);
    assert_string_equal(fx_action(e->fc, "update", "pods", 0)->name, "mine");
    ck_obj_list_release(&claimed);
    ck_label_selector_free(empty);
    json_decref(sel);
    json_decref(dying);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_claim_adopts_nothing_when_the_owner_was_replaced(void **state)
{
    struct env *e = *state;
    /* the server now has a new ReplicaSet of the same name (another uid) */
    json_t *replaced = fx_rs("default", "web", "new-uid", 1, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rss_res, replaced), 0);
    json_t *pods[] = {server_pod(e, "a", "web", NULL), server_pod(e, "b", "web", NULL)};
    struct ck_obj_list claimed = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)pods, 2, &claimed, &err),
                     CK_ECONFLICT);
    assert_non_null(strstr(err.msg, "is gone"));
    assert_int_equal(claimed.n, 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "get", NULL), 1); /* and stops there */
    ck_obj_list_release(&claimed);
    json_decref(replaced);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_claim_skips_vanished_children_and_reports_other_errors(void **state)
{
    struct env *e = *state;
    /* "gone" is only in the cache: the update answers 404 and the pod is skipped */
    json_t *gone = fx_pod("default", "gone", "web", NULL);
    json_t *ok = server_pod(e, "ok", "web", NULL);
    json_t *pods[] = {gone, ok};
    struct ck_obj_list claimed = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)pods, 2, &claimed, NULL),
                     0);
    assert_int_equal(claimed.n, 1);
    assert_true(claimed_has(&claimed, "ok"));
    ck_obj_list_release(&claimed);

    /* a conflict on one adoption is returned, and the others are still claimed */
    ck_fake_client_clear_actions(e->fc);
    json_t *more[] = {server_pod(e, "c1", "web", NULL), server_pod(e, "c2", "web", NULL)};
    assert_int_equal(ck_fake_client_fail(e->fc, "update", e->pods_res, 1, CK_ECONFLICT,
                                         "the object has been modified"),
                     0);
    struct ck_err err = {0};
    assert_int_equal(ck_claim_objects(&e->owner, (const json_t *const *)more, 2, &claimed, &err),
                     CK_ECONFLICT);
    assert_string_equal(err.msg, "the object has been modified");
    assert_int_equal(claimed.n, 1);
    assert_true(claimed_has(&claimed, "c2"));
    ck_obj_list_release(&claimed);
    json_decref(gone);
    json_decref(ok);
    json_decref(more[0]);
    json_decref(more[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controller_ref_finds_the_controller_entry),
        cmocka_unit_test_setup_teardown(test_claim_keeps_adopts_releases_and_ignores, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_claim_by_owner_being_deleted_adopts_and_releases_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_skips_orphans_being_deleted_and_empty_selectors,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_adopts_nothing_when_the_owner_was_replaced,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_skips_vanished_children_and_reports_other_errors,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
