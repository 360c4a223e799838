/*
 * bench_regex.c - what a schema pattern costs with Go's syntax over RE2
 * (ck__regex, lib/util/regex.cc) against glibc's POSIX regcomp()/regexec(),
 * which compiled patterns before.
 *
 * For each pattern of tests/data/regex/crd-patterns.json (published CRDs) that
 * glibc also compiles as an extended expression: the CPU time to compile it
 * and to search one value with it (a 24-byte DNS-like name). Then patterns
 * with counted repeats, which glibc expands when compiling.
 *
 *   bench_regex CORPUS.json [ROUNDS]
 *
 * Prints medians over ROUNDS (default 5) of the corpus totals per pattern.
 */
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/internal/util.h"

#define MAX_PATTERNS 256
#define SEARCHES     2000

static const char value[] = "prometheus-k8s.monitor-1";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS.json [ROUNDS]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    json_error_t jerr;
    json_t *corpus = json_load_file(argv[1], 0, &jerr);
    if (!corpus || rounds < 1 || rounds > 100) {
        fprintf(stderr, "%s: %s\n", argv[1], corpus ? "bad ROUNDS" : jerr.text);
        return 2;
    }
    const char *pats[MAX_PATTERNS];
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(corpus, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "pattern"));
        regex_t re;
        if (n < MAX_PATTERNS && p && regcomp(&re, p, REG_EXTENDED | REG_NOSUB) == 0) {
            regfree(&re);
            pats[n++] = p;
        }
    }
    double *s[4];
    for (int k = 0; k < 4; k++)
        s[k] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_cpu_ns();
        for (size_t k = 0; k < n; k++) {
            regex_t re;
            regcomp(&re, pats[k], REG_EXTENDED | REG_NOSUB);
            regfree(&re);
        }
        double t1 = bench_cpu_ns();
        for (size_t k = 0; k < n; k++) {
            struct ck__regex *re;
            if (ck__regex_compile(pats[k], strlen(pats[k]), &re, NULL) == 0)
                ck__regex_free(re);
        }
        double t2 = bench_cpu_ns();
        s[0][r] = (t1 - t0) / (double)n;
        s[1][r] = (t2 - t1) / (double)n;
        double posix = 0, re2 = 0;
        for (size_t k = 0; k < n; k++) {
            regex_t pre;
            struct ck__regex *re;
            regcomp(&pre, pats[k], REG_EXTENDED | REG_NOSUB);
            ck__regex_compile(pats[k], strlen(pats[k]), &re, NULL);
            double a = bench_cpu_ns();
            for (int q = 0; q < SEARCHES; q++)
                regexec(&pre, value, 0, NULL, 0);
            double b = bench_cpu_ns();
            for (int q = 0; q < SEARCHES; q++)
                ck__regex_search(re, value, sizeof(value) - 1);
            double c = bench_cpu_ns();
            posix += (b - a) / SEARCHES;
            re2 += (c - b) / SEARCHES;
            regfree(&pre);
            ck__regex_free(re);
        }
        s[2][r] = posix / (double)n;
        s[3][r] = re2 / (double)n;
    }
    printf("%zu corpus patterns glibc also compiles, medians of %d rounds\n", n, rounds);
    printf("compile, per pattern:        glibc %8.2f us   RE2 %8.2f us\n",
           bench_median(s[0], rounds) / 1e3, bench_median(s[1], rounds) / 1e3);
    printf("search one value, per pattern: glibc %8.3f us   RE2 %8.3f us\n",
           bench_median(s[2], rounds) / 1e3, bench_median(s[3], rounds) / 1e3);

    /*
     * Counted repeats: glibc expands them into its automaton when compiling,
     * RE2 into a program it bounds by memory; a search of a 1,000-byte value.
     */
    static const char *const big[] = {"^[a-z0-9]{100}$", "^[a-z0-9]{1000}$",
                                      "^([a-z0-9]{1,30}\\.){30}$", "^(a|b?){500}c$"};
    char text[1001];
    memset(text, 'a', 1000);
    text[1000] = '\0';
    for (size_t k = 0; k < sizeof(big) / sizeof(big[0]); k++) {
        regex_t pre;
        struct ck__regex *re = NULL;
        double a = bench_cpu_ns();
        int pc = regcomp(&pre, big[k], REG_EXTENDED | REG_NOSUB);
        double b = bench_cpu_ns();
        int rc = ck__regex_compile(big[k], strlen(big[k]), &re, NULL);
        double c = bench_cpu_ns();
        int pm = pc == 0 ? regexec(&pre, text, 0, NULL, 0) == 0 : -1;
        double d = bench_cpu_ns();
        int rm = rc == 0 ? ck__regex_search(re, text, 1000) : -1;
        double f = bench_cpu_ns();
        printf(
            "%-28s compile: glibc %9.1f us  RE2 %7.1f us; search: glibc %8.1f us (%d)  RE2 %6.1f us (%d)\n",
            big[k], (b - a) / 1e3, (c - b) / 1e3, (d - c) / 1e3, pm, (f - d) / 1e3, rm);
        if (pc == 0)
            regfree(&pre);
        ck__regex_free(re);
    }
    for (int k = 0; k < 4; k++)
        free(s[k]);
    json_decref(corpus);
    return 0;
}
