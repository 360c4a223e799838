/*
 * probe.c - the kubelet's container probes (pkg/kubelet/prober): exec (a command in the
 * container's environment and directory; exit 0 succeeds), httpGet (a GET through
 * libcurl; a status from 200 to 399 succeeds) and tcpSocket (a connection opens), each
 * bounded by timeoutSeconds (default 1), and the thresholds that turn results into a
 * state (successThreshold, failureThreshold, periodSeconds, initialDelaySeconds).
 */
#define _GNU_SOURCE /* execvpe */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static int64_t timeout_of(const json_t *probe)
{
    json_int_t t = json_integer_value(json_object_get(probe, "timeoutSeconds"));
    return (t > 0 ? t : 1) * CK_SEC;
}

static bool run_exec(const json_t *exec, const struct ck_probe_target *target, int64_t timeout,
                     char *msg, size_t size)
{
    const json_t *cmd = json_object_get(exec, "command");
    size_t n = json_array_size(cmd);
    if (n == 0 || n > 256) {
        snprintf(msg, size, "exec probe without a command");
        return false;
    }
    char *argv[257];
    for (size_t i = 0; i < n; i++)
        argv[i] = (char *)(json_string_value(json_array_get(cmd, i)) ?: "");
    argv[n] = NULL;
    if (target->exec)
        return target->exec(target->exec_arg, argv, timeout, msg, size);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (target->dir && chdir(target->dir) < 0)
            _exit(126);
        execvpe(argv[0], argv, target->envp ? target->envp : (char *const[]){NULL});
        _exit(127);
    }
    if (pid < 0) {
        snprintf(msg, size, "fork: %s", strerror(errno));
        return false;
    }
    int64_t deadline = monotonic_ns() + timeout;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (monotonic_ns() >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(msg, size, "command timed out after %llds", (long long)(timeout / CK_SEC));
            return false;
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return true;
    snprintf(msg, size, "command exited with %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return false;
}

/* The probe's port: a number, or the name of one of the container's ports. */
static int port_of(const json_t *action, const struct ck_probe_target *target)
{
    const json_t *port = json_object_get(action, "port");
    if (json_is_integer(port))
        return (int)json_integer_value(port);
    const char *name = json_string_value(port);
    size_t i;
    json_t *p;
    json_array_foreach(target->ports, i, p)
    {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (name && n && strcmp(n, name) == 0)
            return (int)json_integer_value(json_object_get(p, "containerPort"));
    }
    return name ? atoi(name) : 0;
}

static size_t discard(char *buf, size_t size, size_t n, void *arg)
{
    (void)buf;
    (void)arg;
    return size * n;
}

static bool run_http(const json_t *get, const struct ck_probe_target *target, int64_t timeout,
                     char *msg, size_t size)
{
    int port = port_of(get, target);
    const char *host = json_string_value(json_object_get(get, "host"));
    const char *path = json_string_value(json_object_get(get, "path"));
    const char *scheme = json_string_value(json_object_get(get, "scheme"));
    if (port <= 0 || port > 65535) {
        snprintf(msg, size, "invalid port");
        return false;
    }
    char url[2048];
    snprintf(url, sizeof(url), "%s://%s:%d%s%s",
             scheme && strcmp(scheme, "HTTPS") == 0 ? "https" : "http",
             host && *host ? host : target->host, port, path && *path == '/' ? "" : "/",
             path ? path : "");
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(msg, size, "out of memory");
        return false;
    }
    struct curl_slist *headers = curl_slist_append(NULL, "User-Agent: kube-probe/1.32");
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(get, "httpHeaders"), i, h)
    {
        char line[1024];
        snprintf(line, sizeof(line), "%s: %s", json_string_value(json_object_get(h, "name")) ?: "",
                 json_string_value(json_object_get(h, "value")) ?: "");
        headers = curl_slist_append(headers, line);
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(timeout / CK_MSEC));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L); /* kubelet does not verify either */
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) {
        snprintf(msg, size, "Get \"%s\": %s", url, curl_easy_strerror(rc));
        return false;
    }
    if (code >= 200 && code < 400)
        return true;
    snprintf(msg, size, "HTTP probe failed with statuscode: %ld", code);
    return false;
}

static bool run_tcp(const json_t *tcp, const struct ck_probe_target *target, int64_t timeout,
                    char *msg, size_t size)
{
    int port = port_of(tcp, target);
    const char *host = json_string_value(json_object_get(tcp, "host"));
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (port <= 0 || port > 65535 ||
        getaddrinfo(host && *host ? host : target->host, service, &hints, &res) != 0) {
        snprintf(msg, size, "cannot resolve the probe's address");
        return false;
    }
    bool ok = false;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int r = connect(fd, res->ai_addr, res->ai_addrlen);
        if (r == 0)
            ok = true;
        else if (errno == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int err = 0;
            socklen_t len = sizeof(err);
            ok = poll(&p, 1, (int)(timeout / CK_MSEC)) == 1 &&
                 getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (!ok)
        snprintf(msg, size, "dial tcp %s:%d: connection failed",
                 host && *host ? host : target->host, port);
    return ok;
}

bool ck_probe_run(const json_t *probe, const struct ck_probe_target *target, char *msg, size_t size)
{
    int64_t timeout = timeout_of(probe);
    const json_t *action;
    if (size)
        msg[0] = 0;
    if ((action = json_object_get(probe, "exec")))
        return run_exec(action, target, timeout, msg, size);
    if ((action = json_object_get(probe, "httpGet")))
        return run_http(action, target, timeout, msg, size);
    if ((action = json_object_get(probe, "tcpSocket")))
        return run_tcp(action, target, timeout, msg, size);
    snprintf(msg, size, "the probe has no handler");
    return false;
}

void ck_probe_state_init(struct ck_probe_state *s, const json_t *probe, int64_t started,
                         bool initial)
{
    json_int_t delay = json_integer_value(json_object_get(probe, "initialDelaySeconds"));
    s->probe = probe;
    s->result = initial;
    s->successes = s->failures = 0;
    s->next_at = started + (delay > 0 ? delay : 0) * CK_SEC;
}

int ck_probe_state_due(struct ck_probe_state *s, int64_t now, bool ok)
{
    json_int_t period = json_integer_value(json_object_get(s->probe, "periodSeconds"));
    json_int_t st = json_integer_value(json_object_get(s->probe, "successThreshold"));
    json_int_t ft = json_integer_value(json_object_get(s->probe, "failureThreshold"));
    s->next_at = now + (period > 0 ? period : 10) * CK_SEC;
    if (ok) {
        s->failures = 0;
        if (++s->successes >= (st > 0 ? st : 1) && !s->result) {
            s->result = true;
            return 1;
        }
    } else {
        s->successes = 0;
        if (++s->failures >= (ft > 0 ? ft : 3) && s->result != false) {
            s->result = false;
            return -1;
        }
        if (s->failures >= (ft > 0 ? ft : 3))
            return -1;
    }
    return 0;
}
