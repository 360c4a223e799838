/*
 * version.c - versions (V1), the emulation window (V7, V8, P2, V9) and the
 * names of the stages.
 *
 * Mirrors apimachinery pkg/util/version (generic parsing: numbers, then
 * anything) and component-base compatibility's EffectiveVersion.Validate.
 * Threading: pure functions, callable from any thread.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *ck_fg_stage_string(enum ck_fg_stage s)
{
    switch (s) {
    case CK_FG_ALPHA:
        return "ALPHA";
    case CK_FG_BETA:
        return "BETA";
    case CK_FG_GA:
        return "";
    case CK_FG_DEPRECATED:
        return "DEPRECATED";
    case CK_FG_PREALPHA:
        break;
    }
    return "PRE-ALPHA";
}

const char *ck_fg_stage_list_name(enum ck_fg_stage s)
{
    switch (s) {
    case CK_FG_ALPHA:
        return "Alpha";
    case CK_FG_BETA:
        return "Beta";
    case CK_FG_GA:
        return "GA";
    case CK_FG_DEPRECATED:
        return "Deprecated";
    case CK_FG_PREALPHA:
        break;
    }
    return "PreAlpha";
}

struct ck_fg_version ck_fg_version_mm(uint32_t major, uint32_t minor)
{
    struct ck_fg_version v = {.major = major, .minor = minor, .patch = 0, .ncomp = 2};
    return v;
}

struct ck_fg_version ck_fg_version_sub_minor(struct ck_fg_version v, uint32_t n)
{
    return ck_fg_version_mm(v.major, v.minor > n ? v.minor - n : 0);
}

int ck_fg_version_parse(const char *s, struct ck_fg_version *ret, struct ck_fg_err *reterr)
{
    struct ck_fg_version v = {0};
    const char *p = s;
    char q[96];

    ck__quote(s ? s : "", q, sizeof(q));
    if (!s)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "could not parse \"\" as version");
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
        p++;
    if (*p == 'v')
        p++;
    unsigned ncomp = 0;
    for (;;) {
        if (!isdigit((unsigned char)*p))
            break;
        const char *start = p;
        unsigned long long x = 0;
        while (isdigit((unsigned char)*p)) {
            x = x * 10 + (unsigned)(*p - '0');
            if (x > UINT32_MAX)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "illegal version string %s: component out of range", q);
            p++;
        }
        if (ncomp == 0 && *start == '0' && p - start > 1)
            return ck__fg_errf(reterr, CK_FG_EINVAL,
                               "illegal zero-prefixed version component in %s", q);
        if (ncomp == 0)
            v.major = (uint32_t)x;
        else if (ncomp == 1)
            v.minor = (uint32_t)x;
        else if (ncomp == 2)
            v.patch = (uint32_t)x;
        ncomp++;
        if (*p == '.' && isdigit((unsigned char)p[1]))
            p++;
        else
            break;
    }
    if (ncomp < 2)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "could not parse %s as version", q);
    v.ncomp = (uint8_t)(ncomp > 255 ? 255 : ncomp);
    *ret = v;
    return 0;
}

int ck_fg_version_cmp(struct ck_fg_version a, struct ck_fg_version b)
{
    if (a.major != b.major)
        return a.major < b.major ? -1 : 1;
    if (a.minor != b.minor)
        return a.minor < b.minor ? -1 : 1;
    if (a.patch != b.patch)
        return a.patch < b.patch ? -1 : 1;
    return 0;
}

char *ck_fg_version_fmt(struct ck_fg_version v, char *buf, size_t n)
{
    if (v.ncomp >= 3)
        snprintf(buf, n, "%u.%u.%u", v.major, v.minor, v.patch);
    else
        snprintf(buf, n, "%u.%u", v.major, v.minor);
    return buf;
}

int ck_fg_window_check(struct ck_fg_version binary, struct ck_fg_version emulated,
                       const struct ck_fg_version *min_compat, struct ck_fg_version *ret_min_compat,
                       struct ck_fg_err *reterr)
{
    struct ck_fg_version bin = ck_fg_version_mm(binary.major, binary.minor);
    struct ck_fg_version floor = ck_fg_version_sub_minor(bin, 3);
    struct ck_fg_version first = ck_fg_version_mm(1, 31); /* emulation arrived in 1.31 */
    char e[32], f[32], b[32], m[32];

    if (ck_fg_version_cmp(floor, first) < 0)
        floor = first;
    if (ck_fg_version_cmp(floor, bin) > 0)
        floor = bin;
    ck_fg_version_fmt(floor, f, sizeof(f));
    ck_fg_version_fmt(emulated, e, sizeof(e));
    snprintf(b, sizeof(b), "%u.%u.0", bin.major, bin.minor);
    struct ck_fg_version emu = ck_fg_version_mm(emulated.major, emulated.minor);
    if (ck_fg_version_cmp(emu, floor) < 0 || ck_fg_version_cmp(emu, bin) > 0)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "emulation version %s is not between [%s, %s]", e,
                           f, b);
    struct ck_fg_version mc;
    if (min_compat) {
        mc = ck_fg_version_mm(min_compat->major, min_compat->minor);
        if (ck_fg_version_cmp(mc, floor) < 0 || ck_fg_version_cmp(mc, emu) > 0)
            return ck__fg_errf(reterr, CK_FG_EINVAL,
                               "minCompatibilityVersion version %s is not between [%s, %s]",
                               ck_fg_version_fmt(*min_compat, m, sizeof(m)), f, e);
    } else {
        mc = ck_fg_version_sub_minor(emu, 1);
        if (ck_fg_version_cmp(mc, floor) < 0)
            mc = floor; /* V8 */
    }
    if (ret_min_compat)
        *ret_min_compat = mc;
    return 0;
}

int ck_fg_emulated_version_parse(const char *s, struct ck_fg_version *ret, struct ck_fg_err *reterr)
{
    const char *v = s ? s : "";
    char q[96];
    struct ck_fg_version ver;

    ck__quote(v, q, sizeof(q));
    if (strchr(v, ',') || strchr(v, ' '))
        return ck__fg_errf(reterr, CK_FG_EINVAL, "invalid emulated version %s", q);
    const char *eq = strchr(v, '=');
    if (eq) {
        if ((size_t)(eq - v) != 4 || strncmp(v, "kube", 4) != 0)
            return ck__fg_errf(reterr, CK_FG_EINVAL, "component not registered: %.*s",
                               (int)(eq - v), v);
        v = eq + 1;
    }
    /* The registry parses each value strictly: numbers only, optional v. */
    const char *p = v[0] == 'v' ? v + 1 : v;
    for (const char *c = p; *c; c++)
        if (!isdigit((unsigned char)*c) && *c != '.')
            return ck__fg_errf(reterr, CK_FG_EINVAL, "invalid emulated version %s", q);
    struct ck_fg_err e;
    if (ck_fg_version_parse(v, &ver, &e) < 0 || ver.ncomp > 3)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "invalid emulated version %s", q);
    if (ver.ncomp == 3 && ver.patch != 0)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "patch version not allowed, got: kube=%s", v);
    *ret = ck_fg_version_mm(ver.major, ver.minor);
    return 0;
}
