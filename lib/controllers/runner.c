/*
 * runner.c - the one worker loop of the tree: N threads turning queued keys into syncs.
 *
 * Every Kubernetes controller writes the same loop (processNextWorkItem): get a key, call
 * syncHandler(key), Forget on success, AddRateLimited on error, always Done. Here it is
 * written once. The queue guarantees a key is never synced by two workers at once and a
 * key added during its sync is synced again afterwards.
 *
 * No error loses a key: when sync fails we re-add it with rate limiting, and should that
 * add fail (no memory, or a queue given no rate limiter), we fall back to a plain add,
 * which for a key being processed only marks it dirty and so cannot fail. The key is
 * synced again when done. Only a queue shutting down drops it, as in client-go. Failures
 * are logged at error level, except a conflict (a write from a stale cache), which is
 * logged at verbosity 2 as Kubernetes does.
 *
 * Crashes: C has no recover(), and a thread cannot survive SIGSEGV. The optional crash
 * handler (ck_runner_install_crash_handler) names the controller and key whose sync was
 * running on the crashing thread, from a thread-local set around each sync, then lets the
 * signal kill the process as it would have. See controllers.h.
 *
 * Workers start as keys need them, up to the controller's count (--concurrent-*-syncs):
 * start runs one, and a worker that takes a key when no other worker is waiting starts
 * the next one, so a waiting worker is there for the next key while fewer than `workers`
 * are busy, as with all of them started up front. A controller that has little to do
 * keeps a thread or two instead of its 5, 10 or 20 (an idle kube-controller-manager's
 * goroutines cost nothing; an idle thread's stack and allocator cache do). Started
 * workers stay until stop.
 *
 * Threading: workers share the queue (thread-safe) and the stats (atomics); the thread
 * counts are under `lock`; start and stop are called by the owner, once each.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

struct ck_runner {
    struct ck_controller *c;
    pthread_mutex_t lock; /* over the four below */
    pthread_t *threads;
    int nthreads, max_threads;
    int idle;     /* workers waiting for a key */
    bool stopped; /* no worker starts any more: nthreads is final */
    atomic_uint_fast64_t syncs, failures;
};

/* What the crash handler reports: set by a worker around each sync. */
static _Thread_local const char *running_controller;
static _Thread_local const char *running_key;

static void process(struct ck_runner *r, const char *key)
{
    struct ck_controller *c = r->c;
    struct ck_err err = {0};
    running_controller = c->name;
    running_key = key;
    int ret = c->sync(c, key, &err);
    running_key = NULL;
    atomic_fetch_add(&r->syncs, 1);
    if (ret == 0) {
        ck_wq_forget(c->queue, key);
        return;
    }
    atomic_fetch_add(&r->failures, 1);
    /* A conflict is a stale cache racing a write, routine during a rollout and cured by the
     * retry: Kubernetes logs it at verbosity 2 (the Deployment controller's handleErr),
     * not as an error. */
    if (ret == CK_ECONFLICT)
        CK_LOGV(2, "%s: conflict syncing \"%s\", requeuing: %s", c->name, key,
                err.msg[0] ? err.msg : strerror(-ret));
    else
        CK_LOGE("%s: error syncing \"%s\", requeuing: %s", c->name, key,
                err.msg[0] ? err.msg : strerror(-ret));
    int added = ck_wq_add_rate_limited(c->queue, key);
    if (added < 0 && added != CK_ESHUTDOWN) /* no memory, or a queue without a limiter */
        ck_wq_add(c->queue, key);           /* the key is processing: this only marks it dirty */
}

static void *worker_main(void *arg);

/* One more worker, unless the runner is stopping or full; r->lock held. */
static int start_worker_locked(struct ck_runner *r)
{
    if (r->stopped || r->nthreads == r->max_threads)
        return 0;
    if (pthread_create(&r->threads[r->nthreads], NULL, worker_main, r) != 0)
        return CK_ENOMEM;
    r->nthreads++;
    return 0;
}

static void *worker_main(void *arg)
{
    struct ck_runner *r = arg;
    const char *key;
    pthread_mutex_lock(&r->lock);
    r->idle++;
    pthread_mutex_unlock(&r->lock);
    while (ck_wq_get(r->c->queue, &key) == 0) {
        /* none left waiting: start one for the next key (should none start, the busy
         * ones take it as they finish) */
        pthread_mutex_lock(&r->lock);
        if (--r->idle == 0)
            start_worker_locked(r);
        pthread_mutex_unlock(&r->lock);
        process(r, key);
        ck_wq_done(r->c->queue, key);
        pthread_mutex_lock(&r->lock);
        r->idle++;
        pthread_mutex_unlock(&r->lock);
    }
    return NULL;
}

int ck_runner_start(struct ck_controller *c, int workers, struct ck_runner **ret_runner,
                    struct ck_err *reterr)
{
    if (!c || !c->sync || !c->queue || workers < 1)
        return ck_err_set(reterr, CK_EINVAL, "a controller needs sync, a queue and workers >= 1");
    struct ck_runner *r = ck__calloc(1, sizeof(*r));
    if (!r || !(r->threads = ck__calloc((size_t)workers, sizeof(pthread_t)))) {
        free(r);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory starting controller %s", c->name);
    }
    r->c = c;
    r->max_threads = workers;
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_lock(&r->lock);
    int started = start_worker_locked(r); /* the others as keys need them */
    pthread_mutex_unlock(&r->lock);
    if (started < 0) {
        ck_runner_stop(r);
        return ck_err_set(reterr, CK_ENOMEM, "cannot start worker threads for %s", c->name);
    }
    *ret_runner = r;
    return 0;
}

struct ck_runner *ck_runner_stop(struct ck_runner *r)
{
    if (!r)
        return NULL;
    ck_wq_shutdown_drain(r->c->queue);
    pthread_mutex_lock(&r->lock);
    r->stopped = true;
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    pthread_mutex_destroy(&r->lock);
    free(r->threads);
    free(r);
    return NULL;
}

void ck_runner_stats(struct ck_runner *r, struct ck_runner_stats *ret_stats)
{
    ret_stats->syncs = atomic_load(&r->syncs);
    ret_stats->failures = atomic_load(&r->failures);
    pthread_mutex_lock(&r->lock);
    ret_stats->workers = r->nthreads;
    pthread_mutex_unlock(&r->lock);
}

/* Appends s to buf at *len, within cap. Async-signal-safe. */
static void append(char *buf, size_t *len, size_t cap, const char *s)
{
    while (s && *s && *len < cap)
        buf[(*len)++] = *s++;
}

static void crash_handler(int sig)
{
    char line[512], num[12];
    size_t len = 0;
    int n = 0;
    for (int v = sig; v > 0 && n < 11; v /= 10)
        n++;
    num[n] = '\0';
    for (int v = sig, i = n - 1; i >= 0; v /= 10, i--)
        num[i] = (char)('0' + v % 10);
    append(line, &len, sizeof(line) - 1, "ckube: fatal signal ");
    append(line, &len, sizeof(line) - 1, num);
    if (running_key) {
        append(line, &len, sizeof(line) - 1, " in controller ");
        append(line, &len, sizeof(line) - 1, running_controller ? running_controller : "?");
        append(line, &len, sizeof(line) - 1, " while syncing key \"");
        append(line, &len, sizeof(line) - 1, running_key);
        append(line, &len, sizeof(line) - 1, "\"");
    } else {
        append(line, &len, sizeof(line) - 1, " outside any controller sync");
    }
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    raise(sig); /* SA_RESETHAND restored the default action: die as we would have */
}

int ck_runner_install_crash_handler(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = crash_handler;
    sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER);
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return CK_EINVAL;
    return 0;
}
