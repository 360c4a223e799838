/*
 * rbac.c - the RBAC authorizer: a compiled, immutable policy and the decision.
 *
 * Mirrors Kubernetes' plugin/pkg/auth/authorizer/rbac (RBACAuthorizer,
 * RuleAllows and the *Matches helpers), pkg/registry/rbac/validation
 * (DefaultRuleResolver, ConfirmNoEscalation, Covers, BreakdownRule) and the
 * clusterrole-aggregation controller's union of rules.
 *
 * ck_rbac_policy_new() reads the four kinds' objects once: every role's
 * rules are deep-copied and compiled into arrays of borrowed strings
 * (struct crule), ClusterRoles with an aggregationRule first get the union
 * of what they select, and every binding becomes a `grant` (the role it
 * points at) filed under each of its subjects in one of two maps, users and
 * groups, keyed by "NAMESPACE/SUBJECT" for a RoleBinding and "/SUBJECT" for
 * a ClusterRoleBinding (a namespace never contains '/' and is never empty).
 * A ServiceAccount subject is filed as the user system:serviceaccount:NS:NAME,
 * which is the name its tokens authenticate as. A decision is then two map
 * lookups for the user and two per group (cluster-wide, then the request's
 * namespace) and a walk over the grants found: its cost grows neither with
 * the bindings of other subjects nor with a subject's bindings in other
 * namespaces.
 *
 * A binding to a role that does not exist grants nothing; its "not found"
 * sentence is kept and becomes the denial's reason, as RBAC reports rule
 * resolution errors ("RBAC: clusterrole.rbac.authorization.k8s.io "x" not
 * found").
 *
 * Threading: a policy never changes after ck_rbac_policy_new() returns; any
 * thread may read it. Its refcount is atomic. struct ck_rbac_authorizer
 * holds the current one: a swap publishes a new policy and unrefs the old
 * one, which lives on while a request still holds a reference. Taking that
 * reference is the one step that must not race with the swap's unref (a
 * bare atomic load could return a policy freed before its count goes up),
 * so it happens under a mutex held for a pointer read and an increment;
 * decisions themselves never lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckube/api.h>
#include <ckube/auth.h>

#include "ckube/internal/util.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* One PolicyRule, its strings borrowed from the role's copy of the rules. */
struct strs {
    const char **v;
    size_t n;
    bool all; /* holds "*" */
};

struct crule {
    struct strs verbs, groups, resources, names, urls;
};

struct crole {
    json_t *rules; /* the role's own deep copy; the strings of r point into it */
    struct crule *r;
    size_t n;
};

struct grant {
    const char *ns;           /* where the binding applies; NULL: everywhere */
    const struct crole *role; /* NULL when the role is missing */
    const char *missing;      /* then: the "not found" sentence */
};

struct grants {
    struct grant *g;
    size_t n, cap;
};

struct ck_rbac_policy {
    atomic_int refs;
    struct ck__strmap cluster_roles; /* name -> struct crole */
    struct ck__strmap roles;         /* "ns/name" -> struct crole */
    struct ck__strmap users;         /* name -> struct grants */
    struct ck__strmap groups;        /* name -> struct grants */
    char **strings;                  /* namespaces and sentences grants borrow */
    size_t n_strings, cap_strings;
};

/* ---- compiling ----------------------------------------------------------- */

static int compile_strs(const json_t *arr, struct strs *out)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return 0;
    out->v = ck__calloc(json_array_size(arr), sizeof(*out->v));
    if (!out->v)
        return CK_ENOMEM;
    size_t i;
    const json_t *s;
    json_array_foreach(arr, i, s)
    {
        if (!json_is_string(s))
            continue;
        const char *v = json_string_value(s);
        out->v[out->n++] = v;
        if (strcmp(v, "*") == 0)
            out->all = true;
    }
    return 0;
}

static void crole_release(struct crole *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->r[i].verbs.v);
        free(c->r[i].groups.v);
        free(c->r[i].resources.v);
        free(c->r[i].names.v);
        free(c->r[i].urls.v);
    }
    free(c->r);
    json_decref(c->rules);
}

static int crole_compile(struct crole *c, const json_t *rules)
{
    c->rules = json_is_array(rules) ? ck__json_copy(rules) : json_array();
    if (!c->rules)
        return CK_ENOMEM;
    size_t n = json_array_size(c->rules);
    if (n == 0)
        return 0;
    c->r = ck__calloc(n, sizeof(*c->r));
    if (!c->r)
        return CK_ENOMEM;
    size_t i;
    const json_t *rule;
    json_array_foreach(c->rules, i, rule)
    {
        struct crule *cr = &c->r[c->n++];
        if (compile_strs(json_object_get(rule, "verbs"), &cr->verbs) ||
            compile_strs(json_object_get(rule, "apiGroups"), &cr->groups) ||
            compile_strs(json_object_get(rule, "resources"), &cr->resources) ||
            compile_strs(json_object_get(rule, "resourceNames"), &cr->names) ||
            compile_strs(json_object_get(rule, "nonResourceURLs"), &cr->urls))
            return CK_ENOMEM;
    }
    return 0;
}

static const char *keep_string(struct ck_rbac_policy *p, const char *s)
{
    if (p->n_strings == p->cap_strings) {
        size_t cap = p->cap_strings ? p->cap_strings * 2 : 16;
        char **v = ck__realloc(p->strings, cap * sizeof(*v));
        if (!v)
            return NULL;
        p->strings = v;
        p->cap_strings = cap;
    }
    char *copy = ck__strdup(s);
    if (copy)
        p->strings[p->n_strings++] = copy;
    return copy;
}

static int add_role(struct ck__strmap *map, const char *key, const json_t *rules)
{
    if (ck__strmap_find(map, key))
        return 0; /* the first object with a name wins; the store has one */
    struct ck__strmap_entry *e = ck__strmap_insert(map, key, sizeof(struct crole));
    if (!e)
        return CK_ENOMEM;
    return crole_compile(e->value, rules);
}

/*
 * The index key of subject in namespace ns ("" or NULL: cluster-wide), in buf
 * when it fits, else in a new string stored in *heap for the caller to free.
 */
static const char *index_key(char *buf, size_t size, const char *ns, const char *subject,
                             char **heap)
{
    *heap = NULL;
    size_t nl = ns ? strlen(ns) : 0, sl = strlen(subject);
    char *out = nl + sl + 2 <= size ? buf : (*heap = ck__malloc(nl + sl + 2));
    if (!out)
        return NULL;
    /* memcpy, not snprintf: this runs twice per subject on every decision */
    if (nl)
        memcpy(out, ns, nl);
    out[nl] = '/';
    memcpy(out + nl + 1, subject, sl + 1);
    return out;
}

static int add_grant(struct ck__strmap *map, const char *ns, const char *subject,
                     const struct grant *g)
{
    char buf[512], *heap;
    const char *key = index_key(buf, sizeof(buf), ns, subject, &heap);
    if (!key)
        return CK_ENOMEM;
    struct ck__strmap_entry *e = ck__strmap_find(map, key);
    if (!e)
        e = ck__strmap_insert(map, key, sizeof(struct grants));
    free(heap);
    if (!e)
        return CK_ENOMEM;
    struct grants *gs = e->value;
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? gs->cap * 2 : 4;
        struct grant *v = ck__realloc(gs->g, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        gs->g = v;
        gs->cap = cap;
    }
    gs->g[gs->n++] = *g;
    return 0;
}

/* Files binding b (namespace ns, NULL for a ClusterRoleBinding) under its subjects. */
static int add_binding(struct ck_rbac_policy *p, const json_t *b, const char *ns)
{
    const json_t *ref = json_object_get(b, "roleRef");
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    if (!kind || !name)
        return 0;
    struct grant g = {0};
    char buf[600];
    if (ns) {
        g.ns = keep_string(p, ns);
        if (!g.ns)
            return CK_ENOMEM;
    }
    struct ck__strmap_entry *e = NULL;
    if (strcmp(kind, "ClusterRole") == 0) {
        e = ck__strmap_find(&p->cluster_roles, name);
    } else if (strcmp(kind, "Role") == 0 && ns) {
        snprintf(buf, sizeof(buf), "%s/%s", ns, name);
        e = ck__strmap_find(&p->roles, buf);
    } else {
        return 0;
    }
    if (e) {
        g.role = e->value;
    } else {
        snprintf(buf, sizeof(buf), "%s.%s \"%s\" not found",
                 strcmp(kind, "Role") == 0 ? "role" : "clusterrole", RBAC_GROUP, name);
        g.missing = keep_string(p, buf);
        if (!g.missing)
            return CK_ENOMEM;
    }
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(b, "subjects"), i, s)
    {
        const char *skind = json_string_value(json_object_get(s, "kind"));
        const char *sname = json_string_value(json_object_get(s, "name"));
        if (!skind || !sname)
            continue;
        int rc = 0;
        if (strcmp(skind, "User") == 0) {
            rc = add_grant(&p->users, ns, sname, &g);
        } else if (strcmp(skind, "Group") == 0) {
            rc = add_grant(&p->groups, ns, sname, &g);
        } else if (strcmp(skind, "ServiceAccount") == 0) {
            /* An unqualified account is one of the binding's own namespace. */
            const char *sns = json_string_value(json_object_get(s, "namespace"));
            if (!sns || !*sns)
                sns = ns;
            if (!sns || !*sns)
                continue;
            snprintf(buf, sizeof(buf), "%s%s:%s", CK_AUTH_SERVICEACCOUNT_USER, sns, sname);
            rc = add_grant(&p->users, ns, buf, &g);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static bool rule_in(const json_t *rules, const json_t *rule)
{
    size_t i;
    const json_t *r;
    json_array_foreach(rules, i, r) if (json_equal(r, rule)) return true;
    return false;
}

static int name_cmp(const void *a, const void *b)
{
    const char *x = ck__meta_str(*(const json_t *const *)a, "name");
    const char *y = ck__meta_str(*(const json_t *const *)b, "name");
    return strcmp(x ? x : "", y ? y : "");
}

json_t *ck_rbac_aggregate(const json_t *role, const json_t *cluster_roles)
{
    const json_t *selectors =
        json_object_get(json_object_get(role, "aggregationRule"), "clusterRoleSelectors");
    if (!json_is_array(selectors))
        return NULL;
    const char *self = ck__meta_str(role, "name");
    size_t n = json_array_size(cluster_roles);
    const json_t **sorted = ck__calloc(n ? n : 1, sizeof(*sorted));
    json_t *out = json_array();
    if (!sorted || !out)
        goto fail;
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(cluster_roles, i);
    qsort(sorted, n, sizeof(*sorted), name_cmp);
    size_t si;
    const json_t *sel;
    json_array_foreach(selectors, si, sel)
    {
        struct ck_label_selector *ls = NULL;
        int rc = ck_label_selector_from_object(sel, &ls, NULL);
        if (rc == CK_ENOMEM)
            goto fail;
        if (rc)
            continue; /* an invalid selector selects nothing (validation refuses it) */
        /* An empty selector would select every role: Kubernetes skips it too. */
        if (ck_label_selector_is_empty(ls)) {
            ck_label_selector_free(ls);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const char *name = ck__meta_str(sorted[i], "name");
            if (self && name && strcmp(self, name) == 0)
                continue;
            const json_t *labels =
                json_object_get(json_object_get(sorted[i], "metadata"), "labels");
            if (!ck_label_selector_matches(ls, labels))
                continue;
            size_t ri;
            json_t *rule;
            json_array_foreach(json_object_get(sorted[i], "rules"), ri, rule)
            {
                if (!rule_in(out, rule) && json_array_append(out, rule)) {
                    ck_label_selector_free(ls);
                    goto fail;
                }
            }
        }
        ck_label_selector_free(ls);
    }
    free(sorted);
    return out;
fail:
    free(sorted);
    json_decref(out);
    return NULL;
}

/*
 * The ClusterRoles with aggregated rules filled in, as the aggregation
 * controller leaves them once it has settled: passes repeat until nothing
 * changes, so view -> edit -> admin chains resolve whatever their order.
 */
static json_t *aggregated_copy(const json_t *cluster_roles)
{
    json_t *work = json_is_array(cluster_roles) ? ck__json_copy(cluster_roles) : json_array();
    if (!work)
        return NULL;
    size_t n = json_array_size(work);
    for (size_t pass = 0; pass <= n; pass++) {
        bool changed = false;
        size_t i;
        json_t *role;
        json_array_foreach(work, i, role)
        {
            json_t *rules = ck_rbac_aggregate(role, work);
            if (!rules) {
                if (json_object_get(role, "aggregationRule"))
                    goto fail; /* out of memory */
                continue;
            }
            if (!json_equal(rules, json_object_get(role, "rules"))) {
                changed = true;
                if (json_object_set(role, "rules", rules)) {
                    json_decref(rules);
                    goto fail;
                }
            }
            json_decref(rules);
        }
        if (!changed)
            break;
    }
    return work;
fail:
    json_decref(work);
    return NULL;
}

static void grants_release(struct ck__strmap *m)
{
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(m, NULL, &bucket); e;
         e = ck__strmap_next(m, e, &bucket))
        free(((struct grants *)e->value)->g);
    ck__strmap_release(m);
}

static void roles_release(struct ck__strmap *m)
{
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(m, NULL, &bucket); e;
         e = ck__strmap_next(m, e, &bucket))
        crole_release(e->value);
    ck__strmap_release(m);
}

static void policy_free(struct ck_rbac_policy *p)
{
    roles_release(&p->cluster_roles);
    roles_release(&p->roles);
    grants_release(&p->users);
    grants_release(&p->groups);
    for (size_t i = 0; i < p->n_strings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p);
}

int ck_rbac_policy_new(const json_t *roles, const json_t *cluster_roles,
                       const json_t *role_bindings, const json_t *cluster_role_bindings,
                       struct ck_rbac_policy **ret_policy, struct ck_err *reterr)
{
    struct ck_rbac_policy *p = ck__calloc(1, sizeof(*p));
    json_t *crs = aggregated_copy(cluster_roles);
    if (!p || !crs)
        goto nomem;
    atomic_init(&p->refs, 1);
    size_t i;
    const json_t *o;
    char key[600];
    json_array_foreach(crs, i, o)
    {
        const char *name = ck__meta_str(o, "name");
        if (name && add_role(&p->cluster_roles, name, json_object_get(o, "rules")))
            goto nomem;
    }
    json_array_foreach(roles, i, o)
    {
        const char *name = ck__meta_str(o, "name"), *ns = ck__meta_str(o, "namespace");
        if (!name || !ns)
            continue;
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        if (add_role(&p->roles, key, json_object_get(o, "rules")))
            goto nomem;
    }
    json_array_foreach(cluster_role_bindings, i, o) if (add_binding(p, o, NULL)) goto nomem;
    json_array_foreach(role_bindings, i, o)
    {
        const char *ns = ck__meta_str(o, "namespace");
        if (ns && *ns && add_binding(p, o, ns))
            goto nomem;
    }
    json_decref(crs);
    *ret_policy = p;
    return 0;
nomem:
    json_decref(crs);
    if (p)
        policy_free(p);
    return ck_err_set(reterr, CK_ENOMEM, "out of memory compiling the RBAC policy");
}

struct ck_rbac_policy *ck_rbac_policy_ref(struct ck_rbac_policy *policy)
{
    if (policy)
        atomic_fetch_add_explicit(&policy->refs, 1, memory_order_relaxed);
    return policy;
}

struct ck_rbac_policy *ck_rbac_policy_unref(struct ck_rbac_policy *policy)
{
    if (policy && atomic_fetch_sub_explicit(&policy->refs, 1, memory_order_acq_rel) == 1)
        policy_free(policy);
    return NULL;
}

/* ---- the current policy ------------------------------------------------------ */

struct ck_rbac_authorizer {
    pthread_mutex_t mu; /* guards cur for the read-and-ref and for the swap */
    struct ck_rbac_policy *cur;
};

struct ck_rbac_authorizer *ck_rbac_authorizer_new(struct ck_rbac_policy *policy)
{
    struct ck_rbac_authorizer *a = ck__calloc(1, sizeof(*a));
    if (!a) {
        ck_rbac_policy_unref(policy);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    a->cur = policy;
    return a;
}

struct ck_rbac_authorizer *ck_rbac_authorizer_free(struct ck_rbac_authorizer *a)
{
    if (!a)
        return NULL;
    ck_rbac_policy_unref(a->cur);
    pthread_mutex_destroy(&a->mu);
    free(a);
    return NULL;
}

struct ck_rbac_policy *ck_rbac_authorizer_current(struct ck_rbac_authorizer *a)
{
    pthread_mutex_lock(&a->mu);
    struct ck_rbac_policy *p = ck_rbac_policy_ref(a->cur);
    pthread_mutex_unlock(&a->mu);
    return p;
}

void ck_rbac_authorizer_swap(struct ck_rbac_authorizer *a, struct ck_rbac_policy *policy)
{
    pthread_mutex_lock(&a->mu);
    struct ck_rbac_policy *old = a->cur;
    a->cur = policy;
    pthread_mutex_unlock(&a->mu);
    ck_rbac_policy_unref(old); /* outside the lock: freeing a policy takes a while */
}

/* ---- the decision -------------------------------------------------------- */

static bool has(const struct strs *s, const char *v)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], v) == 0)
            return true;
    return false;
}

/* "pods/status" == resource "pods" + subresource "status", without building it. */
static bool is_combined(const char *rule, const char *res, const char *sub)
{
    size_t rl = strlen(res);
    if (strncmp(rule, res, rl) != 0)
        return false;
    if (!sub || !*sub)
        return rule[rl] == '\0';
    return rule[rl] == '/' && strcmp(rule + rl + 1, sub) == 0;
}

static bool resource_matches(const struct strs *rs, const char *res, const char *sub)
{
    for (size_t i = 0; i < rs->n; i++) {
        const char *r = rs->v[i];
        if (strcmp(r, "*") == 0 || is_combined(r, res, sub))
            return true;
        /* A rule resource of star-slash-scale is every resource's scale subresource. */
        if (sub && *sub && r[0] == '*' && r[1] == '/' && strcmp(r + 2, sub) == 0)
            return true;
    }
    return false;
}

static bool url_matches(const struct strs *urls, const char *path)
{
    for (size_t i = 0; i < urls->n; i++) {
        const char *u = urls->v[i];
        if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
            return true;
        size_t l = strlen(u);
        if (l > 0 && u[l - 1] == '*' && strncmp(u, path, l - 1) == 0)
            return true;
    }
    return false;
}

static bool rule_allows(const struct crule *r, const struct ck_rbac_request *q)
{
    if (!r->verbs.all && !has(&r->verbs, q->verb))
        return false;
    if (!q->is_resource_request)
        return url_matches(&r->urls, q->path ? q->path : "");
    if (!r->groups.all && !has(&r->groups, q->api_group ? q->api_group : ""))
        return false;
    if (!resource_matches(&r->resources, q->resource ? q->resource : "", q->subresource))
        return false;
    if (r->names.n == 0)
        return true;
    return q->name && *q->name && has(&r->names, q->name);
}

static bool applies(const struct grant *g, const char *ns)
{
    return !g->ns || (ns && strcmp(g->ns, ns) == 0);
}

#define MAX_REASONS 4

struct visit {
    const struct ck_rbac_request *q;
    const char *reasons[MAX_REASONS];
    size_t n_reasons;
};

static bool visit_grants(const struct grants *gs, struct visit *v, const char *ns)
{
    for (size_t i = 0; i < gs->n; i++) {
        const struct grant *g = &gs->g[i];
        if (!applies(g, ns))
            continue;
        if (!g->role) {
            bool seen = false;
            for (size_t k = 0; k < v->n_reasons; k++)
                seen = seen || v->reasons[k] == g->missing;
            if (!seen && v->n_reasons < MAX_REASONS)
                v->reasons[v->n_reasons++] = g->missing;
            continue;
        }
        for (size_t k = 0; k < g->role->n; k++)
            if (rule_allows(&g->role->r[k], v->q))
                return true;
    }
    return false;
}

/* The grants of subject cluster-wide (ns NULL) or in namespace ns. */
static const struct grants *lookup(const struct ck__strmap *m, const char *ns, const char *subject)
{
    char buf[512], *heap;
    const char *key = index_key(buf, sizeof(buf), ns, subject, &heap);
    struct ck__strmap_entry *e = key ? ck__strmap_find(m, key) : NULL;
    free(heap);
    return e ? e->value : NULL;
}

/* Visits the grants of one subject: cluster-wide ones, then those of ns. */
static bool visit_subject(const struct ck__strmap *m, const char *subject, struct visit *v,
                          const char *ns)
{
    const struct grants *gs = lookup(m, NULL, subject);
    if (gs && visit_grants(gs, v, ns))
        return true;
    gs = ns ? lookup(m, ns, subject) : NULL;
    return gs && visit_grants(gs, v, ns);
}

enum ck_rbac_decision ck_rbac_authorize(const struct ck_rbac_policy *policy,
                                        const struct ck_rbac_request *req, char *reason,
                                        size_t size)
{
    struct visit v = {.q = req};
    const struct ck_auth_user *u = req->user;
    const char *ns =
        req->is_resource_request && req->namespace && *req->namespace ? req->namespace : NULL;
    if (reason && size)
        reason[0] = '\0';
    if (!u || !req->verb)
        return CK_RBAC_NO_OPINION;
    if (visit_subject(&policy->users, u->name, &v, ns))
        return CK_RBAC_ALLOW;
    for (size_t i = 0; i < u->n_groups; i++)
        if (visit_subject(&policy->groups, u->groups[i], &v, ns))
            return CK_RBAC_ALLOW;
    if (reason && size && v.n_reasons) {
        /* utilerrors.Aggregate's form: one error alone, several in brackets. */
        size_t off = (size_t)snprintf(reason, size, "RBAC: %s", v.n_reasons > 1 ? "[" : "");
        for (size_t i = 0; i < v.n_reasons && off < size; i++)
            off += (size_t)snprintf(reason + off, size - off, "%s%s", i ? ", " : "", v.reasons[i]);
        if (v.n_reasons > 1 && off < size)
            snprintf(reason + off, size - off, "]");
    }
    return CK_RBAC_NO_OPINION;
}

const char *ck_rbac_forbidden_message(const struct ck_rbac_request *req, char *buf, size_t size)
{
    const char *user = req->user && req->user->name ? req->user->name : "";
    const char *verb = req->verb ? req->verb : "";
    if (!req->is_resource_request) {
        snprintf(buf, size, "User \"%s\" cannot %s path \"%s\"", user, verb,
                 req->path ? req->path : "");
        return buf;
    }
    char resource[256];
    if (req->subresource && *req->subresource)
        snprintf(resource, sizeof(resource), "%s/%s", req->resource ? req->resource : "",
                 req->subresource);
    else
        snprintf(resource, sizeof(resource), "%s", req->resource ? req->resource : "");
    const char *group = req->api_group ? req->api_group : "";
    if (req->namespace && *req->namespace)
        snprintf(buf, size,
                 "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in the namespace "
                 "\"%s\"",
                 user, verb, resource, group, req->namespace);
    else
        snprintf(buf, size,
                 "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at the cluster scope",
                 user, verb, resource, group);
    return buf;
}

const char *ck_rbac_status_message(const struct ck_rbac_request *req, const char *reason, char *buf,
                                   size_t size)
{
    char msg[768], what[300];
    ck_rbac_forbidden_message(req, msg, sizeof(msg));
    const char *res = req->resource ? req->resource : "";
    const char *group = req->api_group ? req->api_group : "";
    if (!req->is_resource_request || !*res)
        what[0] = '\0';
    else if (*group)
        snprintf(what, sizeof(what), "%s.%s", res, group);
    else
        snprintf(what, sizeof(what), "%s", res);
    const char *sep = reason && *reason ? ": " : "";
    if (!*what)
        snprintf(buf, size, "forbidden: %s%s%s", msg, sep, *sep ? reason : "");
    else if (req->name && *req->name)
        snprintf(buf, size, "%s \"%s\" is forbidden: %s%s%s", what, req->name, msg, sep,
                 *sep ? reason : "");
    else
        snprintf(buf, size, "%s is forbidden: %s%s%s", what, msg, sep, *sep ? reason : "");
    return buf;
}

int ck_rbac_forbidden(struct ck_err *err, const struct ck_rbac_request *req, const char *reason)
{
    char msg[2048];
    ck_rbac_status_message(req, reason, msg, sizeof(msg));
    ck_err_status(err, "Forbidden", "%s", msg);
    if (err && req->is_resource_request)
        ck_err_set_details(err, req->api_group ? req->api_group : "", req->resource,
                           req->name ? req->name : "");
    return CK_EPERM;
}

static int append_role_rules(json_t *out, const struct grants *gs, const char *ns)
{
    if (!gs)
        return 0;
    for (size_t i = 0; i < gs->n; i++) {
        const struct grant *g = &gs->g[i];
        if (!g->role || !applies(g, ns))
            continue;
        size_t k;
        json_t *rule;
        /* copies: the policy's rules are shared by every thread, and jansson's reference
         * count is not safe to take from several at once (see ck_cached_unref) */
        json_array_foreach(g->role->rules, k, rule)
        {
            if (json_array_append_new(out, ck__json_copy(rule)))
                return CK_ENOMEM;
        }
    }
    return 0;
}

json_t *ck_rbac_rules_for(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                          const char *namespace)
{
    json_t *out = json_array();
    if (!out || !user)
        return out;
    const char *ns = namespace && *namespace ? namespace : NULL;
    if (append_role_rules(out, lookup(&policy->users, NULL, user->name), ns) ||
        (ns && append_role_rules(out, lookup(&policy->users, ns, user->name), ns)))
        goto fail;
    for (size_t i = 0; i < user->n_groups; i++)
        if (append_role_rules(out, lookup(&policy->groups, NULL, user->groups[i]), ns) ||
            (ns && append_role_rules(out, lookup(&policy->groups, ns, user->groups[i]), ns)))
            goto fail;
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* ---- the escalation check ------------------------------------------------ */

/* One permission: a rule with at most one verb, group, resource, name or URL. */
struct atom {
    const char *verb, *group, *resource, *name, *url;
};

static bool json_has(const json_t *arr, const char *v)
{
    size_t i;
    const json_t *s;
    json_array_foreach(arr, i, s) if (json_is_string(s) &&
                                      strcmp(json_string_value(s), v) == 0) return true;
    return false;
}

static bool url_covers(const char *owner, const char *path)
{
    if (strcmp(owner, path) == 0)
        return true;
    size_t l = strlen(owner);
    while (l > 0 && owner[l - 1] == '*')
        l--;
    return l != strlen(owner) && strncmp(owner, path, l) == 0;
}

/* Kubernetes' ruleCovers for an owner rule and one atomic rule. */
static bool covers_atom(const json_t *owner, const struct atom *a)
{
    const json_t *verbs = json_object_get(owner, "verbs");
    if (!json_has(verbs, "*") && !json_has(verbs, a->verb))
        return false;
    if (a->url) {
        size_t i;
        const json_t *u;
        json_array_foreach(json_object_get(owner, "nonResourceURLs"), i,
                           u) if (json_is_string(u) &&
                                  url_covers(json_string_value(u), a->url)) goto names;
        return false;
    }
    const json_t *groups = json_object_get(owner, "apiGroups");
    if (!json_has(groups, "*") && !json_has(groups, a->group))
        return false;
    const json_t *res = json_object_get(owner, "resources");
    if (!json_has(res, "*") && !json_has(res, a->resource)) {
        const char *slash = strchr(a->resource, '/');
        char star[256];
        if (!slash)
            return false;
        snprintf(star, sizeof(star), "*%s", slash);
        if (!json_has(res, star))
            return false;
    }
names:;
    size_t owner_names = json_array_size(json_object_get(owner, "resourceNames"));
    if (!a->name)
        return owner_names == 0;
    return owner_names == 0 || json_has(json_object_get(owner, "resourceNames"), a->name);
}

static bool covered(const json_t *owner, const struct atom *a)
{
    size_t i;
    const json_t *rule;
    json_array_foreach(owner, i, rule) if (covers_atom(rule, a)) return true;
    return false;
}

static json_t *str_array1(const char *s)
{
    return json_pack("[s]", s);
}

/* Adds a's rule to missing, merging verbs into the last rule when only they differ. */
static void add_missing(json_t *missing, const struct atom *a)
{
    json_t *last = json_array_get(missing, json_array_size(missing) - 1);
    json_t *rule = json_object();
    if (a->url) {
        json_object_set_new(rule, "nonResourceURLs", str_array1(a->url));
    } else {
        json_object_set_new(rule, "apiGroups", str_array1(a->group));
        json_object_set_new(rule, "resources", str_array1(a->resource));
        if (a->name)
            json_object_set_new(rule, "resourceNames", str_array1(a->name));
    }
    if (last) {
        json_t *cmp = ck__json_copy(last);
        json_object_del(cmp, "verbs");
        bool same = json_equal(cmp, rule);
        json_decref(cmp);
        if (same) {
            json_array_append_new(json_object_get(last, "verbs"), json_string(a->verb));
            json_decref(rule);
            return;
        }
    }
    json_object_set_new(rule, "verbs", str_array1(a->verb));
    json_array_append_new(missing, rule);
}

static const char *item(const json_t *arr, size_t i)
{
    const char *s = json_string_value(json_array_get(arr, i));
    return s ? s : "";
}

bool ck_rbac_rules_cover(const json_t *owner, const json_t *servant, json_t **ret_missing)
{
    json_t *missing = ret_missing ? json_array() : NULL;
    bool ok = true;
    size_t ri;
    const json_t *rule;
    json_array_foreach(servant, ri, rule)
    {
        const json_t *verbs = json_object_get(rule, "verbs");
        const json_t *groups = json_object_get(rule, "apiGroups");
        const json_t *res = json_object_get(rule, "resources");
        const json_t *names = json_object_get(rule, "resourceNames");
        const json_t *urls = json_object_get(rule, "nonResourceURLs");
        size_t nv = json_array_size(verbs), nn = json_array_size(names);
        /* BreakdownRule: group x resource x (name) x verb, then url x verb. */
        for (size_t g = 0; g < json_array_size(groups); g++)
            for (size_t r = 0; r < json_array_size(res); r++)
                for (size_t n = 0; n < (nn ? nn : 1); n++)
                    for (size_t v = 0; v < nv; v++) {
                        struct atom a = {item(verbs, v), item(groups, g), item(res, r),
                                         nn ? item(names, n) : NULL, NULL};
                        if (!covered(owner, &a)) {
                            ok = false;
                            if (missing)
                                add_missing(missing, &a);
                        }
                    }
        for (size_t u = 0; u < json_array_size(urls); u++)
            for (size_t v = 0; v < nv; v++) {
                struct atom a = {item(verbs, v), NULL, NULL, NULL, item(urls, u)};
                if (!covered(owner, &a)) {
                    ok = false;
                    if (missing)
                        add_missing(missing, &a);
                }
            }
    }
    if (ret_missing)
        *ret_missing = missing;
    return ok;
}

/* Go's %q of a []string: ["a" "b"]. */
static size_t quote_list(char *buf, size_t size, const json_t *arr, const char *sep)
{
    size_t off = 0;
    for (size_t i = 0; i < json_array_size(arr) && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s\"%s\"", i ? sep : "", item(arr, i));
    return off;
}

/* A missing rule in Kubernetes' CompactString form. */
static size_t compact_rule(char *buf, size_t size, const json_t *rule)
{
    static const struct {
        const char *member, *label;
    } parts[] = {
        {"apiGroups", "APIGroups"},
        {"resources", "Resources"},
        {"resourceNames", "ResourceNames"},
        {"nonResourceURLs", "NonResourceURLs"},
        {"verbs", "Verbs"},
    };
    size_t off = (size_t)snprintf(buf, size, "{");
    bool first = true;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && off < size; i++) {
        const json_t *arr = json_object_get(rule, parts[i].member);
        if (!json_array_size(arr))
            continue;
        off += (size_t)snprintf(buf + off, size - off, "%s%s:[", first ? "" : ", ", parts[i].label);
        if (off < size)
            off += quote_list(buf + off, size - off, arr, ", ");
        if (off < size)
            off += (size_t)snprintf(buf + off, size - off, "]");
        first = false;
    }
    if (off < size)
        off += (size_t)snprintf(buf + off, size - off, "}");
    return off;
}

static int escalation_error(const struct ck_auth_user *user, const json_t *missing,
                            struct ck_err *reterr)
{
    char groups[256] = "", rules[256] = ""; /* ck_err keeps 256 bytes in all */
    json_t *g = json_array();
    for (size_t i = 0; i < user->n_groups; i++)
        json_array_append_new(g, json_string(user->groups[i]));
    size_t off = (size_t)snprintf(groups, sizeof(groups), "[");
    if (off < sizeof(groups))
        off += quote_list(groups + off, sizeof(groups) - off, g, " ");
    if (off < sizeof(groups))
        snprintf(groups + off, sizeof(groups) - off, "]");
    json_decref(g);
    off = 0;
    for (size_t i = 0; i < json_array_size(missing) && off < sizeof(rules); i++) {
        if (i)
            off += (size_t)snprintf(rules + off, sizeof(rules) - off, "\n");
        if (off < sizeof(rules))
            off += compact_rule(rules + off, sizeof(rules) - off, json_array_get(missing, i));
    }
    return ck_err_set(reterr, CK_EPERM,
                      "user \"%s\" (groups=%s) is attempting to grant RBAC permissions not "
                      "currently held:\n%s",
                      user->name, groups, rules);
}

static bool may(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                const char *verb, const char *resource, const char *name, const char *ns)
{
    struct ck_rbac_request q = {
        .user = user,
        .verb = verb,
        .is_resource_request = true,
        .api_group = RBAC_GROUP,
        .resource = resource,
        .name = name,
        .namespace = ns,
    };
    return ck_rbac_authorize(policy, &q, NULL, 0) == CK_RBAC_ALLOW;
}

static int confirm_no_escalation(const struct ck_rbac_policy *policy,
                                 const struct ck_auth_user *user, const char *ns,
                                 const json_t *rules, struct ck_err *reterr)
{
    json_t *owner = ck_rbac_rules_for(policy, user, ns);
    json_t *missing = NULL;
    if (!owner)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    bool ok = ck_rbac_rules_cover(owner, rules, &missing);
    json_decref(owner);
    int rc = ok ? 0 : escalation_error(user, missing, reterr);
    json_decref(missing);
    return rc;
}

int ck_rbac_check_role_write(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                             const char *namespace, const char *role_name, const json_t *rules,
                             struct ck_err *reterr)
{
    const char *ns = namespace && *namespace ? namespace : NULL;
    if (ck_auth_user_in_group(user, CK_AUTH_MASTERS) ||
        may(policy, user, "escalate", ns ? "roles" : "clusterroles", role_name, ns))
        return 0;
    return confirm_no_escalation(policy, user, ns, rules, reterr);
}

int ck_rbac_check_binding_write(const struct ck_rbac_policy *policy,
                                const struct ck_auth_user *user, const char *namespace,
                                const json_t *role_ref, struct ck_err *reterr)
{
    const char *ns = namespace && *namespace ? namespace : NULL;
    const char *kind = json_string_value(json_object_get(role_ref, "kind"));
    const char *name = json_string_value(json_object_get(role_ref, "name"));
    if (!kind || !name)
        return ck_err_set(reterr, CK_EINVAL, "roleRef needs kind and name");
    bool is_role = strcmp(kind, "Role") == 0;
    if (!is_role && strcmp(kind, "ClusterRole") != 0)
        return ck_err_set(reterr, CK_EINVAL, "roleRef.kind must be Role or ClusterRole");
    if (is_role && !ns)
        return ck_err_set(reterr, CK_EINVAL, "a ClusterRoleBinding cannot refer to a Role");
    if (ck_auth_user_in_group(user, CK_AUTH_MASTERS) ||
        may(policy, user, "bind", is_role ? "roles" : "clusterroles", name, ns))
        return 0;
    struct ck__strmap_entry *e;
    if (is_role) {
        char key[600];
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        e = ck__strmap_find(&policy->roles, key);
    } else {
        e = ck__strmap_find(&policy->cluster_roles, name);
    }
    if (!e)
        return ck_err_set(reterr, CK_ENOENT, "%s.%s \"%s\" not found",
                          is_role ? "role" : "clusterrole", RBAC_GROUP, name);
    return confirm_no_escalation(policy, user, ns, ((const struct crole *)e->value)->rules, reterr);
}
