/*
 * err.c - filling struct ck_err, the one error carrier of ckube's libraries.
 *
 * A function that fails returns a negative CK_E* code and, when its caller
 * passed a struct ck_err, one sentence saying what failed. Nothing here
 * allocates, so reporting an out-of-memory error cannot itself fail.
 */
#include <stdarg.h>

#include "ckube/util.h"

int ck_err_set(struct ck_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    err->http_status = 0;
    err->reason = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}
