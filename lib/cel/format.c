/*
 * format.c - string.format(list) and strings.quote(string), the formatting half of
 * cel-go's strings extension (the version Kubernetes 1.32 enables has both).
 *
 * format's clauses: %s (any value as text: strings bare, lists and maps with their
 * elements as %s writes them, map entries sorted by their text), %d (int, uint), %f and
 * %e (double, int, uint; precision as in %.3f, 6 by default; NaN and infinities as
 * "NaN", "Infinity", "-Infinity"), %b (int, uint, bool), %o (int, uint), %x and %X
 * (int, uint, and the bytes of a string or bytes), and %% for a percent sign. C's printf
 * rounds %f and %e as Go's fmt does (exactly, ties to even). Errors say what cel-go's say.
 *
 * quote writes a string as a double-quoted CEL string literal: \a \b \f \n \r \t \v \\
 * \" escaped, every other character as it is.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void double_text(struct ck__buf *b, double d)
{
    char buf[40];
    if (isnan(d))
        ck__buf_adds(b, "NaN");
    else if (isinf(d))
        ck__buf_adds(b, d > 0 ? "Infinity" : "-Infinity");
    else {
        ck__cel_format_double(d, buf, sizeof(buf));
        ck__buf_adds(b, buf);
    }
}

/* %s: v as text; false when it has none (an error value). */
static bool as_text(struct ck__buf *b, const struct ck__cel_val *v, int depth)
{
    char buf[64];
    if (depth > 100)
        return false;
    switch (v->type) {
    case CK_CEL_NULL:
        ck__buf_adds(b, "null");
        return true;
    case CK_CEL_BOOL:
        ck__buf_adds(b, v->b ? "true" : "false");
        return true;
    case CK_CEL_INT:
        ck__buf_printf(b, "%" PRId64, v->i);
        return true;
    case CK_CEL_UINT:
        ck__buf_printf(b, "%" PRIu64, v->u);
        return true;
    case CK_CEL_DOUBLE:
        double_text(b, v->d);
        return true;
    case CK_CEL_STRING:
    case CK_CEL_BYTES:
    case CK_CEL_TYPE:
        ck__buf_add(b, v->s.p, v->s.len);
        return true;
    case CK_CEL_DURATION:
        ck__cel_format_duration(v->t.sec, v->t.nsec, buf, sizeof(buf));
        ck__buf_adds(b, buf);
        return true;
    case CK_CEL_TIMESTAMP:
        ck__cel_format_timestamp(v->t.sec, v->t.nsec, buf, sizeof(buf));
        ck__buf_adds(b, buf);
        return true;
    case CK_CEL_LIST:
        ck__buf_adds(b, "[");
        for (size_t i = 0; i < v->list.n; i++) {
            if (i)
                ck__buf_adds(b, ", ");
            if (!as_text(b, v->list.v[i], depth + 1))
                return false;
        }
        ck__buf_adds(b, "]");
        return true;
    case CK_CEL_MAP: {
        char **entries = v->map.n ? calloc(v->map.n, sizeof(*entries)) : NULL;
        bool ok = !v->map.n || entries;
        for (size_t i = 0; ok && i < v->map.n; i++) {
            struct ck__buf e = {.max = b->max};
            ok = as_text(&e, v->map.k[i], depth + 1);
            ck__buf_adds(&e, ": ");
            ok = ok && as_text(&e, v->map.v[i], depth + 1);
            entries[i] = ck__buf_take(&e);
            ok = ok && entries[i];
        }
        if (ok && v->map.n)
            qsort(entries, v->map.n, sizeof(*entries), compare_text);
        ck__buf_adds(b, "{");
        for (size_t i = 0; i < v->map.n; i++) {
            if (ok)
                ck__buf_printf(b, "%s%s", i ? ", " : "", entries[i]);
            if (entries)
                free(entries[i]);
        }
        free(entries);
        ck__buf_adds(b, "}");
        if (!ok && !b->err)
            b->err = CK_ENOMEM;
        return true;
    }
    default:
        return false;
    }
}

static void binary(struct ck__buf *b, uint64_t u, bool neg)
{
    char buf[72];
    size_t n = sizeof(buf);
    buf[--n] = '\0';
    do {
        buf[--n] = (char)('0' + (u & 1));
        u >>= 1;
    } while (u);
    if (neg)
        buf[--n] = '-';
    ck__buf_adds(b, buf + n);
}

/* One clause; NULL or an error value. */
static struct ck__cel_val *clause(struct ck__cel_eval *ev, struct ck__buf *b, char verb, int prec,
                                  const struct ck__cel_val *v)
{
    const char *tn = ck__cel_type_name(v);
    switch (verb) {
    case 's':
        if (!as_text(b, v, 0))
            return ck__cel_errorf(ev, "error during formatting: no text for %s", tn);
        return NULL;
    case 'd':
        if (v->type == CK_CEL_INT)
            ck__buf_printf(b, "%" PRId64, v->i);
        else if (v->type == CK_CEL_UINT)
            ck__buf_printf(b, "%" PRIu64, v->u);
        else if (v->type == CK_CEL_DOUBLE && !isfinite(v->d))
            double_text(b, v->d);
        else
            return ck__cel_errorf(ev,
                                  "error during formatting: decimal clause can only be used on "
                                  "integers, was given %s",
                                  tn);
        return NULL;
    case 'f':
    case 'e': {
        double d;
        if (v->type == CK_CEL_DOUBLE)
            d = v->d;
        else if (v->type == CK_CEL_INT)
            d = (double)v->i;
        else if (v->type == CK_CEL_UINT)
            d = (double)v->u;
        else
            return ck__cel_errorf(ev,
                                  "error during formatting: %s clause can only be used on "
                                  "doubles, was given %s",
                                  verb == 'f' ? "fixed-point" : "scientific", tn);
        if (!isfinite(d))
            double_text(b, d);
        else
            ck__buf_printf(b, verb == 'f' ? "%.*f" : "%.*e", prec < 0 ? 6 : prec, d);
        return NULL;
    }
    case 'b':
        if (v->type == CK_CEL_INT)
            binary(b, v->i < 0 ? (uint64_t)0 - (uint64_t)v->i : (uint64_t)v->i, v->i < 0);
        else if (v->type == CK_CEL_UINT)
            binary(b, v->u, false);
        else if (v->type == CK_CEL_BOOL)
            binary(b, v->b, false);
        else
            return ck__cel_errorf(ev,
                                  "error during formatting: only integers and bools can be "
                                  "formatted as binary, was given %s",
                                  tn);
        return NULL;
    case 'o':
        if (v->type == CK_CEL_INT)
            ck__buf_printf(b, "%s%" PRIo64, v->i < 0 ? "-" : "",
                           v->i < 0 ? (uint64_t)0 - (uint64_t)v->i : (uint64_t)v->i);
        else if (v->type == CK_CEL_UINT)
            ck__buf_printf(b, "%" PRIo64, v->u);
        else
            return ck__cel_errorf(ev,
                                  "error during formatting: octal clause can only be used on "
                                  "integers, was given %s",
                                  tn);
        return NULL;
    case 'x':
    case 'X': {
        bool up = verb == 'X';
        if (v->type == CK_CEL_INT)
            ck__buf_printf(b, up ? "%s%" PRIX64 : "%s%" PRIx64, v->i < 0 ? "-" : "",
                           v->i < 0 ? (uint64_t)0 - (uint64_t)v->i : (uint64_t)v->i);
        else if (v->type == CK_CEL_UINT)
            ck__buf_printf(b, up ? "%" PRIX64 : "%" PRIx64, v->u);
        else if (v->type == CK_CEL_STRING || v->type == CK_CEL_BYTES)
            for (size_t i = 0; i < v->s.len; i++)
                ck__buf_printf(b, up ? "%02X" : "%02x", (unsigned char)v->s.p[i]);
        else
            return ck__cel_errorf(ev,
                                  "error during formatting: only integers, byte buffers, and "
                                  "strings can be formatted as hex, was given %s",
                                  tn);
        return NULL;
    }
    default:
        return ck__cel_errorf(ev,
                              "could not parse formatting clause: unrecognized formatting "
                              "clause \"%c\"",
                              verb);
    }
}

static struct ck__cel_val *fn_format(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                     struct ck__cel_val **args, size_t nargs)
{
    const struct ck__cel_val *f = args[0], *l = args[1];
    if (f->type != CK_CEL_STRING || l->type != CK_CEL_LIST)
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    if (!ck__cel_charge(ev, 1 + f->s.len / 10 + l->list.n))
        return ck__cel_fatal(ev);
    struct ck__buf b = {.max = CK_CEL_MEMORY_LIMIT / 4};
    struct ck__cel_val *err = NULL;
    size_t next = 0;
    for (size_t i = 0; i < f->s.len && !err; i++) {
        char c = f->s.p[i];
        if (c != '%') {
            ck__buf_add(&b, &c, 1);
            continue;
        }
        if (++i >= f->s.len) {
            err = ck__cel_errorf(ev, "could not parse formatting clause: unexpected end of "
                                     "string");
            break;
        }
        if (f->s.p[i] == '%') {
            ck__buf_adds(&b, "%");
            continue;
        }
        int prec = -1;
        if (f->s.p[i] == '.') {
            prec = 0;
            while (++i < f->s.len && f->s.p[i] >= '0' && f->s.p[i] <= '9' && prec < 1000)
                prec = prec * 10 + (f->s.p[i] - '0');
            if (i >= f->s.len) {
                err = ck__cel_errorf(ev, "could not parse formatting clause: unexpected end of "
                                         "string");
                break;
            }
        }
        if (next >= l->list.n) {
            err = ck__cel_errorf(ev, "index %zu out of range", next);
            break;
        }
        err = clause(ev, &b, f->s.p[i], prec, l->list.v[next++]);
    }
    if (!err && b.err) {
        ev->fatal = b.err == CK_ENOMEM ? CK_ENOMEM : CK_CEL_ECOST;
        err = ck__cel_fatal(ev);
    }
    if (!err && !ck__cel_charge(ev, b.len / 10))
        err = ck__cel_fatal(ev);
    if (!err)
        err = ck__cel_str(ev, CK_CEL_STRING, b.p ? b.p : "", b.len);
    ck__buf_release(&b);
    return err;
}

static struct ck__cel_val *fn_quote(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                    struct ck__cel_val **args, size_t nargs)
{
    const struct ck__cel_val *s = args[0];
    if (s->type != CK_CEL_STRING)
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    if (!ck__cel_charge(ev, 1 + s->s.len / 5))
        return ck__cel_fatal(ev);
    struct ck__buf b = {0};
    ck__buf_adds(&b, "\"");
    for (size_t i = 0; i < s->s.len; i++) {
        const char *esc = strchr("\a\b\f\n\r\t\v\\\"", s->s.p[i]);
        if (s->s.p[i] && esc)
            ck__buf_printf(&b, "\\%c", "abfnrtv\\\""[esc - "\a\b\f\n\r\t\v\\\""]);
        else
            ck__buf_add(&b, &s->s.p[i], 1);
    }
    ck__buf_adds(&b, "\"");
    struct ck__cel_val *r;
    if (b.err) {
        ev->fatal = CK_ENOMEM;
        r = ck__cel_fatal(ev);
    } else {
        r = ck__cel_str(ev, CK_CEL_STRING, b.p, b.len);
    }
    ck__buf_release(&b);
    return r;
}

const struct ck__cel_func ck__cel_format_lib[] = {
    {"format", CK__CEL_MEMBER, 2, 2, fn_format, "string.(list(dyn))->string"},
    {"strings.quote", CK__CEL_GLOBAL, 1, 1, fn_quote, "(string)->string"},
};
const size_t ck__cel_format_lib_len = sizeof(ck__cel_format_lib) / sizeof(ck__cel_format_lib[0]);
