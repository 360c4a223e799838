/*
 * fuzz_quantity.c - libFuzzer target for the resource.Quantity parser.
 *
 * Any input must parse or fail cleanly; a parsed quantity printed back in
 * milli-units ("<n>m") must parse again to the same value.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *)data, size);
    if (!text)
        return 0;
    int64_t milli = 0, again = 0;
    if (ck_quantity_milli(text, &milli) == 0) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRId64 "m", milli);
        if (ck_quantity_milli(buf, &again) != 0 || again != milli)
            abort();
    }
    free(text);
    return 0;
}
