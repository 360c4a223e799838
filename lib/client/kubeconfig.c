/*
 * kubeconfig.c - kubeconfig files (client-go tools/clientcmd, the parts a controller
 * needs) and the YAML-to-JSON conversion they need.
 *
 * A kubeconfig is YAML or JSON; both go through libyaml (JSON is YAML), into a jansson
 * tree, from which the current context (or the one asked for) picks a cluster and a
 * user by name. Relative paths (certificate-authority, client-certificate, client-key,
 * tokenFile) are made relative to the file's directory, as clientcmd's
 * ResolvePaths does; *-data fields are base64 and are decoded here.
 *
 * Threading: no state; every function is reentrant.
 *
 * Tests: tests/client/test_kubeconfig.c; test_rest.c builds a client from the
 * kubeconfig the server writes; fuzz/fuzz_kubeconfig.c fuzzes the parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ckube/rest.h"
#include "internal.h"

#define MAX_KUBECONFIG (16u * 1024 * 1024)

/* ---- YAML to JSON ----------------------------------------------------------- */

/* A plain scalar YAML 1.2's core schema reads as a boolean, null or number. */
static json_t *plain_scalar(const char *s, size_t len)
{
    if ((len == 4 && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))))
        return json_true();
    if ((len == 5 && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))))
        return json_false();
    if (len == 0 || (len == 1 && s[0] == '~') || (len == 4 && !strcmp(s, "null")))
        return json_null();
    json_t *num = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    if (json_is_number(num))
        return num;
    json_decref(num);
    return json_stringn(s, len);
}

static json_t *node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth)
{
    if (!node || depth > 64)
        return NULL;
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)node->data.scalar.value;
        size_t len = node->data.scalar.length;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            return plain_scalar(s, len);
        return json_stringn(s, len);
    }
    case YAML_SEQUENCE_NODE: {
        json_t *arr = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             arr && it < node->data.sequence.items.top; it++) {
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!v || json_array_append_new(arr, v) < 0) {
                json_decref(arr);
                return NULL;
            }
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        json_t *obj = json_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
             obj && p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_decref(obj);
                return NULL;
            }
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1);
            char *key = v ? ck__malloc(k->data.scalar.length + 1) : NULL;
            if (key) {
                memcpy(key, k->data.scalar.value, k->data.scalar.length);
                key[k->data.scalar.length] = '\0';
            }
            if (!key || json_object_set_new(obj, key, v) < 0) {
                free(key);
                json_decref(v);
                json_decref(obj);
                return NULL;
            }
            free(key);
        }
        return obj;
    }
    default:
        return NULL;
    }
}

int ck_yaml_to_json(const char *text, size_t len, json_t **ret_json, struct ck_err *reterr)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int r = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        r = ck_err_set(reterr, CK_EINVAL, "YAML line %zu: %s", parser.problem_mark.line + 1,
                       parser.problem ? parser.problem : "cannot parse");
        yaml_parser_delete(&parser);
        return r;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    json_t *json = root ? node_to_json(&doc, root, 0) : NULL;
    if (!json)
        r = ck_err_set(reterr, CK_EINVAL, "YAML: empty document, non-scalar key or too deep");
    else
        *ret_json = json;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return r;
}

/* ---- kubeconfig ----------------------------------------------------------- */

/* The entry named name in the list (clusters, users, contexts), or NULL. */
static const json_t *named(const json_t *doc, const char *list, const char *field, const char *name)
{
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(doc, list), i, item)
    {
        const char *n = json_string_value(json_object_get(item, "name"));
        if (n && name && strcmp(n, name) == 0)
            return json_object_get(item, field);
    }
    return NULL;
}

/* A path from the file, made absolute against base_dir. NULL when absent; *oom on failure. */
static char *resolve(const json_t *obj, const char *field, const char *base_dir, bool *oom)
{
    const char *p = json_string_value(json_object_get(obj, field));
    if (!p || !*p)
        return NULL;
    char *out;
    if (p[0] == '/' || !base_dir || !*base_dir) {
        out = ck__strdup(p);
    } else {
        size_t n = strlen(base_dir) + strlen(p) + 2;
        out = ck__malloc(n);
        if (out)
            snprintf(out, n, "%s/%s", base_dir, p);
    }
    *oom = *oom || !out;
    return out;
}

static char *string_field(const json_t *obj, const char *field, bool *oom)
{
    const char *s = json_string_value(json_object_get(obj, field));
    if (!s || !*s)
        return NULL;
    char *out = ck__strdup(s);
    *oom = *oom || !out;
    return out;
}

/* Reads a whole small file into a NUL-terminated buffer. */
static int read_file(const char *path, char **ret, size_t *ret_len, struct ck_err *reterr)
{
    int r = ck__read_file(path, MAX_KUBECONFIG, ret, ret_len);
    if (r == CK__E2BIG || r == CK_ENOMEM)
        return ck_err_set(reterr, r == CK_ENOMEM ? CK_ENOMEM : CK_EINVAL,
                          "%s: too large or out of memory", path);
    if (r < 0)
        return ck_err_set(reterr, r == CK_ENOENT ? CK_ENOENT : CK_EIO, "cannot open %s: %s", path,
                          strerror(-r));
    return 0;
}

/* Strips one trailing newline run (token files end with one). */
static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

static int fill(const json_t *doc, const char *base_dir, const char *context,
                struct ck_kubeconfig *kc, struct ck_err *reterr)
{
    const char *ctx_name =
        context ? context : json_string_value(json_object_get(doc, "current-context"));
    if (!ctx_name || !*ctx_name)
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: no current-context");
    const json_t *ctx = named(doc, "contexts", "context", ctx_name);
    if (!ctx)
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: context \"%s\" not found", ctx_name);
    const char *cluster_name = json_string_value(json_object_get(ctx, "cluster"));
    const json_t *cluster = named(doc, "clusters", "cluster", cluster_name);
    if (!cluster)
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: cluster \"%s\" not found",
                          cluster_name ? cluster_name : "");
    const char *user_name = json_string_value(json_object_get(ctx, "user"));
    const json_t *user = user_name ? named(doc, "users", "user", user_name) : NULL;
    if (user_name && *user_name && !user)
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: user \"%s\" not found", user_name);

    bool oom = false;
    kc->server = string_field(cluster, "server", &oom);
    if (!kc->server && !oom)
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: cluster \"%s\" has no server",
                          cluster_name);
    kc->namespace = string_field(ctx, "namespace", &oom);
    if (!kc->namespace && !oom)
        kc->namespace = ck__strdup("default");
    oom = oom || !kc->namespace;
    kc->ca_file = resolve(cluster, "certificate-authority", base_dir, &oom);
    const json_t *skip = json_object_get(cluster, "insecure-skip-tls-verify");
    kc->insecure_skip_tls_verify =
        json_is_true(skip) || (json_is_string(skip) && !strcmp(json_string_value(skip), "true"));
    const char *ca_data = json_string_value(json_object_get(cluster, "certificate-authority-data"));
    if (ca_data && *ca_data) {
        kc->ca_data = ck_base64_decode(ca_data, NULL);
        if (!kc->ca_data)
            return ck_err_set(reterr, CK_EINVAL,
                              "kubeconfig: certificate-authority-data is not base64");
    }
    kc->token = string_field(user, "token", &oom);
    kc->client_cert_file = resolve(user, "client-certificate", base_dir, &oom);
    kc->client_key_file = resolve(user, "client-key", base_dir, &oom);
    static const char *const data_fields[] = {"client-certificate-data", "client-key-data"};
    char **data_out[] = {&kc->client_cert_data, &kc->client_key_data};
    for (size_t i = 0; i < 2; i++) {
        const char *data = json_string_value(json_object_get(user, data_fields[i]));
        if (data && *data && !(*data_out[i] = ck_base64_decode(data, NULL)))
            return ck_err_set(reterr, CK_EINVAL, "kubeconfig: %s is not base64", data_fields[i]);
    }
    char *token_file = kc->token ? NULL : resolve(user, "tokenFile", base_dir, &oom);
    if (oom) {
        free(token_file);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (token_file) {
        size_t len;
        int r = read_file(token_file, &kc->token, &len, reterr);
        free(token_file);
        if (r < 0)
            return r;
        chomp(kc->token);
    }
    return 0;
}

int ck_kubeconfig_parse(const char *text, size_t len, const char *base_dir, const char *context,
                        struct ck_kubeconfig **ret_config, struct ck_err *reterr)
{
    json_t *doc = NULL;
    int r = ck_yaml_to_json(text, len, &doc, reterr);
    if (r < 0)
        return r;
    if (!json_is_object(doc)) {
        json_decref(doc);
        return ck_err_set(reterr, CK_EINVAL, "kubeconfig: not a mapping");
    }
    struct ck_kubeconfig *kc = ck__calloc(1, sizeof(*kc));
    if (!kc) {
        json_decref(doc);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    r = fill(doc, base_dir, context, kc, reterr);
    json_decref(doc);
    if (r < 0) {
        ck_kubeconfig_free(kc);
        return r;
    }
    *ret_config = kc;
    return 0;
}

int ck_kubeconfig_load(const char *path, const char *context, struct ck_kubeconfig **ret_config,
                       struct ck_err *reterr)
{
    char *text = NULL;
    size_t len = 0;
    int r = read_file(path, &text, &len, reterr);
    if (r < 0)
        return r;
    char *dir = ck__strdup(path);
    if (!dir) {
        free(text);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    r = ck_kubeconfig_parse(text, len, dir[0] ? dir : "/", context, ret_config, reterr);
    free(dir);
    free(text);
    return r;
}

struct ck_kubeconfig *ck_kubeconfig_free(struct ck_kubeconfig *kc)
{
    if (!kc)
        return NULL;
    free(kc->server);
    free(kc->namespace);
    free(kc->token);
    free(kc->ca_file);
    free(kc->ca_data);
    free(kc->client_cert_file);
    free(kc->client_key_file);
    free(kc->client_cert_data);
    free(kc->client_key_data);
    free(kc);
    return NULL;
}
