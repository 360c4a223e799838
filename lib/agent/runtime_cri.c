/*
 * runtime_cri.c - the CRI runtime behind the agent's runtime interface (internal.h): a
 * pod is a sandbox and its containers are the runtime's, driven through cri.c as
 * kubelet's kuberuntime manager drives them (pkg/kubelet/kuberuntime:
 * kuberuntime_sandbox.go, kuberuntime_container.go, kuberuntime_image.go,
 * helpers_linux.go; pkg/kubelet/images/image_manager.go).
 *
 * - Sandbox: RunPodSandbox with the pod's metadata, hostname, log directory (the pod's
 *   containers/ directory, so logs are <pod dir>/containers/<name>/<attempt>.log as
 *   with the process runtime), host ports, the kubelet's labels (io.kubernetes.pod.*)
 *   and the pod's labels and annotations, a cgroup parent per QoS class (cgroupfs
 *   names: /kubepods/pod<uid>, /kubepods/burstable/pod<uid>,
 *   /kubepods/besteffort/pod<uid>), which the agent makes first with the pod's summed
 *   cpu shares, quota and memory limit (podcgroup.c), namespace modes (hostNetwork, hostPID,
 * hostIPC, shareProcessNamespace), the pod's runAsUser/Group, supplementalGroups, sysctls, and its
 * DNS configuration as the kubelet forms it (dns.c; the runtime writes it as the pod's
 * resolv.conf), and the handler of the pod's RuntimeClass as the runtime handler (read
 * through the agent's client at each sandbox start; a class that cannot be read fails the
 * start, retried, as the kubelet's LookupRuntimeHandler). After a restart, the pod's READY
 * sandbox is found by its io.kubernetes.pod.uid label.
 * - Network: a CNI configuration for the node's pod range (cni.c) before the first
 *   sandbox outside the host network; the range is the one the agent's node status
 *   thread gives (set_pod_cidr, kubelet's UpdateRuntimeConfig: the Node's spec.podCIDR,
 *   or --pod-cidr when the Node gets none); until then such pods wait. The range never
 *   changes under pods: while sandboxes in the pod network are READY (or being started)
 *   on the range the bridge was made for, another is refused (CK_EPERM) and the old one
 *   kept, also after a restart, whose first range the agent's own file on disk tells.
 * - Images: imagePullPolicy (unset: Always for ":latest" or no tag, else
 *   IfNotPresent), ErrImageNeverPull, ErrImagePull with the runtime's words, events
 *   Pulling / Pulled / Failed as the kubelet words them. The container is created from
 *   the image's id. The pull back-off is the agent's, per pod and image as the kubelet's
 *   image manager keys it (backOffKey: the pod's UID and the spec's image): while it
 *   holds, an image that must be pulled is not, ImagePullBackOff and a BackOff event.
 * - Containers: command and args as given (NULL: the image's ENTRYPOINT and CMD),
 *   env, workingDir, volume mounts (the pod's volume directories, hostPath),
 *   stdin/tty, resources (cpu shares from requests, quota from limits, memory limit),
 *   the security context merged from pod and container (run as, privileged, read-only
 *   root, capabilities, allowPrivilegeEscalation, seccomp, the kubelet's masked and
 *   read-only /proc paths). containerID is <runtime name>://<id>.
 * - Termination messages: an empty file per attempt (<attempt>/termination-log, 0666)
 *   mounted at terminationMessagePath; the agent reads it when the attempt ends.
 * - State: ContainerStatus; an ended container's exit is also written to
 *   <attempt>/exit, which the log reader waits for to end `follow`.
 * - Stop: StopContainer runs on a thread of its own with a connection of its own, so
 *   a long grace period holds no other call.
 *
 * - Pull secrets: the pod's imagePullSecrets (read through the agent's client), the
 *   credentials for the image's registry as kubelet's keyring picks them (keyring.c)
 *   given to PullImage one after the other until one works.
 * - Node status: Status's RuntimeReady and NetworkReady as the node's Ready
 *   condition (kubelet's KubeletNotReady messages), ListImages as status.images;
 *   called from the agent's node status thread, on state of its own.
 *
 * - Garbage collection: every container GC period the agent's GC thread asks for a
 *   pass (gc): the dead containers of its pods that gc.c's policy chooses, oldest
 *   first, each after its log (ContainerStatus's log_path, its rotated files and the
 *   <attempt>/ directory), then the pods' older sandboxes neither READY nor holding a
 *   container (kubelet's evictContainers and evictSandboxes). On the CRI client's
 *   own connections: nothing the supervisor calls waits for it. Every fifth pass
 *   (image_gc), as kubelet's image GC manager: over the high threshold of the image
 *   filesystem (ImageFsInfo's mountpoint), unused images least recently used first
 *   down to the low one; the records of first sight and last use are the GC thread's.
 *
 * - Log rotation: every containerLogMonitorInterval the agent's log rotation thread asks
 *   for a pass (rotate_logs): each running container's log past containerLogMaxSize is
 *   rotated (logrotate.c) and ReopenContainerLog makes the runtime open a new one.
 *
 * - Stats: the resource metrics' CPU and working set of the running containers, from one
 *   ListContainerStats (container_stats), and of their pods as a whole, from one
 *   ListPodSandboxStats (pod_stats).
 */
#define _GNU_SOURCE /* vasprintf, strndup */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define CALL_TIMEOUT_MS    (2 * 60 * 1000) /* kubelet's runtimeRequestTimeout */
#define SANDBOX_TIMEOUT_MS (4 * 60 * 1000) /* RunPodSandbox may pull the pause image */
#define PULL_TIMEOUT_MS    (10 * 60 * 1000)

const char *ck__cri_cgroup_mounts = NULL;

struct cri_runtime {
    struct ck__runtime base;
    struct ck__cri *cri;
    char *runtime_endpoint, *image_endpoint;
    char runtime_name[64];     /* Version's runtime_name: containerID's scheme */
    char runtime_version[128]; /* Version's runtime_version */
    char *cni_conf_dir, *cni_bin_dir;
    char *cgroup_root; /* "" for "/": pods under <root>/kubepods */
    /* the pod range (the Node's spec.podCIDR, else --pod-cidr; NULL: none yet), set from
       the node status thread, read by the supervisor's */
    pthread_mutex_t cidr_lock;
    char *pod_cidr;          /* guarded by cidr_lock */
    bool network_ready;      /* guarded by cidr_lock: the CNI configuration is there for it */
    int starting;            /* guarded by cidr_lock: sandboxes in the pod network being made */
    struct ck__dns_node dns; /* pods' DNS: the strings below */
    char **cluster_dns, *cluster_domain, *resolv_conf;
    ck__rt_event_fn event;
    void *event_arg;
    const struct ck_ctl_client *ctl; /* pods' image pull secrets are read through it */
    /* the node status thread's own: what Status last said (kubelet's runtimeState) */
    int64_t status_ok_at;    /* monotonic ns of the last Status with RuntimeReady; 0 never */
    int64_t down_after;      /* "container runtime is down" this long after it */
    char runtime_error[384]; /* "container runtime not ready: ..." or "" */
    char network_error[384]; /* "container runtime network not ready: ..." or "" */
    /* the GC thread's own: the images seen, kubelet's imageRecords */
    struct image_record {
        char *id;
        int64_t first_detected, last_used; /* ns since the epoch */
    } * images;
    size_t n_images;
};

/* The kubelet's defaults of a non-privileged container's masked and read-only paths. */
static const char *const masked_paths[] = {
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
};
static const char *const readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* A formatted string (malloc'd), or NULL. */
__attribute__((format(printf, 1, 2))) static char *fmt(const char *f, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* The runtime's own id in a containerID ("containerd://ID" -> "ID"). */
static const char *bare_id(const char *id)
{
    const char *sep = strstr(id, "://");
    return sep ? sep + 3 : id;
}

static void emit(struct cri_runtime *cr, const struct ck__rt_pod *p, const char *type,
                 const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void emit(struct cri_runtime *cr, const struct ck__rt_pod *p, const char *type,
                 const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (cr->event)
        cr->event(cr->event_arg, p, type, reason, msg);
}

/* ---- building the configurations -------------------------------------------------- */

/* Strings and arrays a configuration borrows, freed together. */
struct arena {
    void **v;
    size_t n;
};

static void *keep(struct arena *ar, void *ptr)
{
    void **v = ptr ? realloc(ar->v, (ar->n + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(ptr);
        return NULL;
    }
    ar->v = v;
    ar->v[ar->n++] = ptr;
    return ptr;
}

static void arena_free(struct arena *ar)
{
    for (size_t i = 0; i < ar->n; i++)
        free(ar->v[i]);
    free(ar->v);
    *ar = (struct arena){0};
}

/* A JSON object's string members as key/values, after `extra` first ones. */
static struct ck__cri_kv *object_kv(struct arena *ar, const json_t *obj,
                                    const struct ck__cri_kv *extra, size_t n_extra, size_t *ret_n)
{
    struct ck__cri_kv *kv = keep(ar, calloc(n_extra + json_object_size(obj) + 1, sizeof(*kv)));
    size_t n = 0;
    if (!kv) {
        *ret_n = 0;
        return NULL;
    }
    for (size_t i = 0; i < n_extra; i++)
        kv[n++] = extra[i];
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (json_is_string(value))
            kv[n++] = (struct ck__cri_kv){(char *)key, (char *)json_string_value(value)};
    }
    *ret_n = n;
    return kv;
}

static const json_t *spec_of(const struct ck__rt_pod *p)
{
    return json_object_get(p->pod, "spec");
}

static bool spec_bool(const struct ck__rt_pod *p, const char *field)
{
    return json_is_true(json_object_get(spec_of(p), field));
}

/* A quantity in milli-units (cpu) or units, 0 when absent or malformed. */
static int64_t quantity(const json_t *q, bool milli)
{
    int64_t m = 0;
    const char *s = json_string_value(q);
    if (!s || ck_quantity_milli(s, &m) < 0)
        return 0;
    return milli ? m : (m + 999) / 1000;
}

/* The pod's QoS class as the kubelet reads it (GetPodQOS: the status's, else computed). */
static const char *qos_class(const struct ck__rt_pod *p)
{
    return ck__pod_qos(p->pod);
}

static enum ck__cri_seccomp seccomp_of(const json_t *profile, const char **ret_ref)
{
    const char *type = json_string_value(json_object_get(profile, "type"));
    *ret_ref = NULL;
    if (!type)
        return CK__CRI_SECCOMP_UNSET;
    if (strcmp(type, "RuntimeDefault") == 0)
        return CK__CRI_SECCOMP_RUNTIME_DEFAULT;
    if (strcmp(type, "Localhost") == 0) {
        *ret_ref = json_string_value(json_object_get(profile, "localhostProfile"));
        return CK__CRI_SECCOMP_LOCALHOST;
    }
    return CK__CRI_SECCOMP_UNCONFINED;
}

/* The namespace modes of the pod (kubelet's namespacesForPod). */
static void namespaces_of(const struct ck__rt_pod *p, struct ck__cri_security *sec)
{
    sec->network = spec_bool(p, "hostNetwork") ? CK__CRI_NS_NODE : CK__CRI_NS_POD;
    sec->ipc = spec_bool(p, "hostIPC") ? CK__CRI_NS_NODE : CK__CRI_NS_POD;
    sec->pid = spec_bool(p, "hostPID")                 ? CK__CRI_NS_NODE
               : spec_bool(p, "shareProcessNamespace") ? CK__CRI_NS_POD
                                                       : CK__CRI_NS_CONTAINER;
}

/* The pod's cgroup (cgroupfs names, as kubelet's for the pod's QoS class), malloc'd. */
static char *pod_cgroup(const struct cri_runtime *cr, const struct ck__rt_pod *p)
{
    const char *qos = qos_class(p);
    return fmt("%s/kubepods%s/pod%s", cr->cgroup_root,
               strcmp(qos, "Guaranteed") == 0  ? ""
               : strcmp(qos, "Burstable") == 0 ? "/burstable"
                                               : "/besteffort",
               p->uid);
}

/*
 * Removes the pod's cgroup directories, which the runtime makes (runc creates a
 * container's parents) and never removes, as kubelet's pod container manager does: in
 * each cgroup v1 hierarchy and in cgroup v2, under each QoS class (an orphan's is not
 * known). Only empty directories go (rmdir).
 */
static void remove_pod_cgroup(const struct cri_runtime *cr, const struct ck__rt_pod *p)
{
    static const char *const classes[] = {"", "/burstable", "/besteffort"};
    char path[PATH_MAX];
    for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
        char *cg = fmt("%s/kubepods%s/pod%s", cr->cgroup_root, classes[k], p->uid);
        DIR *d = cg ? opendir("/sys/fs/cgroup") : NULL; /* v1: a directory per hierarchy */
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.' && snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s",
                                                e->d_name, cg) < (int)sizeof(path))
                rmdir(path);
        if (d)
            closedir(d);
        if (cg && snprintf(path, sizeof(path), "/sys/fs/cgroup%s", cg) < (int)sizeof(path))
            rmdir(path); /* v2 */
        free(cg);
    }
}

static void sandbox_config(struct arena *ar, const struct cri_runtime *cr,
                           const struct ck__rt_pod *p, uint32_t attempt,
                           struct ck__cri_sandbox_config *cfg)
{
    const json_t *spec = spec_of(p), *meta = json_object_get(p->pod, "metadata");
    const json_t *psc = json_object_get(spec, "securityContext");
    memset(cfg, 0, sizeof(*cfg));
    cfg->name = p->name;
    cfg->uid = p->uid;
    cfg->ns = p->ns;
    cfg->attempt = attempt;
    const char *hostname = json_string_value(json_object_get(spec, "hostname"));
    if (!spec_bool(p, "hostNetwork")) /* host network: the host's name */
        cfg->hostname = keep(ar, strndup(hostname && *hostname ? hostname : p->name, 63));
    cfg->log_directory = keep(ar, fmt("%s/containers", p->dir));
    struct ck__cri_kv own[] = {{"io.kubernetes.pod.name", (char *)p->name},
                               {"io.kubernetes.pod.namespace", (char *)p->ns},
                               {"io.kubernetes.pod.uid", (char *)p->uid}};
    cfg->labels = object_kv(ar, json_object_get(meta, "labels"), own, 3, &cfg->n_labels);
    cfg->annotations =
        object_kv(ar, json_object_get(meta, "annotations"), NULL, 0, &cfg->n_annotations);
    /* host ports of every container */
    size_t nports = 0, i, j;
    json_t *c, *port;
    json_array_foreach(json_object_get(spec, "containers"), i, c) nports +=
        json_array_size(json_object_get(c, "ports"));
    struct ck__cri_port_mapping *pm = keep(ar, calloc(nports + 1, sizeof(*pm)));
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        json_array_foreach(json_object_get(c, "ports"), j, port)
        {
            json_int_t host = json_integer_value(json_object_get(port, "hostPort"));
            const char *proto = json_string_value(json_object_get(port, "protocol"));
            if (!pm || host <= 0)
                continue;
            pm[cfg->n_port_mappings++] = (struct ck__cri_port_mapping){
                proto && strcmp(proto, "UDP") == 0    ? 1
                : proto && strcmp(proto, "SCTP") == 0 ? 2
                                                      : 0,
                (int32_t)json_integer_value(json_object_get(port, "containerPort")), (int32_t)host,
                json_string_value(json_object_get(port, "hostIP"))};
        }
    }
    cfg->port_mappings = pm;
    cfg->cgroup_parent = keep(ar, pod_cgroup(cr, p));
    namespaces_of(p, &cfg->security);
    const json_t *uid = json_object_get(psc, "runAsUser"),
                 *gid = json_object_get(psc, "runAsGroup");
    cfg->security.has_run_as_user = json_is_integer(uid);
    cfg->security.run_as_user = json_integer_value(uid);
    cfg->security.has_run_as_group = json_is_integer(gid);
    cfg->security.run_as_group = json_integer_value(gid);
    const json_t *groups = json_object_get(psc, "supplementalGroups");
    int64_t *g = keep(ar, calloc(json_array_size(groups) + 1, sizeof(*g)));
    json_t *v;
    json_array_foreach(groups, i, v) if (g) g[cfg->security.n_supplemental_groups++] =
        json_integer_value(v);
    cfg->security.supplemental_groups = g;
    cfg->security.seccomp =
        seccomp_of(json_object_get(psc, "seccompProfile"), &cfg->security.seccomp_localhost_ref);
    const json_t *sysctls = json_object_get(psc, "sysctls");
    struct ck__cri_kv *sc = keep(ar, calloc(json_array_size(sysctls) + 1, sizeof(*sc)));
    json_array_foreach(sysctls, i, v) if (sc) sc[cfg->n_sysctls++] =
        (struct ck__cri_kv){(char *)(json_string_value(json_object_get(v, "name")) ?: ""),
                            (char *)(json_string_value(json_object_get(v, "value")) ?: "")};
    cfg->sysctls = sc;
}

/* The volume of the pod named name, or NULL. */
static const json_t *volume_named(const struct ck__rt_pod *p, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec_of(p), "volumes"), i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

/*
 * The container's volumeMounts as CRI mounts: hostPath as given, others the pod's dirs;
 * then the attempt's termination message file (made empty here) at its
 * terminationMessagePath.
 */
static struct ck__cri_mount *mounts_of(struct arena *ar, const struct ck__rt_pod *p,
                                       const json_t *spec, const char *attempt_name, int attempt,
                                       size_t *ret_n)
{
    const json_t *vm = json_object_get(spec, "volumeMounts");
    struct ck__cri_mount *m = keep(ar, calloc(json_array_size(vm) + 2, sizeof(*m)));
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(vm, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *path = json_string_value(json_object_get(e, "mountPath"));
        const char *sub = json_string_value(json_object_get(e, "subPath"));
        const json_t *vol = name ? volume_named(p, name) : NULL;
        if (!m || !vol || !path || strchr(name, '/') || (sub && strstr(sub, "..")))
            continue;
        const char *host =
            json_string_value(json_object_get(json_object_get(vol, "hostPath"), "path"));
        char *src = host ? fmt("%s%s%s", host, sub && *sub ? "/" : "", sub && *sub ? sub : "")
                         : fmt("%s/volumes/%s%s%s", p->dir, name, sub && *sub ? "/" : "",
                               sub && *sub ? sub : "");
        const char *prop = json_string_value(json_object_get(e, "mountPropagation"));
        m[n++] = (struct ck__cri_mount){path, keep(ar, src),
                                        json_is_true(json_object_get(e, "readOnly")),
                                        prop && strcmp(prop, "HostToContainer") == 0 ? 1
                                        : prop && strcmp(prop, "Bidirectional") == 0 ? 2
                                                                                     : 0};
    }
    /* the termination message file at terminationMessagePath, as the kubelet mounts it */
    const char *tpath = json_string_value(json_object_get(spec, "terminationMessagePath"));
    char *host = fmt("%s/containers/%s/%d/" CK__TERMINATION_LOG, p->dir, attempt_name, attempt);
    if (m && host && ck__termination_file(host) == 0)
        m[n++] = (struct ck__cri_mount){tpath && *tpath ? tpath : "/dev/termination-log",
                                        keep(ar, host), false, 0};
    else
        free(host);
    *ret_n = n;
    return m;
}

/* A string array of JSON strings (borrowed from the JSON). */
static const char *const *strings_of(struct arena *ar, const json_t *list, size_t *ret_n)
{
    const char **v = keep(ar, calloc(json_array_size(list) + 1, sizeof(*v)));
    size_t n = 0, i;
    json_t *s;
    json_array_foreach(list, i, s) if (v && json_is_string(s)) v[n++] = json_string_value(s);
    *ret_n = n;
    return v;
}

static void container_config(struct arena *ar, const struct ck__rt_pod *p,
                             const struct ck__rt_start *s, const char *image,
                             struct ck__cri_container_config *cfg)
{
    const json_t *spec = s->spec;
    const json_t *psc = json_object_get(spec_of(p), "securityContext");
    const json_t *csc = json_object_get(spec, "securityContext");
    memset(cfg, 0, sizeof(*cfg));
    cfg->name = s->name;
    cfg->attempt = (uint32_t)s->attempt;
    cfg->image = image;
    for (size_t i = 0; s->command && s->command[i]; i++)
        cfg->n_command++;
    for (size_t i = 0; s->args && s->args[i]; i++)
        cfg->n_args++;
    cfg->command = (const char *const *)s->command;
    cfg->args = (const char *const *)s->args;
    cfg->working_dir = json_string_value(json_object_get(spec, "workingDir"));
    size_t n_env = 0;
    while (s->envp && s->envp[n_env])
        n_env++;
    struct ck__cri_kv *env = keep(ar, calloc(n_env + 1, sizeof(*env)));
    for (size_t i = 0; env && i < n_env; i++) {
        char *copy = keep(ar, strdup(s->envp[i]));
        char *eq = copy ? strchr(copy, '=') : NULL;
        if (!eq)
            continue;
        *eq = 0;
        env[cfg->n_envs++] = (struct ck__cri_kv){copy, eq + 1};
    }
    cfg->envs = env;
    cfg->mounts = mounts_of(ar, p, spec, s->name, s->attempt, &cfg->n_mounts);
    static char restart_key[] = "io.kubernetes.container.restartCount";
    char *restarts = keep(ar, fmt("%d", s->attempt));
    struct ck__cri_kv labels[] = {{"io.kubernetes.container.name", (char *)s->name},
                                  {"io.kubernetes.pod.name", (char *)p->name},
                                  {"io.kubernetes.pod.namespace", (char *)p->ns},
                                  {"io.kubernetes.pod.uid", (char *)p->uid}};
    cfg->labels = object_kv(ar, NULL, labels, 4, &cfg->n_labels);
    cfg->annotations =
        object_kv(ar, NULL, &(struct ck__cri_kv){restart_key, restarts}, 1, &cfg->n_annotations);
    cfg->log_path = keep(ar, fmt("%s/%d.log", s->name, s->attempt));
    cfg->open_stdin = json_is_true(json_object_get(spec, "stdin"));
    cfg->stdin_once = json_is_true(json_object_get(spec, "stdinOnce"));
    cfg->tty = json_is_true(json_object_get(spec, "tty"));
    /* resources as kubelet computes them (helpers_linux.go) */
    const json_t *res = json_object_get(spec, "resources");
    const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
    int64_t cpu_req = quantity(json_object_get(req, "cpu"), true);
    int64_t cpu_lim = quantity(json_object_get(lim, "cpu"), true);
    if (!json_object_get(req, "cpu"))
        cpu_req = cpu_lim; /* requests default to limits */
    cfg->has_resources = true;
    int64_t shares = cpu_req * 1024 / 1000;
    cfg->resources.cpu_shares = shares < 2 ? 2 : shares > 262144 ? 262144 : shares;
    if (cpu_lim > 0) {
        cfg->resources.cpu_period = 100000;
        cfg->resources.cpu_quota = cpu_lim * 100000 / 1000 < 1000 ? 1000 : cpu_lim * 100;
    }
    cfg->resources.memory_limit_in_bytes = quantity(json_object_get(lim, "memory"), false);
    const char *qos = qos_class(p);
    cfg->resources.oom_score_adj = strcmp(qos, "Guaranteed") == 0   ? -997
                                   : strcmp(qos, "BestEffort") == 0 ? 1000
                                                                    : 999;
    /* the security context: the container's settings win over the pod's */
    struct ck__cri_security *sec = &cfg->security;
    namespaces_of(p, sec);
    const json_t *uid = json_object_get(csc, "runAsUser") ?: json_object_get(psc, "runAsUser");
    const json_t *gid = json_object_get(csc, "runAsGroup") ?: json_object_get(psc, "runAsGroup");
    sec->has_run_as_user = json_is_integer(uid);
    sec->run_as_user = json_integer_value(uid);
    sec->has_run_as_group = json_is_integer(gid);
    sec->run_as_group = json_integer_value(gid);
    sec->privileged = json_is_true(json_object_get(csc, "privileged"));
    sec->readonly_rootfs = json_is_true(json_object_get(csc, "readOnlyRootFilesystem"));
    const json_t *ape = json_object_get(csc, "allowPrivilegeEscalation");
    sec->no_new_privs = json_is_false(ape);
    const json_t *caps = json_object_get(csc, "capabilities");
    sec->add_capabilities = strings_of(ar, json_object_get(caps, "add"), &sec->n_add_capabilities);
    sec->drop_capabilities =
        strings_of(ar, json_object_get(caps, "drop"), &sec->n_drop_capabilities);
    const json_t *profile =
        json_object_get(csc, "seccompProfile") ?: json_object_get(psc, "seccompProfile");
    sec->seccomp = seccomp_of(profile, &sec->seccomp_localhost_ref);
    if (sec->seccomp == CK__CRI_SECCOMP_UNSET) /* kubelet: Unconfined unless asked */
        sec->seccomp = CK__CRI_SECCOMP_UNCONFINED;
    if (!sec->privileged) {
        sec->masked_paths = masked_paths;
        sec->n_masked_paths = sizeof(masked_paths) / sizeof(masked_paths[0]);
        sec->readonly_paths = readonly_paths;
        sec->n_readonly_paths = sizeof(readonly_paths) / sizeof(readonly_paths[0]);
    }
    const json_t *groups = json_object_get(psc, "supplementalGroups");
    int64_t *g = keep(ar, calloc(json_array_size(groups) + 1, sizeof(*g)));
    size_t i;
    json_t *v;
    json_array_foreach(groups, i, v) if (g) g[sec->n_supplemental_groups++] = json_integer_value(v);
    sec->supplemental_groups = g;
}

/* ---- the interface ----------------------------------------------------------------- */

/*
 * The pod's newest READY sandbox into p->sandbox_id: 1, or 0 when it has none; the
 * attempt after its sandboxes' highest into *ret_next_attempt. A failed list is the
 * error (with reterr): nothing is known of the pod's sandboxes then, as the kubelet's
 * SyncPod gives up without a pod status.
 */
static int find_sandbox(struct cri_runtime *cr, struct ck__rt_pod *p, uint32_t *ret_next_attempt,
                        struct ck_err *reterr)
{
    struct ck__cri_kv label = {"io.kubernetes.pod.uid", (char *)p->uid};
    struct ck__cri_filter filter = {.state = -1, .labels = &label, .n_labels = 1};
    struct ck__cri_sandboxes l;
    *ret_next_attempt = 0;
    int r = ck__cri_list_sandboxes(cr->cri, &filter, &l, reterr);
    if (r == CK_ENOENT) /* a NotFound too: of the list, not of a sandbox */
        r = reterr->code = CK_EIO;
    if (r < 0)
        return r;
    const struct ck__cri_sandbox *best = NULL;
    for (size_t i = 0; i < l.n; i++) {
        if (l.items[i].attempt + 1 > *ret_next_attempt)
            *ret_next_attempt = l.items[i].attempt + 1;
        if (l.items[i].state == CK__CRI_SANDBOX_READY &&
            (!best || l.items[i].created_at > best->created_at))
            best = &l.items[i];
    }
    if (best)
        snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", best->id);
    ck__cri_sandboxes_release(&l);
    return best ? 1 : 0;
}

/*
 * Makes sure a CNI configuration is there for the runtime (written for the node when the
 * directory holds none), as sandboxes outside the host network need one. With starting,
 * a sandbox in the pod network is counted as being made (cr->starting) when it is there,
 * so the range does not change under it; network_done() ends that.
 */
static int ensure_network(struct cri_runtime *cr, bool starting, struct ck_err *reterr)
{
    char path[PATH_MAX] = "";
    bool written = false;
    pthread_mutex_lock(&cr->cidr_lock);
    int r = 0;
    if (!cr->network_ready) {
        r = ck__cni_ensure_config(cr->cni_conf_dir, cr->cni_bin_dir, cr->pod_cidr, path,
                                  sizeof(path), &written, reterr);
        cr->network_ready = r == 0;
    }
    if (r == 0 && starting)
        cr->starting++;
    pthread_mutex_unlock(&cr->cidr_lock);
    if (r < 0)
        CK_LOGS(0, "Container runtime network not ready", "err", reterr->msg);
    else if (*path)
        CK_LOGS(0, written ? "CNI configuration written" : "CNI configuration found", "path", path);
    return r;
}

static void network_done(struct cri_runtime *cr)
{
    pthread_mutex_lock(&cr->cidr_lock);
    cr->starting--;
    pthread_mutex_unlock(&cr->cidr_lock);
}

/*
 * How many READY sandboxes are in the pod network rather than the host's (with an
 * address of their own): they hold addresses of the range the bridge was made for. A negated errno
 * (reterr) when the runtime cannot say.
 */
static int pod_network_sandboxes(struct cri_runtime *cr, struct ck_err *reterr)
{
    struct ck__cri_filter filter = {.state = CK__CRI_SANDBOX_READY};
    struct ck__cri_sandboxes l;
    int r = ck__cri_list_sandboxes(cr->cri, &filter, &l, reterr);
    if (r < 0)
        return r;
    int n = 0;
    for (size_t i = 0; i < l.n && r >= 0; i++) {
        struct ck__cri_sandbox_status st;
        struct ck_err err = {0};
        r = ck__cri_sandbox_status(cr->cri, l.items[i].id, &st, &err);
        if (r == CK_ENOENT) /* gone since the list */
            r = 0;
        else if (r < 0)
            ck_err_set(reterr, r, "%s", err.msg);
        else {
            n += st.ip && st.network != CK__CRI_NS_NODE; /* the host's: no ip of its own */
            ck__cri_sandbox_status_release(&st);
        }
        ck_err_release(&err);
    }
    ck__cri_sandboxes_release(&l);
    return r < 0 ? r : n;
}

static int set_pod_cidr(struct ck__runtime *rt, const char *cidr, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    int r = ck__cni_parse_cidr(cidr, reterr);
    if (r < 0)
        return r;
    /* the range sandboxes may hold: the current one, else an earlier start's */
    char held[64] = "";
    pthread_mutex_lock(&cr->cidr_lock);
    bool current = cr->pod_cidr != NULL;
    if (cr->pod_cidr)
        snprintf(held, sizeof(held), "%s", cr->pod_cidr);
    else if (!ck__cni_own_range(cr->cni_conf_dir, held, sizeof(held)))
        held[0] = 0;
    pthread_mutex_unlock(&cr->cidr_lock);
    if (current && strcmp(held, cidr) == 0)
        return 0;
    int in_use = 0;
    if (*held && strcmp(held, cidr) != 0 && (in_use = pod_network_sandboxes(cr, reterr)) < 0)
        return in_use;
    pthread_mutex_lock(&cr->cidr_lock);
    in_use += *held && strcmp(held, cidr) != 0 ? cr->starting : 0;
    char *copy = strdup(in_use ? held : cidr);
    if (copy && (!cr->pod_cidr || strcmp(cr->pod_cidr, copy) != 0)) {
        free(cr->pod_cidr);
        cr->pod_cidr = copy;
        cr->network_ready = false; /* the configuration is checked again for it */
        copy = NULL;
    }
    pthread_mutex_unlock(&cr->cidr_lock);
    bool kept = copy != NULL;
    free(copy);
    if (in_use)
        return ck_err_set(reterr, CK_EPERM,
                          "not changing the pod CIDR from %s to %s: %d pod sandboxes have "
                          "addresses from %s; the new range is taken once they are gone",
                          held, cidr, in_use, held);
    if (kept)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    CK_LOGS(0, "Updating runtime config through cri with podcidr", "CIDR", cidr);
    struct ck_err err = {0};
    ensure_network(cr, false, &err);
    return 0;
}

/*
 * The pod's DNS configuration (warnings as events on it) into *d and cfg, which borrows
 * d's strings until ck__pod_dns_release(d).
 */
static int pod_dns(struct cri_runtime *cr, const struct ck__rt_pod *p, struct ck__pod_dns *d,
                   struct ck__cri_sandbox_config *cfg, struct ck_err *reterr)
{
    int r = ck__pod_dns_config(&cr->dns, p->pod, d, reterr);
    if (r < 0)
        return r;
    for (size_t i = 0; i < d->n_warnings; i++)
        emit(cr, p, "Warning", d->warnings[i].reason, "%s", d->warnings[i].message);
    cfg->dns_servers = (const char *const *)d->servers;
    cfg->n_dns_servers = d->n_servers;
    cfg->dns_searches = (const char *const *)d->searches;
    cfg->n_dns_searches = d->n_searches;
    cfg->dns_options = (const char *const *)d->options;
    cfg->n_dns_options = d->n_options;
    return 0;
}

/*
 * The pod's cgroup with its resources (podcgroup.c), made before its sandbox as the
 * kubelet's pod container manager makes it; an existing one is left alone.
 */
static int ensure_pod_cgroup(const struct cri_runtime *cr, const struct ck__rt_pod *p,
                             struct ck_err *reterr)
{
    struct ck__cgroup_mounts m;
    struct ck__pod_resources res;
    struct ck_err err = {0};
    char *cg = pod_cgroup(cr, p);
    if (!cg)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    ck__pod_resource_config(p->pod, &res);
    int r = ck__cgroup_mounts_read(ck__cri_cgroup_mounts, &m);
    if (r < 0)
        ck_err_set(&err, r, "cannot read the mount table: %s", strerror(-r));
    else
        r = ck__pod_cgroup_ensure(&m, cg, &res, &err);
    free(cg);
    if (r < 0)
        return ck_err_set(reterr, r,
                          "failed to ensure that the pod: %s cgroups exist and are correctly "
                          "applied: %s",
                          p->uid, err.msg);
    return 0;
}

/*
 * The runtime handler of the pod's RuntimeClass into handler ("" without a class), as the
 * kubelet's runtime class manager looks it up: a class that cannot be read is the error.
 */
static int runtime_handler(struct cri_runtime *cr, const struct ck__rt_pod *p, char *handler,
                           size_t size, struct ck_err *reterr)
{
    const char *name = json_string_value(json_object_get(spec_of(p), "runtimeClassName"));
    const struct ck_resource *res = ck_controller_resource("node.k8s.io", "v1", "runtimeclasses");
    handler[0] = 0;
    if (!name || !*name)
        return 0;
    json_t *class = NULL;
    struct ck_err err = {0};
    if (!res || !cr->ctl || ck_ctl_get(cr->ctl, res, "", name, &class, &err) < 0) {
        /* Kubernetes' words: a NotFound as it came, anything else wrapped */
        int r = err.http_status == 404
                    ? ck_err_set(reterr, CK_EIO, "%s", err.msg)
                    : ck_err_set(reterr, CK_EIO, "failed to lookup RuntimeClass %s: %s", name,
                                 err.msg[0] ? err.msg : "no client");
        ck_err_release(&err);
        return r;
    }
    const char *h = json_string_value(json_object_get(class, "handler"));
    snprintf(handler, size, "%s", h ? h : "");
    json_decref(class);
    return 0;
}

static int start_sandbox(struct cri_runtime *cr, struct ck__rt_pod *p, struct ck_err *reterr);

static int pod_start(struct ck__runtime *rt, struct ck__rt_pod *p, char *reason, size_t size,
                     struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    snprintf(reason, size, "%s", "");
    bool pod_network = !spec_bool(p, "hostNetwork");
    if (pod_network && ensure_network(cr, true, reterr) < 0)
        return CK_EIO;
    int r = start_sandbox(cr, p, reterr);
    if (pod_network)
        network_done(cr);
    return r;
}

/* pod_start's sandbox: the pod's READY one, else a new one; its address into p->ip. */
static int start_sandbox(struct cri_runtime *cr, struct ck__rt_pod *p, struct ck_err *reterr)
{
    uint32_t attempt = 0;
    if (ensure_pod_cgroup(cr, p, reterr) < 0)
        return CK_EIO;
    int found = find_sandbox(cr, p, &attempt, reterr);
    if (found < 0)
        return found;
    if (!found) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/containers", p->dir);
        if (ck__mkdirs(dir) < 0)
            return ck_err_set(reterr, CK_EIO, "cannot create %s: %s", dir, strerror(errno));
        char handler[128];
        if (runtime_handler(cr, p, handler, sizeof(handler), reterr) < 0)
            return CK_EIO;
        struct arena ar = {0};
        struct ck__cri_sandbox_config cfg;
        sandbox_config(&ar, cr, p, attempt, &cfg);
        struct ck__pod_dns dns;
        int r = pod_dns(cr, p, &dns, &cfg, reterr);
        if (r < 0) {
            arena_free(&ar);
            return r;
        }
        char *id = NULL;
        r = ck__cri_run_sandbox(cr->cri, &cfg, *handler ? handler : NULL, SANDBOX_TIMEOUT_MS, &id,
                                reterr);
        ck__pod_dns_release(&dns);
        arena_free(&ar);
        if (r < 0)
            return r;
        snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", id);
        free(id);
    }
    struct ck__cri_sandbox_status st;
    int r = ck__cri_sandbox_status(cr->cri, p->sandbox_id, &st, reterr);
    if (r < 0) {
        p->sandbox_id[0] = 0;
        return r;
    }
    snprintf(p->ip, sizeof(p->ip), "%s", st.ip ? st.ip : "");
    ck__cri_sandbox_status_release(&st);
    return 0;
}

static void pod_remove(struct ck__runtime *rt, struct ck__rt_pod *p)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_kv label = {"io.kubernetes.pod.uid", (char *)p->uid};
    struct ck__cri_filter filter = {.state = -1, .labels = &label, .n_labels = 1};
    struct ck__cri_containers cl;
    struct ck__cri_sandboxes sl;
    struct ck_err err = {0};
    if (ck__cri_list_containers(cr->cri, &filter, &cl, &err) == 0) {
        for (size_t i = 0; i < cl.n; i++)
            ck__cri_remove_container(cr->cri, cl.items[i].id, &err);
        ck__cri_containers_release(&cl);
    }
    if (ck__cri_list_sandboxes(cr->cri, &filter, &sl, &err) == 0) {
        for (size_t i = 0; i < sl.n; i++) {
            if (ck__cri_stop_sandbox(cr->cri, sl.items[i].id, &err) < 0 ||
                ck__cri_remove_sandbox(cr->cri, sl.items[i].id, &err) < 0)
                CK_LOGS(0, "Failed to remove pod sandbox", "pod", p->name, "err", err.msg);
        }
        ck__cri_sandboxes_release(&sl);
    }
    remove_pod_cgroup(cr, p);
    p->sandbox_id[0] = 0;
}

static void remove_orphans(struct ck__runtime *rt, const char *const *uids, size_t n)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_filter filter = {.state = -1};
    struct ck__cri_sandboxes sl;
    struct ck_err err = {0};
    if (ck__cri_list_sandboxes(cr->cri, &filter, &sl, &err) < 0)
        return;
    for (size_t i = 0; i < sl.n; i++) {
        const struct ck__cri_sandbox *sb = &sl.items[i];
        const char *uid = ck__cri_kv_get(sb->labels, sb->n_labels, "io.kubernetes.pod.uid");
        bool live = false;
        for (size_t j = 0; uid && j < n && !live; j++)
            live = strcmp(uids[j], uid) == 0;
        if (!uid || live) /* not the kubelet's, or a pod of this node */
            continue;
        /* the pod as far as its removal needs it: uid, name, QoS class (cgroup) */
        json_t *pod = json_pack("{s:{s:[]}}", "spec", "containers");
        struct ck__rt_pod p = {.uid = uid,
                               .ns = sb->ns ? sb->ns : "",
                               .name = sb->name ? sb->name : "",
                               .dir = "",
                               .pod = pod};
        CK_LOGS(0, "Removing an orphaned pod sandbox", "pod", p.name, "namespace", p.ns, "uid", uid,
                "sandbox", sb->id);
        pod_remove(rt, &p);
        json_decref(pod);
    }
    ck__cri_sandboxes_release(&sl);
}

/* The image's pull policy: the spec's, else Kubernetes' default for its tag. */
static const char *pull_policy(const json_t *spec, const char *image)
{
    const char *policy = json_string_value(json_object_get(spec, "imagePullPolicy"));
    if (policy && *policy)
        return policy;
    const char *slash = strrchr(image, '/'), *colon = strrchr(image, ':');
    bool tagged = colon && (!slash || colon > slash) && !strchr(image, '@');
    return !tagged || strcmp(colon, ":latest") == 0 ? "Always" : "IfNotPresent";
}

/*
 * The credentials of the pod's image pull secrets into k (kubelet's
 * getPullSecretsForPod and MakeDockerKeyring): a secret that cannot be read is left
 * out with a warning event; a malformed one fails the pull.
 */
static int pull_keyring(struct cri_runtime *cr, const struct ck__rt_pod *p, struct ck__keyring *k,
                        struct ck_err *reterr)
{
    const struct ck_resource *res = ck_controller_resource("", "v1", "secrets");
    char failed[512] = "";
    size_t i;
    json_t *ref;
    int r = 0;
    json_array_foreach(json_object_get(spec_of(p), "imagePullSecrets"), i, ref)
    {
        const char *name = json_string_value(json_object_get(ref, "name"));
        if (!name || !*name)
            continue;
        json_t *secret = NULL;
        struct ck_err err = {0};
        if (!res || !cr->ctl || ck_ctl_get(cr->ctl, res, p->ns, name, &secret, &err) < 0) {
            CK_LOGS(0, "Unable to retrieve pull secret, the image pull may not succeed.", "pod",
                    p->name, "namespace", p->ns, "secret", name, "err", err.msg);
            size_t len = strlen(failed);
            snprintf(failed + len, sizeof(failed) - len, "%s%s", len ? ", " : "", name);
            continue;
        }
        if (r == 0)
            r = ck__keyring_add_secret(k, secret, reterr);
        json_decref(secret);
    }
    if (failed[0])
        emit(cr, p, CK_EVENT_WARNING, "FailedToRetrieveImagePullSecret",
             "Unable to retrieve some image pull secrets (%s); attempting to pull the image may "
             "not succeed.",
             failed);
    return r;
}

/*
 * PullImage as kubelet's kuberuntime image manager does it: without credentials when
 * the pull secrets have none for the image's registry, else with each in turn until
 * one works; the errors of all of them ("[a, b]", as Go's aggregate prints them) when
 * none does.
 */
static int pull(struct cri_runtime *cr, const struct ck__rt_pod *p, const char *image,
                char **ret_ref, struct ck_err *reterr)
{
    struct ck__keyring k = {0};
    int r = pull_keyring(cr, p, &k, reterr);
    if (r < 0) {
        ck__keyring_release(&k);
        return r;
    }
    char *repo = ck__image_repository(image);
    const struct ck__cred *creds[16];
    size_t n = repo ? ck__keyring_lookup(&k, repo, creds, sizeof(creds) / sizeof(creds[0])) : 0;
    free(repo);
    if (n == 0) {
        r = ck__cri_pull_image(cr->cri, image, NULL, PULL_TIMEOUT_MS, ret_ref, reterr);
        ck__keyring_release(&k);
        return r;
    }
    char msg[sizeof(reterr->msg)] = "";
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        struct ck__cri_auth auth = {.username = creds[i]->username, .password = creds[i]->password};
        struct ck_err err = {0};
        if ((r = ck__cri_pull_image(cr->cri, image, &auth, PULL_TIMEOUT_MS, ret_ref, &err)) == 0)
            break;
        if (!strstr(msg, err.msg)) { /* the aggregate prints each distinct message once */
            size_t len = strlen(msg);
            if (snprintf(msg + len, sizeof(msg) - len, "%s%s", len ? ", " : "", err.msg) >=
                (int)(sizeof(msg) - len))
                msg[sizeof(msg) - 1] = '\0'; /* cut: the message keeps what fits */
            distinct++;
        }
        reterr->code = err.code;
    }
    if (r < 0)
        ck_err_set(reterr, r, distinct > 1 ? "[%s]" : "%s", msg);
    ck__keyring_release(&k);
    return r;
}

/* Makes sure the image is there as its policy says; its id (malloc'd) into *ret_ref. */
static int ensure_image(struct cri_runtime *cr, const struct ck__rt_pod *p, const json_t *spec,
                        bool backoff, char **ret_ref, char *reason, size_t size,
                        struct ck_err *reterr)
{
    const char *image = json_string_value(json_object_get(spec, "image"));
    if (!image || !*image) {
        snprintf(reason, size, "InvalidImageName");
        return ck_err_set(reterr, CK_EINVAL, "the container has no image");
    }
    const char *policy = pull_policy(spec, image);
    struct ck__cri_image st;
    bool found = false;
    if (ck__cri_image_status(cr->cri, image, &st, &found, reterr) < 0) {
        snprintf(reason, size, "ErrImageInspect");
        return CK_EIO;
    }
    if (found && strcmp(policy, "Always") != 0) {
        *ret_ref = st.id;
        st.id = NULL;
        ck__cri_image_release(&st);
        emit(cr, p, CK_EVENT_NORMAL, "Pulled", "Container image \"%s\" already present on machine",
             image);
        return 0;
    }
    if (found)
        ck__cri_image_release(&st);
    if (strcmp(policy, "Never") == 0) {
        snprintf(reason, size, "ErrImageNeverPull");
        emit(cr, p, CK_EVENT_WARNING, "ErrImageNeverPull",
             "Container image \"%s\" is not present with pull policy of Never", image);
        return ck_err_set(reterr, CK_ENOENT,
                          "Container image \"%s\" is not present with pull policy of Never", image);
    }
    if (backoff) { /* the pod's last pull of it failed less than its back-off ago */
        snprintf(reason, size, "ImagePullBackOff");
        emit(cr, p, CK_EVENT_NORMAL, "BackOff", "Back-off pulling image \"%s\"", image);
        return ck_err_set(reterr, CK_EIO, "Back-off pulling image \"%s\"", image);
    }
    emit(cr, p, CK_EVENT_NORMAL, "Pulling", "Pulling image \"%s\"", image);
    int64_t t0 = realtime_ns();
    char *ref = NULL;
    struct ck_err err = {0};
    if (pull(cr, p, image, &ref, &err) < 0) {
        snprintf(reason, size, "ErrImagePull");
        emit(cr, p, CK_EVENT_WARNING, "Failed", "Failed to pull image \"%s\": %s", image, err.msg);
        *reterr = err;
        return CK_EIO;
    }
    emit(cr, p, CK_EVENT_NORMAL, "Pulled", "Successfully pulled image \"%s\" in %.3fs", image,
         (double)(realtime_ns() - t0) / 1e9);
    *ret_ref = ref;
    return 0;
}

static int start(struct ck__runtime *rt, struct ck__rt_pod *p, const struct ck__rt_start *s,
                 char *id, size_t id_size, char *reason, size_t reason_size, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    char *image = NULL;
    if (ensure_image(cr, p, s->spec, s->pull_backoff, &image, reason, reason_size, reterr) < 0)
        return CK_EIO;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/containers/%s", p->dir, s->name);
    ck__mkdirs(dir);
    struct arena ar = {0};
    struct ck__cri_sandbox_config scfg;
    struct ck__cri_container_config cfg;
    sandbox_config(&ar, cr, p, 0, &scfg);
    container_config(&ar, p, s, image, &cfg);
    char *cid = NULL;
    int r = ck__cri_create_container(cr->cri, p->sandbox_id, &cfg, &scfg, &cid, reterr);
    arena_free(&ar);
    free(image);
    if (r < 0) {
        snprintf(reason, reason_size, "CreateContainerError");
        return r;
    }
    if ((r = ck__cri_start_container(cr->cri, cid, reterr)) < 0) {
        snprintf(reason, reason_size, "RunContainerError");
        struct ck_err ignored = {0};
        ck__cri_remove_container(cr->cri, cid, &ignored);
        free(cid);
        return r;
    }
    snprintf(id, id_size, "%s://%s", cr->runtime_name, cid);
    free(cid);
    return 0;
}

static int state(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name, int attempt,
                 const char *id, struct ck__rt_state *ret)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_container_status st;
    struct ck_err err = {0};
    memset(ret, 0, sizeof(*ret));
    int r = ck__cri_container_status(cr->cri, bare_id(id), &st, &err);
    if (r == CK_ENOENT)
        return CK_ENOENT;
    if (r < 0) { /* the runtime is unreachable: nothing is known to have changed */
        ret->running = true;
        return 0;
    }
    ret->running = st.state == CK__CRI_CREATED || st.state == CK__CRI_RUNNING;
    ret->started_ns = st.started_at;
    snprintf(ret->image_ref, sizeof(ret->image_ref), "%s", st.image_ref ? st.image_ref : "");
    if (!ret->running) {
        bool oom = st.reason && strcmp(st.reason, "OOMKilled") == 0;
        ret->exit = (struct ck_proc_exit){st.exit_code, st.exit_code > 128 ? st.exit_code - 128 : 0,
                                          st.finished_at ? st.finished_at : realtime_ns(), oom};
        char dir[PATH_MAX], path[PATH_MAX + 8];
        struct stat sb;
        if (snprintf(dir, sizeof(dir), "%s/containers/%s/%d", p->dir, name, attempt) <
                (int)sizeof(dir) &&
            ck__mkdirs(dir) == 0) {
            snprintf(path, sizeof(path), "%s/exit", dir);
            if (stat(path, &sb) < 0) /* the log reader's end of `follow` */
                ck_proc_write_exit(path, &ret->exit);
        }
    }
    ck__cri_container_status_release(&st);
    return 0;
}

static int find(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name,
                int *ret_attempt, char *id, size_t id_size)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_kv labels[] = {{"io.kubernetes.pod.uid", (char *)p->uid},
                                  {"io.kubernetes.container.name", (char *)name}};
    struct ck__cri_filter filter = {.state = -1, .labels = labels, .n_labels = 2};
    struct ck__cri_containers l;
    struct ck_err err = {0};
    if (ck__cri_list_containers(cr->cri, &filter, &l, &err) < 0)
        return CK_EIO;
    const struct ck__cri_container *newest = NULL;
    for (size_t i = 0; i < l.n; i++)
        if (!newest || l.items[i].attempt > newest->attempt)
            newest = &l.items[i];
    int r = newest ? 0 : CK_ENOENT;
    if (newest) {
        *ret_attempt = (int)newest->attempt;
        snprintf(id, id_size, "%s://%s", cr->runtime_name, newest->id);
    }
    ck__cri_containers_release(&l);
    return r;
}

struct stop_job {
    char *endpoint, *id;
    int64_t grace_s;
};

/* StopContainer on a connection of its own: a grace period holds no other call. */
static void *stop_main(void *arg)
{
    struct stop_job *job = arg;
    struct ck__cri *c = NULL;
    struct ck_err err = {0};
    if (ck__cri_open(job->endpoint, NULL, CALL_TIMEOUT_MS, &c, &err) == 0 &&
        ck__cri_stop_container(c, job->id, job->grace_s, &err) < 0 && err.code != CK_ENOENT)
        CK_LOGS(0, "Failed to stop container", "containerID", job->id, "err", err.msg);
    ck__cri_close(c);
    free(job->endpoint);
    free(job->id);
    free(job);
    return NULL;
}

static void stop(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *id,
                 int64_t grace_s)
{
    (void)p;
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct stop_job *job = calloc(1, sizeof(*job));
    pthread_t t;
    pthread_attr_t attr;
    if (!job || !(job->endpoint = strdup(cr->runtime_endpoint)) ||
        !(job->id = strdup(bare_id(id)))) {
        if (job)
            free(job->endpoint);
        free(job);
        return;
    }
    job->grace_s = grace_s;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, stop_main, job) != 0)
        stop_main(job); /* no thread: stop here */
    pthread_attr_destroy(&attr);
}

static int exec_sync(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *id,
                     char *const *argv, char *const *envp, const char *dir, int64_t timeout_ns,
                     int *ret_code, char *msg, size_t size)
{
    (void)p, (void)envp, (void)dir;
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    size_t argc = 0;
    while (argv[argc])
        argc++;
    struct ck__cri_exec_result res;
    struct ck_err err = {0};
    int64_t timeout_s = (timeout_ns + CK_SEC - 1) / CK_SEC;
    int r = ck__cri_exec_sync(cr->cri, bare_id(id), (const char *const *)argv, argc, timeout_s,
                              &res, &err);
    if (r < 0) {
        snprintf(msg, size, "%s", err.msg);
        return strstr(err.msg, "DeadlineExceeded") || strstr(err.msg, "timeout") ? CK_ETIMEDOUT
                                                                                 : CK_EIO;
    }
    *ret_code = res.exit_code;
    snprintf(msg, size, "%s%s", res.out ? res.out : "", res.err ? res.err : "");
    ck__cri_exec_result_release(&res);
    return 0;
}

static int exec_url(struct ck__runtime *rt, const char *id, char *const *argv, bool want_stdin,
                    bool tty, char **ret_url, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    size_t argc = 0;
    while (argv[argc])
        argc++;
    /* as kubelet's: stdout always; stderr only without a tty (a terminal is one stream) */
    struct ck__cri_streams streams = {tty, want_stdin, true, !tty};
    return ck__cri_exec(cr->cri, bare_id(id), (const char *const *)argv, argc, streams, ret_url,
                        reterr);
}

static int attach_url(struct ck__runtime *rt, const char *id, bool want_stdin, bool tty,
                      char **ret_url, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_streams streams = {tty, want_stdin, true, !tty};
    return ck__cri_attach(cr->cri, bare_id(id), streams, ret_url, reterr);
}

/*
 * One ListContainerStats for all, matched to refs by id (kubelet's CRI stats provider
 * lists them too); a container the runtime does not list stays unknown.
 */
static int container_stats(struct ck__runtime *rt, const struct ck__rt_stats_ref *refs, size_t n,
                           struct ck__rt_stats *ret, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_stats_list l;
    for (size_t i = 0; i < n; i++)
        ret[i] = (struct ck__rt_stats){0};
    int r = ck__cri_list_container_stats(cr->cri, NULL, &l, reterr);
    if (r < 0)
        return r;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ns = (int64_t)now.tv_sec * CK_SEC + now.tv_nsec;
    for (size_t j = 0; j < l.n; j++) {
        const struct ck__cri_container_stats *st = &l.items[j];
        for (size_t i = 0; st->id && i < n; i++) {
            if (strcmp(bare_id(refs[i].id), st->id) != 0)
                continue;
            int64_t at = st->timestamp > 0 ? st->timestamp : now_ns;
            ret[i] = (struct ck__rt_stats){.has_cpu = st->has_cpu,
                                           .has_memory = st->has_memory,
                                           .cpu_time = at,
                                           .memory_time = at,
                                           .cpu_core_ns = st->usage_core_nano_seconds,
                                           .working_set_bytes = st->working_set_bytes};
        }
    }
    ck__cri_stats_list_release(&l);
    return 0;
}

/*
 * One ListPodSandboxStats for all: each ref's pod gets its sandbox's figures (the pod's
 * cgroup, the sandbox's own container included), as kubelet's CRI stats provider reads
 * a pod's.
 */
static int pod_stats(struct ck__runtime *rt, const struct ck__rt_stats_ref *refs, size_t n,
                     struct ck__rt_stats *ret, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_sandbox_stats_list l;
    for (size_t i = 0; i < n; i++)
        ret[i] = (struct ck__rt_stats){0};
    int r = ck__cri_list_sandbox_stats(cr->cri, NULL, &l, reterr);
    if (r < 0)
        return r;
    int64_t now_ns = realtime_ns();
    for (size_t j = 0; j < l.n; j++) {
        const struct ck__cri_sandbox_stats *st = &l.items[j];
        for (size_t i = 0; st->id && i < n; i++) {
            if (strcmp(refs[i].sandbox_id, st->id) != 0)
                continue;
            /* the CPU sample's time (none without one: now, as container_stats) */
            int64_t at = st->usage.timestamp > 0 ? st->usage.timestamp : now_ns;
            ret[i] = (struct ck__rt_stats){.has_cpu = st->usage.has_cpu,
                                           .has_memory = st->usage.has_memory,
                                           .cpu_time = at,
                                           .memory_time = at,
                                           .cpu_core_ns = st->usage.usage_core_nano_seconds,
                                           .working_set_bytes = st->usage.working_set_bytes};
        }
    }
    ck__cri_sandbox_stats_list_release(&l);
    return 0;
}

static int port_forward_url(struct ck__runtime *rt, const char *sandbox_id, int port,
                            char **ret_url, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    int32_t ports[1] = {port};
    return ck__cri_port_forward(cr->cri, sandbox_id, ports, 1, ret_url, reterr);
}

static void runtime_free(struct ck__runtime *rt)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    ck__cri_close(cr->cri);
    free(cr->runtime_endpoint);
    free(cr->image_endpoint);
    free(cr->cni_conf_dir);
    free(cr->cni_bin_dir);
    free(cr->pod_cidr);
    free(cr->cgroup_root);
    for (size_t i = 0; cr->cluster_dns && cr->cluster_dns[i]; i++)
        free(cr->cluster_dns[i]);
    free(cr->cluster_dns);
    free(cr->cluster_domain);
    free(cr->resolv_conf);
    pthread_mutex_destroy(&cr->cidr_lock);
    for (size_t i = 0; i < cr->n_images; i++)
        free(cr->images[i].id);
    free(cr->images);
    free(cr);
}

static void version(struct ck__runtime *rt, char *buf, size_t size)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    snprintf(buf, size, "%s://%s", cr->runtime_name, cr->runtime_version);
}

/* ---- the node's status ------------------------------------------------------------ */

#define NODE_STATUS_MAX_IMAGES 50 /* kubelet's nodeStatusMaxImages default */
#define MAX_NAMES_PER_IMAGE    5  /* kubelet's MaxNamesPerImageInNodeStatus */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* A condition as kubelet's RuntimeCondition prints it: "Type=false reason:R message:M". */
static void condition_text(const struct ck__cri_condition *c, char *buf, size_t size)
{
    if (!c)
        snprintf(buf, size, "<nil>");
    else
        snprintf(buf, size, "%s=%s reason:%s message:%s", c->type ? c->type : "",
                 c->status ? "true" : "false", c->reason ? c->reason : "",
                 c->message ? c->message : "");
}

/* Larger first, then the greater id (kubelet's sliceutils.ByImageSize). */
static int image_cmp(const void *a, const void *b)
{
    const struct ck__cri_image *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return -strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

/* kubelet's Images setter: the largest images, each with its digests, then its tags. */
static json_t *node_images(struct cri_runtime *cr)
{
    struct ck__cri_images l;
    struct ck_err err = {0};
    if (ck__cri_list_images(cr->cri, NULL, &l, &err) < 0) {
        CK_LOGS(2, "Error getting image list", "err", err.msg);
        return NULL;
    }
    if (l.n > 1)
        qsort(l.items, l.n, sizeof(l.items[0]), image_cmp);
    json_t *list = l.n ? json_array() : NULL;
    for (size_t i = 0; list && i < l.n && i < NODE_STATUS_MAX_IMAGES; i++) {
        const struct ck__cri_image *img = &l.items[i];
        json_t *names = json_array();
        for (size_t j = 0; j < img->n_repo_digests && json_array_size(names) < MAX_NAMES_PER_IMAGE;
             j++)
            json_array_append_new(names, json_string(img->repo_digests[j]));
        for (size_t j = 0; j < img->n_repo_tags && json_array_size(names) < MAX_NAMES_PER_IMAGE;
             j++)
            json_array_append_new(names, json_string(img->repo_tags[j]));
        json_array_append_new(
            list, json_pack("{s:o, s:I}", "names", names, "sizeBytes", (json_int_t)img->size));
    }
    ck__cri_images_release(&l);
    return list;
}

/* Appends msg to the aggregate in buf unless it is there already (Go's aggregate). */
static void aggregate_add(char *buf, size_t size, size_t *n, const char *msg)
{
    if (!msg[0] || (*n && strstr(buf, msg)))
        return;
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", len ? ", " : "", msg);
    (*n)++;
}

/*
 * kubelet's updateRuntimeUp and runtimeState: Status's RuntimeReady and NetworkReady
 * (kept as they were when Status fails), and the runtime "down" once no Status has
 * said RuntimeReady for down_after; the Ready condition's message aggregates them.
 */
static void node_status(struct ck__runtime *rt, struct ck__rt_node_status *ret)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_status st;
    struct ck_err err = {0};
    int64_t now = mono_ns();
    char text[256];
    *ret = (struct ck__rt_node_status){0};
    if (ck__cri_status(cr->cri, false, &st, &err) < 0)
        CK_LOGS(0, "Container runtime sanity check failed", "err", err.msg);
    else {
        const struct ck__cri_condition *net = ck__cri_status_condition(&st, "NetworkReady");
        const struct ck__cri_condition *run = ck__cri_status_condition(&st, "RuntimeReady");
        cr->network_error[0] = 0;
        if (!net || !net->status) {
            condition_text(net, text, sizeof(text));
            snprintf(cr->network_error, sizeof(cr->network_error),
                     "container runtime network not ready: %s", text);
            CK_LOGS(2, "Container runtime network not ready", "networkReady", text);
        }
        cr->runtime_error[0] = 0;
        if (!run || !run->status) {
            condition_text(run, text, sizeof(text));
            snprintf(cr->runtime_error, sizeof(cr->runtime_error),
                     "container runtime not ready: %s", text);
            CK_LOGS(0, "Container runtime not ready", "runtimeReady", text);
        } else
            cr->status_ok_at = now;
        ck__cri_status_release(&st);
    }
    size_t n = 0;
    if (cr->status_ok_at == 0)
        aggregate_add(ret->message, sizeof(ret->message), &n,
                      "container runtime status check may not have completed yet");
    else if (now - cr->status_ok_at >= cr->down_after)
        aggregate_add(ret->message, sizeof(ret->message), &n, "container runtime is down");
    aggregate_add(ret->message, sizeof(ret->message), &n, cr->runtime_error);
    aggregate_add(ret->message, sizeof(ret->message), &n, cr->network_error);
    if (n > 1) {
        char all[sizeof(ret->message)];
        memcpy(all, ret->message, sizeof(all));
        snprintf(ret->message, sizeof(ret->message), "[%.*s]", (int)sizeof(all) - 3, all);
    }
    ret->ready = n == 0;
    ret->images = node_images(cr);
}

/* ---- garbage collection ------------------------------------------------------------ */

/*
 * Removes a container's log as kubelet's log manager cleans it (the file and its rotated
 * ones, <path>.*), and the agent's own <attempt>/ directory next to it (its exit file).
 */
static void remove_log(const char *log_path)
{
    if (!log_path || !*log_path)
        return;
    char pattern[PATH_MAX];
    glob_t g;
    unlink(log_path);
    if (snprintf(pattern, sizeof(pattern), "%s.*", log_path) < (int)sizeof(pattern) &&
        glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
    size_t len = strlen(log_path);
    if (len > 4 && strcmp(log_path + len - 4, ".log") == 0 && len + 1 < sizeof(pattern)) {
        snprintf(pattern, sizeof(pattern), "%.*s/exit", (int)(len - 4), log_path);
        unlink(pattern);
        snprintf(pattern, sizeof(pattern), "%.*s/" CK__TERMINATION_LOG, (int)(len - 4), log_path);
        unlink(pattern);
        pattern[len - 4] = 0;
        rmdir(pattern);
    }
}

static const struct ck__rt_gc_keep *keep_of(const struct ck__rt_gc_keep *keep, size_t n,
                                            const char *uid, const char *name)
{
    for (size_t i = 0; uid && i < n; i++)
        if (strcmp(keep[i].uid, uid) == 0 && (!name || strcmp(keep[i].name, name) == 0))
            return &keep[i];
    return NULL;
}

/* The marked ones first, oldest first (the lower attempt, then the earlier creation). */
static int oldest_cmp(const void *a, const void *b)
{
    const struct ck__gc_container *x = a, *y = b;
    if (x->evict != y->evict)
        return x->evict ? -1 : 1;
    if (x->attempt != y->attempt)
        return x->attempt < y->attempt ? -1 : 1;
    return x->created_at < y->created_at ? -1 : x->created_at > y->created_at;
}

/* kubelet's evictContainers over the agent's pods. */
static void gc_containers(struct cri_runtime *cr, const struct ck__rt_gc_policy *policy,
                          const struct ck__rt_gc_keep *keep, size_t n_keep)
{
    struct ck__cri_filter filter = {.state = -1};
    struct ck__cri_containers l;
    struct ck_err err = {0};
    if (ck__cri_list_containers(cr->cri, &filter, &l, &err) < 0) {
        CK_LOGS(0, "Failed to list containers for garbage collection", "err", err.msg);
        return;
    }
    struct ck__gc_container *c = calloc(l.n + 1, sizeof(*c));
    size_t n = 0, n_evict = 0;
    for (size_t i = 0; c && i < l.n; i++) {
        const struct ck__cri_container *ct = &l.items[i];
        const char *uid = ck__cri_kv_get(ct->labels, ct->n_labels, "io.kubernetes.pod.uid");
        const char *name = ck__cri_kv_get(ct->labels, ct->n_labels, "io.kubernetes.container.name");
        if (!name)
            name = ct->name;
        if (!uid || !name || !keep_of(keep, n_keep, uid, NULL))
            continue; /* not the kubelet's, or not a pod the agent runs */
        const struct ck__rt_gc_keep *k = keep_of(keep, n_keep, uid, name);
        c[n++] = (struct ck__gc_container){
            .id = ct->id,
            .pod_uid = uid,
            .name = name,
            .attempt = (int)ct->attempt,
            .running = ct->state == CK__CRI_RUNNING,
            .unknown = ct->state == CK__CRI_UNKNOWN,
            .kept = k && (int)ct->attempt >= k->attempt_from,
            .created_at = ct->created_at,
        };
    }
    if (c && ck__gc_select(c, n, policy, realtime_ns(), &n_evict) == 0 && n_evict) {
        qsort(c, n, sizeof(*c), oldest_cmp);
        for (size_t i = 0; i < n_evict; i++) {
            const char *id = c[i].id;
            struct ck__cri_container_status st;
            CK_LOGS(4, "Removing container", "containerID", id, "podUID", c[i].pod_uid, "attempt",
                    c[i].attempt);
            /* one whose state is unknown may run: kubelet kills it first */
            if (c[i].unknown && ck__cri_stop_container(cr->cri, id, 0, &err) < 0 &&
                err.code != CK_ENOENT) {
                CK_LOGS(0, "Failed to stop container", "containerID", id, "err", err.msg);
                continue;
            }
            if (ck__cri_container_status(cr->cri, id, &st, &err) == 0) {
                remove_log(st.log_path);
                ck__cri_container_status_release(&st);
            }
            if (ck__cri_remove_container(cr->cri, id, &err) < 0 && err.code != CK_ENOENT)
                CK_LOGS(0, "Failed to remove container", "containerID", id, "err", err.msg);
        }
    }
    free(c);
    ck__cri_containers_release(&l);
}

/* Newest first (kubelet's sandboxByAttempt: the higher attempt, then the later creation). */
static int sandbox_newest_cmp(const void *a, const void *b)
{
    const struct ck__cri_sandbox *x = *(const struct ck__cri_sandbox *const *)a;
    const struct ck__cri_sandbox *y = *(const struct ck__cri_sandbox *const *)b;
    if (x->attempt != y->attempt)
        return x->attempt > y->attempt ? -1 : 1;
    return x->created_at > y->created_at ? -1 : x->created_at < y->created_at;
}

/*
 * kubelet's evictSandboxes for pods that still exist: each keeps its newest sandbox;
 * the older ones go unless READY or still holding a container.
 */
static void gc_sandboxes(struct cri_runtime *cr, const struct ck__rt_gc_keep *keep, size_t n_keep)
{
    struct ck__cri_filter filter = {.state = -1};
    struct ck__cri_sandboxes sl;
    struct ck__cri_containers cl;
    struct ck_err err = {0};
    if (ck__cri_list_sandboxes(cr->cri, &filter, &sl, &err) < 0)
        return;
    if (ck__cri_list_containers(cr->cri, &filter, &cl, &err) < 0) {
        ck__cri_sandboxes_release(&sl);
        return;
    }
    const struct ck__cri_sandbox **v = calloc(sl.n + 1, sizeof(*v));
    for (size_t i = 0; v && i < sl.n; i++) {
        const char *uid =
            ck__cri_kv_get(sl.items[i].labels, sl.items[i].n_labels, "io.kubernetes.pod.uid");
        bool seen = false; /* this pod's sandboxes were handled with an earlier one */
        for (size_t j = 0; uid && j < i && !seen; j++)
            seen =
                ck__cri_kv_get(sl.items[j].labels, sl.items[j].n_labels, "io.kubernetes.pod.uid") &&
                strcmp(ck__cri_kv_get(sl.items[j].labels, sl.items[j].n_labels,
                                      "io.kubernetes.pod.uid"),
                       uid) == 0;
        if (!uid || seen || !keep_of(keep, n_keep, uid, NULL))
            continue;
        size_t n = 0;
        for (size_t j = i; j < sl.n; j++) {
            const char *u =
                ck__cri_kv_get(sl.items[j].labels, sl.items[j].n_labels, "io.kubernetes.pod.uid");
            if (u && strcmp(u, uid) == 0)
                v[n++] = &sl.items[j];
        }
        qsort(v, n, sizeof(*v), sandbox_newest_cmp);
        for (size_t j = 1; j < n; j++) {
            bool active = v[j]->state == CK__CRI_SANDBOX_READY;
            for (size_t k = 0; k < cl.n && !active; k++)
                active = cl.items[k].sandbox_id && strcmp(cl.items[k].sandbox_id, v[j]->id) == 0;
            if (active)
                continue;
            CK_LOGS(4, "Removing sandbox", "sandboxID", v[j]->id, "podUID", uid);
            if (ck__cri_stop_sandbox(cr->cri, v[j]->id, &err) < 0 ||
                ck__cri_remove_sandbox(cr->cri, v[j]->id, &err) < 0)
                CK_LOGS(0, "Failed to remove sandbox", "sandboxID", v[j]->id, "err", err.msg);
        }
    }
    free(v);
    ck__cri_containers_release(&cl);
    ck__cri_sandboxes_release(&sl);
}

static void gc(struct ck__runtime *rt, const struct ck__rt_gc_policy *policy,
               const struct ck__rt_gc_keep *keep, size_t n_keep)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    gc_containers(cr, policy, keep, n_keep);
    gc_sandboxes(cr, keep, n_keep);
}

/* ---- container log rotation ------------------------------------------------------- */

struct reopen_arg {
    struct cri_runtime *cr;
    const char *id;
};

static int reopen_log(void *arg, struct ck_err *reterr)
{
    struct reopen_arg *ra = arg;
    return ck__cri_reopen_container_log(ra->cr->cri, ra->id, reterr);
}

/* kubelet's rotateLogs and processContainer: each running container's log, one by one. */
static void rotate_logs(struct ck__runtime *rt, int64_t max_size, int max_files)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_filter filter = {.state = CK__CRI_RUNNING};
    struct ck__cri_containers l;
    struct ck_err err = {0};
    if (ck__cri_list_containers(cr->cri, &filter, &l, &err) < 0) {
        CK_LOGS_ERR("Failed to rotate container logs", "err", err.msg);
        return;
    }
    for (size_t i = 0; i < l.n; i++) {
        const char *id = l.items[i].id;
        struct ck__cri_container_status st;
        if (l.items[i].state != CK__CRI_RUNNING)
            continue; /* no new output: no point in a new empty log */
        if (ck__cri_container_status(cr->cri, id, &st, &err) < 0) {
            CK_LOGS_ERR("Failed to get container status", "containerID", id, "err", err.msg);
            continue;
        }
        struct reopen_arg ra = {cr, id};
        int r = st.log_path && *st.log_path
                    ? ck__log_rotate(st.log_path, max_size, max_files, realtime_ns() / CK_SEC,
                                     reopen_log, &ra, &err)
                    : 0;
        if (r < 0)
            CK_LOGS_ERR("Failed to rotate log for container", "containerID", id, "path",
                        st.log_path, "err", err.msg);
        else if (r > 0)
            CK_LOGS(4, "Rotated container log", "containerID", id, "path", st.log_path);
        ck__cri_container_status_release(&st);
    }
    ck__cri_containers_release(&l);
}

/* The runtime's sandbox image (Status's info "config", containerd's sandboxImage), or NULL. */
static char *sandbox_image(struct cri_runtime *cr)
{
    struct ck__cri_status st;
    struct ck_err err = {0};
    char *image = NULL;
    if (ck__cri_status(cr->cri, true, &st, &err) < 0)
        return NULL;
    const char *config = ck__cri_kv_get(st.info, st.n_info, "config");
    json_t *root = config ? json_loads(config, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(root, "sandboxImage"));
    if (name && *name)
        image = strdup(name);
    json_decref(root);
    ck__cri_status_release(&st);
    return image;
}

static struct image_record *image_record(struct cri_runtime *cr, const char *id, int64_t now)
{
    for (size_t i = 0; i < cr->n_images; i++)
        if (strcmp(cr->images[i].id, id) == 0)
            return &cr->images[i];
    struct image_record *v = realloc(cr->images, (cr->n_images + 1) * sizeof(*v));
    if (!v)
        return NULL;
    cr->images = v;
    char *copy = strdup(id);
    if (!copy)
        return NULL;
    v[cr->n_images] = (struct image_record){copy, now, 0};
    return &v[cr->n_images++];
}

/*
 * kubelet's detectImages: every image's first sight, and its last use (now, for the
 * images of any container the runtime has, dead ones included, and the sandbox
 * image); records of images gone are dropped. Fills img (the list's order) and
 * returns 0, or the error.
 */
static int detect_images(struct cri_runtime *cr, const struct ck__cri_images *l,
                         struct ck__gc_image *img, int64_t now, struct ck_err *reterr)
{
    struct ck__cri_filter filter = {.state = -1};
    struct ck__cri_containers cl;
    int r = ck__cri_list_containers(cr->cri, &filter, &cl, reterr);
    if (r < 0)
        return r;
    char *sandbox = sandbox_image(cr);
    char *sandbox_id = NULL;
    if (sandbox) {
        struct ck__cri_image st;
        bool found = false;
        struct ck_err err = {0};
        if (ck__cri_image_status(cr->cri, sandbox, &st, &found, &err) == 0 && found) {
            sandbox_id = st.id ? strdup(st.id) : NULL;
            ck__cri_image_release(&st);
        }
    }
    if (!sandbox) { /* nothing would tell the sandboxes' image from an unused one */
        ck__cri_containers_release(&cl);
        return ck_err_set(reterr, CK_EIO, "cannot tell the runtime's sandbox image (Status)");
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct ck__cri_image *im = &l->items[i];
        struct image_record *rec = im->id ? image_record(cr, im->id, now) : NULL;
        bool used = !rec || (sandbox_id && strcmp(sandbox_id, im->id) == 0);
        for (size_t j = 0; j < im->n_repo_tags && !used; j++)
            used = strcmp(im->repo_tags[j], sandbox) == 0;
        for (size_t j = 0; j < cl.n && !used; j++) {
            const struct ck__cri_container *ct = &cl.items[j];
            used = (ct->image_ref && strcmp(ct->image_ref, im->id) == 0) ||
                   (ct->image_id && strcmp(ct->image_id, im->id) == 0) ||
                   (ct->image && strcmp(ct->image, im->id) == 0);
        }
        if (rec && used)
            rec->last_used = now;
        img[i] = (struct ck__gc_image){.id = im->id,
                                       .size = im->size,
                                       .in_use = used,
                                       .pinned = im->pinned,
                                       .first_detected = rec ? rec->first_detected : now,
                                       .last_used = rec ? rec->last_used : now};
    }
    /* forget the images that are gone */
    for (size_t k = 0; k < cr->n_images;) {
        bool there = false;
        for (size_t i = 0; i < l->n && !there; i++)
            there = l->items[i].id && strcmp(l->items[i].id, cr->images[k].id) == 0;
        if (there) {
            k++;
            continue;
        }
        free(cr->images[k].id);
        cr->images[k] = cr->images[--cr->n_images];
    }
    free(sandbox_id);
    free(sandbox);
    ck__cri_containers_release(&cl);
    return 0;
}

static int image_gc(struct ck__runtime *rt, const struct ck__rt_image_gc_policy *policy,
                    bool *ret_short, struct ck_err *reterr)
{
    struct cri_runtime *cr = (struct cri_runtime *)rt;
    struct ck__cri_fs_info fs;
    struct ck__cri_images l;
    struct statvfs vfs;
    int64_t now = realtime_ns();
    *ret_short = false;
    int r = ck__cri_image_fs_info(cr->cri, &fs, reterr);
    if (r < 0)
        return r;
    if (fs.n_image_fs == 0 || !fs.image_fs[0].mountpoint || !*fs.image_fs[0].mountpoint ||
        statvfs(fs.image_fs[0].mountpoint, &vfs) < 0) {
        r = ck_err_set(reterr, CK_EIO, "cannot read the image filesystem's stats (%s)",
                       fs.n_image_fs && fs.image_fs[0].mountpoint ? fs.image_fs[0].mountpoint
                                                                  : "none");
        ck__cri_fs_info_release(&fs);
        return r;
    }
    ck__cri_fs_info_release(&fs);
    int64_t capacity = (int64_t)(vfs.f_blocks * vfs.f_frsize);
    int64_t available = (int64_t)(vfs.f_bavail * vfs.f_frsize);
    if (available > capacity)
        available = capacity;
    if (capacity <= 0)
        return ck_err_set(reterr, CK_EIO, "invalid capacity 0 on image filesystem");
    if ((r = ck__cri_list_images(cr->cri, NULL, &l, reterr)) < 0)
        return r;
    struct ck__gc_image *img = calloc(l.n + 1, sizeof(*img));
    if (!img) {
        ck__cri_images_release(&l);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if ((r = detect_images(cr, &l, img, now, reterr)) < 0)
        goto out;
    int usage = 100 - (int)(available * 100 / capacity);
    if (usage < policy->high_threshold)
        goto out;
    int64_t amount = capacity * (100 - policy->low_threshold) / 100 - available;
    char used[16];
    snprintf(used, sizeof(used), "%d", usage);
    CK_LOGS(0,
            "Disk usage on image filesystem is over the high threshold, trying to free bytes "
            "down to the low threshold",
            "usage", used);
    uint64_t planned = 0, freed = 0;
    if ((r = ck__image_gc_select(img, l.n, amount > 0 ? (uint64_t)amount : 0, policy->min_age, now,
                                 &planned)) < 0) {
        ck_err_set(reterr, r, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (!img[i].remove)
            continue;
        struct ck_err err = {0};
        CK_LOGS(0, "Removing image to free bytes", "imageID", img[i].id);
        if (ck__cri_remove_image(cr->cri, img[i].id, &err) < 0 && err.code != CK_ENOENT)
            CK_LOGS(0, "Failed to remove image", "imageID", img[i].id, "err", err.msg);
        else
            freed += img[i].size;
    }
    if (amount > 0 && freed < (uint64_t)amount) {
        *ret_short = true;
        r = ck_err_set(reterr, CK_EIO,
                       "Failed to garbage collect required amount of images. Attempted to free "
                       "%lld bytes, but only found %llu bytes eligible to free.",
                       (long long)amount, (unsigned long long)freed);
    }
out:
    free(img);
    ck__cri_images_release(&l);
    return r;
}

static const struct ck__runtime_ops cri_ops = {
    .name = "cri",
    .relist_period = CK_SEC, /* kubelet's PLEG relist period */
    .version = version,
    .pod_start = pod_start,
    .pod_remove = pod_remove,
    .start = start,
    .state = state,
    .find = find,
    .stop = stop,
    .exec = exec_sync,
    .exec_url = exec_url,
    .container_stats = container_stats,
    .pod_stats = pod_stats,
    .attach_url = attach_url,
    .port_forward_url = port_forward_url,
    .remove_orphans = remove_orphans,
    .rotate_logs = rotate_logs,
    .node_status = node_status,
    .set_pod_cidr = set_pod_cidr,
    .gc = gc,
    .image_gc = image_gc,
    .free = runtime_free,
};

int ck__runtime_cri_new(const struct ck_agent_config *config, const struct ck_ctl_client *ctl,
                        ck__rt_event_fn event, void *event_arg, struct ck__runtime **ret,
                        struct ck_err *reterr)
{
    const char *endpoint = config->runtime_endpoint && *config->runtime_endpoint
                               ? config->runtime_endpoint
                               : CK_AGENT_RUNTIME_ENDPOINT;
    struct stat st;
    int r = config->pod_cidr ? ck__cni_parse_cidr(config->pod_cidr, reterr) : 0;
    if (r < 0)
        return r;
    if (strncmp(endpoint, "unix://", 7) == 0 && stat(endpoint + 7, &st) < 0)
        return ck_err_set(reterr, CK_ENOENT,
                          "container runtime endpoint %s: %s: install containerd (apt-get "
                          "install containerd runc), or set --container-runtime-endpoint, or "
                          "--container-runtime process (pods as unisolated host processes)",
                          endpoint, strerror(errno));
    struct cri_runtime *cr = calloc(1, sizeof(*cr));
    if (!cr)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    cr->base.ops = &cri_ops;
    cr->runtime_endpoint = strdup(endpoint);
    cr->cni_conf_dir = strdup(config->cni_conf_dir ? config->cni_conf_dir : CK_AGENT_CNI_CONF_DIR);
    cr->cni_bin_dir = strdup(config->cni_bin_dir ? config->cni_bin_dir : CK_AGENT_CNI_BIN_DIR);
    pthread_mutex_init(&cr->cidr_lock, NULL);
    /* config->pod_cidr is the agent's to give (set_pod_cidr) when the Node gets no range */
    cr->cluster_dns = calloc(config->n_cluster_dns + 1, sizeof(*cr->cluster_dns));
    for (size_t i = 0; cr->cluster_dns && i < config->n_cluster_dns; i++)
        if (!(cr->cluster_dns[i] = strdup(config->cluster_dns[i])))
            break;
    cr->cluster_domain = strdup(config->cluster_domain ? config->cluster_domain : "");
    cr->resolv_conf = strdup(config->resolv_conf ? config->resolv_conf : CK_AGENT_RESOLV_CONF);
    bool dns_ok = cr->cluster_dns && cr->cluster_domain && cr->resolv_conf &&
                  (config->n_cluster_dns == 0 || cr->cluster_dns[config->n_cluster_dns - 1]);
    cr->dns = (struct ck__dns_node){(const char *const *)cr->cluster_dns, config->n_cluster_dns,
                                    cr->cluster_domain, cr->resolv_conf};
    const char *cgroup_root = config->cgroup_root ? config->cgroup_root : "/";
    size_t root_len = strlen(cgroup_root);
    while (root_len > 0 && cgroup_root[root_len - 1] == '/')
        root_len--;
    cr->cgroup_root = strndup(cgroup_root, root_len);
    if (!cr->runtime_endpoint || !cr->cni_conf_dir || !cr->cni_bin_dir || !dns_ok ||
        !cr->cgroup_root) {
        runtime_free(&cr->base);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    cr->event = event;
    cr->event_arg = event_arg;
    cr->ctl = ctl;
    /* kubelet's 2 minutes, or two node status updates when they come sooner */
    int64_t freq = config->node_status_update_frequency > 0 ? config->node_status_update_frequency
                                                            : 10 * CK_SEC;
    cr->down_after = 2 * freq < 120 * CK_SEC ? 2 * freq : 120 * CK_SEC;
    r = ck__cri_open(endpoint, config->image_endpoint, CALL_TIMEOUT_MS, &cr->cri, reterr);
    if (r < 0) {
        runtime_free(&cr->base);
        return r;
    }
    struct ck__cri_version v;
    if ((r = ck__cri_version(cr->cri, "v1", &v, reterr)) < 0) {
        runtime_free(&cr->base);
        return r;
    }
    snprintf(cr->runtime_name, sizeof(cr->runtime_name), "%s",
             v.runtime_name && *v.runtime_name ? v.runtime_name : "cri");
    snprintf(cr->runtime_version, sizeof(cr->runtime_version), "%s",
             v.runtime_version ? v.runtime_version : "");
    CK_LOGS(0, "Container runtime", "name", v.runtime_name ? v.runtime_name : "", "version",
            v.runtime_version ? v.runtime_version : "", "apiVersion",
            v.runtime_api_version ? v.runtime_api_version : "");
    ck__cri_version_release(&v);
    struct ck_err nerr = {0};
    ensure_network(cr, false, &nerr); /* not there yet: tried again for each sandbox */
    *ret = &cr->base;
    return 0;
}
