/*
 * internal.h - private to lib/apiserver; never installed.
 *
 * What the files of the API server share: the Status builder (status.c),
 * routing (route.c), the registry (registry.c, list.c, patch.c), metrics,
 * the server struct, the request helpers every handler uses (request.c),
 * handlers and watches.
 *
 * Errors: every function that can fail returns 0 or a negative CK_E* code
 * and fills the caller's struct ck_err (ckube/util.h) with what the client
 * is told: StatusReason, HTTP code, message, details, causes. The handlers
 * answer it with ck__fail(), which renders it with ck__status_json(), and
 * release it. Dependencies run one way: server.c -> handlers.c -> watch.c ->
 * request.c -> status.c.
 */
#ifndef CKUBE_APISERVER_INTERNAL_H
#define CKUBE_APISERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <wslay/wslay.h>
#include <zlib.h>

#include "ckube/api.h"
#include "ckube/auth.h"
#include "ckube/cel.h"
#include "ckube/internal/util.h"
#include "ckube/store.h"
#include "req.h"

/* ---- Status objects (status.c) ---------------------------------------- */

/*
 * Renders err as a metav1.Status, the one place ckube builds one. A failure
 * (err->code < 0): {"kind":"Status","apiVersion":"v1","metadata":{},
 * "status":"Failure","message":...,"reason":...,"details":{...},"code":...},
 * with details' name, group, kind and causes when set; an error without an
 * HTTP code is rendered as 500 InternalError, never code 0. A success
 * (err->code == 0): status "Success", details (name, group, kind, uid) when
 * they name something, code when err->http_status is set. With
 * omit_empty_details an empty details object is left out (watch ERROR
 * events, as Kubernetes sends them). Returns a string the caller frees (its
 * length in *ret_len when not NULL), or NULL when out of memory.
 */
char *ck__status_json(const struct ck_err *err, bool omit_empty_details, size_t *ret_len);

/*
 * A 500 InternalError Status for when memory is short: static, so it can be
 * sent when nothing else can be built.
 */
extern const char ck__status_no_memory[];
/* The same with the line break that ends every JSON answer (not a watch event). */
extern const char ck__status_no_memory_line[];

/*
 * 422 Invalid, as Kubernetes words it: `Kind.group "name" is invalid: [a, b]`
 * with one cause per field error; details name group and kind (static or
 * outliving err). Returns CK_EINVAL.
 */
/*
 * 504 Timeout "Timeout: Too large resource version: W, current: C" with the
 * ResourceVersionTooLarge cause, as Kubernetes answers a read or watch from a
 * revision the store has not reached (list.c). Returns the negative code.
 */
int ck__err_too_large_rv(struct ck_err *reterr, int64_t wanted, int64_t current);

/* The field errors as Go's ErrorList prints them, joined with ", " (caller frees; NULL OOM). */
char *ck__field_errors_text(const struct ck_field_errors *errs);
/*
 * utilerrors.NewAggregate of errs (one or more): one error as it is, several in brackets;
 * CK_EINVAL (reason Invalid), or CK_ENOMEM when errs lost one.
 */
int ck__err_aggregate(struct ck_err *err, const struct ck_field_errors *errs);

int ck__err_invalid(struct ck_err *err, const char *group, const char *kind, const char *name,
                    const struct ck_field_errors *errs);

/* The same for an object of kind: `Deployment.apps "x" is invalid: [a, b]`. */
int ck__err_invalid_object(struct ck_err *err, const struct ck_kind *kind, const char *name,
                           const struct ck_field_errors *errs);

/* The object errors of ckube/util.h for an object of kind. */
int ck__err_not_found(struct ck_err *err, const struct ck_kind *kind, const char *name);
int ck__err_conflict(struct ck_err *err, const struct ck_kind *kind, const char *name,
                     const char *why);

/*
 * A failed store call (store_err, as the store filled it) as the API answers
 * it: 410 Expired for a compacted revision, else 500 InternalError.
 */
int ck__err_store(struct ck_err *err, const struct ck_err *store_err);

/* What a resource path addresses (route.c). */
struct ck__target {
    const struct ck_kind *kind;
    char group[64];
    char version[32];
    char namespace[64];              /* "" for cluster-scoped objects and all-namespace lists */
    char name[254];                  /* "" for a collection */
    char subresource[32];            /* "" for the object itself */
    const struct ck_auth_user *user; /* who asks (set once authenticated); NULL: the server */
    /*
     * The proxy subresource: how many path segments lead to it ("/api/v1/nodes/n/proxy":
     * 5); what follows them is the path the request proxies (any number of segments).
     */
    unsigned proxy_skip;
};

/*
 * Parses an API path (already URL-decoded, without the query). Returns 0 and
 * fills *ret, or CK_ENOENT for anything that is not a resource ckube serves
 * (discovery paths included: the caller routes those first). An empty
 * segment other than a final one (`//api//v1/pods`) is not found either.
 */
int ck__route(const char *path, struct ck__target *ret);

/*
 * Checks the request target as the client sent it (raw_uri: still
 * percent-encoded, with its query), before anything decodes it into a C
 * string: 0 when every path segment decodes to a string without NUL or '/',
 * no segment but the last is empty and the query holds no encoded NUL.
 * Otherwise fills *reterr with the answer (404 NotFound for a path no
 * resource can have, 400 BadRequest for a malformed escape or a NUL in the
 * query) and returns its code.
 */
int ck__path_check(const char *raw_uri, struct ck_err *reterr);

/*
 * Kubernetes' path segment validation of an object name
 * (apimachinery's IsValidPathSegmentName, as its storage key functions
 * apply it): not "." or "..", no '/' or '%'. 0, or CK_EINVAL with the 400
 * BadRequest `Name parameter invalid: "a%b": may not contain '%'` in *reterr.
 */
int ck__check_name_segment(const char *name, struct ck_err *reterr);

/* The stored objects of the API (registry.c, list.c). Immutable once built. */
struct ck__allocator;
struct ck__admission_chain;
struct ck__registry {
    struct ck_store *store;
    const struct ck_schemas *schemas;
    ck_feature_enabled_fn feature_enabled; /* NULL: gates at their defaults */
    void *feature_ctx;
    struct ck__allocator *allocator;             /* cluster IPs and node ports; NULL: none given */
    struct ck__namespace_cache *namespaces;      /* NULL: every create reads its namespace */
    struct ck__admission_cache *admission_lists; /* NULL: admission lists from the store */
    const struct ck__admission_chain *admission; /* every write passes it; NULL: no plugin */
    /* RBAC, for the plugins that ask it (the certificate signers'); NULL: no authorization */
    struct ck_rbac_authorizer *authorizer;
};

/* ---- admission (admission/) ------------------------------------------------ */

enum ck__admission_op {
    CK__ADMISSION_CREATE,
    CK__ADMISSION_UPDATE,
    CK__ADMISSION_DELETE,
    CK__ADMISSION_CONNECT, /* pods/exec, attach, portforward: no object; asked of connect plugins */
};

/*
 * What a plugin is asked about (Kubernetes' admission.Attributes). obj is the object
 * about to be stored (create, update), which the mutating step may change and the
 * validating step only reads; old is the stored one (update, delete). Borrowed.
 */
struct ck__admission_attrs {
    enum ck__admission_op op;
    const struct ck_kind *kind;
    const char *subresource; /* NULL or "": the object itself */
    const char *namespace;   /* "" for cluster-scoped kinds */
    const char *name;        /* may be empty on a create with generateName */
    json_t *obj;             /* NULL on delete and connect */
    const json_t *old;       /* NULL on create */
    bool dry_run;
    const struct ck_auth_user *user; /* who asks; NULL: the server's own write */
};

/*
 * A plugin: a name and its steps, either NULL. A step returns 0 to let the request
 * through, or a negative code with the refusal in *reterr.
 */
typedef int (*ck__admission_step_fn)(struct ck__registry *reg, const struct ck__admission_attrs *a,
                                     struct ck_err *reterr);
struct ck__admission_plugin {
    const char *name;
    ck__admission_step_fn admit;    /* mutating */
    ck__admission_step_fn validate; /* validating */
    bool connect;                   /* also asked about connects (Kubernetes' Handles(Connect)) */
};

/* The enabled plugins in kube-apiserver's order. */
#define CK__ADMISSION_MAX 40
struct ck__psa_config;
struct ck__admission_chain {
    const struct ck__admission_plugin *plugins[CK__ADMISSION_MAX];
    size_t n;
    /* PodSecurity's configuration from the admission configuration file; NULL: defaults */
    struct ck__psa_config *pod_security;
    /* ResourceQuota's limitedResources (its Configuration's); NULL: none */
    json_t *quota_limited;
    /*
     * The kubeconfigs of the webhook plugins' kubeConfigFile (their users' paths made
     * absolute): [0] ValidatingAdmissionWebhook's, [1] MutatingAdmissionWebhook's; NULL:
     * none, webhooks are called without credentials.
     */
    json_t *webhook_kubeconfig[2];
};

/*
 * The chain for --enable-admission-plugins / --disable-admission-plugins (comma-separated,
 * NULL: none): Kubernetes' default set, as far as ckube implements it, plus enable minus
 * disable. CK_EINVAL with kube-apiserver's message for an unknown name or a name in both;
 * also for enabling a plugin ckube does not implement. *ret is freed with
 * ck__admission_chain_free().
 */
int ck__admission_chain_new(const char *enable, const char *disable,
                            struct ck__admission_chain **ret, struct ck_err *reterr);
/*
 * Reads the admission configuration file at path (--admission-control-config-file: an
 * apiserver.config.k8s.io/v1 AdmissionConfiguration, YAML or JSON) into chain's plugins:
 * each plugins[] entry's `configuration`, or the file its `path` names (relative to the
 * configuration's directory), for the enabled plugins that take one (PodSecurity,
 * ResourceQuota).
 * CK_EINVAL with Kubernetes' words for a file that cannot be read or a configuration
 * that is not valid; CK_ENOMEM.
 */
int ck__admission_chain_configure(struct ck__admission_chain *chain, const char *path,
                                  struct ck_err *reterr);
void ck__admission_chain_free(struct ck__admission_chain *chain);
/* Logs the mutating and the validating steps in order, as kube-apiserver does at start. */
void ck__admission_chain_log(const struct ck__admission_chain *chain);
/* Whether the chain runs the plugin called name. */
bool ck__admission_chain_has(const struct ck__admission_chain *chain, const char *name);

/* Runs every mutating step of reg's chain in order, then (the other call) every validating one. */
int ck__admission_admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                        struct ck_err *reterr);
int ck__admission_validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                           struct ck_err *reterr);

/* For plugins: whether a is about an object itself (no subresource) of group's resource. */
bool ck__admission_is(const struct ck__admission_attrs *a, const char *group, const char *resource);
/* The same for the kind that plays role (pods, namespaces, ...): no names compared. */
bool ck__admission_is_role(const struct ck__admission_attrs *a, enum ck_kind_role role);
/* The object's name as admission errors give it: its name, else its generateName, else "Unknown".
 */
const char *ck__admission_name(const struct ck__admission_attrs *a);
/* 403 `<resource> "<name>" is forbidden: <why>` (admission.NewForbidden). Returns the code. */
int ck__admission_forbidden(const struct ck__admission_attrs *a, struct ck_err *reterr,
                            const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * The stored object of kind called name: 0 with *ret a new reference; CK_ENOENT with
 * nothing set in *reterr when there is none (the plugin words that); else the error.
 */
int ck__admission_get(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                      const char *name, json_t **ret, struct ck_err *reterr);
/*
 * Calls each for every stored object of kind in namespace (NULL: everywhere) until it
 * returns non-zero.
 */
int ck__admission_list(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                       int (*each)(const json_t *obj, void *arg), void *arg, struct ck_err *reterr);

/*
 * The default class of a cluster-scoped kind (IngressClass, StorageClass) into ret_name
 * ("": none): of the objects with one of annotations (NULL-terminated) set to "true",
 * the newest by creationTimestamp, then the smallest name, as Kubernetes picks it.
 */
int ck__admission_newest_default(struct ck__registry *reg, const struct ck_kind *kind,
                                 const char *const *annotations, char *ret_name, size_t size,
                                 struct ck_err *reterr);

/*
 * Admission warnings (Kubernetes' warning.AddWarning on the request's context): a
 * request handler points this thread's warnings at its list for the time it runs the
 * registry (returns the previous list, to restore); ck__admission_warn() adds one there,
 * once however often it is given, and does nothing when no list is set. The handler
 * answers them as `Warning: 299 - "..."` headers.
 */
struct ck_warnings *ck__admission_warnings_to(struct ck_warnings *warnings);
void ck__admission_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * What webhooks and policies match (admission/match.c). ck__admission_rule_matches: a
 * RuleWithOperations or NamedRuleWithOperations (its resourceNames: the request's object
 * name, none meaning every name) matches a. ck__admission_matches: 1 when the namespace
 * and object selectors (LabelSelector objects, NULL or {}: everything) match, no rule of
 * exclude does and one of rules does (rules NULL or empty: every request when
 * empty_matches_all, else none); 0 when not; a negative code with reterr filled (404 for a
 * namespace that does not exist, 500 `<what> has an invalid selector`).
 * ck__admission_namespace_object: the stored namespace of a's request (a namespace's
 * own for a request about one) in *ret, a new reference; 0 with *ret NULL for a
 * cluster-scoped request, CK_ENOENT when it does not exist.
 */
const char *ck__admission_op_name(enum ck__admission_op op);
bool ck__admission_is_namespace_request(const struct ck__admission_attrs *a);
bool ck__admission_rule_matches(const json_t *rule, const struct ck__admission_attrs *a);
int ck__admission_matches(struct ck__registry *reg, const json_t *ns_sel, const json_t *obj_sel,
                          const json_t *rules, bool empty_matches_all, const json_t *exclude,
                          const char *what, const struct ck__admission_attrs *a,
                          struct ck_err *reterr);
int ck__admission_namespace_object(struct ck__registry *reg, const struct ck__admission_attrs *a,
                                   json_t **ret, struct ck_err *reterr);
/*
 * The stored objects of admissionregistration.k8s.io/v1 resource (the webhook
 * configurations, the policies, their bindings), sorted by name, in a new array *ret.
 */
int ck__admission_configurations(struct ck__registry *reg, const char *resource, json_t **ret,
                                 struct ck_err *reterr);

/*
 * The CEL environment of admission (admission/cel.c). An input is what one request's
 * expressions see: object, oldObject and request, authorizer (reg set), and for a policy's
 * (policy set) params, namespaceObject and variables. Zero it, set a (and reg, params,
 * borrowed), and release it with ck__cel_input_release().
 */
struct ck__cel_input {
    const struct ck__admission_attrs *a;
    struct ck__registry *reg; /* the `authorizer`'s RBAC (reg->authorizer); NULL: no authorizer */
    bool policy;
    const json_t *params;                /* borrowed; NULL: null */
    json_t *namespace_object;            /* CreateNamespaceObject's view; NULL: null */
    json_t *variables;                   /* the policy's variables evaluated so far */
    json_t *variable_errors;             /* name -> the error of a variable that failed */
    json_t *request;                     /* CreateAdmissionRequest's, built at first use */
    struct ck_cel_authorizer authorizer; /* the `authorizer` variable's, set at evaluation */
};
void ck__cel_input_release(struct ck__cel_input *in);
/* Sets namespaceObject to the view of the namespace ns (NULL: null). 0 or CK_ENOMEM. */
int ck__cel_input_set_namespace(struct ck__cel_input *in, const json_t *ns);
/*
 * Whether the server's authorizer allows req (reason, size: RBAC's words when not): the
 * server's own writes (req->user NULL), a server without authorization and system:masters
 * are allowed everything, others get RBAC's answer.
 */
struct ck_rbac_request;
bool ck__admission_authorize(struct ck__registry *reg, const struct ck_rbac_request *req,
                             char *reason, size_t size);
/*
 * The registry's check of who names parameters (Kubernetes' validatingadmissionpolicy and
 * validatingadmissionpolicybinding authz.go), after obj (a write of kind by user; old: the
 * stored object of an update) validated: a policy's new paramKind needs `get` of all
 * objects of its resource, a binding's new paramRef (or policyName) `get` of the object it
 * names; otherwise a Forbidden error at spec.paramKind or spec.paramRef joins errs. Other
 * kinds, the server's own writes and system:masters are not checked.
 */
void ck__admission_authorize_params(struct ck__registry *reg, const struct ck_kind *kind,
                                    const json_t *obj, const json_t *old,
                                    const struct ck_auth_user *user, struct ck_field_errors *errs);
/*
 * The type checking of a ValidatingAdmissionPolicy (admission/typecheck.c): 0 and
 * *ret_warnings, a new array of {fieldRef, warning} as Kubernetes writes to
 * status.typeChecking.expressionWarnings (empty when none), the kinds' schemas from set;
 * CK_ENOMEM.
 */
int ck__policy_typecheck(const json_t *policy, const struct ck_schemas *set, json_t **ret_warnings);
/* The `request` variable of a (a new reference; NULL when out of memory). */
json_t *ck__admission_cel_request(const struct ck__admission_attrs *a);
/*
 * Evaluates expr (compiled once per text, then cached) over in: 0 and *ret (free it with
 * ck_cel_result_free()); CK_EINVAL with Kubernetes' words in reterr (`compilation error:
 * compilation failed: ERROR: ...`, `expression 'x' resulted in error: why`); CK_ENOMEM.
 */
int ck__admission_cel_eval(const char *expr, struct ck__cel_input *in, struct ck_cel_result **ret,
                           struct ck_err *reterr);
/* Evaluates a policy's spec.variables in order into in->variables. 0 or CK_ENOMEM. */
int ck__admission_cel_variables(const json_t *variables, struct ck__cel_input *in);
/*
 * A list of matchConditions over in: 1 when every one is true, 0 when one is false (or
 * one failed and ignore is set: failurePolicy Ignore), CK_EINVAL with the errors in
 * reterr (several as `[a, b]`) when some failed and none was false; CK_ENOMEM.
 */
int ck__admission_match_conditions(const json_t *conditions, struct ck__cel_input *in, bool ignore,
                                   struct ck_err *reterr);

/* The plugins (admission/<name>.c). */
extern const struct ck__admission_plugin ck__admission_namespace_lifecycle;
extern const struct ck__admission_plugin ck__admission_service_account;
extern const struct ck__admission_plugin ck__admission_priority;
extern const struct ck__admission_plugin ck__admission_default_toleration_seconds;
extern const struct ck__admission_plugin ck__admission_taint_nodes_by_condition;
extern const struct ck__admission_plugin ck__admission_default_ingress_class;
extern const struct ck__admission_plugin ck__admission_runtime_class;
extern const struct ck__admission_plugin ck__admission_always_pull_images;
extern const struct ck__admission_plugin ck__admission_deny_service_external_ips;
extern const struct ck__admission_plugin ck__admission_limit_ranger;
extern const struct ck__admission_plugin ck__admission_node_restriction;
extern const struct ck__admission_plugin ck__admission_default_storage_class;
extern const struct ck__admission_plugin ck__admission_storage_object_in_use_protection;
extern const struct ck__admission_plugin ck__admission_pod_security;
extern const struct ck__admission_plugin ck__admission_resource_quota;
extern const struct ck__admission_plugin ck__admission_certificate_approval;
extern const struct ck__admission_plugin ck__admission_certificate_signing;
extern const struct ck__admission_plugin ck__admission_certificate_subject_restriction;
/*
 * Whether ResourceQuota admission serializes a namespace's requests (true); tests set
 * false to race them on the quota's resourceVersion alone, as two servers would.
 */
extern bool ck__resource_quota_serialize;
/* Tests: called by ResourceQuota admission between a check that passed and its charge. */
extern void (*ck__resource_quota_checked)(void);
extern const struct ck__admission_plugin ck__admission_mutating_webhook;
extern const struct ck__admission_plugin ck__admission_validating_webhook;
extern const struct ck__admission_plugin ck__admission_validating_policy;
/*
 * The client of webhooks (webhook_client.c), shared by the admission and the conversion
 * webhooks. why holds a failed call's words, which callers put after their own prefix
 * (`failed calling webhook "x": <why>`).
 */
struct ck__webhook_why {
    char text[1700];
};
/*
 * Posts request (JSON) to the webhook client_config names (a WebhookClientConfig: url,
 * or service {namespace, name, path, port}, and caBundle), giving it timeout seconds; on
 * success *ret_answer is the answer, a JSON object (a new reference). kubeconfig (NULL:
 * none) gives the credentials presented, its user chosen by the webhook's host and port
 * as kube-apiserver's AuthenticationInfoResolver chooses. 0, or CK_EINVAL
 * with why filled: every failure (no endpoint, TLS, timeout, a status other than 2xx, an
 * answer that is not a JSON object, said to be no `what`) is a failed call.
 */
int ck__webhook_post(struct ck__registry *reg, const json_t *client_config, long timeout,
                     const json_t *request, const char *what, const json_t *kubeconfig,
                     json_t **ret_answer, struct ck__webhook_why *why);
/*
 * Where a service reference ({namespace, name, path, port}, port default 443) is reached:
 * url is https://<name>.<namespace>.svc:<target port><path>, resolve curl's --resolve
 * entry to the first ready address of the service's EndpointSlices serving that port.
 * 0, or CK_EINVAL with why filled (no service, no such port, no ready endpoint).
 */
int ck__service_target(struct ck__registry *reg, const json_t *service_ref, char *url,
                       size_t url_size, char *resolve, size_t resolve_size,
                       struct ck__webhook_why *why);

/*
 * The conversion webhooks of custom resources (conversion.c). Each fails with a 500
 * in Kubernetes' words (`conversion webhook for <group/version, Kind=kind> failed:
 * ...`) when the webhook cannot be called or its answer does not pass the checks.
 *
 * ck__convert_objects: objects (an array of kind's objects) converted in place to the
 * apiVersion desired; the objects already in it are not sent. list says whether they
 * are a list's (the words of a failure name the list kind and the object's index).
 * ck__convert_kvs: each of the n kvs of kind not in the kind's own version replaced by a
 * new kv (same key and revisions; the old reference dropped) holding the converted
 * object in stored form; all in one review. Nothing happens, and nothing is decoded,
 * for a kind without a conversion webhook or kvs already in its version.
 * ck__convert_for_store: *ret a new reference to obj converted to the storage version,
 * or NULL when no conversion is needed (no webhook, or obj is in it already).
 */
int ck__convert_objects(struct ck__registry *reg, const struct ck_kind *kind, json_t *objects,
                        const char *desired, bool list, struct ck_err *reterr);
int ck__convert_kvs(struct ck__registry *reg, const struct ck_kind *kind, const struct ck_kv **kvs,
                    size_t n, bool list, struct ck_err *reterr);
int ck__convert_for_store(struct ck__registry *reg, const struct ck_kind *kind, const json_t *obj,
                          json_t **ret, struct ck_err *reterr);

/*
 * The AdmissionReview of version ("v1", "v1beta1") sent to webhooks about a request
 * (admission/webhook.c), with uid (a new reference; NULL when out of memory).
 */
json_t *ck__webhook_review(const struct ck__admission_attrs *a, const char *version,
                           const char *uid);

/*
 * Room for any object's key: /registry/, a custom resource's group and plural
 * (a CRD's name, plural.group, is at most 253 characters), a namespace (63)
 * and a name (253).
 */
#define CK__KEY_MAX 768

int ck__object_key(const struct ck_kind *kind, const char *namespace, const char *name, char *buf,
                   size_t size);
int ck__collection_prefix(const struct ck_kind *kind, const char *namespace, char *buf,
                          size_t size);

/*
 * The served form of a stored object of kind (NULL: as stored): the stored
 * bytes with "resourceVersion":"<rv>" spliced in as metadata's first member,
 * a custom resource's storage apiVersion replaced by the kind's, and its
 * version's schema defaults applied (defaulting on read). Caller frees.
 */
char *ck__serve_stored(const struct ck_kind *kind, const char *stored, size_t len,
                       int64_t resource_version, size_t *ret_len);

/*
 * A stored object as it is served, without copying it when nothing but its
 * resourceVersion changes: then owned is NULL and the served bytes are
 * stored[0, head), rv (rv_len bytes), stored[head, len). Otherwise (a
 * defaulted or converted custom resource) owned holds the served bytes
 * (owned_len), which the caller frees. 0, or CK_ENOMEM.
 */
struct ck__served_parts {
    char *owned;
    size_t owned_len;
    size_t head;
    char rv[48];
    size_t rv_len;
};
int ck__serve_stored_parts(const struct ck_kind *kind, const char *stored, size_t len,
                           int64_t resource_version, struct ck__served_parts *ret);

/* Parses a stored kv into an object with its resourceVersion. New reference or NULL. */
/*
 * obj in the stored form (apiVersion, kind and metadata first, metadata without
 * resourceVersion), with api_version as its apiVersion (NULL: its own). Caller frees;
 * NULL when out of memory.
 */
char *ck__encode_stored(const json_t *obj, const char *api_version, size_t *ret_len);
json_t *ck__decode_stored(const struct ck_kv *kv);

/* ck__decode_stored() with the schema defaults of kind applied (defaulting on read). */
json_t *ck__decode_served(const struct ck_kind *kind, const struct ck_kv *kv);

/*
 * Creates obj (decoded from the request, consumed by copy) in namespace. On
 * success returns 0 and sets *ret_body to the served object (caller frees);
 * failure returns a negative CK_E* code with *reterr filled.
 */
int ck__registry_create(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        json_t *obj, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck_err *reterr);

/*
 * ck__registry_create() for a write by who: the object's metadata.managedFields
 * records it (NULL who: obj carries the managedFields an apply computed).
 * ck__registry_create() writes as the server itself ("kube-apiserver").
 */
int ck__registry_create_by(struct ck__registry *reg, const struct ck_kind *kind,
                           const char *namespace, json_t *obj, const struct ck_field_manager *who,
                           const struct ck_auth_user *user, bool dry_run, char **ret_body,
                           size_t *ret_len, struct ck_err *reterr);

/*
 * The pure parts of the ServiceAccount admission plugin (admission/service_account.c).
 * Whether the plugin looks at pod at all (not a mirror pod).
 */
bool ck__sa_admission_applies(const json_t *pod);
/* Defaults spec.serviceAccountName; the account's name (borrowed from pod), NULL out of memory. */
const char *ck__sa_admission_account(json_t *pod);
/* Mounts the token volume unless pod or account sa opts out; copies imagePullSecrets. */
int ck__sa_admission_mutate(json_t *pod, const json_t *sa);

/* Reads one object: *ret_kv gets a reference. A negative code with *reterr (404, 500) on failure.
 */
int ck__registry_get(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                     const char *name, const struct ck_kv **ret_kv, struct ck_err *reterr);

/*
 * Computes the requested new state from the current object (a PUT returns
 * its body; a patch applies itself to current). Returns a new reference, or
 * NULL with *reterr filled. A metadata.resourceVersion in the result is a
 * precondition.
 */
typedef json_t *(*ck__mutate_fn)(const json_t *current, void *arg, struct ck_err *reterr);

/*
 * Optimistic update of one object (subresource "status" or NULL for the
 * object itself): read, mutate, prepare, default, validate, commit if the
 * key did not change meanwhile (else retry, or 409 when the request carried
 * a resourceVersion). A write that changes nothing commits nothing. An update
 * that removes the last finalizer of an object being deleted deletes it.
 */
int ck__registry_update(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const char *subresource, ck__mutate_fn mutate,
                        void *mutate_arg, bool dry_run, char **ret_body, size_t *ret_len,
                        struct ck_err *reterr);

/*
 * ck__registry_update() for a write by who, recorded in managedFields as an
 * Update of who->manager on subresource (NULL who: the mutation computed
 * them, as an apply does). ck__registry_update() writes as "kube-apiserver".
 */
int ck__registry_update_by(struct ck__registry *reg, const struct ck_kind *kind,
                           const char *namespace, const char *name, const char *subresource,
                           const struct ck_field_manager *who, const struct ck_auth_user *user,
                           ck__mutate_fn mutate, void *mutate_arg, bool dry_run, char **ret_body,
                           size_t *ret_len, struct ck_err *reterr);

/* ---- patches and the scale subresource (patch.c) ------------------------ */

enum ck__patch_type {
    CK__PATCH_JSON,      /* application/json-patch+json (RFC 6902) */
    CK__PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
    CK__PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
    CK__PATCH_APPLY,     /* application/apply-patch+yaml (server-side apply) */
};

/* One PATCH request: what ck__patch_mutate() applies on each attempt. */
/* ---- cluster IPs and node ports (allocator.c) ---------------------------- */

/* The most node ports one write takes or gives back. */
#define CK__ALLOCATION_MAX 64

/*
 * Builds an allocator over store for the IPv4 range cidr ("10.96.0.0/12") and
 * the node ports port_range ("30000-32767"). CK_EINVAL with the reason when
 * either is malformed.
 */
int ck__allocator_new(struct ck_store *store, const char *cidr, const char *port_range,
                      struct ck__allocator **ret, struct ck_err *reterr);
struct ck__allocator *ck__allocator_free(struct ck__allocator *a);

/* The first address of the range (the kubernetes Service's), into buf. */
const char *ck__allocator_first_ip(const struct ck__allocator *a, char *buf, size_t size);

/* A cluster IP (host order, 0: none) and node ports. */
struct ck__allocated {
    uint32_t ip;
    int ports[CK__ALLOCATION_MAX];
    size_t n_ports;
};

/* What one write took, and what its old state held that the new one dropped. */
struct ck__allocation {
    bool active, dry_run;
    json_t *owner; /* a reference to the object the values are recorded for */
    struct ck__allocated taken, dropped;
};

/*
 * Before a create (old NULL) or an update of an object of the service role:
 * takes the cluster IP and node ports obj needs and does not hold yet,
 * writing the ones it picks into obj. 0 with *al filled (release it with
 * ck__allocation_release() once the write is committed or failed), or a
 * negative code with *reterr (422 for a value taken or out of range, 500 for
 * a full range) and nothing taken. Other kinds, or a NULL allocator: 0.
 */
int ck__allocation_take(struct ck__allocator *a, const struct ck_kind *kind, json_t *obj,
                        const json_t *old, bool dry_run, struct ck__allocation *al,
                        struct ck_err *reterr);

/* After the write: committed gives back what the old state dropped, else what was taken. */
void ck__allocation_release(struct ck__allocator *a, struct ck__allocation *al, bool committed);

/* After obj (of kind) was removed from the store: gives back its values. */
void ck__allocation_removed(struct ck__allocator *a, const struct ck_kind *kind, const json_t *obj);

/* Creates the kubernetes Service in default (the first IP, port 443 to port) when absent. */
int ck__allocator_bootstrap(struct ck__registry *reg, int port, struct ck_err *reterr);

/* ---- encryption at rest (encryption.c) ------------------------------------ */

/*
 * Reads the EncryptionConfiguration at path and replaces *store by a store
 * that encrypts the resources it names (taking ownership of *store). path
 * NULL: nothing to do. CK_EINVAL with the reason for a bad file; *store is
 * then unchanged.
 */
int ck__encryption_wrap(const char *path, struct ck_store **store, struct ck_err *reterr);

/* Parses an EncryptionConfiguration's text only: 0, or CK_EINVAL with the reason. */
int ck__encryption_check(const char *text, size_t len, struct ck_err *reterr);

struct ck__patch {
    enum ck__patch_type type;
    json_t *doc; /* the parsed patch */
    const struct ck_schemas *schemas;
    const struct ck_kind *kind;
    bool scale; /* the patch is of the object's Scale */
    /*
     * A status write, which keeps only the result's metadata and status: a merge
     * patch is applied to those (and apiVersion, kind) alone, not to a copy of all.
     */
    bool status_only;
    enum ck_field_validation validation;
    struct ck_warnings warnings; /* of the last attempt, for the response */
    struct ck_field_manager who; /* the writer (apply: the applier) */
    bool force;                  /* apply: take the conflicting fields over */
};

/*
 * Parses a PATCH body by its Content-Type: 415 for a type ckube does not
 * apply (server-side apply included), 400 for a malformed body. On failure
 * *p needs no release.
 */
int ck__patch_init(struct ck__patch *p, const struct ck_schemas *schemas,
                   const struct ck_kind *kind, const char *content_type, const char *body,
                   size_t len, struct ck_err *reterr);
void ck__patch_release(struct ck__patch *p);

/*
 * Server-side apply (the end of patch.c): ck__apply_patch_init() reads the
 * applied configuration (YAML or JSON); ck__apply_patch() applies it to
 * current (NULL: the object does not exist) as p->who, with managedFields.
 */
int ck__apply_patch_init(struct ck__patch *p, const char *body, size_t len, struct ck_err *reterr);
json_t *ck__apply_patch(struct ck__patch *p, const json_t *current, struct ck_err *reterr);

/* A ck__mutate_fn whose arg is a struct ck__patch. */
json_t *ck__patch_mutate(const json_t *current, void *arg, struct ck_err *reterr);

/*
 * The autoscaling/v1 Scale of an object of a kind with a scale subresource
 * (a workload's spec.replicas, or where a CRD's scale subresource says).
 * New reference or NULL.
 */
json_t *ck__scale_of(const struct ck_kind *kind, const json_t *obj);

/*
 * current with spec.replicas taken from scale; the Scale's resourceVersion
 * and uid become preconditions. New reference, or NULL with *st filled.
 */
json_t *ck__scale_apply(const struct ck_kind *kind, const json_t *current, const json_t *scale,
                        struct ck_err *reterr);

/* What ck__scale_put_mutate() writes: the decoded Scale (borrowed) into an object of kind. */
struct ck__scale_put {
    const struct ck_kind *kind;
    const json_t *scale;
};

/* A ck__mutate_fn for PUT of a Scale (arg: a struct ck__scale_put). */
json_t *ck__scale_put_mutate(const json_t *current, void *arg, struct ck_err *reterr);

/* The Scale of a served object, as served JSON (caller frees), or NULL. */
char *ck__scale_serve(const struct ck_kind *kind, const char *served, size_t len, size_t *ret_len);

enum ck__propagation {
    CK__PROPAGATION_DEFAULT, /* none given: the kind's default (Background for ours) */
    CK__PROPAGATION_BACKGROUND,
    CK__PROPAGATION_FOREGROUND,
    CK__PROPAGATION_ORPHAN,
};

/* DeleteOptions (metav1), as parsed from the body and the query. */
struct ck__delete_options {
    enum ck__propagation propagation;
    bool has_grace; /* gracePeriodSeconds was given */
    long long grace_seconds;
    const char *precondition_uid;
    const char *precondition_rv;
    bool dry_run;
    const struct ck_auth_user *user; /* who asks, for admission; NULL: the server */
};

/* True when obj still has finalizers (metadata's, or a namespace's spec.finalizers). */
bool ck__has_finalizers(const struct ck_kind *kind, const json_t *obj);

/*
 * Deletes one object as Kubernetes' registry does: preconditions (409), the
 * garbage collector's finalizers per propagation policy, a pod's grace
 * period. An object with finalizers (or a bound pod within its grace period)
 * is only marked (deletionTimestamp, deletionGracePeriodSeconds; namespaces
 * go Terminating) and returned; otherwise it is removed, answering its last
 * state (core kinds) or a Success Status (apps kinds). A dry run answers the
 * same and writes nothing.
 */
int ck__registry_delete(struct ck__registry *reg, const struct ck_kind *kind, const char *namespace,
                        const char *name, const struct ck__delete_options *opts, char **ret_body,
                        size_t *ret_len, struct ck_err *reterr);

struct ck__list_options {
    const char *namespace;                  /* "" or NULL: every namespace */
    const struct ck_label_selector *labels; /* NULL: everything */
    const struct ck_field_selector *fields; /* NULL: everything */
    int64_t limit;                          /* 0: no limit */
    const char *continue_token;
    const char *resource_version;
    const char *resource_version_match;
};

struct ck__list_result {
    const struct ck_kv **kvs; /* one reference each, in key order */
    size_t n_kvs;
    int64_t revision;     /* the list's resourceVersion */
    char *continue_token; /* NULL when this is the last page */
};

/*
 * Lists a collection with selectors and paging, every page read at the
 * first page's revision. A negative code with *reterr: 400 (bad token),
 * 410 (compacted), 422 (bad resourceVersion combination), 504, 500.
 */
int ck__registry_list(struct ck__registry *reg, const struct ck_kind *kind,
                      const struct ck__list_options *opts, struct ck__list_result *ret,
                      struct ck_err *reterr);
void ck__list_result_release(struct ck__list_result *ret);

/*
 * The JSON List of result ({"kind":"PodList","apiVersion":"v1","metadata":
 * {"resourceVersion":rv[,"continue"]},"items":[...]}, each item as it is served) as
 * an HTTP LIST answers it, without its final line break: a string the caller frees (its
 * length in *ret_len), or NULL when out of memory (handlers.c).
 */
char *ck__list_json(const struct ck_kind *kind, const char *rv,
                    const struct ck__list_result *result, size_t *ret_len);

/* True when the object passes both selectors. */
bool ck__matches(const struct ck_kind *kind, const json_t *obj,
                 const struct ck_label_selector *labels, const struct ck_field_selector *fields);

/* ---- pods/eviction and PodDisruptionBudgets (disruption_budget.c) ------ */

/* What an eviction that may go on must add to its delete. */
struct ck__eviction_decision {
    char budget[254];              /* the budget that selects the pod, or "" */
    bool precondition;             /* delete only at pod_resource_version */
    char pod_resource_version[32]; /* the unready pod's resourceVersion */
};

/*
 * Checks (and, unless dry_run, spends) the disruption budget of the pod
 * namespace/pod_name before its eviction deletes it. 0: go on with the
 * delete as *ret says; else a negative code with *err (429 refused, 500 more
 * than one budget, 404 no such pod).
 */
int ck__eviction_check_budgets(struct ck__registry *reg, const char *namespace,
                               const char *pod_name, bool dry_run,
                               struct ck__eviction_decision *ret, struct ck_err *err);

/* Replaces *err (a 409 of the preconditioned delete) by the 429 of the budget. */
int ck__eviction_refused_by_conflict(struct ck_err *err, const char *budget);

/* ---- metrics (metrics.c) ------------------------------------------------- */

/* The labels Kubernetes puts on a request's metrics; code is added per sample. */
struct ck__request_labels {
    char verb[24]; /* GET LIST WATCH POST PUT PATCH DELETE DELETECOLLECTION ... */
    char group[64];
    char version[32];
    char resource[64];
    char subresource[32];
    const char *scope; /* "resource", "namespace", "cluster", or NULL off resources */
    bool dry_run;
};

/* Labels for METHOD on target t (NULL: a non-resource path such as /healthz). */
void ck__request_labels_set(struct ck__request_labels *l, const char *method,
                            const struct ck__target *t, bool watch, bool dry_run);

struct ck__metrics;
struct ck__metrics *ck__metrics_new(void);
void ck__metrics_free(struct ck__metrics *m);
/* Counts one answered request with its code and (watches aside) its duration. */
void ck__metrics_observe(struct ck__metrics *m, const struct ck__request_labels *l, unsigned code,
                         double seconds);
/*
 * The Prometheus text exposition: the request metrics, storage object counts
 * read from store now, then extra_exposition (other components' metrics, or
 * NULL). Caller frees; NULL when out of memory.
 */
char *ck__metrics_render(struct ck__metrics *m, struct ck_store *store,
                         const char *extra_exposition, size_t *ret_len);

/* ---- the kubernetes Service's endpoints (endpoint_reconciler.c) ------------ */

#define CK__EPR_INTERVAL 10 /* seconds between passes (kube-apiserver's lease reconciler) */
#define CK__EPR_TTL      15 /* seconds a server's record lives unrenewed (--endpoint-reconciler) */

struct ck__epr;

/*
 * The address this server advertises (kube-apiserver's --advertise-address default): the
 * listen host when it is a specific non-loopback IPv4 address, else the first
 * non-loopback IPv4 address of an interface that is up. 0, or CK_ENOENT (none).
 */
int ck__epr_advertise_address(const char *listen_host, char *buf, size_t size);

/*
 * One pass at time now (seconds): renews ip's record (remove: deletes it), reads the live
 * records (renewed less than ttl seconds ago; the others are deleted) and writes the
 * Endpoints and EndpointSlice default/kubernetes listing them, sorted, port "https" =
 * port, where they differ. 0, or the first error.
 */
int ck__epr_reconcile(struct ck__registry *reg, const char *ip, int port, long long now,
                      long long ttl, bool remove, struct ck_err *reterr);

/* Starts the thread that runs a pass every CK__EPR_INTERVAL. 0, CK_ENOMEM or CK_EIO. */
int ck__epr_start(struct ck__registry *reg, const char *ip, int port, struct ck__epr **ret,
                  struct ck_err *reterr);
/* Stops the thread, then removes this server (a last pass with remove). NULL: no-op. */
struct ck__epr *ck__epr_stop(struct ck__epr *e);

/* ---- objects that expire (ttl.c) ----------------------------------------- */

struct ck__ttl;

/*
 * Starts the thread that removes objects of kinds with a last_activity hook once they
 * are ttl (nanoseconds, rounded up to seconds; 0: one hour) past it; ttl < 0 starts
 * nothing (*ret NULL). 0, or CK_ENOMEM / CK_EIO.
 */
int ck__ttl_start(struct ck_store *store, int64_t ttl, struct ck__ttl **ret, struct ck_err *reterr);
/* Stops and joins the thread (NULL: no-op). Returns NULL. */
struct ck__ttl *ck__ttl_stop(struct ck__ttl *t);
/* One sweep at time now (seconds since the epoch), ttl in seconds. */
int ck__ttl_sweep(struct ck_store *store, long long ttl, long long now, size_t *ret_removed,
                  struct ck_err *reterr);

/* ---- the configuration objects admission lists (admission/list_cache.c) ---- */

struct ck__admission_cache;

/* Objects in one kept list at most; a longer one is read from the store each time. */
#define CK__ADMISSION_CACHE_MAX 10000

/*
 * Starts keeping the lists of admission's configuration kinds, watching each kind's
 * keys in store for changes (store NULL: no watch, only forgets tell it; the tests).
 * 0, or the watch's error (CK_ENOMEM, CK_EIO).
 */
int ck__admission_cache_start(struct ck_store *store, struct ck__admission_cache **ret,
                              struct ck_err *reterr);
/* Cancels the watches and frees (NULL: no-op). */
void ck__admission_cache_free(struct ck__admission_cache *c);
/*
 * The kept list (an array of read-only objects, a new reference) of the collection at
 * prefix (a kind's, in a namespace or all), or NULL when it must be read: then *ret_keep
 * says whether to hand what the read found to ck__admission_cache_fill with
 * *ret_generation. c NULL: NULL, nothing to keep.
 */
json_t *ck__admission_cache_lookup(struct ck__admission_cache *c, const char *prefix,
                                   bool *ret_keep, uint64_t *ret_generation);
/* Keeps items for prefix, unless anything of it was forgotten since the lookup's generation. */
void ck__admission_cache_fill(struct ck__admission_cache *c, const char *prefix, json_t *items,
                              uint64_t generation);
/* Forgets every list of kind: this server wrote an object of it. */
void ck__admission_cache_forget(struct ck__admission_cache *c, const struct ck_kind *kind);
/* What kind's watch callback does with an event (a test feeds it errors). */
void ck__admission_cache_event(struct ck__admission_cache *c, const struct ck_kind *kind,
                               const struct ck_store_event *ev);

/* ---- what creates know of their namespace (namespace_cache.c) ----------- */

struct ck__namespace_cache;

/* Namespaces remembered at most; beyond them a create reads its namespace. */
#define CK__NAMESPACE_CACHE_MAX 16384

/*
 * Starts remembering namespaces, watching those stored under namespace_kind's
 * prefix for changes. 0, or the watch's error (CK_ENOMEM, CK_EIO).
 */
int ck__namespace_cache_start(struct ck_store *store, const struct ck_kind *namespace_kind,
                              struct ck__namespace_cache **ret, struct ck_err *reterr);
/* The same without the watch: only forgets tell it of changes (the tests of them). */
int ck__namespace_cache_new(const struct ck_kind *namespace_kind, struct ck__namespace_cache **ret,
                            struct ck_err *reterr);
/* Cancels the watch and frees (NULL: no-op). */
void ck__namespace_cache_free(struct ck__namespace_cache *c);

/*
 * True when namespace name is remembered, with *ret_terminating; false when it
 * must be read (c NULL included). *ret_generation is for the fill after that
 * read.
 */
bool ck__namespace_cache_lookup(struct ck__namespace_cache *c, const char *name,
                                bool *ret_terminating, uint64_t *ret_generation);
/* Remembers what a read found, unless anything was forgotten since the lookup's generation. */
void ck__namespace_cache_fill(struct ck__namespace_cache *c, const char *name, bool terminating,
                              uint64_t generation);
/* Forgets name: this server wrote it. */
void ck__namespace_cache_forget(struct ck__namespace_cache *c, const char *name);
/* What the watch's callback does with an event (a test feeds it errors). */
void ck__namespace_cache_event(struct ck__namespace_cache *c, const struct ck_store_event *ev);

/* ---- the server's controllers' loop (pass_thread.c) ----------------------- */

struct ck__pass_thread;

/*
 * Starts a thread that runs pass(arg) whenever the stored objects of kind change (and a
 * second after a pass that returned true), first once on that thread, or here before
 * this returns when first_here. 0, CK_ENOMEM or CK_EIO.
 */
int ck__pass_thread_start(struct ck_store *store, const struct ck_kind *kind, bool first_here,
                          bool (*pass)(void *arg), void *arg, struct ck__pass_thread **ret,
                          struct ck_err *reterr);
/* Stops the watch and joins the thread (NULL: no-op). Returns NULL. */
struct ck__pass_thread *ck__pass_thread_stop(struct ck__pass_thread *t);

/* ---- ValidatingAdmissionPolicy status (policy_status.c) ------------------ */

struct ck__policy_status;

/*
 * Starts the thread that writes the stored policies' status.observedGeneration and
 * status.typeChecking (the kinds' schemas from schemas, borrowed). *ret is NULL when
 * policies are not a served kind. 0, CK_ENOMEM or CK_EIO.
 */
int ck__policy_status_start(struct ck__registry *registry, const struct ck_schemas *schemas,
                            struct ck__policy_status **ret, struct ck_err *reterr);
/* Stops the thread (NULL: no-op). Returns NULL. */
struct ck__policy_status *ck__policy_status_stop(struct ck__policy_status *c);

/* ---- CustomResourceDefinitions (crd.c) ----------------------------------- */

struct ck__crd_controller;

/*
 * Serves the stored CustomResourceDefinitions (their kinds registered before
 * this returns) and starts the thread that keeps their names, conditions,
 * kinds and cleanup level with the store. base: the built-in schemas custom
 * resources' lie over (borrowed). *ret is NULL when definitions are not a
 * served kind. 0, CK_ENOMEM or CK_EIO.
 */
int ck__crd_start(struct ck__registry *registry, const struct ck_schemas *base,
                  struct ck__crd_controller **ret, struct ck_err *reterr);
/*
 * The built-in schemas every server of the process reads, built once and
 * kept until exit: custom resources' schema sets lie over them, and a kind
 * one server registered may outlive that server (the registry is
 * process-wide). 0, or the error of building them (CK_ENOMEM).
 */
int ck__shared_schemas(const struct ck_schemas **ret, struct ck_err *reterr);

/* Stops the thread and lets go of the kinds it served (NULL: no-op). Returns NULL. */
struct ck__crd_controller *ck__crd_stop(struct ck__crd_controller *c);

/* ---- the server (server.c) ---------------------------------------------- */

struct ck__watch_stream;

/* The checks behind /readyz, /livez and /healthz, each with one streak. */
enum ck__health_check { CK__HEALTH_PING, CK__HEALTH_STORE, CK__HEALTH_SHUTDOWN, CK__HEALTH_N };

/* A check failing this long gets a log line, and another at every such interval after. */
#define CK__HEALTH_LOG_AFTER_MS 10000LL
#define CK__HEALTH_LOG_EVERY_MS 60000LL

/* How long a check has been failing, from the probes that ran it. */
struct ck__health_streak {
    atomic_llong failing_since_ms; /* monotonic ms of the first failure in a row; 0: passing */
    atomic_llong logged_at_ms;     /* when this streak was last logged; 0: not yet */
};

enum ck__health_note {
    CK__HEALTH_QUIET,     /* nothing to log */
    CK__HEALTH_FAILING,   /* log that the check has been failing for *ret_failing_ms */
    CK__HEALTH_RECOVERED, /* log that it passes again after *ret_failing_ms of failing */
};

/*
 * Notes one run of a check (ok or not) at now_ms (monotonic) in its streak
 * and says what to log: FAILING once the streak is CK__HEALTH_LOG_AFTER_MS
 * old and then at most once per CK__HEALTH_LOG_EVERY_MS, RECOVERED on the
 * first pass after a streak that was logged, else QUIET. Safe from several
 * threads at once: of concurrent runs, one gets FAILING.
 */
enum ck__health_note ck__health_streak_note(struct ck__health_streak *s, bool ok, long long now_ms,
                                            long long *ret_failing_ms);

struct ck_apiserver {
    struct MHD_Daemon *daemon; /* server.c's transport */
    struct ck__apf *apf;       /* API Priority and Fairness applied to requests (NULL: disabled) */
    /* without it, maxinflight.go: the reads and the writes running, and their limits */
    unsigned inflight_limit[2];
    atomic_uint inflight[2];
    /* the node agents' client: certificate, key and CA files, or NULL (podlog.c) */
    char *kubelet_cert, *kubelet_key, *kubelet_ca;
    struct ck__aggregator *aggregator; /* APIServices (aggregator.c); NULL until started */
    int listen_fd;
    uint16_t port;
    char url[300];
    atomic_bool shutting_down;
    struct ck__health_streak health[CK__HEALTH_N]; /* by enum ck__health_check */
    struct ck_store *store;
    const struct ck_schemas *schemas; /* ck__shared_schemas(): never freed */
    struct ck__registry *registry;
    struct ck__admission_chain *admission; /* the registry's, owned here */
    struct ck__crd_controller *crds;
    struct ck__policy_status *policy_status;
    struct ck__metrics *metrics;
    struct ck__metrics_api *metrics_api; /* metrics.k8s.io's scrapes (metrics_api.c) */
    struct ck_fg_gate *feature_gates;    /* the config's, or own_gates */
    char *(*metrics_text)(void *arg);    /* the config's extra /metrics text, or NULL */
    void *metrics_text_arg;
    struct ck_fg_gate *own_gates;
    /* active watch streams, for the ticker and for shutdown */
    pthread_mutex_t watches_lock;
    struct ck__watch_stream *watches;
    atomic_int active_watches;
    /* watch.c: bytes waiting in every stream's buffer, and their budget (0: the default) */
    atomic_size_t watch_buffered;
    atomic_size_t watch_budget;
    pthread_t ticker;
    pthread_mutex_t ticker_lock;
    pthread_cond_t ticker_wake;
    bool ticker_stop;
    struct ck__auth *auth;       /* NULL: plain HTTP, no authentication (authn_authz.c) */
    struct ck__ttl *ttl;         /* the expiry thread, or NULL */
    struct ck__epr *epr;         /* the kubernetes Service's endpoints, or NULL */
    char listen_host[256];       /* the host part of the listen address */
    char advertise[64];          /* the address it advertises ("" none; set at start) */
    struct ck__conns *conns;     /* connection bounds and header deadline (connections.c) */
    struct ck__workers *workers; /* the threads that run writes (workers.c) */
};

/* ---- connection bounds and the header deadline (connections.c) ------------ */

struct ck__conn_limits {
    unsigned max_total;       /* admitted connections in all */
    unsigned max_per_address; /* admitted connections of one client address */
    unsigned reserve;         /* extra one-read slots once nothing can be evicted */
    unsigned header_timeout;  /* seconds to deliver a complete request header; the body has twice */
};

struct ck__conns_stats {
    unsigned admitted, in_reserve;      /* now */
    unsigned long evicted_for_deadline; /* since start */
    unsigned long evicted_for_room;
    unsigned long reserve_admitted;
    unsigned long refused;
    unsigned long untracked; /* admitted without tracking: out of memory */
};

struct ck__conns;

/* A tracker enforcing limits (copied), or NULL when out of memory. */
struct ck__conns *ck__conns_new(const struct ck__conn_limits *limits);
/* Frees the tracker (the daemon must be stopped). Returns NULL. */
struct ck__conns *ck__conns_free(struct ck__conns *c);
/*
 * One pass of the API Priority and Fairness configuration keeper (flowcontrol.c): the
 * bootstrap objects created or put back as kube-apiserver's ensurer does, and each
 * FlowSchema's Dangling condition. Failures are logged; the next pass retries.
 */
void ck__apf_ensure(struct ck__registry *reg);
/* Seconds between two passes, from the ticker. */
#define CK__APF_ENSURE_INTERVAL 10

/*
 * API Priority and Fairness applied to requests (apf.c): classification by the
 * FlowSchemas, seats of the priority levels, queues. One per server.
 */
struct ck__apf;
struct ck__apf_level;
struct ck__apf_stat;
#define CK__APF_UID_MAX 64
/*
 * A request's wait limit (server/filters/priority-and-fairness.go): a quarter of the time
 * its deadline allows (--request-timeout's 60 s, or a shorter ?timeout), a quarter of the
 * request timeout for a watch (which has no deadline), at most CK__APF_WAIT_MAX seconds.
 */
#define CK__APF_REQUEST_TIMEOUT 60
#define CK__APF_WAIT_MAX        60

/* The work estimate's parameters (util/flowcontrol/request/config.go's defaults). */
#define CK__APF_MIN_SEATS        1
#define CK__APF_MAX_SEATS_LIMIT  10
#define CK__APF_OBJECTS_PER_SEAT 100.0
#define CK__APF_WATCHES_PER_SEAT 10.0
#define CK__APF_EVENT_SECONDS    0.005 /* eventAdditionalDuration */

/* What classification reads of a request (Kubernetes' RequestDigest); borrowed strings. */
struct ck__apf_digest {
    const char *user; /* "" when anonymous */
    const char *const *groups;
    size_t n_groups;
    bool resource_request;
    const char *verb; /* RequestInfo's: get, list, watch, create, ...; lower-case method else */
    const char *api_group, *resource, *subresource, *namespace; /* a resource request's */
    const char *path;                                           /* a non-resource request's */
    /*
     * What the work estimate reads (request/width.go): RequestInfo's name (a list's or a
     * watch's is its metadata.name field selector's value), and a list's or watch's options.
     */
    const char *name;
    long long limit;                         /* ?limit, 0 when none */
    bool selector;                           /* a label or field selector */
    bool continued;                          /* ?continue */
    const char *resource_version, *rv_match; /* ?resourceVersion, ?resourceVersionMatch */
    bool send_initial_events;                /* ?sendInitialEvents=true */
    bool bad_options;                        /* options that do not parse */
    bool watch_list;                         /* the WatchList feature gate is on */
    bool node_indexed; /* a pods watch for one spec.nodeName (watch_tracker.go's index) */
};

/* request/width.go's WorkEstimate: seats while it runs, and after it answered. */
struct ck__apf_work {
    unsigned initial_seats, final_seats;
    double additional_latency; /* seconds the final seats are held after the answer */
};

enum ck__apf_verdict {
    CK__APF_EXECUTE, /* run it (its seats are held when the level is limited) */
    CK__APF_REJECT,  /* answer 429 with Retry-After: retry_after */
    CK__APF_QUEUE,   /* ck__apf_admit: it must wait; ck__apf_enqueue: it waits */
};

struct ck__apf_watch;

/*
 * One request's passage, embedded in the request. After ck__apf_enqueue() answered
 * CK__APF_QUEUE the apf owns it until it calls wake(t) (from any thread, never under
 * a lock), with verdict EXECUTE (its seats are held) or REJECT.
 */
struct ck__apf_ticket {
    bool classified; /* fs_uid and pl_uid are the response's X-Kubernetes-PF-* headers */
    char fs_uid[CK__APF_UID_MAX], pl_uid[CK__APF_UID_MAX];
    struct ck__apf_level *level;
    struct ck__apf_stat *stat;
    uint64_t flow_hash;
    struct ck__apf_work work; /* the estimate, set by ck__apf_admit() */
    bool seated;              /* holds its seats of its level */
    bool finished;            /* ck__apf_done() ran */
    enum ck__apf_verdict verdict;
    unsigned retry_after;        /* seconds, when rejected */
    struct ck__apf_watch *watch; /* a watch counted for the estimates until ck__apf_end() */
    /* set by the caller before ck__apf_enqueue() */
    void (*wake)(struct ck__apf_ticket *t);
    /* in a queue (queueset.go's request) */
    struct ck__apf_ticket *next;
    unsigned queue, shape;                      /* its queue, of the level's queues of that shape */
    bool in_queue;                              /* seated from a queue, counted in it */
    double deadline;                            /* while waiting */
    double started;                             /* when it was seated */
    uint64_t arrival_r, total_work, final_work; /* seat-seconds, fixed point */
};

/* server_limit: the seats of all limited levels together (0: 600). NULL when out of memory. */
struct ck__apf *ck__apf_new(unsigned server_limit);
/* Stops the timer thread, cancels the watches and frees; every ticket must be ended. NULL. */
struct ck__apf *ck__apf_free(struct ck__apf *a);
/* Replaces the monotonic clock (seconds), for tests; before any request. */
void ck__apf_set_clock(struct ck__apf *a, double (*now)(void *arg), void *arg);
/*
 * Compiles the FlowSchemas and PriorityLevelConfigurations (arrays of objects) into the
 * snapshot requests are classified by, and applies the levels' limits. 0 or CK_ENOMEM
 * (then nothing changed but levels' settings).
 */
int ck__apf_configure(struct ck__apf *a, const json_t *schemas, const json_t *levels);
/*
 * Watches both kinds in reg's store and configures from them, counts the stored objects
 * and starts the thread that ends waits at their deadline and releases final seats.
 */
int ck__apf_start(struct ck__apf *a, struct ck__registry *reg, struct ck_err *reterr);
/* Reads both kinds again and configures (after this server wrote one). */
void ck__apf_refresh(struct ck__apf *a);
/* Whether kind is one the configuration comes from. */
bool ck__apf_follows(const struct ck__apf *a, const struct ck_kind *kind);
/* From the ticker: configures again after a change, counts the objects every minute. */
void ck__apf_tick(struct ck__apf *a, double now);
/* Rejects the tickets waiting past now and releases the final seats due (monotonic s). */
void ck__apf_expire(struct ck__apf *a, double now);
/* Rejects every waiting ticket, and every later enqueue. */
void ck__apf_stop(struct ck__apf *a);
/*
 * The object count of a group's resource ("pods", "deployments.apps") as of now (the
 * object count tracker's Set): the list estimate reads it; count < 0 is ignored.
 */
void ck__apf_set_count(struct ck__apf *a, const char *group_resource, long long count);
/*
 * Classifies d into t, estimates its work and decides: EXECUTE (unclassified, exempt, or
 * its seats taken), REJECT (a Reject level without the seats) or QUEUE (call
 * ck__apf_enqueue()).
 */
enum ck__apf_verdict ck__apf_admit(struct ck__apf *a, const struct ck__apf_digest *d,
                                   struct ck__apf_ticket *t);
/*
 * Queues t (set t->wake first) until its seats are free or deadline passes: QUEUE, or
 * EXECUTE (dispatched at once) or REJECT (its queue is full) at once.
 */
enum ck__apf_verdict ck__apf_enqueue(struct ck__apf *a, struct ck__apf_ticket *t, double deadline);
/*
 * The request has run (or, for a watch, started): its seats go to the waiting, the final
 * ones after its additional latency.
 */
void ck__apf_done(struct ck__apf *a, struct ck__apf_ticket *t);
/* The request is over (a watch has ended): it is no longer counted among the watches. */
void ck__apf_end(struct ck__apf *a, struct ck__apf_ticket *t);
/* Calls wake on each ticket of a list linked by next. */
void ck__apf_wake(struct ck__apf_ticket *list);
/* shufflesharding's Dealer: hand distinct cards of a deck of deck, from hash. */
void ck__apf_deal(uint64_t hash, unsigned deck, unsigned hand, unsigned *ret_cards);
/*
 * request/width.go's estimate of d's work on a level whose work estimator allows at most
 * max_seats (0: the limit, 10), with count the stored objects of d's resource (-1: not
 * known, -2: stale) and watches the watches its change wakes.
 */
struct ck__apf_work ck__apf_estimate(const struct ck__apf_digest *d, unsigned max_seats,
                                     long long count, unsigned watches);
/*
 * Seconds a request may wait in its queue: a quarter of what its ?timeout (a Go
 * duration, when below the request timeout) or the request timeout allows; a
 * long-running request (a watch) has no deadline and gets the default, a quarter of the
 * request timeout.
 */
double ck__apf_wait_limit(const char *timeout, bool long_running);
/*
 * request_deadline.go's parseTimeout: whether a ?timeout value (NULL or "" when none) is
 * no Go duration; then msg is the 400's message, time.ParseDuration's error included.
 */
bool ck__apf_timeout_invalid(const char *timeout, char *msg, size_t size);
/* The apiserver_flowcontrol_* exposition; NULL when out of memory. */
char *ck__apf_metrics_text(struct ck__apf *a);

/*
 * Calls fn with each stored group and resource once (the first kind of it) and its object
 * count, -1 when the store fails (metrics.c).
 */
void ck__count_stored_objects(struct ck_store *store,
                              void (*fn)(const struct ck_kind *kind, long long count, void *arg),
                              void *arg);

/* Closes the connections past their header deadline; from the ticker thread. */
void ck__conns_tick(struct ck__conns *c);
/* The counts now and the cuts since the start. */
void ck__conns_stats(struct ck__conns *c, struct ck__conns_stats *ret);

/* ---- TLS, authentication, authorization (authn_authz.c) --------------------- */

struct ck_apiserver_config;
struct ck__auth;

/* The PKI and credentials of config; sets server->auth unless TLS is off. */
int ck__auth_init(struct ck_apiserver *server, const struct ck_apiserver_config *config,
                  const char *listen_host, struct ck_err *reterr);
/* Writes the missing bootstrap RBAC objects and compiles the first policy. */
int ck__auth_bootstrap(struct ck_apiserver *server, struct ck_err *reterr);
void ck__auth_free(struct ck__auth *auth);
/* PEM texts of the serving certificate, its key and the client CA (NULL without). */
const char *ck__auth_cert_pem(const struct ck__auth *auth);
const char *ck__auth_key_pem(const struct ck__auth *auth);
const char *ck__auth_client_ca_pem(const struct ck__auth *auth);
/* What the TLS session verifies client certificates against: the client CA, and the
   request-header CA when there is one. */
const char *ck__auth_trust_pem(const struct ck__auth *auth);
/* The generated front proxy's client certificate (or, with key, its key), or NULL. */
const char *ck__auth_front_proxy_cert(const struct ck__auth *auth, bool key);
const struct ck_pki *ck__auth_pki(const struct ck__auth *auth);
/* The RBAC authorizer requests are decided with (NULL before bootstrap). */
struct ck_rbac_authorizer *ck__auth_authorizer(const struct ck__auth *auth);
/* An authentication.k8s.io/v1 UserInfo object of user; new reference, NULL when out of memory. */
json_t *ck__auth_user_info(const struct ck_auth_user *user);

/*
 * Authenticates one request (and applies impersonation). When *ret_answered is set,
 * the 401/403 Status has been queued (the return value is the answer's); else *ret_user
 * is the request's user (NULL without TLS), which the caller frees.
 */
enum ck__res ck__auth_authenticate(struct ck_apiserver *server, struct ck__req *req,
                                   struct ck_auth_user **ret_user, bool *ret_answered);
/*
 * Authorizes user's request (members of system:masters pass; RBAC, the node
 * authorizer). When *ret_answered is set, the 403 Status has been queued.
 */
enum ck__res ck__auth_authorize(struct ck_apiserver *server, struct ck__req *req,
                                const char *method, const char *url,
                                const struct ck_auth_user *user, bool *ret_answered);
/*
 * The same decision on a resource request made without HTTP (an in-process list or
 * watch, local.c): user's verb on t. 0 when allowed, else CK_EPERM with the 403
 * Forbidden Status in *err, worded as the HTTP answer.
 */
int ck__auth_authorize_target(struct ck_apiserver *server, const struct ck_auth_user *user,
                              const char *verb, const struct ck__target *t, struct ck_err *err);
/* Kubernetes' RequestInfo verb of a resource request (get, list, watch, create, ...). */
const char *ck__request_verb(struct ck__req *req, const char *method, const struct ck__target *t);

/* The node name of a node's identity (system:node:NAME in system:nodes), or NULL. */
const char *ck__auth_node_name(const struct ck_auth_user *user);

/*
 * The escalation check of a write (POST, PUT or PATCH; other methods pass) of
 * a role or binding: body is the new object, or the patch of the stored one.
 */
int ck__auth_check_write(struct ck_apiserver *server, const struct ck_auth_user *user,
                         const struct ck__target *t, const char *method, const char *content_type,
                         const char *body, size_t len, struct ck_err *reterr);

/*
 * A connection opened: the state the authenticator keeps for it (its
 * verified certificate), which ck__req_conn_state() gives back; NULL without
 * TLS or memory (the certificate is then verified at every request).
 */
void *ck__auth_conn_opened(struct ck_apiserver *server);
/* The connection closed: its state goes (NULL: nothing). */
void ck__auth_conn_closed(void *state);

/*
 * Answers what is not stored but computed from the request's user: POST
 * serviceaccounts/NAME/token (TokenRequest) and the create-only reviews
 * (SelfSubjectReview, TokenReview, SubjectAccessReview,
 * SelfSubjectAccessReview, SelfSubjectRulesReview). Returns false when t is
 * none of them; else *ret is the queued answer.
 */
bool ck__auth_serve(struct ck_apiserver *server, struct ck__req *req, const char *method,
                    const struct ck__target *t, const struct ck_auth_user *user, const char *body,
                    size_t len, enum ck__res *ret);

/* Rebuilds the RBAC policy from the store after a write of one of its kinds. */
void ck__auth_rbac_changed(struct ck_apiserver *server);

/* The WatchList gate: may watches ask for sendInitialEvents? (features.c) */
bool ck__watch_list_enabled(const struct ck_apiserver *server);
/* The gated API fields' question, "is this gate on?", with ctx the server. Lock-free. */
bool ck__feature_enabled(void *ctx, const char *feature);
/* CK_EINVAL unless every gate of ck_api_features() is registered in gates. */
int ck__check_api_features(const struct ck_fg_gate *gates, struct ck_err *reterr);

/* ---- request helpers and responses (request.c) ---------------------------- */

enum ck__accept {
    CK__ACCEPT_JSON,
    CK__ACCEPT_TABLE,        /* application/json;as=Table;v=v1;g=meta.k8s.io */
    CK__ACCEPT_PARTIAL,      /* application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1 */
    CK__ACCEPT_PARTIAL_LIST, /* application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1 */
    CK__ACCEPT_PROTOBUF,     /* application/vnd.kubernetes.protobuf (protobuf.c) */
    CK__ACCEPT_NONE,         /* nothing we can produce: 406 */
};

/* ---- wire formats (media.c) ------------------------------------------------ */

/*
 * One wire format: a row of media.c's table. encode turns an answer built as
 * JSON (json, taken: freed or kept in *ret) into the format, pretty or not;
 * decode turns a request body into JSON text (NULL: the body is JSON).
 */
struct ck__codec {
    const char *media_type; /* "application/json" */
    bool streams;           /* can carry a watch stream */
    int (*encode)(char *json, size_t len, bool pretty, char **ret, size_t *ret_len);
    int (*decode)(const char *body, size_t len, char **ret_json, size_t *ret_len,
                  struct ck_err *reterr);
};

/* What a request's Accept asks for. */
struct ck__media {
    const struct ck__codec *codec; /* NULL: nothing we produce (406) */
    enum ck__accept shape;         /* CK__ACCEPT_NONE with a NULL codec */
    bool pretty;                   /* indented JSON */
};

/* The JSON row: what a missing Accept or Content-Type means. */
const struct ck__codec *ck__codec_json(void);

/* The row of a request body's Content-Type (NULL or "": JSON), or NULL for none (415). */
const struct ck__codec *ck__codec_for_content_type(const char *content_type);

/*
 * Reads an Accept header (NULL: none): the first entry the server can answer
 * picks the codec and, by its as=/g=/v= parameters, the shape. pretty is set
 * by a `pretty=1` parameter only.
 */
void ck__media_negotiate_accept(const char *accept, struct ck__media *ret);

/* The same for a request, pretty also by ?pretty= or the User-Agent (curl, Wget, Mozilla/). */
void ck__media_negotiate(struct ck__req *req, struct ck__media *ret);

/*
 * Whether an API object answered to this request goes out as compact JSON:
 * its bytes as they are and a line break (not YAML, not indented).
 */
bool ck__media_compact_json(struct ck__req *req);

/*
 * What the client accepts: a Table, PartialObjectMetadata (or its List), a
 * plain object, or nothing we produce (CK__ACCEPT_NONE).
 */
enum ck__accept ck__negotiate(struct ck__req *req);

/*
 * True when some Accept entry names a format with stream framing (JSON): a
 * watch is answered in it, skipping earlier YAML entries as Kubernetes'
 * stream negotiation does; false makes a watch a 406.
 */
bool ck__media_can_stream(struct ck__req *req);

/* The media types served ("application/json, application/yaml"), streaming ones only if asked. */
size_t ck__media_types(bool streaming, char *buf, size_t size);

/* The same, with application/vnd.kubernetes.protobuf last when protobuf (a kind that has it). */
size_t ck__media_types_for(bool streaming, bool protobuf, char *buf, size_t size);

/*
 * Turns an answer (body, taken) whose content_type starts with
 * application/json into the request's negotiated format: *ret_body (caller
 * frees), its length, and the Content-Type to send in ret_type. Other
 * content types pass unchanged. 0, or CK_ENOMEM (body freed).
 */
int ck__media_encode(struct ck__req *req, const char *content_type, char *body, size_t len,
                     char **ret_body, size_t *ret_len, char *ret_type, size_t type_size);

/* 415 as Kubernetes words it, naming the media types bodies may be sent in. */
int ck__err_unsupported_media(struct ck_err *reterr);

/* The same for a kind that also takes protobuf bodies (protobuf true). */
int ck__err_unsupported_media_for(struct ck_err *reterr, bool protobuf);

/*
 * A create or update body in the request's Content-Type as JSON: *ret_json
 * (caller frees) when it had to be converted, NULL when the body is JSON
 * already (or protobuf, which the handler decodes). 415 for a type nobody
 * decodes (naming protobuf when kind, which may be NULL, takes it), 400 for a
 * body that is not YAML.
 */
int ck__media_decode_body(struct ck__req *req, const struct ck_kind *kind, const char *body,
                          size_t len, char **ret_json, size_t *ret_len, struct ck_err *reterr);

/*
 * 400 as kube-apiserver answers a JSON body that is not JSON at all (a YAML
 * file sent without its Content-Type): "the object provided is unrecognized
 * (must be of type Kind): couldn't get version/kind; json parse error: ..."
 * with the summary of the body. 0 when the body starts like JSON.
 */
int ck__media_check_json(const char *kind_name, const char *body, size_t len,
                         struct ck_err *reterr);

/*
 * ck__negotiate for an answer about kind: CK__ACCEPT_PROTOBUF only when the kind has a
 * protobuf message (a custom resource has none, so a protobuf entry is
 * passed over, as Kubernetes' negotiation does).
 */
enum ck__accept ck__negotiate_kind(struct ck__req *req, const struct ck_kind *kind);

/* ---- protobuf (protobuf.c) ------------------------------------------------ */

/* True when a Content-Type is application/vnd.kubernetes.protobuf (with or without parameters). */
bool ck__is_proto_media_type(const char *content_type);

/*
 * A request body in protobuf as the JSON text of the same object of schema
 * (the caller frees *ret_json): 415 when schema has no protobuf message (a
 * custom resource), 400 on bad data.
 */
int ck__proto_body_to_json(const char *schema, const char *body, size_t len, char **ret_json,
                           size_t *ret_len, struct ck_err *reterr);

/*
 * A JSON answer (an object, a list, a Status) in protobuf; the caller frees
 * *ret_data. json[len] must be readable: a NUL there (served bytes, jansson's
 * output) lets the encoding be cached by the text.
 */
int ck__json_to_proto(const char *json, size_t len, char **ret_data, size_t *ret_len,
                      struct ck_err *reterr);

/*
 * The protobuf list of kind (its list_kind's message) with resourceVersion
 * rv, continue_token (NULL: last page) and the n served objects items[i] of
 * item_lens[i] bytes (NUL-terminated), each encoded once through the cache.
 */
int ck__proto_list(const struct ck_kind *kind, const char *rv, const char *continue_token,
                   char *const *items, const size_t *item_lens, size_t n, char **ret_data,
                   size_t *ret_len, struct ck_err *reterr);

/*
 * Queues body (JSON, taken) as protobuf with status and warnings; a body
 * that has no protobuf form is answered with the Status of why.
 */
enum ck__res ck__send_proto(struct ck__req *req, unsigned status, char *body, size_t len,
                            const struct ck_warnings *warnings);

/*
 * The PartialObjectMetadata of obj: {"kind":"PartialObjectMetadata",
 * "apiVersion":"meta.k8s.io/v1","metadata":...}, sharing obj's metadata.
 * New reference, or NULL when out of memory.
 */
json_t *ck__partial_object(const json_t *obj);

/*
 * A PartialObjectMetadataList of the objects of items (a JSON array,
 * borrowed) with the list's resourceVersion rv and continue_token (NULL: the
 * last page). New reference, or NULL when out of memory.
 */
json_t *ck__partial_list(const json_t *items, const char *rv, const char *continue_token);

/* The PartialObjectMetadataList of a list's result at rv (new reference; NULL: no memory). */
json_t *ck__partial_list_of(const struct ck__list_result *result, const char *rv);

/*
 * 406 NotAcceptable as Kubernetes answers a PartialObjectMetadata asked of a
 * list, or a PartialObjectMetadataList of one object (of kind). Returns CK_EINVAL.
 */
int ck__err_partial_shape(struct ck_err *err, const struct ck_kind *kind, enum ck__accept accept);
const char *ck__query(struct ck__req *req, const char *name);
/* A boolean query parameter parsed as Go's ParseBool (true, True, 1, t ...). */
bool ck__query_bool(struct ck__req *req, const char *name);
/* Parses labelSelector and fieldSelector (400 on error); the caller frees both. */
int ck__parse_selectors(struct ck__req *req, const struct ck_kind *kind,
                        struct ck_label_selector **ret_labels,
                        struct ck_field_selector **ret_fields, struct ck_err *reterr);
/* The same from the selectors' text (NULL: everything), for in-process lists (local.c). */
int ck__parse_selector_text(const struct ck_kind *kind, const char *labels, const char *fields,
                            struct ck_label_selector **ret_labels,
                            struct ck_field_selector **ret_fields, struct ck_err *reterr);

/*
 * Queues body (len bytes; taken: freed here, also on failure) with status,
 * content_type and one Warning header per warning (NULL: none).
 */
enum ck__res ck__send_bytes(struct ck__req *req, unsigned status, const char *content_type,
                            char *body, size_t len, const struct ck_warnings *warnings);

/*
 * Queues a body of pieces (borrowed until release(arg), see ck__respond_pieces)
 * with status, content_type and the headers every API answer has; it goes as
 * it is (no negotiated encoding).
 */
enum ck__res ck__send_pieces(struct ck__req *req, unsigned status, const char *content_type,
                             const struct ck__piece *pieces, size_t n, void (*release)(void *),
                             void *arg);

/* Queues a JSON body (borrowed) with status. */
enum ck__res ck__send_json(struct ck__req *req, unsigned status, const char *json);

/*
 * Answers err as a Status with its HTTP code (500 when it has none). When
 * the Status cannot be rendered, answers the static 500 InternalError
 * Status. err is borrowed.
 */
enum ck__res ck__send_error(struct ck__req *req, const struct ck_err *err);

/* ck__send_error(), then ck_err_release(err). */
enum ck__res ck__fail(struct ck__req *req, struct ck_err *err);

/* The client certificate for node agents (podlog.c), from config or the PKI. */
int ck__kubelet_client_init(struct ck_apiserver *ctx, const struct ck_apiserver_config *config,
                            struct ck_err *reterr);
void ck__kubelet_client_free(struct ck_apiserver *ctx);
/*
 * The https://address:port of the agent of node_name (podlog.c): 0, or -1 with the
 * message of a 503 in msg.
 */
int ck__kubelet_base_url(struct ck_apiserver *ctx, const char *node_name, char *buf, size_t size,
                         char *msg, size_t msg_size);
/* Sets curl's TLS options for an agent: the client certificate, the CA or no check. */
void ck__kubelet_curl_tls(struct ck_apiserver *ctx, void *curl);
/* A stored object as JSON, or NULL with err set (podlog.c). */
json_t *ck__read_object(struct ck_apiserver *ctx, const struct ck_kind *kind, const char *ns,
                        const char *name, struct ck_err *err);

/* GET/POST pods/{name}/exec: kubectl's WebSocket relayed to the pod's node agent (exec.c). */
enum ck__res ck__serve_pod_exec(struct ck_apiserver *ctx, struct ck__req *req,
                                const struct ck__target *t);
/* GET/POST pods/{name}/attach: the same relay to the container's own stdio (exec.c). */
enum ck__res ck__serve_pod_attach(struct ck_apiserver *ctx, struct ck__req *req,
                                  const struct ck__target *t);

/* GET/POST pods/{name}/portforward: kubectl's SPDY streams relayed to the agent (portforward.c). */
enum ck__res ck__serve_pod_portforward(struct ck_apiserver *ctx, struct ck__req *req,
                                       const struct ck__target *t);

/* The node's InternalIP address, or NULL (podlog.c). */
const char *ck__node_internal_ip(const json_t *node);

/*
 * Asks the admission chain about a connect subresource of t (a CONNECT, as Kubernetes'
 * connect handler does before anything is looked up): 0, or a code with the answer in
 * *reterr (handlers.c).
 */
int ck__admit_connect(struct ck_apiserver *ctx, const struct ck__target *t, struct ck_err *reterr);

/*
 * A libcurl answer's body collected in memory (webhook_client.c): data (NUL-terminated,
 * the caller frees it) grows up to max bytes; beyond, too_big is set and the transfer
 * ends. ck__curl_body_write is the CURLOPT_WRITEFUNCTION, the struct its WRITEDATA.
 */
struct ck__curl_body {
    char *data;
    size_t len;
    size_t max;
    bool too_big;
};
size_t ck__curl_body_write(char *ptr, size_t size, size_t nmemb, void *arg);
/*
 * What every call of the server's to another server sets on a libcurl easy handle: the
 * protocols it may speak ("https", "http,https"), no signals, the request's header lines,
 * the answer's body into answer and curl's words for a failure into errbuf
 * (CURL_ERROR_SIZE bytes).
 */
struct curl_slist;
void ck__curl_setup(void *curl, const char *protocols, struct curl_slist *headers,
                    struct ck__curl_body *answer, char *errbuf);

/* ---- relaying a request to an upstream HTTP server (upstream_proxy.c) ---- */

/* How the upstream's certificate is trusted, and what the server presents to it. */
enum ck__upstream_trust {
    CK__UPSTREAM_NO_VERIFY, /* plain HTTP, or HTTPS not verified: pods and services */
    CK__UPSTREAM_KUBELET,   /* a node agent: the kubelet client certificate and CA */
    CK__UPSTREAM_CA_BUNDLE, /* ca_pem is the only trust (NULL: the system's CAs) */
};

/* Where a request goes and how; every string is borrowed for the call. */
struct ck__upstream {
    const char *url;    /* scheme://host[:port][/path], the path still percent-encoded */
    const char *query;  /* the client's raw query, or NULL */
    const char *prefix; /* the path the upstream's path is under for the client
                           ("/api/v1/nodes/n1/proxy"): X-Forwarded-Uri and Location */
    enum ck__upstream_trust trust;
    const char *ca_pem; /* CK__UPSTREAM_CA_BUNDLE: the PEM bundle (ca_len bytes) */
    size_t ca_len;
    const char *cert_file, *key_file; /* a client certificate to present (not to a
                                         kubelet: it has its own), or NULL */
    const char *resolve;              /* a libcurl --resolve entry "name:port:address", or NULL */
    const char *const *headers;       /* NULL-terminated "Name: value" lines to add, or NULL */
    /*
     * As a front proxy (aggregation): the client's X-Remote-User, X-Remote-Group and
     * X-Remote-Extra-* are dropped (headers carries the server's) and Host is the
     * upstream's, not the client's.
     */
    bool front_proxy;
};

/*
 * Relays the client's request (method, its header fields but the hop-by-hop ones and its
 * credentials, body[0..len)) to u and answers with the upstream's status, fields and
 * body; an upstream that cannot be reached, or answers beyond the limits, is 503
 * ServiceUnavailable "error trying to reach service: ...".
 */
enum ck__res ck__upstream_serve(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                                const char *body, size_t len, const struct ck__upstream *u);
/* Whether a field of the client's request, or of the upstream's answer, is passed on. */
bool ck__upstream_forwards_request_header(const char *name, bool front_proxy);
bool ck__upstream_forwards_response_header(const char *name);
/*
 * A redirect's Location as the client should follow it: when it points at the upstream
 * (host:port upstream, or the request's own host request_host) or is an absolute path,
 * the same path under prefix (unless already there) with its query. 0 with buf, or
 * CK_EINVAL to leave it as it is (another host, a relative reference, no room).
 */
int ck__upstream_location(const char *location, const char *upstream, const char *request_host,
                          const char *prefix, char *buf, size_t size);

/* ---- APIService aggregation (aggregator.c) ---- */

struct ck__aggregator;

/* True when some kind is served in group/version (the server's own, not an APIService's). */
bool ck__serves_group_version(const char *group, const char *version);
/*
 * True for a built-in group/version an APIService with a service takes over (routed to
 * that service while it names one): metrics.k8s.io/v1beta1.
 */
bool ck__replaceable_group_version(const char *group, const char *version);

/* What a path under /apis/<group>/<version> of a group/version no kind serves names. */
struct ck__aggregated_request {
    char group[64];
    char version[32];
    char namespace[64];
    char resource[64]; /* "" for the group/version's discovery document */
    char name[254];
    char subresource[32];
};

/*
 * Parses url (decoded, no query) as apiserver's RequestInfoFactory would a resource
 * path of a group/version the server does not serve itself (or may hand to an
 * APIService: ck__replaceable_group_version): 0 and *ret, or CK_ENOENT (not under
 * /apis/<group>/<version>, or a group/version some kind serves).
 */
int ck__aggregated_path(const char *url, struct ck__aggregated_request *ret);

/*
 * Starts the APIService controller: the local APIServices of the served groups, the
 * availability checks of the remote ones and their discovery (a thread of its own).
 * cert_file/key_file: the front-proxy client certificate (--proxy-client-cert-file,
 * --proxy-client-key-file), or both NULL. 0, CK_EINVAL or CK_ENOMEM.
 */
int ck__aggregator_start(struct ck_apiserver *server, const char *cert_file, const char *key_file,
                         struct ck_err *reterr);
/* Stops the thread and frees server->aggregator (no-op when it never started). */
void ck__aggregator_stop(struct ck_apiserver *server);
/*
 * Relays a request under /apis/<group>/<version> of a remote APIService to its Service,
 * as user: true with *ret the answer; false when the path is not aggregated.
 */
bool ck__aggregator_serve(struct ck_apiserver *server, struct ck__req *req, const char *method,
                          const char *body, size_t len, const char *raw_uri, const char *url,
                          const struct ck_auth_user *user, enum ck__res *ret);
/*
 * Adds the remote APIServices' groups to an APIGroupList (doc, taken and returned), and
 * their resources to an APIGroupDiscoveryList's items (the backends' last lists).
 */
json_t *ck__aggregator_api_groups(struct ck_apiserver *server, json_t *doc);
json_t *ck__aggregator_discovery(struct ck_apiserver *server, json_t *doc);

/* ---- pods/proxy, services/proxy, nodes/proxy (proxy.c) ---- */

/* The name segment of a proxy path: `name`, `name:port`, `scheme:name:port`. */
struct ck__proxy_id {
    char scheme[8]; /* "", "http", "https" */
    char name[254];
    char port[64]; /* "" when none was given */
};
/* apimachinery's SplitSchemeNamePort: 0, or CK_EINVAL (400 "invalid pod request"). */
int ck__proxy_split_id(const char *id, struct ck__proxy_id *ret);
/* Go's IsGlobalUnicast on an address's text (IsProxyableIP): false for NULL. */
bool ck__proxy_ip_allowed(const char *ip);
/*
 * The base URL ("http://10.0.0.5:8080") a pod, a service (with the namespace's
 * EndpointSlices, a JSON array; seed picks the slice and endpoint) or a node is proxied
 * to. 0, or a code with Kubernetes' answer in *reterr. For a node, *ret_kubelet says
 * whether the URL is the agent's own (HTTPS with the kubelet client certificate).
 */
int ck__proxy_pod_location(const json_t *pod, const struct ck__proxy_id *id, char *buf, size_t size,
                           struct ck_err *reterr);
int ck__proxy_service_location(const json_t *svc, const json_t *slices, const char *raw_id,
                               const struct ck__proxy_id *id, unsigned seed, char *buf, size_t size,
                               struct ck_err *reterr);
int ck__proxy_node_location(const json_t *node, const struct ck__proxy_id *id, char *buf,
                            size_t size, bool *ret_kubelet, struct ck_err *reterr);
/*
 * Any request to pods|services|nodes/{name}/proxy[/{path}]: admitted, resolved and relayed
 * (raw_uri: the target as the client sent it, where the proxied path is taken from).
 */
enum ck__res ck__serve_proxy(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                             const char *body, size_t len, const char *raw_uri,
                             const struct ck__target *t);

/* ---- the streaming leg to a node agent (agentleg.c) ---- */

/*
 * One streaming exchange with a node agent, as exec and port-forward use it: a GET whose
 * answer is read from ck__leg_out_fd() and a POST whose chunked upload is what is written
 * to ck__leg_in_fd(); closing the input ends the upload (and the session on the agent).
 * Both run on threads of their own with the kubelet client certificate.
 */
struct ck__leg;

/*
 * Starts the GET of out_url and waits for its status. 200: 0 and *ret (the caller's
 * reference, ck__leg_close). Else the leg is gone and the code says why: CK_EIO (no
 * answer; msg says curl's words) or CK_EINVAL (another status in *ret_status, the first
 * line of its body in msg).
 */
int ck__leg_open(struct ck_apiserver *ctx, const char *out_url, struct ck__leg **ret,
                 long *ret_status, char *msg, size_t size);
/* Starts the POST of in_url. 0, or CK_ENOMEM (the leg stays the caller's to close). */
int ck__leg_start_input(struct ck_apiserver *ctx, struct ck__leg *l, const char *in_url);
/* The answer's bytes (a pipe's read end; EOF at the answer's end) and the upload's. */
int ck__leg_out_fd(const struct ck__leg *l);
int ck__leg_in_fd(const struct ck__leg *l);
/* Ends the upload: closes the input's write end (idempotent). */
void ck__leg_end_input(struct ck__leg *l);
/* Closes both ends and drops the caller's reference; NULL is a no-op. */
void ck__leg_close(struct ck__leg *l);
/*
 * The pod of t (the caller decrefs it) with its spec.nodeName ("" none) into node_name,
 * for a streaming subresource; NULL when it cannot be read, *ret_failed then being the
 * Status answered (404 for no pod).
 */
json_t *ck__read_pod(struct ck_apiserver *ctx, struct ck__req *req, const struct ck__target *t,
                     char *node_name, size_t size, enum ck__res *ret_failed);
/* A random session id: 32 hex digits and NUL into id[33]. 0, or CK_EIO. */
int ck__leg_session_id(char id[33]);
/* Sec-WebSocket-Accept of key (RFC 6455 4.2.2); false when it cannot be made. */
bool ck__ws_accept_key(const char *key, char *out, size_t size);
/* wslay's recv and send callbacks on the upgraded socket; user data: a struct whose first
 * member is its struct ck__upgraded. */
ssize_t ck__ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *arg);
ssize_t ck__ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                    void *arg);
/* Whether header name of the request contains token (case-insensitive). */
bool ck__header_has(struct ck__req *req, const char *name, const char *token);

/* ---- SPDY/3.1 framing (spdy.c) ---- */

#define CK_SPDY_FRAME_MAX    (1024 * 1024) /* a frame's payload we take or write */
#define CK_SPDY_HEADERS_MAX  (64 * 1024)   /* a header block, inflated */
#define CK_SPDY_HEADER_PAIRS 64            /* name/value pairs in a block */
#define CK_SPDY_RX_SLACK     (64 * 1024)   /* buffered beyond one whole frame */
#define CK_SPDY_DICT_LEN     1423
enum {
    CK_SPDY_SYN_STREAM = 1,
    CK_SPDY_SYN_REPLY = 2,
    CK_SPDY_RST_STREAM = 3,
    CK_SPDY_SETTINGS = 4,
    CK_SPDY_PING = 6,
    CK_SPDY_GOAWAY = 7,
    CK_SPDY_HEADERS = 8,
    CK_SPDY_WINDOW_UPDATE = 9,
};
#define CK_SPDY_FLAG_FIN            0x01
#define CK_SPDY_FLAG_UNIDIRECTIONAL 0x02
#define CK_SPDY_PROTOCOL_ERROR      1 /* RST_STREAM and GOAWAY statuses */
#define CK_SPDY_INVALID_STREAM      2
#define CK_SPDY_REFUSED_STREAM      3
#define CK_SPDY_CANCEL              5
#define CK_SPDY_INTERNAL_ERROR      6

/*
 * A frame as ck__spdy_next() read it; its pointers stay valid until the session's next
 * call. stream: of DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE, and
 * GOAWAY's last good stream. value: RST_STREAM's and GOAWAY's status, PING's id,
 * WINDOW_UPDATE's delta, SETTINGS' entry count (its entries in data). data/len: DATA's
 * payload (len is also every frame's payload length). headers: SYN_STREAM, SYN_REPLY
 * and HEADERS, NUL-terminated.
 */
struct ck__spdy_frame {
    bool control;
    unsigned type, flags, priority;
    uint32_t stream, assoc, value;
    const unsigned char *data;
    size_t len;
    size_t n_headers;
    struct {
        const char *name, *value;
        size_t value_len;
    } headers[CK_SPDY_HEADER_PAIRS];
};

/* One session's framing state: a zlib stream each way, the bytes not yet a frame. */
struct ck__spdy {
    z_stream in, out;
    unsigned char dict[CK_SPDY_DICT_LEN];
    size_t dict_len;
    struct ck__buf rx;
    size_t consume; /* the last frame's bytes, dropped at the next call */
    unsigned char *block;
    char *text;
};

/* The SPDY/3 header dictionary into out (when it fits): its length. */
size_t ck__spdy_dictionary(unsigned char *out, size_t size);
/* 0, or CK_ENOMEM; release it with ck__spdy_release() either way after 0. */
int ck__spdy_init(struct ck__spdy *s);
void ck__spdy_release(struct ck__spdy *s);
/* Takes up to n received bytes: how many it took (fewer when a frame must be read first). */
size_t ck__spdy_feed(struct ck__spdy *s, const void *data, size_t n);
/* The next whole frame: 1 and *f, 0 (more bytes needed), or CK_EINVAL/CK_ENOMEM: the end. */
int ck__spdy_next(struct ck__spdy *s, struct ck__spdy_frame *f);
/* The value of header name in f, or NULL. */
const char *ck__spdy_header(const struct ck__spdy_frame *f, const char *name);
/* Frames appended to b: 0, or b's error (CK_EINVAL: a payload past CK_SPDY_FRAME_MAX). */
int ck__spdy_put_data(struct ck__buf *b, uint32_t stream, unsigned flags, const void *data,
                      size_t n);
/* SYN_STREAM (priority 0, no associated stream), SYN_REPLY or HEADERS with n_pairs pairs
 * (pairs[2i] the lowercase name, pairs[2i+1] the value). */
int ck__spdy_put_headers(struct ck__spdy *s, struct ck__buf *b, unsigned type, unsigned flags,
                         uint32_t stream, const char *const *pairs, size_t n_pairs);
int ck__spdy_put_rst_stream(struct ck__buf *b, uint32_t stream, uint32_t status);
int ck__spdy_put_ping(struct ck__buf *b, uint32_t id);
int ck__spdy_put_goaway(struct ck__buf *b, uint32_t last_good, uint32_t status);

/* ---- metrics.k8s.io (metrics_api.c) ---- */

/* One container's samples in an agent's /metrics/resource (times in ms since the epoch). */
struct ck__ctr_sample {
    char *ns, *pod, *name;
    bool has_cpu, has_memory;
    double cpu_s; /* cumulative CPU, core-seconds */
    int64_t cpu_ms;
    double memory; /* working set, bytes */
    int64_t memory_ms;
    double start_s; /* its start, seconds since the epoch; 0 unknown */
};

/* What one scrape of a node's /metrics/resource gave. */
struct ck__node_scrape {
    bool has_cpu, has_memory;
    double cpu_s;
    int64_t cpu_ms;
    double memory;
    int64_t memory_ms;
    struct ck__ctr_sample *c; /* containers, in the order first seen */
    size_t n, cap;
};

/*
 * Reads kubelet's /metrics/resource text (len bytes): the node's and the containers'
 * samples; other families, comments and lines that are not samples are passed over.
 * 0 and *ret (release it), or CK_ENOMEM.
 */
int ck__metrics_scrape_parse(const char *text, size_t len, struct ck__node_scrape *ret);
void ck__node_scrape_release(struct ck__node_scrape *s);

/*
 * The NodeMetrics of node name (its labels) from two scrapes, metrics-server's: the CPU
 * rate between them, the newer working set; NULL when there is no rate (a sample
 * missing, no time between them, CPU went down) or out of memory. now_ms: its
 * creationTimestamp.
 */
json_t *ck__node_metrics_object(const char *name, const json_t *labels,
                                const struct ck__node_scrape *prev,
                                const struct ck__node_scrape *cur, int64_t now_ms);

/*
 * The PodMetrics of pod ns/name from two scrapes of its node: each container's rate
 * (from its start when prev lacks it or it restarted), the pod's timestamp and window its
 * earliest container's; NULL when the pod is not in cur, a container cannot be measured,
 * or out of memory.
 */
json_t *ck__pod_metrics_object(const char *ns, const char *name, const json_t *labels,
                               const struct ck__node_scrape *prev,
                               const struct ck__node_scrape *cur, int64_t now_ms);

/* Quantities as Kubernetes' canonical forms write them: nanocores (DecimalSI), bytes (BinarySI). */
void ck__quantity_nanocores(uint64_t v, char *buf, size_t size);
void ck__quantity_bytes(uint64_t v, char *buf, size_t size);
/* ms as Go's time.Duration.String() writes it ("1.5s", "1m0.25s", "250ms"). */
void ck__go_duration_ms(int64_t ms, char *buf, size_t size);

struct ck__metrics_api;
struct ck__metrics_api *ck__metrics_api_new(void);
struct ck__metrics_api *ck__metrics_api_free(struct ck__metrics_api *m);

/*
 * Serves a request for metrics.k8s.io (any other group: false, nothing done): get and
 * list of NodeMetrics and PodMetrics, other verbs 405.
 */
bool ck__metrics_api_serve(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                           const struct ck__target *t, enum ck__res *ret);

/* GET pods/{name}/log: proxied to the pod's node agent (podlog.c). */
enum ck__res ck__serve_pod_log(struct ck_apiserver *ctx, struct ck__req *req,
                               const struct ck__target *t);

/* Answers a Status with reason and a message (no details). */
enum ck__res ck__fail_with(struct ck__req *req, const char *reason, const char *message);

/* Answers 500 InternalError "Internal error occurred: out of memory". */
enum ck__res ck__fail_no_memory(struct ck__req *req);

/* ---- the request worker threads (workers.c) ------------------------------ */

/* A job, embedded in what it works on; run() is called once, on a worker. */
struct ck__work {
    struct ck__work *next;
    void (*run)(struct ck__work *job);
};

struct ck__workers;

/*
 * A pool of at most `threads` workers, started as jobs need them (none yet);
 * NULL with err set when out of memory.
 */
struct ck__workers *ck__workers_start(unsigned threads, struct ck_err *err);

/*
 * Queues job for the next free worker, starting one when none is idle and the
 * pool has room. False once the pool is stopping, or when it has no thread
 * and none could start: the caller runs the job itself.
 */
bool ck__workers_submit(struct ck__workers *w, struct ck__work *job);

/* How many worker threads have started (for tests). */
unsigned ck__workers_threads(struct ck__workers *w);

/*
 * Runs every job still queued and joins the threads; jobs submitted from
 * then on are refused (their callers run them). w NULL: nothing.
 */
void ck__workers_stop(struct ck__workers *w);

/* Frees a stopped pool (NULL: nothing). */
void ck__workers_free(struct ck__workers *w);

/* ---- handlers (handlers.c) ---------------------------------------------- */

/* Serves one request on a resource path (everything but watches' streaming). */
enum ck__res ck__serve_resource(struct ck_apiserver *server, struct ck__req *req,
                                const char *method, const struct ck__target *t, const char *body,
                                size_t len);

/* ---- watches (watch.c) ---------------------------------------------------- */

/*
 * What one watcher sees of a collection, whether it is an HTTP stream (watch.c) or an
 * in-process watch (local.c): the kind watched, its selectors (NULL: everything; owned
 * by the watcher) and whether it takes bookmarks.
 */
struct ck__watch_view {
    struct ck_apiserver *server;
    const struct ck_kind *kind;
    struct ck_label_selector *labels;
    struct ck_field_selector *fields;
    bool bookmarks;
};

/*
 * Where a watcher's events go. object: an event of kv (borrowed for the call), already
 * in the version watched, at revision; bookmark: a progress notice at revision; fail:
 * the watch is over, with err sent to the client as an ERROR event when send is set
 * (compaction, the store, no memory), or just ended (a conversion webhook that failed,
 * already logged).
 */
struct ck__watch_sink {
    void (*object)(void *arg, const char *type, const struct ck_kv *kv, int64_t revision);
    void (*bookmark)(void *arg, int64_t revision);
    void (*fail)(void *arg, const struct ck_err *err, bool send);
};

/*
 * Turns one store event into what v's watcher gets (ADDED, MODIFIED, or DELETED for an
 * object that left its selection; a bookmark when asked; a failure), as kube-apiserver's
 * cacher filters events per watcher.
 */
void ck__watch_event(const struct ck__watch_view *v, const struct ck_store_event *ev,
                     const struct ck__watch_sink *sink, void *arg);

/*
 * The initial ADDED events of a watch from resourceVersion "" or "0": a list of the
 * collection in namespace ("" : all) at the current revision, which *ret_revision gets.
 */
int ck__watch_initial(const struct ck__watch_view *v, const char *namespace,
                      const struct ck__watch_sink *sink, void *arg, int64_t *ret_revision,
                      struct ck_err *reterr);

/*
 * The revision a watch's resourceVersion rv asks for: 0 for NULL, "" or "0" (the
 * current state first), else the number; 400 for one that is not a number, 504 for
 * one the store has not reached.
 */
int ck__watch_start(struct ck_apiserver *server, const char *rv, int64_t *ret_start,
                    struct ck_err *reterr);

/*
 * The decoded object of an event of kv as a watcher gets it: defaults applied, in the
 * version watched, with resourceVersion revision. A new reference, or NULL (no memory).
 */
json_t *ck__watch_served_object(const struct ck_kind *kind, const struct ck_kv *kv,
                                int64_t revision);

/*
 * A BOOKMARK event's object: kind's apiVersion and kind (PartialObjectMetadata's with
 * partial) with only metadata.resourceVersion, and the initial-events-end annotation
 * with initial_end. A new reference, or NULL when out of memory.
 */
json_t *ck__watch_bookmark(const struct ck_kind *kind, int64_t revision, bool initial_end,
                           bool partial);

enum ck__res ck__serve_watch(struct ck_apiserver *server, struct ck__req *req,
                             const struct ck__target *t);

/*
 * Ends watches past their deadline or whose client vanished, and asks for
 * bookmarks; with stopping, ends every watch (server shutdown). Called by
 * the server's ticker thread about once a second.
 */
void ck__watch_tick(struct ck_apiserver *server, bool stopping);

#endif /* CKUBE_APISERVER_INTERNAL_H */
