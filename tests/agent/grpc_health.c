/*
 * grpc_health.c - a gRPC health server for tests: grpc.health.v1.Health/Check as a
 * handler of the fake gRPC server (grpc_fake.c); grpc_health.h says what it answers.
 * Test code only.
 */
#include "grpc_health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(void *arg, const char *path, const unsigned char *msg, size_t len,
                  struct grpc_fake_answer *ret)
{
    struct health_server *h = arg;
    snprintf(h->path, sizeof(h->path), "%s", path);
    /* HealthCheckRequest {1: service} */
    h->service[0] = 0;
    if (len >= 2 && msg[0] == 0x0a && msg[1] < sizeof(h->service) && len >= 2u + msg[1])
        snprintf(h->service, sizeof(h->service), "%.*s", msg[1], (const char *)msg + 2);
    h->calls++;
    int status = strcmp(h->service, "") == 0 || strcmp(h->service, "ok") == 0 ? 1
                 : strcmp(h->service, "down") == 0                            ? 2
                 : strcmp(h->service, "slow") == 0                            ? 1
                                                                              : -1;
    if (strcmp(h->service, "slow") == 0)
        nanosleep(&(struct timespec){1, 500000000}, NULL);
    if (strcmp(h->service, "unimpl") == 0) {
        *ret = (struct grpc_fake_answer){GRPC_FAKE_STATUS, 12,
                                         "unknown service grpc.health.v1.Health", NULL, 0};
        return;
    }
    if (status < 0) {
        *ret = (struct grpc_fake_answer){GRPC_FAKE_STATUS, 5, "unknown service", NULL, 0};
        return;
    }
    /* HealthCheckResponse {1: status} */
    ret->body = malloc(2);
    if (!ret->body) {
        *ret = (struct grpc_fake_answer){GRPC_FAKE_STATUS, 13, "out of memory", NULL, 0};
        return;
    }
    ret->body[0] = 0x08;
    ret->body[1] = (unsigned char)status;
    ret->len = 2;
}

int health_server_start(struct health_server *h, int fd)
{
    return grpc_fake_start(fd, check, h, &h->srv);
}

void health_server_stop(struct health_server *h)
{
    grpc_fake_stop(h->srv);
    h->srv = NULL;
}
