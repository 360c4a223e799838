/*
 * quantity.c - resource.Quantity as numbers: "500m", "2", "128Mi", "1e3".
 *
 * Mirrors k8s.io/apimachinery/pkg/api/resource: a decimal number (sign,
 * digits, an optional fraction) and one suffix: binary (Ki Mi Gi Ti Pi Ei),
 * decimal SI (n u m k M G T P E, none) or a decimal exponent (e3, E-2).
 * ck_quantity_milli() answers MilliValue(): the quantity times 1000,
 * rounded up, as the scheduler and kubelet compare cpu in millicores.
 *
 * Limits: values whose milli value does not fit in int64 (about 9.2e15
 * units, 8 PiB) are refused with CK_EINVAL; at most 38 significant digits.
 *
 * Threading: pure.
 *
 * Tested by tests/api/test_quantity.c and fuzzed by fuzz/fuzz_quantity.c.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* 10^e for 0 <= e <= 38 in 128 bits. */
static unsigned __int128 pow10_128(int e)
{
    unsigned __int128 v = 1;
    while (e-- > 0)
        v *= 10;
    return v;
}

/* The suffix's multiplier as base^exp: binary (base 2) or decimal (base 10). */
static bool parse_suffix(const char *s, int *ret_base, int *ret_exp)
{
    static const struct {
        const char *suffix;
        int base, exp;
    } suffixes[] = {
        {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},
        {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
        {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    };
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcmp(s, suffixes[i].suffix) == 0) {
            *ret_base = suffixes[i].base;
            *ret_exp = suffixes[i].exp;
            return true;
        }
    }
    if (s[0] != 'e' && s[0] != 'E')
        return false;
    const char *p = s + 1;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!*p || strlen(p) > 3)
        return false;
    int exp = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        exp = exp * 10 + (*p - '0');
    }
    *ret_base = 10;
    *ret_exp = negative ? -exp : exp;
    return true;
}

int ck_quantity_milli(const char *s, int64_t *ret_milli)
{
    if (!s || !*s)
        return CK_EINVAL;
    const char *p = s;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    unsigned __int128 mantissa = 0;
    int digits = 0, fraction = 0;
    bool seen_point = false, any = false;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !seen_point); p++) {
        if (*p == '.') {
            seen_point = true;
            continue;
        }
        any = true;
        if (mantissa == 0 && *p == '0') {
            if (seen_point)
                fraction++;
            continue;
        }
        if (++digits > 38)
            return CK_EINVAL;
        mantissa = mantissa * 10 + (unsigned)(*p - '0');
        if (seen_point)
            fraction++;
    }
    int base = 10, exp = 0;
    if (!any || !parse_suffix(p, &base, &exp))
        return CK_EINVAL;
    /* value = mantissa * 10^-fraction * base^exp; milli = ceil(value * 1000) */
    int ten = 3 - fraction;
    unsigned __int128 num = mantissa, den = 1;
    if (base == 2) {
        for (int i = 0; i < exp; i++) {
            num *= 2;
            if (num > ((unsigned __int128)1 << 100))
                return CK_EINVAL;
        }
    } else {
        ten += exp;
    }
    if (ten > 0) {
        if (ten > 30)
            return mantissa ? CK_EINVAL : (*ret_milli = 0, 0);
        unsigned __int128 scale = pow10_128(ten);
        if (num > ~(unsigned __int128)0 / scale)
            return CK_EINVAL;
        num *= scale;
    } else if (ten < 0) {
        if (-ten > 38)
            den = 0; /* below one milli-unit: any non-zero value rounds up to 1 */
        else
            den = pow10_128(-ten);
    }
    unsigned __int128 milli = den ? (num + den - 1) / den : (num ? 1 : 0);
    if (milli > (unsigned __int128)INT64_MAX)
        return CK_EINVAL;
    int64_t v = (int64_t)milli;
    *ret_milli = negative ? -v : v;
    return 0;
}
