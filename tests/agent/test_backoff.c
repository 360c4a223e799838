/*
 * test_backoff.c - tests for the restart back-off in lib/agent/process.c, on a fake
 * clock (explicit times): the first restart is immediate, then 10 s doubling to 5 min,
 * and the back-off is forgotten after 10 min without a restart, as the kubelet's.
 */
#include "cktest.h"

#include "ckube/agent.h"

static void test_first_restart_is_immediate_then_doubles_to_five_minutes(void **state)
{
    (void)state;
    struct ck_agent_backoff b = {0};
    int64_t t = 1000 * CK_SEC;
    assert_int_equal(ck_agent_backoff_restart_at(&b, t), t);
    ck_agent_backoff_next(&b, t);
    const int64_t want[] = {10, 20, 40, 80, 160, 300, 300, 300};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int64_t finished = t + CK_SEC; /* it crashed a second after starting */
        assert_int_equal(ck_agent_backoff_restart_at(&b, finished) - finished, want[i] * CK_SEC);
        t = ck_agent_backoff_restart_at(&b, finished);
        ck_agent_backoff_next(&b, t);
    }
}

static void test_forgotten_after_ten_minutes_without_restart(void **state)
{
    (void)state;
    struct ck_agent_backoff b = {0};
    int64_t t = 0;
    for (int i = 0; i < 5; i++)
        ck_agent_backoff_next(&b, t += CK_SEC);
    assert_int_equal(b.delay, 160 * CK_SEC);
    /* ran for 10 min and a second: the next crash restarts at once, then 10 s */
    int64_t finished = t + 601 * CK_SEC;
    assert_int_equal(ck_agent_backoff_restart_at(&b, finished), finished);
    ck_agent_backoff_next(&b, finished);
    assert_int_equal(b.delay, 10 * CK_SEC);
    /* exactly 10 min is still remembered */
    ck_agent_backoff_next(&b, finished + 600 * CK_SEC);
    assert_int_equal(b.delay, 20 * CK_SEC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_restart_is_immediate_then_doubles_to_five_minutes),
        cmocka_unit_test(test_forgotten_after_ten_minutes_without_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
