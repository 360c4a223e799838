/*
 * benchtime.h - the clocks and the median every C benchmark under bench/ reports with:
 * wall time (CLOCK_MONOTONIC) and the calling thread's CPU time, in nanoseconds, and the
 * median of a run's samples (sorts them in place).
 */
#ifndef CKUBE_BENCH_BENCHTIME_H
#define CKUBE_BENCH_BENCHTIME_H

#include <stdlib.h>
#include <time.h>

static inline double bench_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline double bench_wall_ns(void)
{
    return bench_clock_ns(CLOCK_MONOTONIC);
}

static inline double bench_cpu_ns(void)
{
    return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0); v is left sorted. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return v[n / 2];
}

#endif /* CKUBE_BENCH_BENCHTIME_H */
