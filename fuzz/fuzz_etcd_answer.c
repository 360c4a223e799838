/*
 * fuzz_etcd_answer.c - libFuzzer target for the etcd backend's decoding of
 * what etcd answers (lib/store/etcd.c): a RangeResponse, a TxnResponse or the
 * bytes of a watch stream (length-prefixed WatchResponses, fed in small
 * pieces), picked by the first byte. Whatever etcd, or something posing as
 * it, sends must be refused or decoded without reading past what arrived;
 * ASan and UBSan watch every length, and LeakSanitizer every kv decoded.
 */
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ck__etcd_decode_answer(data, size);
    return 0;
}
