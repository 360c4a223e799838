/*
 * buf.c - the growable byte buffer every library uses (struct ck__buf).
 *
 * One NUL-terminated byte string that doubles as it grows (first 256 bytes), with an
 * optional cap fixed when it is created: a buffer fed by the outside world (an HTTP
 * body, a watch stream) says how much it may hold, so a huge answer is an error, not
 * an exhausted heap (curl's dynbuf does the same with its `toobig`).
 *
 * Failure is sticky: the first append that cannot grow records its error in b->err
 * and every later append does nothing, so a renderer may append twenty pieces and
 * check once (git's strbuf dies instead; we cannot). ck__buf_take() hands the string
 * out, or NULL when something failed.
 *
 * Also here: a libcurl write callback that appends, and a line splitter for streams
 * of newline-separated JSON (etcd's and the API server's watches).
 *
 * Threading: a buffer belongs to one thread at a time; the functions keep no state.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

#define FIRST_CAP 256

/* Makes room for n more bytes and the NUL. */
static int grow(struct ck__buf *b, size_t n)
{
    if (b->err)
        return b->err;
    if (n > SIZE_MAX / 2 - b->len || (b->max && b->len + n > b->max))
        return b->err = CK__E2BIG;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : FIRST_CAP;
    while (cap < need)
        cap *= 2;
    char *p = ck__realloc(b->p, cap);
    if (!p)
        return b->err = CK_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int ck__buf_add(struct ck__buf *b, const void *data, size_t n)
{
    int r = grow(b, n);
    if (r < 0)
        return r;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int ck__buf_adds(struct ck__buf *b, const char *s)
{
    return ck__buf_add(b, s, strlen(s));
}

int ck__buf_vprintf(struct ck__buf *b, const char *fmt, va_list ap)
{
    if (b->err)
        return b->err;
    va_list again;
    va_copy(again, ap);
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    if (n >= 0 && (size_t)n >= room) {
        if (grow(b, (size_t)n) == 0)
            n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
        else
            n = -1;
    } else if (n >= 0 && b->max && b->len + (size_t)n > b->max) {
        b->p[b->len] = '\0';
        b->err = CK__E2BIG;
        n = -1;
    }
    va_end(again);
    if (n < 0) {
        if (b->p)
            b->p[b->len] = '\0';
        return b->err ? b->err : (b->err = CK_EINVAL);
    }
    b->len += (size_t)n;
    return 0;
}

int ck__buf_printf(struct ck__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = ck__buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

void ck__buf_consume(struct ck__buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->p, b->p + n, b->len - n);
        b->len -= n;
    }
    if (b->p)
        b->p[b->len] = '\0';
}

char *ck__buf_take(struct ck__buf *b)
{
    if (!b->err && !b->p)
        grow(b, 0);
    char *p = b->err ? NULL : b->p;
    if (b->err)
        free(b->p);
    if (p)
        p[b->len] = '\0';
    size_t max = b->max;
    *b = (struct ck__buf){.max = max};
    return p;
}

char *ck__vformat(const char *fmt, va_list ap)
{
    struct ck__buf b = {0};
    ck__buf_vprintf(&b, fmt, ap);
    return ck__buf_take(&b);
}

void ck__buf_release(struct ck__buf *b)
{
    free(b->p);
    size_t max = b->max;
    *b = (struct ck__buf){.max = max};
}

size_t ck__buf_curl_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct ck__buf *b = arg;
    size_t n = size * nmemb;
    return ck__buf_add(b, data, n) == 0 ? n : 0;
}

bool ck__buf_lines(struct ck__buf *b, const char *data, size_t n, ck__line_fn fn, void *arg)
{
    if (ck__buf_add(b, data, n) < 0)
        return false;
    char *nl;
    while (b->len && (nl = memchr(b->p, '\n', b->len))) {
        size_t len = (size_t)(nl - b->p);
        *nl = '\0';
        bool more = fn(arg, b->p, len);
        ck__buf_consume(b, len + 1);
        if (!more)
            return false;
    }
    return true;
}
