/*
 * exec.c - `kubectl exec` on the node agent: runs a command in a pod's directory and
 * environment and streams it, as the kubelet's /exec endpoint does.
 *
 * The API server (lib/apiserver/exec.c) holds kubectl's WebSocket and talks to the
 * agent with two HTTP requests, both served here by libmicrohttpd:
 *
 *   GET  /exec/{namespace}/{pod}/{container}?command=...&command=...&stdin=&tty=
 *        &session=ID     starts the command; the answer is its output, as records
 *                        (ckube/internal/exec_stream.h) on channels 1 (stdout), 2
 *                        (stderr) and, last, 3: a Status (Success, or Failure with
 *                        reason NonZeroExitCode and the ExitCode cause).
 *   POST /execInput/ID   the upload is stdin (0), resize (4) and close (255) records.
 *                        Its end is the end of the session.
 *
 * The command runs under a small shim (a child of the agent) that forks it in a new
 * session (its own process group; with tty=true a pseudo-terminal from openpty() is its
 * controlling terminal, resized through TIOCSWINSZ) and reports its pid and then its wait
 * status through a pipe, so the agent's reaper of exited children never takes the
 * status. When the session ends (the command ended, the API server or kubectl went away)
 * the command's process group is killed with SIGKILL: nothing is left behind.
 *
 * In a container of a CRI runtime the runtime runs the command: the session relays its
 * records to and from the runtime's streaming server (cri_stream.c).
 *
 * `kubectl attach` is a session without a command, on the same input route:
 *
 *   GET  /attach/{namespace}/{pod}/{container}?stdin=&session=ID
 *   POST /attachInput/ID
 *
 * In a CRI container it relays the runtime's Attach stream (the container's own stdio;
 * the tty is the container spec's, as the kubelet's GetAttach takes it). For a host
 * process of the process runtime, whose output the shim writes to its log, the session
 * follows the log from its end (the text of new records, stdout and stderr both, on
 * stdout) and writes stdin into the FIFO the runtime made the stdin of a container with
 * `stdin: true`. It ends with a Success Status when the container ends, when kubectl
 * goes away, or, once stdin ended, when the output was quiet for a second (the runtime's
 * attach ends with its stdin; the second lets the answer to the last input through).
 */
#define _GNU_SOURCE /* pipe2, execvpe */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/exec_stream.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_ARGS        256
#define STATUS_MSG_SIZE 1024

struct ck__exec_session {
    char id[CK_EXEC_SESSION_ID_MAX + 1];
    pid_t shim, pid; /* the shim (our child) and the command (leader of its group) */
    int status_fd;   /* from the shim: the command's pid, then its wait status */
    int in_fd;       /* the command's stdin (the pty's master with a tty), or -1 */
    int out_fd, err_fd;
    int tty_fd; /* the pty's master, for resizing; -1 without a tty */
    bool tty;
    char command_text[STATUS_MSG_SIZE - 512]; /* for the failure message */
    pthread_mutex_t exit_lock;                /* reading the status */
    bool exited;                              /* the wait status was read */
    int wstatus;
    bool status_sent;             /* the output thread's */
    struct ck__cri_stream *cri;   /* a CRI container's: the runtime runs the command */
    struct ck_log_reader *log;    /* an attach to a host process: its log */
    _Atomic int64_t stdin_end_ns; /* an attach's: when stdin ended; 0: not yet */
    int64_t last_out_ns;          /* an attach's: the last output (the output thread's) */
    atomic_bool killed;
    int refs;
    struct ck__exec_session *next;
};

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ck__exec_session *sessions;

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void session_release(struct ck__exec_session *s)
{
    pthread_mutex_lock(&sessions_lock);
    bool last = --s->refs == 0;
    if (last)
        for (struct ck__exec_session **p = &sessions; *p; p = &(*p)->next)
            if (*p == s) {
                *p = s->next;
                break;
            }
    pthread_mutex_unlock(&sessions_lock);
    if (!last)
        return;
    close_fd(&s->status_fd);
    close_fd(&s->in_fd);
    close_fd(&s->out_fd);
    close_fd(&s->err_fd);
    close_fd(&s->tty_fd);
    ck__cri_stream_free(s->cri);
    if (s->log)
        ck_log_reader_free(s->log);
    pthread_mutex_destroy(&s->exit_lock);
    free(s);
}

static struct ck__exec_session *session_find(const char *id)
{
    pthread_mutex_lock(&sessions_lock);
    struct ck__exec_session *s = sessions;
    while (s && strcmp(s->id, id) != 0)
        s = s->next;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&sessions_lock);
    return s;
}

/* Reads the command's wait status from the shim, waiting at most timeout_ms. */
static bool read_exit(struct ck__exec_session *s, int timeout_ms)
{
    pthread_mutex_lock(&s->exit_lock);
    struct pollfd p = {s->status_fd, POLLIN, 0};
    if (!s->exited && poll(&p, 1, timeout_ms) > 0) {
        int st = 0;
        ssize_t n = read(s->status_fd, &st, sizeof(st));
        s->exited = true;
        /* a shim that died without a status: report the command killed */
        s->wstatus = n == (ssize_t)sizeof(st) ? st : SIGKILL;
    }
    bool exited = s->exited;
    pthread_mutex_unlock(&s->exit_lock);
    return exited;
}

/* Kills the command's process group (what is left of it) and waits for the status. */
static void session_kill(struct ck__exec_session *s)
{
    if (atomic_exchange(&s->killed, true))
        return;
    if (s->cri) { /* the runtime ends the command's streams when its stream ends */
        ck__cri_stream_shutdown(s->cri);
        return;
    }
    if (s->pid <= 0) /* an attach's host process is the container: it goes on */
        return;
    kill(-s->pid, SIGKILL);
    read_exit(s, 5000);
}

/* ---- starting the command ---- */

/* The shim (a forked child of a threaded process: simple calls only, no locks). */
static void shim_main(int status_w, int tty_slave, int in_r, int out_w, int err_w,
                      char *const *argv, char *const *envp, const char *dir)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* nothing of the agent's stays open here (the stdin pipe's other end above all) */
    int keep[] = {status_w, tty_slave, in_r, out_w, err_w};
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < (max < 0 || max > 65536 ? 65536 : max); fd++) {
        bool kept = false;
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
            kept = kept || keep[i] == fd;
        if (!kept)
            close(fd);
    }
    pid_t pid = fork();
    if (pid == 0) {
        setsid(); /* its own session and process group */
        signal(SIGPIPE, SIG_DFL);
        if (tty_slave >= 0) {
            ioctl(tty_slave, TIOCSCTTY, 0);
            in_r = out_w = err_w = tty_slave;
        }
        int devnull = in_r < 0 ? open("/dev/null", O_RDONLY) : in_r;
        dup2(devnull, 0);
        dup2(out_w, 1);
        dup2(err_w, 2);
        if (dir && chdir(dir) < 0) {
            dprintf(2, "cannot enter the working directory %s: %s\n", dir, strerror(errno));
            _exit(126);
        }
        execvpe(argv[0], argv, envp);
        int e = errno;
        dprintf(2, "exec: \"%s\": %s\n", argv[0],
                e == ENOENT ? "executable file not found in $PATH" : strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    if (tty_slave >= 0)
        close(tty_slave);
    if (in_r >= 0)
        close(in_r);
    if (out_w >= 0)
        close(out_w);
    if (err_w >= 0)
        close(err_w);
    if (pid < 0)
        _exit(1);
    (void)!write(status_w, &pid, sizeof(pid));
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    (void)!write(status_w, &st, sizeof(st));
    _exit(0);
}

/* Starts the command: 0, or -1 with why in msg. */
static int session_start(struct ck__exec_session *s, char *const *argv, char *const *envp,
                         const char *dir, bool want_stdin, char *msg, size_t size)
{
    int status[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int master = -1, slave = -1;
    bool ok = pipe2(status, O_CLOEXEC) == 0;
    if (ok && s->tty) {
        struct winsize ws = {.ws_row = 24, .ws_col = 80};
        ok = openpty(&master, &slave, NULL, NULL, &ws) == 0;
        if (ok) {
            fcntl(master, F_SETFD, FD_CLOEXEC);
            fcntl(slave, F_SETFD, FD_CLOEXEC);
        }
    } else if (ok) {
        ok = pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0 &&
             (!want_stdin || pipe2(in, O_CLOEXEC) == 0);
    }
    pid_t shim = ok ? fork() : -1;
    if (shim == 0) {
        close(status[0]);
        shim_main(status[1], slave, in[0], out[1], err[1], argv, envp, dir);
    }
    int e = errno;
    close_fd(&status[1]);
    close_fd(&slave);
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    pid_t pid = -1;
    if (shim > 0) {
        ck__proc_reap_later(shim); /* the agent's reaper takes it once it ends */
        s->shim = shim;
        s->status_fd = status[0];
        status[0] = -1;
        if (read(s->status_fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
            pid = -1;
    }
    if (pid <= 0) {
        snprintf(msg, size, "cannot start the command: %s", strerror(e ? e : EIO));
        close_fd(&status[0]);
        close_fd(&s->status_fd);
        close_fd(&master);
        close_fd(&in[1]);
        close_fd(&out[0]);
        close_fd(&err[0]);
        return -1;
    }
    s->pid = pid;
    if (s->tty) {
        s->out_fd = master;
        s->tty_fd = fcntl(master, F_DUPFD_CLOEXEC, 0);
        s->in_fd = want_stdin ? fcntl(master, F_DUPFD_CLOEXEC, 0) : -1;
    } else {
        s->out_fd = out[0];
        s->err_fd = err[0];
        s->in_fd = in[1];
    }
    return 0;
}

/* ---- the output: the GET's answer ---- */

/* The Status of the error channel, as the kubelet writes it. */
static size_t status_json(const struct ck__exec_session *s, char *out, size_t size)
{
    json_t *st;
    int code = WIFEXITED(s->wstatus)     ? WEXITSTATUS(s->wstatus)
               : WIFSIGNALED(s->wstatus) ? 128 + WTERMSIG(s->wstatus)
                                         : 1;
    if (code == 0) {
        st = json_pack("{s:{},s:s}", "metadata", "status", "Success");
    } else {
        char msg[STATUS_MSG_SIZE - 256], num[16];
        snprintf(msg, sizeof(msg),
                 "command terminated with non-zero exit code: command '%s' exited with %d",
                 s->command_text, code);
        snprintf(num, sizeof(num), "%d", code);
        st = json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status", "Failure",
                       "message", msg, "reason", "NonZeroExitCode", "details", "causes", "reason",
                       "ExitCode", "message", num);
    }
    size_t n = st ? json_dumpb(st, out, size, JSON_COMPACT) : 0;
    json_decref(st);
    return n <= size ? n : 0;
}

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* An attach to a host process: the log's new text on stdout, a Success Status at its end. */
static ssize_t read_attached(struct ck__exec_session *s, char *buf, size_t max)
{
    size_t room = max - CK_EXEC_FRAME_HEADER;
    if (room > CK_EXEC_FRAME_MAX)
        room = CK_EXEC_FRAME_MAX;
    for (int waited = 0; waited < 10; waited++) {
        int64_t now = monotonic_ns(), end = atomic_load(&s->stdin_end_ns);
        bool quiet = end && now - end >= CK_SEC && now - s->last_out_ns >= CK_SEC;
        ssize_t n = quiet || atomic_load(&s->killed)
                        ? CK_LOG_END
                        : ck_log_reader_read(s->log, buf + CK_EXEC_FRAME_HEADER, room);
        if (n == CK_LOG_END) { /* the container ended, or the attach did */
            s->exited = true;
            s->wstatus = 0;
            size_t k = status_json(s, buf + CK_EXEC_FRAME_HEADER, max - CK_EXEC_FRAME_HEADER);
            ck__exec_frame_header((unsigned char *)buf, CK_EXEC_ERROR, k);
            s->status_sent = true;
            return (ssize_t)(CK_EXEC_FRAME_HEADER + k);
        }
        if (n > 0) {
            s->last_out_ns = now;
            ck__exec_frame_header((unsigned char *)buf, CK_EXEC_STDOUT, (size_t)n);
            return CK_EXEC_FRAME_HEADER + n;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    return 0; /* let the server notice a closed connection */
}

static ssize_t read_output(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct ck__exec_session *s = cls;
    if (max <= CK_EXEC_FRAME_HEADER + STATUS_MSG_SIZE)
        return 0;
    if (s->status_sent)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (s->cri) { /* the runtime's records, its Status last */
        ssize_t n = ck__cri_stream_read(s->cri, buf, max);
        if (n >= 0)
            return n;
        s->status_sent = true;
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (s->log)
        return read_attached(s, buf, max);
    if (s->out_fd < 0 && s->err_fd < 0) { /* the output ended: the status comes last */
        if (!read_exit(s, 1000))
            return 0;
        size_t n = status_json(s, buf + CK_EXEC_FRAME_HEADER, max - CK_EXEC_FRAME_HEADER);
        ck__exec_frame_header((unsigned char *)buf, CK_EXEC_ERROR, n);
        s->status_sent = true;
        return (ssize_t)(CK_EXEC_FRAME_HEADER + n);
    }
    struct pollfd p[2] = {{s->out_fd, POLLIN, 0}, {s->err_fd, POLLIN, 0}};
    if (poll(p, 2, 1000) <= 0)
        return 0; /* let the server notice a closed connection */
    for (int i = 0; i < 2; i++) {
        if (!p[i].revents)
            continue;
        int *fd = i == 0 ? &s->out_fd : &s->err_fd;
        size_t room = max - CK_EXEC_FRAME_HEADER;
        if (room > CK_EXEC_FRAME_MAX)
            room = CK_EXEC_FRAME_MAX;
        ssize_t n = read(*fd, buf + CK_EXEC_FRAME_HEADER, room);
        if (n < 0 && errno == EINTR)
            return 0;
        if (n <= 0) { /* the end (a pty answers EIO once its last user closed it) */
            close_fd(fd);
            return 0;
        }
        ck__exec_frame_header((unsigned char *)buf, i == 0 ? CK_EXEC_STDOUT : CK_EXEC_STDERR,
                              (size_t)n);
        return CK_EXEC_FRAME_HEADER + n;
    }
    return 0;
}

/* The end of the answer is the end of the session (an input still open keeps its own). */
static void output_done(void *cls)
{
    ck__exec_session_end(cls);
}

struct command_args {
    char *argv[MAX_ARGS + 1];
    size_t n;
    bool too_many;
};

static enum MHD_Result collect_command(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    struct command_args *c = cls;
    if (strcmp(key, "command") != 0 || !value)
        return MHD_YES;
    if (c->n == MAX_ARGS) {
        c->too_many = true;
        return MHD_NO;
    }
    c->argv[c->n++] = strdup(value);
    return MHD_YES;
}

static bool query_true(struct MHD_Connection *conn, const char *name)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *msg)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* The answer that streams the session's output records; it takes the caller's reference. */
static enum MHD_Result answer_stream(struct MHD_Connection *conn, struct ck__exec_session *s)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_output, s, output_done);
    if (!resp) {
        ck__exec_session_end(s);
        return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/*
 * Asks the runtime for its streaming URL and connects: 0 and *ret, CK_ENOENT (the container
 * does not run), else an error with why in msg.
 */
static int cri_open(struct ck_agent *a, const char *ns, const char *pod, const char *ctr,
                    char *const *argv, bool want_stdin, bool tty, struct ck__cri_stream **ret,
                    char *msg, size_t size)
{
    char *url = NULL;
    struct ck_err err = {0};
    int r = ck__agent_container_exec_url(a, ns, pod, ctr, argv, want_stdin, tty, &url, &err);
    if (r == CK_ENOENT && !err.msg[0])
        return r;
    if (r < 0) {
        snprintf(msg, size, "%s", err.msg[0] ? err.msg : "the runtime gave no streaming URL");
        return r == CK_ENOENT ? CK_EIO : r;
    }
    r = ck__cri_stream_open(url, tty, ret, msg, size);
    free(url);
    return r;
}

/* Frees what a spec hands over, for a session that does not start. */
static void spec_drop(const struct ck__exec_spec *spec)
{
    ck__cri_stream_free(spec->cri);
    if (spec->log)
        ck_log_reader_free(spec->log);
    if (spec->log && spec->in_fd >= 0)
        close(spec->in_fd);
}

int ck__exec_session_start(const struct ck__exec_spec *spec, struct ck__exec_session **ret,
                           char *msg, size_t size)
{
    struct ck__exec_session *other = session_find(spec->id);
    if (other) {
        session_release(other);
        spec_drop(spec);
        snprintf(msg, size, "the session exists");
        return CK_EEXIST;
    }
    struct ck__exec_session *s = calloc(1, sizeof(*s));
    if (!s) {
        spec_drop(spec);
        snprintf(msg, size, "out of memory");
        return CK_ENOMEM;
    }
    snprintf(s->id, sizeof(s->id), "%s", spec->id);
    s->status_fd = s->in_fd = s->out_fd = s->err_fd = s->tty_fd = -1;
    s->tty = spec->tty;
    pthread_mutex_init(&s->exit_lock, NULL);
    size_t off = 0;
    for (size_t i = 0; spec->argv && spec->argv[i] && off < sizeof(s->command_text); i++)
        off += (size_t)snprintf(s->command_text + off, sizeof(s->command_text) - off, "%s%s",
                                i ? " " : "", spec->argv[i]);
    s->cri = spec->cri;
    s->log = spec->log;
    s->in_fd = spec->log ? spec->in_fd : -1;
    s->last_out_ns = monotonic_ns();
    if (!s->cri && !s->log &&
        session_start(s, spec->argv, spec->envp, spec->dir, spec->want_stdin, msg, size) < 0) {
        pthread_mutex_destroy(&s->exit_lock);
        free(s);
        return CK_EIO;
    }
    s->refs = 2; /* the table and the caller */
    pthread_mutex_lock(&sessions_lock);
    s->next = sessions;
    sessions = s;
    pthread_mutex_unlock(&sessions_lock);
    *ret = s;
    return 0;
}

pid_t ck__exec_session_pid(const struct ck__exec_session *s)
{
    return s->pid;
}

ssize_t ck__exec_session_read(struct ck__exec_session *s, char *buf, size_t max)
{
    return read_output(s, 0, buf, max);
}

void ck__exec_session_end(struct ck__exec_session *s)
{
    session_kill(s);
    session_release(s); /* the caller's */
    session_release(s); /* the table's */
}

/* What a session's GET names: /{kind}/{namespace}/{pod}/{container}?session=ID. */
struct session_target {
    char ns[254], pod[254], ctr[254];
    const char *id;
};

/* Reads t from the request: true, or false with the refusal answered in *ret. */
static bool session_target(struct MHD_Connection *conn, const char *url, struct session_target *t,
                           enum MHD_Result *ret)
{
    t->id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "session");
    if (sscanf(url, "/%*[^/]/%253[^/]/%253[^/]/%253[^/]", t->ns, t->pod, t->ctr) != 3)
        *ret = answer(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    else if (!t->id || !*t->id || strlen(t->id) > CK_EXEC_SESSION_ID_MAX)
        *ret = answer(conn, MHD_HTTP_BAD_REQUEST, "a session id is required\n");
    else
        return true;
    return false;
}

enum MHD_Result ck__agent_exec_start(struct ck_agent *a, struct MHD_Connection *conn,
                                     const char *url)
{
    struct session_target st;
    enum MHD_Result ret;
    if (!session_target(conn, url, &st, &ret))
        return ret;
    const char *ns = st.ns, *pod = st.pod, *ctr = st.ctr, *id = st.id;
    char msg[600];
    struct command_args args = {.n = 0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_command, &args);
    char **envp = NULL;
    char *dir = NULL;
    struct ck__exec_session *s = NULL;
    if (args.too_many || args.n == 0) {
        snprintf(msg, sizeof(msg), "%s\n",
                 args.n ? "too many command arguments (at most 256)"
                        : "you must specify a command");
        ret = answer(conn, MHD_HTTP_BAD_REQUEST, msg);
        goto out;
    }
    for (size_t i = 0; i < args.n; i++)
        if (!args.argv[i]) {
            ret = answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
            goto out;
        }
    bool want_stdin = query_true(conn, "stdin"), tty = query_true(conn, "tty");
    struct ck__cri_stream *cri = NULL;
    int found = ck__agent_container_env(a, ns, pod, ctr, &envp, &dir);
    if (found == CK_EINVAL) /* a CRI container: through the runtime's streaming server */
        found = cri_open(a, ns, pod, ctr, args.argv, want_stdin, tty, &cri, msg, sizeof(msg) - 1);
    else if (found < 0 && found != CK_ENOENT)
        snprintf(msg, sizeof(msg) - 1, "out of memory");
    if (found == CK_ENOENT) {
        snprintf(msg, sizeof(msg), "container not found (\"%s\")\n", ctr);
        ret = answer(conn, MHD_HTTP_NOT_FOUND, msg);
        goto out;
    }
    if (found < 0) {
        strcat(msg, "\n");
        ret = answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
        goto out;
    }
    struct ck__exec_spec spec = {.id = id,
                                 .argv = args.argv,
                                 .envp = envp,
                                 .dir = dir,
                                 .want_stdin = want_stdin,
                                 .tty = tty,
                                 .cri = cri};
    int r = ck__exec_session_start(&spec, &s, msg, sizeof(msg) - 1);
    if (r < 0) {
        strcat(msg, "\n");
        ret =
            answer(conn, r == CK_EEXIST ? MHD_HTTP_CONFLICT : MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
        goto out;
    }
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", (int)s->pid);
    if (s->cri)
        CK_LOGS(2, "Exec started", "pod", pod, "container", ctr, "runtime", "cri");
    else
        CK_LOGS(2, "Exec started", "pod", pod, "container", ctr, "pid", pid);
    ret = answer_stream(conn, s);
out:
    for (size_t i = 0; i < args.n; i++)
        free(args.argv[i]);
    for (size_t i = 0; envp && envp[i]; i++)
        free(envp[i]);
    free(envp);
    free(dir);
    return ret;
}

/* ---- attach: a session on the container's own stdio ---- */

/* The process runtime's: the log followed from its end, and the stdin FIFO. */
static int attach_host(const struct ck__attach_target *t, bool want_stdin,
                       struct ck_log_reader **ret_log, int *ret_in, char *msg, size_t size)
{
    struct ck_log_options o = {.follow = true, .tail_lines = 0};
    if (ck_log_reader_open(t->log_path, t->exit_path, &o, ret_log) < 0) {
        snprintf(msg, size, "cannot read the container's log");
        return CK_EIO;
    }
    *ret_in = -1;
    if (want_stdin && t->stdin_path[0]) {
        /* the container holds the FIFO open for reading: this cannot block */
        *ret_in = open(t->stdin_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (*ret_in < 0) {
            snprintf(msg, size, "cannot open the container's stdin: %s", strerror(errno));
            ck_log_reader_free(*ret_log);
            *ret_log = NULL;
            return CK_EIO;
        }
    }
    return 0;
}

enum MHD_Result ck__agent_attach_start(struct ck_agent *a, struct MHD_Connection *conn,
                                       const char *url)
{
    struct session_target st;
    enum MHD_Result ret;
    if (!session_target(conn, url, &st, &ret))
        return ret;
    const char *ns = st.ns, *pod = st.pod, *ctr = st.ctr;
    char msg[1024];
    bool want_stdin = query_true(conn, "stdin");
    struct ck__attach_target t;
    struct ck_err err = {0};
    struct ck__cri_stream *cri = NULL;
    struct ck_log_reader *log = NULL;
    int in_fd = -1;
    int r = ck__agent_container_attach(a, ns, pod, ctr, want_stdin, &t, &err);
    if (r == CK_ENOENT && !err.msg[0]) { /* the kubelet's words (GetAttach) */
        snprintf(msg, sizeof(msg), "container %s not found in pod %s_%s\n", ctr, pod, ns);
        return answer(conn, MHD_HTTP_NOT_FOUND, msg);
    }
    if (r < 0)
        snprintf(msg, sizeof(msg) - 1, "%s", err.msg[0] ? err.msg : "the runtime cannot attach");
    else if (t.url && (r = ck__cri_stream_open(t.url, t.tty, &cri, msg, sizeof(msg) - 1)) == 0)
        ck__cri_stream_set_attach(cri);
    else if (!t.url)
        r = attach_host(&t, want_stdin, &log, &in_fd, msg, sizeof(msg) - 1);
    free(t.url);
    struct ck__exec_session *s = NULL;
    if (r == 0) {
        struct ck__exec_spec spec = {
            .id = st.id, .tty = cri && t.tty, .cri = cri, .log = log, .in_fd = in_fd};
        r = ck__exec_session_start(&spec, &s, msg, sizeof(msg) - 1);
    }
    if (r < 0) {
        strcat(msg, "\n");
        return answer(conn, r == CK_EEXIST ? MHD_HTTP_CONFLICT : MHD_HTTP_INTERNAL_SERVER_ERROR,
                      msg);
    }
    CK_LOGS(2, "Attach started", "pod", pod, "container", ctr, "runtime", cri ? "cri" : "process");
    return answer_stream(conn, s);
}

/* ---- the input: the POST's upload ---- */

struct ck__exec_input {
    struct ck__agent_req req; /* first: logserver.c's request_done calls req.done */
    struct ck__exec_session *s;
    struct ck__exec_frames frames;
    bool done;
};

/* Writes all of data to fd, giving up when the session was killed. */
static void write_input(struct ck__exec_session *s, const unsigned char *data, size_t n)
{
    while (n > 0 && s->in_fd >= 0 && !atomic_load(&s->killed)) {
        ssize_t w = write(s->in_fd, data, n);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {s->in_fd, POLLOUT, 0};
            poll(&p, 1, 200);
            continue;
        }
        if (w <= 0)
            return; /* the command closed its stdin */
        data += w;
        n -= (size_t)w;
    }
}

static void resize(struct ck__exec_session *s, const unsigned char *payload, size_t n)
{
    json_t *size = json_loadb((const char *)payload, n, 0, NULL);
    json_int_t w = json_integer_value(json_object_get(size, "Width"));
    json_int_t h = json_integer_value(json_object_get(size, "Height"));
    json_decref(size);
    if (s->tty_fd < 0 || w <= 0 || h <= 0 || w > 65535 || h > 65535)
        return;
    struct winsize ws = {.ws_row = (unsigned short)h, .ws_col = (unsigned short)w};
    ioctl(s->tty_fd, TIOCSWINSZ, &ws);
}

/* Acts on every whole record; false when the stream is broken. */
static bool take_records(struct ck__exec_input *in)
{
    unsigned ch;
    const unsigned char *p;
    size_t n;
    int r;
    while ((r = ck__exec_frames_next(&in->frames, &ch, &p, &n)) > 0) {
        if (in->s->cri)
            ck__cri_stream_input(in->s->cri, ch, p, n);
        else if (ch == CK_EXEC_STDIN)
            write_input(in->s, p, n);
        else if (ch == CK_EXEC_RESIZE)
            resize(in->s, p, n);
        else if (ch == CK_EXEC_CLOSE && n >= 1 && p[0] == CK_EXEC_STDIN && !in->s->tty) {
            close_fd(&in->s->in_fd); /* end of stdin (with a tty, ^D says it) */
            if (in->s->log)          /* an attach ends with its stdin, once the output is quiet */
                atomic_store(&in->s->stdin_end_ns, monotonic_ns());
        }
    }
    return r == 0;
}

static void input_done(struct ck__agent_req *req)
{
    ck__agent_exec_input_done(req);
}

struct ck__exec_input *ck__exec_input_new(const char *id)
{
    struct ck__exec_session *s = session_find(id);
    if (!s)
        return NULL;
    struct ck__exec_input *in = calloc(1, sizeof(*in));
    if (!in) {
        session_release(s);
        return NULL;
    }
    in->req.done = input_done;
    in->s = s;
    return in;
}

size_t ck__exec_input_take(struct ck__exec_input *in, const void *data, size_t n)
{
    size_t took = ck__exec_frames_append(&in->frames, data, n);
    if (!take_records(in)) {
        session_kill(in->s); /* a broken stream */
        return n;
    }
    return took;
}

enum MHD_Result ck__agent_exec_input(struct MHD_Connection *conn, const char *url,
                                     const char *upload, size_t *upload_size, void **req)
{
    struct ck__exec_input *in = *req;
    if (!in) {
        const char *slash = strchr(url + 1, '/'); /* /execInput/ID or /attachInput/ID */
        if (!slash || !(in = ck__exec_input_new(slash + 1)))
            return answer(conn, MHD_HTTP_NOT_FOUND, "no such session\n");
        *req = in;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        *upload_size -= ck__exec_input_take(in, upload, *upload_size);
        return MHD_YES;
    }
    session_kill(in->s); /* the client's end: the end of the session */
    return answer(conn, MHD_HTTP_OK, "");
}

void ck__agent_exec_input_done(void *req)
{
    struct ck__exec_input *in = req;
    if (!in)
        return;
    session_kill(in->s);
    session_release(in->s);
    free(in);
}
