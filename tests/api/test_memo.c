/*
 * test_memo.c - tests for lib/api/memo.c, the walks' per-thread memo of answers about
 * the schema nodes a set owns: a node built for a request gets no slot at all (a later
 * one may take its address), an answer is found again for its own set and node only
 * (not for the same node asked through a layered set, whose serial differs), a slot
 * taken by a newer answer no longer answers for the older key, and each thread has
 * tables of its own.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/api/internal.h"

static struct ck_schemas *set;
static const json_t *node; /* a node set owns */
static int answer;

static int setup(void **state)
{
    (void)state;
    /* one schema with many properties: nodes enough for two to share a slot */
    static char doc[64 * 1024];
    size_t n = (size_t)snprintf(doc, sizeof(doc), "{\"Big\":{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(doc + n, sizeof(doc) - n, "%s\"p%d\":{\"type\":\"string\"}",
                              i ? "," : "", i);
    snprintf(doc + n, sizeof(doc) - n, "}}}");
    const char *docs[] = {doc};
    if (ck_schemas_new(docs, 1, &set, NULL) < 0)
        return -1;
    node = ck_schemas_get(set, "Big");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ck_schemas_free(set);
    return 0;
}

static void fill(const struct ck_schemas *s, const json_t *n, const void *value)
{
    bool hit = true;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, s, n, &hit);
    assert_non_null(slot);
    assert_false(hit);
    *slot = (struct ck__memo_slot){ck__schemas_serial(s), n, {value, NULL}, 7};
}

static bool found(const struct ck_schemas *s, const json_t *n, const void *value)
{
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, s, n, &hit);
    return slot && hit && slot->value[0] == value && slot->tag == 7;
}

static void test_a_built_node_gets_no_slot(void **state)
{
    (void)state;
    json_t *built = json_pack("{s:s}", "type", "string");
    bool hit = true;
    assert_null(ck__memo_find(CK__MEMO_SHAPE, set, built, &hit));
    assert_false(hit);
    assert_null(ck__memo_find(CK__MEMO_SHAPE, NULL, node, &hit));
    json_decref(built);
}

static void test_an_answer_is_kept_for_its_set_and_node(void **state)
{
    (void)state;
    fill(set, node, &answer);
    assert_true(found(set, node, &answer));
    /* the same node through a layered set (which owns its parent's nodes), with the
     * layered set's serial landing on the very slot the answer is in */
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, set, node, &hit);
    const char *layer[] = {"{\"Small\":{\"type\":\"string\"}}"};
    bool same_slot = false;
    for (int tries = 0; tries < 20000 && !same_slot; tries++) {
        struct ck_schemas *layered = NULL;
        assert_int_equal(ck_schemas_new_layered(set, layer, 1, &layered, NULL), 0);
        if (ck__memo_find(CK__MEMO_SHAPE, layered, node, &hit) == slot) {
            same_slot = true;
            assert_false(hit);
        }
        ck_schemas_free(layered);
    }
    assert_true(same_slot);
    assert_true(found(set, node, &answer));
}

static void test_a_newer_answer_takes_the_slot(void **state)
{
    (void)state;
    const json_t *props = json_object_get(node, "properties");
    bool hit = false;
    const json_t *first = json_object_get(props, "p0"), *other = NULL;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, set, first, &hit);
    char name[16];
    for (int i = 1; i < 2000 && !other; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        const json_t *p = json_object_get(props, name);
        if (ck__memo_find(CK__MEMO_SHAPE, set, p, &hit) == slot)
            other = p;
    }
    assert_non_null(other);
    *slot = (struct ck__memo_slot){ck__schemas_serial(set), first, {&answer, NULL}, 7};
    assert_true(found(set, first, &answer));
    fill(set, other, &answer + 1);
    assert_true(found(set, other, &answer + 1));
    assert_false(found(set, first, &answer));
}

static void *other_thread(void *arg)
{
    (void)arg;
    return found(set, node, &answer) ? (void *)1 : NULL;
}

static void test_each_thread_has_its_own(void **state)
{
    (void)state;
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, set, node, &hit);
    assert_non_null(slot);
    *slot = (struct ck__memo_slot){ck__schemas_serial(set), node, {&answer, NULL}, 7};
    pthread_t t;
    void *seen = (void *)1;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &seen), 0);
    assert_null(seen);
    assert_true(found(set, node, &answer));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_built_node_gets_no_slot),
        cmocka_unit_test(test_an_answer_is_kept_for_its_set_and_node),
        cmocka_unit_test(test_a_newer_answer_takes_the_slot),
        cmocka_unit_test(test_each_thread_has_its_own),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
