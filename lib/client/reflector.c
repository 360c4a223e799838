/*
 * reflector.c - keeps an informer's cache in step with the API server (client-go
 * tools/cache/reflector.go, ListAndWatch).
 *
 * One thread per informer runs this loop:
 *
 *   need_list:  list in pages of page_size, every page at the first page's version (the
 *               server's continue tokens guarantee it), then hand the whole list to the
 *               informer (ck__informer_replace), which computes the difference;
 *   watch:      from the last version seen, with allowWatchBookmarks and a random
 *               timeoutSeconds in [5, 10) minutes (client-go's minWatchTimeout); every
 *               event and bookmark moves the last version forward;
 *   watch end:  cleanly: watch again at once from the last version; 410 (an HTTP 410 or
 *               an ERROR event with code 410): list again; anything else (refused,
 *               reset, 5xx): wait, then watch again from the last version (client-go
 *               also keeps its version across connection failures).
 *
 * Waits follow client-go's backoff manager: 800 ms doubling to 30 s, each stretched by
 * a random factor in [1, 2) (jitter 1.0), reset after a list or watch that worked. They
 * sleep on the informer's clock and wake at once when the informer stops.
 *
 * It lists and watches through a struct ck_list_watch (client-go's ListerWatcher), never
 * the REST client directly: over the API server that is listwatch.c's; a test passes a
 * fake.
 *
 * Threading: everything here runs on the reflector thread, except ck__reflector_stop()
 * which only sets the stop flag and signals.
 *
 * Tests: tests/client/test_reflector.c drives it over a fake list/watch (pages, events,
 * bookmarks, a clean end, 410 as an ERROR event and as an answer, failures with backoff
 * on a fake clock); tests/client/test_informer.c against a real API server.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"
#include "reflector.h"

#define BACKOFF_INITIAL (800 * CK_MSEC)
#define BACKOFF_MAX     (30 * CK_SEC)
#define MIN_WATCH_SECS  300

static uint32_t random_u32(void)
{
    uint32_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != sizeof(v))
        v = (uint32_t)ck_clock_now(NULL);
    return v;
}

/* Sleeps d (stretched by jitter), or less when stopping. Returns false when stopping. */
static bool backoff_sleep(struct ck__reflector *r, int64_t d)
{
    int64_t jittered = d + (int64_t)((double)d * (random_u32() / 4294967296.0));
    int64_t deadline = ck_clock_now(r->clock) + jittered;
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->stop) && ck_clock_wait(r->clock, &r->wake, &r->lock, deadline) == 0)
        ;
    pthread_mutex_unlock(&r->lock);
    return !atomic_load(&r->stop);
}

static void set_last_rv(struct ck__reflector *r, const json_t *obj)
{
    const char *rv = ck__meta_str(obj, "resourceVersion");
    if (rv && *rv && strlen(rv) < sizeof(r->last_rv)) {
        pthread_mutex_lock(&r->lock);
        snprintf(r->last_rv, sizeof(r->last_rv), "%s", rv);
        pthread_mutex_unlock(&r->lock);
    }
}

/* Lists every page. Returns 0 after handing the list to the informer, or an error. */
static int list_all(struct ck__reflector *r, struct ck_err *reterr)
{
    json_t **items = NULL;
    size_t n = 0, cap = 0;
    char *cont = NULL;
    json_t *first_page = NULL;
    int ret = 0;
    do {
        struct ck_list_options opts = {
            .label_selector = r->label_selector,
            .limit = r->page_size,
            .continue_token = cont,
        };
        json_t *list = NULL;
        ret = r->lw->list(r->lw->ctx, &opts, &list, reterr);
        free(cont);
        cont = NULL;
        if (ret < 0)
            break;
        json_t *meta = json_object_get(list, "metadata");
        const char *next = json_string_value(json_object_get(meta, "continue"));
        if (next && *next && !(cont = ck__strdup(next)))
            ret = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        if (!first_page)
            first_page = json_pack("{s:O}", "metadata", meta);
        json_t *page = json_object_get(list, "items");
        size_t i;
        json_t *item;
        json_array_foreach(page, i, item)
        {
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 256;
                json_t **grown = ck__realloc(items, ncap * sizeof(*items));
                if (!grown) {
                    ret = ck_err_set(reterr, CK_ENOMEM, "out of memory");
                    break;
                }
                items = grown;
                cap = ncap;
            }
            items[n++] = json_incref(item);
        }
        json_decref(list); /* the items now have one reference each: ours */
    } while (ret == 0 && cont);
    free(cont);
    if (ret == 0) {
        ret = ck__informer_replace(r->informer, items, n); /* takes the items and array */
        items = NULL;
        n = 0;
        if (ret < 0)
            ck_err_set(reterr, ret, "cannot store the list");
        else
            set_last_rv(r, first_page); /* the list's resourceVersion */
    }
    for (size_t i = 0; i < n; i++)
        json_decref(items[i]);
    free(items);
    json_decref(first_page);
    return ret;
}

static int on_watch_event(const char *type, json_t *obj, void *arg)
{
    struct ck__reflector *r = arg;
    if (strcmp(type, "BOOKMARK") == 0) {
        set_last_rv(r, obj);
        json_decref(obj);
        return 0;
    }
    if (strcmp(type, "ERROR") == 0) {
        long code = (long)json_integer_value(json_object_get(obj, "code"));
        ck_rest_status_error(obj, &r->watch_err);
        json_decref(obj);
        return code == 410 ? CK_ECOMPACTED : CK_EIO;
    }
    set_last_rv(r, obj);
    atomic_fetch_add(&r->watch_events, 1);
    int ret = ck__informer_apply(r->informer, type, obj); /* takes obj */
    return ret < 0 ? ret : 0;
}

static void *reflector_main(void *arg)
{
    struct ck__reflector *r = arg;
    int64_t backoff = BACKOFF_INITIAL;
    bool need_list = true;
    while (!atomic_load(&r->stop)) {
        struct ck_err err = {0};
        if (need_list) {
            if (list_all(r, &err) < 0) {
                atomic_fetch_add(&r->failures, 1);
                CK_LOGV(2, "reflector %s: list failed: %s", r->name, err.msg);
                if (!backoff_sleep(r, backoff))
                    break;
                backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
                continue;
            }
            atomic_fetch_add(&r->lists, 1);
            need_list = false;
            backoff = BACKOFF_INITIAL;
        }
        char rv[sizeof(r->last_rv)];
        pthread_mutex_lock(&r->lock);
        snprintf(rv, sizeof(rv), "%s", r->last_rv);
        pthread_mutex_unlock(&r->lock);
        struct ck_list_options opts = {
            .label_selector = r->label_selector,
            .resource_version = rv,
            .allow_watch_bookmarks = true,
            .timeout_seconds = MIN_WATCH_SECS + (int)(random_u32() % MIN_WATCH_SECS),
        };
        memset(&r->watch_err, 0, sizeof(r->watch_err));
        atomic_fetch_add(&r->watches, 1);
        uint64_t events_before = atomic_load(&r->watch_events);
        int ret = r->lw->watch(r->lw->ctx, &opts, on_watch_event, r, &r->stop, &err);
        if (atomic_load(&r->stop))
            break;
        if (ret == CK_ECOMPACTED) {
            CK_LOGV(2, "reflector %s: watch from %s expired, relisting", r->name, rv);
            atomic_fetch_add(&r->expired, 1);
            need_list = true;
        } else if (ret == 0) {
            backoff = BACKOFF_INITIAL; /* the server ended the stream: watch again */
        } else {
            atomic_fetch_add(&r->failures, 1);
            CK_LOGV(2, "reflector %s: watch failed: %s", r->name,
                    r->watch_err.code ? r->watch_err.msg : err.msg);
            if (atomic_load(&r->watch_events) != events_before)
                backoff = BACKOFF_INITIAL; /* it worked for a while */
            if (!backoff_sleep(r, backoff))
                break;
            backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
        }
    }
    return NULL;
}

void ck__reflector_init(struct ck__reflector *r)
{
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
}

void ck__reflector_release(struct ck__reflector *r)
{
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}

int ck__reflector_start(struct ck__reflector *r)
{
    atomic_store(&r->stop, false);
    return pthread_create(&r->thread, NULL, reflector_main, r) == 0 ? 0 : CK_ENOMEM;
}

void ck__reflector_request_stop(struct ck__reflector *r)
{
    pthread_mutex_lock(&r->lock);
    atomic_store(&r->stop, true);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

void ck__reflector_stop(struct ck__reflector *r)
{
    ck__reflector_request_stop(r);
    pthread_join(r->thread, NULL);
}
