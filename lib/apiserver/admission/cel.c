/*
 * cel.c - the CEL environment of admission: what the expressions of
 * ValidatingAdmissionPolicies and of webhook and policy matchConditions see, how they
 * are compiled (once per text) and evaluated, and the matchConditions' verdict.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/admission/plugin/cel (filter.go: the activation,
 * object, oldObject, request, params, namespaceObject and variables, CreateAdmissionRequest
 * and CreateNamespaceObject; the words of an evaluation error, `expression 'x' resulted in
 * error: why`) and pkg/admission/plugin/webhook/matchconditions/matcher.go (every
 * condition true: match; one false: no match, whatever errors others gave; errors
 * otherwise: Fail refuses, Ignore does not match).
 *
 * The `authorizer` variable (and authorizer.requestResource) checks the request's user,
 * or a service account, against the server's RBAC (lib/cel/authz.c builds the checks).
 *
 * Differences (docs/differences.md): the authorizer's checks are RBAC's (and
 * system:masters'), not the node authorizer's, and its reason is empty when allowed; a
 * policy's variables are evaluated in order before its
 * expressions (Kubernetes evaluates one when first read), all of them, and their values
 * pass through JSON (a duration or a quantity arrives as its text); one that fails is left
 * out, and an expression that reads it fails with its error; each expression has the
 * per-call cost limit, not Kubernetes' budget for the whole policy.
 *
 * Threading: the program cache is shared behind a mutex; its programs are immutable and
 * never freed while the process lives, so any thread evaluates them at once.
 *
 * Tested by tests/apiserver/test_policy.c and tests/apiserver/test_webhook.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/auth.h"
#include "ckube/internal/util.h"

/* ---- compiled programs ------------------------------------------------------------ */

/*
 * The programs compiled so far, by text. Expressions come from stored configurations,
 * so there are few; past CACHE_MAX the cache stops growing and the rest are compiled at
 * each use.
 */
#define CACHE_MAX 2048
static struct cached {
    char *expr;
    struct ck_cel_program *prog;
} cache[CACHE_MAX];
static size_t cache_len;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The program of expr: 0 with *ret_prog (borrowed from the cache; or, when *ret_owned is
 * set, the caller's to free), or CK_EINVAL with reterr `compilation failed: ERROR: ...`.
 */
static int compile(const char *expr, const struct ck_cel_program **ret_prog,
                   struct ck_cel_program **ret_owned, struct ck_err *reterr)
{
    *ret_owned = NULL;
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < cache_len; i++)
        if (strcmp(cache[i].expr, expr) == 0) {
            *ret_prog = cache[i].prog;
            pthread_mutex_unlock(&cache_lock);
            return 0;
        }
    pthread_mutex_unlock(&cache_lock);
    struct ck_cel_program *prog = NULL;
    struct ck_err err = {0};
    int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
    if (r < 0) {
        r = r == CK_ENOMEM
                ? ck_err_no_memory(reterr)
                : ck_err_status(reterr, "Invalid", "compilation failed: %s", ck_err_message(&err));
        ck_err_release(&err);
        return r;
    }
    char *copy = ck__strdup(expr);
    pthread_mutex_lock(&cache_lock);
    if (copy && cache_len < CACHE_MAX) {
        cache[cache_len++] = (struct cached){copy, prog};
        copy = NULL;
    } else {
        *ret_owned = prog;
    }
    pthread_mutex_unlock(&cache_lock);
    free(copy);
    *ret_prog = prog;
    return 0;
}

/* ---- the activation ------------------------------------------------------------- */

json_t *ck__admission_cel_request(const struct ck__admission_attrs *a)
{
    json_t *review = ck__webhook_review(a, "v1", "");
    json_t *req = json_incref(json_object_get(review, "request"));
    json_decref(review);
    if (req) {
        json_object_del(req, "uid");
        json_object_del(req, "object");
        json_object_del(req, "oldObject");
    }
    return req;
}

void ck__cel_input_release(struct ck__cel_input *in)
{
    json_decref(in->request);
    json_decref(in->namespace_object);
    json_decref(in->variables);
    json_decref(in->variable_errors);
    in->request = in->namespace_object = in->variables = in->variable_errors = NULL;
}

/* CreateNamespaceObject: the namespace's name, labels, annotations, uid... and its spec, status. */
static json_t *namespace_view(const json_t *ns)
{
    if (!ns)
        return json_null();
    json_t *view = json_object();
    const json_t *meta = json_object_get(ns, "metadata");
    static const char *const keep[] = {
        "name", "generateName",      "namespace",         "labels", "annotations",
        "uid",  "creationTimestamp", "deletionTimestamp", NULL};
    json_t *m = json_object();
    for (size_t i = 0; keep[i]; i++) {
        json_t *v = json_object_get(meta, keep[i]);
        if (v)
            json_object_set(m, keep[i], v);
    }
    json_object_set_new(view, "metadata", m);
    if (json_object_get(ns, "spec"))
        json_object_set(view, "spec", json_object_get(ns, "spec"));
    if (json_object_get(ns, "status"))
        json_object_set(view, "status", json_object_get(ns, "status"));
    return view;
}

int ck__cel_input_set_namespace(struct ck__cel_input *in, const json_t *ns)
{
    json_decref(in->namespace_object);
    in->namespace_object = namespace_view(ns);
    return in->namespace_object ? 0 : CK_ENOMEM;
}

/*
 * The authorizer's check (authz.go's Authorize through the server's authorizer): the
 * server's own writes and a server without authorization allow everything; then
 * system:masters (the privileged group authorizer), then RBAC. A check made through
 * authorizer.serviceAccount(ns, name) asks about that account (ServiceAccountInfo's user
 * and groups).
 */
static void authorize(void *ctx, const struct ck_cel_authz_request *q,
                      struct ck_cel_authz_decision *d)
{
    const struct ck__cel_input *in = ctx;
    const struct ck_auth_user *user = in->a->user;
    struct ck_auth_user *sa = NULL;
    if (q->sa_name) {
        /* authz.c has checked the names: a DNS label and a DNS subdomain */
        char name[400], group[100];
        snprintf(name, sizeof(name), "system:serviceaccount:%s:%s", q->sa_namespace, q->sa_name);
        snprintf(group, sizeof(group), "system:serviceaccounts:%s", q->sa_namespace);
        sa = ck_auth_user_new(name, NULL);
        if (!sa || ck_auth_user_add_group(sa, "system:serviceaccounts") < 0 ||
            ck_auth_user_add_group(sa, group) < 0) {
            snprintf(d->error, sizeof(d->error), "out of memory");
            ck_auth_user_free(sa);
            return;
        }
        user = sa;
    }
    struct ck_rbac_request req = {
        .user = user,
        .verb = q->verb,
        .is_resource_request = q->resource_request,
        .api_group = q->group,
        .resource = q->resource,
        .subresource = q->subresource,
        .name = q->name,
        .namespace = q->namespace,
        .path = q->path,
    };
    d->allowed = ck__admission_authorize(in->reg, &req, d->reason, sizeof(d->reason));
    ck_auth_user_free(sa);
}

bool ck__admission_authorize(struct ck__registry *reg, const struct ck_rbac_request *req,
                             char *reason, size_t size)
{
    if (!req->user || !reg->authorizer || ck_auth_user_in_group(req->user, CK_AUTH_MASTERS))
        return true;
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(reg->authorizer);
    bool allowed = policy && ck_rbac_authorize(policy, req, reason, size) == CK_RBAC_ALLOW;
    ck_rbac_policy_unref(policy);
    return allowed;
}

/* The variables of in's activation into vars (room for 7); returns how many. */
static size_t activation(struct ck__cel_input *in, struct ck_cel_var *vars)
{
    json_t *null_value = json_null(); /* jansson's null: a static singleton, never freed */
    if (!in->request)
        in->request = ck__admission_cel_request(in->a);
    size_t n = 0;
    vars[n++] =
        (struct ck_cel_var){.name = "object", .value = in->a->obj ? in->a->obj : null_value};
    vars[n++] =
        (struct ck_cel_var){.name = "oldObject", .value = in->a->old ? in->a->old : null_value};
    vars[n++] =
        (struct ck_cel_var){.name = "request", .value = in->request ? in->request : null_value};
    if (in->reg) {
        in->authorizer = (struct ck_cel_authorizer){
            .authorize = authorize,
            .ctx = in,
            .group = in->a->kind ? in->a->kind->group : "",
            .resource = in->a->kind ? in->a->kind->resource : "",
            .subresource = in->a->subresource ? in->a->subresource : "",
            .namespace = in->a->namespace ? in->a->namespace : "",
            .name = in->a->name ? in->a->name : "",
        };
        vars[n++] = (struct ck_cel_var){.name = "authorizer", .authorizer = &in->authorizer};
    }
    if (!in->policy)
        return n;
    vars[n++] =
        (struct ck_cel_var){.name = "params", .value = in->params ? in->params : null_value};
    vars[n++] =
        (struct ck_cel_var){.name = "namespaceObject",
                            .value = in->namespace_object ? in->namespace_object : null_value};
    if (!in->variables)
        in->variables = json_object();
    vars[n++] = (struct ck_cel_var){.name = "variables",
                                    .value = in->variables ? in->variables : null_value};
    return n;
}

/*
 * The words of an evaluation error: a read of a variable that failed (left out of
 * `variables`, so `no such key: NAME`) gives that variable's own error, as Kubernetes'
 * lazily evaluated variables do.
 */
static const char *variable_error(const struct ck__cel_input *in, const char *expr, const char *why)
{
    static const char prefix[] = "no such key: ";
    if (!in->variable_errors || strncmp(why, prefix, sizeof(prefix) - 1) != 0)
        return why;
    const char *name = why + sizeof(prefix) - 1;
    const char *own = json_string_value(json_object_get(in->variable_errors, name));
    char ref[300];
    snprintf(ref, sizeof(ref), "variables.%s", name);
    return own && strstr(expr, ref) ? own : why;
}

int ck__admission_cel_eval(const char *expr, struct ck__cel_input *in, struct ck_cel_result **ret,
                           struct ck_err *reterr)
{
    *ret = NULL;
    const struct ck_cel_program *prog = NULL;
    struct ck_cel_program *owned = NULL;
    struct ck_err err = {0};
    int r = compile(expr, &prog, &owned, &err);
    if (r < 0) {
        r = r == CK_ENOMEM
                ? ck_err_no_memory(reterr)
                : ck_err_status(reterr, "Invalid", "compilation error: %s", ck_err_message(&err));
        ck_err_release(&err);
        return r;
    }
    struct ck_cel_var vars[7];
    size_t n = activation(in, vars);
    r = ck_cel_eval(prog, vars, n, 0, ret, NULL, &err);
    ck_cel_program_free(owned);
    if (r == CK_ENOMEM)
        r = ck_err_no_memory(reterr);
    else if (r < 0)
        r = ck_err_status(reterr, "Invalid", "expression '%s' resulted in error: %s", expr,
                          variable_error(in, expr, ck_err_message(&err)));
    ck_err_release(&err);
    return r;
}

int ck__admission_cel_variables(const json_t *variables, struct ck__cel_input *in)
{
    if (!in->variables && !(in->variables = json_object()))
        return CK_ENOMEM;
    size_t i;
    const json_t *v;
    json_array_foreach(variables, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *expr = json_string_value(json_object_get(v, "expression"));
        if (!name || !expr)
            continue;
        struct ck_cel_result *res = NULL;
        struct ck_err err = {0};
        json_t *value = NULL;
        int r = ck__admission_cel_eval(expr, in, &res, &err);
        if (r == 0)
            r = ck_cel_result_to_json(res, &value);
        ck_cel_result_free(res);
        if (r == CK_EINVAL && err.code) {
            /* its error without the `expression '...' resulted in error: ` of its own */
            const char *why = ck_err_message(&err), *sep = strstr(why, "resulted in error: ");
            if (!in->variable_errors && !(in->variable_errors = json_object()))
                r = CK_ENOMEM;
            else if (json_object_set_new(in->variable_errors, name,
                                         json_string(sep ? sep + 19 : why)) < 0)
                r = CK_ENOMEM;
        }
        ck_err_release(&err);
        if (r == CK_ENOMEM)
            return r;
        if (r == 0 && json_object_set_new(in->variables, name, value) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

int ck__admission_match_conditions(const json_t *conditions, struct ck__cel_input *in, bool ignore,
                                   struct ck_err *reterr)
{
    struct ck__buf errors = {0};
    size_t n_errors = 0;
    size_t i;
    const json_t *cond;
    int r = 1;
    json_array_foreach(conditions, i, cond)
    {
        const char *expr = json_string_value(json_object_get(cond, "expression"));
        struct ck_cel_result *res = NULL;
        struct ck_err err = {0};
        r = ck__admission_cel_eval(expr ? expr : "", in, &res, &err);
        if (r == CK_ENOMEM) {
            ck_err_release(&err);
            break;
        }
        bool is_false =
            r == 0 && ck_cel_result_type(res) == CK_CEL_BOOL && !ck_cel_result_bool(res);
        if (r < 0 || (r == 0 && ck_cel_result_type(res) != CK_CEL_BOOL)) {
            /* an error, or a result that is no bool (cel-go's checker would refuse it) */
            ck__buf_printf(&errors, "%s%s", n_errors ? ", " : "",
                           r < 0 ? ck_err_message(&err) : "expression must evaluate to a bool");
            n_errors++;
        }
        ck_cel_result_free(res);
        ck_err_release(&err);
        r = 1;
        if (is_false) {
            r = 0;
            break;
        }
    }
    if (r == CK_ENOMEM) {
        ck__buf_release(&errors);
        return ck_err_no_memory(reterr);
    }
    if (r == 1 && n_errors) {
        /* utilerrors.NewAggregate: one error as it is, several in brackets */
        if (errors.err)
            r = ck_err_no_memory(reterr);
        else if (ignore)
            r = 0;
        else
            r = ck_err_status(reterr, "Invalid", n_errors > 1 ? "[%s]" : "%s", errors.p);
    }
    ck__buf_release(&errors);
    return r;
}
