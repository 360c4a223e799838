/*
 * server.c - the cluster DNS server: sockets, threads, forwarding, and the caches the
 * answers come from (CoreDNS's server, its forward plugin and the kubernetes plugin's
 * informers).
 *
 * Threads:
 * - the loop thread polls the UDP socket, the TCP listener and a wake-up eventfd. A UDP
 *   query whose answer needs no upstream is answered in line; the others (names outside
 *   the cluster domain, reverse names of no cluster IP, ExternalName targets) become jobs
 *   on a bounded queue. A new TCP connection gets a thread of its own when fewer than
 *   max_tcp_clients are open, else it is closed at once.
 * - forwarder threads take jobs from the queue; each asks the upstreams in resolv.conf
 *   order (2 s each, 5 s in all, as CoreDNS's forward: readTimeout 2 s, a 5 s deadline)
 *   and sends the answer, or SERVFAIL, from the shared UDP socket (sendto is atomic).
 * - a TCP connection's thread reads queries one after the other (idle timeout 10 s, a
 *   query must arrive whole within it), answers each, forwarding over TCP.
 * - with a client, the informers' threads (Services, EndpointSlices, Namespaces).
 *
 * The answers read the caches through the indexers' own locks; the server keeps no copy.
 * Bounded memory: the job queue (QUEUE_MAX jobs of at most 64 KiB each), one 64 KiB
 * buffer per TCP connection and forwarder, at most max_tcp_clients connections.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ckube/dns.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define QUEUE_MAX           256   /* UDP jobs waiting for a forwarder; more get SERVFAIL */
#define UPSTREAM_TIMEOUT_MS 2000  /* one upstream's answer (forward's readTimeout) */
#define FORWARD_DEADLINE_MS 5000  /* every upstream of one query (forward's defaultTimeout) */
#define TCP_IDLE_MS         10000 /* a TCP client's time to send its next query */
#define TCP_WRITE_MS        10000 /* and to take our answer */
#define MAX_MSG             65535

struct job {
    uint8_t *query;
    size_t len;
    struct sockaddr_storage from;
    socklen_t fromlen;
};

struct tcp_slot {
    struct ck_dns *d;
    pthread_t thread;
    int fd;
    bool used;        /* the loop thread alone reads and writes it */
    atomic_bool done; /* the connection thread ended: join it */
};

struct upstream {
    struct sockaddr_storage addr;
    socklen_t len;
};

struct ck_dns {
    char zone[256];
    char listen_ip[64]; /* "" when listening on every address */
    uint32_t ttl;
    struct sockaddr_storage listen;
    socklen_t listen_len;
    struct upstream upstreams[CK_DNS_MAX_UPSTREAMS];
    size_t n_upstreams;
    int max_tcp, n_forwarders;

    struct ck_rest *client;
    struct ck_informer_factory *shared;  /* the config's factory, or NULL */
    struct ck_informer_factory *factory; /* shared, or our own over client once started */
    struct ck_informer *infs[3];
    struct ck_indexer *services, *slices, *namespaces;
    atomic_llong modified; /* unix seconds of the last change: the SOA serial */
    atomic_bool synced;    /* every informer listed once (stays true) */

    int udp_fd, tcp_fd, wake_fd;
    uint16_t port;
    bool started, stopped, loop_started;
    atomic_bool stopping;
    pthread_t loop;
    pthread_t *forwarders;
    int n_running_forwarders;
    struct tcp_slot *slots;

    pthread_mutex_t lock; /* guards the queue */
    pthread_cond_t nonempty;
    struct job queue[QUEUE_MAX];
    size_t q_head, q_len;
};

/* ---- configuration -------------------------------------------------------- */

/* Parses "ADDR:PORT", "[V6]:PORT" or, with default_port >= 0, a bare "ADDR". */
static bool parse_addr(const char *s, int default_port, struct sockaddr_storage *ret,
                       socklen_t *ret_len, char *ip_text, size_t ip_size)
{
    char host[64];
    const char *port = NULL;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || (size_t)(end - s - 1) >= sizeof(host))
            return false;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        if (end[1] == ':')
            port = end + 2;
        else if (end[1] != '\0')
            return false;
    } else {
        const char *colon = strrchr(s, ':');
        bool v6 = colon && strchr(s, ':') != colon; /* a bare IPv6 address */
        size_t n = colon && !v6 ? (size_t)(colon - s) : strlen(s);
        if (n >= sizeof(host))
            return false;
        memcpy(host, s, n);
        host[n] = '\0';
        if (colon && !v6)
            port = colon + 1;
    }
    long p = default_port;
    if (port) {
        char *end;
        p = strtol(port, &end, 10);
        if (!*port || *end || p < 0 || p > 65535)
            return false;
    }
    if (p < 0)
        return false;
    memset(ret, 0, sizeof(*ret));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ret;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)p);
        *ret_len = sizeof(*in4);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)p);
        *ret_len = sizeof(*in6);
    } else {
        return false;
    }
    if (ip_text)
        snprintf(ip_text, ip_size, "%s", host);
    return true;
}

/* The "nameserver ADDR" lines of a resolv.conf (at most CK_DNS_MAX_UPSTREAMS, as glibc). */
static int read_resolv_conf(struct ck_dns *d, const char *path, struct ck_err *reterr)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return ck_err_set(reterr, CK_ENOENT, "cannot read %s: %s", path, strerror(errno));
    char line[512];
    while (fgets(line, sizeof(line), f) && d->n_upstreams < CK_DNS_MAX_UPSTREAMS) {
        char key[32], value[128];
        if (sscanf(line, "%31s %127s", key, value) != 2 || strcmp(key, "nameserver") != 0)
            continue;
        char *pct = strchr(value, '%'); /* a scope id: not supported, ignored */
        if (pct)
            *pct = '\0';
        struct upstream *u = &d->upstreams[d->n_upstreams];
        if (parse_addr(value, 53, &u->addr, &u->len, NULL, 0))
            d->n_upstreams++;
    }
    fclose(f);
    if (d->n_upstreams == 0)
        return ck_err_set(reterr, CK_EINVAL, "%s names no nameserver", path);
    return 0;
}

int ck_dns_new(const struct ck_dns_config *config, struct ck_dns **ret_dns, struct ck_err *reterr)
{
    const char *listen = config->listen ? config->listen : CK_DNS_DEFAULT_LISTEN;
    const char *domain = config->cluster_domain ? config->cluster_domain : CK_DNS_DEFAULT_DOMAIN;
    struct ck_dns *d = calloc(1, sizeof(*d));
    if (!d)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    d->udp_fd = d->tcp_fd = d->wake_fd = -1;
    d->ttl = config->ttl ? config->ttl : CK_DNS_DEFAULT_TTL;
    d->max_tcp = config->max_tcp_clients > 0 ? config->max_tcp_clients : CK_DNS_DEFAULT_TCP_CLIENTS;
    d->n_forwarders = config->forwarders > 0 ? config->forwarders : CK_DNS_DEFAULT_FORWARDERS;
    d->client = config->client;
    d->shared = config->factory;
    d->services = config->services;
    d->slices = config->slices;
    d->namespaces = config->namespaces;
    atomic_init(&d->modified, (long long)time(NULL));
    atomic_init(&d->stopping, false);
    atomic_init(&d->synced, false);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->nonempty, NULL);
    int r;
    /* the domain: labels of letters, digits and hyphens; stored lower case with a final dot */
    size_t dl = strlen(domain);
    bool ok = dl > 0 && dl < sizeof(d->zone) - 2 && domain[0] != '.';
    for (size_t i = 0; ok && i < dl; i++) {
        char ch = domain[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '-' || (ch == '.' && (i + 1 == dl || domain[i + 1] != '.'));
    }
    if (!ok) {
        r = ck_err_set(reterr, CK_EINVAL, "invalid cluster domain \"%s\"", domain);
        goto fail;
    }
    for (size_t i = 0; i < dl; i++)
        d->zone[i] = (char)(domain[i] >= 'A' && domain[i] <= 'Z' ? domain[i] + 32 : domain[i]);
    if (d->zone[dl - 1] != '.')
        d->zone[dl] = '.';
    if (!parse_addr(listen, -1, &d->listen, &d->listen_len, d->listen_ip, sizeof(d->listen_ip))) {
        r = ck_err_set(reterr, CK_EINVAL, "invalid listen address \"%s\": want ADDR:PORT", listen);
        goto fail;
    }
    if (strcmp(d->listen_ip, "0.0.0.0") == 0 || strcmp(d->listen_ip, "::") == 0)
        d->listen_ip[0] = '\0';
    for (size_t i = 0; i < config->n_upstreams && d->n_upstreams < CK_DNS_MAX_UPSTREAMS; i++) {
        struct upstream *u = &d->upstreams[d->n_upstreams++];
        if (!parse_addr(config->upstreams[i], 53, &u->addr, &u->len, NULL, 0)) {
            r = ck_err_set(reterr, CK_EINVAL, "invalid upstream \"%s\"", config->upstreams[i]);
            goto fail;
        }
    }
    if (d->n_upstreams == 0) {
        r = read_resolv_conf(
            d, config->resolv_conf ? config->resolv_conf : CK_DNS_DEFAULT_RESOLV_CONF, reterr);
        if (r < 0)
            goto fail;
    }
    r = ck__dns_add_indices(d->services, d->slices, reterr);
    if (r < 0)
        goto fail;
    *ret_dns = d;
    return 0;
fail:
    ck_dns_free(d);
    return r;
}

/* ---- the caches ----------------------------------------------------------- */

static void touched(struct ck_dns *d)
{
    atomic_store(&d->modified, (long long)time(NULL));
}

static void on_add(const json_t *obj, bool initial, void *arg)
{
    (void)obj;
    (void)initial;
    touched(arg);
}

static void on_update(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    (void)new_obj;
    touched(arg);
}

static void on_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)obj;
    (void)t;
    touched(arg);
}

static const struct ck_resource res_services = {"", "v1", "services", true};
static const struct ck_resource res_slices = {"discovery.k8s.io", "v1", "endpointslices", true};
static const struct ck_resource res_namespaces = {"", "v1", "namespaces", false};

static const struct ck_event_handler *handler_of(struct ck_dns *d, struct ck_event_handler *h)
{
    *h = (struct ck_event_handler){
        .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .arg = d};
    return h;
}

static int start_informers(struct ck_dns *d, struct ck_err *reterr)
{
    int r = 0;
    if (d->shared) { /* running or not: what it lacks starts below */
        d->factory = d->shared;
    } else {
        r = ck_informer_factory_new(d->client, NULL, 0, NULL, &d->factory, reterr);
        if (r < 0)
            return r;
        ck_informer_factory_set_transform(d->factory, ck_transform_strip_managed_fields, NULL);
    }
    const struct ck_resource *res[3] = {&res_services, &res_slices, &res_namespaces};
    struct ck_event_handler h;
    handler_of(d, &h);
    for (int i = 0; i < 3; i++) {
        d->infs[i] = ck_informer_factory_for(d->factory, res[i]);
        if (!d->infs[i])
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        r = ck_informer_add_handler(d->infs[i], &h, 0, reterr);
        if (r < 0)
            return r;
    }
    d->services = ck_informer_indexer(d->infs[0]);
    d->slices = ck_informer_indexer(d->infs[1]);
    d->namespaces = ck_informer_indexer(d->infs[2]);
    r = ck__dns_add_indices(d->services, d->slices, reterr);
    if (r == 0)
        r = ck_informer_factory_start(d->factory, reterr);
    return r;
}

bool ck_dns_has_synced(struct ck_dns *d)
{
    if (atomic_load_explicit(&d->synced, memory_order_acquire))
        return true;
    if ((d->client || d->shared) && !d->factory) /* not started */
        return false;
    for (int i = 0; i < 3; i++)
        if (d->infs[i] && !ck_informer_has_synced(d->infs[i]))
            return false;
    atomic_store_explicit(&d->synced, true, memory_order_release);
    return true;
}

/* ---- upstreams ------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or deadline (monotonic ms); false on timeout. */
static bool wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

static bool read_full(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
    size_t got = 0;
    while (got < len) {
        if (!wait_fd(fd, POLLIN, deadline))
            return false;
        ssize_t n = recv(fd, buf + got, len - got, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return false;
        if (n > 0)
            got += (size_t)n;
    }
    return true;
}

static bool write_full(int fd, const uint8_t *buf, size_t len, int64_t deadline)
{
    size_t done = 0;
    while (done < len) {
        if (!wait_fd(fd, POLLOUT, deadline))
            return false;
        ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return false;
        if (n > 0)
            done += (size_t)n;
    }
    return true;
}

/* One DNS message over TCP: the two-byte length of RFC 1035 4.2.2, then the message. */
static bool tcp_send_msg(int fd, const uint8_t *msg, size_t len, int64_t deadline)
{
    uint16_t n = htons((uint16_t)len);
    return len <= MAX_MSG && write_full(fd, (const uint8_t *)&n, 2, deadline) &&
           write_full(fd, msg, len, deadline);
}

static bool tcp_recv_msg(int fd, uint8_t *buf, size_t *ret_len, int64_t deadline)
{
    uint16_t n;
    if (!read_full(fd, (uint8_t *)&n, 2, deadline))
        return false;
    *ret_len = ntohs(n);
    return read_full(fd, buf, *ret_len, deadline);
}

/* Whether answer (alen bytes) answers query: same ID and the same question (state.Match). */
static bool matches(const ldns_pkt *q, const uint8_t *answer, size_t alen)
{
    ldns_pkt *a = NULL;
    if (ldns_wire2pkt(&a, answer, alen) != LDNS_STATUS_OK || !a)
        return false;
    bool ok = ldns_pkt_qr(a) && ldns_pkt_id(a) == ldns_pkt_id(q) &&
              ldns_pkt_qdcount(a) == ldns_pkt_qdcount(q);
    for (size_t i = 0; ok && i < ldns_pkt_qdcount(q); i++) {
        ldns_rr *x = ldns_rr_list_rr(ldns_pkt_question(q), i);
        ldns_rr *y = ldns_rr_list_rr(ldns_pkt_question(a), i);
        ok = x && y && ldns_rr_get_type(x) == ldns_rr_get_type(y) &&
             ldns_rr_get_class(x) == ldns_rr_get_class(y) &&
             ldns_dname_compare(ldns_rr_owner(x), ldns_rr_owner(y)) == 0;
    }
    ldns_pkt_free(a);
    return ok;
}

/*
 * Asks the upstreams query over UDP or TCP, in order, until one answers it. Returns the
 * answer's length in buf, or 0 when none answered before the deadline.
 */
static size_t ask_upstreams(struct ck_dns *d, const uint8_t *query, size_t len, bool tcp,
                            uint8_t *buf)
{
    ldns_pkt *q = NULL;
    if (ldns_wire2pkt(&q, query, len) != LDNS_STATUS_OK || !q)
        return 0;
    size_t got = 0;
    int64_t deadline = now_ms() + FORWARD_DEADLINE_MS;
    for (size_t i = 0; i < d->n_upstreams && got == 0 && !atomic_load(&d->stopping); i++) {
        const struct upstream *u = &d->upstreams[i];
        int64_t until = now_ms() + UPSTREAM_TIMEOUT_MS;
        if (until > deadline)
            until = deadline;
        int fd = socket(u->addr.ss_family,
                        (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        if (connect(fd, (const struct sockaddr *)&u->addr, u->len) < 0 &&
            (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, until))) {
            close(fd);
            continue;
        }
        if (tcp) {
            size_t n = 0;
            if (tcp_send_msg(fd, query, len, until) && tcp_recv_msg(fd, buf, &n, until) &&
                matches(q, buf, n))
                got = n;
        } else if (send(fd, query, len, 0) == (ssize_t)len) {
            /* answers that do not match (late, spoofed) are skipped until the timeout */
            while (got == 0 && wait_fd(fd, POLLIN, until)) {
                ssize_t n = recv(fd, buf, MAX_MSG, 0);
                if (n > 0 && matches(q, buf, (size_t)n))
                    got = (size_t)n;
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                    break;
            }
        }
        close(fd);
    }
    ldns_pkt_free(q);
    return got;
}

/* view->lookup: name/type asked of the upstreams (UDP, then TCP if truncated). */
static ldns_pkt *lookup(void *arg, const ldns_rdf *name, ldns_rr_type type)
{
    struct ck_dns *d = arg;
    ldns_rdf *n = ldns_rdf_clone(name);
    ldns_pkt *q = n ? ldns_pkt_query_new(n, type, LDNS_RR_CLASS_IN, LDNS_RD) : NULL;
    if (!q) {
        ldns_rdf_deep_free(n);
        return NULL;
    }
    ldns_pkt_set_id(q, ldns_get_random());
    uint8_t *wire = NULL, *buf = malloc(MAX_MSG);
    size_t len = 0;
    ldns_pkt *answer = NULL;
    if (buf && ldns_pkt2wire(&wire, q, &len) == LDNS_STATUS_OK) {
        size_t got = ask_upstreams(d, wire, len, false, buf);
        if (got > 0 && ldns_wire2pkt(&answer, buf, got) == LDNS_STATUS_OK && ldns_pkt_tc(answer)) {
            ldns_pkt_free(answer);
            answer = NULL;
            got = ask_upstreams(d, wire, len, true, buf);
            if (got == 0 || ldns_wire2pkt(&answer, buf, got) != LDNS_STATUS_OK)
                answer = NULL;
        } else if (got == 0) {
            answer = NULL;
        }
    }
    free(wire);
    free(buf);
    ldns_pkt_free(q);
    return answer;
}

/* ---- answering ------------------------------------------------------------ */

static void make_view(struct ck_dns *d, bool may_block, struct ck__dns_view *v)
{
    *v = (struct ck__dns_view){
        .services = d->services,
        .slices = d->slices,
        .namespaces = d->namespaces,
        .zone = d->zone,
        .ttl = d->ttl,
        .serial = (uint32_t)atomic_load(&d->modified),
        .synced = ck_dns_has_synced(d),
        .shuffle = true,
        .lookup = may_block ? lookup : NULL,
        .lookup_arg = d,
    };
    if (d->listen_ip[0])
        v->local_ips[v->n_local_ips++] = d->listen_ip;
}

/*
 * The answer to query, asking the upstreams when needed (blocks up to 5 s). Returns a
 * malloc'd answer in *ret (length *ret_len), or false: send nothing.
 */
static bool answer_blocking(struct ck_dns *d, const uint8_t *query, size_t len, bool tcp,
                            uint8_t *buf, uint8_t **ret, size_t *ret_len)
{
    struct ck__dns_view v;
    make_view(d, true, &v);
    int verdict = ck__dns_handle(&v, query, len, tcp, ret, ret_len);
    if (verdict == CK__DNS_ANSWER)
        return true;
    if (verdict != CK__DNS_FORWARD)
        return false;
    size_t got = ask_upstreams(d, query, len, tcp, buf);
    if (got == 0)
        return ck__dns_error_reply(query, len, LDNS_RCODE_SERVFAIL, tcp, ret, ret_len) ==
               CK__DNS_ANSWER;
    /* relay the upstream's answer (it carries the client's ID), cut to the client's size */
    ldns_pkt *q = NULL, *a = NULL;
    bool ok = false;
    if (ldns_wire2pkt(&q, query, len) == LDNS_STATUS_OK) {
        size_t max = ck__dns_max_size(q, tcp);
        if (got <= max) {
            *ret = malloc(got);
            if (*ret) {
                memcpy(*ret, buf, got);
                *ret_len = got;
                ok = true;
            }
        } else if (ldns_wire2pkt(&a, buf, got) == LDNS_STATUS_OK) {
            ok = ck__dns_encode(a, max, ret, ret_len) == 0;
        }
    }
    ldns_pkt_free(q);
    ldns_pkt_free(a);
    return ok;
}

static void *forwarder_main(void *arg)
{
    struct ck_dns *d = arg;
    uint8_t *buf = malloc(MAX_MSG);
    for (;;) {
        pthread_mutex_lock(&d->lock);
        while (d->q_len == 0 && !atomic_load(&d->stopping))
            pthread_cond_wait(&d->nonempty, &d->lock);
        if (d->q_len == 0) {
            pthread_mutex_unlock(&d->lock);
            break;
        }
        struct job job = d->queue[d->q_head];
        d->q_head = (d->q_head + 1) % QUEUE_MAX;
        d->q_len--;
        pthread_mutex_unlock(&d->lock);
        uint8_t *out = NULL;
        size_t out_len = 0;
        if (buf && !atomic_load(&d->stopping) &&
            answer_blocking(d, job.query, job.len, false, buf, &out, &out_len))
            sendto(d->udp_fd, out, out_len, 0, (struct sockaddr *)&job.from, job.fromlen);
        free(out);
        free(job.query);
    }
    free(buf);
    return NULL;
}

static void *tcp_main(void *arg)
{
    struct tcp_slot *slot = arg;
    struct ck_dns *d = slot->d;
    uint8_t *in = malloc(MAX_MSG), *buf = malloc(MAX_MSG);
    while (in && buf && !atomic_load(&d->stopping)) {
        size_t len = 0;
        if (!tcp_recv_msg(slot->fd, in, &len, now_ms() + TCP_IDLE_MS))
            break;
        uint8_t *out = NULL;
        size_t out_len = 0;
        bool send_it = answer_blocking(d, in, len, true, buf, &out, &out_len);
        bool ok = !send_it || tcp_send_msg(slot->fd, out, out_len, now_ms() + TCP_WRITE_MS);
        free(out);
        if (!ok)
            break;
    }
    free(in);
    free(buf);
    shutdown(slot->fd, SHUT_RDWR);
    atomic_store(&slot->done, true);
    return NULL;
}

/* Joins the connection threads that ended (loop thread). Returns how many are open. */
static int reap_tcp(struct ck_dns *d)
{
    int open = 0;
    for (int i = 0; i < d->max_tcp; i++) {
        struct tcp_slot *s = &d->slots[i];
        if (s->used && atomic_load(&s->done)) {
            pthread_join(s->thread, NULL);
            close(s->fd);
            s->used = false;
        }
        open += s->used;
    }
    return open;
}

static void accept_tcp(struct ck_dns *d)
{
    int fd = accept4(d->tcp_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    reap_tcp(d);
    for (int i = 0; i < d->max_tcp; i++) {
        struct tcp_slot *s = &d->slots[i];
        if (s->used)
            continue;
        *s = (struct tcp_slot){.d = d, .fd = fd, .used = true};
        atomic_init(&s->done, false);
        if (pthread_create(&s->thread, NULL, tcp_main, s) != 0) {
            s->used = false;
            break;
        }
        return;
    }
    close(fd); /* at the limit: the client retries later */
}

/* Reads and handles one UDP query; false when none was waiting. */
static bool read_udp(struct ck_dns *d, uint8_t *buf)
{
    struct job job = {.fromlen = sizeof(job.from)};
    ssize_t n = recvfrom(d->udp_fd, buf, MAX_MSG, 0, (struct sockaddr *)&job.from, &job.fromlen);
    if (n < 0)
        return errno == EINTR;
    if (n == 0)
        return true;
    struct ck__dns_view v;
    make_view(d, false, &v);
    uint8_t *out = NULL;
    size_t out_len = 0;
    int verdict = ck__dns_handle(&v, buf, (size_t)n, false, &out, &out_len);
    if (verdict == CK__DNS_ANSWER) {
        sendto(d->udp_fd, out, out_len, 0, (struct sockaddr *)&job.from, job.fromlen);
        free(out);
        return true;
    }
    if (verdict != CK__DNS_FORWARD && verdict != CK__DNS_DEFER)
        return true;
    job.query = malloc((size_t)n);
    if (!job.query)
        return true;
    memcpy(job.query, buf, (size_t)n);
    job.len = (size_t)n;
    pthread_mutex_lock(&d->lock);
    bool queued = d->q_len < QUEUE_MAX;
    if (queued) {
        d->queue[(d->q_head + d->q_len) % QUEUE_MAX] = job;
        d->q_len++;
        pthread_cond_signal(&d->nonempty);
    }
    pthread_mutex_unlock(&d->lock);
    if (queued)
        return true;
    /* every forwarder is busy and the queue is full: SERVFAIL rather than silence */
    if (ck__dns_error_reply(job.query, job.len, LDNS_RCODE_SERVFAIL, false, &out, &out_len) ==
        CK__DNS_ANSWER) {
        sendto(d->udp_fd, out, out_len, 0, (struct sockaddr *)&job.from, job.fromlen);
        free(out);
    }
    free(job.query);
    return true;
}

static void *loop_main(void *arg)
{
    struct ck_dns *d = arg;
    uint8_t *buf = malloc(MAX_MSG);
    while (buf && !atomic_load(&d->stopping)) {
        struct pollfd p[3] = {{.fd = d->udp_fd, .events = POLLIN},
                              {.fd = d->tcp_fd, .events = POLLIN},
                              {.fd = d->wake_fd, .events = POLLIN}};
        int n = poll(p, 3, 1000);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0) {
            reap_tcp(d);
            continue;
        }
        /* drain a burst (the socket does not block), then look at TCP again */
        for (int i = 0; (p[0].revents & POLLIN) && i < 64 && read_udp(d, buf); i++)
            ;
        if (p[1].revents & POLLIN)
            accept_tcp(d);
    }
    free(buf);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------ */

static uint16_t get_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                          : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static int bind_socket(struct ck_dns *d, int type, struct ck_err *reterr)
{
    int fd = socket(d->listen.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return ck_err_set(reterr, CK_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&d->listen, d->listen_len) < 0 ||
        (type == SOCK_STREAM && listen(fd, 128) < 0)) {
        int e = errno;
        close(fd);
        return ck_err_set(reterr, e == EADDRINUSE ? CK_EADDRINUSE : CK_EIO,
                          "cannot listen on %s port %u (%s): %s",
                          d->listen_ip[0] ? d->listen_ip : "*", (unsigned)d->port,
                          type == SOCK_STREAM ? "tcp" : "udp", strerror(e));
    }
    return fd;
}

int ck_dns_start(struct ck_dns *d, struct ck_err *reterr)
{
    if (d->started)
        return ck_err_set(reterr, CK_EINVAL, "the DNS server was started already");
    d->started = true;
    d->port = get_port(&d->listen);
    /*
     * Port 0: the kernel picks a port for the TCP listener, and the UDP socket takes the
     * same number; when that one is taken for UDP, try again with another.
     */
    int r = 0;
    for (int tries = 0; tries < 16; tries++) {
        if (tries > 0)
            set_port(&d->listen, 0);
        r = bind_socket(d, SOCK_STREAM, reterr);
        if (r < 0)
            goto fail;
        d->tcp_fd = r;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        getsockname(d->tcp_fd, (struct sockaddr *)&ss, &sl);
        set_port(&d->listen, get_port(&ss));
        r = bind_socket(d, SOCK_DGRAM, reterr);
        if (r >= 0 || d->port != 0 || r != CK_EADDRINUSE)
            break;
        close(d->tcp_fd);
        d->tcp_fd = -1;
    }
    if (r < 0)
        goto fail;
    d->udp_fd = r;
    d->port = get_port(&d->listen);
    d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    d->slots = calloc((size_t)d->max_tcp, sizeof(*d->slots));
    d->forwarders = calloc((size_t)d->n_forwarders, sizeof(*d->forwarders));
    if (d->wake_fd < 0 || !d->slots || !d->forwarders) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto fail;
    }
    if ((d->client || d->shared) && (r = start_informers(d, reterr)) < 0)
        goto fail;
    for (int i = 0; i < d->n_forwarders; i++) {
        if (pthread_create(&d->forwarders[i], NULL, forwarder_main, d) != 0) {
            r = ck_err_set(reterr, CK_EIO, "cannot start a thread");
            goto fail;
        }
        d->n_running_forwarders++;
    }
    if (pthread_create(&d->loop, NULL, loop_main, d) != 0) {
        r = ck_err_set(reterr, CK_EIO, "cannot start a thread");
        goto fail;
    }
    d->loop_started = true;
    return 0;
fail:
    ck_dns_stop(d);
    return r;
}

uint16_t ck_dns_port(const struct ck_dns *d)
{
    return d->udp_fd >= 0 ? d->port : 0;
}

void ck_dns_stop(struct ck_dns *d)
{
    if (!d->started || d->stopped)
        return;
    d->stopped = true;
    atomic_store(&d->stopping, true);
    if (d->wake_fd >= 0) {
        uint64_t one = 1;
        (void)!write(d->wake_fd, &one, sizeof(one));
    }
    if (d->loop_started)
        pthread_join(d->loop, NULL);
    pthread_mutex_lock(&d->lock);
    pthread_cond_broadcast(&d->nonempty);
    pthread_mutex_unlock(&d->lock);
    for (int i = 0; i < d->n_running_forwarders; i++)
        pthread_join(d->forwarders[i], NULL);
    for (int i = 0; d->slots && i < d->max_tcp; i++) {
        if (!d->slots[i].used)
            continue;
        shutdown(d->slots[i].fd, SHUT_RDWR); /* wakes its thread */
        pthread_join(d->slots[i].thread, NULL);
        close(d->slots[i].fd);
        d->slots[i].used = false;
    }
    for (size_t i = 0; i < d->q_len; i++)
        free(d->queue[(d->q_head + i) % QUEUE_MAX].query);
    d->q_len = 0;
    if (d->factory && !d->shared)
        ck_informer_factory_stop(d->factory);
    struct ck_event_handler h;
    for (int i = 0; d->shared && i < 3; i++) /* the others' informers run on */
        if (d->infs[i])
            ck_informer_remove_handler(d->infs[i], handler_of(d, &h));
    if (d->udp_fd >= 0)
        close(d->udp_fd);
    if (d->tcp_fd >= 0)
        close(d->tcp_fd);
    if (d->wake_fd >= 0)
        close(d->wake_fd);
    d->udp_fd = d->tcp_fd = d->wake_fd = -1;
}

struct ck_dns *ck_dns_free(struct ck_dns *d)
{
    if (!d)
        return NULL;
    ck_dns_stop(d);
    if (!d->shared)
        ck_informer_factory_free(d->factory);
    free(d->slots);
    free(d->forwarders);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->nonempty);
    free(d);
    return NULL;
}
