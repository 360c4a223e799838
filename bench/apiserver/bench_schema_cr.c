/*
 * bench_schema_cr.c - the CPU a custom resource's schema work costs per
 * write, beside a built-in kind's, in one process.
 *
 *   build-rel/bench/bench_schema_cr [ROUNDS] [ITERATIONS] [HTTPROUTE-CRD]
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
 *   httproute  the same for a route as the Gateway API's documentation writes
 *              one (two matches, a filter, timeouts, two backends), through
 *              the v1 schema of the Gateway API's HTTPRoute definition
 *              (HTTPROUTE-CRD, default tests/data/gateway-api/httproutes.yaml)
 *   rules      its 74 x-kubernetes-validations rules on that route
 *              (ck_crd_rules_validate(), what a create adds to the schema work)
 *   compile    compiling those rules (ck_crd_rules_new(), once per version
 *              of a definition written or read at start)
 * and prints each beside the reference.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchtime.h"
#include "ckube/api.h"
#include "ckube/rest.h"

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

static const char route[] =
    "{\"apiVersion\":\"gateway.networking.k8s.io/v1\",\"kind\":\"HTTPRoute\",\"metadata\":{"
    "\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"parentRefs\":[{\"name\":\"gw\"}],"
    "\"hostnames\":[\"example.com\"],\"rules\":[{\"matches\":[{\"path\":{\"type\":"
    "\"PathPrefix\",\"value\":\"/api\"},\"headers\":[{\"name\":\"x-env\",\"value\":"
    "\"canary\"}]},{\"path\":{\"type\":\"Exact\",\"value\":\"/healthz\"}}],\"filters\":[{"
    "\"type\":\"RequestHeaderModifier\",\"requestHeaderModifier\":{\"add\":[{\"name\":"
    "\"x-a\",\"value\":\"b\"}]}}],\"timeouts\":{\"request\":\"10s\",\"backendRequest\":"
    "\"2s\"},\"backendRefs\":[{\"name\":\"api\",\"port\":8080,\"weight\":90},{\"name\":"
    "\"api-canary\",\"port\":8080,\"weight\":10}]}]}}";

/*
 * A set of the built-in schemas plus the kind named name of schema kind (taken), as
 * the CRD code builds one.
 */
static struct ck_schemas *kind_set(const struct ck_schemas *builtin, const char *name, json_t *kind)
{
    json_object_set_new(kind, "x-ckube-custom-resource", json_true());
    json_object_set_new(json_object_get(kind, "properties"), "apiVersion",
                        json_pack("{s:s}", "type", "string"));
    json_object_set_new(json_object_get(kind, "properties"), "kind",
                        json_pack("{s:s}", "type", "string"));
    json_object_set_new(
        json_object_get(kind, "properties"), "metadata",
        json_pack("{s:s}", "$ref",
                  "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    json_t *doc = json_pack("{s:o}", name, kind);
    char *all = json_dumps(ck_schemas_all(builtin), JSON_COMPACT);
    char *mine = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    const char *docs[] = {all, mine};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    if (ck_schemas_new(docs, 2, &set, &err) < 0)
        fprintf(stderr, "%s set: %s\n", name, err.msg);
    free(all);
    free(mine);
    return set;
}

/* The CronTab kind's set, with or without its pattern. */
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
    return kind_set(builtin, "com.example.stable.v1.CronTab", kind);
}

/* The openAPIV3Schema of the first version of the definition in the YAML file path. */
static json_t *first_version_schema(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n + 1 > cap && !(text = realloc(text, cap = 2 * (len + n + 1))))
            return NULL;
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    json_t *crd = NULL;
    struct ck_err err = {0};
    if (ck_yaml_to_json(text ? text : "", len, &crd, &err) < 0)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    free(text);
    json_t *schema = json_object_get(
        json_object_get(
            json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0), "schema"),
        "openAPIV3Schema");
    json_incref(schema);
    json_decref(crd);
    return schema;
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
    const char *route_crd = argc > 3 ? argv[3] : "tests/data/gateway-api/httproutes.yaml";
    struct ck_err err = {0};
    struct ck_schemas *builtin = NULL;
    if (ck_api_builtin_schemas(&builtin, &err) < 0)
        return 1;
    struct ck_schemas *with = crontab_set(builtin, true), *without = crontab_set(builtin, false);
    if (!with || !without)
        return 1;
    json_t *schema = json_loads(crontab_schema, 0, NULL);
    json_t *route_schema = first_version_schema(route_crd);
    struct ck_schemas *routes = route_schema
                                    ? kind_set(builtin, "io.k8s.networking.gateway.v1.HTTPRoute",
                                               json_deep_copy(route_schema))
                                    : NULL;
    struct ck_crd_rules *rules = NULL;
    json_t *route_obj = NULL; /* decoded and defaulted, as the rules see it */
    if (!routes ||
        ck_schema_decode(routes, "io.k8s.networking.gateway.v1.HTTPRoute", route, strlen(route),
                         CK_FIELD_VALIDATION_STRICT, &route_obj, NULL, &err) < 0 ||
        ck_crd_rules_new(route_schema, 0, &rules, &err) < 0 || !rules)
        return 1;
    ck_schema_default(routes, "io.k8s.networking.gateway.v1.HTTPRoute", route_obj);

    double *ref = calloc((size_t)rounds, sizeof(double));
    double *cr = calloc((size_t)rounds, sizeof(double));
    double *np = calloc((size_t)rounds, sizeof(double));
    double *check = calloc((size_t)rounds, sizeof(double));
    double *rt = calloc((size_t)rounds, sizeof(double));
    double *rr = calloc((size_t)rounds, sizeof(double));
    double *rc = calloc((size_t)rounds, sizeof(double));
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
        rt[r] = one_round(routes, "io.k8s.networking.gateway.v1.HTTPRoute", route, iterations);
        t0 = bench_cpu_ns();
        for (int i = 0; i < iterations; i++) {
            struct ck_field_errors errs = {0};
            ck_crd_rules_validate(rules, route_obj, NULL, 0, &errs);
            if (errs.len) {
                fprintf(stderr, "route: %s\n", errs.items[0].detail);
                return 1;
            }
            ck_field_errors_release(&errs);
        }
        rr[r] = (bench_cpu_ns() - t0) / iterations;
        int compiles = iterations / 20 + 1;
        t0 = bench_cpu_ns();
        for (int i = 0; i < compiles; i++) {
            struct ck_crd_rules *again = NULL;
            if (ck_crd_rules_new(route_schema, 0, &again, &err) < 0)
                return 1;
            ck_crd_rules_free(again);
        }
        rc[r] = (bench_cpu_ns() - t0) / compiles;
    }
    double mr = bench_median(ref, rounds), mc = bench_median(cr, rounds),
           mn = bench_median(np, rounds), mk = bench_median(check, rounds);
    printf("pod (decode, default, validate):     %.1f us\n", mr / 1e3);
    printf("crontab (decode, default, validate): %.1f us (%.2f x pod)\n", mc / 1e3, mc / mr);
    printf("crontab without its pattern:         %.1f us (%.2f x pod)\n", mn / 1e3, mn / mr);
    printf("ck_crd_schema_check of its schema:   %.1f us (%.2f x pod)\n", mk / 1e3, mk / mr);
    double mt = bench_median(rt, rounds), mu = bench_median(rr, rounds),
           mcomp = bench_median(rc, rounds);
    printf("httproute (decode, default, validate): %.1f us (%.2f x pod)\n", mt / 1e3, mt / mr);
    printf("httproute's 74 CEL rules:              %.1f us (%.2f x its schema work)\n", mu / 1e3,
           mu / mt);
    printf("compiling those rules:                 %.1f us\n", mcomp / 1e3);
    free(ref), free(cr), free(np), free(check), free(rt), free(rr), free(rc);
    ck_crd_rules_free(rules);
    json_decref(route_obj);
    json_decref(route_schema);
    ck_schemas_free(routes);
    json_decref(schema);
    ck_schemas_free(with);
    ck_schemas_free(without);
    ck_schemas_free(builtin);
    return 0;
}
