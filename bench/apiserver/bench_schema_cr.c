/*
 * bench_schema_cr.c - the CPU a custom resource's schema work costs per
 * write, beside a built-in kind's, in one process.
 *
 *   build-rel/bench/bench_schema_cr [ROUNDS] [ITERATIONS]
 *
 * Times per operation (thread CPU, median of ROUNDS rounds of ITERATIONS):
 *   pod        decoding a Pod (one container) against its schema, then
 *              defaulting and validating it: the reference
 *   crontab    the same for Kubernetes' CronTab example custom resource
 *              (cronSpec with a pattern, image, replicas with a default)
 *              through a schema built as a CRD's is (marked
 *              x-ckube-custom-resource, metadata a $ref to ObjectMeta)
 *   crontab-np the same CronTab schema without its pattern
 *   check      ck_crd_schema_check() of the CronTab's openAPIV3Schema (what a
 *              CRD write adds)
 * and prints each beside the reference.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/api.h"

static const char pod[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":"
    "\"default\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"web\","
    "\"image\":\"nginx:1.27\"}]}}";

static const char crontab[] =
    "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":"
    "\"my-new-cron-object\",\"namespace\":\"default\",\"labels\":{\"app\":\"cron\"}},\"spec\":"
    "{\"cronSpec\":\"* * * * */5\",\"image\":\"my-awesome-cron-image\"}}";

/* The openAPIV3Schema of Kubernetes' CronTab example, with a pattern. */
static const char crontab_schema[] =
    "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{"
    "\"cronSpec\":{\"type\":\"string\",\"pattern\":"
    "\"^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+(\\\\d+|\\\\*)(/\\\\d+)?){4}$\"},"
    "\"image\":{\"type\":\"string\"},\"replicas\":{\"type\":\"integer\",\"minimum\":1,"
    "\"maximum\":10,\"default\":1}}}}}";

/* A set of the built-in schemas plus the CronTab kind, as the CRD code builds one. */
static struct ck_schemas *crontab_set(const struct ck_schemas *builtin, bool with_pattern)
{
    json_t *kind = json_loads(crontab_schema, 0, NULL);
    if (!with_pattern)
        json_object_del(
            json_object_get(
                json_object_get(json_object_get(json_object_get(kind, "properties"), "spec"),
                                "properties"),
                "cronSpec"),
            "pattern");
    json_object_set_new(kind, "x-ckube-custom-resource", json_true());
    json_object_set_new(json_object_get(kind, "properties"), "apiVersion",
                        json_pack("{s:s}", "type", "string"));
    json_object_set_new(json_object_get(kind, "properties"), "kind",
                        json_pack("{s:s}", "type", "string"));
    json_object_set_new(
        json_object_get(kind, "properties"), "metadata",
        json_pack("{s:s}", "$ref",
                  "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    json_t *doc = json_pack("{s:o}", "com.example.stable.v1.CronTab", kind);
    char *all = json_dumps(ck_schemas_all(builtin), JSON_COMPACT);
    char *mine = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    const char *docs[] = {all, mine};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    if (ck_schemas_new(docs, 2, &set, &err) < 0)
        fprintf(stderr, "crontab set: %s\n", err.msg);
    free(all);
    free(mine);
    return set;
}

static double one_round(const struct ck_schemas *set, const char *schema, const char *body,
                        int iterations)
{
    struct ck_err err = {0};
    double t0 = bench_cpu_ns();
    for (int i = 0; i < iterations; i++) {
        json_t *decoded = NULL;
        if (ck_schema_decode(set, schema, body, strlen(body), CK_FIELD_VALIDATION_STRICT, &decoded,
                             NULL, &err) < 0) {
            fprintf(stderr, "%s: %s\n", schema, err.msg);
            exit(1);
        }
        ck_schema_default(set, schema, decoded);
        struct ck_field_errors errs = {0};
        ck_schema_validate(set, schema, decoded, &errs);
        if (errs.len) {
            fprintf(stderr, "%s: %zu errors\n", schema, errs.len);
            exit(1);
        }
        ck_field_errors_release(&errs);
        json_decref(decoded);
    }
    return (bench_cpu_ns() - t0) / iterations;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    int iterations = argc > 2 ? atoi(argv[2]) : 2000;
    struct ck_err err = {0};
    struct ck_schemas *builtin = NULL;
    if (ck_api_builtin_schemas(&builtin, &err) < 0)
        return 1;
    struct ck_schemas *with = crontab_set(builtin, true), *without = crontab_set(builtin, false);
    if (!with || !without)
        return 1;
    json_t *schema = json_loads(crontab_schema, 0, NULL);

    double *ref = calloc((size_t)rounds, sizeof(double));
    double *cr = calloc((size_t)rounds, sizeof(double));
    double *np = calloc((size_t)rounds, sizeof(double));
    double *check = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        ref[r] = one_round(builtin, "io.k8s.api.core.v1.Pod", pod, iterations);
        cr[r] = one_round(with, "com.example.stable.v1.CronTab", crontab, iterations);
        np[r] = one_round(without, "com.example.stable.v1.CronTab", crontab, iterations);
        double t0 = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            struct ck_field_errors errs = {0};
            ck_crd_schema_check(schema, "spec.versions[0].schema.openAPIV3Schema", &errs);
            if (errs.len)
                return 1;
            ck_field_errors_release(&errs);
        }
        check[r] = (bench_cpu_ns() - t0) / iterations;
    }
    double mr = bench_median(ref, rounds), mc = bench_median(cr, rounds),
           mn = bench_median(np, rounds), mk = bench_median(check, rounds);
    printf("pod (decode, default, validate):     %.1f us\n", mr / 1e3);
    printf("crontab (decode, default, validate): %.1f us (%.2f x pod)\n", mc / 1e3, mc / mr);
    printf("crontab without its pattern:         %.1f us (%.2f x pod)\n", mn / 1e3, mn / mr);
    printf("ck_crd_schema_check of its schema:   %.1f us (%.2f x pod)\n", mk / 1e3, mk / mr);
    free(ref), free(cr), free(np), free(check);
    json_decref(schema);
    ck_schemas_free(with);
    ck_schemas_free(without);
    ck_schemas_free(builtin);
    return 0;
}
