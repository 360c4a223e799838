/*
 * fuzz_exec_stream.c - the record decoding of exec sessions (ckube/internal/exec_stream.h),
 * which both the agent (the API server's upload) and the API server (the agent's answer)
 * run on bytes from the other side. The first input byte sets the size of the pieces the
 * rest arrives in; every record taken must lie inside the bytes given, be at most
 * CK_EXEC_FRAME_MAX long, and the records and the bytes left must add up to the input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/exec_stream.h"

static struct ck__exec_frames frames;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] * 97 + 1;
    data++;
    size--;
    memset(&frames, 0, sizeof(frames));
    size_t fed = 0, consumed = 0;
    bool broken = false;
    while (fed < size && !broken) {
        size_t n = size - fed < piece ? size - fed : piece;
        size_t took = ck__exec_frames_append(&frames, data + fed, n);
        if (took == 0)
            abort(); /* whole records are always taken, so there is room */
        fed += took;
        unsigned ch;
        const unsigned char *p;
        size_t len;
        int r;
        while ((r = ck__exec_frames_next(&frames, &ch, &p, &len)) > 0) {
            if (len > CK_EXEC_FRAME_MAX || ch > 255 || p < frames.buf ||
                p + len > frames.buf + frames.len)
                abort();
            /* the record is the input's bytes at the same place */
            if (memcmp(p, data + consumed + CK_EXEC_FRAME_HEADER, len) != 0 || data[consumed] != ch)
                abort();
            consumed += CK_EXEC_FRAME_HEADER + len;
        }
        broken = r < 0;
        if (frames.pos > frames.len || consumed + (frames.len - frames.pos) != fed)
            abort();
    }
    return 0;
}
