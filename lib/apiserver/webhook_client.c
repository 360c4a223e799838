/*
 * webhook_client.c - the API server as a client of webhooks: the admission webhooks
 * (admission/webhook.c) and the conversion webhooks of custom resources
 * (conversion.c) post a review to a WebhookClientConfig through here.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/util/webhook (client.go, the ClientManager's
 * HookClient: a url, or a service reached as <service>.<namespace>.svc, trusting the
 * caBundle) with pkg/util/proxy's service resolution, and keeps Kubernetes' words for a
 * failed call (`failed to call webhook: Post "...": ...`). The call is a POST of JSON over
 * HTTPS with libcurl, to the url, or for a service to the first ready address of the
 * service's EndpointSlices at the target port of the service port the config names
 * (default 443), with the TLS name <service>.<namespace>.svc; the caBundle (else the
 * system's CAs) is the only trust. The url gets `?timeout=<n>s`, the deadline the client
 * gives, and an answer beyond RESPONSE_MAX bytes is a failed call.
 *
 * Threading: reads the store and calls out; no state of its own except libcurl's global
 * init (once), so it runs on any request thread at once (easy handles are per call).
 *
 * Tested through its callers: tests/apiserver/test_webhook.c, test_crd_conversion.c.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define RESPONSE_MAX (3 << 20) /* an answer beyond this is a failed call */

size_t ck__curl_body_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct ck__curl_body *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > b->max) {
        b->too_big = true;
        return 0;
    }
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, ptr, n);
    b->len += n;
    grown[b->len] = '\0';
    b->data = grown;
    return n;
}

static int collect(const json_t *obj, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

void ck__curl_setup(void *curl, const char *protocols, struct curl_slist *headers,
                    struct ck__curl_body *answer, char *errbuf)
{
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ck__curl_body_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
}

static const json_t *labels_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

int ck__service_target(struct ck__registry *reg, const json_t *svc, char *url, size_t url_size,
                       char *resolve, size_t resolve_size, struct ck__webhook_why *why)
{
    resolve[0] = '\0';
    const char *ns = json_string_value(json_object_get(svc, "namespace"));
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *path = json_string_value(json_object_get(svc, "path"));
    json_int_t port = json_is_integer(json_object_get(svc, "port"))
                          ? json_integer_value(json_object_get(svc, "port"))
                          : 443;
    if (!ns || !name) {
        snprintf(why->text, sizeof(why->text), "webhook has no service name");
        return CK_EINVAL;
    }
    const struct ck_kind *sk = ck_kind_lookup("", "v1", "services");
    const struct ck_kind *ek = ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
    json_t *service = NULL;
    struct ck_err err = {0};
    if (!sk || !ek || ck__admission_get(reg, sk, ns, name, &service, &err) < 0) {
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" not found", ns, name);
        ck_err_release(&err);
        return CK_EINVAL;
    }
    /* the service port the webhook names, and its name for the slices' ports */
    const char *port_name = NULL;
    bool found = false;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(json_object_get(service, "spec"), "ports"), i, p)
    {
        if (json_integer_value(json_object_get(p, "port")) == port) {
            port_name = json_string_value(json_object_get(p, "name"));
            found = true;
            break;
        }
    }
    char name_copy[64];
    snprintf(name_copy, sizeof(name_copy), "%s", port_name ? port_name : "");
    json_decref(service);
    if (!found) {
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" has no port %lld", ns, name,
                 (long long)port);
        return CK_EINVAL;
    }
    json_t *slices = json_array();
    if (!slices || ck__admission_list(reg, ek, ns, collect, slices, &err) < 0) {
        ck_err_release(&err);
        json_decref(slices);
        snprintf(why->text, sizeof(why->text), "cannot list the endpoints of \"%s/%s\"", ns, name);
        return CK_EINVAL;
    }
    const char *addr = NULL;
    long long target = 0;
    const json_t *slice;
    json_array_foreach(slices, i, slice)
    {
        const json_t *labels = labels_of(slice);
        const char *owner =
            json_string_value(json_object_get(labels, "kubernetes.io/service-name"));
        if (!owner || strcmp(owner, name) != 0)
            continue;
        size_t j;
        const json_t *sp;
        target = 0;
        json_array_foreach(json_object_get(slice, "ports"), j, sp)
        {
            const char *pn = json_string_value(json_object_get(sp, "name"));
            if (strcmp(pn ? pn : "", name_copy) == 0)
                target = json_integer_value(json_object_get(sp, "port"));
        }
        if (!target)
            continue;
        const json_t *ep;
        json_array_foreach(json_object_get(slice, "endpoints"), j, ep)
        {
            const json_t *ready = json_object_get(json_object_get(ep, "conditions"), "ready");
            const char *first =
                json_string_value(json_array_get(json_object_get(ep, "addresses"), 0));
            if (first && !json_is_false(ready)) {
                addr = first;
                break;
            }
        }
        if (addr)
            break;
    }
    if (!addr) {
        json_decref(slices);
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" has no ready endpoint", ns, name);
        return CK_EINVAL;
    }
    snprintf(url, url_size, "https://%s.%s.svc:%lld%s", name, ns, target, path ? path : "");
    bool v6 = strchr(addr, ':') != NULL;
    snprintf(resolve, resolve_size, "%s.%s.svc:%lld:%s%s%s", name, ns, target, v6 ? "[" : "", addr,
             v6 ? "]" : "");
    json_decref(slices);
    return 0;
}

/*
 * The base URL to post to (no query), and for a service the name and address to
 * connect to instead (curl's --resolve entry). 0, or CK_EINVAL with why filled.
 */
static int resolve_target(struct ck__registry *reg, const json_t *cc, char *url, size_t url_size,
                          char *resolve, size_t resolve_size, struct ck__webhook_why *why)
{
    const char *u = json_string_value(json_object_get(cc, "url"));
    if (u) {
        resolve[0] = '\0';
        snprintf(url, url_size, "%s", u);
        return 0;
    }
    return ck__service_target(reg, json_object_get(cc, "service"), url, url_size, resolve,
                              resolve_size, why);
}

/* libcurl's global state, made once before the first call from any thread. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ck__webhook_post(struct ck__registry *reg, const json_t *cc, long timeout,
                     const json_t *request, const char *what, json_t **ret_answer,
                     struct ck__webhook_why *why)
{
    *ret_answer = NULL;
    char base[1024], resolve[512], url[1100], errbuf[CURL_ERROR_SIZE] = "";
    if (resolve_target(reg, cc, base, sizeof(base), resolve, sizeof(resolve), why) < 0)
        return CK_EINVAL;
    /* the client tells the server its deadline, as client-go's request.Timeout does */
    snprintf(url, sizeof(url), "%s%stimeout=%lds", base, strchr(base, '?') ? "&" : "?", timeout);
    char *body = json_dumps(request, JSON_COMPACT);
    const char *ca64 = json_string_value(json_object_get(cc, "caBundle"));
    size_t ca_len = 0;
    char *ca = ca64 && *ca64 ? ck_base64_decode(ca64, &ca_len) : NULL;
    pthread_once(&curl_once, curl_init_once);
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = NULL, *resolves = NULL;
    struct ck__curl_body answer = {.max = RESPONSE_MAX};
    int r = CK_EINVAL;
    if (!body || !curl || (ca64 && *ca64 && !ca)) {
        snprintf(why->text, sizeof(why->text), "%s",
                 ca64 && *ca64 && !ca ? "caBundle is not base64" : "out of memory");
        goto out;
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json, */*");
    ck__curl_setup(curl, "https", headers, &answer, errbuf);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout * 1000L);
    if (ca) {
        struct curl_blob blob = {.data = ca, .len = ca_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (*resolve) {
        resolves = curl_slist_append(NULL, resolve);
        curl_easy_setopt(curl, CURLOPT_RESOLVE, resolves);
    }
    CURLcode cr = curl_easy_perform(curl);
    if (cr != CURLE_OK) {
        snprintf(why->text, sizeof(why->text), "failed to call webhook: Post \"%s\": %s", url,
                 answer.too_big ? "response body too large"
                 : *errbuf      ? errbuf
                                : curl_easy_strerror(cr));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        snprintf(why->text, sizeof(why->text),
                 "failed to call webhook: an error on the server (\"%.200s\") has prevented the "
                 "request from succeeding",
                 answer.data ? answer.data : "");
        goto out;
    }
    json_error_t jerr;
    *ret_answer = answer.data ? json_loadb(answer.data, answer.len, 0, &jerr) : NULL;
    if (!json_is_object(*ret_answer)) {
        json_decref(*ret_answer);
        *ret_answer = NULL;
        snprintf(why->text, sizeof(why->text),
                 "received invalid webhook response: the response is not an %s", what);
        goto out;
    }
    r = 0;
out:
    curl_slist_free_all(resolves);
    curl_slist_free_all(headers);
    if (curl)
        curl_easy_cleanup(curl);
    free(answer.data);
    free(ca);
    free(body);
    return r;
}
