/*
 * proxy.c - pods/{name}/proxy, services/{name}/proxy and nodes/{name}/proxy: where a
 * request goes, then upstream_proxy.c relays it there.
 *
 * Mirrors kube-apiserver 1.32: pkg/registry/core/pod/rest/subresources.go (ProxyREST)
 * with pod/strategy.go ResourceLocation, pkg/registry/core/service/proxy.go with
 * service/storage ResourceLocation, pkg/registry/core/node/rest/proxy.go with
 * node/strategy.go ResourceLocation, and apimachinery's SplitSchemeNamePort. The name
 * segment is `name`, `name:port` or `scheme:name:port` (scheme http or https, default
 * http); everything after `proxy` in the path, still escaped as the client sent it, and
 * the query go on to the upstream.
 *
 *   pod      its first IP (status.podIPs[0]; a loopback, link-local or unset address is
 *            400 "address not allowed"), the port given or the first port a container
 *            declares, none else; plain HTTP, or HTTPS that is not verified
 *   service  a port number is the service port's name (503 "no service port N found
 *            for service"); a random ready endpoint of the service's EndpointSlices
 *            serving the port of that name, from a random slice (503 "no endpoints
 *            available for service")
 *   node     the node's InternalIP and its daemonEndpoints.kubeletEndpoint port over
 *            HTTPS with the kubelet client certificate, as the other agent calls; another
 *            port, a plain (or unverified) connection to it
 *
 * A bare `.../proxy` read (GET, HEAD) is redirected (301) to `.../proxy/`, as
 * UpgradeAwareHandler does. Methods: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS.
 * The admission chain is asked first (a CONNECT), as for the other connect subresources.
 *
 * Threading: none of its own; the location functions are pure (tests/apiserver/test_proxy.c).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ckube/internal/util.h"
#include "internal.h"

int ck__proxy_split_id(const char *id, struct ck__proxy_id *ret)
{
    memset(ret, 0, sizeof(*ret));
    const char *c1 = strchr(id, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 && strchr(c2 + 1, ':'))
        return CK_EINVAL; /* more than three parts */
    const char *name = id, *name_end = c1 ? c1 : id + strlen(id), *port = c1 ? c1 + 1 : NULL;
    if (c2) {
        size_t scheme_len = (size_t)(c1 - id);
        if (scheme_len >= sizeof(ret->scheme))
            return CK_EINVAL;
        memcpy(ret->scheme, id, scheme_len);
        name = c1 + 1;
        name_end = c2;
        port = c2 + 1;
    }
    size_t name_len = (size_t)(name_end - name);
    if (name_len == 0 || name_len >= sizeof(ret->name) ||
        (port && strlen(port) >= sizeof(ret->port)))
        return CK_EINVAL;
    memcpy(ret->name, name, name_len);
    snprintf(ret->port, sizeof(ret->port), "%s", port ? port : "");
    if (*ret->scheme && strcmp(ret->scheme, "http") != 0 && strcmp(ret->scheme, "https") != 0)
        return CK_EINVAL;
    return 0;
}

bool ck__proxy_ip_allowed(const char *ip)
{
    unsigned char a[16];
    if (ip && inet_pton(AF_INET, ip, a) == 1) {
        /* Go's IsGlobalUnicast: not 0.0.0.0, 127/8, 169.254/16, 224/4, 255.255.255.255 */
        bool unspecified = !a[0] && !a[1] && !a[2] && !a[3];
        bool broadcast = a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255;
        return !unspecified && !broadcast && a[0] != 127 && !(a[0] == 169 && a[1] == 254) &&
               (a[0] & 0xf0) != 0xe0;
    }
    if (ip && inet_pton(AF_INET6, ip, a) == 1) {
        static const unsigned char zero[16];
        bool unspecified = memcmp(a, zero, 16) == 0;
        bool loopback = memcmp(a, zero, 15) == 0 && a[15] == 1;
        bool link_local = a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
        return !unspecified && !loopback && !link_local && a[0] != 0xff;
    }
    return false;
}

/* "scheme://host[:port]", brackets around an IPv6 host. */
static int location(const char *scheme, const char *host, const char *port, char *buf, size_t size)
{
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(buf, size, "%s://%s%s%s%s%s", *scheme ? scheme : "http", v6 ? "[" : "", host,
                     v6 ? "]" : "", *port ? ":" : "", port);
    return n > 0 && (size_t)n < size ? 0 : CK_EINVAL;
}

static int address_not_allowed(struct ck_err *reterr)
{
    return ck_err_status(reterr, "BadRequest", "address not allowed");
}

int ck__proxy_pod_location(const json_t *pod, const struct ck__proxy_id *id, char *buf, size_t size,
                           struct ck_err *reterr)
{
    char port[sizeof(id->port)];
    snprintf(port, sizeof(port), "%s", id->port);
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
    {
        const json_t *ports = json_object_get(c, "ports");
        if (*port || json_array_size(ports) == 0)
            continue;
        snprintf(port, sizeof(port), "%lld",
                 (long long)json_integer_value(
                     json_object_get(json_array_get(ports, 0), "containerPort")));
    }
    const json_t *status = json_object_get(pod, "status");
    const char *ip = json_string_value(
        json_object_get(json_array_get(json_object_get(status, "podIPs"), 0), "ip"));
    if (!ck__proxy_ip_allowed(ip))
        return address_not_allowed(reterr);
    if (location(id->scheme, ip, port, buf, size) < 0)
        return ck_err_status(reterr, "BadRequest", "invalid pod request");
    return 0;
}

/* True when the text is a decimal number (strconv.ParseInt's base 10). */
static bool port_number(const char *s, long long *ret)
{
    char *end = NULL;
    if (!*s)
        return false;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return false;
    *ret = v;
    return true;
}

/* The endpoint of slice at a ready address serving port_name from offset on, or NULL. */
static const char *ready_endpoint(const json_t *slice, const char *port_name, unsigned seed,
                                  long long *ret_port)
{
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(slice, "ports"), i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        if (strcmp(name ? name : "", port_name) != 0 ||
            !json_is_integer(json_object_get(p, "port")))
            continue;
        const json_t *eps = json_object_get(slice, "endpoints");
        size_t n = json_array_size(eps);
        for (size_t k = 0; k < n; k++) {
            const json_t *ep = json_array_get(eps, (seed + k) % n);
            const json_t *ready = json_object_get(json_object_get(ep, "conditions"), "ready");
            const char *addr =
                json_string_value(json_array_get(json_object_get(ep, "addresses"), 0));
            if (!addr || json_is_false(ready))
                continue;
            *ret_port = json_integer_value(json_object_get(p, "port"));
            return addr;
        }
    }
    return NULL;
}

int ck__proxy_service_location(const json_t *svc, const json_t *slices, const char *raw_id,
                               const struct ck__proxy_id *id, unsigned seed, char *buf, size_t size,
                               struct ck_err *reterr)
{
    char port_name[64];
    snprintf(port_name, sizeof(port_name), "%s", id->port);
    long long number = 0;
    if (port_number(id->port, &number)) {
        /* a port number names the service port of that number */
        bool found = false;
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(json_object_get(svc, "spec"), "ports"), i, p)
        {
            if (json_integer_value(json_object_get(p, "port")) != number)
                continue;
            const char *name = json_string_value(json_object_get(p, "name"));
            snprintf(port_name, sizeof(port_name), "%s", name ? name : "");
            found = true;
            break;
        }
        if (!found)
            return ck_err_status(reterr, "ServiceUnavailable",
                                 "no service port %lld found for service \"%s\"", number, id->name);
    }
    /* the service's own slices */
    const json_t *own[256];
    size_t n_own = 0, i;
    const json_t *slice;
    json_array_foreach(slices, i, slice)
    {
        const char *owner = json_string_value(
            json_object_get(json_object_get(json_object_get(slice, "metadata"), "labels"),
                            "kubernetes.io/service-name"));
        if (owner && strcmp(owner, id->name) == 0 && n_own < sizeof(own) / sizeof(own[0]))
            own[n_own++] = slice;
    }
    if (n_own == 0)
        return ck_err_status(reterr, "ServiceUnavailable",
                             "no endpoints available for service \"%s\"", id->name);
    for (size_t k = 0; k < n_own; k++) {
        long long port = 0;
        const char *addr = ready_endpoint(own[(seed + k) % n_own], port_name, seed, &port);
        if (!addr)
            continue;
        char port_text[24];
        snprintf(port_text, sizeof(port_text), "%lld", port);
        if (location(id->scheme, addr, port_text, buf, size) < 0)
            break;
        return 0;
    }
    return ck_err_status(reterr, "ServiceUnavailable", "no endpoints available for service \"%s\"",
                         raw_id);
}

int ck__proxy_node_location(const json_t *node, const struct ck__proxy_id *id, char *buf,
                            size_t size, bool *ret_kubelet, struct ck_err *reterr)
{
    const char *address = ck__node_internal_ip(node);
    json_int_t kubelet_port = json_integer_value(json_object_get(
        json_object_get(json_object_get(json_object_get(node, "status"), "daemonEndpoints"),
                        "kubeletEndpoint"),
        "Port"));
    if (!address || kubelet_port <= 0 || kubelet_port > 65535)
        return ck_err_status(reterr, "ServiceUnavailable",
                             "the node agent of %s cannot be reached: no address", id->name);
    if (!ck__proxy_ip_allowed(address))
        return address_not_allowed(reterr);
    char kubelet[16];
    snprintf(kubelet, sizeof(kubelet), "%lld", (long long)kubelet_port);
    /* the agent's own port: its scheme and client certificate; another: as asked */
    *ret_kubelet = !*id->port || strcmp(id->port, kubelet) == 0;
    int r = *ret_kubelet ? location("https", address, kubelet, buf, size)
                         : location(id->scheme, address, id->port, buf, size);
    return r < 0 ? ck_err_status(reterr, "BadRequest", "invalid node request \"%s\"", id->name) : 0;
}

/* ---- the request -------------------------------------------------------- */

static int collect(const json_t *obj, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

/*
 * Where t goes: the base URL into buf and how to trust it. 0, or a code with the
 * answer in *reterr.
 */
static int resolve(struct ck_apiserver *ctx, const struct ck__target *t, char *buf, size_t size,
                   enum ck__upstream_trust *ret_trust, struct ck_err *reterr)
{
    struct ck__proxy_id id;
    const char *what = t->kind->role == CK_KIND_ROLE_POD       ? "pod"
                       : t->kind->role == CK_KIND_ROLE_SERVICE ? "service"
                                                               : "node";
    if (ck__proxy_split_id(t->name, &id) < 0)
        return ck_err_status(reterr, "BadRequest", "invalid %s request \"%s\"", what, t->name);
    *ret_trust = CK__UPSTREAM_NO_VERIFY;
    json_t *obj = ck__read_object(ctx, t->kind, t->namespace, id.name, reterr);
    if (!obj)
        return reterr->code ? reterr->code : ck_err_no_memory(reterr);
    int r;
    if (t->kind->role == CK_KIND_ROLE_POD) {
        r = ck__proxy_pod_location(obj, &id, buf, size, reterr);
    } else if (t->kind->role == CK_KIND_ROLE_NODE) {
        bool kubelet = false;
        r = ck__proxy_node_location(obj, &id, buf, size, &kubelet, reterr);
        if (kubelet)
            *ret_trust = CK__UPSTREAM_KUBELET;
    } else {
        const struct ck_kind *ek = ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
        json_t *slices = json_array();
        unsigned seed = 0;
        if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
            seed = 0;
        r = !ek || !slices
                ? ck_err_no_memory(reterr)
                : ck__admission_list(ctx->registry, ek, t->namespace, collect, slices, reterr);
        if (r == 0)
            r = ck__proxy_service_location(obj, slices, t->name, &id, seed, buf, size, reterr);
        json_decref(slices);
    }
    json_decref(obj);
    return r;
}

/* The proxied path and query: what follows t->proxy_skip segments of the raw target. */
static void split_raw(const char *raw_uri, unsigned skip, size_t *ret_prefix_len,
                      const char **ret_path, size_t *ret_path_len, const char **ret_query)
{
    size_t path_len = strcspn(raw_uri, "?");
    size_t at = 0;
    for (unsigned i = 0; i < skip && at < path_len; i++) {
        at++; /* the '/' */
        at += strcspn(raw_uri + at, "/?");
        if (at > path_len)
            at = path_len;
    }
    *ret_prefix_len = at;
    *ret_path = raw_uri + at;
    *ret_path_len = path_len - at;
    *ret_query = raw_uri[path_len] == '?' ? raw_uri + path_len + 1 : NULL;
}

/* 301 to the same path with a final '/', the query kept (proxyRedirectsforRootPath). */
static enum ck__res redirect_to_root(struct ck__req *req, const char *raw_uri, size_t path_len,
                                     const char *query)
{
    size_t size = path_len + 2 + (query ? strlen(query) + 1 : 0);
    char *target = malloc(size);
    if (!target)
        return ck__fail_no_memory(req);
    snprintf(target, size, "%.*s/%s%s", (int)path_len, raw_uri, query ? "?" : "",
             query ? query : "");
    struct ck__header location = {"Location", target};
    enum ck__res ret = ck__respond_static(req, 301, &location, 1, "", 0);
    free(target);
    return ret;
}

enum ck__res ck__serve_proxy(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                             const char *body, size_t len, const char *raw_uri,
                             const struct ck__target *t)
{
    static const char *const methods[] = {"GET",    "POST", "PUT",     "PATCH",
                                          "DELETE", "HEAD", "OPTIONS", NULL};
    bool allowed = false;
    for (size_t i = 0; methods[i]; i++)
        allowed |= strcmp(method, methods[i]) == 0;
    enum ck_kind_role role = t->kind->role;
    if (!allowed || !t->name[0] ||
        (role != CK_KIND_ROLE_POD && role != CK_KIND_ROLE_SERVICE && role != CK_KIND_ROLE_NODE))
        return ck__fail_with(req, "MethodNotAllowed",
                             "the server does not allow this method on the requested resource");
    struct ck_err err = {0};
    if (ck__admit_connect(ctx, t, &err) < 0)
        return ck__fail(req, &err);
    char base[600];
    struct ck__upstream u = {0};
    if (resolve(ctx, t, base, sizeof(base), &u.trust, &err) < 0)
        return ck__fail(req, &err);
    size_t prefix_len, path_len;
    const char *path, *query;
    split_raw(raw_uri, t->proxy_skip, &prefix_len, &path, &path_len, &query);
    if (path_len == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
        return redirect_to_root(req, raw_uri, prefix_len, query);
    char url[4096], prefix[2048];
    int n = snprintf(url, sizeof(url), "%s%.*s", base, (int)path_len, path);
    int m = snprintf(prefix, sizeof(prefix), "%.*s", (int)prefix_len, raw_uri);
    if (n < 0 || (size_t)n >= sizeof(url) || m < 0 || (size_t)m >= sizeof(prefix))
        return ck__fail_with(req, "BadRequest", "the proxied URL is too long");
    u.url = url;
    u.query = query;
    u.prefix = prefix;
    return ck__upstream_serve(ctx, req, method, body, len, &u);
}
