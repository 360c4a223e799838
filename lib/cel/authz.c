/*
 * authz.c - Kubernetes' authorizer library for CEL (k8s.io/apiserver 1.32
 * pkg/cel/library/authz.go): the `authorizer` variable of ValidatingAdmissionPolicy
 * expressions and what is built from it.
 *
 *   authorizer.path(p)                    PathCheck ("path must not be empty")
 *   authorizer.group(g)                   GroupCheck
 *   authorizer.serviceAccount(ns, name)   Authorizer asking about that service account
 *   <GroupCheck>.resource(r)              ResourceCheck ("resource must not be empty")
 *   <ResourceCheck>.subresource(s), .namespace(ns), .name(n), .fieldSelector(s),
 *                  .labelSelector(s)      ResourceCheck with that field set
 *   <PathCheck or ResourceCheck>.check(verb)   Decision (cost 350000, as cost.go charges:
 *                                         two checks per expression)
 *   <Decision>.allowed(), .reason(), .errored(), .error()
 *   authorizer.requestResource            the ResourceCheck of the request's resource
 *
 * The objects are immutable values of the evaluation's arena (CK_CEL_OBJECT); a check
 * calls the variable's ck_cel_authorizer. Selectors are kept but not passed on: the RBAC
 * authorizer does not read them (docs/cel.md).
 */
#include <string.h>

#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

enum az_kind { AZ_AUTHORIZER, AZ_PATH, AZ_GROUP, AZ_RESOURCE, AZ_DECISION };

struct ck__cel_authz {
    enum az_kind kind;
    const struct ck_cel_authorizer *az;
    const char *sa_namespace, *sa_name; /* NULL: the request's user */
    const char *path;
    const char *group, *resource, *subresource, *namespace, *name;
    const char *field_selector, *label_selector;
    bool allowed; /* a decision's */
    const char *reason, *error;
};

static const char *const type_names[] = {
    [AZ_AUTHORIZER] = "kubernetes.authorization.Authorizer",
    [AZ_PATH] = "kubernetes.authorization.PathCheck",
    [AZ_GROUP] = "kubernetes.authorization.GroupCheck",
    [AZ_RESOURCE] = "kubernetes.authorization.ResourceCheck",
    [AZ_DECISION] = "kubernetes.authorization.Decision",
};

const char *ck__cel_authz_type_name(const struct ck__cel_val *v)
{
    return type_names[v->authz->kind];
}

/* A new object of kind, a copy of from (NULL: zeroed). */
static struct ck__cel_val *derive(struct ck__cel_eval *ev, const struct ck__cel_authz *from,
                                  enum az_kind kind, struct ck__cel_authz **ret)
{
    *ret = NULL; /* with an error value */
    struct ck__cel_authz *o = ck__cel_alloc(ev->arena, sizeof(*o));
    if (!o)
        return ck__cel_alloc_failed(ev, sizeof(*o));
    if (from)
        *o = *from;
    o->kind = kind;
    struct ck__cel_val *v = ck__cel_new(ev, CK_CEL_OBJECT);
    if (!ck__cel_is_error(v))
        v->authz = o;
    *ret = o;
    return v;
}

struct ck__cel_val *ck__cel_authorizer(struct ck__cel_eval *ev, const struct ck_cel_authorizer *az)
{
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, NULL, AZ_AUTHORIZER, &o);
    if (!ck__cel_is_error(v))
        o->az = az;
    return v;
}

struct ck__cel_val *ck__cel_request_resource(struct ck__cel_eval *ev, const struct ck__cel_val *o)
{
    if (o->type != CK_CEL_OBJECT || o->authz->kind != AZ_AUTHORIZER || !o->authz->az->resource)
        return NULL;
    const struct ck_cel_authorizer *az = o->authz->az;
    struct ck__cel_authz *r;
    struct ck__cel_val *v = derive(ev, o->authz, AZ_RESOURCE, &r);
    if (ck__cel_is_error(v))
        return v;
    r->group = az->group ? az->group : "";
    r->resource = az->resource;
    r->subresource = az->subresource ? az->subresource : "";
    r->namespace = az->namespace ? az->namespace : "";
    r->name = az->name ? az->name : "";
    return v;
}

/* args[0] an object of kind and args[1..] strings. */
static bool shape(struct ck__cel_val **args, size_t nargs, enum az_kind kind)
{
    if (args[0]->type != CK_CEL_OBJECT || args[0]->authz->kind != kind)
        return false;
    for (size_t i = 1; i < nargs; i++)
        if (args[i]->type != CK_CEL_STRING)
            return false;
    return true;
}

static bool blank(const char *s)
{
    return s[strspn(s, " \t\n\v\f\r")] == '\0';
}

FN(fn_path)
{
    if (!shape(args, nargs, AZ_AUTHORIZER))
        return NO_OVERLOAD();
    if (blank(args[1]->s.p))
        return ck__cel_errorf(ev, "path must not be empty");
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, args[0]->authz, AZ_PATH, &o);
    if (!ck__cel_is_error(v))
        o->path = args[1]->s.p;
    return v;
}

FN(fn_group)
{
    if (!shape(args, nargs, AZ_AUTHORIZER))
        return NO_OVERLOAD();
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, args[0]->authz, AZ_GROUP, &o);
    if (!ck__cel_is_error(v))
        o->group = args[1]->s.p;
    return v;
}

/* An RFC 1123 label: 1 to 63 of [a-z0-9-], alphanumeric at both ends. */
static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* An RFC 1123 subdomain: labels joined by dots, 253 bytes at most. */
static bool dns_subdomain(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 253)
        return false;
    for (;;) {
        size_t n = strcspn(s, ".");
        if (!dns_label(s, n))
            return false;
        if (!s[n])
            return true;
        s += n + 1;
    }
}

FN(fn_service_account)
{
    if (!shape(args, nargs, AZ_AUTHORIZER))
        return NO_OVERLOAD();
    const char *ns = args[1]->s.p, *name = args[2]->s.p;
    if (!dns_subdomain(name))
        return ck__cel_errorf(ev, "Invalid service account name");
    if (!dns_label(ns, strlen(ns)))
        return ck__cel_errorf(ev, "Invalid service account namespace");
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, NULL, AZ_AUTHORIZER, &o);
    if (!ck__cel_is_error(v)) {
        o->az = args[0]->authz->az;
        o->sa_namespace = ns;
        o->sa_name = name;
    }
    return v;
}

FN(fn_resource)
{
    if (!shape(args, nargs, AZ_GROUP))
        return NO_OVERLOAD();
    if (blank(args[1]->s.p))
        return ck__cel_errorf(ev, "resource must not be empty");
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, args[0]->authz, AZ_RESOURCE, &o);
    if (!ck__cel_is_error(v)) {
        o->resource = args[1]->s.p;
        o->subresource = o->namespace = o->name = "";
    }
    return v;
}

/* subresource, namespace, name, fieldSelector, labelSelector: one field set. */
FN(fn_resource_field)
{
    if (!shape(args, nargs, AZ_RESOURCE))
        return NO_OVERLOAD();
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, args[0]->authz, AZ_RESOURCE, &o);
    if (ck__cel_is_error(v))
        return v;
    const char *f = call->call.name, *s = args[1]->s.p;
    if (!strcmp(f, "subresource"))
        o->subresource = s;
    else if (!strcmp(f, "namespace"))
        o->namespace = s;
    else if (!strcmp(f, "name"))
        o->name = s;
    else if (!strcmp(f, "fieldSelector"))
        o->field_selector = s;
    else
        o->label_selector = s;
    return v;
}

FN(fn_check)
{
    enum az_kind kind = args[0]->type == CK_CEL_OBJECT ? args[0]->authz->kind : AZ_DECISION;
    if ((kind != AZ_PATH && kind != AZ_RESOURCE) || !shape(args, nargs, kind))
        return NO_OVERLOAD();
    if (!ck__cel_charge(ev, 350000))
        return ck__cel_fatal(ev);
    const struct ck__cel_authz *c = args[0]->authz;
    struct ck_cel_authz_request req = {
        .sa_namespace = c->sa_namespace,
        .sa_name = c->sa_name,
        .verb = args[1]->s.p,
        .resource_request = kind == AZ_RESOURCE,
        .path = c->path,
        .group = c->group ? c->group : "",
        .resource = c->resource ? c->resource : "",
        .subresource = c->subresource ? c->subresource : "",
        .namespace = c->namespace ? c->namespace : "",
        .name = c->name ? c->name : "",
    };
    struct ck_cel_authz_decision d = {0};
    c->az->authorize(c->az->ctx, &req, &d);
    struct ck__cel_authz *o;
    struct ck__cel_val *v = derive(ev, c, AZ_DECISION, &o);
    if (ck__cel_is_error(v))
        return v;
    o->allowed = d.allowed;
    o->reason = ck__cel_strndup(ev->arena, d.reason, strnlen(d.reason, sizeof(d.reason)));
    o->error = ck__cel_strndup(ev->arena, d.error, strnlen(d.error, sizeof(d.error)));
    if (!o->reason || !o->error)
        return ck__cel_alloc_failed(ev, sizeof(d));
    return v;
}

/* allowed, errored, reason, error. */
FN(fn_decision)
{
    if (!shape(args, nargs, AZ_DECISION))
        return NO_OVERLOAD();
    const struct ck__cel_authz *d = args[0]->authz;
    const char *f = call->call.name;
    if (!strcmp(f, "allowed"))
        return ck__cel_bool(d->allowed);
    if (!strcmp(f, "errored"))
        return ck__cel_bool(d->error[0] != '\0');
    const char *s = !strcmp(f, "reason") ? d->reason : d->error;
    return ck__cel_str(ev, CK_CEL_STRING, s, strlen(s));
}

#define M CK__CEL_MEMBER

/* The overloads below name the library's types (check.c reads them). */
#define AZ(t)  "kubernetes.authorization." #t
#define RC     AZ(ResourceCheck) ".(string)->" AZ(ResourceCheck)
#define SA_SIG AZ(Authorizer) ".(string, string)->" AZ(Authorizer)
#define CHECK_SIG                                                                                  \
    AZ(PathCheck) ".(string)->" AZ(Decision) ";" AZ(ResourceCheck) ".(string)->" AZ(Decision)

const struct ck__cel_func ck__cel_authz_lib[] = {
    {"path", M, 2, 2, fn_path, AZ(Authorizer) ".(string)->" AZ(PathCheck)},
    {"group", M, 2, 2, fn_group, AZ(Authorizer) ".(string)->" AZ(GroupCheck)},
    {"serviceAccount", M, 3, 3, fn_service_account, SA_SIG},
    {"resource", M, 2, 2, fn_resource, AZ(GroupCheck) ".(string)->" AZ(ResourceCheck)},
    {"subresource", M, 2, 2, fn_resource_field, RC},
    {"namespace", M, 2, 2, fn_resource_field, RC},
    {"name", M, 2, 2, fn_resource_field, RC},
    {"fieldSelector", M, 2, 2, fn_resource_field, RC},
    {"labelSelector", M, 2, 2, fn_resource_field, RC},
    {"check", M, 2, 2, fn_check, CHECK_SIG},
    {"allowed", M, 1, 1, fn_decision, AZ(Decision) ".()->bool"},
    {"errored", M, 1, 1, fn_decision, AZ(Decision) ".()->bool"},
    {"reason", M, 1, 1, fn_decision, AZ(Decision) ".()->string"},
    {"error", M, 1, 1, fn_decision, AZ(Decision) ".()->string"},
};
const size_t ck__cel_authz_lib_len = sizeof(ck__cel_authz_lib) / sizeof(ck__cel_authz_lib[0]);
