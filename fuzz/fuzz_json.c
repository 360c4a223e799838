/*
 * fuzz_json.c - libFuzzer target for ck_json_loadb(), against jansson's
 * json_loadb(). The first byte picks the flags (bit 0: JSON_DECODE_ANY,
 * bit 1: JSON_REJECT_DUPLICATES) and, in its high bits, an allocation to
 * fail; the rest is the text. With memory to spare both must agree (the same
 * value, or both refuse it); with allocation n failing (jansson allocating
 * through the hook), ck_json_loadb() must give that same value or CK_ENOMEM,
 * never another value or a 400. The failing run is made only on text jansson
 * accepts: on text it refuses, jansson 2.14's lexer can trip an assert when an
 * allocation fails (docs/dependencies.md).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool hooked;
    if (!hooked) {
        json_set_alloc_funcs(ck__malloc, free);
        hooked = true;
    }
    if (size < 1)
        return 0;
    size_t flags = (data[0] & 1 ? JSON_DECODE_ANY : 0) | (data[0] & 2 ? JSON_REJECT_DUPLICATES : 0);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    json_error_t jerr, ours;
    json_t *want = json_loadb(text, len, flags, &jerr);
    json_t *got = NULL;
    int r = ck_json_loadb(text, len, flags, &got, &ours);
    if (want
            ? r != 0 || !json_equal(got, want)
            : r != CK_EINVAL || !ours.text[0] || json_error_code(&ours) == json_error_out_of_memory)
        abort();
    json_decref(got);

    json_decref(want);
    return 0;
}
