/*
 * bench_proxy.c - how long the proxy takes to sync N Services x M endpoints: the rule
 * builder alone, and the builder plus the libnftables transaction on the real kernel.
 *
 *   build-rel/bench/bench_proxy [SERVICES [ENDPOINTS [ROUNDS]]]   (default 1000 10 5)
 *
 * Four syncs are timed, each ROUNDS times (medians printed): the first (adopt: the
 * table deleted and rebuilt), a full resync of the same content, a partial sync after
 * one Service gained an endpoint, and a partial sync that changes nothing. As root the
 * program first moves itself into a network namespace of its own (unshare), so the
 * transactions go to a kernel table nobody else sees; otherwise only the builder is
 * timed, and it says so. kube-proxy's published figures are in docs/benchmarks.md.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../benchtime.h"
#include "ckube/proxy.h"

static json_t *service(int i)
{
    char name[32], ip[32];
    snprintf(name, sizeof(name), "svc-%d", i);
    snprintf(ip, sizeof(ip), "10.96.%d.%d", i / 250, i % 250 + 1);
    return json_pack("{s:s, s:{s:s, s:s}, s:{s:s, s:s, s:[{s:s, s:i, s:s}]}}", "kind", "Service",
                     "metadata", "namespace", "default", "name", name, "spec", "type", "ClusterIP",
                     "clusterIP", ip, "ports", "name", "http", "port", 80, "protocol", "TCP");
}

static json_t *slice(int i, int n_eps, int extra)
{
    char name[32], svc[32], ip[32];
    snprintf(name, sizeof(name), "svc-%d-abc", i);
    snprintf(svc, sizeof(svc), "svc-%d", i);
    json_t *eps = json_array();
    for (int e = 0; e < n_eps + extra; e++) {
        int k = i * 16 + e; /* up to 16 endpoints a Service, unique addresses */
        snprintf(ip, sizeof(ip), "10.%d.%d.%d", 128 + k / 65536, k / 256 % 256, k % 256);
        json_array_append_new(eps, json_pack("{s:[s], s:{s:b}, s:s}", "addresses", ip, "conditions",
                                             "ready", 1, "nodeName", "node-b"));
    }
    return json_pack("{s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:[{s:s, s:i, s:s}], s:o}", "kind",
                     "EndpointSlice", "metadata", "namespace", "default", "name", name, "labels",
                     "kubernetes.io/service-name", svc, "addressType", "IPv4", "ports", "name",
                     "http", "port", 8080, "protocol", "TCP", "endpoints", eps);
}

struct timing {
    double build, apply;
    size_t bytes, chains;
};

static int sync_once(const struct ck_proxy_input *in, struct ck_proxy_state **state,
                     enum ck_proxy_sync_mode mode, bool apply, struct timing *t)
{
    char *text = NULL;
    struct ck_proxy_state *next = NULL;
    struct ck_proxy_build_stats st;
    struct ck_err err = {0};
    double t0 = bench_wall_ns();
    if (ck_proxy_build(in, *state, mode, &text, &next, &st, &err) < 0) {
        fprintf(stderr, "build: %s\n", err.msg);
        return -1;
    }
    double t1 = bench_wall_ns();
    if (apply && ck_proxy_nft_run(text, false, &err) < 0) {
        fprintf(stderr, "apply: %s\n", err.msg);
        free(text);
        ck_proxy_state_free(next);
        return -1;
    }
    double t2 = bench_wall_ns();
    t->build = (t1 - t0) / 1e6;
    t->apply = (t2 - t1) / 1e6;
    t->bytes = strlen(text);
    t->chains = st.chains_written;
    free(text);
    ck_proxy_state_free(*state);
    *state = next;
    return 0;
}

int main(int argc, char **argv)
{
    int n_svc = argc > 1 ? atoi(argv[1]) : 1000, n_eps = argc > 2 ? atoi(argv[2]) : 10;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (n_svc < 1 || n_svc > 60000 || n_eps < 1 || n_eps > 15 || rounds < 1) {
        fprintf(stderr, "usage: bench_proxy [SERVICES<=60000 [ENDPOINTS<=15 [ROUNDS]]]\n");
        return 2;
    }
    bool apply = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
    if (!apply)
        printf("# not root or no network namespace: the builder alone is timed\n");
    json_t **svcs = calloc((size_t)n_svc, sizeof(*svcs));
    json_t **slices = calloc((size_t)n_svc, sizeof(*slices));
    for (int i = 0; i < n_svc; i++) {
        svcs[i] = service(i);
        slices[i] = slice(i, n_eps, 0);
    }
    struct ck_proxy_config cfg = {.hostname = "node-a", .cluster_cidr = "10.244.0.0/16"};
    struct ck_proxy_input in = {(const json_t *const *)svcs,
                                (size_t)n_svc,
                                (const json_t *const *)slices,
                                (size_t)n_svc,
                                NULL,
                                0,
                                &cfg};
    static const char *names[4] = {"adopt (first sync)", "full resync", "one Service changed",
                                   "nothing changed"};
    double build[4][64], app[4][64];
    size_t bytes[4] = {0}, chains[4] = {0};
    if (rounds > 64)
        rounds = 64;
    for (int r = 0; r < rounds; r++) {
        struct ck_proxy_state *state = NULL;
        struct timing t;
        if (sync_once(&in, &state, CK_PROXY_SYNC_ADOPT, apply, &t) < 0)
            return 1;
        build[0][r] = t.build, app[0][r] = t.apply, bytes[0] = t.bytes, chains[0] = t.chains;
        if (sync_once(&in, &state, CK_PROXY_SYNC_FULL, apply, &t) < 0)
            return 1;
        build[1][r] = t.build, app[1][r] = t.apply, bytes[1] = t.bytes, chains[1] = t.chains;
        int k = (r * 7919) % n_svc; /* a different Service each round */
        json_t *old = slices[k];
        slices[k] = slice(k, n_eps, 1);
        if (sync_once(&in, &state, CK_PROXY_SYNC_PARTIAL, apply, &t) < 0)
            return 1;
        build[2][r] = t.build, app[2][r] = t.apply, bytes[2] = t.bytes, chains[2] = t.chains;
        json_decref(slices[k]);
        slices[k] = old;
        if (sync_once(&in, &state, CK_PROXY_SYNC_PARTIAL, apply, &t) < 0)
            return 1;
        if (sync_once(&in, &state, CK_PROXY_SYNC_PARTIAL, apply, &t) < 0)
            return 1;
        build[3][r] = t.build, app[3][r] = t.apply, bytes[3] = t.bytes, chains[3] = t.chains;
        ck_proxy_state_free(state);
    }
    printf("%d Services x %d endpoints, %d rounds, medians\n", n_svc, n_eps, rounds);
    printf("%-22s %12s %12s %12s %10s %8s\n", "sync", "build ms", "apply ms", "total ms",
           "text KiB", "chains");
    for (int m = 0; m < 4; m++) {
        double tot[64];
        for (int r = 0; r < rounds; r++)
            tot[r] = build[m][r] + app[m][r];
        double b = bench_median(build[m], rounds), a = bench_median(app[m], rounds);
        if (apply)
            printf("%-22s %12.2f %12.2f %12.2f %10.1f %8zu\n", names[m], b, a,
                   bench_median(tot, rounds), (double)bytes[m] / 1024, chains[m]);
        else
            printf("%-22s %12.2f %12s %12.2f %10.1f %8zu\n", names[m], b, "-",
                   bench_median(tot, rounds), (double)bytes[m] / 1024, chains[m]);
    }
    for (int i = 0; i < n_svc; i++) {
        json_decref(svcs[i]);
        json_decref(slices[i]);
    }
    free(svcs);
    free(slices);
    return 0;
}
