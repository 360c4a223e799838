/*
 * test_exec_stream.c - the records of an exec session between the API server and the
 * agent (ckube/internal/exec_stream.h): a header round-trips; a record split anywhere
 * waits for its last byte; a length over the maximum breaks the stream; the collecting
 * buffer yields records in order across appends and compacts.
 */
#include "cktest.h"
#include <stdint.h>
#include <string.h>

#include "ckube/internal/exec_stream.h"

static size_t record(unsigned char *out, unsigned channel, const char *text)
{
    size_t n = strlen(text);
    ck__exec_frame_header(out, channel, n);
    memcpy(out + CK_EXEC_FRAME_HEADER, text, n);
    return CK_EXEC_FRAME_HEADER + n;
}

static void test_a_record_round_trips(void **state)
{
    (void)state;
    unsigned char buf[64];
    size_t n = record(buf, CK_EXEC_STDERR, "hello");
    assert_int_equal(n, 10);
    assert_memory_equal(buf, "\x02\x00\x00\x00\x05", 5);
    unsigned ch = 0;
    const unsigned char *p = NULL;
    size_t len = 0, used = 0;
    assert_int_equal(ck__exec_frame_next(buf, n, &ch, &p, &len, &used), 1);
    assert_int_equal(ch, CK_EXEC_STDERR);
    assert_int_equal(len, 5);
    assert_int_equal(used, 10);
    assert_memory_equal(p, "hello", 5);
}

static void test_a_split_record_waits_for_its_last_byte(void **state)
{
    (void)state;
    unsigned char buf[64];
    size_t n = record(buf, CK_EXEC_STDOUT, "abc");
    unsigned ch;
    const unsigned char *p;
    size_t len, used;
    for (size_t cut = 0; cut < n; cut++)
        assert_int_equal(ck__exec_frame_next(buf, cut, &ch, &p, &len, &used), 0);
    assert_int_equal(ck__exec_frame_next(buf, n, &ch, &p, &len, &used), 1);
}

static void test_an_empty_record_and_the_close_channel(void **state)
{
    (void)state;
    unsigned char buf[16];
    ck__exec_frame_header(buf, CK_EXEC_CLOSE, 0);
    unsigned ch;
    const unsigned char *p;
    size_t len, used;
    assert_int_equal(ck__exec_frame_next(buf, 5, &ch, &p, &len, &used), 1);
    assert_int_equal(ch, 255);
    assert_int_equal(len, 0);
    assert_int_equal(used, 5);
}

static void test_a_length_over_the_maximum_breaks_the_stream(void **state)
{
    (void)state;
    unsigned char buf[8];
    unsigned ch;
    const unsigned char *p;
    size_t len, used;
    ck__exec_frame_header(buf, CK_EXEC_STDIN, CK_EXEC_FRAME_MAX);
    assert_int_equal(ck__exec_frame_next(buf, 5, &ch, &p, &len, &used), 0); /* waits */
    ck__exec_frame_header(buf, CK_EXEC_STDIN, CK_EXEC_FRAME_MAX + 1);
    assert_int_equal(ck__exec_frame_next(buf, 5, &ch, &p, &len, &used), -1);
    memcpy(buf, "\x00\xff\xff\xff\xff", 5);
    assert_int_equal(ck__exec_frame_next(buf, 5, &ch, &p, &len, &used), -1);
}

static struct ck__exec_frames frames; /* 128 KiB: not on the stack */

static void test_the_buffer_yields_records_across_appends(void **state)
{
    (void)state;
    memset(&frames, 0, sizeof(frames));
    unsigned char stream[64];
    size_t n = record(stream, CK_EXEC_STDOUT, "one");
    n += record(stream + n, CK_EXEC_STDERR, "two");
    n += record(stream + n, CK_EXEC_ERROR, "{}");
    const char *want[] = {"one", "two", "{}"};
    unsigned want_ch[] = {1, 2, 3};
    size_t got = 0;
    unsigned ch;
    const unsigned char *p;
    size_t len;
    for (size_t i = 0; i < n; i++) { /* one byte at a time */
        assert_int_equal(ck__exec_frames_append(&frames, stream + i, 1), 1);
        while (ck__exec_frames_next(&frames, &ch, &p, &len) > 0) {
            assert_true(got < 3);
            assert_int_equal(ch, want_ch[got]);
            assert_int_equal(len, strlen(want[got]));
            assert_memory_equal(p, want[got], len);
            got++;
        }
    }
    assert_int_equal(got, 3);
    /* everything was taken: the next append compacts to the start */
    assert_int_equal(ck__exec_frames_append(&frames, stream, 5), 5);
    assert_int_equal(frames.len, 5);
    assert_int_equal(frames.pos, 0);
}

static void test_the_buffer_takes_no_more_than_it_holds(void **state)
{
    (void)state;
    memset(&frames, 0, sizeof(frames));
    static unsigned char big[sizeof(frames.buf) + 100];
    memset(big, 0, sizeof(big));
    assert_int_equal(ck__exec_frames_append(&frames, big, sizeof(big)), sizeof(frames.buf));
    assert_int_equal(ck__exec_frames_append(&frames, big, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_record_round_trips),
        cmocka_unit_test(test_a_split_record_waits_for_its_last_byte),
        cmocka_unit_test(test_an_empty_record_and_the_close_channel),
        cmocka_unit_test(test_a_length_over_the_maximum_breaks_the_stream),
        cmocka_unit_test(test_the_buffer_yields_records_across_appends),
        cmocka_unit_test(test_the_buffer_takes_no_more_than_it_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
