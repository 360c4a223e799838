/*
 * conntrack.c - deleting the conntrack entries of UDP flows the rules no longer route.
 *
 * A UDP "connection" lives in conntrack as long as datagrams keep coming, and every
 * datagram of it follows the NAT decision of its first: after an endpoint goes away, a
 * client reusing its source port would keep talking to it, and a client whose first
 * datagram was rejected (no endpoint yet) would keep being rejected. kube-proxy deletes
 * such entries after each sync (pkg/proxy/conntrack/cleanup.go); so do we, with
 * libnetfilter_conntrack: one dump of the IPv4 table, and a delete for each UDP entry
 * whose original destination is a frontend of the state (a ClusterIP, external or LB
 * IP with its port, or a NodePort on any address) and that was DNATed to an endpoint
 * the frontend no longer uses, or was not DNATed though the frontend now has endpoints.
 *
 * Threading: called from the proxy's sync thread only; one netlink handle per call.
 */
#include <arpa/inet.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct clean {
    const struct ck_proxy_state *s;
    struct nf_conntrack **doomed;
    size_t n, cap;
    bool nomem;
};

static bool frontend_has_pairs(const struct ck_proxy_state *s, const char *fe)
{
    /* pairs are "FE>IP:PORT": any key with the prefix "FE>" */
    size_t len = strlen(fe), it;
    for (struct ck__strmap_entry *e = ck__strmap_next(&s->udp_pairs, NULL, &it); e;
         e = ck__strmap_next(&s->udp_pairs, e, &it))
        if (strncmp(e->key, fe, len) == 0 && e->key[len] == '>')
            return true;
    return false;
}

static int on_entry(enum nf_conntrack_msg_type type, struct nf_conntrack *ct, void *arg)
{
    struct clean *c = arg;
    (void)type;
    if (nfct_get_attr_u8(ct, ATTR_L4PROTO) != IPPROTO_UDP)
        return NFCT_CB_CONTINUE;
    char dst[INET_ADDRSTRLEN], rsrc[INET_ADDRSTRLEN];
    uint32_t d = nfct_get_attr_u32(ct, ATTR_IPV4_DST);
    uint32_t r = nfct_get_attr_u32(ct, ATTR_REPL_IPV4_SRC);
    unsigned dport = ntohs(nfct_get_attr_u16(ct, ATTR_PORT_DST));
    unsigned rport = ntohs(nfct_get_attr_u16(ct, ATTR_REPL_PORT_SRC));
    inet_ntop(AF_INET, &d, dst, sizeof(dst));
    inet_ntop(AF_INET, &r, rsrc, sizeof(rsrc));
    char fe[64], pair[128];
    snprintf(fe, sizeof(fe), "%s:%u", dst, dport);
    if (!ck__strmap_find(&c->s->udp_frontends, fe)) {
        snprintf(fe, sizeof(fe), "*:%u", dport);
        if (!ck__strmap_find(&c->s->udp_frontends, fe))
            return NFCT_CB_CONTINUE; /* not a Service's flow */
    }
    bool dnated = d != r || dport != rport;
    bool doomed;
    if (dnated) {
        snprintf(pair, sizeof(pair), "%s>%s:%u", fe, rsrc, rport);
        doomed = !ck__strmap_find(&c->s->udp_pairs, pair);
    } else {
        doomed = frontend_has_pairs(c->s, fe);
    }
    if (!doomed)
        return NFCT_CB_CONTINUE;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct nf_conntrack **v = realloc(c->doomed, cap * sizeof(*v));
        if (!v) {
            c->nomem = true;
            return NFCT_CB_STOP;
        }
        c->doomed = v, c->cap = cap;
    }
    struct nf_conntrack *copy = nfct_clone(ct);
    if (!copy) {
        c->nomem = true;
        return NFCT_CB_STOP;
    }
    c->doomed[c->n++] = copy;
    return NFCT_CB_CONTINUE;
}

int ck__proxy_conntrack_clean(const struct ck_proxy_state *s, size_t *ret_deleted,
                              struct ck_err *reterr)
{
    *ret_deleted = 0;
    if (!s || s->udp_frontends.len == 0)
        return 0;
    struct nfct_handle *h = nfct_open(CONNTRACK, 0);
    if (!h)
        return ck_err_set(reterr, CK_EIO, "conntrack: cannot open netlink: %m");
    struct clean c = {.s = s};
    nfct_callback_register(h, NFCT_T_ALL, on_entry, &c);
    uint32_t family = AF_INET;
    int r = 0;
    if (nfct_query(h, NFCT_Q_DUMP, &family) < 0)
        r = ck_err_set(reterr, CK_EIO, "conntrack: dump failed: %m");
    else if (c.nomem)
        r = ck_err_no_memory(reterr);
    nfct_callback_unregister(h);
    for (size_t i = 0; i < c.n; i++) {
        /* an entry gone meanwhile (ENOENT) is no failure */
        if (r == 0 && nfct_query(h, NFCT_Q_DESTROY, c.doomed[i]) == 0)
            (*ret_deleted)++;
        nfct_destroy(c.doomed[i]);
    }
    free(c.doomed);
    nfct_close(h);
    return r;
}
