/*
 * ckube/cronjob.h - cron schedules and the CronJob controller (kubernetes
 * pkg/controller/cronjob, cronjob_controllerv2.go and utils.go).
 *
 * The controller starts a Job for each time a CronJob's schedule comes due: named
 * "<cronjob>-<minutes since the epoch of the scheduled time>", so a run is created once
 * whatever restarts in between; at most one run for many missed times (with Kubernetes'
 * TooManyMissedTimes warning past 100), none when startingDeadlineSeconds has passed;
 * concurrencyPolicy Allow, Forbid (skip while a run is active) or Replace (delete the
 * active runs first); suspend; the history limits; status active, lastScheduleTime and
 * lastSuccessfulTime. It reads through listers, writes through a client interface, and
 * takes a wall clock, so a test runs a day of schedules in a second.
 */
#ifndef CKUBE_CRONJOB_H
#define CKUBE_CRONJOB_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* ---- schedules --------------------------------------------------------------------- */

struct ck_cron_schedule;

/*
 * Parses spec (five fields or a descriptor such as @hourly, optionally after
 * "CRON_TZ=<zone> ") in time_zone (spec.timeZone; NULL or "UTC": UTC). Returns 0 and a
 * schedule to free with ck_cron_free(), CK_EINVAL with robfig/cron's words, or CK_ENOMEM.
 */
int ck_cron_parse(const char *spec, const char *time_zone, struct ck_cron_schedule **ret,
                  struct ck_err *reterr);
struct ck_cron_schedule *ck_cron_free(struct ck_cron_schedule *s);

/* The first time (seconds since the epoch) after `after` the schedule fires; 0: none within 5
 * years. */
int64_t ck_cron_next(const struct ck_cron_schedule *s, int64_t after);

/* The schedule's zone name ("UTC" when none). */
const char *ck_cron_zone(const struct ck_cron_schedule *s);

/* The wall clock of the schedule's zone at t, as seconds (t plus the zone's offset). */
int64_t ck_cron_to_wall(const struct ck_cron_schedule *s, int64_t t);

/* The system zone database has zone ("UTC" and "Local" always). */
bool ck_cron_zone_known(const char *zone);

/* ---- the controller ---------------------------------------------------------------- */

/* Kubernetes' limit past which missed start times are a warning. */
#define CK_CRONJOB_MAX_MISSED 100

struct ck_cronjob_controller;

int ck_cronjob_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                              struct ck_clock *clock, struct ck_cronjob_controller **ret_c,
                              struct ck_err *reterr);
int ck_cronjob_controller_run(struct ck_cronjob_controller *c, int workers, struct ck_err *reterr);
struct ck_cronjob_controller *ck_cronjob_controller_free(struct ck_cronjob_controller *c);

/* What the controller reads and writes through, for unit tests. Pointers are borrowed. */
struct ck_cronjob_controller_deps {
    const struct ck_ctl_client *client; /* copied; must outlive c */
    const struct ck_lister *cronjobs;   /* copied; ditto */
    const struct ck_lister *jobs;       /* copied; ditto */
    struct ck_clock *clock;             /* the queue's clock; NULL = real */
    int64_t (*now)(void *arg);          /* wall clock, ns since the epoch; NULL = real */
    void *now_arg;
    /* The cache behind jobs when it has the CK_INDEX_CONTROLLER_UID index, as the informer's
     * has: a sync reads a CronJob's Jobs from it. NULL: the namespace's Jobs, filtered. */
    struct ck_indexer *jobs_indexer;
};

int ck_cronjob_controller_new_with(const struct ck_cronjob_controller_deps *deps,
                                   struct ck_cronjob_controller **ret_c, struct ck_err *reterr);

/*
 * One sync of key ("namespace/name"); *ret_requeue_after (may be NULL) gets the time
 * (ns) until the next run is due, 0 when none is queued.
 */
int ck_cronjob_controller_sync(struct ck_cronjob_controller *c, const char *key,
                               int64_t *ret_requeue_after, struct ck_err *reterr);

#endif /* CKUBE_CRONJOB_H */
