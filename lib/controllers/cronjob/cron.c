/*
 * cron.c - cron schedules as CronJobs write them: Kubernetes parses them with
 * github.com/robfig/cron/v3's ParseStandard, and this follows its rules.
 *
 * A schedule is five fields, minute (0-59), hour (0-23), day of month (1-31), month
 * (1-12 or JAN-DEC) and day of week (0-6 or SUN-SAT), each "*" (or "?"), a number, a
 * range a-b, a list of those separated by commas, any of them with a step "/n" ("a/n"
 * runs from a to the field's maximum); or a descriptor: @yearly (@annually), @monthly,
 * @weekly, @daily (@midnight), @hourly. When both day fields are restricted, a day
 * matches when either does; when one is "*", both must. A leading "CRON_TZ=<zone> " or
 * "TZ=<zone> " names the zone; otherwise spec.timeZone does; otherwise UTC.
 *
 * Times are computed as robfig's Schedule.Next does, field by field on the wall clock
 * of the zone: the wall clock is plain arithmetic over seconds (timegm/gmtime_r), and the
 * zone's offset at an instant comes from the system zone database through the C
 * library: TZ is switched under a process-wide mutex around localtime_r() (nothing else
 * in ckube reads the process's local time zone). A zone the database lacks is an error,
 * where the C library would silently use UTC.
 *
 * Threading: a parsed schedule is immutable; ck_cron_next() may run on any thread.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckube/cronjob.h"
#include "ckube/internal/util.h"

struct ck_cron_schedule {
    uint64_t minute, hour, dom, month, dow;
    char zone[128]; /* "" for UTC */
};

#define STAR_BIT (UINT64_C(1) << 63) /* the field was "*" or "?" */

struct field_bounds {
    int min, max;
    const char *const *names; /* index = value, NULL-terminated; or NULL */
};

static const char *const month_names[] = {"",    "jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const struct field_bounds bounds[5] = {
    {0, 59, NULL}, {0, 23, NULL}, {1, 31, NULL}, {1, 12, month_names}, {0, 6, dow_names},
};

/* A number or a name of the field; 0 or CK_EINVAL with words. */
static int parse_value(const char *s, size_t len, const struct field_bounds *b, int *ret,
                       struct ck_err *reterr)
{
    if (b->names) {
        for (int i = 0; b->names[i]; i++)
            if (b->names[i][0] && strlen(b->names[i]) == len &&
                strncasecmp(s, b->names[i], len) == 0) {
                *ret = i;
                return 0;
            }
    }
    if (len == 0 || len > 9)
        return ck_err_set(reterr, CK_EINVAL, "failed to parse int from %.*s", (int)len, s);
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return ck_err_set(reterr, CK_EINVAL, "failed to parse int from %.*s", (int)len, s);
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return 0;
}

/* One comma-separated part: "*", "?", "a", "a-b", each with an optional "/step". */
static int parse_range(const char *s, size_t len, const struct field_bounds *b, uint64_t *bits,
                       struct ck_err *reterr)
{
    const char *slash = memchr(s, '/', len);
    size_t range_len = slash ? (size_t)(slash - s) : len;
    if (slash && memchr(slash + 1, '/', len - range_len - 1))
        return ck_err_set(reterr, CK_EINVAL, "too many slashes: %.*s", (int)len, s);
    int start, end, step = 1;
    bool star = false;
    if ((range_len == 1 && (s[0] == '*' || s[0] == '?'))) {
        start = b->min;
        end = b->max;
        star = true;
    } else {
        const char *dash = memchr(s, '-', range_len);
        if (dash && memchr(dash + 1, '-', range_len - (size_t)(dash - s) - 1))
            return ck_err_set(reterr, CK_EINVAL, "too many hyphens: %.*s", (int)len, s);
        size_t first_len = dash ? (size_t)(dash - s) : range_len;
        if (parse_value(s, first_len, b, &start, reterr) < 0)
            return CK_EINVAL;
        if (dash) {
            if (parse_value(dash + 1, range_len - first_len - 1, b, &end, reterr) < 0)
                return CK_EINVAL;
        } else {
            end = slash ? b->max : start;
        }
    }
    if (slash) {
        if (parse_value(slash + 1, len - range_len - 1, &bounds[0], &step, reterr) < 0)
            return CK_EINVAL;
        if (step <= 0)
            return ck_err_set(reterr, CK_EINVAL, "step of range should be a positive number: %.*s",
                              (int)len, s);
        if (step > 1)
            star = false;
    }
    if (start < b->min)
        return ck_err_set(reterr, CK_EINVAL, "beginning of range (%d) below minimum (%d): %.*s",
                          start, b->min, (int)len, s);
    if (end > b->max)
        return ck_err_set(reterr, CK_EINVAL, "end of range (%d) above maximum (%d): %.*s", end,
                          b->max, (int)len, s);
    if (start > end)
        return ck_err_set(reterr, CK_EINVAL,
                          "beginning of range (%d) beyond end of range (%d): %.*s", start, end,
                          (int)len, s);
    for (int v = start; v <= end; v += step)
        *bits |= UINT64_C(1) << v;
    if (star)
        *bits |= STAR_BIT;
    return 0;
}

static int parse_field(const char *s, size_t len, const struct field_bounds *b, uint64_t *bits,
                       struct ck_err *reterr)
{
    *bits = 0;
    while (len > 0) {
        const char *comma = memchr(s, ',', len);
        size_t part = comma ? (size_t)(comma - s) : len;
        if (parse_range(s, part, b, bits, reterr) < 0)
            return CK_EINVAL;
        if (!comma)
            break;
        s = comma + 1;
        len -= part + 1;
    }
    return 0;
}

bool ck_cron_zone_known(const char *zone)
{
    if (!zone || !*zone || strcmp(zone, "UTC") == 0 || strcmp(zone, "Local") == 0)
        return zone != NULL;
    if (zone[0] == '/' || strstr(zone, "..") || strlen(zone) > 100)
        return false;
    char path[160];
    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", zone);
    return access(path, R_OK) == 0;
}

static const struct {
    const char *name;
    const char *spec;
} descriptors[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

int ck_cron_parse(const char *spec, const char *time_zone, struct ck_cron_schedule **ret,
                  struct ck_err *reterr)
{
    if (!spec)
        return ck_err_set(reterr, CK_EINVAL, "empty spec string");
    while (isspace((unsigned char)*spec))
        spec++;
    struct ck_cron_schedule *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const char *zone = time_zone && strcmp(time_zone, "UTC") != 0 ? time_zone : "";
    size_t zone_len = strlen(zone);
    if (strncmp(spec, "CRON_TZ=", 8) == 0 || strncmp(spec, "TZ=", 3) == 0) {
        const char *z = strchr(spec, '=') + 1;
        const char *end = z;
        while (*end && !isspace((unsigned char)*end))
            end++;
        zone = z;
        zone_len = (size_t)(end - z);
        spec = end;
        while (isspace((unsigned char)*spec))
            spec++;
    }
    if (zone_len >= sizeof(s->zone)) {
        free(s);
        return ck_err_set(reterr, CK_EINVAL, "provided bad location %.*s", (int)zone_len, zone);
    }
    memcpy(s->zone, zone, zone_len);
    s->zone[zone_len] = '\0';
    if (strcmp(s->zone, "UTC") == 0)
        s->zone[0] = '\0';
    if (s->zone[0] && !ck_cron_zone_known(s->zone)) {
        int r = ck_err_set(reterr, CK_EINVAL, "provided bad location %s: unknown time zone %s",
                           s->zone, s->zone);
        free(s);
        return r;
    }
    if (!*spec) {
        free(s);
        return ck_err_set(reterr, CK_EINVAL, "empty spec string");
    }
    if (spec[0] == '@') {
        const char *found = NULL;
        for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++)
            if (strcmp(spec, descriptors[i].name) == 0)
                found = descriptors[i].spec;
        if (!found) {
            int r = ck_err_set(reterr, CK_EINVAL, "unrecognized descriptor: %s", spec);
            free(s);
            return r;
        }
        spec = found;
    }
    const char *fields[6];
    size_t lens[6];
    int n = 0;
    for (const char *p = spec; *p;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (n < 6) {
            fields[n] = start;
            lens[n] = (size_t)(p - start);
        }
        n++;
    }
    if (n != 5) {
        int r = ck_err_set(reterr, CK_EINVAL, "expected exactly 5 fields, found %d: %s", n, spec);
        free(s);
        return r;
    }
    uint64_t *out[5] = {&s->minute, &s->hour, &s->dom, &s->month, &s->dow};
    for (int i = 0; i < 5; i++) {
        if (parse_field(fields[i], lens[i], &bounds[i], out[i], reterr) < 0) {
            free(s);
            return CK_EINVAL;
        }
    }
    *ret = s;
    return 0;
}

struct ck_cron_schedule *ck_cron_free(struct ck_cron_schedule *s)
{
    free(s);
    return NULL;
}

const char *ck_cron_zone(const struct ck_cron_schedule *s)
{
    return s->zone[0] ? s->zone : "UTC";
}

/* ---- the zone ---------------------------------------------------------------------- */

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;

/* Seconds east of UTC in zone at instant t. */
static long zone_offset(const char *zone, int64_t t)
{
    if (!zone[0])
        return 0;
    pthread_mutex_lock(&tz_lock);
    const char *old = getenv("TZ");
    char *saved = old ? strdup(old) : NULL;
    setenv("TZ", zone, 1);
    tzset();
    time_t tt = (time_t)t;
    struct tm tm;
    long off = localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    free(saved);
    pthread_mutex_unlock(&tz_lock);
    return off;
}

int64_t ck_cron_to_wall(const struct ck_cron_schedule *s, int64_t t)
{
    return t + zone_offset(s->zone, t);
}

/*
 * The instant of wall clock w: in a fold the offset found from w's own instant wins, as
 * before; a wall time inside a gap (spring forward) is the instant as late as the gap is
 * long, so it moves forward past the gap and never back before it.
 */
static int64_t from_wall(const char *zone, int64_t w)
{
    long off1 = zone_offset(zone, w);
    int64_t t = w - zone_offset(zone, w - off1);
    if (t + zone_offset(zone, t) == w)
        return t;
    int64_t later = w - off1;
    return later > t ? later : t;
}

/* ---- next -------------------------------------------------------------------------- */

static bool has(uint64_t bits, int v)
{
    return (bits >> v) & 1;
}

static bool day_matches(const struct ck_cron_schedule *s, const struct tm *tm)
{
    bool dom = has(s->dom, tm->tm_mday), dow = has(s->dow, tm->tm_wday);
    if ((s->dom & STAR_BIT) || (s->dow & STAR_BIT))
        return dom && dow;
    return dom || dow;
}

static int64_t wall_of(struct tm *tm)
{
    return (int64_t)timegm(tm); /* normalises tm too */
}

int64_t ck_cron_next(const struct ck_cron_schedule *s, int64_t after)
{
    /* the first whole minute after `after` */
    int64_t start = after + 1;
    start += (60 - ((start % 60) + 60) % 60) % 60;
    int64_t w = start + zone_offset(s->zone, start);
    time_t tt = (time_t)w;
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        return 0;
    int year_limit = tm.tm_year + 5;
    bool added = false;
wrap:
    if (tm.tm_year > year_limit)
        return 0;
    while (!has(s->month, tm.tm_mon + 1)) {
        if (!added) {
            added = true;
            tm.tm_mday = 1;
            tm.tm_hour = 0;
            tm.tm_min = 0;
        }
        tm.tm_mon++;
        wall_of(&tm);
        if (tm.tm_mon == 0)
            goto wrap;
    }
    while (!day_matches(s, &tm)) {
        if (!added) {
            added = true;
            tm.tm_hour = 0;
            tm.tm_min = 0;
        }
        tm.tm_mday++;
        wall_of(&tm);
        if (tm.tm_mday == 1)
            goto wrap;
    }
    while (!has(s->hour, tm.tm_hour)) {
        if (!added) {
            added = true;
            tm.tm_min = 0;
        }
        tm.tm_hour++;
        wall_of(&tm);
        if (tm.tm_hour == 0)
            goto wrap;
    }
    while (!has(s->minute, tm.tm_min)) {
        added = true;
        tm.tm_min++;
        wall_of(&tm);
        if (tm.tm_min == 0)
            goto wrap;
    }
    tm.tm_sec = 0;
    return from_wall(s->zone, wall_of(&tm));
}
