/*
 * chain.c - admission: the ordered chain of plugins every write passes between
 * decoding and storage.
 *
 * Mirrors kube-apiserver 1.32's admission (k8s.io/apiserver pkg/admission,
 * pkg/kubeapiserver/options/plugins.go, pkg/server/options/admission.go): the plugins
 * run in kube-apiserver's order (AllOrderedPlugins), every mutating step (admit) of
 * every enabled plugin first, then every validating step (validate), and the first
 * refusal ends the request with that plugin's Status. The enabled set is Kubernetes'
 * default set plus --enable-admission-plugins minus --disable-admission-plugins, with
 * the flags checked as kube-apiserver checks them ("plugin %q is unknown", "overlapped").
 *
 * Every plugin kube-apiserver 1.32 knows is listed, so a name is never "unknown" here
 * when it is known there; those ckube does not implement yet have no steps. Enabling one
 * of them by flag is refused at start (a cluster would believe it protected); a default
 * one that is missing is simply not run, and docs/admission.md lists which.
 *
 * The registry (registry.c) calls ck__admission_admit() and ck__admission_validate() on
 * every create, update and delete of every kind, its subresources included; plugins look
 * at the attributes and skip what is not theirs. A TokenRequest (authn_authz.c) passes
 * as a create of serviceaccounts/token; pods/exec, attach and portforward (handlers.c)
 * as a connect, which only the plugins that say so are asked about.
 *
 * Threading: a chain is immutable once built; plugins read the store and their
 * arguments only, so the chain runs on any request thread at once.
 *
 * Tested by tests/apiserver/test_admission.c and tests/e2e/test_admission.sh.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "pod_security.h"

/* AlwaysAdmit: admits everything (deprecated in Kubernetes: it means nothing). */
static int always_admit_step(struct ck__registry *reg, const struct ck__admission_attrs *a,
                             struct ck_err *reterr)
{
    (void)reg, (void)a, (void)reterr;
    return 0;
}
static const struct ck__admission_plugin always_admit = {.name = "AlwaysAdmit",
                                                         .admit = always_admit_step,
                                                         .validate = always_admit_step,
                                                         .connect = true};

/* AlwaysDeny: refuses every write, in kube-apiserver's words (plugin/pkg/admission/deny). */
static int always_deny(struct ck__registry *reg, const struct ck__admission_attrs *a,
                       struct ck_err *reterr)
{
    (void)reg;
    return ck__admission_forbidden(a, reterr, "admission control is denying all modifications");
}
static const struct ck__admission_plugin always_deny_plugin = {
    .name = "AlwaysDeny", .admit = always_deny, .validate = always_deny, .connect = true};

/* kube-apiserver 1.32's plugins in its order, whether each is on by default, and ours. */
static const struct known_plugin {
    const char *name;
    bool default_on;
    const struct ck__admission_plugin *impl; /* NULL: not implemented by ckube */
} known[] = {
    {"AlwaysAdmit", false, &always_admit},
    {"NamespaceAutoProvision", false, NULL},
    {"NamespaceLifecycle", true, &ck__admission_namespace_lifecycle},
    {"NamespaceExists", false, NULL},
    {"LimitPodHardAntiAffinityTopology", false, NULL},
    {"LimitRanger", true, &ck__admission_limit_ranger},
    {"ServiceAccount", true, &ck__admission_service_account},
    /* on in ckube, as k3s turns it on: a node writes only its own objects */
    {"NodeRestriction", true, &ck__admission_node_restriction},
    {"TaintNodesByCondition", true, &ck__admission_taint_nodes_by_condition},
    {"AlwaysPullImages", false, &ck__admission_always_pull_images},
    {"ImagePolicyWebhook", false, NULL},
    {"PodSecurity", true, &ck__admission_pod_security},
    {"PodNodeSelector", false, NULL},
    {"Priority", true, &ck__admission_priority},
    {"DefaultTolerationSeconds", true, &ck__admission_default_toleration_seconds},
    {"PodTolerationRestriction", false, NULL},
    {"EventRateLimit", false, NULL},
    {"ExtendedResourceToleration", false, NULL},
    {"DefaultStorageClass", true, &ck__admission_default_storage_class},
    {"StorageObjectInUseProtection", true, &ck__admission_storage_object_in_use_protection},
    {"OwnerReferencesPermissionEnforcement", false, NULL},
    {"PersistentVolumeClaimResize", true, NULL},
    {"RuntimeClass", true, &ck__admission_runtime_class},
    {"CertificateApproval", true, &ck__admission_certificate_approval},
    {"CertificateSigning", true, &ck__admission_certificate_signing},
    {"ClusterTrustBundleAttest", true, NULL},
    {"CertificateSubjectRestriction", true, &ck__admission_certificate_subject_restriction},
    {"DefaultIngressClass", true, &ck__admission_default_ingress_class},
    {"DenyServiceExternalIPs", false, &ck__admission_deny_service_external_ips},
    {"MutatingAdmissionPolicy", true, NULL},
    {"MutatingAdmissionWebhook", true, &ck__admission_mutating_webhook},
    {"ValidatingAdmissionPolicy", true, &ck__admission_validating_policy},
    {"ValidatingAdmissionWebhook", true, &ck__admission_validating_webhook},
    {"ResourceQuota", true, &ck__admission_resource_quota},
    {"AlwaysDeny", false, &always_deny_plugin},
};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

/* The index of name in known[], or -1. */
static int known_index(const char *name, size_t len)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strlen(known[i].name) == len && strncmp(known[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

/*
 * Marks the plugins a comma-separated list names in set (one flag per known plugin).
 * 0, or CK_EINVAL with kube-apiserver's message naming flag.
 */
static int parse_list(const char *list, const char *flag, bool set[N_KNOWN], struct ck_err *reterr)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        const char *name = p;
        size_t name_len = len;
        while (name_len && *name == ' ')
            name++, name_len--;
        while (name_len && name[name_len - 1] == ' ')
            name_len--;
        if (name_len) {
            int i = known_index(name, name_len);
            if (i < 0)
                return ck_err_set(reterr, CK_EINVAL, "%s plugin \"%.*s\" is unknown", flag,
                                  (int)name_len, name);
            set[i] = true;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

int ck__admission_chain_new(const char *enable, const char *disable,
                            struct ck__admission_chain **ret, struct ck_err *reterr)
{
    bool on[N_KNOWN] = {0}, off[N_KNOWN] = {0};
    int r = parse_list(enable, "enable-admission-plugins", on, reterr);
    if (r == 0)
        r = parse_list(disable, "disable-admission-plugins", off, reterr);
    if (r < 0)
        return r;
    char overlap[512] = "";
    for (size_t i = 0; i < N_KNOWN; i++)
        if (on[i] && off[i])
            snprintf(overlap + strlen(overlap), sizeof(overlap) - strlen(overlap), "%s%s",
                     *overlap ? " " : "", known[i].name);
    if (*overlap)
        return ck_err_set(reterr, CK_EINVAL,
                          "[%s] in enable-admission-plugins and disable-admission-plugins "
                          "overlapped",
                          overlap);
    for (size_t i = 0; i < N_KNOWN; i++)
        if (on[i] && !known[i].impl)
            return ck_err_set(reterr, CK_EINVAL,
                              "enable-admission-plugins plugin \"%s\" is not implemented by ckube "
                              "(docs/admission.md lists those that are)",
                              known[i].name);
    struct ck__admission_chain *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    for (size_t i = 0; i < N_KNOWN; i++)
        if (known[i].impl && !off[i] && (on[i] || known[i].default_on))
            c->plugins[c->n++] = known[i].impl;
    *ret = c;
    return 0;
}

void ck__admission_chain_free(struct ck__admission_chain *chain)
{
    if (chain) {
        ck__psa_config_free(chain->pod_security);
        json_decref(chain->quota_limited);
        json_decref(chain->webhook_kubeconfig[0]);
        json_decref(chain->webhook_kubeconfig[1]);
    }
    free(chain);
}

/* "A,B,C": the names of the chain's plugins with a step of the kind asked. */
static void step_names(const struct ck__admission_chain *c, bool validating, char *buf, size_t size,
                       size_t *ret_n)
{
    size_t n = 0, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        const struct ck__admission_plugin *p = c->plugins[i];
        if (!(validating ? p->validate : p->admit))
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", n ? "," : "", p->name);
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
        n++;
    }
    *ret_n = n;
}

void ck__admission_chain_log(const struct ck__admission_chain *chain)
{
    char names[1024], count[16];
    size_t n;
    step_names(chain, false, names, sizeof(names), &n);
    snprintf(count, sizeof(count), "%zu", n);
    CK_LOGS(0, "Loaded mutating admission controllers", "count", count, "order", names);
    step_names(chain, true, names, sizeof(names), &n);
    snprintf(count, sizeof(count), "%zu", n);
    CK_LOGS(0, "Loaded validating admission controllers", "count", count, "order", names);
}

bool ck__admission_chain_has(const struct ck__admission_chain *chain, const char *name)
{
    for (size_t i = 0; chain && i < chain->n; i++)
        if (strcmp(chain->plugins[i]->name, name) == 0)
            return true;
    return false;
}

int ck__admission_admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                        struct ck_err *reterr)
{
    const struct ck__admission_chain *c = reg->admission;
    for (size_t i = 0; c && i < c->n; i++) {
        if (a->op == CK__ADMISSION_CONNECT && !c->plugins[i]->connect)
            continue;
        int r = c->plugins[i]->admit ? c->plugins[i]->admit(reg, a, reterr) : 0;
        if (r < 0)
            return r;
    }
    return 0;
}

int ck__admission_validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                           struct ck_err *reterr)
{
    const struct ck__admission_chain *c = reg->admission;
    for (size_t i = 0; c && i < c->n; i++) {
        if (a->op == CK__ADMISSION_CONNECT && !c->plugins[i]->connect)
            continue;
        int r = c->plugins[i]->validate ? c->plugins[i]->validate(reg, a, reterr) : 0;
        if (r < 0)
            return r;
    }
    return 0;
}

/* ---- what plugins share ----------------------------------------------------------- */

bool ck__admission_is_role(const struct ck__admission_attrs *a, enum ck_kind_role role)
{
    return a->kind && a->kind->role == role && (!a->subresource || !*a->subresource);
}

bool ck__admission_is(const struct ck__admission_attrs *a, const char *group, const char *resource)
{
    return a->kind && strcmp(a->kind->group, group) == 0 &&
           strcmp(a->kind->resource, resource) == 0 && (!a->subresource || !*a->subresource);
}

const char *ck__admission_name(const struct ck__admission_attrs *a)
{
    /* before a create, a generated name is only its prefix (admission.NewForbidden) */
    const json_t *meta = json_object_get(a->obj ? a->obj : a->old, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (name && *name)
        return name;
    const char *generate = json_string_value(json_object_get(meta, "generateName"));
    if (generate && *generate)
        return generate;
    return a->name && *a->name ? a->name : "Unknown";
}

int ck__admission_forbidden(const struct ck__admission_attrs *a, struct ck_err *reterr,
                            const char *fmt, ...)
{
    char qr[160];
    va_list ap;
    va_start(ap, fmt);
    char *why = ck__vformat(fmt, ap); /* whole: PodSecurity's reasons can be long */
    va_end(ap);
    if (!why)
        return ck_err_no_memory(reterr);
    const char *name = ck__admission_name(a);
    int code = ck_err_status(reterr, "Forbidden", "%s \"%s\" is forbidden: %s",
                             ck_kind_qualified_resource(a->kind, qr, sizeof(qr)), name, why);
    free(why);
    ck_err_set_details(reterr, a->kind->group, a->kind->resource, name);
    return code;
}

int ck__admission_get(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                      const char *name, json_t **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = ck__registry_get(reg, kind, namespace, name, &kv, &err);
    if (r < 0) {
        if (r != CK_ENOENT)
            r = ck_err_internal(reterr, "%s", err.msg);
        ck_err_release(&err);
        return r;
    }
    *ret = ck__decode_stored(kv);
    ck_kv_unref(kv);
    return *ret ? 0 : ck_err_no_memory(reterr);
}

/* The newest default class seen so far. */
struct newest {
    const char *const *marks;
    char name[254];   /* "": none yet */
    char created[32]; /* its creationTimestamp, RFC 3339 in UTC: ordered as text */
};

static int newest_default(const json_t *class, void *arg)
{
    struct newest *d = arg;
    const json_t *meta = json_object_get(class, "metadata");
    const json_t *annotations = json_object_get(meta, "annotations");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *created = json_string_value(json_object_get(meta, "creationTimestamp"));
    bool marked = false;
    for (size_t i = 0; d->marks[i] && !marked; i++) {
        const char *v = json_string_value(json_object_get(annotations, d->marks[i]));
        marked = v && strcmp(v, "true") == 0;
    }
    if (!marked || !name)
        return 0;
    if (!created)
        created = "";
    int newer = strcmp(created, d->created);
    if (!*d->name || newer > 0 || (newer == 0 && strcmp(name, d->name) < 0)) {
        snprintf(d->name, sizeof(d->name), "%s", name);
        snprintf(d->created, sizeof(d->created), "%s", created);
    }
    return 0;
}

int ck__admission_newest_default(struct ck__registry *reg, const struct ck_kind *kind,
                                 const char *const *annotations, char *ret_name, size_t size,
                                 struct ck_err *reterr)
{
    struct newest d = {annotations, "", ""};
    int r = ck__admission_list(reg, kind, NULL, newest_default, &d, reterr);
    snprintf(ret_name, size, "%s", r < 0 ? "" : d.name);
    return r;
}

/* Where this thread's request collects its warnings; NULL: nobody listens. */
static _Thread_local struct ck_warnings *warning_sink;

struct ck_warnings *ck__admission_warnings_to(struct ck_warnings *warnings)
{
    struct ck_warnings *prev = warning_sink;
    warning_sink = warnings;
    return prev;
}

void ck__admission_warn(const char *fmt, ...)
{
    if (!warning_sink)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = ck__vformat(fmt, ap);
    va_end(ap);
    if (!text)
        return;
    /* a warning is answered once, however often it is recorded (as Kubernetes' recorder) */
    bool seen = false;
    for (size_t i = 0; i < warning_sink->len && !seen; i++)
        seen = strcmp(warning_sink->items[i], text) == 0;
    if (!seen)
        ck_warnings_add(warning_sink, "%s", text);
    free(text);
}

int ck__admission_list(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                       int (*each)(const json_t *obj, void *arg), void *arg, struct ck_err *reterr)
{
    char prefix[CK__KEY_MAX];
    if (ck__collection_prefix(kind, namespace, prefix, sizeof(prefix)) < 0)
        return ck_err_internal(reterr, "no storage prefix for %s", kind->resource);
    bool keep = false;
    uint64_t generation = 0;
    json_t *items = ck__admission_cache_lookup(reg->admission_lists, prefix, &keep, &generation);
    if (!items) { /* read from the store, and kept for the next write when it may be */
        struct ck_store_range req = {.key = prefix, .key_len = strlen(prefix), .prefix = true};
        struct ck_store_range_result res = {0};
        struct ck_err err = {0};
        if (ck_store_range(reg->store, &req, &res, &err) < 0)
            return ck__err_store(reterr, &err);
        items = json_array();
        for (size_t i = 0; items && i < res.n_kvs; i++)
            if (json_array_append_new(items, ck__decode_stored(res.kvs[i])) < 0)
                items = (json_decref(items), NULL);
        ck_store_range_result_release(&res);
        if (!items)
            return ck_err_no_memory(reterr);
        if (keep)
            ck__admission_cache_fill(reg->admission_lists, prefix, items, generation);
    }
    int r = 0;
    size_t i;
    json_t *obj;
    json_array_foreach(items, i, obj)
    {
        if (r == 0)
            r = each(obj, arg);
    }
    ck__json_unref(items); /* kept lists are shared between requests */
    return r < 0 ? (reterr->code < 0 ? r : ck_err_no_memory(reterr)) : 0;
}
