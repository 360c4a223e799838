/*
 * controllers.h - what main.c needs from controllers.c: the in-process controllers of
 * `ckube server` and the `ckube controller-manager` subcommand.
 */
#ifndef CKUBE_CMD_CONTROLLERS_H
#define CKUBE_CMD_CONTROLLERS_H

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ckube/apiserver.h"
#include "ckube/manager.h"

struct ck_cmd_election;

struct ck_cmd_controllers {
    struct ck_rest *client;
    struct ck_informer_factory *factory;   /* the process's one set of caches */
    struct ck_controller_manager *manager; /* without leader election */
    struct ck_apiserver *server;           /* the informers list and watch from it in-process */
    pthread_mutex_t mu;                    /* guards the component clients */
    struct ck_rest *component_clients[4];  /* of controllers with their own identity */
    char component_users[4][64];           /* whom each acts as */
    size_t n_component_clients;
    struct ck_cmd_election *elections[2]; /* controllers, scheduler: with leader election */
    char identity[320];
};

/*
 * Leader election of a server's in-process controllers (kube-system Leases
 * kube-controller-manager and kube-scheduler). Durations 0: client-go's defaults.
 */
struct ck_cmd_server_election {
    bool enabled;
    const char *identity; /* the holder identity, stable per data directory */
    int64_t lease_duration, renew_deadline, retry_period;
};

/* At most this many controllers have a --concurrent-NAME-syncs flag. */
#define CK_CMD_MAX_SYNCS 32

/*
 * The --concurrent-NAME-syncs flags, one per row of the controller table that names
 * one (kube-controller-manager's), and the values given. Flag option values are
 * first_opt, first_opt + 1, ... in table order.
 */
struct ck_cmd_syncs {
    int first_opt;
    size_t n_flags;
    char flag_names[CK_CMD_MAX_SYNCS][64];                 /* "concurrent-gc-syncs" */
    const char *controllers[CK_CMD_MAX_SYNCS];             /* their table rows' names */
    struct ck_controller_workers values[CK_CMD_MAX_SYNCS]; /* the flags given */
    size_t n_values;
};

/*
 * Fills s from the controller table and appends one getopt_long option per flag to
 * opts[0..] (room for CK_CMD_MAX_SYNCS, not terminated). Returns how many it wrote.
 */
size_t ck_cmd_syncs_init(struct ck_cmd_syncs *s, int first_opt, struct option *opts);

/*
 * Handles opt if it is one of the flags: 1 after recording a valid value (a whole
 * number of workers, 1 to 1000; the last of a repeated flag wins), -1 with why arg is
 * not one in why[size], 0 if opt is not one of them.
 */
int ck_cmd_syncs_flag(struct ck_cmd_syncs *s, int opt, const char *arg, char *why, size_t size);

/* Help lines for the flags, one per flag with its default, into f. */
void ck_cmd_syncs_usage(FILE *f);

/*
 * The node IPAM flags of `ckube server` and `ckube controller-manager`: --cluster-cidr
 * (default 10.244.0.0/16), --node-cidr-mask-size (default 24) and
 * --allocate-node-cidrs (default true in ckube; false leaves the nodeipam controller
 * off). The texts are the flags' values as given (NULL: not given).
 */
struct ck_cmd_node_ipam {
    const char *cluster_cidr, *mask_size, *allocate;
    int node_cidr_mask_size; /* parsed by ck_cmd_node_ipam_check */
    char selection[512];     /* --controllers, with nodeipam off when not allocating */
};

/*
 * Parses and validates the flags as kube-controller-manager does (the mask against the
 * cluster CIDR) when selection runs nodeipam, and fills n->selection. 0, or -1 with
 * why[size].
 */
int ck_cmd_node_ipam_check(struct ck_cmd_node_ipam *n, const char *selection, char *why,
                           size_t size);

/* Help lines for the three flags, into f. */
void ck_cmd_node_ipam_usage(FILE *f);

/*
 * Starts the selected controllers against server, in this process, over
 * HTTP(S) as any client: with TLS as system:kube-controller-manager with a
 * client certificate of its own (the scheduler as system:kube-scheduler, with
 * no client-side rate limit). With election enabled they run only while this
 * server holds their Lease, and campaign again when they lose it. 0, or -1
 * after printing why.
 */
/*
 * A client of server in this process acting as cn in group org (NULL: none); with TLS
 * a client certificate of its own under file_base in the server's pki. Limited to qps
 * and burst (qps < 0: no limit). 0, or -1 with *reterr.
 */
int ck_cmd_component_client(const struct ck_apiserver *server, const char *file_base,
                            const char *cn, const char *org, double qps, int burst,
                            struct ck_rest **ret, struct ck_err *reterr);

/*
 * csrsigning's CA and duration (--cluster-signing-cert-file, -key-file, -duration):
 * the files as given (NULL: not given) and the duration in seconds (0: one year).
 */
struct ck_cmd_signing {
    const char *cert_file, *key_file;
    long long duration;
};

/* Parses --cluster-signing-duration into s: 0, or -1 when it is no positive duration. */
/*
 * The /metrics text of the process's informer caches (ckube_informer_caches and
 * ckube_informer_cached_objects, by group and resource): what `ckube server` adds to its
 * exposition to show that its components share one cache. A malloc'ed text, or NULL.
 */
char *ck_cmd_informer_census_metrics(void *unused);

int ck_cmd_signing_duration(struct ck_cmd_signing *s, const char *text);

int ck_cmd_controllers_start(struct ck_apiserver *server, const char *selection,
                             const struct ck_cmd_syncs *syncs, int64_t node_monitor_grace_period,
                             int64_t resource_quota_sync_period, const struct ck_hpa_options *hpa,
                             const struct ck_cmd_server_election *election,
                             const struct ck_cmd_node_ipam *ipam,
                             const struct ck_cmd_signing *signing, struct ck_cmd_controllers *ret);
void ck_cmd_controllers_stop(struct ck_cmd_controllers *c);

/* "host_<uuid>", a new leader-election identity as kube-controller-manager's, in buf. */
void ck_cmd_election_identity(char *buf, size_t size);

/* `ckube controller-manager ...` (argv[0] is "controller-manager"); returns the exit code. */
int ck_cmd_controller_manager(int argc, char **argv);

/* `ckube scheduler ...` (argv[0] is "scheduler"); returns the exit code. */
int ck_cmd_scheduler(int argc, char **argv);

/* `ckube fake-nodes ...` (argv[0] is "fake-nodes"); returns the exit code. */
int ck_cmd_fake_nodes(int argc, char **argv);
/* `ckube agent` (agent.c): the node agent. */
int ck_cmd_agent(int argc, char **argv);

/*
 * kube-controller-manager's --horizontal-pod-autoscaler-* flags, which `ckube server`
 * and `ckube controller-manager` both take: their names (without the dashes), and the
 * value of the which-th read into o (false when it is not a valid one).
 */
#define CK_CMD_HPA_FLAGS 5
extern const char *const ck_cmd_hpa_flag_names[CK_CMD_HPA_FLAGS];
bool ck_cmd_hpa_flag(int which, const char *value, struct ck_hpa_options *o);
/* Their lines of a usage text. */
extern const char ck_cmd_hpa_usage[];

/* From main.c: a Go duration ("40s", "1h30m") in nanoseconds; false when it is not one. */
bool ck_cmd_parse_duration(const char *s, int64_t *ret);

/* `ckube certs client ...` (argv[0] is "certs", certs.c); returns the exit code. */
int ck_cmd_certs(int argc, char **argv);

/* From main.c: blocks SIGINT and SIGTERM for sigwait() and ignores SIGPIPE. */
void ck_cmd_block_stop_signals(sigset_t *ret_set);

/*
 * From main.c: applies -v N (verbosity true) or --logging-format F. NULL, or
 * what a valid value looks like.
 */
const char *ck_cmd_log_flag(bool verbosity, const char *arg);

#endif /* CKUBE_CMD_CONTROLLERS_H */
