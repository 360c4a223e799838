/*
 * test_memo.c - tests for lib/api/memo.c, the walks' per-thread memo of answers about
 * the schema nodes a set owns: an answer is found again for its own set's serial and node only (a
 * set made where a freed one was has another serial), a slot taken by a newer answer
 * no longer answers for the older key, and each thread has tables of its own.
 */
#include "cktest.h"

#include <pthread.h>

#include "../../lib/api/internal.h"

static const int nodes[4];

static void fill(enum ck__memo_question q, uint64_t serial, const void *node, const void *value)
{
    bool hit = true;
    struct ck__memo_slot *slot = ck__memo_find(q, serial, node, &hit);
    assert_non_null(slot);
    assert_false(hit);
    *slot = (struct ck__memo_slot){serial, node, {value, NULL}, 7};
}

static bool found(enum ck__memo_question q, uint64_t serial, const void *node, const void *value)
{
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(q, serial, node, &hit);
    return hit && slot->value[0] == value && slot->tag == 7;
}

static void test_an_answer_is_kept_for_its_key(void **state)
{
    (void)state;
    fill(CK__MEMO_SHAPE, 5, &nodes[0], &nodes[1]);
    assert_true(found(CK__MEMO_SHAPE, 5, &nodes[0], &nodes[1]));
    /* the same address in another set (a newer one where a freed one was), in the same slot */
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, 5, &nodes[0], &hit);
    uint64_t other = 6;
    while (ck__memo_find(CK__MEMO_SHAPE, other, &nodes[0], &hit) != slot)
        other++;
    assert_false(found(CK__MEMO_SHAPE, other, &nodes[0], &nodes[1]));
    assert_true(found(CK__MEMO_SHAPE, 5, &nodes[0], &nodes[1]));
    assert_false(found(CK__MEMO_SHAPE, 5, &nodes[2], &nodes[1]));
}

static void test_a_newer_answer_takes_the_slot(void **state)
{
    (void)state;
    /* find another node that lands in the same slot, then take the slot with it */
    static char many[CK__MEMO_SLOTS * 64];
    bool hit = false;
    struct ck__memo_slot *first = ck__memo_find(CK__MEMO_SHAPE, 9, &many[0], &hit);
    *first = (struct ck__memo_slot){9, &many[0], {&nodes[0], NULL}, 7};
    const void *other = NULL;
    for (size_t i = 16; i < sizeof(many) && !other; i += 16)
        if (ck__memo_find(CK__MEMO_SHAPE, 9, &many[i], &hit) == first)
            other = &many[i];
    assert_non_null(other);
    fill(CK__MEMO_SHAPE, 9, other, &nodes[3]);
    assert_true(found(CK__MEMO_SHAPE, 9, other, &nodes[3]));
    assert_false(found(CK__MEMO_SHAPE, 9, &many[0], &nodes[0]));
}

static void *other_thread(void *arg)
{
    (void)arg;
    bool seen = found(CK__MEMO_SHAPE, 11, &nodes[3], &nodes[2]);
    return seen ? (void *)1 : NULL;
}

static void test_each_thread_has_its_own(void **state)
{
    (void)state;
    fill(CK__MEMO_SHAPE, 11, &nodes[3], &nodes[2]);
    pthread_t t;
    void *seen = (void *)1;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &seen), 0);
    assert_null(seen);
    assert_true(found(CK__MEMO_SHAPE, 11, &nodes[3], &nodes[2]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_answer_is_kept_for_its_key),
        cmocka_unit_test(test_a_newer_answer_takes_the_slot),
        cmocka_unit_test(test_each_thread_has_its_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
