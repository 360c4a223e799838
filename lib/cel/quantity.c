/*
 * quantity.c - Kubernetes' quantity library for CEL (k8s.io/apiserver/pkg/cel/library/
 * quantity.go, enabled from Kubernetes 1.28): quantity(s), isQuantity(s), and on a
 * quantity isInteger(), asInteger(), asApproximateFloat(), sign(), add(q or int),
 * sub(q or int), isLessThan(q), isGreaterThan(q), compareTo(q); == compares values.
 *
 * A quantity is read as apimachinery's resource.ParseQuantity reads one: a signed
 * decimal number (1, 1.5, .5, 5.) and a suffix, binary (Ki Mi Gi Ti Pi Ei), decimal
 * (n u m k M G T P E) or an exponent (e3, E-2). Its value is kept exactly as
 * mantissa x 10^exponent with a 128-bit mantissa without trailing zeros, so 1.5Ki and
 * 1536 are the same quantity. Kubernetes' decimals are unbounded: here a number of
 * more than 38 significant digits, or a sum that leaves the 128-bit range, is an error
 * (docs/cel.md).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

static void normalize(__int128 *m, int32_t *e)
{
    if (*m == 0) {
        *e = 0;
        return;
    }
    while (*m % 10 == 0) {
        *m /= 10;
        (*e)++;
    }
}

/* Parses a quantity; true and its value, or false. */
static bool parse(const char *s, size_t n, __int128 *ret_m, int32_t *ret_e)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    __int128 m = 0;
    int32_t e = 0;
    size_t digits = 0, significant = 0;
    bool dot = false;
    for (; i < n; i++) {
        if (s[i] == '.' && !dot) {
            dot = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            break;
        digits++;
        if (m == 0 && s[i] == '0') {
            if (dot)
                e--;
            continue;
        }
        if (++significant > 38)
            return false;
        m = m * 10 + (s[i] - '0');
        if (dot)
            e--;
    }
    if (!digits)
        return false;
    const char *suffix = s + i;
    size_t slen = n - i;
    static const struct {
        const char *text;
        int exp10, exp2;
    } suffixes[] = {{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
                    {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
                    {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
                    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}};
    size_t k;
    for (k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++)
        if (strlen(suffixes[k].text) == slen && !memcmp(suffixes[k].text, suffix, slen))
            break;
    if (k < sizeof(suffixes) / sizeof(suffixes[0])) {
        e += suffixes[k].exp10;
        for (int b = 0; b < suffixes[k].exp2; b++)
            if (__builtin_mul_overflow(m, 2, &m))
                return false;
    } else if (slen >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
        size_t j = 1;
        bool eneg = false;
        if (suffix[j] == '+' || suffix[j] == '-')
            eneg = suffix[j++] == '-';
        if (j == slen)
            return false;
        int32_t x = 0;
        for (; j < slen; j++) {
            if (suffix[j] < '0' || suffix[j] > '9' || x > 100000)
                return false;
            x = x * 10 + (suffix[j] - '0');
        }
        e += eneg ? -x : x;
    } else {
        return false;
    }
    if (neg)
        m = -m;
    normalize(&m, &e);
    *ret_m = m;
    *ret_e = e;
    return true;
}

static int digits_of(__int128 m)
{
    int d = 0;
    while (m) { /* truncating division: negative values too, and no negation to overflow */
        m /= 10;
        d++;
    }
    return d;
}

static int sign_of(__int128 m)
{
    return (m > 0) - (m < 0);
}

/* -1, 0, 1: exact, whatever the exponents. */
static int compare(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    int sa = sign_of(a->q.m), sb = sign_of(b->q.m);
    if (sa != sb || sa == 0)
        return (sa > sb) - (sa < sb);
    long oa = (long)digits_of(a->q.m) + a->q.e, ob = (long)digits_of(b->q.m) + b->q.e;
    if (oa != ob)
        return oa > ob ? sa : -sa;
    /* the same order of magnitude: scaling the larger exponent down cannot overflow */
    __int128 ma = a->q.m, mb = b->q.m;
    for (int32_t e = a->q.e; e > b->q.e; e--)
        ma *= 10;
    for (int32_t e = b->q.e; e > a->q.e; e--)
        mb *= 10;
    return (ma > mb) - (ma < mb);
}

bool ck__cel_quantity_equal(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    return a->q.m == b->q.m && a->q.e == b->q.e; /* both normalized */
}

void ck__cel_format_quantity(const struct ck__cel_val *v, char *buf, size_t size)
{
    char digits[48];
    __int128 m = v->q.m;
    int n = 0;
    do {
        int d = (int)(m % 10);
        digits[n++] = (char)('0' + (d < 0 ? -d : d));
        m /= 10;
    } while (m);
    char text[64];
    int len = 0;
    for (int i = n - 1; i >= 0; i--)
        text[len++] = digits[i];
    text[len] = '\0';
    const char *sign = v->q.m < 0 ? "-" : "";
    int32_t e = v->q.e;
    if (e >= 0 && e <= 18)
        snprintf(buf, size, "%s%s%.*s", sign, text, (int)e, "000000000000000000");
    else if (e < 0 && -e < len)
        snprintf(buf, size, "%s%.*s.%s", sign, len + e, text, text + len + e);
    else if (e < 0 && -e - len <= 18)
        snprintf(buf, size, "%s0.%.*s%s", sign, (int)(-e - len), "000000000000000000", text);
    else
        snprintf(buf, size, "%s%se%d", sign, text, (int)e);
}

static struct ck__cel_val *make(struct ck__cel_eval *ev, __int128 m, int32_t e)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_QUANTITY);
    if (!ck__cel_is_error(v)) {
        normalize(&m, &e);
        v->q.m = m;
        v->q.e = e;
    }
    return v;
}

FN(fn_quantity)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    __int128 m;
    int32_t e;
    if (!parse(args[0]->s.p, args[0]->s.len, &m, &e))
        return ck__cel_errorf(ev, "quantities must match the regular expression "
                                  "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    return make(ev, m, e);
}

FN(fn_is_quantity)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    __int128 m;
    int32_t e;
    return ck__cel_bool(parse(args[0]->s.p, args[0]->s.len, &m, &e));
}

/* The value as an int64, when it is an integer that fits. */
static bool as_int64(const struct ck__cel_val *q, int64_t *ret)
{
    if (q->q.e < 0 || q->q.e > 19)
        return q->q.m == 0 ? (*ret = 0, true) : false;
    __int128 m = q->q.m;
    for (int32_t e = 0; e < q->q.e; e++)
        if (__builtin_mul_overflow(m, 10, &m))
            return false;
    if (m > INT64_MAX || m < INT64_MIN)
        return false;
    *ret = (int64_t)m;
    return true;
}

FN(fn_is_integer)
{
    if (args[0]->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    int64_t i;
    return ck__cel_bool(as_int64(args[0], &i));
}

FN(fn_as_integer)
{
    if (args[0]->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    int64_t i;
    if (!as_int64(args[0], &i))
        return ck__cel_errorf(ev, "cannot convert value to integer");
    return ck__cel_int(ev, i);
}

FN(fn_as_float)
{
    if (args[0]->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    return ck__cel_double(ev, (double)args[0]->q.m * pow(10.0, args[0]->q.e));
}

FN(fn_sign)
{
    if (args[0]->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    return ck__cel_int(ev, sign_of(args[0]->q.m));
}

static struct ck__cel_val *add(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                               struct ck__cel_val **args, size_t nargs, bool subtract)
{
    const struct ck__cel_val *a = args[0], *b = args[1];
    struct ck__cel_val tmp = {.type = CK_CEL_QUANTITY};
    if (a->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    if (b->type == CK_CEL_INT) {
        tmp.q.m = b->i;
        normalize(&tmp.q.m, &tmp.q.e);
        b = &tmp;
    } else if (b->type != CK_CEL_QUANTITY) {
        return NO_OVERLOAD();
    }
    __int128 ma = a->q.m, mb = subtract ? -b->q.m : b->q.m, sum;
    int32_t e = a->q.e < b->q.e ? a->q.e : b->q.e;
    for (int32_t x = a->q.e; x > e; x--)
        if (__builtin_mul_overflow(ma, 10, &ma))
            return ck__cel_errorf(ev, "quantity out of range");
    for (int32_t x = b->q.e; x > e; x--)
        if (__builtin_mul_overflow(mb, 10, &mb))
            return ck__cel_errorf(ev, "quantity out of range");
    if (__builtin_add_overflow(ma, mb, &sum))
        return ck__cel_errorf(ev, "quantity out of range");
    return make(ev, sum, e);
}

FN(fn_add)
{
    return add(ev, call, args, nargs, false);
}

FN(fn_sub)
{
    return add(ev, call, args, nargs, true);
}

static struct ck__cel_val *cmp(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                               struct ck__cel_val **args, size_t nargs, int want)
{
    if (args[0]->type != CK_CEL_QUANTITY || args[1]->type != CK_CEL_QUANTITY)
        return NO_OVERLOAD();
    int c = compare(args[0], args[1]);
    return want == 2 ? ck__cel_int(ev, c) : ck__cel_bool(c == want);
}

FN(fn_less)
{
    return cmp(ev, call, args, nargs, -1);
}

FN(fn_greater)
{
    return cmp(ev, call, args, nargs, 1);
}

FN(fn_compare)
{
    return cmp(ev, call, args, nargs, 2);
}

#define G CK__CEL_GLOBAL
#define M CK__CEL_MEMBER

/* The overloads below name the quantity type (check.c reads them). */
#define Q "kubernetes.Quantity"

const struct ck__cel_func ck__cel_quantity_lib[] = {
    {"quantity", G, 1, 1, fn_quantity, "(string)->" Q},
    {"isQuantity", G, 1, 1, fn_is_quantity, "(string)->bool"},
    {"isInteger", M, 1, 1, fn_is_integer, Q ".()->bool"},
    {"asInteger", M, 1, 1, fn_as_integer, Q ".()->int"},
    {"asApproximateFloat", M, 1, 1, fn_as_float, Q ".()->double"},
    {"sign", M, 1, 1, fn_sign, Q ".()->int"},
    {"add", M, 2, 2, fn_add, Q ".(" Q ")->" Q ";" Q ".(int)->" Q},
    {"sub", M, 2, 2, fn_sub, Q ".(" Q ")->" Q ";" Q ".(int)->" Q},
    {"isLessThan", M, 2, 2, fn_less, Q ".(" Q ")->bool"},
    {"isGreaterThan", M, 2, 2, fn_greater, Q ".(" Q ")->bool"},
    {"compareTo", M, 2, 2, fn_compare, Q ".(" Q ")->int"},
};
const size_t ck__cel_quantity_lib_len =
    sizeof(ck__cel_quantity_lib) / sizeof(ck__cel_quantity_lib[0]);
