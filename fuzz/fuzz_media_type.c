/*
 * fuzz_media_type.c - libFuzzer target for the Accept and Content-Type
 * parsing of lib/apiserver/media.c: any header value picks a codec and a
 * shape or nothing, never both a codec and "nothing", and reads no byte
 * past its end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *header = malloc(size + 1);
    if (!header)
        return 0;
    memcpy(header, data, size);
    header[size] = '\0';
    struct ck__media media;
    ck__media_negotiate_accept(header, &media);
    if ((media.codec == NULL) != (media.shape == CK__ACCEPT_NONE))
        abort();
    const struct ck__codec *codec = ck__codec_for_content_type(header);
    if (codec && !codec->media_type)
        abort();
    free(header);
    return 0;
}
