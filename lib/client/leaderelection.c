/*
 * leaderelection.c - leader election on a Lease (client-go tools/leaderelection:
 * leaderelection.go and resourcelock/leaselock.go).
 *
 * One thread per elector runs client-go's Run: acquire (tryAcquireOrRenew every retry
 * period, jittered by up to 1.2 times it, until it succeeds), then renew (every retry
 * period; a renewal tries again every retry period until renew_deadline has passed since
 * it began, and the elector stops leading if none succeeded), then on_stopped_leading.
 *
 * tryAcquireOrRenew: a leader whose observed record is still valid first updates the
 * Lease it holds optimistically (the resourceVersion it last saw). Otherwise it reads the
 * Lease, creates it when absent, and gives up while another holder's record is valid:
 * valid means the record was observed to change less than lease_duration ago on this
 * candidate's clock. Taking the lease over from another holder bumps leaseTransitions;
 * a leader renewing keeps acquireTime and leaseTransitions.
 *
 * The Lease's times are written from the wall clock (MicroTime); validity is judged only
 * on the injected clock, so tests drive the elector with a fake one.
 *
 * Threading: the public functions are thread-safe; the observed record is guarded by mu
 * and the lock's calls are made without it. Callbacks run on the elector's thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/client.h"
#include "ckube/internal/util.h"
#include "ckube/rest.h"

#define JITTER_FACTOR 1.2 /* wait.JitterUntil's factor in the acquire loop */

struct ck_leader_elector {
    struct ck_leader_election_config cfg;
    char *identity;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    pthread_t thread;
    json_t *lease;         /* the Lease last read or written: updates are conditional on it */
    json_t *observed;      /* its spec, the record last observed */
    int64_t observed_time; /* when the record was observed to change (cfg.clock) */
    char holder[256];      /* the observed holder */
    char reported[256];    /* the holder last given to on_new_leader */
    unsigned int seed;     /* the acquire loop's jitter */
};

/* ---- the Lease through a REST client ---------------------------------------------- */

static const struct ck_resource leases = {"coordination.k8s.io", "v1", "leases", true};

static int rest_get(void *data, const char *namespace, const char *name, json_t **ret_lease,
                    struct ck_err *reterr)
{
    return ck_rest_get(data, &leases, namespace, name, ret_lease, reterr);
}

static int rest_create(void *data, const json_t *lease, json_t **ret_lease, struct ck_err *reterr)
{
    return ck_rest_create(data, &leases, ck__meta_str(lease, "namespace"), lease, ret_lease,
                          reterr);
}

static int rest_update(void *data, const json_t *lease, json_t **ret_lease, struct ck_err *reterr)
{
    return ck_rest_update(data, &leases, ck__meta_str(lease, "namespace"), lease, ret_lease,
                          reterr);
}

static const struct ck_lease_lock_ops rest_ops = {rest_get, rest_create, rest_update};

void ck_lease_lock_init_rest(struct ck_lease_lock *lock, struct ck_rest *rest,
                             const char *namespace, const char *name)
{
    *lock = (struct ck_lease_lock){&rest_ops, rest, namespace, name};
}

/* ---- the record --------------------------------------------------------------------- */

/* Now on the wall clock, as a MicroTime. */
static const char *micro_now(char *buf, size_t size)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ck__time_format((int64_t)ts.tv_sec, ts.tv_nsec / 1000, buf, size);
}

/* LeaderElectionRecordToLeaseSpec. NULL when out of memory. */
static json_t *record_new(const char *holder, int64_t duration_s, const char *acquire_time,
                          const char *renew_time, json_int_t transitions)
{
    return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", holder, "leaseDurationSeconds",
                     (json_int_t)duration_s, "acquireTime", acquire_time, "renewTime", renew_time,
                     "leaseTransitions", transitions);
}

static const char *record_str(const json_t *record, const char *key)
{
    return json_string_value(json_object_get(record, key));
}

static json_int_t record_transitions(const json_t *record)
{
    return json_integer_value(json_object_get(record, "leaseTransitions"));
}

/* setObservedRecord: the record, and when we saw it. Takes a reference to record. */
static void observe(struct ck_leader_elector *le, json_t *record)
{
    pthread_mutex_lock(&le->mu);
    json_decref(le->observed);
    le->observed = record;
    le->observed_time = ck_clock_now(le->cfg.clock);
    snprintf(le->holder, sizeof(le->holder), "%s", record_str(record, "holderIdentity") ?: "");
    pthread_mutex_unlock(&le->mu);
}

/* The Lease last seen, replaced by lease (a reference the elector takes). */
static void keep_lease(struct ck_leader_elector *le, json_t *lease)
{
    json_decref(le->lease);
    le->lease = lease;
}

bool ck_leader_elector_is_leader(struct ck_leader_elector *le)
{
    pthread_mutex_lock(&le->mu);
    bool leader = strcmp(le->holder, le->identity) == 0;
    pthread_mutex_unlock(&le->mu);
    return leader;
}

const char *ck_leader_elector_leader(struct ck_leader_elector *le, char *buf, size_t size)
{
    pthread_mutex_lock(&le->mu);
    snprintf(buf, size, "%s", le->holder);
    pthread_mutex_unlock(&le->mu);
    return buf;
}

/* isLeaseValid: the observed record changed less than lease_duration ago. */
static bool lease_valid(struct ck_leader_elector *le)
{
    pthread_mutex_lock(&le->mu);
    bool valid = le->observed_time + le->cfg.lease_duration > ck_clock_now(le->cfg.clock);
    pthread_mutex_unlock(&le->mu);
    return valid;
}

/* A copy of the observed record's acquireTime and leaseTransitions, under the lock. */
static void observed_fields(struct ck_leader_elector *le, char *acquire, size_t size,
                            json_int_t *ret_transitions)
{
    pthread_mutex_lock(&le->mu);
    snprintf(acquire, size, "%s", record_str(le->observed, "acquireTime") ?: "");
    *ret_transitions = record_transitions(le->observed);
    pthread_mutex_unlock(&le->mu);
}

/* LeaseLock.Update: the Lease last seen with record as its spec, PUT conditionally. */
static int update_lease(struct ck_leader_elector *le, json_t *record, struct ck_err *reterr)
{
    if (!le->lease)
        return ck_err_set(reterr, CK_EINVAL, "lease not initialized, call get or create first");
    json_t *lease = ck__json_copy(le->lease);
    if (!lease || json_object_set(lease, "spec", record) < 0) {
        json_decref(lease);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    json_t *written = NULL;
    int r = le->cfg.lock.ops->update(le->cfg.lock.data, lease, &written, reterr);
    json_decref(lease);
    if (r == 0)
        keep_lease(le, written);
    else
        json_decref(written);
    return r;
}

/* ---- tryAcquireOrRenew -------------------------------------------------------------- */

static bool try_acquire_or_renew(struct ck_leader_elector *le)
{
    const struct ck_lease_lock *lock = &le->cfg.lock;
    char now[CK__TIME_LEN], acquire[CK__TIME_LEN];
    micro_now(now, sizeof(now));
    int64_t duration_s = le->cfg.lease_duration / CK_SEC;
    struct ck_err err = {0};
    json_int_t transitions;

    /* 1. the leader's fast path: update the Lease it last saw */
    if (ck_leader_elector_is_leader(le) && lease_valid(le)) {
        observed_fields(le, acquire, sizeof(acquire), &transitions);
        json_t *record = record_new(le->identity, duration_s, acquire, now, transitions);
        int r = record ? update_lease(le, record, &err) : CK_ENOMEM;
        if (r == 0) {
            observe(le, record);
            return true;
        }
        json_decref(record);
        CK_LOGW("leader election: failed to update lock optimistically: %s, falling back to "
                "slow path",
                r == CK_ENOMEM ? "out of memory" : err.msg);
    }

    /* 2. read the Lease, or create it */
    json_t *lease = NULL;
    int r = lock->ops->get(lock->data, lock->namespace, lock->name, &lease, &err);
    if (r == CK_ENOENT) {
        json_t *record = record_new(le->identity, duration_s, now, now, 0);
        json_t *obj = record
                          ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion",
                                      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                      lock->name, "namespace", lock->namespace, "spec", record)
                          : NULL;
        json_t *made = NULL;
        r = obj ? lock->ops->create(lock->data, obj, &made, &err) : CK_ENOMEM;
        json_decref(obj);
        if (r < 0) {
            CK_LOGV(2, "leader election: error initially creating the lease %s/%s: %s",
                    lock->namespace, lock->name, r == CK_ENOMEM ? "out of memory" : err.msg);
            json_decref(made);
            json_decref(record);
            return false;
        }
        keep_lease(le, made);
        observe(le, record);
        return true;
    }
    if (r < 0) {
        CK_LOGW("leader election: error retrieving the lease %s/%s: %s", lock->namespace,
                lock->name, err.msg);
        return false;
    }
    keep_lease(le, lease);

    /* 3. a record that changed is observed now; another's valid record wins */
    json_t *old = json_object_get(lease, "spec");
    if (!old) {
        old = json_object();
        json_object_set_new(lease, "spec", old);
    }
    pthread_mutex_lock(&le->mu);
    bool changed = !le->observed || !json_equal(le->observed, old);
    pthread_mutex_unlock(&le->mu);
    if (changed) {
        json_t *copy = ck__json_copy(old);
        if (!copy)
            return false;
        observe(le, copy);
    }
    const char *old_holder = record_str(old, "holderIdentity");
    bool leader = ck_leader_elector_is_leader(le);
    if (old_holder && *old_holder && lease_valid(le) && !leader) {
        CK_LOGV(4, "leader election: lock is held by %s and has not yet expired", old_holder);
        return false;
    }

    /* 4. take it (or renew it through the slow path) */
    const char *acquire_time = now;
    transitions = record_transitions(old) + 1;
    if (leader) {
        acquire_time = record_str(old, "acquireTime") ?: now;
        transitions = record_transitions(old);
    }
    json_t *record = record_new(le->identity, duration_s, acquire_time, now, transitions);
    r = record ? update_lease(le, record, &err) : CK_ENOMEM;
    if (r < 0) {
        CK_LOGV(2, "leader election: failed to update the lease %s/%s: %s", lock->namespace,
                lock->name, r == CK_ENOMEM ? "out of memory" : err.msg);
        json_decref(record);
        return false;
    }
    observe(le, record);
    return true;
}

/* release: holder "" for one second, so that another candidate takes it at once. */
static void release(struct ck_leader_elector *le)
{
    if (!ck_leader_elector_is_leader(le))
        return;
    char now[CK__TIME_LEN];
    micro_now(now, sizeof(now));
    pthread_mutex_lock(&le->mu);
    json_int_t transitions = record_transitions(le->observed);
    pthread_mutex_unlock(&le->mu);
    json_t *record = record_new("", 1, now, now, transitions);
    struct ck_err err = {0};
    int r = record ? update_lease(le, record, &err) : CK_ENOMEM;
    if (r < 0) {
        CK_LOGW("leader election: failed to release the lease %s/%s: %s", le->cfg.lock.namespace,
                le->cfg.lock.name, r == CK_ENOMEM ? "out of memory" : err.msg);
        json_decref(record);
        return;
    }
    observe(le, record);
}

/* maybeReportTransition: on_new_leader when the observed holder changed. */
static void report_transition(struct ck_leader_elector *le)
{
    char holder[sizeof(le->holder)];
    ck_leader_elector_leader(le, holder, sizeof(holder));
    if (strcmp(holder, le->reported) == 0)
        return;
    snprintf(le->reported, sizeof(le->reported), "%s", holder);
    if (le->cfg.on_new_leader)
        le->cfg.on_new_leader(le->cfg.arg, holder);
}

/* ---- the thread --------------------------------------------------------------------- */

/* Sleeps d on the clock; false when the elector is being stopped. */
static bool sleep_for(struct ck_leader_elector *le, int64_t d)
{
    pthread_mutex_lock(&le->mu);
    int64_t deadline = ck_clock_now(le->cfg.clock) + d;
    while (!le->stop && ck_clock_now(le->cfg.clock) < deadline)
        ck_clock_wait(le->cfg.clock, &le->cond, &le->mu, deadline);
    bool go_on = !le->stop;
    pthread_mutex_unlock(&le->mu);
    return go_on;
}

static bool stopping(struct ck_leader_elector *le)
{
    pthread_mutex_lock(&le->mu);
    bool stop = le->stop;
    pthread_mutex_unlock(&le->mu);
    return stop;
}

/* One renewal (PollImmediateUntil over renew_deadline): true when it renewed. */
static bool renew(struct ck_leader_elector *le)
{
    int64_t deadline = ck_clock_now(le->cfg.clock) + le->cfg.renew_deadline;
    for (;;) {
        if (try_acquire_or_renew(le))
            return true;
        if (ck_clock_now(le->cfg.clock) + le->cfg.retry_period > deadline ||
            !sleep_for(le, le->cfg.retry_period))
            return false;
    }
}

static void *elect(void *arg)
{
    struct ck_leader_elector *le = arg;
    const char *ns = le->cfg.lock.namespace, *name = le->cfg.lock.name;
    CK_LOGS(0, "Attempting to acquire leader lease", "lease", name, "namespace", ns);
    bool acquired = false;
    while (!stopping(le)) {
        acquired = try_acquire_or_renew(le);
        report_transition(le);
        if (acquired)
            break;
        double jitter = JITTER_FACTOR * ((double)rand_r(&le->seed) / ((double)RAND_MAX + 1.0));
        if (!sleep_for(le, le->cfg.retry_period + (int64_t)(jitter * (double)le->cfg.retry_period)))
            break;
    }
    if (acquired) {
        CK_LOGS(0, "Successfully acquired lease", "lease", name, "namespace", ns);
        le->cfg.on_started_leading(le->cfg.arg);
        while (sleep_for(le, le->cfg.retry_period)) {
            bool renewed = renew(le);
            report_transition(le);
            if (!renewed) {
                if (!stopping(le))
                    CK_LOGE("leader election: failed to renew lease %s/%s: timed out waiting "
                            "for the condition",
                            ns, name);
                break;
            }
        }
        if (stopping(le) && le->cfg.release_on_cancel)
            release(le);
        /* no longer the leader, whatever the Lease says now */
        pthread_mutex_lock(&le->mu);
        if (strcmp(le->holder, le->identity) == 0)
            le->holder[0] = '\0';
        pthread_mutex_unlock(&le->mu);
    }
    le->cfg.on_stopped_leading(le->cfg.arg);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int ck_leader_elector_start(const struct ck_leader_election_config *config,
                            struct ck_leader_elector **ret_le, struct ck_err *reterr)
{
    struct ck_leader_election_config c = *config;
    c.lease_duration = c.lease_duration ? c.lease_duration : CK_LE_LEASE_DURATION;
    c.renew_deadline = c.renew_deadline ? c.renew_deadline : CK_LE_RENEW_DEADLINE;
    c.retry_period = c.retry_period ? c.retry_period : CK_LE_RETRY_PERIOD;
    /* NewLeaderElector's checks and words */
    if (c.lease_duration <= c.renew_deadline)
        return ck_err_set(reterr, CK_EINVAL, "leaseDuration must be greater than renewDeadline");
    if ((double)c.renew_deadline <= JITTER_FACTOR * (double)c.retry_period)
        return ck_err_set(reterr, CK_EINVAL,
                          "renewDeadline must be greater than retryPeriod*JitterFactor");
    if (c.lease_duration < 1 || c.renew_deadline < 1 || c.retry_period < 1)
        return ck_err_set(reterr, CK_EINVAL, "leaseDuration must be greater than zero");
    if (!c.on_started_leading || !c.on_stopped_leading)
        return ck_err_set(reterr, CK_EINVAL, "OnStartedLeading and OnStoppedLeading are required");
    if (!c.identity || !*c.identity)
        return ck_err_set(reterr, CK_EINVAL, "Lock identity is empty");
    if (!c.lock.ops || !c.lock.namespace || !c.lock.name)
        return ck_err_set(reterr, CK_EINVAL, "Lock must not be nil.");
    struct ck_leader_elector *le = ck__calloc(1, sizeof(*le));
    if (!le || !(le->identity = ck__strdup(c.identity))) {
        free(le);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    c.identity = le->identity;
    le->cfg = c;
    le->seed = (unsigned int)ck_clock_now(NULL);
    pthread_mutex_init(&le->mu, NULL);
    pthread_cond_init(&le->cond, NULL);
    if (pthread_create(&le->thread, NULL, elect, le) != 0) {
        pthread_cond_destroy(&le->cond);
        pthread_mutex_destroy(&le->mu);
        free(le->identity);
        free(le);
        return ck_err_set(reterr, CK_ENOMEM, "cannot start the leader elector");
    }
    *ret_le = le;
    return 0;
}

struct ck_leader_elector *ck_leader_elector_free(struct ck_leader_elector *le)
{
    if (!le)
        return NULL;
    pthread_mutex_lock(&le->mu);
    le->stop = true;
    pthread_cond_broadcast(&le->cond);
    pthread_mutex_unlock(&le->mu);
    pthread_join(le->thread, NULL);
    json_decref(le->lease);
    json_decref(le->observed);
    pthread_cond_destroy(&le->cond);
    pthread_mutex_destroy(&le->mu);
    free(le->identity);
    free(le);
    return NULL;
}
