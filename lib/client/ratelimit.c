/*
 * ratelimit.c - rate limiters and the rate-limited face of the work queue (client-go
 * util/workqueue/default_rate_limiters.go and rate_limiting_queue.go).
 *
 * A limiter is a struct of three operations (when, forget, num_requeues) over private
 * state, like client-go's RateLimiter interface:
 *
 * - exponential: per key, base * 2^failures capped at max; the failure count grows with
 *   every when() and is dropped by forget(). The shift is checked against max before it
 *   is done, so huge failure counts never overflow.
 * - fast/slow: per key, `fast` for the first max_fast tries, `slow` after.
 * - bucket: one token bucket for all keys (golang.org/x/time/rate's Limiter.Reserve):
 *   tokens refill at qps up to burst; each try takes one, and when none is left the
 *   reservation still succeeds and the delay is how long the debt takes to refill.
 * - max-of: asks every limiter (so each records the try) and answers the longest wait.
 *
 * The rate-limited queue is then one line: add_after(key, when(key)).
 *
 * Threading: each limiter has its own mutex (the bucket's time comes from its clock).
 */
#include <stdlib.h>

#include "internal.h"

struct rl_ops {
    int64_t (*when)(struct ck_rate_limiter *rl, const char *key);
    void (*forget)(struct ck_rate_limiter *rl, const char *key);
    int (*num_requeues)(struct ck_rate_limiter *rl, const char *key);
    void (*release)(struct ck_rate_limiter *rl);
};

struct ck_rate_limiter {
    const struct rl_ops *ops;
    pthread_mutex_t lock;
    /* per-key limiters: failures per key, stored as (void *)(uintptr_t)count */
    struct ck__strmap failures;
    int64_t base, max;  /* exponential */
    int64_t fast, slow; /* fast/slow */
    int max_fast;
    /* bucket */
    struct ck_clock *clock;
    double qps, burst, tokens;
    int64_t last;
    /* max-of */
    struct ck_rate_limiter **children;
    size_t nchildren;
};

static struct ck_rate_limiter *rl_new(const struct rl_ops *ops)
{
    struct ck_rate_limiter *rl = ck__calloc(1, sizeof(*rl));
    if (!rl)
        return NULL;
    rl->ops = ops;
    pthread_mutex_init(&rl->lock, NULL);
    return rl;
}

/* Counts one more failure of key; returns the count before it, or -1 when out of memory. */
static long count_failure(struct ck_rate_limiter *rl, const char *key)
{
    bool created;
    struct ck__strmap_entry *e = ck__strmap_put(&rl->failures, key, (void *)0, &created);
    if (!e)
        return -1;
    uintptr_t before = (uintptr_t)e->value;
    e->value = (void *)(before + 1);
    return (long)before;
}

static void per_key_forget(struct ck_rate_limiter *rl, const char *key)
{
    pthread_mutex_lock(&rl->lock);
    ck__strmap_remove(&rl->failures, key);
    pthread_mutex_unlock(&rl->lock);
}

static int per_key_num_requeues(struct ck_rate_limiter *rl, const char *key)
{
    pthread_mutex_lock(&rl->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&rl->failures, key);
    int n = e ? (int)(uintptr_t)e->value : 0;
    pthread_mutex_unlock(&rl->lock);
    return n;
}

static void per_key_release(struct ck_rate_limiter *rl)
{
    ck__strmap_release(&rl->failures);
}

static int64_t exponential_when(struct ck_rate_limiter *rl, const char *key)
{
    pthread_mutex_lock(&rl->lock);
    long exp = count_failure(rl, key);
    pthread_mutex_unlock(&rl->lock);
    /* base << exp, compared with max before shifting so it never overflows; out of
     * memory (exp < 0) gives the slowest answer, the safe one. */
    if (exp < 0 || exp >= 63 || rl->base > (rl->max >> exp))
        return rl->max;
    return rl->base << exp;
}

static const struct rl_ops exponential_ops = {exponential_when, per_key_forget,
                                              per_key_num_requeues, per_key_release};

struct ck_rate_limiter *ck_rl_exponential_new(int64_t base, int64_t max)
{
    struct ck_rate_limiter *rl = rl_new(&exponential_ops);
    if (rl) {
        rl->base = base;
        rl->max = max;
    }
    return rl;
}

static int64_t fast_slow_when(struct ck_rate_limiter *rl, const char *key)
{
    pthread_mutex_lock(&rl->lock);
    long before = count_failure(rl, key);
    pthread_mutex_unlock(&rl->lock);
    return before >= 0 && before < rl->max_fast ? rl->fast : rl->slow;
}

static const struct rl_ops fast_slow_ops = {fast_slow_when, per_key_forget, per_key_num_requeues,
                                            per_key_release};

struct ck_rate_limiter *ck_rl_fast_slow_new(int64_t fast, int64_t slow, int max_fast)
{
    struct ck_rate_limiter *rl = rl_new(&fast_slow_ops);
    if (rl) {
        rl->fast = fast;
        rl->slow = slow;
        rl->max_fast = max_fast;
    }
    return rl;
}

static int64_t bucket_when(struct ck_rate_limiter *rl, const char *key)
{
    (void)key;
    pthread_mutex_lock(&rl->lock);
    int64_t now = ck_clock_now(rl->clock);
    if (now > rl->last) {
        rl->tokens += (double)(now - rl->last) / (double)CK_SEC * rl->qps;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last = now;
    }
    rl->tokens -= 1;
    double wait = rl->tokens < 0 ? -rl->tokens / rl->qps * (double)CK_SEC : 0;
    pthread_mutex_unlock(&rl->lock);
    int64_t ns = (int64_t)wait;
    return (double)ns < wait ? ns + 1 : ns; /* rounded up: never early */
}

static void bucket_forget(struct ck_rate_limiter *rl, const char *key)
{
    (void)rl;
    (void)key;
}

static int bucket_num_requeues(struct ck_rate_limiter *rl, const char *key)
{
    (void)rl;
    (void)key;
    return 0;
}

static void bucket_release(struct ck_rate_limiter *rl)
{
    (void)rl;
}

static const struct rl_ops bucket_ops = {bucket_when, bucket_forget, bucket_num_requeues,
                                         bucket_release};

struct ck_rate_limiter *ck_rl_bucket_new(struct ck_clock *clock, double qps, int burst)
{
    if (qps <= 0 || burst < 1)
        return NULL;
    struct ck_rate_limiter *rl = rl_new(&bucket_ops);
    if (rl) {
        rl->clock = clock ? clock : ck_clock_real();
        rl->qps = qps;
        rl->burst = burst;
        rl->tokens = burst;
        rl->last = ck_clock_now(rl->clock);
    }
    return rl;
}

/* The largest answer of ask() over the children of a max-of limiter. */
static int64_t children_max(struct ck_rate_limiter *rl, const char *key,
                            int64_t (*ask)(struct ck_rate_limiter *, const char *))
{
    int64_t most = 0;
    for (size_t i = 0; i < rl->nchildren; i++) {
        int64_t v = ask(rl->children[i], key);
        if (v > most)
            most = v;
    }
    return most;
}

static int64_t max_of_when(struct ck_rate_limiter *rl, const char *key)
{
    return children_max(rl, key, ck_rl_when);
}

static void max_of_forget(struct ck_rate_limiter *rl, const char *key)
{
    for (size_t i = 0; i < rl->nchildren; i++)
        ck_rl_forget(rl->children[i], key);
}

static int64_t requeues_of(struct ck_rate_limiter *rl, const char *key)
{
    return ck_rl_num_requeues(rl, key);
}

static int max_of_num_requeues(struct ck_rate_limiter *rl, const char *key)
{
    return (int)children_max(rl, key, requeues_of);
}

static void max_of_release(struct ck_rate_limiter *rl)
{
    for (size_t i = 0; i < rl->nchildren; i++)
        ck_rl_free(rl->children[i]);
    free(rl->children);
}

static const struct rl_ops max_of_ops = {max_of_when, max_of_forget, max_of_num_requeues,
                                         max_of_release};

struct ck_rate_limiter *ck_rl_max_of_new(struct ck_rate_limiter **limiters, size_t n)
{
    bool complete = n > 0;
    for (size_t i = 0; i < n; i++)
        complete = complete && limiters[i];
    struct ck_rate_limiter *rl = complete ? rl_new(&max_of_ops) : NULL;
    struct ck_rate_limiter **children = rl ? ck__calloc(n, sizeof(*children)) : NULL;
    if (!children) {
        for (size_t i = 0; i < n; i++)
            ck_rl_free(limiters[i]);
        free(rl);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        children[i] = limiters[i];
    rl->children = children;
    rl->nchildren = n;
    return rl;
}

struct ck_rate_limiter *ck_rl_default_controller_new(struct ck_clock *clock)
{
    struct ck_rate_limiter *both[] = {
        ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC),
        ck_rl_bucket_new(clock, 10, 100),
    };
    return ck_rl_max_of_new(both, 2);
}

int64_t ck_rl_when(struct ck_rate_limiter *rl, const char *key)
{
    return rl->ops->when(rl, key);
}

void ck_rl_forget(struct ck_rate_limiter *rl, const char *key)
{
    rl->ops->forget(rl, key);
}

int ck_rl_num_requeues(struct ck_rate_limiter *rl, const char *key)
{
    return rl->ops->num_requeues(rl, key);
}

struct ck_rate_limiter *ck_rl_free(struct ck_rate_limiter *rl)
{
    if (!rl)
        return NULL;
    rl->ops->release(rl);
    pthread_mutex_destroy(&rl->lock);
    free(rl);
    return NULL;
}

int ck_wq_add_rate_limited(struct ck_wq *q, const char *key)
{
    if (!key || !q->limiter)
        return CK_EINVAL;
    return ck_wq_add_after(q, key, ck_rl_when(q->limiter, key));
}

void ck_wq_forget(struct ck_wq *q, const char *key)
{
    if (q->limiter && key)
        ck_rl_forget(q->limiter, key);
}

int ck_wq_num_requeues(struct ck_wq *q, const char *key)
{
    return q->limiter && key ? ck_rl_num_requeues(q->limiter, key) : 0;
}
