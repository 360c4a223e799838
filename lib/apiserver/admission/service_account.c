/*
 * service_account.c - the ServiceAccount admission plugin: a created pod
 * runs as a ServiceAccount that exists, and gets its credentials as a projected
 * volume.
 *
 * Mirrors Kubernetes' plugin/pkg/admission/serviceaccount/admission.go (Admit,
 * mountServiceAccountToken, TokenVolumeSource, shouldAutomount) as 1.32 has it:
 * a pod without spec.serviceAccountName runs as "default"; the account must
 * exist in the pod's namespace, else the create is 403 Forbidden "error looking
 * up service account NS/NAME: serviceaccount "NAME" not found" (the "default"
 * account, which a controller creates shortly after its namespace, is looked up
 * ten times 100-200 ms apart first, as Kubernetes does); unless the pod's or else
 * the account's automountServiceAccountToken is false, the pod gets a projected
 * volume `kube-api-access-<5 random characters>` (a bound token at `token`
 * expiring in 3607 s, the kube-root-ca.crt ConfigMap's ca.crt, the namespace from
 * the downward API; defaultMode 420) and every init container and container with
 * nothing mounted at /var/run/secrets/kubernetes.io/serviceaccount mounts it
 * there read-only. A pod that already has a kube-api-access-* volume keeps it; a
 * mirror pod (kubernetes.io/config.mirror annotation) is left as it is. The
 * account's imagePullSecrets become the pod's when it has none.
 *
 * It runs on pod creates, in the admission chain (chain.c) when enabled (it is by
 * default, as in kube-apiserver).
 *
 * Threading: the pure part touches only its arguments; the lookup reads the store.
 *
 * Tested by tests/apiserver/test_serviceaccount_admission.c and
 * tests/e2e/test_serviceaccount.sh.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define SA_MOUNT_PATH       "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_VOLUME_PREFIX    "kube-api-access-"
#define SA_TOKEN_EXPIRATION 3607 /* serviceaccount.WarnOnlyBoundTokenExpirationSeconds */
#define MIRROR_ANNOTATION   "kubernetes.io/config.mirror"

/* shouldAutomount: the pod's preference wins, then the account's, then true. */
static bool should_automount(const json_t *pod_spec, const json_t *sa)
{
    const json_t *p = json_object_get(pod_spec, "automountServiceAccountToken");
    if (json_is_boolean(p))
        return json_is_true(p);
    const json_t *s = json_object_get(sa, "automountServiceAccountToken");
    if (json_is_boolean(s))
        return json_is_true(s);
    return true;
}

/* names.SimpleNameGenerator: prefix + 5 characters of utilrand's alphabet. */
static void volume_name(char buf[sizeof(SA_VOLUME_PREFIX) + 5])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char r[5];
    randombytes_buf(r, sizeof(r));
    memcpy(buf, SA_VOLUME_PREFIX, sizeof(SA_VOLUME_PREFIX) - 1);
    for (size_t i = 0; i < 5; i++)
        buf[sizeof(SA_VOLUME_PREFIX) - 1 + i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
    buf[sizeof(SA_VOLUME_PREFIX) + 4] = '\0';
}

/* TokenVolumeSource, as a volume named name. New reference or NULL. */
static json_t *token_volume(const char *name)
{
    return json_pack("{s:s, s:{s:i, s:[{s:{s:I, s:s}}, {s:{s:s, s:[{s:s, s:s}]}},"
                     " {s:{s:[{s:s, s:{s:s, s:s}}]}}]}}",
                     "name", name, "projected", "defaultMode", 420, "sources",
                     "serviceAccountToken", "expirationSeconds", (json_int_t)SA_TOKEN_EXPIRATION,
                     "path", "token", "configMap", "name", "kube-root-ca.crt", "items", "key",
                     "ca.crt", "path", "ca.crt", "downwardAPI", "items", "path", "namespace",
                     "fieldRef", "apiVersion", "v1", "fieldPath", "metadata.namespace");
}

/* Adds the mount to every container of list without one at SA_MOUNT_PATH; *ret_added says if any.
 */
static int mount_in(json_t *list, const char *name, bool *ret_added)
{
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        if (!json_is_object(c))
            continue;
        json_t *mounts = json_object_get(c, "volumeMounts");
        bool present = false;
        size_t j;
        json_t *m;
        json_array_foreach(mounts, j, m)
        {
            const char *path = json_string_value(json_object_get(m, "mountPath"));
            present = present || (path && strcmp(path, SA_MOUNT_PATH) == 0);
        }
        if (present)
            continue;
        if (!json_is_array(mounts)) {
            if (json_object_set_new(c, "volumeMounts", json_array()) < 0)
                return CK_ENOMEM;
            mounts = json_object_get(c, "volumeMounts");
        }
        if (json_array_append_new(mounts, json_pack("{s:s, s:b, s:s}", "name", name, "readOnly", 1,
                                                    "mountPath", SA_MOUNT_PATH)) < 0)
            return CK_ENOMEM;
        *ret_added = true;
    }
    return 0;
}

/* mountServiceAccountToken. */
static int mount_token(json_t *spec)
{
    char generated[sizeof(SA_VOLUME_PREFIX) + 5];
    const char *name = NULL;
    json_t *volumes = json_object_get(spec, "volumes");
    size_t i;
    json_t *v;
    json_array_foreach(volumes, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strncmp(n, SA_VOLUME_PREFIX, sizeof(SA_VOLUME_PREFIX) - 1) == 0) {
            name = n;
            break;
        }
    }
    bool has_volume = name != NULL;
    if (!name) {
        volume_name(generated);
        name = generated;
    }
    bool needed = false;
    if (mount_in(json_object_get(spec, "initContainers"), name, &needed) < 0 ||
        mount_in(json_object_get(spec, "containers"), name, &needed) < 0)
        return CK_ENOMEM;
    if (has_volume || !needed)
        return 0;
    if (!json_is_array(volumes)) {
        if (json_object_set_new(spec, "volumes", json_array()) < 0)
            return CK_ENOMEM;
        volumes = json_object_get(spec, "volumes");
    }
    return json_array_append_new(volumes, token_volume(name)) < 0 ? CK_ENOMEM : 0;
}

bool ck__sa_admission_applies(const json_t *pod)
{
    const json_t *annotations = json_object_get(json_object_get(pod, "metadata"), "annotations");
    return json_is_object(json_object_get(pod, "spec")) &&
           !json_object_get(annotations, MIRROR_ANNOTATION);
}

const char *ck__sa_admission_account(json_t *pod)
{
    json_t *spec = json_object_get(pod, "spec");
    const char *name = json_string_value(json_object_get(spec, "serviceAccountName"));
    if (!name || !*name) {
        /* the deprecated spec.serviceAccount stands in for an empty serviceAccountName */
        const char *old = json_string_value(json_object_get(spec, "serviceAccount"));
        if (json_object_set_new(spec, "serviceAccountName",
                                json_string(old && *old ? old : "default")) < 0)
            return NULL;
        name = json_string_value(json_object_get(spec, "serviceAccountName"));
    }
    /* v1 mirrors it in the deprecated field, as Kubernetes' conversion writes it */
    if (json_object_set_new(spec, "serviceAccount", json_string(name)) < 0)
        return NULL;
    return json_string_value(json_object_get(spec, "serviceAccountName"));
}

int ck__sa_admission_mutate(json_t *pod, const json_t *sa)
{
    json_t *spec = json_object_get(pod, "spec");
    if (!json_is_object(spec))
        return 0;
    if (should_automount(spec, sa) && mount_token(spec) < 0)
        return CK_ENOMEM;
    const json_t *pull = json_object_get(spec, "imagePullSecrets");
    const json_t *sa_pull = json_object_get(sa, "imagePullSecrets");
    if (json_array_size(pull) == 0 && json_array_size(sa_pull) > 0 &&
        json_object_set_new(spec, "imagePullSecrets", json_deep_copy(sa_pull)) < 0)
        return CK_ENOMEM;
    return 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    const struct ck_kind *sa_kind = ck_kind_with_role(CK_KIND_ROLE_SERVICE_ACCOUNT);
    json_t *pod = a->obj;
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is_role(a, CK_KIND_ROLE_POD) || !sa_kind ||
        !ck__sa_admission_applies(pod))
        return 0;
    const char *name = ck__sa_admission_account(pod);
    if (!name)
        return ck_err_no_memory(reterr);
    char account[254];
    snprintf(account, sizeof(account), "%s", name);
    /* the "default" account is made by a controller shortly after its namespace */
    int attempts = strcmp(account, "default") == 0 ? 10 : 1;
    unsigned interval_ms = 100 + randombytes_uniform(100);
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = CK_ENOENT;
    for (int i = 0; i < attempts; i++) {
        if (i)
            usleep(interval_ms * 1000);
        ck_err_release(&err);
        memset(&err, 0, sizeof(err));
        r = ck__registry_get(reg, sa_kind, a->namespace, account, &kv, &err);
        if (r != CK_ENOENT)
            break;
    }
    if (r < 0) {
        /* Kubernetes' NotFound names the resource in the singular */
        char why[320];
        if (r == CK_ENOENT)
            snprintf(why, sizeof(why), "serviceaccount \"%s\" not found", account);
        else
            snprintf(why, sizeof(why), "%s", err.msg);
        ck_err_release(&err);
        return ck__admission_forbidden(a, reterr, "error looking up service account %s/%s: %s",
                                       a->namespace, account, why);
    }
    ck_err_release(&err);
    json_t *sa = ck__decode_stored(kv);
    ck_kv_unref(kv);
    if (!sa)
        return ck_err_no_memory(reterr);
    r = ck__sa_admission_mutate(pod, sa);
    json_decref(sa);
    return r < 0 ? ck_err_no_memory(reterr) : 0;
}

const struct ck__admission_plugin ck__admission_service_account = {.name = "ServiceAccount",
                                                                   .admit = admit};
