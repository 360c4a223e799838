/*
 * logserver.c - the agent's log endpoint, which the API server's pods/log proxies to, as
 * kube-apiserver does to the kubelet's /containerLogs:
 *
 *   GET /containerLogs/{namespace}/{pod}/{container}?follow=&tailLines=&previous=
 *       &timestamps=&limitBytes=
 *
 * It reads the CRI log file and answers the text of each record (with its RFC 3339 time
 * in front when timestamps=true). With follow=true the answer goes on while the
 * container runs.
 *
 * The same endpoint serves exec (exec.c). libmicrohttpd serves it over HTTPS (tls.c) on
 * the node's address, one thread per connection; with a client CA, every request must
 * come with a client certificate that CA signed (else 401).
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

struct log_reader {
    FILE *f;
    char exit_path[4096];
    bool follow, timestamps;
    int64_t limit; /* bytes left to send; <0: no limit */
    char line[20000];
};

/* The text of one CRI record (and its time when asked); false if not a record. */
static size_t record_text(const struct log_reader *r, const char *rec, char *out, size_t size)
{
    const char *sp1 = strchr(rec, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    const char *sp3 = sp2 ? strchr(sp2 + 1, ' ') : NULL;
    if (!sp3)
        return 0;
    bool partial = sp2[1] == 'P';
    const char *text = sp3 + 1;
    size_t len = strcspn(text, "\n");
    size_t n = 0;
    if (r->timestamps)
        n = (size_t)snprintf(out, size, "%.*s ", (int)(sp1 - rec), rec);
    if (n + len + 1 > size)
        len = size - n - 1;
    memcpy(out + n, text, len);
    n += len;
    if (!partial)
        out[n++] = '\n';
    return n;
}

static ssize_t read_logs(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct log_reader *r = cls;
    for (int waited = 0;; waited++) {
        if (r->limit == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        long at = ftell(r->f);
        if (fgets(r->line, sizeof(r->line), r->f) && strchr(r->line, '\n')) {
            char out[sizeof(r->line) + 64];
            size_t n = record_text(r, r->line, out, sizeof(out));
            if (n > max) { /* come back with room */
                fseek(r->f, at, SEEK_SET);
                if (max >= sizeof(out))
                    return MHD_CONTENT_READER_END_WITH_ERROR;
                return 0;
            }
            if (r->limit > 0 && (int64_t)n > r->limit)
                n = (size_t)r->limit;
            if (r->limit > 0)
                r->limit -= (int64_t)n;
            memcpy(buf, out, n);
            if (n)
                return (ssize_t)n;
            continue;
        }
        fseek(r->f, at, SEEK_SET); /* half a record, or none yet */
        clearerr(r->f);
        if (!r->follow || access(r->exit_path, F_OK) == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        if (waited > 50) /* let the server notice a closed connection */
            return 0;
    }
}

static void free_reader(void *cls)
{
    struct log_reader *r = cls;
    if (r->f)
        fclose(r->f);
    free(r);
}

static enum MHD_Result fail(struct MHD_Connection *conn, unsigned status, const char *msg)
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

/* Moves f to the start of its last n records. */
static void seek_tail(FILE *f, long n)
{
    fseek(f, 0, SEEK_END);
    long end = ftell(f), at = end;
    long seen = 0;
    char c;
    while (at > 0) {
        fseek(f, --at, SEEK_SET);
        if (fread(&c, 1, 1, f) == 1 && c == '\n' && at != end - 1 && ++seen == n) {
            fseek(f, at + 1, SEEK_SET);
            return;
        }
    }
    fseek(f, 0, SEEK_SET);
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
        return fail(conn, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n");
    if (strcmp(method, "POST") == 0 && strncmp(url, "/execInput/", 11) == 0)
        return ck__agent_exec_input(conn, url, upload, upload_size, req);
    if (strcmp(method, "GET") == 0 && strncmp(url, "/exec/", 6) == 0)
        return ck__agent_exec_start(a, conn, url);
    if (strcmp(method, "GET") != 0)
        return fail(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    char ns[254], pod[254], ctr[254] = "";
    if (sscanf(url, "/containerLogs/%253[^/]/%253[^/]/%253[^/]", ns, pod, ctr) < 2)
        return fail(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    struct log_reader *r = calloc(1, sizeof(*r));
    char path[4096];
    if (!r)
        return fail(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    if (ck_agent_log_path(a, ns, pod, ctr, query_true(conn, "previous"), path, sizeof(path)) < 0 ||
        !(r->f = fopen(path, "re"))) {
        free(r);
        return fail(conn, MHD_HTTP_NOT_FOUND, "no log for this container\n");
    }
    snprintf(r->exit_path, sizeof(r->exit_path), "%.*s/exit", (int)(strrchr(path, '/') - path),
             path);
    r->follow = query_true(conn, "follow") && !query_true(conn, "previous");
    r->timestamps = query_true(conn, "timestamps");
    const char *lb = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limitBytes");
    r->limit = lb ? atoll(lb) : -1;
    if (r->limit == 0)
        r->limit = -1;
    const char *tail = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tailLines");
    if (tail && atol(tail) >= 0)
        seek_tail(r->f, atol(tail));
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, read_logs, r, free_reader);
    if (!resp) {
        free_reader(r);
        return fail(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void request_done(void *cls, struct MHD_Connection *conn, void **req,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    ck__agent_exec_input_done(*req); /* the only requests with a state */
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
