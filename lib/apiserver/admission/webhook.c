/*
 * webhook.c - the MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission
 * plugins: the API server asks HTTPS services, named by the cluster's
 * MutatingWebhookConfigurations and ValidatingWebhookConfigurations, about a write.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/admission/plugin/webhook: generic/webhook.go
 * (ShouldCallHook: selectors, rules, then matchConditions), request/admissionreview.go
 * (the AdmissionReview sent and the checks of the one received), mutating/dispatcher.go
 * and validating/dispatcher.go (dry runs, failure policies, patches, reinvocation) and
 * errors/statuserror.go, with their words.
 *
 * A request passes every webhook of every configuration (configurations sorted by
 * name, webhooks in their order) whose selectors and rules match it. The configurations
 * of the webhook kinds themselves are never sent to webhooks (Kubernetes exempts them,
 * so that a broken webhook cannot lock its own repair out). The call is a POST of an
 * AdmissionReview (admission.k8s.io/v1, or v1beta1 when only that is offered) over
 * HTTPS (webhook_client.c, shared with the CRD conversion webhooks), trusting the
 * webhook's caBundle (else the system's CAs), to its url, or for a service to the ready
 * addresses of the service's EndpointSlices at the target port with the TLS name
 * <service>.<namespace>.svc. A webhook that refuses ends
 * the request with its Status (`admission webhook "x" denied the request: why`, 400 when
 * it gives no code); a failed call is a 500 under failurePolicy Fail and ignored under
 * Ignore. A mutating webhook's JSONPatch is applied to the object; a webhook with
 * reinvocationPolicy IfNeeded is called once more when a later webhook changed it.
 *
 * Matching (rules, selectors) is match.c's, shared with the admission policies; a
 * webhook's matchConditions are evaluated by cel.c after it (generic/webhook.go
 * ShouldCallHook: an error under failurePolicy Fail is a 403 with the conditions' errors).
 *
 * Differences (docs/differences.md): matchPolicy Equivalent matches as Exact (every ckube
 * resource has one version); the webhooks' warnings are returned (ck__admission_warn) but their
 * audit annotations dropped; validating webhooks are called one after the other, not at once; the
 * configurations are read from the store on every request that passes the chain.
 *
 * Threading: reads the store and calls out; no state of its own, so it runs on any
 * request thread at once.
 *
 * Tested by tests/apiserver/test_webhook.c and tests/e2e/test_webhook.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

/* ---- matching ------------------------------------------------------------------ */

/*
 * ShouldCallHook: 1 when the webhook hook is to be called about a (its selectors, rules
 * and matchConditions match), 0 when not, or a negative code with reterr filled (the
 * namespace of the request does not exist, a selector does not parse, a match condition
 * failed under failurePolicy Fail).
 */
static int should_call(struct ck__registry *reg, const json_t *hook,
                       const struct ck__admission_attrs *a, struct ck_err *reterr)
{
    const char *name = json_string_value(json_object_get(hook, "name"));
    char what[300];
    snprintf(what, sizeof(what), "webhook \"%s\"", name ? name : "");
    int r = ck__admission_matches(reg, json_object_get(hook, "namespaceSelector"),
                                  json_object_get(hook, "objectSelector"),
                                  json_object_get(hook, "rules"), false, NULL, what, a, reterr);
    if (r <= 0 || !json_array_size(json_object_get(hook, "matchConditions")))
        return r;
    const char *policy = json_string_value(json_object_get(hook, "failurePolicy"));
    struct ck__cel_input in = {.a = a, .reg = reg};
    r = ck__admission_match_conditions(json_object_get(hook, "matchConditions"), &in,
                                       policy && strcmp(policy, "Ignore") == 0, reterr);
    ck__cel_input_release(&in);
    if (r < 0 && r != CK_ENOMEM) {
        /* failing closed: NewForbidden with the conditions' errors */
        CK_LOGS(0, "Failed evaluating match conditions, failing closed", "webhook",
                name ? name : "", "err", ck_err_message(reterr));
        char *why = ck__strdup(ck_err_message(reterr));
        r = why ? ck__admission_forbidden(a, reterr, "%s", why) : ck_err_no_memory(reterr);
        free(why);
    }
    return r;
}

/* ---- the call ------------------------------------------------------------------- */

/* userInfo of the request (the server's own writes: system:apiserver, as its loopback user). */
static json_t *user_info(const struct ck_auth_user *u)
{
    json_t *info = json_object();
    json_t *groups = json_array();
    if (!u) {
        json_object_set_new(info, "username", json_string("system:apiserver"));
        json_array_append_new(groups, json_string("system:authenticated"));
        json_array_append_new(groups, json_string("system:masters"));
        json_object_set_new(info, "groups", groups);
        return info;
    }
    json_object_set_new(info, "username", json_string(u->name ? u->name : ""));
    if (u->uid && *u->uid)
        json_object_set_new(info, "uid", json_string(u->uid));
    for (size_t i = 0; i < u->n_groups; i++)
        json_array_append_new(groups, json_string(u->groups[i]));
    json_object_set_new(info, "groups", groups);
    if (json_object_size(u->extra))
        json_object_set(info, "extra", u->extra);
    return info;
}

json_t *ck__webhook_review(const struct ck__admission_attrs *a, const char *version,
                           const char *uid)
{
    const struct ck_kind *k = a->kind;
    const char *sub = a->subresource ? a->subresource : "";
    const struct ck_subresource *sr = *sub ? ck_kind_subresource(k, sub) : NULL;
    const char *kgroup = sr && sr->kind ? sr->group : k->group;
    const char *kversion = sr && sr->kind ? sr->version : k->version;
    const char *kkind = sr && sr->kind ? sr->kind : k->kind;
    json_t *kind =
        json_pack("{s:s, s:s, s:s}", "group", kgroup, "version", kversion, "kind", kkind);
    json_t *resource = json_pack("{s:s, s:s, s:s}", "group", k->group, "version", k->version,
                                 "resource", k->resource);
    json_t *req = json_object();
    json_object_set_new(req, "uid", json_string(uid));
    json_object_set(req, "kind", kind);
    json_object_set(req, "resource", resource);
    if (*sub)
        json_object_set_new(req, "subResource", json_string(sub));
    json_object_set_new(req, "requestKind", kind);
    json_object_set_new(req, "requestResource", resource);
    if (*sub)
        json_object_set_new(req, "requestSubResource", json_string(sub));
    const char *name = a->name && *a->name ? a->name : NULL;
    if (!name && a->obj)
        name = json_string_value(json_object_get(json_object_get(a->obj, "metadata"), "name"));
    if (name && *name)
        json_object_set_new(req, "name", json_string(name));
    if (a->namespace && *a->namespace)
        json_object_set_new(req, "namespace", json_string(a->namespace));
    else if (ck__admission_is_namespace_request(a) && name)
        json_object_set_new(req, "namespace", json_string(name));
    json_object_set_new(req, "operation", json_string(ck__admission_op_name(a->op)));
    json_object_set_new(req, "userInfo", user_info(a->user));
    json_object_set_new(req, "object", a->obj ? json_incref(a->obj) : json_null());
    json_object_set_new(req, "oldObject", a->old ? json_deep_copy(a->old) : json_null());
    json_object_set_new(req, "dryRun", json_boolean(a->dry_run));
    char api_version[64];
    snprintf(api_version, sizeof(api_version), "admission.k8s.io/%s", version);
    return json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", "AdmissionReview",
                     "request", req);
}

/*
 * Posts review to the webhook hook (its clientConfig and timeoutSeconds, 10 when unset);
 * on success *ret_review is the parsed answer. 0, or CK_EINVAL with why filled.
 */
static int post(struct ck__registry *reg, const json_t *hook, bool mutating, const json_t *review,
                json_t **ret_review, struct ck__webhook_why *why)
{
    long timeout = json_is_integer(json_object_get(hook, "timeoutSeconds"))
                       ? (long)json_integer_value(json_object_get(hook, "timeoutSeconds"))
                       : 10;
    /* the plugin's kubeConfigFile (config.c) says what credentials to present */
    const json_t *kubeconfig = reg->admission ? reg->admission->webhook_kubeconfig[mutating] : NULL;
    return ck__webhook_post(reg, json_object_get(hook, "clientConfig"), timeout, review,
                            "AdmissionReview", kubeconfig, ret_review, why);
}

/* The review version to send: v1 when offered, else v1beta1 (validation requires one). */
static const char *review_version(const json_t *hook)
{
    const json_t *versions = json_object_get(hook, "admissionReviewVersions");
    size_t i;
    const json_t *v;
    json_array_foreach(versions, i, v)
    {
        const char *s = json_string_value(v);
        if (s && (strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0))
            return s;
    }
    return "v1";
}

/*
 * VerifyAdmissionResponse: the answer's response, checked. NULL with why filled when
 * the answer is not a proper one.
 */
static const json_t *verify(const json_t *answer, const char *version, const char *uid,
                            bool mutating, struct ck__webhook_why *why)
{
    static const char prefix[] = "received invalid webhook response: ";
    const json_t *resp = json_object_get(answer, "response");
    if (!json_is_object(resp)) {
        snprintf(why->text, sizeof(why->text), "%swebhook response was absent", prefix);
        return NULL;
    }
    if (strcmp(version, "v1beta1") == 0)
        return resp; /* v1beta1 answers were never checked further */
    const char *got_uid = json_string_value(json_object_get(resp, "uid"));
    if (!got_uid || strcmp(got_uid, uid) != 0) {
        snprintf(why->text, sizeof(why->text), "%sexpected response.uid=\"%s\", got \"%s\"", prefix,
                 uid, got_uid ? got_uid : "");
        return NULL;
    }
    const char *av = json_string_value(json_object_get(answer, "apiVersion"));
    const char *kind = json_string_value(json_object_get(answer, "kind"));
    if (!av || !kind || strcmp(av, "admission.k8s.io/v1") != 0 ||
        strcmp(kind, "AdmissionReview") != 0) {
        const char *slash = av ? strchr(av, '/') : NULL;
        snprintf(why->text, sizeof(why->text),
                 "%sexpected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
                 "%.*s%s%s, Kind=%s",
                 prefix, slash ? (int)(slash - av) : 0, av ? av : "", slash ? "/" : "",
                 slash ? slash + 1 : (av ? av : ""), kind ? kind : "");
        return NULL;
    }
    const json_t *patch = json_object_get(resp, "patch");
    const json_t *type = json_object_get(resp, "patchType");
    bool has_patch = json_string_length(patch) > 0;
    if (mutating && has_patch && !type) {
        snprintf(why->text, sizeof(why->text),
                 "%swebhook returned response.patch but not response.patchType", prefix);
        return NULL;
    }
    if (mutating && !has_patch && type) {
        snprintf(why->text, sizeof(why->text),
                 "%swebhook returned response.patchType but not response.patch", prefix);
        return NULL;
    }
    if (!mutating && has_patch) {
        snprintf(why->text, sizeof(why->text), "%svalidating webhook may not return response.patch",
                 prefix);
        return NULL;
    }
    if (!mutating && type) {
        snprintf(why->text, sizeof(why->text),
                 "%svalidating webhook may not return response.patchType", prefix);
        return NULL;
    }
    return resp;
}

/*
 * The StatusReason of a refusal with code: the webhook's own reason when it is one of
 * apimachinery's that answers that code, else the one the code stands for. Static.
 */
static const char *reason_for(const char *given, long long code)
{
    static const char *const known[] = {"BadRequest",    "Unauthorized",    "Forbidden",
                                        "NotFound",      "AlreadyExists",   "Conflict",
                                        "Invalid",       "TooManyRequests", "ServiceUnavailable",
                                        "InternalError", "Timeout",         NULL};
    for (size_t i = 0; given && known[i]; i++)
        if (strcmp(given, known[i]) == 0 && ck_err_reason_http(known[i]) == code)
            return known[i];
    switch (code) {
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 409:
        return "Conflict";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 503:
        return "ServiceUnavailable";
    default:
        return code >= 500 ? "InternalError" : "BadRequest";
    }
}

/* ToStatusErr: the refusal of webhook name with the Status it gave (NULL: none). */
static int denied(const char *name, const json_t *result, struct ck_err *reterr)
{
    const char *message = json_string_value(json_object_get(result, "message"));
    const char *reason = json_string_value(json_object_get(result, "reason"));
    long long code = json_integer_value(json_object_get(result, "code"));
    if (code < 400)
        code = 400;
    const char *why = message && *message ? message : reason && *reason ? reason : NULL;
    const char *use = reason_for(reason, code);
    int r;
    if (why)
        r = ck_err_status(reterr, use, "admission webhook \"%s\" denied the request: %s", name,
                          why);
    else
        r = ck_err_status(reterr, use,
                          "admission webhook \"%s\" denied the request without "
                          "explanation",
                          name);
    reterr->http_status = (int)code;
    return r;
}

/* Replaces obj's members by those of with (obj keeps its identity: the caller holds it). */
static int replace_object(json_t *obj, const json_t *with)
{
    json_object_clear(obj);
    return json_object_update(obj, (json_t *)with) < 0 ? CK_ENOMEM : 0;
}

/*
 * Calls one webhook. 0: allowed (*ret_changed: the object was patched); < 0: refused,
 * reterr filled, after the failure policy was applied.
 */
static int call_hook(struct ck__registry *reg, const json_t *hook,
                     const struct ck__admission_attrs *a, bool mutating, bool *ret_changed,
                     struct ck_err *reterr)
{
    *ret_changed = false;
    const char *name = json_string_value(json_object_get(hook, "name"));
    const char *policy = json_string_value(json_object_get(hook, "failurePolicy"));
    bool ignore = policy && strcmp(policy, "Ignore") == 0;
    const char *side = json_string_value(json_object_get(hook, "sideEffects"));
    if (!name)
        name = "";
    if (a->dry_run && !(side && (strcmp(side, "None") == 0 || strcmp(side, "NoneOnDryRun") == 0))) {
        if (!side) {
            if (ignore)
                return 0;
            return ck_err_internal(
                reterr, "failed calling webhook \"%s\": Webhook SideEffects is nil", name);
        }
        return ck_err_status(reterr, "BadRequest",
                             "admission webhook \"%s\" does not support dry run", name);
    }
    char uid[40];
    ck_uuid(uid);
    const char *version = review_version(hook);
    json_t *review = ck__webhook_review(a, version, uid);
    json_t *answer = NULL;
    struct ck__webhook_why why = {""};
    int r = review ? post(reg, hook, mutating, review, &answer, &why) : CK_ENOMEM;
    json_decref(review);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    const json_t *resp = r == 0 ? verify(answer, version, uid, mutating, &why) : NULL;
    if (!resp) {
        json_decref(answer);
        if (ignore) {
            CK_LOGS(0, "Failed calling webhook, failing open", "webhook", name, "err", why.text);
            return 0;
        }
        CK_LOGS(0, "Failed calling webhook, failing closed", "webhook", name, "err", why.text);
        return ck_err_internal(reterr, "failed calling webhook \"%s\": %s", name, why.text);
    }
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(resp, "warnings"), i, w)
    {
        if (json_string_value(w))
            ck__admission_warn("%s", json_string_value(w));
    }
    if (!json_is_true(json_object_get(resp, "allowed"))) {
        r = denied(name, json_object_get(resp, "status"), reterr); /* Result, in JSON "status" */
        json_decref(answer);
        return r;
    }
    const char *patch64 = mutating ? json_string_value(json_object_get(resp, "patch")) : NULL;
    const char *type = json_string_value(json_object_get(resp, "patchType"));
    if (!patch64 || !*patch64) {
        json_decref(answer);
        return 0;
    }
    if (strcmp(version, "v1") == 0 && (!type || strcmp(type, "JSONPatch") != 0)) {
        r = ignore ? 0
                   : ck_err_internal(reterr,
                                     "failed calling webhook \"%s\": unsupported patch type "
                                     "\"%s\"",
                                     name, type ? type : "");
        json_decref(answer);
        return r;
    }
    size_t len = 0;
    char *text = ck_base64_decode(patch64, &len);
    json_error_t jerr;
    json_t *ops = text ? json_loadb(text, len, 0, &jerr) : NULL;
    free(text);
    json_decref(answer);
    if (!json_is_array(ops)) {
        json_decref(ops);
        return ck_err_internal(reterr,
                               "admission webhook \"%s\" returned a patch that is not a "
                               "JSON patch",
                               name);
    }
    if (json_array_size(ops) == 0) {
        json_decref(ops);
        return 0;
    }
    if (!a->obj) {
        json_decref(ops);
        return ck_err_internal(reterr,
                               "admission webhook \"%s\" attempted to modify the object, which "
                               "is not supported for this operation",
                               name);
    }
    json_t *patched = NULL;
    struct ck_err perr = {0};
    r = ck_json_patch_bounded(a->obj, ops, &ck_patch_default_limits, &patched, &perr);
    json_decref(ops);
    if (r < 0) {
        r = ck_err_internal(reterr, "%s", ck_err_message(&perr));
        ck_err_release(&perr);
        return r;
    }
    *ret_changed = !json_equal(patched, a->obj);
    r = *ret_changed ? replace_object(a->obj, patched) : 0;
    json_decref(patched);
    return r < 0 ? ck_err_no_memory(reterr) : 0;
}

/* The configuration kinds, which are never sent to webhooks
 * (IsExemptAdmissionConfigurationResource). */
static bool exempt(const struct ck__admission_attrs *a)
{
    return a->kind && a->kind->configures_admission;
}

/* One webhook to call, and whether it was (for reinvocation). */
struct invoked {
    const json_t *hook;
    size_t changes_seen; /* the object's change count when it was last called */
};

static int dispatch(struct ck__registry *reg, const struct ck__admission_attrs *a, bool mutating,
                    struct ck_err *reterr)
{
    if (exempt(a))
        return 0;
    json_t *configs = NULL;
    int r = ck__admission_configurations(
        reg, mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations",
        &configs, reterr);
    if (r < 0 || json_array_size(configs) == 0) {
        json_decref(configs);
        return r;
    }
    struct invoked again[64];
    size_t n_again = 0, changes = 0;
    size_t i;
    const json_t *config;
    json_array_foreach(configs, i, config)
    {
        size_t j;
        const json_t *hook;
        json_array_foreach(json_object_get(config, "webhooks"), j, hook)
        {
            r = should_call(reg, hook, a, reterr);
            if (r == 0)
                continue;
            if (r < 0)
                goto out;
            bool changed = false;
            if ((r = call_hook(reg, hook, a, mutating, &changed, reterr)) < 0)
                goto out;
            changes += changed;
            const char *policy = json_string_value(json_object_get(hook, "reinvocationPolicy"));
            if (mutating && policy && strcmp(policy, "IfNeeded") == 0 &&
                n_again < sizeof(again) / sizeof(again[0]))
                again[n_again++] = (struct invoked){hook, changes};
        }
    }
    /* reinvocation: once, for the IfNeeded webhooks whose output a later one changed */
    for (size_t k = 0; k < n_again; k++) {
        if (again[k].changes_seen == changes)
            continue;
        bool changed = false;
        if ((r = should_call(reg, again[k].hook, a, reterr)) < 0)
            goto out;
        if (r == 0)
            continue;
        if ((r = call_hook(reg, again[k].hook, a, mutating, &changed, reterr)) < 0)
            goto out;
    }
    r = 0;
out:
    json_decref(configs);
    return r < 0 ? r : 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    return dispatch(reg, a, true, reterr);
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    return dispatch(reg, a, false, reterr);
}

const struct ck__admission_plugin ck__admission_mutating_webhook = {
    .name = "MutatingAdmissionWebhook", .admit = admit, .connect = true};
const struct ck__admission_plugin ck__admission_validating_webhook = {
    .name = "ValidatingAdmissionWebhook", .validate = validate, .connect = true};
