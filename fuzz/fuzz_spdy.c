/*
 * fuzz_spdy.c - libFuzzer target for the SPDY/3.1 framing of port-forward
 * (lib/apiserver/spdy.c): the bytes kubectl would send, fed in pieces whose size the first
 * byte sets, read frame by frame as the API server's relay reads them. Each frame read
 * must lie inside the bytes fed, a DATA frame's payload at most CK_SPDY_FRAME_MAX, a
 * header block at most CK_SPDY_HEADER_PAIRS NUL-terminated pairs with lowercase names;
 * after an error nothing more is read. Every SYN_STREAM is answered with a SYN_REPLY as
 * the relay does (the other compression context), which a second session must read back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frame(const struct ck__spdy_frame *f, struct ck__spdy *peer, struct ck__buf *out)
{
    if (f->len > CK_SPDY_FRAME_MAX || f->n_headers > CK_SPDY_HEADER_PAIRS)
        abort();
    for (size_t i = 0; i < f->n_headers; i++) {
        const char *n = f->headers[i].name;
        if (!*n || strlen(f->headers[i].value) > f->headers[i].value_len)
            abort();
        for (; *n; n++)
            if (*n >= 'A' && *n <= 'Z')
                abort();
    }
    if (f->control && f->type == CK_SPDY_SYN_STREAM) {
        const char *pairs[] = {"port", ck__spdy_header(f, "port") ?: ""};
        if (ck__spdy_put_headers(peer, out, CK_SPDY_SYN_REPLY, 0, f->stream, pairs, 1) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 64 * 1024)
        return 0;
    size_t piece = (size_t)data[0] + 1;
    data++, size--;
    struct ck__spdy s, replies, back;
    if (ck__spdy_init(&s) != 0)
        return 0;
    if (ck__spdy_init(&replies) != 0 || ck__spdy_init(&back) != 0)
        abort();
    struct ck__buf out = {0};
    int r = 0;
    size_t sent = 0;
    for (size_t off = 0; off < size && r >= 0;) {
        size_t n = size - off < piece ? size - off : piece;
        size_t took = ck__spdy_feed(&s, data + off, n);
        off += took;
        struct ck__spdy_frame f;
        while ((r = ck__spdy_next(&s, &f)) > 0) {
            if (f.data &&
                (f.data < (const unsigned char *)s.rx.p ||
                 f.data + (f.control ? 0 : f.len) > (const unsigned char *)s.rx.p + s.rx.len))
                abort();
            check_frame(&f, &replies, &out);
        }
        if (r == 0 && took == 0)
            abort(); /* a feed that takes nothing must come with a frame or an error */
    }
    /* our replies read back, in order, with the pair we put in */
    ck__spdy_feed(&back, out.p, out.len);
    struct ck__spdy_frame f;
    while ((r = ck__spdy_next(&back, &f)) > 0) {
        if (f.type != CK_SPDY_SYN_REPLY || f.n_headers != 1 || !ck__spdy_header(&f, "port"))
            abort();
        sent++;
    }
    if (r != 0)
        abort();
    (void)sent;
    ck__buf_release(&out);
    ck__spdy_release(&s);
    ck__spdy_release(&replies);
    ck__spdy_release(&back);
    return 0;
}
