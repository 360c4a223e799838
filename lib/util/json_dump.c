/*
 * json_dump.c - encoding JSON so that the text is whole or there is none.
 *
 * jansson 2.14's json_dumps() grows a buffer as it writes; when one of
 * those allocations fails in the middle of an object key, a piece of the
 * output is lost and the call still returns text: `{"selector":{":{...`.
 * Stored, that is an object nobody can read again. json_dumpb() writes
 * into a caller's buffer through a writer that cannot fail, so measuring
 * with it and then writing into one allocation gives either the exact text
 * or NULL. The price is encoding twice, which is cheaper than checking.
 *
 * Threading: none of its own; jansson values must not change meanwhile.
 *
 * Tested in tests/util/test_json_dump.c.
 */
#include <stdlib.h>

#include "ckube/internal/util.h"

char *ck__json_dumps(const json_t *json, size_t flags, size_t *ret_len)
{
    size_t len = json ? json_dumpb(json, NULL, 0, flags) : 0;
    if (len == 0) /* an error: every JSON text has at least one byte */
        return NULL;
    char *text = ck__malloc(len + 1);
    if (!text)
        return NULL;
    if (json_dumpb(json, text, len, flags) != len) {
        free(text);
        return NULL;
    }
    text[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return text;
}
