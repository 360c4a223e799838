/*
 * ckube/api.h - Kubernetes API machinery without I/O: field errors, name and
 * label validation, label and field selectors, schemas, the registry of kinds
 * and their descriptors, ObjectMeta and strategies, Tables, patches,
 * discovery and OpenAPI, managedFields and server-side apply
 * (docs/internals/api.md).
 *
 * Objects are jansson values (json_t) holding the Kubernetes JSON form of an
 * object. Functions here never mutate objects they are given as const and
 * never keep references to them unless they say so.
 *
 * Mirrors k8s.io/apimachinery: pkg/util/validation (names, labels),
 * pkg/util/validation/field (ErrorList), pkg/labels (label selectors) and
 * pkg/fields (field selectors). Error texts follow theirs where users see them.
 */
#ifndef CKUBE_API_H
#define CKUBE_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckube/util.h"

/* ---- field errors (apimachinery field.ErrorList) ------------------------ */

enum ck_field_error_type {
    CK_FIELD_INVALID,       /* FieldValueInvalid: Invalid value */
    CK_FIELD_REQUIRED,      /* FieldValueRequired: Required value */
    CK_FIELD_NOT_SUPPORTED, /* FieldValueNotSupported: Unsupported value */
    CK_FIELD_DUPLICATE,     /* FieldValueDuplicate: Duplicate value */
    CK_FIELD_FORBIDDEN,     /* FieldValueForbidden: Forbidden */
    CK_FIELD_TOO_LONG,      /* FieldValueTooLong: Too long */
    CK_FIELD_TYPE_INVALID,  /* FieldValueTypeInvalid: Invalid value (a value of the wrong type) */
    CK_FIELD_TOO_MANY,      /* FieldValueTooMany: Too many */
    CK_FIELD_NOT_FOUND,     /* FieldValueNotFound: Not found */
};

struct ck_field_error {
    enum ck_field_error_type type;
    char *field;  /* JSON path as Kubernetes prints it: spec.containers[0].name */
    char *value;  /* the offending value rendered as Go's %v/%q would, or NULL */
    char *detail; /* why, or NULL */
};

/* A growable list of field errors; zero-initialise, then ck_field_errors_release(). */
struct ck_field_errors {
    struct ck_field_error *items;
    size_t len;
    size_t cap;
    bool nomem; /* an error, or a part of one, could not be stored: answer CK_ENOMEM */
};

/*
 * Appends one error. value is rendered quoted when value_is_string, as
 * Kubernetes prints string values ("Invalid value: \"Foo\""); NULL value
 * omits it. Allocation failure drops the error, or the part of it that
 * could not be copied, and sets nomem: the list no longer says what is
 * wrong, and its owner answers out of memory.
 */
void ck_field_errors_add(struct ck_field_errors *errs, enum ck_field_error_type type,
                         const char *field, const char *value, bool value_is_string,
                         const char *detail_fmt, ...) __attribute__((format(printf, 6, 7)));

void ck_field_errors_release(struct ck_field_errors *errs);

/* The StatusCause reason for a type: "FieldValueInvalid", "FieldValueRequired", ... */
const char *ck_field_error_reason(enum ck_field_error_type type);

/*
 * Renders one error as Kubernetes does: `spec.replicas: Invalid value: -1:
 * must be greater than or equal to 0`. Caller frees.
 */
char *ck_field_error_string(const struct ck_field_error *e);

/* ---- names and labels (apimachinery pkg/util/validation) ---------------- */

/*
 * Each returns true when valid; when not, and errs is not NULL, adds one
 * error per violated rule under `field` with Kubernetes' wording.
 */
bool ck_validate_dns1123_label(const char *value, const char *field, struct ck_field_errors *errs);
bool ck_validate_dns1123_subdomain(const char *value, const char *field,
                                   struct ck_field_errors *errs);
bool ck_validate_qualified_name(const char *value, const char *field, struct ck_field_errors *errs);
bool ck_validate_label_value(const char *value, const char *field, struct ck_field_errors *errs);

/* ---- label selectors (apimachinery pkg/labels) -------------------------- */

struct ck_label_selector;

/*
 * Parses the string form (`app=web,tier in (fe,be),!canary`). The empty
 * string is the selector that matches everything. On error returns CK_EINVAL
 * with a message starting "unable to parse requirement: " (for the API's 400
 * BadRequest) and sets nothing. The caller frees the result.
 */
int ck_label_selector_parse(const char *text, struct ck_label_selector **ret_selector,
                            struct ck_err *reterr);

/*
 * Builds a selector from a metav1.LabelSelector object ({matchLabels,
 * matchExpressions: [{key, operator: In|NotIn|Exists|DoesNotExist, values}]}).
 * NULL or {} matches everything, as in Kubernetes' LabelSelectorAsSelector.
 */
int ck_label_selector_from_object(const json_t *selector, struct ck_label_selector **ret_selector,
                                  struct ck_err *reterr);

/* True when labels (a JSON object of strings, or NULL for none) satisfy every requirement. */
bool ck_label_selector_matches(const struct ck_label_selector *selector, const json_t *labels);

bool ck_label_selector_is_empty(const struct ck_label_selector *selector);

/* The canonical string form (`app=web,tier in (be,fe)`), sorted by key. Caller frees. */
char *ck_label_selector_string(const struct ck_label_selector *selector);

struct ck_label_selector *ck_label_selector_free(struct ck_label_selector *selector);

/* ---- field selectors (apimachinery pkg/fields) -------------------------- */

struct ck_field_selector;

/*
 * Parses `f=v,g!=w` (also `==`); `\,` `\=` `\\` escape inside values. The
 * empty string matches everything. Syntax errors return CK_EINVAL with the
 * reason; which field labels a kind supports is checked by
 * ck_field_selector_check_fields().
 */
int ck_field_selector_parse(const char *text, struct ck_field_selector **ret_selector,
                            struct ck_err *reterr);

/*
 * Checks every field the selector names against supported (a NULL-terminated
 * list). The first unsupported one fails with CK_EINVAL and the message
 * `field label not supported: <field>`.
 */
int ck_field_selector_check_fields(const struct ck_field_selector *selector,
                                   const char *const *supported, struct ck_err *reterr);

/*
 * Matches using get_field(field, obj, ctx, buf, size) to render the object's
 * value of a field label as a string (it may write into buf and return it;
 * NULL is treated as "").
 */
typedef const char *(*ck_field_getter)(const char *field, const json_t *obj, const void *ctx,
                                       char *buf, size_t buf_size);
bool ck_field_selector_matches(const struct ck_field_selector *selector, const json_t *obj,
                               ck_field_getter get_field, const void *ctx);

/*
 * If the selector pins field to one value with `=`/`==` (as
 * metadata.name=X does), returns that value (owned by the selector), else NULL.
 * Lets a list by name become a single-key read.
 */
const char *ck_field_selector_exact(const struct ck_field_selector *selector, const char *field);

bool ck_field_selector_is_empty(const struct ck_field_selector *selector);

struct ck_field_selector *ck_field_selector_free(struct ck_field_selector *selector);

/* ---- schemas (OpenAPI v3 components) ------------------------------------ */

/*
 * A set of named schemas in OpenAPI v3 form (the content of
 * `components.schemas`), from which decoding, pruning, defaulting and
 * validation are driven. The keywords understood are listed in
 * docs/internals/api-schemas.md; `$ref` is "#/components/schemas/<name>".
 * A set is immutable once built and may be shared between threads.
 */
struct ck_schemas;

/*
 * Builds a set from JSON documents, each an object of name -> schema. Fails
 * with CK_EINVAL when a document is not valid JSON, a name is defined twice or
 * a $ref does not resolve. The caller frees the set.
 */
int ck_schemas_new(const char *const *documents, size_t n_documents, struct ck_schemas **ret_set,
                   struct ck_err *reterr);

/*
 * A set of documents layered over parent (borrowed: it must outlive the set):
 * a name is looked up in the set, then in parent, so a custom resource's
 * schemas can $ref ObjectMeta without copying the built-in set. Names
 * defined in parent may not be defined again. As ck_schemas_new() otherwise.
 */
int ck_schemas_new_layered(const struct ck_schemas *parent, const char *const *documents,
                           size_t n_documents, struct ck_schemas **ret_set, struct ck_err *reterr);

/* The set a layered set lies over, or NULL. */
const struct ck_schemas *ck_schemas_parent(const struct ck_schemas *set);

struct ck_schemas *ck_schemas_free(struct ck_schemas *set);

/*
 * The schemas of every kind ckube serves (the JSON documents in lib/api/schemas, built into
 * the library). The caller frees the set.
 */
int ck_api_builtin_schemas(struct ck_schemas **ret_set, struct ck_err *reterr);

/* The schema called name, or NULL. Borrowed from the set. */
const json_t *ck_schemas_get(const struct ck_schemas *set, const char *name);

/* Every schema of the set itself (not its parent's), as OpenAPI serves them. Borrowed. */
const json_t *ck_schemas_all(const struct ck_schemas *set);

enum ck_field_validation {
    CK_FIELD_VALIDATION_STRICT, /* unknown or duplicate fields fail the request (400) */
    CK_FIELD_VALIDATION_WARN,   /* they are dropped with a warning */
    CK_FIELD_VALIDATION_IGNORE, /* they are dropped silently */
};

/* Parses a fieldValidation query value; NULL or "" is Warn, as in Kubernetes. */
int ck_field_validation_parse(const char *text, enum ck_field_validation *ret);

/* Warnings for the response's Warning headers; zero-initialise, then release. */
struct ck_warnings {
    char **items;
    size_t len;
};

void ck_warnings_add(struct ck_warnings *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ck_warnings_release(struct ck_warnings *w);

/*
 * json_loadb() that is whole or nothing when memory runs out: jansson's own parser can
 * return a value with a byte dropped, or call running out of memory a syntax error, so
 * any allocation failing on this thread during the parse (ck__alloc_failures()) makes
 * it CK_ENOMEM. flags as for json_loadb(). Returns 0 with *ret_json a new reference;
 * CK_EINVAL when jansson refuses the text, with jansson's message in *jerr; CK_ENOMEM
 * (code json_error_out_of_memory). jerr may be NULL.
 */
int ck_json_loadb(const char *text, size_t len, size_t flags, json_t **ret_json,
                  json_error_t *jerr);

/*
 * Decodes a request body against schema `name` the way Kubernetes' decoder
 * does: JSON syntax errors, values of the wrong type and (under Strict)
 * unknown or duplicate fields fail with CK_EINVAL and a message for a 400
 * BadRequest (`strict decoding error: unknown field "spec.foo"`, `json: cannot
 * unmarshal string into Go struct field DeploymentSpec.spec.replicas of type
 * int32`). null values are dropped (Go decodes them as absent); unknown fields
 * are dropped, with a warning under Warn. Times are normalised to UTC
 * (`2025-01-02T03:04:05Z`; MicroTime keeps microseconds). On success
 * *ret_obj is a new object the caller owns.
 */
int ck_schema_decode(const struct ck_schemas *set, const char *name, const char *body, size_t len,
                     enum ck_field_validation validation, json_t **ret_obj,
                     struct ck_warnings *warnings, struct ck_err *reterr);

/*
 * ck_schema_decode() of a document already parsed (obj, taken: on success it is
 * *ret_obj, decoded in place; on failure it is released). A tree has no duplicate
 * fields, so only types and unknown fields can fail.
 */
int ck_schema_decode_tree(const struct ck_schemas *set, const char *name, json_t *obj,
                          enum ck_field_validation validation, json_t **ret_obj,
                          struct ck_warnings *warnings, struct ck_err *reterr);

/*
 * Applies the schemas' `default` values to obj in place: an absent property
 * with a default gets a copy of it, then defaults apply inside it. Fields in
 * `x-ckube-always-emit` that are absent get their type's zero value.
 * Returns 0, or CK_ENOMEM with obj partly defaulted.
 */
int ck_schema_default(const struct ck_schemas *set, const char *name, json_t *obj);

/*
 * Validates what the schema states (required properties, enums, minimum and
 * maximum), adding 422-style field errors to errs under paths like
 * `spec.template.spec.containers[0].name`. Never mutates obj.
 */
void ck_schema_validate(const struct ck_schemas *set, const char *name, const json_t *obj,
                        struct ck_field_errors *errs);

/*
 * ck_schema_validate() of an update: for a kind marked
 * x-ckube-custom-resource, a value equal to the one at the same place in
 * old (object fields and map entries by name, list-type map elements by
 * their keys) keeps the OpenAPI errors it already had, as Kubernetes'
 * CRDValidationRatcheting (on by default in 1.32) lets an unchanged invalid
 * value through. old may be NULL (a create); built-in kinds ignore it.
 */
void ck_schema_validate_update(const struct ck_schemas *set, const char *name, const json_t *obj,
                               const json_t *old, struct ck_field_errors *errs);

/*
 * Checks a CustomResourceDefinition's openAPIV3Schema (schema, any JSON) as
 * apiextensions validates it: a structural schema (a type for every specified
 * field, no additionalProperties beside properties, consistent
 * x-kubernetes-* extensions, nothing but name and generateName under the
 * root's metadata), no unsupported keywords ($ref, definitions,
 * dependencies, additionalItems, patternProperties, ...), defaults that
 * validate and are pruned. Errors are appended under path (for instance
 * "spec.versions[0].schema.openAPIV3Schema") with Kubernetes' wording.
 * Side-effect free; never fails on any JSON (out of memory sets errs->nomem).
 */
void ck_crd_schema_check(const json_t *schema, const char *path, struct ck_field_errors *errs);

/* ---- feature-gated fields ----------------------------------------------- */

/*
 * Whether the feature gate `feature` is on; ctx is the caller's. Where a
 * function takes one as NULL, every gate is at its default (below).
 */
typedef bool (*ck_feature_enabled_fn)(void *ctx, const char *feature);

/* A feature gate the API's schemas name, as ckube's versioned feature list records it. */
struct ck_api_feature {
    const char *name;  /* "Frobber2D" */
    const char *stage; /* "ALPHA", "BETA", "" (GA) or "DEPRECATED" */
    bool default_on;
    const char *since; /* the version from which this stage holds: "1.32" */
};

/* The gates of the API: those every registered kind names, once each (valid until exit). */
const struct ck_api_feature *ck_api_features(size_t *ret_count);

/*
 * Drops from obj (of schema `name`) every field whose property names a gate
 * (x-ckube-feature-gate) that is off, unless old (NULL on create) already
 * uses that field at the same place: Kubernetes' "drop disabled fields on
 * create, keep them on update when in use". Returns 0, or CK_ENOMEM.
 */
int ck_schema_drop_disabled(const struct ck_schemas *set, const char *name, json_t *obj,
                            const json_t *old, ck_feature_enabled_fn enabled, void *ctx);

/*
 * Adds a NotSupported error for every string value that its schema gates
 * (x-ckube-feature-gated-values) behind a gate that is off, unless old
 * already had that value at the same place (ratcheting). Never mutates obj.
 */
void ck_schema_validate_gated_values(const struct ck_schemas *set, const char *name,
                                     const json_t *obj, const json_t *old,
                                     ck_feature_enabled_fn enabled, void *ctx,
                                     struct ck_field_errors *errs);

/* ---- pods (kubernetes pkg/api/v1/pod) ----------------------------------- */

/*
 * FindPort for a named port: the containerPort of the pod's container port called name
 * with protocol ("TCP" when a port has none), or 0 when no container has it.
 */
json_int_t ck_pod_find_port(const json_t *pod, const char *name, const char *protocol);

/* ---- kinds --------------------------------------------------------------- */

/* What a printing column's cell is when its json_path finds nothing (or an empty string). */
enum ck_cell_absent {
    CK_CELL_ABSENT_NULL,  /* a JSON null, as Kubernetes renders a custom resource's column */
    CK_CELL_ABSENT_NONE,  /* "<none>" */
    CK_CELL_ABSENT_EMPTY, /* "" */
    CK_CELL_ABSENT_ZERO,  /* 0, as a built-in kind's integer field without omitempty prints */
};

/*
 * A server-side printing column (metav1.TableColumnDefinition, and what a
 * CustomResourceDefinition's additionalPrinterColumns describe). A column
 * with a json_path is filled by ck_table_build() from the object alone: the
 * value at the path (a string column renders a number as its text), or the
 * age of the timestamp there when age is set or the type is "date". A column
 * without one is computed by the kind's cells hook.
 */
struct ck_table_column {
    const char *name;        /* "Ready"; kubectl upper-cases it */
    const char *type;        /* "string", "integer", "number", "boolean" or "date" */
    const char *format;      /* "name" for the name column, else "" */
    const char *description; /* one line */
    int priority;            /* 0: always shown; 1: with -o wide */
    const char *json_path;   /* ".metadata.name", ".spec.replicas"; NULL: computed */
    enum ck_cell_absent absent;
    bool age; /* the cell is the age at response time of the timestamp at json_path */
};

/* How a field label of a field selector reads the object. */
enum ck_field_label_type {
    CK_FIELD_LABEL_STRING, /* absent reads as "" */
    CK_FIELD_LABEL_BOOL,   /* "true" / "false"; absent reads as "false" */
    CK_FIELD_LABEL_INT,    /* decimal; absent reads as "0" */
};

struct ck_field_label {
    const char *label; /* as clients write it: "spec.nodeName", "source" */
    const char *path;  /* dotted JSON path in the object: "source.component"; NULL: computed */
    enum ck_field_label_type type;
};

/*
 * What a role-holding kind is to the server. Generic code that needs "the
 * kind namespaces are objects of" asks ck_kind_with_role() instead of naming
 * a kind.
 */
enum ck_kind_role {
    CK_KIND_ROLE_NONE,
    CK_KIND_ROLE_NAMESPACE, /* namespaced objects live in one of these; some are created at start */
    /* The four kinds RBAC policy is made of: the authorizer is rebuilt when one is written. */
    CK_KIND_ROLE_RBAC_ROLE,
    CK_KIND_ROLE_RBAC_CLUSTER_ROLE,
    CK_KIND_ROLE_RBAC_ROLE_BINDING,
    CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING,
    /* Objects that get cluster IPs and node ports, which the server allocates. */
    CK_KIND_ROLE_SERVICE,
    /* What node restriction holds a node agent to: its own Node, its Lease, its pods. */
    CK_KIND_ROLE_NODE,
    CK_KIND_ROLE_LEASE,
    CK_KIND_ROLE_POD,
    /* Data pods name; the node authorizer lets a node read the ones its own pods name. */
    CK_KIND_ROLE_SECRET,
    CK_KIND_ROLE_CONFIG_MAP,
    /* Pod priorities by name; the server creates the system- classes at start. */
    CK_KIND_ROLE_PRIORITY_CLASS,
    /* The identities pods run as: their tokens (TokenRequest) and the tokens' checks. */
    CK_KIND_ROLE_SERVICE_ACCOUNT,
    /* The metrics API's kinds: never stored, the server builds them from the nodes' stats. */
    CK_KIND_ROLE_NODE_METRICS,
    CK_KIND_ROLE_POD_METRICS,
    /* Requests for certificates; the certificate admission plugins guard their writes. */
    CK_KIND_ROLE_CERTIFICATE_SIGNING_REQUEST,
    /* Which server serves a group/version: the API server proxies the remote ones. */
    CK_KIND_ROLE_API_SERVICE,
    /*
     * ValidatingAdmissionPolicies and their bindings: writing a paramKind or a paramRef
     * needs the writer's get of the parameters.
     */
    CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY,
    CK_KIND_ROLE_VALIDATING_ADMISSION_POLICY_BINDING,
};

/* The rule metadata.name follows. */
enum ck_name_rule {
    CK_NAME_DNS_SUBDOMAIN, /* RFC 1123 subdomain: most kinds */
    CK_NAME_DNS_LABEL,     /* RFC 1123 label: namespaces */
    CK_NAME_PATH_SEGMENT,  /* any path segment (not . or .., no / or %): RBAC's system:... names */
};

/* The part of the object a subresource reads and writes. */
enum ck_subresource_part {
    CK_SUBRESOURCE_STATUS,   /* .status (and the metadata the kind does not keep) */
    CK_SUBRESOURCE_SCALE,    /* the autoscaling/v1 Scale view of .spec.replicas */
    CK_SUBRESOURCE_CUSTOM,   /* what the subresource's update hook computes */
    CK_SUBRESOURCE_UNSERVED, /* listed in discovery; every request answers 503 with message */
    CK_SUBRESOURCE_DELETE,   /* a create deletes the object with the body's deleteOptions */
};

/*
 * One subresource of a kind: its name, its verbs (as discovery lists them:
 * "get", "update", "patch", "create"; the server refuses the others with 405)
 * and the object it speaks when that is not the kind's own.
 */
struct ck_subresource {
    const char *name; /* "status", "scale", "finalize", "binding", "eviction", "log" */
    enum ck_subresource_part part;
    const char *const *verbs; /* NULL-terminated */
    const char *group;        /* of the object spoken, when not the kind's own: "autoscaling" */
    const char *version;      /* "v1" */
    const char *kind;         /* "Scale", "Binding"; NULL: the kind's own */
    const char *schema;       /* the spoken object's schema, when not the kind's own */
    /*
     * CK_SUBRESOURCE_CUSTOM: the new state of the object named name from the
     * request body and the stored object old (neither modified). Returns a
     * new reference, or NULL with *reterr: CK_EINVAL with errs filled (422),
     * CK_ECONFLICT with the reason in reterr->msg (409), anything else (500).
     */
    json_t *(*update)(const char *name, const json_t *body, const json_t *old,
                      struct ck_field_errors *errs, struct ck_err *reterr);
    /*
     * CK_SUBRESOURCE_CUSTOM: validates the defaulted result (obj) against the
     * stored object (old) in place of the kind's validate hook, as a
     * subresource strategy's ValidateUpdate replaces the object's (a pod's
     * ephemeralcontainers may change what a pod update may not). NULL: the
     * kind's validate hook runs.
     */
    void (*validate)(const json_t *obj, const json_t *old, struct ck_field_errors *errs);
    /*
     * The result goes straight to storage, as kube-apiserver's BindingREST writes a
     * binding (GuaranteedUpdate on the store): no defaults, no validation, no
     * managedFields entry; update() alone decides what is valid.
     */
    bool straight_to_storage;
    /*
     * CK_SUBRESOURCE_STATUS: what a write through it also keeps of old or
     * stamps, once the server has kept the spec (Kubernetes' status
     * strategy's PrepareForUpdate: a CertificateSigningRequest keeps its
     * approval conditions). NULL: nothing more. 0 or CK_ENOMEM.
     */
    int (*prepare)(json_t *next, const json_t *old);
    const char *message; /* CK_SUBRESOURCE_UNSERVED: why, in the 503 */
    /*
     * CK_SUBRESOURCE_SCALE of a custom resource: where the Scale's numbers
     * live in the object, as a CRD's scale subresource says (".spec.replicas",
     * ".status.replicas", ".status.selector", the selector a string). NULL
     * spec path: the built-in workloads' spec.replicas, status.replicas and
     * the LabelSelector object spec.selector.
     */
    const char *spec_replicas_path;
    const char *status_replicas_path;
    const char *label_selector_path; /* NULL: no selector in the Scale */
};

/*
 * Everything ckube knows about one kind, described once: discovery, the
 * schema that drives decoding and OpenAPI, field selectors, tables, the
 * strategy every write runs and the subresources all come from here. What is
 * particular to a built-in kind lives in lib/api/kinds/<kind>.c. A
 * descriptor is immutable and must outlive every reader once registered
 * (built-in ones are static).
 */
struct ck_kind {
    const char *group;   /* "" for the core group */
    const char *version; /* "v1" */
    const char *kind;    /* "Deployment" */
    const char *list_kind;
    const char *resource; /* plural: "deployments" */
    const char *singular;
    const char *const *short_names; /* NULL-terminated, may be NULL */
    const char *const *categories;  /* NULL-terminated, may be NULL */
    bool namespaced;
    bool has_generation; /* metadata.generation is kept */
    /* A change of metadata.annotations counts as a spec change for the generation. */
    bool annotations_bump_generation;
    /*
     * Objects of the kind configure admission itself (the webhook
     * configurations): webhooks are never called on them, so no webhook can
     * lock its own fix out.
     */
    bool configures_admission;
    /*
     * Admission reads every object of the kind on every write (the webhook
     * configurations, ValidatingAdmissionPolicies and their bindings,
     * PriorityClasses, LimitRanges, StorageClasses, IngressClasses, as
     * kube-apiserver's plugins read them from informers): the server keeps the
     * kind's lists between writes instead of listing the store for each one.
     */
    bool admission_lists_all;
    enum ck_kind_role role;
    enum ck_name_rule name_rule;
    const char *schema; /* "io.k8s.api.apps.v1.Deployment" */
    /*
     * The verbs discovery lists (NULL-terminated); NULL: every verb of a stored
     * kind. The reviews, which are never stored, list only "create".
     */
    const char *const *verbs;
    const struct ck_subresource *subresources;
    size_t n_subresources;
    /* metadata members a write through the status subresource never changes (NULL-terminated) */
    const char *const *status_keeps_metadata;
    const struct ck_field_label *field_labels; /* beyond metadata.name/namespace */
    size_t n_field_labels;
    /*
     * Renders obj's value of a field label declared without a path (it may
     * write into buf and return it; NULL reads as ""). Kubernetes' per-kind
     * field-set function, for labels that are not one field of the object.
     */
    const char *(*field_value)(const char *label, const json_t *obj, char *buf, size_t size);
    const struct ck_table_column *columns;
    size_t n_columns;
    /*
     * Fills the cells of the columns without a json_path: cells has one slot
     * per column; the hook stores a new reference in the slot of every
     * column without a path (json_null() for an empty cell), at time now
     * (seconds). A slot left NULL means it ran out of memory. May be NULL
     * when every column has a path.
     */
    void (*cells)(const json_t *obj, long long now, json_t **cells);
    /* The feature gates the kind's schema names (x-ckube-feature-gate and -gated-values). */
    const struct ck_api_feature *features;
    size_t n_features;

    /*
     * The kind's strategy (Kubernetes' RESTCreateStrategy/RESTUpdateStrategy,
     * RESTDeleteStrategy), each optional. prepare_for_create initialises what
     * the server owns (status, computed defaults); prepare_for_update carries
     * over what the main resource may not change; validate adds field errors
     * and never mutates (old is NULL on create). The hooks that change obj
     * return 0, or CK_ENOMEM when a change could not be made (obj is then
     * half-changed and the write fails with a 500).
     */
    int (*prepare_for_create)(json_t *obj);
    /*
     * What a create takes from the user who asks, after prepare_for_create
     * (Kubernetes' PrepareForCreate reading the request's user: a
     * CertificateSigningRequest's spec.username): user is an
     * authentication.k8s.io/v1 UserInfo object (username, uid, groups,
     * extra). 0 or CK_ENOMEM.
     */
    int (*prepare_for_create_by)(json_t *obj, const json_t *user);
    int (*prepare_for_update)(json_t *obj, const json_t *old);
    /* Computed defaults (beyond the schema's), on create and on update. */
    int (*defaults)(json_t *obj);
    void (*validate)(const json_t *obj, const json_t *old, struct ck_field_errors *errs);
    /* Normalises a valid object before it is stored (Kubernetes' Canonicalize). */
    int (*canonicalize)(json_t *obj);
    /* Finalizers of the kind's own beyond metadata.finalizers (a namespace's spec.finalizers). */
    bool (*has_own_finalizers)(const json_t *obj);
    /* What a delete that starts the deletion also changes (a namespace's Terminating phase). */
    int (*prepare_for_delete)(json_t *obj);
    /*
     * The grace period in seconds a delete gives obj, from the request's
     * (requested, NULL when it gave none); NULL hook: 0, the object goes once
     * its finalizers are gone.
     */
    long long (*delete_grace)(const json_t *obj, const long long *requested);
    /*
     * Objects of the kind expire (Kubernetes keeps events under an etcd lease of the
     * server's --event-ttl, renewed by every write): when set, the server removes an
     * object once the time this returns (seconds since the epoch: its last activity, 0
     * when unknown, which never expires) is older than that TTL. NULL: never expires.
     */
    long long (*last_activity)(const json_t *obj);

    /*
     * A kind described at run time (a custom resource's, from its
     * CustomResourceDefinition) carries its own schemas, layered over the
     * server's built-in set; NULL for the built-in kinds. ck_kind_schemas()
     * picks the set a kind's schema is read from.
     */
    const struct ck_schemas *schemas;
    /*
     * The collection's name in storage keys (/registry/<storage_resource>/...);
     * NULL: resource. A custom resource's carries its group
     * ("stable.example.com/crontabs", as Kubernetes' keys do), so that two
     * groups' plurals never share keys, and every version of one resource
     * shares the same objects.
     */
    const char *storage_resource;
    /*
     * The apiVersion objects of the resource are stored in ("stable.example.com/v1"):
     * written objects are converted to it, read ones from it (conversion None
     * rewrites apiVersion). NULL: the kind's own.
     */
    const char *storage_api_version;
    /*
     * A built-in kind served in a version other than its storage version converts
     * between the two (Kubernetes' conversion functions): to_storage turns an
     * object of the kind's version into the storage version's form, from_storage
     * the reverse, both in place, returning 0 or CK_ENOMEM. NULL: only apiVersion
     * differs (a custom resource's conversion None).
     */
    int (*to_storage)(json_t *obj);
    int (*from_storage)(json_t *obj);
    /*
     * A custom resource whose definition converts with a webhook: the definition's
     * spec.conversion.webhook (clientConfig, conversionReviewVersions), which the API
     * server calls to convert objects between versions (lib/apiserver/conversion.c);
     * NULL: conversion None. Read only, owned by the kind's descriptors.
     */
    const json_t *conversion_webhook;
    /*
     * Creates are refused with 405 MethodNotAllowed and this message (the
     * resources of a CustomResourceDefinition being deleted); NULL: allowed.
     */
    const char *refuse_create;
    /*
     * A custom resource's x-kubernetes-validations rules, compiled once for the
     * version (ck_crd_rules_new()); NULL when the schema has none. Read only,
     * owned by the kind's descriptors.
     */
    const struct ck_crd_rules *validation_rules;
    /*
     * The kind's schema has defaults to apply when an object is read from
     * storage (a custom resource's: Kubernetes defaults on decode, so an
     * object stored before a default was added shows it): see
     * ck_crd_default_stored().
     */
    bool defaults_on_read;
};

/*
 * The registry of kinds. Built-in kinds are registered before the first
 * call returns; more (a CRD's) may be registered at any time. Readers never
 * lock: each call reads one immutable snapshot, and every snapshot, with
 * every array these functions return, stays valid until the process exits.
 */

/* Every kind served, in discovery order (registration order). */
const struct ck_kind *const *ck_kinds(size_t *ret_count);

/*
 * The API Priority and Fairness objects kube-apiserver keeps present
 * (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap): {"mandatory": {...},
 * "suggested": {...}}, each with "priorityLevelConfigurations" and "flowSchemas",
 * lists of flowcontrol.apiserver.k8s.io/v1 objects. A new reference (the caller
 * may change it); NULL when out of memory.
 */
json_t *ck_flowcontrol_bootstrap(void);

/* The kind serving group/version/resource, or NULL. group is "" for core. */
const struct ck_kind *ck_kind_lookup(const char *group, const char *version, const char *resource);

/* The first registered kind holding role, or NULL. */
const struct ck_kind *ck_kind_with_role(enum ck_kind_role role);

/*
 * Registers kind (borrowed: it must stay valid and unchanged until the
 * process exits). Fails with CK_EEXIST when its group/version/resource is
 * served already, CK_EINVAL when it lacks a group, version, kind, resource or
 * schema, CK_ENOMEM. Writers are serialized; readers see the kind once this
 * returns.
 */
int ck_kind_register(const struct ck_kind *kind, struct ck_err *reterr);

/*
 * Stops serving kind; CK_ENOENT when it is not registered. Readers that
 * looked it up before may go on using it, so the descriptor must still
 * outlive them (keep it until exit).
 */
int ck_kind_unregister(const struct ck_kind *kind, struct ck_err *reterr);

/* The set kind's schema is read from: its own (a custom resource's), else fallback. */
const struct ck_schemas *ck_kind_schemas(const struct ck_kind *kind,
                                         const struct ck_schemas *fallback);

/*
 * Unregisters the kinds of remove (those not registered are skipped) and
 * registers those of add, publishing one snapshot for the whole change: how
 * the server applies a pass over many CustomResourceDefinitions (each
 * registration otherwise keeps a snapshot of every kind). A kind of add that
 * is invalid or whose group/version/resource is served already is skipped
 * and counted in *ret_skipped (may be NULL). Descriptors as for
 * ck_kind_register(). 0, or CK_ENOMEM with nothing changed.
 */
int ck_kinds_change(const struct ck_kind *const *remove, size_t n_remove,
                    const struct ck_kind *const *add, size_t n_add, size_t *ret_skipped,
                    struct ck_err *reterr);

/*
 * The longest apiVersion with its NUL: a group is a DNS subdomain (253
 * bytes; ckube routes groups of up to 63, docs/limits.md), a version a DNS
 * label (63), and the '/' between them.
 */
#define CK_API_VERSION_MAX 318

/* "apps/v1" or "v1". Writes into buf (CK_API_VERSION_MAX bytes hold any) and returns it. */
const char *ck_kind_api_version(const struct ck_kind *kind, char *buf, size_t size);

/* The qualified resource as Kubernetes names it in messages: "deployments.apps", "pods". */
const char *ck_kind_qualified_resource(const struct ck_kind *kind, char *buf, size_t size);

/*
 * A resource.Quantity's MilliValue(): "500m" is 500, "2" is 2000, "1Ki" is
 * 1024000, rounded up ("1n" is 1). Returns 0, CK_EINVAL for what is not a
 * quantity, or CK_ERANGE when the milli value does not fit in int64.
 */
int ck_quantity_milli(const char *s, int64_t *ret_milli);

/* The subresource called name of kind, or NULL. */
const struct ck_subresource *ck_kind_subresource(const struct ck_kind *kind, const char *name);

/* The kind's subresource that speaks part (the first), or NULL. */
const struct ck_subresource *ck_kind_subresource_part(const struct ck_kind *kind,
                                                      enum ck_subresource_part part);

/* True when the subresource accepts verb ("get", "update", "patch", "create"). */
bool ck_subresource_allows(const struct ck_subresource *sub, const char *verb);

/*
 * The field labels a field selector may use on this kind, NULL-terminated
 * (metadata.name and metadata.namespace first), or NULL for a kind never
 * registered. Built when the kind is registered; valid until exit.
 */
const char *const *ck_kind_field_label_names(const struct ck_kind *kind);

/* Renders obj's value of a field label. */
const char *ck_kind_field_value(const struct ck_kind *kind, const char *label, const json_t *obj,
                                char *buf, size_t size);

/* A ck_field_getter whose ctx is a const struct ck_kind *. */
const char *ck_kind_field_getter(const char *label, const json_t *obj, const void *kind, char *buf,
                                 size_t size);

/* True when obj still has finalizers: metadata.finalizers or the kind's own. */
bool ck_kind_has_finalizers(const struct ck_kind *kind, const json_t *obj);

/* ---- JSONPath (jsonpath.c) ----------------------------------------------- */

/* The longest JSONPath ck_jsonpath_check() and ck_jsonpath_first() take, in bytes. */
#define CK_JSONPATH_MAX 1024

/*
 * Parses path as Kubernetes parses a printer column's jsonPath (client-go's
 * JSONPath, the inside of one "{...}" action): 0, or CK_EINVAL with
 * client-go's message ("unterminated array", "invalid array index x", ...),
 * CK_ENOMEM.
 */
int ck_jsonpath_check(const char *path, struct ck_err *reterr);

/*
 * The first value path selects in obj, missing keys allowed, as the CRD
 * table convertor prints it; NULL when it selects nothing, does not parse,
 * fails to evaluate (an index out of bounds, a comparison of two types) or
 * memory runs out. New reference (a literal of the path is a new value).
 */
json_t *ck_jsonpath_first(const char *path, const json_t *obj);

/* ---- custom resources (customresource.c) -------------------------------- */

/*
 * The kinds one CustomResourceDefinition serves: a descriptor per served
 * version, first the preferred one (Kubernetes' version priority), each with
 * its own schemas layered over base (borrowed: it must outlive the kinds).
 * Names come from status.acceptedNames, else spec.names. CK_EINVAL when the
 * definition lacks a group, plural, kind or scope; CK_ENOMEM.
 */
struct ck_crd_kinds;
int ck_crd_kinds_new(const json_t *crd, const struct ck_schemas *base,
                     struct ck_crd_kinds **ret_kinds, struct ck_err *reterr);
size_t ck_crd_kinds_count(const struct ck_crd_kinds *kinds);
const struct ck_kind *ck_crd_kinds_get(const struct ck_crd_kinds *kinds, size_t i);
/* Only for kinds never registered: registered ones must outlive every reader (keep them). */
struct ck_crd_kinds *ck_crd_kinds_free(struct ck_crd_kinds *kinds);

/*
 * Kubernetes' order of versions (CompareKubeAwareVersionStrings): negative
 * when a comes first. v2 < v1 < v1beta2 < v1beta1 < v1alpha1 < "other".
 */
int ck_crd_version_compare(const char *a, const char *b);

/* The most selectableFields a CRD version may have (Kubernetes' MaxSelectableFields). */
#define CK_CRD_SELECTABLE_FIELDS_MAX 8

/*
 * Validates a CRD version's selectableFields as Kubernetes does (base is the
 * version's field path, "spec.versions[0]"): each jsonPath required, a simple
 * path to a property of the version's schema ("is an invalid path: ..."),
 * not in metadata, of type string, boolean or integer, no duplicates, at
 * most CK_CRD_SELECTABLE_FIELDS_MAX.
 */
void ck_crd_selectable_fields_check(const json_t *version, const char *base,
                                    struct ck_field_errors *errs);

/* ---- CRD validation rules (celrules.c) ---------------------------------- */

/* The cost one request's rules may spend (Kubernetes' RuntimeCELCostBudget). */
#define CK_CRD_RULES_COST_BUDGET 10000000

/*
 * The x-kubernetes-validations rules of one CRD version's openAPIV3Schema
 * (schema, borrowed; copied), compiled once: each rule and messageExpression,
 * whether it reads oldSelf, its fieldPath. per_call_limit bounds each
 * evaluation (0: Kubernetes' PerCallLimit, CK_CEL_DEFAULT_COST_LIMIT).
 * *ret_rules is NULL when the schema has no rules. A rule that does not
 * compile (the definition's checks refuse them; an older stored definition
 * may hold one) fails every write with `rule compile error: ...`, as in
 * Kubernetes. 0, or CK_ENOMEM.
 */
struct ck_crd_rules;
int ck_crd_rules_new(const json_t *schema, uint64_t per_call_limit, struct ck_crd_rules **ret_rules,
                     struct ck_err *reterr);
struct ck_crd_rules *ck_crd_rules_free(struct ck_crd_rules *rules);

/*
 * Validates obj (a custom resource; old is its stored value on an update,
 * NULL on a create) against rules as kube-apiserver's custom resource
 * strategy does after the schema's checks: when errs already holds an
 * error that blocks the rules (Required, Unsupported, Too long, Too many,
 * a wrong type), adds only `<nil>: Invalid value: "null": some validation
 * rules were not checked...`; otherwise each rule's error, with Kubernetes'
 * words (`spec: Invalid value: "object": MESSAGE`, `failed rule: RULE`).
 * budget is the request's cost budget (0: CK_CRD_RULES_COST_BUDGET).
 * Out of memory sets errs->nomem. rules NULL: nothing to do.
 */
void ck_crd_rules_validate(const struct ck_crd_rules *rules, const json_t *obj, const json_t *old,
                           int64_t budget, struct ck_field_errors *errs);

/*
 * Defaulting on read: applies the schema defaults of kind (one whose
 * defaults_on_read is set; nothing otherwise) to obj, an object read from
 * storage. 0, or CK_ENOMEM with obj partly defaulted.
 */
int ck_crd_default_read(const struct ck_kind *kind, json_t *obj);

/*
 * The stored bytes of an object of kind with its schema defaults applied,
 * in the same compact encoding (members in their order, defaults after), and
 * its length in *ret_len. NULL when there is nothing to apply (the kind has
 * no defaults on read, the bytes are not an object, or every default is
 * there already: the stored bytes serve as they are), or when out of memory
 * (*failed set).
 */
char *ck_crd_default_stored(const struct ck_kind *kind, const char *stored, size_t len,
                            size_t *ret_len, bool *failed);

/* ---- object metadata (apiserver BeforeCreate / BeforeUpdate) ------------- */

/* A random (version 4) UUID in its 36-character text form; buf holds >= 37 bytes. */
void ck_uuid(char *buf);

/* The RFC 3339 UTC form of a time in seconds: 2025-01-02T03:04:05Z; buf >= 21 bytes. */
const char *ck_rfc3339(long long seconds, char *buf, size_t size);

/*
 * Prepares obj for a create in namespace (ignored for cluster-scoped kinds)
 * at time now: sets apiVersion and kind, metadata.namespace, a name from
 * generateName when name is empty (5 characters from Kubernetes' alphabet),
 * a new uid, creationTimestamp, generation 1 where the kind keeps one; drops
 * what clients may not set (resourceVersion, deletionTimestamp,
 * deletionGracePeriodSeconds, selfLink, managedFields); then runs the kind's
 * prepare_for_create. Returns 0, CK_EINVAL when the body names another
 * namespace than the request (a 400 in Kubernetes), or CK_ENOMEM.
 */
int ck_meta_prepare_create(const struct ck_kind *kind, json_t *obj, const char *namespace,
                           long long now, struct ck_err *reterr);

/*
 * Prepares obj (the new state from a PUT or patch of the main resource) for
 * an update of old: keeps the immutable and server-owned metadata of old
 * (name, namespace, uid, creationTimestamp, generation, deletionTimestamp,
 * deletionGracePeriodSeconds), keeps old's status when the kind has a status
 * subresource, bumps generation when the spec changed (and, where the kind says so,
 * the annotations), then runs the kind's prepare_for_update. Returns 0, or
 * CK_ENOMEM with obj half-prepared.
 */
int ck_meta_prepare_update(const struct ck_kind *kind, json_t *obj, const json_t *old);

/*
 * Puts back into meta the fields the server owns (name, namespace, uid,
 * creationTimestamp, generation, deletionTimestamp,
 * deletionGracePeriodSeconds) as old_meta has them, absent where it has none.
 * Returns 0, or CK_ENOMEM.
 */
int ck_meta_keep_server_owned(json_t *meta, const json_t *old_meta);

/* Runs the kind's computed defaults (imagePullPolicy, namespace labels, ...). 0 or CK_ENOMEM. */
int ck_kind_default(const struct ck_kind *kind, json_t *obj);

/* Runs the kind's canonicalize hook, if any, on an object that passed validation. 0 or CK_ENOMEM.
 */
int ck_kind_canonicalize(const struct ck_kind *kind, json_t *obj);

/*
 * Validates metadata as Kubernetes' ValidateObjectMeta does (name per kind
 * rules, namespace, labels, annotations and their total size, owner
 * references, finalizers, at most one controller reference; on update no new
 * finalizers once deletion started), then the kind's validate. Adds to errs.
 */
void ck_meta_validate(const struct ck_kind *kind, const json_t *obj, const json_t *old,
                      struct ck_field_errors *errs);

/* ck_meta_validate for a write through sub: its validate hook, when it has one, in place of the
 * kind's. sub may be NULL. */
void ck_meta_validate_subresource(const struct ck_kind *kind, const struct ck_subresource *sub,
                                  const json_t *obj, const json_t *old,
                                  struct ck_field_errors *errs);

/* ---- server-side printing ------------------------------------------------ */

/* Kubernetes' human duration (duration.HumanDuration): 45s, 5m3s, 3h10m, 2d3h, 2y3d. */
const char *ck_human_duration(long long seconds, char *buf, size_t size);

/* "<unknown>" when the RFC 3339 timestamp is absent or invalid, else its age at now. */
const char *ck_age(const char *timestamp, long long now, char *buf, size_t size);

enum ck_include_object {
    CK_INCLUDE_METADATA, /* PartialObjectMetadata (the default) */
    CK_INCLUDE_OBJECT,   /* the whole object */
    CK_INCLUDE_NONE,
};

/* Parses the includeObject query value (NULL or "" = Metadata). */
int ck_include_object_parse(const char *text, enum ck_include_object *ret);

/*
 * Appends to cells (an array) one cell per column of kind for obj at time
 * now: the columns with a json_path read the object, the others come from
 * the kind's cells hook. Returns 0, or CK_ENOMEM with cells partly filled.
 */
int ck_table_row_cells(const struct ck_kind *kind, const json_t *obj, long long now, json_t *cells);

/*
 * Builds a meta.k8s.io/v1 Table for kind with the given rows' objects (each a
 * JSON object of the kind), with columnDefinitions when with_columns (the
 * first event of a watch has them, later ones an empty list), metadata
 * resourceVersion and continue. Returns a new reference, or NULL when out
 * of memory.
 */
json_t *ck_table_build(const struct ck_kind *kind, json_t *const *objects, size_t n_objects,
                       bool with_columns, enum ck_include_object include,
                       const char *resource_version, const char *continue_token, long long now);

/* ---- patches ------------------------------------------------------------- */

/*
 * What one patch may cost (docs/limits.md). A patch over a limit fails before
 * the work is done, with a Status error in reterr: 413 RequestEntityTooLarge
 * for too many operations or too much work, 422 Invalid for JSON patch copies
 * beyond max_copy_bytes (kube-apiserver's answers). 0 turns a limit off.
 */
struct ck_patch_limits {
    size_t max_operations;  /* JSON patch: operations in one patch */
    size_t max_copy_bytes;  /* JSON patch: summed size (as JSON) of every copied value */
    size_t max_comparisons; /* strategic merge: element comparisons while merging lists */
};

/* kube-apiserver's limits: 10,000 operations, 3 MiB of copies; and 20 million comparisons. */
extern const struct ck_patch_limits ck_patch_default_limits;

/*
 * JSON merge patch (RFC 7386, application/merge-patch+json): objects merge
 * recursively, null deletes a member, anything else (arrays included)
 * replaces. Returns the patched document as a new reference; target is not
 * modified. NULL only when out of memory.
 */
json_t *ck_merge_patch(const json_t *target, const json_t *patch);

/*
 * JSON patch (RFC 6902, application/json-patch+json): applies the operations
 * (add, remove, replace, move, copy, test) in order to a copy of doc. Any
 * failing operation (a missing path, a failed test, a malformed operation)
 * fails the whole patch with CK_EINVAL and a message naming the operation;
 * doc is never modified. On success *ret_doc is a new reference.
 */
int ck_json_patch(const json_t *doc, const json_t *operations, json_t **ret_doc,
                  struct ck_err *reterr);

/* ck_json_patch() under limits (ck_json_patch() applies ck_patch_default_limits). */
int ck_json_patch_bounded(const json_t *doc, const json_t *operations,
                          const struct ck_patch_limits *limits, json_t **ret_doc,
                          struct ck_err *reterr);

/*
 * Strategic merge patch (application/strategic-merge-patch+json) against the
 * schema `name` of set: a merge patch in which lists whose schema carries
 * x-kubernetes-patch-strategy "merge" merge element by element on their
 * x-kubernetes-patch-merge-key (or as sets, for lists of scalars), and the
 * directives kubectl sends are honoured: $patch (delete, replace, merge),
 * $setElementOrder/<list>, $deleteFromPrimitiveList/<list> and $retainKeys.
 * Returns CK_EINVAL for a malformed patch (a directive with a bad value, a
 * merge-list element without its key); doc is never modified.
 */
int ck_strategic_merge_patch(const struct ck_schemas *set, const char *name, const json_t *doc,
                             const json_t *patch, json_t **ret_doc, struct ck_err *reterr);

/* ck_strategic_merge_patch() under limits (which applies ck_patch_default_limits). */
int ck_strategic_merge_patch_bounded(const struct ck_schemas *set, const char *name,
                                     const json_t *doc, const json_t *patch,
                                     const struct ck_patch_limits *limits, json_t **ret_doc,
                                     struct ck_err *reterr);

/*
 * True when the kind whose schema is `name` takes strategic merge patch: every
 * built-in kind does, even one without merge keys (an Event, a Role), as in
 * Kubernetes; a schema marked "x-ckube-custom-resource" (a custom resource) does
 * not, and the server answers its strategic patches 415, as Kubernetes does. The
 * OpenAPI advertises the patch types accordingly.
 */
bool ck_schema_is_strategic(const struct ck_schemas *set, const char *name);

/* ---- discovery and OpenAPI ---------------------------------------------- */

/*
 * Legacy discovery documents, as kubectl reads them: /api (APIVersions, with
 * server_address as the one serverAddressByClientCIDRs entry), /apis
 * (APIGroupList: every group but the core one) and /api/v1 or /apis/G/V
 * (APIResourceList, one entry per resource and per subresource; NULL when
 * ckube serves no such group version). Each returns a new reference, or
 * NULL when out of memory (never a document with parts missing).
 */
json_t *ck_discovery_api_versions(const char *server_address);
json_t *ck_discovery_api_groups(void);
json_t *ck_discovery_resources(const char *group, const char *version);

/*
 * Aggregated discovery (apidiscovery.k8s.io's APIGroupDiscoveryList, which
 * kubectl asks for first): every group, version and resource in one
 * document, for /api (core: the core group alone) or /apis (every other
 * group), written with api_version ("apidiscovery.k8s.io/v2" or its
 * v2beta1, the same shape). A new reference, or NULL when out of memory.
 */
json_t *ck_discovery_aggregated(bool core, const char *api_version);

/*
 * The OpenAPI v3 document of one group version ("" for core): paths for
 * every resource with a PATCH operation per kind that declares the
 * fieldValidation parameter (how kubectl learns the server validates
 * fields), and components.schemas holding every schema those kinds reach.
 * NULL when ckube serves no such group version, or when out of memory.
 * Returns a new reference.
 */
json_t *ck_openapi_document(const struct ck_schemas *set, const char *group, const char *version);

/*
 * The OpenAPI v3 index: {"paths": {"api/v1": {"serverRelativeURL":
 * "/openapi/v3/api/v1?hash=H"}, ...}} where H changes whenever that
 * document's content changes (kubectl caches documents by URL). NULL when
 * out of memory.
 */
json_t *ck_openapi_index(const struct ck_schemas *set);

/*
 * The Swagger 2.0 document of /openapi/v2: the v3 documents of every group
 * version served now, translated (paths merged, components.schemas as
 * definitions, references rewritten). NULL when out of memory. Returns a
 * new reference.
 */
json_t *ck_openapi_v2(const struct ck_schemas *set);

/*
 * /openapi/v2 in protobuf, as kube-apiserver answers an Accept of
 * CK_OPENAPI_V2_PROTO_MEDIA_TYPE (or its older spelling with "@v1.0"):
 * gnostic's openapi_v2.Document message (lib/api/openapi_v2_proto/fields.json)
 * encoded from the Swagger JSON of ck_openapi_v2(). 0 with *ret_data
 * (malloc'd, the caller frees) and *ret_len; CK_EINVAL with *reterr when
 * a value has the wrong JSON type for its field, CK_ENOMEM.
 */
#define CK_OPENAPI_V2_PROTO_MEDIA_TYPE "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
#define CK_OPENAPI_V2_PROTO_MEDIA_TYPE_AT                                                          \
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
int ck_openapi_v2_proto(const json_t *swagger, char **ret_data, size_t *ret_len,
                        struct ck_err *reterr);
/* ---- managed fields and server-side apply (managedfields.c, apply.c) ------ */

/*
 * A field set (structured-merge-diff fieldpath.Set) is a jansson object tree
 * keyed by FieldsV1 path elements ("f:name", "k:{\"name\":\"x\"}", "v:\"a\"",
 * "i:0"); a node whose path is a member has a "." member. Sets are plain
 * values: every function returns a new reference (NULL when out of memory)
 * and leaves its inputs alone.
 */
#define CK_FIELDSET_MAX_DEPTH 64

json_t *ck_fieldset_new(void);
bool ck_fieldset_is_empty(const json_t *set);

/*
 * Parses metadata.managedFields[].fieldsV1 (NULL: the empty set) into
 * *ret_set. CK_EINVAL with *reterr saying why for a malformed one.
 */
int ck_fieldset_from_fields_v1(const json_t *fields_v1, json_t **ret_set, struct ck_err *reterr);

/* The FieldsV1 form: leaves as {}, "." on members with children, elements sorted. */
json_t *ck_fieldset_to_fields_v1(const json_t *set);

/* Adds the path of n elements; 0 or CK_ENOMEM. The empty path is never a member. */
int ck_fieldset_insert(json_t *set, const char *const *path, size_t n);
bool ck_fieldset_has(const json_t *set, const char *const *path, size_t n);
json_t *ck_fieldset_union(const json_t *a, const json_t *b);
json_t *ck_fieldset_difference(const json_t *a, const json_t *b);
json_t *ck_fieldset_intersection(const json_t *a, const json_t *b);

/* Calls visit for every member path in FieldsV1 order; stops at the first nonzero answer. */
typedef int (*ck_fieldset_visit_fn)(const char *const *path, size_t n, void *arg);
int ck_fieldset_walk(const json_t *set, ck_fieldset_visit_fn visit, void *arg);

/*
 * A path as structured-merge-diff prints it in messages:
 * .spec.containers[name="web"].image, .metadata.finalizers[="x"]. Caller
 * frees; NULL when out of memory.
 */
char *ck_fieldpath_string(const char *const *path, size_t n);

/* One metav1.ManagedFieldsEntry with its set decoded. Strings are "" rather than NULL. */
struct ck_managed_entry {
    char *manager;
    char *operation; /* "Apply" or "Update" */
    char *api_version;
    char *time; /* RFC 3339, or NULL */
    char *subresource;
    json_t *set;
};

struct ck_managed_fields {
    struct ck_managed_entry *entries;
    size_t n;
};

/*
 * Decodes metadata.managedFields (NULL: none). CK_EINVAL with *reterr for a
 * malformed list (a fieldsType other than FieldsV1, an unknown operation,
 * bad FieldsV1), CK_ENOMEM; *ret is empty then.
 */
int ck_managed_fields_decode(const json_t *array, struct ck_managed_fields *ret,
                             struct ck_err *reterr);

/* Appends an entry, taking set. 0 or CK_ENOMEM. */
int ck_managed_fields_add(struct ck_managed_fields *mf, const char *manager, const char *operation,
                          const char *api_version, const char *time, const char *subresource,
                          json_t *set);

/* The index of the entry that one manager identifier names, or -1. */
ssize_t ck_managed_fields_find(const struct ck_managed_fields *mf, const char *manager,
                               const char *operation, const char *api_version,
                               const char *subresource);

/*
 * Sorts the entries as kube-apiserver stores them (Apply first, then by
 * time, manager, apiVersion, subresource) and returns the managedFields
 * list, entries with empty sets left out. NULL when out of memory.
 */
json_t *ck_managed_fields_encode(struct ck_managed_fields *mf);
void ck_managed_fields_release(struct ck_managed_fields *mf);

/* Update managers kept before the oldest are merged into "ancient-changes". */
#define CK_MAX_UPDATE_MANAGERS 10

/* Who writes: the manager name (fieldManager, or the User-Agent's prefix) and the subresource. */
struct ck_field_manager {
    const char *manager;
    const char *subresource; /* NULL or "" for the object itself */
    long long now;           /* seconds since the epoch, for the entries' time */
};

/*
 * Records a non-apply write in obj's metadata.managedFields (an Update
 * entry), as kube-apiserver's field manager does: fields the write added or
 * changed go to who's entry (and leave every other manager), fields it
 * removed leave every manager, the entry's time moves only when it took
 * fields, Update managers beyond CK_MAX_UPDATE_MANAGERS merge into
 * "ancient-changes". old is NULL for a create. requested is the
 * managedFields the client sent (NULL: keep old's; [] or [{}]: reset),
 * ignored on subresources. 0 or CK_ENOMEM.
 */
int ck_managed_fields_track_update(const struct ck_schemas *set, const struct ck_kind *kind,
                                   const json_t *old, json_t *obj, const json_t *requested,
                                   const struct ck_field_manager *who);

/*
 * Server-side apply of config (an already decoded object of kind) to live
 * (NULL: the object does not exist yet): merges config into live by the
 * schema's list types and merge keys, removes the fields who applied before
 * and no longer applies when no other manager owns them, and returns the
 * new object in *ret_obj with its managedFields. Conflicts with other
 * managers are a 409 Conflict (causes of type FieldManagerConflict) unless
 * force, which takes the fields over. kubectl's upgrade from client-side
 * apply is honoured: for manager "kubectl", conflicts on fields the
 * last-applied annotation still describes are forced, and the annotation
 * follows the applied config. 0, CK_ECONFLICT, CK_EINVAL (400) or CK_ENOMEM.
 */
int ck_apply(const struct ck_schemas *set, const struct ck_kind *kind, const json_t *live,
             const json_t *config, const struct ck_field_manager *who, bool force, json_t **ret_obj,
             struct ck_err *reterr);

/* ---- Kubernetes protobuf (protobuf.c) ---------------------------------- */

/*
 * Kubernetes' protobuf wire format, `application/vnd.kubernetes.protobuf`
 * (docs/internals/api.md, "Protobuf"). A message is named as the OpenAPI
 * schema of its type ("io.k8s.api.core.v1.Pod"): a kind's `schema` names its
 * message; the field numbers are data from Kubernetes' generated.proto
 * (lib/api/protobuf/fields.json). A kind whose schema has no message (a
 * custom resource) is JSON-only.
 */
#define CK_PROTOBUF_MEDIA_TYPE       "application/vnd.kubernetes.protobuf"
#define CK_PROTOBUF_WATCH_MEDIA_TYPE "application/vnd.kubernetes.protobuf;stream=watch"

/* True when ckube knows the protobuf message called name. */
bool ck_proto_has_message(const char *name);

/*
 * The message name of a group, version and kind ("apps", "v1", "Deployment":
 * "io.k8s.api.apps.v1.Deployment"; "meta.k8s.io" names apimachinery's meta).
 * 0, or CK_EINVAL when buf is too small. Whether it exists is
 * ck_proto_has_message()'s question.
 */
int ck_proto_message_name(const char *group, const char *version, const char *kind, char *buf,
                          size_t size);

/*
 * The message of a JSON object, from its apiVersion and kind; a kind the
 * group does not define is looked up in meta/v1 (a Status is "v1" in JSON,
 * metav1.Status on the wire). 0, CK_ENOENT when there is none (a custom
 * resource), CK_EINVAL without apiVersion or kind.
 */
int ck_proto_message_of(const json_t *obj, char *buf, size_t size);

/*
 * Encodes obj (borrowed), a JSON object of message `message`, as Kubernetes
 * sends it: "k8s\0", then runtime.Unknown with obj's apiVersion and kind as
 * typeMeta and the message as raw. On success *ret_data (the caller frees
 * it) and *ret_len; otherwise a negative code with *reterr (406 for an
 * unknown message, 400 for a value of the wrong type, 500 out of memory).
 */
int ck_proto_encode(const char *message, const json_t *obj, char **ret_data, size_t *ret_len,
                    struct ck_err *reterr);

/*
 * Decodes len bytes of data ("k8s\0" and runtime.Unknown, as a client sends
 * them) as message `message` into the JSON object Kubernetes' JSON encoding
 * of the same value gives, with apiVersion and kind from the envelope. A new
 * reference in *ret_obj; on bad data CK_EINVAL with a 400 in *reterr.
 */
int ck_proto_decode(const char *message, const void *data, size_t len, json_t **ret_obj,
                    struct ck_err *reterr);

/*
 * One frame of a protobuf watch stream: a 4-byte big-endian length, then a
 * metav1.WatchEvent {type, object: RawExtension {raw: obj as
 * ck_proto_encode() writes it}}. The caller frees *ret_frame.
 */
int ck_proto_encode_watch_event(const char *message, const char *type, const json_t *obj,
                                char **ret_frame, size_t *ret_len, struct ck_err *reterr);

/*
 * The same frame around an object already encoded by ck_proto_encode()
 * (object_len bytes, borrowed): how a stream sends one encoding to many
 * watchers. The caller frees *ret_frame.
 */
int ck_proto_watch_frame(const char *type, const void *object, size_t object_len, char **ret_frame,
                         size_t *ret_len, struct ck_err *reterr);

/*
 * The object's message inside data ("k8s\0" and runtime.Unknown): *ret_raw
 * points into data. CK_EINVAL with a 400 in *reterr when data is not that.
 */
int ck_proto_unwrap(const void *data, size_t len, const void **ret_raw, size_t *ret_raw_len,
                    struct ck_err *reterr);

/*
 * A list of message list_message ("io.k8s.api.core.v1.PodList") with
 * apiVersion and kind in its envelope, metadata meta (a JSON ListMeta,
 * borrowed; NULL: none) and the n items already encoded by ck_proto_encode()
 * (items[i] of item_lens[i] bytes, borrowed), in order. The caller frees
 * *ret_data. Lets a server encode each object once and reuse it.
 */
int ck_proto_encode_list(const char *list_message, const char *api_version, const char *kind,
                         const json_t *meta, const char *const *items, const size_t *item_lens,
                         size_t n, char **ret_data, size_t *ret_len, struct ck_err *reterr);

/*
 * Decodes a WatchEvent message (a frame without its length) whose object is
 * of message `message`: {"type": ..., "object": ...} in *ret_event.
 */
int ck_proto_decode_watch_event(const char *message, const void *data, size_t len,
                                json_t **ret_event, struct ck_err *reterr);

#endif /* CKUBE_API_H */
