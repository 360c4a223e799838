/*
 * json_dump.c - encoding JSON so that the text is whole or there is none.
 *
 * jansson 2.14's json_dumps() grows a buffer as it writes; when one of
 * those allocations fails in the middle of an object key, a piece of the
 * output is lost and the call still returns text: `{"selector":{":{...`.
 * Stored, that is an object nobody can read again. json_dumpb() writes
 * into a caller's buffer through a writer that cannot fail, so measuring
 * into one allocation gives either the exact text or NULL. It writes into a
 * first allocation of FIRST_TRY_BYTES, which most objects fit and which is
 * then trimmed to the text; a longer text is written again into an
 * allocation of the size the first pass counted.
 *
 * Threading: none of its own; jansson values must not change meanwhile.
 *
 * Tested in tests/util/test_json_dump.c.
 */
#include <stdlib.h>

#include "ckube/internal/util.h"

/* Most stored objects are a few KiB; a buffer this size is trimmed, not refilled. */
#define FIRST_TRY_BYTES (16u * 1024)

char *ck__json_dumps(const json_t *json, size_t flags, size_t *ret_len)
{
    char *text = json ? ck__malloc(FIRST_TRY_BYTES) : NULL;
    if (!text)
        return NULL;
    /* json_dumpb() counts the whole text even when the buffer is shorter */
    size_t len = json_dumpb(json, text, FIRST_TRY_BYTES - 1, flags);
    if (len == 0) { /* an error: every JSON text has at least one byte */
        free(text);
        return NULL;
    }
    if (len < FIRST_TRY_BYTES) {
        char *trimmed = ck__realloc(text, len + 1);
        text = trimmed ? trimmed : text; /* a failed trim leaves the longer buffer */
    } else {
        free(text);
        if (!(text = ck__malloc(len + 1)))
            return NULL;
        if (json_dumpb(json, text, len, flags) != len) {
            free(text);
            return NULL;
        }
    }
    text[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return text;
}
