/*
 * agentleg.c - the streaming leg from the API server to a node agent that exec and
 * port-forward relay kubectl's streams over, and the bits of their WebSocket upgrades.
 *
 * Both ends are HTTP libraries and nothing here speaks HTTP itself. libcurl has no
 * WebSocket in Debian 12, so a leg is two streaming libcurl requests over HTTPS with the
 * kubelet client certificate: a GET whose answer's body is written into a pipe (the
 * output) and a POST whose chunked upload is read from another pipe (the input). The
 * agent ties the two together by the session id both URLs carry; the upload's end ends
 * the session there. The GET's status is known before the caller upgrades kubectl's
 * connection, so that a refusal (a container or port that is not there) can still be a
 * Status or an error text.
 *
 * The upgraded connection (struct ck__upgraded) and wslay's callbacks on it are shared
 * the same way: exec and port-forward's relays start with one.
 *
 * Threading: each request runs on a detached thread of its own. The leg is refcounted
 * (the caller, the output thread, the input thread); the pipes' ends are closed by
 * whoever is done with them.
 */
#define _GNU_SOURCE /* pipe2 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "req_mhd.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct ck__leg {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int refs; /* the caller, the output transfer, the input transfer */
    /* the output: GET, its body into out_w */
    CURL *out_curl;
    long out_status; /* the agent's HTTP status; -1: no answer */
    char err[CURL_ERROR_SIZE];
    char first[512]; /* the start of an error's body */
    size_t first_len;
    bool out_done;
    int out_w, out_r;
    /* the input: POST, its body from in_r */
    CURL *in_curl;
    struct curl_slist *in_headers;
    int in_r, in_w;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void leg_release(struct ck__leg *l)
{
    pthread_mutex_lock(&l->lock);
    bool last = --l->refs == 0;
    pthread_mutex_unlock(&l->lock);
    if (!last)
        return;
    close_fd(&l->out_w);
    close_fd(&l->out_r);
    close_fd(&l->in_r);
    close_fd(&l->in_w);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l);
}

/* ---- the agent's answer (the output) ---- */

static size_t out_header(char *buf, size_t size, size_t n, void *arg)
{
    struct ck__leg *l = arg;
    long code = 0;
    if (size * n > 9 && strncmp(buf, "HTTP/", 5) == 0 && sscanf(buf, "%*s %ld", &code) == 1 &&
        code != 100) {
        pthread_mutex_lock(&l->lock);
        if (l->out_status == 0)
            l->out_status = code;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
    }
    return size * n;
}

static size_t out_body(char *buf, size_t size, size_t n, void *arg)
{
    struct ck__leg *l = arg;
    size_t len = size * n, done = 0;
    if (l->out_status != 200) {
        size_t room = sizeof(l->first) - 1 - l->first_len;
        size_t k = len < room ? len : room;
        memcpy(l->first + l->first_len, buf, k);
        l->first_len += k;
        return len;
    }
    while (done < len) {
        ssize_t w = write(l->out_w, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0; /* the caller went away: end the transfer */
        done += (size_t)w;
    }
    return len;
}

static void *output_main(void *arg)
{
    struct ck__leg *l = arg;
    CURLcode rc = curl_easy_perform(l->out_curl);
    curl_easy_cleanup(l->out_curl);
    pthread_mutex_lock(&l->lock);
    if (l->out_status == 0 || rc != CURLE_OK)
        l->out_status = l->out_status ? l->out_status : -1;
    l->out_curl = NULL;
    l->out_done = true;
    close_fd(&l->out_w); /* the reader sees the end */
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    leg_release(l);
    return NULL;
}

/* ---- the upload (the input) ---- */

static size_t in_read(char *buf, size_t size, size_t n, void *arg)
{
    struct ck__leg *l = arg;
    for (;;) {
        ssize_t got = read(l->in_r, buf, size * n);
        if (got < 0 && errno == EINTR)
            continue;
        return got > 0 ? (size_t)got : 0; /* 0: the caller closed it, the end */
    }
}

static size_t discard(char *buf, size_t size, size_t n, void *arg)
{
    (void)buf;
    (void)arg;
    return size * n;
}

static void *input_main(void *arg)
{
    struct ck__leg *l = arg;
    curl_easy_perform(l->in_curl);
    curl_easy_cleanup(l->in_curl);
    curl_slist_free_all(l->in_headers);
    leg_release(l);
    return NULL;
}

/* ---- the caller's ---- */

json_t *ck__read_pod(struct ck_apiserver *ctx, struct ck__req *req, const struct ck__target *t,
                     char *node_name, size_t size, enum ck__res *ret_failed)
{
    struct ck_err err = {0};
    json_t *pod = ck__read_object(ctx, t->kind, t->namespace, t->name, &err);
    if (!pod) {
        *ret_failed = err.code ? ck__fail(req, &err) : ck__fail_no_memory(req);
        return NULL;
    }
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    snprintf(node_name, size, "%s", node ? node : "");
    return pod;
}

/* What both requests set: the URL, no signals, 10 s to connect, the agent's TLS. */
static void set_common(struct ck_apiserver *ctx, CURL *c, const char *url)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    ck__kubelet_curl_tls(ctx, c);
}

static struct ck__leg *leg_new(void)
{
    struct ck__leg *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->out_w = l->out_r = l->in_r = l->in_w = -1;
    l->refs = 1;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    int o[2], i[2];
    if (pipe2(o, O_CLOEXEC) < 0) {
        leg_release(l);
        return NULL;
    }
    l->out_r = o[0];
    l->out_w = o[1];
    if (pipe2(i, O_CLOEXEC) < 0) {
        leg_release(l);
        return NULL;
    }
    l->in_r = i[0];
    l->in_w = i[1];
    return l;
}

int ck__leg_open(struct ck_apiserver *ctx, const char *out_url, struct ck__leg **ret,
                 long *ret_status, char *msg, size_t size)
{
    struct ck__leg *l = leg_new();
    CURL *c = l ? curl_easy_init() : NULL;
    *ret_status = -1;
    if (!c) {
        if (l)
            leg_release(l);
        snprintf(msg, size, "out of memory");
        return CK_ENOMEM;
    }
    l->out_curl = c;
    set_common(ctx, c, out_url);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, out_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, l);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, out_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, l);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, l->err);
    l->refs = 2; /* the caller; the output transfer */
    pthread_t thread;
    if (pthread_create(&thread, NULL, output_main, l) != 0) {
        curl_easy_cleanup(c);
        l->refs = 1;
        leg_release(l);
        snprintf(msg, size, "out of memory");
        return CK_ENOMEM;
    }
    pthread_detach(thread);
    pthread_mutex_lock(&l->lock);
    while (l->out_status == 0)
        pthread_cond_wait(&l->cond, &l->lock);
    long status = l->out_status;
    if (status != 200) {
        while (!l->out_done)
            pthread_cond_wait(&l->cond, &l->lock);
        pthread_mutex_unlock(&l->lock);
        if (status < 0)
            snprintf(msg, size, "%s", l->err[0] ? l->err : "no answer");
        else
            snprintf(msg, size, "%.*s", (int)strcspn(l->first, "\n"), l->first);
        *ret_status = status;
        leg_release(l);
        return status < 0 ? CK_EIO : CK_EINVAL;
    }
    pthread_mutex_unlock(&l->lock);
    *ret_status = 200;
    *ret = l;
    return 0;
}

int ck__leg_start_input(struct ck_apiserver *ctx, struct ck__leg *l, const char *in_url)
{
    CURL *c = curl_easy_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Transfer-Encoding: chunked");
    headers = headers ? curl_slist_append(headers, "Expect:") : NULL;
    headers = headers ? curl_slist_append(headers, "Content-Type: application/octet-stream") : NULL;
    if (!c || !headers) {
        if (c)
            curl_easy_cleanup(c);
        curl_slist_free_all(headers);
        return CK_ENOMEM;
    }
    set_common(ctx, c, in_url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, in_read);
    curl_easy_setopt(c, CURLOPT_READDATA, l);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    l->in_curl = c;
    l->in_headers = headers; /* the input thread frees them */
    pthread_mutex_lock(&l->lock);
    l->refs++;
    pthread_mutex_unlock(&l->lock);
    pthread_t thread;
    if (pthread_create(&thread, NULL, input_main, l) != 0) {
        curl_slist_free_all(headers);
        curl_easy_cleanup(c);
        l->in_curl = NULL;
        l->in_headers = NULL;
        leg_release(l);
        return CK_ENOMEM;
    }
    pthread_detach(thread);
    return 0;
}

int ck__leg_out_fd(const struct ck__leg *l)
{
    return l->out_r;
}

int ck__leg_in_fd(const struct ck__leg *l)
{
    return l->in_w;
}

void ck__leg_end_input(struct ck__leg *l)
{
    close_fd(&l->in_w);
}

void ck__leg_close(struct ck__leg *l)
{
    if (!l)
        return;
    close_fd(&l->in_w);  /* the upload ends, and the session on the agent */
    close_fd(&l->out_r); /* the output transfer stops at its next write */
    leg_release(l);
}

int ck__leg_session_id(char id[33])
{
    unsigned char bytes[16];
    if (gnutls_rnd(GNUTLS_RND_NONCE, bytes, sizeof(bytes)) < 0)
        return CK_EIO;
    for (size_t i = 0; i < sizeof(bytes); i++)
        snprintf(id + 2 * i, 3, "%02x", bytes[i]);
    return 0;
}

bool ck__ws_accept_key(const char *key, char *out, size_t size)
{
    char text[256];
    unsigned char digest[20];
    if (strlen(key) > 128)
        return false;
    snprintf(text, sizeof(text), "%s%s", key, WS_GUID);
    if (gnutls_hash_fast(GNUTLS_DIG_SHA1, text, strlen(text), digest) < 0)
        return false;
    char *b64 = ck_base64_encode(digest, sizeof(digest));
    if (!b64 || strlen(b64) >= size) {
        free(b64);
        return false;
    }
    snprintf(out, size, "%s", b64);
    free(b64);
    return true;
}

bool ck__header_has(struct ck__req *req, const char *name, const char *token)
{
    const char *v = ck__req_header(req, name);
    return v && strcasestr(v, token);
}

void ck__upgraded_cb(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra_in,
                     size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)req_cls;
    (void)extra_in;
    (void)extra_in_size; /* kubectl waits for the 101 before it writes */
    struct ck__upgraded *u = cls;
    u->sock = sock;
    u->urh = urh;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    u->peer_fd = info ? info->connect_fd : -1;
    pthread_t t;
    if (pthread_create(&t, NULL, u->relay, cls) != 0) {
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        u->drop(cls);
        return;
    }
    pthread_detach(t);
}

/* The wslay error for a failed recv/send: try later, or the end. */
static ssize_t ws_io_result(wslay_event_context_ptr ctx, ssize_t n, bool zero_is_end)
{
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0 || (n == 0 && zero_is_end)) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

ssize_t ck__ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *arg)
{
    (void)flags;
    const struct ck__upgraded *u = arg;
    if (u->hold_reads) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    return ws_io_result(ctx, recv(u->sock, buf, len, 0), true);
}

ssize_t ck__ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                    void *arg)
{
    (void)flags;
    const struct ck__upgraded *u = arg;
    return ws_io_result(ctx, send(u->sock, data, len, MSG_NOSIGNAL), false);
}
