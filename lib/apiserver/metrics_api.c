/*
 * metrics_api.c - metrics.k8s.io/v1beta1, the resource metrics API that `kubectl top`
 * reads: NodeMetrics (GET /apis/metrics.k8s.io/v1beta1/nodes[/NAME]) and PodMetrics
 * (GET .../pods, .../namespaces/NS/pods[/NAME]), with labelSelector and fieldSelector
 * as on nodes and pods. In Kubernetes a separate metrics-server serves them behind an
 * APIService; here the API server serves them itself (until an APIService
 * v1beta1.metrics.k8s.io with a service takes the group over: aggregator.c), built as
 * metrics-server builds them (sigs.k8s.io/metrics-server pkg/scraper, pkg/storage,
 * pkg/api):
 *
 * - Scraping: each node's agent is asked for kubelet's /metrics/resource (the address
 *   and port the pod log proxy uses, the kubelet client certificate), and the node's and
 *   containers' cumulative CPU seconds, working sets and container start times are read
 *   from the Prometheus text with the samples' times.
 * - Rates: CPU is the rate between the two newest scrapes of the node: (cpu - prev cpu) /
 *   (time - prev time) in nanocores, window the time between them, timestamp the newer
 *   sample's; memory is the newer working set. A container without an earlier sample
 *   (new, or restarted: its CPU went down) is measured from its start time at zero, as
 *   metrics-server does; a pod is left out when one of its containers cannot be measured,
 *   and its timestamp and window are its earliest container's.
 * - Freshness: metrics-server scrapes every --metric-resolution (15 s) on its own; here a
 *   node is scraped when a request comes and its newest scrape is older than that, and a
 *   node scraped for the first time is scraped again a second later so that there is a
 *   rate to give at once. The nodes due are scraped at once (curl's multi interface, 3 s
 *   to connect, 10 s in all). Nodes whose agent cannot be reached are left out, as
 *   metrics-server leaves them, and tried again after 5 s, twice as late after each
 *   failure (5 minutes at most), so that unreachable nodes do not hold up every request.
 *
 * The objects carry the node's or pod's labels and a creationTimestamp of now; CPU is a
 * decimal quantity of nanocores ("250m", "123456n"), memory a binary one ("1234Ki").
 *
 * Threading: one lock guards the scrapes and the samples; a request holds it while it
 * refreshes and reads them, so requests at once take turns.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"

/* metrics-server's --metric-resolution default */
#define RESOLUTION_MS 15000
/* a node's samples no request asked for in this long are dropped (a node gone) */
#define FORGET_MS (20 * RESOLUTION_MS)
/* a node whose agent could not be scraped is tried again after this long, doubling */
#define RETRY_MS     5000
#define RETRY_MAX_MS (5 * 60 * 1000)
/* an agent's connection and whole answer (metrics-server's kubelet request timeout: 10 s) */
#define CONNECT_TIMEOUT_S 3
#define SCRAPE_TIMEOUT_S  10
/* the gap between the first two scrapes of a node */
#define FIRST_GAP_MS 1000
/* sample times past this (ms, the year 33658) and values past this are refused */
#define MAX_MS    1000000000000000LL
#define MAX_VALUE 1e15
/* the most of an agent's answer read */
#define MAX_ANSWER (16u << 20)

/* ---- reading the Prometheus text ---- */

/* The value of label name in the {...} part at p (up to its '}'), unescaped, or NULL. */
static const char *parse_labels(const char *p, const char *end, char (*values)[254],
                                const char *const *names, size_t n_names)
{
    /* p is just past '{' */
    for (;;) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p < end && *p == '}')
            return p + 1;
        const char *name = p;
        while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        size_t name_len = (size_t)(p - name);
        if (name_len == 0 || p + 1 >= end || p[0] != '=' || p[1] != '"')
            return NULL;
        p += 2;
        char value[254];
        size_t len = 0;
        while (p < end && *p != '"') {
            char c = *p++;
            if (c == '\\' && p < end) {
                c = *p++;
                if (c == 'n')
                    c = '\n';
            }
            if (len + 1 < sizeof(value))
                value[len++] = c;
        }
        if (p >= end)
            return NULL;
        p++; /* the closing quote */
        value[len] = 0;
        for (size_t i = 0; i < n_names; i++)
            if (strlen(names[i]) == name_len && strncmp(names[i], name, name_len) == 0)
                memcpy(values[i], value, len + 1);
    }
}

static struct ck__ctr_sample *container(struct ck__node_scrape *s, const char *ns, const char *pod,
                                        const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->c[i].ns, ns) == 0 && strcmp(s->c[i].pod, pod) == 0 &&
            strcmp(s->c[i].name, name) == 0)
            return &s->c[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct ck__ctr_sample *c = realloc(s->c, cap * sizeof(*c));
        if (!c)
            return NULL;
        s->c = c;
        s->cap = cap;
    }
    struct ck__ctr_sample *c = &s->c[s->n];
    *c = (struct ck__ctr_sample){0};
    c->ns = strdup(ns);
    c->pod = strdup(pod);
    c->name = strdup(name);
    if (!c->ns || !c->pod || !c->name) {
        free(c->ns);
        free(c->pod);
        free(c->name);
        return NULL;
    }
    s->n++;
    return c;
}

enum metric { NODE_CPU, NODE_MEMORY, CTR_CPU, CTR_MEMORY, CTR_START, OTHER };

static enum metric metric_of(const char *name, size_t len)
{
    static const char *const names[] = {
        "node_cpu_usage_seconds_total",      "node_memory_working_set_bytes",
        "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
        "container_start_time_seconds",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return (enum metric)i;
    return OTHER;
}

/* One sample line. 0; CK_EINVAL for a line that is not a sample; CK_ENOMEM. */
static int parse_line(struct ck__node_scrape *s, const char *p, const char *end)
{
    const char *name = p;
    while (p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == ':'))
        p++;
    enum metric m = metric_of(name, (size_t)(p - name));
    if (m == OTHER)
        return 0;
    static const char *const label_names[] = {"namespace", "pod", "container"};
    char labels[3][254] = {"", "", ""};
    if (p < end && *p == '{' && !(p = parse_labels(p + 1, end, labels, label_names, 3)))
        return CK_EINVAL;
    char num[64];
    while (p < end && *p == ' ')
        p++;
    size_t n = 0;
    while (p < end && *p != ' ' && n + 1 < sizeof(num))
        num[n++] = *p++;
    num[n] = 0;
    char *stop;
    double v = strtod(num, &stop);
    if (!n || *stop || !isfinite(v))
        return CK_EINVAL;
    while (p < end && *p == ' ')
        p++;
    long long ms = 0;
    if (p < end) {
        n = 0;
        while (p < end && *p != ' ' && n + 1 < sizeof(num))
            num[n++] = *p++;
        num[n] = 0;
        ms = strtoll(num, &stop, 10);
        if (*stop || ms < 0 || ms > MAX_MS)
            return CK_EINVAL;
    }
    if (v < 0 || v > MAX_VALUE) /* no figure here is negative; a bound keeps casts defined */
        return CK_EINVAL;
    if (m == NODE_CPU) {
        s->has_cpu = true;
        s->cpu_s = v;
        s->cpu_ms = ms;
        return 0;
    }
    if (m == NODE_MEMORY) {
        s->has_memory = true;
        s->memory = v;
        s->memory_ms = ms;
        return 0;
    }
    struct ck__ctr_sample *c = container(s, labels[0], labels[1], labels[2]);
    if (!c)
        return CK_ENOMEM;
    if (m == CTR_CPU) {
        c->has_cpu = true;
        c->cpu_s = v;
        c->cpu_ms = ms;
    } else if (m == CTR_MEMORY) {
        c->has_memory = true;
        c->memory = v;
        c->memory_ms = ms;
    } else {
        c->start_s = v;
    }
    return 0;
}

int ck__metrics_scrape_parse(const char *text, size_t len, struct ck__node_scrape *ret)
{
    struct ck__node_scrape s = {0};
    const char *end = text + len;
    int r = 0;
    for (const char *p = text; p < end && r != CK_ENOMEM;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if (p < eol && *p != '#')
            r = parse_line(&s, p, eol);
        p = eol + 1;
    }
    if (r == CK_ENOMEM) {
        ck__node_scrape_release(&s);
        return r;
    }
    *ret = s; /* lines that are not samples are passed over, as a bad sample is */
    return 0;
}

void ck__node_scrape_release(struct ck__node_scrape *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->c[i].ns);
        free(s->c[i].pod);
        free(s->c[i].name);
    }
    free(s->c);
    *s = (struct ck__node_scrape){0};
}

/* ---- the objects ---- */

void ck__quantity_nanocores(uint64_t v, char *buf, size_t size)
{
    static const char *const suffixes[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    size_t i = 0;
    while (v && v % 1000 == 0 && i + 1 < sizeof(suffixes) / sizeof(suffixes[0])) {
        v /= 1000;
        i++;
    }
    snprintf(buf, size, "%llu%s", (unsigned long long)v, v ? suffixes[i] : "");
}

void ck__quantity_bytes(uint64_t v, char *buf, size_t size)
{
    static const char *const suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    size_t i = 0;
    while (v && v % 1024 == 0 && i + 1 < sizeof(suffixes) / sizeof(suffixes[0])) {
        v /= 1024;
        i++;
    }
    snprintf(buf, size, "%llu%s", (unsigned long long)v, suffixes[i]);
}

void ck__go_duration_ms(int64_t ms, char *buf, size_t size)
{
    if (ms <= 0) {
        snprintf(buf, size, "0s");
        return;
    }
    if (ms < 1000) {
        snprintf(buf, size, "%lldms", (long long)ms);
        return;
    }
    long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
    char hm[48] = "", fs[8] = "";
    if (h)
        snprintf(hm, sizeof(hm), "%lldh%lldm", h, m);
    else if (m)
        snprintf(hm, sizeof(hm), "%lldm", m);
    if (frac) {
        snprintf(fs, sizeof(fs), ".%03lld", frac);
        for (size_t k = strlen(fs); k > 1 && fs[k - 1] == '0'; k--)
            fs[k - 1] = 0;
    }
    snprintf(buf, size, "%s%lld%ss", hm, s, fs);
}

/* A time in ms since the epoch as metav1.Time writes it (seconds). */
static json_t *timestamp(int64_t ms)
{
    char buf[64];
    return json_string(ck_rfc3339((long long)(ms / 1000), buf, sizeof(buf)));
}

/* {"cpu": ..., "memory": ...} for a rate in nanocores and a working set. */
static json_t *usage(uint64_t nanocores, double memory)
{
    char cpu[48], mem[48];
    ck__quantity_nanocores(nanocores, cpu, sizeof(cpu));
    ck__quantity_bytes(memory > 0 ? (uint64_t)memory : 0, mem, sizeof(mem));
    return json_pack("{s:s, s:s}", "cpu", cpu, "memory", mem);
}

/*
 * metrics-server's resourceUsage: the CPU rate between two cumulative samples (seconds,
 * ms), false when it cannot be had (no time between them, CPU went down).
 */
static bool cpu_rate(double cpu, int64_t ms, double prev_cpu, int64_t prev_ms,
                     uint64_t *ret_nanocores)
{
    if (ms <= prev_ms || cpu < prev_cpu)
        return false;
    double rate = (cpu - prev_cpu) * 1e9 / ((double)(ms - prev_ms) / 1000.0);
    if (!(rate < 1e19)) /* beyond uint64_t: no node has that many cores */
        return false;
    *ret_nanocores = (uint64_t)rate;
    return true;
}

static json_t *meta(const char *ns, const char *name, const json_t *labels, int64_t now_ms)
{
    json_t *m = json_pack("{s:s}", "name", name);
    if (m && ns && *ns && json_object_set_new(m, "namespace", json_string(ns)) < 0)
        return json_decref(m), NULL;
    if (m && json_object_set_new(m, "creationTimestamp", timestamp(now_ms)) < 0)
        return json_decref(m), NULL;
    if (m && json_object_size(labels) && json_object_set_new(m, "labels", json_deep_copy(labels)))
        return json_decref(m), NULL;
    return m;
}

json_t *ck__node_metrics_object(const char *name, const json_t *labels,
                                const struct ck__node_scrape *prev,
                                const struct ck__node_scrape *cur, int64_t now_ms)
{
    uint64_t nanocores;
    if (!prev || !cur || !prev->has_cpu || !cur->has_cpu || !cur->has_memory ||
        !cpu_rate(cur->cpu_s, cur->cpu_ms, prev->cpu_s, prev->cpu_ms, &nanocores))
        return NULL;
    char window[64];
    ck__go_duration_ms(cur->cpu_ms - prev->cpu_ms, window, sizeof(window));
    return json_pack("{s:s, s:s, s:o*, s:o*, s:s, s:o*}", "kind", "NodeMetrics", "apiVersion",
                     "metrics.k8s.io/v1beta1", "metadata", meta(NULL, name, labels, now_ms),
                     "timestamp", timestamp(cur->cpu_ms), "window", window, "usage",
                     usage(nanocores, cur->memory));
}

static const struct ck__ctr_sample *find(const struct ck__node_scrape *s, const char *ns,
                                         const char *pod, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->c[i].ns, ns) == 0 && strcmp(s->c[i].pod, pod) == 0 &&
            strcmp(s->c[i].name, name) == 0)
            return &s->c[i];
    return NULL;
}

json_t *ck__pod_metrics_object(const char *ns, const char *name, const json_t *labels,
                               const struct ck__node_scrape *prev,
                               const struct ck__node_scrape *cur, int64_t now_ms)
{
    json_t *containers = json_array();
    int64_t earliest = 0, window = 0;
    size_t found = 0;
    for (size_t i = 0; containers && cur && i < cur->n; i++) {
        const struct ck__ctr_sample *c = &cur->c[i];
        if (strcmp(c->ns, ns) != 0 || strcmp(c->pod, name) != 0)
            continue;
        found++;
        const struct ck__ctr_sample *p = find(prev, ns, name, c->name);
        uint64_t nanocores = 0;
        int64_t from = 0;
        bool ok = c->has_cpu && c->has_memory;
        if (ok && p && p->has_cpu && cpu_rate(c->cpu_s, c->cpu_ms, p->cpu_s, p->cpu_ms, &nanocores))
            from = p->cpu_ms;
        else if (ok && c->start_s > 0 &&
                 cpu_rate(c->cpu_s, c->cpu_ms, 0, (int64_t)(c->start_s * 1000), &nanocores))
            from = (int64_t)(c->start_s * 1000); /* new or restarted: measured from its start */
        else
            ok = false;
        if (!ok) { /* metrics-server leaves out a pod with a container it cannot measure */
            json_decref(containers);
            return NULL;
        }
        if (!earliest || c->cpu_ms < earliest) {
            earliest = c->cpu_ms;
            window = c->cpu_ms - from;
        }
        if (json_array_append_new(containers, json_pack("{s:s, s:o*}", "name", c->name, "usage",
                                                        usage(nanocores, c->memory))) < 0) {
            json_decref(containers);
            return NULL;
        }
    }
    if (!containers || !found) {
        json_decref(containers);
        return NULL;
    }
    char w[64];
    ck__go_duration_ms(window, w, sizeof(w));
    return json_pack("{s:s, s:s, s:o*, s:o*, s:s, s:o}", "kind", "PodMetrics", "apiVersion",
                     "metrics.k8s.io/v1beta1", "metadata", meta(ns, name, labels, now_ms),
                     "timestamp", timestamp(earliest), "window", w, "containers", containers);
}

/* ---- the scrapes ---- */

struct node_entry {
    char name[254];
    struct ck__node_scrape prev, cur;
    bool has_prev, has_cur;
    int64_t scraped_at; /* monotonic ms of the newest scrape, or of a failed one */
    int64_t retry_ms;   /* after a failure: how long until the next try (0: none failed) */
    bool seen;          /* among the nodes this refresh asked about */
};

struct ck__metrics_api {
    pthread_mutex_t lock; /* guards everything below, and the scrapes */
    struct node_entry *v;
    size_t n, cap;
};

struct ck__metrics_api *ck__metrics_api_new(void)
{
    struct ck__metrics_api *m = calloc(1, sizeof(*m));
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

struct ck__metrics_api *ck__metrics_api_free(struct ck__metrics_api *m)
{
    if (!m)
        return NULL;
    for (size_t i = 0; i < m->n; i++) {
        ck__node_scrape_release(&m->v[i].prev);
        ck__node_scrape_release(&m->v[i].cur);
    }
    free(m->v);
    pthread_mutex_destroy(&m->lock);
    free(m);
    return NULL;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct node_entry *entry(struct ck__metrics_api *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].name, name) == 0)
            return &m->v[i];
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        struct node_entry *v = realloc(m->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        m->v = v;
        m->cap = cap;
    }
    struct node_entry *e = &m->v[m->n++];
    *e = (struct node_entry){0};
    snprintf(e->name, sizeof(e->name), "%s", name);
    return e;
}

/* e's scrape failed: its samples go, and it is tried again later, twice as late each time. */
static void scrape_failed(struct node_entry *e)
{
    ck__node_scrape_release(&e->prev);
    ck__node_scrape_release(&e->cur);
    e->has_prev = e->has_cur = false;
    e->scraped_at = mono_ms();
    e->retry_ms = e->retry_ms ? e->retry_ms * 2 : RETRY_MS;
    if (e->retry_ms > RETRY_MAX_MS)
        e->retry_ms = RETRY_MAX_MS;
}

/* e's new scrape s (taken): the newest becomes the previous one. */
static void scrape_done(struct node_entry *e, struct ck__node_scrape *s)
{
    ck__node_scrape_release(&e->prev);
    e->prev = e->cur;
    e->has_prev = e->has_cur;
    e->cur = *s;
    e->has_cur = true;
    e->scraped_at = mono_ms();
    e->retry_ms = 0;
}

/* One agent's GET /metrics/resource in flight. */
struct job {
    size_t idx; /* its node's entry */
    CURL *curl;
    struct ck__buf body;
    char err[CURL_ERROR_SIZE];
    CURLcode rc;
    bool done;
};

/*
 * Scrapes the agents of the entries idx[0..n) at once, as metrics-server scrapes its
 * nodes in parallel: curl's multi interface, each within SCRAPE_TIMEOUT_S, so that
 * agents that cannot be reached cost one timeout, not one each. m->lock held.
 */
static void scrape_all(struct ck_apiserver *ctx, struct ck__metrics_api *m, const size_t *idx,
                       size_t n)
{
    struct job *jobs = calloc(n + 1, sizeof(*jobs));
    CURLM *multi = curl_multi_init();
    for (size_t i = 0; jobs && multi && i < n; i++) {
        struct job *j = &jobs[i];
        char base[512], msg[256], url[600];
        j->idx = idx[i];
        j->body = (struct ck__buf){.max = MAX_ANSWER};
        j->rc = CURLE_FAILED_INIT;
        if (ck__kubelet_base_url(ctx, m->v[j->idx].name, base, sizeof(base), msg, sizeof(msg)) <
                0 ||
            !(j->curl = curl_easy_init()))
            continue;
        snprintf(url, sizeof(url), "%s/metrics/resource", base);
        curl_easy_setopt(j->curl, CURLOPT_URL, url);
        curl_easy_setopt(j->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(j->curl, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
        curl_easy_setopt(j->curl, CURLOPT_TIMEOUT, (long)SCRAPE_TIMEOUT_S);
        curl_easy_setopt(j->curl, CURLOPT_WRITEFUNCTION, ck__buf_curl_write);
        curl_easy_setopt(j->curl, CURLOPT_WRITEDATA, &j->body);
        curl_easy_setopt(j->curl, CURLOPT_ERRORBUFFER, j->err);
        curl_easy_setopt(j->curl, CURLOPT_PRIVATE, j);
        ck__kubelet_curl_tls(ctx, j->curl);
        if (curl_multi_add_handle(multi, j->curl) != CURLM_OK) {
            curl_easy_cleanup(j->curl);
            j->curl = NULL;
        }
    }
    int running = 0;
    do {
        if (!multi || curl_multi_perform(multi, &running) != CURLM_OK)
            break;
        if (running)
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
    } while (running);
    CURLMsg *msg;
    int left;
    while (multi && (msg = curl_multi_info_read(multi, &left))) {
        struct job *j = NULL;
        if (msg->msg == CURLMSG_DONE &&
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j) == CURLE_OK && j) {
            j->rc = msg->data.result;
            j->done = true;
        }
    }
    for (size_t i = 0; jobs && i < n; i++) {
        struct job *j = &jobs[i];
        struct node_entry *e = &m->v[j->idx];
        long status = 0;
        if (j->curl)
            curl_easy_getinfo(j->curl, CURLINFO_RESPONSE_CODE, &status);
        struct ck__node_scrape s;
        if (j->done && j->rc == CURLE_OK && status == 200 && !j->body.err &&
            ck__metrics_scrape_parse(j->body.p ? j->body.p : "", j->body.len, &s) == 0) {
            scrape_done(e, &s);
        } else {
            char code[24];
            snprintf(code, sizeof(code), "%ld", status);
            CK_LOGS(2, "Failed to scrape node", "node", e->name, "err",
                    j->rc != CURLE_OK ? (j->err[0] ? j->err : curl_easy_strerror(j->rc))
                                      : "bad answer",
                    "status", code);
            scrape_failed(e);
        }
        if (j->curl) {
            curl_multi_remove_handle(multi, j->curl);
            curl_easy_cleanup(j->curl);
        }
        ck__buf_release(&j->body);
    }
    if (!jobs) /* out of memory: nothing was asked */
        for (size_t i = 0; i < n; i++)
            scrape_failed(&m->v[idx[i]]);
    if (multi)
        curl_multi_cleanup(multi);
    free(jobs);
}

/* The names of every node (the store's), with their objects. New reference or NULL. */
static json_t *list_nodes(struct ck_apiserver *ctx, const struct ck_label_selector *labels,
                          const struct ck_field_selector *fields, struct ck_err *err)
{
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_NODE);
    struct ck__list_options o = {.labels = labels, .fields = fields};
    struct ck__list_result res;
    if (ck__registry_list(ctx->registry, kind, &o, &res, err) < 0)
        return NULL;
    json_t *nodes = json_array();
    for (size_t i = 0; nodes && i < res.n_kvs; i++) {
        json_t *obj = json_loadb(res.kvs[i]->value, res.kvs[i]->value_len, 0, NULL);
        if (obj)
            json_array_append_new(nodes, obj);
    }
    ck__list_result_release(&res);
    if (!nodes)
        ck_err_no_memory(err);
    return nodes;
}

/* Brings every node's samples up to date (m->lock held). */
static void refresh(struct ck_apiserver *ctx, struct ck__metrics_api *m, const json_t *nodes)
{
    for (size_t i = 0; i < m->n; i++)
        m->v[i].seen = false;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        struct node_entry *e = name ? entry(m, name) : NULL;
        if (e)
            e->seen = true;
    }
    size_t *due = calloc(m->n + 1, sizeof(*due)), n_due = 0;
    for (size_t k = 0; due && k < m->n; k++) {
        const struct node_entry *e = &m->v[k];
        int64_t age = mono_ms() - e->scraped_at;
        if (e->seen && (e->has_cur ? age >= RESOLUTION_MS : (!e->scraped_at || age >= e->retry_ms)))
            due[n_due++] = k;
    }
    scrape_all(ctx, m, due, n_due);
    n_due = 0;
    for (size_t k = 0; due && k < m->n; k++)
        if (m->v[k].seen && m->v[k].has_cur && !m->v[k].has_prev)
            due[n_due++] = k;
    if (n_due) { /* first scrapes: second ones a moment later give rates */
        nanosleep(&(struct timespec){FIRST_GAP_MS / 1000, (FIRST_GAP_MS % 1000) * 1000000L}, NULL);
        scrape_all(ctx, m, due, n_due);
    }
    free(due);
    for (size_t k = 0; k < m->n;) { /* nodes no request asked about for long: forgotten */
        if (m->v[k].seen || (m->v[k].has_cur && mono_ms() - m->v[k].scraped_at < FORGET_MS)) {
            k++;
            continue;
        }
        ck__node_scrape_release(&m->v[k].prev);
        ck__node_scrape_release(&m->v[k].cur);
        m->v[k] = m->v[--m->n];
    }
}

static const struct node_entry *entry_of(const struct ck__metrics_api *m, const char *name)
{
    for (size_t i = 0; name && i < m->n; i++)
        if (strcmp(m->v[i].name, name) == 0 && m->v[i].has_cur && m->v[i].has_prev)
            return &m->v[i];
    return NULL;
}

static const char *name_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

static const json_t *labels_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

/* The NodeMetrics of the nodes (all of them, or the one named), into items. */
static int node_items(struct ck_apiserver *ctx, struct ck__metrics_api *m, const char *only,
                      const struct ck_label_selector *labels,
                      const struct ck_field_selector *fields, json_t *items, struct ck_err *err)
{
    json_t *nodes = list_nodes(ctx, labels, fields, err);
    if (!nodes)
        return err->code ? err->code : CK_ENOMEM;
    size_t i;
    json_t *node;
    json_t *wanted = json_array();
    json_array_foreach(nodes, i, node)
    {
        if (!only || strcmp(name_of(node) ? name_of(node) : "", only) == 0)
            json_array_append(wanted, node);
    }
    refresh(ctx, m, wanted);
    int64_t now = real_ms();
    json_array_foreach(wanted, i, node)
    {
        const struct node_entry *e = entry_of(m, name_of(node));
        json_t *o =
            e ? ck__node_metrics_object(e->name, labels_of(node), &e->prev, &e->cur, now) : NULL;
        if (o)
            json_array_append_new(items, o);
    }
    json_decref(wanted);
    json_decref(nodes);
    return 0;
}

/* The PodMetrics of the pods in ns ("" all; only: one name), into items. */
static int pod_items(struct ck_apiserver *ctx, struct ck__metrics_api *m, const char *ns,
                     const char *only, const struct ck_label_selector *labels,
                     const struct ck_field_selector *fields, json_t *items, struct ck_err *err)
{
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_POD);
    struct ck__list_options o = {.namespace = ns, .labels = labels, .fields = fields};
    struct ck__list_result res;
    int r = ck__registry_list(ctx->registry, kind, &o, &res, err);
    if (r < 0)
        return r;
    json_t *pods = json_array();
    for (size_t i = 0; pods && i < res.n_kvs; i++) {
        json_t *pod = json_loadb(res.kvs[i]->value, res.kvs[i]->value_len, 0, NULL);
        if (pod && (!only || strcmp(name_of(pod) ? name_of(pod) : "", only) == 0) &&
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")))
            json_array_append(pods, pod);
        json_decref(pod);
    }
    ck__list_result_release(&res);
    json_t *nodes = list_nodes(ctx, NULL, NULL, err);
    if (!pods || !nodes) {
        json_decref(pods);
        json_decref(nodes);
        return err->code ? err->code : ck_err_no_memory(err);
    }
    json_t *wanted = json_array(); /* only the nodes the pods run on are scraped */
    size_t i, j;
    json_t *node, *pod;
    json_array_foreach(nodes, i, node)
    {
        bool used = false;
        json_array_foreach(pods, j, pod)
        {
            const char *on =
                json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
            used = used || (on && name_of(node) && strcmp(on, name_of(node)) == 0);
        }
        if (used)
            json_array_append(wanted, node);
    }
    refresh(ctx, m, wanted);
    int64_t now = real_ms();
    json_array_foreach(pods, i, pod)
    {
        const json_t *pm = json_object_get(pod, "metadata");
        const char *on =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const struct node_entry *e = entry_of(m, on);
        json_t *obj =
            e ? ck__pod_metrics_object(json_string_value(json_object_get(pm, "namespace")),
                                       name_of(pod), labels_of(pod), &e->prev, &e->cur, now)
              : NULL;
        if (obj)
            json_array_append_new(items, obj);
    }
    json_decref(wanted);
    json_decref(nodes);
    json_decref(pods);
    return 0;
}

static enum ck__res answer(struct ck__req *req, json_t *doc)
{
    if (!doc)
        return ck__fail_no_memory(req);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!text)
        return ck__fail_no_memory(req);
    enum ck__res ret = ck__send_json(req, 200, text);
    free(text);
    return ret;
}

bool ck__metrics_api_serve(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                           const struct ck__target *t, enum ck__res *ret)
{
    bool nodes = t->kind->role == CK_KIND_ROLE_NODE_METRICS;
    if (!nodes && t->kind->role != CK_KIND_ROLE_POD_METRICS)
        return false;
    if ((strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) || t->subresource[0] ||
        ck__query_bool(req, "watch")) {
        *ret = ck__fail_with(req, "MethodNotAllowed",
                             "the server does not allow this method on the requested resource");
        return true;
    }
    struct ck_err err = {0};
    struct ck_label_selector *labels = NULL;
    struct ck_field_selector *fields = NULL;
    const struct ck_kind *of = ck_kind_with_role(nodes ? CK_KIND_ROLE_NODE : CK_KIND_ROLE_POD);
    if (ck__parse_selectors(req, of, &labels, &fields, &err) < 0) {
        *ret = ck__fail(req, &err);
        return true;
    }
    json_t *items = json_array();
    struct ck__metrics_api *m = ctx->metrics_api;
    const char *only = t->name[0] ? t->name : NULL;
    pthread_mutex_lock(&m->lock);
    int r = !items  ? ck_err_no_memory(&err)
            : nodes ? node_items(ctx, m, only, labels, fields, items, &err)
                    : pod_items(ctx, m, t->namespace, only, labels, fields, items, &err);
    pthread_mutex_unlock(&m->lock);
    ck_label_selector_free(labels);
    ck_field_selector_free(fields);
    if (r < 0) {
        json_decref(items);
        *ret = ck__fail(req, &err);
    } else if (only && json_array_size(items) == 0) {
        json_decref(items);
        ck_err_status(&err, "NotFound", "%s.metrics.k8s.io \"%s\" not found",
                      nodes ? "nodemetrics" : "podmetrics", only);
        *ret = ck__fail(req, &err);
    } else if (only) {
        json_t *obj = json_incref(json_array_get(items, 0));
        json_decref(items);
        *ret = answer(req, obj);
    } else {
        *ret = answer(req, json_pack("{s:s, s:s, s:{}, s:o}", "kind",
                                     nodes ? "NodeMetricsList" : "PodMetricsList", "apiVersion",
                                     "metrics.k8s.io/v1beta1", "metadata", "items", items));
    }
    ck_err_release(&err);
    return true;
}
