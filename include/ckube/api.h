/*
 * ckube/api.h - Kubernetes API machinery without I/O: field errors, name and
 * label validation, and label and field selectors.
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

#include "ckube/util.h"

/* ---- field errors (apimachinery field.ErrorList) ------------------------ */

enum ck_field_error_type {
    CK_FIELD_INVALID,       /* FieldValueInvalid: Invalid value */
    CK_FIELD_REQUIRED,      /* FieldValueRequired: Required value */
    CK_FIELD_NOT_SUPPORTED, /* FieldValueNotSupported: Unsupported value */
    CK_FIELD_DUPLICATE,     /* FieldValueDuplicate: Duplicate value */
    CK_FIELD_FORBIDDEN,     /* FieldValueForbidden: Forbidden */
    CK_FIELD_TOO_LONG,      /* FieldValueTooLong: Too long */
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
};

/*
 * Appends one error. value is rendered quoted when value_is_string, as
 * Kubernetes prints string values ("Invalid value: \"Foo\""); NULL value
 * omits it. Allocation failure drops the error but keeps the list marked as
 * failed (len > 0 is guaranteed after any add).
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
 * Matches using get_field(field, obj) to render the object's value of a field
 * label as a string (owned by the callback's caller for the duration of the
 * call; NULL is treated as "").
 */
typedef const char *(*ck_field_getter)(const char *field, const json_t *obj, char *buf,
                                       size_t buf_size);
bool ck_field_selector_matches(const struct ck_field_selector *selector, const json_t *obj,
                               ck_field_getter get_field);

/*
 * If the selector pins field to one value with `=`/`==` (as
 * metadata.name=X does), returns that value (owned by the selector), else NULL.
 * Lets a list by name become a single-key read.
 */
const char *ck_field_selector_exact(const struct ck_field_selector *selector, const char *field);

bool ck_field_selector_is_empty(const struct ck_field_selector *selector);

struct ck_field_selector *ck_field_selector_free(struct ck_field_selector *selector);

#endif /* CKUBE_API_H */
