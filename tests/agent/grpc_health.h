/*
 * grpc_health.h - a gRPC health server for tests (grpc_health.c): the grpc probe's
 * counterpart in tests/agent/test_probe.c and, as test_grpc_health_server, a pod's
 * command in tests/e2e/test_agent.sh.
 */
#ifndef CKUBE_TESTS_GRPC_HEALTH_H
#define CKUBE_TESTS_GRPC_HEALTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * grpc.health.v1.Health/Check on a listening socket, one connection at a time on a
 * thread of its own: service "" or "ok" is SERVING, "down" NOT_SERVING, "unimpl"
 * answers Unimplemented (a server without the health service), "slow" answers after
 * 1.5 s, any other NotFound "unknown service" as grpc-go's health server does. The
 * last call's path and service, and the number of calls, are kept for the test.
 */
struct health_server {
    int fd;
    atomic_bool stop;
    pthread_t thread;
    char path[128], service[64]; /* the last call's */
    int calls;
    /* the call in flight */
    unsigned char body[256];
    size_t body_len;
    unsigned char out[16];
    size_t out_len, out_sent;
};

/* Serves on the listening socket fd (taken) from a new thread. 0, or an errno value. */
int health_server_start(struct health_server *h, int fd);
/* Stops the thread (within 0.1 s once a connection ends) and closes the socket. */
void health_server_stop(struct health_server *h);

#endif
