/*
 * connections.c - how many connections the API server keeps, and for how long
 * one may take to send its request header.
 *
 * libmicrohttpd's own connection timeout is an idle timeout: any byte resets
 * it, so a client that sends one header byte every few seconds keeps its
 * connection for ever, and ten thousand such clients keep everybody else out.
 * This file tracks every connection from libmicrohttpd's connection
 * notifications and enforces three rules on top of it:
 *
 * - Header deadline: a connection must deliver a complete request header
 *   within `header_timeout` seconds of being accepted (TLS handshake
 *   included) or of its previous answer; partial data does not extend it.
 *   kube-apiserver sets Go's ReadHeaderTimeout (32 s) for the same reason.
 *   The body then has twice as long from the end of the header (64 s by
 *   default; kube-apiserver's handlers time out after 60 s), so a body
 *   trickled in byte by byte cannot hold a connection either.
 * - Bounds: at most `max_per_address` connections per client address and
 *   `max_total` in all. A new connection beyond a bound evicts the
 *   connection of that address (or, for the total, of any address) that has
 *   been waiting for its header the longest: a client that is slow to send
 *   a header is the one to go, a client with a request in progress (a watch,
 *   say) is never evicted.
 * - Reserve: when nothing can be evicted, the new connection takes one of
 *   `reserve` extra slots. A connection in the reserve may make one read
 *   (GET or HEAD that is not a watch: /readyz, /livez, a kubectl get) and is
 *   closed after it; anything else on it is answered 429. Beyond the reserve
 *   the new connection is closed at once.
 *
 * A connection is closed by shutdown(2) on its socket: libmicrohttpd's thread
 * sees end-of-file and closes it as if the client had gone. The socket stays
 * ours to shut down until libmicrohttpd's "closed" notification, which comes
 * before it closes the descriptor and takes the same lock, so a descriptor
 * number is never shut down after it was reused.
 *
 * Threading: one mutex over everything; every operation is a few pointer
 * moves, and the deadline scan (once a second, from the server's ticker
 * thread) walks only connections that are past their deadline, because the
 * waiting list is ordered by the time each started waiting.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"
#include "req_mhd.h"

#define HASH_BUCKETS 4096u /* a power of two */

/* A list of connections waiting for their header, oldest first. */
struct waiting_list {
    struct conn *head, *tail;
};

/* The connections of one client address. */
struct peer {
    unsigned open;     /* tracked connections of this address, evicted ones included */
    unsigned admitted; /* counted against max_per_address: not evicted, not in the reserve */
    struct waiting_list waiting;
};

enum conn_state {
    CONN_WAITING, /* accepted or answered; waiting for a complete request header */
    CONN_BUSY,    /* header complete: a request is being served */
    CONN_EVICTED, /* shut down; libmicrohttpd will close it */
};

struct conn {
    struct conn *hash_next;
    struct conn *prev, *next;           /* in conns->waiting while admitted and waiting */
    struct conn *peer_prev, *peer_next; /* in peer->waiting, likewise */
    struct MHD_Connection *mhd;
    struct ck__strmap_entry *peer; /* its value is a struct peer */
    int fd;
    enum conn_state state;
    bool reserve;         /* holds a reserve slot: one read, then closed */
    bool receiving;       /* CONN_BUSY and its body not received in full yet */
    double waiting_since; /* monotonic seconds: since when CONN_WAITING */
    double busy_since;    /* since when CONN_BUSY (the header was complete) */
};

struct ck__conns {
    pthread_mutex_t lock;
    struct ck__conn_limits limits;
    struct conn *buckets[HASH_BUCKETS];
    struct ck__strmap peers;     /* address -> struct peer (inline payload) */
    struct waiting_list waiting; /* admitted connections waiting for a header */
    unsigned admitted;           /* counted against max_total */
    unsigned in_reserve;
    struct ck__conns_stats stats;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t bucket_of(const struct MHD_Connection *mhd)
{
    uintptr_t p = (uintptr_t)mhd;
    return (size_t)((p >> 4) * 2654435761u) & (HASH_BUCKETS - 1);
}

static struct conn *find(struct ck__conns *c, const struct MHD_Connection *mhd)
{
    for (struct conn *e = c->buckets[bucket_of(mhd)]; e; e = e->hash_next)
        if (e->mhd == mhd)
            return e;
    return NULL;
}

static struct peer *peer_of(const struct conn *e)
{
    return e->peer->value;
}

static void waiting_append(struct ck__conns *c, struct conn *e)
{
    struct peer *p = peer_of(e);
    e->next = NULL;
    e->prev = c->waiting.tail;
    if (c->waiting.tail)
        c->waiting.tail->next = e;
    else
        c->waiting.head = e;
    c->waiting.tail = e;
    e->peer_next = NULL;
    e->peer_prev = p->waiting.tail;
    if (p->waiting.tail)
        p->waiting.tail->peer_next = e;
    else
        p->waiting.head = e;
    p->waiting.tail = e;
}

/* Takes e off the waiting lists (where only admitted, waiting connections are). */
static void waiting_remove(struct ck__conns *c, struct conn *e)
{
    if (e->state != CONN_WAITING || e->reserve)
        return;
    struct peer *p = peer_of(e);
    if (e->prev)
        e->prev->next = e->next;
    else
        c->waiting.head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->waiting.tail = e->prev;
    if (e->peer_prev)
        e->peer_prev->peer_next = e->peer_next;
    else
        p->waiting.head = e->peer_next;
    if (e->peer_next)
        e->peer_next->peer_prev = e->peer_prev;
    else
        p->waiting.tail = e->peer_prev;
    e->prev = e->next = e->peer_prev = e->peer_next = NULL;
}

/* Shuts e's socket down and stops counting it; libmicrohttpd closes it soon after. */
static void evict(struct ck__conns *c, struct conn *e)
{
    if (e->state == CONN_EVICTED)
        return;
    waiting_remove(c, e);
    if (e->reserve)
        c->in_reserve--;
    else {
        c->admitted--;
        peer_of(e)->admitted--;
    }
    e->state = CONN_EVICTED;
    if (e->fd >= 0)
        shutdown(e->fd, SHUT_RDWR);
}

/* The client address as text: the key of its peer entry. */
static void address_key(struct MHD_Connection *mhd, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    snprintf(buf, size, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
                  (socklen_t)size);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
                  (socklen_t)size);
}

/* A new connection: admit it, evicting a waiting one if a bound is reached. */
static void opened(struct ck__conns *c, struct MHD_Connection *mhd)
{
    const union MHD_ConnectionInfo *fd_info =
        MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = fd_info ? fd_info->connect_fd : -1;
    char key[INET6_ADDRSTRLEN + 1];
    address_key(mhd, key, sizeof(key));

    struct conn *e = ck__calloc(1, sizeof(*e));
    pthread_mutex_lock(&c->lock);
    struct ck__strmap_entry *pe = e ? ck__strmap_find(&c->peers, key) : NULL;
    if (e && !pe)
        pe = ck__strmap_insert(&c->peers, key, sizeof(struct peer));
    if (!e || !pe) {
        /* out of memory: served untracked (outside the bounds) rather than dropped */
        c->stats.untracked++;
        pthread_mutex_unlock(&c->lock);
        free(e);
        return;
    }
    struct peer *p = pe->value;
    e->mhd = mhd;
    e->fd = fd;
    e->peer = pe;
    e->state = CONN_WAITING;
    e->waiting_since = now_seconds();
    size_t b = bucket_of(mhd);
    e->hash_next = c->buckets[b];
    c->buckets[b] = e;
    p->open++;

    struct conn *victim = NULL;
    bool over = false;
    if (p->admitted >= c->limits.max_per_address) {
        over = true;
        victim = p->waiting.head;
    } else if (c->admitted >= c->limits.max_total) {
        over = true;
        victim = c->waiting.head;
    }
    if (victim) {
        evict(c, victim);
        c->stats.evicted_for_room++;
    }
    if (!over || victim) {
        c->admitted++;
        p->admitted++;
        waiting_append(c, e);
    } else if (c->in_reserve < c->limits.reserve) {
        e->reserve = true;
        c->in_reserve++;
        c->stats.reserve_admitted++;
    } else {
        e->reserve = true; /* counted nowhere */
        e->state = CONN_EVICTED;
        c->stats.refused++;
        if (fd >= 0)
            shutdown(fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&c->lock);
}

static void closed(struct ck__conns *c, struct MHD_Connection *mhd)
{
    pthread_mutex_lock(&c->lock);
    struct conn **link = &c->buckets[bucket_of(mhd)];
    while (*link && (*link)->mhd != mhd)
        link = &(*link)->hash_next;
    struct conn *e = *link;
    if (e) {
        *link = e->hash_next;
        e->fd = -1;  /* libmicrohttpd closes it after this call */
        evict(c, e); /* only uncounts it */
        struct peer *p = peer_of(e);
        if (--p->open == 0)
            ck__strmap_remove_entry(&c->peers, e->peer);
    }
    pthread_mutex_unlock(&c->lock);
    free(e);
}

struct ck__conns *ck__conns_new(const struct ck__conn_limits *limits)
{
    struct ck__conns *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->limits = *limits;
    return c;
}

struct ck__conns *ck__conns_free(struct ck__conns *c)
{
    if (!c)
        return NULL;
    for (size_t b = 0; b < HASH_BUCKETS; b++) {
        struct conn *e = c->buckets[b];
        while (e) {
            struct conn *next = e->hash_next;
            free(e);
            e = next;
        }
    }
    ck__strmap_release(&c->peers);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
}

void ck__conns_notify(struct ck__conns *c, struct MHD_Connection *mhd,
                      enum MHD_ConnectionNotificationCode toe)
{
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        opened(c, mhd);
    else
        closed(c, mhd);
}

bool ck__conns_request_started(struct ck__conns *c, struct MHD_Connection *mhd)
{
    pthread_mutex_lock(&c->lock);
    struct conn *e = find(c, mhd);
    bool reserve = false;
    if (e && e->state == CONN_WAITING) {
        waiting_remove(c, e);
        e->state = CONN_BUSY;
        e->receiving = true;
        e->busy_since = now_seconds();
    }
    if (e)
        reserve = e->reserve;
    pthread_mutex_unlock(&c->lock);
    return reserve;
}

void ck__conns_request_received(struct ck__conns *c, struct MHD_Connection *mhd)
{
    pthread_mutex_lock(&c->lock);
    struct conn *e = find(c, mhd);
    if (e)
        e->receiving = false;
    pthread_mutex_unlock(&c->lock);
}

void ck__conns_request_done(struct ck__conns *c, struct MHD_Connection *mhd)
{
    pthread_mutex_lock(&c->lock);
    struct conn *e = find(c, mhd);
    if (e && e->state == CONN_BUSY) {
        if (e->reserve) {
            evict(c, e); /* a reserve slot serves one request */
        } else {
            e->state = CONN_WAITING;
            e->waiting_since = now_seconds();
            waiting_append(c, e);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void ck__conns_tick(struct ck__conns *c)
{
    double now = now_seconds();
    double header_deadline = now - (double)c->limits.header_timeout;
    double body_deadline = now - 2.0 * (double)c->limits.header_timeout;
    pthread_mutex_lock(&c->lock);
    /* admitted waiting connections, oldest first */
    while (c->waiting.head && c->waiting.head->waiting_since <= header_deadline) {
        evict(c, c->waiting.head);
        c->stats.evicted_for_deadline++;
    }
    /*
     * Reserve connections waiting for a header and connections receiving a
     * body are on no ordered list: scan them all (about 50 us for 10,000).
     */
    for (size_t b = 0; b < HASH_BUCKETS; b++) {
        for (struct conn *e = c->buckets[b]; e; e = e->hash_next) {
            bool late_header =
                e->reserve && e->state == CONN_WAITING && e->waiting_since <= header_deadline;
            bool late_body =
                e->state == CONN_BUSY && e->receiving && e->busy_since <= body_deadline;
            if (late_header || late_body) {
                evict(c, e);
                c->stats.evicted_for_deadline++;
            }
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void ck__conns_stats(struct ck__conns *c, struct ck__conns_stats *ret)
{
    pthread_mutex_lock(&c->lock);
    *ret = c->stats;
    ret->admitted = c->admitted;
    ret->in_reserve = c->in_reserve;
    pthread_mutex_unlock(&c->lock);
}
