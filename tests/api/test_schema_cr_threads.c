/*
 * test_schema_cr_threads.c - custom resource validation from several
 * threads at once: the compiled `pattern` cache of lib/api/formats.c is
 * shared by the process. Four threads validate values against 300 distinct
 * patterns (more than the cache keeps, so both the cached and the compiled
 * each time paths run) and must all get the right answers. Run under TSan
 * (label concurrency).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define PATTERNS 300
#define THREADS  4

static struct ck_schemas *set;

/* A kind whose spec has one string property p<i> with pattern ^v<i>-[0-9]+$ per i. */
static int load(void **state)
{
    (void)state;
    size_t cap = 256 + PATTERNS * 96;
    char *doc = malloc(cap);
    if (!doc)
        return -1;
    size_t len = (size_t)snprintf(doc, cap,
                                  "{\"t.Many\":{\"type\":\"object\",\"x-ckube-custom-resource\":"
                                  "true,\"properties\":{\"spec\":{\"type\":\"object\","
                                  "\"properties\":{");
    for (int i = 0; i < PATTERNS; i++)
        len += (size_t)snprintf(doc + len, cap - len,
                                "%s\"p%d\":{\"type\":\"string\",\"pattern\":\"^v%d-[0-9]+$\"}",
                                i ? "," : "", i, i);
    snprintf(doc + len, cap - len, "}}}}}");
    const char *docs[] = {doc};
    struct ck_err err = {0};
    int r = ck_schemas_new(docs, 1, &set, &err);
    free(doc);
    return r == 0 ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    set = ck_schemas_free(set);
    return 0;
}

struct worker {
    int id;
    int wrong; /* answers that were not as expected */
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int round = 0; round < 20; round++) {
        json_t *spec = json_object();
        for (int i = 0; i < PATTERNS; i++) {
            char name[16], value[32];
            snprintf(name, sizeof(name), "p%d", i);
            /* every fifth value breaks its pattern (the right one for a neighbour) */
            bool bad = (i + w->id + round) % 5 == 0;
            snprintf(value, sizeof(value), "v%d-%d", bad ? i + 1 : i, round);
            json_object_set_new(spec, name, json_string(value));
        }
        json_t *obj = json_pack("{s:o}", "spec", spec);
        struct ck_field_errors errs = {0};
        ck_schema_validate(set, "t.Many", obj, &errs);
        int want = 0;
        for (int i = 0; i < PATTERNS; i++)
            want += (i + w->id + round) % 5 == 0;
        if ((int)errs.len != want || errs.nomem)
            w->wrong++;
        ck_field_errors_release(&errs);
        json_decref(obj);
    }
    return NULL;
}

static void test_patterns_validate_alike_from_many_threads(void **state)
{
    (void)state;
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.id = i};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].wrong, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_validate_alike_from_many_threads),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
