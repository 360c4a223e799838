/*
 * spike.h - what the two HTTP-layer spike servers share (issue 43): the fixed
 * JSON body of GET /obj, the broadcast of watch events, the TLS context.
 *
 * Not part of ckube: a measured comparison of libnghttp2 + libevent against
 * libh2o-evloop, built by this directory's Makefile only.
 *
 * The broadcast: a feeder thread writes event N into ring slot N % SPIKE_RING
 * (the raw bytes for HTTP/2 DATA frames and the same bytes framed as one
 * HTTP/1.1 chunk), publishes N with a release store, then calls the server's
 * wake function once per loop thread. A loop reads the published count with
 * an acquire load and sends each stream the slots it has not sent yet, straight
 * from the ring (no copy per stream). The ring is large enough for one
 * measurement (SPIKE_RING events); a stream more than SPIKE_RING events
 * behind would read overwritten slots, which the spike does not guard.
 */
#ifndef SPIKE_H
#define SPIKE_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

#define SPIKE_RING      4096
#define SPIKE_EVENT_MAX 512

struct spike_event {
    size_t len, chunk_len;
    char data[SPIKE_EVENT_MAX];       /* one watch event, ending in '\n' */
    char chunk[SPIKE_EVENT_MAX + 16]; /* the same as one HTTP/1.1 chunk */
};

struct spike_opts {
    int threads, port, events, interval_ms;
    const char *cert, *key;
};

extern const char spike_obj[]; /* the JSON body of GET /obj */
extern const size_t spike_obj_len;
extern struct spike_event spike_ring[SPIKE_RING];

int spike_parse_args(int argc, char **argv, struct spike_opts *o);
SSL_CTX *spike_tls_ctx(const struct spike_opts *o); /* ALPN h2, http/1.1; no resumption */
/* The feeder: wake(i) is called once per published event for loop 0..nloops-1. */
void spike_feed_start(const struct spike_opts *o, int nloops, void (*wake)(int loop));
void spike_feed_fire(void); /* GET /fire: publish o->events events, o->interval_ms apart */
uint64_t spike_published(void);
void spike_listen_opts(int fd);
/* Runs run(loops[i]) on o->threads threads, loop 0 on the calling one; returns when it does. */
void spike_run(const char *name, const struct spike_opts *o, void *(*run)(void *), void *loops,
               size_t size);

#endif
