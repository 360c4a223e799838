/*
 * proxy.c - the proxy: informers, the sync thread, /healthz, /metrics and health check
 * node ports.
 *
 * Follows kube-proxy (cmd/kube-proxy/app/server.go, pkg/proxy/nftables/proxier.go's
 * SyncLoop, pkg/proxy/healthcheck/proxier_health.go and service_health.go). Informer
 * handlers only mark the proxy dirty and wake the sync thread; the sync thread, the only
 * writer of the kernel table and of p->state, lists both caches, builds a transaction
 * from the previous state (rules.c) and runs it (nft.c). The first sync after both
 * informers have listed adopts the table (delete and rebuild in one transaction); a full
 * resync runs every sync period; any other sync is partial. A failed transaction leaves
 * the kernel's content unknown, so the next sync adopts again. When chains were flushed
 * for deletion, another sync follows a second later to delete them.
 *
 * /healthz answers kube-proxy's JSON ({"lastUpdated", "currentTime", "nodeEligible"}):
 * 503 when an update has waited longer than twice the sync period. /metrics answers the
 * Prometheus text format. Health check node ports answer 200 with the Service's local
 * endpoint count, 503 when there is none, as kube-proxy's service health server does.
 *
 * The informers are the proxy's own, or those of a factory the embedder shares (then
 * the embedder starts and stops them; the proxy starts them too, which is idempotent,
 * and only adds and removes its handler).
 *
 * With config->network_policy the proxy also has netpol.c's informers (NetworkPolicies,
 * Pods, Namespaces: its own, or the shared factory's); their events set np_dirty, and the same sync
 * thread rebuilds the table "ip ckube-netpol" then, and at every full resync, without touching
 * ckube-proxy's.
 *
 * Threading: the sync thread; the informers' threads (handlers: a flag and a signal);
 * libmicrohttpd's threads read counters and the health table under p->mu.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/informer.h"
#include "internal.h"

static const struct ck_resource services_res = {"", "v1", "services", true};
static const struct ck_resource slices_res = {"discovery.k8s.io", "v1", "endpointslices", true};

/* kube-proxy's sync_proxy_rules_duration_seconds buckets: exponential 1 ms x2, 15 */
#define N_BUCKETS 15

struct hc_port {
    int port;
    char *ns, *name;
    int local_endpoints; /* under p->mu */
    struct MHD_Daemon *d;
    struct ck_proxy *p;
};

/* What an informer's event wakes the sync thread for: the Service rules or the policies. */
struct wake {
    struct ck_proxy *p;
    bool netpol;
};

struct ck_proxy {
    struct ck_proxy_config cfg;
    char *hostname, *cluster_cidr, *nodeport_addresses, *healthz_addr, *metrics_addr;
    struct ck_rest *client;
    struct ck_informer *svc_inf, *eps_inf;
    bool shared_informers; /* from config->factory: not ours to free */
    struct ck_event_handler handler, np_handler;
    struct wake wake, np_wake;
    struct ck__netpol *np; /* NULL without config->network_policy */
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool dirty, np_dirty, stopping;
    struct ck_proxy_state *state; /* the sync thread's */
    int64_t last_full;            /* monotonic ns of the last full or adopting sync */
    /* figures, under mu */
    int64_t last_updated, last_queued; /* realtime ns; last_queued 0: nothing pending */
    uint64_t buckets[N_BUCKETS], count, failures, rules, syncs_full, syncs_partial;
    double sum;
    struct MHD_Daemon *healthz, *metrics;
    struct hc_port *hc;
    size_t n_hc;
};

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ck_proxy_request_sync(struct ck_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->dirty && !p->last_queued)
        p->last_queued = real_now();
    p->dirty = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void wake(struct wake *w)
{
    if (!w->netpol) {
        ck_proxy_request_sync(w->p);
        return;
    }
    pthread_mutex_lock(&w->p->mu);
    w->p->np_dirty = true;
    pthread_cond_signal(&w->p->cv);
    pthread_mutex_unlock(&w->p->mu);
}

static void on_add(const json_t *o, bool initial, void *arg)
{
    (void)o, (void)initial;
    wake(arg);
}

static void on_update(const json_t *o, const json_t *n, void *arg)
{
    if (o != n) /* a resync of the same object changes nothing */
        wake(arg);
}

static void on_delete(const json_t *o, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)o, (void)t;
    wake(arg);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type,
                              char *body)
{
    if (!body)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void rfc3339(int64_t ns, char *buf, size_t n)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%06ldZ", base, (long)(ns % 1000000000 / 1000));
}

static int64_t period(const struct ck_proxy *p)
{
    return p->cfg.sync_period > 0 ? p->cfg.sync_period : 30 * (int64_t)1000000000;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *size, void **state)
{
    (void)version, (void)data, (void)size;
    struct ck_proxy *p = cls;
    if (!*state) { /* answer on the second call (see docs/dependencies.md) */
        *state = p;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", strdup("method not allowed\n"));
    pthread_mutex_lock(&p->mu);
    int64_t now = real_now(), updated = p->last_updated, queued = p->last_queued;
    uint64_t b[N_BUCKETS], count = p->count, failures = p->failures, rules = p->rules;
    uint64_t full = p->syncs_full, partial = p->syncs_partial;
    double sum = p->sum;
    memcpy(b, p->buckets, sizeof(b));
    pthread_mutex_unlock(&p->mu);
    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0) {
        /* unhealthy when an update has waited longer than twice the sync period */
        bool healthy = !(queued && now - queued > 2 * period(p));
        char lu[48], ct[48];
        rfc3339(updated, lu, sizeof(lu));
        rfc3339(now, ct, sizeof(ct));
        json_t *j =
            json_pack("{s:s, s:s, s:b}", "lastUpdated", lu, "currentTime", ct, "nodeEligible", 1);
        char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        return answer(c, healthy ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
                      body);
    }
    if (strcmp(url, "/metrics") == 0) {
        struct ck__buf m = {0};
        ck__buf_printf(&m, "# HELP kubeproxy_sync_proxy_rules_duration_seconds SyncProxyRules "
                           "latency in seconds\n"
                           "# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram\n");
        uint64_t cum = 0;
        double le = 0.001;
        for (int i = 0; i < N_BUCKETS; i++, le *= 2) {
            cum += b[i];
            ck__buf_printf(&m,
                           "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"%g\"} %llu\n",
                           le, (unsigned long long)cum);
        }
        ck__buf_printf(
            &m,
            "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
            "kubeproxy_sync_proxy_rules_duration_seconds_sum %.9f\n"
            "kubeproxy_sync_proxy_rules_duration_seconds_count %llu\n"
            "# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds The last time proxy rules "
            "were successfully synced\n"
            "# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\n"
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds %.3f\n"
            "# HELP kubeproxy_sync_proxy_rules_nftables_sync_failures_total nftables "
            "transactions that failed\n"
            "# TYPE kubeproxy_sync_proxy_rules_nftables_sync_failures_total counter\n"
            "kubeproxy_sync_proxy_rules_nftables_sync_failures_total %llu\n"
            "# HELP ckube_proxy_nftables_rules Rules in the table ip ckube-proxy\n"
            "# TYPE ckube_proxy_nftables_rules gauge\n"
            "ckube_proxy_nftables_rules %llu\n"
            "# HELP ckube_proxy_syncs_total Transactions applied, by kind\n"
            "# TYPE ckube_proxy_syncs_total counter\n"
            "ckube_proxy_syncs_total{kind=\"full\"} %llu\n"
            "ckube_proxy_syncs_total{kind=\"partial\"} %llu\n",
            (unsigned long long)count, sum, (unsigned long long)count, (double)updated / 1e9,
            (unsigned long long)failures, (unsigned long long)rules, (unsigned long long)full,
            (unsigned long long)partial);
        return answer(c, MHD_HTTP_OK, "text/plain; version=0.0.4", ck__buf_take(&m));
    }
    return answer(c, MHD_HTTP_NOT_FOUND, "text/plain", strdup("404 page not found\n"));
}

static enum MHD_Result serve_hc(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **state)
{
    (void)url, (void)method, (void)version, (void)data, (void)size;
    struct hc_port *h = cls;
    if (!*state) {
        *state = h;
        return MHD_YES;
    }
    pthread_mutex_lock(&h->p->mu);
    int n = h->local_endpoints;
    json_t *j = json_pack("{s:{s:s, s:s}, s:i, s:b}", "service", "namespace", h->ns, "name",
                          h->name, "localEndpoints", n, "serviceProxyHealthy", 1);
    pthread_mutex_unlock(&h->p->mu);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return answer(c, n > 0 ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", body);
}

static struct MHD_Daemon *listen_on(const char *addr, int port, MHD_AccessHandlerCallback fn,
                                    void *arg)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return NULL;
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)port, NULL,
                            NULL, fn, arg, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_TIMEOUT,
                            10u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
}

/* Splits HOST:PORT; false when malformed. */
static bool split_addr(const char *s, char *host, size_t n, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= n)
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    if (!*host)
        strcpy(host, "0.0.0.0");
    char *end;
    long v = strtol(colon + 1, &end, 10);
    struct in_addr a;
    if (*end || end == colon + 1 || v < 0 || v > 65535 || inet_pton(AF_INET, host, &a) != 1)
        return false;
    *port = (int)v;
    return true;
}

/* ---- health check node ports (kube-proxy's service health server) -------------------- */

struct hc_sync {
    struct ck_proxy *p;
    struct hc_port *next;
    size_t n;
};

static void hc_collect(const char *ns, const char *name, int port, int local, void *arg)
{
    struct hc_sync *s = arg;
    struct hc_port *v = realloc(s->next, (s->n + 1) * sizeof(*v));
    if (!v)
        return;
    s->next = v;
    v[s->n++] = (struct hc_port){
        .port = port, .ns = strdup(ns), .name = strdup(name), .local_endpoints = local, .p = s->p};
}

static void hc_free(struct hc_port *v, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        free(v[k].ns);
        free(v[k].name);
    }
    free(v);
}

static void hc_sync(struct ck_proxy *p)
{
    struct hc_sync s = {.p = p};
    if (!p->cfg.no_health_check_node_ports)
        ck_proxy_state_health_ports(p->state, hc_collect, &s);
    bool same = s.n == p->n_hc;
    for (size_t i = 0; same && i < s.n; i++)
        same = s.next[i].port == p->hc[i].port && s.next[i].ns && s.next[i].name &&
               strcmp(s.next[i].ns, p->hc[i].ns) == 0 && strcmp(s.next[i].name, p->hc[i].name) == 0;
    if (same) { /* the same ports: only the counts change */
        pthread_mutex_lock(&p->mu);
        for (size_t i = 0; i < s.n; i++)
            p->hc[i].local_endpoints = s.next[i].local_endpoints;
        pthread_mutex_unlock(&p->mu);
        hc_free(s.next, s.n);
        return;
    }
    for (size_t k = 0; k < p->n_hc; k++) /* outside p->mu: their handlers take it */
        if (p->hc[k].d)
            MHD_stop_daemon(p->hc[k].d);
    pthread_mutex_lock(&p->mu);
    struct hc_port *old = p->hc;
    size_t n_old = p->n_hc;
    p->hc = s.next, p->n_hc = s.n;
    pthread_mutex_unlock(&p->mu);
    hc_free(old, n_old);
    for (size_t i = 0; i < p->n_hc; i++) {
        p->hc[i].d = listen_on("0.0.0.0", p->hc[i].port, serve_hc, &p->hc[i]);
        if (!p->hc[i].d)
            CK_LOGE("proxy: cannot serve the health check node port %d of %s/%s", p->hc[i].port,
                    p->hc[i].ns ? p->hc[i].ns : "", p->hc[i].name ? p->hc[i].name : "");
    }
}

/* ---- the sync thread ------------------------------------------------------------------- */

static size_t node_ips(const char ***ret)
{
    struct ifaddrs *ifa = NULL;
    *ret = NULL;
    if (getifaddrs(&ifa) != 0)
        return 0;
    size_t n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
        n += i->ifa_addr && i->ifa_addr->sa_family == AF_INET;
    const char **v = calloc(n + 1, sizeof(*v));
    size_t k = 0;
    for (struct ifaddrs *i = ifa; v && i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        char buf[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
        v[k] = strdup(buf);
        if (v[k])
            k++;
    }
    freeifaddrs(ifa);
    *ret = v;
    return k;
}

/* One sync; returns true when another should follow soon (stale chains to delete). */
static bool sync_once(struct ck_proxy *p)
{
    struct ck_obj_list svcs = {0}, slices = {0};
    ck_indexer_list(ck_informer_indexer(p->svc_inf), &svcs);
    ck_indexer_list(ck_informer_indexer(p->eps_inf), &slices);
    const char **ips = NULL;
    size_t n_ips = p->cfg.nodeport_addresses ? node_ips(&ips) : 0;
    struct ck_proxy_input in = {svcs.items, svcs.n, slices.items, slices.n, ips, n_ips, &p->cfg};
    int64_t start = mono_now();
    enum ck_proxy_sync_mode mode = !p->state                           ? CK_PROXY_SYNC_ADOPT
                                   : start - p->last_full >= period(p) ? CK_PROXY_SYNC_FULL
                                                                       : CK_PROXY_SYNC_PARTIAL;
    pthread_mutex_lock(&p->mu);
    int64_t queued = p->last_queued;
    p->last_queued = 0;
    p->dirty = false;
    pthread_mutex_unlock(&p->mu);
    char *text = NULL;
    struct ck_proxy_state *next = NULL;
    struct ck_proxy_build_stats st = {0};
    struct ck_err err = {0};
    int r = ck_proxy_build(&in, p->state, mode, &text, &next, &st, &err);
    /* a partial sync that changes nothing is only its "add table" line: not sent, since
     * libnftables would first read the whole table into its cache */
    const char *nl = r == 0 ? strchr(text, '\n') : NULL;
    bool empty = mode == CK_PROXY_SYNC_PARTIAL && nl && nl[1] == '\0';
    if (r == 0 && !empty)
        r = ck_proxy_nft_run(text, false, &err);
    int64_t took = mono_now() - start;
    ck_obj_list_release(&svcs);
    ck_obj_list_release(&slices);
    for (size_t i = 0; i < n_ips; i++)
        free((char *)ips[i]);
    free(ips);
    if (r < 0) {
        CK_LOGE("proxy: sync failed, the next one rebuilds the table: %s", err.msg);
        if (ck_log_v(9) && text)
            CK_LOGV(9, "proxy: the transaction was:\n%s", text);
        free(text);
        ck_proxy_state_free(next);
        p->state = ck_proxy_state_free(p->state); /* the kernel's content is unknown now */
        pthread_mutex_lock(&p->mu);
        p->failures++;
        if (!p->last_queued)
            p->last_queued = queued ? queued : real_now();
        pthread_mutex_unlock(&p->mu);
        return true;
    }
    CK_LOGV(2,
            "proxy: %s sync: %zu service ports, %zu endpoints, %zu chains written, %zu rules, "
            "%.3f ms",
            mode == CK_PROXY_SYNC_PARTIAL ? "partial" : "full", st.services, st.endpoints,
            st.chains_written, st.rules, (double)took / 1e6);
    if (ck_log_v(9))
        CK_LOGV(9, "proxy: transaction:\n%s", text);
    free(text);
    /* UDP flows the new rules no longer route (only when the UDP routing changed) */
    if (!p->state || p->state->udp_hash != next->udp_hash) {
        size_t deleted = 0;
        if (ck__proxy_conntrack_clean(next, &deleted, &err) < 0)
            CK_LOGE("proxy: %s", err.msg);
        else if (deleted)
            CK_LOGV(2, "proxy: deleted %zu stale UDP conntrack entries", deleted);
    }
    ck_proxy_state_free(p->state);
    p->state = next;
    if (mode != CK_PROXY_SYNC_PARTIAL)
        p->last_full = start;
    pthread_mutex_lock(&p->mu);
    p->last_updated = real_now();
    double secs = (double)took / 1e9, le = 0.001;
    int i = 0;
    while (i < N_BUCKETS && secs > le)
        i++, le *= 2;
    if (i < N_BUCKETS)
        p->buckets[i]++;
    p->count++;
    p->sum += secs;
    p->rules = st.rules;
    if (mode == CK_PROXY_SYNC_PARTIAL)
        p->syncs_partial++;
    else
        p->syncs_full++;
    pthread_mutex_unlock(&p->mu);
    hc_sync(p);
    return ck_proxy_state_has_stale(p->state);
}

/* The network policies' sync (netpol.c); true when it should run again soon. */
static bool netpol_sync(struct ck_proxy *p, bool force)
{
    pthread_mutex_lock(&p->mu);
    p->np_dirty = false;
    pthread_mutex_unlock(&p->mu);
    return ck__netpol_sync(p->np, force);
}

static void *sync_main(void *arg)
{
    struct ck_proxy *p = arg;
    /* kube-proxy syncs only once both caches hold their first list */
    while (!ck_informer_has_synced(p->svc_inf) || !ck_informer_has_synced(p->eps_inf)) {
        pthread_mutex_lock(&p->mu);
        bool stop = p->stopping;
        if (!stop) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 50000000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        }
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
    }
    bool soon = sync_once(p), np_soon = p->np && netpol_sync(p, true);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int64_t wait = period(p) - (mono_now() - p->last_full);
        if ((soon || np_soon) && wait > 1000000000)
            wait = 1000000000;
        if (!p->dirty && !p->np_dirty && !p->stopping && wait > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + wait;
            ts.tv_sec = (time_t)(t / 1000000000);
            ts.tv_nsec = (long)(t % 1000000000);
            pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        }
        bool stop = p->stopping, dirty = p->dirty, np_dirty = p->np_dirty;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
        /* the policies' table is rewritten at every full resync of the Service rules */
        bool full = mono_now() - p->last_full >= period(p);
        if (dirty || soon || full)
            soon = sync_once(p);
        if (p->np && (np_dirty || np_soon || full))
            np_soon = netpol_sync(p, full);
    }
}

/* ---- lifecycle ------------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

int ck_proxy_new(const struct ck_proxy_config *config, struct ck_rest *client,
                 struct ck_proxy **ret_p, struct ck_err *reterr)
{
    if (!config || !client || !config->hostname || !*config->hostname)
        return ck_err_set(reterr, CK_EINVAL, "proxy: a client and the node's name are needed");
    if (config->cluster_cidr && *config->cluster_cidr &&
        !ck__proxy_cidrs_valid(config->cluster_cidr))
        return ck_err_set(reterr, CK_EINVAL, "proxy: invalid --cluster-cidr \"%s\"",
                          config->cluster_cidr);
    if (config->cluster_cidr && strchr(config->cluster_cidr, ','))
        return ck_err_set(reterr, CK_EINVAL, "proxy: --cluster-cidr takes one IPv4 CIDR");
    if (config->nodeport_addresses && *config->nodeport_addresses &&
        !ck__proxy_cidrs_valid(config->nodeport_addresses))
        return ck_err_set(reterr, CK_EINVAL, "proxy: invalid --nodeport-addresses \"%s\"",
                          config->nodeport_addresses);
    char host[64];
    int port;
    if (config->healthz_bind_address && *config->healthz_bind_address &&
        !split_addr(config->healthz_bind_address, host, sizeof(host), &port))
        return ck_err_set(reterr, CK_EINVAL, "proxy: invalid --healthz-bind-address \"%s\"",
                          config->healthz_bind_address);
    if (config->metrics_bind_address && *config->metrics_bind_address &&
        !split_addr(config->metrics_bind_address, host, sizeof(host), &port))
        return ck_err_set(reterr, CK_EINVAL, "proxy: invalid --metrics-bind-address \"%s\"",
                          config->metrics_bind_address);
    struct ck_proxy *p = calloc(1, sizeof(*p));
    if (!p)
        return ck_err_no_memory(reterr);
    p->cfg = *config;
    p->client = client;
    p->hostname = strdup(config->hostname);
    p->cluster_cidr = dup_or_null(config->cluster_cidr);
    p->nodeport_addresses = dup_or_null(config->nodeport_addresses);
    p->healthz_addr = dup_or_null(config->healthz_bind_address);
    p->metrics_addr = dup_or_null(config->metrics_bind_address);
    p->cfg.hostname = p->hostname;
    p->cfg.cluster_cidr = p->cluster_cidr;
    p->cfg.nodeport_addresses = p->nodeport_addresses;
    p->cfg.healthz_bind_address = p->healthz_addr;
    p->cfg.metrics_bind_address = p->metrics_addr;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    struct ck_informer_options so = {
        .client = client, .res = &services_res, .transform = ck_transform_strip_managed_fields};
    struct ck_informer_options eo = so;
    eo.res = &slices_res;
    p->wake = (struct wake){p, false};
    p->np_wake = (struct wake){p, true};
    p->handler = (struct ck_event_handler){on_add, on_update, on_delete, &p->wake};
    p->np_handler = (struct ck_event_handler){on_add, on_update, on_delete, &p->np_wake};
    int r = 0;
    if (!p->hostname)
        r = ck_err_no_memory(reterr);
    if (r == 0 && config->factory) {
        p->shared_informers = true;
        p->svc_inf = ck_informer_factory_for(config->factory, &services_res);
        p->eps_inf = ck_informer_factory_for(config->factory, &slices_res);
        if (!p->svc_inf || !p->eps_inf)
            r = ck_err_no_memory(reterr);
    } else if (r == 0) {
        r = ck_informer_new(&so, &p->svc_inf, reterr);
        if (r == 0)
            r = ck_informer_new(&eo, &p->eps_inf, reterr);
    }
    if (r == 0)
        r = ck_informer_add_handler(p->svc_inf, &p->handler, 0, reterr);
    if (r == 0)
        r = ck_informer_add_handler(p->eps_inf, &p->handler, 0, reterr);
    if (r == 0 && config->network_policy)
        r = ck__netpol_new(client, config->factory, p->hostname, &p->np_handler, &p->np, reterr);
    if (r < 0) {
        ck_proxy_free(p);
        return r;
    }
    *ret_p = p;
    return 0;
}

int ck_proxy_start(struct ck_proxy *p, struct ck_err *reterr)
{
    if (p->running)
        return 0;
    char host[64];
    int port;
    if (p->healthz_addr && split_addr(p->healthz_addr, host, sizeof(host), &port) &&
        !(p->healthz = listen_on(host, port, serve, p)))
        return ck_err_set(reterr, CK_EADDRINUSE, "proxy: cannot serve /healthz on %s",
                          p->healthz_addr);
    if (p->metrics_addr && split_addr(p->metrics_addr, host, sizeof(host), &port) &&
        !(p->metrics = listen_on(host, port, serve, p))) {
        ck_proxy_stop(p);
        return ck_err_set(reterr, CK_EADDRINUSE, "proxy: cannot serve /metrics on %s",
                          p->metrics_addr);
    }
    int r = ck_informer_start(p->svc_inf, reterr);
    if (r == 0)
        r = ck_informer_start(p->eps_inf, reterr);
    if (r == 0 && p->np)
        r = ck__netpol_start(p->np, reterr);
    if (r == 0) {
        /* as kube-proxy's SyncLoop: healthy from the start, until an update waits too long */
        pthread_mutex_lock(&p->mu);
        p->last_updated = real_now();
        pthread_mutex_unlock(&p->mu);
        p->stopping = false;
        if (pthread_create(&p->thread, NULL, sync_main, p) != 0)
            r = ck_err_set(reterr, CK_ENOMEM, "proxy: cannot start the sync thread");
        else
            p->running = true;
    }
    if (r < 0)
        ck_proxy_stop(p);
    return r;
}

void ck_proxy_stop(struct ck_proxy *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (!p->shared_informers) { /* shared ones are the factory owner's to stop */
        if (p->svc_inf)
            ck_informer_request_stop(p->svc_inf);
        if (p->eps_inf)
            ck_informer_request_stop(p->eps_inf);
    }
    if (p->running)
        pthread_join(p->thread, NULL);
    p->running = false;
    ck__netpol_stop(p->np);
    if (!p->shared_informers) {
        if (p->svc_inf)
            ck_informer_stop(p->svc_inf);
        if (p->eps_inf)
            ck_informer_stop(p->eps_inf);
    }
    if (p->healthz)
        MHD_stop_daemon(p->healthz);
    if (p->metrics)
        MHD_stop_daemon(p->metrics);
    p->healthz = p->metrics = NULL;
    for (size_t k = 0; k < p->n_hc; k++) {
        if (p->hc[k].d)
            MHD_stop_daemon(p->hc[k].d);
        p->hc[k].d = NULL;
    }
}

struct ck_proxy *ck_proxy_free(struct ck_proxy *p)
{
    if (!p)
        return NULL;
    ck_proxy_stop(p);
    if (p->shared_informers) {
        if (p->svc_inf)
            ck_informer_remove_handler(p->svc_inf, &p->handler);
        if (p->eps_inf)
            ck_informer_remove_handler(p->eps_inf, &p->handler);
    } else {
        ck_informer_free(p->svc_inf);
        ck_informer_free(p->eps_inf);
    }
    for (size_t k = 0; k < p->n_hc; k++) {
        free(p->hc[k].ns);
        free(p->hc[k].name);
    }
    free(p->hc);
    ck_proxy_state_free(p->state);
    ck__netpol_free(p->np);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->hostname);
    free(p->cluster_cidr);
    free(p->nodeport_addresses);
    free(p->healthz_addr);
    free(p->metrics_addr);
    free(p);
    return NULL;
}
