/*
 * test_podconfig.c - tests for lib/agent/podconfig.c over the fake client: env from
 * configMapKeyRef and secretKeyRef (decoded), envFrom with a prefix (keys that are not
 * variable names skipped with a warning, sorted), env winning over envFrom; a missing
 * object or key with the kubelet's messages, and optional ones skipped; configMap,
 * secret (items, modes), downwardAPI and projected volumes as files; a path that leaves
 * the volume refused; a serviceAccountToken projection asking a TokenRequest bound to the
 * pod for its account (its audience, its expiration or the default hour); a Service's
 * environment variables as the kubelet names them; the $(VAR) expansion of
 * command and args, case by case as Kubernetes' expansion package reads them.
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/agent/internal.h"
#include "ckube/controllers.h"
#include "scratch.h"

struct world {
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck__pod_refs refs;
    char dir[64];
    char warned[1024];
};

static char *field(void *arg, const char *path)
{
    (void)arg;
    if (strcmp(path, "metadata.uid") == 0)
        return strdup("uid-1");
    if (strcmp(path, "spec.serviceAccountName") == 0)
        return strdup("builder");
    return strcmp(path, "metadata.name") == 0 ? strdup("web-1") : NULL;
}

/* The TokenRequest last asked for, and for which account; answered "token-for-SA". */
static json_t *token_asked;
static char token_sa[64];

static int token(void *arg, const char *sa, const json_t *request, json_t **ret,
                 struct ck_err *reterr)
{
    (void)arg;
    (void)reterr;
    json_decref(token_asked);
    token_asked = json_deep_copy(request);
    snprintf(token_sa, sizeof(token_sa), "%s", sa);
    char t[96];
    snprintf(t, sizeof(t), "token-for-%s", sa);
    *ret = json_pack("{s:{s:s}}", "status", "token", t);
    return 0;
}

static void warn(void *arg, const char *reason, const char *msg)
{
    struct world *w = arg;
    snprintf(w->warned, sizeof(w->warned), "%s: %s", reason, msg);
}

static int setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    if (!w || ck_fake_client_new(&w->fc, NULL) < 0)
        return -1;
    ck_fake_client_iface(w->fc, &w->client);
    w->refs = (struct ck__pod_refs){&w->client, "default", field, warn, w, token};
    json_t *cm =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s}, s:{s:s}}", "apiVersion", "v1",
                  "kind", "ConfigMap", "metadata", "name", "cfg", "namespace", "default", "data",
                  "greeting", "hello", "1bad", "x", "0worse", "y", "binaryData", "blob", "AAEC");
    json_t *sec = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
                            "Secret", "metadata", "name", "sec", "namespace", "default", "data",
                            "password", "czNjcmV0"); /* s3cret */
    ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "configmaps"), cm);
    ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "secrets"), sec);
    json_decref(cm);
    json_decref(sec);
    if (scratch_make_dir(w->dir, sizeof(w->dir), "podconfig") < 0)
        return -1;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    scratch_remove_dir(w->dir);
    ck_fake_client_free(w->fc);
    free(w);
    return 0;
}

static const char *env_get(const struct ck__env *env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
            return env->v[i] + n + 1;
    return NULL;
}

static void test_env_refs_and_env_from(void **state)
{
    struct world *w = *state;
    json_t *c =
        json_loads("{\"envFrom\": [{\"prefix\": \"CM_\", \"configMapRef\": {\"name\": \"cfg\"}},"
                   "  {\"configMapRef\": {\"name\": \"cfg\"}},"
                   "  {\"secretRef\": {\"name\": \"absent\", \"optional\": true}}],"
                   " \"env\": [{\"name\": \"greeting\", \"valueFrom\": {\"secretKeyRef\":"
                   "   {\"name\": \"sec\", \"key\": \"password\"}}},"
                   "  {\"name\": \"G\", \"valueFrom\": {\"configMapKeyRef\":"
                   "   {\"name\": \"cfg\", \"key\": \"greeting\"}}},"
                   "  {\"name\": \"OPT\", \"valueFrom\": {\"configMapKeyRef\":"
                   "   {\"name\": \"cfg\", \"key\": \"nope\", \"optional\": true}}}]}",
                   0, NULL);
    struct ck__env env = {0};
    struct ck_err err = {0};
    assert_int_equal(ck__env_from_refs(&w->refs, c, &env, &err), 0);
    assert_string_equal(env_get(&env, "CM_greeting"), "hello");
    assert_string_equal(env_get(&env, "CM_1bad"), "x"); /* the prefix makes it a name */
    assert_string_equal(env_get(&env, "G"), "hello");
    assert_string_equal(env_get(&env, "greeting"), "s3cret"); /* env wins over envFrom */
    assert_null(env_get(&env, "1bad"));
    assert_null(env_get(&env, "OPT"));
    assert_string_equal(w->warned, "InvalidEnvironmentVariableNames: Keys [0worse, 1bad] from "
                                   "the EnvFrom configMap default/cfg were skipped since they are "
                                   "considered invalid environment variable names.");
    assert_null(env.v[env.n]);
    ck__env_free(&env);
    json_decref(c);
}

static void test_missing_objects_and_keys(void **state)
{
    struct world *w = *state;
    struct ck__env env = {0};
    struct ck_err err = {0};
    json_t *c = json_loads("{\"env\": [{\"name\": \"X\", \"valueFrom\": {\"configMapKeyRef\":"
                           " {\"name\": \"gone\", \"key\": \"k\"}}}]}",
                           0, NULL);
    assert_int_equal(ck__env_from_refs(&w->refs, c, &env, &err), CK_ENOENT);
    assert_string_equal(err.msg, "configmap \"gone\" not found");
    json_decref(c);
    c = json_loads("{\"env\": [{\"name\": \"X\", \"valueFrom\": {\"secretKeyRef\":"
                   " {\"name\": \"sec\", \"key\": \"k\"}}}]}",
                   0, NULL);
    assert_int_equal(ck__env_from_refs(&w->refs, c, &env, &err), CK_ENOENT);
    assert_string_equal(err.msg, "couldn't find key k in Secret default/sec");
    json_decref(c);
    c = json_loads("{\"envFrom\": [{\"secretRef\": {\"name\": \"absent\"}}]}", 0, NULL);
    assert_int_equal(ck__env_from_refs(&w->refs, c, &env, &err), CK_ENOENT);
    assert_string_equal(err.msg, "secret \"absent\" not found");
    json_decref(c);
    ck__env_free(&env);
}

static char *slurp(const char *dir, const char *file, int *ret_mode)
{
    static char buf[256];
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    struct stat st;
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    if (ret_mode)
        *ret_mode = stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
    return f ? buf : NULL;
}

static void test_volumes_as_files(void **state)
{
    struct world *w = *state;
    char dir[128];
    struct ck_err err = {0};
    int mode = 0;
    snprintf(dir, sizeof(dir), "%s/cm", w->dir);
    json_t *v = json_loads("{\"name\": \"cm\", \"configMap\": {\"name\": \"cfg\"}}", 0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), 0);
    assert_string_equal(slurp(dir, "greeting", &mode), "hello");
    assert_int_equal(mode, 0644);
    assert_int_equal(memcmp(slurp(dir, "blob", NULL), "\0\1\2", 3), 0); /* binaryData */
    json_decref(v);
    snprintf(dir, sizeof(dir), "%s/sec", w->dir);
    v = json_loads("{\"name\": \"sec\", \"secret\": {\"secretName\": \"sec\", \"defaultMode\": 256,"
                   " \"items\": [{\"key\": \"password\", \"path\": \"a/pw\"},"
                   "  {\"key\": \"password\", \"path\": \"pw2\", \"mode\": 384}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), 0);
    assert_string_equal(slurp(dir, "a/pw", &mode), "s3cret");
    assert_int_equal(mode, 0400);
    slurp(dir, "pw2", &mode);
    assert_int_equal(mode, 0600);
    json_decref(v);
    snprintf(dir, sizeof(dir), "%s/proj", w->dir);
    v = json_loads("{\"name\": \"p\", \"projected\": {\"sources\": ["
                   " {\"configMap\": {\"name\": \"cfg\", \"items\": [{\"key\": \"greeting\","
                   "   \"path\": \"g\"}]}},"
                   " {\"downwardAPI\": {\"items\": [{\"path\": \"name\", \"fieldRef\":"
                   "   {\"fieldPath\": \"metadata.name\"}}]}},"
                   " {\"secret\": {\"name\": \"absent\", \"optional\": true}}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), 0);
    assert_string_equal(slurp(dir, "g", NULL), "hello");
    assert_string_equal(slurp(dir, "name", NULL), "web-1");
    json_decref(v);
    /* a missing object or key; a path out of the volume */
    v = json_loads("{\"name\": \"x\", \"configMap\": {\"name\": \"gone\"}}", 0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), CK_ENOENT);
    assert_string_equal(err.msg, "configmap \"gone\" not found");
    json_decref(v);
    v = json_loads("{\"name\": \"x\", \"secret\": {\"secretName\": \"sec\", \"items\":"
                   " [{\"key\": \"nope\", \"path\": \"n\"}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), CK_ENOENT);
    assert_string_equal(err.msg, "references non-existent secret key: nope");
    json_decref(v);
    v = json_loads("{\"name\": \"x\", \"configMap\": {\"name\": \"cfg\", \"items\":"
                   " [{\"key\": \"greeting\", \"path\": \"../escape\"}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), CK_EINVAL);
    assert_null(slurp(w->dir, "escape", NULL));
    json_decref(v);
}

/* serviceAccountToken: a TokenRequest for the pod's account bound to the pod, written. */
static void test_service_account_token(void **state)
{
    struct world *w = *state;
    struct ck_err err = {0};
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/sa", w->dir);
    json_t *v =
        json_loads("{\"name\": \"kube-api-access-x\", \"projected\": {\"defaultMode\":"
                   " 420, \"sources\": [{\"serviceAccountToken\": {\"expirationSeconds\":"
                   " 3607, \"path\": \"token\"}}, {\"downwardAPI\": {\"items\": [{\"path\":"
                   " \"namespace\", \"fieldRef\": {\"fieldPath\": \"metadata.name\"}}]}}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), 0);
    int mode = 0;
    assert_string_equal(slurp(dir, "token", &mode), "token-for-builder");
    assert_int_equal(mode, 0644);
    assert_string_equal(token_sa, "builder");
    json_t *want = json_loads(
        "{\"apiVersion\": \"authentication.k8s.io/v1\", \"kind\": \"TokenRequest\", \"spec\":"
        " {\"expirationSeconds\": 3607, \"boundObjectRef\": {\"apiVersion\": \"v1\", \"kind\":"
        " \"Pod\", \"name\": \"web-1\", \"uid\": \"uid-1\"}}}",
        0, NULL);
    assert_true(json_equal(token_asked, want));
    json_decref(want);
    json_decref(v);
    /* an audience is asked for; no expirationSeconds is Kubernetes' default hour */
    v = json_loads("{\"name\": \"t\", \"projected\": {\"sources\": [{\"serviceAccountToken\":"
                   " {\"audience\": \"vault\", \"path\": \"sub/t\"}}]}}",
                   0, NULL);
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), 0);
    assert_string_equal(slurp(dir, "sub/t", NULL), "token-for-builder");
    const json_t *spec = json_object_get(token_asked, "spec");
    assert_int_equal(json_integer_value(json_object_get(spec, "expirationSeconds")), 3600);
    assert_string_equal(json_string_value(json_array_get(json_object_get(spec, "audiences"), 0)),
                        "vault");
    /* without a way to ask, the volume cannot be set up */
    w->refs.request_token = NULL;
    assert_int_equal(ck__volume_write(&w->refs, v, dir, &err), CK_EINVAL);
    json_decref(v);
    token_asked = (json_decref(token_asked), NULL);
}

/* The kubelet's service variables, after Kubernetes' envvars_test.go. */
/* ck__volume_write of a hostPath volume of type type at path: its result and message. */
static int host_path(struct world *w, const char *path, const char *type, struct ck_err *err)
{
    json_t *v = json_pack("{s:s, s:{s:s, s:s}}", "name", "hp", "hostPath", "path", path, "type",
                          type ? type : "");
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/volumes-hp", w->dir);
    int r = ck__volume_write(&w->refs, v, dir, err);
    json_decref(v);
    return r;
}

static void test_host_path_types(void **state)
{
    struct world *w = *state;
    struct ck_err err = {0};
    char dir[200], file[200], missing[200];
    struct stat st;
    snprintf(dir, sizeof(dir), "%s/made/deeper", w->dir);
    snprintf(file, sizeof(file), "%s/made/a-file", w->dir);
    snprintf(missing, sizeof(missing), "%s/nothing-here", w->dir);
    /* an unset type checks nothing, even for a path that is not there */
    assert_int_equal(host_path(w, missing, NULL, &err), 0);
    /* DirectoryOrCreate makes it, parents too; Directory then finds it */
    assert_int_equal(host_path(w, dir, "DirectoryOrCreate", &err), 0);
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(host_path(w, dir, "Directory", &err), 0);
    /* FileOrCreate makes an empty file; File then finds it; a file is no directory */
    assert_int_equal(host_path(w, file, "FileOrCreate", &err), 0);
    assert_int_equal(stat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode) && st.st_size == 0);
    assert_int_equal(host_path(w, file, "File", &err), 0);
    assert_int_equal(host_path(w, file, "Directory", &err), CK_EINVAL);
    char want[300];
    snprintf(want, sizeof(want), "hostPath type check failed: %s is not a directory", file);
    assert_string_equal(err.msg, want);
    assert_int_equal(host_path(w, file, "DirectoryOrCreate", &err), CK_EINVAL);
    assert_string_equal(err.msg, want);
    /* nothing there: Directory and File fail, as the kubelet's checks do */
    assert_int_equal(host_path(w, missing, "File", &err), CK_EINVAL);
    snprintf(want, sizeof(want), "hostPath type check failed: %s is not a file", missing);
    assert_string_equal(err.msg, want);
    assert_int_equal(host_path(w, dir, "FileOrCreate", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "is not a file"));
    /* the special files */
    assert_int_equal(host_path(w, file, "Socket", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "is not a socket file"));
    assert_int_equal(host_path(w, "/dev/null", "CharDevice", &err), 0);
    assert_int_equal(host_path(w, "/dev/null", "BlockDevice", &err), CK_EINVAL);
    assert_string_equal(err.msg, "hostPath type check failed: /dev/null is not a block device");
    assert_int_equal(host_path(w, file, "Fifo", &err), CK_EINVAL);
    assert_string_equal(err.msg, "Fifo is an invalid volume type");
    /* FileOrCreate does not make the file's directory (the kubelet's open(O_CREAT)) */
    snprintf(missing, sizeof(missing), "%s/no-dir/f", w->dir);
    assert_int_equal(host_path(w, missing, "FileOrCreate", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "No such file or directory"));
}

static void test_service_env(void **state)
{
    (void)state;
    json_t *svc = json_loads(
        "{\"metadata\": {\"name\": \"super-ldap\"}, \"spec\": {\"clusterIP\": \"10.96.0.1\","
        " \"ports\": [{\"name\": \"https\", \"port\": 443, \"protocol\": \"TCP\"},"
        " {\"name\": \"dns-udp\", \"port\": 53, \"protocol\": \"UDP\"}]}}",
        0, NULL);
    struct ck__env env = {0};
    assert_int_equal(ck__service_env(svc, &env), 0);
    static const char *const want[] = {
        "SUPER_LDAP_SERVICE_HOST=10.96.0.1",
        "SUPER_LDAP_SERVICE_PORT=443",
        "SUPER_LDAP_PORT=tcp://10.96.0.1:443",
        "SUPER_LDAP_SERVICE_PORT_HTTPS=443",
        "SUPER_LDAP_PORT_443_TCP=tcp://10.96.0.1:443",
        "SUPER_LDAP_PORT_443_TCP_PROTO=tcp",
        "SUPER_LDAP_PORT_443_TCP_PORT=443",
        "SUPER_LDAP_PORT_443_TCP_ADDR=10.96.0.1",
        "SUPER_LDAP_SERVICE_PORT_DNS_UDP=53",
        "SUPER_LDAP_PORT_53_UDP=udp://10.96.0.1:53",
        "SUPER_LDAP_PORT_53_UDP_PROTO=udp",
        "SUPER_LDAP_PORT_53_UDP_PORT=53",
        "SUPER_LDAP_PORT_53_UDP_ADDR=10.96.0.1",
    };
    assert_int_equal(env.n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < env.n; i++)
        assert_string_equal(env.v[i], want[i]);
    ck__env_free(&env);
    json_decref(svc);
    /* a headless Service has none */
    svc = json_loads("{\"metadata\": {\"name\": \"h\"}, \"spec\": {\"clusterIP\": \"None\","
                     " \"ports\": [{\"port\": 80}]}}",
                     0, NULL);
    assert_int_equal(ck__service_env(svc, &env), 0);
    assert_int_equal(env.n, 0);
    json_decref(svc);
}

static void test_service_links_env(void **state)
{
    (void)state;
    json_t *svcs = json_loads(
        "["
        "{\"metadata\": {\"namespace\": \"default\", \"name\": \"kubernetes\"}, \"spec\": "
        "{\"clusterIP\": \"10.96.0.1\", \"ports\": [{\"name\": \"https\", \"port\": 443}]}},"
        "{\"metadata\": {\"namespace\": \"default\", \"name\": \"elsewhere\"}, \"spec\": "
        "{\"clusterIP\": \"10.96.0.2\", \"ports\": [{\"port\": 80}]}},"
        "{\"metadata\": {\"namespace\": \"team\", \"name\": \"web-front\"}, \"spec\": "
        "{\"clusterIP\": \"10.96.0.20\", \"ports\": [{\"name\": \"http\", \"port\": 80, "
        "\"protocol\": \"TCP\"}, {\"name\": \"metrics-udp\", \"port\": 9100, "
        "\"protocol\": \"UDP\"}]}},"
        "{\"metadata\": {\"namespace\": \"team\", \"name\": \"headless\"}, \"spec\": "
        "{\"clusterIP\": \"None\", \"ports\": [{\"port\": 80}]}},"
        "{\"metadata\": {\"namespace\": \"team\", \"name\": \"outside\"}, \"spec\": "
        "{\"type\": \"ExternalName\", \"externalName\": \"example.com\"}},"
        "{\"metadata\": {\"namespace\": \"team\", \"name\": \"six\"}, \"spec\": "
        "{\"clusterIP\": \"fd00::10\", \"ports\": [{\"port\": 8080}]}},"
        "{\"metadata\": {\"namespace\": \"other\", \"name\": \"db\"}, \"spec\": "
        "{\"clusterIP\": \"10.96.0.30\", \"ports\": [{\"port\": 5432}]}}"
        "]",
        0, NULL);
    assert_non_null(svcs);
    size_t n = json_array_size(svcs);
    const json_t *v[8];
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(svcs, i);
    struct ck__env env = {0};
    assert_int_equal(ck__service_links_env(v, n, "team", true, &env), 0);
    assert_string_equal(env_get(&env, "KUBERNETES_SERVICE_HOST"), "10.96.0.1");
    assert_string_equal(env_get(&env, "KUBERNETES_SERVICE_PORT_HTTPS"), "443");
    assert_string_equal(env_get(&env, "WEB_FRONT_SERVICE_HOST"), "10.96.0.20");
    assert_string_equal(env_get(&env, "WEB_FRONT_SERVICE_PORT"), "80");
    assert_string_equal(env_get(&env, "WEB_FRONT_SERVICE_PORT_HTTP"), "80");
    assert_string_equal(env_get(&env, "WEB_FRONT_SERVICE_PORT_METRICS_UDP"), "9100");
    assert_string_equal(env_get(&env, "WEB_FRONT_PORT"), "tcp://10.96.0.20:80");
    assert_string_equal(env_get(&env, "WEB_FRONT_PORT_9100_UDP"), "udp://10.96.0.20:9100");
    assert_string_equal(env_get(&env, "WEB_FRONT_PORT_9100_UDP_PROTO"), "udp");
    assert_string_equal(env_get(&env, "WEB_FRONT_PORT_9100_UDP_PORT"), "9100");
    assert_string_equal(env_get(&env, "WEB_FRONT_PORT_9100_UDP_ADDR"), "10.96.0.20");
    /* IPv6: the address in brackets where a port follows (Go's JoinHostPort) */
    assert_string_equal(env_get(&env, "SIX_PORT"), "tcp://[fd00::10]:8080");
    assert_string_equal(env_get(&env, "SIX_PORT_8080_TCP"), "tcp://[fd00::10]:8080");
    assert_string_equal(env_get(&env, "SIX_PORT_8080_TCP_ADDR"), "fd00::10");
    /* headless, ExternalName, other namespaces, default's others: none */
    for (size_t i = 0; i < env.n; i++)
        assert_true(strncmp(env.v[i], "HEADLESS_", 9) != 0 &&
                    strncmp(env.v[i], "OUTSIDE_", 8) != 0 && strncmp(env.v[i], "DB_", 3) != 0 &&
                    strncmp(env.v[i], "ELSEWHERE_", 10) != 0);
    /* host, port and _PORT, then per port its name's and 4 link variables */
    assert_int_equal(env.n, 8 + 13 + 7);
    ck__env_free(&env);

    /* enableServiceLinks false: the master Service's alone */
    assert_int_equal(ck__service_links_env(v, n, "team", false, &env), 0);
    assert_string_equal(env_get(&env, "KUBERNETES_SERVICE_HOST"), "10.96.0.1");
    assert_null(env_get(&env, "WEB_FRONT_SERVICE_HOST"));
    assert_int_equal(env.n, 8);
    ck__env_free(&env);
    /* in default, its Services are the pod's own */
    assert_int_equal(ck__service_links_env(v, n, "default", true, &env), 0);
    assert_string_equal(env_get(&env, "ELSEWHERE_SERVICE_HOST"), "10.96.0.2");
    assert_string_equal(env_get(&env, "KUBERNETES_PORT"), "tcp://10.96.0.1:443");
    ck__env_free(&env);
    /* a Service named kubernetes in the pod's namespace wins over the master one */
    json_t *own =
        json_loads("{\"metadata\": {\"namespace\": \"team\", \"name\": \"kubernetes\"},"
                   " \"spec\": {\"clusterIP\": \"10.96.0.99\", \"ports\": [{\"port\": 80}]}}",
                   0, NULL);
    const json_t *both[] = {own, v[0]};
    assert_int_equal(ck__service_links_env(both, 2, "team", true, &env), 0);
    assert_string_equal(env_get(&env, "KUBERNETES_SERVICE_HOST"), "10.96.0.99");
    assert_null(env_get(&env, "KUBERNETES_SERVICE_PORT_HTTPS"));
    ck__env_free(&env);
    json_decref(own);
    json_decref(svcs);
}

static void test_expand_vars(void **state)
{
    (void)state;
    char *envp[] = {"VAR_A=A", "VAR_B=B", "EMPTY=", "VAR_A=A2", NULL};
    static const char *const cases[][2] = {
        {"$(VAR_A)", "A2"}, /* the last definition wins, as in the kubelet's map */
        {"___$(VAR_B)___", "___B___"},
        {"$(VAR_A)-$(VAR_B)", "A2-B"},
        {"$(EMPTY)x", "x"},
        {"$$(VAR_B)", "$(VAR_B)"}, /* escaped */
        {"$$$(VAR_B)", "$B"},
        {"$$$$", "$$"},
        {"$(VAR_DNE)", "$(VAR_DNE)"}, /* undefined: as written */
        {"$()", "$()"},
        {"$(VAR_B", "$(VAR_B"}, /* no closing parenthesis */
        {"$VAR_B", "$VAR_B"},
        {"x$", "x$"},
        {"$(VAR_B))", "B)"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = ck__expand_vars(cases[i][0], envp);
        assert_non_null(got);
        if (strcmp(got, cases[i][1]) != 0)
            fail_msg("expand \"%s\": got \"%s\", want \"%s\"", cases[i][0], got, cases[i][1]);
        free(got);
    }
    char *none = ck__expand_vars("$(VAR_A)", NULL);
    assert_string_equal(none, "$(VAR_A)");
    free(none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_env_refs_and_env_from, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_objects_and_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_volumes_as_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_account_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_path_types, setup, teardown),
        cmocka_unit_test(test_service_env),
        cmocka_unit_test(test_service_links_env),
        cmocka_unit_test(test_expand_vars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
