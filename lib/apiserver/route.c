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
 *
 * Paths as they arrive: libmicrohttpd percent-decodes the path into a C
 * string, so "x%00y" would become "x" and "a%2Fb" two segments.
 * ck__path_check() therefore looks at the target as the client sent it,
 * segment by segment, before anything is decoded: a segment that decodes to
 * a NUL or a '/' cannot name anything (404), nor can a path with an empty
 * segment inside it (`//api//v1/...`, 404 as kube-apiserver answers). Object
 * names then get Kubernetes' path segment validation
 * (ck__check_name_segment()).
 */
#include <ctype.h>
#include <microhttpd.h> /* MHD_http_unescape only */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

#include "internal.h"

#define MAX_SEGMENTS 8

/*
 * Splits path ("/a/b", a final '/' allowed) on '/' into at most MAX_SEGMENTS
 * segments (in a copy). MAX_SEGMENTS + 1 for an empty segment or a path not
 * starting with '/'; for more than MAX_SEGMENTS segments too, unless
 * ret_more is given: then *ret_more is set (false when they all fit) and the
 * first MAX_SEGMENTS are returned (a proxy subresource's path goes on).
 */
static size_t split(const char *path, char *copy, size_t copy_size, char **segments, bool *ret_more)
{
    snprintf(copy, copy_size, "%s", path);
    if (ret_more)
        *ret_more = false;
    if (copy[0] != '/')
        return MAX_SEGMENTS + 1;
    size_t n = 0;
    for (char *p = copy; *p;) {
        *p++ = '\0'; /* the '/' */
        if (!*p)
            break; /* a final '/' */
        if (n == MAX_SEGMENTS && ret_more) {
            *ret_more = true;
            break;
        }
        if (*p == '/' || n == MAX_SEGMENTS)
            return MAX_SEGMENTS + 1; /* empty segment, or too many */
        segments[n++] = p;
        while (*p && *p != '/')
            p++;
    }
    return n;
}

static bool is_hex(char c)
{
    return isxdigit((unsigned char)c) != 0;
}

/* True when every '%' in s[0..len) starts a two-digit hex escape. */
static bool escapes_well_formed(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] == '%' && (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2])))
            return false;
    return true;
}

/* True when s[0..len) holds "%00" (an encoded NUL). */
static bool has_encoded_nul(const char *s, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++)
        if (s[i] == '%' && s[i + 1] == '0' && s[i + 2] == '0')
            return true;
    return false;
}

static int not_found(struct ck_err *reterr)
{
    return ck_err_status(reterr, "NotFound", "the server could not find the requested resource");
}

int ck__path_check(const char *raw_uri, struct ck_err *reterr)
{
    size_t path_len = strcspn(raw_uri, "?");
    const char *query = raw_uri[path_len] ? raw_uri + path_len + 1 : NULL;
    if (!escapes_well_formed(raw_uri, path_len))
        return ck_err_status(reterr, "BadRequest", "invalid URL escape in the request path");
    if (query && has_encoded_nul(query, strlen(query)))
        return ck_err_status(reterr, "BadRequest", "invalid NUL character in the request query");
    if (path_len == 0 || raw_uri[0] != '/')
        return not_found(reterr);
    char segment[256];
    for (size_t start = 1; start <= path_len;) {
        size_t len = strcspn(raw_uri + start, "/?");
        if (start + len > path_len)
            len = path_len - start;
        bool last = start + len >= path_len;
        if (len == 0 && !last)
            return not_found(reterr); /* "//" */
        if (len >= sizeof(segment))
            return not_found(reterr); /* longer than any name or resource */
        memcpy(segment, raw_uri + start, len);
        segment[len] = '\0';
        /* libmicrohttpd's own decoder; it returns the decoded length */
        size_t decoded = MHD_http_unescape(segment);
        if (strlen(segment) != decoded || memchr(segment, '/', decoded))
            return not_found(reterr); /* a NUL or a '/' inside a segment */
        start += len + 1;
    }
    return 0;
}

int ck__check_name_segment(const char *name, struct ck_err *reterr)
{
    const char *why = NULL;
    if (strcmp(name, ".") == 0)
        why = "may not be '.'";
    else if (strcmp(name, "..") == 0)
        why = "may not be '..'";
    else if (strchr(name, '/') && strchr(name, '%'))
        why = "may not contain '/';may not contain '%'";
    else if (strchr(name, '/'))
        why = "may not contain '/'";
    else if (strchr(name, '%'))
        why = "may not contain '%'";
    if (!why)
        return 0;
    char quoted[600];
    ck__quote(name, quoted, sizeof(quoted));
    return ck_err_status(reterr, "BadRequest", "Name parameter invalid: %s: %s", quoted, why);
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
    bool more = false;
    if (strlen(path) >= sizeof(copy))
        return CK_ENOENT;
    size_t n = split(path, copy, sizeof(copy), seg, &more);
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
        /* {name}/proxy/{path...}: the rest of the path is the proxied one's */
        if (strcmp(ret->subresource, "proxy") == 0) {
            ret->proxy_skip = (unsigned)i;
            return 0;
        }
    }
    if (i != n || more)
        return CK_ENOENT;
    return 0;
}
