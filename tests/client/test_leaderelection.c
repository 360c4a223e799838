/*
 * test_leaderelection.c - tests for lib/client/leaderelection.c on a fake clock and a
 * fake Lease lock written here (an in-memory Lease with resourceVersions, conditional
 * updates, and failures on demand): config checks with client-go's words; a lone
 * candidate creates the Lease and renews it keeping acquireTime; a second candidate
 * waits while the holder's record is fresh and takes over (leaseTransitions + 1) once it
 * has not changed for the lease duration; a released lease is taken at once, and only a
 * leader releases (a candidate that never led writes nothing when stopped); a leader
 * that cannot renew stops leading before its lease could be taken, one that fails for
 * less than the renew deadline stays the leader, and one whose Lease another holder
 * took stops within the renew deadline without writing over it. No sleeps:
 * ck_fake_clock_wait_for_waiters() says when the electors sleep again.
 */
#include "cktest.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/client.h"
#include "ckube/internal/util.h"

/* ---- the fake lock -------------------------------------------------------------------- */

struct fake_lock {
    pthread_mutex_t mu;
    json_t *lease; /* NULL: none yet */
    int rv;
    int creates, updates, gets;
    int fail_code; /* != 0: every get and update fails so */
};

static int fail_call(struct fake_lock *f, struct ck_err *reterr)
{
    return ck_err_set(reterr, f->fail_code, "the server is unreachable");
}

static int fake_get(void *data, const char *ns, const char *name, json_t **ret,
                    struct ck_err *reterr)
{
    struct fake_lock *f = data;
    (void)ns;
    pthread_mutex_lock(&f->mu);
    f->gets++;
    int r = f->fail_code       ? fail_call(f, reterr)
            : f->lease == NULL ? ck_err_set(reterr, CK_ENOENT, "leases \"%s\" not found", name)
                               : 0;
    if (r == 0)
        *ret = json_deep_copy(f->lease);
    pthread_mutex_unlock(&f->mu);
    return r;
}

static json_t *stored_copy(struct fake_lock *f, const json_t *lease)
{
    json_t *copy = json_deep_copy(lease);
    char rv[16];
    snprintf(rv, sizeof(rv), "%d", ++f->rv);
    json_object_set_new(json_object_get(copy, "metadata"), "resourceVersion", json_string(rv));
    json_decref(f->lease);
    f->lease = copy;
    return json_deep_copy(copy);
}

static int fake_create(void *data, const json_t *lease, json_t **ret, struct ck_err *reterr)
{
    struct fake_lock *f = data;
    pthread_mutex_lock(&f->mu);
    f->creates++;
    int r = f->lease ? ck_err_set(reterr, CK_EEXIST, "already exists") : 0;
    if (r == 0)
        *ret = stored_copy(f, lease);
    pthread_mutex_unlock(&f->mu);
    return r;
}

static int fake_update(void *data, const json_t *lease, json_t **ret, struct ck_err *reterr)
{
    struct fake_lock *f = data;
    pthread_mutex_lock(&f->mu);
    f->updates++;
    int r = f->fail_code ? fail_call(f, reterr) : 0;
    if (r == 0 && (!f->lease || strcmp(ck__meta_str(lease, "resourceVersion") ?: "",
                                       ck__meta_str(f->lease, "resourceVersion")) != 0))
        r = ck_err_set(reterr, CK_ECONFLICT, "the object has been modified");
    if (r == 0)
        *ret = stored_copy(f, lease);
    pthread_mutex_unlock(&f->mu);
    return r;
}

static const struct ck_lease_lock_ops fake_ops = {fake_get, fake_create, fake_update};

/* A spec field of the stored Lease, under the lock. */
static json_t *spec_field(struct fake_lock *f, const char *key)
{
    pthread_mutex_lock(&f->mu);
    json_t *v = json_deep_copy(json_object_get(json_object_get(f->lease, "spec"), key));
    pthread_mutex_unlock(&f->mu);
    return v;
}

static const char *holder(struct fake_lock *f, char *buf, size_t size)
{
    json_t *v = spec_field(f, "holderIdentity");
    snprintf(buf, size, "%s", json_string_value(v) ?: "");
    json_decref(v);
    return buf;
}

/* ---- candidates ----------------------------------------------------------------------- */

struct candidate {
    pthread_mutex_t mu;
    int started, stopped;
    char new_leader[64];
    int64_t stopped_at;
    struct ck_clock *clock;
    struct ck_leader_elector *le;
};

static void on_started(void *arg)
{
    struct candidate *c = arg;
    pthread_mutex_lock(&c->mu);
    c->started++;
    pthread_mutex_unlock(&c->mu);
}

static void on_stopped(void *arg)
{
    struct candidate *c = arg;
    pthread_mutex_lock(&c->mu);
    c->stopped++;
    c->stopped_at = ck_clock_now(c->clock);
    pthread_mutex_unlock(&c->mu);
}

static void on_new_leader(void *arg, const char *identity)
{
    struct candidate *c = arg;
    pthread_mutex_lock(&c->mu);
    snprintf(c->new_leader, sizeof(c->new_leader), "%s", identity);
    pthread_mutex_unlock(&c->mu);
}

static int count(struct candidate *c, const int *field)
{
    pthread_mutex_lock(&c->mu);
    int n = *field;
    pthread_mutex_unlock(&c->mu);
    return n;
}

struct world {
    struct ck_clock *clock;
    struct fake_lock lock;
    struct candidate a, b;
};

static int setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    w->clock = ck_fake_clock_new(1000 * CK_SEC);
    pthread_mutex_init(&w->lock.mu, NULL);
    pthread_mutex_init(&w->a.mu, NULL);
    pthread_mutex_init(&w->b.mu, NULL);
    w->a.clock = w->b.clock = w->clock;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    ck_leader_elector_free(w->a.le);
    ck_leader_elector_free(w->b.le);
    json_decref(w->lock.lease);
    ck_fake_clock_free(w->clock);
    free(w);
    return 0;
}

/* Starts candidate c as identity and waits until its first attempt is over. */
static void start(struct world *w, struct candidate *c, const char *identity, bool release,
                  int sleeping_after)
{
    struct ck_leader_election_config config = {
        .lock = {&fake_ops, &w->lock, "kube-system", "test"},
        .identity = identity,
        .clock = w->clock,
        .on_started_leading = on_started,
        .on_stopped_leading = on_stopped,
        .on_new_leader = on_new_leader,
        .arg = c,
        .release_on_cancel = release,
    };
    struct ck_err err = {0};
    assert_int_equal(ck_leader_elector_start(&config, &c->le, &err), 0);
    ck_fake_clock_wait_for_waiters(w->clock, sleeping_after);
}

/* Moves the clock by d and waits until n electors sleep again. */
static void step(struct world *w, int64_t d, int n)
{
    ck_fake_clock_step(w->clock, d);
    ck_fake_clock_wait_for_waiters(w->clock, n);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_config_checks(void **state)
{
    struct world *w = *state;
    struct ck_leader_election_config c = {
        .lock = {&fake_ops, &w->lock, "kube-system", "test"},
        .identity = "a",
        .on_started_leading = on_started,
        .on_stopped_leading = on_stopped,
    };
    struct ck_leader_elector *le = NULL;
    struct ck_err err = {0};
    c.lease_duration = 10 * CK_SEC;
    assert_int_equal(ck_leader_elector_start(&c, &le, &err), CK_EINVAL);
    assert_string_equal(err.msg, "leaseDuration must be greater than renewDeadline");
    c.lease_duration = 0;
    c.retry_period = 9 * CK_SEC;
    assert_int_equal(ck_leader_elector_start(&c, &le, &err), CK_EINVAL);
    assert_string_equal(err.msg, "renewDeadline must be greater than retryPeriod*JitterFactor");
    c.retry_period = 0;
    c.identity = "";
    assert_int_equal(ck_leader_elector_start(&c, &le, &err), CK_EINVAL);
    assert_string_equal(err.msg, "Lock identity is empty");
    assert_null(le);
}

static void test_lone_candidate_creates_and_renews(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", false, 1);
    assert_true(ck_leader_elector_is_leader(w->a.le));
    assert_int_equal(count(&w->a, &w->a.started), 1);
    assert_int_equal(w->lock.creates, 1);
    char buf[64];
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "a");
    assert_string_equal(w->a.new_leader, "a");
    json_t *duration = spec_field(&w->lock, "leaseDurationSeconds");
    assert_int_equal(json_integer_value(duration), 15);
    json_decref(duration);
    json_t *acquired = spec_field(&w->lock, "acquireTime");
    json_t *renewed = spec_field(&w->lock, "renewTime");
    assert_int_equal(strlen(json_string_value(acquired)), 27); /* a MicroTime */
    /* every retry period, one optimistic update: acquireTime and transitions stay */
    step(w, CK_LE_RETRY_PERIOD, 1);
    step(w, CK_LE_RETRY_PERIOD, 1);
    assert_int_equal(w->lock.updates, 2);
    assert_int_equal(w->lock.gets, 1); /* only the first attempt read it */
    json_t *acquired2 = spec_field(&w->lock, "acquireTime");
    assert_true(json_equal(acquired, acquired2));
    json_t *transitions = spec_field(&w->lock, "leaseTransitions");
    assert_int_equal(json_integer_value(transitions), 0);
    assert_true(ck_leader_elector_is_leader(w->a.le));
    /* freed without release: stops leading, the Lease still names it */
    w->a.le = ck_leader_elector_free(w->a.le);
    assert_int_equal(count(&w->a, &w->a.stopped), 1);
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "a");
    json_decref(acquired);
    json_decref(acquired2);
    json_decref(renewed);
    json_decref(transitions);
}

static void test_second_candidate_takes_over_an_expired_lease(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", false, 1);
    start(w, &w->b, "b", false, 2);
    assert_false(ck_leader_elector_is_leader(w->b.le));
    char buf[64];
    assert_string_equal(ck_leader_elector_leader(w->b.le, buf, sizeof(buf)), "a");
    assert_string_equal(w->b.new_leader, "a");
    /* a goes away without releasing: its record stops changing now */
    w->a.le = ck_leader_elector_free(w->a.le);
    /* b tries every retry period (plus jitter, at most 4.4 s): still fresh at 5 and 10 s */
    step(w, 5 * CK_SEC, 1);
    assert_false(ck_leader_elector_is_leader(w->b.le));
    step(w, 5 * CK_SEC, 1);
    assert_false(ck_leader_elector_is_leader(w->b.le));
    assert_int_equal(count(&w->b, &w->b.started), 0);
    /* 15 s after b saw the record change, it has expired: b takes it over */
    step(w, 5 * CK_SEC, 1);
    assert_true(ck_leader_elector_is_leader(w->b.le));
    assert_int_equal(count(&w->b, &w->b.started), 1);
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "b");
    assert_string_equal(w->b.new_leader, "b");
    json_t *transitions = spec_field(&w->lock, "leaseTransitions");
    assert_int_equal(json_integer_value(transitions), 1);
    json_decref(transitions);
}

static void test_released_lease_is_taken_at_once(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", true, 1);
    start(w, &w->b, "b", false, 2);
    w->a.le = ck_leader_elector_free(w->a.le);
    char buf[64];
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), ""); /* released */
    json_t *duration = spec_field(&w->lock, "leaseDurationSeconds");
    assert_int_equal(json_integer_value(duration), 1);
    json_decref(duration);
    /* b's next try, well within the 15 s a held lease would last */
    step(w, 5 * CK_SEC, 1);
    assert_true(ck_leader_elector_is_leader(w->b.le));
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "b");
}

static void test_leader_that_cannot_renew_stops_before_its_lease_expires(void **state)
{
    struct world *w = *state;
    int64_t t0 = ck_clock_now(w->clock);
    start(w, &w->a, "a", false, 1);
    assert_true(ck_leader_elector_is_leader(w->a.le));
    pthread_mutex_lock(&w->lock.mu);
    w->lock.fail_code = CK_EIO;
    pthread_mutex_unlock(&w->lock.mu);
    /* every try fails; after the renew deadline (10 s) it gives up */
    for (int i = 0; i < 20 && count(&w->a, &w->a.stopped) == 0; i++) {
        ck_fake_clock_step(w->clock, CK_LE_RETRY_PERIOD);
        /* the elector sleeps again, or has ended */
        while (ck_fake_clock_waiters(w->clock) < 1 && count(&w->a, &w->a.stopped) == 0)
            sched_yield();
    }
    assert_int_equal(count(&w->a, &w->a.stopped), 1);
    assert_false(ck_leader_elector_is_leader(w->a.le));
    pthread_mutex_lock(&w->a.mu);
    int64_t stopped_after = w->a.stopped_at - t0;
    pthread_mutex_unlock(&w->a.mu);
    /* it stopped acting before another candidate could take the lease (15 s) */
    assert_true(stopped_after >= CK_LE_RENEW_DEADLINE);
    assert_true(stopped_after < CK_LE_LEASE_DURATION);
}

/* Another writer takes the Lease: holder `who`, its own fresh record, a new resourceVersion. */
static void intrude(struct fake_lock *f, const char *who)
{
    pthread_mutex_lock(&f->mu);
    json_t *lease = json_deep_copy(f->lease);
    json_t *spec = json_object_get(lease, "spec");
    json_object_set_new(spec, "holderIdentity", json_string(who));
    json_object_set_new(spec, "renewTime", json_string("2030-01-01T00:00:00.000000Z"));
    json_decref(stored_copy(f, lease));
    json_decref(lease);
    pthread_mutex_unlock(&f->mu);
}

/* Steps the clock a retry period at a time until c stops leading (20 steps at most). */
static void step_until_stopped(struct world *w, struct candidate *c)
{
    for (int i = 0; i < 20 && count(c, &c->stopped) == 0; i++) {
        ck_fake_clock_step(w->clock, CK_LE_RETRY_PERIOD);
        while (ck_fake_clock_waiters(w->clock) < 1 && count(c, &c->stopped) == 0)
            sched_yield();
    }
}

static void test_leader_rides_out_an_outage_shorter_than_the_renew_deadline(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", false, 1);
    pthread_mutex_lock(&w->lock.mu);
    w->lock.fail_code = CK_EIO;
    int updates = w->lock.updates;
    pthread_mutex_unlock(&w->lock.mu);
    /* two renewal tries fail (4 s into a 10 s renew deadline) ... */
    step(w, CK_LE_RETRY_PERIOD, 1);
    step(w, CK_LE_RETRY_PERIOD, 1);
    assert_int_equal(count(&w->a, &w->a.stopped), 0);
    pthread_mutex_lock(&w->lock.mu);
    w->lock.fail_code = 0;
    pthread_mutex_unlock(&w->lock.mu);
    /* ... the next succeeds: still the leader, it never stopped, acquireTime kept */
    step(w, CK_LE_RETRY_PERIOD, 1);
    assert_true(ck_leader_elector_is_leader(w->a.le));
    assert_int_equal(count(&w->a, &w->a.stopped), 0);
    assert_int_equal(count(&w->a, &w->a.started), 1);
    pthread_mutex_lock(&w->lock.mu);
    assert_true(w->lock.updates > updates);
    pthread_mutex_unlock(&w->lock.mu);
    char buf[64];
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "a");
    json_t *transitions = spec_field(&w->lock, "leaseTransitions");
    assert_int_equal(json_integer_value(transitions), 0);
    json_decref(transitions);
}

static void test_leader_whose_lease_was_taken_stops_and_leaves_it(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", false, 1);
    int64_t taken_at = ck_clock_now(w->clock);
    intrude(&w->lock, "intruder");
    /* a's renewals conflict, then read a valid record of another holder: it stops
     * leading within its renew deadline and never writes over the intruder's record */
    step_until_stopped(w, &w->a);
    assert_int_equal(count(&w->a, &w->a.stopped), 1);
    assert_false(ck_leader_elector_is_leader(w->a.le));
    char buf[64];
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "intruder");
    assert_string_equal(w->a.new_leader, "intruder");
    pthread_mutex_lock(&w->a.mu);
    int64_t stopped_after = w->a.stopped_at - taken_at;
    pthread_mutex_unlock(&w->a.mu);
    assert_true(stopped_after <= CK_LE_RENEW_DEADLINE + CK_LE_RETRY_PERIOD);
}

static void test_release_on_shutdown_only_by_the_leader(void **state)
{
    struct world *w = *state;
    start(w, &w->a, "a", true, 1);
    start(w, &w->b, "b", true, 2);
    pthread_mutex_lock(&w->lock.mu);
    int updates = w->lock.updates;
    pthread_mutex_unlock(&w->lock.mu);
    /* b never led: stopping it writes nothing and the Lease still names a; like
     * client-go's Run, OnStoppedLeading is called all the same */
    w->b.le = ck_leader_elector_free(w->b.le);
    char buf[64];
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "a");
    pthread_mutex_lock(&w->lock.mu);
    assert_int_equal(w->lock.updates, updates);
    pthread_mutex_unlock(&w->lock.mu);
    assert_int_equal(count(&w->b, &w->b.started), 0);
    assert_int_equal(count(&w->b, &w->b.stopped), 1);
    assert_true(ck_leader_elector_is_leader(w->a.le));
    /* the leader releases: holder "" for one second, transitions kept, then stops */
    w->a.le = ck_leader_elector_free(w->a.le);
    assert_string_equal(holder(&w->lock, buf, sizeof(buf)), "");
    json_t *duration = spec_field(&w->lock, "leaseDurationSeconds");
    assert_int_equal(json_integer_value(duration), 1);
    json_decref(duration);
    json_t *transitions = spec_field(&w->lock, "leaseTransitions");
    assert_int_equal(json_integer_value(transitions), 0);
    json_decref(transitions);
    assert_int_equal(count(&w->a, &w->a.stopped), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lone_candidate_creates_and_renews, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_candidate_takes_over_an_expired_lease, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_released_lease_is_taken_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_leader_that_cannot_renew_stops_before_its_lease_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_leader_rides_out_an_outage_shorter_than_the_renew_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leader_whose_lease_was_taken_stops_and_leaves_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_on_shutdown_only_by_the_leader, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
