/*
 * metrics.c - the API server's Prometheus metrics, with Kubernetes' names and
 * labels: apiserver_request_total (counter), apiserver_request_duration_seconds
 * (histogram, watches excluded as long-running) and apiserver_storage_objects
 * (gauge, counted from the store when /metrics is read).
 *
 * Threading: ck__metrics_observe() is called from every libmicrohttpd thread;
 * one mutex guards the series table. Rendering copies under the same mutex.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* Kubernetes' buckets for apiserver_request_duration_seconds. */
static const double duration_buckets[] = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                          1.0,   1.25,  1.5,  2,   3,   4,   5,   6,
                                          8,     10,    15,   20,  30,  45,  60};
#define N_BUCKETS (sizeof(duration_buckets) / sizeof(duration_buckets[0]))

struct code_count {
    unsigned code;
    unsigned long long count;
};

/* One label set without the code: its duration histogram and its count per code. */
struct series {
    struct ck__request_labels labels;
    unsigned long long buckets[N_BUCKETS]; /* non-cumulative; rendered cumulative */
    unsigned long long observations;
    double seconds;
    struct code_count *codes;
    size_t n_codes;
};

struct ck__metrics {
    pthread_mutex_t lock;
    struct series *series;
    size_t n_series, cap_series;
};

struct ck__metrics *ck__metrics_new(void)
{
    struct ck__metrics *m = calloc(1, sizeof(*m));
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void ck__metrics_free(struct ck__metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_series; i++)
        free(m->series[i].codes);
    free(m->series);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void ck__request_labels_set(struct ck__request_labels *l, const char *method,
                            const struct ck__target *t, bool watch, bool dry_run)
{
    memset(l, 0, sizeof(*l));
    bool collection = t && !t->name[0];
    const char *verb = method;
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        verb = watch ? "WATCH" : collection ? "LIST" : "GET";
    else if (strcmp(method, "DELETE") == 0 && collection)
        verb = "DELETECOLLECTION";
    snprintf(l->verb, sizeof(l->verb), "%s", verb);
    l->dry_run = dry_run;
    if (!t)
        return; /* a non-resource request: only the verb */
    snprintf(l->group, sizeof(l->group), "%s", t->group);
    snprintf(l->version, sizeof(l->version), "%s", t->version);
    snprintf(l->resource, sizeof(l->resource), "%s", t->kind->resource);
    snprintf(l->subresource, sizeof(l->subresource), "%s", t->subresource);
    l->scope = !collection ? "resource" : t->namespace[0] ? "namespace" : "cluster";
}

static bool same_labels(const struct ck__request_labels *a, const struct ck__request_labels *b)
{
    return a->dry_run == b->dry_run && a->scope == b->scope && strcmp(a->verb, b->verb) == 0 &&
           strcmp(a->resource, b->resource) == 0 && strcmp(a->group, b->group) == 0 &&
           strcmp(a->version, b->version) == 0 && strcmp(a->subresource, b->subresource) == 0;
}

static struct series *find_or_add(struct ck__metrics *m, const struct ck__request_labels *l)
{
    for (size_t i = 0; i < m->n_series; i++)
        if (same_labels(&m->series[i].labels, l))
            return &m->series[i];
    if (m->n_series == m->cap_series) {
        size_t cap = m->cap_series ? 2 * m->cap_series : 32;
        struct series *grown = ck__realloc(m->series, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        m->series = grown;
        m->cap_series = cap;
    }
    struct series *s = &m->series[m->n_series++];
    memset(s, 0, sizeof(*s));
    s->labels = *l;
    return s;
}

static void count_code(struct series *s, unsigned code)
{
    for (size_t i = 0; i < s->n_codes; i++) {
        if (s->codes[i].code == code) {
            s->codes[i].count++;
            return;
        }
    }
    struct code_count *grown = ck__realloc(s->codes, (s->n_codes + 1) * sizeof(*grown));
    if (!grown)
        return; /* a lost sample, never a crash */
    s->codes = grown;
    s->codes[s->n_codes++] = (struct code_count){code, 1};
}

void ck__metrics_observe(struct ck__metrics *m, const struct ck__request_labels *l, unsigned code,
                         double seconds)
{
    pthread_mutex_lock(&m->lock);
    struct series *s = find_or_add(m, l);
    if (s) {
        count_code(s, code);
        if (strcmp(l->verb, "WATCH") != 0) {
            size_t b = 0;
            while (b < N_BUCKETS && seconds > duration_buckets[b])
                b++;
            if (b < N_BUCKETS)
                s->buckets[b]++;
            s->observations++;
            s->seconds += seconds;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- rendering ---------------------------------------------------------- */

static void print_labels(struct ck__buf *out, const struct ck__request_labels *l)
{
    ck__buf_printf(
        out,
        "component=\"apiserver\",dry_run=\"%s\",group=\"%s\",resource=\"%s\",scope=\"%s\","
        "subresource=\"%s\",verb=\"%s\",version=\"%s\"",
        l->dry_run ? "All" : "", l->group, l->resource, l->scope ? l->scope : "", l->subresource,
        l->verb, l->version);
}

static void render_requests(struct ck__buf *out, const struct series *all, size_t n)
{
    ck__buf_adds(
        out, "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for "
             "each verb, dry run value, group, version, resource, scope, component, and HTTP "
             "response code.\n# TYPE apiserver_request_total counter\n");
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < all[i].n_codes; c++) {
            ck__buf_printf(out, "apiserver_request_total{code=\"%u\",", all[i].codes[c].code);
            print_labels(out, &all[i].labels);
            ck__buf_printf(out, "} %llu\n", all[i].codes[c].count);
        }
    }
    ck__buf_adds(
        out, "# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in "
             "seconds for each verb, dry run value, group, version, resource, subresource, scope "
             "and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
    for (size_t i = 0; i < n; i++) {
        if (!all[i].observations)
            continue;
        unsigned long long cumulative = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            cumulative += all[i].buckets[b];
            ck__buf_adds(out, "apiserver_request_duration_seconds_bucket{");
            print_labels(out, &all[i].labels);
            ck__buf_printf(out, ",le=\"%g\"} %llu\n", duration_buckets[b], cumulative);
        }
        ck__buf_adds(out, "apiserver_request_duration_seconds_bucket{");
        print_labels(out, &all[i].labels);
        ck__buf_printf(out, ",le=\"+Inf\"} %llu\n", all[i].observations);
        ck__buf_adds(out, "apiserver_request_duration_seconds_sum{");
        print_labels(out, &all[i].labels);
        ck__buf_printf(out, "} %.9g\n", all[i].seconds);
        ck__buf_adds(out, "apiserver_request_duration_seconds_count{");
        print_labels(out, &all[i].labels);
        ck__buf_printf(out, "} %llu\n", all[i].observations);
    }
}

void ck__count_stored_objects(struct ck_store *store,
                              void (*fn)(const struct ck_kind *kind, long long count, void *arg),
                              void *arg)
{
    size_t n_kinds;
    const struct ck_kind *const *kinds = ck_kinds(&n_kinds);
    for (size_t i = 0; i < n_kinds; i++) {
        if (kinds[i]->verbs) /* never stored (the reviews, metrics.k8s.io): nothing to count */
            continue;
        bool counted = false; /* a custom resource served in several versions: once */
        for (size_t j = 0; j < i && !counted; j++)
            counted = strcmp(kinds[j]->group, kinds[i]->group) == 0 &&
                      strcmp(kinds[j]->resource, kinds[i]->resource) == 0;
        if (counted)
            continue;
        char prefix[CK__KEY_MAX];
        int len = ck__collection_prefix(kinds[i], NULL, prefix, sizeof(prefix));
        struct ck_store_range req = {
            .key = prefix, .key_len = (size_t)len, .prefix = true, .count_only = true};
        struct ck_store_range_result res = {0};
        struct ck_err err = {0};
        long long count = len > 0 && ck_store_range(store, &req, &res, &err) == 0 ? res.count : -1;
        ck_store_range_result_release(&res);
        fn(kinds[i], count, arg);
    }
}

static void storage_objects_line(const struct ck_kind *kind, long long count, void *arg)
{
    ck__buf_printf(arg, "apiserver_storage_objects{resource=\"%s%s%s\"} %lld\n", kind->resource,
                   kind->group[0] ? "." : "", kind->group, count);
}

/* Objects per resource, as Kubernetes names them (pods, deployments.apps). -1 on a store error. */
static void render_storage_objects(struct ck__buf *out, struct ck_store *store)
{
    ck__buf_adds(
        out, "# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of "
             "last check split by kind. In case of a fetching error, the value will be -1.\n"
             "# TYPE apiserver_storage_objects gauge\n");
    ck__count_stored_objects(store, storage_objects_line, out);
}

char *ck__metrics_render(struct ck__metrics *m, struct ck_store *store,
                         const char *extra_exposition, size_t *ret_len)
{
    pthread_mutex_lock(&m->lock);
    size_t n = m->n_series;
    struct series *copy = ck__calloc(n ? n : 1, sizeof(*copy));
    bool copied = copy != NULL;
    for (size_t i = 0; copy && i < n; i++) {
        copy[i] = m->series[i];
        copy[i].codes = ck__malloc(copy[i].n_codes * sizeof(struct code_count) + 1);
        if (copy[i].codes)
            memcpy(copy[i].codes, m->series[i].codes, copy[i].n_codes * sizeof(struct code_count));
        else
            copied = false;
    }
    pthread_mutex_unlock(&m->lock);
    struct ck__buf out = {0};
    if (copied)
        render_requests(&out, copy, n);
    for (size_t i = 0; copy && i < n; i++)
        free(copy[i].codes);
    free(copy);
    if (!copied) { /* out of memory: no exposition rather than a partial one */
        ck__buf_release(&out);
        return NULL;
    }
    render_storage_objects(&out, store);
    if (extra_exposition)
        ck__buf_adds(&out, extra_exposition);
    size_t len = out.len;
    char *text = ck__buf_take(&out); /* NULL when an append failed: never a partial text */
    if (text)
        *ret_len = len;
    return text;
}
