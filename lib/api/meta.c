/*
 * meta.c - ObjectMeta on create and update, the part of every write that is
 * the same for all kinds.
 *
 * Mirrors k8s.io/apiserver's rest.BeforeCreate/BeforeUpdate and
 * apimachinery's ValidateObjectMeta(Update): the server owns uid,
 * creationTimestamp, generation and the deletion fields; names follow the
 * kind's rule (struct ck_kind's name_rule: a DNS-1123 subdomain, or a label);
 * labels, annotations, owner references and finalizers are checked with
 * Kubernetes' messages. Kind-specific work is delegated to the kind's
 * strategy hooks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define ANNOTATIONS_MAX_BYTES (256 * 1024)
#define GENERATE_SUFFIX_LEN   5
#define GENERATE_PREFIX_MAX   (63 - GENERATE_SUFFIX_LEN)

static void random_bytes(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
    }
}

void ck_uuid(char *buf)
{
    unsigned char b[16];
    random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

const char *ck_rfc3339(long long seconds, char *buf, size_t size)
{
    return ck__time_format(seconds, -1, buf, size);
}

/* generateName: the prefix (cut to 58) plus 5 characters of Kubernetes' alphabet. */
static char *generate_name(const char *prefix)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char r[GENERATE_SUFFIX_LEN];
    random_bytes(r, sizeof(r));
    size_t len = strlen(prefix);
    if (len > GENERATE_PREFIX_MAX)
        len = GENERATE_PREFIX_MAX;
    char *name = ck__malloc(len + GENERATE_SUFFIX_LEN + 1);
    if (!name)
        return NULL;
    memcpy(name, prefix, len);
    for (size_t i = 0; i < GENERATE_SUFFIX_LEN; i++)
        name[len + i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
    name[len + GENERATE_SUFFIX_LEN] = '\0';
    return name;
}

/*
 * Sets apiVersion and kind from the kind; returns metadata, made an object if it was not,
 * or NULL when out of memory.
 */
static json_t *stamp_type(const struct ck_kind *kind, json_t *obj)
{
    char buf[CK_API_VERSION_MAX];
    if (json_object_set_new(obj, "apiVersion",
                            json_string(ck_kind_api_version(kind, buf, sizeof(buf)))) < 0 ||
        json_object_set_new(obj, "kind", json_string(kind->kind)) < 0)
        return NULL;
    return ck__object_at(obj, "metadata");
}

int ck_meta_prepare_create(const struct ck_kind *kind, json_t *obj, const char *namespace,
                           long long now, struct ck_err *reterr)
{
    char buf[64];
    json_t *meta = stamp_type(kind, obj);
    if (!meta)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const char *body_ns = json_string_value(json_object_get(meta, "namespace"));
    if (kind->namespaced) {
        if (body_ns && *body_ns && namespace && strcmp(body_ns, namespace) != 0)
            return ck_err_set(
                reterr, CK_EINVAL,
                "the namespace of the provided object does not match the namespace sent on the request");
        if (json_object_set_new(meta, "namespace", json_string(namespace ? namespace : "")) < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    } else {
        json_object_del(meta, "namespace");
    }
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *prefix = json_string_value(json_object_get(meta, "generateName"));
    if ((!name || !*name) && prefix && *prefix) {
        char *generated = generate_name(prefix);
        if (!generated)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        int r = json_object_set_new(meta, "name", json_string(generated));
        free(generated);
        if (r < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    char uid[37];
    ck_uuid(uid);
    if (json_object_set_new(meta, "uid", json_string(uid)) < 0 ||
        json_object_set_new(meta, "creationTimestamp",
                            json_string(ck_rfc3339(now, buf, sizeof(buf)))) < 0 ||
        (kind->has_generation && json_object_set_new(meta, "generation", json_integer(1)) < 0))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (!kind->has_generation)
        json_object_del(meta, "generation");
    static const char *const server_owned[] = {"resourceVersion", "deletionTimestamp",
                                               "deletionGracePeriodSeconds", "selfLink",
                                               "managedFields"};
    for (size_t i = 0; i < sizeof(server_owned) / sizeof(server_owned[0]); i++)
        json_object_del(meta, server_owned[i]);
    if (kind->prepare_for_create && kind->prepare_for_create(obj) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    return 0;
}

json_t *ck__object_at(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (!json_is_object(v)) {
        v = json_object();
        /* json_object_set_new frees v when it fails */
        if (json_object_set_new(parent, key, v) < 0)
            return NULL;
    }
    return v;
}

/* Sets obj[key] to a copy of from[key], or deletes it when from has none. 0 or CK_ENOMEM. */
static int carry_over(json_t *obj, const json_t *from, const char *key)
{
    json_t *value = json_object_get(from, key);
    if (value)
        return json_object_set_new(obj, key, ck__json_copy(value)) < 0 ? CK_ENOMEM : 0;
    json_object_del(obj, key);
    return 0;
}

int ck_meta_keep_server_owned(json_t *meta, const json_t *old_meta)
{
    static const char *const owned[] = {"name",
                                        "namespace",
                                        "uid",
                                        "creationTimestamp",
                                        "generation",
                                        "deletionTimestamp",
                                        "deletionGracePeriodSeconds"};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (carry_over(meta, old_meta, owned[i]) < 0)
            return CK_ENOMEM;
    return 0;
}

int ck_meta_prepare_update(const struct ck_kind *kind, json_t *obj, const json_t *old)
{
    json_t *meta = stamp_type(kind, obj);
    const json_t *old_meta = json_object_get(old, "metadata");
    if (!meta || ck_meta_keep_server_owned(meta, old_meta) < 0)
        return CK_ENOMEM;
    json_object_del(meta, "selfLink");
    json_object_del(meta, "managedFields");
    if (ck_kind_subresource_part(kind, CK_SUBRESOURCE_STATUS) && carry_over(obj, old, "status") < 0)
        return CK_ENOMEM;
    if (kind->prepare_for_update && kind->prepare_for_update(obj, old) < 0)
        return CK_ENOMEM;
    if (kind->has_generation) {
        bool changed = !json_equal(json_object_get(obj, "spec"), json_object_get(old, "spec"));
        if (kind->annotations_bump_generation) {
            /* json_equal() says two absent values differ */
            const json_t *a = json_object_get(meta, "annotations");
            const json_t *b = json_object_get(old_meta, "annotations");
            changed = changed || ((a || b) && !json_equal((json_t *)a, (json_t *)b));
        }
        if (changed &&
            json_object_set_new(
                meta, "generation",
                json_integer(json_integer_value(json_object_get(old_meta, "generation")) + 1)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

int ck_kind_default(const struct ck_kind *kind, json_t *obj)
{
    return kind->defaults ? kind->defaults(obj) : 0;
}

int ck_kind_canonicalize(const struct ck_kind *kind, json_t *obj)
{
    return kind->canonicalize ? kind->canonicalize(obj) : 0;
}

/* ---- validation --------------------------------------------------------- */

static void validate_string_map(const json_t *map, const char *field, bool label_values,
                                struct ck_field_errors *errs)
{
    const char *key;
    json_t *value;
    size_t total = 0;
    json_object_foreach((json_t *)map, key, value)
    {
        ck_validate_qualified_name(key, field, errs);
        const char *v = json_string_value(value);
        total += strlen(key) + (v ? strlen(v) : 0);
        if (label_values && v)
            ck_validate_label_value(v, field, errs);
    }
    if (!label_values && total > ANNOTATIONS_MAX_BYTES)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, field, NULL, false,
                            "must have at most %d bytes", ANNOTATIONS_MAX_BYTES);
}

static void validate_owner_references(const json_t *refs, struct ck_field_errors *errs)
{
    size_t i, controllers = 0;
    json_t *ref;
    json_array_foreach(refs, i, ref)
    {
        static const char *const required[] = {"apiVersion", "kind", "name", "uid"};
        for (size_t r = 0; r < 4; r++) {
            const char *v = json_string_value(json_object_get(ref, required[r]));
            if (!v || !*v) {
                char field[96];
                snprintf(field, sizeof(field), "metadata.ownerReferences[%zu].%s", i, required[r]);
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
            }
        }
        if (json_is_true(json_object_get(ref, "controller")))
            controllers++;
    }
    if (controllers > 1)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.ownerReferences", NULL, false,
                            "Only one reference can have Controller set to true");
}

static bool array_has_string(const json_t *array, const char *s)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        if (json_is_string(item) && strcmp(json_string_value(item), s) == 0)
            return true;
    }
    return false;
}

static void validate_finalizers(const json_t *finalizers, const json_t *old_meta,
                                struct ck_field_errors *errs)
{
    size_t i;
    json_t *f;
    json_array_foreach(finalizers, i, f)
    {
        char field[64];
        snprintf(field, sizeof(field), "metadata.finalizers[%zu]", i);
        const char *name = json_string_value(f);
        if (!name)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, NULL, false, "must be a string");
        else if (strchr(name, '/') ||
                 (strcmp(name, "kubernetes") != 0 && strcmp(name, "orphan") != 0 &&
                  strcmp(name, "foregroundDeletion") != 0))
            ck_validate_qualified_name(name, field, errs);
    }
    if (!old_meta || !json_object_get(old_meta, "deletionTimestamp"))
        return;
    const json_t *old = json_object_get(old_meta, "finalizers");
    json_array_foreach(finalizers, i, f)
    {
        const char *name = json_string_value(f);
        if (name && !array_has_string(old, name)) {
            ck_field_errors_add(
                errs, CK_FIELD_FORBIDDEN, "metadata.finalizers", NULL, false,
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{\"%s\"}",
                name);
            return;
        }
    }
}

void ck_meta_validate(const struct ck_kind *kind, const json_t *obj, const json_t *old,
                      struct ck_field_errors *errs)
{
    ck_meta_validate_subresource(kind, NULL, obj, old, errs);
}

void ck_meta_validate_subresource(const struct ck_kind *kind, const struct ck_subresource *sub,
                                  const json_t *obj, const json_t *old,
                                  struct ck_field_errors *errs)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "metadata.name", NULL, false,
                            "name or generateName is required");
    } else if (kind->name_rule == CK_NAME_DNS_LABEL) {
        ck_validate_dns1123_label(name, "metadata.name", errs);
    } else if (kind->name_rule == CK_NAME_PATH_SEGMENT) {
        /* apimachinery's IsValidPathSegmentName, as RBAC validates names */
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.name", name, true,
                                "may not be '%s'", name);
        else if (strchr(name, '/') || strchr(name, '%'))
            ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.name", name, true,
                                "may not contain '%c'", strchr(name, '/') ? '/' : '%');
    } else {
        ck_validate_dns1123_subdomain(name, "metadata.name", errs);
    }
    if (kind->namespaced) {
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        if (!ns || !*ns)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "metadata.namespace", NULL, false, NULL);
        else
            ck_validate_dns1123_label(ns, "metadata.namespace", errs);
    }
    validate_string_map(json_object_get(meta, "labels"), "metadata.labels", true, errs);
    validate_string_map(json_object_get(meta, "annotations"), "metadata.annotations", false, errs);
    validate_owner_references(json_object_get(meta, "ownerReferences"), errs);
    validate_finalizers(json_object_get(meta, "finalizers"),
                        old ? json_object_get(old, "metadata") : NULL, errs);
    if (sub && sub->validate)
        sub->validate(obj, old, errs);
    else if (kind->validate)
        kind->validate(obj, old, errs);
}
