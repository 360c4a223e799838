/*
 * podconfig.c - what a pod takes from ConfigMaps and Secrets, as the kubelet gives it:
 *
 * - env: `valueFrom.configMapKeyRef` / `secretKeyRef` (a missing object or key fails the
 *   container with CreateContainerConfigError and the kubelet's message, unless the
 *   reference is optional) and `envFrom` (all keys, with `prefix`; keys that are not
 *   environment variable names by the kubelet's IsEnvVarName are skipped, with its
 *   Warning event
 *   InvalidEnvironmentVariableNames); envFrom comes first, env after
 *   it (an env entry wins);
 * - volumes: `configMap`, `secret`, `downwardAPI` and `projected` written as files in the
 *   pod's volume directory (`items` with their paths and modes, else every key;
 *   `defaultMode`, 0644 by default). A missing object that is not optional keeps the pod
 *   from starting (retried), as the kubelet's failed mount does.
 *
 * - hostPath volumes: the type check (DirectoryOrCreate, Directory, FileOrCreate, File,
 *   Socket, CharDevice, BlockDevice) with the kubelet's words; a failed check keeps the
 *   pod from starting, as the kubelet's failed SetUp does.
 *
 * Objects are read from the API server when a container starts or a pod's volumes are
 * set up, and again every sync period (agent.c) so that they follow the objects' changes.
 *
 * The variables of a Service (kubelet's envvars.FromServices): NAME_SERVICE_HOST,
 * NAME_SERVICE_PORT, NAME_SERVICE_PORT_<PORT NAME> and the Docker link variables
 * NAME_PORT, NAME_PORT_<N>_<PROTO>[_PROTO|_PORT|_ADDR]; the agent gives every container
 * those of the `kubernetes` Service, as the kubelet gives its master service's.
 *
 * Also the $(VAR) expansion of command and args (Kubernetes'
 * third_party/forked/golang/expansion/expand.go).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "internal.h"

/* The data of a ConfigMap (data and binaryData) or a Secret (data, decoded) as a map of
 * strings (which may hold NULs). 0, CK_ENOENT or another error, with the kubelet's text. */
static int ref_data(const struct ck__pod_refs *refs, bool secret, const char *name, json_t **ret,
                    struct ck_err *reterr)
{
    const struct ck_resource *res =
        ck_controller_resource("", "v1", secret ? "secrets" : "configmaps");
    json_t *obj = NULL;
    struct ck_err err = {0};
    if (!res)
        return ck_err_set(reterr, CK_ENOENT, "no kind serves %s",
                          secret ? "secrets" : "configmaps");
    int r = ck_ctl_get(refs->ctl, res, refs->ns, name, &obj, &err);
    if (r == CK_ENOENT)
        return ck_err_set(reterr, CK_ENOENT, "%s \"%s\" not found", secret ? "secret" : "configmap",
                          name);
    if (r < 0)
        return ck_err_set(reterr, r, "%s", err.msg);
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(obj, "data"), k, v)
    {
        if (!secret) {
            json_object_set(out, k, v);
            continue;
        }
        size_t len = 0;
        char *raw = ck_base64_decode(json_string_value(v) ?: "", &len);
        if (raw)
            json_object_set_new(out, k, json_stringn_nocheck(raw, len));
        free(raw);
    }
    json_object_foreach(json_object_get(obj, "binaryData"), k, v)
    {
        size_t len = 0;
        char *raw = ck_base64_decode(json_string_value(v) ?: "", &len);
        if (raw)
            json_object_set_new(out, k, json_stringn_nocheck(raw, len));
        free(raw);
    }
    json_decref(obj);
    *ret = out;
    return 0;
}

/* The kubelet's check of envFrom keys (IsEnvVarName): [-._a-zA-Z][-._a-zA-Z0-9]*, not
 * "." or "..", not starting with "..". */
static bool env_name_ok(const char *s)
{
    if (!*s || strcmp(s, ".") == 0 || strncmp(s, "..", 2) == 0 || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.' || *s == '_'))
            return false;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(struct ck__env *env, const char *name, const char *value, size_t vlen)
{
    for (size_t i = 0; i < env->n; i++) /* a later entry replaces an earlier one */
        if (strncmp(env->v[i], name, strlen(name)) == 0 && env->v[i][strlen(name)] == '=') {
            free(env->v[i]);
            env->v[i] = env->v[--env->n];
            break;
        }
    char **v = realloc(env->v, (env->n + 2) * sizeof(*v));
    if (!v)
        return CK_ENOMEM;
    env->v = v;
    if (asprintf(&env->v[env->n], "%s=%.*s", name, (int)vlen, value) < 0)
        return CK_ENOMEM;
    env->v[++env->n] = NULL;
    return 0;
}

int ck__env_add(struct ck__env *env, const char *name, const char *value)
{
    return push(env, name, value, strlen(value));
}

/* name and suffix as an environment variable's name: upper case, '-' as '_'. */
static void env_name(char *buf, size_t size, const char *name, const char *suffix)
{
    snprintf(buf, size, "%s%s", name, suffix);
    for (char *c = buf; *c; c++)
        *c = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
}

int ck__service_env(const json_t *svc, struct ck__env *env)
{
    const json_t *spec = json_object_get(svc, "spec");
    const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
    const char *svc_name =
        json_string_value(json_object_get(json_object_get(svc, "metadata"), "name"));
    const json_t *ports = json_object_get(spec, "ports");
    if (!ip || !*ip || strcmp(ip, "None") == 0 || !svc_name || json_array_size(ports) == 0)
        return 0; /* headless or without ports: no variables */
    char name[320], value[320], up[64], hostport[128];
    int r = 0;
    size_t i;
    json_t *port;
    json_array_foreach(ports, i, port)
    {
        json_int_t number = json_integer_value(json_object_get(port, "port"));
        const char *proto = json_string_value(json_object_get(port, "protocol")) ?: "TCP";
        const char *port_name = json_string_value(json_object_get(port, "name"));
        char lower[16];
        snprintf(lower, sizeof(lower), "%s", proto);
        for (char *c = lower; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        /* Go's net.JoinHostPort: an IPv6 address in brackets */
        snprintf(hostport, sizeof(hostport), strchr(ip, ':') ? "[%s]:%lld" : "%s:%lld", ip,
                 (long long)number);
        if (i == 0) {
            env_name(name, sizeof(name), svc_name, "_SERVICE_HOST");
            r |= ck__env_add(env, name, ip);
            snprintf(value, sizeof(value), "%lld", (long long)number);
            env_name(name, sizeof(name), svc_name, "_SERVICE_PORT");
            r |= ck__env_add(env, name, value);
            snprintf(value, sizeof(value), "%s://%s", lower, hostport);
            env_name(name, sizeof(name), svc_name, "_PORT");
            r |= ck__env_add(env, name, value);
        }
        if (port_name && *port_name) {
            snprintf(value, sizeof(value), "%lld", (long long)number);
            char suffix[96];
            snprintf(suffix, sizeof(suffix), "_SERVICE_PORT_%s", port_name);
            env_name(name, sizeof(name), svc_name, suffix);
            r |= ck__env_add(env, name, value);
        }
        /* the Docker link variables */
        snprintf(up, sizeof(up), "_PORT_%lld_%s", (long long)number, proto);
        snprintf(value, sizeof(value), "%s://%s", lower, hostport);
        env_name(name, sizeof(name), svc_name, up);
        r |= ck__env_add(env, name, value);
        static const char *const parts[] = {"_PROTO", "_PORT", "_ADDR"};
        for (size_t k = 0; k < 3; k++) {
            char with[96];
            snprintf(with, sizeof(with), "%s%s", up, parts[k]);
            env_name(name, sizeof(name), svc_name, with);
            if (k == 0)
                snprintf(value, sizeof(value), "%s", lower);
            else if (k == 1)
                snprintf(value, sizeof(value), "%lld", (long long)number);
            else
                snprintf(value, sizeof(value), "%s", ip);
            r |= ck__env_add(env, name, value);
        }
    }
    return r ? CK_ENOMEM : 0;
}

static const char *meta_string(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(meta_string(*(const json_t *const *)a, "name"),
                  meta_string(*(const json_t *const *)b, "name"));
}

int ck__service_links_env(const json_t *const *svcs, size_t n, const char *ns, bool enable_links,
                          struct ck__env *env)
{
    const json_t **chosen = calloc(n + 1, sizeof(*chosen));
    size_t n_chosen = 0;
    if (!chosen)
        return CK_ENOMEM;
    /* the master service first, then the pod's namespace's, which win a shared name */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const char *name = meta_string(svcs[i], "name");
            const char *sns = meta_string(svcs[i], "namespace");
            const char *ip =
                json_string_value(json_object_get(json_object_get(svcs[i], "spec"), "clusterIP"));
            if (!name || !sns || !ip || !*ip || strcmp(ip, "None") == 0)
                continue; /* kubelet's IsServiceIPSet: headless and ExternalName ones give none */
            bool master = strcmp(sns, "default") == 0 && strcmp(name, "kubernetes") == 0;
            if (pass == 0 ? !master : (!enable_links || strcmp(sns, ns) != 0 || master))
                continue;
            size_t j = 0;
            while (j < n_chosen && strcmp(meta_string(chosen[j], "name"), name) != 0)
                j++;
            chosen[j] = svcs[i];
            if (j == n_chosen)
                n_chosen++;
        }
    }
    /* by name: the kubelet's map has no order; a variable two services share goes to the later */
    qsort(chosen, n_chosen, sizeof(*chosen), by_name);
    int r = 0;
    for (size_t i = 0; i < n_chosen && r == 0; i++)
        r = ck__service_env(chosen[i], env);
    free(chosen);
    return r;
}

int ck__env_from_refs(const struct ck__pod_refs *refs, const json_t *container, struct ck__env *env,
                      struct ck_err *reterr)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(container, "envFrom"), i, e)
    {
        const json_t *cm = json_object_get(e, "configMapRef");
        const json_t *sec = json_object_get(e, "secretRef");
        const json_t *ref = cm ? cm : sec;
        const char *name = json_string_value(json_object_get(ref, "name"));
        const char *prefix = json_string_value(json_object_get(e, "prefix")) ?: "";
        if (!name)
            continue;
        json_t *data = NULL;
        int r = ref_data(refs, !cm, name, &data, reterr);
        if (r == CK_ENOENT && json_is_true(json_object_get(ref, "optional")))
            continue;
        if (r < 0)
            return r;
        const char *k;
        json_t *v;
        char invalid[512] = "";
        char **bad = calloc(json_object_size(data) + 1, sizeof(*bad));
        size_t nbad = 0;
        json_object_foreach(data, k, v)
        {
            char full[512];
            snprintf(full, sizeof(full), "%s%s", prefix, k);
            if (!env_name_ok(full)) {
                if (bad && (bad[nbad] = strdup(full)))
                    nbad++;
                continue;
            }
            push(env, full, json_string_value(v), json_string_length(v));
        }
        if (nbad) /* sorted, as the kubelet lists them */
            qsort(bad, nbad, sizeof(*bad), cmp_str);
        for (size_t b = 0; b < nbad; b++) {
            snprintf(invalid + strlen(invalid), sizeof(invalid) - strlen(invalid), "%s%s",
                     *invalid ? ", " : "", bad[b]);
            free(bad[b]);
        }
        free(bad);
        if (*invalid) {
            char msg[1024];
            snprintf(msg, sizeof(msg),
                     "Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered "
                     "invalid environment variable names.",
                     invalid, cm ? "configMap" : "secret", refs->ns, name);
            CK_LOGS(0, "InvalidEnvironmentVariableNames", "message", msg);
            if (refs->warn)
                refs->warn(refs->arg, "InvalidEnvironmentVariableNames", msg);
        }
        json_decref(data);
    }
    json_array_foreach(json_object_get(container, "env"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *from = json_object_get(e, "valueFrom");
        const json_t *cm = json_object_get(from, "configMapKeyRef");
        const json_t *sec = json_object_get(from, "secretKeyRef");
        const json_t *ref = cm ? cm : sec;
        if (!name || !ref)
            continue;
        const char *obj = json_string_value(json_object_get(ref, "name")) ?: "";
        const char *key = json_string_value(json_object_get(ref, "key")) ?: "";
        bool optional = json_is_true(json_object_get(ref, "optional"));
        json_t *data = NULL;
        int r = ref_data(refs, !cm, obj, &data, reterr);
        if (r == CK_ENOENT && optional)
            continue;
        if (r < 0)
            return r;
        const json_t *v = json_object_get(data, key);
        if (!v && !optional) {
            json_decref(data);
            return ck_err_set(reterr, CK_ENOENT, "couldn't find key %s in %s %s/%s", key,
                              cm ? "ConfigMap" : "Secret", refs->ns, obj);
        }
        if (v)
            push(env, name, json_string_value(v), json_string_length(v));
        json_decref(data);
    }
    return 0;
}

void ck__env_free(struct ck__env *env)
{
    for (size_t i = 0; i < env->n; i++)
        free(env->v[i]);
    free(env->v);
    env->v = NULL;
    env->n = 0;
}

/* ---- volumes ---- */

/* A relative path inside the volume: no "..", not absolute. */
static bool path_ok(const char *p)
{
    if (!p || !*p || *p == '/')
        return false;
    for (const char *s = p; *s; s = s[strcspn(s, "/")] ? s + strcspn(s, "/") + 1 : s + strlen(s))
        if (strncmp(s, "..", 2) == 0 && (s[2] == '/' || !s[2]))
            return false;
    return true;
}

static int write_file(const char *dir, const char *rel, const char *data, size_t len, int mode,
                      struct ck_err *reterr)
{
    char path[PATH_MAX];
    if (!path_ok(rel) || snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
        return ck_err_set(reterr, CK_EINVAL, "invalid path %s", rel ? rel : "");
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return ck_err_set(reterr, CK_EIO, "%s: %s", tmp, strerror(errno));
    bool ok = write(fd, data, len) == (ssize_t)len && fchmod(fd, (mode_t)mode) == 0;
    close(fd);
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return ck_err_set(reterr, CK_EIO, "%s: %s", path, strerror(errno));
    }
    return 0;
}

static int mode_of(const json_t *item, int dflt)
{
    const json_t *m = json_object_get(item, "mode");
    return json_is_integer(m) ? (int)json_integer_value(m) & 07777 : dflt;
}

/* A configMap or secret source (a volume's or a projection's) into dir. */
static int write_ref(const struct ck__pod_refs *refs, bool secret, const json_t *src,
                     const char *dir, int mode, struct ck_err *reterr)
{
    const char *name = json_string_value(json_object_get(src, secret ? "secretName" : "name"));
    if (!name)
        name = json_string_value(json_object_get(src, "name"));
    bool optional = json_is_true(json_object_get(src, "optional"));
    json_t *data = NULL;
    int r = ref_data(refs, secret, name ? name : "", &data, reterr);
    if (r == CK_ENOENT && optional)
        return 0;
    if (r < 0)
        return r;
    const json_t *items = json_object_get(src, "items");
    if (json_array_size(items)) {
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it)
        {
            const char *key = json_string_value(json_object_get(it, "key")) ?: "";
            const json_t *v = json_object_get(data, key);
            if (!v) {
                if (optional)
                    continue;
                r = secret ? ck_err_set(reterr, CK_ENOENT, "references non-existent secret key: %s",
                                        key)
                           : ck_err_set(reterr, CK_ENOENT,
                                        "configmap references non-existent config key: %s", key);
                break;
            }
            r = write_file(dir, json_string_value(json_object_get(it, "path")),
                           json_string_value(v), json_string_length(v), mode_of(it, mode), reterr);
            if (r < 0)
                break;
        }
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(data, k, v)
        {
            if ((r = write_file(dir, k, json_string_value(v), json_string_length(v), mode,
                                reterr)) < 0)
                break;
        }
    }
    json_decref(data);
    return r;
}

static int write_downward(const struct ck__pod_refs *refs, const json_t *src, const char *dir,
                          int mode, struct ck_err *reterr)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(src, "items"), i, it)
    {
        const char *fp =
            json_string_value(json_object_get(json_object_get(it, "fieldRef"), "fieldPath"));
        char *value = fp ? refs->field_ref(refs->arg, fp) : NULL;
        if (!value)
            continue; /* resourceFieldRef and unknown fields: not supplied */
        int r = write_file(dir, json_string_value(json_object_get(it, "path")), value,
                           strlen(value), mode_of(it, mode), reterr);
        free(value);
        if (r < 0)
            return r;
    }
    return 0;
}

/* A field of the pod through the downward API, or NULL. */
static char *pod_field(const struct ck__pod_refs *refs, const char *path)
{
    return refs->field_ref ? refs->field_ref(refs->arg, path) : NULL;
}

json_t *ck__token_request_body(const json_t *src, const char *pod_name, const char *pod_uid)
{
    const json_t *exp = json_object_get(src, "expirationSeconds");
    const char *audience = json_string_value(json_object_get(src, "audience"));
    json_t *spec = json_pack(
        "{s:I, s:{s:s, s:s, s:s, s:s}}", "expirationSeconds",
        (json_int_t)(json_is_integer(exp) ? json_integer_value(exp) : CK__TOKEN_DEFAULT_EXPIRATION),
        "boundObjectRef", "apiVersion", "v1", "kind", "Pod", "name", pod_name, "uid", pod_uid);
    /* no audience: the API server's own (the token authenticates to it) */
    if (spec && audience && *audience &&
        json_object_set_new(spec, "audiences", json_pack("[s]", audience)) < 0)
        spec = (json_decref(spec), NULL);
    return spec ? json_pack("{s:s, s:s, s:o}", "apiVersion", "authentication.k8s.io/v1", "kind",
                            "TokenRequest", "spec", spec)
                : NULL;
}

/*
 * A serviceAccountToken projection: a token for the pod's account, bound to the pod
 * (Kubernetes' token manager asks the same), written at its path.
 */
static int write_token(const struct ck__pod_refs *refs, const json_t *src, const char *dir,
                       int mode, struct ck_err *reterr)
{
    if (!refs->request_token)
        return ck_err_set(reterr, CK_EINVAL, "serviceAccountToken projections are not supported");
    char *sa = pod_field(refs, "spec.serviceAccountName");
    char *name = pod_field(refs, "metadata.name");
    char *uid = pod_field(refs, "metadata.uid");
    json_t *request = sa && name && uid ? ck__token_request_body(src, name, uid) : NULL;
    json_t *answer = NULL;
    int r = !request ? ck_err_set(reterr, CK_ENOMEM, "out of memory")
                     : refs->request_token(refs->arg, sa, request, &answer, reterr);
    if (r == 0) {
        const char *token =
            json_string_value(json_object_get(json_object_get(answer, "status"), "token"));
        r = token ? write_file(dir, json_string_value(json_object_get(src, "path")), token,
                               strlen(token), mode, reterr)
                  : ck_err_set(reterr, CK_EIO, "the TokenRequest's answer holds no token");
    }
    json_decref(answer);
    json_decref(request);
    free(sa);
    free(name);
    free(uid);
    return r;
}

/*
 * A hostPath volume's type check, as the kubelet's hostPath plugin makes it at SetUp:
 * DirectoryOrCreate makes the directory (0755, parents too) and FileOrCreate an empty
 * file (0644, its directory must exist) when nothing is there; then the path must be
 * what the type says (stat follows links). An unset type checks nothing.
 */
static int check_host_path(const json_t *hp, struct ck_err *reterr)
{
    const char *path = json_string_value(json_object_get(hp, "path"));
    const char *type = json_string_value(json_object_get(hp, "type"));
    struct stat st;
    if (!path || !type || !*type)
        return 0;
    bool exists = stat(path, &st) == 0;
    if (!exists && strcmp(type, "DirectoryOrCreate") == 0) {
        if (ck__mkdirs(path) < 0)
            return ck_err_set(reterr, CK_EIO, "mkdir %s: %s", path, strerror(errno));
        exists = stat(path, &st) == 0;
    } else if (!exists && strcmp(type, "FileOrCreate") == 0) {
        int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
            return ck_err_set(reterr, CK_EIO, "open %s: %s", path, strerror(errno));
        close(fd);
        exists = stat(path, &st) == 0;
    }
    static const struct {
        const char *type, *what;
        mode_t fmt;
    } checks[] = {
        {"DirectoryOrCreate", "a directory", S_IFDIR},
        {"Directory", "a directory", S_IFDIR},
        {"FileOrCreate", "a file", S_IFREG},
        {"File", "a file", S_IFREG},
        {"Socket", "a socket file", S_IFSOCK},
        {"CharDevice", "a character device", S_IFCHR},
        {"BlockDevice", "a block device", S_IFBLK},
    };
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
        if (strcmp(type, checks[i].type) == 0)
            return exists && (st.st_mode & S_IFMT) == checks[i].fmt
                       ? 0
                       : ck_err_set(reterr, CK_EINVAL, "hostPath type check failed: %s is not %s",
                                    path, checks[i].what);
    return ck_err_set(reterr, CK_EINVAL, "%s is an invalid volume type", type);
}

int ck__volume_write(const struct ck__pod_refs *refs, const json_t *vol, const char *dir,
                     struct ck_err *reterr)
{
    const json_t *src;
    int dflt = 0644;
    if ((src = json_object_get(vol, "hostPath")))
        return check_host_path(src, reterr);
    if ((src = json_object_get(vol, "configMap")) || (src = json_object_get(vol, "secret")) ||
        (src = json_object_get(vol, "downwardAPI")) || (src = json_object_get(vol, "projected"))) {
        const json_t *dm = json_object_get(src, "defaultMode");
        if (json_is_integer(dm))
            dflt = (int)json_integer_value(dm) & 07777;
    } else
        return 0;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return ck_err_set(reterr, CK_EIO, "%s: %s", dir, strerror(errno));
    int r;
    if ((src = json_object_get(vol, "configMap")))
        r = write_ref(refs, false, src, dir, dflt, reterr);
    else if ((src = json_object_get(vol, "secret")))
        r = write_ref(refs, true, src, dir, dflt, reterr);
    else if ((src = json_object_get(vol, "downwardAPI")))
        r = write_downward(refs, src, dir, dflt, reterr);
    else {
        size_t i;
        json_t *s;
        r = 0;
        json_array_foreach(json_object_get(json_object_get(vol, "projected"), "sources"), i, s)
        {
            const json_t *p;
            if ((p = json_object_get(s, "configMap")))
                r = write_ref(refs, false, p, dir, dflt, reterr);
            else if ((p = json_object_get(s, "secret")))
                r = write_ref(refs, true, p, dir, dflt, reterr);
            else if ((p = json_object_get(s, "downwardAPI")))
                r = write_downward(refs, p, dir, dflt, reterr);
            else if ((p = json_object_get(s, "serviceAccountToken")))
                r = write_token(refs, p, dir, dflt, reterr);
            if (r < 0)
                break;
        }
    }
    return r;
}

/* The value of name (n bytes) in envp ("NAME=value"), the last one set; NULL when unset. */
static const char *env_lookup(char *const *envp, const char *name, size_t n)
{
    const char *found = NULL;
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            found = envp[i] + n + 1;
    return found;
}

char *ck__expand_vars(const char *in, char *const *envp)
{
    struct ck__buf out = {0};
    for (const char *p = in; *p;) {
        if (p[0] != '$' || !p[1]) { /* a plain byte, or a '$' that ends the input */
            ck__buf_add(&out, p, 1);
            p++;
            continue;
        }
        if (p[1] == '$') { /* "$$": an escaped '$' */
            ck__buf_add(&out, "$", 1);
            p += 2;
            continue;
        }
        const char *close = p[1] == '(' ? strchr(p + 2, ')') : NULL;
        if (!close) { /* not a reference: '$' and the next byte as written */
            ck__buf_add(&out, p, 2);
            p += 2;
            continue;
        }
        const char *value = env_lookup(envp, p + 2, (size_t)(close - p - 2));
        if (value)
            ck__buf_adds(&out, value);
        else /* undefined: the reference stays as written */
            ck__buf_add(&out, p, (size_t)(close - p + 1));
        p = close + 1;
    }
    if (out.err) {
        ck__buf_release(&out);
        return NULL;
    }
    if (!out.p)
        return strdup("");
    return ck__buf_take(&out);
}
