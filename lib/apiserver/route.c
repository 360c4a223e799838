/*
 * route.c - turns a Kubernetes REST path into what it addresses.
 *
 *   /api/v1/<resource>[/<name>[/<sub>]]                          cluster-scoped
 *   /api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]]          namespaced
 *   /api/v1/<resource>                                           all namespaces
 *   /apis/<group>/<version>/...                                  same shapes
 *
 * The namespace kind (the one holding CK_KIND_ROLE_NAMESPACE) is itself a
 * resource, so /api/v1/namespaces/<name> is a namespace and
 * /api/v1/namespaces/<name>/status|finalize its subresources, while
 * /api/v1/namespaces/<ns>/pods is a collection in it, as in Kubernetes'
 * route table; the `namespaces` segment is the namespace kind's resource. Paths that are not API
 * paths, or name unknown resources, are reported as not found; names are not validated here (the
 * handlers do).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MAX_SEGMENTS 8

/* Splits path on '/' into at most MAX_SEGMENTS segments (in a copy). */
static size_t split(const char *path, char *copy, size_t copy_size, char **segments)
{
    snprintf(copy, copy_size, "%s", path);
    size_t n = 0;
    for (char *p = copy; *p && n <= MAX_SEGMENTS;) {
        while (*p == '/')
            *p++ = '\0';
        if (!*p)
            break;
        if (n == MAX_SEGMENTS)
            return MAX_SEGMENTS + 1; /* too many */
        segments[n++] = p;
        while (*p && *p != '/')
            p++;
    }
    return n;
}

static bool copy_into(char *dst, size_t size, const char *src)
{
    size_t len = strlen(src);
    if (len >= size)
        return false;
    memcpy(dst, src, len + 1);
    return true;
}

int ck__route(const char *path, struct ck__target *ret)
{
    char copy[1024];
    char *seg[MAX_SEGMENTS];
    memset(ret, 0, sizeof(*ret));
    if (strlen(path) >= sizeof(copy))
        return CK_ENOENT;
    size_t n = split(path, copy, sizeof(copy), seg);
    if (n > MAX_SEGMENTS || n < 2)
        return CK_ENOENT;

    size_t i;
    if (strcmp(seg[0], "api") == 0) {
        ret->group[0] = '\0';
        if (!copy_into(ret->version, sizeof(ret->version), seg[1]))
            return CK_ENOENT;
        i = 2;
    } else if (strcmp(seg[0], "apis") == 0 && n >= 3) {
        if (!copy_into(ret->group, sizeof(ret->group), seg[1]) ||
            !copy_into(ret->version, sizeof(ret->version), seg[2]))
            return CK_ENOENT;
        i = 3;
    } else {
        return CK_ENOENT;
    }
    if (i == n)
        return CK_ENOENT; /* discovery, not a resource */

    /* namespaces/<ns>/<resource>... : a namespaced collection or object */
    const struct ck_kind *ns_kind = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    if (ns_kind && strcmp(seg[i], ns_kind->resource) == 0 && n - i >= 3) {
        bool ns_subresource = strcmp(ns_kind->group, ret->group) == 0 &&
                              strcmp(ns_kind->version, ret->version) == 0 && n - i == 3 &&
                              ck_kind_subresource(ns_kind, seg[i + 2]);
        if (!ns_subresource) {
            if (!copy_into(ret->namespace, sizeof(ret->namespace), seg[i + 1]))
                return CK_ENOENT;
            i += 2;
        }
    }
    ret->kind = ck_kind_lookup(ret->group, ret->version, seg[i]);
    if (!ret->kind)
        return CK_ENOENT;
    if (ret->namespace[0] && !ret->kind->namespaced)
        return CK_ENOENT; /* /namespaces/x/nodes does not exist */
    i++;
    if (i < n && !copy_into(ret->name, sizeof(ret->name), seg[i++]))
        return CK_ENOENT;
    if (i < n) {
        if (!ck_kind_subresource(ret->kind, seg[i]))
            return CK_ENOENT;
        if (!copy_into(ret->subresource, sizeof(ret->subresource), seg[i++]))
            return CK_ENOENT;
    }
    if (i != n)
        return CK_ENOENT;
    return 0;
}
