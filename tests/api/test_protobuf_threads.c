/*
 * test_protobuf_threads.c - lib/api/protobuf.c from many threads at once.
 *
 * The message table is built on first use: eight threads released together
 * by a barrier all make that first use (a lookup, an encoding, a decoding),
 * and every one must get the same bytes and the same object. Labelled
 * `concurrency`, so ThreadSanitizer checks the table's publication too.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define THREADS 8
#define ROUNDS  200

static pthread_barrier_t start;

static const char pod_text[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
    "\"labels\":{\"app\":\"web\"},\"creationTimestamp\":\"2024-01-02T03:04:05Z\"},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\",\"ports\":"
    "[{\"containerPort\":80}],\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}";

struct result {
    char *bytes;
    size_t len;
    bool ok;
};

static void *worker(void *arg)
{
    struct result *res = arg;
    json_t *pod = json_loads(pod_text, 0, NULL);
    pthread_barrier_wait(&start);
    res->ok = pod && ck_proto_has_message("io.k8s.api.core.v1.Pod");
    for (int i = 0; res->ok && i < ROUNDS; i++) {
        char *bytes = NULL;
        size_t len = 0;
        json_t *back = NULL;
        res->ok = ck_proto_encode("io.k8s.api.core.v1.Pod", pod, &bytes, &len, NULL) == 0 &&
                  ck_proto_decode("io.k8s.api.core.v1.Pod", bytes, len, &back, NULL) == 0 &&
                  json_equal(back, pod);
        json_decref(back);
        if (i == 0) {
            res->bytes = bytes;
            res->len = len;
        } else {
            free(bytes);
        }
    }
    json_decref(pod);
    return NULL;
}

static void test_first_use_from_many_threads(void **state)
{
    (void)state;
    pthread_t threads[THREADS];
    struct result results[THREADS] = {0};
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &results[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        assert_true(results[i].ok);
        assert_int_equal(results[i].len, results[0].len);
        assert_memory_equal(results[i].bytes, results[0].bytes, results[0].len);
    }
    for (int i = 0; i < THREADS; i++)
        free(results[i].bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_use_from_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
