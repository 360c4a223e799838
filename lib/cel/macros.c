/*
 * macros.c - CEL's macros and the binding of calls to functions, the compile step
 * after parsing (google/cel-spec doc/langdef.md "Macros"; cel-go parser/macro.go for
 * which call shapes are macros).
 *
 * has(a.f) becomes a selection that only tests for presence. e.all(x, p),
 * e.exists(x, p), e.exists_one(x, p), e.map(x, f), e.map(x, p, f) and e.filter(x, p)
 * become comprehension nodes that eval.c runs directly with cel-go's semantics (all
 * is false if any p is false, else an error if any p erred; exists the reverse;
 * exists_one, map and filter pass errors on); o.optMap(x, f) and o.optFlatMap(x, f) of
 * optional values too. A call of another shape is an ordinary call.
 *
 * Every other call is then bound to its function here, so an unknown function is a
 * compile error, as cel-go's checker makes it, and so are a literal pattern of
 * matches(), find() or findAll() that does not compile and a literal duration or
 * timestamp that does not parse (Kubernetes' literal validators, 1.29+).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

static const struct {
    const char *name;
    enum ck__cel_macro macro;
    size_t nargs; /* receiver included */
} macros[] = {
    {"all", M_ALL, 3},
    {"exists", M_EXISTS, 3},
    {"exists_one", M_EXISTS_ONE, 3},
    {"map", M_MAP, 3},
    {"map", M_MAP, 4},
    {"filter", M_FILTER, 3},
    {"optMap", M_OPT_MAP, 3},
    {"optFlatMap", M_OPT_FLAT_MAP, 3},
};

struct ck__cel_node *ck__cel_expand_macro(struct ck__cel_parser *p, struct ck__cel_node *call)
{
    const char *name = call->call.name;
    if (!call->call.member) {
        if (strcmp(name, "has") || call->call.nargs != 1)
            return call;
        struct ck__cel_node *arg = call->call.args[0];
        if (arg->kind != N_SELECT || arg->sel.optional)
            return ck__cel_parse_error(p, arg->pos, "invalid argument to has() macro");
        arg->sel.test_only = true;
        return arg;
    }
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
        if (strcmp(name, macros[i].name) || call->call.nargs != macros[i].nargs)
            continue;
        struct ck__cel_node *var = call->call.args[1];
        if (var->kind != N_IDENT)
            return ck__cel_parse_error(p, var->pos, "argument must be a simple name");
        struct ck__cel_node *n = ck__cel_node_new(p, N_COMPREHENSION, call->pos);
        if (!n)
            return NULL;
        n->comp.macro = macros[i].macro;
        n->comp.var = var->name;
        n->comp.range = call->call.args[0];
        if (macros[i].macro == M_MAP || macros[i].macro == M_OPT_MAP ||
            macros[i].macro == M_OPT_FLAT_MAP) {
            n->comp.fn = call->call.args[call->call.nargs - 1];
            n->comp.pred = call->call.nargs == 4 ? call->call.args[2] : NULL;
        } else {
            n->comp.pred = call->call.args[2];
        }
        return ck__cel_node_done(p, n) ? n : NULL;
    }
    return call;
}

static const struct {
    const struct ck__cel_func *table;
    const size_t *len;
} libs[] = {
    {ck__cel_stdlib, &ck__cel_stdlib_len},
    {ck__cel_strings_lib, &ck__cel_strings_lib_len},
    {ck__cel_regex_lib, &ck__cel_regex_lib_len},
    {ck__cel_format_lib, &ck__cel_format_lib_len},
    {ck__cel_lists_lib, &ck__cel_lists_lib_len},
    {ck__cel_optional_lib, &ck__cel_optional_lib_len},
    {ck__cel_sets_lib, &ck__cel_sets_lib_len},
    {ck__cel_net_lib, &ck__cel_net_lib_len},
    {ck__cel_quantity_lib, &ck__cel_quantity_lib_len},
    {ck__cel_authz_lib, &ck__cel_authz_lib_len},
};

const struct ck__cel_func *ck__cel_lookup(const char *name, bool member, size_t nargs)
{
    for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++)
        for (size_t i = 0; i < *libs[l].len; i++) {
            const struct ck__cel_func *f = &libs[l].table[i];
            if (!strcmp(f->name, name) && (f->style & (member ? CK__CEL_MEMBER : CK__CEL_GLOBAL)) &&
                nargs >= f->min && nargs <= f->max)
                return f;
        }
    return NULL;
}

size_t ck__cel_named(const char *name, const struct ck__cel_func **ret, size_t max)
{
    size_t n = 0;
    for (size_t l = 0; l < sizeof(libs) / sizeof(libs[0]); l++)
        for (size_t i = 0; i < *libs[l].len && n < max; i++)
            if (!strcmp(libs[l].table[i].name, name))
                ret[n++] = &libs[l].table[i];
    return n;
}

/*
 * matches(), find() and findAll() with a literal pattern: compiled once here, as Kubernetes' regex
 * library does, so a bad pattern is a compile error and evaluation does not compile again.
 */
static bool precompile(struct ck__cel_parser *p, struct ck__cel_node *n)
{
    /* literal durations and timestamps are checked now, as Kubernetes 1.29+ does */
    if (!n->call.member && n->call.nargs == 1 && n->call.args[0]->kind == N_STRING &&
        (!strcmp(n->call.name, "duration") || !strcmp(n->call.name, "timestamp"))) {
        const struct ck__cel_node *lit = n->call.args[0];
        int64_t sec;
        int32_t nsec;
        bool ok = n->call.name[0] == 'd'
                      ? ck__cel_parse_duration(lit->str.p, lit->str.len, &sec, &nsec) &&
                            ck__cel_duration_ok(sec, nsec)
                      : strlen(lit->str.p) == lit->str.len &&
                            ck__cel_parse_timestamp(lit->str.p, &sec, &nsec) &&
                            sec >= -62135596800LL && sec <= 253402300799LL;
        if (!ok) {
            ck__cel_parse_error(p, lit->pos, "invalid %s literal: %.*s", n->call.name,
                                (int)(lit->str.len > 64 ? 64 : lit->str.len), lit->str.p);
            return false;
        }
        return true;
    }
    bool regex = false;
    for (size_t i = 0; i < ck__cel_regex_lib_len; i++)
        regex = regex || n->call.fn == &ck__cel_regex_lib[i];
    if (!regex || n->call.nargs < 2 || n->call.args[1]->kind != N_STRING)
        return true;
    const struct ck__cel_node *pat = n->call.args[1];
    struct ck_cel_program *prog = p->prog;
    void **grown = ck__realloc(prog->caches, (prog->ncaches + 1) * sizeof(*grown));
    if (!grown) {
        ck__cel_parse_error(p, n->pos, "out of memory");
        return false;
    }
    prog->caches = grown;
    struct ck__regex *re = NULL;
    char *why = NULL;
    int r = ck__regex_compile(pat->str.p, pat->str.len, &re, &why);
    if (r) {
        ck__cel_parse_error(p, pat->pos, "%s",
                            r == CK_ENOMEM ? "out of memory"
                            : why          ? why
                                           : "invalid regex");
        free(why);
        return false;
    }
    prog->caches[prog->ncaches++] = re;
    n->call.cache = re;
    return true;
}

static bool is_named(const char *name, bool member)
{
    for (size_t n = 0; n <= 4; n++)
        if (ck__cel_lookup(name, member, n))
            return true;
    return false;
}

bool ck__cel_resolve(struct ck__cel_parser *p, struct ck__cel_node *n)
{
    switch (n->kind) {
    case N_SELECT:
        return ck__cel_resolve(p, n->sel.operand);
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++)
            if (!ck__cel_resolve(p, n->list.items[i]))
                return false;
        return true;
    case N_MAP:
        for (size_t i = 0; i < n->map.n; i++)
            if (!ck__cel_resolve(p, n->map.keys[i]) || !ck__cel_resolve(p, n->map.vals[i]))
                return false;
        return true;
    case N_COMPREHENSION:
        return ck__cel_resolve(p, n->comp.range) &&
               (!n->comp.pred || ck__cel_resolve(p, n->comp.pred)) &&
               (!n->comp.fn || ck__cel_resolve(p, n->comp.fn));
    case N_CALL:
        for (size_t i = 0; i < n->call.nargs; i++)
            if (!ck__cel_resolve(p, n->call.args[i]))
                return false;
        if (n->call.op != OP_FUNC)
            return true;
        n->call.fn = ck__cel_lookup(n->call.name, n->call.member, n->call.nargs);
        if (n->call.fn)
            return precompile(p, n);
        if (n->call.member && n->call.args[0]->kind == N_IDENT) {
            /* a namespaced function: strings.quote(s) */
            char qualified[128];
            snprintf(qualified, sizeof(qualified), "%s.%s", n->call.args[0]->name, n->call.name);
            const struct ck__cel_func *f = ck__cel_lookup(qualified, false, n->call.nargs - 1);
            if (f) {
                n->call.fn = f;
                n->call.member = false;
                n->call.args++;
                n->call.nargs--;
                return true;
            }
        }
        if (is_named(n->call.name, n->call.member))
            ck__cel_parse_error(p, n->pos,
                                "found no matching overload for '%s' applied to %zu arguments",
                                n->call.name, n->call.nargs);
        else
            ck__cel_parse_error(p, n->pos, "undeclared reference to '%s' (in container '')",
                                n->call.name);
        return false;
    default:
        return true;
    }
}
