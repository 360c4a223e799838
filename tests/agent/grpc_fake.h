/*
 * grpc_fake.h - a small gRPC server for tests (grpc_fake.c, over libnghttp2's server
 * API: plaintext HTTP/2 with prior knowledge, as gRPC's h2c): every unary call goes to a
 * handler of the test's, which says what to answer. The gRPC health server
 * (grpc_health.c) and the fake CRI runtime of tests/agent/test_runtime_cri.c are such
 * handlers. Test code only.
 *
 * One thread serves the listening socket and every connection on it at once (up to
 * GRPC_FAKE_MAX_CONNS), so a client's calls on several connections (the CRI client's
 * StopContainer on a connection of its own) are all answered; the handler runs on that
 * thread, one call at a time.
 */
#ifndef CKUBE_TESTS_GRPC_FAKE_H
#define CKUBE_TESTS_GRPC_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#define GRPC_FAKE_MAX_CONNS 16

/* How the server answers a call. */
enum grpc_fake_kind {
    GRPC_FAKE_MESSAGE = 0, /* body as one gRPC message, then the status in trailers */
    GRPC_FAKE_STATUS,      /* trailers only: the status and message in the one HEADERS */
    GRPC_FAKE_RAW,         /* body's bytes as they are (no message prefix), then status 0 */
    GRPC_FAKE_SILENT,      /* nothing: the call stays open until the client gives up */
    GRPC_FAKE_RESET,       /* the stream reset (RST_STREAM INTERNAL_ERROR) */
};

struct grpc_fake_answer {
    enum grpc_fake_kind kind;
    int status;          /* grpc-status (MESSAGE and STATUS) */
    char message[256];   /* grpc-message, "" none */
    unsigned char *body; /* malloc'd, the server frees it; NULL with len 0: empty */
    size_t len;
};

/*
 * The handler of a call to path ("/package.Service/Method") whose request is msg (the
 * one message's bytes without their prefix; the raw body when it is not exactly one
 * uncompressed message). *ret starts as an empty MESSAGE with status 0.
 */
typedef void (*grpc_fake_fn)(void *arg, const char *path, const unsigned char *msg, size_t len,
                             struct grpc_fake_answer *ret);

struct grpc_fake;

/* Serves the listening socket fd (taken) from a new thread. 0, or an errno value. */
int grpc_fake_start(int fd, grpc_fake_fn fn, void *arg, struct grpc_fake **ret);
/* Stops the thread (within 0.1 s), closes every connection and the socket, frees f. */
void grpc_fake_stop(struct grpc_fake *f);
/* How many connections are open now, and how many were accepted since the start. */
int grpc_fake_open_conns(struct grpc_fake *f);
int grpc_fake_accepted(struct grpc_fake *f);

#endif
