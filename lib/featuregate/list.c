/*
 * list.c - Kubernetes' versioned feature list (M3, P4) and its lint (L1,
 * L2, L4, L5; L3 against the previous version of the list).
 *
 * The format is test/compatibility_lifecycle/reference/
 * versioned_feature_list.yaml: a sequence of {name, versionedSpecs: [
 * {default, lockToDefault, preRelease, version}]}, preRelease spelled as Go
 * identifiers (Alpha, Beta, GA, Deprecated). minCompatibilityVersion is
 * accepted per spec as a format extension. Loading registers entry by
 * entry with ck_fg_add_versioned() (or ck_fg_add() for a single spec without
 * a version), so every R rule applies and errors name the gate.
 * Threading: works on the caller's gate through its public, locked API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "internal.h"

struct entry {
    const char *name;
    struct ck_fg_spec *specs;
    size_t n;
    size_t line;
};

struct list {
    yaml_document_t doc;
    struct entry *e;
    size_t n;
};

static void list_free(struct list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].specs);
    free(l->e);
    yaml_document_delete(&l->doc);
}

static const char *scalar(yaml_document_t *d, int id)
{
    yaml_node_t *n = yaml_document_get_node(d, id);
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int parse_bool_field(const char *name, const char *key, const char *v, bool *ret,
                            struct ck_fg_err *reterr)
{
    if (v && (!strcmp(v, "true") || !strcmp(v, "false"))) {
        *ret = v[0] == 't';
        return 0;
    }
    return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": %s must be true or false", name, key);
}

static int parse_spec(yaml_document_t *d, yaml_node_t *m, const char *name, struct ck_fg_spec *sp,
                      struct ck_fg_err *reterr)
{
    int rc;
    bool have_stage = false;
    memset(sp, 0, sizeof(*sp));
    if (m->type != YAML_MAPPING_NODE)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": a spec is not a mapping", name);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = scalar(d, p->key), *v = scalar(d, p->value);
        if (!k)
            return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": bad spec key", name);
        if (!strcmp(k, "default")) {
            if ((rc = parse_bool_field(name, k, v, &sp->default_value, reterr)) < 0)
                return rc;
        } else if (!strcmp(k, "lockToDefault")) {
            if ((rc = parse_bool_field(name, k, v, &sp->lock_to_default, reterr)) < 0)
                return rc;
        } else if (!strcmp(k, "preRelease")) {
            static const enum ck_fg_stage st[] = {CK_FG_ALPHA, CK_FG_BETA, CK_FG_GA,
                                                  CK_FG_DEPRECATED};
            for (size_t i = 0; v && i < 4; i++)
                if (!strcmp(v, ck_fg_stage_list_name(st[i]))) {
                    sp->stage = st[i];
                    have_stage = true;
                }
            if (!have_stage)
                return ck__fg_errf(reterr, CK_FG_EINVAL,
                                   "feature \"%s\": invalid preRelease \"%s\" (want Alpha, Beta, "
                                   "GA or Deprecated)",
                                   name, v ? v : "");
        } else if (!strcmp(k, "version") || !strcmp(k, "minCompatibilityVersion")) {
            bool mc = k[0] == 'm';
            struct ck_fg_err e;
            struct ck_fg_version ver;
            if (!v || ck_fg_version_parse(v, &ver, &e) < 0)
                return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": invalid %s \"%s\"", name,
                                   k, v ? v : "");
            if (mc) {
                sp->min_compat = ver;
                sp->has_min_compat = true;
            } else {
                sp->version = ver;
                sp->has_version = true;
            }
        } else {
            return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": unknown spec field \"%s\"",
                               name, k);
        }
    }
    if (!have_stage)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\": a spec has no preRelease", name);
    return 0;
}

static int parse_entry(yaml_document_t *d, yaml_node_t *m, struct entry *e,
                       struct ck_fg_err *reterr)
{
    yaml_node_t *specs = NULL;
    e->line = m->start_mark.line + 1;
    if (m->type != YAML_MAPPING_NODE)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "line %zu: a list entry is not a mapping",
                           e->line);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = scalar(d, p->key);
        if (k && !strcmp(k, "name"))
            e->name = scalar(d, p->value);
        else if (k && !strcmp(k, "versionedSpecs"))
            specs = yaml_document_get_node(d, p->value);
        else
            return ck__fg_errf(reterr, CK_FG_EINVAL, "line %zu: unknown field \"%s\"", e->line,
                               k ? k : "");
    }
    if (!e->name || !e->name[0])
        return ck__fg_errf(reterr, CK_FG_EINVAL, "line %zu: a list entry has no name", e->line);
    if (!specs || specs->type != YAML_SEQUENCE_NODE ||
        specs->data.sequence.items.top == specs->data.sequence.items.start)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "feature \"%s\" has no versionedSpecs", e->name);
    size_t n = (size_t)(specs->data.sequence.items.top - specs->data.sequence.items.start);
    e->specs = calloc(n, sizeof(*e->specs));
    if (!e->specs)
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *s = yaml_document_get_node(d, specs->data.sequence.items.start[i]);
        int rc = parse_spec(d, s, e->name, &e->specs[e->n], reterr);
        if (rc < 0)
            return rc;
        e->n++;
    }
    return 0;
}

static int list_parse(const char *data, size_t len, struct list *l, struct ck_fg_err *reterr)
{
    memset(l, 0, sizeof(*l));
    int rc = ck__fg_yaml_load(data, len, &l->doc, reterr);
    if (rc < 0)
        return rc;
    yaml_node_t *root = yaml_document_get_root_node(&l->doc);
    if (!root)
        return 0; /* empty list */
    if (root->type != YAML_SEQUENCE_NODE)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "feature list: top level is not a sequence");
    size_t n = (size_t)(root->data.sequence.items.top - root->data.sequence.items.start);
    l->e = calloc(n ? n : 1, sizeof(*l->e));
    if (!l->e)
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *m = yaml_document_get_node(&l->doc, root->data.sequence.items.start[i]);
        rc = parse_entry(&l->doc, m, &l->e[l->n], reterr);
        l->n++;
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int register_entry(struct ck_fg_gate *g, const struct entry *e, struct ck_fg_err *reterr)
{
    if (e->n == 1 && !e->specs[0].has_version) /* P4: registered as by Add */
        return ck_fg_add(g, e->name, e->specs[0], NULL, reterr);
    return ck_fg_add_versioned(g, e->name, e->specs, e->n, NULL, reterr);
}

int ck_fg_list_parse(struct ck_fg_gate *g, const char *data, size_t len, struct ck_fg_err *reterr)
{
    struct list l;
    int rc = list_parse(data, len, &l, reterr);
    for (size_t i = 0; rc == 0 && i < l.n; i++)
        rc = register_entry(g, &l.e[i], reterr);
    list_free(&l);
    return rc;
}

int ck_fg_list_load(struct ck_fg_gate *g, const char *path, struct ck_fg_err *reterr)
{
    char *data;
    size_t len;
    int rc = ck__fg_read_file(path, &data, &len, reterr);
    if (rc < 0)
        return rc;
    rc = ck_fg_list_parse(g, data, len, reterr);
    free(data);
    return rc;
}

static int lower_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int x = (*a >= 'A' && *a <= 'Z') ? *a + 32 : *a;
        int y = (*b >= 'A' && *b <= 'Z') ? *b + 32 : *b;
        if (x != y || !x)
            return x - y;
    }
}

static int list_read(const char *path, struct list *l, struct ck_fg_err *reterr);
static int finding(ck_fg_report_fn report, void *ud, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int finding(ck_fg_report_fn report, void *ud, const char *fmt, ...)
{
    char line[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (report)
        report(ud, line);
    return 1;
}

int ck_fg_list_lint(const char *path, ck_fg_report_fn report, void *ud, struct ck_fg_err *reterr)
{
    struct list l;
    int found = 0;
    int rc = list_read(path, &l, reterr);
    if (rc < 0) {
        list_free(&l);
        return rc;
    }
    struct ck_fg_gate *all = ck_fg_gate_new(ck_fg_version_mm(0, 0));
    if (!all) {
        list_free(&l);
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < l.n; i++) {
        const struct entry *e = &l.e[i];
        struct ck_fg_err err = {0};
        if (i > 0 && lower_cmp(l.e[i - 1].name, e->name) > 0) /* L4 */
            found += finding(report, ud, "%s: feature list is not sorted by name (after %s)",
                             e->name, l.e[i - 1].name);
        struct ck_fg_gate *one = ck_fg_gate_new(ck_fg_version_mm(0, 0));
        if (!one) {
            found = ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
            break;
        }
        rc = register_entry(one, e, &err); /* L5: the R rules, alone */
        one = ck_fg_gate_free(one);
        if (rc < 0) {
            found += finding(report, ud, "%s: %s", e->name, err.msg);
            continue;
        }
        if (register_entry(all, e, &err) < 0) /* L1: conflicting duplicates */
            found += finding(report, ud, "%s: multiple conflicting specs found for feature:%s",
                             e->name, e->name);
        for (size_t j = 0; j < e->n; j++) { /* L2 */
            const struct ck_fg_spec *s = &e->specs[j];
            if (s->stage != CK_FG_ALPHA)
                continue;
            if (s->default_value && strcmp(e->name, "NodeLogQuery") != 0)
                found += finding(report, ud, "%s: alpha feature %s cannot be enabled by default",
                                 e->name, e->name);
            if (s->lock_to_default)
                found += finding(report, ud, "%s: The alpha feature gate %s is locked to default",
                                 e->name, e->name);
        }
    }
    ck_fg_gate_free(all);
    list_free(&l);
    return found;
}

/* Loads and parses a list file into l; on error l is still safe to free. */
static int list_read(const char *path, struct list *l, struct ck_fg_err *reterr)
{
    char *data;
    size_t len;
    memset(l, 0, sizeof(*l));
    int rc = ck__fg_read_file(path, &data, &len, reterr);
    if (rc < 0)
        return rc;
    rc = list_parse(data, len, l, reterr);
    free(data);
    return rc;
}

int ck_fg_list_lint_removals(const char *previous, const char *path, struct ck_fg_version current,
                             ck_fg_report_fn report, void *ud, struct ck_fg_err *reterr)
{
    struct list old, cur;
    int found = list_read(previous, &old, reterr);
    if (found == 0)
        found = list_read(path, &cur, reterr);
    else
        memset(&cur, 0, sizeof(cur));
    const struct ck_fg_version threshold = ck_fg_version_mm(1, 31);
    char v[32];
    for (size_t i = 0; found >= 0 && i < old.n; i++) {
        const struct entry *e = &old.e[i];
        bool kept = false;
        for (size_t j = 0; j < cur.n && !kept; j++)
            kept = !strcmp(cur.e[j].name, e->name);
        if (kept)
            continue;
        const struct ck_fg_spec *last = &e->specs[e->n - 1];
        if (last->stage == CK_FG_BETA) {
            found += finding(report, ud, "%s: feature %s cannot be removed while in beta", e->name,
                             e->name);
        } else if (last->stage != CK_FG_ALPHA && !last->lock_to_default) {
            found += finding(report, ud,
                             "%s: feature %s cannot be removed because it is in GA or Deprecated "
                             "state and is not locked to default",
                             e->name, e->name);
        } else if (last->stage != CK_FG_ALPHA && ck_fg_version_cmp(last->version, threshold) > 0) {
            struct ck_fg_version min =
                ck_fg_version_mm(last->version.major, last->version.minor + 3);
            if (ck_fg_version_cmp(ck_fg_version_mm(current.major, current.minor), min) < 0)
                found += finding(report, ud,
                                 "%s: feature %s cannot be removed until version %s (required "
                                 "for emulation support)",
                                 e->name, e->name, ck_fg_version_fmt(min, v, sizeof(v)));
        }
    }
    list_free(&old);
    list_free(&cur);
    return found;
}
