/*
 * fuzz_feature_config.c - the component config loader (P8): any bytes give
 * a list of pairs or a clear error; the pairs can be applied to a gate.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ckube/featuregate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ck_fg_pair *p = NULL;
    size_t n = 0;
    char *buf = NULL;
    struct ck_fg_err err = {0};
    if (ck_fg_config_parse((const char *)data, size, &p, &n, &buf, &err) == 0) {
        struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(1, 31));
        ck_fg_set_from_map(g, p, n, &err);
        ck_fg_gate_free(g);
        free(p);
        free(buf);
    }
    return 0;
}
