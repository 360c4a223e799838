/*
 * lists.c - the list functions Kubernetes 1.32 adds to CEL (k8s.io/apiserver/pkg/cel/
 * library/lists.go): isSorted, sum, min, max, indexOf, lastIndexOf, all on a list
 * receiver.
 *
 * Elements compare as the < operator compares them (numbers across int, uint and
 * double); sum adds numbers or durations as + does, so mixed int and double is "no such overload"
 * and an overflow an error. min and max of an empty list are errors, the sum of an empty list is 0.
 */
#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

FN(fn_is_sorted)
{
    const struct ck__cel_val *l = args[0];
    if (l->type != CK_CEL_LIST)
        return NO_OVERLOAD();
    if (!ck__cel_charge(ev, l->list.n))
        return ck__cel_fatal(ev);
    for (size_t i = 1; i < l->list.n; i++) {
        int c;
        if (!ck__cel_compare(l->list.v[i - 1], l->list.v[i], &c))
            return ck__cel_no_overload(ev, "isSorted", &l->list.v[i - 1], 2);
        if (c == 1)
            return &ck__cel_false;
    }
    return &ck__cel_true;
}

FN(fn_sum)
{
    const struct ck__cel_val *l = args[0];
    if (l->type != CK_CEL_LIST)
        return NO_OVERLOAD();
    if (!ck__cel_charge(ev, l->list.n))
        return ck__cel_fatal(ev);
    if (l->list.n == 0)
        return ck__cel_int(ev, 0);
    int type = l->list.v[0]->type;
    int64_t si = 0;
    uint64_t su = 0;
    int64_t sn = 0; /* a duration sum's nanoseconds */
    double sd = 0;
    for (size_t i = 0; i < l->list.n; i++) {
        const struct ck__cel_val *e = l->list.v[i];
        if (e->type != type)
            return ck__cel_no_overload(ev, "sum", &l->list.v[i], 1);
        if (type == CK_CEL_INT) {
            if (__builtin_add_overflow(si, e->i, &si))
                return ck__cel_errorf(ev, "return error for overflow");
        } else if (type == CK_CEL_UINT) {
            if (__builtin_add_overflow(su, e->u, &su))
                return ck__cel_errorf(ev, "return error for overflow");
        } else if (type == CK_CEL_DOUBLE) {
            sd += e->d;
        } else if (type == CK_CEL_DURATION) {
            if (__builtin_add_overflow(si, e->t.sec, &si) ||
                __builtin_add_overflow(sn, (int64_t)e->t.nsec, &sn))
                return ck__cel_errorf(ev, "return error for overflow");
        } else {
            return ck__cel_no_overload(ev, "sum", &l->list.v[i], 1);
        }
    }
    if (type == CK_CEL_INT)
        return ck__cel_int(ev, si);
    if (type == CK_CEL_UINT)
        return ck__cel_uint(ev, su);
    if (type == CK_CEL_DURATION) {
        int64_t ns = sn;
        si += ns / 1000000000;
        ns %= 1000000000;
        if (!ck__cel_duration_ok(si, ns))
            return ck__cel_errorf(ev, "duration out of range");
        struct ck__cel_val *d = ck__cel_new(ev, CK_CEL_DURATION);
        if (!ck__cel_is_error(d)) {
            d->t.sec = si;
            d->t.nsec = (int32_t)ns;
            if (d->t.sec > 0 && d->t.nsec < 0) {
                d->t.sec--;
                d->t.nsec += 1000000000;
            } else if (d->t.sec < 0 && d->t.nsec > 0) {
                d->t.sec++;
                d->t.nsec -= 1000000000;
            }
        }
        return d;
    }
    return ck__cel_double(ev, sd);
}

static struct ck__cel_val *extreme(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                   struct ck__cel_val **args, size_t nargs, int want)
{
    const struct ck__cel_val *l = args[0];
    if (l->type != CK_CEL_LIST)
        return NO_OVERLOAD();
    if (!ck__cel_charge(ev, l->list.n))
        return ck__cel_fatal(ev);
    if (l->list.n == 0)
        return ck__cel_errorf(ev, "%s called on empty list", call->call.name);
    struct ck__cel_val *best = l->list.v[0];
    for (size_t i = 1; i < l->list.n; i++) {
        int c;
        if (!ck__cel_compare(l->list.v[i], best, &c))
            return ck__cel_no_overload(ev, call->call.name, &l->list.v[i - 1], 2);
        if (c == want)
            best = l->list.v[i];
    }
    return best;
}

FN(fn_min)
{
    return extreme(ev, call, args, nargs, -1);
}

FN(fn_max)
{
    return extreme(ev, call, args, nargs, 1);
}

struct ck__cel_val *ck__cel_list_index(struct ck__cel_eval *ev, struct ck__cel_val **args,
                                       bool last)
{
    const struct ck__cel_val *l = args[0];
    if (!ck__cel_charge(ev, l->list.n))
        return ck__cel_fatal(ev);
    for (size_t k = 0; k < l->list.n; k++) {
        size_t i = last ? l->list.n - 1 - k : k;
        if (ck__cel_equal(l->list.v[i], args[1]))
            return ck__cel_int(ev, (int64_t)i);
    }
    return ck__cel_int(ev, -1);
}

#define M CK__CEL_MEMBER

/* Overloads of the functions below for the type checker (check.c). */
#define IS_SORTED_SIG                                                                              \
    "list(int).()->bool;list(uint).()->bool;list(double).()->bool;"                                \
    "list(bool).()->bool;list(string).()->bool;list(bytes).()->bool;"                              \
    "list(duration).()->bool;list(timestamp).()->bool"
#define SUM_SIG                                                                                    \
    "list(int).()->int;list(uint).()->uint;list(double).()->double;"                               \
    "list(duration).()->duration"
#define MIN_MAX_SIG                                                                                \
    "list(int).()->int;list(uint).()->uint;list(double).()->double;"                               \
    "list(bool).()->bool;list(string).()->string;list(bytes).()->bytes;"                           \
    "list(duration).()->duration;list(timestamp).()->timestamp"

const struct ck__cel_func ck__cel_lists_lib[] = {
    {"isSorted", M, 1, 1, fn_is_sorted, IS_SORTED_SIG},
    {"sum", M, 1, 1, fn_sum, SUM_SIG},
    {"min", M, 1, 1, fn_min, MIN_MAX_SIG},
    {"max", M, 1, 1, fn_max, MIN_MAX_SIG},
};
const size_t ck__cel_lists_lib_len = sizeof(ck__cel_lists_lib) / sizeof(ck__cel_lists_lib[0]);
