/*
 * test_logrotate.c - tests for lib/agent/logrotate.c, the kubelet's container log
 * rotation step, on files in a scratch directory with a fake ReopenContainerLog: below
 * the size nothing happens; past it a failed rotation's leftovers go, the oldest rotated
 * files go down to MaxFiles - 2, the others are gzipped (their lines intact), the log
 * becomes LOG.<UTC time> and the runtime is asked to reopen; a failed reopen puts the
 * log back; a missing log is reopened first; and the log reader reads the gzipped files.
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../lib/agent/internal.h"
#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "scratch.h"

/* 2026-01-02T03:04:05Z */
#define NOW 1767323045

static int setup(void **state)
{
    return scratch_setup(state, "logrotate", "0.log", "0/exit");
}

static int teardown(void **state)
{
    return scratch_teardown(state);
}

/* The fake runtime: counts reopens, makes a new empty log unless told to fail. */
struct fake {
    const char *log;
    int calls;
    bool fail;
};

static int fake_reopen(void *arg, struct ck_err *reterr)
{
    struct fake *f = arg;
    f->calls++;
    if (f->fail)
        return ck_err_set(reterr, CK_EIO, "rpc error: code = Unknown desc = no such task");
    scratch_put(f->log, "", "w");
    return 0;
}

/* What the log reader gives of the scratch log with tail (-1: all); static buffer. */
static const char *read_log(const struct scratch *s, int64_t tail)
{
    static char out[512];
    struct ck_log_options o = {.tail_lines = tail};
    struct ck_log_reader *r = NULL;
    assert_int_equal(ck_log_reader_open(s->log, s->exit, &o, &r), 0);
    size_t len = 0;
    ssize_t n;
    while ((n = ck_log_reader_read(r, out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    ck_log_reader_free(r);
    return out;
}

static bool exists(const struct scratch *s, const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    return access(path, F_OK) == 0;
}

/* The decompressed text of a gzip file (static buffer). */
static const char *gunzip(const struct scratch *s, const char *name)
{
    static char out[4096];
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    gzFile g = gzopen(path, "rb");
    assert_non_null(g);
    assert_true(gzdirect(g) == 0); /* really compressed */
    int n = gzread(g, out, sizeof(out) - 1);
    assert_true(n >= 0);
    out[n] = 0;
    gzclose(g);
    return out;
}

static size_t count_files(const struct scratch *s)
{
    size_t n = 0;
    char **v = ck__log_rotated_files(s->log, true, &n);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return n;
}

static void named(const struct scratch *s, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    scratch_put(path, text, "w");
}

static void test_below_the_size_nothing_happens(void **state)
{
    struct scratch *s = *state;
    struct fake f = {s->log, 0, false};
    struct ck_err err = {0};
    scratch_put(s->log, "2026-01-01T00:00:00.000000001Z stdout F short\n", "w");
    assert_int_equal(ck__log_rotate(s->log, 1000, 5, NOW, fake_reopen, &f, &err), 0);
    assert_int_equal(f.calls, 0);
    assert_int_equal(count_files(s), 0);
    /* a negative size never rotates */
    assert_int_equal(ck__log_rotate(s->log, -1, 5, NOW, fake_reopen, &f, &err), 0);
    assert_int_equal(f.calls, 0);
}

static void test_rotation_tidies_compresses_and_reopens(void **state)
{
    struct scratch *s = *state;
    struct fake f = {s->log, 0, false};
    struct ck_err err = {0};
    /* four earlier rotations, one already compressed, one compressed but not removed
       (its .gz is there), and a compression's leftover .tmp */
    named(s, "0.log.20260101-000000.gz", "not looked at");
    named(s, "0.log.20260101-000010", "2026-01-01T00:00:10.000000000Z stdout F ten\n");
    named(s, "0.log.20260101-000020", "2026-01-01T00:00:20.000000000Z stdout F twenty\n");
    named(s, "0.log.20260101-000030", "2026-01-01T00:00:30.000000000Z stdout F thirty\n");
    named(s, "0.log.20260101-000030.gz.tmp", "half");
    named(s, "0.log.20260101-000040", "2026-01-01T00:00:40.000000000Z stdout F forty\n");
    scratch_put(s->log, "2026-01-01T00:00:50.000000000Z stdout F the current one\n", "w");
    /* MaxFiles 4: 2 rotated kept, the one being rotated, the new log */
    assert_int_equal(ck__log_rotate(s->log, 10, 4, NOW, fake_reopen, &f, &err), 1);
    assert_int_equal(f.calls, 1);
    assert_false(exists(s, "0.log.20260101-000000.gz")); /* the oldest went */
    assert_false(exists(s, "0.log.20260101-000010"));
    assert_false(exists(s, "0.log.20260101-000020"));
    assert_false(exists(s, "0.log.20260101-000030.gz.tmp")); /* leftovers went */
    assert_false(exists(s, "0.log.20260101-000030"));
    assert_false(exists(s, "0.log.20260101-000040"));
    assert_string_equal(gunzip(s, "0.log.20260101-000030.gz"),
                        "2026-01-01T00:00:30.000000000Z stdout F thirty\n");
    assert_string_equal(gunzip(s, "0.log.20260101-000040.gz"),
                        "2026-01-01T00:00:40.000000000Z stdout F forty\n");
    assert_true(exists(s, "0.log.20260102-030405")); /* the newest stays uncompressed */
    struct stat st;
    assert_int_equal(stat(s->log, &st), 0); /* the runtime's new log */
    assert_int_equal(st.st_size, 0);
    assert_int_equal(count_files(s), 3); /* with the log: MaxFiles */

    /* the reader: the gzipped files' lines, then the newest rotated one, then the log */
    scratch_put(s->log, "2026-01-02T03:04:06.000000000Z stdout F after\n", "w");
    assert_string_equal(read_log(s, -1), "thirty\nforty\nthe current one\nafter\n");
    assert_string_equal(read_log(s, 3), "forty\nthe current one\nafter\n"); /* across them */
}

static void test_a_compression_half_done_is_read_once(void **state)
{
    struct scratch *s = *state;
    /* the .gz was renamed into place, the uncompressed one not removed yet */
    named(s, "0.log.20260101-000010", "2026-01-01T00:00:10.000000000Z stdout F ten\n");
    char path[256];
    snprintf(path, sizeof(path), "%s/0.log.20260101-000010.gz", s->dir);
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    gzputs(g, "2026-01-01T00:00:10.000000000Z stdout F ten\n");
    gzclose(g);
    scratch_put(s->log, "2026-01-01T00:00:11.000000000Z stdout F eleven\n", "w");
    assert_string_equal(read_log(s, -1), "ten\neleven\n");
}

static void test_max_files_two_keeps_only_the_newest_rotated(void **state)
{
    struct scratch *s = *state;
    struct fake f = {s->log, 0, false};
    struct ck_err err = {0};
    named(s, "0.log.20260101-000010", "old\n");
    scratch_put(s->log, "0123456789", "w");
    assert_int_equal(ck__log_rotate(s->log, 10, 2, NOW, fake_reopen, &f, &err), 1);
    assert_false(exists(s, "0.log.20260101-000010"));
    assert_false(exists(s, "0.log.20260101-000010.gz"));
    assert_true(exists(s, "0.log.20260102-030405"));
    assert_int_equal(count_files(s), 1);
    /* within the same second: the name is taken (also once compressed), nothing moves */
    scratch_put(s->log, "0123456789", "w");
    assert_int_equal(ck__log_rotate(s->log, 10, 3, NOW, fake_reopen, &f, &err), 0);
    assert_int_equal(f.calls, 1);
    assert_true(exists(s, "0.log"));
    assert_true(exists(s, "0.log.20260102-030405"));
    assert_int_equal(ck__log_rotate(s->log, 10, 3, NOW + 1, fake_reopen, &f, &err), 1);
    assert_true(exists(s, "0.log.20260102-030405.gz"));
    assert_true(exists(s, "0.log.20260102-030406"));
    scratch_put(s->log, "0123456789", "w");
    assert_int_equal(ck__log_rotate(s->log, 10, 3, NOW, fake_reopen, &f, &err), 0);
    assert_int_equal(f.calls, 2);
    assert_true(exists(s, "0.log.20260102-030405.gz"));
}

static void test_a_failed_reopen_puts_the_log_back(void **state)
{
    struct scratch *s = *state;
    struct fake f = {s->log, 0, true};
    struct ck_err err = {0};
    scratch_put(s->log, "2026-01-01T00:00:00.000000001Z stdout F keep me\n", "w");
    int r = ck__log_rotate(s->log, 10, 5, NOW, fake_reopen, &f, &err);
    assert_int_equal(r, CK_EIO);
    assert_non_null(strstr(err.msg, "failed to reopen container log"));
    assert_non_null(strstr(err.msg, "no such task"));
    assert_int_equal(f.calls, 1);
    assert_false(exists(s, "0.log.20260102-030405"));
    FILE *in = fopen(s->log, "r");
    char line[128] = "";
    assert_non_null(in);
    assert_non_null(fgets(line, sizeof(line), in));
    fclose(in);
    assert_string_equal(line, "2026-01-01T00:00:00.000000001Z stdout F keep me\n");
}

static void test_a_missing_log_is_reopened_first(void **state)
{
    struct scratch *s = *state;
    struct fake f = {s->log, 0, false};
    struct ck_err err = {0};
    assert_int_equal(ck__log_rotate(s->log, 10, 5, NOW, fake_reopen, &f, &err), 0);
    assert_int_equal(f.calls, 1);
    assert_true(exists(s, "0.log")); /* the fake's new empty log: below the size */
    unlink(s->log);
    f.fail = true;
    assert_int_equal(ck__log_rotate(s->log, 10, 5, NOW, fake_reopen, &f, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "doesn't exist, reopen container log failed"));
}

static void test_in_use(void **state)
{
    (void)state;
    char *names[] = {"a.log.1", "a.log.1.gz", "a.log.2", "a.log.3.tmp", "a.log.3.gz.tmp"};
    assert_false(ck__log_file_in_use(names[0], names, 5)); /* its .gz is there */
    assert_true(ck__log_file_in_use(names[1], names, 5));
    assert_true(ck__log_file_in_use(names[2], names, 5));
    assert_false(ck__log_file_in_use(names[3], names, 5));
    assert_false(ck__log_file_in_use(names[4], names, 5));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_below_the_size_nothing_happens),
        T(test_rotation_tidies_compresses_and_reopens),
        T(test_a_compression_half_done_is_read_once),
        T(test_max_files_two_keeps_only_the_newest_rotated),
        T(test_a_failed_reopen_puts_the_log_back),
        T(test_a_missing_log_is_reopened_first),
        cmocka_unit_test(test_in_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
