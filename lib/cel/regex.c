/*
 * regex.c - regular expressions in CEL: the standard matches() and Kubernetes' regex
 * library, find() and findAll() (k8s.io/apiserver/pkg/cel/library/regex.go).
 *
 * All three are Go's regexp (RE2 syntax) through the project's one regex engine,
 * ck__regex (lib/util/regex.cc), the same one CRD `pattern`s use. A literal pattern is
 * compiled once with the program (macros.c); a computed one at each call. find()
 * gives the leftmost-first match or ""; findAll(re[, n]) gives the matches Go's
 * FindAllString gives: after an empty match the search moves one character on, and an
 * empty match right after the previous match is not reported.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* The call's compiled pattern (from the program, or compiled now into *own), or an error. */
static struct ck__cel_val *pattern(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                   const struct ck__cel_val *p, const struct ck__regex **ret,
                                   struct ck__regex **own)
{
    *own = NULL;
    if (call->call.cache) {
        *ret = call->call.cache;
        return NULL;
    }
    if (!ck__cel_charge(ev, 1 + p->s.len))
        return ck__cel_fatal(ev);
    char *why = NULL;
    int r = ck__regex_compile(p->s.p, p->s.len, own, &why);
    if (r) {
        struct ck__cel_val *e;
        if (r == CK_ENOMEM) {
            ev->fatal = CK_ENOMEM;
            e = ck__cel_fatal(ev);
        } else {
            e = ck__cel_errorf(ev, "%s", why ? why : "invalid regex");
        }
        free(why);
        return e;
    }
    *ret = *own;
    return NULL;
}

static bool strings(struct ck__cel_val **args)
{
    return args[0]->type == CK_CEL_STRING && args[1]->type == CK_CEL_STRING;
}

static struct ck__cel_val *fn_matches(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                      struct ck__cel_val **args, size_t nargs)
{
    if (!strings(args))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    const struct ck__cel_val *s = args[0];
    if (!ck__cel_charge(ev, 1 + s->s.len / 10))
        return ck__cel_fatal(ev);
    const struct ck__regex *re = NULL;
    struct ck__regex *own;
    struct ck__cel_val *err = pattern(ev, call, args[1], &re, &own);
    if (err)
        return err;
    int found = ck__regex_search(re, s->s.p, s->s.len);
    ck__regex_free(own);
    if (found < 0) {
        ev->fatal = CK_ENOMEM;
        return ck__cel_fatal(ev);
    }
    return ck__cel_bool(found == 1);
}

static struct ck__cel_val *fn_find(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                   struct ck__cel_val **args, size_t nargs)
{
    if (!strings(args))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    const struct ck__cel_val *s = args[0];
    if (!ck__cel_charge(ev, 1 + s->s.len / 10))
        return ck__cel_fatal(ev);
    const struct ck__regex *re = NULL;
    struct ck__regex *own;
    struct ck__cel_val *err = pattern(ev, call, args[1], &re, &own);
    if (err)
        return err;
    size_t a = 0, b = 0;
    int found = ck__regex_find(re, s->s.p, s->s.len, 0, &a, &b);
    ck__regex_free(own);
    if (found < 0) {
        ev->fatal = CK_ENOMEM;
        return ck__cel_fatal(ev);
    }
    return ck__cel_str(ev, CK_CEL_STRING, s->s.p + a, found ? b - a : 0);
}

static struct ck__cel_val *fn_find_all(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                       struct ck__cel_val **args, size_t nargs)
{
    if (!strings(args) || (nargs == 3 && args[2]->type != CK_CEL_INT))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    const struct ck__cel_val *s = args[0];
    int64_t limit = nargs == 3 ? args[2]->i : -1;
    if (!ck__cel_charge(ev, 1 + s->s.len / 10))
        return ck__cel_fatal(ev);
    if (limit == 0)
        return ck__cel_list(ev, 0);
    const struct ck__regex *re = NULL;
    struct ck__regex *own;
    struct ck__cel_val *err = pattern(ev, call, args[1], &re, &own);
    if (err)
        return err;
    /* at most one match per position, and one past the end */
    struct ck__cel_val *l = ck__cel_list(ev, s->s.len + 1);
    size_t n = 0, pos = 0, prev_end = SIZE_MAX;
    while (!ck__cel_is_error(l) && pos <= s->s.len && (limit < 0 || (int64_t)n < limit)) {
        size_t a, b;
        int found = ck__regex_find(re, s->s.p, s->s.len, pos, &a, &b);
        if (found < 0) {
            ev->fatal = CK_ENOMEM;
            l = ck__cel_fatal(ev);
            break;
        }
        if (!found)
            break;
        bool accept = true;
        if (b == pos) { /* an empty match: step over one character */
            if (a == prev_end)
                accept = false;
            pos++;
            while (pos < s->s.len && ((unsigned char)s->s.p[pos] & 0xC0) == 0x80)
                pos++;
        } else {
            pos = b;
        }
        prev_end = b;
        if (!accept)
            continue;
        if (!ck__cel_charge(ev, 1)) {
            l = ck__cel_fatal(ev);
            break;
        }
        struct ck__cel_val *m = ck__cel_str(ev, CK_CEL_STRING, s->s.p + a, b - a);
        if (ck__cel_is_error(m)) {
            l = m;
            break;
        }
        l->list.v[n++] = m;
    }
    ck__regex_free(own);
    if (!ck__cel_is_error(l))
        l->list.n = n;
    return l;
}

/* Overloads of the functions below for the type checker (check.c). */
#define MATCHES_SIG  "string.(string)->bool;(string, string)->bool"
#define FIND_ALL_SIG "string.(string)->list(string);string.(string, int)->list(string)"

const struct ck__cel_func ck__cel_regex_lib[] = {
    {"matches", CK__CEL_GLOBAL | CK__CEL_MEMBER, 2, 2, fn_matches, MATCHES_SIG},
    {"find", CK__CEL_MEMBER, 2, 2, fn_find, "string.(string)->string"},
    {"findAll", CK__CEL_MEMBER, 2, 3, fn_find_all, FIND_ALL_SIG},
};
const size_t ck__cel_regex_lib_len = sizeof(ck__cel_regex_lib) / sizeof(ck__cel_regex_lib[0]);
