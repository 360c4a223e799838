/*
 * grpc_health_main.c - test_grpc_health_server PORT: the gRPC health server of
 * grpc_health.h on 0.0.0.0:PORT until SIGTERM or SIGINT (then exit 0), for the grpc
 * probes of tests/e2e/test_agent.sh, where it runs as a pod's command.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grpc_health.h"

int main(int argc, char **argv)
{
    int port = argc == 2 ? atoi(argv[1]) : 0;
    if (port <= 0 || port > 65535) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the server's thread inherits the mask */
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
        perror("listen");
        return 1;
    }
    struct health_server h = {0};
    if (health_server_start(&h, fd) != 0)
        return 1;
    printf("serving grpc.health.v1.Health on port %d\n", port);
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    health_server_stop(&h);
    return 0;
}
