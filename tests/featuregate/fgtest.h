/*
 * fgtest.h - helpers shared by the featuregate tests: spec literals, a gate
 * with the usual test features, and a logger that records lines.
 */
#ifndef CKUBE_FGTEST_H
#define CKUBE_FGTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/featuregate.h"

#define V(a, b) ck_fg_version_mm(a, b)
#define SPEC(maj, min, def, lock, st)                                                              \
    ((struct ck_fg_spec){.version = {maj, min, 0, 2},                                              \
                         .has_version = true,                                                      \
                         .default_value = def,                                                     \
                         .lock_to_default = lock,                                                  \
                         .stage = CK_FG_##st})

struct fg_log {
    char lines[32][600];
    int n;
};

static inline void fg_log_record(void *ud, int v, const char *msg)
{
    struct fg_log *l = ud;
    (void)v;
    if (l->n < 32)
        snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s", msg);
}

static inline bool fg_log_has(const struct fg_log *l, const char *needle)
{
    for (int i = 0; i < l->n; i++)
        if (strstr(l->lines[i], needle))
            return true;
    return false;
}

/*
 * The features of component-base's tests, emulating 1.30:
 *   TestAlpha      Alpha, default off
 *   TestBeta       Beta, default on
 *   TestBetaOff    Beta, default off
 *   TestGA         GA, default on
 *   TestLockedTrue GA, locked on
 *   TestDeprecated Deprecated, default off (since 1.0)
 *   TestVersioned  Alpha off at 1.29, Beta on at 1.30, GA locked on at 1.32
 *   TestFuture     Alpha off at 1.31 (PreAlpha at 1.30)
 *   TestLockedFalse Beta off at 1.28, GA locked off at 1.29
 */
static inline struct ck_fg_gate *fg_test_gate(void)
{
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_err err = {0};
    if (!g)
        abort();
    int rc = 0;
    rc |= ck_fg_add(g, "TestAlpha", SPEC(0, 0, false, false, ALPHA), NULL, &err);
    rc |= ck_fg_add(g, "TestBeta", SPEC(0, 0, true, false, BETA), NULL, &err);
    rc |= ck_fg_add(g, "TestBetaOff", SPEC(0, 0, false, false, BETA), NULL, &err);
    rc |= ck_fg_add(g, "TestGA", SPEC(0, 0, true, false, GA), NULL, &err);
    rc |= ck_fg_add(g, "TestLockedTrue", SPEC(0, 0, true, true, GA), NULL, &err);
    rc |= ck_fg_add(g, "TestDeprecated", SPEC(0, 0, false, false, DEPRECATED), NULL, &err);
    struct ck_fg_spec ver[] = {SPEC(1, 29, false, false, ALPHA), SPEC(1, 30, true, false, BETA),
                               SPEC(1, 32, true, true, GA)};
    rc |= ck_fg_add_versioned(g, "TestVersioned", ver, 3, NULL, &err);
    struct ck_fg_spec fut[] = {SPEC(1, 31, false, false, ALPHA)};
    rc |= ck_fg_add_versioned(g, "TestFuture", fut, 1, NULL, &err);
    struct ck_fg_spec lf[] = {SPEC(1, 28, false, false, BETA), SPEC(1, 29, false, true, GA)};
    rc |= ck_fg_add_versioned(g, "TestLockedFalse", lf, 2, NULL, &err);
    if (rc)
        abort();
    return g;
}

#endif /* CKUBE_FGTEST_H */
