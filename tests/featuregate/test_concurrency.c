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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_Q1_readers_see_whole_snapshots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
