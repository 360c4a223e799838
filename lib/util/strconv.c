/*
 * strconv.c - the two pieces of Go's strconv that Kubernetes' wire behaviour shows:
 * ParseBool (query parameters such as ?watch=True, feature gate values) and the %q
 * quoting of values in messages (field errors, feature gate and version errors).
 *
 * Threading: pure functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

bool ck__parse_bool(const char *s, bool *ret)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    if (!s)
        return false;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strcmp(s, t[i]) == 0) {
            *ret = true;
            return true;
        }
        if (strcmp(s, f[i]) == 0) {
            *ret = false;
            return true;
        }
    }
    return false;
}

/* The escaped form of one byte into out (at least 5 bytes); returns its length. */
static size_t escape(unsigned char c, char *out)
{
    if (c == '"' || c == '\\') {
        out[0] = '\\';
        out[1] = (char)c;
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        snprintf(out, 5, "\\x%02x", c);
        return 4;
    }
    out[0] = (char)c;
    return 1;
}

size_t ck__quote(const char *s, char *buf, size_t size)
{
    size_t need = 2, o = 0;
    bool fits = size >= 3;
    if (fits)
        buf[o++] = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char piece[5];
        size_t n = escape(*c, piece);
        need += n;
        if (fits && o + n + 2 <= size) { /* room for it, the closing quote and the NUL */
            memcpy(buf + o, piece, n);
            o += n;
        } else {
            fits = false;
        }
    }
    if (size >= 3) {
        buf[o++] = '"';
        buf[o] = '\0';
    } else if (size) {
        buf[0] = '\0';
    }
    return need;
}

char *ck__quote_dup(const char *s)
{
    size_t n = ck__quote(s, NULL, 0) + 1;
    char *out = ck__malloc(n);
    if (out)
        ck__quote(s, out, n);
    return out;
}
