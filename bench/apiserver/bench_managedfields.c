/*
 * bench_managedfields.c - the CPU one update's managedFields bookkeeping
 * costs, beside the work every update does anyway, in one process.
 *
 *   build-rel/bench/bench_managedfields [ROUNDS] [ITERATIONS]
 *
 * On the Deployment of managedfields_ab.py (two containers, eight env vars)
 * carrying the managedFields a create and a label change leave, it times per
 * operation (thread CPU, median of ROUNDS rounds of ITERATIONS each):
 *   reference  decoding the patched Deployment against its schema, then
 *              defaulting and validating it (what the registry does on every
 *              update, with or without managedFields)
 *   track      ck_managed_fields_track_update() for a label change
 *   apply      ck_apply() of the Deployment's manifest with one label changed
 * and prints each beside the reference.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/api.h"

static const char deployment[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"namespace\":\"default\",\"labels\":{\"app\":\"web\",\"round\":\"0\"}},\"spec\":{"
    "\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":"
    "{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":"
    "\"nginx:1.27\",\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":\"E0\",\"value\":"
    "\"0\"},{\"name\":\"E1\",\"value\":\"1\"},{\"name\":\"E2\",\"value\":\"2\"},{\"name\":"
    "\"E3\",\"value\":\"3\"},{\"name\":\"E4\",\"value\":\"4\"},{\"name\":\"E5\",\"value\":"
    "\"5\"},{\"name\":\"E6\",\"value\":\"6\"},{\"name\":\"E7\",\"value\":\"7\"}],\"resources\":"
    "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}},{\"name\":\"sidecar\",\"image\":"
    "\"envoy:1.30\",\"ports\":[{\"containerPort\":9901}]}]}}}}";

static struct ck_schemas *schemas;
static const struct ck_kind *kind;

static json_t *with_label(const json_t *obj, int i)
{
    json_t *next = json_deep_copy(obj);
    char v[32];
    snprintf(v, sizeof(v), "r%d", i);
    json_object_set_new(json_object_get(json_object_get(next, "metadata"), "labels"), "round",
                        json_string(v));
    return next;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    int iterations = argc > 2 ? atoi(argv[2]) : 2000;
    struct ck_err err = {0};
    if (ck_api_builtin_schemas(&schemas, &err) < 0 ||
        !(kind = ck_kind_lookup("apps", "v1", "deployments")))
        return 1;
    json_t *obj = json_loads(deployment, 0, NULL);
    ck_schema_default(schemas, kind->schema, obj);
    struct ck_field_manager creator = {"kubectl-create", NULL, 1000};
    ck_managed_fields_track_update(schemas, kind, NULL, obj, NULL, &creator);
    json_t *labelled = with_label(obj, 0);
    struct ck_field_manager labeller = {"kubectl-label", NULL, 2000};
    ck_managed_fields_track_update(schemas, kind, obj, labelled, NULL, &labeller);
    json_decref(obj);
    obj = labelled; /* the stored object: two Update entries */
    char *text = json_dumps(obj, JSON_COMPACT);
    printf("object: %zu bytes with managedFields\n", strlen(text));

    double *ref = calloc((size_t)rounds, sizeof(double));
    double *track = calloc((size_t)rounds, sizeof(double));
    double *apply = calloc((size_t)rounds, sizeof(double));
    json_t *config = json_loads(deployment, 0, NULL);
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            json_t *decoded = NULL;
            ck_schema_decode(schemas, kind->schema, text, strlen(text), CK_FIELD_VALIDATION_STRICT,
                             &decoded, NULL, &err);
            ck_schema_default(schemas, kind->schema, decoded);
            struct ck_field_errors errs = {0};
            ck_schema_validate(schemas, kind->schema, decoded, &errs);
            ck_field_errors_release(&errs);
            json_decref(decoded);
        }
        ref[r] = (bench_cpu_ns() - t0) / iterations;
        t0 = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            json_t *next = with_label(obj, i + 1);
            ck_managed_fields_track_update(schemas, kind, obj, next, NULL, &labeller);
            json_decref(next);
        }
        track[r] = (bench_cpu_ns() - t0) / iterations;
        t0 = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            json_t *cfg = with_label(config, i + 1);
            struct ck_field_manager who = {"bench", NULL, 3000};
            json_t *out = NULL;
            ck_apply(schemas, kind, obj, cfg, &who, true, &out, &err);
            json_decref(out);
            json_decref(cfg);
        }
        apply[r] = (bench_cpu_ns() - t0) / iterations;
    }
    double mr = bench_median(ref, rounds), mt = bench_median(track, rounds),
           ma = bench_median(apply, rounds);
    printf("reference (decode, default, validate): %.1f us\n", mr / 1e3);
    printf("track an Update (label change):        %.1f us (%.2f x reference)\n", mt / 1e3,
           mt / mr);
    printf("apply (label change, forced):          %.1f us (%.2f x reference)\n", ma / 1e3,
           ma / mr);
    free(ref), free(track), free(apply), free(text);
    json_decref(config);
    json_decref(obj);
    ck_schemas_free(schemas);
    return 0;
}
