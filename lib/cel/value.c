/*
 * value.c - CEL values: construction in an evaluation's arena, JSON in and out,
 * equality, ordering and their text.
 *
 * Values are immutable once built, so lists and maps share their elements freely.
 * Errors are values too (CK__CEL_ERROR) so that && || ?: and the comprehensions can
 * absorb them as CEL says; running out of the budget is not a value but ev->fatal,
 * which nothing absorbs. When an allocation fails the constructors return a static
 * error value and set ev->fatal: callers check ck__cel_is_error() on lists and maps
 * before filling them.
 *
 * Equality is cel-spec's heterogeneous equality (langdef.md "Equality"): int, uint and
 * double compare by numeric value, values of other differing types are simply unequal.
 * JSON maps as Kubernetes maps unstructured objects (apiserver/pkg/cel/types.go):
 * objects to maps with string keys, arrays to lists, integers to int, others to double.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck__cel_val ck__cel_null = {.type = CK_CEL_NULL};
struct ck__cel_val ck__cel_true = {.type = CK_CEL_BOOL, .b = true};
struct ck__cel_val ck__cel_false = {.type = CK_CEL_BOOL, .b = false};
static struct ck__cel_val out_of_budget = {
    .type = CK__CEL_ERROR, .s = {"operation cancelled: actual cost limit exceeded", 47}};
static struct ck__cel_val out_of_memory = {.type = CK__CEL_ERROR, .s = {"out of memory", 13}};

bool ck__cel_charge(struct ck__cel_eval *ev, uint64_t n)
{
    if (ev->fatal)
        return false;
    ev->cost += n;
    if (ev->cost > ev->limit) {
        ev->fatal = CK_CEL_ECOST;
        return false;
    }
    return true;
}

struct ck__cel_val *ck__cel_alloc_failed(struct ck__cel_eval *ev, size_t n)
{
    if (!ev->fatal)
        ev->fatal = ev->arena->limit && ev->arena->used + n + 16 > ev->arena->limit ? CK_CEL_ECOST
                                                                                    : CK_ENOMEM;
    return ev->fatal == CK_CEL_ECOST ? &out_of_budget : &out_of_memory;
}

struct ck__cel_val *ck__cel_fatal(struct ck__cel_eval *ev)
{
    return ev->fatal == CK_CEL_ECOST ? &out_of_budget : &out_of_memory;
}

struct ck__cel_val *ck__cel_new(struct ck__cel_eval *ev, int type)
{
    struct ck__cel_val *v = ck__cel_alloc(ev->arena, sizeof(*v));
    if (!v)
        return ck__cel_alloc_failed(ev, sizeof(*v));
    v->type = type;
    return v;
}

struct ck__cel_val *ck__cel_bool(bool b)
{
    return b ? &ck__cel_true : &ck__cel_false;
}

struct ck__cel_val *ck__cel_int(struct ck__cel_eval *ev, int64_t i)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_INT);
    if (!ck__cel_is_error(v))
        v->i = i;
    return v;
}

struct ck__cel_val *ck__cel_uint(struct ck__cel_eval *ev, uint64_t u)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_UINT);
    if (!ck__cel_is_error(v))
        v->u = u;
    return v;
}

struct ck__cel_val *ck__cel_double(struct ck__cel_eval *ev, double d)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_DOUBLE);
    if (!ck__cel_is_error(v))
        v->d = d;
    return v;
}

struct ck__cel_val *ck__cel_str(struct ck__cel_eval *ev, int type, const char *s, size_t n)
{
    struct ck__cel_val *v = ck__cel_new(ev, type);
    if (ev->fatal)
        return ck__cel_fatal(ev);
    char *p = ck__cel_strndup(ev->arena, s, n);
    if (!p)
        return ck__cel_alloc_failed(ev, n);
    v->s.p = p;
    v->s.len = n;
    return v;
}

struct ck__cel_val *ck__cel_type_val(struct ck__cel_eval *ev, const char *name)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_TYPE);
    if (!ck__cel_is_error(v)) {
        v->s.p = name;
        v->s.len = strlen(name);
    }
    return v;
}

struct ck__cel_val *ck__cel_list(struct ck__cel_eval *ev, size_t n)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_LIST);
    if (ck__cel_is_error(v))
        return v;
    if (n > SIZE_MAX / sizeof(*v->list.v) / 2)
        return ck__cel_alloc_failed(ev, SIZE_MAX / 2);
    v->list.v = ck__cel_alloc(ev->arena, (n ? n : 1) * sizeof(*v->list.v));
    if (!v->list.v)
        return ck__cel_alloc_failed(ev, n * sizeof(*v->list.v));
    v->list.n = n;
    return v;
}

struct ck__cel_val *ck__cel_map(struct ck__cel_eval *ev, size_t n)
{
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_MAP);
    if (ck__cel_is_error(v))
        return v;
    if (n > SIZE_MAX / sizeof(*v->list.v) / 4)
        return ck__cel_alloc_failed(ev, SIZE_MAX / 2);
    v->map.k = ck__cel_alloc(ev->arena, (n ? n : 1) * sizeof(*v->map.k));
    v->map.v = ck__cel_alloc(ev->arena, (n ? n : 1) * sizeof(*v->map.v));
    if (!v->map.k || !v->map.v)
        return ck__cel_alloc_failed(ev, 2 * n * sizeof(*v->map.k));
    v->map.n = n;
    return v;
}

struct ck__cel_val *ck__cel_errorf(struct ck__cel_eval *ev, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct ck__cel_val *v = ck__cel_str(ev, CK__CEL_ERROR, msg, strlen(msg));
    return v;
}

struct ck__cel_val *ck__cel_no_overload(struct ck__cel_eval *ev, const char *fn,
                                        struct ck__cel_val **args, size_t nargs)
{
    for (size_t i = 0; i < nargs; i++)
        if (ck__cel_is_error(args[i]))
            return args[i];
    char types[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < nargs && len < sizeof(types); i++)
        len += (size_t)snprintf(types + len, sizeof(types) - len, "%s%s", i ? ", " : "",
                                ck__cel_type_name(args[i]));
    return ck__cel_errorf(ev, "no such overload: %s(%s)", fn, types);
}

const char *ck__cel_type_name(const struct ck__cel_val *v)
{
    switch (v->type) {
    case CK_CEL_NULL:
        return "null_type";
    case CK_CEL_BOOL:
        return "bool";
    case CK_CEL_INT:
        return "int";
    case CK_CEL_UINT:
        return "uint";
    case CK_CEL_DOUBLE:
        return "double";
    case CK_CEL_STRING:
        return "string";
    case CK_CEL_BYTES:
        return "bytes";
    case CK_CEL_LIST:
        return "list";
    case CK_CEL_MAP:
        return "map";
    case CK_CEL_TYPE:
        return "type";
    case CK_CEL_DURATION:
        return "google.protobuf.Duration";
    case CK_CEL_TIMESTAMP:
        return "google.protobuf.Timestamp";
    case CK_CEL_OPTIONAL:
        return "optional_type";
    case CK_CEL_IP:
        return "net.IP";
    case CK_CEL_CIDR:
        return "net.CIDR";
    case CK_CEL_QUANTITY:
        return "kubernetes.Quantity";
    case CK_CEL_OBJECT:
        return ck__cel_authz_type_name(v);
    default:
        return "error";
    }
}

static const char *const reserved[] = {
    "true",     "false",   "null",      "in",       "as",  "break",  "const",
    "continue", "else",    "for",       "function", "if",  "import", "let",
    "loop",     "package", "namespace", "return",   "var", "void",   "while",
};

bool ck__cel_escape(const char *name, struct ck__buf *out)
{
    if (!*name || (*name >= '0' && *name <= '9'))
        return false;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (!strcmp(reserved[i], name)) {
            ck__buf_printf(out, "__%s__", name);
            return true;
        }
    for (const char *p = name; *p; p++) {
        if (p[0] == '_' && p[1] == '_') {
            ck__buf_adds(out, "__underscores__");
            p++;
        } else if (*p == '.' || *p == '-' || *p == '/') {
            ck__buf_adds(out, *p == '.' ? "__dot__" : *p == '-' ? "__dash__" : "__slash__");
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '_') {
            ck__buf_add(out, p, 1);
        } else {
            return false;
        }
    }
    return true;
}

/* A string of a format Kubernetes types (byte, duration, date, date-time) as that type;
 * NULL when the schema has no such format or the text is not of it. */
static struct ck__cel_val *formatted(struct ck__cel_eval *ev, const json_t *j, const json_t *schema)
{
    const char *format = json_string_value(json_object_get(schema, "format"));
    const char *text = json_string_value(j);
    if (!format || strlen(text) != json_string_length(j))
        return NULL;
    int64_t sec;
    int32_t nsec;
    char date[32];
    if (!strcmp(format, "byte")) {
        size_t n;
        char *data = ck_base64_decode(text, &n);
        struct ck__cel_val *v = data ? ck__cel_str(ev, CK_CEL_BYTES, data, n) : NULL;
        free(data);
        return v;
    }
    if (!strcmp(format, "date") && strlen(text) == 10) {
        snprintf(date, sizeof(date), "%sT00:00:00Z", text);
        text = date;
    } else if (strcmp(format, "date-time") && strcmp(format, "duration")) {
        return NULL;
    }
    int type = !strcmp(format, "duration") ? CK_CEL_DURATION : CK_CEL_TIMESTAMP;
    if (type == CK_CEL_DURATION ? !ck__cel_parse_duration(text, strlen(text), &sec, &nsec)
                                : !ck__cel_parse_timestamp(text, &sec, &nsec))
        return NULL;
    struct ck__cel_val *v = ck__cel_new(ev, type);
    if (!ck__cel_is_error(v)) {
        v->t.sec = sec;
        v->t.nsec = nsec;
    }
    return v;
}

/* Whether name is its own escaped form: letters, digits and single underscores, not
 * starting with a digit, no reserved word (most keys; they need no copy). */
static bool escapes_to_itself(const char *name)
{
    if (!*name || (*name >= '0' && *name <= '9'))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              (*p == '_' && p[1] != '_')))
            return false;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (reserved[i][0] == name[0] && !strcmp(reserved[i], name))
            return false;
    return true;
}

/* An object's key as CEL reaches it: a property of the schema by its escaped name. */
static struct ck__cel_val *key_of(struct ck__cel_eval *ev, const char *key, const json_t *schema)
{
    if (escapes_to_itself(key))
        return ck__cel_str(ev, CK_CEL_STRING, key, strlen(key));
    struct ck__buf b = {0};
    bool escaped = json_object_get(json_object_get(schema, "properties"), key) &&
                   ck__cel_escape(key, &b) && b.p;
    struct ck__cel_val *k = escaped ? ck__cel_str(ev, CK_CEL_STRING, b.p, b.len)
                                    : ck__cel_str(ev, CK_CEL_STRING, key, strlen(key));
    ck__buf_release(&b);
    return k;
}

struct ck__cel_val *ck__cel_from_json(struct ck__cel_eval *ev, const json_t *j,
                                      const json_t *schema, int depth)
{
    if (depth > 1000)
        return ck__cel_errorf(ev, "JSON nested too deeply");
    struct ck__cel_val *typed;
    switch (json_typeof(j)) {
    case JSON_NULL:
        return &ck__cel_null;
    case JSON_TRUE:
        return &ck__cel_true;
    case JSON_FALSE:
        return &ck__cel_false;
    case JSON_INTEGER:
        return ck__cel_int(ev, (int64_t)json_integer_value(j));
    case JSON_REAL:
        return ck__cel_double(ev, json_real_value(j));
    case JSON_STRING:
        typed = schema ? formatted(ev, j, schema) : NULL;
        return typed ? typed
                     : ck__cel_str(ev, CK_CEL_STRING, json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
        struct ck__cel_val *l = ck__cel_list(ev, json_array_size(j));
        const json_t *items = json_object_get(schema, "items");
        for (size_t i = 0; !ck__cel_is_error(l) && i < l->list.n; i++) {
            struct ck__cel_val *e = ck__cel_from_json(ev, json_array_get(j, i), items, depth + 1);
            if (ck__cel_is_error(e))
                return e;
            l->list.v[i] = e;
        }
        return l;
    }
    case JSON_OBJECT: {
        struct ck__cel_val *m = ck__cel_map(ev, json_object_size(j));
        if (ck__cel_is_error(m))
            return m;
        const json_t *additional = json_object_get(schema, "additionalProperties");
        if (!json_is_object(additional))
            additional = NULL;
        size_t i = 0;
        const char *key;
        json_t *child;
        json_object_foreach((json_t *)j, key, child)
        {
            const json_t *sub = additional
                                    ? additional
                                    : json_object_get(json_object_get(schema, "properties"), key);
            struct ck__cel_val *k = additional ? ck__cel_str(ev, CK_CEL_STRING, key, strlen(key))
                                               : key_of(ev, key, schema);
            struct ck__cel_val *e = ck__cel_from_json(ev, child, sub, depth + 1);
            if (ck__cel_is_error(k))
                return k;
            if (ck__cel_is_error(e))
                return e;
            m->map.k[i] = k;
            m->map.v[i++] = e;
        }
        return m;
    }
    }
    return &ck__cel_null;
}

json_t *ck__cel_to_json(const struct ck__cel_val *v, int *ret_err)
{
    char buf[64];
    switch (v->type) {
    case CK_CEL_NULL:
        return json_null();
    case CK_CEL_BOOL:
        return json_boolean(v->b);
    case CK_CEL_INT:
        return json_integer((json_int_t)v->i);
    case CK_CEL_UINT:
        if (v->u > INT64_MAX)
            return json_real((double)v->u);
        return json_integer((json_int_t)v->u);
    case CK_CEL_DOUBLE:
        if (!isfinite(v->d)) {
            *ret_err = CK_EINVAL;
            return NULL;
        }
        return json_real(v->d);
    case CK_CEL_STRING:
    case CK_CEL_TYPE:
        return json_stringn(v->s.p, v->s.len);
    case CK_CEL_BYTES: {
        char *enc = ck_base64_encode(v->s.p, v->s.len);
        json_t *j = enc ? json_string(enc) : NULL;
        free(enc);
        return j;
    }
    case CK_CEL_DURATION:
        ck__cel_format_duration(v->t.sec, v->t.nsec, buf, sizeof(buf));
        return json_string(buf);
    case CK_CEL_TIMESTAMP:
        ck__cel_format_timestamp(v->t.sec, v->t.nsec, buf, sizeof(buf));
        return json_string(buf);
    case CK_CEL_OPTIONAL:
        return v->opt ? ck__cel_to_json(v->opt, ret_err) : json_null();
    case CK_CEL_IP:
    case CK_CEL_CIDR:
        ck__cel_format_net(v, buf, sizeof(buf));
        return json_string(buf);
    case CK_CEL_QUANTITY:
        ck__cel_format_quantity(v, buf, sizeof(buf));
        return json_string(buf);
    case CK_CEL_LIST: {
        json_t *a = json_array();
        for (size_t i = 0; a && i < v->list.n; i++) {
            json_t *e = ck__cel_to_json(v->list.v[i], ret_err);
            if (!e || json_array_append_new(a, e)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case CK_CEL_MAP: {
        json_t *o = json_object();
        for (size_t i = 0; o && i < v->map.n; i++) {
            if (v->map.k[i]->type != CK_CEL_STRING) {
                *ret_err = CK_EINVAL;
                json_decref(o);
                return NULL;
            }
            json_t *e = ck__cel_to_json(v->map.v[i], ret_err);
            if (!e || json_object_setn_new(o, v->map.k[i]->s.p, v->map.k[i]->s.len, e)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    }
    *ret_err = CK_EINVAL;
    return NULL;
}

static bool is_number(const struct ck__cel_val *v)
{
    return v->type == CK_CEL_INT || v->type == CK_CEL_UINT || v->type == CK_CEL_DOUBLE;
}

/* Numeric comparison across int, uint and double: -1, 0, 1, or 2 when unordered (NaN). */
static int compare_numbers(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    if (a->type == CK_CEL_DOUBLE || b->type == CK_CEL_DOUBLE) {
        if (a->type == CK_CEL_DOUBLE && b->type == CK_CEL_DOUBLE)
            return isnan(a->d) || isnan(b->d) ? 2 : (a->d > b->d) - (a->d < b->d);
        /* cel-go converts the integer to a double (lossy beyond 2^53) */
        double x = a->type == CK_CEL_DOUBLE ? a->d
                   : a->type == CK_CEL_INT  ? (double)a->i
                                            : (double)a->u;
        double y = b->type == CK_CEL_DOUBLE ? b->d
                   : b->type == CK_CEL_INT  ? (double)b->i
                                            : (double)b->u;
        return isnan(x) || isnan(y) ? 2 : (x > y) - (x < y);
    }
    if (a->type == CK_CEL_INT && b->type == CK_CEL_INT)
        return (a->i > b->i) - (a->i < b->i);
    if (a->type == CK_CEL_UINT && b->type == CK_CEL_UINT)
        return (a->u > b->u) - (a->u < b->u);
    if (a->type == CK_CEL_INT)
        return a->i < 0 ? -1 : ((uint64_t)a->i > b->u) - ((uint64_t)a->i < b->u);
    return b->i < 0 ? 1 : (a->u > (uint64_t)b->i) - (a->u < (uint64_t)b->i);
}

static int compare_bytes(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    size_t n = a->s.len < b->s.len ? a->s.len : b->s.len;
    int r = n ? memcmp(a->s.p, b->s.p, n) : 0;
    if (r)
        return r < 0 ? -1 : 1;
    return (a->s.len > b->s.len) - (a->s.len < b->s.len);
}

bool ck__cel_compare(const struct ck__cel_val *a, const struct ck__cel_val *b, int *ret)
{
    if (is_number(a) && is_number(b)) {
        *ret = compare_numbers(a, b);
        return true;
    }
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case CK_CEL_BOOL:
        *ret = (a->b > b->b) - (a->b < b->b);
        return true;
    case CK_CEL_STRING:
    case CK_CEL_BYTES:
        *ret = compare_bytes(a, b);
        return true;
    case CK_CEL_DURATION:
    case CK_CEL_TIMESTAMP:
        *ret = a->t.sec != b->t.sec ? (a->t.sec > b->t.sec) - (a->t.sec < b->t.sec)
                                    : (a->t.nsec > b->t.nsec) - (a->t.nsec < b->t.nsec);
        return true;
    default:
        return false;
    }
}

bool ck__cel_equal(const struct ck__cel_val *a, const struct ck__cel_val *b)
{
    if (is_number(a) && is_number(b))
        return compare_numbers(a, b) == 0;
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case CK_CEL_NULL:
        return true;
    case CK_CEL_BOOL:
        return a->b == b->b;
    case CK_CEL_STRING:
    case CK_CEL_BYTES:
    case CK_CEL_TYPE:
        return a->s.len == b->s.len && !memcmp(a->s.p, b->s.p, a->s.len);
    case CK_CEL_DURATION:
    case CK_CEL_TIMESTAMP:
        return a->t.sec == b->t.sec && a->t.nsec == b->t.nsec;
    case CK_CEL_LIST:
        if (a->list.n != b->list.n)
            return false;
        for (size_t i = 0; i < a->list.n; i++)
            if (!ck__cel_equal(a->list.v[i], b->list.v[i]))
                return false;
        return true;
    case CK_CEL_OPTIONAL:
        return a->opt && b->opt ? ck__cel_equal(a->opt, b->opt) : a->opt == b->opt;
    case CK_CEL_QUANTITY:
        return ck__cel_quantity_equal(a, b);
    case CK_CEL_OBJECT:
        return a->authz == b->authz;
    case CK_CEL_IP:
    case CK_CEL_CIDR:
        return a->ip.family == b->ip.family && a->ip.bits == b->ip.bits &&
               !memcmp(a->ip.a, b->ip.a, sizeof(a->ip.a));
    case CK_CEL_MAP:
        if (a->map.n != b->map.n)
            return false;
        for (size_t i = 0; i < a->map.n; i++) {
            struct ck__cel_val *o = ck__cel_map_get(b, a->map.k[i]);
            if (!o || !ck__cel_equal(a->map.v[i], o))
                return false;
        }
        return true;
    default:
        return false;
    }
}

struct ck__cel_val *ck__cel_map_get(const struct ck__cel_val *map, const struct ck__cel_val *key)
{
    for (size_t i = 0; i < map->map.n; i++) {
        const struct ck__cel_val *k = map->map.k[i];
        if (k->type == key->type || (is_number(k) && is_number(key)))
            if (ck__cel_equal(k, key))
                return map->map.v[i];
    }
    return NULL;
}

struct ck__cel_val *ck__cel_optional(struct ck__cel_eval *ev, struct ck__cel_val *v)
{
    struct ck__cel_val *o = ck__cel_new(ev, CK_CEL_OPTIONAL);
    if (!ck__cel_is_error(o))
        o->opt = v;
    return o;
}

bool ck__cel_is_zero(const struct ck__cel_val *v)
{
    switch (v->type) {
    case CK_CEL_NULL:
        return true;
    case CK_CEL_BOOL:
        return !v->b;
    case CK_CEL_INT:
        return v->i == 0;
    case CK_CEL_UINT:
        return v->u == 0;
    case CK_CEL_DOUBLE:
        return v->d == 0;
    case CK_CEL_STRING:
    case CK_CEL_BYTES:
        return v->s.len == 0;
    case CK_CEL_LIST:
        return v->list.n == 0;
    case CK_CEL_MAP:
        return v->map.n == 0;
    case CK_CEL_DURATION:
    case CK_CEL_TIMESTAMP:
        return v->t.sec == 0 && v->t.nsec == 0;
    case CK_CEL_OPTIONAL:
        return v->opt == NULL;
    default:
        return false;
    }
}

/* ---- text ---------------------------------------------------------------------- */

void ck__cel_format_double(double d, char *buf, size_t size)
{
    if (isnan(d)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, size, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* the shortest digits that read back, then Go's choice between %e and %f */
    char e[40];
    int prec;
    for (prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, d);
        if (strtod(e, NULL) == d)
            break;
    }
    char *x = strchr(e, 'e');
    int exp = atoi(x + 1);
    if (exp < -4 || exp >= 21) {
        /* mantissa as is, exponent with at least two digits (C prints the same) */
        snprintf(buf, size, "%s", e);
        return;
    }
    int decimals = prec - exp;
    snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, d);
}

void ck__cel_format_duration(int64_t sec, int32_t nsec, char *buf, size_t size)
{
    bool neg = sec < 0 || nsec < 0;
    uint64_t s = sec < 0 ? (uint64_t)0 - (uint64_t)sec : (uint64_t)sec;
    uint32_t ns = (uint32_t)(nsec < 0 ? -nsec : nsec);
    if (!ns) {
        snprintf(buf, size, "%s%" PRIu64 "s", neg ? "-" : "", s);
        return;
    }
    char frac[16];
    snprintf(frac, sizeof(frac), "%09u", ns);
    size_t n = strlen(frac);
    while (n > 0 && frac[n - 1] == '0')
        frac[--n] = '\0';
    snprintf(buf, size, "%s%" PRIu64 ".%ss", neg ? "-" : "", s, frac);
}

void ck__cel_format_timestamp(int64_t sec, int32_t nsec, char *buf, size_t size)
{
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    char frac[16] = "";
    if (nsec) {
        snprintf(frac, sizeof(frac), ".%09d", nsec);
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0') /* nsec has a digit that is not 0: '.' stays */
            frac[--n] = '\0';
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static void format_string(struct ck__buf *b, const char *prefix, const char *s, size_t n,
                          bool bytes)
{
    ck__buf_printf(b, "%s\"", prefix);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            ck__buf_printf(b, "\\%c", c);
        else if (c == '\n')
            ck__buf_adds(b, "\\n");
        else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80))
            ck__buf_printf(b, "\\x%02x", c);
        else
            ck__buf_add(b, &s[i], 1);
    }
    ck__buf_adds(b, "\"");
}

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ck__cel_format(struct ck__buf *b, const struct ck__cel_val *v)
{
    char buf[64];
    switch (v->type) {
    case CK_CEL_NULL:
        ck__buf_adds(b, "null");
        break;
    case CK_CEL_BOOL:
        ck__buf_adds(b, v->b ? "true" : "false");
        break;
    case CK_CEL_INT:
        ck__buf_printf(b, "%" PRId64, v->i);
        break;
    case CK_CEL_UINT:
        ck__buf_printf(b, "%" PRIu64 "u", v->u);
        break;
    case CK_CEL_DOUBLE:
        if (!isfinite(v->d)) {
            ck__cel_format_double(v->d, buf, sizeof(buf));
            ck__buf_printf(b, "double(\"%s\")", buf);
            break;
        }
        ck__cel_format_double(v->d, buf, sizeof(buf));
        ck__buf_printf(b, "%s%s", buf, strpbrk(buf, ".e") ? "" : ".0");
        break;
    case CK_CEL_STRING:
        format_string(b, "", v->s.p, v->s.len, false);
        break;
    case CK_CEL_BYTES:
        format_string(b, "b", v->s.p, v->s.len, true);
        break;
    case CK_CEL_TYPE:
        ck__buf_adds(b, v->s.p);
        break;
    case CK_CEL_DURATION:
        ck__cel_format_duration(v->t.sec, v->t.nsec, buf, sizeof(buf));
        ck__buf_printf(b, "duration(\"%s\")", buf);
        break;
    case CK_CEL_TIMESTAMP:
        ck__cel_format_timestamp(v->t.sec, v->t.nsec, buf, sizeof(buf));
        ck__buf_printf(b, "timestamp(\"%s\")", buf);
        break;
    case CK_CEL_QUANTITY:
        ck__cel_format_quantity(v, buf, sizeof(buf));
        ck__buf_printf(b, "quantity(\"%s\")", buf);
        break;
    case CK_CEL_IP:
    case CK_CEL_CIDR:
        ck__cel_format_net(v, buf, sizeof(buf));
        ck__buf_printf(b, "%s(\"%s\")", v->type == CK_CEL_IP ? "ip" : "cidr", buf);
        break;
    case CK_CEL_OPTIONAL:
        if (!v->opt) {
            ck__buf_adds(b, "optional.none()");
            break;
        }
        ck__buf_adds(b, "optional.of(");
        ck__cel_format(b, v->opt);
        ck__buf_adds(b, ")");
        break;
    case CK_CEL_OBJECT:
        ck__buf_adds(b, ck__cel_authz_type_name(v));
        break;
    case CK_CEL_LIST:
        ck__buf_adds(b, "[");
        for (size_t i = 0; i < v->list.n; i++) {
            if (i)
                ck__buf_adds(b, ", ");
            ck__cel_format(b, v->list.v[i]);
        }
        ck__buf_adds(b, "]");
        break;
    case CK_CEL_MAP: {
        /* entries sorted by their text, so that equal maps print the same */
        char **entries = v->map.n ? calloc(v->map.n, sizeof(*entries)) : NULL;
        if (v->map.n && !entries) {
            b->err = CK_ENOMEM;
            break;
        }
        for (size_t i = 0; i < v->map.n; i++) {
            struct ck__buf e = {0};
            ck__cel_format(&e, v->map.k[i]);
            ck__buf_adds(&e, ": ");
            ck__cel_format(&e, v->map.v[i]);
            entries[i] = ck__buf_take(&e);
            if (!entries[i])
                b->err = CK_ENOMEM;
        }
        if (!b->err && v->map.n)
            qsort(entries, v->map.n, sizeof(*entries), compare_text);
        ck__buf_adds(b, "{");
        for (size_t i = 0; i < v->map.n; i++) {
            if (entries[i])
                ck__buf_printf(b, "%s%s", i ? ", " : "", entries[i]);
            free(entries[i]);
        }
        free(entries);
        ck__buf_adds(b, "}");
        break;
    }
    default:
        ck__buf_printf(b, "error(%s)", v->s.p);
    }
}

/* ---- UTF-8 -------------------------------------------------------------------- */

size_t ck__cel_utf8_len(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            count++;
    return count;
}

bool ck__cel_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}
