/*
 * test_scheduler_preemption.c - tests for lib/controllers/scheduler/preemption.c, the
 * default PostFilter: which pods SelectVictimsOnNode evicts (the fewest, the most
 * important reprieved first, pods of an equal or higher priority never, a pod that would
 * not fit even on an empty node helped by nobody, host ports freed, budgets spent in
 * importance order and their violations reprieved first, pods a budget already counts as
 * disrupted spending nothing), the order of pickOneNodeForPreemption's rules, and how
 * many candidates are looked for. The cases follow the facts of Kubernetes 1.32's
 * default_preemption_test.go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/controllers/scheduler/internal.h"
#include "ckube/api.h"

#define N(x) (sizeof(x) / sizeof(x[0]))

/* A node of 4 cpu, 8Gi and 110 pods. */
#define NODE                                                                                       \
    "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\","                  \
    "\"memory\":\"8Gi\",\"pods\":\"110\"}}}"

/* A pod: its name, priority, cpu request, start second and labels; ports optional. */
struct spec {
    const char *name;
    int priority;
    const char *cpu;
    int start;
    const char *labels; /* JSON object, or NULL */
    int host_port;      /* 0: none */
};

static json_t *pod_json(const struct spec *s)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"%s%s},\"spec\":{\"priority\":%d,"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}"
             "%s}]},\"status\":{\"startTime\":\"2026-01-01T00:00:%02dZ\"}}",
             s->name, s->labels ? ",\"labels\":" : "", s->labels ? s->labels : "", s->priority,
             s->cpu, s->host_port ? ",\"ports\":[{\"containerPort\":80,\"hostPort\":80}]" : "",
             s->start);
    json_t *pod = json_loads(text, 0, NULL);
    assert_non_null(pod);
    return pod;
}

/* A node with the pods of specs placed on it, and their preemption entries. */
struct world {
    struct ck__sched_node node;
    json_t *objects[8];
    struct ck__sched_pod infos[8];
    struct ck__sched_placed placed[8];
    char keys[8][64];
    size_t n;
};

static void world_init(struct world *w, const struct spec *specs, size_t n)
{
    memset(w, 0, sizeof(*w));
    json_t *node = json_loads(NODE, 0, NULL);
    w->node.name = strdup("n1");
    ck__sched_node_set(&w->node, node);
    json_decref(node);
    w->n = n;
    for (size_t i = 0; i < n; i++) {
        w->objects[i] = pod_json(&specs[i]);
        assert_int_equal(ck__sched_pod_init(&w->infos[i], w->objects[i]), 0);
        assert_int_equal(ck__sched_node_account(&w->node, &w->infos[i], +1), 0);
        snprintf(w->keys[i], sizeof(w->keys[i]), "ns/%s", specs[i].name);
        w->placed[i] = (struct ck__sched_placed){
            .key = w->keys[i],
            .name = w->keys[i] + 3,
            .info = &w->infos[i],
            .labels = json_object_get(json_object_get(w->objects[i], "metadata"), "labels")};
    }
}

static void world_release(struct world *w)
{
    for (size_t i = 0; i < w->n; i++) {
        ck__sched_pod_release(&w->infos[i]);
        json_decref(w->objects[i]);
    }
    ck__sched_node_release(&w->node);
}

/* The victims' names, space-separated, in pods' order. */
static void victims_of(const struct world *w, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < w->n; i++)
        if (w->placed[i].victim)
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? " " : "",
                     w->placed[i].name);
}

/* A budget of namespace ns over app=web allowing `allowed` more disruptions. */
static struct ck__sched_budget budget(int64_t allowed, const json_t *disrupted)
{
    struct ck__sched_budget b = {.namespace = "ns", .disrupted = disrupted, .allowed = allowed};
    json_t *selector = json_pack("{s:{s:s}}", "matchLabels", "app", "web");
    assert_int_equal(ck_label_selector_from_object(selector, &b.selector, &(struct ck_err){0}), 0);
    json_decref(selector);
    return b;
}

struct victims_case {
    const char *name;
    struct spec preemptor;
    struct spec pods[4];
    size_t n_pods;
    int budget_allowed;    /* < 0: no budget */
    const char *disrupted; /* a pod the budget already counts as disrupted, or NULL */
    int want;              /* 1 fits with victims, 0 not */
    const char *victims;   /* want 1: the victims' names */
    size_t violations;
    const char *reason; /* want 0: the status's reason */
};

#define WEB "{\"app\":\"web\"}"

static const struct victims_case victims_cases[] = {
    {"the less important of two is enough (the later start goes)",
     {"p", 10, "2", 0, NULL, 0},
     {{"a", 1, "2", 1, NULL, 0}, {"b", 1, "2", 2, NULL, 0}},
     2,
     -1,
     NULL,
     1,
     "b",
     0,
     NULL},
    {"the lower priority goes before the earlier start matters",
     {"p", 10, "2", 0, NULL, 0},
     {{"a", 1, "2", 1, NULL, 0}, {"b", 5, "2", 2, NULL, 0}},
     2,
     -1,
     NULL,
     1,
     "a",
     0,
     NULL},
    {"both go when one is not enough",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 1, "2", 1, NULL, 0}, {"b", 1, "2", 2, NULL, 0}},
     2,
     -1,
     NULL,
     1,
     "a b",
     0,
     NULL},
    {"equal or higher priorities are never victims",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 10, "2", 1, NULL, 0}, {"b", 20, "2", 2, NULL, 0}},
     2,
     -1,
     NULL,
     0,
     NULL,
     0,
     CK__SCHED_REASON_NO_VICTIMS},
    {"a pod too big for the empty node is not helped",
     {"p", 10, "5", 0, NULL, 0},
     {{"a", 1, "1", 1, NULL, 0}},
     1,
     -1,
     NULL,
     0,
     NULL,
     0,
     "Insufficient cpu"},
    {"not helped when the higher-priority pods alone leave too little",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 1, "1", 1, NULL, 0}, {"b", 20, "2", 2, NULL, 0}},
     2,
     -1,
     NULL,
     0,
     NULL,
     0,
     "Insufficient cpu"},
    {"a host port held by a lower pod frees it",
     {"p", 10, "100m", 0, NULL, 1},
     {{"a", 1, "100m", 1, NULL, 1}, {"b", 1, "100m", 2, NULL, 0}},
     2,
     -1,
     NULL,
     1,
     "a",
     0,
     NULL},
    {"a budget: its violating pod is reprieved first",
     {"p", 10, "2", 0, NULL, 0},
     {{"a", 1, "2", 1, WEB, 0}, {"b", 1, "2", 2, WEB, 0}},
     2,
     1,
     NULL,
     1,
     "a",
     0,
     NULL},
    {"a budget spent out: a victim violates it",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 1, "2", 1, WEB, 0}, {"b", 1, "2", 2, WEB, 0}},
     2,
     1,
     NULL,
     1,
     "a b",
     1,
     NULL},
    {"a pod already disrupted spends nothing",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 1, "2", 1, WEB, 0}, {"b", 1, "2", 2, WEB, 0}},
     2,
     1,
     "a",
     1,
     "a b",
     0,
     NULL},
    {"pods the budget does not select spend nothing",
     {"p", 10, "3", 0, NULL, 0},
     {{"a", 1, "2", 1, "{\"app\":\"db\"}", 0}, {"b", 1, "2", 2, NULL, 0}},
     2,
     0,
     NULL,
     1,
     "a b",
     0,
     NULL},
};

static void test_select_victims(void **state)
{
    (void)state;
    for (size_t c = 0; c < N(victims_cases); c++) {
        const struct victims_case *vc = &victims_cases[c];
        struct world w;
        world_init(&w, vc->pods, vc->n_pods);
        json_t *preemptor = pod_json(&vc->preemptor);
        struct ck__sched_pod p;
        assert_int_equal(ck__sched_pod_init(&p, preemptor), 0);
        json_t *disrupted = vc->disrupted ? json_pack("{s:s}", vc->disrupted, "x") : NULL;
        struct ck__sched_budget b = vc->budget_allowed >= 0 ? budget(vc->budget_allowed, disrupted)
                                                            : (struct ck__sched_budget){0};
        size_t violations = 99;
        struct ck__sched_status st;
        int r = ck__sched_select_victims(&p, &w.node, w.placed, w.n, &b,
                                         vc->budget_allowed >= 0 ? 1 : 0, &violations, &st);
        char got[128];
        victims_of(&w, got, sizeof(got));
        if (r != vc->want)
            fail_msg("%s: %d, want %d (%s)", vc->name, r, vc->want,
                     st.n_reasons ? st.reasons[0] : got);
        if (vc->want == 1) {
            if (strcmp(got, vc->victims) != 0)
                fail_msg("%s: victims \"%s\", want \"%s\"", vc->name, got, vc->victims);
            if (violations != vc->violations)
                fail_msg("%s: %zu violations, want %zu", vc->name, violations, vc->violations);
        } else {
            assert_true(st.n_reasons >= 1);
            if (strcmp(st.reasons[0], vc->reason) != 0)
                fail_msg("%s: reason \"%s\", want \"%s\"", vc->name, st.reasons[0], vc->reason);
            assert_string_equal(got, ""); /* nobody marked */
        }
        /* the node itself is untouched: the simulation works on a copy */
        assert_int_equal(w.node.requested.pods, (int64_t)vc->n_pods);
        ck_label_selector_free(b.selector);
        json_decref(disrupted);
        ck__sched_pod_release(&p);
        json_decref(preemptor);
        world_release(&w);
    }
}

/* A candidate whose victims have the given priorities and start seconds. */
struct cand_spec {
    size_t violations;
    int priorities[3];
    int starts[3];
    size_t n;
};

static void test_pick_candidate_rules_in_order(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        struct cand_spec cands[3];
        size_t n, want;
    } cases[] = {
        {"the fewest budget violations",
         {{1, {1}, {5}, 1}, {0, {9, 9}, {5, 5}, 2}, {2, {0}, {5}, 1}},
         3,
         1},
        {"then the lowest highest-priority victim",
         {{0, {5, 1}, {5, 5}, 2}, {0, {3, 3}, {5, 5}, 2}, {0, {4}, {5}, 1}},
         3,
         1},
        {"then the smallest sum of priorities",
         {{0, {5, 5}, {5, 5}, 2}, {0, {5, 1}, {5, 5}, 2}, {0, {5, 3}, {5, 5}, 2}},
         3,
         1},
        /* priorities count from MinInt32: a victim of the lowest priority adds nothing */
        {"then the fewest victims", {{0, {5, INT32_MIN}, {5, 5}, 2}, {0, {5}, {5}, 1}}, 2, 1},
        {"then the latest start of the highest-priority victims",
         {{0, {5, 1}, {2, 9}, 2}, {0, {5, 1}, {7, 1}, 2}, {0, {5, 1}, {4, 9}, 2}},
         3,
         1},
        {"then the first", {{0, {5}, {5}, 1}, {0, {5}, {5}, 1}}, 2, 0},
        {"a node without victims at once",
         {{0, {1}, {5}, 1}, {0, {0}, {0}, 0}, {0, {0}, {0}, 0}},
         3,
         1},
    };
    for (size_t c = 0; c < N(cases); c++) {
        struct ck__sched_candidate cands[3];
        struct ck__sched_pod infos[3][4];
        struct ck__sched_placed placed[3][4];
        for (size_t i = 0; i < cases[c].n; i++) {
            const struct cand_spec *cs = &cases[c].cands[i];
            for (size_t v = 0; v < cs->n; v++) {
                infos[i][v] =
                    (struct ck__sched_pod){.priority = cs->priorities[v], .start = cs->starts[v]};
                placed[i][v] = (struct ck__sched_placed){.info = &infos[i][v], .victim = true};
            }
            /* a pod that stays never counts */
            infos[i][cs->n] = (struct ck__sched_pod){.priority = INT32_MIN};
            placed[i][cs->n] = (struct ck__sched_placed){.info = &infos[i][cs->n]};
            cands[i] = (struct ck__sched_candidate){
                .pods = placed[i], .n_pods = cs->n + 1, .violations = cs->violations};
        }
        size_t got = ck__sched_pick_candidate(cands, cases[c].n);
        if (got != cases[c].want)
            fail_msg("%s: picked %zu, want %zu", cases[c].name, got, cases[c].want);
    }
}

static void test_how_many_candidates(void **state)
{
    (void)state;
    assert_int_equal(ck__sched_preemption_candidates(3), 3);
    assert_int_equal(ck__sched_preemption_candidates(100), 100);
    assert_int_equal(ck__sched_preemption_candidates(500), 100);
    assert_int_equal(ck__sched_preemption_candidates(5000), 500);
}

/* The pod summary reads what preemption weighs. */
static void test_pod_summary(void **state)
{
    (void)state;
    json_t *pod =
        json_loads("{\"metadata\":{\"name\":\"v\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
                   "\"deletionTimestamp\":\"2026-01-01T00:01:00Z\"},\"spec\":{\"priority\":-7,"
                   "\"preemptionPolicy\":\"Never\",\"containers\":[{\"name\":\"c\"}]},\"status\":{"
                   "\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
                   "\"PreemptionByScheduler\"}]}}",
                   0, NULL);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    assert_int_equal(p.priority, -7);
    assert_true(p.preempt_never);
    assert_true(p.terminating_by_preemption);
    assert_int_equal(p.start, 1767225600); /* no startTime: the creation */
    ck__sched_pod_release(&p);
    /* being deleted for another reason is not being preempted */
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 0), "reason",
        json_string("EvictionByEvictionAPI"));
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    assert_false(p.terminating_by_preemption);
    ck__sched_pod_release(&p);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_victims),
        cmocka_unit_test(test_pick_candidate_rules_in_order),
        cmocka_unit_test(test_how_many_candidates),
        cmocka_unit_test(test_pod_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
