/*
 * keyring.c - the registry credentials of a pod's image pull secrets, and which of
 * them an image's pull tries, as kubelet's credential provider keyring matches them
 * (pkg/credentialprovider/keyring.go, config.go; pkg/credentialprovider/secrets;
 * the image name's normalization of github.com/distribution/reference).
 *
 * A Secret of type kubernetes.io/dockerconfigjson (.dockerconfigjson: {"auths":
 * {LOCATION: ENTRY}}) or kubernetes.io/dockercfg (.dockercfg: {LOCATION: ENTRY})
 * adds its entries; an ENTRY's "auth" (base64 of "user:password") overrides its
 * "username" and "password". A LOCATION becomes a key: its host, plus its path when
 * the path is more than "/" (a leading /v1/ or /v2/ dropped), any scheme removed.
 * A lookup of an image's repository (tag and digest removed, docker.io's short names
 * expanded: "busybox" is "docker.io/library/busybox") goes through the distinct keys
 * in reverse byte order (so "quay.io/coreos" comes before "quay.io") and takes every
 * entry of each key that matches: the same port, as many dot-separated host parts,
 * each matching the key's part as a glob ("*.example.com"), and the key's path a
 * prefix of the repository's. When none matches and the image is on docker.io, the
 * entries of "index.docker.io" (what "https://index.docker.io/v1/" becomes) are
 * the answer.
 *
 * Threading: a keyring belongs to its caller.
 */
#define _GNU_SOURCE /* strndup */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define DEFAULT_REGISTRY_KEY "index.docker.io"

void ck__keyring_release(struct ck__keyring *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].key);
        free(k->v[i].cred.username);
        free(k->v[i].cred.password);
    }
    free(k->v);
    *k = (struct ck__keyring){0};
}

/* The key of a location: host, or host plus path; malloc'd, or NULL. */
static char *location_key(const char *loc)
{
    const char *s = loc;
    if (strncmp(s, "https://", 8) == 0)
        s += 8;
    else if (strncmp(s, "http://", 7) == 0)
        s += 7;
    size_t host_len = strcspn(s, "/?#");
    const char *path = s + host_len;
    size_t path_len = strcspn(path, "?#");
    if (path_len >= 4 && (strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/v2/", 4) == 0)) {
        path += 3;
        path_len -= 3;
    }
    if (path_len == 1 && path[0] == '/')
        path_len = 0;
    char *key = malloc(host_len + path_len + 1);
    if (!key)
        return NULL;
    memcpy(key, s, host_len);
    memcpy(key + host_len, path, path_len);
    key[host_len + path_len] = 0;
    return key;
}

/* Splits "user:password" (base64) into the entry's username and password. */
static int decode_auth(const char *auth, char **ret_user, char **ret_password,
                       struct ck_err *reterr)
{
    size_t n = 0;
    char *plain = ck_base64_decode(auth, &n);
    if (!plain)
        return ck_err_set(reterr, CK_EINVAL, "illegal base64 data in a docker config's auth");
    char *colon = memchr(plain, ':', n);
    if (!colon || memchr(plain, 0, n)) {
        free(plain);
        return ck_err_set(reterr, CK_EINVAL, "expect username:password format in auth");
    }
    *ret_user = strndup(plain, (size_t)(colon - plain));
    *ret_password = strdup(colon + 1);
    free(plain);
    return 0;
}

/* Adds the entries of a docker config's map of LOCATION: ENTRY. */
static int add_config(struct ck__keyring *k, const json_t *auths, struct ck_err *reterr)
{
    if (!json_is_object(auths))
        return ck_err_set(reterr, CK_EINVAL, "a docker config's auths is not an object");
    const char *loc;
    json_t *entry;
    json_object_foreach((json_t *)auths, loc, entry)
    {
        if (!json_is_object(entry))
            return ck_err_set(reterr, CK_EINVAL, "the docker config entry of %s is not an object",
                              loc);
        const char *user = json_string_value(json_object_get(entry, "username"));
        const char *password = json_string_value(json_object_get(entry, "password"));
        const char *auth = json_string_value(json_object_get(entry, "auth"));
        struct ck__keyring_entry e = {0};
        int r = 0;
        if (auth && *auth)
            r = decode_auth(auth, &e.cred.username, &e.cred.password, reterr);
        else {
            e.cred.username = strdup(user ? user : "");
            e.cred.password = strdup(password ? password : "");
        }
        if (r < 0)
            return r;
        e.key = location_key(loc);
        struct ck__keyring_entry *v = realloc(k->v, (k->n + 1) * sizeof(*v));
        if (!v || !e.key || !e.cred.username || !e.cred.password) {
            free(e.key);
            free(e.cred.username);
            free(e.cred.password);
            if (v)
                k->v = v;
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        k->v = v;
        k->v[k->n++] = e;
    }
    return 0;
}

int ck__keyring_add_secret(struct ck__keyring *k, const json_t *secret, struct ck_err *reterr)
{
    const char *type = json_string_value(json_object_get(secret, "type"));
    const json_t *data = json_object_get(secret, "data");
    bool is_json = type && strcmp(type, "kubernetes.io/dockerconfigjson") == 0;
    bool is_cfg = type && strcmp(type, "kubernetes.io/dockercfg") == 0;
    const char *b64 =
        json_string_value(json_object_get(data, is_json ? ".dockerconfigjson" : ".dockercfg"));
    if ((!is_json && !is_cfg) || !b64 || !*b64)
        return 0; /* not a pull secret: nothing to add */
    size_t n = 0;
    char *text = ck_base64_decode(b64, &n);
    if (!text)
        return ck_err_set(reterr, CK_EINVAL, "illegal base64 data in the secret's %s",
                          is_json ? ".dockerconfigjson" : ".dockercfg");
    json_error_t jerr;
    json_t *cfg = json_loadb(text, n, 0, &jerr);
    free(text);
    if (!json_is_object(cfg)) {
        json_decref(cfg);
        return ck_err_set(reterr, CK_EINVAL, "the secret's %s is not a JSON object",
                          is_json ? ".dockerconfigjson" : ".dockercfg");
    }
    const json_t *auths = is_json ? json_object_get(cfg, "auths") : cfg;
    int r = auths ? add_config(k, auths, reterr) : 0;
    json_decref(cfg);
    return r;
}

char *ck__image_repository(const char *image)
{
    /* the name without its digest, then without its tag (a colon after the last slash) */
    size_t len = strcspn(image, "@");
    const char *slash = memrchr(image, '/', len);
    const char *colon =
        memrchr(slash ? slash : image, ':', len - (size_t)(slash ? slash - image : 0));
    if (colon)
        len = (size_t)(colon - image);
    /* the domain: the part before the first slash when it looks like a host */
    const char *first = memchr(image, '/', len);
    bool has_domain = false;
    if (first) {
        size_t dl = (size_t)(first - image);
        bool lower = true;
        for (size_t i = 0; i < dl; i++)
            lower = lower && !(image[i] >= 'A' && image[i] <= 'Z');
        has_domain = memchr(image, '.', dl) || memchr(image, ':', dl) ||
                     (dl == 9 && strncmp(image, "localhost", 9) == 0) || !lower;
    }
    char *out = NULL;
    if (!has_domain) {
        if (asprintf(&out, "docker.io/%s%.*s", first ? "" : "library/", (int)len, image) < 0)
            out = NULL;
        return out;
    }
    if (first - image == 15 && strncmp(image, "index.docker.io", 15) == 0) {
        const char *rest = first + 1;
        size_t rl = len - 16;
        bool one = !memchr(rest, '/', rl);
        if (asprintf(&out, "docker.io/%s%.*s", one ? "library/" : "", (int)rl, rest) < 0)
            out = NULL;
        return out;
    }
    return strndup(image, len);
}

/* Splits a schemeless URL: host (without port), port ("" none), path ("" none). */
static void split_url(const char *u, char *host, size_t hsize, char *port, size_t psize,
                      const char **ret_path)
{
    size_t hl = strcspn(u, "/");
    *ret_path = u + hl;
    const char *colon = memrchr(u, ':', hl);
    size_t name_len = colon ? (size_t)(colon - u) : hl;
    snprintf(host, hsize, "%.*s", (int)name_len, u);
    snprintf(port, psize, "%.*s", colon ? (int)(hl - name_len - 1) : 0, colon ? colon + 1 : "");
}

/* Whether the key (a glob in its host's parts) matches the repository. */
static bool urls_match(const char *key, const char *repo)
{
    char gh[256], gp[16], th[256], tp[16];
    const char *gpath, *tpath;
    split_url(key, gh, sizeof(gh), gp, sizeof(gp), &gpath);
    split_url(repo, th, sizeof(th), tp, sizeof(tp), &tpath);
    if (strcmp(gp, tp) != 0 || strncmp(tpath, gpath, strlen(gpath)) != 0)
        return false;
    char *gs = gh, *ts = th;
    for (;;) {
        char *gd = strchr(gs, '.'), *td = strchr(ts, '.');
        if (!gd != !td)
            return false; /* not as many parts */
        if (gd)
            *gd = 0;
        if (td)
            *td = 0;
        if (fnmatch(gs, ts, 0) != 0)
            return false;
        if (!gd)
            return true;
        gs = gd + 1;
        ts = td + 1;
    }
}

static int key_desc(const void *a, const void *b)
{
    return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the repository is docker.io's (kubelet's isDefaultRegistryMatch). */
static bool is_default_registry(const char *repo)
{
    size_t first = strcspn(repo, "/");
    if (first == 0)
        return false;
    if (!repo[first])
        return true;
    if ((first == 9 && strncmp(repo, "docker.io", 9) == 0) ||
        (first == 15 && strncmp(repo, "index.docker.io", 15) == 0))
        return true;
    return !memchr(repo, '.', first) && !memchr(repo, ':', first);
}

size_t ck__keyring_lookup(const struct ck__keyring *k, const char *repo,
                          const struct ck__cred **ret, size_t max)
{
    size_t n = 0;
    const char **keys = k->n ? malloc(k->n * sizeof(*keys)) : NULL;
    size_t nk = 0;
    for (size_t i = 0; keys && i < k->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < nk && !seen; j++)
            seen = strcmp(keys[j], k->v[i].key) == 0;
        if (!seen)
            keys[nk++] = k->v[i].key;
    }
    if (nk)
        qsort(keys, nk, sizeof(*keys), key_desc);
    for (size_t j = 0; j < nk; j++)
        if (urls_match(keys[j], repo))
            for (size_t i = 0; i < k->n && n < max; i++)
                if (strcmp(k->v[i].key, keys[j]) == 0)
                    ret[n++] = &k->v[i].cred;
    free(keys);
    if (n == 0 && is_default_registry(repo))
        for (size_t i = 0; i < k->n && n < max; i++)
            if (strcmp(k->v[i].key, DEFAULT_REGISTRY_KEY) == 0)
                ret[n++] = &k->v[i].cred;
    return n;
}
