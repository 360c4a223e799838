/*
 * optional.c - CEL's optional values, which Kubernetes enables from 1.29 (cel-go's
 * OptionalTypes): optional.of(x), optional.ofNonZeroValue(x), optional.none(), and on an
 * optional o.hasValue(), o.value(), o.orValue(d), o.or(p).
 *
 * The syntax that makes optionals (a.?f, a[?k], [?e], {?k: v}) is parsed in parser.c
 * and evaluated in eval.c, as are o.optMap(x, f) and o.optFlatMap(x, f), macros. An
 * optional is a value of type CK_CEL_OPTIONAL whose opt is its value, NULL for none.
 */
#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)

FN(fn_of)
{
    (void)call;
    (void)nargs;
    return ck__cel_optional(ev, args[0]);
}

FN(fn_of_non_zero)
{
    (void)call;
    (void)nargs;
    return ck__cel_optional(ev, ck__cel_is_zero(args[0]) ? NULL : args[0]);
}

FN(fn_none)
{
    (void)call;
    (void)args;
    (void)nargs;
    return ck__cel_optional(ev, NULL);
}

static bool is_optional(const struct ck__cel_val *v)
{
    return v->type == CK_CEL_OPTIONAL;
}

FN(fn_has_value)
{
    if (!is_optional(args[0]))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    return ck__cel_bool(args[0]->opt != NULL);
}

FN(fn_value)
{
    if (!is_optional(args[0]))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    return args[0]->opt ? args[0]->opt : ck__cel_errorf(ev, "optional.none() dereference");
}

FN(fn_or_value)
{
    if (!is_optional(args[0]))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    return args[0]->opt ? args[0]->opt : args[1];
}

FN(fn_or)
{
    if (!is_optional(args[0]) || !is_optional(args[1]))
        return ck__cel_no_overload(ev, call->call.name, args, nargs);
    return args[0]->opt ? args[0] : args[1];
}

const struct ck__cel_func ck__cel_optional_lib[] = {
    {"optional.of", CK__CEL_GLOBAL, 1, 1, fn_of, "(A)->optional_type(A)"},
    {"optional.ofNonZeroValue", CK__CEL_GLOBAL, 1, 1, fn_of_non_zero, "(A)->optional_type(A)"},
    {"optional.none", CK__CEL_GLOBAL, 0, 0, fn_none, "()->optional_type(A)"},
    {"hasValue", CK__CEL_MEMBER, 1, 1, fn_has_value, "optional_type(A).()->bool"},
    {"value", CK__CEL_MEMBER, 1, 1, fn_value, "optional_type(A).()->A"},
    {"orValue", CK__CEL_MEMBER, 2, 2, fn_or_value, "optional_type(A).(A)->A"},
    {"or", CK__CEL_MEMBER, 2, 2, fn_or, "optional_type(A).(optional_type(A))->optional_type(A)"},
};
const size_t ck__cel_optional_lib_len =
    sizeof(ck__cel_optional_lib) / sizeof(ck__cel_optional_lib[0]);
