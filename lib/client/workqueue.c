/*
 * workqueue.c - the queue controllers take keys from (client-go util/workqueue/queue.go).
 *
 * Fair (FIFO), stingy (a key added twice before it is taken is taken once) and never
 * handed to two workers at once. client-go keeps three sets: `queue` (order), `dirty`
 * (needs processing) and `processing` (handed out). Here one map holds an item per known
 * key with two flags, dirty and processing, and a ring buffer holds the order:
 *
 *   add:  not dirty -> dirty; queued only if not processing (else done() queues it)
 *   get:  pops the ring head -> processing, not dirty
 *   done: not processing; if dirty again, back to the end of the ring; forgotten if not
 *
 * Invariants: an item is in the ring iff dirty && !processing; an item is in the map iff
 * dirty || processing; nprocessing counts the processing ones.
 *
 * Shutdown refuses new keys and wakes every getter; keys already queued are still handed
 * out (client-go's Get returns items while the queue is non-empty). Drain waits on `cond`
 * until nprocessing is 0.
 *
 * Metrics follow client-go's queueMetrics: adds and depth on add, queue latency on get,
 * work duration on done, and unfinished/longest-running computed when read.
 *
 * Threading: every public call takes q->lock; getters sleep on q->cond, after giving
 * their allocator cache back (ck__memory_idle) when the queue is empty. delaying.c and
 * ratelimit.c extend the same struct under the same lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const double ck_wq_hist_bounds[CK_WQ_HIST_BUCKETS] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
                                                      1e-3, 1e-2, 1e-1, 1,    10};

int ck_wq_new(const struct ck_wq_options *opts, struct ck_wq **ret_q, struct ck_err *reterr)
{
    struct ck_rate_limiter *limiter = opts ? opts->limiter : NULL;
    const char *name = opts && opts->name ? opts->name : "";
    struct ck_wq *q = ck__calloc(1, sizeof(*q));
    if (!q)
        goto out_nomem;
    q->name = ck__strdup(name);
    if (!q->name)
        goto out_free;
    q->clock = opts && opts->clock ? opts->clock : ck_clock_real();
    q->limiter = limiter;
    /* Adaptive: the critical sections are short, so a contended lock spins briefly before
     * sleeping in the kernel (see docs/benchmarks/history.md). */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&q->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&q->cond, NULL);
    pthread_cond_init(&q->timer_cond, NULL);
    *ret_q = q;
    return 0;

out_free:
    free(q);
out_nomem:
    ck_rl_free(limiter);
    return ck_err_set(reterr, CK_ENOMEM, "out of memory creating work queue \"%s\"", name);
}

struct ck_wq *ck_wq_free(struct ck_wq *q)
{
    if (!q)
        return NULL;
    ck_wq_shutdown(q);
    if (q->timer_started)
        pthread_join(q->timer_thread, NULL);
    ck__wq_delayed_release(q);
    ck__strmap_release(&q->items); /* items live inside the entries */
    free(q->ring);
    ck_rl_free(q->limiter);
    pthread_cond_destroy(&q->timer_cond);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q->name);
    free(q);
    return NULL;
}

/* Makes room for `need` items in the ring. The ring always has room for every item in the
 * map, so pushing (in add or done) never fails. */
static int ring_reserve(struct ck_wq *q, size_t need)
{
    if (need <= q->cap)
        return 0;
    size_t cap = q->cap ? q->cap * 2 : 16;
    struct ck__wq_item **ring = ck__malloc(cap * sizeof(*ring));
    if (!ring)
        return CK_ENOMEM;
    for (size_t i = 0; i < q->len; i++)
        ring[i] = q->ring[(q->head + i) % q->cap];
    free(q->ring);
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
    return 0;
}

static void ring_push(struct ck_wq *q, struct ck__wq_item *item)
{
    q->ring[(q->head + q->len) % q->cap] = item;
    q->len++;
}

static void observe(struct ck_wq_histogram *h, int64_t ns)
{
    double s = (double)ns / (double)CK_SEC;
    for (int i = 0; i < CK_WQ_HIST_BUCKETS; i++) {
        if (s <= ck_wq_hist_bounds[i]) {
            h->buckets[i]++;
            break;
        }
    }
    h->count++;
    h->sum += s;
}

int ck__wq_add_locked(struct ck_wq *q, const char *key, int64_t now)
{
    if (q->shutting_down)
        return CK_ESHUTDOWN;
    struct ck__strmap_entry *e = ck__strmap_find(&q->items, key);
    struct ck__wq_item *item = e ? e->value : NULL;
    if (item && item->dirty)
        return 0;
    if (!item) {
        /* Reserve ring space first, so that no failure leaves a half-added key. */
        int r = ring_reserve(q, q->items.len + 1);
        if (r < 0)
            return r;
        e = ck__strmap_insert(&q->items, key, sizeof(*item)); /* the item lives in the entry */
        if (!e)
            return CK_ENOMEM;
        item = e->value;
        item->key = e->key;
    }
    q->adds++;
    item->dirty = true;
    if (item->processing)
        return 0;
    item->queued_at = now;
    ring_push(q, item);
    pthread_cond_signal(&q->cond);
    return 0;
}

int ck_wq_add(struct ck_wq *q, const char *key)
{
    if (!key)
        return CK_EINVAL;
    int64_t now = ck_clock_now(q->clock); /* outside the lock: keep it short */
    pthread_mutex_lock(&q->lock);
    int r = ck__wq_add_locked(q, key, now);
    pthread_mutex_unlock(&q->lock);
    return r;
}

static const char *take_head(struct ck_wq *q)
{
    struct ck__wq_item *item = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    int64_t now = ck_clock_now(q->clock);
    observe(&q->queue_duration, now - item->queued_at);
    item->started_at = now;
    item->dirty = false;
    item->processing = true;
    q->nprocessing++;
    return item->key;
}

int ck_wq_get(struct ck_wq *q, const char **ret_key)
{
    pthread_mutex_lock(&q->lock);
    if (q->len == 0 && !q->shutting_down) { /* about to wait */
        pthread_mutex_unlock(&q->lock);
        ck__memory_idle();
        pthread_mutex_lock(&q->lock);
    }
    while (q->len == 0 && !q->shutting_down)
        pthread_cond_wait(&q->cond, &q->lock);
    int r = CK_ESHUTDOWN;
    if (q->len > 0) {
        *ret_key = take_head(q);
        r = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return r;
}

int ck_wq_try_get(struct ck_wq *q, const char **ret_key)
{
    pthread_mutex_lock(&q->lock);
    int r = q->shutting_down ? CK_ESHUTDOWN : CK_ENOENT;
    if (q->len > 0) {
        *ret_key = take_head(q);
        r = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return r;
}

void ck_wq_done(struct ck_wq *q, const char *key)
{
    int64_t now = ck_clock_now(q->clock);
    pthread_mutex_lock(&q->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&q->items, key);
    struct ck__wq_item *item = e ? e->value : NULL;
    if (!item || !item->processing)
        goto out_unlock;
    observe(&q->work_duration, now - item->started_at);
    item->processing = false;
    q->nprocessing--;
    if (item->dirty) {
        item->queued_at = now;
        ring_push(q, item);
        pthread_cond_signal(&q->cond);
    } else {
        ck__strmap_remove_entry(&q->items, e);
        if (q->nprocessing == 0)
            pthread_cond_broadcast(&q->cond); /* a drain may be waiting */
    }
out_unlock:
    pthread_mutex_unlock(&q->lock);
}

size_t ck_wq_len(struct ck_wq *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

bool ck_wq_contains(struct ck_wq *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    bool found = ck__strmap_find(&q->items, key) != NULL;
    pthread_mutex_unlock(&q->lock);
    return found;
}

/* Refuses new keys and wakes getters and the timer thread; q->lock held. */
static void begin_shutdown(struct ck_wq *q, bool drain)
{
    q->shutting_down = true;
    q->drain = drain;
    pthread_cond_broadcast(&q->cond);
    pthread_cond_broadcast(&q->timer_cond);
}

void ck_wq_shutdown(struct ck_wq *q)
{
    pthread_mutex_lock(&q->lock);
    begin_shutdown(q, false);
    pthread_mutex_unlock(&q->lock);
}

void ck_wq_shutdown_drain(struct ck_wq *q)
{
    pthread_mutex_lock(&q->lock);
    begin_shutdown(q, true);
    while (q->drain && q->nprocessing > 0)
        pthread_cond_wait(&q->cond, &q->lock);
    pthread_mutex_unlock(&q->lock);
}

bool ck_wq_is_shutting_down(struct ck_wq *q)
{
    pthread_mutex_lock(&q->lock);
    bool down = q->shutting_down;
    pthread_mutex_unlock(&q->lock);
    return down;
}

void ck_wq_metrics(struct ck_wq *q, struct ck_wq_metrics *ret_metrics)
{
    pthread_mutex_lock(&q->lock);
    int64_t now = ck_clock_now(q->clock);
    struct ck_wq_metrics m = {
        .depth = q->len,
        .adds = q->adds,
        .retries = q->retries,
        .queue_duration = q->queue_duration,
        .work_duration = q->work_duration,
    };
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(&q->items, NULL, &bucket); e;
         e = ck__strmap_next(&q->items, e, &bucket)) {
        const struct ck__wq_item *item = e->value;
        if (!item->processing)
            continue;
        double s = (double)(now - item->started_at) / (double)CK_SEC;
        m.unfinished_work_seconds += s;
        if (s > m.longest_running_processor_seconds)
            m.longest_running_processor_seconds = s;
    }
    pthread_mutex_unlock(&q->lock);
    *ret_metrics = m;
}

/* One queue's snapshot and its escaped name, for rendering. */
struct rendered {
    struct ck_wq_metrics m;
    char *label;
};

static void print_histogram(FILE *f, const char *metric, const char *help,
                            const struct rendered *qs, size_t n, size_t offset)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", metric, help, metric);
    for (size_t q = 0; q < n; q++) {
        const struct ck_wq_histogram *h =
            (const struct ck_wq_histogram *)((const char *)&qs[q].m + offset);
        const char *label = qs[q].label;
        uint64_t cumulative = 0;
        for (int i = 0; i < CK_WQ_HIST_BUCKETS; i++) {
            cumulative += h->buckets[i];
            fprintf(f, "%s_bucket{name=\"%s\",le=\"%g\"} %llu\n", metric, label,
                    ck_wq_hist_bounds[i], (unsigned long long)cumulative);
        }
        fprintf(f, "%s_bucket{name=\"%s\",le=\"+Inf\"} %llu\n", metric, label,
                (unsigned long long)h->count);
        fprintf(f, "%s_sum{name=\"%s\"} %.9g\n", metric, label, h->sum);
        fprintf(f, "%s_count{name=\"%s\"} %llu\n", metric, label, (unsigned long long)h->count);
    }
}

/* A gauge or counter family: HELP and TYPE once, then one line per queue. */
static void print_family(FILE *f, const char *metric, const char *type, const char *help,
                         const struct rendered *qs, size_t n, size_t offset, bool integer)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
    for (size_t q = 0; q < n; q++) {
        const char *field = (const char *)&qs[q].m + offset;
        if (integer)
            fprintf(f, "%s{name=\"%s\"} %llu\n", metric, qs[q].label,
                    (unsigned long long)*(const uint64_t *)field);
        else
            fprintf(f, "%s{name=\"%s\"} %.9g\n", metric, qs[q].label, *(const double *)field);
    }
}

/* Escapes a label value as the Prometheus text format wants: \\, \" and \n. */
static char *escape_label(const char *s)
{
    char *out = malloc(strlen(s) * 2 + 1);
    if (!out)
        return NULL;
    char *p = out;
    for (; *s; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            *p++ = '\\';
            *p++ = *s == '\n' ? 'n' : *s;
        } else {
            *p++ = *s;
        }
    }
    *p = '\0';
    return out;
}

#define FIELD(name) offsetof(struct ck_wq_metrics, name)

char *ck_wq_metrics_text_all(struct ck_wq *const *queues, size_t n)
{
    char *text = NULL;
    size_t len = 0, ready = 0;
    struct rendered *qs = calloc(n + 1, sizeof(*qs));
    for (; qs && ready < n; ready++) {
        ck_wq_metrics(queues[ready], &qs[ready].m);
        if (!(qs[ready].label = escape_label(queues[ready]->name)))
            goto out_free;
    }
    FILE *f = qs ? open_memstream(&text, &len) : NULL;
    if (!f)
        goto out_free;
    print_family(f, "workqueue_depth", "gauge", "Current depth of the work queue.", qs, n,
                 FIELD(depth), true);
    print_family(f, "workqueue_adds_total", "counter",
                 "Total number of adds handled by the work queue.", qs, n, FIELD(adds), true);
    print_histogram(f, "workqueue_queue_duration_seconds",
                    "How long in seconds a key waits in the work queue before a worker takes it.",
                    qs, n, FIELD(queue_duration));
    print_histogram(f, "workqueue_work_duration_seconds",
                    "How long in seconds processing a key from the work queue takes.", qs, n,
                    FIELD(work_duration));
    print_family(f, "workqueue_unfinished_work_seconds", "gauge",
                 "Seconds of work in progress not yet observed by work_duration; large values "
                 "mean stuck workers.",
                 qs, n, FIELD(unfinished_work_seconds), false);
    print_family(f, "workqueue_longest_running_processor_seconds", "gauge",
                 "Seconds the longest running worker has been processing its key.", qs, n,
                 FIELD(longest_running_processor_seconds), false);
    print_family(f, "workqueue_retries_total", "counter",
                 "Total number of retries handled by the work queue.", qs, n, FIELD(retries), true);
    if (fclose(f) != 0) {
        free(text);
        text = NULL;
    }
out_free:
    for (size_t i = 0; qs && i < ready; i++)
        free(qs[i].label);
    free(qs);
    return text;
}

char *ck_wq_metrics_text(struct ck_wq *q)
{
    return ck_wq_metrics_text_all(&q, 1);
}
