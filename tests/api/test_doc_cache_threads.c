/*
 * test_doc_cache_threads.c - the document caches of lib/api (the discovery index of
 * discovery.c and the OpenAPI v2 document of openapi_v2.c, both kept by
 * ck__doc_cache_copy) asked for from several threads at once: every thread gets its own
 * copy, equal to the document built before. The set changes between the rounds (from
 * the main thread), so each round starts with the caches rebuilt for the other set.
 * Run under TSan (label concurrency).
 *
 * Rebuilding from one set in several threads at once is left out: the builders share
 * the set's schema objects, whose jansson reference counts are read with a plain load
 * (ThreadSanitizer reports it; see docs/internals/client.md).
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
static json_t *want_index[2], *want_v2[2];

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
        if (!want_index[i] || !want_v2[i])
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_thread_gets_the_document_of_its_set),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
