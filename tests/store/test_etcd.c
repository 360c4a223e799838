/*
 * test_etcd.c - what only the etcd backend has: a cluster. Run by
 * etcd-test-env.sh with three members: `test_store_etcd etcd://a,b,c`, with
 * CKUBE_ETCD_PIDS naming the members in endpoint order.
 *
 * With every member frozen (SIGSTOP) a read fails after bounded retries with
 * a clear error and a write reports an unknown outcome; once they thaw the
 * same store works again. Then the member the store and the watch talk to
 * is stopped mid-run: writes continue on the others, and the watch resumes
 * on another member from its last revision - every event exactly once, in
 * order.
 */
#include "cktest.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "storetest.h"

static const char *url;
static pid_t pids[3];
static int n_pids;

static void signal_all(int sig)
{
    for (int i = 0; i < n_pids; i++)
        assert_int_equal(kill(pids[i], sig), 0);
}

/* Stops a member and waits for it to exit (pidfd: no polling loop). */
static void stop_member(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    assert_true(fd >= 0);
    assert_int_equal(kill(pid, SIGTERM), 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 60000), 1);
    close(fd);
}

static void put_n(struct ck_store *s, const char *prefix, int from, int to)
{
    for (int i = from; i < to; i++) {
        char k[64];
        int kl = snprintf(k, sizeof(k), "%s%03d", prefix, i);
        struct ck_err err = {0};
        if (ck_store_put(s, k, (size_t)kl, k, (size_t)kl, NULL, &err) < 0)
            fail_msg("put %s: %s", k, err.msg);
    }
}

static void test_unreachable_then_failover(void **state)
{
    (void)state;
    struct ck_store_options opts = {
        .compaction_interval_ms = -1, .etcd_timeout_ms = 1000, .etcd_attempts = 10};
    struct ck_store *s;
    struct ck_err err = {0};
    if (ck_store_open(url, &opts, &s, &err) != 0)
        fail_msg("open %s: %s", url, err.msg); /* say why: a cluster that never answered */
    assert_string_equal(ck_store_backend(s), "etcd");
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    assert_int_equal(ck_store_watch(s, "/fo/", 4, true, 0, collect, &c, &w, &err), 0);
    put_n(s, "/fo/", 0, 20);

    /* Everything frozen: bounded retries, then a clear error. */
    struct ck_store_options quick = {
        .compaction_interval_ms = -1, .etcd_timeout_ms = 200, .etcd_attempts = 2};
    struct ck_store *q;
    /* the open is not the subject: under a loaded run 2 x 200 ms can pass before a member
     * answers, so it may try again; the frozen requests below get no second chance */
    int opened = -1;
    for (int i = 0; i < 10 && opened != 0; i++) {
        ck_err_release(&err);
        if ((opened = ck_store_open(url, &quick, &q, &err)) != 0)
            usleep(100 * 1000);
    }
    if (opened != 0)
        fail_msg("open %s with 200 ms timeouts: %s", url, err.msg);
    signal_all(SIGSTOP);
    struct ck_store_range req = {.key = "/fo/", .key_len = 4, .prefix = true};
    struct ck_store_range_result res;
    int r = ck_store_range(q, &req, &res, &err);
    int r2 = ck_store_put(q, "/elsewhere", 10, "x", 1, NULL, &err);
    signal_all(SIGCONT);
    assert_int_equal(r, CK_EIO);
    assert_int_equal(r2, CK_EIO);
    assert_non_null(strstr(err.msg, "may or may not have been applied"));
    ck_store_close(q);

    /* The member everything talks to (the first) goes away mid-run. */
    stop_member(pids[0]);
    put_n(s, "/fo/", 20, 40);
    assert_int_equal(ck_store_range(s, &req, &res, &err), 0);
    assert_int_equal(res.count, 40);
    ck_store_range_result_release(&res);

    assert_true(collector_wait(&c, &c.n, 40));
    ck_store_watch_cancel(w);
    assert_int_equal(c.n, 40);
    for (size_t i = 0; i < c.n; i++) {
        char k[64];
        int kl = snprintf(k, sizeof(k), "/fo/%03d", (int)i);
        assert_int_equal(c.events[i].type, CK_STORE_EVENT_PUT);
        assert_int_equal(c.events[i].kv->key_len, (size_t)kl);
        assert_memory_equal(c.events[i].kv->key, k, (size_t)kl);
        if (i > 0)
            assert_true(c.events[i].revision > c.events[i - 1].revision);
    }
    collector_release(&c);
    ck_store_close(s);

    /* Nothing answers at all: open fails with a clear error. */
    assert_int_equal(ck_store_open("etcd://127.0.0.1:1", &quick, &s, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "no endpoint answered"));
}

int main(int argc, char **argv)
{
    const char *env = getenv("CKUBE_ETCD_PIDS");
    if (argc < 2 || !env) {
        fprintf(stderr, "usage: etcd-test-env.sh 3 %s @ETCD@\n", argv[0]);
        return 2;
    }
    url = argv[1];
    char *copy = strdup(env), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t && n_pids < 3; t = strtok_r(NULL, " ", &save))
        pids[n_pids++] = (pid_t)atoi(t);
    free(copy);
    if (n_pids != 3) {
        fprintf(stderr, "need a three-member cluster\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unreachable_then_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
