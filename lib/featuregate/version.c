/*
 * version.c - versions (V1), the emulation window (V7, V8, P2, V9) and the
 * small helpers every file of the library shares (errors, logging, buffers).
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

int ck__fg_errf(struct ck_fg_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

void ck__fg_logf(const struct ck_fg_gate *g, int v, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!g || !g->log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    g->log(g->log_ud, v, line);
}

void ck__fg_buf_printf(struct ck__fg_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!b->ok)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->ok = false;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap ? b->cap * 2 : 256;
        while (ncap - b->len <= (size_t)n)
            ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->ok = false;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

char *ck__fg_buf_take(struct ck__fg_buf *b)
{
    if (b->ok && !b->p)
        ck__fg_buf_printf(b, "%s", "");
    if (!b->ok) {
        free(b->p);
        b->p = NULL;
        return NULL;
    }
    char *p = b->p;
    b->p = NULL;
    return p;
}

int ck__fg_pairs_add(struct ck__fg_pairs *p, const char *name, size_t namelen, bool value)
{
    if (p->n == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 8;
        struct ck_fg_pair *nv = realloc(p->v, ncap * sizeof(*nv));
        if (!nv)
            return CK_FG_ENOMEM;
        p->v = nv;
        size_t *no = realloc(p->off, ncap * sizeof(*no));
        if (!no)
            return CK_FG_ENOMEM;
        p->off = no;
        p->cap = ncap;
    }
    if (!p->names.p && !p->names.len)
        p->names.ok = true;
    p->off[p->n] = p->names.len;
    ck__fg_buf_printf(&p->names, "%.*s", (int)namelen, name);
    p->names.len++; /* keep the terminating NUL */
    if (p->names.len >= p->names.cap)
        ck__fg_buf_printf(&p->names, "%s", ""); /* grow for the next one */
    if (!p->names.ok)
        return CK_FG_ENOMEM;
    p->v[p->n].name = NULL;
    p->v[p->n].value = value;
    p->n++;
    return 0;
}

int ck__fg_pairs_finish(struct ck__fg_pairs *p, int rc, struct ck_fg_pair **ret, size_t *ret_n,
                        char **ret_buf)
{
    if (rc < 0) {
        free(p->v);
        free(p->off);
        free(p->names.p);
        memset(p, 0, sizeof(*p));
        return rc;
    }
    for (size_t i = 0; i < p->n; i++)
        p->v[i].name = p->names.p + p->off[i];
    free(p->off);
    *ret = p->v;
    *ret_n = p->n;
    *ret_buf = p->names.p;
    memset(p, 0, sizeof(*p));
    return 0;
}

bool ck__fg_parse_bool(const char *s, bool *ret)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(s, t[i]) == 0) {
            *ret = true;
            return true;
        }
        if (strcmp(s, f[i]) == 0) {
            *ret = false;
            return true;
        }
    }
    return false;
}

void ck__fg_quote(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    if (n < 3) {
        if (n)
            buf[0] = '\0';
        return;
    }
    buf[o++] = '"';
    for (; *s && o + 6 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
}

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

    ck__fg_quote(s ? s : "", q, sizeof(q));
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

    ck__fg_quote(v, q, sizeof(q));
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
