/*
 * testing.c - the test helper (T1-T5): override values (and the emulation
 * version) for one test, then put everything back; refuse two unrelated
 * tests overriding the same gate at once.
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
    char *name;         /* the test's name; NULL: no parallel-use detection */
    uint32_t *features; /* what this override sets (T4) */
    size_t nfeatures;
    bool sets_emulation; /* and whether it sets the emulation version */
    struct ck_fg_version emu;
    struct ck_fg_test_state *next; /* in g->tests, under g->mu */
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

/* Go's t.Name() rule: the same test, or one of its subtests ("Parent/Sub"). */
static bool same_test_or_subtest(const char *name, const char *owner)
{
    size_t n = strlen(owner);
    return !strncmp(name, owner, n) && (name[n] == '\0' || name[n] == '/');
}

/*
 * T4: fails when another, unrelated test holds an override of one of the
 * same features, or of the emulation version at a different version.
 * Registers st as active when there is no conflict. Takes g->mu.
 */
static int claim(struct ck_fg_test_state *st, struct ck_fg_err *reterr)
{
    struct ck_fg_gate *g = st->g;
    int rc = 0;
    pthread_mutex_lock(&g->mu);
    for (const struct ck_fg_test_state *o = g->tests; st->name && o && !rc; o = o->next) {
        if (!o->name || same_test_or_subtest(st->name, o->name))
            continue;
        if (st->sets_emulation && o->sets_emulation && ck_fg_version_cmp(st->emu, o->emu) != 0)
            rc = ck__fg_errf(reterr, CK_FG_EPERM,
                             "Detected parallel setting of a feature gate emulation version by "
                             "both \"%s\" and \"%s\"",
                             o->name, st->name);
        for (size_t i = 0; i < st->nfeatures && !rc; i++)
            for (size_t j = 0; j < o->nfeatures && !rc; j++)
                if (st->features[i] == o->features[j])
                    rc = ck__fg_errf(reterr, CK_FG_EPERM,
                                     "Detected parallel setting of a feature gate by both \"%s\" "
                                     "and \"%s\"",
                                     o->name, st->name);
    }
    if (!rc) {
        st->next = g->tests;
        g->tests = st;
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static void state_free(struct ck_fg_test_state *st)
{
    free(st->name);
    free(st->features);
    free(st);
}

struct ck_fg_test_state *ck_fg_test_override(struct ck_fg_gate *g, const char *test_name,
                                             const struct ck_fg_pair *pairs, size_t n,
                                             const struct ck_fg_version *emulated,
                                             struct ck_fg_err *reterr)
{
    struct ck_fg_test_state *st = calloc(1, sizeof(*st));
    struct ck_fg_pair *all = NULL;
    size_t nall = 0;
    if (!st || (test_name && !(st->name = strdup(test_name)))) {
        free(st);
        ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        return NULL;
    }
    st->g = g;
    st->saved = ck__fg_snap(g);
    if (emulated) {
        st->sets_emulation = true;
        st->emu = ck_fg_version_mm(emulated->major, emulated->minor);
    }
    all = expand(g, pairs, n, &nall);
    st->features = malloc((nall + 1) * sizeof(*st->features));
    if (!all || !st->features) {
        ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out_free;
    }
    for (size_t i = 0; i < nall; i++) {
        ck_fg_feature_t f;
        if (ck_fg_lookup(g, all[i].name, &f) == 0)
            st->features[st->nfeatures++] = f;
    }
    if (claim(st, reterr) < 0)
        goto out_free;
    free(all);
    all = NULL;
    /* Bulk and dependency expansion depend on the versions: redo it after. */
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
out_free:
    free(all);
    state_free(st);
    return NULL;
}

void ck_fg_test_restore(struct ck_fg_test_state *st)
{
    if (!st)
        return;
    struct ck_fg_gate *g = st->g;
    pthread_mutex_lock(&g->mu);
    for (struct ck_fg_test_state **p = &g->tests; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    const struct ck__fg_snap *old = st->saved;
    struct ck__fg_snap *s = ck__fg_snap_new(g->snaps->tab, old, old->emu, old->minc);
    if (s)
        ck__fg_publish(g, s);
    pthread_mutex_unlock(&g->mu);
    state_free(st);
}
