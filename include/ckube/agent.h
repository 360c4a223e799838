/*
 * ckube/agent.h - libckube-agent: what stands in for the kubelet.
 *
 * For now the simulated nodes (kwok's idea): one process registers N Nodes, renews
 * their Leases in kube-node-lease and plays kubelet for every pod bound to them, so
 * that thousands of pods can be scheduled and "run" on one machine for tests and
 * benchmarks. It talks only to the API server, and survives the server's restarts (its
 * informers relist, failed writes are retried). docs/internals/agent.md describes it.
 */
#ifndef CKUBE_AGENT_H
#define CKUBE_AGENT_H

#include <stdint.h>

#include "ckube/rest.h"

/* The kubelet's defaults: NodeLeaseDurationSeconds and its renew interval (a quarter). */
#define CK_FAKE_NODE_LEASE_SECONDS 40
#define CK_FAKE_NODE_RENEW         (10 * CK_SEC)

struct ck_fake_nodes_config {
    struct ck_rest *client; /* borrowed; must outlive the simulator */
    int count;              /* nodes to simulate, 1 ... 10000 */
    const char *prefix;     /* node names: prefix + index; NULL: "fake-node-" */
    const char *cpu;        /* capacity and allocatable; NULL: "32" */
    const char *memory;     /* NULL: "256Gi" */
    const char *pods;       /* NULL: "110" */
    int64_t renew_interval; /* lease renewals; 0: CK_FAKE_NODE_RENEW */
    int workers;            /* pods handled at once; 0: 16 */
};

struct ck_fake_nodes;

/* Checks the configuration and prepares the simulator. 0, CK_EINVAL or CK_ENOMEM. */
int ck_fake_nodes_new(const struct ck_fake_nodes_config *config, struct ck_fake_nodes **ret,
                      struct ck_err *reterr);

/*
 * Registers the nodes (creating them, or taking them over when they exist: their status
 * is written again) and their leases, then starts renewing the leases and running pods,
 * in the background. Returns 0, or the error that kept a node from being registered (the
 * server is down: call it again).
 */
int ck_fake_nodes_run(struct ck_fake_nodes *f, struct ck_err *reterr);

/* Stops renewing and running pods and frees. NULL: no-op. */
struct ck_fake_nodes *ck_fake_nodes_free(struct ck_fake_nodes *f);

struct ck_fake_nodes_stats {
    uint64_t started;      /* pods set Running and Ready */
    uint64_t deleted;      /* pods removed after their grace period */
    uint64_t renewals;     /* lease renewals written */
    uint64_t write_errors; /* writes the server refused or missed (retried) */
};
void ck_fake_nodes_stats(struct ck_fake_nodes *f, struct ck_fake_nodes_stats *ret);

#endif /* CKUBE_AGENT_H */
