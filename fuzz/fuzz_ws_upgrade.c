/*
 * fuzz_ws_upgrade.c - libFuzzer target for the agent's check of a streaming server's
 * answer to its WebSocket upgrade (ck__ws_upgrade_answer in lib/agent/cri_stream.c), the
 * only bytes of HTTP the agent reads by itself. The input is the answer as it arrived;
 * every prefix of it is checked as the bytes come in. A complete answer must say where
 * its headers end inside the bytes given, right after a blank line; a refusal's message
 * must be a printable string that fits its buffer.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    char *buf = malloc(size ? size : 1); /* exactly the bytes: ASan sees any overread */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    for (size_t n = 0; n <= size; n++) {
        size_t len = 0;
        char msg[256];
        memset(msg, 'x', sizeof(msg));
        int r = ck__ws_upgrade_answer(buf, n, &len, msg, sizeof(msg));
        if (r == 1) {
            if (len < 4 || len > n || memcmp(buf + len - 4, "\r\n\r\n", 4) != 0 ||
                memcmp(buf, "HTTP/1.1 101", 12) != 0)
                abort();
            break;
        }
        if (r < 0) {
            if (!memchr(msg, '\0', sizeof(msg)))
                abort();
            for (const char *p = msg; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                    abort();
            break;
        }
        if (r != 0)
            abort();
    }
    free(buf);
    return 0;
}
