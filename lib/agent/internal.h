/*
 * internal.h - what lib/agent's files share and nothing else sees.
 */
#ifndef CKUBE_AGENT_INTERNAL_H
#define CKUBE_AGENT_INTERNAL_H

#include <limits.h>
#include <microhttpd.h>

#include "ckube/agent.h"
#include "ckube/controllers.h"
#include "ckube/internal/util.h"

/* The agent endpoint's TLS (tls.c): PEM text of the serving pair and of the client CA. */
struct ck__agent_tls {
    char *cert, *key;
    char *client_ca; /* NULL: no client certificate is asked for */
};

/*
 * Reads the serving pair of config (--tls-cert-file/--tls-private-key-file), or signs one
 * for the node and address into <root_dir>/pki (reused while valid), and the client CA.
 */
int ck__agent_tls_load(const struct ck_agent_config *config, const char *root_dir,
                       const char *address, struct ck__agent_tls *ret, struct ck_err *reterr);
void ck__agent_tls_release(struct ck__agent_tls *tls);
/* 0 when the connection's client certificate is valid for the client CA; else CK_EPERM. */
int ck__agent_tls_check_client(struct MHD_Connection *conn, bool required);

/*
 * Starts the agent's HTTPS endpoint (logserver.c: logs and exec) for a on address:port,
 * or NULL when the port cannot be had. The daemon copies nothing: tls must outlive it.
 * Stop it with MHD_stop_daemon() before freeing a, then free *ret_context.
 */
struct MHD_Daemon *ck__agent_log_server_start(struct ck_agent *a, const char *address, int port,
                                              const struct ck__agent_tls *tls, void **ret_context);

/*
 * The environment (NULL-terminated "NAME=value" strings) and working directory a running
 * container of a pod got, both malloc'd, for exec. 0, CK_ENOENT (no such pod, or the
 * container does not run), CK_EINVAL (a CRI runtime's container: not a host process) or
 * CK_ENOMEM.
 */
int ck__agent_container_env(struct ck_agent *a, const char *ns, const char *pod,
                            const char *container, char ***ret_env, char **ret_dir);

/*
 * The URL of the runtime's streaming server for exec of argv in a running container of a
 * pod (the runtime's exec_url). 0 and *ret_url (caller frees); CK_ENOENT (no such pod, or
 * the container does not run), CK_EINVAL (a runtime without one: the process runtime's
 * exec runs on the host, ck__agent_container_env) or the runtime's error with reterr.
 */
int ck__agent_container_exec_url(struct ck_agent *a, const char *ns, const char *pod,
                                 const char *container, char *const *argv, bool want_stdin,
                                 bool tty, char **ret_url, struct ck_err *reterr);

/* ---- resource metrics (resource_metrics.c) ---- */

/* A running container as the resource metrics name and ask the runtime for it. */
struct ck__rt_stats_ref {
    char ns[254], pod[254], uid[64], name[254]; /* its pod and its own name */
    int attempt;
    char id[192];         /* its containerID as the runtime's start gave it */
    int64_t started_ns;   /* Unix time in ns; 0 unknown */
    char sandbox_id[128]; /* its pod's sandbox ("" none) */
};

/*
 * CPU and memory of one container, or of the node, as kubelet's summary holds them
 * (CPUStats.usageCoreNanoSeconds, MemoryStats.workingSetBytes) with the time of each
 * sample (Unix ns). has_cpu and has_memory false: not known.
 */
struct ck__rt_stats {
    bool has_cpu, has_memory;
    int64_t cpu_time, memory_time;
    uint64_t cpu_core_ns;       /* cumulative, in core-nanoseconds */
    uint64_t working_set_bytes; /* usage less inactive file pages */
};

/*
 * The running containers of the agent's pods (not of terminating pods), as a malloc'd
 * array (caller frees) of *ret_n; NULL with *ret_n 0 when none or out of memory. Takes
 * the pod table's lock for the copy only.
 */
struct ck__rt_stats_ref *ck__agent_running_containers(struct ck_agent *a, size_t *ret_n);

/* The container runtime the agent drives (its container_stats op is called outside locks). */
struct ck__runtime *ck__agent_runtime(struct ck_agent *a);

/*
 * The node's CPU (the "cpu" line of proc_stat: all but idle and iowait, in USER_HZ) and
 * working set (meminfo's MemTotal - MemFree - Inactive(file)) at now (Unix ns). NULL
 * paths: /proc/stat, /proc/meminfo. Fields it cannot read stay unknown.
 */
void ck__node_stats_read(const char *proc_stat, const char *meminfo, int64_t now,
                         struct ck__rt_stats *ret);

/*
 * The CPU and working set of a cgroup v2 directory (cpu.stat's usage_usec; memory.current
 * less memory.stat's inactive_file, as cAdvisor's working set), sampled at now. Fields it
 * cannot read stay unknown.
 */
void ck__cgroup_stats_read(const char *dir, int64_t now, struct ck__rt_stats *ret);

/*
 * The CPU (utime + stime of each, with cutime + cstime of the leader: its ended
 * children) and resident memory of process group pgid, summed over proc's <pid>/stat
 * files (proc NULL: /proc), sampled at now. Unknown when no process of the group is
 * found.
 */
void ck__pgroup_stats_read(const char *proc, int pgid, int64_t now, struct ck__rt_stats *ret);

/*
 * kubelet's /metrics/resource in the Prometheus text format (version 0.0.4), as its
 * resource metrics collector writes it: node_cpu_usage_seconds_total,
 * node_memory_working_set_bytes, container_start_time_seconds,
 * container_cpu_usage_seconds_total, container_memory_working_set_bytes (labels
 * container, namespace, pod), pod_cpu_usage_seconds_total and pod_memory_working_set_bytes
 * (namespace, pod; the pod's own figures where pods gives them, else the sums of its
 * containers'), resource_scrape_error (scrape_error, deprecated since 1.29, is hidden in
 * 1.32 and not written). Samples carry their time in milliseconds. stats[i] and pods[i]
 * (NULL: none) belong to refs[i]; scrape_error: the runtime failed (then n is 0). 0, or
 * CK_ENOMEM.
 */
int ck__resource_metrics_render(struct ck__buf *out, const struct ck__rt_stats *node,
                                const struct ck__rt_stats_ref *refs,
                                const struct ck__rt_stats *stats, const struct ck__rt_stats *pods,
                                size_t n, bool scrape_error);

/* GET /metrics/resource on the agent's endpoint. */
enum MHD_Result ck__agent_serve_resource_metrics(struct ck_agent *a, struct MHD_Connection *conn);

/* What `kubectl attach` reaches of a running container (ck__agent_container_attach). */
struct ck__attach_target {
    bool tty;  /* the container's spec.tty: attach's tty, as the kubelet takes it */
    char *url; /* a CRI runtime's streaming URL for the container's stdio (caller frees) */
    /* without a url (the process runtime): its current log, the exit file that ends it,
       and the FIFO of its stdin ("" for a container without spec.stdin) */
    char log_path[4096], exit_path[4200], stdin_path[4200];
};
/*
 * Where an attach to a running container of a pod goes. 0 and *ret; CK_ENOENT (no such
 * pod, or the container does not run) or the runtime's error with reterr.
 */
int ck__agent_container_attach(struct ck_agent *a, const char *ns, const char *pod,
                               const char *container, bool want_stdin,
                               struct ck__attach_target *ret, struct ck_err *reterr);
/*
 * Where port-forward to port of a running pod goes (kubelet's GetPortForward): the pod's
 * uid into uid, and for a runtime with a streaming server (CRI) its URL for the pod's
 * sandbox (0 and *ret_url, the caller frees it). CK_ENOENT: no such pod runs here;
 * CK_EINVAL: the runtime has none, the pod is on the host's network (process); else the
 * runtime's error with reterr.
 */
int ck__agent_pod_port_forward_url(struct ck_agent *a, const char *ns, const char *pod, int port,
                                   char *uid, size_t uid_size, char **ret_url,
                                   struct ck_err *reterr);

/* ---- exec into a CRI container (cri_stream.c) ---- */

/*
 * A WebSocket (v4.channel.k8s.io) client of the runtime's streaming server, relaying a
 * session's records: its output and Status out, stdin and resize in.
 */
struct ck__cri_stream;
/*
 * Connects to url (the Exec call's answer) and upgrades. 0 and *ret (free it with
 * ck__cri_stream_free()), or CK_EIO / CK_EINVAL / CK_ENOMEM with why in msg.
 */
int ck__cri_stream_open(const char *url, bool tty, struct ck__cri_stream **ret, char *msg,
                        size_t size);
/*
 * Connects to url (the PortForward call's answer with ?port=N) for port-forward: the
 * output's records are 1 (the port's bytes) and 3 (the runtime's error text), with no
 * Status at the end; the input is stdin records (the port's bytes) and the close of
 * stdin, which, v4 having no half-close, closes the stream once the port was quiet a
 * second. Else as ck__cri_stream_open().
 */
int ck__cri_stream_open_port_forward(const char *url, struct ck__cri_stream **ret, char *msg,
                                     size_t size);
/*
 * The output as session records (any number of bytes of them, records may be cut) into
 * buf: channels 1, 2 and last 3 (the runtime's Status, or ours when the stream ended
 * without one); -1 at the end; 0 when nothing came within a second. One reader thread.
 */
ssize_t ck__cri_stream_read(struct ck__cri_stream *s, char *buf, size_t max);
/* One input record: stdin, resize or close (the end of stdin). Waits until it was sent. */
void ck__cri_stream_input(struct ck__cri_stream *s, unsigned ch, const unsigned char *data,
                          size_t n);
/*
 * Marks s as an attach: when it is closed after the end of stdin, the attach ended as the
 * runtime ends one whose stdin ended, which the streaming server reports as Success.
 */
void ck__cri_stream_set_attach(struct ck__cri_stream *s);
/* Ends the stream (the session ended): the runtime then ends the command's streams. */
void ck__cri_stream_shutdown(struct ck__cri_stream *s);
/* Closes the connection and frees s; NULL is a no-op. Returns NULL. */
struct ck__cri_stream *ck__cri_stream_free(struct ck__cri_stream *s);
/*
 * Checks the first n bytes of the streaming server's answer to the upgrade: 0 when the
 * headers have not all come yet, 1 for a 101 answer (*ret_len: the length of its headers,
 * after which the WebSocket begins), or CK_EIO with why in msg (not a 101, or headers
 * over 8 KiB).
 */
int ck__ws_upgrade_answer(const char *buf, size_t n, size_t *ret_len, char *msg, size_t size);

/* ---- exec sessions (exec.c) ---- */

#define CK_EXEC_SESSION_ID_MAX 64

struct ck__exec_session;
struct ck__exec_spec {
    const char *id; /* chosen by the API server, at most CK_EXEC_SESSION_ID_MAX bytes */
    char *const *argv;
    char *const *envp;
    const char *dir;
    bool want_stdin, tty;
    struct ck__cri_stream *cri; /* not NULL: the command runs in a CRI container (taken) */
    /* not NULL: an attach to a host process, no command: the text of its log's new
       records comes out on stdout (taken), and stdin goes to in_fd (taken; -1: none) */
    struct ck_log_reader *log;
    int in_fd;
};
/*
 * Starts the command of spec (a shim's child in its own session; a pty with tty), or
 * attaches to spec's log and stdin, and registers the session under its id. 0; CK_EEXIST, CK_ENOMEM
 * or CK_EIO with why in msg.
 */
int ck__exec_session_start(const struct ck__exec_spec *spec, struct ck__exec_session **ret,
                           char *msg, size_t size);
pid_t ck__exec_session_pid(const struct ck__exec_session *s);
/*
 * The next output record(s) into buf (max > 1100): a record on channel 1 or 2, the
 * Status on channel 3 once the output ended, then -1 (MHD's end of stream); 0 when
 * nothing came within a second.
 */
ssize_t ck__exec_session_read(struct ck__exec_session *s, char *buf, size_t max);
/* Kills what is left of the command's process group and forgets the session. */
void ck__exec_session_end(struct ck__exec_session *s);

/* The input side of the session named id (stdin, resize, close records), or NULL. */
struct ck__exec_input;
struct ck__exec_input *ck__exec_input_new(const char *id);
/* Acts on the whole records among data; returns how many bytes it took. */
size_t ck__exec_input_take(struct ck__exec_input *in, const void *data, size_t n);

/*
 * The state of a request of the agent's endpoint that lives across libmicrohttpd's calls
 * (an upload): its first member, so that the request's end (logserver.c) can free it
 * whatever it is.
 */
struct ck__agent_req {
    void (*done)(struct ck__agent_req *req);
};

/* An answer of the agent's endpoint: status and msg as the body (copied). */
enum MHD_Result ck__agent_answer(struct MHD_Connection *conn, unsigned status, const char *msg);
/*
 * A 200 answer of content_type streamed by read(cls) in blocks of block bytes; done(cls)
 * when it ends, also when it cannot be made (then a 500).
 */
enum MHD_Result ck__agent_answer_stream(struct MHD_Connection *conn, const char *content_type,
                                        size_t block, MHD_ContentReaderCallback read, void *cls,
                                        MHD_ContentReaderFreeCallback done);

/* portforward.c: GET /portForward/{namespace}/{pod}?port=N&session=ID connects and streams. */
enum MHD_Result ck__agent_port_forward_start(struct ck_agent *a, struct MHD_Connection *conn,
                                             const char *url);
/* portforward.c: POST /portForwardInput/{session}, the bytes for the port; *req its state. */
enum MHD_Result ck__agent_port_forward_input(struct MHD_Connection *conn, const char *url,
                                             const char *upload, size_t *upload_size, void **req);

/* exec.c: GET /exec/{namespace}/{pod}/{container} starts a session and streams it. */
enum MHD_Result ck__agent_exec_start(struct ck_agent *a, struct MHD_Connection *conn,
                                     const char *url);
/* exec.c: GET /attach/{namespace}/{pod}/{container} attaches a session to its stdio. */
enum MHD_Result ck__agent_attach_start(struct ck_agent *a, struct MHD_Connection *conn,
                                       const char *url);
/*
 * exec.c: POST /execInput/{session} or /attachInput/{session}, the session's stdin; *req
 * is the request's state.
 */
enum MHD_Result ck__agent_exec_input(struct MHD_Connection *conn, const char *url,
                                     const char *upload, size_t *upload_size, void **req);
/* Ends the input side (the end of the session) and frees it. NULL: no-op. */
void ck__agent_exec_input_done(void *req);

/* ---- podconfig.c: ConfigMaps and Secrets in env and volumes ---- */

/* Where a pod's references are read: its namespace, and its downward API values. */
struct ck__pod_refs {
    const struct ck_ctl_client *ctl;
    const char *ns;
    char *(*field_ref)(void *arg, const char *field_path);            /* malloc'd, or NULL */
    void (*warn)(void *arg, const char *reason, const char *message); /* a Warning event */
    void *arg;
    /*
     * POSTs the TokenRequest request for the pod's ServiceAccount sa
     * (serviceaccounts/SA/token in ns) and sets *ret to the answer (caller frees).
     * 0, or a negative code with *reterr. NULL: serviceAccountToken projections fail.
     */
    int (*request_token)(void *arg, const char *sa, const json_t *request, json_t **ret,
                         struct ck_err *reterr);
};

/* An environment being built: v[n] is NULL. */
struct ck__env {
    char **v;
    size_t n;
};

/* Adds (or replaces) name=value. 0 or CK_ENOMEM. */
int ck__env_add(struct ck__env *env, const char *name, const char *value);
/*
 * Adds a container's envFrom, then its env entries that reference a ConfigMap or a
 * Secret. 0, or the error (the kubelet's message) that makes the container's
 * CreateContainerConfigError.
 */
int ck__env_from_refs(const struct ck__pod_refs *refs, const json_t *container, struct ck__env *env,
                      struct ck_err *reterr);
void ck__env_free(struct ck__env *env);

/*
 * Adds the environment variables of Service svc (kubelet's envvars.FromServices):
 * NAME_SERVICE_HOST, NAME_SERVICE_PORT (its first port), NAME_SERVICE_PORT_<PORTNAME>
 * for named ports, NAME_PORT and NAME_PORT_<N>_<PROTO>[_PROTO|_PORT|_ADDR]; names upper
 * case with '-' as '_'. Nothing for a headless Service. 0 or CK_ENOMEM.
 */
int ck__service_env(const json_t *svc, struct ck__env *env);
/*
 * Adds the service link variables of a pod in namespace ns (kubelet's
 * getServiceEnvVarMap): those of the master Service default/kubernetes always, and with
 * enable_links (the pod's enableServiceLinks) those of every Service of ns; Services
 * without a cluster IP give none; a name ns shares with the master Service is ns's.
 * svcs[0..n) may hold Services of any namespace. 0 or CK_ENOMEM.
 */
int ck__service_links_env(const json_t *const *svcs, size_t n, const char *ns, bool enable_links,
                          struct ck__env *env);

/*
 * Writes a configMap, secret, downwardAPI or projected volume's files into dir (other
 * kinds: nothing); a projected serviceAccountToken source through refs->request_token.
 * 0, or the error that keeps the pod from starting.
 */
/* A serviceAccountToken projection's expirationSeconds when it names none (Kubernetes' default). */
#define CK__TOKEN_DEFAULT_EXPIRATION 3600

/*
 * The TokenRequest a serviceAccountToken projection src asks for the pod pod_name/pod_uid:
 * its expirationSeconds, its audience (none: the API server's), bound to the pod. New
 * reference, NULL out of memory.
 */
json_t *ck__token_request_body(const json_t *src, const char *pod_name, const char *pod_uid);

int ck__volume_write(const struct ck__pod_refs *refs, const json_t *vol, const char *dir,
                     struct ck_err *reterr);

/*
 * The rotated files of the container log at path (path.<YYYYmmdd-HHMMSS>...), as paths,
 * oldest first (their names sort by time); the ones being written (.tmp) only when
 * with_tmp. Caller frees each and the array; NULL with *ret_n 0 when there are none.
 * logread.c reads them; process.c removes the excess.
 */
char **ck__log_rotated_files(const char *path, bool with_tmp, size_t *ret_n);

/* ---- container log rotation (logrotate.c) ---- */

/* Reopens a container's log (CRI ReopenContainerLog): 0, or the error with reterr. */
typedef int (*ck__log_reopen_fn)(void *arg, struct ck_err *reterr);
/*
 * One pass of the kubelet's log rotation over a running container's log at path: when it
 * is missing, reopen is called; when it is at least max_size bytes (<0: never), the
 * files path.* are tidied (a failed rotation's leftovers removed, the oldest removed down
 * to max_files - 2, the others gzipped), path becomes path.<YYYYmmdd-HHMMSS> of now_s
 * (UTC) and reopen is called, the rename undone when it fails. 1 rotated, 0 nothing to
 * do, or a negative code with reterr.
 */
int ck__log_rotate(const char *path, int64_t max_size, int max_files, int64_t now_s,
                   ck__log_reopen_fn reopen, void *arg, struct ck_err *reterr);
/*
 * Whether the rotated file name (among names[0..n), the files path.*) holds log lines
 * still: not a .tmp, and not a file whose name.gz exists (the kubelet's isInUse).
 */
bool ck__log_file_in_use(const char *name, char *const *names, size_t n);
/* A rotated log for reading: a .gz one decompressed into a temporary file. NULL: errno. */
FILE *ck__log_open_rotated(const char *path);

/* ---- image pull credentials (keyring.c) -------------------------------------------- */

/* A registry's credentials as a pull secret gives them. */
struct ck__cred {
    char *username, *password;
};
struct ck__keyring_entry {
    char *key; /* host, or host and path ("quay.io/coreos"); a host part may be a glob */
    struct ck__cred cred;
};
/* The credentials of a pod's pull secrets, in the secrets' order. Zero it to start. */
struct ck__keyring {
    struct ck__keyring_entry *v;
    size_t n;
};
/*
 * Adds the registries of a Secret of type kubernetes.io/dockerconfigjson or
 * kubernetes.io/dockercfg (other types: nothing). 0; CK_EINVAL when its config is
 * malformed (kubelet then fails the pull with that error), CK_ENOMEM.
 */
int ck__keyring_add_secret(struct ck__keyring *k, const json_t *secret, struct ck_err *reterr);
/*
 * The credentials a pull of the repository (ck__image_repository) tries, in kubelet's
 * order: up to max pointers into k into ret; their count (0: pull without).
 */
size_t ck__keyring_lookup(const struct ck__keyring *k, const char *repo,
                          const struct ck__cred **ret, size_t max);
void ck__keyring_release(struct ck__keyring *k);
/*
 * An image's repository as kubelet looks credentials up for it: without tag or digest,
 * docker.io's short names in full ("busybox": "docker.io/library/busybox"). malloc'd,
 * or NULL.
 */
char *ck__image_repository(const char *image);

/* ---- the runtime interface (runtime_process.c, runtime_cri.c) --------------------- */

/*
 * What agent.c's pod logic asks of a container runtime, written once for both: the
 * process runtime (host processes under a shim) and the CRI runtime (a pod sandbox and
 * containers through k8s.io/cri-api). Calls come from the supervisor thread only.
 */

/* A pod as a runtime sees it. */
struct ck__rt_pod {
    const char *uid, *ns, *name;
    const char *dir; /* <root-dir>/pods/<uid>: volumes/, containers/<name>/<attempt>.log */
    const json_t *pod;
    char sandbox_id[128]; /* the pod's sandbox ("" none yet) */
    char ip[64];          /* the pod's IP once its sandbox runs */
};

/* One attempt of a container. */
struct ck__rt_start {
    const char *name;
    int attempt;
    const json_t *spec;                 /* the container of the pod's spec */
    char *const *command, *const *args; /* $(VAR)-expanded; NULL: the image's */
    char *const *envp;                  /* the container's env ("NAME=value") */
    const char *log_path;               /* <dir>/containers/<name>/<attempt>.log */
    /* the pod's pull back-off of the image holds: an image that must be pulled is not
       (ImagePullBackOff), as the kubelet's image manager says */
    bool pull_backoff;
};

/* What the runtime knows of an attempt. */
struct ck__rt_state {
    bool running;             /* false: it ended, exit says how */
    struct ck_proc_exit exit; /* code, signal, finish time, OOM kill */
    int64_t started_ns;       /* Unix time in ns */
    char image_ref[256];      /* the status's imageID ("" unknown) */
};

/* The runtime's part of the node's status (node_status). */
struct ck__rt_node_status {
    bool ready;        /* false: the node's Ready is False, reason KubeletNotReady */
    char message[768]; /* then kubelet's message: "container runtime is down", ... */
    json_t *images;    /* status.images (owned; NULL: none to report) */
};

struct ck__runtime;
/*
 * The container garbage collection's policy (kubelet's GCPolicy, its flags
 * --minimum-container-ttl-duration, --maximum-dead-containers-per-container and
 * --maximum-dead-containers).
 */
struct ck__rt_gc_policy {
    int64_t min_age;           /* ns: younger dead containers stay (kubelet's 0) */
    int max_per_pod_container; /* dead ones kept per (pod, container name); <0: no limit (1) */
    int max_containers;        /* dead ones kept on the node; <0: no limit (-1) */
};

/* The image garbage collection's policy (kubelet's ImageGCPolicy). */
struct ck__rt_image_gc_policy {
    int high_threshold; /* percent of the image filesystem: collect from here (85; 100: never) */
    int low_threshold;  /* percent: collect down to here (80) */
    int64_t min_age;    /* ns: images first seen less long ago stay (2 min) */
};

/* A container the agent runs: attempts >= attempt_from are never removed. */
struct ck__rt_gc_keep {
    const char *uid, *name;
    int attempt_from;
};

/* One container as gc.c sees it. */
struct ck__gc_container {
    const char *id; /* the caller's: ck__gc_select() leaves it alone */
    const char *pod_uid, *name;
    int attempt;
    bool running;       /* kubelet never evicts a running one */
    bool unknown;       /* the runtime does not know its state: stopped before its removal */
    bool kept;          /* the agent still serves it (its current attempt, the previous one) */
    int64_t created_at; /* ns since the epoch */
    bool evict;         /* set by ck__gc_select() */
};

/*
 * Marks (evict) the containers of c[0..n) that the container GC removes under policy at
 * time now (ns since the epoch), as kubelet's evictContainers chooses them; their number
 * into *ret_n. gc.c says how. 0, or CK_ENOMEM (nothing marked).
 */
int ck__gc_select(struct ck__gc_container *c, size_t n, const struct ck__rt_gc_policy *policy,
                  int64_t now, size_t *ret_n);

/* One image as the image GC sees it. */
struct ck__gc_image {
    const char *id;
    uint64_t size;
    bool in_use;            /* by a container the runtime has, or the runtime's sandboxes */
    bool pinned;            /* the runtime says so (Image.pinned) */
    int64_t first_detected; /* ns since the epoch: when the agent first listed it */
    int64_t last_used;      /* ns since the epoch: when the agent last saw it in use */
    bool remove;            /* set by ck__image_gc_select() */
};

/*
 * Marks (remove) the images of img[0..n) that kubelet's image GC removes to free
 * bytes_to_free, MinAge min_age, at now; the sum of their sizes into *ret_freed (less
 * than bytes_to_free when not enough may go). 0, or CK_ENOMEM (nothing marked).
 */
int ck__image_gc_select(struct ck__gc_image *img, size_t n, uint64_t bytes_to_free, int64_t min_age,
                        int64_t now, uint64_t *ret_freed);

struct ck__runtime_ops {
    const char *name; /* "process", "cri" */
    /* How often a running container's state is read (kubelet's PLEG relist: 1 s); 0: each tick. */
    int64_t relist_period;
    /* The node's containerRuntimeVersion: "<runtime name>://<version>". */
    void (*version)(struct ck__runtime *rt, char *buf, size_t size);
    /*
     * Makes the pod's sandbox, or finds it (after a restart): sets p->sandbox_id and
     * p->ip. 0; else the pod waits, with reason and reterr as its containers' state.
     */
    int (*pod_start)(struct ck__runtime *rt, struct ck__rt_pod *p, char *reason, size_t size,
                     struct ck_err *reterr);
    /* Removes the pod's containers and sandbox once none runs (idempotent). */
    void (*pod_remove)(struct ck__runtime *rt, struct ck__rt_pod *p);
    /*
     * Removes what the runtime has of pods that are not among the n uids (pods deleted
     * while the agent was away, or never taken up again): kubelet's removal of orphaned
     * sandboxes. NULL: the runtime keeps nothing of its own.
     */
    void (*remove_orphans)(struct ck__runtime *rt, const char *const *uids, size_t n);
    /*
     * Starts an attempt (pulling its image as its policy says): its id (a containerID,
     * "process://123", "containerd://...") into id. Else a waiting reason
     * (RunContainerError, ErrImagePull, ErrImageNeverPull, ...) and reterr.
     */
    int (*start)(struct ck__runtime *rt, struct ck__rt_pod *p, const struct ck__rt_start *s,
                 char *id, size_t id_size, char *reason, size_t reason_size, struct ck_err *reterr);
    /* The state of attempt `attempt` of container name (id as start gave). CK_ENOENT: gone. */
    int (*state)(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name, int attempt,
                 const char *id, struct ck__rt_state *ret);
    /* The newest attempt of container name the runtime has (after a restart): CK_ENOENT none. */
    int (*find)(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name,
                int *ret_attempt, char *id, size_t id_size);
    /* Stops it: the stop signal, the kill after grace_s; 0: killed at once. Returns at once. */
    void (*stop)(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *id,
                 int64_t grace_s);
    /*
     * Runs argv in the container (probes, hooks) within timeout_ns: 0 and its exit code,
     * else CK_ETIMEDOUT or CK_EIO with why in msg. envp and dir: the container's (process).
     */
    int (*exec)(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *id,
                char *const *argv, char *const *envp, const char *dir, int64_t timeout_ns,
                int *ret_code, char *msg, size_t size);
    /*
     * The runtime's readiness and images for the node's status, as kubelet's Ready
     * condition and Images setters see them; the caller frees ret->images. Called from
     * the node status thread (only), while pods go on: it touches nothing pods use.
     */
    void (*node_status)(struct ck__runtime *rt, struct ck__rt_node_status *ret);
    /*
     * The node's pod range (kubelet's UpdateRuntimeConfig): pods started from now on take
     * their addresses from it; until the first call none outside the host network starts.
     * 0 (the same range again too); CK_EINVAL for a range the runtime cannot use;
     * CK_EPERM when it differs from the range that sandboxes in the pod network still
     * hold (the current one, or after a restart the one the runtime's network was made
     * for): the range is not changed, and reterr says why. Called from the node status
     * thread. NULL: the runtime gives pods the host's network.
     */
    int (*set_pod_cidr)(struct ck__runtime *rt, const char *cidr, struct ck_err *reterr);
    /*
     * One pass of the container garbage collection (kubelet's GarbageCollect): the dead
     * containers of the agent's pods (the keep[0..n_keep) list names them and what
     * stays) that policy evicts, with their logs, oldest first; then their pods'
     * NOTREADY sandboxes without containers but the newest. Pods not in keep are left to
     * pod_remove and remove_orphans. Blocks on the runtime: called from the agent's GC
     * thread. NULL: the runtime keeps nothing dead.
     */
    void (*gc)(struct ck__runtime *rt, const struct ck__rt_gc_policy *policy,
               const struct ck__rt_gc_keep *keep, size_t n_keep);
    /*
     * One pass of the image garbage collection (kubelet's image GC manager): when the
     * image filesystem is used to policy->high_threshold percent or more, removes unused
     * images, least recently used first, until it is below low_threshold. 0; else the
     * error (kubelet's words) with *ret_short true when the pass ran but could not free
     * enough (FreeDiskSpaceFailed). Called from the GC thread only (it keeps the
     * images' first and last use between passes). NULL: the runtime has no images.
     */
    int (*image_gc)(struct ck__runtime *rt, const struct ck__rt_image_gc_policy *policy,
                    bool *ret_short, struct ck_err *reterr);
    /*
     * The URL of the runtime's streaming server for `kubectl exec` of argv in container
     * id (stdout always, stderr without a tty): 0 and *ret_url (caller frees), else the
     * error with reterr. Called from the agent's server threads, not the supervisor's.
     * NULL: exec runs on the host (the process runtime).
     */
    int (*exec_url)(struct ck__runtime *rt, const char *id, char *const *argv, bool want_stdin,
                    bool tty, char **ret_url, struct ck_err *reterr);
    /*
     * One pass of the container log rotation (kubelet's container log manager): the log
     * of each running container of the runtime is handed to ck__log_rotate, the runtime
     * reopening it (ReopenContainerLog). Called from the agent's log rotation thread.
     * NULL: the runtime rotates its logs itself (the process runtime's shim).
     */
    void (*rotate_logs)(struct ck__runtime *rt, int64_t max_size, int max_files);
    /*
     * The URL of the runtime's streaming server for `kubectl attach` to container id's
     * stdio (stdout always, stderr without a tty; tty: the container's): 0 and *ret_url
     * (caller frees), else the error with reterr. Called as exec_url. NULL: the agent
     * attaches to the host process's log and stdin FIFO (the process runtime).
     */
    int (*attach_url)(struct ck__runtime *rt, const char *id, bool want_stdin, bool tty,
                      char **ret_url, struct ck_err *reterr);
    /*
     * The URL of the runtime's streaming server for `kubectl port-forward` to port of the
     * pod's sandbox (CRI PortForward): 0 and *ret_url (caller frees), else the error with
     * reterr. Called from the agent's server threads. NULL: pods share the host's network
     * and port-forward connects to 127.0.0.1 (the process runtime).
     */
    int (*port_forward_url)(struct ck__runtime *rt, const char *sandbox_id, int port,
                            char **ret_url, struct ck_err *reterr);
    /*
     * CPU and memory of the running containers refs[0..n) into ret[0..n) (kubelet's
     * ContainerStats' cpu and memory): what the runtime does not know stays unknown. 0,
     * or the runtime's error with reterr. Called from the agent's server threads.
     */
    int (*container_stats)(struct ck__runtime *rt, const struct ck__rt_stats_ref *refs, size_t n,
                           struct ck__rt_stats *ret, struct ck_err *reterr);
    /*
     * The CPU and memory of the pods of refs[0..n) as a whole, their sandboxes included
     * (kubelet's pod stats), into ret[i] for refs[i]'s pod: what the runtime does not
     * know stays unknown. 0, or the runtime's error with reterr. Called as
     * container_stats. NULL: a pod's figures are its containers' sums.
     */
    int (*pod_stats)(struct ck__runtime *rt, const struct ck__rt_stats_ref *refs, size_t n,
                     struct ck__rt_stats *ret, struct ck_err *reterr);
    void (*free)(struct ck__runtime *rt);
};
struct ck__runtime {
    const struct ck__runtime_ops *ops;
};

/*
 * The process runtime: limits in cgroup (NULL: rlimits), logs rotated as config says,
 * pods on the host's address. NULL: out of memory.
 */
struct ck__runtime *ck__runtime_process_new(const struct ck_agent_config *config,
                                            const char *cgroup, const char *host_ip);
/*
 * The environment a host process of the process runtime gets: envp ("NAME=value"), PATH
 * (the usual one) unless given, HOSTNAME (the pod's name), into env.
 */
void ck__process_env(const char *hostname, char *const *envp, struct ck__env *env);
/* mkdir -p (mode 0750). 0 or -1 with errno. */
int ck__mkdirs(const char *path);
/* Has ck_proc_reap() reap the child pid once it ends (process.c): a shim nobody waits for. */
void ck__proc_reap_later(pid_t pid);
/* An event about pod p (Pulling, Pulled, Failed, BackOff), as the kubelet records it. */
typedef void (*ck__rt_event_fn)(void *arg, const struct ck__rt_pod *p, const char *type,
                                const char *reason, const char *message);
/*
 * Tests only: the mount table (as /proc/self/mounts) in which the CRI runtime finds the
 * cgroup hierarchies it makes pod cgroups in; NULL, the default: /proc/self/mounts.
 */
extern const char *ck__cri_cgroup_mounts;
/*
 * The CRI runtime on config's endpoints (events through event; pods' image pull
 * secrets read through ctl, which must outlive it). Checks that the endpoint's socket
 * exists: else CK_ENOENT with a message naming the ways out.
 */
int ck__runtime_cri_new(const struct ck_agent_config *config, const struct ck_ctl_client *ctl,
                        ck__rt_event_fn event, void *event_arg, struct ck__runtime **ret,
                        struct ck_err *reterr);

/*
 * Kubernetes' $(VAR) expansion of command and args (third_party/forked/golang/expansion):
 * $(NAME) becomes NAME's value in envp when defined, else stays as written; $$ is $.
 * malloc'd, or NULL.
 */
char *ck__expand_vars(const char *in, char *const *envp);

/* ---- the CRI client (cri.c): runtime.v1 of k8s.io/cri-api over gRPC ----------- */

/* A client of one runtime (and its image service); its calls may come from any thread. */
struct ck__cri;

/* VersionResponse. */
struct ck__cri_version {
    char *version, *runtime_name, *runtime_version, *runtime_api_version; /* NULL: unset */
};

/* RuntimeCondition: RuntimeReady, NetworkReady. */
struct ck__cri_condition {
    char *type;
    bool status;
    char *reason, *message;
};

struct ck__cri_kv;

/*
 * StatusResponse: the conditions of its RuntimeStatus, and its info (verbose only: for
 * containerd, "config" is its CRI plugin's configuration as JSON); handlers and
 * features unread.
 */
struct ck__cri_status {
    struct ck__cri_condition *conditions;
    size_t n_conditions;
    struct ck__cri_kv *info;
    size_t n_info;
};

/* Image (its spec unread). */
struct ck__cri_image {
    char *id;
    char **repo_tags, **repo_digests;
    size_t n_repo_tags, n_repo_digests;
    uint64_t size;
    bool has_uid; /* uid is set: the image runs as a numeric user */
    int64_t uid;
    char *username;
    bool pinned;
};

/* ListImagesResponse. */
struct ck__cri_images {
    struct ck__cri_image *items;
    size_t n;
};

/* AuthConfig, for PullImage: NULL or empty members are left out. */
struct ck__cri_auth {
    const char *username, *password, *auth, *server_address, *identity_token, *registry_token;
};

/* FilesystemUsage. */
struct ck__cri_fs_usage {
    int64_t timestamp; /* ns since the epoch */
    char *mountpoint;  /* fs_id.mountpoint */
    bool has_used_bytes, has_inodes_used;
    uint64_t used_bytes, inodes_used;
};

/* ImageFsInfoResponse. */
struct ck__cri_fs_info {
    struct ck__cri_fs_usage *image_fs, *container_fs;
    size_t n_image_fs, n_container_fs;
};

/*
 * A client of the runtime at runtime_endpoint and the image service at image_endpoint
 * (NULL: the runtime's), each "unix:///path" (or host:port); calls wait up to timeout_ms.
 * Nothing is dialled until the first call. 0 and *ret (ck__cri_close() it), or CK_ENOMEM.
 */
int ck__cri_open(const char *runtime_endpoint, const char *image_endpoint, int timeout_ms,
                 struct ck__cri **ret, struct ck_err *reterr);
/* Closes the connections and frees c; NULL is a no-op. Returns NULL. */
struct ck__cri *ck__cri_close(struct ck__cri *c);

/*
 * The calls. Each returns 0 and fills its result (the caller releases it), or fails
 * leaving it alone: CK_EIO when the runtime cannot be reached, its answer is malformed
 * or the call failed (the message names the method and the gRPC status: "cri:
 * ImageService PullImage: rpc error: code = Unknown desc = ..."), CK_ENOENT for gRPC's
 * NotFound, CK_EINVAL for InvalidArgument, CK_ETIMEDOUT for DeadlineExceeded (the
 * runtime's: an ExecSync past its timeout), CK_ENOMEM.
 */
/* RuntimeService/Version: version is the CRI version the caller speaks (may be NULL). */
int ck__cri_version(struct ck__cri *c, const char *version, struct ck__cri_version *ret,
                    struct ck_err *reterr);
/* RuntimeService/Status; verbose: with the runtime's info. */
int ck__cri_status(struct ck__cri *c, bool verbose, struct ck__cri_status *ret,
                   struct ck_err *reterr);
/* ImageService/ListImages, of every image or (image not NULL) those the filter matches. */
int ck__cri_list_images(struct ck__cri *c, const char *image, struct ck__cri_images *ret,
                        struct ck_err *reterr);
/* ImageService/ImageStatus: *ret_found false (and *ret empty) when the runtime has none. */
int ck__cri_image_status(struct ck__cri *c, const char *image, struct ck__cri_image *ret,
                         bool *ret_found, struct ck_err *reterr);
/* ImageService/PullImage within timeout_ms: *ret_ref, the image's reference (freed by the caller).
 */
int ck__cri_pull_image(struct ck__cri *c, const char *image, const struct ck__cri_auth *auth,
                       int timeout_ms, char **ret_ref, struct ck_err *reterr);
int ck__cri_remove_image(struct ck__cri *c, const char *image, struct ck_err *reterr);
int ck__cri_image_fs_info(struct ck__cri *c, struct ck__cri_fs_info *ret, struct ck_err *reterr);

/* ---- RuntimeService: pod sandboxes and containers ---------------------------------- */

/* A label or annotation, an env entry, a sysctl: a request's (borrowed) or an answer's (owned). */
struct ck__cri_kv {
    char *key, *value;
};

/* NamespaceMode. */
enum ck__cri_ns_mode { CK__CRI_NS_POD = 0, CK__CRI_NS_CONTAINER = 1, CK__CRI_NS_NODE = 2 };
/* SecurityProfile.ProfileType, plus "unset" (nothing is sent). */
enum ck__cri_seccomp {
    CK__CRI_SECCOMP_UNSET = -1,
    CK__CRI_SECCOMP_RUNTIME_DEFAULT = 0,
    CK__CRI_SECCOMP_UNCONFINED = 1,
    CK__CRI_SECCOMP_LOCALHOST = 2
};
/* ContainerState. */
enum ck__cri_container_state {
    CK__CRI_CREATED = 0,
    CK__CRI_RUNNING = 1,
    CK__CRI_EXITED = 2,
    CK__CRI_UNKNOWN = 3
};
/* PodSandboxState. */
enum ck__cri_sandbox_state { CK__CRI_SANDBOX_READY = 0, CK__CRI_SANDBOX_NOTREADY = 1 };

/* PortMapping; protocol 0 TCP, 1 UDP, 2 SCTP. */
struct ck__cri_port_mapping {
    int protocol;
    int32_t container_port, host_port;
    const char *host_ip; /* NULL: unset */
};

/* Mount; propagation 0 private, 1 host-to-container, 2 bidirectional. */
struct ck__cri_mount {
    const char *container_path, *host_path;
    bool readonly;
    int propagation;
};

/*
 * LinuxSandboxSecurityContext (for a sandbox) or LinuxContainerSecurityContext (for a
 * container): what both share, and the container's own (capabilities, no_new_privs,
 * masked and readonly paths), which a sandbox's encoding leaves out.
 */
struct ck__cri_security {
    enum ck__cri_ns_mode network, pid, ipc; /* NamespaceOption */
    bool has_run_as_user, has_run_as_group;
    int64_t run_as_user, run_as_group;
    const char *run_as_username; /* NULL: unset (containers only) */
    bool readonly_rootfs, privileged;
    const int64_t *supplemental_groups;
    size_t n_supplemental_groups;
    enum ck__cri_seccomp seccomp;      /* 0 is RuntimeDefault: CK__CRI_SECCOMP_UNSET sends none */
    const char *seccomp_localhost_ref; /* with CK__CRI_SECCOMP_LOCALHOST */
    /* containers only */
    const char *const *add_capabilities, *const *drop_capabilities;
    size_t n_add_capabilities, n_drop_capabilities;
    bool no_new_privs;
    const char *const *masked_paths, *const *readonly_paths;
    size_t n_masked_paths, n_readonly_paths;
};

/* LinuxContainerResources (hugepages and unified left out). 0: unset. */
struct ck__cri_resources {
    int64_t cpu_period, cpu_quota, cpu_shares, memory_limit_in_bytes, oom_score_adj;
    int64_t memory_swap_limit_in_bytes;
};

/* PodSandboxConfig (Windows left out). Every pointer is borrowed; NULL: unset. */
struct ck__cri_sandbox_config {
    const char *name, *uid, *ns; /* PodSandboxMetadata */
    uint32_t attempt;
    const char *hostname, *log_directory;
    const char *const *dns_servers, *const *dns_searches, *const *dns_options;
    size_t n_dns_servers, n_dns_searches, n_dns_options;
    const struct ck__cri_port_mapping *port_mappings;
    size_t n_port_mappings;
    const struct ck__cri_kv *labels, *annotations;
    size_t n_labels, n_annotations;
    const char *cgroup_parent; /* LinuxPodSandboxConfig */
    struct ck__cri_security security;
    const struct ck__cri_kv *sysctls;
    size_t n_sysctls;
};

/* ContainerConfig (devices, CDI devices and Windows left out). Borrowed; NULL: unset. */
struct ck__cri_container_config {
    const char *name; /* ContainerMetadata */
    uint32_t attempt;
    const char *image; /* ImageSpec.image: the image's reference or id */
    const char *const *command, *const *args;
    size_t n_command, n_args;
    const char *working_dir;
    const struct ck__cri_kv *envs;
    size_t n_envs;
    const struct ck__cri_mount *mounts;
    size_t n_mounts;
    const struct ck__cri_kv *labels, *annotations;
    size_t n_labels, n_annotations;
    const char *log_path;             /* relative to the sandbox's log_directory */
    bool open_stdin, stdin_once, tty; /* stdin, stdin_once, tty */
    bool has_resources;
    struct ck__cri_resources resources;
    struct ck__cri_security security;
};

/* PodSandbox (ListPodSandbox) and PodSandboxStatus share these. */
struct ck__cri_sandbox {
    char *id;
    char *name, *uid, *ns; /* metadata */
    uint32_t attempt;
    enum ck__cri_sandbox_state state;
    int64_t created_at; /* ns since the epoch */
    struct ck__cri_kv *labels, *annotations;
    size_t n_labels, n_annotations;
    char *runtime_handler;
};

struct ck__cri_sandboxes {
    struct ck__cri_sandbox *items;
    size_t n;
};

/* PodSandboxStatusResponse's status (info and container statuses unread). */
struct ck__cri_sandbox_status {
    struct ck__cri_sandbox sandbox;
    char *ip; /* network.ip, NULL when it has none (host network) */
    char **additional_ips;
    size_t n_additional_ips;
    enum ck__cri_ns_mode network, pid, ipc; /* linux.namespaces.options */
};

/* Container (ListContainers). */
struct ck__cri_container {
    char *id, *sandbox_id;
    char *name; /* metadata */
    uint32_t attempt;
    char *image, *image_ref, *image_id;
    enum ck__cri_container_state state;
    int64_t created_at;
    struct ck__cri_kv *labels, *annotations;
    size_t n_labels, n_annotations;
};

struct ck__cri_containers {
    struct ck__cri_container *items;
    size_t n;
};

/* ContainerStatus (mounts, resources and user unread). Times in ns since the epoch; 0: none. */
struct ck__cri_container_status {
    char *id;
    char *name;
    uint32_t attempt;
    enum ck__cri_container_state state;
    int64_t created_at, started_at, finished_at;
    int32_t exit_code;
    char *image, *image_ref, *image_id;
    char *reason, *message; /* e.g. "OOMKilled", "Completed", "Error" */
    struct ck__cri_kv *labels, *annotations;
    size_t n_labels, n_annotations;
    char *log_path;
};

/* A filter of ListPodSandbox or ListContainers: every member set must match. */
struct ck__cri_filter {
    const char *id;         /* NULL: any */
    const char *sandbox_id; /* containers and stats only; NULL: any */
    int state;              /* a ck__cri_*_state; -1: any (0 is READY or CREATED) */
    const struct ck__cri_kv *labels;
    size_t n_labels;
};

/* ExecSyncResponse. */
struct ck__cri_exec_result {
    char *out, *err; /* NUL-terminated; the lengths count without the NUL */
    size_t out_len, err_len;
    int32_t exit_code;
};

/*
 * ContainerStats (CPU and memory; filesystem and swap unread). Its attributes name no
 * sandbox: the pod is in the labels kubelet gave the container (io.kubernetes.pod.uid).
 */
struct ck__cri_container_stats {
    char *id, *name; /* attributes */
    struct ck__cri_kv *labels;
    size_t n_labels;
    int64_t timestamp; /* of the cpu sample, ns */
    bool has_cpu, has_memory;
    uint64_t usage_core_nano_seconds, usage_nano_cores; /* cpu */
    uint64_t working_set_bytes, rss_bytes;              /* memory */
};

struct ck__cri_stats_list {
    struct ck__cri_container_stats *items;
    size_t n;
};

/*
 * PodSandboxStats: the sandbox's attributes, the pod's own CPU and memory (usage: only its
 * has_cpu, has_memory, timestamp and figures are set) and its containers' stats (Linux;
 * network, process and Windows stats unread).
 */
struct ck__cri_sandbox_stats {
    char *id, *name, *uid, *ns; /* attributes and their metadata */
    struct ck__cri_kv *labels;
    size_t n_labels;
    struct ck__cri_container_stats usage;
    struct ck__cri_container_stats *containers;
    size_t n_containers;
};

struct ck__cri_sandbox_stats_list {
    struct ck__cri_sandbox_stats *items;
    size_t n;
};

/*
 * RunPodSandbox with config (runtime_handler NULL: the runtime's default) within
 * timeout_ms (it may pull the pause image: kubelet waits 4 min); *ret_id freed by caller.
 */
int ck__cri_run_sandbox(struct ck__cri *c, const struct ck__cri_sandbox_config *config,
                        const char *runtime_handler, int timeout_ms, char **ret_id,
                        struct ck_err *reterr);
int ck__cri_stop_sandbox(struct ck__cri *c, const char *id, struct ck_err *reterr);
int ck__cri_remove_sandbox(struct ck__cri *c, const char *id, struct ck_err *reterr);
/* CK_ENOENT when the runtime has no such sandbox. */
int ck__cri_sandbox_status(struct ck__cri *c, const char *id, struct ck__cri_sandbox_status *ret,
                           struct ck_err *reterr);
int ck__cri_list_sandboxes(struct ck__cri *c, const struct ck__cri_filter *filter,
                           struct ck__cri_sandboxes *ret, struct ck_err *reterr);
/* CreateContainer in the sandbox, whose config is given again as CRI asks. */
int ck__cri_create_container(struct ck__cri *c, const char *sandbox_id,
                             const struct ck__cri_container_config *config,
                             const struct ck__cri_sandbox_config *sandbox_config, char **ret_id,
                             struct ck_err *reterr);
int ck__cri_start_container(struct ck__cri *c, const char *id, struct ck_err *reterr);
/* StopContainer: the stop signal, SIGKILL after timeout_s; the call waits up to that more. */
int ck__cri_stop_container(struct ck__cri *c, const char *id, int64_t timeout_s,
                           struct ck_err *reterr);
int ck__cri_remove_container(struct ck__cri *c, const char *id, struct ck_err *reterr);
int ck__cri_list_containers(struct ck__cri *c, const struct ck__cri_filter *filter,
                            struct ck__cri_containers *ret, struct ck_err *reterr);
/* CK_ENOENT when the runtime has no such container. */
int ck__cri_container_status(struct ck__cri *c, const char *id,
                             struct ck__cri_container_status *ret, struct ck_err *reterr);
/* ExecSync of argv in the container, at most timeout_s (0: no limit; the call waits that more). */
int ck__cri_exec_sync(struct ck__cri *c, const char *id, const char *const *argv, size_t argc,
                      int64_t timeout_s, struct ck__cri_exec_result *ret, struct ck_err *reterr);
/* Exec, Attach, PortForward: the URL of the runtime's streaming server (freed by caller). */
struct ck__cri_streams {
    bool tty, want_stdin, want_stdout, want_stderr;
};
int ck__cri_exec(struct ck__cri *c, const char *id, const char *const *argv, size_t argc,
                 struct ck__cri_streams streams, char **ret_url, struct ck_err *reterr);
int ck__cri_attach(struct ck__cri *c, const char *id, struct ck__cri_streams streams,
                   char **ret_url, struct ck_err *reterr);
int ck__cri_port_forward(struct ck__cri *c, const char *sandbox_id, const int32_t *ports,
                         size_t n_ports, char **ret_url, struct ck_err *reterr);
int ck__cri_reopen_container_log(struct ck__cri *c, const char *id, struct ck_err *reterr);
/* ContainerStats of one container; ListContainerStats of all (filter: id, sandbox, labels). */
int ck__cri_container_stats(struct ck__cri *c, const char *id, struct ck__cri_container_stats *ret,
                            struct ck_err *reterr);
int ck__cri_list_container_stats(struct ck__cri *c, const struct ck__cri_filter *filter,
                                 struct ck__cri_stats_list *ret, struct ck_err *reterr);
/* RuntimeService/PodSandboxStats of sandbox id; ListPodSandboxStats (filter: id, labels). */
int ck__cri_sandbox_stats(struct ck__cri *c, const char *id, struct ck__cri_sandbox_stats *ret,
                          struct ck_err *reterr);
int ck__cri_list_sandbox_stats(struct ck__cri *c, const struct ck__cri_filter *filter,
                               struct ck__cri_sandbox_stats_list *ret, struct ck_err *reterr);

void ck__cri_sandbox_release(struct ck__cri_sandbox *s);
void ck__cri_sandboxes_release(struct ck__cri_sandboxes *l);
void ck__cri_sandbox_status_release(struct ck__cri_sandbox_status *s);
void ck__cri_container_release(struct ck__cri_container *ct);
void ck__cri_containers_release(struct ck__cri_containers *l);
void ck__cri_container_status_release(struct ck__cri_container_status *s);
void ck__cri_exec_result_release(struct ck__cri_exec_result *r);
void ck__cri_container_stats_release(struct ck__cri_container_stats *s);
void ck__cri_stats_list_release(struct ck__cri_stats_list *l);
void ck__cri_sandbox_stats_release(struct ck__cri_sandbox_stats *s);
void ck__cri_sandbox_stats_list_release(struct ck__cri_sandbox_stats_list *l);
/* The value of key among n labels or annotations, or NULL. */
const char *ck__cri_kv_get(const struct ck__cri_kv *kv, size_t n, const char *key);

void ck__cri_version_release(struct ck__cri_version *v);
void ck__cri_status_release(struct ck__cri_status *s);
void ck__cri_image_release(struct ck__cri_image *img);
void ck__cri_images_release(struct ck__cri_images *l);
void ck__cri_fs_info_release(struct ck__cri_fs_info *f);
/* The condition of that type in s, or NULL. */
const struct ck__cri_condition *ck__cri_status_condition(const struct ck__cri_status *s,
                                                         const char *type);

/*
 * The messages on their own, for tests: requests appended to b (its err says whether
 * memory ran out), answers decoded from a message's bytes into a result the caller
 * releases: 0, CK_EIO when malformed (nothing is kept), CK_ENOMEM.
 */
void ck__cri_encode_version(struct ck__buf *b, const char *version);
void ck__cri_encode_status(struct ck__buf *b, bool verbose);
void ck__cri_encode_list_images(struct ck__buf *b, const char *image);
void ck__cri_encode_image_status(struct ck__buf *b, const char *image, bool verbose);
void ck__cri_encode_pull_image(struct ck__buf *b, const char *image,
                               const struct ck__cri_auth *auth);
void ck__cri_encode_remove_image(struct ck__buf *b, const char *image);
int ck__cri_decode_version(struct ck__pb_reader r, struct ck__cri_version *ret);
int ck__cri_decode_status(struct ck__pb_reader r, struct ck__cri_status *ret);
int ck__cri_decode_list_images(struct ck__pb_reader r, struct ck__cri_images *ret);
int ck__cri_decode_image_status(struct ck__pb_reader r, struct ck__cri_image *ret, bool *ret_found);
int ck__cri_decode_pull_image(struct ck__pb_reader r, char **ret_ref);
int ck__cri_decode_fs_info(struct ck__pb_reader r, struct ck__cri_fs_info *ret);

/* RuntimeService requests; a filter NULL sends none, one with nothing set an empty one. */
void ck__cri_encode_run_sandbox(struct ck__buf *b, const struct ck__cri_sandbox_config *config,
                                const char *runtime_handler);
void ck__cri_encode_create_container(struct ck__buf *b, const char *sandbox_id,
                                     const struct ck__cri_container_config *config,
                                     const struct ck__cri_sandbox_config *sandbox_config);
void ck__cri_encode_list_sandboxes(struct ck__buf *b, const struct ck__cri_filter *filter);
void ck__cri_encode_list_containers(struct ck__buf *b, const struct ck__cri_filter *filter);
void ck__cri_encode_list_container_stats(struct ck__buf *b, const struct ck__cri_filter *filter);
void ck__cri_encode_list_sandbox_stats(struct ck__buf *b, const struct ck__cri_filter *filter);
void ck__cri_encode_stop_container(struct ck__buf *b, const char *id, int64_t timeout_s);
void ck__cri_encode_exec_sync(struct ck__buf *b, const char *id, const char *const *argv,
                              size_t argc, int64_t timeout_s);
void ck__cri_encode_exec(struct ck__buf *b, const char *id, const char *const *argv, size_t argc,
                         struct ck__cri_streams streams);
void ck__cri_encode_attach(struct ck__buf *b, const char *id, struct ck__cri_streams streams);
void ck__cri_encode_port_forward(struct ck__buf *b, const char *sandbox_id, const int32_t *ports,
                                 size_t n_ports);
/*
 * The string field 1 that is the whole of RunPodSandboxResponse (the sandbox's id),
 * CreateContainerResponse (the container's), ExecResponse, AttachResponse and
 * PortForwardResponse (the URL): an answer without it, or with it empty, is malformed.
 */
int ck__cri_decode_id(struct ck__pb_reader r, char **ret);
/*
 * PodSandboxStatusResponse and ContainerStatusResponse: malformed too when the fields
 * kubelet requires are missing (cri-client's verifySandboxStatus, verifyContainerStatus):
 * a sandbox's id, name, namespace, uid and creation time; a container's id, name,
 * creation time, image and image_ref.
 */
int ck__cri_decode_sandbox_status(struct ck__pb_reader r, struct ck__cri_sandbox_status *ret);
int ck__cri_decode_list_sandboxes(struct ck__pb_reader r, struct ck__cri_sandboxes *ret);
int ck__cri_decode_list_containers(struct ck__pb_reader r, struct ck__cri_containers *ret);
int ck__cri_decode_container_status(struct ck__pb_reader r, struct ck__cri_container_status *ret);
int ck__cri_decode_exec_sync(struct ck__pb_reader r, struct ck__cri_exec_result *ret);
/* ContainerStatsResponse: malformed without its stats. */
int ck__cri_decode_container_stats(struct ck__pb_reader r, struct ck__cri_container_stats *ret);
int ck__cri_decode_list_container_stats(struct ck__pb_reader r, struct ck__cri_stats_list *ret);
int ck__cri_decode_sandbox_stats(struct ck__pb_reader r, struct ck__cri_sandbox_stats *ret);
int ck__cri_decode_list_sandbox_stats(struct ck__pb_reader r,
                                      struct ck__cri_sandbox_stats_list *ret);

/*
 * A failed call's error (service and method as "ImageService", "PullImage"): the gRPC
 * status as Go's gRPC prints it, "rpc error: code = NotFound desc = <message>";
 * returns CK_ENOENT for NotFound (5), CK_EINVAL for InvalidArgument (3), CK_ETIMEDOUT
 * for DeadlineExceeded (4), else CK_EIO.
 */
int ck__cri_status_error(const char *service, const char *method, int status, const char *message,
                         struct ck_err *reterr);

/*
 * Decodes bytes as a CRI answer: p[0] % 16 picks Version, Status, ListImages,
 * ImageStatus, PullImage, ImageFsInfo, an id or URL answer, PodSandboxStatus,
 * ListPodSandbox, ListContainers, ContainerStatus, ExecSync, ContainerStats,
 * ListContainerStats, PodSandboxStats or ListPodSandboxStats; the rest is the message.
 * For fuzz/fuzz_cri_answer.c.
 */
void ck__cri_decode_answer(const unsigned char *p, size_t n);

/* ---- the node's CNI configuration (cni.c) ---------------------------------------- */

/*
 * Whether cidr is a pod range the agent's CNI configuration can use: an IPv4 network
 * "a.b.c.d/N" with N from 8 to 30 and no host bits set. 0, or CK_EINVAL and why.
 */
int ck__cni_parse_cidr(const char *cidr, struct ck_err *reterr);

/*
 * The network configuration containerd's CRI loads from conf_dir (NULL:
 * CK_AGENT_CNI_CONF_DIR): the first entry in byte order, directories left out, named
 * *.conf, *.conflist or *.json. 0 and its path in buf (when buf is not NULL);
 * CK_ENOENT when there is none (or no such directory); CK_EINVAL when the path does
 * not fit size; another negated errno when the directory cannot be read.
 */
int ck__cni_find_config(const char *conf_dir, char *buf, size_t size, struct ck_err *reterr);

/*
 * Makes sure conf_dir (NULL: CK_AGENT_CNI_CONF_DIR) holds a CNI configuration, so that
 * containerd's CRI can give sandboxes a network. When it holds one (ck__cni_find_config)
 * nothing is written: 0, its path in ret_path, *ret_written false -- unless it is this
 * agent's own 10-ckube.conflist: for another range than pod_cidr it is written again,
 * and with pod_cidr NULL it is CK_ENOENT (an earlier start's range need not be the
 * node's). Otherwise CK_ENOENT when pod_cidr is NULL (the node has no range yet), else checks that
 * pod_cidr is a usable range (CK_EINVAL) and that bin_dir
 * (NULL: CK_AGENT_CNI_BIN_DIR) holds the executables bridge, host-local, portmap and
 * loopback (CK_ENOENT naming the first missing one), creates conf_dir (0755, parents
 * too) and writes <conf_dir>/10-ckube.conflist atomically: 0, its path in ret_path,
 * *ret_written true. ret_path (size bytes) and ret_written may be NULL. Any other
 * failure: the negated errno and what failed in reterr; no file is left behind (the
 * directory may have been made).
 */
int ck__cni_ensure_config(const char *conf_dir, const char *bin_dir, const char *pod_cidr,
                          char *ret_path, size_t size, bool *ret_written, struct ck_err *reterr);

/*
 * The range of the agent's own 10-ckube.conflist in conf_dir (NULL:
 * CK_AGENT_CNI_CONF_DIR), as an earlier start wrote it: 1 and the subnet in buf; 0 when
 * there is no such file (or it is another's shape, or the subnet does not fit size).
 */
int ck__cni_own_range(const char *conf_dir, char *buf, size_t size);

/*
 * The pod range the agent gives the runtime for its Node: the Node's spec.podCIDR; when
 * it has none, flag (--pod-cidr) only once flag_due (the agent waited for the Node's
 * long enough); else NULL (none yet: pods outside the host network wait).
 */
const char *ck__cni_node_range(const json_t *node, const char *flag, bool flag_due);

/* ---- termination messages (logread.c) ---- */

/*
 * An attempt's termination message file, <pod dir>/containers/<name>/<attempt>/ this:
 * the CRI runtime mounts it at the container's terminationMessagePath.
 */
#define CK__TERMINATION_LOG "termination-log"
/* The kubelet's bounds: the file's first 4 KiB; the log's last 80 lines, 2 KiB at most. */
#define CK__TERMINATION_MAX       4096
#define CK__TERMINATION_LOG_LINES 80
#define CK__TERMINATION_LOG_MAX   2048

/*
 * Makes path an empty file any container user may write (0666; its directory too), as
 * the kubelet prepares the termination message file. 0 or a negated errno.
 */
int ck__termination_file(const char *path);

/*
 * The message of an ended attempt as the kubelet reads it: the termination file's first
 * CK__TERMINATION_MAX bytes; when that is empty, the policy is FallbackToLogsOnError and
 * the attempt failed (code != 0), the log's last CK__TERMINATION_LOG_LINES lines, cut to
 * their last CK__TERMINATION_LOG_MAX bytes. Either path may be NULL. NULL: no message
 * (or out of memory); else malloc'd.
 */
char *ck__termination_message(const char *file, const char *log_path, const char *policy, int code);

/* ---- a pod's resources (podresources.c) and memory-backed emptyDirs (emptydir.c) ---- */

/* The pod's QoS class: status.qosClass, else computed (kubelet's GetPodQOS). Static. */
const char *ck__pod_qos(const json_t *pod);

/* A pod cgroup's resources (kubelet's ResourceConfig): what is not "has_" is left alone. */
struct ck__pod_resources {
    uint64_t cpu_shares; /* cgroup v1 cpu.shares (2 to 262144) */
    bool has_cpu_quota;
    int64_t cpu_quota;   /* us per cpu_period; 0 with has_cpu_quota: none (no cpu limit) */
    uint64_t cpu_period; /* us */
    bool has_memory;
    int64_t memory; /* bytes; 0 with has_memory: none */
};
/*
 * The resources of the pod's cgroup as the kubelet's ResourceConfigForPod computes them
 * (cpu limits enforced, the 100 ms period, no memory QoS). podresources.c says how.
 */
void ck__pod_resource_config(const json_t *pod, struct ck__pod_resources *ret);

/*
 * Mounts a tmpfs at dir (made when missing) for the emptyDir volume vol of pod when its
 * medium is Memory (else nothing: 0), unless one is mounted there already. Its size is
 * the kubelet's (SizeMemoryBackedVolumes): node_memory, or the pod's memory limit when
 * it has one below that, or the volume's sizeLimit when below that. 0, or the error
 * (mount(2)'s: an agent that is not root cannot) with reterr.
 */
int ck__emptydir_setup(const json_t *pod, const json_t *vol, const char *dir, int64_t node_memory,
                       struct ck_err *reterr);
/* The tmpfs size in bytes ck__emptydir_setup gives vol of pod on a node of node_memory. */
int64_t ck__emptydir_memory_size(const json_t *pod, const json_t *vol, int64_t node_memory);
/*
 * Unmounts the tmpfs volumes of the pod directory pod_dir (pod_dir/volumes/<name> that
 * are mount points of a tmpfs), before the directory is removed. How many were unmounted.
 */
int ck__emptydir_unmount_all(const char *pod_dir);

/* ---- the pod cgroup (podcgroup.c) ---- */

/* Where the cgroup controllers the pod cgroup needs are mounted. */
struct ck__cgroup_mounts {
    bool v2;                /* the unified hierarchy alone */
    char unified[PATH_MAX]; /* v2: its mount point */
    char cpu[PATH_MAX];     /* v1: the cpu controller's (shortest) mount point */
    char memory[PATH_MAX];  /* v1: the memory controller's */
};
/*
 * Reads them from the mount table mounts (NULL: /proc/self/mounts; a test's table is v2
 * when it mounts no v1 cpu or memory controller). 0 or a negated errno.
 */
int ck__cgroup_mounts_read(const char *mounts, struct ck__cgroup_mounts *ret);
/*
 * The kubelet's EnsureExists of a pod cgroup: cgroup (a cgroupfs path such as
 * /kubepods/burstable/pod<uid>) made in m's hierarchies with res's settings when it does
 * not exist yet (an existing one is left alone). 0, or the failure with reterr.
 */
int ck__pod_cgroup_ensure(const struct ck__cgroup_mounts *m, const char *cgroup,
                          const struct ck__pod_resources *res, struct ck_err *reterr);

/* ---- a pod's DNS configuration (dns.c) ---- */

/* The node's DNS settings: the kubelet's clusterDNS, clusterDomain and resolvConf. */
struct ck__dns_node {
    const char *const *cluster_dns; /* the cluster DNS servers' addresses */
    size_t n_cluster_dns;
    const char *cluster_domain; /* NULL or "": none */
    const char *resolv_conf;    /* the host's resolver file; NULL or "": none */
};

/* What forming it warns of, as events on the pod (kubelet's reasons and words). */
struct ck__pod_dns_warning {
    char reason[32]; /* MissingClusterDNS, DNSConfigForming */
    char message[512];
};

/* A pod's resolv.conf: the CRI's DNSConfig. */
struct ck__pod_dns {
    char **servers, **searches, **options;
    size_t n_servers, n_searches, n_options;
    struct ck__pod_dns_warning warnings[3];
    size_t n_warnings;
};

/*
 * The DNS configuration of pod on the node, as the kubelet's GetPodDNS forms it (dns.c
 * says how). 0; else the resolver file could not be read or parsed, or memory ran out
 * (the negated errno, why in reterr). Release *ret with ck__pod_dns_release.
 */
int ck__pod_dns_config(const struct ck__dns_node *node, const json_t *pod, struct ck__pod_dns *ret,
                       struct ck_err *reterr);
void ck__pod_dns_release(struct ck__pod_dns *d);

#endif /* CKUBE_AGENT_INTERNAL_H */
