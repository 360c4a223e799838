/*
 * formats.c - the string formats and the `pattern` keyword of custom
 * resource schemas, as apiextensions validates them.
 *
 * Formats: the ones apiextensions keeps (it strips every other format from
 * a CRD's schema before validating): byte, date, date-time (and datetime),
 * duration, uuid, uuid3, uuid4, uuid5, email, hostname, ipv4, ipv6, cidr,
 * mac, uri, hexcolor, bsonobjectid and password; isbn, isbn10, isbn13,
 * creditcard, ssn and rgbcolor are accepted unchecked
 * (docs/differences.md). Any other format name is not checked at all, as
 * Kubernetes strips it.
 *
 * Patterns are Go (RE2) regular expressions searched anywhere in the value.
 * They are translated to POSIX extended expressions (regcomp): the escapes
 * \d \w \s and their negations become classes; what POSIX cannot say (lazy
 * quantifiers, (?i) flags, look-arounds) makes the pattern invalid.
 *
 * Compiled patterns are kept in a process-wide cache (the first 256
 * distinct patterns; later ones are compiled for each use): compiling one
 * costs more than the rest of a custom resource's validation. Entries are
 * never removed, so a found entry stays valid without the lock; glibc's
 * regexec() may run on one regex_t from several threads.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <pthread.h>
#include <regex.h>
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

/* Standard base64 with padding, as Go's base64.StdEncoding decodes it. */
static bool is_base64(const char *s)
{
    size_t n = strlen(s);
    if (n % 4 != 0)
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

/* YYYY-MM-DD with a real day of the month. */
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

/* hh:mm:ss[.frac] */
static bool is_time(const char *s, size_t *used)
{
    if (strlen(s) < 8 || s[2] != ':' || s[5] != ':' || !digits(s, 2) || !digits(s + 3, 2) ||
        !digits(s + 6, 2))
        return false;
    if (atoi(s) > 23 || atoi(s + 3) > 59 || atoi(s + 6) > 59)
        return false;
    size_t i = 8;
    if (s[i] == '.') {
        size_t start = ++i;
        while (isdigit((unsigned char)s[i]))
            i++;
        if (i == start)
            return false;
    }
    *used = i;
    return true;
}

/*
 * RFC 3339 date-time, as strfmt accepts it: a date, 'T' (or 't' or ' '), a
 * time, and a zone (Z or +hh:mm) - or no zone at all (ISO 8601 local time).
 */
static bool is_date_time(const char *s)
{
    if (strlen(s) < 19 || !is_date(s, 10) || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
        return false;
    size_t used;
    if (!is_time(s + 11, &used))
        return false;
    const char *zone = s + 11 + used;
    if (*zone == '\0' || ((*zone == 'Z' || *zone == 'z') && zone[1] == '\0'))
        return true;
    return (zone[0] == '+' || zone[0] == '-') && strlen(zone) == 6 && digits(zone + 1, 2) &&
           zone[3] == ':' && digits(zone + 4, 2);
}

/*
 * strfmt's durations: Go's time.ParseDuration syntax ("1h30m", "-1.5s"), or
 * one or more "<number> <unit>" with the long unit names ("3 days").
 */
static bool is_duration(const char *s)
{
    static const char *const units[] = {"ns", "us", "µs", "ms", "s", "m", "h", NULL};
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (strcmp(p, "0") == 0)
        return true;
    bool go_syntax = *p != '\0';
    while (*p && go_syntax) {
        const char *start = p;
        while (isdigit((unsigned char)*p) || *p == '.')
            p++;
        if (p == start) {
            go_syntax = false;
            break;
        }
        size_t best = 0;
        for (size_t i = 0; units[i]; i++) {
            size_t len = strlen(units[i]);
            if (strncmp(p, units[i], len) == 0 && len > best)
                best = len;
        }
        if (!best)
            go_syntax = false;
        p += best;
    }
    if (go_syntax)
        return true;
    /* the long form: (\d+)\s*([A-Za-zµ]+), repeated */
    static const char *const words[] = {"ns", "nano", "us", "µs",  "micro", "ms", "milli",
                                        "s",  "sec",  "m",  "min", "h",     "hr", "hour",
                                        "d",  "day",  "w",  "wk",  "week",  NULL};
    p = s;
    bool any = false;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (isdigit((unsigned char)*p))
            p++;
        if (p == start)
            return false;
        while (*p == ' ' || *p == '\t')
            p++;
        start = p;
        while (isalpha((unsigned char)*p) || (unsigned char)*p >= 0x80)
            p++;
        size_t len = (size_t)(p - start);
        bool known = false;
        for (size_t i = 0; words[i] && !known; i++) {
            size_t wl = strlen(words[i]);
            /* a plural "s" is allowed after the name */
            known = (len == wl || (len == wl + 1 && start[wl] == 's')) &&
                    strncmp(start, words[i], wl) == 0;
        }
        if (!known)
            return false;
        any = true;
    }
    return any;
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

/* Letters, digits, and what Go's \p{S}\p{L} allow beyond ASCII (any UTF-8 byte). */
static bool host_char(unsigned char c)
{
    return isalnum(c) || c >= 0x80;
}

/* strfmt's hostname: labels of up to 63 characters, at most 255 in all, a letter TLD. */
static bool is_hostname(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return false;
    const char *label = s;
    size_t labels = 0;
    for (;;) {
        const char *dot = strchr(label, '.');
        size_t len = dot ? (size_t)(dot - label) : strlen(label);
        if (len == 0 || len > 63)
            return false;
        if (!host_char((unsigned char)label[0]) || !host_char((unsigned char)label[len - 1]))
            return false;
        for (size_t i = 0; i < len; i++)
            if (!host_char((unsigned char)label[i]) && label[i] != '-')
                return false;
        labels++;
        if (!dot) {
            if (labels > 1) { /* the last label of a dotted name: 2-63 letters */
                if (len < 2)
                    return false;
                for (size_t i = 0; i < len; i++)
                    if (!isalpha((unsigned char)label[i]) && (unsigned char)label[i] < 0x80)
                        return false;
            }
            return true;
        }
        label = dot + 1;
    }
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

static bool is_ipv4(const char *s)
{
    struct in_addr a;
    return inet_pton(AF_INET, s, &a) == 1;
}

static bool is_ipv6(const char *s)
{
    struct in6_addr a;
    return strchr(s, ':') && inet_pton(AF_INET6, s, &a) == 1;
}

static bool is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || slash[1] == '\0' || strlen(slash + 1) > 3 ||
        !digits(slash + 1, strlen(slash + 1)))
        return false;
    char ip[64];
    size_t len = (size_t)(slash - s);
    if (len >= sizeof(ip))
        return false;
    memcpy(ip, s, len);
    ip[len] = '\0';
    int bits = atoi(slash + 1);
    if (is_ipv4(ip))
        return bits <= 32;
    return is_ipv6(ip) && bits <= 128;
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
    if (s[0] == '/')
        return strchr(s, ' ') == NULL;
    if (!isalpha((unsigned char)s[0]))
        return false;
    const char *p = s + 1;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    if (*p != ':')
        return false;
    for (const char *q = s; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return false;
    return true;
}

static bool is_hexcolor(const char *s)
{
    size_t n = strlen(s);
    return s[0] == '#' && (n == 4 || n == 7) && all_chars(s + 1, n - 1, isxdigit);
}

bool ck__format_valid(const char *format, const char *s)
{
    if (strcmp(format, "byte") == 0)
        return is_base64(s);
    if (strcmp(format, "date") == 0)
        return is_date(s, strlen(s));
    if (strcmp(format, "date-time") == 0 || strcmp(format, "datetime") == 0)
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
    if (strcmp(format, "bsonobjectid") == 0)
        return strlen(s) == 24 && all_chars(s, 24, isxdigit);
    return true; /* password, the unchecked ones, and formats Kubernetes strips */
}

/* ---- patterns ----------------------------------------------------------- */

/*
 * Limits: a pattern of more than 4096 bytes, or whose {m,n} counts add up to
 * more than 1000 (RE2's limit for one count), is invalid - glibc would build
 * an automaton of that product's size.
 */
#define CK__PATTERN_MAX        4096
#define CK__PATTERN_REPEAT_MAX 1000

/*
 * Translates a Go regular expression into a POSIX extended one. Returns a
 * new string, or NULL when the pattern uses what POSIX cannot express (or
 * memory runs out: *nomem is then set).
 */
static char *translate_pattern(const char *pattern, bool *nomem)
{
    struct ck__buf b = {0};
    bool in_class = false;
    long repeats = 0; /* the counts of every {m,n}: glibc expands them into its automaton */
    if (strlen(pattern) > CK__PATTERN_MAX)
        return NULL;
    for (const char *p = pattern; *p; p++) {
        if (*p == '{' && !in_class && (p == pattern || p[-1] != '\\')) {
            for (const char *d = p + 1; isdigit((unsigned char)*d) || *d == ','; d++)
                if (isdigit((unsigned char)*d) && !isdigit((unsigned char)d[-1])) {
                    repeats += strtol(d, NULL, 10) > CK__PATTERN_REPEAT_MAX
                                   ? CK__PATTERN_REPEAT_MAX + 1
                                   : strtol(d, NULL, 10);
                }
            if (repeats > CK__PATTERN_REPEAT_MAX)
                goto invalid;
        }
        if (*p == '\\') {
            char c = p[1];
            if (c == '\0')
                goto invalid;
            p++;
            const char *class = NULL;
            switch (c) {
            case 'd':
                class = in_class ? "[:digit:]" : "[[:digit:]]";
                break;
            case 'D':
                class = in_class ? NULL : "[^[:digit:]]";
                break;
            case 'w':
                class = in_class ? "[:alnum:]_" : "[[:alnum:]_]";
                break;
            case 'W':
                class = in_class ? NULL : "[^[:alnum:]_]";
                break;
            case 's':
                class = in_class ? "[:space:]" : "[[:space:]]";
                break;
            case 'S':
                class = in_class ? NULL : "[^[:space:]]";
                break;
            case 'n':
                class = "\n";
                break;
            case 't':
                class = "\t";
                break;
            default:
                if (isalnum((unsigned char)c))
                    goto invalid; /* \b, \pL, \x41, backreferences...: not in POSIX ERE */
                if (in_class) {
                    if (c == ']' || c == '^' || c == '-')
                        goto invalid; /* cannot be escaped inside a POSIX class */
                    ck__buf_printf(&b, "%c", c);
                } else {
                    ck__buf_printf(&b, "\\%c", c);
                }
                continue;
            }
            if (!class)
                goto invalid;
            ck__buf_adds(&b, class);
            continue;
        }
        if (in_class) {
            if (*p == '[' && p[1] == ':') { /* a POSIX class inside: copy through ":]" */
                const char *end = strstr(p + 2, ":]");
                if (!end)
                    goto invalid;
                ck__buf_printf(&b, "%.*s", (int)(end + 2 - p), p);
                p = end + 1;
                continue;
            }
            if (*p == ']')
                in_class = false;
            ck__buf_printf(&b, "%c", *p);
            continue;
        }
        if (*p == '[') {
            in_class = true;
            ck__buf_adds(&b, "[");
            if (p[1] == '^') {
                ck__buf_adds(&b, "^");
                p++;
            }
            if (p[1] == ']') { /* a leading ] is literal in both syntaxes */
                ck__buf_adds(&b, "]");
                p++;
            }
            continue;
        }
        if (*p == '(' && p[1] == '?') {
            if (p[2] == ':') { /* non-capturing group: a plain group does the same */
                ck__buf_adds(&b, "(");
                p += 2;
                continue;
            }
            goto invalid; /* flags, named groups */
        }
        if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '?')
            goto invalid; /* lazy quantifiers */
        if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') &&
            (p[1] == '*' || p[1] == '+' || p[1] == '{'))
            goto invalid; /* Go: invalid nested repetition operator */
        ck__buf_printf(&b, "%c", *p);
    }
    if (in_class)
        goto invalid;
    char *out = ck__buf_take(&b);
    if (!out)
        *nomem = true;
    return out;
invalid:
    ck__buf_release(&b);
    return NULL;
}

static int pattern_compile(const char *pattern, regex_t *re, bool *nomem)
{
    char *posix = translate_pattern(pattern, nomem);
    if (!posix)
        return -1;
    int r = regcomp(re, posix, REG_EXTENDED | REG_NOSUB);
    free(posix);
    return r == 0 ? 0 : -1;
}

#define PATTERN_CACHE_MAX 256

struct cached_pattern {
    char *pattern;
    bool valid;
    regex_t re;
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
        bool no_memory = false;
        entry->pattern = strdup(pattern);
        if (entry->pattern) {
            entry->valid = pattern_compile(pattern, &entry->re, &no_memory) == 0;
            if (no_memory) { /* not the pattern's fault: do not remember it */
                free(entry->pattern);
                entry->pattern = NULL;
                *nomem = true;
            } else {
                found = entry;
                pattern_cache_len++;
            }
        }
    }
    pthread_mutex_unlock(&pattern_cache_lock);
    return found;
}

int ck__pattern_match(const char *pattern, const char *s, bool *nomem)
{
    const struct cached_pattern *entry = cached(pattern, nomem);
    if (entry)
        return !entry->valid ? -1 : regexec(&entry->re, s, 0, NULL, 0) == 0 ? 1 : 0;
    regex_t re;
    if (pattern_compile(pattern, &re, nomem) < 0)
        return -1;
    int r = regexec(&re, s, 0, NULL, 0);
    regfree(&re);
    return r == 0 ? 1 : 0;
}
