/*
 * testing.c - the test helper (T1, T2, T3, T5): override values (and the
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

static bool named(const struct ck_fg_pair *pairs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(pairs[i].name, name))
            return true;
    return false;
}

/*
 * The pairs the helper really sets, ahead of the caller's own (which thus
 * win): T2, AllAlpha=v / AllBeta=v also set every gate that is Alpha / Beta
 * at the current versions to v explicitly, so they override values the test
 * had set before; T3, a dependency set to false also switches off the
 * default-on features that need it, unless the call names them. Names are
 * borrowed from the gate and from pairs. NULL on allocation failure.
 */
static struct ck_fg_pair *expand(struct ck_fg_gate *g, const struct ck_fg_pair *pairs, size_t n,
                                 size_t *ret_n)
{
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *s = g->snaps;
    struct ck_fg_pair *out = malloc((s->n + n + 1) * sizeof(*out));
    int8_t *v = malloc(s->n + 1);
    size_t k = 0;
    if (!out || !v) {
        free(out);
        out = NULL;
        goto out;
    }
    memset(v, -1, s->n);
    for (size_t i = 0; i < n; i++) {
        int idx = ck__fg_find(s->tab, pairs[i].name);
        if (idx == CK_FG_ALL_ALPHA || idx == CK_FG_ALL_BETA) {
            enum ck_fg_stage want = idx == CK_FG_ALL_ALPHA ? CK_FG_ALPHA : CK_FG_BETA;
            for (size_t f = 2; f < s->n; f++)
                if (ck__fg_spec_at(s->tab->f[f], s->emu, s->minc).stage == want)
                    v[f] = (int8_t)pairs[i].value;
        } else if (idx >= 0 && !pairs[i].value) {
            for (size_t f = 2; f < s->n; f++) {
                const struct ck__fg_feature *ft = s->tab->f[f];
                for (size_t d = 0; d < ft->ndeps; d++)
                    if (ft->deps[d] == (uint32_t)idx && !named(pairs, n, ft->name) &&
                        ck__fg_spec_at(ft, s->emu, s->minc).default_value) {
                        v[f] = 0;
                        ck__fg_logf(g, 0,
                                    "Disabling feature %s because its dependency %s is disabled",
                                    ft->name, pairs[i].name);
                    }
            }
        }
    }
    for (size_t f = 2; f < s->n; f++)
        if (v[f] >= 0)
            out[k++] = (struct ck_fg_pair){s->tab->f[f]->name, v[f] != 0};
    for (size_t i = 0; i < n; i++)
        out[k++] = pairs[i];
    *ret_n = k;
out:
    pthread_mutex_unlock(&g->mu);
    free(v);
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
    all = expand(g, pairs, n, &nall);
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
