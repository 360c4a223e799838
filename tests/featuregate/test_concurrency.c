/*
 * test_concurrency.c - Q1 threading: readers calling ck_fg_enabled() and
 * ck_fg_enabled_many() while a writer sets see the whole old or the whole new
 * snapshot. The writer always
 * sets A and B to the same value in one call; a reader that ever saw them
 * differ would have seen a mix. Runs under ThreadSanitizer too (label
 * concurrency).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "fgtest.h"

#define READERS 2
#define SETS    20000

struct shared {
    struct ck_fg_gate *g;
    ck_fg_feature_t a, b;
    atomic_bool done;
};

struct reader {
    struct shared *sh;
    long mixed, on, off;
};

static void *read_loop(void *arg)
{
    struct reader *r = arg;
    while (!atomic_load(&r->sh->done)) {
        ck_fg_feature_t fs[2] = {r->sh->a, r->sh->b};
        bool v[2];
        ck_fg_enabled_many(r->sh->g, fs, 2, v);
        if (v[0] != v[1])
            r->mixed++;                             /* one snapshot with A != B: a torn publish */
        bool a = ck_fg_enabled(r->sh->g, r->sh->a); /* the single-read hot path too */
        if (a)
            r->on++;
        else
            r->off++;
    }
    return NULL;
}

static void test_Q1_readers_see_whole_snapshots(void **state)
{
    (void)state;
    struct shared sh = {0};
    sh.g = ck_fg_gate_new(V(1, 30));
    assert_int_equal(ck_fg_add(sh.g, "A", SPEC(0, 0, false, false, ALPHA), &sh.a, NULL), 0);
    assert_int_equal(ck_fg_add(sh.g, "B", SPEC(0, 0, false, false, ALPHA), &sh.b, NULL), 0);
    struct reader rd[READERS] = {0};
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++) {
        rd[i].sh = &sh;
        assert_int_equal(pthread_create(&th[i], NULL, read_loop, &rd[i]), 0);
    }
    for (int i = 0; i < SETS; i++)
        assert_int_equal(ck_fg_set(sh.g, i % 2 ? "A=false,B=false" : "A=true,B=true", NULL), 0);
    atomic_store(&sh.done, true);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(rd[i].mixed, 0);
    }
    /* The last set (SETS is even, so index SETS-1 is odd) left both off. */
    assert_false(ck_fg_enabled(sh.g, sh.a));
    assert_false(ck_fg_enabled(sh.g, sh.b));
    ck_fg_gate_free(sh.g);
}

/*
 * Q1, V6: readers keep reading while the writer registers new features (a
 * new table is published each time) and moves the emulation version back
 * and forth across a version where A and B both change default. Every read
 * sees A and B agree, and handles stay valid as the gate grows.
 */
static void test_Q1_V6_readers_during_registration_and_emulation(void **state)
{
    (void)state;
    struct shared sh = {0};
    sh.g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_spec s[] = {SPEC(1, 29, false, false, ALPHA), SPEC(1, 30, true, false, BETA)};
    assert_int_equal(ck_fg_add_versioned(sh.g, "A", s, 2, &sh.a, NULL), 0);
    assert_int_equal(ck_fg_add_versioned(sh.g, "B", s, 2, &sh.b, NULL), 0);
    struct reader rd[READERS] = {0};
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++) {
        rd[i].sh = &sh;
        assert_int_equal(pthread_create(&th[i], NULL, read_loop, &rd[i]), 0);
    }
    struct ck_fg_err err = {0};
    for (int i = 0; i < 400; i++) {
        char name[32];
        snprintf(name, sizeof(name), "Extra%03d", i);
        assert_int_equal(ck_fg_add(sh.g, name, SPEC(0, 0, i % 2, false, BETA), NULL, &err), 0);
        assert_int_equal(ck_fg_set_emulation_version(sh.g, V(1, 29 + (unsigned)(i % 2)), &err), 0);
    }
    atomic_store(&sh.done, true);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(rd[i].mixed, 0);
    }
    assert_int_equal(ck_fg_count(sh.g), 404);
    assert_true(ck_fg_enabled(sh.g, sh.a)); /* i = 399 left 1.30: Beta, on */
    ck_fg_gate_free(sh.g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_Q1_readers_see_whole_snapshots),
        cmocka_unit_test(test_Q1_V6_readers_during_registration_and_emulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
