/*
 * test_upgrade.c - lib/featuregate/upgrade.c: the pre-upgrade check.
 *
 * A table of cases on two small hand-written lists (data/upgrade/old.yaml at
 * 1.33, new.yaml at 1.34), one per reason: Removed, Unknown, Locked at the
 * target only, Invalid (flag and config), DefaultChanged (a default flip, a
 * bulk setting that stops applying, a new gate on by default), Deprecated,
 * GA and WillBeRemoved warnings; then a downgrade, a multi-minor step,
 * several config files under a flag, pre-1.33 lists, errors and the JSON.
 * Each case names the findings it expects, exactly; anything else fails.
 */
#include <unistd.h>

#include "cktest.h"

#include "fgtest.h"

#define UP FG_DATA "/upgrade/"
#define CFG(p)                                                                                     \
    {                                                                                              \
        true, UP p                                                                                 \
    }
#define FLAG(s)                                                                                    \
    {                                                                                              \
        false, s                                                                                   \
    }
#define MAXF 8

/* One expected finding: "B Gate Reason source" style, message substring. */
struct want {
    char kind; /* 'B' blocking, 'C' change, 'W' warning */
    const char *gate, *reason, *source, *msg;
    bool from, to; /* changes only */
};

struct ucase {
    const char *name;
    const char *old_list, *new_list;
    unsigned from, to; /* minors of 1.x */
    struct ck_fg_upgrade_source src[4];
    size_t nsrc;
    struct want w[MAXF];
};

static const struct ucase cases[] = {
    {"removed: set in the old list, gone from the new",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Gone=true")},
     1,
     {{'B', "Gone", "Removed", "--feature-gates", "unrecognized feature gate: Gone (1.33 knows it",
       false, false},
      {'C', "Flip", "DefaultChanged", "default", "off at 1.33", false, true},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"unknown: in neither list",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Flip=false,Nonesuch=true")},
     1,
     {{'B', "Nonesuch", "Unknown", "--feature-gates", "unrecognized feature gate: Nonesuch", false,
       false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"locked at the target but not before",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Lock=false,Flip=false")},
     1,
     {{'B', "Lock", "Locked", "--feature-gates",
       "cannot set feature gate Lock to false, feature is locked to true (locked since 1.34)",
       false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"locked gate set to its locked value is fine",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Lock=true,Flip=false")},
     1,
     {{'W', "Lock", "WillBeRemoved", "--feature-gates",
       "locked to true since 1.34, it may be removed in 1.37; 1.36 is the last minor", false,
       false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"invalid flag piece and invalid config value",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Flip=false,Quiet=maybe"), CFG("kubelet-bad.yaml")},
     2,
     {{'B', "Quiet", "Invalid", "--feature-gates",
       "invalid value of Quiet=maybe, err: strconv.ParseBool: parsing \"maybe\"", false, false},
      {'B', "Quiet", "Invalid", UP "kubelet-bad.yaml", "invalid value for Quiet", false, false},
      {'W', "Ripe", "GA", UP "kubelet-bad.yaml",
       "setting GA feature gate Ripe=true. It will be removed in a future release.", false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"a bulk setting that stops applying once the gate leaves Beta",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("AllBeta=false")},
     1,
     {{'C', "Graduate", "DefaultChanged", "--feature-gates", "AllBeta=false applies", false, true},
      {'C', "Lock", "DefaultChanged", "--feature-gates", "on at 1.34 (GA, locked to true)", false,
       true}}},
    {"a default flip",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Quiet=false")},
     1,
     {{'C', "Flip", "DefaultChanged", "default",
       "off at 1.33 (Beta, default false), on at 1.34 (Beta, default true)", false, true},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33; on at 1.34 (Beta, default true)",
       false, true}}},
    {"deprecated and GA warnings",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Old=true,Ripe=true,Flip=false")},
     1,
     {{'W', "Old", "Deprecated", "--feature-gates",
       "setting deprecated feature gate Old=true. It will be removed in a future release.", false,
       false},
      {'W', "Ripe", "GA", "--feature-gates", "setting GA feature gate Ripe=true", false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"a gate new at the target, set already: its value changes",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {FLAG("Fresh=true,Flip=false")},
     1,
     {{'C', "Fresh", "DefaultChanged", "--feature-gates", "new after 1.33", false, true},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"downgrade: a gate only the newer release knows",
     UP "new.yaml",
     UP "old.yaml",
     34,
     33,
     {FLAG("Fresh=false,Lock=true")},
     1,
     {{'B', "Fresh", "Removed", "--feature-gates", "(1.34 knows it: Alpha, default false)", false,
       false},
      {'C', "Flip", "DefaultChanged", "default", "on at 1.34", true, false}}},
    {"several config files, the flag wins",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {CFG("kubelet-a.yaml"), FLAG("Flip=false,Lock=true"), CFG("kubelet-b.yaml")},
     3,
     {{'B', "Gone", "Removed", UP "kubelet-a.yaml", "unrecognized feature gate: Gone", false,
       false},
      {'W', "Lock", "WillBeRemoved", "--feature-gates", "Lock=true", false, false},
      {'W', "Old", "Deprecated", UP "kubelet-b.yaml", "Old=false", false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"the later config file wins over the earlier",
     UP "old.yaml",
     UP "new.yaml",
     33,
     34,
     {CFG("kubelet-b.yaml"), CFG("kubelet-a.yaml")},
     2,
     {{'B', "Gone", "Removed", UP "kubelet-a.yaml", "unrecognized feature gate: Gone", false,
       false},
      {'B', "Lock", "Locked", UP "kubelet-a.yaml", "feature is locked to true", false, false},
      {'W', "Old", "Deprecated", UP "kubelet-a.yaml", "Old=true", false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.33", false, true}}},
    {"two minors at once",
     UP "old.yaml",
     UP "new.yaml",
     32,
     34,
     {FLAG("Flip=false,Sealed=true")},
     1,
     {{'W', "Sealed", "WillBeRemoved", "--feature-gates",
       "locked to true since 1.32, it may be removed in 1.35; 1.34 is the last minor", false,
       false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.32", false, true}}},
    {"pre-1.33 list: a gate first Deprecated at 1.31 loads at 1.32",
     UP "legacy.yaml",
     UP "new.yaml",
     32,
     34,
     {FLAG("Withdrawn=false,Flip=false")},
     1,
     {{'B', "Withdrawn", "Removed", "--feature-gates", "(1.32 knows it: Deprecated", false, false},
      {'C', "NewOn", "DefaultChanged", "default", "new after 1.32", false, true}}},
};

static const struct ck_fg_upgrade_finding *kind_array(const struct ck_fg_upgrade_report *r,
                                                      char kind, size_t *n)
{
    *n = kind == 'B' ? r->nblocking : kind == 'C' ? r->nchanges : r->nwarnings;
    return kind == 'B' ? r->blocking : kind == 'C' ? r->changes : r->warnings;
}

static bool matches(const struct ck_fg_upgrade_finding *f, const struct want *w)
{
    return !strcmp(f->gate, w->gate) && !strcmp(f->reason, w->reason) &&
           !strcmp(f->source, w->source) && strstr(f->message, w->msg) &&
           (w->kind != 'C' || (f->from == w->from && f->to == w->to));
}

static void dump(const struct ck_fg_upgrade_report *r)
{
    char *t = ck_fg_upgrade_text(r);
    print_message("%s", t ? t : "(no text)\n");
    free(t);
}

static void test_upgrade_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct ucase *c = &cases[i];
        struct ck_fg_upgrade_report *r = NULL;
        struct ck_fg_err err = {0};
        if (ck_fg_upgrade_check(c->old_list, c->new_list, V(1, c->from), V(1, c->to), c->src,
                                c->nsrc, &r, &err) != 0)
            fail_msg("%s: %s", c->name, err.msg);
        size_t want[3] = {0}, have[3];
        for (size_t k = 0; k < MAXF && c->w[k].kind; k++) {
            const struct want *w = &c->w[k];
            size_t n;
            const struct ck_fg_upgrade_finding *a = kind_array(r, w->kind, &n);
            bool found = false;
            for (size_t j = 0; j < n && !found; j++)
                found = matches(&a[j], w);
            if (!found) {
                dump(r);
                fail_msg("%s: no %c finding %s %s from %s with \"%s\"", c->name, w->kind, w->gate,
                         w->reason, w->source, w->msg);
            }
            want[w->kind == 'B' ? 0 : w->kind == 'C' ? 1 : 2]++;
        }
        kind_array(r, 'B', &have[0]);
        kind_array(r, 'C', &have[1]);
        kind_array(r, 'W', &have[2]);
        if (memcmp(want, have, sizeof(want)) != 0) {
            dump(r);
            fail_msg("%s: %zu/%zu/%zu findings, want %zu/%zu/%zu", c->name, have[0], have[1],
                     have[2], want[0], want[1], want[2]);
        }
        assert_int_equal(r->minors, c->from > c->to ? c->from - c->to : c->to - c->from);
        ck_fg_upgrade_report_free(r);
    }
}

/* Runs the check on old.yaml at 1.from and new.yaml at 1.to (swapped when down). */
static struct ck_fg_upgrade_report *check(const char *flags, unsigned from, unsigned to)
{
    struct ck_fg_upgrade_source src[] = {FLAG(flags)};
    struct ck_fg_upgrade_report *r = NULL;
    struct ck_fg_err err = {0};
    const char *o = from <= to ? UP "old.yaml" : UP "new.yaml";
    const char *n = from <= to ? UP "new.yaml" : UP "old.yaml";
    if (ck_fg_upgrade_check(o, n, V(1, from), V(1, to), src, flags ? 1 : 0, &r, &err) != 0)
        fail_msg("check %s: %s", flags ? flags : "(none)", err.msg);
    return r;
}

/* Each array is sorted by gate name, whatever order the settings came in. */
static void test_upgrade_sorted(void **state)
{
    (void)state;
    struct ck_fg_upgrade_report *r = check("Zed=true,Gone=true,Abc=true,Lock=false", 33, 34);
    assert_int_equal(r->nblocking, 4);
    const char *order[] = {"Abc", "Gone", "Lock", "Zed"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(r->blocking[i].gate, order[i]);
    for (size_t i = 1; i < r->nchanges; i++)
        assert_true(strcmp(r->changes[i - 1].gate, r->changes[i].gate) <= 0);
    ck_fg_upgrade_report_free(r);
}

/* The JSON is exactly the documented shape, keys in order. */
static void test_upgrade_json(void **state)
{
    (void)state;
    struct ck_fg_upgrade_report *r = check("Gone=true,Old=false,Flip=false", 33, 34);
    char *j = ck_fg_upgrade_json(r);
    assert_non_null(j);
    assert_string_equal(
        j,
        "{\"from\":\"1.33\",\"to\":\"1.34\",\"blocking\":[{\"gate\":\"Gone\",\"reason\":"
        "\"Removed\",\"message\":\"unrecognized feature gate: Gone (1.33 knows it: Alpha, "
        "default false)\",\"source\":\"--feature-gates\"}],\"changes\":[{\"gate\":\"NewOn\","
        "\"reason\":\"DefaultChanged\",\"message\":\"new after 1.33; on at 1.34 (Beta, default "
        "true)\",\"source\":\"default\",\"from\":false,\"to\":true}],\"warnings\":[{\"gate\":"
        "\"Old\",\"reason\":\"Deprecated\",\"message\":\"setting deprecated feature gate "
        "Old=false. It will be removed in a future release.\",\"source\":\"--feature-gates\"}]}");
    free(j);
    char *t = ck_fg_upgrade_text(r);
    assert_non_null(strstr(t, "upgrade 1.33 -> 1.34"));
    assert_null(strstr(t, "Note:"));
    assert_non_null(strstr(t, "1 blocking, 1 changes, 1 warnings"));
    free(t);
    ck_fg_upgrade_report_free(r);
}

/* The text says when the step is more than one minor, and names a downgrade. */
static void test_upgrade_text_steps(void **state)
{
    (void)state;
    struct ck_fg_upgrade_report *r = check(NULL, 31, 34);
    assert_int_equal(r->minors, 3);
    char *t = ck_fg_upgrade_text(r);
    assert_non_null(strstr(t, "Note: this step crosses several minor versions"));
    assert_non_null(strstr(t, "Blocking (the component will not start at 1.34): none"));
    free(t);
    ck_fg_upgrade_report_free(r);
    r = check(NULL, 34, 33);
    t = ck_fg_upgrade_text(r);
    assert_non_null(strstr(t, "downgrade 1.34 -> 1.33"));
    free(t);
    ck_fg_upgrade_report_free(r);
}

/* Unreadable input is an error, not a finding; *ret stays untouched. */
static void test_upgrade_errors(void **state)
{
    (void)state;
    struct ck_fg_upgrade_report *r = (void *)&r;
    struct ck_fg_err err = {0};
    struct ck_fg_upgrade_source missing[] = {CFG("no-such.yaml")};
    struct ck_fg_upgrade_source malformed[] = {{true, FG_DATA "/config-malformed.yaml"}};

    assert_int_equal(
        ck_fg_upgrade_check(UP "nope.yaml", UP "new.yaml", V(1, 33), V(1, 34), NULL, 0, &r, &err),
        CK_FG_ENOENT);
    assert_non_null(strstr(err.msg, "nope.yaml"));
    assert_int_equal(
        ck_fg_upgrade_check(UP "old.yaml", UP "new.yaml", V(1, 33), V(1, 34), missing, 1, &r, &err),
        CK_FG_ENOENT);
    assert_non_null(strstr(err.msg, "no-such.yaml"));
    assert_int_equal(ck_fg_upgrade_check(UP "old.yaml", UP "new.yaml", V(1, 33), V(1, 34),
                                         malformed, 1, &r, &err),
                     CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "config-malformed.yaml"));
    /* From 1.33 on a list is registered with every rule: the 1.32-style list fails. */
    assert_int_equal(
        ck_fg_upgrade_check(UP "legacy.yaml", UP "new.yaml", V(1, 33), V(1, 34), NULL, 0, &r, &err),
        CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "introduced as deprecated must provide a 1.0 entry"));
    assert_ptr_equal(r, (void *)&r);
}

/* Writes an empty file dir/name. */
static void touch(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void unlink_in(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    unlink(p);
}

/* A new scratch directory under $TMPDIR (/tmp without it), as the other tests make theirs. */
static char *lists_dir(char *dir, size_t size)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, size, "%s/ckube-fg-lists-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(dir);
}

/*
 * The shipped lists are found per version in the first directory that has
 * one; a missing one names the versions of the first directory that ships
 * any, or "none". A scratch directory stands for the install: the lists
 * ckube ships are not assumed here.
 */
static void test_upgrade_find_list(void **state)
{
    (void)state;
    char a[200], b[200];
    assert_non_null(lists_dir(a, sizeof(a)));
    assert_non_null(lists_dir(b, sizeof(b)));
    touch(a, "1.34.yaml");
    touch(a, "1.33.yaml");
    touch(a, "notes.yaml");
    touch(b, "1.32.yaml");
    touch(b, "1.34.yaml");
    const char *dirs[] = {NULL, FG_DATA "/nowhere", a, b};
    char *p = NULL, want[256];
    struct ck_fg_err err = {0};

    assert_int_equal(ck_fg_upgrade_find_list(dirs, 4, V(1, 34), &p, &err), 0);
    snprintf(want, sizeof(want), "%s/1.34.yaml", a);
    assert_string_equal(p, want);
    free(p);
    assert_int_equal(ck_fg_upgrade_find_list(dirs, 4, V(1, 32), &p, &err), 0);
    snprintf(want, sizeof(want), "%s/1.32.yaml", b);
    assert_string_equal(p, want);
    free(p);
    p = NULL;
    assert_int_equal(ck_fg_upgrade_find_list(dirs, 4, V(1, 20), &p, &err), CK_FG_ENOENT);
    assert_null(p);
    assert_non_null(strstr(err.msg, "no shipped Kubernetes feature list for 1.20 (shipped: 1.33, "
                                    "1.34); pass the list of that version with --previous or "
                                    "--features"));
    /* Directories that ship nothing: "none". */
    const char *empty[] = {FG_DATA "/nowhere", FG_DATA};
    assert_int_equal(ck_fg_upgrade_find_list(empty, 2, V(1, 32), &p, &err), CK_FG_ENOENT);
    assert_non_null(strstr(err.msg, "no shipped Kubernetes feature list for 1.32 (shipped: none)"));

    unlink_in(a, "1.34.yaml");
    unlink_in(a, "1.33.yaml");
    unlink_in(a, "notes.yaml");
    unlink_in(b, "1.32.yaml");
    unlink_in(b, "1.34.yaml");
    rmdir(a);
    rmdir(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upgrade_table),  cmocka_unit_test(test_upgrade_sorted),
        cmocka_unit_test(test_upgrade_json),   cmocka_unit_test(test_upgrade_text_steps),
        cmocka_unit_test(test_upgrade_errors), cmocka_unit_test(test_upgrade_find_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
