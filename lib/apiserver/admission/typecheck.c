/*
 * typecheck.c - the type checking of a ValidatingAdmissionPolicy's expressions, the
 * warnings Kubernetes writes to the policy's status.typeChecking.
 *
 * Follows Kubernetes 1.32's k8s.io/apiserver pkg/admission/plugin/policy/validating/
 * typechecking.go (TypeChecker.Check): the kinds the policy's matchConstraints name
 * (rules with a wildcard group or version skipped, wildcard and subresource resources
 * skipped, at most 10 kinds a rule, sorted by group, version and kind), each kind with a
 * schema checked on its own with `object` and `oldObject` of that kind's type; `params`
 * of the paramKind's type (undeclared without a paramKind), `request` and
 * `namespaceObject` as Kubernetes declares them, `authorizer`; every
 * spec.validations[i].expression and messageExpression. A warning is, per kind that
 * fails, "<group>/<version>, Kind=<kind>: " and cel-go's errors and a newline, the kinds'
 * joined by newlines. What differs (docs/differences.md): only the built-in kinds'
 * schemas are known (a custom resource or a paramKind that is one is not checked,
 * params then dyn); `variables` is a map(string, dyn), not an object of the variables'
 * types.
 *
 * Threading: pure over its arguments.
 *
 * Tested by tests/apiserver/test_policy_typecheck.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/cel.h"

#define MAX_TYPES  10 /* typechecking.go's maxTypesToCheck */
#define REF_PREFIX "#/components/schemas/"

struct gvk {
    const char *group, *version, *kind;
    const char *schema;
};

static const json_t *resolve(const char *ref, void *arg)
{
    size_t n = strlen(REF_PREFIX);
    return strncmp(ref, REF_PREFIX, n) ? NULL : ck_schemas_get(arg, ref + n);
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The strings of arr into out, sorted: none when one has a '*' and wild_gives_up
 * (extractGroups, extractVersions), else without those with a '*' or a '/'
 * (extractResources). */
static size_t strings_of(const json_t *arr, bool wild_gives_up, const char **out, size_t max)
{
    size_t n = 0, i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        if (!s)
            continue;
        if (strchr(s, '*') || (!wild_gives_up && strchr(s, '/'))) {
            if (wild_gives_up)
                return 0;
            continue;
        }
        if (n < max)
            out[n++] = s;
    }
    qsort(out, n, sizeof(*out), by_string);
    return n;
}

static int by_gvk(const void *a, const void *b)
{
    const struct gvk *x = a, *y = b;
    int r = strcmp(x->group, y->group);
    if (!r)
        r = strcmp(x->version, y->version);
    return r ? r : strcmp(x->kind, y->kind);
}

/* typesToCheck: the kinds of the rules' resources, deduplicated and sorted. */
static size_t types_to_check(const json_t *policy, struct gvk *out, size_t max)
{
    size_t n = 0, i;
    const json_t *rule;
    const json_t *rules = json_object_get(
        json_object_get(json_object_get(policy, "spec"), "matchConstraints"), "resourceRules");
    json_array_foreach(rules, i, rule)
    {
        const char *g[64], *v[64], *r[64];
        size_t ng = strings_of(json_object_get(rule, "apiGroups"), true, g, 64);
        size_t nv = strings_of(json_object_get(rule, "apiVersions"), true, v, 64);
        size_t nr = strings_of(json_object_get(rule, "resources"), false, r, 64);
        size_t count = 0;
        for (size_t a = 0; a < ng; a++)
            for (size_t b = 0; b < nv; b++)
                for (size_t c = 0; c < nr; c++) {
                    const struct ck_kind *k = ck_kind_lookup(g[a], v[b], r[c]);
                    if (!k || !k->schema)
                        continue;
                    struct gvk t = {k->group, k->version, k->kind, k->schema};
                    bool seen = false;
                    for (size_t j = 0; j < n && !seen; j++)
                        seen = !by_gvk(&out[j], &t);
                    if (!seen && n < max)
                        out[n++] = t;
                    if (++count == MAX_TYPES)
                        goto done;
                }
    }
done:
    qsort(out, n, sizeof(*out), by_gvk);
    return n;
}

/* The schema of the built-in kind apiVersion/kind (a paramKind), or NULL. */
static const json_t *schema_of_kind(const struct ck_schemas *set, const json_t *pk)
{
    const char *av = json_string_value(json_object_get(pk, "apiVersion"));
    const char *kind = json_string_value(json_object_get(pk, "kind"));
    if (!av || !kind)
        return NULL;
    const char *slash = strchr(av, '/');
    char group[256] = "";
    const char *version = av;
    if (slash) {
        snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
        version = slash + 1;
    }
    for (; set; set = ck_schemas_parent(set)) {
        const char *name;
        const json_t *s;
        json_object_foreach((json_t *)ck_schemas_all(set), name, s)
        {
            size_t i;
            const json_t *e;
            json_array_foreach(json_object_get(s, "x-kubernetes-group-version-kind"), i, e)
            {
                const char *eg = json_string_value(json_object_get(e, "group"));
                const char *ev = json_string_value(json_object_get(e, "version"));
                const char *ek = json_string_value(json_object_get(e, "kind"));
                if (eg && ev && ek && !strcmp(eg, group) && !strcmp(ev, version) &&
                    !strcmp(ek, kind))
                    return s;
            }
        }
    }
    return NULL;
}

/* The `request` variable's type (admission/plugin/cel BuildRequestType). */
static const char REQUEST_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"kind\":{\"$ref\":\"gvk\"},\"resource\":{\"$ref\":\"gvr\"},"
    "\"subResource\":{\"type\":\"string\"},\"requestKind\":{\"$ref\":\"gvk\"},"
    "\"requestResource\":{\"$ref\":\"gvr\"},\"requestSubResource\":{\"type\":\"string\"},"
    "\"name\":{\"type\":\"string\"},\"namespace\":{\"type\":\"string\"},"
    "\"operation\":{\"type\":\"string\"},\"userInfo\":{\"type\":\"object\",\"properties\":{"
    "\"username\":{\"type\":\"string\"},\"uid\":{\"type\":\"string\"},"
    "\"groups\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"extra\":{\"type\":\"object\",\"additionalProperties\":"
    "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}},"
    "\"dryRun\":{\"type\":\"boolean\"},\"options\":{\"x-kubernetes-int-or-string\":true}}}";
static const char GVK_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"group\":{\"type\":\"string\"},"
    "\"version\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"}}}";
static const char GVR_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"group\":{\"type\":\"string\"},"
    "\"version\":{\"type\":\"string\"},\"resource\":{\"type\":\"string\"}}}";

struct resolver {
    const struct ck_schemas *set;
    json_t *gvk, *gvr;
};

static const json_t *resolve_all(const char *ref, void *arg)
{
    struct resolver *r = arg;
    if (!strcmp(ref, "gvk"))
        return r->gvk;
    if (!strcmp(ref, "gvr"))
        return r->gvr;
    return resolve(ref, (void *)r->set);
}

/* The warning of expr over every kind ("" when none; NULL when out of memory). */
static char *check_expression(const char *expr, const struct gvk *kinds, size_t nkinds,
                              struct ck_cel_decl *decls, size_t ndecls,
                              const struct ck_schemas *set)
{
    struct ck_cel_program *prog = NULL;
    struct ck_err err = {0};
    char *out = strdup("");
    int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
    for (size_t i = 0; out && i < nkinds; i++) {
        const json_t *schema = ck_schemas_get(set, kinds[i].schema);
        if (!schema)
            continue;
        decls[0].schema = decls[1].schema = schema;
        decls[0].type_name = decls[1].type_name = kinds[i].kind;
        struct ck_err cerr = {0};
        int cr = r ? r : ck_cel_check(prog, decls, ndecls, NULL, 0, &cerr);
        if (cr == CK_ENOMEM) {
            free(out);
            out = NULL;
        } else if (cr) {
            const char *msg = ck_err_message(r ? &err : &cerr);
            size_t len = strlen(out) + strlen(msg) + strlen(kinds[i].group) +
                         strlen(kinds[i].version) + strlen(kinds[i].kind) + 16;
            char *next = malloc(len);
            if (next)
                snprintf(next, len, "%s%s%s/%s, Kind=%s: %s\n", out, *out ? "\n" : "",
                         kinds[i].group, kinds[i].version, kinds[i].kind, msg);
            free(out);
            out = next;
        }
        ck_err_release(&cerr);
    }
    ck_err_release(&err);
    ck_cel_program_free(prog);
    return out;
}

int ck__policy_typecheck(const json_t *policy, const struct ck_schemas *set, json_t **ret_warnings)
{
    struct gvk kinds[256];
    size_t nkinds = types_to_check(policy, kinds, sizeof(kinds) / sizeof(kinds[0]));
    const json_t *spec = json_object_get(policy, "spec");
    const json_t *pk = json_object_get(spec, "paramKind");
    struct resolver res = {
        .set = set, .gvk = json_loads(GVK_SCHEMA, 0, NULL), .gvr = json_loads(GVR_SCHEMA, 0, NULL)};
    json_t *request = json_loads(REQUEST_SCHEMA, 0, NULL);
    json_t *warnings = json_array();
    int r = res.gvk && res.gvr && request && warnings ? 0 : CK_ENOMEM;
    const json_t *params = pk ? schema_of_kind(set, pk) : NULL;
    struct ck_cel_decl decls[] = {
        {.name = "object", .resource_root = true},
        {.name = "oldObject", .resource_root = true},
        {.name = "request", .schema = request, .type_name = "kubernetes.AdmissionRequest"},
        {.name = "namespaceObject",
         .schema = ck_schemas_get(set, "io.k8s.api.core.v1.Namespace"),
         .type_name = "kubernetes.Namespace"},
        {.name = "authorizer", .type = "kubernetes.authorization.Authorizer"},
        {.name = "variables", .type = "map(string, dyn)"},
        {.name = "params", .schema = params, .type = "dyn", .resource_root = true},
    };
    for (size_t i = 0; i < sizeof(decls) / sizeof(decls[0]); i++) {
        decls[i].resolve = resolve_all;
        decls[i].resolve_arg = &res;
    }
    size_t ndecls = sizeof(decls) / sizeof(decls[0]) - (pk ? 0 : 1);
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(spec, "validations"), i, v)
    {
        static const char *const members[] = {"expression", "messageExpression"};
        for (size_t m = 0; !r && m < 2; m++) {
            const char *expr = json_string_value(json_object_get(v, members[m]));
            if (!expr || !*expr)
                continue;
            char *w = check_expression(expr, kinds, nkinds, decls, ndecls, set);
            char ref[96];
            snprintf(ref, sizeof(ref), "spec.validations[%zu].%s", i, members[m]);
            if (!w)
                r = CK_ENOMEM;
            else if (*w && json_array_append_new(
                               warnings, json_pack("{s:s,s:s}", "fieldRef", ref, "warning", w)))
                r = CK_ENOMEM;
            free(w);
        }
    }
    json_decref(res.gvk);
    json_decref(res.gvr);
    json_decref(request);
    if (r)
        json_decref(warnings);
    else
        *ret_warnings = warnings;
    return r;
}
