/*
 * celrules.c - a CustomResourceDefinition's x-kubernetes-validations rules:
 * compiled once per served version, evaluated on every write of a custom
 * resource.
 *
 * Mirrors apiextensions-apiserver pkg/apiserver/schema/cel (validation.go,
 * compilation.go) over the project's CEL library (include/ckube/cel.h):
 * ck_crd_rules_new() walks a version's openAPIV3Schema and builds a tree of
 * the nodes that have rules at or below them (Kubernetes' Validator), each
 * rule compiled with its messageExpression, its transition flag (the rule
 * reads oldSelf) and its fieldPath resolved against the node's schema; a
 * rule that does not compile (only a definition stored before its rules
 * were checked has one) fails every write, with the compiler's message.
 * ck_crd_rules_validate() walks that tree and the object together: at each
 * node with rules, each rule is evaluated with `self` bound to the node's
 * value (null values are not validated); a transition rule only on an
 * update and only where the node has an old value, found through object
 * fields and map entries by name and list-type map elements by their keys
 * (optionalOldSelf: oldSelf is then an optional, none on a create). Rules
 * cost what the CEL library counts: each call at most the per-call limit,
 * a request at most CK_CRD_RULES_COST_BUDGET, with Kubernetes' messages.
 * Errors carry Kubernetes' words and the node's type as the value; on an
 * update a failed rule that does not read oldSelf at a node equal to its
 * old value (or inside such a node, when the node itself cannot be
 * correlated) is dropped: ratcheting (CRDValidationRatcheting, beta and on
 * in 1.32), which returns it as a warning instead.
 *
 * The language is dynamic here (docs/cel.md): values are JSON as the
 * object holds them, not typed by the schema (a date-time string is a
 * string, a list-type set compares in order), and every field is reachable
 * by its own name; docs/differences.md lists what follows from that.
 *
 * The schema's helpers for a CRD's checks (structural.c) live here too:
 * ck__crd_rule_field_path() resolves a rule's fieldPath as Kubernetes'
 * ValidFieldPath does, and ck__crd_rule_go_value() writes a rule as Go's
 * %#v writes the ValidationRule that Kubernetes' messages show.
 *
 * Threading: a compiled tree is immutable; any number of threads may
 * validate with it at once.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/cel.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64
/* The longest message a messageExpression may give
 * (celconfig.MaxEvaluatedMessageExpressionSizeBytes). */
#define MAX_MESSAGE 5120

struct rule {
    struct ck_cel_program *prog;                   /* NULL: an empty rule, never evaluated */
    struct ck_cel_program *message;                /* the messageExpression's, or NULL */
    const char *text, *msg, *message_src, *reason; /* borrowed from the tree's schema */
    char *field_path;                              /* resolved, or NULL */
    char *compile_error; /* why the rule does not compile (a definition stored before it was
                            checked) */
    bool uses_old_self, optional_old_self;
};

struct prop;

struct node {
    const json_t *schema; /* borrowed from the tree's copy */
    const char *type;     /* the schema's type: the value of the errors at this node */
    struct rule *rules;
    size_t n_rules;
    bool uses_old_self; /* a rule of this node reads oldSelf */
    struct node *items, *additional;
    struct prop *props; /* sorted by name */
    size_t n_props;
};

struct prop {
    const char *name;
    struct node *node;
};

struct ck_crd_rules {
    json_t *schema; /* a copy of the openAPIV3Schema the nodes point into */
    struct node *root;
    uint64_t per_call_limit;
};

/* a b c concatenated (caller frees), or NULL when out of memory. */
static char *join(const char *a, const char *b, const char *c)
{
    char *out = NULL;
    return asprintf(&out, "%s%s%s", a, b, c) < 0 ? NULL : out;
}

/* ---- building ----------------------------------------------------------- */

static void node_free(struct node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n_rules; i++) {
        ck_cel_program_free(n->rules[i].prog);
        ck_cel_program_free(n->rules[i].message);
        free(n->rules[i].field_path);
        free(n->rules[i].compile_error);
    }
    free(n->rules);
    node_free(n->items);
    node_free(n->additional);
    for (size_t i = 0; i < n->n_props; i++)
        node_free(n->props[i].node);
    free(n->props);
    free(n);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct prop *)a)->name, ((const struct prop *)b)->name);
}

/* Compiles one rule of node n; a rule that does not compile is refused by the CRD's checks. */
static int compile_rule(const json_t *schema, const json_t *src, struct rule *r,
                        struct ck_err *reterr)
{
    r->text = json_string_value(json_object_get(src, "rule"));
    r->msg = json_string_value(json_object_get(src, "message"));
    r->message_src = json_string_value(json_object_get(src, "messageExpression"));
    r->reason = json_string_value(json_object_get(src, "reason"));
    r->optional_old_self = json_is_true(json_object_get(src, "optionalOldSelf"));
    const char *field_path = json_string_value(json_object_get(src, "fieldPath"));
    if (!r->text || strspn(r->text, " \t\n\r\v\f") == strlen(r->text))
        return 0; /* an empty rule is never evaluated */
    struct ck_err err = {0};
    int rc = ck_cel_compile(r->text, strlen(r->text), &r->prog, &err);
    if (rc == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (rc < 0) { /* said on every write, as Kubernetes does */
        r->compile_error = join("compilation failed: ", ck_err_message(&err), "");
        ck_err_release(&err);
        return r->compile_error ? 0 : ck_err_no_memory(reterr);
    }
    r->uses_old_self = ck_cel_program_references(r->prog, "oldSelf");
    if (r->message_src && *r->message_src) {
        rc = ck_cel_compile(r->message_src, strlen(r->message_src), &r->message, &err);
        ck_err_release(&err);
        if (rc == CK_ENOMEM)
            return ck_err_no_memory(reterr);
    }
    if (field_path && *field_path) {
        char why[160];
        rc = ck__crd_rule_field_path(schema, field_path, &r->field_path, why, sizeof(why));
        if (rc == CK_ENOMEM)
            return ck_err_no_memory(reterr);
    }
    return 0;
}

static int build(const json_t *s, int depth, struct node **ret, struct ck_err *reterr);

static int build_child(const json_t *s, int depth, struct node **ret, bool *any,
                       struct ck_err *reterr)
{
    int r = json_is_object(s) ? build(s, depth + 1, ret, reterr) : 0;
    *any = *any || *ret;
    return r;
}

/* The node for schema s, or *ret NULL when neither s nor anything below it has rules. */
static int build(const json_t *s, int depth, struct node **ret, struct ck_err *reterr)
{
    *ret = NULL;
    if (depth > MAX_DEPTH)
        return 0;
    struct node *n = ck__calloc(1, sizeof(*n));
    if (!n)
        return ck_err_no_memory(reterr);
    n->schema = s;
    n->type = json_string_value(json_object_get(s, "type"));
    if (!n->type)
        n->type = "";
    int r = 0;
    bool any = false;
    const json_t *rules = json_object_get(s, "x-kubernetes-validations");
    size_t count = json_array_size(rules);
    if (count && !(n->rules = ck__calloc(count, sizeof(*n->rules))))
        r = ck_err_no_memory(reterr);
    for (size_t i = 0; r == 0 && i < count; i++) {
        r = compile_rule(s, json_array_get(rules, i), &n->rules[n->n_rules++], reterr);
        n->uses_old_self = n->uses_old_self || n->rules[i].uses_old_self;
        any = true;
    }
    if (r == 0)
        r = build_child(json_object_get(s, "items"), depth, &n->items, &any, reterr);
    if (r == 0)
        r = build_child(json_object_get(s, "additionalProperties"), depth, &n->additional, &any,
                        reterr);
    const json_t *props = json_object_get(s, "properties");
    if (r == 0 && json_object_size(props) &&
        !(n->props = ck__calloc(json_object_size(props), sizeof(*n->props))))
        r = ck_err_no_memory(reterr);
    const char *key;
    json_t *sub;
    json_object_foreach((json_t *)props, key, sub)
    {
        struct node *child = NULL;
        if (r == 0)
            r = build_child(sub, depth, &child, &any, reterr);
        if (child)
            n->props[n->n_props++] = (struct prop){key, child};
    }
    if (n->n_props > 1)
        qsort(n->props, n->n_props, sizeof(*n->props), by_name);
    if (r < 0 || !any) {
        node_free(n);
        return r;
    }
    *ret = n;
    return 0;
}

int ck_crd_rules_new(const json_t *schema, uint64_t per_call_limit, struct ck_crd_rules **ret_rules,
                     struct ck_err *reterr)
{
    *ret_rules = NULL;
    if (!json_is_object(schema))
        return 0;
    struct ck_crd_rules *rules = ck__calloc(1, sizeof(*rules));
    if (!rules || !(rules->schema = ck__json_copy(schema))) {
        free(rules);
        return ck_err_no_memory(reterr);
    }
    rules->per_call_limit = per_call_limit ? per_call_limit : CK_CEL_DEFAULT_COST_LIMIT;
    int r = build(rules->schema, 0, &rules->root, reterr);
    if (r < 0 || !rules->root) {
        ck_crd_rules_free(rules);
        return r;
    }
    *ret_rules = rules;
    return 0;
}

struct ck_crd_rules *ck_crd_rules_free(struct ck_crd_rules *rules)
{
    if (rules) {
        node_free(rules->root);
        json_decref(rules->schema);
        free(rules);
    }
    return NULL;
}

/* ---- validating --------------------------------------------------------- */

/* Where a node stands on an update: its old value and what ratcheting compares. */
struct correlation {
    const json_t *old;     /* the old value at the node for oldSelf, or NULL */
    const json_t *ratchet; /* the value ratcheting compares with old_ratchet */
    const json_t *old_ratchet;
};

struct walk {
    const struct ck_crd_rules *rules;
    struct ck_field_errors *errs;
    int64_t budget;
    bool update;
    bool stop; /* the budget ran out, or a call passed its limit */
};

static void add_error(struct walk *w, bool ratcheted, enum ck_field_error_type type,
                      const char *path, const char *value, const char *detail)
{
    if (ratcheted)
        return; /* Kubernetes returns it as a warning */
    ck_field_errors_add(w->errs, type, path, value, value != NULL, detail ? "%s" : NULL, detail);
}

/* Kubernetes' ruleErrorString: the trimmed message, else the trimmed rule. */
static char *rule_string(const struct rule *r)
{
    const char *s = r->msg && *r->msg ? r->msg : r->text;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
        s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\n\r\v\f", s[n - 1]))
        n--;
    return strndup(s, n);
}

/* Where a failed rule's errors go: path, then the rule's fieldPath. Caller frees; NULL: ENOMEM. */
static char *error_path(const struct rule *r, const char *path)
{
    if (!r->field_path)
        return strdup(path);
    return strcmp(path, "<nil>") == 0 ? strdup(r->field_path) : join(path, ".", r->field_path);
}

/* The error of a rule that failed at where, as fieldErrorForReason makes it. */
static void rule_failed(struct walk *w, const struct node *n, const struct rule *r,
                        const char *where, bool ratcheted, const char *detail)
{
    const char *reason = r->reason ? r->reason : "";
    if (strcmp(reason, "FieldValueForbidden") == 0)
        add_error(w, ratcheted, CK_FIELD_FORBIDDEN, where, NULL, detail);
    else if (strcmp(reason, "FieldValueRequired") == 0)
        add_error(w, ratcheted, CK_FIELD_REQUIRED, where, NULL, detail);
    else if (strcmp(reason, "FieldValueDuplicate") == 0)
        add_error(w, ratcheted, CK_FIELD_DUPLICATE, where, n->type, NULL);
    else
        add_error(w, ratcheted, CK_FIELD_INVALID, where, n->type, detail);
}

/*
 * The message of a failed rule from its messageExpression (Kubernetes'
 * evalMessageExpression): NULL to fall back to the message; *stop when the
 * budget or the call's limit ran out, with the error added.
 */
static char *message_of(struct walk *w, const struct node *n, const struct rule *r,
                        const struct ck_cel_var *vars, size_t nvars, const char *path,
                        bool ratcheted)
{
    struct ck_cel_result *res = NULL;
    struct ck_err err = {0};
    uint64_t cost = 0;
    int rc = ck_cel_eval(r->message, vars, nvars, w->rules->per_call_limit, &res, &cost, &err);
    char *out = NULL;
    if (rc == CK_ENOMEM) {
        w->errs->nomem = true;
    } else if ((int64_t)cost > w->budget) {
        add_error(w, ratcheted, CK_FIELD_INVALID, path, n->type,
                  "messageExpression evaluation failed due to running out of cost budget, no "
                  "further validation rules will be run");
        w->stop = true;
    } else if (rc == CK_CEL_ECOST) {
        char *quoted = ck__quote_dup(r->message_src);
        char *detail = quoted ? join("no further validation rules will be run due to call "
                                     "cost exceeds limit for messageExpression: ",
                                     quoted, "")
                              : NULL;
        if (!detail)
            w->errs->nomem = true;
        else
            add_error(w, ratcheted, CK_FIELD_INVALID, path, n->type, detail);
        free(quoted);
        free(detail);
        w->stop = true;
    } else {
        w->budget -= (int64_t)cost;
        size_t len = 0;
        const char *s = rc == 0 ? ck_cel_result_string(res, &len) : NULL;
        while (s && len && strchr(" \t\n\r\v\f", *s))
            s++, len--;
        while (s && len && strchr(" \t\n\r\v\f", s[len - 1]))
            len--;
        /* not a string, too long, more than one line or empty: the message instead */
        if (s && len && len <= MAX_MESSAGE && !memchr(s, '\n', len) && !(out = strndup(s, len)))
            w->errs->nomem = true;
    }
    ck_cel_result_free(res);
    return out;
}

/* Evaluates the rules of n on value (old: its old value, NULL when none). */
static void eval_rules(struct walk *w, const struct node *n, const json_t *value,
                       const struct correlation *c, const char *path)
{
    if (!n->n_rules)
        return;
    if (w->budget <= 0) {
        add_error(w, false, CK_FIELD_INVALID, path, n->type,
                  "validation failed due to running out of cost budget, no further validation "
                  "rules will be run");
        w->stop = true;
        return;
    }
    const json_t *old = c->old;
    bool ratcheted = w->update && c->old_ratchet && json_equal(c->ratchet, c->old_ratchet);
    for (size_t i = 0; i < n->n_rules && !w->stop; i++) {
        const struct rule *r = &n->rules[i];
        if (r->compile_error) {
            char *detail = join("rule compile error: ", r->compile_error, "");
            if (!detail)
                w->errs->nomem = true;
            else
                add_error(w, false, CK_FIELD_INVALID, path, n->type, detail);
            free(detail);
            continue;
        }
        if (!r->prog)
            continue;
        if (r->uses_old_self && !old && !r->optional_old_self)
            continue; /* a transition rule needs an old value */
        struct ck_cel_var vars[2] = {{"self", value, false, NULL, n->schema},
                                     {"oldSelf", old, false, NULL, n->schema}};
        size_t nvars = n->uses_old_self && old ? 2 : 1;
        struct ck_cel_var opt_vars[2] = {{"self", value, false, NULL, n->schema},
                                         {"oldSelf", old, true, NULL, n->schema}};
        bool optional = r->optional_old_self && n->uses_old_self;
        struct ck_cel_result *res = NULL;
        struct ck_err err = {0};
        uint64_t cost = 0;
        int rc = ck_cel_eval(r->prog, optional ? opt_vars : vars, optional ? 2 : nvars,
                             w->rules->per_call_limit, &res, &cost, &err);
        char *rs = rule_string(r);
        if (!rs || rc == CK_ENOMEM) {
            w->errs->nomem = true;
            w->stop = true;
        } else if ((int64_t)cost > w->budget) {
            add_error(w, false, CK_FIELD_INVALID, path, n->type,
                      "validation failed due to running out of cost budget, no further "
                      "validation rules will be run");
            w->stop = true;
        } else if (rc < 0) {
            w->budget -= (int64_t)cost;
            struct ck__buf b = {0};
            if (rc == CK_CEL_ECOST)
                ck__buf_printf(&b,
                               "'%s': no further validation rules will be run due to call cost "
                               "exceeds limit for rule: %s",
                               err.msg, rs);
            else if (strncmp(err.msg, "no such overload", 16) == 0)
                ck__buf_printf(&b,
                               "'%s': call arguments did not match a supported operator, "
                               "function or macro signature for rule: %s",
                               err.msg, rs);
            else
                ck__buf_printf(&b, "%s evaluating rule: %s", err.msg, rs);
            if (b.err || !b.p)
                w->errs->nomem = true;
            else
                add_error(w, false, CK_FIELD_INVALID, path, n->type, b.p);
            ck__buf_release(&b);
            w->stop = rc == CK_CEL_ECOST;
        } else if (ck_cel_result_type(res) != CK_CEL_BOOL || !ck_cel_result_bool(res)) {
            w->budget -= (int64_t)cost;
            bool ratchet = ratcheted && !r->uses_old_self;
            char *where = error_path(r, path);
            char *detail =
                where && r->message ? message_of(w, n, r, vars, nvars, where, ratchet) : NULL;
            if (!where)
                w->errs->nomem = true;
            if (!detail && !w->stop && where) {
                if (r->msg && *r->msg)
                    detail = strdup(rs);
                else
                    detail = join("failed rule: ", rs, "");
                if (!detail)
                    w->errs->nomem = true;
            }
            if (detail && !w->stop)
                rule_failed(w, n, r, where, ratchet, detail);
            free(detail);
            free(where);
        } else {
            w->budget -= (int64_t)cost;
        }
        free(rs);
        ck_cel_result_free(res);
    }
}

static void walk_node(struct walk *w, const struct node *n, const json_t *value,
                      const struct correlation *c, const char *path, int depth);

/* The correlation of a child: old (for oldSelf) and what ratcheting compares. */
static void walk_child(struct walk *w, const struct node *n, const json_t *value, const json_t *old,
                       const json_t *ratchet_old, bool no_ratchet, const struct correlation *c,
                       const char *path, int depth)
{
    struct correlation cc = {old, value, ratchet_old};
    if (no_ratchet)
        cc.old_ratchet = NULL;
    else if (!ratchet_old) /* uncorrelated: errors ratchet with the nearest correlated parent */
        cc.ratchet = c->ratchet, cc.old_ratchet = c->old_ratchet;
    walk_node(w, n, value, &cc, path, depth + 1);
}

static void walk_node(struct walk *w, const struct node *n, const json_t *value,
                      const struct correlation *c, const char *path, int depth)
{
    if (!n || json_is_null(value) || !value || w->stop || depth > MAX_DEPTH)
        return;
    eval_rules(w, n, value, c, path);
    bool root = strcmp(path, "<nil>") == 0;
    if (json_is_object(value)) {
        const json_t *old = json_is_object(c->old) ? c->old : NULL;
        const json_t *ratchet_old =
            json_is_object(c->old_ratchet) && c->ratchet == value ? c->old_ratchet : NULL;
        for (size_t i = 0; i < n->n_props && !w->stop; i++) {
            const char *name = n->props[i].name;
            const json_t *child = json_object_get(value, name);
            if (!child)
                continue;
            char *at = root ? strdup(name) : join(path, ".", name);
            if (!at) {
                w->errs->nomem = true;
                return;
            }
            /* the root's apiVersion and kind are never ratcheted */
            bool type_meta = root && (!strcmp(name, "apiVersion") || !strcmp(name, "kind"));
            walk_child(w, n->props[i].node, child, json_object_get(old, name),
                       json_object_get(ratchet_old, name), type_meta, c, at, depth);
            free(at);
        }
        const char *key;
        const json_t *child;
        json_object_foreach((json_t *)value, key, child)
        {
            if (!n->additional || w->stop)
                break;
            char *at = root ? join("[", key, "]") : join(path, "[", key);
            char *full = at && !root ? join(at, "]", "") : NULL;
            if (!at || (!root && !full)) {
                free(at);
                w->errs->nomem = true;
                return;
            }
            walk_child(w, n->additional, child, json_object_get(old, key),
                       json_object_get(ratchet_old, key), false, c, root ? at : full, depth);
            free(at);
            free(full);
        }
    } else if (json_is_array(value) && n->items) {
        const char *list_type =
            json_string_value(json_object_get(n->schema, "x-kubernetes-list-type"));
        bool is_set = list_type && strcmp(list_type, "set") == 0;
        const json_t *ratchet_old = c->ratchet == value ? c->old_ratchet : NULL;
        size_t i;
        const json_t *item;
        json_array_foreach((json_t *)value, i, item)
        {
            if (w->stop)
                break;
            char index[32];
            snprintf(index, sizeof(index), "[%zu]", i);
            char *at = join(root ? "" : path, index, "");
            if (!at) {
                w->errs->nomem = true;
                return;
            }
            /* oldSelf: list-type map elements by their keys; ratcheting: sets by value too */
            const json_t *old = ck__list_map_element(n->schema, c->old, item);
            const json_t *ratchet = ck__list_map_element(n->schema, ratchet_old, item);
            size_t j;
            const json_t *candidate;
            json_array_foreach(is_set ? ratchet_old : NULL, j, candidate)
            {
                if (!ratchet && json_equal((json_t *)candidate, (json_t *)item))
                    ratchet = candidate;
            }
            walk_child(w, n->items, item, old, ratchet, false, c, at, depth);
            free(at);
        }
    }
}

void ck_crd_rules_validate(const struct ck_crd_rules *rules, const json_t *obj, const json_t *old,
                           int64_t budget, struct ck_field_errors *errs)
{
    if (!rules)
        return;
    for (size_t i = 0; i < errs->len; i++) {
        enum ck_field_error_type t = errs->items[i].type;
        if (t == CK_FIELD_NOT_SUPPORTED || t == CK_FIELD_REQUIRED || t == CK_FIELD_TOO_LONG ||
            t == CK_FIELD_TOO_MANY || t == CK_FIELD_TYPE_INVALID) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, "<nil>", "null", true,
                                "some validation rules were not checked because the object was "
                                "invalid; correct the existing errors to complete validation");
            return;
        }
    }
    struct walk w = {rules, errs, budget ? budget : CK_CRD_RULES_COST_BUDGET, old != NULL, false};
    struct correlation c = {old, obj, old};
    walk_node(&w, rules->root, obj, &c, "<nil>", 0);
}

/* ---- helpers of the definition's checks ---------------------------------- */

/* Go's unescapeSingleQuote: 0, or CK_EINVAL with *ret_bad the bad escape (2 bytes). */
static int unescape(const char *s, size_t len, struct ck__buf *b, const char **ret_bad)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            ck__buf_printf(b, "%c", s[i]);
            continue;
        }
        static const char from[] = "abfnrtv'\\", to[] = "\a\b\f\n\r\t\v'\\";
        const char *hit = strchr(from, s[i + 1]);
        if (!hit || !s[i + 1]) {
            *ret_bad = s + i;
            return CK_EINVAL;
        }
        ck__buf_printf(b, "%c", to[hit - from]);
        i++;
    }
    return 0;
}

/* The next token of a field path: a delimiter, a quoted string or a name. */
static size_t token(const char *p)
{
    if (*p == '\'') {
        for (size_t i = 1; p[i]; i++)
            if (p[i] == '\'' && p[i - 1] != '\\')
                return i + 1;
        return strlen(p);
    }
    if (*p == '.' || *p == '[' || *p == ']')
        return 1;
    return strcspn(p, ".[]");
}

int ck__crd_rule_field_path(const json_t *schema, const char *path, char **ret_path, char *why,
                            size_t why_size)
{
    struct ck__buf out = {0};
    const char *p = path;
    int r = 0;
    while (*p && r == 0) {
        size_t n = token(p);
        bool bracket = *p == '[';
        if (!bracket && *p != '.') {
            snprintf(why, why_size, "expected [ or . but got: %.*s", (int)n, p);
            r = CK_EINVAL;
            break;
        }
        p += n;
        if (!*p) {
            snprintf(why, why_size, "unexpected end of JSON path");
            r = CK_EINVAL;
            break;
        }
        n = token(p);
        struct ck__buf name = {0};
        if (bracket) {
            if (n < 2 || p[0] != '\'' || p[n - 1] != '\'') {
                snprintf(why, why_size, "expected single quoted string but got %.*s", (int)n, p);
                r = CK_EINVAL;
                break;
            }
            const char *bad = NULL;
            if (unescape(p + 1, n - 2, &name, &bad) < 0) {
                snprintf(why, why_size, "invalid string literal: invalid escape char %.2s", bad);
                ck__buf_release(&name);
                r = CK_EINVAL;
                break;
            }
        } else {
            ck__buf_printf(&name, "%.*s", (int)n, p);
        }
        p += n;
        if (name.err) {
            ck__buf_release(&name);
            r = CK_ENOMEM;
            break;
        }
        const char *nm = name.p ? name.p : "";
        const json_t *props = json_object_get(schema, "properties");
        const json_t *extra = json_object_get(schema, "additionalProperties");
        if (json_object_size(props)) {
            schema = json_object_get(props, nm);
            ck__buf_printf(&out, "%s%s", out.len ? "." : "", nm);
        } else if (extra && !json_is_false(extra)) {
            schema = json_is_object(extra) ? extra : NULL;
            ck__buf_printf(&out, "[%s]", nm);
        } else {
            schema = NULL;
            props = NULL;
        }
        if (!schema && (json_object_size(props) || !extra || json_is_false(extra))) {
            snprintf(why, why_size, "does not refer to a valid field");
            r = CK_EINVAL;
        }
        ck__buf_release(&name);
        if (r == 0 && bracket) {
            if (!*p) {
                snprintf(why, why_size, "unexpected end of JSON path");
                r = CK_EINVAL;
            } else if (*p != ']') {
                snprintf(why, why_size, "expected ] but got %.*s", (int)token(p), p);
                r = CK_EINVAL;
            } else {
                p++;
            }
        }
    }
    if (r < 0) {
        ck__buf_release(&out);
        return r;
    }
    if (out.err)
        return ck__buf_release(&out), CK_ENOMEM;
    *ret_path = ck__buf_take(&out);
    if (!*ret_path && !(*ret_path = strdup("")))
        return CK_ENOMEM;
    return 0;
}

char *ck__crd_rule_go_value(const json_t *rule)
{
    static const char *const fields[] = {"rule", "message", "messageExpression"};
    static const char *const names[] = {"Rule", "Message", "MessageExpression"};
    struct ck__buf b = {0};
    ck__buf_adds(&b, "apiextensions.ValidationRule{");
    for (size_t i = 0; i < 3; i++) {
        const char *v = json_string_value(json_object_get(rule, fields[i]));
        char *q = ck__quote_dup(v ? v : "");
        ck__buf_printf(&b, "%s%s:%s", i ? ", " : "", names[i], q ? q : "");
        if (!q)
            b.err = CK_ENOMEM;
        free(q);
    }
    /* Go prints a set pointer as its address, which no two servers share */
    ck__buf_printf(&b, ", Reason:(*apiextensions.FieldValueErrorReason)(%s)",
                   json_object_get(rule, "reason") ? "0xc000000000" : "nil");
    const char *fp = json_string_value(json_object_get(rule, "fieldPath"));
    char *q = ck__quote_dup(fp ? fp : "");
    ck__buf_printf(&b, ", FieldPath:%s", q ? q : "");
    if (!q)
        b.err = CK_ENOMEM;
    free(q);
    ck__buf_printf(&b, ", OptionalOldSelf:(*bool)(%s)}",
                   json_object_get(rule, "optionalOldSelf") ? "0xc000000001" : "nil");
    if (b.err)
        return ck__buf_release(&b), NULL;
    return ck__buf_take(&b);
}
