/*
 * endpoint_reconciler.c - the `kubernetes` Service's Endpoints and EndpointSlice, listing
 * every live API server (kube-apiserver's lease endpoint reconciler, kubernetes
 * pkg/controlplane/reconcilers/lease.go and endpointsadapter.go).
 *
 * Every server records itself under /masterleases/<advertise address> in the store and
 * renews the record every interval (10 s); a record not renewed for the TTL (15 s) is
 * dead. Kubernetes gives the key an etcd lease of the TTL; our store has no TTL keys, so
 * the record holds its renew time (wall clock, seconds) and each pass deletes the dead
 * records it finds (a conditional delete on the revision it read, so a renewal in
 * between wins). Servers sharing a store must have roughly synchronised clocks.
 *
 * Each pass then writes, when they differ from what is stored:
 *   - Endpoints default/kubernetes: label endpointslice.kubernetes.io/skip-mirror=true,
 *     one subset with the live addresses sorted and port "https" = the secure port;
 *   - EndpointSlice default/kubernetes: label kubernetes.io/service-name=kubernetes,
 *     addressType IPv4, one ready endpoint per address, the same port.
 * Both go through the registry (validation, watchers), as kube-apiserver writes them
 * through its own client. A server stopping cleanly deletes its record and writes the
 * set without itself (RemoveEndpoints).
 *
 * Threading: one thread per server (ck__epr_start); ck__epr_stop() wakes and joins it.
 * It shares the registry and the store, both thread-safe.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define LEASE_PREFIX "/masterleases/"

struct ck__epr {
    struct ck__registry *reg; /* borrowed: the server outlives us */
    char ip[INET6_ADDRSTRLEN];
    int port;
    long long interval, ttl; /* seconds */
    pthread_t thread;
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t wake;
    bool stop;
};

int ck__epr_advertise_address(const char *listen_host, char *buf, size_t size)
{
    struct in_addr a;
    if (listen_host && inet_pton(AF_INET, listen_host, &a) == 1 && a.s_addr != 0 &&
        (ntohl(a.s_addr) >> 24) != 127) {
        snprintf(buf, size, "%s", listen_host);
        return 0;
    }
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) < 0)
        return CK_ENOENT;
    int r = CK_ENOENT;
    for (struct ifaddrs *i = list; i && r < 0; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
            !(i->ifa_flags & IFF_UP))
            continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)i->ifa_addr;
        if (inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)size))
            r = 0;
    }
    freeifaddrs(list);
    return r;
}

/* ---- the lease records ----------------------------------------------------------------- */

static int renew(struct ck_store *store, const char *ip, long long now, struct ck_err *reterr)
{
    char key[128];
    snprintf(key, sizeof(key), LEASE_PREFIX "%s", ip);
    json_t *rec = json_pack("{s:s, s:I}", "ip", ip, "renewTime", (json_int_t)now);
    char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    int r = text ? ck_store_put(store, key, strlen(key), text, strlen(text), NULL, reterr)
                 : ck_err_no_memory(reterr);
    free(text);
    json_decref(rec);
    return r;
}

static int compare_ips(const void *a, const void *b)
{
    struct in_addr x, y;
    const char *sa = json_string_value(*(json_t *const *)a);
    const char *sb = json_string_value(*(json_t *const *)b);
    if (inet_pton(AF_INET, sa, &x) == 1 && inet_pton(AF_INET, sb, &y) == 1)
        return ntohl(x.s_addr) < ntohl(y.s_addr) ? -1 : ntohl(x.s_addr) > ntohl(y.s_addr);
    return strcmp(sa, sb);
}

/* The live addresses, sorted, as a new array; dead records are deleted on the way. */
static int live_addresses(struct ck_store *store, long long now, long long ttl, json_t **ret,
                          struct ck_err *reterr)
{
    struct ck_store_range req = {
        .key = LEASE_PREFIX, .key_len = strlen(LEASE_PREFIX), .prefix = true};
    struct ck_store_range_result res = {0};
    int r = ck_store_range(store, &req, &res, reterr);
    if (r < 0)
        return r;
    json_t *ips = json_array();
    for (size_t i = 0; ips && i < res.n_kvs; i++) {
        const struct ck_kv *kv = res.kvs[i];
        json_t *rec = json_loadb(kv->value, kv->value_len, 0, NULL);
        const char *ip = json_string_value(json_object_get(rec, "ip"));
        long long at = (long long)json_integer_value(json_object_get(rec, "renewTime"));
        if (ip && at + ttl > now)
            json_array_append_new(ips, json_string(ip));
        else /* expired (or garbage): gone unless renewed since we read it */
            ck_store_delete(store, kv->key, kv->key_len, kv->mod_revision, NULL, NULL, NULL);
        json_decref(rec);
    }
    ck_store_range_result_release(&res);
    if (!ips)
        return ck_err_no_memory(reterr);
    if (ck__json_array_sort(ips, compare_ips) < 0) {
        json_decref(ips);
        return ck_err_no_memory(reterr);
    }
    *ret = ips;
    return 0;
}

/* ---- the objects ----------------------------------------------------------------------- */

struct want {
    const json_t *desired;
    const char *const *fields; /* top-level fields that must match, NULL-terminated */
};

static bool same(const json_t *current, const struct want *w)
{
    const json_t *labels = json_object_get(json_object_get(current, "metadata"), "labels");
    if (!json_equal(labels, json_object_get(json_object_get(w->desired, "metadata"), "labels")))
        return false;
    for (const char *const *f = w->fields; *f; f++) {
        const json_t *a = json_object_get(current, *f), *b = json_object_get(w->desired, *f);
        bool a_empty = !a || (json_is_array(a) && json_array_size(a) == 0);
        bool b_empty = !b || (json_is_array(b) && json_array_size(b) == 0);
        if (!(a_empty && b_empty) && !(a && b && json_equal(a, b)))
            return false;
    }
    return true;
}

static json_t *mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct want *w = arg;
    json_t *next = json_deep_copy(current);
    json_t *meta = json_object_get(next, "metadata");
    if (!next || !meta) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    json_object_set(meta, "labels",
                    json_object_get(json_object_get(w->desired, "metadata"), "labels"));
    for (const char *const *f = w->fields; *f; f++) {
        json_t *v = json_object_get(w->desired, *f);
        if (v)
            json_object_set(next, *f, v);
        else
            json_object_del(next, *f);
    }
    return next;
}

/* Creates desired, or updates the stored object when it differs. */
static int sync_object(struct ck__registry *reg, const struct ck_kind *kind, json_t *desired,
                       const char *const *fields, struct ck_err *reterr)
{
    struct want w = {desired, fields};
    const struct ck_kv *kv = NULL;
    struct ck_err err = {0};
    int r = ck__registry_get(reg, kind, "default", "kubernetes", &kv, &err);
    char *out = NULL;
    size_t len = 0;
    if (r == CK_ENOENT) {
        ck_err_release(&err);
        r = ck__registry_create(reg, kind, "default", desired, false, &out, &len, reterr);
    } else if (r == 0) {
        ck_err_release(&err);
        json_t *current = json_loadb(kv->value, kv->value_len, 0, NULL);
        if (!current || !same(current, &w))
            r = ck__registry_update(reg, kind, "default", "kubernetes", NULL, mutate, &w, false,
                                    &out, &len, reterr);
        json_decref(current);
    } else {
        *reterr = err;
    }
    ck_kv_unref(kv);
    free(out);
    return r;
}

int ck__epr_reconcile(struct ck__registry *reg, const char *ip, int port, long long now,
                      long long ttl, bool remove, struct ck_err *reterr)
{
    const struct ck_kind *endpoints = ck_kind_lookup("", "v1", "endpoints");
    const struct ck_kind *slices = ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
    if (!endpoints || !slices)
        return 0;
    int r = 0;
    if (remove) {
        char key[128];
        snprintf(key, sizeof(key), LEASE_PREFIX "%s", ip);
        ck_store_delete(reg->store, key, strlen(key), 0, NULL, NULL, NULL);
    } else {
        r = renew(reg->store, ip, now, reterr);
    }
    json_t *ips = NULL;
    if (r == 0)
        r = live_addresses(reg->store, now, ttl, &ips, reterr);
    if (r < 0)
        return r;
    json_t *addresses = json_array(), *slice_eps = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(ips, i, v)
    {
        json_array_append_new(addresses, json_pack("{s:O}", "ip", v));
        json_array_append_new(
            slice_eps, json_pack("{s:[O], s:{s:b}}", "addresses", v, "conditions", "ready", 1));
    }
    json_t *ep = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:[]}", "apiVersion", "v1", "kind",
                           "Endpoints", "metadata", "name", "kubernetes", "namespace", "default",
                           "labels", "endpointslice.kubernetes.io/skip-mirror", "true", "subsets");
    if (ep && json_array_size(addresses) > 0)
        json_array_append_new(json_object_get(ep, "subsets"),
                              json_pack("{s:O, s:[{s:s, s:i, s:s}]}", "addresses", addresses,
                                        "ports", "name", "https", "port", port, "protocol", "TCP"));
    json_t *slice = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:O, s:[{s:s, s:i, s:s}]}", "apiVersion",
        "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "name", "kubernetes",
        "namespace", "default", "labels", "kubernetes.io/service-name", "kubernetes", "addressType",
        "IPv4", "endpoints", slice_eps, "ports", "name", "https", "port", port, "protocol", "TCP");
    static const char *const ep_fields[] = {"subsets", NULL};
    static const char *const slice_fields[] = {"addressType", "endpoints", "ports", NULL};
    r = ep && slice ? sync_object(reg, endpoints, ep, ep_fields, reterr) : ck_err_no_memory(reterr);
    if (r == 0)
        r = sync_object(reg, slices, slice, slice_fields, reterr);
    json_decref(ep);
    json_decref(slice);
    json_decref(addresses);
    json_decref(slice_eps);
    json_decref(ips);
    return r;
}

/* ---- the thread ------------------------------------------------------------------------- */

static void *reconciler_main(void *arg)
{
    struct ck__epr *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        pthread_mutex_unlock(&e->lock);
        struct ck_err err = {0};
        if (ck__epr_reconcile(e->reg, e->ip, e->port, (long long)time(NULL), e->ttl, false, &err) <
            0)
            CK_LOGW("cannot reconcile the kubernetes service's endpoints: %s",
                    ck_err_message(&err));
        ck_err_release(&err);
        pthread_mutex_lock(&e->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += e->interval;
        while (!e->stop && pthread_cond_timedwait(&e->wake, &e->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

int ck__epr_start(struct ck__registry *reg, const char *ip, int port, struct ck__epr **ret,
                  struct ck_err *reterr)
{
    struct ck__epr *e = ck__calloc(1, sizeof(*e));
    if (!e)
        return ck_err_no_memory(reterr);
    e->reg = reg;
    snprintf(e->ip, sizeof(e->ip), "%s", ip);
    e->port = port;
    e->interval = CK__EPR_INTERVAL;
    e->ttl = CK__EPR_TTL;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, NULL);
    if (pthread_create(&e->thread, NULL, reconciler_main, e) != 0) {
        pthread_cond_destroy(&e->wake);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return ck_err_set(reterr, CK_EIO, "cannot start the endpoint reconciler thread");
    }
    *ret = e;
    return 0;
}

struct ck__epr *ck__epr_stop(struct ck__epr *e)
{
    if (!e)
        return NULL;
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    struct ck_err err = {0};
    if (ck__epr_reconcile(e->reg, e->ip, e->port, (long long)time(NULL), e->ttl, true, &err) < 0)
        CK_LOGW("cannot remove this server from the kubernetes service's endpoints: %s",
                ck_err_message(&err));
    ck_err_release(&err);
    pthread_cond_destroy(&e->wake);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return NULL;
}
