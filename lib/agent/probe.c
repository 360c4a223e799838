/*
 * probe.c - the kubelet's container probes (pkg/kubelet/prober): exec (a command in the
 * container's environment and directory; exit 0 succeeds), httpGet (a GET through
 * libcurl; a status from 200 to 399 succeeds), tcpSocket (a connection opens) and grpc
 * (grpc.health.v1.Health/Check over plaintext HTTP/2 with libckube-util's gRPC client;
 * SERVING succeeds, with the words of the kubelet's pkg/probe/grpc), each bounded by
 * timeoutSeconds (default 1), and the thresholds that turn results into a state
 * (successThreshold, failureThreshold, periodSeconds, initialDelaySeconds).
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
#include "ckube/internal/util.h"

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

/* A whole number of seconds as Go prints a time.Duration: "1s", "1m30s", "2h0m0s". */
static void go_duration(int64_t ns, char *buf, size_t size)
{
    long long s = (long long)(ns / CK_SEC);
    if (s >= 3600)
        snprintf(buf, size, "%lldh%lldm%llds", s / 3600, s / 60 % 60, s % 60);
    else if (s >= 60)
        snprintf(buf, size, "%lldm%llds", s / 60, s % 60);
    else
        snprintf(buf, size, "%llds", s);
}

/* grpc.health.v1.HealthCheckResponse.ServingStatus by number. */
static const char *const SERVING_STATUS[] = {"UNKNOWN", "SERVING", "NOT_SERVING",
                                             "SERVICE_UNKNOWN"};

/*
 * A grpc probe: Check {service} on host:port, as the kubelet's grpcProber: success when
 * the answer is SERVING; else its words for a connection that failed, a server without
 * the health service (Unimplemented), a call past the timeout, another status, or an
 * unhealthy answer.
 */
static bool run_grpc(const json_t *grpc, const struct ck_probe_target *target, int64_t timeout,
                     char *msg, size_t size)
{
    const json_t *port_j = json_object_get(grpc, "port");
    json_int_t port = json_integer_value(port_j);
    const char *service = json_string_value(json_object_get(grpc, "service"));
    char addr[300], why[256] = "", d[32];
    go_duration(timeout, d, sizeof(d));
    if (!json_is_integer(port_j) || port <= 0 || port > 65535) {
        snprintf(msg, size, "invalid port");
        return false;
    }
    snprintf(addr, sizeof(addr), strchr(target->host, ':') ? "[%s]:%lld" : "%s:%lld", target->host,
             (long long)port);
    int64_t deadline = monotonic_ns() + timeout;
    struct ck__grpc_conn *conn = NULL;
    int r = ck__grpc_connect(addr, (int)(timeout / CK_MSEC), &conn, why, sizeof(why));
    if (r < 0) {
        if (strcmp(why, strerror(ETIMEDOUT)) == 0)
            snprintf(msg, size,
                     "timeout: failed to connect service \"%s\" within %s: context deadline "
                     "exceeded",
                     addr, d);
        else
            snprintf(msg, size, "error: failed to connect service at \"%s\": %s", addr, why);
        return false;
    }
    struct ck__buf req = {0};
    if (service && *service)
        ck__pb_put_bytes(&req, 1, service, strlen(service));
    struct ck__grpc_answer answer = {.body = {.max = 64 * 1024}};
    int64_t left = deadline - monotonic_ns();
    r = req.err
            ? CK_ENOMEM
            : ck__grpc_call(conn, "/grpc.health.v1.Health/Check", req.p, req.len,
                            left > CK_MSEC ? (int)(left / CK_MSEC) : 1, &answer, why, sizeof(why));
    ck__grpc_close(conn);
    ck__buf_release(&req);
    bool ok = false;
    char code[24];
    struct ck__pb_reader rd;
    if (r < 0 && strcmp(why, "timed out") == 0)
        snprintf(msg, size, "timeout: health rpc did not complete within %s", d);
    else if (r < 0)
        snprintf(msg, size,
                 "error: health rpc probe failed: rpc error: code = Unavailable desc = %s", why);
    else if (!answer.status_seen || answer.status == 4)
        snprintf(msg, size,
                 answer.status_seen ? "timeout: health rpc did not complete within %s"
                                    : "error: health rpc probe failed: rpc error: code "
                                      "= Internal desc = %s",
                 answer.status_seen ? d : "server closed the stream without sending trailers");
    else if (answer.status == 12)
        snprintf(msg, size,
                 "error: this server does not implement the grpc health protocol "
                 "(grpc.health.v1.Health): %s",
                 answer.message);
    else if (answer.status != 0)
        snprintf(msg, size, "error: health rpc probe failed: rpc error: code = %s desc = %s",
                 ck__grpc_code_name(answer.status, code, sizeof(code)), answer.message);
    else if (!ck__grpc_unary_message(&answer.body, &rd))
        snprintf(msg, size,
                 "error: health rpc probe failed: rpc error: code = Internal desc = "
                 "grpc: failed to unmarshal the received message");
    else {
        uint64_t status = 0, v;
        uint32_t number;
        unsigned wire;
        int n;
        while ((n = ck__pb_next(&rd, &number, &wire)) > 0) {
            if (number == 1 && wire == CK__PB_VARINT && ck__pb_get_varint(&rd, &v))
                status = v;
            else if (!ck__pb_skip(&rd, wire))
                n = -1;
            if (n < 0)
                break;
        }
        char other[32];
        if (n < 0)
            snprintf(msg, size,
                     "error: health rpc probe failed: rpc error: code = Internal desc = "
                     "grpc: failed to unmarshal the received message");
        else if (status == 1)
            ok = true;
        else {
            if (status < sizeof(SERVING_STATUS) / sizeof(*SERVING_STATUS))
                snprintf(other, sizeof(other), "%s", SERVING_STATUS[status]);
            else
                snprintf(other, sizeof(other), "%llu", (unsigned long long)status);
            snprintf(msg, size, "service unhealthy (responded with \"%s\")", other);
        }
    }
    ck__buf_release(&answer.body);
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
    if ((action = json_object_get(probe, "grpc")))
        return run_grpc(action, target, timeout, msg, size);
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
