/*
 * ckube/internal/exec_stream.h - the framing of an exec session between the API server
 * and the node agent, shared by both (header only, no library of its own).
 *
 * The API server relays kubectl's WebSocket messages (v4/v5.channel.k8s.io: one channel
 * byte, then the data) to the agent over two long HTTP bodies, the agent's answer to the
 * exec request (stdout, stderr, the error channel) and the API server's upload of stdin
 * and resize messages. Inside those bodies each message is a record:
 *
 *   channel (1 byte) | payload length (4 bytes, big-endian) | payload
 *
 * Channels are WebSocket's: 0 stdin, 1 stdout, 2 stderr, 3 error (a Status), 4 resize
 * (JSON {"Width","Height"}), 255 close (the payload is the channel closed). A payload
 * is at most CK_EXEC_FRAME_MAX bytes; a longer length is an error.
 */
#ifndef CKUBE_INTERNAL_EXEC_STREAM_H
#define CKUBE_INTERNAL_EXEC_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    CK_EXEC_STDIN = 0,
    CK_EXEC_STDOUT = 1,
    CK_EXEC_STDERR = 2,
    CK_EXEC_ERROR = 3,
    CK_EXEC_RESIZE = 4,
    CK_EXEC_CLOSE = 255,
};

#define CK_EXEC_FRAME_HEADER 5
#define CK_EXEC_FRAME_MAX    (64 * 1024)

/* Writes the header of a record of len bytes on channel into out[CK_EXEC_FRAME_HEADER]. */
static inline void ck__exec_frame_header(unsigned char *out, unsigned channel, size_t len)
{
    out[0] = (unsigned char)channel;
    out[1] = (unsigned char)(len >> 24);
    out[2] = (unsigned char)(len >> 16);
    out[3] = (unsigned char)(len >> 8);
    out[4] = (unsigned char)len;
}

/*
 * Finds the first whole record in buf[0..len): 1 with its channel, payload and the bytes
 * it takes (header included) in *used; 0 when more bytes are needed; -1 when the length
 * is over CK_EXEC_FRAME_MAX (the stream is broken).
 */
static inline int ck__exec_frame_next(const unsigned char *buf, size_t len, unsigned *channel,
                                      const unsigned char **payload, size_t *payload_len,
                                      size_t *used)
{
    if (len < CK_EXEC_FRAME_HEADER)
        return 0;
    uint32_t n =
        (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | (uint32_t)buf[4];
    if (n > CK_EXEC_FRAME_MAX)
        return -1;
    if (len - CK_EXEC_FRAME_HEADER < n)
        return 0;
    *channel = buf[0];
    *payload = buf + CK_EXEC_FRAME_HEADER;
    *payload_len = n;
    *used = CK_EXEC_FRAME_HEADER + n;
    return 1;
}

/*
 * A buffer that collects a byte stream and yields its records: append what arrived,
 * then take records with ck__exec_frames_next until it answers 0, then compact.
 */
struct ck__exec_frames {
    unsigned char buf[2 * (CK_EXEC_FRAME_MAX + CK_EXEC_FRAME_HEADER)];
    size_t len, pos; /* bytes held; the start of the next record */
};

/* Appends up to n bytes of data; returns how many fit (compacting first). */
static inline size_t ck__exec_frames_append(struct ck__exec_frames *f, const void *data, size_t n)
{
    if (f->pos > 0) {
        memmove(f->buf, f->buf + f->pos, f->len - f->pos);
        f->len -= f->pos;
        f->pos = 0;
    }
    size_t room = sizeof(f->buf) - f->len;
    if (n > room)
        n = room;
    memcpy(f->buf + f->len, data, n);
    f->len += n;
    return n;
}

/* The next whole record, as ck__exec_frame_next. */
static inline int ck__exec_frames_next(struct ck__exec_frames *f, unsigned *channel,
                                       const unsigned char **payload, size_t *payload_len)
{
    size_t used = 0;
    int r =
        ck__exec_frame_next(f->buf + f->pos, f->len - f->pos, channel, payload, payload_len, &used);
    if (r > 0)
        f->pos += used;
    return r;
}

#endif /* CKUBE_INTERNAL_EXEC_STREAM_H */
