/*
 * fuzz_feature_list.c - the versioned feature list loader (M3, P4) and the
 * registration checks behind it (R5-R12): any bytes load or fail cleanly;
 * whatever loaded can be evaluated at a few versions.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ckube/featuregate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(1, 31));
    struct ck_fg_err err = {0};
    if (ck_fg_list_parse(g, (const char *)data, size, &err) == 0) {
        ck_fg_set(g, "AllAlpha=true,AllBeta=false", &err);
        ck_fg_set_emulation_version(g, ck_fg_version_mm(1, 29), &err);
        free(ck_fg_all_json(g));
        free(ck_fg_known_features(g));
        free(ck_fg_docs_table(g, CK_FG_TABLE_JSON));
    }
    ck_fg_gate_free(g);
    return 0;
}
