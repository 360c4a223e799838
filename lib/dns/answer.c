/*
 * answer.c - the answer to one DNS query: what CoreDNS answers with kubeadm's Corefile
 * (`kubernetes cluster.local in-addr.arpa ip6.arpa` with `pods insecure`, `fallthrough
 * in-addr.arpa ip6.arpa`, `ttl 30`, then `forward . /etc/resolv.conf`).
 *
 * Mirrors CoreDNS plugin/kubernetes (parse.go, kubernetes.go, handler.go, reverse.go,
 * ns.go), plugin/backend_lookup.go (the A/AAAA/SRV/PTR/... builders), request's
 * SizeAndDo/Scrub (EDNS0 and truncation) and miekg/dns's default message acceptance. The
 * shape follows CoreDNS: a name is parsed into a request (port, protocol, endpoint,
 * service, namespace, pod or svc), the request is turned into "items" (CoreDNS's
 * msg.Service: an IP or a name, a port, the domain the item stands for), and each query
 * type turns items into records. A request that names nothing is a name error (NXDOMAIN,
 * or forwarded in the reverse zones); one that names something without records of the
 * asked type is NODATA (NOERROR, the zone's SOA in authority).
 *
 * Packets are parsed and built with ldns only. Reads the caches through the indexer's
 * own locking; keeps no state: safe on any number of threads at once.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_NAME     1025 /* a presentation-format name, escapes included */
#define MAX_LABELS   128
#define MAX_CNAMES   10      /* CoreDNS's maxCnameChainLength */
#define TXT_VERSION  "1.1.0" /* the DNS schema version CoreDNS answers at dns-version.<zone> */
#define TXT_VER_TTL  28800
#define SOA_REFRESH  7200
#define SOA_RETRY    1800
#define SOA_EXPIRE   86400
#define MIN_MSG_SIZE 512
#define MAX_MSG_SIZE 65535

/* One thing a name stands for (CoreDNS's msg.Service). */
struct item {
    char host[MAX_NAME];   /* an IP, or a domain (ExternalName) */
    char target[MAX_NAME]; /* the domain the item is found at (msg.Domain of its key) */
    int port;              /* -1: none */
};

struct items {
    struct item *v;
    size_t n, cap;
};

/* What a lookup found out about the name (CoreDNS's errors). */
enum lookup_err {
    L_OK = 0,
    L_NAME_ERROR, /* errNoItems, errNsNotExposed, errInvalidRequest */
    L_NOMEM,
};

/* A parsed name (CoreDNS's recordRequest). */
struct request {
    char port[64], protocol[64], endpoint[64], service[64], namespace[64];
    char pod_or_svc[8]; /* "", "pod", "svc" */
};

struct ctx {
    const struct ck__dns_view *v;
    const char *zone;         /* lower case, final dot */
    char zone_orig[MAX_NAME]; /* the zone as the query spells it */
    const ldns_rdf *qname;    /* the question's name, as asked */
    ldns_rr_type qtype;
    bool deferred;  /* an answer needed view->lookup, which is NULL */
    bool truncated; /* an upstream answer we used was truncated */
};

/* ---- names ---------------------------------------------------------------- */

/* snprintf that says whether everything fitted (a longer name is cut, and fails later). */
static bool fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));

static bool fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < size;
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* child equals parent or is below it (both lower case, final dots). */
static bool is_subdomain(const char *parent, const char *child)
{
    size_t lp = strlen(parent), lc = strlen(child);
    if (strcmp(parent, ".") == 0)
        return true;
    if (lc < lp || strcmp(child + lc - lp, parent) != 0)
        return false;
    return lc == lp || child[lc - lp - 1] == '.';
}

/* The name's text in presentation format with its final dot; false if too long. */
static bool rdf_text(const ldns_rdf *rdf, char *buf, size_t size)
{
    char *s = ldns_rdf2str(rdf);
    if (!s)
        return false;
    bool ok = fmt(buf, size, "%s", s);
    LDNS_FREE(s);
    return ok;
}

/* Splits the part of name above zone into labels (CoreDNS's TrimZone + SplitDomainName). */
static size_t split_base(const char *name, const char *zone, char labels[][64], size_t max,
                         bool *too_long)
{
    size_t ln = strlen(name), lz = strlen(zone), n = 0;
    *too_long = false;
    if (ln <= lz)
        return 0;
    size_t end = ln - lz - 1; /* the dot before the zone */
    size_t start = 0;
    for (size_t i = 0; i <= end; i++) {
        if (i == end || name[i] == '.') {
            if (n == max || i - start >= 64) {
                *too_long = true;
                return n;
            }
            memcpy(labels[n], name + start, i - start);
            labels[n][i - start] = '\0';
            n++;
            start = i + 1;
        }
    }
    return n;
}

static bool copy_label(char *dst, size_t size, const char *src)
{
    return fmt(dst, size, "%s", src);
}

/* CoreDNS's parseRequest for a single-cluster, non-zonal zone; false: errInvalidRequest. */
static bool parse_request(const char *name, const char *zone, struct request *r)
{
    char segs[MAX_LABELS][64];
    memset(r, 0, sizeof(*r));
    bool too_long, ok = true;
    size_t n = split_base(name, zone, segs, MAX_LABELS, &too_long);
    if (too_long) {
        ok = false;
        goto out;
    }
    if (n == 0 || (n == 1 && (strcmp(segs[0], "svc") == 0 || strcmp(segs[0], "pod") == 0)))
        goto out;
    long last = (long)n - 1;
    if (strcmp(segs[last], "pod") != 0 && strcmp(segs[last], "svc") != 0) {
        ok = false;
        goto out;
    }
    copy_label(r->pod_or_svc, sizeof(r->pod_or_svc), segs[last]);
    if (--last < 0)
        goto out;
    copy_label(r->namespace, sizeof(r->namespace), segs[last]);
    if (--last < 0)
        goto out;
    copy_label(r->service, sizeof(r->service), segs[last]);
    if (--last < 0)
        goto out;
    if (last == 0) {
        copy_label(r->endpoint, sizeof(r->endpoint), segs[0]);
    } else if (last == 1) {
        const char *proto = segs[1][0] == '_' ? segs[1] + 1 : segs[1];
        const char *port = segs[0][0] == '_' ? segs[0] + 1 : segs[0];
        copy_label(r->protocol, sizeof(r->protocol), proto);
        copy_label(r->port, sizeof(r->port), port);
    } else {
        ok = false; /* zonal names are off, as in kubeadm's Corefile */
    }
out:
    return ok;
}

/* ---- addresses ------------------------------------------------------------ */

/* 4 or 6 for an IP literal (normalized into norm when given), else 0. */
static int ip_family(const char *s, char *norm, size_t size)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, s, buf) == 1) {
        if (norm)
            inet_ntop(AF_INET, buf, norm, (socklen_t)size);
        return 4;
    }
    if (inet_pton(AF_INET6, s, buf) == 1) {
        if (norm)
            inet_ntop(AF_INET6, buf, norm, (socklen_t)size);
        return 6;
    }
    return 0;
}

/* CoreDNS's endpointHostname (endpoint_pod_names off). */
static void endpoint_hostname(const char *hostname, const char *ip, char *out, size_t size)
{
    if (hostname && *hostname) {
        fmt(out, size, "%s", hostname);
        return;
    }
    size_t i = 0;
    for (; ip[i] && i + 2 < size; i++)
        out[i] = ip[i] == '.' || ip[i] == ':' ? '-' : ip[i];
    if (i > 0 && out[i - 1] == '-' && strchr(ip, ':') && i + 1 < size)
        out[i++] = '0';
    out[i] = '\0';
}

/* ---- items ---------------------------------------------------------------- */

static int items_add(struct items *it, const char *host, const char *target, int port)
{
    if (it->n == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 8;
        struct item *v = realloc(it->v, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        it->v = v;
        it->cap = cap;
    }
    struct item *x = &it->v[it->n++];
    fmt(x->host, sizeof(x->host), "%s", host);
    fmt(x->target, sizeof(x->target), "%s", target);
    x->port = port;
    return 0;
}

static void items_release(struct items *it)
{
    free(it->v);
    *it = (struct items){0};
}

/* ---- the objects ---------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static const json_t *svc_get(const struct ck__dns_view *v, const char *ns, const char *name)
{
    if (!v->services)
        return NULL;
    char key[160];
    fmt(key, sizeof(key), "%s/%s", ns, name);
    const json_t *obj = NULL;
    if (ck_indexer_get_by_key(v->services, key, &obj) < 0)
        return NULL;
    return obj;
}

/* CoreDNS's filteredNamespaceExists (every namespace is configured). */
static bool namespace_exposed(const struct ck__dns_view *v, const char *ns)
{
    if (!v->namespaces || !*ns)
        return false;
    const json_t *obj = NULL;
    if (ck_indexer_get_by_key(v->namespaces, ns, &obj) < 0)
        return false;
    ck_cached_unref(obj);
    return true;
}

/* The service's cluster IPs (spec.clusterIPs, else [spec.clusterIP]), up to max. */
static size_t svc_ips(const json_t *svc, const char **ips, size_t max)
{
    const json_t *spec = json_object_get(svc, "spec");
    const json_t *list = json_object_get(spec, "clusterIPs");
    size_t n = 0, i;
    const json_t *x;
    json_array_foreach(list, i, x)
    {
        if (n < max && json_is_string(x))
            ips[n++] = json_string_value(x);
    }
    if (n == 0)
        ips[n++] = jstr(spec, "clusterIP");
    return n;
}

static bool svc_is_headless(const json_t *svc)
{
    const char *ips[2];
    svc_ips(svc, ips, 2);
    return strcmp(ips[0], "None") == 0;
}

static bool svc_is_external_name(const json_t *svc)
{
    return strcmp(jstr(json_object_get(svc, "spec"), "type"), "ExternalName") == 0;
}

/* CoreDNS's match and matchPortAndProtocol: case-insensitive, "" matches anything. */
static bool port_matches(const struct request *r, const char *name, const char *protocol)
{
    return (!*r->port || strcasecmp(r->port, name) == 0) &&
           (!*r->protocol || strcasecmp(r->protocol, protocol) == 0);
}

static int index_service_ips(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const char *ips[4];
    size_t n = svc_ips(obj, ips, 4);
    for (size_t i = 0; i < n; i++) {
        char norm[64];
        if (ip_family(ips[i], norm, sizeof(norm)) && ck_index_values_add(out, norm) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

static int index_slice_service(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const json_t *meta = json_object_get(obj, "metadata");
    const char *svc = jstr(json_object_get(meta, "labels"), "kubernetes.io/service-name");
    if (!*svc)
        return 0;
    char key[160];
    fmt(key, sizeof(key), "%s/%s", jstr(meta, "namespace"), svc);
    return ck_index_values_add(out, key);
}

/* Per API docs, a ready condition that is not set counts as ready (endpointsliceReady). */
static bool endpoint_ready(const json_t *ep)
{
    const json_t *ready = json_object_get(json_object_get(ep, "conditions"), "ready");
    return !json_is_false(ready);
}

static int index_endpoint_ips(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    size_t i, j;
    const json_t *ep, *a;
    json_array_foreach(json_object_get(obj, "endpoints"), i, ep)
    {
        if (!endpoint_ready(ep))
            continue;
        json_array_foreach(json_object_get(ep, "addresses"), j, a)
        {
            char norm[64];
            if (json_is_string(a) && ip_family(json_string_value(a), norm, sizeof(norm)) &&
                ck_index_values_add(out, norm) < 0)
                return CK_ENOMEM;
        }
    }
    return 0;
}

/* Adds one index; one already there (a server before this one on the same caches) is fine. */
static int add_index(struct ck_indexer *ix, const char *name, ck_index_func fn,
                     struct ck_err *reterr)
{
    struct ck_err err = {0};
    int r = ck_indexer_add_index(ix, name, fn, NULL, &err);
    if (r == CK_EEXIST)
        return 0;
    if (r < 0 && reterr)
        *reterr = err;
    return r;
}

int ck__dns_add_indices(struct ck_indexer *services, struct ck_indexer *slices,
                        struct ck_err *reterr)
{
    int r = 0;
    if (services)
        r = add_index(services, CK__DNS_INDEX_SVC_IP, index_service_ips, reterr);
    if (r == 0 && slices)
        r = add_index(slices, CK__DNS_INDEX_SLICE_OF, index_slice_service, reterr);
    if (r == 0 && slices)
        r = add_index(slices, CK__DNS_INDEX_EP_IP, index_endpoint_ips, reterr);
    return r;
}

/* ---- names to items (CoreDNS's Records, findPods, findServices) ----------- */

static enum lookup_err find_pods(struct ctx *c, const struct request *r, struct items *out)
{
    if (!*r->service)
        return L_OK;
    const char *pod = r->service;
    char ip[64];
    int dashes = 0;
    for (const char *p = pod; *p; p++)
        dashes += *p == '-';
    fmt(ip, sizeof(ip), "%s", pod);
    char sep = dashes == 3 && !strstr(pod, "--") ? '.' : ':';
    for (char *p = ip; *p; p++)
        if (*p == '-')
            *p = sep;
    if (!ip_family(ip, NULL, 0))
        return L_NAME_ERROR;
    char target[MAX_NAME];
    fmt(target, sizeof(target), "%s.%s.pod.%s", pod, r->namespace, c->zone);
    return items_add(out, ip, target, -1) < 0 ? L_NOMEM : L_OK;
}

static enum lookup_err add_endpoints(struct ctx *c, const struct request *r, const json_t *svc,
                                     const char *svc_target, struct items *out)
{
    enum lookup_err err = L_NAME_ERROR;
    if (!c->v->slices)
        return err;
    const json_t *meta = json_object_get(svc, "metadata");
    char key[160];
    fmt(key, sizeof(key), "%s/%s", jstr(meta, "namespace"), jstr(meta, "name"));
    struct ck_obj_list slices = {0};
    if (ck_indexer_by_index(c->v->slices, CK__DNS_INDEX_SLICE_OF, key, &slices, NULL) < 0)
        return err;
    for (size_t s = 0; s < slices.n && err != L_NOMEM; s++) {
        const json_t *ports = json_object_get(slices.items[s], "ports");
        size_t nports = json_array_size(ports);
        size_t i, j;
        const json_t *ep, *a;
        json_array_foreach(json_object_get(slices.items[s], "endpoints"), i, ep)
        {
            if (!endpoint_ready(ep))
                continue;
            const char *hostname = json_string_value(json_object_get(ep, "hostname"));
            json_array_foreach(json_object_get(ep, "addresses"), j, a)
            {
                const char *ip = json_string_value(a);
                if (!ip)
                    continue;
                char host[256];
                endpoint_hostname(hostname, ip, host, sizeof(host));
                if (*r->endpoint && strcasecmp(r->endpoint, host) != 0)
                    continue;
                char target[MAX_NAME];
                fmt(target, sizeof(target), "%s.%s", host, svc_target);
                /* a slice without ports is one port -1, as CoreDNS's sentinel */
                for (size_t k = 0; k < (nports ? nports : 1); k++) {
                    const json_t *p = json_array_get(ports, k);
                    const json_t *num = json_object_get(p, "port");
                    const char *name = jstr(p, "name"), *proto = jstr(p, "protocol");
                    if (!port_matches(r, name, proto))
                        continue;
                    int port = json_is_integer(num) ? (int)json_integer_value(num) : -1;
                    if (items_add(out, ip, target, port) < 0) {
                        err = L_NOMEM;
                        break;
                    }
                    err = L_OK;
                }
            }
        }
    }
    ck_obj_list_release(&slices);
    return err;
}

static enum lookup_err find_services(struct ctx *c, const struct request *r, struct items *out)
{
    if (!*r->service)
        return L_OK;
    const json_t *svc = svc_get(c->v, r->namespace, r->service);
    if (!svc)
        return L_NAME_ERROR;
    enum lookup_err err = L_NAME_ERROR;
    char svc_target[MAX_NAME];
    fmt(svc_target, sizeof(svc_target), "%s.%s.svc.%s", r->service, r->namespace, c->zone);
    lower(svc_target);
    const json_t *spec = json_object_get(svc, "spec");
    if (svc_is_external_name(svc)) {
        const char *ext = jstr(spec, "externalName");
        if (!*r->endpoint && !*r->port && !*r->protocol && *ext && !ip_family(ext, NULL, 0)) {
            char host[MAX_NAME];
            size_t l = strlen(ext);
            fmt(host, sizeof(host), "%s%s", ext, ext[l - 1] == '.' ? "" : ".");
            err = items_add(out, host, svc_target, -1) < 0 ? L_NOMEM : L_OK;
        }
    } else if (svc_is_headless(svc) || *r->endpoint) {
        err = add_endpoints(c, r, svc, svc_target, out);
    } else {
        const char *ips[4];
        size_t nips = svc_ips(svc, ips, 4);
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(spec, "ports"), i, p)
        {
            const char *proto = jstr(p, "protocol");
            if (!port_matches(r, jstr(p, "name"), *proto ? proto : "TCP"))
                continue;
            err = L_OK;
            int port = (int)json_integer_value(json_object_get(p, "port"));
            for (size_t k = 0; k < nips; k++) {
                if (ip_family(ips[k], NULL, 0) && items_add(out, ips[k], svc_target, port) < 0) {
                    err = L_NOMEM;
                    break;
                }
            }
            if (err == L_NOMEM)
                break;
        }
    }
    ck_cached_unref(svc);
    return err;
}

/* CoreDNS's Records. */
static enum lookup_err records(struct ctx *c, const char *name, struct items *out)
{
    struct request r;
    if (!parse_request(name, c->zone, &r))
        return L_NAME_ERROR;
    if (!*r.pod_or_svc)
        return L_OK;
    if (!namespace_exposed(c->v, r.namespace))
        return L_NAME_ERROR;
    return strcmp(r.pod_or_svc, "pod") == 0 ? find_pods(c, &r, out) : find_services(c, &r, out);
}

/*
 * CoreDNS's nsAddrs: for each address the server is reached at, the Service whose
 * cluster IP it is (kube-dns.kube-system.svc.<zone>), else ns.dns.<zone>. (CoreDNS looks
 * for the endpoint of its own pod IP; ckube's server listens on the Service IP itself.)
 */
static int ns_addrs(struct ctx *c, struct items *out)
{
    for (size_t i = 0; i < c->v->n_local_ips; i++) {
        const char *ip = c->v->local_ips[i];
        char norm[64], name[MAX_NAME];
        if (!ip_family(ip, norm, sizeof(norm)))
            continue;
        fmt(name, sizeof(name), "ns.dns.%s", c->zone);
        struct ck_obj_list svcs = {0};
        if (c->v->services &&
            ck_indexer_by_index(c->v->services, CK__DNS_INDEX_SVC_IP, norm, &svcs, NULL) == 0 &&
            svcs.n > 0) {
            const json_t *meta = json_object_get(svcs.items[0], "metadata");
            fmt(name, sizeof(name), "%s.%s.svc.%s", jstr(meta, "name"), jstr(meta, "namespace"),
                c->zone);
        }
        ck_obj_list_release(&svcs);
        if (items_add(out, norm, name, -1) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

/* CoreDNS's kubernetes Services(): Records with the TXT, NS and ns.dns special cases. */
static enum lookup_err services(struct ctx *c, const char *name, ldns_rr_type qtype,
                                struct items *out)
{
    if (qtype == LDNS_RR_TYPE_TXT) {
        char want[MAX_NAME];
        fmt(want, sizeof(want), "dns-version.%s", c->zone);
        if (strcmp(name, want) == 0)
            return items_add(out, TXT_VERSION, name, -1) < 0 ? L_NOMEM : L_OK;
        struct items tmp = {0};
        enum lookup_err e = records(c, name, &tmp);
        size_t n = tmp.n;
        items_release(&tmp);
        if (e == L_NOMEM)
            return e;
        return n > 0 ? L_OK : L_NAME_ERROR;
    }
    if (qtype == LDNS_RR_TYPE_NS)
        return ns_addrs(c, out) < 0 ? L_NOMEM : L_OK;
    char nsname[MAX_NAME];
    fmt(nsname, sizeof(nsname), "ns.dns.%s", c->zone);
    if (strcmp(name, nsname) == 0) {
        struct items all = {0};
        if (ns_addrs(c, &all) < 0)
            return L_NOMEM;
        enum lookup_err e = L_OK;
        for (size_t i = 0; i < all.n && e == L_OK; i++) {
            int fam = ip_family(all.v[i].host, NULL, 0);
            if ((fam == 4 && qtype == LDNS_RR_TYPE_A) || (fam == 6 && qtype == LDNS_RR_TYPE_AAAA))
                e = items_add(out, all.v[i].host, name, -1) < 0 ? L_NOMEM : L_OK;
        }
        items_release(&all);
        return e;
    }
    enum lookup_err e = records(c, name, out);
    if (qtype == LDNS_RR_TYPE_SRV) { /* internal items only: drop ExternalName ones */
        size_t k = 0;
        for (size_t i = 0; i < out->n; i++)
            if (ip_family(out->v[i].host, NULL, 0))
                out->v[k++] = out->v[i];
        out->n = k;
    }
    return e;
}

/* ---- records -------------------------------------------------------------- */

static ldns_rr *rr_new(const ldns_rdf *owner, ldns_rr_type type, uint32_t ttl)
{
    ldns_rr *rr = ldns_rr_new();
    ldns_rdf *o = owner ? ldns_rdf_clone(owner) : NULL;
    if (!rr || !o) {
        ldns_rr_free(rr);
        ldns_rdf_deep_free(o);
        return NULL;
    }
    ldns_rr_set_owner(rr, o);
    ldns_rr_set_type(rr, type);
    ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
    ldns_rr_set_ttl(rr, ttl);
    return rr;
}

static bool rr_push(ldns_rr *rr, ldns_rdf *rdf)
{
    if (!rdf)
        return false;
    if (!ldns_rr_push_rdf(rr, rdf)) {
        ldns_rdf_deep_free(rdf);
        return false;
    }
    return true;
}

static ldns_rr *rr_free(ldns_rr *rr)
{
    ldns_rr_free(rr);
    return NULL;
}

/* An address record for ip at owner. */
static ldns_rr *rr_addr(const ldns_rdf *owner, const char *ip, uint32_t ttl)
{
    int fam = ip_family(ip, NULL, 0);
    ldns_rr *rr = rr_new(owner, fam == 4 ? LDNS_RR_TYPE_A : LDNS_RR_TYPE_AAAA, ttl);
    if (rr &&
        !rr_push(rr, ldns_rdf_new_frm_str(fam == 4 ? LDNS_RDF_TYPE_A : LDNS_RDF_TYPE_AAAA, ip)))
        return rr_free(rr);
    return rr;
}

/* A record whose one rdata is the domain name target (CNAME, PTR, NS). */
static ldns_rr *rr_name(const ldns_rdf *owner, ldns_rr_type type, const char *target, uint32_t ttl)
{
    ldns_rr *rr = rr_new(owner, type, ttl);
    if (rr && !rr_push(rr, ldns_dname_new_frm_str(target)))
        return rr_free(rr);
    return rr;
}

/* Moves rr into list (freeing it when the list cannot take it). false: out of memory. */
static bool list_push(ldns_rr_list *list, ldns_rr *rr)
{
    if (!rr)
        return false;
    if (!ldns_rr_list_push_rr(list, rr)) {
        ldns_rr_free(rr);
        return false;
    }
    return true;
}

static ldns_rr *soa_record(struct ctx *c)
{
    uint32_t ttl = c->v->ttl < 300 ? c->v->ttl : 300;
    ldns_rdf *zone = ldns_dname_new_frm_str(c->zone_orig);
    ldns_rr *rr = zone ? rr_new(zone, LDNS_RR_TYPE_SOA, ttl) : NULL;
    ldns_rdf_deep_free(zone);
    if (!rr)
        return NULL;
    char ns[MAX_NAME], mbox[MAX_NAME];
    fmt(ns, sizeof(ns), "ns.dns.%s", c->zone_orig);
    fmt(mbox, sizeof(mbox), "hostmaster.%s", c->zone_orig);
    if (!rr_push(rr, ldns_dname_new_frm_str(ns)) || !rr_push(rr, ldns_dname_new_frm_str(mbox)) ||
        !rr_push(rr, ldns_native2rdf_int32(LDNS_RDF_TYPE_INT32, c->v->serial)) ||
        !rr_push(rr, ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, SOA_REFRESH)) ||
        !rr_push(rr, ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, SOA_RETRY)) ||
        !rr_push(rr, ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, SOA_EXPIRE)) ||
        !rr_push(rr, ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, c->v->ttl)))
        return rr_free(rr);
    return rr;
}

/* Whether list holds a CNAME from owner to target (dnsutil.DuplicateCNAME). */
static bool has_cname(const ldns_rr_list *list, const ldns_rdf *owner, const char *target)
{
    for (size_t i = 0; i < ldns_rr_list_rr_count(list); i++) {
        ldns_rr *rr = ldns_rr_list_rr(list, i);
        char t[MAX_NAME];
        if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME &&
            ldns_dname_compare(ldns_rr_owner(rr), owner) == 0 &&
            rdf_text(ldns_rr_rdf(rr, 0), t, sizeof(t)) && strcasecmp(t, target) == 0)
            return true;
    }
    return false;
}

/*
 * CoreDNS's A and AAAA (qtype tells which): address records at owner for the items of
 * name, following ExternalName CNAMEs inside the zone and asking the upstream for those
 * outside it. chain holds the CNAMEs followed so far.
 */
static enum lookup_err address_records(struct ctx *c, const ldns_rdf *owner, const char *name,
                                       ldns_rr_list *chain, ldns_rr_list *out)
{
    /* (checkForApex first asks apex.dns.<zone>, which names nothing without zonal names) */
    struct items it = {0};
    enum lookup_err e = services(c, name, c->qtype, &it);
    if (e != L_OK)
        goto out;
    int want = c->qtype == LDNS_RR_TYPE_A ? 4 : 6;
    for (size_t i = 0; i < it.n && e == L_OK; i++) {
        const struct item *x = &it.v[i];
        int fam = ip_family(x->host, NULL, 0);
        if (fam == want) {
            bool dup = false;
            for (size_t k = 0; k < i && !dup; k++)
                dup = strcmp(it.v[k].host, x->host) == 0;
            if (!dup && !list_push(out, rr_addr(owner, x->host, c->v->ttl)))
                e = L_NOMEM;
            continue;
        }
        if (fam != 0)
            continue;
        /* an ExternalName: a CNAME, then the target's records */
        char host_lc[MAX_NAME];
        fmt(host_lc, sizeof(host_lc), "%s", x->host);
        lower(host_lc);
        if (is_subdomain(name, host_lc) || ldns_rr_list_rr_count(chain) > MAX_CNAMES ||
            has_cname(chain, owner, x->host))
            continue;
        ldns_rr *cname = rr_name(owner, LDNS_RR_TYPE_CNAME, x->host, c->v->ttl);
        if (!cname) {
            e = L_NOMEM;
            break;
        }
        if (is_subdomain(c->zone, host_lc)) {
            ldns_rr_list *next = ldns_rr_list_new();
            ldns_rr_list *chain2 = ldns_rr_list_clone(chain);
            bool ok = next && chain2 && ldns_rr_list_push_rr(chain2, cname);
            if (!ok) {
                ldns_rr_free(cname);
                e = L_NOMEM;
            } else {
                enum lookup_err e2 =
                    address_records(c, ldns_rr_rdf(cname, 0), host_lc, chain2, next);
                if (e2 == L_NOMEM)
                    e = L_NOMEM;
                else if (e2 == L_OK && ldns_rr_list_rr_count(next) > 0 &&
                         (!list_push(out, ldns_rr_clone(cname)) ||
                          !ldns_rr_list_push_rr_list(out, next)))
                    e = L_NOMEM;
            }
            ldns_rr_list_deep_free(chain2); /* frees cname with it */
            ldns_rr_list_free(next);        /* its records moved to out, or none */
            continue;
        }
        if (!c->v->lookup) {
            c->deferred = true;
            ldns_rr_free(cname);
            continue;
        }
        ldns_pkt *ans = c->v->lookup(c->v->lookup_arg, ldns_rr_rdf(cname, 0), c->qtype);
        if (!ans) {
            ldns_rr_free(cname);
            continue;
        }
        if (ldns_pkt_tc(ans))
            c->truncated = true;
        ldns_rr_list *copy = ldns_rr_list_clone(ldns_pkt_answer(ans));
        ldns_pkt_free(ans);
        if (!copy || !list_push(out, cname) || !ldns_rr_list_push_rr_list(out, copy))
            e = L_NOMEM;
        ldns_rr_list_free(copy);
    }
out:
    items_release(&it);
    return e;
}

static ldns_rr *rr_srv(struct ctx *c, uint16_t weight, uint16_t port, const char *target)
{
    ldns_rr *rr = rr_new(c->qname, LDNS_RR_TYPE_SRV, c->v->ttl);
    if (rr && (!rr_push(rr, ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, 0)) ||
               !rr_push(rr, ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, weight)) ||
               !rr_push(rr, ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, port)) ||
               !rr_push(rr, ldns_dname_new_frm_str(target))))
        return rr_free(rr);
    return rr;
}

static ldns_rr *rr_txt(struct ctx *c, const char *text)
{
    ldns_rr *rr = rr_new(c->qname, LDNS_RR_TYPE_TXT, TXT_VER_TTL);
    if (rr && !rr_push(rr, ldns_rdf_new_frm_str(LDNS_RDF_TYPE_STR, text)))
        return rr_free(rr);
    return rr;
}

/* CoreDNS's SRV: records for the items with a port, their addresses as extras. */
static enum lookup_err srv_records(struct ctx *c, const char *name, ldns_rr_list *ans,
                                   ldns_rr_list *extra)
{
    struct items it = {0};
    enum lookup_err e = services(c, name, LDNS_RR_TYPE_SRV, &it);
    if (e != L_OK)
        goto out;
    /* every item has priority 0 and weight 100: each gets 100/n percent (at least 1) */
    size_t total = it.n * 100;
    for (size_t i = 0; i < it.n && e == L_OK; i++) {
        const struct item *x = &it.v[i];
        if (x->port < 0)
            continue;
        uint16_t weight = (uint16_t)(10000 / total);
        if (weight == 0)
            weight = 1;
        bool dup_srv = false, dup_addr = false;
        for (size_t k = 0; k < i; k++) {
            if (it.v[k].port >= 0 && strcmp(it.v[k].target, x->target) == 0 &&
                it.v[k].port == x->port)
                dup_srv = true;
            if (it.v[k].port >= 0 && strcmp(it.v[k].target, x->target) == 0 &&
                strcmp(it.v[k].host, x->host) == 0)
                dup_addr = true;
        }
        if (!dup_srv && !list_push(ans, rr_srv(c, weight, (uint16_t)x->port, x->target))) {
            e = L_NOMEM;
            break;
        }
        if (!dup_addr) {
            ldns_rdf *t = ldns_dname_new_frm_str(x->target);
            if (!t || !list_push(extra, rr_addr(t, x->host, c->v->ttl)))
                e = L_NOMEM;
            ldns_rdf_deep_free(t);
        }
    }
out:
    items_release(&it);
    return e;
}

/* The IP a reverse name stands for (dnsutil.ExtractAddressFromReverse), or false. */
static bool reverse_address(const char *name, char *ip, size_t size)
{
    static const char v4[] = ".in-addr.arpa.", v6[] = ".ip6.arpa.";
    size_t ln = strlen(name);
    char buf[128] = "";
    if (ln > sizeof(v4) - 1 && strcmp(name + ln - (sizeof(v4) - 1), v4) == 0) {
        char labels[4][64];
        bool too_long;
        size_t n = split_base(name, v4 + 1, labels, 4, &too_long);
        if (too_long || n != 4)
            return false;
        fmt(buf, sizeof(buf), "%s.%s.%s.%s", labels[3], labels[2], labels[1], labels[0]);
        unsigned char bin[4];
        return inet_pton(AF_INET, buf, bin) == 1 && inet_ntop(AF_INET, bin, ip, (socklen_t)size);
    }
    if (ln > sizeof(v6) - 1 && strcmp(name + ln - (sizeof(v6) - 1), v6) == 0) {
        size_t nibbles = ln - (sizeof(v6) - 1);
        if (nibbles != 63)
            return false;
        size_t k = 0;
        for (int i = 31; i >= 0; i--) {
            char ch = name[i * 2];
            if (!isxdigit((unsigned char)ch) || (i > 0 && name[i * 2 - 1] != '.'))
                return false;
            buf[k++] = ch;
            if ((31 - i) % 4 == 3 && i > 0)
                buf[k++] = ':';
        }
        buf[k] = '\0';
        unsigned char bin[16];
        return inet_pton(AF_INET6, buf, bin) == 1 && inet_ntop(AF_INET6, bin, ip, (socklen_t)size);
    }
    return false;
}

/* CoreDNS's Reverse and serviceRecordForIP: the names of a cluster IP or endpoint IP. */
static enum lookup_err reverse_records(struct ctx *c, const char *name, ldns_rr_list *ans)
{
    char ip[64];
    if (!reverse_address(name, ip, sizeof(ip))) {
        struct items it = {0};
        enum lookup_err e = records(c, name, &it);
        items_release(&it);
        return e;
    }
    struct ck_obj_list list = {0};
    enum lookup_err e = L_NAME_ERROR;
    if (c->v->services &&
        ck_indexer_by_index(c->v->services, CK__DNS_INDEX_SVC_IP, ip, &list, NULL) == 0 &&
        list.n > 0) {
        const json_t *meta = json_object_get(list.items[0], "metadata");
        char target[MAX_NAME];
        fmt(target, sizeof(target), "%s.%s.svc.%s", jstr(meta, "name"), jstr(meta, "namespace"),
            c->v->zone);
        e = list_push(ans, rr_name(c->qname, LDNS_RR_TYPE_PTR, target, c->v->ttl)) ? L_OK : L_NOMEM;
        ck_obj_list_release(&list);
        return e;
    }
    ck_obj_list_release(&list);
    if (!c->v->slices ||
        ck_indexer_by_index(c->v->slices, CK__DNS_INDEX_EP_IP, ip, &list, NULL) < 0)
        return e;
    for (size_t s = 0; s < list.n && e != L_NOMEM; s++) {
        const json_t *meta = json_object_get(list.items[s], "metadata");
        const char *svc = jstr(json_object_get(meta, "labels"), "kubernetes.io/service-name");
        size_t i, j;
        const json_t *ep, *a;
        json_array_foreach(json_object_get(list.items[s], "endpoints"), i, ep)
        {
            if (!endpoint_ready(ep))
                continue;
            json_array_foreach(json_object_get(ep, "addresses"), j, a)
            {
                char norm[64], host[256], target[MAX_NAME];
                if (!json_is_string(a) || !ip_family(json_string_value(a), norm, sizeof(norm)) ||
                    strcmp(norm, ip) != 0)
                    continue;
                endpoint_hostname(json_string_value(json_object_get(ep, "hostname")),
                                  json_string_value(a), host, sizeof(host));
                fmt(target, sizeof(target), "%s.%s.%s.svc.%s", host, svc, jstr(meta, "namespace"),
                    c->v->zone);
                bool dup = false;
                for (size_t k = 0; k < ldns_rr_list_rr_count(ans) && !dup; k++) {
                    char t[MAX_NAME];
                    dup = rdf_text(ldns_rr_rdf(ldns_rr_list_rr(ans, k), 0), t, sizeof(t)) &&
                          strcasecmp(t, target) == 0;
                }
                if (dup)
                    continue;
                if (!list_push(ans, rr_name(c->qname, LDNS_RR_TYPE_PTR, target, c->v->ttl))) {
                    e = L_NOMEM;
                    break;
                }
                e = L_OK;
            }
        }
    }
    ck_obj_list_release(&list);
    return e;
}

/* ---- packets -------------------------------------------------------------- */

size_t ck__dns_max_size(const ldns_pkt *query, bool tcp)
{
    if (tcp)
        return MAX_MSG_SIZE;
    size_t size = ldns_pkt_edns(query) ? ldns_pkt_edns_udp_size(query) : 0;
    return size < MIN_MSG_SIZE ? MIN_MSG_SIZE : size;
}

static int wire(ldns_pkt *pkt, uint8_t **ret_wire, size_t *ret_len)
{
    uint8_t *w = NULL;
    size_t len = 0;
    if (ldns_pkt2wire(&w, pkt, &len) != LDNS_STATUS_OK)
        return CK_ENOMEM;
    *ret_wire = w;
    *ret_len = len;
    return 0;
}

static void sync_counts(ldns_pkt *pkt)
{
    ldns_pkt_set_ancount(pkt, (uint16_t)ldns_rr_list_rr_count(ldns_pkt_answer(pkt)));
    ldns_pkt_set_nscount(pkt, (uint16_t)ldns_rr_list_rr_count(ldns_pkt_authority(pkt)));
    ldns_pkt_set_arcount(pkt, (uint16_t)ldns_rr_list_rr_count(ldns_pkt_additional(pkt)));
}

int ck__dns_encode(ldns_pkt *pkt, size_t max, uint8_t **ret_wire, size_t *ret_len)
{
    uint8_t *w;
    size_t len;
    sync_counts(pkt);
    if (wire(pkt, &w, &len) < 0)
        return CK_ENOMEM;
    if (len <= max)
        goto done;
    ldns_rr_list *sections[3] = {ldns_pkt_additional(pkt), ldns_pkt_authority(pkt),
                                 ldns_pkt_answer(pkt)};
    for (int s = 0; s < 3 && len > max; s++) {
        while (len > max && ldns_rr_list_rr_count(sections[s]) > 0) {
            ldns_rr_free(ldns_rr_list_pop_rr(sections[s]));
            if (s == 2)
                ldns_pkt_set_tc(pkt, true);
            sync_counts(pkt);
            free(w);
            if (wire(pkt, &w, &len) < 0)
                return CK_ENOMEM;
        }
    }
    if (len > max) { /* the question alone is too large: nothing fits */
        free(w);
        return CK_EINVAL;
    }
done:
    *ret_wire = w;
    *ret_len = len;
    return 0;
}

/* A reply to q (miekg's SetReply): same ID, opcode, RD, CD and question; QR set. */
static ldns_pkt *reply_new(const ldns_pkt *q, ldns_pkt_rcode rcode)
{
    ldns_pkt *p = ldns_pkt_new();
    if (!p)
        return NULL;
    ldns_pkt_set_id(p, ldns_pkt_id(q));
    ldns_pkt_set_qr(p, true);
    ldns_pkt_set_opcode(p, ldns_pkt_get_opcode(q));
    ldns_pkt_set_rd(p, ldns_pkt_rd(q));
    ldns_pkt_set_cd(p, ldns_pkt_cd(q));
    ldns_pkt_set_rcode(p, (uint8_t)rcode);
    ldns_rr_list *qs = ldns_rr_list_clone(ldns_pkt_question(q));
    if (!qs) {
        ldns_pkt_free(p);
        return NULL;
    }
    ldns_rr_list_deep_free(ldns_pkt_question(p));
    ldns_pkt_set_question(p, qs);
    ldns_pkt_set_qdcount(p, (uint16_t)ldns_rr_list_rr_count(qs));
    /* request.SizeAndDo: our OPT (version 0, the client's size and DO) when it sent one */
    if (ldns_pkt_edns(q)) {
        uint16_t size = ldns_pkt_edns_udp_size(q);
        ldns_pkt_set_edns_udp_size(p, size < MIN_MSG_SIZE ? MIN_MSG_SIZE : size);
        ldns_pkt_set_edns_do(p, ldns_pkt_edns_do(q));
    }
    return p;
}

/* A header-only answer to a query ldns could not read: FORMERR or NOTIMP (miekg's reject). */
static int reject(const uint8_t *query, ldns_pkt_rcode rcode, bool keep_opcode, uint8_t **ret_wire,
                  size_t *ret_len)
{
    ldns_pkt *p = ldns_pkt_new();
    if (!p)
        return CK_ENOMEM;
    ldns_pkt_set_id(p, LDNS_ID_WIRE(query));
    ldns_pkt_set_qr(p, true);
    ldns_pkt_set_rd(p, LDNS_RD_WIRE(query));
    ldns_pkt_set_cd(p, LDNS_CD_WIRE(query));
    if (keep_opcode)
        ldns_pkt_set_opcode(p, (ldns_pkt_opcode)LDNS_OPCODE_WIRE(query));
    ldns_pkt_set_rcode(p, (uint8_t)rcode);
    int r = wire(p, ret_wire, ret_len);
    ldns_pkt_free(p);
    return r < 0 ? r : CK__DNS_ANSWER;
}

static int finish(ldns_pkt *reply, const ldns_pkt *q, bool tcp, uint8_t **ret_wire, size_t *ret_len)
{
    int r = ck__dns_encode(reply, ck__dns_max_size(q, tcp), ret_wire, ret_len);
    ldns_pkt_free(reply);
    return r < 0 ? r : CK__DNS_ANSWER;
}

int ck__dns_error_reply(const uint8_t *query, size_t len, int rcode, bool tcp, uint8_t **ret_wire,
                        size_t *ret_len)
{
    ldns_pkt *q = NULL;
    if (ldns_wire2pkt(&q, query, len) != LDNS_STATUS_OK || !q)
        return CK_EINVAL;
    ldns_pkt *reply = reply_new(q, (ldns_pkt_rcode)rcode);
    int r = reply ? finish(reply, q, tcp, ret_wire, ret_len) : CK_ENOMEM;
    ldns_pkt_free(q);
    return r;
}

/* A cheap per-thread random number (xorshift32), seeded from ldns's random source. */
static uint32_t next_random(void)
{
    static _Thread_local uint32_t state;
    while (state == 0)
        state = (uint32_t)ldns_get_random() << 16 | ldns_get_random();
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

static void shuffle_rrs(ldns_rr **v, size_t n)
{
    if (n == 2 && next_random() % 2 == 0) {
        ldns_rr *t = v[0];
        v[0] = v[1];
        v[1] = t;
    } else if (n > 2) {
        for (size_t j = 0; j < n; j++) {
            size_t p = j + next_random() % (n - j);
            ldns_rr *t = v[j];
            v[j] = v[p];
            v[p] = t;
        }
    }
}

/*
 * The loadbalance plugin's round_robin (kubeadm's Corefile has it): a section of address
 * records of one type is shuffled; a mixed one becomes its CNAMEs, the other records, the
 * shuffled addresses, then the shuffled MX records. Out of memory: left as it is.
 */
static void load_balance(ldns_rr_list *list)
{
    size_t n = ldns_rr_list_rr_count(list);
    if (n <= 1)
        return;
    ldns_rr **v = malloc(n * sizeof(*v));
    if (!v)
        return;
    ldns_rr_type first = ldns_rr_get_type(ldns_rr_list_rr(list, 0));
    bool all_same = first == LDNS_RR_TYPE_A || first == LDNS_RR_TYPE_AAAA;
    for (size_t i = 1; i < n && all_same; i++)
        all_same = ldns_rr_get_type(ldns_rr_list_rr(list, i)) == first;
    size_t k = 0, addr_start = 0, mx_start = 0;
    if (all_same) {
        for (size_t i = 0; i < n; i++)
            v[k++] = ldns_rr_list_rr(list, i);
        shuffle_rrs(v, n);
    } else {
        /* CNAMEs, then the rest, then addresses, then MX: four passes keep the order */
        for (int pass = 0; pass < 4; pass++) {
            if (pass == 2)
                addr_start = k;
            if (pass == 3)
                mx_start = k;
            for (size_t i = 0; i < n; i++) {
                ldns_rr *rr = ldns_rr_list_rr(list, i);
                ldns_rr_type t = ldns_rr_get_type(rr);
                int kind = t == LDNS_RR_TYPE_CNAME                         ? 0
                           : t == LDNS_RR_TYPE_A || t == LDNS_RR_TYPE_AAAA ? 2
                           : t == LDNS_RR_TYPE_MX                          ? 3
                                                                           : 1;
                if (kind == pass)
                    v[k++] = rr;
            }
        }
        shuffle_rrs(v + addr_start, mx_start - addr_start);
        shuffle_rrs(v + mx_start, n - mx_start);
    }
    for (size_t i = 0; i < n; i++)
        ldns_rr_list_set_rr(list, v[i], i);
    free(v);
}

/* The zone of the kubernetes plugin name is in (lower case), or NULL: forward it. */
static const char *match_zone(const struct ck__dns_view *v, const char *name)
{
    static const char *const reverse[] = {"in-addr.arpa.", "ip6.arpa."};
    if (is_subdomain(v->zone, name))
        return v->zone;
    for (size_t i = 0; i < 2; i++)
        if (is_subdomain(reverse[i], name))
            return reverse[i];
    return NULL;
}

/* The answer for a name in one of our zones (handler.go's ServeDNS). */
static int serve_zone(struct ctx *c, const ldns_pkt *q, const char *name, bool tcp,
                      uint8_t **ret_wire, size_t *ret_len)
{
    ldns_rr_list *ans = ldns_rr_list_new(), *extra = ldns_rr_list_new();
    ldns_rr_list *chain = ldns_rr_list_new();
    struct items it = {0};
    enum lookup_err e = L_OK;
    int r = CK_ENOMEM;
    if (!ans || !extra || !chain)
        goto out;
    switch (c->qtype) {
    case LDNS_RR_TYPE_A:
    case LDNS_RR_TYPE_AAAA:
        e = address_records(c, c->qname, name, chain, ans);
        break;
    case LDNS_RR_TYPE_TXT:
        e = services(c, name, LDNS_RR_TYPE_TXT, &it);
        if (e == L_OK && it.n > 0 && !list_push(ans, rr_txt(c, it.v[0].host)))
            e = L_NOMEM;
        break;
    case LDNS_RR_TYPE_CNAME:
        e = services(c, name, LDNS_RR_TYPE_CNAME, &it);
        if (e == L_OK && it.n > 0 && !ip_family(it.v[0].host, NULL, 0) &&
            !list_push(ans, rr_name(c->qname, LDNS_RR_TYPE_CNAME, it.v[0].host, c->v->ttl)))
            e = L_NOMEM;
        break;
    case LDNS_RR_TYPE_PTR:
        e = reverse_records(c, name, ans);
        break;
    case LDNS_RR_TYPE_MX: /* no item is a mail exchanger: NODATA or a name error */
        e = services(c, name, LDNS_RR_TYPE_MX, &it);
        break;
    case LDNS_RR_TYPE_SRV:
        e = srv_records(c, name, ans, extra);
        break;
    case LDNS_RR_TYPE_SOA:
        if (strcmp(name, c->zone) == 0 && !list_push(ans, soa_record(c)))
            e = L_NOMEM;
        break;
    case LDNS_RR_TYPE_AXFR:
    case LDNS_RR_TYPE_IXFR: {
        ldns_pkt *reply = reply_new(q, LDNS_RCODE_REFUSED);
        r = reply ? finish(reply, q, tcp, ret_wire, ret_len) : CK_ENOMEM;
        goto out;
    }
    case LDNS_RR_TYPE_NS:
        if (strcmp(name, c->zone) == 0) {
            e = services(c, name, LDNS_RR_TYPE_NS, &it);
            for (size_t i = 0; i < it.n && e == L_OK; i++) {
                ldns_rdf *t = ldns_dname_new_frm_str(it.v[i].target);
                if (!t || !list_push(extra, rr_addr(t, it.v[i].host, c->v->ttl)))
                    e = L_NOMEM;
                ldns_rdf_deep_free(t);
                bool seen = false;
                for (size_t k = 0; k < i; k++)
                    seen = seen || strcmp(it.v[k].target, it.v[i].target) == 0;
                if (e == L_OK && !seen &&
                    !list_push(ans, rr_name(c->qname, LDNS_RR_TYPE_NS, it.v[i].target, c->v->ttl)))
                    e = L_NOMEM;
            }
            break;
        }
        /* fall through */
    default: { /* a fake A lookup tells NODATA from NXDOMAIN */
        ldns_rr_list *fake = ldns_rr_list_new();
        ldns_rr_type saved = c->qtype;
        c->qtype = LDNS_RR_TYPE_A;
        e = fake ? address_records(c, c->qname, name, chain, fake) : L_NOMEM;
        c->qtype = saved;
        ldns_rr_list_deep_free(fake);
        break;
    }
    }
    if (e == L_NOMEM)
        goto out;
    if (c->deferred) {
        r = CK__DNS_DEFER;
        goto out;
    }
    if (e == L_NAME_ERROR && strcmp(c->zone, c->v->zone) != 0) {
        r = CK__DNS_FORWARD; /* fallthrough in-addr.arpa ip6.arpa */
        goto out;
    }
    ldns_pkt_rcode rcode = LDNS_RCODE_NOERROR;
    if (e == L_NAME_ERROR)
        rcode = c->v->synced ? LDNS_RCODE_NXDOMAIN : LDNS_RCODE_SERVFAIL;
    ldns_pkt *reply = reply_new(q, rcode);
    if (!reply)
        goto out;
    ldns_pkt_set_aa(reply, true);
    if (e == L_NAME_ERROR || ldns_rr_list_rr_count(ans) == 0) {
        if (!list_push(ldns_pkt_authority(reply), soa_record(c))) {
            ldns_pkt_free(reply);
            goto out;
        }
    } else {
        ldns_pkt_set_tc(reply, c->truncated);
        ldns_rr_list_deep_free(ldns_pkt_answer(reply));
        ldns_pkt_set_answer(reply, ans);
        ans = NULL;
        ldns_rr_list *add = ldns_pkt_additional(reply);
        for (size_t i = 0; i < ldns_rr_list_rr_count(extra); i++)
            ldns_rr_list_push_rr(add, ldns_rr_list_rr(extra, i));
        ldns_rr_list_free(extra);
        extra = NULL;
        if (c->v->shuffle) {
            load_balance(ldns_pkt_answer(reply));
            load_balance(ldns_pkt_additional(reply));
        }
    }
    r = finish(reply, q, tcp, ret_wire, ret_len);
out:
    items_release(&it);
    ldns_rr_list_deep_free(ans);
    ldns_rr_list_deep_free(extra);
    ldns_rr_list_deep_free(chain);
    return r;
}

int ck__dns_handle(const struct ck__dns_view *view, const uint8_t *query, size_t len, bool tcp,
                   uint8_t **ret_wire, size_t *ret_len)
{
    if (len < LDNS_HEADER_SIZE || LDNS_QR_WIRE(query))
        return CK__DNS_DROP;
    /* miekg/dns's default acceptance, before the message is read */
    int opcode = LDNS_OPCODE_WIRE(query);
    if (opcode != LDNS_PACKET_QUERY && opcode != LDNS_PACKET_NOTIFY)
        return reject(query, LDNS_RCODE_NOTIMPL, true, ret_wire, ret_len);
    if (LDNS_QDCOUNT(query) != 1 || LDNS_ANCOUNT(query) > 1 || LDNS_NSCOUNT(query) > 1 ||
        LDNS_ARCOUNT(query) > 2)
        return reject(query, LDNS_RCODE_FORMERR, false, ret_wire, ret_len);
    ldns_pkt *q = NULL;
    if (ldns_wire2pkt(&q, query, len) != LDNS_STATUS_OK || !q)
        return reject(query, LDNS_RCODE_FORMERR, false, ret_wire, ret_len);
    int r = CK_ENOMEM;
    ldns_rr *question = ldns_rr_list_rr(ldns_pkt_question(q), 0);
    char name[MAX_NAME], orig[MAX_NAME];
    if (!question || !rdf_text(ldns_rr_owner(question), orig, sizeof(orig))) {
        ldns_pkt_free(q);
        return reject(query, LDNS_RCODE_FORMERR, false, ret_wire, ret_len);
    }
    if (ldns_pkt_edns(q) && ldns_pkt_edns_version(q) != 0) { /* edns.Version: BADVERS */
        ldns_pkt *reply = reply_new(q, LDNS_RCODE_NOERROR);
        if (reply) {
            ldns_pkt_set_edns_extended_rcode(reply, 1); /* BADVERS = 16: 1 << 4 */
            r = finish(reply, q, tcp, ret_wire, ret_len);
        }
        ldns_pkt_free(q);
        return r;
    }
    memcpy(name, orig, strlen(orig) + 1);
    lower(name);
    const char *zone = match_zone(view, name);
    if (!zone) {
        ldns_pkt_free(q);
        return CK__DNS_FORWARD;
    }
    struct ctx c = {
        .v = view,
        .zone = zone,
        .qname = ldns_rr_owner(question),
        .qtype = ldns_rr_get_type(question),
    };
    fmt(c.zone_orig, sizeof(c.zone_orig), "%s", orig + strlen(orig) - strlen(zone));
    r = serve_zone(&c, q, name, tcp, ret_wire, ret_len);
    ldns_pkt_free(q);
    return r;
}
