/*
 * test_server.c - the running DNS server (lib/dns/server.c) on 127.0.0.1 with a free
 * port, forwarding to a stub upstream this test runs on loopback: cluster names over UDP
 * and TCP, forwarding over both with the client's ID, truncation of a large upstream
 * answer and the retry over TCP, the retry to the next upstream, SERVFAIL when none
 * answers, ExternalName targets resolved upstream, FORMERR, and the TCP client limit.
 * Every message is built and read with ldns.
 */
#include "cktest.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <ldns/ldns.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../lib/dns/internal.h"
#include "ckube/dns.h"

/* ---- the stub upstream ---------------------------------------------------- */

struct stub {
    int udp, tcp, blackhole; /* blackhole: a bound UDP socket nobody reads */
    uint16_t port, blackhole_port;
    pthread_t thread;
    atomic_bool stop;
    atomic_int udp_queries, tcp_queries;
};

static int bind_loopback(int type, uint16_t *ret_port)
{
    int fd = socket(AF_INET, type, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &l);
    *ret_port = ntohs(a.sin_port);
    if (type == SOCK_STREAM)
        assert_int_equal(listen(fd, 8), 0);
    return fd;
}

/* The stub's answer: example.com is 192.0.2.7; big.example has 60 addresses. */
static size_t stub_answer(const uint8_t *q, size_t len, bool tcp, uint8_t **ret)
{
    ldns_pkt *query = NULL;
    if (ldns_wire2pkt(&query, q, len) != LDNS_STATUS_OK)
        return 0;
    ldns_rr *question = ldns_rr_list_rr(ldns_pkt_question(query), 0);
    char *name = ldns_rdf2str(ldns_rr_owner(question));
    ldns_pkt *a = ldns_pkt_new();
    ldns_pkt_set_id(a, ldns_pkt_id(query));
    ldns_pkt_set_qr(a, true);
    ldns_pkt_set_ra(a, true);
    ldns_pkt_push_rr(a, LDNS_SECTION_QUESTION, ldns_rr_clone(question));
    if (ldns_pkt_edns(query))
        ldns_pkt_set_edns_udp_size(a, ldns_pkt_edns_udp_size(query));
    int n = strcmp(name, "example.com.") == 0 ? 1 : strcmp(name, "big.example.") == 0 ? 60 : 0;
    if (n == 0)
        ldns_pkt_set_rcode(a, LDNS_RCODE_NXDOMAIN);
    for (int i = 0; i < n && ldns_rr_get_type(question) == LDNS_RR_TYPE_A; i++) {
        char text[128];
        if (n == 1)
            snprintf(text, sizeof(text), "%s 60 IN A 192.0.2.7", name);
        else
            snprintf(text, sizeof(text), "%s 60 IN A 198.51.100.%d", name, i);
        ldns_rr *rr = NULL;
        ldns_rr_new_frm_str(&rr, text, 0, NULL, NULL);
        ldns_pkt_push_rr(a, LDNS_SECTION_ANSWER, rr);
    }
    size_t out_len = 0;
    int r = ck__dns_encode(a, ck__dns_max_size(query, tcp), ret, &out_len);
    LDNS_FREE(name);
    ldns_pkt_free(a);
    ldns_pkt_free(query);
    return r == 0 ? out_len : 0;
}

static bool read_n(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0)
            return false;
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static void *stub_main(void *arg)
{
    struct stub *s = arg;
    uint8_t buf[65536];
    while (!atomic_load(&s->stop)) {
        struct pollfd p[2] = {{.fd = s->udp, .events = POLLIN}, {.fd = s->tcp, .events = POLLIN}};
        if (poll(p, 2, 100) <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            struct sockaddr_storage from;
            socklen_t fl = sizeof(from);
            ssize_t n = recvfrom(s->udp, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
            uint8_t *out = NULL;
            size_t len = n > 0 ? stub_answer(buf, (size_t)n, false, &out) : 0;
            atomic_fetch_add(&s->udp_queries, 1);
            if (len)
                sendto(s->udp, out, len, 0, (struct sockaddr *)&from, fl);
            free(out);
        }
        if (p[1].revents & POLLIN) {
            int c = accept(s->tcp, NULL, NULL);
            uint16_t nlen;
            if (c >= 0 && read_n(c, (uint8_t *)&nlen, 2) && read_n(c, buf, ntohs(nlen))) {
                uint8_t *out = NULL;
                size_t len = stub_answer(buf, ntohs(nlen), true, &out);
                atomic_fetch_add(&s->tcp_queries, 1);
                uint16_t olen = htons((uint16_t)len);
                if (len && send(c, &olen, 2, 0) == 2)
                    (void)!send(c, out, len, 0);
                free(out);
            }
            if (c >= 0)
                close(c);
        }
    }
    return NULL;
}

/* ---- the client ----------------------------------------------------------- */

static uint8_t *query_wire(const char *name, ldns_rr_type type, uint16_t id, uint16_t edns,
                           size_t *ret_len)
{
    ldns_pkt *p = NULL;
    assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, type, LDNS_RR_CLASS_IN, LDNS_RD),
                     LDNS_STATUS_OK);
    ldns_pkt_set_id(p, id);
    if (edns)
        ldns_pkt_set_edns_udp_size(p, edns);
    uint8_t *w = NULL;
    assert_int_equal(ldns_pkt2wire(&w, p, ret_len), LDNS_STATUS_OK);
    ldns_pkt_free(p);
    return w;
}

static struct sockaddr_in server_addr(uint16_t port)
{
    return (struct sockaddr_in){
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* Sends wire over UDP, returns the parsed answer (NULL when none came in 8 s). */
static ldns_pkt *udp_exchange(uint16_t port, const uint8_t *wire, size_t len, size_t *ret_size)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = server_addr(port);
    assert_int_equal(sendto(fd, wire, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ldns_pkt *ans = NULL;
    if (poll(&p, 1, 8000) == 1) {
        uint8_t buf[65536];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        assert_true(n > 0);
        if (ret_size)
            *ret_size = (size_t)n;
        assert_int_equal(ldns_wire2pkt(&ans, buf, (size_t)n), LDNS_STATUS_OK);
    }
    close(fd);
    return ans;
}

static ldns_pkt *udp_ask(uint16_t port, const char *name, ldns_rr_type type, uint16_t id,
                         uint16_t edns, size_t *ret_size)
{
    size_t len;
    uint8_t *w = query_wire(name, type, id, edns, &len);
    ldns_pkt *a = udp_exchange(port, w, len, ret_size);
    free(w);
    assert_non_null(a);
    assert_int_equal(ldns_pkt_id(a), id);
    return a;
}

static int tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = server_addr(port);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static ldns_pkt *tcp_ask_on(int fd, const char *name, ldns_rr_type type, uint16_t id)
{
    size_t len;
    uint8_t *w = query_wire(name, type, id, 0, &len);
    uint16_t n = htons((uint16_t)len);
    assert_int_equal(send(fd, &n, 2, 0), 2);
    assert_int_equal(send(fd, w, len, 0), (ssize_t)len);
    free(w);
    uint8_t buf[65536];
    if (!read_n(fd, (uint8_t *)&n, 2) || !read_n(fd, buf, ntohs(n)))
        return NULL;
    ldns_pkt *a = NULL;
    assert_int_equal(ldns_wire2pkt(&a, buf, ntohs(n)), LDNS_STATUS_OK);
    assert_int_equal(ldns_pkt_id(a), id);
    return a;
}

/* ---- fixture -------------------------------------------------------------- */

struct fixture {
    struct stub stub;
    struct ck_indexer *services, *slices, *namespaces;
    struct ck_dns *dns;
    uint16_t port;
};

static void add(struct ck_indexer *ix, json_t *obj)
{
    assert_int_equal(ck_indexer_add(ix, obj, NULL), 0);
    json_decref(obj);
}

static struct ck_dns *start_server(struct fixture *f, const char *const *upstreams, size_t n,
                                   int max_tcp)
{
    struct ck_dns_config cfg = {
        .listen = "127.0.0.1:0",
        .upstreams = upstreams,
        .n_upstreams = n,
        .max_tcp_clients = max_tcp,
        .services = f->services,
        .slices = f->slices,
        .namespaces = f->namespaces,
    };
    struct ck_dns *d = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_dns_new(&cfg, &d, &err), 0);
    assert_int_equal(ck_dns_start(d, &err), 0);
    assert_true(ck_dns_port(d) > 0);
    return d;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->stub.tcp = bind_loopback(SOCK_STREAM, &f->stub.port);
    /* the UDP socket on the port number the kernel gave the TCP listener */
    f->stub.udp = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = server_addr(f->stub.port);
    assert_int_equal(bind(f->stub.udp, (struct sockaddr *)&a, sizeof(a)), 0);
    f->stub.blackhole = bind_loopback(SOCK_DGRAM, &f->stub.blackhole_port);
    assert_int_equal(pthread_create(&f->stub.thread, NULL, stub_main, &f->stub), 0);

    assert_int_equal(ck_indexer_new(&f->services, NULL), 0);
    assert_int_equal(ck_indexer_new(&f->slices, NULL), 0);
    assert_int_equal(ck_indexer_new(&f->namespaces, NULL), 0);
    add(f->namespaces, json_pack("{s:{s:s}}", "metadata", "name", "default"));
    add(f->services, json_pack("{s:{s:s, s:s}, s:{s:s, s:[s], s:[{s:s, s:i}]}}", "metadata",
                               "namespace", "default", "name", "web", "spec", "type", "ClusterIP",
                               "clusterIPs", "10.96.0.20", "ports", "name", "http", "port", 80));
    add(f->services,
        json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}", "metadata", "namespace", "default", "name", "ext",
                  "spec", "type", "ExternalName", "externalName", "example.com"));
    char up[64];
    snprintf(up, sizeof(up), "127.0.0.1:%u", (unsigned)f->stub.port);
    const char *ups[] = {up};
    f->dns = start_server(f, ups, 1, 4);
    f->port = ck_dns_port(f->dns);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_dns_free(f->dns);
    atomic_store(&f->stub.stop, true);
    pthread_join(f->stub.thread, NULL);
    close(f->stub.udp);
    close(f->stub.tcp);
    close(f->stub.blackhole);
    ck_indexer_free(f->services);
    ck_indexer_free(f->slices);
    ck_indexer_free(f->namespaces);
    free(f);
    return 0;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_cluster_names_over_udp_and_tcp(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = udp_ask(f->port, "web.default.svc.cluster.local.", LDNS_RR_TYPE_A, 101, 0, NULL);
    assert_true(ldns_pkt_aa(a));
    assert_int_equal(ldns_pkt_ancount(a), 1);
    ldns_pkt_free(a);
    int fd = tcp_connect(f->port);
    for (uint16_t id = 1; id <= 2; id++) { /* two queries on one connection */
        a = tcp_ask_on(fd, "web.default.svc.cluster.local.", LDNS_RR_TYPE_A, id);
        assert_non_null(a);
        assert_int_equal(ldns_pkt_ancount(a), 1);
        ldns_pkt_free(a);
    }
    close(fd);
    assert_int_equal(atomic_load(&f->stub.udp_queries) + atomic_load(&f->stub.tcp_queries), 0);
}

static void test_forwarding_keeps_the_clients_id_and_transport(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = udp_ask(f->port, "example.com.", LDNS_RR_TYPE_A, 0xbeef, 0, NULL);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOERROR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    char *ip = ldns_rdf2str(ldns_rr_rdf(ldns_rr_list_rr(ldns_pkt_answer(a), 0), 0));
    assert_string_equal(ip, "192.0.2.7");
    LDNS_FREE(ip);
    ldns_pkt_free(a);
    assert_int_equal(atomic_load(&f->stub.udp_queries), 1);
    int fd = tcp_connect(f->port);
    a = tcp_ask_on(fd, "example.com.", LDNS_RR_TYPE_A, 0xcafe);
    close(fd);
    assert_non_null(a);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    ldns_pkt_free(a);
    assert_int_equal(atomic_load(&f->stub.tcp_queries), 1);
    /* the upstream's NXDOMAIN is relayed as it is */
    a = udp_ask(f->port, "nothing.example.", LDNS_RR_TYPE_A, 7, 0, NULL);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NXDOMAIN);
    ldns_pkt_free(a);
}

static void test_large_upstream_answer_truncated_then_whole_over_tcp(void **state)
{
    struct fixture *f = *state;
    size_t size = 0;
    ldns_pkt *a = udp_ask(f->port, "big.example.", LDNS_RR_TYPE_A, 9, 0, &size);
    assert_true(ldns_pkt_tc(a));
    assert_true(size <= 512);
    assert_true(ldns_pkt_ancount(a) < 60);
    ldns_pkt_free(a);
    a = udp_ask(f->port, "big.example.", LDNS_RR_TYPE_A, 10, 4096, &size);
    assert_false(ldns_pkt_tc(a));
    assert_int_equal(ldns_pkt_ancount(a), 60);
    assert_true(ldns_pkt_edns(a));
    ldns_pkt_free(a);
    int fd = tcp_connect(f->port);
    a = tcp_ask_on(fd, "big.example.", LDNS_RR_TYPE_A, 11);
    close(fd);
    assert_false(ldns_pkt_tc(a));
    assert_int_equal(ldns_pkt_ancount(a), 60);
    ldns_pkt_free(a);
}

static void test_external_name_target_resolved_upstream(void **state)
{
    struct fixture *f = *state;
    ldns_pkt *a = udp_ask(f->port, "ext.default.svc.cluster.local.", LDNS_RR_TYPE_A, 12, 0, NULL);
    assert_true(ldns_pkt_aa(a));
    assert_int_equal(ldns_pkt_ancount(a), 2);
    assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_answer(a), 0)), LDNS_RR_TYPE_CNAME);
    assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_answer(a), 1)), LDNS_RR_TYPE_A);
    ldns_pkt_free(a);
}

static void test_next_upstream_then_servfail(void **state)
{
    struct fixture *f = *state;
    char dead[64], live[64];
    snprintf(dead, sizeof(dead), "127.0.0.1:%u", (unsigned)f->stub.blackhole_port);
    snprintf(live, sizeof(live), "127.0.0.1:%u", (unsigned)f->stub.port);
    const char *ups[] = {dead, live};
    struct ck_dns *d = start_server(f, ups, 2, 0);
    ldns_pkt *a = udp_ask(ck_dns_port(d), "example.com.", LDNS_RR_TYPE_A, 13, 0, NULL);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_NOERROR);
    assert_int_equal(ldns_pkt_ancount(a), 1);
    ldns_pkt_free(a);
    ck_dns_free(d);
    d = start_server(f, ups, 1, 0);
    a = udp_ask(ck_dns_port(d), "example.com.", LDNS_RR_TYPE_A, 14, 0, NULL);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_SERVFAIL);
    assert_int_equal(ldns_pkt_ancount(a), 0);
    ldns_pkt_free(a);
    ck_dns_free(d);
}

static void test_malformed_query_gets_formerr(void **state)
{
    struct fixture *f = *state;
    size_t len;
    uint8_t *w = query_wire("web.default.svc.cluster.local.", LDNS_RR_TYPE_A, 15, 0, &len);
    ldns_pkt *a = udp_exchange(f->port, w, 20, NULL); /* cut inside the question */
    free(w);
    assert_non_null(a);
    assert_int_equal(ldns_pkt_id(a), 15);
    assert_int_equal(ldns_pkt_get_rcode(a), LDNS_RCODE_FORMERR);
    ldns_pkt_free(a);
}

static void test_tcp_clients_beyond_the_limit_are_closed(void **state)
{
    struct fixture *f = *state;
    int fds[4];
    for (int i = 0; i < 4; i++) /* the limit: 4, each answered once */
        fds[i] = tcp_connect(f->port);
    for (int i = 0; i < 4; i++) {
        ldns_pkt *a = tcp_ask_on(fds[i], "web.default.svc.cluster.local.", LDNS_RR_TYPE_A,
                                 (uint16_t)(20 + i));
        assert_non_null(a);
        ldns_pkt_free(a);
    }
    int extra = tcp_connect(f->port);
    uint8_t b;
    struct pollfd p = {.fd = extra, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_int_equal(recv(extra, &b, 1, 0), 0); /* closed at once */
    close(extra);
    close(fds[0]);
    /* a slot frees when a client leaves: the next connection is served */
    ldns_pkt *a = NULL;
    for (int tries = 0; tries < 50 && !a; tries++) {
        int fd = tcp_connect(f->port);
        size_t len;
        uint8_t *w = query_wire("web.default.svc.cluster.local.", LDNS_RR_TYPE_A, 30, 0, &len);
        uint16_t n = htons((uint16_t)len);
        if (send(fd, &n, 2, MSG_NOSIGNAL) == 2 && send(fd, w, len, MSG_NOSIGNAL) == (ssize_t)len) {
            uint8_t buf[4096];
            if (read_n(fd, (uint8_t *)&n, 2) && read_n(fd, buf, ntohs(n)))
                ldns_wire2pkt(&a, buf, ntohs(n));
        }
        free(w);
        close(fd);
        if (!a)
            usleep(100 * 1000); /* the freed slot is reaped at the next accept */
    }
    assert_non_null(a);
    ldns_pkt_free(a);
    for (int i = 1; i < 4; i++)
        close(fds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_cluster_names_over_udp_and_tcp),
        T(test_forwarding_keeps_the_clients_id_and_transport),
        T(test_large_upstream_answer_truncated_then_whole_over_tcp),
        T(test_external_name_target_resolved_upstream),
        T(test_next_upstream_then_servfail),
        T(test_malformed_query_gets_formerr),
        T(test_tcp_clients_beyond_the_limit_are_closed),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
