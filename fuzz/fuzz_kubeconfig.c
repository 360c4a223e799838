/*
 * fuzz_kubeconfig.c - libFuzzer target for kubeconfig parsing (YAML or JSON through
 * libyaml into jansson, then context resolution): any input loads or fails cleanly.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ckube/rest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ck_kubeconfig *kc = NULL;
    struct ck_err err = {0};
    /* base_dir "/nonexistent": a tokenFile in the input must not read real files */
    if (ck_kubeconfig_parse((const char *)data, size, "/nonexistent", NULL, &kc, &err) == 0)
        ck_kubeconfig_free(kc);
    return 0;
}
