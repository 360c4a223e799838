/*
 * test_encryption.c - encryption at rest (lib/apiserver/encryption.c over
 * lib/store/transform.c): Secrets written through the API read back whole
 * (GET, LIST, watch), while the store holds Kubernetes' `k8s:enc:...`
 * form and neither the store nor the SQLite files (database and WAL) ever
 * hold the plaintext or its base64; key rotation (a new first provider
 * reads what the old one wrote); identity for data stored before; bad
 * configuration files refused at start with the reason.
 *
 * Usage: test_encryption [STORE_URL]: a fresh SQLite file by default (the
 * file scan only runs then); ctest also runs it on a real etcd.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "ckube/store.h"
#include "httptest.h"

static char dir[] = "/tmp/ckube-test-encryption-XXXXXX";
static char store_url[512];
static bool on_sqlite;
static struct ck_apiserver *server;

#include "apitest.h"

#define PLAINTEXT     "correct-horse-battery-staple"
#define PLAINTEXT_B64 "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZQ=="
#define AES_KEY       "c2VjcmV0IGlzIHNlY3VyZSwgMzIgYnl0ZXMgbG9uZyE=" /* 32 bytes */
#define BOX_KEY       "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=" /* 32 bytes */

static void write_config(const char *name, const char *providers)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: apiserver.config.k8s.io/v1\n"
            "kind: EncryptionConfiguration\n"
            "resources:\n"
            "  - resources: [secrets]\n"
            "    providers:\n%s",
            providers);
    fclose(f);
}

static const char aes_first[] = "      - aesgcm:\n"
                                "          keys: [{name: key1, secret: " AES_KEY "}]\n"
                                "      - identity: {}\n";
static const char box_first[] = "      - secretbox:\n"
                                "          keys: [{name: key2, secret: " BOX_KEY "}]\n"
                                "      - aesgcm:\n"
                                "          keys: [{name: key1, secret: " AES_KEY "}]\n";

static int start(const char *config_name, struct ck_err *err)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, config_name);
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store_url,
                                         .encryption_provider_config = path};
    return ck_apiserver_start(&config, &server, err);
}

static void restart(const char *config_name)
{
    ck_apiserver_free(server);
    server = NULL;
    struct ck_err err = {0};
    if (start(config_name, &err) < 0)
        fail_msg("start: %s", err.msg);
}

/* The raw stored value of a secret, read from the store beneath the server. Caller frees. */
static char *stored_value(const char *name, size_t *ret_len)
{
    struct ck_store *store = NULL;
    struct ck_err err = {0};
    if (ck_store_open(store_url, NULL, &store, &err) < 0)
        fail_msg("open: %s", err.msg);
    char key[256];
    snprintf(key, sizeof(key), "/registry/secrets/default/%s", name);
    const struct ck_kv *kv = NULL;
    assert_int_equal(ck_store_get(store, key, strlen(key), 0, &kv, NULL, &err), 0);
    char *copy = malloc(kv->value_len + 1);
    memcpy(copy, kv->value, kv->value_len + 1);
    *ret_len = kv->value_len;
    ck_kv_unref(kv);
    ck_store_close(store);
    return copy;
}

static bool holds(const char *hay, size_t len, const char *needle)
{
    return memmem(hay, len, needle, strlen(needle)) != NULL;
}

/* Every SQLite file of the store: neither the plaintext nor its base64 anywhere. */
static void files_lack_plaintext(void)
{
    if (!on_sqlite)
        return;
    static const char *const files[] = {"state.db", "state.db-wal"};
    bool seen_key = false; /* the files hold the secret, if not in the clear */
    for (size_t i = 0; i < 2; i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        char *text = NULL;
        size_t len = 0;
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        struct stat st;
        fstat(fileno(f), &st);
        text = malloc((size_t)st.st_size + 1);
        len = fread(text, 1, (size_t)st.st_size, f);
        fclose(f);
        seen_key |= holds(text, len, "/registry/secrets/default/"); /* keys are not encrypted */
        bool clear = holds(text, len, PLAINTEXT) || holds(text, len, PLAINTEXT_B64);
        free(text);
        if (clear)
            fail_msg("%s holds the secret in the clear", files[i]);
    }
    assert_true(seen_key);
}

#define SECRET_BODY(name)                                                                          \
    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"" name "\"},"             \
    "\"stringData\":{\"password\":\"" PLAINTEXT "\"}}"

static void test_secrets_are_stored_encrypted(void **state)
{
    (void)state;
    restart("aes.yaml");
    json_decref(call("POST", "/api/v1/namespaces/default/secrets", SECRET_BODY("db"), 201));
    json_t *s = call("GET", "/api/v1/namespaces/default/secrets/db", NULL, 200);
    assert_string_equal(str(s, "data.password"), PLAINTEXT_B64);
    json_decref(s);
    json_t *list = call("GET", "/api/v1/namespaces/default/secrets", NULL, 200);
    assert_string_equal(str(json_array_get(json_object_get(list, "items"), 0), "data.password"),
                        PLAINTEXT_B64);
    json_decref(list);
    /* an update through a patch, read back again */
    json_decref(call_h("PATCH", "/api/v1/namespaces/default/secrets/db",
                       "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", merge_type, 200));

    size_t len = 0;
    char *raw = stored_value("db", &len);
    assert_true(len > 23 && memcmp(raw, "k8s:enc:aesgcm:v1:key1:", 23) == 0);
    assert_false(holds(raw, len, PLAINTEXT));
    assert_false(holds(raw, len, PLAINTEXT_B64));
    assert_false(holds(raw, len, "\"kind\""));
    free(raw);
    files_lack_plaintext();
}

static void test_watch_events_are_decrypted(void **state)
{
    (void)state;
    restart("aes.yaml");
    json_t *list = call("GET", "/api/v1/namespaces/default/secrets", NULL, 200);
    char path[256];
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=1&resourceVersion=%s",
             str(list, "metadata.resourceVersion"));
    json_decref(list);
    json_decref(call("POST", "/api/v1/namespaces/default/secrets", SECRET_BODY("watched"), 201));
    struct response r;
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"ADDED\""));
    assert_non_null(strstr(r.body, PLAINTEXT_B64));
    assert_null(strstr(r.body, "k8s:enc:"));
    response_release(&r);
}

static void test_rotation_reads_the_old_key(void **state)
{
    (void)state;
    restart("aes.yaml");
    json_decref(call("POST", "/api/v1/namespaces/default/secrets", SECRET_BODY("old"), 201));
    restart("box.yaml"); /* secretbox first, aesgcm still listed */
    json_t *s = call("GET", "/api/v1/namespaces/default/secrets/old", NULL, 200);
    assert_string_equal(str(s, "data.password"), PLAINTEXT_B64);
    json_decref(s);
    /* a write re-encrypts with the new first provider */
    json_decref(call_h("PATCH", "/api/v1/namespaces/default/secrets/old",
                       "{\"metadata\":{\"labels\":{\"rotated\":\"yes\"}}}", merge_type, 200));
    size_t len = 0;
    char *raw = stored_value("old", &len);
    assert_true(len > 26 && memcmp(raw, "k8s:enc:secretbox:v1:key2:", 26) == 0);
    assert_false(holds(raw, len, PLAINTEXT_B64));
    free(raw);
    files_lack_plaintext();
}

static void test_plain_data_needs_identity(void **state)
{
    (void)state;
    restart("identity.yaml"); /* nothing encrypted: a secret stored as it is */
    json_decref(call("POST", "/api/v1/namespaces/default/secrets", SECRET_BODY("plain"), 201));
    size_t len = 0;
    char *raw = stored_value("plain", &len);
    assert_true(holds(raw, len, PLAINTEXT_B64));
    free(raw);
    restart("aes.yaml"); /* identity listed: readable */
    json_decref(call("GET", "/api/v1/namespaces/default/secrets/plain", NULL, 200));
    restart("box.yaml"); /* no identity: refused, as Kubernetes' "no matching prefix" */
    expect_status("GET", "/api/v1/namespaces/default/secrets/plain", NULL, 500, "InternalError",
                  NULL);
    /* cleanup so the other tests' lists decrypt */
    restart("aes.yaml");
    json_decref(call("DELETE", "/api/v1/namespaces/default/secrets/plain", NULL, 200));
}

static void test_bad_files_are_refused(void **state)
{
    (void)state;
    ck_apiserver_free(server);
    server = NULL;
    static const struct {
        const char *providers, *says;
    } cases[] = {
        {"      - aescbc:\n          keys: [{name: k, secret: " AES_KEY "}]\n",
         "provider aescbc is not supported"},
        {"      - aesgcm:\n          keys: [{name: k, secret: c2hvcnQ=}]\n",
         "keys[0].secret: want the base64 of a 16, 24 or 32 byte key"},
        {"      - secretbox:\n          keys: []\n", "keys: Required value"},
        {"      - aesgcm:\n          keys: [{secret: " AES_KEY "}]\n", "keys[0].name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_config("bad.yaml", cases[i].providers);
        struct ck_err err = {0};
        assert_int_equal(start("bad.yaml", &err), CK_EINVAL);
        if (!strstr(err.msg, cases[i].says))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].says);
        assert_null(server);
    }
    struct ck_err err = {0};
    assert_int_equal(start("missing.yaml", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "No such file"));
    restart("aes.yaml");
}

int main(int argc, char **argv)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (argc > 1) {
        snprintf(store_url, sizeof(store_url), "%s", argv[1]);
    } else {
        snprintf(store_url, sizeof(store_url), "sqlite://%s/state.db", dir);
        on_sqlite = true;
    }
    write_config("aes.yaml", aes_first);
    write_config("box.yaml", box_first);
    write_config("identity.yaml", "      - identity: {}\n");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct ck_err err = {0};
    if (start("aes.yaml", &err) < 0) {
        fprintf(stderr, "start: %s\n", err.msg);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_are_stored_encrypted),
        cmocka_unit_test(test_watch_events_are_decrypted),
        cmocka_unit_test(test_rotation_reads_the_old_key),
        cmocka_unit_test(test_plain_data_needs_identity),
        cmocka_unit_test(test_bad_files_are_refused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ck_apiserver_free(server);
    curl_global_cleanup();
    static const char *const files[] = {"aes.yaml", "box.yaml", "identity.yaml", "bad.yaml"};
    for (size_t i = 0; i < 4; i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    test_store_remove(dir);
    return failed;
}
