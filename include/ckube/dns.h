/*
 * ckube/dns.h - the cluster DNS server (what CoreDNS's kubernetes and forward plugins
 * answer with kubeadm's default Corefile).
 *
 * Names under the cluster domain (default cluster.local) are answered from the cluster's
 * Services, EndpointSlices and Namespaces, read through informers (or through caches an
 * embedder already keeps); reverse names of cluster IPs are answered too, and everything
 * else is forwarded to the servers of a resolv.conf. UDP and TCP on one address, EDNS0,
 * truncation. docs/internals/dns.md tells what is answered, the limits and the threads.
 *
 * Lifecycle: ck_dns_new() (nothing runs), ck_dns_start() (binds, starts the informers
 * and the threads), ck_dns_stop() (joins every thread; idempotent), ck_dns_free().
 *
 * Threading: one event-loop thread reads UDP queries and accepts TCP connections;
 * names needing an upstream (forwarded names, ExternalName targets) go to a small pool of
 * forwarding threads; every TCP connection has a thread of its own, at most
 * max_tcp_clients at once. The calls below are made from one thread (the owner).
 */
#ifndef CKUBE_DNS_H
#define CKUBE_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/client.h"
#include "ckube/rest.h"
#include "ckube/util.h"

#define CK_DNS_DEFAULT_LISTEN      "10.96.0.10:53" /* the kube-dns Service's usual address */
#define CK_DNS_DEFAULT_DOMAIN      "cluster.local"
#define CK_DNS_DEFAULT_RESOLV_CONF "/etc/resolv.conf"
#define CK_DNS_DEFAULT_TTL         30 /* kubeadm's Corefile: ttl 30 */
#define CK_DNS_DEFAULT_TCP_CLIENTS 64 /* TCP connections served at once; more are closed */
#define CK_DNS_DEFAULT_FORWARDERS  4  /* forwarding threads */
#define CK_DNS_MAX_UPSTREAMS       3  /* resolv.conf's MAXNS: later nameservers are ignored */

struct ck_dns_config {
    /* "ADDR:PORT" or "[V6ADDR]:PORT"; port 0 picks a free one (ck_dns_port). NULL: the default */
    const char *listen;
    const char *cluster_domain; /* NULL: cluster.local */
    /*
     * Where the upstream servers come from: its "nameserver ADDR" lines (at most 3, as
     * glibc), an address may carry ":PORT" / "[V6]:PORT" (ckube's extension; glibc reads
     * none). NULL: the default.
     */
    const char *resolv_conf;
    /*
     * Upstream servers as "ADDR", "ADDR:PORT" or "[V6ADDR]:PORT" (forward's own syntax),
     * used instead of the resolv.conf when n_upstreams > 0; borrowed for ck_dns_new only.
     */
    const char *const *upstreams;
    size_t n_upstreams;
    uint32_t ttl;        /* of every answered record; 0: 30 */
    int max_tcp_clients; /* 0: CK_DNS_DEFAULT_TCP_CLIENTS */
    int forwarders;      /* 0: CK_DNS_DEFAULT_FORWARDERS */
    /*
     * Where the cluster's objects come from, one of (or factory, below):
     * - client: the server runs its own informers on Services, EndpointSlices
     *   (discovery.k8s.io/v1) and Namespaces through it (borrowed; must outlive the server);
     * - services, slices, namespaces: caches the embedder keeps filled (borrowed, must
     *   outlive the server); the server adds its indices to them in ck_dns_new, so give
     *   them before their informers start. The data counts as synced from the start.
     * With neither, the cluster domain has no objects: every name in it is NXDOMAIN.
     */
    struct ck_rest *client;
    struct ck_indexer *services, *slices, *namespaces;
    /*
     * Instead of client: the informers of a factory the process shares (`ckube server`'s
     * one set of caches; borrowed, must outlive the server), running or not: the server
     * adds its handlers and indices to its Services, EndpointSlices and Namespaces,
     * starts what is not started, and removes its handlers when it stops.
     */
    struct ck_informer_factory *factory;
};

struct ck_dns;

/*
 * Checks and copies the configuration (reads the resolv.conf unless upstreams are given)
 * and creates a stopped server. Returns 0 and sets *ret_dns, or CK_EINVAL (a bad address,
 * domain or resolv.conf without a nameserver: reterr says which), CK_ENOENT (no such
 * resolv.conf) or CK_ENOMEM.
 */
int ck_dns_new(const struct ck_dns_config *config, struct ck_dns **ret_dns, struct ck_err *reterr);

/*
 * Binds the UDP and TCP sockets, starts the informers (with a client) and the threads.
 * Returns 0, CK_EADDRINUSE, CK_EIO (cannot bind or start a thread) or CK_EINVAL when
 * already started. On failure nothing runs.
 */
int ck_dns_start(struct ck_dns *dns, struct ck_err *reterr);

/* The port the server listens on (the one chosen when the listen port was 0); 0 before start. */
uint16_t ck_dns_port(const struct ck_dns *dns);

/* True once the cluster's objects are in the caches (before, a name error is SERVFAIL). */
bool ck_dns_has_synced(struct ck_dns *dns);

/*
 * Stops answering, closes the sockets and joins every thread (a forwarded query in flight
 * ends within its upstream timeout, 2 s). Idempotent; a stopped server cannot restart.
 */
void ck_dns_stop(struct ck_dns *dns);

/* Stops the server if needed and frees it. NULL is a no-op; returns NULL. */
struct ck_dns *ck_dns_free(struct ck_dns *dns);

#endif /* CKUBE_DNS_H */
