/*
 * ckube/cel.h - the Common Expression Language (CEL) as Kubernetes 1.32 evaluates it.
 *
 * ValidatingAdmissionPolicy, CRD x-kubernetes-validations rules and webhook
 * matchConditions are CEL expressions over JSON objects. This library compiles an
 * expression once (lexer, recursive-descent parser, macro expansion: google/cel-spec's
 * langdef.md and grammar) and evaluates it many times against variables given as
 * jansson values, under a cost budget so that no expression runs long or takes
 * unbounded memory (k8s.io/apiserver/pkg/cel: its per-call cost limit).
 *
 * Evaluation is dynamic; ck_cel_check() is the static type checker that finds, over
 * variables declared with their types (a CRD rule's self from its schema), the mistakes
 * cel-go's checker reports at compile time ("found no matching overload"). docs/cel.md lists what
 * is supported, the limits and the differences from cel-go.
 *
 * Threading: a compiled program is immutable; any number of threads may evaluate it at
 * once. A result belongs to the thread that got it.
 */
#ifndef CKUBE_CEL_H
#define CKUBE_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/util.h"

/* Longest expression, in code points (cel-go's default limit). */
#define CK_CEL_MAX_EXPR_LEN 100000
/* Deepest nesting of the parse (parentheses, operators, calls): cel-go's default. */
#define CK_CEL_MAX_DEPTH 250
/* Most nodes of an expression after macro expansion. */
#define CK_CEL_MAX_NODES 50000
/* Kubernetes' per-expression runtime cost limit (apiserver/pkg/apis/cel: PerCallLimit). */
#define CK_CEL_DEFAULT_COST_LIMIT 1000000
/* Most bytes the values of one evaluation may take (arena of the evaluation). */
#define CK_CEL_MEMORY_LIMIT (64u << 20)

/* An evaluation stopped because it passed its cost limit or its memory limit. */
#define CK_CEL_ECOST (-ECANCELED)

/* The types of CEL values a result can have. */
enum ck_cel_type {
    CK_CEL_NULL,
    CK_CEL_BOOL,
    CK_CEL_INT,
    CK_CEL_UINT,
    CK_CEL_DOUBLE,
    CK_CEL_STRING,
    CK_CEL_BYTES,
    CK_CEL_LIST,
    CK_CEL_MAP,
    CK_CEL_TYPE,
    CK_CEL_DURATION,
    CK_CEL_TIMESTAMP,
    CK_CEL_OPTIONAL, /* optional.of(x) or optional.none() (Kubernetes 1.29+) */
    CK_CEL_IP,       /* net.IP, from ip("10.0.0.1") (Kubernetes 1.30+) */
    CK_CEL_CIDR,     /* net.CIDR, from cidr("10.0.0.0/8") */
    CK_CEL_QUANTITY, /* a resource.Quantity, from quantity("1.5Gi") (Kubernetes 1.28+) */
    CK_CEL_OBJECT,   /* an object of the authorizer library (kubernetes.authorization.Decision) */
};

/* A compiled expression. */
struct ck_cel_program;

/* The value of one evaluation, with the memory it lives in. */
struct ck_cel_result;

/*
 * What an authorization check of the authorizer library asks (k8s.io/apiserver 1.32
 * pkg/cel/library/authz.go: authorizer.AttributesRecord). Strings are borrowed for the
 * call. sa_namespace and sa_name are set when the check is made through
 * authorizer.serviceAccount(ns, name): the service account is asked about, not the
 * request's user.
 */
struct ck_cel_authz_request {
    const char *sa_namespace, *sa_name; /* NULL: the request's user */
    const char *verb;
    bool resource_request;
    const char *path; /* non-resource checks: authorizer.path(p) */
    const char *group, *resource, *subresource, *namespace, *name; /* "" when unset */
};

/* The answer to one check: a Decision's allowed(), reason() and error() ("" for none). */
struct ck_cel_authz_decision {
    bool allowed;
    char reason[512];
    char error[256];
};

/*
 * The `authorizer` variable: who answers its checks, and the request's resource that
 * `authorizer.requestResource` checks (resource NULL: the variable has no such member).
 * The strings and ctx are borrowed for the evaluation; authorize may be called from any
 * thread that evaluates.
 */
struct ck_cel_authorizer {
    void (*authorize)(void *ctx, const struct ck_cel_authz_request *req,
                      struct ck_cel_authz_decision *ret);
    void *ctx;
    const char *group, *resource, *subresource, *namespace, *name;
};

/*
 * A variable of the activation: its name and its JSON value (borrowed). An optional
 * variable is a CEL optional: optional.of(value), or optional.none() when value is NULL
 * (a CRD rule's oldSelf under optionalOldSelf). A variable with an authorizer is the
 * authorizer library's Authorizer object (its value is not read).
 */
struct ck_cel_var {
    const char *name;
    const json_t *value;
    bool optional;
    const struct ck_cel_authorizer *authorizer;
    /* NULL, or the structural schema that types value as ck_cel_check() types it: strings
     * of format byte, duration, date and date-time are bytes, durations and timestamps,
     * and the properties of an object are reached by their escaped names */
    const json_t *schema;
};

/*
 * Go's time.ParseDuration, the grammar of CEL's duration() ("1.5s", "2m30s", "-1h"):
 * true and the value as seconds and nanoseconds of the same sign when text is one.
 */
bool ck_cel_parse_duration(const char *text, int64_t *ret_sec, int32_t *ret_nsec);

/*
 * Compiles the len bytes of expr (UTF-8): parses it and expands its macros (has, all,
 * exists, exists_one, map, filter, optMap, optFlatMap). Returns 0 and *ret_prog (free it with
 * ck_cel_program_free()), or CK_EINVAL with reterr's message as cel-go prints it,
 * "ERROR: <input>:1:5: Syntax error: ..." followed by the line and a caret (kept whole:
 * release reterr with ck_err_release()); CK_ENOMEM.
 * Expressions longer than CK_CEL_MAX_EXPR_LEN, deeper than CK_CEL_MAX_DEPTH or with
 * more than CK_CEL_MAX_NODES nodes are refused. Calls of functions the library does not
 * know are refused here ("undeclared reference to 'f'"), as are literal regexes,
 * durations and timestamps that do not parse (Kubernetes' literal validators).
 */
int ck_cel_compile(const char *expr, size_t len, struct ck_cel_program **ret_prog,
                   struct ck_err *reterr);

/*
 * Whether prog reads the variable called name (an identifier that no comprehension
 * variable of the same name hides): how Kubernetes tells a CRD transition rule, one that
 * reads oldSelf, from the others.
 */
bool ck_cel_program_references(const struct ck_cel_program *prog, const char *name);

/*
 * A variable declared for ck_cel_check(): its type is the CEL type Kubernetes derives
 * from a structural OpenAPI v3 schema (k8s.io/apiserver pkg/cel/common/schemas.go:
 * properties are an object's fields, names escaped as Kubernetes escapes them
 * (`__dash__`, `__namespace__`); additionalProperties a map(string, T); items a list;
 * x-kubernetes-int-or-string dyn; formats byte, duration, date and date-time bytes,
 * duration and timestamp; a schema with no type is not declared), else the type
 * written as cel-go writes it ("dyn", "string", "map(string, dyn)", "list(int)"),
 * else dyn. resource_root: the schema is a resource's root (or an embedded
 * resource), which always has apiVersion, kind, metadata.name and
 * metadata.generateName. type_name: the name of the schema's object type in messages
 * (NULL: "object"). optional: the variable is optional_type(T). resolve (may be NULL):
 * gives the schema a "$ref" names (or NULL), for schemas that are not inlined (a
 * "$ref", or an "allOf" of one "$ref", stands for the schema it names, as Kubernetes'
 * schema resolver inlines them); the decls of one check share one resolver.
 */
struct ck_cel_decl {
    const char *name;
    const json_t *schema;
    const char *type;
    const char *type_name;
    bool resource_root;
    bool optional;
    const json_t *(*resolve)(const char *ref, void *arg);
    void *resolve_arg;
};

/*
 * Type-checks prog over the ndecls declared variables (any other variable is an
 * undeclared reference), as cel-go's checker does. Returns 0 and the expression's type
 * written into ret_type (type_size bytes, may be NULL: "bool", "list(string)"), or
 * CK_EINVAL with reterr holding every error as cel-go prints them, sorted by position,
 * one per line with its caret ("ERROR: <input>:1:6: found no matching overload for
 * '_+_' applied to '(int, string)'\n | ...", the first 100 and how many more, kept whole:
 * release reterr with ck_err_release()); CK_ENOMEM.
 */
int ck_cel_check(const struct ck_cel_program *prog, const struct ck_cel_decl *decls, size_t ndecls,
                 char *ret_type, size_t type_size, struct ck_err *reterr);

/* Frees prog; NULL is a no-op. Returns NULL. */
struct ck_cel_program *ck_cel_program_free(struct ck_cel_program *prog);

/*
 * Evaluates prog with the nvars variables of vars (borrowed for the call; a name not
 * among them is an error when the expression reads it). JSON maps as Kubernetes maps
 * it: objects to maps with string keys, arrays to lists, integers to int, other
 * numbers to double. cost_limit bounds the work (0: CK_CEL_DEFAULT_COST_LIMIT).
 * Returns 0 and *ret_result (free it with ck_cel_result_free()); CK_EINVAL when the
 * expression evaluates to an error (reterr: "no such key: spec"); CK_CEL_ECOST when it
 * passed its cost or memory limit (reterr: "operation cancelled: actual cost limit
 * exceeded"); CK_ENOMEM. *ret_cost (may be NULL) is set to the cost spent, either way.
 */
int ck_cel_eval(const struct ck_cel_program *prog, const struct ck_cel_var *vars, size_t nvars,
                uint64_t cost_limit, struct ck_cel_result **ret_result, uint64_t *ret_cost,
                struct ck_err *reterr);

/* Frees r; NULL is a no-op. Returns NULL. */
struct ck_cel_result *ck_cel_result_free(struct ck_cel_result *r);

/* The result's type. */
enum ck_cel_type ck_cel_result_type(const struct ck_cel_result *r);

/* The result as a bool: its value when it is a bool, else false. */
bool ck_cel_result_bool(const struct ck_cel_result *r);

/*
 * The result as a string (a string's text, NUL-terminated, its byte length in *ret_len
 * when not NULL), owned by r; NULL when it is not a string.
 */
const char *ck_cel_result_string(const struct ck_cel_result *r, size_t *ret_len);

/*
 * The result as JSON (caller frees): null, bool, numbers, strings, lists, maps with
 * string keys; bytes as base64, durations as "1.5s", timestamps as RFC 3339, types
 * by name, IPs, CIDRs and quantities (their exact decimal value) as text, an optional as its value
 * or null, as cel-go's native conversions write them. CK_EINVAL for a map with keys other than
 * strings or a double that is not finite; CK_ENOMEM.
 */
int ck_cel_result_to_json(const struct ck_cel_result *r, json_t **ret_json);

/*
 * The result written as a CEL literal with its type visible: 1, 1u, 1.0, "a", b"a",
 * [1, 2], {"a": 1} (keys sorted), int, duration("1s"), timestamp("..."), optional.of(1),
 * optional.none(), ip("10.0.0.1"), cidr("10.0.0.0/8"), quantity("1536") (its exact value).
 * The caller frees it; NULL when out of memory.
 */
char *ck_cel_result_format(const struct ck_cel_result *r);

#endif /* CKUBE_CEL_H */
