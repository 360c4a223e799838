/*
 * fuzz_cri_answer.c - libFuzzer target for the agent's CRI client's decoding
 * of what a container runtime answers (lib/agent/cri.c): the first byte picks
 * a VersionResponse, StatusResponse, ListImagesResponse, ImageStatusResponse,
 * PullImageResponse or ImageFsInfoResponse (its value mod 6), the rest is the
 * message. Whatever the runtime, or something posing as it on the socket,
 * sends must be decoded or refused without reading past its end; ASan and
 * UBSan watch every length, and LeakSanitizer every string and array kept.
 */
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ck__cri_decode_answer(data, size);
    return 0;
}
