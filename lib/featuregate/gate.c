/*
 * gate.c - the feature gate: registration (R1-R12), snapshots, setting
 * (S2-S11, D1), emulation versions (V3-V6) and the hot-path read (Q1).
 *
 * Mirrors component-base featuregate's featureGate. Its three maps (M5) live
 * in one immutable snapshot per state: raw (enabledRaw), expl (enabled) and
 * val, the effective value of every feature, which is all ck_fg_enabled()
 * reads. A writer takes g->mu, copies the current snapshot, applies and
 * validates the change and release-stores the new snapshot, or returns an
 * error having published nothing (D1). Snapshots and registration tables are
 * kept until ck_fg_gate_free(), so lock-free readers never see freed memory;
 * the price is memory per successful set, which components pay a few times
 * at start-up.
 *
 * Threading: ck_fg_enabled*, ck_fg_lookup and ck_fg_explicitly_set are
 * lock-free; everything else takes g->mu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct ck_fg_spec spec_prealpha = {.stage = CK_FG_PREALPHA, .has_version = true};

const struct ck__fg_snap *ck__fg_snap(const struct ck_fg_gate *g)
{
    struct ck_fg_gate *mg = (struct ck_fg_gate *)g;
    return atomic_load_explicit(&mg->cur, memory_order_acquire);
}

struct ck_fg_spec ck__fg_spec_at(const struct ck__fg_feature *f, struct ck_fg_version emu,
                                 struct ck_fg_version minc)
{
    for (size_t i = f->nspecs; i-- > 0;) {
        const struct ck_fg_spec *s = &f->specs[i];
        if (ck_fg_version_cmp(s->version, emu) > 0)
            continue;
        if (s->has_min_compat && ck_fg_version_cmp(s->min_compat, minc) > 0)
            continue;
        return *s;
    }
    struct ck_fg_spec p = spec_prealpha;
    p.version = ck_fg_version_mm(0, 0);
    return p;
}

int ck__fg_find(const struct ck__fg_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->f[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static void feature_free(struct ck__fg_feature *f)
{
    if (f) {
        free(f->name);
        free(f->specs);
        free(f->deps);
        free(f);
    }
}

/* A snapshot for table t, copying raw/expl from `from` (NULL: all unset). */
struct ck__fg_snap *ck__fg_snap_new(const struct ck__fg_table *t, const struct ck__fg_snap *from,
                                    struct ck_fg_version emu, struct ck_fg_version minc)
{
    size_t n = t->n;
    struct ck__fg_snap *s = calloc(1, sizeof(*s) + n * 3 + 1);
    if (!s)
        return NULL;
    s->tab = t;
    s->n = n;
    s->emu = emu;
    s->minc = minc;
    s->raw = (int8_t *)(s + 1);
    s->expl = s->raw + n;
    s->val = (bool *)(s->expl + n);
    memset(s->raw, -1, n * 2);
    if (from) {
        memcpy(s->raw, from->raw, from->n);
        memcpy(s->expl, from->expl, from->n);
    }
    return s;
}

static void snap_finish(struct ck__fg_snap *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->val[i] = s->expl[i] >= 0 ? s->expl[i] != 0
                                    : ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).default_value;
}

void ck__fg_publish(struct ck_fg_gate *g, struct ck__fg_snap *s)
{
    snap_finish(s);
    s->older = g->snaps;
    g->snaps = s;
    atomic_store_explicit(&g->cur, s, memory_order_release);
}

/* ---- registration -------------------------------------------------- */

int ck__fg_stage_rank(enum ck_fg_stage s)
{
    switch (s) {
    case CK_FG_ALPHA:
    case CK_FG_PREALPHA:
        return 1;
    case CK_FG_BETA:
        return 2;
    case CK_FG_GA:
        return 3;
    case CK_FG_DEPRECATED:
        return 0;
    }
    return 0;
}

static bool mcv_eq(const struct ck_fg_spec *a, const struct ck_fg_spec *b)
{
    if (a->has_min_compat != b->has_min_compat)
        return false;
    return !a->has_min_compat || ck_fg_version_cmp(a->min_compat, b->min_compat) == 0;
}

/*
 * R5-R10 in Kubernetes' order; the first error wins. Like AddVersioned, a
 * spec is compared with the previous spec as completed by R12 (its
 * MinCompatibilityVersion inherited when unset), and stages and locks only
 * ever move forward, so comparing with the previous spec is the same as
 * remembering whether any earlier one was Beta, GA, Deprecated or locked.
 */
static int validate_specs(const char *name, const struct ck_fg_spec *sp, size_t n,
                          struct ck_fg_err *reterr)
{
    char v1[32], v2[32], m1[32], m2[32];
    struct ck_fg_spec last = {0}; /* sp[i - 1] completed (R12) */

    for (size_t i = 0; i < n; i++) {
        const struct ck_fg_spec *s = &sp[i];
        if (s->stage < CK_FG_ALPHA || s->stage > CK_FG_DEPRECATED)
            return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\" has an invalid stage", name);
        if (!s->has_version)
            return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\" did not provide a version",
                               name);
        ck_fg_version_fmt(s->version, v1, sizeof(v1));
        if (s->version.ncomp != 2)
            return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\" specified patch version: %s",
                               name, v1);
        if (s->has_min_compat) {
            ck_fg_version_fmt(s->min_compat, m1, sizeof(m1));
            if (i == 0 || ck_fg_version_cmp(last.version, s->version) != 0)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" specified MinCompatibilityVersion: %s without a "
                                   "preceding entry at the same Version without "
                                   "MinCompatibilityVersion set",
                                   name, m1);
            if (s->min_compat.ncomp != 2)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" specified patch MinCompatibilityVersion: %s",
                                   name, m1);
            if (ck_fg_version_cmp(s->min_compat, s->version) > 0)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" MinCompatibilityVersion %s greater than "
                                   "Version %s",
                                   name, m1, v1);
        }
        if (i == 0 && s->stage == CK_FG_DEPRECATED && s->version.minor != 0)
            return ck__fg_errf(reterr, CK_FG_EINVAL,
                               "feature \"%s\" introduced as deprecated must provide a 1.0 "
                               "entry indicating initial state",
                               name);
        if (i > 0) {
            ck_fg_version_fmt(last.version, v2, sizeof(v2));
            int c = ck_fg_version_cmp(s->version, last.version);
            if (c < 0) /* R6 */
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" lists version transitions in decreasing order "
                                   "(%s < %s)",
                                   name, v1, v2);
            if (s->has_min_compat && last.has_min_compat &&
                ck_fg_version_cmp(s->min_compat, last.min_compat) < 0)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" lists min compatibility version transitions in "
                                   "decreasing order (%s < %s)",
                                   name, m1, ck_fg_version_fmt(last.min_compat, m2, sizeof(m2)));
            if (c == 0) {
                if (mcv_eq(s, &last)) /* R6 */
                    return ck__fg_errf(reterr, CK_FG_EINVAL,
                                       "feature \"%s\" lists duplicate entries with the same "
                                       "versions (%s = %s)",
                                       name, v1, v2);
                if (s->stage != last.stage) /* R7 */
                    return ck__fg_errf(reterr, CK_FG_EINVAL,
                                       "feature \"%s\" lists stability changes with the same "
                                       "version (%s -> %s)",
                                       name, ck_fg_stage_string(last.stage),
                                       ck_fg_stage_string(s->stage));
                if (s->lock_to_default != last.lock_to_default) /* R7 */
                    return ck__fg_errf(reterr, CK_FG_EINVAL,
                                       "feature \"%s\" lists locked to default changes with the "
                                       "same version (%s -> %s)",
                                       name, last.lock_to_default ? "true" : "false",
                                       s->lock_to_default ? "true" : "false");
            }
            if (s->stage == last.stage && s->default_value == last.default_value &&
                s->lock_to_default == last.lock_to_default) /* R8 */
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" lists transition without stability change "
                                   "(%s -> %s)",
                                   name, v2, v1);
            if (last.lock_to_default && !s->lock_to_default) /* R9 */
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" must not unlock after locking to default", name);
            if (last.stage == CK_FG_DEPRECATED && s->stage != CK_FG_DEPRECATED) /* R10 */
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "deprecated feature \"%s\" must not resurrect from its "
                                   "terminal state",
                                   name);
            if (s->stage != CK_FG_DEPRECATED &&
                ck__fg_stage_rank(s->stage) < ck__fg_stage_rank(last.stage))
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\" regresses stability from more stable level to "
                                   "%s in %s",
                                   name, ck_fg_stage_string(s->stage), v1);
        }
        bool inherit = !s->has_min_compat && i > 0 && last.has_min_compat;
        struct ck_fg_version mcv = last.min_compat;
        last = *s;
        if (inherit) { /* R12 */
            last.has_min_compat = true;
            last.min_compat = mcv;
        }
    }
    return 0;
}

static bool specs_equal(const struct ck_fg_spec *a, const struct ck_fg_spec *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ck_fg_version_cmp(a[i].version, b[i].version) != 0 ||
            a[i].default_value != b[i].default_value ||
            a[i].lock_to_default != b[i].lock_to_default || a[i].stage != b[i].stage ||
            !mcv_eq(&a[i], &b[i]))
            return false;
    }
    return true;
}

/* The existing specs as Go's %v prints them: [{false false ALPHA 0.0 <nil>} ...]. */
static void fmt_specs(const struct ck__fg_feature *f, char *buf, size_t n)
{
    size_t o = 0;
    char v[32], m[32];
    o += (size_t)snprintf(buf, n, "[");
    for (size_t i = 0; i < f->nspecs && o < n; i++) {
        const struct ck_fg_spec *s = &f->specs[i];
        if (s->has_min_compat)
            ck_fg_version_fmt(s->min_compat, m, sizeof(m));
        o += (size_t)snprintf(
            buf + o, n - o, "%s{%s %s %s %s %s}", i ? " " : "", s->default_value ? "true" : "false",
            s->lock_to_default ? "true" : "false", ck_fg_stage_string(s->stage),
            ck_fg_version_fmt(s->version, v, sizeof(v)), s->has_min_compat ? m : "<nil>");
    }
    if (o < n)
        snprintf(buf + o, n - o, "]");
}

/* Appends f to a new table and publishes a snapshot covering it. g->mu held. */
static int append_feature(struct ck_fg_gate *g, struct ck__fg_feature *f)
{
    struct ck__fg_table *old = g->table;
    size_t n = old ? old->n : 0;
    struct ck__fg_table *t = malloc(sizeof(*t) + (n + 1) * sizeof(t->f[0]));
    if (!t)
        return CK_FG_ENOMEM;
    if (n)
        memcpy(t->f, old->f, n * sizeof(t->f[0]));
    t->f[n] = f;
    t->n = n + 1;
    const struct ck__fg_snap *cur = g->snaps;
    struct ck__fg_snap *s = ck__fg_snap_new(t, cur, cur ? cur->emu : ck_fg_version_mm(0, 0),
                                            cur ? cur->minc : ck_fg_version_mm(0, 0));
    if (!s) {
        free(t);
        return CK_FG_ENOMEM;
    }
    t->older = old;
    g->table = t;
    ck__fg_publish(g, s);
    return 0;
}

static int add_locked(struct ck_fg_gate *g, const char *name, const struct ck_fg_spec *specs,
                      size_t nspecs, ck_fg_feature_t *ret, struct ck_fg_err *reterr)
{
    if (!name || nspecs == 0)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\" has no specs", name ? name : "");
    if (g->closed)
        return ck__fg_errf(reterr, CK_FG_EPERM,
                           "cannot add a feature gate after adding it to the flag set");
    int rc = g->legacy ? 0 : validate_specs(name, specs, nspecs, reterr);
    if (rc < 0)
        return rc;
    struct ck_fg_spec *c = malloc(2 * nspecs * sizeof(*c));
    if (!c)
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    memcpy(c, specs, nspecs * sizeof(*c));
    for (size_t i = 1; g->legacy && i < nspecs; i++) { /* before 1.33: sorted, stable */
        struct ck_fg_spec t = c[i];
        size_t j = i;
        for (; j > 0 && ck_fg_version_cmp(c[j - 1].version, t.version) > 0; j--)
            c[j] = c[j - 1];
        c[j] = t;
    }
    for (size_t i = 0; i < nspecs; i++)
        if (!c[i].has_min_compat)
            c[i].min_compat = ck_fg_version_mm(0, 0);
    memcpy(c + nspecs, c, nspecs * sizeof(*c));
    for (size_t i = 1; i < nspecs; i++) { /* R12 */
        if (!c[i].has_min_compat && c[i - 1].has_min_compat) {
            c[i].has_min_compat = true;
            c[i].min_compat = c[i - 1].min_compat;
        }
    }
    for (size_t i = 0; i < nspecs; i++)
        if (!c[i].has_min_compat)
            c[i].min_compat = ck_fg_version_mm(0, 0);
    int idx = g->table ? ck__fg_find(g->table, name) : -1;
    if (idx >= 0) {
        const struct ck__fg_feature *old = g->table->f[idx];
        bool same = old->nspecs == nspecs && specs_equal(old->specs, c, nspecs);
        free(c);
        if (same) { /* R4: identical re-add is a no-op */
            if (ret)
                *ret = (ck_fg_feature_t)idx;
            return 0;
        }
        char buf[400];
        fmt_specs(old, buf, sizeof(buf));
        return ck__fg_errf(reterr, CK_FG_EEXIST,
                           "feature gate \"%s\" with different spec already exists: %s", name, buf);
    }
    struct ck__fg_feature *f = calloc(1, sizeof(*f));
    if (!f || !(f->name = strdup(name))) {
        free(f);
        free(c);
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    }
    f->specs = c;
    f->given = c + nspecs;
    f->nspecs = nspecs;
    size_t n = g->table ? g->table->n : 0;
    if (append_feature(g, f) < 0) {
        feature_free(f);
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    }
    if (ret)
        *ret = (ck_fg_feature_t)n;
    return 0;
}

int ck_fg_add_versioned(struct ck_fg_gate *g, const char *name, const struct ck_fg_spec *specs,
                        size_t nspecs, ck_fg_feature_t *ret, struct ck_fg_err *reterr)
{
    pthread_mutex_lock(&g->mu);
    int rc = add_locked(g, name, specs, nspecs, ret, reterr);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int ck_fg_add(struct ck_fg_gate *g, const char *name, struct ck_fg_spec spec, ck_fg_feature_t *ret,
              struct ck_fg_err *reterr)
{
    spec.version = ck_fg_version_mm(0, 0); /* R1 */
    spec.has_version = true;
    spec.has_min_compat = false;
    return ck_fg_add_versioned(g, name, &spec, 1, ret, reterr);
}

void ck__fg_set_legacy_registration(struct ck_fg_gate *g, bool on)
{
    pthread_mutex_lock(&g->mu);
    g->legacy = on;
    pthread_mutex_unlock(&g->mu);
}

void ck_fg_close(struct ck_fg_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->closed = true;
    pthread_mutex_unlock(&g->mu);
}

struct ck_fg_gate *ck_fg_gate_new(struct ck_fg_version emulated)
{
    struct ck_fg_gate *g = aligned_alloc(_Alignof(struct ck_fg_gate), sizeof(*g));
    if (!g)
        return NULL;
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    struct ck_fg_spec alpha = {.has_version = true, .stage = CK_FG_ALPHA};
    struct ck_fg_spec beta = {.has_version = true, .stage = CK_FG_BETA};
    if (ck_fg_add(g, "AllAlpha", alpha, NULL, NULL) < 0 ||
        ck_fg_add(g, "AllBeta", beta, NULL, NULL) < 0)
        return ck_fg_gate_free(g);
    struct ck__fg_snap *s = g->snaps;
    s->emu = ck_fg_version_mm(emulated.major, emulated.minor);
    s->minc = ck_fg_version_sub_minor(s->emu, 1);
    return g;
}

struct ck_fg_gate *ck_fg_gate_free(struct ck_fg_gate *g)
{
    if (!g)
        return NULL;
    while (g->snaps) {
        struct ck__fg_snap *s = g->snaps;
        g->snaps = s->older;
        free(s);
    }
    if (g->table)
        for (size_t i = 0; i < g->table->n; i++)
            feature_free(g->table->f[i]);
    while (g->table) {
        struct ck__fg_table *t = g->table;
        g->table = t->older;
        free(t);
    }
    pthread_mutex_destroy(&g->mu);
    free(g);
    return NULL;
}

void ck_fg_set_logger(struct ck_fg_gate *g, ck_fg_log_fn fn, void *userdata)
{
    pthread_mutex_lock(&g->mu);
    g->log = fn;
    g->log_ud = userdata;
    pthread_mutex_unlock(&g->mu);
}

/* ---- setting ------------------------------------------------------- */

/*
 * Applies s->raw on top of s->expl at s's versions (S2-S11). Collects lock
 * and PreAlpha errors (S6) into reterr; returns 0 or the error code.
 */
static int resolve(struct ck__fg_snap *s, struct ck_fg_err *reterr)
{
    struct ck__buf errs = {0};
    int nerr = 0;
    char e[32], m[32];

    ck_fg_version_fmt(s->emu, e, sizeof(e));
    ck_fg_version_fmt(s->minc, m, sizeof(m));
    for (size_t i = 0; i < s->n; i++) {
        if (s->raw[i] < 0)
            continue;
        bool v = s->raw[i] != 0;
        struct ck_fg_spec sp = ck__fg_spec_at(s->tab->f[i], s->emu, s->minc);
        const char *name = s->tab->f[i]->name;
        if (sp.lock_to_default && sp.default_value != v) {
            ck__buf_printf(&errs, "%scannot set feature gate %s to %s, feature is locked to %s",
                           nerr ? ", " : "", name, v ? "true" : "false",
                           sp.default_value ? "true" : "false");
            nerr++;
        }
        if (sp.stage == CK_FG_PREALPHA) {
            ck__buf_printf(&errs,
                           "%scannot set feature gate %s to %s, feature is PreAlpha at "
                           "emulated version %s, min compatibility version %s",
                           nerr ? ", " : "", name, v ? "true" : "false", e, m);
            nerr++;
        }
        s->expl[i] = (int8_t)v;
    }
    for (int bulk = 0; bulk < 2; bulk++) { /* S8: fill only gates without a value */
        int8_t v = s->raw[bulk];
        enum ck_fg_stage want = bulk == 0 ? CK_FG_ALPHA : CK_FG_BETA;
        if (v < 0)
            continue;
        for (size_t i = 2; i < s->n; i++)
            if (s->expl[i] < 0 && ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).stage == want)
                s->expl[i] = v;
    }
    if (!nerr) {
        free(errs.p);
        return ck__fg_check_deps(s, reterr); /* S12, only when the values are valid */
    }
    char *msg = ck__buf_take(&errs);
    int rc = ck__fg_errf(reterr, CK_FG_EINVAL, nerr > 1 ? "[%s]" : "%s", msg ? msg : "errors");
    free(msg);
    return rc;
}

static void log_set_warnings(const struct ck_fg_gate *g, const struct ck__fg_snap *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->raw[i] < 0)
            continue;
        enum ck_fg_stage st = ck__fg_spec_at(s->tab->f[i], s->emu, s->minc).stage;
        if (st == CK_FG_GA || st == CK_FG_DEPRECATED) /* O3 */
            ck__fg_logf(g, 0,
                        "Warning: setting %s feature gate. It will be removed in a future "
                        "release. featureGate=\"%s\" value=%s",
                        st == CK_FG_GA ? "GA" : "deprecated", s->tab->f[i]->name,
                        s->raw[i] ? "true" : "false");
    }
}

static void log_updated(const struct ck_fg_gate *g)
{
    if (!g->log)
        return;
    char *str = ck_fg_string(g);
    ck__fg_logf(g, 1, "Updated featureGates=\"%s\"", str ? str : "");
    free(str);
}

int ck_fg_set_from_map(struct ck_fg_gate *g, const struct ck_fg_pair *pairs, size_t n,
                       struct ck_fg_err *reterr)
{
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *cur = g->snaps;
    struct ck__fg_snap *s = ck__fg_snap_new(cur->tab, cur, cur->emu, cur->minc);
    int rc;
    if (!s) {
        rc = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out_unlock;
    }
    for (size_t i = 0; i < n; i++) {
        int idx = ck__fg_find(s->tab, pairs[i].name);
        if (idx < 0) { /* S3: returns at once */
            rc = ck__fg_errf(reterr, CK_FG_ENOENT, "unrecognized feature gate: %s", pairs[i].name);
            goto out_free;
        }
        s->raw[idx] = (int8_t)pairs[i].value;
    }
    rc = resolve(s, reterr);
    if (rc < 0)
        goto out_free; /* D1: nothing recorded */
    log_set_warnings(g, s);
    if (memcmp(s->raw, cur->raw, s->n) == 0 && memcmp(s->expl, cur->expl, s->n) == 0)
        free(s); /* nothing changed: keep the current snapshot, spend no memory */
    else
        ck__fg_publish(g, s);
    pthread_mutex_unlock(&g->mu);
    log_updated(g);
    return 0;
out_free:
    free(s);
out_unlock:
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int ck_fg_set(struct ck_fg_gate *g, const char *str, struct ck_fg_err *reterr)
{
    struct ck_fg_pair *pairs;
    size_t n;
    char *buf;
    int rc = ck_fg_parse_pairs(str, &pairs, &n, &buf, reterr);
    if (rc < 0)
        return rc;
    rc = ck_fg_set_from_map(g, pairs, n, reterr);
    free(pairs);
    free(buf);
    return rc;
}

/* Re-resolves the current raw input at (emu, minc) into a fresh snapshot. */
static struct ck__fg_snap *rebuild(const struct ck__fg_snap *cur, struct ck_fg_version emu,
                                   struct ck_fg_version minc, struct ck_fg_err *reterr, int *rc)
{
    struct ck__fg_snap *s = ck__fg_snap_new(cur->tab, NULL, emu, minc);
    if (!s) {
        *rc = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(s->raw, cur->raw, cur->n);
    *rc = resolve(s, reterr);
    if (*rc < 0) {
        free(s);
        return NULL;
    }
    return s;
}

int ck_fg_set_versions(struct ck_fg_gate *g, struct ck_fg_version emulated,
                       struct ck_fg_version min_compat, struct ck_fg_err *reterr)
{
    struct ck_fg_version emu = ck_fg_version_mm(emulated.major, emulated.minor);
    struct ck_fg_version minc = ck_fg_version_mm(min_compat.major, min_compat.minor);
    int rc = 0;
    char e[32], m[32];

    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *cur = g->snaps;
    if (ck_fg_version_cmp(cur->emu, emu) == 0 && ck_fg_version_cmp(cur->minc, minc) == 0)
        goto out_unlock; /* V6: same versions, no-op */
    struct ck__fg_snap *s = rebuild(cur, emu, minc, reterr, &rc);
    if (!s)
        goto out_unlock;
    snap_finish(s);
    for (size_t i = 0; i < s->n; i++)
        if (s->val[i] != cur->val[i])
            ck__fg_logf(g, 0,
                        "Warning: SetEmulationVersionAndMinCompatibilityVersion will change "
                        "already queried feature featureGate=\"%s\" oldValue=%s newValue=%s",
                        s->tab->f[i]->name, cur->val[i] ? "true" : "false",
                        s->val[i] ? "true" : "false");
    ck__fg_publish(g, s);
    ck__fg_logf(g, 1,
                "Set feature gate emulation emulationVersion=\"%s\" minCompatibilityVersion=\"%s\"",
                ck_fg_version_fmt(emu, e, sizeof(e)), ck_fg_version_fmt(minc, m, sizeof(m)));
out_unlock:
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int ck_fg_set_emulation_version(struct ck_fg_gate *g, struct ck_fg_version emulated,
                                struct ck_fg_err *reterr)
{
    return ck_fg_set_versions(g, emulated, ck_fg_version_sub_minor(emulated, 1), reterr);
}

struct ck_fg_version ck_fg_emulation_version(struct ck_fg_gate *g)
{
    return ck__fg_snap(g)->emu;
}

struct ck_fg_version ck_fg_min_compat_version(struct ck_fg_gate *g)
{
    return ck__fg_snap(g)->minc;
}

int ck_fg_validate(struct ck_fg_gate *g, struct ck_fg_err *reterr)
{
    int rc = 0;
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *cur = g->snaps;
    free(rebuild(cur, cur->emu, cur->minc, reterr, &rc));
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int ck_fg_reset_to_default(struct ck_fg_gate *g, const char *name, struct ck_fg_err *reterr)
{
    int rc = 0;
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *cur = g->snaps;
    int idx = ck__fg_find(cur->tab, name);
    if (idx < 0) {
        rc = ck__fg_errf(reterr, CK_FG_ENOENT, "unrecognized feature gate: %s", name);
        goto out_unlock;
    }
    if (cur->raw[idx] >= 0 && cur->expl[idx] < 0) {
        rc = ck__fg_errf(reterr, CK_FG_EINVAL,
                         "feature:%s was explicitly set, but not in enabled map", name);
        goto out_unlock;
    }
    struct ck__fg_snap *s = ck__fg_snap_new(cur->tab, cur, cur->emu, cur->minc);
    if (!s) {
        rc = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out_unlock;
    }
    s->raw[idx] = -1;
    s->expl[idx] = -1;
    ck__fg_publish(g, s);
out_unlock:
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* S13 at (emu, minc); at_current: the gate's own versions, read under the lock. */
static int override_default(struct ck_fg_gate *g, const char *name, bool value, bool at_current,
                            struct ck_fg_version emu, struct ck_fg_version minc,
                            struct ck_fg_err *reterr)
{
    int rc = 0;
    char e[32];
    pthread_mutex_lock(&g->mu);
    const struct ck__fg_snap *cur = g->snaps;
    if (at_current) {
        emu = cur->emu;
        minc = cur->minc;
    }
    if (g->closed) {
        rc = ck__fg_errf(reterr, CK_FG_EPERM,
                         "cannot override default for feature \"%s\": gates already added to a "
                         "flag set",
                         name);
        goto out_unlock;
    }
    int idx = ck__fg_find(cur->tab, name);
    if (idx < 0) {
        rc = ck__fg_errf(reterr, CK_FG_ENOENT,
                         "cannot override default: feature \"%s\" is not registered", name);
        goto out_unlock;
    }
    struct ck__fg_feature *f = cur->tab->f[idx];
    struct ck_fg_spec *sp = NULL;
    for (size_t i = f->nspecs; i-- > 0;) {
        struct ck_fg_spec *c = &f->specs[i];
        if (ck_fg_version_cmp(c->version, emu) <= 0 &&
            (!c->has_min_compat || ck_fg_version_cmp(c->min_compat, minc) <= 0)) {
            sp = c;
            break;
        }
    }
    if (!sp) {
        rc = ck__fg_errf(reterr, CK_FG_EINVAL,
                         "cannot override default: feature \"%s\" is not available before "
                         "version %s",
                         name, ck_fg_version_fmt(emu, e, sizeof(e)));
        goto out_unlock;
    }
    if (sp->lock_to_default) {
        rc = ck__fg_errf(reterr, CK_FG_EPERM,
                         "cannot override default: feature \"%s\" default is locked to %s", name,
                         sp->default_value ? "true" : "false");
        goto out_unlock;
    }
    if (sp->stage == CK_FG_GA || sp->stage == CK_FG_DEPRECATED)
        ck__fg_logf(g, 0,
                    "Warning: overriding default of %s feature gate. It will be removed in a "
                    "future release. featureGate=\"%s\" value=%s",
                    sp->stage == CK_FG_GA ? "GA" : "deprecated", name, value ? "true" : "false");
    struct ck__fg_snap *s = ck__fg_snap_new(cur->tab, cur, cur->emu, cur->minc);
    if (!s) {
        rc = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        goto out_unlock;
    }
    /* Registration data is only read under g->mu; readers see the new snapshot. */
    sp->default_value = value;
    f->given[sp - f->specs].default_value = value;
    ck__fg_publish(g, s);
out_unlock:
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int ck_fg_override_default(struct ck_fg_gate *g, const char *name, bool value,
                           struct ck_fg_err *reterr)
{
    struct ck_fg_version none = {0};
    return override_default(g, name, value, true, none, none, reterr);
}

int ck_fg_override_default_at(struct ck_fg_gate *g, const char *name, bool value,
                              struct ck_fg_version version, struct ck_fg_err *reterr)
{
    struct ck_fg_version v = ck_fg_version_mm(version.major, version.minor);
    return override_default(g, name, value, false, v, ck_fg_version_sub_minor(v, 1), reterr);
}

/* ---- reading ------------------------------------------------------- */

static void die_unknown(const char *what)
{
    fprintf(stderr, "featuregate: feature %s is not registered in FeatureGate\n", what);
    abort();
}

bool ck_fg_enabled(const struct ck_fg_gate *g, ck_fg_feature_t f)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    if (__builtin_expect(f >= s->n, 0)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "#%u", f);
        die_unknown(buf);
    }
    return s->val[f];
}

void ck_fg_enabled_many(const struct ck_fg_gate *g, const ck_fg_feature_t *fs, size_t n, bool *out)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    for (size_t i = 0; i < n; i++) {
        if (fs[i] >= s->n)
            die_unknown("handle");
        out[i] = s->val[fs[i]];
    }
}

bool ck_fg_enabled_name(const struct ck_fg_gate *g, const char *name)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    int idx = ck__fg_find(s->tab, name);
    if (idx < 0) {
        char q[160];
        ck__quote(name, q, sizeof(q));
        die_unknown(q);
    }
    return s->val[idx];
}

int ck_fg_lookup(const struct ck_fg_gate *g, const char *name, ck_fg_feature_t *ret)
{
    int idx = ck__fg_find(ck__fg_snap(g)->tab, name);
    if (idx < 0)
        return CK_FG_ENOENT;
    if (ret)
        *ret = (ck_fg_feature_t)idx;
    return 0;
}

bool ck_fg_explicitly_set(const struct ck_fg_gate *g, const char *name)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    int idx = ck__fg_find(s->tab, name);
    return idx >= 0 && s->raw[idx] >= 0;
}

size_t ck_fg_count(const struct ck_fg_gate *g)
{
    return ck__fg_snap(g)->n;
}

const char *ck_fg_name(const struct ck_fg_gate *g, ck_fg_feature_t f)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    if (f >= s->n)
        die_unknown("handle");
    return s->tab->f[f]->name;
}

struct ck_fg_spec ck_fg_spec_in_effect(const struct ck_fg_gate *g, ck_fg_feature_t f)
{
    struct ck_fg_gate *mg = (struct ck_fg_gate *)g;
    pthread_mutex_lock(&mg->mu);
    const struct ck__fg_snap *s = g->snaps;
    if (f >= s->n)
        die_unknown("handle");
    struct ck_fg_spec sp = ck__fg_spec_at(s->tab->f[f], s->emu, s->minc);
    pthread_mutex_unlock(&mg->mu);
    return sp;
}

const struct ck_fg_spec *ck_fg_specs(const struct ck_fg_gate *g, ck_fg_feature_t f, size_t *ret_n)
{
    const struct ck__fg_snap *s = ck__fg_snap(g);
    if (f >= s->n)
        die_unknown("handle");
    *ret_n = s->tab->f[f]->nspecs;
    return s->tab->f[f]->given;
}

struct ck_fg_gate *ck_fg_copy(const struct ck_fg_gate *g, bool reset)
{
    struct ck_fg_gate *mg = (struct ck_fg_gate *)g;
    pthread_mutex_lock(&mg->mu);
    const struct ck__fg_snap *cur = g->snaps;
    struct ck_fg_gate *c = ck_fg_gate_new(cur->emu);
    if (!c)
        goto out_unlock;
    c->legacy = g->legacy;
    for (size_t i = 2; i < cur->n; i++) {
        const struct ck__fg_feature *f = cur->tab->f[i];
        if (add_locked(c, f->name, f->given, f->nspecs, NULL, NULL) < 0) {
            c = ck_fg_gate_free(c);
            goto out_unlock;
        }
    }
    for (size_t i = 2; !reset && i < cur->n; i++) { /* Q5: dependencies, not on reset */
        const struct ck__fg_feature *f = cur->tab->f[i];
        struct ck__fg_feature *cf = c->table->f[i];
        if (!f->ndeps)
            continue;
        cf->deps = malloc(f->ndeps * sizeof(*cf->deps));
        if (!cf->deps) {
            c = ck_fg_gate_free(c);
            goto out_unlock;
        }
        memcpy(cf->deps, f->deps, f->ndeps * sizeof(*cf->deps));
        cf->ndeps = f->ndeps;
    }
    struct ck__fg_snap *s = ck__fg_snap_new(c->table, reset ? NULL : cur, cur->emu, cur->minc);
    if (!s) {
        c = ck_fg_gate_free(c);
        goto out_unlock;
    }
    ck__fg_publish(c, s);
    c->closed = reset ? false : g->closed;
    c->log = g->log;
    c->log_ud = g->log_ud;
out_unlock:
    pthread_mutex_unlock(&mg->mu);
    return c;
}
