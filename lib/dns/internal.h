/*
 * lib/dns/internal.h - private to libckube-dns (and its tests and fuzz target): never
 * installed.
 *
 * The answer builder is a function of a query's bytes and a view of the cluster's
 * objects (three indexers with the indices ck__dns_add_indices adds), so that tests and
 * the fuzzer drive it without sockets. The one thing it cannot do alone is ask an
 * upstream server (the target of an ExternalName Service): the view carries a lookup
 * function for that, and without one the builder says DEFER instead of blocking.
 */
#ifndef CKUBE_DNS_INTERNAL_H
#define CKUBE_DNS_INTERNAL_H

#include <ldns/ldns.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/client.h"
#include "ckube/util.h"

/* index names on the three caches */
#define CK__DNS_INDEX_SVC_IP   "dns-cluster-ip"   /* services: each cluster IP (normalized) */
#define CK__DNS_INDEX_SLICE_OF "dns-service-name" /* slices: "namespace/service" */
#define CK__DNS_INDEX_EP_IP    "dns-endpoint-ip"  /* slices: each ready endpoint address */

#define CK__DNS_MAX_LOCAL_IPS 4

/*
 * Asks the upstream servers name/type (class IN, recursion desired). Returns the answer
 * (the caller frees it with ldns_pkt_free) or NULL when no server answered.
 */
typedef ldns_pkt *(*ck__dns_lookup_func)(void *arg, const ldns_rdf *name, ldns_rr_type type);

struct ck__dns_view {
    struct ck_indexer *services, *slices, *namespaces; /* any may be NULL: empty */
    const char *zone; /* the cluster domain, lower case, with the final dot */
    uint32_t ttl;     /* of answered records */
    uint32_t serial;  /* of the SOA: when the objects last changed (unix seconds) */
    bool synced;      /* false: name errors are SERVFAIL, as CoreDNS before its sync */
    bool shuffle;     /* shuffle address records as the loadbalance plugin does */
    /* the addresses the server is reached at, for NS and ns.dns.<zone> (textual IPs) */
    const char *local_ips[CK__DNS_MAX_LOCAL_IPS];
    size_t n_local_ips;
    ck__dns_lookup_func lookup; /* NULL: answers needing it are DEFERred */
    void *lookup_arg;
};

enum ck__dns_verdict {
    CK__DNS_ANSWER,  /* *ret_wire holds the answer to send */
    CK__DNS_FORWARD, /* not ours: relay the query to an upstream */
    CK__DNS_DEFER,   /* needs view->lookup: ask again where blocking is allowed */
    CK__DNS_DROP,    /* send nothing (a response, or less than a header) */
};

/*
 * Decides what to do with one query of len bytes received over UDP (tcp false) or TCP,
 * and, for CK__DNS_ANSWER, builds the answer in *ret_wire (malloc'd; the caller frees it)
 * and *ret_len, cut to what the client accepts (truncation). Returns the verdict, or
 * CK_ENOMEM (then nothing is set).
 */
int ck__dns_handle(const struct ck__dns_view *view, const uint8_t *query, size_t len, bool tcp,
                   uint8_t **ret_wire, size_t *ret_len);

/*
 * The largest answer a client accepts: 65535 over TCP, else its EDNS0 buffer size, at
 * least 512 (512 without EDNS0).
 */
size_t ck__dns_max_size(const ldns_pkt *query, bool tcp);

/*
 * Encodes pkt into at most max bytes: drops additional records (but the OPT), then
 * authority, then answers from the end, and sets TC when an answer was dropped (the rule
 * of CoreDNS's Truncate). Returns 0 and a malloc'd buffer, or CK_ENOMEM / CK_EINVAL.
 */
int ck__dns_encode(ldns_pkt *pkt, size_t max, uint8_t **ret_wire, size_t *ret_len);

/*
 * An empty reply to a query ldns reads (SERVFAIL when no upstream answered): same ID and
 * question, our OPT when it had one. Returns CK__DNS_ANSWER with *ret_wire set, CK_EINVAL
 * for an unreadable query, or CK_ENOMEM.
 */
int ck__dns_error_reply(const uint8_t *query, size_t len, int rcode, bool tcp, uint8_t **ret_wire,
                        size_t *ret_len);

/* Adds the three indices above to the caches (NULL ones skipped). */
int ck__dns_add_indices(struct ck_indexer *services, struct ck_indexer *slices,
                        struct ck_err *reterr);

#endif /* CKUBE_DNS_INTERNAL_H */
