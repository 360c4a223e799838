/*
 * logserver.c - the agent's log endpoint, which the API server's pods/log proxies to, as
 * kube-apiserver does to the kubelet's /containerLogs:
 *
 *   GET /containerLogs/{namespace}/{pod}/{container}?follow=&tailLines=&previous=
 *       &timestamps=&limitBytes=&sinceSeconds=&sinceTime=
 *
 * It reads the CRI log files (logread.c: rotated ones first) and answers the text of
 * each record (with its RFC 3339 time in front when timestamps=true). With follow=true
 * the answer goes on while the container runs.
 *
 * The same endpoint serves exec and attach (exec.c), port-forward (portforward.c) and
 * kubelet's resource metrics, GET /metrics/resource (resource_metrics.c), and kubelet's
 * GET /healthz ("ok"), which nodes/{name}/proxy/healthz reaches through the API server.
 * libmicrohttpd serves it over HTTPS (tls.c) on the node's address, one thread per
 * connection; with a client CA, every request must come with a client certificate that CA
 * signed (else 401).
 */
#define _GNU_SOURCE
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "internal.h"

enum MHD_Result ck__agent_answer_stream(struct MHD_Connection *conn, const char *content_type,
                                        size_t block, MHD_ContentReaderCallback read, void *cls,
                                        MHD_ContentReaderFreeCallback done)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, read, cls, done);
    if (!resp) {
        done(cls);
        return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The container's log through logread.c; waits in follow mode, a while at a time. */
static ssize_t read_logs(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct ck_log_reader *r = cls;
    for (int waited = 0;; waited++) {
        ssize_t n = ck_log_reader_read(r, buf, max);
        if (n == CK_LOG_END)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (n > 0)
            return n;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        if (waited > 50) /* let the server notice a closed connection */
            return 0;
    }
}

static void free_reader(void *cls)
{
    ck_log_reader_free(cls);
}

enum MHD_Result ck__agent_answer(struct MHD_Connection *conn, unsigned status, const char *msg)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static bool query_true(struct MHD_Connection *conn, const char *name)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static int64_t query_int(struct MHD_Connection *conn, const char *name, int64_t dflt)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    char *end;
    long long n = v && *v ? strtoll(v, &end, 10) : 0;
    return v && *v && !*end ? (int64_t)n : dflt;
}

/* Opens the log of the request's container with its options (the kubelet's LogOptions). */
static struct ck_log_reader *open_reader(struct ck_agent *a, struct MHD_Connection *conn,
                                         const char *ns, const char *pod, const char *ctr)
{
    char path[4096], exit_path[4200];
    bool previous = query_true(conn, "previous");
    if (ck_agent_log_path(a, ns, pod, ctr, previous, path, sizeof(path)) < 0)
        return NULL;
    size_t len = strlen(path); /* DIR/<attempt>.log; its exit file is DIR/<attempt>/exit */
    snprintf(exit_path, sizeof(exit_path), "%.*s/exit", (int)(len > 4 ? len - 4 : len), path);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct ck_log_options o = {
        .follow = query_true(conn, "follow") && !previous,
        .timestamps = query_true(conn, "timestamps"),
        .tail_lines = query_int(conn, "tailLines", -1),
        .limit_bytes = query_int(conn, "limitBytes", 0),
        .since_ns =
            ck_log_since(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sinceSeconds"),
                         MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sinceTime"),
                         (int64_t)now.tv_sec * CK_SEC + now.tv_nsec),
    };
    struct ck_log_reader *r = NULL;
    return ck_log_reader_open(path, exit_path, &o, &r) == 0 ? r : NULL;
}

struct endpoint {
    struct ck_agent *agent;
    bool client_cert_required;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req)
{
    (void)version;
    const struct endpoint *e = cls;
    struct ck_agent *a = e->agent;
    if (!*req && ck__agent_tls_check_client(conn, e->client_cert_required) < 0)
        return ck__agent_answer(conn, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
    if (strcmp(method, "POST") == 0 && strncmp(url, "/execInput/", 11) == 0)
        return ck__agent_exec_input(conn, url, upload, upload_size, req);
    if (strcmp(method, "GET") == 0 && strncmp(url, "/exec/", 6) == 0)
        return ck__agent_exec_start(a, conn, url);
    if (strcmp(method, "POST") == 0 && strncmp(url, "/attachInput/", 13) == 0)
        return ck__agent_exec_input(conn, url, upload, upload_size, req);
    if (strcmp(method, "GET") == 0 && strncmp(url, "/attach/", 8) == 0)
        return ck__agent_attach_start(a, conn, url);
    if (strcmp(method, "POST") == 0 && strncmp(url, "/portForwardInput/", 18) == 0)
        return ck__agent_port_forward_input(conn, url, upload, upload_size, req);
    if (strcmp(method, "GET") == 0 && strncmp(url, "/portForward/", 13) == 0)
        return ck__agent_port_forward_start(a, conn, url);
    if (strcmp(method, "GET") != 0)
        return ck__agent_answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (strcmp(url, "/metrics/resource") == 0)
        return ck__agent_serve_resource_metrics(a, conn);
    if (strcmp(url, "/healthz") == 0) /* kubelet's: the agent serves */
        return ck__agent_answer(conn, MHD_HTTP_OK, "ok");
    char ns[254], pod[254], ctr[254] = "";
    if (sscanf(url, "/containerLogs/%253[^/]/%253[^/]/%253[^/]", ns, pod, ctr) < 2)
        return ck__agent_answer(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    struct ck_log_reader *r = open_reader(a, conn, ns, pod, ctr);
    if (!r)
        return ck__agent_answer(conn, MHD_HTTP_NOT_FOUND, "no log for this container\n");
    return ck__agent_answer_stream(conn, "text/plain", 32 * 1024, read_logs, r, free_reader);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **req,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct ck__agent_req *r = *req; /* the uploads' (exec, port-forward) */
    if (r)
        r->done(r);
    *req = NULL;
}

/* The handler's context: one per daemon, freed by the daemon's owner after it stops. */
static struct endpoint *endpoint_new(struct ck_agent *a, bool client_cert_required)
{
    struct endpoint *e = calloc(1, sizeof(*e));
    if (e)
        *e = (struct endpoint){a, client_cert_required};
    return e;
}

struct MHD_Daemon *ck__agent_log_server_start(struct ck_agent *a, const char *address, int port,
                                              const struct ck__agent_tls *tls, void **ret_context)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
        return NULL;
    struct endpoint *e = endpoint_new(a, tls->client_ca != NULL);
    if (!e)
        return NULL;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, tls->cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls->key},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, tls->client_ca},
        {MHD_OPTION_END, 0, NULL},
    };
    if (!tls->client_ca)
        tls_options[2].option = MHD_OPTION_END;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG |
            MHD_USE_TLS,
        (uint16_t)port, NULL, NULL, handle, e, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_ARRAY,
        tls_options, MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
    if (!d)
        free(e);
    else
        *ret_context = e;
    return d;
}
