/*
 * test_logread.c - tests for lib/agent/logread.c, the agent's reading of a container's
 * CRI log as the kubelet's ReadLogs: rotated files first; tailLines across files (0: none);
 * since (sinceSeconds and sinceTime, the later wins) after the tail; limitBytes cutting a
 * record; timestamps once per line (partial records carry none on their continuation);
 * follow going on past a rotation and ending at the exit file; the termination message
 * (the file's first 4 KiB, else the last 80 lines and 2 KiB of a failed attempt's log).
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/agent/internal.h"
#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "scratch.h"

static int setup(void **state)
{
    return scratch_setup(state, "logread", "0.log", "0/exit");
}

static int teardown(void **state)
{
    return scratch_teardown(state);
}

/* Reads everything the reader gives until its end (or `rounds` empty reads). */
static char *read_all(struct ck_log_reader *r, int rounds)
{
    static char out[16384];
    size_t len = 0;
    ssize_t n;
    while (rounds > 0 && (n = ck_log_reader_read(r, out + len, 7)) != CK_LOG_END) {
        if (n == 0)
            rounds--;
        len += (size_t)n;
    }
    out[len] = 0;
    return out;
}

static char *read_with(const struct scratch *s, struct ck_log_options o)
{
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(s->log, s->exit, &o, &r), 0);
    char *out = read_all(r, 1);
    ck_log_reader_free(r);
    return out;
}

/* Three files: two rotated (their names sort by time) and the current one. */
static void three_files(const struct scratch *s)
{
    char path[160];
    snprintf(path, sizeof(path), "%s.20260101-000000", s->log);
    scratch_put(path,
                "2026-01-01T00:00:00.000000001Z stdout F one\n"
                "2026-01-01T00:00:01.000000000Z stderr F two\n",
                "a");
    snprintf(path, sizeof(path), "%s.20260101-000002", s->log);
    scratch_put(path, "2026-01-01T00:00:02.000000000Z stdout F three\n", "a");
    scratch_put(s->log,
                "2026-01-01T00:00:03.000000000Z stdout P fo\n"
                "2026-01-01T00:00:03.500000000Z stdout F ur\n"
                "2026-01-01T00:00:04.000000000Z stdout F five\n",
                "a");
}

static void test_all_files_in_order_and_tail_across_them(void **state)
{
    struct scratch *s = *state;
    three_files(s);
    struct ck_log_options o = {.tail_lines = -1};
    assert_string_equal(read_with(s, o), "one\ntwo\nthree\nfour\nfive\n");
    o.tail_lines = 2; /* records, as the kubelet counts them: "ur" and "five" */
    assert_string_equal(read_with(s, o), "ur\nfive\n");
    o.tail_lines = 4; /* three, fo, ur, five */
    assert_string_equal(read_with(s, o), "three\nfour\nfive\n");
    o.tail_lines = 5;
    assert_string_equal(read_with(s, o), "two\nthree\nfour\nfive\n");
    o.tail_lines = 100;
    assert_string_equal(read_with(s, o), "one\ntwo\nthree\nfour\nfive\n");
    o.tail_lines = 0;
    assert_string_equal(read_with(s, o), "");
}

static void test_since_after_the_tail_and_the_later_of_the_two(void **state)
{
    struct scratch *s = *state;
    three_files(s);
    struct ck_log_options o = {.tail_lines = -1};
    int64_t t2 = 0;
    o.since_ns = ck_log_since(NULL, "2026-01-01T00:00:02Z", 0);
    assert_string_equal(read_with(s, o), "three\nfour\nfive\n");
    o.tail_lines = 4; /* the last four records, then the ones since 00:00:03 */
    o.since_ns = ck_log_since(NULL, "2026-01-01T00:00:03Z", 0);
    assert_string_equal(read_with(s, o), "four\nfive\n");
    /* sinceSeconds is now minus that; sinceTime wins when later */
    assert_int_equal(ck__time_parse("2026-01-01T00:00:04Z", &t2, NULL), 0);
    int64_t now = t2 * CK_SEC;
    assert_int_equal(ck_log_since("2", NULL, now), now - 2 * CK_SEC);
    assert_int_equal(ck_log_since("2", "2026-01-01T00:00:03Z", now), now - CK_SEC);
    assert_int_equal(ck_log_since("4", "2026-01-01T00:00:01Z", now), now - 3 * CK_SEC);
    assert_int_equal(ck_log_since(NULL, NULL, now), 0);
    /* far ends do not overflow: a time past 2262 keeps nothing, a huge duration all */
    assert_int_equal(ck_log_since(NULL, "9999-12-31T23:59:59Z", now), INT64_MAX);
    assert_int_equal(ck_log_since("99999999999999", NULL, now), 0);
    o.tail_lines = -1;
    o.since_ns = ck_log_since("1", NULL, now); /* 00:00:03 */
    assert_string_equal(read_with(s, o), "four\nfive\n");
}

static void test_limit_bytes_and_timestamps(void **state)
{
    struct scratch *s = *state;
    three_files(s);
    struct ck_log_options o = {.tail_lines = -1, .limit_bytes = 6};
    assert_string_equal(read_with(s, o), "one\ntw");
    o = (struct ck_log_options){.tail_lines = 3, .timestamps = true};
    assert_string_equal(read_with(s, o), "2026-01-01T00:00:03.000000000Z four\n"
                                         "2026-01-01T00:00:04.000000000Z five\n");
}

static void test_follow_goes_on_past_a_rotation_and_ends_at_exit(void **state)
{
    struct scratch *s = *state;
    scratch_put(s->log, "2026-01-01T00:00:00.000000000Z stdout F a\n", "a");
    struct ck_log_options o = {.tail_lines = -1, .follow = true};
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(s->log, s->exit, &o, &r), 0);
    assert_string_equal(read_all(r, 2), "a\n");
    /* the shim's rotation: a last record to the old file, rename, a new file */
    scratch_put(s->log, "2026-01-01T00:00:01.000000000Z stdout F b\n", "a");
    char rotated[160];
    snprintf(rotated, sizeof(rotated), "%s.20260101-000001", s->log);
    assert_int_equal(rename(s->log, rotated), 0);
    scratch_put(s->log, "2026-01-01T00:00:02.000000000Z stdout F c\n", "a");
    assert_string_equal(read_all(r, 3), "b\nc\n");
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/0", s->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    scratch_put(s->log, "2026-01-01T00:00:03.000000000Z stdout F d\n", "a");
    scratch_put(s->exit, "0 0 0 0\n", "a");
    assert_string_equal(read_all(r, 1000), "d\n"); /* then the end, not an empty read */
    char buf[8];
    assert_int_equal(ck_log_reader_read(r, buf, sizeof(buf)), CK_LOG_END);
    ck_log_reader_free(r);
}

static void test_no_log_is_enoent(void **state)
{
    struct scratch *s = *state;
    struct ck_log_options o = {.tail_lines = -1};
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(s->log, s->exit, &o, &r), CK_ENOENT);
    assert_null(r);
}

static void test_termination_message(void **state)
{
    struct scratch *s = *state;
    char file[200];
    snprintf(file, sizeof(file), "%s.termination", s->log);
    /* the termination file wins, its first 4 KiB */
    assert_int_equal(ck__termination_file(file), 0);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666); /* any container user writes it */
    scratch_put(s->log, "2026-01-01T00:00:00.000000001Z stderr F it broke\n", "a");
    assert_null(ck__termination_message(file, s->log, "FallbackToLogsOnError", 0));
    scratch_put(file, "done: 3 rows", "a");
    char *m = ck__termination_message(file, s->log, "File", 1);
    assert_string_equal(m, "done: 3 rows");
    free(m);
    FILE *f = fopen(file, "w");
    for (int i = 0; i < 5000; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    m = ck__termination_message(file, s->log, NULL, 0);
    assert_int_equal(strlen(m), 4096);
    free(m);
    /* empty: the log's tail under FallbackToLogsOnError when the attempt failed */
    assert_int_equal(ck__termination_file(file), 0);
    assert_null(ck__termination_message(file, s->log, "File", 1));
    assert_null(ck__termination_message(file, s->log, "FallbackToLogsOnError", 0));
    m = ck__termination_message(file, s->log, "FallbackToLogsOnError", 1);
    assert_string_equal(m, "it broke\n");
    free(m);
    /* the last 80 lines, then their last 2 KiB */
    for (int i = 0; i < 100; i++) {
        char line[128];
        snprintf(line, sizeof(line), "2026-01-01T00:00:01.000000001Z stdout F line %03d\n", i);
        scratch_put(s->log, line, "a");
    }
    m = ck__termination_message(NULL, s->log, "FallbackToLogsOnError", 2);
    assert_non_null(m);
    assert_true(strncmp(m, "line 020\n", 9) == 0); /* 80 of 101 records: from the 21st */
    assert_non_null(strstr(m, "line 099\n"));
    free(m);
    for (int i = 0; i < 80; i++) {
        char line[256];
        snprintf(line, sizeof(line), "2026-01-01T00:00:02.000000001Z stdout F %0100d\n", i);
        scratch_put(s->log, line, "a");
    }
    m = ck__termination_message(NULL, s->log, "FallbackToLogsOnError", 2);
    assert_int_equal(strlen(m), 2048);
    free(m);
    /* no log, no file: none */
    assert_null(ck__termination_message(NULL, NULL, "FallbackToLogsOnError", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all_files_in_order_and_tail_across_them, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_since_after_the_tail_and_the_later_of_the_two, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_limit_bytes_and_timestamps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follow_goes_on_past_a_rotation_and_ends_at_exit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_log_is_enoent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_termination_message, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
