/*
 * sets.c - cel-go's sets extension, which Kubernetes enables from 1.29 (ext.Sets):
 * sets.contains(a, b) (every element of b is in a), sets.equivalent(a, b) (each
 * contains the other; duplicates do not count) and sets.intersects(a, b) (some
 * element is in both), over lists, with CEL's heterogeneous equality (1 and 1.0 are
 * the same element).
 *
 * Quadratic in the lists' sizes, and charged so: one per pair compared.
 */
#include "internal.h"

static bool has(const struct ck__cel_val *l, const struct ck__cel_val *x)
{
    for (size_t i = 0; i < l->list.n; i++)
        if (ck__cel_equal(l->list.v[i], x))
            return true;
    return false;
}

static bool contains(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    for (size_t i = 0; i < b->list.n; i++)
        if (!has(a, b->list.v[i]))
            return false;
    return true;
}

static struct ck__cel_val *check(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                 struct ck__cel_val **args, size_t nargs)
{
    if (args[0]->type != CK_CEL_LIST || args[1]->type != CK_CEL_LIST)
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    uint64_t pairs = (uint64_t)args[0]->list.n * args[1]->list.n;
    if (!ck__cel_charge(ev, 1 + pairs))
        return ck__cel_fatal(ev);
    return NULL;
}

static struct ck__cel_val *fn_contains(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                       struct ck__cel_val **args, size_t nargs)
{
    struct ck__cel_val *e = check(ev, call, args, nargs);
    return e ? e : ck__cel_bool(contains(args[0], args[1]));
}

static struct ck__cel_val *fn_equivalent(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                         struct ck__cel_val **args, size_t nargs)
{
    struct ck__cel_val *e = check(ev, call, args, nargs);
    return e ? e : ck__cel_bool(contains(args[0], args[1]) && contains(args[1], args[0]));
}

static struct ck__cel_val *fn_intersects(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                         struct ck__cel_val **args, size_t nargs)
{
    struct ck__cel_val *e = check(ev, call, args, nargs);
    if (e)
        return e;
    for (size_t i = 0; i < args[1]->list.n; i++)
        if (has(args[0], args[1]->list.v[i]))
            return &ck__cel_true;
    return &ck__cel_false;
}

const struct ck__cel_func ck__cel_sets_lib[] = {
    {"sets.contains", CK__CEL_GLOBAL, 2, 2, fn_contains, "(list(A), list(A))->bool"},
    {"sets.equivalent", CK__CEL_GLOBAL, 2, 2, fn_equivalent, "(list(A), list(A))->bool"},
    {"sets.intersects", CK__CEL_GLOBAL, 2, 2, fn_intersects, "(list(A), list(A))->bool"},
};
const size_t ck__cel_sets_lib_len = sizeof(ck__cel_sets_lib) / sizeof(ck__cel_sets_lib[0]);
