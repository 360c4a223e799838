/*
 * netpol.c - NetworkPolicy enforcement: NetworkPolicies, Pods and Namespaces in, one nft
 * transaction for the table "ip ckube-netpol" out; and the informers that feed it.
 *
 * Kubernetes leaves enforcement to the network plugin; this follows the semantics of
 * k8s.io/api/networking/v1 (types.go) and the shape of the upstream reference plugin,
 * sigs.k8s.io/kube-network-policies (pkg/networkpolicy/controller.go): one table of its
 * own rebuilt whole in one transaction, "ct state established,related accept" first,
 * only the pods of this node judged, IPv4 sets of the pods policies select. Where it
 * hands first packets to user space (nfqueue), we compile each policy into sets and
 * rules so the kernel decides alone:
 *
 *   chain forward (filter, hook forward, priority filter - 5)
 *     ct state established,related accept
 *     ip saddr @egress-isolated jump egress     each rule: a policy's pods, its peers,
 *     ip daddr @ingress-isolated jump ingress   its ports: return (egress) / accept
 *   chain egress:  ...rules..., drop             (ingress); nothing matched: drop
 *   chain ingress: ...rules..., drop
 *
 * Per policy (numbered in namespace/name order) the set pol-N-pods holds the addresses
 * of the node's pods it selects; per rule R, pol-N-in-R-peers / pol-N-eg-R-peers (an
 * interval set) the peers' addresses: pods matched by podSelector and namespaceSelector,
 * ipBlock CIDRs less their except ranges (computed here into disjoint ranges, since an
 * interval set refuses overlaps). A numeric port (with endPort, a range) is matched in
 * the rule; a named port is resolved against the destination pods' containerPorts into
 * a set of address . protocol . port (pol-N-in-R-pP). The forward hook sees pod to pod
 * traffic across the node's bridge (br_netfilter), and Service traffic after the proxy's
 * DNAT and before masquerading; the node's own traffic to and from its pods passes the
 * output and input hooks and is never judged, as Kubernetes documents (a pod cannot block
 * its node).
 *
 * The build is pure and deterministic (the same objects give the same text). The runtime
 * (the informers and their sync) lives at the end; the proxy's sync thread calls it.
 *
 * Threading: the builder has none. The runtime's handlers only call back the proxy;
 * ck__netpol_sync() runs on the proxy's sync thread, the only writer of the table.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "internal.h"

#define TBL CK_PROXY_TABLE_FAMILY " " CK_NETPOL_TABLE

struct range {
    uint32_t lo, hi; /* host order, inclusive */
};

struct ranges {
    struct range *v;
    size_t n, cap;
};

struct pod {
    const json_t *obj;
    const char *ns;
    const json_t *labels;
    uint32_t ip;
    bool local;
};

struct build {
    const struct ck_netpol_input *in;
    struct pod *pods;
    size_t n_pods;
    struct ck__strmap ns_labels; /* namespace -> its labels (borrowed json_t *) */
    struct ck__buf decl, rules;
    struct ranges ingress_isolated, egress_isolated;
    size_t n_rules;
    int err;
};

static int add_range(struct build *b, struct ranges *r, uint32_t lo, uint32_t hi)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        struct range *v = realloc(r->v, cap * sizeof(*v));
        if (!v)
            return b->err = CK_ENOMEM;
        r->v = v, r->cap = cap;
    }
    r->v[r->n++] = (struct range){lo, hi};
    return 0;
}

static int cmp_range(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges overlapping and adjacent ranges, so an interval set takes them. */
static void normalize(struct ranges *r)
{
    if (r->n == 0)
        return;
    qsort(r->v, r->n, sizeof(*r->v), cmp_range);
    size_t k = 0;
    for (size_t i = 1; i < r->n; i++) {
        if (r->v[k].hi == UINT32_MAX || r->v[i].lo <= r->v[k].hi + 1) {
            if (r->v[i].hi > r->v[k].hi)
                r->v[k].hi = r->v[i].hi;
        } else {
            r->v[++k] = r->v[i];
        }
    }
    r->n = k + 1;
}

/* Parses an IPv4 CIDR into its range; false for anything else (IPv6 included). */
static bool parse_cidr(const char *s, struct range *ret)
{
    char buf[32];
    const char *slash = s ? strchr(s, '/') : NULL;
    if (!slash || (size_t)(slash - s) >= sizeof(buf))
        return false;
    memcpy(buf, s, (size_t)(slash - s));
    buf[slash - s] = '\0';
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    struct in_addr a;
    if (*end || end == slash + 1 || bits < 0 || bits > 32 || inet_pton(AF_INET, buf, &a) != 1)
        return false;
    uint32_t mask = bits == 0 ? 0 : UINT32_MAX << (32 - bits);
    ret->lo = ntohl(a.s_addr) & mask;
    ret->hi = ret->lo | ~mask;
    return true;
}

/* An ipBlock: its cidr less every except entry, appended to r as disjoint ranges. */
static void add_ip_block(struct build *b, struct ranges *r, const json_t *block)
{
    struct range c;
    if (!parse_cidr(json_string_value(json_object_get(block, "cidr")), &c))
        return;
    struct ranges part = {0};
    add_range(b, &part, c.lo, c.hi);
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(block, "except"), i, e)
    {
        struct range x;
        if (!parse_cidr(json_string_value(e), &x))
            continue;
        struct ranges next = {0};
        for (size_t k = 0; k < part.n; k++) {
            struct range p = part.v[k];
            if (x.hi < p.lo || x.lo > p.hi) {
                add_range(b, &next, p.lo, p.hi);
                continue;
            }
            if (x.lo > p.lo)
                add_range(b, &next, p.lo, x.lo - 1);
            if (x.hi < p.hi)
                add_range(b, &next, x.hi + 1, p.hi);
        }
        free(part.v);
        part = next;
    }
    for (size_t k = 0; k < part.n; k++)
        add_range(b, r, part.v[k].lo, part.v[k].hi);
    free(part.v);
}

static void ip_text(uint32_t ip, char *out)
{
    struct in_addr a = {htonl(ip)};
    inet_ntop(AF_INET, &a, out, INET_ADDRSTRLEN);
}

/* "add element" of the set name for r's ranges; nothing when r is empty. */
static void write_elements(struct build *b, const char *name, const struct ranges *r)
{
    if (r->n == 0)
        return;
    ck__buf_printf(&b->decl, "add element " TBL " %s { ", name);
    for (size_t i = 0; i < r->n; i++) {
        char lo[INET_ADDRSTRLEN], hi[INET_ADDRSTRLEN];
        ip_text(r->v[i].lo, lo);
        ip_text(r->v[i].hi, hi);
        if (r->v[i].lo == r->v[i].hi)
            ck__buf_printf(&b->decl, "%s%s", i ? ", " : "", lo);
        else
            ck__buf_printf(&b->decl, "%s%s-%s", i ? ", " : "", lo, hi);
    }
    ck__buf_adds(&b->decl, " }\n");
}

/* ---- the objects ----------------------------------------------------------------------- */

static const char *meta_str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), k));
}

/* The pod's IPv4 address (status.podIPs, else status.podIP); false when it has none or
 * is not on the pod network (hostNetwork) or has finished. */
static bool pod_ip(const json_t *pod, uint32_t *ret)
{
    const json_t *spec = json_object_get(pod, "spec"), *status = json_object_get(pod, "status");
    if (json_is_true(json_object_get(spec, "hostNetwork")))
        return false;
    const char *phase = json_string_value(json_object_get(status, "phase"));
    if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
        return false;
    struct in_addr a;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(status, "podIPs"), i, e)
    {
        const char *s = json_string_value(json_object_get(e, "ip"));
        if (s && inet_pton(AF_INET, s, &a) == 1) {
            *ret = ntohl(a.s_addr);
            return true;
        }
    }
    const char *s = json_string_value(json_object_get(status, "podIP"));
    if (s && inet_pton(AF_INET, s, &a) == 1) {
        *ret = ntohl(a.s_addr);
        return true;
    }
    return false;
}

static int cmp_policy(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    int c = strcmp(meta_str(x, "namespace") ? meta_str(x, "namespace") : "",
                   meta_str(y, "namespace") ? meta_str(y, "namespace") : "");
    return c ? c
             : strcmp(meta_str(x, "name") ? meta_str(x, "name") : "",
                      meta_str(y, "name") ? meta_str(y, "name") : "");
}

static int cmp_pod(const void *a, const void *b)
{
    const struct pod *x = a, *y = b;
    return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* A selector from a LabelSelector object; NULL when it does not parse (the caller then
 * matches nothing, rather than everything). */
static struct ck_label_selector *selector(const json_t *obj)
{
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    if (ck_label_selector_from_object(obj, &s, &err) < 0)
        return NULL;
    return s;
}

/* The policy's own pods, marked in own[] and added to ret: the node's pods in its
 * namespace that its podSelector selects. */
static void select_own(struct build *b, const json_t *pol, const char *ns, bool *own,
                       struct ranges *ret)
{
    struct ck_label_selector *s =
        selector(json_object_get(json_object_get(pol, "spec"), "podSelector"));
    for (size_t i = 0; s && i < b->n_pods; i++) {
        own[i] = b->pods[i].local && strcmp(b->pods[i].ns, ns) == 0 &&
                 ck_label_selector_matches(s, b->pods[i].labels);
        if (own[i])
            add_range(b, ret, b->pods[i].ip, b->pods[i].ip);
    }
    ck_label_selector_free(s);
}

/*
 * The pods a peer selects, marked in match[]: with a namespaceSelector, pods of the
 * namespaces it selects, else of the policy's namespace; with a podSelector only those
 * it selects. A peer with neither (an ipBlock) selects no pod.
 */
static void select_peer_pods(struct build *b, const json_t *peer, const char *ns, bool *match)
{
    const json_t *ps = json_object_get(peer, "podSelector");
    const json_t *nss = json_object_get(peer, "namespaceSelector");
    if (!ps && !nss)
        return;
    struct ck_label_selector *p = selector(ps), *n = nss ? selector(nss) : NULL;
    if (p && (!nss || n)) {
        for (size_t i = 0; i < b->n_pods; i++) {
            const struct pod *pod = &b->pods[i];
            bool in_ns;
            if (n) {
                struct ck__strmap_entry *e = ck__strmap_find(&b->ns_labels, pod->ns);
                in_ns = e && ck_label_selector_matches(n, e->value);
            } else {
                in_ns = strcmp(pod->ns, ns) == 0;
            }
            if (in_ns && ck_label_selector_matches(p, pod->labels))
                match[i] = true;
        }
    }
    ck_label_selector_free(p);
    ck_label_selector_free(n);
}

static const char *nft_proto(const char *protocol)
{
    if (!protocol || strcmp(protocol, "TCP") == 0)
        return "tcp";
    if (strcmp(protocol, "UDP") == 0)
        return "udp";
    if (strcmp(protocol, "SCTP") == 0)
        return "sctp";
    return NULL;
}

/*
 * One rule of a policy: ingress (from peers to the policy's pods) or egress (from them to
 * the peers). own_pods[] marks the policy's pods (the set pol-N-pods); a named port is
 * resolved against them for ingress, against the peer pods for egress.
 */
static void build_rule(struct build *b, const json_t *rule, bool ingress, size_t n, size_t r,
                       const char *ns, const bool *own_pods, const char *comment)
{
    const char *dir = ingress ? "in" : "eg";
    const char *verdict = ingress ? "accept" : "return";
    const char *self = ingress ? "daddr" : "saddr", *peer = ingress ? "saddr" : "daddr";
    const json_t *peers = json_object_get(rule, ingress ? "from" : "to");
    bool *match = calloc(b->n_pods + 1, sizeof(bool));
    if (!match) {
        b->err = CK_ENOMEM;
        return;
    }
    char own[32], peers_set[48], match_peers[64] = "";
    snprintf(own, sizeof(own), "pol-%zu-pods", n);
    snprintf(peers_set, sizeof(peers_set), "pol-%zu-%s-%zu-peers", n, dir, r);
    if (json_array_size(peers) > 0) {
        struct ranges addrs = {0};
        size_t i;
        const json_t *p;
        json_array_foreach(peers, i, p)
        {
            if (json_object_get(p, "ipBlock"))
                add_ip_block(b, &addrs, json_object_get(p, "ipBlock"));
            else
                select_peer_pods(b, p, ns, match);
        }
        for (size_t k = 0; k < b->n_pods; k++)
            if (match[k])
                add_range(b, &addrs, b->pods[k].ip, b->pods[k].ip);
        normalize(&addrs);
        ck__buf_printf(&b->decl, "add set " TBL " %s { type ipv4_addr ; flags interval ; }\n",
                       peers_set);
        write_elements(b, peers_set, &addrs);
        free(addrs.v);
        snprintf(match_peers, sizeof(match_peers), " ip %s @%s", peer, peers_set);
    } else if (!ingress) {
        for (size_t k = 0; k < b->n_pods; k++) /* any peer: named ports of every pod */
            match[k] = true;
    }
    const json_t *ports = json_object_get(rule, "ports");
    if (json_array_size(ports) == 0) {
        ck__buf_printf(&b->rules, "add rule " TBL " %s ip %s @%s%s %s comment \"%s\"\n",
                       ingress ? "ingress" : "egress", self, own, match_peers, verdict, comment);
        b->n_rules++;
    }
    size_t i;
    const json_t *p;
    json_array_foreach(ports, i, p)
    {
        const char *protocol = json_string_value(json_object_get(p, "protocol"));
        const char *proto = nft_proto(protocol);
        const json_t *port = json_object_get(p, "port");
        if (!proto)
            continue;
        char match_port[64] = "";
        if (json_is_integer(port) && json_is_integer(json_object_get(p, "endPort")))
            snprintf(match_port, sizeof(match_port), " th dport %lld-%lld",
                     json_integer_value(port), json_integer_value(json_object_get(p, "endPort")));
        else if (json_is_integer(port))
            snprintf(match_port, sizeof(match_port), " th dport %lld", json_integer_value(port));
        if (!json_is_string(port)) {
            ck__buf_printf(&b->rules,
                           "add rule " TBL " %s ip %s @%s%s meta l4proto %s%s %s comment \"%s\"\n",
                           ingress ? "ingress" : "egress", self, own, match_peers, proto,
                           match_port, verdict, comment);
            b->n_rules++;
            continue;
        }
        /* a named port: destination address . protocol . the number its pod gives it */
        char named[64];
        snprintf(named, sizeof(named), "pol-%zu-%s-%zu-p%zu", n, dir, r, i);
        struct ck__buf el = {0};
        uint32_t last_ip = 0;
        json_int_t last_num = 0;
        for (size_t k = 0; k < b->n_pods; k++) { /* by address: a duplicate follows its twin */
            const struct pod *pod = &b->pods[k];
            if (!(ingress ? own_pods[k] : match[k]))
                continue;
            json_int_t num =
                ck_pod_find_port(pod->obj, json_string_value(port), protocol ? protocol : "TCP");
            if (num > 0 && !(pod->ip == last_ip && num == last_num)) {
                last_ip = pod->ip, last_num = num;
                char ip[INET_ADDRSTRLEN];
                ip_text(pod->ip, ip);
                ck__buf_printf(&el, "%s%s . %s . %lld", el.len ? ", " : "", ip, proto,
                               (long long)num);
            }
        }
        ck__buf_printf(&b->decl,
                       "add set " TBL " %s { type ipv4_addr . inet_proto . inet_service ; }\n",
                       named);
        if (el.len)
            ck__buf_printf(&b->decl, "add element " TBL " %s { %s }\n", named, el.p);
        ck__buf_release(&el);
        ck__buf_printf(&b->rules,
                       "add rule " TBL " %s ip %s @%s%s ip daddr . meta l4proto . th dport @%s %s "
                       "comment \"%s\"\n",
                       ingress ? "ingress" : "egress", self, own, match_peers, named, verdict,
                       comment);
        b->n_rules++;
    }
    free(match);
}

/* One policy, the n-th in namespace/name order: its pods' set and its rules. */
static void build_policy(struct build *b, const json_t *pol, size_t n)
{
    const char *ns = meta_str(pol, "namespace"), *name = meta_str(pol, "name");
    const json_t *spec = json_object_get(pol, "spec");
    if (!ns || !name || !json_is_object(spec))
        return;
    /* policyTypes as the API server defaults them when unset */
    bool ingress = false, egress = false;
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(spec, "policyTypes"), i, t)
    {
        ingress |= json_is_string(t) && strcmp(json_string_value(t), "Ingress") == 0;
        egress |= json_is_string(t) && strcmp(json_string_value(t), "Egress") == 0;
    }
    if (json_array_size(json_object_get(spec, "policyTypes")) == 0) {
        ingress = true;
        egress = json_array_size(json_object_get(spec, "egress")) > 0;
    }
    bool *own = calloc(b->n_pods + 1, sizeof(bool));
    struct ranges own_ips = {0};
    if (!own) {
        b->err = CK_ENOMEM;
        return;
    }
    select_own(b, pol, ns, own, &own_ips);
    if (own_ips.n > 0) { /* a policy that selects none of the node's pods changes nothing */
        /* nftables keeps at most 128 bytes of a rule's comment: a long name is cut */
        char set[32], comment[128];
        snprintf(set, sizeof(set), "pol-%zu-pods", n);
        snprintf(comment, sizeof(comment), "%s/%s", ns, name);
        normalize(&own_ips);
        ck__buf_printf(&b->decl, "add set " TBL " %s { type ipv4_addr ; flags interval ; }\n", set);
        write_elements(b, set, &own_ips);
        for (size_t k = 0; k < own_ips.n; k++) {
            if (ingress)
                add_range(b, &b->ingress_isolated, own_ips.v[k].lo, own_ips.v[k].hi);
            if (egress)
                add_range(b, &b->egress_isolated, own_ips.v[k].lo, own_ips.v[k].hi);
        }
        const json_t *rule;
        if (ingress)
            json_array_foreach(json_object_get(spec, "ingress"), i, rule)
                build_rule(b, rule, true, n, i, ns, own, comment);
        if (egress)
            json_array_foreach(json_object_get(spec, "egress"), i, rule)
                build_rule(b, rule, false, n, i, ns, own, comment);
    }
    free(own_ips.v);
    free(own);
}

int ck_netpol_build(const struct ck_netpol_input *in, char **ret_text,
                    struct ck_netpol_build_stats *stats, struct ck_err *reterr)
{
    if (!in || !ret_text || (in->n_policies && !in->policies) || (in->n_pods && !in->pods) ||
        (in->n_namespaces && !in->namespaces))
        return ck_err_set(reterr, CK_EINVAL, "netpol: no input");
    struct build b = {.in = in};
    const json_t **pols = calloc(in->n_policies + 1, sizeof(*pols));
    b.pods = calloc(in->n_pods + 1, sizeof(*b.pods));
    if (!pols || !b.pods)
        b.err = CK_ENOMEM;
    for (size_t i = 0; !b.err && i < in->n_pods; i++) {
        const json_t *p = in->pods[i];
        uint32_t ip;
        const char *ns = meta_str(p, "namespace");
        if (!ns || !pod_ip(p, &ip))
            continue;
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        b.pods[b.n_pods++] = (struct pod){
            .obj = p,
            .ns = ns,
            .labels = json_object_get(json_object_get(p, "metadata"), "labels"),
            .ip = ip,
            .local = node && in->hostname && strcmp(node, in->hostname) == 0,
        };
    }
    if (b.pods)
        qsort(b.pods, b.n_pods, sizeof(*b.pods), cmp_pod);
    for (size_t i = 0; !b.err && i < in->n_namespaces; i++) {
        const char *name = meta_str(in->namespaces[i], "name");
        bool created;
        if (name && !ck__strmap_put(
                        &b.ns_labels, name,
                        json_object_get(json_object_get(in->namespaces[i], "metadata"), "labels"),
                        &created))
            b.err = CK_ENOMEM;
    }
    if (!b.err) {
        memcpy(pols, in->policies, in->n_policies * sizeof(*pols));
        qsort(pols, in->n_policies, sizeof(*pols), cmp_policy);
        for (size_t i = 0; !b.err && i < in->n_policies; i++)
            build_policy(&b, pols[i], i);
    }
    normalize(&b.ingress_isolated);
    normalize(&b.egress_isolated);
    struct ck__buf out = {0};
    ck__buf_adds(&out, "add table " TBL "\n"
                       "delete table " TBL "\n"
                       "add table " TBL "\n"
                       "add chain " TBL
                       " forward { type filter hook forward priority -5 ; policy accept ; }\n"
                       "add chain " TBL " ingress\n"
                       "add chain " TBL " egress\n"
                       "add set " TBL " ingress-isolated { type ipv4_addr ; flags interval ; }\n"
                       "add set " TBL " egress-isolated { type ipv4_addr ; flags interval ; }\n");
    ck__buf_add(&out, b.decl.p ? b.decl.p : "", b.decl.len);
    ck__buf_release(&b.decl);
    write_elements(&b, "ingress-isolated", &b.ingress_isolated);
    write_elements(&b, "egress-isolated", &b.egress_isolated);
    ck__buf_add(&out, b.decl.p ? b.decl.p : "", b.decl.len);
    ck__buf_adds(&out, "add rule " TBL " forward ct state established,related accept\n"
                       "add rule " TBL " forward ip saddr @egress-isolated jump egress\n"
                       "add rule " TBL " forward ip daddr @ingress-isolated jump ingress\n");
    ck__buf_add(&out, b.rules.p ? b.rules.p : "", b.rules.len);
    ck__buf_adds(&out, "add rule " TBL " egress drop\n"
                       "add rule " TBL " ingress drop\n");
    if (!b.err && (b.decl.err || b.rules.err || out.err))
        b.err = CK_ENOMEM;
    if (stats && !b.err) {
        *stats = (struct ck_netpol_build_stats){.policies = in->n_policies, .rules = b.n_rules + 5};
        for (size_t k = 0; k < b.ingress_isolated.n; k++)
            stats->ingress_isolated += b.ingress_isolated.v[k].hi - b.ingress_isolated.v[k].lo + 1;
        for (size_t k = 0; k < b.egress_isolated.n; k++)
            stats->egress_isolated += b.egress_isolated.v[k].hi - b.egress_isolated.v[k].lo + 1;
    }
    ck__buf_release(&b.decl);
    ck__buf_release(&b.rules);
    ck__strmap_release(&b.ns_labels);
    free(b.ingress_isolated.v);
    free(b.egress_isolated.v);
    free(b.pods);
    free(pols);
    char *text = ck__buf_take(&out);
    if (b.err || !text) {
        free(text);
        return ck_err_no_memory(reterr);
    }
    *ret_text = text;
    return 0;
}

int ck_netpol_cleanup(struct ck_err *reterr)
{
    return ck_proxy_nft_run("add table " TBL "\ndelete table " TBL "\n", false, reterr);
}

/* ---- the runtime: informers on NetworkPolicies, Pods and Namespaces -------------------- */

static const struct ck_resource policies_res = {"networking.k8s.io", "v1", "networkpolicies", true};
static const struct ck_resource pods_res = {"", "v1", "pods", true};
static const struct ck_resource namespaces_res = {"", "v1", "namespaces", false};

struct ck__netpol {
    struct ck_informer *inf[3]; /* policies, pods, namespaces */
    bool shared;                /* the inf are a factory's: only our handler is ours */
    struct ck_event_handler handler;
    char *hostname;
    char *applied; /* the text of the last transaction that succeeded, or NULL */
};

int ck__netpol_new(struct ck_rest *client, struct ck_informer_factory *factory,
                   const char *hostname, struct ck_event_handler *h, struct ck__netpol **ret,
                   struct ck_err *reterr)
{
    struct ck__netpol *np = calloc(1, sizeof(*np));
    if (!np || !(np->hostname = strdup(hostname))) {
        free(np);
        return ck_err_no_memory(reterr);
    }
    const struct ck_resource *res[3] = {&policies_res, &pods_res, &namespaces_res};
    np->shared = factory != NULL;
    np->handler = *h;
    int r = 0;
    for (int i = 0; r == 0 && i < 3; i++) {
        struct ck_informer_options o = {
            .client = client, .res = res[i], .transform = ck_transform_strip_managed_fields};
        if (factory) /* the process's caches: its pods are not listed a second time */
            r = (np->inf[i] = ck_informer_factory_for(factory, res[i])) ? 0
                                                                        : ck_err_no_memory(reterr);
        else
            r = ck_informer_new(&o, &np->inf[i], reterr);
        if (r == 0)
            r = ck_informer_add_handler(np->inf[i], h, 0, reterr);
    }
    if (r < 0) {
        ck__netpol_free(np);
        return r;
    }
    *ret = np;
    return 0;
}

int ck__netpol_start(struct ck__netpol *np, struct ck_err *reterr)
{
    /* pods on one bridge talk at layer 2: only br_netfilter shows their packets to the
     * forward hook (kube-proxy warns the same way for its rules) */
    FILE *f = fopen("/proc/sys/net/bridge/bridge-nf-call-iptables", "r");
    int c = f ? fgetc(f) : EOF;
    if (f)
        fclose(f);
    if (c != '1')
        CK_LOGE("proxy: bridged pod traffic escapes network policies: %s",
                f ? "net.bridge.bridge-nf-call-iptables is 0"
                  : "the kernel module br_netfilter is not loaded");
    int r = 0;
    for (int i = 0; r == 0 && i < 3; i++)
        r = ck_informer_start(np->inf[i], reterr);
    return r;
}

void ck__netpol_stop(struct ck__netpol *np)
{
    for (int i = 0; np && np->shared && i < 3; i++) /* the factory's run on for the others */
        if (np->inf[i])
            ck_informer_remove_handler(np->inf[i], &np->handler);
    if (np && np->shared)
        return;
    for (int i = 0; np && i < 3; i++)
        if (np->inf[i])
            ck_informer_request_stop(np->inf[i]);
    for (int i = 0; np && i < 3; i++)
        if (np->inf[i])
            ck_informer_stop(np->inf[i]);
}

struct ck__netpol *ck__netpol_free(struct ck__netpol *np)
{
    if (!np)
        return NULL;
    for (int i = 0; i < 3 && !np->shared; i++)
        ck_informer_free(np->inf[i]);
    for (int i = 0; i < 3 && np->shared; i++) /* ck__netpol_stop may not have run */
        if (np->inf[i])
            ck_informer_remove_handler(np->inf[i], &np->handler);
    free(np->applied);
    free(np->hostname);
    free(np);
    return NULL;
}

bool ck__netpol_sync(struct ck__netpol *np, bool force)
{
    for (int i = 0; i < 3; i++)
        if (!ck_informer_has_synced(np->inf[i]))
            return true; /* not all listed yet: again soon */
    struct ck_obj_list l[3] = {{0}};
    for (int i = 0; i < 3; i++)
        ck_indexer_list(ck_informer_indexer(np->inf[i]), &l[i]);
    struct ck_netpol_input in = {l[0].items, l[0].n, l[1].items,  l[1].n,
                                 l[2].items, l[2].n, np->hostname};
    char *text = NULL;
    struct ck_netpol_build_stats st = {0};
    struct ck_err err = {0};
    int r = ck_netpol_build(&in, &text, &st, &err);
    for (int i = 0; i < 3; i++)
        ck_obj_list_release(&l[i]);
    if (r == 0 && !force && np->applied && strcmp(text, np->applied) == 0) {
        free(text); /* nothing changed */
        return false;
    }
    if (r == 0)
        r = ck_proxy_nft_run(text, false, &err);
    free(np->applied);
    np->applied = NULL;
    if (r < 0) {
        CK_LOGE("proxy: network policy sync failed, trying again: %s", err.msg);
        if (ck_log_v(9) && text)
            CK_LOGV(9, "proxy: the network policy transaction was:\n%s", text);
        free(text);
        return true;
    }
    CK_LOGV(2,
            "proxy: network policies: %zu policies, %zu pods isolated for ingress, %zu for "
            "egress, %zu rules",
            st.policies, st.ingress_isolated, st.egress_isolated, st.rules);
    if (ck_log_v(9))
        CK_LOGV(9, "proxy: network policy transaction:\n%s", text);
    np->applied = text;
    return false;
}
