/*
 * fuzz_cri_answer.c - libFuzzer target for the agent's CRI client's decoding
 * of what a container runtime answers (lib/agent/cri.c): the first byte picks
 * (its value mod 16) a VersionResponse, StatusResponse, ListImagesResponse,
 * ImageStatusResponse, PullImageResponse, ImageFsInfoResponse, an id or URL
 * answer (RunPodSandbox, CreateContainer, Exec, Attach, PortForward),
 * PodSandboxStatusResponse, ListPodSandboxResponse, ListContainersResponse,
 * ContainerStatusResponse, ExecSyncResponse, ContainerStatsResponse,
 * ListContainerStatsResponse, PodSandboxStatsResponse or
 * ListPodSandboxStatsResponse; the rest is the message. Whatever the runtime,
 * or something posing as it on the socket, sends must be decoded or refused
 * without reading past its end; ASan and UBSan watch every length, and
 * LeakSanitizer every string and array kept.
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
