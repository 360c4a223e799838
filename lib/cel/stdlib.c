/*
 * stdlib.c - cel-spec's standard functions (google/cel-spec doc/langdef.md "Standard
 * Definitions"): size, contains, startsWith, endsWith, the type conversions
 * int() uint() double() string() bytes() bool() dyn() type(), duration() and
 * timestamp() with their getters.
 *
 * matches() is in regex.c with Kubernetes' find() and findAll(). Text conversions
 * follow Go's strconv as cel-go does: string(1.5) is "1.5", string(duration) is the
 * seconds ("90s"), timestamps are RFC 3339. Time zones in the getters are "UTC" or a
 * fixed offset "+05:30"; zone names need a time zone database this library does not
 * carry (docs/cel.md).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define UNUSED_ARGS                                                                                \
    do {                                                                                           \
        (void)call;                                                                                \
        (void)nargs;                                                                               \
    } while (0)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

static bool all_of(struct ck__cel_val **args, size_t nargs, int type)
{
    for (size_t i = 0; i < nargs; i++)
        if (args[i]->type != type)
            return false;
    return true;
}

FN(fn_size)
{
    struct ck__cel_val *a = args[0];
    switch (a->type) {
    case CK_CEL_STRING:
        if (!ck__cel_charge(ev, a->s.len / 10))
            return ck__cel_fatal(ev);
        return ck__cel_int(ev, (int64_t)ck__cel_utf8_len(a->s.p, a->s.len));
    case CK_CEL_BYTES:
        return ck__cel_int(ev, (int64_t)a->s.len);
    case CK_CEL_LIST:
        return ck__cel_int(ev, (int64_t)a->list.n);
    case CK_CEL_MAP:
        return ck__cel_int(ev, (int64_t)a->map.n);
    default:
        return NO_OVERLOAD();
    }
}

FN(fn_contains)
{
    if (!all_of(args, nargs, CK_CEL_STRING))
        return NO_OVERLOAD();
    if (!ck__cel_charge(ev, args[0]->s.len / 10))
        return ck__cel_fatal(ev);
    return ck__cel_bool(memmem(args[0]->s.p, args[0]->s.len, args[1]->s.p, args[1]->s.len) != NULL);
}

FN(fn_starts_with)
{
    if (!all_of(args, nargs, CK_CEL_STRING))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0], *p = args[1];
    return ck__cel_bool(p->s.len <= s->s.len && !memcmp(s->s.p, p->s.p, p->s.len));
}

FN(fn_ends_with)
{
    if (!all_of(args, nargs, CK_CEL_STRING))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0], *p = args[1];
    return ck__cel_bool(p->s.len <= s->s.len &&
                        !memcmp(s->s.p + s->s.len - p->s.len, p->s.p, p->s.len));
}

/* ---- conversions ------------------------------------------------------------------ */

static struct ck__cel_val *range_error(struct ck__cel_eval *ev)
{
    return ck__cel_errorf(ev, "range error");
}

FN(fn_int)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    switch (a->type) {
    case CK_CEL_INT:
        return a;
    case CK_CEL_UINT:
        return a->u > INT64_MAX ? range_error(ev) : ck__cel_int(ev, (int64_t)a->u);
    case CK_CEL_DOUBLE:
        if (!(a->d > -9223372036854775808.0 && a->d < 9223372036854775808.0))
            return range_error(ev);
        return ck__cel_int(ev, (int64_t)a->d);
    case CK_CEL_STRING: {
        char *end;
        errno = 0;
        long long v = strtoll(a->s.p, &end, 10);
        if (errno || end == a->s.p || *end || a->s.len == 0 || a->s.p[0] == ' ' ||
            (size_t)(end - a->s.p) != a->s.len)
            return ck__cel_errorf(ev, "cannot convert \"%.100s\" to int", a->s.p);
        return ck__cel_int(ev, v);
    }
    case CK_CEL_TIMESTAMP:
        return ck__cel_int(ev, a->t.sec);
    default:
        return ck__cel_no_overload(ev, "int", args, 1);
    }
}

FN(fn_uint)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    switch (a->type) {
    case CK_CEL_UINT:
        return a;
    case CK_CEL_INT:
        return a->i < 0 ? range_error(ev) : ck__cel_uint(ev, (uint64_t)a->i);
    case CK_CEL_DOUBLE:
        if (!(a->d > -1.0 && a->d < 18446744073709551616.0))
            return range_error(ev);
        return ck__cel_uint(ev, (uint64_t)a->d);
    case CK_CEL_STRING: {
        char *end;
        errno = 0;
        if (a->s.len == 0 || a->s.p[0] < '0' || a->s.p[0] > '9')
            return ck__cel_errorf(ev, "cannot convert \"%.100s\" to uint", a->s.p);
        unsigned long long v = strtoull(a->s.p, &end, 10);
        if (errno || (size_t)(end - a->s.p) != a->s.len)
            return ck__cel_errorf(ev, "cannot convert \"%.100s\" to uint", a->s.p);
        return ck__cel_uint(ev, v);
    }
    default:
        return ck__cel_no_overload(ev, "uint", args, 1);
    }
}

FN(fn_double)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    switch (a->type) {
    case CK_CEL_DOUBLE:
        return a;
    case CK_CEL_INT:
        return ck__cel_double(ev, (double)a->i);
    case CK_CEL_UINT:
        return ck__cel_double(ev, (double)a->u);
    case CK_CEL_STRING: {
        char *end;
        if (a->s.len == 0 || a->s.p[0] == ' ' || a->s.p[0] == '\t' || a->s.p[0] == '\n')
            return ck__cel_errorf(ev, "cannot convert \"%.100s\" to double", a->s.p);
        double d = strtod(a->s.p, &end);
        if ((size_t)(end - a->s.p) != a->s.len)
            return ck__cel_errorf(ev, "cannot convert \"%.100s\" to double", a->s.p);
        return ck__cel_double(ev, d);
    }
    default:
        return ck__cel_no_overload(ev, "double", args, 1);
    }
}

FN(fn_string)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    char buf[64];
    switch (a->type) {
    case CK_CEL_STRING:
        return a;
    case CK_CEL_INT:
        snprintf(buf, sizeof(buf), "%" PRId64, a->i);
        break;
    case CK_CEL_UINT:
        snprintf(buf, sizeof(buf), "%" PRIu64, a->u);
        break;
    case CK_CEL_DOUBLE:
        ck__cel_format_double(a->d, buf, sizeof(buf));
        break;
    case CK_CEL_BOOL:
        snprintf(buf, sizeof(buf), "%s", a->b ? "true" : "false");
        break;
    case CK_CEL_BYTES:
        if (!ck__cel_utf8_valid(a->s.p, a->s.len))
            return ck__cel_errorf(ev, "invalid UTF-8 in bytes, cannot convert to string");
        return ck__cel_str(ev, CK_CEL_STRING, a->s.p, a->s.len);
    case CK_CEL_DURATION:
        ck__cel_format_duration(a->t.sec, a->t.nsec, buf, sizeof(buf));
        break;
    case CK_CEL_TIMESTAMP:
        ck__cel_format_timestamp(a->t.sec, a->t.nsec, buf, sizeof(buf));
        break;
    case CK_CEL_TYPE:
        return ck__cel_str(ev, CK_CEL_STRING, a->s.p, a->s.len);
    case CK_CEL_IP:
    case CK_CEL_CIDR:
        ck__cel_format_net(a, buf, sizeof(buf));
        break;
    default:
        return ck__cel_no_overload(ev, "string", args, 1);
    }
    return ck__cel_str(ev, CK_CEL_STRING, buf, strlen(buf));
}

FN(fn_bytes)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    if (a->type == CK_CEL_BYTES)
        return a;
    if (a->type == CK_CEL_STRING)
        return ck__cel_str(ev, CK_CEL_BYTES, a->s.p, a->s.len);
    return ck__cel_no_overload(ev, "bytes", args, 1);
}

FN(fn_bool)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    if (a->type == CK_CEL_BOOL)
        return a;
    bool b;
    if (a->type == CK_CEL_STRING) {
        if (strlen(a->s.p) == a->s.len && ck__parse_bool(a->s.p, &b))
            return ck__cel_bool(b);
        return ck__cel_errorf(ev, "type conversion error from 'string' to 'bool'");
    }
    return ck__cel_no_overload(ev, "bool", args, 1);
}

FN(fn_dyn)
{
    UNUSED_ARGS;
    (void)ev;
    return args[0];
}

FN(fn_type)
{
    UNUSED_ARGS;
    return ck__cel_type_val(ev, ck__cel_type_name(args[0]));
}

/* ---- durations and timestamps ------------------------------------------------------ */

bool ck__cel_parse_duration(const char *s, size_t n, int64_t *ret_sec, int32_t *ret_nsec)
{
    /* Go's time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+ or "0" */
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (n - i == 1 && s[i] == '0') {
        *ret_sec = 0;
        *ret_nsec = 0;
        return true;
    }
    if (i == n)
        return false;
    __int128 total = 0; /* nanoseconds */
    while (i < n) {
        __int128 whole = 0, frac = 0, scale = 1;
        size_t d0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            whole = whole * 10 + (s[i++] - '0');
            if (whole > (__int128)1 << 80)
                return false;
        }
        bool digits = i > d0;
        if (i < n && s[i] == '.') {
            i++;
            size_t f0 = i;
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                if (scale < (__int128)1000000000000000000LL) {
                    frac = frac * 10 + (s[i] - '0');
                    scale *= 10;
                }
                i++;
            }
            digits = digits || i > f0;
        }
        if (!digits)
            return false;
        static const struct {
            const char *unit;
            int64_t ns;
        } units[] = {
            {"ns", 1},       {"us", 1000},      {"\xc2\xb5s", 1000},  {"\xce\xbcs", 1000},
            {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000LL}, {"h", 3600000000000LL}};
        size_t k, best = SIZE_MAX, best_len = 0;
        for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
            size_t ul = strlen(units[k].unit);
            if (i + ul <= n && !memcmp(s + i, units[k].unit, ul) && ul > best_len) {
                best = k;
                best_len = ul;
            }
        }
        if (best == SIZE_MAX)
            return false;
        i += best_len;
        total += whole * units[best].ns + frac * units[best].ns / scale;
        if (total > (__int128)INT64_MAX)
            return false;
    }
    if (neg)
        total = -total;
    *ret_sec = (int64_t)(total / 1000000000);
    *ret_nsec = (int32_t)(total % 1000000000);
    return true;
}

bool ck_cel_parse_duration(const char *text, int64_t *ret_sec, int32_t *ret_nsec)
{
    return ck__cel_parse_duration(text, strlen(text), ret_sec, ret_nsec);
}

bool ck__cel_parse_timestamp(const char *s, int64_t *ret_sec, int32_t *ret_nsec)
{
    /* RFC 3339: the fraction (up to nine digits) read here, the rest by ck__time_parse */
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof(buf) || n < 20)
        return false;
    int32_t nsec = 0;
    const char *dot = s[19] == '.' ? s + 19 : NULL;
    if (dot) {
        size_t i = 20, digits = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (digits < 9)
                nsec = nsec * 10 + (s[i] - '0');
            digits++;
            i++;
        }
        if (!digits)
            return false;
        for (size_t d = digits; d < 9; d++)
            nsec *= 10;
        memcpy(buf, s, 19);
        snprintf(buf + 19, sizeof(buf) - 19, "%s", s + i);
        s = buf;
    }
    int64_t sec;
    if (ck__time_parse(s, &sec, NULL))
        return false;
    *ret_sec = sec;
    *ret_nsec = nsec;
    return true;
}

static struct ck__cel_val *time_value(struct ck__cel_eval *ev, int type, int64_t sec, int32_t nsec)
{
    struct ck__cel_val *v = ck__cel_new(ev, type);
    if (!ck__cel_is_error(v)) {
        v->t.sec = sec;
        v->t.nsec = nsec;
    }
    return v;
}

FN(fn_duration)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    if (a->type == CK_CEL_DURATION)
        return a;
    if (a->type != CK_CEL_STRING)
        return ck__cel_no_overload(ev, "duration", args, 1);
    int64_t sec;
    int32_t nsec;
    if (!ck__cel_parse_duration(a->s.p, a->s.len, &sec, &nsec))
        return ck__cel_errorf(ev, "type conversion error from 'string' to "
                                  "'google.protobuf.Duration'");
    if (!ck__cel_duration_ok(sec, nsec))
        return ck__cel_errorf(ev, "duration out of range");
    return time_value(ev, CK_CEL_DURATION, sec, nsec);
}

FN(fn_timestamp)
{
    UNUSED_ARGS;
    struct ck__cel_val *a = args[0];
    if (a->type == CK_CEL_TIMESTAMP)
        return a;
    int64_t sec;
    int32_t nsec = 0;
    if (a->type == CK_CEL_INT) {
        sec = a->i;
    } else if (a->type == CK_CEL_STRING) {
        if (strlen(a->s.p) != a->s.len || !ck__cel_parse_timestamp(a->s.p, &sec, &nsec))
            return ck__cel_errorf(ev, "type conversion error from 'string' to "
                                      "'google.protobuf.Timestamp'");
    } else {
        return ck__cel_no_overload(ev, "timestamp", args, 1);
    }
    if (sec < -62135596800LL || sec > 253402300799LL)
        return ck__cel_errorf(ev, "timestamp out of range");
    return time_value(ev, CK_CEL_TIMESTAMP, sec, nsec);
}

/* The offset in seconds of a zone argument: "UTC", "Z" or [+-]HH:MM. */
static bool zone_offset(const struct ck__cel_val *z, int64_t *ret)
{
    const char *s = z->s.p;
    if (!strcmp(s, "UTC") || !strcmp(s, "Z") || !strcmp(s, "Etc/UTC")) {
        *ret = 0;
        return true;
    }
    int h, m;
    char sign, extra;
    if (sscanf(s, "%c%2d:%2d%c", &sign, &h, &m, &extra) == 3 && (sign == '+' || sign == '-') &&
        z->s.len == 6 && h < 24 && m < 60) {
        *ret = (sign == '-' ? -1 : 1) * (h * 3600 + m * 60);
        return true;
    }
    if (sscanf(s, "%2d:%2d%c", &h, &m, &extra) == 2 && z->s.len == 5 && h < 24 && m < 60) {
        *ret = h * 3600 + m * 60;
        return true;
    }
    return false;
}

enum getter {
    G_YEAR,
    G_MONTH,
    G_DAY_OF_YEAR,
    G_DATE,
    G_DAY_OF_MONTH,
    G_DAY_OF_WEEK,
    G_HOURS,
    G_MINUTES,
    G_SECONDS,
    G_MILLIS
};

static struct ck__cel_val *get(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                               struct ck__cel_val **args, size_t nargs, enum getter g)
{
    struct ck__cel_val *a = args[0];
    if (a->type == CK_CEL_DURATION && nargs == 1) {
        switch (g) {
        case G_HOURS:
            return ck__cel_int(ev, a->t.sec / 3600);
        case G_MINUTES:
            return ck__cel_int(ev, a->t.sec / 60);
        case G_SECONDS:
            return ck__cel_int(ev, a->t.sec);
        case G_MILLIS:
            return ck__cel_int(ev, a->t.nsec / 1000000);
        default:
            return NO_OVERLOAD();
        }
    }
    if (a->type != CK_CEL_TIMESTAMP || (nargs == 2 && args[1]->type != CK_CEL_STRING))
        return NO_OVERLOAD();
    int64_t off = 0;
    if (nargs == 2 && !zone_offset(args[1], &off))
        return ck__cel_errorf(ev, "unsupported time zone: %.64s", args[1]->s.p);
    time_t t = (time_t)(a->t.sec + off);
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return ck__cel_errorf(ev, "timestamp out of range");
    int64_t r;
    switch (g) {
    case G_YEAR:
        r = tm.tm_year + 1900;
        break;
    case G_MONTH:
        r = tm.tm_mon;
        break;
    case G_DAY_OF_YEAR:
        r = tm.tm_yday;
        break;
    case G_DATE:
        r = tm.tm_mday;
        break;
    case G_DAY_OF_MONTH:
        r = tm.tm_mday - 1;
        break;
    case G_DAY_OF_WEEK:
        r = tm.tm_wday;
        break;
    case G_HOURS:
        r = tm.tm_hour;
        break;
    case G_MINUTES:
        r = tm.tm_min;
        break;
    case G_SECONDS:
        r = tm.tm_sec;
        break;
    default:
        r = a->t.nsec / 1000000;
    }
    return ck__cel_int(ev, r);
}

#define GETTER(fname, g)                                                                           \
    FN(fname)                                                                                      \
    {                                                                                              \
        return get(ev, call, args, nargs, g);                                                      \
    }
GETTER(fn_year, G_YEAR)
GETTER(fn_month, G_MONTH)
GETTER(fn_day_of_year, G_DAY_OF_YEAR)
GETTER(fn_date, G_DATE)
GETTER(fn_day_of_month, G_DAY_OF_MONTH)
GETTER(fn_day_of_week, G_DAY_OF_WEEK)
GETTER(fn_hours, G_HOURS)
GETTER(fn_minutes, G_MINUTES)
GETTER(fn_seconds, G_SECONDS)
GETTER(fn_millis, G_MILLIS)

#define G CK__CEL_GLOBAL
#define M CK__CEL_MEMBER

/* The overloads of the functions below for the type checker (check.c). */
#define SIZE_SIG                                                                                   \
    "(string)->int;(bytes)->int;(list(A))->int;(map(A, B))->int;"                                  \
    "string.()->int;bytes.()->int;list(A).()->int;map(A, B).()->int"

#define INT_SIG                                                                                    \
    "(int)->int;(uint)->int;(double)->int;(string)->int;(timestamp)->int;"                         \
    "(duration)->int"

#define DOUBLE_SIG "(double)->double;(int)->double;(uint)->double;(string)->double"

#define STRING_SIG                                                                                 \
    "(string)->string;(int)->string;(uint)->string;(double)->string;"                              \
    "(bytes)->string;(bool)->string;(timestamp)->string;(duration)->string;"                       \
    "(net.IP)->string;(net.CIDR)->string"

/* getFullYear() and the like: of a timestamp, optionally in a time zone */
#define DATE_SIG "timestamp.()->int;timestamp.(string)->int"
/* getHours() and the like: of durations too */
#define CLOCK_SIG DATE_SIG ";duration.()->int"

#define TIMESTAMP_SIG "(timestamp)->timestamp;(string)->timestamp;(int)->timestamp"

const struct ck__cel_func ck__cel_stdlib[] = {
    {"size", G | M, 1, 1, fn_size, SIZE_SIG},
    {"contains", M, 2, 2, fn_contains, "string.(string)->bool"},
    {"startsWith", M, 2, 2, fn_starts_with, "string.(string)->bool"},
    {"endsWith", M, 2, 2, fn_ends_with, "string.(string)->bool"},
    {"int", G, 1, 1, fn_int, INT_SIG},
    {"uint", G, 1, 1, fn_uint, "(uint)->uint;(int)->uint;(double)->uint;(string)->uint"},
    {"double", G, 1, 1, fn_double, DOUBLE_SIG},
    {"string", G, 1, 1, fn_string, STRING_SIG},
    {"bytes", G, 1, 1, fn_bytes, "(bytes)->bytes;(string)->bytes"},
    {"bool", G, 1, 1, fn_bool, "(bool)->bool;(string)->bool"},
    {"dyn", G, 1, 1, fn_dyn, "(A)->dyn"},
    {"type", G, 1, 1, fn_type, "(A)->type(A)"},
    {"duration", G, 1, 1, fn_duration, "(duration)->duration;(string)->duration"},
    {"timestamp", G, 1, 1, fn_timestamp, TIMESTAMP_SIG},
    {"getFullYear", M, 1, 2, fn_year, DATE_SIG},
    {"getMonth", M, 1, 2, fn_month, DATE_SIG},
    {"getDayOfYear", M, 1, 2, fn_day_of_year, DATE_SIG},
    {"getDate", M, 1, 2, fn_date, DATE_SIG},
    {"getDayOfMonth", M, 1, 2, fn_day_of_month, DATE_SIG},
    {"getDayOfWeek", M, 1, 2, fn_day_of_week, DATE_SIG},
    {"getHours", M, 1, 2, fn_hours, CLOCK_SIG},
    {"getMinutes", M, 1, 2, fn_minutes, CLOCK_SIG},
    {"getSeconds", M, 1, 2, fn_seconds, CLOCK_SIG},
    {"getMilliseconds", M, 1, 2, fn_millis, CLOCK_SIG},
};
const size_t ck__cel_stdlib_len = sizeof(ck__cel_stdlib) / sizeof(ck__cel_stdlib[0]);
