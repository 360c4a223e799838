/*
 * protobuf-c-compare.c - the reference for docs/dependencies.md's protobuf
 * row: protobuf-c (Debian's libprotobuf-c) unpacking and packing the same Pod
 * that bench_protobuf decodes and encodes, from C code protoc-c generated out
 * of Kubernetes' generated.proto. Built and run only by
 * bench/apiserver/protobuf-c-compare.sh, never by the project's build.
 *
 *   protobuf-c-compare POD.pb [ITERATIONS] [RUNS]
 *
 * POD.pb is bench_protobuf's OUT.pb ("k8s\0", runtime.Unknown, the Pod).
 * Reports the median CPU time of unpacking the Pod into protobuf-c's structs
 * (and freeing them) and of packing it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "k8s.io/api/core/v1/generated.pb-c.h"
#include "k8s.io/apimachinery/pkg/runtime/generated.pb-c.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int iterations = argc > 2 ? atoi(argv[2]) : 20000;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    static unsigned char data[1 << 20];
    FILE *f = fopen(argv[1], "rb");
    size_t len = f ? fread(data, 1, sizeof(data), f) : 0;
    if (len < 4 || memcmp(data, "k8s", 4) != 0)
        return 1;
    K8s__Io__Apimachinery__Pkg__Runtime__Unknown *unk =
        k8s__io__apimachinery__pkg__runtime__unknown__unpack(NULL, len - 4, data + 4);
    if (!unk || !unk->has_raw)
        return 1;
    double *unpack = calloc((size_t)runs, sizeof(double)),
           *pack = calloc((size_t)runs, sizeof(double));
    static unsigned char out[1 << 20];
    for (int run = 0; run < runs; run++) {
        double start = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            K8s__Io__Api__Core__V1__Pod *pod =
                k8s__io__api__core__v1__pod__unpack(NULL, unk->raw.len, unk->raw.data);
            if (!pod)
                return 1;
            k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
        }
        unpack[run] = (bench_cpu_ns() - start) / iterations / 1000.0;
        K8s__Io__Api__Core__V1__Pod *pod =
            k8s__io__api__core__v1__pod__unpack(NULL, unk->raw.len, unk->raw.data);
        start = bench_cpu_ns();
        for (int i = 0; i < iterations; i++)
            if (k8s__io__api__core__v1__pod__pack(pod, out) == 0)
                return 1;
        pack[run] = (bench_cpu_ns() - start) / iterations / 1000.0;
        k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    }
    printf("protobuf-c, Pod of %zu bytes: unpack+free %.2f us, pack %.2f us (median of %d runs "
           "of %d)\n",
           unk->raw.len, bench_median(unpack, runs), bench_median(pack, runs), runs, iterations);
    k8s__io__apimachinery__pkg__runtime__unknown__free_unpacked(unk, NULL);
    free(unpack);
    free(pack);
    return 0;
}
