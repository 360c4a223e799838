/*
 * fuzz_feature_gates.c - the --feature-gates parser and Set (S1-S11) on a
 * gate with every stage, locks and a not-yet-existing gate: any input gives
 * 0 or a clear error, never a crash, and a failing set changes nothing (D1).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/featuregate.h"

static struct ck_fg_spec spec(unsigned minor, bool def, bool lock, enum ck_fg_stage st)
{
    struct ck_fg_spec s = {.version = ck_fg_version_mm(1, minor),
                           .has_version = true,
                           .default_value = def,
                           .lock_to_default = lock,
                           .stage = st};
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(1, 30));
    struct ck_fg_spec a = spec(0, false, false, CK_FG_ALPHA), b = spec(0, true, false, CK_FG_BETA);
    struct ck_fg_spec ga = spec(0, true, true, CK_FG_GA), fut = spec(31, false, false, CK_FG_ALPHA);
    ck_fg_add_versioned(g, "A", &a, 1, NULL, NULL);
    ck_fg_add_versioned(g, "B", &b, 1, NULL, NULL);
    ck_fg_add_versioned(g, "L", &ga, 1, NULL, NULL);
    ck_fg_add_versioned(g, "F", &fut, 1, NULL, NULL);
    char *before = ck_fg_string(g);
    struct ck_fg_err err = {0};
    if (ck_fg_set(g, s, &err) < 0) {
        char *after = ck_fg_string(g);
        if (before && after && strcmp(before, after) != 0)
            abort(); /* D1 violated */
        free(after);
    }
    free(before);
    ck_fg_gate_free(g);
    free(s);
    return 0;
}
