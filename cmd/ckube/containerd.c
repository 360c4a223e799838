/*
 * containerd.c - the private containerd `ckube server` supervises for its own node, as
 * `k3s server` does (k3s pkg/agent/containerd): never the machine's containerd.
 *
 * Everything containerd keeps is under DATA-DIR/containerd: config.toml (written at each
 * start), root/, state/, opt/ (the `opt` plugin's directory, /opt/containerd by default)
 * and containerd.log (its output, appended). Its gRPC socket is
 * DATA-DIR/containerd/containerd.sock and its ttrpc socket beside it, unless that path
 * is longer than a unix socket's 107 bytes: then both go under /run/ckube/<hash>/ (or,
 * when /run/ckube cannot be made, /tmp/ckube-<uid>/<hash>/), where <hash> is the FNV-1a
 * hash of the absolute data directory, so a data directory has the same socket at every
 * start. The CRI plugin's sandbox image is ckube.local/pause:1, which the server imports
 * (`ctr -n k8s.io images import`) from the pause.tar the build made with
 * scripts/build-images when the image is absent; it is found beside the binary
 * (<bin>/../share/ckube/images), in the install data directory, then in the build tree.
 *
 * One supervisor thread owns the child: it starts containerd (fork and exec; its own
 * session, so a terminal's ^C reaches the server alone; SIGKILL when the thread that
 * started it dies, as k3s' Pdeathsig, so a server killed with SIGKILL leaves no
 * containerd behind), waits until the socket accepts a connection, imports the pause
 * image when absent, then waits for containerd's exit on a pidfd (another thread of the
 * process may reap it: the agent's process runtime reaps every child) and starts it
 * again after a back-off of 1 s doubling to 60 s, back to 1 s after a run of 10 min.
 * ck_cmd_containerd_stop() wakes it through an eventfd; it sends SIGTERM, and SIGKILL
 * after 10 s. The child keeps only its standard streams: the server's descriptors (its
 * components' connections to the API server, made without close-on-exec by libcurl) are
 * closed before the exec, or containerd and its shims would hold them open after the
 * server closed them.
 */
#define _GNU_SOURCE /* close_range */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"
#include "node.h"

#define PAUSE_IMAGE     "ckube.local/pause:1"
#define SOCKET_MAX      (sizeof(((struct sockaddr_un *)0)->sun_path) - 1) /* 107 */
#define BACKOFF_INITIAL 1000                                              /* ms */
#define BACKOFF_MAX     60000                                             /* ms */
#define STABLE_RUN      (600 * CK_SEC)
#define STOP_GRACE      10000 /* ms between SIGTERM and SIGKILL */
#define READY_TIMEOUT   60000 /* ms containerd has to open its socket */

struct ck_cmd_containerd {
    char binary[PATH_MAX], ctr[PATH_MAX];
    char dir[PATH_MAX];            /* DATA-DIR/containerd */
    char config[PATH_MAX + 16];    /* DIR/config.toml */
    char log[PATH_MAX + 16];       /* DIR/containerd.log */
    char sock[SOCKET_MAX + 1];     /* the gRPC socket */
    char endpoint[SOCKET_MAX + 8]; /* unix://SOCK */
    char pause[PATH_MAX + 32];     /* the pause image archive, "" when none was found */
    int stop_fd;                   /* eventfd: written once to stop */
    pthread_t thread;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* The absolute path of an executable name found on PATH, in buf. */
static bool find_on_path(const char *name, char *buf, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && path[0] == '/') {
            int w = snprintf(buf, size, "%.*s/%s", (int)n, path, name);
            struct stat st;
            if (w > 0 && (size_t)w < size && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
                access(buf, X_OK) == 0)
                return true;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

bool ck_cmd_containerd_find(char *buf, size_t size)
{
    return find_on_path("containerd", buf, size);
}

/* FNV-1a, 64 bits: a short stable name for a long data directory (no secret in it). */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The socket path (see the file's comment). 0, or -1 after logging why. */
static int choose_socket(struct ck_cmd_containerd *c, const char *data_dir)
{
    const char *ttrpc_suffix = ".ttrpc";
    int w = snprintf(c->sock, sizeof(c->sock), "%s/containerd.sock", c->dir);
    if (w > 0 && (size_t)w + strlen(ttrpc_suffix) <= SOCKET_MAX)
        return 0;
    char hash[17];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)fnv1a(data_dir));
    char base[32], dir[64];
    snprintf(base, sizeof(base), "/run/ckube");
    if (mkdir(base, 0700) < 0 && errno != EEXIST) {
        snprintf(base, sizeof(base), "/tmp/ckube-%u", (unsigned)getuid());
        if (mkdir(base, 0700) < 0 && errno != EEXIST) {
            CK_LOGE("containerd: no directory for its socket: %s: %s", base, strerror(errno));
            return -1;
        }
    }
    snprintf(dir, sizeof(dir), "%s/%s", base, hash);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        CK_LOGE("containerd: no directory for its socket: %s: %s", dir, strerror(errno));
        return -1;
    }
    /* it must be ours alone: nobody else may swap the socket under us */
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 022)) {
        CK_LOGE("containerd: refusing socket directory %s: it must be a directory owned by this "
                "user and writable by nobody else",
                dir);
        return -1;
    }
    snprintf(c->sock, sizeof(c->sock), "%s/containerd.sock", dir);
    CK_LOGS(0,
            "containerd: the data directory's path is too long for a unix socket; using a "
            "short one",
            "socket", c->sock, "dataDir", data_dir);
    return 0;
}

/* A path that goes into config.toml's basic strings as it is (no quote, backslash, control). */
static bool toml_safe(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/*
 * Whether this process may lower an OOM score below its own (CAP_SYS_RESOURCE, bit 24
 * of CapEff). Without it runc cannot give the pause container kubelet's -998, and every
 * sandbox would fail: containerd is then told to keep scores at or above its own.
 */
static bool can_lower_oom_score(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long caps = 0;
    bool found = false;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "CapEff: %llx", &caps) == 1) {
            found = true;
            break;
        }
    if (f)
        fclose(f);
    return !found || (caps >> 24) & 1;
}

static int write_config(const struct ck_cmd_containerd *c, const char *cni_conf_dir,
                        const char *cni_bin_dir)
{
    const char *paths[] = {c->dir, c->sock, cni_conf_dir, cni_bin_dir};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (!toml_safe(paths[i])) {
            CK_LOGE("containerd: cannot name %s in its config (a quote, backslash or control "
                    "character)",
                    paths[i]);
            return -1;
        }
    char text[8192];
    int n = snprintf(text, sizeof(text),
                     "# Written by `ckube server` at each start: its node's own containerd.\n"
                     "version = 2\n"
                     "root = \"%s/root\"\n"
                     "state = \"%s/state\"\n"
                     "\n"
                     "[grpc]\n"
                     "  address = \"%s\"\n"
                     "\n"
                     "[ttrpc]\n"
                     "  address = \"%s.ttrpc\"\n"
                     "\n"
                     "[debug]\n"
                     "  address = \"\"\n"
                     "\n"
                     "[metrics]\n"
                     "  address = \"\"\n"
                     "\n"
                     "[plugins.\"io.containerd.internal.v1.opt\"]\n"
                     "  path = \"%s/opt\"\n"
                     "\n"
                     "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
                     "  sandbox_image = \"" PAUSE_IMAGE "\"\n"
                     "  restrict_oom_score_adj = %s\n"
                     "\n"
                     "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
                     "  conf_dir = \"%s\"\n"
                     "  bin_dir = \"%s\"\n",
                     c->dir, c->dir, c->sock, c->sock, c->dir,
                     can_lower_oom_score() ? "false" : "true", cni_conf_dir, cni_bin_dir);
    if (n < 0 || (size_t)n >= sizeof(text)) {
        CK_LOGE("containerd: its config does not fit");
        return -1;
    }
    int r = ck__write_file_atomic(c->config, text, (size_t)n, 0600);
    if (r < 0) {
        CK_LOGE("containerd: cannot write %s: %s", c->config, strerror(-r));
        return -1;
    }
    return 0;
}

/* The pause image's archive: beside the binary, installed, then in the build tree. */
static void find_pause_archive(struct ck_cmd_containerd *c)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    const char *dirs[3] = {NULL, CKUBE_IMAGES_INSTALL_DIR, CKUBE_IMAGES_BUILD_DIR};
    char beside[PATH_MAX + 32];
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(beside, sizeof(beside), "%s/../share/ckube/images", exe);
        dirs[0] = beside;
    }
    c->pause[0] = '\0';
    for (size_t i = 0; i < 3 && !c->pause[0]; i++) {
        if (!dirs[i])
            continue;
        snprintf(c->pause, sizeof(c->pause), "%s/pause.tar", dirs[i]);
        if (access(c->pause, R_OK) != 0)
            c->pause[0] = '\0';
    }
}

/*
 * Starts argv[0] (an absolute path) with stdin from /dev/null and stdout and stderr to
 * out_fd. daemon: in a session of its own, killed when this thread ends. Every signal
 * unblocked and at its default in the child (the server blocks SIGINT and SIGTERM for
 * sigwait and ignores SIGPIPE; a Go program keeps a blocked mask), and no descriptor but
 * those three. Only async-signal-safe calls between fork and exec. The child's pid and a
 * pidfd of it, or -1.
 */
static pid_t spawn(char *const argv[], int out_fd, bool daemon, int *ret_pidfd)
{
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (daemon) {
            setsid();
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
        }
        if (dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
            _exit(127);
        if (close_range(3, ~0u, 0) < 0) /* before Linux 5.9: one by one */
            for (int fd = 3; fd < 65536; fd++)
                close(fd);
        execv(argv[0], argv);
        _exit(127);
    }
    close(devnull);
    if (pid < 0)
        return -1;
    *ret_pidfd = pidfd_open(pid, 0);
    if (*ret_pidfd < 0) {
        /* gone already and reaped by another thread (ESRCH), or no descriptor left: a
           child we cannot watch is not left running */
        int saved = errno;
        if (saved != ESRCH) { /* it was there when pidfd_open looked */
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        errno = saved;
        return -1;
    }
    return pid;
}

/*
 * Waits for the pidfd to say the child exited, at most timeout_ms (<0: forever), or (when
 * stoppable) for a stop. 1 exited (and reaped when still ours), 0 timed out, -1 stop requested.
 */
static int wait_exit(const struct ck_cmd_containerd *c, pid_t pid, int pidfd, int timeout_ms,
                     bool stoppable, int *ret_status)
{
    struct pollfd fds[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = c->stop_fd, .events = POLLIN}};
    for (;;) {
        int r = poll(fds, stoppable ? 2 : 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        if (fds[0].revents) {
            int status = -1;
            if (waitpid(pid, &status, 0) != pid)
                status = -1; /* another thread reaped it: the status is lost */
            if (ret_status)
                *ret_status = status;
            return 1;
        }
        return -1;
    }
}

/* Sleeps ms, or less when stopped. True when stop was requested. */
static bool sleep_or_stop(const struct ck_cmd_containerd *c, int ms)
{
    struct pollfd fd = {.fd = c->stop_fd, .events = POLLIN};
    int r;
    while ((r = poll(&fd, 1, ms)) < 0 && errno == EINTR)
        ;
    return r > 0;
}

/* Runs ctr with args (after -a SOCK -n k8s.io), its output to out_path; true on exit 0. */
static bool run_ctr(const struct ck_cmd_containerd *c, const char *const args[], size_t n_args,
                    const char *out_path)
{
    char *argv[16];
    size_t n = 0;
    argv[n++] = (char *)c->ctr;
    argv[n++] = (char *)"-a";
    argv[n++] = (char *)c->sock;
    argv[n++] = (char *)"-n";
    argv[n++] = (char *)"k8s.io";
    for (size_t i = 0; i < n_args && n < 15; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        return false;
    int pidfd = -1, status = -1;
    pid_t pid = spawn(argv, out, false, &pidfd);
    close(out);
    if (pid < 0)
        return false;
    int r = wait_exit(c, pid, pidfd, 120000, true, &status);
    if (r != 1) {
        pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        wait_exit(c, pid, pidfd, -1, false, NULL);
    }
    close(pidfd);
    /* a status another thread took counts as success: the caller checks the outcome */
    return r == 1 && (status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

/* Whether containerd's k8s.io namespace holds the image named name. */
static bool has_image(const struct ck_cmd_containerd *c, const char *name)
{
    char out[PATH_MAX + 32];
    snprintf(out, sizeof(out), "%s/images.out", c->dir);
    const char *args[] = {"images", "ls", "-q"};
    bool found = false;
    char *text = NULL;
    size_t len = 0;
    if (run_ctr(c, args, 3, out) && ck__read_file(out, 16 << 20, &text, &len) == 0) {
        for (char *line = text; line && *line && !found;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            found = strcmp(line, name) == 0;
            line = nl ? nl + 1 : NULL;
        }
    }
    free(text);
    unlink(out);
    return found;
}

/* Imports the image name from archive when containerd lacks it; logs what happened. */
static void ensure_image(struct ck_cmd_containerd *c, const char *name, const char *archive)
{
    if (has_image(c, name))
        return;
    char out[PATH_MAX + 32];
    snprintf(out, sizeof(out), "%s/import.log", c->dir);
    const char *args[] = {"images", "import", archive};
    run_ctr(c, args, 3, out);
    if (has_image(c, name))
        CK_LOGS(0, "containerd: imported an image", "image", name, "archive", archive);
    else
        CK_LOGE("containerd: could not import %s from %s (see %s)", name, archive, out);
}

/*
 * Imports the pause image when containerd lacks it, and the build's other local images
 * (ckube.local/busybox:1, ckube.local/web:1) found beside its archive, so that a fresh
 * node runs pods of them with no registry.
 */
static void ensure_images(struct ck_cmd_containerd *c)
{
    if (!c->ctr[0])
        return;
    if (!c->pause[0]) {
        if (!has_image(c, PAUSE_IMAGE))
            CK_LOGW("containerd: no %s and no pause.tar to import it from (build or install "
                    "ckube's images); containerd will try to pull it",
                    PAUSE_IMAGE);
        return;
    }
    ensure_image(c, PAUSE_IMAGE, c->pause);
    static const char *const others[][2] = {{"busybox.tar", "ckube.local/busybox:1"},
                                            {"web.tar", "ckube.local/web:1"}};
    size_t dir_len = strlen(c->pause) - strlen("pause.tar");
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        char archive[PATH_MAX + 32];
        if (snprintf(archive, sizeof(archive), "%.*s%s", (int)dir_len, c->pause, others[i][0]) <
                (int)sizeof(archive) &&
            access(archive, R_OK) == 0)
            ensure_image(c, others[i][1], archive);
    }
}

/* Whether the socket accepts a connection. */
static bool socket_answers(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    bool ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* Stops the child: SIGTERM, SIGKILL after STOP_GRACE. */
static void terminate(const struct ck_cmd_containerd *c, pid_t pid, int pidfd)
{
    pidfd_send_signal(pidfd, SIGTERM, NULL, 0);
    if (wait_exit(c, pid, pidfd, STOP_GRACE, false, NULL) != 1) {
        CK_LOGW("containerd: still running %d s after SIGTERM; killing it", STOP_GRACE / 1000);
        pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        wait_exit(c, pid, pidfd, -1, false, NULL);
    }
    char p[32];
    snprintf(p, sizeof(p), "%d", (int)pid);
    CK_LOGS(0, "containerd: stopped", "pid", p);
}

static void *supervise(void *arg)
{
    struct ck_cmd_containerd *c = arg;
    int backoff = BACKOFF_INITIAL;
    for (;;) {
        int log = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        char *argv[] = {c->binary, (char *)"--config", c->config, NULL};
        int pidfd = -1;
        unlink(c->sock); /* a socket left by a containerd killed before */
        pid_t pid = log >= 0 ? spawn(argv, log, true, &pidfd) : -1;
        if (log >= 0)
            close(log);
        int64_t started = now_ns();
        if (pid < 0) {
            CK_LOGE("containerd: cannot start %s: %s", c->binary, strerror(errno));
        } else {
            char p[32];
            snprintf(p, sizeof(p), "%d", (int)pid);
            CK_LOGS(0, "containerd: started", "pid", p, "socket", c->sock, "log", c->log);
            int r = 0, status = -1;
            /* until it answers, then the pause image, then until it exits */
            for (int waited = 0; r == 0 && waited < READY_TIMEOUT; waited += 100) {
                if (socket_answers(c->sock))
                    break;
                r = wait_exit(c, pid, pidfd, 100, true, &status);
            }
            if (r == 0 && socket_answers(c->sock)) {
                CK_LOGS(0, "containerd: ready", "endpoint", c->endpoint);
                ensure_images(c);
            } else if (r == 0) {
                CK_LOGE("containerd: its socket %s does not answer after %d s (see %s)", c->sock,
                        READY_TIMEOUT / 1000, c->log);
            }
            if (r == 0)
                r = wait_exit(c, pid, pidfd, -1, true, &status);
            if (r < 0) {
                terminate(c, pid, pidfd);
                close(pidfd);
                return NULL;
            }
            close(pidfd);
            char how[64];
            if (status == -1)
                snprintf(how, sizeof(how), "unknown");
            else if (WIFSIGNALED(status))
                snprintf(how, sizeof(how), "signal %d", WTERMSIG(status));
            else
                snprintf(how, sizeof(how), "exit code %d", WEXITSTATUS(status));
            if (now_ns() - started > STABLE_RUN)
                backoff = BACKOFF_INITIAL;
            CK_LOGE("containerd exited (%s; its log: %s); restarting it in %d s", how, c->log,
                    backoff / 1000);
        }
        if (sleep_or_stop(c, backoff))
            return NULL;
        backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
    }
}

int ck_cmd_containerd_start(const char *binary, const char *data_dir, const char *cni_conf_dir,
                            const char *cni_bin_dir, struct ck_cmd_containerd **ret)
{
    struct ck_cmd_containerd *c = calloc(1, sizeof(*c));
    if (!c) {
        CK_LOGE("containerd: out of memory");
        return -1;
    }
    c->stop_fd = -1;
    snprintf(c->binary, sizeof(c->binary), "%s", binary);
    if (!find_on_path("ctr", c->ctr, sizeof(c->ctr))) {
        c->ctr[0] = '\0';
        CK_LOGW("containerd: no ctr on PATH: the pause image cannot be imported");
    }
    if (snprintf(c->dir, sizeof(c->dir), "%s/containerd", data_dir) >= (int)sizeof(c->dir) ||
        (mkdir(c->dir, 0700) < 0 && errno != EEXIST)) {
        CK_LOGE("containerd: cannot make %s/containerd: %s", data_dir, strerror(errno));
        free(c);
        return -1;
    }
    snprintf(c->config, sizeof(c->config), "%s/config.toml", c->dir);
    snprintf(c->log, sizeof(c->log), "%s/containerd.log", c->dir);
    if (choose_socket(c, data_dir) < 0 || write_config(c, cni_conf_dir, cni_bin_dir) < 0) {
        free(c);
        return -1;
    }
    snprintf(c->endpoint, sizeof(c->endpoint), "unix://%s", c->sock);
    find_pause_archive(c);
    c->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (c->stop_fd < 0 || pthread_create(&c->thread, NULL, supervise, c) != 0) {
        CK_LOGE("containerd: cannot start its supervisor");
        if (c->stop_fd >= 0)
            close(c->stop_fd);
        free(c);
        return -1;
    }
    *ret = c;
    return 0;
}

const char *ck_cmd_containerd_endpoint(const struct ck_cmd_containerd *c)
{
    return c->endpoint;
}

void ck_cmd_containerd_stop(struct ck_cmd_containerd *c)
{
    if (!c)
        return;
    uint64_t one = 1;
    if (write(c->stop_fd, &one, sizeof(one)) != sizeof(one))
        CK_LOGE("containerd: cannot signal its supervisor: %s", strerror(errno));
    pthread_join(c->thread, NULL);
    close(c->stop_fd);
    free(c);
}
