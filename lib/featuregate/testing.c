/*
 * testing.c - the test helper (T1, T2, T5): override values (and the
 * emulation version) for one test, then put everything back.
 *
 * The saved state is the snapshot current before the override; restoring
 * publishes a copy of it, so values, recorded input and versions come back
 * exactly (registration data is not touched by the helper).
 * Threading: as any writer, under the gate's mutex.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ck_fg_test_state {
    struct ck_fg_gate *g;
    const struct ck__fg_snap *saved;
};

/*
 * T2: AllAlpha=v / AllBeta=v in the helper also set every gate that is
 * Alpha / Beta at the current versions to v explicitly, so they override
 * values the test had set before; the caller's own pairs come after them
 * and so still win. Returns the expanded pairs (names borrowed from the
 * gate's registration table and from pairs), or NULL on allocation failure.
 */
static struct ck_fg_pair *expand_bulk(struct ck_fg_gate *g, const struct ck_fg_pair *pairs,
                                      size_t n, size_t *ret_n)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    struct ck_fg_pair *out = malloc((s->n + n + 1) * sizeof(*out));
    size_t k = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        enum ck_fg_stage want;
        if (!strcmp(pairs[i].name, "AllAlpha"))
            want = CK_FG_ALPHA;
        else if (!strcmp(pairs[i].name, "AllBeta"))
            want = CK_FG_BETA;
        else
            continue;
        for (size_t f = 2; f < s->n; f++)
            if (ck__fg_spec_at(s->tab->f[f], s->emu, s->minc).stage == want)
                out[k++] = (struct ck_fg_pair){s->tab->f[f]->name, pairs[i].value};
    }
    for (size_t i = 0; i < n; i++)
        out[k++] = pairs[i];
    *ret_n = k;
    return out;
}

struct ck_fg_test_state *ck_fg_test_override(struct ck_fg_gate *g, const struct ck_fg_pair *pairs,
                                             size_t n, const struct ck_fg_version *emulated,
                                             struct ck_fg_err *reterr)
{
    struct ck_fg_test_state *st = calloc(1, sizeof(*st));
    struct ck_fg_pair *all = NULL;
    size_t nall = 0;
    if (!st) {
        ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        return NULL;
    }
    st->g = g;
    st->saved = ck__fg_snap(g);
    if (emulated && ck_fg_set_emulation_version(g, *emulated, reterr) < 0)
        goto out_restore;
    all = expand_bulk(g, pairs, n, &nall);
    if (!all) {
        ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out_restore;
    }
    if (ck_fg_set_from_map(g, all, nall, reterr) < 0)
        goto out_restore;
    free(all);
    return st;
out_restore:
    free(all);
    ck_fg_test_restore(st);
    return NULL;
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
