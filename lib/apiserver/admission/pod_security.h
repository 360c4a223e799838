/*
 * pod_security.h - private to the API server: the Pod Security Standards as data and
 * functions (admission/pod_security_policy.c), which the PodSecurity admission plugin
 * (admission/pod_security.c) applies and the unit tests call directly.
 *
 * Mirrors k8s.io/pod-security-admission 1.32: api/ (levels, versions, the namespace
 * labels and how they resolve to a policy) and policy/ (the checks of every version and
 * how they aggregate into one message).
 */
#ifndef CKUBE_APISERVER_ADMISSION_POD_SECURITY_H
#define CKUBE_APISERVER_ADMISSION_POD_SECURITY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ckube/api.h"

#define CK__PSA_LABEL_PREFIX "pod-security.kubernetes.io/"

enum ck__psa_level { CK__PSA_PRIVILEGED, CK__PSA_BASELINE, CK__PSA_RESTRICTED };

/* A level at a policy version: "latest", or v1.<minor>. */
struct ck__psa_level_version {
    enum ck__psa_level level;
    bool latest;
    long long minor; /* when !latest */
};

/* What a namespace asks of its pods, per mode. */
struct ck__psa_policy {
    struct ck__psa_level_version enforce, audit, warn;
};

/* "privileged", "baseline" or "restricted". */
const char *ck__psa_level_name(enum ck__psa_level level);

/* "restricted:latest", "baseline:v1.25" (api.LevelVersion.String()). */
void ck__psa_level_version_string(const struct ck__psa_level_version *lv, char *buf, size_t size);

/* Whether a and b name the same level and version. */
bool ck__psa_level_version_equal(const struct ck__psa_level_version *a,
                                 const struct ck__psa_level_version *b);

/* privileged:latest for all three modes: the plugin's configuration defaults. */
void ck__psa_default_policy(struct ck__psa_policy *ret);

/*
 * The policy a namespace's labels (metadata.labels, NULL: none) ask for, starting from
 * defaults (api.PolicyToEvaluate): every label that does not parse adds its
 * `metadata.labels[<label>]` Invalid error to errs and counts as Kubernetes counts it
 * (enforce: restricted, audit and warn: privileged, a version: latest). A warn level
 * left unset follows an enforce level set stricter than it.
 */
void ck__psa_policy_from_labels(const json_t *labels, const struct ck__psa_policy *defaults,
                                struct ck__psa_policy *ret, struct ck_field_errors *errs);

/*
 * Checks a pod (its metadata and spec; a template's for controllers) against lv, with
 * the checks of lv's version (the newest ckube knows when lv is newer or latest).
 * Allowed: 0 with *ret_detail NULL. Forbidden: 0 with *ret_detail the aggregated
 * detail (`allowPrivilegeEscalation != false (container "c" must set ...), ...`) and,
 * when ret_reasons is not NULL, *ret_reasons the reasons alone joined with ", "; the
 * caller frees both. CK_ENOMEM leaves nothing to free.
 */
int ck__psa_evaluate(const struct ck__psa_level_version *lv, const json_t *meta, const json_t *spec,
                     char **ret_reasons, char **ret_detail);

/* The newest policy version whose checks ckube has (v1.<this>). */
long long ck__psa_max_minor(void);

/* The check IDs in evaluation order (baseline, then restricted, each sorted), NULL-ended. */
const char *ck__psa_check_id(size_t i);

/*
 * For tests: the clock (monotonic nanoseconds) that bounds the check of a namespace's
 * existing pods to 1 s; NULL restores CLOCK_MONOTONIC. Not for concurrent use.
 */
void ck__psa_set_clock(long long (*clock_ns)(void));

/*
 * The plugin's configuration (pod-security.admission.config.k8s.io/v1
 * PodSecurityConfiguration, from --admission-control-config-file): the policy of a
 * namespace without labels, and who is never evaluated.
 */
struct ck__psa_config {
    struct ck__psa_policy defaults;
    json_t *usernames, *namespaces, *runtime_classes; /* arrays of names */
};

/*
 * Reads a PodSecurityConfiguration (JSON) with its defaulting (levels privileged, versions
 * latest) and validation: 0 and *ret (free it with ck__psa_config_free()), or CK_EINVAL
 * with the errors as Kubernetes aggregates them (`defaults.enforce: Invalid value: "x":
 * must be one of privileged, baseline, restricted`); CK_ENOMEM.
 */
int ck__psa_config_parse(const json_t *cfg, struct ck__psa_config **ret, struct ck_err *reterr);
void ck__psa_config_free(struct ck__psa_config *c);
/* Whether name is in list (an exemption list of a configuration; NULL: none). */
bool ck__psa_exempt(const json_t *list, const char *name);

#endif
