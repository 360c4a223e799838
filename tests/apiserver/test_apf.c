/*
 * test_apf.c - tests for lib/apiserver/apf.c, API Priority and Fairness applied to
 * requests: classification by matchingPrecedence then name, with Kubernetes' rule
 * matching (users, groups, service accounts, resource rules with subresources,
 * clusterScope and namespaces, non-resource URL prefixes), dangling schemas left
 * out and the UIDs the response headers carry; exempt levels never limited; the
 * concurrency limits shared by shares; Reject answering with Retry-After; queuing
 * with shuffle sharding, the queue length limit, the wait limit (a quarter of the
 * deadline) and shutdown; work estimates (list seats from object counts, a write's
 * final seats from the watches counted); fair queuing by virtual finish time on a fake
 * clock (two flows of different widths sharing seat-seconds evenly, a wide head not
 * starved); the Dealer's hands; the metrics; many threads sharing one seat; borrowing
 * between levels every 10 s (a busy level taking an idle one's lendable seats and
 * giving them back, the exempt level lending its own), with the limits worked out
 * by hand from apf_controller.go's and conc_alloc.go's algorithm; the 400 for a
 * ?timeout that does not parse.
 */
#include "cktest.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"

static const char *levels_json =
    "[{\"metadata\":{\"name\":\"exempt\",\"uid\":\"pl-exempt\"},\"spec\":{\"type\":\"Exempt\"}},"
    " {\"metadata\":{\"name\":\"reject\",\"uid\":\"pl-reject\"},\"spec\":{\"type\":\"Limited\","
    "   \"limited\":{\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Reject\"}}}},"
    " {\"metadata\":{\"name\":\"queue\",\"uid\":\"pl-queue\"},\"spec\":{\"type\":\"Limited\","
    "   \"limited\":{\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Queue\","
    "   \"queuing\":{\"queues\":4,\"handSize\":2,\"queueLengthLimit\":2}}}}},"
    " {\"metadata\":{\"name\":\"big\",\"uid\":\"pl-big\"},\"spec\":{\"type\":\"Limited\","
    "   \"limited\":{\"nominalConcurrencyShares\":8,\"limitResponse\":{\"type\":\"Reject\"}}}}]";

static const char *schemas_json =
    "[{\"metadata\":{\"name\":\"zz-masters\",\"uid\":\"fs-masters\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"exempt\"},\"matchingPrecedence\":1,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"system:masters\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"clusterScope\":true,\"namespaces\":[\"*\"]}],"
    "     \"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}]}},"
    /* same precedence as b-alice: the name decides */
    " {\"metadata\":{\"name\":\"c-alice\",\"uid\":\"fs-c\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"big\"},\"matchingPrecedence\":10,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"alice\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"namespaces\":[\"*\"]}]}]}},"
    " {\"metadata\":{\"name\":\"b-alice\",\"uid\":\"fs-b\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"reject\"},\"matchingPrecedence\":10,"
    "   \"distinguisherMethod\":{\"type\":\"ByUser\"},"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"alice\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"get\",\"create\"],\"apiGroups\":[\"\",\"apps\"],"
    "       \"resources\":[\"pods\",\"deployments/scale\"],\"namespaces\":[\"team\"]}],"
    "     \"nonResourceRules\":[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/healthz\",\"/apis/*\","
    "       \"/openapi\"]}]}]}},"
    " {\"metadata\":{\"name\":\"robots\",\"uid\":\"fs-robots\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"queue\"},\"matchingPrecedence\":20,"
    "   \"distinguisherMethod\":{\"type\":\"ByNamespace\"},"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"ServiceAccount\",\"serviceAccount\":"
    "       {\"namespace\":\"bots\",\"name\":\"*\"}},{\"kind\":\"ServiceAccount\",\"serviceAccount\":"
    "       {\"namespace\":\"kube-system\",\"name\":\"builder\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"clusterScope\":true}]}]}},"
    " {\"metadata\":{\"name\":\"dangling\",\"uid\":\"fs-dangling\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"missing\"},\"matchingPrecedence\":2,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"*\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"clusterScope\":true,\"namespaces\":[\"*\"]}]}]}},"
    " {\"metadata\":{\"name\":\"catch-all\",\"uid\":\"fs-catch-all\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"big\"},\"matchingPrecedence\":10000,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"system:authenticated\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"clusterScope\":true,\"namespaces\":[\"*\"]}],"
    "     \"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}]}}]";

/* The test's FlowSchemas and PriorityLevelConfigurations, new arrays. */
static void load_config(json_t **ret_schemas, json_t **ret_levels)
{
    *ret_schemas = json_loads(schemas_json, 0, NULL);
    *ret_levels = json_loads(levels_json, 0, NULL);
    assert_non_null(*ret_schemas);
    assert_non_null(*ret_levels);
}

static struct ck__apf *configured(unsigned server_limit)
{
    struct ck__apf *a = ck__apf_new(server_limit);
    assert_non_null(a);
    json_t *schemas, *levels;
    load_config(&schemas, &levels);
    assert_int_equal(ck__apf_configure(a, schemas, levels), 0);
    json_decref(schemas);
    json_decref(levels);
    return a;
}

static const char *const authenticated[] = {"system:authenticated"};
static const char *const masters[] = {"system:masters", "system:authenticated"};

static struct ck__apf_digest resource(const char *user, const char *verb, const char *group,
                                      const char *res, const char *sub, const char *ns)
{
    struct ck__apf_digest d = {.user = user,
                               .groups = authenticated,
                               .n_groups = 1,
                               .resource_request = true,
                               .verb = verb,
                               .api_group = group,
                               .resource = res,
                               .subresource = sub,
                               .namespace = ns};
    return d;
}

/* A member of system:masters' request. */
static struct ck__apf_digest admin(const char *verb, const char *res)
{
    struct ck__apf_digest d = resource("admin", verb, "", res, "", "x");
    d.groups = masters;
    d.n_groups = 2;
    return d;
}

static struct ck__apf_digest nonresource(const char *user, const char *verb, const char *path)
{
    struct ck__apf_digest d = {
        .user = user, .groups = authenticated, .n_groups = 1, .verb = verb, .path = path};
    return d;
}

/* The schema UID d is classified by ("" when none); its ticket is done. */
static const char *schema_of(struct ck__apf *a, struct ck__apf_digest d)
{
    static struct ck__apf_ticket t;
    enum ck__apf_verdict v = ck__apf_admit(a, &d, &t);
    assert_int_not_equal(v, CK__APF_QUEUE);
    ck__apf_done(a, &t);
    return t.classified ? t.fs_uid : "";
}

static void test_classifies_by_precedence_then_name_with_kubernetes_rules(void **state)
{
    (void)state;
    struct ck__apf *a = configured(600);
    assert_string_equal(schema_of(a, admin("delete", "secrets")),
                        "fs-masters"); /* the dangling one is left out */
    /* b-alice before c-alice: same precedence, name order */
    assert_string_equal(schema_of(a, resource("alice", "get", "", "pods", "", "team")), "fs-b");
    assert_string_equal(
        schema_of(a, resource("alice", "create", "apps", "deployments", "scale", "team")), "fs-b");
    /* a verb, a group, a namespace, a subresource outside b-alice's rule: c-alice */
    assert_string_equal(schema_of(a, resource("alice", "list", "", "pods", "", "team")), "fs-c");
    assert_string_equal(schema_of(a, resource("alice", "get", "batch", "pods", "", "team")),
                        "fs-c");
    assert_string_equal(schema_of(a, resource("alice", "get", "", "pods", "", "other")), "fs-c");
    assert_string_equal(schema_of(a, resource("alice", "get", "", "pods", "log", "team")), "fs-c");
    /* cluster-scoped: c-alice has no clusterScope, so catch-all */
    assert_string_equal(schema_of(a, resource("alice", "get", "", "nodes", "", "")),
                        "fs-catch-all");
    /* non-resource URLs: exact, "/apis/" + "*" as a prefix, "/openapi" as "/openapi/" too */
    assert_string_equal(schema_of(a, nonresource("alice", "get", "/healthz")), "fs-b");
    assert_string_equal(schema_of(a, nonresource("alice", "get", "/apis/apps/v1")), "fs-b");
    assert_string_equal(schema_of(a, nonresource("alice", "get", "/openapi/v3")), "fs-b");
    assert_string_equal(schema_of(a, nonresource("alice", "get", "/healthz/ping")), "fs-b");
    assert_string_equal(schema_of(a, nonresource("alice", "get", "/apisx")), "fs-catch-all");
    assert_string_equal(schema_of(a, nonresource("alice", "post", "/healthz")), "fs-catch-all");
    /* service accounts: any of a namespace, or one by name */
    assert_string_equal(
        schema_of(a, resource("system:serviceaccount:bots:r2", "get", "", "nodes", "", "")),
        "fs-robots");
    assert_string_equal(schema_of(a, resource("system:serviceaccount:kube-system:builder", "get",
                                              "", "nodes", "", "")),
                        "fs-robots");
    assert_string_equal(schema_of(a, resource("system:serviceaccount:kube-system:other", "get", "",
                                              "nodes", "", "")),
                        "fs-catch-all");
    assert_string_equal(
        schema_of(a, resource("system:serviceaccount:botsx:r2", "get", "", "nodes", "", "")),
        "fs-catch-all");
    /* no group that catch-all names: not classified, not limited */
    struct ck__apf_digest anon = resource("nobody", "get", "", "nodes", "", "");
    anon.n_groups = 0;
    assert_string_equal(schema_of(a, anon), "");
    ck__apf_free(a);
}

static void test_ticket_carries_both_uids(void **state)
{
    (void)state;
    struct ck__apf *a = configured(600);
    struct ck__apf_digest d = resource("alice", "get", "", "pods", "", "team");
    struct ck__apf_ticket t;
    assert_int_equal(ck__apf_admit(a, &d, &t), CK__APF_EXECUTE);
    assert_true(t.classified);
    assert_string_equal(t.fs_uid, "fs-b");
    assert_string_equal(t.pl_uid, "pl-reject");
    assert_true(t.seated);
    ck__apf_done(a, &t);
    assert_false(t.seated);
    ck__apf_free(a);
}

static void test_exempt_is_never_limited(void **state)
{
    (void)state;
    struct ck__apf *a = configured(2);
    struct ck__apf_digest d = admin("create", "pods");
    static struct ck__apf_ticket t[1000];
    for (size_t i = 0; i < 1000; i++) {
        assert_int_equal(ck__apf_admit(a, &d, &t[i]), CK__APF_EXECUTE);
        assert_true(t[i].seated); /* its seats count as its level's demand */
        assert_string_equal(t[i].pl_uid, "pl-exempt");
    }
    for (size_t i = 0; i < 1000; i++)
        ck__apf_done(a, &t[i]);
    ck__apf_free(a);
}

static void test_reject_level_refuses_beyond_its_share(void **state)
{
    (void)state;
    /* shares 1 + 1 + 8 = 10 of 20 seats: reject gets ceil(20 * 1 / 10) = 2 */
    struct ck__apf *a = configured(20);
    struct ck__apf_digest d = resource("alice", "get", "", "pods", "", "team");
    struct ck__apf_ticket t1, t2, t3, t4;
    assert_int_equal(ck__apf_admit(a, &d, &t1), CK__APF_EXECUTE);
    assert_int_equal(ck__apf_admit(a, &d, &t2), CK__APF_EXECUTE);
    assert_int_equal(ck__apf_admit(a, &d, &t3), CK__APF_REJECT);
    assert_string_equal(t3.fs_uid, "fs-b"); /* still classified: the 429 has the headers */
    assert_int_equal(t3.retry_after, 1);
    ck__apf_done(a, &t3); /* a rejected ticket holds nothing */
    /* a level with more shares is not affected: big has ceil(20 * 8 / 10) = 16 */
    struct ck__apf_digest other = resource("alice", "list", "", "pods", "", "team");
    struct ck__apf_ticket big[16];
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(ck__apf_admit(a, &other, &big[i]), CK__APF_EXECUTE);
    assert_int_equal(ck__apf_admit(a, &other, &t4), CK__APF_REJECT);
    for (size_t i = 0; i < 16; i++)
        ck__apf_done(a, &big[i]);
    ck__apf_done(a, &t1);
    assert_int_equal(ck__apf_admit(a, &d, &t4), CK__APF_EXECUTE);
    ck__apf_done(a, &t2);
    ck__apf_done(a, &t4);
    char *text = ck__apf_metrics_text(a);
    assert_non_null(text);
    assert_non_null(strstr(text,
                           "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"b-"
                           "alice\",priority_level=\"reject\",reason=\"concurrency-limit\"} 1\n"));
    assert_non_null(strstr(text, "apiserver_flowcontrol_current_executing_requests{flow_schema=\"b-"
                                 "alice\",priority_level=\"reject\"} 0\n"));
    free(text);
    ck__apf_free(a);
}

struct waiter {
    struct ck__apf_ticket t;
    int woken;
};

static void note_wake(struct ck__apf_ticket *t)
{
    ((struct waiter *)(void *)t)->woken++;
}

/* Admits d for w: EXECUTE, REJECT, or QUEUE once it is queued. */
static enum ck__apf_verdict arrive(struct ck__apf *a, struct ck__apf_digest d, struct waiter *w,
                                   double deadline)
{
    enum ck__apf_verdict v = ck__apf_admit(a, &d, &w->t);
    if (v != CK__APF_QUEUE)
        return v;
    w->t.wake = note_wake;
    return ck__apf_enqueue(a, &w->t, deadline);
}

static void test_queue_hands_seats_in_turn_and_bounds_queues(void **state)
{
    (void)state;
    /* queue has shares 1 of 10 with 10 seats: 1 seat; 4 queues, hands of 2, length 2 */
    struct ck__apf *a = configured(10);
    struct ck__apf_digest ns1 =
        resource("system:serviceaccount:bots:a", "get", "", "nodes", "", "");
    struct waiter running = {0}, w[5] = {0};
    assert_int_equal(arrive(a, ns1, &running, 100), CK__APF_EXECUTE);
    /* one flow reaches two queues of two: four wait, the fifth is refused */
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(arrive(a, ns1, &w[i], 100 + (double)i), CK__APF_QUEUE);
    assert_int_equal(arrive(a, ns1, &w[4], 100), CK__APF_REJECT);
    assert_int_equal(w[4].woken, 0); /* answered at once, never woken */
    assert_true(w[0].t.queue != w[1].t.queue || w[0].t.queue != w[2].t.queue);
    /* the seat goes to one waiter when the running one is done */
    ck__apf_done(a, &running.t);
    int woken = 0;
    size_t first = 5;
    for (size_t i = 0; i < 4; i++)
        if (w[i].woken) {
            woken++;
            first = i;
        }
    assert_int_equal(woken, 1);
    assert_int_equal(w[first].t.verdict, CK__APF_EXECUTE);
    assert_true(w[first].t.seated);
    /* the wait limit: the ones due by 102 are rejected, the one due at 103 still waits */
    ck__apf_expire(a, 102);
    for (size_t i = 0; i < 4; i++) {
        if (i == first)
            continue;
        assert_int_equal(w[i].woken, i < 3 ? 1 : 0);
        if (i < 3)
            assert_int_equal(w[i].t.verdict, CK__APF_REJECT);
    }
    ck__apf_done(a, &w[first].t);
    if (first != 3) { /* the seat goes on to the last waiter */
        assert_int_equal(w[3].woken, 1);
        assert_int_equal(w[3].t.verdict, CK__APF_EXECUTE);
        ck__apf_done(a, &w[3].t);
    }
    /* shutting down rejects whatever still waits, and every later arrival */
    struct waiter running2 = {0}, queued = {0}, late = {0};
    assert_int_equal(arrive(a, ns1, &running2, 200), CK__APF_EXECUTE);
    assert_int_equal(arrive(a, ns1, &queued, 200), CK__APF_QUEUE);
    ck__apf_stop(a);
    assert_int_equal(queued.woken, 1);
    assert_int_equal(queued.t.verdict, CK__APF_REJECT);
    assert_int_equal(arrive(a, ns1, &late, 300), CK__APF_REJECT);
    ck__apf_done(a, &running2.t);
    char *text = ck__apf_metrics_text(a);
    assert_non_null(strstr(text, "reason=\"queue-full\"} 1\n"));
    assert_non_null(strstr(text, "reason=\"time-out\"} "));
    assert_non_null(strstr(text, "apiserver_flowcontrol_current_inqueue_requests{flow_schema="
                                 "\"robots\",priority_level=\"queue\"} 0\n"));
    free(text);
    ck__apf_free(a);
}

static void test_cluster_requests_by_namespace_are_one_flow(void **state)
{
    (void)state;
    struct ck__apf *a = configured(10);
    struct waiter running = {0}, w[64] = {0};
    char users[64][64];
    struct ck__apf_digest d = resource("system:serviceaccount:bots:a", "get", "", "nodes", "", "");
    assert_int_equal(arrive(a, d, &running, 100), CK__APF_EXECUTE);
    /* ByNamespace: cluster-scoped requests of many users are all the flow "" */
    unsigned queued = 0;
    for (size_t i = 0; i < 64; i++) {
        snprintf(users[i], sizeof(users[i]), "system:serviceaccount:bots:u%zu", i);
        d.user = users[i];
        if (arrive(a, d, &w[i], 100) == CK__APF_QUEUE)
            queued++;
    }
    assert_int_equal(queued, 4); /* the same flow: one hand of two queues of two */
    ck__apf_stop(a);
    ck__apf_done(a, &running.t);
    ck__apf_free(a);
}

static void test_dealer_deals_distinct_cards(void **state)
{
    (void)state;
    unsigned cards[15];
    uint64_t hashes[] = {0, 1, 0x0123456789abcdefULL, UINT64_MAX};
    for (size_t h = 0; h < sizeof(hashes) / sizeof(hashes[0]); h++)
        for (unsigned deck = 1; deck <= 64; deck++)
            for (unsigned hand = 1; hand <= 15 && hand <= deck; hand++) {
                ck__apf_deal(hashes[h], deck, hand, cards);
                for (unsigned i = 0; i < hand; i++) {
                    assert_true(cards[i] < deck);
                    for (unsigned j = 0; j < i; j++)
                        assert_int_not_equal(cards[i], cards[j]);
                }
            }
    /* the first card is hash mod deck, the next from what is left (the Dealer's order) */
    ck__apf_deal(10, 4, 2, cards);
    assert_int_equal(cards[0], 2); /* 10 % 4 */
    assert_int_equal(cards[1], 3); /* (10 / 4) % 3 = 2, past card 2: 3 */
}

static void test_reconfiguring_keeps_waiters_and_applies_new_limits(void **state)
{
    (void)state;
    struct ck__apf *a = configured(10);
    struct ck__apf_digest d = resource("system:serviceaccount:bots:a", "get", "", "nodes", "", "");
    struct waiter running = {0}, w[2] = {0};
    assert_int_equal(arrive(a, d, &running, 100), CK__APF_EXECUTE);
    assert_int_equal(arrive(a, d, &w[0], 100), CK__APF_QUEUE);
    assert_int_equal(arrive(a, d, &w[1], 100), CK__APF_QUEUE);
    /* the queue level's shares raised to 8: ceil(10 * 8 / 17) = 5 seats */
    json_t *schemas, *levels;
    load_config(&schemas, &levels);
    json_t *limited =
        json_object_get(json_object_get(json_array_get(levels, 2), "spec"), "limited");
    json_object_set_new(limited, "nominalConcurrencyShares", json_integer(8));
    assert_int_equal(ck__apf_configure(a, schemas, levels), 0);
    json_decref(levels);
    json_decref(schemas);
    assert_int_equal(w[0].woken, 1); /* both run at once */
    assert_int_equal(w[1].woken, 1);
    ck__apf_done(a, &w[0].t);
    ck__apf_done(a, &w[1].t);
    ck__apf_done(a, &running.t);
    ck__apf_free(a);
}

/* ---- the work estimate (request/width.go) ------------------------------------------ */

static struct ck__apf_digest listing(long long limit, bool selector, bool continued)
{
    struct ck__apf_digest d = resource("alice", "list", "", "pods", "", "team");
    d.limit = limit;
    d.selector = selector;
    d.continued = continued;
    return d;
}

static void test_list_width_follows_the_object_count(void **state)
{
    (void)state;
    struct ck__apf_digest d = listing(0, false, false);
    /* from the watch cache (no continue, no exact rv with a limit): every stored object */
    assert_int_equal(ck__apf_estimate(&d, 0, 250, 0).initial_seats, 3);     /* ceil(250/100) */
    assert_int_equal(ck__apf_estimate(&d, 0, 100000, 0).initial_seats, 10); /* at most 10 */
    assert_int_equal(ck__apf_estimate(&d, 4, 100000, 0).initial_seats, 4);  /* the level's */
    assert_int_equal(ck__apf_estimate(&d, 0, 0, 0).initial_seats, 1);       /* at least 1 */
    assert_int_equal(ck__apf_estimate(&d, 0, -1, 0).initial_seats, 1);      /* not counted: least */
    assert_int_equal(ck__apf_estimate(&d, 0, -2, 0).initial_seats, 10);     /* stale: most */
    /* from storage (a continue): twice the page, or every object and the page with a selector */
    d = listing(150, false, true);
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 3); /* 2 * 150 */
    d = listing(150, true, true);
    assert_int_equal(ck__apf_estimate(&d, 0, 400, 0).initial_seats, 6); /* 400 + 150 */
    d = listing(50, false, false);
    d.resource_version = "12"; /* an exact revision with a limit: storage */
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 1); /* 2 * 50 */
    d.resource_version = "0";
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 10); /* the cache */
    /* one object by name, options that do not parse */
    d = listing(0, true, false);
    d.name = "web";
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 1);
    d.name = NULL;
    d.bad_options = true;
    assert_int_equal(ck__apf_estimate(&d, 7, 1, 0).initial_seats, 7);
    /* a watch costs a list only with the WatchList gate and sendInitialEvents */
    d = resource("alice", "watch", "", "pods", "", "team");
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 1);
    d.watch_list = true;
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 1);
    d.send_initial_events = true;
    assert_int_equal(ck__apf_estimate(&d, 0, 450, 0).initial_seats, 5);
    /* a get is one seat whatever the count */
    d = resource("alice", "get", "", "pods", "", "team");
    assert_int_equal(ck__apf_estimate(&d, 0, 1000, 0).initial_seats, 1);
}

static void test_writes_hold_final_seats_for_their_watchers(void **state)
{
    (void)state;
    struct ck__apf_digest d = resource("alice", "create", "", "pods", "", "team");
    struct ck__apf_work w = ck__apf_estimate(&d, 0, -1, 9); /* fewer than 10: nothing more */
    assert_int_equal(w.initial_seats, 1);
    assert_int_equal(w.final_seats, 0);
    assert_true(w.additional_latency == 0);
    w = ck__apf_estimate(&d, 0, -1, 25); /* ceil(25/10) seats for 5 ms */
    assert_int_equal(w.initial_seats, 1);
    assert_int_equal(w.final_seats, 3);
    assert_true(w.additional_latency > 0.00499 && w.additional_latency < 0.00501);
    w = ck__apf_estimate(&d, 0, -1, 200); /* 20 seats' work reshaped onto 10: twice as long */
    assert_int_equal(w.final_seats, 10);
    assert_true(w.additional_latency > 0.00999 && w.additional_latency < 0.01001);
    d = resource("alice", "create", "", "serviceaccounts", "token", "team"); /* no event */
    assert_int_equal(ck__apf_estimate(&d, 0, -1, 200).final_seats, 0);
    d = resource("alice", "get", "", "pods", "", "team");
    assert_int_equal(ck__apf_estimate(&d, 0, -1, 200).final_seats, 0);
}

static double fake_now;

static double fake_clock(void *arg)
{
    (void)arg;
    return fake_now;
}

static void test_admission_uses_counts_and_watches(void **state)
{
    (void)state;
    struct ck__apf *a = configured(20); /* big (Reject): 16 seats, the estimator's 10 at most */
    ck__apf_set_clock(a, fake_clock, NULL);
    fake_now = 1000;
    ck__apf_set_count(a, "pods", 750);
    struct ck__apf_digest list = resource("alice", "list", "", "pods", "", "team");
    struct ck__apf_ticket t1, t2, t3;
    assert_int_equal(ck__apf_admit(a, &list, &t1), CK__APF_EXECUTE);
    assert_int_equal(t1.work.initial_seats, 8);
    assert_int_equal(ck__apf_admit(a, &list, &t2), CK__APF_EXECUTE); /* 16 of 16 seats */
    assert_int_equal(ck__apf_admit(a, &list, &t3), CK__APF_REJECT);
    ck__apf_done(a, &t1);
    ck__apf_done(a, &t2);
    fake_now += 181; /* stale after three minutes: the most seats */
    assert_int_equal(ck__apf_admit(a, &list, &t1), CK__APF_EXECUTE);
    assert_int_equal(t1.work.initial_seats, 10);
    ck__apf_done(a, &t1);
    /* 30 watches of the namespace's pods: a pod's creation holds 3 final seats for 5 ms */
    struct ck__apf_digest watch = resource("alice", "watch", "", "pods", "", "team");
    static struct ck__apf_ticket w[30];
    for (size_t i = 0; i < 30; i++) {
        assert_int_equal(ck__apf_admit(a, &watch, &w[i]), CK__APF_EXECUTE);
        ck__apf_done(a, &w[i]); /* started: the seat goes, the watch stays counted */
    }
    struct ck__apf_digest create = resource("alice", "create", "", "pods", "", "team");
    struct ck__apf_digest other = resource("alice", "create", "", "pods", "", "other");
    assert_int_equal(ck__apf_admit(a, &other, &t2), CK__APF_EXECUTE); /* not its namespace */
    assert_int_equal(t2.work.final_seats, 0);
    ck__apf_done(a, &t2);
    assert_int_equal(ck__apf_admit(a, &create, &t1), CK__APF_EXECUTE);
    assert_int_equal(t1.work.final_seats, 3);
    ck__apf_done(a, &t1); /* answered; its 3 seats stay 5 ms */
    struct ck__apf_ticket wide;
    ck__apf_set_count(a, "pods", 1400);
    assert_int_equal(ck__apf_admit(a, &list, &wide), CK__APF_EXECUTE); /* 10 + 3 of 16 */
    assert_int_equal(ck__apf_admit(a, &list, &t2), CK__APF_REJECT);
    fake_now += 0.006;
    ck__apf_expire(a, fake_now); /* the 3 come back */
    assert_int_equal(ck__apf_admit(a, &other, &t2), CK__APF_EXECUTE);
    ck__apf_done(a, &t2);
    ck__apf_done(a, &wide);
    for (size_t i = 0; i < 30; i++)
        ck__apf_end(a, &w[i]);
    assert_int_equal(ck__apf_admit(a, &create, &t1), CK__APF_EXECUTE);
    assert_int_equal(t1.work.final_seats, 0); /* the watches ended */
    ck__apf_done(a, &t1);
    ck__apf_free(a);
}

/* ---- fair queuing (queueset.go) ------------------------------------------------------ */

/* One level of 20 seats, 64 queues, hands of 1; by user. */
static struct ck__apf *fair_level(void)
{
    struct ck__apf *a = ck__apf_new(20);
    json_t *levels = json_loads(
        "[{\"metadata\":{\"name\":\"fair\",\"uid\":\"pl-fair\"},\"spec\":{\"type\":\"Limited\","
        " \"limited\":{\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Queue\","
        " \"queuing\":{\"queues\":64,\"handSize\":1,\"queueLengthLimit\":100}}}}}]",
        0, NULL);
    json_t *schemas = json_loads(
        "[{\"metadata\":{\"name\":\"all\",\"uid\":\"fs-all\"},\"spec\":{"
        " \"priorityLevelConfiguration\":{\"name\":\"fair\"},\"matchingPrecedence\":1,"
        " \"distinguisherMethod\":{\"type\":\"ByUser\"},"
        " \"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"*\"}}],"
        "  \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
        "   \"clusterScope\":true,\"namespaces\":[\"*\"]}]}]}}]",
        0, NULL);
    assert_non_null(a);
    assert_int_equal(ck__apf_configure(a, schemas, levels), 0);
    json_decref(schemas);
    json_decref(levels);
    ck__apf_set_clock(a, fake_clock, NULL);
    return a;
}

struct sim {
    struct ck__apf_ticket t; /* first: the wake callback finds it */
    int flow;
    bool running;
    double ends;
};

static void sim_wake(struct ck__apf_ticket *t)
{
    struct sim *r = (struct sim *)(void *)t;
    if (t->verdict != CK__APF_EXECUTE)
        return; /* rejected at the end */
    r->running = true;
    r->ends = fake_now + 1; /* every request runs one second */
}

static void sim_arrive(struct ck__apf *a, struct sim *r, const struct ck__apf_digest *d)
{
    r->running = false;
    enum ck__apf_verdict v = ck__apf_admit(a, d, &r->t);
    if (v == CK__APF_QUEUE) {
        r->t.wake = sim_wake;
        v = ck__apf_enqueue(a, &r->t, 1e9);
    }
    assert_int_not_equal(v, CK__APF_REJECT);
    if (v == CK__APF_EXECUTE)
        sim_wake(&r->t);
}

/*
 * queueset_test.go's TestDifferentWidths, deterministically: two backlogged flows, one of
 * one-seat requests and one of two-seat lists, sharing 20 seats, each request running one
 * second; fair queuing gives each flow the same seat-seconds, so the narrow flow runs
 * twice as many requests (round robin would have given both the same number).
 */
static void test_fair_queuing_shares_seats_between_widths(void **state)
{
    (void)state;
    fake_now = 100;
    struct ck__apf *a = fair_level();
    ck__apf_set_count(a, "pods", 200); /* a list of pods takes 2 seats */
    struct ck__apf_digest flows[2] = {resource("narrow", "get", "", "pods", "", "x"),
                                      resource("wide", "list", "", "pods", "", "x")};
    static struct sim sims[80];
    for (size_t i = 0; i < 80; i++) {
        sims[i].flow = (int)(i % 2);
        sim_arrive(a, &sims[i], &flows[i % 2]);
    }
    assert_int_equal(sims[0].t.work.initial_seats, 1);
    assert_int_equal(sims[1].t.work.initial_seats, 2);
    assert_int_not_equal(sims[0].t.queue, sims[1].t.queue);
    double seat_seconds[2] = {0}, served[2] = {0};
    while (fake_now < 160) {
        double next = 1e18;
        for (size_t i = 0; i < 80; i++)
            if (sims[i].running && sims[i].ends < next)
                next = sims[i].ends;
        assert_true(next < 1e18); /* never idle: both flows are backlogged */
        fake_now = next;
        for (size_t i = 0; i < 80; i++) {
            if (!sims[i].running || sims[i].ends > fake_now)
                continue;
            sims[i].running = false;
            if (fake_now > 110) { /* after the start */
                seat_seconds[sims[i].flow] += sims[i].t.work.initial_seats;
                served[sims[i].flow]++;
            }
            ck__apf_done(a, &sims[i].t);
            sim_arrive(a, &sims[i], &flows[sims[i].flow]); /* the flow stays backlogged */
        }
    }
    double total = seat_seconds[0] + seat_seconds[1];
    assert_true(total > 20 * 45); /* the level stayed busy */
    assert_true(seat_seconds[0] / total > 0.45 && seat_seconds[0] / total < 0.55);
    assert_true(served[0] > 1.8 * served[1] && served[0] < 2.2 * served[1]);
    ck__apf_stop(a);
    for (size_t i = 0; i < 80; i++)
        ck__apf_done(a, &sims[i].t);
    ck__apf_free(a);
}

/*
 * A narrow request whose virtual finish comes first takes a free seat before a wide one;
 * once the wide one's is first, the seats freed wait for it rather than go to the
 * narrow ones behind (queueset.go dispatches nothing the chosen head cannot use).
 */
static void test_a_wide_request_is_not_starved(void **state)
{
    (void)state;
    fake_now = 100;
    struct ck__apf *a = fair_level();
    ck__apf_set_count(a, "pods", 300); /* 3 seats, the level's most (ceil(0.15 * 20)) */
    struct ck__apf_digest narrow = resource("narrow", "get", "", "pods", "", "x");
    struct ck__apf_digest wide = resource("wide", "list", "", "pods", "", "x");
    static struct sim n[21];
    struct sim w = {0};
    for (size_t i = 0; i < 19; i++)
        sim_arrive(a, &n[i], &narrow);
    fake_now += 0.5;
    sim_arrive(a, &w, &wide); /* 3 seats, 1 free: it waits */
    assert_false(w.running);
    assert_int_equal(w.t.work.initial_seats, 3);
    sim_arrive(a, &n[19], &narrow); /* a smaller virtual finish, and it fits */
    assert_true(n[19].running);
    sim_arrive(a, &n[20], &narrow);
    assert_false(n[20].running);
    fake_now += 0.6;
    ck__apf_done(a, &n[0].t); /* the wide one is first now: nothing goes to the narrow */
    ck__apf_done(a, &n[1].t);
    assert_false(w.running);
    assert_false(n[20].running);
    ck__apf_done(a, &n[2].t); /* 3 free */
    assert_true(w.running);
    assert_false(n[20].running);
    ck__apf_done(a, &n[3].t);
    assert_true(n[20].running);
    for (size_t i = 4; i < 21; i++)
        ck__apf_done(a, &n[i].t);
    ck__apf_done(a, &w.t);
    ck__apf_free(a);
}

/* ---- the wait limit (priority-and-fairness.go's getRequestWaitContext) ------------- */

static void test_wait_limit_is_a_quarter_of_the_deadline(void **state)
{
    (void)state;
    assert_true(ck__apf_wait_limit(NULL, false) == 15); /* --request-timeout's 60 s / 4 */
    assert_true(ck__apf_wait_limit("8s", false) == 2);  /* ?timeout=8s */
    assert_true(ck__apf_wait_limit("1.5s", false) == 0.375);
    assert_true(ck__apf_wait_limit("500ms", false) == 0.125);
    assert_true(ck__apf_wait_limit("5m", false) == 15); /* beyond the request timeout */
    assert_true(ck__apf_wait_limit("0s", false) == 15); /* not a timeout */
    assert_true(ck__apf_wait_limit("-3s", false) == 15);
    assert_true(ck__apf_wait_limit("soon", false) == 15); /* does not parse */
    assert_true(ck__apf_wait_limit("8s", true) == 15);    /* a watch has no deadline */

    /* a request queued with ?timeout=4s is refused after 1 s, one without after 15 s */
    fake_now = 500;
    struct ck__apf *a = configured(10); /* queue: one seat */
    ck__apf_set_clock(a, fake_clock, NULL);
    struct ck__apf_digest d = resource("system:serviceaccount:bots:a", "get", "", "nodes", "", "");
    struct waiter running = {0}, quick = {0}, slow = {0};
    assert_int_equal(arrive(a, d, &running, 1e9), CK__APF_EXECUTE);
    assert_int_equal(arrive(a, d, &quick, fake_now + ck__apf_wait_limit("4s", false)),
                     CK__APF_QUEUE);
    assert_int_equal(arrive(a, d, &slow, fake_now + ck__apf_wait_limit(NULL, false)),
                     CK__APF_QUEUE);
    fake_now += 0.99;
    ck__apf_expire(a, fake_now);
    assert_int_equal(quick.woken, 0);
    fake_now += 0.01;
    ck__apf_expire(a, fake_now);
    assert_int_equal(quick.woken, 1);
    assert_int_equal(quick.t.verdict, CK__APF_REJECT); /* answered 429 with Retry-After */
    assert_true(quick.t.retry_after >= 1);
    assert_int_equal(slow.woken, 0);
    fake_now += 14;
    ck__apf_expire(a, fake_now);
    assert_int_equal(slow.woken, 1);
    assert_int_equal(slow.t.verdict, CK__APF_REJECT);
    char *text = ck__apf_metrics_text(a);
    assert_non_null(strstr(text, "apiserver_flowcontrol_rejected_requests_total{flow_schema="
                                 "\"robots\",priority_level=\"queue\",reason=\"time-out\"} 2\n"));
    free(text);
    ck__apf_done(a, &running.t);
    ck__apf_free(a);
}

/* ---- many threads at once: a seat is never held twice, nothing is left behind ---- */

struct racer {
    struct ck__apf_ticket t; /* first: the wake callback finds the racer from it */
    pthread_mutex_t lock;
    pthread_cond_t woken_cond;
    bool woken;
};

static struct ck__apf *race_apf;
static atomic_int race_running, race_max, race_ran, race_refused;

static void racer_wake(struct ck__apf_ticket *t)
{
    struct racer *r = (struct racer *)(void *)t;
    pthread_mutex_lock(&r->lock);
    r->woken = true;
    pthread_cond_signal(&r->woken_cond);
    pthread_mutex_unlock(&r->lock);
}

static void *race(void *arg)
{
    (void)arg;
    struct racer r;
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.woken_cond, NULL);
    struct ck__apf_digest d = resource("system:serviceaccount:bots:a", "get", "", "nodes", "", "");
    for (int i = 0; i < 2000; i++) {
        enum ck__apf_verdict v = ck__apf_admit(race_apf, &d, &r.t);
        if (v == CK__APF_QUEUE) {
            r.woken = false;
            r.t.wake = racer_wake;
            v = ck__apf_enqueue(race_apf, &r.t, 1e12);
            if (v == CK__APF_QUEUE) {
                pthread_mutex_lock(&r.lock);
                while (!r.woken)
                    pthread_cond_wait(&r.woken_cond, &r.lock);
                pthread_mutex_unlock(&r.lock);
                v = r.t.verdict;
            }
        }
        if (v == CK__APF_EXECUTE) {
            int now = atomic_fetch_add(&race_running, 1) + 1;
            int max = atomic_load(&race_max);
            while (now > max && !atomic_compare_exchange_weak(&race_max, &max, now))
                ;
            atomic_fetch_sub(&race_running, 1);
            atomic_fetch_add(&race_ran, 1);
        } else {
            atomic_fetch_add(&race_refused, 1);
        }
        ck__apf_done(race_apf, &r.t);
    }
    pthread_cond_destroy(&r.woken_cond);
    pthread_mutex_destroy(&r.lock);
    return NULL;
}

/* ?timeout=T refused with msg (kube-apiserver's words), or accepted when msg is NULL. */
static void expect_timeout(const char *timeout, const char *msg)
{
    char got[512] = "";
    bool invalid = ck__apf_timeout_invalid(timeout, got, sizeof(got));
    if (!msg) {
        assert_false(invalid);
        return;
    }
    assert_true(invalid);
    char want[512];
    snprintf(want, sizeof(want), "invalid timeout specified in the request URL - %s", msg);
    assert_string_equal(got, want);
}

static void test_a_timeout_that_is_no_duration_is_refused(void **state)
{
    (void)state;
    static const char *const fine[] = {NULL,  "",    "30s", "0",        "1m30s",     "+5s",
                                       "-1s", ".5s", "5.s", "1h2m3.5s", "2\xc2\xb5s"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
        expect_timeout(fine[i], NULL);
    expect_timeout("abc", "time: invalid duration \"abc\"");
    expect_timeout("-", "time: invalid duration \"-\"");
    expect_timeout(".s", "time: invalid duration \".s\"");
    expect_timeout("99999999999999999999s", "time: invalid duration \"99999999999999999999s\"");
    expect_timeout("10", "time: missing unit in duration \"10\"");
    expect_timeout("1.5.5s", "time: missing unit in duration \"1.5.5s\"");
    expect_timeout("5x", "time: unknown unit \"x\" in duration \"5x\"");
    expect_timeout("1h2d", "time: unknown unit \"d\" in duration \"1h2d\"");
    expect_timeout("5\xc3\xa9", "time: unknown unit \"\\xc3\\xa9\" in duration \"5\\xc3\\xa9\"");
    expect_timeout("a\"b\\", "time: invalid duration \"a\\\"b\\\\\"");
}

/* ---- borrowing between levels ------------------------------------------------------ */

static const char *borrow_schemas_json =
    "[{\"metadata\":{\"name\":\"masters\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"exempt\"},\"matchingPrecedence\":1,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"system:masters\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"namespaces\":[\"*\"]}]}]}},"
    " {\"metadata\":{\"name\":\"busy\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"busy\"},\"matchingPrecedence\":10,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"busy\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"namespaces\":[\"*\"]}]}]}},"
    " {\"metadata\":{\"name\":\"idle\"},\"spec\":{"
    "   \"priorityLevelConfiguration\":{\"name\":\"idle\"},\"matchingPrecedence\":10,"
    "   \"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"idle\"}}],"
    "     \"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
    "       \"namespaces\":[\"*\"]}]}]}}]";

/* A level of one queue (no shuffle sharding) with limits as JSON members. */
#define ONE_QUEUE_LEVEL(name, limits)                                                              \
    "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"type\":\"Limited\",\"limited\":{" limits    \
    ",\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":1,\"handSize\":1,"             \
    "\"queueLengthLimit\":200}}}}}"

/* The apf on the fake clock at 0, configured with levels (a JSON array). */
static struct ck__apf *borrowing_apf(unsigned server_limit, const char *levels_text)
{
    fake_now = 0;
    struct ck__apf *a = ck__apf_new(server_limit);
    assert_non_null(a);
    ck__apf_set_clock(a, fake_clock, NULL);
    json_t *schemas = json_loads(borrow_schemas_json, 0, NULL);
    json_t *levels = json_loads(levels_text, 0, NULL);
    assert_non_null(schemas);
    assert_non_null(levels);
    assert_int_equal(ck__apf_configure(a, schemas, levels), 0);
    json_decref(schemas);
    json_decref(levels);
    return a;
}

/* The value of one series of the apf's exposition; the test fails when it is missing. */
static double gauge_value(struct ck__apf *a, const char *metric, const char *level)
{
    char *text = ck__apf_metrics_text(a);
    char series[160];
    if (level)
        snprintf(series, sizeof(series), "\n%s{priority_level=\"%s\"} ", metric, level);
    else
        snprintf(series, sizeof(series), "\n%s ", metric);
    assert_non_null(text);
    const char *at = strstr(text, series);
    if (!at)
        fail_msg("no series %s in:\n%s", series + 1, text);
    double v = strtod(at + strlen(series), NULL);
    free(text);
    return v;
}

/* A gauge's value within epsilon of what was worked out by hand. */
static void assert_near(double value, double expected, double epsilon)
{
    if (!(fabs(value - expected) <= epsilon))
        fail_msg("%.17g is not %.17g", value, expected);
}

static double current_limit(struct ck__apf *a, const char *level)
{
    return gauge_value(a, "apiserver_flowcontrol_current_limit_seats", level);
}

/* Both levels' current limits are those worked out. */
static void expect_limits(struct ck__apf *a, const char *l1, double v1, const char *l2, double v2)
{
    assert_int_equal(current_limit(a, l1), v1);
    assert_int_equal(current_limit(a, l2), v2);
}

static double fair_frac(struct ck__apf *a)
{
    return gauge_value(a, "apiserver_flowcontrol_seat_fair_frac", NULL);
}

static double watermark(struct ck__apf *a, const char *level)
{
    return gauge_value(a, "apiserver_flowcontrol_demand_seats_high_watermark", level);
}

/* The periodic adjustment, from the ticker at t seconds. */
static void tick_at(struct ck__apf *a, double t)
{
    fake_now = t;
    ck__apf_tick(a, t);
}

/* n gets of user arriving now: how many run at once (the others wait). */
static unsigned arrive_many(struct ck__apf *a, const char *user, struct waiter *w, unsigned n)
{
    unsigned run = 0;
    for (unsigned i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        enum ck__apf_verdict v = arrive(a, resource(user, "get", "", "pods", "", "x"), &w[i], 1e9);
        assert_int_not_equal(v, CK__APF_REJECT);
        run += v == CK__APF_EXECUTE;
    }
    return run;
}

/* The waiters woken since last asked. */
static unsigned woken(struct waiter *w, unsigned n)
{
    unsigned count = 0;
    for (unsigned i = 0; i < n; i++) {
        count += (unsigned)w[i].woken;
        w[i].woken = 0;
    }
    return count;
}

/* Ends every request of w, those that were waiting once their seats come. */
static void finish_all(struct ck__apf *a, struct waiter *w, unsigned n)
{
    for (bool again = true; again;) {
        again = false;
        for (unsigned i = 0; i < n; i++)
            if (w[i].t.seated) {
                ck__apf_done(a, &w[i].t);
                again = true;
            }
    }
    for (unsigned i = 0; i < n; i++)
        assert_true(w[i].t.finished);
}

static void test_busy_level_borrows_idle_seats_and_gives_them_back(void **state)
{
    (void)state;
    /*
     * 100 seats; busy and idle have 50 shares each: nominal 50 both; busy lends
     * nothing and may borrow 100 % (upper 100), idle lends 50 % (lower 25, upper 150:
     * no borrowingLimitPercent allows the server limit).
     */
    struct ck__apf *a = borrowing_apf(
        100,
        "[{\"metadata\":{\"name\":\"exempt\"},\"spec\":{\"type\":\"Exempt\"}}," ONE_QUEUE_LEVEL(
            "busy",
            "\"nominalConcurrencyShares\":50,\"borrowingLimitPercent\":100") "," ONE_QUEUE_LEVEL("idle",
                                                                                                 "\"nominalConcurrencyShares\":50,\"lendablePercent\":50") "]");
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_nominal_limit_seats", "busy"), 50);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_lower_limit_seats", "busy"), 50);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_upper_limit_seats", "busy"), 100);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_nominal_limit_seats", "idle"), 50);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_lower_limit_seats", "idle"), 25);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_upper_limit_seats", "idle"), 150);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_nominal_limit_seats", "exempt"), 0);
    /*
     * No demand yet: targets are the lower limits (50 and 25), and the 100 nominal seats
     * go in proportion, fair fraction 100 / 75: 66.67 and 33.33, rounded.
     */
    tick_at(a, 0);
    expect_limits(a, "busy", 67, "idle", 33);
    assert_int_equal(current_limit(a, "exempt"), 0);
    assert_near(fair_frac(a), 100.0 / 75, 1e-12);

    /* 80 requests of one seat on busy for 10 s: 67 run, 13 wait */
    static struct waiter busy[80], idle[50];
    assert_int_equal(arrive_many(a, "busy", busy, 80), 67);
    /*
     * At 10 s busy's demand was 80 throughout: high watermark, mean and smoothed 80, owed
     * its nominal 50, target 80; idle is owed 25, target 25. Fair fraction f with
     * 80 f + max(25, 25 f) = 100 and 50 <= 80 f: f = 0.9375, busy 75 (25 borrowed from
     * idle's lendable half), idle 25. Eight more run, five still wait.
     */
    tick_at(a, 10);
    assert_int_equal(watermark(a, "busy"), 80);
    assert_near(gauge_value(a, "apiserver_flowcontrol_demand_seats_average", "busy"), 80, 1e-9);
    assert_near(gauge_value(a, "apiserver_flowcontrol_demand_seats_stdev", "busy"), 0, 1e-9);
    assert_near(gauge_value(a, "apiserver_flowcontrol_demand_seats_smoothed", "busy"), 80, 1e-9);
    assert_near(gauge_value(a, "apiserver_flowcontrol_target_seats", "busy"), 80, 1e-9);
    assert_near(gauge_value(a, "apiserver_flowcontrol_target_seats", "idle"), 25, 1e-9);
    expect_limits(a, "busy", 75, "idle", 25);
    assert_near(fair_frac(a), 0.9375, 1e-12);
    assert_int_equal(woken(busy, 80), 8);

    /*
     * The busy requests end at 10 s. At 20 s its high watermark is still 80 (the demand
     * when the period began) and its smoothed demand decays only to 0.977 * 80 = 78.16:
     * f = 50/78.16 + 25/78.16, busy keeps 75.
     */
    finish_all(a, busy, 80);
    tick_at(a, 20);
    assert_near(gauge_value(a, "apiserver_flowcontrol_demand_seats_smoothed", "busy"), 0.977 * 80,
                1e-9);
    assert_near(gauge_value(a, "apiserver_flowcontrol_demand_seats_average", "busy"), 0, 1e-9);
    expect_limits(a, "busy", 75, "idle", 25);
    assert_near(fair_frac(a), 75 / (0.977 * 80), 1e-9);

    /*
     * Now idle wants 50 seats (25 run, 25 wait). At 30 s its high watermark 50 makes it
     * owed its nominal 50, busy is owed 50: owed 100 = the 100 seats, so each gets what
     * it is owed (fair fraction 0): idle has its lent seats back, busy its nominal.
     */
    assert_int_equal(arrive_many(a, "idle", idle, 50), 25);
    tick_at(a, 30);
    assert_int_equal(watermark(a, "idle"), 50);
    assert_int_equal(watermark(a, "busy"), 0);
    expect_limits(a, "idle", 50, "busy", 50);
    assert_near(fair_frac(a), 0, 0);
    assert_int_equal(woken(idle, 50), 25);
    /* the adjustment comes every 10 s: a tick between changes nothing */
    finish_all(a, idle, 50);
    tick_at(a, 35);
    assert_int_equal(current_limit(a, "idle"), 50);
    ck__apf_free(a);
}

static void test_exempt_level_lends_its_seats(void **state)
{
    (void)state;
    /*
     * 100 seats; exempt has 20 shares and lends half: nominal 20, lower 10; busy has 80
     * shares, lends nothing and may borrow half: nominal 80, lower 80, upper 120.
     */
    struct ck__apf *a = borrowing_apf(
        100, "[{\"metadata\":{\"name\":\"exempt\"},\"spec\":{\"type\":\"Exempt\",\"exempt\":{"
             "\"nominalConcurrencyShares\":20,\"lendablePercent\":50}}}," ONE_QUEUE_LEVEL(
                 "busy", "\"nominalConcurrencyShares\":80,\"borrowingLimitPercent\":50") "]");
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_nominal_limit_seats", "exempt"), 20);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_lower_limit_seats", "exempt"), 10);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_upper_limit_seats", "exempt"), 120);
    assert_int_equal(gauge_value(a, "apiserver_flowcontrol_upper_limit_seats", "busy"), 120);
    /*
     * exempt idle: it keeps its lower limit 10 and the rest, 90, covers busy's 80, so all
     * 100 nominal seats are busy's to share: fair fraction 100 / 80, busy has 100.
     */
    expect_limits(a, "exempt", 10, "busy", 100);
    assert_near(fair_frac(a), 1.25, 1e-12);
    static struct waiter busy[101], admins[25];
    assert_int_equal(arrive_many(a, "busy", busy, 101), 100);
    /* exempt requests are never limited, whatever its limit */
    struct ck__apf_digest d = admin("get", "pods");
    for (unsigned i = 0; i < 25; i++)
        assert_int_equal(ck__apf_admit(a, &d, &admins[i].t), CK__APF_EXECUTE);
    /*
     * At 10 s exempt's high watermark 25 is taken first: 75 remain, below busy's lower
     * limit 80, so busy gets its lower limit (fair fraction 0) and the one waiting stays.
     */
    tick_at(a, 10);
    assert_int_equal(watermark(a, "exempt"), 25);
    expect_limits(a, "exempt", 25, "busy", 80);
    assert_near(fair_frac(a), 0, 0);
    assert_int_equal(woken(busy, 101), 0);
    /* all end at 10 s; at 20 s the high watermarks are those when the period began */
    finish_all(a, admins, 25);
    finish_all(a, busy, 101);
    tick_at(a, 20);
    expect_limits(a, "exempt", 25, "busy", 80);
    /*
     * At 30 s exempt is idle again (10 kept) and busy, with smoothed demand 101 decayed
     * twice (target 0.977^2 * 101 = 96.41), has the 100 seats again.
     */
    tick_at(a, 30);
    expect_limits(a, "exempt", 10, "busy", 100);
    assert_near(gauge_value(a, "apiserver_flowcontrol_target_seats", "busy"), 0.977 * 0.977 * 101,
                1e-9);
    assert_near(fair_frac(a), 100 / (0.977 * 0.977 * 101), 1e-9);
    ck__apf_free(a);
}

static void test_threads_share_one_seat(void **state)
{
    (void)state;
    race_apf = configured(10); /* the queue level: one seat, four places for the flow */
    pthread_t threads[8];
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, race, NULL), 0);
    for (size_t i = 0; i < 8; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&race_max), 1);
    assert_int_equal(atomic_load(&race_ran) + atomic_load(&race_refused), 8 * 2000);
    assert_true(atomic_load(&race_ran) > 0);
    char *text = ck__apf_metrics_text(race_apf);
    assert_non_null(strstr(text, "apiserver_flowcontrol_current_executing_requests{flow_schema="
                                 "\"robots\",priority_level=\"queue\"} 0\n"));
    assert_non_null(strstr(text, "apiserver_flowcontrol_current_inqueue_requests{flow_schema="
                                 "\"robots\",priority_level=\"queue\"} 0\n"));
    free(text);
    race_apf = ck__apf_free(race_apf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classifies_by_precedence_then_name_with_kubernetes_rules),
        cmocka_unit_test(test_ticket_carries_both_uids),
        cmocka_unit_test(test_exempt_is_never_limited),
        cmocka_unit_test(test_reject_level_refuses_beyond_its_share),
        cmocka_unit_test(test_queue_hands_seats_in_turn_and_bounds_queues),
        cmocka_unit_test(test_cluster_requests_by_namespace_are_one_flow),
        cmocka_unit_test(test_dealer_deals_distinct_cards),
        cmocka_unit_test(test_reconfiguring_keeps_waiters_and_applies_new_limits),
        cmocka_unit_test(test_list_width_follows_the_object_count),
        cmocka_unit_test(test_writes_hold_final_seats_for_their_watchers),
        cmocka_unit_test(test_admission_uses_counts_and_watches),
        cmocka_unit_test(test_fair_queuing_shares_seats_between_widths),
        cmocka_unit_test(test_a_wide_request_is_not_starved),
        cmocka_unit_test(test_wait_limit_is_a_quarter_of_the_deadline),
        cmocka_unit_test(test_threads_share_one_seat),
        cmocka_unit_test(test_busy_level_borrows_idle_seats_and_gives_them_back),
        cmocka_unit_test(test_exempt_level_lends_its_seats),
        cmocka_unit_test(test_a_timeout_that_is_no_duration_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
