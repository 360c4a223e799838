/*
 * kubeconfig.c - kubeconfig files (client-go tools/clientcmd, the parts a controller
 * needs).
 *
 * A kubeconfig is YAML or JSON; both go through ck_yaml_to_json() (lib/util/yaml.c:
 * libyaml, JSON being YAML) into a jansson tree, from which the current context (or the one asked
 * for) picks a cluster and a user by name. Relative paths (certificate-authority,
 * client-certificate, client-key, tokenFile) are made relative to the file's directory, as
 * clientcmd's ResolvePaths does; *-data fields are base64 and are decoded here.
 *
 * Threading: no state; every function is reentrant.
 *
 * Tests: tests/client/test_kubeconfig.c; test_rest.c builds a client from the
 * kubeconfig the server writes; fuzz/fuzz_kubeconfig.c fuzzes the parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/rest.h"
#include "internal.h"

#define MAX_KUBECONFIG (16u * 1024 * 1024)

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
