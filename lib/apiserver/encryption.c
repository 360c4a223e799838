/*
 * encryption.c - encryption at rest: kube-apiserver's
 * --encryption-provider-config, read from an EncryptionConfiguration file
 * (apiserver.config.k8s.io/v1) and applied as a transformer of the store
 * (ck_store_transformed()).
 *
 * The file lists resources and, for each, providers in order: the first
 * encrypts every write, all of them are tried on reads. Providers:
 *   - aesgcm: AES-GCM with a 16, 24 or 32 byte key (nettle), a random
 *     12-byte nonce per write, the store key as additional data;
 *   - secretbox: XSalsa20-Poly1305 with a 32 byte key (libsodium), a random
 *     24-byte nonce per write;
 *   - identity: values as they are (reads of data stored before encryption
 *     was turned on need it listed).
 * The stored form is Kubernetes' own: `k8s:enc:<provider>:v1:<key name>:`
 * followed by the nonce and the sealed value (the tag after the ciphertext
 * for AES-GCM, before it for secretbox), so a store written by either can be
 * read by the other given the same file. aescbc and kms are refused at start
 * (docs/differences.md).
 *
 * Resources are named as in Kubernetes (`secrets`, `configmaps`,
 * `deployments.apps`, or `*.*` for all); our keys are
 * /registry/<resource>/..., so the group part only documents.
 *
 * Threading: the configuration is immutable once loaded; encryption and
 * decryption allocate their own contexts and may run on any thread.
 *
 * Tests: tests/apiserver/test_encryption.c (round trips, the stored bytes
 * never hold the plaintext, key rotation, bad files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <nettle/gcm.h>
#include <nettle/memops.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <yaml.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_KEYS      16
#define MAX_PROVIDERS 8
#define MAX_RESOURCES 32
#define GCM_NONCE     12

enum provider_type { PROVIDER_IDENTITY, PROVIDER_AESGCM, PROVIDER_SECRETBOX };

struct enc_key {
    char name[64];
    unsigned char secret[32];
    size_t len;
};

struct provider {
    enum provider_type type;
    struct enc_key keys[MAX_KEYS];
    size_t n_keys;
};

struct rule {
    char resources[MAX_RESOURCES][128]; /* resource names, without the group */
    size_t n_resources;
    bool all; /* *.* */
    struct provider providers[MAX_PROVIDERS];
    size_t n_providers;
};

struct ck__encryption {
    struct rule *rules;
    size_t n_rules;
};

static const char *const provider_names[] = {"identity", "aesgcm", "secretbox"};

/* ---- reading the file ------------------------------------------------------ */

static yaml_node_t *get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static size_t seq_len(yaml_node_t *n)
{
    return n && n->type == YAML_SEQUENCE_NODE
               ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
               : 0;
}

static yaml_node_t *seq_at(yaml_document_t *doc, yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(doc, n->data.sequence.items.start[i]);
}

static int read_keys(yaml_document_t *doc, yaml_node_t *config, struct provider *p,
                     const char *where, struct ck_err *reterr)
{
    yaml_node_t *keys = get(doc, config, "keys");
    if (seq_len(keys) == 0)
        return ck_err_set(reterr, CK_EINVAL, "%s: keys: Required value", where);
    if (seq_len(keys) > MAX_KEYS)
        return ck_err_set(reterr, CK_EINVAL, "%s: more than %d keys", where, MAX_KEYS);
    for (size_t i = 0; i < seq_len(keys); i++) {
        yaml_node_t *k = seq_at(doc, keys, i);
        const char *name = scalar(get(doc, k, "name"));
        const char *secret = scalar(get(doc, k, "secret"));
        if (!name || !*name || strlen(name) >= sizeof(p->keys[0].name) || strchr(name, ':'))
            return ck_err_set(reterr, CK_EINVAL,
                              "%s: keys[%zu].name: want a name without ':' (at most 63 bytes)",
                              where, i);
        size_t len = 0;
        char *bytes = secret ? ck_base64_decode(secret, &len) : NULL;
        bool ok = bytes && (p->type == PROVIDER_SECRETBOX ? len == crypto_secretbox_KEYBYTES
                                                          : (len == 16 || len == 24 || len == 32));
        if (ok) {
            memcpy(p->keys[i].secret, bytes, len);
            p->keys[i].len = len;
            snprintf(p->keys[i].name, sizeof(p->keys[i].name), "%s", name);
        }
        if (bytes)
            sodium_memzero(bytes, len);
        free(bytes);
        if (!ok)
            return ck_err_set(reterr, CK_EINVAL,
                              "%s: keys[%zu].secret: want the base64 of a %s key", where, i,
                              p->type == PROVIDER_SECRETBOX ? "32 byte" : "16, 24 or 32 byte");
    }
    p->n_keys = seq_len(keys);
    return 0;
}

static int read_rule(yaml_document_t *doc, yaml_node_t *entry, size_t at, struct rule *rule,
                     struct ck_err *reterr)
{
    char where[96];
    yaml_node_t *names = get(doc, entry, "resources");
    yaml_node_t *providers = get(doc, entry, "providers");
    if (seq_len(names) == 0 || seq_len(names) > MAX_RESOURCES)
        return ck_err_set(reterr, CK_EINVAL, "resources[%zu].resources: want 1 to %d names", at,
                          MAX_RESOURCES);
    if (seq_len(providers) == 0 || seq_len(providers) > MAX_PROVIDERS)
        return ck_err_set(reterr, CK_EINVAL, "resources[%zu].providers: want 1 to %d providers", at,
                          MAX_PROVIDERS);
    for (size_t i = 0; i < seq_len(names); i++) {
        const char *name = scalar(seq_at(doc, names, i));
        if (!name || !*name || strlen(name) >= sizeof(rule->resources[0]))
            return ck_err_set(reterr, CK_EINVAL, "resources[%zu].resources[%zu]: want a name", at,
                              i);
        if (strcmp(name, "*.*") == 0) {
            rule->all = true;
            continue;
        }
        if (name[0] == '*')
            return ck_err_set(reterr, CK_EINVAL,
                              "resources[%zu].resources[%zu]: %s: only *.* is supported as a "
                              "wildcard",
                              at, i, name);
        size_t len = strcspn(name, ".");
        memcpy(rule->resources[rule->n_resources], name, len);
        rule->resources[rule->n_resources++][len] = '\0';
    }
    for (size_t i = 0; i < seq_len(providers); i++) {
        yaml_node_t *p = seq_at(doc, providers, i);
        struct provider *out = &rule->providers[i];
        snprintf(where, sizeof(where), "resources[%zu].providers[%zu]", at, i);
        if (!p || p->type != YAML_MAPPING_NODE ||
            p->data.mapping.pairs.top - p->data.mapping.pairs.start != 1)
            return ck_err_set(reterr, CK_EINVAL, "%s: want exactly one provider", where);
        const char *type = scalar(yaml_document_get_node(doc, p->data.mapping.pairs.start[0].key));
        yaml_node_t *config = yaml_document_get_node(doc, p->data.mapping.pairs.start[0].value);
        int r = 0;
        if (type && strcmp(type, "identity") == 0) {
            out->type = PROVIDER_IDENTITY;
        } else if (type && strcmp(type, "aesgcm") == 0) {
            out->type = PROVIDER_AESGCM;
            r = read_keys(doc, config, out, where, reterr);
        } else if (type && strcmp(type, "secretbox") == 0) {
            out->type = PROVIDER_SECRETBOX;
            r = read_keys(doc, config, out, where, reterr);
        } else {
            return ck_err_set(reterr, CK_EINVAL,
                              "%s: provider %s is not supported (aesgcm, secretbox, identity)",
                              where, type ? type : "?");
        }
        if (r < 0)
            return r;
    }
    rule->n_providers = seq_len(providers);
    return 0;
}

static int parse(const char *text, size_t len, struct ck__encryption *enc, struct ck_err *reterr)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return ck_err_no_memory(reterr);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int r = ck_err_set(reterr, CK_EINVAL, "not YAML: %s at line %zu",
                           parser.problem ? parser.problem : "error",
                           (size_t)parser.problem_mark.line + 1);
        yaml_parser_delete(&parser);
        return r;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    const char *kind = scalar(get(&doc, root, "kind"));
    const char *api_version = scalar(get(&doc, root, "apiVersion"));
    yaml_node_t *resources = get(&doc, root, "resources");
    int r = 0;
    if (!kind || strcmp(kind, "EncryptionConfiguration") != 0 || !api_version ||
        strcmp(api_version, "apiserver.config.k8s.io/v1") != 0)
        r = ck_err_set(reterr, CK_EINVAL,
                       "want kind EncryptionConfiguration of apiVersion "
                       "apiserver.config.k8s.io/v1");
    else if (seq_len(resources) == 0)
        r = ck_err_set(reterr, CK_EINVAL, "resources: Required value");
    if (r == 0) {
        enc->rules = ck__calloc(seq_len(resources), sizeof(*enc->rules));
        if (!enc->rules)
            r = ck_err_no_memory(reterr);
    }
    for (size_t i = 0; r == 0 && i < seq_len(resources); i++) {
        r = read_rule(&doc, seq_at(&doc, resources, i), i, &enc->rules[i], reterr);
        enc->n_rules = i + 1;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return r;
}

static void encryption_free(void *ctx)
{
    struct ck__encryption *enc = ctx;
    if (!enc)
        return;
    if (enc->rules)
        sodium_memzero(enc->rules, enc->n_rules * sizeof(*enc->rules));
    free(enc->rules);
    free(enc);
}

/* ---- which rule a key falls under ------------------------------------------- */

static const struct rule *rule_for(const struct ck__encryption *enc, const char *key,
                                   size_t key_len)
{
    static const char prefix[] = "/registry/";
    if (key_len <= sizeof(prefix) - 1 || memcmp(key, prefix, sizeof(prefix) - 1) != 0)
        return NULL;
    const char *resource = key + sizeof(prefix) - 1;
    const char *end = memchr(resource, '/', key_len - (sizeof(prefix) - 1));
    size_t len = end ? (size_t)(end - resource) : key_len - (sizeof(prefix) - 1);
    if (len == 6 && memcmp(resource, "ranges", 6) == 0)
        return NULL; /* the allocators' records, compared by value */
    for (size_t i = 0; i < enc->n_rules; i++) {
        const struct rule *rule = &enc->rules[i];
        if (rule->all)
            return rule;
        for (size_t j = 0; j < rule->n_resources; j++)
            if (strlen(rule->resources[j]) == len && memcmp(rule->resources[j], resource, len) == 0)
                return rule;
    }
    return NULL;
}

/* Identity alone applies too: it refuses to serve data stored encrypted, as Kubernetes'. */
static bool applies(void *ctx, const char *key, size_t key_len)
{
    return rule_for(ctx, key, key_len) != NULL;
}

/* ---- sealing and opening ---------------------------------------------------- */

#define GCM_SEAL(bits)                                                                             \
    do {                                                                                           \
        struct gcm_aes##bits##_ctx c;                                                              \
        gcm_aes##bits##_set_key(&c, k->secret);                                                    \
        gcm_aes##bits##_set_iv(&c, GCM_NONCE, nonce);                                              \
        gcm_aes##bits##_update(&c, ad_len, (const uint8_t *)ad);                                   \
        if (encrypt) {                                                                             \
            gcm_aes##bits##_encrypt(&c, len, out, in);                                             \
            gcm_aes##bits##_digest(&c, GCM_DIGEST_SIZE, out + len);                                \
        } else {                                                                                   \
            gcm_aes##bits##_decrypt(&c, len, out, in);                                             \
            gcm_aes##bits##_digest(&c, GCM_DIGEST_SIZE, tag);                                      \
        }                                                                                          \
    } while (0)

/* AES-GCM of len bytes of in into out (+ tag when encrypting; tag computed when not). */
static void gcm(const struct enc_key *k, const uint8_t *nonce, const char *ad, size_t ad_len,
                const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag, bool encrypt)
{
    switch (k->len) {
    case 16:
        GCM_SEAL(128);
        break;
    case 24:
        GCM_SEAL(192);
        break;
    default:
        GCM_SEAL(256);
        break;
    }
}

static int to_storage(void *ctx, const char *key, size_t key_len, const char *value,
                      size_t value_len, char **ret, size_t *ret_len, struct ck_err *reterr)
{
    const struct rule *rule = rule_for(ctx, key, key_len);
    const struct provider *p = rule ? &rule->providers[0] : NULL;
    if (!p || p->type == PROVIDER_IDENTITY) {
        *ret = ck__malloc(value_len + 1);
        if (!*ret)
            return ck_err_no_memory(reterr);
        memcpy(*ret, value, value_len);
        *ret_len = value_len;
        return 0;
    }
    const struct enc_key *k = &p->keys[0];
    char head[128];
    int head_len =
        snprintf(head, sizeof(head), "k8s:enc:%s:v1:%s:", provider_names[p->type], k->name);
    size_t nonce_len = p->type == PROVIDER_AESGCM ? GCM_NONCE : crypto_secretbox_NONCEBYTES;
    size_t total = (size_t)head_len + nonce_len + value_len + 16;
    uint8_t *out = ck__malloc(total);
    if (!out)
        return ck_err_no_memory(reterr);
    memcpy(out, head, (size_t)head_len);
    uint8_t *nonce = out + head_len;
    if (getrandom(nonce, nonce_len, 0) != (ssize_t)nonce_len) {
        free(out);
        return ck_err_set(reterr, CK_EIO, "encryption: no random nonce");
    }
    uint8_t *sealed = nonce + nonce_len;
    if (p->type == PROVIDER_AESGCM)
        gcm(k, nonce, key, key_len, (const uint8_t *)value, value_len, sealed, NULL, true);
    else
        crypto_secretbox_easy(sealed, (const uint8_t *)value, value_len, nonce, k->secret);
    *ret = (char *)out;
    *ret_len = total;
    return 0;
}

static int from_storage(void *ctx, const char *key, size_t key_len, const char *stored,
                        size_t stored_len, char **ret, size_t *ret_len, struct ck_err *reterr)
{
    const struct rule *rule = rule_for(ctx, key, key_len);
    static const char magic[] = "k8s:enc:";
    bool encrypted =
        stored_len > sizeof(magic) - 1 && memcmp(stored, magic, sizeof(magic) - 1) == 0;
    for (size_t i = 0; rule && i < rule->n_providers; i++) {
        const struct provider *p = &rule->providers[i];
        if (p->type == PROVIDER_IDENTITY) {
            if (encrypted)
                continue;
            *ret = ck__malloc(stored_len + 1);
            if (!*ret)
                return ck_err_no_memory(reterr);
            memcpy(*ret, stored, stored_len);
            *ret_len = stored_len;
            return 0;
        }
        for (size_t j = 0; encrypted && j < p->n_keys; j++) {
            const struct enc_key *k = &p->keys[j];
            char head[128];
            int head_len =
                snprintf(head, sizeof(head), "k8s:enc:%s:v1:%s:", provider_names[p->type], k->name);
            size_t nonce_len = p->type == PROVIDER_AESGCM ? GCM_NONCE : crypto_secretbox_NONCEBYTES;
            if (stored_len < (size_t)head_len + nonce_len + 16 ||
                memcmp(stored, head, (size_t)head_len) != 0)
                continue;
            const uint8_t *nonce = (const uint8_t *)stored + head_len;
            const uint8_t *sealed = nonce + nonce_len;
            size_t len = stored_len - (size_t)head_len - nonce_len - 16;
            uint8_t *plain = ck__malloc(len + 1);
            if (!plain)
                return ck_err_no_memory(reterr);
            bool ok;
            if (p->type == PROVIDER_AESGCM) {
                uint8_t tag[GCM_DIGEST_SIZE];
                gcm(k, nonce, key, key_len, sealed, len, plain, tag, false);
                ok = memeql_sec(tag, sealed + len, GCM_DIGEST_SIZE);
            } else {
                ok = crypto_secretbox_open_easy(plain, sealed, len + 16, nonce, k->secret) == 0;
            }
            if (!ok) {
                free(plain);
                return ck_err_set(reterr, CK_EIO, "%.*s: %s: decryption failed", (int)key_len, key,
                                  provider_names[p->type]);
            }
            plain[len] = '\0';
            *ret = (char *)plain;
            *ret_len = len;
            return 0;
        }
    }
    return ck_err_set(reterr, CK_EIO, "%.*s: no matching prefix found (no provider reads it)",
                      (int)key_len, key);
}

/* ---- the transformer -------------------------------------------------------- */

int ck__encryption_check(const char *text, size_t len, struct ck_err *reterr)
{
    struct ck__encryption *enc = ck__calloc(1, sizeof(*enc));
    int r = enc ? parse(text, len, enc, reterr) : ck_err_no_memory(reterr);
    encryption_free(enc);
    return r;
}

int ck__encryption_wrap(const char *path, struct ck_store **store, struct ck_err *reterr)
{
    if (!path)
        return 0;
    if (sodium_init() < 0)
        return ck_err_set(reterr, CK_EIO, "encryption: libsodium cannot start");
    char *text = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    int rr = ck__read_file(path, 1 << 20, &text, &len);
    if (rr < 0)
        return ck_err_set(reterr, CK_EINVAL, "--encryption-provider-config %s: %s", path,
                          rr == CK_ENOMEM ? "out of memory" : strerror(-rr));
    struct ck__encryption *enc = ck__calloc(1, sizeof(*enc));
    int r = enc ? parse(text, len, enc, &err) : ck_err_no_memory(&err);
    free(text);
    if (r < 0) {
        encryption_free(enc);
        r = ck_err_set(reterr, r, "--encryption-provider-config %s: %s", path,
                       ck_err_message(&err));
        ck_err_release(&err);
        return r;
    }
    struct ck_store_transformer t = {.applies = applies,
                                     .to_storage = to_storage,
                                     .from_storage = from_storage,
                                     .release = encryption_free,
                                     .ctx = enc};
    struct ck_store *wrapped = NULL;
    r = ck_store_transformed(*store, &t, &wrapped, reterr);
    if (r < 0) {
        encryption_free(enc);
        return r;
    }
    *store = wrapped;
    return 0;
}
