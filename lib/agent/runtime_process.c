/*
 * runtime_process.c - the process runtime behind the agent's runtime interface
 * (internal.h): a container is a host process under a shim (process.c), with no image,
 * no isolation and the host's network. Chosen only with --container-runtime process.
 *
 * Everything it knows is on disk, so that a restarted agent finds it again: attempt N
 * of container C of a pod has the directory <pod dir>/containers/C/N with `pid` ("<pid>
 * <start ticks>", written once the process runs) and `exit` (written by the shim when
 * it ends), and its log is <pod dir>/containers/C/N.log. A container's id is
 * process://<pid>. A container with `stdin: true` reads its stdin from the FIFO `stdin`
 * in that directory, which `kubectl attach -i` writes into. The command is the container's command
 * and args as given: the image's entrypoint is unknown here, so a container without a command
 * cannot run.
 *
 * Stats (the resource metrics): a container's cgroup when it has one (cpu.stat,
 * memory.current less inactive_file), else the sums over its process group in /proc
 * (CPU time, resident memory as its working set).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "internal.h"

struct process_runtime {
    struct ck__runtime base;
    char cgroup[PATH_MAX]; /* the delegated cgroup v2, or "": rlimits */
    char host_ip[64];
    int64_t log_max_size;
    int log_max_files;
};

int ck__mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0750) < 0 && errno != EEXIST ? -1 : 0;
}

/* <pod dir>/containers/<name>/<attempt>[/file]; "" when too long. */
static void attempt_path(const struct ck__rt_pod *p, const char *name, int attempt,
                         const char *file, char *buf, size_t size)
{
    if (snprintf(buf, size, "%s/containers/%s/%d%s%s", p->dir, name, attempt, file ? "/" : "",
                 file ? file : "") >= (int)size)
        buf[0] = 0;
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static int pod_start(struct ck__runtime *rt, struct ck__rt_pod *p, char *reason, size_t size,
                     struct ck_err *reterr)
{
    (void)reason, (void)size, (void)reterr;
    struct process_runtime *pr = (struct process_runtime *)rt;
    snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", p->dir);
    snprintf(p->ip, sizeof(p->ip), "%s", pr->host_ip);
    return 0;
}

static void pod_remove(struct ck__runtime *rt, struct ck__rt_pod *p)
{
    (void)rt, (void)p; /* the pod directory stays, as before */
}

void ck__process_env(const char *hostname, char *const *envp, struct ck__env *env)
{
    bool has_path = false;
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        if (!eq)
            continue;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - envp[i]), envp[i]);
        ck__env_add(env, name, eq + 1);
        has_path = has_path || strcmp(name, "PATH") == 0;
    }
    if (!has_path)
        ck__env_add(env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    ck__env_add(env, "HOSTNAME", hostname);
}

static int start(struct ck__runtime *rt, struct ck__rt_pod *p, const struct ck__rt_start *s,
                 char *id, size_t id_size, char *reason, size_t reason_size, struct ck_err *reterr)
{
    struct process_runtime *pr = (struct process_runtime *)rt;
    char dir[PATH_MAX], exitp[PATH_MAX], pidp[PATH_MAX], stdinp[PATH_MAX];
    attempt_path(p, s->name, s->attempt, NULL, dir, sizeof(dir));
    attempt_path(p, s->name, s->attempt, "exit", exitp, sizeof(exitp));
    attempt_path(p, s->name, s->attempt, "pid", pidp, sizeof(pidp));
    attempt_path(p, s->name, s->attempt, "stdin", stdinp, sizeof(stdinp));
    bool open_stdin = json_is_true(json_object_get(s->spec, "stdin"));
    snprintf(reason, reason_size, "RunContainerError");
    if (!s->command || !s->command[0])
        return ck_err_set(reterr, CK_EINVAL,
                          "no command: the process runtime runs the container's command on the "
                          "host and knows no image entrypoint");
    size_t n = 0, k = 0;
    for (size_t i = 0; s->command[i]; i++)
        n++;
    for (size_t i = 0; s->args && s->args[i]; i++)
        n++;
    char **argv = calloc(n + 1, sizeof(*argv));
    struct ck__env env = {0};
    ck__process_env(p->name, s->envp, &env);
    char **envp = env.v;
    if (!argv || !envp) {
        free(argv);
        ck__env_free(&env);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; s->command[i]; i++)
        argv[k++] = s->command[i];
    for (size_t i = 0; s->args && s->args[i]; i++)
        argv[k++] = s->args[i];
    const char *wd = json_string_value(json_object_get(s->spec, "workingDir"));
    struct ck_limits limits;
    ck_limits_from_container(s->spec, &limits);
    char cgroup[PATH_MAX + 600];
    if (pr->cgroup[0])
        snprintf(cgroup, sizeof(cgroup), "%s/pod%s_%.254s_%d", pr->cgroup, p->uid, s->name,
                 s->attempt);
    struct ck_proc_spec spec = {argv,
                                envp,
                                wd && *wd ? wd : p->dir,
                                s->log_path,
                                exitp,
                                pr->log_max_size,
                                pr->log_max_files,
                                &limits,
                                pr->cgroup[0] ? cgroup : NULL,
                                open_stdin ? stdinp : NULL};
    struct ck_proc proc;
    int r;
    if (!dir[0] || ck__mkdirs(dir) < 0)
        r = ck_err_set(reterr, CK_EIO, "cannot create %s: %s", dir, strerror(errno));
    else if (open_stdin && (!stdinp[0] || (mkfifo(stdinp, 0600) < 0 && errno != EEXIST)))
        r = ck_err_set(reterr, CK_EIO, "cannot create the stdin FIFO %s: %s", stdinp,
                       strerror(errno));
    else
        r = ck_proc_start(&spec, &proc, reterr);
    if (r == 0) {
        FILE *f = fopen(pidp, "we");
        if (f) {
            fprintf(f, "%d %lld\n", (int)proc.pid, (long long)proc.started_ns);
            fclose(f);
        }
        snprintf(id, id_size, "process://%d", (int)proc.pid);
    }
    free(argv);
    ck__env_free(&env);
    return r;
}

static int read_pid(const char *path, int *ret_pid, long long *ret_ticks)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return CK_ENOENT;
    int r = fscanf(f, "%d %lld", ret_pid, ret_ticks) == 2 ? 0 : CK_ENOENT;
    fclose(f);
    return r;
}

static int state(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name, int attempt,
                 const char *id, struct ck__rt_state *ret)
{
    (void)rt, (void)id;
    char path[PATH_MAX];
    int pid;
    long long ticks;
    struct stat st;
    memset(ret, 0, sizeof(*ret));
    attempt_path(p, name, attempt, "pid", path, sizeof(path));
    if (read_pid(path, &pid, &ticks) < 0)
        return CK_ENOENT;
    ret->started_ns = stat(path, &st) == 0
                          ? (int64_t)st.st_mtim.tv_sec * CK_SEC + st.st_mtim.tv_nsec
                          : realtime_ns();
    attempt_path(p, name, attempt, "exit", path, sizeof(path));
    if (ck_proc_read_exit(path, &ret->exit) == 0)
        return 0;
    ret->running = ck_proc_alive(pid, ticks);
    if (!ret->running) {
        /* the shim writes the exit file once the container's pipes are quiet (a poll of
           200 ms) after reaping it: a second for it, then gone without an exit status (a
           reboot, a lost shim) */
        for (int i = 0; i < 100 && ck_proc_read_exit(path, &ret->exit) != 0; i++)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        if (ck_proc_read_exit(path, &ret->exit) != 0)
            ret->exit = (struct ck_proc_exit){137, 9, realtime_ns(), false};
    }
    return 0;
}

static int find(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *name,
                int *ret_attempt, char *id, size_t id_size)
{
    (void)rt;
    char dir[PATH_MAX], path[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s/containers/%s", p->dir, name) >= (int)sizeof(dir))
        return CK_ENOENT;
    DIR *d = opendir(dir);
    int newest = -1;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && atoi(e->d_name) > newest)
            newest = atoi(e->d_name);
    if (d)
        closedir(d);
    int pid;
    long long ticks;
    attempt_path(p, name, newest, "pid", path, sizeof(path));
    if (newest < 0 || read_pid(path, &pid, &ticks) < 0)
        return CK_ENOENT;
    *ret_attempt = newest;
    snprintf(id, id_size, "process://%d", pid);
    return 0;
}

static void stop(struct ck__runtime *rt, const struct ck__rt_pod *p, const char *id,
                 int64_t grace_s)
{
    (void)rt, (void)p;
    int pid = 0;
    if (sscanf(id, "process://%d", &pid) == 1 && pid > 1)
        ck_proc_signal(pid, grace_s > 0 ? SIGTERM : SIGKILL);
}

/*
 * A container's CPU and memory: its cgroup's when it has one (the delegated cgroup's
 * pod<uid>_<name>_<attempt>, as start makes it), else its process group's from /proc.
 */
static int container_stats(struct ck__runtime *rt, const struct ck__rt_stats_ref *refs, size_t n,
                           struct ck__rt_stats *ret, struct ck_err *reterr)
{
    (void)reterr;
    struct process_runtime *pr = (struct process_runtime *)rt;
    int64_t now = realtime_ns();
    for (size_t i = 0; i < n; i++) {
        const struct ck__rt_stats_ref *c = &refs[i];
        char dir[PATH_MAX + 600];
        struct stat st;
        ret[i] = (struct ck__rt_stats){0};
        if (pr->cgroup[0] &&
            snprintf(dir, sizeof(dir), "%s/pod%s_%.254s_%d", pr->cgroup, c->uid, c->name,
                     c->attempt) < (int)sizeof(dir) &&
            stat(dir, &st) == 0) {
            ck__cgroup_stats_read(dir, now, &ret[i]);
            continue;
        }
        int pid = 0;
        if (sscanf(c->id, "process://%d", &pid) == 1 && pid > 1)
            ck__pgroup_stats_read(NULL, pid, now, &ret[i]);
    }
    return 0;
}

static void runtime_free(struct ck__runtime *rt)
{
    free(rt);
}

static void version(struct ck__runtime *rt, char *buf, size_t size)
{
    (void)rt;
    snprintf(buf, size, "process://1.0");
}

/* Host processes need nothing to be ready, and have no images. */
static void node_status(struct ck__runtime *rt, struct ck__rt_node_status *ret)
{
    (void)rt;
    *ret = (struct ck__rt_node_status){.ready = true};
}

static const struct ck__runtime_ops process_ops = {
    .name = "process",
    .relist_period = 0, /* two files read: each tick */
    .version = version,
    .pod_start = pod_start,
    .pod_remove = pod_remove,
    .start = start,
    .state = state,
    .find = find,
    .stop = stop,
    .exec = NULL,           /* probes and hooks run on the host, in the container's env (probe.c) */
    .remove_orphans = NULL, /* pod directories stay, as they always have */
    .node_status = node_status,
    .exec_url = NULL,         /* kubectl exec runs on the host too (exec.c) */
    .attach_url = NULL,       /* kubectl attach reads the log and writes the stdin FIFO (exec.c) */
    .port_forward_url = NULL, /* pods share the host's network (portforward.c) */
    .container_stats = container_stats,
    .pod_stats = NULL, /* no pod cgroup: a pod's figures are its containers' sums */
    .free = runtime_free,
};

struct ck__runtime *ck__runtime_process_new(const struct ck_agent_config *config,
                                            const char *cgroup, const char *host_ip)
{
    struct process_runtime *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return NULL;
    pr->base.ops = &process_ops;
    snprintf(pr->cgroup, sizeof(pr->cgroup), "%s", cgroup ? cgroup : "");
    snprintf(pr->host_ip, sizeof(pr->host_ip), "%s", host_ip);
    pr->log_max_size = config->container_log_max_size;
    pr->log_max_files = config->container_log_max_files;
    return &pr->base;
}
