/*
 * introspect.c - what a gate says about itself: KnownFeatures (Q3), String
 * (Q4), the kubernetes_feature_enabled metric (O1), the startup line, the
 * alpha-under-emulation warning (V10), the JSON of every effective value
 * (P9, Q2) and the docs table.
 *
 * Each works on one snapshot taken under g->mu (registration data such as
 * overridden defaults is only stable under the lock) and returns a malloc'ed
 * string. JSON goes through jansson.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct ck__fg_snap *sort_snap;

static int by_name(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return strcmp(sort_snap->tab->f[x]->name, sort_snap->tab->f[y]->name);
}

static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

size_t *ck__fg_sorted(const struct ck__fg_snap *s)
{
    size_t *idx = malloc((s->n ? s->n : 1) * sizeof(*idx));
    if (!idx)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        idx[i] = i;
    pthread_mutex_lock(&sort_mu); /* qsort has no context argument in C11 */
    sort_snap = s;
    qsort(idx, s->n, sizeof(*idx), by_name);
    sort_snap = NULL;
    pthread_mutex_unlock(&sort_mu);
    return idx;
}

static const struct ck__fg_snap *lock_snap(const struct ck_fg_gate *g)
{
    pthread_mutex_lock(&((struct ck_fg_gate *)g)->mu);
    return g->snaps;
}

static void unlock(const struct ck_fg_gate *g)
{
    pthread_mutex_unlock(&((struct ck_fg_gate *)g)->mu);
}

static const char *b2s(bool b)
{
    return b ? "true" : "false";
}

static bool listed(enum ck_fg_stage st)
{
    return st == CK_FG_ALPHA || st == CK_FG_BETA;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *ck_fg_known_features(const struct ck_fg_gate *g)
{
    const struct ck__fg_snap *s = lock_snap(g);
    char **lines = calloc(s->n ? s->n : 1, sizeof(*lines));
    size_t nl = 0;
    struct ck__buf out = {0};
    char mv[32];

    for (size_t i = 0; lines && i < s->n; i++) {
        const struct ck__fg_feature *f = s->tab->f[i];
        struct ck_fg_spec cur = ck__fg_spec_at(f, s->emu, s->minc);
        struct ck_fg_spec full = ck__fg_spec_at(f, s->emu, s->emu);
        struct ck__buf l = {0};
        /* Kubernetes compares the whole specs, versions included. */
        bool differs = cur.stage != full.stage || cur.default_value != full.default_value ||
                       cur.lock_to_default != full.lock_to_default ||
                       ck_fg_version_cmp(cur.version, full.version) != 0 ||
                       cur.has_min_compat != full.has_min_compat ||
                       ck_fg_version_cmp(cur.min_compat, full.min_compat) != 0;
        if (listed(cur.stage))
            ck__buf_printf(&l, "%s=true|false (%s - default=%s)", f->name,
                           ck_fg_stage_string(cur.stage), b2s(cur.default_value));
        if (differs && listed(full.stage))
            ck__buf_printf(
                &l, "%s%s=true|false (%s - default=%s) if --min-compatibility-version>=%s",
                l.len ? ", or " : "", f->name, ck_fg_stage_string(full.stage),
                b2s(full.default_value), ck_fg_version_fmt(full.min_compat, mv, sizeof(mv)));
        if (l.len)
            lines[nl++] = ck__buf_take(&l);
        else
            free(l.p);
    }
    unlock(g);
    if (!lines)
        return NULL;
    qsort(lines, nl, sizeof(*lines), cmp_line);
    for (size_t i = 0; i < nl; i++) {
        if (!lines[i])
            out.err = CK_FG_ENOMEM;
        else
            ck__buf_printf(&out, "%s%s", i ? "\n" : "", lines[i]);
        free(lines[i]);
    }
    free(lines);
    return ck__buf_take(&out);
}

char *ck_fg_string(const struct ck_fg_gate *g)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    struct ck__buf out = {0};
    size_t *idx = ck__fg_sorted(s);
    if (!idx)
        return NULL;
    for (size_t k = 0, first = 1; k < s->n; k++) {
        size_t i = idx[k];
        if (s->expl[i] < 0)
            continue;
        ck__buf_printf(&out, "%s%s=%s", first ? "" : ",", s->tab->f[i]->name, b2s(s->expl[i] != 0));
        first = 0;
    }
    free(idx);
    return ck__buf_take(&out);
}

char *ck_fg_metrics_text(const struct ck_fg_gate *g)
{
    const struct ck__fg_snap *s = lock_snap(g);
    struct ck__buf out = {0};
    size_t *idx = ck__fg_sorted(s);
    ck__buf_printf(&out, "# HELP kubernetes_feature_enabled [BETA] This metric records the "
                         "data about the stage and enablement of a k8s feature.\n"
                         "# TYPE kubernetes_feature_enabled gauge\n");
    for (size_t k = 0; idx && k < s->n; k++) {
        struct ck_fg_spec sp = ck__fg_spec_at(s->tab->f[idx[k]], s->emu, s->minc);
        if (sp.stage == CK_FG_PREALPHA)
            continue;
        ck__buf_printf(&out, "kubernetes_feature_enabled{name=\"%s\",stage=\"%s\"} %d\n",
                       s->tab->f[idx[k]]->name, ck_fg_stage_string(sp.stage),
                       s->val[idx[k]] ? 1 : 0);
    }
    unlock(g);
    if (!idx)
        out.err = CK_FG_ENOMEM;
    free(idx);
    return ck__buf_take(&out);
}

char *ck_fg_startup_line(const struct ck_fg_gate *g)
{
    const struct ck__fg_snap *s = lock_snap(g);
    struct ck__buf out = {0};
    size_t *idx = ck__fg_sorted(s);
    char e[32], m[32];
    ck__buf_printf(&out, "Feature gates: emulationVersion=%s minCompatibilityVersion=%s",
                   ck_fg_version_fmt(s->emu, e, sizeof(e)),
                   ck_fg_version_fmt(s->minc, m, sizeof(m)));
    for (size_t k = 0, first = 1; idx && k < s->n; k++) {
        if (ck__fg_spec_at(s->tab->f[idx[k]], s->emu, s->minc).stage == CK_FG_PREALPHA)
            continue;
        ck__buf_printf(&out, "%s%s=%s", first ? " " : ",", s->tab->f[idx[k]]->name,
                       b2s(s->val[idx[k]]));
        first = 0;
    }
    unlock(g);
    if (!idx)
        out.err = CK_FG_ENOMEM;
    free(idx);
    return ck__buf_take(&out);
}

void ck_fg_log_startup(const struct ck_fg_gate *g)
{
    char *line = ck_fg_startup_line(g);
    if (line)
        ck__fg_logf(g, 0, "%s", line);
    free(line);
}

int ck_fg_warn_emulated_alpha(const struct ck_fg_gate *g, struct ck_fg_version binary)
{
    const struct ck__fg_snap *s = lock_snap(g);
    struct ck__buf names = {0};
    size_t *idx = ck__fg_sorted(s);
    int n = 0;
    struct ck_fg_version bin = ck_fg_version_mm(binary.major, binary.minor);
    if (ck_fg_version_cmp(bin, s->emu) > 0) {
        for (size_t k = 0; idx && k < s->n; k++) {
            size_t i = idx[k];
            if (i < 2 || !s->val[i] ||
                ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).stage != CK_FG_ALPHA)
                continue;
            ck__buf_printf(&names, "%s%s", n ? " " : "", s->tab->f[i]->name);
            n++;
        }
    }
    unlock(g);
    free(idx);
    char *list = ck__buf_take(&names);
    if (n)
        ck__fg_logf(g, 0,
                    "component has alpha features enabled in emulated version, this is "
                    "unsupported features=[%s]",
                    list ? list : "");
    free(list);
    return n;
}

char *ck_fg_all_json(const struct ck_fg_gate *g)
{
    const struct ck__fg_snap *s = lock_snap(g);
    json_t *o = json_object();
    for (size_t i = 0; o && i < s->n; i++) {
        if (ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).stage == CK_FG_PREALPHA)
            continue;
        json_object_set_new(o, s->tab->f[i]->name, json_boolean(s->val[i]));
    }
    unlock(g);
    char *out = o ? json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(o);
    return out;
}

char *ck_fg_docs_table(const struct ck_fg_gate *g, enum ck_fg_table_format fmt)
{
    const struct ck__fg_snap *s = lock_snap(g);
    struct ck__buf out = {0};
    json_t *arr = fmt == CK_FG_TABLE_JSON ? json_array() : NULL;
    size_t *idx = ck__fg_sorted(s);
    int w = 7;
    char since[32], until[32];

    for (size_t i = 2; i < s->n; i++)
        if ((int)strlen(s->tab->f[i]->name) > w)
            w = (int)strlen(s->tab->f[i]->name);
    if (fmt == CK_FG_TABLE_MARKDOWN)
        ck__buf_printf(&out, "| Feature | Default | Stage | Since | Until | Locked |\n"
                             "| --- | --- | --- | --- | --- | --- |\n");
    else if (fmt == CK_FG_TABLE_TEXT)
        ck__buf_printf(&out, "%-*s  %-7s  %-10s  %-5s  %-5s  %s\n", w, "FEATURE", "DEFAULT",
                       "STAGE", "SINCE", "UNTIL", "LOCKED");
    for (size_t k = 0; idx && k < s->n; k++) {
        const struct ck__fg_feature *f = s->tab->f[idx[k]];
        if (idx[k] < 2)
            continue; /* AllAlpha/AllBeta are not features to document */
        for (size_t j = 0; j < f->nspecs; j++) {
            const struct ck_fg_spec *sp = &f->given[j];
            ck_fg_version_fmt(sp->version, since, sizeof(since));
            if (j + 1 < f->nspecs) {
                struct ck_fg_version nx = f->given[j + 1].version;
                if (ck_fg_version_cmp(nx, sp->version) == 0)
                    continue; /* same version, min-compat split: show the later */
                ck_fg_version_fmt(nx.minor ? ck_fg_version_sub_minor(nx, 1) : nx, until,
                                  sizeof(until));
            } else {
                snprintf(until, sizeof(until), "-");
            }
            const char *stage = ck_fg_stage_list_name(sp->stage);
            if (fmt == CK_FG_TABLE_JSON) {
                json_t *row =
                    json_pack("{s:s, s:b, s:s, s:s, s:o, s:b}", "name", f->name, "default",
                              sp->default_value, "stage", stage, "since", since, "until",
                              j + 1 < f->nspecs ? json_string(until) : json_null(), "locked",
                              sp->lock_to_default);
                if (!row || json_array_append_new(arr, row) < 0)
                    out.err = CK_FG_ENOMEM;
            } else if (fmt == CK_FG_TABLE_MARKDOWN) {
                ck__buf_printf(&out, "| `%s` | `%s` | %s | %s | %s | %s |\n", f->name,
                               b2s(sp->default_value), stage, since, until,
                               sp->lock_to_default ? "yes" : "no");
            } else {
                ck__buf_printf(&out, "%-*s  %-7s  %-10s  %-5s  %-5s  %s\n", w, f->name,
                               b2s(sp->default_value), stage, since, until,
                               sp->lock_to_default ? "yes" : "no");
            }
        }
    }
    unlock(g);
    if (!idx)
        out.err = CK_FG_ENOMEM;
    free(idx);
    if (fmt == CK_FG_TABLE_JSON) {
        free(out.p);
        char *j = !out.err && arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
        json_decref(arr);
        return j;
    }
    return ck__buf_take(&out);
}
