/*
 * fuzz_json.c - libFuzzer target for ck_json_loadb(), differential against
 * jansson's json_loadb(). The first byte picks the flags (bit 0:
 * JSON_DECODE_ANY, bit 1: JSON_REJECT_DUPLICATES) and, in its high bits, an
 * allocation to fail; the rest is the text. With memory to spare both must
 * accept it with equal values, or both refuse it (ours with a message; a text
 * with a NUL byte jansson may take, ck_json_loadb() refuses it); with
 * allocation n failing (jansson allocating through the hook), ck_json_loadb()
 * must give that same value or CK_ENOMEM, never another value or a 400.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *hooked_malloc(size_t size)
{
    return ck__malloc(size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool hooked;
    if (!hooked) {
        json_set_alloc_funcs(hooked_malloc, free);
        hooked = true;
    }
    if (size < 1)
        return 0;
    size_t flags = (data[0] & 1 ? JSON_DECODE_ANY : 0) | (data[0] & 2 ? JSON_REJECT_DUPLICATES : 0);
    unsigned long fail_at = data[0] >> 2; /* 0: none */
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    json_error_t jerr, ours;
    json_t *want = json_loadb(text, len, flags, &jerr);
    json_t *got = NULL;
    int r = ck_json_loadb(text, len, flags, &got, &ours);
    /* jansson reads a NUL byte after a number or literal as the end of the text; we refuse */
    bool nul = memchr(text, '\0', len) != NULL;
    if (want && nul && r == CK_EINVAL)
        json_decref(want), want = NULL;
    else if (want ? r != 0 || !json_equal(got, want) : r != CK_EINVAL || !ours.text[0])
        abort();
    json_decref(got);

    if (fail_at) {
        got = NULL;
        ck__alloc_fail_at(fail_at, false);
        r = ck_json_loadb(text, len, flags, &got, &ours);
        ck__alloc_fail_at(0, false);
        if (r == 0 ? !want || !json_equal(got, want) : r != CK_ENOMEM && (want || r != CK_EINVAL))
            abort();
        json_decref(got);
    }
    json_decref(want);
    return 0;
}
