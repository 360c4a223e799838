/*
 * pass_thread.c - a thread that runs a pass over a store prefix whenever the prefix
 * changes: the loop of the server's own controllers (crd.c, policy_status.c), which
 * kube-apiserver and kube-controller-manager write as informers and work queues.
 *
 * A store watch on the prefix raises `dirty`; the thread runs the pass once per raise
 * (changes during a pass make one more), and again after a second when the pass asks
 * for it (a wait that no event ends, such as a deletion in progress).
 *
 * Threading: the watch callback only raises `dirty` under t->lock; the pass runs on the
 * thread, unlocked.
 *
 * Tested through its users (tests/apiserver/test_crd.c, tests/e2e/test_admission_policy.sh).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck__pass_thread {
    bool (*pass)(void *arg);
    void *arg;
    struct ck_store_watch *watch;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock; /* guards dirty and stop */
    pthread_cond_t wake;
    bool dirty, stop;
};

static void on_event(const struct ck_store_event *event, void *arg)
{
    (void)event;
    struct ck__pass_thread *t = arg;
    pthread_mutex_lock(&t->lock);
    t->dirty = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
}

static void *pass_main(void *arg)
{
    struct ck__pass_thread *t = arg;
    bool again = false;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        if (!t->dirty) {
            if (again) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 1;
                pthread_cond_timedwait(&t->wake, &t->lock, &until);
            } else {
                pthread_cond_wait(&t->wake, &t->lock);
            }
            if (t->stop)
                break;
        }
        t->dirty = false;
        pthread_mutex_unlock(&t->lock);
        again = t->pass(t->arg);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int ck__pass_thread_start(struct ck_store *store, const struct ck_kind *kind, bool first_here,
                          bool (*pass)(void *arg), void *arg, struct ck__pass_thread **ret,
                          struct ck_err *reterr)
{
    *ret = NULL;
    struct ck__pass_thread *t = ck__calloc(1, sizeof(*t));
    if (!t)
        return ck_err_no_memory(reterr);
    t->pass = pass;
    t->arg = arg;
    t->dirty = true; /* what is stored before the watch started, or what the first pass wrote */
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    char prefix[128];
    int plen = ck__collection_prefix(kind, NULL, prefix, sizeof(prefix));
    int r = ck_store_watch(store, prefix, (size_t)plen, true, 0, on_event, t, &t->watch, reterr);
    if (r == 0 && first_here)
        pass(arg);
    if (r == 0 && pthread_create(&t->thread, NULL, pass_main, t) != 0)
        r = ck_err_set(reterr, CK_EIO, "cannot start the %s controller",
                       kind->singular ? kind->singular : kind->resource);
    else if (r == 0)
        t->started = true;
    if (r < 0) {
        ck__pass_thread_stop(t);
        return r;
    }
    *ret = t;
    return 0;
}

struct ck__pass_thread *ck__pass_thread_stop(struct ck__pass_thread *t)
{
    if (!t)
        return NULL;
    ck_store_watch_cancel(t->watch);
    if (t->started) {
        pthread_mutex_lock(&t->lock);
        t->stop = true;
        pthread_cond_signal(&t->wake);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->thread, NULL);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    free(t);
    return NULL;
}
