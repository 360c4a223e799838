/*
 * rules.c - the rule builder: Services and EndpointSlices in, one nft transaction out.
 *
 * Follows kube-proxy's nftables mode (pkg/proxy/nftables/proxier.go: setupNFTables,
 * syncProxyRules, writeServiceToEndpointRules; pkg/proxy/topology.go:
 * CategorizeEndpoints; pkg/proxy/endpointslicecache.go for how slices become endpoints).
 * The table, chain, set and map names, the hooks and priorities, the mark bit and the
 * shape of every rule are kube-proxy's; docs/internals/proxy.md draws the layout.
 *
 * The build is a pure function. It computes the whole desired table in memory every time
 * (cheap: a few microseconds a Service), then writes to the transaction only what differs
 * from the previous state: chains whose rule text hashes differently (FNV-1a 64, kept in
 * the state), map and set elements added, changed or gone (kube-proxy's
 * nftElementStorage), affinity sets created or gone. A chain no longer used is flushed in
 * the transaction that stops using it and deleted by the next one, as kube-proxy does
 * (kernels before 6.2 notice a chain is unreferenced only a moment after the map element
 * pointing at it is deleted).
 *
 * Ordering inside one transaction: every chain a rule or element can point at is
 * declared (add chain) before any rule is written, sets and maps before the rules that
 * use them, elements after the chains they name, deletions last.
 *
 * Threading: none; the caller owns everything.
 */
#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TBL CK_PROXY_TABLE_FAMILY " " CK_PROXY_TABLE
/* knftables.NameLengthMax (256) less the longest prefix (16): chainNameBaseLengthMax */
#define NAME_BASE_MAX 240

static const char *const container_names[CK__PX_N_CONTAINERS] = {
    "cluster-ips",       "nodeport-ips",         "service-ips",
    "service-nodeports", "no-endpoint-services", "no-endpoint-nodeports",
};

/* ---- the model: service ports and their endpoints ------------------------------------- */

struct ep {
    uint32_t ip; /* host order, for sorting */
    char ip_s[INET_ADDRSTRLEN];
    int port;
    bool ready, serving, terminating, local;
    char base[NAME_BASE_MAX + 1]; /* HASH-ns/name/proto/port__ip/port */
};

struct svcport {
    const char *ns, *name, *port_name;
    char key[512]; /* ns/name for sorting */
    char proto[5]; /* tcp, udp, sctp */
    char cluster_ip[INET_ADDRSTRLEN];
    int port, node_port, health_port;
    const json_t *external_ips; /* array of strings, or NULL */
    const json_t *lb_ingress;   /* status.loadBalancer.ingress, or NULL */
    bool affinity;
    long affinity_timeout;
    bool etp_local, itp_local;
    char base[NAME_BASE_MAX + 1]; /* HASH-ns/name/proto/port */
    struct ep *eps;
    size_t n_eps;
};

static bool valid_ipv4(const char *s, uint32_t *ret)
{
    struct in_addr a;
    if (!s || inet_pton(AF_INET, s, &a) != 1)
        return false;
    if (ret)
        *ret = ntohl(a.s_addr);
    return true;
}

/* hashAndTruncate: the first 8 base32 characters of SHA-256(name), "-", name, cut. */
static int hash_name(const char *name, char *out)
{
    unsigned char d[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, name, strlen(name), d) < 0)
        return CK_EIO;
    static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    uint64_t bits = 0; /* the first 40 bits make 8 characters */
    for (int i = 0; i < 5; i++)
        bits = bits << 8 | d[i];
    for (int i = 0; i < 8; i++)
        out[i] = b32[(bits >> (35 - 5 * i)) & 31];
    out[8] = '-';
    size_t n = strlen(name);
    if (9 + n > NAME_BASE_MAX) {
        memcpy(out + 9, name, NAME_BASE_MAX - 9 - 3);
        memcpy(out + NAME_BASE_MAX - 3, "...", 4);
    } else {
        memcpy(out + 9, name, n + 1);
    }
    return 0;
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

/* A condition: absent means dflt (EndpointConditions: ready unset is ready). */
static bool cond(const json_t *conds, const char *name, bool dflt)
{
    const json_t *v = json_object_get(conds, name);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int cmp_ep(const void *a, const void *b)
{
    const struct ep *x = a, *y = b;
    if (x->ip != y->ip)
        return x->ip < y->ip ? -1 : 1;
    return (x->port > y->port) - (x->port < y->port);
}

static int cmp_svcport(const void *a, const void *b)
{
    const struct svcport *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    c = strcmp(x->port_name, y->port_name);
    return c ? c : strcmp(x->proto, y->proto);
}

struct slice_list {
    const json_t **v;
    size_t n, cap;
};

/* The endpoints of sp from the slices of its Service (endpointslicecache's merge). */
static int collect_endpoints(struct svcport *sp, const struct slice_list *sl, const char *host)
{
    size_t cap = 0;
    for (size_t i = 0; sl && i < sl->n; i++)
        cap += json_array_size(json_object_get(sl->v[i], "endpoints"));
    if (cap == 0)
        return 0;
    sp->eps = ck__calloc(cap, sizeof(*sp->eps));
    if (!sp->eps)
        return CK_ENOMEM;
    for (size_t i = 0; i < sl->n; i++) {
        const json_t *slice = sl->v[i], *p, *e;
        const char *at = json_string_value(json_object_get(slice, "addressType"));
        if (!at || strcmp(at, "IPv4") != 0)
            continue;
        int port = -1;
        size_t j;
        json_array_foreach(json_object_get(slice, "ports"), j, p)
        {
            const char *pn = json_string_value(json_object_get(p, "name"));
            const char *pp = json_string_value(json_object_get(p, "protocol"));
            char lp[8] = "tcp";
            for (size_t k = 0; pp && k < sizeof(lp) - 1 && pp[k]; k++)
                lp[k] = (char)(pp[k] | 0x20), lp[k + 1] = '\0';
            if (strcmp(pn ? pn : "", sp->port_name) == 0 && strcmp(lp, sp->proto) == 0 &&
                json_is_integer(json_object_get(p, "port")))
                port = (int)json_integer_value(json_object_get(p, "port"));
        }
        if (port <= 0 || port > 65535)
            continue;
        json_array_foreach(json_object_get(slice, "endpoints"), j, e)
        {
            struct ep ep = {.port = port};
            const char *ip = json_string_value(json_array_get(json_object_get(e, "addresses"), 0));
            if (!valid_ipv4(ip, &ep.ip))
                continue;
            snprintf(ep.ip_s, sizeof(ep.ip_s), "%s", ip);
            const json_t *c = json_object_get(e, "conditions");
            ep.ready = cond(c, "ready", true);
            ep.serving = cond(c, "serving", true); /* endpointslicecache: unset is serving */
            ep.terminating = cond(c, "terminating", false);
            const char *node = json_string_value(json_object_get(e, "nodeName"));
            ep.local = node && host && strcmp(node, host) == 0;
            size_t k;
            for (k = 0; k < sp->n_eps; k++)
                if (sp->eps[k].ip == ep.ip && sp->eps[k].port == ep.port)
                    break;
            if (k < sp->n_eps) { /* a duplicate across slices: a ready copy wins */
                if (ep.ready && !sp->eps[k].ready)
                    sp->eps[k] = ep;
                continue;
            }
            sp->eps[sp->n_eps++] = ep;
        }
    }
    qsort(sp->eps, sp->n_eps, sizeof(*sp->eps), cmp_ep);
    for (size_t k = 0; k < sp->n_eps; k++) {
        char name[NAME_BASE_MAX + 64];
        snprintf(name, sizeof(name), "%s/%s/%s/%s__%s/%d", sp->ns, sp->name, sp->proto,
                 sp->port_name, sp->eps[k].ip_s, sp->eps[k].port);
        if (hash_name(name, sp->eps[k].base) < 0)
            return CK_EIO;
    }
    return 0;
}

struct model {
    struct svcport *sps;
    size_t n;
};

static void model_release(struct model *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->sps[i].eps);
    free(m->sps);
}

static int build_model(const struct ck_proxy_input *in, struct model *m, struct ck_err *reterr)
{
    struct ck__strmap by_svc = {0}; /* "ns/name" -> struct slice_list */
    int r = 0;
    for (size_t i = 0; i < in->n_slices; i++) {
        const json_t *s = in->slices[i];
        const char *ns = str_at(s, "metadata", "namespace");
        const char *svc = json_string_value(
            json_object_get(json_object_get(json_object_get(s, "metadata"), "labels"),
                            "kubernetes.io/service-name"));
        if (!ns || !svc)
            continue;
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", ns, svc);
        struct ck__strmap_entry *e = ck__strmap_find(&by_svc, key);
        if (!e)
            e = ck__strmap_insert(&by_svc, key, sizeof(struct slice_list));
        if (!e) {
            r = CK_ENOMEM;
            goto out;
        }
        struct slice_list *sl = e->value;
        if (sl->n == sl->cap) {
            size_t cap = sl->cap ? sl->cap * 2 : 4;
            const json_t **v = ck__realloc(sl->v, cap * sizeof(*v));
            if (!v) {
                r = CK_ENOMEM;
                goto out;
            }
            sl->v = v, sl->cap = cap;
        }
        sl->v[sl->n++] = s;
    }
    size_t cap = 0;
    for (size_t i = 0; i < in->n_services; i++)
        cap += json_array_size(json_object_get(json_object_get(in->services[i], "spec"), "ports"));
    m->sps = ck__calloc(cap ? cap : 1, sizeof(*m->sps));
    if (!m->sps) {
        r = CK_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < in->n_services; i++) {
        const json_t *svc = in->services[i], *spec = json_object_get(svc, "spec"), *p;
        const char *ns = str_at(svc, "metadata", "namespace");
        const char *name = str_at(svc, "metadata", "name");
        const char *cip = json_string_value(json_object_get(spec, "clusterIP"));
        const char *type = json_string_value(json_object_get(spec, "type"));
        /* headless and ExternalName Services are not proxied (ShouldSkipService) */
        if (!ns || !name || !valid_ipv4(cip, NULL) || (type && strcmp(type, "ExternalName") == 0))
            continue;
        const char *etp = json_string_value(json_object_get(spec, "externalTrafficPolicy"));
        const char *itp = json_string_value(json_object_get(spec, "internalTrafficPolicy"));
        const char *aff = json_string_value(json_object_get(spec, "sessionAffinity"));
        const json_t *to = json_object_get(
            json_object_get(json_object_get(spec, "sessionAffinityConfig"), "clientIP"),
            "timeoutSeconds");
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        struct ck__strmap_entry *se = ck__strmap_find(&by_svc, key);
        size_t j;
        json_array_foreach(json_object_get(spec, "ports"), j, p)
        {
            struct svcport *sp = &m->sps[m->n];
            memset(sp, 0, sizeof(*sp));
            const char *pn = json_string_value(json_object_get(p, "name"));
            const char *proto = json_string_value(json_object_get(p, "protocol"));
            json_int_t port = json_integer_value(json_object_get(p, "port"));
            if (port <= 0 || port > 65535)
                continue;
            if (!proto || strcmp(proto, "TCP") == 0)
                strcpy(sp->proto, "tcp");
            else if (strcmp(proto, "UDP") == 0)
                strcpy(sp->proto, "udp");
            else if (strcmp(proto, "SCTP") == 0)
                strcpy(sp->proto, "sctp");
            else
                continue;
            sp->ns = ns, sp->name = name, sp->port_name = pn ? pn : "";
            snprintf(sp->key, sizeof(sp->key), "%s", key);
            snprintf(sp->cluster_ip, sizeof(sp->cluster_ip), "%s", cip);
            sp->port = (int)port;
            if (!type || strcmp(type, "ClusterIP") != 0)
                sp->node_port = (int)json_integer_value(json_object_get(p, "nodePort"));
            sp->external_ips = json_object_get(spec, "externalIPs");
            if (type && strcmp(type, "LoadBalancer") == 0)
                sp->lb_ingress = json_object_get(
                    json_object_get(json_object_get(svc, "status"), "loadBalancer"), "ingress");
            sp->affinity = aff && strcmp(aff, "ClientIP") == 0;
            sp->affinity_timeout = json_is_integer(to) ? (long)json_integer_value(to) : 10800;
            sp->itp_local = itp && strcmp(itp, "Local") == 0;
            bool ext = sp->node_port || json_array_size(sp->external_ips) ||
                       json_array_size(sp->lb_ingress);
            sp->etp_local = ext && etp && strcmp(etp, "Local") == 0;
            if (sp->etp_local)
                sp->health_port =
                    (int)json_integer_value(json_object_get(spec, "healthCheckNodePort"));
            char base[NAME_BASE_MAX];
            snprintf(base, sizeof(base), "%s/%s/%s/%s", ns, name, sp->proto, sp->port_name);
            if (hash_name(base, sp->base) < 0) {
                r = ck_err_set(reterr, CK_EIO, "proxy: SHA-256 failed");
                goto out;
            }
            m->n++;
            r = collect_endpoints(sp, se ? se->value : NULL, in->config->hostname);
            if (r < 0)
                goto out;
        }
    }
    qsort(m->sps, m->n, sizeof(*m->sps), cmp_svcport);
out:
    for (struct ck__strmap_entry *e = ck__strmap_next(&by_svc, NULL, &cap); e;
         e = ck__strmap_next(&by_svc, e, &cap))
        free(((struct slice_list *)e->value)->v);
    ck__strmap_release(&by_svc);
    if (r == CK_ENOMEM)
        ck_err_no_memory(reterr);
    return r;
}

/* True when ip (host order) is inside one of the comma-separated IPv4 CIDRs of list. */
bool ck__proxy_cidrs_contain(const char *list, uint32_t ip)
{
    char buf[64];
    if (!list)
        return false;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n < sizeof(buf)) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            char *slash = strchr(buf, '/');
            long bits = slash ? strtol(slash + 1, NULL, 10) : 32;
            if (slash)
                *slash = '\0';
            uint32_t net;
            if (valid_ipv4(buf, &net) && bits >= 0 && bits <= 32) {
                uint32_t mask = bits == 0 ? 0 : UINT32_MAX << (32 - bits);
                if ((ip & mask) == (net & mask))
                    return true;
            }
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return false;
}

bool ck__proxy_cidrs_valid(const char *list)
{
    char buf[64];
    if (!list)
        return true;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof(buf))
            return false;
        memcpy(buf, p, n);
        buf[n] = '\0';
        char *slash = strchr(buf, '/'), *end;
        if (!slash)
            return false;
        *slash = '\0';
        long bits = strtol(slash + 1, &end, 10);
        if (!valid_ipv4(buf, NULL) || *end || end == slash + 1 || bits < 0 || bits > 32)
            return false;
        p += n;
        if (*p == ',' && !*++p)
            return false;
    }
    return true;
}

/* ---- the transaction ------------------------------------------------------------------ */

/* A chain of the desired table and its rules (one per line, without the prefix). */
struct chain {
    char *name;
    struct ck__buf rules;
    size_t n_rules;
    bool is_static;
};

struct build {
    const struct ck_proxy_input *in;
    const struct ck_proxy_state *prev;
    enum ck_proxy_sync_mode mode;
    struct ck_proxy_state *next;
    struct chain *chains;
    size_t n_chains, cap_chains;
    struct ck__buf decl, body, edel, elems, flush, delchain, delset; /* in this order */
    struct ck_proxy_build_stats st;
    int err;
};

static struct chain *chain_new(struct build *b, const char *name, bool is_static)
{
    if (b->n_chains == b->cap_chains) {
        size_t cap = b->cap_chains ? b->cap_chains * 2 : 64;
        struct chain *v = ck__realloc(b->chains, cap * sizeof(*v));
        if (!v) {
            b->err = CK_ENOMEM;
            return NULL;
        }
        b->chains = v, b->cap_chains = cap;
    }
    struct chain *c = &b->chains[b->n_chains];
    memset(c, 0, sizeof(*c));
    c->name = ck__strdup(name);
    if (!c->name) {
        b->err = CK_ENOMEM;
        return NULL;
    }
    c->is_static = is_static;
    b->n_chains++;
    return c;
}

static void rule(struct build *b, struct chain *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rule(struct build *b, struct chain *c, const char *fmt, ...)
{
    if (!c)
        return;
    va_list ap;
    va_start(ap, fmt);
    ck__buf_vprintf(&c->rules, fmt, ap);
    va_end(ap);
    if (ck__buf_adds(&c->rules, "\n") < 0)
        b->err = c->rules.err;
    c->n_rules++;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h;
}

/* Folds a string and its end into a running FNV-1a hash. */
static uint64_t fnv1a_more(uint64_t h, const char *s)
{
    do
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    while (*s++);
    return h;
}

/* Records an element of container c (value NULL for a set) and writes what changed. */
static void element(struct build *b, enum ck__proxy_container c, const char *key, const char *value)
{
    struct ck__strmap *m = &b->next->elems[c];
    if (ck__strmap_find(m, key))
        return; /* the same IP and port twice (two externalIPs alike): the first wins */
    char *v = value ? ck__strdup(value) : NULL;
    bool created;
    if ((value && !v) || !ck__strmap_put(m, key, v, &created)) {
        free(v);
        b->err = CK_ENOMEM;
        return;
    }
    const struct ck__strmap_entry *old = b->prev && b->mode == CK_PROXY_SYNC_PARTIAL
                                             ? ck__strmap_find(&b->prev->elems[c], key)
                                             : NULL;
    if (old && ((!old->value && !value) || (old->value && value && strcmp(old->value, value) == 0)))
        return;
    if (old) {
        ck__buf_printf(&b->elems, "delete element " TBL " %s { %s }\n", container_names[c], key);
        b->st.elements_change++;
    }
    if (value)
        ck__buf_printf(&b->elems, "add element " TBL " %s { %s : %s }\n", container_names[c], key,
                       value);
    else
        ck__buf_printf(&b->elems, "add element " TBL " %s { %s }\n", container_names[c], key);
    b->st.elements_change++;
}

/* Records a UDP frontend, and the pairs it uses (use[i] for endpoint i). */
static void udp_frontend(struct build *b, const struct svcport *sp, const char *frontend,
                         const bool *use_a, const bool *use_b)
{
    struct ck_proxy_state *s = b->next;
    bool created;
    if (strcmp(sp->proto, "udp") != 0)
        return;
    if (!ck__strmap_put(&s->udp_frontends, frontend, NULL, &created)) {
        b->err = CK_ENOMEM;
        return;
    }
    s->udp_hash = fnv1a_more(s->udp_hash, frontend);
    for (size_t i = 0; i < sp->n_eps; i++) {
        if (!use_a[i] && !use_b[i])
            continue;
        char pair[128];
        snprintf(pair, sizeof(pair), "%s>%s:%d", frontend, sp->eps[i].ip_s, sp->eps[i].port);
        if (!ck__strmap_put(&s->udp_pairs, pair, NULL, &created)) {
            b->err = CK_ENOMEM;
            return;
        }
        s->udp_hash = fnv1a_more(s->udp_hash, pair);
    }
}

static void add_affinity_set(struct build *b, const struct svcport *sp, const struct ep *ep)
{
    char name[NAME_BASE_MAX + 16];
    snprintf(name, sizeof(name), "affinity-%s", ep->base);
    bool created;
    if (!ck__strmap_put(&b->next->sets, name, NULL, &created)) {
        b->err = CK_ENOMEM;
        return;
    }
    bool known = b->prev && b->mode != CK_PROXY_SYNC_ADOPT && ck__strmap_find(&b->prev->sets, name);
    if (created && !known)
        ck__buf_printf(&b->decl,
                       "add set " TBL
                       " %s { type ipv4_addr ; flags dynamic,timeout ; timeout %lds ; }\n",
                       name, sp->affinity_timeout);
}

static void write_numgen(struct build *b, struct chain *c, const struct svcport *sp,
                         const bool *use)
{
    size_t n = 0;
    for (size_t i = 0; i < sp->n_eps; i++)
        n += use[i];
    if (!c || n == 0)
        return;
    ck__buf_printf(&c->rules, "numgen random mod %zu vmap { ", n);
    size_t k = 0;
    for (size_t i = 0; i < sp->n_eps; i++) {
        if (!use[i])
            continue;
        ck__buf_printf(&c->rules, "%s%zu : goto endpoint-%s", k ? ", " : "", k, sp->eps[i].base);
        k++;
    }
    rule(b, c, " }");
}

/* writeServiceToEndpointRules: affinity lookups, then the random choice. */
static void dispatch(struct build *b, struct chain *c, const struct svcport *sp, const bool *use)
{
    if (sp->affinity)
        for (size_t i = 0; i < sp->n_eps; i++)
            if (use[i])
                rule(b, c, "ip saddr @affinity-%s goto endpoint-%s", sp->eps[i].base,
                     sp->eps[i].base);
    write_numgen(b, c, sp, use);
}

static void build_service(struct build *b, const struct svcport *sp)
{
    const struct ck_proxy_config *cfg = b->in->config;
    size_t n = sp->n_eps;
    bool *cluster = ck__calloc(n + 1, sizeof(bool)), *local = ck__calloc(n + 1, sizeof(bool));
    bool *none = ck__calloc(n + 1, sizeof(bool));
    if (!cluster || !local || !none) {
        b->err = CK_ENOMEM;
        goto out;
    }
    /* CategorizeEndpoints (topology hints aside) */
    bool ext =
        sp->node_port || json_array_size(sp->external_ips) || json_array_size(sp->lb_ingress);
    bool uses_cluster = !sp->itp_local || ext;
    bool uses_local = sp->itp_local || sp->etp_local;
    size_t n_cluster = 0, n_local = 0;
    bool any_ready = false, any_st = false, local_ready = false;
    for (size_t i = 0; i < n; i++) {
        const struct ep *e = &sp->eps[i];
        any_ready |= e->ready;
        any_st |= e->serving && e->terminating;
        local_ready |= e->local && e->ready;
    }
    if (uses_cluster)
        for (size_t i = 0; i < n; i++)
            n_cluster += cluster[i] =
                any_ready ? sp->eps[i].ready : sp->eps[i].serving && sp->eps[i].terminating;
    if (uses_local)
        for (size_t i = 0; i < n; i++)
            n_local += local[i] =
                sp->eps[i].local &&
                (local_ready ? sp->eps[i].ready : sp->eps[i].serving && sp->eps[i].terminating);
    bool has_eps = uses_local ? any_ready || any_st : n_cluster > 0;

    char cluster_chain[NAME_BASE_MAX + 16], local_chain[NAME_BASE_MAX + 16],
        ext_chain[NAME_BASE_MAX + 16];
    snprintf(cluster_chain, sizeof(cluster_chain), "service-%s", sp->base);
    snprintf(local_chain, sizeof(local_chain), "local-%s", sp->base);
    snprintf(ext_chain, sizeof(ext_chain), "external-%s", sp->base);
    bool use_cluster_chain = n_cluster > 0 && uses_cluster;
    bool use_local_chain = n_local > 0 && uses_local;
    const char *internal_chain = sp->itp_local ? local_chain : cluster_chain;
    bool has_internal = has_eps && (!sp->itp_local || n_local > 0);
    const char *ext_policy_chain = sp->etp_local ? local_chain : cluster_chain;
    bool has_external = has_eps && (!sp->etp_local || n_local > 0);
    bool use_ext_chain = has_eps && ext;
    const char *int_verdict = !has_eps ? "goto reject-chain" : "drop";
    const char *ext_verdict = int_verdict;

    b->st.services++;
    char key[128], val[NAME_BASE_MAX + 32];
    element(b, CK__PX_CLUSTER_IPS, sp->cluster_ip, NULL);
    snprintf(key, sizeof(key), "%s . %s . %d", sp->cluster_ip, sp->proto, sp->port);
    char fe[64];
    snprintf(fe, sizeof(fe), "%s:%d", sp->cluster_ip, sp->port);
    udp_frontend(b, sp, fe, has_internal && !sp->itp_local ? cluster : none,
                 has_internal && sp->itp_local ? local : none);
    if (has_internal) {
        snprintf(val, sizeof(val), "goto %s", internal_chain);
        element(b, CK__PX_SERVICE_IPS, key, val);
    } else {
        element(b, CK__PX_NO_EP_SERVICES, key, int_verdict);
    }
    const json_t *ipj;
    size_t j;
    const json_t *lists[2] = {sp->external_ips, sp->lb_ingress};
    for (int l = 0; l < 2; l++) {
        json_array_foreach(lists[l], j, ipj)
        {
            const char *ip =
                l == 0 ? json_string_value(ipj) : json_string_value(json_object_get(ipj, "ip"));
            if (!valid_ipv4(ip, NULL))
                continue;
            snprintf(key, sizeof(key), "%s . %s . %d", ip, sp->proto, sp->port);
            snprintf(fe, sizeof(fe), "%s:%d", ip, sp->port);
            /* external traffic may reach either policy's endpoints (short-circuits) */
            udp_frontend(b, sp, fe, has_eps ? cluster : none, has_eps ? local : none);
            if (has_eps) {
                snprintf(val, sizeof(val), "goto %s", ext_chain);
                element(b, CK__PX_SERVICE_IPS, key, val);
            }
            if (!has_external)
                element(b, CK__PX_NO_EP_SERVICES, key, ext_verdict);
        }
    }
    if (sp->node_port > 0 && sp->node_port <= 65535) {
        snprintf(key, sizeof(key), "%s . %d", sp->proto, sp->node_port);
        snprintf(fe, sizeof(fe), "*:%d", sp->node_port);
        udp_frontend(b, sp, fe, has_eps ? cluster : none, has_eps ? local : none);
        if (has_eps) {
            snprintf(val, sizeof(val), "goto %s", ext_chain);
            element(b, CK__PX_SERVICE_NODEPORTS, key, val);
        }
        if (!has_external)
            element(b, CK__PX_NO_EP_NODEPORTS, key, ext_verdict);
    }
    /* one health check node port a Service: its ports are adjacent (sorted), the first wins */
    const struct ck__proxy_health *last =
        b->next->n_health ? &b->next->health[b->next->n_health - 1] : NULL;
    if (sp->health_port > 0 && !(last && last->ns && last->name && strcmp(last->ns, sp->ns) == 0 &&
                                 strcmp(last->name, sp->name) == 0)) {
        struct ck_proxy_state *s = b->next;
        struct ck__proxy_health *h = ck__realloc(s->health, (s->n_health + 1) * sizeof(*h));
        if (!h) {
            b->err = CK_ENOMEM;
            goto out;
        }
        s->health = h;
        h = &s->health[s->n_health];
        h->ns = ck__strdup(sp->ns), h->name = ck__strdup(sp->name);
        h->port = sp->health_port;
        h->local_endpoints = 0;
        for (size_t i = 0; i < n; i++)
            h->local_endpoints += sp->eps[i].local && sp->eps[i].ready;
        s->n_health++;
        if (!h->ns || !h->name)
            b->err = CK_ENOMEM;
    }

    struct chain *cc = use_cluster_chain ? chain_new(b, cluster_chain, false) : NULL;
    struct chain *lc = use_local_chain ? chain_new(b, local_chain, false) : NULL;
    struct chain *ec = use_ext_chain ? chain_new(b, ext_chain, false) : NULL;
    struct chain *ic = sp->itp_local ? lc : cc;
    if (has_internal && ic) {
        if (cfg->masquerade_all)
            rule(b, ic, "ip daddr %s %s dport %d jump mark-for-masquerade", sp->cluster_ip,
                 sp->proto, sp->port);
        else if (cfg->cluster_cidr && *cfg->cluster_cidr)
            rule(b, ic, "ip daddr %s %s dport %d ip saddr != %s jump mark-for-masquerade",
                 sp->cluster_ip, sp->proto, sp->port, cfg->cluster_cidr);
    }
    if (ec) {
        if (!sp->etp_local) {
            rule(b, ec, "jump mark-for-masquerade");
        } else {
            if (cfg->cluster_cidr && *cfg->cluster_cidr)
                rule(b, ec, "ip saddr %s goto %s comment \"short-circuit pod traffic\"",
                     cfg->cluster_cidr, cluster_chain);
            rule(
                b, ec,
                "fib saddr type local jump mark-for-masquerade comment \"masquerade local traffic\"");
            rule(b, ec, "fib saddr type local goto %s comment \"short-circuit local traffic\"",
                 cluster_chain);
        }
        if (has_external)
            rule(b, ec, "goto %s", ext_policy_chain);
    }
    if (cc) {
        dispatch(b, cc, sp, cluster);
    }
    if (lc) {
        dispatch(b, lc, sp, local);
    }
    for (size_t i = 0; i < n; i++) {
        if (!cluster[i] && !local[i])
            continue;
        const struct ep *e = &sp->eps[i];
        char name[NAME_BASE_MAX + 16];
        snprintf(name, sizeof(name), "endpoint-%s", e->base);
        struct chain *c = chain_new(b, name, false);
        b->st.endpoints++;
        rule(b, c, "ip saddr %s jump mark-for-masquerade", e->ip_s);
        if (sp->affinity) {
            add_affinity_set(b, sp, e);
            rule(b, c, "update @affinity-%s { ip saddr }", e->base);
        }
        rule(b, c, "meta l4proto %s dnat to %s:%d", sp->proto, e->ip_s, e->port);
    }
out:
    free(cluster);
    free(local);
    free(none);
}

/* setupNFTables: the chains, sets and maps every table has. */
static void build_static(struct build *b)
{
    static const struct {
        const char *name, *type, *hook;
        int prio;
    } base[] = {
        /* filtering runs on pre-DNAT addresses: before DNAT (dstnat - 10) */
        {"filter-prerouting", "filter", "prerouting", -110},
        {"filter-input", "filter", "input", -110},
        {"filter-forward", "filter", "forward", -110},
        {"filter-output", "filter", "output", -110},
        {"filter-output-post-dnat", "filter", "output", -90},
        {"nat-prerouting", "nat", "prerouting", -100},
        {"nat-output", "nat", "output", -100},
        {"nat-postrouting", "nat", "postrouting", 100},
    };
    const struct ck_proxy_config *cfg = b->in->config;
    bool all = !cfg->nodeport_addresses || !*cfg->nodeport_addresses;
    if (b->mode != CK_PROXY_SYNC_PARTIAL) {
        for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
            ck__buf_printf(&b->decl, "add chain " TBL " %s { type %s hook %s priority %d ; }\n",
                           base[i].name, base[i].type, base[i].hook, base[i].prio);
        ck__buf_printf(
            &b->decl,
            "add set " TBL " cluster-ips { type ipv4_addr ; comment \"Active ClusterIPs\" ; }\n"
            "add set " TBL
            " nodeport-ips { type ipv4_addr ; comment \"IPs that accept NodePort traffic\" ; }\n"
            "add map " TBL
            " no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"vmap to drop or reject packets to services with no endpoints\" ; }\n"
            "add map " TBL
            " no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment \"vmap to drop or reject packets to service nodeports with no endpoints\" ; }\n"
            "add map " TBL
            " service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"ClusterIP, ExternalIP and LoadBalancer IP traffic\" ; }\n"
            "add map " TBL
            " service-nodeports { type inet_proto . inet_service : verdict ; comment \"NodePort traffic\" ; }\n");
        if (b->mode == CK_PROXY_SYNC_FULL)
            for (int c = 0; c < CK__PX_N_CONTAINERS; c++)
                ck__buf_printf(&b->decl, "flush %s " TBL " %s\n",
                               c <= CK__PX_NODEPORT_IPS ? "set" : "map", container_names[c]);
    }
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        chain_new(b, base[i].name, true);
    struct chain *c;
#define CH(name) (c = chain_new(b, name, true))
    /* nftablesJumpChains, in kube-proxy's order */
    struct chain *in = &b->chains[1], *fwd = &b->chains[2], *outp = &b->chains[3],
                 *outpost = &b->chains[4], *pre = &b->chains[0];
    if (b->err)
        return;
    rule(b, in, "ct state new jump nodeport-endpoints-check");
    rule(b, in, "ct state new jump service-endpoints-check");
    rule(b, fwd, "ct state new jump service-endpoints-check");
    rule(b, outp, "ct state new jump service-endpoints-check");
    rule(b, pre, "ct state new jump firewall-check");
    rule(b, outp, "ct state new jump firewall-check");
    rule(b, &b->chains[6], "jump services");
    rule(b, &b->chains[5], "jump services");
    rule(b, &b->chains[7], "jump masquerading");
    rule(b, fwd, "ct state new jump cluster-ips-check");
    rule(b, outpost, "ct state new jump cluster-ips-check");
    CH("nodeport-endpoints-check");
    if (all)
        rule(b, c, "ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports");
    else
        rule(b, c, "ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports");
    CH("service-endpoints-check");
    rule(b, c, "ip daddr . meta l4proto . th dport vmap @no-endpoint-services");
    CH("firewall-check"); /* loadBalancerSourceRanges are not implemented: always empty */
    CH("services");
    rule(b, c, "ip daddr . meta l4proto . th dport vmap @service-ips");
    if (all)
        rule(b, c,
             "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap "
             "@service-nodeports");
    else
        rule(b, c, "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports");
    CH("cluster-ips-check");
    rule(b, c,
         "ip daddr @cluster-ips reject comment \"Reject traffic to invalid ports of "
         "ClusterIPs\"");
    CH("masquerading");
    rule(b, c, "meta mark & 0x%04x == 0 return", CK_PROXY_MASQUERADE_MARK);
    rule(b, c, "meta mark set meta mark ^ 0x%04x", CK_PROXY_MASQUERADE_MARK);
    rule(b, c, "masquerade fully-random");
    CH("mark-for-masquerade");
    rule(b, c, "meta mark set meta mark | 0x%04x", CK_PROXY_MASQUERADE_MARK);
    CH("reject-chain");
    rule(b, c, "reject");
#undef CH
    if (!all)
        for (size_t i = 0; i < b->in->n_node_ips; i++) {
            uint32_t ip;
            if (valid_ipv4(b->in->node_ips[i], &ip) && (ip >> 24) != 127 &&
                ck__proxy_cidrs_contain(cfg->nodeport_addresses, ip))
                element(b, CK__PX_NODEPORT_IPS, b->in->node_ips[i], NULL);
        }
}

/* Writes the chains: declarations first (every jump target exists), then the rules. */
static void write_chains(struct build *b)
{
    for (size_t i = 0; i < b->n_chains && !b->err; i++) {
        struct chain *c = &b->chains[i];
        const char *text = c->rules.p ? c->rules.p : "";
        uint64_t h = fnv1a(text, c->rules.len);
        b->st.rules += c->n_rules;
        if (!c->is_static) {
            struct ck__strmap_entry *e = ck__strmap_insert(&b->next->chains, c->name, sizeof(h));
            if (!e) {
                b->err = CK_ENOMEM;
                return;
            }
            memcpy(e->value, &h, sizeof(h));
        }
        bool write = b->mode != CK_PROXY_SYNC_PARTIAL;
        if (!write && !c->is_static) {
            const struct ck__strmap_entry *old = ck__strmap_find(&b->prev->chains, c->name);
            write = !old || memcmp(old->value, &h, sizeof(h)) != 0;
        }
        if (!write)
            continue;
        b->st.chains_written++;
        if (!c->is_static || b->mode == CK_PROXY_SYNC_ADOPT || b->mode == CK_PROXY_SYNC_FULL) {
            if (i >= 8) /* base chains were declared with their hooks */
                ck__buf_printf(&b->decl, "add chain " TBL " %s\n", c->name);
            if (b->mode != CK_PROXY_SYNC_ADOPT)
                ck__buf_printf(&b->body, "flush chain " TBL " %s\n", c->name);
        }
        const char *p = text;
        while (*p) {
            const char *nl = strchr(p, '\n');
            ck__buf_printf(&b->body, "add rule " TBL " %s %.*s\n", c->name, (int)(nl - p), p);
            p = nl + 1;
        }
    }
}

/* Elements, chains and sets of prev that the new table no longer has. */
static void write_deletions(struct build *b)
{
    const struct ck_proxy_state *prev = b->prev;
    size_t it;
    if (!prev || b->mode == CK_PROXY_SYNC_ADOPT)
        return;
    if (b->mode == CK_PROXY_SYNC_PARTIAL)
        for (int c = 0; c < CK__PX_N_CONTAINERS; c++)
            for (struct ck__strmap_entry *e = ck__strmap_next(&prev->elems[c], NULL, &it); e;
                 e = ck__strmap_next(&prev->elems[c], e, &it))
                if (!ck__strmap_find(&b->next->elems[c], e->key)) {
                    ck__buf_printf(&b->edel, "delete element " TBL " %s { %s }\n",
                                   container_names[c], e->key);
                    b->st.elements_change++;
                }
    /* chains flushed by the previous transaction go now, unless used again */
    for (struct ck__strmap_entry *e = ck__strmap_next(&prev->stale, NULL, &it); e;
         e = ck__strmap_next(&prev->stale, e, &it))
        if (!ck__strmap_find(&b->next->chains, e->key))
            ck__buf_printf(&b->delchain, "delete chain " TBL " %s\n", e->key);
    for (struct ck__strmap_entry *e = ck__strmap_next(&prev->chains, NULL, &it); e;
         e = ck__strmap_next(&prev->chains, e, &it))
        if (!ck__strmap_find(&b->next->chains, e->key)) {
            ck__buf_printf(&b->flush, "flush chain " TBL " %s\n", e->key);
            bool created;
            if (!ck__strmap_put(&b->next->stale, e->key, NULL, &created))
                b->err = CK_ENOMEM;
            b->st.stale_chains++;
        }
    for (struct ck__strmap_entry *e = ck__strmap_next(&prev->sets, NULL, &it); e;
         e = ck__strmap_next(&prev->sets, e, &it))
        if (!ck__strmap_find(&b->next->sets, e->key))
            ck__buf_printf(&b->delset, "delete set " TBL " %s\n", e->key);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the lines of buf from offset start on (hash maps iterate in no useful order). */
static int sort_lines(struct ck__buf *buf, size_t start)
{
    if (buf->err || buf->len <= start)
        return buf->err;
    size_t n = 0;
    for (size_t i = start; i < buf->len; i++)
        n += buf->p[i] == '\n';
    char **lines = ck__calloc(n, sizeof(*lines));
    char *copy = ck__malloc(buf->len - start + 1);
    if (!lines || !copy) {
        free(lines);
        free(copy);
        return CK_ENOMEM;
    }
    memcpy(copy, buf->p + start, buf->len - start);
    copy[buf->len - start] = '\0';
    size_t k = 0;
    for (char *p = copy; *p && k < n; k++) {
        lines[k] = p;
        p = strchr(p, '\n');
        *p++ = '\0';
    }
    qsort(lines, k, sizeof(*lines), cmp_str);
    buf->len = start;
    for (size_t i = 0; i < k; i++)
        ck__buf_printf(buf, "%s\n", lines[i]);
    free(lines);
    free(copy);
    return buf->err;
}

int ck_proxy_build(const struct ck_proxy_input *in, const struct ck_proxy_state *prev,
                   enum ck_proxy_sync_mode mode, char **ret_text, struct ck_proxy_state **ret_next,
                   struct ck_proxy_build_stats *stats, struct ck_err *reterr)
{
    if (!in || !in->config || (!prev && mode != CK_PROXY_SYNC_ADOPT))
        return ck_err_set(reterr, CK_EINVAL, "proxy: a sync without a previous state must adopt");
    struct model m = {0};
    int r = build_model(in, &m, reterr);
    if (r < 0)
        return r;
    struct build b = {.in = in, .prev = prev, .mode = mode};
    b.next = ck__calloc(1, sizeof(*b.next));
    if (!b.next) {
        model_release(&m);
        return ck_err_no_memory(reterr);
    }
    ck__buf_printf(&b.decl, "add table " TBL " { comment \"rules for ckube proxy\" ; }\n");
    if (mode == CK_PROXY_SYNC_ADOPT)
        ck__buf_printf(&b.decl, "delete table " TBL "\n"
                                "add table " TBL " { comment \"rules for ckube proxy\" ; }\n");
    build_static(&b);
    for (size_t i = 0; i < m.n && !b.err; i++)
        build_service(&b, &m.sps[i]);
    write_chains(&b);
    if (!b.err)
        write_deletions(&b);
    struct ck__buf *parts[] = {&b.decl,  &b.body,     &b.edel,  &b.elems,
                               &b.flush, &b.delchain, &b.delset};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && !b.err && !r; i++)
        if (i == 2 || i >= 4)
            r = sort_lines(parts[i], 0);
    b.next->rules = b.st.rules;
    model_release(&m);
    struct ck__buf all = {0};
    int berr = b.err;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (parts[i]->err && !berr)
            berr = parts[i]->err;
        ck__buf_add(&all, parts[i]->p ? parts[i]->p : "", parts[i]->len);
        ck__buf_release(parts[i]);
    }
    char *text = ck__buf_take(&all);
    for (size_t i = 0; i < b.n_chains; i++) {
        free(b.chains[i].name);
        if (b.chains[i].rules.err && !berr)
            berr = b.chains[i].rules.err;
        ck__buf_release(&b.chains[i].rules);
    }
    free(b.chains);
    if (berr || r || !text) {
        free(text);
        ck_proxy_state_free(b.next);
        return ck_err_no_memory(reterr);
    }
    *ret_text = text;
    *ret_next = b.next;
    if (stats)
        *stats = b.st;
    return 0;
}

bool ck_proxy_state_has_stale(const struct ck_proxy_state *s)
{
    return s && s->stale.len > 0;
}

void ck_proxy_state_health_ports(const struct ck_proxy_state *s,
                                 void (*fn)(const char *ns, const char *name, int port,
                                            int local_endpoints, void *arg),
                                 void *arg)
{
    for (size_t i = 0; s && i < s->n_health; i++)
        fn(s->health[i].ns, s->health[i].name, s->health[i].port, s->health[i].local_endpoints,
           arg);
}

struct ck_proxy_state *ck_proxy_state_free(struct ck_proxy_state *s)
{
    if (!s)
        return NULL;
    size_t it;
    for (int c = 0; c < CK__PX_N_CONTAINERS; c++) {
        for (struct ck__strmap_entry *e = ck__strmap_next(&s->elems[c], NULL, &it); e;
             e = ck__strmap_next(&s->elems[c], e, &it))
            free(e->value);
        ck__strmap_release(&s->elems[c]);
    }
    ck__strmap_release(&s->chains);
    ck__strmap_release(&s->stale);
    ck__strmap_release(&s->sets);
    ck__strmap_release(&s->udp_frontends);
    ck__strmap_release(&s->udp_pairs);
    for (size_t i = 0; i < s->n_health; i++) {
        free(s->health[i].ns);
        free(s->health[i].name);
    }
    free(s->health);
    free(s);
    return NULL;
}
