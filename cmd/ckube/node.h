/*
 * node.h - what main.c needs from node.c and containerd.c: `ckube server`'s own node (an
 * in-process agent, as `k3s server` runs a kubelet) and the private containerd it
 * supervises for that node's containers.
 */
#ifndef CKUBE_CMD_NODE_H
#define CKUBE_CMD_NODE_H

#include <stdbool.h>

#include "ckube/agent.h"
#include "ckube/apiserver.h"

/* ---- the supervised containerd (containerd.c) ---- */

struct ck_cmd_containerd;

/* The containerd on PATH as an absolute path in buf, or false when there is none. */
bool ck_cmd_containerd_find(char *buf, size_t size);

/*
 * Writes DATA-DIR/containerd/config.toml (root, state, sockets and plugin directories of
 * its own; the CRI plugin's sandbox image ckube.local/pause:1 and CNI directories
 * cni_conf_dir and cni_bin_dir) and starts supervising `binary` with it in a thread of
 * its own: started as a child, waited for until its socket accepts, the pause image
 * imported when absent, restarted with back-off when it dies. data_dir is absolute.
 * 0, or -1 after logging why. The caller stops it with ck_cmd_containerd_stop().
 */
int ck_cmd_containerd_start(const char *binary, const char *data_dir, const char *cni_conf_dir,
                            const char *cni_bin_dir, struct ck_cmd_containerd **ret);

/* Its CRI endpoint, "unix:///PATH" (the socket may not answer yet). Owned by c. */
const char *ck_cmd_containerd_endpoint(const struct ck_cmd_containerd *c);

/* Stops containerd (SIGTERM, SIGKILL after 10 s) and the supervisor, and frees c. NULL: no-op. */
void ck_cmd_containerd_stop(struct ck_cmd_containerd *c);

/* ---- the server's node (node.c) ---- */

struct ck_cmd_node_options {
    bool disabled;                                 /* --disable-agent */
    bool disable_proxy;                            /* --disable-proxy */
    bool disable_network_policy;                   /* --disable-network-policy */
    const char *node_name;                         /* NULL: the host name, lowercased */
    const char *runtime;                           /* "cri" or "process"; NULL: cri */
    const char *runtime_endpoint, *image_endpoint; /* NULL: the supervised containerd */
    const char *root_dir;                          /* NULL: DATA-DIR/agent */
    int port;                                      /* the agent's HTTPS port; 0: 10250 */
    const char *data_dir;                          /* the server's */
    const char *pki_dir;      /* the server's; its ca.crt verifies the kubelet client */
    bool own_kubelet_client;  /* --kubelet-client-certificate given: no generated CA */
    const char *node_ip;      /* the node's address: the server's advertise address */
    const char *cluster_cidr; /* the pods' range, for the proxy's masquerading */
    /* pods' DNS: the cluster DNS Service's address (NULL: none) and the cluster domain */
    const char *cluster_dns, *cluster_domain;
    /* the process's informers (the in-process controllers'), for the proxy; NULL: its own */
    struct ck_informer_factory *factory;
};

struct ck_cmd_node;

/*
 * Checks the options (node name, runtime): NULL, or what is wrong for the usage error.
 */
const char *ck_cmd_node_check(const struct ck_cmd_node_options *o);

/*
 * Starts the server's node: its containerd when it needs one, and the agent, which
 * registers the node as soon as server serves (retried every second) and whose informers
 * read from server in-process (it must outlive the node). With the options'
 * runtime unusable (cri, no endpoint, no containerd installed) it logs why and what to
 * do and starts nothing. *ret may be NULL (no node). 0, or -1 after logging why.
 */
int ck_cmd_node_start(struct ck_apiserver *server, const struct ck_cmd_node_options *o,
                      struct ck_cmd_node **ret);

/*
 * Stops the proxy (its rules stay), the agent (its containers keep running) then
 * containerd. NULL: no-op.
 */
void ck_cmd_node_stop(struct ck_cmd_node *n);

/* ---- the server's cluster DNS (cluster_dns.c) ---- */

struct ck_cmd_cluster_dns_options {
    bool disabled;              /* --disable-dns */
    const char *service_ip;     /* the kube-dns Service's cluster IP (--cluster-dns) */
    const char *cluster_domain; /* --cluster-domain; NULL: cluster.local */
    const char *resolv_conf;    /* where forwarded names go; NULL: /etc/resolv.conf */
    /* the process's informers (the in-process controllers'); NULL: the DNS server's own */
    struct ck_informer_factory *factory;
};

struct ck_cmd_cluster_dns;

/*
 * The tenth address of an IPv4 Service range (kubeadm's cluster DNS address:
 * 10.96.0.0/12 gives 10.96.0.10) into buf. 0, or -1 when range is not an IPv4 CIDR
 * with room for it.
 */
int ck_cmd_cluster_dns_ip(const char *service_range, char *buf, size_t size);

/*
 * Starts the DNS server on the server's advertise address, port 53, and (on a thread,
 * until they exist) the kube-dns Service, this server's EndpointSlice of it and the
 * DNS server's role. Disabled, or when it cannot listen there, it logs why and *ret is
 * NULL. 0, or -1 (out of memory, no thread).
 */
int ck_cmd_cluster_dns_start(const struct ck_apiserver *server,
                             const struct ck_cmd_cluster_dns_options *o,
                             struct ck_cmd_cluster_dns **ret);

/* Removes this server's EndpointSlice of kube-dns and stops the DNS server. NULL: no-op. */
void ck_cmd_cluster_dns_stop(struct ck_cmd_cluster_dns *d);

#endif /* CKUBE_CMD_NODE_H */
