/*
 * timefmt.c - RFC 3339 times, the way metav1.Time and metav1.MicroTime read and write
 * them (apimachinery pkg/apis/meta/v1/time.go, micro_time.go; Go's time.RFC3339).
 *
 * Parsing is strict, as Go's is: fixed-width fields, a date that exists, a zone that is
 * Z or a numeric offset, nothing after. It does its own calendar arithmetic (days from
 * a civil date), so it needs neither strptime nor timegm and works for any year 0000 to
 * 9999 (also after the offset is applied: what it accepts it can write back). Formatting always
 * writes UTC with a Z, which is what the API server stores.
 *
 * Threading: pure functions.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

/* Reads exactly n digits. */
static bool digits(const char **p, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *ret = v;
    return true;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int ck__time_parse(const char *s, int64_t *ret_sec, long *ret_usec)
{
    int y, mo, d, h, mi, sec;
    if (!s)
        return CK_EINVAL;
    const char *p = s;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
        return CK_EINVAL;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
        !digits(&p, 2, &sec))
        return CK_EINVAL;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
        return CK_EINVAL;
    long usec = 0;
    if (*p == '.') {
        long scale = 100000;
        p++;
        if (*p < '0' || *p > '9')
            return CK_EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
            usec += (*p - '0') * scale;
            scale /= 10;
        }
    }
    int64_t offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        int sign = *p++ == '-' ? -1 : 1;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59)
            return CK_EINVAL;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return CK_EINVAL;
    }
    if (*p != '\0')
        return CK_EINVAL;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    /* in UTC the year must still have four digits, or the time could not be written back */
    if (t < days_from_civil(0, 1, 1) * 86400 || t >= days_from_civil(10000, 1, 1) * 86400)
        return CK_EINVAL;
    *ret_sec = t;
    if (ret_usec)
        *ret_usec = usec;
    return 0;
}

const char *ck__time_format(int64_t sec, long usec, char *buf, size_t size)
{
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, size, "%s", "");
        return buf;
    }
    /* %04d, not strftime's %Y: years below 1000 keep their four digits */
    if (usec >= 0)
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
    else
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}
