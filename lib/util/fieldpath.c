/*
 * fieldpath.c - field paths ("spec.containers[0].image") as the schema walks build
 * them, one step at a time at every value they visit, for the error messages they
 * may write: appended by copying, where snprintf's format parsing was most of a
 * step's cost.
 *
 * Threading: pure functions over the caller's buffer.
 */
#include <string.h>

#include "ckube/internal/util.h"

/* Appends what of s fits before the terminator; returns the new length. */
static size_t put(char *buf, size_t size, size_t len, const char *s)
{
    if (!s || len + 1 >= size)
        return len;
    size_t n = strlen(s), room = size - 1 - len;
    if (n > room)
        n = room;
    memcpy(buf + len, s, n);
    len += n;
    buf[len] = '\0';
    return len;
}

size_t ck__path_push(char *buf, size_t size, size_t len, const char *before, const char *text,
                     const char *after)
{
    if (size == 0)
        return 0;
    if (len >= size)
        len = size - 1;
    buf[len] = '\0';
    len = put(buf, size, len, before);
    len = put(buf, size, len, text);
    return put(buf, size, len, after);
}

size_t ck__path_push_index(char *buf, size_t size, size_t len, size_t i)
{
    char digits[24];
    size_t at = sizeof(digits) - 1;
    digits[at] = '\0';
    do {
        digits[--at] = (char)('0' + i % 10);
        i /= 10;
    } while (i && at > 0);
    return ck__path_push(buf, size, len, "[", digits + at, "]");
}
