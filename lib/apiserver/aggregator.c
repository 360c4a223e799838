/*
 * aggregator.c - API aggregation: APIServices name the server of a group/version, the
 * API server itself (local) or a Service it proxies requests to (remote).
 *
 * Mirrors kube-aggregator 1.32 (staging/src/k8s.io/kube-aggregator):
 * - autoregister (pkg/controllers/autoregister, with kube-apiserver's
 *   apiVersionPriorities and the crdregistration controller): one local APIService per
 *   group/version the server serves, named version.group ("v1." for the core group),
 *   with Kubernetes' group and version priorities; a custom resource's group/version
 *   gets 1000/100. Those of custom resources carry the label
 *   kube-aggregator.kubernetes.io/automanaged "true" and go when their version does;
 *   the built-in ones "onstart". A group/version not in the table and not a custom
 *   resource's gets none, as makeAPIService skips it.
 * - the remote availability controller (pkg/controllers/status/remote): every
 *   APIService with a spec.service is checked - the Service exists (ServiceNotFound),
 *   a ClusterIP one has the port (ServicePortError), it has EndpointSlices
 *   (EndpointsNotFound) with a ready endpoint serving that port (MissingEndpoints), and
 *   GET /apis/<group>/<version> answers 2xx within 5 s over TLS that is not verified, as
 *   system:kube-aggregator in system:masters (FailedDiscoveryCheck) - and its Available
 *   condition written when it changes (Passed, "all checks passed"); the local one
 *   (pkg/controllers/status/local) marks an APIService without a service Available
 *   (Local), as one whose service was dropped.
 * - the proxy (pkg/apiserver/handler_proxy.go): a request under /apis/<group>/<version>
 *   of a remote APIService goes to its Service (the first ready endpoint, with the TLS
 *   name <service>.<namespace>.svc) verified with the caBundle (the system's CAs
 *   without one; nothing with insecureSkipTLSVerify), presenting the front-proxy client
 *   certificate (--proxy-client-cert-file) and naming the caller in X-Remote-User,
 *   X-Remote-Group and X-Remote-Extra-*; an APIService that is not Available answers
 *   503 "service unavailable".
 * - discovery (pkg/apiserver/apis.go, handler_discovery.go): /apis lists the remote
 *   groups, and aggregated discovery the resources each backend's discovery document
 *   listed at the last check (freshness Stale once a check fails).
 *
 * Where ckube differs (docs/differences.md): the checks run every CHECK_INTERVAL
 * seconds rather than on every change; a group/version the server serves itself is
 * never proxied, whatever APIService names it, but for the built-in metrics.k8s.io:
 * it has a local APIService (Kubernetes has metrics-server's alone), and while an
 * APIService of that name has a service, that service serves it (requests and
 * discovery) as metrics-server would; requests are relayed whole (no upgrades:
 * upstream_proxy.c).
 *
 * Threading: one thread of its own runs the passes (autoregister, then the checks) and
 * is the only writer of the discovery cache, which the request threads read under
 * a->lock. The proxy runs on the request's worker and reads the store.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define CHECK_INTERVAL  5 /* seconds between passes */
#define CHECK_TIMEOUT   5L
#define DISCOVERY_MAX   (1 << 20)
#define AUTOMANAGED     "kube-aggregator.kubernetes.io/automanaged"
#define CRD_GROUP_PRIO  1000
#define CRD_VERSION_PRI 100
/* the built-in metrics.k8s.io, with the priorities of metrics-server's APIService */
#define REPLACEABLE_GROUP      "metrics.k8s.io"
#define REPLACEABLE_VERSION    "v1beta1"
#define REPLACEABLE_GROUP_PRIO 100
#define REPLACEABLE_VERSION_PR 100

struct ck__aggregator {
    struct ck_apiserver *server;
    char *cert_file, *key_file; /* the front-proxy client certificate, or NULL */
    pthread_t thread;
    bool started, stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /*
     * name -> {group, version, groupPriorityMinimum, versionPriority, available,
     * resources}: the remote APIServices at the last pass; resources is the backend's
     * last APIResourceList "resources", or absent. Under lock.
     */
    json_t *remote;
};

/* kube-apiserver's apiVersionPriorities (pkg/controlplane/apiserver, cmd/kube-apiserver). */
static const struct priority {
    const char *group, *version;
    int group_priority, version_priority;
} priorities[] = {
    {"", "v1", 18000, 1},
    {"apiregistration.k8s.io", "v1", 18000, 15},
    {"apps", "v1", 17800, 15},
    {"events.k8s.io", "v1", 17750, 15},
    {"authentication.k8s.io", "v1", 17700, 15},
    {"authorization.k8s.io", "v1", 17600, 15},
    {"autoscaling", "v1", 17500, 15},
    {"autoscaling", "v2", 17500, 30},
    {"batch", "v1", 17400, 15},
    {"certificates.k8s.io", "v1", 17300, 15},
    {"networking.k8s.io", "v1", 17200, 15},
    {"policy", "v1", 17100, 15},
    {"rbac.authorization.k8s.io", "v1", 17000, 15},
    {"storage.k8s.io", "v1", 16800, 15},
    {"apiextensions.k8s.io", "v1", 16700, 15},
    {"admissionregistration.k8s.io", "v1", 16700, 15},
    {"scheduling.k8s.io", "v1", 16600, 15},
    {"coordination.k8s.io", "v1", 16500, 15},
    {"node.k8s.io", "v1", 16300, 15},
    {"discovery.k8s.io", "v1", 16200, 15},
    {"flowcontrol.apiserver.k8s.io", "v1", 16100, 21},
};

#define DIG(o, ...) dig(o, __VA_ARGS__, (const char *)NULL)
#define STR(o, ...) json_string_value(DIG(o, __VA_ARGS__))
#define INT(o, ...) ((long long)json_integer_value(DIG(o, __VA_ARGS__)))

/* o[k1][k2]..., the keys NULL-terminated; NULL where one is missing. Borrowed. */
static const json_t *dig(const json_t *o, ...)
{
    va_list ap;
    va_start(ap, o);
    for (const char *k = va_arg(ap, const char *); o && k; k = va_arg(ap, const char *))
        o = json_object_get(o, k);
    va_end(ap);
    return o;
}

static const struct ck_kind *apiservice_kind(void)
{
    return ck_kind_with_role(CK_KIND_ROLE_API_SERVICE);
}

/* ---- paths -------------------------------------------------------------- */

/*
 * The built-in group/versions an APIService with a service takes over: metrics.k8s.io,
 * which Kubernetes serves only through metrics-server's APIService.
 */
bool ck__replaceable_group_version(const char *group, const char *version)
{
    return strcmp(group, REPLACEABLE_GROUP) == 0 && strcmp(version, REPLACEABLE_VERSION) == 0;
}

bool ck__serves_group_version(const char *group, const char *version)
{
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i]->group, group) == 0 && strcmp(kinds[i]->version, version) == 0)
            return true;
    return false;
}

int ck__aggregated_path(const char *url, struct ck__aggregated_request *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (strncmp(url, "/apis/", 6) != 0)
        return CK_ENOENT;
    /* the segments after /apis/: group, version, then the resource path */
    char *segs[8];
    size_t n = 0;
    char copy[1024];
    if (snprintf(copy, sizeof(copy), "%s", url + 6) >= (int)sizeof(copy))
        return CK_ENOENT;
    for (char *save = NULL, *s = strtok_r(copy, "/", &save); s && n < 8;
         s = strtok_r(NULL, "/", &save))
        segs[n++] = s;
    if (n < 2 || strlen(segs[0]) >= sizeof(ret->group) || strlen(segs[1]) >= sizeof(ret->version) ||
        (ck__serves_group_version(segs[0], segs[1]) &&
         !ck__replaceable_group_version(segs[0], segs[1])))
        return CK_ENOENT;
    snprintf(ret->group, sizeof(ret->group), "%s", segs[0]);
    snprintf(ret->version, sizeof(ret->version), "%s", segs[1]);
    /* apiserver's RequestInfoFactory: [namespaces/<ns>/]<resource>[/<name>[/<sub>]] */
    size_t at = 2;
    if (n > at + 2 && strcmp(segs[at], "namespaces") == 0) {
        snprintf(ret->namespace, sizeof(ret->namespace), "%s", segs[at + 1]);
        at += 2;
    } else if (n > at && strcmp(segs[at], "namespaces") == 0 && n > at + 1) {
        snprintf(ret->namespace, sizeof(ret->namespace), "%s", segs[at + 1]);
    }
    if (n > at)
        snprintf(ret->resource, sizeof(ret->resource), "%s", segs[at]);
    if (n > at + 1)
        snprintf(ret->name, sizeof(ret->name), "%s", segs[at + 1]);
    if (n > at + 2)
        snprintf(ret->subresource, sizeof(ret->subresource), "%s", segs[at + 2]);
    return 0;
}

/* ---- autoregister --------------------------------------------------------- */

static json_t *local_apiservice(const char *group, const char *version, int gp, int vp,
                                const char *managed)
{
    char name[CK_API_VERSION_MAX + 2];
    snprintf(name, sizeof(name), "%s.%s", version, group);
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s, s:i, s:i}}", "apiVersion",
                     "apiregistration.k8s.io/v1", "kind", "APIService", "metadata", "name", name,
                     "labels", AUTOMANAGED, managed, "spec", "group", group, "version", version,
                     "groupPriorityMinimum", gp, "versionPriority", vp);
}

static void ensure_local(struct ck__registry *reg, const struct ck_kind *ak, json_t *obj)
{
    const char *name = STR(obj, "metadata", "name");
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = ck__registry_get(reg, ak, NULL, name, &kv, &err);
    ck_kv_unref(kv);
    ck_err_release(&err);
    if (r != CK_ENOENT)
        return;
    char *out = NULL;
    size_t len = 0;
    struct ck_err cerr = {0};
    r = ck__registry_create(reg, ak, NULL, obj, false, &out, &len, &cerr);
    if (r < 0 && r != CK_EEXIST)
        CK_LOGW("cannot create the APIService %s: %s", name, ck_err_message(&cerr));
    free(out);
    ck_err_release(&cerr);
}

/* The local APIServices of what the server serves; the stale custom-resource ones go. */
static void autoregister(struct ck__registry *reg, const struct ck_kind *ak, const json_t *existing)
{
    json_t *wanted = json_object();
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; wanted && i < n; i++) {
        const struct ck_kind *k = kinds[i];
        char name[CK_API_VERSION_MAX + 2];
        snprintf(name, sizeof(name), "%s.%s", k->version, k->group);
        if (json_object_get(wanted, name))
            continue;
        json_t *obj = NULL;
        if (k->schemas) {
            obj = local_apiservice(k->group, k->version, CRD_GROUP_PRIO, CRD_VERSION_PRI, "true");
        } else {
            for (size_t p = 0; p < sizeof(priorities) / sizeof(priorities[0]); p++)
                if (strcmp(priorities[p].group, k->group) == 0 &&
                    strcmp(priorities[p].version, k->version) == 0)
                    obj = local_apiservice(k->group, k->version, priorities[p].group_priority,
                                           priorities[p].version_priority, "onstart");
            if (ck__replaceable_group_version(k->group, k->version))
                obj = local_apiservice(k->group, k->version, REPLACEABLE_GROUP_PRIO,
                                       REPLACEABLE_VERSION_PR, "onstart");
        }
        if (!obj)
            continue;
        if (!json_object_get(existing, name))
            ensure_local(reg, ak, obj);
        json_object_set_new(wanted, name, obj);
    }
    const char *name;
    json_t *obj;
    json_object_foreach((json_t *)existing, name, obj)
    {
        const char *managed = STR(obj, "metadata", "labels", AUTOMANAGED);
        if (!wanted || json_object_get(wanted, name) || !managed || strcmp(managed, "true") != 0 ||
            json_is_object(DIG(obj, "spec", "service")))
            continue;
        struct ck__delete_options opts = {0};
        char *out = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        if (ck__registry_delete(reg, ak, NULL, name, &opts, &out, &len, &err) < 0 &&
            err.code != CK_ENOENT)
            CK_LOGW("cannot delete the APIService %s: %s", name, ck_err_message(&err));
        free(out);
        ck_err_release(&err);
    }
    json_decref(wanted);
}

/* ---- availability ---------------------------------------------------------- */

struct availability {
    const char *status, *reason;
    char message[4096];
    json_t *resources; /* the backend's, when its discovery document was read */
};

static int collect(const json_t *obj, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

/* The front-proxy identity headers of a user (transport.SetAuthProxyHeaders). */
static struct curl_slist *identity_headers(struct curl_slist *list, const char *user,
                                           char *const *groups, size_t n_groups,
                                           const json_t *extra)
{
    char line[1200];
    snprintf(line, sizeof(line), "X-Remote-User: %s", user);
    list = curl_slist_append(list, line);
    for (size_t i = 0; list && i < n_groups; i++) {
        snprintf(line, sizeof(line), "X-Remote-Group: %s", groups[i]);
        list = curl_slist_append(list, line);
    }
    const char *key;
    const json_t *values;
    json_object_foreach((json_t *)extra, key, values)
    {
        /* the key path-escaped, as url.PathEscape does */
        char escaped[600];
        size_t o = 0;
        for (const char *p = key; *p && o + 4 < sizeof(escaped); p++) {
            unsigned char c = (unsigned char)*p;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                strchr("-._~!$&'()*+,;=:@", c))
                escaped[o++] = (char)c;
            else
                o += (size_t)snprintf(escaped + o, sizeof(escaped) - o, "%%%02X", c);
        }
        escaped[o] = '\0';
        size_t i;
        const json_t *v;
        json_array_foreach(values, i, v)
        {
            snprintf(line, sizeof(line), "X-Remote-Extra-%s: %s", escaped, json_string_value(v));
            if (list)
                list = curl_slist_append(list, line);
        }
    }
    return list;
}

/* GET the backend's /apis/<group>/<version>: the availability check's last step. */
static void discovery_check(struct ck__aggregator *a, const json_t *ref, const char *group,
                            const char *version, struct availability *av)
{
    char path[400], url[1400], resolve[512], errbuf[CURL_ERROR_SIZE] = "";
    struct ck__webhook_why why;
    json_t *target = json_deep_copy(ref);
    snprintf(path, sizeof(path), "/apis/%s/%s", group, version);
    if (!target || json_object_set_new(target, "path", json_string(path)) < 0 ||
        ck__service_target(a->server->registry, target, url, sizeof(url), resolve, sizeof(resolve),
                           &why) < 0) {
        json_decref(target);
        av->status = "False";
        av->reason = "FailedDiscoveryCheck";
        snprintf(av->message, sizeof(av->message), "failing or missing response from %s: %s", path,
                 target ? why.text : "out of memory");
        return;
    }
    json_decref(target);
    static char *const masters[] = {"system:masters"};
    CURL *curl = curl_easy_init();
    struct curl_slist *headers =
        identity_headers(curl_slist_append(NULL, "Accept: application/json, */*"),
                         "system:kube-aggregator", masters, 1, NULL);
    struct curl_slist *resolves = curl_slist_append(NULL, resolve);
    struct ck__curl_body answer = {.max = DISCOVERY_MAX};
    CURLcode cr = CURLE_OUT_OF_MEMORY;
    long status = 0;
    if (curl && headers && resolves) {
        ck__curl_setup(curl, "https", headers, &answer, errbuf);
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_RESOLVE, resolves);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT, CHECK_TIMEOUT);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
        if (a->cert_file) {
            curl_easy_setopt(curl, CURLOPT_SSLCERT, a->cert_file);
            curl_easy_setopt(curl, CURLOPT_SSLKEY, a->key_file);
        }
        cr = curl_easy_perform(curl);
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    }
    if (cr != CURLE_OK) {
        av->status = "False";
        av->reason = "FailedDiscoveryCheck";
        snprintf(av->message, sizeof(av->message),
                 "failing or missing response from %s: Get \"%s\": %s", url, url,
                 *errbuf ? errbuf : curl_easy_strerror(cr));
    } else if (status < 200 || status >= 300) {
        av->status = "False";
        av->reason = "FailedDiscoveryCheck";
        snprintf(av->message, sizeof(av->message),
                 "failing or missing response from %s: bad status from %s: %ld", url, url, status);
    } else {
        json_t *doc = answer.data ? json_loadb(answer.data, answer.len, 0, NULL) : NULL;
        json_t *resources = json_object_get(doc, "resources");
        av->resources = json_is_array(resources) ? json_incref(resources) : NULL;
        json_decref(doc);
    }
    curl_slist_free_all(resolves);
    curl_slist_free_all(headers);
    if (curl)
        curl_easy_cleanup(curl);
    free(answer.data);
}

/* Whether a slice of the service has a ready endpoint and a port named port_name. */
static bool has_available_endpoint(const json_t *slices, const char *port_name)
{
    size_t i;
    const json_t *s;
    json_array_foreach(slices, i, s)
    {
        bool ready = false, port = false;
        size_t j;
        const json_t *e;
        json_array_foreach(json_object_get(s, "endpoints"), j, e)
        {
            const json_t *r = DIG(e, "conditions", "ready");
            ready |= !r || json_is_true(r);
        }
        json_array_foreach(json_object_get(s, "ports"), j, e)
        {
            const char *name = STR(e, "name");
            port |= name && strcmp(name, port_name) == 0 && json_object_get(e, "port");
        }
        if (ready && port)
            return true;
    }
    return false;
}

/* The checks of the remote availability controller's sync, in its order. */
static void check(struct ck__aggregator *a, const json_t *apiservice, struct availability *av)
{
    struct ck__registry *reg = a->server->registry;
    const json_t *ref = DIG(apiservice, "spec", "service");
    const char *ns = STR(ref, "namespace"), *name = STR(ref, "name");
    const json_t *port_value = json_object_get(ref, "port");
    long long port = json_is_integer(port_value) ? json_integer_value(port_value) : 443;
    ns = ns ? ns : "";
    name = name ? name : "";
    av->status = "True";
    av->reason = "Passed";
    snprintf(av->message, sizeof(av->message), "all checks passed");
    const struct ck_kind *sk = ck_kind_with_role(CK_KIND_ROLE_SERVICE);
    const struct ck_kind *ek = ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
    json_t *service = NULL;
    struct ck_err err = {0};
    if (!sk || ck__admission_get(reg, sk, ns, name, &service, &err) < 0) {
        bool missing = !sk || err.code == CK_ENOENT;
        av->status = missing ? "False" : "Unknown";
        av->reason = missing ? "ServiceNotFound" : "ServiceAccessError";
        if (missing)
            snprintf(av->message, sizeof(av->message), "service/%s in \"%s\" is not present", name,
                     ns);
        else
            snprintf(av->message, sizeof(av->message),
                     "service/%s in \"%s\" cannot be checked due to: %s", name, ns,
                     ck_err_message(&err));
        ck_err_release(&err);
        return;
    }
    const char *type = STR(service, "spec", "type");
    if (!type || strcmp(type, "ClusterIP") == 0) {
        char port_name[64] = "";
        bool found = false;
        size_t i;
        const json_t *p;
        json_array_foreach(DIG(service, "spec", "ports"), i, p)
        {
            if (json_integer_value(json_object_get(p, "port")) != port)
                continue;
            const char *pn = STR(p, "name");
            snprintf(port_name, sizeof(port_name), "%s", pn ? pn : "");
            found = true;
            break;
        }
        json_t *slices = json_array(), *own = json_array();
        if (!found) {
            av->status = "False";
            av->reason = "ServicePortError";
            snprintf(av->message, sizeof(av->message),
                     "service/%s in \"%s\" is not listening on port %lld", name, ns, port);
        } else if (!ek || !slices || !own ||
                   ck__admission_list(reg, ek, ns, collect, slices, &err) < 0) {
            av->status = "Unknown";
            av->reason = "EndpointsAccessError";
            snprintf(av->message, sizeof(av->message),
                     "service/%s in \"%s\" cannot be checked due to: %s", name, ns,
                     ck_err_message(&err));
        } else {
            const json_t *s;
            json_array_foreach(slices, i, s)
            {
                const json_t *labels = DIG(s, "metadata", "labels");
                const char *owner =
                    json_string_value(json_object_get(labels, "kubernetes.io/service-name"));
                if (owner && strcmp(owner, name) == 0)
                    json_array_append(own, (json_t *)s);
            }
            if (json_array_size(own) == 0) {
                av->status = "False";
                av->reason = "EndpointsNotFound";
                snprintf(av->message, sizeof(av->message),
                         "cannot find endpointslices for service/%s in \"%s\"", name, ns);
            } else if (!has_available_endpoint(own, port_name)) {
                av->status = "False";
                av->reason = "MissingEndpoints";
                snprintf(av->message, sizeof(av->message),
                         "endpointslices for service/%s in \"%s\" have no addresses with port "
                         "name \"%s\"",
                         name, ns, port_name);
            }
        }
        ck_err_release(&err);
        json_decref(slices);
        json_decref(own);
    }
    json_decref(service);
    if (strcmp(av->status, "True") != 0)
        return;
    const char *group = STR(apiservice, "spec", "group");
    const char *version = STR(apiservice, "spec", "version");
    discovery_check(a, ref, group ? group : "", version ? version : "", av);
}

/* Sets the Available condition; its transition time moves only when its status does. */
static json_t *set_available(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct availability *av = arg;
    json_t *next = ck__json_copy(current);
    if (!next || ck__json_set_condition(next, "Available", av->status, av->reason, av->message,
                                        (long long)time(NULL)) < 0) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

/* Whether obj's Available condition already says what av says. */
static bool same_condition(const json_t *obj, const struct availability *av)
{
    size_t i;
    const json_t *c;
    json_array_foreach(DIG(obj, "status", "conditions"), i, c)
    {
        const char *type = STR(c, "type");
        if (!type || strcmp(type, "Available") != 0)
            continue;
        const char *s = STR(c, "status"), *r = STR(c, "reason");
        const char *m = STR(c, "message");
        return s && r && m && strcmp(s, av->status) == 0 && strcmp(r, av->reason) == 0 &&
               strcmp(m, av->message) == 0;
    }
    return false;
}

/* Writes av as obj's Available condition unless it already says so. */
static void write_available(struct ck__aggregator *a, const struct ck_kind *ak, const char *name,
                            const json_t *obj, struct availability *av)
{
    if (same_condition(obj, av))
        return;
    CK_LOGV(2, "changing APIService availability: %s %s %s %s", name, av->status, av->reason,
            av->message);
    char *out = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    if (ck__registry_update(a->server->registry, ak, NULL, name, "status", set_available, av, false,
                            &out, &len, &err) < 0)
        CK_LOGV(2, "cannot set the Available condition of APIService %s: %s", name,
                ck_err_message(&err));
    free(out);
    ck_err_release(&err);
}

static void check_remote(struct ck__aggregator *a, const struct ck_kind *ak, const char *name,
                         const json_t *obj, json_t *remote)
{
    struct availability av = {0};
    check(a, obj, &av);
    write_available(a, ak, name, obj, &av);
    const json_t *spec = json_object_get(obj, "spec");
    json_t *entry = json_pack(
        "{s:s, s:s, s:I, s:I, s:b}", "group", STR(spec, "group"), "version", STR(spec, "version"),
        "groupPriorityMinimum", (json_int_t)INT(spec, "groupPriorityMinimum"), "versionPriority",
        (json_int_t)INT(spec, "versionPriority"), "available", strcmp(av.status, "True") == 0);
    if (entry) {
        /* a failed check keeps the last resources the backend listed (Stale) */
        pthread_mutex_lock(&a->lock);
        json_t *last = json_object_get(json_object_get(a->remote, name), "resources");
        json_t *resources = av.resources ? av.resources : last;
        if (resources)
            json_object_set(entry, "resources", resources);
        pthread_mutex_unlock(&a->lock);
        json_object_set_new(remote, name, entry);
    }
    json_decref(av.resources);
}

/*
 * The local availability controller (pkg/controllers/status/local): an APIService without
 * a service (one whose service was dropped) is Available, reason Local.
 */
static void check_local(struct ck__aggregator *a, const struct ck_kind *ak, const char *name,
                        const json_t *obj)
{
    struct availability av = {.status = "True", .reason = "Local"};
    snprintf(av.message, sizeof(av.message), "Local APIServices are always available");
    write_available(a, ak, name, obj, &av);
}

static void pass(struct ck__aggregator *a)
{
    const struct ck_kind *ak = apiservice_kind();
    if (!ak)
        return;
    struct ck__registry *reg = a->server->registry;
    json_t *all = json_array(), *existing = json_object(), *remote = json_object();
    struct ck_err err = {0};
    if (!all || !existing || !remote || ck__admission_list(reg, ak, NULL, collect, all, &err) < 0) {
        ck_err_release(&err);
        goto out;
    }
    size_t i;
    json_t *obj;
    json_array_foreach(all, i, obj)
    {
        const char *name = STR(obj, "metadata", "name");
        if (name)
            json_object_set(existing, name, obj);
    }
    autoregister(reg, ak, existing);
    const char *name;
    json_object_foreach(existing, name, obj)
    {
        if (json_is_object(DIG(obj, "spec", "service")))
            check_remote(a, ak, name, obj, remote);
        else
            check_local(a, ak, name, obj);
    }
    pthread_mutex_lock(&a->lock);
    json_decref(a->remote);
    a->remote = remote;
    remote = NULL;
    pthread_mutex_unlock(&a->lock);
out:
    json_decref(remote);
    json_decref(existing);
    json_decref(all);
}

static void *aggregator_main(void *arg)
{
    struct ck__aggregator *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stop) {
        pthread_mutex_unlock(&a->lock);
        pass(a);
        pthread_mutex_lock(&a->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += CHECK_INTERVAL;
        while (!a->stop && pthread_cond_timedwait(&a->wake, &a->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

int ck__aggregator_start(struct ck_apiserver *server, const char *cert_file, const char *key_file,
                         struct ck_err *reterr)
{
    if (!cert_file != !key_file)
        return ck_err_set(reterr, CK_EINVAL,
                          "--proxy-client-cert-file and --proxy-client-key-file go together");
    struct ck__aggregator *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return ck_err_no_memory(reterr);
    a->server = server;
    a->cert_file = cert_file ? ck__strdup(cert_file) : NULL;
    a->key_file = key_file ? ck__strdup(key_file) : NULL;
    a->remote = json_object();
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->wake, NULL);
    server->aggregator = a;
    if ((cert_file && (!a->cert_file || !a->key_file)) || !a->remote)
        return ck_err_no_memory(reterr);
    if (pthread_create(&a->thread, NULL, aggregator_main, a) != 0)
        return ck_err_set(reterr, CK_EIO, "cannot start the APIService controller");
    a->started = true;
    return 0;
}

void ck__aggregator_stop(struct ck_apiserver *server)
{
    struct ck__aggregator *a = server->aggregator;
    if (!a)
        return;
    if (a->started) {
        pthread_mutex_lock(&a->lock);
        a->stop = true;
        pthread_cond_broadcast(&a->wake);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->thread, NULL);
    }
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    json_decref(a->remote);
    free(a->cert_file);
    free(a->key_file);
    free(a);
    server->aggregator = NULL;
}

/* ---- the proxy ------------------------------------------------------------ */

/* An answer as http.Error writes one: text/plain, the message and a line break. */
static enum ck__res plain_error(struct ck__req *req, unsigned status, const char *text)
{
    char body[256];
    int n = snprintf(body, sizeof(body), "%s\n", text);
    char *copy = ck__strdup(body);
    if (!copy)
        return ck__fail_no_memory(req);
    return ck__send_bytes(req, status, "text/plain; charset=utf-8", copy, (size_t)n, NULL);
}

static bool is_available(const json_t *obj)
{
    size_t i;
    const json_t *c;
    json_array_foreach(DIG(obj, "status", "conditions"), i, c)
    {
        const char *type = STR(c, "type"), *status = STR(c, "status");
        if (type && strcmp(type, "Available") == 0)
            return status && strcmp(status, "True") == 0;
    }
    return false;
}

bool ck__aggregator_serve(struct ck_apiserver *server, struct ck__req *req, const char *method,
                          const char *body, size_t len, const char *raw_uri, const char *url,
                          const struct ck_auth_user *user, enum ck__res *ret)
{
    struct ck__aggregated_request r;
    const struct ck_kind *ak = apiservice_kind();
    if (!server->aggregator || !ak || ck__aggregated_path(url, &r) < 0)
        return false;
    char name[sizeof(r.version) + sizeof(r.group) + 2];
    snprintf(name, sizeof(name), "%s.%s", r.version, r.group);
    json_t *obj = NULL;
    struct ck_err err = {0};
    int got = ck__admission_get(server->registry, ak, NULL, name, &obj, &err);
    ck_err_release(&err);
    const json_t *ref = DIG(obj, "spec", "service");
    if (got < 0 || !json_is_object(ref)) {
        json_decref(obj);
        return false; /* not aggregated: the server's own 404 */
    }
    if (!is_available(obj)) {
        json_decref(obj);
        *ret = plain_error(req, 503, "service unavailable");
        return true;
    }
    if (!user) {
        json_decref(obj);
        *ret = plain_error(req, 500, "missing user");
        return true;
    }
    char base[1400], resolve[512];
    struct ck__webhook_why why;
    if (ck__service_target(server->registry, ref, base, sizeof(base), resolve, sizeof(resolve),
                           &why) < 0) {
        CK_LOGV(2, "error resolving %s: %s", name, why.text);
        json_decref(obj);
        *ret = plain_error(req, 503, "service unavailable");
        return true;
    }
    size_t path_len = strcspn(raw_uri, "?");
    char target[4096];
    int n = snprintf(target, sizeof(target), "%s%.*s", base, (int)path_len, raw_uri);
    const char *ca64 = STR(obj, "spec", "caBundle");
    size_t ca_len = 0;
    char *ca = ca64 && *ca64 ? ck_base64_decode(ca64, &ca_len) : NULL;
    struct curl_slist *identity =
        identity_headers(NULL, user->name, user->groups, user->n_groups, user->extra);
    size_t n_lines = 0;
    for (struct curl_slist *l = identity; l; l = l->next)
        n_lines++;
    const char **lines = ck__calloc(n_lines + 1, sizeof(*lines));
    if (n < 0 || (size_t)n >= sizeof(target) || !identity || !lines) {
        *ret = ck__fail_no_memory(req);
        goto out;
    }
    n_lines = 0;
    for (struct curl_slist *l = identity; l; l = l->next)
        lines[n_lines++] = l->data;
    struct ck__upstream u = {
        .url = target,
        .query = raw_uri[path_len] == '?' ? raw_uri + path_len + 1 : NULL,
        .trust = json_is_true(DIG(obj, "spec", "insecureSkipTLSVerify")) ? CK__UPSTREAM_NO_VERIFY
                                                                         : CK__UPSTREAM_CA_BUNDLE,
        .ca_pem = ca,
        .ca_len = ca_len,
        .cert_file = server->aggregator->cert_file,
        .key_file = server->aggregator->key_file,
        .resolve = resolve,
        .headers = lines,
        .front_proxy = true,
    };
    *ret = ck__upstream_serve(server, req, method, body, len, &u);
out:
    free(lines);
    curl_slist_free_all(identity);
    free(ca);
    json_decref(obj);
    return true;
}

/* ---- discovery ------------------------------------------------------------ */

/* Highest group priority first, then highest version priority (apis.go's order). */
static int by_priority(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    long long gx = INT(x, "groupPriorityMinimum"), gy = INT(y, "groupPriorityMinimum");
    long long vx = INT(x, "versionPriority"), vy = INT(y, "versionPriority");
    return gx != gy ? (gx < gy) - (gx > gy) : (vx < vy) - (vx > vy);
}

/* The remote entries in priority order, as a new array. */
static json_t *sorted_remote(struct ck__aggregator *a)
{
    json_t *list = json_array();
    pthread_mutex_lock(&a->lock);
    const char *name;
    json_t *e;
    json_object_foreach(a->remote, name, e)
    {
        json_array_append(list, e);
    }
    pthread_mutex_unlock(&a->lock);
    ck__json_array_sort(list, by_priority);
    return list;
}

json_t *ck__aggregator_api_groups(struct ck_apiserver *server, json_t *doc)
{
    if (!doc || !server->aggregator)
        return doc;
    json_t *groups = json_object_get(doc, "groups");
    json_t *list = sorted_remote(server->aggregator);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *group = STR(e, "group"), *version = STR(e, "version");
        json_t *entry = ck__json_find(groups, "name", group);
        char gv[CK_API_VERSION_MAX];
        snprintf(gv, sizeof(gv), "%s/%s", group, version);
        if (entry && ck__json_find(json_object_get(entry, "versions"), "version", version))
            continue; /* a built-in group/version taken over: listed once */
        json_t *v = json_pack("{s:s, s:s}", "groupVersion", gv, "version", version);
        if (!entry) {
            entry = json_pack("{s:s, s:[], s:O}", "name", group, "versions", "preferredVersion", v);
            json_array_append_new(groups, entry);
        }
        json_array_append_new(json_object_get(entry, "versions"), v);
    }
    json_decref(list);
    return doc;
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* An APIResourceDiscovery from a backend's APIResource (and its subresources in list). */
static json_t *aggregated_resource(const json_t *r, const json_t *list)
{
    const char *name = STR(r, "name");
    json_t *e = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:O}", "resource", name,
                          "responseKind", "group", or_empty(STR(r, "group")), "version",
                          or_empty(STR(r, "version")), "kind", or_empty(STR(r, "kind")), "scope",
                          json_is_true(json_object_get(r, "namespaced")) ? "Namespaced" : "Cluster",
                          "singularResource", or_empty(STR(r, "singularName")), "verbs",
                          json_is_array(json_object_get(r, "verbs")) ? json_object_get(r, "verbs")
                                                                     : json_array());
    if (!e)
        return NULL;
    if (json_array_size(json_object_get(r, "shortNames")))
        json_object_set(e, "shortNames", json_object_get(r, "shortNames"));
    if (json_array_size(json_object_get(r, "categories")))
        json_object_set(e, "categories", json_object_get(r, "categories"));
    json_t *subs = json_array();
    size_t i;
    const json_t *s;
    size_t len = strlen(name);
    json_array_foreach(list, i, s)
    {
        const char *sname = STR(s, "name");
        if (!sname || strncmp(sname, name, len) != 0 || sname[len] != '/')
            continue;
        json_array_append_new(
            subs, json_pack("{s:s, s:{s:s, s:s, s:s}, s:O}", "subresource", sname + len + 1,
                            "responseKind", "group", or_empty(STR(s, "group")), "version",
                            or_empty(STR(s, "version")), "kind", or_empty(STR(s, "kind")), "verbs",
                            json_object_get(s, "verbs")));
    }
    if (json_array_size(subs))
        json_object_set_new(e, "subresources", subs);
    else
        json_decref(subs);
    return e;
}

/* The index of group's APIGroupDiscovery in items, or items' size. */
static size_t discovery_group(const json_t *items, const char *group)
{
    size_t i = 0;
    for (; i < json_array_size(items); i++) {
        const char *name = STR(json_array_get(items, i), "metadata", "name");
        if (name && group && strcmp(name, group) == 0)
            break;
    }
    return i;
}

json_t *ck__aggregator_discovery(struct ck_apiserver *server, json_t *doc)
{
    if (!doc || !server->aggregator)
        return doc;
    json_t *items = json_object_get(doc, "items");
    json_t *list = sorted_remote(server->aggregator);
    size_t i, j;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const json_t *resources = json_object_get(e, "resources");
        const char *group = STR(e, "group"), *version = STR(e, "version");
        size_t at = discovery_group(items, group);
        json_t *entry = json_array_get(items, at);
        if (entry) {
            /* a built-in group/version taken over: the backend's resources, not its own */
            json_t *versions = json_object_get(entry, "versions");
            for (j = json_array_size(versions); j-- > 0;) {
                const char *v = STR(json_array_get(versions, j), "version");
                if (v && version && strcmp(v, version) == 0)
                    json_array_remove(versions, j);
            }
            if (!resources && json_array_size(versions) == 0)
                json_array_remove(items, at);
        }
        if (!resources)
            continue;
        if (!entry) {
            entry = json_pack("{s:{s:s, s:n}, s:[]}", "metadata", "name", group,
                              "creationTimestamp", "versions");
            json_array_append_new(items, entry);
        }
        json_t *out = json_array();
        const json_t *r;
        json_array_foreach(resources, j, r)
        {
            const char *rname = STR(r, "name");
            if (rname && !strchr(rname, '/'))
                json_array_append_new(out, aggregated_resource(r, resources));
        }
        json_array_append_new(
            json_object_get(entry, "versions"),
            json_pack("{s:s, s:o, s:s}", "version", version, "resources", out, "freshness",
                      json_is_true(json_object_get(e, "available")) ? "Current" : "Stale"));
    }
    json_decref(list);
    return doc;
}
