/*
 * eval.c - evaluation of a compiled CEL program: the tree walk, the operators, the
 * comprehensions, and ck_cel_eval().
 *
 * Semantics (google/cel-spec doc/langdef.md): functions are strict, an error argument
 * is their result; && and || are commutative: false && error is false whichever side
 * the error is on, and true || error is true; ?: evaluates only the branch it takes.
 * int and uint arithmetic that overflows is an error, as is division or modulus by
 * zero; int, uint and double never mix in arithmetic (only in comparisons).
 *
 * The cost budget: every node visited costs 1, and work proportional to a size
 * (concatenation, comparison of strings and lists, `in` over a list, conversion of
 * large values) costs a tenth of that size on top, as cel-go's runtime cost does for
 * strings. Past the limit ev->fatal stops the walk: nothing absorbs it. The evaluation's
 * arena is capped at CK_CEL_MEMORY_LIMIT, so memory is bounded too.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck_cel_result {
    struct ck__cel_arena arena;
    struct ck__cel_val *val;
};

static const char *const type_names[] = {
    "bool", "int", "uint",      "double", "string",        "bytes",
    "list", "map", "null_type", "type",   "optional_type",
};

static struct ck__cel_val *ident(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    for (struct ck__cel_scope *s = ev->scope; s; s = s->up)
        if (!strcmp(s->name, n->name))
            return s->val;
    for (size_t i = 0; i < ev->nvars; i++) {
        if (strcmp(ev->vars[i].name, n->name))
            continue;
        if (!ev->var_vals[i] && ev->vars[i].authorizer) {
            struct ck__cel_val *v = ck__cel_authorizer(ev, ev->vars[i].authorizer);
            if (ck__cel_is_error(v))
                return v;
            ev->var_vals[i] = v;
        }
        if (!ev->var_vals[i]) {
            const json_t *value = ev->vars[i].value;
            struct ck__cel_val *v =
                value ? ck__cel_from_json(ev, value, ev->vars[i].schema, 0) : NULL;
            if (v && ck__cel_is_error(v))
                return v;
            if (ev->vars[i].optional) /* optional.of(value), optional.none() without one */
                v = ck__cel_optional(ev, v);
            if (!v)
                return ck__cel_errorf(ev, "no such attribute: %s", n->name);
            if (ck__cel_is_error(v))
                return v;
            ev->var_vals[i] = v;
        }
        return ev->var_vals[i];
    }
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
        if (!strcmp(type_names[i], n->name))
            return ck__cel_type_val(ev, type_names[i]);
    return ck__cel_errorf(ev, "undeclared reference to '%s' (in container '')", n->name);
}

static struct ck__cel_val *qualified_type(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    /* google.protobuf.Duration and .Timestamp name types when google is no variable */
    const struct ck__cel_node *pkg = n->sel.operand;
    if (pkg->kind != N_SELECT || strcmp(pkg->sel.field, "protobuf") ||
        pkg->sel.operand->kind != N_IDENT || strcmp(pkg->sel.operand->name, "google"))
        return NULL;
    for (size_t i = 0; i < ev->nvars; i++)
        if (!strcmp(ev->vars[i].name, "google"))
            return NULL;
    if (!strcmp(n->sel.field, "Duration"))
        return ck__cel_type_val(ev, "google.protobuf.Duration");
    if (!strcmp(n->sel.field, "Timestamp"))
        return ck__cel_type_val(ev, "google.protobuf.Timestamp");
    return NULL;
}

static struct ck__cel_val *select_field(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    struct ck__cel_val *t = qualified_type(ev, n);
    if (t)
        return t;
    struct ck__cel_val *o = ck__cel_eval_node(ev, n->sel.operand);
    if (ck__cel_is_error(o))
        return o;
    /* a.?f, and any selection on an optional, gives an optional */
    bool optional = n->sel.optional || o->type == CK_CEL_OPTIONAL;
    if (o->type == CK_CEL_OPTIONAL) {
        if (!o->opt)
            return n->sel.test_only ? &ck__cel_false : o;
        o = o->opt;
    }
    /* authorizer.requestResource: a variable of its own in Kubernetes */
    struct ck__cel_val *rr = !n->sel.test_only && !strcmp(n->sel.field, "requestResource")
                                 ? ck__cel_request_resource(ev, o)
                                 : NULL;
    if (rr)
        return rr;
    if (o->type != CK_CEL_MAP)
        return ck__cel_errorf(ev, "type '%s' does not support field selection",
                              ck__cel_type_name(o));
    struct ck__cel_val key = {.type = CK_CEL_STRING, .s = {n->sel.field, strlen(n->sel.field)}};
    struct ck__cel_val *v = ck__cel_map_get(o, &key);
    if (n->sel.test_only)
        return ck__cel_bool(v != NULL);
    if (optional)
        return ck__cel_optional(ev, v);
    return v ? v : ck__cel_errorf(ev, "no such key: %s", n->sel.field);
}

static struct ck__cel_val *logic(struct ck__cel_eval *ev, const struct ck__cel_node *n, bool is_or)
{
    /* is_or: true decides; else false decides */
    struct ck__cel_val *l = ck__cel_eval_node(ev, n->call.args[0]);
    if (ev->fatal)
        return ck__cel_fatal(ev);
    if (l->type == CK_CEL_BOOL && l->b == is_or)
        return l;
    struct ck__cel_val *r = ck__cel_eval_node(ev, n->call.args[1]);
    if (ev->fatal)
        return ck__cel_fatal(ev);
    if (r->type == CK_CEL_BOOL && r->b == is_or)
        return r;
    if (l->type == CK_CEL_BOOL && r->type == CK_CEL_BOOL)
        return l;
    struct ck__cel_val *args[2] = {l, r};
    return ck__cel_no_overload(ev, is_or ? "_||_" : "_&&_", args, 2);
}

static struct ck__cel_val *concat(struct ck__cel_eval *ev, struct ck__cel_val *a,
                                  struct ck__cel_val *b)
{
    if (a->type == CK_CEL_LIST) {
        if (!ck__cel_charge(ev, (a->list.n + b->list.n) / 10))
            return ck__cel_fatal(ev);
        struct ck__cel_val *l = ck__cel_list(ev, a->list.n + b->list.n);
        if (ck__cel_is_error(l))
            return l;
        if (a->list.n)
            memcpy(l->list.v, a->list.v, a->list.n * sizeof(*l->list.v));
        if (b->list.n)
            memcpy(l->list.v + a->list.n, b->list.v, b->list.n * sizeof(*l->list.v));
        return l;
    }
    size_t n = a->s.len + b->s.len;
    if (!ck__cel_charge(ev, n / 10))
        return ck__cel_fatal(ev);
    struct ck__cel_val *s = ck__cel_str(ev, a->type, a->s.p, a->s.len);
    if (ck__cel_is_error(s))
        return s;
    char *p = ck__cel_alloc(ev->arena, n + 1);
    if (!p) {
        return ck__cel_alloc_failed(ev, n);
    }
    memcpy(p, a->s.p, a->s.len);
    memcpy(p + a->s.len, b->s.p, b->s.len);
    s->s.p = p;
    s->s.len = n;
    return s;
}

#define NSEC 1000000000

/* Builds a duration or timestamp of sec and nsec, normalised; range-checked. */
static struct ck__cel_val *time_val(struct ck__cel_eval *ev, int type, int64_t sec, int64_t nsec)
{
    sec += nsec / NSEC;
    nsec %= NSEC;
    if (type == CK_CEL_TIMESTAMP && nsec < 0) {
        nsec += NSEC;
        sec--;
    } else if (type == CK_CEL_DURATION && sec > 0 && nsec < 0) {
        nsec += NSEC;
        sec--;
    } else if (type == CK_CEL_DURATION && sec < 0 && nsec > 0) {
        nsec -= NSEC;
        sec++;
    }
    if (type == CK_CEL_DURATION ? !ck__cel_duration_ok(sec, nsec)
                                : (sec < -62135596800LL || sec > 253402300799LL))
        return ck__cel_errorf(ev, "%s out of range",
                              type == CK_CEL_DURATION ? "duration" : "timestamp");
    struct ck__cel_val *v = ck__cel_new(ev, type);
    if (!ck__cel_is_error(v)) {
        v->t.sec = sec;
        v->t.nsec = (int32_t)nsec;
    }
    return v;
}

static struct ck__cel_val *overflow(struct ck__cel_eval *ev)
{
    return ck__cel_errorf(ev, "return error for overflow");
}

static struct ck__cel_val *arith(struct ck__cel_eval *ev, enum ck__cel_op op,
                                 struct ck__cel_val **args)
{
    static const char *const names[] = {
        [OP_ADD] = "_+_", [OP_SUB] = "_-_", [OP_MUL] = "_*_", [OP_DIV] = "_/_", [OP_MOD] = "_%_"};
    struct ck__cel_val *a = args[0], *b = args[1];
    if (a->type == b->type) {
        switch (a->type) {
        case CK_CEL_INT: {
            int64_t r;
            switch (op) {
            case OP_ADD:
                return __builtin_add_overflow(a->i, b->i, &r) ? overflow(ev) : ck__cel_int(ev, r);
            case OP_SUB:
                return __builtin_sub_overflow(a->i, b->i, &r) ? overflow(ev) : ck__cel_int(ev, r);
            case OP_MUL:
                return __builtin_mul_overflow(a->i, b->i, &r) ? overflow(ev) : ck__cel_int(ev, r);
            case OP_DIV:
            case OP_MOD:
                if (b->i == 0)
                    return ck__cel_errorf(ev,
                                          op == OP_DIV ? "division by zero" : "modulus by zero");
                if (a->i == INT64_MIN && b->i == -1)
                    return overflow(ev);
                return ck__cel_int(ev, op == OP_DIV ? a->i / b->i : a->i % b->i);
            default:
                break;
            }
            break;
        }
        case CK_CEL_UINT: {
            uint64_t r;
            switch (op) {
            case OP_ADD:
                return __builtin_add_overflow(a->u, b->u, &r) ? overflow(ev) : ck__cel_uint(ev, r);
            case OP_SUB:
                return __builtin_sub_overflow(a->u, b->u, &r) ? overflow(ev) : ck__cel_uint(ev, r);
            case OP_MUL:
                return __builtin_mul_overflow(a->u, b->u, &r) ? overflow(ev) : ck__cel_uint(ev, r);
            case OP_DIV:
            case OP_MOD:
                if (b->u == 0)
                    return ck__cel_errorf(ev,
                                          op == OP_DIV ? "division by zero" : "modulus by zero");
                return ck__cel_uint(ev, op == OP_DIV ? a->u / b->u : a->u % b->u);
            default:
                break;
            }
            break;
        }
        case CK_CEL_DOUBLE:
            switch (op) {
            case OP_ADD:
                return ck__cel_double(ev, a->d + b->d);
            case OP_SUB:
                return ck__cel_double(ev, a->d - b->d);
            case OP_MUL:
                return ck__cel_double(ev, a->d * b->d);
            case OP_DIV:
                return ck__cel_double(ev, a->d / b->d);
            default:
                break;
            }
            break;
        case CK_CEL_STRING:
        case CK_CEL_BYTES:
        case CK_CEL_LIST:
            if (op == OP_ADD)
                return concat(ev, a, b);
            break;
        case CK_CEL_DURATION:
            if (op == OP_ADD || op == OP_SUB) {
                int64_t s;
                if (op == OP_ADD ? __builtin_add_overflow(a->t.sec, b->t.sec, &s)
                                 : __builtin_sub_overflow(a->t.sec, b->t.sec, &s))
                    return overflow(ev);
                return time_val(ev, CK_CEL_DURATION, s,
                                op == OP_ADD ? (int64_t)a->t.nsec + b->t.nsec
                                             : (int64_t)a->t.nsec - b->t.nsec);
            }
            break;
        case CK_CEL_TIMESTAMP:
            if (op == OP_SUB)
                return time_val(ev, CK_CEL_DURATION, a->t.sec - b->t.sec,
                                (int64_t)a->t.nsec - b->t.nsec);
            break;
        default:
            break;
        }
    } else if (a->type == CK_CEL_TIMESTAMP && b->type == CK_CEL_DURATION &&
               (op == OP_ADD || op == OP_SUB)) {
        int64_t sign = op == OP_ADD ? 1 : -1;
        return time_val(ev, CK_CEL_TIMESTAMP, a->t.sec + sign * b->t.sec,
                        (int64_t)a->t.nsec + sign * b->t.nsec);
    } else if (a->type == CK_CEL_DURATION && b->type == CK_CEL_TIMESTAMP && op == OP_ADD) {
        return time_val(ev, CK_CEL_TIMESTAMP, a->t.sec + b->t.sec, (int64_t)a->t.nsec + b->t.nsec);
    }
    return ck__cel_no_overload(ev, names[op], args, 2);
}

static uint64_t size_cost(const struct ck__cel_val *v)
{
    switch (v->type) {
    case CK_CEL_STRING:
    case CK_CEL_BYTES:
        return v->s.len / 10;
    case CK_CEL_LIST:
        return v->list.n / 10;
    case CK_CEL_MAP:
        return v->map.n / 10;
    default:
        return 0;
    }
}

/* a[?k], and any index of an optional: optional.of(a[k]) or optional.none() */
static struct ck__cel_val *opt_index(struct ck__cel_eval *ev, struct ck__cel_val **args)
{
    struct ck__cel_val *c = args[0], *k = args[1];
    if (c->type == CK_CEL_OPTIONAL) {
        if (!c->opt)
            return c;
        c = c->opt;
    }
    if (c->type == CK_CEL_MAP && k->type != CK_CEL_LIST && k->type != CK_CEL_MAP)
        return ck__cel_optional(ev, ck__cel_map_get(c, k));
    if (c->type == CK_CEL_LIST) {
        int64_t i;
        if (k->type == CK_CEL_INT)
            i = k->i;
        else if (k->type == CK_CEL_UINT)
            i = k->u > INT64_MAX ? -1 : (int64_t)k->u;
        else if (k->type == CK_CEL_DOUBLE && k->d == trunc(k->d) && fabs(k->d) < 9e18)
            i = (int64_t)k->d;
        else
            return ck__cel_no_overload(ev, "_[?_]", args, 2);
        return ck__cel_optional(ev, i >= 0 && (uint64_t)i < c->list.n ? c->list.v[i] : NULL);
    }
    return ck__cel_no_overload(ev, "_[?_]", args, 2);
}

static struct ck__cel_val *index_of(struct ck__cel_eval *ev, struct ck__cel_val **args)
{
    struct ck__cel_val *c = args[0], *k = args[1];
    if (c->type == CK_CEL_OPTIONAL)
        return opt_index(ev, args);
    if (c->type == CK_CEL_MAP) {
        if (k->type == CK_CEL_LIST || k->type == CK_CEL_MAP)
            return ck__cel_no_overload(ev, "_[_]", args, 2);
        struct ck__cel_val *v = ck__cel_map_get(c, k);
        if (v)
            return v;
        struct ck__buf b = {.max = 200};
        ck__cel_format(&b, k);
        struct ck__cel_val *e = ck__cel_errorf(ev, "no such key: %s", b.p ? b.p : "?");
        ck__buf_release(&b);
        return e;
    }
    if (c->type != CK_CEL_LIST)
        return ck__cel_no_overload(ev, "_[_]", args, 2);
    int64_t i;
    if (k->type == CK_CEL_INT)
        i = k->i;
    else if (k->type == CK_CEL_UINT)
        i = k->u > INT64_MAX ? INT64_MAX : (int64_t)k->u;
    else if (k->type == CK_CEL_DOUBLE && k->d == trunc(k->d) && fabs(k->d) < 9e18)
        i = (int64_t)k->d;
    else if (k->type == CK_CEL_DOUBLE)
        return ck__cel_errorf(ev, "unsupported index value %g in list", k->d);
    else
        return ck__cel_no_overload(ev, "_[_]", args, 2);
    if (i < 0 || (uint64_t)i >= c->list.n)
        return ck__cel_errorf(ev, "index out of bounds: %lld", (long long)i);
    return c->list.v[i];
}

static struct ck__cel_val *call(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    switch (n->call.op) {
    case OP_AND:
        return logic(ev, n, false);
    case OP_OR:
        return logic(ev, n, true);
    case OP_COND: {
        struct ck__cel_val *c = ck__cel_eval_node(ev, n->call.args[0]);
        if (ck__cel_is_error(c))
            return c;
        if (c->type != CK_CEL_BOOL)
            return ck__cel_no_overload(ev, "_?_:_", &c, 1);
        return ck__cel_eval_node(ev, n->call.args[c->b ? 1 : 2]);
    }
    default:
        break;
    }
    struct ck__cel_val *stack[4] = {NULL}, **args = stack;
    if (n->call.nargs > 4) {
        args = ck__cel_alloc(ev->arena, n->call.nargs * sizeof(*args));
        if (!args)
            return ck__cel_alloc_failed(ev, n->call.nargs * sizeof(*args));
    }
    for (size_t i = 0; i < n->call.nargs; i++) {
        args[i] = ck__cel_eval_node(ev, n->call.args[i]);
        if (ck__cel_is_error(args[i]))
            return args[i];
    }
    struct ck__cel_val *a = args[0], *b = n->call.nargs > 1 ? args[1] : NULL;
    int cmp;
    switch (n->call.op) {
    case OP_NOT:
        return a->type == CK_CEL_BOOL ? ck__cel_bool(!a->b)
                                      : ck__cel_no_overload(ev, "!_", args, 1);
    case OP_NEG:
        if (a->type == CK_CEL_INT)
            return a->i == INT64_MIN ? overflow(ev) : ck__cel_int(ev, -a->i);
        if (a->type == CK_CEL_DOUBLE)
            return ck__cel_double(ev, -a->d);
        if (a->type == CK_CEL_DURATION)
            return time_val(ev, CK_CEL_DURATION, -a->t.sec, -(int64_t)a->t.nsec);
        return ck__cel_no_overload(ev, "-_", args, 1);
    case OP_EQ:
    case OP_NE:
        if (!ck__cel_charge(ev, size_cost(a)))
            return ck__cel_fatal(ev);
        return ck__cel_bool(ck__cel_equal(a, b) == (n->call.op == OP_EQ));
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        if (!ck__cel_compare(a, b, &cmp))
            return ck__cel_no_overload(ev,
                                       n->call.op == OP_LT   ? "_<_"
                                       : n->call.op == OP_LE ? "_<=_"
                                       : n->call.op == OP_GT ? "_>_"
                                                             : "_>=_",
                                       args, 2);
        if (!ck__cel_charge(ev, size_cost(a)))
            return ck__cel_fatal(ev);
        if (cmp == 2)
            return &ck__cel_false;
        switch (n->call.op) {
        case OP_LT:
            return ck__cel_bool(cmp < 0);
        case OP_LE:
            return ck__cel_bool(cmp <= 0);
        case OP_GT:
            return ck__cel_bool(cmp > 0);
        default:
            return ck__cel_bool(cmp >= 0);
        }
    case OP_IN:
        if (b->type == CK_CEL_LIST) {
            if (!ck__cel_charge(ev, b->list.n))
                return ck__cel_fatal(ev);
            for (size_t i = 0; i < b->list.n; i++)
                if (ck__cel_equal(a, b->list.v[i]))
                    return &ck__cel_true;
            return &ck__cel_false;
        }
        if (b->type == CK_CEL_MAP)
            return ck__cel_bool(ck__cel_map_get(b, a) != NULL);
        return ck__cel_no_overload(ev, "@in", args, 2);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_MOD:
        return arith(ev, n->call.op, args);
    case OP_INDEX:
        return index_of(ev, args);
    case OP_OPT_INDEX:
        return opt_index(ev, args);
    case OP_OPT_MARK:
        return a->type == CK_CEL_OPTIONAL ? a : ck__cel_no_overload(ev, "?_", args, 1);
    default:
        return n->call.fn->fn(ev, n, args, n->call.nargs);
    }
}

static bool is_opt_mark(const struct ck__cel_node *n)
{
    return n->kind == N_CALL && n->call.op == OP_OPT_MARK;
}

static struct ck__cel_val *build_map(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    struct ck__cel_val *m = ck__cel_map(ev, n->map.n);
    if (ck__cel_is_error(m))
        return m;
    size_t count = 0;
    for (size_t i = 0; i < n->map.n; i++) {
        struct ck__cel_val *k = ck__cel_eval_node(ev, n->map.keys[i]);
        if (ck__cel_is_error(k))
            return k;
        struct ck__cel_val *v = ck__cel_eval_node(ev, n->map.vals[i]);
        if (ck__cel_is_error(v))
            return v;
        if (is_opt_mark(n->map.vals[i]) && !(v = v->opt))
            continue; /* {?k: optional.none()} adds nothing */
        if (k->type != CK_CEL_STRING && k->type != CK_CEL_INT && k->type != CK_CEL_UINT &&
            k->type != CK_CEL_BOOL)
            return ck__cel_errorf(ev, "unsupported key type: %s", ck__cel_type_name(k));
        m->map.n = count;
        if (ck__cel_map_get(m, k)) {
            struct ck__buf b = {.max = 200};
            ck__cel_format(&b, k);
            struct ck__cel_val *e =
                ck__cel_errorf(ev, "Failed with repeated key: %s", b.p ? b.p : "?");
            ck__buf_release(&b);
            return e;
        }
        m->map.k[count] = k;
        m->map.v[count++] = v;
    }
    m->map.n = count;
    return m;
}

static struct ck__cel_val *not_bool(struct ck__cel_eval *ev, struct ck__cel_val *v)
{
    return ck__cel_is_error(v) ? v
                               : ck__cel_errorf(ev, "no such overload: predicate of type '%s'",
                                                ck__cel_type_name(v));
}

/* o.optMap(x, f): optional.of(f) with x bound to o's value; optFlatMap: f itself. */
static struct ck__cel_val *opt_map(struct ck__cel_eval *ev, const struct ck__cel_node *n,
                                   struct ck__cel_val *o)
{
    if (o->type != CK_CEL_OPTIONAL)
        return ck__cel_no_overload(ev, n->comp.macro == M_OPT_MAP ? "optMap" : "optFlatMap", &o, 1);
    if (!o->opt)
        return o;
    struct ck__cel_scope scope = {.name = n->comp.var, .val = o->opt, .up = ev->scope};
    ev->scope = &scope;
    struct ck__cel_val *r = ck__cel_eval_node(ev, n->comp.fn);
    ev->scope = scope.up;
    if (ck__cel_is_error(r))
        return r;
    if (n->comp.macro == M_OPT_MAP)
        return ck__cel_optional(ev, r);
    return r->type == CK_CEL_OPTIONAL ? r : ck__cel_no_overload(ev, "optFlatMap", &r, 1);
}

static struct ck__cel_val *comprehension(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    struct ck__cel_val *range = ck__cel_eval_node(ev, n->comp.range);
    if (ck__cel_is_error(range))
        return range;
    if (n->comp.macro == M_OPT_MAP || n->comp.macro == M_OPT_FLAT_MAP)
        return opt_map(ev, n, range);
    struct ck__cel_val **items;
    size_t count;
    if (range->type == CK_CEL_LIST) {
        items = range->list.v;
        count = range->list.n;
    } else if (range->type == CK_CEL_MAP) {
        items = range->map.k;
        count = range->map.n;
    } else {
        return ck__cel_errorf(ev, "expression of type '%s' cannot be range of a comprehension",
                              ck__cel_type_name(range));
    }
    struct ck__cel_scope scope = {.name = n->comp.var, .up = ev->scope};
    ev->scope = &scope;
    struct ck__cel_val *result = NULL, *err = NULL, *out = NULL;
    size_t nout = 0, found = 0;
    enum ck__cel_macro m = n->comp.macro;
    if (m == M_MAP || m == M_FILTER) {
        out = ck__cel_list(ev, count);
        if (ck__cel_is_error(out)) {
            result = out;
            goto out;
        }
    }
    for (size_t i = 0; i < count && !result; i++) {
        if (!ck__cel_charge(ev, 1)) {
            result = ck__cel_fatal(ev);
            break;
        }
        scope.val = items[i];
        struct ck__cel_val *p = n->comp.pred ? ck__cel_eval_node(ev, n->comp.pred) : &ck__cel_true;
        if (ev->fatal) {
            result = ck__cel_fatal(ev);
            break;
        }
        bool is_bool = p->type == CK_CEL_BOOL;
        switch (m) {
        case M_ALL:
        case M_EXISTS:
            if (is_bool && p->b == (m == M_EXISTS))
                result = p;
            else if (!is_bool && !err)
                err = not_bool(ev, p);
            break;
        case M_EXISTS_ONE:
            if (!is_bool)
                result = not_bool(ev, p);
            else
                found += p->b;
            break;
        case M_FILTER:
        case M_MAP:
        case M_OPT_MAP: /* not here: opt_map() */
        case M_OPT_FLAT_MAP:
            if (!is_bool) {
                result = not_bool(ev, p);
                break;
            }
            if (!p->b)
                break;
            if (m == M_FILTER) {
                out->list.v[nout++] = items[i];
                break;
            }
            struct ck__cel_val *f = ck__cel_eval_node(ev, n->comp.fn);
            if (ck__cel_is_error(f))
                result = f;
            else
                out->list.v[nout++] = f;
            break;
        }
    }
    if (!result) {
        switch (m) {
        case M_ALL:
        case M_EXISTS:
            result = err ? err : ck__cel_bool(m == M_ALL);
            break;
        case M_EXISTS_ONE:
            result = ck__cel_bool(found == 1);
            break;
        default:
            out->list.n = nout;
            result = out;
        }
    }
out:
    ev->scope = scope.up;
    return result;
}

struct ck__cel_val *ck__cel_eval_node(struct ck__cel_eval *ev, const struct ck__cel_node *n)
{
    if (!ck__cel_charge(ev, 1))
        return ck__cel_fatal(ev);
    switch (n->kind) {
    case N_NULL:
        return &ck__cel_null;
    case N_BOOL:
        return ck__cel_bool(n->b);
    case N_INT:
        return ck__cel_int(ev, n->i);
    case N_UINT:
        return ck__cel_uint(ev, n->u);
    case N_DOUBLE:
        return ck__cel_double(ev, n->d);
    case N_STRING:
    case N_BYTES:
        /* copied: a result may outlive its program */
        return ck__cel_str(ev, n->kind == N_STRING ? CK_CEL_STRING : CK_CEL_BYTES, n->str.p,
                           n->str.len);
    case N_IDENT:
        return ident(ev, n);
    case N_SELECT:
        return select_field(ev, n);
    case N_CALL:
        return call(ev, n);
    case N_LIST: {
        struct ck__cel_val *l = ck__cel_list(ev, n->list.n);
        size_t count = 0;
        for (size_t i = 0; !ck__cel_is_error(l) && i < n->list.n; i++) {
            const struct ck__cel_node *item = n->list.items[i];
            struct ck__cel_val *e = ck__cel_eval_node(ev, item);
            if (ck__cel_is_error(e))
                return e;
            if (is_opt_mark(item) && !(e = e->opt))
                continue; /* [?optional.none()] adds nothing */
            l->list.v[count++] = e;
        }
        if (!ck__cel_is_error(l))
            l->list.n = count;
        return l;
    }
    case N_MAP:
        return build_map(ev, n);
    case N_COMPREHENSION:
        return comprehension(ev, n);
    }
    return ck__cel_errorf(ev, "unknown node");
}

int ck_cel_eval(const struct ck_cel_program *prog, const struct ck_cel_var *vars, size_t nvars,
                uint64_t cost_limit, struct ck_cel_result **ret_result, uint64_t *ret_cost,
                struct ck_err *reterr)
{
    if (ret_cost)
        *ret_cost = 0;
    struct ck_cel_result *r = ck__calloc(1, sizeof(*r));
    if (!r)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    r->arena.limit = CK_CEL_MEMORY_LIMIT;
    struct ck__cel_eval ev = {
        .arena = &r->arena,
        .vars = vars,
        .nvars = nvars,
        .limit = cost_limit ? cost_limit : CK_CEL_DEFAULT_COST_LIMIT,
    };
    ev.var_vals = ck__cel_alloc(&r->arena, (nvars ? nvars : 1) * sizeof(*ev.var_vals));
    struct ck__cel_val *v = ev.var_vals ? ck__cel_eval_node(&ev, prog->root) : NULL;
    if (ret_cost)
        *ret_cost = ev.cost;
    int code = 0;
    if (!v || ev.fatal == CK_ENOMEM)
        code = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    else if (ev.fatal && ev.cost > ev.limit)
        code = ck_err_set(reterr, CK_CEL_ECOST, "operation cancelled: actual cost limit exceeded");
    else if (ev.fatal)
        code = ck_err_set(reterr, CK_CEL_ECOST, "operation cancelled: memory limit exceeded");
    else if (ck__cel_is_error(v))
        code = ck_err_set(reterr, CK_EINVAL, "%s", v->s.p);
    if (code) {
        ck_cel_result_free(r);
        return code;
    }
    r->val = v;
    *ret_result = r;
    return 0;
}

struct ck_cel_result *ck_cel_result_free(struct ck_cel_result *r)
{
    if (r) {
        ck__cel_arena_release(&r->arena);
        free(r);
    }
    return NULL;
}

enum ck_cel_type ck_cel_result_type(const struct ck_cel_result *r)
{
    return (enum ck_cel_type)r->val->type;
}

bool ck_cel_result_bool(const struct ck_cel_result *r)
{
    return r->val->type == CK_CEL_BOOL && r->val->b;
}

const char *ck_cel_result_string(const struct ck_cel_result *r, size_t *ret_len)
{
    if (r->val->type != CK_CEL_STRING)
        return NULL;
    if (ret_len)
        *ret_len = r->val->s.len;
    return r->val->s.p;
}

int ck_cel_result_to_json(const struct ck_cel_result *r, json_t **ret_json)
{
    int err = CK_ENOMEM;
    json_t *j = ck__cel_to_json(r->val, &err);
    if (!j)
        return err;
    *ret_json = j;
    return 0;
}

char *ck_cel_result_format(const struct ck_cel_result *r)
{
    struct ck__buf b = {0};
    ck__cel_format(&b, r->val);
    return ck__buf_take(&b);
}
