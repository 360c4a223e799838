/*
 * discovery.c - what the API server tells clients about itself: legacy
 * discovery (/api, /apis, /api/v1, /apis/G/V) and OpenAPI v3 documents
 * (which openapi_v2.c translates for /openapi/v2), and aggregated discovery
 * (apidiscovery.k8s.io/v2: discovery/aggregated and installer.go's
 * ConvertGroupVersionIntoToDiscovery). Every stored resource
 * carries kube-apiserver's storageVersionHash (apiserver's
 * endpoints/discovery/storageversionhash.go; which resources get one:
 * endpoints/installer.go and apiextensions-apiserver's
 * customresource_discovery_controller.go).
 *
 * All are derived from the kind registry and the schemas, so they can never
 * disagree with what the server actually serves. kubectl needs discovery to
 * resolve every resource name, and needs each kind's OpenAPI PATCH operation
 * to declare the fieldValidation parameter before `create -f` and `apply -f`
 * trust the server to validate fields (kube-api-contract sections 3 and 4).
 */
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define REF_PREFIX "#/components/schemas/"

static const char *const all_verbs[] = {
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch", NULL};

/* In this file a builder returns NULL when out of memory, never a document with parts missing. */

static json_t *strings(const char *const *list)
{
    json_t *a = json_array();
    for (size_t i = 0; list && list[i]; i++)
        if (json_array_append_new(a, json_string(list[i])) < 0)
            return json_decref(a), NULL;
    return a;
}

json_t *ck_discovery_api_versions(const char *server_address)
{
    return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                     "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                     server_address);
}

json_t *ck_discovery_api_groups(void)
{
    json_t *groups = json_array();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        if (!k->group[0])
            continue;
        json_t *group = NULL;
        size_t j;
        json_t *g;
        json_array_foreach(groups, j, g)
        {
            if (strcmp(json_string_value(json_object_get(g, "name")), k->group) == 0)
                group = g;
        }
        char gv[CK_API_VERSION_MAX];
        ck_kind_api_version(k, gv, sizeof(gv));
        if (!group) {
            /* the first version registered is the preferred one (a CRD's by version priority) */
            if (json_array_append_new(groups,
                                      json_pack("{s:s, s:[], s:{s:s, s:s}}", "name", k->group,
                                                "versions", "preferredVersion", "groupVersion", gv,
                                                "version", k->version)) < 0)
                return json_decref(groups), NULL;
            group = json_array_get(groups, json_array_size(groups) - 1);
        }
        json_t *versions = json_object_get(group, "versions");
        bool seen = false;
        json_array_foreach(versions, j, g)
        {
            seen =
                seen || strcmp(json_string_value(json_object_get(g, "version")), k->version) == 0;
        }
        if (!seen && json_array_append_new(versions, json_pack("{s:s, s:s}", "groupVersion", gv,
                                                               "version", k->version)) < 0)
            return json_decref(groups), NULL;
    }
    return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                     groups);
}

/* The APIResource entry for a subresource, from the kind's table of them. */
static json_t *subresource_entry(const struct ck_kind *k, const struct ck_subresource *sub)
{
    char name[128];
    snprintf(name, sizeof(name), "%s/%s", k->resource, sub->name);
    json_t *e =
        json_pack("{s:s, s:s, s:b}", "name", name, "singularName", "", "namespaced", k->namespaced);
    int failed = 0;
    if (sub->group) {
        failed |= json_object_set_new(e, "group", json_string(sub->group));
        failed |= json_object_set_new(e, "version", json_string(sub->version));
    }
    failed |= json_object_set_new(e, "kind", json_string(sub->kind ? sub->kind : k->kind));
    failed |= json_object_set_new(e, "verbs", strings(sub->verbs));
    if (failed)
        e = (json_decref(e), NULL);
    return e;
}

/*
 * The group/version objects of k are stored in ("stable.example.com/v1"): a
 * custom resource's storage version, a built-in kind's own. False when k is
 * not stored (the reviews) or its storage version is not served: then
 * kube-apiserver gives it no storageVersionHash (a CRD's is computed only
 * from a served version).
 */
static bool storage_group_version(const struct ck_kind *k, char *buf, size_t size)
{
    if (k->verbs)
        return false;
    if (!k->storage_api_version) {
        snprintf(buf, size, "%s/%s", k->group, k->version);
        return true;
    }
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    const char *resource = k->storage_resource ? k->storage_resource : k->resource;
    const char *sv = k->storage_api_version;
    const char *slash = strchr(sv, '/'); /* none: the core group's ("v1") */
    size_t group_len = slash ? (size_t)(slash - sv) : 0;
    const char *version = slash ? slash + 1 : sv;
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *other = kinds[i];
        const char *other_resource =
            other->storage_resource ? other->storage_resource : other->resource;
        if (strcmp(other_resource, resource) != 0 || strlen(other->group) != group_len ||
            strncmp(sv, other->group, group_len) != 0 || strcmp(version, other->version) != 0)
            continue;
        snprintf(buf, size, "%s/%s", other->group, other->version);
        return true;
    }
    return false;
}

/*
 * kube-apiserver's storageVersionHash of a stored resource: the first 8
 * bytes of the SHA-256 of "<group>/<version>/<kind>" in its storage version
 * ("/v1/Pod" for the core group), in standard base64. Clients compare it
 * between discoveries to learn that a resource's storage version changed
 * (storage version migration). Sets *ret to NULL when k gets none; -1 when
 * out of memory. The caller frees *ret.
 */
static int storage_version_hash(const struct ck_kind *k, char **ret)
{
    char gvk[512]; /* a group of 253 bytes, a version and a kind of 63 each fit */
    *ret = NULL;
    if (!storage_group_version(k, gvk, sizeof(gvk)))
        return 0;
    size_t len = strlen(gvk);
    snprintf(gvk + len, sizeof(gvk) - len, "/%s", k->kind);
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(gvk), (const uint8_t *)gvk);
    sha256_digest(&ctx, sizeof(digest), digest);
    *ret = ck_base64_encode(digest, 8);
    return *ret ? 0 : -1;
}

json_t *ck_discovery_resources(const char *group, const char *version)
{
    json_t *resources = json_array();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    char gv[CK_API_VERSION_MAX] = "";
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
            continue;
        ck_kind_api_version(k, gv, sizeof(gv));
        json_t *e = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", k->resource, "singularName",
                              k->singular, "namespaced", k->namespaced, "kind", k->kind, "verbs",
                              strings(k->verbs ? k->verbs : all_verbs));
        if (k->short_names)
            failed |= json_object_set_new(e, "shortNames", strings(k->short_names));
        if (k->categories)
            failed |= json_object_set_new(e, "categories", strings(k->categories));
        char *hash = NULL;
        failed |= storage_version_hash(k, &hash);
        if (hash)
            failed |= json_object_set_new(e, "storageVersionHash", json_string(hash));
        free(hash);
        failed |= json_array_append_new(resources, e);
        for (size_t s = 0; s < k->n_subresources; s++)
            failed |= json_array_append_new(resources, subresource_entry(k, &k->subresources[s]));
    }
    if (!gv[0] || failed) {
        json_decref(resources);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", resources);
}

/* ---- aggregated discovery ------------------------------------------------ */

/*
 * A resource's or subresource's responseKind: the group and version are a
 * built-in kind's own only where its legacy entry names them (empty: the
 * list's), a custom resource's always (apiextensions' discovery controller).
 */
static json_t *response_kind(const struct ck_kind *k, const char *group, const char *version,
                             const char *kind)
{
    bool custom = k->schemas != NULL;
    return json_pack("{s:s, s:s, s:s}", "group",
                     group    ? group
                     : custom ? k->group
                              : "",
                     "version",
                     version  ? version
                     : custom ? k->version
                              : "",
                     "kind", kind);
}

/* One APIResourceDiscovery: the resource, with its subresources folded in. */
static json_t *aggregated_resource(const struct ck_kind *k)
{
    json_t *e = json_pack("{s:s, s:o, s:s, s:s, s:o}", "resource", k->resource, "responseKind",
                          response_kind(k, NULL, NULL, k->kind), "scope",
                          k->namespaced ? "Namespaced" : "Cluster", "singularResource", k->singular,
                          "verbs", strings(k->verbs ? k->verbs : all_verbs));
    int failed = !e;
    if (e && k->short_names)
        failed |= json_object_set_new(e, "shortNames", strings(k->short_names));
    if (e && k->categories)
        failed |= json_object_set_new(e, "categories", strings(k->categories));
    json_t *subs = k->n_subresources ? json_array() : NULL;
    for (size_t s = 0; e && s < k->n_subresources; s++) {
        const struct ck_subresource *sub = &k->subresources[s];
        failed |= json_array_append_new(
            subs,
            json_pack("{s:s, s:o, s:o}", "subresource", sub->name, "responseKind",
                      response_kind(k, sub->group, sub->version, sub->kind ? sub->kind : k->kind),
                      "verbs", strings(sub->verbs)));
    }
    if (e && subs)
        failed |= json_object_set_new(e, "subresources", subs);
    else
        json_decref(subs);
    if (failed)
        e = (json_decref(e), NULL);
    return e;
}

/* The entry of group (in items) as an APIGroupDiscovery, added when it is not there yet. */
static json_t *group_entry(json_t *items, const char *group)
{
    size_t i;
    json_t *g;
    json_array_foreach(items, i, g)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(g, "metadata"), "name"));
        if (strcmp(name ? name : "", group) == 0)
            return g;
    }
    /* ObjectMeta as Go writes an empty one: no name for the core group, a null timestamp */
    json_t *meta = group[0] ? json_pack("{s:s, s:n}", "name", group, "creationTimestamp")
                            : json_pack("{s:n}", "creationTimestamp");
    g = json_pack("{s:o, s:[]}", "metadata", meta, "versions");
    return g && json_array_append_new(items, g) == 0 ? g : NULL;
}

/* The entry of version in a group's versions, added (Current: served here) when missing. */
static json_t *version_entry(json_t *group, const char *version)
{
    json_t *versions = json_object_get(group, "versions");
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "version")), version) == 0)
            return v;
    }
    v = json_pack("{s:s, s:[], s:s}", "version", version, "resources", "freshness", "Current");
    return v && json_array_append_new(versions, v) == 0 ? v : NULL;
}

json_t *ck_discovery_aggregated(bool core, const char *api_version)
{
    json_t *items = json_array();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    int failed = !items;
    /* registration order: a group's first version is its preferred one, as in /apis */
    for (size_t i = 0; !failed && i < n; i++) {
        const struct ck_kind *k = kinds[i];
        if (core != !k->group[0])
            continue;
        json_t *version = version_entry(group_entry(items, k->group), k->version);
        failed |= !version || json_array_append_new(json_object_get(version, "resources"),
                                                    aggregated_resource(k)) < 0;
    }
    if (failed) {
        json_decref(items);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:{}, s:o}", "kind", "APIGroupDiscoveryList", "apiVersion",
                     api_version, "metadata", "items", items);
}

/* ---- OpenAPI v3 --------------------------------------------------------- */

/* FNV-1a 64, folded over a document's canonical JSON: a cheap, stable ETag. */
#define FNV_OFFSET 0xcbf29ce484222325ULL

static void fold_bytes(uint64_t *h, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        *h ^= (unsigned char)p[i];
        *h *= 0x100000001b3ULL;
    }
}

/* Folds v's canonical JSON (compact, keys sorted) into *h. 0, or -1 out of memory. */
static int fold_json(uint64_t *h, const json_t *v)
{
    size_t len = 0;
    char *text = ck__json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY, &len);
    if (!text)
        return -1;
    fold_bytes(h, text, len);
    free(text);
    return 0;
}

/*
 * A schema a document names, by name into out: a copy of it for a document
 * (hash NULL), or for a document that is only hashed, json_true() with the
 * name and the schema folded into *hash. Never the set's own object: the set's
 * schemas are shared by every thread building a document, and jansson reads a
 * value's reference count with a plain load before changing it atomically,
 * which races with another thread's change. 0, or -1 out of memory.
 */
static int add_schema(json_t *out, const char *name, const json_t *schema, uint64_t *hash)
{
    if (!hash)
        return json_object_set_new(out, name, ck__json_copy(schema));
    fold_bytes(hash, name, strlen(name) + 1);
    return fold_json(hash, schema) < 0 ? -1 : json_object_set_new(out, name, json_true());
}

/* Adds every schema node references (transitively) to out, as add_schema(). 0, or -1. */
static int collect_schemas(const struct ck_schemas *set, const json_t *node, json_t *out,
                           uint64_t *hash)
{
    if (json_is_array(node)) {
        size_t i;
        json_t *item;
        json_array_foreach(node, i, item)
        {
            if (collect_schemas(set, item, out, hash) < 0)
                return -1;
        }
        return 0;
    }
    if (!json_is_object(node))
        return 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)node, key, value)
    {
        const char *ref = strcmp(key, "$ref") == 0 ? json_string_value(value) : NULL;
        if (ref && strncmp(ref, REF_PREFIX, strlen(REF_PREFIX)) == 0) {
            const char *name = ref + strlen(REF_PREFIX);
            const json_t *schema = ck_schemas_get(set, name);
            if (schema && !json_object_get(out, name) &&
                (add_schema(out, name, schema, hash) < 0 ||
                 collect_schemas(set, schema, out, hash) < 0))
                return -1;
        } else if (strcmp(key, "default") != 0 && strcmp(key, "enum") != 0 &&
                   collect_schemas(set, value, out, hash) < 0) {
            return -1;
        }
    }
    return 0;
}

bool ck_schema_is_strategic(const struct ck_schemas *set, const char *name)
{
    /* as Kubernetes: every built-in kind takes it, custom resources do not */
    const json_t *schema = ck_schemas_get(set, name);
    return schema && !json_is_true(json_object_get(schema, "x-ckube-custom-resource"));
}

/* The patch operation's request body: the patch types the kind takes. */
static json_t *patch_request_body(bool strategic)
{
    json_t *content = json_object();
    static const char *const types[] = {"application/json-patch+json",
                                        "application/merge-patch+json",
                                        "application/strategic-merge-patch+json"};
    for (size_t i = 0; i < (strategic ? 3 : 2); i++)
        if (json_object_set_new(content, types[i],
                                json_pack("{s:{s:s}}", "schema", "type", "object")) < 0)
            return json_decref(content), NULL;
    return json_pack("{s:o, s:b}", "content", content, "required", true);
}

static json_t *param(const char *name, const char *in, bool required, const char *type)
{
    return json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", name, "in", in, "required", required,
                     "schema", "type", type);
}

/*
 * The media types an answer comes in, as Kubernetes lists them: JSON, and
 * protobuf for a kind with a protobuf message (custom resources have none);
 * a list also streams its watch in both. NULL when out of memory.
 */
static json_t *response_content(const struct ck_kind *k, const char *verb, const char *ref)
{
    /* every format the server writes (media.c's codecs), as kube-apiserver lists them */
    static const struct {
        const char *type;
        bool protobuf; /* only for kinds with a protobuf message */
        bool watch;    /* only for list (its watch stream) */
    } types[] = {
        {"application/json", false, false},         {"application/yaml", false, false},
        {CK_PROTOBUF_MEDIA_TYPE, true, false},      {"application/json;stream=watch", false, true},
        {CK_PROTOBUF_WATCH_MEDIA_TYPE, true, true},
    };
    bool proto = ck_proto_has_message(k->schema);
    bool list = strcmp(verb, "list") == 0;
    json_t *content = json_object();
    for (size_t i = 0; content && i < sizeof(types) / sizeof(types[0]); i++) {
        if ((types[i].protobuf && !proto) || (types[i].watch && !list))
            continue;
        if (json_object_set_new(content, types[i].type,
                                json_pack("{s:{s:s}}", "schema", "$ref", ref)) < 0)
            content = (json_decref(content), NULL);
    }
    return content;
}

static json_t *operation(const struct ck_kind *k, const char *verb, const char *action,
                         const char *ref, bool with_field_validation)
{
    json_t *params = json_array();
    if (with_field_validation &&
        (json_array_append_new(params, param("fieldValidation", "query", false, "string")) < 0 ||
         json_array_append_new(params, param("fieldManager", "query", false, "string")) < 0 ||
         json_array_append_new(params, param("dryRun", "query", false, "string")) < 0))
        return json_decref(params), NULL;
    json_t *op = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:{s:s, s:o}}}", "operationId", verb,
                           "x-kubernetes-action", action, "x-kubernetes-group-version-kind",
                           "group", k->group, "version", k->version, "kind", k->kind, "responses",
                           "200", "description", "OK", "content", response_content(k, verb, ref));
    if (json_object_set_new(op, "parameters", params) < 0)
        op = (json_decref(op), NULL);
    return op;
}

/*
 * The document of group/version, its schemas copied in; or with hash set, the
 * document without them (each name maps to true) and the schemas folded into
 * *hash in the order they are reached, which is all the index needs. NULL when
 * nothing is served there or out of memory.
 */
static json_t *build_document(const struct ck_schemas *set, const char *group, const char *version,
                              uint64_t *hash)
{
    json_t *paths = json_object();
    json_t *schemas = json_object();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    bool served = false;
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
            continue;
        served = true;
        const struct ck_schemas *kset = ck_kind_schemas(k, set);
        char root[256], collection[512], item[600], ref[256];
        if (k->group[0])
            snprintf(root, sizeof(root), "/apis/%s/%s", k->group, k->version);
        else
            snprintf(root, sizeof(root), "/api/%s", k->version);
        snprintf(collection, sizeof(collection), "%s%s/%s", root,
                 k->namespaced ? "/namespaces/{namespace}" : "", k->resource);
        snprintf(item, sizeof(item), "%s/{name}", collection);
        snprintf(ref, sizeof(ref), REF_PREFIX "%s", k->schema);

        failed |= json_object_set_new(paths, collection,
                                      json_pack("{s:o, s:o}", "get",
                                                operation(k, "list", "list", ref, false), "post",
                                                operation(k, "create", "post", ref, true)));
        json_t *patch = operation(k, "patch", "patch", ref, true);
        failed |= json_object_set_new(patch, "requestBody",
                                      patch_request_body(ck_schema_is_strategic(kset, k->schema)));
        failed |= json_object_set_new(
            paths, item,
            json_pack("{s:o, s:o, s:o, s:o}", "get", operation(k, "read", "get", ref, false), "put",
                      operation(k, "replace", "put", ref, true), "patch", patch, "delete",
                      operation(k, "delete", "delete", ref, false)));
        const json_t *schema = ck_schemas_get(kset, k->schema);
        if (schema && !json_object_get(schemas, k->schema))
            failed |= add_schema(schemas, k->schema, schema, hash) < 0 ||
                      collect_schemas(kset, schema, schemas, hash) < 0;
    }
    if (!served || failed) {
        json_decref(paths);
        json_decref(schemas);
        return NULL;
    }
    char title[64];
    snprintf(title, sizeof(title), "v%s.%s", ck_version()->major, ck_version()->minor);
    return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info", "title",
                     "ckube", "version", title, "paths", paths, "components", "schemas", schemas);
}

json_t *ck_openapi_document(const struct ck_schemas *set, const char *group, const char *version)
{
    return build_document(set, group, version, NULL);
}

/*
 * The last index built, for the registry snapshot it was built from: every
 * document hashed is a pure function of the kinds and schemas, which are
 * immutable, and a snapshot's kinds array is never freed, so its address
 * names it. With 1,000 CustomResourceDefinitions building the index takes
 * most of a second; kubectl asks for it on every apply and explain.
 */
static struct ck__doc_cache index_cache = CK__DOC_CACHE_INIT;

static json_t *build_index(const struct ck_schemas *set);

json_t *ck_openapi_index(const struct ck_schemas *set)
{
    return ck__doc_cache_copy(&index_cache, set, build_index);
}

static json_t *build_index(const struct ck_schemas *set)
{
    json_t *paths = json_object();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = kinds[i];
        char key[128], url[256], hash[32];
        if (k->group[0])
            snprintf(key, sizeof(key), "apis/%s/%s", k->group, k->version);
        else
            snprintf(key, sizeof(key), "api/%s", k->version);
        if (json_object_get(paths, key))
            continue;
        /* the document's hash: its schemas as they are reached, then the rest */
        uint64_t h = FNV_OFFSET;
        json_t *doc = build_document(set, k->group, k->version, &h);
        int r = doc ? fold_json(&h, doc) : -1;
        json_decref(doc);
        snprintf(hash, sizeof(hash), "%016llX", (unsigned long long)h);
        snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", key, hash);
        if (r < 0 ||
            json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url)) < 0)
            return json_decref(paths), NULL;
    }
    return json_pack("{s:o}", "paths", paths);
}
