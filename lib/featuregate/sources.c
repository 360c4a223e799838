/*
 * sources.c - where values come from: the component config file's
 * featureGates: map (P8, C3), the environment (client-go's KUBE_FEATURE_*,
 * G4, P7), the one-call merge of all sources (P5), and the process-wide
 * provider with feature folding (client-go Gates/Registry, G2, G3).
 *
 * Threading: the provider pointer is atomic; everything else works on the
 * caller's data or goes through the gate's own locking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "internal.h"

#define CONFIG_MAX_BYTES (16u << 20)

static bool yaml_bool(const yaml_node_t *n, bool *ret)
{
    const char *v = (const char *)n->data.scalar.value;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) {
        *ret = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) {
        *ret = false;
        return true;
    }
    return false;
}

int ck__fg_yaml_load(const char *data, size_t len, yaml_document_t *doc, struct ck_fg_err *reterr)
{
    yaml_parser_t parser;
    int rc = 0;

    if (!yaml_parser_initialize(&parser))
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    if (!yaml_parser_load(&parser, doc)) {
        rc = ck__fg_errf(reterr, CK_FG_EINVAL, "malformed YAML at line %zu: %s",
                         parser.problem_mark.line + 1,
                         parser.problem ? parser.problem : "parse error");
        memset(doc, 0, sizeof(*doc));
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* The value of key in a mapping node, or NULL; the last occurrence wins. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    yaml_node_t *found = NULL;
    for (yaml_node_pair_t *kv = map->data.mapping.pairs.start; kv < map->data.mapping.pairs.top;
         kv++) {
        yaml_node_t *k = yaml_document_get_node(doc, kv->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
            found = yaml_document_get_node(doc, kv->value);
    }
    return found;
}

int ck_fg_config_parse(const char *data, size_t len, struct ck_fg_pair **ret, size_t *ret_n,
                       char **ret_buf, struct ck_fg_err *reterr)
{
    return ck__fg_config_parse_each(data, len, NULL, NULL, ret, ret_n, ret_buf, reterr);
}

int ck__fg_config_parse_each(const char *data, size_t len, ck__fg_bad_fn bad, void *ud,
                             struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                             struct ck_fg_err *reterr)
{
    yaml_document_t doc;
    struct ck__fg_pairs p = {0};
    int rc = ck__fg_yaml_load(data, len, &doc, reterr);
    if (rc < 0)
        return rc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    yaml_node_t *v = NULL;
    if (root && root->type != YAML_MAPPING_NODE) {
        rc = ck__fg_errf(reterr, CK_FG_EINVAL, "config: top level is not a mapping");
        goto out;
    }
    if (root)
        v = map_get(&doc, root, "featureGates");
    if (!v || (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0))
        goto out; /* empty document, no featureGates, or featureGates: (null) */
    if (v->type != YAML_MAPPING_NODE) {
        rc = ck__fg_errf(reterr, CK_FG_EINVAL, "config: featureGates is not a map");
        goto out;
    }
    for (yaml_node_pair_t *kv = v->data.mapping.pairs.start; kv < v->data.mapping.pairs.top; kv++) {
        yaml_node_t *gk = yaml_document_get_node(&doc, kv->key);
        yaml_node_t *gv = yaml_document_get_node(&doc, kv->value);
        bool b;
        if (!gk || gk->type != YAML_SCALAR_NODE) {
            rc = ck__fg_errf(reterr, CK_FG_EINVAL, "config: featureGates key is not a name");
            goto out;
        }
        const char *name = (const char *)gk->data.scalar.value;
        if (!gv || !yaml_bool(gv, &b)) {
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "config: featureGates: invalid value for %s: want true or false", name);
            if (bad) {
                bad(ud, name, msg);
                continue;
            }
            rc = ck__fg_errf(reterr, CK_FG_EINVAL, "%s", msg);
            goto out;
        }
        rc = ck__fg_pairs_add(&p, name, gk->data.scalar.length, b);
        if (rc < 0) {
            ck__fg_errf(reterr, rc, "out of memory");
            goto out;
        }
    }
out:
    yaml_document_delete(&doc);
    return ck__fg_pairs_finish(&p, rc, ret, ret_n, ret_buf);
}

/* Reads a whole file (capped) into a malloc'ed buffer. */
static int read_file(const char *path, char **ret, size_t *ret_len, struct ck_fg_err *reterr)
{
    int r = ck__read_file(path, CONFIG_MAX_BYTES, ret, ret_len);
    if (r == CK__E2BIG)
        return ck__fg_errf(reterr, CK_FG_EINVAL, "%s: file too large", path);
    if (r == CK_FG_ENOMEM)
        return ck__fg_errf(reterr, CK_FG_ENOMEM, "out of memory");
    if (r < 0)
        return ck__fg_errf(reterr, CK_FG_ENOENT, "cannot read %s: %s", path, strerror(-r));
    return 0;
}

int ck__fg_read_file(const char *path, char **ret, size_t *ret_len, struct ck_fg_err *reterr)
{
    return read_file(path, ret, ret_len, reterr);
}

int ck_fg_config_load(const char *path, struct ck_fg_pair **ret, size_t *ret_n, char **ret_buf,
                      struct ck_fg_err *reterr)
{
    char *data;
    size_t len;
    int rc = read_file(path, &data, &len, reterr);
    if (rc < 0)
        return rc;
    rc = ck_fg_config_parse(data, len, ret, ret_n, ret_buf, reterr);
    if (rc < 0 && reterr) {
        char tmp[sizeof(reterr->msg)];
        snprintf(tmp, sizeof(tmp), "%s", reterr->msg);
        ck__fg_errf(reterr, rc, "%s: %s", path, tmp);
    }
    free(data);
    return rc;
}

static const char *plain_getenv(const char *name)
{
    return getenv(name);
}

int ck_fg_env_pairs(struct ck_fg_gate *g, ck_fg_getenv_fn lookup, struct ck_fg_pair **ret,
                    size_t *ret_n, char **ret_buf, struct ck_fg_err *reterr)
{
    struct ck__fg_pairs p = {0};
    int rc = 0;
    const struct ck__fg_snap *s = ck__fg_snap(g);

    if (!lookup)
        lookup = plain_getenv;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        const char *name = s->tab->f[i]->name;
        struct ck_fg_spec sp = ck__fg_spec_at(s->tab->f[i], s->emu, s->minc);
        char var[300];
        bool v;
        if (sp.stage == CK_FG_PREALPHA)
            continue; /* P7: not known yet, ignored silently */
        snprintf(var, sizeof(var), "KUBE_FEATURE_%s", name);
        const char *val = lookup(var);
        if (!val)
            continue;
        if (!ck__parse_bool(val, &v)) { /* no trimming (G4) */
            ck__fg_logf(g, 0, "Could not set feature gate feature=\"%s\" desiredState=\"%s\"", name,
                        val);
            continue;
        }
        if (sp.lock_to_default && v != sp.default_value) {
            ck__fg_logf(g, 0,
                        "Could not set feature gate, feature is locked feature=\"%s\" "
                        "desiredState=%s lockedState=%s",
                        name, v ? "true" : "false", sp.default_value ? "true" : "false");
            continue;
        }
        ck__fg_logf(g, 1, "Feature gate updated state feature=\"%s\" enabled=%s", name,
                    v ? "true" : "false");
        rc = ck__fg_pairs_add(&p, name, strlen(name), v);
    }
    if (rc < 0)
        ck__fg_errf(reterr, rc, "out of memory");
    return ck__fg_pairs_finish(&p, rc, ret, ret_n, ret_buf);
}

/*
 * Takes one source's result: when rc is 0, appends its pairs to the merged
 * list (later appends win when applied in order). Frees the pairs either
 * way and clears *v and *buf. Returns rc, or CK_FG_ENOMEM.
 */
static int take(struct ck__fg_pairs *m, int rc, struct ck_fg_pair **v, size_t n, char **buf)
{
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = ck__fg_pairs_add(m, (*v)[i].name, strlen((*v)[i].name), (*v)[i].value);
    free(*v);
    free(*buf);
    *v = NULL;
    *buf = NULL;
    return rc;
}

/* The config comes from a file (path) or a buffer (data), or neither. */
static int apply(struct ck_fg_gate *g, const char *const *flags, size_t nflags,
                 const char *config_path, const char *config_data, size_t config_len, bool use_env,
                 struct ck_fg_err *reterr)
{
    struct ck__fg_pairs m = {0};
    struct ck_fg_pair *v = NULL;
    size_t n = 0;
    char *buf = NULL;
    int rc = 0;

    if (use_env) {
        rc = ck_fg_env_pairs(g, NULL, &v, &n, &buf, reterr);
        if ((rc = take(&m, rc, &v, n, &buf)) < 0)
            goto out;
    }
    if (config_path || config_data) {
        rc = config_path ? ck_fg_config_load(config_path, &v, &n, &buf, reterr)
                         : ck_fg_config_parse(config_data, config_len, &v, &n, &buf, reterr);
        if ((rc = take(&m, rc, &v, n, &buf)) < 0)
            goto out;
    }
    if (nflags) { /* C2/P6: all occurrences joined, one parse */
        struct ck__buf joined = {0};
        for (size_t i = 0; i < nflags; i++)
            ck__buf_printf(&joined, "%s%s", i ? "," : "", flags[i]);
        char *str = ck__buf_take(&joined);
        if (!str) {
            rc = CK_FG_ENOMEM;
            goto out;
        }
        ck__fg_logf(g, 2, "setting kube:feature-gates=%s", str); /* O5 */
        rc = ck_fg_parse_pairs(str, &v, &n, &buf, reterr);
        free(str);
        if ((rc = take(&m, rc, &v, n, &buf)) < 0)
            goto out;
    }
    rc = ck__fg_pairs_finish(&m, 0, &v, &n, &buf);
    if (rc == 0)
        rc = ck_fg_set_from_map(g, v, n, reterr);
    free(v);
    free(buf);
    return rc;
out:
    if (rc == CK_FG_ENOMEM)
        ck__fg_errf(reterr, rc, "out of memory");
    return ck__fg_pairs_finish(&m, rc, &v, &n, &buf);
}

int ck_fg_apply_sources(struct ck_fg_gate *g, const char *const *flags, size_t nflags,
                        const char *config_path, bool use_env, struct ck_fg_err *reterr)
{
    return apply(g, flags, nflags, config_path, NULL, 0, use_env, reterr);
}

int ck_fg_apply_sources_buf(struct ck_fg_gate *g, const char *const *flags, size_t nflags,
                            const char *config, size_t config_len, bool use_env,
                            struct ck_fg_err *reterr)
{
    return apply(g, flags, nflags, NULL, config, config_len, use_env, reterr);
}

static _Atomic(struct ck_fg_gate *) provider;

struct ck_fg_gate *ck_fg_provider(void)
{
    return atomic_load_explicit(&provider, memory_order_acquire);
}

struct ck_fg_gate *ck_fg_provider_replace(struct ck_fg_gate *g)
{
    return atomic_exchange_explicit(&provider, g, memory_order_acq_rel);
}

int ck_fg_fold(struct ck_fg_gate *dst, const struct ck_fg_gate *src, bool versioned,
               struct ck_fg_err *reterr)
{
    size_t n = ck_fg_count(src);
    for (ck_fg_feature_t i = 2; i < n; i++) {
        size_t ns;
        const struct ck_fg_spec *sp = ck_fg_specs(src, i, &ns);
        int rc = versioned ? ck_fg_add_versioned(dst, ck_fg_name(src, i), sp, ns, NULL, reterr)
                           : ck_fg_add(dst, ck_fg_name(src, i), sp[ns - 1], NULL, reterr);
        if (rc < 0)
            return rc;
    }
    return 0;
}
