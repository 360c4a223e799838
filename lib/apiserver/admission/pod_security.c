/*
 * pod_security.c - the PodSecurity admission plugin: pods must meet the Pod Security
 * Standard their namespace's labels ask for.
 *
 * Mirrors k8s.io/pod-security-admission admission/admission.go and kube-apiserver's
 * plugin/pkg/admission/security/podsecurity as Kubernetes 1.32 has them, validating
 * creates and updates only, with the configuration of --admission-control-config-file
 * (config.c; none: every mode privileged:latest, no exemptions, kube-system not exempt
 * either): its defaults are the policy of a namespace without labels; a request in an
 * exempt namespace or by an exempt user, and a pod (template) of an exempt runtime
 * class, is not evaluated;
 *
 * - pods (and their subresources but exec, attach, binding, eviction, log,
 *   portforward, proxy and status): the namespace's enforce level refuses a pod that
 *   violates it, 403 `pods "x" is forbidden: violates PodSecurity "restricted:latest":
 *   <detail>`; an allowed pod that violates the warn level gets the warning `would
 *   violate PodSecurity "<warn>": <detail>`. An update that changes no container's image
 *   and adds or removes no container (isSignificantPodUpdate) is not evaluated;
 * - pod controllers (ReplicationController, PodTemplate, ReplicaSet, Deployment,
 *   StatefulSet, DaemonSet, Job, CronJob; not their subresources): never refused, their
 *   pod template only warned about at the warn level (which follows a stricter enforce
 *   label when warn is not set);
 * - namespaces: labels that do not parse are 422 on create, and on an update that
 *   changes their errors; an update that makes the enforce level stricter (or changes
 *   its version) checks the namespace's existing pods against it and warns `existing pods
 *   in namespace "x" violate the new PodSecurity enforce level "restricted:latest"`
 *   followed by one `<pod> (and N other pods): <reasons>` per distinct set of reasons,
 *   sorted; at most 3000 pods are checked, one per controller first, for at most 1 s
 *   (the listing included), else a warning says how many were.
 *
 * Warnings leave through ck__admission_warn() as HTTP Warning headers. Kubernetes also
 * writes audit annotations (pod-security.kubernetes.io/enforce-policy, audit-violations,
 * error); ckube has no audit log, so the audit mode is parsed and not evaluated
 * (docs/differences.md). Namespaces and pods are read from the store at each request
 * (kube-apiserver reads its informers).
 *
 * Threading: reads the store only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "pod_security.h"

#define MAX_PODS_TO_CHECK 3000
#define POD_CHECK_NS      1000000000LL /* the existing pods are checked for 1 s at most */

static long long monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long (*now_ns)(void) = monotonic_ns;

void ck__psa_set_clock(long long (*clock_ns)(void))
{
    now_ns = clock_ns ? clock_ns : monotonic_ns;
}

/* The pod subresources that never change what PodSecurity looks at. */
static const char *const ignored_pod_subresources[] = {
    "exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status", NULL};

/* Reads a namespace: 0 with *ret a reference to it (caller decrefs), else a 500. */
static int read_namespace(struct ck__registry *reg, const char *name, json_t **ret,
                          struct ck_err *reterr)
{
    const struct ck_kind *ns_kind = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = ns_kind ? ck__registry_get(reg, ns_kind, "", name, &kv, &err) : CK_ENOENT;
    if (r < 0) {
        ck_err_release(&err);
        return ck_err_internal(reterr, "failed to lookup namespace \"%s\"", name);
    }
    *ret = ck__decode_stored(kv);
    ck_kv_unref(kv);
    return *ret ? 0 : ck_err_no_memory(reterr);
}

/* The configuration's (--admission-control-config-file), NULL: the plugin's defaults. */
static const struct ck__psa_config *config_of(const struct ck__registry *reg)
{
    return reg->admission ? reg->admission->pod_security : NULL;
}

/* The policy of a namespace without labels: the configuration's defaults. */
static void defaults_of(const struct ck__registry *reg, struct ck__psa_policy *ret)
{
    const struct ck__psa_config *c = config_of(reg);
    if (c)
        *ret = c->defaults;
    else
        ck__psa_default_policy(ret);
}

/* exemptNamespace and exemptUser: requests the configuration exempts. */
static bool exempt_request(const struct ck__registry *reg, const struct ck__admission_attrs *a)
{
    const struct ck__psa_config *c = config_of(reg);
    return c && (ck__psa_exempt(c->namespaces, a->namespace) ||
                 (a->user && ck__psa_exempt(c->usernames, a->user->name)));
}

/* exemptRuntimeClass: a pod spec whose runtimeClassName the configuration exempts. */
static bool exempt_runtime_class(const struct ck__registry *reg, const json_t *spec)
{
    const struct ck__psa_config *c = config_of(reg);
    return c && ck__psa_exempt(c->runtime_classes,
                               json_string_value(json_object_get(spec, "runtimeClassName")));
}

static const json_t *labels_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

/* Whether the two error lists say the same (reflect.DeepEqual of field.ErrorLists). */
static bool same_errors(const struct ck_field_errors *a, const struct ck_field_errors *b)
{
    if (a->len != b->len)
        return false;
    for (size_t i = 0; i < a->len; i++) {
        const struct ck_field_error *x = &a->items[i], *y = &b->items[i];
        if (strcmp(x->field ? x->field : "", y->field ? y->field : "") != 0 ||
            strcmp(x->value ? x->value : "", y->value ? y->value : "") != 0 ||
            strcmp(x->detail ? x->detail : "", y->detail ? y->detail : "") != 0)
            return false;
    }
    return true;
}

/* ---- namespaces: existing pods against a new enforce level ----------------------- */

struct pod_list {
    json_t *first;       /* pods without a controller, and the first of each controller */
    json_t *duplicates;  /* the other pods of a controller already listed */
    json_t *controllers; /* uid -> true */
};

static int collect_pod(const json_t *pod, void *arg)
{
    struct pod_list *l = arg;
    const char *uid = NULL;
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller"))) {
            uid = json_string_value(json_object_get(ref, "uid"));
            break;
        }
    }
    json_t *into = l->first;
    if (uid) {
        if (json_object_get(l->controllers, uid))
            into = l->duplicates;
        else if (json_object_set_new(l->controllers, uid, json_true()) < 0)
            return -1;
    }
    return json_array_append(into, (json_t *)pod) < 0 ? -1 : 0;
}

/* One distinct set of reasons: the lexically first pod that has it, and how many do. */
struct pod_warning {
    char *reasons;
    const char *pod;
    size_t count;
};

static int cmp_warning_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* EvaluatePodsInNamespace: the warnings for the namespace's pods under enforce. */
static int warn_existing_pods(struct ck__registry *reg, const char *namespace,
                              const struct ck__psa_level_version *enforce, struct ck_err *reterr)
{
    const struct ck_kind *pod_kind = ck_kind_with_role(CK_KIND_ROLE_POD);
    if (!pod_kind)
        return 0;
    struct pod_list l = {json_array(), json_array(), json_object()};
    struct pod_warning *w = NULL;
    size_t n_w = 0;
    int r = 0;
    if (!l.first || !l.duplicates || !l.controllers) {
        r = ck_err_no_memory(reterr);
        goto out;
    }
    long long deadline = now_ns() + POD_CHECK_NS; /* the listing counts too */
    struct ck_err err = {0};
    if (ck__admission_list(reg, pod_kind, namespace, collect_pod, &l, &err) < 0) {
        ck_err_release(&err);
        ck__admission_warn("failed to list pods while checking new PodSecurity enforce level");
        goto out;
    }
    if (json_array_extend(l.first, l.duplicates) < 0) {
        r = ck_err_no_memory(reterr);
        goto out;
    }
    size_t total = json_array_size(l.first);
    size_t checked = total < MAX_PODS_TO_CHECK ? total : MAX_PODS_TO_CHECK;
    w = ck__calloc(checked ? checked : 1, sizeof(*w));
    if (!w) {
        r = ck_err_no_memory(reterr);
        goto out;
    }
    for (size_t i = 0; i < checked; i++) {
        const json_t *pod = json_array_get(l.first, i);
        char *reasons = NULL, *detail = NULL;
        if (ck__psa_evaluate(enforce, json_object_get(pod, "metadata"),
                             json_object_get(pod, "spec"), &reasons, &detail) < 0) {
            r = ck_err_no_memory(reterr);
            goto out;
        }
        free(detail);
        if (reasons) {
            const char *name = ck__meta_str(pod, "name") ? ck__meta_str(pod, "name") : "";
            size_t k = 0;
            while (k < n_w && strcmp(w[k].reasons, reasons) != 0)
                k++;
            if (k == n_w) {
                w[n_w++] = (struct pod_warning){reasons, name, 0};
            } else {
                free(reasons);
                if (strcmp(name, w[k].pod) < 0)
                    w[k].pod = name;
            }
            w[k].count++;
        }
        if (now_ns() > deadline) {
            checked = i + 1;
            break;
        }
    }
    char lv[64];
    ck__psa_level_version_string(enforce, lv, sizeof(lv));
    if (checked < total)
        ck__admission_warn("new PodSecurity enforce level only checked against the first %zu of "
                           "%zu existing pods",
                           checked, total);
    if (n_w == 0)
        goto out;
    ck__admission_warn("existing pods in namespace \"%s\" violate the new PodSecurity enforce "
                       "level \"%s\"",
                       namespace, lv);
    /* "<pod> (and N other pods): <reasons>", sorted */
    char **texts = ck__calloc(n_w, sizeof(*texts));
    for (size_t k = 0; texts && k < n_w; k++) {
        struct ck__buf b = {0};
        ck__buf_adds(&b, w[k].pod);
        if (w[k].count == 2)
            ck__buf_adds(&b, " (and 1 other pod)");
        else if (w[k].count > 2)
            ck__buf_printf(&b, " (and %zu other pods)", w[k].count - 1);
        ck__buf_printf(&b, ": %s", w[k].reasons);
        texts[k] = ck__buf_take(&b); /* NULL out of memory: that warning is lost */
    }
    if (texts) {
        size_t n_texts = 0;
        for (size_t k = 0; k < n_w; k++)
            if (texts[k])
                texts[n_texts++] = texts[k];
        qsort(texts, n_texts, sizeof(*texts), cmp_warning_text);
        for (size_t k = 0; k < n_texts; k++) {
            ck__admission_warn("%s", texts[k]);
            free(texts[k]);
        }
        free(texts);
    }
out:
    for (size_t k = 0; k < n_w; k++)
        free(w[k].reasons);
    free(w);
    json_decref(l.first);
    json_decref(l.duplicates);
    json_decref(l.controllers);
    return r;
}

static int validate_namespace(struct ck__registry *reg, const struct ck__admission_attrs *a,
                              struct ck_err *reterr)
{
    if (a->subresource && *a->subresource)
        return 0;
    struct ck__psa_policy defaults, next, prev;
    defaults_of(reg, &defaults);
    struct ck_field_errors errs = {0}, old_errs = {0};
    ck__psa_policy_from_labels(labels_of(a->obj), &defaults, &next, &errs);
    int r = 0;
    if (a->op == CK__ADMISSION_CREATE) {
        if (errs.len || errs.nomem)
            r = ck__err_invalid_object(reterr, a->kind, ck__admission_name(a), &errs);
        goto out;
    }
    ck__psa_policy_from_labels(labels_of(a->old), &defaults, &prev, &old_errs);
    if ((errs.len || errs.nomem) && (old_errs.len == 0 || !same_errors(&errs, &old_errs))) {
        r = ck__err_invalid_object(reterr, a->kind, ck__admission_name(a), &errs);
        goto out;
    }
    /* only a stricter enforce level, or another version, is checked against the pods; an
       exempt namespace's are not */
    if ((config_of(reg) && ck__psa_exempt(config_of(reg)->namespaces, ck__admission_name(a))) ||
        ck__psa_level_version_equal(&next.enforce, &prev.enforce) ||
        next.enforce.level == CK__PSA_PRIVILEGED)
        goto out;
    bool same_version = next.enforce.latest == prev.enforce.latest &&
                        (next.enforce.latest || next.enforce.minor == prev.enforce.minor);
    if (same_version && next.enforce.level <= prev.enforce.level)
        goto out;
    r = warn_existing_pods(reg, ck__admission_name(a), &next.enforce, reterr);
out:
    ck_field_errors_release(&errs);
    ck_field_errors_release(&old_errs);
    return r;
}

/* ---- pods and pod controllers ---------------------------------------------------- */

/* Whether a container list's images or length differ (isSignificantPodUpdate). */
static bool containers_differ(const json_t *now, const json_t *before)
{
    if (json_array_size(now) != json_array_size(before))
        return true;
    for (size_t i = 0; i < json_array_size(now); i++) {
        const char *a = json_string_value(json_object_get(json_array_get(now, i), "image"));
        const char *b = json_string_value(json_object_get(json_array_get(before, i), "image"));
        if (strcmp(a ? a : "", b ? b : "") != 0)
            return true;
    }
    return false;
}

static bool significant_pod_update(const json_t *pod, const json_t *old)
{
    const json_t *spec = json_object_get(pod, "spec"), *old_spec = json_object_get(old, "spec");
    if (containers_differ(json_object_get(spec, "containers"),
                          json_object_get(old_spec, "containers")) ||
        containers_differ(json_object_get(spec, "initContainers"),
                          json_object_get(old_spec, "initContainers")))
        return true;
    size_t i, k;
    const json_t *c, *oc;
    json_array_foreach(json_object_get(spec, "ephemeralContainers"), i, c)
    {
        const json_t *found = NULL;
        const char *name = json_string_value(json_object_get(c, "name"));
        json_array_foreach(json_object_get(old_spec, "ephemeralContainers"), k, oc)
        {
            const char *old_name = json_string_value(json_object_get(oc, "name"));
            if (name && old_name && strcmp(name, old_name) == 0) {
                found = oc;
                break;
            }
        }
        if (!found)
            return true;
        const char *image = json_string_value(json_object_get(c, "image"));
        const char *old_image = json_string_value(json_object_get(found, "image"));
        if (strcmp(image ? image : "", old_image ? old_image : "") != 0)
            return true;
    }
    return false;
}

/*
 * EvaluatePod: enforce (pods only) refuses; the warn level, on what is let through,
 * warns. Audit is not evaluated: ckube has no audit log to annotate.
 */
static int evaluate(const struct ck__admission_attrs *a, const struct ck__psa_policy *policy,
                    const json_t *meta, const json_t *spec, bool enforce, struct ck_err *reterr)
{
    char lv[64];
    char *detail = NULL;
    if (enforce) {
        if (ck__psa_evaluate(&policy->enforce, meta, spec, NULL, &detail) < 0)
            return ck_err_no_memory(reterr);
        if (detail) {
            ck__psa_level_version_string(&policy->enforce, lv, sizeof(lv));
            int r =
                ck__admission_forbidden(a, reterr, "violates PodSecurity \"%s\": %s", lv, detail);
            free(detail);
            return r;
        }
    }
    if (ck__psa_evaluate(&policy->warn, meta, spec, NULL, &detail) < 0)
        return ck_err_no_memory(reterr);
    if (detail) {
        ck__psa_level_version_string(&policy->warn, lv, sizeof(lv));
        ck__admission_warn("would violate PodSecurity \"%s\": %s", lv, detail);
        free(detail);
    }
    return 0;
}

static bool ignored_subresource(const char *sub)
{
    for (size_t i = 0; ignored_pod_subresources[i]; i++)
        if (strcmp(sub, ignored_pod_subresources[i]) == 0)
            return true;
    return false;
}

static int validate_pod(struct ck__registry *reg, const struct ck__admission_attrs *a,
                        struct ck_err *reterr)
{
    if (a->subresource && *a->subresource && ignored_subresource(a->subresource))
        return 0;
    if (exempt_request(reg, a))
        return 0;
    json_t *ns = NULL;
    int r = read_namespace(reg, a->namespace, &ns, reterr);
    if (r < 0)
        return r;
    struct ck__psa_policy defaults, policy;
    struct ck_field_errors errs = {0};
    defaults_of(reg, &defaults);
    ck__psa_policy_from_labels(labels_of(ns), &defaults, &policy, &errs);
    bool privileged = errs.len == 0 && policy.enforce.level == CK__PSA_PRIVILEGED &&
                      policy.audit.level == CK__PSA_PRIVILEGED &&
                      policy.warn.level == CK__PSA_PRIVILEGED;
    ck_field_errors_release(&errs);
    json_decref(ns);
    if (privileged)
        return 0;
    if (a->op == CK__ADMISSION_UPDATE && a->old && !significant_pod_update(a->obj, a->old))
        return 0;
    if (exempt_runtime_class(reg, json_object_get(a->obj, "spec")))
        return 0;
    return evaluate(a, &policy, json_object_get(a->obj, "metadata"),
                    json_object_get(a->obj, "spec"), true, reterr);
}

/* The pod template of a pod controller: where each kind keeps it. */
static const struct {
    const char *group, *resource;
    const char *path[4]; /* members down to the PodTemplateSpec */
} controllers[] = {
    {"", "replicationcontrollers", {"spec", "template"}},
    {"", "podtemplates", {"template"}},
    {"apps", "replicasets", {"spec", "template"}},
    {"apps", "deployments", {"spec", "template"}},
    {"apps", "statefulsets", {"spec", "template"}},
    {"apps", "daemonsets", {"spec", "template"}},
    {"batch", "jobs", {"spec", "template"}},
    {"batch", "cronjobs", {"spec", "jobTemplate", "spec", "template"}},
};

static int validate_controller(struct ck__registry *reg, const struct ck__admission_attrs *a,
                               const char *const *path)
{
    if (exempt_request(reg, a))
        return 0;
    json_t *ns = NULL;
    struct ck_err err = {0};
    if (read_namespace(reg, a->namespace, &ns, &err) < 0) {
        /* a controller is never refused: Kubernetes only notes this in the audit log */
        ck_err_release(&err);
        return 0;
    }
    struct ck__psa_policy defaults, policy;
    struct ck_field_errors errs = {0};
    defaults_of(reg, &defaults);
    ck__psa_policy_from_labels(labels_of(ns), &defaults, &policy, &errs);
    bool quiet = errs.len == 0 && policy.warn.level == CK__PSA_PRIVILEGED &&
                 policy.audit.level == CK__PSA_PRIVILEGED;
    ck_field_errors_release(&errs);
    json_decref(ns);
    if (quiet)
        return 0;
    const json_t *template = a->obj;
    for (size_t i = 0; i < 4 && path[i]; i++)
        template = json_object_get(template, path[i]);
    if (!template || json_is_null(template) ||
        exempt_runtime_class(reg, json_object_get(template, "spec")))
        return 0;
    int r = evaluate(a, &policy, json_object_get(template, "metadata"),
                     json_object_get(template, "spec"), false, &err);
    (void)r; /* out of memory: the warning is lost, the write goes on */
    ck_err_release(&err);
    return 0;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    if ((a->op != CK__ADMISSION_CREATE && a->op != CK__ADMISSION_UPDATE) || !a->kind || !a->obj)
        return 0;
    if (a->kind->role == CK_KIND_ROLE_NAMESPACE)
        return validate_namespace(reg, a, reterr);
    if (a->kind->role == CK_KIND_ROLE_POD)
        return validate_pod(reg, a, reterr);
    for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++)
        if (ck__admission_is(a, controllers[i].group, controllers[i].resource))
            return validate_controller(reg, a, controllers[i].path);
    return 0;
}

const struct ck__admission_plugin ck__admission_pod_security = {.name = "PodSecurity",
                                                                .validate = validate};
