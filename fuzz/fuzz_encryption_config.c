/*
 * fuzz_encryption_config.c - libFuzzer target for the EncryptionConfiguration
 * reader of --encryption-provider-config (lib/apiserver/encryption.c): any
 * bytes are YAML that is parsed, walked and checked (providers, key names,
 * base64 secrets of the right sizes), and must be accepted or refused with a
 * reason, never crash, leak or read out of bounds.
 *
 * Seeds: fuzz/corpus/encryption_config/ (a valid file, rotation, identity,
 * refused providers and key sizes).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct ck_err err = {0};
    int r = ck__encryption_check(text, size, &err);
    if (r < 0 && err.msg[0] == '\0')
        abort(); /* a refusal always says why */
    ck_err_release(&err);
    free(text);
    return 0;
}
