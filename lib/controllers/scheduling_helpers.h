/*
 * scheduling_helpers.h - private to libckube-controllers, never installed: the
 * node-matching predicates the scheduler, the DaemonSet controller and the node
 * lifecycle controller share (scheduling_helpers.c), so that no controller reaches into
 * the scheduler and the three never disagree on whether a pod belongs on a node.
 *
 * Mirrors Kubernetes 1.32's k8s.io/component-helpers/scheduling/corev1: helpers.go
 * (TolerationsTolerateTaint, FindMatchingUntoleratedTaint, MatchNodeSelectorTerms),
 * nodeaffinity/nodeaffinity.go (GetRequiredNodeAffinity(pod).Match(node)), and the
 * v1.Toleration.ToleratesTaint of k8s.io/api/core/v1/toleration.go they build on.
 *
 * Every function only reads its JSON inputs (pods, nodes, taints and tolerations as
 * the API serves them) and returns a decision; a pointer returned is borrowed from an
 * input. Threading: pure, safe from any thread on objects nobody mutates.
 */
#ifndef CKUBE_CONTROLLERS_SCHEDULING_HELPERS_H
#define CKUBE_CONTROLLERS_SCHEDULING_HELPERS_H

#include <jansson.h>
#include <stdbool.h>

/* ---- taints and tolerations --------------------------------------------------------- */

/* Taint effects, as a mask of those a search looks at. */
#define CK__TAINT_NO_SCHEDULE        0x1u
#define CK__TAINT_PREFER_NO_SCHEDULE 0x2u
#define CK__TAINT_NO_EXECUTE         0x4u

/*
 * True when toleration tolerates taint (v1.Toleration.ToleratesTaint): an empty effect
 * matches every effect, an empty key every key; operator Exists matches any value,
 * Equal (or none) the taint's value exactly.
 */
bool ck__toleration_tolerates_taint(const json_t *toleration, const json_t *taint);

/* True when one of tolerations (a JSON array; NULL: none) tolerates taint. */
bool ck__tolerations_tolerate_taint(const json_t *tolerations, const json_t *taint);

/*
 * The first of taints (a JSON array) whose effect is in `effects` (CK__TAINT_* ORed)
 * that no toleration tolerates, or NULL when they are all tolerated
 * (FindMatchingUntoleratedTaint with an effect filter). A taint whose effect is
 * missing or unknown is never looked at.
 */
const json_t *ck__find_untolerated_taint(const json_t *taints, const json_t *tolerations,
                                         unsigned effects);

/* ---- node selectors and affinity ----------------------------------------------------- */

/*
 * True when node matches node_selector (a v1.NodeSelector: {"nodeSelectorTerms": [...]})
 * (MatchNodeSelectorTerms): the terms are ORed, an empty term matches no node; within a
 * term every matchExpressions entry on the node's labels (In, NotIn, Exists,
 * DoesNotExist, Gt, Lt) and every matchFields entry on metadata.name must match.
 */
bool ck__node_selector_terms_match(const json_t *node, const json_t *node_selector);

/*
 * True when pod may go to node by its spec.nodeSelector (every label present with the
 * value given) and its required node affinity
 * (requiredDuringSchedulingIgnoredDuringExecution, ck__node_selector_terms_match);
 * GetRequiredNodeAffinity(pod).Match(node). Only the pod's spec is read.
 */
bool ck__required_node_affinity_matches(const json_t *pod, const json_t *node);

#endif /* CKUBE_CONTROLLERS_SCHEDULING_HELPERS_H */
