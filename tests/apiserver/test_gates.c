/*
 * test_gates.c - the feature-gated fields of the Frobber example and of
 * pods (PodLevelResources) through a real server, with the gates given by
 * the server's configuration: every case with the gate on and off, and
 * objects written under one setting read and updated after a restart of the
 * server on the same store under the other.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "httptest.h"

static char dir[] = "/tmp/ckube-test-gates-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define FROBBERS "/apis/example.ckube.io/v1/namespaces/default/frobbers"

/* The gate of the running server (NULL: the server's own defaults). */
static struct ck_fg_gate *gate;

/* (Re)starts the server on the test's store with the three API gates all on or all off. */
static void restart(bool on)
{
    ck_apiserver_free(server);
    server = NULL;
    gate = ck_fg_gate_free(gate);
    struct ck_err err = {0};
    struct ck_fg_err fgerr = {0};
    assert_int_equal(ck_apiserver_feature_gate_new(NULL, &gate, &err), 0);
    assert_int_equal(ck_fg_set(gate,
                               on ? "Frobber2D=true,FrobberRestartPolicyOnTuesday=true,"
                                    "PodLevelResources=true"
                                  : "Frobber2D=false,FrobberRestartPolicyOnTuesday=false,"
                                    "PodLevelResources=false",
                               &fgerr),
                     0);
    ck_fg_close(gate);
    char store[256];
    snprintf(store, sizeof(store), "sqlite://%s/state.db", dir);
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store,
                                         .feature_gates = gate};
    if (ck_apiserver_start(&config, &server, &err) < 0)
        fail_msg("start: %s", err.msg);
}

static int teardown(void **state)
{
    int r = apitest_teardown(state);
    gate = ck_fg_gate_free(gate); /* after the server that borrowed it */
    return r;
}

static void create_frobber(const char *name, const char *spec, long want)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"example.ckube.io/v1\",\"kind\":\"Frobber\",\"metadata\":{\"name\":"
             "\"%s\"},\"spec\":%s}",
             name, spec);
    json_decref(call("POST", FROBBERS, body, want));
}

static json_t *get_frobber(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), FROBBERS "/%s", name);
    return call("GET", path, NULL, 200);
}

static void test_no_gate_means_defaults(void **state)
{
    (void)state;
    create_frobber("default", "{\"height\":2,\"width\":3}", 201);
    json_t *f = get_frobber("default");
    assert_null(at(f, "spec.width")); /* Frobber2D is alpha: off by default */
    json_decref(f);
    /* no merge keys in its schema: strategic merge patch is refused, as for custom resources */
    expect_status_h("PATCH", FROBBERS "/default", "{\"spec\":{\"param\":\"x\"}}", strategic_type,
                    415, "UnsupportedMediaType", "application/merge-patch+json");
    json_decref(
        call_h("PATCH", FROBBERS "/default", "{\"spec\":{\"param\":\"x\"}}", merge_type, 200));
}

static void test_width_dropped_on_create_only_while_off(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        restart(on);
        const char *name = on ? "wide-on" : "wide-off";
        create_frobber(name, "{\"height\":2,\"width\":3}", 201);
        json_t *f = get_frobber(name);
        assert_int_equal(num(f, "spec.height"), 2);
        assert_int_equal(at(f, "spec.width") != NULL, on);
        json_decref(f);
        /* present values are validated, gate or no gate */
        create_frobber(on ? "neg-on" : "neg-off", "{\"height\":-1,\"width\":1}", 422);
    }
}

static void test_width_survives_updates_once_in_use(void **state)
{
    (void)state;
    restart(true);
    create_frobber("kept", "{\"height\":1,\"width\":4}", 201);
    for (int on = 1; on >= 0; on--) {
        restart(on);
        /* the stored field is served and survives an update that does not name it */
        json_t *f = call_h("PATCH", FROBBERS "/kept", "{\"spec\":{\"height\":7}}", merge_type, 200);
        assert_int_equal(num(f, "spec.width"), 4);
        json_decref(f);
        /* and may still be changed, with validation */
        f = call_h("PATCH", FROBBERS "/kept", "{\"spec\":{\"width\":5}}", merge_type, 200);
        assert_int_equal(num(f, "spec.width"), 5);
        json_decref(f);
        expect_status_h("PATCH", FROBBERS "/kept", "{\"spec\":{\"width\":-5}}", merge_type, 422,
                        "Invalid", "spec.width");
        json_decref(call_h("PATCH", FROBBERS "/kept", "{\"spec\":{\"width\":4}}", merge_type, 200));
    }
    /* created with the gate off: an update cannot add it while off, can when on */
    for (int on = 0; on <= 1; on++) {
        restart(false);
        const char *name = on ? "narrow-on" : "narrow-off";
        create_frobber(name, "{\"height\":1}", 201);
        restart(on);
        char path[256];
        snprintf(path, sizeof(path), FROBBERS "/%s", name);
        json_t *f = call_h("PATCH", path, "{\"spec\":{\"width\":9}}", merge_type, 200);
        assert_int_equal(at(f, "spec.width") != NULL, on);
        json_decref(f);
    }
}

static void test_on_tuesday_ratchets(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        restart(on);
        if (on) {
            create_frobber("tue", "{\"height\":1,\"restartPolicy\":\"OnTuesday\"}", 201);
        } else {
            expect_status("POST", FROBBERS,
                          "{\"metadata\":{\"name\":\"tue-off\"},\"spec\":{\"height\":1,"
                          "\"restartPolicy\":\"OnTuesday\"}}",
                          422, "Invalid",
                          "spec.restartPolicy: Unsupported value: \"OnTuesday\": supported "
                          "values: \"Always\", \"Never\"");
        }
        create_frobber(on ? "nev-on" : "nev-off", "{\"height\":1,\"restartPolicy\":\"Never\"}",
                       201);
    }
    /* created with the gate on, updated with it off: the value stays acceptable */
    restart(false);
    json_t *f = call_h("PATCH", FROBBERS "/tue", "{\"spec\":{\"param\":\"p\"}}", merge_type, 200);
    assert_string_equal(str(f, "spec.restartPolicy"), "OnTuesday");
    json_decref(f);
    /* an object without it cannot switch to it while the gate is off, can when on */
    expect_status_h("PATCH", FROBBERS "/nev-off", "{\"spec\":{\"restartPolicy\":\"OnTuesday\"}}",
                    merge_type, 422, "Invalid", "Unsupported value: \"OnTuesday\"");
    restart(true);
    f = call_h("PATCH", FROBBERS "/nev-off", "{\"spec\":{\"restartPolicy\":\"OnTuesday\"}}",
               merge_type, 200);
    assert_string_equal(str(f, "spec.restartPolicy"), "OnTuesday");
    json_decref(f);
}

static void test_pod_level_resources_and_openapi(void **state)
{
    (void)state;
    static const char pod[] =
        "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"resources\":{\"limits\":"
        "{\"cpu\":\"1\"}},\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";
    for (int on = 0; on <= 1; on++) {
        restart(on);
        char body[512];
        snprintf(body, sizeof(body), pod, on ? "plr-on" : "plr-off");
        json_t *p = call("POST", "/api/v1/namespaces/default/pods", body, 201);
        assert_int_equal(at(p, "spec.resources") != NULL, on);
        json_decref(p);
    }
    /* the OpenAPI says which gate governs a field, whatever its state */
    for (int on = 0; on <= 1; on++) {
        restart(on);
        json_t *doc = call("GET", "/openapi/v3/apis/example.ckube.io/v1", NULL, 200);
        json_t *width = json_object_get(
            json_object_get(
                json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                                "io.ckube.example.v1.FrobberSpec"),
                "properties"),
            "width");
        assert_string_equal(str(width, "x-ckube-feature-gate"), "Frobber2D");
        assert_non_null(strstr(str(width, "description"), "Frobber2D"));
        json_decref(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_gate_means_defaults),
        cmocka_unit_test(test_width_dropped_on_create_only_while_off),
        cmocka_unit_test(test_width_survives_updates_once_in_use),
        cmocka_unit_test(test_on_tuesday_ratchets),
        cmocka_unit_test(test_pod_level_resources_and_openapi),
    };
    return cmocka_run_group_tests(tests, apitest_setup, teardown);
}
