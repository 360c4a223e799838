/*
 * apf.c - API Priority and Fairness applied to requests: each request is
 * classified by the FlowSchemas, and a request of a limited priority level
 * runs only while its level has the seats its work is estimated at; the others
 * wait in the level's queues (shuffle sharded by flow) or are rejected.
 *
 * Mirrors k8s.io/apiserver pkg/util/flowcontrol: apf_controller.go (the
 * digest of the configuration objects, the concurrency limits, the work
 * estimator's most seats, the periodic borrowing between levels),
 * conc_alloc.go (the fair allocation), fairqueuing/integrator.go (the seat
 * demand statistics), rule.go (matching), apf_filter.go,
 * fairqueuing/queueset (queues, hands, queue length limits, fair queuing),
 * shufflesharding (the Dealer), request/ (width.go, list_work_estimator.go,
 * mutating_work_estimator.go, config.go, seat_seconds.go,
 * object_count_tracker.go), watch_tracker.go and dropped_requests_tracker.go
 * (Retry-After); the server's filter is pkg/server/filters/priority-and-fairness.go
 * (its wait limit too), and pkg/endpoints/filters/request_deadline.go (a ?timeout
 * that does not parse).
 *
 * The configuration is compiled into a snapshot (struct snapshot: schemas in
 * matching order, rules as C string lists), rebuilt from the store when a
 * watch of either kind reports a change (ck__apf_tick, once a second) or when
 * this server wrote one (ck__apf_refresh); a request takes a reference to the
 * current snapshot and never reads the store. Priority levels are kept by
 * name for the life of the server (struct ck__apf_level): a rebuild changes
 * their limits and queue shapes but keeps their queued and running requests,
 * so the snapshot can point at them without counting references.
 *
 * Each request's work is estimated as request/width.go does (a list's seats from
 * the object count of its resource, counted every minute; a write's final seats
 * and additional latency from the watches it wakes), and a limited level's
 * seats go to the waiting by queueset.go's fair queuing: a virtual clock R
 * (seat-seconds per busy queue) and, per queue, the R at which its next request
 * may start; the head whose virtual finish is least goes next when its seats
 * fit. A timer thread ends waits at their deadline and releases final seats.
 *
 * Borrowing: a level's nominal limit is ceil(server limit * shares / sum of
 * shares); lendablePercent of it may go to other levels and borrowingLimitPercent
 * more may come from them. Every 10 s (and at each configuration) each level's
 * seat demand (seats in use and waiting, integrated over time) since the last
 * adjustment gives a high watermark, a mean, a deviation and a smoothed value,
 * and the limits in force (the current limits, which the queues dispatch by)
 * are solved again as updateBorrowingLocked does.
 *
 * Simplification (docs/differences.md): a change of a level's queue count moves
 * its waiting requests at once (kube-apiserver drains the excess queues).
 *
 * Threading: one mutex over the levels, their queues, the held final seats and
 * the snapshot pointer; the watch tracker and the object counts have a mutex
 * each, never taken with the first; classification and the estimate run
 * unlocked on a referenced snapshot. A ticket's
 * wake callback is always called without the lock held, and the ticket is
 * not touched once it has been called.
 */
#include <float.h>
#include <gnutls/crypto.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/auth.h"
#include "ckube/cel.h"
#include "ckube/internal/util.h"
#include "ckube/store.h"
#include "internal.h"

#define MAX_RETRY_AFTER 32 /* dropped_requests_tracker.go's maxRetryAfter */
#define SA_PREFIX       "system:serviceaccount:"

/* request/seat_seconds.go: seat-seconds in fixed point, 1e8 to the seat-second */
#define SS_SCALE 1e8
/* queueset.go: a request's presumed service time, and the epoch of R */
#define SERVICE_SECONDS 0.003
#define R_DECREMENT     (UINT64_MAX / 2)
#define R_HIGH          (R_DECREMENT + R_DECREMENT / 2)
/* apf_controller.go: the work estimator's seats of a queuing level, a share of its limit */
#define MAX_SEATS_SHARE 0.15
/* object_count_tracker.go and the store's count period (etcd-count-metric-poll-period) */
/* apf_controller.go: the borrowing adjustment's period, the demand's smoothing */
#define BORROW_PERIOD    10.0
#define DEMAND_SMOOTHING 0.977
/* conc_alloc.go: the least target, and the slack of the sums */
#define MIN_TARGET    0.001
#define ALLOC_EPSILON 0.0000001
#define COUNT_PERIOD  60.0
#define COUNT_STALE   180.0
#define COUNT_PRUNE   3600.0
#define WATCH_BUCKETS 256

/* A list of strings from a rule; `all`: it is exactly the wildcard. */
struct strs {
    char **v;
    size_t n;
    bool all;
};

enum subject_kind { SUBJECT_USER, SUBJECT_GROUP, SUBJECT_SA };

struct subject {
    enum subject_kind kind;
    char *name, *ns;
};

struct resource_rule {
    struct strs verbs, groups, resources, namespaces;
    bool cluster_scope;
};

struct nonresource_rule {
    struct strs verbs, urls;
};

struct policy_rule {
    struct subject *subjects;
    size_t n_subjects;
    struct resource_rule *rr;
    size_t n_rr;
    struct nonresource_rule *nr;
    size_t n_nr;
};

enum distinguisher { BY_NONE, BY_USER, BY_NAMESPACE };

enum reject_reason { REJECT_QUEUE_FULL, REJECT_TIME_OUT, REJECT_CONCURRENCY, REJECT_SHUTDOWN };
static const char *const reject_reasons[] = {"queue-full", "time-out", "concurrency-limit",
                                             "cancelled"};

/* The metrics of one flow schema and priority level pair; kept for the life of the apf. */
struct ck__apf_stat {
    struct ck__apf_stat *next;
    char *schema, *level;
    atomic_long executing, waiting;
    atomic_ullong rejected[4];
};

struct schema {
    char *name;
    char uid[CK__APF_UID_MAX];
    long long precedence;
    enum distinguisher by;
    bool hashed;        /* its level queues in several queues: the flow's hand is needed */
    unsigned max_seats; /* its level's most seats for the work estimator (0: the limit) */
    struct policy_rule *rules;
    size_t n_rules;
    struct ck__apf_level *level; /* kept by the apf: never freed before it */
    struct ck__apf_stat *stat;   /* likewise */
};

struct snapshot {
    atomic_int refs;
    struct schema *schemas; /* in matching order */
    size_t n;
};

/* queueset.go's queue: its waiting requests, and the seats of those it seated. */
struct queue {
    struct ck__apf_ticket *head, *tail;
    unsigned len;
    unsigned executing;     /* its requests running */
    unsigned seats_in_use;  /* their seats, and final seats still held */
    unsigned waiting_seats; /* the waiting requests' seats */
    uint64_t waiting_work;  /* and their work */
    uint64_t next_dispatch_r;
};

/* fairqueuing/integrator.go: the time integral of a value since the last reset. */
struct integrator {
    double last; /* when x was last set */
    double x, elapsed, sum_x, sum_xx, max;
};

struct ck__apf_level {
    struct ck__apf_level *next;
    char *name;
    char uid[CK__APF_UID_MAX];
    bool configured; /* in the current configuration */
    bool active;     /* in the allocation: configured, or busy when last configured */
    bool was_active; /* before the configuration being applied */
    bool allocated;  /* has taken part in an adjustment: its gauges are shown */
    bool exempt, queuing;
    long long shares;
    long long lendable_percent, borrowing_percent; /* -1: borrowingLimitPercent unset */
    long long nominal, min_cl, max_cl;             /* nominalCL, minCL, maxCL */
    unsigned limit;                                /* currentCL: the seats the level has now */
    /* the seat demand (seats in use and waiting) and its statistics (seatDemandStats) */
    struct integrator demand;
    long long high_watermark;
    double average, deviation, smoothed, target;
    unsigned waiting_seats; /* the waiting requests' seats */
    unsigned hand_size, queue_length_limit;
    struct queue *queues;
    unsigned n_queues;
    unsigned max_seats;    /* the work estimator's, 0 for a level without queues */
    unsigned executing;    /* requests running */
    unsigned seats_in_use; /* their seats, and final seats still held */
    unsigned waiting;
    unsigned shape;                 /* changes with the queue count: older seats count no queue */
    unsigned busy_queues;           /* queues with requests waiting or running */
    unsigned long long queue_seats; /* the queues' seats in use and waiting */
    unsigned robin;                 /* the last queue dispatched from */
    unsigned long long enqueues;
    uint64_t current_r; /* R, seat-seconds */
    double last_real;   /* when R was last advanced */
    /* the dropped-requests tracker of this level (Retry-After) */
    long long retry_after, retry_update_unix, cur_unix, cur_count;
    struct {
        long long unix_time, count;
    } history[MAX_RETRY_AFTER + 1];
    unsigned n_history;
};

/* Final seats held after a request answered, until at. */
struct held {
    struct held *next; /* by at */
    struct ck__apf_level *level;
    unsigned queue, shape, seats;
    bool in_queue;
    double at;
};

/* watch_tracker.go: the watches of one group, resource, namespace and name. */
struct ck__apf_watch {
    struct ck__apf_watch *next;
    unsigned count;
    char *key; /* group NUL resource NUL namespace NUL name */
    size_t len;
};

/* object_count_tracker.go: one resource's count, and when it was set. */
struct object_count {
    char *group_resource;
    long long count;
    double at;
};

struct ck__apf {
    pthread_mutex_t lock;
    unsigned server_limit;
    long long nominal_sum;         /* the nominal limits of the levels in the allocation */
    double fair_frac, next_borrow; /* seat_fair_frac; when the next adjustment is due */
    double (*clock)(void *arg);
    void *clock_arg;
    struct held *lingering;
    double next_deadline; /* the earliest waiting ticket's, or INFINITY */
    pthread_t timer;
    pthread_cond_t timer_wake; /* CLOCK_MONOTONIC */
    bool timer_running;
    /* the watch tracker and the object counts, each under its own lock */
    pthread_mutex_t watch_lock;
    struct ck__apf_watch *watches_by_key[WATCH_BUCKETS];
    pthread_mutex_t count_lock;
    struct object_count *counts;
    size_t n_counts;
    double counted_at;
    struct ck__apf_level *levels;
    struct snapshot *current;
    struct ck__apf_stat *stats;
    bool stopping;
    /* following the store (ck__apf_start) */
    struct ck__registry *reg;
    const struct ck_kind *schema_kind, *level_kind;
    struct ck_store_watch *watches[2];
    atomic_bool dirty;
};

/* ---- compiling the configuration ------------------------------------------------ */

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void strs_release(struct strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

static int strs_compile(const json_t *array, const char *wildcard, struct strs *ret)
{
    memset(ret, 0, sizeof(*ret));
    size_t n = json_array_size(array);
    if (!n)
        return 0;
    if (!(ret->v = ck__calloc(n, sizeof(char *))))
        return CK_ENOMEM;
    size_t i;
    const json_t *v;
    json_array_foreach(array, i, v)
    {
        const char *s = json_string_value(v);
        if (!s)
            continue;
        if (!(ret->v[ret->n++] = ck__strdup(s)))
            return CK_ENOMEM;
    }
    ret->all = ret->n == 1 && wildcard && strcmp(ret->v[0], wildcard) == 0;
    return 0;
}

/* rule.go's containsString: x is listed, or the list is the wildcard alone. */
static bool strs_contain(const struct strs *s, const char *x)
{
    if (s->all)
        return true;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return true;
    return false;
}

static void rule_release(struct policy_rule *r)
{
    for (size_t i = 0; i < r->n_subjects; i++) {
        free(r->subjects[i].name);
        free(r->subjects[i].ns);
    }
    free(r->subjects);
    for (size_t i = 0; i < r->n_rr; i++) {
        strs_release(&r->rr[i].verbs);
        strs_release(&r->rr[i].groups);
        strs_release(&r->rr[i].resources);
        strs_release(&r->rr[i].namespaces);
    }
    free(r->rr);
    for (size_t i = 0; i < r->n_nr; i++) {
        strs_release(&r->nr[i].verbs);
        strs_release(&r->nr[i].urls);
    }
    free(r->nr);
}

static int subject_compile(const json_t *s, struct subject *ret)
{
    const char *kind = str(s, "kind");
    const char *name = NULL, *ns = NULL;
    if (kind && strcmp(kind, "User") == 0) {
        ret->kind = SUBJECT_USER;
        name = str(json_object_get(s, "user"), "name");
    } else if (kind && strcmp(kind, "Group") == 0) {
        ret->kind = SUBJECT_GROUP;
        name = str(json_object_get(s, "group"), "name");
    } else if (kind && strcmp(kind, "ServiceAccount") == 0) {
        ret->kind = SUBJECT_SA;
        name = str(json_object_get(s, "serviceAccount"), "name");
        ns = str(json_object_get(s, "serviceAccount"), "namespace");
    }
    if (!name) /* matches nobody, as a subject without its member does */
        return 0;
    ret->name = ck__strdup(name);
    ret->ns = ck__strdup(ns ? ns : "");
    return ret->name && ret->ns ? 0 : CK_ENOMEM;
}

static int rule_compile(const json_t *rule, struct policy_rule *ret)
{
    const json_t *subjects = json_object_get(rule, "subjects");
    const json_t *rrs = json_object_get(rule, "resourceRules");
    const json_t *nrs = json_object_get(rule, "nonResourceRules");
    size_t ns = json_array_size(subjects), nr = json_array_size(rrs), nn = json_array_size(nrs);
    ret->subjects = ck__calloc(ns ? ns : 1, sizeof(*ret->subjects));
    ret->rr = ck__calloc(nr ? nr : 1, sizeof(*ret->rr));
    ret->nr = ck__calloc(nn ? nn : 1, sizeof(*ret->nr));
    if (!ret->subjects || !ret->rr || !ret->nr)
        return CK_ENOMEM;
    int r = 0;
    for (size_t i = 0; r == 0 && i < ns; i++, ret->n_subjects++)
        r = subject_compile(json_array_get(subjects, i), &ret->subjects[i]);
    for (size_t i = 0; r == 0 && i < nr; i++, ret->n_rr++) {
        const json_t *o = json_array_get(rrs, i);
        struct resource_rule *rr = &ret->rr[i];
        r = strs_compile(json_object_get(o, "verbs"), "*", &rr->verbs);
        r = r ? r : strs_compile(json_object_get(o, "apiGroups"), "*", &rr->groups);
        r = r ? r : strs_compile(json_object_get(o, "resources"), "*", &rr->resources);
        r = r ? r : strs_compile(json_object_get(o, "namespaces"), "*", &rr->namespaces);
        rr->cluster_scope = json_is_true(json_object_get(o, "clusterScope"));
    }
    for (size_t i = 0; r == 0 && i < nn; i++, ret->n_nr++) {
        const json_t *o = json_array_get(nrs, i);
        r = strs_compile(json_object_get(o, "verbs"), "*", &ret->nr[i].verbs);
        r = r ? r : strs_compile(json_object_get(o, "nonResourceURLs"), NULL, &ret->nr[i].urls);
    }
    return r;
}

static void snapshot_free(struct snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->schemas[i].n_rules; k++)
            rule_release(&s->schemas[i].rules[k]);
        free(s->schemas[i].rules);
        free(s->schemas[i].name);
    }
    free(s->schemas);
    free(s);
}

static void snapshot_unref(struct snapshot *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        snapshot_free(s);
}

static void copy_uid(char dst[CK__APF_UID_MAX], const json_t *obj)
{
    const char *uid = str(json_object_get(obj, "metadata"), "uid");
    snprintf(dst, CK__APF_UID_MAX, "%s", uid ? uid : "");
}

/* The level named name, made (unconfigured) when new; NULL when out of memory. Locked. */
static struct ck__apf_level *level_named(struct ck__apf *a, const char *name)
{
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        if (strcmp(l->name, name) == 0)
            return l;
    struct ck__apf_level *l = ck__calloc(1, sizeof(*l));
    if (!l || !(l->name = ck__strdup(name))) {
        free(l);
        return NULL;
    }
    l->retry_after = 1;
    l->next = a->levels;
    a->levels = l;
    return l;
}

/* The metrics of the pair, made when new; NULL when out of memory. Locked. */
static struct ck__apf_stat *stat_of(struct ck__apf *a, const char *schema, const char *level)
{
    for (struct ck__apf_stat *st = a->stats; st; st = st->next)
        if (strcmp(st->schema, schema) == 0 && strcmp(st->level, level) == 0)
            return st;
    struct ck__apf_stat *st = ck__calloc(1, sizeof(*st));
    if (!st || !(st->schema = ck__strdup(schema)) || !(st->level = ck__strdup(level))) {
        if (st)
            free(st->schema);
        free(st);
        return NULL;
    }
    st->next = a->stats;
    a->stats = st;
    return st;
}

static int by_precedence(const void *pa, const void *pb)
{
    const struct schema *a = pa, *b = pb;
    if (a->precedence != b->precedence)
        return a->precedence < b->precedence ? -1 : 1;
    return strcmp(a->name, b->name);
}

static unsigned max_seats_of(const struct ck__apf_ticket *t)
{
    return t->work.initial_seats >= t->work.final_seats ? t->work.initial_seats
                                                        : t->work.final_seats;
}

static bool busy(const struct queue *q)
{
    return q->len || q->executing;
}

/* Puts t at the end of q, a queue of l (the level's waiting count is the caller's). */
static void queue_append(struct ck__apf_level *l, struct queue *q, struct ck__apf_ticket *t)
{
    if (!busy(q))
        l->busy_queues++;
    l->queue_seats += max_seats_of(t);
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
    q->len++;
    q->waiting_seats += max_seats_of(t);
    l->waiting_seats += max_seats_of(t);
    q->waiting_work += t->total_work;
}

/*
 * Moves the waiting tickets of l into n new queues (a changed queue count); the seats of
 * those running stay the level's but no longer any queue's. Locked.
 */
static int reshape_queues(struct ck__apf_level *l, unsigned n)
{
    if (n == l->n_queues)
        return 0;
    struct queue *q = ck__calloc(n ? n : 1, sizeof(*q));
    if (!q)
        return CK_ENOMEM;
    for (unsigned i = 0; i < (n ? n : 1); i++)
        q[i].next_dispatch_r = l->current_r;
    l->busy_queues = 0;
    l->queue_seats = 0;
    l->waiting_seats = 0;
    for (unsigned i = 0; i < l->n_queues; i++) {
        for (struct ck__apf_ticket *t = l->queues[i].head, *next; t; t = next) {
            next = t->next;
            t->queue = n ? i % n : 0;
            queue_append(l, &q[t->queue], t);
        }
    }
    free(l->queues);
    l->queues = q;
    l->n_queues = n ? n : 1;
    l->robin = 0;
    l->shape++;
    return 0;
}

/* ---- the seat demand and the borrowing between levels --------------------------- */

/* integrator.go's Set: the demand is now the level's seats in use and waiting. Locked. */
static void demand_set(struct ck__apf_level *l, double now)
{
    struct integrator *d = &l->demand;
    if (now > d->last) { /* x held since the last change */
        double dt = now - d->last;
        d->elapsed += dt;
        d->sum_x += d->x * dt;
        d->sum_xx += d->x * d->x * dt;
        d->last = now;
    }
    d->x = (double)l->seats_in_use + l->waiting_seats;
    if (d->x > d->max)
        d->max = d->x;
}

/* A level new to the allocation: a new integrator and no statistics. Locked. */
static void level_restart(struct ck__apf_level *l, double now)
{
    l->demand = (struct integrator){.last = now};
    demand_set(l, now);
    l->high_watermark = 0;
    l->average = l->deviation = l->smoothed = 0;
}

/*
 * The integrator's Reset and seatDemandStats.update: the high watermark, the time-weighted
 * mean and deviation since the last reset, and the smoothed demand, which follows the
 * envelope (mean + deviation) up at once and down by DEMAND_SMOOTHING a period. Locked.
 */
static void demand_statistics(struct ck__apf_level *l, double now)
{
    struct integrator *d = &l->demand;
    demand_set(l, now);
    l->high_watermark = llround(d->max);
    if (d->elapsed > 0) {
        double average = d->sum_x / d->elapsed;
        double variance = d->sum_xx / d->elapsed - average * average;
        l->average = average;
        l->deviation = variance >= 0 ? sqrt(variance) : 0; /* NaN counts as 0 */
        double envelope = l->average + l->deviation;
        double decayed = DEMAND_SMOOTHING * l->smoothed + (1 - DEMAND_SMOOTHING) * envelope;
        l->smoothed = envelope > decayed ? envelope : decayed;
    }
    d->elapsed = d->sum_x = d->sum_xx = 0;
    d->max = d->x;
}

/* conc_alloc.go's allocProblemItem. */
struct alloc_item {
    double target, lower, upper;
};

/* One bound of an item, relative to its target. */
struct bound {
    double value;
    size_t item;
    bool lower;
};

static int by_value(const void *pa, const void *pb)
{
    const struct bound *a = pa, *b = pb;
    return a->value < b->value ? -1 : a->value > b->value;
}

/*
 * The bound-constrained case of the allocation: the fair proportion found by raising it
 * from the least relative lower bound through the sorted bounds, the sum growing by the
 * targets of the items between their bounds. -1 when the bounds run out.
 */
static int sweep_bounds(double required, double low_sum, double start, const double *targets,
                        struct bound *b, size_t n_bounds, double *ret_fair)
{
    qsort(b, n_bounds, sizeof(*b), by_value);
    double sum = low_sum, fair = start, between = 0, delta = 0;
    long n_between = 0, n_delta = 0; /* the items between their bounds */
    size_t next = 0;
    while (sum < required) {
        double at;
        do { /* the next bound above fair, with every bound at fair passed */
            between += delta;
            n_between += n_delta;
            if (next >= n_bounds)
                return -1;
            at = b[next].value;
            delta = b[next].lower ? targets[b[next].item] : -targets[b[next].item];
            n_delta = b[next].lower ? 1 : -1;
            next++;
        } while (at <= fair);
        if (n_between == 0) { /* no item between its bounds here: nothing grows */
            fair = at;
            continue;
        }
        double reached = fair + (required - sum) / between;
        if (reached <= at) {
            fair = reached;
            break;
        }
        sum += (at - fair) * between;
        fair = at;
    }
    *ret_fair = fair;
    return 0;
}

/*
 * conc_alloc.go's computeConcurrencyAllocation: allocations summing to required, each
 * within its bounds and else the fair proportion times its target (at least MIN_TARGET).
 * -1 when the bounds make that impossible (or out of memory).
 */
static int allocate(long long required, const struct alloc_item *items, size_t n, double *ret,
                    double *ret_fair)
{
    double low = 0, high = 0, sum_targets = 0;
    double lb_min = FLT_MAX, lb_max = 0, ub_min = FLT_MAX, ub_max = 0;
    double *targets = ck__calloc(n ? n : 1, sizeof(*targets));
    struct bound *b = ck__calloc(n ? 2 * n : 1, sizeof(*b));
    int r = targets && b ? 0 : -1;
    for (size_t i = 0; r == 0 && i < n; i++) {
        const struct alloc_item *it = &items[i];
        if (it->lower < 0 || it->target < it->lower || it->upper < it->lower)
            r = -1;
        targets[i] = it->target < MIN_TARGET ? MIN_TARGET : it->target;
        low += it->lower;
        high += it->upper;
        sum_targets += targets[i];
        b[2 * i] = (struct bound){.value = it->lower / targets[i], .item = i, .lower = true};
        b[2 * i + 1] = (struct bound){.value = it->upper / targets[i], .item = i};
        lb_min = fmin(lb_min, b[2 * i].value);
        lb_max = fmax(lb_max, b[2 * i].value);
        ub_min = fmin(ub_min, b[2 * i + 1].value);
        ub_max = fmax(ub_max, b[2 * i + 1].value);
    }
    double want = (double)required, fair = 0;
    bool bounded = true; /* the proportion is cut by the bounds */
    if (r < 0 || lb_max > 1 || low - want > ALLOC_EPSILON || want - high > ALLOC_EPSILON)
        r = -1;
    else if (required == 0)
        fair = 0;
    else if (low - want > -ALLOC_EPSILON) /* no room: all at their lower bounds */
        fair = lb_min;
    else if (want - high > -ALLOC_EPSILON) /* all at their upper bounds */
        fair = ub_max;
    else if ((fair = want / sum_targets) < lb_max || fair > ub_min) /* some bounds matter */
        r = sweep_bounds(want, low, lb_min, targets, b, 2 * n, &fair);
    else
        bounded = false;
    for (size_t i = 0; r == 0 && i < n; i++) {
        double x = fair * targets[i];
        ret[i] = required == 0 ? 0 : bounded ? fmax(items[i].lower, fmin(items[i].upper, x)) : x;
    }
    *ret_fair = r == 0 ? fair : 0;
    free(targets);
    free(b);
    return r;
}

static long long max_ll(long long a, long long b)
{
    return a > b ? a : b;
}

static long long int_at(const json_t *o, const char *k, long long dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/*
 * Applies the PriorityLevelConfigurations to the kept levels: their queues and their
 * nominal, lower and upper limits (the current ones are the adjustment's). Locked.
 */
static int apply_levels(struct ck__apf *a, const json_t *levels, double now)
{
    for (struct ck__apf_level *l = a->levels; l; l = l->next) {
        l->configured = false; /* a level left out stays while it is busy */
        l->was_active = l->active;
        l->active = l->executing || l->waiting || l->seats_in_use;
    }
    size_t i;
    const json_t *obj;
    json_array_foreach(levels, i, obj)
    {
        const char *name = str(json_object_get(obj, "metadata"), "name");
        const json_t *spec = json_object_get(obj, "spec");
        if (!name)
            continue;
        struct ck__apf_level *l = level_named(a, name);
        if (!l)
            return CK_ENOMEM;
        if (!l->was_active) /* new, or back: its statistics start afresh */
            level_restart(l, now);
        l->configured = l->active = true;
        copy_uid(l->uid, obj);
        const char *type = str(spec, "type");
        l->exempt = type && strcmp(type, "Exempt") == 0;
        const json_t *limited = json_object_get(spec, "limited");
        const json_t *exempt = json_object_get(spec, "exempt");
        const json_t *limits = l->exempt ? exempt : limited;
        l->shares = int_at(limits, "nominalConcurrencyShares", l->exempt ? 0 : 30);
        l->lendable_percent = int_at(limits, "lendablePercent", 0);
        l->borrowing_percent = l->exempt ? -1 : int_at(limits, "borrowingLimitPercent", -1);
        const json_t *response = json_object_get(limited, "limitResponse");
        const char *rtype = str(response, "type");
        l->queuing = !l->exempt && rtype && strcmp(rtype, "Queue") == 0;
        const json_t *queuing = json_object_get(response, "queuing");
        long long queues = l->queuing ? int_at(queuing, "queues", 64) : 1;
        long long hand = int_at(queuing, "handSize", 8);
        long long length = int_at(queuing, "queueLengthLimit", 50);
        l->queue_length_limit = length > 0 ? (unsigned)length : 50;
        if (queues < 1)
            queues = 1;
        l->hand_size = hand < 1 ? 1 : hand > queues ? (unsigned)queues : (unsigned)hand;
        if (l->hand_size > 15) /* the Dealer's largest hand */
            l->hand_size = 15;
        if (reshape_queues(l, (unsigned)queues) < 0)
            return CK_ENOMEM;
    }
    /* finishQueueSetReconfigsLocked: nominal limits from the shares of the levels kept */
    long long sum = 0;
    a->nominal_sum = 0;
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        if (l->active && l->shares > 0)
            sum += l->shares;
    for (struct ck__apf_level *l = a->levels; l; l = l->next) {
        if (!l->active)
            continue;
        long long server = a->server_limit;
        long long nominal = sum > 0 && l->shares > 0 ? (server * l->shares + sum - 1) / sum : 0;
        long long lendable = llround((double)nominal * (double)l->lendable_percent / 100);
        long long borrowing = l->borrowing_percent < 0
                                  ? server
                                  : llround((double)nominal * (double)l->borrowing_percent / 100);
        l->nominal = nominal;
        l->min_cl = nominal - lendable;
        l->max_cl = nominal + borrowing;
        a->nominal_sum += nominal;
        /* max(1, min(ceil(0.15 * nominal), nominal / handSize)) for a level with queues */
        unsigned share = (unsigned)ceil((double)nominal * MAX_SEATS_SHARE);
        unsigned per_hand = (unsigned)(l->hand_size ? nominal / l->hand_size : nominal);
        unsigned most = share < per_hand ? share : per_hand;
        l->max_seats = !l->queuing ? 0 : most < 1 ? 1 : most;
    }
    return 0;
}

static int schema_compile(struct ck__apf *a, const json_t *obj, struct schema *s, bool *ret_used)
{
    *ret_used = false;
    const char *name = str(json_object_get(obj, "metadata"), "name");
    const json_t *spec = json_object_get(obj, "spec");
    const char *level = str(json_object_get(spec, "priorityLevelConfiguration"), "name");
    if (!name || !level)
        return 0;
    struct ck__apf_level *l = NULL;
    for (l = a->levels; l && strcmp(l->name, level) != 0; l = l->next)
        ;
    if (!l || !l->configured)
        return 0; /* dangling: apf_controller.go leaves such a schema out */
    memset(s, 0, sizeof(*s));
    *ret_used = true;
    s->level = l;
    s->hashed = l->queuing && l->n_queues > 1;
    s->max_seats = l->max_seats;
    if (!(s->stat = stat_of(a, name, level)))
        return CK_ENOMEM;
    copy_uid(s->uid, obj);
    s->precedence = int_at(spec, "matchingPrecedence", 1000);
    const char *by = str(json_object_get(spec, "distinguisherMethod"), "type");
    s->by = !by                              ? BY_NONE
            : strcmp(by, "ByUser") == 0      ? BY_USER
            : strcmp(by, "ByNamespace") == 0 ? BY_NAMESPACE
                                             : BY_NONE;
    const json_t *rules = json_object_get(spec, "rules");
    size_t n = json_array_size(rules);
    if (!(s->name = ck__strdup(name)) || !(s->rules = ck__calloc(n ? n : 1, sizeof(*s->rules))))
        return CK_ENOMEM;
    int r = 0;
    for (size_t i = 0; r == 0 && i < n; i++, s->n_rules++)
        r = rule_compile(json_array_get(rules, i), &s->rules[i]);
    return r;
}

/* ---- dispatching ------------------------------------------------------------------- */

void ck__apf_wake(struct ck__apf_ticket *list)
{
    while (list) {
        struct ck__apf_ticket *next = list->next;
        list->next = NULL;
        list->wake(list); /* the ticket is its owner's again from here */
        list = next;
    }
}

static struct ck__apf_ticket *queue_pop(struct ck__apf_level *l, struct queue *q)
{
    struct ck__apf_ticket *t = q->head;
    q->head = t->next;
    if (!q->head)
        q->tail = NULL;
    q->len--;
    q->waiting_seats -= max_seats_of(t);
    l->waiting_seats -= max_seats_of(t);
    l->queue_seats -= max_seats_of(t);
    if (!busy(q))
        l->busy_queues--;
    q->waiting_work -= t->total_work;
    l->waiting--;
    atomic_fetch_sub(&t->stat->waiting, 1);
    t->next = NULL;
    return t;
}

static void push(struct ck__apf_ticket **list, struct ck__apf_ticket *t)
{
    t->next = *list;
    *list = t;
}

/* seat_seconds.go's SeatsTimesDuration, wrapping as its conversion does when negative. */
static uint64_t seat_seconds(double seats, double seconds)
{
    return (uint64_t)(int64_t)llround(seats * seconds * SS_SCALE);
}

/*
 * queueset.go's syncTimeLocked: R advances, since the level's last change, by the
 * seconds passed times min(seats asked for, limit) over the queues in use; its epoch
 * moves back by half its range before it could overflow. Locked.
 */
static void sync_time(struct ck__apf_level *l, double now)
{
    double elapsed = now - l->last_real;
    l->last_real = now;
    if (elapsed <= 0 || !l->queuing || !l->busy_queues) /* sums kept as the queues change */
        return;
    unsigned long long seats = l->queue_seats;
    double ratio = (double)(seats < l->limit ? seats : l->limit) / l->busy_queues;
    l->current_r += seat_seconds(ratio, elapsed);
    if (l->current_r < R_HIGH)
        return;
    l->current_r -= R_DECREMENT;
    for (unsigned i = 0; i < l->n_queues; i++) {
        struct queue *q = &l->queues[i];
        if (!q->len && !q->executing) {
            q->next_dispatch_r = 0;
            continue;
        }
        q->next_dispatch_r -= R_DECREMENT;
        for (struct ck__apf_ticket *t = q->head; t; t = t->next)
            t->arrival_r -= R_DECREMENT;
    }
}

/* queueset.go's anti-windup: a queue's next dispatch never precedes its head's arrival. */
static void bound_next_dispatch(struct queue *q)
{
    if (q->head && q->next_dispatch_r < q->head->arrival_r)
        q->next_dispatch_r = q->head->arrival_r;
}

/* queueset.go's canAccommodateSeatsLocked. Locked. */
static bool fits(const struct ck__apf_level *l, unsigned seats)
{
    if (seats > l->limit) /* wider than the level: alone */
        return l->executing == 0;
    return l->seats_in_use + seats <= l->limit;
}

/* t takes its seats (from its queue q, or from none). Locked. */
static void seat(struct ck__apf_level *l, struct queue *q, struct ck__apf_ticket *t, double now)
{
    unsigned seats = max_seats_of(t);
    t->seated = true;
    t->verdict = CK__APF_EXECUTE;
    t->started = now;
    t->in_queue = q != NULL;
    t->shape = l->shape;
    l->executing++;
    l->seats_in_use += seats;
    atomic_fetch_add(&t->stat->executing, 1);
    if (q) {
        if (!busy(q))
            l->busy_queues++;
        l->queue_seats += seats;
        q->executing++;
        q->seats_in_use += seats;
        q->next_dispatch_r += t->total_work;
    }
}

/*
 * queueset.go's dispatchLocked: of the queues' heads, from the one after the last queue
 * dispatched from, the first whose virtual finish (its queue's next dispatch R plus its
 * work) is least; it is seated when its seats fit, its final seats cut to the limit.
 * Returns whether one was. Locked.
 */
static bool dispatch_one(struct ck__apf_level *l, double now, struct ck__apf_ticket **woken,
                         const struct queue *hint)
{
    uint64_t least = UINT64_MAX;
    unsigned best = 0;
    bool direct = l->waiting == 1 && hint && hint->head; /* the only one waiting: no search */
    bool found = direct;
    if (direct)
        best = (unsigned)(hint - l->queues);
    for (unsigned k = 0, i = l->robin; k < l->n_queues && !direct; k++) {
        i = (i + 1) % l->n_queues;
        const struct queue *q = &l->queues[i];
        if (q->head && q->next_dispatch_r + q->head->total_work < least) {
            least = q->next_dispatch_r + q->head->total_work;
            best = i;
            found = true;
        }
    }
    if (!found || !fits(l, max_seats_of(l->queues[best].head)))
        return false;
    struct queue *q = &l->queues[best];
    struct ck__apf_ticket *t = queue_pop(l, q);
    if (t->work.final_seats > l->limit) { /* the same final work on fewer seats */
        t->work.final_seats = l->limit;
        t->work.additional_latency = (double)t->final_work / SS_SCALE / l->limit;
    }
    l->robin = best;
    seat(l, q, t, now);
    bound_next_dispatch(q);
    push(woken, t);
    return true;
}

/* queueset.go's dispatchAsMuchAsPossibleLocked. Locked. */
static void dispatch_locked(struct ck__apf_level *l, double now, struct ck__apf_ticket **woken,
                            const struct queue *hint)
{
    while (l->waiting > 0 && l->seats_in_use < l->limit && dispatch_one(l, now, woken, hint))
        ;
}

/* Gives seats back to l (and to the queue they came from, in the same shape). Locked. */
static void release(struct ck__apf_level *l, bool in_queue, unsigned queue, unsigned shape,
                    unsigned seats)
{
    l->seats_in_use -= seats;
    if (in_queue && shape == l->shape && queue < l->n_queues) {
        l->queues[queue].seats_in_use -= seats;
        l->queue_seats -= seats;
    }
}

/* Releases the final seats held until now or before, and dispatches. Locked. */
static void release_due(struct ck__apf *a, double now, struct ck__apf_ticket **woken)
{
    while (a->lingering && a->lingering->at <= now) {
        struct held *g = a->lingering;
        a->lingering = g->next;
        sync_time(g->level, now);
        release(g->level, g->in_queue, g->queue, g->shape, g->seats);
        dispatch_locked(g->level, now, woken, NULL);
        demand_set(g->level, now);
        free(g);
    }
}

/*
 * apf_controller.go's updateBorrowingLocked: each level's demand statistics since the last
 * adjustment, then the current limits. The exempt level's is its lower limit or its high
 * watermark, whichever is more, taken from what the others share; each other level is
 * owed at least its lower limit, or more up to its nominal limit when its high watermark
 * is higher; when the rest cannot cover what they are owed the excess over their lower
 * limits is cut in proportion, else all the nominal limits are divided fairly by
 * targets (the smoothed demand, at least what it is owed) within the levels' bounds.
 * The queues then dispatch by their new limits. Locked.
 */
static void adjust_limits(struct ck__apf *a, double now, struct ck__apf_ticket **woken)
{
    size_t n = 0, k = 0;
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        n += l->active && !l->exempt;
    struct alloc_item *items = ck__calloc(n ? n : 1, sizeof(*items));
    double *allocs = ck__calloc(n ? n : 1, sizeof(*allocs));
    long long remaining = a->nominal_sum, min_sum = 0, owed_sum = 0;
    for (struct ck__apf_level *l = a->levels; l && items && allocs; l = l->next) {
        if (!l->active)
            continue;
        l->allocated = true;
        demand_statistics(l, now);
        if (l->exempt) {
            long long owed = max_ll(l->min_cl, l->high_watermark);
            l->limit = owed > UINT32_MAX ? UINT32_MAX : (unsigned)owed;
            l->target = (double)owed;
            remaining -= owed;
            continue;
        }
        long long owed =
            max_ll(l->min_cl, l->nominal < l->high_watermark ? l->nominal : l->high_watermark);
        items[k].lower = (double)owed;
        items[k].upper = (double)l->max_cl;
        items[k].target = l->target = fmax((double)owed, l->smoothed);
        min_sum += l->min_cl;
        owed_sum += owed;
        k++;
    }
    bool solved = false;
    double cut = 0;
    a->fair_frac = 0;
    if (!items || !allocs || (n == 0 && a->nominal_sum > 0)) /* nothing to share */
        n = 0;
    else if (remaining > min_sum && remaining <= owed_sum)
        cut = (double)(remaining - min_sum) / (double)(owed_sum - min_sum);
    else if (remaining > owed_sum &&
             !(solved = allocate(a->nominal_sum, items, n, allocs, &a->fair_frac) == 0))
        CK_LOGW("API Priority and Fairness cannot share the concurrency limits: the current "
                "ones stay");
    k = 0;
    for (struct ck__apf_level *l = a->levels; l && k < n; l = l->next) {
        if (!l->active || l->exempt)
            continue;
        long long limit = l->limit;
        if (remaining <= min_sum)
            limit = l->min_cl;
        else if (remaining <= owed_sum)
            limit = l->min_cl + llround((items[k].lower - (double)l->min_cl) * cut);
        else if (solved)
            limit = llround(allocs[k]);
        l->limit = limit < 0 ? 0 : limit > UINT32_MAX ? UINT32_MAX : (unsigned)limit;
        k++;
    }
    free(items);
    free(allocs);
    for (struct ck__apf_level *l = a->levels; l; l = l->next) {
        dispatch_locked(l, now, woken, NULL); /* limits may have grown */
        demand_set(l, now);
    }
}

/*
 * dropped_requests_tracker.go, for one level: counts the rejections of each second and
 * doubles Retry-After (up to 32) when the last retry_after seconds saw at least three
 * times that many, lowering it by one when they saw fewer than retry_after. Locked.
 */
static void note_dropped(struct ck__apf_level *l, long long now)
{
    if (l->cur_unix == now) {
        l->cur_count++;
        return;
    }
    if (l->cur_count) {
        if (l->n_history == MAX_RETRY_AFTER + 1) {
            memmove(l->history, l->history + 1, MAX_RETRY_AFTER * sizeof(l->history[0]));
            l->n_history--;
        }
        l->history[l->n_history].unix_time = l->cur_unix;
        l->history[l->n_history].count = l->cur_count;
        l->n_history++;
    }
    l->cur_unix = now;
    l->cur_count = 1;
    long long dropped = 0;
    for (unsigned i = l->n_history; i-- > 0;) {
        if (now - l->history[i].unix_time > l->retry_after)
            break;
        if (l->history[i].unix_time < now)
            dropped += l->history[i].count;
    }
    if (now - l->retry_update_unix >= l->retry_after && dropped >= 3 * l->retry_after) {
        l->retry_after =
            l->retry_after * 2 > MAX_RETRY_AFTER ? MAX_RETRY_AFTER : l->retry_after * 2;
        l->retry_update_unix = now;
    } else if (dropped < l->retry_after && l->retry_after > 1) {
        l->retry_after--;
    }
}

static void reject_locked(struct ck__apf_level *l, struct ck__apf_ticket *t, enum reject_reason why)
{
    t->verdict = CK__APF_REJECT;
    t->seated = false;
    atomic_fetch_add(&t->stat->rejected[why], 1);
    note_dropped(l, (long long)time(NULL));
    t->retry_after = (unsigned)l->retry_after;
}

/* ---- classification ------------------------------------------------------------- */

static bool subject_matches(const struct subject *s, const struct ck__apf_digest *d)
{
    if (!s->name)
        return false;
    switch (s->kind) {
    case SUBJECT_USER:
        return strcmp(s->name, "*") == 0 || strcmp(s->name, d->user) == 0;
    case SUBJECT_GROUP:
        if (strcmp(s->name, "*") == 0)
            return true;
        for (size_t i = 0; i < d->n_groups; i++)
            if (strcmp(d->groups[i], s->name) == 0)
                return true;
        return false;
    case SUBJECT_SA: {
        /* system:serviceaccount:NS:NAME, any NAME for "*" */
        size_t pl = strlen(SA_PREFIX), nl = strlen(s->ns);
        const char *u = d->user;
        if (strncmp(u, SA_PREFIX, pl) != 0 || strncmp(u + pl, s->ns, nl) != 0 || u[pl + nl] != ':')
            return false;
        return strcmp(s->name, "*") == 0 || strcmp(u + pl + nl + 1, s->name) == 0;
    }
    }
    return false;
}

static bool resource_rule_matches(const struct resource_rule *r, const struct ck__apf_digest *d)
{
    if (!strs_contain(&r->verbs, d->verb))
        return false;
    char joined[160];
    const char *resource = d->resource;
    if (d->subresource && d->subresource[0]) {
        snprintf(joined, sizeof(joined), "%s/%s", d->resource, d->subresource);
        resource = joined;
    }
    if (!strs_contain(&r->resources, resource) || !strs_contain(&r->groups, d->api_group))
        return false;
    if (!d->namespace || !d->namespace[0])
        return r->cluster_scope;
    return strs_contain(&r->namespaces, d->namespace);
}

/* rule.go's matchPolicyRuleNonResourceURL: "*", the path itself, or a prefix up to "/". */
static bool url_matches(const struct strs *urls, const char *path)
{
    for (size_t i = 0; i < urls->n; i++) {
        const char *rule = urls->v[i];
        if (strcmp(rule, "*") == 0 || strcmp(rule, path) == 0)
            return true;
        size_t len = strlen(rule);
        if (len && rule[len - 1] == '*')
            len--;
        bool slash = len && rule[len - 1] == '/';
        if (strncmp(path, rule, len) == 0 && (slash || path[len] == '/'))
            return true;
    }
    return false;
}

static bool schema_matches(const struct schema *s, const struct ck__apf_digest *d)
{
    for (size_t i = 0; i < s->n_rules; i++) {
        const struct policy_rule *r = &s->rules[i];
        bool subject = false;
        for (size_t k = 0; k < r->n_subjects && !subject; k++)
            subject = subject_matches(&r->subjects[k], d);
        if (!subject)
            continue;
        if (d->resource_request) {
            for (size_t k = 0; k < r->n_rr; k++)
                if (resource_rule_matches(&r->rr[k], d))
                    return true;
        } else {
            for (size_t k = 0; k < r->n_nr; k++)
                if (strs_contain(&r->nr[k].verbs, d->verb) && url_matches(&r->nr[k].urls, d->path))
                    return true;
        }
    }
    return false;
}

/* queueset.go's hashFlowID: the first 8 bytes, little-endian, of SHA-256(schema NUL flow). */
static uint64_t flow_hash(const char *schema, const char *flow)
{
    size_t a = strlen(schema), b = strlen(flow);
    char *buf = ck__malloc(a + b + 1);
    unsigned char sum[32] = {0};
    if (buf) {
        memcpy(buf, schema, a);
        buf[a] = '\0';
        memcpy(buf + a + 1, flow, b);
        gnutls_hash_fast(GNUTLS_DIG_SHA256, buf, a + b + 1, sum);
        free(buf);
    }
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | sum[i];
    return h;
}

void ck__apf_deal(uint64_t hash, unsigned deck, unsigned hand, unsigned *ret_cards)
{
    unsigned remainders[15];
    for (unsigned i = 0; i < hand; i++) {
        uint64_t next = hash / (deck - i);
        remainders[i] = (unsigned)(hash - (uint64_t)(deck - i) * next);
        hash = next;
    }
    for (unsigned i = 0; i < hand; i++) {
        unsigned card = remainders[i];
        for (unsigned j = i; j > 0; j--)
            if (card >= remainders[j - 1])
                card++;
        ret_cards[i] = card;
    }
}

/* ---- the work estimate (request/width.go and its estimators) ---------------------- */

static bool verb_in(const char *verb, const char *const *verbs)
{
    for (; *verbs; verbs++)
        if (strcmp(verb, *verbs) == 0)
            return true;
    return false;
}

/*
 * list_work_estimator.go's shouldListFromStorage, with ConsistentListFromCache on and the
 * store able to tell its progress (kube-apiserver 1.32 against a current etcd).
 */
static bool lists_from_storage(const struct ck__apf_digest *d)
{
    const char *rv = d->resource_version ? d->resource_version : "";
    const char *match = d->rv_match ? d->rv_match : "";
    bool legacy_exact = d->limit > 0 && !*match && *rv && strcmp(rv, "0") != 0;
    bool unsupported = (*match && strcmp(match, "NotOlderThan") != 0) || legacy_exact;
    return d->continued || unsupported;
}

/* list_work_estimator.go's estimate: seats for the objects a list goes through. */
static unsigned list_seats(const struct ck__apf_digest *d, unsigned max_seats, long long count)
{
    if (d->name && d->name[0]) /* one object, read as a get */
        return CK__APF_MIN_SEATS;
    if (d->bad_options)
        return max_seats;
    bool watch = strcmp(d->verb, "watch") == 0;
    if (watch && !d->send_initial_events)
        return CK__APF_MIN_SEATS;
    bool from_cache = watch || !lists_from_storage(d);
    if (count == -2) /* stale: the worst */
        return max_seats;
    if (count < 0) /* not counted (an aggregated resource, a typo): the least */
        return CK__APF_MIN_SEATS;
    long long limit = d->limit > 0 && d->limit < count ? d->limit : count;
    long long objects = from_cache ? count : d->selector ? count + limit : 2 * limit;
    double seats = ceil((double)objects / CK__APF_OBJECTS_PER_SEAT);
    return seats < CK__APF_MIN_SEATS ? CK__APF_MIN_SEATS
           : seats > max_seats       ? max_seats
                                     : (unsigned)seats;
}

/* Whether a request's group and resource are those of the kind with the given role. */
static bool is_kind(const struct ck__apf_digest *d, enum ck_kind_role role)
{
    const struct ck_kind *k = ck_kind_with_role(role);
    return k && strcmp(d->resource, k->resource) == 0 &&
           strcmp(d->api_group ? d->api_group : "", k->group) == 0;
}

/* mutating_work_estimator.go's estimate: final seats for the watchers a change wakes. */
static struct ck__apf_work mutating_work(const struct ck__apf_digest *d, unsigned max_seats,
                                         unsigned watches)
{
    struct ck__apf_work w = {.initial_seats = CK__APF_MIN_SEATS};
    if (d->subresource && strcmp(d->subresource, "token") == 0 &&
        is_kind(d, CK_KIND_ROLE_SERVICE_ACCOUNT)) /* a token is no event */
        return w;
    if (watches < (unsigned)CK__APF_WATCHES_PER_SEAT)
        return w;
    unsigned final = (unsigned)ceil(watches / CK__APF_WATCHES_PER_SEAT);
    uint64_t work = seat_seconds(final, CK__APF_EVENT_SECONDS);
    w.final_seats = final > max_seats ? max_seats : final;
    w.additional_latency = (double)work / SS_SCALE / w.final_seats; /* the same work */
    return w;
}

struct ck__apf_work ck__apf_estimate(const struct ck__apf_digest *d, unsigned max_seats,
                                     long long count, unsigned watches)
{
    struct ck__apf_work w = {.initial_seats = CK__APF_MIN_SEATS};
    if (max_seats == 0 || max_seats > CK__APF_MAX_SEATS_LIMIT)
        max_seats = CK__APF_MAX_SEATS_LIMIT;
    if (!d->resource_request)
        return w;
    if (strcmp(d->verb, "list") == 0 || (strcmp(d->verb, "watch") == 0 && d->watch_list))
        w.initial_seats = list_seats(d, max_seats, count);
    else if (strcmp(d->verb, "create") == 0 || strcmp(d->verb, "update") == 0 ||
             strcmp(d->verb, "patch") == 0 || strcmp(d->verb, "delete") == 0)
        w = mutating_work(d, max_seats, watches);
    return w;
}

double ck__apf_wait_limit(const char *timeout, bool long_running)
{
    double limit = CK__APF_REQUEST_TIMEOUT; /* request_deadline.go: the most, or less asked */
    int64_t sec;
    int32_t nsec;
    if (!long_running && timeout && *timeout && ck_cel_parse_duration(timeout, &sec, &nsec)) {
        double asked = (double)sec + nsec / 1e9;
        if (asked > 0 && asked < CK__APF_REQUEST_TIMEOUT)
            limit = asked;
    }
    limit /= 4; /* getRequestWaitContext: a quarter, or the default's (a quarter too) */
    return limit > CK__APF_WAIT_MAX ? CK__APF_WAIT_MAX : limit;
}

/* Go's time package quote(): in double quotes, control and non-ASCII bytes as \xNN. */
static void go_quote(struct ck__buf *out, const char *s, size_t n)
{
    ck__buf_adds(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < ' ' || c >= 0x80)
            ck__buf_printf(out, "\\x%02x", c);
        else
            ck__buf_printf(out, "%s%c", c == '"' || c == '\\' ? "\\" : "", c);
    }
    ck__buf_adds(out, "\"");
}

/*
 * Which of time.ParseDuration's errors a text that is no duration gets: its unit missing
 * or unknown (the unit's span), else invalid (no digits, a stray character, overflow).
 */
static void duration_error(struct ck__buf *out, const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h"};
    size_t n = strlen(s), i = s[0] == '-' || s[0] == '+';
    const char *unit = NULL;
    size_t unit_len = 0;
    while (i < n && !unit) {
        size_t start = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        bool digits = i > start;
        if (i < n && s[i] == '.')
            for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                digits = true;
        if (!digits)
            break; /* nothing before the unit: invalid */
        size_t u = i;
        while (i < n && s[i] != '.' && !(s[i] >= '0' && s[i] <= '9'))
            i++;
        bool known = false;
        for (size_t k = 0; k < sizeof(units) / sizeof(units[0]) && i > u; k++)
            known = known || (strlen(units[k]) == i - u && memcmp(units[k], s + u, i - u) == 0);
        if (i == u || !known) {
            unit = s + u;
            unit_len = i - u;
        }
    }
    if (unit && unit_len == 0) {
        ck__buf_adds(out, "time: missing unit in duration ");
    } else if (unit) {
        ck__buf_adds(out, "time: unknown unit ");
        go_quote(out, unit, unit_len);
        ck__buf_adds(out, " in duration ");
    } else {
        ck__buf_adds(out, "time: invalid duration ");
    }
    go_quote(out, s, n);
}

bool ck__apf_timeout_invalid(const char *timeout, char *msg, size_t size)
{
    int64_t sec;
    int32_t nsec;
    if (!timeout || !*timeout || ck_cel_parse_duration(timeout, &sec, &nsec))
        return false;
    struct ck__buf out = {0};
    ck__buf_adds(&out, "invalid timeout specified in the request URL - ");
    duration_error(&out, timeout);
    char *text = ck__buf_take(&out);
    snprintf(msg, size, "%s", text ? text : "invalid timeout specified in the request URL");
    free(text);
    return true;
}

/* The count of d's resource: -1 when none was set, -2 when it is stale. */
static long long count_of(struct ck__apf *a, const struct ck__apf_digest *d, double now)
{
    char key[256];
    snprintf(key, sizeof(key), "%s%s%s", d->resource, d->api_group[0] ? "." : "", d->api_group);
    long long count = -1;
    pthread_mutex_lock(&a->count_lock);
    for (size_t i = 0; i < a->n_counts; i++)
        if (strcmp(a->counts[i].group_resource, key) == 0) {
            count = now - a->counts[i].at > COUNT_STALE ? -2 : a->counts[i].count;
            break;
        }
    pthread_mutex_unlock(&a->count_lock);
    return count;
}

void ck__apf_set_count(struct ck__apf *a, const char *group_resource, long long count)
{
    if (count < 0)
        return;
    double now = a->clock(a->clock_arg);
    pthread_mutex_lock(&a->count_lock);
    size_t i = 0;
    while (i < a->n_counts && strcmp(a->counts[i].group_resource, group_resource) != 0)
        i++;
    if (i == a->n_counts) {
        struct object_count *grown = ck__realloc(a->counts, (i + 1) * sizeof(*grown));
        char *key = grown ? ck__strdup(group_resource) : NULL;
        if (grown)
            a->counts = grown;
        if (key)
            a->counts[a->n_counts++] = (struct object_count){.group_resource = key};
        else
            i = SIZE_MAX;
    }
    if (i != SIZE_MAX) {
        a->counts[i].count = count;
        a->counts[i].at = now;
    }
    /* the pruner: a count not set for an hour is forgotten */
    for (size_t k = 0; k < a->n_counts;) {
        if (now - a->counts[k].at < COUNT_PRUNE) {
            k++;
            continue;
        }
        free(a->counts[k].group_resource);
        a->counts[k] = a->counts[--a->n_counts];
    }
    pthread_mutex_unlock(&a->count_lock);
}

static void count_one(const struct ck_kind *kind, long long count, void *arg)
{
    char key[256];
    snprintf(key, sizeof(key), "%s%s%s", kind->resource, kind->group[0] ? "." : "", kind->group);
    ck__apf_set_count(arg, key, count);
}

/* ---- the watch tracker (watch_tracker.go) ----------------------------------------- */

#define WATCH_KEY_MAX 1024

/* Appends s (cut to what fits) and a NUL to key at *len, when room is left. */
static void key_add(char key[WATCH_KEY_MAX], size_t *len, const char *s)
{
    if (*len >= WATCH_KEY_MAX)
        return;
    size_t room = WATCH_KEY_MAX - *len - 1, n = s ? strnlen(s, room) : 0;
    if (n)
        memcpy(key + *len, s, n);
    *len += n;
    key[(*len)++] = '\0';
}

static size_t watch_key(char key[WATCH_KEY_MAX], const char *group, const char *resource,
                        const char *ns, const char *name)
{
    size_t len = 0;
    key_add(key, &len, group);
    key_add(key, &len, resource);
    key_add(key, &len, ns);
    key_add(key, &len, name);
    return len;
}

static unsigned bucket_of(const char *key, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h % WATCH_BUCKETS;
}

/* The watches of one key. Under watch_lock. */
static unsigned watches_at(const struct ck__apf *a, const char *key, size_t len)
{
    for (const struct ck__apf_watch *w = a->watches_by_key[bucket_of(key, len)]; w; w = w->next)
        if (w->len == len && memcmp(w->key, key, len) == 0)
            return w->count;
    return 0;
}

/* GetInterestedWatchCount: the watches of the resource, of its namespace, of the object. */
static unsigned interested_watches(struct ck__apf *a, const struct ck__apf_digest *d)
{
    char key[WATCH_KEY_MAX];
    unsigned n = 0;
    pthread_mutex_lock(&a->watch_lock);
    n += watches_at(a, key, watch_key(key, d->api_group, d->resource, "", ""));
    if (d->namespace && d->namespace[0])
        n += watches_at(a, key, watch_key(key, d->api_group, d->resource, d->namespace, ""));
    if (d->namespace && d->namespace[0] && d->name && d->name[0])
        n += watches_at(a, key, watch_key(key, d->api_group, d->resource, d->namespace, d->name));
    else if (d->name && d->name[0])
        n += watches_at(a, key, watch_key(key, d->api_group, d->resource, "", d->name));
    pthread_mutex_unlock(&a->watch_lock);
    return n;
}

/* RegisterWatch: counts t's watch until ck__apf_end(); a pods watch of one node is not. */
static void register_watch(struct ck__apf *a, const struct ck__apf_digest *d,
                           struct ck__apf_ticket *t)
{
    if (!d->resource_request || strcmp(d->verb, "watch") != 0 ||
        (d->node_indexed && is_kind(d, CK_KIND_ROLE_POD)))
        return;
    char key[WATCH_KEY_MAX];
    size_t len = watch_key(key, d->api_group, d->resource, d->namespace, d->name);
    unsigned b = bucket_of(key, len);
    pthread_mutex_lock(&a->watch_lock);
    struct ck__apf_watch *w = a->watches_by_key[b];
    while (w && !(w->len == len && memcmp(w->key, key, len) == 0))
        w = w->next;
    if (!w && (w = ck__calloc(1, sizeof(*w))) && !(w->key = ck__malloc(len))) {
        free(w);
        w = NULL;
    }
    if (w && !w->count) {
        memcpy(w->key, key, len);
        w->len = len;
        w->next = a->watches_by_key[b];
        a->watches_by_key[b] = w;
    }
    if (w)
        w->count++;
    t->watch = w;
    pthread_mutex_unlock(&a->watch_lock);
}

void ck__apf_end(struct ck__apf *a, struct ck__apf_ticket *t)
{
    struct ck__apf_watch *w = t->watch;
    if (!a || !w)
        return;
    t->watch = NULL;
    pthread_mutex_lock(&a->watch_lock);
    if (--w->count == 0) {
        for (struct ck__apf_watch **p = &a->watches_by_key[bucket_of(w->key, w->len)]; *p;
             p = &(*p)->next)
            if (*p == w) {
                *p = w->next;
                break;
            }
        free(w->key);
        free(w);
    }
    pthread_mutex_unlock(&a->watch_lock);
}

/* ---- admission, queuing, the end of a request ------------------------------------ */

/* The timer thread must look again: something is due earlier than it thought. Locked. */
static void timer_due(struct ck__apf *a, double at)
{
    if (at < a->next_deadline) {
        a->next_deadline = at;
        if (a->timer_running)
            pthread_cond_signal(&a->timer_wake);
    }
}

/*
 * queueset.go's StartRequest for a level with queues: the queue of the flow's hand with
 * the least waiting work (from a rotating offset), a refusal when both the level's seats
 * and that queue are full, else the queue, then as many dispatches as can be. Returns
 * EXECUTE when t was dispatched (not on *woken), else QUEUE or REJECT. Locked.
 */
static enum ck__apf_verdict queue_locked(struct ck__apf *a, struct ck__apf_level *l,
                                         struct ck__apf_ticket *t, double now,
                                         struct ck__apf_ticket **woken)
{
    unsigned cards[15] = {0}, hand = l->hand_size ? l->hand_size : 1;
    ck__apf_deal(t->flow_hash, l->n_queues, hand, cards);
    unsigned offset = (unsigned)(l->enqueues++ % hand), best = cards[offset];
    for (unsigned i = 1; i < hand; i++) {
        unsigned c = cards[(offset + i) % hand];
        if (l->queues[c].waiting_work < l->queues[best].waiting_work)
            best = c;
    }
    struct queue *q = &l->queues[best];
    if (l->seats_in_use >= l->limit && q->len >= l->queue_length_limit) {
        reject_locked(l, t, REJECT_QUEUE_FULL);
        return CK__APF_REJECT;
    }
    if (!q->len && !q->executing)
        q->next_dispatch_r = l->current_r;
    t->queue = best;
    t->verdict = CK__APF_QUEUE;
    t->arrival_r = l->current_r;
    queue_append(l, q, t);
    l->waiting++;
    atomic_fetch_add(&t->stat->waiting, 1);
    bound_next_dispatch(q);
    dispatch_locked(l, now, woken, q);
    if (t->verdict != CK__APF_EXECUTE) {
        timer_due(a, t->deadline);
        return CK__APF_QUEUE;
    }
    for (struct ck__apf_ticket **p = woken; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    t->next = NULL;
    return CK__APF_EXECUTE;
}

enum ck__apf_verdict ck__apf_admit(struct ck__apf *a, const struct ck__apf_digest *d,
                                   struct ck__apf_ticket *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&a->lock);
    struct snapshot *snap = a->current;
    if (snap)
        atomic_fetch_add(&snap->refs, 1);
    pthread_mutex_unlock(&a->lock);
    const struct schema *s = NULL;
    for (size_t i = 0; snap && i < snap->n && !s; i++)
        if (schema_matches(&snap->schemas[i], d))
            s = &snap->schemas[i];
    if (!s) { /* no schema (not even catch-all yet): not limited */
        snapshot_unref(snap);
        return CK__APF_EXECUTE;
    }
    t->classified = true;
    memcpy(t->fs_uid, s->uid, sizeof(t->fs_uid));
    memcpy(t->pl_uid, s->level->uid, sizeof(t->pl_uid));
    t->level = s->level;
    t->stat = s->stat;
    double now = a->clock(a->clock_arg);
    static const char *const listing[] = {"list", "watch", NULL};
    static const char *const mutating[] = {"create", "update", "patch", "delete", NULL};
    bool resource = d->resource_request;
    t->work = ck__apf_estimate(
        d, s->max_seats, resource && verb_in(d->verb, listing) ? count_of(a, d, now) : -1,
        resource && verb_in(d->verb, mutating) ? interested_watches(a, d) : 0);
    t->total_work = seat_seconds(t->work.initial_seats, SERVICE_SECONDS) +
                    (t->final_work = seat_seconds(t->work.final_seats, t->work.additional_latency));
    if (s->hashed) {
        const char *flow = s->by == BY_USER ? d->user : s->by == BY_NAMESPACE ? d->namespace : "";
        t->flow_hash = flow_hash(s->name, flow ? flow : "");
    }
    snapshot_unref(snap); /* s is no longer read */

    enum ck__apf_verdict v = CK__APF_EXECUTE;
    struct ck__apf_ticket *woken = NULL;
    pthread_mutex_lock(&a->lock);
    struct ck__apf_level *l = t->level;
    sync_time(l, now);
    release_due(a, now, &woken);
    unsigned seats = max_seats_of(t);
    if (l->exempt) {
        seat(l, NULL, t, now); /* never limited, but its seats are its level's demand */
    } else if (!l->queuing) {
        if (fits(l, seats)) {
            seat(l, NULL, t, now);
        } else {
            reject_locked(l, t, REJECT_CONCURRENCY);
            v = CK__APF_REJECT;
        }
    } else if (l->waiting == 0 && l->seats_in_use < l->limit && fits(l, seats)) {
        v = queue_locked(a, l, t, now, &woken); /* alone: dispatched at once */
    } else {
        v = CK__APF_QUEUE; /* queued by ck__apf_enqueue(), once the caller can be woken */
    }
    demand_set(l, now);
    pthread_mutex_unlock(&a->lock);
    if (v != CK__APF_REJECT) /* counted from its admission to its end */
        register_watch(a, d, t);
    ck__apf_wake(woken);
    return v;
}

enum ck__apf_verdict ck__apf_enqueue(struct ck__apf *a, struct ck__apf_ticket *t, double deadline)
{
    struct ck__apf_level *l = t->level;
    enum ck__apf_verdict v;
    struct ck__apf_ticket *woken = NULL;
    double now = a->clock(a->clock_arg);
    pthread_mutex_lock(&a->lock);
    sync_time(l, now);
    release_due(a, now, &woken);
    t->deadline = deadline;
    if (a->stopping) {
        reject_locked(l, t, REJECT_SHUTDOWN);
        v = CK__APF_REJECT;
    } else if (l->exempt) { /* it became exempt meanwhile */
        seat(l, NULL, t, now);
        v = CK__APF_EXECUTE;
    } else if (!l->queuing) {
        if (fits(l, max_seats_of(t))) {
            seat(l, NULL, t, now);
            v = CK__APF_EXECUTE;
        } else {
            reject_locked(l, t, REJECT_CONCURRENCY);
            v = CK__APF_REJECT;
        }
    } else {
        v = queue_locked(a, l, t, now, &woken);
    }
    demand_set(l, now);
    pthread_mutex_unlock(&a->lock);
    ck__apf_wake(woken);
    return v;
}

void ck__apf_done(struct ck__apf *a, struct ck__apf_ticket *t)
{
    if (!t->classified || t->verdict == CK__APF_REJECT || t->finished)
        return;
    t->finished = true;
    struct ck__apf_ticket *woken = NULL;
    struct ck__apf_level *l = t->level;
    double now = a->clock(a->clock_arg);
    pthread_mutex_lock(&a->lock);
    atomic_fetch_sub(&t->stat->executing, 1);
    if (t->seated) {
        t->seated = false;
        sync_time(l, now);
        l->executing--;
        bool queued = t->in_queue && t->shape == l->shape && t->queue < l->n_queues;
        if (queued) { /* queueset.go: the queue's R moves by (presumed - actual) work */
            struct queue *q = &l->queues[t->queue];
            q->executing--;
            if (!busy(q))
                l->busy_queues--;
            q->next_dispatch_r -=
                seat_seconds(t->work.initial_seats, SERVICE_SECONDS - (now - t->started));
            bound_next_dispatch(q);
        }
        struct held *g = t->work.additional_latency > 0 ? ck__malloc(sizeof(*g)) : NULL;
        if (g) { /* its final seats stay a while for the watchers it wakes */
            *g = (struct held){.level = l,
                               .queue = t->queue,
                               .shape = t->shape,
                               .seats = max_seats_of(t),
                               .in_queue = t->in_queue,
                               .at = now + t->work.additional_latency};
            struct held **p = &a->lingering;
            while (*p && (*p)->at <= g->at)
                p = &(*p)->next;
            g->next = *p;
            *p = g;
            timer_due(a, g->at);
        } else {
            release(l, t->in_queue, t->queue, t->shape, max_seats_of(t));
        }
        release_due(a, now, &woken);
        dispatch_locked(l, now, &woken, NULL);
        demand_set(l, now);
    }
    pthread_mutex_unlock(&a->lock);
    ck__apf_wake(woken);
}

/*
 * Rejects the tickets waiting past now (all of them when stopping) and notes the next
 * deadline. Locked.
 */
static void expire_locked(struct ck__apf *a, double now, struct ck__apf_ticket **woken)
{
    a->next_deadline = INFINITY;
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        for (unsigned i = 0; i < l->n_queues; i++) {
            struct queue *q = &l->queues[i];
            struct ck__apf_ticket *keep = NULL, **tail = &keep;
            unsigned n = q->len;
            while (n--) {
                struct ck__apf_ticket *t = queue_pop(l, q);
                if (a->stopping || t->deadline <= now) {
                    reject_locked(l, t, a->stopping ? REJECT_SHUTDOWN : REJECT_TIME_OUT);
                    push(woken, t);
                } else {
                    *tail = t; /* in its order */
                    tail = &t->next;
                    if (t->deadline < a->next_deadline)
                        a->next_deadline = t->deadline;
                }
            }
            for (struct ck__apf_ticket *t = keep, *next; t; t = next) {
                next = t->next;
                queue_append(l, q, t);
                l->waiting++;
                atomic_fetch_add(&t->stat->waiting, 1);
            }
            bound_next_dispatch(q);
        }
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        demand_set(l, now);
}

void ck__apf_expire(struct ck__apf *a, double now)
{
    struct ck__apf_ticket *woken = NULL;
    pthread_mutex_lock(&a->lock);
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        sync_time(l, now);
    release_due(a, now, &woken);
    if (now >= a->next_deadline)
        expire_locked(a, now, &woken);
    pthread_mutex_unlock(&a->lock);
    ck__apf_wake(woken);
}

void ck__apf_stop(struct ck__apf *a)
{
    if (!a)
        return;
    struct ck__apf_ticket *woken = NULL;
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    expire_locked(a, 0, &woken);
    pthread_mutex_unlock(&a->lock);
    ck__apf_wake(woken);
}

int ck__apf_configure(struct ck__apf *a, const json_t *schemas, const json_t *levels)
{
    size_t n = json_array_size(schemas);
    struct snapshot *snap = ck__calloc(1, sizeof(*snap));
    if (!snap || !(snap->schemas = ck__calloc(n ? n : 1, sizeof(*snap->schemas)))) {
        free(snap);
        return CK_ENOMEM;
    }
    atomic_init(&snap->refs, 1);
    struct ck__apf_ticket *woken = NULL;
    double now = a->clock(a->clock_arg);
    pthread_mutex_lock(&a->lock);
    for (struct ck__apf_level *l = a->levels; l; l = l->next)
        sync_time(l, now);
    int r = apply_levels(a, levels, now);
    for (size_t i = 0; r == 0 && i < n; i++) {
        bool used;
        r = schema_compile(a, json_array_get(schemas, i), &snap->schemas[snap->n], &used);
        if (used)
            snap->n++;
    }
    struct snapshot *old = NULL;
    if (r == 0) {
        qsort(snap->schemas, snap->n, sizeof(*snap->schemas), by_precedence);
        old = a->current;
        a->current = snap;
        snap = NULL;
        adjust_limits(a, now, &woken); /* as each digest of the configuration does */
    }
    pthread_mutex_unlock(&a->lock);
    ck__apf_wake(woken);
    if (snap)
        snapshot_free(snap);
    snapshot_unref(old);
    return r;
}

/* ---- life, following the store, metrics ------------------------------------------ */

static double monotonic(void *arg)
{
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct ck__apf *ck__apf_new(unsigned server_limit)
{
    struct ck__apf *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->watch_lock, NULL);
    pthread_mutex_init(&a->count_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&a->timer_wake, &attr);
    pthread_condattr_destroy(&attr);
    a->server_limit = server_limit ? server_limit : 600;
    a->clock = monotonic;
    a->next_deadline = INFINITY;
    atomic_init(&a->dirty, false);
    return a;
}

void ck__apf_set_clock(struct ck__apf *a, double (*now)(void *arg), void *arg)
{
    a->clock = now;
    a->clock_arg = arg;
}

/*
 * The timer: sleeps until the next wait deadline or final-seat release (monotonic
 * seconds), then expires and releases what is due; until the apf is freed.
 */
static void *timer_main(void *arg)
{
    struct ck__apf *a = arg;
    pthread_mutex_lock(&a->lock);
    while (a->timer_running) {
        double at = a->next_deadline;
        if (a->lingering && a->lingering->at < at)
            at = a->lingering->at;
        double now = a->clock(a->clock_arg);
        if (at > now) {
            double until = at < now + 3600 ? at : now + 3600;
            struct timespec ts = {.tv_sec = (time_t)until,
                                  .tv_nsec = (long)((until - floor(until)) * 1e9)};
            pthread_cond_timedwait(&a->timer_wake, &a->lock, &ts);
            continue;
        }
        pthread_mutex_unlock(&a->lock);
        ck__apf_expire(a, now);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

struct ck__apf *ck__apf_free(struct ck__apf *a)
{
    if (!a)
        return NULL;
    pthread_mutex_lock(&a->lock);
    bool running = a->timer_running;
    a->timer_running = false;
    pthread_cond_signal(&a->timer_wake);
    pthread_mutex_unlock(&a->lock);
    if (running)
        pthread_join(a->timer, NULL);
    for (size_t i = 0; i < 2; i++)
        ck_store_watch_cancel(a->watches[i]);
    snapshot_unref(a->current);
    for (struct held *g = a->lingering, *next; g; g = next) {
        next = g->next;
        free(g);
    }
    for (size_t i = 0; i < WATCH_BUCKETS; i++)
        for (struct ck__apf_watch *w = a->watches_by_key[i], *next; w; w = next) {
            next = w->next;
            free(w->key);
            free(w);
        }
    for (size_t i = 0; i < a->n_counts; i++)
        free(a->counts[i].group_resource);
    free(a->counts);
    for (struct ck__apf_level *l = a->levels, *next; l; l = next) {
        next = l->next;
        free(l->queues);
        free(l->name);
        free(l);
    }
    for (struct ck__apf_stat *st = a->stats, *next; st; st = next) {
        next = st->next;
        free(st->schema);
        free(st->level);
        free(st);
    }
    pthread_cond_destroy(&a->timer_wake);
    pthread_mutex_destroy(&a->count_lock);
    pthread_mutex_destroy(&a->watch_lock);
    pthread_mutex_destroy(&a->lock);
    free(a);
    return NULL;
}

/* Every stored object of kind, as a new array; NULL when the store fails. */
static json_t *list_all(struct ck__registry *reg, const struct ck_kind *kind)
{
    struct ck__list_options opts = {0};
    struct ck__list_result res = {0};
    struct ck_err err = {0};
    json_t *items = NULL;
    if (ck__registry_list(reg, kind, &opts, &res, &err) == 0 && (items = json_array()))
        for (size_t i = 0; i < res.n_kvs; i++)
            json_array_append_new(items, ck__decode_stored(res.kvs[i]));
    if (err.code)
        CK_LOGW("cannot read the %s for API Priority and Fairness: %s", kind->resource,
                ck_err_message(&err));
    ck__list_result_release(&res);
    ck_err_release(&err);
    return items;
}

void ck__apf_refresh(struct ck__apf *a)
{
    if (!a || !a->reg)
        return;
    atomic_store(&a->dirty, false);
    json_t *levels = list_all(a->reg, a->level_kind);
    json_t *schemas = levels ? list_all(a->reg, a->schema_kind) : NULL;
    if (schemas && ck__apf_configure(a, schemas, levels) < 0)
        CK_LOGW("cannot apply the API Priority and Fairness configuration: out of memory");
    if (!schemas)
        atomic_store(&a->dirty, true); /* again on the next tick */
    json_decref(levels);
    json_decref(schemas);
}

static void on_event(const struct ck_store_event *ev, void *arg)
{
    struct ck__apf *a = arg;
    if (ev->type != CK_STORE_EVENT_PROGRESS)
        atomic_store(&a->dirty, true);
}

int ck__apf_start(struct ck__apf *a, struct ck__registry *reg, struct ck_err *reterr)
{
    a->schema_kind = ck_kind_lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas");
    a->level_kind =
        ck_kind_lookup("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations");
    if (!a->schema_kind || !a->level_kind)
        return 0; /* the group is not served: nothing is classified */
    a->reg = reg;
    const struct ck_kind *kinds[2] = {a->schema_kind, a->level_kind};
    for (size_t i = 0; i < 2; i++) {
        char prefix[CK__KEY_MAX];
        int len = ck__collection_prefix(kinds[i], NULL, prefix, sizeof(prefix));
        if (len < 0)
            return ck_err_set(reterr, CK_EINVAL, "no key prefix for %s", kinds[i]->resource);
        int r = ck_store_watch(reg->store, prefix, (size_t)len, true, 0, on_event, a,
                               &a->watches[i], reterr);
        if (r < 0)
            return r;
    }
    ck__apf_refresh(a);
    a->counted_at = a->clock(a->clock_arg);
    ck__count_stored_objects(reg->store, count_one, a);
    pthread_mutex_lock(&a->lock);
    a->timer_running = pthread_create(&a->timer, NULL, timer_main, a) == 0;
    pthread_mutex_unlock(&a->lock);
    if (!a->timer_running)
        CK_LOGW("API Priority and Fairness has no timer: waits end once a second");
    return 0;
}

bool ck__apf_follows(const struct ck__apf *a, const struct ck_kind *kind)
{
    return a && kind && (kind == a->schema_kind || kind == a->level_kind);
}

void ck__apf_tick(struct ck__apf *a, double now)
{
    if (!a)
        return;
    if (atomic_load(&a->dirty))
        ck__apf_refresh(a);
    if (a->reg && now - a->counted_at >= COUNT_PERIOD) {
        a->counted_at = now;
        ck__count_stored_objects(a->reg->store, count_one, a);
    }
    ck__apf_expire(a, now);
    if (now >= a->next_borrow) { /* at the first tick, then every period */
        struct ck__apf_ticket *woken = NULL;
        pthread_mutex_lock(&a->lock);
        a->next_borrow = now + BORROW_PERIOD;
        for (struct ck__apf_level *l = a->levels; l; l = l->next)
            sync_time(l, now);
        adjust_limits(a, now, &woken);
        pthread_mutex_unlock(&a->lock);
        ck__apf_wake(woken);
    }
}

static void label_value(struct ck__buf *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            ck__buf_add(out, "\\", 1);
        if (*v == '\n')
            ck__buf_adds(out, "\\n");
        else
            ck__buf_add(out, v, 1);
    }
}

static void series(struct ck__buf *out, const char *metric, const struct ck__apf_stat *st,
                   const char *reason, unsigned long long value)
{
    ck__buf_adds(out, metric);
    ck__buf_adds(out, "{flow_schema=\"");
    label_value(out, st->schema);
    ck__buf_adds(out, "\",priority_level=\"");
    label_value(out, st->level);
    if (reason) {
        ck__buf_adds(out, "\",reason=\"");
        ck__buf_adds(out, reason);
    }
    char num[32];
    snprintf(num, sizeof(num), "\"} %llu\n", value);
    ck__buf_adds(out, num);
}

/* One gauge's HELP, TYPE and a series for each pair; waiting: which count. Locked. */
static void gauge(struct ck__buf *out, const struct ck__apf *a, const char *metric,
                  const char *help, bool waiting)
{
    ck__buf_printf(out, "# HELP %s [BETA] %s\n# TYPE %s gauge\n", metric, help, metric);
    for (const struct ck__apf_stat *st = a->stats; st; st = st->next)
        series(out, metric, st, NULL,
               (unsigned long long)atomic_load(waiting ? &st->waiting : &st->executing));
}

enum level_value {
    V_NOMINAL,
    V_LOWER,
    V_UPPER,
    V_CURRENT,
    V_HIGH_WATERMARK,
    V_AVERAGE,
    V_DEVIATION,
    V_SMOOTHED,
    V_TARGET
};

/* A gauge's value as Prometheus' text writes a float: Go's shortest %g. */
static void add_value(struct ck__buf *out, double v)
{
    char num[40];
    int precision = 1;
    do
        snprintf(num, sizeof(num), "%.*g", precision, v);
    while (strtod(num, NULL) != v && ++precision <= 17);
    ck__buf_printf(out, " %s\n", num);
}

/* One gauge by priority_level of the levels that took part in an allocation. Locked. */
static void level_gauge(struct ck__buf *out, const struct ck__apf *a, const char *metric,
                        const char *stability, const char *help, enum level_value which)
{
    ck__buf_printf(out, "# HELP %s [%s] %s\n# TYPE %s gauge\n", metric, stability, help, metric);
    for (const struct ck__apf_level *l = a->levels; l; l = l->next) {
        if (!l->allocated)
            continue;
        double v = which == V_NOMINAL          ? (double)l->nominal
                   : which == V_LOWER          ? (double)l->min_cl
                   : which == V_UPPER          ? (double)l->max_cl
                   : which == V_CURRENT        ? (double)l->limit
                   : which == V_HIGH_WATERMARK ? (double)l->high_watermark
                   : which == V_AVERAGE        ? l->average
                   : which == V_DEVIATION      ? l->deviation
                   : which == V_SMOOTHED       ? l->smoothed
                                               : l->target;
        ck__buf_printf(out, "%s{priority_level=\"", metric);
        label_value(out, l->name);
        ck__buf_adds(out, "\"}");
        add_value(out, v);
    }
}

/* The limits and the demand statistics of the borrowing (apf_controller.go's). Locked. */
static void borrowing_metrics(struct ck__buf *out, const struct ck__apf *a)
{
    static const struct {
        const char *name, *stability, *help;
    } gauges[] = {
        [V_NOMINAL] = {"nominal_limit_seats", "BETA",
                       "Nominal number of execution seats configured for each priority level"},
        [V_LOWER] = {"lower_limit_seats", "ALPHA",
                     "Configured lower bound on number of execution seats available to each "
                     "priority level"},
        [V_UPPER] = {"upper_limit_seats", "ALPHA",
                     "Configured upper bound on number of execution seats available to each "
                     "priority level"},
        [V_CURRENT] = {"current_limit_seats", "ALPHA",
                       "current derived number of execution seats available to each priority "
                       "level"},
        [V_HIGH_WATERMARK] = {"demand_seats_high_watermark", "ALPHA",
                              "High watermark, over last adjustment period, of demand_seats"},
        [V_AVERAGE] = {"demand_seats_average", "ALPHA",
                       "Time-weighted average, over last adjustment period, of demand_seats"},
        [V_DEVIATION] = {"demand_seats_stdev", "ALPHA",
                         "Time-weighted standard deviation, over last adjustment period, of "
                         "demand_seats"},
        [V_SMOOTHED] = {"demand_seats_smoothed", "ALPHA", "Smoothed seat demands"},
        [V_TARGET] = {"target_seats", "ALPHA", "Seat allocation targets"},
    };
    char metric[80];
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        snprintf(metric, sizeof(metric), "apiserver_flowcontrol_%s", gauges[i].name);
        level_gauge(out, a, metric, gauges[i].stability, gauges[i].help, (enum level_value)i);
    }
    ck__buf_adds(out, "# HELP apiserver_flowcontrol_seat_fair_frac [ALPHA] Fair fraction of "
                      "server's concurrency to allocate to each priority level that can use it\n"
                      "# TYPE apiserver_flowcontrol_seat_fair_frac gauge\n"
                      "apiserver_flowcontrol_seat_fair_frac");
    add_value(out, a->fair_frac);
}

char *ck__apf_metrics_text(struct ck__apf *a)
{
    struct ck__buf out = {0};
    if (!a)
        return ck__buf_take(&out);
    pthread_mutex_lock(&a->lock);
    gauge(&out, a, "apiserver_flowcontrol_current_executing_requests",
          "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage "
          "in the API Priority and Fairness subsystem",
          false);
    gauge(&out, a, "apiserver_flowcontrol_current_inqueue_requests",
          "Number of requests currently pending in queues of the API Priority and Fairness "
          "subsystem",
          true);
    ck__buf_adds(&out, "# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of "
                       "requests rejected by API Priority and Fairness subsystem\n"
                       "# TYPE apiserver_flowcontrol_rejected_requests_total counter\n");
    for (const struct ck__apf_stat *st = a->stats; st; st = st->next)
        for (size_t r = 0; r < 4; r++) {
            unsigned long long n = atomic_load(&st->rejected[r]);
            if (n)
                series(&out, "apiserver_flowcontrol_rejected_requests_total", st, reject_reasons[r],
                       n);
        }
    borrowing_metrics(&out, a);
    pthread_mutex_unlock(&a->lock);
    return ck__buf_take(&out);
}
