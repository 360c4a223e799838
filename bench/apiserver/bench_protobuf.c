/*
 * bench_protobuf.c - the protobuf codec alone (lib/api/protobuf.c) beside
 * jansson on the same object: how long one object takes to encode and to
 * decode in Kubernetes' protobuf, and to dump and to parse as JSON.
 *
 *   bench_protobuf OBJECT.json [ITERATIONS] [RUNS] [OUT.pb]
 *
 * OUT.pb, when given, receives the object's protobuf encoding (for
 * bench/apiserver/protobuf-c-compare.sh).
 * The object (a Pod by default in run-protobuf.sh: tests/api/data/pod-full.json)
 * is parsed once; each run times ITERATIONS (default 20,000) of each of the
 * four operations on one thread and reports the CPU time per operation; the
 * report gives the median of RUNS (default 5) runs of each. JSON is the
 * reference: it is what the API server does for every write already.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/api.h"
#include "ckube/internal/util.h"

enum { ENCODE, DECODE, DUMP, PARSE, N_OPS };
static const char *const op_names[N_OPS] = {"protobuf encode", "protobuf decode", "JSON dump",
                                            "JSON parse"};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OBJECT.json [ITERATIONS] [RUNS] [OUT.pb]\n", argv[0]);
        return 2;
    }
    int iterations = argc > 2 ? atoi(argv[2]) : 20000;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    json_error_t jerr;
    json_t *obj = json_load_file(argv[1], 0, &jerr);
    char message[256];
    if (!obj || ck_proto_message_of(obj, message, sizeof(message)) < 0) {
        fprintf(stderr, "%s: not an object with a protobuf message\n", argv[1]);
        return 1;
    }
    char *pb = NULL, *text = NULL;
    size_t pb_len = 0;
    if (ck_proto_encode(message, obj, &pb, &pb_len, NULL) < 0)
        return 1;
    if (argc > 4) {
        FILE *f = fopen(argv[4], "wb");
        if (!f || fwrite(pb, 1, pb_len, f) != pb_len || fclose(f) != 0) {
            fprintf(stderr, "%s: cannot write\n", argv[4]);
            return 1;
        }
    }
    text = json_dumps(obj, JSON_COMPACT);
    size_t text_len = strlen(text);
    double *samples[N_OPS];
    for (int op = 0; op < N_OPS; op++)
        samples[op] = calloc((size_t)runs, sizeof(double));
    for (int run = 0; run < runs; run++) {
        for (int op = 0; op < N_OPS; op++) {
            double start = bench_cpu_ns();
            for (int i = 0; i < iterations; i++) {
                char *out = NULL;
                size_t len = 0;
                json_t *back = NULL;
                switch (op) {
                case ENCODE:
                    if (ck_proto_encode(message, obj, &out, &len, NULL) < 0)
                        return 1;
                    break;
                case DECODE:
                    if (ck_proto_decode(message, pb, pb_len, &back, NULL) < 0)
                        return 1;
                    break;
                case DUMP:
                    out = json_dumps(obj, JSON_COMPACT);
                    break;
                default:
                    back = json_loadb(text, text_len, 0, NULL);
                    break;
                }
                free(out);
                json_decref(back);
            }
            samples[op][run] = (bench_cpu_ns() - start) / iterations / 1000.0;
        }
    }
    printf("object: %s (%s), %zu bytes JSON, %zu bytes protobuf; %d runs of %d iterations, "
           "median CPU time per operation\n",
           argv[1], message, text_len, pb_len, runs, iterations);
    double med[N_OPS];
    for (int op = 0; op < N_OPS; op++)
        med[op] = bench_median(samples[op], runs);
    for (int op = 0; op < N_OPS; op++) {
        printf("  %-16s %8.2f us   runs", op_names[op], med[op]);
        for (int run = 0; run < runs; run++)
            printf(" %.2f", samples[op][run]);
        printf("\n");
        free(samples[op]);
    }
    printf("  encode / JSON dump %.2f, decode / JSON parse %.2f\n", med[ENCODE] / med[DUMP],
           med[DECODE] / med[PARSE]);
    free(pb);
    free(text);
    json_decref(obj);
    return 0;
}
