/*
 * resource_metrics.c - the agent's GET /metrics/resource, kubelet's resource metrics
 * endpoint (pkg/kubelet/metrics/collectors/resource_metrics.go), which the API server's
 * metrics.k8s.io scrapes as metrics-server scrapes kubelets.
 *
 * What it reports, as kubelet 1.32 does, in the Prometheus text format:
 *
 * - the node: node_cpu_usage_seconds_total (the "cpu" line of /proc/stat: all but idle and
 *   iowait) and node_memory_working_set_bytes (/proc/meminfo: MemTotal - MemFree less
 *   Inactive(file), the root cgroup's usage less its inactive file pages as cAdvisor
 *   counts them);
 * - each running container of the agent's pods: container_cpu_usage_seconds_total,
 *   container_memory_working_set_bytes (the runtime's container_stats: CRI's
 *   ListContainerStats, the process runtime's cgroup or /proc) and
 *   container_start_time_seconds;
 * - each pod: pod_cpu_usage_seconds_total and pod_memory_working_set_bytes, the pod's
 *   own figures where the runtime has them (CRI's ListPodSandboxStats: the pod's cgroup,
 *   its sandbox included, as kubelet reads it), else the sums of its containers' (the
 *   process runtime, which has no pod cgroup);
 * - resource_scrape_error: 1 when the runtime could not be asked.
 *
 * The text is what Prometheus' Go client writes for kubelet's registry: families sorted by
 * name, each with its HELP ("[STABLE] ...") and TYPE lines, samples sorted by their label
 * values, labels in name order, values as Go's strconv 'g' shortest form (exponent from
 * 1e6 up: "1.1091968e+07"), then the sample's time in milliseconds.
 *
 * Threading: called from the endpoint's connection threads; it copies the pod table's
 * running containers under the agent's lock (ck__agent_running_containers) and asks the
 * runtime without it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* Reads the first line of path that starts with key into *ret (the number after key). */
static bool read_keyed(const char *path, const char *key, unsigned long long *ret)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[512];
    size_t n = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && (line[n] == ' ' || line[n] == '\t'))
            found = sscanf(line + n, "%llu", ret) == 1;
    fclose(f);
    return found;
}

void ck__node_stats_read(const char *proc_stat, const char *meminfo, int64_t now,
                         struct ck__rt_stats *ret)
{
    *ret = (struct ck__rt_stats){0};
    FILE *f = fopen(proc_stat ? proc_stat : "/proc/stat", "re");
    unsigned long long v[8] = {0};
    long hz = sysconf(_SC_CLK_TCK);
    if (f) {
        /* user nice system idle iowait irq softirq steal (guest time is within user) */
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) >= 4 &&
            hz > 0) {
            unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
            ret->has_cpu = true;
            ret->cpu_time = now;
            ret->cpu_core_ns =
                busy / (unsigned long long)hz * CK_SEC +
                busy % (unsigned long long)hz * (unsigned long long)CK_SEC / (unsigned long long)hz;
        }
        fclose(f);
    }
    const char *mi = meminfo ? meminfo : "/proc/meminfo";
    unsigned long long total, free_kb, inactive = 0;
    if (read_keyed(mi, "MemTotal:", &total) && read_keyed(mi, "MemFree:", &free_kb)) {
        read_keyed(mi, "Inactive(file):", &inactive);
        unsigned long long used = total > free_kb ? total - free_kb : 0;
        ret->has_memory = true;
        ret->memory_time = now;
        ret->working_set_bytes = (used > inactive ? used - inactive : 0) * 1024;
    }
}

void ck__cgroup_stats_read(const char *dir, int64_t now, struct ck__rt_stats *ret)
{
    *ret = (struct ck__rt_stats){0};
    char path[PATH_MAX];
    unsigned long long usec, current = 0, inactive = 0;
    snprintf(path, sizeof(path), "%s/cpu.stat", dir);
    if (read_keyed(path, "usage_usec", &usec)) {
        ret->has_cpu = true;
        ret->cpu_time = now;
        ret->cpu_core_ns = usec * 1000;
    }
    snprintf(path, sizeof(path), "%s/memory.current", dir);
    FILE *f = fopen(path, "re");
    bool has_current = f && fscanf(f, "%llu", &current) == 1;
    if (f)
        fclose(f);
    if (has_current) {
        snprintf(path, sizeof(path), "%s/memory.stat", dir);
        read_keyed(path, "inactive_file", &inactive);
        ret->has_memory = true;
        ret->memory_time = now;
        ret->working_set_bytes = current > inactive ? current - inactive : 0;
    }
}

/* One <proc>/<pid>/stat: its group, CPU ticks (own; children's) and resident pages. */
static bool read_proc_stat(const char *path, int *pgrp, unsigned long long *own,
                           unsigned long long *children, unsigned long long *rss)
{
    char buf[2048];
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    unsigned long long utime, stime, cutime, cstime, rss_pages;
    /* fields 3 on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
       utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss */
    if (!p || sscanf(p + 1,
                     " %*s %*s %d %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %llu %llu %*s %*s %*s "
                     "%*s %*s %*s %llu",
                     pgrp, &utime, &stime, &cutime, &cstime, &rss_pages) != 6)
        return false;
    *own = utime + stime;
    *children = cutime + cstime;
    *rss = rss_pages;
    return true;
}

void ck__pgroup_stats_read(const char *proc, int pgid, int64_t now, struct ck__rt_stats *ret)
{
    *ret = (struct ck__rt_stats){0};
    if (!proc)
        proc = "/proc";
    DIR *d = opendir(proc);
    if (!d)
        return;
    unsigned long long ticks = 0, pages = 0;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[PATH_MAX];
        int pgrp;
        unsigned long long own, children, rss;
        snprintf(path, sizeof(path), "%s/%s/stat", proc, e->d_name);
        if (!read_proc_stat(path, &pgrp, &own, &children, &rss) || pgrp != pgid)
            continue;
        found = true;
        ticks += own + (atoi(e->d_name) == pgid ? children : 0);
        pages += rss;
    }
    closedir(d);
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (!found || hz <= 0 || page <= 0)
        return;
    ret->has_cpu = ret->has_memory = true;
    ret->cpu_time = ret->memory_time = now;
    ret->cpu_core_ns = ticks / (unsigned long long)hz * CK_SEC + ticks % (unsigned long long)hz *
                                                                     (unsigned long long)CK_SEC /
                                                                     (unsigned long long)hz;
    ret->working_set_bytes = pages * (unsigned long long)page;
}

/* ---- the text ---- */

/*
 * v as Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus' text writer uses: the
 * fewest digits that read back as v, in exponent form when the exponent is below -4 or
 * 6 and up.
 */
static int put_float(struct ck__buf *b, double v)
{
    char e[64];
    int digits = 1;
    for (; digits <= 17; digits++) {
        snprintf(e, sizeof(e), "%.*e", digits - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    const char *x = strchr(e, 'e');
    int exp = x ? atoi(x + 1) : 0;
    if (exp < -4 || exp >= 6)
        return ck__buf_adds(b, e);
    int decimals = digits - 1 - exp;
    return ck__buf_printf(b, "%.*f", decimals > 0 ? decimals : 0, v);
}

/* A label value with Prometheus' escapes (backslash, double quote, newline). */
static int put_label(struct ck__buf *b, const char *name, const char *value, bool last)
{
    int r = ck__buf_printf(b, "%s=\"", name);
    for (const char *p = value; r == 0 && *p; p++) {
        if (*p == '\\')
            r = ck__buf_adds(b, "\\\\");
        else if (*p == '"')
            r = ck__buf_adds(b, "\\\"");
        else if (*p == '\n')
            r = ck__buf_adds(b, "\\n");
        else
            r = ck__buf_add(b, p, 1);
    }
    return r ? r : ck__buf_adds(b, last ? "\"}" : "\",");
}

static int put_family(struct ck__buf *b, const char *name, const char *help, const char *type)
{
    return ck__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* " value ms\n" (ms: the sample's time; < 0: none). */
static int put_value(struct ck__buf *b, double v, int64_t time_ns)
{
    int r = ck__buf_adds(b, " ");
    if (r == 0)
        r = put_float(b, v);
    if (r == 0 && time_ns >= 0)
        r = ck__buf_printf(b, " %lld", (long long)(time_ns / 1000000));
    return r ? r : ck__buf_adds(b, "\n");
}

struct pod_sum {
    const char *ns, *pod;
    struct ck__rt_stats s;   /* its containers' sums */
    struct ck__rt_stats own; /* the runtime's figures of the pod as a whole */
};

struct entry {
    const struct ck__rt_stats_ref *ref;
    const struct ck__rt_stats *st;
};

/* The order of container samples: by container, namespace, pod (the labels by name). */
static int entry_cmp(const void *pa, const void *pb)
{
    const struct ck__rt_stats_ref *a = ((const struct entry *)pa)->ref;
    const struct ck__rt_stats_ref *b = ((const struct entry *)pb)->ref;
    int c = strcmp(a->name, b->name);
    if (!c)
        c = strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->pod, b->pod);
}

/* The order of pod samples: by namespace, pod. */
static int pod_cmp(const void *pa, const void *pb)
{
    const struct pod_sum *a = pa, *b = pb;
    int c = strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->pod, b->pod);
}

/* What a family's samples are made of. */
enum source {
    CONTAINER_CPU,
    CONTAINER_MEMORY,
    CONTAINER_START,
    NODE_CPU,
    NODE_MEMORY,
    POD_CPU,
    POD_MEMORY,
    SCRAPE_ERROR,
};

/* The families as kubelet's collector declares them, in the order written (by name). */
static const struct family {
    const char *name, *help, *type;
    enum source source;
} families[] = {
    {"container_cpu_usage_seconds_total",
     "[STABLE] Cumulative cpu time consumed by the container in core-seconds", "counter",
     CONTAINER_CPU},
    {"container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes",
     "gauge", CONTAINER_MEMORY},
    {"container_start_time_seconds",
     "[STABLE] Start time of the container since unix epoch in seconds", "gauge", CONTAINER_START},
    {"node_cpu_usage_seconds_total",
     "[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter", NODE_CPU},
    {"node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", "gauge",
     NODE_MEMORY},
    {"pod_cpu_usage_seconds_total",
     "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter", POD_CPU},
    {"pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", "gauge",
     POD_MEMORY},
    {"resource_scrape_error",
     "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", "gauge",
     SCRAPE_ERROR},
};

/* What one scrape found. */
struct scrape {
    const struct entry *containers; /* sorted by entry_cmp */
    size_t n_containers;
    const struct pod_sum *pods; /* sorted by pod_cmp */
    size_t n_pods;
    const struct ck__rt_stats *node;
    bool error;
};

static int put_containers(struct ck__buf *b, const struct family *f, const struct entry *e,
                          size_t n)
{
    int r = 0;
    for (size_t i = 0; r == 0 && i < n; i++) {
        const struct ck__rt_stats *st = e[i].st;
        bool has = f->source == CONTAINER_CPU      ? st->has_cpu
                   : f->source == CONTAINER_MEMORY ? st->has_memory
                                                   : e[i].ref->started_ns > 0;
        if (!has)
            continue;
        r = ck__buf_printf(b, "%s{", f->name);
        if (r == 0)
            r = put_label(b, "container", e[i].ref->name, false);
        if (r == 0)
            r = put_label(b, "namespace", e[i].ref->ns, false);
        if (r == 0)
            r = put_label(b, "pod", e[i].ref->pod, true);
        if (r == 0 && f->source == CONTAINER_CPU)
            r = put_value(b, (double)st->cpu_core_ns / 1e9, st->cpu_time);
        else if (r == 0 && f->source == CONTAINER_MEMORY)
            r = put_value(b, (double)st->working_set_bytes, st->memory_time);
        else if (r == 0) /* kubelet gives the start time no timestamp */
            r = put_value(b, (double)e[i].ref->started_ns / 1e9, -1);
    }
    return r;
}

static int put_pods(struct ck__buf *b, const struct family *f, const struct pod_sum *p, size_t n)
{
    bool cpu = f->source == POD_CPU;
    int r = 0;
    for (size_t i = 0; r == 0 && i < n; i++) {
        /* the pod's own figure where the runtime gave one, else its containers' sum */
        const struct ck__rt_stats *s =
            (cpu ? p[i].own.has_cpu : p[i].own.has_memory) ? &p[i].own : &p[i].s;
        if (cpu ? !s->has_cpu : !s->has_memory)
            continue;
        r = ck__buf_printf(b, "%s{", f->name);
        if (r == 0)
            r = put_label(b, "namespace", p[i].ns, false);
        if (r == 0)
            r = put_label(b, "pod", p[i].pod, true);
        if (r == 0)
            r = cpu ? put_value(b, (double)s->cpu_core_ns / 1e9, s->cpu_time)
                    : put_value(b, (double)s->working_set_bytes, s->memory_time);
    }
    return r;
}

/* The node's one sample of f (none when the node's figure is unknown). */
static int put_node(struct ck__buf *b, const struct family *f, const struct ck__rt_stats *node)
{
    bool cpu = f->source == NODE_CPU;
    if (cpu ? !node->has_cpu : !node->has_memory)
        return 0;
    int r = ck__buf_adds(b, f->name);
    if (r)
        return r;
    return cpu ? put_value(b, (double)node->cpu_core_ns / 1e9, node->cpu_time)
               : put_value(b, (double)node->working_set_bytes, node->memory_time);
}

static int put_samples(struct ck__buf *b, const struct family *f, const struct scrape *s)
{
    switch (f->source) {
    case CONTAINER_CPU:
    case CONTAINER_MEMORY:
    case CONTAINER_START:
        return put_containers(b, f, s->containers, s->n_containers);
    case NODE_CPU:
    case NODE_MEMORY:
        return put_node(b, f, s->node);
    case POD_CPU:
    case POD_MEMORY:
        return put_pods(b, f, s->pods, s->n_pods);
    case SCRAPE_ERROR:
        return ck__buf_printf(b, "%s %d\n", f->name, s->error ? 1 : 0);
    }
    return 0;
}

/* Adds a container's figures into its pod's (the newest sample time for each). */
static void add_into(struct ck__rt_stats *sum, const struct ck__rt_stats *st)
{
    if (st->has_cpu) {
        sum->has_cpu = true;
        sum->cpu_core_ns += st->cpu_core_ns;
        if (st->cpu_time > sum->cpu_time)
            sum->cpu_time = st->cpu_time;
    }
    if (st->has_memory) {
        sum->has_memory = true;
        sum->working_set_bytes += st->working_set_bytes;
        if (st->memory_time > sum->memory_time)
            sum->memory_time = st->memory_time;
    }
}

int ck__resource_metrics_render(struct ck__buf *out, const struct ck__rt_stats *node,
                                const struct ck__rt_stats_ref *refs,
                                const struct ck__rt_stats *stats, const struct ck__rt_stats *own,
                                size_t n, bool scrape_error)
{
    struct entry *e = calloc(n + 1, sizeof(*e));
    struct pod_sum *pods = calloc(n + 1, sizeof(*pods));
    size_t n_pods = 0;
    int r = e && pods ? 0 : CK_ENOMEM;
    for (size_t i = 0; r == 0 && i < n; i++) {
        e[i] = (struct entry){&refs[i], &stats[i]};
        size_t j = 0;
        while (j < n_pods && (strcmp(pods[j].ns, refs[i].ns) || strcmp(pods[j].pod, refs[i].pod)))
            j++;
        if (j == n_pods)
            pods[n_pods++] = (struct pod_sum){refs[i].ns, refs[i].pod, {0}, {0}};
        add_into(&pods[j].s, &stats[i]);
        if (own && (own[i].has_cpu || own[i].has_memory)) /* one per pod: any of its refs' */
            pods[j].own = own[i];
    }
    if (r == 0) {
        qsort(e, n, sizeof(*e), entry_cmp);
        qsort(pods, n_pods, sizeof(*pods), pod_cmp);
    }
    struct scrape found = {e, n, pods, n_pods, node, scrape_error};
    for (size_t i = 0; r == 0 && i < sizeof(families) / sizeof(families[0]); i++) {
        r = put_family(out, families[i].name, families[i].help, families[i].type);
        if (r == 0)
            r = put_samples(out, &families[i], &found);
    }
    free(e);
    free(pods);
    return r ? CK_ENOMEM : 0;
}

enum MHD_Result ck__agent_serve_resource_metrics(struct ck_agent *a, struct MHD_Connection *conn)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
    struct ck__rt_stats node;
    ck__node_stats_read(NULL, NULL, now, &node);
    size_t n = 0;
    struct ck__rt_stats_ref *refs = ck__agent_running_containers(a, &n);
    struct ck__rt_stats *stats = calloc(n + 1, sizeof(*stats));
    struct ck__rt_stats *own = calloc(n + 1, sizeof(*own));
    struct ck__runtime *rt = ck__agent_runtime(a);
    bool failed = !stats || !own;
    struct ck_err err = {0};
    if (!failed && n && rt->ops->container_stats &&
        rt->ops->container_stats(rt, refs, n, stats, &err) < 0) {
        CK_LOGS(2, "Resource metrics: the runtime's container stats failed", "err", err.msg);
        failed = true;
    }
    ck_err_release(&err);
    if (!failed && n && rt->ops->pod_stats && rt->ops->pod_stats(rt, refs, n, own, &err) < 0) {
        /* the pods' figures are then their containers' sums */
        CK_LOGS(2, "Resource metrics: the runtime's pod stats failed", "err", err.msg);
        memset(own, 0, n * sizeof(*own));
    }
    ck_err_release(&err);
    struct ck__buf body = {0};
    int r = ck__resource_metrics_render(&body, &node, refs, stats, own, failed ? 0 : n, failed);
    free(refs);
    free(stats);
    free(own);
    if (r < 0) {
        ck__buf_release(&body);
        return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    size_t len = body.len;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, ck__buf_take(&body), MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return ck__agent_answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}
