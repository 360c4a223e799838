/*
 * grpc_health.h - a gRPC health server for tests (grpc_health.c, a handler of the fake
 * gRPC server of grpc_fake.h): the grpc probe's counterpart in tests/agent/test_probe.c
 * and, as test_grpc_health_server, a pod's command in tests/e2e/test_agent.sh.
 */
#ifndef CKUBE_TESTS_GRPC_HEALTH_H
#define CKUBE_TESTS_GRPC_HEALTH_H

#include "grpc_fake.h"

/*
 * grpc.health.v1.Health/Check on a listening socket, on a thread of its own: service ""
 * or "ok" is SERVING, "down" NOT_SERVING, "unimpl" answers Unimplemented (a server
 * without the health service), "slow" answers after 1.5 s, any other NotFound "unknown
 * service" as grpc-go's health server does. The last call's path and service, and the
 * number of calls, are kept for the test.
 */
struct health_server {
    struct grpc_fake *srv;
    char path[128], service[64]; /* the last call's */
    int calls;
};

/* Serves on the listening socket fd (taken) from a new thread. 0, or an errno value. */
int health_server_start(struct health_server *h, int fd);
/* Stops the thread (within 0.1 s) and closes the socket. */
void health_server_stop(struct health_server *h);

#endif
