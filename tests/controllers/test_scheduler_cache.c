/*
 * test_scheduler_cache.c - tests for lib/controllers/scheduler/cache.c: a pod counts
 * once whether assumed or seen bound; a failed binding is forgotten; pods bound to an
 * unknown node count when it appears; terminated and deleted pods give their room back;
 * nominated pods count for the pods of their priority or lower until they are bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/controllers/scheduler/internal.h"

static json_t *node_json(const char *name)
{
    return json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s}}}", "metadata", "name", name, "status",
                     "allocatable", "cpu", "4", "memory", "8Gi", "pods", "10");
}

static json_t *pod_json(const char *name, const char *node, const char *phase)
{
    json_t *pod = json_pack("{s:{s:s, s:s}, s:{s:[{s:s, s:{s:{s:s}}}]}, s:{s:s}}", "metadata",
                            "name", name, "namespace", "ns", "spec", "containers", "name", "c",
                            "resources", "requests", "cpu", "1", "status", "phase", phase);
    if (node)
        json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
    return pod;
}

static const struct ck__sched_node *find_node(struct ck__sched_cache *c, const char *name)
{
    size_t n = 0;
    struct ck__sched_node *const *nodes = ck__sched_cache_nodes_locked(c, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i]->name, name) == 0)
            return nodes[i];
    return NULL;
}

static int64_t cpu_on(struct ck__sched_cache *c, const char *node)
{
    pthread_mutex_lock(&c->lock);
    const struct ck__sched_node *n = find_node(c, node);
    int64_t v = n ? n->requested.milli_cpu : -1;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static void test_assumed_then_bound_counts_once(void **state)
{
    (void)state;
    struct ck__sched_cache c;
    assert_int_equal(ck__sched_cache_init(&c), 0);
    json_t *n1 = node_json("n1");
    assert_int_equal(ck__sched_cache_set_node(&c, n1), 0);
    json_t *pending = pod_json("a", NULL, "Pending");
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pending), 0);
    pthread_mutex_lock(&c.lock);
    assert_int_equal(ck__sched_cache_assume_locked(&c, "ns/a", &p, "n1"), 0);
    pthread_mutex_unlock(&c.lock);
    ck__sched_pod_release(&p);
    assert_int_equal(cpu_on(&c, "n1"), 1000);
    json_t *bound = pod_json("a", "n1", "Pending");
    assert_int_equal(ck__sched_cache_set_pod(&c, "ns/a", bound), 0);
    assert_int_equal(cpu_on(&c, "n1"), 1000); /* confirmed, not added twice */
    ck__sched_cache_forget(&c, "ns/a");       /* a late failure report: it is bound */
    assert_int_equal(cpu_on(&c, "n1"), 1000);
    json_t *done = pod_json("a", "n1", "Succeeded");
    assert_int_equal(ck__sched_cache_set_pod(&c, "ns/a", done), 0);
    assert_int_equal(cpu_on(&c, "n1"), 0); /* finished pods take no room */
    json_decref(done);
    json_decref(bound);
    json_decref(pending);
    json_decref(n1);
    ck__sched_cache_release(&c);
}

static void test_failed_binding_is_forgotten(void **state)
{
    (void)state;
    struct ck__sched_cache c;
    assert_int_equal(ck__sched_cache_init(&c), 0);
    json_t *n1 = node_json("n1");
    ck__sched_cache_set_node(&c, n1);
    json_t *pending = pod_json("a", NULL, "Pending");
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pending), 0);
    pthread_mutex_lock(&c.lock);
    assert_int_equal(ck__sched_cache_assume_locked(&c, "ns/a", &p, "n1"), 0);
    pthread_mutex_unlock(&c.lock);
    ck__sched_pod_release(&p);
    ck__sched_cache_forget(&c, "ns/a");
    assert_int_equal(cpu_on(&c, "n1"), 0);
    assert_false(ck__sched_cache_remove_pod(&c, "ns/a"));
    json_decref(pending);
    json_decref(n1);
    ck__sched_cache_release(&c);
}

static void test_pods_wait_for_their_node_and_move(void **state)
{
    (void)state;
    struct ck__sched_cache c;
    assert_int_equal(ck__sched_cache_init(&c), 0);
    json_t *a = pod_json("a", "n1", "Running");
    assert_int_equal(ck__sched_cache_set_pod(&c, "ns/a", a), 0);
    assert_int_equal(cpu_on(&c, "n1"), -1); /* no such node yet */
    json_t *n1 = node_json("n1"), *n2 = node_json("n2");
    ck__sched_cache_set_node(&c, n1);
    ck__sched_cache_set_node(&c, n2);
    assert_int_equal(cpu_on(&c, "n1"), 1000);
    ck__sched_cache_set_node(&c, n1); /* an update keeps the count */
    assert_int_equal(cpu_on(&c, "n1"), 1000);
    json_t *moved = pod_json("a", "n2", "Running"); /* deleted and recreated elsewhere */
    ck__sched_cache_set_pod(&c, "ns/a", moved);
    assert_int_equal(cpu_on(&c, "n1"), 0);
    assert_int_equal(cpu_on(&c, "n2"), 1000);
    ck__sched_cache_remove_node(&c, "n2");
    ck__sched_cache_set_node(&c, n2); /* back: its pod counts again, once */
    assert_int_equal(cpu_on(&c, "n2"), 1000);
    assert_true(ck__sched_cache_remove_pod(&c, "ns/a"));
    assert_int_equal(cpu_on(&c, "n2"), 0);
    json_decref(moved);
    json_decref(a);
    json_decref(n1);
    json_decref(n2);
    ck__sched_cache_release(&c);
}

/*
 * A nominated pod counts on its node for pods of its priority or lower, not for itself nor
 * for higher ones, and its nomination ends when it is bound; the pods placed on a node are
 * listed with their keys.
 */
static void test_nominations_and_pods_on_a_node(void **state)
{
    (void)state;
    struct ck__sched_cache c;
    assert_int_equal(ck__sched_cache_init(&c), 0);
    json_t *n1 = node_json("n1");
    assert_int_equal(ck__sched_cache_set_node(&c, n1), 0);
    json_t *bound = pod_json("b", "n1", "Running");
    assert_int_equal(ck__sched_cache_set_pod(&c, "ns/b", bound), 0);
    json_t *pending = pod_json("a", NULL, "Pending");
    json_object_set_new(json_object_get(pending, "spec"), "priority", json_integer(100));
    struct ck__sched_pod nominee, lower, higher;
    assert_int_equal(ck__sched_pod_init(&nominee, pending), 0);
    lower = nominee;
    lower.priority = 100; /* equal counts as lower */
    higher = nominee;
    higher.priority = 101;
    pthread_mutex_lock(&c.lock);
    struct ck__sched_placed on[4];
    assert_int_equal(ck__sched_cache_pods_on_locked(&c, "n1", on, 4), 1);
    assert_string_equal(on[0].key, "ns/b");
    assert_string_equal(on[0].name, "b");
    assert_int_equal(on[0].info->requests.milli_cpu, 1000);
    assert_int_equal(ck__sched_cache_pods_on_locked(&c, "n2", on, 4), 0);
    assert_int_equal(ck__sched_cache_nominate_locked(&c, "ns/a", &nominee, "n1"), 0);
    assert_string_equal(ck__sched_cache_nominated_node_locked(&c, "ns/a"), "n1");
    const struct ck__sched_node *n = find_node(&c, "n1");
    struct ck__sched_node scratch;
    const struct ck__sched_node *seen =
        ck__sched_cache_with_nominated_locked(&c, n, "ns/x", &lower, &scratch);
    assert_ptr_equal(seen, &scratch);
    assert_int_equal(seen->requested.milli_cpu, 2000);
    assert_int_equal(n->requested.milli_cpu, 1000); /* the node itself is untouched */
    ck__sched_node_release(&scratch);
    assert_ptr_equal(ck__sched_cache_with_nominated_locked(&c, n, "ns/x", &higher, &scratch), n);
    assert_ptr_equal(ck__sched_cache_with_nominated_locked(&c, n, "ns/a", &lower, &scratch), n);
    pthread_mutex_unlock(&c.lock);
    /* bound: the nomination is over, the pod counts as placed */
    json_object_set_new(json_object_get(pending, "spec"), "nodeName", json_string("n1"));
    assert_int_equal(ck__sched_cache_set_pod(&c, "ns/a", pending), 0);
    pthread_mutex_lock(&c.lock);
    assert_null(ck__sched_cache_nominated_node_locked(&c, "ns/a"));
    assert_int_equal(ck__sched_cache_pods_on_locked(&c, "n1", on, 4), 2);
    pthread_mutex_unlock(&c.lock);
    assert_int_equal(cpu_on(&c, "n1"), 2000);
    ck__sched_pod_release(&nominee);
    json_decref(pending);
    json_decref(bound);
    json_decref(n1);
    ck__sched_cache_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assumed_then_bound_counts_once),
        cmocka_unit_test(test_failed_binding_is_forgotten),
        cmocka_unit_test(test_pods_wait_for_their_node_and_move),
        cmocka_unit_test(test_nominations_and_pods_on_a_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
