/*
 * ckube/quota.h - resource quota accounting: what an object uses of a ResourceQuota,
 * whether a quota covers it, and the arithmetic of resource lists.
 *
 * Mirrors k8s.io/apiserver pkg/quota/v1 (resources.go, generic/evaluator.go) and
 * Kubernetes' pkg/quota/v1/evaluator/core (pods.go, services.go,
 * persistent_volume_claims.go, registry.go): one evaluator per resource (pods,
 * services, persistentvolumeclaims) and an object-count evaluator for every other one
 * (`count/<resource>[.<group>]`, plus the legacy names configmaps, secrets,
 * replicationcontrollers and resourcequotas). The ResourceQuota admission plugin
 * (lib/apiserver/admission/resource_quota.c) and the resourcequota controller
 * (lib/controllers/resourcequota/) both measure with these functions, so that what
 * admission charges and what the controller recounts agree.
 *
 * A resource list is a JSON object of quantity strings, as the API writes one:
 * {"pods": "2", "requests.cpu": "500m"}. Sums keep the format (binary or decimal) of
 * the value added to and print as resource.Quantity's String() does.
 *
 * Threading: every function is pure.
 */
#ifndef CKUBE_QUOTA_H
#define CKUBE_QUOTA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Quantity.String() of a milli value: "1500m", "2", "3k", and with binary "128Mi"
 * (a binary value that is not a whole number of Ki prints in decimal). Writes into
 * buf (48 bytes hold any) and returns it.
 */
const char *ck_quantity_format(int64_t milli, bool binary, char *buf, size_t size);

/* Whether a quantity's text has a binary suffix (Ki, Mi, ...). */
bool ck_quantity_is_binary(const char *text);

/*
 * quota.Add: adds every entry of delta to into (a resource list); an entry already in
 * into keeps its format. 0, or -1 when a value is not a quantity or out of memory.
 */
int ck_quota_add(json_t *into, const json_t *delta);

/*
 * Whether the evaluator of group's resource counts the operation: pods on create,
 * services and claims on create and update, every other resource on create. Events
 * and the review kinds are never counted (Kubernetes' ignored resources).
 */
bool ck_quota_handles(const char *group, const char *resource, bool update);

/* Whether quota resource name counts something of group's resource (MatchingResources). */
bool ck_quota_matching_resource(const char *group, const char *resource, const char *name);

/*
 * The usage of obj, an object of group's resource, as a new resource list (NULL out of
 * memory). now is the wall clock in seconds: a pod being deleted past its grace period
 * uses nothing but its count, as does a pod that has terminated (Succeeded, Failed).
 */
json_t *ck_quota_usage(const char *group, const char *resource, const json_t *obj, int64_t now);

/*
 * generic.Matches: whether quota (a ResourceQuota) covers obj: its status.hard names a
 * resource the evaluator counts and obj matches every scope of spec.scopes and
 * spec.scopeSelector (only pods match scopes).
 */
bool ck_quota_matches(const json_t *quota, const char *group, const char *resource,
                      const json_t *obj);

/*
 * getScopeSelectorsFromQuota: quota's spec.scopes as Exists requirements, then the
 * requirements of its spec.scopeSelector, as a new JSON array of
 * ScopedResourceSelectorRequirements ({scopeName, operator, values}); NULL out of memory.
 */
json_t *ck_quota_scope_selectors(const json_t *quota);

/*
 * MatchingScopes: appends to out (a JSON array) each requirement of selectors (a JSON
 * array, may be NULL) that obj matches; only pods match scopes. 0, or -1 out of memory.
 */
int ck_quota_matching_scopes(const char *group, const char *resource, const json_t *obj,
                             const json_t *selectors, json_t *out);

/*
 * The pod evaluator's Constraints: when the quota's hard resources constrain cpu or
 * memory, every container and init container must say them. Returns false and leaves
 * buf alone when pod satisfies hard; else true with Kubernetes' words in buf
 * ("must specify limits.cpu for: a,b; requests.memory for: a"). Other resources have no
 * constraints.
 */
bool ck_quota_constraints_fail(const char *group, const char *resource, const json_t *hard,
                               const json_t *obj, char *buf, size_t size);

#endif /* CKUBE_QUOTA_H */
