/*
 * lib/proxy/internal.h - private to libckube-proxy; not installed.
 *
 * The state a transaction leaves in the kernel (struct ck_proxy_state), shared by the
 * builder (rules.c) and the runtime (proxy.c).
 */
#ifndef CKUBE_PROXY_INTERNAL_H
#define CKUBE_PROXY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/internal/util.h"
#include "ckube/proxy.h"

/* The sets and maps whose elements the builder tracks (kube-proxy's nftElementStorage). */
enum ck__proxy_container {
    CK__PX_CLUSTER_IPS,
    CK__PX_NODEPORT_IPS,
    CK__PX_SERVICE_IPS,
    CK__PX_SERVICE_NODEPORTS,
    CK__PX_NO_EP_SERVICES,
    CK__PX_NO_EP_NODEPORTS,
    CK__PX_N_CONTAINERS,
};

/* One Service served on a health check node port. */
struct ck__proxy_health {
    char *ns, *name;
    int port;
    int local_endpoints;
};

struct ck_proxy_state {
    struct ck__strmap chains;                     /* service chain name -> uint64_t hash */
    struct ck__strmap stale;                      /* flushed chains to delete next time */
    struct ck__strmap sets;                       /* affinity set name -> NULL */
    struct ck__strmap elems[CK__PX_N_CONTAINERS]; /* element key -> value (strdup) or NULL */
    struct ck__proxy_health *health;
    size_t n_health;
    size_t rules; /* rules in the table */
    /*
     * UDP, for conntrack clean-up: frontends ("IP:PORT" of a ClusterIP, external or LB
     * IP; "*:PORT" of a NodePort) -> NULL, and the frontend/endpoint pairs in use
     * ("FRONTEND>IP:PORT") -> NULL; udp_hash sums them up in a fixed order, so a caller
     * can tell whether anything changed.
     */
    struct ck__strmap udp_frontends, udp_pairs;
    uint64_t udp_hash;
};

/*
 * Deletes the conntrack entries of UDP flows that the state no longer routes: flows
 * DNATed from a frontend to an endpoint it no longer uses, and flows to a frontend that
 * were not DNATed (rejected while it had no endpoint) now that it has one (kube-proxy's
 * conntrack clean-up). Sets *ret_deleted. 0, or CK_EIO with the reason.
 */
int ck__proxy_conntrack_clean(const struct ck_proxy_state *s, size_t *ret_deleted,
                              struct ck_err *reterr);

/* True when ip (host order) is in one of the comma-separated IPv4 CIDRs of list. */
bool ck__proxy_cidrs_contain(const char *list, uint32_t ip);

/* True when list is one or more comma-separated IPv4 CIDRs (a.b.c.d/n). */
bool ck__proxy_cidrs_valid(const char *list);

/*
 * The NetworkPolicy runtime (netpol.c): informers on NetworkPolicies, Pods and Namespaces
 * (its own over client, or factory's when given: then it only adds and removes its
 * handler) whose events go to h (copied), and the sync the proxy's sync thread
 * runs. ck__netpol_sync() returns true when it should run again soon (the informers have
 * not listed yet, or the transaction failed); without force it sends nothing when the
 * table would not change.
 */
struct ck__netpol;
int ck__netpol_new(struct ck_rest *client, struct ck_informer_factory *factory,
                   const char *hostname, struct ck_event_handler *h, struct ck__netpol **ret,
                   struct ck_err *reterr);
int ck__netpol_start(struct ck__netpol *np, struct ck_err *reterr);
void ck__netpol_stop(struct ck__netpol *np);
bool ck__netpol_sync(struct ck__netpol *np, bool force);
struct ck__netpol *ck__netpol_free(struct ck__netpol *np);

#endif /* CKUBE_PROXY_INTERNAL_H */
