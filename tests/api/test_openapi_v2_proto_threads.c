/*
 * test_openapi_v2_proto_threads.c - lib/api/openapi_v2_proto.c from many
 * threads at once, as concurrent /openapi/v2 requests call it.
 *
 * The message table is read on first use: eight threads released together
 * by a barrier all make that first use, then encode again, and every one
 * must get the same bytes. Labelled `concurrency`, so ThreadSanitizer checks
 * the table's publication too.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define THREADS 8
#define ROUNDS  50

static pthread_barrier_t start;
static json_t *doc;

struct result {
    char *bytes;
    size_t len;
    bool same; /* every round gave the bytes of the first */
};

static void *encode_rounds(void *arg)
{
    struct result *res = arg;
    res->same = true;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        char *data = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        if (ck_openapi_v2_proto(doc, &data, &len, &err) < 0) {
            res->same = false;
            break;
        }
        if (!res->bytes) {
            res->bytes = data;
            res->len = len;
            continue;
        }
        if (len != res->len || memcmp(data, res->bytes, len) != 0)
            res->same = false;
        free(data);
    }
    return NULL;
}

static void test_first_use_from_many_threads(void **state)
{
    (void)state;
    doc = json_loads("{\"swagger\":\"2.0\",\"paths\":{\"/p\":{\"get\":{\"responses\":{\"200\":"
                     "{\"description\":\"OK\",\"schema\":{\"$ref\":\"#/definitions/A\"}}}}}},"
                     "\"definitions\":{\"A\":{\"type\":\"object\",\"x-k\":[{\"a\":\"b\"}]}}}",
                     0, NULL);
    assert_non_null(doc);
    pthread_t threads[THREADS];
    struct result results[THREADS] = {0};
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, encode_rounds, &results[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        assert_true(results[i].same);
        assert_non_null(results[i].bytes);
        assert_int_equal(results[i].len, results[0].len);
        assert_memory_equal(results[i].bytes, results[0].bytes, results[0].len);
    }
    assert_true(results[0].len > 20);
    for (int i = 0; i < THREADS; i++)
        free(results[i].bytes);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_use_from_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
