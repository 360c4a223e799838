/*
 * test_connections.c - connection exhaustion (connections.c): a header that
 * trickles in is cut at the header deadline, partial data or not; a new
 * connection beyond the per-address or total bound evicts the connection
 * that has waited longest for its header; when nothing can be evicted the
 * reserve still serves health checks and reads, and refuses writes with 429.
 * A body that trickles in is cut at twice the header deadline. Before,
 * libmicrohttpd's idle timeout was reset by every byte and a client could
 * hold every connection slot for ever.
 *
 * Waits are for events (the server closing a connection), each with an upper
 * bound so a regression fails instead of hanging.
 */
#include "cktest.h"

#include "hostile/hostile.h"

static const char partial[] = "GET /readyz HTTP/1.1\r\nHost: test\r\n";

static void test_trickled_header_is_cut_at_the_deadline(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, 0, 0, 1);
    assert_non_null(server);
    int fd = raw_connect(server);
    assert_true(fd >= 0);
    assert_true(raw_send(fd, partial, strlen(partial)));
    bool closed = false;
    /* a header field every 0.3 s: each resets libmicrohttpd's idle timer */
    for (int i = 0; i < 30 && !closed; i++) {
        if (!raw_send(fd, "X-Slow: 1\r\n", 11))
            closed = true;
        else
            closed = raw_closed_within(fd, 0.3);
    }
    assert_true(closed); /* within 9 s for a 1 s deadline (ticks are 1 s apart) */
    close(fd);

    /* a complete request on a fresh connection is served as before */
    struct response r;
    http_call(server, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    test_server_stop(server, dir);
}

static void test_trickled_body_is_cut_at_twice_the_deadline(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, 0, 0, 1);
    assert_non_null(server);
    int fd = raw_connect(server);
    assert_true(fd >= 0);
    static const char head[] = "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: test\r\n"
                               "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    assert_true(raw_send(fd, head, strlen(head)));
    bool closed = false;
    for (int i = 0; i < 30 && !closed; i++) { /* a byte every 0.3 s, never 1,000 */
        if (!raw_send(fd, " ", 1))
            closed = true;
        else
            closed = raw_closed_within(fd, 0.3);
    }
    assert_true(closed); /* within 9 s for a 2 s body deadline */
    close(fd);
    test_server_stop(server, dir);
}

/* Opens n connections that each sent part of a header; returns them in fds. */
static void open_partial(struct ck_apiserver *server, int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fds[i] = raw_connect(server);
        assert_true(fds[i] >= 0);
        assert_true(raw_send(fds[i], partial, strlen(partial)));
        struct timespec pause = {0, 20 * 1000 * 1000}; /* distinct arrival order */
        nanosleep(&pause, NULL);
    }
}

static void evicts_oldest_waiting(unsigned max_total, unsigned max_per_address)
{
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, max_total, max_per_address, 30);
    assert_non_null(server);
    int fds[4];
    open_partial(server, fds, 4);

    struct response r; /* a fifth client: served, at the expense of the oldest idler */
    http_call(server, "GET", "/api/v1/namespaces/default/pods", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    assert_true(raw_closed_within(fds[0], 5));
    assert_false(raw_closed_within(fds[3], 0.2)); /* the newest idler is kept */
    for (size_t i = 0; i < 4; i++)
        close(fds[i]);
    test_server_stop(server, dir);
}

static void test_per_address_bound_evicts_the_oldest_waiting(void **state)
{
    (void)state;
    evicts_oldest_waiting(0, 4);
}

static void test_total_bound_evicts_the_oldest_waiting(void **state)
{
    (void)state;
    evicts_oldest_waiting(4, 0);
}

/* One address's flood evicts that address's connections, never another's. */
static void test_addresses_are_bounded_apart(void **state)
{
    (void)state;
    int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in second = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.2", &second.sin_addr);
    bool can_bind = probe >= 0 && bind(probe, (struct sockaddr *)&second, sizeof(second)) == 0;
    if (probe >= 0)
        close(probe);
    if (!can_bind) {
        print_message("skipped: this host cannot use 127.0.0.2 as a source (%s)\n",
                      strerror(errno));
        skip();
    }
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, 0, 2, 30);
    assert_non_null(server);
    int quiet = raw_connect_from(server, "127.0.0.1"); /* the oldest of all */
    assert_true(quiet >= 0);
    assert_true(raw_send(quiet, partial, strlen(partial)));
    int flood[4];
    for (size_t i = 0; i < 4; i++) {
        flood[i] = raw_connect_from(server, "127.0.0.2");
        assert_true(flood[i] >= 0);
        assert_true(raw_send(flood[i], partial, strlen(partial)));
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    /* 127.0.0.2's two oldest went for its two newest; 127.0.0.1's connection stays */
    assert_true(raw_closed_within(flood[0], 5));
    assert_true(raw_closed_within(flood[1], 5));
    assert_false(raw_closed_within(flood[3], 0.2));
    assert_false(raw_closed_within(quiet, 0.2));
    for (size_t i = 0; i < 4; i++)
        close(flood[i]);
    close(quiet);
    test_server_stop(server, dir);
}

static const char pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                          "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}";

static void test_reserve_serves_reads_and_refuses_writes(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, 0, 2, 30);
    assert_non_null(server);
    /* two watches fill this address's bound; a request in progress is never evicted */
    int watches[2];
    static const char watch[] =
        "GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\nHost: test\r\n\r\n";
    for (size_t i = 0; i < 2; i++) {
        watches[i] = raw_connect(server);
        assert_true(watches[i] >= 0);
        assert_true(raw_send(watches[i], watch, strlen(watch)));
        bool closed = false;
        char *head = raw_read_until_close(watches[i], 0.5, &closed);
        assert_non_null(strstr(head, "HTTP/1.1 200"));
        free(head);
    }

    struct response r;
    http_call(server, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    http_call(server, "GET", "/api/v1/namespaces/default/pods", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    http_call(server, "POST", "/api/v1/namespaces/default/pods", pod, NULL, &r);
    assert_int_equal(r.status, 429);
    assert_non_null(strstr(r.headers, "Retry-After: 1"));
    json_t *status = json_loads(r.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(status, "reason")), "TooManyRequests");
    json_decref(status);
    response_release(&r);
    http_call(server, "GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1", NULL,
              NULL, &r);
    assert_int_equal(r.status, 429); /* a watch would hold the reserve */
    response_release(&r);

    /* the watches were not disturbed */
    assert_false(raw_closed_within(watches[0], 0.2));
    assert_false(raw_closed_within(watches[1], 0.2));
    close(watches[0]);
    close(watches[1]);
    test_server_stop(server, dir);
}

/* Beyond the reserve a new connection is closed at once; a freed reserve slot serves again. */
static void test_beyond_the_reserve_connections_are_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-hostile-conns-XXXXXX";
    struct ck_apiserver *server = hostile_server_start(dir, 100, 1, 30); /* reserve: 8 */
    assert_non_null(server);
    static const char watch[] =
        "GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\nHost: test\r\n\r\n";
    int busy = raw_connect(server);
    assert_true(busy >= 0);
    assert_true(raw_send(busy, watch, strlen(watch)));
    bool closed = false;
    char *head = raw_read_until_close(busy, 0.5, &closed);
    assert_non_null(strstr(head, "HTTP/1.1 200"));
    free(head);

    int reserve[8];
    open_partial(server, reserve, 8); /* each takes a reserve slot */
    int refused = raw_connect(server);
    assert_true(refused >= 0); /* the kernel accepts; the server then closes it */
    assert_true(raw_closed_within(refused, 5));
    close(refused);
    assert_false(raw_closed_within(reserve[7], 0.2));

    close(reserve[0]); /* frees a slot once the server sees it go */
    static const char readyz[] = "GET /readyz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    bool served = false;
    for (int i = 0; i < 50 && !served; i++) { /* a read gets through once the slot is free */
        int fd = raw_connect(server);
        assert_true(fd >= 0);
        raw_send(fd, readyz, strlen(readyz));
        char *answer = raw_read_until_close(fd, 5, &closed);
        close(fd);
        served = strncmp(answer, "HTTP/1.1 200", 12) == 0;
        if (!served)
            assert_string_equal(answer, ""); /* refused: no answer at all */
        free(answer);
        if (!served) {
            struct timespec pause = {0, 100 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    assert_true(served);
    for (size_t i = 1; i < 8; i++)
        close(reserve[i]);
    close(busy);
    test_server_stop(server, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trickled_header_is_cut_at_the_deadline),
        cmocka_unit_test(test_trickled_body_is_cut_at_twice_the_deadline),
        cmocka_unit_test(test_per_address_bound_evicts_the_oldest_waiting),
        cmocka_unit_test(test_total_bound_evicts_the_oldest_waiting),
        cmocka_unit_test(test_addresses_are_bounded_apart),
        cmocka_unit_test(test_reserve_serves_reads_and_refuses_writes),
        cmocka_unit_test(test_beyond_the_reserve_connections_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
