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

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ckube/controllers.h"
#include "ckube/rest.h"

/* The kubelet's defaults: NodeLeaseDurationSeconds and its renew interval (a quarter). */
#define CK_FAKE_NODE_LEASE_SECONDS 40
#define CK_FAKE_NODE_RENEW         (10 * CK_SEC)

/* ---- shared by every node agent (node.c) ---- */

/* The Ready, MemoryPressure, DiskPressure and PIDPressure conditions of a healthy node. */
json_t *ck_agent_node_conditions(void);

/* ---- node pressure (pressure.c), measured against evictionHard ---- */

struct ck_threshold {
    bool set;
    int64_t quantity; /* bytes, inodes or pids */
    double percent;   /* of the capacity; <0: the quantity counts */
};

struct ck_pressure_thresholds {
    struct ck_threshold memory_available, nodefs_available, nodefs_inodes_free, pid_available;
};

/*
 * Reads evictionHard ({"memory.available": "100Mi", "nodefs.available": "10%", ...});
 * NULL: the kubelet's 1.32 Linux defaults. Signals with nothing to measure here
 * (imagefs.*) are ignored. 0 or CK_EINVAL.
 */
int ck_pressure_thresholds_parse(const json_t *eviction_hard, struct ck_pressure_thresholds *ret,
                                 struct ck_err *reterr);

/* What the host has: MemAvailable, statvfs of root_dir, pids (bytes, inodes, pids). */
struct ck_pressure_sample {
    int64_t memory_available, memory_capacity;
    int64_t nodefs_available, nodefs_capacity, inodes_free, inodes_capacity;
    int64_t pid_available, pid_capacity;
};
int ck_pressure_measure(const char *root_dir, struct ck_pressure_sample *ret);

struct ck_pressure {
    bool memory, disk, pid;
};
void ck_pressure_evaluate(const struct ck_pressure_thresholds *t,
                          const struct ck_pressure_sample *s, struct ck_pressure *ret);

/* The node's four conditions with these pressures (NULL: none), as the kubelet words them. */
json_t *ck_agent_node_conditions_with(const struct ck_pressure *p);

/* The taints the node lifecycle controller puts on a node under these pressures. */
json_t *ck_agent_pressure_taints(const json_t *taints, const struct ck_pressure *p);

/*
 * Registers node (a full Node object, status included): creates it, or takes over the
 * one that exists and writes its status; then creates (or reads) its Lease in
 * kube-node-lease, owned by the Node, and stores it in *lease_io (the old reference is
 * dropped). 0 or the error of the write that failed.
 */
int ck_agent_register_node(const struct ck_ctl_client *ctl, const json_t *node, json_t **lease_io,
                           struct ck_err *reterr);

/* Renews *lease_io (renewTime now) and stores what the server wrote. CK_ENOENT: no lease. */
int ck_agent_renew_lease(const struct ck_ctl_client *ctl, json_t **lease_io, struct ck_err *reterr);

/* Whether the node's Ready condition is True. */
bool ck_agent_node_ready(const json_t *node);

/* ---- resource limits (limits.c): cgroup v2 when delegated, else rlimits ---- */

/* A container's resources.limits; 0: no limit of that kind. */
struct ck_limits {
    int64_t memory_bytes; /* memory.max, or RLIMIT_DATA */
    int64_t cpu_milli;    /* cpu.max (quota per 100 ms period); no rlimit equivalent */
    int64_t pids;         /* pids.max; no per-container rlimit equivalent */
};

/* Reads limits.cpu, limits.memory and limits.pids of a container's resources. */
void ck_limits_from_container(const json_t *container, struct ck_limits *ret);

/*
 * Finds a delegated cgroup v2 for the agent: the cgroup of /proc/self/cgroup ("0::PATH")
 * under mount (NULL: /sys/fs/cgroup), writable, with cgroup.subtree_control. Moves the
 * processes there into its child "ckube-agent" (a cgroup with controllers enabled for
 * its children may hold no process) and enables memory, cpu and pids for the children.
 * 0 and the directory in buf; else CK_ENOENT and why in reterr (use rlimits).
 */
int ck_cgroup_setup(const char *mount, char *buf, size_t size, struct ck_err *reterr);

/* ---- the process runtime (process.c) ---- */

/* A container to start: argv[0] is looked up in PATH; envp is its whole environment. */
struct ck_proc_spec {
    char *const *argv;
    char *const *envp;
    const char *dir;       /* working directory; NULL: the agent's */
    const char *log_path;  /* CRI-format log, appended to */
    const char *exit_path; /* written when the container ends: "code signal finished_ns oom" */
    /* log rotation as the kubelet's containerLogMaxSize/MaxFiles; 0: never rotated */
    int64_t log_max_size; /* bytes; the log moves to LOG.<YYYYmmdd-HHMMSS> past it */
    int log_max_files;    /* the current log and at most this minus one rotated ones */
    /* resource limits (limits.c): applied in cgroup_dir when given, else as rlimits */
    const struct ck_limits *limits; /* NULL: none */
    const char *cgroup_dir;         /* the container's own cgroup v2 directory, or NULL */
    const char *stdin_path;         /* a FIFO the container's stdin comes from; NULL: /dev/null */
};

/* A started container: its process (and group) and the shim that watches it. */
struct ck_proc {
    pid_t pid;          /* the container, leader of its process group */
    pid_t shim;         /* a child of the agent (reap it with ck_proc_reap) */
    int64_t started_ns; /* the process's start time in clock ticks since boot (/proc) */
};

struct ck_proc_exit {
    int code;            /* exit code; 128 + signal when killed (137, 143) */
    int signal;          /* the signal that killed it, or 0 */
    int64_t finished_ns; /* Unix time in nanoseconds */
    bool oom_killed;     /* its cgroup's memory.events counted an oom_kill */
};

/*
 * Starts spec: returns 0 once the command runs, or CK_EIO with the reason (a command
 * that does not exist, a working directory that cannot be entered) in reterr.
 */
int ck_proc_start(const struct ck_proc_spec *spec, struct ck_proc *ret, struct ck_err *reterr);
/* The process's start time (ticks since boot), -1 when it does not exist. */
int64_t ck_proc_start_time(pid_t pid);
/* Whether pid runs and is the process that started at start_ticks (not a reused pid). */
bool ck_proc_alive(pid_t pid, int64_t start_ticks);
/* Sends sig to the process group of pid (to pid alone when it has none). */
int ck_proc_signal(pid_t pid, int sig);
/* Reads the exit file: 0, CK_ENOENT (still running, or never ran) or CK_EINVAL. */
int ck_proc_read_exit(const char *exit_path, struct ck_proc_exit *ret);
/* Writes an exit file (to a temporary name, then renamed). 0, CK_EINVAL or CK_EIO. */
int ck_proc_write_exit(const char *exit_path, const struct ck_proc_exit *e);
/*
 * Reaps the shims that ended: ck_proc_start's, and those handed to ck__proc_reap_later;
 * never another child (a probe's command, which its thread waits for).
 */
void ck_proc_reap(void);

/* ---- reading a container's log (logread.c), as the kubelet's ReadLogs ---- */

struct ck_log_options {
    bool follow, timestamps;
    int64_t tail_lines;  /* the last N records; <0: all */
    int64_t limit_bytes; /* <=0: no limit */
    int64_t since_ns;    /* Unix time in ns: older records are skipped; 0: none */
};

/* The time from sinceSeconds and sinceTime (either may be NULL): the later; 0: none. */
int64_t ck_log_since(const char *since_seconds, const char *since_time, int64_t now_ns);

struct ck_log_reader;

/*
 * Opens the log at path (the current file; its rotated files path.<time> come first)
 * of a container whose shim writes exit_path when it ends. 0, CK_ENOENT or CK_ENOMEM.
 */
int ck_log_reader_open(const char *path, const char *exit_path, const struct ck_log_options *opts,
                       struct ck_log_reader **ret);

#define CK_LOG_END (-1)
/* Up to max bytes of output: > 0, 0 (follow: nothing yet, come back) or CK_LOG_END. */
ssize_t ck_log_reader_read(struct ck_log_reader *r, char *buf, size_t max);
void ck_log_reader_free(struct ck_log_reader *r);

/* ---- probes (probe.c): exec, httpGet, tcpSocket, and their thresholds ---- */

/* Where a probe runs: the container's environment, directory, address and ports. */
struct ck_probe_target {
    char *const *envp;   /* exec: the container's environment; NULL: empty */
    const char *dir;     /* exec: its working directory; NULL: the agent's */
    const char *host;    /* httpGet and tcpSocket without a host: the pod's IP */
    const json_t *ports; /* the container's ports, for named probe ports */
    /* exec: runs argv in the container instead (a CRI runtime's ExecSync); NULL: on the host */
    bool (*exec)(void *arg, char *const *argv, int64_t timeout_ns, char *msg, size_t size);
    void *exec_arg;
};

/*
 * Runs a probe (a Probe object: exec, httpGet, tcpSocket or grpc, timeoutSeconds) once, on the
 * calling thread, at most timeoutSeconds. True on success; else false and why in msg.
 */
bool ck_probe_run(const json_t *probe, const struct ck_probe_target *target, char *msg,
                  size_t size);

/* A probe's state as the kubelet's prober keeps it. */
struct ck_probe_state {
    const json_t *probe; /* borrowed */
    bool result;         /* the current result (success) */
    int successes, failures;
    int64_t next_at; /* when it is due: started + initialDelaySeconds, then every period */
};

/* Starts the state of probe for a container started at `started`, with result `initial`. */
void ck_probe_state_init(struct ck_probe_state *s, const json_t *probe, int64_t started,
                         bool initial);
/*
 * Records a result at now and schedules the next run (periodSeconds, default 10). 1 when
 * the result turned to success (successThreshold in a row, default 1), -1 when failures
 * reached failureThreshold (default 3), 0 otherwise.
 */
int ck_probe_state_due(struct ck_probe_state *s, int64_t now, bool ok);

/* ---- restart back-off (process.c), the kubelet's: 10 s doubling to 5 min ---- */

#define CK_AGENT_BACKOFF_INITIAL (10 * CK_SEC)
#define CK_AGENT_BACKOFF_MAX     (300 * CK_SEC)

struct ck_agent_backoff {
    int64_t delay;       /* the current delay; 0: none yet */
    int64_t last_update; /* when it was last raised */
};

/*
 * When a container that finished at `finished` may start again: at once the first time
 * or when the back-off was last raised more than 10 min (twice the maximum) before,
 * else after the current delay.
 */
int64_t ck_agent_backoff_restart_at(const struct ck_agent_backoff *b, int64_t finished);
/* A restart at now: the delay starts at 10 s or doubles, up to 5 min. */
void ck_agent_backoff_next(struct ck_agent_backoff *b, int64_t now);

/* ---- the node agent (agent.c), `ckube agent` ---- */

struct ck_list_watch_maker;

struct ck_agent_config {
    struct ck_rest *client; /* borrowed; must outlive the agent */
    const char *node_name;  /* required */
    const char *node_ip;    /* the node's InternalIP (kubelet's --node-ip); NULL: the host's first
                               non-loopback IPv4 address, else 127.0.0.1 */
    const char *root_dir;   /* required; must exist */
    int max_pods;           /* 0: 110 */
    /* the pod workers: how many pods are synced at once (each pod by one at a time);
       0: 4 per online core, at least 8; at most CK_AGENT_POD_WORKERS_MAX */
    int pod_workers;
    int64_t node_status_update_frequency; /* lease renewals; 0: 10 s */
    int port;                             /* the HTTPS endpoint's port; 0: 10250 */
    /* its serving pair (both or neither; neither: self-signed into <root_dir>/pki) */
    const char *tls_cert_file, *tls_private_key_file;
    const char *client_ca_file;     /* client certificates must chain to it; NULL: no check */
    int64_t container_log_max_size; /* containerLogMaxSize; 0: 10Mi; <0: no rotation */
    int container_log_max_files;    /* containerLogMaxFiles; 0: 5 (at least 2) */
    /* CRI: how often running containers' logs are looked at for rotation
       (containerLogMonitorInterval); 0: 10 s; at least 3 s */
    int64_t container_log_monitor_interval;
    const json_t *eviction_hard; /* evictionHard {signal: "100Mi" | "10%"}; NULL:
                                    the kubelet's defaults; borrowed */
    bool no_cgroups;             /* use rlimits even with a delegated cgroup */
    /* the container runtime (--container-runtime): containers through a CRI runtime */
    enum ck_agent_runtime { CK_AGENT_RUNTIME_CRI = 0, CK_AGENT_RUNTIME_PROCESS = 1 } runtime;
    /* CRI: the runtime's and the image service's endpoints ("unix:///path"); NULL: the
       kubelet's default, CK_AGENT_RUNTIME_ENDPOINT, and the runtime's */
    const char *runtime_endpoint, *image_endpoint;
    /* CRI: the CNI configuration written for the node when cni_conf_dir holds none */
    const char *cni_conf_dir; /* NULL: CK_AGENT_CNI_CONF_DIR */
    const char *cni_bin_dir;  /* NULL: CK_AGENT_CNI_BIN_DIR */
    const char *pod_cidr;     /* the node's pod range when its Node still has no spec.podCIDR
                                 two minutes after registering (NULL: none; pods outside
                                 the host network wait for the Node's) */
    /* CRI: the cgroup pods go under (kubelet's --cgroup-root): <root>/kubepods/...; NULL: "/" */
    const char *cgroup_root;
    /* CRI: pods' DNS (kubelet's clusterDNS, clusterDomain, resolvConf) */
    const char *const *cluster_dns; /* the cluster DNS servers' addresses (n_cluster_dns) */
    size_t n_cluster_dns;
    const char *cluster_domain; /* NULL or "": none */
    const char *resolv_conf;    /* the host's resolver file; NULL: CK_AGENT_RESOLV_CONF; "": none */
    /* CRI: the garbage collection of dead containers and sandboxes every period (0: the
       kubelet's ContainerGCPeriod, 1 min; <0: none), under kubelet's GCPolicy: when
       gc_policy_set, the three below, else the kubelet's defaults 0, 1 and -1 */
    int64_t container_gc_period;
    /* how often running pods' volumes are written again from their objects (kubelet's
       syncFrequency); 0: 1 min */
    int64_t sync_frequency;
    bool gc_policy_set;
    int64_t minimum_container_ttl; /* --minimum-container-ttl-duration: MinAge */
    int max_dead_per_container;    /* --maximum-dead-containers-per-container; <0: no limit */
    int max_dead_containers;       /* --maximum-dead-containers; <0: no limit */
    /* the image garbage collection every fifth container GC pass (kubelet's ImageGCPeriod,
       5 min); when gc_policy_set these three, else the kubelet's 85, 80 and 2 min */
    int image_gc_high_threshold; /* percent of the image filesystem; 100: never */
    int image_gc_low_threshold;  /* percent, below high */
    int64_t minimum_image_ttl;   /* --minimum-image-ttl-duration */
    /*
     * Where the pods' and Services' informers list and watch (ckube/informer.h; borrowed,
     * must outlive the agent): NULL, through client (`ckube agent`); `ckube server` gives
     * its own node a maker that reads straight from the server as system:node:NAME, judged
     * by RBAC and the node authorizer as the client's requests are. Every write, and every
     * other read, still goes through client.
     */
    const struct ck_list_watch_maker *list_watch;
};

#define CK_AGENT_POD_WORKERS_MAX  256
#define CK_AGENT_RUNTIME_ENDPOINT "unix:///run/containerd/containerd.sock"
#define CK_AGENT_CNI_CONF_DIR     "/etc/cni/net.d"
#define CK_AGENT_CNI_BIN_DIR      "/usr/lib/cni"
#define CK_AGENT_RESOLV_CONF      "/etc/resolv.conf"

/*
 * TLS bootstrapping (kubelet's --bootstrap-kubeconfig, bootstrap.c): when kubeconfig does
 * not exist or its client certificate has expired, asks the cluster for the node's client
 * certificate (CN system:node:NAME, O system:nodes, signer
 * kubernetes.io/kube-apiserver-client-kubelet) as bootstrap_kubeconfig's user, waits for
 * it and writes it with its key to CERT-DIR/kubelet-client-current.pem and kubeconfig to
 * use it. 0 (also when kubeconfig was usable), or a negative code with *reterr.
 */
struct ck_agent_bootstrap {
    const char *bootstrap_kubeconfig;
    const char *kubeconfig;
    const char *cert_dir;
    const char *node_name;
    long long timeout; /* seconds to wait for the certificate; 0: an hour */
};
int ck_agent_bootstrap(const struct ck_agent_bootstrap *b, struct ck_err *reterr);

struct ck_agent;

/* Checks the configuration. 0, CK_EINVAL or CK_ENOMEM. */
int ck_agent_new(const struct ck_agent_config *config, struct ck_agent **ret,
                 struct ck_err *reterr);
/*
 * Registers the node and starts running the pods bound to it, in the background.
 * Returns 0, or the error that kept the node from being registered (call it again).
 */
int ck_agent_run(struct ck_agent *a, struct ck_err *reterr);
/* Stops the agent and frees it; the containers keep running. NULL: no-op. */
struct ck_agent *ck_agent_free(struct ck_agent *a);
/*
 * The log file of a container (NULL or "": the pod's first) of a pod this agent runs,
 * its previous attempt's when previous. 0 or CK_ENOENT.
 */
int ck_agent_log_path(struct ck_agent *a, const char *ns, const char *pod, const char *container,
                      bool previous, char *buf, size_t size);

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
