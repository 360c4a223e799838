/*
 * reflector.h - private to lib/client: the reflector thread an informer owns
 * (reflector.c). The informer fills the first block, then calls ck__reflector_start();
 * the reflector feeds it through ck__informer_replace/apply (internal.h).
 */
#ifndef CKUBE_CLIENT_REFLECTOR_H
#define CKUBE_CLIENT_REFLECTOR_H

#include <pthread.h>
#include <stdatomic.h>

#include "ckube/informer.h"

struct ck__reflector {
    /* set by the informer before start; read-only after */
    const struct ck_list_watch *lw;
    const char *name; /* for log lines: the resource */
    const char *label_selector;
    int64_t page_size;
    struct ck_clock *clock;
    struct ck_informer *informer;

    /* the reflector's own */
    pthread_t thread;
    pthread_mutex_t lock; /* guards last_rv; the sleep's mutex */
    pthread_cond_t wake;
    atomic_bool stop;
    char last_rv[32];
    struct ck_err watch_err; /* the Status of an ERROR event (reflector thread only) */
    atomic_uint_fast64_t lists, watches, watch_events, expired, failures;
};

/* Initializes the lock and condition (at the informer's creation); release frees them. */
void ck__reflector_init(struct ck__reflector *r);
void ck__reflector_release(struct ck__reflector *r);

/* Starts the thread. 0 or CK_ENOMEM. */
int ck__reflector_start(struct ck__reflector *r);

/* Stops the thread (within about a second: a watch notices on its progress callback). */
void ck__reflector_stop(struct ck__reflector *r);

/* Sets the stop flag and wakes the thread without waiting for it (a later stop joins). */
void ck__reflector_request_stop(struct ck__reflector *r);

#endif /* CKUBE_CLIENT_REFLECTOR_H */
