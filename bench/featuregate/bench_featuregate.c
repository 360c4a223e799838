/*
 * bench_featuregate.c - libfeaturegate speed: ck_fg_enabled() per call on
 * one thread (beside a plain array read as the reference), per-thread
 * throughput of 2 readers with and without a third thread calling set in a
 * loop, parsing and applying a 50-pair --feature-gates string, and loading
 * the real Kubernetes list when its path is given. Prints medians of CPU
 * time per operation (this thread's, so time spent preempted on a busy
 * machine is left out) and, for the read loops, of wall-clock time too.
 *
 * Usage: bench_featuregate [PATH/TO/kubernetes-versioned-feature-list.yaml]
 * Not run by `make test`; see bench/featuregate/run.sh.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../benchtime.h"

#include "ckube/featuregate.h"

#define NFEATURES    302 /* as in the Go reference figure */
#define RUNS         7
#define ITERS        100000000L
#define THREAD_ITERS 50000000L
#define MAX_SETS     300000

static struct ck_fg_gate *make_gate(ck_fg_feature_t *mid)
{
    struct ck_fg_gate *g = ck_fg_gate_new(ck_fg_version_mm(1, 34));
    for (int i = 0; i < NFEATURES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "Feature%03d", i);
        struct ck_fg_spec s[2] = {
            {.version = ck_fg_version_mm(1, 30), .has_version = true, .stage = CK_FG_ALPHA},
            {.version = ck_fg_version_mm(1, 32),
             .has_version = true,
             .default_value = true,
             .stage = CK_FG_BETA},
        };
        ck_fg_feature_t f;
        if (ck_fg_add_versioned(g, name, s, 2, &f, NULL) < 0)
            abort();
        if (i == NFEATURES / 2)
            *mid = f;
    }
    return g;
}

/*
 * Each loop returns its cost per iteration in this thread's CPU time, which
 * leaves out the time the thread spent preempted on a busy machine, and
 * stores the wall-clock cost in *ret_wall.
 */
static double bench_enabled(const struct ck_fg_gate *g, ck_fg_feature_t f, long iters,
                            double *ret_wall)
{
    unsigned long acc = 0;
    double c0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = bench_wall_ns();
    for (long i = 0; i < iters; i++) {
        acc += ck_fg_enabled(g, f);
        __asm__ volatile("" : "+r"(acc)); /* keep every call */
    }
    *ret_wall = (bench_wall_ns() - t0) / (double)iters;
    double c = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (acc == 12345)
        puts("");
    return c / (double)iters;
}

static double bench_array(const bool *arr, size_t idx, long iters, double *ret_wall)
{
    unsigned long acc = 0;
    double c0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = bench_wall_ns();
    for (long i = 0; i < iters; i++) {
        acc += arr[idx];
        __asm__ volatile("" : "+r"(acc)::"memory"); /* reload each time */
    }
    *ret_wall = (bench_wall_ns() - t0) / (double)iters;
    double c = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (acc == 12345)
        puts("");
    return c / (double)iters;
}

struct reader_arg {
    const struct ck_fg_gate *g;
    ck_fg_feature_t f;
    double ns, cpu_ns; /* per call: wall clock, and this thread's CPU time */
};

static atomic_int readers_left;

static void *reader(void *p)
{
    struct reader_arg *a = p;
    a->cpu_ns = bench_enabled(a->g, a->f, THREAD_ITERS, &a->ns);
    atomic_fetch_sub(&readers_left, 1);
    return NULL;
}

struct setter_arg {
    struct ck_fg_gate *g;
    long sets;
};

static void *setter(void *p)
{
    struct setter_arg *a = p;
    while (atomic_load(&readers_left) > 0 && a->sets < MAX_SETS) {
        ck_fg_set(a->g, a->sets % 2 ? "Feature000=true" : "Feature000=false", NULL);
        a->sets++;
    }
    return NULL;
}

/*
 * Runs 2 readers, with a setter when with_setter; returns the readers' mean
 * wall-clock ns/call and stores their mean CPU ns/call in *ret_cpu. On a
 * machine with fewer than 3 CPUs the setter takes CPU time from the readers,
 * which shows in the wall clock but not in the CPU time.
 */
static double bench_threads(struct ck_fg_gate *g, ck_fg_feature_t f, bool with_setter,
                            long *ret_sets, double *ret_cpu)
{
    pthread_t r[2], s;
    struct reader_arg ra[2] = {{g, f, 0, 0}, {g, f, 0, 0}};
    struct setter_arg sa = {g, 0};
    atomic_store(&readers_left, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, &ra[i]);
    if (with_setter)
        pthread_create(&s, NULL, setter, &sa);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    if (with_setter)
        pthread_join(s, NULL);
    *ret_sets = sa.sets;
    *ret_cpu = (ra[0].cpu_ns + ra[1].cpu_ns) / 2;
    return (ra[0].ns + ra[1].ns) / 2;
}

int main(int argc, char **argv)
{
    ck_fg_feature_t f;
    struct ck_fg_gate *g = make_gate(&f);
    double v[RUNS], b[RUNS];
    bool *arr = calloc(NFEATURES + 2, sizeof(bool));

    double vw[RUNS], bw[RUNS];
    for (int i = 0; i < RUNS; i++) {
        v[i] = bench_enabled(g, f, ITERS, &vw[i]);
        b[i] = bench_array(arr, (size_t)f, ITERS, &bw[i]);
    }
    printf("enabled (default-valued gate, %d gates): %.2f ns/call CPU time (wall %.2f), median "
           "of %d\n",
           NFEATURES, bench_median(v, RUNS), bench_median(vw, RUNS), RUNS);
    printf("reference: plain array read:             %.2f ns/read CPU time (wall %.2f), median "
           "of %d\n",
           bench_median(b, RUNS), bench_median(bw, RUNS), RUNS);
    ck_fg_set(g, "Feature151=false", NULL);
    for (int i = 0; i < RUNS; i++)
        v[i] = bench_enabled(g, f, ITERS, &vw[i]);
    printf("enabled (explicitly set gate):            %.2f ns/call CPU time (wall %.2f), median "
           "of %d\n",
           bench_median(v, RUNS), bench_median(vw, RUNS), RUNS);

    double quiet[RUNS], busy[RUNS], quiet_cpu[RUNS], busy_cpu[RUNS];
    long sets = 0, total_sets = 0;
    for (int i = 0; i < RUNS; i++) {
        quiet[i] = bench_threads(g, f, false, &sets, &quiet_cpu[i]);
        busy[i] = bench_threads(g, f, true, &sets, &busy_cpu[i]);
        total_sets += sets;
    }
    printf("2 readers, no setter:                     %.2f ns/call per thread CPU time (wall "
           "%.2f), median of %d\n",
           bench_median(quiet_cpu, RUNS), bench_median(quiet, RUNS), RUNS);
    printf("2 readers + 1 thread calling set:         %.2f ns/call per thread CPU time (wall "
           "%.2f), median of %d (%ld sets during the runs)\n",
           bench_median(busy_cpu, RUNS), bench_median(busy, RUNS), RUNS, total_sets);

    /* A 50-pair --feature-gates string. */
    char str[4096] = "";
    for (int i = 0; i < 50; i++)
        snprintf(str + strlen(str), sizeof(str) - strlen(str), "%sFeature%03d=%s", i ? "," : "",
                 i * 6, i % 2 ? "true" : "false");
    double p[RUNS], s[RUNS];
    const int reps = 2000;
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_cpu_ns();
        for (int i = 0; i < reps; i++) {
            struct ck_fg_pair *pairs;
            size_t n;
            char *buf;
            ck_fg_parse_pairs(str, &pairs, &n, &buf, NULL);
            free(pairs);
            free(buf);
        }
        p[r] = (bench_cpu_ns() - t0) / reps;
        struct ck_fg_gate *h = make_gate(&f);
        t0 = bench_cpu_ns();
        for (int i = 0; i < reps; i++)
            if (ck_fg_set(h, str, NULL) < 0)
                abort();
        s[r] = (bench_cpu_ns() - t0) / reps;
        ck_fg_gate_free(h);
    }
    printf("parse 50-pair --feature-gates string:     %.2f us CPU time, median of %d (x%d)\n",
           bench_median(p, RUNS) / 1000, RUNS, reps);
    printf("set 50 pairs (parse + validate + publish): %.2f us CPU time, median of %d (x%d)\n",
           bench_median(s, RUNS) / 1000, RUNS, reps);

    if (argc > 1) {
        double l[RUNS];
        size_t count = 0;
        for (int r = 0; r < RUNS; r++) {
            struct ck_fg_gate *h = ck_fg_gate_new(ck_fg_version_mm(1, 34));
            struct ck_fg_err err;
            double t0 = bench_cpu_ns();
            if (ck_fg_list_load(h, argv[1], &err) < 0) {
                fprintf(stderr, "load: %s\n", err.msg);
                return 1;
            }
            l[r] = bench_cpu_ns() - t0;
            count = ck_fg_count(h);
            ck_fg_gate_free(h);
        }
        printf("load the Kubernetes list (%zu gates):     %.2f ms CPU time, median of %d\n",
               count - 2, bench_median(l, RUNS) / 1e6, RUNS);
    }
    ck_fg_gate_free(g);
    free(arr);
    return 0;
}
