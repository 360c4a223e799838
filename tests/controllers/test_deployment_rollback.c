/*
 * test_deployment_rollback.c - lib/controllers/deployment/rollback.c: finding the
 * ReplicaSet of a revision (the previous one by default), copying its template and
 * annotations, and the revision bookkeeping after kubectl's client-side `rollout undo`.
 */
#include "cktest.h"

#include "controllers/deploy_fixtures.h"

/* A ReplicaSet of revision `rev` whose template runs `image`, with a change-cause. */
static json_t *revision_rs(const char *name, const char *rev, const char *image, const char *cause)
{
    json_t *rs = fx_rs(name, 0, NULL);
    fx_set(rs, "spec.template",
           json_pack("{s:{s:{s:s, s:s}}, s:{s:[{s:s}]}}", "metadata", "labels", "foo", "bar",
                     CK_DEPLOY_HASH_LABEL, name, "spec", "containers", "image", image));
    fx_annotate(rs, CK_DEPLOY_REVISION_ANNOTATION, rev);
    fx_annotate(rs, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, cause);
    return rs;
}

static void test_rollback_revision(void **state)
{
    (void)state;
    struct {
        const char *annotation;
        int64_t expected;
    } cases[] = {{NULL, -1}, {"0", 0}, {"3", 3}, {"x", -1}, {"-2", -1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", 1, NULL, NULL);
        if (cases[i].annotation)
            fx_annotate(d, CK_DEPLOY_ROLLBACK_TO_ANNOTATION, cases[i].annotation);
        assert_int_equal(ck__deploy_rollback_revision(d), cases[i].expected);
        json_decref(d);
    }
}

static void test_rollback_find(void **state)
{
    (void)state;
    json_t *r1 = revision_rs("foo-1", "1", "v1", "create");
    json_t *r2 = revision_rs("foo-2", "2", "v2", "edit");
    json_t *r3 = revision_rs("foo-3", "3", "v3", "edit again");
    const json_t *all[] = {r3, r1, r2}, *got = NULL;
    assert_int_equal(ck__deploy_rollback_find(all, 3, 0, &got), 0);
    assert_ptr_equal(got, r2); /* the previous revision */
    assert_int_equal(ck__deploy_rollback_find(all, 3, 1, &got), 0);
    assert_ptr_equal(got, r1);
    assert_int_equal(ck__deploy_rollback_find(all, 3, 7, &got), CK_ENOENT);
    const json_t *only[] = {r3};
    assert_int_equal(ck__deploy_rollback_find(only, 1, 0, &got), CK_ENOENT); /* no previous */
    json_t *objs[] = {r1, r2, r3};
    fx_decref_all(objs, 3);
}

static void test_rollback_to_template_and_revisions(void **state)
{
    (void)state;
    json_t *r1 = revision_rs("foo-1", "1", "v1", "create");
    json_t *r2 = revision_rs("foo-2", "2", "v2", "edit");
    json_t *d = fx_deployment("foo", 1, NULL, NULL);
    ck__deploy_set_from_rs_template(d, fx_get(r2, "spec.template"));
    fx_annotate(d, CK_DEPLOY_REVISION_ANNOTATION, "2");
    fx_annotate(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "edit");
    fx_annotate(d, CK_DEPLOY_ROLLBACK_TO_ANNOTATION, "1");
    assert_null(fx_get(d, "spec.template.metadata.labels." CK_DEPLOY_HASH_LABEL));

    /* rolling back to the current template is DeploymentRollbackTemplateUnchanged */
    assert_false(ck__deploy_rollback_to_template(d, r2));
    /* to revision 1: its template (without the hash) and its change-cause */
    assert_true(ck__deploy_rollback_to_template(d, r1));
    assert_true(
        ck__deploy_equal_ignore_hash(fx_get(d, "spec.template"), fx_get(r1, "spec.template")));
    assert_null(fx_get(d, "spec.template.metadata.labels." CK_DEPLOY_HASH_LABEL));
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION), "create");
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_REVISION_ANNOTATION), "2");

    /*
     * What the controller does next (and after kubectl's client-side undo alike): the
     * old ReplicaSet is the new one again and takes revision 3, keeping 1 in history.
     */
    const json_t *rss[] = {r1, r2};
    const json_t *new_rs = ck__deploy_find_new_rs(d, rss, 2);
    assert_ptr_equal(new_rs, r1);
    const json_t *old[2], *required[2];
    size_t n_old, n_required;
    ck__deploy_find_old_rss(d, rss, 2, old, &n_old, required, &n_required);
    assert_int_equal(n_old, 1);
    assert_ptr_equal(old[0], r2);
    json_t *updated = ck__deploy_sync_new_rs(d, new_rs, old, n_old);
    assert_non_null(updated);
    assert_string_equal(ck__deploy_annotation(updated, CK_DEPLOY_REVISION_ANNOTATION), "3");
    assert_string_equal(ck__deploy_annotation(updated, CK_DEPLOY_REVISION_HISTORY_ANNOTATION), "1");
    assert_string_equal(ck__deploy_annotation(updated, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION),
                        "create");
    /* the rollback annotation is never copied to a ReplicaSet */
    assert_null(ck__deploy_annotation(updated, CK_DEPLOY_ROLLBACK_TO_ANNOTATION));
    assert_true(ck__deploy_sync_deployment_revision(d, updated, 0));
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_REVISION_ANNOTATION), "3");
    /* synced once more: nothing left to do */
    const json_t *rss2[] = {updated, r2};
    assert_null(ck__deploy_sync_new_rs(d, ck__deploy_find_new_rs(d, rss2, 2), old, n_old));

    json_decref(updated);
    json_t *objs[] = {r1, r2, d};
    fx_decref_all(objs, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollback_revision),
        cmocka_unit_test(test_rollback_find),
        cmocka_unit_test(test_rollback_to_template_and_revisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
