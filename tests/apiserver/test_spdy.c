/*
 * test_spdy.c - tests for lib/apiserver/spdy.c, the SPDY/3.1 framing of port-forward.
 *
 * Known bytes come from outside the code under test: frames written out by hand from
 * the SPDY/3 draft's layouts, the dictionary's length and Adler-32 as the draft's
 * dictionary (the one golang's framer carries) has them, and two SYN_STREAMs of one
 * compression context made with Python's zlib (level 9, that dictionary, Z_SYNC_FLUSH),
 * as kubectl sends them for one forwarded connection.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../lib/apiserver/internal.h"

/* SYN_STREAM 1 {port: 8080, requestid: 0, streamtype: error}, then SYN_STREAM 3 with data */
static const unsigned char syn1[] =
    "\x80\x03\x00\x01\x00\x00\x00\x3d\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x78\xf9\xe3\xc6"
    "\xa7\xc2\x02\x25\x3a\x48\xf9\x5b\x04\x4e\xea\x16\x06\x16\x06\x40\x9a\xb3\x08\x12\x5f\x99"
    "\xa0\x74\xcc\x68\x00\x4e\x89\x25\x45\xa9\x89\xb9\xd0\xc2\x86\x35\x15\x14\x15\x00\x00\x00"
    "\x00\xff\xff";
static const unsigned char syn2[] =
    "\x80\x03\x00\x01\x00\x00\x00\x16\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x22\x53\x33\xa8"
    "\xa4\x4a\x04\x00\x00\x00\xff\xff";

static void test_dictionary_is_the_drafts(void **state)
{
    (void)state;
    unsigned char d[2000];
    size_t n = ck__spdy_dictionary(d, sizeof(d));
    assert_int_equal(n, 1423);
    assert_int_equal(adler32(adler32(0, NULL, 0), d, (uInt)n), 0xe3c6a7c2);
    assert_memory_equal(d, "\0\0\0\7options\0\0\0\4head", 19);
    assert_memory_equal(d + n - 7, ",enq=0.", 7);
}

/* Feeds bytes one at a time: the frame comes only with its last byte. */
static int next_bytewise(struct ck__spdy *s, const unsigned char *p, size_t n,
                         struct ck__spdy_frame *f)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ck__spdy_feed(s, p + i, 1), 1);
        int r = ck__spdy_next(s, f);
        if (i + 1 < n)
            assert_int_equal(r, 0);
        else
            return r;
    }
    return 0;
}

static void test_kubectls_syn_streams_decode(void **state)
{
    (void)state;
    struct ck__spdy s;
    struct ck__spdy_frame f;
    assert_int_equal(ck__spdy_init(&s), 0);
    assert_int_equal(next_bytewise(&s, syn1, sizeof(syn1) - 1, &f), 1);
    assert_true(f.control);
    assert_int_equal(f.type, CK_SPDY_SYN_STREAM);
    assert_int_equal(f.stream, 1);
    assert_int_equal(f.n_headers, 3);
    assert_string_equal(ck__spdy_header(&f, "port"), "8080");
    assert_string_equal(ck__spdy_header(&f, "requestid"), "0");
    assert_string_equal(ck__spdy_header(&f, "streamtype"), "error");
    assert_null(ck__spdy_header(&f, "host"));
    /* the second block only makes sense after the first: one context per direction */
    assert_int_equal(ck__spdy_feed(&s, syn2, sizeof(syn2) - 1), sizeof(syn2) - 1);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.stream, 3);
    assert_string_equal(ck__spdy_header(&f, "streamtype"), "data");
    assert_string_equal(ck__spdy_header(&f, "port"), "8080");
    assert_int_equal(ck__spdy_next(&s, &f), 0);
    ck__spdy_release(&s);

    /* a fresh context cannot read the second block alone */
    assert_int_equal(ck__spdy_init(&s), 0);
    ck__spdy_feed(&s, syn2, sizeof(syn2) - 1);
    assert_int_equal(ck__spdy_next(&s, &f), CK_EINVAL);
    ck__spdy_release(&s);
}

static void test_fixed_frames_have_the_drafts_bytes(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    assert_int_equal(ck__spdy_put_data(&b, 5, CK_SPDY_FLAG_FIN, "hi", 2), 0);
    assert_int_equal(ck__spdy_put_ping(&b, 1), 0);
    assert_int_equal(ck__spdy_put_rst_stream(&b, 3, CK_SPDY_CANCEL), 0);
    assert_int_equal(ck__spdy_put_goaway(&b, 7, CK_SPDY_PROTOCOL_ERROR), 0);
    static const unsigned char want[] = {
        0x00, 0x00, 0x00, 0x05, 0x01, 0x00, 0x00, 0x02, 'h',  'i',              /* DATA */
        0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, /* PING */
        0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x03, /* RST */
        0x00, 0x00, 0x00, 0x05,                                                 /* CANCEL */
        0x80, 0x03, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x07, /* GOAWAY */
        0x00, 0x00, 0x00, 0x01,
    };
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.p, want, sizeof(want));

    /* and they read back */
    struct ck__spdy s;
    struct ck__spdy_frame f;
    assert_int_equal(ck__spdy_init(&s), 0);
    assert_int_equal(ck__spdy_feed(&s, b.p, b.len), b.len);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_false(f.control);
    assert_int_equal(f.stream, 5);
    assert_int_equal(f.flags, CK_SPDY_FLAG_FIN);
    assert_int_equal(f.len, 2);
    assert_memory_equal(f.data, "hi", 2);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, CK_SPDY_PING);
    assert_int_equal(f.value, 1);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, CK_SPDY_RST_STREAM);
    assert_int_equal(f.stream, 3);
    assert_int_equal(f.value, CK_SPDY_CANCEL);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, CK_SPDY_GOAWAY);
    assert_int_equal(f.stream, 7);
    assert_int_equal(f.value, CK_SPDY_PROTOCOL_ERROR);
    assert_int_equal(ck__spdy_next(&s, &f), 0);
    ck__spdy_release(&s);
    ck__buf_release(&b);
}

static void test_settings_and_window_update_parse(void **state)
{
    (void)state;
    static const unsigned char in[] = {
        /* SETTINGS, 1 entry: flags 0, id 7 (initial window), value 65536 */
        0x80, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x07, 0x00, 0x01, 0x00, 0x00,
        /* WINDOW_UPDATE stream 1, delta 4096 */
        0x80, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10,
        0x00,
        /* an unknown type 0x0f with 2 bytes: skipped */
        0x80, 0x03, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb};
    struct ck__spdy s;
    struct ck__spdy_frame f;
    assert_int_equal(ck__spdy_init(&s), 0);
    ck__spdy_feed(&s, in, sizeof(in));
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, CK_SPDY_SETTINGS);
    assert_int_equal(f.value, 1);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, CK_SPDY_WINDOW_UPDATE);
    assert_int_equal(f.stream, 1);
    assert_int_equal(f.value, 4096);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.type, 0x0f);
    assert_int_equal(ck__spdy_next(&s, &f), 0);
    ck__spdy_release(&s);
}

/* Our SYN_REPLY and SYN_STREAM read back through a second session (the peer's view). */
static void test_header_blocks_round_trip_across_frames(void **state)
{
    (void)state;
    struct ck__spdy tx, rx;
    struct ck__spdy_frame f;
    struct ck__buf b = {0};
    assert_int_equal(ck__spdy_init(&tx), 0);
    assert_int_equal(ck__spdy_init(&rx), 0);
    const char *pairs[] = {"streamtype", "data", "port", "80", "requestid", "12"};
    assert_int_equal(ck__spdy_put_headers(&tx, &b, CK_SPDY_SYN_REPLY, 0, 9, NULL, 0), 0);
    assert_int_equal(
        ck__spdy_put_headers(&tx, &b, CK_SPDY_SYN_STREAM, CK_SPDY_FLAG_FIN, 11, pairs, 3), 0);
    assert_int_equal(ck__spdy_put_headers(&tx, &b, CK_SPDY_HEADERS, 0, 11, pairs, 1), 0);
    /* the fixed part of SYN_REPLY: control, version 3, type 2, no flags */
    assert_memory_equal(b.p, "\x80\x03\x00\x02\x00", 5);
    ck__spdy_feed(&rx, b.p, b.len);
    assert_int_equal(ck__spdy_next(&rx, &f), 1);
    assert_int_equal(f.type, CK_SPDY_SYN_REPLY);
    assert_int_equal(f.stream, 9);
    assert_int_equal(f.n_headers, 0);
    assert_int_equal(ck__spdy_next(&rx, &f), 1);
    assert_int_equal(f.type, CK_SPDY_SYN_STREAM);
    assert_int_equal(f.flags, CK_SPDY_FLAG_FIN);
    assert_int_equal(f.stream, 11);
    assert_int_equal(f.n_headers, 3);
    assert_string_equal(ck__spdy_header(&f, "requestid"), "12");
    assert_int_equal(ck__spdy_next(&rx, &f), 1);
    assert_int_equal(f.type, CK_SPDY_HEADERS);
    assert_string_equal(ck__spdy_header(&f, "streamtype"), "data");
    assert_int_equal(ck__spdy_next(&rx, &f), 0);
    ck__spdy_release(&tx);
    ck__spdy_release(&rx);
    ck__buf_release(&b);
}

/* A SYN_STREAM whose block is made here with zlib from the given plain bytes. */
static size_t syn_with_block(unsigned char *out, size_t size, const unsigned char *plain,
                             size_t plain_len)
{
    unsigned char dict[CK_SPDY_DICT_LEN];
    ck__spdy_dictionary(dict, sizeof(dict));
    z_stream z = {0};
    assert_int_equal(deflateInit(&z, 9), Z_OK);
    assert_int_equal(deflateSetDictionary(&z, dict, sizeof(dict)), Z_OK);
    z.next_in = (Bytef *)plain;
    z.avail_in = (uInt)plain_len;
    z.next_out = out + 18;
    z.avail_out = (uInt)(size - 18);
    assert_int_equal(deflate(&z, Z_SYNC_FLUSH), Z_OK);
    size_t packed = size - 18 - z.avail_out;
    deflateEnd(&z);
    size_t len = 10 + packed;
    memcpy(out, "\x80\x03\x00\x01", 4);
    out[4] = 0;
    out[5] = (unsigned char)(len >> 16);
    out[6] = (unsigned char)(len >> 8);
    out[7] = (unsigned char)len;
    memcpy(out + 8, "\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
    return 8 + len;
}

static int parse_one(const unsigned char *p, size_t n)
{
    struct ck__spdy s;
    struct ck__spdy_frame f;
    assert_int_equal(ck__spdy_init(&s), 0);
    int r = 0;
    size_t off = 0;
    while (off < n && r == 0) {
        size_t k = ck__spdy_feed(&s, p + off, n - off);
        off += k;
        r = ck__spdy_next(&s, &f);
        if (k == 0 && r == 0)
            break;
    }
    ck__spdy_release(&s);
    return r;
}

static void test_bounds_end_the_session(void **state)
{
    (void)state;
    /* a DATA frame announcing more than CK_SPDY_FRAME_MAX */
    assert_int_equal(parse_one((const unsigned char *)"\x00\x00\x00\x01\x00\x10\x00\x01", 8),
                     CK_EINVAL);
    /* version 2 */
    assert_int_equal(
        parse_one((const unsigned char *)"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01", 12),
        CK_EINVAL);
    /* a PING of 5 bytes, a RST_STREAM of 4 */
    assert_int_equal(parse_one((const unsigned char *)"\x80\x03\x00\x06\x00\x00\x00\x05"
                                                      "\x00\x00\x00\x01\x00",
                               13),
                     CK_EINVAL);
    assert_int_equal(
        parse_one((const unsigned char *)"\x80\x03\x00\x03\x00\x00\x00\x04\x00\x00\x00\x01", 12),
        CK_EINVAL);
    /* DATA on stream 0 */
    assert_int_equal(parse_one((const unsigned char *)"\x00\x00\x00\x00\x00\x00\x00\x00", 8),
                     CK_EINVAL);

    static unsigned char plain[200 * 1024], frame[64 * 1024];
    size_t n;
    /* a block inflating past CK_SPDY_HEADERS_MAX: one pair with a 150 KiB value */
    memset(plain, 0, sizeof(plain));
    memcpy(plain, "\x00\x00\x00\x01\x00\x00\x00\x01x\x00\x02\x58\x00", 13);
    n = syn_with_block(frame, sizeof(frame), plain, 13 + 150 * 1024);
    assert_true(n < sizeof(frame));
    assert_int_equal(parse_one(frame, n), CK_EINVAL);
    /* more pairs than CK_SPDY_HEADER_PAIRS */
    size_t len = 4;
    memcpy(plain, "\x00\x00\x00\x41", 4); /* 65 */
    for (int i = 0; i < 65; i++) {
        memcpy(plain + len,
               "\x00\x00\x00\x01"
               "a"
               "\x00\x00\x00\x00",
               9);
        len += 9;
    }
    n = syn_with_block(frame, sizeof(frame), plain, len);
    assert_int_equal(parse_one(frame, n), CK_EINVAL);
    /* an uppercase name; a length past the block's end; bytes left over; then well formed */
    static const struct {
        const char *plain;
        size_t len;
        int want;
    } blocks[] = {
        {"\x00\x00\x00\x01\x00\x00\x00\x01P\x00\x00\x00\x00", 13, CK_EINVAL},
        {"\x00\x00\x00\x01\x00\x00\x00\x09p\x00\x00\x00\x00", 13, CK_EINVAL},
        {"\x00\x00\x00\x01\x00\x00\x00\x01p\x00\x00\x00\x00z", 14, CK_EINVAL},
        {"\x00\x00\x00\x01\x00\x00\x00\x01p\x00\x00\x00\x00", 13, 1},
    };
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
        n = syn_with_block(frame, sizeof(frame), (const unsigned char *)blocks[i].plain,
                           blocks[i].len);
        assert_int_equal(parse_one(frame, n), blocks[i].want);
    }
    /* a block that is not zlib at all */
    memcpy(frame + 18, "garbage!", 8);
    frame[7] = 18;
    assert_int_equal(parse_one(frame, 26), CK_EINVAL);
}

static void test_feed_takes_no_more_than_a_frame_and_slack(void **state)
{
    (void)state;
    struct ck__spdy s;
    struct ck__spdy_frame f;
    assert_int_equal(ck__spdy_init(&s), 0);
    size_t big = CK_SPDY_FRAME_MAX + 8 + CK_SPDY_RX_SLACK + 100;
    unsigned char *p = calloc(1, big);
    /* one DATA frame of CK_SPDY_FRAME_MAX on stream 1, then zeros (more DATA headers) */
    p[3] = 1;
    p[5] = (unsigned char)(CK_SPDY_FRAME_MAX >> 16);
    p[6] = (unsigned char)(CK_SPDY_FRAME_MAX >> 8);
    p[7] = (unsigned char)CK_SPDY_FRAME_MAX;
    size_t took = ck__spdy_feed(&s, p, big);
    assert_true(took < big);
    assert_int_equal(ck__spdy_next(&s, &f), 1);
    assert_int_equal(f.len, CK_SPDY_FRAME_MAX);
    /* the frame's room is free again at the next call */
    assert_int_equal(ck__spdy_next(&s, &f), CK_EINVAL); /* zeros: DATA on stream 0 */
    ck__spdy_release(&s);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary_is_the_drafts),
        cmocka_unit_test(test_kubectls_syn_streams_decode),
        cmocka_unit_test(test_fixed_frames_have_the_drafts_bytes),
        cmocka_unit_test(test_settings_and_window_update_parse),
        cmocka_unit_test(test_header_blocks_round_trip_across_frames),
        cmocka_unit_test(test_bounds_end_the_session),
        cmocka_unit_test(test_feed_takes_no_more_than_a_frame_and_slack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
