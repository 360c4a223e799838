/*
 * test_threads.c - one compiled CEL program (lib/cel/) evaluated from several threads
 * at once, as the admission chain will evaluate a policy's programs: a program is
 * immutable after ck_cel_compile(), regexes compiled into it included. Runs under
 * ThreadSanitizer too (label "concurrency").
 */
#include "cktest.h"

#include <jansson.h>
#include <pthread.h>
#include <string.h>

#include "ckube/cel.h"

struct shared_program {
    const struct ck_cel_program *prog;
    json_t *self;
    int failures;
};

static void *evaluate_many(void *arg)
{
    struct shared_program *sp = arg;
    struct ck_cel_var vars[] = {{"self", sp->self, false, NULL, NULL}};
    for (int i = 0; i < 200; i++) {
        struct ck_cel_result *res = NULL;
        struct ck_err err = {0};
        if (ck_cel_eval(sp->prog, vars, 1, 0, &res, NULL, &err) || !ck_cel_result_bool(res))
            __atomic_add_fetch(&sp->failures, 1, __ATOMIC_RELAXED);
        ck_cel_result_free(res);
    }
    return NULL;
}

/* One compiled program (with a regex compiled into it) evaluated by four threads at once. */
static void test_program_shared_between_threads(void **state)
{
    (void)state;
    const char *expr = "self.items.all(i, i.matches('^[a-z]+$')) && self.items.map(i, "
                       "i.upperAscii()).join('-').findAll('[A-Z]+').size() == 3";
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    assert_int_equal(ck_cel_compile(expr, strlen(expr), &prog, &err), 0);
    struct shared_program sp = {prog, json_loads("{\"items\": [\"a\", \"bc\", \"def\"]}", 0, NULL),
                                0};
    assert_non_null(sp.self);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, evaluate_many, &sp), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(sp.failures, 0);
    json_decref(sp.self);
    ck_cel_program_free(prog);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_shared_between_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
