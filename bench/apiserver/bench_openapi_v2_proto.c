/*
 * bench_openapi_v2_proto.c - what /openapi/v2 costs per answer: building the
 * Swagger document from the schemas (ck_openapi_v2), dumping it as JSON (the
 * reference: every /openapi/v2 answer does both) and encoding it as gnostic's
 * protobuf (lib/api/openapi_v2_proto.c, what a protobuf answer adds).
 *
 *   bench_openapi_v2_proto [ITERATIONS] [RUNS]
 *
 * Each run times ITERATIONS (default 50) of each operation on one thread and
 * reports the CPU time per operation; the report gives the median of RUNS
 * (default 5) runs of each, and the sizes of the two bodies.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"

enum { BUILD, DUMP, ENCODE, N_OPS };
static const char *const op_names[N_OPS] = {"build the Swagger document", "JSON dump",
                                            "protobuf encode"};

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 50;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (iterations < 1 || runs < 1 || runs > 100) {
        fprintf(stderr, "usage: %s [ITERATIONS] [RUNS (1-100)]\n", argv[0]);
        return 2;
    }
    struct ck_schemas *schemas = NULL;
    struct ck_err err = {0};
    if (ck_api_builtin_schemas(&schemas, &err) < 0)
        return 1;
    json_t *doc = ck_openapi_v2(schemas);
    size_t json_len = 0, pb_len = 0;
    char *text = doc ? ck__json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER, &json_len) : NULL;
    char *pb = NULL;
    if (!text || ck_openapi_v2_proto(doc, &pb, &pb_len, &err) < 0)
        return 1;
    free(text);
    free(pb);
    double samples[N_OPS][100];
    for (int r = 0; r < runs; r++) {
        for (int op = 0; op < N_OPS; op++) {
            double start = bench_cpu_ns();
            for (int i = 0; i < iterations; i++) {
                if (op == BUILD) {
                    json_decref(ck_openapi_v2(schemas));
                } else if (op == DUMP) {
                    free(ck__json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER, &json_len));
                } else if (ck_openapi_v2_proto(doc, &pb, &pb_len, &err) == 0) {
                    free(pb);
                }
            }
            samples[op][r] = (bench_cpu_ns() - start) / iterations;
        }
    }
    printf("/openapi/v2 of the built-in kinds: JSON %zu bytes, protobuf %zu bytes\n", json_len,
           pb_len);
    for (int op = 0; op < N_OPS; op++)
        printf("%-28s %8.2f ms (median of %d runs x %d)\n", op_names[op],
               bench_median(samples[op], runs) / 1e6, runs, iterations);
    json_decref(doc);
    ck_schemas_free(schemas);
    return 0;
}
