/*
 * upgrade.c - the pre-upgrade check: which feature-gate settings will stop a
 * component from starting at the target version, and which effective values
 * change between the running version and the target although the settings
 * do not.
 *
 * Design: nothing here decides what Kubernetes accepts. Each side (the
 * running version with the old list, the target with the new list) is a
 * real gate built from the list at binary = emulated version and min
 * compatibility one minor below, as a component started without emulation
 * flags. Every setting is first tried alone on a fresh copy of that gate
 * with ck_fg_set_from_map(), so each gets Kubernetes' own verdict and text
 * ("unrecognized feature gate: X", "cannot set feature gate X to false,
 * feature is locked to true", the PreAlpha error); the accepted ones are
 * then applied together in one call, as the component would, and the
 * effective values of the two sides are compared. The verdict is only
 * classified afterwards (unknown name, PreAlpha, lock) for the report.
 *
 * Settings are merged per gate name with the precedence of
 * ck_fg_apply_sources(): config files in order, then the --feature-gates
 * values joined (last wins per name); each remembers where it came from.
 * A flag piece or a featureGates value that does not parse becomes an
 * "Invalid" finding instead of failing the whole check.
 *
 * Two allowances for the lists Kubernetes published: a side below 1.33
 * registers its list as component-base then did (sorted, unchecked: the
 * 1.32 list breaks rules added in 1.33), and a gate the old list lacks but
 * the new list records as existing at the old version (releases up to 1.32
 * kept component-base gates in a separate unversioned list) takes the value
 * that history gives instead of being reported as new.
 *
 * Threading: pure computation on gates it owns; callable from any thread.
 * Mirrors no single Kubernetes file: it replays component-base featuregate
 * (SetFromMap, the lifecycle rules of test/compatibility_lifecycle) at two
 * versions.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* One merged setting: the last value given for a name, and where. */
struct setting {
    char *name;
    bool value;
    char *source;
};

/* Verdict of one setting at one side. */
enum verdict { OK, UNKNOWN, PREALPHA, LOCKED, REJECTED };

struct side {
    struct ck_fg_gate *g; /* the list, with every accepted setting applied */
    struct ck_fg_version v;
    enum verdict *verdict; /* per setting */
    char **msg;            /* per setting, the library's error text (or NULL) */
};

struct findings {
    struct ck_fg_upgrade_finding *v;
    size_t n, cap;
};

struct check {
    struct setting *set;
    size_t nset, capset;
    struct findings invalid; /* parse failures, collected before evaluation */
    int rc;                  /* CK_FG_ENOMEM once an allocation failed */
};

static char *dup_or_fail(struct check *c, const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        c->rc = CK_FG_ENOMEM;
    return d;
}

static char *fmt_dup(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fmt_dup(struct check *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return dup_or_fail(c, buf);
}

/* Appends a finding; takes ownership of message (may be NULL after a failed allocation). */
static void add_finding(struct check *c, struct findings *f, const char *gate, const char *reason,
                        char *message, const char *source, bool from, bool to)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        struct ck_fg_upgrade_finding *nv = realloc(f->v, cap * sizeof(*nv));
        if (!nv) {
            free(message);
            c->rc = CK_FG_ENOMEM;
            return;
        }
        f->v = nv;
        f->cap = cap;
    }
    struct ck_fg_upgrade_finding *x = &f->v[f->n++];
    x->gate = dup_or_fail(c, gate);
    x->reason = reason;
    x->message = message ? message : dup_or_fail(c, "");
    x->source = dup_or_fail(c, source);
    x->from = from;
    x->to = to;
}

static void findings_release(struct ck_fg_upgrade_finding *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].gate);
        free(v[i].message);
        free(v[i].source);
    }
    free(v);
}

/* Records name=value from source; a later setting of the same name replaces it. */
static void put_setting(struct check *c, const char *name, bool value, const char *source)
{
    for (size_t i = 0; i < c->nset; i++) {
        if (strcmp(c->set[i].name, name) == 0) {
            char *s = dup_or_fail(c, source);
            if (!s)
                return;
            free(c->set[i].source);
            c->set[i].source = s;
            c->set[i].value = value;
            return;
        }
    }
    if (c->nset == c->capset) {
        size_t cap = c->capset ? c->capset * 2 : 16;
        struct setting *ns = realloc(c->set, cap * sizeof(*ns));
        if (!ns) {
            c->rc = CK_FG_ENOMEM;
            return;
        }
        c->set = ns;
        c->capset = cap;
    }
    struct setting *s = &c->set[c->nset];
    s->name = dup_or_fail(c, name);
    s->source = dup_or_fail(c, source);
    s->value = value;
    if (s->name && s->source)
        c->nset++;
    else {
        free(s->name);
        free(s->source);
    }
}

struct bad_ctx {
    struct check *c;
    const char *source;
};

static void config_bad(void *ud, const char *name, const char *msg)
{
    struct bad_ctx *b = ud;
    add_finding(b->c, &b->c->invalid, name, "Invalid", dup_or_fail(b->c, msg), b->source, false,
                false);
}

static int read_config(struct check *c, const char *path, struct ck_fg_err *reterr)
{
    char *data;
    size_t len, n;
    struct ck_fg_pair *pairs;
    char *buf;
    struct bad_ctx b = {c, path};
    int rc = ck__fg_read_file(path, &data, &len, reterr);
    if (rc < 0)
        return rc;
    rc = ck__fg_config_parse_each(data, len, config_bad, &b, &pairs, &n, &buf, reterr);
    free(data);
    if (rc < 0) {
        char tmp[sizeof(reterr->msg)];
        snprintf(tmp, sizeof(tmp), "%s", reterr ? reterr->msg : "");
        return ck__fg_errf(reterr, rc, "%s: %s", path, tmp);
    }
    for (size_t i = 0; i < n; i++)
        put_setting(c, pairs[i].name, pairs[i].value, path);
    free(pairs);
    free(buf);
    return 0;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/*
 * One --feature-gates value, piece by piece, each through the library's
 * parser: a piece that fails is an Invalid finding named by its trimmed
 * text before '=', the others are settings.
 */
static void read_flag(struct check *c, const char *value, const char *source)
{
    const char *piece = value;
    for (;;) {
        const char *end = strchr(piece, ',');
        size_t len = end ? (size_t)(end - piece) : strlen(piece);
        char *one = len ? strndup(piece, len) : NULL;
        if (len && !one) {
            c->rc = CK_FG_ENOMEM;
            return;
        }
        if (one) {
            struct ck_fg_pair *pairs;
            size_t n;
            char *buf;
            struct ck_fg_err err = {0};
            if (ck_fg_parse_pairs(one, &pairs, &n, &buf, &err) < 0) {
                if (err.code == CK_FG_ENOMEM) {
                    c->rc = CK_FG_ENOMEM;
                    free(one);
                    return;
                }
                char *b = one, *e = strchr(one, '=');
                if (!e)
                    e = one + len;
                while (b < e && is_space(*b))
                    b++;
                while (e > b && is_space(e[-1]))
                    e--;
                *e = '\0';
                add_finding(c, &c->invalid, b, "Invalid", dup_or_fail(c, err.msg), source, false,
                            false);
            } else {
                for (size_t i = 0; i < n; i++)
                    put_setting(c, pairs[i].name, pairs[i].value, source);
                free(pairs);
                free(buf);
            }
            free(one);
        }
        if (!end)
            return;
        piece = end + 1;
    }
}

static void side_release(struct side *s, size_t nset)
{
    ck_fg_gate_free(s->g);
    for (size_t i = 0; s->msg && i < nset; i++)
        free(s->msg[i]);
    free(s->msg);
    free(s->verdict);
}

/* Why a single-pair set failed, from the gate's own view of the name. */
static enum verdict classify(const struct ck_fg_gate *g, const struct setting *st, int rc)
{
    ck_fg_feature_t f;
    if (rc == CK_FG_ENOENT || ck_fg_lookup(g, st->name, &f) < 0)
        return UNKNOWN;
    struct ck_fg_spec sp = ck_fg_spec_in_effect(g, f);
    if (sp.stage == CK_FG_PREALPHA)
        return PREALPHA;
    if (sp.lock_to_default && sp.default_value != st->value)
        return LOCKED;
    return REJECTED;
}

/*
 * Builds one side: loads list at version v, tries each setting alone on a
 * fresh copy, then applies the accepted ones in one call.
 */
static int side_build(struct check *c, struct side *s, const char *list, struct ck_fg_version v,
                      struct ck_fg_err *reterr)
{
    struct ck_fg_err err = {0};
    int rc;
    s->v = ck_fg_version_mm(v.major, v.minor);
    s->g = ck_fg_gate_new(s->v);
    s->verdict = calloc(c->nset + 1, sizeof(*s->verdict));
    s->msg = calloc(c->nset + 1, sizeof(*s->msg));
    struct ck_fg_pair *ok = calloc(c->nset + 1, sizeof(*ok));
    size_t nok = 0;
    if (!s->g || !s->verdict || !s->msg || !ok) {
        free(ok);
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    }
    if (ck_fg_version_cmp(s->v, ck_fg_version_mm(1, 33)) < 0)
        ck__fg_set_legacy_registration(s->g, true); /* as that release loaded its list */
    rc = ck_fg_list_load(s->g, list, &err);
    if (rc < 0) {
        free(ok);
        if (rc == CK_FG_ENOMEM)
            return ck__fg_errf(reterr, rc, "out of memory");
        return ck__fg_errf(reterr, rc, "%s: %s", list, err.msg);
    }
    for (size_t i = 0; i < c->nset; i++) {
        struct ck_fg_pair p = {c->set[i].name, c->set[i].value};
        struct ck_fg_gate *t = ck_fg_copy(s->g, true);
        if (!t) {
            free(ok);
            return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        }
        rc = ck_fg_set_from_map(t, &p, 1, &err);
        if (rc == CK_FG_ENOMEM) {
            ck_fg_gate_free(t);
            free(ok);
            return ck__fg_errf(reterr, rc, "out of memory");
        }
        if (rc < 0) {
            s->verdict[i] = classify(t, &c->set[i], rc);
            s->msg[i] = dup_or_fail(c, err.msg);
        } else {
            ok[nok++] = p;
        }
        ck_fg_gate_free(t);
    }
    rc = ck_fg_set_from_map(s->g, ok, nok, &err);
    free(ok);
    if (rc < 0) /* each was accepted alone; only a dependency (S12) can fail them together */
        return ck__fg_errf(reterr, rc, "at %u.%u: %s", s->v.major, s->v.minor, err.msg);
    return c->rc < 0 ? ck__fg_errf(reterr, c->rc, "out of memory") : 0;
}

/* Does g know name at its version (registered and not PreAlpha)? */
static bool knows(const struct ck_fg_gate *g, const char *name, ck_fg_feature_t *ret)
{
    ck_fg_feature_t f;
    if (ck_fg_lookup(g, name, &f) < 0 || ck_fg_spec_in_effect(g, f).stage == CK_FG_PREALPHA)
        return false;
    if (ret)
        *ret = f;
    return true;
}

/* "GA, locked to true" / "Beta, default false" for the spec in effect. */
static void describe(const struct ck_fg_gate *g, ck_fg_feature_t f, char *buf, size_t n)
{
    struct ck_fg_spec sp = ck_fg_spec_in_effect(g, f);
    snprintf(buf, n, "%s, %s %s", ck_fg_stage_list_name(sp.stage),
             sp.lock_to_default ? "locked to" : "default", sp.default_value ? "true" : "false");
}

/* The version of the first locked spec of f that is in effect by the gate's version. */
static bool locked_since(const struct ck_fg_gate *g, ck_fg_feature_t f, struct ck_fg_version at,
                         struct ck_fg_version *ret)
{
    size_t n;
    const struct ck_fg_spec *sp = ck_fg_specs(g, f, &n);
    for (size_t i = 0; i < n; i++) {
        if (sp[i].lock_to_default && ck_fg_version_cmp(sp[i].version, at) <= 0) {
            *ret = sp[i].version;
            return true;
        }
    }
    return false;
}

static const struct setting *find_setting(const struct check *c, const char *name, size_t *ret_i)
{
    for (size_t i = 0; i < c->nset; i++) {
        if (strcmp(c->set[i].name, name) == 0) {
            if (ret_i)
                *ret_i = i;
            return &c->set[i];
        }
    }
    return NULL;
}

static void blocking(struct check *c, struct findings *out, const struct side *from,
                     const struct side *to)
{
    char v[32], d[96];
    for (size_t i = 0; i < c->nset; i++) {
        const struct setting *st = &c->set[i];
        ck_fg_feature_t f;
        switch (to->verdict[i]) {
        case OK:
            break;
        case UNKNOWN:
        case PREALPHA:
            if (knows(from->g, st->name, &f)) {
                describe(from->g, f, d, sizeof(d));
                add_finding(c, out, st->name, "Removed",
                            fmt_dup(c, "%s (%s knows it: %s)", to->msg[i],
                                    ck_fg_version_fmt(from->v, v, sizeof(v)), d),
                            st->source, false, false);
            } else {
                add_finding(c, out, st->name, "Unknown", dup_or_fail(c, to->msg[i]), st->source,
                            false, false);
            }
            break;
        case LOCKED: {
            struct ck_fg_version since;
            if (ck_fg_lookup(to->g, st->name, &f) == 0 && locked_since(to->g, f, to->v, &since))
                add_finding(c, out, st->name, "Locked",
                            fmt_dup(c, "%s (locked since %s)", to->msg[i],
                                    ck_fg_version_fmt(since, v, sizeof(v))),
                            st->source, false, false);
            else
                add_finding(c, out, st->name, "Locked", dup_or_fail(c, to->msg[i]), st->source,
                            false, false);
            break;
        }
        case REJECTED:
            add_finding(c, out, st->name, "Invalid", dup_or_fail(c, to->msg[i]), st->source, false,
                        false);
            break;
        }
    }
}

/*
 * The setting behind a gate's value at a side that is not set by name:
 * AllAlpha for an Alpha gate, AllBeta for a Beta gate, when accepted.
 */
static const struct setting *bulk_for(const struct check *c, const struct side *s,
                                      ck_fg_feature_t f)
{
    enum ck_fg_stage st = ck_fg_spec_in_effect(s->g, f).stage;
    const char *bulk = st == CK_FG_ALPHA ? "AllAlpha" : st == CK_FG_BETA ? "AllBeta" : NULL;
    size_t i;
    const struct setting *set = bulk ? find_setting(c, bulk, &i) : NULL;
    return set && s->verdict[i] == OK ? set : NULL;
}

/* How a side arrives at its value: "set by X", "AllBeta=true", or the spec. */
static void cause(const struct check *c, const struct side *s, ck_fg_feature_t f, char *buf,
                  size_t n)
{
    char d[96];
    const char *name = ck_fg_name(s->g, f);
    size_t i;
    const struct setting *set = find_setting(c, name, &i);
    const struct setting *bulk = bulk_for(c, s, f);
    describe(s->g, f, d, sizeof(d));
    if (set && s->verdict[i] == OK)
        snprintf(buf, n, "%s; set to %s", d, set->value ? "true" : "false");
    else if (bulk)
        snprintf(buf, n, "%s; %s=%s applies", d, bulk->name, bulk->value ? "true" : "false");
    else
        snprintf(buf, n, "%s", d);
}

static void changes(struct check *c, struct findings *out, const struct side *from,
                    const struct side *to)
{
    char vf[32], vt[32], cf[200], ct[200];
    ck_fg_version_fmt(from->v, vf, sizeof(vf));
    ck_fg_version_fmt(to->v, vt, sizeof(vt));
    size_t n = ck_fg_count(to->g);
    for (ck_fg_feature_t f = 2; f < n; f++) { /* AllAlpha and AllBeta are settings, not behaviour */
        const char *name = ck_fg_name(to->g, f);
        size_t si;
        const struct setting *set = find_setting(c, name, &si);
        ck_fg_feature_t ff;
        if (!knows(to->g, name, NULL) || (set && to->verdict[si] != OK))
            continue; /* unknown at the target, or already blocking */
        bool vto = ck_fg_enabled(to->g, f);
        bool known_before = knows(from->g, name, &ff);
        bool vfrom = known_before && ck_fg_enabled(from->g, ff);
        struct ck_fg_spec hist = {.stage = CK_FG_PREALPHA};
        if (!known_before) /* the old list lacks it: what the new list records for `from` */
            hist = ck__fg_spec_at(ck__fg_snap(to->g)->tab->f[f], from->v,
                                  ck_fg_version_sub_minor(from->v, 1));
        if (hist.stage != CK_FG_PREALPHA)
            vfrom = hist.default_value;
        if (vfrom == vto)
            continue;
        const struct setting *src = bulk_for(c, to, f);
        if (!src && known_before)
            src = bulk_for(c, from, ff);
        if (!src && set)
            src = set;
        cause(c, to, f, ct, sizeof(ct));
        char *msg;
        if (known_before) {
            cause(c, from, ff, cf, sizeof(cf));
            msg = fmt_dup(c, "%s at %s (%s), %s at %s (%s)", vfrom ? "on" : "off", vf, cf,
                          vto ? "on" : "off", vt, ct);
        } else if (hist.stage != CK_FG_PREALPHA) {
            msg = fmt_dup(c,
                          "missing from the %s list; the %s list records %s at %s (%s, default "
                          "%s); %s at %s (%s)",
                          vf, vt, vfrom ? "on" : "off", vf, ck_fg_stage_list_name(hist.stage),
                          vfrom ? "true" : "false", vto ? "on" : "off", vt, ct);
        } else {
            msg = fmt_dup(c, "new after %s; on at %s (%s)", vf, vt, ct);
        }
        add_finding(c, out, name, "DefaultChanged", msg, src ? src->source : "default", vfrom, vto);
    }
}

static void warnings(struct check *c, struct findings *out, const struct side *to)
{
    char v[32], last[32], rm[32];
    for (size_t i = 0; i < c->nset; i++) {
        const struct setting *st = &c->set[i];
        ck_fg_feature_t f;
        if (to->verdict[i] != OK || !strcmp(st->name, "AllAlpha") || !strcmp(st->name, "AllBeta"))
            continue;
        if (ck_fg_lookup(to->g, st->name, &f) < 0)
            continue;
        struct ck_fg_spec sp = ck_fg_spec_in_effect(to->g, f);
        if (sp.stage != CK_FG_GA && sp.stage != CK_FG_DEPRECATED)
            continue;
        const char *stage = sp.stage == CK_FG_GA ? "GA" : "deprecated";
        const char *val = st->value ? "true" : "false";
        struct ck_fg_version since;
        if (!locked_since(to->g, f, to->v, &since)) {
            add_finding(c, out, st->name, sp.stage == CK_FG_GA ? "GA" : "Deprecated",
                        fmt_dup(c,
                                "setting %s feature gate %s=%s. It will be removed in a future "
                                "release.",
                                stage, st->name, val),
                        st->source, false, false);
            continue;
        }
        /*
         * Kubernetes keeps a gate locked after 1.31 for three more minors
         * (emulation); from the lock + 3 it may go (lint rule L3).
         */
        ck_fg_version_fmt(since, v, sizeof(v));
        if (ck_fg_version_cmp(since, ck_fg_version_mm(1, 31)) > 0) {
            ck_fg_version_fmt(ck_fg_version_mm(since.major, since.minor + 2), last, sizeof(last));
            ck_fg_version_fmt(ck_fg_version_mm(since.major, since.minor + 3), rm, sizeof(rm));
            add_finding(c, out, st->name, "WillBeRemoved",
                        fmt_dup(c,
                                "setting %s feature gate %s=%s. It will be removed in a future "
                                "release: locked to %s since %s, it may be removed in %s; %s is "
                                "the last minor in which setting it surely works",
                                stage, st->name, val, sp.default_value ? "true" : "false", v, rm,
                                last),
                        st->source, false, false);
        } else {
            add_finding(c, out, st->name, "WillBeRemoved",
                        fmt_dup(c,
                                "setting %s feature gate %s=%s. It will be removed in a future "
                                "release: locked to %s since %s, it may be removed in any release",
                                stage, st->name, val, sp.default_value ? "true" : "false", v),
                        st->source, false, false);
        }
    }
}

static int by_gate(const void *a, const void *b)
{
    const struct ck_fg_upgrade_finding *x = a, *y = b;
    int r = strcmp(x->gate, y->gate);
    return r ? r : strcmp(x->message, y->message);
}

static void sort_findings(struct findings *f)
{
    if (f->n > 1)
        qsort(f->v, f->n, sizeof(f->v[0]), by_gate);
}

static uint32_t minors_between(struct ck_fg_version a, struct ck_fg_version b)
{
    if (a.major != b.major)
        return UINT32_MAX;
    return a.minor > b.minor ? a.minor - b.minor : b.minor - a.minor;
}

int ck_fg_upgrade_check(const char *old_list, const char *new_list, struct ck_fg_version from,
                        struct ck_fg_version to, const struct ck_fg_upgrade_source *srcs,
                        size_t nsrcs, struct ck_fg_upgrade_report **ret, struct ck_fg_err *reterr)
{
    struct check c = {0};
    struct side sf = {0}, st = {0};
    struct findings blk = {0}, chg = {0}, wrn = {0};
    size_t nflags = 0, flag = 0;
    int rc = 0;

    for (size_t i = 0; i < nsrcs; i++) /* config files first, in order (P5) */
        if (srcs[i].is_config && (rc = read_config(&c, srcs[i].value, reterr)) < 0)
            goto out;
    for (size_t i = 0; i < nsrcs; i++)
        nflags += !srcs[i].is_config;
    for (size_t i = 0; i < nsrcs && c.rc == 0; i++) { /* then the flags, last wins */
        char label[40];
        if (srcs[i].is_config)
            continue;
        if (nflags > 1)
            snprintf(label, sizeof(label), "--feature-gates #%zu", ++flag);
        else
            snprintf(label, sizeof(label), "--feature-gates");
        read_flag(&c, srcs[i].value ? srcs[i].value : "", label);
    }
    if ((rc = c.rc) < 0)
        goto out_nomem;
    if ((rc = side_build(&c, &sf, old_list, from, reterr)) < 0 ||
        (rc = side_build(&c, &st, new_list, to, reterr)) < 0)
        goto out;
    blk = c.invalid;
    c.invalid = (struct findings){0};
    blocking(&c, &blk, &sf, &st);
    changes(&c, &chg, &sf, &st);
    warnings(&c, &wrn, &st);
    if ((rc = c.rc) < 0)
        goto out_nomem;
    struct ck_fg_upgrade_report *r = calloc(1, sizeof(*r));
    if (!r) {
        rc = CK_FG_ENOMEM;
        goto out_nomem;
    }
    sort_findings(&blk);
    sort_findings(&chg);
    sort_findings(&wrn);
    r->from = sf.v;
    r->to = st.v;
    r->minors = minors_between(sf.v, st.v);
    r->blocking = blk.v;
    r->nblocking = blk.n;
    r->changes = chg.v;
    r->nchanges = chg.n;
    r->warnings = wrn.v;
    r->nwarnings = wrn.n;
    blk = chg = wrn = (struct findings){0};
    *ret = r;
    goto out;
out_nomem:
    ck__fg_errf(reterr, rc, "out of memory");
out:
    findings_release(c.invalid.v, c.invalid.n);
    findings_release(blk.v, blk.n);
    findings_release(chg.v, chg.n);
    findings_release(wrn.v, wrn.n);
    side_release(&sf, c.nset);
    side_release(&st, c.nset);
    for (size_t i = 0; i < c.nset; i++) {
        free(c.set[i].name);
        free(c.set[i].source);
    }
    free(c.set);
    return rc;
}

struct ck_fg_upgrade_report *ck_fg_upgrade_report_free(struct ck_fg_upgrade_report *r)
{
    if (r) {
        findings_release(r->blocking, r->nblocking);
        findings_release(r->changes, r->nchanges);
        findings_release(r->warnings, r->nwarnings);
        free(r);
    }
    return NULL;
}

/* ---- renderings ---------------------------------------------------- */

static json_t *json_findings(const struct ck_fg_upgrade_finding *v, size_t n, bool values)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "gate", v[i].gate, "reason", v[i].reason,
                              "message", v[i].message, "source", v[i].source);
        if (o && values &&
            (json_object_set_new(o, "from", json_boolean(v[i].from)) < 0 ||
             json_object_set_new(o, "to", json_boolean(v[i].to)) < 0)) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(a, o) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

char *ck_fg_upgrade_json(const struct ck_fg_upgrade_report *r)
{
    char vf[32], vt[32];
    json_t *o = json_pack("{s:s, s:s, s:o*, s:o*, s:o*}", "from",
                          ck_fg_version_fmt(r->from, vf, sizeof(vf)), "to",
                          ck_fg_version_fmt(r->to, vt, sizeof(vt)), "blocking",
                          json_findings(r->blocking, r->nblocking, false), "changes",
                          json_findings(r->changes, r->nchanges, true), "warnings",
                          json_findings(r->warnings, r->nwarnings, false));
    if (!o || json_object_size(o) != 5) {
        json_decref(o);
        return NULL;
    }
    char *s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    return s;
}

static size_t width(const struct ck_fg_upgrade_finding *v, size_t n, size_t field, size_t min)
{
    size_t w = min;
    for (size_t i = 0; i < n; i++) {
        const char *s = field == 0 ? v[i].gate : field == 1 ? v[i].reason : v[i].source;
        size_t l = strlen(s);
        if (l > w)
            w = l;
    }
    return w;
}

static void text_section(struct ck__buf *b, const char *title,
                         const struct ck_fg_upgrade_finding *v, size_t n, bool values)
{
    if (n == 0) {
        ck__buf_printf(b, "%s: none\n", title);
        return;
    }
    int wg = (int)width(v, n, 0, 4), wr = (int)width(v, n, 1, 6), ws = (int)width(v, n, 2, 6);
    ck__buf_printf(b, "%s:\n", title);
    if (values)
        ck__buf_printf(b, "  %-*s  %-5s  %-5s  %-*s  %s\n", wg, "GATE", "FROM", "TO", ws, "SOURCE",
                       "DETAILS");
    else
        ck__buf_printf(b, "  %-*s  %-*s  %-*s  %s\n", wg, "GATE", wr, "REASON", ws, "SOURCE",
                       "MESSAGE");
    for (size_t i = 0; i < n; i++) {
        if (values)
            ck__buf_printf(b, "  %-*s  %-5s  %-5s  %-*s  %s\n", wg, v[i].gate,
                           v[i].from ? "true" : "false", v[i].to ? "true" : "false", ws,
                           v[i].source, v[i].message);
        else
            ck__buf_printf(b, "  %-*s  %-*s  %-*s  %s\n", wg, v[i].gate, wr, v[i].reason, ws,
                           v[i].source, v[i].message);
    }
}

char *ck_fg_upgrade_text(const struct ck_fg_upgrade_report *r)
{
    struct ck__buf b = {0};
    char vf[32], vt[32], title[128];
    ck_fg_version_fmt(r->from, vf, sizeof(vf));
    ck_fg_version_fmt(r->to, vt, sizeof(vt));
    bool down = ck_fg_version_cmp(r->to, r->from) < 0;
    ck__buf_printf(&b, "Feature gates, %s %s -> %s\n", down ? "downgrade" : "upgrade", vf, vt);
    if (r->minors > 1)
        ck__buf_printf(&b,
                       "Note: this step crosses %s minor versions; Kubernetes supports "
                       "one minor at a time.\n",
                       r->minors == UINT32_MAX ? "major and" : "several");
    if (r->minors == 0)
        ck__buf_printf(&b, "Note: both versions are the same minor.\n");
    snprintf(title, sizeof(title), "Blocking (the component will not start at %s)", vt);
    text_section(&b, title, r->blocking, r->nblocking, false);
    snprintf(title, sizeof(title), "Changes (effective value differs at %s, settings unchanged)",
             vt);
    text_section(&b, title, r->changes, r->nchanges, true);
    text_section(&b, "Warnings", r->warnings, r->nwarnings, false);
    ck__buf_printf(&b, "%zu blocking, %zu changes, %zu warnings: %s\n", r->nblocking, r->nchanges,
                   r->nwarnings,
                   r->nblocking ? "fix the blocking settings before the upgrade"
                                : "nothing stops the component from starting");
    return ck__buf_take(&b);
}

/* ---- shipped lists ------------------------------------------------- */

static int by_version(const void *a, const void *b)
{
    return ck_fg_version_cmp(*(const struct ck_fg_version *)a, *(const struct ck_fg_version *)b);
}

/* Appends "1.31, 1.32, ..." for the X.Y.yaml files of dir, ascending. */
static void shipped_versions(const char *dir, struct ck__buf *out)
{
    struct ck_fg_version v[64];
    size_t n = 0;
    char buf[32];
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml") &&
            ck_fg_version_parse(e->d_name, &v[n], NULL) == 0)
            n++;
    }
    closedir(d);
    qsort(v, n, sizeof(v[0]), by_version);
    for (size_t i = 0; i < n; i++)
        ck__buf_printf(out, "%s%s", i ? ", " : "", ck_fg_version_fmt(v[i], buf, sizeof(buf)));
}

int ck_fg_upgrade_find_list(const char *const *dirs, size_t ndirs, struct ck_fg_version v,
                            char **ret_path, struct ck_fg_err *reterr)
{
    char vs[32];
    ck_fg_version_fmt(ck_fg_version_mm(v.major, v.minor), vs, sizeof(vs));
    for (size_t i = 0; i < ndirs; i++) {
        if (!dirs[i])
            continue;
        size_t n = strlen(dirs[i]) + strlen(vs) + 8;
        char *p = malloc(n);
        if (!p)
            return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
        snprintf(p, n, "%s/%s.yaml", dirs[i], vs);
        FILE *f = fopen(p, "r");
        if (f) {
            fclose(f);
            *ret_path = p;
            return 0;
        }
        free(p);
    }
    struct ck__buf have = {0};
    for (size_t i = 0; i < ndirs && have.len == 0; i++)
        shipped_versions(dirs[i], &have);
    char *list = ck__buf_take(&have);
    int rc = ck__fg_errf(reterr, CK_FG_ENOENT,
                         "no shipped Kubernetes feature list for %s (shipped: %s); pass the list "
                         "of that version with --previous or --features",
                         vs, list && *list ? list : "none");
    free(list);
    return rc;
}
