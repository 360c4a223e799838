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
 * Threading: one mutex and condition over the queue; jobs run unlocked.
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
    unsigned n_threads;
    pthread_t threads[];
};

static void *worker_main(void *arg)
{
    struct ck__workers *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->head && !w->stopping)
            pthread_cond_wait(&w->queued, &w->lock);
        struct ck__work *job = w->head;
        if (!job)
            break; /* stopping, and nothing left to run */
        w->head = job->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->lock);
        job->run(job);
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
    for (; w->n_threads < threads; w->n_threads++) {
        if (pthread_create(&w->threads[w->n_threads], NULL, worker_main, w) != 0) {
            ck__workers_stop(w);
            ck__workers_free(w);
            ck_err_set(err, CK_ENOMEM, "apiserver: cannot start the request worker threads");
            return NULL;
        }
    }
    return w;
}

bool ck__workers_submit(struct ck__workers *w, struct ck__work *job)
{
    job->next = NULL;
    pthread_mutex_lock(&w->lock);
    bool taken = !w->stopping;
    if (taken) {
        if (w->tail)
            w->tail->next = job;
        else
            w->head = job;
        w->tail = job;
        pthread_cond_signal(&w->queued);
    }
    pthread_mutex_unlock(&w->lock);
    return taken;
}

void ck__workers_stop(struct ck__workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    bool joined = w->stopping;
    w->stopping = true;
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
