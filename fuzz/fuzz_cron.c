/*
 * fuzz_cron.c - libFuzzer target for the cron schedule parser (CronJob schedules).
 *
 * The first byte picks a time zone (none, or one of a few with daylight saving), the
 * rest is the schedule. Any input must parse or fail cleanly with words; a parsed
 * schedule's next time after a fixed instant must be later than it, and the next one
 * after that later again (or none within five years), and it must fall on a whole minute.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cronjob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const zones[] = {NULL, "UTC", "Europe/Paris", "America/New_York",
                                        "Australia/Lord_Howe"};
    if (size == 0)
        return 0;
    const char *zone = zones[data[0] % (sizeof(zones) / sizeof(zones[0]))];
    char *spec = strndup((const char *)data + 1, size - 1);
    if (!spec)
        return 0;
    struct ck_cron_schedule *s = NULL;
    struct ck_err err = {0};
    int r = ck_cron_parse(spec, zone, &s, &err);
    if (r == 0) {
        const int64_t t0 = INT64_C(1767225600);
        int64_t a = ck_cron_next(s, t0);
        if (a && (a <= t0 || a % 60 != 0))
            abort();
        int64_t b = a ? ck_cron_next(s, a) : 0;
        if (b && b <= a)
            abort();
        ck_cron_free(s);
    } else if (r != CK_EINVAL || !err.msg[0]) {
        if (r != CK_ENOMEM)
            abort(); /* a refusal says why */
    }
    free(spec);
    return 0;
}
