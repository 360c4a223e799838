/*
 * workers.c - the threads that run the requests which wait on the store.
 *
 * libmicrohttpd's pool threads each serve many connections, one request at a
 * time: a write that waits for its commit holds up every other connection
 * of its thread, and the connections a burst opens land on a few threads
 * (a pool thread that wakes for the listen socket accepts up to ten at
 * once). So writes are handed to this pool instead: server.c suspends the
 * connection, a worker runs the request and resumes it, and the commits of
 * every waiting writer are free to share one store transaction (the SQLite
 * store's group commit, concurrent transactions to etcd).
 *
 * A job is embedded in its request (no allocation here); each connection has
 * at most one request in progress, so the queue is bounded by the
 * connection limit. ck__workers_stop() runs every queued job before it
 * joins the threads, so no connection is left suspended; a job submitted
 * after it is refused and run by its caller.
 *
 * Threads start on demand, up to the pool's size: a submit starts one when
 * the queue holds more jobs than there are idle threads to take them, so a
 * job waits only when every one of the pool's threads is busy, as with
 * threads started up front, and an idle server has only the threads its
 * busiest moment needed (a thread's stack and its allocator cache are
 * memory, and 64 thread starts were 6% of the CPU samples of a restart until the
 * server answered). Started threads stay until the pool stops.
 *
 * Threading: one mutex and condition over the queue and the counts; jobs
 * run unlocked.
 * Tested through the API server tests (every write goes through here) and
 * tests/apiserver/test_workers.c.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck__workers {
    pthread_mutex_t lock;
    pthread_cond_t queued;
    struct ck__work *head, *tail;
    bool stopping;
    unsigned n_queued;    /* jobs in the queue */
    unsigned n_idle;      /* threads waiting for a job */
    unsigned n_threads;   /* started so far */
    unsigned max_threads; /* the pool's size */
    pthread_t threads[];
};

static void *worker_main(void *arg)
{
    struct ck__workers *w = arg;
    bool worked = false; /* a thread that never allocated has no cache to give back */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        w->n_idle++;
        if (worked && !w->head && !w->stopping) { /* about to wait */
            pthread_mutex_unlock(&w->lock);
            ck__memory_idle();
            pthread_mutex_lock(&w->lock);
        }
        while (!w->head && !w->stopping)
            pthread_cond_wait(&w->queued, &w->lock);
        w->n_idle--;
        struct ck__work *job = w->head;
        if (!job)
            break; /* stopping, and nothing left to run */
        w->head = job->next;
        if (!w->head)
            w->tail = NULL;
        w->n_queued--;
        pthread_mutex_unlock(&w->lock);
        job->run(job);
        worked = true;
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct ck__workers *ck__workers_start(unsigned threads, struct ck_err *err)
{
    struct ck__workers *w = ck__calloc(1, sizeof(*w) + threads * sizeof(pthread_t));
    if (!w) {
        ck_err_no_memory(err);
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->queued, NULL);
    w->max_threads = threads;
    return w;
}

bool ck__workers_submit(struct ck__workers *w, struct ck__work *job)
{
    job->next = NULL;
    pthread_mutex_lock(&w->lock);
    bool taken = !w->stopping;
    /* more jobs than idle threads to take them: one more thread, if the pool has room */
    if (taken && w->n_queued + 1 > w->n_idle && w->n_threads < w->max_threads) {
        if (pthread_create(&w->threads[w->n_threads], NULL, worker_main, w) == 0)
            w->n_threads++;
        else if (w->n_threads == 0)
            taken = false; /* no thread to run it: its caller does */
        /* else it waits for a started thread to be free */
    }
    if (taken) {
        if (w->tail)
            w->tail->next = job;
        else
            w->head = job;
        w->tail = job;
        w->n_queued++;
        pthread_cond_signal(&w->queued);
    }
    pthread_mutex_unlock(&w->lock);
    return taken;
}

unsigned ck__workers_threads(struct ck__workers *w)
{
    pthread_mutex_lock(&w->lock);
    unsigned n = w->n_threads;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void ck__workers_stop(struct ck__workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    bool joined = w->stopping;
    w->stopping = true; /* no thread starts from now on: n_threads is final */
    pthread_cond_broadcast(&w->queued);
    pthread_mutex_unlock(&w->lock);
    for (unsigned i = 0; !joined && i < w->n_threads; i++)
        pthread_join(w->threads[i], NULL);
}

void ck__workers_free(struct ck__workers *w)
{
    if (!w)
        return;
    pthread_cond_destroy(&w->queued);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
