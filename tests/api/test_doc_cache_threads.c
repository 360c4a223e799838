/*
 * test_doc_cache_threads.c - the document caches of lib/api (the discovery index of
 * discovery.c and the OpenAPI v2 document of openapi_v2.c, both kept by
 * ck__doc_cache_copy) asked for from several threads at once: every thread gets its own
 * copy, equal to the document built before. The set changes between the rounds (from
 * the main thread), so each round starts with the caches rebuilt for the other set.
 * Several threads also rebuild the documents from one set at once (each finds the
 * cache holding the other set's), which reads the same schema objects from every
 * thread: the documents must copy them rather than share them, since jansson changes a
 * shared value's reference count after a plain load that races with the others'.
 * Run under TSan (label concurrency).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckube/api.h"

#define THREADS 4
#define ROUNDS  6

static struct ck_schemas *sets[2];
static json_t *want_index[2], *want_v2[2], *want_apps[2];
static pthread_barrier_t start;

/* Minimal schemas under the real names; description tells the two sets apart. */
static struct ck_schemas *load_schemas(const char *description)
{
    char apps[512];
    snprintf(apps, sizeof(apps),
             "{\"io.k8s.api.apps.v1.Deployment\":{\"type\":\"object\",\"description\":\"%s\"},"
             "\"io.k8s.api.core.v1.Pod\":{\"type\":\"object\"}}",
             description);
    const char *docs[] = {apps};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    if (ck_schemas_new(docs, 1, &set, &err) != 0)
        fail_msg("%s", err.msg);
    return set;
}

static int setup(void **state)
{
    (void)state;
    sets[0] = load_schemas("one");
    sets[1] = load_schemas("two");
    for (int i = 0; i < 2; i++) {
        want_index[i] = ck_openapi_index(sets[i]);
        want_v2[i] = ck_openapi_v2(sets[i]);
        want_apps[i] = ck_openapi_document(sets[i], "apps", "v1");
        if (!want_index[i] || !want_v2[i] || !want_apps[i])
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        json_decref(want_index[i]);
        json_decref(want_v2[i]);
        json_decref(want_apps[i]);
        sets[i] = ck_schemas_free(sets[i]);
    }
    return 0;
}

static void *reader(void *arg)
{
    int which = (int)(intptr_t)arg;
    long wrong = 0;
    for (int r = 0; r < ROUNDS; r++) {
        json_t *index = ck_openapi_index(sets[which]);
        json_t *v2 = ck_openapi_v2(sets[which]);
        if (!index || !json_equal(index, want_index[which]))
            wrong++;
        if (!v2 || !json_equal(v2, want_v2[which]))
            wrong++;
        json_decref(index);
        json_decref(v2);
    }
    return (void *)(intptr_t)wrong;
}

static void test_every_thread_gets_the_document_of_its_set(void **state)
{
    (void)state;
    /* the two sets' documents differ, so a mix-up would show */
    assert_false(json_equal(want_v2[0], want_v2[1]));
    long wrong = 0;
    for (int round = 0; round < 4; round++) {
        int which = round % 2;
        /* the caches hold the other set's documents: rebuilt here, then read at once */
        json_t *index = ck_openapi_index(sets[which]), *v2 = ck_openapi_v2(sets[which]);
        assert_true(json_equal(index, want_index[which]));
        assert_true(json_equal(v2, want_v2[which]));
        json_decref(index);
        json_decref(v2);
        pthread_t threads[THREADS];
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(pthread_create(&threads[i], NULL, reader, (void *)(intptr_t)which), 0);
        for (int i = 0; i < THREADS; i++) {
            void *ret = NULL;
            assert_int_equal(pthread_join(threads[i], &ret), 0);
            wrong += (long)(intptr_t)ret;
        }
    }
    assert_int_equal(wrong, 0);
}

/* Waits for the others, then builds set 0's documents (the caches hold set 1's). */
static void *rebuilder(void *arg)
{
    (void)arg;
    long wrong = 0;
    pthread_barrier_wait(&start);
    json_t *apps = ck_openapi_document(sets[0], "apps", "v1");
    json_t *index = ck_openapi_index(sets[0]);
    json_t *v2 = ck_openapi_v2(sets[0]);
    wrong += !apps || !json_equal(apps, want_apps[0]);
    wrong += !index || !json_equal(index, want_index[0]);
    wrong += !v2 || !json_equal(v2, want_v2[0]);
    json_decref(apps);
    json_decref(index);
    json_decref(v2);
    return (void *)(intptr_t)wrong;
}

static void test_threads_rebuild_from_one_set_at_once(void **state)
{
    (void)state;
    long wrong = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* the caches hold set 1's documents: every thread below builds set 0's */
        json_t *index = ck_openapi_index(sets[1]), *v2 = ck_openapi_v2(sets[1]);
        assert_true(json_equal(index, want_index[1]));
        assert_true(json_equal(v2, want_v2[1]));
        json_decref(index);
        json_decref(v2);
        assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
        pthread_t threads[THREADS];
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(pthread_create(&threads[i], NULL, rebuilder, NULL), 0);
        for (int i = 0; i < THREADS; i++) {
            void *ret = NULL;
            assert_int_equal(pthread_join(threads[i], &ret), 0);
            wrong += (long)(intptr_t)ret;
        }
        pthread_barrier_destroy(&start);
    }
    assert_int_equal(wrong, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_thread_gets_the_document_of_its_set),
        cmocka_unit_test(test_threads_rebuild_from_one_set_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
