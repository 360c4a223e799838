/*
 * req_mhd.h - the request seam (req.h) over libmicrohttpd (req_mhd.c):
 * what server.c fills in, and the transitional way past the seam that the
 * streaming answers still take.
 *
 * Transitional: this header goes with libmicrohttpd. Included by server.c
 * and by the files whose answers are streams or upgrades (watch.c, podlog.c,
 * exec.c, portforward.c, agentleg.c), which build libmicrohttpd responses
 * themselves until the push-style streams of docs/internals/apiserver.md
 * ("The request seam") replace them.
 */
#ifndef CKUBE_APISERVER_REQ_MHD_H
#define CKUBE_APISERVER_REQ_MHD_H

#include <microhttpd.h>

#include "req.h"

struct ck__apf_ticket;

/* One request on a libmicrohttpd connection (embedded in server.c's struct request). */
struct ck__req {
    struct MHD_Connection *conn;
    const char *method; /* libmicrohttpd's, valid while the connection lives */
    const char *target; /* the target as sent (server.c's copy) */
    const char *body;   /* as read (server.c's) */
    size_t len;
    /* a classified request's ticket: its answer gets the X-Kubernetes-PF-* headers */
    const struct ck__apf_ticket *flow;
    /*
     * Deferring: the request runs on a worker while its connection is
     * suspended; its answer waits here until the connection's thread queues
     * it (ck__req_mhd_flush).
     */
    bool deferring;
    struct MHD_Response *deferred;
    unsigned deferred_status;
};

/* Queues the answer a deferred request left, on the connection's thread; ok: the run's result. */
enum ck__res ck__req_mhd_flush(struct ck__req *req, bool ok);
/* Drops a deferred answer never queued (the connection ended first). */
void ck__req_mhd_release(struct ck__req *req);

/*
 * Transitional, the one way past the seam: the request's libmicrohttpd
 * connection, for the streaming answers (watches, logs, upgrades) and their
 * suspend/resume, which the seam does not carry yet.
 */
struct MHD_Connection *ck__req_mhd(const struct ck__req *req);
/*
 * Transitional: queues a response a streaming answer built (taken: destroyed
 * here, also on failure), with the flow control headers and the deferral
 * every answer gets.
 */
enum ck__res ck__req_mhd_queue(struct ck__req *req, unsigned status, struct MHD_Response *resp);

/* ---- connections (connections.c) ---- */

struct ck__conns;

/* libmicrohttpd's connection notification: a connection opened or closed. */
void ck__conns_notify(struct ck__conns *c, struct MHD_Connection *mhd,
                      enum MHD_ConnectionNotificationCode toe);
/*
 * The connection's request header is complete (first call of the access
 * handler): its deadline stops. Returns whether it holds a reserve slot, and
 * may then only make one read.
 */
bool ck__conns_request_started(struct ck__conns *c, struct MHD_Connection *mhd);
/* The request's body (if any) has been received in full: its deadline stops. */
void ck__conns_request_received(struct ck__conns *c, struct MHD_Connection *mhd);
/* The request was answered: the deadline for the next header starts (a reserve slot closes). */
void ck__conns_request_done(struct ck__conns *c, struct MHD_Connection *mhd);

/* ---- upgrades (agentleg.c) ---- */

/*
 * kubectl's upgraded connection as libmicrohttpd hands it over: the socket we read and
 * write (under TLS a socketpair's end), the client's own socket (whose hang-up
 * libmicrohttpd does not pass on: poll it for POLLRDHUP) and the handle to close it with;
 * and what to run on it. The first member of a relay's struct, which is the cls of
 * MHD_create_response_for_upgrade(ck__upgraded_cb, cls).
 */
struct ck__upgraded {
    MHD_socket sock;
    int peer_fd;
    struct MHD_UpgradeResponseHandle *urh;
    bool hold_reads;           /* ck__ws_recv reads nothing while set (back-pressure) */
    void *(*relay)(void *cls); /* runs on a thread of its own, owns cls */
    void (*drop)(void *cls);   /* frees cls when that thread cannot be had */
};
/* libmicrohttpd's upgrade callback: fills in cls's struct ck__upgraded, starts its relay. */
void ck__upgraded_cb(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra_in,
                     size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh);

#endif /* CKUBE_APISERVER_REQ_MHD_H */
