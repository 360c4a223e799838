/*
 * ckube/proxy.h - libckube-proxy: Service routing on a node through nftables, as
 * kube-proxy's nftables mode does it (kubernetes pkg/proxy/nftables/proxier.go).
 *
 * Two layers:
 *
 * - the rule builder, a pure function: Services and EndpointSlices (jansson objects as
 *   the API serves them), the node's name and addresses, the configuration and the
 *   state the previous transaction left in the kernel go in; the text of one nft
 *   transaction and the state after it come out. It touches nothing but memory, so it
 *   is tested byte for byte (tests/proxy/) and timed on its own (bench/proxy/).
 * - the proxy: informers on Services and EndpointSlices, one sync thread that builds and
 *   applies transactions through libnftables (the table "ip ckube-proxy" only), the
 *   /healthz and /metrics servers, and the health check node ports of Services with
 *   externalTrafficPolicy Local.
 *
 * Everything lives in the one table "ip ckube-proxy" (IPv4 only); see
 * docs/internals/proxy.md for its layout.
 *
 * With config->network_policy the proxy also enforces NetworkPolicies, as a network
 * plugin does (sigs.k8s.io/kube-network-policies): a second builder, as pure, turns
 * NetworkPolicies, Pods and Namespaces into one transaction for the table
 * "ip ckube-netpol", which the same sync thread applies.
 */
#ifndef CKUBE_PROXY_H
#define CKUBE_PROXY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/informer.h"
#include "ckube/rest.h"
#include "ckube/util.h"

/* The nftables family and table the proxy owns; it never touches any other table. */
#define CK_PROXY_TABLE_FAMILY "ip"
#define CK_PROXY_TABLE        "ckube-proxy"
/* The table of NetworkPolicy enforcement (same family), owned the same way. */
#define CK_NETPOL_TABLE "ckube-netpol"

/* kube-proxy's masquerade mark bit (--masquerade-bit 14). */
#define CK_PROXY_MASQUERADE_MARK 0x4000u

/* How much of the table a transaction rewrites. */
enum ck_proxy_sync_mode {
    /* The table is deleted and rebuilt in one transaction: what a starting proxy does to
     * adopt whatever an earlier run left. Affinity entries are lost. */
    CK_PROXY_SYNC_ADOPT,
    /* Every chain and map is rewritten (kube-proxy's full sync); affinity sets keep their
     * entries. */
    CK_PROXY_SYNC_FULL,
    /* Only chains whose rules changed are rewritten, and only changed map elements
     * (kube-proxy's partial sync). Needs the previous state. */
    CK_PROXY_SYNC_PARTIAL,
};

/* What the proxy is told by its flags; strings are borrowed. */
struct ck_proxy_config {
    const char *hostname;     /* the node's name: endpoints with this nodeName are local */
    const char *cluster_cidr; /* IPv4 pod CIDR (--cluster-cidr); NULL/"": none known */
    bool masquerade_all;      /* --masquerade-all: SNAT all traffic to a ClusterIP */
    /*
     * --nodeport-addresses: comma-separated IPv4 CIDRs. NULL or "": NodePorts answer on
     * every local address but 127.0.0.0/8 (a fib lookup, as kube-proxy does when the
     * flag is unset); else only on the node addresses inside them (struct
     * ck_proxy_input.node_ips).
     */
    const char *nodeport_addresses;
    int64_t sync_period;              /* full resync period, ns; 0: 30 s */
    const char *healthz_bind_address; /* HOST:PORT of /healthz; NULL/"": none */
    const char *metrics_bind_address; /* HOST:PORT of /metrics; NULL/"": none */
    bool no_health_check_node_ports;  /* do not serve Services' healthCheckNodePorts */
    /*
     * Informers to share (a process that already watches Services and EndpointSlices,
     * such as the server's controllers): borrowed, must outlive the proxy, which adds
     * its handlers to the factory's informers and removes them when freed. NULL: the
     * proxy makes and owns its own two informers over the client.
     */
    struct ck_informer_factory *factory;
    /*
     * Enforce NetworkPolicies on this node's pods (the table "ip ckube-netpol"): the proxy
     * then also watches NetworkPolicies, Pods and Namespaces, through the factory's
     * informers when it has one, else with informers of its own over the client, which
     * then needs to list and watch them.
     */
    bool network_policy;
};

/* ---- the rule builder ----------------------------------------------------------------- */

/* The input of one build: every object is borrowed for the call. */
struct ck_proxy_input {
    const json_t *const *services; /* core/v1 Services */
    size_t n_services;
    const json_t *const *slices; /* discovery.k8s.io/v1 EndpointSlices */
    size_t n_slices;
    /* the node's IPv4 addresses; used only when config->nodeport_addresses is set */
    const char *const *node_ips;
    size_t n_node_ips;
    const struct ck_proxy_config *config;
};

/* What the kernel holds after a transaction: chains, map elements, affinity sets. */
struct ck_proxy_state;

/* Figures of one build. */
struct ck_proxy_build_stats {
    size_t services;        /* service ports programmed */
    size_t endpoints;       /* endpoint chains in the table */
    size_t chains_written;  /* chains (re)written by this transaction */
    size_t rules;           /* rules in the table after it */
    size_t elements_change; /* map and set elements added or deleted */
    size_t stale_chains;    /* chains flushed now, to be deleted by the next transaction */
};

/*
 * Builds the transaction that takes the table from prev to what the input asks for.
 * prev NULL means nothing is known (mode must then be CK_PROXY_SYNC_ADOPT). Returns 0,
 * the text in *ret_text (free() it) and the state after the transaction in *ret_next
 * (free with ck_proxy_state_free(); it becomes true only once the text is applied), or
 * CK_EINVAL / CK_ENOMEM. Objects it cannot use (a Service without a valid IPv4 clusterIP,
 * an IPv6 slice) are skipped, as kube-proxy skips them. stats may be NULL.
 */
int ck_proxy_build(const struct ck_proxy_input *in, const struct ck_proxy_state *prev,
                   enum ck_proxy_sync_mode mode, char **ret_text, struct ck_proxy_state **ret_next,
                   struct ck_proxy_build_stats *stats, struct ck_err *reterr);

/* True when the state has chains flushed by its transaction and not deleted yet. */
bool ck_proxy_state_has_stale(const struct ck_proxy_state *s);

/*
 * The Services with externalTrafficPolicy Local and a healthCheckNodePort, and how many
 * ready local endpoints each has, as the state holds them: calls fn once per Service.
 */
void ck_proxy_state_health_ports(const struct ck_proxy_state *s,
                                 void (*fn)(const char *ns, const char *name, int port,
                                            int local_endpoints, void *arg),
                                 void *arg);

struct ck_proxy_state *ck_proxy_state_free(struct ck_proxy_state *s);

/*
 * Runs an nft transaction through libnftables (nft_run_cmd_from_buffer); dry_run only
 * parses and checks it against the kernel's view without committing. Returns 0, or
 * CK_EIO with nft's error text in *reterr (cut to fit).
 */
int ck_proxy_nft_run(const char *text, bool dry_run, struct ck_err *reterr);

/* ---- the NetworkPolicy rule builder ----------------------------------------------------- */

/* The input of one NetworkPolicy build: every object is borrowed for the call. */
struct ck_netpol_input {
    const json_t *const *policies; /* networking.k8s.io/v1 NetworkPolicies */
    size_t n_policies;
    const json_t *const *pods; /* every Pod of the cluster (peers may be anywhere) */
    size_t n_pods;
    const json_t *const *namespaces; /* every Namespace (for namespaceSelector) */
    size_t n_namespaces;
    const char *hostname; /* the node's name: only pods with this nodeName are judged */
};

/* Figures of one NetworkPolicy build. */
struct ck_netpol_build_stats {
    size_t policies;         /* NetworkPolicies seen */
    size_t ingress_isolated; /* addresses of the node's pods isolated for ingress */
    size_t egress_isolated;  /* ... for egress */
    size_t rules;            /* rules in the table */
};

/*
 * Builds the transaction that replaces the table "ip ckube-netpol" whole with what the
 * input asks for (docs/internals/proxy.md, "Network policies"). Returns 0 and the text in
 * *ret_text (free() it), or CK_EINVAL / CK_ENOMEM. A policy or peer it cannot use (an
 * IPv6 ipBlock, a selector that does not parse) matches nothing. stats may be NULL.
 */
int ck_netpol_build(const struct ck_netpol_input *in, char **ret_text,
                    struct ck_netpol_build_stats *stats, struct ck_err *reterr);

/* Deletes the table "ip ckube-netpol" (nothing when it is not there). 0, or CK_EIO. */
int ck_netpol_cleanup(struct ck_err *reterr);

/* ---- the proxy ------------------------------------------------------------------------- */

struct ck_proxy;

/*
 * Creates a stopped proxy that watches through client (borrowed; must outlive the
 * proxy). The config is copied. Returns 0 and sets *ret_p, or CK_EINVAL (no hostname,
 * a bad CIDR or address) / CK_ENOMEM.
 */
int ck_proxy_new(const struct ck_proxy_config *config, struct ck_rest *client,
                 struct ck_proxy **ret_p, struct ck_err *reterr);

/*
 * Starts the informers, the sync thread and the HTTP servers. The first sync (after both
 * informers have listed) adopts the table. Returns 0, or CK_EADDRINUSE / CK_EIO /
 * CK_ENOMEM with nothing left running.
 */
int ck_proxy_start(struct ck_proxy *p, struct ck_err *reterr);

/* Asks for a sync as soon as possible (what an informer event does). Thread-safe. */
void ck_proxy_request_sync(struct ck_proxy *p);

/* Stops the threads and servers; the table stays as it is, as kube-proxy leaves it. */
void ck_proxy_stop(struct ck_proxy *p);

/* Deletes the table "ip ckube-proxy" (kube-proxy --cleanup). 0, or CK_EIO. */
int ck_proxy_cleanup(struct ck_err *reterr);

/* Stops and frees. NULL is a no-op; returns NULL. */
struct ck_proxy *ck_proxy_free(struct ck_proxy *p);

#endif /* CKUBE_PROXY_H */
