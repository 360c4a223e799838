/*
 * match.c - which requests an admission webhook or an admission policy is about: the
 * matching both share.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/admission/plugin/webhook/predicates/rules (a rule:
 * operations, groups, versions, resources with their `*`, `x/y`, `x/ *`, `* /y`, `* / *`
 * forms, scope), predicates/namespace (the namespace selector: a namespace's own labels
 * for a request about a namespace, cluster-scoped requests of other kinds always match)
 * and predicates/object (the labels of the new or the old object), and
 * pkg/admission/plugin/policy/matching (excludeResourceRules first, resourceNames, an
 * empty rule list matching everything), in their order: selectors, then rules, and a
 * selector's error only counts when the rules match.
 *
 * matchPolicy Equivalent matches as Exact: every ckube resource is served in one version
 * (docs/differences.md).
 *
 * Threading: pure functions over their arguments, plus store reads.
 *
 * Tested by tests/apiserver/test_webhook.c and tests/apiserver/test_policy.c.
 */
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

const char *ck__admission_op_name(enum ck__admission_op op)
{
    switch (op) {
    case CK__ADMISSION_CREATE:
        return "CREATE";
    case CK__ADMISSION_UPDATE:
        return "UPDATE";
    case CK__ADMISSION_DELETE:
        return "DELETE";
    case CK__ADMISSION_CONNECT:
        return "CONNECT";
    }
    return "";
}

/* A list of strings holds "*" or s. */
static bool list_matches(const json_t *list, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *e = json_string_value(v);
        if (e && (strcmp(e, "*") == 0 || strcmp(e, s) == 0))
            return true;
    }
    return false;
}

bool ck__admission_is_namespace_request(const struct ck__admission_attrs *a)
{
    return a->kind && a->kind->role == CK_KIND_ROLE_NAMESPACE;
}

/* The request's object name (attr.GetName(): on a create, the object's). */
static const char *request_name(const struct ck__admission_attrs *a)
{
    if (a->name && *a->name)
        return a->name;
    const char *n = json_string_value(json_object_get(json_object_get(a->obj, "metadata"), "name"));
    return n ? n : "";
}

bool ck__admission_rule_matches(const json_t *rule, const struct ck__admission_attrs *a)
{
    const char *sub = a->subresource ? a->subresource : "";
    if (!list_matches(json_object_get(rule, "operations"), ck__admission_op_name(a->op)) ||
        !list_matches(json_object_get(rule, "apiGroups"), a->kind->group) ||
        !list_matches(json_object_get(rule, "apiVersions"), a->kind->version))
        return false;
    bool resource = false;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(rule, "resources"), i, v)
    {
        const char *r = json_string_value(v) ? json_string_value(v) : "";
        const char *slash = strchr(r, '/');
        if (strcmp(r, "*/*") == 0) {
            resource = true;
        } else if (!slash) {
            resource = (strcmp(r, "*") == 0 || strcmp(r, a->kind->resource) == 0) && !*sub;
        } else {
            size_t len = (size_t)(slash - r);
            bool res = (len == 1 && r[0] == '*') || (strlen(a->kind->resource) == len &&
                                                     strncmp(r, a->kind->resource, len) == 0);
            resource = res && (strcmp(slash + 1, "*") == 0 || strcmp(slash + 1, sub) == 0);
        }
        if (resource)
            break;
    }
    if (!resource)
        return false;
    const char *scope = json_string_value(json_object_get(rule, "scope"));
    bool cluster = !a->namespace || !*a->namespace;
    if (scope && strcmp(scope, "Namespaced") == 0 &&
        (ck__admission_is_namespace_request(a) || cluster))
        return false;
    if (scope && strcmp(scope, "Cluster") == 0 &&
        !(ck__admission_is_namespace_request(a) || cluster))
        return false;
    /* a NamedRuleWithOperations' resourceNames: none means every name */
    const json_t *names = json_object_get(rule, "resourceNames");
    if (json_array_size(names) == 0)
        return true;
    const char *name = request_name(a);
    json_array_foreach(names, i, v)
    {
        if (json_string_value(v) && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

/* Whether one of rules matches a. */
static bool any_rule_matches(const json_t *rules, const struct ck__admission_attrs *a)
{
    size_t i;
    const json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        if (ck__admission_rule_matches(rule, a))
            return true;
    }
    return false;
}

/* The labels of obj (NULL: none). */
static const json_t *labels_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

/*
 * 1 when selector (a LabelSelector object; NULL or empty: everything) matches one of the
 * n label sets (each a labels object, NULL: no labels), 0 when none does, CK_EINVAL when
 * it does not parse.
 */
static int selector_matches(const json_t *selector, const json_t *const *label_sets, size_t n)
{
    if (!selector || json_object_size(selector) == 0)
        return 1;
    struct ck_label_selector *ls = NULL;
    if (ck_label_selector_from_object(selector, &ls, NULL) < 0)
        return CK_EINVAL;
    int m = ck_label_selector_is_empty(ls);
    for (size_t i = 0; !m && i < n; i++)
        m = ck_label_selector_matches(ls, label_sets[i]);
    ck_label_selector_free(ls);
    return m;
}

int ck__admission_namespace_object(struct ck__registry *reg, const struct ck__admission_attrs *a,
                                   json_t **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const char *ns = ck__admission_is_namespace_request(a) ? a->name : a->namespace;
    if (!ns || !*ns)
        return 0;
    const struct ck_kind *nk = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    struct ck_err err = {0};
    int r = nk ? ck__admission_get(reg, nk, "", ns, ret, &err) : CK_ENOENT;
    if (r < 0 && r != CK_ENOENT) {
        ck_err_release(reterr);
        *reterr = err;
    }
    return r;
}

int ck__admission_matches(struct ck__registry *reg, const json_t *ns_sel, const json_t *obj_sel,
                          const json_t *rules, bool empty_matches_all, const json_t *exclude,
                          const char *what, const struct ck__admission_attrs *a,
                          struct ck_err *reterr)
{
    /* the namespace selector: cluster-scoped requests other than namespaces' always pass */
    int ns_match = 1;
    json_t *ns_obj = NULL;
    bool ns_missing = false;
    bool is_ns = ck__admission_is_namespace_request(a);
    if (json_object_size(ns_sel) && (is_ns || (a->namespace && *a->namespace))) {
        const json_t *labels = NULL;
        if (is_ns && (!a->subresource || !*a->subresource) &&
            (a->op == CK__ADMISSION_CREATE || a->op == CK__ADMISSION_UPDATE)) {
            labels = labels_of(a->obj);
        } else {
            int r = ck__admission_namespace_object(reg, a, &ns_obj, reterr);
            if (r == CK_ENOENT)
                ns_missing = true;
            else if (r < 0)
                return r;
            labels = labels_of(ns_obj);
        }
        ns_match = ns_missing ? 0 : selector_matches(ns_sel, &labels, 1);
    }
    json_decref(ns_obj);
    if (ns_match == 0 && !ns_missing)
        return 0;
    /* the object selector: the new or the old object's labels */
    const json_t *present[2];
    size_t n = 0;
    if (a->obj)
        present[n++] = labels_of(a->obj);
    if (a->old)
        present[n++] = labels_of(a->old);
    int obj_match = selector_matches(obj_sel, present, n);
    if (obj_match == 0)
        return 0;
    if (any_rule_matches(exclude, a))
        return 0;
    if (!(empty_matches_all && json_array_size(rules) == 0) && !any_rule_matches(rules, a))
        return 0;
    if (ns_missing)
        return ck_err_status(reterr, "NotFound", "namespaces \"%s\" not found",
                             is_ns ? a->name : a->namespace);
    if (ns_match < 0 || obj_match < 0)
        return ck_err_internal(reterr, "%s has an invalid selector", what);
    return 1;
}

/* ---- the configurations ------------------------------------------------------- */

static int collect(const json_t *obj, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

static int by_name(const void *x, const void *y)
{
    const json_t *const *a = x, *const *b = y;
    const char *na = json_string_value(json_object_get(json_object_get(*a, "metadata"), "name"));
    const char *nb = json_string_value(json_object_get(json_object_get(*b, "metadata"), "name"));
    return strcmp(na ? na : "", nb ? nb : "");
}

int ck__admission_configurations(struct ck__registry *reg, const char *resource, json_t **ret,
                                 struct ck_err *reterr)
{
    *ret = NULL;
    const struct ck_kind *k = ck_kind_lookup("admissionregistration.k8s.io", "v1", resource);
    json_t *all = json_array();
    if (!all)
        return ck_err_no_memory(reterr);
    int r = k ? ck__admission_list(reg, k, NULL, collect, all, reterr) : 0;
    if (r < 0) {
        json_decref(all);
        return r;
    }
    if (ck__json_array_sort(all, by_name) < 0) {
        json_decref(all);
        return ck_err_no_memory(reterr);
    }
    *ret = all;
    return 0;
}
