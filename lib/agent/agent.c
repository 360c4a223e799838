/*
 * agent.c - `ckube agent`: the node agent, ckube's kubelet. It registers its Node (the
 * host's cores, memory and disk), renews its Lease, and runs the pods bound to it
 * (watched with the field selector spec.nodeName=NAME) as local processes through
 * process.c: a directory per pod, emptyDir volumes as directories, env with the
 * downward API's fieldRefs, restarts with the kubelet's back-off, graceful stop, and
 * the pod status as the kubelet writes it. docs/internals/agent.md describes it.
 *
 * On disk, under the root dir: pods/<uid>/volumes/<name>/,
 * pods/<uid>/containers/<name>/<attempt>/{pid,exit} and the log
 * pods/<uid>/containers/<name>/<attempt>.log (rotated: <attempt>.log.<time>, as the
 * kubelet names a CRI log). A restarted agent finds its
 * containers again from those files (pid and start time, or the exit status the shim
 * wrote), so that nothing runs twice and no exit status is lost.
 *
 * Threading: the informer's thread fills the cache. The supervisor thread's tick (every
 * 200 ms, at once when a pod changes) decides which pods exist and hands each one's sync
 * to a bounded pool of pod workers, as the kubelet's pod workers (pod_workers.go) do:
 * one pod's syncs never run at once and keep their order, different pods' run in
 * parallel, and a pod asked for while its sync runs is queued once more after it. A sync
 * (volumes, sandbox, containers, probes, status) holds only its pod's lock; the agent's
 * `lock` guards the pod table and the queue for moments, never across a runtime call or
 * an API request. A pod gone from the cache is removed by a sync of its own, after any
 * running one. One renewer thread renews the lease. The log server's threads (logs, exec,
 * attach, port-forward) read a pod under its lock. With a runtime that keeps dead
 * containers (CRI), a GC thread runs its garbage collection every container GC period:
 * it copies what it must keep from the pods and calls the runtime without their locks
 * (kubelet's GC runs on a goroutine of its own, too).
 */
#define _GNU_SOURCE /* asprintf */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define TICK (200 * CK_MSEC)

struct container {
    char name[254];
    bool init;           /* an init container: runs to completion before the others */
    bool sidecar;        /* an init container with restartPolicy Always: runs for the pod's life */
    bool ephemeral;      /* an ephemeral container: started once, never restarted */
    bool stop_sent;      /* a sidecar's stop in the pod's end was sent (they stop in order) */
    int64_t kill_at;     /* a finished pod's sidecar: when the kill follows its stop */
    int attempt;         /* 0 first; restartCount */
    char id[192];        /* the runtime's containerID of the current attempt */
    char image_ref[256]; /* its imageID as the runtime reports it */
    bool running;        /* a process was started and has not been seen to end */
    bool has_exit;       /* the last attempt ended: exit holds how */
    bool ever_ran;       /* some attempt started */
    bool done;           /* ended and will not be restarted */
    struct ck_proc_exit exit;
    int64_t started_ns; /* realtime of the current attempt's start */
    int64_t restart_at; /* when the back-off allows the next start; 0: now */
    int64_t state_at;   /* when the runtime's state of the running attempt is read next */
    char waiting_reason[64];
    char waiting_message[512];
    json_t *last_state; /* the previous attempt's terminated state, or NULL */
    char *message;      /* the ended attempt's termination message, or NULL */
    struct ck_agent_backoff backoff;
    int64_t pull_failed_at; /* when its last pull failed (ErrImagePull) */
    struct ck_probe_state startup, liveness, readiness;
    char **envp;     /* the environment of the running attempt (probes, hooks), or NULL */
    bool started_ok; /* no startup probe, or it succeeded */
    bool ready_ok;   /* no readiness probe, or it succeeds */
};

/* The kubelet's image pull back-off of one image of a pod (image_manager.go's backOffKey). */
struct pull_backoff {
    char *image; /* the spec's image, as written */
    struct ck_agent_backoff b;
};

/*
 * A pod the agent runs. Who may touch what:
 * - uid, ns, name, dir, n, ninit and the containers' names never change after pod_new
 *   (n_all and ctrs grow under `lock` when ephemeral containers are added);
 * - the fields marked "agent lock" belong to the tick and the worker queue (a->lock);
 * - everything else is its worker's: it holds `lock` for the whole of a sync, and the
 *   threads that read the pod (logs, exec, attach, port-forward, the GC's keep list) take
 *   `lock` too, holding a reference (refs) so that the pod outlives their look.
 */
struct pod_run {
    char uid[64], ns[254], name[254];
    char dir[PATH_MAX];
    pthread_mutex_t lock;
    int refs;                    /* agent lock: the table's, and each reader's */
    json_t *next_pod;            /* agent lock: a newer copy from the cache for the next sync */
    bool gone;                   /* agent lock: no longer in the cache: the next sync removes it */
    bool queued;                 /* agent lock: in the work queue */
    bool busy;                   /* agent lock: a worker syncs it (never two at once) */
    bool pending;                /* agent lock: asked for again while busy: queued once after */
    struct pod_run *next_queued; /* agent lock: the work queue's link */
    int64_t queued_at;           /* agent lock: when it was queued (monotonic) */
    bool synced;                 /* agent lock: a sync of it ended */
    bool deleting;               /* agent lock: the cache's copy has a deletionTimestamp */
    bool deletion_seen;          /* agent lock: a sync was queued since it had */
    bool started; /* its first sync made its directories and adopted its containers */
    json_t *pod;  /* the newest copy the sync took up */
    /* the init containers (ninit of them), the others (up to n), then the ephemeral ones
       (up to n_all), which a sync appends as the spec gains them */
    struct container *ctrs;
    size_t n, ninit, n_all;
    bool seen;            /* agent lock: in the cache at this tick */
    bool terminating;     /* stopping (SIGTERM sent) */
    int64_t kill_at;      /* when the kill follows */
    bool killed;          /* the kill was sent */
    bool sandbox_removed; /* the runtime removed what was left of the pod */
    bool removed;         /* the final delete was accepted */
    bool volumes_ready;   /* configMap, secret, downwardAPI, projected volumes written */
    int64_t volumes_at;   /* when writing them is tried again */
    json_t *claim_paths;  /* volume name -> the hostPath its claim's volume resolved to */
    int64_t resync_at;    /* when they are written again from the objects (0: not yet due) */
    json_t *tokens;       /* serviceAccountToken projections' tokens: request text ->
                             {token, refresh_at} (the kubelet's token manager's cache) */
    char start_time[40];
    json_t *posted;             /* the last status written */
    struct ck__rt_pod rp;       /* the pod as the runtime sees it: sandbox id, IP */
    bool sandbox_ready;         /* rp.sandbox_id is set */
    bool finishing;             /* the app containers are done: the sidecars stop, for good */
    int64_t sandbox_at;         /* when making the sandbox is tried again */
    struct pull_backoff *pulls; /* the image pull back-offs, by image (n_pulls) */
    size_t n_pulls;
};

struct ck_agent {
    struct ck_agent_config config;
    char *node_name, *root_dir, *host_ip, *field_selector;
    const struct ck_resource *pods_res, *nodes_res;
    struct ck_ctl_client ctl;
    struct ck_rest_list_watch rlw; /* the pods' over the client, without a maker */
    struct ck_list_watch pods_src; /* every pod's: rlw's, or the maker's */
    struct ck_list_watch svc_src;  /* the maker's Services' */
    bool pods_made, svc_made;      /* made by config.list_watch: released by it */
    struct ck_list_watch lw;       /* pods_src, limited to this node */
    struct ck_informer *pods_inf;
    struct ck_lister pod_lister;
    /* every Service, for pods' service link variables (kubelet's serviceLister) */
    struct ck_informer *svc_inf;
    struct ck_lister svc_lister;
    json_t *lease;
    struct MHD_Daemon *log_server;
    char cgroup[PATH_MAX]; /* the delegated cgroup v2, or "": rlimits */
    struct ck_ctl_event_sink event_sink;
    struct ck_event_recorder *events; /* as the kubelet's recorder: component "kubelet" */
    struct ck_pressure_thresholds thresholds;
    struct ck_pressure pressure;         /* as last written to the Node (renewer thread only) */
    struct ck__rt_node_status rt_status; /* the runtime's, as last asked (renewer thread only) */
    void *log_server_context;
    struct ck__agent_tls tls;
    struct ck__runtime *rt; /* the container runtime: process or CRI */

    /*
     * lock guards the pod table, the work queue and the pods' fields marked "agent lock";
     * it is never held across a runtime call or an API request (a pod's own lock is).
     */
    pthread_mutex_t lock;
    struct ck_pod_run_table {
        struct pod_run **v;
        size_t n;
    } pods;
    /* pods to sync, in order: URGENT (a new pod's first sync, a deletion, a removal)
       before PERIODIC (the tick's look at every pod) */
    struct pod_queue {
        struct pod_run *head, *tail;
    } queues[2];
    pthread_cond_t work_cond; /* a pod was queued, or workers_stop */
    bool workers_stop;
    pthread_t *workers; /* config.pod_workers of them, n_workers started */
    int n_workers;

    int64_t orphans_at; /* when the runtime's orphaned pods are looked for next */

    int64_t dirs_at; /* when pods' directories are looked over next */
    pthread_t supervisor, renewer, gc;
    bool threads_running, gc_running;
    pthread_t logrotate; /* the CRI runtime's container log rotation */
    bool logrotate_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping;
    bool kicked; /* a pod changed: the supervisor looks at once (guarded by stop_lock) */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static void fmt_time(int64_t ns, char *buf, size_t size)
{
    ck__time_format(ns / CK_SEC, -1, buf, size);
}

/* An event about the pod, as the kubelet records them. */
__attribute__((format(printf, 5, 6))) static void pod_event(struct ck_agent *a,
                                                            const struct pod_run *p,
                                                            const char *type, const char *reason,
                                                            const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *ref = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Pod",
                            "metadata", "name", p->name, "namespace", p->ns, "uid", p->uid);
    ck_event_recordf(a->events, ref, type, reason, "%s", msg);
    json_decref(ref);
}

/* An event of the runtime about a pod (image pulls). */
static void runtime_event(void *arg, const struct ck__rt_pod *rp, const char *type,
                          const char *reason, const char *message)
{
    struct ck_agent *a = arg;
    json_t *ref = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Pod",
                            "metadata", "name", rp->name, "namespace", rp->ns, "uid", rp->uid);
    ck_event_recordf(a->events, ref, type, reason, "%s", message);
    json_decref(ref);
}

/* ---- the node ---- */

static char *host_address(void)
{
    struct ifaddrs *ifs = NULL, *i;
    char buf[INET_ADDRSTRLEN] = "127.0.0.1";
    if (getifaddrs(&ifs) == 0) {
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)i->ifa_addr;
                if ((ntohl(a->sin_addr.s_addr) >> 24) == 127)
                    continue;
                inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
                break;
            }
        freeifaddrs(ifs);
    }
    return strdup(buf);
}

/*
 * The node's conditions for the pressures p and the runtime's last status: Ready is
 * False with kubelet's reason and message while the runtime is not ready.
 */
static json_t *node_conditions(struct ck_agent *a, const struct ck_pressure *p)
{
    json_t *conds = ck_agent_node_conditions_with(p);
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (!a->rt_status.ready &&
            strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Ready") == 0) {
            json_object_set_new(c, "status", json_string("False"));
            json_object_set_new(c, "reason", json_string("KubeletNotReady"));
            json_object_set_new(c, "message", json_string(a->rt_status.message));
        }
    }
    return conds;
}

/* Asks the runtime for its part of the node's status (its readiness, its images). */
static void refresh_runtime_status(struct ck_agent *a)
{
    json_decref(a->rt_status.images);
    a->rt->ops->node_status(a->rt, &a->rt_status);
}

static json_t *node_object(struct ck_agent *a)
{
    char cpu[32], mem[48], disk[48], pods[16];
    snprintf(cpu, sizeof(cpu), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(mem, sizeof(mem), "%lldKi",
             (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1024);
    struct statvfs vfs;
    long long bytes = statvfs(a->root_dir, &vfs) == 0
                          ? (long long)(vfs.f_blocks * (unsigned long)vfs.f_frsize)
                          : 0;
    snprintf(disk, sizeof(disk), "%lldKi", bytes / 1024);
    snprintf(pods, sizeof(pods), "%d", a->config.max_pods);
    struct utsname u;
    uname(&u);
    char runtime[256];
    a->rt->ops->version(a->rt, runtime, sizeof(runtime));
    const char *arch = strcmp(u.machine, "x86_64") == 0    ? "amd64"
                       : strcmp(u.machine, "aarch64") == 0 ? "arm64"
                                                           : u.machine;
    json_t *status = json_pack(
        "{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:o, s:[{s:s, s:s}, {s:s, s:s}],"
        " s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:{s:{s:i}}}",
        "capacity", "cpu", cpu, "memory", mem, "pods", pods, "ephemeral-storage", disk,
        "allocatable", "cpu", cpu, "memory", mem, "pods", pods, "ephemeral-storage", disk,
        "conditions", node_conditions(a, &a->pressure), "addresses", "type", "InternalIP",
        "address", a->host_ip, "type", "Hostname", "address", a->node_name, "nodeInfo",
        "kubeletVersion", "v1.32.0-ckube", "kubeProxyVersion", "", "osImage", u.sysname,
        "kernelVersion", u.release, "containerRuntimeVersion", runtime, "operatingSystem", "linux",
        "architecture", arch, "machineID", a->node_name, "systemUUID", a->node_name, "bootID", "",
        "daemonEndpoints", "kubeletEndpoint", "Port", a->config.port);
    json_t *node = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s, s:s}}, s:{}, s:o}",
                             "apiVersion", "v1", "kind", "Node", "metadata", "name", a->node_name,
                             "labels", "kubernetes.io/hostname", a->node_name, "kubernetes.io/os",
                             "linux", "kubernetes.io/arch", arch, "beta.kubernetes.io/os", "linux",
                             "beta.kubernetes.io/arch", arch, "spec", "status", status);
    if (node && a->rt_status.images)
        json_object_set(json_object_get(node, "status"), "images", a->rt_status.images);
    return node;
}

static int register_node(struct ck_agent *a, struct ck_err *reterr)
{
    json_t *node = node_object(a);
    json_t *taints = ck_agent_pressure_taints(NULL, &a->pressure);
    if (node && json_array_size(taints)) /* a new node carries them from the start */
        json_object_set(json_object_get(node, "spec"), "taints", taints);
    json_decref(taints);
    int r = node ? ck_agent_register_node(&a->ctl, node, &a->lease, reterr)
                 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(node);
    return r;
}

/*
 * The supervisor's wait between ticks: d at most, less when a pod changed (an informer
 * event), so a new pod starts at once as kubelet's pod workers react to events. True
 * when stopping.
 */
static bool wait_tick(struct ck_agent *a, int64_t d)
{
    pthread_mutex_lock(&a->stop_lock);
    int64_t deadline = ck_clock_now(NULL) + d;
    while (!a->stopping && !a->kicked && ck_clock_now(NULL) < deadline)
        ck_clock_wait(NULL, &a->stop_cond, &a->stop_lock, deadline);
    a->kicked = false;
    bool stop = a->stopping;
    pthread_mutex_unlock(&a->stop_lock);
    return stop;
}

static void kick(struct ck_agent *a)
{
    pthread_mutex_lock(&a->stop_lock);
    a->kicked = true;
    pthread_cond_broadcast(&a->stop_cond);
    pthread_mutex_unlock(&a->stop_lock);
}

static void on_pod_add(const json_t *obj, bool initial, void *arg)
{
    (void)obj, (void)initial;
    kick(arg);
}

static void on_pod_update(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj, (void)new_obj;
    kick(arg);
}

static void on_pod_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                          void *arg)
{
    (void)obj, (void)t;
    kick(arg);
}

static bool wait_stop(struct ck_agent *a, int64_t d)
{
    pthread_mutex_lock(&a->stop_lock);
    int64_t deadline = ck_clock_now(NULL) + d;
    while (!a->stopping && ck_clock_now(NULL) < deadline)
        ck_clock_wait(NULL, &a->stop_cond, &a->stop_lock, deadline);
    bool stop = a->stopping;
    pthread_mutex_unlock(&a->stop_lock);
    return stop;
}

/*
 * The kubelet's node events for the pressure conditions that changed from `was` (NULL:
 * all of them, as at registration): NodeHasInsufficientMemory, NodeHasSufficientMemory...
 */
static void pressure_events(struct ck_agent *a, const char *uid, const struct ck_pressure *was,
                            const struct ck_pressure *now)
{
    static const char *const names[][2] = {{"NodeHasSufficientMemory", "NodeHasInsufficientMemory"},
                                           {"NodeHasNoDiskPressure", "NodeHasDiskPressure"},
                                           {"NodeHasSufficientPID", "NodeHasInsufficientPID"}};
    const bool is[] = {now->memory, now->disk, now->pid};
    const bool before[] = {was && was->memory, was && was->disk, was && was->pid};
    json_t *ref = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Node",
                            "metadata", "name", a->node_name, "uid", uid ? uid : "");
    for (size_t k = 0; k < 3; k++)
        if (!was || before[k] != is[k])
            ck_event_recordf(a->events, ref, CK_EVENT_NORMAL, names[k][is[k]],
                             "Node %s status is now: %s", a->node_name, names[k][is[k]]);
    json_decref(ref);
}

/*
 * Measures the pressures; when one changed, writes the node's conditions (transition
 * times kept for the others) and the NoSchedule taints that go with them.
 */
static void update_pressure(struct ck_agent *a, const json_t *node)
{
    struct ck_pressure_sample sample;
    struct ck_pressure now;
    if (!node || ck_pressure_measure(a->root_dir, &sample) < 0)
        return;
    ck_pressure_evaluate(&a->thresholds, &sample, &now);
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    json_t *want_taints = ck_agent_pressure_taints(taints, &now);
    bool same = now.memory == a->pressure.memory && now.disk == a->pressure.disk &&
                now.pid == a->pressure.pid;
    bool taints_ok = taints ? json_equal(want_taints, taints) : !json_array_size(want_taints);
    struct ck_err err = {0};
    if (!same) {
        json_t *copy = ck__json_copy(node);
        json_t *conds = node_conditions(a, &now);
        size_t i, j;
        json_t *c, *o;
        json_array_foreach(conds, i, c)
        {
            json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), j, o)
            {
                if (json_equal(json_object_get(o, "type"), json_object_get(c, "type")) &&
                    json_equal(json_object_get(o, "status"), json_object_get(c, "status")) &&
                    json_object_get(o, "lastTransitionTime"))
                    json_object_set(c, "lastTransitionTime",
                                    json_object_get(o, "lastTransitionTime"));
            }
        }
        json_object_set_new(json_object_get(copy, "status"), "conditions", conds);
        json_t *written = NULL;
        if (ck_ctl_update_status(&a->ctl, a->nodes_res, "", copy, &written, &err) == 0) {
            char m[64];
            snprintf(m, sizeof(m), "memory=%d disk=%d pid=%d", now.memory, now.disk, now.pid);
            CK_LOGS(0, "Node pressure changed", "node", a->node_name, "pressure", m);
            pressure_events(a, ck__meta_str(node, "uid"), &a->pressure, &now);
            a->pressure = now;
            /* the taints go on the node as written now */
            json_decref(copy);
            copy = written;
            taints_ok = false;
        } else {
            CK_LOGS(0, "Unable to write node pressure", "node", a->node_name, "err", err.msg);
            json_decref(copy);
            copy = NULL;
        }
        if (copy && !taints_ok) {
            json_object_set(json_object_get(copy, "spec"), "taints", want_taints);
            if (ck_ctl_update(&a->ctl, a->nodes_res, "", copy, NULL, &err) < 0)
                CK_LOGS(0, "Unable to write node taints", "node", a->node_name, "err", err.msg);
        }
        json_decref(copy);
    } else if (!taints_ok) {
        json_t *copy = ck__json_copy(node);
        if (!json_object_get(copy, "spec"))
            json_object_set_new(copy, "spec", json_object());
        json_object_set(json_object_get(copy, "spec"), "taints", want_taints);
        if (ck_ctl_update(&a->ctl, a->nodes_res, "", copy, NULL, &err) < 0)
            CK_LOGS(0, "Unable to write node taints", "node", a->node_name, "err", err.msg);
        json_decref(copy);
    }
    json_decref(want_taints);
}

/* The Ready condition of a list of conditions, or NULL. */
static json_t *find_ready(const json_t *conds)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Ready") == 0)
            return c;
    }
    return NULL;
}

/* The node's Ready condition, or NULL. */
static const json_t *ready_condition(const json_t *node)
{
    return find_ready(json_object_get(json_object_get(node, "status"), "conditions"));
}

/* The node as an event's involved object. */
static json_t *node_ref(const struct ck_agent *a, const json_t *node)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Node", "metadata",
                     "name", a->node_name, "uid", ck__meta_str(node, "uid") ?: "");
}

/*
 * Writes the runtime's part of the node's status when it changed: the Ready condition
 * (its transition time kept while its status stays) and the images, with kubelet's
 * NodeReady / NodeNotReady event. Returns the node as it now is (node, or the written
 * one, node's reference taken).
 */
static json_t *update_runtime_status(struct ck_agent *a, json_t *node)
{
    const json_t *was = ready_condition(node);
    json_t *conds = node_conditions(a, &a->pressure);
    json_t *want = json_incref(find_ready(conds));
    json_decref(conds);
    const json_t *images = json_object_get(json_object_get(node, "status"), "images");
    bool same_status = json_equal(json_object_get(was, "status"), json_object_get(want, "status"));
    if (!want || (was && same_status &&
                  json_equal(json_object_get(was, "reason"), json_object_get(want, "reason")) &&
                  json_equal(json_object_get(was, "message"), json_object_get(want, "message")) &&
                  (a->rt_status.images ? images && json_equal(images, a->rt_status.images)
                                       : !json_array_size(images)))) {
        json_decref(want);
        return node;
    }
    if (same_status && json_object_get(was, "lastTransitionTime"))
        json_object_set(want, "lastTransitionTime", json_object_get(was, "lastTransitionTime"));
    json_t *copy = ck__json_copy(node);
    json_t *status = json_object_get(copy, "status");
    json_t *list = json_object_get(status, "conditions");
    size_t i;
    json_t *c;
    bool replaced = false;
    json_array_foreach(list, i, c)
    {
        if (!replaced &&
            strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Ready") == 0) {
            json_array_set(list, i, want);
            replaced = true;
        }
    }
    if (!replaced && json_is_array(list))
        json_array_append(list, want);
    if (a->rt_status.images)
        json_object_set(status, "images", a->rt_status.images);
    else
        json_object_del(status, "images");
    json_t *written = NULL;
    struct ck_err err = {0};
    if (ck_ctl_update_status(&a->ctl, a->nodes_res, "", copy, &written, &err) < 0) {
        CK_LOGS(0, "Error updating node status", "node", a->node_name, "err", err.msg);
        json_decref(copy);
        json_decref(want);
        return node;
    }
    if (!same_status) {
        const char *reason = a->rt_status.ready ? "NodeReady" : "NodeNotReady";
        CK_LOGS(0, "Node's Ready condition changed", "node", a->node_name, "ready",
                a->rt_status.ready ? "True" : "False", "message",
                json_string_value(json_object_get(want, "message")) ?: "");
        json_t *ref = node_ref(a, node);
        ck_event_recordf(a->events, ref, CK_EVENT_NORMAL, reason, "Node %s status is now: %s",
                         a->node_name, reason);
        json_decref(ref);
    }
    json_decref(copy);
    json_decref(want);
    json_decref(node);
    return written;
}

/*
 * How long the renewer looks for the node's pod range at its quick pace after starting
 * (kubelet's nodeReadyGracePeriod of fastStatusUpdateOnce); the Node registered first.
 * When it has none by then, --pod-cidr serves: the controller manager gives none.
 */
#define POD_CIDR_QUICK_FOR    (2 * 60 * CK_SEC)
#define POD_CIDR_QUICK_PERIOD (200 * CK_MSEC)

/* The renewer's own record of the ranges it gave the runtime. */
struct pod_cidr_state {
    char refused[64]; /* the range the runtime last refused, its error reported; "" none */
    bool flag_used;   /* --pod-cidr was given (and logged) */
};

/*
 * Gives the runtime the node's pod range, as the kubelet's node status update does
 * (updatePodCIDR): the Node's spec.podCIDR; --pod-cidr only when the Node has none once
 * flag_due. A range the runtime refuses (its sandboxes hold another) is an error in the
 * log and a Warning event PodCIDRChangeRefused on the Node, once until another range is
 * refused or one is taken. True when the runtime has a range.
 */
static bool update_pod_cidr(struct ck_agent *a, const json_t *node, bool flag_due,
                            struct pod_cidr_state *st)
{
    const char *cidr = ck__cni_node_range(node, a->config.pod_cidr, flag_due);
    if (!cidr || !a->rt->ops->set_pod_cidr)
        return false;
    struct ck_err err = {0};
    int r = a->rt->ops->set_pod_cidr(a->rt, cidr, &err);
    if (r == 0) {
        if (cidr == a->config.pod_cidr && !st->flag_used)
            CK_LOGS(0, "Node has no spec.podCIDR: the pod range is --pod-cidr's", "node",
                    a->node_name, "podCIDR", cidr);
        st->flag_used = st->flag_used || cidr == a->config.pod_cidr;
        st->refused[0] = 0;
        return true;
    }
    if (strcmp(st->refused, cidr) != 0) {
        CK_LOGS(0, "Error updating pod CIDR", "podCIDR", cidr, "err", err.msg);
        if (r == CK_EPERM) {
            json_t *ref = node_ref(a, node);
            ck_event_recordf(a->events, ref, CK_EVENT_WARNING, "PodCIDRChangeRefused", "%s",
                             err.msg);
            json_decref(ref);
        }
        snprintf(st->refused, sizeof(st->refused), "%s", cidr);
    } else
        CK_LOGS(4, "Error updating pod CIDR", "podCIDR", cidr, "err", err.msg);
    ck_err_release(&err);
    return r == CK_EPERM; /* the runtime kept the range its sandboxes hold */
}

static void *renewer_main(void *arg)
{
    struct ck_agent *a = arg;
    int64_t freq = a->config.node_status_update_frequency;
    int64_t started = ck_clock_now(NULL), next_status = started + freq;
    /*
     * Until the node has a pod range, its Node is read at a quick pace for a while
     * (kubelet's fastStatusUpdateOnce), so pods outside the host network need not wait a
     * whole status period after the controller manager gives the range.
     */
    bool have_cidr = !a->rt->ops->set_pod_cidr;
    struct pod_cidr_state cidr_state = {.flag_used = false};
    for (;;) {
        int64_t now = ck_clock_now(NULL);
        bool quick_for = now - started < POD_CIDR_QUICK_FOR;
        bool quick = !have_cidr && quick_for && next_status - now > POD_CIDR_QUICK_PERIOD;
        if (wait_stop(a, quick ? POD_CIDR_QUICK_PERIOD : next_status - now))
            break;
        if (quick) {
            struct ck_err err = {0};
            json_t *node = NULL;
            if (ck_ctl_get(&a->ctl, a->nodes_res, "", a->node_name, &node, &err) == 0 &&
                update_pod_cidr(a, node, false, &cidr_state)) {
                have_cidr = true;
                kick(a); /* pods waiting for the network look again */
            }
            json_decref(node);
            continue;
        }
        next_status = ck_clock_now(NULL) + freq;
        struct ck_err err = {0};
        json_t *node = NULL;
        refresh_runtime_status(a);
        if (ck_agent_renew_lease(&a->ctl, &a->lease, &err) < 0 ||
            ck_ctl_get(&a->ctl, a->nodes_res, "", a->node_name, &node, &err) < 0 ||
            (!ck_agent_node_ready(node) &&
             strcmp(json_string_value(json_object_get(ready_condition(node), "reason")) ?: "",
                    "KubeletNotReady") != 0)) {
            /*
             * the lease or the node went away, or the node is not Ready for another
             * reason than the runtime's (the node lifecycle controller's Unknown): register
             * again
             */
            if (register_node(a, &err) < 0)
                CK_LOGS(0, "Unable to register node", "node", a->node_name, "err", err.msg);
            else
                CK_LOGS(2, "Node registered again", "node", a->node_name);
        } else {
            have_cidr = update_pod_cidr(a, node, !quick_for, &cidr_state) || have_cidr;
            node = update_runtime_status(a, node);
            update_pressure(a, node);
        }
        json_decref(node);
    }
    return NULL;
}

/* ---- containers ---- */

/* The current log file of an attempt, named as the kubelet names it (<attempt>.log). */
static void ctr_log(const struct pod_run *p, const struct container *c, int attempt, char *buf,
                    size_t size)
{
    if (snprintf(buf, size, "%s/containers/%s/%d.log", p->dir, c->name, attempt) >= (int)size)
        buf[0] = 0; /* too long: no such file */
}

/* A fieldRef's value (the downward API) or NULL. */
static char *field_ref(struct ck_agent *a, const json_t *pod, const char *path)
{
    const json_t *meta = json_object_get(pod, "metadata");
    char key[512];
    if (strcmp(path, "metadata.name") == 0 || strcmp(path, "metadata.namespace") == 0 ||
        strcmp(path, "metadata.uid") == 0)
        return strdup(json_string_value(json_object_get(meta, path + 9)) ?: "");
    if (strcmp(path, "spec.nodeName") == 0)
        return strdup(a->node_name);
    if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.hostIP") == 0)
        return strdup(a->host_ip);
    if (strcmp(path, "spec.serviceAccountName") == 0)
        return strdup(
            json_string_value(json_object_get(json_object_get(pod, "spec"), "serviceAccountName"))
                ?: "");
    const char *which = strncmp(path, "metadata.labels['", 17) == 0        ? "labels"
                        : strncmp(path, "metadata.annotations['", 22) == 0 ? "annotations"
                                                                           : NULL;
    if (which) {
        const char *start = strchr(path, '\'') + 1, *end = strrchr(path, '\'');
        if (end <= start || (size_t)(end - start) >= sizeof(key))
            return NULL;
        memcpy(key, start, (size_t)(end - start));
        key[end - start] = 0;
        return strdup(json_string_value(json_object_get(json_object_get(meta, which), key)) ?: "");
    }
    return NULL;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

struct ref_ctx {
    struct ck_agent *a;
    const struct pod_run *p;
    json_t **tokens; /* the pod's token cache (setting up volumes only; else NULL) */
};

static char *field_ref_cb(void *arg, const char *path)
{
    struct ref_ctx *c = arg;
    return field_ref(c->a, c->p->pod, path);
}

static void warn_cb(void *arg, const char *reason, const char *msg)
{
    struct ref_ctx *c = arg;
    pod_event(c->a, c->p, CK_EVENT_WARNING, reason, "%s", msg);
}

/* POST serviceaccounts/SA/token in the pod's namespace, as the node (podconfig.c). */
/*
 * A TokenRequest for the pod's account sa, answered from the pod's cache while the cached
 * token is young: the kubelet's token manager asks again once a token is past 80% of its
 * lifetime or older than 24 h.
 */
static int token_cb(void *arg, const char *sa, const json_t *request, json_t **ret,
                    struct ck_err *reterr)
{
    struct ref_ctx *c = arg;
    const struct ck_resource *res = ck_controller_resource("", "v1", "serviceaccounts");
    char path[1024];
    if (!res || ck_rest_path(res, c->p->ns, sa, "token", NULL, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "no path for serviceaccount %s/%s", c->p->ns, sa);
    char *key = json_dumps(request, JSON_SORT_KEYS | JSON_COMPACT);
    char *full = NULL;
    if (!key || asprintf(&full, "%s %s", sa, key) < 0)
        full = NULL;
    free(key);
    const json_t *cached = full && c->tokens ? json_object_get(*c->tokens, full) : NULL;
    int64_t now = ck_clock_now(NULL);
    if (cached && now < json_integer_value(json_object_get(cached, "refreshAt"))) {
        *ret = json_pack("{s:{s:O}}", "status", "token", json_object_get(cached, "token"));
        free(full);
        return *ret ? 0 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    int r = ck_rest_do(c->a->config.client, "POST", path, request, NULL, ret, reterr);
    const json_t *token = json_object_get(json_object_get(*ret, "status"), "token");
    const char *expires =
        json_string_value(json_object_get(json_object_get(*ret, "status"), "expirationTimestamp"));
    int64_t expiry_s = 0;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    if (r == 0 && full && c->tokens && json_is_string(token) && expires &&
        ck__time_parse(expires, &expiry_s, NULL) == 0 && expiry_s > wall.tv_sec) {
        int64_t ttl = (expiry_s - wall.tv_sec) * CK_SEC;
        int64_t refresh = ttl / 10 * 8 < 24 * 3600 * CK_SEC ? ttl / 10 * 8 : 24 * 3600 * CK_SEC;
        if (!*c->tokens)
            *c->tokens = json_object();
        json_object_set_new(
            *c->tokens, full,
            json_pack("{s:O, s:I}", "token", token, "refreshAt", (json_int_t)(now + refresh)));
    }
    free(full);
    return r;
}

/*
 * The service link variables first (kubelet's getServiceEnvVarMap): the master Service's
 * always, the pod's namespace's unless enableServiceLinks is false; from the Services'
 * informer, so nothing is asked of the API server per container.
 */
static void service_links(struct ck_agent *a, const struct pod_run *p, struct ck__env *env)
{
    const json_t *links = json_object_get(json_object_get(p->pod, "spec"), "enableServiceLinks");
    bool enable = !json_is_false(links); /* the API's default: true */
    struct ck_obj_list master = {0}, own = {0};
    struct ck_err err = {0};
    ck_lister_list(&a->svc_lister, "default", NULL, &master, &err);
    if (enable && strcmp(p->ns, "default") != 0)
        ck_lister_list(&a->svc_lister, p->ns, NULL, &own, &err);
    const json_t **all = calloc(master.n + own.n + 1, sizeof(*all));
    for (size_t i = 0; all && i < master.n; i++)
        all[i] = master.items[i];
    for (size_t i = 0; all && i < own.n; i++)
        all[master.n + i] = own.items[i];
    if (all)
        ck__service_links_env(all, master.n + own.n, p->ns, enable, env);
    free(all);
    ck_obj_list_release(&master);
    ck_obj_list_release(&own);
}

/*
 * The container's environment: the service links, envFrom and ConfigMap/Secret
 * references (podconfig.c), then values ($(VAR)-expanded) and fieldRefs. NULL when a reference
 * fails and reterr is given (the error in it); without reterr such references are left out. The
 * process runtime adds PATH and HOSTNAME (ck__process_env); a CRI runtime takes PATH from the
 * image.
 */
static char **container_env(struct ck_agent *a, const struct pod_run *p, const json_t *spec_c,
                            struct ck_err *reterr)
{
    struct ck__env env = {0};
    struct ref_ctx ctx = {a, p, NULL};
    struct ck__pod_refs refs = {&a->ctl, p->ns, field_ref_cb, warn_cb, &ctx, NULL};
    struct ck_err err = {0};
    service_links(a, p, &env);
    if (ck__env_from_refs(&refs, spec_c, &env, &err) < 0 && reterr) {
        *reterr = err;
        ck__env_free(&env);
        return NULL;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(spec_c, "env"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *from = json_object_get(e, "valueFrom");
        if (!name || json_object_get(from, "configMapKeyRef") ||
            json_object_get(from, "secretKeyRef"))
            continue;
        const char *value = json_string_value(json_object_get(e, "value"));
        char *owned = NULL;
        const char *fp =
            json_string_value(json_object_get(json_object_get(from, "fieldRef"), "fieldPath"));
        if (fp)
            value = owned = field_ref(a, p->pod, fp);
        else if (value && *value) /* $(VAR): the variables so far, then the services' */
            value = owned = ck__expand_vars(value, env.v);
        ck__env_add(&env, name, value ? value : "");
        free(owned);
    }
    if (!env.v) /* no variables: an empty list */
        env.v = calloc(1, sizeof(*env.v));
    return env.v;
}

/*
 * The environment host commands (the process runtime's probes, hooks and exec) run with:
 * the running attempt's, else a fresh one, with the host's PATH and HOSTNAME.
 */
static char **probe_env(struct ck_agent *a, const struct pod_run *p, const struct container *c,
                        const json_t *sc)
{
    char **own = c->envp ? NULL : container_env(a, p, sc, NULL);
    struct ck__env env = {0};
    ck__process_env(p->name, c->envp ? c->envp : own, &env);
    strv_free(own);
    return env.v;
}

/* A string list of the spec ($(VAR)-expanded with envp), NULL when it has none. */
static char **expanded_list(const json_t *list, char *const *envp)
{
    size_t n = json_array_size(list), i;
    if (n == 0)
        return NULL;
    char **v = calloc(n + 1, sizeof(*v));
    json_t *s;
    json_array_foreach(list, i, s)
    {
        if (v && !(v[i] = ck__expand_vars(json_string_value(s) ?: "", envp))) {
            strv_free(v);
            v = NULL;
        }
    }
    return v;
}

static const json_t *spec_container(const struct pod_run *p, const char *name)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    const json_t *spec = json_object_get(p->pod, "spec");
    const json_t *c = NULL;
    for (size_t l = 0; l < 3 && !c; l++)
        c = ck__json_find(json_object_get(spec, lists[l]), "name", name);
    return c;
}

/* An init container that runs for the pod's life (restartPolicy Always). */
static bool is_sidecar(const json_t *spec_c)
{
    const char *policy = json_string_value(json_object_get(spec_c, "restartPolicy"));
    return policy && strcmp(policy, "Always") == 0;
}

static void init_probes(const struct pod_run *p, struct container *c)
{
    const json_t *sc = spec_container(p, c->name);
    ck_probe_state_init(&c->startup, json_object_get(sc, "startupProbe"), c->started_ns, false);
    ck_probe_state_init(&c->liveness, json_object_get(sc, "livenessProbe"), c->started_ns, true);
    ck_probe_state_init(&c->readiness, json_object_get(sc, "readinessProbe"), c->started_ns, false);
    c->started_ok = !json_object_get(sc, "startupProbe");
    c->ready_ok = !json_object_get(sc, "readinessProbe");
}

/* An exec probe or hook inside the container, through the runtime (CRI's ExecSync). */
struct runtime_exec {
    struct ck_agent *a;
    const struct pod_run *p;
    const struct container *c;
};

static bool exec_in_runtime(void *arg, char *const *argv, int64_t timeout_ns, char *msg,
                            size_t size)
{
    struct runtime_exec *x = arg;
    int code = -1;
    int r = x->a->rt->ops->exec(x->a->rt, &x->p->rp, x->c->id, argv, NULL, NULL, timeout_ns, &code,
                                msg, size);
    if (r == CK_ETIMEDOUT)
        snprintf(msg, size, "command timed out after %llds", (long long)(timeout_ns / CK_SEC));
    else if (r == 0 && code != 0 && (!msg[0] || size == 0))
        snprintf(msg, size, "command exited with %d", code);
    return r == 0 && code == 0;
}

/*
 * Runs a probe or hook of c: exec in the container (the runtime's exec, or on the host
 * in its environment with the process runtime), httpGet and tcpSocket at the pod's IP.
 */
static bool run_action(struct ck_agent *a, const struct pod_run *p, const struct container *c,
                       const json_t *probe, char *msg, size_t size)
{
    const json_t *sc = spec_container(p, c->name);
    char **envp = a->rt->ops->exec ? NULL : probe_env(a, p, c, sc);
    const char *wd = json_string_value(json_object_get(sc, "workingDir"));
    struct runtime_exec x = {a, p, c};
    struct ck_probe_target target = {envp,
                                     wd && *wd ? wd : p->dir,
                                     p->rp.ip[0] ? p->rp.ip : a->host_ip,
                                     json_object_get(sc, "ports"),
                                     a->rt->ops->exec ? exec_in_runtime : NULL,
                                     &x};
    bool ok = ck_probe_run(probe, &target, msg, size);
    strv_free(envp);
    return ok;
}

/* Runs s's probe (name in the spec) when it is due: 1, -1 or 0 as ck_probe_state_due. */
static int probe_if_due(struct ck_agent *a, const struct pod_run *p, const struct container *c,
                        struct ck_probe_state *s, const char *name)
{
    const json_t *sc = spec_container(p, c->name);
    s->probe = json_object_get(sc, name); /* the pod's copy changes between ticks */
    int64_t now = now_ns();
    if (!s->probe || now < s->next_at)
        return 0;
    char msg[512];
    bool ok = run_action(a, p, c, s->probe, msg, sizeof(msg));
    if (!ok) {
        CK_LOGS(2, "Probe failed", "probeType", name, "pod", p->name, "container", c->name,
                "output", msg);
        /* the kubelet's prober: Unhealthy, "Readiness probe failed: <output>" */
        const char *type = name[0] == 's' ? "Startup" : name[0] == 'l' ? "Liveness" : "Readiness";
        pod_event(a, p, CK_EVENT_WARNING, "Unhealthy", "%s probe failed: %s", type, msg);
    }
    return ck_probe_state_due(s, now, ok);
}

/* The probes of a running container: startup, then liveness (kill) and readiness. */
static void run_probes(struct ck_agent *a, struct pod_run *p, struct container *c)
{
    if (!c->started_ok) {
        int r = probe_if_due(a, p, c, &c->startup, "startupProbe");
        if (r > 0)
            c->started_ok = true;
        else if (r < 0) {
            CK_LOGS(0, "Container failed startup probe, will be restarted", "pod", p->name,
                    "container", c->name);
            a->rt->ops->stop(a->rt, &p->rp, c->id, 0);
        }
        return;
    }
    if (probe_if_due(a, p, c, &c->liveness, "livenessProbe") < 0) {
        CK_LOGS(0, "Container failed liveness probe, will be restarted", "pod", p->name,
                "container", c->name);
        a->rt->ops->stop(a->rt, &p->rp, c->id, 0);
        c->liveness.failures = 0;
        return;
    }
    probe_if_due(a, p, c, &c->readiness, "readinessProbe");
    c->ready_ok =
        !json_object_get(spec_container(p, c->name), "readinessProbe") || c->readiness.result;
}

/*
 * The pod's pull back-off of image, made on first use; NULL without an image or memory.
 * The kubelet keys it on the pod's UID and the image as the spec writes it: containers
 * of one pod with the same image share it, other pods' pulls of it have their own.
 */
static struct pull_backoff *pull_backoff(struct pod_run *p, const char *image)
{
    if (!image || !*image)
        return NULL;
    for (size_t i = 0; i < p->n_pulls; i++)
        if (strcmp(p->pulls[i].image, image) == 0)
            return &p->pulls[i];
    struct pull_backoff *v = realloc(p->pulls, (p->n_pulls + 1) * sizeof(*v));
    if (!v)
        return NULL;
    p->pulls = v;
    if (!(v[p->n_pulls].image = strdup(image)))
        return NULL;
    v[p->n_pulls].b = (struct ck_agent_backoff){0};
    return &v[p->n_pulls++];
}

/* Whether a waiting reason is one the runtime gave for a start that failed (not a crash). */
static bool start_failure(const char *reason)
{
    static const char *const reasons[] = {
        "RunContainerError", "CreateContainerConfigError", "CreateContainerError", "ErrImagePull",
        "ImagePullBackOff",  "ErrImageNeverPull",          "InvalidImageName",
    };
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(reason, reasons[i]) == 0)
            return true;
    return false;
}

/* How long a postStart hook may run (the kubelet's bound: its runtime call timeout). */
#define POST_START_TIMEOUT_S 120

/*
 * The container's postStart hook (exec or httpGet), right after it started, as the
 * kubelet runs it: when it fails, a FailedPostStartHook event ("PostStartHook failed": the
 * hook's output stays in the log, where secrets do not leak into events) and the
 * container is stopped with the pod's grace period ("Killing", "FailedPostStartHook");
 * it then restarts as its pod's policy says. Runs on the supervisor thread, which waits
 * for it (at most POST_START_TIMEOUT_S).
 */
static void run_post_start(struct ck_agent *a, struct pod_run *p, struct container *c)
{
    const json_t *sc = spec_container(p, c->name);
    const json_t *hook = json_object_get(json_object_get(sc, "lifecycle"), "postStart");
    json_t *probe = hook ? ck__json_copy(hook) : NULL;
    if (!probe)
        return;
    json_object_set_new(probe, "timeoutSeconds", json_integer(POST_START_TIMEOUT_S));
    char msg[512];
    if (!run_action(a, p, c, probe, msg, sizeof(msg))) {
        CK_LOGS(0, "Failed to execute PostStartHook", "pod", p->name, "container", c->name, "err",
                msg);
        pod_event(a, p, CK_EVENT_WARNING, "FailedPostStartHook", "PostStartHook failed");
        pod_event(a, p, CK_EVENT_NORMAL, "Killing", "FailedPostStartHook");
        const json_t *g =
            json_object_get(json_object_get(p->pod, "spec"), "terminationGracePeriodSeconds");
        a->rt->ops->stop(a->rt, &p->rp, c->id, json_is_integer(g) ? json_integer_value(g) : 30);
    }
    json_decref(probe);
}

static void start_container(struct ck_agent *a, struct pod_run *p, struct container *c)
{
    const json_t *sc = spec_container(p, c->name);
    char logp[PATH_MAX];
    int attempt = c->ever_ran ? c->attempt + 1 : 0;
    ctr_log(p, c, attempt, logp, sizeof(logp));
    struct ck_err err = {0};
    char **envp = container_env(a, p, sc, &err);
    if (!envp) { /* a ConfigMap or Secret it needs is missing: retried */
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "CreateContainerConfigError");
        snprintf(c->waiting_message, sizeof(c->waiting_message), "%s", err.msg);
        c->restart_at = now_ns() + 2 * CK_SEC;
        CK_LOGS(0, "Container config error", "pod", p->name, "container", c->name, "err", err.msg);
        pod_event(a, p, CK_EVENT_WARNING, "Failed", "Error: %s", err.msg);
        return;
    }
    char **command = expanded_list(json_object_get(sc, "command"), envp);
    char **args = expanded_list(json_object_get(sc, "args"), envp);
    const char *image = json_string_value(json_object_get(sc, "image"));
    struct pull_backoff *pb = pull_backoff(p, image);
    int64_t now = now_ns();
    /* the kubelet's IsInBackOffSinceUpdate: a pull failed less than the delay ago */
    bool pull_held = pb && pb->b.delay && now - pb->b.last_update < pb->b.delay;
    struct ck__rt_start start = {c->name, attempt, sc, command, args, envp, logp, pull_held};
    char id[sizeof(c->id)], reason[64] = "";
    int r = a->rt->ops->start(a->rt, &p->rp, &start, id, sizeof(id), reason, sizeof(reason), &err);
    if (r == 0) {
        if (c->ever_ran)
            ck_agent_backoff_next(&c->backoff, now_ns());
        snprintf(c->id, sizeof(c->id), "%s", id);
        c->attempt = attempt;
        c->ever_ran = true;
        c->running = true;
        c->has_exit = false;
        c->started_ns = now_ns();
        c->waiting_reason[0] = 0;
        c->image_ref[0] = 0;
        strv_free(c->envp);
        c->envp = envp;
        envp = NULL;
        init_probes(p, c);
        CK_LOGS(2, "Container started", "pod", p->name, "container", c->name, "containerID", c->id);
        pod_event(a, p, CK_EVENT_NORMAL, "Created", "Created container %s", c->name);
        pod_event(a, p, CK_EVENT_NORMAL, "Started", "Started container %s", c->name);
        run_post_start(a, p, c);
    } else {
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "%s",
                 reason[0] ? reason : "RunContainerError");
        snprintf(c->waiting_message, sizeof(c->waiting_message), "%s", err.msg);
        if (strcmp(reason, "ErrImagePull") == 0 && pb) {
            /* the kubelet's image back-off, per pod and image: 10 s doubling to 5 min */
            ck_agent_backoff_next(&pb->b, now_ns());
            c->pull_failed_at = pb->b.last_update;
            c->restart_at = pb->b.last_update + pb->b.delay;
        } else if (strcmp(reason, "ImagePullBackOff") == 0 && pb) /* another container's */
            c->restart_at = pb->b.last_update + pb->b.delay;
        else if (strncmp(reason, "ErrImage", 8) == 0 || strcmp(reason, "InvalidImageName") == 0)
            c->restart_at = now_ns() + CK_AGENT_BACKOFF_INITIAL;
        else
            c->restart_at = now_ns() + CK_AGENT_BACKOFF_INITIAL;
        CK_LOGS(0, "Container failed to start", "pod", p->name, "container", c->name, "reason",
                c->waiting_reason, "err", err.msg);
        pod_event(a, p, CK_EVENT_WARNING, "Failed", "Error: %s", err.msg);
    }
    strv_free(command);
    strv_free(args);
    strv_free(envp);
}

/* After a restart of the agent: the newest attempt of c the runtime has, running or ended. */
static void adopt_container(struct ck_agent *a, struct pod_run *p, struct container *c)
{
    int attempt;
    char id[sizeof(c->id)];
    if (a->rt->ops->find(a->rt, &p->rp, c->name, &attempt, id, sizeof(id)) < 0)
        return;
    struct ck__rt_state st;
    if (a->rt->ops->state(a->rt, &p->rp, c->name, attempt, id, &st) < 0)
        return;
    c->attempt = attempt;
    c->ever_ran = true;
    snprintf(c->id, sizeof(c->id), "%s", id);
    snprintf(c->image_ref, sizeof(c->image_ref), "%s", st.image_ref);
    c->started_ns = st.started_ns ? st.started_ns : now_ns();
    c->running = true; /* an ended one is seen to end at the next tick */
    init_probes(p, c);
    CK_LOGS(0, "Container found again", "pod", p->name, "container", c->name, "containerID", c->id,
            "running", st.running ? "true" : "false");
}

static json_t *terminated_state(const struct container *c)
{
    char started[40], finished[40];
    fmt_time(c->started_ns, started, sizeof(started));
    fmt_time(c->exit.finished_ns, finished, sizeof(finished));
    const char *reason = c->exit.oom_killed  ? "OOMKilled"
                         : c->exit.code == 0 ? "Completed"
                                             : "Error";
    json_t *st =
        json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", c->exit.code, "reason",
                  reason, "startedAt", started, "finishedAt", finished, "containerID", c->id);
    if (st && c->message)
        json_object_set_new(json_object_get(st, "terminated"), "message",
                            json_string_nocheck(c->message));
    return st;
}

/*
 * The ended attempt's termination message (the kubelet's getTerminationMessage): its
 * termination file (the CRI runtime mounts it at terminationMessagePath), else under
 * FallbackToLogsOnError the tail of its log when it failed.
 */
static void read_termination_message(const struct pod_run *p, struct container *c,
                                     const json_t *spec_c)
{
    char file[PATH_MAX], log[PATH_MAX];
    free(c->message);
    c->message = NULL;
    if (snprintf(file, sizeof(file), "%s/containers/%s/%d/" CK__TERMINATION_LOG, p->dir, c->name,
                 c->attempt) >= (int)sizeof(file))
        return;
    ctr_log(p, c, c->attempt, log, sizeof(log));
    c->message = ck__termination_message(
        file, log[0] ? log : NULL,
        json_string_value(json_object_get(spec_c, "terminationMessagePolicy")), c->exit.code);
    /* a message that is not UTF-8 is not JSON: its bytes past the longest valid prefix go */
    size_t n = c->message ? strlen(c->message) : 0;
    while (n > 0) {
        json_t *j = json_stringn(c->message, n);
        if (j) {
            json_decref(j);
            break;
        }
        n--;
    }
    if (c->message)
        c->message[n] = '\0';
    if (c->message && !*c->message) {
        free(c->message);
        c->message = NULL;
    }
}

static bool should_restart(const struct pod_run *p, const struct container *c)
{
    if (c->ephemeral) /* the kubelet starts an ephemeral container once */
        return false;
    if (c->sidecar) /* whatever the pod's policy, until the pod finishes */
        return !p->finishing;
    const char *policy =
        json_string_value(json_object_get(json_object_get(p->pod, "spec"), "restartPolicy"));
    if (c->init) /* until it succeeds, unless Never */
        return c->exit.code != 0 && (!policy || strcmp(policy, "Never") != 0);
    if (!policy || strcmp(policy, "Always") == 0)
        return true;
    if (strcmp(policy, "OnFailure") == 0)
        return c->exit.code != 0;
    return false;
}

/* One look at a container of a pod that is not being deleted. */
static void supervise(struct ck_agent *a, struct pod_run *p, struct container *c)
{
    if (c->running && now_ns() >= c->state_at) {
        struct ck__rt_state st;
        c->state_at = now_ns() + a->rt->ops->relist_period;
        int r = a->rt->ops->state(a->rt, &p->rp, c->name, c->attempt, c->id, &st);
        if (r == 0 && st.image_ref[0])
            snprintf(c->image_ref, sizeof(c->image_ref), "%s", st.image_ref);
        if (r == CK_ENOENT || (r == 0 && !st.running)) {
            c->exit = r == 0 ? st.exit : (struct ck_proc_exit){137, 9, now_ns(), false};
            c->running = false;
            c->has_exit = true;
            read_termination_message(p, c, spec_container(p, c->name));
            char code[24];
            snprintf(code, sizeof(code), "%d", c->exit.code);
            CK_LOGS(2, "Container exited", "pod", p->name, "container", c->name, "exitCode", code);
            if (should_restart(p, c)) {
                json_decref(c->last_state);
                c->last_state = terminated_state(c);
                c->restart_at = ck_agent_backoff_restart_at(&c->backoff, c->exit.finished_ns);
            } else
                c->done = true;
        }
    }
    if (c->running)
        run_probes(a, p, c);
    else if (!c->done && now_ns() >= c->restart_at)
        start_container(a, p, c);
    if (!c->running && !c->done && strcmp(c->waiting_reason, "ErrImagePull") == 0 &&
        now_ns() >= c->pull_failed_at + 5 * CK_SEC &&
        now_ns() < c->restart_at) { /* waiting for the next pull: kubelet's words */
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "ImagePullBackOff");
        const char *image = json_string_value(json_object_get(spec_container(p, c->name), "image"));
        snprintf(c->waiting_message, sizeof(c->waiting_message), "Back-off pulling image \"%s\"",
                 image ? image : "");
        pod_event(a, p, CK_EVENT_NORMAL, "BackOff", "Back-off pulling image \"%s\"",
                  image ? image : "");
    }
    if (!c->running && !c->done && c->has_exit && !start_failure(c->waiting_reason)) {
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "CrashLoopBackOff");
        if (snprintf(c->waiting_message, sizeof(c->waiting_message),
                     "back-off %llds restarting failed container=%s pod=%s_%s(%s)",
                     (long long)(c->backoff.delay / CK_SEC), c->name, p->name, p->ns,
                     p->uid) >= (int)sizeof(c->waiting_message))
            c->waiting_message[sizeof(c->waiting_message) - 1] = 0;
    }
}

/* ---- status ---- */

static json_t *container_status(const struct pod_run *p, const struct container *c)
{
    const json_t *sc = spec_container(p, c->name);
    const char *image = json_string_value(json_object_get(sc, "image")) ?: "";
    json_t *state;
    char t[40];
    if (c->running) {
        fmt_time(c->started_ns, t, sizeof(t));
        state = json_pack("{s:{s:s}}", "running", "startedAt", t);
    } else if (c->has_exit && (c->done || !c->waiting_reason[0]))
        state = terminated_state(c);
    else if (c->waiting_reason[0])
        state = json_pack("{s:{s:s, s:s}}", "waiting", "reason", c->waiting_reason, "message",
                          c->waiting_message);
    else
        state = json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
    /* a regular init container is ready once it succeeded (the kubelet's prober manager) */
    bool ready = c->ephemeral             ? false
                 : c->init && !c->sidecar ? c->done && c->has_exit && c->exit.code == 0
                                          : c->running && c->started_ok && c->ready_ok;
    json_t *s =
        json_pack("{s:s, s:s, s:s, s:b, s:b, s:i, s:o, s:o}", "name", c->name, "image", image,
                  "imageID", c->image_ref[0] ? c->image_ref : image, "ready", ready, "started",
                  c->running && c->started_ok, "restartCount", c->attempt, "state", state,
                  "lastState", c->last_state ? json_incref(c->last_state) : json_object());
    if (s && c->ever_ran && c->id[0])
        json_object_set_new(s, "containerID", json_string(c->id));
    return s;
}

static json_t *condition(const char *type, bool ok, const char *reason)
{
    json_t *c = json_pack("{s:s, s:s, s:n}", "type", type, "status", ok ? "True" : "False",
                          "lastProbeTime");
    if (c && !ok && reason)
        json_object_set_new(c, "reason", json_string(reason));
    return c;
}

static json_t *pod_status(struct ck_agent *a, const struct pod_run *p)
{
    /*
     * Initialized (GeneratePodInitializedCondition): the regular init containers
     * succeeded and the sidecars started, or an app container started before. A
     * sidecar's readiness counts toward Ready; the phase follows the other containers,
     * and running sidecars count as running (getPhase): a pod whose app containers
     * completed becomes Succeeded or Failed once its sidecars stopped too, while a
     * regular init container failed under Never makes it Failed at once.
     */
    bool initialized = true, init_failed = false, sidecars_ready = true, sidecar_running = false;
    bool app_started = false;
    for (size_t i = p->ninit; i < p->n; i++)
        app_started = app_started || p->ctrs[i].ever_ran;
    json_t *init_statuses = json_array();
    for (size_t i = 0; i < p->ninit; i++) {
        const struct container *c = &p->ctrs[i];
        if (c->sidecar) {
            initialized = initialized && c->running && c->started_ok;
            sidecars_ready = sidecars_ready && c->running && c->started_ok && c->ready_ok;
            sidecar_running = sidecar_running || c->running;
        } else {
            initialized = initialized && c->done && c->exit.code == 0;
            init_failed = init_failed || (c->done && c->exit.code != 0);
        }
        json_array_append_new(init_statuses, container_status(p, c));
    }
    initialized = initialized || app_started;
    bool all_running = p->n > p->ninit && initialized && sidecars_ready, any_running = false,
         all_done = true, any_failed = init_failed;
    json_t *statuses = json_array();
    for (size_t i = p->ninit; i < p->n; i++) {
        const struct container *c = &p->ctrs[i];
        all_running = all_running && c->running && c->started_ok && c->ready_ok;
        any_running = any_running || c->running;
        all_done = all_done && c->done;
        any_failed = any_failed || (c->done && c->exit.code != 0);
        json_array_append_new(statuses, container_status(p, c));
    }
    bool ran = p->n > p->ninit && p->ctrs[p->ninit].ever_ran;
    const char *phase = init_failed ? "Failed" /* getPhase: before the sidecars count */
                        : all_done && ran && !sidecar_running
                            ? (any_failed ? "Failed" : "Succeeded")
                        : initialized && (any_running || ran) ? "Running"
                                                              : "Pending";
    json_t *conds = json_array();
    json_array_append_new(conds, condition("PodReadyToStartContainers", p->sandbox_ready, NULL));
    json_array_append_new(conds, condition("Initialized", initialized, "ContainersNotInitialized"));
    json_array_append_new(conds, condition("Ready", all_running, "ContainersNotReady"));
    json_array_append_new(conds, condition("ContainersReady", all_running, "ContainersNotReady"));
    json_array_append_new(conds, condition("PodScheduled", true, NULL));
    json_t *st = json_pack("{s:s, s:o, s:s, s:[{s:s}], s:s, s:o}", "phase", phase, "conditions",
                           conds, "hostIP", a->host_ip, "hostIPs", "ip", a->host_ip, "startTime",
                           p->start_time, "containerStatuses", statuses);
    if (st && p->rp.ip[0]) {
        json_object_set_new(st, "podIP", json_string(p->rp.ip));
        json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", p->rp.ip));
    }
    if (st && p->ninit)
        json_object_set_new(st, "initContainerStatuses", init_statuses);
    else
        json_decref(init_statuses);
    if (st && p->n_all > p->n) {
        json_t *eph = json_array();
        for (size_t i = p->n; i < p->n_all; i++)
            json_array_append_new(eph, container_status(p, &p->ctrs[i]));
        json_object_set_new(st, "ephemeralContainerStatuses", eph);
    }
    return st;
}

/* Writes the status when it changed; transition times are kept from the last write. */
static void post_status(struct ck_agent *a, struct pod_run *p)
{
    json_t *status = pod_status(a, p);
    if (!status || (p->posted && json_equal(status, p->posted))) {
        json_decref(status);
        return;
    }
    json_t *written = ck__json_copy(status);
    char now[40];
    fmt_time(now_ns(), now, sizeof(now));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *old_time = NULL;
        size_t j;
        json_t *o;
        const json_t *old = json_object_get(json_object_get(p->pod, "status"), "conditions");
        json_array_foreach(old, j, o)
        {
            if (json_equal(json_object_get(o, "type"), json_object_get(c, "type")) &&
                json_equal(json_object_get(o, "status"), json_object_get(c, "status")))
                old_time = json_string_value(json_object_get(o, "lastTransitionTime"));
        }
        json_object_set_new(c, "lastTransitionTime", json_string(old_time ? old_time : now));
    }
    json_t *patch = json_pack("{s:o}", "status", status);
    struct ck_err err = {0};
    int r = ck_ctl_patch(&a->ctl, a->pods_res, p->ns, p->name, "status", CK_PATCH_MERGE, patch,
                         NULL, &err);
    json_decref(patch);
    if (r == 0) {
        json_decref(p->posted);
        p->posted = written;
    } else {
        json_decref(written);
        CK_LOGV(2, "agent: status of %s/%s: %s", p->ns, p->name, err.msg);
    }
}

/* ---- pods ---- */

static struct pod_run *pod_find(struct ck_agent *a, const char *uid)
{
    for (size_t i = 0; i < a->pods.n; i++)
        if (strcmp(a->pods.v[i]->uid, uid) == 0)
            return a->pods.v[i];
    return NULL;
}

static void pod_free(struct pod_run *p)
{
    for (size_t i = 0; i < p->n_all; i++) {
        json_decref(p->ctrs[i].last_state);
        strv_free(p->ctrs[i].envp);
        free(p->ctrs[i].message);
    }
    free(p->ctrs);
    for (size_t i = 0; i < p->n_pulls; i++)
        free(p->pulls[i].image);
    free(p->pulls);
    json_decref(p->pod);
    json_decref(p->next_pod);
    json_decref(p->posted);
    json_decref(p->tokens);
    json_decref(p->claim_paths);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Drops a reference to p taken under the agent's lock; the last one frees it. */
static void pod_unref(struct ck_agent *a, struct pod_run *p)
{
    pthread_mutex_lock(&a->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&a->lock);
    if (last)
        pod_free(p);
}

/*
 * A persistentVolumeClaim volume of a claim bound to a hostPath or local volume becomes
 * that path (the kubelet's volume manager finds the claim's volume and mounts it with
 * the volume's plugin; hostPath and local are the plugins the agent has): vol is
 * rewritten in the pod's copy into a hostPath volume (a hostPath volume's own type,
 * none for local, whose directory must exist), and again in every newer copy of the pod
 * (claim_paths). The caller holds p->lock. A claim not yet Bound fails the setup,
 * retried as the kubelet retries (the scheduler binds a pod before its
 * WaitForFirstConsumer claims are provisioned).
 */
/* Rewrites the pod's persistentVolumeClaim volumes resolved before into their hostPaths. */
static void apply_claim_paths(struct pod_run *p)
{
    size_t i;
    json_t *vol;
    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, vol)
    {
        const char *name = json_string_value(json_object_get(vol, "name"));
        json_t *host = name ? json_object_get(p->claim_paths, name) : NULL;
        if (!host || !json_object_get(vol, "persistentVolumeClaim"))
            continue;
        json_object_del(vol, "persistentVolumeClaim");
        json_object_set_new(vol, "hostPath", json_deep_copy(host));
    }
}

static int resolve_claim(struct ck_agent *a, struct pod_run *p, json_t *vol, struct ck_err *reterr)
{
    const char *claim_name = json_string_value(
        json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
    if (!claim_name)
        return 0;
    const struct ck_resource *claims = ck_controller_resource("", "v1", "persistentvolumeclaims");
    const struct ck_resource *volumes = ck_controller_resource("", "v1", "persistentvolumes");
    json_t *claim = NULL, *pv = NULL;
    int r = claims && volumes ? ck_ctl_get(&a->ctl, claims, p->ns, claim_name, &claim, reterr)
                              : ck_err_set(reterr, CK_ENOENT, "no kind serves volumes");
    if (r < 0)
        return r;
    const char *phase =
        json_string_value(json_object_get(json_object_get(claim, "status"), "phase"));
    const char *volume =
        json_string_value(json_object_get(json_object_get(claim, "spec"), "volumeName"));
    if (!phase || strcmp(phase, "Bound") != 0 || !volume || !*volume) {
        r = ck_err_set(reterr, CK_EINVAL,
                       "PVC %s/%s has non-bound phase (\"%s\") or empty pvc.Spec.VolumeName "
                       "(\"%s\")",
                       p->ns, claim_name, phase ? phase : "", volume ? volume : "");
        goto out;
    }
    if ((r = ck_ctl_get(&a->ctl, volumes, "", volume, &pv, reterr)) < 0)
        goto out;
    const json_t *spec = json_object_get(pv, "spec");
    const json_t *hp = json_object_get(spec, "hostPath");
    const json_t *local = json_object_get(spec, "local");
    const char *path = json_string_value(json_object_get(hp ? hp : local, "path"));
    if (!path) {
        r = ck_err_set(reterr, CK_EINVAL,
                       "volume %s is neither hostPath nor local: no plugin on this node mounts "
                       "it",
                       volume);
        goto out;
    }
    json_t *host = json_pack("{s:s}", "path", path);
    const json_t *type = json_object_get(hp, "type");
    if (host && json_is_string(type))
        json_object_set(host, "type", (json_t *)type);
    /* kept, so that each newer copy of the pod from the cache gets the same path */
    if (!p->claim_paths)
        p->claim_paths = json_object();
    const char *vol_name = json_string_value(json_object_get(vol, "name"));
    if (!host || !p->claim_paths || !vol_name ||
        json_object_set_new(p->claim_paths, vol_name, host) < 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    apply_claim_paths(p);
out:
    json_decref(claim);
    json_decref(pv);
    return r;
}

/*
 * Writes the pod's configMap, secret, downwardAPI and projected volumes, resolves its
 * claims' volumes and checks its hostPath volumes' types; false: retry. A resync writes the first
 * four only (what the kubelet remounts).
 */
static bool setup_volumes(struct ck_agent *a, struct pod_run *p, bool resync)
{
    size_t i;
    json_t *vol;
    struct ref_ctx ctx = {a, p, &p->tokens};
    struct ck__pod_refs refs = {&a->ctl, p->ns, field_ref_cb, warn_cb, &ctx, token_cb};
    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, vol)
    {
        const char *name = json_string_value(json_object_get(vol, "name"));
        char path[PATH_MAX];
        struct ck_err err = {0};
        if (!name || strchr(name, '/') ||
            snprintf(path, sizeof(path), "%s/volumes/%s", p->dir, name) >= (int)sizeof(path) ||
            (resync && json_object_get(vol, "hostPath")))
            continue;
        if ((!resync && resolve_claim(a, p, vol, &err) < 0) ||
            ck__emptydir_setup(p->pod, vol, path, 0, &err) < 0 ||
            ck__volume_write(&refs, vol, path, &err) < 0) {
            char msg[700];
            snprintf(msg, sizeof(msg), "MountVolume.SetUp failed for volume \"%s\" : %s", name,
                     err.msg);
            CK_LOGS(0, "FailedMount", "pod", p->name, "namespace", p->ns, "message", msg);
            pod_event(a, p, CK_EVENT_WARNING, "FailedMount", "%s", msg);
            return false;
        }
    }
    return true;
}

/*
 * A new pod in the table (the agent's lock held): only what needs no runtime and no API
 * server; its first sync does the rest (pod_first_sync).
 */
static struct pod_run *pod_new(struct ck_agent *a, const json_t *pod)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
    const json_t *inits = json_object_get(json_object_get(pod, "spec"), "initContainers");
    struct pod_run *p = calloc(1, sizeof(*p));
    struct pod_run **v = realloc(a->pods.v, (a->pods.n + 1) * sizeof(*v));
    if (v)
        a->pods.v = v;
    if (p) {
        p->n = json_array_size(inits) + json_array_size(containers);
        p->ctrs = calloc(p->n ? p->n : 1, sizeof(*p->ctrs));
        p->pod = ck__json_copy(pod);
    }
    if (!p || !v || !p->ctrs || !p->pod) {
        if (p) {
            free(p->ctrs);
            json_decref(p->pod);
        }
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->refs = 1; /* the table's */
    snprintf(p->uid, sizeof(p->uid), "%s", json_string_value(json_object_get(meta, "uid")) ?: "");
    snprintf(p->ns, sizeof(p->ns), "%s",
             json_string_value(json_object_get(meta, "namespace")) ?: "");
    snprintf(p->name, sizeof(p->name), "%s",
             json_string_value(json_object_get(meta, "name")) ?: "");
    snprintf(p->dir, sizeof(p->dir), "%s/pods/%s", a->root_dir, p->uid);
    p->rp = (struct ck__rt_pod){
        .uid = p->uid, .ns = p->ns, .name = p->name, .dir = p->dir, .pod = p->pod};
    p->ninit = json_array_size(inits);
    const char *st =
        json_string_value(json_object_get(json_object_get(pod, "status"), "startTime"));
    if (st)
        snprintf(p->start_time, sizeof(p->start_time), "%s", st);
    else
        fmt_time(now_ns(), p->start_time, sizeof(p->start_time));
    for (size_t i = 0; i < p->n; i++) {
        const json_t *sc =
            i < p->ninit ? json_array_get(inits, i) : json_array_get(containers, i - p->ninit);
        p->ctrs[i].init = i < p->ninit;
        p->ctrs[i].sidecar = i < p->ninit && is_sidecar(sc);
        snprintf(p->ctrs[i].name, sizeof(p->ctrs[i].name), "%s",
                 json_string_value(json_object_get(sc, "name")) ?: "");
    }
    p->n_all = p->n;
    a->pods.v[a->pods.n++] = p;
    return p;
}

/*
 * The spec's ephemeral containers the pod does not have yet, appended to its containers
 * (the API server lets them be added, never changed or removed). Under the pod's lock.
 */
static void add_ephemeral(struct pod_run *p)
{
    const json_t *list = json_object_get(json_object_get(p->pod, "spec"), "ephemeralContainers");
    size_t i;
    json_t *ec;
    json_array_foreach(list, i, ec)
    {
        const char *name = json_string_value(json_object_get(ec, "name"));
        bool known = !name || !*name;
        for (size_t j = 0; j < p->n_all && !known; j++)
            known = strcmp(p->ctrs[j].name, name) == 0;
        if (known)
            continue;
        struct container *v = realloc(p->ctrs, (p->n_all + 1) * sizeof(*v));
        if (!v)
            return; /* tried again at the next sync */
        p->ctrs = v;
        struct container *c = &p->ctrs[p->n_all++];
        memset(c, 0, sizeof(*c));
        c->ephemeral = true;
        snprintf(c->name, sizeof(c->name), "%s", name);
    }
}

/* A pod's first sync: its directories and volumes, and its containers found again. */
static void pod_first_sync(struct ck_agent *a, struct pod_run *p)
{
    ck__mkdirs(p->dir);
    size_t i;
    json_t *vol;
    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, vol)
    {
        const char *name = json_string_value(json_object_get(vol, "name"));
        char path[PATH_MAX];
        if (name && json_object_get(vol, "emptyDir") && !strchr(name, '/')) {
            if (snprintf(path, sizeof(path), "%s/volumes/%s", p->dir, name) < (int)sizeof(path))
                ck__mkdirs(path);
        }
    }
    ck__mkdirs(p->dir); /* volumes/ exists once an emptyDir made it; else now */
    char vdir[PATH_MAX];
    if (snprintf(vdir, sizeof(vdir), "%s/volumes", p->dir) < (int)sizeof(vdir))
        ck__mkdirs(vdir);
    p->volumes_ready = setup_volumes(a, p, false);
    for (i = 0; i < p->n_all; i++)
        adopt_container(a, p, &p->ctrs[i]);
    p->started = true;
    CK_LOGS(1, "Pod added", "pod", p->name, "namespace", p->ns, "uid", p->uid);
}

/* Deletion: SIGTERM, SIGKILL after the grace period, then the final delete. */
/*
 * The container's preStop hook (exec or httpGet), run as a probe bounded by the grace
 * period, before SIGTERM, as the kubelet does. Runs on the supervisor thread.
 */
static void run_pre_stop(struct ck_agent *a, const struct pod_run *p, const struct container *c,
                         json_int_t grace)
{
    const json_t *sc = spec_container(p, c->name);
    const json_t *hook = json_object_get(json_object_get(sc, "lifecycle"), "preStop");
    if (!hook)
        return;
    json_t *probe = ck__json_copy(hook);
    if (!probe)
        return;
    json_object_set_new(probe, "timeoutSeconds", json_integer(grace > 0 ? grace : 1));
    char msg[512];
    if (!run_action(a, p, c, probe, msg, sizeof(msg)))
        CK_LOGS(0, "PreStop hook failed", "pod", p->name, "container", c->name, "err", msg);
    json_decref(probe);
}

/* ---- sidecar containers (KEP-753: init containers with restartPolicy Always) ---- */

/*
 * The init containers, in order, as the kubelet's computeInitContainerActions runs them:
 * a regular one runs to completion before the next starts; a sidecar lets the next one
 * start once it started (its startupProbe passed; its postStart hook ran, as
 * start_container runs it before returning) and stays supervised for the pod's life,
 * restarted with back-off whenever it ends (should_restart). True when the app
 * containers may run: the regular ones succeeded and every sidecar started, or an app
 * container started already (a sidecar restarting later holds nothing back).
 */
static bool run_init_containers(struct ck_agent *a, struct pod_run *p)
{
    bool app_started = false;
    for (size_t j = p->ninit; j < p->n; j++)
        app_started = app_started || p->ctrs[j].ever_ran;
    for (size_t j = 0; j < p->ninit; j++) {
        struct container *c = &p->ctrs[j];
        if (c->sidecar) {
            supervise(a, p, c);
            if (!app_started && !(c->running && c->started_ok))
                return false;
            continue;
        }
        if (app_started)
            continue;
        if (!(c->done && c->exit.code == 0))
            supervise(a, p, c);
        if (!(c->done && c->exit.code == 0))
            return false;
    }
    return true;
}

/* The pod's grace period for stopping its containers while it is not being deleted. */
static json_int_t spec_grace(const struct pod_run *p)
{
    const json_t *g =
        json_object_get(json_object_get(p->pod, "spec"), "terminationGracePeriodSeconds");
    return json_is_integer(g) ? json_integer_value(g) : 30;
}

/*
 * Stops the running sidecars in reverse order once no other container runs (the
 * kubelet's terminationOrdering): the last one still running gets its stop (its preStop
 * hook first when pre_stop) with grace seconds, the ones before it wait until it ended.
 */
static void stop_sidecars_in_order(struct ck_agent *a, struct pod_run *p, json_int_t grace,
                                   bool pre_stop)
{
    for (size_t j = 0; j < p->n; j++)
        if (!p->ctrs[j].sidecar && p->ctrs[j].running)
            return;
    for (size_t j = p->ninit; j-- > 0;) {
        struct container *c = &p->ctrs[j];
        if (!c->sidecar || !c->running)
            continue;
        if (!c->stop_sent) {
            c->stop_sent = true;
            c->kill_at = now_ns() + (int64_t)grace * CK_SEC;
            pod_event(a, p, CK_EVENT_NORMAL, "Killing", "Stopping container %s", c->name);
            if (pre_stop)
                run_pre_stop(a, p, c, grace);
            a->rt->ops->stop(a->rt, &p->rp, c->id, grace);
        }
        return;
    }
}

/*
 * A pod whose app containers will not run again: all of them ended for good (a
 * restartPolicy Never or OnFailure pod), or a regular init container failed under
 * Never. The kubelet then kills the pod: its sidecars are stopped, not restarted, and
 * the phase follows the app containers (pod_status) once they all ended.
 */
static void finish_sidecars(struct ck_agent *a, struct pod_run *p)
{
    bool init_failed = false, app_done = p->n > p->ninit, app_ran = false, any = false;
    for (size_t j = 0; j < p->n; j++) {
        const struct container *c = &p->ctrs[j];
        any = any || c->sidecar;
        if (j < p->ninit)
            init_failed = init_failed || (!c->sidecar && c->done && c->exit.code != 0);
        else {
            app_done = app_done && c->done;
            app_ran = app_ran || c->ever_ran;
        }
    }
    if (!any || !(init_failed || (app_done && app_ran)))
        return;
    if (!p->finishing)
        CK_LOGS(1, "Pod finished: stopping its sidecar containers", "pod", p->name, "namespace",
                p->ns);
    p->finishing = true;
    for (size_t j = 0; j < p->ninit; j++) /* one waiting out its back-off starts no more */
        if (p->ctrs[j].sidecar && !p->ctrs[j].running)
            p->ctrs[j].done = true;
    stop_sidecars_in_order(a, p, spec_grace(p), true);
    for (size_t j = 0; j < p->ninit; j++) { /* past its grace period (a runtime may not kill) */
        struct container *c = &p->ctrs[j];
        if (c->sidecar && c->running && c->kill_at && now_ns() >= c->kill_at) {
            a->rt->ops->stop(a->rt, &p->rp, c->id, 0);
            c->kill_at = 0;
        }
    }
}

static void terminate(struct ck_agent *a, struct pod_run *p)
{
    int64_t now = now_ns();
    if (!p->terminating) {
        const json_t *meta = json_object_get(p->pod, "metadata");
        json_int_t grace = json_integer_value(json_object_get(meta, "deletionGracePeriodSeconds"));
        p->terminating = true;
        p->kill_at = now + (int64_t)grace * CK_SEC;
        for (size_t i = 0; i < p->n_all; i++)
            if (p->ctrs[i].running && p->ctrs[i].sidecar) /* their hooks now, their stop later */
                run_pre_stop(a, p, &p->ctrs[i], grace);
            else if (p->ctrs[i].running) {
                pod_event(a, p, CK_EVENT_NORMAL, "Killing", "Stopping container %s",
                          p->ctrs[i].name);
                run_pre_stop(a, p, &p->ctrs[i], grace);
                a->rt->ops->stop(a->rt, &p->rp, p->ctrs[i].id, grace);
            }
        char g[24];
        snprintf(g, sizeof(g), "%lld", (long long)grace);
        CK_LOGS(1, "Killing pod", "pod", p->name, "gracePeriod", g);
    }
    bool any = false;
    for (size_t i = 0; i < p->n_all; i++) {
        struct container *c = &p->ctrs[i];
        struct ck__rt_state st;
        if (!c->running)
            continue;
        int r = a->rt->ops->state(a->rt, &p->rp, c->name, c->attempt, c->id, &st);
        if (r == CK_ENOENT || (r == 0 && !st.running)) {
            c->exit = r == 0 ? st.exit : (struct ck_proc_exit){137, 9, now_ns(), false};
            c->running = false;
            c->has_exit = true;
            c->done = true;
            read_termination_message(p, c, spec_container(p, c->name));
            continue;
        }
        any = true;
        if (now >= p->kill_at && !p->killed)
            a->rt->ops->stop(a->rt, &p->rp, c->id, 0);
    }
    p->killed = p->killed || now >= p->kill_at;
    if (any && !p->killed) /* the sidecars after the others, with what is left of the grace */
        stop_sidecars_in_order(
            a, p, (p->kill_at - now) / CK_SEC > 2 ? (p->kill_at - now) / CK_SEC : 2, false);
    if (any || p->removed)
        return;
    if (!p->sandbox_removed) {
        a->rt->ops->pod_remove(a->rt, &p->rp);
        p->sandbox_removed = true;
    }
    post_status(a, p);
    json_t *options =
        json_pack("{s:i, s:{s:s}}", "gracePeriodSeconds", 0, "preconditions", "uid", p->uid);
    struct ck_err err = {0};
    int r = ck_ctl_delete(&a->ctl, a->pods_res, p->ns, p->name, options, NULL, &err);
    json_decref(options);
    if (r == 0 || r == CK_ENOENT || r == CK_ECONFLICT)
        p->removed = true;
    else
        CK_LOGV(2, "agent: delete %s/%s: %s", p->ns, p->name, err.msg);
}

/* The pod's sandbox (its network, namespaces): made, or found after a restart. */
static void start_sandbox(struct ck_agent *a, struct pod_run *p)
{
    char reason[64] = "";
    struct ck_err err = {0};
    if (a->rt->ops->pod_start(a->rt, &p->rp, reason, sizeof(reason), &err) == 0) {
        p->sandbox_ready = true;
        if (!p->rp.ip[0] &&
            json_is_true(json_object_get(json_object_get(p->pod, "spec"), "hostNetwork")))
            snprintf(p->rp.ip, sizeof(p->rp.ip), "%s", a->host_ip); /* the node's, as kubelet */
        CK_LOGS(2, "Pod sandbox ready", "pod", p->name, "namespace", p->ns, "podIP", p->rp.ip);
        return;
    }
    p->sandbox_at = now_ns() + 5 * CK_SEC;
    CK_LOGS(0, "Failed to create pod sandbox", "pod", p->name, "namespace", p->ns, "err", err.msg);
    pod_event(a, p, CK_EVENT_WARNING, "FailedCreatePodSandBox", "Failed to create pod sandbox: %s",
              err.msg);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        CK_LOGS(2, "Cannot remove a pod's file", "path", path, "err", strerror(errno));
    return 0; /* on with the rest */
}

/*
 * Removes a pod's directory <root>/pods/<uid> (its volumes, logs, exit records), as the
 * kubelet's cleanup of orphaned pod directories does. Mount points are not crossed
 * (FTW_MOUNT): whatever is mounted under it stays, and so does the directory above it.
 */
static void remove_uid_dir(const struct ck_agent *a, const char *uid)
{
    char dir[PATH_MAX];
    if (!uid[0] || strchr(uid, '/') || strcmp(uid, ".") == 0 || strcmp(uid, "..") == 0 ||
        snprintf(dir, sizeof(dir), "%s/pods/%s", a->root_dir, uid) >= (int)sizeof(dir))
        return;
    ck__emptydir_unmount_all(dir); /* memory-backed emptyDirs: theirs go with them */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/*
 * The directories of pods that are gone: neither in the cache (list) nor run by the
 * agent. Pods deleted at once (finished ones, or while the agent was away) never pass
 * through the agent's removal, so their directories are found this way.
 */
static void sweep_pod_dirs(struct ck_agent *a, const struct ck_obj_list *list)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/pods", a->root_dir);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        pthread_mutex_lock(&a->lock); /* only the tick adds pods, and it is here */
        bool known = pod_find(a, e->d_name) != NULL;
        pthread_mutex_unlock(&a->lock);
        if (known)
            continue;
        bool listed = false;
        for (size_t i = 0; i < list->n && !listed; i++) {
            const char *uid = json_string_value(
                json_object_get(json_object_get(list->items[i], "metadata"), "uid"));
            listed = uid && strcmp(uid, e->d_name) == 0;
        }
        if (!listed) {
            CK_LOGS(2, "Removing the directory of a pod that is gone", "podUID", e->d_name);
            remove_uid_dir(a, e->d_name);
        }
    }
    closedir(d);
}

/*
 * One sync of a pod that is not gone (its worker, with its lock held): the kubelet's
 * SyncPod, or its termination when it is being deleted.
 */
static void sync_pod(struct ck_agent *a, struct pod_run *p)
{
    add_ephemeral(p);
    if (!p->started)
        pod_first_sync(a, p);
    if (json_object_get(json_object_get(p->pod, "metadata"), "deletionTimestamp")) {
        terminate(a, p);
        return;
    }
    bool adopted = false; /* containers that run already need no volumes set up */
    for (size_t j = 0; j < p->n_all; j++)
        adopted = adopted || p->ctrs[j].ever_ran;
    if (!p->volumes_ready && !adopted && now_ns() >= p->volumes_at) {
        p->volumes_ready = setup_volumes(a, p, false);
        p->volumes_at = now_ns() + 2 * CK_SEC; /* the next try, if this one failed */
    }
    if (!p->volumes_ready && !adopted) {
        post_status(a, p);
        return;
    }
    /*
     * the volumes written again every minute, as the kubelet's periodic pod sync
     * remounts them: ConfigMaps', Secrets' and the downward API's changes reach
     * running containers, and a token past 80% of its life is replaced (a failed
     * read keeps what was written, as the kubelet keeps the last good content)
     */
    if (p->volumes_ready && now_ns() >= p->resync_at) {
        if (p->resync_at)
            setup_volumes(a, p, true);
        p->resync_at = now_ns() + a->config.sync_frequency;
    }
    if (!p->sandbox_ready && now_ns() >= p->sandbox_at)
        start_sandbox(a, p);
    if (!p->sandbox_ready) {
        post_status(a, p);
        return;
    }
    bool initialized = run_init_containers(a, p);
    for (size_t j = p->ninit; initialized && j < p->n_all; j++)
        supervise(a, p, &p->ctrs[j]); /* the app containers, then the ephemeral ones */
    finish_sidecars(a, p);
    post_status(a, p);
}

/* A pod deleted by someone else (force), gone from the cache: stopped at once, removed. */
static void remove_gone(struct ck_agent *a, struct pod_run *p)
{
    for (size_t j = 0; j < p->n_all; j++)
        if (p->ctrs[j].running)
            a->rt->ops->stop(a->rt, &p->rp, p->ctrs[j].id, 0);
    if (!p->sandbox_removed)
        a->rt->ops->pod_remove(a->rt, &p->rp);
    remove_uid_dir(a, p->uid);
    CK_LOGS(1, "Pod removed", "pod", p->name, "namespace", p->ns);
}

enum { URGENT, PERIODIC };

/* How long a periodic sync may wait behind urgent ones before it goes first. */
#define PERIODIC_WAIT_MAX CK_SEC

/*
 * Asks for a sync of p (the agent's lock held), as the kubelet's UpdatePod: queued
 * unless it is already; while its sync runs, marked pending and queued once after it.
 * What the kubelet hands a pod's goroutine at once goes to the urgent queue: its first
 * sync, its deletion, its removal; the tick's periodic look at running pods waits behind
 * them (at most PERIODIC_WAIT_MAX), so a new pod is not queued behind every running one.
 */
static void dispatch(struct ck_agent *a, struct pod_run *p)
{
    if (p->busy) {
        p->pending = true;
        return;
    }
    if (p->queued)
        return;
    bool urgent = !p->synced || p->gone || (p->deleting && !p->deletion_seen);
    p->deletion_seen = p->deletion_seen || p->deleting;
    struct pod_queue *q = &a->queues[urgent ? URGENT : PERIODIC];
    p->queued = true;
    p->queued_at = ck_clock_now(NULL);
    p->next_queued = NULL;
    if (q->tail)
        q->tail->next_queued = p;
    else
        q->head = p;
    q->tail = p;
    pthread_cond_signal(&a->work_cond);
}

/* The next pod to sync off the queues (the agent's lock held), or NULL. */
static struct pod_run *next_to_sync(struct ck_agent *a)
{
    struct pod_queue *q = &a->queues[URGENT];
    const struct pod_run *periodic = a->queues[PERIODIC].head;
    if (!q->head || (periodic && ck_clock_now(NULL) - periodic->queued_at > PERIODIC_WAIT_MAX))
        q = &a->queues[PERIODIC];
    struct pod_run *p = q->head;
    if (p && !(q->head = p->next_queued))
        q->tail = NULL;
    return p;
}

/* A pod worker: takes the next pod off the queue and syncs it, until the agent stops. */
static void *pod_worker_main(void *arg)
{
    struct ck_agent *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->workers_stop && !a->queues[URGENT].head && !a->queues[PERIODIC].head)
            pthread_cond_wait(&a->work_cond, &a->lock);
        if (a->workers_stop)
            break;
        struct pod_run *p = next_to_sync(a);
        p->queued = false;
        p->busy = true;
        json_t *next = p->next_pod;
        p->next_pod = NULL;
        bool gone = p->gone;
        pthread_mutex_unlock(&a->lock);

        pthread_mutex_lock(&p->lock);
        if (next) { /* the newest copy from the cache, taken up between syncs */
            json_decref(p->pod);
            p->pod = next;
            p->rp.pod = next;
            apply_claim_paths(p);
        }
        if (gone)
            remove_gone(a, p);
        else
            sync_pod(a, p);
        pthread_mutex_unlock(&p->lock);

        pthread_mutex_lock(&a->lock);
        p->busy = false;
        p->synced = true;
        bool last = false;
        if (gone) { /* out of the table: no tick finds it again */
            for (size_t i = 0; i < a->pods.n; i++)
                if (a->pods.v[i] == p) {
                    a->pods.v[i] = a->pods.v[--a->pods.n];
                    break;
                }
            last = --p->refs == 0;
        } else if (p->pending) {
            p->pending = false;
            dispatch(a, p);
        }
        if (last) {
            pthread_mutex_unlock(&a->lock);
            pod_free(p);
            pthread_mutex_lock(&a->lock);
        }
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/*
 * The supervisor's tick: the pods of the cache against the table (new ones added, gone
 * ones marked), a sync asked for each, then the runtime's orphans and the directories of
 * pods that are gone.
 */
static void tick(struct ck_agent *a)
{
    struct ck_obj_list list = {0};
    struct ck_err err = {0};
    ck_proc_reap();
    if (ck_lister_list(&a->pod_lister, NULL, NULL, &list, &err) < 0)
        return;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->pods.n; i++)
        a->pods.v[i]->seen = false;
    for (size_t i = 0; i < list.n; i++) {
        const json_t *pod = list.items[i];
        const char *uid =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        const char *node =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (!uid || !node || strcmp(node, a->node_name) != 0)
            continue;
        struct pod_run *p = pod_find(a, uid);
        if (!p) {
            const char *phase =
                json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
            if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) &&
                !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                continue; /* finished before: nothing to run */
            p = pod_new(a, pod);
        } else if (!p->gone) {
            json_t *copy = ck__json_copy(pod);
            if (copy) {
                json_decref(p->next_pod);
                p->next_pod = copy;
            }
        }
        if (p) {
            p->seen = true;
            p->deleting = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
        }
    }
    /* kubelet's removal of orphaned sandboxes: at the first tick, then every minute; the
       pods of the table are their workers' to remove (the gone ones at their next sync) */
    bool orphans = a->rt->ops->remove_orphans && now_ns() >= a->orphans_at;
    char **uids = orphans ? calloc(list.n + a->pods.n + 1, sizeof(*uids)) : NULL;
    size_t n = 0;
    for (size_t i = 0; i < a->pods.n; i++) {
        struct pod_run *p = a->pods.v[i];
        p->gone = p->gone || !p->seen; /* once gone, its removal is under way */
        dispatch(a, p);
        if (uids && (uids[n] = strdup(p->uid)))
            n++;
    }
    pthread_mutex_unlock(&a->lock);
    if (uids) {
        for (size_t i = 0; i < list.n; i++) {
            const char *uid = json_string_value(
                json_object_get(json_object_get(list.items[i], "metadata"), "uid"));
            if (uid && (uids[n] = strdup(uid)))
                n++;
        }
        a->rt->ops->remove_orphans(a->rt, (const char *const *)uids, n);
        strv_free(uids);
        a->orphans_at = now_ns() + 60 * CK_SEC;
    }
    if (now_ns() >= a->dirs_at) {
        sweep_pod_dirs(a, &list);
        a->dirs_at = now_ns() + 2 * CK_SEC;
    }
    ck_obj_list_release(&list);
}

static void *supervisor_main(void *arg)
{
    struct ck_agent *a = arg;
    do
        tick(a);
    while (!wait_tick(a, TICK));
    return NULL;
}

/*
 * The pods of the table named ns/name (every pod when ns is NULL), each with a
 * reference (pods_unref() drops them and frees the array), *ret_n of them; NULL with
 * none, or without memory. Their locks are for the caller to take, one at a time.
 */
static struct pod_run **pods_referenced(struct ck_agent *a, const char *ns, const char *name,
                                        size_t *ret_n)
{
    pthread_mutex_lock(&a->lock);
    struct pod_run **v = calloc(a->pods.n + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; v && i < a->pods.n; i++) {
        struct pod_run *p = a->pods.v[i];
        if (ns && (strcmp(p->ns, ns) != 0 || strcmp(p->name, name) != 0))
            continue;
        p->refs++;
        v[n++] = p;
    }
    pthread_mutex_unlock(&a->lock);
    *ret_n = n;
    return v;
}

static void pods_unref(struct ck_agent *a, struct pod_run **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pod_unref(a, v[i]);
    free(v);
}

/* ---- garbage collection ---- */

/*
 * What the container GC must keep, *ret_n entries (free with gc_keep_free()): for each
 * container of each pod the agent runs, its current attempt and the one before, whose
 * logs `kubectl logs` and `kubectl logs --previous` read (ck_agent_log_path); every
 * attempt of a container not taken up yet (after a restart of the agent). Attempts
 * started after this copy are newer, so kept too. NULL: out of memory.
 */
static struct ck__rt_gc_keep *gc_keep_list(struct ck_agent *a, size_t *ret_n)
{
    size_t total = 0, n = 0, np;
    struct pod_run **pods = pods_referenced(a, NULL, NULL, &np);
    for (size_t i = 0; pods && i < np; i++) {
        pthread_mutex_lock(&pods[i]->lock); /* n_all grows under it */
        total += pods[i]->n_all;
        pthread_mutex_unlock(&pods[i]->lock);
    }
    struct ck__rt_gc_keep *keep = pods ? calloc(total + 1, sizeof(*keep)) : NULL;
    for (size_t i = 0; keep && i < np; i++) {
        struct pod_run *p = pods[i];
        pthread_mutex_lock(&p->lock); /* after the sync under way, if any */
        for (size_t j = 0; j < p->n_all && n < total; j++) {
            const struct container *c = &p->ctrs[j];
            char *uid = strdup(p->uid), *name = strdup(c->name);
            if (!uid || !name) {
                free(uid);
                free(name);
                continue;
            }
            int from = c->ever_ran && c->attempt > 0 ? c->attempt - 1 : 0;
            keep[n++] = (struct ck__rt_gc_keep){uid, name, from};
        }
        pthread_mutex_unlock(&p->lock);
    }
    pods_unref(a, pods, np);
    *ret_n = n;
    return keep;
}

static void gc_keep_free(struct ck__rt_gc_keep *keep, size_t n)
{
    for (size_t i = 0; keep && i < n; i++) {
        free((char *)keep[i].uid);
        free((char *)keep[i].name);
    }
    free(keep);
}

/* Image GC passes come every this many container GC passes (kubelet: 5 min and 1 min). */
#define IMAGE_GC_EVERY 5

/*
 * One image GC pass, with kubelet's node events: FreeDiskSpaceFailed when it could not
 * free enough, ImageGCFailed when it failed twice in a row. *failed: the last pass failed.
 */
static void image_gc(struct ck_agent *a, const struct ck__rt_image_gc_policy *policy, bool *failed)
{
    struct ck_err err = {0};
    bool short_of_space = false;
    int r = a->rt->ops->image_gc(a->rt, policy, &short_of_space, &err);
    /* kubelet's nodeRef names the node in its uid too */
    json_t *ref = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Node",
                            "metadata", "name", a->node_name, "uid", a->node_name);
    if (short_of_space)
        ck_event_recordf(a->events, ref, CK_EVENT_WARNING, "FreeDiskSpaceFailed", "%s", err.msg);
    if (r < 0 && *failed) {
        CK_LOGS_ERR("Image garbage collection failed multiple times in a row", "err", err.msg);
        ck_event_recordf(a->events, ref, CK_EVENT_WARNING, "ImageGCFailed", "%s", err.msg);
    } else if (r < 0)
        CK_LOGS_ERR("Image garbage collection failed once. Stats initialization may not have "
                    "completed yet",
                    "err", err.msg);
    json_decref(ref);
    *failed = r < 0;
}

static void *gc_main(void *arg)
{
    struct ck_agent *a = arg;
    struct ck__rt_gc_policy policy = {0, 1, -1};                    /* kubelet's defaults */
    struct ck__rt_image_gc_policy ipolicy = {85, 80, 120 * CK_SEC}; /* likewise */
    if (a->config.gc_policy_set) {
        policy = (struct ck__rt_gc_policy){a->config.minimum_container_ttl,
                                           a->config.max_dead_per_container,
                                           a->config.max_dead_containers};
        ipolicy = (struct ck__rt_image_gc_policy){a->config.image_gc_high_threshold,
                                                  a->config.image_gc_low_threshold,
                                                  a->config.minimum_image_ttl};
    }
    bool images = a->rt->ops->image_gc && ipolicy.high_threshold < 100, image_failed = false;
    if (a->rt->ops->image_gc && !images)
        CK_LOGS(2, "ImageGCHighThresholdPercent is set 100, Disable image GC", "node",
                a->node_name);
    for (unsigned pass = 1; !wait_stop(a, a->config.container_gc_period); pass++) {
        size_t n = 0;
        struct ck__rt_gc_keep *keep = gc_keep_list(a, &n);
        if (keep) {
            int64_t t0 = now_ns();
            a->rt->ops->gc(a->rt, &policy, keep, n);
            CK_LOGV(4, "Container garbage collection done in %.3fs (%zu containers of its pods)",
                    (double)(now_ns() - t0) / 1e9, n);
            gc_keep_free(keep, n);
        }
        if (images && pass % IMAGE_GC_EVERY == 0)
            image_gc(a, &ipolicy, &image_failed);
    }
    return NULL;
}

/*
 * kubelet's container log manager: a rotation pass over the runtime's running containers
 * every containerLogMonitorInterval (logrotate.c).
 */
static void *logrotate_main(void *arg)
{
    struct ck_agent *a = arg;
    while (!wait_stop(a, a->config.container_log_monitor_interval))
        a->rt->ops->rotate_logs(a->rt, a->config.container_log_max_size,
                                a->config.container_log_max_files);
    return NULL;
}

/* ---- the pods' list/watch, limited to this node ---- */

static int lw_list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                   struct ck_err *reterr)
{
    struct ck_agent *a = ctx;
    struct ck_list_options o = *opts;
    o.field_selector = a->field_selector;
    return a->pods_src.list(a->pods_src.ctx, &o, ret_list, reterr);
}

static int lw_watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                    const atomic_bool *stop, struct ck_err *reterr)
{
    struct ck_agent *a = ctx;
    struct ck_list_options o = *opts;
    o.field_selector = a->field_selector;
    return a->pods_src.watch(a->pods_src.ctx, &o, fn, arg, stop, reterr);
}

/* ---- lifecycle ---- */

int ck_agent_new(const struct ck_agent_config *config, struct ck_agent **ret, struct ck_err *reterr)
{
    if (!config->client || !config->node_name || !*config->node_name || !config->root_dir)
        return ck_err_set(reterr, CK_EINVAL, "a client, a node name and a root dir are required");
    if (strlen(config->node_name) > 253)
        return ck_err_set(reterr, CK_EINVAL, "node name longer than 253 characters");
    if (config->container_log_max_files == 1 || config->container_log_max_files < 0)
        return ck_err_set(reterr, CK_EINVAL, "invalid containerLogMaxFiles %d, must be > 1",
                          config->container_log_max_files);
    if (config->container_log_monitor_interval < 0 ||
        (config->container_log_monitor_interval > 0 &&
         config->container_log_monitor_interval < 3 * CK_SEC))
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid configuration: containerLogMonitorInterval must be a positive "
                          "time duration greater than or equal to 3s");
    struct ck_agent *a = calloc(1, sizeof(*a));
    if (!a)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->stop_lock, NULL);
    pthread_cond_init(&a->stop_cond, NULL);
    pthread_cond_init(&a->work_cond, NULL);
    a->config = *config;
    if (a->config.max_pods <= 0)
        a->config.max_pods = 110;
    if (a->config.pod_workers <= 0) {
        /*
         * A sync mostly waits: on the runtime's calls (a container's create and start take
         * 100-300 ms on containerd), on the API server, on probes. Four workers per core
         * keep the runtime busy on every core while the agent's threads and connections
         * stay bounded; the kubelet has a goroutine per pod instead, which C threads
         * would make costly at 110 pods.
         */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        a->config.pod_workers = cores > 0 ? (int)(4 * cores) : 8;
        if (a->config.pod_workers < 8)
            a->config.pod_workers = 8;
        if (a->config.pod_workers > CK_AGENT_POD_WORKERS_MAX)
            a->config.pod_workers = CK_AGENT_POD_WORKERS_MAX;
    }
    if (a->config.pod_workers > CK_AGENT_POD_WORKERS_MAX)
        a->config.pod_workers = CK_AGENT_POD_WORKERS_MAX;
    if (a->config.node_status_update_frequency <= 0)
        a->config.node_status_update_frequency = 10 * CK_SEC;
    if (a->config.sync_frequency <= 0)
        a->config.sync_frequency = 60 * CK_SEC; /* kubelet's syncFrequency */
    if (a->config.container_gc_period == 0)
        a->config.container_gc_period = 60 * CK_SEC; /* kubelet's ContainerGCPeriod */
    if (a->config.port <= 0)
        a->config.port = 10250;
    if (a->config.container_log_max_size == 0)
        a->config.container_log_max_size = 10 * 1024 * 1024; /* the kubelet's 10Mi */
    if (a->config.container_log_max_files == 0)
        a->config.container_log_max_files = 5;
    if (a->config.container_log_monitor_interval == 0)
        a->config.container_log_monitor_interval = 10 * CK_SEC; /* the kubelet's 10s */

    a->node_name = strdup(config->node_name);
    a->root_dir = realpath(config->root_dir, NULL);
    a->host_ip =
        a->config.node_ip && *a->config.node_ip ? strdup(a->config.node_ip) : host_address();
    int r = ck_pressure_thresholds_parse(config->eviction_hard, &a->thresholds, reterr);
    if (r < 0)
        goto fail;
    if (!a->root_dir) {
        r = ck_err_set(reterr, CK_EINVAL, "--root-dir %s: %s", config->root_dir, strerror(errno));
        goto fail;
    }
    if (asprintf(&a->field_selector, "spec.nodeName=%s", a->node_name) < 0 || !a->node_name ||
        !a->host_ip) {
        a->field_selector = NULL;
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto fail;
    }
    struct ck_err cgerr = {0};
    if (a->config.runtime == CK_AGENT_RUNTIME_CRI) {
        if ((r = ck__runtime_cri_new(&a->config, &a->ctl, runtime_event, a, &a->rt, reterr)) < 0)
            goto fail;
        CK_LOGS(0, "Container runtime: CRI", "endpoint",
                a->config.runtime_endpoint ? a->config.runtime_endpoint
                                           : CK_AGENT_RUNTIME_ENDPOINT);
    } else if (a->config.no_cgroups)
        CK_LOGS(0, "Resource limits as rlimits (memory: RLIMIT_DATA; cpu and pids not limited)",
                "reason", "cgroups disabled by configuration");
    else if (ck_cgroup_setup(NULL, a->cgroup, sizeof(a->cgroup), &cgerr) == 0)
        CK_LOGS(0, "Resource limits through cgroup v2 (memory.max, cpu.max, pids.max)", "cgroup",
                a->cgroup);
    else {
        a->cgroup[0] = 0;
        CK_LOGS(0, "Resource limits as rlimits (memory: RLIMIT_DATA; cpu and pids not limited)",
                "reason", cgerr.msg);
    }
    if (a->config.runtime != CK_AGENT_RUNTIME_CRI) {
        CK_LOGW("Container runtime: process: pods run as this agent's user on the host, "
                "unisolated, and their images are ignored");
        if (!(a->rt = ck__runtime_process_new(&a->config, a->cgroup, a->host_ip))) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto fail;
        }
    }
    a->pods_res = ck_controller_resource("", "v1", "pods");
    a->nodes_res = ck_controller_resource("", "v1", "nodes");
    if (!a->pods_res || !a->nodes_res) {
        r = ck_err_set(reterr, CK_ENOENT, "no kind serves pods or nodes");
        goto fail;
    }
    ck_ctl_client_init_rest(&a->ctl, config->client);
    struct ck_event_sink sink;
    struct ck_event_recorder_options eo = {.component = "kubelet", .host = a->node_name};
    if (ck_ctl_event_sink_init(&a->event_sink, &a->ctl, &sink) < 0) {
        r = ck_err_set(reterr, CK_ENOENT, "no kind serves v1 events");
        goto fail;
    }
    if ((r = ck_event_recorder_new(&eo, &sink, &a->events, reterr)) < 0)
        goto fail;
    const struct ck_list_watch_maker *maker = config->list_watch;
    if (!maker) {
        ck_rest_list_watch_init(&a->rlw, config->client, a->pods_res, NULL);
        a->pods_src = a->rlw.lw;
    } else if ((r = maker->make(maker->arg, a->pods_res, NULL, false, &a->pods_src, reterr)) < 0)
        goto fail;
    a->pods_made = maker != NULL;
    a->lw = (struct ck_list_watch){lw_list, lw_watch, a};
    struct ck_informer_options io = {.list_watch = &a->lw, .res = a->pods_res};
    r = ck_informer_new(&io, &a->pods_inf, reterr);
    if (r < 0)
        goto fail;
    ck_lister_init(&a->pod_lister, ck_informer_indexer(a->pods_inf));
    struct ck_informer_options so = {.client = config->client,
                                     .res = ck_controller_resource("", "v1", "services")};
    if (!so.res) {
        r = ck_err_set(reterr, CK_ENOENT, "no kind serves services");
        goto fail;
    }
    if (maker && (r = maker->make(maker->arg, so.res, NULL, false, &a->svc_src, reterr)) < 0)
        goto fail;
    a->svc_made = maker != NULL;
    if (maker)
        so.list_watch = &a->svc_src;
    if ((r = ck_informer_new(&so, &a->svc_inf, reterr)) < 0)
        goto fail;
    ck_lister_init(&a->svc_lister, ck_informer_indexer(a->svc_inf));
    struct ck_event_handler kicker = {on_pod_add, on_pod_update, on_pod_delete, a};
    if ((r = ck_informer_add_handler(a->pods_inf, &kicker, 0, reterr)) < 0)
        goto fail;
    *ret = a;
    return 0;
fail:
    ck_agent_free(a);
    return r;
}

int ck_agent_run(struct ck_agent *a, struct ck_err *reterr)
{
    struct ck_pressure_sample sample;
    if (ck_pressure_measure(a->root_dir, &sample) == 0) /* the conditions registered */
        ck_pressure_evaluate(&a->thresholds, &sample, &a->pressure);
    refresh_runtime_status(a);
    int r = register_node(a, reterr);
    if (r < 0)
        return r;
    CK_LOGS(0, "Node registered", "node", a->node_name, "address", a->host_ip);
    const json_t *owner = json_array_get(
        json_object_get(json_object_get(a->lease, "metadata"), "ownerReferences"), 0);
    pressure_events(a, json_string_value(json_object_get(owner, "uid")), NULL, &a->pressure);
    if (!a->tls.cert &&
        (r = ck__agent_tls_load(&a->config, a->root_dir, a->host_ip, &a->tls, reterr)) < 0)
        return r;
    if (!a->config.client_ca_file)
        CK_LOGW("No --client-ca-file: any client that reaches the port may read logs and exec");
    if (!a->log_server && !(a->log_server = ck__agent_log_server_start(
                                a, a->host_ip, a->config.port, &a->tls, &a->log_server_context)))
        return ck_err_set(reterr, CK_EIO, "cannot serve HTTPS on %s:%d", a->host_ip,
                          a->config.port);
    r = ck_informer_start(a->pods_inf, reterr);
    if (r < 0)
        return r;
    /* the kubelet waits for the Services before it makes containers' env */
    if ((r = ck_informer_start(a->svc_inf, reterr)) < 0)
        return r;
    if (!ck_informer_wait_for_sync(a->pods_inf, CK_TIME_NEVER) ||
        !ck_informer_wait_for_sync(a->svc_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "agent: stopped before syncing");
    if (!(a->workers = calloc((size_t)a->config.pod_workers, sizeof(*a->workers))))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    for (; a->n_workers < a->config.pod_workers; a->n_workers++)
        if (pthread_create(&a->workers[a->n_workers], NULL, pod_worker_main, a) != 0)
            break;
    if (a->n_workers == 0)
        return ck_err_set(reterr, CK_ENOMEM, "cannot start the pod workers");
    char workers[16];
    snprintf(workers, sizeof(workers), "%d", a->n_workers);
    CK_LOGS(0, "Pod workers started", "workers", workers);
    if (pthread_create(&a->supervisor, NULL, supervisor_main, a) != 0)
        return ck_err_set(reterr, CK_ENOMEM, "cannot start the supervisor");
    if (pthread_create(&a->renewer, NULL, renewer_main, a) != 0) {
        pthread_mutex_lock(&a->stop_lock);
        a->stopping = true;
        pthread_cond_broadcast(&a->stop_cond);
        pthread_mutex_unlock(&a->stop_lock);
        pthread_join(a->supervisor, NULL);
        return ck_err_set(reterr, CK_ENOMEM, "cannot start the lease renewer");
    }
    a->threads_running = true;
    if (a->rt->ops->gc && a->config.container_gc_period > 0 &&
        !(a->gc_running = pthread_create(&a->gc, NULL, gc_main, a) == 0))
        CK_LOGW("Cannot start the container garbage collection: dead containers stay");
    if (a->rt->ops->rotate_logs && a->config.container_log_max_size > 0) {
        char size[32], files[16], period[32];
        snprintf(size, sizeof(size), "%lld", (long long)a->config.container_log_max_size);
        snprintf(files, sizeof(files), "%d", a->config.container_log_max_files);
        snprintf(period, sizeof(period), "%gs",
                 (double)a->config.container_log_monitor_interval / 1e9);
        CK_LOGS(0, "Container log rotation", "maxSize", size, "maxFiles", files, "monitorPeriod",
                period);
        if (!(a->logrotate_running = pthread_create(&a->logrotate, NULL, logrotate_main, a) == 0))
            CK_LOGW("Cannot start the container log rotation: logs grow without bound");
    }
    return 0;
}

struct ck_agent *ck_agent_free(struct ck_agent *a)
{
    if (!a)
        return NULL;
    pthread_mutex_lock(&a->stop_lock);
    a->stopping = true;
    pthread_cond_broadcast(&a->stop_cond);
    pthread_mutex_unlock(&a->stop_lock);
    if (a->threads_running) {
        pthread_join(a->supervisor, NULL);
        pthread_join(a->renewer, NULL);
    }
    if (a->gc_running)
        pthread_join(a->gc, NULL);
    if (a->logrotate_running)
        pthread_join(a->logrotate, NULL);
    /* no tick queues more: each worker ends its sync under way */
    pthread_mutex_lock(&a->lock);
    a->workers_stop = true;
    pthread_cond_broadcast(&a->work_cond);
    pthread_mutex_unlock(&a->lock);
    for (int i = 0; i < a->n_workers; i++)
        pthread_join(a->workers[i], NULL);
    free(a->workers);
    if (a->log_server)
        MHD_stop_daemon(a->log_server);
    free(a->log_server_context);
    ck__agent_tls_release(&a->tls);
    ck_informer_free(a->pods_inf);
    ck_informer_free(a->svc_inf);
    const struct ck_list_watch_maker *maker = a->config.list_watch;
    if (a->pods_made && maker->release)
        maker->release(maker->arg, &a->pods_src);
    if (a->svc_made && maker->release)
        maker->release(maker->arg, &a->svc_src);
    ck_event_recorder_free(a->events);
    /* the containers keep running, as with the kubelet: a new agent finds them again */
    for (size_t i = 0; i < a->pods.n; i++)
        pod_free(a->pods.v[i]);
    free(a->pods.v);
    json_decref(a->lease);
    json_decref(a->rt_status.images);
    if (a->rt)
        a->rt->ops->free(a->rt);
    free(a->node_name);
    free(a->root_dir);
    free(a->host_ip);
    free(a->field_selector);
    pthread_mutex_destroy(&a->lock);
    pthread_mutex_destroy(&a->stop_lock);
    pthread_cond_destroy(&a->stop_cond);
    pthread_cond_destroy(&a->work_cond);
    free(a);
    return NULL;
}

int ck_agent_log_path(struct ck_agent *a, const char *ns, const char *pod, const char *container,
                      bool previous, char *buf, size_t size)
{
    int r = CK_ENOENT;
    size_t np;
    struct pod_run **pods = pods_referenced(a, ns, pod, &np);
    for (size_t i = 0; i < np && r == CK_ENOENT; i++) {
        struct pod_run *p = pods[i];
        pthread_mutex_lock(&p->lock);
        for (size_t j = 0; j < p->n_all; j++) {
            struct container *c = &p->ctrs[j];
            if ((container && *container) ? strcmp(c->name, container) != 0 : j != p->ninit)
                continue;
            int attempt = previous ? c->attempt - 1 : c->attempt;
            if (!c->ever_ran || attempt < 0)
                break;
            ctr_log(p, c, attempt, buf, size);
            r = 0;
        }
        pthread_mutex_unlock(&p->lock);
    }
    pods_unref(a, pods, np);
    return r;
}

/*
 * The running container named name of pod ns/pod, or NULL; *ret_pod its pod, locked and
 * referenced until running_container_done(a, *ret_pod).
 */
static struct container *running_container(struct ck_agent *a, const char *ns, const char *pod,
                                           const char *name, struct pod_run **ret_pod)
{
    size_t np;
    struct pod_run **pods = pods_referenced(a, ns, pod, &np);
    struct container *found = NULL;
    *ret_pod = NULL;
    for (size_t i = 0; i < np; i++) {
        struct pod_run *p = pods[i];
        if (!found) {
            pthread_mutex_lock(&p->lock);
            for (size_t j = 0; j < p->n_all && !found; j++)
                if (strcmp(p->ctrs[j].name, name) == 0 && p->ctrs[j].running)
                    found = &p->ctrs[j];
            if (found) {
                *ret_pod = p;
                continue; /* its lock and reference stay */
            }
            pthread_mutex_unlock(&p->lock);
        }
        pod_unref(a, p);
    }
    free(pods);
    return found;
}

static void running_container_done(struct ck_agent *a, struct pod_run *p)
{
    if (!p)
        return;
    pthread_mutex_unlock(&p->lock);
    pod_unref(a, p);
}

int ck__agent_container_exec_url(struct ck_agent *a, const char *ns, const char *pod,
                                 const char *container, char *const *argv, bool want_stdin,
                                 bool tty, char **ret_url, struct ck_err *reterr)
{
    char id[sizeof(((struct container *)0)->id)] = "";
    struct pod_run *p;
    const struct container *c = running_container(a, ns, pod, container, &p);
    if (c)
        snprintf(id, sizeof(id), "%s", c->id);
    running_container_done(a, p);
    if (!*id)
        return CK_ENOENT;
    if (!a->rt->ops->exec_url)
        return CK_EINVAL;
    /* outside the lock: the runtime's call may take a while */
    return a->rt->ops->exec_url(a->rt, id, argv, want_stdin, tty, ret_url, reterr);
}

int ck__agent_container_attach(struct ck_agent *a, const char *ns, const char *pod,
                               const char *container, bool want_stdin,
                               struct ck__attach_target *ret, struct ck_err *reterr)
{
    char id[sizeof(((struct container *)0)->id)] = "";
    struct pod_run *p;
    memset(ret, 0, sizeof(*ret));
    const struct container *c = running_container(a, ns, pod, container, &p);
    if (c) {
        const json_t *sc = spec_container(p, c->name);
        snprintf(id, sizeof(id), "%s", c->id);
        ret->tty = json_is_true(json_object_get(sc, "tty"));
        /* the process runtime's files: DIR/<attempt>.log, DIR/<attempt>/{exit,stdin} */
        ctr_log(p, c, c->attempt, ret->log_path, sizeof(ret->log_path));
        size_t len = strlen(ret->log_path);
        int stem = (int)(len > 4 ? len - 4 : len);
        snprintf(ret->exit_path, sizeof(ret->exit_path), "%.*s/exit", stem, ret->log_path);
        if (json_is_true(json_object_get(sc, "stdin")))
            snprintf(ret->stdin_path, sizeof(ret->stdin_path), "%.*s/stdin", stem, ret->log_path);
    }
    running_container_done(a, p);
    if (!*id)
        return CK_ENOENT;
    if (!a->rt->ops->attach_url)
        return 0;
    /* outside the lock: the runtime's call may take a while */
    return a->rt->ops->attach_url(a->rt, id, want_stdin, ret->tty, &ret->url, reterr);
}

int ck__agent_pod_port_forward_url(struct ck_agent *a, const char *ns, const char *pod, int port,
                                   char *uid, size_t uid_size, char **ret_url,
                                   struct ck_err *reterr)
{
    char sandbox[sizeof(((struct ck__rt_pod *)0)->sandbox_id)] = "";
    bool found = false;
    size_t np;
    struct pod_run **pods = pods_referenced(a, ns, pod, &np);
    for (size_t i = 0; i < np && !found; i++) {
        struct pod_run *p = pods[i];
        pthread_mutex_lock(&p->lock);
        for (size_t j = 0; j < p->n && !found && !p->terminating; j++)
            found = p->ctrs[j].running;
        if (found) {
            snprintf(uid, uid_size, "%s", p->uid);
            if (p->sandbox_ready)
                snprintf(sandbox, sizeof(sandbox), "%s", p->rp.sandbox_id);
        }
        pthread_mutex_unlock(&p->lock);
    }
    pods_unref(a, pods, np);
    if (!found || (a->rt->ops->port_forward_url && !*sandbox))
        return CK_ENOENT;
    if (!a->rt->ops->port_forward_url)
        return CK_EINVAL;
    /* outside the lock: the runtime's call may take a while */
    return a->rt->ops->port_forward_url(a->rt, sandbox, port, ret_url, reterr);
}

int ck__agent_container_env(struct ck_agent *a, const char *ns, const char *pod,
                            const char *container, char ***ret_env, char **ret_dir)
{
    int r = CK_ENOENT;
    struct pod_run *p;
    struct container *c = running_container(a, ns, pod, container, &p);
    if (c && a->rt->ops->exec) { /* a CRI runtime: exec goes through its streaming server */
        r = CK_EINVAL;
    } else if (c) {
        const json_t *sc = spec_container(p, c->name);
        const char *wd = json_string_value(json_object_get(sc, "workingDir"));
        *ret_env = probe_env(a, p, c, sc); /* what the container got */
        *ret_dir = strdup(wd && *wd ? wd : p->dir);
        if (!*ret_env || !*ret_dir) {
            strv_free(*ret_env);
            free(*ret_dir);
            *ret_env = NULL;
            *ret_dir = NULL;
            r = CK_ENOMEM;
        } else {
            r = 0;
        }
    }
    running_container_done(a, p);
    return r;
}

struct ck__rt_stats_ref *ck__agent_running_containers(struct ck_agent *a, size_t *ret_n)
{
    *ret_n = 0;
    size_t total = 0, n = 0, np;
    struct pod_run **pods = pods_referenced(a, NULL, NULL, &np);
    for (size_t i = 0; pods && i < np; i++)
        total += pods[i]->n;
    struct ck__rt_stats_ref *refs = total ? calloc(total, sizeof(*refs)) : NULL;
    for (size_t i = 0; refs && i < np; i++) {
        struct pod_run *p = pods[i];
        pthread_mutex_lock(&p->lock); /* after the sync under way, if any */
        for (size_t j = 0; j < p->n && !p->terminating; j++) {
            const struct container *c = &p->ctrs[j];
            if (!c->running || !c->id[0])
                continue;
            struct ck__rt_stats_ref *r = &refs[n++];
            snprintf(r->ns, sizeof(r->ns), "%s", p->ns);
            snprintf(r->pod, sizeof(r->pod), "%s", p->name);
            snprintf(r->uid, sizeof(r->uid), "%s", p->uid);
            snprintf(r->name, sizeof(r->name), "%s", c->name);
            snprintf(r->id, sizeof(r->id), "%s", c->id);
            r->attempt = c->attempt;
            r->started_ns = c->started_ns;
            if (p->sandbox_ready)
                snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", p->rp.sandbox_id);
        }
        pthread_mutex_unlock(&p->lock);
    }
    pods_unref(a, pods, np);
    *ret_n = n;
    return refs;
}

struct ck__runtime *ck__agent_runtime(struct ck_agent *a)
{
    return a->rt;
}
