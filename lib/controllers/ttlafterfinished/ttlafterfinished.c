/*
 * ttlafterfinished.c - the TTL-after-finished controller (kubernetes
 * pkg/controller/ttlafterfinished/ttlafterfinished_controller.go).
 *
 * A Job with spec.ttlSecondsAfterFinished that has finished (its Complete or Failed
 * condition is True) is deleted, with its pods in the foreground, once that many seconds
 * have passed since the condition's lastTransitionTime. The handlers queue the Jobs that
 * need cleaning up; sync(key) either queues the key again for the time left, or reads the
 * Job afresh from the server (the TTL may have changed since the cache saw it), checks
 * again, and deletes it with a precondition on its uid.
 *
 * Threading: the runner syncs one key at a time per key; handlers run on the informer's
 * thread; the controller's state is read-only after creation.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/job.h"

struct ck_ttl_controller {
    struct ck_ctl_client client;
    struct ck_lister jobs;
    const struct ck_resource *jobs_res;
    struct ck_informer *infs[1];
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    int64_t (*now)(void *arg);
    void *now_arg;
};

static int64_t wall_now(const struct ck_ttl_controller *c)
{
    if (c->now)
        return c->now(c->now_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* When the Job finished (jobFinishTime): its Complete or Failed condition's time, or 0. */
static int64_t finish_time(const json_t *job)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (!type || !status || strcmp(status, "True") != 0 ||
            (strcmp(type, "Complete") != 0 && strcmp(type, "Failed") != 0))
            continue;
        int64_t t = 0;
        if (ck__time_parse(json_string_value(json_object_get(c, "lastTransitionTime")), &t, NULL) ==
            0)
            return t * CK_SEC;
    }
    return 0;
}

/* needsCleanup: a TTL and finished. */
static bool needs_cleanup(const json_t *job)
{
    const json_t *ttl = json_object_get(json_object_get(job, "spec"), "ttlSecondsAfterFinished");
    return json_is_integer(ttl) && finish_time(job) != 0;
}

/* The time left before job expires (<= 0: expired), ns. */
static int64_t time_left(const struct ck_ttl_controller *c, const json_t *job)
{
    json_int_t ttl = json_integer_value(
        json_object_get(json_object_get(job, "spec"), "ttlSecondsAfterFinished"));
    return finish_time(job) + (int64_t)ttl * CK_SEC - wall_now(c);
}

static void job_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    struct ck_ttl_controller *c = arg;
    if (!json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") &&
        needs_cleanup(obj))
        ck__ctl_enqueue(c->queue, obj);
}

static void job_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    job_add(obj, false, arg);
}

static void job_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)obj, (void)t, (void)arg; /* a deleted Job needs no cleaning up */
}

static int sync_key(struct ck_ttl_controller *c, const char *key, int64_t *ret_after,
                    struct ck_err *reterr)
{
    if (ret_after)
        *ret_after = 0;
    char *ns = NULL, *name = NULL;
    const json_t *job = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->jobs, ns, name, &job);
    if (r < 0) {
        free(ns);
        free(name);
        return 0;
    }
    bool cleanup = needs_cleanup(job) &&
                   !json_object_get(json_object_get(job, "metadata"), "deletionTimestamp");
    int64_t left = cleanup ? time_left(c, job) : 0;
    ck_cached_unref(job);
    if (!cleanup)
        goto out;
    if (left > 0) {
        ck_wq_add_after(c->queue, key, left);
        if (ret_after)
            *ret_after = left;
        goto out;
    }
    /* the cache may be stale: read the Job afresh and check again */
    json_t *fresh = NULL;
    r = ck_ctl_get(&c->client, c->jobs_res, ns, name, &fresh, reterr);
    if (r == CK_ENOENT) {
        ck_err_release(reterr);
        r = 0;
        goto out;
    }
    if (r < 0)
        goto out;
    if (needs_cleanup(fresh) && (left = time_left(c, fresh)) > 0) {
        ck_wq_add_after(c->queue, key, left);
        if (ret_after)
            *ret_after = left;
    } else if (needs_cleanup(fresh)) {
        json_t *opts = json_pack("{s:s, s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion",
                                 "v1", "propagationPolicy", "Foreground", "preconditions", "uid",
                                 ck__meta_str(fresh, "uid") ? ck__meta_str(fresh, "uid") : "");
        CK_LOGV(4, "ttl-after-finished: cleaning up job %s", key);
        r = opts ? ck_ctl_delete(&c->client, c->jobs_res, ns, name, opts, NULL, reterr)
                 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        if (r == CK_ENOENT) {
            ck_err_release(reterr);
            r = 0;
        }
        json_decref(opts);
    }
    json_decref(fresh);
out:
    free(ns);
    free(name);
    return r;
}

static int sync_ttl(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return sync_key(ctl->data, key, NULL, reterr);
}

static int init_common(struct ck_ttl_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, struct ck_err *reterr)
{
    c->client = *client;
    c->jobs_res = ck_controller_resource("batch", "v1", "jobs");
    if (!c->jobs_res)
        return ck_err_set(reterr, CK_ENOENT, "ttl-after-finished: the API serves no jobs");
    int r = ck__ctl_init(&c->ctl, "ttl-after-finished", sync_ttl, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_ttl_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_clock *clock, struct ck_ttl_controller **ret_c,
                          struct ck_err *reterr)
{
    struct ck_ttl_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler h = {job_add, job_update, job_delete, c};
    int r = init_common(c, &rest, clock, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->jobs_res, &h, &c->infs[0], &c->jobs, reterr);
    if (r < 0) {
        ck_ttl_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_ttl_controller_new_with(const struct ck_job_controller_deps *deps,
                               struct ck_ttl_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->jobs)
        return ck_err_set(reterr, CK_EINVAL,
                          "ttl-after-finished: a client and a lister are needed");
    struct ck_ttl_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->jobs = *deps->jobs;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    int r = init_common(c, deps->client, deps->clock, reterr);
    if (r < 0) {
        ck_ttl_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_ttl_controller_sync(struct ck_ttl_controller *c, const char *key, int64_t *ret_requeue_after,
                           struct ck_err *reterr)
{
    return sync_key(c, key, ret_requeue_after, reterr);
}

int ck_ttl_controller_run(struct ck_ttl_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 1, workers, &c->runner, reterr);
}

struct ck_ttl_controller *ck_ttl_controller_free(struct ck_ttl_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    free(c);
    return NULL;
}
