/*
 * test_protobuf.c - tests for lib/api/protobuf.c, Kubernetes' protobuf wire
 * format driven by the field numbers of lib/api/protobuf/fields.json.
 *
 * Every sample object of tests/api/data (argv[1]) goes JSON -> protobuf ->
 * JSON and comes back equal, up to the zero values of non-pointer fields
 * that Go's JSON leaves out; bytes Kubernetes would send (kubectl's
 * `create namespace` body, captured from kubectl 1.32, and hand-assembled
 * messages for the special types) decode to the JSON Kubernetes serves;
 * bad input is a 400, never a crash; running out of memory anywhere
 * (building the message table included) is CK_ENOMEM and leaves nothing.
 */
#include "cktest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

static const char *data_dir;

#define POD        "io.k8s.api.core.v1.Pod"
#define DEPLOYMENT "io.k8s.api.apps.v1.Deployment"

/* True when got is want without some of want's zero scalars, empty arrays and maps. */
static bool equal_but_zeros(const json_t *want, const json_t *got, const char *path)
{
    if (json_is_object(want) && json_is_object(got)) {
        const char *key;
        json_t *w;
        json_object_foreach((json_t *)want, key, w)
        {
            json_t *g = json_object_get(got, key);
            if (!g) {
                bool zero = (json_is_integer(w) && json_integer_value(w) == 0) ||
                            json_is_false(w) || (json_is_string(w) && json_string_length(w) == 0) ||
                            (json_is_array(w) && json_array_size(w) == 0) || json_is_null(w);
                if (!zero) {
                    print_error("%s.%s: lost\n", path, key);
                    return false;
                }
                continue;
            }
            char sub[512];
            snprintf(sub, sizeof(sub), "%s.%s", path, key);
            if (!equal_but_zeros(w, g, sub))
                return false;
        }
        json_object_foreach((json_t *)got, key, w)
        {
            if (!json_object_get(want, key)) {
                print_error("%s.%s: appeared\n", path, key);
                return false;
            }
        }
        return true;
    }
    if (json_is_array(want) && json_is_array(got)) {
        if (json_array_size(want) != json_array_size(got)) {
            print_error("%s: %zu elements, want %zu\n", path, json_array_size(got),
                        json_array_size(want));
            return false;
        }
        for (size_t i = 0; i < json_array_size(want); i++) {
            char sub[512];
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            if (!equal_but_zeros(json_array_get(want, i), json_array_get(got, i), sub))
                return false;
        }
        return true;
    }
    if (json_is_number(want) && json_is_string(got)) {
        /* a Quantity written as a JSON number comes back as its string */
        char text[64];
        snprintf(text, sizeof(text), "%.15g", json_number_value(want));
        if (strcmp(text, json_string_value(got)) == 0)
            return true;
    }
    if (!json_equal(want, got)) {
        char *w = json_dumps(want, JSON_ENCODE_ANY), *g = json_dumps(got, JSON_ENCODE_ANY);
        print_error("%s: %s, want %s\n", path, g, w);
        free(w);
        free(g);
        return false;
    }
    return true;
}

static json_t *roundtrip(const char *message, const json_t *obj, char **ret_bytes, size_t *ret_len)
{
    struct ck_err err = {0};
    char *bytes = NULL;
    size_t len = 0;
    if (ck_proto_encode(message, obj, &bytes, &len, &err) < 0)
        fail_msg("%s: encode: %s", message, ck_err_message(&err));
    assert_true(len > 4);
    assert_memory_equal(bytes, "k8s\0", 4);
    json_t *back = NULL;
    if (ck_proto_decode(message, bytes, len, &back, &err) < 0)
        fail_msg("%s: decode: %s", message, ck_err_message(&err));
    if (ret_bytes) {
        *ret_bytes = bytes;
        *ret_len = len;
    } else {
        free(bytes);
    }
    return back;
}

/* The message of a sample object, from its apiVersion and kind. */
static bool message_of(const json_t *obj, char *buf, size_t size)
{
    const char *api_version = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (!api_version || !kind)
        return false;
    char group[128] = "";
    const char *version = api_version;
    const char *slash = strchr(api_version, '/');
    if (slash) {
        snprintf(group, sizeof(group), "%.*s", (int)(slash - api_version), api_version);
        version = slash + 1;
    }
    return ck_proto_message_name(group, version, kind, buf, size) == 0 && ck_proto_has_message(buf);
}

/* A protobuf operation under test: 0 with *ret_bytes or *ret_json, or CK_ENOMEM with nothing. */
struct op {
    const char *name;
    int (*run)(const struct op *op, char **ret_bytes, size_t *ret_len, json_t **ret_json,
               struct ck_err *err);
    const json_t *obj;
    const char *bytes;
    size_t len;
};

static int run_encode(const struct op *op, char **ret_bytes, size_t *ret_len, json_t **ret_json,
                      struct ck_err *err)
{
    (void)ret_json;
    return ck_proto_encode(DEPLOYMENT, op->obj, ret_bytes, ret_len, err);
}

static int run_watch(const struct op *op, char **ret_bytes, size_t *ret_len, json_t **ret_json,
                     struct ck_err *err)
{
    (void)ret_json;
    return ck_proto_encode_watch_event(DEPLOYMENT, "MODIFIED", op->obj, ret_bytes, ret_len, err);
}

static int run_encode_secret(const struct op *op, char **ret_bytes, size_t *ret_len,
                             json_t **ret_json, struct ck_err *err)
{
    (void)ret_json;
    return ck_proto_encode("io.k8s.api.core.v1.Secret", op->obj, ret_bytes, ret_len, err);
}

static int run_decode_secret(const struct op *op, char **ret_bytes, size_t *ret_len,
                             json_t **ret_json, struct ck_err *err)
{
    (void)ret_bytes;
    (void)ret_len;
    return ck_proto_decode("io.k8s.api.core.v1.Secret", op->bytes, op->len, ret_json, err);
}

/* two encoded objects for run_list, made before the fault loop (their kind does not matter to the
 * assembly) */
static char *list_items[2];
static size_t list_item_lens[2];

static int run_list(const struct op *op, char **ret_bytes, size_t *ret_len, json_t **ret_json,
                    struct ck_err *err)
{
    (void)ret_json;
    return ck_proto_encode_list("io.k8s.api.core.v1.PodList", "v1", "PodList", op->obj,
                                (const char *const *)list_items, list_item_lens, 2, ret_bytes,
                                ret_len, err);
}

static int run_decode(const struct op *op, char **ret_bytes, size_t *ret_len, json_t **ret_json,
                      struct ck_err *err)
{
    (void)ret_bytes;
    (void)ret_len;
    return ck_proto_decode(DEPLOYMENT, op->bytes, op->len, ret_json, err);
}

/*
 * Fails allocation 1, 2, ... of op until it gets by: each failure is CK_ENOMEM with a 500
 * and no output (LeakSanitizer checks nothing is left behind), and the success is the
 * answer op gives with memory to spare. Run first, it also fails the message table's
 * construction, which must be tried again on the next call.
 */
static void faultsim(const struct op *op)
{
    unsigned long n;
    char *bytes = NULL;
    size_t len = 0;
    json_t *json = NULL;
    for (n = 1; n < 100000; n++) {
        struct ck_err err = {0};
        ck__alloc_fail_at(n, false);
        int r = op->run(op, &bytes, &len, &json, &err);
        ck__alloc_fail_at(0, false);
        if (r == 0)
            break;
        if (r != CK_ENOMEM || err.http_status != 500)
            fail_msg("%s, allocation %lu failed: answered %d (%d %s)", op->name, n, r,
                     err.http_status, ck_err_message(&err));
        assert_null(bytes);
        assert_null(json);
        ck_err_release(&err);
    }
    assert_true(n > 1); /* it allocates, so some allocation failed */
    char *want_bytes = NULL;
    size_t want_len = 0;
    json_t *want_json = NULL;
    assert_int_equal(op->run(op, &want_bytes, &want_len, &want_json, NULL), 0);
    assert_int_equal(len, want_len);
    if (bytes)
        assert_memory_equal(bytes, want_bytes, len);
    assert_true(json_equal(json, want_json) || (!json && !want_json));
    free(bytes);
    free(want_bytes);
    json_decref(json);
    json_decref(want_json);
}

static void test_allocation_failures(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/kubectl-create-deployment.pb", data_dir);
    char *body = NULL;
    size_t body_len = 0;
    assert_int_equal(ck__read_file(path, 1 << 20, &body, &body_len), 0);
    snprintf(path, sizeof(path), "%s/deployment-full.json", data_dir);
    char *text = NULL;
    size_t text_len = 0;
    assert_int_equal(ck__read_file(path, 1 << 20, &text, &text_len), 0);
    json_t *obj = json_loadb(text, text_len, 0, NULL);
    assert_non_null(obj);
    json_t *secret = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                                "{\"name\":\"s\",\"creationTimestamp\":\"2024-01-02T03:04:05Z\"},"
                                "\"data\":{\"a\":\"aGVsbG8=\",\"b\":\"\"},\"type\":\"Opaque\"}",
                                0, NULL);
    char *secret_bytes = NULL;
    size_t secret_len = 0;
    assert_non_null(secret);
    struct op ops[] = {
        {"encode", run_encode, obj, NULL, 0},
        {"decode", run_decode, NULL, body, body_len},
        {"watch event", run_watch, obj, NULL, 0},
        {"encode a Secret", run_encode_secret, secret, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        faultsim(&ops[i]);
    json_t *list_meta = json_pack("{s:s, s:s}", "resourceVersion", "12", "continue", "next");
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(ck_proto_encode(DEPLOYMENT, obj, &list_items[i], &list_item_lens[i], NULL),
                         0);
    struct op list_op = {"a list of encoded objects", run_list, list_meta, NULL, 0};
    faultsim(&list_op);
    for (size_t i = 0; i < 2; i++)
        free(list_items[i]);
    json_decref(list_meta);
    assert_int_equal(
        ck_proto_encode("io.k8s.api.core.v1.Secret", secret, &secret_bytes, &secret_len, NULL), 0);
    struct op decode_secret = {"decode a Secret", run_decode_secret, NULL, secret_bytes,
                               secret_len};
    faultsim(&decode_secret);
    free(secret_bytes);
    json_decref(secret);
    json_decref(obj);
    free(text);
    free(body);
}

static void test_every_sample_object_round_trips(void **state)
{
    (void)state;
    struct ck_schemas *schemas = NULL;
    assert_int_equal(ck_api_builtin_schemas(&schemas, NULL), 0);
    DIR *dir = opendir(data_dir);
    if (!dir)
        fail_msg("cannot open %s", data_dir);
    struct dirent *de;
    int tested = 0;
    const struct ck_kind *const *kinds = NULL;
    size_t n_kinds = 0;
    kinds = ck_kinds(&n_kinds);
    bool *kind_seen = calloc(n_kinds + 1, sizeof(bool));
    while ((de = readdir(dir))) {
        if (!strstr(de->d_name, ".json"))
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", data_dir, de->d_name);
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(ck__read_file(path, 1 << 20, &text, &len), 0);
        json_t *raw = json_loadb(text, len, 0, NULL);
        char message[256];
        json_t *obj = NULL;
        /* only the objects the schema takes (the others are samples of refusals) */
        if (!raw || !message_of(raw, message, sizeof(message)) ||
            ck_schema_decode(schemas, message, text, len, CK_FIELD_VALIDATION_STRICT, &obj, NULL,
                             NULL) < 0) {
            json_decref(raw);
            free(text);
            continue;
        }
        ck_schema_default(schemas, message, obj);
        char *first = NULL, *second = NULL;
        size_t first_len = 0, second_len = 0;
        json_t *back = roundtrip(message, obj, &first, &first_len);
        if (!equal_but_zeros(obj, back, de->d_name))
            fail_msg("%s does not round-trip", de->d_name);
        /* and the decoded form encodes to itself */
        json_t *again = roundtrip(message, back, &second, &second_len);
        assert_true(json_equal(back, again));
        json_decref(roundtrip(message, again, NULL, NULL));
        for (size_t k = 0; k < n_kinds; k++)
            if (strcmp(kinds[k]->schema, message) == 0)
                kind_seen[k] = true;
        tested++;
        free(first);
        free(second);
        json_decref(again);
        json_decref(back);
        json_decref(obj);
        json_decref(raw);
        free(text);
    }
    closedir(dir);
    assert_true(tested >= 10);
    /* every kind with a protobuf message has a sample that went through */
    for (size_t k = 0; k < n_kinds; k++)
        if (ck_proto_has_message(kinds[k]->schema) && !kind_seen[k])
            fail_msg("no sample object of %s in %s", kinds[k]->kind, data_dir);
    free(kind_seen);
    ck_schemas_free(schemas);
}

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v)
        fail_msg("test JSON: %s: %s", text, jerr.text);
    return v;
}

static void expect_roundtrip(const char *message, const char *text, const char *want_text)
{
    json_t *obj = parse(text), *want = parse(want_text ? want_text : text);
    json_t *back = roundtrip(message, obj, NULL, NULL);
    if (!json_equal(back, want)) {
        char *got = json_dumps(back, JSON_PRESERVE_ORDER);
        fail_msg("%s: got %s, want %s", message, got, want_text ? want_text : text);
    }
    json_decref(obj);
    json_decref(want);
    json_decref(back);
}

static void test_special_types(void **state)
{
    (void)state;
    /* Time, MicroTime, IntOrString both ways, Quantity, FieldsV1, maps */
    expect_roundtrip(
        DEPLOYMENT,
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"creationTimestamp\":\"2024-05-06T07:08:09Z\",\"labels\":{\"b\":\"2\",\"a\":\"1\"},"
        "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsType\":\"FieldsV1\","
        "\"fieldsV1\":{\"f:spec\":{\"f:replicas\":{}}}}]},"
        "\"spec\":{\"replicas\":0,\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
        "{\"maxSurge\":\"25%\",\"maxUnavailable\":1}},\"template\":{\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"nginx\",\"resources\":{\"limits\":{\"cpu\":\"500m\","
        "\"memory\":\"1Gi\"}}}]}}}}",
        NULL);
    expect_roundtrip("io.k8s.api.core.v1.Event",
                     "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\"},"
                     "\"involvedObject\":{\"kind\":\"Pod\"},\"count\":3,"
                     "\"eventTime\":\"2024-05-06T07:08:09.123456Z\"}",
                     NULL);
    /* a zero Time is null in Go's JSON: left out */
    expect_roundtrip("io.k8s.api.core.v1.Namespace",
                     "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"n\","
                     "\"creationTimestamp\":\"1970-01-01T00:00:00Z\"},\"spec\":{}}",
                     "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"n\"},"
                     "\"spec\":{}}");
}

static void test_named_slices_are_arrays(void **state)
{
    (void)state;
    /* authentication/v1 ExtraValue is `type ExtraValue []string`: {repeated items = 1} */
    expect_roundtrip("io.k8s.api.authentication.v1.TokenReview",
                     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                     "\"metadata\":{},\"spec\":{\"token\":\"t\"},\"status\":{\"authenticated\":"
                     "true,\"user\":{\"username\":\"u\",\"groups\":[\"g\"],\"extra\":{\"scopes\":"
                     "[\"a\",\"b\"],\"none\":[]}}}}",
                     NULL);
    struct ck_err err = {0};
    char *bytes = NULL;
    size_t len = 0;
    json_t *bad = parse("{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                        "\"status\":{\"user\":{\"extra\":{\"scopes\":\"a\"}}}}");
    assert_true(
        ck_proto_encode("io.k8s.api.authentication.v1.TokenReview", bad, &bytes, &len, &err) < 0);
    assert_int_equal(err.http_status, 400);
    ck_err_release(&err);
    json_decref(bad);
}

/* Groups of kinds about to be served are in the data already. */
static void test_other_groups(void **state)
{
    (void)state;
    expect_roundtrip(
        "io.k8s.api.batch.v1.CronJob",
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"c\"},"
        "\"spec\":{\"schedule\":\"*/1 * * * *\",\"jobTemplate\":{\"metadata\":{\"name\":\"c\"},"
        "\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
        "\"image\":\"busybox\"}],\"restartPolicy\":\"OnFailure\"}}}}}}",
        NULL);
    expect_roundtrip("io.k8s.api.coordination.v1.Lease",
                     "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
                     "{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"me\",\"leaseDurationSeconds\""
                     ":15,\"renewTime\":\"2024-01-02T03:04:05.123456Z\",\"leaseTransitions\":0}}",
                     NULL);
    expect_roundtrip("io.k8s.api.discovery.v1.EndpointSlice",
                     "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
                     "\"metadata\":{\"name\":\"e\"},\"addressType\":\"IPv4\",\"endpoints\":"
                     "[{\"addresses\":[\"10.0.0.1\"],\"conditions\":{\"ready\":true}}],"
                     "\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\"}]}",
                     NULL);
}

static void test_pointer_zero_kept_other_zeros_dropped(void **state)
{
    (void)state;
    /* replicas is *int32 (0 means 0); paused and minReadySeconds are not pointers */
    expect_roundtrip(DEPLOYMENT,
                     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{},"
                     "\"spec\":{\"replicas\":0,\"paused\":false,\"minReadySeconds\":0,"
                     "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"stdin\":false,"
                     "\"image\":\"\"}]}}}}",
                     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{},"
                     "\"spec\":{\"replicas\":0,\"template\":{\"spec\":{\"containers\":"
                     "[{\"name\":\"c\"}]}}}}");
}

static void test_inline_fields_stay_inline(void **state)
{
    (void)state;
    /* Volume's VolumeSource and Probe's ProbeHandler are nested on the wire, inline in JSON */
    expect_roundtrip(
        POD,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{\"sizeLimit\":\"1Gi\"}},{\"name\":\"s\","
        "\"secret\":{\"secretName\":\"x\",\"defaultMode\":420}}],\"containers\":[{\"name\":\"c\","
        "\"env\":[{\"name\":\"E\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"x\",\"key\":\"k\"}}}],"
        "\"readinessProbe\":{\"httpGet\":{\"path\":\"/\",\"port\":\"http\"},"
        "\"periodSeconds\":5}}]}}",
        NULL);
    /* EphemeralContainer inlines EphemeralContainerCommon, whose Go tag has no name */
    expect_roundtrip(POD,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                     "\"spec\":{\"containers\":[{\"name\":\"c\"}],\"ephemeralContainers\":"
                     "[{\"name\":\"debug\",\"image\":\"busybox\",\"stdin\":true,"
                     "\"targetContainerName\":\"c\"}]}}",
                     NULL);
}

static void test_bytes_are_base64(void **state)
{
    (void)state;
    expect_roundtrip("io.k8s.api.core.v1.Secret",
                     "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},"
                     "\"data\":{\"k\":\"aGVsbG8=\",\"empty\":\"\"},\"type\":\"Opaque\"}",
                     NULL);
    expect_roundtrip("io.k8s.api.core.v1.ConfigMap",
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                     "\"data\":{\"a\":\"x\"},\"binaryData\":{\"b\":\"AAEC\"}}",
                     NULL);
}

/* The JSON Kubernetes makes of a body kubectl 1.32 sent (tests/api/data/<file>). */
static void expect_kubectl_body(const char *file, const char *message, const char *want_text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", data_dir, file);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(ck__read_file(path, 1 << 20, &bytes, &len), 0);
    json_t *obj = NULL;
    struct ck_err err = {0};
    if (ck_proto_decode(message, bytes, len, &obj, &err) < 0)
        fail_msg("%s: %s", file, ck_err_message(&err));
    json_t *want = parse(want_text);
    char *got = json_dumps(obj, JSON_PRESERVE_ORDER | JSON_COMPACT);
    if (!json_equal(obj, want))
        fail_msg("%s: got %s", file, got);
    /* apiVersion and kind lead, as in JSON */
    assert_true(strncmp(got, "{\"apiVersion\":", 14) == 0);
    free(got);
    json_decref(want);
    json_decref(obj);
    free(bytes);
}

static void test_decodes_what_kubectl_sends(void **state)
{
    (void)state;
    /* every non-pointer field is on the wire, zero or not; zero Times are empty messages */
    expect_kubectl_body("kubectl-create-namespace.pb", "io.k8s.api.core.v1.Namespace",
                        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                        "\"metadata\":{\"name\":\"foo\"},\"spec\":{},\"status\":{}}");
    expect_kubectl_body(
        "kubectl-create-deployment.pb", DEPLOYMENT,
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"labels\":{\"app\":\"web\"}},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":"
        "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\",\"resources\":{}}]}},"
        "\"strategy\":{}},\"status\":{}}");
}

static void test_watch_event_frame(void **state)
{
    (void)state;
    json_t *pod = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                        "\"resourceVersion\":\"7\"}}");
    char *frame = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    assert_int_equal(ck_proto_encode_watch_event(POD, "ADDED", pod, &frame, &len, &err), 0);
    assert_true(len > 4);
    size_t n = ((size_t)(unsigned char)frame[0] << 24) | ((size_t)(unsigned char)frame[1] << 16) |
               ((size_t)(unsigned char)frame[2] << 8) | (size_t)(unsigned char)frame[3];
    assert_int_equal(n, len - 4); /* the big-endian length of the rest */
    json_t *event = NULL;
    assert_int_equal(ck_proto_decode_watch_event(POD, frame + 4, len - 4, &event, &err), 0);
    json_t *want = json_pack("{s:s, s:O}", "type", "ADDED", "object", pod);
    assert_true(json_equal(event, want));
    json_decref(want);
    json_decref(event);
    free(frame);
    json_decref(pod);
}

/* A list assembled from encoded items is the list encoded whole; a frame around an encoding too. */
static void test_list_and_frame_from_encoded_objects(void **state)
{
    (void)state;
    json_t *list = parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\","
        "\"continue\":\"abc\"},\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
        "{\"name\":\"a\"}},{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\","
        "\"labels\":{\"x\":\"y\"}},\"spec\":{\"nodeName\":\"n\"}}]}");
    char *whole = NULL, *items[2] = {NULL, NULL}, *assembled = NULL;
    size_t whole_len = 0, lens[2] = {0, 0}, assembled_len = 0;
    assert_int_equal(ck_proto_encode("io.k8s.api.core.v1.PodList", list, &whole, &whole_len, NULL),
                     0);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(ck_proto_encode(POD, json_array_get(json_object_get(list, "items"), i),
                                         &items[i], &lens[i], NULL),
                         0);
    assert_int_equal(ck_proto_encode_list("io.k8s.api.core.v1.PodList", "v1", "PodList",
                                          json_object_get(list, "metadata"),
                                          (const char *const *)items, lens, 2, &assembled,
                                          &assembled_len, NULL),
                     0);
    assert_int_equal(assembled_len, whole_len);
    assert_memory_equal(assembled, whole, whole_len);
    json_t *back = NULL;
    assert_int_equal(
        ck_proto_decode("io.k8s.api.core.v1.PodList", assembled, assembled_len, &back, NULL), 0);
    /* items carry no typeMeta on the wire: they come back without apiVersion and kind */
    json_t *want = json_deep_copy(list);
    for (size_t i = 0; i < 2; i++) {
        json_object_del(json_array_get(json_object_get(want, "items"), i), "apiVersion");
        json_object_del(json_array_get(json_object_get(want, "items"), i), "kind");
    }
    assert_true(json_equal(back, want));
    json_decref(want);
    json_decref(back);

    /* unwrap gives the message inside the envelope; a frame around an encoding is the event's */
    const void *raw = NULL;
    size_t raw_len = 0;
    assert_int_equal(ck_proto_unwrap(items[0], lens[0], &raw, &raw_len, NULL), 0);
    assert_true(raw_len > 0 && raw_len < lens[0]);
    char *frame = NULL, *event = NULL;
    size_t frame_len = 0, event_len = 0;
    assert_int_equal(ck_proto_watch_frame("ADDED", items[0], lens[0], &frame, &frame_len, NULL), 0);
    assert_int_equal(ck_proto_encode_watch_event(POD, "ADDED",
                                                 json_array_get(json_object_get(list, "items"), 0),
                                                 &event, &event_len, NULL),
                     0);
    assert_int_equal(frame_len, event_len);
    assert_memory_equal(frame, event, event_len);
    /* not a list message, and an item that is not an encoding */
    struct ck_err err = {0};
    assert_true(ck_proto_encode_list(POD, "v1", "Pod", NULL, NULL, NULL, 0, &assembled,
                                     &assembled_len, &err) < 0);
    ck_err_release(&err);
    const char *junk[] = {"{}"};
    size_t junk_len[] = {2};
    char *none = NULL;
    size_t none_len = 0;
    assert_true(ck_proto_encode_list("io.k8s.api.core.v1.PodList", "v1", "PodList", NULL, junk,
                                     junk_len, 1, &none, &none_len, &err) < 0);
    assert_int_equal(err.http_status, 400);
    assert_null(none);
    ck_err_release(&err);
    free(frame);
    free(event);
    free(assembled);
    free(whole);
    free(items[0]);
    free(items[1]);
    json_decref(list);
}

static void expect_bad(const char *message, const void *data, size_t len, const char *words)
{
    json_t *obj = NULL;
    struct ck_err err = {0};
    int r = ck_proto_decode(message, data, len, &obj, &err);
    if (r != CK_EINVAL || err.http_status != 400 || !strstr(ck_err_message(&err), words))
        fail_msg("%zu bytes: answered %d %d %s; want 400 with \"%s\"", len, r, err.http_status,
                 ck_err_message(&err), words);
    assert_null(obj);
    ck_err_release(&err);
}

static void test_bad_input_is_a_400(void **state)
{
    (void)state;
    expect_bad(POD, "{}", 2, "expected prefix");
    expect_bad(POD, "k8s", 3, "expected prefix");
    /* truncated envelope, length past the end, a group wire type */
    expect_bad(POD, "k8s\0\x0a", 5, "malformed");
    expect_bad(POD, "k8s\0\x12\x05\x0a", 7, "malformed");
    expect_bad(POD, "k8s\0\x12\x01\x0b", 7, "malformed");
    /* metadata.name not UTF-8 */
    static const unsigned char bad_utf8[] = {'k',  '8',  's',  0,    0x12, 0x05,
                                             0x0a, 0x03, 0x0a, 0x01, 0xff};
    expect_bad(POD, bad_utf8, sizeof(bad_utf8), "UTF-8");
    /* a varint longer than ten bytes */
    static const unsigned char long_varint[] = {'k',  '8',  's',  0,    0x12, 0x0b,
                                                0x38, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                0xff, 0xff, 0xff, 0xff, 0xff};
    expect_bad(POD, long_varint, sizeof(long_varint), "malformed");
}

static void test_expect_bad_empty_object_ok(void **state)
{
    (void)state;
    /* an empty metadata message is a valid Pod: decodes to {metadata: {}} */
    json_t *obj = NULL;
    assert_int_equal(ck_proto_decode(POD, "k8s\0\x12\x02\x0a\x00", 8, &obj, NULL), 0);
    assert_true(json_is_object(json_object_get(obj, "metadata")));
    json_decref(obj);
}

static void test_unknown_message(void **state)
{
    (void)state;
    struct ck_err err = {0};
    char *bytes = NULL;
    size_t len = 0;
    json_t *obj = json_object();
    assert_false(ck_proto_has_message("io.ckube.example.v1.Frobber"));
    assert_true(ck_proto_encode("io.ckube.example.v1.Frobber", obj, &bytes, &len, &err) < 0);
    assert_int_equal(err.http_status, 406);
    json_decref(obj);
    char name[128];
    assert_int_equal(
        ck_proto_message_name("rbac.authorization.k8s.io", "v1", "Role", name, sizeof(name)), 0);
    assert_string_equal(name, "io.k8s.api.rbac.v1.Role");
    assert_true(ck_proto_has_message(name));
    assert_int_equal(ck_proto_message_name("meta.k8s.io", "v1", "Status", name, sizeof(name)), 0);
    assert_true(ck_proto_has_message(name));
}

int main(int argc, char **argv)
{
    data_dir = argc > 1 ? argv[1] : "tests/api/data";
    json_set_alloc_funcs(ck__malloc, free); /* jansson's allocations reach the failure hook */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocation_failures), /* first: the table is not built yet */
        cmocka_unit_test(test_every_sample_object_round_trips),
        cmocka_unit_test(test_special_types),
        cmocka_unit_test(test_pointer_zero_kept_other_zeros_dropped),
        cmocka_unit_test(test_named_slices_are_arrays),
        cmocka_unit_test(test_other_groups),
        cmocka_unit_test(test_inline_fields_stay_inline),
        cmocka_unit_test(test_bytes_are_base64),
        cmocka_unit_test(test_decodes_what_kubectl_sends),
        cmocka_unit_test(test_watch_event_frame),
        cmocka_unit_test(test_list_and_frame_from_encoded_objects),
        cmocka_unit_test(test_bad_input_is_a_400),
        cmocka_unit_test(test_expect_bad_empty_object_ok),
        cmocka_unit_test(test_unknown_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
