/*
 * config.c - the admission configuration file (--admission-control-config-file): an
 * AdmissionConfiguration naming, per plugin, its configuration inline or in a file.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/admission/config.go (ReadAdmissionConfiguration:
 * apiserver.config.k8s.io/v1 or apiserver.k8s.io/v1alpha1, a plugin's `path` relative
 * to the file's directory, `configuration` before `path`; ConfigFor by plugin name) and
 * kube-apiserver's start, which fails when a plugin's configuration does not load
 * (`couldn't init admission plugin "PodSecurity": ...`).
 *
 * Only the enabled plugins' configurations are read, as Kubernetes reads them when the
 * plugin is made. Of ckube's plugins, PodSecurity takes one (pod_security_policy.c:
 * ck__psa_config_parse), ResourceQuota its limitedResources (here; resource_quota.c
 * applies them) and the two webhook plugins their kubeConfigFile (here;
 * webhook_client.c presents its credentials); the configurations of the others are not read
 * (docs/differences.md). The legacy files that are no AdmissionConfiguration
 * (ImagePolicyWebhook's, PodNodeSelector's) are refused, those plugins not being
 * implemented.
 *
 * Threading: runs once, at the server's start.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "pod_security.h"

#define MAX_FILE (1 << 20)

/*
 * The JSON of the YAML or JSON file at path: 0, or CK_EINVAL with Go's words for why not.
 * (Errors are made with ck_err_status(), which keeps a long message whole.)
 */
static int read_document(const char *path, json_t **ret, struct ck_err *reterr)
{
    char *text = NULL;
    size_t len = 0;
    int r = ck__read_file(path, MAX_FILE, &text, &len);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0) {
        /* Go's syscall errors are lower case: "no such file or directory" */
        char why[128];
        snprintf(why, sizeof(why), "%s", r == CK__E2BIG ? "file too large" : strerror(-r));
        why[0] = (char)tolower((unsigned char)why[0]);
        return ck_err_status(reterr, "Invalid", "open %s: %s", path, why);
    }
    struct ck_err err = {0};
    r = ck__yaml_to_json(text, len, ret, &err);
    free(text);
    if (r < 0) {
        r = r == CK_ENOMEM ? ck_err_no_memory(reterr)
                           : ck_err_status(reterr, "Invalid", "%s", ck_err_message(&err));
        ck_err_release(&err);
    }
    return r;
}

/* GetAdmissionPluginConfigurationFor: the plugin's configuration, inline or from its path. */
static int plugin_config(const json_t *plugin, const char *dir, json_t **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const json_t *inline_cfg = json_object_get(plugin, "configuration");
    if (inline_cfg && !json_is_null(inline_cfg)) {
        *ret = json_incref((json_t *)inline_cfg);
        return 0;
    }
    const char *path = json_string_value(json_object_get(plugin, "path"));
    if (!path || !*path)
        return 0;
    char full[4096];
    int n = path[0] == '/' ? snprintf(full, sizeof(full), "%s", path)
                           : snprintf(full, sizeof(full), "%s/%s", dir, path);
    if (n < 0 || (size_t)n >= sizeof(full))
        return ck_err_status(reterr, "Invalid",
                             "Couldn't open admission plugin configuration %s: path too long",
                             path);
    struct ck_err err = {0};
    int r = read_document(full, ret, &err);
    if (r < 0) {
        r = r == CK_ENOMEM ? ck_err_no_memory(reterr)
                           : ck_err_status(reterr, "Invalid",
                                           "Couldn't open admission plugin configuration %s: %s",
                                           full, ck_err_message(&err));
        ck_err_release(&err);
    }
    return r;
}

/*
 * ResourceQuota's Configuration (resourcequota.admission.k8s.io/v1): its limitedResources,
 * each with a resource (validation.go: required), into *ret (a new array).
 */
static int quota_config(const json_t *cfg, json_t **ret, struct ck_err *reterr)
{
    const char *av = json_string_value(json_object_get(cfg, "apiVersion"));
    const char *kind = json_string_value(json_object_get(cfg, "kind"));
    if (!kind || !*kind)
        return ck_err_status(reterr, "Invalid", "Object 'Kind' is missing in the configuration");
    if (strcmp(kind, "Configuration") != 0 || !av ||
        (strcmp(av, "resourcequota.admission.k8s.io/v1") != 0 &&
         strcmp(av, "resourcequota.admission.k8s.io/v1beta1") != 0 &&
         strcmp(av, "resourcequota.admission.k8s.io/v1alpha1") != 0))
        return ck_err_status(reterr, "Invalid", "no kind \"%s\" is registered for version \"%s\"",
                             kind, av ? av : "");
    const json_t *limited = json_object_get(cfg, "limitedResources");
    struct ck_field_errors errs = {0};
    size_t i;
    const json_t *lr;
    json_array_foreach(limited, i, lr)
    {
        const char *resource = json_string_value(json_object_get(lr, "resource"));
        char field[64];
        snprintf(field, sizeof(field), "limitedResources[%zu].resource", i);
        if (!resource || !*resource)
            ck_field_errors_add(&errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
    }
    int r = 0;
    if (errs.len || errs.nomem) {
        r = ck__err_aggregate(reterr, &errs);
    } else {
        *ret = json_is_array(limited) ? ck__json_copy(limited) : json_array();
        r = *ret ? 0 : ck_err_no_memory(reterr);
    }
    ck_field_errors_release(&errs);
    return r;
}

/*
 * The webhook plugins' configuration (webhook/config/kubeconfig.go LoadConfig): an
 * apiserver.config.k8s.io/v1 WebhookAdmissionConfiguration (v1alpha1: WebhookAdmission)
 * whose kubeConfigFile, an absolute path, names a kubeconfig; *ret is that kubeconfig's
 * JSON, its users' relative paths made absolute against its directory (clientcmd's
 * ResolvePaths), for webhook_client.c to pick the credentials of each call from.
 */
static int webhook_config(const json_t *cfg, json_t **ret, struct ck_err *reterr)
{
    const char *av = json_string_value(json_object_get(cfg, "apiVersion"));
    const char *kind = json_string_value(json_object_get(cfg, "kind"));
    if (!kind || !*kind)
        return ck_err_status(reterr, "Invalid", "Object 'Kind' is missing in the configuration");
    if (!av || !((strcmp(av, "apiserver.config.k8s.io/v1") == 0 &&
                  strcmp(kind, "WebhookAdmissionConfiguration") == 0) ||
                 (strcmp(av, "apiserver.config.k8s.io/v1alpha1") == 0 &&
                  strcmp(kind, "WebhookAdmission") == 0)))
        return ck_err_status(reterr, "Invalid", "no kind \"%s\" is registered for version \"%s\"",
                             kind, av ? av : "");
    const char *path = json_string_value(json_object_get(cfg, "kubeConfigFile"));
    if (!path || path[0] != '/')
        return ck_err_status(reterr, "Invalid",
                             "kubeConfigFile: Invalid value: \"%s\": must be an absolute file path",
                             path ? path : "");
    int r = read_document(path, ret, reterr);
    if (r < 0)
        return r;
    static const char *const paths[] = {"client-certificate", "client-key", "tokenFile"};
    size_t dir_len = (size_t)(strrchr(path, '/') - path);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(*ret, "users"), i, u)
    {
        json_t *user = json_object_get(u, "user");
        for (size_t k = 0; r == 0 && k < sizeof(paths) / sizeof(paths[0]); k++) {
            const char *p = json_string_value(json_object_get(user, paths[k]));
            if (!p || !*p || p[0] == '/')
                continue;
            char full[4096];
            snprintf(full, sizeof(full), "%.*s/%s", (int)dir_len, path, p);
            if (json_object_set_new(user, paths[k], json_string(full)) < 0)
                r = ck_err_no_memory(reterr);
        }
    }
    if (r < 0)
        *ret = (json_decref(*ret), NULL);
    return r;
}

int ck__admission_chain_configure(struct ck__admission_chain *chain, const char *path,
                                  struct ck_err *reterr)
{
    json_t *doc = NULL;
    struct ck_err err = {0};
    int r = read_document(path, &doc, &err);
    if (r < 0) {
        r = r == CK_ENOMEM ? ck_err_no_memory(reterr)
                           : ck_err_status(reterr, "Invalid",
                                           "unable to read admission control configuration from "
                                           "\"%s\" [%s]",
                                           path, ck_err_message(&err));
        ck_err_release(&err);
        return r;
    }
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!json_is_object(doc) || !kind || !*kind)
        r = ck_err_status(reterr, "Invalid", "%s: Object 'Kind' is missing", path);
    else if (!av || !*av)
        r = ck_err_status(reterr, "Invalid", "%s: Object 'apiVersion' is missing", path);
    else if (strcmp(kind, "AdmissionConfiguration") != 0 ||
             (strcmp(av, "apiserver.config.k8s.io/v1") != 0 &&
              strcmp(av, "apiserver.k8s.io/v1alpha1") != 0))
        r = ck_err_status(reterr, "Invalid", "%s: no kind \"%s\" is registered for version \"%s\"",
                          path, kind, av);
    /* the file's directory, which relative paths start from */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    size_t i;
    const json_t *plugin;
    json_array_foreach(r == 0 ? json_object_get(doc, "plugins") : NULL, i, plugin)
    {
        const char *name = json_string_value(json_object_get(plugin, "name"));
        /* ConfigFor: the first entry of the name; only the enabled plugins ask */
        bool psa = name && strcmp(name, "PodSecurity") == 0 && !chain->pod_security;
        bool quota = name && strcmp(name, "ResourceQuota") == 0 && !chain->quota_limited;
        /* [0] ValidatingAdmissionWebhook's, [1] MutatingAdmissionWebhook's */
        json_t **hook = NULL;
        if (name && strcmp(name, "ValidatingAdmissionWebhook") == 0)
            hook = &chain->webhook_kubeconfig[0];
        else if (name && strcmp(name, "MutatingAdmissionWebhook") == 0)
            hook = &chain->webhook_kubeconfig[1];
        if (hook && *hook)
            hook = NULL;
        if (!(psa || quota || hook) || !ck__admission_chain_has(chain, name))
            continue;
        json_t *cfg = NULL;
        r = plugin_config(plugin, dir, &cfg, reterr);
        if (r == 0 && cfg)
            r = psa     ? ck__psa_config_parse(cfg, &chain->pod_security, &err)
                : quota ? quota_config(cfg, &chain->quota_limited, &err)
                        : webhook_config(cfg, hook, &err);
        if (r < 0 && cfg) {
            r = r == CK_ENOMEM
                    ? ck_err_no_memory(reterr)
                    : ck_err_status(reterr, "Invalid", "couldn't init admission plugin \"%s\": %s",
                                    name, ck_err_message(&err));
            ck_err_release(&err);
        }
        json_decref(cfg);
        if (r < 0)
            break;
    }
    json_decref(doc);
    return r;
}
