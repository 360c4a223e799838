/*
 * spdy.c - the SPDY/3.1 framing kubectl's port-forward speaks (its own, or tunnelled in
 * WebSocket binary messages): frames in and out, header blocks through zlib.
 *
 * The protocol is the SPDY/3.1 draft (frames: 8-byte header, control bit, version 3,
 * type, flags, 24-bit length; header blocks: a 32-bit count of name/value pairs, each a
 * 32-bit length and bytes, compressed as one zlib stream per direction per session,
 * primed with the draft's dictionary and flushed with Z_SYNC_FLUSH after each block).
 * kubectl's side is moby/spdystream over golang's SPDY framer: it opens streams
 * (SYN_STREAM), sends DATA, ends its half with FIN, cancels with RST_STREAM, pings every
 * 10 s (PING, answered by the same frame) and ends with GOAWAY. It neither sends nor
 * reads SETTINGS or WINDOW_UPDATE; they are parsed and left to the caller.
 *
 * Bounds: a frame's payload above CK_SPDY_FRAME_MAX, a header block that inflates past
 * CK_SPDY_HEADERS_MAX or holds more than CK_SPDY_HEADER_PAIRS pairs, a wrong version or
 * a malformed block end the session (ck__spdy_next returns CK_EINVAL; the caller sends
 * GOAWAY and closes). Nothing is allocated per frame beyond the session's buffers.
 *
 * Threading: a session belongs to one thread.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "internal.h"

/* The SPDY/3 header dictionary: length-prefixed words, then plain text. */
static const char *const dict_words[] = {"options",
                                         "head",
                                         "post",
                                         "put",
                                         "delete",
                                         "trace",
                                         "accept",
                                         "accept-charset",
                                         "accept-encoding",
                                         "accept-language",
                                         "accept-ranges",
                                         "age",
                                         "allow",
                                         "authorization",
                                         "cache-control",
                                         "connection",
                                         "content-base",
                                         "content-encoding",
                                         "content-language",
                                         "content-length",
                                         "content-location",
                                         "content-md5",
                                         "content-range",
                                         "content-type",
                                         "date",
                                         "etag",
                                         "expect",
                                         "expires",
                                         "from",
                                         "host",
                                         "if-match",
                                         "if-modified-since",
                                         "if-none-match",
                                         "if-range",
                                         "if-unmodified-since",
                                         "last-modified",
                                         "location",
                                         "max-forwards",
                                         "pragma",
                                         "proxy-authenticate",
                                         "proxy-authorization",
                                         "range",
                                         "referer",
                                         "retry-after",
                                         "server",
                                         "te",
                                         "trailer",
                                         "transfer-encoding",
                                         "upgrade",
                                         "user-agent",
                                         "vary",
                                         "via",
                                         "warning",
                                         "www-authenticate",
                                         "method",
                                         "get",
                                         "status",
                                         "200 OK",
                                         "version",
                                         "HTTP/1.1",
                                         "url",
                                         "public",
                                         "set-cookie",
                                         "keep-alive",
                                         "origin"};
static const char dict_tail[] =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504"
    "505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, "
    "Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

size_t ck__spdy_dictionary(unsigned char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(dict_words) / sizeof(dict_words[0]); i++) {
        size_t len = strlen(dict_words[i]);
        if (out && n + 4 + len <= size) {
            uint32_t be = htonl((uint32_t)len);
            memcpy(out + n, &be, 4);
            memcpy(out + n + 4, dict_words[i], len);
        }
        n += 4 + len;
    }
    if (out && n + sizeof(dict_tail) - 1 <= size)
        memcpy(out + n, dict_tail, sizeof(dict_tail) - 1);
    return n + sizeof(dict_tail) - 1;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

int ck__spdy_init(struct ck__spdy *s)
{
    memset(s, 0, sizeof(*s));
    s->dict_len = ck__spdy_dictionary(s->dict, sizeof(s->dict));
    if (inflateInit(&s->in) != Z_OK)
        return CK_ENOMEM;
    if (deflateInit(&s->out, Z_DEFAULT_COMPRESSION) != Z_OK ||
        deflateSetDictionary(&s->out, s->dict, (uInt)s->dict_len) != Z_OK) {
        inflateEnd(&s->in);
        return CK_ENOMEM;
    }
    s->rx.max = CK_SPDY_FRAME_MAX + 8 + CK_SPDY_RX_SLACK;
    return 0;
}

void ck__spdy_release(struct ck__spdy *s)
{
    inflateEnd(&s->in);
    deflateEnd(&s->out);
    ck__buf_release(&s->rx);
    free(s->block);
    free(s->text);
    s->block = NULL;
    s->text = NULL;
}

size_t ck__spdy_feed(struct ck__spdy *s, const void *data, size_t n)
{
    if (s->consume) {
        ck__buf_consume(&s->rx, s->consume);
        s->consume = 0;
    }
    size_t room = s->rx.max - s->rx.len;
    size_t k = n < room ? n : room;
    if (k && ck__buf_add(&s->rx, data, k) < 0)
        return 0;
    return k;
}

/* Inflates a frame's header block into s->block: its length, or CK_EINVAL. */
static int inflate_block(struct ck__spdy *s, const unsigned char *p, size_t n, size_t *ret_len)
{
    if (!s->block && !(s->block = malloc(CK_SPDY_HEADERS_MAX)))
        return CK_ENOMEM;
    s->in.next_in = (Bytef *)p;
    s->in.avail_in = (uInt)n;
    s->in.next_out = s->block;
    s->in.avail_out = CK_SPDY_HEADERS_MAX;
    while (s->in.avail_in > 0) {
        int z = inflate(&s->in, Z_SYNC_FLUSH);
        if (z == Z_NEED_DICT) {
            if (inflateSetDictionary(&s->in, s->dict, (uInt)s->dict_len) != Z_OK)
                return CK_EINVAL;
            continue;
        }
        if (z == Z_BUF_ERROR && s->in.avail_out == 0)
            return CK_EINVAL; /* past CK_SPDY_HEADERS_MAX */
        if (z != Z_OK)
            return CK_EINVAL; /* a broken stream, or its end (SPDY never ends it) */
        if (s->in.avail_out == 0 && s->in.avail_in > 0)
            return CK_EINVAL;
    }
    /* what zlib still holds back without more input */
    for (;;) {
        if (s->in.avail_out == 0)
            return CK_EINVAL;
        uInt before = s->in.avail_out;
        int z = inflate(&s->in, Z_SYNC_FLUSH);
        if (z == Z_BUF_ERROR || s->in.avail_out == before)
            break;
        if (z != Z_OK)
            return CK_EINVAL;
    }
    *ret_len = CK_SPDY_HEADERS_MAX - s->in.avail_out;
    return 0;
}

/* Splits an inflated block into f's pairs (NUL-terminated copies in s->text). */
static int parse_block(struct ck__spdy *s, size_t len, struct ck__spdy_frame *f)
{
    const unsigned char *p = s->block, *end = s->block + len;
    if (len < 4)
        return CK_EINVAL;
    uint32_t count = get32(p);
    p += 4;
    if (count > CK_SPDY_HEADER_PAIRS)
        return CK_EINVAL;
    if (!s->text && !(s->text = malloc(CK_SPDY_HEADERS_MAX + 2 * CK_SPDY_HEADER_PAIRS)))
        return CK_ENOMEM;
    char *t = s->text;
    for (uint32_t i = 0; i < count; i++) {
        const char *field[2];
        size_t flen[2];
        for (int k = 0; k < 2; k++) {
            if (end - p < 4)
                return CK_EINVAL;
            uint32_t n = get32(p);
            p += 4;
            if ((size_t)(end - p) < n || (k == 0 && n == 0))
                return CK_EINVAL;
            memcpy(t, p, n);
            t[n] = '\0';
            field[k] = t;
            flen[k] = n;
            t += n + 1;
            p += n;
        }
        for (size_t j = 0; j < flen[0]; j++)
            if (field[0][j] >= 'A' && field[0][j] <= 'Z')
                return CK_EINVAL; /* SPDY/3: names are lowercase */
        f->headers[i].name = field[0];
        f->headers[i].value = field[1];
        f->headers[i].value_len = flen[1];
    }
    if (p != end)
        return CK_EINVAL;
    f->n_headers = count;
    return 0;
}

int ck__spdy_next(struct ck__spdy *s, struct ck__spdy_frame *f)
{
    if (s->consume) {
        ck__buf_consume(&s->rx, s->consume);
        s->consume = 0;
    }
    const unsigned char *p = (const unsigned char *)s->rx.p;
    if (s->rx.len < 8)
        return 0;
    uint32_t len = get32(p + 4) & 0xffffff;
    if (len > CK_SPDY_FRAME_MAX)
        return CK_EINVAL;
    if (s->rx.len < 8 + (size_t)len)
        return 0;
    memset(f, 0, sizeof(*f));
    const unsigned char *d = p + 8;
    f->flags = p[4];
    f->len = len;
    s->consume = 8 + (size_t)len;
    if (!(p[0] & 0x80)) { /* data */
        f->stream = get32(p) & 0x7fffffff;
        f->data = d;
        return f->stream ? 1 : CK_EINVAL;
    }
    f->control = true;
    if (((p[0] & 0x7f) << 8 | p[1]) != 3)
        return CK_EINVAL;
    f->type = (unsigned)(p[2] << 8 | p[3]);
    size_t need = 0, skip = 0;
    switch (f->type) {
    case CK_SPDY_SYN_STREAM:
        need = 10;
        skip = 10;
        break;
    case CK_SPDY_SYN_REPLY:
    case CK_SPDY_HEADERS:
        need = 4;
        skip = 4;
        break;
    case CK_SPDY_RST_STREAM:
    case CK_SPDY_GOAWAY:
    case CK_SPDY_WINDOW_UPDATE:
        need = 8;
        break;
    case CK_SPDY_PING:
        need = 4;
        break;
    case CK_SPDY_SETTINGS:
        if (len < 4 || (size_t)len != 4 + 8 * (size_t)get32(d))
            return CK_EINVAL;
        f->value = get32(d); /* the number of entries */
        f->data = d + 4;
        return 1;
    default: /* unknown types are ignored (SPDY/3 2.2.1) */
        f->data = d;
        return 1;
    }
    if (len < need || (skip == 0 && len != need))
        return CK_EINVAL;
    f->stream = get32(d) & 0x7fffffff;
    if (f->type == CK_SPDY_PING) {
        f->value = get32(d);
        f->stream = 0;
        return 1;
    }
    if (f->type == CK_SPDY_SYN_STREAM) {
        f->assoc = get32(d + 4) & 0x7fffffff;
        f->priority = d[8] >> 5;
    } else if (!skip) {
        f->value = get32(d + 4) & (f->type == CK_SPDY_WINDOW_UPDATE ? 0x7fffffff : 0xffffffff);
    }
    if (!skip)
        return 1;
    if (f->stream == 0)
        return CK_EINVAL;
    size_t block_len;
    int r = inflate_block(s, d + skip, len - skip, &block_len);
    if (r < 0)
        return r;
    r = parse_block(s, block_len, f);
    return r < 0 ? r : 1;
}

const char *ck__spdy_header(const struct ck__spdy_frame *f, const char *name)
{
    for (size_t i = 0; i < f->n_headers; i++)
        if (strcmp(f->headers[i].name, name) == 0)
            return f->headers[i].value;
    return NULL;
}

/* ---- writing ---- */

static int put_control(struct ck__buf *b, unsigned type, unsigned flags, size_t len)
{
    unsigned char h[8] = {0x80, 3, (unsigned char)(type >> 8), (unsigned char)type};
    put32(h + 4, (uint32_t)len);
    h[4] = (unsigned char)flags;
    return ck__buf_add(b, h, sizeof(h));
}

int ck__spdy_put_data(struct ck__buf *b, uint32_t stream, unsigned flags, const void *data,
                      size_t n)
{
    if (n > CK_SPDY_FRAME_MAX)
        return CK_EINVAL;
    unsigned char h[8];
    put32(h, stream & 0x7fffffff);
    put32(h + 4, (uint32_t)n);
    h[4] = (unsigned char)flags;
    ck__buf_add(b, h, sizeof(h));
    return ck__buf_add(b, data, n);
}

int ck__spdy_put_headers(struct ck__spdy *s, struct ck__buf *b, unsigned type, unsigned flags,
                         uint32_t stream, const char *const *pairs, size_t n_pairs)
{
    if (type != CK_SPDY_SYN_STREAM && type != CK_SPDY_SYN_REPLY && type != CK_SPDY_HEADERS)
        return CK_EINVAL;
    /* the plain block */
    struct ck__buf plain = {.max = CK_SPDY_HEADERS_MAX};
    unsigned char n4[4];
    put32(n4, (uint32_t)n_pairs);
    ck__buf_add(&plain, n4, 4);
    for (size_t i = 0; i < 2 * n_pairs; i++) {
        put32(n4, (uint32_t)strlen(pairs[i]));
        ck__buf_add(&plain, n4, 4);
        ck__buf_adds(&plain, pairs[i]);
    }
    if (plain.err) {
        int e = plain.err;
        ck__buf_release(&plain);
        return e;
    }
    /* compressed, flushed to a byte boundary */
    unsigned char z[4096];
    struct ck__buf packed = {.max = CK_SPDY_FRAME_MAX};
    s->out.next_in = (Bytef *)plain.p;
    s->out.avail_in = (uInt)plain.len;
    int zr;
    do {
        s->out.next_out = z;
        s->out.avail_out = sizeof(z);
        zr = deflate(&s->out, Z_SYNC_FLUSH);
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            break;
        ck__buf_add(&packed, z, sizeof(z) - s->out.avail_out);
    } while (s->out.avail_out == 0);
    ck__buf_release(&plain);
    int r = zr == Z_OK || zr == Z_BUF_ERROR ? packed.err : CK_EIO;
    if (r == 0) {
        size_t head = type == CK_SPDY_SYN_STREAM ? 10 : 4;
        unsigned char fixed[10] = {0};
        put32(fixed, stream & 0x7fffffff);
        put_control(b, type, flags, head + packed.len);
        ck__buf_add(b, fixed, head);
        r = ck__buf_add(b, packed.p ? packed.p : "", packed.len);
    }
    ck__buf_release(&packed);
    return r;
}

/* A control frame of two 32-bit words, the first a stream id. */
static int put_two(struct ck__buf *b, unsigned type, uint32_t stream, uint32_t value)
{
    unsigned char d[8];
    put32(d, stream & 0x7fffffff);
    put32(d + 4, value);
    put_control(b, type, 0, 8);
    return ck__buf_add(b, d, 8);
}

int ck__spdy_put_rst_stream(struct ck__buf *b, uint32_t stream, uint32_t status)
{
    return put_two(b, CK_SPDY_RST_STREAM, stream, status);
}

int ck__spdy_put_ping(struct ck__buf *b, uint32_t id)
{
    unsigned char d[4];
    put32(d, id);
    put_control(b, CK_SPDY_PING, 0, 4);
    return ck__buf_add(b, d, 4);
}

int ck__spdy_put_goaway(struct ck__buf *b, uint32_t last_good, uint32_t status)
{
    return put_two(b, CK_SPDY_GOAWAY, last_good, status);
}
