/*
 * test_log.c - tests for lib/util/log.c: the klog text header, verbosity
 * filtering, structured key/value pairs, the JSON format, and that lines
 * written from several threads never interleave.
 */
#include "cktest.h"

#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/util.h"

static char *captured;
static size_t captured_len;
static FILE *capture;

static int start_capture(void **state)
{
    (void)state;
    capture = open_memstream(&captured, &captured_len);
    ck_log_set_output(capture);
    ck_log_set_format(CK_LOG_FORMAT_TEXT);
    ck_log_set_verbosity(0);
    return capture ? 0 : -1;
}

static int stop_capture(void **state)
{
    (void)state;
    ck_log_set_output(NULL);
    fclose(capture);
    free(captured);
    captured = NULL;
    return 0;
}

static const char *output(void)
{
    fflush(capture);
    return captured;
}

static void assert_matches(const char *text, const char *pattern)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0);
    int r = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    if (r != 0)
        fail_msg("%s\ndoes not match %s", text, pattern);
}

static void test_text_header_is_klog_shaped(void **state)
{
    (void)state;
    CK_LOGI("hello %d", 42);
    /* I1122 10:00:00.000000   1234 test_log.c:NN] hello 42 */
    assert_matches(
        output(),
        "^I[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} +[0-9]+ test_log\\.c:[0-9]+\\] hello 42$");
}

static void test_severity_letters(void **state)
{
    (void)state;
    CK_LOGW("w");
    CK_LOGE("e");
    assert_matches(output(), "^W[0-9]{4} .*\\] w\nE[0-9]{4} .*\\] e\n$");
}

static void test_verbosity_filters_info_only(void **state)
{
    (void)state;
    ck_log_set_verbosity(2);
    CK_LOGV(2, "shown");
    CK_LOGV(3, "hidden");
    assert_true(ck_log_v(2));
    assert_false(ck_log_v(3));
    const char *out = output();
    assert_non_null(strstr(out, "shown"));
    assert_null(strstr(out, "hidden"));
}

static void test_structured_text_quotes_message_and_values(void **state)
{
    (void)state;
    CK_LOGS(0, "Serving", "address", "http://127.0.0.1:6443", "note", "say \"hi\"\n");
    assert_matches(
        output(),
        "\\] \"Serving\" address=\"http://127.0.0.1:6443\" note=\"say \\\\\"hi\\\\\"\\\\n\"$");
}

static void test_json_line_has_ts_caller_msg_v_and_pairs(void **state)
{
    (void)state;
    ck_log_set_format(CK_LOG_FORMAT_JSON);
    ck_log_set_verbosity(1);
    CK_LOGS(1, "Updated", "featureGates", "A=true");
    CK_LOGS_ERR("Failed", "err", "boom");

    const char *out = output();
    const char *newline = strchr(out, '\n');
    assert_non_null(newline);
    json_error_t jerr;
    json_t *info = json_loadb(out, (size_t)(newline - out), 0, &jerr);
    assert_non_null(info);
    assert_true(json_is_real(json_object_get(info, "ts")));
    assert_non_null(strstr(json_string_value(json_object_get(info, "caller")), "test_log.c:"));
    assert_string_equal(json_string_value(json_object_get(info, "msg")), "Updated");
    assert_int_equal(json_integer_value(json_object_get(info, "v")), 1);
    assert_string_equal(json_string_value(json_object_get(info, "featureGates")), "A=true");
    json_decref(info);

    json_t *error = json_loads(newline + 1, 0, &jerr);
    assert_non_null(error);
    assert_null(json_object_get(error, "v")); /* error lines carry no verbosity */
    assert_string_equal(json_string_value(json_object_get(error, "err")), "boom");
    json_decref(error);
}

static void test_parse_format(void **state)
{
    (void)state;
    enum ck_log_format f = CK_LOG_FORMAT_TEXT;
    assert_int_equal(ck_log_parse_format("json", &f), 0);
    assert_int_equal(f, CK_LOG_FORMAT_JSON);
    assert_int_equal(ck_log_parse_format("xml", &f), CK_EINVAL);
    assert_int_equal(f, CK_LOG_FORMAT_JSON); /* untouched on error */
}

static void test_long_line_is_cut_but_still_ends_the_line(void **state)
{
    (void)state;
    char *big = malloc(20000);
    assert_non_null(big);
    memset(big, 'x', 19999);
    big[19999] = '\0';
    CK_LOGI("%s", big);
    CK_LOGI("next");
    free(big);
    const char *out = output();
    const char *first_end = strchr(out, '\n');
    assert_non_null(first_end);
    assert_true(first_end - out < 9000);
    assert_non_null(strstr(first_end + 1, "] next\n"));
}

#define THREADS 4
#define LINES   200

static void *log_many(void *arg)
{
    for (int i = 0; i < LINES; i++)
        CK_LOGI("thread %ld line %d end", (long)(intptr_t)arg, i);
    return NULL;
}

static void test_lines_from_threads_never_interleave(void **state)
{
    (void)state;
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, log_many, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    int lines = 0;
    for (const char *p = output(); *p; lines++) {
        const char *end = strchr(p, '\n');
        assert_non_null(end);
        assert_memory_equal(end - 4, " end", 4);
        p = end + 1;
    }
    assert_int_equal(lines, THREADS * LINES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_header_is_klog_shaped, start_capture,
                                        stop_capture),
        cmocka_unit_test_setup_teardown(test_severity_letters, start_capture, stop_capture),
        cmocka_unit_test_setup_teardown(test_verbosity_filters_info_only, start_capture,
                                        stop_capture),
        cmocka_unit_test_setup_teardown(test_structured_text_quotes_message_and_values,
                                        start_capture, stop_capture),
        cmocka_unit_test_setup_teardown(test_json_line_has_ts_caller_msg_v_and_pairs, start_capture,
                                        stop_capture),
        cmocka_unit_test(test_parse_format),
        cmocka_unit_test_setup_teardown(test_long_line_is_cut_but_still_ends_the_line,
                                        start_capture, stop_capture),
        cmocka_unit_test_setup_teardown(test_lines_from_threads_never_interleave, start_capture,
                                        stop_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
