/*
 * test_cron.c - cron schedules (lib/controllers/cronjob/cron.c) as robfig/cron's
 * ParseStandard reads them for Kubernetes: fields, ranges, steps, names, descriptors,
 * the day-of-month/day-of-week rule, CRON_TZ and spec.timeZone through the system zone
 * database, and robfig's error words.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/cronjob.h"

/* 2026-01-01T00:00:00Z, a Thursday */
#define T0 INT64_C(1767225600)

static int64_t next_of(const char *spec, const char *zone, int64_t after)
{
    struct ck_cron_schedule *s = NULL;
    struct ck_err err = {0};
    if (ck_cron_parse(spec, zone, &s, &err) != 0)
        fail_msg("%s: %s", spec, err.msg);
    int64_t t = ck_cron_next(s, after);
    ck_cron_free(s);
    return t;
}

static void test_next_times(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *zone;
        int64_t after, want;
    } cases[] = {
        {"* * * * *", NULL, T0, T0 + 60},
        {"* * * * *", NULL, T0 - 1, T0},
        {"*/15 * * * *", NULL, T0 + 1, T0 + 15 * 60},
        {"5 * * * *", NULL, T0, T0 + 5 * 60},
        {"0 3 * * *", NULL, T0, T0 + 3 * 3600},
        {"@hourly", NULL, T0, T0 + 3600},
        {"@daily", NULL, T0, T0 + 86400},
        {"@midnight", NULL, T0 + 5, T0 + 86400},
        {"@weekly", NULL, T0, T0 + 3 * 86400}, /* Sunday 4 January */
        {"0 0 * * SUN", NULL, T0, T0 + 3 * 86400},
        {"0 0 * * mon-fri", NULL, T0, T0 + 86400}, /* Friday */
        {"0 0 1 * *", NULL, T0, T0 + 31 * 86400},  /* 1 February */
        {"@monthly", NULL, T0, T0 + 31 * 86400},
        {"0 0 1 FEB *", NULL, T0, T0 + 31 * 86400},
        {"0 0 1 1 *", NULL, T0, INT64_C(1798761600)}, /* 2027-01-01 */
        {"@yearly", NULL, T0, INT64_C(1798761600)},
        {"0 0 13 * 5", NULL, T0, T0 + 86400}, /* a Friday OR the 13th */
        {"0 0 13 * *", NULL, T0, T0 + 12 * 86400},
        {"0-10/5 * * * *", NULL, T0 + 1, T0 + 5 * 60},
        {"10/20 * * * *", NULL, T0, T0 + 10 * 60},
        {"0 0 29 2 *", NULL, T0, INT64_C(1835395200)}, /* 2028-02-29 */
        /* 09:00 in Paris is 08:00 UTC in winter */
        {"0 9 * * *", "Europe/Paris", T0, T0 + 8 * 3600},
        {"CRON_TZ=Asia/Tokyo 0 9 * * *", NULL, T0, T0 + 86400},
        {"TZ=America/New_York 0 0 * * *", NULL, T0, T0 + 5 * 3600},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = next_of(cases[i].spec, cases[i].zone, cases[i].after);
        if (got != cases[i].want)
            fail_msg("%s (%s) after %lld: got %lld, want %lld", cases[i].spec,
                     cases[i].zone ? cases[i].zone : "UTC", (long long)cases[i].after,
                     (long long)got, (long long)cases[i].want);
    }
}

static void test_errors_in_robfig_words(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *zone, *want;
    } cases[] = {
        {"", NULL, "empty spec string"},
        {"* * * *", NULL, "expected exactly 5 fields, found 4: * * * *"},
        {"* * * * * *", NULL, "expected exactly 5 fields, found 6: * * * * * *"},
        {"60 * * * *", NULL, "end of range (60) above maximum (59): 60"},
        {"* * 0 * *", NULL, "beginning of range (0) below minimum (1): 0"},
        {"5-1 * * * *", NULL, "beginning of range (5) beyond end of range (1): 5-1"},
        {"*/0 * * * *", NULL, "step of range should be a positive number: */0"},
        {"1-2-3 * * * *", NULL, "too many hyphens: 1-2-3"},
        {"*/2/3 * * * *", NULL, "too many slashes: */2/3"},
        {"x * * * *", NULL, "failed to parse int from x"},
        {"@fortnightly", NULL, "unrecognized descriptor: @fortnightly"},
        {"* * * * *", "Mars/Olympus",
         "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"},
        {"CRON_TZ=../etc/passwd * * * * *", NULL,
         "provided bad location ../etc/passwd: unknown time zone ../etc/passwd"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_cron_schedule *s = NULL;
        struct ck_err err = {0};
        int r = ck_cron_parse(cases[i].spec, cases[i].zone, &s, &err);
        if (r != CK_EINVAL || strcmp(err.msg, cases[i].want) != 0)
            fail_msg("\"%s\": got %d \"%s\", want \"%s\"", cases[i].spec, r, err.msg,
                     cases[i].want);
        assert_null(s);
    }
}

static void test_a_day_of_minutes(void **state)
{
    (void)state;
    struct ck_cron_schedule *s = NULL;
    assert_int_equal(ck_cron_parse("* * * * *", "Europe/Paris", &s, NULL), 0);
    int64_t t = T0 - 1;
    for (int i = 0; i < 1440; i++) {
        int64_t n = ck_cron_next(s, t);
        assert_int_equal(n, T0 + 60 * i);
        t = n;
    }
    ck_cron_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_times),
        cmocka_unit_test(test_errors_in_robfig_words),
        cmocka_unit_test(test_a_day_of_minutes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
