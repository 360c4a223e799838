/*
 * protowire.c - the protobuf wire format: varints, tags, length-delimited
 * fields and fixed 32/64-bit values, written into a struct ck__buf and read
 * from untrusted bytes with every length checked against what is left.
 *
 * Two encoders sit on it: Kubernetes' messages (lib/api/protobuf.c, driven by
 * data) and etcd's gRPC requests (lib/store/etcd.c). Nothing here knows a
 * message.
 */
#include <string.h>

#include "ckube/internal/util.h"

void ck__pb_put_varint(struct ck__buf *b, uint64_t v)
{
    unsigned char bytes[10];
    size_t n = 0;
    while (v >= 0x80) {
        bytes[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    bytes[n++] = (unsigned char)v;
    ck__buf_add(b, bytes, n);
}

void ck__pb_put_tag(struct ck__buf *b, uint32_t number, enum ck__pb_wire wire)
{
    ck__pb_put_varint(b, ((uint64_t)number << 3) | (uint64_t)wire);
}

void ck__pb_put_fixed(struct ck__buf *b, uint64_t v, size_t n)
{
    unsigned char bytes[8];
    for (size_t i = 0; i < n; i++)
        bytes[i] = (unsigned char)(v >> (8 * i));
    ck__buf_add(b, bytes, n);
}

void ck__pb_put_bytes(struct ck__buf *b, uint32_t number, const void *data, size_t len)
{
    ck__pb_put_tag(b, number, CK__PB_LEN);
    ck__pb_put_varint(b, len);
    ck__buf_add(b, data, len);
}

void ck__pb_put_uint(struct ck__buf *b, uint32_t number, uint64_t v)
{
    if (v == 0)
        return;
    ck__pb_put_tag(b, number, CK__PB_VARINT);
    ck__pb_put_varint(b, v);
}

size_t ck__pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/*
 * The content is written first and moved up by the size of its length once
 * that is known: one buffer, no size pass.
 */
size_t ck__pb_begin_len(struct ck__buf *b, uint32_t number)
{
    ck__pb_put_tag(b, number, CK__PB_LEN);
    return b->len;
}

void ck__pb_end_len(struct ck__buf *b, size_t start)
{
    if (b->err)
        return;
    size_t content = b->len - start;
    size_t n = ck__pb_varint_size(content);
    unsigned char pad[10] = {0};
    if (ck__buf_add(b, pad, n) < 0)
        return;
    memmove(b->p + start + n, b->p + start, content);
    uint64_t v = content;
    for (size_t i = 0; i < n; i++, v >>= 7)
        b->p[start + i] = (char)((v & 0x7f) | (i + 1 < n ? 0x80 : 0));
}

bool ck__pb_get_varint(struct ck__pb_reader *r, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        unsigned char byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false; /* truncated, or longer than ten bytes */
}

bool ck__pb_get_fixed(struct ck__pb_reader *r, size_t n, uint64_t *ret)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    *ret = v;
    return true;
}

bool ck__pb_get_len(struct ck__pb_reader *r, struct ck__pb_reader *ret)
{
    uint64_t n = 0;
    if (!ck__pb_get_varint(r, &n) || n > (uint64_t)(r->end - r->p))
        return false;
    ret->p = r->p;
    ret->end = r->p + n;
    r->p += n;
    return true;
}

bool ck__pb_skip(struct ck__pb_reader *r, unsigned wire)
{
    uint64_t v;
    struct ck__pb_reader sub;
    switch (wire) {
    case CK__PB_VARINT:
        return ck__pb_get_varint(r, &v);
    case CK__PB_FIXED64:
        return ck__pb_get_fixed(r, 8, &v);
    case CK__PB_LEN:
        return ck__pb_get_len(r, &sub);
    case CK__PB_FIXED32:
        return ck__pb_get_fixed(r, 4, &v);
    default:
        return false;
    }
}

int ck__pb_next(struct ck__pb_reader *r, uint32_t *number, unsigned *wire)
{
    if (r->p >= r->end)
        return 0;
    uint64_t tag;
    if (!ck__pb_get_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
        return -1;
    *number = (uint32_t)(tag >> 3);
    *wire = (unsigned)(tag & 7);
    return 1;
}
