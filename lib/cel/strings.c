/*
 * strings.c - the string functions Kubernetes 1.32 adds to CEL: cel-go's strings
 * extension at the version Kubernetes enables (ext.Strings: charAt, indexOf,
 * lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join) as
 * k8s.io/apiserver/pkg/cel's environment declares them.
 *
 * Indexes count code points, not bytes, as cel-go's do; out-of-range indexes are
 * errors ("index out of range: 7"). replace and split take an optional count with Go's
 * strings.Replace and strings.SplitN meaning (negative: all). trim removes Unicode white
 * space at both ends (Go's strings.TrimSpace).
 */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

/* Byte offset of code point index cp in s, or SIZE_MAX past the end. */
static size_t cp_offset(const char *s, size_t len, int64_t cp)
{
    if (cp < 0)
        return SIZE_MAX;
    size_t i = 0;
    for (int64_t k = 0; k < cp; k++) {
        if (i >= len)
            return SIZE_MAX;
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

static bool types_are(struct ck__cel_val **args, size_t nargs, const int *types)
{
    for (size_t i = 0; i < nargs; i++)
        if (args[i]->type != types[i])
            return false;
    return true;
}

static bool charge_len(struct ck__cel_eval *ev, const struct ck__cel_val *s)
{
    return ck__cel_charge(ev, 1 + s->s.len / 10);
}

FN(fn_char_at)
{
    static const int t[] = {CK_CEL_STRING, CK_CEL_INT};
    if (!types_are(args, nargs, t))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0];
    if (!charge_len(ev, s))
        return ck__cel_fatal(ev);
    size_t at = cp_offset(s->s.p, s->s.len, args[1]->i);
    if (at == SIZE_MAX)
        return ck__cel_errorf(ev, "index out of range: %lld", (long long)args[1]->i);
    size_t end = at;
    if (end < s->s.len) {
        end++;
        while (end < s->s.len && ((unsigned char)s->s.p[end] & 0xC0) == 0x80)
            end++;
    }
    return ck__cel_str(ev, CK_CEL_STRING, s->s.p + at, end - at);
}

static int64_t cp_index(const char *s, size_t byte)
{
    return (int64_t)ck__cel_utf8_len(s, byte);
}

static struct ck__cel_val *index_common(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                        struct ck__cel_val **args, size_t nargs, bool last)
{
    static const int t[] = {CK_CEL_STRING, CK_CEL_STRING, CK_CEL_INT};
    if (args[0]->type == CK_CEL_LIST && nargs == 2)
        return ck__cel_list_index(ev, args, last);
    if (!types_are(args, nargs, t))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0], *sub = args[1];
    if (!charge_len(ev, s))
        return ck__cel_fatal(ev);
    int64_t size = (int64_t)ck__cel_utf8_len(s->s.p, s->s.len);
    int64_t off = nargs == 3 ? args[2]->i : (last ? size : 0);
    if (off < 0 || off > size)
        return ck__cel_errorf(ev, "index out of range: %lld", (long long)off);
    if (sub->s.len == 0)
        return ck__cel_int(ev, off);
    size_t from = cp_offset(s->s.p, s->s.len, off);
    if (!last) {
        const char *hit = memmem(s->s.p + from, s->s.len - from, sub->s.p, sub->s.len);
        return ck__cel_int(ev, hit ? cp_index(s->s.p, (size_t)(hit - s->s.p)) : -1);
    }
    /* the last match starting at or before the offset */
    for (size_t i = from + 1; i-- > 0;) {
        if (i + sub->s.len <= s->s.len && !memcmp(s->s.p + i, sub->s.p, sub->s.len) &&
            ((unsigned char)s->s.p[i] & 0xC0) != 0x80)
            return ck__cel_int(ev, cp_index(s->s.p, i));
    }
    return ck__cel_int(ev, -1);
}

FN(fn_index_of)
{
    return index_common(ev, call, args, nargs, false);
}

FN(fn_last_index_of)
{
    return index_common(ev, call, args, nargs, true);
}

static struct ck__cel_val *ascii_case(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                      struct ck__cel_val **args, size_t nargs, bool upper)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    if (!charge_len(ev, args[0]))
        return ck__cel_fatal(ev);
    struct ck__cel_val *r = ck__cel_str(ev, CK_CEL_STRING, args[0]->s.p, args[0]->s.len);
    if (ck__cel_is_error(r))
        return r;
    char *p = (char *)r->s.p;
    for (size_t i = 0; i < r->s.len; i++) {
        if (upper && p[i] >= 'a' && p[i] <= 'z')
            p[i] = (char)(p[i] - 'a' + 'A');
        else if (!upper && p[i] >= 'A' && p[i] <= 'Z')
            p[i] = (char)(p[i] - 'A' + 'a');
    }
    return r;
}

FN(fn_lower)
{
    return ascii_case(ev, call, args, nargs, false);
}

FN(fn_upper)
{
    return ascii_case(ev, call, args, nargs, true);
}

FN(fn_replace)
{
    static const int t[] = {CK_CEL_STRING, CK_CEL_STRING, CK_CEL_STRING, CK_CEL_INT};
    if (!types_are(args, nargs, t))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0], *old = args[1], *rep = args[2];
    int64_t limit = nargs == 4 ? args[3]->i : -1;
    if (!charge_len(ev, s))
        return ck__cel_fatal(ev);
    struct ck__buf b = {.max = CK_CEL_MEMORY_LIMIT};
    size_t i = 0;
    int64_t done = 0;
    while (i <= s->s.len && (limit < 0 || done < limit)) {
        const char *hit;
        if (old->s.len == 0) {
            /* Go: an empty old matches before every code point and at the end */
            hit = s->s.p + i;
        } else {
            hit = memmem(s->s.p + i, s->s.len - i, old->s.p, old->s.len);
            if (!hit)
                break;
        }
        size_t at = (size_t)(hit - s->s.p);
        ck__buf_add(&b, s->s.p + i, at - i);
        ck__buf_add(&b, rep->s.p, rep->s.len);
        done++;
        if (old->s.len == 0) {
            if (at >= s->s.len) {
                i = s->s.len + 1;
                break;
            }
            size_t next = at + 1;
            while (next < s->s.len && ((unsigned char)s->s.p[next] & 0xC0) == 0x80)
                next++;
            ck__buf_add(&b, s->s.p + at, next - at);
            i = next;
        } else {
            i = at + old->s.len;
        }
        if (!ck__cel_charge(ev, 1 + rep->s.len / 10)) {
            ck__buf_release(&b);
            return ck__cel_fatal(ev);
        }
    }
    if (i < s->s.len)
        ck__buf_add(&b, s->s.p + i, s->s.len - i);
    if (b.err) {
        ev->fatal = b.err == CK_ENOMEM ? CK_ENOMEM : CK_CEL_ECOST;
        ck__buf_release(&b);
        return ck__cel_fatal(ev);
    }
    struct ck__cel_val *r = ck__cel_str(ev, CK_CEL_STRING, b.p ? b.p : "", b.len);
    ck__buf_release(&b);
    return r;
}

FN(fn_split)
{
    static const int t[] = {CK_CEL_STRING, CK_CEL_STRING, CK_CEL_INT};
    if (!types_are(args, nargs, t))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0], *sep = args[1];
    int64_t limit = nargs == 3 ? args[2]->i : -1;
    if (!charge_len(ev, s))
        return ck__cel_fatal(ev);
    if (limit == 0)
        return ck__cel_list(ev, 0);
    /* at most one piece per code point (+1) */
    size_t most = ck__cel_utf8_len(s->s.p, s->s.len) + 1;
    if (!ck__cel_charge(ev, most / 10))
        return ck__cel_fatal(ev);
    struct ck__cel_val *l = ck__cel_list(ev, most);
    if (ck__cel_is_error(l))
        return l;
    size_t n = 0, i = 0;
    while (i < s->s.len || (sep->s.len && n == 0 && i == s->s.len)) {
        if (limit > 0 && (int64_t)n == limit - 1)
            break;
        size_t at, next;
        if (sep->s.len == 0) {
            at = i + 1;
            while (at < s->s.len && ((unsigned char)s->s.p[at] & 0xC0) == 0x80)
                at++;
            next = at;
        } else {
            const char *hit = memmem(s->s.p + i, s->s.len - i, sep->s.p, sep->s.len);
            if (!hit)
                break;
            at = (size_t)(hit - s->s.p);
            next = at + sep->s.len;
        }
        struct ck__cel_val *piece = ck__cel_str(ev, CK_CEL_STRING, s->s.p + i, at - i);
        if (ck__cel_is_error(piece))
            return piece;
        l->list.v[n++] = piece;
        i = next;
        if (sep->s.len == 0 && i >= s->s.len) {
            l->list.n = n;
            return l;
        }
    }
    struct ck__cel_val *rest = ck__cel_str(ev, CK_CEL_STRING, s->s.p + i, s->s.len - i);
    if (ck__cel_is_error(rest))
        return rest;
    l->list.v[n++] = rest;
    l->list.n = n;
    return l;
}

FN(fn_substring)
{
    static const int t[] = {CK_CEL_STRING, CK_CEL_INT, CK_CEL_INT};
    if (!types_are(args, nargs, t))
        return NO_OVERLOAD();
    const struct ck__cel_val *s = args[0];
    if (!charge_len(ev, s))
        return ck__cel_fatal(ev);
    int64_t size = (int64_t)ck__cel_utf8_len(s->s.p, s->s.len);
    int64_t start = args[1]->i, end = nargs == 3 ? args[2]->i : size;
    if (start < 0 || start > size)
        return ck__cel_errorf(ev, "index out of range: %lld", (long long)start);
    if (end < 0 || end > size)
        return ck__cel_errorf(ev, "index out of range: %lld", (long long)end);
    if (start > end)
        return ck__cel_errorf(ev, "invalid substring range. start: %lld, end: %lld",
                              (long long)start, (long long)end);
    size_t a = cp_offset(s->s.p, s->s.len, start), b = cp_offset(s->s.p, s->s.len, end);
    return ck__cel_str(ev, CK_CEL_STRING, s->s.p + a, b - a);
}

/* Length of the Unicode white space character at s (Go's unicode.IsSpace), else 0. */
static size_t space_at(const unsigned char *s, size_t n)
{
    if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
        return 1;
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
        return 2;
    if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
        return 3;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
        return 3;
    if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;
    return 0;
}

/* Length of the white space character ending at s[n-1], else 0. */
static size_t space_before(const unsigned char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++)
        if (space_at(s + n - k, k) == k)
            return k;
    return 0;
}

FN(fn_trim)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    const unsigned char *p = (const unsigned char *)args[0]->s.p;
    size_t a = 0, b = args[0]->s.len, k;
    if (!charge_len(ev, args[0]))
        return ck__cel_fatal(ev);
    while (a < b && (k = space_at(p + a, b - a)) > 0)
        a += k;
    while (b > a && (k = space_before(p + a, b - a)) > 0)
        b -= k;
    return ck__cel_str(ev, CK_CEL_STRING, args[0]->s.p + a, b - a);
}

FN(fn_join)
{
    if (args[0]->type != CK_CEL_LIST || (nargs == 2 && args[1]->type != CK_CEL_STRING))
        return NO_OVERLOAD();
    const struct ck__cel_val *l = args[0];
    const char *sep = nargs == 2 ? args[1]->s.p : "";
    size_t seplen = nargs == 2 ? args[1]->s.len : 0;
    size_t total = 0;
    for (size_t i = 0; i < l->list.n; i++) {
        if (l->list.v[i]->type != CK_CEL_STRING)
            return ck__cel_no_overload(ev, "join", (struct ck__cel_val **)&l->list.v[i], 1);
        total += l->list.v[i]->s.len + seplen;
    }
    if (!ck__cel_charge(ev, 1 + total / 10))
        return ck__cel_fatal(ev);
    struct ck__cel_val *r = ck__cel_str(ev, CK_CEL_STRING, "", 0);
    if (ck__cel_is_error(r))
        return r;
    char *p = ck__cel_alloc(ev->arena, total + 1);
    if (!p)
        return ck__cel_alloc_failed(ev, total);
    size_t n = 0;
    for (size_t i = 0; i < l->list.n; i++) {
        if (i) {
            memcpy(p + n, sep, seplen);
            n += seplen;
        }
        memcpy(p + n, l->list.v[i]->s.p, l->list.v[i]->s.len);
        n += l->list.v[i]->s.len;
    }
    p[n] = '\0';
    r->s.p = p;
    r->s.len = n;
    return r;
}

#define M CK__CEL_MEMBER

/* Overloads of the functions below for the type checker (check.c). */
#define INDEX_OF_SIG "string.(string)->int;string.(string, int)->int;list(A).(A)->int"
#define REPLACE_SIG  "string.(string, string)->string;string.(string, string, int)->string"
#define SPLIT_SIG    "string.(string)->list(string);string.(string, int)->list(string)"

const struct ck__cel_func ck__cel_strings_lib[] = {
    {"charAt", M, 2, 2, fn_char_at, "string.(int)->string"},
    {"indexOf", M, 2, 3, fn_index_of, INDEX_OF_SIG},
    {"lastIndexOf", M, 2, 3, fn_last_index_of, INDEX_OF_SIG},
    {"lowerAscii", M, 1, 1, fn_lower, "string.()->string"},
    {"upperAscii", M, 1, 1, fn_upper, "string.()->string"},
    {"replace", M, 3, 4, fn_replace, REPLACE_SIG},
    {"split", M, 2, 3, fn_split, SPLIT_SIG},
    {"substring", M, 2, 3, fn_substring, "string.(int)->string;string.(int, int)->string"},
    {"trim", M, 1, 1, fn_trim, "string.()->string"},
    {"join", M, 1, 2, fn_join, "list(string).()->string;list(string).(string)->string"},
};
const size_t ck__cel_strings_lib_len = sizeof(ck__cel_strings_lib) / sizeof(ck__cel_strings_lib[0]);
