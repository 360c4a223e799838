/*
 * cluster_dns.c - `ckube server`'s cluster DNS: the DNS server of lib/dns run in the
 * server's process (unless --disable-dns), and the objects a cluster's DNS add-on brings,
 * as kubeadm's CoreDNS add-on (cmd/kubeadm/app/phases/addons/dns) and k3s's coredns
 * manifest bring them:
 *
 *   - the Service kube-system/kube-dns (label k8s-app: kube-dns), cluster IP --cluster-dns
 *     (default the tenth address of --service-cluster-ip-range, kubeadm's GetDNSIP: 10.96.0.10),
 *     ports dns 53/UDP and dns-tcp 53/TCP; it selects no pods, as the DNS server is no pod:
 *   - an EndpointSlice per server, kube-dns-<advertise address with dashes>, listing the
 *     server's advertise address, where the DNS server listens (port 53, UDP and TCP), so
 *     the proxy sends the Service's traffic to the servers' DNS;
 *   - the ClusterRole system:ckube-dns (what kubeadm's system:coredns grants: list and watch
 *     of endpoints, services, pods, namespaces and endpointslices) bound to the user
 *     system:ckube-dns, whose client certificate the DNS server reads the cluster with.
 *
 * The objects are made once missing (an administrator's changes to the Service or the role
 * stay), through a client of the group system:masters (the add-on manager's part), on a
 * thread that tries each second until the server serves, then looks again every 10 s:
 * the server's EndpointSlice is written again when it differs or is gone, and the
 * kube-dns EndpointSlices of servers no longer live are deleted. A server is live while
 * the kubernetes Service's Endpoints list its address (the API servers' lease
 * reconciler drops a server 15 s after its last renewal), so a server that died stops
 * getting DNS queries within about 25 s. A clean stop deletes the server's own slice.
 */
#define _GNU_SOURCE /* asprintf */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/controllers.h"
#include "ckube/dns.h"
#include "ckube/internal/util.h"
#include "ckube/rest.h"
#include "controllers.h"
#include "node.h"

#define DNS_USER     "system:ckube-dns"
#define ADDONS_USER  "system:ckube-addons"
#define SLICE_PREFIX "kube-dns-"

struct ck_cmd_cluster_dns {
    struct ck_dns *dns;
    struct ck_rest *dns_client, *addons_client;
    char address[64];     /* the advertise address the DNS server listens on */
    char slice_name[128]; /* this server's EndpointSlice of kube-dns */
    char service_ip[64];
    pthread_t ensurer;
    bool ensurer_running;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop; /* guarded by mu */
};

int ck_cmd_cluster_dns_ip(const char *service_range, char *buf, size_t size)
{
    char net[64];
    const char *slash = service_range ? strchr(service_range, '/') : NULL;
    struct in_addr a;
    if (!slash || (size_t)(slash - service_range) >= sizeof(net))
        return -1;
    memcpy(net, service_range, (size_t)(slash - service_range));
    net[slash - service_range] = '\0';
    int bits = atoi(slash + 1);
    if (inet_pton(AF_INET, net, &a) != 1 || bits < 1 || bits > 28)
        return -1;
    uint32_t mask = bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits);
    a.s_addr = htonl((ntohl(a.s_addr) & mask) + 10);
    return inet_ntop(AF_INET, &a, buf, (socklen_t)size) ? 0 : -1;
}

/* The add-on's objects, as JSON; NULL when out of memory. */
static json_t *dns_service(const char *ip)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:[s], s:[{s:s, s:i, "
                     "s:s, s:i}, {s:s, s:i, s:s, s:i}]}}",
                     "apiVersion", "v1", "kind", "Service", "metadata", "name", "kube-dns",
                     "namespace", "kube-system", "labels", "k8s-app", "kube-dns",
                     "kubernetes.io/name", "ckube-dns", "spec", "clusterIP", ip, "clusterIPs", ip,
                     "ports", "name", "dns", "port", 53, "protocol", "UDP", "targetPort", 53,
                     "name", "dns-tcp", "port", 53, "protocol", "TCP", "targetPort", 53);
}

static json_t *dns_slice(const struct ck_cmd_cluster_dns *d)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s, s:[{s:[s], s:{s:b}}],"
        " s:[{s:s, s:i, s:s}, {s:s, s:i, s:s}]}",
        "apiVersion", "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "name",
        d->slice_name, "namespace", "kube-system", "labels", "kubernetes.io/service-name",
        "kube-dns", "endpointslice.kubernetes.io/managed-by", "ckube-server", "addressType", "IPv4",
        "endpoints", "addresses", d->address, "conditions", "ready", 1, "ports", "name", "dns",
        "port", 53, "protocol", "UDP", "name", "dns-tcp", "port", 53, "protocol", "TCP");
}

static json_t *dns_role(void)
{
    return json_pack(
        "{s:s, s:s, s:{s:s}, s:[{s:[s], s:[s, s, s, s], s:[s, s]}, {s:[s], s:[s], s:[s, s]}]}",
        "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "ClusterRole", "metadata", "name",
        DNS_USER, "rules", "apiGroups", "", "resources", "endpoints", "services", "pods",
        "namespaces", "verbs", "list", "watch", "apiGroups", "discovery.k8s.io", "resources",
        "endpointslices", "verbs", "list", "watch");
}

static json_t *dns_binding(void)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}", "apiVersion",
                     "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding", "metadata",
                     "name", DNS_USER, "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
                     "ClusterRole", "name", DNS_USER, "subjects", "kind", "User", "apiGroup",
                     "rbac.authorization.k8s.io", "name", DNS_USER);
}

/* Creates obj unless an object of its name is there. 0, or -1 with why in reterr. */
static int create_missing(struct ck_rest *c, const struct ck_resource *res, const char *ns,
                          json_t *obj, struct ck_err *reterr)
{
    if (!obj) {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return -1;
    }
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    json_t *got = NULL;
    int r = ck_rest_get(c, res, ns, name, &got, reterr);
    json_decref(got);
    if (r == CK_ENOENT) {
        r = ck_rest_create(c, res, ns, obj, NULL, reterr);
        if (r == 0)
            CK_LOGS(0, "Cluster DNS object created", "resource", res->resource, "name", name);
        if (r == CK_EEXIST)
            r = 0; /* another server made it meanwhile */
    }
    json_decref(obj);
    return r < 0 ? -1 : 0;
}

/* The server's EndpointSlice as it should be: created, or written again when it differs. */
static int ensure_slice(struct ck_cmd_cluster_dns *d, struct ck_err *reterr)
{
    const struct ck_resource *res =
        ck_controller_resource("discovery.k8s.io", "v1", "endpointslices");
    json_t *want = dns_slice(d), *got = NULL;
    if (!want) {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return -1;
    }
    int r = ck_rest_get(d->addons_client, res, "kube-system", d->slice_name, &got, reterr);
    if (r == CK_ENOENT) {
        r = ck_rest_create(d->addons_client, res, "kube-system", want, NULL, reterr);
    } else if (r == 0 &&
               (!json_equal(json_object_get(got, "endpoints"),
                            json_object_get(want, "endpoints")) ||
                !json_equal(json_object_get(got, "ports"), json_object_get(want, "ports")))) {
        json_object_set(want, "metadata", json_object_get(got, "metadata"));
        r = ck_rest_update(d->addons_client, res, "kube-system", want, NULL, reterr);
    }
    json_decref(got);
    json_decref(want);
    return r < 0 ? -1 : 0;
}

static int ensure_objects(struct ck_cmd_cluster_dns *d, struct ck_err *reterr)
{
    struct ck_rest *c = d->addons_client;
    const struct ck_resource *roles =
        ck_controller_resource("rbac.authorization.k8s.io", "v1", "clusterroles");
    const struct ck_resource *bindings =
        ck_controller_resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings");
    const struct ck_resource *services = ck_controller_resource("", "v1", "services");
    if (create_missing(c, roles, "", dns_role(), reterr) < 0 ||
        create_missing(c, bindings, "", dns_binding(), reterr) < 0 ||
        create_missing(c, services, "kube-system", dns_service(d->service_ip), reterr) < 0)
        return -1;
    return ensure_slice(d, reterr);
}

/* Whether ip is among the addresses of the kubernetes Service's Endpoints (the live servers). */
static bool live_server(const json_t *endpoints, const char *ip)
{
    size_t i, j;
    const json_t *subset, *address;
    json_array_foreach(json_object_get(endpoints, "subsets"), i, subset)
    {
        json_array_foreach(json_object_get(subset, "addresses"), j, address)
        {
            const char *a = json_string_value(json_object_get(address, "ip"));
            if (a && strcmp(a, ip) == 0)
                return true;
        }
    }
    return false;
}

/*
 * Deletes the kube-dns EndpointSlices that servers made (managed by ckube-server) whose
 * address is no longer a live server's. Nothing when the live set cannot be read.
 */
static void prune_dead_servers(struct ck_cmd_cluster_dns *d)
{
    struct ck_err err = {0};
    const struct ck_resource *eps_res = ck_controller_resource("", "v1", "endpoints");
    const struct ck_resource *slices_res =
        ck_controller_resource("discovery.k8s.io", "v1", "endpointslices");
    json_t *live = NULL, *list = NULL;
    struct ck_list_options opts = {.label_selector = "kubernetes.io/service-name=kube-dns,"
                                                     "endpointslice.kubernetes.io/"
                                                     "managed-by=ckube-server"};
    if (ck_rest_get(d->addons_client, eps_res, "default", "kubernetes", &live, &err) == 0 &&
        ck_rest_list(d->addons_client, slices_res, "kube-system", &opts, &list, &err) == 0) {
        size_t i;
        const json_t *slice;
        json_array_foreach(json_object_get(list, "items"), i, slice)
        {
            const char *name =
                json_string_value(json_object_get(json_object_get(slice, "metadata"), "name"));
            const char *ip = json_string_value(json_array_get(
                json_object_get(json_array_get(json_object_get(slice, "endpoints"), 0),
                                "addresses"),
                0));
            if (!name || !ip || strcmp(name, d->slice_name) == 0 || live_server(live, ip))
                continue;
            if (ck_rest_delete(d->addons_client, slices_res, "kube-system", name, NULL, NULL,
                               &err) == 0)
                CK_LOGS(0, "Cluster DNS endpoint of a server gone removed", "name", name, "address",
                        ip);
        }
    }
    json_decref(live);
    json_decref(list);
}

static void *ensurer_main(void *arg)
{
    struct ck_cmd_cluster_dns *d = arg;
    bool published = false;
    pthread_mutex_lock(&d->mu);
    for (unsigned tries = 0; !d->stop; tries++) {
        pthread_mutex_unlock(&d->mu);
        struct ck_err err = {0};
        int r = published ? ensure_slice(d, &err) : ensure_objects(d, &err);
        if (r == 0 && published)
            prune_dead_servers(d);
        pthread_mutex_lock(&d->mu);
        if (r == 0 && !published) {
            CK_LOGS(0, "Cluster DNS published", "service", "kube-system/kube-dns", "clusterIP",
                    d->service_ip, "endpoint", d->address);
            published = true;
        }
        if (r < 0 && tries % 30 == 5)
            CK_LOGE("cluster DNS: its objects not made yet (retrying): %s", err.msg);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += published ? 10 : 1;
        while (!d->stop && pthread_cond_timedwait(&d->cond, &d->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int ck_cmd_cluster_dns_start(const struct ck_apiserver *server,
                             const struct ck_cmd_cluster_dns_options *o,
                             struct ck_cmd_cluster_dns **ret)
{
    *ret = NULL;
    if (o->disabled)
        return 0;
    const char *address = ck_apiserver_advertise_address(server);
    if (!*address) {
        CK_LOGE("No cluster DNS: the server has no address to listen on (no "
                "--advertise-address, no non-loopback IPv4 interface); pass --disable-dns "
                "to say so");
        return 0;
    }
    struct ck_cmd_cluster_dns *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cond, NULL);
    snprintf(d->address, sizeof(d->address), "%s", address);
    snprintf(d->slice_name, sizeof(d->slice_name), SLICE_PREFIX "%s", address);
    for (char *p = d->slice_name; *p; p++)
        if (*p == '.')
            *p = '-';
    snprintf(d->service_ip, sizeof(d->service_ip), "%s", o->service_ip);
    struct ck_err err = {0};
    char listen[80];
    snprintf(listen, sizeof(listen), "%s:53", address);
    if (ck_cmd_component_client(server, "ckube-dns", DNS_USER, NULL, -1, 0, &d->dns_client, &err) <
            0 ||
        ck_cmd_component_client(server, "ckube-addons", ADDONS_USER, "system:masters", -1, 0,
                                &d->addons_client, &err) < 0) {
        CK_LOGE("No cluster DNS: no client for it: %s", err.msg);
        ck_cmd_cluster_dns_stop(d);
        return 0;
    }
    struct ck_dns_config config = {
        .listen = listen,
        .cluster_domain = o->cluster_domain,
        .resolv_conf = o->resolv_conf,
        /* the process's caches when the controllers run here, else its own as ckube-dns */
        .client = o->factory ? NULL : d->dns_client,
        .factory = o->factory,
    };
    if (ck_dns_new(&config, &d->dns, &err) < 0 || ck_dns_start(d->dns, &err) < 0) {
        CK_LOGE("No cluster DNS on %s: %s (pass --disable-dns to run without one)", listen,
                err.msg);
        ck_cmd_cluster_dns_stop(d);
        return 0;
    }
    if (pthread_create(&d->ensurer, NULL, ensurer_main, d) != 0) {
        ck_cmd_cluster_dns_stop(d);
        return -1;
    }
    d->ensurer_running = true;
    CK_LOGS(0, "Cluster DNS serving", "address", listen, "clusterDomain",
            o->cluster_domain ? o->cluster_domain : CK_DNS_DEFAULT_DOMAIN, "clusterIP",
            d->service_ip);
    *ret = d;
    return 0;
}

void ck_cmd_cluster_dns_stop(struct ck_cmd_cluster_dns *d)
{
    if (!d)
        return;
    if (d->ensurer_running) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->ensurer, NULL);
        /* a clean stop takes this server out of the Service */
        struct ck_err err = {0};
        const struct ck_resource *res =
            ck_controller_resource("discovery.k8s.io", "v1", "endpointslices");
        int r =
            ck_rest_delete(d->addons_client, res, "kube-system", d->slice_name, NULL, NULL, &err);
        if (r < 0 && r != CK_ENOENT)
            CK_LOGS(0, "Cluster DNS endpoint not removed", "name", d->slice_name, "err", err.msg);
    }
    ck_dns_free(d->dns);
    ck_rest_free(d->dns_client);
    ck_rest_free(d->addons_client);
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
