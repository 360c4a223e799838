/*
 * formats.c - the string formats and the `pattern` keyword of custom
 * resource schemas, as apiextensions validates them.
 *
 * Formats: the ones apiextensions keeps (it strips every other format from
 * a CRD's schema before validating), checked as kube-openapi's strfmt and
 * govalidator check them: byte, date, datetime (date-time), duration, uuid,
 * uuid3, uuid4, uuid5, email (roughly: net/mail is not reproduced), hostname,
 * ipv4, ipv6, cidr, mac, uri (roughly), hexcolor, rgbcolor, ssn, isbn,
 * isbn10, isbn13, bsonobjectid; password is anything; creditcard is
 * accepted unchecked (docs/differences.md). Any other format name is not
 * checked at all, as Kubernetes strips it.
 *
 * Patterns are Go regular expressions searched anywhere in the value, as
 * kube-openapi's validate.Pattern does with Go's regexp: compiled and
 * searched by RE2 through ck__regex (libckube-util), which takes Go's syntax
 * and searches in linear time. A pattern Go refuses is invalid, with Go's
 * parser message.
 *
 * Compiled patterns are kept in a process-wide cache (the first 256
 * distinct patterns; later ones are compiled for each use): compiling one
 * costs more than the rest of a custom resource's validation. Entries are
 * never removed, so a found entry stays valid without the lock; RE2 allows
 * concurrent searches of one compiled expression.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* ---- formats ------------------------------------------------------------ */

static bool all_chars(const char *s, size_t n, int (*pred)(int))
{
    for (size_t i = 0; i < n; i++)
        if (!pred((unsigned char)s[i]))
            return false;
    return true;
}

static bool digits(const char *s, size_t n)
{
    return all_chars(s, n, isdigit);
}

/* The byte length of the UTF-8 sequence starting at s (1 for a stray byte). */
static size_t rune_len(const char *s)
{
    unsigned char c = (unsigned char)*s;
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

/*
 * govalidator's IsBase64: groups of four of [A-Za-z0-9+/], the last one
 * possibly "xx==" or "xxx="; the empty string is not base64.
 */
static bool is_base64(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n % 4 != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '=') {
            /* padding only at the end: "x=" or "xx==" tails */
            if (i < n - 2 || (i == n - 2 && s[n - 1] != '='))
                return false;
            continue;
        }
        if (!isalnum(c) && c != '+' && c != '/')
            return false;
    }
    return true;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Go's time.Parse("2006-01-02"): YYYY-MM-DD with a real day of the month. */
static bool is_date(const char *s, size_t n)
{
    if (n != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4) || !digits(s + 5, 2) ||
        !digits(s + 8, 2))
        return false;
    int y = atoi(s), m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return false;
    return d <= days[m - 1] + (m == 2 && is_leap(y));
}

/* "z" or "+hh:mm" / "-hh:mm" exactly at time[i..n) */
static bool zone_at(const char *time, size_t i, size_t n)
{
    if (i + 1 == n && (time[i] == 'z' || time[i] == 'Z'))
        return true;
    return i + 6 == n && (time[i] == '+' || time[i] == '-') && digits(time + i + 1, 2) &&
           time[i + 3] == ':' && digits(time + i + 4, 2);
}

/*
 * strfmt's IsDateTime: the lower-cased text split at 't'; the first part a
 * date, the second "hh:mm:ss", optionally any one character and digits,
 * then 'z' or "+hh:mm"/"-hh:mm" (hh <= 23, mm and ss <= 59).
 */
static bool is_date_time(const char *s)
{
    if (strlen(s) < 4)
        return false;
    const char *t = s;
    while (*t && *t != 't' && *t != 'T')
        t++;
    if (!*t || !is_date(s, (size_t)(t - s)))
        return false;
    const char *time = t + 1;
    const char *end = time;
    while (*end && *end != 't' && *end != 'T')
        end++;
    size_t n = (size_t)(end - time);
    if (n < 9 || time[2] != ':' || time[5] != ':' || !digits(time, 2) || !digits(time + 3, 2) ||
        !digits(time + 6, 2))
        return false;
    if (strncmp(time, "23", 2) > 0 || strncmp(time + 3, "59", 2) > 0 ||
        strncmp(time + 6, "59", 2) > 0)
        return false;
    /* the zone right after the seconds, or after "." (any character) and digits */
    if (zone_at(time, 8, n))
        return true;
    if (n <= 8)
        return false;
    size_t i = 8 + rune_len(time + 8), start = i;
    while (i < n && isdigit((unsigned char)time[i]))
        i++;
    return i > start && zone_at(time, i, n);
}

/* Go's time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?unit)+, or "0". */
static bool is_go_duration(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms",
                                        "s",  "m",  "h",         NULL};
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (strcmp(p, "0") == 0)
        return true;
    if (!*p)
        return false;
    while (*p) {
        const char *start = p;
        while (isdigit((unsigned char)*p))
            p++;
        bool pre = p != start, post = false;
        if (*p == '.') {
            start = ++p;
            while (isdigit((unsigned char)*p))
                p++;
            post = p != start;
        }
        if (!pre && !post)
            return false;
        start = p;
        while (*p && *p != '.' && !isdigit((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - start);
        bool known = false;
        for (size_t i = 0; units[i] && !known; i++)
            known = len == strlen(units[i]) && strncmp(start, units[i], len) == 0;
        if (!known)
            return false;
    }
    return true;
}

/* A unit of strfmt's long durations ("3 days"), lower-cased. */
static bool long_duration_unit(const char *unit)
{
    static const char *const variants[][4] = {
        {"ns", "nano", NULL},  {"us", "\xc2\xb5s", "micro", NULL},
        {"ms", "milli", NULL}, {"s", "sec", NULL},
        {"m", "min", NULL},    {"h", "hr", "hour", NULL},
        {"d", "day", NULL},    {"w", "wk", "week", NULL},
    };
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        size_t last = 0;
        while (variants[v][last + 1])
            last++;
        for (size_t i = 0; i <= last; i++) {
            if (strcmp(unit, variants[v][i]) == 0)
                return true;
            if (i == last && strncmp(unit, variants[v][i], strlen(variants[v][i])) == 0)
                return true;
        }
    }
    return false;
}

/*
 * strfmt's IsDuration: Go's syntax, or anywhere in the text a number and a
 * known unit, (\d+)\s*([A-Za-zµ]+) ("3 days", "1 hour 30 minutes").
 */
static bool is_duration(const char *s)
{
    if (is_go_duration(s))
        return true;
    bool ok = false;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p)) {
            p++;
            continue;
        }
        const char *num = p;
        while (isdigit((unsigned char)*p))
            p++;
        size_t num_len = (size_t)(p - num);
        const char *q = p;
        while (*q == ' ' || (*q >= '\t' && *q <= '\r' && *q != '\v'))
            q++;
        char unit[64];
        size_t len = 0;
        while (isalpha((unsigned char)*q) || (q[0] == '\xc2' && q[1] == '\xb5')) {
            size_t step = isalpha((unsigned char)*q) ? 1 : 2;
            for (size_t i = 0; i < step; i++) {
                if (len + 1 < sizeof(unit))
                    unit[len++] = (char)tolower((unsigned char)q[i]);
            }
            q += step;
        }
        unit[len] = '\0';
        if (len == 0)
            continue; /* a number without a unit: no match here */
        /* strconv.Atoi of the number: more than int64 is an error, and the text invalid */
        if (num_len > 19 || (num_len == 19 && strncmp(num, "9223372036854775807", 19) > 0))
            return false;
        ok = ok || long_duration_unit(unit);
        p = q;
    }
    return ok;
}

static bool is_uuid(const char *s, char version)
{
    char hex[33];
    size_t n = 0;
    static const int dash_after[] = {8, 12, 16, 20};
    size_t d = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '-' && d < 4 && n == (size_t)dash_after[d]) {
            d++;
            continue;
        }
        if (!isxdigit((unsigned char)*p) || n >= 32)
            return false;
        while (d < 4 && n > (size_t)dash_after[d])
            d++;
        hex[n++] = (char)tolower((unsigned char)*p);
    }
    if (n != 32)
        return false;
    if (version && hex[12] != version)
        return false;
    if (version == '4' || version == '5')
        return strchr("89ab", hex[16]) != NULL;
    return true;
}

/* [a-zA-Z0-9\p{S}\p{L}]: ASCII letters, digits and symbols, and (roughly) any non-ASCII rune. */
static bool host_rune(const char *r, size_t len)
{
    unsigned char c = (unsigned char)*r;
    return len > 1 || c >= 0x80 || isalnum(c) || strchr("$+<=>^`|~", c) != NULL;
}

/* [a-zA-Z\p{L}] */
static bool letter_rune(const char *r, size_t len)
{
    return len > 1 || (unsigned char)*r >= 0x80 || isalpha((unsigned char)*r);
}

/*
 * strfmt's hostname: either one label (a character, then optionally one
 * '-' and up to 62 characters), or labels of 1 to 63 characters with
 * inner '-' each followed by '.', and a TLD of 2 to 63 letters; at most 255
 * bytes, no label over 63 bytes.
 */
static bool is_hostname(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return false;
    for (const char *label = s;;) {
        const char *dot = strchr(label, '.');
        if ((dot ? (size_t)(dot - label) : strlen(label)) > 63)
            return false;
        if (!dot)
            break;
        label = dot + 1;
    }
    const char *last_dot = strrchr(s, '.');
    if (!last_dot) {
        size_t len = rune_len(s);
        if (!host_rune(s, len))
            return false;
        const char *p = s + len;
        if (*p == '-')
            p++;
        size_t count = 0;
        while (*p) {
            len = rune_len(p);
            if (!host_rune(p, len) || ++count > 62)
                return false;
            p += len;
        }
        return true;
    }
    /* the TLD */
    size_t count = 0;
    for (const char *p = last_dot + 1; *p;) {
        size_t len = rune_len(p);
        if (!letter_rune(p, len) || ++count > 63)
            return false;
        p += len;
    }
    if (count < 2)
        return false;
    /* the labels before it, each followed by a dot */
    for (const char *label = s; label <= last_dot;) {
        const char *dot = strchr(label, '.');
        size_t runes = 0;
        const char *last = NULL;
        for (const char *p = label; p < dot;) {
            size_t len = rune_len(p);
            bool inner = *p == '-';
            if ((!inner && !host_rune(p, len)) || (runes == 0 && inner))
                return false;
            last = p;
            runes++;
            p += len;
        }
        if (runes == 0 || runes > 63 || *last == '-')
            return false;
        label = dot + 1;
    }
    return true;
}

/* net/mail's addr-spec, roughly: local@domain, optionally "Name <local@domain>". */
static bool is_email(const char *s)
{
    const char *lt = strchr(s, '<');
    char buf[512];
    if (lt) {
        const char *gt = strchr(lt, '>');
        if (!gt || gt[1] != '\0' || (size_t)(gt - lt - 1) >= sizeof(buf))
            return false;
        memcpy(buf, lt + 1, (size_t)(gt - lt - 1));
        buf[gt - lt - 1] = '\0';
        s = buf;
    }
    const char *at = strrchr(s, '@');
    if (!at || at == s || at[1] == '\0')
        return false;
    for (const char *p = s; p < at; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= ' ' || strchr("()<>[]:;@\\,\"", c))
            return false;
    }
    if (s[0] == '.' || at[-1] == '.' || strstr(s, "..") != NULL)
        return false;
    for (const char *p = at + 1; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= ' ' || strchr("()<>[]:;@\\,\"", c))
            return false;
    }
    return at[1] != '.' && s[strlen(s) - 1] != '.';
}

/* Four decimal octets, leading zeros allowed (netutils.ParseIPSloppy). */
static bool is_sloppy_ipv4(const char *s)
{
    const char *p = s;
    for (int part = 0; part < 4; part++) {
        if (part > 0 && *p++ != '.')
            return false;
        const char *start = p;
        long v = 0;
        while (isdigit((unsigned char)*p) && p - start < 4)
            v = v * 10 + (*p++ - '0');
        if (p == start || p - start > 3 || v > 255)
            return false;
    }
    return *p == '\0';
}

static bool is_ipv6(const char *s)
{
    struct in6_addr a;
    return strchr(s, ':') && inet_pton(AF_INET6, s, &a) == 1;
}

/* strfmt's isIPv4: any address ParseIPSloppy takes that has a dot (so ::ffff:1.2.3.4 too). */
static bool is_ipv4(const char *s)
{
    return strchr(s, '.') && (is_sloppy_ipv4(s) || is_ipv6(s));
}

/* netutils.ParseCIDRSloppy: an address, '/', a prefix length within its size. */
static bool is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || slash[1] == '\0' || !digits(slash + 1, strlen(slash + 1)))
        return false;
    char ip[64];
    size_t len = (size_t)(slash - s);
    if (len >= sizeof(ip))
        return false;
    memcpy(ip, s, len);
    ip[len] = '\0';
    const char *bits = slash + 1;
    while (bits[0] == '0' && bits[1])
        bits++;
    if (strlen(bits) > 3)
        return false;
    int n = atoi(bits);
    if (is_sloppy_ipv4(ip))
        return n <= 32;
    return is_ipv6(ip) && n <= 128;
}

/* Go's net.ParseMAC: 6, 8 or 20 octets as aa:bb:.., aa-bb-.. or aabb.ccdd... */
static bool is_mac(const char *s)
{
    size_t n = strlen(s);
    if (n < 14)
        return false;
    if (s[2] == ':' || s[2] == '-') {
        if ((n + 1) % 3 != 0)
            return false;
        size_t octets = (n + 1) / 3;
        if (octets != 6 && octets != 8 && octets != 20)
            return false;
        for (size_t i = 0; i < n; i += 3) {
            if (!isxdigit((unsigned char)s[i]) || !isxdigit((unsigned char)s[i + 1]))
                return false;
            if (i + 2 < n && s[i + 2] != s[2])
                return false;
        }
        return true;
    }
    if (s[4] == '.') {
        if ((n + 1) % 5 != 0)
            return false;
        size_t octets = 2 * (n + 1) / 5;
        if (octets != 6 && octets != 8 && octets != 20)
            return false;
        for (size_t i = 0; i < n; i += 5) {
            if (!all_chars(s + i, 4, isxdigit))
                return false;
            if (i + 4 < n && s[i + 4] != '.')
                return false;
        }
        return true;
    }
    return false;
}

/* Go's url.ParseRequestURI, roughly: an absolute URI (scheme:...) or an absolute path. */
static bool is_uri(const char *s)
{
    for (const char *q = s; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return false;
    if (s[0] == '/')
        return true;
    if (!isalpha((unsigned char)s[0]))
        return false;
    const char *p = s + 1;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    return *p == ':';
}

/* govalidator's IsHexcolor: ^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$ */
static bool is_hexcolor(const char *s)
{
    if (*s == '#')
        s++;
    size_t n = strlen(s);
    return (n == 3 || n == 6) && all_chars(s, n, isxdigit);
}

/* 0-255 without leading zeros, as govalidator's RGB color regex says. */
static const char *rgb_component(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    const char *start = p;
    while (isdigit((unsigned char)*p))
        p++;
    size_t n = (size_t)(p - start);
    if (n == 0 || n > 3 || (n > 1 && *start == '0') || atoi(start) > 255)
        return NULL;
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* govalidator's IsRGBcolor: rgb(r, g, b) */
static bool is_rgbcolor(const char *s)
{
    if (strncmp(s, "rgb(", 4) != 0)
        return false;
    const char *p = s + 4;
    for (int i = 0; i < 3; i++) {
        p = rgb_component(p);
        if (!p || *p != (i < 2 ? ',' : ')'))
            return false;
        p++;
    }
    return *p == '\0';
}

/* govalidator's IsSSN: 11 characters, ^\d{3}[- ]?\d{2}[- ]?\d{4}$ */
static bool is_ssn(const char *s)
{
    return strlen(s) == 11 && digits(s, 3) && (s[3] == '-' || s[3] == ' ') && digits(s + 4, 2) &&
           (s[6] == '-' || s[6] == ' ') && digits(s + 7, 4);
}

/* govalidator's IsISBN10 and IsISBN13, spaces and '-' removed, with the check digit. */
static bool is_isbn(const char *s, int version)
{
    char d[16];
    size_t n = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '-' || isspace((unsigned char)*p))
            continue;
        if (n >= sizeof(d) - 1)
            return false;
        d[n++] = *p;
    }
    if (version == 10 && n == 10 && digits(d, 9) && (isdigit((unsigned char)d[9]) || d[9] == 'X')) {
        int sum = 0;
        for (int i = 0; i < 9; i++)
            sum += (i + 1) * (d[i] - '0');
        sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
        return sum % 11 == 0;
    }
    if (version == 13 && n == 13 && digits(d, 13)) {
        int sum = 0;
        for (int i = 0; i < 12; i++)
            sum += (i % 2 ? 3 : 1) * (d[i] - '0');
        return (d[12] - '0') == (10 - sum % 10) % 10;
    }
    return false;
}

bool ck__format_valid(const char *format_in, const char *s)
{
    /* go-openapi's normalisation: "date-time" is "datetime" */
    char format[32];
    size_t n = 0;
    for (const char *p = format_in; *p && n + 1 < sizeof(format); p++)
        if (*p != '-')
            format[n++] = *p;
    format[n] = '\0';
    if (strcmp(format, "byte") == 0)
        return is_base64(s);
    if (strcmp(format, "date") == 0)
        return is_date(s, strlen(s));
    if (strcmp(format, "datetime") == 0)
        return is_date_time(s);
    if (strcmp(format, "duration") == 0)
        return is_duration(s);
    if (strcmp(format, "uuid") == 0)
        return is_uuid(s, 0);
    if (strcmp(format, "uuid3") == 0)
        return is_uuid(s, '3');
    if (strcmp(format, "uuid4") == 0)
        return is_uuid(s, '4');
    if (strcmp(format, "uuid5") == 0)
        return is_uuid(s, '5');
    if (strcmp(format, "email") == 0)
        return is_email(s);
    if (strcmp(format, "hostname") == 0)
        return is_hostname(s);
    if (strcmp(format, "ipv4") == 0)
        return is_ipv4(s);
    if (strcmp(format, "ipv6") == 0)
        return is_ipv6(s);
    if (strcmp(format, "cidr") == 0)
        return is_cidr(s);
    if (strcmp(format, "mac") == 0)
        return is_mac(s);
    if (strcmp(format, "uri") == 0)
        return is_uri(s);
    if (strcmp(format, "hexcolor") == 0)
        return is_hexcolor(s);
    if (strcmp(format, "rgbcolor") == 0)
        return is_rgbcolor(s);
    if (strcmp(format, "ssn") == 0)
        return is_ssn(s);
    if (strcmp(format, "isbn") == 0)
        return is_isbn(s, 10) || is_isbn(s, 13);
    if (strcmp(format, "isbn10") == 0)
        return is_isbn(s, 10);
    if (strcmp(format, "isbn13") == 0)
        return is_isbn(s, 13);
    if (strcmp(format, "bsonobjectid") == 0)
        return strlen(s) == 24 && all_chars(s, 24, isxdigit);
    return true; /* password, creditcard, and the formats apiextensions strips */
}

/* ---- patterns ----------------------------------------------------------- */

#define PATTERN_CACHE_MAX 256

struct cached_pattern {
    char *pattern;
    struct ck__regex *re; /* NULL: Go refuses the pattern, for the reason in error */
    char *error;
};

static struct cached_pattern pattern_cache[PATTERN_CACHE_MAX];
static size_t pattern_cache_len;
static pthread_mutex_t pattern_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The cached compilation of pattern, compiling and adding it when there is room; or NULL. */
static const struct cached_pattern *cached(const char *pattern, bool *nomem)
{
    const struct cached_pattern *found = NULL;
    pthread_mutex_lock(&pattern_cache_lock);
    for (size_t i = 0; i < pattern_cache_len && !found; i++)
        if (strcmp(pattern_cache[i].pattern, pattern) == 0)
            found = &pattern_cache[i];
    if (!found && pattern_cache_len < PATTERN_CACHE_MAX) {
        struct cached_pattern *entry = &pattern_cache[pattern_cache_len];
        entry->pattern = ck__strdup(pattern);
        entry->re = NULL;
        entry->error = NULL;
        int r = entry->pattern
                    ? ck__regex_compile(pattern, strlen(pattern), &entry->re, &entry->error)
                    : CK_ENOMEM;
        if (r == CK_ENOMEM || (r < 0 && !entry->error)) {
            /* not the pattern's fault: do not remember it */
            free(entry->pattern);
            entry->pattern = NULL;
            *nomem = true;
        } else {
            found = entry;
            pattern_cache_len++;
        }
    }
    pthread_mutex_unlock(&pattern_cache_lock);
    return found;
}

/* What searching s for re answers ck__pattern_match(). */
static int search(const struct ck__regex *re, const char *s, bool *nomem)
{
    int r = ck__regex_search(re, s, strlen(s));
    if (r == CK_ENOMEM)
        *nomem = true;
    return r;
}

int ck__pattern_match(const char *pattern, const char *s, char **ret_error, bool *nomem)
{
    const struct cached_pattern *entry = cached(pattern, nomem);
    if (entry) {
        if (entry->re)
            return search(entry->re, s, nomem);
        if (ret_error)
            *ret_error = ck__strdup(entry->error);
        return CK__PATTERN_INVALID;
    }
    if (*nomem)
        return CK_ENOMEM;
    struct ck__regex *re = NULL;
    char *error = NULL;
    int r = ck__regex_compile(pattern, strlen(pattern), &re, &error);
    if (r == CK_ENOMEM || (r < 0 && !error)) {
        *nomem = true;
        return CK_ENOMEM;
    }
    if (r < 0) {
        if (ret_error)
            *ret_error = error;
        else
            free(error);
        return CK__PATTERN_INVALID;
    }
    r = search(re, s, nomem);
    ck__regex_free(re);
    return r;
}
