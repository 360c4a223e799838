/*
 * process.c - the container runtime of `ckube agent`: a container is a local process in
 * its own process group, watched by a small shim process.
 *
 * ck_proc_start() forks a shim (its own session, so that signals to the container's
 * group never reach it) which forks the container: the container's stdout and stderr
 * go to pipes the shim reads, and the shim writes each line to the log file in the CRI
 * format kubelet's log reader expects ("<RFC 3339 nano time> <stream> <F|P> <text>").
 * When the container exits, the shim writes its exit status to the exit file (written
 * to a temporary name, then renamed) and ends. The agent therefore never loses an exit
 * status, even when it was not running when the container ended, and a container
 * outlives the agent (logs included), as with a CRI runtime.
 *
 * The shim also rotates the log as the kubelet's container log manager does: past
 * log_max_size bytes the log file LOG is renamed LOG.<YYYYmmdd-HHMMSS> (UTC) and a new LOG
 * is opened; rotated files beyond log_max_files - 1 are removed, oldest first. Rotated
 * files are kept uncompressed. More rotations within the same second are named
 * LOG.<time>.001, .002 ... (up to 999), which sort in their order.
 *
 * Resource limits: with a cgroup directory the shim creates it and writes memory.max,
 * cpu.max and pids.max, and the container joins it before exec; after the exit the
 * shim reads memory.events (oom_kill) and removes the directory. Without one, memory is
 * an RLIMIT_DATA (no rlimit limits a CPU rate or a container's pids).
 *
 * A container with a stdin_path reads its stdin from that FIFO, which it holds open for
 * writing as well: `kubectl attach -i` writes into it (exec.c) and the container never
 * sees the end of its stdin, even between attaches.
 *
 * The agent reaps only the shims it started (ck_proc_reap, ck__proc_reap_later), never
 * "any child": the pod workers' probes and hooks wait for commands of their own on other
 * threads, and a waitpid(-1) there would take their exit statuses.
 *
 * Also here: the kubelet's restart back-off (flowcontrol.Backoff as the kubelet uses it:
 * 10 s doubling to 5 min, forgotten after 10 min without a restart).
 */
#define _GNU_SOURCE /* pipe2, execvpe */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define LINE_MAX_BYTES 16384 /* longer lines are split into partial (P) records */

/* ---- the shim (runs in the forked child: only simple calls, no locks) ---- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* The shim's log file and its rotation (the shim is one process: plain statics). */
static struct {
    const char *path;
    int fd;
    int64_t size, max_size;
    int max_files;
} log_out = {NULL, -1, 0, 0, 0};

/* Removes the oldest rotated files of log_out.path beyond max_files - 1. */
static void remove_excess_logs(void)
{
    size_t n = 0;
    char **files = ck__log_rotated_files(log_out.path, true, &n);
    size_t keep = log_out.max_files > 1 ? (size_t)log_out.max_files - 1 : 0;
    for (size_t i = 0; i < n; i++) {
        if (i + keep < n)
            unlink(files[i]);
        free(files[i]);
    }
    free(files);
}

/* Rotates the log when it is past its size and the rotated name is free. */
static void maybe_rotate(void)
{
    if (log_out.max_size <= 0 || log_out.size < log_out.max_size)
        return;
    char rotated[4096], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    if (snprintf(rotated, sizeof(rotated), "%s.%s", log_out.path, stamp) >= (int)sizeof(rotated))
        return;
    /* within the same second: .001, .002 ... (they sort after the first and before the
     * next second's, '.' coming before the digits) */
    for (int n = 1; access(rotated, F_OK) == 0; n++)
        if (n > 999 || snprintf(rotated, sizeof(rotated), "%s.%s.%03d", log_out.path, stamp, n) >=
                           (int)sizeof(rotated))
            return;
    if (rename(log_out.path, rotated) < 0)
        return;
    int fd = open(log_out.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) { /* keep writing to the rotated file rather than lose lines */
        rename(rotated, log_out.path);
        return;
    }
    close(log_out.fd);
    log_out.fd = fd;
    log_out.size = 0;
    remove_excess_logs();
}

/* One CRI log record: time, stream, tag, text, newline. */
static void log_record(const char *stream, bool partial, const char *text, size_t n)
{
    char head[96];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t h = strftime(head, sizeof(head), "%Y-%m-%dT%H:%M:%S", &tm);
    h += (size_t)snprintf(head + h, sizeof(head) - h, ".%09ldZ %s %c ", ts.tv_nsec, stream,
                          partial ? 'P' : 'F');
    char *rec = malloc(h + n + 1);
    if (!rec)
        return;
    memcpy(rec, head, h);
    memcpy(rec + h, text, n);
    rec[h + n] = '\n';
    write_all(log_out.fd, rec, h + n + 1); /* one write: streams never interleave */
    free(rec);
    log_out.size += (int64_t)(h + n + 1);
    maybe_rotate();
}

struct stream {
    int fd;
    const char *name;
    char buf[LINE_MAX_BYTES];
    size_t len;
};

/* Reads what is there; writes the complete lines; false at end of stream. */
static bool pump(struct stream *s)
{
    ssize_t r = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (r <= 0) {
        if (s->len)
            log_record(s->name, false, s->buf, s->len);
        s->len = 0;
        return false;
    }
    s->len += (size_t)r;
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++)
        if (s->buf[i] == '\n') {
            log_record(s->name, false, s->buf + start, i - start);
            start = i + 1;
        }
    if (start == 0 && s->len == sizeof(s->buf)) { /* a line longer than the buffer */
        log_record(s->name, true, s->buf, s->len);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    return true;
}

int ck_proc_write_exit(const char *path, const struct ck_proc_exit *e)
{
    char tmp[4096], text[80];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return CK_EINVAL;
    int n = snprintf(text, sizeof(text), "%d %d %lld %d\n", e->code, e->signal,
                     (long long)e->finished_ns, e->oom_killed ? 1 : 0);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return CK_EIO;
    write_all(fd, text, (size_t)n);
    fsync(fd);
    close(fd);
    return rename(tmp, path) == 0 ? 0 : CK_EIO;
}

static void write_exit_file(const char *path, int status, bool oom)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct ck_proc_exit e = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                             WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                             (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, oom};
    ck_proc_write_exit(path, &e);
}

static void close_other_fds(const int *keep, int n)
{
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++) {
        bool kept = false;
        for (int i = 0; i < n; i++)
            kept = kept || keep[i] == fd;
        if (!kept)
            close(fd);
    }
}

/* Writes text to dir/file; false when it cannot. */
static bool write_cgroup_file(const char *dir, const char *file, const char *text)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return false;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    ssize_t w = write(fd, text, strlen(text));
    close(fd);
    return w == (ssize_t)strlen(text);
}

/* The shim's side: the container's cgroup with its limits (before the fork). */
static void cgroup_prepare(const struct ck_proc_spec *spec)
{
    const struct ck_limits *l = spec->limits;
    char v[64];
    if (mkdir(spec->cgroup_dir, 0755) < 0 && errno != EEXIST)
        return;
    if (l && l->memory_bytes > 0) {
        snprintf(v, sizeof(v), "%lld\n", (long long)l->memory_bytes);
        write_cgroup_file(spec->cgroup_dir, "memory.max", v);
        write_cgroup_file(spec->cgroup_dir, "memory.swap.max", "0\n");
    }
    if (l && l->cpu_milli > 0) { /* the kubelet's: quota = milli * period / 1000 */
        long long quota = (long long)l->cpu_milli * 100000 / 1000;
        snprintf(v, sizeof(v), "%lld 100000\n", quota < 1000 ? 1000 : quota);
        write_cgroup_file(spec->cgroup_dir, "cpu.max", v);
    }
    if (l && l->pids > 0) {
        snprintf(v, sizeof(v), "%lld\n", (long long)l->pids);
        write_cgroup_file(spec->cgroup_dir, "pids.max", v);
    }
}

/* The container's side, before exec: join the cgroup, or take the rlimits. */
static void limits_apply(const struct ck_proc_spec *spec)
{
    if (spec->cgroup_dir) {
        char pid[24];
        snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        write_cgroup_file(spec->cgroup_dir, "cgroup.procs", pid);
        return;
    }
    if (spec->limits && spec->limits->memory_bytes > 0) {
        struct rlimit rl = {(rlim_t)spec->limits->memory_bytes, (rlim_t)spec->limits->memory_bytes};
        setrlimit(RLIMIT_DATA, &rl);
    }
}

/* After the exit: whether the kernel's OOM killer ended a process of the cgroup. */
static bool cgroup_finish(const struct ck_proc_spec *spec)
{
    char path[4096], line[128];
    bool oom = false;
    if (snprintf(path, sizeof(path), "%s/memory.events", spec->cgroup_dir) >= (int)sizeof(path))
        return false;
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f)) {
        long long n = 0;
        if (sscanf(line, "oom_kill %lld", &n) == 1 && n > 0)
            oom = true;
    }
    if (f)
        fclose(f);
    rmdir(spec->cgroup_dir);
    return oom;
}

struct start_report {
    pid_t pid;
    int err; /* errno of the container's exec, or 0 */
};

static _Noreturn void shim_main(const struct ck_proc_spec *spec, int report_fd)
{
    setsid();
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_IGN);
    int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
    int log_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    struct stat log_st;
    log_out.path = spec->log_path;
    log_out.fd = log_fd;
    log_out.size = log_fd >= 0 && fstat(log_fd, &log_st) == 0 ? (int64_t)log_st.st_size : 0;
    log_out.max_size = spec->log_max_size;
    log_out.max_files = spec->log_max_files;
    struct start_report rep = {0, 0};
    if (log_fd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        pipe2(exec_err, O_CLOEXEC) < 0) {
        rep.err = errno ? errno : EIO;
        write_all(report_fd, (const char *)&rep, sizeof(rep));
        _exit(1);
    }
    int keep[] = {report_fd, log_fd, out[0], out[1], err[0], err[1], exec_err[0], exec_err[1]};
    close_other_fds(keep, 8);
    if (spec->cgroup_dir)
        cgroup_prepare(spec);
    pid_t pid = fork();
    if (pid == 0) { /* the container */
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        /* a FIFO opened for writing too, so that it never reaches its end (no writer) */
        int in = spec->stdin_path ? open(spec->stdin_path, O_RDWR) : open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        limits_apply(spec);
        int e = 0;
        if (spec->dir && chdir(spec->dir) < 0)
            e = errno;
        if (!e) {
            execvpe(spec->argv[0], spec->argv, spec->envp);
            e = errno;
        }
        write_all(exec_err[1], (const char *)&e, sizeof(e));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    close(exec_err[1]);
    if (pid < 0) {
        rep.err = errno;
        write_all(report_fd, (const char *)&rep, sizeof(rep));
        _exit(1);
    }
    setpgid(pid, pid); /* both sides set it: no race with the agent's first signal */
    int e = 0;
    ssize_t got;
    do
        got = read(exec_err[0], &e, sizeof(e));
    while (got < 0 && errno == EINTR);
    rep.pid = pid;
    rep.err = got == (ssize_t)sizeof(e) ? e : 0;
    write_all(report_fd, (const char *)&rep, sizeof(rep));
    close(report_fd);
    if (rep.err) { /* it never ran: no exit status to report */
        waitpid(pid, NULL, 0);
        if (spec->cgroup_dir)
            rmdir(spec->cgroup_dir);
        _exit(1);
    }
    static struct stream so, se; /* static: 32 KiB off the stack */
    so.fd = out[0];
    so.name = "stdout";
    se.fd = err[0];
    se.name = "stderr";
    bool o_open = true, e_open = true;
    int status = 0;
    bool exited = false;
    while (o_open || e_open) {
        struct pollfd p[2] = {{so.fd, POLLIN, 0}, {se.fd, POLLIN, 0}};
        if (!o_open)
            p[0].fd = -1;
        if (!e_open)
            p[1].fd = -1;
        int n = poll(p, 2, 200);
        if (n > 0) {
            if (p[0].revents)
                o_open = pump(&so);
            if (p[1].revents)
                e_open = pump(&se);
        }
        /* the container may leave children holding the pipes: its exit is the end */
        if (!exited && waitpid(pid, &status, WNOHANG) == pid)
            exited = true;
        if (exited && n <= 0)
            break;
    }
    if (!exited)
        waitpid(pid, &status, 0);
    if (o_open)
        pump(&so);
    if (e_open)
        pump(&se);
    close(log_out.fd);
    bool oom = spec->cgroup_dir && cgroup_finish(spec);
    write_exit_file(spec->exit_path, status, oom);
    _exit(0);
}

/* ---- the agent's side ---- */

int ck_proc_start(const struct ck_proc_spec *spec, struct ck_proc *ret, struct ck_err *reterr)
{
    memset(ret, 0, sizeof(*ret));
    if (!spec->argv || !spec->argv[0] || !spec->log_path || !spec->exit_path)
        return ck_err_set(reterr, CK_EINVAL, "no command to run");
    unlink(spec->exit_path);
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return ck_err_set(reterr, CK_EIO, "pipe: %s", strerror(errno));
    pid_t shim = fork();
    if (shim == 0) {
        close(report[0]);
        shim_main(spec, report[1]);
    }
    close(report[1]);
    if (shim < 0) {
        close(report[0]);
        return ck_err_set(reterr, CK_EIO, "fork: %s", strerror(errno));
    }
    struct start_report rep = {0, EIO};
    ssize_t got;
    do
        got = read(report[0], &rep, sizeof(rep));
    while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got != (ssize_t)sizeof(rep))
        rep.err = EIO;
    ret->shim = shim;
    ret->pid = rep.pid;
    if (rep.err) {
        waitpid(shim, NULL, 0);
        ret->shim = 0;
        return ck_err_set(reterr, CK_EIO, "failed to start container process \"%s\": %s",
                          spec->argv[0], strerror(rep.err));
    }
    ret->started_ns = ck_proc_start_time(rep.pid);
    ck__proc_reap_later(shim);
    return 0;
}

int64_t ck_proc_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may contain spaces and parens */
    if (!p)
        return -1;
    unsigned long long start = 0;
    /* fields after the name: state(3) ... starttime(22) */
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
               "%*d %llu",
               &start) != 1)
        return -1;
    return (int64_t)start;
}

bool ck_proc_alive(pid_t pid, int64_t start_ticks)
{
    return pid > 0 && kill(pid, 0) == 0 && ck_proc_start_time(pid) == start_ticks;
}

int ck_proc_signal(pid_t pid, int sig)
{
    if (pid <= 0)
        return CK_EINVAL;
    if (kill(-pid, sig) < 0 && kill(pid, sig) < 0)
        return errno == ESRCH ? CK_ENOENT : CK_EIO;
    return 0;
}

int ck_proc_read_exit(const char *exit_path, struct ck_proc_exit *ret)
{
    FILE *f = fopen(exit_path, "re");
    if (!f)
        return CK_ENOENT;
    long long at = 0;
    int oom = 0;
    int n = fscanf(f, "%d %d %lld %d", &ret->code, &ret->signal, &at, &oom);
    fclose(f);
    ret->finished_ns = at;
    ret->oom_killed = n == 4 && oom == 1;
    return n >= 3 ? 0 : CK_EINVAL;
}

/* The shims to reap once they end (guarded by reap_lock). */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t *reap_pids;
static size_t reap_n, reap_cap;

void ck__proc_reap_later(pid_t pid)
{
    pthread_mutex_lock(&reap_lock);
    if (reap_n == reap_cap) {
        size_t cap = reap_cap ? 2 * reap_cap : 64;
        pid_t *v = realloc(reap_pids, cap * sizeof(*v));
        if (v) {
            reap_pids = v;
            reap_cap = cap;
        }
    }
    if (reap_n < reap_cap) /* else out of memory: a zombie until the agent ends */
        reap_pids[reap_n++] = pid;
    pthread_mutex_unlock(&reap_lock);
}

void ck_proc_reap(void)
{
    pthread_mutex_lock(&reap_lock);
    for (size_t i = 0; i < reap_n;) {
        pid_t r = waitpid(reap_pids[i], NULL, WNOHANG);
        if (r == reap_pids[i] || (r < 0 && errno == ECHILD)) /* reaped, or by its owner */
            reap_pids[i] = reap_pids[--reap_n];
        else
            i++;
    }
    pthread_mutex_unlock(&reap_lock);
}

/* ---- restart back-off ---- */

static bool expired(const struct ck_agent_backoff *b, int64_t at)
{
    return at - b->last_update > 2 * CK_AGENT_BACKOFF_MAX;
}

int64_t ck_agent_backoff_restart_at(const struct ck_agent_backoff *b, int64_t finished)
{
    if (b->delay == 0 || expired(b, finished))
        return finished;
    return finished + b->delay;
}

void ck_agent_backoff_next(struct ck_agent_backoff *b, int64_t now)
{
    if (b->delay == 0 || expired(b, now))
        b->delay = CK_AGENT_BACKOFF_INITIAL;
    else
        b->delay = b->delay * 2 > CK_AGENT_BACKOFF_MAX ? CK_AGENT_BACKOFF_MAX : b->delay * 2;
    b->last_update = now;
}
