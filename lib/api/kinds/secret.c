/*
 * secret.c - the Secret kind (core/v1): sensitive data for pods.
 *
 * Mirrors Kubernetes' pkg/registry/core/secret, SetDefaults_Secret and
 * ValidateSecret: `stringData` is a write-only convenience merged into
 * `data` (base64) on every write, its values winning, and never stored;
 * `type` defaults to Opaque, cannot change, and some types require keys
 * (kubernetes.io/tls: tls.crt and tls.key; dockercfg and dockerconfigjson: a
 * JSON document; basic-auth: username or password; ssh-auth: ssh-privatekey;
 * service-account-token: the service account's name annotation). Keys follow
 * IsConfigMapKey, the data totals at most 1 MiB, an immutable Secret keeps
 * its data. kubectl prints NAME, TYPE, DATA and AGE; `type` is a field label.
 * Encryption at rest is the server's business (lib/apiserver/encryption.c),
 * not the kind's.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tested by tests/api/test_configdata.c and test_kinds.c, and the kubectl e2e
 * test of the kinds (tests/e2e/test_kubectl_kinds.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

enum { COL_NAME, COL_TYPE, COL_DATA, COL_AGE };

/* stringData into data (base64), then gone; type Opaque when unset. */
static int defaults(json_t *obj)
{
    json_t *strings = json_object_get(obj, "stringData");
    if (json_object_size(strings) > 0) {
        json_t *data = ck__object_at(obj, "data");
        if (!data)
            return CK_ENOMEM;
        const char *key;
        json_t *value;
        json_object_foreach(strings, key, value)
        {
            const char *text = json_string_value(value);
            char *encoded = ck_base64_encode(text ? text : "", text ? strlen(text) : 0);
            if (!encoded || json_object_set_new(data, key, json_string(encoded)) < 0) {
                free(encoded);
                return CK_ENOMEM;
            }
            free(encoded);
        }
    }
    json_object_del(obj, "stringData");
    const char *type = json_string_value(json_object_get(obj, "type"));
    if ((!type || !*type) && json_object_set_new(obj, "type", json_string("Opaque")) < 0)
        return CK_ENOMEM;
    return 0;
}

static void require_key(const json_t *data, const char *key, struct ck_field_errors *errs)
{
    if (json_object_get(data, key))
        return;
    char path[128];
    snprintf(path, sizeof(path), "data[%s]", key);
    ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
}

/* A docker config key must hold a JSON document. */
static void validate_docker_config(const json_t *data, const char *key,
                                   struct ck_field_errors *errs)
{
    const char *text = json_string_value(json_object_get(data, key));
    if (!text) {
        require_key(data, key, errs);
        return;
    }
    size_t len = 0;
    char *bytes = ck_base64_decode(text, &len);
    json_error_t jerr;
    json_t *doc = NULL;
    bool decoded = bytes != NULL;
    int r = decoded ? ck_json_loadb(bytes, len, 0, &doc, &jerr) : CK_EINVAL;
    free(bytes);
    json_decref(doc);
    if (r == CK_EINVAL) {
        char path[128];
        snprintf(path, sizeof(path), "data[%s]", key);
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, "<secret contents redacted>", false, "%s",
                            decoded ? jerr.text : "illegal base64 data");
    } else if (r < 0) {
        errs->nomem = true;
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *data = json_object_get(obj, "data");
    size_t total = ck__config_map_validate_keys(data, "data", true, errs);
    if (total > CK__CONFIG_DATA_MAX)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "data", NULL, false,
                            "may not be more than %d bytes", CK__CONFIG_DATA_MAX);
    const char *type = json_string_value(json_object_get(obj, "type"));
    if (!type)
        type = "";
    if (strcmp(type, "kubernetes.io/service-account-token") == 0) {
        if (!json_object_get(ck__json_path(obj, "metadata.annotations"),
                             "kubernetes.io/service-account.name"))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED,
                                "metadata.annotations[kubernetes.io/service-account.name]", NULL,
                                false, NULL);
    } else if (strcmp(type, "kubernetes.io/dockercfg") == 0) {
        validate_docker_config(data, ".dockercfg", errs);
    } else if (strcmp(type, "kubernetes.io/dockerconfigjson") == 0) {
        validate_docker_config(data, ".dockerconfigjson", errs);
    } else if (strcmp(type, "kubernetes.io/basic-auth") == 0) {
        /* either may be empty, but one must be there */
        if (!json_object_get(data, "username") && !json_object_get(data, "password")) {
            require_key(data, "username", errs);
            require_key(data, "password", errs);
        }
    } else if (strcmp(type, "kubernetes.io/ssh-auth") == 0) {
        const char *key = json_string_value(json_object_get(data, "ssh-privatekey"));
        if (!key || !*key)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "data[ssh-privatekey]", NULL, false, NULL);
    } else if (strcmp(type, "kubernetes.io/tls") == 0) {
        require_key(data, "tls.crt", errs);
        require_key(data, "tls.key", errs);
    }
    if (old) {
        const char *old_type = json_string_value(json_object_get(old, "type"));
        if (old_type && strcmp(old_type, type) != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "type", type, true, "field is immutable");
    }
    static const char *const frozen[] = {"data", NULL};
    ck__config_immutable_validate(obj, old, frozen, errs);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_DATA] = json_integer((json_int_t)json_object_size(json_object_get(obj, "data")));
}

static const struct ck_field_label field_labels[] = {
    {"type", "type", CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_TYPE] = {"Type", "string", "", "The type of the secret.", 0, ".type", CK_CELL_ABSENT_EMPTY,
                  false},
    [COL_DATA] = CK__COMPUTED_COLUMN("Data", "string", "How many keys the Secret holds.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_secret = {
    .group = "",
    .version = "v1",
    .kind = "Secret",
    .list_kind = "SecretList",
    .resource = "secrets",
    .singular = "secret",
    .namespaced = true,
    .role = CK_KIND_ROLE_SECRET,
    .schema = "io.k8s.api.core.v1.Secret",
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
