/*
 * preemption.c - kube-scheduler's default PostFilter, DefaultPreemption, as pure
 * functions over the cache's summaries.
 *
 * Mirrors pkg/scheduler/framework/preemption/preemption.go and
 * plugins/defaultpreemption/default_preemption.go of Kubernetes 1.32:
 * - SelectVictimsOnNode: every pod of a lower priority than the preemptor is taken off
 *   the node; if the preemptor then passes the filters, the pods are given back one by
 *   one, the most important first (MoreImportantPod: higher priority, then the earlier
 *   start), those whose eviction would violate a PodDisruptionBudget before the others
 *   (filterPodsWithPDBViolation), and each that no longer lets the preemptor fit stays
 *   a victim;
 * - pickOneNodeForPreemption: among the nodes where that works, the fewest budget
 *   violations, the lowest highest-priority victim, the smallest sum of priorities, the
 *   fewest victims, the latest start of the highest-priority victims, the first node.
 *
 * scheduler.c runs them when a pod fits nowhere, evicts the victims and nominates the
 * pod to the node (cache.c).
 *
 * Threading: pure; the caller holds the cache's lock while the summaries are read.
 *
 * Tested by tests/controllers/test_scheduler_preemption.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "internal.h"

/* MoreImportantPod: a higher priority, then the earlier start. */
static int more_important_first(const void *x, const void *y)
{
    const struct ck__sched_pod *a = (*(struct ck__sched_placed *const *)x)->info;
    const struct ck__sched_pod *b = (*(struct ck__sched_placed *const *)y)->info;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * filterPodsWithPDBViolation: walks the potential victims in order, spending each
 * matching budget's allowed disruptions (a pod the budget already counts as disrupted
 * spends nothing); a pod that takes a budget below zero violates it.
 */
static void mark_violations(struct ck__sched_placed *const *order, size_t n,
                            const struct ck__sched_budget *budgets, size_t n_budgets,
                            int64_t *allowed)
{
    for (size_t b = 0; b < n_budgets; b++)
        allowed[b] = budgets[b].allowed;
    for (size_t i = 0; i < n; i++) {
        struct ck__sched_placed *v = order[i];
        v->violates = false;
        if (!json_object_size(v->labels)) /* a pod without labels matches no budget */
            continue;
        const char *slash = strchr(v->key, '/');
        size_t ns_len = slash ? (size_t)(slash - v->key) : 0;
        for (size_t b = 0; b < n_budgets; b++) {
            const struct ck__sched_budget *budget = &budgets[b];
            if (strlen(budget->namespace) != ns_len ||
                strncmp(budget->namespace, v->key, ns_len) != 0 || !budget->selector ||
                ck_label_selector_is_empty(budget->selector) ||
                !ck_label_selector_matches(budget->selector, v->labels) ||
                json_object_get(budget->disrupted, v->name))
                continue;
            if (--allowed[b] < 0)
                v->violates = true;
        }
    }
}

/* The pod's summary without its owner, so that a node copy's owner counts stay untouched. */
static struct ck__sched_pod ownerless(const struct ck__sched_pod *p)
{
    struct ck__sched_pod copy = *p;
    copy.owner_uid = NULL;
    return copy;
}

int ck__sched_select_victims(const struct ck__sched_pod *p, const struct ck__sched_node *n,
                             struct ck__sched_placed *pods, size_t n_pods,
                             const struct ck__sched_budget *budgets, size_t n_budgets,
                             size_t *ret_violations, struct ck__sched_status *st)
{
    *ret_violations = 0;
    memset(st, 0, sizeof(*st));
    struct ck__sched_node sim;
    struct ck__sched_placed **potential = malloc((n_pods + 1) * sizeof(*potential));
    int64_t *allowed = malloc((n_budgets + 1) * sizeof(*allowed));
    if (!potential || !allowed || ck__sched_node_copy(&sim, n) < 0) {
        free(potential);
        free(allowed);
        return CK_ENOMEM;
    }
    size_t k = 0;
    int r = 0;
    for (size_t i = 0; i < n_pods && r == 0; i++) {
        pods[i].victim = pods[i].violates = false;
        if (pods[i].info->priority >= p->priority)
            continue;
        potential[k++] = &pods[i];
        struct ck__sched_pod gone = ownerless(pods[i].info);
        r = ck__sched_node_account(&sim, &gone, -1);
    }
    if (r == 0 && k == 0) {
        st->code = CK__SCHED_UNRESOLVABLE;
        st->reasons[st->n_reasons++] = CK__SCHED_REASON_NO_VICTIMS;
        goto out;
    }
    if (r == 0 && ck__sched_filter(p, &sim, st) != CK__SCHED_SUCCESS)
        goto out; /* not even with every lower-priority pod gone */
    if (r == 0) {
        qsort(potential, k, sizeof(*potential), more_important_first);
        mark_violations(potential, k, budgets, n_budgets, allowed);
        r = 1;
    }
    /* reprieve: the violating ones first, then the others, each in importance order */
    for (int pass = 0; r == 1 && pass < 2; pass++) {
        for (size_t i = 0; i < k && r == 1; i++) {
            struct ck__sched_placed *v = potential[i];
            if (v->violates != (pass == 0))
                continue;
            struct ck__sched_pod back = ownerless(v->info);
            struct ck__sched_status scratch;
            if (ck__sched_node_account(&sim, &back, +1) < 0) {
                r = CK_ENOMEM;
            } else if (ck__sched_filter(p, &sim, &scratch) != CK__SCHED_SUCCESS) {
                ck__sched_node_account(&sim, &back, -1);
                v->victim = true;
                *ret_violations += v->violates;
            }
        }
    }
    if (r == 1)
        memset(st, 0, sizeof(*st));
out:
    ck__sched_node_release(&sim);
    free(potential);
    free(allowed);
    return r;
}

/* What pickOneNodeForPreemption compares of a candidate, in its order. */
struct weighing {
    int64_t violations, highest, sum, count, earliest;
};

static struct weighing weigh(const struct ck__sched_candidate *c)
{
    struct weighing w = {.violations = (int64_t)c->violations, .highest = INT64_MIN};
    for (size_t i = 0; i < c->n_pods; i++) {
        const struct ck__sched_pod *v = c->pods[i].info;
        if (!c->pods[i].victim)
            continue;
        w.count++;
        /* MaxInt32+1 makes every priority count as at least zero */
        w.sum += (int64_t)v->priority + (int64_t)INT32_MAX + 1;
        if (v->priority > w.highest) {
            w.highest = v->priority;
            w.earliest = v->start;
        } else if (v->priority == w.highest && v->start < w.earliest) {
            w.earliest = v->start;
        }
    }
    return w;
}

/* Whether a is preferred to b: each rule decides only on a tie of the ones before. */
static bool preferred(const struct weighing *a, const struct weighing *b)
{
    if (a->violations != b->violations)
        return a->violations < b->violations;
    if (a->highest != b->highest)
        return a->highest < b->highest;
    if (a->sum != b->sum)
        return a->sum < b->sum;
    if (a->count != b->count)
        return a->count < b->count;
    return a->earliest > b->earliest;
}

size_t ck__sched_pick_candidate(const struct ck__sched_candidate *cands, size_t n)
{
    size_t best = 0;
    struct weighing best_w = weigh(&cands[0]);
    for (size_t i = 0; i < n; i++) {
        struct weighing w = weigh(&cands[i]);
        if (w.count == 0)
            return i; /* room without evicting anyone */
        if (i > 0 && preferred(&w, &best_w)) {
            best = i;
            best_w = w;
        }
    }
    return best;
}

size_t ck__sched_preemption_candidates(size_t n)
{
    size_t want = n / 10; /* minCandidateNodesPercentage */
    if (want < 100)       /* minCandidateNodesAbsolute */
        want = 100;
    return want < n ? want : n;
}
