/*
 * check.c - the static type checker: what cel-go's checker (checker/checker.go,
 * checker/types.go) finds at compile time, over variables whose types are declared
 * as Kubernetes declares them, from a structural OpenAPI schema
 * (k8s.io/apiserver 1.32 pkg/cel/common/schemas.go: SchemaDeclType) or by name.
 *
 * Types: the primitives, list, map, type, optional_type, null, dyn, duration,
 * timestamp, and named object types (the schema's objects with their fields, and
 * Kubernetes' net.IP, net.CIDR, kubernetes.Quantity and authorizer objects, which
 * have none). The overloads of every function are the `sig` of its entry in the
 * library tables (one per library file); the operators' are here. Resolution follows
 * cel-go: an overload matches when each argument is assignable to its parameter with
 * type parameters bound as it goes (dyn matches anything, null only the nullable
 * types); the first match gives the result type, and several matches of different
 * results give dyn. An expression with an error has the error type, which matches
 * anything, so that one mistake is reported once.
 *
 * Messages are cel-go's ("found no matching overload for '_+_' applied to '(int,
 * string)'", "undefined field 'foo'", "undeclared reference to 'x' (in container
 * '')"), each with its line, column and caret, sorted by position.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

enum kind {
    K_DYN,
    K_ERROR,
    K_NULL,
    K_BOOL,
    K_INT,
    K_UINT,
    K_DOUBLE,
    K_STRING,
    K_BYTES,
    K_DURATION,
    K_TIMESTAMP,
    K_TYPE,     /* p[0]: the type it names, NULL for any */
    K_LIST,     /* p[0] */
    K_MAP,      /* p[0], p[1] */
    K_OPTIONAL, /* p[0] */
    K_OBJECT,   /* name, fields */
    K_PARAM,    /* a type parameter of an overload: name */
};

struct ty {
    enum kind k;
    const char *name;
    struct ty *p[2];
    size_t nfields;
    const char **fnames;
    struct ty **ftypes;
    const json_t *schema; /* an object type's schema, until expand() made its fields */
    bool root;            /* that schema is a resource's root */
};

/* The types without parameters, named as cel-go formats them. */
#define SIMPLE(var, kind, text) static struct ty var = {.k = kind, .name = text}
SIMPLE(t_dyn, K_DYN, "dyn");
SIMPLE(t_error, K_ERROR, "!error!");
SIMPLE(t_null, K_NULL, "null");
SIMPLE(t_bool, K_BOOL, "bool");
SIMPLE(t_int, K_INT, "int");
SIMPLE(t_uint, K_UINT, "uint");
SIMPLE(t_double, K_DOUBLE, "double");
SIMPLE(t_string, K_STRING, "string");
SIMPLE(t_bytes, K_BYTES, "bytes");
SIMPLE(t_duration, K_DURATION, "duration");
SIMPLE(t_timestamp, K_TIMESTAMP, "timestamp");
SIMPLE(t_type, K_TYPE, "type");

/* What a signature or a declaration may name (null_type is null's other name). */
static struct ty *const simple[] = {&t_dyn,      &t_null,      &t_bool,   &t_int,
                                    &t_uint,     &t_double,    &t_string, &t_bytes,
                                    &t_duration, &t_timestamp, &t_type};

struct issue {
    size_t pos, seq; /* where, and in what order it was found */
    char *msg;
};

struct scope {
    const char *name;
    struct ty *t;
    struct scope *up;
};

/* Bindings of an overload's type parameters while it is tried. */
#define MAX_PARAMS 8
struct mapping {
    const char *name[MAX_PARAMS];
    struct ty *t[MAX_PARAMS];
    size_t n;
};

struct checker {
    struct ck__cel_arena arena;
    const char *src;
    size_t len;
    const struct ck_cel_decl *decls;
    struct ty **decl_types;
    size_t ndecls;
    struct scope *scope;
    struct issue *issues;
    size_t nissues, cap, truncated;
    bool nomem;
    /* the decls' $ref resolver (every decl that has one shares it) */
    const json_t *(*resolve)(const char *ref, void *arg);
    void *resolve_arg;
};

#define MAX_ISSUES 100

static struct ty *new_ty(struct checker *c, enum kind k, struct ty *a, struct ty *b)
{
    struct ty *t = ck__cel_alloc(&c->arena, sizeof(*t));
    if (!t) {
        c->nomem = true;
        return &t_error;
    }
    t->k = k;
    t->name = k == K_LIST       ? "list"
              : k == K_MAP      ? "map"
              : k == K_OPTIONAL ? "optional_type"
              : k == K_TYPE     ? "type"
                                : ""; /* objects and parameters: set by the caller */
    t->p[0] = a;
    t->p[1] = b;
    return t;
}

/* ---- formatting (checker/format.go: FormatCELType) ---------------------------- */

static void format(struct ck__buf *b, const struct ty *t)
{
    ck__buf_adds(b, t->name);
    size_t np = t->k == K_MAP ? 2 : t->k == K_LIST || t->k == K_OPTIONAL || t->p[0] ? 1 : 0;
    if (!np)
        return;
    ck__buf_adds(b, "(");
    for (size_t i = 0; i < np; i++) {
        if (i)
            ck__buf_adds(b, ", ");
        format(b, t->p[i]);
    }
    ck__buf_adds(b, ")");
}

static void issue(struct checker *c, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void issue(struct checker *c, size_t pos, const char *fmt, ...)
{
    if (c->nissues == MAX_ISSUES) { /* cel-go reports the first 100, then how many more */
        c->truncated++;
        return;
    }
    if (c->nissues == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        struct issue *grown = ck__realloc(c->issues, cap * sizeof(*grown));
        if (!grown) {
            c->nomem = true;
            return;
        }
        c->issues = grown;
        c->cap = cap;
    }
    struct ck__buf b = {.max = 4096};
    va_list ap;
    va_start(ap, fmt);
    ck__buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (!b.p) {
        c->nomem = true;
        return;
    }
    c->issues[c->nissues].pos = pos;
    c->issues[c->nissues].seq = c->nissues;
    c->issues[c->nissues++].msg = ck__buf_take(&b);
}

/* "expected type 'bool' but found 'int'" */
static void mismatch(struct checker *c, size_t pos, const struct ty *want, const struct ty *got)
{
    struct ck__buf a = {0}, b = {0};
    format(&a, want);
    format(&b, got);
    issue(c, pos, "expected type '%s' but found '%s'", a.p ? a.p : "", b.p ? b.p : "");
    ck__buf_release(&a);
    ck__buf_release(&b);
}

/* ---- assignability (checker/types.go) ----------------------------------------- */

static bool wild(const struct ty *t)
{
    return t->k == K_DYN || t->k == K_ERROR;
}

static struct ty **bound(struct mapping *m, const struct ty *param)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->name[i], param->name))
            return &m->t[i];
    return NULL;
}

static bool exact(const struct ty *a, const struct ty *b)
{
    if (a->k != b->k)
        return false;
    if (a->k == K_OBJECT || a->k == K_PARAM)
        return !strcmp(a->name, b->name);
    for (size_t i = 0; i < 2; i++)
        if ((a->p[i] != NULL) != (b->p[i] != NULL) || (a->p[i] && !exact(a->p[i], b->p[i])))
            return false;
    return true;
}

/* Whether a is as general as b or more (isEqualOrLessSpecific). */
static bool less_specific(const struct ty *a, const struct ty *b)
{
    if (a->k == K_DYN || a->k == K_PARAM)
        return true;
    if (b->k == K_DYN || b->k == K_PARAM || a->k != b->k)
        return false;
    switch (a->k) {
    case K_LIST:
    case K_OPTIONAL:
        return less_specific(a->p[0], b->p[0]);
    case K_MAP:
        return less_specific(a->p[0], b->p[0]) && less_specific(a->p[1], b->p[1]);
    case K_TYPE:
        return true;
    default:
        return exact(a, b);
    }
}

static struct ty *most_general(struct ty *a, struct ty *b)
{
    return less_specific(a, b) ? a : b;
}

static bool nullable(const struct ty *t)
{
    return t->k == K_NULL || t->k == K_OBJECT || t->k == K_OPTIONAL || t->k == K_DURATION ||
           t->k == K_TIMESTAMP;
}

static bool assignable(struct mapping *m, struct ty *t1, struct ty *t2);

/* t2 a parameter: binds it to t1, or widens its binding; false when they disagree. */
static bool substitution(struct mapping *m, struct ty *t1, struct ty *t2)
{
    struct ty **b = bound(m, t2);
    if (b) {
        if (!assignable(m, t1, *b))
            return false;
        *b = most_general(t1, *b);
        return true;
    }
    if (m->n == MAX_PARAMS)
        return false;
    m->name[m->n] = t2->name;
    m->t[m->n++] = t1;
    return true;
}

static bool assignable(struct mapping *m, struct ty *t1, struct ty *t2)
{
    if (t2->k == K_PARAM)
        return substitution(m, t1, t2);
    if (t1->k == K_PARAM)
        return substitution(m, t2, t1);
    if (wild(t1) || wild(t2))
        return true;
    if (t1->k == K_NULL)
        return nullable(t2);
    if (t2->k == K_NULL)
        return nullable(t1);
    if (t1->k != t2->k)
        return false;
    switch (t1->k) {
    case K_OBJECT:
        return !strcmp(t1->name, t2->name);
    case K_TYPE:
        return true;
    case K_LIST:
    case K_OPTIONAL:
        return assignable(m, t1->p[0], t2->p[0]);
    case K_MAP:
        return assignable(m, t1->p[0], t2->p[0]) && assignable(m, t1->p[1], t2->p[1]);
    default:
        return true;
    }
}

/* t with its bound parameters replaced, the unbound ones by dyn. */
static struct ty *substitute(struct checker *c, struct mapping *m, struct ty *t)
{
    if (t->k == K_PARAM) {
        struct ty **b = bound(m, t);
        return b ? substitute(c, m, *b) : &t_dyn;
    }
    if (t->k != K_LIST && t->k != K_MAP && t->k != K_OPTIONAL && !(t->k == K_TYPE && t->p[0]))
        return t;
    struct ty *a = substitute(c, m, t->p[0]);
    struct ty *b = t->p[1] ? substitute(c, m, t->p[1]) : NULL;
    if (a == t->p[0] && b == t->p[1])
        return t;
    return new_ty(c, t->k, a, b);
}

/* ---- signatures ---------------------------------------------------------------- */

/*
 * The overloads of the library tables' `sig` and of the operators below: overloads
 * separated by ';', each `(ARGS)->RESULT` or `RECEIVER.(ARGS)->RESULT`, types written
 * as cel-go formats them, one capital letter for a type parameter.
 */
static struct ty *parse_type(struct checker *c, const char **s)
{
    const char *p = *s, *start = p;
    while (*p && *p != '(' && *p != ')' && *p != ',' && *p != ';' && *p != '-' &&
           !(*p == '.' && p[1] == '('))
        p++;
    size_t n = (size_t)(p - start);
    struct ty *t = NULL;
    if (n == 1 && *start >= 'A' && *start <= 'Z') {
        t = new_ty(c, K_PARAM, NULL, NULL);
        if (t != &t_error)
            t->name = ck__cel_strndup(&c->arena, start, 1);
    }
    for (size_t i = 0; !t && i < sizeof(simple) / sizeof(simple[0]); i++)
        if (strlen(simple[i]->name) == n && !strncmp(simple[i]->name, start, n))
            t = simple[i];
    if (!t && n == 9 && !strncmp(start, "null_type", n))
        t = &t_null;
    enum kind k = n == 4 && !strncmp(start, "list", 4)             ? K_LIST
                  : n == 3 && !strncmp(start, "map", 3)            ? K_MAP
                  : n == 13 && !strncmp(start, "optional_type", n) ? K_OPTIONAL
                  : n == 4 && !strncmp(start, "type", 4)           ? K_TYPE
                                                                   : K_OBJECT;
    if (*p == '(' && k != K_OBJECT && !(p[1] == ')')) {
        p++;
        struct ty *a = parse_type(c, &p), *b = NULL;
        if (*p == ',') {
            p += *p && p[1] == ' ' ? 2 : 1;
            b = parse_type(c, &p);
        }
        if (*p == ')')
            p++;
        t = new_ty(c, k, a, b);
    } else if (!t) {
        t = new_ty(c, K_OBJECT, NULL, NULL);
        if (t != &t_error)
            t->name = ck__cel_strndup(&c->arena, start, n);
    }
    *s = p;
    return t;
}

struct overload {
    bool member;
    struct ty *args[4];
    size_t nargs; /* the receiver included */
    struct ty *result;
};

/* The next overload of *s into o; false at the end. */
static bool next_overload(struct checker *c, const char **s, struct overload *o)
{
    const char *p = *s;
    while (*p == ';' || *p == ' ')
        p++;
    if (!*p)
        return false;
    memset(o, 0, sizeof(*o));
    if (*p != '(') {
        o->member = true;
        o->args[o->nargs++] = parse_type(c, &p);
        if (*p == '.')
            p++;
    }
    p++; /* '(' */
    while (*p && *p != ')') {
        struct ty *t = parse_type(c, &p);
        if (o->nargs < 4)
            o->args[o->nargs++] = t;
        if (*p == ',')
            p += p[1] == ' ' ? 2 : 1;
    }
    if (*p == ')')
        p++;
    if (!strncmp(p, "->", 2))
        p += 2;
    o->result = parse_type(c, &p);
    *s = p;
    return true;
}

static const struct {
    enum ck__cel_op op;
    const char *name, *sig;
} operators[] = {
    {OP_COND, "_?_:_", "(bool, A, A)->A"},
    {OP_NOT, "!_", "(bool)->bool"},
    {OP_NEG, "-_", "(int)->int;(double)->double"},
    {OP_EQ, "_==_", "(A, A)->bool"},
    {OP_NE, "_!=_", "(A, A)->bool"},
#define ORDERING                                                                                   \
    "(bool, bool)->bool;(int, int)->bool;(int, uint)->bool;(int, double)->bool;"                   \
    "(uint, uint)->bool;(uint, int)->bool;(uint, double)->bool;(double, double)->bool;"            \
    "(double, int)->bool;(double, uint)->bool;(string, string)->bool;(bytes, bytes)->bool;"        \
    "(timestamp, timestamp)->bool;(duration, duration)->bool"
    {OP_LT, "_<_", ORDERING},
    {OP_LE, "_<=_", ORDERING},
    {OP_GT, "_>_", ORDERING},
    {OP_GE, "_>=_", ORDERING},
    {OP_IN, "@in", "(A, list(A))->bool;(A, map(A, B))->bool"},
    {OP_ADD, "_+_",
     "(int, int)->int;(uint, uint)->uint;(double, double)->double;(string, string)->string;"
     "(bytes, bytes)->bytes;(list(A), list(A))->list(A);(timestamp, duration)->timestamp;"
     "(duration, timestamp)->timestamp;(duration, duration)->duration"},
    {OP_SUB, "_-_",
     "(int, int)->int;(uint, uint)->uint;(double, double)->double;"
     "(timestamp, timestamp)->duration;(timestamp, duration)->timestamp;"
     "(duration, duration)->duration"},
    {OP_MUL, "_*_", "(int, int)->int;(uint, uint)->uint;(double, double)->double"},
    {OP_DIV, "_/_", "(int, int)->int;(uint, uint)->uint;(double, double)->double"},
    {OP_MOD, "_%_", "(int, int)->int;(uint, uint)->uint"},
    {OP_INDEX, "_[_]",
     "(list(A), int)->A;(map(A, B), A)->B;(optional_type(list(A)), int)->optional_type(A);"
     "(optional_type(map(A, B)), A)->optional_type(B)"},
    {OP_OPT_INDEX, "_[?_]",
     "(list(A), int)->optional_type(A);(map(A, B), A)->optional_type(B);"
     "(optional_type(list(A)), int)->optional_type(A);"
     "(optional_type(map(A, B)), A)->optional_type(B)"},
};

/*
 * Resolves a call of name with the argument types (a member call: args[0] is the
 * receiver) against the overloads of the sigs; its result type, or the error type
 * with the issue recorded.
 */
static struct ty *resolve(struct checker *c, size_t pos, const char *name, bool member,
                          const char *const *sigs, size_t nsigs, struct ty **args, size_t nargs)
{
    struct ty *result = NULL;
    for (size_t i = 0; i < nsigs; i++) {
        const char *s = sigs[i];
        struct overload o;
        while (s && next_overload(c, &s, &o)) {
            if (o.member != member || o.nargs != nargs)
                continue;
            struct mapping m = {0};
            bool ok = true;
            for (size_t a = 0; ok && a < nargs; a++)
                ok = assignable(&m, args[a], o.args[a]);
            if (!ok)
                continue;
            struct ty *r = substitute(c, &m, o.result);
            if (!result)
                result = r;
            else if (result->k != K_DYN && !exact(r, result))
                result = &t_dyn;
        }
    }
    if (result)
        return result;
    struct ck__buf b = {.max = 4096};
    size_t first = 0;
    if (member) {
        format(&b, args[0]);
        ck__buf_adds(&b, ".");
        first = 1;
    }
    ck__buf_adds(&b, "(");
    for (size_t a = first; a < nargs; a++) {
        if (a > first)
            ck__buf_adds(&b, ", ");
        format(&b, args[a]);
    }
    ck__buf_adds(&b, ")");
    issue(c, pos, "found no matching overload for '%s' applied to '%s'", name, b.p ? b.p : "");
    ck__buf_release(&b);
    return &t_error;
}

static struct ty *operator(struct checker *c, size_t pos, enum ck__cel_op op, struct ty **args,
                           size_t nargs)
{
    for (size_t i = 0; i < sizeof(operators) / sizeof(operators[0]); i++)
        if (operators[i].op == op)
            return resolve(c, pos, operators[i].name, false, &operators[i].sig, 1, args, nargs);
    return &t_dyn;
}

/* ---- the walk ------------------------------------------------------------------ */

static struct ty *check(struct checker *c, const struct ck__cel_node *n);

static struct ty *unwrap_optional(struct ty *t, bool *was)
{
    *was = t->k == K_OPTIONAL;
    return *was ? t->p[0] : t;
}

static void expand(struct checker *c, struct ty *o);

/* The type of the object o's field called name, NULL when it has none. */
static struct ty *field_of(const struct ty *o, const char *name)
{
    for (size_t i = 0; i < o->nfields; i++)
        if (!strcmp(o->fnames[i], name))
            return o->ftypes[i];
    return NULL;
}

static struct ty *field_type(struct checker *c, const struct ck__cel_node *n, struct ty *operand,
                             const char *field, bool optional)
{
    bool was;
    struct ty *t = unwrap_optional(operand, &was), *r = &t_dyn;
    if (t->k == K_MAP) {
        r = t->p[1];
    } else if (t->k == K_OBJECT) {
        expand(c, t);
        r = field_of(t, field);
        /* authorizer.requestResource: a variable of its own in Kubernetes */
        if (!r && !strcmp(t->name, "kubernetes.authorization.Authorizer") &&
            !strcmp(field, "requestResource"))
            r = parse_type(c, &(const char *){"kubernetes.authorization.ResourceCheck"});
        if (!r) {
            issue(c, n->pos, "undefined field '%s'", field);
            r = &t_error;
        }
    } else if (!wild(t)) {
        struct ck__buf b = {0};
        format(&b, t);
        issue(c, n->pos, "type '%s' does not support field selection", b.p ? b.p : "");
        ck__buf_release(&b);
    }
    if (was || optional)
        return new_ty(c, K_OPTIONAL, r, NULL);
    return r;
}

static struct ty *ident(struct checker *c, const struct ck__cel_node *n, const char *name)
{
    for (struct scope *s = c->scope; s; s = s->up)
        if (!strcmp(s->name, name))
            return s->t;
    for (size_t i = 0; i < c->ndecls; i++)
        if (!strcmp(c->decls[i].name, name))
            return c->decl_types[i];
    static const char *const type_idents[] = {
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "list(dyn)",
        "map(dyn, dyn)",
        "null",
        "type",
        "optional_type(dyn)",
    };
    for (size_t i = 0; i < sizeof(type_idents) / sizeof(type_idents[0]); i++) {
        const char *t = type_idents[i];
        size_t len = strcspn(t, "(");
        bool is = strlen(name) == len && !strncmp(name, t, len);
        if (!is && !strcmp(name, "null_type") && !strcmp(t, "null"))
            is = true;
        if (is)
            return new_ty(c, K_TYPE, parse_type(c, &t), NULL);
    }
    if (n)
        issue(c, n->pos, "undeclared reference to '%s' (in container '')", name);
    return &t_error;
}

static struct ty *select_node(struct checker *c, const struct ck__cel_node *n)
{
    /* google.protobuf.Duration and .Timestamp, when google is no variable */
    const struct ck__cel_node *pkg = n->sel.operand;
    if (!n->sel.test_only && pkg->kind == N_SELECT && !strcmp(pkg->sel.field, "protobuf") &&
        pkg->sel.operand->kind == N_IDENT && !strcmp(pkg->sel.operand->name, "google") &&
        (!strcmp(n->sel.field, "Duration") || !strcmp(n->sel.field, "Timestamp")) &&
        ident(c, NULL, "google") == &t_error)
        return new_ty(c, K_TYPE, n->sel.field[0] == 'D' ? &t_duration : &t_timestamp, NULL);
    struct ty *operand = check(c, n->sel.operand);
    struct ty *t = field_type(c, n, operand, n->sel.field, n->sel.optional);
    return n->sel.test_only ? &t_bool : t;
}

/* The sigs of every library entry called name (a name may have entries in several). */
static size_t library_sigs(const char *name, const char **ret, size_t max)
{
    const struct ck__cel_func *fns[8];
    size_t n = ck__cel_named(name, fns, 8), k = 0;
    for (size_t i = 0; i < n && k < max; i++)
        if (fns[i]->sig)
            ret[k++] = fns[i]->sig;
    return k;
}

static struct ty *call_node(struct checker *c, const struct ck__cel_node *n)
{
    enum ck__cel_op op = n->call.op;
    struct ty *args[8];
    size_t nargs = n->call.nargs < 8 ? n->call.nargs : 8;
    for (size_t i = 0; i < n->call.nargs; i++) {
        struct ty *t = check(c, n->call.args[i]);
        if (i < nargs)
            args[i] = t;
    }
    switch (op) {
    case OP_AND:
    case OP_OR: {
        bool bad = false;
        for (size_t i = 0; i < 2; i++) {
            struct mapping m = {0};
            if (!assignable(&m, args[i], &t_bool)) {
                mismatch(c, n->call.args[i]->pos, &t_bool, args[i]);
                bad = true;
            }
        }
        return bad ? &t_error : &t_bool;
    }
    case OP_OPT_MARK:
        return args[0]; /* the list or map literal unwraps it */
    case OP_FUNC: {
        const char *sigs[8];
        size_t nsigs = library_sigs(n->call.fn->name, sigs, 8);
        if (!nsigs)
            return &t_dyn; /* a function with no declared overloads: not checked */
        return resolve(c, n->pos, n->call.fn->name, n->call.member, sigs, nsigs, args, nargs);
    }
    default:
        return operator(c, n->pos, op, args, nargs);
    }
}

/* joinTypes: the literal's element types must agree (HomogeneousAggregateLiterals). */
static struct ty *join(struct checker *c, const struct ck__cel_node *e, struct ty *prev,
                       struct ty *t)
{
    if (!prev)
        return t;
    struct mapping m = {0};
    if (assignable(&m, prev, t))
        return most_general(prev, t);
    mismatch(c, e->pos, prev, t);
    return &t_error;
}

static struct ty *literal_item(struct checker *c, const struct ck__cel_node *e)
{
    struct ty *t = check(c, e);
    bool mark = e->kind == N_CALL && e->call.op == OP_OPT_MARK, was;
    if (!mark)
        return t;
    struct ty *inner = unwrap_optional(t, &was);
    if (!was && !wild(inner))
        mismatch(c, e->call.args[0]->pos, new_ty(c, K_OPTIONAL, inner, NULL), inner);
    return inner;
}

static struct ty *comprehension(struct checker *c, const struct ck__cel_node *n)
{
    struct ty *range = check(c, n->comp.range), *var;
    enum ck__cel_macro m = n->comp.macro;
    bool opt = m == M_OPT_MAP || m == M_OPT_FLAT_MAP;
    if (opt) {
        struct ty *args[1] = {range};
        const char *sig = "optional_type(A).()->bool";
        if (resolve(c, n->pos, "hasValue", true, &sig, 1, args, 1) == &t_error)
            var = &t_error;
        else
            var = range->k == K_OPTIONAL ? range->p[0] : &t_dyn;
    } else if (range->k == K_LIST || range->k == K_MAP) {
        var = range->p[0];
    } else if (wild(range)) {
        var = &t_dyn;
    } else {
        struct ck__buf b = {0};
        format(&b, range);
        issue(c, n->comp.range->pos,
              "expression of type '%s' cannot be range of a comprehension (must be list, map, "
              "or dynamic)",
              b.p ? b.p : "");
        ck__buf_release(&b);
        var = &t_error;
    }
    struct scope s = {.name = n->comp.var, .t = var, .up = c->scope};
    c->scope = &s;
    struct ty *pred = n->comp.pred ? check(c, n->comp.pred) : NULL;
    struct ty *fn = n->comp.fn ? check(c, n->comp.fn) : NULL;
    c->scope = s.up;
    struct ty *result = &t_bool;
    switch (m) {
    case M_ALL:
    case M_EXISTS: {
        struct mapping mp = {0};
        if (!assignable(&mp, pred, &t_bool))
            mismatch(c, n->comp.pred->pos, &t_bool, pred);
        return result;
    }
    case M_EXISTS_ONE:
        break;
    case M_MAP:
        result = new_ty(c, K_LIST, fn, NULL);
        break;
    case M_FILTER:
        result = new_ty(c, K_LIST, var, NULL);
        break;
    case M_OPT_MAP:
        return new_ty(c, K_OPTIONAL, fn, NULL);
    case M_OPT_FLAT_MAP: {
        bool was;
        unwrap_optional(fn, &was);
        if (!was && !wild(fn))
            mismatch(c, n->comp.fn->pos, new_ty(c, K_OPTIONAL, &t_dyn, NULL), fn);
        return fn;
    }
    }
    if (pred) { /* the step is pred ? ... : @result */
        struct ty *args[3] = {pred, m == M_EXISTS_ONE ? &t_int : result,
                              m == M_EXISTS_ONE ? &t_int : result};
        operator(c, n->pos, OP_COND, args, 3);
    }
    return result;
}

static struct ty *check(struct checker *c, const struct ck__cel_node *n)
{
    switch (n->kind) {
    case N_NULL:
        return &t_null;
    case N_BOOL:
        return &t_bool;
    case N_INT:
        return &t_int;
    case N_UINT:
        return &t_uint;
    case N_DOUBLE:
        return &t_double;
    case N_STRING:
        return &t_string;
    case N_BYTES:
        return &t_bytes;
    case N_IDENT:
        return ident(c, n, n->name);
    case N_SELECT:
        return select_node(c, n);
    case N_CALL:
        return call_node(c, n);
    case N_LIST: {
        struct ty *elem = NULL;
        for (size_t i = 0; i < n->list.n; i++)
            elem = join(c, n->list.items[i], elem, literal_item(c, n->list.items[i]));
        return new_ty(c, K_LIST, elem ? elem : &t_dyn, NULL);
    }
    case N_MAP: {
        struct ty *k = NULL, *v = NULL;
        for (size_t i = 0; i < n->map.n; i++) {
            k = join(c, n->map.keys[i], k, check(c, n->map.keys[i]));
            v = join(c, n->map.vals[i], v, literal_item(c, n->map.vals[i]));
        }
        return new_ty(c, K_MAP, k ? k : &t_dyn, v ? v : &t_dyn);
    }
    case N_COMPREHENSION:
        return comprehension(c, n);
    }
    return &t_dyn;
}

/* ---- types from schemas (apiserver pkg/cel/common/schemas.go) ------------------ */

static bool is_type(const json_t *s, const char *type)
{
    const char *t = json_string_value(json_object_get(s, "type"));
    return t && !strcmp(t, type);
}

/* A property's name as a CEL field (apiserver's cel.Escape), or NULL when it has none. */
static char *escape(struct checker *c, const char *name)
{
    struct ck__buf b = {0};
    char *r = NULL;
    if (ck__cel_escape(name, &b)) {
        r = b.p ? ck__cel_strndup(&c->arena, b.p, b.len) : NULL;
        if (!r)
            c->nomem = true;
    }
    ck__buf_release(&b);
    return r;
}

static char *join_name(struct checker *c, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *r = ck__cel_alloc(&c->arena, la + lb + 2);
    if (!r) {
        c->nomem = true;
        return (char *)a;
    }
    memcpy(r, a, la);
    r[la] = '.';
    memcpy(r + la + 1, b, lb + 1);
    return r;
}

static struct ty *schema_type(struct checker *c, const json_t *s, bool root, const char *name);

static bool add_field(struct checker *c, struct ty *o, const char *field, struct ty *t)
{
    for (size_t i = 0; i < o->nfields; i++)
        if (!strcmp(o->fnames[i], field)) {
            o->ftypes[i] = t;
            return true;
        }
    const char **names = ck__cel_alloc(&c->arena, (o->nfields + 1) * sizeof(*names));
    struct ty **types = ck__cel_alloc(&c->arena, (o->nfields + 1) * sizeof(*types));
    if (!names || !types) {
        c->nomem = true;
        return false;
    }
    if (o->nfields) {
        memcpy(names, o->fnames, o->nfields * sizeof(*names));
        memcpy(types, o->ftypes, o->nfields * sizeof(*types));
    }
    names[o->nfields] = field;
    types[o->nfields++] = t;
    o->fnames = names;
    o->ftypes = types;
    return true;
}

/* An object type of the schema s; its fields are made when first looked at (expand()). */
static struct ty *object_type(struct checker *c, const json_t *s, bool root, const char *name)
{
    struct ty *o = new_ty(c, K_OBJECT, NULL, NULL);
    if (o != &t_error) {
        o->name = name;
        o->schema = s;
        o->root = root;
    }
    return o;
}

/* Makes the fields of an object type of a schema: its properties, and at a resource's root
 * apiVersion, kind, metadata.name and metadata.generateName, always there. */
static void expand(struct checker *c, struct ty *o)
{
    const json_t *s = o->schema;
    if (!s)
        return;
    o->schema = NULL;
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(s, "properties"), key, prop)
    {
        char *field = escape(c, key);
        struct ty *t =
            field
                ? schema_type(c, prop,
                              json_is_true(json_object_get(prop, "x-kubernetes-embedded-resource")),
                              join_name(c, o->name, field))
                : NULL;
        if (t)
            add_field(c, o, field, t);
    }
    if (!o->root)
        return;
    struct ty *meta = field_of(o, "metadata");
    bool complete = meta && meta->k == K_OBJECT;
    if (complete)
        expand(c, meta);
    static const char *const need[] = {"kind", "apiVersion", "name", "generateName"};
    for (size_t i = 0; complete && i < 4; i++) {
        struct ty *t = field_of(i < 2 ? o : meta, need[i]);
        complete = t && t->k == K_STRING;
    }
    if (complete)
        return;
    meta = new_ty(c, K_OBJECT, NULL, NULL);
    if (meta == &t_error)
        return;
    meta->name = join_name(c, o->name, "metadata");
    add_field(c, meta, "name", &t_string);
    add_field(c, meta, "generateName", &t_string);
    add_field(c, o, "kind", &t_string);
    add_field(c, o, "apiVersion", &t_string);
    add_field(c, o, "metadata", meta);
}

/* The schema s stands for: the one its "$ref" names, or allOf's only "$ref" (how OpenAPI
 * v3 writes a reference with a default), as Kubernetes' schema resolver inlines them. */
static const json_t *deref(struct checker *c, const json_t *s)
{
    for (int hops = 0; c->resolve && json_is_object(s) && hops < 16; hops++) {
        const json_t *all = json_object_get(s, "allOf");
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (!ref && json_array_size(all) == 1)
            ref = json_string_value(json_object_get(json_array_get(all, 0), "$ref"));
        if (!ref)
            break;
        s = c->resolve(ref, c->resolve_arg);
    }
    return s;
}

static struct ty *schema_type(struct checker *c, const json_t *s, bool root, const char *name)
{
    s = deref(c, s);
    if (!json_is_object(s))
        return NULL;
    if (json_is_true(json_object_get(s, "x-kubernetes-int-or-string")))
        return &t_dyn;
    if (is_type(s, "array")) {
        const json_t *items = json_object_get(s, "items");
        struct ty *t =
            items ? schema_type(
                        c, items,
                        json_is_true(json_object_get(items, "x-kubernetes-embedded-resource")),
                        join_name(c, name, "@idx"))
                  : NULL;
        return t ? new_ty(c, K_LIST, t, NULL) : NULL;
    }
    if (is_type(s, "object")) {
        const json_t *ap = json_object_get(s, "additionalProperties");
        if (json_is_object(ap)) {
            struct ty *t = schema_type(
                c, ap, json_is_true(json_object_get(ap, "x-kubernetes-embedded-resource")),
                join_name(c, name, "@elem"));
            return t ? new_ty(c, K_MAP, &t_string, t) : NULL;
        }
        return object_type(c, s, root, name);
    }
    if (is_type(s, "string")) {
        const char *f = json_string_value(json_object_get(s, "format"));
        if (f && !strcmp(f, "byte"))
            return &t_bytes;
        if (f && !strcmp(f, "duration"))
            return &t_duration;
        if (f && (!strcmp(f, "date") || !strcmp(f, "date-time")))
            return &t_timestamp;
        return &t_string;
    }
    if (is_type(s, "boolean"))
        return &t_bool;
    if (is_type(s, "number"))
        return &t_double;
    if (is_type(s, "integer"))
        return &t_int;
    return NULL;
}

/* ---- the entry point ----------------------------------------------------------- */

static int by_pos(const void *a, const void *b)
{
    const struct issue *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : 0;
}

int ck_cel_check(const struct ck_cel_program *prog, const struct ck_cel_decl *decls, size_t ndecls,
                 char *ret_type, size_t type_size, struct ck_err *reterr)
{
    struct checker c = {.src = prog->source,
                        .len = prog->source ? strlen(prog->source) : 0,
                        .decls = decls,
                        .ndecls = ndecls};
    c.decl_types = ck__cel_alloc(&c.arena, (ndecls ? ndecls : 1) * sizeof(*c.decl_types));
    if (!c.decl_types)
        c.nomem = true;
    for (size_t i = 0; i < ndecls && !c.resolve; i++) {
        c.resolve = decls[i].resolve;
        c.resolve_arg = decls[i].resolve_arg;
    }
    for (size_t i = 0; !c.nomem && i < ndecls; i++) {
        struct ty *t = NULL;
        if (decls[i].schema)
            t = schema_type(&c, decls[i].schema, decls[i].resource_root,
                            decls[i].type_name ? decls[i].type_name : "object");
        else if (decls[i].type)
            t = parse_type(&c, &(const char *){decls[i].type});
        if (!t)
            t = &t_dyn;
        c.decl_types[i] = decls[i].optional ? new_ty(&c, K_OPTIONAL, t, NULL) : t;
    }
    struct ty *t = c.nomem ? &t_error : check(&c, prog->root);
    int r = 0;
    if (c.nomem) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    } else if (c.nissues) {
        qsort(c.issues, c.nissues, sizeof(*c.issues), by_pos);
        struct ck__buf b = {.max = 1 << 20}; /* 100 messages with their lines and carets */
        for (size_t i = 0; i < c.nissues; i++) {
            if (i)
                ck__buf_adds(&b, "\n");
            ck__cel_report(&b, c.src, c.len, c.issues[i].pos, c.issues[i].msg);
        }
        if (c.truncated)
            ck__buf_printf(&b, "\n%zu more errors were truncated", c.truncated);
        r = b.p ? ck_err_set_long(reterr, CK_EINVAL, b.p)
                : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        ck__buf_release(&b);
    } else if (ret_type && type_size) {
        struct ck__buf b = {0};
        format(&b, t);
        snprintf(ret_type, type_size, "%s", b.p ? b.p : "");
        ck__buf_release(&b);
    }
    for (size_t i = 0; i < c.nissues; i++)
        free(c.issues[i].msg);
    free(c.issues);
    ck__cel_arena_release(&c.arena);
    return r;
}
