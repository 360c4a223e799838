/*
 * fuzz_regex.c - libFuzzer target for Go's regular expressions over RE2
 * (lib/util/regex.cc), which compiles the `pattern` of any CRD a client
 * sends and, later, CEL's matches(). The input is a pattern, then a NUL
 * byte and a text to search (without the NUL, the pattern searches
 * itself). Properties beyond "no crash, no leak": a pattern compiles or is
 * refused with Go's "error parsing regexp: " message; a search answers 0 or
 * 1; compiling the same pattern twice answers the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) /* CRD patterns are short; big ones only find RE2's slow paths */
        return 0;
    const char *pattern = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    const char *text = nul ? (const char *)nul + 1 : pattern;
    size_t tlen = nul ? size - plen - 1 : size;

    struct ck__regex *re = NULL;
    char *why = NULL;
    int r = ck__regex_compile(pattern, plen, &re, &why);
    if (r == 0) {
        if (!re || why)
            abort();
        int m = ck__regex_search(re, text, tlen);
        if (m != 0 && m != 1)
            abort();
        struct ck__regex *again = NULL;
        if (ck__regex_compile(pattern, plen, &again, NULL) != 0 ||
            ck__regex_search(again, text, tlen) != m)
            abort();
        ck__regex_free(again);
    } else if (r == CK_EINVAL || r == CK__REGEX_TOO_LARGE) {
        if (re || !why || strncmp(why, "error parsing regexp: ", 22) != 0)
            abort();
    } else if (r != CK_ENOMEM) {
        abort();
    }
    free(why);
    ck__regex_free(re);
    return 0;
}
