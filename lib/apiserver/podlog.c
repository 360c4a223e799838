/*
 * podlog.c - GET pods/{name}/log: the API server proxies to the node agent of the pod's
 * node, as kube-apiserver does to the kubelet (pkg/registry/core/pod/rest/log.go): the
 * node's InternalIP and daemonEndpoints.kubeletEndpoint.Port, path
 * /containerLogs/{namespace}/{pod}/{container}, and the log options passed on
 * (container, follow, previous, tailLines, timestamps, limitBytes, sinceSeconds,
 * sinceTime). The agent's answer is streamed back through a pipe that a libcurl thread
 * fills, so `kubectl logs -f` follows.
 *
 * The agent serves HTTPS: the server presents its kubelet client certificate
 * (--kubelet-client-certificate/--kubelet-client-key, or apiserver-kubelet-client.crt
 * that the PKI signs) and checks the agent's serving certificate only when
 * --kubelet-certificate-authority is given, as kube-apiserver.
 *
 * Errors: no pod 404; a pod with no node 400 ("pod X does not have a host assigned"),
 * as kube-apiserver; the agent's 404 (no such container, not started) 400 with its
 * text; an agent that cannot be reached 503.
 */
#define _GNU_SOURCE /* pipe2 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"
#include "req_mhd.h"

struct proxy {
    CURL *curl;
    int fd; /* the pipe's write end */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long status; /* the agent's HTTP status once known; -1: it failed */
    char err[CURL_ERROR_SIZE];
    char first[512]; /* the start of an error body */
    size_t first_len;
    int refs; /* the handler and the thread: the last to let go frees it */
};

/* Lets go of p; the last of its two holders frees it. */
static void proxy_release(struct proxy *p)
{
    pthread_mutex_lock(&p->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&p->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
    struct proxy *p = arg;
    long code = 0;
    if (size * n > 9 && strncmp(buf, "HTTP/", 5) == 0 && sscanf(buf, "%*s %ld", &code) == 1 &&
        code != 100) {
        pthread_mutex_lock(&p->lock);
        if (p->status == 0)
            p->status = code;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
    }
    return size * n;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
    struct proxy *p = arg;
    size_t len = size * n, done = 0;
    if (p->status != 200) { /* keep the start of an error's text */
        size_t room = sizeof(p->first) - 1 - p->first_len;
        size_t k = len < room ? len : room;
        memcpy(p->first + p->first_len, buf, k);
        p->first_len += k;
        return len;
    }
    while (done < len) {
        ssize_t w = write(p->fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0; /* the client went away: end the transfer */
        done += (size_t)w;
    }
    return len;
}

static void *proxy_main(void *arg)
{
    struct proxy *p = arg;
    CURLcode rc = curl_easy_perform(p->curl);
    pthread_mutex_lock(&p->lock);
    if (p->status == 0 || rc != CURLE_OK)
        p->status = p->status ? p->status : -1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    /* with a 200 the response owns the read end; otherwise the handler reads p's text */
    close(p->fd);
    curl_easy_cleanup(p->curl);
    pthread_mutex_lock(&p->lock);
    p->curl = NULL; /* the transfer is over */
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    proxy_release(p);
    return NULL;
}

const char *ck__node_internal_ip(const json_t *node)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "addresses"), i, a)
    {
        const char *type = json_string_value(json_object_get(a, "type"));
        if (type && strcmp(type, "InternalIP") == 0)
            return json_string_value(json_object_get(a, "address"));
    }
    return NULL;
}

json_t *ck__read_object(struct ck_apiserver *ctx, const struct ck_kind *kind, const char *ns,
                        const char *name, struct ck_err *err)
{
    const struct ck_kv *kv = NULL;
    if (ck__registry_get(ctx->registry, kind, ns, name, &kv, err) < 0)
        return NULL;
    json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
    ck_kv_unref(kv);
    return obj;
}

int ck__kubelet_client_init(struct ck_apiserver *ctx, const struct ck_apiserver_config *config,
                            struct ck_err *reterr)
{
    if (!config->kubelet_client_certificate != !config->kubelet_client_key)
        return ck_err_set(reterr, CK_EINVAL,
                          "--kubelet-client-certificate and --kubelet-client-key go together");
    if (config->kubelet_certificate_authority &&
        !(ctx->kubelet_ca = ck__strdup(config->kubelet_certificate_authority)))
        return ck_err_no_memory(reterr);
    if (config->kubelet_client_certificate) {
        ctx->kubelet_cert = ck__strdup(config->kubelet_client_certificate);
        ctx->kubelet_key = ck__strdup(config->kubelet_client_key);
        return ctx->kubelet_cert && ctx->kubelet_key ? 0 : ck_err_no_memory(reterr);
    }
    char *ca = NULL;
    struct ck_err err = {0};
    int r = ck_apiserver_component_credentials(ctx, "apiserver-kubelet-client",
                                               "kube-apiserver-kubelet-client", "system:masters",
                                               &ca, &ctx->kubelet_cert, &ctx->kubelet_key, &err);
    free(ca);
    if (r == CK_ENOENT) /* no generated CA: agents get no client certificate */
        r = 0;
    else if (r < 0)
        r = ck_err_set(reterr, r, "%s", err.msg);
    ck_err_release(&err);
    return r;
}

void ck__kubelet_client_free(struct ck_apiserver *ctx)
{
    free(ctx->kubelet_cert);
    free(ctx->kubelet_key);
    free(ctx->kubelet_ca);
    ctx->kubelet_cert = ctx->kubelet_key = ctx->kubelet_ca = NULL;
}

void ck__kubelet_curl_tls(struct ck_apiserver *ctx, void *handle)
{
    CURL *curl = handle;
    if (ctx->kubelet_cert) {
        curl_easy_setopt(curl, CURLOPT_SSLCERT, ctx->kubelet_cert);
        curl_easy_setopt(curl, CURLOPT_SSLKEY, ctx->kubelet_key);
    }
    if (ctx->kubelet_ca) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, ctx->kubelet_ca);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L); /* node addresses, as kube */
    } else {
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

int ck__kubelet_base_url(struct ck_apiserver *ctx, const char *node_name, char *buf, size_t size,
                         char *msg, size_t msg_size)
{
    json_t *node = ck__read_object(ctx, ck_kind_with_role(CK_KIND_ROLE_NODE), "", node_name,
                                   &(struct ck_err){0});
    const char *address = ck__node_internal_ip(node);
    json_int_t port = json_integer_value(json_object_get(
        json_object_get(json_object_get(json_object_get(node, "status"), "daemonEndpoints"),
                        "kubeletEndpoint"),
        "Port"));
    int r = 0;
    if (!address || port <= 0 || port > 65535) {
        snprintf(msg, msg_size, "the node agent of %s cannot be reached: no address", node_name);
        r = -1;
    } else {
        snprintf(buf, size, "https://%s:%d", address, (int)port);
    }
    json_decref(node);
    return r;
}

enum ck__res ck__serve_pod_log(struct ck_apiserver *ctx, struct ck__req *req,
                               const struct ck__target *t)
{
    struct ck_err err = {0};
    json_t *pod = ck__read_object(ctx, t->kind, t->namespace, t->name, &err);
    if (!pod)
        return err.code ? ck__fail(req, &err) : ck__fail_no_memory(req);
    const json_t *spec = json_object_get(pod, "spec");
    char node_name[254];
    snprintf(node_name, sizeof(node_name), "%s",
             json_string_value(json_object_get(spec, "nodeName")) ?: "");
    const char *container = ck__query(req, "container");
    if (!container || !*container) {
        const json_t *cs = json_object_get(spec, "containers");
        if (json_array_size(cs) != 1) {
            char msg[600];
            snprintf(msg, sizeof(msg),
                     "a container name must be specified for pod %s, choose one of: %s", t->name,
                     "the pod's containers");
            json_decref(pod);
            return ck__fail_with(req, "BadRequest", msg);
        }
        container = json_string_value(json_object_get(json_array_get(cs, 0), "name"));
    }
    char container_name[254];
    snprintf(container_name, sizeof(container_name), "%s", container ? container : "");
    char msg[600];
    if (!*node_name) {
        snprintf(msg, sizeof(msg), "pod %s does not have a host assigned", t->name);
        json_decref(pod);
        return ck__fail_with(req, "BadRequest", msg);
    }
    char base[300];
    if (ck__kubelet_base_url(ctx, node_name, base, sizeof(base), msg, sizeof(msg)) < 0) {
        json_decref(pod);
        return ck__fail_with(req, "ServiceUnavailable", msg);
    }
    /* the URL: every value escaped */
    CURL *curl = curl_easy_init();
    char url[2048];
    int n = 0;
    char *ens = curl ? curl_easy_escape(curl, t->namespace, 0) : NULL;
    char *epod = curl ? curl_easy_escape(curl, t->name, 0) : NULL;
    char *ectr = curl ? curl_easy_escape(curl, container_name, 0) : NULL;
    if (ens && epod && ectr)
        n = snprintf(url, sizeof(url), "%s/containerLogs/%s/%s/%s?", base, ens, epod, ectr);
    curl_free(ens);
    curl_free(epod);
    curl_free(ectr);
    static const char *const options[] = {"follow",     "previous",     "tailLines", "timestamps",
                                          "limitBytes", "sinceSeconds", "sinceTime"};
    for (size_t i = 0; curl && n > 0 && i < sizeof(options) / sizeof(options[0]); i++) {
        const char *v = ck__query(req, options[i]);
        char *ev = v ? curl_easy_escape(curl, v, 0) : NULL;
        if (ev && n < (int)sizeof(url))
            n += snprintf(url + n, sizeof(url) - (size_t)n, "%s=%s&", options[i], ev);
        curl_free(ev);
    }
    json_decref(pod);
    int fds[2] = {-1, -1};
    struct proxy *p = calloc(1, sizeof(*p));
    if (!curl || n <= 0 || n >= (int)sizeof(url) || !p || pipe2(fds, O_CLOEXEC) < 0) {
        if (curl)
            curl_easy_cleanup(curl);
        free(p);
        return ck__fail_no_memory(req);
    }
    p->curl = curl;
    p->fd = fds[1];
    p->refs = 2;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, p);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, p->err);
    ck__kubelet_curl_tls(ctx, curl);
    pthread_t thread;
    if (pthread_create(&thread, NULL, proxy_main, p) != 0) {
        close(fds[0]);
        close(fds[1]);
        curl_easy_cleanup(curl);
        free(p);
        return ck__fail_no_memory(req);
    }
    pthread_detach(thread);
    pthread_mutex_lock(&p->lock);
    while (p->status == 0)
        pthread_cond_wait(&p->cond, &p->lock);
    long status = p->status;
    if (status == 200) {
        pthread_mutex_unlock(&p->lock);
        proxy_release(p);
        struct MHD_Response *resp = MHD_create_response_from_pipe(fds[0]);
        if (!resp) {
            close(fds[0]);
            return ck__fail_no_memory(req);
        }
        MHD_add_response_header(resp, "Content-Type", "text/plain");
        return ck__req_mhd_queue(req, 200, resp);
    }
    while (p->curl) /* the transfer ends; then p is ours */
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    close(fds[0]);
    if (status < 0)
        snprintf(msg, sizeof(msg), "the node agent of %s cannot be reached: %s", node_name,
                 p->err[0] ? p->err : "no answer");
    else
        snprintf(msg, sizeof(msg), "%.*s", (int)strcspn(p->first, "\n"), p->first);
    proxy_release(p);
    return ck__fail_with(req, status < 0 ? "ServiceUnavailable" : "BadRequest", msg);
}
