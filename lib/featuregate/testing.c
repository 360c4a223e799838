/*
 * testing.c - the test helper (T1, T5): override values (and the emulation
 * version) for one test, then put everything back.
 *
 * The saved state is the snapshot current before the override; restoring
 * publishes a copy of it, so values, recorded input and versions come back
 * exactly (registration data is not touched by the helper).
 * Threading: as any writer, under the gate's mutex.
 */
#include <stdlib.h>

#include "internal.h"

struct ck_fg_test_state {
    struct ck_fg_gate *g;
    const struct ck__fg_snap *saved;
};

struct ck_fg_test_state *ck_fg_test_override(struct ck_fg_gate *g, const struct ck_fg_pair *pairs,
                                             size_t n, const struct ck_fg_version *emulated,
                                             struct ck_fg_err *reterr)
{
    struct ck_fg_test_state *st = calloc(1, sizeof(*st));
    if (!st) {
        ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        return NULL;
    }
    st->g = g;
    st->saved = ck__fg_snap(g);
    if ((emulated && ck_fg_set_emulation_version(g, *emulated, reterr) < 0) ||
        ck_fg_set_from_map(g, pairs, n, reterr) < 0) {
        ck_fg_test_restore(st);
        return NULL;
    }
    return st;
}

void ck_fg_test_restore(struct ck_fg_test_state *st)
{
    if (!st)
        return;
    struct ck_fg_gate *g = st->g;
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *old = st->saved;
    struct ck__fg_snap *s = ck__fg_snap_new(g->snaps->tab, old, old->emu, old->minc);
    if (s)
        ck__fg_publish(g, s);
    pthread_mutex_unlock(&g->mu);
    free(st);
}
