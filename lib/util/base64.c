/*
 * base64.c - RFC 4648 base64, as JSON carries protobuf's bytes (a Secret's
 * data) and kubeconfig's *-data fields use it.
 *
 * Threading: pure functions.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/util.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ck_base64_encode(const void *data, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* The 6-bit value of a character of either alphabet, or -1. */
static int sextet(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-') /* standard, URL-safe */
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

char *ck_base64_decode(const char *text, size_t *ret_len)
{
    size_t n = strlen(text);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out)
        return NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && text[i] != '='; i++) {
        if (text[i] == '\n' || text[i] == '\r')
            continue;
        int v = sextet(text[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    if (ret_len)
        *ret_len = o;
    return out;
}
