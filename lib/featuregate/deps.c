/*
 * deps.c - feature dependencies (R13, S12; Kubernetes 1.35+): a feature may
 * declare that it needs other features, and then may not be enabled while
 * one of them is disabled.
 *
 * Mirrors component-base featuregate's AddDependencies and the dependency
 * check at the end of SetFromMap. Registration checks, for every spec of the
 * dependent (newest first) against the dependency's spec in effect at that
 * spec's version: no dependency on a less stable stage, no default-on
 * feature on a default-off one, no locked feature on an unlocked one; and
 * the whole graph stays acyclic. Lists are merged with earlier ones, sorted
 * by name and de-duplicated. The YAML list format cannot express
 * dependencies, so only programs declare them.
 *
 * Threading: dependency lists are registration data, changed in place under
 * g->mu and only before ck_fg_close(); every reader holds g->mu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct ck__fg_table *sort_tab; /* by_name's context, under sort_mu */
static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

static int by_name(const void *a, const void *b)
{
    return strcmp(sort_tab->f[*(const uint32_t *)a]->name, sort_tab->f[*(const uint32_t *)b]->name);
}

/* R13 checks of one dependency at every spec of the dependent. */
static int check_pair(const struct ck__fg_feature *f, const struct ck__fg_feature *d,
                      struct ck_fg_err *reterr)
{
    char v[32];
    for (size_t i = f->nspecs; i-- > 0;) {
        const struct ck_fg_spec *sp = &f->specs[i];
        struct ck_fg_version m =
            sp->has_min_compat ? sp->min_compat : ck_fg_version_sub_minor(sp->version, 1);
        struct ck_fg_spec ds = ck__fg_spec_at(d, sp->version, m);
        ck_fg_version_fmt(sp->version, v, sizeof(v));
        if (ck__fg_stage_rank(sp->stage) > ck__fg_stage_rank(ds.stage))
            return ck__fg_errf(
                reterr, CK_FG_EINVAL, "%s feature %s cannot depend on %s feature %s at version %s",
                ck_fg_stage_string(sp->stage), f->name, ck_fg_stage_string(ds.stage), d->name, v);
        if (sp->default_value && !ds.default_value)
            return ck__fg_errf(reterr, CK_FG_EINVAL,
                               "default-enabled feature %s cannot depend on default-disabled "
                               "feature %s at version %s",
                               f->name, d->name, v);
        if (sp->lock_to_default && !ds.lock_to_default)
            return ck__fg_errf(reterr, CK_FG_EINVAL,
                               "locked-to-default feature %s cannot depend on unlocked feature "
                               "%s at version %s",
                               f->name, d->name, v);
    }
    return 0;
}

/* Depth-first search from i; state: 0 new, 1 on the path, 2 finished. */
static int find_cycle(const struct ck__fg_table *t, size_t i, size_t with, const uint32_t *wdeps,
                      size_t nw, uint8_t *state)
{
    if (state[i] == 2)
        return -1;
    if (state[i] == 1)
        return (int)i;
    state[i] = 1;
    const uint32_t *deps = i == with ? wdeps : t->f[i]->deps;
    size_t n = i == with ? nw : t->f[i]->ndeps;
    for (size_t k = 0; k < n; k++) {
        int c = find_cycle(t, deps[k], with, wdeps, nw, state);
        if (c >= 0)
            return c;
    }
    state[i] = 2;
    return -1;
}

int ck_fg_add_dependencies(struct ck_fg_gate *g, const char *feature, const char *const *deps,
                           size_t n, struct ck_fg_err *reterr)
{
    int rc = 0;
    uint32_t *list = NULL;
    uint8_t *state = NULL;

    pthread_mutex_lock(&g->mu);
    const struct ck__fg_table *t = g->table;
    if (g->closed) {
        rc = ck__fg_errf(reterr, CK_FG_EPERM,
                         "cannot add a feature gate dependency after adding it to the flag set");
        goto out;
    }
    int fi = ck__fg_find(t, feature);
    if (fi < 0) {
        rc = ck__fg_errf(reterr, CK_FG_ENOENT, "cannot add dependency for unknown feature %s",
                         feature);
        goto out;
    }
    struct ck__fg_feature *f = t->f[fi];
    list = malloc((f->ndeps + n + 1) * sizeof(*list));
    state = calloc(t->n, 1);
    if (!list || !state) {
        rc = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out;
    }
    size_t nl = f->ndeps;
    if (nl)
        memcpy(list, f->deps, nl * sizeof(*list));
    for (size_t k = 0; k < n; k++) {
        int di = ck__fg_find(t, deps[k]);
        if (di < 0) {
            rc = ck__fg_errf(reterr, CK_FG_ENOENT,
                             "cannot add dependency from %s to unknown feature %s", feature,
                             deps[k]);
            goto out;
        }
        list[nl++] = (uint32_t)di;
    }
    pthread_mutex_lock(&sort_mu);
    sort_tab = t;
    qsort(list, nl, sizeof(*list), by_name);
    pthread_mutex_unlock(&sort_mu);
    size_t u = 0;
    for (size_t k = 0; k < nl; k++) /* sorted, so duplicates are adjacent */
        if (u == 0 || list[u - 1] != list[k])
            list[u++] = list[k];
    nl = u;
    for (size_t k = 0; k < nl; k++)
        if ((rc = check_pair(f, t->f[list[k]], reterr)) < 0)
            goto out;
    for (size_t i = 0; i < t->n; i++) {
        int c = find_cycle(t, i, (size_t)fi, list, nl, state);
        if (c >= 0) {
            rc = ck__fg_errf(reterr, CK_FG_EINVAL, "cycle detected with feature %s", t->f[c]->name);
            goto out;
        }
    }
    free(f->deps);
    f->deps = list;
    f->ndeps = nl;
    list = NULL;
out:
    pthread_mutex_unlock(&g->mu);
    free(list);
    free(state);
    return rc;
}

const ck_fg_feature_t *ck_fg_dependencies(const struct ck_fg_gate *g, ck_fg_feature_t f,
                                          size_t *ret_n)
{
    struct ck_fg_gate *mg = (struct ck_fg_gate *)g;
    pthread_mutex_lock(&mg->mu);
    const struct ck__fg_feature *ft = f < g->table->n ? g->table->f[f] : NULL;
    *ret_n = ft ? ft->ndeps : 0;
    const ck_fg_feature_t *d = ft ? ft->deps : NULL;
    pthread_mutex_unlock(&mg->mu);
    return d;
}

static bool enabled_in(const struct ck__fg_snap *s, size_t i)
{
    return s->expl[i] >= 0 ? s->expl[i] != 0
                           : ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).default_value;
}

int ck__fg_check_deps(const struct ck__fg_snap *s, struct ck_fg_err *reterr)
{
    struct ck__buf errs = {0};
    int nerr = 0;

    for (size_t i = 2; i < s->n; i++) {
        const struct ck__fg_feature *f = s->tab->f[i];
        if (!f->ndeps || !enabled_in(s, i))
            continue;
        int off = 0;
        for (size_t k = 0; k < f->ndeps; k++) {
            if (enabled_in(s, f->deps[k]))
                continue;
            if (!off++)
                ck__buf_printf(&errs,
                               "%s%s is enabled, but depends on features that are "
                               "disabled: [",
                               nerr++ ? ", " : "", f->name);
            ck__buf_printf(&errs, "%s%s", off > 1 ? " " : "", s->tab->f[f->deps[k]]->name);
        }
        if (off)
            ck__buf_printf(&errs, "]");
    }
    if (!nerr) {
        free(errs.p);
        return 0;
    }
    char *msg = ck__buf_take(&errs);
    int rc = ck__fg_errf(reterr, CK_FG_EINVAL, nerr > 1 ? "[%s]" : "%s", msg ? msg : "errors");
    free(msg);
    return rc;
}
